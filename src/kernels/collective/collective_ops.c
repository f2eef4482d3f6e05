/*
 * collective_ops.c - collectives as graph ops (issue 15): TF's CollectiveReduce,
 * CollectiveBcastSend/Recv and CollectiveGather, Horovod's HorovodBroadcast, and
 * VigilFusedAllreduce (many tensors reduced through one fusion buffer).
 *
 * A kernel builds a request over reusable host buffers of the dist layer (dist/comm.h)
 * and waits for it; when MPI is idle the waiting thread makes the MPI calls itself,
 * otherwise the communication thread does. The ops are VG__OP_BLOCKING, so the
 * executor runs them on the run's caller thread and never parks an inter-op pool
 * thread on a peer. The wait polls the session: when it closes the kernel returns
 * CANCELLED (the request finishes on the communication thread and gives the buffers
 * back); a dead peer gives UNAVAILABLE. Every rank must run its collectives
 * in the same order: order two collectives of one run that data flow does not order
 * with a control dependency (the builders of vigil/distributed.h that make several
 * collectives chain them).
 *
 * TF's group_key/instance_key attrs are kept for GraphDef compatibility; the group is
 * the MPI world (group_size must equal its size; 0 = the world's size).
 */
#include "dist/comm.h"
#include "exec/exec.h"
#include "kernels/kernel.h"
#include "vigil/distributed.h"
#include <stdio.h>
#include <string.h>

static bool session_closing(const void *s) { return vg__session_closing((const vg_session *)s); }

static bool supported(vg_dtype dt) { return dt == VG_FLOAT || dt == VG_DOUBLE || dt == VG_INT32 || dt == VG_INT64; }

static vg_code check_dtype(vg_op *op, vg_dtype dt, vg_status *st) {
    if (!supported(dt))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: dtype %s is not supported (float32, float64, int32, int64)",
                             vg_op_type(op), vg_dtype_name(dt));
    return VG_OK;
}

/* Joins the world, checks group_size, and fails fast on a closing session. */
static vg_code prologue(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    if (vg__session_closing(vg__kctx_session(ctx)))
        return vg_status_set(st, VG_CANCELLED, "collective cancelled: the session is closed");
    if (vg_dist_init(st) != VG_OK) return st->code;
    int64_t gs = 0;
    vg_op_attr_int(vg__kctx_op(ctx), "group_size", &gs);
    if (gs != 0 && gs != vg_dist_size())
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: group_size %lld but the world has %d rank(s)",
                             vg_op_type(vg__kctx_op(ctx)), (long long)gs, vg_dist_size());
    return VG_OK;
}

/* Where the MPI calls run: a run with inter-op helper threads leaves them to the
 * communication thread and sleeps while it waits (its busy wait would take a core from
 * the helpers still back-propagating: test_dist_overlap's first bucket then started
 * after the last gradient in about a third of the loaded runs, against a tenth); a
 * single-threaded run makes them itself (no hand-off; nothing else needs its core). */
static void placement(vg__kctx *ctx, vg__comm_req *r) {
    if (r && vg__kctx_session(ctx)->inter) vg__comm_req_queue_only(r);
}

/* Runs one request over buf (a comm buffer the request owns from now on). */
static vg_code run_req(vg__kctx *ctx, vg__comm_kind kind, void *buf, int64_t count, vg_dtype dt, vg_reduce_op op,
                       int root, vg__comm_req **out) {
    vg_status *st = vg__kctx_status(ctx);
    vg__comm_req *r = vg__comm_req_new(kind, buf, count, dt, op, root);
    if (!r) {
        vg__comm_buffer_put(buf);
        return VG_OOM(st, "a collective request");
    }
    vg__comm_req_own(r, buf);
    placement(ctx, r);
    vg_code rc = vg__comm_submit(r, st);
    if (rc == VG_OK) rc = vg__comm_wait(r, session_closing, vg__kctx_session(ctx), vg__kctx_deadline_ns(ctx), st);
    if (rc != VG_OK || !out) vg__comm_req_free(r);
    else *out = r;
    return rc;
}

/* Every rank must hold the same signature (dtype, rank, dims): INVALID_ARGUMENT
 * naming `what` otherwise, on every rank (the check is itself a collective). */
