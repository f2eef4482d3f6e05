/*
 * dist_optimizer.c - Horovod's DistributedOptimizer and TF's SyncReplicasOptimizer on
 * MPI allreduce (issue 15), written on the public API.
 *
 * Gradients are averaged across ranks before apply. They are grouped into fusion
 * buckets of at most fusion_threshold_bytes (Horovod's 64 MB default), in reverse
 * variable order (the order back-propagation produces them); each bucket is one
 * VigilFusedAllreduce op whose inputs are its gradients, so a bucket's allreduce
 * starts as soon as its own gradients are computed, while back-propagation of the
 * earlier layers goes on (the overlap of Horovod and PyTorch DDP). Buckets are chained
 * with control dependencies so every rank reduces them in the same order.
 *
 * A Gather's gradient, UnsortedSegmentSum(values, indices, rows) (vigil's graph form of
 * TF's IndexedSlices), is not densified: as Horovod does for IndexedSlices
 * (sparse_as_dense=False), the values and the indices are allgathered (CollectiveGather,
 * a different number of rows on each rank), the values divided by the world's size for
 * the mean, and a new UnsortedSegmentSum over the gathered rows is the gradient, so the
 * optimizer's sparse apply updates the union of every rank's rows. The sum over ranks
 * of UnsortedSegmentSum(v_r, i_r, rows) is UnsortedSegmentSum(concat v_r, concat i_r,
 * rows), so the result equals the dense allreduce's.
 *
 * In a world of more than one rank a plain compute_gradients (and so minimize) averages
 * too (vg__dist_auto_average, issue 28): vigil's replicas are kept equal by averaging,
 * so a train op that skipped it would train N independent models. The vg_dist_* calls
 * here reduce with their own options and switch that off on their thread, so nothing
 * is averaged twice; a gradient that already is a fused mean is not reduced again.
 */
#include "dist_internal.h"
#include "vigil/distributed.h"
#include "vigil/ops.h"
#include "vigil/ops_ext.h"
#include "vigil/optimizer.h"
#include "vigil/variables.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_FUSION_THRESHOLD ((int64_t)64 * 1024 * 1024) /* Horovod's 64 MB */

/* The options after defaults, in the form the builders use. */
typedef struct resolved_dist_options {
    int64_t threshold; /* bytes; 0: one allreduce per gradient */
    bool average;
    bool sparse_as_dense;
    vg_dist_compression compression;
    bool hierarchical;
} resolved_dist_options;

/* The one place a vg_dist_options' zeros become Horovod's defaults (NULL: all zero). */
static vg_code resolve_dist_options(const vg_dist_options *opts, resolved_dist_options *r, vg_status *st) {
    vg_dist_options o = {0};
    if (opts) o = *opts;
    if (o.compression != VG_DIST_COMPRESSION_NONE && o.compression != VG_DIST_COMPRESSION_FP16)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "compression %d is not VG_DIST_COMPRESSION_NONE or _FP16",
                             (int)o.compression);
    if (o.fusion_threshold_bytes < 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "fusion_threshold_bytes %lld < 0 (no fusion: .no_fusion = true)",
                             (long long)o.fusion_threshold_bytes);
    r->threshold = o.fusion_threshold_bytes;
    if (o.no_fusion) {
        r->threshold = 0;
    } else if (r->threshold == 0) {
        r->threshold = DEFAULT_FUSION_THRESHOLD;
        /* Horovod reads HOROVOD_FUSION_THRESHOLD (bytes) from the environment */
        const char *v = getenv("HOROVOD_FUSION_THRESHOLD");
        if (v && *v) {
            char *end = NULL;
            errno = 0;
            long long b = strtoll(v, &end, 10);
            if (errno || *end || b < 0)
                vg_logf(VG_LOG_WARN, "HOROVOD_FUSION_THRESHOLD='%s' is not a byte count >= 0: ignored", v);
            else
                r->threshold = (int64_t)b;
        }
    }
    r->average = !o.sum;
    r->sparse_as_dense = o.sparse_as_dense;
    r->compression = o.compression;
    r->hierarchical = o.hierarchical;
    return VG_OK;
}

/* vg_dist_fused_allreduce with the options' wire attrs. */
static vg_op *fused_allreduce(vg_graph *g, const vg_output *xs, int n, const resolved_dist_options *o,
                             const char *name) {
    if (o->compression == VG_DIST_COMPRESSION_NONE && !o->hierarchical)
        return vg_dist_fused_allreduce(g, xs, n, o->average, name);
    vg_op_builder *b = vg_op_builder_new(g, "VigilFusedAllreduce", name);
    if (!b) return NULL;
    vg_op_builder_add_inputs(b, xs, n);
    vg_op_builder_set_attr_int(b, "N", n);
    vg_op_builder_set_attr_int(b, "group_size", 0);
    vg_op_builder_set_attr_string(b, "merge_op", "Add", 3);
    vg_op_builder_set_attr_string(b, "final_op", o->average ? "Div" : "Id", o->average ? 3 : 2);
    if (o->compression == VG_DIST_COMPRESSION_FP16) vg_op_builder_set_attr_string(b, "compression", "fp16", 4);
    if (o->hierarchical) vg_op_builder_set_attr_bool(b, "hierarchical", true);
    return vg_op_builder_finish(b);
}

