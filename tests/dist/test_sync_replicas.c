/* test_sync_replicas.c - tf.train.SyncReplicasOptimizer with backup workers
 * (vg_sync_replicas_optimizer_*, issue 31 item 6). CTest runs it alone (one worker, as
 * TF with one replica) and under mpiexec: -np 2 with replicas_to_aggregate R = 2, -np 3
 * with R = 2 and rank 2 slow (a backup worker whose gradients arrive stale), and a
 * stalled rank that the collective timeout must name.
 *
 * Environment (set by cmake/VigilDistTests.cmake): VIGIL_TEST_SR_R (R, default the
 * world's size), VIGIL_TEST_SR_SLOW (the slow rank, default none), VIGIL_TEST_SR_STALL
 * (a rank that stops for 4 s at global step 3, with a 1 s collective timeout).
 *
 * The model: w (float32 [2], zeros) and loss = sum(w * x_r), x_r = [2^r, gs + 1] where
 * gs is the global step this rank reads in the same run, so rank r's gradient at step s
 * is [2^r, s + 1]. With SGD at rate 1 an update made of ranks S (|S| = R) computed at
 * step s moves w by -[sum_{r in S} 2^r / R, s + 1]: the first component names the set
 * (a sum of distinct powers of two), the second proves that every gradient in it was
 * computed at the current step (a stale one would give a smaller value). */
#include "mpi_self_util.h"
#include "dist_fixture.h"
#include "test_util.h"
#include "status_fixture.h"
#include <vigil/vigil.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int RANK, N;

static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

static vg_code sleep_fn(const vg_tensor *const *in, int nin, vg_tensor **out, int nout, void *user, vg_status *st) {
    (void)nin;
    (void)nout;
    int ms = *(int *)user;
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    out[0] = vg_tensor_new(VG_FLOAT, vg_tensor_dims(in[0]), vg_tensor_ndims(in[0]), st);
    if (!out[0]) return st->code;
    memcpy(vg_tensor_data(out[0]), vg_tensor_data(in[0]), sizeof(float) * (size_t)vg_tensor_num_elements(in[0]));
    return VG_OK;
}

static int slow_ms = 80;

/* w, the global step and loss = sum(w * [2^rank, gs + 1]); the slow rank's x passes
 * through a PyFunc that sleeps, so its gradient arrives late. */
static void build(vg_graph *g, bool slow, vg_output *loss, vg_variable *w, vg_output *gs) {
    float zeros[2] = {0, 0};
    *w = vg_variable_new(g, "w", vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1, zeros, "w_init"), VG_VAR_TRAINABLE);
    *gs = vg_get_or_create_global_step(g);
    float p = (float)(1 << RANK);
    vg_output a = vg_const_array(g, VG_FLOAT, (int64_t[]){1}, 1, &p, "pow2");
    int32_t one_dim[1] = {1}, axis = 0;
    vg_output step = vg_reshape(g, vg_cast(g, *gs, VG_FLOAT, "gs_f"),
                                vg_const_array(g, VG_INT32, (int64_t[]){1}, 1, one_dim, "shape1"), "gs_1");
    vg_output b = vg_add(g, step, vg_const_f32(g, 1.0f, "one"), "gs_plus_1");
    vg_output parts[2] = {a, b};
    vg_output x = vg_concat(g, parts, 2, vg_const_array(g, VG_INT32, NULL, 0, &axis, "axis"), "x");
    if (slow) {
        vg_dtype t = VG_FLOAT;
        x = vg_out(vg_py_func(g, sleep_fn, &slow_ms, &x, 1, &t, 1, true, NULL, NULL, "slow"), 0);
    }
    *loss = vg_reduce_sum(g, vg_mul(g, w->read, x, "mul"), NULL, 0, false, "loss");
}

static int popcount(unsigned v) {
    int c = 0;
    for (; v; v &= v - 1) c++;
    return c;
}

static void read_state(vg_monitored_session *ms, vg_variable *w, vg_output gs, float wv[2], int64_t *step) {
    vg_status st;
    vg_output f[2] = {w->read, gs};
    vg_tensor *t[2] = {NULL, NULL};
    vg_run_args a = {0};
    a.fetches = f;
    a.nfetches = 2;
    CHECK_OK(vg_monitored_session_run(ms, &a, t, NULL, &st), &st);
    if (t[0] && t[1]) {
        memcpy(wv, vg_tensor_data(t[0]), 2 * sizeof(float));
        *step = *(int64_t *)vg_tensor_data(t[1]);
    }
    vg_tensor_free(t[0]);
    vg_tensor_free(t[1]);
}