static vg_code check_same(vg__kctx *ctx, const char *what, vg_dtype dt, const int64_t *dims, int nd, int skip_dims) {
    vg_status *st = vg__kctx_status(ctx);
    if (vg_dist_size() == 1) return VG_OK;
    int64_t *sig = vg__comm_buffer_get((VG_MAX_DIMS + 2) * sizeof(int64_t));
    if (!sig) return VG_OOM(st, "a shape check");
    sig[0] = dt;
    sig[1] = nd;
    for (int i = 0; i < VG_MAX_DIMS; i++) sig[2 + i] = i < nd && i >= skip_dims ? dims[i] : -1;
    vg__comm_req *r = NULL;
    vg_code rc = run_req(ctx, VG__COMM_CHECK, sig, VG_MAX_DIMS + 2, VG_INT64, VG_REDUCE_MAX, 0, &r);
    if (rc != VG_OK) return rc;
    int bad = vg__comm_req_check_mismatch(r);
    vg__comm_req_free(r);
    if (bad < 0) return VG_OK;
    char shape[200] = "[";
    for (int i = 0; i < nd; i++)
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld", i ? "," : "", (long long)dims[i]);
    snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "]");
    return vg_status_set(st, VG_INVALID_ARGUMENT,
                         "Mismatched %s across ranks for '%s': rank %d has %s %s, another rank differs "
                         "(are the graphs built the same on every rank?)",
                         bad == 0 ? "dtypes" : "shapes", what, vg_dist_rank(), vg_dtype_name(dt), shape);
}

static const char *tensor_name(const vg_op *op) {
    const char *s = NULL;
    size_t len = 0;
    if (vg_op_attr_string(op, "tensor_name", &s, &len) && s && len) return s;
    return vg_op_name(op);
}

/* ---- CollectiveReduce, VigilFusedAllreduce --------------------------------------- */

static vg_code reduce_ops(const vg_op *op, vg_reduce_op *merge, bool *div, vg_status *st) {
    const char *m = "Add", *f = "Id";
    size_t len;
    vg_op_attr_string(op, "merge_op", &m, &len);
    vg_op_attr_string(op, "final_op", &f, &len);
    if (strcmp(m, "Add") == 0) *merge = VG_REDUCE_SUM;
    else if (strcmp(m, "Mul") == 0) *merge = VG_REDUCE_PROD;
    else if (strcmp(m, "Min") == 0) *merge = VG_REDUCE_MIN;
    else if (strcmp(m, "Max") == 0) *merge = VG_REDUCE_MAX;
    else return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: merge_op '%s' is not one of Add, Mul, Min, Max", vg_op_type(op), m);
    if (strcmp(f, "Id") == 0) *div = false;
    else if (strcmp(f, "Div") == 0) *div = true;
    else return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: final_op '%s' is not one of Id, Div", vg_op_type(op), f);
    return VG_OK;
}

/* VigilFusedAllreduce's "compression" attr: "none" (absent) or "fp16". */
static vg_code wire_fp16(const vg_op *op, bool *fp16, vg_status *st) {
    const char *c = NULL;
    size_t len = 0;
    *fp16 = false;
    if (!vg_op_attr_string(op, "compression", &c, &len) || !c || (len == 4 && memcmp(c, "none", 4) == 0)) return VG_OK;
    if (len == 4 && memcmp(c, "fp16", 4) == 0) {
        *fp16 = true;
        return VG_OK;
    }
    return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: compression '%.*s' is not one of none, fp16", vg_op_type(op),
                         (int)len, c);
}

static vg_code shape_reduce(vg_op *op, vg_status *st) {
    int n = vg_op_num_inputs(op);
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (check_dtype(op, dt, st) != VG_OK) return st->code;
    for (int i = 1; i < n; i++)
        if (vg__op_input_dtype(op, i) != dt)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input %d has dtype %s, input 0 %s", vg_op_type(op), i,
                                 vg_dtype_name(vg__op_input_dtype(op, i)), vg_dtype_name(dt));
    vg_reduce_op m;
    bool div, fp16;
    if (reduce_ops(op, &m, &div, st) != VG_OK || wire_fp16(op, &fp16, st) != VG_OK) return st->code;
    vg__op_set_default_attr_type(op, "T", dt);
    vg__op_set_default_attr_string(op, "merge_op", "Add");
    vg__op_set_default_attr_string(op, "final_op", "Id");
    vg__op_set_num_outputs(op, n);
    for (int i = 0; i < n; i++) vg__op_set_output(op, i, dt, vg__op_input_shape(op, i));
    return VG_OK;
}

