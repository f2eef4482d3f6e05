/*
 * einsum.c - tf.einsum(equation, *inputs) lowered to existing ops, as TF 1.15's
 * Python einsum (special_math_ops.py) does rather than through an Einsum kernel:
 *  - one operand: Sum over the labels that leave, then Transpose to the output order;
 *  - two operands: labels only one side has and the output lacks are summed first; the
 *    rest are batch (both sides and the output), contracted (both sides, not the
 *    output) or free (one side and the output). Each side is transposed to [batch,
 *    free, contracted] / [batch, contracted, free], reshaped to 3-D (2-D without batch
 *    labels), multiplied (BatchMatMulV2 / MatMul), reshaped back and transposed to the
 *    output order;
 *  - more operands: pairwise from the left, keeping the labels later operands or the
 *    output still need (TF's order).
 * Gradients follow from those ops. Shapes may be partly unknown: dims are then read
 * with Shape/Gather/Prod at run time. An ellipsis becomes fresh labels (the operands'
 * ranks must be known; its dims must agree, without size-1 broadcasting). Repeated
 * labels in one operand (diagonals, "ii->i") are UNIMPLEMENTED; bad equations are
 * INVALID_ARGUMENT.
 */
#include "vigil/ops.h"
#include "vigil/ops_ext.h"
#include "vigil/train_lib.h"
#include <stdio.h>
#include <string.h>

#define EIN_MAX 26 * 2

static vg_output none_out(void) {
    vg_output o = {NULL, 0};
    return o;
}

static int label_pos(const char *labels, char c) {
    const char *p = strchr(labels, c);
    return p ? (int)(p - labels) : -1;
}

/* 1-D int32 tensor of x's dims at axes[0..n) (a Const when all are known). */
static vg_output dims_of(vg_graph *g, vg_output x, const int *axes, int n, const char *name) {
    vg_shape s = vg_output_shape(x);
    int32_t v[EIN_MAX];
    bool known = true;
    for (int i = 0; i < n; i++) {
        if (s.ndims <= axes[i] || s.dims[axes[i]] < 0) known = false;
        else v[i] = (int32_t)s.dims[axes[i]];
    }
    int64_t nn = n;
    if (known) return vg_const_array(g, VG_INT32, &nn, 1, v, name);
    for (int i = 0; i < n; i++) v[i] = axes[i];
    vg_output idx = vg_const_array(g, VG_INT32, &nn, 1, v, NULL);
    return vg_gather(g, vg_shape_op(g, x, VG_INT32, NULL), idx, 0, name);
}

/* [1] int32: the product of x's dims at axes (1 for none). */
static vg_output prod_of(vg_graph *g, vg_output x, const int *axes, int n) {
    vg_shape s = vg_output_shape(x);
    int64_t p = 1;
    bool known = true;
    for (int i = 0; i < n; i++) {
        if (s.ndims <= axes[i] || s.dims[axes[i]] < 0) known = false;
        else p *= s.dims[axes[i]];
    }
    int64_t one = 1;
    if (known) {
        int32_t v = (int32_t)p;
        return vg_const_array(g, VG_INT32, &one, 1, &v, NULL);
    }
    return vg_prod(g, dims_of(g, x, axes, n, NULL), vg_const_i32(g, 0, NULL), true, NULL);
}

static bool is_identity(const int *perm, int n) {
    for (int i = 0; i < n; i++)
        if (perm[i] != i) return false;
    return true;
}

static vg_output transpose_if(vg_graph *g, vg_output x, const int *perm, int n) {
    if (is_identity(perm, n)) return x;
    int32_t p[EIN_MAX];
    for (int i = 0; i < n; i++) p[i] = perm[i];
    return vg_transpose_c(g, x, p, n, NULL);
}

