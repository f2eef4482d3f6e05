/* test_string_split_v2.c - StringSplitV2 (tf.strings.split, SparseTensor result):
 * TF 1.15's string_split_op_test.py StringSplitV2OpTest cases (whitespace default,
 * multi-character and single-character separators, maxsplit with and without a
 * separator), plus the edge cases of TF's SplitV2 (empty input strings, maxsplit 0,
 * whitespace kinds, the empty rest after the last whitespace split) and the errors. */
#include "test_util.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"

/* Splits strs (n rows) and checks the SparseTensor against the expected tokens:
 * row_counts[r] tokens of row r, in order, in toks; dense_shape {n, cols}. */
static void check(const char *const *strs, int n, const char *sep, int64_t maxsplit, const int *row_counts,
                  const char *const *toks, int64_t cols) {
    vg_graph *g = vg_graph_new();
    vg_output src = strings(g, strs, n, "src");
    vg_sparse_output sp;
    vg_op *op = vg_string_split_v2(g, src, sep, maxsplit, &sp, NULL);
    CHECK(op && strcmp(vg_op_type(op), "StringSplitV2") == 0);
    if (!op) {
        vg_graph_free(g);
        return;
    }
    vg_tensor *out[3];
    run_sparse(g, sp, out);
    int64_t total = 0;
    for (int r = 0; r < n; r++) total += row_counts[r];
    if (out[0] && out[1] && out[2]) {
        CHECK_EQ_INT(vg_tensor_dim(out[0], 0), total);
        CHECK_EQ_INT(vg_tensor_dim(out[1], 0), total);
        const int64_t *idx = vg_tensor_data(out[0]), *shp = vg_tensor_data(out[2]);
        if (vg_tensor_dim(out[0], 0) == total) {
            int64_t t = 0;
            for (int r = 0; r < n; r++)
                for (int c = 0; c < row_counts[r]; c++, t++) {
                    CHECK_EQ_INT(idx[2 * t], r);
                    CHECK_EQ_INT(idx[2 * t + 1], c);
                    CHECK(str_is(out[1], t, toks[t]));
                }
        }
        CHECK_EQ_INT(shp[0], n);
        CHECK_EQ_INT(shp[1], cols);
    }
    for (int i = 0; i < 3; i++) vg_tensor_free(out[i]);
    vg_graph_free(g);
}

static void test_tf_cases(void) {
    /* testSplitV2: the default separator is whitespace */
    check((const char *[]){"pigs on the wing", "animals"}, 2, NULL, -1, (int[]){4, 1},
          (const char *[]){"pigs", "on", "the", "wing", "animals"}, 4);
    /* testSplitV2MultiCharSeparator: '<><>4<>5<><>6<>'.split('<>') */
    check((const char *[]){"1<>2<>3", "<><>4<>5<><>6<>"}, 2, "<>", -1, (int[]){3, 7},
          (const char *[]){"1", "2", "3", "", "", "4", "5", "", "6", ""}, 7);
    /* testSplitV2SimpleSeparator */
    check((const char *[]){"1,2,3", "4,5,,6,"}, 2, ",", -1, (int[]){3, 5},
          (const char *[]){"1", "2", "3", "4", "5", "", "6", ""}, 5);
    /* testSplitV2EmptySeparator */
    check((const char *[]){"1 2 3", "  4  5    6  "}, 2, "", -1, (int[]){3, 3},
          (const char *[]){"1", "2", "3", "4", "5", "6"}, 3);
    /* testSplitV2SimpleSeparatorMaxSplit */
    check((const char *[]){"1,2,3", "4,5,,6,"}, 2, ",", 1, (int[]){2, 2}, (const char *[]){"1", "2,3", "4", "5,,6,"},
          2);
    /* testSplitV2EmptySeparatorMaxSplit */
    check((const char *[]){"1 2 3", "  4  5    6  "}, 2, NULL, 1, (int[]){2, 2},
          (const char *[]){"1", "2 3", "4", "5    6  "}, 2);
}

static void test_edges(void) {
    /* empty strings: [] with whitespace splitting, [''] with a separator (Python) */
    check((const char *[]){"", "  \t\n ", "a"}, 3, NULL, -1, (int[]){0, 0, 1}, (const char *[]){"a"}, 1);
    check((const char *[]){"", ","}, 2, ",", -1, (int[]){1, 2}, (const char *[]){"", "", ""}, 2);
    /* every C-locale whitespace byte separates */
    check((const char *[]){"a\tb\nc\vd\fe\rf g"}, 1, NULL, -1, (int[]){7},
          (const char *[]){"a", "b", "c", "d", "e", "f", "g"}, 7);
    /* maxsplit 0: the whole string, unsplit and unstripped, even an empty one */
    check((const char *[]){" a b ", ""}, 2, NULL, 0, (int[]){1, 1}, (const char *[]){" a b ", ""}, 1);
    check((const char *[]){"a,b"}, 1, ",", 0, (int[]){1}, (const char *[]){"a,b"}, 1);
    /* TF's kernel (unlike Python) adds the rest after the whitespace that follows the
     * maxsplit-th token, even when it is empty */
    check((const char *[]){"a ", "a b c"}, 2, NULL, 1, (int[]){2, 2}, (const char *[]){"a", "", "a", "b c"}, 2);
    /* maxsplit larger than the number of separators */
    check((const char *[]){"x--y"}, 1, "--", 5, (int[]){2}, (const char *[]){"x", "y"}, 2);
    /* overlapping separator occurrences are matched left to right */
    check((const char *[]){"aaa"}, 1, "aa", -1, (int[]){2}, (const char *[]){"", "a"}, 2);
    /* no rows */
    check(NULL, 0, ",", -1, NULL, NULL, 0);
}

static void test_errors(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    CHECK(vg_string_split_v2(g, vg_const_string(g, "a b", "scalar"), NULL, -1, NULL, NULL) == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "input");
    vg_graph_free(g);
    g = vg_graph_new();
    vg_output ph = vg_placeholder(g, VG_STRING, NULL, -1, "ph");
    vg_sparse_output sp;
    CHECK(vg_string_split_v2(g, ph, ",", -1, &sp, NULL) != NULL);
    expect_string_feed_error(g, ph, "a,b", sp.values, VG_INVALID_ARGUMENT, "input must be a vector, got shape: []");
    vg_graph_free(g);
    g = vg_graph_new();
    vg_op_builder *b = vg_op_builder_new(g, "StringSplitV2", "bad");
    vg_op_builder_add_input(b, vg_const_string(g, "x", NULL));
    vg_op_builder_add_input(b, vg_const_i32(g, 1, NULL));
    CHECK(vg_op_builder_finish(b) == NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_tf_cases);
    RUN_TEST(test_edges);
    RUN_TEST(test_errors);
    TEST_MAIN_END();
}
