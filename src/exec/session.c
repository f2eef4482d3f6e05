/*
 * session.c - sessions: variable slots, the plan cache, kernel states, resources,
 * close/cancel and run metadata.
 */
#include "exec.h"
#include "vigil/mixed_precision.h"
#include <stdio.h>
#include <unistd.h>

/* OpenBLAS's own threads would fight with ours: vigil splits work itself. */
extern void openblas_set_num_threads(int num_threads);

/* ------------------------------------------------------------------------ */
/* session */

static int ncores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* Makes the session know every op of its graph: ops added since the last run get their
 * variable slots and kernel-state entries (TF's Session::Extend, done on the next run as
 * TF's Python session does). Lock s->mu held (or the session not shared yet). Fails with
 * the graph's own error, RESOURCE_EXHAUSTED. */
static vg_code session_extend(vg_session *s, vg_status *st) {
    vg_graph *g = s->g;
    int n = g->nops;
    if (n <= s->nops && s->vars) return VG_OK;
    if (vg_graph_status(g, st) != VG_OK) return st ? st->code : VG_INVALID_ARGUMENT;
    if (n + 1 > s->nops_cap) {
        int cap = s->nops_cap ? s->nops_cap : 16;
        while (cap < n + 1) cap *= 2;
        vg__var **vars = vg__realloc(s->vars, sizeof(vg__var *) * (size_t)s->nops_cap, sizeof(vg__var *) * (size_t)cap);
        if (vars) s->vars = vars;
        void **ks = vars ? vg__realloc(s->kstate, sizeof(void *) * (size_t)s->nops_cap, sizeof(void *) * (size_t)cap)
                         : NULL;
        if (ks) s->kstate = ks;
        void (**kd)(void *) = ks ? vg__realloc(s->kstate_destroy, sizeof(*kd) * (size_t)s->nops_cap, sizeof(*kd) * (size_t)cap)
                                 : NULL;
        if (kd) s->kstate_destroy = kd;
        if (!kd) return VG_OOM(st, "session");
        for (int i = s->nops_cap; i < cap; i++) s->vars[i] = NULL, s->kstate[i] = NULL, s->kstate_destroy[i] = NULL;
        s->nops_cap = cap;
    }
    for (int i = s->nops; i < n; i++) {
        vg_op *op = g->ops[i];
        if (!(op->def->flags & VG__OP_VARIABLE)) continue;
        vg__var *v = vg__calloc(1, sizeof *v);
        if (!v) {
            s->nops = i; /* the slots made so far are kept */
            return VG_OOM(st, "session");
        }
        pthread_mutex_init(&v->mu, NULL);
        v->op = op;
        s->vars[i] = v;
    }
    s->nops = n;
    return VG_OK;
}

vg_session *vg_session_new(vg_graph *g, const vg_session_options *opts, vg_status *st) {
    if (!g) { vg_status_set(st, VG_INVALID_ARGUMENT, "graph is NULL"); return NULL; }
    if (vg_graph_status(g, st) != VG_OK) return NULL;
    vg_session *s = vg__calloc(1, sizeof *s);
    if (!s) { VG_OOM(st, "session"); return NULL; }
    s->g = g;
    vg_session_options def = {0};
    s->opts = opts ? *opts : def;
    s->amp = vg_mixed_precision_graph_rewrite_enabled();
    int intra = s->opts.intra_op_threads > 0 ? s->opts.intra_op_threads : ncores();
    int inter = s->opts.inter_op_threads > 0 ? s->opts.inter_op_threads : ncores();
    s->intra_threads = intra;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->idle, NULL);
    vg__strmap_init(&s->resources);
    atomic_init(&s->closing, false);
    atomic_init(&s->inflight, 0);
    if (session_extend(s, st) != VG_OK) {
        vg_session_free(s);
        return NULL;
    }
    /* One pool serves both kinds of work when both are wanted: a kernel that splits on
     * it while an inter-op helper runs another node takes the chunks no idle worker
     * takes itself, so the session never runs more threads than the larger setting and
     * spinning workers never compete with each other for the cores. */
    s->inter_helpers = inter > 1 ? inter - 1 : 0;
    if (intra > 1 && !(s->intra = vg__pool_new((intra > inter ? intra : inter) - 1))) goto oom;
    if (inter > 1) s->inter = s->intra;
    if (inter > 1 && !s->inter && !(s->inter = vg__pool_new(inter - 1))) goto oom;
    openblas_set_num_threads(1);
    return s;
oom:
    VG_OOM(st, "session");
    vg_session_free(s);
    return NULL;
}

