/* test_parsing.c - tf.train.Example building and decoding, ParseExample /
 * ParseSingleExample, DecodeRaw, StringToNumber, DecodeCSV, the TFRecord writer with
 * compression. Expected values are worked out by hand from the proto definitions and
 * mirror cases of TF's python/kernel_tests/{parsing_ops_test, decode_raw_op_test,
 * string_to_number_op_test, decode_csv_op_test}.py. */
#include "io/example_io.h"
#include "test_util.h"
#include "vigil/vigil.h"
#include "vigil/example.h"
#include "kernels_fixture.h"
#include <ftw.h>
#include <unistd.h>
#include <zlib.h>

static char g_dir[64];

static vg_output strings_const(vg_graph *g, const char *const *s, const size_t *lens, int64_t n, const char *name) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(VG_STRING, &n, 1, &st);
    for (int64_t i = 0; i < n; i++) vg_tensor_set_string(t, i, s[i], lens ? lens[i] : strlen(s[i]), &st);
    vg_output o = vg_const(g, t, name);
    vg_tensor_free(t);
    return o;
}

/* Example{features{feature{key:"a" value{int64_list{value:[1, 300]}}}}} as protobuf's
 * serializer writes it (packed Int64List). */
static const uint8_t k_example_a[] = {0x0a, 0x0e, 0x0a, 0x0c, 0x0a, 0x01, 0x61, 0x12, 0x07, 0x1a,
                                      0x05, 0x0a, 0x03, 0x01, 0xac, 0x02};

static void test_example_bytes(void) {
    vg_status st;
    vg_example *ex = vg_example_new();
    CHECK_OK(vg_example_add_int64(ex, "a", (int64_t[]){1, 300}, 2, &st), &st);
    CHECK_CODE(vg_example_add_float(ex, "a", (float[]){1}, 1, &st), VG_ALREADY_EXISTS);
    CHECK_CODE(vg_example_add_float(ex, "", (float[]){1}, 1, &st), VG_INVALID_ARGUMENT);
    size_t len = 0;
    const uint8_t *b = vg_example_serialize(ex, &len, &st);
    CHECK(b && len == sizeof k_example_a && memcmp(b, k_example_a, len) == 0);
    /* float and bytes: Feature{float_list{value:[0.5]}} = 12 06 0a 04 00 00 00 3f,
     * Feature{bytes_list{value:["xy"]}} = 0a 04 0a 02 78 79 */
    vg_example_clear(ex);
    CHECK_OK(vg_example_add_float(ex, "f", (float[]){0.5f}, 1, &st), &st);
    CHECK_OK(vg_example_add_bytes(ex, "s", (const char *[]){"xy"}, (size_t[]){2}, 1, &st), &st);
    b = vg_example_serialize(ex, &len, &st);
    static const uint8_t want[] = {0x0a, 0x1c, 0x0a, 0x0d, 0x0a, 0x01, 0x66, 0x12, 0x08, 0x12, 0x06, 0x0a, 0x04, 0x00,
                                   0x00, 0x00, 0x3f, 0x0a, 0x0b, 0x0a, 0x01, 0x73, 0x12, 0x06, 0x0a, 0x04, 0x0a, 0x02,
                                   0x78, 0x79};
    CHECK(b && len == sizeof want && memcmp(b, want, len) == 0);
    vg_example_free(ex);
}

static void test_example_decode_unpacked_and_last_wins(void) {
    vg_status st;
    /* Int64List with unpacked values 5, 7: 08 05 08 07; key "k" given twice, the
     * second (float 2.0) wins. */
    static const uint8_t rec[] = {0x0a, 0x1c,                                                     /* features */
                                  0x0a, 0x0b, 0x0a, 0x01, 0x6b, 0x12, 0x06, 0x1a, 0x04, 0x08, 0x05, 0x08, 0x07,
                                  0x0a, 0x0d, 0x0a, 0x01, 0x6b, 0x12, 0x08, 0x12, 0x06, 0x0a, 0x04, 0x00, 0x00,
                                  0x00, 0x40};
    vg__features fs = {0};
    CHECK_OK(vg__example_decode(rec, sizeof rec, &fs, &st), &st);
    CHECK_EQ_INT(fs.n, 2);
    const vg__feature *f = vg__features_find(&fs, "k", 1);
    CHECK(f && f->kind == VG__FEAT_FLOAT);
    float x = 0;
    int64_t got = 0;
    if (f) CHECK_OK(vg__feature_floats(f, &x, 1, &got, &st), &st);
    CHECK(got == 1 && x == 2.0f);
    int64_t v[2] = {0}, cnt = 0;
    CHECK_OK(vg__feature_count(&fs.v[0], &cnt, &st), &st);
    CHECK_EQ_INT(cnt, 2);
    CHECK_OK(vg__feature_int64s(&fs.v[0], v, 2, &got, &st), &st);
    CHECK(v[0] == 5 && v[1] == 7);
    /* truncated: DATA_LOSS */
    CHECK_CODE(vg__example_decode(rec, sizeof rec - 3, &fs, &st), VG_DATA_LOSS);
    vg__features_free(&fs);
}

