/* test_array_grad.c - finite-difference gradient checks (gradcheck.h) for every
 * differentiable array op: Identity, PlaceholderWithDefault, Reshape, ExpandDims,
 * Squeeze, Transpose (Const and fed perm), ConcatV2, Slice, Pad, Pack, Unpack, Tile,
 * GatherV2, UnsortedSegmentSum, Fill and boolean_mask, each with build-time known
 * shapes and with unknown (fed) shapes where the gradient takes another path; plus
 * StopGradient and the TF names of the gradient ops. */
#include "gradcheck.h"
#include "test_util.h"
#include "kernels_fixture.h"

#define D(...) ((const int64_t[]){__VA_ARGS__})
#define V(...) ((const double[]){__VA_ARGS__})

/* A double tensor with deterministic pseudo-random values in [-1, 1]. */
static vg_tensor *rnd(const int64_t *dims, int nd) {
    static uint32_t s = 12345;
    vg_tensor *t = vg_tensor_new(VG_DOUBLE, dims, nd, NULL);
    for (int64_t i = 0; i < vg_tensor_num_elements(t); i++) {
        s = s * 1664525u + 1013904223u;
        ((double *)vg_tensor_data(t))[i] = (s >> 8) / (double)(1u << 24) * 2 - 1;
    }
    return t;
}

static vg_tensor *ints(vg_dtype dt, const int64_t *dims, int nd, const double *v) {
    vg_tensor *t = vg_tensor_new(dt, dims, nd, NULL);
    for (int64_t i = 0; i < vg_tensor_num_elements(t); i++) {
        if (dt == VG_INT64) ((int64_t *)vg_tensor_data(t))[i] = (int64_t)v[i];
        else ((int32_t *)vg_tensor_data(t))[i] = (int32_t)v[i];
    }
    return t;
}

static vg_output icst(vg_graph *g, vg_dtype dt, const int64_t *dims, int nd, const double *v) {
    return kt_const_take(g, ints(dt, dims, nd, v), NULL);
}

static vg_output ph(vg_graph *g, const int64_t *dims, int nd, const char *name) {
    return vg_placeholder(g, VG_DOUBLE, dims, nd, name);
}

/* Gradient check of y w.r.t. one input x (value xv, freed), with extra feeds; frees g. */
static void check1(vg_graph *g, vg_output x, vg_tensor *xv, vg_output y, const vg_output *ef, vg_tensor *const *ev,
                   int ne, const char *what) {
    vg_status st;
    if (vg_graph_status(g, &st) != VG_OK) {
        fprintf(stderr, "%s: build failed: %s\n", what, st.msg);
        vg_test_failures++;
    } else {
        int bad = ne ? vg_gradcheck_ex(g, &x, &xv, 1, ef, ev, ne, y, 1e-6, 1e-6)
                     : vg_gradcheck(g, &x, &xv, 1, y, 1e-6, 1e-6);
        if (bad) fprintf(stderr, "%s: %d gradient mismatches\n", what, bad);
        CHECK_EQ_INT(bad, 0);
        if (vg_graph_status(g, &st) != VG_OK) {
            fprintf(stderr, "%s: %s\n", what, st.msg);
            vg_test_failures++;
        }
    }
    vg_tensor_free(xv);
    vg_graph_free(g);
}

static void test_array__grad_identity_family(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = ph(g, D(2, 3), 2, "x");
    check1(g, x, rnd(D(2, 3), 2), vg_identity(g, x, NULL), NULL, NULL, 0, "Identity");
    g = vg_graph_new();
    x = ph(g, D(2, 3), 2, "x");
    vg_output d = vg_placeholder_with_default(g, vg_mul(g, x, x, NULL), D(-1, 3), 2, "pwd");
    check1(g, x, rnd(D(2, 3), 2), d, NULL, NULL, 0, "PlaceholderWithDefault");
}