/* Trains K updates; checks each one on every rank. */
static void test_sync_replicas__backup_workers(void) {
    const int Ragg = env_int("VIGIL_TEST_SR_R", N), slow = env_int("VIGIL_TEST_SR_SLOW", -1);
    const int K = 12;
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output loss, gs;
    vg_variable w;
    build(g, RANK == slow, &loss, &w, &gs);
    vg_optimizer *opt = vg_optimizer_new_sgd(1.0);
    vg_sync_replicas_optimizer *sr = vg_sync_replicas_optimizer_new(opt, Ragg, N, &st);
    CHECK(sr != NULL);
    if (!sr) return;
    CHECK_EQ_INT(vg_sync_replicas_optimizer_total_num_replicas(sr), N);
    CHECK_EQ_INT(vg_sync_replicas_optimizer_replicas_to_aggregate(sr), Ragg);
    vg_hook hook;
    /* TF: the hook refuses an optimizer whose apply_gradients was not called */
    CHECK_OK(vg_sync_replicas_optimizer_make_session_run_hook(sr, RANK == 0, -1, &hook, &st), &st);
    EXPECT_CODE_MSG(hook.begin(hook.payload, g, &st), &st, VG_FAILED_PRECONDITION,
                    "apply_gradient should be called before using the hook");
    hook.destroy(hook.payload);
    CHECK_CODE(vg_sync_replicas_optimizer_make_session_run_hook(sr, RANK != 0, -1, &hook, &st), VG_INVALID_ARGUMENT);

    /* variable_averages: an EMA (decay 0.5) of w after every update */
    vg_ema *ema = vg_ema_new(g, 0.5, (vg_output){NULL, 0}, false, NULL);
    CHECK_OK(vg_sync_replicas_optimizer_set_variable_averages(sr, ema, &w.ref, 1, &st), &st);
    vg_op *train = vg_sync_replicas_optimizer_minimize(sr, g, loss, gs, NULL);
    CHECK(train != NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK_CODE(vg_sync_replicas_optimizer_set_variable_averages(sr, ema, &w.ref, 1, &st), VG_FAILED_PRECONDITION);
    vg_output shadow = vg_ema_average(ema, w.ref);
    CHECK(shadow.op != NULL);
    double want_shadow[2] = {0, 0};
    CHECK_OK(vg_sync_replicas_optimizer_make_session_run_hook(sr, RANK == 0, -1, &hook, &st), &st);
    vg_mts_options o = {.hooks = &hook, .nhooks = 1, .not_chief = RANK != 0, .no_step_counter = true};
    /* TF1's MonitoredTrainingSession(master, is_chief): its check that every update went
     * through a collective accepts the aggregate op */
    vg_monitored_session *ms = vg_distributed_training_session_new(g, "mpi://worker/0", &o, &st);
    CHECK(ms != NULL);
    if (!ms) return;
    float wv[2] = {0, 0}, before[2];
    int64_t step = -1, prev;
    read_state(ms, &w, gs, wv, &step);
    CHECK_EQ_INT(step, 0);
    int with_slow = 0, failures = 0;
    while (step < K && failures == 0) {
        memcpy(before, wv, sizeof before);
        prev = step;
        if (dist_fx_run_op(ms, train, &st) != VG_OK) {
            fprintf(stderr, "rank %d: run failed: %s\n", RANK, st.msg);
            failures++;
            CHECK(false);
            break;
        }
        read_state(ms, &w, gs, wv, &step);
        vg_sync_replicas_stats s;
        CHECK_OK(vg_sync_replicas_optimizer_stats(sr, &s, &st), &st);
        /* one update per run, on every rank; the global step once per update */
        CHECK_EQ_INT(step, prev + 1);
        CHECK_EQ_INT(s.last_step, prev);
        CHECK_EQ_INT(s.num_last_ranks, Ragg);
        unsigned mask = 0;
        bool chief_in = false;
        for (int i = 0; i < s.num_last_ranks; i++) {
            CHECK(s.last_ranks[i] >= 0 && s.last_ranks[i] < N);
            mask |= 1u << s.last_ranks[i];
            chief_in |= s.last_ranks[i] == 0;
        }
        CHECK_EQ_INT(popcount(mask), Ragg); /* R distinct ranks */
        CHECK(chief_in);
        if (slow >= 0 && (mask >> slow & 1)) with_slow++;
        /* the applied update is the mean of exactly those ranks' fresh gradients */
        CHECK_NEAR(before[0] - wv[0], (double)mask / Ragg, 0);
        CHECK_NEAR(before[1] - wv[1], (double)(prev + 1), 0);
        if (fabs((before[1] - wv[1]) - (double)(prev + 1)) > 0) failures++;
        for (int i = 0; i < 2; i++) want_shadow[i] = 0.5 * want_shadow[i] + 0.5 * wv[i];
    }
    {
        vg_tensor *t = NULL;
        CHECK_OK(dist_fx_fetch(ms, shadow, &t, &st), &st);
        for (int i = 0; t && i < 2; i++) CHECK_NEAR(((float *)vg_tensor_data(t))[i], want_shadow[i], 1e-4);
        vg_tensor_free(t);
    }
    CHECK_EQ_INT(step, K);
    CHECK_OK(vg_monitored_session_end(ms, VG_OK, &st), &st); /* the hook's end: the finish protocol */
    vg_sync_replicas_stats s;
    CHECK_OK(vg_sync_replicas_optimizer_stats(sr, &s, &st), &st);
    CHECK_EQ_INT(s.updates, K);
    CHECK_EQ_INT(s.gradients_applied, (int64_t)K * Ragg);
    if (RANK == 0) {
        /* every worker sent one gradient per run (K runs each), each update took R - 1 of
         * them: the chief dropped the other K (N - R), stale or surplus, during the steps
         * or in finish, whatever the timing; none was applied late (checked above) */
        CHECK_EQ_INT(s.stale_dropped, (int64_t)K * (N - Ragg));
    }
    if (RANK == 0 && slow >= 0) {
        printf("chief: %lld stale gradient(s) dropped, %d of %d updates with the slow rank %d\n",
               (long long)s.stale_dropped, with_slow, K, slow);
    }
    if (RANK != 0) CHECK_EQ_INT(s.stale_dropped, 0);
    /* identical variables everywhere: max and min over the ranks agree */
    double mx[3] = {wv[0], wv[1], (double)step}, mn[3] = {wv[0], wv[1], (double)step};
    CHECK_OK(vg_dist_allreduce(mx, 3, VG_DOUBLE, VG_REDUCE_MAX, &st), &st);
    CHECK_OK(vg_dist_allreduce(mn, 3, VG_DOUBLE, VG_REDUCE_MIN, &st), &st);
    for (int i = 0; i < 3; i++) CHECK_NEAR(mx[i], mn[i], 0);
    /* the second component is the sum of the steps: sum_{s<K} (s + 1) */
    CHECK_NEAR(wv[1], -(double)K * (K + 1) / 2, 0);
    vg_monitored_session_free(ms);
    vg_sync_replicas_optimizer_free(sr);
    vg_ema_free(ema);
    vg_optimizer_free(opt);
    vg_graph_free(g);
}

/* TF's argument checks (sync_replicas_optimizer.py) and vigil's: total_num_replicas is
 * the world's size; R > N is refused with its cause. */
static void test_sync_replicas__arguments(void) {
    vg_status st;
    vg_optimizer *opt = vg_optimizer_new_sgd(0.5);
    CHECK(vg_sync_replicas_optimizer_new(NULL, 1, 1, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_INVALID_ARGUMENT);
    CHECK(vg_sync_replicas_optimizer_new(opt, 0, N, &st) == NULL);
    CHECK_STR_CONTAINS(st.msg, "must be positive");
    CHECK(vg_sync_replicas_optimizer_new(opt, N + 1, N, &st) == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_INVALID_ARGUMENT, "replicas_to_aggregate=");
    CHECK(vg_sync_replicas_optimizer_new(opt, 1, N + 1, &st) == NULL);
    CHECK_STR_CONTAINS(st.msg, "mpirun -np");
    /* total_num_replicas <= 0: replicas_to_aggregate (TF's None) */
    vg_sync_replicas_optimizer *sr = vg_sync_replicas_optimizer_new(opt, N, 0, &st);
    CHECK(sr != NULL);
    CHECK_EQ_INT(vg_sync_replicas_optimizer_total_num_replicas(sr), N);
    vg_graph *g = vg_graph_new();
    vg_output loss, gs;
    vg_variable w;
    build(g, false, &loss, &w, &gs);
    vg_output none = {NULL, 0};
    CHECK(vg_sync_replicas_optimizer_minimize(sr, g, loss, none, NULL) == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Global step is required to check staleness");
    CHECK(!vg_sync_replicas_optimizer_applied(sr));
    vg_hook hook;
    CHECK_CODE(vg_sync_replicas_optimizer_make_session_run_hook(sr, RANK == 0, -2, &hook, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
    vg_sync_replicas_optimizer_free(sr);
    vg_optimizer_free(opt);
}

/* A rank that stops answering: the others fail within the collective timeout with
 * DEADLINE_EXCEEDED naming it (never a hang). The world is then broken; the test's
 * verdict is the line the judging rank prints (CTest's PASS_REGULAR_EXPRESSION). */
static void stall_run(int stall) {
    vg_status st;
    CHECK_OK(vg_dist_set_collective_timeout_ms(1000, &st), &st);
    vg_graph *g = vg_graph_new();
    vg_output loss, gs;
    vg_variable w;
    build(g, false, &loss, &w, &gs);
    vg_optimizer *opt = vg_optimizer_new_sgd(1.0);
    vg_sync_replicas_optimizer *sr = vg_sync_replicas_optimizer_new(opt, N, N, &st);
    vg_op *train = vg_sync_replicas_optimizer_minimize(sr, g, loss, gs, NULL);
    vg_session *sess = vg_session_new(g, NULL, &st);
    vg_op *init = vg_global_variables_initializer(g);
    CHECK_OK(vg_session_run_targets(sess, &init, 1, &st), &st);
    int64_t t0 = 0;
    vg_code rc = VG_OK;
    for (int i = 0; i < 8 && rc == VG_OK; i++) {
        if (RANK == stall && i == 3) {
            struct timespec ts = {4, 0};
            nanosleep(&ts, NULL);
        }
        struct timespec a;
        clock_gettime(CLOCK_MONOTONIC, &a);
        t0 = (int64_t)a.tv_sec * 1000 + a.tv_nsec / 1000000;
        rc = vg_session_run_targets(sess, &train, 1, &st);
    }
    struct timespec b;
    clock_gettime(CLOCK_MONOTONIC, &b);
    int64_t waited = (int64_t)b.tv_sec * 1000 + b.tv_nsec / 1000000 - t0;
    /* the chief names the workers that sent nothing; a worker names the chief */
    char want[64];
    if (stall == 0) snprintf(want, sizeof want, "no update from the chief (rank 0)");
    else snprintf(want, sizeof want, "no gradient from rank(s) %d", stall);
    int judge = stall == 0 ? 1 : 0;
    if (RANK == judge && rc == VG_DEADLINE_EXCEEDED && strstr(st.msg, want) && waited < 3000)
        printf("SYNC_REPLICAS_STALL_NAMED: rank %d failed after %lld ms: %s\n", RANK, (long long)waited, st.msg);
    else
        printf("rank %d: code %d after %lld ms: %s\n", RANK, (int)rc, (long long)waited, rc ? st.msg : "");
    fflush(stdout);
    vg_session_free(sess);
    vg_sync_replicas_optimizer_free(sr);
    vg_optimizer_free(opt);
    vg_graph_free(g);
    vg_dist_finalize(&st);
    _Exit(rc == VG_OK ? 0 : 3);
}

static double fetch1(vg_session *sess, vg_output x, int i) {
    vg_status st;
    vg_tensor *t = NULL;
    double v = NAN;
    CHECK_OK(vg_session_run1(sess, x, &t, &st), &st);
    if (t && i < vg_tensor_num_elements(t))
        v = vg_tensor_dtype(t) == VG_INT64 ? (double)((int64_t *)vg_tensor_data(t))[i] : ((float *)vg_tensor_data(t))[i];
    vg_tensor_free(t);
    return v;
}

/* TF's sync_replicas_optimizer_test.py (test2Workers, test3Workers1Backup): worker w's
 * gradients are 0.1 + 0.2 w for v0 (0.0), 0.9 + 0.2 w for v1 (1.0) and an IndexedSlices
 * [[0.1 + 0.2 w]] at row 1 for v_sparse ([[3], [4]]); GradientDescent(2.0). After an
 * update made of workers S: v0 = 0 - mean_S(0.1 + 0.2 w) * 2.0, and so on. Added:
 * v_rows ([N] zeros), where worker w's IndexedSlices holds row w only (value w + 1):
 * TF's SparseConditionalAccumulator averages a row over the gradients that hold it,
 * so row w moves by -(w + 1) * 2.0 when w is in S (divided by 1, not by R). */
static void test_sync_replicas__tf_values(void) {
    const int Ragg = env_int("VIGIL_TEST_SR_R", N);
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output gs = vg_get_or_create_global_step(g);
    vg_variable v0 = vg_variable_new(g, "v0", vg_const_f32(g, 0.0f, "v0_init"), VG_VAR_TRAINABLE);
    vg_variable v1 = vg_variable_new(g, "v1", vg_const_f32(g, 1.0f, "v1_init"), VG_VAR_TRAINABLE);
    float sp[2] = {3.0f, 4.0f};
    vg_variable vs = vg_variable_new(g, "v_sparse", vg_const_array(g, VG_FLOAT, (int64_t[]){2, 1}, 2, sp, "vs_init"),
                                     VG_VAR_TRAINABLE);
    float zeros[VG_SYNC_REPLICAS_MAX_RANKS] = {0};
    vg_variable vr = vg_variable_new(g, "v_rows", vg_const_array(g, VG_FLOAT, (int64_t[]){N}, 1, zeros, "vr_init"),
                                     VG_VAR_TRAINABLE);
    float g0 = 0.1f + (float)RANK * 0.2f, g1 = 0.9f + (float)RANK * 0.2f, gsv = 0.1f + (float)RANK * 0.2f;
    float gr = (float)RANK + 1.0f;
    int32_t one = 1, me = RANK, two = 2, nrows = N;
    vg_output slices[2];
    for (int k = 0; k < 2; k++) {
        vg_op_builder *b = vg_op_builder_new(g, "UnsortedSegmentSum", k ? "rows_grad" : "sparse_grad");
        vg_op_builder_add_input(b, k ? vg_const_array(g, VG_FLOAT, (int64_t[]){1}, 1, &gr, "gr")
                                     : vg_const_array(g, VG_FLOAT, (int64_t[]){1, 1}, 2, &gsv, "gsv"));
        vg_op_builder_add_input(b, vg_const_array(g, VG_INT32, (int64_t[]){1}, 1, k ? &me : &one, "idx"));
        vg_op_builder_add_input(b, vg_const_array(g, VG_INT32, NULL, 0, k ? &nrows : &two, "rows"));
        slices[k] = vg_out(vg_op_builder_finish(b), 0);
    }
    vg_output grads[4] = {vg_const_f32(g, g0, "g0"), vg_const_f32(g, g1, "g1"), slices[0], slices[1]};
    vg_output vars[4] = {v0.ref, v1.ref, vs.ref, vr.ref};
    vg_optimizer *opt = vg_optimizer_new_sgd(2.0);
    vg_sync_replicas_optimizer *sr = vg_sync_replicas_optimizer_new(opt, Ragg, N, &st);
    CHECK(sr != NULL);
    if (!sr) return;
    vg_op *train = vg_sync_replicas_optimizer_apply_gradients(sr, g, grads, vars, 4, gs, NULL);
    CHECK(train != NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *sess = vg_session_new(g, NULL, &st);
    vg_op *init = vg_global_variables_initializer(g);
    CHECK_OK(vg_session_run_targets(sess, &init, 1, &st), &st);
    CHECK_NEAR(fetch1(sess, gs, 0), 0, 0);
    double e0 = 0, e1 = 1, es = 4, er[VG_SYNC_REPLICAS_MAX_RANKS] = {0};
    for (int step = 1; step <= 2; step++) {
        CHECK_OK(vg_session_run_targets(sess, &train, 1, &st), &st);
        vg_sync_replicas_stats s;
        CHECK_OK(vg_sync_replicas_optimizer_stats(sr, &s, &st), &st);
        CHECK_EQ_INT(s.num_last_ranks, Ragg);
        double m0 = 0, m1 = 0;
        for (int i = 0; i < s.num_last_ranks; i++) {
            int w = s.last_ranks[i];
            m0 += 0.1 + 0.2 * w;
            m1 += 0.9 + 0.2 * w;
            er[w] -= (w + 1) * 2.0;
        }
        e0 -= m0 / Ragg * 2.0;
        e1 -= m1 / Ragg * 2.0;
        es -= m0 / Ragg * 2.0;
        CHECK_NEAR(fetch1(sess, gs, 0), step, 0);
        CHECK_NEAR(fetch1(sess, v0.read, 0), e0, 1e-5);
        CHECK_NEAR(fetch1(sess, v1.read, 0), e1, 1e-5);
        CHECK_NEAR(fetch1(sess, vs.read, 0), 3.0, 0);
        CHECK_NEAR(fetch1(sess, vs.read, 1), es, 1e-5);
        for (int w = 0; w < N; w++) CHECK_NEAR(fetch1(sess, vr.read, w), er[w], 1e-5);
    }
    if (N == 2 && Ragg == 2) { /* test2Workers' values */
        CHECK_NEAR(e0, 0 - 2 * (0.1 + 0.3) / 2 * 2.0, 1e-9);
        CHECK_NEAR(e1, 1 - 2 * (0.9 + 1.1) / 2 * 2.0, 1e-9);
    }
    CHECK_OK(vg_sync_replicas_optimizer_finish(sr, &st), &st);
    CHECK_OK(vg_sync_replicas_optimizer_finish(sr, &st), &st); /* again: no-op */
    CHECK_CODE(vg_session_run_targets(sess, &train, 1, &st), VG_FAILED_PRECONDITION);
    vg_session_free(sess);
    vg_sync_replicas_optimizer_free(sr);
    vg_optimizer_free(opt);
    vg_graph_free(g);
}

/* --die (under mpiexec -np 2, R = 2): rank 1 SIGKILLs itself at global step 3 while the
 * chief waits for its gradient; the chief prints what its wait returned (within the
 * 1 s collective timeout: DEADLINE_EXCEEDED naming rank 1), unless mpirun killed it
 * first. */
static int die_child(void) {
    vg_status st;
    if (vg_dist_init(&st) != VG_OK || vg_dist_size() != 2) return 2;
    RANK = vg_dist_rank();
    N = 2;
    vg_dist_set_collective_timeout_ms(1000, &st);
    vg_graph *g = vg_graph_new();
    vg_output loss, gs;
    vg_variable w;
    build(g, false, &loss, &w, &gs);
    vg_optimizer *opt = vg_optimizer_new_sgd(1.0);
    vg_sync_replicas_optimizer *sr = vg_sync_replicas_optimizer_new(opt, 2, 2, &st);
    vg_op *train = sr ? vg_sync_replicas_optimizer_minimize(sr, g, loss, gs, NULL) : NULL;
    vg_session *sess = train ? vg_session_new(g, NULL, &st) : NULL;
    vg_op *init = vg_global_variables_initializer(g);
    if (!sess || vg_session_run_targets(sess, &init, 1, &st) != VG_OK) return 4;
    vg_code rc = VG_OK;
    for (int i = 0; i < 8 && rc == VG_OK; i++) {
        if (RANK == 1 && i == 3) raise(SIGKILL);
        rc = vg_session_run_targets(sess, &train, 1, &st);
    }
    printf("killed-peer: rank %d code %d: %s\n", RANK, (int)rc, rc ? st.msg : "");
    fflush(stdout);
    _exit(3);
}

/* A worker killed mid-training: the job ends (mpiexec non-zero) well within bounds,
 * never a hang; when the chief gets to report, its status names the dead rank. The
 * plain (1-rank) run starts mpiexec -np 2 on itself. */
static void test_sync_replicas__killed_rank_ends_job(void) {
    char buf[1024];
    /* within 30 s: mpiexec's start and a 1 s timeout; a hang would reach 60 s */
    if (!dist_fx_dying_job("killed worker", 60, 30.0, buf, sizeof buf)) return;
    if (strstr(buf, "killed-peer: rank 0 code")) {
        CHECK(strstr(buf, "rank(s) 1") || strstr(buf, "a peer rank is gone"));
    }
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--die") == 0) return die_child();
    dist_fx_init(&RANK, &N);
    int stall = env_int("VIGIL_TEST_SR_STALL", -1);
    if (stall >= 0 && N > 1) stall_run(stall);
    RUN_TEST(test_sync_replicas__arguments);
    RUN_TEST(test_sync_replicas__backup_workers);
    RUN_TEST(test_sync_replicas__tf_values);
    RUN_TEST(test_sync_replicas__killed_rank_ends_job);
    return dist_fx_end();
}
