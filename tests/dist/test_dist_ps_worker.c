/* test_dist_ps_worker.c - a TF1 ps/worker program ported literally trains one model on
 * every rank, never N apart in silence (issue 28). CTest runs it alone (a 1-rank world)
 * and under mpiexec -np 2.
 *
 * The port is the shape of TF's distributed trainer (tensorflow/ecosystem docker/
 * mnist.py, TF's "Distributed TensorFlow" how-to): ClusterSpec({"ps": [...], "worker":
 * [...]}), Server(cluster, "worker", task_index), with tf.device(
 * replica_device_setter(worker_device="/job:worker/task:%d", cluster)): the model and a
 * plain optimizer.minimize(loss, global_step), then MonitoredTrainingSession(
 * master=server.target, is_chief=(task_index == 0), hooks=[StopAtStepHook(last_step)])
 * and `while not sess.should_stop(): sess.run(train_op)`. After the steps every rank's
 * variables must have the same bytes (compared by allreduce of a checksum), and equal
 * to one process trained on the concatenated batch (the mean of the ranks' mean-loss
 * gradients is the gradient of the mean loss over the whole batch). */
#include "dist_fixture.h"
#include "test_util.h"
#include "status_fixture.h"
#include <vigil/vigil.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static int R, N;

enum { B = 3, DIN = 4, DOUT = 3, STEPS = 6 };
#define LR 0.1

static int count_ops(vg_graph *g, const char *type) {
    int c = 0;
    for (int i = 0; i < vg_graph_num_ops(g); i++) c += strcmp(vg_op_type(vg_graph_op(g, i)), type) == 0;
    return c;
}

/* Rank r's batch at a step: rows r * B .. r * B + B - 1 of the global batch. */
static void batch(int r, int step, float *x, float *y) {
    for (int i = 0; i < B; i++) {
        int row = r * B + i;
        for (int j = 0; j < DIN; j++) x[i * DIN + j] = (float)sin(0.3 * row + 0.7 * j + 0.1 * step);
        for (int k = 0; k < DOUT; k++) y[i * DOUT + k] = (float)cos(0.2 * row - 0.5 * k + 0.05 * step);
    }
}

/* Rank r's initial values (different on every rank: the chief's must win). */
static void init_values(int r, float *w, float *b) {
    for (int j = 0; j < DIN; j++)
        for (int k = 0; k < DOUT; k++) w[j * DOUT + k] = 0.1f * (float)(j - k) + 0.5f * (float)r;
    for (int k = 0; k < DOUT; k++) b[k] = 0.2f * (float)r + 0.01f * (float)k;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ULL;
    return h;
}

/* True when v is the same on every rank. */
static bool same_everywhere(int64_t v) {
    vg_status st;
    int64_t lo = v, hi = v;
    CHECK_OK(vg_dist_allreduce(&lo, 1, VG_INT64, VG_REDUCE_MIN, &st), &st);
    CHECK_OK(vg_dist_allreduce(&hi, 1, VG_INT64, VG_REDUCE_MAX, &st), &st);
    return lo == hi;
}

static vg_cluster_spec *cluster(int workers) {
    vg_status st;
    vg_cluster_spec *cs = vg_cluster_spec_new();
    const char *hosts[8];
    char buf[8][32];
    for (int i = 0; i < workers && i < 8; i++) {
        snprintf(buf[i], sizeof buf[i], "localhost:%d", 2223 + i);
        hosts[i] = buf[i];
    }
    CHECK_OK(vg_cluster_spec_parse_job(cs, "ps", "localhost:2222", &st), &st);
    CHECK_OK(vg_cluster_spec_add_job(cs, "worker", hosts, workers, &st), &st);
    return cs;
}

/* The end of a test that joined cluster(n) through a server: frees server, then cs. */
static void free_server_cluster(vg_server *server, vg_cluster_spec *cs) {
    vg_server_free(server);
    vg_cluster_spec_free(cs);
}

