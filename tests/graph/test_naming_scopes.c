/* test_naming_scopes.c - TF 1.15's naming rules for tf.get_variable and scope objects
 * (issue 35 items 3 and 4), translated from variable_scope_test.py (test names cited
 * per test) and variable_scope.py (VariableScope.get_variable, variable_scope /
 * _pure_variable_scope with a VariableScope argument, _VariableScopeStore). */
#include "test_util.h"
#include "status_fixture.h"
#include "scope_test_util.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include <math.h>

/* Issue 35 item 3 (VariableScope.get_variable: "Variable names only depend on
 * variable_scope (full_name here), not name_scope"): with no variable scope open,
 * get_variable("w") inside name_scope("tower") is "w", and the ops stay in "tower/". */
static void test_name_scope_does_not_prefix_get_variable(void) {
    vg_graph *g = vg_graph_new();
    vg_graph_push_scope(g, "tower");
    vg_get_variable_opts o = vopts(NULL, 0);
    vg_variable w = vg_get_variable_ex(g, "w", &o);
    vg_variable k = vg_get_variable(g, "k", VG_FLOAT, (int64_t[]){2}, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
    vg_output op = vg_identity(g, w.read, "use");
    vg_graph_pop_scope(g);
    CHECK_NAME(w.var ? vg_op_name(w.var) : "", "w");
    CHECK_NAME(k.var ? vg_op_name(k.var) : "", "k");
    CHECK(vg_graph_op_by_name(g, "w/Initializer/random_uniform") != NULL);
    CHECK_NAME(vg_op_name(op.op), "tower/use");
    /* a second get_variable("w") under another name scope is the same name: TF's error */
    vg_graph_push_scope(g, "tower2");
    vg_variable again = vg_get_variable_ex(g, "w", &o);
    vg_graph_pop_scope(g);
    CHECK(again.var == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Variable w already exists, disallowed. Did you mean to set reuse=True or "
                               "reuse=tf.AUTO_REUSE in VarScope?");
    vg_graph_free(g);
}

/* testVarScopeNameScope: re-entering a captured scope acts like another "tower" for
 * name scopes ("tower_1"), as re-entering by string does ("tower_2"); the root scope
 * re-entered opens no name scope. */
static void test_var_scope_name_scope(void) {
    vg_graph *g = vg_graph_new();
    char b[256];
    vg_graph_push_scope(g, "testVarScopeNameScope1");
    vg_variable_scope_push(g, "tower", NULL);
    vg_vscope *tower = vg_get_variable_scope(g);
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "testVarScopeNameScope1/tower/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, tower, NULL);
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "testVarScopeNameScope1/tower_1/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, "tower", NULL);
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "testVarScopeNameScope1/tower_2/scope2/");
    vg_variable_scope_pop(g);
    vg_graph_pop_scope(g);
    vg_graph_push_scope(g, "testVarScopeNameScope2");
    vg_variable_scope_enter(g, tower, NULL);
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "testVarScopeNameScope2/tower/scope2/");
    vg_variable_scope_pop(g);
    vg_graph_pop_scope(g);
    vg_vscope *root = vg_get_variable_scope(g);
    CHECK_NAME(vg_vscope_name(root), "");
    vg_graph_push_scope(g, "testVarScopeNameScope3");
    vg_variable_scope_enter(g, root, NULL);
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "testVarScopeNameScope3/scope2/");
    vg_variable_scope_pop(g);
    vg_graph_pop_scope(g);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testVarScopeOriginalNameScope: a re-entered scope keeps its original_name_scope; the
 * name scope it opens is its last name component under the current one. */
static void test_var_scope_original_name_scope(void) {
    vg_graph *g = vg_graph_new();
    char b[256];
    vg_graph_push_scope(g, "scope1");
    vg_variable_scope_push(g, "tower", NULL);
    vg_vscope *tower = vg_get_variable_scope(g);
    CHECK_NAME(vg_vscope_original_name_scope(tower), "scope1/tower/");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "scope1/tower/scope2/");
    vg_variable_scope_pop(g);
    vg_graph_pop_scope(g);
    vg_graph_push_scope(g, "scope2");
    vg_variable_scope_enter(g, tower, NULL);
    CHECK_NAME(vg_variable_scope_original_name_scope(g), "scope1/tower/");
    CHECK_NAME(vg_vscope_original_name_scope(vg_get_variable_scope(g)), "scope1/tower/");
    CHECK_NAME(ns_probe(g, "foo", b, sizeof b), "scope2/tower/foo/");
    vg_variable_scope_pop(g);
    vg_graph_push_scope(g, vg_vscope_original_name_scope(tower)); /* re-entering the original name scope */
    CHECK_NAME(ns_probe(g, "bar", b, sizeof b), "scope1/tower/bar/");
    vg_graph_pop_scope(g);
    vg_graph_pop_scope(g);
    vg_graph_free(g);
}

