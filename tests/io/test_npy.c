/* test_npy.c - vigil/npy.h against files NumPy 1.24 wrote (tests/data/npy/gen_npy.py):
 * every supported type read with its values; big-endian, Fortran-order and format 2.0
 * files read as the same array; vigil's writer reproduces NumPy's bytes exactly; bad
 * headers, truncated data, absurd shapes and unsupported types fail with a code and a
 * message. */
#include "test_util.h"
#include "status_fixture.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include <unistd.h>

#define ND VG_SRCDIR "/tests/data/npy/"

/* vigil's serialization of t equals NumPy's file byte for byte */
static void check_same_bytes(const vg_tensor *t, const char *file) {
    vg_status st;
    void *b = NULL;
    size_t n = 0, fn = 0;
    CHECK_OK(vg_npy_serialize(t, &b, &n, &st), &st);
    uint8_t *f = slurp(file, &fn);
    CHECK(f && n == fn && memcmp(b, f, n) == 0);
    if (!(f && n == fn && b && memcmp(b, f, n) == 0))
        fprintf(stderr, "%s: vigil wrote %zu bytes, numpy %zu: %.*s\n", file, n, fn, (int)(n > 120 ? 120 : n), (char *)b);
    free(f);
    vg_free(b);
}

static void test_read_types(void) {
    vg_status st;
    vg_tensor *t = vg_npy_read(ND "f32_2x3.npy", &st);
    CHECK(t && vg_tensor_dtype(t) == VG_FLOAT && vg_tensor_ndims(t) == 2 && vg_tensor_dim(t, 0) == 2 &&
          vg_tensor_dim(t, 1) == 3);
    for (int i = 0; t && i < 6; i++) CHECK_NEAR(((const float *)vg_tensor_data(t))[i], i / 4.0, 0);
    if (t) check_same_bytes(t, ND "f32_2x3.npy");
    /* the same array big-endian, in Fortran order and as format 2.0 */
    const char *same[] = {ND "f32_be.npy", ND "f32_fortran.npy", ND "f32_v2.npy"};
    for (int k = 0; k < 3; k++) {
        vg_tensor *u = vg_npy_read(same[k], &st);
        CHECK(u && vg_tensor_ndims(u) == 2 && vg_tensor_dim(u, 0) == 2 && vg_tensor_dim(u, 1) == 3);
        CHECK(u && t && memcmp(vg_tensor_data(u), vg_tensor_data(t), 24) == 0);
        vg_tensor_free(u);
    }
    vg_tensor_free(t);

    t = vg_npy_read(ND "f64_vec.npy", &st);
    CHECK(t && vg_tensor_dtype(t) == VG_DOUBLE && vg_tensor_num_elements(t) == 3);
    if (t) {
        const double *d = vg_tensor_data(t);
        CHECK(d[0] == 1.5 && d[1] == -2.25 && d[2] == 1e300);
        check_same_bytes(t, ND "f64_vec.npy");
    }
    vg_tensor_free(t);

    t = vg_npy_read(ND "i32_scalar.npy", &st);
    CHECK(t && vg_tensor_dtype(t) == VG_INT32 && vg_tensor_ndims(t) == 0 && *(const int32_t *)vg_tensor_data(t) == -7);
    if (t) check_same_bytes(t, ND "i32_scalar.npy");
    vg_tensor_free(t);

    t = vg_npy_read(ND "i64_3x1.npy", &st);
    CHECK(t && vg_tensor_dtype(t) == VG_INT64 && vg_tensor_dim(t, 0) == 3 && vg_tensor_dim(t, 1) == 1);
    if (t) {
        CHECK(((const int64_t *)vg_tensor_data(t))[1] == -(INT64_C(1) << 40));
        check_same_bytes(t, ND "i64_3x1.npy");
    }
    vg_tensor_free(t);

    t = vg_npy_read(ND "u8_empty.npy", &st);
    CHECK(t && vg_tensor_dtype(t) == VG_UINT8 && vg_tensor_num_elements(t) == 0 && vg_tensor_dim(t, 1) == 4);
    if (t) check_same_bytes(t, ND "u8_empty.npy");
    vg_tensor_free(t);

    t = vg_npy_read(ND "bool_vec.npy", &st);
    CHECK(t && vg_tensor_dtype(t) == VG_BOOL && vg_tensor_num_elements(t) == 3);
    if (t) {
        const bool *b = vg_tensor_data(t);
        CHECK(b[0] && !b[1] && b[2]);
        check_same_bytes(t, ND "bool_vec.npy");
    }
    vg_tensor_free(t);

    t = vg_npy_read(ND "bytes_vec.npy", &st);
    CHECK(t && vg_tensor_dtype(t) == VG_STRING && vg_tensor_num_elements(t) == 3);
    if (t) {
        size_t n;
        const char *s = vg_tensor_string(t, 2, &n);
        CHECK(n == 3 && memcmp(s, "xyz", 3) == 0);
        vg_tensor_string(t, 1, &n);
        CHECK(n == 0);
        check_same_bytes(t, ND "bytes_vec.npy");
    }
    vg_tensor_free(t);
}