/* The model: pred = x w + b, loss = mean((pred - y)^2). */
static vg_output model(vg_graph *g, vg_output x, vg_output y, int init_rank, vg_variable *w, vg_variable *b) {
    float w0[DIN * DOUT], b0[DOUT];
    init_values(init_rank, w0, b0);
    *w = vg_variable_new(g, "weights", vg_const_array(g, VG_FLOAT, (int64_t[]){DIN, DOUT}, 2, w0, "w_init"),
                         VG_VAR_TRAINABLE);
    *b = vg_variable_new(g, "biases", vg_const_array(g, VG_FLOAT, (int64_t[]){DOUT}, 1, b0, "b_init"),
                         VG_VAR_TRAINABLE);
    vg_output pred = vg_add(g, vg_matmul(g, x, w->read, false, false, NULL), b->read, "pred");
    return vg_reduce_mean(g, vg_square(g, vg_sub(g, pred, y, NULL), NULL), NULL, -1, false, "loss");
}

/* The reference: one process, the ranks' batches concatenated, rank 0's initial values,
 * the same steps of plain SGD on this process's own gradients. */
static void reference(float *w_out, float *b_out) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){N * B, DIN}, 2, "x");
    vg_output y = vg_placeholder(g, VG_FLOAT, (int64_t[]){N * B, DOUT}, 2, "y");
    vg_variable w, b;
    vg_output loss = model(g, x, y, 0, &w, &b);
    vg_output vars[2] = {w.ref, b.ref}, grads[2];
    CHECK_OK(vg_gradients(g, &loss, 1, vars, 2, NULL, grads, &st), &st); /* this process's own */
    vg_optimizer *opt = vg_optimizer_new_sgd(LR);
    vg_op *train = vg_optimizer_apply_gradients(opt, g, grads, vars, 2, (vg_output){NULL, 0}, NULL);
    CHECK(train != NULL);
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    if (s && train) {
        CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
        float *xs = malloc(sizeof(float) * N * B * DIN), *ys = malloc(sizeof(float) * N * B * DOUT);
        for (int step = 0; step < STEPS; step++) {
            for (int r = 0; r < N; r++) batch(r, step, xs + r * B * DIN, ys + r * B * DOUT);
            vg_tensor *xt = vg_tensor_new(VG_FLOAT, (int64_t[]){N * B, DIN}, 2, &st);
            vg_tensor *yt = vg_tensor_new(VG_FLOAT, (int64_t[]){N * B, DOUT}, 2, &st);
            memcpy(vg_tensor_data(xt), xs, sizeof(float) * N * B * DIN);
            memcpy(vg_tensor_data(yt), ys, sizeof(float) * N * B * DOUT);
            CHECK_OK(vg_session_run(s, NULL, (vg_output[]){x, y}, (vg_tensor *[]){xt, yt}, 2, NULL, NULL, 0, &train, 1,
                                    NULL, &st),
                     &st);
            vg_tensor_free(xt);
            vg_tensor_free(yt);
        }
        free(xs);
        free(ys);
        vg_tensor *t = NULL;
        CHECK_OK(vg_session_run1(s, w.read, &t, &st), &st);
        if (t) memcpy(w_out, vg_tensor_data(t), sizeof(float) * DIN * DOUT);
        vg_tensor_free(t);
        t = NULL;
        CHECK_OK(vg_session_run1(s, b.read, &t, &st), &st);
        if (t) memcpy(b_out, vg_tensor_data(t), sizeof(float) * DOUT);
        vg_tensor_free(t);
    }
    vg_session_free(s);
    vg_optimizer_free(opt);
    vg_graph_free(g);
}

/* The literal port. split: compute_gradients / apply_gradients (with GATE_GRAPH, and
 * the gradients scaled by 1 between them, as a program that clips would) instead of
 * minimize. Besides the model, a "ps" counter that only the chief increments (TF1: a
 * variable on a ps task, seen by every worker); every rank runs the on-demand
 * broadcast of it once, halfway. */