/* testVarScopeObjectReuse: a reusing scope object stays reusing when re-entered (reuse
 * cannot be undone); a non-reusing one takes the reuse given. */
static void test_var_scope_object_reuse(void) {
    vg_graph *g = vg_graph_new();
    vg_variable_scope_push(g, "jump", &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE});
    vg_vscope *vs = vg_get_variable_scope(g);
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, vs, NULL);
    CHECK_EQ_INT(vg_variable_scope_reuse(g), VG_REUSE_TRUE);
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, vs, &(vg_variable_scope_opts){.reuse = VG_REUSE_INHERIT}); /* reuse=False */
    CHECK_EQ_INT(vg_variable_scope_reuse(g), VG_REUSE_TRUE);
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, "jump", NULL);
    vs = vg_get_variable_scope(g);
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, vs, NULL);
    CHECK_EQ_INT(vg_variable_scope_reuse(g), VG_REUSE_INHERIT);
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, vs, &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE});
    CHECK_EQ_INT(vg_variable_scope_reuse(g), VG_REUSE_TRUE);
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(vg_vscope_reuse(vs), VG_REUSE_INHERIT); /* entering made a copy */
    vg_graph_free(g);
}

/* testVarScopeGetVar: a captured scope re-entered from anywhere names and shares as
 * itself; shape and dtype mismatches are errors. */
static void test_var_scope_get_var(void) {
    vg_graph *g = vg_graph_new();
    vg_get_variable_opts o1 = vopts(NULL, 0);
    int64_t one = 1;
    o1.dims = &one;
    o1.ndims = 1;
    vg_variable_scope_push(g, "root", NULL);
    vg_variable_scope_push(g, "towerA", NULL);
    vg_vscope *tower_a = vg_get_variable_scope(g);
    vg_variable va = vg_get_variable_ex(g, "v", &o1);
    vg_variable_scope_pop(g);
    CHECK_NAME(va.var ? vg_op_name(va.var) : "", "root/towerA/v");
    vg_variable_scope_push(g, "foo", NULL);
    vg_variable_scope_push(g, "bar", NULL);
    vg_variable v = vg_get_variable_ex(g, "v", &o1);
    CHECK_NAME(v.var ? vg_op_name(v.var) : "", "root/foo/bar/v");
    vg_variable_scope_enter(g, tower_a, &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE});
    vg_variable va3 = vg_get_variable_ex(g, "v", &o1);
    CHECK(va3.var == va.var);
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    /* reuse inherited into a new sub-scope: "root/towerA/baz/v" does not exist */
    vg_variable_scope_enter(g, tower_a, &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE});
    vg_variable_scope_push(g, "baz", NULL);
    vg_variable bad = vg_get_variable_ex(g, "v", &o1);
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    CHECK(bad.var == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Variable root/towerA/baz/v does not exist");
    CHECK_NAME(vg_variable_scope_name(g), "");
    vg_graph_free(g);
}

/* testVarOpScopeUniqueNamesWithJump: jumping into a captured scope and out keeps the
 * default-name numbering ("layer_2" after it), while leaving a string scope restarts
 * the counts below it (the variable_scope docstring's "bar" after re-entering "foo"). */
