/* test_options_zero.c - a zero-initialised options struct means TensorFlow 1.15's
 * defaults (docs/conventions.md, "Option structs"; issue 32 item 2). Each test builds the
 * object from `{0}` and observes TF's default where it shows: the hooks and periods of
 * MonitoredTrainingSession(), Saver(max_to_keep=5, write_meta_graph=True, name "save"),
 * CheckpointSaverHook's "model.ckpt" and graph.pbtxt, StepCounterHook's 100 steps,
 * SessionManager's 30 s recovery wait and 7200 s max wait, FileWriter's max_queue 10,
 * WorkerSessionCreator's 1800 s, tf.layers' per-class defaults (glorot_uniform kernel,
 * zeros bias, use_bias, trainable; batch_normalization's 0.99 / 0.001 / ones / zeros;
 * pooling strides = pool_size; dropout 0.5), hvd.DistributedOptimizer's mean in 64 MB
 * buckets, slim.learning.train's intervals; and that the explicit "off" flags turn
 * things off. */
#include "test_util.h"
#include "status_fixture.h"
#include "train_fixture.h"
#include "hook_test_util.h"
#include "session_test_util.h"
#include "monitored/monitored_internal.h"

typedef struct mts_seen {
    int nsummary, nstep_counter, nckpt_files;
    int64_t summary_steps[8], counter_steps[8];
    bool ckpt0, ckpt_last, graph_pbtxt;
} mts_seen;

/* 1 + 201 train steps on a mocked clock that moves 0.01 s per step (2 s in all, far
 * below 600 s), then end(); what the default hooks left in dir. */
static void run_mts(vg_mts_options o, mts_seen *seen) {
    vg_status st;
    char dir[64];
    memset(seen, 0, sizeof *seen);
    ht_begin_dir(dir, sizeof dir, "optz");
    ht_model m = ht_model_make();
    ht_user_summary(&m);
    o.checkpoint_dir = dir;
    vg_monitored_session *ms = vg_monitored_training_session_new(m.g, &o, &st);
    CHECK_OK(ms ? VG_OK : st.code, &st);
    if (ms) {
        for (int i = 0; i < 202; i++) {
            CHECK_OK(ht_run_train(ms, &m, &st), &st);
            ht_now_value += 0.01;
        }
        ht_events *e = ht_end_events_of(ms, dir);
        seen->nsummary = ht_steps_of(e, "my_summary_tag", seen->summary_steps, NULL, 8);
        seen->nstep_counter = ht_steps_of(e, "global_step/sec", seen->counter_steps, NULL, 8);
        free(e);
        seen->nckpt_files = ht_count_files(dir, "model.ckpt-", ".index");
        seen->ckpt0 = ht_exists(dir, "model.ckpt-0.index");
        seen->ckpt_last = ht_exists(dir, "model.ckpt-202.index");
        seen->graph_pbtxt = ht_exists(dir, "graph.pbtxt");
    }
    vg_graph_free(m.g);
    ht_end_dir(dir);
}

/* MonitoredTrainingSession() with no arguments: StepCounterHook every 100 steps,
 * SummarySaverHook every 100 steps (first at step 1), CheckpointSaverHook every 600 s
 * (saves after session creation and at end only, here) with graph.pbtxt; the same as
 * the values spelled out. */
