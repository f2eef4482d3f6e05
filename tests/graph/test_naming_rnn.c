/* test_naming_rnn.c - RNN cells, wrappers and drivers open variable scopes as TF 1.15's
 * do (issue 35 items 1 and 2): a Layer-based cell captures tf.variable_scope(None,
 * default_name=<cell name>) on its first call and re-enters it, MultiRNNCell opens
 * "cell_<i>", the drivers open tf.variable_scope(scope or "rnn"), and the variable
 * scope's initializer reaches the kernels. Expected names and values come from TF's
 * core_rnn_cell_test.py (contrib/rnn/python/kernel_tests) and rnn_cell_impl.py /
 * rnn.py / base.py as cited per test. */
#include "test_util.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include <math.h>

static vg_output cf(vg_graph *g, const int64_t *dims, int nd, const float *v) {
    return vg_const_array(g, VG_FLOAT, dims, nd, v, NULL);
}

/* Initializes the globals, fetches n outputs (float). */
static bool run(vg_graph *g, const vg_output *fetch, int n, vg_tensor **out) {
    vg_status st;
    vg_op *init = vg_global_variables_initializer(g);
    if (vg_graph_status(g, &st) != VG_OK) {
        fprintf(stderr, "graph: %s\n", st.msg);
        return false;
    }
    vg_session *s = vg_session_new(g, NULL, &st);
    if (!s) return false;
    bool ok = vg_session_run_targets(s, &init, 1, &st) == VG_OK &&
              vg_session_run(s, NULL, NULL, NULL, 0, fetch, out, n, NULL, 0, NULL, &st) == VG_OK;
    if (!ok) fprintf(stderr, "run: %s\n", st.msg);
    vg_session_free(s);
    return ok;
}

static void check_values(const vg_tensor *t, const double *want, int n, double tol) {
    CHECK(t && vg_tensor_num_elements(t) == n);
    for (int i = 0; t && i < n && i < vg_tensor_num_elements(t); i++)
        CHECK_NEAR(((const float *)vg_tensor_data(t))[i], want[i], tol);
}

static void check_var(vg_graph *g, const char *name, int64_t d0, int64_t d1) {
    vg_op *op = vg_graph_op_by_name(g, name);
    CHECK(op && strcmp(vg_op_type(op), "VariableV2") == 0);
    if (!op) {
        fprintf(stderr, "  missing variable %s\n", name);
        return;
    }
    vg_shape s = vg_output_shape(vg_out(op, 0));
    CHECK_EQ_INT(s.ndims, d1 ? 2 : 1);
    CHECK_EQ_INT(s.dims[0], d0);
    if (d1) CHECK_EQ_INT(s.dims[1], d1);
}

/* A new graph inside variable_scope(name, initializer=constant_initializer(0.5)) (the
 * cell tests' setup; the scope stays open). */
static vg_graph *graph_in_half_scope(const char *name) {
    vg_graph *g = vg_graph_new();
    vg_initializer half = vg_init_constant(0.5);
    vg_variable_scope_push(g, name, &(vg_variable_scope_opts){.initializer = &half});
    return g;
}

/* Issue 35 item 1: dynamic_rnn(MultiRNNCell([BasicLSTMCell(4), BasicLSTMCell(4)]), x)
 * inside variable_scope("model", reuse=AUTO_REUSE) makes TF's four variables
 * (rnn_cell_impl.MultiRNNCell.call's variable_scope("cell_%d"), base.py _set_scope),
 * not two shared ones; a second call in the same scope shares the four. */
