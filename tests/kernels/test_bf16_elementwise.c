/* test_bf16_elementwise.c - the element-wise ops of an MLP / CNN step in bfloat16 (issue
 * 34, item 1), as the mixed-precision rewrite runs them: painted between two MatMuls
 * (TF's infer / clear lists), each computes in float32 on its bfloat16 inputs and rounds
 * its result to bfloat16 (as Eigen's bfloat16 arithmetic and TF's oneDNN bfloat16 kernels
 * do). Each op's output against (a) the op applied by hand to the bfloat16 values it got,
 * rounded, and (b) the float32 graph, within bfloat16's tolerance. */
#include "test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

enum { R = 8, C = 16 };

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float rb(float f) { return vg_bfloat16_to_float(vg_float_to_bfloat16(f)); }

static void fill(float *v, int n, uint32_t seed) { kt_fill_lcg(v, n, seed, 24, 0.5f); }

enum { OP_ADD, OP_ADDV2, OP_SUB, OP_MUL, OP_RELU, OP_RELUGRAD, OP_BIASADD, OP_TANH, OP_SIGMOID, OP_BIASADDGRAD, NOPS };
static const char *const op_names[NOPS] = {"Add", "AddV2", "Sub", "Mul", "Relu", "ReluGrad", "BiasAdd", "Tanh", "Sigmoid",
                                           "BiasAddGrad"};

static vg_output build_op(vg_graph *g, int op, vg_output a, vg_output b, vg_output bias) {
    switch (op) {
    case OP_ADD: return vg_add_legacy(g, a, b, "op");
    case OP_ADDV2: return vg_add(g, a, b, "op");
    case OP_SUB: return vg_sub(g, a, b, "op");
    case OP_MUL: return vg_mul(g, a, b, "op");
    case OP_RELU: return vg_relu(g, a, "op");
    case OP_RELUGRAD: return vg_relu_grad(g, a, b, "op");
    case OP_BIASADD: return vg_bias_add(g, a, bias, "op");
    case OP_TANH: return vg_tanh(g, a, "op");
    case OP_SIGMOID: return vg_sigmoid(g, a, "op");
    default: return vg_bias_add_grad(g, a, "op");
    }
}

/* By hand, float32 on the given values (then rounded by the caller). */
static float ref_op(int op, const float *a, const float *b, const float *bias, int i) {
    switch (op) {
    case OP_ADD: case OP_ADDV2: return a[i] + b[i];
    case OP_SUB: return a[i] - b[i];
    case OP_MUL: return a[i] * b[i];
    case OP_RELU: return a[i] > 0 ? a[i] : 0;
    case OP_RELUGRAD: return b[i] > 0 ? a[i] : 0; /* gradients a, features b */
    case OP_BIASADD: return a[i] + bias[i % C];
    case OP_TANH: return tanhf(a[i]);
    case OP_SIGMOID: return 1.0f / (1.0f + expf(-a[i]));
    default: {
        float s = 0;
        for (int r = 0; r < R; r++) s += a[r * C + i];
        return s;
    }
    }
}

/* x @ w1 -> a, x @ w2 -> b (painted MatMuls), op(a, b) -> c, c @ w3 (painted): c is
 * painted (between allow ops). Fetches a, b, c through Identities. */