static void test_options_zero__mts_defaults(void) {
    mts_seen z, x;
    run_mts((vg_mts_options){0}, &z);
    CHECK_EQ_INT(z.nsummary, 3);
    if (z.nsummary == 3) {
        CHECK_EQ_INT(z.summary_steps[0], 1);
        CHECK_EQ_INT(z.summary_steps[1], 101);
        CHECK_EQ_INT(z.summary_steps[2], 201);
    }
    CHECK_EQ_INT(z.nstep_counter, 2); /* every 100 steps: 101 and 201 */
    if (z.nstep_counter == 2) {
        CHECK_EQ_INT(z.counter_steps[0], 101);
        CHECK_EQ_INT(z.counter_steps[1], 201);
    }
    CHECK_EQ_INT(z.nckpt_files, 2); /* 600 s never pass: step 0 and the end */
    CHECK(z.ckpt0 && z.ckpt_last);
    CHECK(z.graph_pbtxt);
    run_mts((vg_mts_options){.save_checkpoint_secs = 600, .save_summaries_steps = 100, .log_step_count_steps = 100,
                             .stop_grace_period_secs = 120, .max_wait_secs = 7200},
            &x);
    CHECK_EQ_INT(x.nsummary, z.nsummary);
    CHECK_EQ_INT(x.nstep_counter, z.nstep_counter);
    CHECK_EQ_INT(x.nckpt_files, z.nckpt_files);
    /* a checkpoint every 50 steps instead: USE_DEFAULT secs becomes None */
    run_mts((vg_mts_options){.save_checkpoint_steps = 50}, &x);
    CHECK_EQ_INT(x.nckpt_files, 5); /* 0, 50, 100, 150, 200 kept (max_to_keep 5); 202 at end drops 0 */
    CHECK(x.ckpt_last);
}

/* vg_mts_options {0} resolves to MonitoredTrainingSession()'s arguments: is_chief=True,
 * save_checkpoint_secs USE_DEFAULT -> 600 (steps None), save_summaries_steps USE_DEFAULT
 * -> 100 (secs None), log_step_count_steps=100, stop_grace_period_secs=120,
 * max_wait_secs=7200 (the worker's wait, too slow to observe). */
static void test_options_zero__mts_resolution(void) {
    vg__mts_resolved r;
    vg__resolve_mts_options(&(vg_mts_options){0}, &r);
    CHECK(r.is_chief);
    CHECK_NEAR(r.save_checkpoint_secs, 600, 0);
    CHECK_EQ_INT(r.save_checkpoint_steps, 0);
    CHECK_EQ_INT(r.save_summaries_steps, 100);
    CHECK_NEAR(r.save_summaries_secs, 0, 0);
    CHECK_EQ_INT(r.log_step_count_steps, 100);
    CHECK_NEAR(r.stop_grace_period_secs, 120, 0);
    CHECK_NEAR(r.max_wait_secs, 7200, 0);
    /* one frequency given: the other USE_DEFAULT becomes None */
    vg__resolve_mts_options(&(vg_mts_options){.save_checkpoint_steps = 7, .save_summaries_secs = 2.5}, &r);
    CHECK_NEAR(r.save_checkpoint_secs, 0, 0);
    CHECK_EQ_INT(r.save_checkpoint_steps, 7);
    CHECK_EQ_INT(r.save_summaries_steps, 0);
    CHECK_NEAR(r.save_summaries_secs, 2.5, 0);
    vg__resolve_mts_options(&(vg_mts_options){.not_chief = true, .no_checkpoints = true, .no_summaries = true,
                                              .no_step_counter = true, .save_checkpoint_secs = 5},
                            &r);
    CHECK(!r.is_chief);
    CHECK(r.save_checkpoint_secs == 0 && r.save_checkpoint_steps == 0);
    CHECK(r.save_summaries_secs == 0 && r.save_summaries_steps == 0);
    CHECK_EQ_INT(r.log_step_count_steps, 0);
}

/* The "off" flags: TF's None for both frequencies of a hook, log_step_count_steps=None. */
static void test_options_zero__mts_off_flags(void) {
    mts_seen s;
    run_mts((vg_mts_options){.no_checkpoints = true}, &s);
    CHECK_EQ_INT(s.nckpt_files, 0);
    CHECK(!s.graph_pbtxt);
    CHECK_EQ_INT(s.nsummary, 3);
    run_mts((vg_mts_options){.no_summaries = true}, &s);
    CHECK_EQ_INT(s.nsummary, 0);
    CHECK_EQ_INT(s.nstep_counter, 2);
    CHECK_EQ_INT(s.nckpt_files, 2);
    run_mts((vg_mts_options){.no_step_counter = true}, &s);
    CHECK_EQ_INT(s.nstep_counter, 0);
    CHECK_EQ_INT(s.nsummary, 3);
    /* not_chief (is_chief=False) with a chief-only hook: the hook is destroyed unused */
    vg_status st;
    ht_model m = ht_model_make();
    vg_monitored_session *ms = vg_monitored_training_session_new(
        m.g, &(vg_mts_options){.not_chief = true, .max_wait_secs = 0.2}, &st);
    /* a worker waits for a chief that never initialises: DEADLINE_EXCEEDED after 0.2 s */
    CHECK(ms == NULL);
    CHECK_EQ_INT(st.code, VG_DEADLINE_EXCEEDED);
    vg_graph_free(m.g);
}

