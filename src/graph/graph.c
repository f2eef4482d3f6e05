/*
 * graph.c - graphs, ops, attrs, name scopes, control-dependency scopes, collections
 * and the generic op builder. Shape inference runs in vg_op_builder_finish through
 * the op def's shape function.
 */
#include <limits.h>
#include "graph_impl.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------------------ */
/* attrs */

static void attr_clear(vg__attr *a) {
    vg__free(a->name);
    switch (a->type) {
    case VG_ATTR_STRING: vg__free(a->u.s.p); break;
    case VG_ATTR_TENSOR: vg_tensor_free(a->u.tensor); break;
    case VG_ATTR_STRING_LIST:
        for (int i = 0; a->u.list.p && i < a->u.list.n; i++) vg__free(((char **)a->u.list.p)[i]);
        vg__free(a->u.list.p);
        break;
    case VG_ATTR_INT_LIST: case VG_ATTR_FLOAT_LIST: case VG_ATTR_TYPE_LIST: case VG_ATTR_SHAPE_LIST:
        vg__free(a->u.list.p);
        break;
    default: break;
    }
    memset(a, 0, sizeof *a);
}

/* Deep copy of src into dst (name included). Returns false on OOM (dst cleared). */
static bool attr_copy(vg__attr *dst, const vg__attr *src) {
    memset(dst, 0, sizeof *dst);
    dst->type = src->type;
    dst->u = src->u;
    dst->name = vg__strdup(src->name);
    if (!dst->name) return false;
    size_t esz = 0;
    switch (src->type) {
    case VG_ATTR_STRING:
        dst->u.s.p = vg__strndup(src->u.s.p ? src->u.s.p : "", src->u.s.n);
        if (!dst->u.s.p) goto oom;
        return true;
    case VG_ATTR_TENSOR: vg_tensor_ref(src->u.tensor); return true;
    case VG_ATTR_INT_LIST: esz = sizeof(int64_t); break;
    case VG_ATTR_FLOAT_LIST: esz = sizeof(float); break;
    case VG_ATTR_TYPE_LIST: esz = sizeof(vg_dtype); break;
    case VG_ATTR_SHAPE_LIST: esz = sizeof(vg_shape); break;
    case VG_ATTR_STRING_LIST: {
        char **l = vg__calloc((size_t)(src->u.list.n ? src->u.list.n : 1), sizeof(char *));
        dst->u.list.p = l;
        if (!l) goto oom;
        for (int i = 0; i < src->u.list.n; i++)
            if (!(l[i] = vg__strdup(((char **)src->u.list.p)[i]))) goto oom;
        return true;
    }
    default: return true;
    }
    dst->u.list.p = vg__malloc(esz * (size_t)(src->u.list.n ? src->u.list.n : 1));
    if (!dst->u.list.p) {
        dst->u.list.n = 0;
        goto oom;
    }
    if (src->u.list.n) memcpy(dst->u.list.p, src->u.list.p, esz * (size_t)src->u.list.n);
    return true;
oom:
    attr_clear(dst);
    return false;
}

vg__attr *vg__op_find_attr(const vg_op *op, const char *name) {
    for (int i = 0; i < op->nattrs; i++)
        if (strcmp(op->attrs[i].name, name) == 0) return &op->attrs[i];
    return NULL;
}

static bool attrs_put(vg__attr **attrs, int *n, int *cap, const vg__attr *a) {
    vg__attr c;
    if (!attr_copy(&c, a)) return false;
    for (int i = 0; i < *n; i++) {
        if (strcmp((*attrs)[i].name, a->name) == 0) {
            attr_clear(&(*attrs)[i]);
            (*attrs)[i] = c;
            return true;
        }
    }
    if (!vg__grow((void **)attrs, cap, *n + 1, sizeof(vg__attr))) { attr_clear(&c); return false; }
    (*attrs)[(*n)++] = c;
    return true;
}

bool vg__op_put_attr(vg_op *op, const vg__attr *a) { return attrs_put(&op->attrs, &op->nattrs, &op->attr_cap, a); }

/* ------------------------------------------------------------------------ */
/* graph */

/* Pushed in place of a scope that could not be allocated, so that push/pop stay
 * balanced (the graph's sticky error is set). */
static char g_scope_oom[] = "";
/* The deps-stack entry that marks an init scope (vg_graph_push_init_scope). */
static vg_op *g_init_barrier[1];

vg_graph *vg_graph_new(void) {
    vg_graph *g = vg__calloc(1, sizeof *g);
    if (!g) return NULL;
    vg__strmap_init(&g->by_name);
    vg__strmap_init(&g->names_in_use);
    vg_status_clear(&g->err);
    return g;
}

static void op_free(vg_op *op) {
    if (!op) return;
    vg__free(op->name);
    vg__free(op->inputs);
    vg__free(op->control);
    vg__free(op->out_dtypes);
    vg__free(op->out_shapes);
    for (int i = 0; i < op->nattrs; i++) attr_clear(&op->attrs[i]);
    vg__free(op->attrs);
    vg__free(op->device);
    vg__free(op);
}

void vg_graph_free(vg_graph *g) {
    if (!g) return;
    for (int i = 0; i < g->nops; i++) op_free(g->ops[i]);
    vg__free(g->ops);
    vg__strmap_free(&g->by_name);
    vg__strmap_free(&g->names_in_use);
    for (int i = 0; i < g->nscopes; i++)
        if (g->scopes[i] != g_scope_oom) vg__free(g->scopes[i]);
    vg__free(g->scopes);
    for (int i = 0; i < g->ndevices; i++) vg__free(g->devices[i]);
    vg__free(g->devices);
    for (int i = 0; i < g->ndeps; i++)
        if (g->deps[i] != g_init_barrier) vg__free(g->deps[i]);
    vg__free(g->deps);
    for (int i = 0; i < g->ncolls; i++) {
        vg__free(g->colls[i].key);
        vg__free(g->colls[i].items);
    }
    vg__free(g->colls);
    for (int i = 0; i < g->nudata; i++) {
        if (g->udata[i].destroy) g->udata[i].destroy(g->udata[i].ptr);
        vg__free(g->udata[i].key);
    }
    vg__free(g->udata);
    for (int i = 0; i < g->nqrs; i++) vg__free((void *)g->qrs[i].enqueue_ops);
    vg__free(g->qrs);
    vg__free(g);
}