static void test_multi_cell_layers_do_not_share(void) {
    for (int reuse = 0; reuse < 2; reuse++) {
        vg_graph *g = vg_graph_new();
        vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){2, 5, 3}, 3, "x");
        vg_variable_scope_opts o = {.reuse = reuse ? VG_REUSE_AUTO : VG_REUSE_INHERIT};
        vg_status st;
        for (int call = 0; call < 1 + reuse; call++) {
            vg_rnn_cell *cells[2] = {vg_basic_lstm_cell_new(4, 1.0f, true), vg_basic_lstm_cell_new(4, 1.0f, true)};
            vg_rnn_cell *m = vg_multi_rnn_cell_new(cells, 2);
            vg_output out, fin[4];
            vg_variable_scope_push(g, "model", &o);
            CHECK_OK(vg_dynamic_rnn(m, g, x, vg_out(NULL, 0), NULL, VG_FLOAT, 0, false, NULL, &out, fin, &st), &st);
            vg_variable_scope_pop(g);
            vg_rnn_cell_free(m);
        }
        CHECK_COLLECTION(g, VG_TRAINABLE_VARIABLES,
                         "model/rnn/multi_rnn_cell/cell_0/basic_lstm_cell/kernel "
                         "model/rnn/multi_rnn_cell/cell_0/basic_lstm_cell/bias "
                         "model/rnn/multi_rnn_cell/cell_1/basic_lstm_cell/kernel "
                         "model/rnn/multi_rnn_cell/cell_1/basic_lstm_cell/bias");
        check_var(g, "model/rnn/multi_rnn_cell/cell_0/basic_lstm_cell/kernel", 3 + 4, 16);
        check_var(g, "model/rnn/multi_rnn_cell/cell_1/basic_lstm_cell/kernel", 4 + 4, 16);
        /* the loop body's ops are where TF's are ("rnn/while/rnn/multi_rnn_cell/...":
         * RNNCell.__call__ re-enters the "rnn" scope object inside the loop) */
        CHECK(vg_graph_op_by_name(g, "model/rnn/while/rnn/multi_rnn_cell/cell_0/basic_lstm_cell/MatMul") != NULL);
        CHECK(vg_graph_op_by_name(g, "model/rnn/while/rnn/multi_rnn_cell/cell_1/basic_lstm_cell/MatMul") != NULL);
        CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
        vg_graph_free(g);
    }
}

/* The loop body's ops where TF's first call inside the loop puts them, also those a
 * MultiRNNCell's child scope gets directly (a DropoutWrapper's dropout: rnn_cell_impl's
 * DropoutWrapper calls nn_ops.dropout in the current name scope): vigil's build before
 * the loop hands its name scopes over to the first call in the body. */
static void test_dynamic_multi_cell_wrapper_ops(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){2, 5, 3}, 3, "x");
    vg_rnn_cell *cells[2] = {vg_dropout_wrapper_new(vg_basic_lstm_cell_new(4, 1.0f, true), 0.5, 1.0, 1.0, 0),
                             vg_basic_lstm_cell_new(4, 1.0f, true)};
    vg_rnn_cell *m = vg_multi_rnn_cell_new(cells, 2);
    vg_output out, fin[4];
    vg_status st;
    CHECK_OK(vg_dynamic_rnn(m, g, x, vg_out(NULL, 0), NULL, VG_FLOAT, 0, false, NULL, &out, fin, &st), &st);
    CHECK(vg_graph_op_by_name(g, "rnn/while/rnn/multi_rnn_cell/cell_0/dropout/Shape") != NULL);
    CHECK(vg_graph_op_by_name(g, "rnn/while/rnn/multi_rnn_cell/cell_0/basic_lstm_cell/MatMul") != NULL);
    CHECK(vg_graph_op_by_name(g, "rnn/while/rnn/multi_rnn_cell/cell_1/basic_lstm_cell/MatMul") != NULL);
    /* the same cell in a second dynamic_rnn: built, so its scopes are re-entered */
    CHECK_OK(vg_dynamic_rnn(m, g, x, vg_out(NULL, 0), NULL, VG_FLOAT, 0, false, NULL, &out, fin, &st), &st);
    /* (Layer.__call__ puts a built layer's ops in its first name scope, where "cell_0" is taken) */
    CHECK(vg_graph_op_by_name(g, "rnn/while/rnn/multi_rnn_cell/cell_0_1/dropout/Shape") != NULL);
    CHECK(vg_graph_op_by_name(g, "rnn/while/rnn/multi_rnn_cell/cell_0/basic_lstm_cell/MatMul_1") != NULL);
    int nv;
    vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nv);
    CHECK_EQ_INT(nv, 4);
    vg_rnn_cell_free(m);
    vg_graph_free(g);
}

/* Issue 35 item 1: two Layer-based cells called in turn get unique scopes
 * ("basic_lstm_cell", "basic_lstm_cell_1": base.py _set_scope's default_name); a cell
 * called again re-enters its scope (reuse) and its first name scope (ops "MatMul_1"). */
