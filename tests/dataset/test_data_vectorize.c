/* test_data_vectorize.c - the vectorized map (src/kernels/dataset_vectorize.c): a map
 * function that can run over a block of stacked elements gives exactly what the
 * per-element function gives, element by element and error by error.
 *
 * Random tf.train.Examples (an image of 16 bytes, sometimes of another length; a label
 * that is sometimes missing, so its default applies, or stored as floats, a type
 * error; a float vector feature with a default; sometimes bytes that are no Example
 * at all) go through map(parse_single_example, decode_raw, reshape, cast, scale) with
 * map and map_parallel(2 and 3), with the vectorized path on and off
 * (vg__ds_set_vectorize); every element's values and every error's code and message
 * must agree. Also: a function that the vectorizer must refuse (broadcasting that does
 * not line up in batched form, a VarLenFeature) or rewrite (an unused argument, an
 * output that is the argument itself) gives the per-element results too, and the test
 * checks which functions got a vectorized form. */
#include "data/dataset.h"
#include "test_util.h"
#include "ds_items_util.h"
#include "cf_callbacks.h"
#include "vigil/vigil.h"
#include "dataset_fixture.h"

#define NREC 300

static vg_feature_spec g_specs[3];

static vg_tensor *make_records(uint64_t seed, vg_status *st) {
    vg_tensor *t = vg_tensor_new(VG_STRING, (int64_t[]){NREC}, 1, st);
    uint64_t x = seed;
    vg_example *ex = vg_example_new();
    for (int i = 0; t && i < NREC; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        unsigned r = (unsigned)(x >> 33);
        vg_example_clear(ex);
        char img[20];
        for (int k = 0; k < 20; k++) img[k] = (char)((r >> (k % 24)) + (unsigned)(k * 7 + i));
        /* after record 192, ~1 in 40 records has an image of 20 bytes (its reshape to
         * [4, 4] fails), ~1 in 13 a float label, ~1 in 31 is no Example */
        bool bad = i >= 192; /* blocks of the first 192 records have no error: they run batched */
        size_t ilen = bad && r % 40 == 3 ? 20 : 16;
        vg_example_add_bytes(ex, "image", (const char *[]){img}, &ilen, 1, st);
        int64_t label = (int64_t)(r % 10);
        float flabel = (float)label;
        if (bad && r % 13 == 7) vg_example_add_float(ex, "label", &flabel, 1, st); /* wrong type */
        else if (r % 7 != 1) vg_example_add_int64(ex, "label", &label, 1, st); /* else missing: default */
        float w[3] = {(float)(r % 5), 0.5f, -(float)i};
        if (r % 3) vg_example_add_float(ex, "w", w, 3, st);
        size_t len;
        const void *b = vg_example_serialize(ex, &len, st);
        if (bad && r % 31 == 11) vg_tensor_set_string(t, i, "\xff\xff not an Example", 17, st);
        else vg_tensor_set_string(t, i, b, len, st);
    }
    vg_example_free(ex);
    return t;
}

/* parse_single_example -> decode_raw(uint8) -> reshape [4, 4] -> cast float * (1/255);
 * label; w * 2 + 1 */
static vg_code parse_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_output d[3];
    vg_feature_spec specs[3] = {g_specs[0], g_specs[1], g_specs[2]};
    specs[1].default_value = vg_const_i64(fg, -1, NULL);
    specs[2].default_value = vg_const_array(fg, VG_FLOAT, (int64_t[]){3}, 1, (float[]){7, 8, 9}, NULL);
    vg_parse_single_example(fg, args[0], specs, 3, d, NULL, NULL);
    vg_output img = vg_reshape_c(fg, vg_decode_raw(fg, d[0], VG_UINT8, true, NULL), (int64_t[]){4, 4}, 2, NULL);
    outs[0] = vg_mul(fg, vg_cast(fg, img, VG_FLOAT, NULL), vg_const_f32(fg, 1.0f / 255, NULL), NULL);
    outs[1] = d[1];
    outs[2] = vg_add(fg, vg_mul(fg, d[2], vg_const_f32(fg, 2.0f, NULL), NULL), vg_const_f32(fg, 1.0f, NULL), NULL);
    *nouts = 3;
    return VG_OK;
}