vg_code vg_graph_status(const vg_graph *g, vg_status *st) {
    if (!g) return vg_status_set(st, VG_INVALID_ARGUMENT, "graph is NULL");
    vg_status_copy(st, &g->err);
    return g->err.code;
}

vg_code vg_graph_set_error(vg_graph *g, vg_code code, const char *fmt, ...) {
    if (!g || g->err.code != VG_OK) return code;
    va_list ap;
    va_start(ap, fmt);
    vg_status_setv(&g->err, code, fmt, ap);
    va_end(ap);
    return code;
}

void vg_graph_finalize(vg_graph *g) { g->finalized = true; }
void vg_graph_unfinalize(vg_graph *g) { g->finalized = false; }
bool vg_graph_finalized(const vg_graph *g) { return g->finalized; }
int vg_graph_num_ops(const vg_graph *g) { return g->nops; }
vg_op *vg_graph_op(const vg_graph *g, int i) { return (i >= 0 && i < g->nops) ? g->ops[i] : NULL; }
vg_op *vg_graph_op_by_name(const vg_graph *g, const char *name) {
    return name ? vg__strmap_get(&g->by_name, name, NULL) : NULL;
}

vg_output vg_graph_output_by_name(const vg_graph *g, const char *name, vg_status *st) {
    vg_output none = {NULL, 0};
    char buf[1024];
    const char *colon = strrchr(name, ':');
    int idx = 0;
    if (colon) {
        size_t n = (size_t)(colon - name);
        if (n >= sizeof buf) { vg_status_set(st, VG_INVALID_ARGUMENT, "name too long"); return none; }
        memcpy(buf, name, n);
        buf[n] = 0;
        /* decimal digits only, range-checked (no sign, no spaces, no overflow into int) */
        const char *d = colon + 1;
        long long v = 0;
        if (!*d) v = -1;
        for (; *d && v >= 0; d++) {
            if (*d < '0' || *d > '9' || v > (INT_MAX - (*d - '0')) / 10) v = -1;
            else v = v * 10 + (*d - '0');
        }
        if (v < 0) {
            vg_status_set(st, VG_INVALID_ARGUMENT, "invalid tensor name '%s': the output index must be a decimal "
                          "number in [0, %d]", name, INT_MAX);
            return none;
        }
        idx = (int)v;
    } else {
        snprintf(buf, sizeof buf, "%s", name);
    }
    vg_op *op = vg_graph_op_by_name(g, buf);
    if (!op) {
        vg_status_set(st, VG_NOT_FOUND, "The name '%s' refers to an op that does not exist in the graph", name);
        return none;
    }
    if (idx >= op->noutputs) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "The name '%s' refers to output %d of op '%s', which has %d outputs",
                      name, idx, buf, op->noutputs);
        return none;
    }
    return (vg_output){op, idx};
}

void vg_graph_set_seed(vg_graph *g, int64_t seed) { g->seed = seed; }
int64_t vg_graph_seed(const vg_graph *g) { return g->seed; }

/* TF's random_seed.get_seed: graph seed and op seed -> (seed, seed2). */
void vg_graph_get_seed(vg_graph *g, int64_t op_seed, int64_t *seed, int64_t *seed2) {
    int64_t s1_tmp, s2_tmp;
    if (!seed) seed = &s1_tmp; /* both out-parameters optional */
    if (!seed2) seed2 = &s2_tmp;
    if (!g) {
        *seed = *seed2 = 0;
        return;
    }
    if (g->seed) {
        *seed = g->seed;
        *seed2 = op_seed ? op_seed : g->last_id;
    } else if (op_seed) {
        *seed = 87654321; /* DEFAULT_GRAPH_SEED */
        *seed2 = op_seed;
    } else {
        *seed = 0;
        *seed2 = 0;
    }
    if (*seed == 0 && *seed2 == 0 && (g->seed || op_seed)) *seed2 = 0x7fffffff; /* TF avoids (0,0) */
}

/* ------------------------------------------------------------------------ */
/* names */

static void lower_copy(char *dst, const char *src, size_t n) {
    size_t i = 0;
    for (; src[i] && i + 1 < n; i++) dst[i] = (char)tolower((unsigned char)src[i]);
    dst[i] = 0;
}

/* TF's Graph.unique_name(name, mark_as_used). */
static bool unique_name(vg_graph *g, const char *base, bool mark, char *out, size_t len) {
    char full[1024], key[1024];
    const char *scope = vg_graph_scope(g);
    if (*scope) snprintf(full, sizeof full, "%s/%s", scope, base);
    else snprintf(full, sizeof full, "%s", base);
    lower_copy(key, full, sizeof key);
    intptr_t i = (intptr_t)vg__strmap_get(&g->names_in_use, key, NULL);
    if (mark && !vg__strmap_put(&g->names_in_use, key, (void *)(i + 1))) return false;
    if (i > 0) {
        char cand[1040];
        for (;;) {
            snprintf(cand, sizeof cand, "%s_%d", key, (int)i);
            bool found;
            vg__strmap_get(&g->names_in_use, cand, &found);
            i++;
            if (!found) break;
        }
        if (mark && !vg__strmap_put(&g->names_in_use, cand, (void *)(intptr_t)1)) return false;
        snprintf(out, len, "%s_%d", full, (int)(i - 1));
    } else {
        snprintf(out, len, "%s", full);
    }
    return true;
}

