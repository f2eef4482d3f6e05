/* test_dist_train.c - Horovod's DistributedOptimizer and BroadcastGlobalVariablesHook,
 * TF's SyncReplicasOptimizer, on the MPI world (issue 15). CTest runs it alone (1 rank)
 * and under mpirun -np 2. Values are computed by hand from the world's size. */
#include "dist_fixture.h"
#include "test_util.h"
#include "status_fixture.h"
#include <vigil/vigil.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static int R, N;

static int count_ops(vg_graph *g, const char *type) {
    int c = 0;
    for (int i = 0; i < vg_graph_num_ops(g); i++) c += strcmp(vg_op_type(vg_graph_op(g, i)), type) == 0;
    return c;
}

/* w starts at a rank-dependent value; the hook makes it rank 0's ([1, 2]); loss =
 * sum(w * x_r) with x_r = [r + 1, 2r] so the averaged gradient is mean_r x_r. */
static void build(vg_graph *g, int nvar_dims, vg_output *loss, vg_variable *w) {
    float init[3] = {1.0f + 10.0f * (float)R, 2.0f - 5.0f * (float)R, 7.0f};
    *w = vg_variable_new(g, "w", vg_const_array(g, VG_FLOAT, (int64_t[]){nvar_dims}, 1, init, "w_init"),
                         VG_VAR_TRAINABLE);
    float x[3] = {(float)R + 1.0f, 2.0f * (float)R, 1.0f};
    vg_output xc = vg_const_array(g, VG_FLOAT, (int64_t[]){nvar_dims}, 1, x, "x");
    *loss = vg_reduce_sum(g, vg_mul(g, w->read, xc, "mul"), NULL, 0, false, "loss");
}

/* A MonitoredTrainingSession on g with the one hook *hook, as Horovod makes it: every
 * rank a chief (checkpoints on rank 0 only), no StepCounterHook. */
static vg_monitored_session *horovod_session(vg_graph *g, vg_hook *hook, vg_status *st) {
    vg_mts_options o = {0};
    o.hooks = hook;
    o.nhooks = 1;
    o.not_chief = false;
    o.no_step_counter = true;
    return vg_monitored_training_session_new(g, &o, st);
}

static void test_dist_optimizer__averaged_step(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output loss;
    vg_variable w;
    build(g, 2, &loss, &w);
    vg_optimizer *opt = vg_optimizer_new_sgd(0.5);
    vg_op *train = vg_dist_minimize(opt, g, loss, NULL, 0, vg_get_or_create_global_step(g), NULL, NULL);
    CHECK(train != NULL);
    CHECK_EQ_INT(count_ops(g, "VigilFusedAllreduce"), 1);
    vg_hook hooks[1];
    CHECK_OK(vg_broadcast_global_variables_hook(0, &hooks[0], &st), &st);
    vg_monitored_session *ms = horovod_session(g, hooks, &st);
    CHECK(ms != NULL);
    if (!ms) return;
    vg_tensor *wv = NULL;
    CHECK_OK(dist_fx_fetch(ms, w.read, &wv, &st), &st);
    if (wv) { /* rank 0's initial values everywhere */
        CHECK_NEAR(((float *)vg_tensor_data(wv))[0], 1.0, 0);
        CHECK_NEAR(((float *)vg_tensor_data(wv))[1], 2.0, 0);
        vg_tensor_free(wv);
    }
    for (int step = 0; step < 3; step++) CHECK_OK(dist_fx_run_op(ms, train, &st), &st);
    CHECK_OK(dist_fx_fetch(ms, w.read, &wv, &st), &st);
    double g0 = (N + 1) / 2.0, g1 = (double)(N - 1); /* mean_r (r + 1), mean_r 2r */
    if (wv) {
        CHECK_NEAR(((float *)vg_tensor_data(wv))[0], 1.0 - 3 * 0.5 * g0, 1e-6);
        CHECK_NEAR(((float *)vg_tensor_data(wv))[1], 2.0 - 3 * 0.5 * g1, 1e-6);
        vg_tensor_free(wv);
    }
    CHECK_OK(vg_monitored_session_end(ms, VG_OK, &st), &st);
    vg_monitored_session_free(ms);
    vg_optimizer_free(opt);
    vg_graph_free(g);
}

