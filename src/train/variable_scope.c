/*
 * variable_scope.c - tf.variable_scope and tf.get_variable's variable store (TF 1.15
 * variable_scope.py: VariableScope, variable_scope / _pure_variable_scope,
 * _VariableStore._get_single_variable, _VariableScopeStore's scope counts,
 * _get_unique_variable_scope, _maybe_wrap_custom_getter), on the public API.
 *
 * The state hangs off the graph as user data: the scope objects (TF's VariableScope,
 * owned by the store until the graph is freed, so that a captured object stays valid),
 * the stack of open scopes (entry 0 is the root scope, which exists even when nothing
 * was pushed), the variables made by get_variable (by full name) and the per-name open
 * counts used to make default names unique.
 */
#include "train_util.h"
#include "variable_internal.h"
#include "vigil/losses.h"
#include "vigil/variable_scope.h"
#include <stdatomic.h>
#include <stdio.h>

#define VS_KEY "vigil.variable_scope"
#define VS_NAME_MAX 1024

typedef struct getter_entry {
    vg_custom_getter_fn fn;
    void *arg;
} getter_entry;

/* TF's VariableScope. */
struct vg_vscope {
    char *name;       /* full variable scope name ("" at the root) */
    char *name_scope; /* original_name_scope: the name scope it opened, "conv1_1/" */
    vg_reuse reuse;
    bool has_init;
    vg_initializer init;
    vg_regularizer reg;
    vg_dtype dtype;
    getter_entry *getters; /* the custom getter: getters[n-1] runs first, calling [n-2] ... */
    int ngetters;
};

typedef enum entry_kind { ENTRY_ROOT, ENTRY_STRING, ENTRY_OBJECT } entry_kind;

typedef struct vs_entry {
    vg_vscope *scope;
    entry_kind kind;
    bool pushed_name_scope;
    int saved_ncounts; /* ENTRY_OBJECT: the counts to restore on exit */
    int *saved_counts;
} vs_entry;

typedef struct vs_state {
    uint64_t serial; /* unique per store: tells a new graph at a freed one's address apart */
    vg_vscope **objs;
    int nobjs, obj_cap;
    vs_entry *stack;
    int n, cap;
    char **var_names;
    vg_op **var_ops;
    int nvars, var_cap;
    char **count_names;
    int *counts;
    int ncounts, count_cap;
} vs_state;

static void obj_free(vg_vscope *o) {
    if (!o) return;
    vg_free(o->name);
    vg_free(o->name_scope);
    vg_free(o->getters);
    vg_free(o);
}

static void state_free(void *p) {
    vs_state *s = p;
    if (!s) return;
    for (int i = 0; i < s->nobjs; i++) obj_free(s->objs[i]);
    vg_free(s->objs);
    for (int i = 0; i < s->n; i++) vg_free(s->stack[i].saved_counts);
    vg_free(s->stack);
    for (int i = 0; i < s->nvars; i++) vg_free(s->var_names[i]);
    vg_free(s->var_names);
    vg_free(s->var_ops);
    for (int i = 0; i < s->ncounts; i++) vg_free(s->count_names[i]);
    vg_free(s->count_names);
    vg_free(s->counts);
    vg_free(s);
}

/* A new scope object owned by the store (NULL when out of memory). */
static vg_vscope *obj_new(vs_state *s, const char *name, const char *name_scope) {
    if (!vg__train_grow((void **)&s->objs, &s->obj_cap, s->nobjs + 1, sizeof(vg_vscope *))) return NULL;
    vg_vscope *o = vg_calloc(1, sizeof *o);
    if (!o) return NULL;
    o->name = vg__train_strdup(name);
    o->name_scope = vg__train_strdup(name_scope);
    if (!o->name || !o->name_scope) {
        obj_free(o);
        return NULL;
    }
    s->objs[s->nobjs++] = o;
    return o;
}

/* Copies from's getter chain into o, plus (fn, arg) as the new innermost one
 * (_maybe_wrap_custom_getter). */