static void test_cells_called_in_turn(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){1, 3}, 2, "x");
    vg_rnn_cell *a = vg_basic_lstm_cell_new(2, 1.0f, true), *b = vg_basic_lstm_cell_new(2, 1.0f, true);
    vg_output s0[2], oa, na[2], ob, nb[2], oa2, na2[2];
    vg_status st;
    vg_rnn_cell_zero_state(a, g, 1, vg_out(NULL, 0), VG_FLOAT, s0);
    CHECK_OK(vg_rnn_cell_call(a, g, x, s0, &oa, na), &st);
    CHECK_OK(vg_rnn_cell_call(b, g, x, s0, &ob, nb), &st);
    CHECK_OK(vg_rnn_cell_call(a, g, x, na, &oa2, na2), &st);
    CHECK_COLLECTION(g, VG_TRAINABLE_VARIABLES,
                     "basic_lstm_cell/kernel basic_lstm_cell/bias basic_lstm_cell_1/kernel basic_lstm_cell_1/bias");
    CHECK(vg_graph_op_by_name(g, "basic_lstm_cell/MatMul") && vg_graph_op_by_name(g, "basic_lstm_cell_1/MatMul") &&
          vg_graph_op_by_name(g, "basic_lstm_cell/MatMul_1"));
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_rnn_cell_free(a);
    vg_rnn_cell_free(b);
    vg_graph_free(g);
}

/* core_rnn_cell_test.py testBasicLSTMCell / testBasicLSTMCellWithStateTuple: under
 * variable_scope("root", initializer=constant_initializer(0.5)) the kernels are 0.5
 * (issue 35 item 2), the biases zeros; names root/multi_rnn_cell/cell_<i>/...; the only
 * global variables are those four. */
static void test_basic_lstm_cell_scope_initializer(void) {
    vg_graph *g = graph_in_half_scope("root");
    vg_output x = cf(g, (int64_t[]){1, 2}, 2, (const float[]){1, 1});
    const float m01[4] = {0.1f, 0.1f, 0.1f, 0.1f};
    vg_output m[2] = {cf(g, (int64_t[]){1, 4}, 2, m01), cf(g, (int64_t[]){1, 4}, 2, m01)};
    vg_rnn_cell *cells[2] = {vg_basic_lstm_cell_new(2, 1.0f, false), vg_basic_lstm_cell_new(2, 1.0f, false)};
    vg_rnn_cell *cell = vg_multi_rnn_cell_new(cells, 2);
    vg_output out, ns[2];
    vg_status st;
    CHECK_OK(vg_rnn_cell_call(cell, g, x, m, &out, ns), &st);
    vg_variable_scope_pop(g);
    const char *names = "root/multi_rnn_cell/cell_0/basic_lstm_cell/kernel root/multi_rnn_cell/cell_0/basic_lstm_cell/bias "
                        "root/multi_rnn_cell/cell_1/basic_lstm_cell/kernel root/multi_rnn_cell/cell_1/basic_lstm_cell/bias";
    CHECK_COLLECTION(g, VG_TRAINABLE_VARIABLES, names);
    CHECK_COLLECTION(g, VG_GLOBAL_VARIABLES, names);
    vg_tensor *r[3] = {NULL, NULL, NULL};
    vg_output f[3] = {out, ns[0], ns[1]};
    CHECK(run(g, f, 3, r));
    check_values(r[0], (const double[]){0.24024698, 0.24024698}, 2, 1e-5);
    check_values(r[1], (const double[]){0.68967271, 0.68967271, 0.44848421, 0.44848421}, 4, 1e-5);
    check_values(r[2], (const double[]){0.39897051, 0.39897051, 0.24024698, 0.24024698}, 4, 1e-5);
    for (int i = 0; i < 3; i++) vg_tensor_free(r[i]);
    vg_rnn_cell_free(cell);
    vg_graph_free(g);
}