static void divide(void *p, int64_t n, vg_dtype dt, int size) {
    switch (dt) {
    /* a product with the reciprocal (exact for power-of-two sizes): a division per
     * element would cost more than the allreduce itself */
    case VG_FLOAT: { float *f = p; float r = 1.0f / (float)size; for (int64_t i = 0; i < n; i++) f[i] *= r; break; }
    case VG_DOUBLE: { double *f = p; double r = 1.0 / size; for (int64_t i = 0; i < n; i++) f[i] *= r; break; }
    case VG_INT32: { int32_t *f = p; for (int64_t i = 0; i < n; i++) f[i] /= size; break; }
    case VG_INT64: { int64_t *f = p; for (int64_t i = 0; i < n; i++) f[i] /= size; break; }
    default: break;
    }
}

/* dst = src * (1 / size): the mean's division done on the way in, while src is still
 * in this core's cache (after the allreduce the sum arrives from the peers' caches and
 * a pass over it costs several times more). */
static void scaled_copy(void *restrict dst, const void *restrict src, int64_t n, vg_dtype dt, int size) {
    /* blocks of 16 with restrict: -O2's cheap vectoriser takes only loops of a known
     * trip count without aliasing checks (a plain loop stays scalar, 3x a memcpy) */
    int64_t i = 0;
    if (dt == VG_FLOAT) {
        float *restrict d = dst;
        const float *restrict s = src;
        const float r = 1.0f / (float)size;
        for (; i + 16 <= n; i += 16)
            for (int k = 0; k < 16; k++) d[i + k] = s[i + k] * r;
        for (; i < n; i++) d[i] = s[i] * r;
    } else {
        double *restrict d = dst;
        const double *restrict s = src;
        const double r = 1.0 / size;
        for (; i + 16 <= n; i += 16)
            for (int k = 0; k < 16; k++) d[i + k] = s[i + k] * r;
        for (; i < n; i++) d[i] = s[i] * r;
    }
}

/* The fusion buffer's owner: a tensor over the whole buffer that gives it back to the
 * dist layer's pool; each output is a view of its slice holding one reference. */
static void fusion_put(void *data, size_t len, void *payload) {
    (void)len;
    (void)payload;
    vg__comm_buffer_put(data);
}
static void view_release(void *data, size_t len, void *payload) {
    (void)data;
    (void)len;
    vg_tensor_free(payload);
}

#define SLICE_ALIGN ((size_t)64)
/* Off the ring, a tensor of at least this many bytes is reduced straight from the
 * input into its slice (MPI_Allreduce out of place, no packing copy); smaller ones are
 * packed and reduced together by one call. An extra call costs a synchronisation of
 * the ranks (5 us for 12 KB here), about the time a copy of 64 KB takes. Fusions of
 * floats smaller than this are not worth a ring either. */
#define DIRECT_MIN ((size_t)64 << 10)

static size_t padded(size_t nb) { return (nb + SLICE_ALIGN - 1) & ~(SLICE_ALIGN - 1); }

/* The outputs are slices of one fusion buffer from the dist layer's pool (no output
 * allocation, no copy out): a training loop reuses it step after step, as it goes back
 * to the pool when the last output is released. Sums and means of float32/float64
 * (the gradients' case) go through the dist layer's ring (VG__COMM_FUSED): read
 * straight from the inputs, no packing copy, the mean folded into the ring's last add.
 * Other reductions: inputs of DIRECT_MIN bytes or more are reduced from the input
 * straight into their slice by MPI_Allreduce out of place; the small ones are packed
 * (the mean of floats folded into the copy) into one region at the front and reduced
 * in place by one call (a single small one goes directly too). All the calls are one
 * request: one barrier, one hand-off at most. The attrs "compression" (fp16) and
 * "hierarchical" apply to the dist layer's FUSED request only: fusions under
 * DIRECT_MIN bytes stay one plain MPI_Allreduce. */