/* Saver(): max_to_keep=5, the .meta written, ops under "save/"; keep_all_checkpoints is
 * max_to_keep=None. */
static void test_options_zero__saver(void) {
    vg_status st;
    char dir[64], prefix[128], p[200];
    tu_mkdtemp(dir, sizeof dir, "optz");
    snprintf(prefix, sizeof prefix, "%s/m", dir);
    for (int keep_all = 0; keep_all < 2; keep_all++) {
        vg_graph *g = vg_graph_new();
        vg_get_variable(g, "v", VG_FLOAT, NULL, 0, vg_init_zeros(), 0);
        vg_op *init = vg_global_variables_initializer(g);
        vg_saver *s = vg_saver_new(g, &(vg_saver_options){.keep_all_checkpoints = keep_all}, &st);
        CHECK(s != NULL);
        if (!s) return;
        CHECK(vg_graph_op_by_name(g, "save/restore_all") == vg_saver_restore_op(s));
        vg_session *sess = vg_session_new(g, NULL, &st);
        CHECK_OK(vg_session_run_targets(sess, &init, 1, &st), &st);
        for (int step = 1; step <= 7; step++)
            CHECK_OK(vg_saver_save(s, sess, prefix, step, p, sizeof p, &st), &st);
        CHECK_EQ_INT(vg_saver_num_last_checkpoints(s), keep_all ? 0 : 5);
        for (int step = 1; step <= 7; step++) {
            snprintf(p, sizeof p, "m-%d.index", step);
            CHECK(ht_exists(dir, p) == (keep_all || step > 2));
            snprintf(p, sizeof p, "m-%d.meta", step);
            CHECK(ht_exists(dir, p) == (keep_all || step > 2));
        }
        free_session_saver_graph(sess, s, g);
        tu_rmrf(dir);
        tu_mkdtemp(dir, sizeof dir, "optz");
        snprintf(prefix, sizeof prefix, "%s/m", dir);
    }
    tu_rmrf(dir);
}

/* CheckpointSaverHook(dir, save_steps=1): "model.ckpt" and graph.pbtxt (save_graph_def
 * True); no_save_graph_def drops graph.pbtxt. StepCounterHook(): every 100 steps. */
static void test_options_zero__hooks(void) {
    vg_status st;
    for (int no_graph = 0; no_graph < 2; no_graph++) {
        ht_fx f = ht_fx_make("optz", false);
        vg_hook h[2];
        CHECK_OK(vg_checkpoint_saver_hook(&(vg_checkpoint_saver_options){.checkpoint_dir = f.dir, .save_steps = 1,
                                                                         .scaffold = f.sc,
                                                                         .no_save_graph_def = no_graph},
                                          &h[0], &st),
                 &st);
        CHECK_OK(vg_step_counter_hook(&(vg_step_counter_options){.output_dir = f.dir}, &h[1], &st), &st);
        vg_monitored_session *ms = ht_singular(f.m.g, f.sc, NULL, h, 2, &st);
        if (!ms) return;
        for (int i = 0; i < 201; i++) CHECK_OK(ht_run_train(ms, &f.m, &st), &st);
        CHECK_OK(ht_end_free(ms, &st), &st);
        vg_scaffold_free(f.sc);
        vg_file_writer_cache_clear();
        CHECK(ht_exists(f.dir, "model.ckpt-201.index"));
        CHECK(ht_exists(f.dir, "graph.pbtxt") == !no_graph);
        ht_events *e = ht_events_of(f.dir);
        int64_t steps[8];
        int n = ht_steps_of(e, "global_step/sec", steps, NULL, 8);
        CHECK_EQ_INT(n, 2);
        if (n == 2) CHECK(steps[0] == 101 && steps[1] == 201);
        free(e);
        vg_graph_free(f.m.g);
        tu_rmrf(f.dir);
    }
    /* StepCounterHook(every_n_steps=None, every_n_secs=None): a negative every_n_steps */
    vg_hook h;
    CHECK_CODE(vg_step_counter_hook(&(vg_step_counter_options){.every_n_steps = -1}, &h, &st), VG_INVALID_ARGUMENT);
    /* CheckpointSaverHook / SummarySaverHook have no default frequency (TF: ValueError) */
    CHECK_CODE(vg_checkpoint_saver_hook(&(vg_checkpoint_saver_options){.checkpoint_dir = "/tmp"}, &h, &st),
               VG_INVALID_ARGUMENT);
}