/* Sums x (labels xl) over the labels not in keep; updates xl. */
static vg_output sum_out(vg_graph *g, vg_output x, char *xl, const char *keep) {
    int32_t axes[EIN_MAX];
    int na = 0, n = (int)strlen(xl);
    char kept[EIN_MAX + 1];
    int nk = 0;
    for (int i = 0; i < n; i++) {
        if (!strchr(keep, xl[i])) axes[na++] = i;
        else kept[nk++] = xl[i];
    }
    kept[nk] = 0;
    if (!na) return x;
    strcpy(xl, kept);
    return vg_reduce_sum(g, x, axes, na, false, NULL);
}

/* One pairwise step: a (labels al) times b (labels bl) -> labels out (each label of out
 * in al or bl; labels of al/bl not in out are summed). */
static vg_output contract2(vg_graph *g, vg_output a, char *al, vg_output b, char *bl, const char *out) {
    /* labels only one side has and out lacks are summed first */
    char keep_a[2 * EIN_MAX + 1], keep_b[2 * EIN_MAX + 1];
    snprintf(keep_a, sizeof keep_a, "%s%s", out, bl);
    snprintf(keep_b, sizeof keep_b, "%s%s", out, al);
    a = sum_out(g, a, al, keep_a);
    b = sum_out(g, b, bl, keep_b);
    char batch[EIN_MAX + 1] = "", con[EIN_MAX + 1] = "", afree[EIN_MAX + 1] = "", bfree[EIN_MAX + 1] = "";
    int nb = 0, nc = 0, naf = 0, nbf = 0;
    for (const char *p = al; *p; p++) {
        bool inb = strchr(bl, *p) != NULL, ino = strchr(out, *p) != NULL;
        if (inb && ino) batch[nb++] = *p;
        else if (inb) con[nc++] = *p;
        else afree[naf++] = *p;
    }
    for (const char *p = bl; *p; p++)
        if (!strchr(al, *p)) bfree[nbf++] = *p;
    batch[nb] = con[nc] = afree[naf] = bfree[nbf] = 0;
    /* a -> [batch, afree, con], b -> [batch, con, bfree] */
    int pa[EIN_MAX], pb[EIN_MAX], k = 0;
    for (int i = 0; i < nb; i++) pa[k++] = label_pos(al, batch[i]);
    for (int i = 0; i < naf; i++) pa[k++] = label_pos(al, afree[i]);
    for (int i = 0; i < nc; i++) pa[k++] = label_pos(al, con[i]);
    k = 0;
    for (int i = 0; i < nb; i++) pb[k++] = label_pos(bl, batch[i]);
    for (int i = 0; i < nc; i++) pb[k++] = label_pos(bl, con[i]);
    for (int i = 0; i < nbf; i++) pb[k++] = label_pos(bl, bfree[i]);
    vg_output at = transpose_if(g, a, pa, nb + naf + nc);
    vg_output bt = transpose_if(g, b, pb, nb + nc + nbf);
    /* the dims, read from the transposed operands */
    int ax[EIN_MAX];
    for (int i = 0; i < EIN_MAX; i++) ax[i] = i;
    vg_output a_batch = prod_of(g, at, ax, nb), a_m = prod_of(g, at, ax + nb, naf), a_k = prod_of(g, at, ax + nb + naf, nc);
    vg_output b_n = prod_of(g, bt, ax + nb + nc, nbf);
    vg_output prod;
    if (nb) {
        vg_output sa[3] = {a_batch, a_m, a_k}, sb[3] = {a_batch, a_k, b_n};
        vg_output a3 = vg_reshape(g, at, vg_concat_c(g, sa, 3, 0, NULL), NULL);
        vg_output b3 = vg_reshape(g, bt, vg_concat_c(g, sb, 3, 0, NULL), NULL);
        prod = vg_batch_matmul(g, a3, b3, false, false, NULL);
    } else {
        vg_output sa[2] = {a_m, a_k}, sb[2] = {a_k, b_n};
        vg_output a2 = vg_reshape(g, at, vg_concat_c(g, sa, 2, 0, NULL), NULL);
        vg_output b2 = vg_reshape(g, bt, vg_concat_c(g, sb, 2, 0, NULL), NULL);
        prod = vg_matmul(g, a2, b2, false, false, NULL);
    }
    /* back to [batch, afree, bfree] dims, then to the order of out */
    vg_output parts[3];
    int np = 0;
    if (nb) parts[np++] = dims_of(g, at, ax, nb, NULL);
    if (naf) parts[np++] = dims_of(g, at, ax + nb, naf, NULL);
    if (nbf) parts[np++] = dims_of(g, bt, ax + nb + nc, nbf, NULL);
    int32_t unused = 0;
    vg_output shape = np ? (np == 1 ? parts[0] : vg_concat_c(g, parts, np, 0, NULL))
                         : vg_const_array(g, VG_INT32, (int64_t[]){0}, 1, &unused, NULL);
    vg_output r = vg_reshape(g, prod, shape, NULL);
    char have[EIN_MAX + 1];
    snprintf(have, sizeof have, "%s%s%s", batch, afree, bfree);
    int perm[EIN_MAX], n = (int)strlen(out);
    for (int i = 0; i < n; i++) perm[i] = label_pos(have, out[i]);
    return transpose_if(g, r, perm, n);
}