static bool copy_getters(vg_vscope *o, const vg_vscope *from, vg_custom_getter_fn fn, void *arg) {
    int n = (from ? from->ngetters : 0) + (fn ? 1 : 0);
    vg_free(o->getters);
    o->getters = NULL;
    o->ngetters = 0;
    if (n == 0) return true;
    o->getters = vg_calloc((size_t)n, sizeof(getter_entry));
    if (!o->getters) return false;
    if (from && from->ngetters) memcpy(o->getters, from->getters, sizeof(getter_entry) * (size_t)from->ngetters);
    if (fn) o->getters[n - 1] = (getter_entry){fn, arg};
    o->ngetters = n;
    return true;
}

static vs_state *state_peek(const vg_graph *g) { return g ? vg_graph_user_data(g, VS_KEY) : NULL; }

static vs_state *state_get(vg_graph *g) {
    vs_state *s = state_peek(g);
    if (s) return s;
    s = vg_calloc(1, sizeof *s);
    if (!s || !vg__train_grow((void **)&s->stack, &s->cap, 4, sizeof(vs_entry))) goto oom;
    vg_vscope *root = obj_new(s, "", ""); /* VariableScope(False) */
    if (!root) goto oom;
    s->stack[0].scope = root;
    s->stack[0].kind = ENTRY_ROOT;
    s->n = 1;
    static atomic_uint_fast64_t next_serial = 1;
    s->serial = (uint64_t)atomic_fetch_add(&next_serial, 1);
    if (vg_graph_set_user_data(g, VS_KEY, s, state_free) != VG_OK) {
        state_free(s);
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory creating the variable scope store");
        return NULL;
    }
    return s;
oom:
    state_free(s);
    vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory creating the variable scope store");
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* _VariableScopeStore's counts */

static int count_index(const vs_state *s, const char *name) {
    for (int i = 0; i < s->ncounts; i++)
        if (strcmp(s->count_names[i], name) == 0) return i;
    return -1;
}
static int scope_count(const vs_state *s, const char *name) {
    int i = count_index(s, name);
    return i < 0 ? 0 : s->counts[i];
}

/* open_variable_scope */
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

/* close_variable_subscopes: the counts of the scopes below name drop to 0 (leaving
 * "model" and entering it again names its first "dense" "model/dense" again). */
static void close_subscopes(vs_state *s, const char *name) {
    size_t n = strlen(name);
    for (int i = 0; i < s->ncounts; i++)
        if (strncmp(s->count_names[i], name, n) == 0 && s->count_names[i][n] == '/') s->counts[i] = 0;
}

/* variable_scopes_count = old_subscopes (leaving a scope entered by object). */
static void restore_counts(vs_state *s, int n, const int *counts) {
    for (int i = n; i < s->ncounts; i++) vg_free(s->count_names[i]);
    if (n < s->ncounts) s->ncounts = n;
    if (counts && n) memcpy(s->counts, counts, sizeof(int) * (size_t)n);
}

/* _get_unique_variable_scope(prefix) in the current scope: prefix, prefix_1, ... */
static void unique_scope_name(const vs_state *s, const char *prefix, char *out, size_t len) {
    const char *cur = s->stack[s->n - 1].scope->name;
    char probe[3 * VS_NAME_MAX];
    if (*cur) snprintf(probe, sizeof probe, "%s/%s", cur, prefix);
    else snprintf(probe, sizeof probe, "%s", prefix);
    snprintf(out, len, "%s", prefix);
    if (scope_count(s, probe) == 0) return;
    for (int idx = 1;; idx++) {
        char cand[4 * VS_NAME_MAX];
        snprintf(cand, sizeof cand, "%s_%d", probe, idx);
        if (scope_count(s, cand) == 0) {
            snprintf(out, len, "%s_%d", prefix, idx);
            return;
        }
    }
}

/* ------------------------------------------------------------------------ */
/* entering and leaving */

/* Pushes the entry (the object is already made); undoes the name scope on failure. */
static const char *push_entry(vg_graph *g, vs_state *s, vs_entry e) {
    if (!vg__train_grow((void **)&s->stack, &s->cap, s->n + 1, sizeof(vs_entry))) {
        if (e.pushed_name_scope) vg_graph_pop_scope(g);
        vg_free(e.saved_counts);
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory entering variable scope %s", e.scope->name);
        return NULL;
    }
    s->stack[s->n++] = e;
    return e.scope->name;
}

static const char *enter_oom(vg_graph *g, bool pushed_ns, const char *name) {
    if (pushed_ns) vg_graph_pop_scope(g);
    vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory entering variable scope %s", name);
    return NULL;
}

/* The scope attributes given in opts on top of those of base (the parent scope for a
 * string name, the captured object when one is re-entered). */
static bool apply_opts(vg_vscope *o, const vg_vscope *base, const vg_variable_scope_opts *opts) {
    o->has_init = base->has_init;
    o->init = base->init;
    if (opts->initializer && !vg__init_is_none(*opts->initializer)) {
        o->has_init = true;
        o->init = *opts->initializer;
    }
    o->reg = opts->regularizer.fn ? opts->regularizer : base->reg;
    o->dtype = opts->dtype ? opts->dtype : base->dtype;
    return copy_getters(o, base, opts->custom_getter, opts->custom_getter_arg);
}

/* ops.py's _VALID_OP_NAME_REGEX "^[A-Za-z0-9.][A-Za-z0-9_.\\-/]*$" (a name scope opened
 * at the top) and _VALID_SCOPE_NAME_REGEX "^[A-Za-z0-9_.\\-/]*$" (nested). */
static bool valid_scope_name(const char *name, bool at_top) {
    for (const char *p = name; *p; p++) {
        unsigned char c = (unsigned char)*p;
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.';
        if (!(p == name && at_top)) ok = ok || c == '_' || c == '-' || c == '/';
        if (!ok) return false;
    }
    return true;
}

const char *vg_variable_scope_push(vg_graph *g, const char *name, const vg_variable_scope_opts *opts) {
    if (!g) return NULL;
    vg_variable_scope_opts def;
    memset(&def, 0, sizeof def);
    if (!opts) opts = &def;
    bool named = name && *name;
    if (!named && (!opts->default_name || !*opts->default_name)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "variable_scope: no name and no default_name given");
        return NULL;
    }
    if (!named && opts->reuse != VG_REUSE_INHERIT) { /* TF: `if self._reuse:` (AUTO_REUSE is truthy) */
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "reuse=True cannot be used without a name_or_scope");
        return NULL;
    }
    if (named && name[strlen(name) - 1] == '/') {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "variable_scope: name '%s' must not end with '/'", name);
        return NULL;
    }
    /* Graph.name_scope's check of the name it opens ("'_' is not a valid scope name") */
    if (!opts->no_name_scope && !valid_scope_name(named ? name : opts->default_name, !*vg_graph_scope(g))) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "'%s' is not a valid scope name", named ? name : opts->default_name);
        return NULL;
    }
    vs_state *s = state_get(g);
    if (!s) return NULL;
    /* the name scope: tf.name_scope(name or default_name), made unique; with
     * auxiliary_name_scope=False the current one, re-entered */
    char ns[VS_NAME_MAX * 4];
    bool pushed = false;
    if (!opts->no_name_scope) {
        const char *got = vg_graph_push_scope(g, named ? name : opts->default_name);
        snprintf(ns, sizeof ns, "%s/", got ? got : "");
        pushed = true;
    } else {
        const char *cur = vg_graph_scope(g);
        snprintf(ns, sizeof ns, "%s%s", cur, *cur ? "/" : "");
    }
    char rel[VS_NAME_MAX], full[3 * VS_NAME_MAX];
    if (named) snprintf(rel, sizeof rel, "%s", name);
    else unique_scope_name(s, opts->default_name, rel, sizeof rel);
    const vg_vscope *parent = s->stack[s->n - 1].scope;
    if (*parent->name) snprintf(full, sizeof full, "%s/%s", parent->name, rel);
    else snprintf(full, sizeof full, "%s", rel);
    /* _pure_variable_scope with a string: the parent's attributes, reuse inherited */
    vg_vscope *o = obj_new(s, full, ns);
    if (!o) return enter_oom(g, pushed, full);
    o->reuse = opts->reuse != VG_REUSE_INHERIT ? opts->reuse : parent->reuse;
    if (!apply_opts(o, parent, opts) || !open_count(s, full)) return enter_oom(g, pushed, full);
    vs_entry e = {o, ENTRY_STRING, pushed, 0, NULL};
    return push_entry(g, s, e);
}