char *vg_graph_unique_name(vg_graph *g, const char *name, char *buf, size_t len) {
    unique_name(g, name, false, buf, len);
    return buf;
}

const char *vg_graph_push_scope(vg_graph *g, const char *name) {
    char full[1024];
    size_t n = strlen(name);
    if (n && name[n - 1] == '/') {
        snprintf(full, sizeof full, "%.*s", (int)(n - 1), name);
    } else if (!unique_name(g, name, true, full, sizeof full)) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in name scope");
        full[0] = 0;
    }
    char *s = vg__strdup(full);
    if (!s) vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in name scope");
    if (!vg__grow((void **)&g->scopes, &g->scopes_cap, g->nscopes + 1, sizeof(char *))) {
        /* cannot even record the push: count it so pop stays balanced */
        vg__free(s);
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in name scope");
        g->lost_scopes++;
        return "";
    }
    g->scopes[g->nscopes++] = s ? s : g_scope_oom;
    return g->scopes[g->nscopes - 1];
}

void vg_graph_pop_scope(vg_graph *g) {
    if (g->lost_scopes > 0) {
        g->lost_scopes--;
        return;
    }
    if (g->nscopes > 0) {
        char *s = g->scopes[--g->nscopes];
        if (s != g_scope_oom) vg__free(s);
    }
}

const char *vg_graph_scope(const vg_graph *g) { return g->nscopes ? g->scopes[g->nscopes - 1] : ""; }

void vg_graph_push_control_deps(vg_graph *g, vg_op *const *ops, int n) {
    vg_op **arr = vg__calloc((size_t)n + 1, sizeof(vg_op *));
    if (!arr || !vg__grow((void **)&g->deps, &g->deps_cap, g->ndeps + 1, sizeof(vg_op **))) {
        vg__free(arr);
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in control dependencies");
        arr = NULL;
    } else {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (ops[i]) arr[k++] = ops[i];
    }
    if (arr) g->deps[g->ndeps++] = arr;
    else if (vg__grow((void **)&g->deps, &g->deps_cap, g->ndeps + 1, sizeof(vg_op **)))
        g->deps[g->ndeps++] = NULL;
}

void vg_graph_pop_control_deps(vg_graph *g) {
    /* never across an init scope: its entries belong to the code outside */
    if (g->ndeps > 0 && g->deps[g->ndeps - 1] != g_init_barrier) vg__free(g->deps[--g->ndeps]);
}

void vg_graph_push_init_scope(vg_graph *g) {
    if (!vg__grow((void **)&g->deps, &g->deps_cap, g->ndeps + 1, sizeof(vg_op **))) {
        g->lost_init_scopes++;
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory entering init scope");
        return;
    }
    g->deps[g->ndeps++] = g_init_barrier;
}

void vg_graph_pop_init_scope(vg_graph *g) {
    if (g->lost_init_scopes > 0) {
        g->lost_init_scopes--;
        return;
    }
    int top = g->ndeps - 1;
    while (top >= 0 && g->deps[top] != g_init_barrier) top--;
    if (top < 0) return; /* no init scope open */
    /* control dependencies pushed inside and not popped are dropped with the scope */
    while (g->ndeps > top + 1) vg__free(g->deps[--g->ndeps]);
    g->ndeps = top;
}

/* ------------------------------------------------------------------------ */
/* collections */

static vg__collection *find_coll(const vg_graph *g, const char *key) {
    for (int i = 0; i < g->ncolls; i++)
        if (strcmp(g->colls[i].key, key) == 0) return &g->colls[i];
    return NULL;
}

vg_code vg_graph_add_to_collection(vg_graph *g, const char *key, vg_output item) {
    if (g->finalized)
        return vg_graph_set_error(g, VG_FAILED_PRECONDITION, "Graph is finalized and cannot be modified.");
    if (!item.op) return g->err.code ? g->err.code : VG_INVALID_ARGUMENT;
    vg__collection *c = find_coll(g, key);
    if (!c) {
        char *k = vg__strdup(key);
        if (!k || !vg__grow((void **)&g->colls, &g->colls_cap, g->ncolls + 1, sizeof *g->colls)) {
            vg__free(k);
            return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in collection %s", key);
        }
        c = &g->colls[g->ncolls++];
        memset(c, 0, sizeof *c);
        c->key = k;
    }
    if (!vg__grow((void **)&c->items, &c->cap, c->n + 1, sizeof(vg_output)))
        return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in collection %s", key);
    c->items[c->n++] = item;
    return VG_OK;
}

const vg_output *vg_graph_collection(const vg_graph *g, const char *key, int *n) {
    vg__collection *c = g && key ? find_coll(g, key) : NULL;
    if (n) *n = c ? c->n : 0;
    return c && c->n ? c->items : NULL;
}

bool vg_graph_collection_has_op(const vg_graph *g, const char *key, const vg_op *op) {
    vg__collection *c = g && key && op ? find_coll(g, key) : NULL;
    for (int i = 0; c && i < c->n; i++)
        if (c->items[i].op == op) return true;
    return false;
}

void vg_graph_clear_collection(vg_graph *g, const char *key) {
    vg__collection *c = find_coll(g, key);
    if (c) c->n = 0;
}

int vg_graph_num_collections(const vg_graph *g) { return g->ncolls; }
const char *vg_graph_collection_name(const vg_graph *g, int i) {
    return (i >= 0 && i < g->ncolls) ? g->colls[i].key : NULL;
}