static int64_t out_bytes(vg_output o) {
    vg_shape s = vg_output_shape(o);
    if (s.ndims < 0) return -1;
    int64_t n = 1;
    for (int i = 0; i < s.ndims; i++) {
        if (s.dims[i] < 0) return -1;
        n *= s.dims[i];
    }
    return n * (int64_t)vg_dtype_size(vg_output_dtype(o));
}

/* The gradient is UnsortedSegmentSum(values [k, ...], indices [k], rows) with dtypes
 * a CollectiveGather takes: Horovod's IndexedSlices. */
static bool indexed_slices(vg_output grad, vg_output *values, vg_output *indices, vg_output *rows) {
    if (!grad.op || grad.index != 0 || strcmp(vg_op_type(grad.op), "UnsortedSegmentSum") != 0) return false;
    vg_output v = vg_op_input(grad.op, 0), ix = vg_op_input(grad.op, 1);
    vg_shape vs = vg_output_shape(v), is = vg_output_shape(ix);
    vg_dtype vt = vg_output_dtype(v), it = vg_output_dtype(ix);
    if (is.ndims != 1 || vs.ndims < 1 || (it != VG_INT32 && it != VG_INT64)) return false;
    if (vt != VG_FLOAT && vt != VG_DOUBLE && vt != VG_INT32 && vt != VG_INT64) return false;
    *values = v;
    *indices = ix;
    *rows = vg_op_input(grad.op, 2);
    return true;
}

/* hvd.allgather of an IndexedSlices' values and indices, chained after *prev (updated
 * to the last gather); the mean divides the gathered values by the world's size. */
static vg_output allgather_slices(vg_graph *g, vg_output values, vg_output indices, vg_output rows, bool average,
                                  int k, vg_op **prev) {
    char name[64];
    snprintf(name, sizeof name, "DistributedAllgather_%d", k);
    vg_graph_push_scope(g, name);
    vg_output gv = vg_collective_gather(g, values, 0, 1, 0, "values");
    if (gv.op && *prev) vg_op_add_control_input(gv.op, *prev);
    vg_output gi = vg_collective_gather(g, indices, 0, 1, 0, "indices");
    if (gi.op && gv.op) vg_op_add_control_input(gi.op, gv.op);
    vg_output out = {NULL, 0};
    if (gv.op && gi.op) {
        *prev = gi.op;
        if (average && vg_dist_size() > 1)
            gv = vg_div(g, gv, vg_const_fill(g, vg_output_dtype(gv), NULL, 0, vg_dist_size(), "size"), "truediv");
        vg_op_builder *b = vg_op_builder_new(g, "UnsortedSegmentSum", "UnsortedSegmentSum");
        vg_op_builder_add_input(b, gv);
        vg_op_builder_add_input(b, gi);
        vg_op_builder_add_input(b, rows);
        out = vg_out(vg_op_builder_finish(b), 0);
    }
    vg_graph_pop_scope(g);
    return out;
}

/* The output of a VigilFusedAllreduce that takes the mean (through Identity ops: GATE_GRAPH's
 * tuple), i.e. a gradient that compute_gradients already averaged. */
static bool already_mean(vg_output x) {
    for (int hops = 0; x.op && hops < 8; hops++) {
        const char *t = vg_op_type(x.op);
        if (strcmp(t, "VigilFusedAllreduce") == 0) {
            const char *f = NULL;
            size_t len = 0;
            return vg_op_attr_string(x.op, "final_op", &f, &len) && len == 3 && memcmp(f, "Div", 3) == 0;
        }
        if (strcmp(t, "Identity") != 0) return false;
        x = vg_op_input(x.op, 0);
    }
    return false;
}

static _Thread_local int no_auto_average; /* > 0 inside vg_dist_compute_gradients */

vg_code vg__dist_auto_average(vg_graph *g, vg_output *grads, int n, vg_status *st) {
    if (no_auto_average > 0 || !vg_dist_initialized() || vg_dist_size() <= 1) return VG_OK;
    vg_logf(VG_LOG_INFO, "compute_gradients: %d ranks: averaging the gradients over the ranks (as vg_dist_minimize)",
            vg_dist_size());
    return vg_dist_allreduce_gradients(g, grads, n, NULL, grads, st);
}