/* core_rnn_cell_test.py testGRUCell (input depth 2 and 3) and testMultiRNNCell. */
static void test_gru_cell_scope_initializer(void) {
    vg_graph *g = vg_graph_new();
    vg_initializer half = vg_init_constant(0.5);
    vg_status st;
    vg_output outs[3];
    vg_rnn_cell *c1 = vg_gru_cell_new(2), *c2 = vg_gru_cell_new(2);
    vg_output m = cf(g, (int64_t[]){1, 2}, 2, (const float[]){0.1f, 0.1f}), ns;
    vg_variable_scope_push(g, "root", &(vg_variable_scope_opts){.initializer = &half});
    CHECK_OK(vg_rnn_cell_call(c1, g, cf(g, (int64_t[]){1, 2}, 2, (const float[]){1, 1}), &m, &outs[0], &ns), &st);
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, "other", &(vg_variable_scope_opts){.initializer = &half});
    CHECK_OK(vg_rnn_cell_call(c2, g, cf(g, (int64_t[]){1, 3}, 2, (const float[]){1, 1, 1}), &m, &outs[1], &ns), &st);
    vg_variable_scope_pop(g);
    /* testMultiRNNCell: MultiRNNCell([GRUCell(2), GRUCell(2)]) */
    vg_rnn_cell *kids[2] = {vg_gru_cell_new(2), vg_gru_cell_new(2)};
    vg_rnn_cell *multi = vg_multi_rnn_cell_new(kids, 2);
    vg_output ms[2] = {m, m}, mns[2], mo;
    vg_variable_scope_push(g, "multi", &(vg_variable_scope_opts){.initializer = &half});
    CHECK_OK(vg_rnn_cell_call(multi, g, cf(g, (int64_t[]){1, 2}, 2, (const float[]){1, 1}), ms, &mo, mns), &st);
    vg_variable_scope_pop(g);
    check_var(g, "root/gru_cell/gates/kernel", 4, 4);
    check_var(g, "other/gru_cell/candidate/kernel", 5, 2);
    check_var(g, "multi/multi_rnn_cell/cell_1/gru_cell/gates/bias", 4, 0);
    vg_tensor *r[4] = {NULL, NULL, NULL, NULL};
    vg_output f[4] = {outs[0], outs[1], mns[0], mns[1]};
    CHECK(run(g, f, 4, r));
    check_values(r[0], (const double[]){0.175991, 0.175991}, 2, 1e-5);
    check_values(r[1], (const double[]){0.156736, 0.156736}, 2, 1e-5);
    check_values(r[2], (const double[]){0.175991, 0.175991}, 2, 1e-5);
    check_values(r[3], (const double[]){0.13248, 0.13248}, 2, 1e-5);
    for (int i = 0; i < 4; i++) vg_tensor_free(r[i]);
    vg_rnn_cell_free(c1);
    vg_rnn_cell_free(c2);
    vg_rnn_cell_free(multi);
    vg_graph_free(g);
}

/* core_rnn_cell_test.py testLSTMCellVariables (names, creation order), and LSTMCell's
 * initializer argument (rnn_cell_impl.LSTMCell.build: kernel, peepholes and projection
 * take self._initializer, the bias zeros; issue 35 item 2): it wins over the scope's. */
static void test_lstm_cell_variables_and_initializer(void) {
    vg_graph *g = vg_graph_new();
    vg_initializer half = vg_init_constant(0.5), quarter = vg_init_constant(0.25);
    vg_variable_scope_push(g, "root", &(vg_variable_scope_opts){.initializer = &half});
    vg_lstm_cell_options o = {0};
    o.num_proj = 6;
    o.concat_state = true;
    vg_rnn_cell *cell = vg_lstm_cell_new(8, &o);
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){3, 2}, 2, "x");
    vg_output m = vg_placeholder(g, VG_FLOAT, (int64_t[]){3, 14}, 2, "m"), out, ns;
    vg_status st;
    CHECK_OK(vg_rnn_cell_call(cell, g, x, &m, &out, &ns), &st);
    vg_variable_scope_pop(g);
    CHECK_COLLECTION(g, VG_GLOBAL_VARIABLES, "root/lstm_cell/kernel root/lstm_cell/bias root/lstm_cell/projection/kernel");
    /* initializer=constant(0.25) under a scope initializer of 0.5 */
    vg_lstm_cell_options p = {0};
    p.use_peepholes = true;
    p.num_proj = 2;
    p.initializer = &quarter;
    vg_rnn_cell *cell2 = vg_lstm_cell_new(3, &p);
    vg_output s2[2] = {vg_placeholder(g, VG_FLOAT, (int64_t[]){3, 3}, 2, "c"),
                       vg_placeholder(g, VG_FLOAT, (int64_t[]){3, 2}, 2, "h")},
              o2, n2[2];
    vg_variable_scope_push(g, "init", &(vg_variable_scope_opts){.initializer = &half});
    CHECK_OK(vg_rnn_cell_call(cell2, g, x, s2, &o2, n2), &st);
    vg_variable_scope_pop(g);
    const char *names[] = {"init/lstm_cell/kernel", "init/lstm_cell/w_f_diag", "init/lstm_cell/projection/kernel",
                           "init/lstm_cell/bias"};
    vg_output reads[4];
    for (int i = 0; i < 4; i++) reads[i] = vg_variable_snapshot(vg_graph_op_by_name(g, names[i]));
    vg_tensor *r[4] = {NULL, NULL, NULL, NULL};
    CHECK(run(g, reads, 4, r));
    for (int i = 0; i < 4; i++) {
        CHECK(r[i] != NULL);
        for (int64_t k = 0; r[i] && k < vg_tensor_num_elements(r[i]); k++)
            CHECK_NEAR(((const float *)vg_tensor_data(r[i]))[k], i < 3 ? 0.25 : 0.0, 0);
        vg_tensor_free(r[i]);
    }
    vg_rnn_cell_free(cell);
    vg_rnn_cell_free(cell2);
    vg_graph_free(g);
}

