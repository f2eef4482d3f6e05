/*
 * scatter_gather_nd_ops.c - GatherNd(params, indices), ScatterNd(indices, updates, shape)
 * and TensorScatterUpdate(tensor, indices, updates) as TF 1.15's gather_nd_op.cc and
 * scatter_nd_op.cc: indices [..., m] address slices params[i0..im-1, ...]; an index
 * outside the shape fails with INVALID_ARGUMENT naming the bad entry (never a read or
 * write out of bounds); ScatterNd sums duplicates, TensorScatterUpdate lets the last
 * one win. Gradients as array_grad.py: _GatherNdGrad = ScatterNd(indices, grad,
 * shape(params)); _ScatterNdGrad = GatherNd(grad, indices); _TensorScatterUpdateGrad =
 * (TensorScatterUpdate(grad, indices, zeros), None, GatherNd(grad, indices)).
 */
#include "kernels/ew_internal.h"
#include <stdio.h>
#include <string.h>

static int64_t idx_at(const vg_tensor *t, int64_t i) {
    return vg_tensor_dtype(t) == VG_INT32 ? ((const int32_t *)vg_tensor_data(t))[i]
                                          : ((const int64_t *)vg_tensor_data(t))[i];
}

static bool is_index(vg_dtype dt) { return dt == VG_INT32 || dt == VG_INT64; }

/* The geometry of an nd indexing: n index tuples of m entries over `shape`, each
 * addressing a slice of `slice` elements. */
typedef struct nd_geom {
    int64_t n, m, slice;
    int64_t strides[VG_MAX_DIMS]; /* in slices, for the first m dims */
} nd_geom;

static vg_code geom_make(const vg_tensor *indices, const int64_t *shape, int rank, nd_geom *gm, vg_status *st) {
    int ir = vg_tensor_ndims(indices);
    if (ir < 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "indices must be at least a vector");
    gm->m = vg_tensor_dim(indices, ir - 1);
    if (gm->m > rank)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "index innermost dimension length must be <= params rank; saw: %lld vs. %d",
                             (long long)gm->m, rank);
    gm->n = gm->m ? vg_tensor_num_elements(indices) / gm->m : 1;
    if (gm->m == 0) {
        gm->n = 1;
        for (int i = 0; i < ir - 1; i++) gm->n *= vg_tensor_dim(indices, i);
    }
    gm->slice = 1;
    for (int i = (int)gm->m; i < rank; i++) gm->slice *= shape[i];
    int64_t acc = 1;
    for (int i = (int)gm->m - 1; i >= 0; i--) { gm->strides[i] = acc; acc *= shape[i]; }
    return VG_OK;
}

/* Offset (in slices) of tuple j, or -1 with st set when out of range. */
static int64_t geom_offset(const nd_geom *gm, const vg_tensor *indices, int64_t j, const int64_t *shape, int rank,
                           vg_status *st) {
    int64_t off = 0;
    for (int64_t d = 0; d < gm->m; d++) {
        int64_t v = idx_at(indices, j * gm->m + d);
        if (v < 0 || v >= shape[d]) {
            char idx[256] = "", shp[128];
            size_t len = 0;
            for (int64_t e = 0; e < gm->m && len < sizeof idx - 24; e++)
                len += (size_t)snprintf(idx + len, sizeof idx - len, "%s%lld", e ? ", " : "",
                                        (long long)idx_at(indices, j * gm->m + e));
            vg_shape s = vg_shape_make(shape, rank);
            vg_status_set(st, VG_INVALID_ARGUMENT, "indices[%lld] = [%s] does not index into param shape %s", (long long)j,
                          idx, vg_shape_str(&s, shp, sizeof shp));
            return -1;
        }
        off += v * gm->strides[d];
    }
    return off;
}

/* ---- GatherNd ---------------------------------------------------------------------- */

static vg_code shape_gather_nd(vg_op *op, vg_status *st) {
    vg_dtype pt = vg__op_input_dtype(op, 0), it = vg__op_input_dtype(op, 1);
    if (!is_index(it)) return vg_status_set(st, VG_INVALID_ARGUMENT, "GatherNd: indices must be int32 or int64");
    vg__op_set_default_attr_type(op, "Tparams", pt);
    vg__op_set_default_attr_type(op, "Tindices", it);
    vg__op_set_num_outputs(op, 1);
    vg_shape p = vg__op_input_shape(op, 0), ix = vg__op_input_shape(op, 1), out = vg_shape_unknown();
    if (ix.ndims == 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "indices must be at least a vector");
    if (p.ndims >= 0 && ix.ndims >= 1 && ix.dims[ix.ndims - 1] >= 0) {
        int64_t m = ix.dims[ix.ndims - 1];
        if (m > p.ndims)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "index innermost dimension length must be <= params rank; saw: %lld vs. %d",
                                 (long long)m, p.ndims);
        int r = ix.ndims - 1 + p.ndims - (int)m;
        if (r <= VG_MAX_DIMS) {
            out.ndims = r;
            int k = 0;
            for (int i = 0; i < ix.ndims - 1; i++) out.dims[k++] = ix.dims[i];
            for (int i = (int)m; i < p.ndims; i++) out.dims[k++] = p.dims[i];
        }
    }
    vg__op_set_output(op, 0, pt, out);
    return VG_OK;
}