static void test_dist_optimizer__fusion_buckets(void) {
    vg_status st;
    dist_fx_model m = dist_fx_dense_model(true);
    vg_output grads[4];
    vg_dist_options o = {.no_fusion = true}; /* one allreduce per gradient */
    CHECK_OK(vg_dist_compute_gradients(m.opt, m.g, m.loss, NULL, 0, &o, grads, &st), &st);
    CHECK_EQ_INT(count_ops(m.g, "VigilFusedAllreduce"), 4);
    /* reverse order: [bias 8 + kernel 24], [bias 12], [kernel 48] */
    o = (vg_dist_options){.fusion_threshold_bytes = 40};
    CHECK_OK(vg_dist_compute_gradients(m.opt, m.g, m.loss, NULL, 0, &o, grads, &st), &st);
    CHECK_EQ_INT(count_ops(m.g, "VigilFusedAllreduce"), 4 + 3);
    CHECK(grads[2].op == grads[3].op);
    CHECK(grads[0].op != grads[1].op);
    /* the buckets are chained: each after the previous */
    CHECK(vg_op_num_control_inputs(grads[1].op) == 1 && vg_op_control_input(grads[1].op, 0) == grads[3].op);
    o.fusion_threshold_bytes = -1;
    CHECK_CODE(vg_dist_compute_gradients(m.opt, m.g, m.loss, NULL, 0, &o, grads, &st), VG_INVALID_ARGUMENT);
    /* run the fused gradients: every rank has the same input, so the mean is itself */
    o = (vg_dist_options){0};
    CHECK_OK(vg_dist_compute_gradients(m.opt, m.g, m.loss, NULL, 0, &o, grads, &st), &st);
    vg_op *init = vg_global_variables_initializer(m.g);
    vg_session *s = vg_session_new(m.g, NULL, &st);
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    vg_tensor *out = NULL;
    CHECK_OK(vg_session_run1(s, grads[3], &out, &st), &st); /* d loss / d bias2 = [1, 1] */
    if (out) {
        CHECK_NEAR(((float *)vg_tensor_data(out))[0], 1.0, 1e-6);
        vg_tensor_free(out);
    }
    vg_session_free(s);
    dist_fx_model_free(&m);
}

/* An embedding [8, 3] looked up by rank r with r + 3 ids (a different number of rows on
 * each rank, repeated ids); loss_r = sum(gather(E, ids_r) * C_r). */
enum { EV = 8, ED = 3 };
static int emb_ids(int r, int32_t *ids) {
    int k = r + 3;
    for (int i = 0; i < k; i++) ids[i] = (2 * r + 3 * i) % 7; /* r = 0: 0 3 6; r = 1: 2 5 1 4 */
    if (k > 1) ids[k - 1] = ids[0];                           /* a repeated row */
    return k;
}
static void emb_coef(int r, int k, float *c) {
    for (int i = 0; i < k; i++)
        for (int j = 0; j < ED; j++) c[i * ED + j] = 0.1f * (float)(r + 1) + 0.05f * (float)(i * ED + j) - 0.2f;
}

/* Runs two Adagrad steps and returns E. mode 0: this rank's batch through the
 * DistributedOptimizer (sparse_as_dense per flag); mode 1: every rank's batch
 * concatenated, one process, loss divided by N (the reference). */