/* core_rnn_cell_test.py testBasicRNNCellNotTrainable: a scope custom getter that sets
 * trainable=False reaches the cell's variables (names root/basic_rnn_cell/...). */
static vg_variable not_trainable(vg_graph *g, vg_getter_fn getter, void *ctx, const vg_getter_args *a, void *user) {
    (void)user;
    vg_getter_args b = *a;
    b.flags &= ~(unsigned)VG_VAR_TRAINABLE;
    return getter(g, &b, ctx);
}

static void test_basic_rnn_cell_not_trainable(void) {
    vg_graph *g = vg_graph_new();
    vg_initializer half = vg_init_constant(0.5);
    vg_variable_scope_push(g, "root", &(vg_variable_scope_opts){.initializer = &half, .custom_getter = not_trainable});
    vg_rnn_cell *cell = vg_basic_rnn_cell_new(2, VG_ACT_NONE);
    vg_output m = cf(g, (int64_t[]){1, 2}, 2, (const float[]){0.1f, 0.1f}), out, ns;
    vg_status st;
    CHECK_OK(vg_rnn_cell_call(cell, g, cf(g, (int64_t[]){1, 2}, 2, (const float[]){1, 1}), &m, &out, &ns), &st);
    vg_variable_scope_pop(g);
    CHECK_COLLECTION(g, VG_TRAINABLE_VARIABLES, "");
    CHECK_COLLECTION(g, VG_GLOBAL_VARIABLES, "root/basic_rnn_cell/kernel root/basic_rnn_cell/bias");
    vg_tensor *r = NULL;
    CHECK(run(g, &out, 1, &r));
    check_values(r, (const double[]){tanh(1.1), tanh(1.1)}, 2, 1e-6); /* (1 + 1 + 0.1 + 0.1) * 0.5 */
    vg_tensor_free(r);
    vg_rnn_cell_free(cell);
    vg_graph_free(g);
}

/* core_rnn_cell_test.py testResidualWrapper: after reuse_variables(), ResidualWrapper of
 * the same cell shares its variables (wrappers open no scope of their own). */
