/*
 * sync_replicas_hook.c - TF's _SyncReplicasOptimizerHook for the backup-worker
 * SyncReplicasOptimizer (src/train/sync_replicas.c): after each session creation every
 * rank takes the chief's variables (the broadcast hook's op), and end() runs the
 * optimizer's finish protocol so that no message is left in flight.
 */
#include "hooks_internal.h"
#include "vigil/distributed.h"

typedef struct sr_hook {
    vg_sync_replicas_optimizer *s;
    vg_hook bcast;
} sr_hook;

static vg_code sr_begin(void *payload, vg_graph *g, vg_status *st) {
    sr_hook *h = payload;
    if (!vg_sync_replicas_optimizer_applied(h->s))
        return vg_status_set(st, VG_FAILED_PRECONDITION,
                             "SyncReplicasOptimizer.apply_gradient should be called before using the hook.");
    return h->bcast.begin(h->bcast.payload, g, st);
}

static vg_code sr_after_create(void *payload, vg_session *sess, vg_coord *coord, vg_status *st) {
    sr_hook *h = payload;
    return h->bcast.after_create_session(h->bcast.payload, sess, coord, st);
}

static vg_code sr_end(void *payload, vg_session *sess, vg_status *st) {
    (void)sess;
    sr_hook *h = payload;
    return vg_sync_replicas_optimizer_finish(h->s, st);
}

static void sr_destroy(void *payload) {
    sr_hook *h = payload;
    if (h->bcast.destroy) h->bcast.destroy(h->bcast.payload);
    vg_free(h);
}

vg_code vg_sync_replicas_optimizer_make_session_run_hook(vg_sync_replicas_optimizer *s, bool is_chief, int num_tokens,
                                                         vg_hook *out, vg_status *st) {
    if (!s || !out) return vg_status_set(st, VG_INVALID_ARGUMENT, "make_session_run_hook: NULL argument");
    if (num_tokens < -1) return vg_status_set(st, VG_INVALID_ARGUMENT, "make_session_run_hook: num_tokens %d < -1", num_tokens);
    if (is_chief != (vg_dist_rank() == 0))
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "make_session_run_hook: is_chief=%s on rank %d: the chief is rank 0 (it holds the "
                             "accumulators)", is_chief ? "true" : "false", vg_dist_rank());
    sr_hook *h = vg_calloc(1, sizeof *h);
    if (!h) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in SyncReplicasOptimizerHook");
    h->s = s;
    if (vg_broadcast_global_variables_hook(0, &h->bcast, st) != VG_OK) {
        vg_free(h);
        return st->code;
    }
    *out = vg__hk_make("SyncReplicasOptimizerHook", h, sr_destroy);
    vg__hk_callbacks(out, sr_begin, sr_after_create, NULL, NULL, sr_end);
    return VG_OK;
}