static void test_unique_names_with_jump(void) {
    vg_graph *g = vg_graph_new();
    vg_variable_scope_opts layer = {.default_name = "layer"};
    vg_variable_scope_push(g, "default", NULL);
    vg_vscope *def = vg_get_variable_scope(g);
    vg_variable_scope_push(g, NULL, &layer);
    CHECK_NAME(gv(g, "w"), "default/layer/w");
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, NULL, &layer);
    CHECK_NAME(gv(g, "w"), "default/layer_1/w");
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, def, NULL);
    vg_variable_scope_push(g, NULL, &layer); /* inside the jump: default/layer_2 */
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, NULL, &layer);
    CHECK_NAME(gv(g, "w"), "default/layer_2/w");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    /* the docstring: counters discarded once the parent is exited */
    vg_variable_scope_opts bar = {.default_name = "bar"};
    vg_variable_scope_push(g, "foo", NULL);
    vg_vscope *foo = vg_get_variable_scope(g);
    vg_variable_scope_push(g, NULL, &bar);
    CHECK_NAME(gv(g, "a"), "foo/bar/a");
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, NULL, &bar);
    CHECK_NAME(gv(g, "b"), "foo/bar_1/b");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, foo, NULL);
    vg_variable_scope_push(g, NULL, &bar);
    CHECK_NAME(gv(g, "c"), "foo/bar/c"); /* "Uses bar instead of bar_2!" */
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testVarScopeOuterScope / testVarScopeNestedOuterScope / testVarOpScopeReuseParam:
 * variables of a re-entered "outer" are "outer/...", its ops go to "outer_1/...",
 * "outer_2/..."; re-entered inside itself, to "outer/outer/..."; reuse_variables() on
 * the entered object makes its later sub-scopes reuse. */
static void test_outer_scope(void) {
    vg_graph *g = vg_graph_new();
    char b[256];
    vg_variable_scope_push(g, "outer", NULL);
    vg_vscope *outer = vg_get_variable_scope(g);
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, outer, NULL);
    CHECK_NAME(gv(g, "w"), "outer/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer_1/scope2/");
    vg_variable_scope_push(g, "default", NULL);
    CHECK_NAME(gv(g, "w"), "outer/default/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer_1/default/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, outer, &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE});
    CHECK_NAME(gv(g, "w"), "outer/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer_2/scope2/");
    vg_variable_scope_push(g, "default", &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE});
    CHECK_NAME(gv(g, "w"), "outer/default/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer_2/default/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    vg_graph_free(g);

    /* testVarScopeNestedOuterScope */
    g = vg_graph_new();
    vg_variable_scope_push(g, "outer", NULL);
    outer = vg_get_variable_scope(g);
    vg_variable_scope_enter(g, outer, NULL);
    CHECK_NAME(gv(g, "w"), "outer/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer/outer/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, outer, &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE});
    CHECK_NAME(gv(g, "w"), "outer/w");
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer/outer_1/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    vg_graph_free(g);

    /* testVarOpScopeReuseParam: outer.reuse_variables() on the entered object */
    g = vg_graph_new();
    vg_variable_scope_push(g, "outer", NULL);
    outer = vg_get_variable_scope(g);
    vg_variable_scope_push(g, NULL, &(vg_variable_scope_opts){.default_name = "default"});
    CHECK_NAME(gv(g, "w"), "outer/default/w");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, outer, NULL);
    vg_vscope_reuse_variables(vg_get_variable_scope(g));
    vg_variable_scope_push(g, NULL, &(vg_variable_scope_opts){.default_name = "default"});
    CHECK_NAME(gv(g, "w"), "outer/default/w");
    CHECK_EQ_INT(vg_variable_scope_reuse(g), VG_REUSE_TRUE);
    CHECK_NAME(ns_probe(g, "scope2", b, sizeof b), "outer_1/default/scope2/");
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testBasicWhenAuxiliaryNameScopeIsFalse / testReenterRootScopeWhenAuxiliaryNameScopeIsFalse
 * / testReuseScopeWithoutNameScopeCollision: no_name_scope keeps the current name scope,
 * for strings and for re-entered objects (the root scope included). */
static void test_auxiliary_name_scope_false(void) {
    vg_graph *g = vg_graph_new();
    vg_variable_scope_opts quiet = {.no_name_scope = true};
    vg_variable_scope_push(g, "scope", &quiet);
    vg_vscope *scope = vg_get_variable_scope(g);
    CHECK_NAME(vg_vscope_original_name_scope(scope), "");
    CHECK_NAME(gv(g, "w"), "scope/w");
    CHECK_NAME(vg_op_name(vg_const_f32(g, 0, "c").op), "c");
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, scope, &quiet);
    CHECK_NAME(gv(g, "w1"), "scope/w1");
    CHECK_NAME(vg_op_name(vg_const_f32(g, 0, "c1").op), "c1");
    vg_variable_scope_pop(g);
    vg_vscope *root = vg_get_variable_scope(g);
    vg_variable_scope_push(g, "outer", NULL);
    vg_variable_scope_enter(g, root, &quiet);
    CHECK_NAME(vg_variable_scope_original_name_scope(g), "");
    CHECK_NAME(gv(g, "w2"), "w2");
    CHECK_NAME(vg_op_name(vg_const_f32(g, 0, "c2").op), "outer/c2");
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, "inner", NULL);
    vg_vscope *inner = vg_get_variable_scope(g);
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    /* testReuseScopeWithoutNameScopeCollision */
    vg_variable_scope_push(g, "another", NULL);
    vg_variable_scope_enter(g, inner, &quiet);
    vg_graph_push_scope(g, vg_vscope_original_name_scope(inner));
    CHECK_NAME(gv(g, "w3"), "outer/inner/w3");
    CHECK_NAME(vg_op_name(vg_const_f32(g, 0, "c3").op), "outer/inner/c3");
    vg_graph_pop_scope(g);
    vg_graph_push_scope(g, "inner");
    CHECK_NAME(vg_op_name(vg_const_f32(g, 0, "c").op), "another/inner/c");
    vg_graph_pop_scope(g);
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