static void test_residual_wrapper_shares(void) {
    vg_graph *g = graph_in_half_scope("root");
    vg_output x = cf(g, (int64_t[]){1, 3}, 2, (const float[]){1, 1, 1});
    vg_output m = cf(g, (int64_t[]){1, 3}, 2, (const float[]){0.1f, 0.1f, 0.1f});
    vg_rnn_cell *base = vg_gru_cell_new(3);
    vg_output o1, n1, o2, n2;
    vg_status st;
    CHECK_OK(vg_rnn_cell_call(base, g, x, &m, &o1, &n1), &st);
    vg_variable_scope_reuse_variables(g);
    vg_rnn_cell *res = vg_residual_wrapper_new(base); /* takes base over (still callable) */
    CHECK_OK(vg_rnn_cell_call(res, g, x, &m, &o2, &n2), &st);
    vg_variable_scope_pop(g);
    CHECK_COLLECTION(g, VG_TRAINABLE_VARIABLES,
                     "root/gru_cell/gates/kernel root/gru_cell/gates/bias root/gru_cell/candidate/kernel "
                     "root/gru_cell/candidate/bias");
    vg_tensor *r[2] = {NULL, NULL};
    vg_output f[2] = {o1, o2};
    CHECK(run(g, f, 2, r));
    for (int i = 0; r[0] && r[1] && i < 3; i++)
        CHECK_NEAR(((const float *)vg_tensor_data(r[1]))[i], ((const float *)vg_tensor_data(r[0]))[i] + 1.0, 1e-6);
    vg_tensor_free(r[0]);
    vg_tensor_free(r[1]);
    /* a new cell in variable_scope("root", reuse=True) again: leaving "root" restarted
     * the default-name counts below it, so it is "root/gru_cell" again and shares */
    vg_rnn_cell *fresh = vg_gru_cell_new(3);
    vg_variable_scope_push(g, "root", &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE});
    CHECK_OK(vg_rnn_cell_call(fresh, g, x, &m, &o2, &n2), &st);
    vg_variable_scope_pop(g);
    int nv;
    vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nv);
    CHECK_EQ_INT(nv, 4);
    vg_rnn_cell_free(fresh);
    vg_rnn_cell_free(res);
    vg_graph_free(g);
}

/* core_rnn_cell_test.py DropoutWrapperTest.testDropoutWrapperKeepAll: dynamic_rnn over
 * DropoutWrapper(LSTMCell(3)) under the root scope's constant(0.5) initializer (the
 * variables made before vigil's loop still take it): outputs and final c as TF's. */
static void test_dropout_wrapper_dynamic_rnn_initializer(void) {
    vg_graph *g = graph_in_half_scope("root");
    vg_output x = cf(g, (int64_t[]){2, 1, 3}, 3, (const float[]){2, 2, 2, 1, 1, 1});
    const float p1[3] = {0.1f, 0.1f, 0.1f};
    vg_output m[2] = {cf(g, (int64_t[]){1, 3}, 2, p1), cf(g, (int64_t[]){1, 3}, 2, p1)};
    vg_rnn_cell *cell = vg_dropout_wrapper_new(vg_lstm_cell_new(3, NULL), 1.0, 1.0, 1.0, 0);
    vg_output out, fin[2];
    vg_status st;
    CHECK_OK(vg_dynamic_rnn(cell, g, x, vg_out(NULL, 0), m, VG_FLOAT, 0, true, NULL, &out, fin, &st), &st);
    vg_variable_scope_pop(g);
    CHECK_COLLECTION(g, VG_TRAINABLE_VARIABLES, "root/rnn/lstm_cell/kernel root/rnn/lstm_cell/bias");
    CHECK(vg_graph_op_by_name(g, "root/rnn/while/lstm_cell/MatMul") != NULL);
    vg_tensor *r[3] = {NULL, NULL, NULL};
    vg_output f[3] = {out, fin[0], fin[1]};
    CHECK(run(g, f, 3, r));
    check_values(r[0], (const double[]){0.751109, 0.751109, 0.751109, 0.895509, 0.895509, 0.895509}, 6, 1e-5);
    check_values(r[1], (const double[]){1.949385, 1.949385, 1.949385}, 3, 1e-5);
    check_values(r[2], (const double[]){0.895509, 0.895509, 0.895509}, 3, 1e-5);
    for (int i = 0; i < 3; i++) vg_tensor_free(r[i]);
    vg_rnn_cell_free(cell);
    vg_graph_free(g);
}

/* rnn.py static_rnn: variable_scope(scope or "rnn"), varscope.reuse_variables() after
 * the first step, so the cell's ops of step 2 go to its first name scope ("MatMul_1");
 * a second static_rnn with a new cell in the same variable scope fails as in TF, and
 * shares once the scope reuses. */
