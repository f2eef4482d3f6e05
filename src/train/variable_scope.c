/*
 * variable_scope.c - tf.variable_scope and tf.get_variable's variable store (TF 1.15
 * variable_scope.py: VariableScope, _VarStore._get_single_variable,
 * _VariableScopeStore's scope counts, _get_unique_variable_scope), on the public API.
 *
 * The state hangs off the graph as user data: a stack of scopes (entry 0 is the root
 * scope, which exists even when nothing was pushed), the variables made by
 * get_variable (by full name) and the per-name open counts used to make default
 * names unique.
 */
#include "train_util.h"
#include "variable_internal.h"
#include "vigil/losses.h"
#include "vigil/variable_scope.h"
#include <stdio.h>

#define VS_KEY "vigil.variable_scope"
#define VS_NAME_MAX 1024

typedef struct vs_entry {
    char *name;        /* full variable scope name ("" at the root) */
    char *name_scope;  /* the name scope it opened, "conv1_1/" ("" at the root) */
    bool pushed_name_scope;
    vg_reuse reuse;
    bool has_init;
    vg_initializer init;
    vg_regularizer reg;
    vg_dtype dtype;
    vg_custom_getter_fn getter;
    void *getter_arg;
} vs_entry;

typedef struct vs_state {
    vs_entry *stack;
    int n, cap;
    char **var_names;
    vg_op **var_ops;
    int nvars, var_cap;
    char **count_names;
    int *counts;
    int ncounts, count_cap;
} vs_state;

static void entry_clear(vs_entry *e) {
    vg_free(e->name);
    vg_free(e->name_scope);
    memset(e, 0, sizeof *e);
}

static void state_free(void *p) {
    vs_state *s = p;
    if (!s) return;
    for (int i = 0; i < s->n; i++) entry_clear(&s->stack[i]);
    vg_free(s->stack);
    for (int i = 0; i < s->nvars; i++) vg_free(s->var_names[i]);
    vg_free(s->var_names);
    vg_free(s->var_ops);
    for (int i = 0; i < s->ncounts; i++) vg_free(s->count_names[i]);
    vg_free(s->count_names);
    vg_free(s->counts);
    vg_free(s);
}

static vs_state *state_peek(const vg_graph *g) { return g ? vg_graph_user_data(g, VS_KEY) : NULL; }

static vs_state *state_get(vg_graph *g) {
    vs_state *s = state_peek(g);
    if (s) return s;
    s = vg_calloc(1, sizeof *s);
    if (!s || !vg__train_grow((void **)&s->stack, &s->cap, 4, sizeof(vs_entry))) goto oom;
    s->stack[0].name = vg__train_strdup("");
    s->stack[0].name_scope = vg__train_strdup("");
    if (!s->stack[0].name || !s->stack[0].name_scope) goto oom;
    s->n = 1;
    if (vg_graph_set_user_data(g, VS_KEY, s, state_free) != VG_OK) {
        state_free(s);
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory creating the variable scope store");
        return NULL;
    }
    return s;
oom:
    if (s) {
        s->n = s->stack ? 1 : 0;
        state_free(s);
    }
    vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory creating the variable scope store");
    return NULL;
}

static int count_index(const vs_state *s, const char *name) {
    for (int i = 0; i < s->ncounts; i++)
        if (strcmp(s->count_names[i], name) == 0) return i;
    return -1;
}
static int scope_count(const vs_state *s, const char *name) {
    int i = count_index(s, name);
    return i < 0 ? 0 : s->counts[i];
}

/* _VariableScopeStore.open_variable_scope */
static bool open_count(vs_state *s, const char *name) {
    int i = count_index(s, name);
    if (i >= 0) {
        s->counts[i]++;
        return true;
    }
    int c1 = s->count_cap, c2 = s->count_cap;
    if (!vg__train_grow((void **)&s->count_names, &c1, s->ncounts + 1, sizeof(char *)) ||
        !vg__train_grow((void **)&s->counts, &c2, s->ncounts + 1, sizeof(int)))
        return false;
    s->count_cap = c1 < c2 ? c1 : c2;
    char *d = vg__train_strdup(name);
    if (!d) return false;
    s->count_names[s->ncounts] = d;
    s->counts[s->ncounts++] = 1;
    return true;
}

/* _VariableScopeStore.close_variable_subscopes: counts of the scopes below name drop
 * to 0 (re-entering "model" names its first "dense" "model/dense" again). */
static void close_subscopes(vs_state *s, const char *name) {
    size_t n = strlen(name);
    for (int i = 0; i < s->ncounts; i++)
        if (!*name || (strncmp(s->count_names[i], name, n) == 0 && s->count_names[i][n] == '/')) s->counts[i] = 0;
}

