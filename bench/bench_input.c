/* bench_input.c - input pipelines over TFRecords of tf.train.Examples (Fashion-MNIST
 * train set converted at start: image_raw = 784 bytes, label = int64), batch 64, each
 * at 1 and 2 threads (session inter/intra-op threads = T):
 *
 *   tfdata:  TFRecordDataset -> map(parse_single_example, decode_raw, cast * 1/255)
 *            -> shuffle(10000) -> batch(64, drop_remainder) -> prefetch(1) -> get_next
 *            (T = 1: map; T = 2: map with num_parallel_calls 2)
 *   tfdata_batch_then_parse: TFRecordDataset -> shuffle(10000) -> batch(64) ->
 *            map(ParseExample of the whole batch, decode_raw, scale; num_parallel_calls
 *            T when T > 1) -> prefetch(1)
 *   queue:   string_input_producer -> TFRecordReader.read -> parse_single_example ->
 *            decode_raw -> cast * 1/255 -> shuffle_batch(64, capacity 10000,
 *            min_after_dequeue 5000, num_threads T)
 *   mlp_train_step: the MLP of vigil train (784-256-256-10 ReLU, SGD 0.1) fed batches
 *            of 64 through placeholders, measured in the same run at T threads; every
 *            pipeline line carries it and the ratio batches/s / steps/s (target >= 10)
 *
 * Prints one JSON line per case ({"bench":"input","case":...}; pipeline lines also give
 * cpu_us_per_batch, the process's CPU time per batch over the measured seconds, steadier
 * than batches/s on a loaded machine); throughput after a
 * warm-up that fills the shuffle buffers, the median of --rounds R (default 3) rounds
 * in which the MLP and the pipelines take turns. Options: --seconds S (measured time
 * per case and round, default 3), --data DIR (default /usr/share/datasets/fashion-mnist), --records N
 * (default 60000), --threads 1|2 (one thread count only), --only mlp|tfdata|batch_then_parse|queue
 * (one case only, for profiles; no peer), --no-vectorize (vectorized maps off: map functions run
 * element by element, for comparisons), --no-rows (no row views between the map, shuffle and
 * batch: a tensor per element, for comparisons), --prefetch N (the tf.data pipelines' prefetch
 * buffer, default 1; 0 leaves prefetch out, so the whole pipeline runs in the session's
 * thread and cpu_us_per_batch is its cost without thread hand-offs).
 *
 * The PyTorch DataLoader peer (bench/peers/torch_input.py, /usr/bin/python3 with
 * python3-torch) reads the same file in the same run: records in memory, each Example
 * decoded in Python, batch 64, shuffle, num_workers 0 and 1; one line per worker count
 * with vigil's ratio to it (VG_BENCH_NO_PEER=1 skips it).
 *
 * --big (opt-in; CI does not run it): one pass of the tf.data pipeline (parallel map
 * 2, shuffle 10000, batch 64, prefetch 1) over a TFRecord file of --big-mb MB (default
 * 1024). The file is --big-file PATH, written there when absent (default: a fresh
 * directory under $TMPDIR or /tmp) and removed at the end if this run wrote it. The
 * process's peak RSS is reset (/proc/self/clear_refs) before the pass, so the line
 * gives the pass's own peak next to the bound of its buffers (shuffle buffer + batch
 * + prefetch + map blocks, at the decoded element's size): memory follows the buffers,
 * not the file. */
#include "io/io.h"
#include "data/dataset.h"
#include "vigil/vigil.h"
#include "bench_util.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef VG_SRCDIR
#define VG_SRCDIR "."
#endif

#define BATCH 64

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
static int g_prefetch = 1; /* --prefetch N: the tf.data pipelines' prefetch buffer (0: none) */

/* parse + decode + scale: shared by the pipelines */
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

static vg_output files_const(vg_graph *g, const char *path) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(VG_STRING, (int64_t[]){1}, 1, &st);
    vg_tensor_set_string(t, 0, path, strlen(path), &st);
    vg_output o = vg_const(g, t, "files");
    vg_tensor_free(t);
    return o;
}

/* Runs fetches (and targets) with feeds until `seconds` have passed after `warm` runs;
 * returns runs/s, -1 on error. feed_values: nbatches sets of nfeeds tensors, cycled. */