static vg_code kernel_gather_nd(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *p = vg__kctx_input(ctx, 0), *ix = vg__kctx_input(ctx, 1);
    int pr = vg_tensor_ndims(p), ir = vg_tensor_ndims(ix);
    nd_geom gm;
    vg_code c = geom_make(ix, vg_tensor_dims(p), pr, &gm, st);
    if (c != VG_OK) return c;
    int64_t dims[VG_MAX_DIMS];
    int r = 0;
    if (ir - 1 + pr - (int)gm.m > VG_MAX_DIMS) return vg_status_set(st, VG_INVALID_ARGUMENT, "GatherNd: result rank too large");
    for (int i = 0; i < ir - 1; i++) dims[r++] = vg_tensor_dim(ix, i);
    for (int i = (int)gm.m; i < pr; i++) dims[r++] = vg_tensor_dim(p, i);
    size_t esz = vg_dtype_size(vg_tensor_dtype(p));
    if (esz == 0) return vg_status_set(st, VG_UNIMPLEMENTED, "GatherNd of dtype %s", vg_dtype_name(vg_tensor_dtype(p)));
    vg_tensor *o;
    if ((c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(p), dims, r, &o)) != VG_OK) return c;
    if (vg_tensor_num_elements(o) == 0) return VG_OK;
    size_t bytes = (size_t)gm.slice * esz;
    for (int64_t j = 0; j < gm.n; j++) {
        int64_t off = geom_offset(&gm, ix, j, vg_tensor_dims(p), pr, st);
        if (off < 0) return st->code;
        memcpy((char *)vg_tensor_data(o) + (size_t)j * bytes, (const char *)vg_tensor_data(p) + (size_t)off * bytes, bytes);
    }
    return VG_OK;
}

/* ---- ScatterNd / TensorScatterUpdate ------------------------------------------------- */

/* Checks updates.shape == indices.shape[:-1] + shape[m:] (all known dims). */
static vg_code check_updates(const vg_shape *ix, const vg_shape *up, const vg_shape *sh, vg_status *st) {
    if (ix->ndims < 1 || up->ndims < 0 || sh->ndims < 0 || ix->dims[ix->ndims - 1] < 0) return VG_OK;
    int64_t m = ix->dims[ix->ndims - 1];
    int want = ix->ndims - 1 + sh->ndims - (int)m;
    bool ok = m <= sh->ndims && up->ndims == want;
    for (int i = 0; ok && i < ix->ndims - 1; i++)
        if (ix->dims[i] >= 0 && up->dims[i] >= 0 && ix->dims[i] != up->dims[i]) ok = false;
    for (int i = (int)m; ok && i < sh->ndims; i++) {
        int64_t a = sh->dims[i], b = up->dims[ix->ndims - 1 + i - m];
        if (a >= 0 && b >= 0 && a != b) ok = false;
    }
    if (!ok) {
        char a[128], b[128], c[128];
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Must have updates.shape = indices.shape[:batch_dim] + shape[slice_dim:], got "
                             "updates.shape: %s, indices.shape: %s, shape: %s",
                             vg_shape_str(up, a, sizeof a), vg_shape_str(ix, b, sizeof b), vg_shape_str(sh, c, sizeof c));
    }
    return VG_OK;
}

