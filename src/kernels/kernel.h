/*
 * kernel.h - the kernel layer's run-time interface: what a CPU kernel sees while it
 * runs (its context: inputs, outputs, status, intra-op threads, per-op state), the
 * variable slots behind ref inputs, and per-session resources (queues). Every op
 * family file includes this header; it brings in graph/registry.h (op definitions,
 * shape-function helpers) and core/tensor_internal.h.
 *
 * Implemented in kernel.c on top of the executor's data (exec/exec.h); the executor
 * itself only fills a vg__kctx and calls the def's kernel pointer, so nothing below
 * this layer depends on it.
 */
#ifndef VG_KERNEL_H
#define VG_KERNEL_H

#include "core/tensor_internal.h"
#include "graph/registry.h"
#include "vigil/session.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Defines kernel NAME as NAME_unlocked(ctx) run under the pthread mutex MU: for the
 * families whose session objects carry no lock of their own (TensorArrays, stacks)
 * and whose ops the executor may run at once. */
#define VG__KERNEL_UNDER_LOCK(name, mu)                                                                           \
    static vg_code name(vg__kctx *ctx) {                                                                          \
        pthread_mutex_lock(&(mu));                                                                                \
        vg_code rc_ = name##_unlocked(ctx);                                                                       \
        pthread_mutex_unlock(&(mu));                                                                              \
        return rc_;                                                                                               \
    }

typedef struct vg__var vg__var;

/* ---- run-time kernel context -------------------------------------------- */
VG_HIDDEN const vg_op *vg__kctx_op(const vg__kctx *ctx);
VG_HIDDEN int vg__kctx_num_inputs(const vg__kctx *ctx);
/* The program the planner gave a fused element-wise node (exec/ewfuse.h; borrowed,
 * lives with the plan), NULL for any other node. */
VG_HIDDEN const struct vg__ew_prog *vg__kctx_fused_prog(const vg__kctx *ctx);
/* True when the mixed-precision rewrite painted the node (exec/amp.c): its float32
 * inputs hold bfloat16 values and it may compute in bfloat16 (MatMul does). */
VG_HIDDEN bool vg__kctx_amp(const vg__kctx *ctx);
/* Input i's value, borrowed for the kernel call. For a ref input this is the
 * variable's current value (NULL if uninitialized). */
VG_HIDDEN vg_tensor *vg__kctx_input(const vg__kctx *ctx, int i);
/* Allocates output i (64-byte aligned, uninitialised data) and sets it; *out is
 * borrowed. Fails with RESOURCE_EXHAUSTED (status set). */
VG_HIDDEN vg_code vg__kctx_alloc_output(vg__kctx *ctx, int i, vg_dtype dt, const int64_t *dims,
                                         int ndims, vg_tensor **out);
/* Sets output i to t, taking over one reference (e.g. Identity: vg_tensor_ref(in)). */
VG_HIDDEN void vg__kctx_set_output(vg__kctx *ctx, int i, vg_tensor *t);
/* The variable slot behind ref input i (NULL if input i is not a ref input). */
VG_HIDDEN vg__var *vg__kctx_var(const vg__kctx *ctx, int i);
VG_HIDDEN vg_status *vg__kctx_status(vg__kctx *ctx);
VG_HIDDEN vg_session *vg__kctx_session(const vg__kctx *ctx);
VG_HIDDEN const vg_run_options *vg__kctx_run_options(const vg__kctx *ctx);
/* Absolute deadline (vg__now_ns clock) from run_options.timeout_in_ms, 0 = none. */
VG_HIDDEN int64_t vg__kctx_deadline_ns(const vg__kctx *ctx);
/* Number of intra-op threads available to this kernel (>= 1). */
VG_HIDDEN int vg__kctx_num_threads(const vg__kctx *ctx);
/* Runs fn(arg, begin, end) over [0, n) split into chunks on the intra-op pool; the
 * caller's thread takes part; returns when all are done. cost_per_unit is a rough
 * count of flops per unit used to decide whether splitting pays (< ~10k total units
 * of work run inline). */
typedef void (*vg__range_fn)(void *arg, int64_t begin, int64_t end);
VG_HIDDEN void vg__kctx_parallel_for(vg__kctx *ctx, int64_t n, int64_t cost_per_unit,
                                     vg__range_fn fn, void *arg);