static void ps_worker_port(bool split) {
    vg_status st;
    vg_cluster_spec *cs = cluster(N);
    vg_server *server = vg_server_new(cs, "worker", R, &st); /* joins the MPI world */
    CHECK(server != NULL);
    char worker_device[64];
    snprintf(worker_device, sizeof worker_device, "/job:worker/task:%d", R);
    vg_graph *g = vg_graph_new();
    CHECK_OK(vg_graph_push_device(g, vg_replica_device_setter(cs, worker_device)), &st);
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){B, DIN}, 2, "x");
    vg_output y = vg_placeholder(g, VG_FLOAT, (int64_t[]){B, DOUT}, 2, "y");
    vg_variable w, b;
    vg_output loss = model(g, x, y, R, &w, &b);
    vg_output gs = vg_get_or_create_global_step(g);
    vg_optimizer *opt = vg_optimizer_new_sgd(LR);
    vg_op *train_op;
    if (!split) {
        train_op = vg_optimizer_minimize(opt, g, loss, NULL, 0, gs, NULL);
    } else {
        vg_optimizer_set_gate_gradients(opt, VG_GATE_GRAPH);
        vg_output vars[2] = {w.ref, b.ref}, grads[2];
        CHECK_OK(vg_optimizer_compute_gradients(opt, g, loss, vars, 2, grads, &st), &st);
        for (int i = 0; i < 2; i++) grads[i] = vg_mul(g, grads[i], vg_const_f32(g, 1.0f, NULL), "clip");
        train_op = vg_optimizer_apply_gradients(opt, g, grads, vars, 2, gs, NULL);
    }
    CHECK(train_op != NULL);
    vg_variable counter = vg_variable_new(g, "ps_counter", vg_const_i64(g, 0, NULL), 0);
    vg_output inc = vg_assign_add(g, counter.ref, vg_const_i64(g, 1, NULL), "chief_increment");
    vg_op *sync = vg_dist_broadcast_variables(g, &counter.ref, 1, 0, "sync_counter");
    CHECK(sync != NULL);
    vg_graph_pop_device(g);
    CHECK_OK(vg_graph_status(g, &st), &st);
    /* one fused mean of the two gradients on more than one rank, none on one */
    CHECK_EQ_INT(count_ops(g, "VigilFusedAllreduce"), N > 1 ? 1 : 0);
    /* the setter's device strings pass vigil's placement check */
    CHECK_OK(vg_config_check_placement(g, NULL, &st), &st);

    vg_hook hooks[2];
    CHECK_OK(vg_stop_at_step_hook(-1, STEPS, &hooks[0], &st), &st);
    vg_final_ops_options fo = {0};
    vg_output finals[4] = {w.read, b.read, gs, counter.read};
    fo.final_ops = finals;
    fo.nfinal_ops = 4;
    CHECK_OK(vg_final_ops_hook(&fo, &hooks[1], &st), &st);
    vg_hook final_hook = hooks[1];
    vg_mts_options o = {0};
    o.not_chief = R != 0; /* is_chief=(task_index == 0) */
    o.hooks = hooks;
    o.nhooks = 2;
    o.no_step_counter = true;
    vg_monitored_session *sess = vg_distributed_training_session_new(g, vg_server_target(server), &o, &st);
    CHECK(sess != NULL);
    if (!sess) {
        fprintf(stderr, "%s\n", st.msg);
        return;
    }
    vg_code rc = VG_OK;
    int step = 0;
    while (rc == VG_OK && !vg_monitored_session_should_stop(sess)) {
        if (R == 0) rc = dist_fx_run_op(sess, inc.op, &st); /* a write only the chief makes */
        if (rc == VG_OK && step == STEPS / 2) rc = dist_fx_run_op(sess, sync, &st); /* every rank, the same step */
        vg_run_args a = {0};
        float xs[B * DIN], ys[B * DOUT];
        batch(R, step, xs, ys);
        vg_tensor *xt = vg_tensor_new(VG_FLOAT, (int64_t[]){B, DIN}, 2, &st);
        vg_tensor *yt = vg_tensor_new(VG_FLOAT, (int64_t[]){B, DOUT}, 2, &st);
        memcpy(vg_tensor_data(xt), xs, sizeof xs);
        memcpy(vg_tensor_data(yt), ys, sizeof ys);
        a.feeds = (vg_output[]){x, y};
        a.feed_values = (vg_tensor *[]){xt, yt};
        a.nfeeds = 2;
        a.targets = &train_op;
        a.ntargets = 1;
        if (rc == VG_OK) rc = vg_monitored_session_run(sess, &a, NULL, NULL, &st);
        vg_tensor_free(xt);
        vg_tensor_free(yt);
        step++;
    }
    CHECK_OK(rc, &st);
    CHECK_OK(vg_monitored_session_end(sess, rc, &st), &st);
    CHECK_EQ_INT(step, STEPS);
    int nv = 0;
    vg_tensor *const *v = vg_final_ops_hook_values(&final_hook, &nv);
    CHECK_EQ_INT(nv, 4);
    if (v && nv == 4) {
        const float *wv = vg_tensor_data(v[0]), *bv = vg_tensor_data(v[1]);
        int64_t gsv = *(const int64_t *)vg_tensor_data(v[2]), cv = *(const int64_t *)vg_tensor_data(v[3]);
        CHECK_EQ_INT(gsv, STEPS);
        uint64_t h = fnv(1469598103934665603ULL, wv, sizeof(float) * DIN * DOUT);
        h = fnv(h, bv, sizeof(float) * DOUT);
        h = fnv(h, &gsv, sizeof gsv);
        /* every replica holds the same bytes */
        CHECK(same_everywhere((int64_t)h));
        /* ... which are one process's training on the whole batch */
        float rw[DIN * DOUT], rb[DOUT], w0[DIN * DOUT], b0[DOUT];
        reference(rw, rb);
        init_values(0, w0, b0);
        double moved = 0;
        for (int i = 0; i < DIN * DOUT; i++) {
            CHECK_NEAR(wv[i], rw[i], 1e-5);
            moved += fabs(wv[i] - w0[i]);
        }
        for (int k = 0; k < DOUT; k++) CHECK_NEAR(bv[k], rb[k], 1e-5);
        CHECK(moved > 1e-2); /* it trained */
        /* the chief's counter reached every rank at the broadcast (STEPS / 2 + 1 then);
         * the chief's later writes stayed its own */
        CHECK_EQ_INT(cv, R == 0 ? STEPS : STEPS / 2 + 1);
    }
    vg_monitored_session_free(sess);
    vg_optimizer_free(opt);
    vg_graph_free(g);
    free_server_cluster(server, cs);
}

