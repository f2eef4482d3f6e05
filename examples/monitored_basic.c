/* monitored_basic.c - the seed's first example in C: a SingularMonitoredSession with a
 * CheckpointSaverHook and a SummarySaverHook, looping `while (!should_stop) run(train_op)`
 * on a linear regression fitted to synthetic data fed by a FeedFnHook.
 *
 * Usage: monitored_basic <checkpoint_dir> [steps=200]
 * Prints the final loss and global step; exits 0 when the loss fell below 0.01. Run it
 * twice on the same directory: the second run resumes from the checkpoint. */
#include "vigil/vigil.h"
#include <stdio.h>
#include <stdlib.h>

typedef struct feeder {
    vg_output feeds[2];
    vg_tensor *vals[2];
    unsigned seed;
} feeder;

/* y = 3x + 2 + noise, batch of 32 */
static vg_code next_batch(void *p, const vg_output **feeds, vg_tensor *const **values, int *n, vg_status *st) {
    feeder *f = p;
    float *x = vg_tensor_data(f->vals[0]), *y = vg_tensor_data(f->vals[1]);
    for (int i = 0; i < 32; i++) {
        x[i] = (float)rand_r(&f->seed) / RAND_MAX * 2 - 1;
        y[i] = 3 * x[i] + 2 + ((float)rand_r(&f->seed) / RAND_MAX - 0.5f) * 0.01f;
    }
    *feeds = f->feeds;
    *values = f->vals;
    *n = 2;
    return VG_OK;
}

static void log_to_stderr(void *p, vg_log_level level, const char *msg) { fprintf(stderr, "%s\n", msg); }

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: monitored_basic <checkpoint_dir> [steps]\n");
        return 2;
    }
    int64_t steps = argc > 2 ? atoll(argv[2]) : 200;
    vg_log_set(log_to_stderr, NULL, VG_LOG_WARN);
    vg_status st;
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {32, 1};
    vg_output x = vg_placeholder(g, VG_FLOAT, d, 2, "x"), y = vg_placeholder(g, VG_FLOAT, d, 2, "y");
    vg_output pred = vg_layers_dense(g, x, 1, VG_ACT_NONE, NULL);
    vg_output loss = vg_reduce_mean(g, vg_square(g, vg_sub(g, pred, y, NULL), NULL), NULL, -1, false, "loss");
    vg_summary_scalar(g, "loss", loss);
    vg_output gs = vg_get_or_create_global_step(g);
    vg_optimizer *opt = vg_optimizer_new_sgd(0.1);
    vg_op *train_op = vg_optimizer_minimize(opt, g, loss, NULL, 0, gs, NULL);
    if (vg_graph_status(g, &st)) { fprintf(stderr, "graph: %s\n", st.msg); return 1; }

    feeder f = {{x, y}, {vg_tensor_new(VG_FLOAT, d, 2, &st), vg_tensor_new(VG_FLOAT, d, 2, &st)}, 7};
    vg_scaffold *scaffold = vg_scaffold_new(NULL);
    vg_hook hooks[4];
    vg_checkpoint_saver_options co = {0};
    co.checkpoint_dir = argv[1]; co.save_steps = 50; co.scaffold = scaffold;
    vg_summary_saver_options so = {0};
    so.save_steps = 10; so.output_dir = argv[1]; so.scaffold = scaffold;
    if (vg_checkpoint_saver_hook(&co, &hooks[0], &st) || vg_summary_saver_hook(&so, &hooks[1], &st) ||
        vg_feed_fn_hook(next_batch, &f, &hooks[2], &st) || vg_stop_at_step_hook(steps, -1, &hooks[3], &st)) {
        fprintf(stderr, "hooks: %s\n", st.msg);
        return 1;
    }
    vg_singular_options o = {0};
    o.hooks = hooks; o.nhooks = 4; o.scaffold = scaffold; o.checkpoint_dir = argv[1];
    vg_monitored_session *ms = vg_singular_monitored_session_new(g, &o, &st);
    if (!ms) { fprintf(stderr, "session: %s\n", st.msg); return 1; }
    vg_run_args a = {0};
    vg_output fetches[2] = {loss, gs};
    vg_tensor *out[2] = {NULL, NULL};
    double last_loss = -1;
    int64_t last_step = -1;
    a.fetches = fetches; a.nfetches = 2; a.targets = &train_op; a.ntargets = 1;
    vg_code rc = VG_OK;
    while (rc == VG_OK && !vg_monitored_session_should_stop(ms)) {
        rc = vg_monitored_session_run(ms, &a, out, NULL, &st);
        if (rc == VG_OK) {
            last_loss = vg_tensor_scalar(out[0]);
            last_step = (int64_t)vg_tensor_scalar(out[1]);
            vg_tensor_free(out[0]);
            vg_tensor_free(out[1]);
        }
    }
    rc = vg_monitored_session_end(ms, rc, &st);
    vg_monitored_session_free(ms);
    if (rc != VG_OK) fprintf(stderr, "training: %s: %s\n", vg_code_name(rc), st.msg);
    printf("final_step=%lld loss=%.6f\n", (long long)last_step + 1, last_loss);
    vg_scaffold_free(scaffold);
    vg_optimizer_free(opt);
    vg_tensor_free(f.vals[0]);
    vg_tensor_free(f.vals[1]);
    vg_file_writer_cache_clear();
    vg_graph_free(g);
    return rc == VG_OK && last_loss >= 0 && last_loss < 0.01 ? 0 : 1;
}