typedef struct run_spec {
    const vg_output *fetches;
    int nfetches;
    vg_op *const *targets;
    int ntargets;
    const vg_output *feeds;
    int nfeeds;
    vg_tensor **feed_values;
    int nbatches;
} run_spec;

/* process CPU time (user + system, all threads) in seconds */
static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

/* CPU microseconds per run of the last measure() (all threads of the process): on a
 * loaded machine a steadier figure than runs/s */
static double g_cpu_us_per_run;

static double measure(vg_session *s, const run_spec *r, int warm, double seconds, vg_status *st) {
    vg_run_options ro = {0};
    ro.timeout_in_ms = 60000;
    int64_t n = 0;
    double t0 = 0, c0 = 0;
    for (int i = 0;; i++) {
        if (i == warm) t0 = now_s(), c0 = cpu_s();
        vg_tensor *out[2] = {0};
        vg_tensor **fv = r->nfeeds ? r->feed_values + (size_t)(i % r->nbatches) * (size_t)r->nfeeds : NULL;
        if (vg_session_run(s, &ro, r->feeds, fv, r->nfeeds, r->fetches, out, r->nfetches, r->targets, r->ntargets, NULL,
                           st) != VG_OK)
            return -1;
        vg_tensor_free(out[0]);
        vg_tensor_free(out[1]);
        if (i >= warm) {
            n++;
            if (now_s() - t0 >= seconds) break;
        }
    }
    g_cpu_us_per_run = (cpu_s() - c0) * 1e6 / (double)n;
    return (double)n / (now_s() - t0);
}

static vg_session *session_for(vg_graph *g, int threads, vg_status *st) {
    vg_session_options so = {0};
    so.intra_op_threads = threads;
    so.inter_op_threads = threads;
    return vg_graph_status(g, st) == VG_OK ? vg_session_new(g, &so, st) : NULL;
}

static double run_get_next(vg_graph *g, vg_output ds, int threads, double seconds, vg_status *st) {
    vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
    double r = -1;
    vg_session *s = session_for(g, threads, st);
    run_spec rs = {(vg_output[]){vg_out(next, 0), vg_out(next, 1)}, 2, NULL, 0, NULL, 0, NULL, 1};
    if (s) r = measure(s, &rs, 200, seconds, st);
    vg_session_free(s);
    vg_graph_free(g);
    return r;
}

static double run_tfdata(const char *path, int threads, double seconds, vg_status *st) {
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_repeat(g, vg_dataset_tfrecord(g, files_const(g, path), "", NULL), -1, NULL);
    ds = vg_dataset_map_parallel(g, ds, map_fn, NULL, threads > 1 ? threads : 0, NULL);
    ds = vg_dataset_shuffle(g, ds, 10000, 1, true, NULL);
    ds = vg_dataset_batch(g, ds, BATCH, true, NULL);
    if (g_prefetch > 0) ds = vg_dataset_prefetch(g, ds, g_prefetch, NULL);
    return run_get_next(g, ds, threads, seconds, st);
}

static double run_tfdata_batch_parse(const char *path, int threads, double seconds, vg_status *st) {
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_repeat(g, vg_dataset_tfrecord(g, files_const(g, path), "", NULL), -1, NULL);
    ds = vg_dataset_shuffle(g, ds, 10000, 1, true, NULL);
    ds = vg_dataset_batch(g, ds, BATCH, true, NULL);
    ds = vg_dataset_map_parallel(g, ds, batch_parse_fn, NULL, threads > 1 ? threads : 0, NULL);
    if (g_prefetch > 0) ds = vg_dataset_prefetch(g, ds, g_prefetch, NULL);
    return run_get_next(g, ds, threads, seconds, st);
}

static double run_queue(const char *path, int threads, double seconds, vg_status *st) {
    vg_graph *g = vg_graph_new();
    vg_output q = vg_string_input_producer(g, files_const(g, path), 0, false, 0, 32, NULL);
    vg_op *read = vg_reader_read(g, vg_tfrecord_reader(g, NULL, NULL), q, NULL);
    vg_output img, lab, batch[2];
    parse(g, vg_out(read, 1), &img, &lab);
    vg_shuffle_batch(g, (vg_output[]){img, lab}, 2, BATCH, 10000, 5000, threads, 1, false, NULL, batch);
    vg_op *li = vg_local_variables_initializer(g);
    double r = -1;
    vg_session *s = session_for(g, threads, st);
    vg_coord *coord = vg_coord_new(NULL, 0);
    run_spec rs = {batch, 2, NULL, 0, NULL, 0, NULL, 1};
    if (s && vg_session_run_targets(s, &li, 1, st) == VG_OK && vg_start_queue_runners(s, coord, st) == VG_OK)
        r = measure(s, &rs, 200, seconds, st);
    vg_coord_request_stop(coord, NULL);
    if (s) vg_session_close(s, NULL);
    vg_status js;
    vg_coord_join(coord, 10, true, &js);
    vg_coord_free(coord);
    vg_session_free(s);
    vg_graph_free(g);
    return r;
}

