/* test_summary_ops.c - ScalarSummary, HistogramSummary, MergeSummary run through a
 * session and decoded with the io layer's Summary decoder; TF's op and tag naming of
 * the builders (vg_summary_scalar/histogram/merge/merge_all); the error paths. */
#include "io/io.h"
#include "test_util.h"
#include "status_fixture.h"
#include "fail_nth_alloc.h"
#include "vigil/summary.h"
#include "vigil/vigil.h"
#include <float.h>

static vg_tensor *run1(vg_graph *g, vg_output o, vg_status *st) {
    vg_session *s = vg_session_new(g, NULL, st);
    if (!s) return NULL;
    vg_tensor *t = NULL;
    vg_session_run1(s, o, &t, st);
    vg_session_free(s);
    return t;
}

/* Decodes up to max values of the Summary in string tensor t. Returns the count. */
static int decode_values(const vg_tensor *t, vg__summary_value *v, int max) {
    CHECK(t != NULL);
    if (!t) return 0;
    CHECK_EQ_INT(vg_tensor_dtype(t), VG_STRING);
    CHECK_EQ_INT(vg_tensor_ndims(t), 0);
    size_t len;
    const char *s = vg_tensor_string(t, 0, &len);
    vg__summary_iter it;
    vg__summary_iter_init(&it, s, len);
    int n = 0;
    vg_status st;
    vg_code c;
    while (n < max && (c = vg__summary_next(&it, &v[n], &st)) == VG_OK) n++;
    return n;
}

static bool tag_is(const vg__summary_value *v, const char *tag) {
    return v->tag_len == strlen(tag) && memcmp(v->tag, tag, v->tag_len) == 0;
}

static void test_summary__scalar_value_and_names(void) {
    vg_graph *g = vg_graph_new();
    vg_output loss = vg_summary_scalar(g, "loss", vg_const_f32(g, 2.5f, "x"));
    vg_output loss2 = vg_summary_scalar(g, "loss", vg_const_f64(g, -0.25, "y"));
    vg_graph_push_scope(g, "train");
    vg_output acc = vg_summary_scalar(g, "acc", vg_const_i32(g, 7, "z"));
    vg_graph_pop_scope(g);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(strcmp(vg_op_name(loss.op), "loss") == 0);
    CHECK(strcmp(vg_op_type(loss.op), "ScalarSummary") == 0);
    CHECK(vg_graph_op_by_name(g, "loss/tags") != NULL);
    CHECK(strcmp(vg_op_type(vg_op_input(loss.op, 0).op), "Const") == 0);
    CHECK(strcmp(vg_op_name(vg_op_input(loss.op, 0).op), "loss/tags") == 0);
    CHECK(strcmp(vg_op_name(loss2.op), "loss_1") == 0);
    CHECK(vg_graph_op_by_name(g, "loss_1/tags") != NULL);
    CHECK(strcmp(vg_op_name(acc.op), "train/acc") == 0);
    CHECK(vg_graph_op_by_name(g, "train/acc/tags") != NULL);
    vg_dtype T;
    CHECK(vg_op_attr_type_(loss2.op, "T", &T) && T == VG_DOUBLE);
    CHECK_EQ_INT(vg_output_dtype(loss), VG_STRING);
    CHECK_EQ_INT(vg_output_shape(loss).ndims, 0);
    int n;
    const vg_output *coll = vg_graph_collection(g, VG_SUMMARIES, &n);
    CHECK_EQ_INT(n, 3);
    if (n == 3) CHECK(coll[0].op == loss.op && coll[1].op == loss2.op && coll[2].op == acc.op);

    vg__summary_value v[4];
    vg_tensor *t = run1(g, loss, &st);
    CHECK_EQ_INT(decode_values(t, v, 4), 1);
    CHECK(tag_is(&v[0], "loss"));
    CHECK_EQ_INT(v[0].kind, VG__VALUE_SIMPLE);
    CHECK_NEAR(v[0].scalar, 2.5, 0);
    /* exact bytes: Summary{value{tag "loss", simple_value 2.5f}} */
    size_t len;
    const char *bytes = vg_tensor_string(t, 0, &len);
    const uint8_t want[] = {0x0a, 0x0b, 0x0a, 0x04, 'l', 'o', 's', 's', 0x15, 0x00, 0x00, 0x20, 0x40};
    CHECK_EQ_INT(len, sizeof want);
    CHECK(len == sizeof want && memcmp(bytes, want, len) == 0);
    vg_tensor_free(t);

    t = run1(g, loss2, &st);
    CHECK_EQ_INT(decode_values(t, v, 4), 1);
    CHECK(tag_is(&v[0], "loss_1"));
    CHECK_NEAR(v[0].scalar, -0.25, 0);
    vg_tensor_free(t);

    t = run1(g, acc, &st);
    CHECK_EQ_INT(decode_values(t, v, 4), 1);
    CHECK(tag_is(&v[0], "train/acc"));
    CHECK_NEAR(v[0].scalar, 7, 0);
    vg_tensor_free(t);
    vg_graph_free(g);
}

