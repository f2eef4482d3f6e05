/*
 * queue_runner.c - tf.train.QueueRunner, add_queue_runner and start_queue_runners.
 *
 * A runner (a vg_queue_runner_def of the graph) started on a session gets one thread
 * per enqueue op and one "close on stop" thread, all registered with the coordinator:
 *  - an enqueue thread runs its op until the coordinator says stop. OUT_OF_RANGE (the
 *    input is exhausted) ends the thread quietly; the last enqueue thread of the
 *    runner to end that way runs the close op (errors ignored), so consumers drain
 *    the queue and then get OUT_OF_RANGE. Any other error is reported to the
 *    coordinator (vg_coord_request_stop with it; after a stop request that is a
 *    no-op, which is how the CANCELLED of a cancelled enqueue stays quiet). When the
 *    session was closed under the thread (CANCELLED / FAILED_PRECONDITION) the thread
 *    requests a plain stop instead, so the close-on-stop thread and join finish.
 *  - the close-on-stop thread waits for the stop request and runs the cancel op
 *    (close with cancel_pending_enqueues), which wakes enqueues blocked on a full
 *    queue. Errors are ignored.
 * As in TF, starting the runners again on a session whose threads of that runner are
 * still running starts nothing for that runner.
 */
#include "train_util.h"
#include "vigil/queue.h"
#include <pthread.h>
#include <stdio.h>

typedef struct runner {
    struct runner *next;     /* in the active list while live > 0 */
    vg_session *sess;
    vg_queue_runner_def def; /* copied: the graph's array may move when runners are added */
    int live;                /* enqueue threads still running (g_mu) */
    int refs;                /* threads holding the struct (g_mu) */
} runner;

typedef struct enq_arg {
    runner *r;
    vg_op *op;
} enq_arg;

/* Active (session, runner) pairs: TF's _runs_per_session. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static runner *g_active;

static void unlink_active(runner *r) {
    for (runner **p = &g_active; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            return;
        }
}

/* Drops one enqueue thread from the live count; true for the last one. */
static bool live_dec(runner *r) {
    pthread_mutex_lock(&g_mu);
    bool last = --r->live == 0;
    if (last) unlink_active(r);
    pthread_mutex_unlock(&g_mu);
    return last;
}

static void runner_unref(runner *r) {
    pthread_mutex_lock(&g_mu);
    bool last = --r->refs == 0;
    pthread_mutex_unlock(&g_mu);
    if (last) vg_free(r);
}

static void enqueue_main(vg_coord *c, void *payload) {
    enq_arg *a = payload;
    runner *r = a->r;
    vg_op *op = a->op;
    vg_free(a);
    bool counted = false;
    vg_status st;
    while (!vg_coord_should_stop(c)) {
        vg_code rc = vg_session_run_targets(r->sess, &op, 1, &st);
        if (rc == VG_OK) continue;
        if (rc == VG_OUT_OF_RANGE) {
            counted = true;
            if (live_dec(r) && r->def.close_op) {
                vg_status ignored;
                vg_session_run_targets(r->sess, &r->def.close_op, 1, &ignored);
            }
            break;
        }
        if (vg_session_closed(r->sess) && (rc == VG_CANCELLED || rc == VG_FAILED_PRECONDITION)) {
            vg_coord_request_stop(c, NULL);
            break;
        }
        vg_coord_request_stop(c, &st);
        break;
    }
    if (!counted) live_dec(r);
    runner_unref(r);
}

static void close_on_stop_main(vg_coord *c, void *payload) {
    runner *r = payload;
    vg_coord_wait_for_stop(c, -1);
    if (r->def.cancel_op && !vg_session_closed(r->sess)) {
        vg_status ignored;
        vg_session_run_targets(r->sess, &r->def.cancel_op, 1, &ignored);
    }
    runner_unref(r);
}

vg_code vg_add_queue_runner(vg_graph *g, vg_output queue, vg_op *const *enqueue_ops, int n) {
    /* A NULL op normally means an earlier builder failed (the graph has the error). */
    bool missing = !queue.op || n < 1 || !enqueue_ops;
    for (int i = 0; !missing && i < n; i++) missing = !enqueue_ops[i];
    if (missing) {
        vg_code rc = vg_graph_status(g, NULL);
        return rc ? rc : vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Must provide queue and enqueue_ops.");
    }
    /* TF names both "<queue>_Close"; the second becomes "<queue>_Close_1". */
    const char *qn = vg_op_name(queue.op), *slash = strrchr(qn, '/');
    char name[512];
    snprintf(name, sizeof name, "%s_Close", slash ? slash + 1 : qn);
    vg_op *close_op = vg_queue_close(g, queue, false, name);
    vg_op *cancel_op = vg_queue_close(g, queue, true, name);
    if (!close_op || !cancel_op) return vg_graph_status(g, NULL);
    vg_queue_runner_def def = {queue.op, enqueue_ops, n, close_op, cancel_op};
    return vg_graph_add_queue_runner(g, &def);
}

/* Starts the threads of one runner. */
static vg_code start_runner(vg_session *sess, vg_coord *coord, const vg_queue_runner_def *def, vg_status *st) {
    pthread_mutex_lock(&g_mu);
    for (runner *a = g_active; a; a = a->next)
        if (a->sess == sess && a->def.queue == def->queue && a->def.close_op == def->close_op) {
            pthread_mutex_unlock(&g_mu);
            return VG_OK; /* still running on this session */
        }
    runner *r = vg_calloc(1, sizeof *r);
    if (!r) {
        pthread_mutex_unlock(&g_mu);
        return VG_OOM(st, "queue runner");
    }
    r->sess = sess;
    r->def = *def;
    r->live = def->n_enqueue;
    r->refs = def->n_enqueue + 1 + 1; /* threads + this function */
    r->next = g_active;
    g_active = r;
    pthread_mutex_unlock(&g_mu);

    vg_code rc = VG_OK;
    char name[512];
    const char *qn = vg_op_name(def->queue);
    int started = 0;
    for (int i = 0; i < def->n_enqueue && rc == VG_OK; i++) {
        enq_arg *a = vg_malloc(sizeof *a);
        if (!a) {
            rc = VG_OOM(st, "queue runner thread");
            break;
        }
        a->r = r;
        a->op = def->enqueue_ops[i];
        snprintf(name, sizeof name, "QueueRunnerThread-%s-%s", qn, vg_op_name(a->op));
        rc = vg_coord_start_thread(coord, name, enqueue_main, a, st);
        if (rc != VG_OK) vg_free(a);
        else started++;
    }
    /* Account for enqueue threads that never started. */
    for (int i = started; i < def->n_enqueue; i++) {
        live_dec(r);
        runner_unref(r);
    }
    snprintf(name, sizeof name, "QueueRunnerThread-%s-close_on_stop", qn);
    if (rc == VG_OK) rc = vg_coord_start_thread(coord, name, close_on_stop_main, r, st);
    if (rc != VG_OK) runner_unref(r); /* the close-on-stop thread's reference */
    runner_unref(r);
    return rc;
}

vg_code vg_start_queue_runners(vg_session *sess, vg_coord *coord, vg_status *st) {
    if (!sess || !coord)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_start_queue_runners: NULL session or coordinator");
    vg_graph *g = vg_session_graph(sess);
    int n = vg_graph_num_queue_runners(g);
    for (int i = 0; i < n; i++) {
        vg_code rc = start_runner(sess, coord, vg_graph_queue_runner(g, i), st);
        if (rc != VG_OK) return rc;
    }
    vg_status_clear(st);
    return VG_OK;
}
