/* test_data_rows.c - tf.data's fast paths give exactly what the element-by-element
 * path gives: the native map function (dataset_native.c: ParseExample -> DecodeRaw ->
 * Reshape -> Cast -> scalar arithmetic computed per record, a uint8 image kept as its
 * bytes until the batch expands it), row views between map, shuffle and batch (the
 * shuffle's slab of fixed-size slots, the batch copying rows straight into its output)
 * and the vectorized map under them.
 *
 * TFRecord files of random tf.train.Examples (mostly plain; some with an image of
 * another length, a missing label (its default), a float label (a type error), a
 * feature vector missing (its default), bytes that are no Example, and one corrupted
 * record: DATA_LOSS) go through pipelines of map (num_parallel_calls 0 and 2), shuffle
 * (seeded) and batch (drop_remainder or not), also with the map's shapes varying (no
 * reshape: "Cannot batch tensors with different shapes"), map -> batch,
 * map -> shuffle -> take, and shuffle -> batch -> map(ParseExample of the batch: the
 * native form per record, vg__ds_native_compile_batched). Each pipeline runs with every fast path off (the reference)
 * and with them switched on one after the other; every get_next must agree: the
 * tensors bit for bit, the errors' codes and messages. Then a checkpointed position
 * (vg_iterator_get_next_resumable) restored in a new session continues, with the fast
 * paths, with exactly the batches of the uninterrupted reference run. */
#include "data/dataset.h"
#include "test_util.h"
#include "ds_items_util.h"
#include "dataset_fixture.h"
#include "vigil/vigil.h"

#define NREC 400

static vg_feature_spec g_specs[3];
static char g_dir[256], g_files[2][512];


static vg_output files_ds(vg_graph *g, int epochs) {
    vg_status st;
    vg_tensor *f = vg_tensor_new(VG_STRING, (int64_t[]){2}, 1, &st);
    for (int i = 0; i < 2; i++) vg_tensor_set_string(f, i, g_files[i], strlen(g_files[i]), &st);
    vg_output c = vg_const(g, f, "files");
    vg_tensor_free(f);
    return vg_dataset_repeat(g, vg_dataset_tfrecord(g, c, "", NULL), epochs, NULL);
}

static void parse3(vg_graph *fg, vg_output rec, vg_output *d) {
    vg_feature_spec specs[3] = {g_specs[0], g_specs[1], g_specs[2]};
    specs[1].default_value = vg_const_i64(fg, 77, NULL);
    specs[2].default_value = vg_const_array(fg, VG_FLOAT, (int64_t[]){3}, 1, (float[]){7, 8, 9}, NULL);
    vg_parse_single_example(fg, rec, specs, 3, d, NULL, NULL);
}

/* image: decode_raw uint8 -> reshape [4, 4] -> cast float * (1/255); label; w * 2 + 1;
 * label as float - 0.5; the image as big-endian int32 words [2, 2] */
static vg_code parse_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_output d[3];
    parse3(fg, args[0], d);
    vg_output img = vg_reshape_c(fg, vg_decode_raw(fg, d[0], VG_UINT8, true, NULL), (int64_t[]){4, 4}, 2, NULL);
    outs[0] = vg_mul(fg, vg_cast(fg, img, VG_FLOAT, NULL), vg_const_f32(fg, 1.0f / 255, NULL), NULL);
    outs[1] = d[1];
    outs[2] = vg_add(fg, vg_mul(fg, d[2], vg_const_f32(fg, 2.0f, NULL), NULL), vg_const_f32(fg, 1.0f, NULL), NULL);
    outs[3] = vg_sub(fg, vg_cast(fg, d[1], VG_FLOAT, NULL), vg_const_f32(fg, 0.5f, NULL), NULL);
    outs[4] = vg_reshape_c(fg, vg_decode_raw(fg, d[0], VG_INT32, false, NULL), (int64_t[]){2, 2}, 2, NULL);
    *nouts = 5;
    return VG_OK;
}

