/*
 * kernel.c - the kernel interface of kernel.h over the executor's data structures
 * (exec/exec.h): the kernel context, variable slots and session resources.
 */
#include "kernels/kernel.h"
#include "exec/exec.h"

/* ------------------------------------------------------------------------ */
/* kernel context */

const vg_op *vg__kctx_op(const vg__kctx *ctx) { return ctx->n->op; }
int vg__kctx_num_inputs(const vg__kctx *ctx) { return ctx->n->ninputs; }
const struct vg__ew_prog *vg__kctx_fused_prog(const vg__kctx *ctx) { return ctx->n->ew_prog; }

bool vg__kctx_amp(const vg__kctx *ctx) { return ctx->n->amp; }

vg_tensor *vg__kctx_input(const vg__kctx *ctx, int i) {
    vg__node *n = ctx->n;
    if (i < 0 || i >= n->ninputs) return NULL;
    if (n->in_slot[i] >= 0) return ctx->vals[n->in_slot[i]];
    return n->in_var[i] ? n->in_var[i]->value : NULL;
}

vg_code vg__kctx_alloc_output(vg__kctx *ctx, int i, vg_dtype dt, const int64_t *dims, int ndims, vg_tensor **out) {
    if (i < 0 || i >= ctx->n->noutputs) {
        *out = NULL;
        return vg_status_set(ctx->st, VG_INTERNAL, "output %d out of range", i);
    }
    vg_tensor *t = vg_tensor_new(dt, dims, ndims, ctx->st);
    *out = t;
    if (!t) return ctx->st->code;
    vg_tensor_free(ctx->outs[i]);
    ctx->outs[i] = t;
    return VG_OK;
}

void vg__kctx_set_output(vg__kctx *ctx, int i, vg_tensor *t) {
    if (i < 0 || i >= ctx->n->noutputs) { vg_tensor_free(t); return; }
    vg_tensor_free(ctx->outs[i]);
    ctx->outs[i] = t;
}

vg__var *vg__kctx_var(const vg__kctx *ctx, int i) {
    vg__node *n = ctx->n;
    if (i == -1) return n->var;
    return (i >= 0 && i < n->ninputs) ? n->in_var[i] : NULL;
}
vg_status *vg__kctx_status(vg__kctx *ctx) { return ctx->st; }
vg_session *vg__kctx_session(const vg__kctx *ctx) { return ctx->rs->s; }
const vg_run_options *vg__kctx_run_options(const vg__kctx *ctx) { return ctx->rs->ro; }
int64_t vg__kctx_deadline_ns(const vg__kctx *ctx) { return ctx->rs->deadline; }
int vg__kctx_num_threads(const vg__kctx *ctx) { return ctx->rs->s->intra_threads; }

#define KCTX_PIECES 4

void vg__kctx_parallel_for(vg__kctx *ctx, int64_t n, int64_t cost_per_unit, vg__range_fn fn, void *arg) {
    vg_session *s = ctx->rs->s;
    double work = (double)n * (double)(cost_per_unit > 0 ? cost_per_unit : 1);
    int parts = s->intra_threads;
    /* ~50k flops per part at least, so splitting pays for the hand-off */
    if (work < 50000.0 * 2) parts = 1;
    else if (work / parts < 50000.0) parts = (int)(work / 50000.0);
    bool split = parts > 1 && s->intra;
    /* the executor reads it: a node that already uses every thread is not handed to an
     * inter-op helper (executor.c, node_expensive) */
    if (atomic_load_explicit(&ctx->n->splits, memory_order_relaxed) != split)
        atomic_store_explicit(&ctx->n->splits, split, memory_order_relaxed);
    if (!split) {
        fn(arg, 0, n);
        return;
    }
    /* Pieces claimed as the threads go, KCTX_PIECES per thread where each still holds
     * ~50k flops: on a VM a vCPU can run slower than the other or stall for a while
     * (the host's other tenants), and with one fixed piece per thread every thread
     * waits for that one at the end of the call. */
    int64_t nchunks = parts;
    if (work / ((double)parts * KCTX_PIECES) >= 50000.0) nchunks = (int64_t)parts * KCTX_PIECES;
    vg__pool_parallel_for_n(s->intra, n, parts, nchunks, fn, arg);
}