static void test_ps_worker__literal_port_minimize(void) { ps_worker_port(false); }
static void test_ps_worker__literal_port_compute_apply(void) { ps_worker_port(true); }

/* A train op built with a plain optimizer before vg_dist_init has no collective: the
 * distributed session refuses it on more than one rank, naming the fix. Runs first,
 * before anything joins the world. */
static void test_ps_worker__refuses_train_op_built_before_init(void) {
    vg_status st;
    CHECK(!vg_dist_initialized());
    vg_graph *g = vg_graph_new();
    vg_output x = vg_const_fill(g, VG_FLOAT, (int64_t[]){2, DIN}, 2, 0.5, "x");
    vg_variable w = vg_variable_new(g, "w", vg_const_fill(g, VG_FLOAT, (int64_t[]){DIN, DOUT}, 2, 0.25, "w_init"),
                                    VG_VAR_TRAINABLE);
    vg_output loss = vg_reduce_mean(g, vg_square(g, vg_matmul(g, x, w.read, false, false, NULL), NULL), NULL, -1,
                                    false, "loss");
    vg_optimizer *opt = vg_optimizer_new_sgd(0.1);
    vg_op *train = vg_optimizer_minimize(opt, g, loss, NULL, 0, vg_get_or_create_global_step(g), NULL);
    CHECK(train != NULL);
    CHECK_EQ_INT(count_ops(g, "VigilFusedAllreduce"), 0); /* no world yet: nothing to average with */
    CHECK_OK(vg_dist_init(&st), &st);                     /* e.g. the Server made after the model */
    int n = vg_dist_size(), r = vg_dist_rank();
    vg_cluster_spec *cs = cluster(n);
    vg_server *server = vg_server_new(cs, "worker", r, &st);
    CHECK(server != NULL);
    vg_mts_options o = {0};
    o.not_chief = r != 0;
    o.no_step_counter = true;
    vg_monitored_session *ms = vg_distributed_training_session_new(g, vg_server_target(server), &o, &st);
    if (n > 1) {
        CHECK(ms == NULL);
        EXPECT_CODE_MSG(st.code, &st, VG_FAILED_PRECONDITION, "ApplyGradientDescent");
        CHECK_STR_CONTAINS(st.msg, "'w'");
        CHECK_STR_CONTAINS(st.msg, "vg_dist_init");
        CHECK_STR_CONTAINS(st.msg, "vg_dist_minimize");
        CHECK_STR_CONTAINS(st.msg, "SyncReplicasOptimizer");
    } else { /* one rank: nothing to average, the session trains */
        CHECK(ms != NULL);
        if (ms) CHECK_OK(dist_fx_run_op(ms, train, &st), &st);
        if (ms) CHECK_OK(vg_monitored_session_end(ms, VG_OK, &st), &st);
    }
    vg_monitored_session_free(ms);
    /* the same model built now (after vg_dist_init) averages and is accepted */
    vg_graph *g2 = vg_graph_new();
    x = vg_const_fill(g2, VG_FLOAT, (int64_t[]){2, DIN}, 2, 0.5, "x");
    w = vg_variable_new(g2, "w", vg_const_fill(g2, VG_FLOAT, (int64_t[]){DIN, DOUT}, 2, 0.25, "w_init"),
                        VG_VAR_TRAINABLE);
    loss = vg_reduce_mean(g2, vg_square(g2, vg_matmul(g2, x, w.read, false, false, NULL), NULL), NULL, -1, false,
                          "loss");
    train = vg_optimizer_minimize(opt, g2, loss, NULL, 0, vg_get_or_create_global_step(g2), NULL);
    CHECK(train != NULL);
    ms = vg_distributed_training_session_new(g2, vg_server_target(server), &o, &st);
    CHECK(ms != NULL);
    if (ms) {
        CHECK_OK(dist_fx_run_op(ms, train, &st), &st);
        CHECK_OK(vg_monitored_session_end(ms, VG_OK, &st), &st);
    }
    vg_monitored_session_free(ms);
    vg_graph_free(g2);
    free_server_cluster(server, cs);
    vg_optimizer_free(opt);
    vg_graph_free(g);
}