static vg_code shape_scatter_nd(vg_op *op, vg_status *st) {
    vg_dtype it = vg__op_input_dtype(op, 0), ut = vg__op_input_dtype(op, 1);
    if (!is_index(it) || vg__op_input_dtype(op, 2) != it)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ScatterNd: indices and shape must be int32 or int64 of one dtype");
    if (ut != VG_FLOAT && ut != VG_DOUBLE && ut != VG_INT32 && ut != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ScatterNd: updates have dtype %s, which is not supported",
                             vg_dtype_name(ut));
    vg__op_set_default_attr_type(op, "T", ut);
    vg__op_set_default_attr_type(op, "Tindices", it);
    vg__op_set_num_outputs(op, 1);
    vg_shape sh = vg_shape_unknown();
    const vg_tensor *s = vg__op_const_input(op, 2);
    if (s && vg_tensor_ndims(s) == 1 && vg_tensor_dim(s, 0) <= VG_MAX_DIMS) {
        sh.ndims = (int)vg_tensor_dim(s, 0);
        for (int i = 0; i < sh.ndims; i++) sh.dims[i] = idx_at(s, i);
    }
    vg_shape ix = vg__op_input_shape(op, 0), up = vg__op_input_shape(op, 1);
    vg_code c = check_updates(&ix, &up, &sh, st);
    if (c != VG_OK) return c;
    vg__op_set_output(op, 0, ut, sh);
    return VG_OK;
}

static vg_code shape_tsu(vg_op *op, vg_status *st) {
    vg_dtype tt = vg__op_input_dtype(op, 0), it = vg__op_input_dtype(op, 1);
    if (!is_index(it)) return vg_status_set(st, VG_INVALID_ARGUMENT, "TensorScatterUpdate: indices must be int32 or int64");
    if (vg__op_input_dtype(op, 2) != tt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "TensorScatterUpdate: updates have dtype %s but tensor has %s",
                             vg_dtype_name(vg__op_input_dtype(op, 2)), vg_dtype_name(tt));
    vg__op_set_default_attr_type(op, "T", tt);
    vg__op_set_default_attr_type(op, "Tindices", it);
    vg__op_set_num_outputs(op, 1);
    vg_shape sh = vg__op_input_shape(op, 0), ix = vg__op_input_shape(op, 1), up = vg__op_input_shape(op, 2);
    vg_code c = check_updates(&ix, &up, &sh, st);
    if (c != VG_OK) return c;
    vg__op_set_output(op, 0, tt, sh);
    return VG_OK;
}

/* Runtime check of updates against indices and the target shape. */
static vg_code check_updates_rt(const vg_tensor *ix, const vg_tensor *up, const int64_t *shape, int rank, vg_status *st) {
    vg_shape sx = vg_tensor_shape(ix), su = vg_tensor_shape(up), ss = vg_shape_make(shape, rank);
    vg_code c = check_updates(&sx, &su, &ss, st);
    if (c != VG_OK) return c;
    int64_t m = vg_tensor_dim(ix, vg_tensor_ndims(ix) - 1);
    if (vg_tensor_ndims(up) != vg_tensor_ndims(ix) - 1 + rank - (int)m) /* unreachable after check, defensive */
        return vg_status_set(st, VG_INVALID_ARGUMENT, "updates have the wrong rank");
    return VG_OK;
}

#define SCATTER_ADD(T)                                                                         \
    do {                                                                                       \
        T *dst = (T *)vg_tensor_data(o) + off * gm.slice;                                      \
        const T *src = (const T *)vg_tensor_data(up) + j * gm.slice;                           \
        for (int64_t e = 0; e < gm.slice; e++) dst[e] = (T)(dst[e] + src[e]);                  \
    } while (0)

static vg_code scatter_common(vg__kctx *ctx, const vg_tensor *ix, const vg_tensor *up, const int64_t *shape, int rank,
                              const vg_tensor *base, bool add) {
    vg_status *st = vg__kctx_status(ctx);
    if (vg_tensor_ndims(ix) < 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "indices must be at least a vector");
    int64_t total = 1;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "shape must be non-negative, got %lld", (long long)shape[i]);
        /* non-zero dims only: a 0 elsewhere must not hide an overflowing slice size */
        if (shape[i] && __builtin_mul_overflow(total, shape[i], &total))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "shape has too many elements");
    }
    nd_geom gm;
    vg_code c = geom_make(ix, shape, rank, &gm, st);
    if (c == VG_OK) c = check_updates_rt(ix, up, shape, rank, st);
    if (c != VG_OK) return c;
    vg_dtype dt = vg_tensor_dtype(up);
    size_t esz = vg_dtype_size(dt);
    if (esz == 0) return vg_status_set(st, VG_UNIMPLEMENTED, "scatter of dtype %s", vg_dtype_name(dt));
    /* validate every index before writing */
    for (int64_t j = 0; j < gm.n; j++)
        if (geom_offset(&gm, ix, j, shape, rank, st) < 0) {
            /* TF's wording for scatters */
            char msg[sizeof st->msg];
            memcpy(msg, st->msg, sizeof msg);
            msg[sizeof msg - 20] = 0; /* room for the prefix */
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Invalid indices: %s", msg);
        }
    vg_tensor *o;
    if ((c = vg__kctx_alloc_output(ctx, 0, dt, shape, rank, &o)) != VG_OK) return c;
    if (base) memcpy(vg_tensor_data(o), vg_tensor_data(base), vg_tensor_nbytes(o));
    else memset(vg_tensor_data(o), 0, vg_tensor_nbytes(o));
    if (vg_tensor_num_elements(o) == 0) return VG_OK;
    for (int64_t j = 0; j < gm.n; j++) {
        int64_t off = geom_offset(&gm, ix, j, shape, rank, st);
        if (!add) {
            memcpy((char *)vg_tensor_data(o) + (size_t)(off * gm.slice) * esz,
                   (const char *)vg_tensor_data(up) + (size_t)(j * gm.slice) * esz, (size_t)gm.slice * esz);
            continue;
        }
        switch (dt) {
        case VG_FLOAT: SCATTER_ADD(float); break;
        case VG_DOUBLE: SCATTER_ADD(double); break;
        case VG_INT32: SCATTER_ADD(uint32_t); break;
        case VG_INT64: SCATTER_ADD(uint64_t); break;
        default: return vg_status_set(st, VG_INVALID_ARGUMENT, "ScatterNd: unsupported dtype %s", vg_dtype_name(dt));
        }
    }
    return VG_OK;
}

