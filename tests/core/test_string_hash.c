/* test_string_hash.c - the string ops of src/kernels/state/lookup_ops.c: Fingerprint64
 * (farmhash), StringToHashBucketFast / Strong, AsString, and Equal / NotEqual on
 * strings. Expected values come from TF's own tests (cited per test) or by hand. */
#include "test_util.h"
#include "status_fixture.h"
#include "session_test_util.h"
#include "vigil/vigil.h"

/* fingerprint_test.cc Fingerprint64.IsForeverFrozen and the values quoted in
 * string_to_hash_bucket_op_test.py testStringToHashBucketsFast. */
static void test_fingerprint64_frozen(void) {
    CHECK(vg_fingerprint64("Hello", 5) == 15404698994557526151ULL);
    CHECK(vg_fingerprint64("World", 5) == 18308117990299812472ULL);
    CHECK(vg_fingerprint64("a", 1) == 12917804110809363939ULL);
    CHECK(vg_fingerprint64("b", 1) == 11795596070477164822ULL);
    CHECK(vg_fingerprint64("c", 1) == 11430444447143000872ULL);
    CHECK(vg_fingerprint64("d", 1) == 4470636696479570465ULL);
}

/* Longer inputs, one per length class of farmhashna (17-32, 33-64, > 64 with one, two
 * and several 64-byte blocks): the Fingerprint64 (farmhashna::Hash64) values of the
 * golden table in github.com/dgryski/go-farm's farmhash_test.go, a port checked against
 * Google's farmhash. */
static void test_fingerprint64_golden(void) {
    static const struct {
        const char *s;
        uint64_t h;
    } gold[] = {
        {"", 0x9ae16a3b2f90404fULL},
        {"abcdefgh", 0xfee9d22990c82909ULL},
        {"0123456789'01234", 0x4283d4ef43627f64ULL},
        {"0123456789=012345", 0x46a7416ed4861e3bULL},
        {"0123456789^0123456789", 0xdebcba8e6f3eabd1ULL},
        {"C is as portable as Stonehedge!!", 0xb944f8a16261e414ULL},
        {"Discard medicine more than two years old.", 0xe8f89ab6df9bdd25ULL},
        {"The days of the digital watch are numbered.  -Tom Stoppard", 0x2a578b80bb82147cULL},
        {"For every action there is an equal and opposite government program.", 0x55182f8859eca4ceULL},
        {"There is no reason for any individual to have a computer in their home. -Ken Olsen, 1977",
         0x7e85d7b050ed2967ULL},
        {"The fugacity of a constituent in a mixture of gases at a given temperature is proportional to its mole "
         "fraction.  Lewis-Randall Rule",
         0x098eff6958c5e91aULL},
        {"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et "
         "dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex "
         "ea commodo consequat. Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu "
         "fugiat nulla pariatur. Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt "
         "mollit anim id est laborum.",
         0xc3f02c4ffd5d71e6ULL},
    };
    for (size_t i = 0; i < sizeof gold / sizeof gold[0]; i++) {
        uint64_t h = vg_fingerprint64(gold[i].s, strlen(gold[i].s));
        if (h != gold[i].h)
            fprintf(stderr, "  Fingerprint64 of %zu bytes: %016llx, expected %016llx\n", strlen(gold[i].s),
                    (unsigned long long)h, (unsigned long long)gold[i].h);
        CHECK(h == gold[i].h);
    }
}

/* Every length class of farmhashna (0-16, 17-32, 33-64, > 64 with one and several
 * 64-byte blocks) reads only its own bytes: equal contents hash equal wherever they lie,
 * and changing any byte changes the hash. */
static void test_fingerprint64_lengths(void) {
    char buf[300], other[310];
    for (int i = 0; i < 300; i++) buf[i] = (char)('a' + (i * 7) % 26);
    const size_t lens[] = {0, 1, 3, 4, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 200, 300};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        size_t n = lens[k];
        uint64_t h = vg_fingerprint64(buf, n);
        memcpy(other + 3, buf, n); /* unaligned copy */
        CHECK(vg_fingerprint64(other + 3, n) == h);
        for (size_t j = 0; j < n; j += (n / 5) + 1) {
            other[3 + j] ^= 1;
            CHECK(vg_fingerprint64(other + 3, n) != h);
            other[3 + j] ^= 1;
        }
        if (n) CHECK(vg_fingerprint64(buf, n - 1) != h);
    }
}