/* testGetVariableScope: set_initializer on tf.get_variable_scope() changes the current
 * scope in place (no nesting, no renaming) and goes away with it; reuse_variables()
 * there makes a new name fail. testVarScopeInitializer: a re-entered object with an
 * initializer. */
static void test_modify_current_scope(void) {
    vg_graph *g = vg_graph_new();
    vg_initializer c03 = vg_init_constant(0.3);
    vg_variable_scope_push(g, "bar", NULL);
    vg_vscope *cur = vg_get_variable_scope(g);
    CHECK(!vg_vscope_initializer(cur, NULL));
    vg_vscope_set_initializer(cur, &c03);
    CHECK_NAME(vg_variable_scope_name(g), "bar");
    vg_get_variable_opts o = vopts(NULL, 0);
    vg_variable v = vg_get_variable_ex(g, "v", &o);
    CHECK(vg_graph_op_by_name(g, "bar/v/Initializer/Const") != NULL);
    vg_vscope_reuse_variables(vg_get_variable_scope(g));
    vg_variable bad = vg_get_variable_ex(g, "w", &o);
    CHECK(bad.var == NULL);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_INVALID_ARGUMENT);
    vg_variable_scope_pop(g);
    CHECK(!vg_vscope_initializer(vg_get_variable_scope(g), NULL)); /* the set initializer went away */
    vg_graph_free(g);

    /* testVarScopeInitializer */
    g = vg_graph_new();
    vg_variable_scope_push(g, "tower0", NULL);
    vg_vscope *tower = vg_get_variable_scope(g);
    vg_variable_scope_push(g, "foo", &(vg_variable_scope_opts){.initializer = &c03});
    v = vg_get_variable_ex(g, "v", &o);
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, tower, &(vg_variable_scope_opts){.initializer = &c03});
    vg_variable w = vg_get_variable_ex(g, "w", &o);
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    CHECK_NAME(w.var ? vg_op_name(w.var) : "", "tower0/w");
    vg_output sum = vg_add(g, v.read, w.read, "sum");
    CHECK(fabs(init_and_fetch_f32(g, sum) - 0.6f) < 1e-6);
    vg_graph_free(g);
}

/* testVarScopeRegularizer: vs.set_regularizer on the entered scope object applies to
 * the later variables of that scope only. */
static void test_set_regularizer(void) {
    vg_graph *g = vg_graph_new();
    vg_initializer c03 = vg_init_constant(0.3);
    vg_variable_scope_push(g, "tower3", &(vg_variable_scope_opts){.regularizer = vg_regularizer_l1(1.0)});
    vg_vscope *tower = vg_get_variable_scope(g);
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, tower, &(vg_variable_scope_opts){.initializer = &c03});
    vg_get_variable_opts o = vopts(NULL, 0);
    vg_get_variable_ex(g, "u", &o); /* regularizer1 of the captured scope */
    vg_vscope_set_regularizer(vg_get_variable_scope(g), vg_regularizer_l2(1.0));
    vg_get_variable_ex(g, "w", &o);
    vg_vscope_set_regularizer(vg_get_variable_scope(g), (vg_regularizer){0}); /* no_regularizer */
    vg_get_variable_ex(g, "z", &o);
    vg_variable_scope_pop(g);
    int n;
    const vg_output *losses = vg_graph_collection(g, VG_REGULARIZATION_LOSSES, &n);
    CHECK_EQ_INT(n, 2);
    if (n == 2) {
        CHECK_NAME(vg_op_name(losses[0].op), "tower3/u/Regularizer/l1_regularizer");
        CHECK_NAME(vg_op_name(losses[1].op), "tower3/w/Regularizer/l2_regularizer");
    }
    vg_graph_free(g);
}

