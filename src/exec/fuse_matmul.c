/*
 * fuse_matmul.c - plan-time fusion of a sum of matrix products (issue 30): an AddN
 * whose every input is a MatMul read by that AddN alone, all with the same transpose_a,
 * transpose_b false, the same dtype (float32 / float64) and the same static output
 * shape [M, N]. That is how a weight shared by the steps of an unrolled RNN gets its
 * gradient (x_t^T d_t summed over t: PTB's LSTMBlockCell kernels, 35 products of K = 20
 * rows). The AddN node runs _VigilFusedMatMulSum[TA] (src/kernels/nn/nn_ops.c) on
 * A_1 .. A_T, B_1 .. B_T, one GEMM over the stacked reduction dimension; the MatMul
 * nodes run NoOp with no inputs (their reads move to the AddN node, edges from their
 * inputs' producers with them). Left alone: products with control edges either way, fed
 * outputs, ref inputs, inputs read straight from a variable (the read would move to the
 * AddN's time), transpose_b products.
 */
#include "exec.h"
#include <string.h>

static bool is_type(const vg__node *n, const char *t) { return !n->amp && strcmp(n->op->def->type, t) == 0; }

static bool static_2d(vg_output o, int64_t d[2]) {
    vg_shape s = vg_output_shape(o);
    if (s.ndims != 2 || s.dims[0] < 0 || s.dims[1] < 0) return false;
    d[0] = s.dims[0], d[1] = s.dims[1];
    return true;
}

bool vg__plan_fuse_matmul_sum(vg__plan *p, int *succ_cap) {
    const vg__op_def *fdef[2] = {vg__registry_find("_VigilFusedMatMulSum"), vg__registry_find("_VigilFusedMatMulSumTA")};
    const vg__op_def *noop = vg__registry_find("NoOp");
    if (!fdef[0] || !fdef[1] || !noop) return true;
    int nn = p->nnodes;
    int *prod = vg__plan_slot_producers(p);
    bool *ctrl_src = vg__plan_control_sources(p), ok = false;
    if (!prod || !ctrl_src) goto done;
    for (int a = 0; a < nn; a++) {
        vg__node *an = &p->nodes[a];
        if (!is_type(an, "AddN") || an->def != an->op->def || an->ninputs < 2 || an->noutputs != 1 || vg__plan_node_fed(an))
            continue;
        int T = an->ninputs, ta = -1;
        vg_dtype dt = vg_output_dtype(vg_out(an->op, 0));
        int64_t yd[2];
        bool good = (dt == VG_FLOAT || dt == VG_DOUBLE) && static_2d(vg_out(an->op, 0), yd);
        for (int t = 0; t < T && good; t++) {
            int s = an->in_slot[t], m = s >= 0 ? prod[s] : -1;
            good = m >= 0 && p->slot_uses[s] == 1;
            if (!good) break;
            vg__node *mn = &p->nodes[m];
            bool mta = false, mtb = false;
            vg_op_attr_bool(mn->op, "transpose_a", &mta);
            vg_op_attr_bool(mn->op, "transpose_b", &mtb);
            int64_t md[2];
            good = is_type(mn, "MatMul") && mn->def == mn->op->def && mn->ninputs == 2 && mn->noutputs == 1 &&
                   !vg__plan_node_fed(mn) && mn->op->ncontrol == 0 && !ctrl_src[m] && !mtb && (ta < 0 || ta == (int)mta) &&
                   static_2d(vg_out(mn->op, 0), md) && md[0] == yd[0] && md[1] == yd[1];
            ta = mta;
            for (int k = 0; k < 2 && good; k++) {
                int q = mn->in_slot[k] >= 0 ? prod[mn->in_slot[k]] : -2;
                good = !mn->in_var[k] && mn->in_slot[k] >= 0 &&
                       (q < 0 || (p->nodes[q].kind != VG__K_VARIABLE && !(p->nodes[q].op->def->flags & VG__OP_VARIABLE)));
            }
        }
        if (!good) continue;
        int *in_slot = vg__malloc(sizeof(int) * (size_t)(2 * T + 1));
        vg__var **in_var = vg__calloc((size_t)(2 * T + 1), sizeof(vg__var *));
        if (!in_slot || !in_var) {
            vg__free(in_slot);
            vg__free(in_var);
            goto done;
        }
        for (int t = 0; t < T; t++) {
            int m = prod[an->in_slot[t]];
            vg__node *mn = &p->nodes[m];
            in_slot[t] = mn->in_slot[0];
            in_slot[T + t] = mn->in_slot[1];
            for (int k = 0; k < 2; k++) {
                int q = prod[mn->in_slot[k]];
                if (q >= 0 && !vg__plan_add_succ_once(p, succ_cap, q, a)) {
                    vg__free(in_slot);
                    vg__free(in_var);
                    goto done;
                }
            }
            p->slot_uses[an->in_slot[t]]--; /* nobody reads the product now */
            mn->ninputs = 0;                 /* its reads move to the AddN node */
            mn->def = noop;
        }
        vg__free(an->in_slot);
        vg__free(an->in_var);
        an->in_slot = in_slot;
        an->in_var = in_var;
        an->ninputs = 2 * T;
        an->def = fdef[ta ? 1 : 0];
    }
    ok = true;
done:
    vg__free(prod);
    vg__free(ctrl_src);
    return ok;
}
