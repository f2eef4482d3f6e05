/*
 * strided_slice_ops.c - StridedSlice and StridedSliceGrad (tensor[b:e:s, ..., tf.newaxis,
 * i] in Python) with all five masks, as TF 1.15's ValidateStridedSliceOp
 * (util/strided_slice_op.cc): the sparse spec (one entry per begin/end/strides element,
 * an implicit trailing ellipsis) is expanded to a dense spec over the input dims; begin
 * and end are canonicalised per dim (negative indices count from the end, clamped;
 * masked ones take the full range in the stride's direction); a shrink axis takes one
 * element (out of range -> INVALID_ARGUMENT) and is dropped; a new axis adds a 1.
 * Gradient (array_grad.py _StridedSliceGrad): StridedSliceGrad(Shape(x), begin, end,
 * strides, dy) with the same masks, which scatters dy into zeros of x's shape.
 */
#include "kernels/ew_internal.h"
#include <stdio.h>
#include <string.h>

enum { SS_NEW_AXIS = -1, SS_SHRINK = -2 };

typedef struct ss_masks {
    int64_t begin, end, ellipsis, new_axis, shrink;
} ss_masks;

/* The result of validation: per input dim the canonical begin, stride and size (the
 * "processing shape"), and the final shape. */
typedef struct ss_plan {
    int in_rank;
    int64_t begin[VG_MAX_DIMS], stride[VG_MAX_DIMS], size[VG_MAX_DIMS];
    int final_rank;
    int64_t final_dims[VG_MAX_DIMS];
} ss_plan;

static void ss_get_masks(const vg_op *op, ss_masks *m) {
    int64_t v;
    m->begin = vg_op_attr_int(op, "begin_mask", &v) ? v : 0;
    m->end = vg_op_attr_int(op, "end_mask", &v) ? v : 0;
    m->ellipsis = vg_op_attr_int(op, "ellipsis_mask", &v) ? v : 0;
    m->new_axis = vg_op_attr_int(op, "new_axis_mask", &v) ? v : 0;
    m->shrink = vg_op_attr_int(op, "shrink_axis_mask", &v) ? v : 0;
}

/* dims: the input dims (-1 unknown, only at build time). b/e/s: the sparse spec of n
 * entries. Fails with INVALID_ARGUMENT (message as TF's). */
