/*
 * clip.c - tf.clip_by_norm, tf.global_norm and tf.clip_by_global_norm as TF 1.15's
 * clip_ops.py, from public builders (the "two-tap" Select that keeps the gradient of a
 * zero norm finite, L2Loss for the global norm, the NaN-propagating scale of
 * clip_by_global_norm).
 */
#include "train_util.h"
#include "vigil/ops.h"
#include "vigil/ops_ext.h"
#include "vigil/train_lib.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static bool same_shape(const vg_shape *a, const vg_shape *b) {
    if (a->ndims < 0 || b->ndims < 0) return true;
    if (a->ndims != b->ndims) return false;
    for (int i = 0; i < a->ndims; i++)
        if (a->dims[i] >= 0 && b->dims[i] >= 0 && a->dims[i] != b->dims[i]) return false;
    return true;
}

vg_output vg_clip_by_norm(vg_graph *g, vg_output t, vg_output clip_norm, const int32_t *axes, int naxes,
                          const char *name) {
    if (!t.op || !clip_norm.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "clip_by_norm: t and clip_norm are required");
        return vg_out(NULL, 0);
    }
    vg__train_scope s;
    vg__train_scope_open(g, name, "clip_by_norm", &s);
    vg_output l2sum = vg_reduce_sum(g, vg_mul(g, t, t, "mul"), axes, naxes, true, "Sum");
    vg_output pred = vg_greater(g, l2sum, vg_zeros_like(g, l2sum, "zeros_like"), "Greater");
    vg_output safe = vg_select(g, pred, l2sum, vg_ones_like(g, l2sum, "ones_like"), "Select");
    vg_output l2norm = vg_select(g, pred, vg_sqrt(g, safe, "Sqrt"), l2sum, "Select_1");
    vg_output inter = vg_mul(g, t, clip_norm, "mul_1");
    vg_shape st = vg_output_shape(t), si = vg_output_shape(inter);
    if (inter.op && !same_shape(&st, &si)) {
        char a[128], b[128];
        vg_graph_pop_scope(g);
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "clip_by_norm: Shapes %s and %s are incompatible",
                           vg_shape_str(&st, a, sizeof a), vg_shape_str(&si, b, sizeof b));
        return vg_out(NULL, 0);
    }
    vg_output q = vg_div(g, inter, vg_maximum(g, l2norm, clip_norm, "Maximum"), "truediv");
    vg_graph_pop_scope(g);
    return vg_identity(g, q, s.base);
}

vg_output vg_global_norm(vg_graph *g, const vg_output *t, int n, const char *name) {
    int k = 0;
    for (int i = 0; t && i < n; i++) k += t[i].op != NULL;
    if (k == 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "global_norm: t_list has no tensors");
        return vg_out(NULL, 0);
    }
    vg_output *half = calloc((size_t)k, sizeof(vg_output));
    if (!half) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in global_norm");
        return vg_out(NULL, 0);
    }
    vg__train_scope s;
    vg__train_scope_open(g, name, "global_norm", &s);
    k = 0;
    for (int i = 0; i < n; i++)
        if (t[i].op) half[k++] = vg_l2_loss(g, t[i], "L2Loss");
    vg_output sum = vg_reduce_sum(g, vg_pack(g, half, k, 0, "stack"), NULL, -1, false, "Sum");
    vg_output two = vg_const_fill(g, vg_output_dtype(sum), NULL, 0, 2.0, "Const");
    vg_output norm = vg_sqrt(g, vg_mul(g, sum, two, "mul"), "global_norm");
    vg_graph_pop_scope(g);
    free(half);
    return norm;
}

vg_code vg_clip_by_global_norm(vg_graph *g, const vg_output *t, int n, vg_output clip_norm, vg_output use_norm,
                               vg_output *out, vg_output *norm_out, const char *name) {
    if (n < 0 || (n > 0 && (!t || !out)) || !clip_norm.op)
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "clip_by_global_norm: t_list, out and clip_norm are required");
    for (int i = 0; i < n; i++) out[i] = vg_out(NULL, 0);
    if (!use_norm.op) use_norm = vg_global_norm(g, t, n, "global_norm");
    if (!use_norm.op) return vg_graph_status(g, NULL);
    vg__train_scope s;
    vg__train_scope_open(g, name, "clip_by_global_norm", &s);
    vg_dtype dt = vg_output_dtype(use_norm);
    vg_output one = vg_const_fill(g, dt, NULL, 0, 1.0, "truediv/x");
    vg_output scale_f = vg_mul(g, clip_norm,
                               vg_minimum(g, vg_div(g, one, use_norm, "truediv"),
                                          vg_div(g, vg_const_fill(g, dt, NULL, 0, 1.0, "Const"), clip_norm, "truediv_1"),
                                          "Minimum"),
                               "mul");
    /* + (use_norm - use_norm): NaN when the norm is not finite */
    vg_output scale = vg_add(g, scale_f, vg_sub(g, use_norm, use_norm, "sub"), "add");
    for (int i = 0; i < n; i++) {
        if (!t[i].op) continue;
        vg_output sc = vg_output_dtype(t[i]) == dt ? scale : vg_cast(g, scale, vg_output_dtype(t[i]), "Cast");
        char nm[1100];
        snprintf(nm, sizeof nm, "%s/_%d", s.full, i); /* TF: "%s_%d" % (scope name with its "/", i) */
        out[i] = vg_identity(g, vg_mul(g, t[i], sc, "mul_1"), nm);
    }
    vg_graph_pop_scope(g);
    if (norm_out) *norm_out = use_norm;
    return vg_graph_status(g, NULL);
}