static void emb_run(int mode, bool sparse_as_dense, float *e_out, int *ngather, int *nfused, int *nsparse) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    float e0[EV * ED];
    for (int i = 0; i < EV * ED; i++) e0[i] = 0.1f * (float)(i / ED) + 0.01f * (float)(i % ED);
    vg_variable e = vg_variable_new(g, "embedding", vg_const_array(g, VG_FLOAT, (int64_t[]){EV, ED}, 2, e0, "e_init"),
                                    VG_VAR_TRAINABLE);
    int32_t ids[64];
    float c[64 * ED];
    int k = 0;
    for (int r = (mode ? 0 : R); r <= (mode ? N - 1 : R); r++) {
        int kr = emb_ids(r, ids + k);
        emb_coef(r, kr, c + k * ED);
        k += kr;
    }
    vg_output idc = vg_const_array(g, VG_INT32, (int64_t[]){k}, 1, ids, "ids");
    vg_output cc = vg_const_array(g, VG_FLOAT, (int64_t[]){k, ED}, 2, c, "coef");
    vg_output rows = vg_gather(g, e.read, idc, 0, "lookup");
    vg_output loss = vg_reduce_sum(g, vg_mul(g, rows, cc, NULL), NULL, 0, false, "loss");
    if (mode) loss = vg_div(g, loss, vg_const_f32(g, (float)N, "n"), "mean_loss");
    vg_optimizer *opt = vg_optimizer_new_adagrad(0.5, 0.1);
    vg_op *train;
    if (mode) { /* this process alone: on N > 1 ranks a plain minimize would average */
        vg_output ge = {NULL, 0};
        CHECK_OK(vg_gradients(g, &loss, 1, &e.ref, 1, NULL, &ge, &st), &st);
        train = vg_optimizer_apply_gradients(opt, g, &ge, &e.ref, 1, (vg_output){NULL, 0}, NULL);
    } else {
        vg_dist_options o = {.sparse_as_dense = sparse_as_dense};
        train = vg_dist_minimize(opt, g, loss, NULL, 0, (vg_output){NULL, 0}, &o, NULL);
    }
    CHECK(train != NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    *ngather = count_ops(g, "CollectiveGather");
    *nfused = count_ops(g, "VigilFusedAllreduce");
    *nsparse = count_ops(g, "SparseApplyAdagrad") + count_ops(g, "ResourceSparseApplyAdagrad");
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    if (s && train) {
        CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
        for (int step = 0; step < 2; step++) CHECK_OK(vg_session_run_targets(s, &train, 1, &st), &st);
        vg_tensor *t = NULL;
        CHECK_OK(vg_session_run1(s, e.read, &t, &st), &st);
        if (t) memcpy(e_out, vg_tensor_data(t), sizeof(float) * EV * ED);
        vg_tensor_free(t);
    }
    vg_session_free(s);
    vg_optimizer_free(opt);
    vg_graph_free(g);
}

/* Horovod's IndexedSlices path: the Gather's gradient is allgathered (values and
 * indices, a different row count per rank), the sparse apply updates the union of the
 * ranks' rows, and the result is the 1-process run on the concatenated batch. */
static void test_dist_optimizer__sparse_allgather(void) {
    float ref[EV * ED], sparse[EV * ED], dense[EV * ED];
    int ng, nf, ns;
    emb_run(1, false, ref, &ng, &nf, &ns);
    CHECK_EQ_INT(ng, 0);
    CHECK_EQ_INT(ns, 1); /* the reference itself takes the sparse apply */
    emb_run(0, false, sparse, &ng, &nf, &ns);
    CHECK_EQ_INT(ng, 2); /* values and indices */
    CHECK_EQ_INT(nf, 0);
    CHECK_EQ_INT(ns, 1);
    emb_run(0, true, dense, &ng, &nf, &ns); /* sparse_as_dense: one dense allreduce */
    CHECK_EQ_INT(ng, 0);
    CHECK_EQ_INT(nf, 1);
    CHECK_EQ_INT(ns, 0);
    bool in_union[EV] = {false};
    int32_t ids[64];
    for (int r = 0; r < N; r++) {
        int k = emb_ids(r, ids);
        for (int i = 0; i < k; i++) in_union[ids[i]] = true;
    }
    for (int i = 0; i < EV * ED; i++) {
        float e0 = 0.1f * (float)(i / ED) + 0.01f * (float)(i % ED);
        CHECK_NEAR(sparse[i], ref[i], 1e-6);
        CHECK_NEAR(dense[i], ref[i], 1e-6);
        if (!in_union[i / ED]) CHECK_NEAR(sparse[i], e0, 0); /* rows no rank looked up */
        else CHECK(fabsf(sparse[i] - e0) > 1e-3f);           /* every rank's rows moved */
    }
}

