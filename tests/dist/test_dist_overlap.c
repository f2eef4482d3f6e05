/* test_dist_overlap.c - overlap of the DistributedOptimizer's allreduce with
 * back-propagation (issue 15: "a gradient's allreduce starts as soon as the gradient is
 * computed, not after the whole backward pass"). A traced training step of a 4-layer MLP
 * with one fusion bucket per gradient: the first bucket (the last layer's bias gradient)
 * must start before the last gradient op has finished, in 4 of 5 steps (rounds of 5
 * steps are repeated, at most 4 times, for a loaded machine). CTest runs it alone
 * (1 rank) and under mpirun -np 2.
 * VG_OVERLAP_TRACE=1 prints the timeline. */
#include "dist_fixture.h"
#include "test_util.h"
#include <vigil/vigil.h>
#include <stdint.h>
#include <stdlib.h>

static int R, N;

typedef struct span {
    int64_t start, end;
} span;

static bool find_span(const vg_run_metadata *md, const char *name, span *out) {
    for (int i = 0; i < vg_run_metadata_num_nodes(md); i++) {
        const vg_node_stats *ns = vg_run_metadata_node(md, i);
        if (strcmp(ns->node_name, name) == 0) {
            out->start = ns->start_us;
            out->end = ns->end_us;
            return true;
        }
    }
    return false;
}

static void test_overlap__first_bucket_before_last_gradient(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_graph_set_seed(g, 3);
    enum { B = 128, D = 784, H = 512, L = 4 };
    vg_output x = vg_random_uniform(g, vg_const_array(g, VG_INT32, (int64_t[]){2}, 1, (int32_t[]){B, D}, "shape"),
                                    VG_FLOAT, 1, 2, "x");
    vg_output h = x;
    for (int l = 0; l < L - 1; l++) h = vg_layers_dense(g, h, H, VG_ACT_RELU, NULL);
    vg_output logits = vg_layers_dense(g, h, 10, VG_ACT_NONE, NULL);
    vg_output loss = vg_reduce_mean(g, vg_mul(g, logits, logits, NULL), NULL, -1, false, "loss");
    int nv = 0;
    const vg_output *vars = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nv);
    CHECK_EQ_INT(nv, 2 * L);
    vg_output vcopy[2 * L], grads[2 * L];
    memcpy(vcopy, vars, sizeof vcopy);
    vg_optimizer *opt = vg_optimizer_new_sgd(1e-4);
    vg_dist_options o = {.no_fusion = true}; /* one bucket per gradient: DistributedAllreduce_0 is the last bias's */
    CHECK_OK(vg_dist_compute_gradients(opt, g, loss, vcopy, 2 * L, &o, grads, &st), &st);
    vg_op *train = vg_optimizer_apply_gradients(opt, g, grads, vcopy, 2 * L, (vg_output){NULL, 0}, NULL);
    CHECK(train != NULL);
    /* the gradient ops: each bucket's input */
    const char *grad_op[2 * L], *bucket[2 * L];
    for (int i = 0; i < 2 * L; i++) {
        bucket[i] = vg_op_name(grads[i].op);
        grad_op[i] = vg_op_name(vg_op_input(grads[i].op, 0).op);
    }
    CHECK(strcmp(bucket[2 * L - 1], "DistributedAllreduce_0") == 0);
    vg_op *init = vg_global_variables_initializer(g);
    /* one intra-op thread, two inter-op threads */
    vg_session_options so = {.intra_op_threads = 1, .inter_op_threads = 2};
    vg_session *s = vg_session_new(g, &so, &st);
    CHECK(s != NULL);
    if (!s) return;
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    vg_run_options ro = {0};
    ro.trace_level = VG_TRACE_FULL;
    vg_run_metadata *md = vg_run_metadata_new();
    int overlapped = 0, steps = 5;
    int32_t all_ok = 0;
    bool print = getenv("VG_OVERLAP_TRACE") != NULL;
    /* rounds of 5 steps until one where every rank saw the overlap in at least 4 (a
     * loaded machine may deschedule the caller's thread for a whole step); at most 8
     * rounds (4 failed 3 times in 29 runs on a loaded machine). Every rank runs the same rounds (the
     * decision is an allreduce). */
    for (int round = 0; round < 8 && !all_ok; round++) {
        overlapped = 0;
        for (int step = 0; step < steps; step++) {
            vg_run_metadata_clear(md);
            CHECK_OK(vg_session_run(s, &ro, NULL, NULL, 0, NULL, NULL, 0, &train, 1, md, &st), &st);
            span first = {0, 0}, last_grad = {0, 0}, sp;
            CHECK(find_span(md, "DistributedAllreduce_0", &first));
            const char *last_name = "";
            for (int i = 0; i < 2 * L; i++)
                if (find_span(md, grad_op[i], &sp) && sp.end > last_grad.end) last_grad = sp, last_name = grad_op[i];
            overlapped += first.start < last_grad.end;
            if (print && R == 0) {
                int64_t t0 = INT64_MAX;
                for (int i = 0; i < vg_run_metadata_num_nodes(md); i++)
                    if (vg_run_metadata_node(md, i)->start_us < t0) t0 = vg_run_metadata_node(md, i)->start_us;
                for (int i = 2 * L - 1; i >= 0; i--) {
                    span gs = {0, 0}, bs = {0, 0};
                    find_span(md, grad_op[i], &gs);
                    find_span(md, bucket[i], &bs);
                    printf("step %d grad %-45s %6lld-%6lld us  %s %6lld-%6lld us\n", step, grad_op[i],
                           (long long)(gs.start - t0), (long long)(gs.end - t0), bucket[i], (long long)(bs.start - t0),
                           (long long)(bs.end - t0));
                }
                printf("step %d: first bucket starts at %lld us, last gradient op (%s) ends at %lld us\n", step,
                       (long long)(first.start - t0), last_name, (long long)(last_grad.end - t0));
            }
        }
        all_ok = overlapped >= steps - 1;
        CHECK_OK(vg_dist_allreduce(&all_ok, 1, VG_INT32, VG_REDUCE_MIN, &st), &st);
        if (print && R == 0) printf("round %d: overlapped in %d of %d steps\n", round, overlapped, steps);
    }
    /* the first bucket's allreduce runs while back-propagation goes on (in 4 of 5 steps
     * of a round; without the executor's priority for collectives it was 1 to 3 of 5) */
    CHECK(overlapped >= steps - 1);
    vg_run_metadata_free(md);
    vg_session_free(s);
    vg_optimizer_free(opt);
    vg_graph_free(g);
}

int main(void) {
    dist_fx_init(&R, &N);
    RUN_TEST(test_overlap__first_bucket_before_last_gradient);
    return dist_fx_end();
}