static vg_tensor *parse_text(const char *header, const char *data, size_t dlen, vg_status *st) {
    uint8_t buf[512];
    size_t hl = strlen(header);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (uint8_t)hl;
    buf[9] = 0;
    memcpy(buf + 10, header, hl);
    memcpy(buf + 10 + hl, data, dlen);
    return vg_npy_parse(buf, 10 + hl + dlen, "mem.npy", st);
}

static void test_bad_input(void) {
    vg_status st;
    CHECK(vg_npy_read(ND "i16_unsupported.npy", &st) == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_UNIMPLEMENTED, "<i2");
    CHECK(vg_npy_read(ND "nothere.npy", &st) == NULL);
    CHECK_CODE(st.code, VG_NOT_FOUND);
    CHECK(vg_npy_parse("\x93NUMPX\x01\x00\x00\x00", 10, "m", &st) == NULL);
    CHECK_CODE(st.code, VG_DATA_LOSS);
    CHECK(vg_npy_parse("\x93NUMPY\x04\x00\x00\x00", 10, "m", &st) == NULL);
    CHECK_CODE(st.code, VG_DATA_LOSS);
    /* header length past the end */
    CHECK(vg_npy_parse("\x93NUMPY\x01\x00\xff\x00{", 11, "m", &st) == NULL);
    CHECK_CODE(st.code, VG_DATA_LOSS);
    /* data shorter than the shape: 2 floats of 3 */
    float f[2] = {1, 2};
    CHECK(parse_text("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n", (const char *)f, 8, &st) == NULL);
    EXPECT_CODE_MSG(st.code, &st, VG_DATA_LOSS, "mem.npy");
    /* absurd shapes, rejected before allocation; then syntax: missing key, unknown key,
     * bad bool, rank 9, objects, structured */
    static const struct {
        const char *header;
        bool with_data; /* f, dlen bytes of it; else no data */
        size_t dlen;
        vg_code code;
    } bad[] = {
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }\n", false, 0, VG_DATA_LOSS},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,), }\n", false, 0, VG_DATA_LOSS},
        {"{'descr': '|S0', 'fortran_order': False, 'shape': (1000000000000,), }\n", false, 0, VG_DATA_LOSS},
        {"{'descr': '<f4', 'shape': (1,), }\n", true, 4, VG_DATA_LOSS},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}\n", true, 4, VG_DATA_LOSS},
        {"{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }\n", true, 4, VG_DATA_LOSS},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }\n", true, 4, VG_UNIMPLEMENTED},
        {"{'descr': '|O', 'fortran_order': False, 'shape': (1,), }\n", true, 8, VG_UNIMPLEMENTED},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }\n", true, 4, VG_UNIMPLEMENTED},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int before = vg_test_failures;
        CHECK(parse_text(bad[i].header, bad[i].with_data ? (const char *)f : "", bad[i].dlen, &st) == NULL);
        CHECK_CODE(st.code, bad[i].code);
        if (vg_test_failures != before) fprintf(stderr, "  header: %s", bad[i].header);
    }
    /* accepted spellings: double quotes, no trailing comma, Python 2 longs, no order */
    vg_tensor *t = parse_text("{\"descr\":\"f4\",\"fortran_order\":False,\"shape\":(2L,)}", (const char *)f, 8, &st);
    CHECK(t && vg_tensor_num_elements(t) == 2 && ((const float *)vg_tensor_data(t))[1] == 2.0f);
    vg_tensor_free(t);
    CHECK(vg_npy_parse(NULL, 5, "m", &st) == NULL);
    CHECK_CODE(st.code, VG_INVALID_ARGUMENT);
}

static void test_write_read_back(void) {
    vg_status st;
    char dir[256], path[300];
    tu_mkdtemp(dir, sizeof dir, "npy");
    snprintf(path, sizeof path, "%s/x.npy", dir);
    int64_t dims[3] = {2, 1, 3};
    vg_tensor *t = vg_tensor_new(VG_INT32, dims, 3, &st);
    for (int i = 0; i < 6; i++) ((int32_t *)vg_tensor_data(t))[i] = i * i - 3;
    CHECK_OK(vg_npy_write(path, t, &st), &st);
    vg_tensor *u = vg_npy_read(path, &st);
    CHECK(u && vg_tensor_ndims(u) == 3 && vg_tensor_dim(u, 2) == 3 && memcmp(vg_tensor_data(u), vg_tensor_data(t), 24) == 0);
    vg_tensor_free(u);
    vg_tensor_free(t);
    CHECK_CODE(vg_npy_serialize(NULL, NULL, NULL, &st), VG_INVALID_ARGUMENT);
    tu_rmrf(dir);
}

int main(void) {
    RUN_TEST(test_read_types);
    RUN_TEST(test_bad_input);
    RUN_TEST(test_write_read_back);
    TEST_MAIN_END();
}