/* SessionManager(): recovery_wait_secs 30 (a 10 s wait_for_session gives up at once, as
 * 10 - 30 < 0); prepare's max_wait_secs 7200 (named in the message). */
static void test_options_zero__session_manager(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_get_variable(g, "v", VG_FLOAT, NULL, 0, vg_init_zeros(), 0);
    vg_output ready = vg_report_uninitialized_variables(g, NULL, 0, NULL);
    vg_session_manager *sm = vg_session_manager_new(g, &(vg_session_manager_options){.ready_op = ready}, &st);
    double t0 = ht_wall();
    CHECK(vg_session_manager_wait_for_session(sm, &(vg_prepare_options){.max_wait_secs = 10}, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_DEADLINE_EXCEEDED);
    CHECK(ht_wall() - t0 < 5);
    vg_session_manager_free(sm);
    /* recovery_wait_secs 7201 > 7200: the default max wait gives up at once too */
    sm = vg_session_manager_new(g, &(vg_session_manager_options){.ready_op = ready, .recovery_wait_secs = 7201}, &st);
    CHECK(vg_session_manager_wait_for_session(sm, &(vg_prepare_options){0}, &st) == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_DEADLINE_EXCEEDED, "after waiting 7200 secs");
    vg_session_manager_free(sm);
    /* 7199 < 7200: it would wait; with 29 < 30 on a 30 s max wait, likewise. Not run. */
    vg_graph_free(g);
}

/* FileWriter(): max_queue 10 (the tenth event writes the queue), flush_secs 120, no
 * filename suffix. */
static void test_options_zero__file_writer(void) {
    vg_status st;
    char dir[64];
    tu_mkdtemp(dir, sizeof dir, "optz");
    vg_file_writer *w = vg_file_writer_new(dir, &(vg_file_writer_options){0}, &st);
    CHECK(w != NULL);
    if (!w) return;
    for (int i = 0; i < 9; i++) CHECK_OK(vg_file_writer_add_scalar(w, "x", (float)i, i, &st), &st);
    ht_events *e = ht_events_of(dir);
    CHECK_EQ_INT(ht_steps_of(e, "x", NULL, NULL, 0), 0); /* 9 < 10 queued, 120 s away */
    CHECK_OK(vg_file_writer_add_scalar(w, "x", 9.0f, 9, &st), &st);
    double t0 = ht_wall();
    int n = 0;
    while (n < 10 && ht_wall() - t0 < 10) {
        ht_read_events(dir, e);
        n = ht_steps_of(e, "x", NULL, NULL, 0);
        if (n < 10) ht_sleep(0.01);
    }
    CHECK_EQ_INT(n, 10);
    free(e);
    vg_file_writer_free(w);
    tu_rmrf(dir);
}

/* Ops built from {0} carry TF's attribute defaults: DecodeJpeg(ratio=1,
 * fancy_upscaling=True, acceptable_fraction=1, dct_method=""), Mfcc(4000, 20, 40, 13);
 * sequence_loss() averages over both axes (a scalar). */
static void test_options_zero__op_attrs(void) {
    vg_graph *g = vg_graph_new();
    vg_output contents = vg_const_string(g, "", NULL);
    vg_op *j = vg_decode_jpeg(g, contents, &(vg_decode_jpeg_options){0}, NULL).op;
    CHECK(j != NULL);
    if (!j) return;
    int64_t i = -1;
    float f = -1;
    bool b = false;
    const char *str = NULL;
    size_t len = 9;
    CHECK(vg_op_attr_int(j, "channels", &i) && i == 0);
    CHECK(vg_op_attr_int(j, "ratio", &i) && i == 1);
    CHECK(vg_op_attr_bool(j, "fancy_upscaling", &b) && b);
    CHECK(vg_op_attr_bool(j, "try_recover_truncated", &b) && !b);
    CHECK(vg_op_attr_float(j, "acceptable_fraction", &f) && f == 1.0f);
    CHECK(vg_op_attr_string(j, "dct_method", &str, &len) && len == 0);
    j = vg_decode_jpeg(g, contents,
                       &(vg_decode_jpeg_options){.no_fancy_upscaling = true, .zero_acceptable_fraction = true}, NULL)
            .op;
    CHECK(vg_op_attr_bool(j, "fancy_upscaling", &b) && !b);
    CHECK(vg_op_attr_float(j, "acceptable_fraction", &f) && f == 0.0f);
    static float zs[2 * 257], lg[2 * 3 * 4], w[6] = {1, 1, 1, 1, 1, 1};
    static int32_t tg[6];
    vg_output spec = vg_const_array(g, VG_FLOAT, (const int64_t[]){1, 2, 257}, 3, zs, NULL);
    vg_output rate = vg_const_i32(g, 16000, NULL);
    vg_op *m = vg_mfcc(g, spec, rate, &(vg_mfcc_options){0}, NULL).op;
    CHECK(m != NULL);
    if (!m) return;
    CHECK(vg_op_attr_float(m, "upper_frequency_limit", &f) && f == 4000.0f);
    CHECK(vg_op_attr_float(m, "lower_frequency_limit", &f) && f == 20.0f);
    CHECK(vg_op_attr_int(m, "filterbank_channel_count", &i) && i == 40);
    CHECK(vg_op_attr_int(m, "dct_coefficient_count", &i) && i == 13);
    m = vg_mfcc(g, spec, rate, &(vg_mfcc_options){.zero_lower_frequency_limit = true}, NULL).op;
    CHECK(vg_op_attr_float(m, "lower_frequency_limit", &f) && f == 0.0f);
    vg_output logits = vg_const_array(g, VG_FLOAT, (const int64_t[]){2, 3, 4}, 3, lg, NULL);
    vg_output targets = vg_const_array(g, VG_INT32, (const int64_t[]){2, 3}, 2, tg, NULL);
    vg_output weights = vg_const_array(g, VG_FLOAT, (const int64_t[]){2, 3}, 2, w, NULL);
    vg_output l = vg_sequence_loss_ex(g, logits, targets, weights, &(vg_sequence_loss_options){0});
    CHECK(l.op && vg_output_shape(l).ndims == 0);
    l = vg_sequence_loss_ex(g, logits, targets, weights,
                            &(vg_sequence_loss_options){.no_average_across_timesteps = true,
                                                        .no_average_across_batch = true});
    CHECK(l.op && vg_output_shape(l).ndims == 2);
    CHECK_OK(vg_graph_status(g, NULL), &(vg_status){0});
    vg_graph_free(g);
}

/* Runs the global initializer, then fetches outs[0..n) in one session. */
static void init_fetch_n(vg_graph *g, const vg_output *outs, int n, vg_tensor **ts) {
    vg_status st;
    vg_op *init = vg_global_variables_initializer(g);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    for (int i = 0; i < n; i++) ts[i] = NULL;
    if (!s) return;
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, outs, ts, n, NULL, 0, NULL, &st), &st);
    vg_session_free(s);
}