/* vg_dist_minimize reduces once (its own allreduce, not compute_gradients' as well); a
 * gradient that compute_gradients already averaged is not averaged again. */
static void test_dist_optimizer__never_twice(void) {
    vg_status st;
    dist_fx_model m = dist_fx_dense_model(false);
    vg_op *train = vg_dist_minimize(m.opt, m.g, m.loss, NULL, 0, vg_get_or_create_global_step(m.g), NULL, NULL);
    CHECK(train != NULL);
    CHECK_EQ_INT(count_ops(m.g, "VigilFusedAllreduce"), 1);
    vg_output grads[2];
    CHECK_OK(vg_optimizer_compute_gradients(m.opt, m.g, m.loss, NULL, 0, grads, &st), &st);
    int after_plain = count_ops(m.g, "VigilFusedAllreduce");
    CHECK_EQ_INT(after_plain, N > 1 ? 2 : 1); /* averaged only where there are ranks to average */
    CHECK_OK(vg_dist_allreduce_gradients(m.g, grads, 2, NULL, grads, &st), &st);
    CHECK_EQ_INT(count_ops(m.g, "VigilFusedAllreduce"), after_plain + (N > 1 ? 0 : 1));
    dist_fx_model_free(&m);
}

/* tf.train.replica_device_setter's strings name this process's device: vigil's placer
 * (no soft placement) accepts what the setter returns; a GPU part is still refused. */
