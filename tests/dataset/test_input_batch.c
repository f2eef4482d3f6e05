/* test_input_batch.c - tf.train.batch / shuffle_batch: graph layout, shapes, contents,
 * enqueue_many, end of input, build errors. */
#include "test_util.h"
#include "session_test_util.h"
#include "pipeline_test_util.h"
#include "vigil/ops.h"
#include "vigil/queue.h"
#include "vigil/session.h"
#include "vigil/variables.h"
#include "kernels_fixture.h"

/* batch of (x, 2x) over 0..19 in order, one epoch. */
static void test_input__batch(void) {
    vg_status st;
    pipe_t p = {vg_graph_new(), NULL, NULL};
    vg_output q = vg_range_input_producer(p.g, 20, 1, false, 0, 32, NULL);
    vg_output x = vg_out(vg_queue_dequeue(p.g, q, NULL), 0);
    vg_output y = vg_mul(p.g, x, vg_const_i32(p.g, 2, "two"), "y");
    vg_output ins[2] = {x, y}, outs[2];
    CHECK_OK(vg_batch(p.g, ins, 2, 4, 1, 10, false, NULL, outs), &st);
    /* layout and build-time shapes */
    CHECK(strcmp(vg_op_name(outs[0].op), "batch") == 0);
    CHECK(outs[1].op == outs[0].op && outs[1].index == 1);
    CHECK(vg_graph_op_by_name(p.g, "batch/fifo_queue") != NULL);
    CHECK(vg_graph_op_by_name(p.g, "batch/fifo_queue_enqueue") != NULL);
    CHECK(vg_graph_op_by_name(p.g, "batch/n") != NULL);
    CHECK(vg_graph_op_by_name(p.g, "batch/fifo_queue_Close_1") != NULL);
    vg_shape s0 = vg_output_shape(outs[0]);
    CHECK(s0.ndims == 1 && s0.dims[0] == 4);
    CHECK(vg_output_dtype(outs[1]) == VG_INT32);
    pipe_start(&p);
    for (int b = 0; b < 5; b++) {
        vg_tensor *v[2] = {NULL, NULL};
        CHECK_OK(fetch_timeout(p.s, outs, v, 2, &st), &st);
        if (!v[0]) break;
        CHECK_EQ_INT(vg_tensor_dim(v[0], 0), 4);
        for (int i = 0; i < 4; i++) {
            CHECK_EQ_INT(((int32_t *)vg_tensor_data(v[0]))[i], 4 * b + i);
            CHECK_EQ_INT(((int32_t *)vg_tensor_data(v[1]))[i], 2 * (4 * b + i));
        }
        vg_tensor_free(v[0]);
        vg_tensor_free(v[1]);
    }
    vg_tensor *v = NULL;
    CHECK_STATUS(fetch_timeout(p.s, outs, &v, 1, &st), &st, VG_OUT_OF_RANGE, "FIFOQueue '");
    CHECK_STR_CONTAINS(st.msg, "batch/fifo_queue' is closed and has insufficient elements (requested 4");
    pipe_stop(&p);
}

/* enqueue_many: rows of a [3, 2] Const batched in pairs, repeating forever. */
static void test_input__batch_enqueue_many(void) {
    vg_status st;
    pipe_t p = {vg_graph_new(), NULL, NULL};
    float rows[6] = {0, 1, 10, 11, 20, 21};
    vg_output c = vg_const_array(p.g, VG_FLOAT, (int64_t[]){3, 2}, 2, rows, "rows");
    vg_output out;
    CHECK_OK(vg_batch(p.g, &c, 1, 2, 1, 8, true, "pairs", &out), &st);
    CHECK(vg_graph_op_by_name(p.g, "pairs/fifo_queue_EnqueueMany") != NULL);
    vg_shape s = vg_output_shape(out);
    CHECK(s.ndims == 2 && s.dims[0] == 2 && s.dims[1] == 2);
    pipe_start(&p);
    for (int b = 0; b < 6; b++) {
        vg_tensor *v = NULL;
        CHECK_OK(fetch_timeout(p.s, &out, &v, 1, &st), &st);
        if (!v) break;
        const float *f = vg_tensor_data(v);
        for (int i = 0; i < 2; i++) {
            int r = (2 * b + i) % 3;
            CHECK_NEAR(f[2 * i], 10 * r, 0);
            CHECK_NEAR(f[2 * i + 1], 10 * r + 1, 0);
        }
        vg_tensor_free(v);
    }
    pipe_stop(&p);
}