/* Three records (parsing_ops_test.testSerializedContainingSparseAndDense-like). */
/* Three serialized Examples (made by make_records; free_records frees them). */
typedef struct records {
    char *bufs[3];
    size_t lens[3];
} records;

static records make_records(void) {
    records r;
    vg_status st;
    for (int i = 0; i < 3; i++) {
        vg_example *ex = vg_example_new();
        int64_t label = 10 + i;
        vg_example_add_int64(ex, "label", &label, 1, &st);
        if (i != 1) vg_example_add_float(ex, "xy", (float[]){(float)i, (float)i + 0.5f}, 2, &st);
        int64_t ids[3] = {i, i + 1, i + 2};
        vg_example_add_int64(ex, "ids", ids, (size_t)i, &st); /* 0, 1 and 2 values */
        char name[8];
        snprintf(name, sizeof name, "n%d", i);
        vg_example_add_bytes(ex, "name", (const char *[]){name}, (size_t[]){strlen(name)}, 1, &st);
        size_t len;
        const void *b = vg_example_serialize(ex, &len, &st);
        r.bufs[i] = malloc(len);
        memcpy(r.bufs[i], b, len);
        r.lens[i] = len;
        vg_example_free(ex);
    }
    return r;
}

static void free_records(records *r) {
    for (int i = 0; i < 3; i++) free(r->bufs[i]);
}

/* The first n of r as a string Const "serialized". */
static vg_output records_const(vg_graph *g, const records *r, int n) {
    return strings_const(g, (const char *const *)r->bufs, r->lens, n, "serialized");
}

