/*
 * nn_loss_ops.c - loss ops of TF's nn family: L2Loss (sum(t^2) / 2, float32/float64,
 * gradient t * grad as nn_grad.py; float32 summed blockwise over the intra-op threads,
 * deterministic at any thread count) and the composite builder of
 * tf.nn.sigmoid_cross_entropy_with_logits (nn_impl.py: relu(x) - x*z + log1p(exp(-|x|))
 * built from Select/Neg/Log1p/Exp under the name scope "logistic_loss").
 */
#include "kernels/ew_internal.h"
#include "kernels/simd.h"
#include <stdio.h>
#include <stdlib.h>

static vg_code shape_l2loss(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (dt != VG_FLOAT && dt != VG_DOUBLE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "L2Loss: input has dtype %s, which is not supported (allowed: float double)",
                             vg_dtype_name(dt));
    return vg__op_set_t_output(op, dt, vg_shape_make(NULL, 0));
}

/* float32: blocks of 4096 squared in 16 float lanes (one vector of AVX-512), each
 * block's total in double, the blocks spread over the intra-op threads and their totals
 * added in block order: the same sum at every thread count. */
enum { L2_BLOCK = 4096 };
typedef struct l2_job { const float *x; int64_t n; double *part; } l2_job;

VG_SIMD_CLONES static double l2_block(const float *restrict x, int64_t n) {
    float l[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int k = 0; k < 16; k++) l[k] += x[i + k] * x[i + k];
    float s = 0;
    for (; i < n; i++) s += x[i] * x[i];
    for (int k = 0; k < 16; k++) s += l[k];
    return s;
}

static void l2_blocks(void *arg, int64_t b0, int64_t b1) {
    const l2_job *j = arg;
    for (int64_t b = b0; b < b1; b++) {
        int64_t s = b * L2_BLOCK, e = j->n - s < L2_BLOCK ? j->n : s + L2_BLOCK;
        j->part[b] = l2_block(j->x + s, e - s);
    }
}

static vg_code kernel_l2loss(vg__kctx *ctx) {
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    vg_dtype dt = vg_tensor_dtype(x);
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, dt, NULL, 0, &o);
    if (c != VG_OK) return c;
    int64_t n = vg_tensor_num_elements(x);
    double s = 0;
    if (dt == VG_FLOAT) {
        int64_t nb = (n + L2_BLOCK - 1) / L2_BLOCK;
        double one[1], *part = nb > 1 ? malloc(sizeof(double) * (size_t)nb) : one;
        if (!part) return vg_status_set(vg__kctx_status(ctx), VG_RESOURCE_EXHAUSTED, "L2Loss: out of memory");
        l2_job j = {vg_tensor_data(x), n, part};
        if (nb > 1) vg__kctx_parallel_for(ctx, nb, 2 * L2_BLOCK, l2_blocks, &j);
        else if (nb == 1) l2_blocks(&j, 0, 1);
        for (int64_t b = 0; b < nb; b++) s += part[b];
        if (part != one) free(part);
        *(float *)vg_tensor_data(o) = (float)(s / 2);
    } else {
        const double *p = vg_tensor_data(x);
        for (int64_t i = 0; i < n; i++) s += p[i] * p[i];
        *(double *)vg_tensor_data(o) = s / 2;
    }
    return VG_OK;
}

static vg_code grad_l2loss(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = vg_mul(g, vg_op_input(op, 0), dy[0], "mul");
    return vg_graph_status(g, NULL);
}

vg_output vg_l2_loss(vg_graph *g, vg_output t, const char *name) { return vg__ew_build1(g, "L2Loss", t, name); }

vg_output vg_sigmoid_cross_entropy_with_logits(vg_graph *g, vg_output labels, vg_output logits, const char *name) {
    if (!labels.op || !logits.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "sigmoid_cross_entropy_with_logits: labels and logits are required");
        return vg_out(NULL, 0);
    }
    vg_shape sl = vg_output_shape(labels), sx = vg_output_shape(logits);
    if (!vg__graph_need_compatible(g, &sx, &sl, "logits and labels must have the same shape (%s vs %s)"))
        return vg_out(NULL, 0);
    if (vg_output_dtype(labels) != vg_output_dtype(logits)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "sigmoid_cross_entropy_with_logits: labels have dtype %s but logits have dtype %s",
                           vg_dtype_name(vg_output_dtype(labels)), vg_dtype_name(vg_output_dtype(logits)));
        return vg_out(NULL, 0);
    }
    /* name_scope(name, "logistic_loss") as name; ...; add(..., name=name) */
    char full[1024], scope[1100];
    vg_graph_unique_name(g, name ? name : "logistic_loss", full, sizeof full);
    snprintf(scope, sizeof scope, "%s/", full);
    const char *slash = strrchr(full, '/');
    const char *base = slash ? slash + 1 : full;
    vg_graph_push_scope(g, scope);
    vg_output zeros = vg_zeros_like(g, logits, "zeros_like");
    vg_output cond = vg_greater_equal(g, logits, zeros, "GreaterEqual");
    vg_output relu_logits = vg_select(g, cond, logits, zeros, "Select");
    vg_output neg_abs = vg_select(g, cond, vg_neg(g, logits, "Neg"), logits, "Select_1");
    vg_output a = vg_sub(g, relu_logits, vg_mul(g, logits, labels, "mul"), "sub");
    vg_output b = vg_log1p(g, vg_exp(g, neg_abs, "Exp"), "Log1p");
    vg_graph_pop_scope(g);
    char outer[1100];
    snprintf(outer, sizeof outer, "%s", base);
    /* the final Add is named after the scope, in the enclosing scope */
    return vg_add(g, a, b, outer);
}

const vg__op_def vg__ops_nn_loss[] = {
    {"L2Loss", 1, 1, 0, 0, shape_l2loss, kernel_l2loss, grad_l2loss},
    {0},
};