const char *vg_variable_scope_enter(vg_graph *g, vg_vscope *scope, const vg_variable_scope_opts *opts) {
    if (!g) return NULL;
    if (!scope) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "variable_scope: NULL scope object");
        return NULL;
    }
    vg_variable_scope_opts def;
    memset(&def, 0, sizeof def);
    if (!opts) opts = &def;
    vs_state *s = state_get(g);
    if (!s) return NULL;
    /* the name scope: the last component of the scope's name, made unique (none for the
     * root scope); auxiliary_name_scope=False re-enters the current one */
    bool pushed = false;
    if (!opts->no_name_scope) {
        const char *slash = strrchr(scope->name, '/');
        const char *last = slash ? slash + 1 : scope->name;
        if (*last) {
            vg_graph_push_scope(g, last);
            pushed = true;
        }
    }
    /* _pure_variable_scope with a VariableScope: a copy of it (its name and original
     * name scope), reuse taken from it unless set here */
    vg_vscope *o = obj_new(s, scope->name, scope->name_scope);
    if (!o) return enter_oom(g, pushed, scope->name);
    o->reuse = opts->reuse != VG_REUSE_INHERIT ? opts->reuse : scope->reuse;
    if (!apply_opts(o, scope, opts) || !open_count(s, scope->name)) return enter_oom(g, pushed, scope->name);
    vs_entry e = {o, ENTRY_OBJECT, pushed, s->ncounts, NULL};
    if (s->ncounts) {
        e.saved_counts = vg_malloc(sizeof(int) * (size_t)s->ncounts);
        if (!e.saved_counts) return enter_oom(g, pushed, scope->name);
        memcpy(e.saved_counts, s->counts, sizeof(int) * (size_t)s->ncounts);
    }
    return push_entry(g, s, e);
}