/* Runs fn(arg, begin, end, slot) over [0, n) cut into nchunks pieces that up to nslots
 * threads (the caller's included) claim as they go: a thread on a core that runs slow
 * this minute takes fewer pieces instead of holding the others up at the end. Each
 * thread keeps one slot in [0, nslots) for all its pieces (index per-thread scratch
 * with it); slot 0 always runs at least one piece (n > 0), other slots may run none.
 * nslots <= 1 or no pool: fn(arg, 0, n, 0) on the caller. */
typedef void (*vg__slot_range_fn)(void *arg, int64_t begin, int64_t end, int slot);
VG_HIDDEN void vg__kctx_parallel_for_slots(vg__kctx *ctx, int64_t n, int nslots, int64_t nchunks,
                                           vg__slot_range_fn fn, void *arg);
/* Per-(session, op) kernel state, created once on first use with create (thread-safe;
 * later calls return the same pointer); destroy is called when the session is freed.
 * Used by random ops (their stream position) and resource ops. */
VG_HIDDEN vg_code vg__kctx_state(vg__kctx *ctx, void *(*create)(const vg_op *op, vg_status *st),
                                  void (*destroy)(void *state), void **out);

/* A per-run resource (TF's step container): destroy(ptr) is called when the run ends
 * (also on failure). RESOURCE_EXHAUSTED (destroy(ptr) called at once). */
VG_HIDDEN vg_code vg__kctx_step_resource(vg__kctx *ctx, void *ptr, void (*destroy)(void *));

/* ---- variables ---------------------------------------------------------- */
/* A session's variable slot. Locking: vg__var_lock around any access to value. */
VG_HIDDEN void vg__var_lock(vg__var *v);
VG_HIDDEN void vg__var_unlock(vg__var *v);
/* Current value (borrowed; NULL = uninitialized). Call with the lock held. */
VG_HIDDEN vg_tensor *vg__var_value(vg__var *v);
/* Replaces the value (takes over one reference of t; the old one is released). Lock held. */
VG_HIDDEN void vg__var_set(vg__var *v, vg_tensor *t);
/* The value, made safe to modify in place (copy-on-write if anyone else holds a
 * reference). Lock held. FAILED_PRECONDITION "Attempting to use uninitialized value
 * <name>" when uninitialized; RESOURCE_EXHAUSTED. */
VG_HIDDEN vg_tensor *vg__var_mutable(vg__var *v, vg_status *st);
VG_HIDDEN const char *vg__var_name(const vg__var *v);

/* Session resources (queues and the like), created once per session by name.
 * cancel(r) is called when the session closes (wake blocked waiters with CANCELLED);
 * destroy(r) when the session is freed. */
typedef struct vg__resource_ops {
    void (*cancel)(void *r);   /* (optional) */
    void (*destroy)(void *r);
} vg__resource_ops;
VG_HIDDEN vg_code vg__session_resource(vg_session *s, const char *name, const vg__resource_ops *ops,
                                        void *(*create)(void *arg, vg_status *st), void *arg,
                                        void **out, vg_status *st);
/* True once vg_session_close started. */
VG_HIDDEN bool vg__session_closing(const vg_session *s);

/* ---- small helpers shared by the op families ----------------------------- */
/* True when a and b have the same rank and dimensions. */
static inline bool vg__same_dims(const vg_tensor *a, const vg_tensor *b) {
    int n = vg_tensor_ndims(a);
    if (n != vg_tensor_ndims(b)) return false;
    for (int i = 0; i < n; i++)
        if (vg_tensor_dim(a, i) != vg_tensor_dim(b, i)) return false;
    return true;
}

/* t's shape as vg_shape_str writes it ("[2,3]") into buf (len bytes); returns buf. */
static inline char *vg__tshape_str(const vg_tensor *t, char *buf, size_t len) {
    vg_shape s = vg_tensor_shape(t);
    return vg_shape_str(&s, buf, len);
}

/* Element i of an int32 or int64 tensor (any other dtype is read as int32). */
static inline int64_t vg__int_at(const vg_tensor *t, int64_t i) {
    return vg_tensor_dtype(t) == VG_INT64 ? ((const int64_t *)vg_tensor_data(t))[i]
                                          : ((const int32_t *)vg_tensor_data(t))[i];
}