vg_code vg_graph_add_queue_runner(vg_graph *g, const vg_queue_runner_def *def) {
    if (g->finalized)
        return vg_graph_set_error(g, VG_FAILED_PRECONDITION, "Graph is finalized and cannot be modified.");
    if (!def || !def->queue || def->n_enqueue < 1)
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "queue runner needs a queue and enqueue ops");
    for (int i = 0; i < def->n_enqueue; i++)
        if (!def->enqueue_ops[i]) return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "queue runner: NULL enqueue op");
    vg_op **ops = vg__malloc(sizeof(vg_op *) * (size_t)def->n_enqueue);
    if (!ops || !vg__grow((void **)&g->qrs, &g->qrs_cap, g->nqrs + 1, sizeof *g->qrs)) {
        vg__free(ops);
        return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory adding a queue runner");
    }
    memcpy(ops, def->enqueue_ops, sizeof(vg_op *) * (size_t)def->n_enqueue);
    g->qrs[g->nqrs] = *def;
    g->qrs[g->nqrs].enqueue_ops = ops;
    g->nqrs++;
    return vg_graph_add_to_collection(g, VG_QUEUE_RUNNERS, vg_out(def->queue, 0));
}

vg_code vg_graph_set_user_data(vg_graph *g, const char *key, void *ptr, void (*destroy)(void *)) {
    for (int i = 0; i < g->nudata; i++) {
        if (strcmp(g->udata[i].key, key) != 0) continue;
        if (g->udata[i].destroy && g->udata[i].ptr != ptr) g->udata[i].destroy(g->udata[i].ptr);
        g->udata[i].ptr = ptr;
        g->udata[i].destroy = destroy;
        return VG_OK;
    }
    char *k = vg__strdup(key);
    if (!k || !vg__grow((void **)&g->udata, &g->udata_cap, g->nudata + 1, sizeof *g->udata)) {
        vg__free(k);
        return VG_RESOURCE_EXHAUSTED;
    }
    g->udata[g->nudata].key = k;
    g->udata[g->nudata].ptr = ptr;
    g->udata[g->nudata].destroy = destroy;
    g->nudata++;
    return VG_OK;
}

void *vg_graph_user_data(const vg_graph *g, const char *key) {
    for (int i = 0; i < g->nudata; i++)
        if (strcmp(g->udata[i].key, key) == 0) return g->udata[i].ptr;
    return NULL;
}

int vg_graph_num_queue_runners(const vg_graph *g) { return g->nqrs; }
const vg_queue_runner_def *vg_graph_queue_runner(const vg_graph *g, int i) {
    return (i >= 0 && i < g->nqrs) ? &g->qrs[i] : NULL;
}

/* ------------------------------------------------------------------------ */
/* op accessors */

const char *vg_op_name(const vg_op *op) { return op ? op->name : "(null)"; }
const char *vg_op_type(const vg_op *op) { return op ? op->def->type : "(null)"; }
vg_graph *vg_op_graph(const vg_op *op) { return op->graph; }
int vg_op_id(const vg_op *op) { return op->id; }
int vg_op_num_inputs(const vg_op *op) { return op ? op->ninputs : 0; }
vg_output vg_op_input(const vg_op *op, int i) {
    return (op && i >= 0 && i < op->ninputs) ? op->inputs[i] : (vg_output){NULL, 0};
}
int vg_op_num_control_inputs(const vg_op *op) { return op ? op->ncontrol : 0; }
vg_op *vg_op_control_input(const vg_op *op, int i) { return (i >= 0 && i < op->ncontrol) ? op->control[i] : NULL; }
int vg_op_num_outputs(const vg_op *op) { return op->noutputs; }
vg_dtype vg_output_dtype(vg_output o) {
    return (o.op && o.index >= 0 && o.index < o.op->noutputs) ? o.op->out_dtypes[o.index] : VG_DTYPE_INVALID;
}
vg_shape vg_output_shape(vg_output o) {
    return (o.op && o.index >= 0 && o.index < o.op->noutputs) ? o.op->out_shapes[o.index] : vg_shape_unknown();
}
const char *vg_op_device(const vg_op *op) { return op->device ? op->device : ""; }
const vg__op_def *vg__op_def_of(const vg_op *op) { return op->def; }
vg_output vg_out(vg_op *op, int i) { return (vg_output){op, op ? i : 0}; }

static bool add_control(vg_op *op, vg_op *dep) {
    for (int i = 0; i < op->ncontrol; i++)
        if (op->control[i] == dep) return true;
    if (!vg__grow((void **)&op->control, &op->control_cap, op->ncontrol + 1, sizeof(vg_op *))) return false;
    op->control[op->ncontrol++] = dep;
    return true;
}

vg_code vg_op_add_control_input(vg_op *op, vg_op *dep) {
    vg_graph *g = op->graph;
    if (g->finalized)
        return vg_graph_set_error(g, VG_FAILED_PRECONDITION, "Graph is finalized and cannot be modified.");
    if (!dep || dep->graph != g)
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "control input of '%s' is not from its graph", op->name);
    if (!add_control(op, dep)) return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory");
    return VG_OK;
}

int vg_op_num_attrs(const vg_op *op) { return op->nattrs; }
const char *vg_op_attr_name(const vg_op *op, int i) { return (i >= 0 && i < op->nattrs) ? op->attrs[i].name : NULL; }
vg_attr_type vg_op_attr_type(const vg_op *op, const char *name) {
    vg__attr *a = vg__op_find_attr(op, name);
    return a ? a->type : VG_ATTR_NONE;
}

#define ATTR_GET(fn, ty, ctype, field) \
    bool fn(const vg_op *op, const char *name, ctype *v) { \
        vg__attr *a = vg__op_find_attr(op, name); \
        if (!a || a->type != ty) return false; \
        *v = a->u.field; \
        return true; \
    }