void vg_variable_scope_pop(vg_graph *g) {
    vs_state *s = state_peek(g);
    if (!s || s->n <= 1) return;
    vs_entry *e = &s->stack[--s->n];
    if (e->kind == ENTRY_OBJECT) restore_counts(s, e->saved_ncounts, e->saved_counts);
    else close_subscopes(s, e->scope->name);
    if (e->pushed_name_scope) vg_graph_pop_scope(g);
    vg_free(e->saved_counts);
    memset(e, 0, sizeof *e);
}

uint64_t vg__train_scope_store_serial(vg_graph *g) {
    vs_state *s = state_get(g);
    return s ? s->serial : 0;
}

vg_vscope *vg_get_variable_scope(vg_graph *g) {
    vs_state *s = state_get(g);
    return s ? s->stack[s->n - 1].scope : NULL;
}

const char *vg_variable_scope_name(const vg_graph *g) {
    vs_state *s = state_peek(g);
    return s ? s->stack[s->n - 1].scope->name : "";
}

const char *vg_variable_scope_original_name_scope(const vg_graph *g) {
    vs_state *s = state_peek(g);
    return s ? s->stack[s->n - 1].scope->name_scope : "";
}

vg_reuse vg_variable_scope_reuse(const vg_graph *g) {
    vs_state *s = state_peek(g);
    return s ? s->stack[s->n - 1].scope->reuse : VG_REUSE_INHERIT;
}