static void test_ps_worker__device_setter_passes_placement(void) {
    vg_status st;
    vg_cluster_spec *cs = cluster(N);
    CHECK(strcmp(vg_replica_device_setter(cs, "/job:worker/task:1"), "") == 0);
    CHECK(strcmp(vg_replica_device_setter(cs, "/job:worker/replica:0/task:1/cpu:0"), "/cpu:0") == 0);
    CHECK(strcmp(vg_replica_device_setter(cs, "/job:worker/task:0/device:CPU:0"), "/device:CPU:0") == 0);
    CHECK(strcmp(vg_replica_device_setter(cs, "/job:ps/task:0"), "") == 0);
    CHECK(strcmp(vg_replica_device_setter(cs, NULL), "") == 0);
    const char *devs[] = {"/job:worker/task:1", "/job:worker/task:0/cpu:0", "/job:worker/replica:0/task:3/device:CPU:0",
                          "/job:ps/task:0"};
    vg_graph *g = vg_graph_new();
    for (int i = 0; i < 4; i++) {
        CHECK_OK(vg_graph_push_device(g, vg_replica_device_setter(cs, devs[i])), &st);
        vg_variable v = vg_variable_new(g, NULL, vg_const_f32(g, (float)i, NULL), VG_VAR_TRAINABLE);
        vg_add(g, v.read, v.read, NULL);
        vg_graph_pop_device(g);
    }
    vg_config_proto c = {0}; /* allow_soft_placement = false */
    CHECK_OK(vg_config_check_placement(g, &c, &st), &st);
    vg_session *s = vg_session_new_with_config(g, &c, &st);
    CHECK(s != NULL);
    vg_session_free(s);
    /* the raw TF string is not this process's name for its device ... */
    CHECK_OK(vg_graph_push_device(g, "/job:worker/task:1"), &st);
    vg_const_f32(g, 1, "raw");
    vg_graph_pop_device(g);
    CHECK_CODE(vg_config_check_placement(g, &c, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
    /* ... and a GPU stays a device vigil does not have */
    g = vg_graph_new();
    CHECK_OK(vg_graph_push_device(g, vg_replica_device_setter(cs, "/job:worker/task:0/gpu:0")), &st);
    vg_const_f32(g, 1, "on_gpu");
    vg_graph_pop_device(g);
    EXPECT_CODE_MSG(vg_config_check_placement(g, &c, &st), &st, VG_INVALID_ARGUMENT, "/gpu:0");
    vg_graph_free(g);
    vg_cluster_spec_free(cs);
}

/* vg_dist_broadcast_variables / _global_variables: run at any step, every rank takes
 * the root's values; a write one rank made alone reaches the others only so. */
static void test_broadcast_variables__on_demand(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    float a0[3] = {1.0f + (float)R, 10.0f * (float)R, -2.0f};
    vg_variable a = vg_variable_new(g, "a", vg_const_array(g, VG_FLOAT, (int64_t[]){3}, 1, a0, "a_init"),
                                    VG_VAR_TRAINABLE);
    vg_variable counter = vg_variable_new(g, "counter", vg_const_i64(g, 0, NULL), 0);
    vg_output inc = vg_assign_add(g, counter.ref, vg_const_i64(g, 5, NULL), "inc");
    vg_op *all = vg_dist_broadcast_global_variables(g, 0, NULL);
    vg_op *last = vg_dist_broadcast_variables(g, &counter.ref, 1, N - 1, "sync_counter");
    CHECK(all != NULL && last != NULL);
    if (all) CHECK(strcmp(vg_op_name(all), "broadcast_global_variables/group") == 0);
    CHECK_EQ_INT(count_ops(g, "HorovodBroadcast"), 3);
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    if (s && all && last) {
        CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
        if (R == 0) CHECK_OK(vg_session_run_targets(s, &inc.op, 1, &st), &st); /* the chief alone */
        vg_tensor *t = NULL;
        CHECK_OK(vg_session_run1(s, counter.read, &t, &st), &st);
        if (t) CHECK_EQ_INT(*(int64_t *)vg_tensor_data(t), R == 0 ? 5 : 0); /* its own replica only */
        vg_tensor_free(t);
        CHECK_OK(vg_session_run_targets(s, &all, 1, &st), &st);
        t = NULL;
        CHECK_OK(vg_session_run1(s, a.read, &t, &st), &st);
        if (t) {
            CHECK_NEAR(((float *)vg_tensor_data(t))[0], 1.0, 0);
            CHECK_NEAR(((float *)vg_tensor_data(t))[1], 0.0, 0);
            vg_tensor_free(t);
        }
        t = NULL;
        CHECK_OK(vg_session_run1(s, counter.read, &t, &st), &st);
        if (t) CHECK_EQ_INT(*(int64_t *)vg_tensor_data(t), 5);
        vg_tensor_free(t);
        if (R == N - 1) { /* the last rank writes twice, then it is the root */
            CHECK_OK(vg_session_run_targets(s, &inc.op, 1, &st), &st);
            CHECK_OK(vg_session_run_targets(s, &inc.op, 1, &st), &st);
        }
        CHECK_OK(vg_session_run_targets(s, &last, 1, &st), &st);
        t = NULL;
        CHECK_OK(vg_session_run1(s, counter.read, &t, &st), &st);
        if (t) CHECK_EQ_INT(*(int64_t *)vg_tensor_data(t), 15);
        vg_tensor_free(t);
    }
    free_session_graph(s, g);
    /* build-time errors (the graph's) */
    g = vg_graph_new();
    vg_variable v = vg_variable_new(g, "v", vg_const_f32(g, 1, NULL), 0);
    CHECK(vg_dist_broadcast_variables(g, &v.ref, 1, N, NULL) == NULL); /* root outside the world */
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "root_rank");
    vg_graph_free(g);
    g = vg_graph_new();
    v = vg_variable_new(g, "v", vg_const_f32(g, 1, NULL), 0);
    CHECK(vg_dist_broadcast_variables(g, &v.read, 1, 0, NULL) == NULL); /* a read, not the variable */
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "v/read");
    vg_graph_free(g);
}