static void test_array__grad_reshape_family(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = ph(g, D(2, 3), 2, "x");
    check1(g, x, rnd(D(2, 3), 2), vg_reshape_c(g, x, D(3, 2), 2, NULL), NULL, NULL, 0, "Reshape");
    g = vg_graph_new();
    x = ph(g, D(-1, 3), 2, "x");
    check1(g, x, rnd(D(4, 3), 2), vg_reshape_c(g, x, D(-1), 1, NULL), NULL, NULL, 0, "Reshape dynamic");
    g = vg_graph_new();
    x = ph(g, D(2, 3), 2, "x");
    check1(g, x, rnd(D(2, 3), 2), vg_expand_dims(g, x, -2, NULL), NULL, NULL, 0, "ExpandDims");
    g = vg_graph_new();
    x = ph(g, D(2, 1, 3, 1), 4, "x");
    check1(g, x, rnd(D(2, 1, 3, 1), 4), vg_squeeze(g, x, NULL, 0, NULL), NULL, NULL, 0, "Squeeze");
    g = vg_graph_new();
    x = ph(g, D(-1, 1), 2, "x");
    int32_t ax = 1;
    check1(g, x, rnd(D(3, 1), 2), vg_squeeze(g, x, &ax, 1, NULL), NULL, NULL, 0, "Squeeze dynamic");
}

static void test_array__grad_transpose(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = ph(g, D(2, 3, 4), 3, "x");
    check1(g, x, rnd(D(2, 3, 4), 3), vg_transpose_c(g, x, (int32_t[]){2, 0, 1}, 3, NULL), NULL, NULL, 0, "Transpose");
    /* fed perm: InvertPermutation at run time */
    g = vg_graph_new();
    x = ph(g, D(2, 3, 4), 3, "x");
    vg_output p = vg_placeholder(g, VG_INT32, D(3), 1, "perm");
    vg_tensor *pv = ints(VG_INT32, D(3), 1, V(1, 2, 0));
    check1(g, x, rnd(D(2, 3, 4), 3), vg_transpose(g, x, p, NULL), &p, &pv, 1, "Transpose fed perm");
    vg_tensor_free(pv);
}

static void test_array__grad_concat(void) {
    for (int axis = -2; axis < 2; axis++) {
        vg_graph *g = vg_graph_new();
        vg_output a = ph(g, D(2, 2), 2, "a");
        vg_output b = vg_mul(g, a, a, NULL);
        vg_output y = vg_concat_c(g, (vg_output[]){b, a, b}, 3, axis, NULL);
        check1(g, a, rnd(D(2, 2), 2), y, NULL, NULL, 0, "ConcatV2");
    }
    /* unknown shapes: ConcatOffset */
    vg_graph *g = vg_graph_new();
    vg_output a = ph(g, D(-1, 2), 2, "a"), c = ph(g, D(-1, 3), 2, "c");
    vg_output y = vg_concat_c(g, (vg_output[]){a, c}, 2, 1, NULL);
    vg_tensor *cv = rnd(D(2, 3), 2);
    check1(g, a, rnd(D(2, 2), 2), vg_mul(g, y, y, NULL), &c, &cv, 1, "ConcatV2 dynamic");
    g = vg_graph_new();
    a = ph(g, D(-1, 2), 2, "a");
    c = ph(g, D(-1, 2), 2, "c");
    y = vg_concat_c(g, (vg_output[]){c, a}, 2, 0, NULL);
    vg_tensor *cv2 = rnd(D(1, 2), 2);
    check1(g, a, rnd(D(3, 2), 2), y, &c, &cv2, 1, "ConcatV2 dynamic axis 0");
    vg_tensor_free(cv);
    vg_tensor_free(cv2);
}

static void test_array__grad_slice_pad(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = ph(g, D(3, 4), 2, "x");
    check1(g, x, rnd(D(3, 4), 2), vg_slice_c(g, x, D(1, 1), D(2, -1), 2, NULL), NULL, NULL, 0, "Slice");
    g = vg_graph_new();
    x = ph(g, D(-1, 4), 2, "x");
    check1(g, x, rnd(D(3, 4), 2), vg_slice_c(g, x, D(1, 0), D(-1, 2), 2, NULL), NULL, NULL, 0, "Slice dynamic");
    g = vg_graph_new();
    x = ph(g, D(2, 3), 2, "x");
    vg_op_builder *b = vg_op_builder_new(g, "Pad", NULL);
    vg_op_builder_add_input(b, x);
    vg_op_builder_add_input(b, icst(g, VG_INT32, D(2, 2), 2, V(1, 0, 2, 1)));
    check1(g, x, rnd(D(2, 3), 2), vg_out(vg_op_builder_finish(b), 0), NULL, NULL, 0, "Pad");
    g = vg_graph_new();
    x = ph(g, D(2, 3), 2, "x");
    vg_output p = vg_placeholder(g, VG_INT32, D(2, 2), 2, "pads");
    b = vg_op_builder_new(g, "Pad", NULL);
    vg_op_builder_add_input(b, x);
    vg_op_builder_add_input(b, p);
    vg_tensor *pv = ints(VG_INT32, D(2, 2), 2, V(0, 1, 1, 1));
    check1(g, x, rnd(D(2, 3), 2), vg_out(vg_op_builder_finish(b), 0), &p, &pv, 1, "Pad fed paddings");
    vg_tensor_free(pv);
}

