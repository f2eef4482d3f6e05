/* fuzz_reader_data.c - the input-pipeline readers added with issue 12's data items:
 * byte 0 picks
 *   0: ReaderRestoreStateV2 of a WholeFileReader with the rest as the state (a
 *      ReaderBaseState proto); when it is accepted, serialize -> restore -> serialize
 *      must give the same bytes;
 *   1-3: TextLineDataset over a file holding the rest, compression "" / "ZLIB" /
 *      "GZIP", every line read (and the iterator kept going after errors);
 *   4: TFRecordDataset over a file holding the rest, repeated twice, through a map of
 *      parse_single_example (a bytes and an int64 feature with a default), decode_raw
 *      and a scale: the vectorized map reading records straight into its blocks (and
 *      falling back to one element at a time on bad Examples);
 *   5: the same records through a map whose image is reshaped to [4] (the native map
 *      function of dataset_native.c), a seeded shuffle of 8 and a batch of 3 (the row
 *      views, the shuffle's slab, the batch's row copies);
 *   6: TFRecordDataset "GZIP" over a file holding the rest (issue 29: a record whose
 *      length claims more than the stream can inflate to must fail before memory
 *      grows; the seed gzip_claims_2p40 would exceed -malloc_limit_mb without it).
 * The graph is built once per process; each input gets a fresh session. */
#include "fuzz_util.h"
#include "../tests/fed_bytes_fixture.h"

static vg_graph *g;
static vg_output fed, ser;
static vg_op *restore, *next[6];

static vg_code parse_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_feature_spec specs[2] = {{"image", VG_STRING, false, vg_shape_make(NULL, 0), {NULL, 0}},
                                {"label", VG_INT64, false, vg_shape_make(NULL, 0), vg_const_i64(fg, -1, NULL)}};
    vg_output d[2];
    vg_parse_single_example(fg, args[0], specs, 2, d, NULL, NULL);
    outs[0] = vg_mul(fg, vg_cast(fg, vg_decode_raw(fg, d[0], VG_UINT8, true, NULL), VG_FLOAT, NULL),
                     vg_const_f32(fg, 1.0f / 255, NULL), NULL);
    outs[1] = d[1];
    *nouts = 2;
    return VG_OK;
}

/* parse_fn with the image reshaped to [4]: static shapes, so the map has a native form */
static vg_code parse4_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    vg_code rc = parse_fn(fg, args, nargs, outs, nouts, p);
    outs[0] = vg_reshape_c(fg, outs[0], (int64_t[]){4}, 1, NULL);
    return rc;
}

static void build(void) {
    g = vg_graph_new();
    vg_output rd = vg_whole_file_reader(g, "reader");
    fed = vg_placeholder(g, VG_STRING, NULL, 0, "state");
    restore = vg_reader_restore_state(g, rd, fed, NULL);
    ser = vg_reader_serialize_state(g, rd, NULL);
    const char *path = fz_write("lines.txt", (const uint8_t *)"", 0);
    static const char *const ct[3] = {"", "ZLIB", "GZIP"};
    for (int c = 0; c < 3; c++) {
        vg_output ds = vg_dataset_text_line(g, vg_const_string(g, path, NULL), ct[c], NULL);
        next[c] = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
    }
    const char *rec = fz_write("records.tfrecord", (const uint8_t *)"", 0);
    vg_output ds = vg_dataset_repeat(g, vg_dataset_tfrecord(g, vg_const_string(g, rec, NULL), "", NULL), 2, NULL);
    vg_output ds4 = vg_dataset_map(g, ds, parse4_fn, NULL, NULL);
    ds = vg_dataset_map(g, ds, parse_fn, NULL, NULL);
    next[3] = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
    ds4 = vg_dataset_batch(g, vg_dataset_shuffle(g, ds4, 8, 1, true, NULL), 3, false, NULL);
    next[4] = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds4, NULL), NULL);
    const char *gz = fz_write("records.tfrecord.gz", (const uint8_t *)"", 0);
    next[5] = vg_iterator_get_next(
        g, vg_make_one_shot_iterator(g, vg_dataset_tfrecord(g, vg_const_string(g, gz, NULL), "GZIP", NULL), NULL), NULL);
    if (vg_graph_status(g, NULL) != VG_OK) abort();
}

static vg_code run_restore(vg_session *s, const void *p, size_t n, vg_status *st) {
    return run_fed_bytes(s, restore, fed, p, n, st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    if (!g) build();
    vg_status st;
    int mode = data[0] % 7;
    if (mode > 0 && mode < 4) fz_write("lines.txt", data + 1, size - 1);
    if (mode == 4 || mode == 5) fz_write("records.tfrecord", data + 1, size - 1);
    if (mode == 6) fz_write("records.tfrecord.gz", data + 1, size - 1);
    vg_session *s = vg_session_new(g, NULL, &st);
    if (!s) abort();
    if (mode == 0) {
        if (run_restore(s, data + 1, size - 1, &st) == VG_OK) {
            vg_tensor *a = NULL, *b = NULL;
            if (vg_session_run1(s, ser, &a, &st) != VG_OK) abort();
            size_t la, lb;
            const char *pa = vg_tensor_string(a, 0, &la);
            if (run_restore(s, pa, la, &st) != VG_OK) abort();
            if (vg_session_run1(s, ser, &b, &st) != VG_OK) abort();
            const char *pb = vg_tensor_string(b, 0, &lb);
            if (la != lb || (la && memcmp(pa, pb, la) != 0)) abort();
            vg_tensor_free(a);
            vg_tensor_free(b);
        }
    } else {
        for (int i = 0; i < 4096; i++) {
            vg_tensor *t = NULL;
            vg_code rc = vg_session_run1(s, vg_out(next[mode - 1], 0), &t, &st);
            vg_tensor_free(t);
            if (rc == VG_OUT_OF_RANGE) break;
        }
    }
    vg_session_free(s);
    return 0;
}