static vg_code kernel_scatter_nd(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *ix = vg__kctx_input(ctx, 0), *up = vg__kctx_input(ctx, 1), *s = vg__kctx_input(ctx, 2);
    if (vg_tensor_ndims(s) != 1 || vg_tensor_dim(s, 0) > VG_MAX_DIMS)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ScatterNd: shape must be a vector of at most %d dims", VG_MAX_DIMS);
    int64_t shape[VG_MAX_DIMS];
    int rank = (int)vg_tensor_dim(s, 0);
    for (int i = 0; i < rank; i++) shape[i] = idx_at(s, i);
    return scatter_common(ctx, ix, up, shape, rank, NULL, true);
}

static vg_code kernel_tsu(vg__kctx *ctx) {
    const vg_tensor *t = vg__kctx_input(ctx, 0);
    return scatter_common(ctx, vg__kctx_input(ctx, 1), vg__kctx_input(ctx, 2), vg_tensor_dims(t), vg_tensor_ndims(t), t,
                          false);
}

/* ---- gradients and builders ---------------------------------------------------------- */

static vg_code grad_gather_nd(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output ix = vg_op_input(op, 1);
    vg_output shape = vg_shape_op(g, vg_op_input(op, 0), vg_output_dtype(ix), "Shape");
    dx[0] = vg_scatter_nd(g, ix, dy[0], shape, "ScatterNd");
    return vg_graph_status(g, NULL);
}

static vg_code grad_scatter_nd(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[1] = vg_gather_nd(g, dy[0], vg_op_input(op, 0), "GatherNd");
    return vg_graph_status(g, NULL);
}

static vg_code grad_tsu(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output ix = vg_op_input(op, 1);
    dx[2] = vg_gather_nd(g, dy[0], ix, "GatherNd");
    dx[0] = vg_tensor_scatter_update(g, vg_identity(g, dy[0], "Identity"), ix,
                                     vg_zeros_like(g, vg_op_input(op, 2), "zeros_like"), "TensorScatterUpdate");
    return vg_graph_status(g, NULL);
}

vg_output vg_gather_nd(vg_graph *g, vg_output params, vg_output indices, const char *name) {
    return vg__ew_build2(g, "GatherNd", params, indices, name);
}

vg_output vg_scatter_nd(vg_graph *g, vg_output indices, vg_output updates, vg_output shape, const char *name) {
    return vg__build_simple(g, "ScatterNd", name, NULL, (vg_output[]){indices, updates, shape}, 3);
}

vg_output vg_tensor_scatter_update(vg_graph *g, vg_output tensor, vg_output indices, vg_output updates, const char *name) {
    return vg__build_simple(g, "TensorScatterUpdate", name, NULL, (vg_output[]){tensor, indices, updates}, 3);
}

const vg__op_def vg__ops_scatter_gather_nd[] = {
    {"GatherNd", 2, 2, 0, 0, shape_gather_nd, kernel_gather_nd, grad_gather_nd},
    {"ScatterNd", 3, 3, 0, 0, shape_scatter_nd, kernel_scatter_nd, grad_scatter_nd},
    {"TensorScatterUpdate", 3, 3, 0, 0, shape_tsu, kernel_tsu, grad_tsu},
    {0},
};