/* Issue 35 item 4: a custom getter installed on the current scope without renaming
 * anything: variable_scope(get_variable_scope(), custom_getter=...) at the top (the root
 * scope opens no name scope, names unchanged), and set_custom_getter in place.
 * testNoSideEffectsWithIdentityCustomGetter: a getter given when re-entering runs on the
 * re-entered scope only; a captured scope keeps its getter when re-entered. */
static int ncalls;
static vg_variable counting(vg_graph *g, vg_getter_fn getter, void *ctx, const vg_getter_args *a, void *user) {
    (void)user;
    ncalls++;
    return getter(g, a, ctx);
}

static void test_custom_getter_on_current_scope(void) {
    vg_graph *g = vg_graph_new();
    ncalls = 0;
    vg_variable_scope_enter(g, vg_get_variable_scope(g), &(vg_variable_scope_opts){.custom_getter = counting});
    CHECK_NAME(vg_variable_scope_name(g), "");
    CHECK_NAME(gv(g, "a"), "a");
    CHECK_NAME(vg_op_name(vg_const_f32(g, 0, "c").op), "c"); /* no name scope either */
    vg_variable_scope_pop(g);
    CHECK_EQ_INT(ncalls, 1);
    CHECK_NAME(gv(g, "b"), "b");
    CHECK_EQ_INT(ncalls, 1); /* gone with the scope */
    /* in place, inside "model": no nesting */
    vg_variable_scope_push(g, "model", NULL);
    CHECK_OK(vg_vscope_set_custom_getter(vg_get_variable_scope(g), counting, NULL), &(vg_status){0});
    CHECK_NAME(gv(g, "c"), "model/c");
    CHECK_EQ_INT(ncalls, 2);
    CHECK_OK(vg_vscope_set_custom_getter(vg_get_variable_scope(g), NULL, NULL), &(vg_status){0});
    CHECK_NAME(gv(g, "d"), "model/d");
    CHECK_EQ_INT(ncalls, 2);
    vg_variable_scope_pop(g);
    vg_graph_free(g);

    /* testNoSideEffectsWithIdentityCustomGetter */
    g = vg_graph_new();
    ncalls = 0;
    vg_get_variable_opts o = vopts(NULL, 0);
    int64_t one = 1;
    o.dims = &one;
    o.ndims = 1;
    vg_variable_scope_push(g, "scope", &(vg_variable_scope_opts){.custom_getter = counting});
    vg_vscope *scope = vg_get_variable_scope(g);
    vg_variable v = vg_get_variable_ex(g, "v", &o);
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, scope, &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE});
    vg_variable v2 = vg_get_variable_ex(g, "v", &o);
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, "new_scope", NULL);
    vg_vscope *new_scope = vg_get_variable_scope(g);
    vg_variable v3 = vg_get_variable_ex(g, "v3", &o);
    vg_variable_scope_pop(g);
    vg_variable_scope_enter(g, new_scope, &(vg_variable_scope_opts){.reuse = VG_REUSE_TRUE, .custom_getter = counting});
    vg_variable v4 = vg_get_variable_ex(g, "v3", &o);
    vg_variable_scope_pop(g);
    CHECK(v.var && v.var == v2.var && v3.var && v3.var == v4.var);
    CHECK_EQ_INT(ncalls, 3); /* skipped one in the first new_scope */
    vg_graph_free(g);
}

/* testNestedCustomGetters: sums of sums of products; the innermost scope's getter runs
 * first (_maybe_wrap_custom_getter). */