static void test_parse_example_batch(void) {
    vg_status st;
    records recs = make_records();
    vg_graph *g = vg_graph_new();
    vg_output ser = records_const(g, &recs, 3);
    vg_feature_spec specs[4] = {
        {"label", VG_INT64, false, vg_shape_make(NULL, 0), {NULL, 0}},
        {"xy", VG_FLOAT, false, vg_shape_make((int64_t[]){2}, 1),
         vg_const_array(g, VG_FLOAT, (int64_t[]){2}, 1, (float[]){-1, -2}, "xy_default")},
        {"ids", VG_INT64, true, vg_shape_make(NULL, 0), {NULL, 0}},
        {"name", VG_STRING, false, vg_shape_make((int64_t[]){1}, 1), {NULL, 0}},
    };
    vg_output dense[4];
    vg_sparse_output sparse[4];
    vg_op *op = vg_parse_example(g, ser, (vg_output){NULL, 0}, specs, 4, dense, sparse, NULL);
    CHECK(op != NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    if (!op) goto done;
    CHECK_STR_CONTAINS(vg_op_name(op), "ParseExample");
    vg_shape s = vg_output_shape(dense[1]);
    CHECK(s.ndims == 2 && s.dims[0] == 3 && s.dims[1] == 2);
    vg_output f[6] = {dense[0], dense[1], sparse[2].indices, sparse[2].values, sparse[2].dense_shape, dense[3]};
    vg_tensor *out[6] = {0};
    CHECK_OK(kt_run(g, f, 6, out, &st), &st);
    if (!out[0]) goto done;
    const int64_t *lab = vg_tensor_data(out[0]);
    CHECK(lab[0] == 10 && lab[1] == 11 && lab[2] == 12);
    const float *xy = vg_tensor_data(out[1]);
    CHECK(xy[0] == 0 && xy[1] == 0.5f && xy[2] == -1 && xy[3] == -2 && xy[4] == 2 && xy[5] == 2.5f);
    /* ids: record 1 has [1], record 2 has [2, 3] -> indices [[1,0],[2,0],[2,1]] */
    CHECK_EQ_INT(vg_tensor_dim(out[2], 0), 3);
    const int64_t *ind = vg_tensor_data(out[2]), *val = vg_tensor_data(out[3]), *sh = vg_tensor_data(out[4]);
    CHECK(ind[0] == 1 && ind[1] == 0 && ind[2] == 2 && ind[3] == 0 && ind[4] == 2 && ind[5] == 1);
    CHECK(val[0] == 1 && val[1] == 2 && val[2] == 3);
    CHECK(sh[0] == 3 && sh[1] == 2);
    size_t l;
    const char *nm = vg_tensor_string(out[5], 2, &l);
    CHECK(l == 2 && memcmp(nm, "n2", 2) == 0);
    for (int i = 0; i < 6; i++) vg_tensor_free(out[i]);
done:
    vg_graph_free(g);
    free_records(&recs);
}

static void test_parse_example_errors(void) {
    vg_status st;
    records recs = make_records();
    /* xy is required now; record 1 lacks it */
    vg_graph *g = vg_graph_new();
    vg_output ser = records_const(g, &recs, 3);
    vg_output names = strings_const(g, (const char *[]){"r0", "r1", "r2"}, NULL, 3, "names");
    vg_feature_spec spec = {"xy", VG_FLOAT, false, vg_shape_make((int64_t[]){2}, 1), {NULL, 0}};
    vg_output dense;
    vg_parse_example(g, ser, names, &spec, 1, &dense, NULL, NULL);
    vg_tensor *out = NULL;
    CHECK_STATUS(kt_run(g, &dense, 1, &out, &st), &st, VG_INVALID_ARGUMENT,
        "Name: r1, Feature: xy is required but could not be found.");
    vg_graph_free(g);
    /* wrong type: label is int64, asked as float */
    g = vg_graph_new();
    ser = records_const(g, &recs, 3);
    vg_feature_spec spec2 = {"label", VG_FLOAT, false, vg_shape_make(NULL, 0), {NULL, 0}};
    vg_parse_example(g, ser, (vg_output){NULL, 0}, &spec2, 1, &dense, NULL, NULL);
    CHECK_STATUS(kt_run(g, &dense, 1, &out, &st), &st, VG_INVALID_ARGUMENT, "Data types don't match");
    vg_graph_free(g);
    /* wrong count: xy asked with shape [3] */
    g = vg_graph_new();
    ser = records_const(g, &recs, 1);
    vg_feature_spec spec3 = {"xy", VG_FLOAT, false, vg_shape_make((int64_t[]){3}, 1), {NULL, 0}};
    vg_parse_example(g, ser, (vg_output){NULL, 0}, &spec3, 1, &dense, NULL, NULL);
    CHECK_STATUS(kt_run(g, &dense, 1, &out, &st), &st, VG_INVALID_ARGUMENT, "Number of float values != expected");
    vg_graph_free(g);
    /* garbage record */
    g = vg_graph_new();
    ser = strings_const(g, (const char *[]){"\x0a\x7f"}, (size_t[]){2}, 1, "serialized");
    vg_parse_example(g, ser, (vg_output){NULL, 0}, &spec3, 1, &dense, NULL, NULL);
    CHECK_STATUS(kt_run(g, &dense, 1, &out, &st), &st, VG_INVALID_ARGUMENT, "Could not parse example input");
    vg_graph_free(g);
    free_records(&recs);
}

static void test_parse_single_example(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output ser = vg_const_string(g, "", "ser");
    /* the 16 bytes of k_example_a as a scalar */
    vg_tensor *t = vg_tensor_new_string_scalar((const char *)k_example_a, sizeof k_example_a, &st);
    ser = vg_const(g, t, "ser2");
    vg_tensor_free(t);
    vg_feature_spec specs[2] = {{"a", VG_INT64, true, vg_shape_make(NULL, 0), {NULL, 0}},
                                {"b", VG_FLOAT, false, vg_shape_make((int64_t[]){2, 1}, 2), vg_const_f32(g, 7, "d")}};
    vg_output dense[2];
    vg_sparse_output sp[2];
    vg_op *op = vg_parse_single_example(g, ser, specs, 2, dense, sp, NULL);
    CHECK(op != NULL);
    vg_output f[4] = {sp[0].indices, sp[0].values, sp[0].dense_shape, dense[1]};
    vg_tensor *out[4] = {0};
    CHECK_OK(kt_run(g, f, 4, out, &st), &st);
    if (out[0]) {
        const int64_t *ind = vg_tensor_data(out[0]), *val = vg_tensor_data(out[1]), *sh = vg_tensor_data(out[2]);
        CHECK(vg_tensor_dim(out[0], 0) == 2 && vg_tensor_dim(out[0], 1) == 1);
        CHECK(ind[0] == 0 && ind[1] == 1 && val[0] == 1 && val[1] == 300 && sh[0] == 2);
        const float *b = vg_tensor_data(out[3]);
        CHECK(vg_tensor_ndims(out[3]) == 2 && b[0] == 7 && b[1] == 7);
    }
    for (int i = 0; i < 4; i++) vg_tensor_free(out[i]);
    vg_graph_free(g);
}

static void test_sequence_example(void) {
    vg_status st;
    vg_sequence_example *se = vg_sequence_example_new();
    CHECK_OK(vg_example_add_int64(vg_sequence_example_context(se), "len", (int64_t[]){2}, 1, &st), &st);
    CHECK_OK(vg_sequence_example_append_int64(se, "tok", (int64_t[]){4}, 1, &st), &st);
    CHECK_OK(vg_sequence_example_append_int64(se, "tok", (int64_t[]){5, 6}, 2, &st), &st);
    CHECK_CODE(vg_sequence_example_append_float(se, "tok", (float[]){1}, 1, &st), VG_INVALID_ARGUMENT);
    size_t len;
    const uint8_t *b = vg_sequence_example_serialize(se, &len, &st);
    /* context: 0a 0f {0a 0d {0a 03 "len" 12 06 {1a 04 {0a 02 02 ...}}}} hand-built:
     * Feature{int64_list{[2]}} = 1a 03 0a 01 02 (5 bytes); entry = 0a 03 6c 65 6e 12 05 + 5 = 12 */
    static const uint8_t ctx[] = {0x0a, 0x0e, 0x0a, 0x0c, 0x0a, 0x03, 0x6c, 0x65, 0x6e, 0x12, 0x05, 0x1a, 0x03, 0x0a, 0x01, 0x02};
    CHECK(b && len > sizeof ctx && memcmp(b, ctx, sizeof ctx) == 0);
    vg__seq_example dec = {0};
    CHECK_OK(vg__seq_example_decode(b, len, &dec, &st), &st);
    CHECK_EQ_INT(dec.context.n, 1);
    const vg__feature_list *fl = vg__seq_example_find(&dec, "tok", 3);
    CHECK(fl != NULL);
    if (fl) {
        vg__pb_reader r;
        vg__feature f;
        int steps = 0;
        int64_t total = 0, cnt;
        vg__pb_reader_init(&r, fl->data, fl->len);
        while (vg__feature_list_next(&r, &f, &st) == VG_OK) {
            steps++;
            vg__feature_count(&f, &cnt, &st);
            total += cnt;
        }
        CHECK(steps == 2 && total == 3);
    }
    vg__seq_example_free(&dec);
    vg_sequence_example_free(se);
}


/* magenta's make_sequence_example(inputs, labels) parsed as get_padded_batch does
 * (FixedLenSequenceFeature inputs [2] float, labels [] int64), plus a context feature
 * and a VarLen sequence feature (parsing_ops_test.testSequenceExampleWithSparseAndDense-
 * FeatureLists-like). */
static void test_parse_single_sequence_example(void) {
    vg_status st;
    vg_sequence_example *se = vg_sequence_example_new();
    vg_example_add_int64(vg_sequence_example_context(se), "len", (int64_t[]){3}, 1, &st);
    for (int t = 0; t < 3; t++) {
        vg_sequence_example_append_float(se, "inputs", (float[]){(float)t, 10.0f + t}, 2, &st);
        vg_sequence_example_append_int64(se, "labels", (int64_t[]){100 + t}, 1, &st);
        int64_t tags[2] = {t, -t};
        vg_sequence_example_append_int64(se, "tags", tags, (size_t)(t == 1 ? 0 : t == 0 ? 1 : 2), &st);
    }
    size_t len;
    const void *b = vg_sequence_example_serialize(se, &len, &st);
    vg_graph *g = vg_graph_new();
    vg_tensor *t = vg_tensor_new_string_scalar(b, len, &st);
    vg_output ser = vg_const(g, t, "ser");
    vg_tensor_free(t);
    vg_sequence_example_free(se);
    vg_feature_spec ctx[1] = {{"len", VG_INT64, false, vg_shape_make(NULL, 0), {NULL, 0}}};
    vg_sequence_feature_spec seq[4] = {{"inputs", VG_FLOAT, false, vg_shape_make((int64_t[]){2}, 1), false},
                                       {"labels", VG_INT64, false, vg_shape_make(NULL, 0), false},
                                       {"tags", VG_INT64, true, vg_shape_make(NULL, 0), false},
                                       {"absent", VG_FLOAT, false, vg_shape_make((int64_t[]){4}, 1), true}};
    vg_output cd[1], sd[4];
    vg_sparse_output ss[4];
    vg_op *op = vg_parse_single_sequence_example(g, ser, ctx, 1, seq, 4, cd, NULL, sd, ss, NULL);
    CHECK(op != NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_shape sh = vg_output_shape(sd[0]);
    CHECK(sh.ndims == 2 && sh.dims[0] == -1 && sh.dims[1] == 2);
    vg_output f[7] = {cd[0], sd[0], sd[1], ss[2].indices, ss[2].values, ss[2].dense_shape, sd[3]};
    vg_tensor *out[7] = {0};
    CHECK_OK(kt_run(g, f, 7, out, &st), &st);
    if (out[0]) {
        CHECK(*(int64_t *)vg_tensor_data(out[0]) == 3);
        const float *in = vg_tensor_data(out[1]);
        CHECK(vg_tensor_dim(out[1], 0) == 3 && in[0] == 0 && in[1] == 10 && in[4] == 2 && in[5] == 12);
        const int64_t *lab = vg_tensor_data(out[2]);
        CHECK(vg_tensor_dim(out[2], 0) == 3 && lab[0] == 100 && lab[2] == 102);
        /* tags: step 0 [0], step 1 [], step 2 [2, -2] */
        const int64_t *ind = vg_tensor_data(out[3]), *val = vg_tensor_data(out[4]), *dsh = vg_tensor_data(out[5]);
        CHECK_EQ_INT(vg_tensor_dim(out[3], 0), 3);
        CHECK(ind[0] == 0 && ind[1] == 0 && ind[2] == 2 && ind[3] == 0 && ind[4] == 2 && ind[5] == 1);
        CHECK(val[0] == 0 && val[1] == 2 && val[2] == -2);
        CHECK(dsh[0] == 3 && dsh[1] == 2);
        CHECK(vg_tensor_ndims(out[6]) == 2 && vg_tensor_dim(out[6], 0) == 0 && vg_tensor_dim(out[6], 1) == 4);
    }
    for (int i = 0; i < 7; i++) vg_tensor_free(out[i]);
    /* a required feature list that is absent; a step with the wrong count */
    vg_sequence_feature_spec req = {"absent", VG_FLOAT, false, vg_shape_make((int64_t[]){4}, 1), false};
    vg_output o1;
    vg_parse_single_sequence_example(g, ser, NULL, 0, &req, 1, NULL, NULL, &o1, NULL, NULL);
    vg_tensor *x = NULL;
    CHECK_STATUS(kt_run(g, &o1, 1, &x, &st), &st, VG_INVALID_ARGUMENT,
        "Feature list 'absent' is required but could not be found");
    vg_sequence_feature_spec wrong = {"inputs", VG_FLOAT, false, vg_shape_make((int64_t[]){3}, 1), false};
    vg_parse_single_sequence_example(g, ser, NULL, 0, &wrong, 1, NULL, NULL, &o1, NULL, NULL);
    CHECK_STATUS(kt_run(g, &o1, 1, &x, &st), &st, VG_INVALID_ARGUMENT, "Number of float values != expected");
    vg_graph_free(g);
}


/* Bad input never crashes: 3000 mutations (byte flips, truncations, inserted bytes) of
 * valid Example and SequenceExample records go through the decoders and the
 * ParseExample op; each gives OK or DATA_LOSS (decoder) / INVALID_ARGUMENT (op). A
 * length field that claims more than the record holds is rejected, not allocated. */
static void test_mutated_records(void) {
    vg_status st;
    records recs = make_records();
    vg_sequence_example *se = vg_sequence_example_new();
    vg_sequence_example_append_float(se, "f", (float[]){1, 2}, 2, &st);
    vg_sequence_example_append_bytes(se, "b", (const char *[]){"xyz"}, (size_t[]){3}, 1, &st);
    size_t slen;
    const uint8_t *sbytes = vg_sequence_example_serialize(se, &slen, &st);
    uint8_t buf[512];
    unsigned seed = 12345;
    int bad = 0, ok = 0;
    vg__features fs = {0};
    vg__seq_example sq = {0};
    for (int it = 0; it < 3000; it++) {
        const uint8_t *src = it % 4 == 3 ? sbytes : (const uint8_t *)recs.bufs[it % 3];
        size_t n = it % 4 == 3 ? slen : recs.lens[it % 3];
        if (n > sizeof buf - 8) continue;
        memcpy(buf, src, n);
        int kind = rand_r(&seed) % 3;
        if (kind == 0) {
            for (int k = 0; k < 3; k++) buf[rand_r(&seed) % n] = (uint8_t)rand_r(&seed);
        } else if (kind == 1) {
            n = (size_t)rand_r(&seed) % n;
        } else {
            size_t at = (size_t)rand_r(&seed) % n;
            memmove(buf + at + 1, buf + at, n - at);
            buf[at] = (uint8_t)(0x80 | rand_r(&seed));
            n++;
        }
        vg_code rc = it % 4 == 3 ? vg__seq_example_decode(buf, n, &sq, &st) : vg__example_decode(buf, n, &fs, &st);
        CHECK(rc == VG_OK || rc == VG_DATA_LOSS);
        if (rc == VG_OK && it % 4 != 3) {
            for (size_t i = 0; i < fs.n; i++) {
                int64_t cnt, got, tmp[64];
                float ftmp[64];
                vg_code r2 = vg__feature_count(&fs.v[i], &cnt, &st);
                CHECK(r2 == VG_OK || r2 == VG_DATA_LOSS);
                if (r2 == VG_OK && cnt <= 64 && fs.v[i].kind == VG__FEAT_INT64) vg__feature_int64s(&fs.v[i], tmp, cnt, &got, &st);
                if (r2 == VG_OK && cnt <= 64 && fs.v[i].kind == VG__FEAT_FLOAT) vg__feature_floats(&fs.v[i], ftmp, cnt, &got, &st);
            }
        }
        rc == VG_OK ? ok++ : bad++;
        if (it % 50 == 0 && it % 4 != 3) { /* through the op as well */
            vg_graph *g = vg_graph_new();
            vg_output ser = strings_const(g, (const char *[]){(const char *)buf}, &n, 1, "ser");
            vg_feature_spec specs[2] = {{"label", VG_INT64, false, vg_shape_make(NULL, 0), vg_const_i64(g, -1, "d")},
                                        {"ids", VG_INT64, true, vg_shape_make(NULL, 0), {NULL, 0}}};
            vg_output dense[2];
            vg_sparse_output sp[2];
            vg_parse_example(g, ser, (vg_output){NULL, 0}, specs, 2, dense, sp, NULL);
            vg_tensor *out[2] = {0};
            vg_code r3 = kt_run(g, (vg_output[]){dense[0], sp[1].values}, 2, out, &st);
            CHECK(r3 == VG_OK || r3 == VG_INVALID_ARGUMENT);
            vg_tensor_free(out[0]);
            vg_tensor_free(out[1]);
            vg_graph_free(g);
        }
    }
    CHECK(ok > 0 && bad > 0); /* both outcomes were exercised */
    vg__features_free(&fs);
    vg__seq_example_free(&sq);
    vg_sequence_example_free(se);
    free_records(&recs);
}

static void test_decode_raw(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    /* decode_raw_op_test.testToInt16-like with int32: bytes 01 00 00 00 | 00 00 01 02 */
    vg_output in = strings_const(g, (const char *[]){"\x01\x00\x00\x00\x00\x00\x01\x02"}, (size_t[]){8}, 1, "in");
    vg_output le = vg_decode_raw(g, in, VG_INT32, true, "le");
    vg_output be = vg_decode_raw(g, in, VG_INT32, false, "be");
    vg_output u8 = vg_decode_raw(g, in, VG_UINT8, true, "u8");
    vg_output odd = strings_const(g, (const char *[]){"abc", "de"}, NULL, 2, "odd");
    vg_output bad = vg_decode_raw(g, odd, VG_UINT8, true, "bad");
    vg_output three = strings_const(g, (const char *[]){"abc"}, NULL, 1, "three");
    vg_output bad2 = vg_decode_raw(g, three, VG_INT32, true, "bad2");
    vg_tensor *out[3] = {0};
    CHECK_OK(kt_run(g, (vg_output[]){le, be, u8}, 3, out, &st), &st);
    if (out[0]) {
        const int32_t *a = vg_tensor_data(out[0]), *b = vg_tensor_data(out[1]);
        CHECK(vg_tensor_ndims(out[0]) == 2 && vg_tensor_dim(out[0], 1) == 2);
        CHECK(a[0] == 1 && a[1] == 0x02010000);
        CHECK(b[0] == 0x01000000 && b[1] == 0x0102);
        CHECK_EQ_INT(vg_tensor_dim(out[2], 1), 8);
    }
    for (int i = 0; i < 3; i++) vg_tensor_free(out[i]);
    vg_tensor *o = NULL;
    CHECK_STATUS(kt_run(g, &bad, 1, &o, &st), &st, VG_INVALID_ARGUMENT, "same size");
    CHECK_STATUS(kt_run(g, &bad2, 1, &o, &st), &st, VG_INVALID_ARGUMENT, "not a multiple of 4");
    vg_graph_free(g);
}

static void test_string_to_number(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output in = strings_const(g, (const char *[]){"0", "3", "-1", "1.12", "0xF", "   -10.5", "3.40282e+38"}, NULL,
                                 7, "in");
    vg_output f = vg_string_to_number(g, in, VG_FLOAT, NULL);
    vg_output ints = strings_const(g, (const char *[]){"-2147483648", "2147483647", " 12 "}, NULL, 3, "ints");
    vg_output i32 = vg_string_to_number(g, ints, VG_INT32, NULL);
    vg_output over = strings_const(g, (const char *[]){"2147483648"}, NULL, 1, "over");
    vg_output bad = vg_string_to_number(g, over, VG_INT32, NULL);
    vg_output junk = strings_const(g, (const char *[]){"2.9x"}, NULL, 1, "junk");
    vg_output bad2 = vg_string_to_number(g, junk, VG_FLOAT, NULL);
    vg_tensor *out[2] = {0};
    CHECK_OK(kt_run(g, (vg_output[]){f, i32}, 2, out, &st), &st);
    if (out[0]) {
        const float *x = vg_tensor_data(out[0]);
        CHECK(x[0] == 0 && x[1] == 3 && x[2] == -1 && x[3] == 1.12f && x[4] == 15 && x[5] == -10.5f);
        const int32_t *y = vg_tensor_data(out[1]);
        CHECK(y[0] == INT32_MIN && y[1] == INT32_MAX && y[2] == 12);
    }
    for (int i = 0; i < 2; i++) vg_tensor_free(out[i]);
    vg_tensor *o = NULL;
    CHECK_STATUS(kt_run(g, &bad, 1, &o, &st), &st, VG_INVALID_ARGUMENT,
        "StringToNumberOp could not correctly convert string: 2147483648");
    CHECK_CODE(kt_run(g, &bad2, 1, &o, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

static void test_decode_csv(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    /* decode_csv_op_test: quoted fields with escaped quotes and delimiters, defaults */
    vg_output recs = strings_const(g, (const char *[]){"1,\"a,\"\"b\",2.5", ",x,", "7,\"\",1e3"}, NULL, 3, "recs");
    vg_output defs[3] = {vg_const_array(g, VG_INT32, (int64_t[]){1}, 1, (int32_t[]){-9}, "d0"),
                         vg_const_string(g, "dflt", "d1"), vg_const_f32(g, 0.25f, "d2")};
    vg_output outs[3];
    vg_op *op = vg_decode_csv(g, recs, defs, 3, NULL, true, NULL, outs, NULL);
    CHECK(op != NULL);
    vg_tensor *out[3] = {0};
    CHECK_OK(kt_run(g, outs, 3, out, &st), &st);
    if (out[0]) {
        const int32_t *a = vg_tensor_data(out[0]);
        CHECK(a[0] == 1 && a[1] == -9 && a[2] == 7);
        size_t l;
        const char *s = vg_tensor_string(out[1], 0, &l);
        CHECK(l == 4 && memcmp(s, "a,\"b", 4) == 0);
        s = vg_tensor_string(out[1], 1, &l);
        CHECK(l == 1 && s[0] == 'x');
        s = vg_tensor_string(out[1], 2, &l);
        CHECK(l == 4 && memcmp(s, "dflt", 4) == 0); /* "" is an empty field: default */
        const float *c = vg_tensor_data(out[2]);
        CHECK(c[0] == 2.5f && c[1] == 0.25f && c[2] == 1000.0f);
    }
    for (int i = 0; i < 3; i++) vg_tensor_free(out[i]);
    /* required column missing; wrong field count; bad number */
    int64_t zero = 0;
    vg_output req = vg_const_fill(g, VG_INT64, &zero, 1, 0, "req");
    const char *cases[3] = {",1", "1,2,3", "x,1"};
    const char *want[3] = {"Field 0 is required but missing in record 0", "Expect 2 fields", "is not a valid int64"};
    for (int i = 0; i < 3; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "bad%d", i);
        vg_output r = strings_const(g, &cases[i], NULL, 1, nm);
        vg_output o2[2];
        vg_decode_csv(g, r, (vg_output[]){req, req}, 2, NULL, true, NULL, o2, NULL);
        vg_tensor *o = NULL;
        CHECK_STATUS(kt_run(g, o2, 1, &o, &st), &st, VG_INVALID_ARGUMENT, want[i]);
    }
    vg_graph_free(g);
}

static void test_tfrecord_writer_compression(void) {
    vg_status st;
    const char *payload[3] = {"first", "", "the third record"};
    for (int c = 0; c < 3; c++) {
        char path[128];
        snprintf(path, sizeof path, "%s/w%d.tfrecord", g_dir, c);
        vg_tfrecord_writer *w = vg_tfrecord_writer_open(path, (vg_compression)c, &st);
        CHECK(w != NULL);
        if (!w) continue;
        for (int i = 0; i < 3; i++) CHECK_OK(vg_tfrecord_writer_write(w, payload[i], strlen(payload[i]), &st), &st);
        CHECK_OK(vg_tfrecord_writer_close(w, &st), &st);
        vg__zrecord_reader *r = vg__zrecord_reader_open(path, c, &st);
        CHECK(r != NULL);
        if (!r) continue;
        const uint8_t *d;
        size_t n;
        uint64_t off, want_off = 0;
        for (int i = 0; i < 3; i++) {
            CHECK_OK(vg__zrecord_reader_next(r, &d, &n, &off, &st), &st);
            CHECK(n == strlen(payload[i]) && memcmp(d, payload[i], n) == 0);
            CHECK_EQ_INT(off, want_off);
            want_off += 16 + strlen(payload[i]);
        }
        CHECK_CODE(vg__zrecord_reader_next(r, &d, &n, &off, &st), VG_OUT_OF_RANGE);
        vg__zrecord_reader_close(r);
        if (c == VG_COMPRESSION_GZIP) {
            /* an independent gzip decoder sees the plain framing */
            gzFile gz = gzopen(path, "rb");
            uint8_t buf[256];
            int k = gz ? gzread(gz, buf, sizeof buf) : -1;
            if (gz) gzclose(gz);
            CHECK_EQ_INT(k, 16 * 3 + 5 + 0 + 16);
            CHECK(k >= 17 && vg__get_le64(buf) == 5 && memcmp(buf + 12, "first", 5) == 0);
        }
    }
    /* corrupt a byte of a plain file's data: DATA_LOSS naming file and offset */
    char path[128];
    snprintf(path, sizeof path, "%s/w0.tfrecord", g_dir);
    FILE *f = fopen(path, "r+b");
    fseek(f, 21 + 12, SEEK_SET);
    fputc('X', f);
    fclose(f);
    vg__zrecord_reader *r = vg__zrecord_reader_open(path, 0, &st);
    const uint8_t *d;
    size_t n;
    uint64_t off;
    CHECK_OK(vg__zrecord_reader_next(r, &d, &n, &off, &st), &st);
    CHECK_STATUS(vg__zrecord_reader_next(r, &d, &n, &off, &st), &st, VG_DATA_LOSS, "offset 21");
    CHECK_STR_CONTAINS(st.msg, path);
    vg__zrecord_reader_close(r);
    /* truncated GZIP file: DATA_LOSS, not a crash */
    snprintf(path, sizeof path, "%s/w2.tfrecord", g_dir);
    CHECK(truncate(path, 20) == 0);
    r = vg__zrecord_reader_open(path, VG_COMPRESSION_GZIP, &st);
    vg_code rc = VG_OK;
    for (int i = 0; i < 4 && rc == VG_OK; i++) rc = vg__zrecord_reader_next(r, &d, &n, &off, &st);
    CHECK_CODE(rc, VG_DATA_LOSS);
    vg__zrecord_reader_close(r);
    CHECK(vg__zrecord_reader_open("/nonexistent/x.tfrecord", 0, &st) == NULL);
    CHECK_STATUS(st.code, &st, VG_NOT_FOUND, "/nonexistent/x.tfrecord");
}

/* Mutated GZIP/ZLIB TFRecord files: every read ends with OK records, OUT_OF_RANGE or
 * DATA_LOSS; never a crash or a runaway allocation. */
static void test_mutated_compressed_files(void) {
    vg_status st;
    char path[128];
    unsigned seed = 777;
    for (int c = 1; c <= 2; c++) {
        snprintf(path, sizeof path, "%s/m%d.tfrecord", g_dir, c);
        vg_tfrecord_writer *w = vg_tfrecord_writer_open(path, (vg_compression)c, &st);
        for (int i = 0; i < 40; i++) vg_tfrecord_writer_write(w, "some record payload", 19, &st);
        vg_tfrecord_writer_close(w, &st);
        FILE *f = fopen(path, "rb");
        uint8_t orig[4096];
        size_t n = fread(orig, 1, sizeof orig, f);
        fclose(f);
        for (int it = 0; it < 200; it++) {
            uint8_t buf[4096];
            memcpy(buf, orig, n);
            size_t m = n;
            if (it % 2) m = (size_t)rand_r(&seed) % n;
            else
                for (int k = 0; k < 2; k++) buf[rand_r(&seed) % n] ^= (uint8_t)(1 + rand_r(&seed) % 255);
            f = fopen(path, "wb");
            fwrite(buf, 1, m, f);
            fclose(f);
            vg__zrecord_reader *r = vg__zrecord_reader_open(path, c, &st);
            CHECK(r != NULL);
            if (!r) continue;
            const uint8_t *d;
            size_t len;
            uint64_t off;
            vg_code rc;
            int recs = 0;
            while ((rc = vg__zrecord_reader_next(r, &d, &len, &off, &st)) == VG_OK && recs < 100) recs++;
            CHECK(rc == VG_OUT_OF_RANGE || rc == VG_DATA_LOSS);
            CHECK(recs <= 40);
            vg__zrecord_reader_close(r);
        }
    }
}

int main(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "parsing")[0]) return 1;
    RUN_TEST(test_example_bytes);
    RUN_TEST(test_example_decode_unpacked_and_last_wins);
    RUN_TEST(test_parse_example_batch);
    RUN_TEST(test_parse_example_errors);
    RUN_TEST(test_parse_single_example);
    RUN_TEST(test_sequence_example);
    RUN_TEST(test_parse_single_sequence_example);
    RUN_TEST(test_mutated_records);
    RUN_TEST(test_decode_raw);
    RUN_TEST(test_string_to_number);
    RUN_TEST(test_decode_csv);
    RUN_TEST(test_tfrecord_writer_compression);
    RUN_TEST(test_mutated_compressed_files);
    tu_rmrf(g_dir);
    TEST_MAIN_END();
}