static vg_code kernel_reduce(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    if (prologue(ctx) != VG_OK) return st->code;
    vg_reduce_op merge;
    bool div, fp16, hier = false;
    if (reduce_ops(op, &merge, &div, st) != VG_OK || wire_fp16(op, &fp16, st) != VG_OK) return st->code;
    vg_op_attr_bool(op, "hierarchical", &hier);
    int n = vg__kctx_num_inputs(ctx);
    vg_dtype dt = vg_tensor_dtype(vg__kctx_input(ctx, 0));
    size_t es = vg_dtype_size(dt), small_total = 0, total = 0;
    int size = vg_dist_size(), nsmall = 0;
    /* the mean of floating types by scaling (merge Add); others divide at the end */
    bool fdiv = div && size > 1 && merge == VG_REDUCE_SUM && (dt == VG_FLOAT || dt == VG_DOUBLE);
    for (int i = 0; i < n; i++) {
        size_t nb = vg_tensor_nbytes(vg__kctx_input(ctx, i));
        if (nb < DIRECT_MIN) {
            small_total += padded(nb);
            nsmall++;
        }
        total += padded(nb);
    }
    /* sums of floating types (and the mean) of DIRECT_MIN bytes or more: vigil's ring
     * straight from the inputs (smaller ones: one MPI_Allreduce, whose algorithm for
     * small messages takes fewer steps than a ring) */
    bool ring = size > 1 && merge == VG_REDUCE_SUM && (dt == VG_FLOAT || dt == VG_DOUBLE) && total >= DIRECT_MIN &&
                total / es / (size_t)size < INT32_MAX / 2;
    bool pack = !ring && nsmall >= 2; /* else every tensor goes directly */

    char *fbuf = vg__comm_buffer_get(total ? total : 1);
    if (!fbuf) return VG_OOM(st, "the fusion buffer");
    vg_tensor *whole = vg_tensor_new_from(VG_UINT8, (const int64_t[]){(int64_t)total}, 1, fbuf, total, fusion_put,
                                          NULL, st);
    if (!whole) {
        vg__comm_buffer_put(fbuf);
        return st->code ? st->code : VG_OOM(st, "the fusion buffer");
    }
    size_t *offs = vg__malloc((size_t)n * sizeof *offs);
    vg__comm_req *r = vg__comm_req_new(ring ? VG__COMM_FUSED : VG__COMM_ALLREDUCE, fbuf, ring ? (int64_t)(total / es) : 0,
                                       dt, merge, 0);
    vg_code rc = VG_OK;
    if (r && ring) vg__comm_req_set_wire(r, fp16 && dt == VG_FLOAT, hier);
    placement(ctx, r);
    /* the buffer and the inputs outlive a cancelled wait */
    if (!offs || !r || !vg__comm_req_hold(r, whole)) rc = VG_OOM(st, "a collective request");
    size_t soff = 0, doff = pack ? small_total : 0;
    for (int i = 0; i < n && rc == VG_OK; i++) {
        vg_tensor *t = (vg_tensor *)vg__kctx_input(ctx, i);
        size_t nb = vg_tensor_nbytes(t);
        int64_t ne = vg_tensor_num_elements(t);
        if (pack && nb < DIRECT_MIN) {
            offs[i] = soff;
            if (fdiv) scaled_copy(fbuf + soff, vg_tensor_data(t), ne, dt, size);
            else if (nb) memcpy(fbuf + soff, vg_tensor_data(t), nb);
            if (padded(nb) > nb) memset(fbuf + soff + nb, 0, padded(nb) - nb);
            soff += padded(nb);
        } else {
            offs[i] = doff;
            doff += padded(nb);
            if (ne && (!vg__comm_req_hold(r, t) || !vg__comm_req_add_part(r, vg_tensor_data(t), fbuf + offs[i], ne, fdiv)))
                rc = VG_OOM(st, "a collective request");
        }
    }
    if (rc == VG_OK && pack && !vg__comm_req_add_part(r, NULL, fbuf, (int64_t)(small_total / es), false))
        rc = VG_OOM(st, "a collective request");
    if (rc == VG_OK) {
        rc = vg__comm_submit(r, st);
        if (rc == VG_OK) rc = vg__comm_wait(r, session_closing, vg__kctx_session(ctx), vg__kctx_deadline_ns(ctx), st);
    }
    vg__comm_req_free(r);
    if (rc == VG_OK && div && !fdiv && size > 1)
        for (int i = 0; i < n; i++) divide(fbuf + offs[i], vg_tensor_num_elements(vg__kctx_input(ctx, i)), dt, size);
    for (int i = 0; i < n && rc == VG_OK; i++) {
        const vg_tensor *t = vg__kctx_input(ctx, i);
        vg_tensor *v = vg_tensor_new_from(dt, vg_tensor_dims(t), vg_tensor_ndims(t), fbuf + offs[i],
                                          vg_tensor_nbytes(t), view_release, whole, st);
        if (!v) {
            rc = st->code ? st->code : VG_OOM(st, "a collective output");
            break;
        }
        vg_tensor_ref(whole); /* dropped by view_release */
        vg__kctx_set_output(ctx, i, v);
    }
    vg__free(offs);
    vg_tensor_free(whole);
    return rc;
}