/* label (a scalar per element) * [1, 2, 3]: the per-element result is [3]; batched, a
 * [B] * [3] would not broadcast as [B, 3], so the vectorizer must refuse it */
static vg_code scalar_times_vector(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts,
                                   void *p) {
    (void)nargs, (void)p;
    vg_output d[3];
    vg_parse_single_example(fg, args[0], g_specs, 3, d, NULL, NULL);
    vg_output v = vg_const_array(fg, VG_INT64, (int64_t[]){3}, 1, (int64_t[]){1, 2, 3}, NULL);
    outs[0] = vg_mul(fg, d[1], v, NULL);
    *nouts = 1;
    return VG_OK;
}

/* a VarLenFeature: no batched form here (sparse outputs) */
static vg_code var_len(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_feature_spec s = {"w", VG_FLOAT, true, vg_shape_make(NULL, 0), {NULL, 0}};
    vg_sparse_output sp;
    vg_parse_single_example(fg, args[0], &s, 1, NULL, &sp, NULL);
    outs[0] = sp.values;
    *nouts = 1;
    return VG_OK;
}

/* (x, i) -> (x, i * 3): an output that is the argument itself */
static vg_code pass_through(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    outs[0] = args[0];
    outs[1] = vg_mul(fg, args[1], vg_const_i64(fg, 3, NULL), NULL);
    *nouts = 2;
    return VG_OK;
}

/* (x, i) -> i + 1: the first argument unused */
DS_FN1(unused_arg, vg_add(fg, args[1], vg_const_i64(fg, 1, NULL), NULL))

/* The result of one get_next: a code, a message, the tensors. */
/* Iterates the dataset to its end; returns the number of items (at most cap). */
static int collect(vg_graph *g, vg_output ds, int nout, item *items, int cap) {
    vg_status st;
    vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    int n = 0;
    vg_output fetch[3];
    for (int c = 0; c < nout; c++) fetch[c] = vg_out(next, c);
    while (s && n < cap) {
        if (!item_next(s, fetch, nout, &items[n])) break;
        n++;
    }
    vg_session_free(s);
    return n;
}

/* The map's function (through the MapDataset op's "f" attr) got a vectorized form? */
static bool has_vec(vg_graph *g, vg_output ds) {
    const char *key;
    size_t len;
    if (!vg_op_attr_string(ds.op, "f", &key, &len)) return false;
    const vg__ds_fn *fn = vg_graph_user_data(g, key);
    return fn && fn->vec;
}

typedef vg_output (*build_fn)(vg_graph *g, int par, bool *vec);

/* Runs build with the vectorized path off and on; every item must agree. Returns the
 * number of errors seen (so that callers can check the errors were exercised). */
static int compare(build_fn build, int nout, int par, bool want_vec, int *nitems) {
    static item a[2 * NREC + 8], b[2 * NREC + 8];
    int na, nb, errors = 0;
    bool vec = false;
    vg__ds_set_vectorize(false);
    vg_graph *g1 = vg_graph_new();
    na = collect(g1, build(g1, par, &vec), nout, a, 2 * NREC + 8);
    vg__ds_set_vectorize(true);
    vg_graph *g2 = vg_graph_new();
    nb = collect(g2, build(g2, par, &vec), nout, b, 2 * NREC + 8);
    CHECK(vec == want_vec);
    CHECK(na == nb);
    for (int i = 0; i < na && i < nb; i++) {
        if (a[i].rc != b[i].rc || strcmp(a[i].msg, b[i].msg)) {
            fprintf(stderr, "item %d: per-element %s \"%s\", vectorized %s \"%s\"\n", i, vg_code_name(a[i].rc), a[i].msg,
                    vg_code_name(b[i].rc), b[i].msg);
            CHECK(false);
        }
        if (a[i].rc != VG_OK) errors++;
        for (int c = 0; c < nout; c++) {
            if (!same_tensor(a[i].t[c], b[i].t[c])) {
                fprintf(stderr, "item %d component %d differs\n", i, c);
                CHECK(false);
            }
        }
    }
    for (int i = 0; i < na; i++)
        for (int c = 0; c < nout; c++) vg_tensor_free(a[i].t[c]);
    for (int i = 0; i < nb; i++)
        for (int c = 0; c < nout; c++) vg_tensor_free(b[i].t[c]);
    vg_graph_free(g1);
    vg_graph_free(g2);
    *nitems = na;
    return errors;
}

