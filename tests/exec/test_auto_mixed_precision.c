/* test_auto_mixed_precision.c - TF's auto_mixed_precision rewrite with bfloat16 (issue
 * 34, item 2): the rewrite's choices op by op against TF 1.15's lists and rules
 * (auto_mixed_precision.cc: allow ops painted; deny ops and what they feed through
 * infer/clear ops kept float32; infer ops between allow ops painted; clear ops next to
 * painted ops painted; fetched nodes preserved), seen through the values: a painted
 * node's float32 output holds bfloat16 values (low 16 bits zero) and equals the op on
 * bfloat16-rounded inputs; an unpainted one computes in float32. Switched on by the
 * config (rewrite_options.auto_mixed_precision), by
 * vg_enable_mixed_precision_graph_rewrite, and off by default. A small training run's
 * loss tracks float32's, with float32 variables (master weights). */
#include "test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float rb(float f) { return vg_bfloat16_to_float(vg_float_to_bfloat16(f)); }

enum { R = 4, C = 4 };

typedef struct net {
    vg_graph *g;
    vg_output x;
    vg_output node[8]; /* m1 r e a m2 t m3 s */
    vg_output fetch[8];
    vg_tensor *w, *c;
} net;

static const char *const names[8] = {"m1", "r", "e", "a", "m2", "t", "m3", "s"};

/* x -> MatMul m1 (allow) -> Relu r (clear) -> Exp e (deny) -> Add a (infer, after a deny
 * op: deny) -> MatMul m2 (allow) -> Tanh t (infer between allow ops) -> MatMul m3 (allow)
 * -> Sigmoid s (infer, not between allow ops); each fetched through an Identity. */
static void build(net *n, const float *wv) {
    vg_status st = {0};
    n->g = vg_graph_new();
    int64_t d[2] = {R, C};
    n->x = vg_placeholder(n->g, VG_FLOAT, d, 2, "x");
    n->w = vg_tensor_new_copy(VG_FLOAT, d, 2, wv, sizeof(float) * R * C, &st);
    float cv[R * C];
    for (int i = 0; i < R * C; i++) cv[i] = 0.1f * (float)i + 0.0123f;
    n->c = vg_tensor_new_copy(VG_FLOAT, d, 2, cv, sizeof cv, &st);
    vg_output w = vg_const(n->g, n->w, "w"), c = vg_const(n->g, n->c, "c");
    vg_output *o = n->node;
    o[0] = vg_matmul(n->g, n->x, w, false, false, "m1");
    o[1] = vg_relu(n->g, o[0], "r");
    o[2] = vg_exp(n->g, o[1], "e");
    o[3] = vg_add(n->g, o[2], c, "a");
    o[4] = vg_matmul(n->g, o[3], w, false, false, "m2");
    o[5] = vg_tanh(n->g, o[4], "t");
    o[6] = vg_matmul(n->g, o[5], w, false, false, "m3");
    o[7] = vg_sigmoid(n->g, o[6], "s");
    for (int i = 0; i < 8; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "%s_out", names[i]);
        n->fetch[i] = vg_identity(n->g, o[i], nm);
    }
    CHECK_OK(vg_graph_status(n->g, &st), &st);
}

static void run(net *n, vg_session *s, const float *xv, float out[8][R * C]) {
    vg_status st = {0};
    int64_t d[2] = {R, C};
    vg_tensor *x = vg_tensor_new_copy(VG_FLOAT, d, 2, xv, sizeof(float) * R * C, &st);
    vg_tensor *o[8] = {NULL};
    CHECK_OK(vg_session_run(s, NULL, &n->x, &x, 1, n->fetch, o, 8, NULL, 0, NULL, &st), &st);
    for (int i = 0; i < 8; i++) {
        if (o[i]) memcpy(out[i], vg_tensor_data(o[i]), sizeof(float) * R * C);
        vg_tensor_free(o[i]);
    }
    vg_tensor_free(x);
}

static void free_net(net *n) {
    kt_teardown(n->g, NULL, (vg_tensor *[]){n->w, n->c}, 2, NULL, 0);
}

/* y = op(a) @ b in float32 on given values */
static void mm(const float *a, const float *b, float *y) {
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            float s = 0;
            for (int k = 0; k < C; k++) s += a[i * C + k] * b[k * C + j];
            y[i * C + j] = s;
        }
}