static void cancel_resources(vg_session *s) {
    for (int i = 0; i < s->resources.cap; i++) {
        vg__resource *r = s->resources.keys[i] ? s->resources.vals[i] : NULL;
        if (r && r->cancel) r->cancel(r->ptr);
    }
}

vg_code vg_session_close(vg_session *s, vg_status *st) {
    (void)st;
    if (!s) return VG_OK;
    pthread_mutex_lock(&s->mu);
    if (s->closed) { pthread_mutex_unlock(&s->mu); return VG_OK; }
    atomic_store(&s->closing, true);
    cancel_resources(s);
    while (atomic_load(&s->inflight) > 0) pthread_cond_wait(&s->idle, &s->mu);
    s->closed = true;
    /* Variables and resources are released now; kernel states and plans at free. */
    for (int i = 0; i < s->nops; i++)
        if (s->vars[i]) {
            vg_tensor_free(s->vars[i]->value);
            s->vars[i]->value = NULL;
        }
    pthread_mutex_unlock(&s->mu);
    return VG_OK;
}

void vg_session_free(vg_session *s) {
    if (!s) return;
    if (s->vars && s->kstate) vg_session_close(s, NULL);
    if (s->inter != s->intra) vg__pool_free(s->inter);
    vg__pool_free(s->intra);
    for (int i = 0; i < s->nplans; i++) vg__plan_free(s->plans[i]);
    vg__free(s->plans);
    if (s->kstate)
        for (int i = 0; i < s->nops; i++)
            if (s->kstate[i] && s->kstate_destroy[i]) s->kstate_destroy[i](s->kstate[i]);
    for (int i = 0; i < s->resources.cap; i++) {
        vg__resource *r = s->resources.keys[i] ? s->resources.vals[i] : NULL;
        if (r) {
            if (r->destroy) r->destroy(r->ptr);
            vg__free(r);
        }
    }
    vg__strmap_free(&s->resources);
    if (s->vars)
        for (int i = 0; i < s->nops; i++)
            if (s->vars[i]) {
                vg_tensor_free(s->vars[i]->value);
                pthread_mutex_destroy(&s->vars[i]->mu);
                vg__free(s->vars[i]);
            }
    vg__free(s->vars);
    vg__free(s->kstate);
    vg__free(s->kstate_destroy);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->idle);
    vg__free(s);
}

vg_graph *vg_session_graph(const vg_session *s) { return s ? s->g : NULL; }
bool vg_session_closed(const vg_session *s) { return !s || atomic_load(&((vg_session *)s)->closing); }
/* ------------------------------------------------------------------------ */
/* run */

static vg__plan *find_plan(vg_session *s, const int *key, int nkey, uint64_t h) {
    for (int i = 0; i < s->nplans; i++) {
        vg__plan *p = s->plans[i];
        if (p->hash == h && p->nkey == nkey && memcmp(p->key, key, sizeof(int) * (size_t)nkey) == 0) return p;
    }
    return NULL;
}

