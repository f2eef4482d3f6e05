/* test_rnn_custom_cell.c - user-defined RNN cells with a nested (multi-dim) state
 * (vg_custom_rnn_cell_new): zero_state shapes, variables made once by the build
 * callback under the scope it chooses, dynamic_rnn (time-major and batch-major) against
 * static_rnn and hand-computed values, gradients through the while loop by finite
 * differences, and the errors. */
#include "gradcheck.h"
#include "test_util.h"
#include "vigil/vigil.h"

typedef struct my_cell {
    vg_output w;
    int builds, calls;
    bool fail, const_w; /* const_w: w a Const instead of a variable (gradchecks) */
} my_cell;

static vg_code my_build(vg_graph *g, int64_t depth, vg_dtype dt, void *user) {
    my_cell *c = user;
    c->builds++;
    if (c->const_w) {
        c->w = vg_const_fill(g, dt, (const int64_t[]){depth, 6}, 2, 0.1, "w");
        return vg_graph_status(g, NULL);
    }
    vg_variable_scope_push(g, "mycell", NULL);
    c->w = vg_get_variable(g, "w", dt, (const int64_t[]){depth, 6}, 2, vg_init_constant(0.1), VG_VAR_TRAINABLE).read;
    vg_variable_scope_pop(g);
    return vg_graph_status(g, NULL);
}

/* m' = 0.5 m + reshape(x w, [-1, 2, 3]); v' = v + sum(m', 2); out = reshape(m' * m', [-1, 6]) */
static vg_code my_call(vg_graph *g, vg_output x, const vg_output *s, vg_output *out, vg_output *ns, void *user) {
    my_cell *c = user;
    c->calls++;
    if (c->fail) return VG_FAILED_PRECONDITION;
    vg_dtype dt = vg_output_dtype(x);
    vg_output xw = vg_reshape_c(g, vg_matmul(g, x, c->w, false, false, NULL), (const int64_t[]){-1, 2, 3}, 3, NULL);
    ns[0] = vg_add(g, vg_mul(g, s[0], vg_const_fill(g, dt, NULL, 0, 0.5, NULL), NULL), xw, NULL);
    ns[1] = vg_add(g, s[1], vg_reduce_sum(g, ns[0], (const int32_t[]){2}, 1, false, NULL), NULL);
    *out = vg_reshape_c(g, vg_mul(g, ns[0], ns[0], NULL), (const int64_t[]){-1, 6}, 2, NULL);
    return vg_graph_status(g, NULL);
}

static vg_rnn_cell *new_cell(my_cell *c) {
    vg_shape shapes[2] = {vg_shape_make((const int64_t[]){2, 3}, 2), vg_shape_make((const int64_t[]){2}, 1)};
    vg_rnn_cell_def def = {"my_cell", 2, shapes, 6, my_build, my_call, c};
    return vg_custom_rnn_cell_new(&def);
}

static void test_custom_cell_dynamic_vs_static_and_values(void) {
    enum { T = 3, B = 2, D = 4 };
    vg_graph *g = vg_graph_new();
    vg_status st;
    my_cell mc = {{NULL, 0}, 0, 0, false, false};
    vg_rnn_cell *cell = new_cell(&mc);
    CHECK(cell != NULL);
    CHECK_EQ_INT(vg_rnn_cell_state_count(cell), 2);
    CHECK_EQ_INT(vg_rnn_cell_state_size(cell, 0), 6);
    CHECK_EQ_INT(vg_rnn_cell_state_shape(cell, 0).ndims, 2);
    float xs[T * B * D];
    for (int i = 0; i < T * B * D; i++) xs[i] = 0.05f * (float)(i % 11) - 0.2f;
    vg_output x = vg_const_array(g, VG_FLOAT, (const int64_t[]){T, B, D}, 3, xs, "x");
    vg_output init[2];
    CHECK_EQ_INT(vg_rnn_cell_zero_state(cell, g, B, vg_out(NULL, 0), VG_FLOAT, init), VG_OK);
    CHECK_EQ_INT(vg_output_shape(init[0]).ndims, 3);
    vg_output outs, fin[2];
    CHECK_OK(vg_dynamic_rnn(cell, g, x, vg_out(NULL, 0), init, VG_FLOAT, 0, true, NULL, &outs, fin, &st), &st);
    CHECK_EQ_INT(mc.builds, 1);
    /* static_rnn over the same cell: no second build, the same variables */
    vg_output steps[T], souts[T], sfin[2];
    for (int t = 0; t < T; t++)
        steps[t] = vg_reshape_c(g, vg_slice_c(g, x, (const int64_t[]){t, 0, 0}, (const int64_t[]){1, B, D}, 3, NULL),
                                (const int64_t[]){B, D}, 2, NULL);
    CHECK_OK(vg_static_rnn(cell, g, steps, T, NULL, VG_FLOAT, vg_out(NULL, 0), "srnn", souts, sfin, &st), &st);
    CHECK_EQ_INT(mc.builds, 1);
    int nv = 0;
    const vg_output *vars = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nv);
    CHECK_EQ_INT(nv, 1);
    /* the build runs in dynamic_rnn's variable scope "rnn" (where TF's first call runs) */
    if (nv == 1) CHECK(strcmp(vg_op_name(vars[0].op), "rnn/mycell/w") == 0);
    vg_op *init_op = vg_global_variables_initializer(g);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    CHECK_OK(vg_session_run_targets(s, &init_op, 1, &st), &st);
    vg_tensor *o[4] = {NULL, NULL, NULL, NULL};
    vg_output f[4] = {outs, fin[1], souts[T - 1], sfin[1]};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, o, 4, NULL, 0, NULL, &st), &st);
    /* hand computation */
    double m[B][6] = {{0}}, v[B][2] = {{0}}, last[B][6];
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++) {
            double xw = 0;
            for (int k = 0; k < D; k++) xw += 0.1 * xs[(t * B + b) * D + k];
            for (int j = 0; j < 6; j++) {
                m[b][j] = 0.5 * m[b][j] + xw;
                if (t == T - 1) last[b][j] = m[b][j] * m[b][j];
            }
            for (int r = 0; r < 2; r++) v[b][r] += m[b][3 * r] + m[b][3 * r + 1] + m[b][3 * r + 2];
        }
    if (o[0] && o[1] && o[2] && o[3]) {
        const float *po = vg_tensor_data(o[0]), *pv = vg_tensor_data(o[1]), *so = vg_tensor_data(o[2]),
                    *sv = vg_tensor_data(o[3]);
        for (int b = 0; b < B; b++) {
            for (int j = 0; j < 6; j++) {
                CHECK_NEAR(po[((T - 1) * B + b) * 6 + j], last[b][j], 1e-5);
                CHECK_NEAR(so[b * 6 + j], last[b][j], 1e-5);
            }
            for (int r = 0; r < 2; r++) {
                CHECK_NEAR(pv[b * 2 + r], v[b][r], 1e-5);
                CHECK_NEAR(sv[b * 2 + r], v[b][r], 1e-5);
            }
        }
    }
    for (int k = 0; k < 4; k++) vg_tensor_free(o[k]);
    vg_session_free(s);
    vg_rnn_cell_free(cell);
    vg_graph_free(g);
}