static void run(int op, bool amp, vg_tensor **o) {
    vg_status st = {0};
    vg_graph *g = vg_graph_new();
    float xv[R * C], w1[C * C], w2[C * C], w3[C * C], bv[C];
    fill(xv, R * C, 1), fill(w1, C * C, 2), fill(w2, C * C, 3), fill(w3, C * C, 4), fill(bv, C, 5);
    int64_t dx[2] = {R, C}, dw[2] = {C, C}, db[1] = {C};
    vg_tensor *t[5] = {vg_tensor_new_copy(VG_FLOAT, dx, 2, xv, sizeof xv, &st),
                       vg_tensor_new_copy(VG_FLOAT, dw, 2, w1, sizeof w1, &st),
                       vg_tensor_new_copy(VG_FLOAT, dw, 2, w2, sizeof w2, &st),
                       vg_tensor_new_copy(VG_FLOAT, dw, 2, w3, sizeof w3, &st),
                       vg_tensor_new_copy(VG_FLOAT, db, 1, bv, sizeof bv, &st)};
    vg_output x = vg_const(g, t[0], "x");
    vg_output a = vg_matmul(g, x, vg_const(g, t[1], "w1"), false, false, "a");
    vg_output b = vg_matmul(g, x, vg_const(g, t[2], "w2"), false, false, "b");
    vg_output c = build_op(g, op, a, b, vg_const(g, t[4], "bias"));
    vg_output c2 = c;
    if (op == OP_BIASADDGRAD) { /* [C] -> [1, C] (Reshape: clear) to feed a MatMul */
        int32_t shp[2] = {1, C};
        int64_t d2 = 2;
        vg_tensor *ts = vg_tensor_new_copy(VG_INT32, &d2, 1, shp, sizeof shp, &st);
        c2 = vg_reshape(g, c, vg_const(g, ts, "shape"), "r");
        vg_tensor_free(ts);
    }
    vg_output d = vg_matmul(g, c2, vg_const(g, t[3], "w3"), false, false, "d");
    vg_output f[4] = {vg_identity(g, a, "a_out"), vg_identity(g, b, "b_out"), vg_identity(g, c, "c_out"),
                      vg_identity(g, d, "d_out")};
    CHECK_OK(vg_graph_status(g, &st), &st);
    kt_run_amp(g, amp, f, o, 4);
    for (int i = 0; i < 5; i++) vg_tensor_free(t[i]);
    vg_graph_free(g);
}

static void test_bf16_elementwise__painted_ops(void) {
    for (int op = 0; op < NOPS; op++) {
        vg_tensor *o16[4] = {NULL}, *o32[4] = {NULL};
        run(op, true, o16);
        run(op, false, o32);
        if (!o16[2] || !o32[2]) {
            CHECK(0);
            continue;
        }
        const float *a = vg_tensor_data(o16[0]), *b = vg_tensor_data(o16[1]), *c = vg_tensor_data(o16[2]);
        const float *c32 = vg_tensor_data(o32[2]);
        float bias[C];
        fill(bias, C, 5);
        for (int i = 0; i < C; i++) bias[i] = rb(bias[i]); /* the Const's Cast to bfloat16 */
        int n = (int)vg_tensor_num_elements(o16[2]), bad_ref = 0, bad_f32 = 0, low = 0;
        bool exact = op != OP_TANH && op != OP_SIGMOID; /* vigil's tanh / exp are vectorized approximations */
        for (int i = 0; i < n; i++) {
            float want = rb(ref_op(op, a, b, bias, i));
            if (exact ? c[i] != want : !(fabsf(c[i] - want) <= fabsf(want) / 128.0f + 1e-6f)) bad_ref++;
            /* the float32 graph: inputs off by one bfloat16 rounding each (2^-8 relative), the
             * result rounded once more; BiasAddGrad sums R of them */
            double tol = (op == OP_BIASADDGRAD ? R * 0.5 : 0.5) * 3.0 / 256.0 + fabs((double)c32[i]) / 128.0;
            if (!(fabs((double)c[i] - c32[i]) <= tol)) bad_f32++;
            if (fbits(c[i]) & 0xffffu) low++;
        }
        if (bad_ref || bad_f32 || low)
            fprintf(stderr, "%s: %d off the reference, %d off float32, %d not bfloat16\n", op_names[op], bad_ref,
                    bad_f32, low);
        CHECK_EQ_INT(bad_ref, 0);
        CHECK_EQ_INT(bad_f32, 0);
        CHECK_EQ_INT(low, 0);
        for (int i = 0; i < 4; i++) vg_tensor_free(o16[i]), vg_tensor_free(o32[i]);
    }
}

int main(void) {
    RUN_TEST(test_bf16_elementwise__painted_ops);
    TEST_MAIN_END();
}