/* ---- broadcasts ------------------------------------------------------------------ */

static vg_code shape_bcast_send(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (check_dtype(op, dt, st) != VG_OK) return st->code;
    return vg__op_set_t_output(op, dt, vg__op_input_shape(op, 0));
}

static vg_code shape_bcast_recv(vg_op *op, vg_status *st) {
    vg_dtype dt = VG_FLOAT;
    vg_shape s;
    if (!vg_op_attr_type_(op, "T", &dt) || !vg_op_attr_shape(op, "shape", &s))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "CollectiveBcastRecv needs attrs T and shape");
    if (check_dtype(op, dt, st) != VG_OK) return st->code;
    for (int i = 0; i < s.ndims; i++)
        if (s.dims[i] < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "CollectiveBcastRecv: shape must be fully defined");
    if (s.ndims < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "CollectiveBcastRecv: shape must be fully defined");
    return vg__op_set_single_output(op, dt, s);
}

/* Broadcast of data (dims known on this rank) from root; is_root says whether this
 * rank sends; root < 0: find the sender (exactly one rank must send). */
static vg_code do_bcast(vg__kctx *ctx, const vg_tensor *in, vg_dtype dt, const int64_t *dims, int nd, int root) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    if (prologue(ctx) != VG_OK) return st->code;
    int size = vg_dist_size();
    vg_code rc;
    if (root < 0) {
        int64_t *who = vg__comm_buffer_get(2 * sizeof(int64_t));
        if (!who) return VG_OOM(st, "a broadcast");
        who[0] = in != NULL;
        who[1] = in != NULL ? vg_dist_rank() : 0;
        vg__comm_req *r = NULL;
        if ((rc = run_req(ctx, VG__COMM_ALLREDUCE, who, 2, VG_INT64, VG_REDUCE_SUM, 0, &r)) != VG_OK) return rc;
        int64_t senders = who[0];
        root = (int)who[1];
        vg__comm_req_free(r);
        if (senders != 1)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: %lld rank(s) sent the broadcast, exactly one must",
                                 vg_op_type(op), (long long)senders);
    } else if (root >= size) {
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: root_rank %d outside [0, %d)", vg_op_type(op), root, size);
    }
    if ((rc = check_same(ctx, tensor_name(op), dt, dims, nd, 0)) != VG_OK) return rc;
    vg_tensor *o;
    if ((rc = vg__kctx_alloc_output(ctx, 0, dt, dims, nd, &o)) != VG_OK) return rc;
    size_t bytes = vg_tensor_nbytes(o);
    char *buf = vg__comm_buffer_get(bytes);
    if (!buf) return VG_OOM(st, "a broadcast buffer");
    if (in) memcpy(buf, vg_tensor_data(in), bytes);
    vg__comm_req *r = NULL;
    if ((rc = run_req(ctx, VG__COMM_BCAST, buf, (int64_t)bytes, VG_UINT8, VG_REDUCE_SUM, root, &r)) != VG_OK) return rc;
    memcpy(vg_tensor_data(o), buf, bytes);
    vg__comm_req_free(r);
    return VG_OK;
}