/* the image as int32 words and as uint8 without reshape (their shapes follow the bytes:
 * batches of mixed lengths fail); label */
static vg_code varying_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_output d[3];
    parse3(fg, args[0], d);
    outs[0] = vg_decode_raw(fg, d[0], VG_INT32, true, NULL);
    outs[1] = vg_decode_raw(fg, d[0], VG_UINT8, true, NULL);
    outs[2] = d[1];
    *nouts = 3;
    return VG_OK;
}

/* parse_fn over a batch of records: ParseExample, decode_raw, cast, scale (the map of
 * a batch-then-parse pipeline) */
static vg_code batch_parse_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_output d[3];
    vg_feature_spec specs[3] = {g_specs[0], g_specs[1], g_specs[2]};
    specs[1].default_value = vg_const_i64(fg, 77, NULL);
    specs[2].default_value = vg_const_array(fg, VG_FLOAT, (int64_t[]){3}, 1, (float[]){7, 8, 9}, NULL);
    vg_parse_example(fg, args[0], (vg_output){NULL, 0}, specs, 3, d, NULL, NULL);
    vg_output img = vg_reshape_c(fg, vg_decode_raw(fg, d[0], VG_UINT8, true, NULL), (int64_t[]){-1, 4, 4}, 3, NULL);
    outs[0] = vg_mul(fg, vg_cast(fg, img, VG_FLOAT, NULL), vg_const_f32(fg, 1.0f / 255, NULL), NULL);
    outs[1] = d[1];
    outs[2] = vg_add(fg, vg_mul(fg, d[2], vg_const_f32(fg, 2.0f, NULL), NULL), vg_const_f32(fg, 1.0f, NULL), NULL);
    /* no reshape: the length of the batch's records (they must agree) */
    outs[3] = vg_mul(fg, vg_cast(fg, vg_decode_raw(fg, d[0], VG_UINT8, true, NULL), VG_FLOAT, NULL),
                     vg_const_f32(fg, 0.5f, NULL), NULL);
    *nouts = 4;
    return VG_OK;
}

enum { P_SHUFFLE_BATCH, P_SHUFFLE_BATCH_DROP, P_BATCH, P_SHUFFLE_TAKE, P_VARYING, P_BATCH_THEN_PARSE, P_COUNT };

static vg_output pipeline(vg_graph *g, int kind, int par, int epochs, int *nout) {
    vg_output ds = files_ds(g, epochs);
    if (kind == P_BATCH_THEN_PARSE) {
        ds = vg_dataset_batch(g, vg_dataset_shuffle(g, ds, 40, 7, true, NULL), 6, false, NULL);
        *nout = 4;
        return vg_dataset_map_parallel(g, ds, batch_parse_fn, NULL, par, NULL);
    }
    if (kind == P_VARYING) {
        ds = vg_dataset_map_parallel(g, ds, varying_fn, NULL, par, NULL);
        *nout = 3;
    } else {
        ds = vg_dataset_map_parallel(g, ds, parse_fn, NULL, par, NULL);
        *nout = 5;
    }
    switch (kind) {
    case P_SHUFFLE_BATCH: return vg_dataset_batch(g, vg_dataset_shuffle(g, ds, 50, 3, true, NULL), 8, false, NULL);
    case P_SHUFFLE_BATCH_DROP: return vg_dataset_batch(g, vg_dataset_shuffle(g, ds, 90, 4, true, NULL), 7, true, NULL);
    case P_BATCH: return vg_dataset_batch(g, ds, 5, false, NULL);
    case P_SHUFFLE_TAKE: return vg_dataset_take(g, vg_dataset_shuffle(g, ds, 33, 5, true, NULL), 10000, NULL);
    default: return vg_dataset_batch(g, vg_dataset_shuffle(g, ds, 20, 6, true, NULL), 3, false, NULL);
    }
}

#define CAP 1200