void vg_variable_scope_reuse_variables(vg_graph *g) {
    vs_state *s = state_get(g);
    if (s) s->stack[s->n - 1].scope->reuse = VG_REUSE_TRUE;
}

/* ------------------------------------------------------------------------ */
/* scope objects */

const char *vg_vscope_name(const vg_vscope *s) { return s ? s->name : ""; }
const char *vg_vscope_original_name_scope(const vg_vscope *s) { return s ? s->name_scope : ""; }
vg_reuse vg_vscope_reuse(const vg_vscope *s) { return s ? s->reuse : VG_REUSE_INHERIT; }
vg_dtype vg_vscope_dtype(const vg_vscope *s) { return s && s->dtype ? s->dtype : VG_FLOAT; }
bool vg_vscope_initializer(const vg_vscope *s, vg_initializer *init) {
    if (!s || !s->has_init) return false;
    if (init) *init = s->init;
    return true;
}

void vg_vscope_reuse_variables(vg_vscope *s) {
    if (s) s->reuse = VG_REUSE_TRUE;
}
void vg_vscope_set_initializer(vg_vscope *s, const vg_initializer *init) {
    if (!s) return;
    s->has_init = init && !vg__init_is_none(*init);
    if (s->has_init) s->init = *init;
}
void vg_vscope_set_regularizer(vg_vscope *s, vg_regularizer reg) {
    if (s) s->reg = reg;
}
void vg_vscope_set_dtype(vg_vscope *s, vg_dtype dt) {
    if (s) s->dtype = dt;
}
vg_code vg_vscope_set_custom_getter(vg_vscope *s, vg_custom_getter_fn fn, void *arg) {
    if (!s) return VG_INVALID_ARGUMENT;
    if (!fn) {
        vg_free(s->getters);
        s->getters = NULL;
        s->ngetters = 0;
        return VG_OK;
    }
    getter_entry *n = vg_calloc(1, sizeof *n);
    if (!n) return VG_RESOURCE_EXHAUSTED;
    n->fn = fn;
    n->arg = arg;
    vg_free(s->getters);
    s->getters = n;
    s->ngetters = 1;
    return VG_OK;
}

/* VariableScope.get_collection: ops.get_collection(key, scope.name + "/") (the whole
 * collection for the root scope); TF's re.match of the prefix, compared literally. */
