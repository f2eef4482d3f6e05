/* step_fn.c - the seed's run_step_fn example in C: placeholder c, v = c + 4,
 * w = c + 0.5. The step function runs v on the raw session with c = 0.5; since the
 * result is <= 4.5 it requests a stop and returns run_with_hooks(w, c = 0.1).
 * Prints "result=0.6 iterations=1 hook_runs=1" and exits 0 when that is what happened. */
#include "vigil/vigil.h"
#include <stdio.h>

typedef struct ctx {
    vg_output c, v, w;
    double result;
} ctx;

static int hook_runs;
static vg_code count_after(void *p, vg_run_context *rc, const vg_run_values *v, vg_status *st) {
    hook_runs++;
    return VG_OK;
}

static vg_code step_fn(vg_step_context *sc, void *payload, vg_status *st) {
    ctx *x = payload;
    vg_tensor *half = vg_tensor_new_scalar_f32(0.5f, st), *out = NULL;
    vg_code rc = vg_session_run(vg_step_context_session(sc), NULL, &x->c, &half, 1, &x->v, &out, 1, NULL, 0,
                                NULL, st);
    vg_tensor_free(half);
    if (rc != VG_OK) return rc;
    double v = vg_tensor_scalar(out);
    vg_tensor_free(out);
    if (v > 4.5) return VG_OK;
    vg_tensor *tenth = vg_tensor_new_scalar_f32(0.1f, st);
    vg_run_args a = {0};
    a.fetches = &x->w; a.nfetches = 1; a.feeds = &x->c; a.feed_values = &tenth; a.nfeeds = 1;
    rc = vg_step_context_run_with_hooks(sc, &a, &out, NULL, st);
    vg_tensor_free(tenth);
    if (rc != VG_OK) return rc;
    x->result = vg_tensor_scalar(out);
    vg_tensor_free(out);
    return vg_step_context_request_stop(sc, st);
}

int main(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    ctx x;
    x.c = vg_placeholder(g, VG_FLOAT, NULL, 0, "c");
    x.v = vg_add(g, x.c, vg_const_f32(g, 4.0f, NULL), "v");
    x.w = vg_add(g, x.c, vg_const_f32(g, 0.5f, NULL), "w");
    x.result = -1;
    vg_hook counter = {"counter", NULL, NULL, NULL, count_after, NULL, NULL, NULL};
    vg_singular_options o = {0};
    o.hooks = &counter; o.nhooks = 1;
    vg_monitored_session *ms = vg_singular_monitored_session_new(g, &o, &st);
    if (!ms) { fprintf(stderr, "%s\n", st.msg); return 1; }
    int iterations = 0;
    vg_code rc = VG_OK;
    while (rc == VG_OK && !vg_monitored_session_should_stop(ms)) {
        rc = vg_monitored_session_run_step_fn(ms, step_fn, &x, &st);
        iterations++;
    }
    rc = vg_monitored_session_end(ms, rc, &st); /* swallows the step function's stop request */
    vg_monitored_session_free(ms);
    vg_graph_free(g);
    printf("result=%.6g iterations=%d hook_runs=%d\n", x.result, iterations, hook_runs);
    return rc == VG_OK && x.result > 0.5999 && x.result < 0.6001 && iterations == 1 && hook_runs == 1 ? 0 : 1;
}