static int collect(int kind, int par, item *items) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    int nout;
    vg_output ds = pipeline(g, kind, par, 2, &nout);
    vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_output fetch[5];
    for (int c = 0; c < nout; c++) fetch[c] = vg_out(next, c);
    int n = 0;
    while (s && n < CAP) {
        if (!item_next(s, fetch, nout, &items[n])) break;
        n++;
    }
    vg_session_free(s);
    vg_graph_free(g);
    return n;
}

static item g_ref[CAP], g_got[CAP];

/* Every pipeline, at num_parallel_calls 0 and 2, with the fast paths at levels 1..3
 * against level 0; returns nothing, counts the errors seen per pipeline. */
static void test_same_results(void) {
    for (int kind = 0; kind < P_COUNT; kind++)
        for (int par = 0; par <= 2; par += 2) {
            set_paths(0);
            int nref = collect(kind, par, g_ref), errors = 0, shape_errors = 0;
            for (int i = 0; i < nref; i++) {
                errors += g_ref[i].rc != VG_OK;
                shape_errors += strstr(g_ref[i].msg, "Cannot batch tensors with different shapes") != NULL;
            }
            CHECK(nref > 20);
            CHECK(errors >= 4); /* bad records, type errors and the corruption were seen */
            if (kind == P_VARYING) CHECK(shape_errors >= 1);
            for (int level = 1; level <= 3; level++) {
                set_paths(level);
                int n = collect(kind, par, g_got);
                if (n != nref) fprintf(stderr, "pipeline %d par %d level %d: %d items, reference %d\n", kind, par, level, n, nref);
                CHECK(n == nref);
                for (int i = 0; i < n && i < nref; i++) {
                    if (g_got[i].rc != g_ref[i].rc || strcmp(g_got[i].msg, g_ref[i].msg)) {
                        fprintf(stderr, "pipeline %d par %d level %d item %d: %s \"%s\", reference %s \"%s\"\n", kind, par,
                                level, i, vg_code_name(g_got[i].rc), g_got[i].msg, vg_code_name(g_ref[i].rc), g_ref[i].msg);
                        CHECK(false);
                        break;
                    }
                    for (int c = 0; c < 5; c++)
                        if (!same_tensor(g_got[i].t[c], g_ref[i].t[c])) {
                            fprintf(stderr, "pipeline %d par %d level %d item %d component %d differs\n", kind, par, level, i,
                                    c);
                            CHECK(false);
                        }
                }
                free_items(g_got, n);
            }
            free_items(g_ref, nref);
        }
    set_paths(3);
}

/* The native function was made for parse_fn (and not for varying_fn, whose shapes are
 * not static), with the image deferred and the others not. */
static void test_native_form(void) {
    vg_graph *g = vg_graph_new();
    int nout;
    vg_output ds = vg_dataset_map(g, files_ds(g, 1), parse_fn, NULL, NULL);
    vg_output ds2 = vg_dataset_map(g, files_ds(g, 1), varying_fn, NULL, NULL);
    (void)nout;
    const char *key;
    size_t len;
    CHECK(vg_op_attr_string(ds.op, "f", &key, &len));
    const vg__ds_fn *fn = vg_graph_user_data(g, key);
    CHECK(fn && fn->vec && fn->native);
    if (fn && fn->native) {
        size_t raw;
        CHECK(vg__ds_native_out(fn->native, 0, &raw) != NULL && raw == 16); /* the image's bytes */
        CHECK(vg__ds_native_out(fn->native, 1, &raw) == NULL && raw == 8);
        CHECK(vg__ds_native_out(fn->native, 2, &raw) == NULL && raw == 12);
        CHECK(vg__ds_native_out(fn->native, 3, &raw) == NULL && raw == 4);
        CHECK(vg__ds_native_out(fn->native, 4, &raw) == NULL && raw == 16);
    }
    CHECK(vg_op_attr_string(ds2.op, "f", &key, &len));
    fn = vg_graph_user_data(g, key);
    CHECK(fn && fn->vec && !fn->native);
    vg_output ds3 = vg_dataset_map(g, vg_dataset_batch(g, files_ds(g, 1), 4, false, NULL), batch_parse_fn, NULL, NULL);
    CHECK(vg_op_attr_string(ds3.op, "f", &key, &len));
    fn = vg_graph_user_data(g, key);
    CHECK(fn && !fn->vec && fn->native_b);
    vg_graph_free(g);
}

