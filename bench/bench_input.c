/* bench_input.c - input pipelines over TFRecords of tf.train.Examples (Fashion-MNIST
 * train set converted at start: image_raw = 784 bytes, label = int64), batch 64:
 *
 *   tfdata:  TFRecordDataset -> map(parse_single_example, decode_raw, cast * 1/255)
 *            -> shuffle(10000) -> batch(64, drop_remainder) -> prefetch(1) -> get_next
 *            (and again with map num_parallel_calls = 2)
 *   tfdata batch-then-parse: TFRecordDataset -> shuffle(10000) -> batch(64) ->
 *            map(ParseExample of the whole batch, decode_raw, scale) -> prefetch(1)
 *   queue_N: string_input_producer -> TFRecordReader.read -> parse_single_example ->
 *            decode_raw -> cast * 1/255 -> shuffle_batch(64, capacity 10000,
 *            min_after_dequeue 5000, num_threads N), N = 1 and 2
 *
 * Prints one JSON line: batches/s of each (after a warm-up filling the shuffle
 * buffers), the records file's size and the peak RSS.
 * Options: --seconds S (measured time per pipeline, default 3), --data DIR (default
 * /usr/share/datasets/fashion-mnist), --records N (default 60000).
 *
 * The PyTorch DataLoader peer (bench/peers/torch_input.py, /usr/bin/python3 with
 * python3-torch) reads the same file in the same run: records in memory, each Example
 * decoded in Python, batch 64, shuffle, num_workers 0 and 1; its batches/s and vigil's
 * ratios to it join the JSON line (VG_BENCH_NO_PEER=1 skips it).
 *
 * --big MB instead writes a TFRecord file of about MB megabytes (the records repeated)
 * and reads it once through the tf.data pipeline (shuffle buffer 10000, prefetch 1),
 * printing {"bench":"input_big_file",...} with the peak RSS before and after the pass:
 * the pipeline's memory is bounded by its buffers, not by the file. */
#include "io/io.h"
#include "vigil/vigil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

#ifndef VG_SRCDIR
#define VG_SRCDIR "."
#endif

/* Runs the DataLoader peer on path; fills w0 / w1 (batches/s), -1 when unavailable. */
static void run_peer(const char *path, double seconds, double *w0, double *w1) {
    *w0 = *w1 = -1;
    const char *e = getenv("VG_BENCH_NO_PEER");
    if (e && *e == '1') return;
    const char *peer = VG_SRCDIR "/bench/peers/torch_input.py";
    FILE *pf = fopen(peer, "r");
    if (!pf) return;
    fclose(pf);
    char cmd[1200], line[4096] = "";
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s --seconds %g 2>/dev/null", peer, path, seconds);
    FILE *f = popen(cmd, "r");
    if (!f) return;
    if (!fgets(line, sizeof line, f)) line[0] = 0;
    pclose(f);
    const char *a = strstr(line, "\"workers0_batches_per_s\": "), *b = strstr(line, "\"workers1_batches_per_s\": ");
    if (a) *w0 = atof(a + 26);
    if (b) *w1 = atof(b + 26);
}

static int die(const char *what, const vg_status *st) {
    fprintf(stderr, "bench_input: %s: %s: %s\n", what, vg_code_name(st->code), st->msg);
    return 1;
}

static vg_feature_spec g_specs[2];

/* parse + decode + scale: shared by both pipelines */
static void parse(vg_graph *g, vg_output serialized, vg_output *image, vg_output *label) {
    vg_output d[2];
    vg_parse_single_example(g, serialized, g_specs, 2, d, NULL, NULL);
    vg_output img = vg_reshape_c(g, vg_decode_raw(g, d[0], VG_UINT8, true, NULL), (int64_t[]){784}, 1, NULL);
    *image = vg_mul(g, vg_cast(g, img, VG_FLOAT, NULL), vg_const_f32(g, 1.0f / 255, NULL), NULL);
    *label = d[1];
}

static vg_code map_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    parse(fg, args[0], &outs[0], &outs[1]);
    *nouts = 2;
    return VG_OK;
}