static void test_summary__scalar_clean_tag_and_zero(void) {
    vg_graph *g = vg_graph_new();
    vg_output s = vg_summary_scalar(g, "/my loss:1", vg_const_f32(g, 0.0f, "x"));
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(s.op && strcmp(vg_op_name(s.op), "my_loss_1") == 0);
    vg__summary_value v[2];
    vg_tensor *t = run1(g, s, &st);
    CHECK_EQ_INT(decode_values(t, v, 2), 1);
    CHECK(tag_is(&v[0], "my_loss_1"));
    CHECK(v[0].has_scalar); /* simple_value 0.0 is written (oneof member) */
    CHECK_NEAR(v[0].scalar, 0, 0);
    vg_tensor_free(t);
    vg_graph_free(g);
}

/* A ScalarSummary over a vector of tags and values (TF1 op semantics). */
static void test_summary__scalar_vector_and_shape_error(void) {
    vg_graph *g = vg_graph_new();
    const char *tags[2] = {"a", "b"};
    int64_t two = 2, three = 3;
    vg_output tg = vg_const_array(g, VG_STRING, &two, 1, tags, "tags");
    float vals[3] = {1, 2, 3};
    vg_output v2 = vg_const_array(g, VG_FLOAT, &two, 1, vals, "v2");
    vg_output v3 = vg_const_array(g, VG_FLOAT, &three, 1, vals, "v3");
    vg_op_builder *b = vg_op_builder_new(g, "ScalarSummary", "ok");
    vg_op_builder_add_input(b, tg);
    vg_op_builder_add_input(b, v2);
    vg_output ok = vg_out(vg_op_builder_finish(b), 0);
    b = vg_op_builder_new(g, "ScalarSummary", "bad");
    vg_op_builder_add_input(b, tg);
    vg_op_builder_add_input(b, v3);
    vg_output bad = vg_out(vg_op_builder_finish(b), 0);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg__summary_value v[4];
    vg_tensor *t = run1(g, ok, &st);
    CHECK_EQ_INT(decode_values(t, v, 4), 2);
    CHECK(tag_is(&v[0], "a") && tag_is(&v[1], "b"));
    CHECK_NEAR(v[1].scalar, 2, 0);
    vg_tensor_free(t);
    t = run1(g, bad, &st);
    CHECK(t == NULL);
    EXPECT_STATUS(&st, VG_INVALID_ARGUMENT, "tags and values not the same shape: [2] != [3]");
    CHECK_STR_CONTAINS(st.msg, "bad");
    vg_graph_free(g);
}