static bool all_equal(const vg_tensor *t, float v) {
    if (!t) return false;
    const float *p = vg_tensor_data(t);
    for (int64_t i = 0; i < vg_tensor_num_elements(t); i++)
        if (p[i] != v) return false;
    return true;
}

/* tf.layers.Dense(3) with nothing else given: kernel_initializer=None (glorot_uniform,
 * U[-sqrt(6 / (4 + 3)), +sqrt(6 / 7)] for a [4, 3] kernel), bias_initializer=zeros,
 * use_bias=True, trainable=True. In a variable scope with an initializer the kernel
 * takes the scope's (TF's None) while the bias stays zeros, unless bias_initializer is
 * vg_init_default() (TF's None) too. */
static void test_options_zero__dense_layer(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 4}, 2, "x");
    vg_layer_config c = {0};
    c.units = 3;
    vg_layer *l = vg_layer_new(&c);
    CHECK(l != NULL);
    if (!l) return;
    vg_output y = vg_layer_apply(l, g, x, (vg_output){0});
    CHECK(y.op != NULL);
    CHECK(has_op(g, "dense/kernel/Initializer/random_uniform", NULL));
    CHECK(has_op(g, "dense/bias/Initializer/zeros", NULL));
    CHECK(has_op(g, "dense/BiasAdd", "BiasAdd"));
    CHECK(l->kernel.var && l->bias.var);
    CHECK_EQ_INT(l->num_trainable_weights, 2);
    CHECK_EQ_INT(l->num_non_trainable_weights, 0);
    vg_tensor *t[2];
    init_fetch_n(g, (vg_output[]){l->kernel.read, l->bias.read}, 2, t);
    if (t[0] && t[1]) {
        const float *k = vg_tensor_data(t[0]);
        float limit = sqrtf(6.0f / 7.0f), lo = limit, hi = -limit;
        for (int i = 0; i < 12; i++) {
            lo = k[i] < lo ? k[i] : lo;
            hi = k[i] > hi ? k[i] : hi;
        }
        CHECK(lo >= -limit && hi <= limit && lo < hi);
        CHECK(all_equal(t[1], 0.0f));
    }
    vg_tensor_free(t[0]);
    vg_tensor_free(t[1]);
    vg_layer_free(l);
    /* the scope's initializer reaches the kernel only; bias_initializer=None reaches both */
    vg_initializer half = vg_init_constant(0.5);
    vg_variable_scope_push(g, "scoped", &(vg_variable_scope_opts){.initializer = &half});
    vg_layer *a = vg_layer_new(&(vg_layer_config){.units = 3});
    vg_layer *b = vg_layer_new(&(vg_layer_config){.units = 3, .bias_initializer = vg_init_default()});
    vg_layer_apply(a, g, x, (vg_output){0});
    vg_layer_apply(b, g, x, (vg_output){0});
    vg_variable_scope_pop(g);
    vg_tensor *u[4];
    init_fetch_n(g, (vg_output[]){a->kernel.read, a->bias.read, b->kernel.read, b->bias.read}, 4, u);
    CHECK(all_equal(u[0], 0.5f) && all_equal(u[1], 0.0f) && all_equal(u[2], 0.5f) && all_equal(u[3], 0.5f));
    for (int i = 0; i < 4; i++) vg_tensor_free(u[i]);
    vg_layer_free(a);
    vg_layer_free(b);
    /* the off flags: use_bias=False, trainable=False */
    vg_layer *n = vg_layer_new(&(vg_layer_config){.units = 3, .no_bias = true, .not_trainable = true});
    vg_layer_apply(n, g, x, (vg_output){0});
    CHECK(n->kernel.var != NULL && n->bias.var == NULL);
    CHECK_EQ_INT(n->num_trainable_weights, 0);
    CHECK_EQ_INT(n->num_non_trainable_weights, 1);
    vg_layer_free(n);
    CHECK_OK(vg_graph_status(g, NULL), &(vg_status){0});
    vg_graph_free(g);
}