/* Element i of t read as real-number dtype dt (float, double, int32, int64 or uint8) as
 * a double; dflt for any other dtype. */
static inline double vg__real_at(const vg_tensor *t, vg_dtype dt, int64_t i, double dflt) {
    const void *d = vg_tensor_data(t);
    switch (dt) {
    case VG_FLOAT: return ((const float *)d)[i];
    case VG_DOUBLE: return ((const double *)d)[i];
    case VG_INT32: return ((const int32_t *)d)[i];
    case VG_INT64: return (double)((const int64_t *)d)[i];
    case VG_UINT8: return ((const uint8_t *)d)[i];
    default: return dflt;
    }
}

/* Dimension i of a two-operand broadcast (walk i from the last dimension down): sets
 * od[i], the result's size, and sa[i] / sb[i], each operand's element stride there (0
 * where its size 1 is stretched), and moves the running strides *stra / *strb on. The
 * caller has checked that xa and xb are equal or that one of them is 1. */
static inline void vg__bcast2_dim(int i, int64_t xa, int64_t xb, int64_t *od, int64_t *sa, int64_t *sb, int64_t *stra,
                                  int64_t *strb) {
    od[i] = xa == 1 ? xb : xa;
    sa[i] = xa == 1 ? 0 : *stra;
    sb[i] = xb == 1 ? 0 : *strb;
    *stra *= xa;
    *strb *= xb;
}

/* Steps the odometer idx over the broadcast result's dims od[0..r) by one element and
 * the operands' element offsets *oa / *ob with it (strides sa / sb from vg__bcast2_dim). */
static inline void vg__bcast2_next(int r, const int64_t *od, const int64_t *sa, const int64_t *sb, int64_t *idx,
                                   int64_t *oa, int64_t *ob) {
    for (int d = r - 1; d >= 0; d--) {
        *oa += sa[d];
        *ob += sb[d];
        if (++idx[d] < od[d]) break;
        *oa -= sa[d] * od[d];
        *ob -= sb[d] * od[d];
        idx[d] = 0;
    }
}

/* Attribute name of op, or def when op has no such attribute (of that type). */
static inline int64_t vg__attr_int_or(const vg_op *op, const char *name, int64_t def) {
    int64_t v;
    return vg_op_attr_int(op, name, &v) ? v : def;
}
static inline bool vg__attr_bool_or(const vg_op *op, const char *name, bool def) {
    bool v;
    return vg_op_attr_bool(op, name, &v) ? v : def;
}
static inline float vg__attr_float_or(const vg_op *op, const char *name, float def) {
    float v;
    return vg_op_attr_float(op, name, &v) ? v : def;
}

/* Gives op one output of dtype dt and shape s (how most shape functions end); VG_OK. */
static inline vg_code vg__op_set_single_output(vg_op *op, vg_dtype dt, vg_shape s) {
    vg__op_set_num_outputs(op, 1);
    vg__op_set_output(op, 0, dt, s);
    return VG_OK;
}

/* Gives op two outputs: dtype dt0 shape s0, dtype dt1 shape s1; VG_OK. */
static inline vg_code vg__op_set_two_outputs(vg_op *op, vg_dtype dt0, vg_shape s0, vg_dtype dt1, vg_shape s1) {
    vg__op_set_num_outputs(op, 2);
    vg__op_set_output(op, 0, dt0, s0);
    vg__op_set_output(op, 1, dt1, s1);
    return VG_OK;
}

/* The builder of a node of type `type` named name (dflt when name is NULL) with the n
 * inputs in[0..n) added; the caller sets attributes and finishes it. */
VG_HIDDEN vg_op_builder *vg__builder_with_inputs(vg_graph *g, const char *type, const char *name, const char *dflt,
                                                 const vg_output *in, int n);
/* Output 0 of a node of type `type` named name (dflt when NULL) with inputs in[0..n)
 * and no attributes (the builders of the simple ops). */
VG_HIDDEN vg_output vg__build_simple(vg_graph *g, const char *type, const char *name, const char *dflt,
                                     const vg_output *in, int n);

/* Sets the "seed" and "seed2" attributes of a random op's builder b (NULL: nothing). */
static inline void vg__builder_set_seeds(vg_op_builder *b, int64_t seed, int64_t seed2) {
    vg_op_builder_set_attr_int(b, "seed", seed);
    vg_op_builder_set_attr_int(b, "seed2", seed2);
}