ATTR_GET(vg_op_attr_int, VG_ATTR_INT, int64_t, i)
ATTR_GET(vg_op_attr_float, VG_ATTR_FLOAT, float, f)
ATTR_GET(vg_op_attr_bool, VG_ATTR_BOOL, bool, b)
ATTR_GET(vg_op_attr_type_, VG_ATTR_TYPE, vg_dtype, t)
ATTR_GET(vg_op_attr_shape, VG_ATTR_SHAPE, vg_shape, shape)

bool vg_op_attr_string(const vg_op *op, const char *name, const char **v, size_t *len) {
    vg__attr *a = vg__op_find_attr(op, name);
    if (!a || a->type != VG_ATTR_STRING) return false;
    *v = a->u.s.p;
    if (len) *len = a->u.s.n;
    return true;
}
bool vg_op_attr_tensor(const vg_op *op, const char *name, const vg_tensor **v) {
    vg__attr *a = vg__op_find_attr(op, name);
    if (!a || a->type != VG_ATTR_TENSOR) return false;
    if (v) *v = a->u.tensor;
    return true;
}
#define ATTR_LIST(fn, ty, ctype) \
    bool fn(const vg_op *op, const char *name, ctype **v, int *n) { \
        vg__attr *a = vg__op_find_attr(op, name); \
        if (!a || a->type != ty) return false; \
        *v = (ctype *)a->u.list.p; \
        *n = a->u.list.n; \
        return true; \
    }
ATTR_LIST(vg_op_attr_int_list, VG_ATTR_INT_LIST, const int64_t)
ATTR_LIST(vg_op_attr_float_list, VG_ATTR_FLOAT_LIST, const float)
ATTR_LIST(vg_op_attr_type_list, VG_ATTR_TYPE_LIST, const vg_dtype)
ATTR_LIST(vg_op_attr_shape_list, VG_ATTR_SHAPE_LIST, const vg_shape)
ATTR_LIST(vg_op_attr_string_list, VG_ATTR_STRING_LIST, const char *const)

/* ------------------------------------------------------------------------ */
/* shape-function helpers */

void vg__op_set_num_outputs(vg_op *op, int n) {
    vg__free(op->out_dtypes);
    vg__free(op->out_shapes);
    op->noutputs = 0;
    op->out_dtypes = vg__calloc((size_t)(n ? n : 1), sizeof(vg_dtype));
    op->out_shapes = vg__calloc((size_t)(n ? n : 1), sizeof(vg_shape));
    if (op->out_dtypes && op->out_shapes) op->noutputs = n;
    else op->oom = true;
}

void vg__op_set_output(vg_op *op, int i, vg_dtype dt, vg_shape shape) {
    if (i < 0 || i >= op->noutputs) return;
    op->out_dtypes[i] = dt;
    op->out_shapes[i] = shape;
}

/* TF's names of the AttrValue kinds. */
static const char *vg__attr_kind_name(vg_attr_type t) {
    static const char *names[] = {"none", "int", "float", "bool", "type", "shape", "string", "tensor",
                                  "list(int)", "list(float)", "list(type)", "list(shape)", "list(string)"};
    return (unsigned)t < sizeof names / sizeof *names ? names[t] : "unknown";
}

static void set_default(vg_op *op, vg__attr *a) {
    vg__attr *have = vg__op_find_attr(op, a->name);
    if (have) {
        if (have->type != a->type && !op->bad_kind_attr) {
            op->bad_kind_attr = have->name;
            op->bad_kind_want = a->type;
        }
        return;
    }
    if (!vg__op_put_attr(op, a)) op->oom = true;
}
void vg__op_set_default_attr_type(vg_op *op, const char *name, vg_dtype dt) {
    vg__attr a = {.name = (char *)name, .type = VG_ATTR_TYPE, .u.t = dt};
    set_default(op, &a);
}
void vg__op_set_default_attr_int(vg_op *op, const char *name, int64_t v) {
    vg__attr a = {.name = (char *)name, .type = VG_ATTR_INT, .u.i = v};
    set_default(op, &a);
}
void vg__op_set_default_attr_bool(vg_op *op, const char *name, bool v) {
    vg__attr a = {.name = (char *)name, .type = VG_ATTR_BOOL, .u.b = v};
    set_default(op, &a);
}
void vg__op_set_default_attr_string(vg_op *op, const char *name, const char *v) {
    vg__attr a = {.name = (char *)name, .type = VG_ATTR_STRING};
    a.u.s.p = (char *)v;
    a.u.s.n = strlen(v);
    set_default(op, &a);
}

const vg_tensor *vg__op_const_input(const vg_op *op, int i) {
    if (i < 0 || i >= op->ninputs || !op->inputs[i].op) return NULL;
    vg_op *src = op->inputs[i].op;
    if (!(src->def->flags & VG__OP_CONST)) return NULL;
    vg__attr *a = vg__op_find_attr(src, "value");
    return (a && a->type == VG_ATTR_TENSOR) ? a->u.tensor : NULL;
}
vg_dtype vg__op_input_dtype(const vg_op *op, int i) {
    return (i >= 0 && i < op->ninputs) ? vg_output_dtype(op->inputs[i]) : VG_DTYPE_INVALID;
}
vg_shape vg__op_input_shape(const vg_op *op, int i) {
    return (i >= 0 && i < op->ninputs) ? vg_output_shape(op->inputs[i]) : vg_shape_unknown();
}

/* ------------------------------------------------------------------------ */
/* builder */

struct vg_op_builder {
    vg_graph *g;
    char *type;
    char *name;
    vg_output *inputs;
    int ninputs, inputs_cap;
    vg_op **control;
    int ncontrol, control_cap;
    vg__attr *attrs;
    int nattrs, attr_cap;
    char *device;
    bool bad_input;   /* an input was a failed output */
    bool oom;
};