static bool all_bf16(const float *v) {
    for (int i = 0; i < R * C; i++)
        if (fbits(v[i]) & 0xffffu) return false;
    return true;
}

static void near_all(const char *what, const float *got, const float *want, double rel, double atol) {
    for (int i = 0; i < R * C; i++)
        if (!(fabs((double)got[i] - want[i]) <= rel * fabs((double)want[i]) + atol)) {
            fprintf(stderr, "%s[%d]: got %.9g want %.9g\n", what, i, got[i], want[i]);
            CHECK(0);
            return;
        }
}

static void inputs(float *xv, float *wv) {
    for (int i = 0; i < R * C; i++) {
        xv[i] = 0.3f * sinf(1.7f * (float)i) + 0.01234567f;
        wv[i] = 0.25f * cosf(0.9f * (float)i + 0.3f) + 0.001234567f;
    }
}

/* The choices, node by node, against a reference that applies TF's casts by hand. */
static void test_amp__choices(void) {
    float xv[R * C], wv[R * C], got[8][R * C], f32v[8][R * C];
    inputs(xv, wv);
    net n;
    build(&n, wv);
    vg_status st = {0};
    /* float32 (the rewrite is off by default) */
    vg_session *s = vg_session_new(n.g, NULL, &st);
    run(&n, s, xv, f32v);
    vg_session_free(s);
    for (int i = 0; i < 8; i++) CHECK(!all_bf16(f32v[i]));
    /* the rewrite through the config: rewrite_options.auto_mixed_precision */
    vg_config_proto cfg = {0};
    CHECK(!cfg.auto_mixed_precision);
    cfg.auto_mixed_precision = true;
    s = vg_session_new_with_config(n.g, &cfg, &st);
    CHECK(s != NULL);
    run(&n, s, xv, got);
    vg_session_free(s);
    /* painted: m1, r (clear next to m1), m2, t (infer between m2 and m3), m3 */
    const bool painted[8] = {true, true, false, false, true, true, true, false};
    for (int i = 0; i < 8; i++) {
        if (all_bf16(got[i]) != painted[i]) fprintf(stderr, "node %s: painted %d expected %d\n", names[i], !painted[i], painted[i]);
        CHECK(all_bf16(got[i]) == painted[i]);
    }
    /* the values, by hand: TF's graph after the rewrite */
    float xr[R * C], wr[R * C], ref[8][R * C], tmp[R * C];
    for (int i = 0; i < R * C; i++) xr[i] = rb(xv[i]), wr[i] = rb(wv[i]);
    mm(xr, wr, tmp);
    for (int i = 0; i < R * C; i++) ref[0][i] = rb(tmp[i]);                     /* m1: bf16 */
    for (int i = 0; i < R * C; i++) ref[1][i] = ref[0][i] > 0 ? ref[0][i] : 0;  /* r: bf16 relu */
    for (int i = 0; i < R * C; i++) ref[2][i] = expf(ref[1][i]);                 /* e: f32 */
    const float *cv = vg_tensor_data(n.c);
    for (int i = 0; i < R * C; i++) ref[3][i] = ref[2][i] + cv[i];               /* a: f32 */
    for (int i = 0; i < R * C; i++) tmp[i] = rb(ref[3][i]);                      /* Cast to bf16 */
    mm(tmp, wr, ref[4]);
    for (int i = 0; i < R * C; i++) ref[4][i] = rb(ref[4][i]);                   /* m2: bf16 */
    for (int i = 0; i < R * C; i++) ref[5][i] = rb(tanhf(ref[4][i]));            /* t: bf16 */
    mm(ref[5], wr, ref[6]);
    for (int i = 0; i < R * C; i++) ref[6][i] = rb(ref[6][i]);                   /* m3: bf16 */
    for (int i = 0; i < R * C; i++) ref[7][i] = 1.0f / (1.0f + expf(-ref[6][i])); /* s: f32 */
    for (int i = 0; i < 8; i++) near_all(names[i], got[i], ref[i], painted[i] ? 1.0 / 128 : 1e-5, 1e-6);
    /* and within bfloat16's tolerance of float32 (absolute for the sums that cancel:
     * the terms are below 0.1, each rounded input off by 2^-9 relative) */
    for (int i = 0; i < 8; i++) near_all(names[i], got[i], f32v[i], 2e-2, 3e-3);
    free_net(&n);
}

