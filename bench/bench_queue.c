/* bench_queue.c - input pipeline throughput: shuffle_batch of Fashion-MNIST records
 * as the trainer reads them.
 *
 *   range_input_producer(60000, shuffle) -> DequeueMany(read) indices
 *   -> IdxRecord -> Cast(float) * 1/255 -> shuffle_batch(enqueue_many, batch 64)
 *
 * Prints one JSON line:
 *   {"bench":"queue_shuffle_batch","batches_per_s":...,"records_per_s":...,...}
 * Options: --threads N (enqueue threads; default one per 4 cores, 1..4), --read N
 * (records per IdxRecord run, default 256), --capacity N (default 10000), --min-after
 * N (default 5000), --seconds S (measured time, default 3), --data DIR.
 * Runs give up after 30 s (DEADLINE_EXCEEDED) rather than hang if the pipeline stalls. */
#include "bench_util.h"
#include "vigil/ops.h"
#include "vigil/queue.h"
#include "vigil/session.h"
#include "vigil/variables.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int die(const char *what, const vg_status *st) {
    fprintf(stderr, "bench_queue: %s: %s: %s\n", what, vg_code_name(st->code), st->msg);
    return 1;
}

int main(int argc, char **argv) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = (int)(cores / 4 < 1 ? 1 : cores / 4 > 4 ? 4 : cores / 4);
    int read = 256, capacity = 10000, min_after = 5000, batch = 64;
    double seconds = 3;
    const char *dir = "/usr/share/datasets/fashion-mnist";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--read")) read = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--capacity")) capacity = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--min-after")) min_after = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--data")) dir = argv[i + 1];
        else {
            fprintf(stderr, "bench_queue: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    char img[1024], lab[1024];
    if (!bench_mnist_files(dir, "bench_queue", "queue_shuffle_batch", img, lab, sizeof img)) return 0;

    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output ids_q = vg_range_input_producer(g, 60000, 0, true, 1, 4 * read, NULL);
    vg_op *ids = vg_queue_dequeue_many(g, ids_q, vg_const_i32(g, read, "read_n"), "read_ids");
    vg_op *rec = vg_idx_record(g, img, lab, vg_out(ids, 0), "read");
    vg_output x = vg_mul(g, vg_cast(g, vg_out(rec, 0), VG_FLOAT, NULL), vg_const_f32(g, 1.0f / 255, "scale"), "x");
    vg_output ins[2] = {x, vg_out(rec, 1)}, outs[2];
    vg_shuffle_batch(g, ins, 2, batch, capacity, min_after, threads, 7, true, NULL, outs);
    vg_op *init = vg_local_variables_initializer(g);
    if (vg_graph_status(g, &st) != VG_OK) return die("graph", &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    if (!s || vg_session_run_targets(s, &init, 1, &st) != VG_OK) return die("session", &st);
    vg_coord *c = vg_coord_new(NULL, 0);
    if (vg_start_queue_runners(s, c, &st) != VG_OK) return die("queue runners", &st);

    vg_tensor *out[2];
    vg_run_options ro = {0};
    ro.timeout_in_ms = 30000; /* a stalled pipeline fails instead of hanging */
    /* warm-up: file loading and filling the shuffle buffer above min_after_dequeue */
    double t0 = now_s();
    for (int i = 0; i < 200; i++) {
        if (vg_session_run(s, &ro, NULL, NULL, 0, outs, out, 2, NULL, 0, NULL, &st) != VG_OK)
            return die("dequeue", &st);
        vg_tensor_free(out[0]);
        vg_tensor_free(out[1]);
    }
    double warm = now_s() - t0;
    long n = 0;
    double checksum = 0;
    t0 = now_s();
    double t1 = t0;
    while (t1 - t0 < seconds) {
        for (int i = 0; i < 100; i++, n++) {
            if (vg_session_run(s, &ro, NULL, NULL, 0, outs, out, 2, NULL, 0, NULL, &st) != VG_OK)
                return die("dequeue", &st);
            checksum += ((const float *)vg_tensor_data(out[0]))[400];
            checksum += (double)((const int64_t *)vg_tensor_data(out[1]))[0];
            vg_tensor_free(out[0]);
            vg_tensor_free(out[1]);
        }
        t1 = now_s();
    }
    double bps = (double)n / (t1 - t0);
    vg_coord_request_stop(c, NULL);
    vg_code jc = vg_coord_join(c, 10, false, &st);
    printf("{\"bench\":\"queue_shuffle_batch\",\"batches_per_s\":%.1f,\"records_per_s\":%.0f,\"batch\":%d,"
           "\"enqueue_threads\":%d,\"read\":%d,\"capacity\":%d,\"min_after_dequeue\":%d,\"warmup_s\":%.2f,"
           "\"cores\":%ld,\"checksum\":%.1f}\n",
           bps, bps * batch, batch, threads, read, capacity, min_after, warm, cores,
           checksum);
    vg_coord_free(c);
    vg_session_free(s);
    vg_graph_free(g);
    return jc == VG_OK ? 0 : die("join", &st);
}