vg_op_builder *vg_op_builder_new(vg_graph *g, const char *type, const char *name) {
    if (!g) return NULL;
    vg_op_builder *b = vg__calloc(1, sizeof *b);
    if (!b) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory building op %s", type);
        return NULL;
    }
    b->g = g;
    b->type = vg__strdup(type ? type : "");
    b->name = name ? vg__strdup(name) : NULL;
    if (!b->type || (name && !b->name)) b->oom = true;
    return b;
}

void vg_op_builder_copy_attrs(vg_op_builder *b, const vg_op *op) {
    if (!b || !op) return;
    for (int i = 0; i < vg_op_num_attrs(op); i++) {
        const char *a = vg_op_attr_name(op, i);
        int64_t iv;
        float fv;
        bool bv;
        vg_dtype tv;
        vg_shape sv;
        const char *s;
        size_t len;
        const vg_tensor *t;
        const int64_t *il;
        const float *fl;
        const vg_dtype *tl;
        const vg_shape *shl;
        const char *const *sl;
        int n;
        switch (vg_op_attr_type(op, a)) {
        case VG_ATTR_INT: if (vg_op_attr_int(op, a, &iv)) vg_op_builder_set_attr_int(b, a, iv); break;
        case VG_ATTR_FLOAT: if (vg_op_attr_float(op, a, &fv)) vg_op_builder_set_attr_float(b, a, fv); break;
        case VG_ATTR_BOOL: if (vg_op_attr_bool(op, a, &bv)) vg_op_builder_set_attr_bool(b, a, bv); break;
        case VG_ATTR_TYPE: if (vg_op_attr_type_(op, a, &tv)) vg_op_builder_set_attr_type(b, a, tv); break;
        case VG_ATTR_SHAPE: if (vg_op_attr_shape(op, a, &sv)) vg_op_builder_set_attr_shape(b, a, sv); break;
        case VG_ATTR_STRING:
            if (vg_op_attr_string(op, a, &s, &len)) vg_op_builder_set_attr_string(b, a, s, len);
            break;
        case VG_ATTR_TENSOR:
            if (vg_op_attr_tensor(op, a, &t)) vg_op_builder_set_attr_tensor(b, a, (vg_tensor *)t);
            break;
        case VG_ATTR_INT_LIST: if (vg_op_attr_int_list(op, a, &il, &n)) vg_op_builder_set_attr_int_list(b, a, il, n); break;
        case VG_ATTR_FLOAT_LIST:
            if (vg_op_attr_float_list(op, a, &fl, &n)) vg_op_builder_set_attr_float_list(b, a, fl, n);
            break;
        case VG_ATTR_TYPE_LIST:
            if (vg_op_attr_type_list(op, a, &tl, &n)) vg_op_builder_set_attr_type_list(b, a, tl, n);
            break;
        case VG_ATTR_SHAPE_LIST:
            if (vg_op_attr_shape_list(op, a, &shl, &n)) vg_op_builder_set_attr_shape_list(b, a, shl, n);
            break;
        case VG_ATTR_STRING_LIST:
            if (vg_op_attr_string_list(op, a, &sl, &n)) vg_op_builder_set_attr_string_list(b, a, sl, n);
            break;
        default: break;
        }
    }
}

void vg_op_builder_free(vg_op_builder *b) {
    if (!b) return;
    vg__free(b->type);
    vg__free(b->name);
    vg__free(b->inputs);
    vg__free(b->control);
    for (int i = 0; i < b->nattrs; i++) attr_clear(&b->attrs[i]);
    vg__free(b->attrs);
    vg__free(b->device);
    vg__free(b);
}

void vg_op_builder_add_input(vg_op_builder *b, vg_output in) {
    if (!b) return;
    if (!in.op) b->bad_input = true;
    if (!vg__grow((void **)&b->inputs, &b->inputs_cap, b->ninputs + 1, sizeof(vg_output))) { b->oom = true; return; }
    b->inputs[b->ninputs++] = in;
}
void vg_op_builder_add_inputs(vg_op_builder *b, const vg_output *ins, int n) {
    for (int i = 0; i < n; i++) vg_op_builder_add_input(b, ins[i]);
}
void vg_op_builder_add_control_input(vg_op_builder *b, vg_op *op) {
    if (!b) return;
    if (!op) { b->bad_input = true; return; }
    for (int i = 0; i < b->ncontrol; i++)
        if (b->control[i] == op) return;
    if (!vg__grow((void **)&b->control, &b->control_cap, b->ncontrol + 1, sizeof(vg_op *))) { b->oom = true; return; }
    b->control[b->ncontrol++] = op;
}

static void put(vg_op_builder *b, vg__attr *a) {
    if (!b) return;
    if (!attrs_put(&b->attrs, &b->nattrs, &b->attr_cap, a)) b->oom = true;
}
void vg_op_builder_set_attr_int(vg_op_builder *b, const char *name, int64_t v) {
    vg__attr a = {.name = (char *)name, .type = VG_ATTR_INT, .u.i = v};
    put(b, &a);
}
void vg_op_builder_set_attr_float(vg_op_builder *b, const char *name, float v) {
    vg__attr a = {.name = (char *)name, .type = VG_ATTR_FLOAT, .u.f = v};
    put(b, &a);
}
void vg_op_builder_set_attr_bool(vg_op_builder *b, const char *name, bool v) {
    vg__attr a = {.name = (char *)name, .type = VG_ATTR_BOOL, .u.b = v};
    put(b, &a);
}
void vg_op_builder_set_attr_type(vg_op_builder *b, const char *name, vg_dtype v) {
    vg__attr a = {.name = (char *)name, .type = VG_ATTR_TYPE, .u.t = v};
    put(b, &a);
}
void vg_op_builder_set_attr_shape(vg_op_builder *b, const char *name, vg_shape v) {
    vg__attr a = {.name = (char *)name, .type = VG_ATTR_SHAPE, .u.shape = v};
    put(b, &a);
}
void vg_op_builder_set_attr_string(vg_op_builder *b, const char *name, const char *v, size_t len) {
    vg__attr a = {.name = (char *)name, .type = VG_ATTR_STRING};
    a.u.s.p = (char *)v;
    a.u.s.n = len;
    put(b, &a);
}
void vg_op_builder_set_attr_tensor(vg_op_builder *b, const char *name, vg_tensor *v) {
    if (!v) { if (b) b->bad_input = true; return; }
    vg__attr a = {.name = (char *)name, .type = VG_ATTR_TENSOR, .u.tensor = v};
    put(b, &a);
}
#define SET_LIST(fn, ty, ctype) \
    void fn(vg_op_builder *b, const char *name, const ctype *v, int n) { \
        vg__attr a = {.name = (char *)name, .type = ty}; \
        a.u.list.p = (void *)v; \
        a.u.list.n = n; \
        put(b, &a); \
    }