static vg_output records(vg_graph *g) {
    vg_status st;
    vg_tensor *t = make_records(42, &st);
    vg_output c = vg_const(g, t, "records");
    vg_tensor_free(t);
    return vg_dataset_from_tensor_slices(g, &c, 1, NULL);
}

/* src mapped by fn with parallelism par; *vec: whether the map was vectorized. */
static vg_output map_vec(vg_graph *g, vg_output src, vg_dataset_map_fn fn, int par, bool *vec) {
    vg_output ds = vg_dataset_map_parallel(g, src, fn, NULL, par, NULL);
    *vec = has_vec(g, ds);
    return ds;
}

static vg_output build_parse(vg_graph *g, int par, bool *vec) {
    return map_vec(g, records(g), parse_fn, par, vec);
}

static vg_output build_scalar_vector(vg_graph *g, int par, bool *vec) {
    return map_vec(g, records(g), scalar_times_vector, par, vec);
}

static vg_output build_var_len(vg_graph *g, int par, bool *vec) {
    return map_vec(g, records(g), var_len, par, vec);
}

static vg_output two_components(vg_graph *g) {
    float x[200];
    int64_t i64[100];
    for (int i = 0; i < 100; i++) x[2 * i] = (float)i * 0.5f, x[2 * i + 1] = -(float)i, i64[i] = i * i - 7;
    vg_output c[2] = {vg_const_array(g, VG_FLOAT, (int64_t[]){100, 2}, 2, x, NULL),
                      vg_const_array(g, VG_INT64, (int64_t[]){100}, 1, i64, NULL)};
    return vg_dataset_from_tensor_slices(g, c, 2, NULL);
}

static vg_output build_pass_through(vg_graph *g, int par, bool *vec) {
    return map_vec(g, two_components(g), pass_through, par, vec);
}

static vg_output build_unused_arg(vg_graph *g, int par, bool *vec) {
    return map_vec(g, two_components(g), unused_arg, par, vec);
}

static void test_parse_pipeline(void) {
    for (int par = 0; par <= 3; par++) {
        if (par == 1) continue;
        int n, errors = compare(build_parse, 3, par, true, &n);
        CHECK(n == NREC);
        CHECK(errors >= 5); /* bad records, wrong types and odd image sizes were seen */
        CHECK(errors < NREC / 3);
    }
}

static void test_refused_and_edge_functions(void) {
    int n;
    compare(build_scalar_vector, 1, 0, false, &n);
    CHECK(n == NREC);
    compare(build_var_len, 1, 2, false, &n);
    CHECK(n == NREC);
    compare(build_pass_through, 2, 0, true, &n);
    CHECK(n == 100);
    compare(build_unused_arg, 1, 2, true, &n);
    CHECK(n == 100);
}

/* TFRecord sources: records read straight into the vectorized map's blocks. Two files,
 * the second with a corrupt record (DATA_LOSS, after which the file is left), the pair
 * repeated twice; the whole stream must match the per-element map's. */
static char g_files[2][512];

static vg_output tfrecord_files(vg_graph *g) {
    return vg_dataset_repeat(g, vg_dataset_tfrecord(g, ds_files_const(g, g_files), "", NULL), 2, NULL);
}

static vg_output build_tfrecord(vg_graph *g, int par, bool *vec) {
    return map_vec(g, tfrecord_files(g), parse_fn, par, vec);
}