const char *vg_variable_scope_push(vg_graph *g, const char *name, const vg_variable_scope_opts *opts) {
    if (!g) return NULL;
    vg_variable_scope_opts def;
    memset(&def, 0, sizeof def);
    if (!opts) opts = &def;
    if ((!name || !*name) && (!opts->default_name || !*opts->default_name)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "variable_scope: no name and no default_name given");
        return NULL;
    }
    if ((!name || !*name) && opts->reuse == VG_REUSE_TRUE) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "reuse=True cannot be used without a name_or_scope");
        return NULL;
    }
    if (name && strchr(name, '/') && name[strlen(name) - 1] == '/') {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "variable_scope: name '%s' must not end with '/'", name);
        return NULL;
    }
    vs_state *s = state_get(g);
    if (!s) return NULL;
    const vs_entry *parent = &s->stack[s->n - 1];
    char rel[VS_NAME_MAX], full[3 * VS_NAME_MAX];
    if (name && *name) {
        snprintf(rel, sizeof rel, "%s", name);
    } else {
        /* _get_unique_variable_scope(default_name) */
        char probe[3 * VS_NAME_MAX];
        if (*parent->name) snprintf(probe, sizeof probe, "%s/%s", parent->name, opts->default_name);
        else snprintf(probe, sizeof probe, "%s", opts->default_name);
        snprintf(rel, sizeof rel, "%s", opts->default_name);
        if (scope_count(s, probe) > 0) {
            for (int idx = 1;; idx++) {
                char cand[4 * VS_NAME_MAX];
                snprintf(cand, sizeof cand, "%s_%d", probe, idx);
                if (scope_count(s, cand) == 0) {
                    snprintf(rel, sizeof rel, "%s_%d", opts->default_name, idx);
                    break;
                }
            }
        }
    }
    if (*parent->name) snprintf(full, sizeof full, "%s/%s", parent->name, rel);
    else snprintf(full, sizeof full, "%s", rel);
    if (!vg__train_grow((void **)&s->stack, &s->cap, s->n + 1, sizeof(vs_entry))) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory entering variable scope %s", full);
        return NULL;
    }
    parent = &s->stack[s->n - 1];
    vs_entry e;
    memset(&e, 0, sizeof e);
    e.name = vg__train_strdup(full);
    /* the name scope: tf.name_scope(name or default_name), made unique */
    char ns[VS_NAME_MAX * 4];
    ns[0] = 0;
    if (!opts->no_name_scope) {
        const char *got = vg_graph_push_scope(g, name && *name ? name : opts->default_name);
        if (got) {
            snprintf(ns, sizeof ns, "%s/", got);
            e.pushed_name_scope = true;
        }
    } else {
        const char *cur = vg_graph_scope(g);
        if (*cur) snprintf(ns, sizeof ns, "%s/", cur);
    }
    e.name_scope = vg__train_strdup(ns);
    if (!e.name || !e.name_scope || !open_count(s, full)) {
        if (e.pushed_name_scope) vg_graph_pop_scope(g);
        entry_clear(&e);
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory entering variable scope %s", full);
        return NULL;
    }
    if (name && *name) close_subscopes(s, full);
    /* reuse: once on, inherited (AUTO_REUSE stays AUTO unless True is asked) */
    e.reuse = parent->reuse;
    if (opts->reuse == VG_REUSE_TRUE || (opts->reuse == VG_REUSE_AUTO && e.reuse != VG_REUSE_TRUE)) e.reuse = opts->reuse;
    e.has_init = parent->has_init;
    e.init = parent->init;
    if (opts->initializer) {
        e.has_init = true;
        e.init = *opts->initializer;
    }
    e.reg = opts->regularizer.fn ? opts->regularizer : parent->reg;
    e.dtype = opts->dtype ? opts->dtype : parent->dtype;
    e.getter = opts->custom_getter;
    e.getter_arg = opts->custom_getter_arg;
    s->stack[s->n++] = e;
    return s->stack[s->n - 1].name;
}

void vg_variable_scope_pop(vg_graph *g) {
    vs_state *s = state_peek(g);
    if (!s || s->n <= 1) return;
    vs_entry *e = &s->stack[--s->n];
    if (e->pushed_name_scope) vg_graph_pop_scope(g);
    entry_clear(e);
}

const char *vg_variable_scope_name(const vg_graph *g) {
    vs_state *s = state_peek(g);
    return s ? s->stack[s->n - 1].name : "";
}

const char *vg_variable_scope_original_name_scope(const vg_graph *g) {
    vs_state *s = state_peek(g);
    return s ? s->stack[s->n - 1].name_scope : "";
}

vg_reuse vg_variable_scope_reuse(const vg_graph *g) {
    vs_state *s = state_peek(g);
    return s ? s->stack[s->n - 1].reuse : VG_REUSE_INHERIT;
}

