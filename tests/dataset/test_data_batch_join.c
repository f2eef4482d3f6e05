/* test_data_batch_join.c - the rest of TF1's batching (tf.train.batch's dynamic_pad
 * and allow_smaller_final_batch, batch_join, shuffle_batch_join) and the
 * PaddingFIFOQueue under them: variable-length elements come out padded with zeros
 * to the longest of each batch, the final smaller batch arrives before OUT_OF_RANGE,
 * and two lists feeding one queue deliver every element once. */
#include "test_util.h"
#include "pipeline_test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"

static vg_code fetch(vg_session *s, const vg_output *f, vg_tensor **out, int n, vg_status *st) {
    vg_run_options ro = {0};
    ro.timeout_in_ms = 20000;
    return vg_session_run(s, &ro, NULL, NULL, 0, f, out, n, NULL, 0, NULL, st);
}

/* element i of 0..3 is range(i + 1) (length i + 1) and the scalar i */
static void test_dynamic_pad_and_smaller_final_batch(void) {
    vg_status st;
    pipe_t p = {vg_graph_new(), NULL, NULL};
    vg_output q = vg_range_input_producer(p.g, 4, 1, false, 0, 8, NULL);
    vg_output i = vg_out(vg_queue_dequeue(p.g, q, NULL), 0);
    vg_output seq = vg_range(p.g, vg_const_i32(p.g, 0, "zero"), vg_add(p.g, i, vg_const_i32(p.g, 1, "one"), NULL),
                             vg_const_i32(p.g, 1, "delta"), "seq");
    vg_output ins[2] = {seq, i}, outs[2];
    CHECK_OK(vg_batch_ex(p.g, ins, 2, 3, 1, 8, false, true, true, NULL, outs), &st);
    CHECK(vg_graph_op_by_name(p.g, "batch/padding_fifo_queue") != NULL);
    CHECK(strcmp(vg_op_type(outs[0].op), "QueueDequeueUpToV2") == 0);
    pipe_start(&p);
    vg_tensor *v[2] = {NULL, NULL};
    CHECK_OK(fetch(p.s, outs, v, 2, &st), &st);
    if (v[0]) { /* [[0,0,0],[0,1,0],[0,1,2]] */
        static const int32_t want[9] = {0, 0, 0, 0, 1, 0, 0, 1, 2};
        CHECK_EQ_INT(vg_tensor_ndims(v[0]), 2);
        CHECK_EQ_INT(vg_tensor_dim(v[0], 0), 3);
        CHECK_EQ_INT(vg_tensor_dim(v[0], 1), 3);
        for (int k = 0; k < 9; k++) CHECK_EQ_INT(((int32_t *)vg_tensor_data(v[0]))[k], want[k]);
        CHECK_EQ_INT(((int32_t *)vg_tensor_data(v[1]))[2], 2);
    }
    vg_tensor_free(v[0]), vg_tensor_free(v[1]);
    /* the final batch: one element, its own length */
    CHECK_OK(fetch(p.s, outs, v, 2, &st), &st);
    if (v[0]) {
        CHECK_EQ_INT(vg_tensor_dim(v[0], 0), 1);
        CHECK_EQ_INT(vg_tensor_dim(v[0], 1), 4);
        CHECK_EQ_INT(((int32_t *)vg_tensor_data(v[0]))[3], 3);
        CHECK_EQ_INT(((int32_t *)vg_tensor_data(v[1]))[0], 3);
    }
    vg_tensor_free(v[0]), vg_tensor_free(v[1]);
    CHECK_CODE(fetch(p.s, outs, v, 2, &st), VG_OUT_OF_RANGE);
    pipe_stop(&p);
}

