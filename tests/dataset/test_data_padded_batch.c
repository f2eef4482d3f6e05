/* test_data_padded_batch.c - Dataset.padded_batch edge cases of TF 1.15's
 * padded_batch_test.py: empty tensors (testPaddedBatchEmptyTensors), string padding
 * with a non-default value (testPaddedBatchDatasetNonDefaultPadding /
 * testPaddedBatchDatasetUnicode), drop_remainder, a fixed padded size larger than every
 * element, and the build-time shape and padding-value errors
 * (testPaddedBatchShapeError). */
#include "test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"

/* x -> fill([x], x) */
static vg_code fill_x(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_output d = vg_reshape_c(fg, vg_cast(fg, args[0], VG_INT32, NULL), (int64_t[]){1}, 1, NULL);
    outs[0] = vg_fill(fg, d, args[0], NULL);
    *nouts = 1;
    return VG_OK;
}

/* s -> string_split([s]).values: a vector of words */
static vg_code words(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_sparse_output sp;
    vg_string_split_v2(fg, vg_reshape_c(fg, args[0], (int64_t[]){1}, 1, NULL), " ", -1, &sp, NULL);
    outs[0] = sp.values;
    *nouts = 1;
    return VG_OK;
}

static vg_tensor *next_of(vg_session *s, vg_op *next, vg_code want) {
    vg_status st;
    vg_tensor *t = NULL;
    CHECK_CODE(vg_session_run1(s, vg_out(next, 0), &t, &st), want);
    return t;
}

static void test_empty_tensors(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output zeros = vg_const_array(g, VG_INT64, (int64_t[]){4}, 1, (int64_t[]){0, 0, 0, 0}, "lens");
    vg_output ds = vg_dataset_map(g, vg_dataset_from_tensor_slices(g, &zeros, 1, NULL), fill_x, NULL, NULL);
    vg_shape longest = vg_shape_make((int64_t[]){-1}, 1);
    vg_op *next = vg_iterator_get_next(
        g, vg_make_one_shot_iterator(g, vg_dataset_padded_batch(g, ds, 4, &longest, NULL, false, NULL), NULL), NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *t = next_of(s, next, VG_OK);
    if (t) CHECK(vg_tensor_ndims(t) == 2 && vg_tensor_dim(t, 0) == 4 && vg_tensor_dim(t, 1) == 0);
    vg_tensor_free(t);
    next_of(s, next, VG_OUT_OF_RANGE);
    vg_session_free(s);
    vg_graph_free(g);
}

static void test_string_padding_and_drop_remainder(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    const char *lines[] = {"a b c", "d", "\xc3\xa9 f", "g h i j", "k"};
    vg_tensor *lt = vg_tensor_new(VG_STRING, (int64_t[]){5}, 1, &st);
    for (int i = 0; i < 5; i++) vg_tensor_set_string(lt, i, lines[i], strlen(lines[i]), &st);
    vg_output src = vg_const(g, lt, "lines");
    vg_tensor_free(lt);
    vg_output ds = vg_dataset_map(g, vg_dataset_from_tensor_slices(g, &src, 1, NULL), words, NULL, NULL);
    vg_shape longest = vg_shape_make((int64_t[]){-1}, 1), five = vg_shape_make((int64_t[]){5}, 1);
    vg_output end = vg_const_string(g, "<end>", "pad");
    vg_output pbd = vg_dataset_padded_batch(g, ds, 2, &longest, &end, true, NULL);
    vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, pbd, NULL), NULL);
    vg_op *next5 = vg_iterator_get_next(
        g, vg_make_one_shot_iterator(g, vg_dataset_padded_batch(g, ds, 5, &five, NULL, false, NULL), NULL), NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_shape os;
    CHECK(vg_dataset_components(pbd, NULL, &os) == 1);
    CHECK(os.ndims == 2 && os.dims[0] == 2 && os.dims[1] == -1); /* drop_remainder: a static batch dim */
    vg_session *s = vg_session_new(g, NULL, &st);
    const char *want[2][8] = {{"a", "b", "c", "d", "<end>", "<end>"}, {"\xc3\xa9", "f", "<end>", "<end>", "g", "h", "i", "j"}};
    const int64_t wcols[2] = {3, 4};
    for (int b = 0; b < 2; b++) {
        vg_tensor *t = next_of(s, next, VG_OK);
        if (!t) continue;
        CHECK(vg_tensor_dim(t, 0) == 2 && vg_tensor_dim(t, 1) == wcols[b]);
        for (int64_t i = 0; i < 2 * wcols[b] && vg_tensor_dim(t, 1) == wcols[b]; i++) {
            size_t l;
            const char *v = vg_tensor_string(t, i, &l);
            CHECK(l == strlen(want[b][i]) && memcmp(v, want[b][i], l) == 0);
        }
        vg_tensor_free(t);
    }
    next_of(s, next, VG_OUT_OF_RANGE); /* "k" alone is dropped */
    /* a fixed padded size larger than every element: all rows have 5 words, "" padding */
    vg_tensor *t = next_of(s, next5, VG_OK);
    if (t) {
        CHECK(vg_tensor_dim(t, 0) == 5 && vg_tensor_dim(t, 1) == 5);
        size_t l = 99;
        vg_tensor_string(t, 4 * 5 + 1, &l); /* row "k", second word: padding */
        CHECK_EQ_INT(l, 0);
    }
    kt_teardown(g, s, (vg_tensor *[]){t}, 1, NULL, 0);
}

