/* test_lookup_ops.c - lookup tables (src/kernels/state/lookup_ops.c, vigil/lookup.h): static
 * hash tables from tensors and text files, index tables with OOV buckets, index-to-string
 * tables, mutable tables, tables_initializer, and the default Scaffold of a monitored
 * session initialising a table. Cases translated from TF 1.15's
 * python/kernel_tests/lookup_ops_test.py (test names cited) and lookup_ops.py's
 * docstrings; vocabulary files are written into a temp dir. */
#include "test_util.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include "mts_fixture.h"

static char tmpdir[256];

static char *write_file(const char *name, const char *content) {
    static char paths[16][512];
    static int next;
    char *p = paths[next++ % 16];
    snprintf(p, 512, "%s/%s", tmpdir, name);
    FILE *f = fopen(p, "wb");
    if (f) {
        fputs(content, f);
        fclose(f);
    }
    return p;
}

static vg_output i64s(vg_graph *g, const int64_t *v, int n, const char *name) {
    return vg_const_array(g, VG_INT64, (int64_t[]){n}, 1, v, name);
}

static bool i64_are(const vg_tensor *t, const int64_t *want, int n) {
    if (!t || vg_tensor_dtype(t) != VG_INT64 || vg_tensor_num_elements(t) != n) {
        fprintf(stderr, "  not an int64 tensor of %d elements\n", n);
        return false;
    }
    const int64_t *v = vg_tensor_data(t);
    for (int i = 0; i < n; i++)
        if (v[i] != want[i]) {
            fprintf(stderr, "  element %d is %lld, expected %lld\n", i, (long long)v[i], (long long)want[i]);
            return false;
        }
    return true;
}

/* Whether y fetched on s is the n int64 values want (why not on stderr). */
static bool fetch_i64_is(vg_session *s, vg_output y, const int64_t *want, int n) {
    vg_status st;
    vg_tensor *r = fetch_st(s, y, &st);
    bool ok = i64_are(r, want, n);
    vg_tensor_free(r);
    return ok;
}

static vg_code run_op(vg_session *s, vg_op *op, vg_status *st) { return vg_session_run_targets(s, &op, 1, st); }

static const char *BSS[] = {"brain", "salad", "surgery"};

/* A static hash table on g of the nk string keys (Const "keys") to the nv int64 values
 * (Const "values"), with default dflt. */
static vg_lookup_table kv_table(vg_graph *g, const char *const *keys, int nk, const int64_t *vals, int nv,
                                vg_output dflt) {
    vg_output k = strings(g, keys, nk, "keys"), v = i64s(g, vals, nv, "values");
    vg_table_initializer init = vg_key_value_tensor_initializer(k, v, NULL);
    return vg_static_hash_table(g, &init, dflt, NULL);
}

/* HashTableOpTest.testHashTable (+ testHashTableFindHighRank, testNotInitialized,
 * testInitializeTwice) */
static void test_hash_table(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_lookup_table t = kv_table(g, BSS, 3, (const int64_t[]){0, 1, 2}, 3, vg_const_i64(g, -1, "default"));
    const char *in[] = {"brain", "salad", "tank"};
    vg_output out = vg_lookup_table_lookup(g, &t, strings(g, in, 3, "input"), NULL);
    vg_tensor *hr = vg_tensor_new(VG_STRING, (int64_t[]){2, 2}, 2, NULL);
    const char *hrv[] = {"brain", "salad", "tank", "tarkus"};
    for (int i = 0; i < 4; i++) vg_tensor_set_string(hr, i, hrv[i], strlen(hrv[i]), NULL);
    vg_output out2 = vg_lookup_table_lookup(g, &t, vg_const(g, hr, "input2"), NULL);
    vg_tensor_free(hr);
    vg_output size = vg_lookup_table_size(g, &t, NULL);
    vg_output ex[2];
    vg_lookup_table_export(g, &t, ex, NULL);
    vg_op *init_all = vg_tables_initializer(g, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(strcmp(vg_op_name(t.handle.op), "hash_table") == 0);
    CHECK(strcmp(vg_op_type(t.initializer), "InitializeTableV2") == 0);
    CHECK(strcmp(vg_op_name(t.initializer), "key_value_init") == 0);
    CHECK(strcmp(vg_op_name(init_all), "init_all_tables") == 0);
    CHECK(strcmp(vg_op_name(out.op), "hash_table_Lookup/LookupTableFindV2") == 0);
    int n = 0;
    vg_graph_collection(g, VG_TABLE_INITIALIZERS, &n);
    CHECK_EQ_INT(n, 1);
    vg_session *s = vg_session_new(g, NULL, &st);
    /* testNotInitialized */
    vg_tensor *r = fetch_st(s, out, &st);
    CHECK(r == NULL);
    CHECK_STATUS(st.code, &st, VG_FAILED_PRECONDITION, "Table not initialized.");
    CHECK_OK(run_op(s, init_all, &st), &st);
    CHECK(fetch_i64_is(s, size, (const int64_t[]){3}, 1));
    r = fetch_st(s, out, &st);
    CHECK(i64_are(r, (const int64_t[]){0, 1, -1}, 3));
    vg_tensor_free(r);
    r = fetch_st(s, out2, &st); /* testHashTableFindHighRank */
    CHECK(r && vg_tensor_ndims(r) == 2 && vg_tensor_dim(r, 0) == 2 && vg_tensor_dim(r, 1) == 2);
    CHECK(i64_are(r, (const int64_t[]){0, 1, -1, -1}, 4));
    vg_tensor_free(r);
    /* export: all three pairs (insertion order here) */
    vg_tensor *eo[2] = {NULL, NULL};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, ex, eo, 2, NULL, 0, NULL, &st), &st);
    CHECK(eo[0] && vg_tensor_num_elements(eo[0]) == 3);
    for (int i = 0; eo[0] && i < 3; i++) CHECK(str_is(eo[0], i, BSS[i]));
    CHECK(i64_are(eo[1], (const int64_t[]){0, 1, 2}, 3));
    vg_tensor_free(eo[0]);
    vg_tensor_free(eo[1]);
    /* testInitializeTwice: re-initializing with the same data is not an error */
    CHECK_OK(run_op(s, init_all, &st), &st);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* HashTableOpTest.testMultipleHashTables: three tables, one initializer each, one
 * tables_initializer. */
