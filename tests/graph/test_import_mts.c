/* test_import_mts.c - an imported MetaGraphDef trained under MonitoredTrainingSession
 * (TF: import_meta_graph then MonitoredTrainingSession, whose Scaffold finds the
 * global step, variables, summaries through the collections): trains, checkpoints,
 * and a second run over a fresh import resumes from the checkpoint. */
#include "test_util.h"
#include "graph_fixture.h"
#include "vigil/vigil.h"
#include <unistd.h>

static vg_tensor *f32(const float *v, int64_t n) {
    vg_status st;
    int64_t d[2] = {n, 1};
    return vg_tensor_new_copy(VG_FLOAT, d, 2, v, (size_t)n * 4, &st);
}

/* y = 0.1 x + 0.3 regression, exported as a MetaGraphDef (no saver: the Scaffold makes one). */
static void export_model(void **meta, size_t *len) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    linreg_model lr = linreg_model_build(g, 5);
    vg_summary_scalar(g, "loss", lr.loss);
    vg_optimizer *opt = vg_optimizer_new_sgd(0.5);
    vg_optimizer_minimize(opt, g, lr.loss, NULL, 0, lr.gs, "train");
    vg_optimizer_free(opt);
    CHECK_OK(vg_graph_to_meta_graph(g, NULL, meta, len, &st), &st);
    vg_graph_free(g);
}

/* Imports meta, runs `steps` train steps under MTS; returns the final global step and loss. */
static int64_t run_mts(const void *meta, size_t len, const char *dir, int steps, double *loss_out) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    CHECK_OK(vg_import_meta_graph(g, meta, len, NULL, NULL, &st), &st);
    int ntr = 0;
    const vg_output *tr = vg_graph_collection(g, VG_TRAIN_OP, &ntr);
    CHECK_EQ_INT(ntr, 1);
    vg_mts_options o = {0};
    o.checkpoint_dir = dir;
    o.no_step_counter = true;
    vg_monitored_session *ms = vg_monitored_training_session_new(g, &o, &st);
    CHECK(ms != NULL);
    int64_t step = -1;
    if (ms && ntr == 1) {
        float xv[8], yv[8];
        for (int i = 0; i < 8; i++) {
            xv[i] = (float)i / 4.0f - 1.0f;
            yv[i] = 0.1f * xv[i] + 0.3f;
        }
        vg_tensor *fv[2] = {f32(xv, 8), f32(yv, 8)};
        vg_output feeds[2] = {vg_graph_output_by_name(g, "x", &st), vg_graph_output_by_name(g, "y", &st)};
        vg_output fetch[2] = {vg_graph_output_by_name(g, "loss", &st), vg_get_global_step(g)};
        vg_op *top = tr[0].op;
        vg_run_args args = {.fetches = fetch, .nfetches = 2, .feeds = feeds, .feed_values = fv, .nfeeds = 2,
                            .targets = &top, .ntargets = 1};
        vg_code rc = VG_OK;
        for (int i = 0; i < steps && rc == VG_OK && !vg_monitored_session_should_stop(ms); i++) {
            vg_tensor *out[2] = {NULL, NULL};
            rc = vg_monitored_session_run(ms, &args, out, NULL, &st);
            CHECK_OK(rc, &st);
            if (out[0]) *loss_out = vg_tensor_scalar(out[0]);
            if (out[1]) step = *(const int64_t *)vg_tensor_data(out[1]) + 1; /* fetched before the increment */
            vg_tensor_free(out[0]);
            vg_tensor_free(out[1]);
        }
        CHECK_OK(vg_monitored_session_close(ms, &st), &st);
        vg_tensor_free(fv[0]);
        vg_tensor_free(fv[1]);
    }
    vg_monitored_session_free(ms);
    vg_graph_free(g);
    return step;
}

static void test_mts_over_imported_meta_graph(void) {
    void *meta = NULL;
    size_t len = 0;
    export_model(&meta, &len);
    char dir[64];
    CHECK(tu_mkdtemp(dir, sizeof dir, "import_mts")[0] != 0);
    double loss1 = -1, loss2 = -1;
    CHECK_EQ_INT(run_mts(meta, len, dir, 10, &loss1), 10);
    char buf[512];
    CHECK(vg_latest_checkpoint(dir, buf, sizeof buf) != NULL); /* saved at the end */
    CHECK_STR_CONTAINS(buf, "model.ckpt-10");
    /* a fresh import resumes from the checkpoint: the global step continues */
    CHECK_EQ_INT(run_mts(meta, len, dir, 5, &loss2), 15);
    CHECK(loss2 < loss1);
    CHECK(vg_latest_checkpoint(dir, buf, sizeof buf) != NULL);
    CHECK_STR_CONTAINS(buf, "model.ckpt-15");
    CHECK(tu_rmrf(dir) == 0);
    vg_free(meta);
}

int main(void) {
    RUN_TEST(test_mts_over_imported_meta_graph);
    TEST_MAIN_END();
}