static vg_output files_const(vg_graph *g, const char *path);
static double measure(vg_session *s, const vg_output *f, int nf, int warm, double seconds, vg_status *st);

/* the vectorized form: parse a batch of serialized Examples at once (ParseExample) */
static vg_code batch_parse_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_output d[2];
    vg_parse_example(fg, args[0], (vg_output){NULL, 0}, g_specs, 2, d, NULL, NULL);
    vg_output img = vg_decode_raw(fg, d[0], VG_UINT8, true, NULL);
    outs[0] = vg_mul(fg, vg_cast(fg, img, VG_FLOAT, NULL), vg_const_f32(fg, 1.0f / 255, NULL), NULL);
    outs[1] = d[1];
    *nouts = 2;
    return VG_OK;
}

static double run_tfdata_batch_parse(const char *path, double seconds, vg_status *st) {
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_repeat(g, vg_dataset_tfrecord(g, files_const(g, path), "", NULL), -1, NULL);
    ds = vg_dataset_shuffle(g, ds, 10000, 1, true, NULL);
    ds = vg_dataset_batch(g, ds, 64, true, NULL);
    ds = vg_dataset_prefetch(g, vg_dataset_map(g, ds, batch_parse_fn, NULL, NULL), 1, NULL);
    vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
    double r = -1;
    vg_session *s = vg_graph_status(g, st) == VG_OK ? vg_session_new(g, NULL, st) : NULL;
    if (s) r = measure(s, (vg_output[]){vg_out(next, 0), vg_out(next, 1)}, 2, 200, seconds, st);
    vg_session_free(s);
    vg_graph_free(g);
    return r;
}

static vg_output files_const(vg_graph *g, const char *path) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(VG_STRING, (int64_t[]){1}, 1, &st);
    vg_tensor_set_string(t, 0, path, strlen(path), &st);
    vg_output o = vg_const(g, t, "files");
    vg_tensor_free(t);
    return o;
}

/* Runs fetches until `seconds` have passed after `warm` runs; returns batches/s. */
static double measure(vg_session *s, const vg_output *f, int nf, int warm, double seconds, vg_status *st) {
    vg_run_options ro = {0};
    ro.timeout_in_ms = 60000;
    int64_t n = 0;
    double t0 = 0;
    for (int i = 0;; i++) {
        if (i == warm) t0 = now_s();
        vg_tensor *out[2] = {0};
        if (vg_session_run(s, &ro, NULL, NULL, 0, f, out, nf, NULL, 0, NULL, st) != VG_OK) return -1;
        vg_tensor_free(out[0]);
        vg_tensor_free(out[1]);
        if (i >= warm) {
            n++;
            if (now_s() - t0 >= seconds) break;
        }
    }
    return (double)n / (now_s() - t0);
}

static double run_tfdata(const char *path, int parallel, double seconds, vg_status *st) {
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_repeat(g, vg_dataset_tfrecord(g, files_const(g, path), "", NULL), -1, NULL);
    ds = vg_dataset_map_parallel(g, ds, map_fn, NULL, parallel, NULL);
    ds = vg_dataset_shuffle(g, ds, 10000, 1, true, NULL);
    ds = vg_dataset_prefetch(g, vg_dataset_batch(g, ds, 64, true, NULL), 1, NULL);
    vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
    double r = -1;
    vg_session *s = vg_graph_status(g, st) == VG_OK ? vg_session_new(g, NULL, st) : NULL;
    if (s) r = measure(s, (vg_output[]){vg_out(next, 0), vg_out(next, 1)}, 2, 200, seconds, st);
    vg_session_free(s);
    vg_graph_free(g);
    return r;
}