static vg_code check_feeds(const vg_output *feeds, vg_tensor *const *vals, int n, vg_status *st) {
    for (int i = 0; i < n; i++) {
        vg_output o = feeds[i];
        if (!vals[i])
            return vg_status_set(st, VG_INVALID_ARGUMENT, "feed value for '%s:%d' is NULL", vg_op_name(o.op), o.index);
        vg_dtype want = vg_output_dtype(o), got = vg_tensor_dtype(vals[i]);
        if (want != got)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "Cannot feed value of dtype %s for tensor '%s:%d', which has dtype %s",
                                 vg_dtype_name(got), vg_op_name(o.op), o.index, vg_dtype_name(want));
        vg_shape s = vg_output_shape(o);
        bool ok = s.ndims < 0 || s.ndims == vg_tensor_ndims(vals[i]);
        for (int d = 0; ok && s.ndims >= 0 && d < s.ndims; d++)
            ok = s.dims[d] < 0 || s.dims[d] == vg_tensor_dim(vals[i], d);
        if (!ok) {
            char a[128], b[128];
            vg_shape gs = vg_tensor_shape(vals[i]);
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "Cannot feed value of shape %s for tensor '%s:%d', which has shape %s",
                                 vg_shape_str(&gs, a, sizeof a), vg_op_name(o.op), o.index,
                                 vg_shape_str(&s, b, sizeof b));
        }
    }
    return VG_OK;
}