static vg_code ss_validate(const int64_t *dims, int rank, const int64_t *b, const int64_t *e, const int64_t *s, int n,
                           const ss_masks *m0, ss_plan *p, vg_status *st) {
    ss_masks m = *m0;
    if (n > VG_MAX_DIMS)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "StridedSlice: %d slice entries, at most %d supported", n, VG_MAX_DIMS);
    if (m.ellipsis & (m.ellipsis - 1))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Multiple ellipses in slice spec not allowed");
    int sparse_dims = n;
    bool ellipsis_seen = false;
    int add_after = 0;
    for (int i = 0; i < n; i++) {
        if (ellipsis_seen && (m.new_axis & (1LL << i))) add_after++;
        if (m.ellipsis & (1LL << i)) ellipsis_seen = true;
    }
    if (!(m.ellipsis & ((1LL << n) - 1))) { /* implicit trailing ellipsis */
        m.ellipsis |= 1LL << n;
        sparse_dims++;
    }
    /* dense spec */
    int64_t db[VG_MAX_DIMS], de[VG_MAX_DIMS], ds[VG_MAX_DIMS];
    bool bmask[VG_MAX_DIMS], emask[VG_MAX_DIMS], shrink[VG_MAX_DIMS];
    int gather[2 * VG_MAX_DIMS + 2], ngather = 0;
    int full = 0;
    for (int i = 0; i < sparse_dims; i++) {
        if (m.ellipsis & (1LL << i)) {
            int next = rank - (sparse_dims - i) + 1 + add_after;
            if (next > rank) next = rank;
            for (; full < next; full++) {
                db[full] = de[full] = 0;
                ds[full] = 1;
                bmask[full] = emask[full] = true;
                shrink[full] = false;
                gather[ngather++] = full;
            }
        } else if (m.new_axis & (1LL << i)) {
            if (ngather >= 2 * VG_MAX_DIMS) break;
            gather[ngather++] = SS_NEW_AXIS;
        } else {
            if (full == rank)
                return vg_status_set(st, VG_INVALID_ARGUMENT, "Index out of range using input dim %d; input has only %d dims",
                                     full, rank);
            db[full] = b[i];
            de[full] = e[i];
            ds[full] = s[i];
            bmask[full] = (m.begin >> i) & 1;
            emask[full] = (m.end >> i) & 1;
            shrink[full] = (m.shrink >> i) & 1;
            gather[ngather++] = shrink[full] ? SS_SHRINK : full;
            full++;
        }
    }
    p->in_rank = rank;
    for (int i = 0; i < rank; i++) {
        int64_t stride = ds[i], dim = dims[i];
        if (stride == 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "strides[%d] must be non-zero", i);
        if (shrink[i] && stride <= 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "only stride 1 allowed on non-range indexing.");
        p->stride[i] = stride;
        if (dim < 0) { /* unknown dim (shape inference only) */
            p->begin[i] = 0;
            p->size[i] = shrink[i] ? 1 : -1;
            continue;
        }
        int64_t lo = stride > 0 ? 0 : -1, hi = stride > 0 ? dim : dim - 1, bi, ei;
        if (shrink[i]) {
            int64_t x = db[i] < 0 ? dim + db[i] : db[i];
            if (x < 0 || x >= dim)
                return vg_status_set(st, VG_INVALID_ARGUMENT, "slice index %lld of dimension %d out of bounds.",
                                     (long long)db[i], i);
            bi = x;
            ei = x + 1;
        } else {
            if (bmask[i]) bi = stride > 0 ? lo : hi;
            else {
                int64_t x = db[i] < 0 ? dim + db[i] : db[i];
                bi = x < lo ? lo : x > hi ? hi : x;
            }
            if (emask[i]) ei = stride > 0 ? hi : lo;
            else {
                int64_t x = de[i] < 0 ? dim + de[i] : de[i];
                ei = x < lo ? lo : x > hi ? hi : x;
            }
        }
        int64_t len = ei - bi, size;
        if (len == 0 || ((len < 0) != (stride < 0))) size = 0;
        else size = len / stride + (len % stride != 0);
        p->begin[i] = bi;
        p->size[i] = size;
    }
    p->final_rank = 0;
    for (int k = 0; k < ngather; k++) {
        if (gather[k] == SS_SHRINK) continue;
        if (p->final_rank >= VG_MAX_DIMS)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "StridedSlice: result has more than %d dims", VG_MAX_DIMS);
        p->final_dims[p->final_rank++] = gather[k] == SS_NEW_AXIS ? 1 : p->size[gather[k]];
    }
    return VG_OK;
}

/* Reads a 1-D int32/int64 tensor into out (at most VG_MAX_DIMS entries). */
static bool read_vec(const vg_tensor *t, int64_t *out, int *n) {
    if (!t || vg_tensor_ndims(t) != 1 || vg_tensor_dim(t, 0) > VG_MAX_DIMS) return false;
    *n = (int)vg_tensor_dim(t, 0);
    for (int i = 0; i < *n; i++)
        out[i] = vg_tensor_dtype(t) == VG_INT32 ? ((const int32_t *)vg_tensor_data(t))[i]
                                               : ((const int64_t *)vg_tensor_data(t))[i];
    return vg_tensor_dtype(t) == VG_INT32 || vg_tensor_dtype(t) == VG_INT64;
}

/* Inputs `first`..first+2 are begin, end, strides. */
static vg_code check_spec_inputs(vg_op *op, int first, vg_status *st) {
    vg_dtype it = vg__op_input_dtype(op, first);
    if (it != VG_INT32 && it != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: begin has dtype %s (expected int32 or int64)", vg_op_type(op),
                             vg_dtype_name(it));
    int64_t len = -2;
    for (int i = first; i < first + 3; i++) {
        if (vg__op_input_dtype(op, i) != it)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: begin, end and strides must have one dtype", vg_op_type(op));
        vg_shape s = vg__op_input_shape(op, i);
        if (s.ndims >= 0 && s.ndims != 1)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: begin, end and strides must be 1-D", vg_op_type(op));
        if (s.ndims == 1 && s.dims[0] >= 0) {
            if (len >= 0 && s.dims[0] != len)
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "Expected begin, end, and strides to be 1D equal size tensors");
            len = s.dims[0];
        }
    }
    vg__op_set_default_attr_type(op, "Index", it);
    const char *masks[5] = {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"};
    for (int i = 0; i < 5; i++) vg__op_set_default_attr_int(op, masks[i], 0);
    return VG_OK;
}