/* without allow_smaller_final_batch the remainder is dropped at OUT_OF_RANGE */
static void test_no_smaller_final_batch(void) {
    vg_status st;
    pipe_t p = {vg_graph_new(), NULL, NULL};
    vg_output q = vg_range_input_producer(p.g, 5, 1, false, 0, 8, NULL);
    vg_output i = vg_out(vg_queue_dequeue(p.g, q, NULL), 0), outs[1];
    CHECK_OK(vg_shuffle_batch_ex(p.g, &i, 1, 2, 8, 0, 1, 3, false, false, NULL, outs), &st);
    pipe_start(&p);
    vg_tensor *v = NULL;
    CHECK_OK(fetch(p.s, outs, &v, 1, &st), &st);
    vg_tensor_free(v);
    CHECK_OK(fetch(p.s, outs, &v, 1, &st), &st);
    vg_tensor_free(v);
    CHECK_CODE(fetch(p.s, outs, &v, 1, &st), VG_OUT_OF_RANGE);
    pipe_stop(&p);
}

static void join_case(bool shuffle) {
    vg_status st;
    pipe_t p = {vg_graph_new(), NULL, NULL};
    vg_output lists[2];
    for (int l = 0; l < 2; l++) {
        vg_output q = vg_range_input_producer(p.g, 5, 1, false, 0, 8, l ? "producer_b" : "producer_a");
        vg_output x = vg_out(vg_queue_dequeue(p.g, q, NULL), 0);
        lists[l] = l ? vg_add(p.g, x, vg_const_i32(p.g, 100, "hundred"), NULL) : x;
    }
    vg_output outs[1];
    if (shuffle) CHECK_OK(vg_shuffle_batch_join(p.g, lists, 2, 1, 5, 16, 2, 7, false, false, NULL, outs), &st);
    else CHECK_OK(vg_batch_join(p.g, lists, 2, 1, 5, 16, false, false, false, NULL, outs), &st);
    CHECK(vg_graph_op_by_name(p.g, shuffle ? "shuffle_batch_join/random_shuffle_queue" : "batch_join/fifo_queue") != NULL);
    CHECK_EQ_INT(vg_graph_num_queue_runners(p.g), 3); /* two producers and the join queue's runner */
    const vg_queue_runner_def *qr = vg_graph_queue_runner(p.g, 2);
    CHECK(qr && qr->n_enqueue == 2);
    pipe_start(&p);
    int seen[200] = {0};
    for (int b = 0; b < 2; b++) {
        vg_tensor *v = NULL;
        CHECK_OK(fetch(p.s, outs, &v, 1, &st), &st);
        for (int k = 0; v && k < 5; k++) {
            int x = ((int32_t *)vg_tensor_data(v))[k];
            CHECK(x >= 0 && x < 200);
            if (x >= 0 && x < 200) seen[x]++;
        }
        vg_tensor_free(v);
    }
    for (int k = 0; k < 5; k++) CHECK(seen[k] == 1 && seen[100 + k] == 1);
    vg_tensor *v = NULL;
    CHECK_CODE(fetch(p.s, outs, &v, 1, &st), VG_OUT_OF_RANGE);
    pipe_stop(&p);
}
static void test_batch_join(void) { join_case(false); }
static void test_shuffle_batch_join(void) { join_case(true); }

static void test_errors(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output a = vg_const_i32(g, 1, "a"), b = vg_const_f32(g, 1, "b"), lists[2] = {a, b}, outs[1];
    CHECK_CODE(vg_batch_join(g, lists, 2, 1, 2, 8, false, false, false, NULL, outs), VG_INVALID_ARGUMENT);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "does not match list 0");
    vg_graph_free(g);
    g = vg_graph_new();
    vg_output ph = vg_placeholder(g, VG_FLOAT, NULL, -1, "unknown_rank");
    CHECK_CODE(vg_batch_ex(g, &ph, 1, 2, 1, 8, false, true, false, NULL, outs), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_dynamic_pad_and_smaller_final_batch);
    RUN_TEST(test_no_smaller_final_batch);
    RUN_TEST(test_batch_join);
    RUN_TEST(test_shuffle_batch_join);
    RUN_TEST(test_errors);
    TEST_MAIN_END();
}