/* INVALID_ARGUMENT with message msg (its one %d: the rank) when the static shape s has a
 * known rank other than `rank`; VG_OK otherwise (shape functions). */
static inline vg_code vg__shape_need_rank(const vg_shape *s, int rank, const char *msg, vg_status *st) {
    if (s->ndims < 0 || s->ndims == rank) return VG_OK;
    return vg_status_set(st, VG_INVALID_ARGUMENT, msg, s->ndims);
}

/* Sets output 0 of the running kernel to the scalar resource handle holding pointer p
 * (the kernels that create or look up a session or step resource); the alloc's status. */
static inline vg_code vg__kctx_output_handle(vg__kctx *ctx, const void *p) {
    vg_tensor *out;
    vg_code rc = vg__kctx_alloc_output(ctx, 0, VG_RESOURCE, NULL, 0, &out);
    if (rc == VG_OK) memcpy(vg_tensor_data(out), &p, sizeof p);
    return rc;
}

/* The pointer behind the scalar resource handle at input i of the running kernel; NULL
 * with INVALID_ARGUMENT "input <i> must be a <what> handle" when input i is not one. */
static inline void *vg__kctx_handle_input(vg__kctx *ctx, int i, const char *what) {
    vg_tensor *h = vg__kctx_input(ctx, i);
    if (!h || vg_tensor_dtype(h) != VG_RESOURCE || vg_tensor_num_elements(h) != 1) {
        vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "input %d must be a %s handle", i, what);
        return NULL;
    }
    void *p;
    memcpy(&p, vg_tensor_data(h), sizeof p);
    return p;
}

/* Stores t in *slot and frees the value it held (the variables' set). */
static inline void vg__tensor_slot_set(vg_tensor **slot, vg_tensor *t) {
    vg_tensor *old = *slot;
    *slot = t;
    vg_tensor_free(old);
}

/* The non-NULL value in *slot made safe to write in place: a copy replaces it when
 * another holder shares it (copy on write); NULL with st set when the copy fails. */
static inline vg_tensor *vg__tensor_slot_unshare(vg_tensor **slot, vg_status *st) {
    if (vg__tensor_refcount(*slot) > 1) {
        vg_tensor *c = vg_tensor_copy(*slot, st);
        if (!c) return NULL;
        vg__tensor_slot_set(slot, c);
    }
    return *slot;
}

/* True when static shapes a and b are compatible: either rank unknown, or the same rank
 * with equal dimensions wherever both are known. */
static inline bool vg__shapes_compatible(const vg_shape *a, const vg_shape *b) {
    if (a->ndims < 0 || b->ndims < 0) return true;
    if (a->ndims != b->ndims) return false;
    for (int i = 0; i < a->ndims; i++)
        if (a->dims[i] >= 0 && b->dims[i] >= 0 && a->dims[i] != b->dims[i]) return false;
    return true;
}

/* Reads the one value of an int32 or int64 tensor t into *v: t must be a scalar (rank 0),
 * or when any_rank of any shape with one element; false (v untouched) otherwise or when
 * t is NULL. */
static inline bool vg__int_scalar(const vg_tensor *t, bool any_rank, int64_t *v) {
    if (!t || vg_tensor_num_elements(t) != 1 || (!any_rank && vg_tensor_ndims(t) != 0)) return false;
    if (vg_tensor_dtype(t) == VG_INT32) *v = *(const int32_t *)vg_tensor_data(t);
    else if (vg_tensor_dtype(t) == VG_INT64) *v = *(const int64_t *)vg_tensor_data(t);
    else return false;
    return true;
}

/* Sets the defaults (0) of a random op's "seed" and "seed2" attributes (shape functions). */
static inline void vg__op_default_seeds(vg_op *op) {
    vg__op_set_default_attr_int(op, "seed", 0);
    vg__op_set_default_attr_int(op, "seed2", 0);
}

/* Reads the int32 or int64 vector s (a shape) into dims[0..*nd); false when s is not a
 * vector of at most VG_MAX_DIMS values. */