/* The start of StridedSlice's and StridedSliceGrad's shape functions: checks begin,
 * end, strides (inputs 1..3), sets "T" to input t's dtype and gives the op one output. */
static vg_code slice_shape_begin(vg_op *op, int t, vg_status *st) {
    vg_code c = check_spec_inputs(op, 1, st);
    if (c != VG_OK) return c;
    vg__op_set_default_attr_type(op, "T", vg__op_input_dtype(op, t));
    vg__op_set_num_outputs(op, 1);
    return VG_OK;
}

static vg_code shape_strided_slice(vg_op *op, vg_status *st) {
    vg_code c = slice_shape_begin(op, 0, st);
    if (c != VG_OK) return c;
    vg_dtype dt = vg__op_input_dtype(op, 0);
    vg_shape in = vg__op_input_shape(op, 0);
    int64_t b[VG_MAX_DIMS], e[VG_MAX_DIMS], s[VG_MAX_DIMS];
    int nb, ne, ns;
    if (in.ndims < 0 || !read_vec(vg__op_const_input(op, 1), b, &nb) || !read_vec(vg__op_const_input(op, 2), e, &ne) ||
        !read_vec(vg__op_const_input(op, 3), s, &ns) || nb != ne || nb != ns) {
        vg__op_set_output(op, 0, dt, vg_shape_unknown());
        return VG_OK;
    }
    ss_masks m;
    ss_get_masks(op, &m);
    ss_plan p;
    if ((c = ss_validate(in.dims, in.ndims, b, e, s, nb, &m, &p, st)) != VG_OK) return c;
    vg__op_set_output(op, 0, dt, vg_shape_make(p.final_dims, p.final_rank));
    return VG_OK;
}

/* Reads the spec at run time and validates it against dims. */
static vg_code runtime_plan(vg__kctx *ctx, int first, const int64_t *dims, int rank, ss_plan *p) {
    vg_status *st = vg__kctx_status(ctx);
    int64_t b[VG_MAX_DIMS], e[VG_MAX_DIMS], s[VG_MAX_DIMS];
    int nb, ne, ns;
    if (!read_vec(vg__kctx_input(ctx, first), b, &nb) || !read_vec(vg__kctx_input(ctx, first + 1), e, &ne) ||
        !read_vec(vg__kctx_input(ctx, first + 2), s, &ns) || nb != ne || nb != ns)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Expected begin, end, and strides to be 1D equal size tensors");
    ss_masks m;
    ss_get_masks(vg__kctx_op(ctx), &m);
    return ss_validate(dims, rank, b, e, s, nb, &m, p, st);
}

/* Walks the processing shape: for each element calls copy(in_offset, out_index). */
static void ss_walk(const ss_plan *p, const int64_t *in_dims, char *dst, const char *src, size_t esz, bool scatter) {
    int r = p->in_rank;
    int64_t n = 1, instr[VG_MAX_DIMS], idx[VG_MAX_DIMS] = {0};
    for (int i = 0; i < r; i++) n *= p->size[i];
    if (n == 0) return;
    int64_t acc = 1;
    for (int i = r - 1; i >= 0; i--) { instr[i] = acc; acc *= in_dims[i]; }
    int64_t off = 0;
    for (int i = 0; i < r; i++) off += p->begin[i] * instr[i];
    for (int64_t k = 0; k < n; k++) {
        if (scatter) memcpy(dst + (size_t)off * esz, src + (size_t)k * esz, esz);
        else memcpy(dst + (size_t)k * esz, src + (size_t)off * esz, esz);
        for (int d = r - 1; d >= 0; d--) {
            off += p->stride[d] * instr[d];
            if (++idx[d] < p->size[d]) break;
            off -= p->stride[d] * instr[d] * p->size[d];
            idx[d] = 0;
        }
    }
}

