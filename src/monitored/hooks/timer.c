/* timer.c - SecondOrStepTimer, the hooks' clock, the global-step read tensor and small
 * helpers shared by the standard hooks. */
#include "hooks_internal.h"
#include <time.h>

static double default_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
static double (*g_now)(void) = default_now;

void vg_hooks_set_clock(double (*now)(void)) { g_now = now ? now : default_now; }
double vg_hooks_now(void) { return g_now(); }

void vg_hook_free(vg_hook *h) {
    if (!h) return;
    if (h->destroy) h->destroy(h->payload);
    memset(h, 0, sizeof *h);
}

vg_code vg_timer_init(vg_timer *t, double every_secs, int64_t every_steps, vg_status *st) {
    bool secs = every_secs > 0, steps = every_steps > 0;
    if (!t) return vg_status_set(st, VG_INVALID_ARGUMENT, "timer is NULL");
    if (secs && steps)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Can not provide both every_secs and every_steps.");
    if (!secs && !steps)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Either every_secs or every_steps should be provided.");
    t->every_secs = secs ? every_secs : 0;
    t->every_steps = steps ? every_steps : 0;
    vg_timer_reset(t);
    return VG_OK;
}

void vg_timer_reset(vg_timer *t) {
    if (!t) return;
    t->last_triggered_time = 0;
    t->last_triggered_step = -1;
}

/* Whether the default clock surely has not reached `deadline` yet, read from the coarse
 * clock (a few ns where CLOCK_MONOTONIC costs ~100 ns under a hypervisor's clock
 * source): CLOCK_MONOTONIC_COARSE is the same clock at tick resolution, behind the
 * precise one by less than a tick (<= 10 ms), so coarse + 50 ms < deadline proves the
 * precise time is before the deadline. A timer checked every step (CheckpointSaverHook
 * every 600 s) then reads the precise clock only near its deadline. */
static bool surely_before(double deadline) {
#ifdef CLOCK_MONOTONIC_COARSE
    if (g_now != default_now) return false; /* a test clock: always ask it */
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0) return false;
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9 + 0.05 < deadline;
#else
    (void)deadline;
    return false;
#endif
}

bool vg_timer_should_trigger_for_step(const vg_timer *t, int64_t step) {
    if (!t) return false;
    if (t->last_triggered_step < 0) return true;
    if (step == t->last_triggered_step) return false;
    if (t->every_secs > 0 && !surely_before(t->last_triggered_time + t->every_secs) &&
        vg_hooks_now() >= t->last_triggered_time + t->every_secs)
        return true;
    if (t->every_steps > 0 && step >= t->last_triggered_step + t->every_steps) return true;
    return false;
}

void vg_timer_update_last_triggered_step(vg_timer *t, int64_t step, double *elapsed_secs, int64_t *elapsed_steps) {
    if (!t) return;
    double now = vg_hooks_now();
    double es = 0;
    int64_t en = 0;
    if (t->last_triggered_step >= 0) {
        es = now - t->last_triggered_time;
        en = step - t->last_triggered_step;
    }
    if (elapsed_secs) *elapsed_secs = es;
    if (elapsed_steps) *elapsed_steps = en;
    t->last_triggered_time = now;
    t->last_triggered_step = step;
}

int64_t vg_timer_last_triggered_step(const vg_timer *t) { return t ? t->last_triggered_step : -1; }

#define READ_KEY "global_step_read_op_cache"

vg_code vg__global_step_read(vg_graph *g, const char *hook, vg_output *out, vg_status *st) {
    int n;
    const vg_output *items = vg_graph_collection(g, READ_KEY, &n);
    if (n > 1) return vg_status_set(st, VG_FAILED_PRECONDITION, "There are multiple items in collection " READ_KEY
                                                                ". There should be only one.");
    if (n == 1) { *out = items[0]; return VG_OK; }
    vg_output gs = vg_get_global_step(g);
    if (!gs.op) return vg_status_set(st, VG_FAILED_PRECONDITION, "Global step should be created to use %s.", hook);
    char scope[1100];
    snprintf(scope, sizeof scope, "%s/", vg_op_name(gs.op));
    /* a zero of the step's own dtype: TF accepts any integer global step (vigil has
     * int32 and int64) */
    vg_dtype dt = vg_output_dtype(gs);
    if (dt != VG_INT64 && dt != VG_INT32)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Existing \"global_step\" does not have integer type: %s",
                             vg_dtype_name(dt));
    vg_graph_push_scope(g, scope);
    *out = vg_add(g, gs, vg_const_fill(g, dt, NULL, 0, 0.0, "add/y"), "add");
    vg_graph_pop_scope(g);
    if (vg_graph_status(g, st) != VG_OK) return st ? st->code : VG_INTERNAL;
    vg_graph_add_to_collection(g, READ_KEY, *out);
    return VG_OK;
}

int64_t vg__tensor_i64(const vg_tensor *t) {
    if (!t) return 0;
    switch (vg_tensor_dtype(t)) {
    case VG_INT64: return *(const int64_t *)vg_tensor_data(t);
    case VG_INT32: return *(const int32_t *)vg_tensor_data(t);
    default: return (int64_t)vg_tensor_scalar(t);
    }
}

vg_code vg__global_step_value(vg_session *sess, vg_graph *g, int64_t *step, vg_status *st) {
    vg_output gs = vg_get_global_step(g);
    if (!gs.op) return vg_status_set(st, VG_FAILED_PRECONDITION, "the graph has no global step");
    vg_tensor *t = NULL;
    vg_code rc = vg_session_run1(sess, gs, &t, st);
    if (rc == VG_OK) *step = vg__tensor_i64(t);
    vg_tensor_free(t);
    return rc;
}

vg_code vg__hk_step_trigger(vg_timer *t, int64_t stale, int64_t steps_per_run, vg_run_context *ctx, vg_graph *g,
                            int64_t *step, bool *fire, vg_status *st) {
    *fire = false;
    if (!vg_timer_should_trigger_for_step(t, stale + steps_per_run)) return VG_OK;
    vg_code rc = vg__global_step_value(vg_run_context_session(ctx), g, step, st);
    if (rc == VG_OK) *fire = vg_timer_should_trigger_for_step(t, *step);
    return rc;
}

char *vg__hk_strdup(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = vg_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

vg_hook vg__hk_make(const char *name, void *payload, void (*destroy)(void *)) {
    vg_hook h;
    memset(&h, 0, sizeof h);
    h.name = name;
    h.payload = payload;
    h.destroy = destroy;
    return h;
}

void *vg__hk_new(vg_hook *out, const char *name, size_t size, void (*destroy)(void *), vg_status *st) {
    void *p = vg_calloc(1, size);
    if (!p) {
        vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    *out = vg__hk_make(name, p, destroy);
    return p;
}