static vg_code kernel_bcast_send(vg__kctx *ctx) {
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    return do_bcast(ctx, x, vg_tensor_dtype(x), vg_tensor_dims(x), vg_tensor_ndims(x), -1);
}

static vg_code kernel_bcast_recv(vg__kctx *ctx) {
    vg_dtype dt = VG_FLOAT;
    vg_shape s;
    vg_op_attr_type_(vg__kctx_op(ctx), "T", &dt);
    vg_op_attr_shape(vg__kctx_op(ctx), "shape", &s);
    return do_bcast(ctx, NULL, dt, s.dims, s.ndims, -1);
}

static vg_code kernel_hvd_bcast(vg__kctx *ctx) {
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    int64_t root = 0;
    vg_op_attr_int(vg__kctx_op(ctx), "root_rank", &root);
    if (root < 0) return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "root_rank %lld < 0", (long long)root);
    if (prologue(ctx) != VG_OK) return vg__kctx_status(ctx)->code;
    return do_bcast(ctx, vg_dist_rank() == root ? x : NULL, vg_tensor_dtype(x),
                    vg_tensor_dims(x), vg_tensor_ndims(x), (int)root);
}

/* ---- CollectiveGather: concatenation along dimension 0 ------------------------------ */

static vg_code shape_gather(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    if (check_dtype(op, dt, st) != VG_OK) return st->code;
    vg_shape s = vg__op_input_shape(op, 0);
    if (s.ndims == 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "CollectiveGather: input must have rank >= 1");
    if (s.ndims > 0) s.dims[0] = -1;
    return vg__op_set_t_output(op, dt, s);
}

static vg_code kernel_gather(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    if (prologue(ctx) != VG_OK) return st->code;
    int nd = vg_tensor_ndims(x);
    if (nd < 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "CollectiveGather: input must have rank >= 1");
    vg_dtype dt = vg_tensor_dtype(x);
    vg_code rc = check_same(ctx, tensor_name(vg__kctx_op(ctx)), dt, vg_tensor_dims(x), nd, 1);
    if (rc != VG_OK) return rc;
    size_t bytes = vg_tensor_nbytes(x);
    char *buf = vg__comm_buffer_get(bytes);
    if (!buf) return VG_OOM(st, "a gather buffer");
    memcpy(buf, vg_tensor_data(x), bytes);
    vg__comm_req *r = NULL;
    if ((rc = run_req(ctx, VG__COMM_ALLGATHER, buf, (int64_t)bytes, VG_UINT8, VG_REDUCE_SUM, 0, &r)) != VG_OK) return rc;
    int64_t total = 0;
    const void *all = vg__comm_req_gathered(r, NULL, &total);
    int64_t dims[VG_MAX_DIMS];
    memcpy(dims, vg_tensor_dims(x), (size_t)nd * sizeof(int64_t));
    int64_t row = dims[0] ? (int64_t)bytes / dims[0] : 0;
    if (row == 0) {
        int64_t inner = 1;
        for (int i = 1; i < nd; i++) inner *= dims[i];
        row = inner * (int64_t)vg_dtype_size(dt);
    }
    dims[0] = row ? total / row : 0;
    vg_tensor *o;
    rc = vg__kctx_alloc_output(ctx, 0, dt, dims, nd, &o);
    if (rc == VG_OK && total) memcpy(vg_tensor_data(o), all, (size_t)total);
    vg__comm_req_free(r);
    return rc;
}

/* ---- builders --------------------------------------------------------------------- */

static void set_group(vg_op_builder *b, int group_size, int group_key, int instance_key) {
    vg_op_builder_set_attr_int(b, "group_size", group_size);
    vg_op_builder_set_attr_int(b, "group_key", group_key);
    vg_op_builder_set_attr_int(b, "instance_key", instance_key);
}