static vg_code kernel_strided_slice(vg__kctx *ctx) {
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    ss_plan p;
    vg_code c = runtime_plan(ctx, 1, vg_tensor_dims(x), vg_tensor_ndims(x), &p);
    if (c != VG_OK) return c;
    vg_tensor *o;
    if ((c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(x), p.final_dims, p.final_rank, &o)) != VG_OK) return c;
    size_t esz = vg_dtype_size(vg_tensor_dtype(x));
    if (vg_tensor_dtype(x) == VG_STRING) {
        /* strings (TF's StridedSlice takes every dtype, e.g. nmt's src[:src_max_len] on
         * words): walk element indices, then copy the chosen strings */
        int64_t nin = vg_tensor_num_elements(x), nout = vg_tensor_num_elements(o);
        int64_t *src = vg__calloc((size_t)(nin > 0 ? nin : 1), sizeof *src);
        int64_t *dst = vg__calloc((size_t)(nout > 0 ? nout : 1), sizeof *dst);
        vg_status *st = vg__kctx_status(ctx);
        if (!src || !dst) {
            vg__free(src), vg__free(dst);
            return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "StridedSlice: out of memory");
        }
        for (int64_t i = 0; i < nin; i++) src[i] = i;
        ss_walk(&p, vg_tensor_dims(x), (char *)dst, (const char *)src, sizeof *src, false);
        c = VG_OK;
        for (int64_t i = 0; i < nout && c == VG_OK; i++) {
            size_t len;
            const char *sv = vg_tensor_string(x, dst[i], &len);
            c = vg_tensor_set_string(o, i, sv, len, st);
        }
        vg__free(src), vg__free(dst);
        return c;
    }
    if (esz == 0) return vg_status_set(vg__kctx_status(ctx), VG_UNIMPLEMENTED, "StridedSlice of dtype %s",
                                       vg_dtype_name(vg_tensor_dtype(x)));
    ss_walk(&p, vg_tensor_dims(x), vg_tensor_data(o), vg_tensor_data(x), esz, false);
    return VG_OK;
}

/* StridedSliceGrad(shape, begin, end, strides, dy) */
static vg_code shape_strided_slice_grad(vg_op *op, vg_status *st) {
    vg_code c = slice_shape_begin(op, 4, st);
    if (c != VG_OK) return c;
    vg_dtype dt = vg__op_input_dtype(op, 4);
    const vg_tensor *sh = vg__op_const_input(op, 0);
    int64_t dims[VG_MAX_DIMS];
    int n;
    if (read_vec(sh, dims, &n)) vg__op_set_output(op, 0, dt, vg_shape_make(dims, n));
    else {
        vg_shape s = vg__op_input_shape(op, 0), out = vg_shape_unknown();
        if (s.ndims == 1 && s.dims[0] >= 0 && s.dims[0] <= VG_MAX_DIMS) {
            out.ndims = (int)s.dims[0];
            for (int i = 0; i < out.ndims; i++) out.dims[i] = -1;
        }
        vg__op_set_output(op, 0, dt, out);
    }
    return VG_OK;
}

static vg_code kernel_strided_slice_grad(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    int64_t dims[VG_MAX_DIMS];
    int n;
    if (!read_vec(vg__kctx_input(ctx, 0), dims, &n))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "StridedSliceGrad: shape must be a 1-D int32/int64 tensor");
    for (int i = 0; i < n; i++)
        if (dims[i] < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "StridedSliceGrad: negative dim in shape");
    ss_plan p;
    vg_code c = runtime_plan(ctx, 1, dims, n, &p);
    if (c != VG_OK) return c;
    const vg_tensor *dy = vg__kctx_input(ctx, 4);
    vg_tensor *o;
    vg_dtype dt = vg_tensor_dtype(dy);
    /* allocating first validates the shape's element count (no overflow below) */
    if ((c = vg__kctx_alloc_output(ctx, 0, dt, dims, n, &o)) != VG_OK) return c;
    int64_t want = 1;
    for (int i = 0; i < p.final_rank; i++) want *= p.final_dims[i];
    if (vg_tensor_num_elements(dy) != want || vg_tensor_ndims(dy) != p.final_rank) {
        vg_shape sd = vg_tensor_shape(dy), sw = vg_shape_make(p.final_dims, p.final_rank);
        char a[128], b[128];
        return vg_status_set(st, VG_INVALID_ARGUMENT, "shape of dy was %s instead of %s",
                             vg_shape_str(&sd, a, sizeof a), vg_shape_str(&sw, b, sizeof b));
    }
    size_t esz = vg_dtype_size(dt);
    if (esz == 0) return vg_status_set(st, VG_UNIMPLEMENTED, "StridedSliceGrad of dtype %s", vg_dtype_name(dt));
    memset(vg_tensor_data(o), 0, vg_tensor_nbytes(o));
    ss_walk(&p, dims, vg_tensor_data(o), vg_tensor_data(dy), esz, true);
    return VG_OK;
}