static vg_variable combine_getter(vg_graph *g, vg_getter_fn getter, void *ctx, const vg_getter_args *a, bool sum) {
    char n0[512], n1[512];
    snprintf(n0, sizeof n0, "%s/%s_0", a->name, sum ? "sum" : "prod");
    snprintf(n1, sizeof n1, "%s/%s_1", a->name, sum ? "sum" : "prod");
    vg_getter_args b = *a;
    b.name = n0;
    vg_variable g0 = getter(g, &b, ctx);
    b.name = n1;
    vg_variable g1 = getter(g, &b, ctx);
    vg_variable r = g0;
    vg_graph_push_scope(g, sum ? "sum_getter" : "prod_getter");
    r.read = sum ? vg_add(g, g0.read, g1.read, "add") : vg_mul(g, g0.read, g1.read, "mul");
    vg_graph_pop_scope(g);
    return r;
}
static vg_variable sum_getter(vg_graph *g, vg_getter_fn getter, void *ctx, const vg_getter_args *a, void *user) {
    (void)user;
    return combine_getter(g, getter, ctx, a, true);
}
static vg_variable prod_getter(vg_graph *g, vg_getter_fn getter, void *ctx, const vg_getter_args *a, void *user) {
    (void)user;
    return combine_getter(g, getter, ctx, a, false);
}

static void test_nested_custom_getters(void) {
    vg_graph *g = vg_graph_new();
    vg_variable_scope_push(g, "prod_scope", &(vg_variable_scope_opts){.custom_getter = prod_getter});
    vg_variable_scope_push(g, "sum_scope", &(vg_variable_scope_opts){.custom_getter = sum_getter});
    vg_variable_scope_push(g, "inner_sum_scope", &(vg_variable_scope_opts){.custom_getter = sum_getter});
    vg_get_variable_opts o = vopts(NULL, 0);
    o.dims = (int64_t[]){1, 2, 3};
    o.ndims = 3;
    o.has_init = true;
    o.init = vg_init_random_uniform(0.5, 1.5, 7);
    vg_variable v = vg_get_variable_ex(g, "v", &o);
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);
    int n;
    const vg_output *tv = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &n);
    CHECK_EQ_INT(n, 8);
    for (int i = 0; i < n && i < 8; i++) {
        char want[256];
        snprintf(want, sizeof want, "prod_scope/sum_scope/inner_sum_scope/v/sum_%d/sum_%d/prod_%d", (i >> 2) & 1,
                 (i >> 1) & 1, i & 1);
        CHECK_NAME(vg_op_name(tv[i].op), want);
    }
    vg_output fetch[9];
    fetch[0] = v.read;
    for (int i = 0; i < 8 && i < n; i++) fetch[i + 1] = vg_variable_snapshot(tv[i].op);
    vg_tensor *r[9] = {NULL};
    vg_status st;
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s && n == 8);
    if (s && n == 8) {
        CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, fetch, r, 9, NULL, 0, NULL, &st), &st);
        for (int k = 0; r[0] && k < 6; k++) {
            double x[8];
            for (int i = 0; i < 8; i++) x[i] = ((const float *)vg_tensor_data(r[i + 1]))[k];
            double want = ((x[0] * x[1]) + (x[2] * x[3])) + ((x[4] * x[5]) + (x[6] * x[7]));
            CHECK_NEAR(((const float *)vg_tensor_data(r[0]))[k], want, 1e-5);
        }
    }
    for (int i = 0; i < 9; i++) vg_tensor_free(r[i]);
    free_session_graph(s, g);
}

/* variable_scope.__init__/_enter_scope_uncached: reuse (True or AUTO_REUSE, both truthy)
 * without a name is a ValueError (INVALID_ARGUMENT); re-entering a NULL object too. */
static void test_reuse_without_name(void) {
    vg_graph *g = vg_graph_new();
    CHECK(vg_variable_scope_push(g, NULL, &(vg_variable_scope_opts){.default_name = "d", .reuse = VG_REUSE_AUTO}) == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "reuse=True cannot be used without a name_or_scope");
    vg_graph_free(g);
    g = vg_graph_new();
    CHECK(vg_variable_scope_enter(g, NULL, NULL) == NULL);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_name_scope_does_not_prefix_get_variable);
    RUN_TEST(test_var_scope_name_scope);
    RUN_TEST(test_var_scope_original_name_scope);
    RUN_TEST(test_var_scope_object_reuse);
    RUN_TEST(test_var_scope_get_var);
    RUN_TEST(test_unique_names_with_jump);
    RUN_TEST(test_outer_scope);
    RUN_TEST(test_auxiliary_name_scope_false);
    RUN_TEST(test_modify_current_scope);
    RUN_TEST(test_set_regularizer);
    RUN_TEST(test_custom_getter_on_current_scope);
    RUN_TEST(test_nested_custom_getters);
    RUN_TEST(test_reuse_without_name);
    TEST_MAIN_END();
}