vg_code vg_dist_allreduce_gradients(vg_graph *g, const vg_output *grads, int n, const vg_dist_options *opts,
                                    vg_output *out, vg_status *st) {
    if (!g || (n > 0 && (!grads || !out)))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_dist_allreduce_gradients: NULL graph or arrays");
    resolved_dist_options o = {0};
    vg_code rc = resolve_dist_options(opts, &o, st);
    if (rc != VG_OK) return rc;
    bool sparse_any = false;
    for (int i = 0; i < n && !o.sparse_as_dense && !sparse_any; i++) {
        vg_output v, ix, rows;
        sparse_any = indexed_slices(grads[i], &v, &ix, &rows);
    }
    if (sparse_any && vg_dist_init(st) != VG_OK) return st->code; /* the mean needs the world's size */
    vg_output *in = vg_malloc((size_t)(n ? n : 1) * sizeof *in);
    vg_output *bucket = vg_malloc((size_t)(n ? n : 1) * sizeof *bucket);
    int *idx = vg_malloc((size_t)(n ? n : 1) * sizeof *idx);
    if (!in || !bucket || !idx) {
        vg_free(in);
        vg_free(bucket);
        vg_free(idx);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory allocating the fusion buckets");
    }
    for (int i = 0; i < n; i++) in[i] = out[i] = grads[i]; /* grads may alias out */
    vg_op *prev = NULL;
    int nb = 0, nbuckets = 0, ngathers = 0;
    int64_t bytes = 0;
    vg_dtype bdt = VG_FLOAT;
    /* i from n down to -1: -1 flushes the last bucket */
    for (int i = n - 1; i >= -1; i--) {
        vg_output sv, si, srows;
        bool sparse = i >= 0 && !o.sparse_as_dense && indexed_slices(in[i], &sv, &si, &srows);
        bool have = i >= 0 && in[i].op != NULL && !sparse && !(o.average && already_mean(in[i]));
        int64_t b = have ? out_bytes(in[i]) : 0;
        bool fits = have && nb > 0 && vg_output_dtype(in[i]) == bdt && b >= 0 && bytes >= 0 &&
                    bytes + b <= o.threshold;
        /* a sparse gradient flushes the bucket before it: the collectives stay in
         * back-propagation order */
        if (nb > 0 && (i < 0 || sparse || (have && !fits))) {
            char name[64];
            snprintf(name, sizeof name, "DistributedAllreduce_%d", nbuckets++);
            vg_op *op = fused_allreduce(g, bucket, nb, &o, name);
            if (!op) break;
            if (prev) vg_op_add_control_input(op, prev);
            prev = op;
            for (int k = 0; k < nb; k++) out[idx[k]] = vg_out(op, k);
            nb = 0;
            bytes = 0;
        }
        if (sparse) {
            vg_output r = allgather_slices(g, sv, si, srows, o.average, ngathers++, &prev);
            if (!r.op) break;
            out[i] = r;
        }
        if (have) {
            if (nb == 0) bdt = vg_output_dtype(in[i]);
            bucket[nb] = in[i];
            idx[nb++] = i;
            bytes = (b < 0 || bytes < 0) ? -1 : bytes + b;
        }
    }
    vg_free(in);
    vg_free(bucket);
    vg_free(idx);
    return vg_graph_status(g, st);
}

vg_code vg_dist_compute_gradients(vg_optimizer *opt, vg_graph *g, vg_output loss, const vg_output *var_list,
                                  int nvars, const vg_dist_options *o, vg_output *grads_out, vg_status *st) {
    if (!opt || !g) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_dist_compute_gradients: NULL optimizer or graph");
    int n = nvars;
    if (!var_list) vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &n);
    no_auto_average++; /* reduced below with o */
    vg_code rc = vg_optimizer_compute_gradients(opt, g, loss, var_list, nvars, grads_out, st);
    no_auto_average--;
    if (rc != VG_OK) return rc;
    return vg_dist_allreduce_gradients(g, grads_out, n, o, grads_out, st);
}