static void test_custom_cell_gradient(void) {
    enum { T = 3, B = 2, D = 3 };
    vg_graph *g = vg_graph_new();
    vg_status st;
    my_cell mc = {{NULL, 0}, 0, 0, false, true};
    vg_rnn_cell *cell = new_cell(&mc);
    vg_output x = vg_placeholder(g, VG_DOUBLE, (const int64_t[]){B, T, D}, 3, "x");
    vg_output m0 = vg_placeholder(g, VG_DOUBLE, (const int64_t[]){B, 2, 3}, 3, "m0");
    vg_output init[2] = {m0, vg_const_fill(g, VG_DOUBLE, (const int64_t[]){B, 2}, 2, 0.0, "v0")};
    vg_output outs, fin[2];
    CHECK_OK(vg_dynamic_rnn(cell, g, x, vg_out(NULL, 0), init, VG_DOUBLE, 0, false, NULL, &outs, fin, &st), &st);
    /* the outputs and a final state whose value its own gradient uses (fin * fin): the
     * dead Exits of the loop's earlier iterations must not reach the gradient's ops */
    vg_output y = vg_add(g, vg_reduce_sum(g, outs, NULL, -1, false, NULL),
                         vg_reduce_sum(g, vg_mul(g, fin[1], fin[1], NULL), NULL, -1, false, NULL), NULL);
    vg_tensor *xv = vg_tensor_new(VG_DOUBLE, (const int64_t[]){B, T, D}, 3, &st);
    vg_tensor *mv = vg_tensor_new(VG_DOUBLE, (const int64_t[]){B, 2, 3}, 3, &st);
    for (int i = 0; i < B * T * D; i++) ((double *)vg_tensor_data(xv))[i] = 0.07 * (i % 5) - 0.1;
    for (int i = 0; i < B * 6; i++) ((double *)vg_tensor_data(mv))[i] = 0.03 * i - 0.2;
    vg_tensor *vals[2] = {xv, mv};
    CHECK_EQ_INT(vg_gradcheck(g, (const vg_output[]){x, m0}, vals, 2, y, 1e-6, 1e-5), 0);
    vg_tensor_free(xv);
    vg_tensor_free(mv);
    vg_rnn_cell_free(cell);
    vg_graph_free(g);
}

static void test_custom_cell_errors(void) {
    CHECK(vg_custom_rnn_cell_new(NULL) == NULL);
    vg_shape unknown = vg_shape_make((const int64_t[]){-1}, 1);
    vg_rnn_cell_def bad = {"c", 1, &unknown, 4, NULL, my_call, NULL};
    CHECK(vg_custom_rnn_cell_new(&bad) == NULL);
    vg_graph *g = vg_graph_new();
    vg_status st;
    my_cell mc = {{NULL, 0}, 0, 0, true, false};
    vg_rnn_cell *cell = new_cell(&mc);
    vg_output x = vg_const_fill(g, VG_FLOAT, (const int64_t[]){2, 1, 4}, 3, 1.0, "x");
    vg_output outs, fin[2];
    CHECK_CODE(vg_dynamic_rnn(cell, g, x, vg_out(NULL, 0), NULL, VG_FLOAT, 0, true, NULL, &outs, fin, &st),
               VG_FAILED_PRECONDITION);
    CHECK_STR_CONTAINS(st.msg, "my_cell");
    vg_rnn_cell_free(cell);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_custom_cell_dynamic_vs_static_and_values);
    RUN_TEST(test_custom_cell_gradient);
    RUN_TEST(test_custom_cell_errors);
    TEST_MAIN_END();
}