/* tf.train.experimental.enable_mixed_precision_graph_rewrite: sessions created after it
 * run the rewrite; disable turns it off for later sessions. */
static void test_amp__enable_function(void) {
    float xv[R * C], wv[R * C], got[8][R * C];
    inputs(xv, wv);
    net n;
    build(&n, wv);
    vg_status st = {0};
    vg_optimizer *opt = vg_optimizer_new_sgd(0.1);
    CHECK(!vg_mixed_precision_graph_rewrite_enabled());
    CHECK(vg_enable_mixed_precision_graph_rewrite(opt) == opt);
    CHECK(vg_mixed_precision_graph_rewrite_enabled());
    vg_session *s = vg_session_new(n.g, NULL, &st);
    vg_disable_mixed_precision_graph_rewrite();
    run(&n, s, xv, got);
    vg_session_free(s);
    CHECK(all_bf16(got[0]) && all_bf16(got[4]) && !all_bf16(got[2]));
    s = vg_session_new(n.g, NULL, &st);
    run(&n, s, xv, got);
    vg_session_free(s);
    CHECK(!all_bf16(got[0]) && !all_bf16(got[4]));
    vg_optimizer_free(opt);
    free_net(&n);
}

/* A deny op upstream of a clear op that feeds an allow op: the clear op is upstream of
 * no deny/infer op, so deny does not spread to it; it sits next to the allow op and is
 * painted (PropagateWhiteThroughClear); the Sum (deny) after the MatMul stays float32. */
static void test_amp__clear_next_to_allow(void) {
    vg_status st = {0};
    vg_graph *g = vg_graph_new();
    int64_t d[2] = {R, C};
    float xv[R * C], wv[R * C];
    inputs(xv, wv);
    vg_tensor *tx = vg_tensor_new_copy(VG_FLOAT, d, 2, xv, sizeof xv, &st);
    vg_tensor *tw = vg_tensor_new_copy(VG_FLOAT, d, 2, wv, sizeof wv, &st);
    vg_output x = vg_const(g, tx, "x"), w = vg_const(g, tw, "w");
    vg_output e = vg_exp(g, x, "e");                         /* deny */
    vg_output mx = vg_maximum(g, e, w, "mx");                /* clear, feeds only the MatMul */
    vg_output m = vg_matmul(g, mx, w, false, false, "m");   /* allow */
    int32_t ax[1] = {1};
    vg_output sum = vg_reduce_sum(g, m, ax, 1, false, "sum"); /* deny */
    vg_output f[4] = {vg_identity(g, e, "e_out"), vg_identity(g, mx, "mx_out"), vg_identity(g, m, "m_out"),
                      vg_identity(g, sum, "sum_out")};
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_set_auto_mixed_precision(s, true, &st), &st);
    vg_tensor *o[4] = {NULL};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, o, 4, NULL, 0, NULL, &st), &st);
    CHECK(!all_bf16(vg_tensor_data(o[0])));
    CHECK(all_bf16(vg_tensor_data(o[1])));
    CHECK(all_bf16(vg_tensor_data(o[2])));
    /* Sum of bfloat16 values in float32: equals the float32 sum of m's values */
    const float *mv = vg_tensor_data(o[2]), *sv = vg_tensor_data(o[3]);
    for (int i = 0; i < R; i++) {
        float acc = 0;
        for (int j = 0; j < C; j++) acc += mv[i * C + j];
        CHECK_NEAR(sv[i], acc, 1e-5);
    }
    for (int i = 0; i < 4; i++) vg_tensor_free(o[i]);
    vg_session_free(s);
    vg_tensor_free(tx), vg_tensor_free(tw);
    vg_graph_free(g);
}

/* A two-layer MLP trained by SGD for 60 steps, with and without the rewrite: the
 * losses track each other and the variables stay float32. */