static vg_output fail(vg_graph *g, vg_code code, const char *eq, const char *why) {
    vg_graph_set_error(g, code, "einsum '%s': %s", eq, why);
    return none_out();
}

/* Rewrites "..." into fresh labels (unused letters), right-aligned per operand as
 * broadcasting aligns dims; the output's "..." (or, for an implicit output, a leading
 * one) gets all of them. Needs the operands' ranks. Ellipsis dims must then agree
 * exactly (the matmul lowering does not broadcast size-1 dims). */
static vg_code expand_ellipsis(vg_graph *g, const char *equation, char *eq, size_t cap, const vg_output *inputs,
                               int n) {
    char src[512];
    snprintf(src, sizeof src, "%s", eq);
    char *arrow = strstr(src, "->");
    const char *outs = arrow ? arrow + 2 : NULL;
    if (arrow) *arrow = 0;
    bool used[128] = {false};
    for (const char *p = equation; *p; p++)
        if ((unsigned char)*p < 128) used[(int)*p] = true;
    char fresh[EIN_MAX + 1];
    int nf = 0;
    for (int c = 'A'; c <= 'z' && nf < EIN_MAX; c++)
        if (((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) && !used[c]) fresh[nf++] = (char)c;
    /* each operand's ellipsis rank */
    int ell[EIN_MAX], max_ell = 0, j = 0;
    char ops[EIN_MAX][EIN_MAX + 4];
    for (char *s = src;; j++) {
        char *c = strchr(s, ',');
        size_t len = c ? (size_t)(c - s) : strlen(s);
        if (j >= n || j >= EIN_MAX || len > EIN_MAX + 3) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "einsum '%s': operands and inputs do not match", equation);
            return VG_INVALID_ARGUMENT;
        }
        memcpy(ops[j], s, len);
        ops[j][len] = 0;
        ell[j] = 0;
        char *e = strstr(ops[j], "...");
        if (e) {
            if (strstr(e + 3, "...")) {
                vg_graph_set_error(g, VG_INVALID_ARGUMENT, "einsum '%s': more than one ellipsis in an operand", equation);
                return VG_INVALID_ARGUMENT;
            }
            vg_shape sh = inputs[j].op ? vg_output_shape(inputs[j]) : (vg_shape){.ndims = -1};
            if (sh.ndims < 0) {
                vg_graph_set_error(g, VG_UNIMPLEMENTED, "einsum '%s': an ellipsis needs the rank of input %d", equation, j);
                return VG_UNIMPLEMENTED;
            }
            ell[j] = sh.ndims - (int)(len - 3);
            if (ell[j] < 0) {
                vg_graph_set_error(g, VG_INVALID_ARGUMENT, "einsum '%s': input %d has rank %d, fewer than its labels",
                                   equation, j, sh.ndims);
                return VG_INVALID_ARGUMENT;
            }
            if (ell[j] > max_ell) max_ell = ell[j];
        }
        if (!c) {
            j++;
            break;
        }
        s = c + 1;
    }
    if (max_ell > nf) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "einsum '%s': too many dimensions under the ellipsis", equation);
        return VG_INVALID_ARGUMENT;
    }
    char res[512];
    size_t k = 0;
    for (int o = 0; o < j; o++) {
        if (o && k + 1 < sizeof res) res[k++] = ',';
        for (const char *p = ops[o]; *p && k + 1 < sizeof res; p++) {
            if (!strncmp(p, "...", 3)) {
                for (int i = max_ell - ell[o]; i < max_ell && k + 1 < sizeof res; i++) res[k++] = fresh[i];
                p += 2;
            } else {
                res[k++] = *p;
            }
        }
    }
    if (k + 2 < sizeof res) res[k++] = '-', res[k++] = '>';
    if (outs) {
        for (const char *p = outs; *p && k + 1 < sizeof res; p++) {
            if (!strncmp(p, "...", 3)) {
                for (int i = 0; i < max_ell && k + 1 < sizeof res; i++) res[k++] = fresh[i];
                p += 2;
            } else {
                res[k++] = *p;
            }
        }
    } else { /* implicit: the ellipsis dims, then the labels seen once, sorted */
        for (int i = 0; i < max_ell && k + 1 < sizeof res; i++) res[k++] = fresh[i];
        int cnt[128] = {0};
        for (const char *p = equation; *p; p++)
            if ((unsigned char)*p < 128) cnt[(int)*p]++;
        for (int c = 'A'; c <= 'z' && k + 1 < sizeof res; c++)
            if (((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) && cnt[c] == 1) res[k++] = (char)c;
    }
    res[k] = 0;
    snprintf(eq, cap, "%s", res);
    return VG_OK;
}