static inline bool vg__read_shape_vec(const vg_tensor *s, int64_t *dims, int *nd) {
    if (vg_tensor_ndims(s) != 1 || vg_tensor_dim(s, 0) > VG_MAX_DIMS) return false;
    *nd = (int)vg_tensor_dim(s, 0);
    for (int i = 0; i < *nd; i++) dims[i] = vg__int_at(s, i);
    return true;
}

/* True when static shapes a and b are compatible (vg__shapes_compatible); otherwise sets
 * g's error to INVALID_ARGUMENT with message fmt (its two %s: a's shape, b's shape) and
 * returns false (the builders that must not broadcast). */
static inline bool vg__graph_need_compatible(vg_graph *g, const vg_shape *a, const vg_shape *b, const char *fmt) {
    if (vg__shapes_compatible(a, b)) return true;
    char sa[128], sb[128];
    vg_graph_set_error(g, VG_INVALID_ARGUMENT, fmt, vg_shape_str(a, sa, sizeof sa), vg_shape_str(b, sb, sizeof sb));
    return false;
}

/* Sets st to INVALID_ARGUMENT with message fmt, whose three %s are what, a's shape and
 * b's shape (static shapes); returns the code. */
static inline vg_code vg__status_two_shapes(vg_status *st, const char *fmt, const char *what, const vg_shape *a,
                                            const vg_shape *b) {
    char sa[128], sb[128];
    return vg_status_set(st, VG_INVALID_ARGUMENT, fmt, what, vg_shape_str(a, sa, sizeof sa),
                         vg_shape_str(b, sb, sizeof sb));
}

/* cur += val (add) or cur -= val elementwise, in place (AssignAdd / AssignSub of ref and
 * resource variables): same element count, dtype float, double, int32 or int64; false
 * (nothing written) for another dtype. */
VG_HIDDEN bool vg__tensor_add_sub_inplace(vg_tensor *cur, const vg_tensor *val, bool add);

/* Sets output 0 of the running kernel to a scalar of dtype dt (VG_INT32 or VG_INT64)
 * holding v (the Size / counter kernels); the alloc's status. */
static inline vg_code vg__kctx_output_int_scalar(vg__kctx *ctx, vg_dtype dt, int64_t v) {
    vg_tensor *o;
    vg_code rc = vg__kctx_alloc_output(ctx, 0, dt, NULL, 0, &o);
    if (rc != VG_OK) return rc;
    if (dt == VG_INT32) *(int32_t *)vg_tensor_data(o) = (int32_t)v;
    else *(int64_t *)vg_tensor_data(o) = v;
    return VG_OK;
}

/* INVALID_ARGUMENT "<op type>: input 0 must be a <what> handle (resource), got <dtype>"
 * when op's input 0 is not a resource; VG_OK otherwise (shape functions). */
static inline vg_code vg__op_need_handle(vg_op *op, const char *what, vg_status *st) {
    vg_dtype d = vg__op_input_dtype(op, 0);
    if (d == VG_RESOURCE) return VG_OK;
    return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input 0 must be a %s handle (resource), got %s", vg_op_type(op),
                         what, vg_dtype_name(d));
}

/* The shape function of an op that reads one scalar of dtype dt off the resource behind
 * its input 0 (the Size ops): vg__op_need_handle, then that scalar output. */
static inline vg_code vg__shape_handle_scalar(vg_op *op, const char *what, vg_dtype dt, vg_status *st) {
    vg_code rc = vg__op_need_handle(op, what, st);
    if (rc != VG_OK) return rc;
    return vg__op_set_single_output(op, dt, vg_shape_make(NULL, 0));
}

/* Gives op no outputs (the ops run for their effects; how their shape functions end); VG_OK. */
static inline vg_code vg__op_set_no_outputs(vg_op *op) {
    vg__op_set_num_outputs(op, 0);
    return VG_OK;
}

/* The end of a shape function whose checks returned rc: rc when not VG_OK, else one
 * scalar output of dtype dt. */
static inline vg_code vg__shape_scalar_after(vg_op *op, vg_code rc, vg_dtype dt) {
    return rc != VG_OK ? rc : vg__op_set_single_output(op, dt, vg_shape_make(NULL, 0));
}

/* The end of a shape function whose checks returned rc: rc when not VG_OK, else no outputs. */
static inline vg_code vg__shape_none_after(vg_op *op, vg_code rc) {
    return rc != VG_OK ? rc : vg__op_set_no_outputs(op);
}

