/*
 * scaffold.c - tf.train.Scaffold (TF 1.15): the pieces a monitored session needs, with
 * TF's defaults created at finalize() and cached in the graph's collections so that
 * several scaffolds on one graph share them.
 */
#include "monitored_internal.h"
#include "vigil/lookup.h"
#include "vigil/summary.h"
#include "vigil/variables.h"
#include <stdio.h>
#include <string.h>

struct vg_scaffold {
    vg_scaffold_options o;
    vg_output *feeds;        /* copies of the init feed arrays */
    vg_tensor **feed_vals;
    bool finalized;
};

vg_scaffold *vg_scaffold_new(const vg_scaffold_options *opts) {
    vg_scaffold_options def = {0};
    vg_scaffold *s = vg_calloc(1, sizeof *s);
    if (!s) return NULL;
    s->o = opts ? *opts : def;
    const vg_scaffold *c = s->o.copy_from_scaffold;
    if (c) {
        /* explicit arguments win over the copied ones */
        if (!s->o.init_op) s->o.init_op = c->o.init_op;
        if (!s->o.init_feeds && c->o.ninit_feeds) {
            s->o.init_feeds = c->o.init_feeds;
            s->o.init_feed_values = c->o.init_feed_values;
            s->o.ninit_feeds = c->o.ninit_feeds;
        }
        if (!s->o.init_fn) { s->o.init_fn = c->o.init_fn; s->o.init_fn_payload = c->o.init_fn_payload; }
        if (!s->o.ready_op.op) s->o.ready_op = c->o.ready_op;
        if (!s->o.ready_for_local_init_op.op) s->o.ready_for_local_init_op = c->o.ready_for_local_init_op;
        if (!s->o.local_init_op) s->o.local_init_op = c->o.local_init_op;
        if (!s->o.summary_op.op) s->o.summary_op = c->o.summary_op;
        if (!s->o.saver) s->o.saver = c->o.saver;
        s->o.copy_from_scaffold = NULL;
    }
    int n = s->o.ninit_feeds;
    if (n > 0) {
        s->feeds = vg_calloc((size_t)n, sizeof(vg_output));
        s->feed_vals = vg_calloc((size_t)n, sizeof(vg_tensor *));
        if (!s->feeds || !s->feed_vals) { vg_scaffold_free(s); return NULL; }
        for (int i = 0; i < n; i++) {
            s->feeds[i] = s->o.init_feeds[i];
            s->feed_vals[i] = vg_tensor_ref(s->o.init_feed_values[i]);
        }
        s->o.init_feeds = s->feeds;
        s->o.init_feed_values = s->feed_vals;
    }
    return s;
}

void vg_scaffold_free(vg_scaffold *s) {
    if (!s) return;
    for (int i = 0; s->feed_vals && i < s->o.ninit_feeds; i++) vg_tensor_free(s->feed_vals[i]);
    vg_free(s->feeds);
    vg_free(s->feed_vals);
    vg_free(s);
}

/* Scaffold.get_or_default: the collection's single item, or a new default added to it. */
static vg_code get_or_default(vg_graph *g, const char *key, const char *arg, vg_output (*make)(vg_graph *),
                              vg_output *out, vg_status *st) {
    int n;
    const vg_output *items = vg_graph_collection(g, key, &n);
    if (n > 1)
        return vg_status_set(st, VG_FAILED_PRECONDITION,
                             "More than one item in the collection \"%s\". Please indicate which one to use by "
                             "passing it to the tf.Scaffold constructor as:  tf.Scaffold(%s=item to use)",
                             key, arg);
    if (n == 1) { *out = items[0]; return VG_OK; }
    *out = make(g);
    if (vg_graph_status(g, st) != VG_OK) return st ? st->code : VG_INTERNAL;
    if (out->op) vg_graph_add_to_collection(g, key, *out);
    return VG_OK;
}

static vg_output make_init(vg_graph *g) { return vg_out(vg_global_variables_initializer(g), 0); }
static vg_output make_ready(vg_graph *g) { return vg_report_uninitialized_variables(g, NULL, 0, NULL); }
static vg_output make_ready_local(vg_graph *g) {
    int n;
    const vg_output *globals = vg_graph_collection(g, VG_GLOBAL_VARIABLES, &n);
    /* no global variables: an empty list (NULL would mean "all variables", locals too) */
    static const vg_output no_vars[1];
    return vg_report_uninitialized_variables(g, globals ? globals : no_vars, n, NULL);
}
/* Scaffold.default_local_init_op: group(local_variables_initializer(), tables_initializer()). */
static vg_output make_local_init(vg_graph *g) {
    vg_op *ops[2] = {vg_local_variables_initializer(g), vg_tables_initializer(g, NULL)};
    return vg_out(vg_group(g, ops, 2, "group_deps"), 0);
}
static vg_output make_summary(vg_graph *g) { return vg_summary_merge_all(g); }

#define SAVER_KEY_PREFIX "vigil.saver:"

static void saver_destroy(void *p) { vg_saver_free(p); }

