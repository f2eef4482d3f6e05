/* test_data_flat_map.c - Dataset.flat_map (FlatMapDataset): each element becomes a
 * dataset whose elements follow in order (TF's flat_map_dataset_op_test: range(n)
 * flat_map'ed to from_tensor_slices), an empty inner dataset is skipped, repeat over
 * it starts again, and a function that does not return a dataset is a build error. */
#include "test_util.h"
#include "cf_callbacks.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"

/* x -> from_tensor_slices([x, x + 100]) */
static vg_code pair_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_output v[2] = {args[0], vg_add(fg, args[0], vg_const_i64(fg, 100, "hundred"), NULL)};
    vg_output vec = vg_pack(fg, v, 2, 0, NULL);
    outs[0] = vg_dataset_from_tensor_slices(fg, &vec, 1, NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}

/* x -> from_tensor_slices(fill([x], x)): x copies of x */
static vg_code copies_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_output vec = vg_fill(fg, vg_reshape_c(fg, vg_cast(fg, args[0], VG_INT32, NULL), (const int64_t[]){1}, 1, NULL),
                            args[0], NULL);
    outs[0] = vg_dataset_from_tensor_slices(fg, &vec, 1, NULL);
    *nouts = 1;
    return vg_graph_status(fg, NULL);
}

DS_FN1(not_a_dataset, args[0])

static int drain(vg_graph *g, vg_output ds, int64_t *v, int max) {
    vg_status st;
    vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    int n = 0;
    for (; s && n < max;) {
        vg_tensor *o = NULL;
        vg_code rc = vg_session_run1(s, vg_out(next, 0), &o, &st);
        if (rc != VG_OK) {
            CHECK_CODE(rc, VG_OUT_OF_RANGE);
            break;
        }
        v[n++] = *(int64_t *)vg_tensor_data(o);
        vg_tensor_free(o);
    }
    vg_session_free(s);
    return n;
}

static void test_flat_map(void) {
    vg_graph *g = vg_graph_new();
    int64_t v[32];
    vg_output ds = vg_dataset_flat_map(g, vg_dataset_range(g, 0, 3, 1, NULL), pair_fn, NULL, NULL);
    CHECK(ds.op && strcmp(vg_op_type(ds.op), "FlatMapDataset") == 0);
    int n = drain(g, vg_dataset_repeat(g, ds, 2, NULL), v, 32);
    static const int64_t want[12] = {0, 100, 1, 101, 2, 102, 0, 100, 1, 101, 2, 102};
    CHECK_EQ_INT(n, 12);
    for (int i = 0; i < n && i < 12; i++) CHECK_EQ_INT(v[i], want[i]);
    vg_graph_free(g);
    /* 0 gives an empty dataset (skipped), 1 one element, 3 three */
    g = vg_graph_new();
    vg_output src = vg_dataset_from_tensor_slices(g, (vg_output[]){vg_const_array(g, VG_INT64, (const int64_t[]){3}, 1,
                                                                                  (const int64_t[]){0, 1, 3}, NULL)},
                                                  1, NULL);
    n = drain(g, vg_dataset_flat_map(g, src, copies_fn, NULL, NULL), v, 32);
    CHECK_EQ_INT(n, 4);
    CHECK(v[0] == 1 && v[1] == 3 && v[2] == 3 && v[3] == 3);
    vg_graph_free(g);
    g = vg_graph_new();
    vg_dataset_flat_map(g, vg_dataset_range(g, 0, 3, 1, NULL), not_a_dataset, NULL, NULL);
    vg_status st;
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "flat_map: the function must return one dataset");
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_flat_map);
    TEST_MAIN_END();
}
