/* synthetic_fit.h - what the two full-batch examples (logreg.c, mlp_synthetic.c)
 * share: the softmax cross-entropy training op, the session with the variables
 * initialized and the data fed as tensors, and the final check. Header-only, public
 * API only. */
#ifndef VIGIL_EXAMPLES_SYNTHETIC_FIT_H
#define VIGIL_EXAMPLES_SYNTHETIC_FIT_H

#include "vigil/vigil.h"
#include <stdio.h>

/* The data's small deterministic generator (Knuth's MMIX LCG): the next 53 random bits
 * of *state. */
static inline uint64_t ex_lcg53(uint64_t *state) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return *state >> 11;
}

/* "<prog>: <what>: <code>: <message>" on stderr; returns 1 (main's exit status). */
static inline int ex_fail(const char *prog, const char *what, const vg_status *st) {
    fprintf(stderr, "%s: %s: %s: %s\n", prog, what, vg_code_name(st->code), st->msg);
    return 1;
}

/* A new graph with the placeholders of the batch: x float [?, 2] ("x") and y int32 [?]
 * ("y"). NULL when out of memory. */
static inline vg_graph *ex_graph_xy(vg_output *x, vg_output *y) {
    vg_graph *g = vg_graph_new();
    if (!g) return NULL;
    *x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 2}, 2, "x");
    *y = vg_placeholder(g, VG_INT32, (int64_t[]){-1}, 1, "y");
    return g;
}

/* loss = mean sparse softmax cross-entropy of logits against the labels y ("xent",
 * "loss"), and opt's minimize op on it with the global step (opt is freed). */
static inline vg_op *ex_xent_train_op(vg_graph *g, vg_output logits, vg_output y, vg_optimizer *opt, vg_output *loss) {
    vg_op *xent = vg_sparse_softmax_xent(g, logits, y, "xent");
    *loss = vg_reduce_mean(g, vg_out(xent, 0), NULL, -1, false, "loss");
    vg_output gs = vg_get_or_create_global_step(g);
    vg_op *train = vg_optimizer_minimize(opt, g, *loss, NULL, 0, gs, NULL);
    vg_optimizer_free(opt);
    return train;
}

/* The full batch: n points xs [n, 2] (float) with their labels ys [n] (int32). */
typedef struct ex_batch {
    const float *xs;
    const int32_t *ys;
    int64_t n;
} ex_batch;

/* Initializes the global variables of the built graph g in a new session (*s) and wraps
 * the batch as tensors (*xt, *yt, borrowing its arrays). 0, or 1 after ex_fail. */
static inline int ex_start(const char *prog, vg_graph *g, ex_batch b, vg_session **s, vg_tensor **xt, vg_tensor **yt) {
    vg_status st;
    vg_op *init = vg_global_variables_initializer(g);
    if (vg_graph_status(g, &st) != VG_OK) return ex_fail(prog, "building the graph", &st);
    *s = vg_session_new(g, NULL, &st);
    if (!*s) return ex_fail(prog, "creating the session", &st);
    if (vg_session_run_targets(*s, &init, 1, &st) != VG_OK) return ex_fail(prog, "initializing", &st);
    size_t nx = (size_t)b.n * 2 * sizeof(float), ny = (size_t)b.n * sizeof(int32_t);
    *xt = vg_tensor_new_from(VG_FLOAT, (int64_t[]){b.n, 2}, 2, (void *)b.xs, nx, NULL, NULL, &st);
    *yt = vg_tensor_new_from(VG_INT32, (int64_t[]){b.n}, 1, (void *)b.ys, ny, NULL, NULL, &st);
    if (!*xt || !*yt) return ex_fail(prog, "wrapping the data", &st);
    return 0;
}

/* Called every `every` steps (not after the last one) with the step, its loss (taken
 * before the step's update) and the fetched tensors. */
typedef void (*ex_report_fn)(int step, double loss, vg_tensor *const *fetched);

/* The training loop: steps + 1 runs feeding x <- xt and y <- yt and fetching
 * fetches[0..nfetch) (fetches[0]: the loss; at most 2), with the train op on every run
 * but the last; *last gets the last loss. 0, or 1 after ex_fail. */
static inline int ex_fit(const char *prog, vg_session *s, vg_output x, vg_output y, vg_tensor *xt, vg_tensor *yt,
                         const vg_output *fetches, int nfetch, vg_op *train, int steps, int every, ex_report_fn report,
                         double *last) {
    vg_status st;
    vg_output feeds[2] = {x, y};
    vg_tensor *vals[2] = {xt, yt};
    *last = 0;
    for (int step = 0; step <= steps; step++) {
        vg_tensor *out[2] = {NULL, NULL};
        if (vg_session_run(s, NULL, feeds, vals, 2, fetches, out, nfetch, &train, step < steps, NULL, &st) != VG_OK)
            return ex_fail(prog, "training", &st);
        *last = vg_tensor_scalar(out[0]);
        if (step % every == 0 && step < steps) report(step, *last, out);
        for (int i = 0; i < nfetch; i++) vg_tensor_free(out[i]);
    }
    return 0;
}

/* Prints "final loss L", frees what ex_start made and g; 0 when last < target, else
 * 1 with the reason on stderr. */
static inline int ex_finish(const char *prog, double last, double target, vg_graph *g, vg_session *s, vg_tensor *xt,
                            vg_tensor *yt) {
    printf("final loss %.6f\n", last);
    vg_tensor_free(xt);
    vg_tensor_free(yt);
    vg_session_free(s);
    vg_graph_free(g);
    if (!(last < target)) {
        fprintf(stderr, "%s: final loss %.6f is not below %.3f\n", prog, last, target);
        return 1;
    }
    return 0;
}

#endif