static double run_queue(const char *path, int threads, double seconds, vg_status *st) {
    vg_graph *g = vg_graph_new();
    vg_output q = vg_string_input_producer(g, files_const(g, path), 0, false, 0, 32, NULL);
    vg_op *read = vg_reader_read(g, vg_tfrecord_reader(g, NULL, NULL), q, NULL);
    vg_output img, lab, batch[2];
    parse(g, vg_out(read, 1), &img, &lab);
    vg_shuffle_batch(g, (vg_output[]){img, lab}, 2, 64, 10000, 5000, threads, 1, false, NULL, batch);
    vg_op *li = vg_local_variables_initializer(g);
    double r = -1;
    vg_session *s = vg_graph_status(g, st) == VG_OK ? vg_session_new(g, NULL, st) : NULL;
    vg_coord *coord = vg_coord_new(NULL, 0);
    if (s && vg_session_run_targets(s, &li, 1, st) == VG_OK && vg_start_queue_runners(s, coord, st) == VG_OK)
        r = measure(s, batch, 2, 200, seconds, st);
    vg_coord_request_stop(coord, NULL);
    if (s) vg_session_close(s, NULL);
    vg_status js;
    vg_coord_join(coord, 10, true, &js);
    vg_coord_free(coord);
    vg_session_free(s);
    vg_graph_free(g);
    return r;
}

