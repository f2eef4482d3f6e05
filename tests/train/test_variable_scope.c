/* test_variable_scope.c - tf.variable_scope / tf.get_variable sharing, translated from
 * TF 1.15's variable_scope_test.py (testGetVar, testNameExists, testVarScopeInitializer,
 * testVarScopeDType, testVarScopeRegularizer, testVarScopeReuse, testVarOpScope,
 * testVarScopeGetOrCreateReuse, testGetterThatCreatesTwoVariablesAndSumsThem,
 * testVarScopeNameScope, default_name uniquification) plus the errors of issue 11. */
#include "test_util.h"
#include "status_fixture.h"
#include "scope_test_util.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include "vigil/variable_scope.h"
#include <math.h>

/* testGetVar / testNameExists: a second get_variable without reuse fails. */
static void test_name_exists(void) {
    vg_graph *g = vg_graph_new();
    vg_get_variable_opts o = vopts((int64_t[]){1}, 1);
    vg_variable v = vg_get_variable_ex(g, "v", &o);
    CHECK(v.var && strcmp(var_name(v), "v") == 0);
    vg_variable v2 = vg_get_variable_ex(g, "v", &o);
    CHECK(v2.var == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Variable v already exists, disallowed. Did you mean to set reuse=True");
    vg_graph_free(g);
}

/* reuse=True shares; shape / dtype mismatches and missing variables are errors. */
static void test_reuse_and_errors(void) {
    vg_graph *g = vg_graph_new();
    vg_get_variable_opts o = vopts((int64_t[]){2, 3}, 2);
    vg_variable_scope_push(g, "foo", NULL);
    vg_variable v = vg_get_variable_ex(g, "v", &o);
    vg_variable_scope_pop(g);
    CHECK(strcmp(var_name(v), "foo/v") == 0);
    vg_variable_scope_opts r = {.reuse = VG_REUSE_TRUE};
    vg_variable_scope_push(g, "foo", &r);
    vg_variable same = vg_get_variable_ex(g, "v", &o);
    CHECK(same.var == v.var && same.read.op == v.read.op && same.initializer == v.initializer);
    vg_variable nos = vg_get_variable_ex(g, "v", NULL); /* no shape: take the existing one */
    CHECK(nos.var == v.var);
    CHECK(vg_variable_scope_reuse(g) == VG_REUSE_TRUE);
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);

    /* shape mismatch */
    g = vg_graph_new();
    vg_variable_scope_push(g, "foo", NULL);
    vg_get_variable_ex(g, "v", &o);
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, "foo", &r);
    vg_get_variable_opts o2 = vopts((int64_t[]){3, 3}, 2);
    vg_variable bad = vg_get_variable_ex(g, "v", &o2);
    vg_variable_scope_pop(g);
    CHECK(bad.var == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Trying to share variable foo/v, but specified shape [3,3] and found shape [2,3].");
    vg_graph_free(g);

    /* dtype mismatch */
    g = vg_graph_new();
    vg_get_variable_ex(g, "w", &o);
    vg_get_variable_opts o3 = o;
    o3.dt = VG_DOUBLE;
    o3.reuse = VG_REUSE_TRUE;
    bad = vg_get_variable_ex(g, "w", &o3);
    CHECK(bad.var == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Trying to share variable w, but specified dtype double and found dtype float.");
    vg_graph_free(g);

    /* reuse=True of a variable that does not exist (or was made by tf.Variable) */
    g = vg_graph_new();
    vg_variable_new(g, "x", vg_const_f32(g, 1, "c"), 0);
    vg_variable_scope_push(g, "", &(vg_variable_scope_opts){.default_name = "top"});
    vg_variable_scope_pop(g);
    vg_get_variable_opts o4 = vopts(NULL, 0);
    o4.reuse = VG_REUSE_TRUE;
    bad = vg_get_variable_ex(g, "x", &o4);
    CHECK(bad.var == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Variable x does not exist, or was not created with tf.get_variable(). Did you mean "
                               "to set reuse=tf.AUTO_REUSE in VarScope?");
    vg_graph_free(g);

    /* a new variable needs a fully defined shape */
    g = vg_graph_new();
    vg_get_variable_opts o5 = vopts((int64_t[]){-1, 2}, 2);
    bad = vg_get_variable_ex(g, "u", &o5);
    CHECK(bad.var == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Shape of a new variable (u) must be fully defined");
    vg_graph_free(g);

    /* reuse=True without a name */
    g = vg_graph_new();
    CHECK(vg_variable_scope_push(g, NULL, &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE, .default_name = "d"}) ==
          NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "reuse=True cannot be used without a name_or_scope");
    vg_graph_free(g);
}

/* testVarScopeGetOrCreateReuse: AUTO_REUSE creates once, then shares; inherited. */
static void test_auto_reuse(void) {
    vg_graph *g = vg_graph_new();
    vg_get_variable_opts o = vopts(NULL, 0);
    vg_variable_scope_opts a = {.reuse = VG_REUSE_AUTO};
    vg_variable first = {0}, second = {0};
    for (int i = 0; i < 2; i++) {
        vg_variable_scope_push(g, "bar", &a);
        vg_variable_scope_push(g, "inner", NULL); /* inherits AUTO_REUSE */
        CHECK(vg_variable_scope_reuse(g) == VG_REUSE_AUTO);
        vg_variable v = vg_get_variable_ex(g, "var", &o);
        vg_variable_scope_pop(g);
        vg_variable_scope_pop(g);
        if (i == 0) first = v;
        else second = v;
    }
    CHECK(first.var && first.var == second.var);
    CHECK(strcmp(var_name(first), "bar/inner/var") == 0);
    /* reuse_variables() on a scope */
    vg_variable_scope_push(g, "bar", NULL);
    vg_variable_scope_reuse_variables(g);
    CHECK(vg_variable_scope_reuse(g) == VG_REUSE_TRUE);
    vg_variable_scope_pop(g);
    CHECK(vg_variable_scope_reuse(g) == VG_REUSE_INHERIT);
    CHECK(vg_variable_scope_find(g, "bar/inner/var").var == first.var);
    CHECK(vg_variable_scope_find(g, "nope").var == NULL);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testVarScopeInitializer / testVarScopeDType: scope-level initializer and dtype,
 * inherited by nested scopes; an explicit initializer wins; ints default to zeros. */
static void test_initializer_dtype(void) {
    vg_graph *g = vg_graph_new();
    vg_initializer c03 = vg_init_constant(0.3);
    vg_variable_scope_push(g, "tower", &(vg_variable_scope_opts){.initializer = &c03, .dtype = VG_DOUBLE});
    vg_variable_scope_push(g, "nested", NULL);
    vg_get_variable_opts o = vopts((int64_t[]){2}, 1);
    vg_variable w = vg_get_variable_ex(g, "w", &o);
    vg_get_variable_opts o1 = o;
    o1.has_init = true;
    o1.init = vg_init_constant(0.5);
    vg_variable u = vg_get_variable_ex(g, "u", &o1);
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    vg_get_variable_opts oi = vopts(NULL, 0);
    oi.dt = VG_INT32;
    vg_variable k = vg_get_variable_ex(g, "count", &oi);
    CHECK(strcmp(var_name(w), "tower/nested/w") == 0);
    CHECK_EQ_INT(vg_output_dtype(w.read), VG_DOUBLE);
    CHECK(vg_graph_op_by_name(g, "tower/nested/w/Initializer/Const") != NULL);
    CHECK(vg_graph_op_by_name(g, "count/Initializer/zeros") != NULL);
    vg_output both = vg_add(g, w.read, u.read, "sum");
    vg_tensor *t = init_and_fetch(g, both);
    CHECK(t != NULL);
    if (t) {
        const double *d = vg_tensor_data(t);
        CHECK_NEAR(d[0], 0.8, 1e-12);
        CHECK_NEAR(d[1], 0.8, 1e-12);
        vg_tensor_free(t);
    }
    t = init_and_fetch(g, k.read);
    CHECK(t && vg_tensor_dtype(t) == VG_INT32 && ((const int32_t *)vg_tensor_data(t))[0] == 0);
    vg_tensor_free(t);
    /* float default: glorot_uniform under "<name>/Initializer/random_uniform" */
    vg_get_variable_opts of = vopts((int64_t[]){4, 6}, 2);
    vg_get_variable_ex(g, "glorot", &of);
    CHECK(vg_graph_op_by_name(g, "glorot/Initializer/random_uniform/RandomUniform") != NULL);
    vg_graph_free(g);
}

/* testVarScopeRegularizer: the scope's regularizer adds losses under
 * "<var>/Regularizer/" to REGULARIZATION_LOSSES; a per-variable one overrides it. */
static void test_regularizer(void) {
    vg_graph *g = vg_graph_new();
    vg_variable_scope_push(g, "tower", &(vg_variable_scope_opts){.regularizer = vg_regularizer_l2(0.5)});
    vg_get_variable_opts o = vopts((int64_t[]){2}, 1);
    o.has_init = true;
    o.init = vg_init_constant(3.0);
    vg_get_variable_ex(g, "a", &o);
    vg_get_variable_opts ob = o;
    ob.regularizer = vg_regularizer_l1(0.25);
    vg_get_variable_ex(g, "b", &ob);
    vg_get_variable_opts on = o;
    on.regularizer = vg_regularizer_l2(0.0); /* scale 0: no loss (TF returns None) */
    vg_get_variable_ex(g, "c", &on);
    vg_variable_scope_pop(g);
    int n;
    const vg_output *losses = vg_graph_collection(g, VG_REGULARIZATION_LOSSES, &n);
    CHECK_EQ_INT(n, 2);
    if (n == 2) {
        CHECK_STR_CONTAINS(vg_op_name(losses[0].op), "tower/a/Regularizer/l2_regularizer");
        CHECK_STR_CONTAINS(vg_op_name(losses[1].op), "tower/b/Regularizer/l1_regularizer");
    }
    vg_output total = vg_losses_get_regularization_loss(g, NULL);
    /* 0.5 * (9 + 9) / 2 + 0.25 * (3 + 3) = 4.5 + 1.5 */
    CHECK(fabs(init_and_fetch_f32(g, total) - 6.0f) < 1e-5);
    vg_graph_free(g);
}

/* testVarOpScope / testVarScopeNameScope: variables follow the variable scope, ops the
 * (unique) name scope; a name scope alone leaves variable names alone. */
static void test_naming(void) {
    vg_graph *g = vg_graph_new();
    vg_get_variable_opts o = vopts((int64_t[]){1}, 1);
    const char *full = vg_variable_scope_push(g, "tower", NULL);
    CHECK(full && strcmp(full, "tower") == 0);
    vg_variable w = vg_get_variable_ex(g, "w", &o);
    vg_output a = vg_identity(g, w.read, "add");
    CHECK(strcmp(vg_variable_scope_original_name_scope(g), "tower/") == 0);
    vg_graph_push_scope(g, "inner_ns");
    vg_variable w2 = vg_get_variable_ex(g, "w2", &o); /* name scope ignored */
    vg_graph_pop_scope(g);
    vg_variable_scope_pop(g);
    CHECK(strcmp(var_name(w), "tower/w") == 0 && strcmp(vg_op_name(a.op), "tower/add") == 0);
    CHECK(strcmp(var_name(w2), "tower/w2") == 0);
    vg_variable_scope_push(g, "tower", &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE});
    CHECK(strcmp(vg_variable_scope_original_name_scope(g), "tower_1/") == 0);
    vg_variable wr = vg_get_variable_ex(g, "w", &o);
    vg_output b = vg_identity(g, wr.read, "add");
    vg_variable_scope_pop(g);
    CHECK(wr.var == w.var && strcmp(vg_op_name(b.op), "tower_1/add") == 0);
    /* CIFAR-10's conv1: ops named after the scope inside it: "conv1/conv1" */
    vg_variable_scope_push(g, "conv1", NULL);
    vg_output r = vg_relu(g, vg_const_f32(g, 1, "c"), vg_variable_scope_name(g));
    vg_variable_scope_pop(g);
    CHECK(strcmp(vg_op_name(r.op), "conv1/conv1") == 0);
    /* a name scope outside a variable scope: variables get the variable scope only */
    vg_graph_push_scope(g, "ns");
    vg_variable_scope_push(g, "vs", NULL);
    vg_variable x = vg_get_variable_ex(g, "x", &o);
    vg_output xo = vg_identity(g, x.read, "op");
    vg_variable_scope_pop(g);
    vg_graph_pop_scope(g);
    CHECK(strcmp(var_name(x), "vs/x") == 0 && strcmp(vg_op_name(xo.op), "ns/vs/op") == 0);
    /* no_name_scope (auxiliary_name_scope=False) */
    vg_variable_scope_push(g, "quiet", &(vg_variable_scope_opts){.no_name_scope = true});
    vg_variable q = vg_get_variable_ex(g, "q", &o);
    vg_output qo = vg_identity(g, q.read, "qop");
    vg_variable_scope_pop(g);
    CHECK(strcmp(var_name(q), "quiet/q") == 0 && strcmp(vg_op_name(qo.op), "qop") == 0);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* default_name: "default", "default_1"; re-entering the parent restarts the count. */
static void test_default_name(void) {
    vg_graph *g = vg_graph_new();
    vg_variable_scope_opts d = {.default_name = "default"};
    CHECK(strcmp(vg_variable_scope_push(g, NULL, &d), "default") == 0);
    vg_variable_scope_pop(g);
    CHECK(strcmp(vg_variable_scope_push(g, NULL, &d), "default_1") == 0);
    vg_variable_scope_pop(g);
    for (int i = 0; i < 2; i++) {
        vg_variable_scope_push(g, "outer", &(vg_variable_scope_opts){.reuse = i ? VG_REUSE_TRUE : VG_REUSE_INHERIT});
        CHECK(strcmp(vg_variable_scope_push(g, NULL, &d), "outer/default") == 0);
        vg_variable_scope_pop(g);
        CHECK(strcmp(vg_variable_scope_push(g, NULL, &d), "outer/default_1") == 0);
        vg_variable_scope_pop(g);
        vg_variable_scope_pop(g);
    }
    CHECK(strcmp(vg_variable_scope_name(g), "") == 0);
    vg_variable_scope_pop(g); /* extra pop: no-op */
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testGetterThatCreatesTwoVariablesAndSumsThem, and nesting order: the innermost
 * scope's getter runs first, its `getter` being the outer one (testNestedCustomGetters,
 * _maybe_wrap_custom_getter). */
static int order[8], norder;
static vg_variable sum_getter(vg_graph *g, vg_getter_fn getter, void *ctx, const vg_getter_args *a, void *user) {
    (void)user;
    order[norder++] = 1;
    vg_variable two[2];
    get_two_sub_variables(g, getter, ctx, a, two);
    vg_variable r = two[0];
    r.read = vg_add(g, two[0].read, two[1].read, "sum");
    return r;
}
static vg_variable tag_getter(vg_graph *g, vg_getter_fn getter, void *ctx, const vg_getter_args *a, void *user) {
    order[norder++] = *(int *)user;
    return getter(g, a, ctx);
}

static void test_custom_getter(void) {
    vg_graph *g = vg_graph_new();
    norder = 0;
    int two = 2;
    vg_variable_scope_push(g, "scope", &(vg_variable_scope_opts){.custom_getter = sum_getter});
    vg_variable_scope_push(g, "inner", &(vg_variable_scope_opts){.custom_getter = tag_getter, .custom_getter_arg = &two});
    vg_get_variable_opts o = vopts((int64_t[]){1, 2, 3}, 3);
    vg_variable v = vg_get_variable_ex(g, "v", &o);
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(norder, 2); /* tag_getter (inner) once, then sum_getter, whose two calls reach the store */
    CHECK_EQ_INT(order[0], 2);
    CHECK_EQ_INT(order[1], 1);
    CHECK(vg_graph_op_by_name(g, "scope/inner/v/0") && vg_graph_op_by_name(g, "scope/inner/v/1"));
    int n;
    vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &n);
    CHECK_EQ_INT(n, 2);
    CHECK(v.read.op && (strcmp(vg_op_type(v.read.op), "AddV2") == 0 || strcmp(vg_op_type(v.read.op), "Add") == 0));
    vg_graph_free(g);
}

/* The older entry point vg_get_variable shares through the same store. */
static void test_get_variable_compat(void) {
    vg_graph *g = vg_graph_new();
    vg_variable_scope_push(g, "layer", &(vg_variable_scope_opts){.reuse = VG_REUSE_AUTO});
    vg_variable a = vg_get_variable(g, "k", VG_FLOAT, (int64_t[]){2}, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
    vg_variable b = vg_get_variable(g, "k", VG_FLOAT, (int64_t[]){2}, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
    vg_variable_scope_pop(g);
    CHECK(a.var && a.var == b.var && strcmp(var_name(a), "layer/k") == 0);
    vg_get_variable_opts o = vopts((int64_t[]){1}, 1);
    o.not_trainable = true;
    o.local = true;
    vg_variable l = vg_get_variable_ex(g, "loc", &o);
    int n;
    vg_graph_collection(g, VG_LOCAL_VARIABLES, &n);
    CHECK_EQ_INT(n, 1);
    vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &n);
    CHECK_EQ_INT(n, 1);
    CHECK(l.var != NULL);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_name_exists);
    RUN_TEST(test_reuse_and_errors);
    RUN_TEST(test_auto_reuse);
    RUN_TEST(test_initializer_dtype);
    RUN_TEST(test_regularizer);
    RUN_TEST(test_naming);
    RUN_TEST(test_default_name);
    RUN_TEST(test_custom_getter);
    RUN_TEST(test_get_variable_compat);
    TEST_MAIN_END();
}