/* training_saver._get_saver_or_default: the "savers" collection holds the restore op of
 * each saver; the vg_saver object is attached to the graph under its op name. A graph
 * without global variables gets an empty saver (allow_empty: it writes only the .meta). */
static vg_code saver_or_default(vg_graph *g, vg_saver **out, vg_status *st) {
    int n;
    char key[1100];
    const vg_output *items = vg_graph_collection(g, VG_SAVERS, &n);
    *out = NULL;
    if (n > 1)
        return vg_status_set(st, VG_FAILED_PRECONDITION,
                             "More than one item in collection savers. Please indicate which one to use by "
                             "passing it to the constructor.");
    if (n == 1) {
        snprintf(key, sizeof key, SAVER_KEY_PREFIX "%s", vg_op_name(items[0].op));
        *out = vg_graph_user_data(g, key);
        if (!*out) return vg_status_set(st, VG_FAILED_PRECONDITION, "the \"savers\" collection holds an unknown saver");
        return VG_OK;
    }
    vg_saver_options so = {0};
    so.sharded = true;
    so.allow_empty = true; /* Saver(sharded=True, allow_empty=True) */
    vg_saver *sv = vg_saver_new(g, &so, st);
    if (!sv) return st ? st->code : VG_INTERNAL;
    vg_op *restore = vg_saver_restore_op(sv);
    snprintf(key, sizeof key, SAVER_KEY_PREFIX "%s", vg_op_name(restore));
    if (vg_graph_set_user_data(g, key, sv, saver_destroy) != VG_OK) {
        vg_saver_free(sv);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    }
    vg_graph_add_to_collection(g, VG_SAVERS, vg_out(restore, 0));
    *out = sv;
    return VG_OK;
}

vg_code vg_scaffold_finalize(vg_scaffold *s, vg_graph *g, vg_status *st) {
    if (!s || !g) return vg_status_set(st, VG_INVALID_ARGUMENT, "%s is NULL", s ? "graph" : "scaffold");
    if (s->finalized) {
        vg_graph_finalize(g);
        vg_logf(VG_LOG_INFO, "Graph was finalized.");
        return VG_OK;
    }
    vg_code rc = VG_OK;
    /* The ops the caller left unset, in TF's order: an op field (op) or a tensor field
     * (out), its collection, the constructor argument's name and the default. */
    const struct {
        vg_op **op;
        vg_output *out;
        const char *key, *arg;
        vg_output (*make)(vg_graph *);
    } unset[] = {
        {&s->o.init_op, NULL, VG_INIT_OP, "init_op", make_init},
        {NULL, &s->o.ready_op, VG_READY_OP, "ready_op", make_ready},
        {NULL, &s->o.ready_for_local_init_op, VG_READY_FOR_LOCAL_INIT_OP, "ready_for_local_init_op", make_ready_local},
        {&s->o.local_init_op, NULL, VG_LOCAL_INIT_OP, "local_init_op", make_local_init},
        {NULL, &s->o.summary_op, VG_SUMMARY_OP, "summary_op", make_summary},
    };
    for (size_t i = 0; i < sizeof unset / sizeof unset[0]; i++) {
        if (unset[i].op ? *unset[i].op != NULL : unset[i].out->op != NULL) continue;
        vg_output o;
        if ((rc = get_or_default(g, unset[i].key, unset[i].arg, unset[i].make, &o, st))) return rc;
        if (unset[i].op) *unset[i].op = o.op;
        else *unset[i].out = o;
    }
    if (!s->o.saver && (rc = saver_or_default(g, &s->o.saver, st))) return rc;
    if ((rc = vg_graph_status(g, st)) != VG_OK) return rc;
    vg_graph_finalize(g);
    s->finalized = true;
    vg_logf(VG_LOG_INFO, "Graph was finalized.");
    return VG_OK;
}

bool vg_scaffold_finalized(const vg_scaffold *s) { return s->finalized; }
vg_op *vg_scaffold_init_op(const vg_scaffold *s) { return s->o.init_op; }
vg_output vg_scaffold_ready_op(const vg_scaffold *s) { return s->o.ready_op; }
vg_output vg_scaffold_ready_for_local_init_op(const vg_scaffold *s) { return s->o.ready_for_local_init_op; }
vg_op *vg_scaffold_local_init_op(const vg_scaffold *s) { return s->o.local_init_op; }
vg_output vg_scaffold_summary_op(const vg_scaffold *s) { return s->o.summary_op; }
vg_saver *vg_scaffold_saver(const vg_scaffold *s) { return s->o.saver; }

void vg__scaffold_prepare_options(const vg_scaffold *s, vg_prepare_options *po) {
    po->init_op = s->o.init_op;
    po->saver = s->o.saver;
    po->init_feeds = s->o.init_feeds;
    po->init_feed_values = s->o.init_feed_values;
    po->ninit_feeds = s->o.ninit_feeds;
    po->init_fn = s->o.init_fn;
    po->init_fn_payload = s->o.init_fn_payload;
    po->scaffold = (vg_scaffold *)s;
}