static void test_tfrecord_source(void) {
    char dir[256];
    if (!*tu_mkdtemp(dir, sizeof dir, "vectorize")) {
        CHECK(false);
        return;
    }
    vg_status st;
    vg_tensor *recs = make_records(7, &st);
    for (int f = 0; f < 2; f++) {
        snprintf(g_files[f], sizeof g_files[f], "%s/part%d.tfrecord", dir, f);
        vg_tfrecord_writer *w = vg_tfrecord_writer_open(g_files[f], VG_COMPRESSION_NONE, &st);
        CHECK(w != NULL);
        /* file 0: records 0..149 (clean, then the bad ones from 192 are not in it);
         * file 1: records 150..299 */
        for (int i = 150 * f; w && i < 150 * (f + 1); i++) {
            size_t l;
            const char *r = vg_tensor_string(recs, i, &l);
            CHECK_OK(vg_tfrecord_writer_write(w, r, l, &st), &st);
        }
        if (w) CHECK_OK(vg_tfrecord_writer_close(w, &st), &st);
    }
    vg_tensor_free(recs);
    /* corrupt a byte in the data of a record near the end of file 1 */
    ds_flip_byte(g_files[1], 300, 0x55);
    for (int par = 0; par <= 3; par++) {
        if (par == 1) continue;
        int n, errors = compare(build_tfrecord, 3, par, true, &n);
        CHECK(n > 2 * 250 && n < 2 * 300 + 4); /* two passes, each cut short by the corruption */
        CHECK(errors >= 4);
    }
    /* dropped mid-stream with blocks being read, mapped and served (ASan / TSan builds
     * check the rest) */
    for (int par = 0; par <= 2; par += 2) {
        vg_graph *g = vg_graph_new();
        bool vec;
        vg_output ds = vg_dataset_prefetch(g, build_tfrecord(g, par, &vec), 2, NULL);
        vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
        vg_session *s = vg_session_new(g, NULL, &st);
        for (int i = 0; s && i < 70; i++) {
            vg_tensor *t[3] = {0};
            CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, (vg_output[]){vg_out(next, 0), vg_out(next, 1), vg_out(next, 2)},
                                    t, 3, NULL, 0, NULL, &st), &st);
            for (int c = 0; c < 3; c++) vg_tensor_free(t[c]);
        }
        vg_session_free(s);
        vg_graph_free(g);
    }
    tu_rmrf(dir);
}

/* An async parallel map (num_parallel_calls 2) dropped while its pool thread fills the
 * next block: the iterator waits for it (ASan / TSan builds check the rest). */
static void test_early_free(void) {
    for (int par = 0; par <= 2; par++) {
        vg_status st;
        vg_graph *g = vg_graph_new();
        vg_output ds = vg_dataset_map_parallel(g, records(g), parse_fn, NULL, par, NULL);
        ds = vg_dataset_prefetch(g, vg_dataset_repeat(g, ds, -1, NULL), 2, NULL);
        vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
        vg_session *s = vg_session_new(g, NULL, &st);
        for (int i = 0; i < 3 + 40 * par; i++) {
            vg_tensor *t[3] = {0};
            vg_code rc = vg_session_run(s, NULL, NULL, NULL, 0, (vg_output[]){vg_out(next, 0), vg_out(next, 1), vg_out(next, 2)},
                                        t, 3, NULL, 0, NULL, &st);
            CHECK(rc == VG_OK);
            for (int c = 0; c < 3; c++) vg_tensor_free(t[c]);
        }
        vg_session_free(s);
        vg_graph_free(g);
    }
}

int main(void) {
    g_specs[0] = (vg_feature_spec){"image", VG_STRING, false, vg_shape_make(NULL, 0), {NULL, 0}};
    g_specs[1] = (vg_feature_spec){"label", VG_INT64, false, vg_shape_make(NULL, 0), {NULL, 0}};
    g_specs[2] = (vg_feature_spec){"w", VG_FLOAT, false, vg_shape_make((int64_t[]){3}, 1), {NULL, 0}};
    RUN_TEST(test_parse_pipeline);
    RUN_TEST(test_refused_and_edge_functions);
    RUN_TEST(test_tfrecord_source);
    RUN_TEST(test_early_free);
    TEST_MAIN_END();
}