void vg__kctx_parallel_for_slots(vg__kctx *ctx, int64_t n, int nslots, int64_t nchunks, vg__slot_range_fn fn,
                                 void *arg) {
    vg_session *s = ctx->rs->s;
    bool split = nslots > 1 && s->intra && n > 1;
    if (atomic_load_explicit(&ctx->n->splits, memory_order_relaxed) != split)
        atomic_store_explicit(&ctx->n->splits, split, memory_order_relaxed);
    if (!split) fn(arg, 0, n, 0);
    else vg__pool_parallel_for_slots(s->intra, n, nslots, nchunks, fn, arg);
}

vg_code vg__kctx_step_resource(vg__kctx *ctx, void *ptr, void (*destroy)(void *)) {
    vg__step_res *r = vg__malloc(sizeof *r);
    if (!r) {
        if (destroy) destroy(ptr);
        return VG_OOM(ctx->st, "step resource");
    }
    r->ptr = ptr;
    r->destroy = destroy;
    vg__run_state *rs = ctx->rs;
    pthread_mutex_lock(&rs->mu);
    r->next = rs->step_res;
    rs->step_res = r;
    pthread_mutex_unlock(&rs->mu);
    return VG_OK;
}

vg_code vg__kctx_state(vg__kctx *ctx, void *(*create)(const vg_op *op, vg_status *st), void (*destroy)(void *state),
                        void **out) {
    vg_session *s = ctx->rs->s;
    int id = ctx->n->op->id;
    pthread_mutex_lock(&s->mu);
    void *v = s->kstate[id];
    if (!v) {
        v = create(ctx->n->op, ctx->st);
        if (v) {
            s->kstate[id] = v;
            s->kstate_destroy[id] = destroy;
        }
    }
    pthread_mutex_unlock(&s->mu);
    *out = v;
    if (!v) return ctx->st->code ? ctx->st->code : vg_status_set(ctx->st, VG_RESOURCE_EXHAUSTED, "out of memory");
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* variables */

void vg__var_lock(vg__var *v) { pthread_mutex_lock(&v->mu); }
void vg__var_unlock(vg__var *v) { pthread_mutex_unlock(&v->mu); }
vg_tensor *vg__var_value(vg__var *v) { return v->value; }
const char *vg__var_name(const vg__var *v) { return v->op->name; }

void vg__var_set(vg__var *v, vg_tensor *t) { vg__tensor_slot_set(&v->value, t); }

vg_tensor *vg__var_mutable(vg__var *v, vg_status *st) {
    if (!v->value) {
        vg_status_set(st, VG_FAILED_PRECONDITION, "Attempting to use uninitialized value %s", v->op->name);
        return NULL;
    }
    return vg__tensor_slot_unshare(&v->value, st);
}

#define ADD_SUB_LOOP(T, OP)                                                                                     \
    do {                                                                                                        \
        T *x_ = (T *)vg_tensor_data(cur);                                                                       \
        const T *y_ = (const T *)vg_tensor_data(val);                                                           \
        for (int64_t i = 0; i < n; i++) x_[i] OP y_[i];                                                         \
    } while (0)

bool vg__tensor_add_sub_inplace(vg_tensor *cur, const vg_tensor *val, bool add) {
    int64_t n = vg_tensor_num_elements(cur);
    switch (vg_tensor_dtype(cur)) {
    case VG_FLOAT: if (add) ADD_SUB_LOOP(float, +=); else ADD_SUB_LOOP(float, -=); break;
    case VG_DOUBLE: if (add) ADD_SUB_LOOP(double, +=); else ADD_SUB_LOOP(double, -=); break;
    case VG_INT32: if (add) ADD_SUB_LOOP(int32_t, +=); else ADD_SUB_LOOP(int32_t, -=); break;
    case VG_INT64: if (add) ADD_SUB_LOOP(int64_t, +=); else ADD_SUB_LOOP(int64_t, -=); break;
    default: return false;
    }
    return true;
}
#undef ADD_SUB_LOOP

vg_tensor *vg__tensor_row(const vg_tensor *t, int64_t i, vg_status *st) {
    vg_tensor *o = vg_tensor_new(vg_tensor_dtype(t), vg_tensor_dims(t) + 1, vg_tensor_ndims(t) - 1, st);
    if (!o) return NULL;
    int64_t n = vg_tensor_num_elements(o);
    if (vg_tensor_dtype(t) == VG_STRING) {
        for (int64_t k = 0; k < n; k++) {
            size_t l;
            const char *s = vg_tensor_string(t, i * n + k, &l);
            if (vg_tensor_set_string(o, k, s, l, st) != VG_OK) {
                vg_tensor_free(o);
                return NULL;
            }
        }
    } else {
        size_t rb = (size_t)n * vg_dtype_size(vg_tensor_dtype(t));
        if (rb) memcpy(vg_tensor_data(o), (const uint8_t *)vg_tensor_data(t) + (size_t)i * rb, rb);
    }
    return o;
}

/* ------------------------------------------------------------------------ */
/* session resources */

bool vg__session_closing(const vg_session *s) { return atomic_load(&((vg_session *)s)->closing); }

vg_code vg__session_resource(vg_session *s, const char *name, const vg__resource_ops *ops,
                              void *(*create)(void *arg, vg_status *st), void *arg, void **out, vg_status *st) {
    pthread_mutex_lock(&s->mu);
    vg__resource *r = vg__strmap_get(&s->resources, name, NULL);
    if (!r) {
        r = vg__calloc(1, sizeof *r);
        if (!r) { pthread_mutex_unlock(&s->mu); return VG_OOM(st, "resource"); }
        r->cancel = ops->cancel;
        r->destroy = ops->destroy;
        r->ptr = create(arg, st);
        if (!r->ptr || !vg__strmap_put(&s->resources, name, r)) {
            if (r->ptr && ops->destroy) ops->destroy(r->ptr);
            vg__free(r);
            pthread_mutex_unlock(&s->mu);
            *out = NULL;
            return st && st->code ? st->code : VG_OOM(st, "resource");
        }
        if (atomic_load(&s->closing) && ops->cancel) ops->cancel(r->ptr);
    }
    pthread_mutex_unlock(&s->mu);
    *out = r->ptr;
    return VG_OK;
}

vg_op_builder *vg__builder_with_inputs(vg_graph *g, const char *type, const char *name, const char *dflt,
                                       const vg_output *in, int n) {
    vg_op_builder *b = vg_op_builder_new(g, type, name ? name : dflt);
    for (int i = 0; i < n; i++) vg_op_builder_add_input(b, in[i]);
    return b;
}

vg_output vg__build_simple(vg_graph *g, const char *type, const char *name, const char *dflt, const vg_output *in,
                           int n) {
    return vg_out(vg_op_builder_finish(vg__builder_with_inputs(g, type, name, dflt, in, n)), 0);
}

char *vg__py_shape_str(const vg_shape *s, char *buf, size_t n) {
    if (s->ndims < 0) {
        snprintf(buf, n, "<unknown>");
        return buf;
    }
    size_t o = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < s->ndims && o < n; i++) {
        if (s->dims[i] < 0) o += (size_t)snprintf(buf + o, n - o, "%s?", i ? ", " : "");
        else o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? ", " : "", (long long)s->dims[i]);
    }
    if (o < n) snprintf(buf + o, n - o, s->ndims == 1 ? ",)" : ")");
    return buf;
}