int main(int argc, char **argv) {
    double seconds = 3;
    const char *dir = "/usr/share/datasets/fashion-mnist";
    int64_t want = 60000, big_mb = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--data")) dir = argv[i + 1];
        else if (!strcmp(argv[i], "--records")) want = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--big")) big_mb = atoll(argv[i + 1]);
        else {
            fprintf(stderr, "bench_input: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    char img[1024], lab[1024];
    snprintf(img, sizeof img, "%s/train-images-idx3-ubyte.gz", dir);
    snprintf(lab, sizeof lab, "%s/train-labels-idx1-ubyte.gz", dir);
    if (access(img, R_OK) != 0 || access(lab, R_OK) != 0) {
        fprintf(stderr, "bench_input: %s not found; skipping\n", img);
        printf("{\"bench\":\"input_pipelines\",\"skipped\":true}\n");
        return 0;
    }
    vg_status st;
    int64_t idims[4], ldims[4];
    int ind, lnd;
    void *images, *labels;
    size_t ib, lb;
    if (vg__idx_read(img, VG__IDX_U8, idims, &ind, &images, &ib, &st) != VG_OK) return die("images", &st);
    if (vg__idx_read(lab, VG__IDX_U8, ldims, &lnd, &labels, &lb, &st) != VG_OK) return die("labels", &st);
    int64_t n = idims[0] < want ? idims[0] : want;
    char path[] = "/tmp/vg_bench_input_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return 1;
    close(fd);
    vg_tfrecord_writer *w = vg_tfrecord_writer_open(path, VG_COMPRESSION_NONE, &st);
    if (!w) return die("writer", &st);
    vg_example *ex = vg_example_new();
    int64_t reps = 1;
    if (big_mb > 0) reps = (big_mb * 1048576 + n * 820 - 1) / (n * 820); /* ~820 bytes a record */
    for (int64_t i = 0; i < n * reps; i++) {
        vg_example_clear(ex);
        int64_t l = ((uint8_t *)labels)[i % n];
        vg_example_add_bytes(ex, "image_raw", (const char *[]){(const char *)images + (i % n) * 784}, (size_t[]){784}, 1,
                             &st);
        vg_example_add_int64(ex, "label", &l, 1, &st);
        size_t len;
        const void *b = vg_example_serialize(ex, &len, &st);
        if (!b || vg_tfrecord_writer_write(w, b, len, &st) != VG_OK) return die("write", &st);
    }
    vg_example_free(ex);
    if (vg_tfrecord_writer_close(w, &st) != VG_OK) return die("close", &st);
    vg__free(images);
    vg__free(labels);
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    long fsize = ftell(f);
    fclose(f);
    g_specs[0] = (vg_feature_spec){"image_raw", VG_STRING, false, vg_shape_make(NULL, 0), {NULL, 0}};
    g_specs[1] = (vg_feature_spec){"label", VG_INT64, false, vg_shape_make(NULL, 0), {NULL, 0}};
    if (big_mb > 0) {
        struct rusage r0;
        getrusage(RUSAGE_SELF, &r0);
        vg_graph *g = vg_graph_new();
        vg_output ds = vg_dataset_tfrecord(g, files_const(g, path), "", NULL);
        ds = vg_dataset_map_parallel(g, ds, map_fn, NULL, 2, NULL);
        ds = vg_dataset_shuffle(g, ds, 10000, 1, true, NULL);
        ds = vg_dataset_prefetch(g, vg_dataset_batch(g, ds, 64, false, NULL), 1, NULL);
        vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
        vg_session *s = vg_graph_status(g, &st) == VG_OK ? vg_session_new(g, NULL, &st) : NULL;
        int64_t batches = 0, rows = 0;
        double t0 = now_s();
        vg_code rc = s ? VG_OK : st.code;
        while (rc == VG_OK) {
            vg_tensor *out[2] = {0};
            rc = vg_session_run(s, NULL, NULL, NULL, 0, (vg_output[]){vg_out(next, 0), vg_out(next, 1)}, out, 2, NULL, 0,
                                NULL, &st);
            if (rc == VG_OK) {
                batches++;
                rows += vg_tensor_dim(out[1], 0);
            }
            vg_tensor_free(out[0]);
            vg_tensor_free(out[1]);
        }
        double dt = now_s() - t0;
        vg_session_free(s);
        vg_graph_free(g);
        unlink(path);
        struct rusage r1;
        getrusage(RUSAGE_SELF, &r1);
        printf("{\"bench\":\"input_big_file\",\"file_mb\":%.1f,\"records\":%lld,\"batches\":%lld,\"seconds\":%.2f,"
               "\"records_per_s\":%.0f,\"rss_before_mb\":%.1f,\"peak_rss_mb\":%.1f,\"end\":\"%s\"}\n",
               fsize / 1048576.0, (long long)rows, (long long)batches, dt, rows / dt, r0.ru_maxrss / 1024.0,
               r1.ru_maxrss / 1024.0, vg_code_name(rc));
        return rc == VG_OUT_OF_RANGE && rows == n * reps ? 0 : 1;
    }
    double tfdata = run_tfdata(path, 0, seconds, &st);
    if (tfdata < 0) die("tfdata", &st);
    double tfdata2 = run_tfdata(path, 2, seconds, &st);
    if (tfdata2 < 0) die("tfdata parallel 2", &st);
    double tfb = run_tfdata_batch_parse(path, seconds, &st);
    if (tfb < 0) die("tfdata batch then parse", &st);
    double q1 = run_queue(path, 1, seconds, &st);
    if (q1 < 0) die("queue 1", &st);
    double q2 = run_queue(path, 2, seconds, &st);
    if (q2 < 0) die("queue 2", &st);
    double p0, p1;
    run_peer(path, seconds, &p0, &p1);
    unlink(path);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"bench\":\"input_pipelines\",\"records\":%lld,\"file_mb\":%.1f,\"batch\":64,"
           "\"tfdata_batches_per_s\":%.1f,\"tfdata_map_parallel2_batches_per_s\":%.1f,\"tfdata_batch_then_parse_batches_per_s\":%.1f,\"queue_1thread_batches_per_s\":%.1f,\"queue_2threads_batches_per_s\":%.1f,"
           "\"peak_rss_mb\":%.1f,\"peer_torch_dataloader_workers0_batches_per_s\":%.1f,"
           "\"peer_torch_dataloader_workers1_batches_per_s\":%.1f,\"tfdata_over_workers0\":%.2f,"
           "\"tfdata_parallel2_over_workers1\":%.2f}\n",
           (long long)n, fsize / 1048576.0, tfdata, tfdata2, tfb, q1, q2, ru.ru_maxrss / 1024.0, p0, p1,
           p0 > 0 ? tfdata / p0 : -1.0, p1 > 0 ? tfdata2 / p1 : -1.0);
    return tfdata > 0 && tfdata2 > 0 && tfb > 0 && q1 > 0 && q2 > 0 ? 0 : 1;
}