static void test_multiple_hash_tables(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output keys = strings(g, BSS, 3, "keys");
    vg_output values = i64s(g, (const int64_t[]){0, 1, 2}, 3, "values");
    vg_lookup_table t[3];
    vg_output out[3];
    const char *in[] = {"brain", "salad", "tank"};
    vg_output input = strings(g, in, 3, "input");
    for (int i = 0; i < 3; i++) {
        vg_table_initializer init = vg_key_value_tensor_initializer(keys, values, NULL);
        t[i] = vg_static_hash_table(g, &init, vg_const_i64(g, -1, "default"), NULL);
        out[i] = vg_lookup_table_lookup(g, &t[i], input, NULL);
    }
    vg_op *init_all = vg_tables_initializer(g, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(strcmp(vg_op_name(t[2].handle.op), "hash_table_2") == 0);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(run_op(s, init_all, &st), &st);
    for (int i = 0; i < 3; i++) {
        CHECK(fetch_i64_is(s, out[i], (const int64_t[]){0, 1, -1}, 3));
    }
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* HashTableOpTest.testSignatureMismatch, testInitializationWithInvalidDimensions and
 * a duplicate key with two values (HashTable::DoInsert). */
static void test_hash_table_errors(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_lookup_table t = kv_table(g, BSS, 3, (const int64_t[]){0, 1, 2}, 3, vg_const_i64(g, -1, "default"));
    CHECK_OK(vg_graph_status(g, &st), &st);
    /* int64 keys into a string table */
    vg_output r = vg_lookup_table_lookup(g, &t, i64s(g, (const int64_t[]){1, 2}, 2, "ik"), NULL);
    CHECK(r.op == NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
    /* a default value of another dtype */
    g = vg_graph_new();
    t = kv_table(g, BSS, 3, (const int64_t[]){0, 1, 2}, 3, vg_const_string(g, "UNK", "default"));
    CHECK(t.handle.op == NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
    /* keys [3] with values [4] */
    g = vg_graph_new();
    t = kv_table(g, BSS, 3, (const int64_t[]){0, 1, 2, 3}, 4, vg_const_i64(g, -1, "default"));
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_STATUS(run_op(s, t.initializer, &st), &st, VG_INVALID_ARGUMENT, "Keys and values must have the same size");
    kt_teardown(g, s, NULL, 0, NULL, 0);
    /* one key, two values */
    g = vg_graph_new();
    const char *dup[] = {"brain", "salad", "brain"};
    t = kv_table(g, dup, 3, (const int64_t[]){0, 1, 2}, 3, vg_const_i64(g, -1, "default"));
    vg_output sz = vg_lookup_table_size(g, &t, NULL);
    s = vg_session_new(g, NULL, &st);
    CHECK_STATUS(run_op(s, t.initializer, &st), &st, VG_FAILED_PRECONDITION,
        "HashTable has different value for same key. Key brain has 0 and trying to add value 2");
    vg_tensor *r2 = fetch_st(s, sz, &st); /* nothing half-inserted */
    CHECK(i64_are(r2, (const int64_t[]){0}, 1));
    kt_teardown(g, s, (vg_tensor *[]){r2}, 1, NULL, 0);
}

/* A second initializer with other data for a table already filled (shared name):
 * "Table was already initialized with different data." */
static void test_reinit_different_data(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output keys = strings(g, BSS, 3, "keys");
    vg_table_initializer init = vg_key_value_tensor_initializer(keys, i64s(g, (const int64_t[]){0, 1, 2}, 3, "v"), NULL);
    vg_lookup_table t = vg_static_hash_table(g, &init, vg_const_i64(g, -1, "default"), NULL);
    vg_op_builder *b = vg_op_builder_new(g, "InitializeTableV2", "init_again");
    vg_op_builder_add_input(b, t.handle);
    vg_op_builder_add_input(b, strings(g, BSS, 2, "k2"));
    vg_op_builder_add_input(b, i64s(g, (const int64_t[]){5, 6}, 2, "v2"));
    vg_op *again = vg_op_builder_finish(b);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(run_op(s, t.initializer, &st), &st);
    CHECK_STATUS(run_op(s, again, &st), &st, VG_FAILED_PRECONDITION,
        "Table was already initialized with different data.");
    vg_session_free(s);
    /* a new session has a new, empty table */
    s = vg_session_new(g, NULL, &st);
    CHECK_OK(run_op(s, again, &st), &st);
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* IndexTableFromFile.test_string_index_table_from_file, ..._with_default_value,
 * ..._with_oov_buckets, ..._with_vocab_size, ..._with_vocab_size_too_small,
 * ..._with_vocab_size_too_large */
static void test_index_table_from_file(void) {
    vg_status st;
    const char *vocab = write_file("vocab1.txt", "brain\nsalad\nsurgery\n");
    const char *in[] = {"salad", "surgery", "tarkus"};
    const char *in4[] = {"salad", "surgery", "tarkus", "toccata"};
    struct {
        vg_index_table_options o;
        int nin;
        int64_t want[4];
        int64_t size;
    } cases[6];
    memset(cases, 0, sizeof cases);
    cases[0].o.num_oov_buckets = 1, cases[0].nin = 3;
    memcpy(cases[0].want, (int64_t[]){1, 2, 3}, 3 * sizeof(int64_t)), cases[0].size = 4;
    cases[1].o.has_default_value = true, cases[1].o.default_value = 42, cases[1].nin = 3;
    memcpy(cases[1].want, (int64_t[]){1, 2, 42}, 3 * sizeof(int64_t)), cases[1].size = 3;
    cases[2].o.num_oov_buckets = 1000, cases[2].nin = 4; /* 3 + Fingerprint64(s) % 1000 */
    memcpy(cases[2].want, (int64_t[]){1, 2, 867, 860}, 4 * sizeof(int64_t)), cases[2].size = 1003;
    cases[3].o.vocab_size = 3, cases[3].nin = 3;
    memcpy(cases[3].want, (int64_t[]){1, 2, -1}, 3 * sizeof(int64_t)), cases[3].size = 3;
    cases[4].o.vocab_size = 2, cases[4].nin = 3;
    memcpy(cases[4].want, (int64_t[]){1, -1, -1}, 3 * sizeof(int64_t)), cases[4].size = 2;
    cases[5].o.vocab_size = 4, cases[5].nin = 3; /* too large: init fails */
    for (int c = 0; c < 6; c++) {
        vg_graph *g = vg_graph_new();
        vg_lookup_table t = vg_index_table_from_file(g, vocab, &cases[c].o, NULL);
        vg_output ids = vg_lookup_table_lookup(g, &t, strings(g, cases[c].nin == 4 ? in4 : in, cases[c].nin, "in"), NULL);
        vg_output size = vg_lookup_table_size(g, &t, NULL);
        vg_op *init = vg_tables_initializer(g, NULL);
        CHECK_OK(vg_graph_status(g, &st), &st);
        if (c == 0) {
            CHECK(strcmp(vg_op_name(t.handle.op), "string_to_index/hash_table/hash_table") == 0);
            CHECK(strcmp(vg_op_name(t.initializer), "string_to_index/hash_table/table_init") == 0);
            CHECK(strcmp(vg_op_type(t.initializer), "InitializeTableFromTextFileV2") == 0);
            const char *sn;
            size_t sl = 0;
            char want[600];
            snprintf(want, sizeof want, "hash_table_%s_-2_-1", vocab);
            CHECK(vg_op_attr_string(t.handle.op, "shared_name", &sn, &sl) && sl == strlen(want) &&
                  memcmp(sn, want, sl) == 0);
            int na = 0;
            vg_graph_collection(g, "asset_filepaths", &na);
            CHECK_EQ_INT(na, 1);
        }
        vg_session *s = vg_session_new(g, NULL, &st);
        if (c == 5) {
            CHECK_STATUS(run_op(s, init, &st), &st, VG_INVALID_ARGUMENT, "Invalid vocab_size");
            CHECK_STR_CONTAINS(st.msg, "expected 4 but got 3");
        } else {
            CHECK_OK(run_op(s, init, &st), &st);
            vg_tensor *r = fetch_st(s, ids, &st);
            CHECK(i64_are(r, cases[c].want, cases[c].nin));
            vg_tensor_free(r);
            r = fetch_st(s, size, &st);
            CHECK(i64_are(r, &cases[c].size, 1));
            vg_tensor_free(r);
        }
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* IndexTableFromFile.test_string_index_table_from_multicolumn_file,
 * ..._custom_delimiter, test_int32_index_table_from_file, test_int64_index_table_from_file */
static void test_index_table_from_file_columns(void) {
    vg_status st;
    const char *tabs = write_file("multi.txt", "0\tbrain\t1\n1\tsalad\t5\n2\tsurgery\t6\n");
    const char *spaces = write_file("multi_sp.txt", "0 brain 1\n1 salad 5\n2 surgery 6\n");
    const char *ints = write_file("ints.txt", "42\n1\n-1000\n");
    const char *in[] = {"salad", "surgery", "tarkus"};
    for (int c = 0; c < 4; c++) {
        vg_graph *g = vg_graph_new();
        vg_index_table_options o = {0};
        o.num_oov_buckets = 1;
        vg_output keys;
        const char *file;
        if (c < 2) {
            o.has_columns = true;
            o.key_column_index = 1;
            o.value_column_index = 0;
            o.delimiter = c == 1 ? ' ' : 0;
            file = c == 1 ? spaces : tabs;
            keys = strings(g, in, 3, "in");
        } else {
            o.key_dtype = c == 2 ? VG_INT32 : VG_INT64;
            file = ints;
            if (c == 2) keys = vg_const_array(g, VG_INT32, (int64_t[]){3}, 1, (const int32_t[]){1, -1000, 11}, "in");
            else keys = i64s(g, (const int64_t[]){1, -1000, 11}, 3, "in");
        }
        vg_lookup_table t = vg_index_table_from_file(g, file, &o, NULL);
        vg_output ids = vg_lookup_table_lookup(g, &t, keys, NULL);
        vg_op *init = vg_tables_initializer(g, NULL);
        CHECK_OK(vg_graph_status(g, &st), &st);
        vg_session *s = vg_session_new(g, NULL, &st);
        CHECK_OK(run_op(s, init, &st), &st);
        vg_tensor *r = fetch_st(s, ids, &st);
        CHECK_OK(st.code, &st);
        CHECK(i64_are(r, (const int64_t[]){1, 2, 3}, 3));
        vg_tensor_free(r);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* Text-file errors (lookup_util.cc): a missing file, an empty file name, an empty line,
 * a field that is no int64, too few columns, a duplicate key. */
static void test_text_file_errors(void) {
    vg_status st;
    char missing[512];
    snprintf(missing, sizeof missing, "%s/no_such_vocab.txt", tmpdir);
    struct {
        const char *file;
        vg_code code;
        const char *msg;
        vg_dtype kd;
        int64_t ki;
    } cases[] = {
        {missing, VG_NOT_FOUND, "no_such_vocab.txt", VG_STRING, VG_TEXT_FILE_WHOLE_LINE},
        {write_file("empty_line.txt", "brain\n\nsurgery\n"), VG_INVALID_ARGUMENT, "empty line found at position 7.",
         VG_STRING, VG_TEXT_FILE_WHOLE_LINE},
        {write_file("bad_int.txt", "42\nforty\n"), VG_INVALID_ARGUMENT, "Field forty in line 1 is not a valid int64.",
         VG_INT64, VG_TEXT_FILE_WHOLE_LINE},
        {write_file("cols.txt", "a\tb\nc\n"), VG_INVALID_ARGUMENT,
         "line 1 (c) : expected at least 2 got 1", VG_STRING, 1},
        {write_file("dup.txt", "brain\nsalad\nbrain\n"), VG_FAILED_PRECONDITION,
         "HashTable has different value for same key. Key brain has 0 and trying to add value 2", VG_STRING,
         VG_TEXT_FILE_WHOLE_LINE},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        vg_graph *g = vg_graph_new();
        vg_table_initializer init = vg_text_file_initializer(cases[c].file, cases[c].kd, cases[c].ki, VG_INT64,
                                                             VG_TEXT_FILE_LINE_NUMBER, 0, 0, NULL);
        vg_lookup_table t = vg_static_hash_table(g, &init, vg_const_i64(g, -1, "d"), NULL);
        CHECK_OK(vg_graph_status(g, &st), &st);
        CHECK(strcmp(vg_op_name(t.initializer), "text_file_init") == 0);
        vg_session *s = vg_session_new(g, NULL, &st);
        CHECK_CODE(run_op(s, t.initializer, &st), cases[c].code);
        CHECK_STR_CONTAINS(st.msg, cases[c].msg);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
    /* a directory is no vocabulary (docs/untrusted-input.md: FAILED_PRECONDITION, no
     * blocking); a line past max_record_bytes is RESOURCE_EXHAUSTED */
    for (int c = 0; c < 2; c++) {
        vg_graph *g = vg_graph_new();
        const char *file = c == 0 ? tmpdir : write_file("long.txt", "brain\nsalad_salad_salad_salad_salad\n");
        vg_table_initializer init = vg_text_file_initializer(file, VG_STRING, VG_TEXT_FILE_WHOLE_LINE, VG_INT64,
                                                             VG_TEXT_FILE_LINE_NUMBER, 0, 0, NULL);
        vg_lookup_table t = vg_static_hash_table(g, &init, vg_const_i64(g, -1, "d"), NULL);
        vg_decode_limits lim = vg_get_decode_limits(), small = lim;
        small.max_record_bytes = 16;
        if (c == 1) CHECK_OK(vg_set_decode_limits(&small, &st), &st);
        vg_session *s = vg_session_new(g, NULL, &st);
        CHECK_CODE(run_op(s, t.initializer, &st), c == 0 ? VG_FAILED_PRECONDITION : VG_RESOURCE_EXHAUSTED);
        CHECK_STR_CONTAINS(st.msg, c == 0 ? "is not a regular file" : "line 1 is longer than the limit of 16 bytes");
        vg_set_decode_limits(&lim, &st);
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
    /* a line-number key needs an int64 key dtype */
    vg_graph *g = vg_graph_new();
    vg_table_initializer init = vg_text_file_initializer(write_file("v.txt", "a\n"), VG_STRING, VG_TEXT_FILE_LINE_NUMBER,
                                                         VG_STRING, VG_TEXT_FILE_WHOLE_LINE, 0, 0, NULL);
    vg_lookup_table t = vg_static_hash_table(g, &init, vg_const_string(g, "", "d"), NULL);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_STATUS(run_op(s, t.initializer, &st), &st, VG_INVALID_ARGUMENT,
        "Key index for line number requires table key dtype of int64, got string");
    kt_teardown(g, s, NULL, 0, NULL, 0);
    /* index_table_from_file: empty file name */
    g = vg_graph_new();
    t = vg_index_table_from_file(g, "", NULL, NULL);
    CHECK(t.handle.op == NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

/* IndexTableFromTensor.test_index_table_from_tensor_with_tensor_init,
 * test_int32_index_table_from_tensor_with_tensor_init,
 * test_index_table_from_tensor_with_default_value, and duplicates in vocabulary_list
 * (FailedPreconditionError, index_table_from_tensor's docstring). */
static void test_index_table_from_tensor(void) {
    vg_status st;
    const char *in[] = {"salad", "surgery", "tarkus"};
    for (int c = 0; c < 4; c++) {
        vg_graph *g = vg_graph_new();
        vg_index_table_options o = {0};
        vg_output vocab, keys;
        int64_t want[3] = {1, 2, 3};
        if (c == 1) {
            vocab = vg_const_array(g, VG_INT32, (int64_t[]){3}, 1, (const int32_t[]){42, 1, -1000}, "vocab");
            keys = vg_const_array(g, VG_INT32, (int64_t[]){3}, 1, (const int32_t[]){1, -1000, 11}, "in");
        } else if (c == 3) {
            const char *dup[] = {"brain", "salad", "brain"};
            vocab = strings(g, dup, 3, "vocab");
            keys = strings(g, in, 3, "in");
        } else {
            vocab = strings(g, BSS, 3, "vocab");
            keys = strings(g, in, 3, "in");
        }
        if (c == 2) {
            o.has_default_value = true;
            o.default_value = 2;
            want[2] = 2;
        } else {
            o.num_oov_buckets = 1;
        }
        vg_lookup_table t = vg_index_table_from_tensor(g, vocab, &o, NULL);
        vg_output ids = vg_lookup_table_lookup(g, &t, keys, NULL);
        vg_op *init = vg_tables_initializer(g, NULL);
        CHECK_OK(vg_graph_status(g, &st), &st);
        vg_session *s = vg_session_new(g, NULL, &st);
        if (c == 3) {
            CHECK_CODE(run_op(s, init, &st), VG_FAILED_PRECONDITION);
        } else {
            CHECK_OK(run_op(s, init, &st), &st);
            vg_tensor *r = fetch_st(s, ids, &st);
            CHECK_OK(st.code, &st);
            CHECK(i64_are(r, want, 3));
            vg_tensor_free(r);
        }
        kt_teardown(g, s, NULL, 0, NULL, 0);
    }
}

/* lookup_ops.py StaticVocabularyTable docstring examples: OOV ids are
 * vocab size + Fingerprint64(key) % num_oov_buckets. */
static void test_oov_buckets_docstring(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    const char *vocab3[] = {"emerson", "lake", "palmer"};
    const char *in5[] = {"emerson", "lake", "palmer", "king", "crimson"};
    vg_index_table_options o = {0};
    o.num_oov_buckets = 5;
    vg_lookup_table t = vg_index_table_from_tensor(g, strings(g, vocab3, 3, "v"), &o, NULL);
    vg_output ids = vg_lookup_table_lookup(g, &t, strings(g, in5, 5, "in"), NULL);
    const char *vfile = write_file("elp.txt", "emerson\nlake\npalmer\ncrimnson");
    const char *in6[] = {"palmer", "crimnson", "king", "tarkus", "black", "moon"};
    vg_index_table_options o3 = {0};
    o3.num_oov_buckets = 3;
    vg_lookup_table t2 = vg_index_table_from_file(g, vfile, &o3, NULL);
    vg_output ids2 = vg_lookup_table_lookup(g, &t2, strings(g, in6, 6, "in6"), NULL);
    vg_op *init = vg_tables_initializer(g, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(run_op(s, init, &st), &st);
    CHECK(fetch_i64_is(s, ids, (const int64_t[]){0, 1, 2, 6, 7}, 5));
    CHECK(fetch_i64_is(s, ids2, (const int64_t[]){2, 3, 5, 6, 6, 4}, 6));
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* IndexToStringTableFromFileTest.test_index_to_string_table,
 * ..._with_default_value, ..._with_vocab_size_too_small, ..._from_multicolumn_file;
 * IndexToStringTableFromTensorTest.test_index_to_string_table_from_tensor,
 * test_duplicate_entries, test_index_to_string_with_default_value */
static void test_index_to_string(void) {
    vg_status st;
    const char *vocab = write_file("vocab2.txt", "brain\nsalad\nsurgery\n");
    const char *multi = write_file("multi2.txt", "0\tbrain\t1\n1\tsalad\t5\n2\tsurgery\t6\n");
    vg_graph *g = vg_graph_new();
    vg_output idx = i64s(g, (const int64_t[]){1, 2, 4}, 3, "idx");
    vg_lookup_table t0 = vg_index_to_string_table_from_file(g, vocab, NULL, NULL);
    vg_index_to_string_options od = {0};
    od.default_value = "NONE";
    vg_lookup_table t1 = vg_index_to_string_table_from_file(g, vocab, &od, NULL);
    vg_index_to_string_options os = {0};
    os.default_value = "NONE";
    os.vocab_size = 2;
    vg_lookup_table t2 = vg_index_to_string_table_from_file(g, vocab, &os, NULL);
    vg_index_to_string_options om = {0};
    om.has_columns = true;
    om.key_column_index = 0;
    om.value_column_index = 1;
    vg_lookup_table t3 = vg_index_to_string_table_from_file(g, multi, &om, NULL);
    vg_lookup_table t4 = vg_index_to_string_table_from_tensor(g, strings(g, BSS, 3, "vocab"), NULL, NULL);
    const char *hh[] = {"hello", "hello"};
    vg_lookup_table t5 = vg_index_to_string_table_from_tensor(g, strings(g, hh, 2, "hh"), NULL, NULL);
    vg_lookup_table t6 = vg_index_to_string_table_from_tensor(g, strings(g, BSS, 3, "vocab6"), "NONE", NULL);
    vg_output idx4 = i64s(g, (const int64_t[]){0, 1, 2, 3}, 4, "idx4");
    vg_output idx5 = i64s(g, (const int64_t[]){0, 1, 4}, 3, "idx5");
    vg_output o[7] = {vg_lookup_table_lookup(g, &t0, idx, NULL),  vg_lookup_table_lookup(g, &t1, idx, NULL),
                      vg_lookup_table_lookup(g, &t2, idx, NULL),  vg_lookup_table_lookup(g, &t3, idx, NULL),
                      vg_lookup_table_lookup(g, &t4, idx4, NULL), vg_lookup_table_lookup(g, &t5, idx5, NULL),
                      vg_lookup_table_lookup(g, &t6, idx, NULL)};
    const char *want[7][4] = {{"salad", "surgery", "UNK"},     {"salad", "surgery", "NONE"},
                              {"salad", "NONE", "NONE"},       {"salad", "surgery", "UNK"},
                              {"brain", "salad", "surgery", "UNK"}, {"hello", "hello", "UNK"},
                              {"salad", "surgery", "NONE"}};
    const int n[7] = {3, 3, 3, 3, 4, 3, 3};
    vg_op *init = vg_tables_initializer(g, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(strcmp(vg_op_name(t0.handle.op), "index_to_string/hash_table") == 0);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(run_op(s, init, &st), &st);
    for (int k = 0; k < 7; k++) {
        vg_tensor *r = fetch_st(s, o[k], &st);
        CHECK_OK(st.code, &st);
        CHECK(r && vg_tensor_dtype(r) == VG_STRING && vg_tensor_num_elements(r) == n[k]);
        for (int i = 0; r && i < n[k]; i++) CHECK(str_is(r, i, want[k][i]));
        vg_tensor_free(r);
    }
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* MutableHashTableOpTest.testMutableHashTable (without remove),
 * testMutableHashTableFindHighRank, testMutableHashTableIntFloat,
 * testMutableHashTableInt64String */
static void test_mutable_hash_table(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    const char *k4[] = {"brain", "salad", "surgery", "tarkus"};
    vg_lookup_table t = vg_mutable_hash_table(g, VG_STRING, VG_INT64, vg_const_i64(g, -1, "d"), NULL);
    vg_op *ins = vg_lookup_table_insert(g, &t, strings(g, k4, 4, "keys"), i64s(g, (const int64_t[]){0, 1, 2, 3}, 4, "v"),
                                        NULL);
    vg_op *ins2 = vg_lookup_table_insert(g, &t, strings(g, k4, 1, "k1"), i64s(g, (const int64_t[]){7}, 1, "v1"), NULL);
    vg_output size = vg_lookup_table_size(g, &t, NULL);
    const char *in[] = {"brain", "salad", "tank"};
    vg_output out = vg_lookup_table_lookup(g, &t, strings(g, in, 3, "in"), NULL);
    vg_output ex[2];
    vg_lookup_table_export(g, &t, ex, NULL);
    vg_lookup_table tf = vg_mutable_hash_table(g, VG_INT64, VG_FLOAT, vg_const_f32(g, -1.5f, "df"), "if_table");
    vg_op *insf = vg_lookup_table_insert(g, &tf, i64s(g, (const int64_t[]){3, 7, 0}, 3, "kf"),
                                         vg_const_array(g, VG_FLOAT, (int64_t[]){3}, 1,
                                                        (const float[]){7.5f, -1.2f, 9.9f}, "vf"),
                                         NULL);
    vg_output outf = vg_lookup_table_lookup(g, &tf, i64s(g, (const int64_t[]){7, 0, 11}, 3, "inf"), NULL);
    const char *sv[] = {"brain", "salad", "surgery"};
    vg_lookup_table ts = vg_mutable_hash_table(g, VG_INT64, VG_STRING, vg_const_string(g, "n/a", "ds"), NULL);
    vg_op *inss = vg_lookup_table_insert(g, &ts, i64s(g, (const int64_t[]){0, 1, 2}, 3, "ks"), strings(g, sv, 3, "vs"),
                                         NULL);
    vg_output outs = vg_lookup_table_lookup(g, &ts, i64s(g, (const int64_t[]){0, 1, 3}, 3, "ins"), NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    CHECK(strcmp(vg_op_name(t.handle.op), "MutableHashTable") == 0);
    CHECK(strcmp(vg_op_name(ts.handle.op), "MutableHashTable_1") == 0);
    CHECK(t.initializer == NULL);
    vg_session *s = vg_session_new(g, NULL, &st);
    /* empty before any insert; a lookup gives defaults */
    CHECK(fetch_i64_is(s, size, (const int64_t[]){0}, 1));
    CHECK(fetch_i64_is(s, out, (const int64_t[]){-1, -1, -1}, 3));
    CHECK_OK(run_op(s, ins, &st), &st);
    CHECK(fetch_i64_is(s, size, (const int64_t[]){4}, 1));
    CHECK(fetch_i64_is(s, out, (const int64_t[]){0, 1, -1}, 3));
    vg_tensor *eo[2] = {NULL, NULL};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, ex, eo, 2, NULL, 0, NULL, &st), &st);
    for (int i = 0; eo[0] && i < 4; i++) CHECK(str_is(eo[0], i, k4[i]));
    CHECK(i64_are(eo[1], (const int64_t[]){0, 1, 2, 3}, 4));
    vg_tensor_free(eo[0]);
    vg_tensor_free(eo[1]);
    CHECK_OK(run_op(s, ins2, &st), &st); /* insert replaces */
    CHECK(fetch_i64_is(s, out, (const int64_t[]){7, 1, -1}, 3));
    CHECK_OK(run_op(s, insf, &st), &st);
    vg_tensor *r = fetch_st(s, outf, &st);
    CHECK(r && vg_tensor_dtype(r) == VG_FLOAT && vg_tensor_num_elements(r) == 3);
    if (r) {
        const float *f = vg_tensor_data(r);
        CHECK(f[0] == -1.2f && f[1] == 9.9f && f[2] == -1.5f);
    }
    vg_tensor_free(r);
    CHECK_OK(run_op(s, inss, &st), &st);
    r = fetch_st(s, outs, &st);
    CHECK(r && str_is(r, 0, "brain") && str_is(r, 1, "salad") && str_is(r, 2, "n/a"));
    vg_tensor_free(r);
    vg_session_free(s);
    /* insert into a static table: UNIMPLEMENTED; values of another shape: INVALID_ARGUMENT */
    vg_graph_free(g);
    g = vg_graph_new();
    vg_table_initializer init = vg_key_value_tensor_initializer(strings(g, BSS, 3, "k"),
                                                                i64s(g, (const int64_t[]){0, 1, 2}, 3, "v"), NULL);
    vg_lookup_table st_t = vg_static_hash_table(g, &init, vg_const_i64(g, -1, "d"), NULL);
    vg_op *bad = vg_lookup_table_insert(g, &st_t, strings(g, BSS, 1, "k1"), i64s(g, (const int64_t[]){5}, 1, "v1"), NULL);
    vg_lookup_table mt = vg_mutable_hash_table(g, VG_STRING, VG_INT64, vg_const_i64(g, -1, "d2"), NULL);
    vg_op *bad2 = vg_lookup_table_insert(g, &mt, strings(g, BSS, 3, "k3"), i64s(g, (const int64_t[]){5, 6}, 2, "v2"),
                                         NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    s = vg_session_new(g, NULL, &st);
    CHECK_OK(run_op(s, st_t.initializer, &st), &st);
    CHECK_CODE(run_op(s, bad, &st), VG_UNIMPLEMENTED);
    CHECK_STATUS(run_op(s, bad2, &st), &st, VG_INVALID_ARGUMENT, "Expected shape [3] for value, got [2]");
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* index_table_from_file over a vocabulary file `file` (brain, salad, surgery) with one
 * OOV bucket, looking up the 3 strings in (a Const "in"); the ids output is called name. */
static vg_output vocab_lookup(vg_graph *g, const char *file, const char *const in[3], const char *name) {
    const char *vocab = write_file(file, "brain\nsalad\nsurgery\n");
    vg_index_table_options o = {0};
    o.num_oov_buckets = 1;
    vg_lookup_table t = vg_index_table_from_file(g, vocab, &o, NULL);
    return vg_lookup_table_lookup(g, &t, strings(g, in, 3, "in"), name);
}

/* GraphDef: a table graph exported and imported again runs the same; a GraphDef in
 * TF 1.15's text form (HashTableV2 with its container / shared_name /
 * use_node_name_sharing attrs, InitializeTableV2 Tkey/Tval, LookupTableFindV2 Tin/Tout,
 * as tf.Graph.as_graph_def writes them) imports and runs. */
static void test_graph_def_round_trip(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output ids = vocab_lookup(g, "vocab_gd.txt", (const char *const[]){"salad", "surgery", "tarkus"}, "ids");
    vg_tables_initializer(g, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    char idname[256];
    snprintf(idname, sizeof idname, "%s:0", vg_op_name(ids.op));
    vg_graph *g2 = kt_reimported(g, NULL);
    vg_output ids2 = vg_graph_output_by_name(g2, idname, &st);
    vg_op *init = vg_graph_op_by_name(g2, "init_all_tables");
    CHECK(ids2.op != NULL && init != NULL);
    if (ids2.op && init) {
        vg_session *s = vg_session_new(g2, NULL, &st);
        CHECK_OK(run_op(s, init, &st), &st);
        CHECK(fetch_i64_is(s, ids2, (const int64_t[]){1, 2, 3}, 3));
        vg_session_free(s);
    }
    vg_graph_free(g2);
    vg_graph_free(g);

    static const char *pbtxt =
        "node { name: \"Const\" op: \"Const\" attr { key: \"dtype\" value { type: DT_STRING } }\n"
        "  attr { key: \"value\" value { tensor { dtype: DT_STRING tensor_shape { dim { size: 3 } }\n"
        "    string_val: \"brain\" string_val: \"salad\" string_val: \"surgery\" } } } }\n"
        "node { name: \"Const_1\" op: \"Const\" attr { key: \"dtype\" value { type: DT_INT64 } }\n"
        "  attr { key: \"value\" value { tensor { dtype: DT_INT64 tensor_shape { dim { size: 3 } }\n"
        "    int64_val: 0 int64_val: 1 int64_val: 2 } } } }\n"
        "node { name: \"hash_table\" op: \"HashTableV2\" attr { key: \"container\" value { s: \"\" } }\n"
        "  attr { key: \"key_dtype\" value { type: DT_STRING } } attr { key: \"shared_name\" value { s: \"\" } }\n"
        "  attr { key: \"use_node_name_sharing\" value { b: false } }\n"
        "  attr { key: \"value_dtype\" value { type: DT_INT64 } } }\n"
        "node { name: \"key_value_init\" op: \"InitializeTableV2\" input: \"hash_table\" input: \"Const\"\n"
        "  input: \"Const_1\" attr { key: \"Tkey\" value { type: DT_STRING } }\n"
        "  attr { key: \"Tval\" value { type: DT_INT64 } } }\n"
        "node { name: \"Const_2\" op: \"Const\" attr { key: \"dtype\" value { type: DT_INT64 } }\n"
        "  attr { key: \"value\" value { tensor { dtype: DT_INT64 tensor_shape { } int64_val: -1 } } } }\n"
        "node { name: \"in\" op: \"Const\" attr { key: \"dtype\" value { type: DT_STRING } }\n"
        "  attr { key: \"value\" value { tensor { dtype: DT_STRING tensor_shape { dim { size: 2 } }\n"
        "    string_val: \"salad\" string_val: \"tank\" } } } }\n"
        "node { name: \"hash_table_Lookup/LookupTableFindV2\" op: \"LookupTableFindV2\"\n"
        "  input: \"hash_table\" input: \"in\" input: \"Const_2\"\n"
        "  attr { key: \"Tin\" value { type: DT_STRING } } attr { key: \"Tout\" value { type: DT_INT64 } } }\n"
        "versions { producer: 134 }\n";
    g = vg_graph_new();
    CHECK_OK(vg_graph_import_graph_def(g, pbtxt, strlen(pbtxt), NULL, &st), &st);
    vg_output f = vg_graph_output_by_name(g, "hash_table_Lookup/LookupTableFindV2:0", &st);
    vg_op *ki = vg_graph_op_by_name(g, "key_value_init");
    CHECK(f.op != NULL && ki != NULL);
    if (f.op && ki) {
        vg_session *s = vg_session_new(g, NULL, &st);
        CHECK_OK(run_op(s, ki, &st), &st);
        CHECK(fetch_i64_is(s, f, (const int64_t[]){1, -1}, 2));
        vg_session_free(s);
    }
    vg_graph_free(g);
}

/* LookupTableImportV2 (what a MutableHashTable's saveable restores with): replaces a
 * mutable table's contents. */
static void test_mutable_import(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_lookup_table t = vg_mutable_hash_table(g, VG_STRING, VG_INT64, vg_const_i64(g, -1, "d"), NULL);
    vg_op *ins = vg_lookup_table_insert(g, &t, strings(g, BSS, 3, "k"), i64s(g, (const int64_t[]){0, 1, 2}, 3, "v"), NULL);
    vg_op_builder *b = vg_op_builder_new(g, "LookupTableImportV2", "import");
    vg_op_builder_add_input(b, t.handle);
    vg_op_builder_add_input(b, strings(g, BSS + 1, 1, "k2"));
    vg_op_builder_add_input(b, i64s(g, (const int64_t[]){9}, 1, "v2"));
    vg_op *imp = vg_op_builder_finish(b);
    vg_output out = vg_lookup_table_lookup(g, &t, strings(g, BSS, 3, "in"), NULL);
    vg_output size = vg_lookup_table_size(g, &t, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(run_op(s, ins, &st), &st);
    CHECK_OK(run_op(s, imp, &st), &st);
    CHECK(fetch_i64_is(s, out, (const int64_t[]){-1, 9, -1}, 3));
    CHECK(fetch_i64_is(s, size, (const int64_t[]){1}, 1));
    kt_teardown(g, s, NULL, 0, NULL, 0);
}

/* A MonitoredSession's default Scaffold runs tables_initializer in its local_init_op
 * (Scaffold.default_local_init_op), so the table answers on the first run. */
static void test_monitored_session_initialises_tables(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output ids = vocab_lookup(g, "vocab_ms.txt", (const char *const[]){"surgery", "brain", "tarkus"}, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_singular_options so = {0};
    vg_monitored_session *ms = vg_singular_monitored_session_new(g, &so, &st);
    CHECK(ms != NULL);
    if (ms) {
        vg_tensor *r = NULL;
        CHECK_OK(mts_run1(ms, &ids, NULL, &r, &st), &st);
        CHECK(i64_are(r, (const int64_t[]){2, 0, 3}, 3));
        vg_tensor_free(r);
        vg_monitored_session_free(ms);
    }
    CHECK(vg_graph_op_by_name(g, "init_all_tables") != NULL);
    vg_graph_free(g);
}

int main(void) {
    tu_mkdtemp(tmpdir, sizeof tmpdir, "lookup");
    CHECK(tmpdir[0] != 0);
    RUN_TEST(test_hash_table);
    RUN_TEST(test_multiple_hash_tables);
    RUN_TEST(test_hash_table_errors);
    RUN_TEST(test_reinit_different_data);
    RUN_TEST(test_index_table_from_file);
    RUN_TEST(test_index_table_from_file_columns);
    RUN_TEST(test_text_file_errors);
    RUN_TEST(test_index_table_from_tensor);
    RUN_TEST(test_oov_buckets_docstring);
    RUN_TEST(test_index_to_string);
    RUN_TEST(test_mutable_hash_table);
    RUN_TEST(test_graph_def_round_trip);
    RUN_TEST(test_mutable_import);
    RUN_TEST(test_monitored_session_initialises_tables);
    tu_rmrf(tmpdir);
    TEST_MAIN_END();
}