SET_LIST(vg_op_builder_set_attr_int_list, VG_ATTR_INT_LIST, int64_t)
SET_LIST(vg_op_builder_set_attr_float_list, VG_ATTR_FLOAT_LIST, float)
SET_LIST(vg_op_builder_set_attr_type_list, VG_ATTR_TYPE_LIST, vg_dtype)
SET_LIST(vg_op_builder_set_attr_shape_list, VG_ATTR_SHAPE_LIST, vg_shape)
SET_LIST(vg_op_builder_set_attr_string_list, VG_ATTR_STRING_LIST, char *const)

void vg_op_builder_set_device(vg_op_builder *b, const char *device) {
    if (!b) return;
    vg__free(b->device);
    b->device = vg__strdup(device);
    if (!b->device) b->oom = true;
}

static vg_op *fail(vg_op_builder *b, vg_op *op, vg_code code, const char *fmt, ...) VG_PRINTF(4, 5);
static vg_op *fail(vg_op_builder *b, vg_op *op, vg_code code, const char *fmt, ...) {
    vg_graph *g = b->g;
    if (fmt && g->err.code == VG_OK) {
        va_list ap;
        va_start(ap, fmt);
        vg_status_setv(&g->err, code, fmt, ap);
        va_end(ap);
    }
    if (op) {
        /* attrs were moved to the op; do not double free them */
        op_free(op);
    }
    vg_op_builder_free(b);
    return NULL;
}

vg_op *vg_op_builder_finish(vg_op_builder *b) {
    if (!b) return NULL;
    vg_graph *g = b->g;
    if (g->finalized)
        return fail(b, NULL, VG_FAILED_PRECONDITION, "Graph is finalized and cannot be modified.");
    if (b->oom) return fail(b, NULL, VG_RESOURCE_EXHAUSTED, "out of memory building op %s", b->type);
    if (b->bad_input) {
        if (g->err.code != VG_OK) return fail(b, NULL, VG_OK, NULL);
        return fail(b, NULL, VG_INVALID_ARGUMENT, "op %s (%s) got an invalid (NULL) input",
                    b->name ? b->name : b->type, b->type);
    }
    const vg__op_def *def = vg__registry_find(b->type);
    if (!def) return fail(b, NULL, VG_NOT_FOUND, "Op type not registered '%s'", b->type);
    for (int i = 0; i < b->ninputs; i++) {
        vg_output in = b->inputs[i];
        if (in.op->graph != g)
            return fail(b, NULL, VG_INVALID_ARGUMENT, "input %d of %s ('%s') is from a different graph", i,
                        b->type, in.op->name);
        if (in.index < 0 || in.index >= in.op->noutputs)
            return fail(b, NULL, VG_INVALID_ARGUMENT, "input %d of %s: '%s' has no output %d", i, b->type,
                        in.op->name, in.index);
    }
    for (int i = 0; i < b->ncontrol; i++)
        if (b->control[i]->graph != g)
            return fail(b, NULL, VG_INVALID_ARGUMENT, "control input of %s is from a different graph", b->type);
    if (b->ninputs < def->min_inputs || (def->max_inputs >= 0 && b->ninputs > def->max_inputs))
        return fail(b, NULL, VG_INVALID_ARGUMENT, "%s takes %d..%d inputs, got %d", b->type, def->min_inputs,
                    def->max_inputs, b->ninputs);
    for (int i = 0; i < b->ninputs && i < 32; i++) {
        if ((def->ref_inputs >> i) & 1) {
            vg_op *in0 = b->inputs[i].op, *src = in0;
            /* a ref passed on by Identity / Switch / Enter / Exit / NextIteration (TF's
             * RefIdentity, RefSwitch, RefEnter...: the executor follows the same chain,
             * exec/plan.c ref_var) is still a reference */
            for (int guard = 0; guard < 1000 && src->ninputs > 0 &&
                                !(src->def->flags & (VG__OP_VARIABLE | VG__OP_PASS_REF)) &&
                                (!strcmp(src->def->type, "Identity") || !strcmp(src->def->type, "Switch") ||
                                 !strcmp(src->def->type, "Enter") || !strcmp(src->def->type, "Exit") ||
                                 !strcmp(src->def->type, "NextIteration"));
                 guard++)
                src = src->inputs[0].op;
            if (!(src->def->flags & VG__OP_VARIABLE) && !(src->def->flags & VG__OP_PASS_REF))
                return fail(b, NULL, VG_INVALID_ARGUMENT,
                            "Input %d of %s must be a variable reference, got '%s' (%s)", i, b->type,
                            in0->name, in0->def->type);
        }
    }
    char name[1024];
    if (!unique_name(g, b->name ? b->name : b->type, true, name, sizeof name))
        return fail(b, NULL, VG_RESOURCE_EXHAUSTED, "out of memory naming op");
    vg_op *op = vg__calloc(1, sizeof *op);
    if (!op) return fail(b, NULL, VG_RESOURCE_EXHAUSTED, "out of memory creating op");
    op->graph = g;
    op->def = def;
    op->name = vg__strdup(name);
    op->inputs = b->inputs;
    op->ninputs = b->ninputs;
    b->inputs = NULL;
    op->control = b->control;
    op->ncontrol = b->ncontrol;
    op->control_cap = b->control_cap;
    b->control = NULL;
    op->attrs = b->attrs;
    op->nattrs = b->nattrs;
    op->attr_cap = b->attr_cap;
    b->attrs = NULL;
    b->nattrs = 0;
    op->device = b->device;
    b->device = NULL;
    if (!op->device && g->ndevices > 0 && g->devices[g->ndevices - 1][0]) { /* tf.device scope */
        op->device = vg__strdup(g->devices[g->ndevices - 1]);
        if (!op->device) return fail(b, op, VG_RESOURCE_EXHAUSTED, "out of memory creating op");
    }
    if (!op->name) return fail(b, op, VG_RESOURCE_EXHAUSTED, "out of memory creating op");
    int d0 = g->ndeps;
    while (d0 > 0 && g->deps[d0 - 1] != g_init_barrier) d0--; /* innermost init scope */
    op->outside_cf = d0 > 0;
    for (int d = d0; d < g->ndeps; d++)
        for (vg_op **p = g->deps[d]; p && *p; p++)
            if (!add_control(op, *p)) return fail(b, op, VG_RESOURCE_EXHAUSTED, "out of memory");
    vg_status st;
    vg_status_clear(&st);
    if (def->shape && def->shape(op, &st) != VG_OK) {
        if (st.code == VG_OK) st.code = VG_INVALID_ARGUMENT;
        if (g->err.code == VG_OK) vg_status_set(&g->err, st.code, "%s (op '%s'): %s", def->type, op->name, st.msg);
        return fail(b, op, VG_OK, NULL);
    }
    if (op->oom || (op->out_dtypes == NULL && def->shape))
        return fail(b, op, VG_RESOURCE_EXHAUSTED, "out of memory creating op %s", op->name);
    if (op->bad_kind_attr) { /* TF's ValidateNodeDef: the attr's value has the wrong kind */
        const vg__attr *a = vg__op_find_attr(op, op->bad_kind_attr);
        return fail(b, op, VG_INVALID_ARGUMENT, "%s (op '%s'): AttrValue had value with type '%s' when '%s' expected for attr '%s'",
                    def->type, op->name, vg__attr_kind_name(a ? a->type : VG_ATTR_NONE),
                    vg__attr_kind_name(op->bad_kind_want), op->bad_kind_attr);
    }
    if (!vg__grow((void **)&g->ops, &g->ops_cap, g->nops + 1, sizeof(vg_op *)) ||
        !vg__strmap_put(&g->by_name, op->name, op))
        return fail(b, op, VG_RESOURCE_EXHAUSTED, "out of memory adding op");
    op->id = g->nops;
    g->ops[g->nops++] = op;
    g->last_id++;
    vg_op_builder_free(b);
    return op;
}

