/* bench_while.c - while_loop overhead: microseconds per iteration of a loop of N
 * iterations of a scalar add (loop variables i:int32 and x:float32, cond i < N, body
 * i + 1, x + 1), run through vg_session_run with one inter-op thread. Each iteration
 * runs 11 nodes (2 Merge, Less, LoopCond, 2 Switch, 2 Identity, 2 AddV2, 2
 * NextIteration; the Consts are loop invariants). TF 1.x reports roughly 10-20 us per
 * iteration for such a loop in its executor.
 * Prints one JSON line: median wall time over blocks (us_per_iteration), the best block
 * (min_us_per_iteration) and the median of the thread's CPU time (cpu_us_per_iteration,
 * what the loop costs on a busy machine). Usage: bench_while [blocks=21] [iters=1000]
 * [threads=1]: threads > 1 gives the session that many inter-op threads, so the body's
 * nodes may run concurrently (iterations overlap up to parallel_iterations 10, nodes
 * run under the run's lock; cpu_us_per_iteration is then the calling thread's only). */
#include "bench_util.h"
#include "vigil/vigil.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}
static double cpu_us(void) { /* this thread's CPU time: less sensitive to a loaded machine */
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

typedef struct bench_ctx {
    vg_output n, one_i, one_f;
} bench_ctx;

static vg_code cond(vg_graph *g, const vg_output *v, int n, void *u, vg_output *p) {
    (void)n;
    *p = vg_less(g, v[0], ((bench_ctx *)u)->n, NULL);
    return VG_OK;
}
static vg_code body(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {
    (void)n;
    bench_ctx *b = u;
    o[0] = vg_add(g, v[0], b->one_i, NULL);
    o[1] = vg_add(g, v[1], b->one_f, NULL);
    return VG_OK;
}

int main(int argc, char **argv) {
    int blocks = argc > 1 ? atoi(argv[1]) : 21;
    int iters = argc > 2 ? atoi(argv[2]) : 1000;
    int threads = argc > 3 ? atoi(argv[3]) : 1;
    if (threads < 1) threads = 1;
    if (blocks < 1) blocks = 1;
    if (iters < 1) iters = 1;
    vg_status st;
    vg_graph *g = vg_graph_new();
    bench_ctx b = {vg_const_i32(g, iters, "n"), vg_const_i32(g, 1, "one_i"), vg_const_f32(g, 1.0f, "one_f")};
    vg_output v[2] = {vg_const_i32(g, 0, "i"), vg_const_f32(g, 0.0f, "x")}, o[2];
    if (vg_while_loop(g, cond, body, &b, v, 2, NULL, 10, vg_out(NULL, 0), NULL, o, &st) != VG_OK) {
        fprintf(stderr, "bench_while: %s\n", st.msg);
        return 1;
    }
    vg_session_options so = {0};
    so.inter_op_threads = threads;
    so.intra_op_threads = 1;
    vg_session *s = vg_session_new(g, &so, &st);
    if (!s) {
        fprintf(stderr, "bench_while: %s\n", st.msg);
        return 1;
    }
    double *t = malloc(sizeof(double) * (size_t)blocks), *c = malloc(sizeof(double) * (size_t)blocks);
    int runs = 5;
    float last = 0;
    for (int k = -1; k < blocks; k++) { /* block -1 warms up */
        double t0 = now_us(), c0 = cpu_us();
        for (int r = 0; r < runs; r++) {
            vg_tensor *out = NULL;
            if (vg_session_run1(s, o[1], &out, &st) != VG_OK) {
                fprintf(stderr, "bench_while: %s\n", st.msg);
                return 1;
            }
            last = *(float *)vg_tensor_data(out);
            vg_tensor_free(out);
        }
        if (k >= 0) {
            t[k] = (now_us() - t0) / runs / iters;
            c[k] = (cpu_us() - c0) / runs / iters;
        }
    }
    qsort(t, (size_t)blocks, sizeof *t, cmpd);
    qsort(c, (size_t)blocks, sizeof *c, cmpd);
    printf("{\"bench\":\"while_loop\",\"threads\":%d,\"iterations\":%d,\"us_per_iteration\":%.4f,"
           "\"min_us_per_iteration\":%.4f,\"cpu_us_per_iteration\":%.4f,\"result\":%.0f}\n",
           threads, iters, t[blocks / 2], t[0], c[blocks / 2], (double)last);
    free(t);
    free(c);
    vg_session_free(s);
    vg_graph_free(g);
    return last == (float)iters ? 0 : 1;
}