static void test_array__grad_pack_unpack(void) {
    for (int axis = -1; axis < 3; axis++) {
        vg_graph *g = vg_graph_new();
        vg_output x = ph(g, D(2, 3), 2, "x");
        vg_output y = vg_pack(g, (vg_output[]){x, vg_mul(g, x, x, NULL)}, 2, axis, NULL);
        check1(g, x, rnd(D(2, 3), 2), y, NULL, NULL, 0, "Pack");
    }
    vg_graph *g = vg_graph_new();
    vg_output x = ph(g, D(2, 3), 2, "x");
    vg_op_builder *b = vg_op_builder_new(g, "Unpack", NULL);
    vg_op_builder_add_input(b, x);
    vg_op_builder_set_attr_int(b, "axis", 1);
    vg_op *u = vg_op_builder_finish(b);
    /* output 1 unused: its gradient is zeros */
    vg_output y = vg_concat_c(g, (vg_output[]){vg_out(u, 2), vg_out(u, 0)}, 2, 0, NULL);
    check1(g, x, rnd(D(2, 3), 2), y, NULL, NULL, 0, "Unpack");
}

static void test_array__grad_tile(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = ph(g, D(2, 3), 2, "x");
    check1(g, x, rnd(D(2, 3), 2), vg_tile(g, x, icst(g, VG_INT32, D(2), 1, V(2, 3)), NULL), NULL, NULL, 0, "Tile");
    g = vg_graph_new();
    x = ph(g, D(2, 1, 3, 2, 1), 5, "x"); /* rank 5: untiled dims are merged */
    check1(g, x, rnd(D(2, 1, 3, 2, 1), 5), vg_tile(g, x, icst(g, VG_INT32, D(5), 1, V(1, 2, 1, 1, 3)), NULL), NULL, NULL,
           0, "Tile rank 5");
    g = vg_graph_new();
    x = ph(g, D(2, 3), 2, "x");
    check1(g, x, rnd(D(2, 3), 2), vg_tile(g, x, icst(g, VG_INT32, D(2), 1, V(1, 1)), NULL), NULL, NULL, 0, "Tile ones");
    g = vg_graph_new();
    x = ph(g, D(-1, 3), 2, "x");
    vg_output m = vg_placeholder(g, VG_INT32, D(2), 1, "m");
    vg_tensor *mv = ints(VG_INT32, D(2), 1, V(3, 2));
    check1(g, x, rnd(D(2, 3), 2), vg_tile(g, x, m, NULL), &m, &mv, 1, "Tile dynamic");
    vg_tensor_free(mv);
}

static void test_array__grad_gather(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = ph(g, D(4, 3), 2, "x");
    vg_output y = vg_gather(g, x, icst(g, VG_INT32, D(5), 1, V(3, 0, 3, 1, 3)), 0, NULL);
    check1(g, x, rnd(D(4, 3), 2), y, NULL, NULL, 0, "GatherV2 axis 0");
    g = vg_graph_new();
    x = ph(g, D(4, 3), 2, "x");
    y = vg_gather(g, x, icst(g, VG_INT64, D(2, 2), 2, V(1, 1, 0, 2)), 0, NULL);
    check1(g, x, rnd(D(4, 3), 2), y, NULL, NULL, 0, "GatherV2 2-D indices");
    g = vg_graph_new();
    x = ph(g, D(2, 4, 3), 3, "x");
    y = vg_gather(g, x, icst(g, VG_INT32, D(3), 1, V(3, 3, 1)), 1, NULL);
    check1(g, x, rnd(D(2, 4, 3), 3), y, NULL, NULL, 0, "GatherV2 axis 1");
    g = vg_graph_new();
    x = ph(g, D(2, 4), 2, "x");
    y = vg_gather(g, x, icst(g, VG_INT32, D(2), 1, V(3, 1)), -1, NULL);
    check1(g, x, rnd(D(2, 4), 2), y, NULL, NULL, 0, "GatherV2 axis -1");
    g = vg_graph_new();
    x = ph(g, D(-1, 3), 2, "x");
    vg_output idx = vg_placeholder(g, VG_INT32, D(-1), 1, "idx");
    vg_tensor *iv = ints(VG_INT32, D(3), 1, V(0, 2, 0));
    check1(g, x, rnd(D(3, 3), 2), vg_gather(g, x, idx, 0, NULL), &idx, &iv, 1, "GatherV2 dynamic");
    vg_tensor_free(iv);
}