void vg_variable_scope_reuse_variables(vg_graph *g) {
    vs_state *s = state_get(g);
    if (s) s->stack[s->n - 1].reuse = VG_REUSE_TRUE;
}

/* ------------------------------------------------------------------------ */
/* regularizers */

static vg_output reg_l2(vg_graph *g, vg_output w, double scale, void *arg) {
    (void)arg;
    return vg_l2_regularizer(g, scale, w);
}
static vg_output reg_l1(vg_graph *g, vg_output w, double scale, void *arg) {
    (void)arg;
    return vg_l1_regularizer(g, scale, w);
}
vg_regularizer vg_regularizer_l2(double scale) {
    vg_regularizer r = {reg_l2, scale, NULL};
    return r;
}
vg_regularizer vg_regularizer_l1(double scale) {
    vg_regularizer r = {reg_l1, scale, NULL};
    return r;
}

/* ------------------------------------------------------------------------ */
/* the variable store */

static int var_index(const vs_state *s, const char *name) {
    for (int i = 0; i < s->nvars; i++)
        if (strcmp(s->var_names[i], name) == 0) return i;
    return -1;
}

static vg_variable var_of(vg_op *op) {
    vg_variable v;
    memset(&v, 0, sizeof v);
    if (!op) return v;
    v.var = op;
    v.ref = vg_out(op, 0);
    v.read = vg_variable_snapshot(op);
    v.initializer = vg_variable_initializer(op);
    return v;
}

vg_variable vg_variable_scope_find(const vg_graph *g, const char *full_name) {
    vs_state *s = state_peek(g);
    int i = s && full_name ? var_index(s, full_name) : -1;
    return var_of(i < 0 ? NULL : s->var_ops[i]);
}

static vg_dtype base_dtype(vg_dtype dt) { return dt > 100 ? (vg_dtype)(dt - 100) : dt; } /* no ref dtypes in vigil; kept for imported graphs */

static char *dims_str(const int64_t *dims, int ndims, char *buf, size_t len) {
    vg_shape sh = vg_shape_make(dims, ndims);
    return vg_shape_str(&sh, buf, len);
}

/* _VarStore._get_single_variable */
static vg_variable true_getter(vg_graph *g, const vg_getter_args *a, void *ctx) {
    vs_state *s = ctx;
    vg_variable none;
    memset(&none, 0, sizeof none);
    int i = var_index(s, a->name);
    if (i >= 0) {
        vg_op *op = s->var_ops[i];
        if (a->reuse == VG_REUSE_INHERIT) {
            vg_graph_set_error(g, VG_ALREADY_EXISTS,
                               "Variable %s already exists, disallowed. Did you mean to set reuse=True or "
                               "reuse=tf.AUTO_REUSE in VarScope?",
                               a->name);
            return none;
        }
        vg_shape found = vg_output_shape(vg_out(op, 0));
        if (a->ndims >= 0) {
            bool ok = found.ndims < 0 || found.ndims == a->ndims;
            for (int d = 0; ok && found.ndims >= 0 && d < a->ndims; d++)
                ok = found.dims[d] < 0 || a->dims[d] < 0 || found.dims[d] == a->dims[d];
            if (!ok) {
                char b1[128], b2[128];
                vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                                   "Trying to share variable %s, but specified shape %s and found shape %s.", a->name,
                                   dims_str(a->dims, a->ndims, b1, sizeof b1), vg_shape_str(&found, b2, sizeof b2));
                return none;
            }
        }
        vg_dtype fdt = base_dtype(vg_output_dtype(vg_out(op, 0)));
        if (a->dt && base_dtype(a->dt) != fdt) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                               "Trying to share variable %s, but specified dtype %s and found dtype %s.", a->name,
                               vg_dtype_name(base_dtype(a->dt)), vg_dtype_name(fdt));
            return none;
        }
        return var_of(op);
    }
    if (a->reuse == VG_REUSE_TRUE) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "Variable %s does not exist, or was not created with tf.get_variable(). Did you mean "
                           "to set reuse=tf.AUTO_REUSE in VarScope?",
                           a->name);
        return none;
    }
    if (a->ndims < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Shape of a new variable (%s) must be fully defined, but instead was <unknown>.",
                           a->name);
        return none;
    }
    for (int d = 0; d < a->ndims; d++)
        if (a->dims[d] < 0) {
            char b[128];
            vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                               "Shape of a new variable (%s) must be fully defined, but instead was %s.", a->name,
                               dims_str(a->dims, a->ndims, b, sizeof b));
            return none;
        }
    vg_variable v = vg__train_create_variable(g, a->name, a->dt, a->dims, a->ndims, a->init, a->flags);
    if (!v.var) return none;
    int c1 = s->var_cap, c2 = s->var_cap;
    char *nm = vg__train_strdup(a->name);
    if (!nm || !vg__train_grow((void **)&s->var_names, &c1, s->nvars + 1, sizeof(char *)) ||
        !vg__train_grow((void **)&s->var_ops, &c2, s->nvars + 1, sizeof(vg_op *))) {
        vg_free(nm);
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory recording variable %s", a->name);
        return none;
    }
    s->var_cap = c1 < c2 ? c1 : c2;
    s->var_names[s->nvars] = nm;
    s->var_ops[s->nvars++] = v.var;
    if (a->regularizer.fn) {
        char rs[VS_NAME_MAX * 4];
        snprintf(rs, sizeof rs, "%s/Regularizer/", a->name);
        vg_graph_push_scope(g, rs);
        vg_output loss = a->regularizer.fn(g, v.read, a->regularizer.scale, a->regularizer.arg);
        vg_graph_pop_scope(g);
        if (loss.op) vg_graph_add_to_collection(g, VG_REGULARIZATION_LOSSES, loss);
        if (vg_graph_status(g, NULL) != VG_OK) return none;
    }
    return v;
}