static void test_static_rnn_scopes(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){2, 3}, 2, "x");
    vg_output xs[2] = {x, x}, outs[2], fin[2];
    vg_status st;
    vg_rnn_cell *c1 = vg_basic_lstm_cell_new(4, 1.0f, true), *c2 = vg_basic_lstm_cell_new(4, 1.0f, true);
    CHECK_OK(vg_static_rnn(c1, g, xs, 2, NULL, VG_FLOAT, vg_out(NULL, 0), NULL, outs, fin, &st), &st);
    CHECK_COLLECTION(g, VG_TRAINABLE_VARIABLES, "rnn/basic_lstm_cell/kernel rnn/basic_lstm_cell/bias");
    CHECK(vg_graph_op_by_name(g, "rnn/basic_lstm_cell/MatMul") && vg_graph_op_by_name(g, "rnn/basic_lstm_cell/MatMul_1"));
    /* shared under a reusing scope: variable_scope(get_variable_scope(), reuse=True) */
    vg_variable_scope_enter(g, vg_get_variable_scope(g), &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE});
    CHECK_OK(vg_static_rnn(c2, g, xs, 2, NULL, VG_FLOAT, vg_out(NULL, 0), NULL, outs, fin, &st), &st);
    vg_variable_scope_pop(g);
    CHECK_COLLECTION(g, VG_TRAINABLE_VARIABLES, "rnn/basic_lstm_cell/kernel rnn/basic_lstm_cell/bias");
    /* without reuse: TF's ValueError */
    vg_rnn_cell *c3 = vg_basic_lstm_cell_new(4, 1.0f, true);
    CHECK_CODE(vg_static_rnn(c3, g, xs, 2, NULL, VG_FLOAT, vg_out(NULL, 0), NULL, outs, fin, &st), VG_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(st.msg, "Variable rnn/basic_lstm_cell/kernel already exists, disallowed. Did you mean to set "
                               "reuse=True or reuse=tf.AUTO_REUSE in VarScope?");
    CHECK_STR_CONTAINS(vg_variable_scope_name(g), ""); /* the scopes were left */
    CHECK(strcmp(vg_variable_scope_name(g), "") == 0);
    vg_rnn_cell_free(c1);
    vg_rnn_cell_free(c2);
    vg_rnn_cell_free(c3);
    vg_graph_free(g);
}

/* rnn.py bidirectional_dynamic_rnn: each direction's dynamic_rnn re-enters the captured
 * fw/bw scope object: variables "bidirectional_rnn/fw/...", ops "bidirectional_rnn/fw/fw/while/...". */
static void test_bidirectional_scopes(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){2, 4, 3}, 3, "x");
    vg_rnn_cell *fw = vg_basic_lstm_cell_new(2, 1.0f, true), *bw = vg_basic_lstm_cell_new(2, 1.0f, true);
    vg_output outs[2], ffw[2], fbw[2];
    vg_status st;
    CHECK_OK(vg_bidirectional_dynamic_rnn(fw, bw, g, x, vg_out(NULL, 0), NULL, NULL, VG_FLOAT, 0, false, NULL, outs, ffw,
                                          fbw, &st),
             &st);
    CHECK_COLLECTION(g, VG_TRAINABLE_VARIABLES,
                     "bidirectional_rnn/fw/basic_lstm_cell/kernel bidirectional_rnn/fw/basic_lstm_cell/bias "
                     "bidirectional_rnn/bw/basic_lstm_cell/kernel bidirectional_rnn/bw/basic_lstm_cell/bias");
    CHECK(vg_graph_op_by_name(g, "bidirectional_rnn/fw/fw/while/basic_lstm_cell/MatMul") != NULL);
    CHECK(vg_graph_op_by_name(g, "bidirectional_rnn/bw/bw/while/basic_lstm_cell/MatMul") != NULL);
    vg_rnn_cell_free(fw);
    vg_rnn_cell_free(bw);
    vg_graph_free(g);
}

/* contrib lstm_ops.py LSTMBlockCell.build / LSTMBlockFusedCell.build: kernel with no
 * initializer (the scope's), bias constant_initializer(0.0) ("Initializer/Const"); the
 * cells' scopes "lstm_cell" and "lstm_fused_cell" in the current variable scope. */