static void test_array__grad_segment_sum_fill_mask(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = ph(g, D(4, 2), 2, "x");
    vg_op_builder *b = vg_op_builder_new(g, "UnsortedSegmentSum", NULL);
    vg_op_builder_add_input(b, x);
    vg_op_builder_add_input(b, icst(g, VG_INT32, D(4), 1, V(2, 0, -1, 2)));
    vg_op_builder_add_input(b, vg_const_i32(g, 3, NULL));
    check1(g, x, rnd(D(4, 2), 2), vg_out(vg_op_builder_finish(b), 0), NULL, NULL, 0, "UnsortedSegmentSum");
    g = vg_graph_new();
    x = ph(g, NULL, 0, "x");
    check1(g, x, rnd(NULL, 0), vg_fill(g, icst(g, VG_INT32, D(2), 1, V(2, 3)), x, NULL), NULL, NULL, 0, "Fill");
    g = vg_graph_new();
    x = ph(g, D(4, 2), 2, "x");
    vg_tensor *mt = vg_tensor_new(VG_BOOL, D(4), 1, NULL);
    bool mv[4] = {true, false, true, true};
    memcpy(vg_tensor_data(mt), mv, sizeof mv);
    vg_output m = vg_const(g, mt, "mask");
    vg_tensor_free(mt);
    check1(g, x, rnd(D(4, 2), 2), vg_boolean_mask(g, x, m, NULL), NULL, NULL, 0, "boolean_mask");
}

static void test_array__grad_stop_and_names(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = ph(g, D(2), 1, "x");
    vg_output y = vg_add(g, vg_stop_gradient(g, x, NULL), vg_reshape_c(g, x, D(2), 1, NULL), NULL);
    vg_output loss = vg_reduce_sum(g, y, NULL, -1, false, NULL);
    vg_output dx;
    vg_status st;
    CHECK_OK(vg_gradients(g, &loss, 1, &x, 1, NULL, &dx, &st), &st);
    /* only the Reshape path contributes */
    vg_tensor *xv = rnd(D(2), 1), *o = NULL;
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run(s, NULL, &x, &xv, 1, &dx, &o, 1, NULL, 0, NULL, &st), &st);
    CHECK(o && ((double *)vg_tensor_data(o))[0] == 1 && ((double *)vg_tensor_data(o))[1] == 1);
    vg_tensor_free(o);
    vg_session_free(s);
    CHECK(vg_graph_op_by_name(g, "gradients/Reshape_grad/Reshape") != NULL);
    vg_tensor_free(xv);
    /* only StopGradient: no gradient (TF's None) */
    vg_output z = vg_reduce_sum(g, vg_stop_gradient(g, x, NULL), NULL, -1, false, NULL), dz;
    CHECK_OK(vg_gradients(g, &z, 1, &x, 1, NULL, &dz, &st), &st);
    CHECK(dz.op == NULL);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_array__grad_identity_family);
    RUN_TEST(test_array__grad_reshape_family);
    RUN_TEST(test_array__grad_transpose);
    RUN_TEST(test_array__grad_concat);
    RUN_TEST(test_array__grad_slice_pad);
    RUN_TEST(test_array__grad_pack_unpack);
    RUN_TEST(test_array__grad_tile);
    RUN_TEST(test_array__grad_gather);
    RUN_TEST(test_array__grad_segment_sum_fill_mask);
    RUN_TEST(test_array__grad_stop_and_names);
    TEST_MAIN_END();
}