int vg_vscope_get_collection(const vg_graph *g, const vg_vscope *scope, const char *key, vg_output *out, int max) {
    if (!g || !scope || !key) return 0;
    int n = 0, count = 0;
    const vg_output *items = vg_graph_collection(g, key, &n);
    size_t len = strlen(scope->name);
    for (int i = 0; i < n; i++) {
        if (!items[i].op) continue;
        const char *nm = vg_op_name(items[i].op);
        if (len && (strncmp(nm, scope->name, len) != 0 || nm[len] != '/')) continue;
        if (out && count < max) out[count] = items[i];
        count++;
    }
    return count;
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
/* tf.no_regularizer: `def no_regularizer(_): return None` */
static vg_output reg_none(vg_graph *g, vg_output w, double scale, void *arg) {
    (void)g;
    (void)w;
    (void)scale;
    (void)arg;
    return vg_out(NULL, 0);
}
vg_regularizer vg_regularizer_none(void) {
    vg_regularizer r = {reg_none, 0.0, NULL};
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

static bool is_float(vg_dtype dt) {
    return dt == VG_FLOAT || dt == VG_DOUBLE || dt == VG_HALF || dt == VG_BFLOAT16;
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
            vg_graph_set_error(g, VG_INVALID_ARGUMENT,
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
    /* initializer None (no scope initializer either): glorot_uniform for floating
     * dtypes, zeros for integers and bool (_get_default_initializer) */
    vg_initializer init = a->init;
    if (vg__init_is_none(init)) init = is_float(a->dt) ? vg_init_glorot_uniform(0) : vg_init_zeros();
    /* a name ending in '/' (get_variable("") in a scope, as slot_creator does) names the
     * variable op verbatim, as TF's name scopes treat such names */
    size_t len = strlen(a->name);
    bool verbatim = len > 1 && a->name[len - 1] == '/';
    char opname[VS_NAME_MAX];
    snprintf(opname, sizeof opname, "%.*s", (int)(verbatim ? len - 1 : len), a->name);
    vg_variable v = vg__train_create_variable(g, opname, verbatim, a->dt, a->dims, a->ndims, init, a->flags);
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
        snprintf(rs, sizeof rs, "%s/Regularizer/", opname);
        vg_graph_push_scope(g, rs);
        vg_output loss = a->regularizer.fn(g, v.read, a->regularizer.scale, a->regularizer.arg);
        vg_graph_pop_scope(g);
        if (loss.op) vg_graph_add_to_collection(g, VG_REGULARIZATION_LOSSES, loss);
        if (vg_graph_status(g, NULL) != VG_OK) return none;
    }
    return v;
}

/* The custom getter chain of the current scope: the innermost getter first, each one's
 * `getter` the next outer one, the last the store's (_maybe_wrap_custom_getter). */
typedef struct chain_ctx {
    vs_state *s;
    const vg_vscope *scope;
    int pos; /* the getter to call next, counting down; -1: the store */
} chain_ctx;

static vg_variable chain_getter(vg_graph *g, const vg_getter_args *a, void *ctx) {
    chain_ctx *c = ctx;
    if (c->pos < 0) return true_getter(g, a, c->s);
    getter_entry e = c->scope->getters[c->pos];
    chain_ctx next = {c->s, c->scope, c->pos - 1};
    return e.fn(g, chain_getter, &next, a, e.arg);
}

vg_variable vg_get_variable_ex(vg_graph *g, const char *name, const vg_get_variable_opts *opts) {
    vg_variable none;
    memset(&none, 0, sizeof none);
    if (!g) return none;
    if (vg_graph_status(g, NULL) != VG_OK) return none;
    vs_state *s = state_get(g);
    if (!s) return none;
    const vg_vscope *top = s->stack[s->n - 1].scope;
    if (!name || (!*name && !*top->name)) {
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
    /* VariableScope.get_variable: the variable scope's name + "/" + name; name scopes
     * play no part */
    char full[VS_NAME_MAX];
    if (*top->name) snprintf(full, sizeof full, "%s/%s", top->name, name);
    else snprintf(full, sizeof full, "%s", name);
    vg_getter_args a;
    memset(&a, 0, sizeof a);
    a.name = full;
    a.dt = opts->dt ? opts->dt : top->dtype ? top->dtype : VG_FLOAT;
    a.dims = opts->dims;
    a.ndims = opts == &def ? -1 : opts->ndims; /* no opts: shape not specified (reuse) */
    bool given = opts->has_init && !vg__init_is_none(opts->init);
    a.init = given ? opts->init : top->has_init ? top->init : vg_init_default();
    a.regularizer = opts->regularizer.fn ? opts->regularizer : top->reg;
    a.flags = (opts->not_trainable ? 0u : (unsigned)VG_VAR_TRAINABLE) | (opts->local ? (unsigned)VG_VAR_LOCAL : 0u);
    a.reuse = opts->reuse != VG_REUSE_INHERIT ? opts->reuse : top->reuse;
    chain_ctx c = {s, top, top->ngetters - 1};
    /* VariableScope.get_variable: `with ops.name_scope(None)` around the store and the
     * custom getters, so ops a getter makes are named from the top ("custom_getter/add") */
    vg_graph_push_scope(g, "/");
    vg_variable v = chain_getter(g, &a, &c);
    vg_graph_pop_scope(g);
    return v;
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