static void test_broadcast_hook__mismatch(void) {
    if (N < 2) return;
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output loss;
    vg_variable w;
    build(g, R == 1 ? 3 : 2, &loss, &w); /* rank 1 has w of shape [3] */
    vg_hook hooks[1];
    CHECK_OK(vg_broadcast_global_variables_hook(0, &hooks[0], &st), &st);
    vg_monitored_session *ms = horovod_session(g, hooks, &st);
    CHECK(ms == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_INVALID_ARGUMENT, "'w'");
    vg_monitored_session_free(ms);
    vg_graph_free(g);
}

static void test_sync_replicas__api(void) {
    vg_status st;
    vg_optimizer *opt = vg_optimizer_new_sgd(0.5);
    CHECK(vg_sync_replicas_new(opt, N + 1, N + 1, &st) == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_INVALID_ARGUMENT, "replicas_to_aggregate");
    vg_sync_replicas *sr = vg_sync_replicas_new(opt, N, N, &st);
    CHECK(sr != NULL);
    vg_graph *g = vg_graph_new();
    vg_output loss;
    vg_variable w;
    build(g, 2, &loss, &w);
    vg_op *train = vg_sync_replicas_minimize(sr, g, loss, vg_get_or_create_global_step(g), NULL);
    CHECK(train != NULL);
    vg_hook hook;
    CHECK_OK(vg_sync_replicas_make_session_run_hook(sr, R == 0, &hook, &st), &st);
    vg_monitored_session *ms = horovod_session(g, &hook, &st);
    CHECK(ms != NULL);
    CHECK_OK(dist_fx_run_op(ms, train, &st), &st);
    vg_tensor *wv = NULL;
    CHECK_OK(dist_fx_fetch(ms, w.read, &wv, &st), &st);
    if (wv) {
        CHECK_NEAR(((float *)vg_tensor_data(wv))[0], 1.0 - 0.5 * (N + 1) / 2.0, 1e-6);
        vg_tensor_free(wv);
    }
    CHECK_OK(vg_monitored_session_end(ms, VG_OK, &st), &st);
    vg_monitored_session_free(ms);
    vg_sync_replicas_free(sr);
    vg_optimizer_free(opt);
    vg_graph_free(g);
}

static void test_dist_shard__files(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    int32_t v[10];
    for (int i = 0; i < 10; i++) v[i] = i;
    vg_output x = vg_const_array(g, VG_INT32, (int64_t[]){10}, 1, v, "files");
    vg_output mine = vg_dist_shard(g, x, 0, -1, NULL); /* this rank of the world */
    vg_output third = vg_dist_shard(g, x, 3, 2, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run1(s, mine, &t, &st), &st);
    if (t) {
        int want = (10 - R + N - 1) / N;
        CHECK_EQ_INT(vg_tensor_num_elements(t), want);
        for (int i = 0; i < want && i < vg_tensor_num_elements(t); i++) CHECK_EQ_INT(((int32_t *)vg_tensor_data(t))[i], R + i * N);
        vg_tensor_free(t);
    }
    CHECK_OK(vg_session_run1(s, third, &t, &st), &st);
    if (t) { /* 2, 5, 8 */
        CHECK_EQ_INT(vg_tensor_num_elements(t), 3);
        CHECK_EQ_INT(((int32_t *)vg_tensor_data(t))[2], 8);
        vg_tensor_free(t);
    }
    vg_session_free(s);
    vg_dist_shard(g, x, 2, 2, "bad");
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "num_shards");
    vg_graph_free(g);
    CHECK_EQ_INT(vg_dist_seed(0), 0);
    CHECK_EQ_INT(vg_dist_seed(5), 5 + 7919 * R);
}

int main(void) {
    dist_fx_init(&R, &N);
    RUN_TEST(test_dist_optimizer__averaged_step);
    RUN_TEST(test_dist_optimizer__fusion_buckets);
    RUN_TEST(test_dist_optimizer__sparse_allgather);
    RUN_TEST(test_broadcast_hook__mismatch);
    RUN_TEST(test_sync_replicas__api);
    RUN_TEST(test_dist_shard__files);
    return dist_fx_end();
}