/* ------------------------------------------------------------------------ */
/* a variable's parts (the fields tf.Variable holds; declared in vigil/graph.h) */

vg_code vg_variable_set_parts(vg_op *var, vg_op *initializer, vg_output snapshot, vg_status *st) {
    if (!var || (!(var->def->flags & VG__OP_VARIABLE) && strcmp(var->def->type, "VarHandleOp") != 0))
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "vg_variable_set_parts: %s is neither a VariableV2 nor a VarHandleOp op",
                             var ? var->name : "NULL");
    if ((initializer && initializer->graph != var->graph) || (snapshot.op && snapshot.op->graph != var->graph))
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "vg_variable_set_parts: initializer or snapshot of %s is from another graph", var->name);
    if (snapshot.op && (snapshot.index < 0 || snapshot.index >= snapshot.op->noutputs))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_variable_set_parts: snapshot %s:%d of %s does not exist",
                             snapshot.op->name, snapshot.index, var->name);
    var->var_initializer = initializer;
    var->var_snapshot = snapshot;
    return VG_OK;
}

vg_op *vg_variable_initializer(const vg_op *var) {
    if (!var) return NULL;
    if (var->var_initializer) return var->var_initializer;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s/Assign", var->name);
    return vg_graph_op_by_name(var->graph, buf);
}

vg_output vg_variable_snapshot(const vg_op *var) {
    vg_output none = {NULL, 0};
    if (!var) return none;
    if (var->var_snapshot.op) return var->var_snapshot;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s/read", var->name);
    return vg_out(vg_graph_op_by_name(var->graph, buf), 0);
}

/* ------------------------------------------------------------------------ */
/* tf.device scopes */

vg_code vg_graph_push_device(vg_graph *g, const char *device) {
    if (!g) return VG_INVALID_ARGUMENT;
    if (g->ndevices == g->devices_cap) {
        int nc = g->devices_cap ? g->devices_cap * 2 : 4;
        char **n = vg__realloc(g->devices, (size_t)g->devices_cap * sizeof(char *), (size_t)nc * sizeof(char *));
        if (!n) return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in device scope");
        g->devices = n;
        g->devices_cap = nc;
    }
    char *d = vg__strdup(device ? device : "");
    if (!d) return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in device scope");
    g->devices[g->ndevices++] = d;
    return VG_OK;
}

void vg_graph_pop_device(vg_graph *g) {
    if (!g || g->ndevices == 0) return;
    vg__free(g->devices[--g->ndevices]);
}

const char *vg_graph_device(const vg_graph *g) { return g && g->ndevices ? g->devices[g->ndevices - 1] : ""; }