/* Runs the pipeline through vg_iterator_get_next_resumable: k get_next, a checkpoint,
 * then a new session restored from it to the end; the items of both sessions in out. */
static int resumed_run(int k, item *out) {
    char prefix[400], path[600];
    snprintf(prefix, sizeof prefix, "%s/model.ckpt", g_dir);
    vg_status st;
    int n = 0;
    for (int phase = 0; phase < 2; phase++) {
        vg_graph *g = vg_graph_new();
        int nout;
        vg_output ds = pipeline(g, P_SHUFFLE_BATCH, 0, 2, &nout), pos;
        vg_op *next = vg_iterator_get_next_resumable(g, vg_make_one_shot_iterator(g, ds, NULL), &pos, NULL);
        vg_op *init = vg_global_variables_initializer(g);
        vg_saver_options so = {0};
        so.no_meta_graph = true;
        vg_saver *sv = vg_saver_new(g, &so, &st);
        vg_session *s = sv ? vg_session_new(g, NULL, &st) : NULL;
        CHECK(s != NULL);
        if (s) CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
        if (s && phase == 1) CHECK_OK(vg_saver_restore(sv, s, path, &st), &st);
        vg_output fetch[5];
        for (int c = 0; c < nout; c++) fetch[c] = vg_out(next, c);
        for (int i = 0; s && (phase == 1 || i < k) && n < CAP; i++) {
            if (!item_next(s, fetch, nout, &out[n])) break;
            n++;
        }
        if (s && phase == 0) CHECK_OK(vg_saver_save(sv, s, prefix, k, path, sizeof path, &st), &st);
        vg_session_free(s);
        vg_saver_free(sv);
        vg_graph_free(g);
    }
    return n;
}

/* Restored mid-epoch, the fast paths continue exactly as the element path does; before
 * the first error the continuation is the uninterrupted run's. */
static void test_resume(void) {
    set_paths(0);
    int nref = collect(P_SHUFFLE_BATCH, 0, g_ref);
    for (int k = 5; k <= 30; k += 25) {
        static item a[CAP], b[CAP];
        set_paths(0);
        int na = resumed_run(k, a);
        set_paths(3);
        int nb = resumed_run(k, b);
        CHECK(na == nb && na > k);
        for (int i = 0; i < na && i < nb; i++) {
            CHECK(a[i].rc == b[i].rc && !strcmp(a[i].msg, b[i].msg));
            for (int c = 0; c < 5; c++) CHECK(same_tensor(a[i].t[c], b[i].t[c]));
        }
        if (k == 5) { /* no error among the first batches: the same as never stopping */
            CHECK(na == nref);
            for (int i = 0; i < na && i < nref; i++) {
                CHECK(b[i].rc == g_ref[i].rc); /* (the messages name another op) */
                for (int c = 0; c < 5; c++) CHECK(same_tensor(b[i].t[c], g_ref[i].t[c]));
            }
        }
        free_items(a, na);
        free_items(b, nb);
    }
    free_items(g_ref, nref);
}

int main(void) {
    ds_example_specs(g_specs);
    if (!*tu_mkdtemp(g_dir, sizeof g_dir, "rows")) {
        CHECK(false);
        TEST_MAIN_END();
    }
    ds_write_example_files(g_files, g_dir, NREC, 99, 130, true, 500);
    RUN_TEST(test_native_form);
    RUN_TEST(test_same_results);
    RUN_TEST(test_resume);
    tu_rmrf(g_dir);
    TEST_MAIN_END();
}