static void test_summary__scalar_bad_dtype(void) {
    vg_graph *g = vg_graph_new();
    vg_output s = vg_summary_scalar(g, "s", vg_const_string(g, "nope", "x"));
    CHECK(s.op == NULL);
    vg_status st;
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "ScalarSummary");
    vg_graph_free(g);

    g = vg_graph_new();
    s = vg_summary_scalar(g, "", vg_const_f32(g, 1, "x"));
    CHECK(s.op == NULL);
    CHECK_EQ_INT(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    /* a failed input gives a failed output without a new error */
    vg_graph_free(g);
    g = vg_graph_new();
    vg_output none = {NULL, 0};
    CHECK(vg_summary_scalar(g, "x", none).op == NULL);
    CHECK(vg_summary_histogram(g, "x", none).op == NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_graph_free(g);
}

/* Reads the packed doubles of HistogramProto field `field`. */
static int histo_doubles(const uint8_t *h, size_t len, int field, double *out, int max) {
    vg__pb_reader r;
    vg__pb_field f;
    int n = 0;
    vg__pb_reader_init(&r, h, len);
    while (vg__pb_next(&r, &f, NULL) == VG_OK) {
        if (f.number != field) continue;
        if (f.wiretype == VG__PB_LEN)
            for (size_t i = 0; i + 8 <= f.len && n < max; i += 8) {
                uint64_t u = vg__get_le64(f.data + i);
                memcpy(&out[n++], &u, 8);
            }
        else if (f.wiretype == VG__PB_FIXED64 && n < max)
            out[n++] = vg__pb_as_double(&f);
    }
    return n;
}

static void test_summary__histogram_buckets(void) {
    vg_graph *g = vg_graph_new();
    float vals[5] = {-1.0f, 0.0f, 0.5f, 2.0f, 2.0f};
    int64_t five = 5;
    vg_output h = vg_summary_histogram(g, "weights", vg_const_array(g, VG_FLOAT, &five, 1, vals, "w"));
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(strcmp(vg_op_name(h.op), "weights") == 0);
    CHECK(strcmp(vg_op_type(h.op), "HistogramSummary") == 0);
    CHECK(vg_graph_op_by_name(g, "weights/tag") != NULL);
    vg__summary_value v[2];
    vg_tensor *t = run1(g, h, &st);
    CHECK_EQ_INT(decode_values(t, v, 2), 1);
    CHECK(tag_is(&v[0], "weights"));
    CHECK_EQ_INT(v[0].kind, VG__VALUE_HISTO);
    vg__histo_stats hs;
    CHECK_OK(vg__histo_decode_stats(v[0].histo, v[0].histo_len, &hs, &st), &st);
    CHECK_NEAR(hs.min, -1.0, 0);
    CHECK_NEAR(hs.max, 2.0, 0);
    CHECK_NEAR(hs.num, 5, 0);
    CHECK_NEAR(hs.sum, 3.5, 0);
    CHECK_NEAR(hs.sum_squares, 9.25, 0);
    /* TF's limits 1e-12 * 1.1^k: each occupied bucket, and each run of empty buckets
     * collapsed into one (limit of its last bucket, 0). */
    const double want_lim[9] = {-1.0089710279437536, -0.917246389039776, 0.0, 1e-12, 0.47069243095356195,
                                0.5177616740489182, 1.9661990955585713, 2.1628190051144287, DBL_MAX};
    const double want_cnt[9] = {0, 1, 0, 1, 0, 1, 0, 2, 0};
    double lim[32], cnt[32];
    int nl = histo_doubles(v[0].histo, v[0].histo_len, 6, lim, 32);
    int nc = histo_doubles(v[0].histo, v[0].histo_len, 7, cnt, 32);
    CHECK_EQ_INT(nl, 9);
    CHECK_EQ_INT(nc, 9);
    for (int i = 0; i < 9 && i < nl && i < nc; i++) {
        CHECK_NEAR(lim[i], want_lim[i], 1e-12);
        CHECK_NEAR(cnt[i], want_cnt[i], 0);
    }
    vg_tensor_free(t);
    vg_graph_free(g);
}

static void test_summary__histogram_ints_empty_and_nan(void) {
    vg_graph *g = vg_graph_new();
    int32_t iv[3] = {1, 1, 3};
    int64_t three = 3, zero = 0;
    vg_output hi = vg_summary_histogram(g, "ints", vg_const_array(g, VG_INT32, &three, 1, iv, "i"));
    vg_output he = vg_summary_histogram(g, "empty", vg_const_array(g, VG_DOUBLE, &zero, 1, NULL, "e"));
    float nv[2] = {1.0f, NAN};
    int64_t two = 2;
    vg_output hn = vg_summary_histogram(g, "nan", vg_const_array(g, VG_FLOAT, &two, 1, nv, "n"));
    vg_output hd = vg_summary_histogram(g, NULL, vg_const_f32(g, 1, "d"));
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(hd.op && strcmp(vg_op_name(hd.op), "HistogramSummary") == 0);
    vg__summary_value v[2];
    vg__histo_stats hs;
    vg_tensor *t = run1(g, hi, &st);
    CHECK_EQ_INT(decode_values(t, v, 2), 1);
    CHECK_OK(vg__histo_decode_stats(v[0].histo, v[0].histo_len, &hs, &st), &st);
    CHECK_NEAR(hs.num, 3, 0);
    CHECK_NEAR(hs.sum, 5, 0);
    CHECK_NEAR(hs.sum_squares, 11, 0);
    CHECK_EQ_INT(hs.nbuckets, 5); /* empties, {1,1}, empties, {3}, empties */
    vg_tensor_free(t);

    t = run1(g, he, &st);
    CHECK_EQ_INT(decode_values(t, v, 2), 1);
    CHECK_OK(vg__histo_decode_stats(v[0].histo, v[0].histo_len, &hs, &st), &st);
    CHECK_NEAR(hs.num, 0, 0);
    CHECK(hs.min == DBL_MAX && hs.max == -DBL_MAX);
    CHECK_EQ_INT(hs.nbuckets, 1);
    vg_tensor_free(t);

    t = run1(g, hn, &st);
    CHECK(t == NULL);
    EXPECT_STATUS(&st, VG_INVALID_ARGUMENT, "Nan in summary histogram for: nan");
    vg_graph_free(g);
}

static void test_summary__merge(void) {
    vg_graph *g = vg_graph_new();
    vg_output a = vg_summary_scalar(g, "a", vg_const_f32(g, 1, "x"));
    vg_output b = vg_summary_scalar(g, "b", vg_const_f32(g, 2, "y"));
    vg_output m = vg_summary_merge(g, (vg_output[]){b, a}, 2, NULL);
    vg_output m2 = vg_summary_merge(g, (vg_output[]){a}, 1, "named");
    vg_output all = vg_summary_merge_all(g);
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(strcmp(vg_op_name(m.op), "Merge/MergeSummary") == 0);
    CHECK(strcmp(vg_op_type(m.op), "MergeSummary") == 0);
    CHECK(strcmp(vg_op_name(m2.op), "named/named") == 0);
    CHECK(strcmp(vg_op_name(all.op), "Merge_1/MergeSummary") == 0);
    int64_t N;
    CHECK(vg_op_attr_int(m.op, "N", &N) && N == 2);
    int n;
    vg_graph_collection(g, VG_SUMMARIES, &n);
    CHECK_EQ_INT(n, 2); /* merge adds to no collection */
    vg__summary_value v[4];
    vg_tensor *t = run1(g, m, &st);
    CHECK_EQ_INT(decode_values(t, v, 4), 2);
    CHECK(tag_is(&v[0], "b") && tag_is(&v[1], "a"));
    CHECK_NEAR(v[0].scalar, 2, 0);
    CHECK_NEAR(v[1].scalar, 1, 0);
    vg_tensor_free(t);
    t = run1(g, all, &st);
    CHECK_EQ_INT(decode_values(t, v, 4), 2);
    CHECK(tag_is(&v[0], "a") && tag_is(&v[1], "b"));
    vg_tensor_free(t);
    vg_graph_free(g);

    /* empty collection: no op, no error */
    g = vg_graph_new();
    CHECK(vg_summary_merge_all(g).op == NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(vg_summary_merge(g, NULL, 0, NULL).op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
}

static void test_summary__merge_duplicate_and_garbage(void) {
    vg_graph *g = vg_graph_new();
    vg_output loss = vg_summary_scalar(g, "loss", vg_const_f32(g, 1, "x"));
    vg_output h = vg_summary_histogram(g, "h", vg_const_f32(g, 1, "y"));
    vg_output dup = vg_summary_merge(g, (vg_output[]){h, loss, h, loss}, 4, NULL);
    vg_output dup2 = vg_summary_merge(g, (vg_output[]){loss, loss}, 2, "two");
    vg_output junk = vg_summary_merge(g, (vg_output[]){loss, vg_const_string(g, "\x0a\x05zz", "junk")}, 2, "j");
    vg_status st;
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(dup.op && junk.op);
    vg_tensor *t = run1(g, dup, &st);
    CHECK(t == NULL);
    EXPECT_STATUS(&st, VG_INVALID_ARGUMENT, "Duplicate tag h found in summary inputs");
    vg_tensor_free(t);
    t = run1(g, dup2, &st);
    CHECK(t == NULL);
    EXPECT_STATUS(&st, VG_INVALID_ARGUMENT, "Duplicate tag loss found in summary inputs");
    t = run1(g, junk, &st);
    CHECK(t == NULL);
    EXPECT_STATUS(&st, VG_INVALID_ARGUMENT, "Could not parse one of the summary inputs");
    vg_graph_free(g);

    g = vg_graph_new();
    vg_output wrong = vg_summary_merge(g, (vg_output[]){vg_const_f32(g, 1, "f")}, 1, "w");
    CHECK(wrong.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "MergeSummary");
    vg_graph_free(g);
}

/* ---- allocation failures in the kernels ---- */

static void test_summary__alloc_failures(void) {
    /* the hook is installed before any object exists: blocks are freed by their maker */
    vg_allocator a = {fail_alloc, fail_free, NULL};
    vg_allocator_set(&a);
    vg_graph *g = vg_graph_new();
    float vals[4] = {1, 2, 3, 4};
    int64_t four = 4;
    vg_output s = vg_summary_scalar(g, "s", vg_const_f32(g, 1, "x"));
    vg_output h = vg_summary_histogram(g, "h", vg_const_array(g, VG_FLOAT, &four, 1, vals, "v"));
    vg_output hi = vg_summary_histogram(g, "hi", vg_const_i32(g, 3, "i"));
    vg_output m = vg_summary_merge(g, (vg_output[]){s, h, hi}, 3, NULL);
    vg_status st;
    vg_session *sess = vg_session_new(g, NULL, &st);
    CHECK(sess != NULL);
    bool ok = sess == NULL; /* nothing to run without a session */
    for (int n = 0; n < 500 && !ok; n++) {
        g_fail_at = n;
        g_count = 0;
        vg_tensor *t = NULL;
        vg_code c = vg_session_run1(sess, m, &t, &st);
        g_fail_at = -1;
        if (c == VG_OK) {
            ok = true;
            vg__summary_value v[4];
            CHECK_EQ_INT(decode_values(t, v, 4), 3);
        } else {
            CHECK_EQ_INT(c, VG_RESOURCE_EXHAUSTED);
            CHECK(t == NULL);
        }
        vg_tensor_free(t);
    }
    CHECK(ok);
    free_session_graph(sess, g);
    vg_allocator_set(NULL);
}

int main(void) {
    RUN_TEST(test_summary__scalar_value_and_names);
    RUN_TEST(test_summary__scalar_clean_tag_and_zero);
    RUN_TEST(test_summary__scalar_vector_and_shape_error);
    RUN_TEST(test_summary__scalar_bad_dtype);
    RUN_TEST(test_summary__histogram_buckets);
    RUN_TEST(test_summary__histogram_ints_empty_and_nan);
    RUN_TEST(test_summary__merge);
    RUN_TEST(test_summary__merge_duplicate_and_garbage);
    RUN_TEST(test_summary__alloc_failures);
    TEST_MAIN_END();
}
