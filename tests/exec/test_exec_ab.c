/* test_exec_ab.c - the executor's choice between inter-op threads and the caller alone
 * for a parallel plan (src/exec/executor.c ab_mode / ab_record, vg__plan.ab_seq): a plan
 * of many tiny nodes in a 2-thread session gives the same values through the timed runs
 * of both modes and after, and ends decided; a plan that holds a blocking node (a queue
 * dequeue that waits on another run) always stays parallel. */
#include "test_util.h"
#include "exec/exec.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"

static vg__plan *only_plan(vg_session *s) { return s->nplans >= 1 ? s->plans[s->nplans - 1] : NULL; }

static void test_ab__tiny_nodes_decide_and_agree(void) {
    vg_graph *g = vg_graph_new();
    int64_t d[1] = {4};
    vg_output x = vg_placeholder(g, VG_FLOAT, d, 1, "x"), a = x, b = x;
    for (int i = 0; i < 150; i++) { /* two chains: a node with two successors, so the plan is parallel */
        a = vg_add(g, a, vg_const_f32(g, 1.0f, NULL), NULL);
        b = vg_mul(g, b, vg_const_f32(g, 1.01f, NULL), NULL);
    }
    vg_output y = vg_add(g, a, b, "y");
    vg_session_options so = {0};
    so.intra_op_threads = so.inter_op_threads = 2;
    vg_status st;
    vg_session *s = vg_session_new(g, &so, &st);
    vg_tensor *xv = vg_tensor_new(VG_FLOAT, d, 1, &st);
    for (int i = 0; i < 4; i++) ((float *)vg_tensor_data(xv))[i] = (float)i;
    float want[4];
    for (int i = 0; i < 4; i++) {
        float av = (float)i, bv = (float)i;
        for (int k = 0; k < 150; k++) av = av + 1.0f, bv = bv * 1.01f;
        want[i] = av + bv;
    }
    for (int r = 0; r < 16; r++) {
        vg_tensor *o = NULL;
        CHECK_OK(vg_session_run(s, NULL, &x, &xv, 1, &y, &o, 1, NULL, 0, NULL, &st), &st);
        for (int i = 0; o && i < 4; i++) CHECK(((float *)vg_tensor_data(o))[i] == want[i]);
        vg_tensor_free(o);
    }
    vg__plan *p = only_plan(s);
    CHECK(p && p->parallel);
    CHECK(p && atomic_load(&p->ab_seq) != 0); /* decided (which way depends on the machine) */
    kt_teardown(g, s, (vg_tensor *[]){xv}, 1, NULL, 0);
}

static void test_ab__blocking_plan_stays_parallel(void) {
    vg_graph *g = vg_graph_new();
    vg_dtype t = VG_FLOAT;
    vg_output q = vg_fifo_queue(g, &t, NULL, 1, -1, "q");
    vg_output v = vg_placeholder(g, VG_FLOAT, NULL, 0, "v");
    vg_op *enq = vg_queue_enqueue(g, q, &v, 1, "enq");
    vg_op *deq = vg_queue_dequeue(g, q, "deq");
    vg_output y = vg_add(g, vg_mul(g, vg_out(deq, 0), vg_out(deq, 0), NULL), vg_out(deq, 0), "y");
    vg_session_options so = {0};
    so.intra_op_threads = so.inter_op_threads = 2;
    vg_status st;
    vg_session *s = vg_session_new(g, &so, &st);
    vg_tensor *vv = vg_tensor_new(VG_FLOAT, NULL, 0, &st);
    for (int r = 0; r < 14; r++) {
        *(float *)vg_tensor_data(vv) = (float)r;
        CHECK_OK(vg_session_run(s, NULL, &v, &vv, 1, NULL, NULL, 0, &enq, 1, NULL, &st), &st);
    }
    vg__plan *dp = NULL;
    for (int r = 0; r < 14; r++) {
        vg_tensor *o = NULL;
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, &y, &o, 1, NULL, 0, NULL, &st), &st);
        if (o) CHECK_NEAR(*(float *)vg_tensor_data(o), (double)r * r + r, 0);
        vg_tensor_free(o);
        dp = only_plan(s);
    }
    CHECK(dp && dp->parallel);
    if (dp) CHECK_EQ_INT(atomic_load(&dp->ab_seq), 2);
    kt_teardown(g, s, (vg_tensor *[]){vv}, 1, NULL, 0);
}

int main(void) {
    RUN_TEST(test_ab__tiny_nodes_decide_and_agree);
    RUN_TEST(test_ab__blocking_plan_stays_parallel);
    TEST_MAIN_END();
}