static void train(bool amp, float *losses, int steps) {
    vg_status st = {0};
    vg_graph *g = vg_graph_new();
    enum { B = 32, IN = 8, H = 16 };
    int64_t dx[2] = {B, IN}, dy[2] = {B, 1};
    float xv[B * IN], yv[B];
    for (int i = 0; i < B; i++) {
        float t = 0;
        for (int j = 0; j < IN; j++) {
            xv[i * IN + j] = sinf(0.37f * (float)(i * IN + j));
            t += xv[i * IN + j] * (j % 2 ? 0.5f : -0.25f);
        }
        yv[i] = tanhf(t);
    }
    vg_tensor *tx = vg_tensor_new_copy(VG_FLOAT, dx, 2, xv, sizeof xv, &st);
    vg_tensor *ty = vg_tensor_new_copy(VG_FLOAT, dy, 2, yv, sizeof yv, &st);
    vg_output x = vg_const(g, tx, "x"), y = vg_const(g, ty, "y");
    float w1v[IN * H], w2v[H];
    for (int i = 0; i < IN * H; i++) w1v[i] = 0.3f * cosf(1.3f * (float)i);
    for (int i = 0; i < H; i++) w2v[i] = 0.3f * sinf(0.7f * (float)i + 0.2f);
    int64_t d1[2] = {IN, H}, d2[2] = {H, 1};
    vg_tensor *t1 = vg_tensor_new_copy(VG_FLOAT, d1, 2, w1v, sizeof w1v, &st);
    vg_tensor *t2 = vg_tensor_new_copy(VG_FLOAT, d2, 2, w2v, sizeof w2v, &st);
    vg_variable w1 = vg_variable_new(g, "w1", vg_const(g, t1, "w1_init"), VG_VAR_TRAINABLE);
    vg_variable w2 = vg_variable_new(g, "w2", vg_const(g, t2, "w2_init"), VG_VAR_TRAINABLE);
    vg_output h = vg_relu(g, vg_matmul(g, x, w1.read, false, false, "mm1"), "h");
    vg_output p = vg_matmul(g, h, w2.read, false, false, "mm2");
    int32_t ax[2] = {0, 1};
    vg_output loss = vg_reduce_mean(g, vg_square(g, vg_sub(g, p, y, "d"), "sq"), ax, 2, false, "loss");
    vg_optimizer *opt = vg_optimizer_new_sgd(0.1);
    vg_output none = {NULL, 0};
    vg_op *step = vg_optimizer_minimize(opt, g, loss, NULL, 0, none, NULL);
    vg_op *init = vg_global_variables_initializer(g);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(step && init);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_set_auto_mixed_precision(s, amp, &st), &st);
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &init, 1, NULL, &st), &st);
    for (int i = 0; i < steps; i++) {
        vg_tensor *l = NULL;
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, &loss, &l, 1, &step, 1, NULL, &st), &st);
        losses[i] = l ? *(float *)vg_tensor_data(l) : NAN;
        vg_tensor_free(l);
    }
    /* the master weights stay float32 with full mantissas after bfloat16 gradients */
    vg_tensor *wv = NULL;
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, &w1.read, &wv, 1, NULL, 0, NULL, &st), &st);
    CHECK_EQ_INT(vg_tensor_dtype(wv), VG_FLOAT);
    CHECK(!all_bf16(vg_tensor_data(wv)));
    vg_tensor_free(wv);
    vg_session_free(s);
    vg_optimizer_free(opt);
    vg_tensor_free(tx), vg_tensor_free(ty), vg_tensor_free(t1), vg_tensor_free(t2);
    vg_graph_free(g);
}

static void test_amp__training_tracks_f32(void) {
    enum { N = 60 };
    float l32[N], l16[N];
    train(false, l32, N);
    train(true, l16, N);
    CHECK(l32[N - 1] < 0.5f * l32[0]); /* it learns */
    int differ = 0;
    for (int i = 0; i < N; i++) {
        CHECK_NEAR(l16[i], l32[i], 2e-2 * l32[i] + 1e-4);
        differ += l16[i] != l32[i];
    }
    CHECK(differ > N / 2); /* the rewrite did change the arithmetic */
}

int main(void) {
    RUN_TEST(test_amp__choices);
    RUN_TEST(test_amp__enable_function);
    RUN_TEST(test_amp__clear_next_to_allow);
    RUN_TEST(test_amp__training_tracks_f32);
    TEST_MAIN_END();
}