vg_output vg_einsum(vg_graph *g, const char *equation, const vg_output *inputs, int n, const char *name) {
    if (!g) return none_out();
    if (vg_graph_status(g, NULL) != VG_OK) return none_out();
    if (!equation) return fail(g, VG_INVALID_ARGUMENT, "(null)", "no equation");
    if (n < 1 || !inputs) return fail(g, VG_INVALID_ARGUMENT, equation, "needs at least one input");
    /* parse "a,b->c" (spaces ignored) */
    char eq[512];
    size_t k = 0;
    for (const char *p = equation; *p && k + 1 < sizeof eq; p++)
        if (*p != ' ') eq[k++] = *p;
    eq[k] = 0;
    if (strstr(eq, "...") && expand_ellipsis(g, equation, eq, sizeof eq, inputs, n) != VG_OK) return none_out();
    char *arrow = strstr(eq, "->");
    char out[EIN_MAX + 1];
    if (arrow) *arrow = 0;
    char labels[EIN_MAX][EIN_MAX + 1];
    int nops = 0;
    for (char *s = eq;; nops++) {
        char *c = strchr(s, ',');
        size_t len = c ? (size_t)(c - s) : strlen(s);
        if (nops >= EIN_MAX || len > EIN_MAX) return fail(g, VG_INVALID_ARGUMENT, equation, "too many labels or operands");
        memcpy(labels[nops], s, len);
        labels[nops][len] = 0;
        for (size_t i = 0; i < len; i++) {
            char ch = labels[nops][i];
            if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
                return fail(g, VG_INVALID_ARGUMENT, equation, "labels must be letters");
            if (strchr(labels[nops] + i + 1, ch))
                return fail(g, VG_UNIMPLEMENTED, equation, "a label repeated within one operand is not supported");
        }
        if (!c) {
            nops++;
            break;
        }
        s = c + 1;
    }
    if (nops != n) {
        char m[96];
        snprintf(m, sizeof m, "the equation has %d operands but %d inputs were given", nops, n);
        return fail(g, VG_INVALID_ARGUMENT, equation, m);
    }
    if (arrow) {
        const char *o = arrow + 2;
        if (strlen(o) > EIN_MAX) return fail(g, VG_INVALID_ARGUMENT, equation, "too many output labels");
        strcpy(out, o);
        for (size_t i = 0; out[i]; i++) {
            if (strchr(out + i + 1, out[i])) return fail(g, VG_INVALID_ARGUMENT, equation, "output label repeated");
            bool found = false;
            for (int j = 0; j < n && !found; j++) found = strchr(labels[j], out[i]) != NULL;
            if (!found) return fail(g, VG_INVALID_ARGUMENT, equation, "an output label is in no input");
        }
    } else { /* implicit: the labels seen once, sorted */
        int cnt[128] = {0};
        for (int j = 0; j < n; j++)
            for (const char *p = labels[j]; *p; p++) cnt[(int)*p]++;
        int no = 0;
        for (int c = 'A'; c <= 'z'; c++)
            if (cnt[c] == 1 && no < EIN_MAX) out[no++] = (char)c;
        out[no] = 0;
    }
    /* ranks and label dims agree */
    int64_t dim_of[128];
    for (int c = 0; c < 128; c++) dim_of[c] = -1;
    for (int j = 0; j < n; j++) {
        if (!inputs[j].op) return fail(g, VG_INVALID_ARGUMENT, equation, "an input is NULL");
        vg_shape s = vg_output_shape(inputs[j]);
        if (s.ndims >= 0 && s.ndims != (int)strlen(labels[j])) {
            char m[128];
            snprintf(m, sizeof m, "input %d has rank %d but %d labels (%s)", j, s.ndims, (int)strlen(labels[j]),
                     labels[j]);
            return fail(g, VG_INVALID_ARGUMENT, equation, m);
        }
        for (int i = 0; i < s.ndims; i++) {
            int c = labels[j][i];
            if (s.dims[i] < 0) continue;
            if (dim_of[c] >= 0 && dim_of[c] != s.dims[i]) {
                char m[128];
                snprintf(m, sizeof m, "label '%c' has dimension %lld and %lld", c, (long long)dim_of[c],
                         (long long)s.dims[i]);
                return fail(g, VG_INVALID_ARGUMENT, equation, m);
            }
            dim_of[c] = s.dims[i];
        }
    }
    char full[1024], scope[1030];
    vg_graph_unique_name(g, name ? name : "einsum", full, sizeof full);
    snprintf(scope, sizeof scope, "%s/", full);
    vg_graph_push_scope(g, "/");
    vg_graph_push_scope(g, scope);
    vg_output acc = inputs[0];
    char al[EIN_MAX + 1];
    strcpy(al, labels[0]);
    for (int j = 1; j < n; j++) {
        /* keep what the output or the later operands still need */
        char need[EIN_MAX * EIN_MAX + EIN_MAX + 1];
        size_t nl = 0;
        need[0] = 0;
        for (const char *p = out; *p; p++) need[nl++] = *p;
        for (int l = j + 1; l < n; l++)
            for (const char *p = labels[l]; *p; p++) need[nl++] = *p;
        need[nl] = 0;
        char step_out[EIN_MAX + 1];
        int ns = 0;
        char both[2 * EIN_MAX + 1];
        snprintf(both, sizeof both, "%s%s", al, labels[j]);
        for (const char *p = both; *p; p++)
            if (strchr(need, *p) && !memchr(step_out, *p, (size_t)ns)) step_out[ns++] = *p;
        step_out[ns] = 0;
        if (j == n - 1) strcpy(step_out, out);
        char bl[EIN_MAX + 1];
        strcpy(bl, labels[j]);
        acc = contract2(g, acc, al, inputs[j], bl, step_out);
        strcpy(al, step_out);
    }
    if (n == 1) {
        acc = sum_out(g, acc, al, out);
        int perm[EIN_MAX], no = (int)strlen(out);
        for (int i = 0; i < no; i++) perm[i] = label_pos(al, out[i]);
        acc = transpose_if(g, acc, perm, no);
    }
    vg_graph_pop_scope(g);
    vg_graph_pop_scope(g);
    /* the result under the einsum name (an Identity, as the scope's output) */
    vg_output r = vg_identity(g, acc, strrchr(full, '/') ? strrchr(full, '/') + 1 : full);
    return vg_graph_status(g, NULL) == VG_OK ? r : none_out();
}
