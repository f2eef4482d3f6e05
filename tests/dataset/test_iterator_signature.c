/* test_iterator_signature.c - vg_iterator_signature, the iterator check that
 * vg_iterator_get_next and vg_iterator_get_next_resumable share (issue 32 item 5): the
 * element types / shapes of an iterator handle, and INVALID_ARGUMENT "<what>: not an
 * iterator" (set once: an earlier error stays) for anything else. */
#include "status_fixture.h"
#include "test_util.h"
#include "vigil/vigil.h"

static void test_signature_of_iterator(void) {
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_batch(g, vg_dataset_range(g, 0, 10, 1, NULL), 4, false, NULL);
    vg_output it = vg_make_one_shot_iterator(g, ds, NULL);
    const vg_dtype *t = NULL;
    const vg_shape *s = NULL;
    int n = -1, ns = -1;
    CHECK_EQ_INT(vg_iterator_signature(g, it, "x", &t, &s, &n, &ns), 1);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(ns, 1);
    CHECK_EQ_INT(t[0], VG_INT64);
    CHECK_EQ_INT(s[0].ndims, 1); /* batch of a scalar: [?] */
    CHECK_EQ_INT(s[0].dims[0], -1);
    CHECK_EQ_INT(vg_graph_status(g, NULL), VG_OK);
    vg_graph_free(g);
}

static void test_not_an_iterator(void) {
    vg_graph *g = vg_graph_new();
    const vg_dtype *t = NULL;
    const vg_shape *s = NULL;
    int n = -1, ns = -1;
    vg_output c = vg_const_f32(g, 1.f, NULL);
    CHECK_EQ_INT(vg_iterator_signature(g, c, "my_caller", &t, &s, &n, &ns), 0);
    CHECK(t == NULL && s == NULL && n == -1 && ns == -1); /* outputs untouched */
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "my_caller: not an iterator");
    /* the first error stays; a NULL op and a NULL `what` fail the same way */
    CHECK_EQ_INT(vg_iterator_signature(g, (vg_output){NULL, 0}, NULL, &t, &s, &n, &ns), 0);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "my_caller: not an iterator");
    vg_graph_free(g);

    g = vg_graph_new();
    CHECK_EQ_INT(vg_iterator_signature(g, (vg_output){NULL, 0}, NULL, &t, &s, &n, &ns), 0);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "iterator: not an iterator");
    vg_graph_free(g);
}

/* both IteratorGetNext builders go through it, naming themselves */
static void test_builders_name_themselves(void) {
    for (int resumable = 0; resumable < 2; resumable++) {
        vg_graph *g = vg_graph_new();
        vg_output c = vg_const_f32(g, 1.f, NULL);
        vg_op *op = resumable ? vg_iterator_get_next_resumable(g, c, NULL, NULL) : vg_iterator_get_next(g, c, NULL);
        CHECK(op == NULL);
        EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT,
                           resumable ? "iterator_get_next_resumable: not an iterator"
                                     : "iterator_get_next: not an iterator");
        vg_graph_free(g);
    }
}

int main(void) {
    RUN_TEST(test_signature_of_iterator);
    RUN_TEST(test_not_an_iterator);
    RUN_TEST(test_builders_name_themselves);
    TEST_MAIN_END();
}