/* tf.layers.BatchNormalization(): axis=-1, momentum=0.99, epsilon=0.001, center and
 * scale, beta/moving_mean zeros, gamma/moving_variance ones; MaxPooling2D(pool_size)
 * with strides None = pool_size (Keras), pool_size 2 when not given; Dropout's rate 0.5
 * (zero_rate: 0); contrib layer_norm's begin_norm_axis 1, begin_params_axis -1. */
static void test_options_zero__layer_kinds(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 3}, 2, "x");
    vg_layer *bn = vg_layer_new(&(vg_layer_config){.kind = VG_LAYER_BATCH_NORMALIZATION});
    CHECK(bn != NULL);
    if (!bn) return;
    CHECK_EQ_INT(bn->config.axis, -1);
    CHECK(bn->config.momentum == 0.99 && bn->config.epsilon == 0.001);
    vg_layer_apply(bn, g, x, (vg_output){0});
    CHECK(bn->gamma.var && bn->beta.var && bn->moving_mean.var && bn->moving_variance.var);
    CHECK_EQ_INT(bn->num_trainable_weights, 2);
    CHECK_EQ_INT(bn->num_non_trainable_weights, 2);
    vg_tensor *t[4];
    init_fetch_n(g,
                 (vg_output[]){bn->gamma.read, bn->beta.read, bn->moving_mean.read, bn->moving_variance.read}, 4,
                 t);
    CHECK(all_equal(t[0], 1.0f) && all_equal(t[1], 0.0f) && all_equal(t[2], 0.0f) && all_equal(t[3], 1.0f));
    for (int i = 0; i < 4; i++) vg_tensor_free(t[i]);
    vg_layer_free(bn);
    vg_layer *bz = vg_layer_new(&(vg_layer_config){.kind = VG_LAYER_BATCH_NORMALIZATION, .zero_momentum = true,
                                                   .no_center = true, .no_scale = true});
    CHECK(bz && bz->config.momentum == 0.0);
    vg_layer_apply(bz, g, x, (vg_output){0});
    CHECK(bz && !bz->gamma.var && !bz->beta.var && bz->moving_mean.var);
    vg_layer_free(bz);

    vg_output img = vg_placeholder(g, VG_FLOAT, (int64_t[]){1, 4, 4, 1}, 4, "img");
    vg_output p = vg_layers_apply(g, &(vg_layer_config){.kind = VG_LAYER_MAX_POOLING2D}, img, (vg_output){0});
    CHECK(shape_is(p, (int64_t[]){1, 2, 2, 1}, 4)); /* pool 2, strides 2 */
    p = vg_layers_apply(g, &(vg_layer_config){.kind = VG_LAYER_AVERAGE_POOLING2D, .pool_size = {3, 3}}, img,
                        (vg_output){0});
    CHECK(shape_is(p, (int64_t[]){1, 1, 1, 1}, 4)); /* strides 3 = pool_size: (4 - 3) / 3 + 1 */
    p = vg_layers_apply(g, &(vg_layer_config){.kind = VG_LAYER_CONV2D, .units = 2, .no_bias = true}, img,
                        (vg_output){0});
    CHECK(shape_is(p, (int64_t[]){1, 4, 4, 2}, 4)); /* kernel 1, strides 1, dilation 1, valid */

    vg_layer *d = vg_layer_new(&(vg_layer_config){.kind = VG_LAYER_DROPOUT});
    vg_layer *d0 = vg_layer_new(&(vg_layer_config){.kind = VG_LAYER_DROPOUT, .zero_rate = true});
    CHECK(d && d->config.rate == 0.5 && d0 && d0->config.rate == 0.0);
    vg_layer_free(d);
    vg_layer_free(d0);
    vg_layer *ln = vg_layer_new(&(vg_layer_config){.kind = VG_LAYER_LAYER_NORM});
    CHECK(ln && ln->config.begin_norm_axis == 1 && ln->config.begin_params_axis == -1 &&
          ln->config.epsilon == 1e-12);
    vg_layer_free(ln);
    CHECK_OK(vg_graph_status(g, NULL), &(vg_status){0});
    vg_graph_free(g);
}