/* SyncReplicasOptimizer(opt, replicas_to_aggregate, total_num_replicas): each refusal
 * names its cause (TF's sync_replicas_optimizer.py: total_num_replicas None means
 * replicas_to_aggregate; total > replicas_to_aggregate is backup replicas, total <
 * replicas_to_aggregate several batches per replica and update). */
static void test_sync_replicas__names_the_cause(void) {
    vg_status st;
    vg_optimizer *opt = vg_optimizer_new_sgd(0.1);
    char want[96];
    CHECK(vg_sync_replicas_new(opt, N + 1, 0, &st) == NULL); /* more replicas than ranks */
    CHECK_EQ_INT(st.code, VG_INVALID_ARGUMENT);
    snprintf(want, sizeof want, "the MPI world has %d rank(s)", N);
    CHECK_STR_CONTAINS(st.msg, want);
    snprintf(want, sizeof want, "mpirun -np %d", N + 1);
    CHECK_STR_CONTAINS(st.msg, want);
    CHECK(vg_sync_replicas_new(opt, N, N + 1, &st) == NULL);
    CHECK_STR_CONTAINS(st.msg, "1 backup replica(s)");
    CHECK(vg_sync_replicas_new(opt, N + 1, N, &st) == NULL);
    CHECK_STR_CONTAINS(st.msg, "several batches");
    CHECK(vg_sync_replicas_new(opt, 0, 0, &st) == NULL);
    CHECK_STR_CONTAINS(st.msg, "must be positive");
    vg_sync_replicas *sr = vg_sync_replicas_new(opt, N, N, &st);
    CHECK(sr != NULL);
    vg_sync_replicas_free(sr);
    vg_optimizer_free(opt);
}

int main(void) {
    RUN_TEST(test_ps_worker__refuses_train_op_built_before_init); /* first: before vg_dist_init */
    dist_fx_init(&R, &N);
    RUN_TEST(test_ps_worker__literal_port_minimize);
    RUN_TEST(test_ps_worker__literal_port_compute_apply);
    RUN_TEST(test_dist_optimizer__never_twice);
    RUN_TEST(test_ps_worker__device_setter_passes_placement);
    RUN_TEST(test_broadcast_variables__on_demand);
    RUN_TEST(test_sync_replicas__names_the_cause);
    return dist_fx_end();
}