/* vigil train's MLP (784-256-256-10 ReLU, softmax cross-entropy, SGD 0.1) fed
 * pre-sliced batches of 64 images: training steps/s at `threads` threads. */
#define MLP_BATCHES 16
static double run_mlp(const uint8_t *images, const uint8_t *labels, int64_t n, int threads, double seconds,
                      vg_status *st) {
    vg_tensor *fv[2 * MLP_BATCHES] = {0};
    int64_t xd[2] = {BATCH, 784}, yd[1] = {BATCH};
    srand(1);
    for (int k = 0; k < MLP_BATCHES; k++) {
        vg_tensor *x = vg_tensor_new(VG_FLOAT, xd, 2, st), *y = vg_tensor_new(VG_INT64, yd, 1, st);
        fv[2 * k] = x, fv[2 * k + 1] = y;
        if (!x || !y) break;
        float *xp = vg_tensor_data(x);
        int64_t *yp = vg_tensor_data(y);
        for (int i = 0; i < BATCH; i++) {
            int64_t r = rand() % n;
            for (int j = 0; j < 784; j++) xp[i * 784 + j] = images[r * 784 + j] / 255.0f;
            yp[i] = labels[r];
        }
    }
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, 1);
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 2, "x"), y = vg_placeholder(g, VG_INT64, yd, 1, "y");
    vg_output h = vg_layers_dense(g, x, 256, VG_ACT_RELU, NULL);
    h = vg_layers_dense(g, h, 256, VG_ACT_RELU, NULL);
    vg_output logits = vg_layers_dense(g, h, 10, VG_ACT_NONE, NULL);
    vg_output loss = vg_reduce_mean(g, vg_out(vg_sparse_softmax_xent(g, logits, y, NULL), 0), NULL, -1, false, "loss");
    vg_optimizer *opt = vg_optimizer_new_sgd(0.1);
    vg_op *train = vg_optimizer_minimize(opt, g, loss, NULL, 0, vg_get_or_create_global_step(g), NULL);
    vg_op *init = vg_global_variables_initializer(g);
    double r = -1;
    vg_session *s = session_for(g, threads, st);
    run_spec rs = {&loss, 1, &train, 1, (vg_output[]){x, y}, 2, fv, MLP_BATCHES};
    if (s && fv[2 * MLP_BATCHES - 1] && vg_session_run_targets(s, &init, 1, st) == VG_OK)
        r = measure(s, &rs, 50, seconds, st);
    vg_session_free(s);
    vg_optimizer_free(opt);
    vg_graph_free(g);
    for (int k = 0; k < 2 * MLP_BATCHES; k++) vg_tensor_free(fv[k]);
    return r;
}

/* Writes total Examples (record i = image i % n) to path. */
static int write_records(const char *path, const uint8_t *images, const uint8_t *labels, int64_t n, int64_t total,
                         vg_status *st) {
    vg_tfrecord_writer *w = vg_tfrecord_writer_open(path, VG_COMPRESSION_NONE, st);
    if (!w) return die("writer", st);
    vg_example *ex = vg_example_new();
    for (int64_t i = 0; i < total; i++) {
        vg_example_clear(ex);
        int64_t l = labels[i % n];
        vg_example_add_bytes(ex, "image_raw", (const char *[]){(const char *)images + (i % n) * 784}, (size_t[]){784}, 1,
                             st);
        vg_example_add_int64(ex, "label", &l, 1, st);
        size_t len;
        const void *b = vg_example_serialize(ex, &len, st);
        if (!b || vg_tfrecord_writer_write(w, b, len, st) != VG_OK) {
            vg_example_free(ex);
            vg_tfrecord_writer_close(w, st);
            return die("write", st);
        }
    }
    vg_example_free(ex);
    if (vg_tfrecord_writer_close(w, st) != VG_OK) return die("close", st);
    return 0;
}