vg_output vg_collective_reduce(vg_graph *g, vg_output x, int group_size, int group_key, int instance_key,
                               const char *merge_op, const char *final_op, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "CollectiveReduce", name, NULL, (vg_output[]){x}, 1);
    if (!b) return vg_out(NULL, 0);
    set_group(b, group_size, group_key, instance_key);
    vg_op_builder_set_attr_string(b, "merge_op", merge_op ? merge_op : "Add", strlen(merge_op ? merge_op : "Add"));
    vg_op_builder_set_attr_string(b, "final_op", final_op ? final_op : "Id", strlen(final_op ? final_op : "Id"));
    vg_op_builder_set_attr_int_list(b, "subdiv_offsets", (const int64_t[]){0}, 1);
    return vg_out(vg_op_builder_finish(b), 0);
}

/* A collective op of type `type` on x with x's static shape as its "shape" attribute
 * (CollectiveBcastSend, CollectiveGather). */
static vg_output collective_shaped(vg_graph *g, const char *type, vg_output x, int group_size, int group_key,
                                   int instance_key, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, type, name, NULL, (vg_output[]){x}, 1);
    if (!b) return vg_out(NULL, 0);
    set_group(b, group_size, group_key, instance_key);
    vg_op_builder_set_attr_shape(b, "shape", vg_output_shape(x));
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_collective_bcast_send(vg_graph *g, vg_output x, int group_size, int group_key, int instance_key,
                                   const char *name) {
    return collective_shaped(g, "CollectiveBcastSend", x, group_size, group_key, instance_key, name);
}

vg_output vg_collective_bcast_recv(vg_graph *g, vg_dtype dt, vg_shape shape, int group_size, int group_key,
                                   int instance_key, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, "CollectiveBcastRecv", name);
    if (!b) return vg_out(NULL, 0);
    vg_op_builder_set_attr_type(b, "T", dt);
    vg_op_builder_set_attr_shape(b, "shape", shape);
    set_group(b, group_size, group_key, instance_key);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_collective_gather(vg_graph *g, vg_output x, int group_size, int group_key, int instance_key,
                               const char *name) {
    return collective_shaped(g, "CollectiveGather", x, group_size, group_key, instance_key, name);
}

vg_output vg_dist_broadcast_tensor(vg_graph *g, vg_output x, int root_rank, const char *tensor_name, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "HorovodBroadcast", name, NULL, (vg_output[]){x}, 1);
    if (!b) return vg_out(NULL, 0);
    vg_op_builder_set_attr_int(b, "root_rank", root_rank);
    if (tensor_name) vg_op_builder_set_attr_string(b, "tensor_name", tensor_name, strlen(tensor_name));
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_op *vg_dist_fused_allreduce(vg_graph *g, const vg_output *xs, int n, bool average, const char *name) {
    if (n < 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "vg_dist_fused_allreduce: no tensors");
        return NULL;
    }
    vg_op_builder *b = vg__builder_with_inputs(g, "VigilFusedAllreduce", name, NULL, xs, n);
    if (!b) return NULL;
    vg_op_builder_set_attr_int(b, "N", n);
    vg_op_builder_set_attr_int(b, "group_size", 0);
    vg_op_builder_set_attr_string(b, "merge_op", "Add", 3);
    vg_op_builder_set_attr_string(b, "final_op", average ? "Div" : "Id", average ? 3 : 2);
    return vg_op_builder_finish(b);
}

enum { COLL = VG__OP_STATEFUL | VG__OP_BLOCKING | VG__OP_NOT_DIFFERENTIABLE | VG__OP_COLLECTIVE };

const vg__op_def vg__ops_collective[] = {
    {"CollectiveReduce", 1, 1, COLL, 0, shape_reduce, kernel_reduce, NULL},
    {"VigilFusedAllreduce", 1, -1, COLL, 0, shape_reduce, kernel_reduce, NULL},
    {"CollectiveBcastSend", 1, 1, COLL, 0, shape_bcast_send, kernel_bcast_send, NULL},
    {"CollectiveBcastRecv", 0, 0, COLL, 0, shape_bcast_recv, kernel_bcast_recv, NULL},
    {"HorovodBroadcast", 1, 1, COLL, 0, shape_bcast_send, kernel_hvd_bcast, NULL},
    {"CollectiveGather", 1, 1, COLL, 0, shape_gather, kernel_gather, NULL},
    {0},
};