static void test_shape_errors(void) {
    vg_status st;
    vg_shape one = vg_shape_make((int64_t[]){1}, 1);
    /* Dataset.range(10).padded_batch(5, padded_shapes=[1]) */
    vg_graph *g = vg_graph_new();
    CHECK(vg_dataset_padded_batch(g, vg_dataset_range(g, 0, 10, 1, NULL), 5, &one, NULL, false, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT,
        "The padded shape (1,) is not compatible with the corresponding input component shape ().");
    vg_graph_free(g);
    /* Dataset.from_tensors([1, 2, 3]).padded_batch(5, padded_shapes=[1]) */
    g = vg_graph_new();
    vg_output v3 = vg_const_array(g, VG_INT64, (int64_t[]){3}, 1, (int64_t[]){1, 2, 3}, NULL);
    CHECK(vg_dataset_padded_batch(g, vg_dataset_from_tensors(g, &v3, 1, NULL), 5, &one, NULL, false, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT,
        "The padded shape (1,) is not compatible with the corresponding input component shape (3,).");
    vg_graph_free(g);
    /* a padding value that is not a scalar, or of another dtype */
    g = vg_graph_new();
    vg_output ds = vg_dataset_range(g, 0, 10, 1, NULL);
    vg_output vec = vg_const_array(g, VG_INT64, (int64_t[]){2}, 1, (int64_t[]){0, 0}, "pad_vec");
    CHECK(vg_dataset_padded_batch(g, ds, 5, NULL, &vec, false, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "Padding value should be a scalar");
    vg_graph_free(g);
    g = vg_graph_new();
    ds = vg_dataset_range(g, 0, 10, 1, NULL);
    vg_output f = vg_const_f32(g, 0.5f, "pad_f");
    CHECK(vg_dataset_padded_batch(g, ds, 5, NULL, &f, false, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "does not match output type");
    vg_graph_free(g);
    /* compatible: an unknown padded dim, and a padded dim larger than the input's */
    g = vg_graph_new();
    v3 = vg_const_array(g, VG_INT64, (int64_t[]){3}, 1, (int64_t[]){1, 2, 3}, NULL);
    vg_shape four = vg_shape_make((int64_t[]){4}, 1), any = vg_shape_make((int64_t[]){-1}, 1);
    CHECK(vg_dataset_padded_batch(g, vg_dataset_from_tensors(g, &v3, 1, NULL), 5, &four, NULL, false, NULL).op != NULL);
    CHECK(vg_dataset_padded_batch(g, vg_dataset_from_tensors(g, &v3, 1, NULL), 5, &any, NULL, false, NULL).op != NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_empty_tensors);
    RUN_TEST(test_string_padding_and_drop_remainder);
    RUN_TEST(test_shape_errors);
    TEST_MAIN_END();
}