static double file_mb(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 ? (double)sb.st_size / 1048576.0 : -1;
}

/* The /proc/self/status line key (e.g. "VmHWM:", with its colon) in MB; -1 when unavailable. */
static double proc_status_mb(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    size_t kl = strlen(key);
    double mb = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl)) mb = atof(line + kl) / 1024.0;
    fclose(f);
    return mb;
}

/* VmHWM (peak RSS) in MB; -1 when unavailable. */
static double vm_hwm_mb(void) { return proc_status_mb("VmHWM:"); }

static double vm_rss_mb(void) { return proc_status_mb("VmRSS:"); }

/* Resets the peak RSS to the current RSS (Linux >= 4.0); false when not possible. */
static bool reset_peak_rss(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return false;
    bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

static int run_big(const uint8_t *images, const uint8_t *labels, int64_t n, int64_t big_mb, const char *big_file,
                   vg_status *st) {
    char dir[512] = "", path[1024];
    bool wrote = false;
    if (big_file) {
        snprintf(path, sizeof path, "%s", big_file);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/vg_bench_input_big_XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            fprintf(stderr, "bench_input: cannot create a directory under %s\n", tmp && *tmp ? tmp : "/tmp");
            return 1;
        }
        snprintf(path, sizeof path, "%s/fmnist_%lldMB.tfrecord", dir, (long long)big_mb);
    }
    double t_write = 0;
    if (access(path, R_OK) != 0) {
        /* ~843 bytes a record: 784 image bytes, the label, Example framing, 16 bytes of TFRecord */
        int64_t total = (big_mb * 1048576 + 842) / 843;
        double t0 = now_s();
        if (write_records(path, images, labels, n, total, st)) {
            unlink(path);
            if (*dir) rmdir(dir);
            return 1;
        }
        t_write = now_s() - t0;
        wrote = true;
    }
    double mb = file_mb(path);
    double rss_before = vm_rss_mb();
    bool reset = reset_peak_rss();
    double hwm_start = vm_hwm_mb();
    vg_graph *g = vg_graph_new();
    vg_output ds = vg_dataset_tfrecord(g, files_const(g, path), "", NULL);
    ds = vg_dataset_map_parallel(g, ds, map_fn, NULL, 2, NULL);
    ds = vg_dataset_shuffle(g, ds, 10000, 1, true, NULL);
    ds = vg_dataset_prefetch(g, vg_dataset_batch(g, ds, BATCH, false, NULL), 1, NULL);
    vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
    vg_session *s = session_for(g, 2, st);
    int64_t batches = 0, rows = 0;
    double t0 = now_s();
    vg_code rc = s ? VG_OK : st->code;
    while (rc == VG_OK) {
        vg_tensor *out[2] = {0};
        rc = vg_session_run(s, NULL, NULL, NULL, 0, (vg_output[]){vg_out(next, 0), vg_out(next, 1)}, out, 2, NULL, 0, NULL,
                            st);
        if (rc == VG_OK) {
            batches++;
            rows += vg_tensor_dim(out[1], 0);
        }
        vg_tensor_free(out[0]);
        vg_tensor_free(out[1]);
    }
    double dt = now_s() - t0;
    double hwm = vm_hwm_mb();
    vg_session_free(s);
    vg_graph_free(g);
    if (wrote) unlink(path);
    if (*dir) rmdir(dir);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    /* the buffers, at a decoded element's size (784 floats + an int64 label): the
     * shuffle buffer, the batch being built, the prefetched batch, the parallel map's
     * two blocks of 64 x 2 elements (the one served, the one being mapped) */
    double elem = 784 * 4 + 8;
    double bound_mb = (10000 + BATCH + BATCH + 2 * 64 * 2) * elem / 1048576.0;
    double pipeline_mb = hwm - hwm_start;
    printf("{\"bench\":\"input\",\"case\":\"big_file_peak_rss\",\"file_mb\":%.1f,\"file\":\"%s\",\"written_s\":%.1f,"
           "\"records\":%lld,\"batches\":%lld,\"seconds\":%.2f,\"records_per_s\":%.0f,\"shuffle_buffer\":10000,"
           "\"prefetch\":1,\"map_parallel\":2,\"rss_before_mb\":%.1f,\"peak_reset\":%s,\"pass_peak_rss_mb\":%.1f,"
           "\"pass_peak_over_start_mb\":%.1f,\"buffer_bound_mb\":%.1f,\"bounded_by_buffers\":%s,"
           "\"process_peak_rss_mb\":%.1f,\"end\":\"%s\"}\n",
           mb, wrote ? "written, removed" : "existing, kept", t_write, (long long)rows, (long long)batches, dt,
           dt > 0 ? rows / dt : 0, rss_before, reset ? "true" : "false", hwm, pipeline_mb, bound_mb,
           reset && pipeline_mb <= 2 * bound_mb + 32 ? "true" : "false", ru.ru_maxrss / 1024.0, vg_code_name(rc));
    return rc == VG_OUT_OF_RANGE && rows > 0 ? 0 : 1;
}