/* The custom getters of the open scopes, outermost first, around true_getter. */
typedef struct chain_ctx {
    vs_state *s;
    int pos; /* next stack index to look at */
} chain_ctx;

static vg_variable chain_getter(vg_graph *g, const vg_getter_args *a, void *ctx) {
    chain_ctx *c = ctx;
    for (int i = c->pos; i < c->s->n; i++) {
        vs_entry *e = &c->s->stack[i];
        if (!e->getter) continue;
        chain_ctx next = {c->s, i + 1};
        vg_custom_getter_fn fn = e->getter;
        return fn(g, chain_getter, &next, a, e->getter_arg);
    }
    return true_getter(g, a, c->s);
}

vg_variable vg_get_variable_ex(vg_graph *g, const char *name, const vg_get_variable_opts *opts) {
    vg_variable none;
    memset(&none, 0, sizeof none);
    if (!g) return none;
    if (vg_graph_status(g, NULL) != VG_OK) return none;
    if (!name || !*name) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "get_variable needs a name");
        return none;
    }
    vg_get_variable_opts def;
    memset(&def, 0, sizeof def);
    if (!opts) opts = &def;
    if (opts->ndims < 0 || opts->ndims > VG_MAX_DIMS || (opts->ndims > 0 && !opts->dims)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "get_variable %s: bad shape (rank %d)", name, opts->ndims);
        return none;
    }
    vs_state *s = state_get(g);
    if (!s) return none;
    const vs_entry *top = &s->stack[s->n - 1];
    /* the prefix: the variable scope; with no variable scope open, the name scope
     * (vigil's older rule, see vigil/variable_scope.h) */
    const char *prefix = s->n > 1 ? top->name : vg_graph_scope(g);
    char full[VS_NAME_MAX];
    if (*prefix) snprintf(full, sizeof full, "%s/%s", prefix, name);
    else snprintf(full, sizeof full, "%s", name);
    vg_getter_args a;
    memset(&a, 0, sizeof a);
    a.name = full;
    a.dt = opts->dt ? opts->dt : top->dtype ? top->dtype : VG_FLOAT;
    a.dims = opts->dims;
    a.ndims = opts == &def ? -1 : opts->ndims; /* no opts: shape not specified (reuse) */
    bool is_float = a.dt == VG_FLOAT || a.dt == VG_DOUBLE || a.dt == VG_HALF;
    a.init = opts->has_init ? opts->init : top->has_init ? top->init : is_float ? vg_init_glorot_uniform(0) : vg_init_zeros();
    a.regularizer = opts->regularizer.fn ? opts->regularizer : top->reg;
    a.flags = (opts->not_trainable ? 0u : (unsigned)VG_VAR_TRAINABLE) | (opts->local ? (unsigned)VG_VAR_LOCAL : 0u);
    a.reuse = top->reuse;
    if (opts->reuse == VG_REUSE_TRUE || (opts->reuse == VG_REUSE_AUTO && a.reuse != VG_REUSE_TRUE)) a.reuse = opts->reuse;
    chain_ctx c = {s, 1};
    return chain_getter(g, &a, &c);
}

/* TF 1.15 mixed precision's float32_variable_storage_getter: trainable variables are
 * stored (and updated) in float32; a request for another dtype gets a Cast of them. */
vg_variable vg_float32_variable_storage_getter(vg_graph *g, vg_getter_fn getter, void *getter_ctx,
                                               const vg_getter_args *args, void *user) {
    (void)user;
    if (!(args->flags & VG_VAR_TRAINABLE) || args->dt == VG_FLOAT) return getter(g, args, getter_ctx);
    vg_getter_args a = *args;
    a.dt = VG_FLOAT;
    vg_variable v = getter(g, &a, getter_ctx);
    if (!v.var) return v;
    v.read = vg_cast(g, v.read, args->dt, "Cast");
    return v;
}