static void copy_masks(vg_op_builder *b, const vg_op *op) {
    const char *masks[5] = {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"};
    for (int i = 0; i < 5; i++) {
        int64_t v = 0;
        vg_op_attr_int(op, masks[i], &v);
        vg_op_builder_set_attr_int(b, masks[i], v);
    }
}

static vg_code grad_strided_slice(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_op_builder *b = vg_op_builder_new(g, "StridedSliceGrad", "StridedSliceGrad");
    if (!b) return vg_graph_status(g, NULL);
    vg_dtype it = vg_output_dtype(vg_op_input(op, 1));
    vg_op_builder_add_input(b, vg_shape_op(g, vg_op_input(op, 0), it, "Shape"));
    for (int i = 1; i < 4; i++) vg_op_builder_add_input(b, vg_op_input(op, i));
    vg_op_builder_add_input(b, dy[0]);
    copy_masks(b, op);
    dx[0] = vg_out(vg_op_builder_finish(b), 0);
    return vg_graph_status(g, NULL);
}

/* _StridedSliceGradGrad: strided_slice(grad, begin, end, strides) for dy. */
static vg_code grad_strided_slice_grad(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_op_builder *b = vg__builder_with_inputs(g, "StridedSlice", "StridedSlice", NULL, (vg_output[]){dy[0]}, 1);
    if (!b) return vg_graph_status(g, NULL);
    for (int i = 1; i < 4; i++) vg_op_builder_add_input(b, vg_op_input(op, i));
    copy_masks(b, op);
    dx[4] = vg_out(vg_op_builder_finish(b), 0);
    return vg_graph_status(g, NULL);
}

vg_output vg_strided_slice(vg_graph *g, vg_output x, vg_output begin, vg_output end, vg_output strides,
                           const vg_strided_slice_masks *masks, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "StridedSlice", name, NULL, (vg_output[]){x, begin, end, strides}, 4);
    if (!b) return vg_out(NULL, 0);
    vg_strided_slice_masks z = {0, 0, 0, 0, 0};
    if (!masks) masks = &z;
    vg_op_builder_set_attr_int(b, "begin_mask", masks->begin_mask);
    vg_op_builder_set_attr_int(b, "end_mask", masks->end_mask);
    vg_op_builder_set_attr_int(b, "ellipsis_mask", masks->ellipsis_mask);
    vg_op_builder_set_attr_int(b, "new_axis_mask", masks->new_axis_mask);
    vg_op_builder_set_attr_int(b, "shrink_axis_mask", masks->shrink_axis_mask);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_strided_slice_c(vg_graph *g, vg_output x, const int32_t *begin, const int32_t *end,
                             const int32_t *strides, int n, const vg_strided_slice_masks *masks, const char *name) {
    if (n < 0 || n > VG_MAX_DIMS || (n > 0 && (!begin || !end))) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "strided_slice: %d slice entries (0..%d; begin and end required)", n,
                           VG_MAX_DIMS);
        return vg_out(NULL, 0);
    }
    int32_t ones[VG_MAX_DIMS];
    for (int i = 0; i < n; i++) ones[i] = 1;
    vg_output vb = vg_const_i32_vec(g, begin, n, "stack");
    vg_output ve = vg_const_i32_vec(g, end, n, "stack_1");
    vg_output vs = vg_const_i32_vec(g, strides ? strides : ones, n, "stack_2");
    return vg_strided_slice(g, x, vb, ve, vs, masks, name);
}

const vg__op_def vg__ops_strided_slice[] = {
    {"StridedSlice", 4, 4, 0, 0, shape_strided_slice, kernel_strided_slice, grad_strided_slice},
    {"StridedSliceGrad", 5, 5, 0, 0, shape_strided_slice_grad, kernel_strided_slice_grad, grad_strided_slice_grad},
    {0},
};