/* The session-resource key of op into buf: prefix + its "shared_name" attribute (at most
 * max bytes of it) when that is set and not empty, else prefix + the op's name. The
 * shared name into *shared / *slen (*slen 0 when none); true when shared. */
static inline bool vg__op_resource_key(const vg_op *op, const char *prefix, int max, char *buf, size_t len,
                                       const char **shared, size_t *slen) {
    *shared = "";
    *slen = 0;
    if (vg_op_attr_string(op, "shared_name", shared, slen) && *slen > 0) {
        snprintf(buf, len, "%s%.*s", prefix, (int)(*slen < (size_t)max ? *slen : (size_t)max), *shared);
        return true;
    }
    *slen = 0;
    snprintf(buf, len, "%s%s", prefix, vg_op_name(op));
    return false;
}

/* Sets op's "T" attribute to dt (a default) and gives it one output of dtype dt and
 * shape s (how the shape functions of the ops typed by "T" end); VG_OK. */
static inline vg_code vg__op_set_t_output(vg_op *op, vg_dtype dt, vg_shape s) {
    vg__op_set_default_attr_type(op, "T", dt);
    return vg__op_set_single_output(op, dt, s);
}

/* Reverses the byte order of each es-byte element of p[0..len) in place (decoding
 * raw bytes of the other endianness). */
static inline void vg__swap_elem_bytes(uint8_t *p, size_t len, size_t es) {
    for (size_t k = 0; es > 1 && k < len; k += es)
        for (size_t a = 0, b = es - 1; a < b; a++, b--) {
            uint8_t t = p[k + a];
            p[k + a] = p[k + b];
            p[k + b] = t;
        }
}

/* Row i of t along dimension 0 (shape dims[1:]) as a new tensor (a copy; strings copied
 * one by one); NULL with st set on failure. */
VG_HIDDEN vg_tensor *vg__tensor_row(const vg_tensor *t, int64_t i, vg_status *st);

/* n zeroed bytes (vg__calloc); NULL with st set to RESOURCE_EXHAUSTED ("out of memory
 * allocating <what>") when that fails (the resources' create functions). */
static inline void *vg__calloc_or_oom(size_t n, const char *what, vg_status *st) {
    void *p = vg__calloc(1, n);
    if (!p) VG_OOM(st, what);
    return p;
}

/* True when dt is one of set[0..n) (an op's list of allowed dtypes). */
static inline bool vg__dtype_in(vg_dtype dt, const vg_dtype *set, int n) {
    for (int i = 0; i < n; i++)
        if (set[i] == dt) return true;
    return false;
}

/* INVALID_ARGUMENT "<op type> expects <want> inputs, got <n>" when op has not exactly
 * want inputs (ops with input lists); VG_OK otherwise. */
static inline vg_code vg__op_need_inputs(vg_op *op, int want, vg_status *st) {
    int n = vg_op_num_inputs(op);
    if (n == want) return VG_OK;
    return vg_status_set(st, VG_INVALID_ARGUMENT, "%s expects %d inputs, got %d", vg_op_type(op), want, n);
}

/* The session resource (vg__session_resource) of the running kernel's op under the key
 * vg__op_resource_key(op, prefix, max), made by create(op) when new, into *out; the
 * shared name into *shared / *slen (*slen 0: not shared). */
static inline vg_code vg__kctx_op_resource(vg__kctx *ctx, const char *prefix, int max, const vg__resource_ops *ops,
                                           void *(*create)(void *arg, vg_status *st), void **out, const char **shared,
                                           size_t *slen) {
    const vg_op *op = vg__kctx_op(ctx);
    char key[1100];
    vg__op_resource_key(op, prefix, max, key, sizeof key, shared, slen);
    *out = NULL;
    return vg__session_resource(vg__kctx_session(ctx), key, ops, create, (void *)op, out, vg__kctx_status(ctx));
}

/* s as TF 1.15's Python TensorShape prints it in error messages: "()", "(3,)",
 * "(?, 2)", "<unknown>" for an unknown rank. Writes at most n bytes into buf; returns buf. */
VG_HIDDEN char *vg__py_shape_str(const vg_shape *s, char *buf, size_t n);

#endif