/* string_to_hash_bucket_op_test.py testStringToOneHashBucketFast, testStringToHashBucketsFast */
static void test_hash_bucket_fast(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    const char *abcd[] = {"a", "b", "c", "d"};
    vg_output in = strings(g, abcd, 4, "in");
    vg_output one = vg_string_to_hash_bucket_fast(g, in, 1, NULL);
    vg_output ten = vg_string_to_hash_bucket_fast(g, in, 10, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(vg_output_dtype(ten) == VG_INT64);
    vg_tensor *t = run1(g, one, &st);
    CHECK(t && vg_tensor_num_elements(t) == 4);
    for (int i = 0; t && i < 4; i++) CHECK_EQ_INT(((int64_t *)vg_tensor_data(t))[i], 0);
    vg_tensor_free(t);
    t = run1(g, ten, &st);
    const int64_t want[4] = {9, 2, 2, 5};
    for (int i = 0; t && i < 4; i++) CHECK_EQ_INT(((int64_t *)vg_tensor_data(t))[i], want[i]);
    vg_tensor_free(t);
    /* num_buckets 0 is refused when the op is built */
    vg_output bad = vg_string_to_hash_bucket_fast(g, in, 0, "bad");
    CHECK(bad.op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
}

/* string_to_hash_bucket_op_test.py testStringToOneHashBucketStrongOneHashBucket,
 * testStringToHashBucketsStrong, testStringToHashBucketsStrongInvalidKey */
static void test_hash_bucket_strong(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    const char *abc[] = {"a", "b", "c"};
    vg_output in = strings(g, abc, 3, "in");
    vg_output one = vg_string_to_hash_bucket_strong(g, in, 1, (const uint64_t[]){123, 345}, NULL);
    vg_output ten = vg_string_to_hash_bucket_strong(g, in, 10, (const uint64_t[]){98765, 132}, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_tensor *t = run1(g, one, &st);
    for (int i = 0; t && i < 3; i++) CHECK_EQ_INT(((int64_t *)vg_tensor_data(t))[i], 0);
    vg_tensor_free(t);
    t = run1(g, ten, &st);
    CHECK_OK(st.code, &st);
    const int64_t want[3] = {4, 2, 8};
    for (int i = 0; t && i < 3; i++) CHECK_EQ_INT(((int64_t *)vg_tensor_data(t))[i], want[i]);
    vg_tensor_free(t);
    vg_op_builder *b = vg_op_builder_new(g, "StringToHashBucketStrong", "one_key");
    vg_op_builder_add_input(b, in);
    vg_op_builder_set_attr_int(b, "num_buckets", 10);
    vg_op_builder_set_attr_int_list(b, "key", (const int64_t[]){98765}, 1);
    CHECK(vg_op_builder_finish(b) == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Key must have 2 elements");
    vg_graph_free(g);
}

/* as_string_op_test.py testInt, testLargeInt, testFloat, testBool (formats as printf with
 * TF's defaults: "%d", "%lld", "%f", "true"/"false"; width, fill, precision, scientific,
 * shortest), and its error cases. */
static void test_as_string(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    const int32_t iv[4] = {0, 1, -1, 12345};
    const int64_t lv[2] = {-9223372036854775807LL - 1, 9223372036854775807LL};
    const float fv[3] = {-1.0f, 0.5f, 1e6f};
    const bool bv[2] = {false, true};
    vg_output ints = vg_const_array(g, VG_INT32, (int64_t[]){4}, 1, iv, "ints");
    vg_output longs = vg_const_array(g, VG_INT64, (int64_t[]){2}, 1, lv, "longs");
    vg_output floats = vg_const_array(g, VG_FLOAT, (int64_t[]){3}, 1, fv, "floats");
    vg_output bools = vg_const_array(g, VG_BOOL, (int64_t[]){2}, 1, bv, "bools");
    vg_as_string_options zero = {0}, wide = {0}, prec = {0}, sci = {0}, shortest = {0};
    zero.has_width = true;
    zero.width = 5;
    zero.fill = '0';
    wide.has_width = true;
    wide.width = 6;
    prec.has_precision = true;
    prec.precision = 2;
    sci.scientific = true;
    sci.has_precision = true;
    sci.precision = 3;
    shortest.shortest = true;
    vg_output o[9] = {vg_as_string(g, ints, NULL, NULL),      vg_as_string(g, ints, &zero, NULL),
                      vg_as_string(g, ints, &wide, NULL),     vg_as_string(g, longs, NULL, NULL),
                      vg_as_string(g, floats, NULL, NULL),    vg_as_string(g, floats, &prec, NULL),
                      vg_as_string(g, floats, &sci, NULL),    vg_as_string(g, floats, &shortest, NULL),
                      vg_as_string(g, bools, NULL, NULL)};
    CHECK_OK(vg_graph_status(g, &st), &st);
    const char *want[9][4] = {{"0", "1", "-1", "12345"},
                              {"00000", "00001", "-0001", "12345"},
                              {"     0", "     1", "    -1", " 12345"},
                              {"-9223372036854775808", "9223372036854775807"},
                              {"-1.000000", "0.500000", "1000000.000000"},
                              {"-1.00", "0.50", "1000000.00"},
                              {"-1.000e+00", "5.000e-01", "1.000e+06"},
                              {"-1", "0.5", "1e+06"},
                              {"false", "true"}};
    const int n[9] = {4, 4, 4, 2, 3, 3, 3, 3, 2};
    vg_session *s = vg_session_new(g, NULL, &st);
    for (int k = 0; k < 9; k++) {
        vg_tensor *t = NULL;
        CHECK_OK(vg_session_run1(s, o[k], &t, &st), &st);
        CHECK(t && vg_tensor_dtype(t) == VG_STRING && vg_tensor_num_elements(t) == n[k]);
        for (int i = 0; t && i < n[k]; i++) CHECK(str_is(t, i, want[k][i]));
        vg_tensor_free(t);
    }
    vg_session_free(s);
    /* errors: scientific with shortest; precision on ints; a string input */
    vg_as_string_options both = {0};
    both.scientific = both.shortest = true;
    CHECK(vg_as_string(g, floats, &both, "both").op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, "Cannot select both scientific and shortest notation");
    vg_graph_free(g);
    g = vg_graph_new();
    ints = vg_const_array(g, VG_INT32, (int64_t[]){4}, 1, iv, "ints");
    CHECK(vg_as_string(g, ints, &prec, "p").op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
    g = vg_graph_new();
    CHECK(vg_as_string(g, vg_const_string(g, "x", "s"), NULL, "str").op == NULL);
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
}

/* Equal / NotEqual on strings (TF registers both for string): element-wise, against a
 * scalar and broadcast [2,1] vs [4]; expected values by hand. */
static void test_string_equal(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    const char *a[] = {"brain", "", "salad", "sal"};
    const char *b[] = {"brain", "", "salad ", "salad"};
    vg_output x = strings(g, a, 4, "x"), y = strings(g, b, 4, "y");
    vg_output eq = vg_equal(g, x, y, NULL), ne = vg_not_equal(g, x, y, NULL);
    vg_output eqs = vg_equal(g, x, vg_const_string(g, "salad", "s"), NULL);
    vg_tensor *m = vg_tensor_new(VG_STRING, (int64_t[]){2, 1}, 2, NULL);
    vg_tensor_set_string(m, 0, "sal", 3, NULL);
    vg_tensor_set_string(m, 1, "brain", 5, NULL);
    vg_output col = vg_const(g, m, "col");
    vg_tensor_free(m);
    vg_output grid = vg_equal(g, col, x, NULL); /* [2,1] vs [4] -> [2,4] */
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(vg_output_dtype(eq) == VG_BOOL);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *t = NULL;
    const bool weq[4] = {true, true, false, false}, ws[4] = {false, false, true, false};
    CHECK_OK(vg_session_run1(s, eq, &t, &st), &st);
    for (int i = 0; t && i < 4; i++) CHECK(((bool *)vg_tensor_data(t))[i] == weq[i]);
    vg_tensor_free(t);
    CHECK_OK(vg_session_run1(s, ne, &t, &st), &st);
    for (int i = 0; t && i < 4; i++) CHECK(((bool *)vg_tensor_data(t))[i] == !weq[i]);
    vg_tensor_free(t);
    CHECK_OK(vg_session_run1(s, eqs, &t, &st), &st);
    for (int i = 0; t && i < 4; i++) CHECK(((bool *)vg_tensor_data(t))[i] == ws[i]);
    vg_tensor_free(t);
    CHECK_OK(vg_session_run1(s, grid, &t, &st), &st);
    CHECK(t && vg_tensor_ndims(t) == 2 && vg_tensor_dim(t, 0) == 2 && vg_tensor_dim(t, 1) == 4);
    const bool wg[8] = {false, false, false, true, true, false, false, false};
    for (int i = 0; t && i < 8; i++) CHECK(((bool *)vg_tensor_data(t))[i] == wg[i]);
    vg_tensor_free(t);
    vg_session_free(s);
    /* a string against an int: refused */
    vg_equal(g, x, vg_const_i32(g, 1, "one"), "mixed");
    EXPECT_GRAPH_ERROR(g, VG_INVALID_ARGUMENT, NULL);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_fingerprint64_frozen);
    RUN_TEST(test_fingerprint64_golden);
    RUN_TEST(test_fingerprint64_lengths);
    RUN_TEST(test_hash_bucket_fast);
    RUN_TEST(test_hash_bucket_strong);
    RUN_TEST(test_as_string);
    RUN_TEST(test_string_equal);
    TEST_MAIN_END();
}