/* The median of the rounds v[n] (n <= 16; the mean of the middle two for even n), v
 * left as it is (bench_util.h's median sorts in place and takes the upper one). */
static double rounds_median(const double *v, int n) {
    double t[16];
    memcpy(t, v, sizeof(double) * (size_t)n);
    qsort(t, (size_t)n, sizeof(double), cmpd);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}
static void print_rounds(const double *v, int n) {
    printf("[");
    for (int r = 0; r < n; r++) printf("%s%.1f", r ? "," : "", v[r]);
    printf("]");
}

/* One line per pipeline case: medians over the rounds, and the MLP's median. */
static void print_case(const char *name, int threads, const double *bps, const double *cpu, const double *mlp,
                       int rounds) {
    double b = rounds_median(bps, rounds), m = rounds_median(mlp, rounds);
    printf("{\"bench\":\"input\",\"case\":\"%s\",\"threads\":%d,\"batch\":%d,\"batches_per_s\":%.1f,"
           "\"cpu_us_per_batch\":%.1f,\"mlp_steps_per_s\":%.1f,\"over_mlp_step_rate\":%.2f,\"ge_10x_mlp\":%s,"
           "\"rounds_batches_per_s\":",
           name, threads, BATCH, b, rounds_median(cpu, rounds), m, m > 0 && b > 0 ? b / m : -1.0,
           m > 0 && b >= 10 * m ? "true" : "false");
    print_rounds(bps, rounds);
    printf("}\n");
    fflush(stdout);
}

/* --only NAME: run that case alone (the others print 0) */
static bool want_case(const char *only, const char *name) { return !only || !strcmp(only, name); }

