/*
 * ema.c - tf.train.ExponentialMovingAverage (TF 1.15 moving_averages.py) for
 * variables: apply() creates a shadow "<variable scope>/<var>/<name>" per variable
 * (slot_creator's naming: "_1" when taken; not trainable,
 * initialised from the variable's initial value, the variable added to
 * "moving_average_variables") and groups one AssignMovingAvg per variable:
 *     shadow -= (shadow - var) * (1 - decay)
 * with decay = min(decay, (1 + num_updates) / (10 + num_updates)) when num_updates is
 * given. average_name() and variables_to_restore() give TF's names for restoring the
 * shadows into the model's variables (the evaluation side of cifar10_eval.py).
 * Plain tensors get a zeros shadow "<variable scope>/<op>/<name>" and, with zero_debias,
 * TF's _zero_debias update (moving_averages.c) through "<variable scope>/<shadow>/biased"
 * and ".../local_step".
 */
#include "variable_internal.h"
#include "vigil/ops.h"
#include "vigil/train_lib.h"
#include "vigil/variable_scope.h"
#include "vigil/variables.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vg_ema {
    vg_graph *g;
    double decay;
    vg_output num_updates;
    bool zero_debias;
    char *name;
    int n, cap;
    vg_output *vars;       /* variable refs */
    vg_output *avgs;       /* their shadow refs */
};

static char *dupstr(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

vg_ema *vg_ema_new(vg_graph *g, double decay, vg_output num_updates, bool zero_debias, const char *name) {
    vg_ema *e = calloc(1, sizeof *e);
    if (!e || !(e->name = dupstr(name ? name : "ExponentialMovingAverage"))) {
        free(e);
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory creating ExponentialMovingAverage");
        return NULL;
    }
    e->g = g;
    e->decay = decay;
    e->num_updates = num_updates;
    e->zero_debias = zero_debias;
    return e;
}

void vg_ema_free(vg_ema *e) {
    if (!e) return;
    free(e->name);
    free(e->vars);
    free(e->avgs);
    free(e);
}

static int find(const vg_ema *e, vg_output v) {
    for (int i = 0; i < e->n; i++)
        if (e->vars[i].op == v.op && e->vars[i].index == v.index) return i;
    return -1;
}

/* average_name: the shadow's op name once applied, else
 * graph.unique_name(var.op.name + "/" + name, mark_as_used=False) (the current name scope
 * in front, "_1" ... when taken). */
char *vg_ema_average_name(const vg_ema *e, vg_output var, char *buf, size_t len) {
    if (!e || !var.op || !buf || !len) return NULL;
    int i = find(e, var);
    if (i >= 0) {
        snprintf(buf, len, "%s", vg_op_name(e->avgs[i].op));
        return buf;
    }
    char base[1100];
    snprintf(base, sizeof base, "%s/%s", vg_op_name(var.op), e->name);
    return vg_graph_unique_name(e->g, base, buf, len);
}

vg_output vg_ema_average(const vg_ema *e, vg_output var) {
    int i = e && var.op ? find(e, var) : -1;
    return i >= 0 ? e->avgs[i] : vg_out(NULL, 0);
}

static bool is_variable(vg_output v) { return v.op && strcmp(vg_op_type(v.op), "VariableV2") == 0; }

/* slot_creator.create_slot(primary, init_value, name) / create_zeros_slot(primary, name)
 * as TF 1.15 names them: with variable_scope(None, default_name=primary.op.name + "/" +
 * name) a variable named after that scope, i.e. "<current variable scope>/<primary op
 * name>/<name>", "_1", "_2" ... when that scope was opened before. No name scope is
 * opened (TF's would reserve the variable's own name in vigil's name table; the op names
 * are the same either way). initial.op NULL: zeros of primary's shape (TF's
 * zeros_initializer, ops under "<slot>/Initializer/"). */
static vg_output make_slot(vg_ema *e, vg_output primary, vg_output initial) {
    vg_graph *g = e->g;
    char dflt[1100];
    snprintf(dflt, sizeof dflt, "%s/%s", vg_op_name(primary.op), e->name);
    vg_variable_scope_opts o;
    memset(&o, 0, sizeof o);
    o.default_name = dflt;
    o.no_name_scope = true;
    const char *full = vg_variable_scope_push(g, NULL, &o);
    if (!full) return vg_out(NULL, 0);
    vg_variable s;
    if (initial.op) {
        vg_graph_push_scope(g, "/");
        s = vg_variable_new(g, full, initial, 0);
        vg_graph_pop_scope(g);
    } else {
        vg_shape sh = vg_output_shape(primary);
        s = vg__train_create_variable(g, full, false, vg_output_dtype(primary), sh.dims, sh.ndims, vg_init_zeros(), 0);
    }
    vg_variable_scope_pop(g);
    return s.ref;
}

/* Creates the shadow of var (create_slot with var's initial value). */
static vg_output make_shadow(vg_ema *e, vg_output var) {
    vg_graph *g = e->g;
    vg_op *init = vg_variable_initializer(var.op);
    vg_output initial = init && vg_op_num_inputs(init) >= 2 ? vg_op_input(init, 1) : vg_out(NULL, 0);
    if (!initial.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "ExponentialMovingAverage: variable %s has no initializer",
                           vg_op_name(var.op));
        return vg_out(NULL, 0);
    }
    return make_slot(e, var, initial);
}