/* The fused allreduces built for grads[0..n) under o: how many, and whether the first
 * one is a mean (final_op "Div") or a sum ("Id"). */
static int dist_buckets(vg_graph *g, const vg_output *grads, int n, const vg_dist_options *o, bool *mean) {
    vg_output out[4];
    vg_status st;
    CHECK_OK(vg_dist_allreduce_gradients(g, grads, n, o, out, &st), &st);
    int nb = 1;
    for (int i = 1; i < n; i++) nb += out[i].op != out[i - 1].op;
    const char *fin = NULL;
    size_t len = 0;
    CHECK(vg_op_attr_string(out[0].op, "final_op", &fin, &len));
    *mean = fin && len == 3 && memcmp(fin, "Div", 3) == 0;
    return nb;
}

/* hvd.DistributedOptimizer(opt) with nothing else given: op=Average, gradients fused
 * into buckets of HOROVOD_FUSION_THRESHOLD's default 64 MB (67108864 bytes: two float
 * gradients of 4096 * 4095 and 4096 elements fill one bucket exactly, 4 more bytes make
 * a second). Graph building only: no collective runs. */
static void test_options_zero__dist_optimizer(void) {
    unsetenv("HOROVOD_FUSION_THRESHOLD");
    vg_graph *g = vg_graph_new();
    vg_output exact[2] = {vg_placeholder(g, VG_FLOAT, (int64_t[]){4096, 4095}, 2, "a"),
                          vg_placeholder(g, VG_FLOAT, (int64_t[]){4096}, 1, "b")};
    vg_output over[2] = {vg_placeholder(g, VG_FLOAT, (int64_t[]){4096, 4096}, 2, "c"),
                         vg_placeholder(g, VG_FLOAT, (int64_t[]){1}, 1, "d")};
    bool mean = false;
    CHECK_EQ_INT(dist_buckets(g, exact, 2, &(vg_dist_options){0}, &mean), 1);
    CHECK(mean);
    CHECK_EQ_INT(dist_buckets(g, exact, 2, NULL, &mean), 1);
    CHECK(mean);
    CHECK_EQ_INT(dist_buckets(g, over, 2, &(vg_dist_options){0}, &mean), 2);
    /* the explicit flags: one allreduce per gradient, the sum */
    CHECK_EQ_INT(dist_buckets(g, exact, 2, &(vg_dist_options){.no_fusion = true}, &mean), 2);
    CHECK_EQ_INT(dist_buckets(g, exact, 2, &(vg_dist_options){.sum = true}, &mean), 1);
    CHECK(!mean);
    vg_status st;
    vg_output out[2];
    CHECK_CODE(vg_dist_allreduce_gradients(g, exact, 2, &(vg_dist_options){.fusion_threshold_bytes = -1}, out, &st),
               VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

/* slim.learning.train's None for an interval is its no_* flag; a negative interval is
 * refused before anything runs, naming the flags. */
static void test_options_zero__slim_train(void) {
    vg_graph *g = vg_graph_new();
    vg_output op = vg_const_f32(g, 1.0f, "train_op");
    vg_status st;
    CHECK_CODE(vg_slim_learning_train(g, op, NULL, &(vg_slim_train_opts){.save_interval_secs = -1}, NULL, &st),
               VG_INVALID_ARGUMENT);
    CHECK(strstr(st.msg, "no_checkpoints") != NULL);
    CHECK_CODE(vg_slim_learning_train(g, op, NULL, &(vg_slim_train_opts){.log_every_n_steps = -1}, NULL, &st),
               VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_options_zero__mts_resolution);
    RUN_TEST(test_options_zero__mts_defaults);
    RUN_TEST(test_options_zero__mts_off_flags);
    RUN_TEST(test_options_zero__saver);
    RUN_TEST(test_options_zero__hooks);
    RUN_TEST(test_options_zero__session_manager);
    RUN_TEST(test_options_zero__file_writer);
    RUN_TEST(test_options_zero__op_attrs);
    RUN_TEST(test_options_zero__dense_layer);
    RUN_TEST(test_options_zero__layer_kinds);
    RUN_TEST(test_options_zero__dist_optimizer);
    RUN_TEST(test_options_zero__slim_train);
    TEST_MAIN_END();
}