int main(int argc, char **argv) {
    double seconds = 3;
    const char *dir = "/usr/share/datasets/fashion-mnist", *big_file = NULL;
    int64_t want = 60000, big_mb = 1024;
    int rounds = 3;
    bool big = false;
    const char *only = NULL;
    int tmin = 1, tmax = 2;
    for (int i = 1; i < argc; i++) {
        bool has = i + 1 < argc;
        if (!strcmp(argv[i], "--big")) big = true;
        else if (!strcmp(argv[i], "--seconds") && has) seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--data") && has) dir = argv[++i];
        else if (!strcmp(argv[i], "--records") && has) want = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && has) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && has) only = argv[++i];
        else if (!strcmp(argv[i], "--no-vectorize")) vg__ds_set_vectorize(false);
        else if (!strcmp(argv[i], "--no-rows")) vg__ds_set_rows(false);
        else if (!strcmp(argv[i], "--prefetch") && has) g_prefetch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && has) tmin = tmax = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--big-mb") && has) big_mb = atoll(argv[++i]), big = true;
        else if (!strcmp(argv[i], "--big-file") && has) big_file = argv[++i], big = true;
        else {
            fprintf(stderr, "bench_input: unknown option or missing value: %s\n"
                            "usage: bench_input [--seconds S] [--rounds R] [--data DIR] [--records N] [--threads 1|2] [--no-vectorize] "
                            "[--no-rows] [--prefetch N] [--only mlp|tfdata|batch_then_parse|queue] [--big] [--big-mb MB] [--big-file PATH]\n", argv[i]);
            return 2;
        }
    }
    if (seconds <= 0 || want <= 0 || big_mb <= 0 || rounds < 1 || rounds > 16 || tmin < 1 || tmin > 2) {
        fprintf(stderr, "bench_input: --seconds, --records and --big-mb must be > 0, --rounds in 1..16, --threads 1 or 2\n");
        return 2;
    }
    char img[1024], lab[1024];
    if (!bench_mnist_files(dir, "bench_input", "input", img, lab, sizeof img)) return 0;
    vg_status st;
    int64_t idims[4], ldims[4];
    int ind, lnd;
    void *images, *labels;
    size_t ib, lb;
    if (vg__idx_read(img, VG__IDX_U8, idims, &ind, &images, &ib, &st) != VG_OK) return die("images", &st);
    if (vg__idx_read(lab, VG__IDX_U8, ldims, &lnd, &labels, &lb, &st) != VG_OK) return die("labels", &st);
    int64_t n = idims[0] < want ? idims[0] : want;
    g_specs[0] = (vg_feature_spec){"image_raw", VG_STRING, false, vg_shape_make(NULL, 0), {NULL, 0}};
    g_specs[1] = (vg_feature_spec){"label", VG_INT64, false, vg_shape_make(NULL, 0), {NULL, 0}};
    if (big) {
        int rc = run_big(images, labels, n, big_mb, big_file, &st);
        vg__free(images);
        vg__free(labels);
        return rc;
    }
    char path[] = "/tmp/vg_bench_input_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return 1;
    close(fd);
    if (write_records(path, images, labels, n, n, &st)) {
        unlink(path);
        return 1;
    }
    printf("{\"bench\":\"input\",\"case\":\"records\",\"records\":%lld,\"file_mb\":%.1f,\"batch\":%d}\n", (long long)n,
           file_mb(path), BATCH);
    int fails = 0;
    double tf[3] = {0};
    for (int t = tmin; t <= tmax; t++) {
        /* rounds interleave the MLP and the pipelines, so that each ratio compares
         * figures of the same load window */
        double mlp[16], a[16], b[16], q[16], ca[16], cb[16], cq[16];
        for (int r = 0; r < rounds; r++) {
            mlp[r] = a[r] = b[r] = q[r] = ca[r] = cb[r] = cq[r] = 0;
            if (want_case(only, "mlp") && (mlp[r] = run_mlp(images, labels, n, t, seconds, &st)) < 0)
                fails += die("mlp", &st);
            if (want_case(only, "tfdata") && (a[r] = run_tfdata(path, t, seconds, &st)) < 0)
                fails += die("tfdata", &st);
            ca[r] = want_case(only, "tfdata") ? g_cpu_us_per_run : 0;
            if (want_case(only, "batch_then_parse") && (b[r] = run_tfdata_batch_parse(path, t, seconds, &st)) < 0)
                fails += die("tfdata batch then parse", &st);
            cb[r] = want_case(only, "batch_then_parse") ? g_cpu_us_per_run : 0;
            if (want_case(only, "queue") && (q[r] = run_queue(path, t, seconds, &st)) < 0) fails += die("queue", &st);
            cq[r] = want_case(only, "queue") ? g_cpu_us_per_run : 0;
        }
        printf("{\"bench\":\"input\",\"case\":\"mlp_train_step\",\"threads\":%d,\"batch\":%d,\"steps_per_s\":%.1f,"
               "\"model\":\"784-256-256-10 relu, sgd 0.1\",\"rounds_steps_per_s\":", t, BATCH, rounds_median(mlp, rounds));
        print_rounds(mlp, rounds);
        printf("}\n");
        print_case("tfdata", t, a, ca, mlp, rounds);
        print_case("tfdata_batch_then_parse", t, b, cb, mlp, rounds);
        print_case("queue", t, q, cq, mlp, rounds);
        tf[t] = rounds_median(a, rounds);
    }
    vg__free(images);
    vg__free(labels);
    double p[2] = {-1, -1};
    if (!only) run_peer(path, seconds, &p[0], &p[1]);
    unlink(path);
    for (int w = 0; w < 2; w++)
        printf("{\"bench\":\"input\",\"case\":\"peer_torch_dataloader\",\"num_workers\":%d,\"batches_per_s\":%.1f,"
               "\"vigil_tfdata_%dthread_over_peer\":%.2f}\n",
               w, p[w], w + 1, p[w] > 0 && tf[w + 1] > 0 ? tf[w + 1] / p[w] : -1.0);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"bench\":\"input\",\"case\":\"process\",\"peak_rss_mb\":%.1f}\n", ru.ru_maxrss / 1024.0);
    return fails ? 1 : 0;
}