static bool grow(vg_ema *e) {
    if (e->n < e->cap) return true;
    int cap = e->cap ? e->cap * 2 : 8;
    vg_output *v = realloc(e->vars, sizeof(vg_output) * (size_t)cap);
    if (!v) return false;
    e->vars = v;
    vg_output *a = realloc(e->avgs, sizeof(vg_output) * (size_t)cap);
    if (!a) return false;
    e->avgs = a;
    e->cap = cap;
    return true;
}

vg_op *vg_ema_apply(vg_ema *e, const vg_output *vars, int n) {
    if (!e) return NULL;
    vg_graph *g = e->g;
    if (!vars) vars = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &n);
    if (n < 0 || (n > 0 && !vars)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "ExponentialMovingAverage.apply: bad var_list");
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        vg_dtype dt = vars[i].op ? vg_output_dtype(vars[i]) : VG_DTYPE_INVALID;
        if (dt != VG_FLOAT && dt != VG_DOUBLE) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "The variables must be half, float, or double: %s",
                               vars[i].op ? vg_op_name(vars[i].op) : "(null)");
            return NULL;
        }
        vg_shape sh = vg_output_shape(vars[i]);
        if (!is_variable(vars[i]) && !vg_shape_is_fully_defined(&sh)) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                               "ExponentialMovingAverage.apply: the shape of %s must be fully defined",
                               vg_op_name(vars[i].op));
            return NULL;
        }
    }
    for (int i = 0; i < n; i++) {
        if (find(e, vars[i]) >= 0) continue;
        if (!grow(e)) {
            vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in ExponentialMovingAverage.apply");
            return NULL;
        }
        bool var = is_variable(vars[i]);
        vg_output avg = var ? make_shadow(e, vars[i]) : make_slot(e, vars[i], vg_out(NULL, 0));
        if (!avg.op) return NULL;
        /* only tf.Variables go to MOVING_AVERAGE_VARIABLES */
        if (var) vg_graph_add_to_collection(g, VG_MOVING_AVERAGE_VARIABLES, vars[i]);
        e->vars[e->n] = vars[i];
        e->avgs[e->n++] = avg;
    }
    /* with ops.name_scope(self.name) as scope: ...; group(*updates, name=scope) */
    char full[1024], sc[1100];
    vg_graph_unique_name(g, e->name, full, sizeof full);
    snprintf(sc, sizeof sc, "%s/", full);
    const char *slash = strrchr(full, '/');
    const char *base = slash ? slash + 1 : full;
    vg_graph_push_scope(g, sc);
    vg_output decay = vg_const_f32(g, (float)e->decay, "decay");
    if (e->num_updates.op) {
        vg_output nu = vg_output_dtype(e->num_updates) == VG_FLOAT ? e->num_updates
                                                                   : vg_cast(g, e->num_updates, VG_FLOAT, "num_updates");
        vg_output r = vg_div(g, vg_add(g, vg_const_f32(g, 1.0f, "add/x"), nu, "add"),
                             vg_add(g, vg_const_f32(g, 10.0f, "add_1/x"), nu, "add_1"), "truediv");
        decay = vg_minimum(g, decay, r, "Minimum");
    }
    vg_op **updates = calloc((size_t)(n ? n : 1), sizeof(vg_op *));
    if (!updates) {
        vg_graph_pop_scope(g);
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory in ExponentialMovingAverage.apply");
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        vg_output avg = e->avgs[find(e, vars[i])];
        bool debias = e->zero_debias && !is_variable(vars[i]);
        /* assign_moving_average(avg, var, decay, zero_debias): name_scope "AssignMovingAvg",
         * the debias variables under variable_scope(avg's name) (moving_averages.c) */
        vg_output upd = vg_assign_moving_average_t(g, avg, vars[i], decay, debias, NULL);
        if (!upd.op) break;
        updates[i] = upd.op;
    }
    vg_graph_pop_scope(g);
    vg_op *grp = vg_graph_status(g, NULL) == VG_OK ? vg_group(g, updates, n, base) : NULL;
    free(updates);
    return grp;
}