static void test_block_cells_scopes(void) {
    vg_graph *g = graph_in_half_scope("blk");
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){2, 3}, 2, "x");
    vg_rnn_cell *blk = vg_lstm_block_cell_new(2, 1.0f, 0, true);
    vg_output s0[2], o, n[2];
    vg_status st;
    vg_rnn_cell_zero_state(blk, g, 2, vg_out(NULL, 0), VG_FLOAT, s0);
    CHECK_OK(vg_rnn_cell_call(blk, g, x, s0, &o, n), &st);
    vg_rnn_cell *fused = vg_lstm_block_fused_cell_new(2, 1.0f, 0, false);
    vg_output seq = vg_placeholder(g, VG_FLOAT, (int64_t[]){4, 2, 3}, 3, "seq"), fo, ff[2];
    CHECK_OK(vg_fused_rnn(fused, g, seq, NULL, VG_FLOAT, vg_out(NULL, 0), &fo, ff, &st), &st);
    vg_variable_scope_pop(g);
    CHECK_COLLECTION(g, VG_TRAINABLE_VARIABLES,
                     "blk/lstm_cell/kernel blk/lstm_cell/bias blk/lstm_cell/w_i_diag blk/lstm_cell/w_f_diag "
                     "blk/lstm_cell/w_o_diag blk/lstm_fused_cell/kernel blk/lstm_fused_cell/bias");
    CHECK(vg_graph_op_by_name(g, "blk/lstm_cell/kernel/Initializer/Const") != NULL);
    CHECK(vg_graph_op_by_name(g, "blk/lstm_cell/bias/Initializer/Const") != NULL);
    CHECK(vg_graph_op_by_name(g, "blk/lstm_cell/LSTMBlockCell") != NULL);
    CHECK(vg_graph_op_by_name(g, "blk/lstm_fused_cell/BlockLSTM") != NULL);
    vg_output k = vg_variable_snapshot(vg_graph_op_by_name(g, "blk/lstm_fused_cell/kernel"));
    vg_tensor *r = NULL;
    CHECK(run(g, &k, 1, &r));
    CHECK(r && ((const float *)vg_tensor_data(r))[0] == 0.5f);
    vg_tensor_free(r);
    vg_rnn_cell_free(blk);
    vg_rnn_cell_free(fused);
    vg_graph_free(g);
}

/* GRUCell(kernel_initializer, bias_initializer) (rnn_cell_impl.GRUCell.build): the
 * bias_initializer serves both biases; the kernels ignore the scope's initializer. */
static void test_gru_cell_initializers(void) {
    vg_graph *g = vg_graph_new();
    vg_initializer half = vg_init_constant(0.5), k = vg_init_constant(0.125), b = vg_init_constant(-1.0);
    vg_variable_scope_push(g, "root", &(vg_variable_scope_opts){.initializer = &half});
    vg_rnn_cell *cell = vg_gru_cell_new_ex(2, VG_ACT_NONE, &k, &b);
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){1, 2}, 2, "x"), m = vg_placeholder(g, VG_FLOAT, (int64_t[]){1, 2}, 2, "m");
    vg_output o, n;
    vg_status st;
    CHECK_OK(vg_rnn_cell_call(cell, g, x, &m, &o, &n), &st);
    vg_variable_scope_pop(g);
    const char *names[4] = {"root/gru_cell/gates/kernel", "root/gru_cell/gates/bias", "root/gru_cell/candidate/kernel",
                            "root/gru_cell/candidate/bias"};
    const double want[4] = {0.125, -1.0, 0.125, -1.0};
    vg_output reads[4];
    for (int i = 0; i < 4; i++) reads[i] = vg_variable_snapshot(vg_graph_op_by_name(g, names[i]));
    vg_tensor *r[4] = {NULL, NULL, NULL, NULL};
    CHECK(run(g, reads, 4, r));
    for (int i = 0; i < 4; i++) {
        CHECK(r[i] && ((const float *)vg_tensor_data(r[i]))[0] == (float)want[i]);
        vg_tensor_free(r[i]);
    }
    vg_rnn_cell_free(cell);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_multi_cell_layers_do_not_share);
    RUN_TEST(test_dynamic_multi_cell_wrapper_ops);
    RUN_TEST(test_cells_called_in_turn);
    RUN_TEST(test_basic_lstm_cell_scope_initializer);
    RUN_TEST(test_gru_cell_scope_initializer);
    RUN_TEST(test_lstm_cell_variables_and_initializer);
    RUN_TEST(test_basic_rnn_cell_not_trainable);
    RUN_TEST(test_residual_wrapper_shares);
    RUN_TEST(test_dropout_wrapper_dynamic_rnn_initializer);
    RUN_TEST(test_static_rnn_scopes);
    RUN_TEST(test_bidirectional_scopes);
    RUN_TEST(test_block_cells_scopes);
    RUN_TEST(test_gru_cell_initializers);
    TEST_MAIN_END();
}