vg_code vg_session_run(vg_session *s, const vg_run_options *ro, const vg_output *feeds, vg_tensor *const *feed_values,
                       int nfeeds, const vg_output *fetches, vg_tensor **out, int nfetches, vg_op *const *targets,
                       int ntargets, vg_run_metadata *md, vg_status *st) {
    if (nfetches > 0 && !out) return vg_status_set(st, VG_INVALID_ARGUMENT, "out is NULL with %d fetches", nfetches);
    for (int i = 0; i < nfetches; i++) out[i] = NULL;
    if (!s) return vg_status_set(st, VG_INVALID_ARGUMENT, "session is NULL");
    if (nfeeds < 0 || nfetches < 0 || ntargets < 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "negative count");
    if (nfetches > 0 && !fetches) return vg_status_set(st, VG_INVALID_ARGUMENT, "fetches is NULL with %d fetches", nfetches);
    if (nfeeds > 0 && (!feeds || !feed_values))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s is NULL with %d feeds", feeds ? "feed_values" : "feeds", nfeeds);
    if (ntargets > 0 && !targets) return vg_status_set(st, VG_INVALID_ARGUMENT, "targets is NULL with %d targets", ntargets);
    /* plan key on the stack for small calls */
    int keybuf[64], *key = keybuf;
    int nkey = 2 * nfeeds + 2 * nfetches + ntargets;
    if (nkey > 64 && !(key = vg__malloc(sizeof(int) * (size_t)nkey))) return VG_OOM(st, "run key");
    int k = 0;
    for (int i = 0; i < nfeeds; i++) key[k++] = feeds[i].op ? feeds[i].op->id : -1, key[k++] = feeds[i].index;
    for (int i = 0; i < nfetches; i++) key[k++] = fetches[i].op ? fetches[i].op->id : -1, key[k++] = fetches[i].index;
    for (int i = 0; i < ntargets; i++) key[k++] = targets[i] ? targets[i]->id : -1;
    uint64_t h = vg__plan_key_hash(key, nkey);

    pthread_mutex_lock(&s->mu);
    if (atomic_load(&s->closing)) {
        pthread_mutex_unlock(&s->mu);
        if (key != keybuf) vg__free(key);
        return vg_status_set(st, VG_FAILED_PRECONDITION, "Attempted to use a closed Session.");
    }
    atomic_fetch_add(&s->inflight, 1);
    vg_code rc = s->g->nops != s->nops ? session_extend(s, st) : VG_OK;
    vg__plan *p = rc == VG_OK ? find_plan(s, key, nkey, h) : NULL;
    /* same key but ops from another graph could collide on ids: verify graph */
    for (int i = 0; p && i < nfeeds; i++) if (feeds[i].op && feeds[i].op->graph != s->g) p = NULL;
    for (int i = 0; p && i < nfetches; i++) if (fetches[i].op && fetches[i].op->graph != s->g) p = NULL;
    for (int i = 0; p && i < ntargets; i++) if (targets[i] && targets[i]->graph != s->g) p = NULL;
    if (!p && rc == VG_OK) {
        rc = vg__plan_build(s, feeds, nfeeds, fetches, nfetches, targets, ntargets, &p, st);
        if (rc == VG_OK) {
            if (vg__grow((void **)&s->plans, &s->plans_cap, s->nplans + 1, sizeof(vg__plan *))) {
                s->plans[s->nplans++] = p;
            } else {
                vg__plan_free(p);
                p = NULL;
                rc = VG_OOM(st, "plan cache");
            }
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (key != keybuf) vg__free(key);
    if (rc == VG_OK) rc = check_feeds(feeds, feed_values, nfeeds, st);
    if (rc == VG_OK) rc = vg__plan_run(s, p, ro, feed_values, out, md, st);
    /* The caller owns what it fetched (TF hands back a copy): a value whose buffer the
     * session still holds (a variable's, a constant's, a fed tensor's, a queue's) is
     * copied, so writing into it can never change session state. */
    for (int i = 0; rc == VG_OK && i < nfetches; i++) {
        if (!out[i] || vg__tensor_refcount(out[i]) <= 1) continue;
        vg_tensor *c = vg_tensor_copy(out[i], st);
        if (!c) {
            rc = st ? st->code : VG_RESOURCE_EXHAUSTED;
            for (int j = 0; j < nfetches; j++) {
                vg_tensor_free(out[j]);
                out[j] = NULL;
            }
            break;
        }
        vg_tensor_free(out[i]);
        out[i] = c;
    }
    if (md && ro && ro->output_partition_graphs) md->partition_graphs = 1;
    /* close() sets `closing` before it waits for inflight == 0 (under mu), so the run
     * that brings inflight to 0 after that sees `closing` and wakes it */
    if (atomic_fetch_sub(&s->inflight, 1) == 1 && atomic_load(&s->closing)) {
        pthread_mutex_lock(&s->mu);
        pthread_cond_broadcast(&s->idle);
        pthread_mutex_unlock(&s->mu);
    }
    if (rc == VG_OK) vg_status_clear(st);
    return rc;
}

vg_code vg_session_run1(vg_session *s, vg_output fetch, vg_tensor **out, vg_status *st) {
    vg_tensor *tmp = NULL;
    vg_code rc = vg_session_run(s, NULL, NULL, NULL, 0, fetch.op ? &fetch : NULL, &tmp, fetch.op ? 1 : 0, NULL, 0,
                                NULL, st);
    if (out) *out = tmp;
    else vg_tensor_free(tmp);
    return rc;
}

vg_code vg_session_run_targets(vg_session *s, vg_op *const *targets, int ntargets, vg_status *st) {
    return vg_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, targets, ntargets, NULL, st);
}

/* ------------------------------------------------------------------------ */
/* run metadata */

vg_run_metadata *vg_run_metadata_new(void) {
    vg_run_metadata *md = vg__calloc(1, sizeof *md);
    if (md) pthread_mutex_init(&md->mu, NULL);
    return md;
}
void vg_run_metadata_free(vg_run_metadata *md) {
    if (!md) return;
    vg__free(md->nodes);
    pthread_mutex_destroy(&md->mu);
    vg__free(md);
}
void vg_run_metadata_clear(vg_run_metadata *md) {
    if (!md) return;
    md->n = 0;
    md->partition_graphs = 0;
}
int vg_run_metadata_num_nodes(const vg_run_metadata *md) { return md ? md->n : 0; }
const vg_node_stats *vg_run_metadata_node(const vg_run_metadata *md, int i) {
    return (md && i >= 0 && i < md->n) ? &md->nodes[i] : NULL;
}
int vg_run_metadata_num_partition_graphs(const vg_run_metadata *md) { return md ? md->partition_graphs : 0; }