/* shuffle_batch over 0..99 (one epoch): every index once, not in order, then the end. */
static void test_input__shuffle_batch(void) {
    vg_status st;
    pipe_t p = {vg_graph_new(), NULL, NULL};
    vg_output q = vg_range_input_producer(p.g, 100, 1, false, 0, 32, NULL);
    vg_output x = vg_out(vg_queue_dequeue(p.g, q, NULL), 0), out;
    CHECK_OK(vg_shuffle_batch(p.g, &x, 1, 10, 50, 10, 2, 123, false, NULL, &out), &st);
    CHECK(strcmp(vg_op_name(out.op), "shuffle_batch") == 0);
    CHECK(vg_graph_op_by_name(p.g, "shuffle_batch/random_shuffle_queue") != NULL);
    pipe_start(&p);
    int seen[100] = {0}, order[100], k = 0;
    for (int b = 0; b < 10; b++) {
        vg_tensor *v = NULL;
        CHECK_OK(fetch_timeout(p.s, &out, &v, 1, &st), &st);
        if (!v) break;
        CHECK_EQ_INT(vg_tensor_dim(v, 0), 10);
        for (int i = 0; i < 10; i++) {
            int id = ((int32_t *)vg_tensor_data(v))[i];
            CHECK(id >= 0 && id < 100);
            if (id >= 0 && id < 100) seen[id]++;
            order[k++] = id;
        }
        vg_tensor_free(v);
    }
    int bad = 0, inorder = 0;
    for (int i = 0; i < 100; i++) bad += seen[i] != 1;
    for (int i = 0; i < k; i++) inorder += order[i] == i;
    CHECK_EQ_INT(bad, 0);
    CHECK(inorder < 50);
    vg_tensor *v = NULL;
    CHECK_STATUS(fetch_timeout(p.s, &out, &v, 1, &st), &st, VG_OUT_OF_RANGE, "RandomShuffleQueue '");
    pipe_stop(&p);
}

static void test_input__build_errors(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1}, 1, "x"), out;
    CHECK_CODE(vg_batch(g, &x, 1, 4, 1, 10, false, NULL, &out), VG_INVALID_ARGUMENT);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "All shapes must be fully defined");
    vg_graph_free(g);

    g = vg_graph_new();
    x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 3}, 2, "x"); /* fine with enqueue_many */
    CHECK_CODE(vg_batch(g, &x, 1, 4, 1, 10, true, NULL, &out), VG_OK);
    vg_shape s = vg_output_shape(out);
    CHECK(s.ndims == 2 && s.dims[0] == 4 && s.dims[1] == 3);
    vg_graph_free(g);

    g = vg_graph_new();
    x = vg_placeholder(g, VG_FLOAT, (int64_t[]){2}, 1, "x");
    CHECK_CODE(vg_shuffle_batch(g, &x, 1, 4, 10, 10, 1, 0, false, NULL, &out), VG_INVALID_ARGUMENT);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT,
        "capacity 10 must be bigger than min_after_dequeue 10.");
    vg_graph_free(g);

    g = vg_graph_new();
    CHECK_CODE(vg_batch(g, NULL, 0, 4, 1, 10, false, NULL, &out), VG_INVALID_ARGUMENT);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "Expected at least one tensor in batch().");
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_input__batch);
    RUN_TEST(test_input__batch_enqueue_many);
    RUN_TEST(test_input__shuffle_batch);
    RUN_TEST(test_input__build_errors);
    TEST_MAIN_END();
}