void vg_name_map_free(vg_name_map *m) {
    if (!m) return;
    for (int i = 0; i < m->n; i++) free(m->names[i]);
    free(m->names);
    free(m->vars);
    m->names = NULL;
    m->vars = NULL;
    m->n = 0;
}

static bool map_has(const vg_name_map *m, const char *name) {
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->names[i], name) == 0) return true;
    return false;
}

static bool map_add(vg_name_map *m, int *cap, const char *name, vg_output v) {
    if (m->n == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        char **nn = realloc(m->names, sizeof(char *) * (size_t)nc);
        if (!nn) return false;
        m->names = nn;
        vg_output *nv = realloc(m->vars, sizeof(vg_output) * (size_t)nc);
        if (!nv) return false;
        m->vars = nv;
        *cap = nc;
    }
    if (!(m->names[m->n] = dupstr(name))) return false;
    m->vars[m->n++] = v;
    return true;
}

static bool in_list(const vg_output *l, int n, vg_output v) {
    for (int i = 0; i < n; i++)
        if (l[i].op == v.op && l[i].index == v.index) return true;
    return false;
}

vg_code vg_ema_variables_to_restore(const vg_ema *e, const vg_output *moving_avg_vars, int n, vg_name_map *out,
                                    vg_status *st) {
    if (!e || !out || n < 0 || (n > 0 && !moving_avg_vars))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "variables_to_restore: bad arguments");
    memset(out, 0, sizeof *out);
    int cap = 0;
    vg_output *list = NULL;
    int nl = 0;
    if (moving_avg_vars) {
        list = malloc(sizeof(vg_output) * (size_t)(n ? n : 1));
        if (!list) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in variables_to_restore");
        for (int i = 0; i < n; i++)
            if (!in_list(list, nl, moving_avg_vars[i])) list[nl++] = moving_avg_vars[i];
    } else { /* trainable_variables() + moving_average_variables(), duplicates removed */
        int nt = 0, nm = 0;
        const vg_output *t = vg_graph_collection(e->g, VG_TRAINABLE_VARIABLES, &nt);
        const vg_output *m = vg_graph_collection(e->g, VG_MOVING_AVERAGE_VARIABLES, &nm);
        list = malloc(sizeof(vg_output) * (size_t)(nt + nm + 1));
        if (!list) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in variables_to_restore");
        for (int i = 0; i < nt; i++)
            if (!in_list(list, nl, t[i])) list[nl++] = t[i];
        for (int i = 0; i < nm; i++)
            if (!in_list(list, nl, m[i])) list[nl++] = m[i];
    }
    bool ok = true;
    char buf[1100];
    for (int i = 0; ok && i < nl; i++) {
        if (!list[i].op) continue;
        ok = map_add(out, &cap, vg_ema_average_name(e, list[i], buf, sizeof buf), list[i]);
    }
    int ng = 0;
    const vg_output *gv = vg_graph_collection(e->g, VG_GLOBAL_VARIABLES, &ng);
    for (int i = 0; ok && i < ng; i++) {
        if (!gv[i].op || in_list(list, nl, gv[i]) || map_has(out, vg_op_name(gv[i].op))) continue;
        ok = map_add(out, &cap, vg_op_name(gv[i].op), gv[i]);
    }
    free(list);
    if (!ok) {
        vg_name_map_free(out);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in variables_to_restore");
    }
    return VG_OK;
}