vg_op *vg_dist_minimize(vg_optimizer *opt, vg_graph *g, vg_output loss, const vg_output *var_list, int nvars,
                        vg_output global_step, const vg_dist_options *o, const char *name) {
    if (!g) return NULL;
    if (!opt) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "vg_dist_minimize: NULL optimizer");
        return NULL;
    }
    int n = nvars;
    const vg_output *vars = var_list;
    if (!vars) vars = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &n);
    if (n <= 0 || !vars) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "No variables to optimize.");
        return NULL;
    }
    vg_output *grads = vg_malloc((size_t)n * sizeof *grads);
    vg_output *vcopy = vg_malloc((size_t)n * sizeof *vcopy);
    if (!grads || !vcopy) {
        vg_free(grads);
        vg_free(vcopy);
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory allocating gradients");
        return NULL;
    }
    memcpy(vcopy, vars, (size_t)n * sizeof *vcopy); /* the collection may grow (slots) */
    vg_status st;
    vg_op *train = NULL;
    if (vg_dist_compute_gradients(opt, g, loss, vcopy, n, o, grads, &st) != VG_OK) {
        if (vg_graph_status(g, NULL) == VG_OK) vg_graph_set_error(g, st.code, "%s", st.msg);
    } else {
        train = vg_optimizer_apply_gradients(opt, g, grads, vcopy, n, global_step, name);
    }
    vg_free(grads);
    vg_free(vcopy);
    return train;
}

/* ---- broadcasts of variables ------------------------------------------------------------ */

vg_op *vg_dist_broadcast_variables(vg_graph *g, const vg_output *vars, int n, int root_rank, const char *name) {
    if (!g) return NULL;
    if (vg_graph_status(g, NULL) != VG_OK) return NULL;
    if (n > 0 && !vars) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "broadcast_variables: NULL variable list");
        return NULL;
    }
    if (root_rank < 0 || (vg_dist_initialized() && root_rank >= vg_dist_size())) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "broadcast_variables: root_rank %d outside [0, %d)", root_rank,
                           vg_dist_size());
        return NULL;
    }
    vg_op **assigns = vg_malloc((size_t)(n > 0 ? n : 1) * sizeof *assigns);
    if (!assigns) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in broadcast_variables");
        return NULL;
    }
    vg_graph_push_scope(g, name ? name : "broadcast_variables");
    vg_op *prev = NULL, *group = NULL;
    int k = 0;
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        if (!vars[i].op || strcmp(vg_op_type(vars[i].op), "VariableV2") != 0) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                               "broadcast_variables: '%s' is not a variable (pass its ref output)",
                               vars[i].op ? vg_op_name(vars[i].op) : "(null)");
            ok = false;
            break;
        }
        const char *vname = vg_op_name(vars[i].op);
        vg_output b = vg_dist_broadcast_tensor(g, vars[i], root_rank, vname, "HorovodBroadcast");
        /* every rank broadcasts in the same order: a chain */
        if (b.op && prev) vg_op_add_control_input(b.op, prev);
        vg_output a = b.op ? vg_assign(g, vars[i], b, true, "Assign") : b;
        ok = a.op != NULL;
        prev = b.op;
        if (ok) assigns[k++] = a.op;
    }
    if (ok) group = vg_group(g, assigns, k, "group");
    vg_graph_pop_scope(g);
    vg_free(assigns);
    return vg_graph_status(g, NULL) == VG_OK ? group : NULL;
}

vg_op *vg_dist_broadcast_global_variables(vg_graph *g, int root_rank, const char *name) {
    if (!g) return NULL;
    int n = 0;
    const vg_output *vars = vg_graph_collection(g, VG_GLOBAL_VARIABLES, &n);
    vg_output *copy = vg_malloc((size_t)(n > 0 ? n : 1) * sizeof *copy); /* the collection grows as we build */
    if (!copy) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in broadcast_global_variables");
        return NULL;
    }
    if (n > 0) memcpy(copy, vars, (size_t)n * sizeof *copy);
    vg_op *op = vg_dist_broadcast_variables(g, copy, n, root_rank, name ? name : "broadcast_global_variables");
    vg_free(copy);
    return op;
}

/* ---- input sharding ------------------------------------------------------------------ */

vg_output vg_dist_shard(vg_graph *g, vg_output x, int num_shards, int index, const char *name) {
    vg_output fail = {NULL, 0};
    if (!g) return fail;
    vg_status st;
    if (vg_dist_init(&st) != VG_OK) {
        vg_graph_set_error(g, st.code, "%s", st.msg);
        return fail;
    }
    if (num_shards == 0) num_shards = vg_dist_size();
    if (index == -1) index = vg_dist_rank();
    if (num_shards < 1 || index < 0 || index >= num_shards) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "shard: index %d outside [0, num_shards=%d)", index, num_shards);
        return fail;
    }
    vg_strided_slice_masks m = {0, 1, 0, 0, 0}; /* x[index::num_shards] */
    return vg_strided_slice_c(g, x, (const int32_t[]){index}, (const int32_t[]){0}, (const int32_t[]){num_shards}, 1, &m,
                              name ? name : "shard");
}

int64_t vg_dist_seed(int64_t base) {
    if (base == 0) return 0;
    int64_t s = base + 7919 * (int64_t)vg_dist_rank();
    return s ? s : 1;
}
