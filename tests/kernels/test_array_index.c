/* test_array_index.c - forward values and error paths of the array family's layout and
 * indexing ops: Transpose (2-D fast path, 3-D, merged dims, large parallel case),
 * ConcatV2 (every axis, negative axes, empty inputs), ConcatOffset, Slice (size -1),
 * Pad, Pack, Unpack, GatherV2 (axes, multi-dim indices), UnsortedSegmentSum, OneHot,
 * Tile, boolean_mask, and string tensors through the data-movement kernels. */
#include "test_util.h"
#include "op_test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"

/* ---- helpers ------------------------------------------------------------ */

static void expect_build_error(vg_graph *g, vg_output o, const char *msg) {
    vg_status st;
    CHECK(o.op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, msg);
}

static void expect_shape(vg_output o, const int64_t *dims, int nd) {
    vg_shape s = vg_output_shape(o);
    CHECK_EQ_INT(s.ndims, nd);
    for (int i = 0; i < nd && i < s.ndims; i++) CHECK_EQ_INT(s.dims[i], dims[i]);
}

static vg_output op2(vg_graph *g, const char *type, vg_output a, vg_output b) {
    vg_op_builder *bl = vg_op_builder_new(g, type, NULL);
    vg_op_builder_add_input(bl, a);
    vg_op_builder_add_input(bl, b);
    return vg_out(vg_op_builder_finish(bl), 0);
}

#define D(...) ((const int64_t[]){__VA_ARGS__})
#define V(...) ((const double[]){__VA_ARGS__})

/* ---- Transpose ---------------------------------------------------------- */

/* Reference N-d transpose of an iota tensor. */
static void ref_transpose(const int64_t *dims, int r, const int *perm, double *out) {
    int64_t n = 1, odims[8], istr[8], idx[8] = {0};
    for (int i = 0; i < r; i++) n *= dims[i];
    istr[r - 1] = 1;
    for (int k = r - 2; k >= 0; k--) istr[k] = istr[k + 1] * dims[k + 1];
    for (int i = 0; i < r; i++) odims[i] = dims[perm[i]];
    for (int64_t o = 0; o < n; o++) {
        int64_t src = 0;
        for (int k = 0; k < r; k++) src += idx[k] * istr[perm[k]];
        out[o] = (double)src;
        for (int k = r - 1; k >= 0; k--) {
            if (++idx[k] < odims[k]) break;
            idx[k] = 0;
        }
    }
}

static void transpose_case(vg_dtype dt, const int64_t *dims, int r, const int *perm) {
    vg_graph *g = vg_graph_new();
    int32_t p32[8];
    int64_t od[8], n = 1;
    for (int i = 0; i < r; i++) { p32[i] = perm[i]; od[i] = dims[perm[i]]; n *= dims[i]; }
    vg_output y = vg_transpose_c(g, cst(g, dt, dims, r, NULL), p32, r, NULL);
    expect_shape(y, od, r);
    double *ref = malloc(sizeof(double) * (size_t)(n ? n : 1));
    ref_transpose(dims, r, perm, ref);
    expect(run(g, y), dt, od, r, ref);
    free(ref);
    vg_graph_free(g);
}

static void test_array__transpose(void) {
    transpose_case(VG_FLOAT, D(2, 3), 2, (int[]){1, 0});
    transpose_case(VG_DOUBLE, D(37, 65), 2, (int[]){1, 0}); /* partial tiles */
    transpose_case(VG_UINT8, D(33, 5), 2, (int[]){1, 0});
    transpose_case(VG_INT64, D(2, 3, 4), 3, (int[]){2, 0, 1});
    transpose_case(VG_FLOAT, D(2, 3, 4), 3, (int[]){1, 0, 2}); /* contiguous inner rows */
    transpose_case(VG_INT32, D(2, 3, 4), 3, (int[]){0, 2, 1});
    transpose_case(VG_FLOAT, D(2, 3, 4, 5), 4, (int[]){3, 1, 2, 0});
    transpose_case(VG_FLOAT, D(2, 3, 4, 5), 4, (int[]){2, 3, 0, 1}); /* merges to 2-D */
    transpose_case(VG_FLOAT, D(1, 3, 1, 4), 4, (int[]){2, 3, 0, 1}); /* size-1 dims dropped */
    transpose_case(VG_FLOAT, D(3, 1), 2, (int[]){1, 0});             /* same layout: alias */
    transpose_case(VG_FLOAT, D(0, 3), 2, (int[]){1, 0});             /* empty */
    transpose_case(VG_FLOAT, D(300, 700), 2, (int[]){1, 0});         /* parallel */
    transpose_case(VG_FLOAT, D(40, 50, 60), 3, (int[]){2, 1, 0});
    /* runtime perm */
    vg_graph *g = vg_graph_new();
    vg_output x = cst(g, VG_FLOAT, D(2, 3), 2, NULL);
    vg_output p = vg_placeholder(g, VG_INT32, D(2), 1, "perm");
    vg_output y = vg_transpose(g, x, p, NULL);
    expect_shape(y, D(-1, -1), 2);
    CHECK_EQ_INT(strcmp(vg_op_name(y.op), "transpose"), 0);
    vg_tensor *pv = mk(VG_INT32, D(2), 1, V(1, 0)), *bad = mk(VG_INT32, D(2), 1, V(1, 1));
    vg_status st;
    expect(run_feeds(g, y, &p, &pv, 1, &st), VG_FLOAT, D(3, 2), 2, V(0, 3, 1, 4, 2, 5));
    expect_run_error(g, y, &p, &bad, 1, VG_INVALID_ARGUMENT, "0 is missing from {1,1}.");
    vg_tensor_free(pv), vg_tensor_free(bad);
    expect_build_error(g, vg_transpose_c(g, x, (int32_t[]){0, 1, 2}, 3, NULL), "transpose expects a vector of size 2");
    vg_graph_free(g);
}

/* ---- ConcatV2 ---------------------------------------------------------- */

static void test_array__concat(void) {
    vg_graph *g = vg_graph_new();
    vg_output a = cst(g, VG_FLOAT, D(2, 2), 2, V(1, 2, 3, 4)), b = cst(g, VG_FLOAT, D(2, 1), 2, V(5, 6)),
              c = cst(g, VG_FLOAT, D(1, 2), 2, V(7, 8));
    vg_output ab[2] = {a, b}, ac[2] = {a, c};
    vg_output y1 = vg_concat_c(g, ab, 2, 1, NULL);
    expect_shape(y1, D(2, 3), 2);
    CHECK_EQ_INT(strcmp(vg_op_name(y1.op), "concat"), 0);
    CHECK(vg_graph_op_by_name(g, "concat/axis") != NULL);
    expect(run(g, y1), VG_FLOAT, D(2, 3), 2, V(1, 2, 5, 3, 4, 6));
    expect(run(g, vg_concat_c(g, ab, 2, -1, NULL)), VG_FLOAT, D(2, 3), 2, V(1, 2, 5, 3, 4, 6));
    vg_output y0 = vg_concat_c(g, ac, 2, 0, NULL);
    expect_shape(y0, D(3, 2), 2);
    expect(run(g, y0), VG_FLOAT, D(3, 2), 2, V(1, 2, 3, 4, 7, 8));
    expect(run(g, vg_concat_c(g, ac, 2, -2, NULL)), VG_FLOAT, D(3, 2), 2, V(1, 2, 3, 4, 7, 8));
    /* 3-D along each axis, three inputs */
    vg_output x = cst(g, VG_INT32, D(2, 2, 2), 3, NULL), z = cst(g, VG_INT32, D(2, 2, 2), 3, V(10, 11, 12, 13, 14, 15, 16, 17));
    vg_output xzx[3] = {x, z, x};
    expect(run(g, vg_concat_c(g, xzx, 3, 0, NULL)), VG_INT32, D(6, 2, 2), 3,
           V(0, 1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15, 16, 17, 0, 1, 2, 3, 4, 5, 6, 7));
    expect(run(g, vg_concat_c(g, xzx, 3, 1, NULL)), VG_INT32, D(2, 6, 2), 3,
           V(0, 1, 2, 3, 10, 11, 12, 13, 0, 1, 2, 3, 4, 5, 6, 7, 14, 15, 16, 17, 4, 5, 6, 7));
    expect(run(g, vg_concat_c(g, xzx, 3, 2, NULL)), VG_INT32, D(2, 2, 6), 3,
           V(0, 1, 10, 11, 0, 1, 2, 3, 12, 13, 2, 3, 4, 5, 14, 15, 4, 5, 6, 7, 16, 17, 6, 7));
    /* empty piece and a single value (identity, as tf.concat) */
    vg_output e = cst(g, VG_FLOAT, D(2, 0), 2, NULL);
    vg_output ae[2] = {e, b};
    expect(run(g, vg_concat_c(g, ae, 2, 1, NULL)), VG_FLOAT, D(2, 1), 2, V(5, 6));
    vg_output one = vg_concat_c(g, &a, 1, 0, NULL);
    CHECK(one.op && strcmp(vg_op_type(one.op), "Identity") == 0);
    /* many inputs (> 8) along axis 0 */
    vg_output many[12];
    double mv[12];
    for (int i = 0; i < 12; i++) { many[i] = cst(g, VG_DOUBLE, D(1), 1, V((double)i)); mv[i] = i; }
    expect(run(g, vg_concat_c(g, many, 12, 0, NULL)), VG_DOUBLE, D(12), 1, mv);
    /* errors */
    expect_build_error(g, vg_concat_c(g, ab, 2, 0, NULL), "Dimensions of inputs should match");
    vg_graph_free(g);
    g = vg_graph_new();
    a = cst(g, VG_FLOAT, D(2, 2), 2, NULL);
    expect_build_error(g, vg_concat_c(g, (vg_output[]){a, a}, 2, 2, NULL),
                       "Expected concatenating dimensions in the range [-2, 2), but got 2");
    vg_graph_free(g);
    g = vg_graph_new();
    vg_output p = vg_placeholder(g, VG_FLOAT, D(-1, 2), 2, "p");
    a = cst(g, VG_FLOAT, D(2, 2), 2, NULL);
    vg_output pa = vg_concat_c(g, (vg_output[]){p, a}, 2, 1, NULL);
    expect_shape(pa, D(2, 4), 2); /* dim 0 merged from both inputs */
    vg_tensor *pv = mk(VG_FLOAT, D(3, 2), 2, NULL);
    expect_run_error(g, pa, &p, &pv, 1, VG_INVALID_ARGUMENT,
                     "ConcatOp : Dimensions of inputs should match: shape[0] = [3,2] vs. shape[1] = [2,2]");
    vg_tensor_free(pv);
    vg_graph_free(g);
}

static void test_array__concat_offset(void) {
    vg_graph *g = vg_graph_new();
    vg_op_builder *b = vg_op_builder_new(g, "ConcatOffset", NULL);
    vg_op_builder_add_input(b, vg_const_i32(g, 1, NULL));
    vg_op_builder_add_input(b, cst(g, VG_INT32, D(3), 1, V(2, 3, 5)));
    vg_op_builder_add_input(b, cst(g, VG_INT32, D(3), 1, V(2, 7, 5)));
    vg_op_builder_add_input(b, cst(g, VG_INT32, D(3), 1, V(2, 1, 5)));
    vg_op *op = vg_op_builder_finish(b);
    CHECK(op && vg_op_num_outputs(op) == 3);
    vg_output outs[3] = {vg_out(op, 0), vg_out(op, 1), vg_out(op, 2)};
    vg_tensor *o[3] = {NULL, NULL, NULL};
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, outs, o, 3, NULL, 0, NULL, &st), &st);
    expect(o[0], VG_INT32, D(3), 1, V(0, 0, 0));
    expect(o[1], VG_INT32, D(3), 1, V(0, 3, 0));
    expect(o[2], VG_INT32, D(3), 1, V(0, 10, 0));
    vg_session_free(s);
    vg_graph_free(g);
}

/* ---- Slice, Pad ---------------------------------------------------------- */

static void test_array__slice(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = cst(g, VG_FLOAT, D(3, 4), 2, NULL);
    vg_output y = vg_slice_c(g, x, D(1, 1), D(2, -1), 2, NULL);
    expect_shape(y, D(2, 3), 2);
    CHECK(vg_graph_op_by_name(g, "Slice/begin") && vg_graph_op_by_name(g, "Slice/size"));
    expect(run(g, y), VG_FLOAT, D(2, 3), 2, V(5, 6, 7, 9, 10, 11));
    expect(run(g, vg_slice_c(g, x, D(1, 0), D(1, 4), 2, NULL)), VG_FLOAT, D(1, 4), 2, V(4, 5, 6, 7));
    expect(run(g, vg_slice_c(g, x, D(0, 2), D(-1, 1), 2, NULL)), VG_FLOAT, D(3, 1), 2, V(2, 6, 10));
    expect(run(g, vg_slice_c(g, x, D(0, 0), D(-1, -1), 2, NULL)), VG_FLOAT, D(3, 4), 2,
           V(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11));
    expect(run(g, vg_slice_c(g, x, D(3, 0), D(0, 2), 2, NULL)), VG_FLOAT, D(0, 2), 2, NULL);
    vg_output x3 = cst(g, VG_INT64, D(2, 3, 4), 3, NULL);
    expect(run(g, vg_slice_c(g, x3, D(1, 1, 2), D(1, 2, 2), 3, NULL)), VG_INT64, D(1, 2, 2), 3, V(18, 19, 22, 23));
    expect(run(g, vg_slice_c(g, x3, D(0, 2, 0), D(2, 1, 4), 3, NULL)), VG_INT64, D(2, 1, 4), 3,
           V(8, 9, 10, 11, 20, 21, 22, 23));
    expect_build_error(g, vg_slice_c(g, x, D(1, 1), D(3, 1), 2, NULL), "Expected size[0] in [0, 2], but got 3");
    vg_graph_free(g);
    g = vg_graph_new();
    vg_output p = vg_placeholder(g, VG_FLOAT, D(-1, -1), 2, "p");
    vg_output s = vg_slice_c(g, p, D(1, 0), D(1, -1), 2, NULL);
    expect_shape(s, D(1, -1), 2);
    vg_tensor *pv = mk(VG_FLOAT, D(1, 3), 2, NULL);
    expect_run_error(g, s, &p, &pv, 1, VG_INVALID_ARGUMENT, "Expected size[0] in [0, 0], but got 1");
    vg_tensor_free(pv);
    vg_graph_free(g);
}

static vg_output pad(vg_graph *g, vg_output x, vg_output p) { return op2(g, "Pad", x, p); }

static void test_array__pad(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = cst(g, VG_FLOAT, D(2, 2), 2, V(1, 2, 3, 4));
    vg_output y = pad(g, x, cst(g, VG_INT32, D(2, 2), 2, V(1, 0, 0, 2)));
    expect_shape(y, D(3, 4), 2);
    expect(run(g, y), VG_FLOAT, D(3, 4), 2, V(0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0));
    expect(run(g, pad(g, cst(g, VG_INT32, D(3), 1, V(7, 8, 9)), cst(g, VG_INT64, D(1, 2), 2, V(2, 1)))), VG_INT32, D(6), 1,
           V(0, 0, 7, 8, 9, 0));
    expect(run(g, pad(g, vg_const_f64(g, 5, NULL), cst(g, VG_INT32, D(0, 2), 2, NULL))), VG_DOUBLE, NULL, 0, V(5));
    expect(run(g, pad(g, cst(g, VG_FLOAT, D(0, 1), 2, NULL), cst(g, VG_INT32, D(2, 2), 2, V(1, 1, 0, 0)))), VG_FLOAT,
           D(2, 1), 2, V(0, 0));
    expect_build_error(g, pad(g, x, cst(g, VG_INT32, D(2, 2), 2, V(1, -1, 0, 0))), "Paddings must be non-negative");
    vg_graph_free(g);
}

/* ---- Pack, Unpack ------------------------------------------------------- */

static void test_array__pack_unpack(void) {
    vg_graph *g = vg_graph_new();
    vg_output a = cst(g, VG_FLOAT, D(2), 1, V(1, 2)), b = cst(g, VG_FLOAT, D(2), 1, V(3, 4)),
              c = cst(g, VG_FLOAT, D(2), 1, V(5, 6));
    vg_output abc[3] = {a, b, c};
    vg_output s0 = vg_pack(g, abc, 3, 0, NULL);
    expect_shape(s0, D(3, 2), 2);
    CHECK_EQ_INT(strcmp(vg_op_name(s0.op), "stack"), 0);
    expect(run(g, s0), VG_FLOAT, D(3, 2), 2, V(1, 2, 3, 4, 5, 6));
    expect(run(g, vg_pack(g, abc, 3, 1, NULL)), VG_FLOAT, D(2, 3), 2, V(1, 3, 5, 2, 4, 6));
    expect(run(g, vg_pack(g, abc, 3, -1, NULL)), VG_FLOAT, D(2, 3), 2, V(1, 3, 5, 2, 4, 6));
    vg_output sc[2] = {vg_const_i32(g, 4, NULL), vg_const_i32(g, 9, NULL)};
    expect(run(g, vg_pack(g, sc, 2, 0, NULL)), VG_INT32, D(2), 1, V(4, 9));
    expect_build_error(g, vg_pack(g, (vg_output[]){a, cst(g, VG_FLOAT, D(3), 1, NULL)}, 2, 0, NULL),
                       "Shapes of all inputs must match");
    vg_graph_free(g);
    /* Unpack along axis 1 */
    g = vg_graph_new();
    vg_op_builder *bl = vg_op_builder_new(g, "Unpack", NULL);
    vg_op_builder_add_input(bl, cst(g, VG_INT32, D(2, 3), 2, NULL));
    vg_op_builder_set_attr_int(bl, "axis", 1);
    vg_op *u = vg_op_builder_finish(bl);
    CHECK(u && vg_op_num_outputs(u) == 3);
    int64_t num = 0;
    CHECK(vg_op_attr_int(u, "num", &num) && num == 3);
    vg_output outs[3] = {vg_out(u, 0), vg_out(u, 1), vg_out(u, 2)};
    expect_shape(outs[2], D(2), 1);
    vg_tensor *o[3];
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, outs, o, 3, NULL, 0, NULL, &st), &st);
    expect(o[0], VG_INT32, D(2), 1, V(0, 3));
    expect(o[1], VG_INT32, D(2), 1, V(1, 4));
    expect(o[2], VG_INT32, D(2), 1, V(2, 5));
    vg_session_free(s);
    vg_graph_free(g);
}

/* ---- GatherV2, UnsortedSegmentSum, OneHot -------------------------------- */

static void test_array__gather(void) {
    vg_graph *g = vg_graph_new();
    vg_output p = cst(g, VG_FLOAT, D(3, 2), 2, V(1, 2, 3, 4, 5, 6));
    vg_output y = vg_gather(g, p, cst(g, VG_INT32, D(4), 1, V(2, 0, 2, 1)), 0, NULL);
    expect_shape(y, D(4, 2), 2);
    CHECK(vg_graph_op_by_name(g, "GatherV2/axis") && strcmp(vg_op_name(y.op), "GatherV2") == 0);
    expect(run(g, y), VG_FLOAT, D(4, 2), 2, V(5, 6, 1, 2, 5, 6, 3, 4));
    expect(run(g, vg_gather(g, p, cst(g, VG_INT64, D(2, 2), 2, V(1, 1, 0, 2)), 0, NULL)), VG_FLOAT, D(2, 2, 2), 3,
           V(3, 4, 3, 4, 1, 2, 5, 6));
    expect(run(g, vg_gather(g, p, cst(g, VG_INT32, D(3), 1, V(1, 1, 0)), 1, NULL)), VG_FLOAT, D(3, 3), 2,
           V(2, 2, 1, 4, 4, 3, 6, 6, 5));
    expect(run(g, vg_gather(g, p, cst(g, VG_INT32, D(2), 1, V(1, 0)), -1, NULL)), VG_FLOAT, D(3, 2), 2,
           V(2, 1, 4, 3, 6, 5));
    expect(run(g, vg_gather(g, p, vg_const_i32(g, 1, NULL), 0, NULL)), VG_FLOAT, D(2), 1, V(3, 4));
    expect(run(g, vg_gather(g, p, cst(g, VG_INT32, D(0), 1, NULL), 0, NULL)), VG_FLOAT, D(0, 2), 2, NULL);
    vg_output x3 = cst(g, VG_INT32, D(2, 3, 2), 3, NULL);
    expect(run(g, vg_gather(g, x3, cst(g, VG_INT32, D(2), 1, V(2, 0)), 1, NULL)), VG_INT32, D(2, 2, 2), 3,
           V(4, 5, 0, 1, 10, 11, 6, 7));
    expect_run_error(g, vg_gather(g, p, cst(g, VG_INT32, D(2, 2), 2, V(0, 1, 3, 0)), 0, NULL), NULL, NULL, 0,
                     VG_INVALID_ARGUMENT, "indices[1,0] = 3 is not in [0, 3)");
    expect_run_error(g, vg_gather(g, p, cst(g, VG_INT32, D(1), 1, V(-1)), 0, NULL), NULL, NULL, 0, VG_INVALID_ARGUMENT,
                     "indices[0] = -1 is not in [0, 3)");
    expect_build_error(g, vg_gather(g, p, cst(g, VG_INT32, D(1), 1, V(0)), 2, NULL),
                       "Expected axis in the range [-2, 2), but got 2");
    vg_graph_free(g);
    /* large gather runs in parallel */
    g = vg_graph_new();
    int64_t rows = 5000;
    vg_tensor *idx = vg_tensor_new(VG_INT32, &rows, 1, NULL);
    for (int64_t i = 0; i < rows; i++) ((int32_t *)vg_tensor_data(idx))[i] = (int32_t)((i * 7) % 100);
    vg_output gy = vg_gather(g, cst(g, VG_FLOAT, D(100, 64), 2, NULL), vg_const(g, idx, NULL), 0, NULL);
    vg_tensor *o = run(g, gy);
    int bad = 0;
    for (int64_t i = 0; o && i < rows * 64; i++) bad += get(o, i) != (double)(((i / 64) * 7) % 100 * 64 + i % 64);
    CHECK_EQ_INT(bad, 0);
    kt_teardown(g, NULL, (vg_tensor *[]){o, idx}, 2, NULL, 0);
}

static vg_output segsum(vg_graph *g, vg_output d, vg_output ids, vg_output n) {
    vg_op_builder *b = vg_op_builder_new(g, "UnsortedSegmentSum", NULL);
    vg_op_builder_add_input(b, d);
    vg_op_builder_add_input(b, ids);
    vg_op_builder_add_input(b, n);
    return vg_out(vg_op_builder_finish(b), 0);
}

static void test_array__unsorted_segment_sum(void) {
    vg_graph *g = vg_graph_new();
    vg_output d = cst(g, VG_FLOAT, D(4, 2), 2, V(1, 2, 3, 4, 5, 6, 7, 8));
    vg_output y = segsum(g, d, cst(g, VG_INT32, D(4), 1, V(2, 0, 2, -1)), vg_const_i32(g, 3, NULL));
    expect_shape(y, D(3, 2), 2);
    expect(run(g, y), VG_FLOAT, D(3, 2), 2, V(3, 4, 0, 0, 6, 8));
    expect(run(g, segsum(g, cst(g, VG_INT64, D(2, 2), 2, V(1, 2, 3, 4)), cst(g, VG_INT64, D(2, 2), 2, V(0, 0, 1, 0)),
                         vg_const_i64(g, 2, NULL))),
           VG_INT64, D(2), 1, V(7, 3));
    expect_run_error(g, segsum(g, d, cst(g, VG_INT32, D(4), 1, V(0, 1, 5, 0)), vg_const_i32(g, 3, NULL)), NULL, NULL, 0,
                     VG_INVALID_ARGUMENT, "indices[2] = 5 is not in [0, 3)");
    vg_graph_free(g);
}

static void test_array__one_hot(void) {
    vg_graph *g = vg_graph_new();
    vg_output y = vg_one_hot(g, cst(g, VG_INT32, D(3), 1, V(0, 2, -1)), 3, 1.0f, 0.0f, NULL);
    expect_shape(y, D(3, 3), 2);
    CHECK(vg_graph_op_by_name(g, "one_hot/depth") && strcmp(vg_op_name(y.op), "one_hot") == 0);
    expect(run(g, y), VG_FLOAT, D(3, 3), 2, V(1, 0, 0, 0, 0, 1, 0, 0, 0));
    expect(run(g, vg_one_hot(g, cst(g, VG_INT64, D(2, 2), 2, V(1, 0, 3, 1)), 2, 5.0f, -1.0f, NULL)), VG_FLOAT, D(2, 2, 2),
           3, V(-1, 5, 5, -1, -1, -1, -1, 5));
    /* axis 0 through the generic builder */
    vg_op_builder *b = vg_op_builder_new(g, "OneHot", NULL);
    vg_op_builder_add_input(b, cst(g, VG_UINT8, D(2), 1, V(1, 0)));
    vg_op_builder_add_input(b, vg_const_i32(g, 3, NULL));
    vg_op_builder_add_input(b, vg_const_i32(g, 7, NULL));
    vg_op_builder_add_input(b, vg_const_i32(g, 0, NULL));
    vg_op_builder_set_attr_int(b, "axis", 0);
    expect(run(g, vg_out(vg_op_builder_finish(b), 0)), VG_INT32, D(3, 2), 2, V(0, 7, 7, 0, 0, 0));
    vg_graph_free(g);
}

/* ---- Tile ---------------------------------------------------------------- */

static void test_array__tile(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = cst(g, VG_FLOAT, D(2, 2), 2, V(1, 2, 3, 4));
    vg_output y = vg_tile(g, x, cst(g, VG_INT32, D(2), 1, V(2, 3)), NULL);
    expect_shape(y, D(4, 6), 2);
    expect(run(g, y), VG_FLOAT, D(4, 6), 2,
           V(1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4));
    expect(run(g, vg_tile(g, cst(g, VG_INT32, D(3), 1, V(1, 2, 3)), cst(g, VG_INT64, D(1), 1, V(2)), NULL)), VG_INT32, D(6), 1,
           V(1, 2, 3, 1, 2, 3));
    expect(run(g, vg_tile(g, cst(g, VG_INT32, D(2, 1, 2), 3, NULL), cst(g, VG_INT32, D(3), 1, V(1, 2, 1)), NULL)), VG_INT32,
           D(2, 2, 2), 3, V(0, 1, 0, 1, 2, 3, 2, 3));
    expect(run(g, vg_tile(g, x, cst(g, VG_INT32, D(2), 1, V(0, 2)), NULL)), VG_FLOAT, D(0, 4), 2, NULL);
    expect(run(g, vg_tile(g, x, cst(g, VG_INT32, D(2), 1, V(1, 1)), NULL)), VG_FLOAT, D(2, 2), 2, V(1, 2, 3, 4));
    expect(run(g, vg_tile(g, vg_const_f32(g, 3, NULL), cst(g, VG_INT32, D(0), 1, NULL), NULL)), VG_FLOAT, NULL, 0, V(3));
    expect_build_error(g, vg_tile(g, x, cst(g, VG_INT32, D(3), 1, V(1, 1, 1)), NULL),
                       "Expected multiples argument to be a vector of length 2 but got length 3");
    vg_graph_free(g);
}

/* ---- boolean_mask, strings ------------------------------------------------ */

static void test_array__boolean_mask(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = cst(g, VG_FLOAT, D(4, 2), 2, NULL);
    vg_output m = cst(g, VG_BOOL, D(4), 1, V(1, 0, 0, 1));
    vg_output y = vg_boolean_mask(g, x, m, NULL);
    CHECK(y.op && strcmp(vg_op_name(y.op), "boolean_mask/GatherV2") == 0);
    CHECK(vg_graph_op_by_name(g, "boolean_mask/Where") && vg_graph_op_by_name(g, "boolean_mask/Squeeze") &&
          vg_graph_op_by_name(g, "boolean_mask/Reshape_1"));
    expect_shape(y, D(-1, 2), 2);
    expect(run(g, y), VG_FLOAT, D(2, 2), 2, V(0, 1, 6, 7));
    vg_output y2 = vg_boolean_mask(g, cst(g, VG_INT32, D(3), 1, V(5, 6, 7)), cst(g, VG_BOOL, D(3), 1, V(0, 0, 0)), NULL);
    CHECK(y2.op && strncmp(vg_op_name(y2.op), "boolean_mask_1/", 15) == 0);
    expect(run(g, y2), VG_INT32, D(0), 1, NULL);
    vg_graph_free(g);
}

static vg_output str_const(vg_graph *g, const int64_t *dims, int nd, const char *const *s) {
    return vg_const_array(g, VG_STRING, dims, nd, s, NULL);
}

static void expect_strings(vg_tensor *t, const int64_t *dims, int nd, const char *const *want) {
    if (!t) { vg_test_failures++; return; }
    CHECK_EQ_INT(vg_tensor_dtype(t), VG_STRING);
    CHECK_EQ_INT(vg_tensor_ndims(t), nd);
    for (int i = 0; i < nd && i < vg_tensor_ndims(t); i++) CHECK_EQ_INT(vg_tensor_dim(t, i), dims[i]);
    for (int64_t i = 0; i < vg_tensor_num_elements(t); i++) {
        const char *s = vg_tensor_string(t, i, NULL);
        if (strcmp(s, want[i]) != 0) {
            fprintf(stderr, "string %lld: \"%s\", expected \"%s\"\n", (long long)i, s, want[i]);
            vg_test_failures++;
        }
    }
    vg_tensor_free(t);
}

static void test_array__strings(void) {
    vg_graph *g = vg_graph_new();
    const char *abcd[4] = {"a", "bb", "ccc", "dddd"};
    vg_output s = str_const(g, D(2, 2), 2, abcd);
    const char *t[4] = {"a", "ccc", "bb", "dddd"};
    expect_strings(run(g, vg_transpose_c(g, s, (int32_t[]){1, 0}, 2, NULL)), D(2, 2), 2, t);
    const char *c1[8] = {"a", "bb", "a", "bb", "ccc", "dddd", "ccc", "dddd"};
    expect_strings(run(g, vg_concat_c(g, (vg_output[]){s, s}, 2, 1, NULL)), D(2, 4), 2, c1);
    const char *gt[2] = {"ccc", "dddd"};
    expect_strings(run(g, vg_gather(g, s, vg_const_i32(g, 1, NULL), 0, NULL)), D(2), 1, gt);
    const char *sl[2] = {"bb", "dddd"};
    expect_strings(run(g, vg_slice_c(g, s, D(0, 1), D(2, 1), 2, NULL)), D(2, 1), 2, sl);
    const char *tl[8] = {"a", "bb", "a", "bb", "ccc", "dddd", "ccc", "dddd"};
    expect_strings(run(g, vg_tile(g, s, cst(g, VG_INT32, D(2), 1, V(1, 2)), NULL)), D(2, 4), 2, tl);
    const char *pk[8] = {"a", "bb", "ccc", "dddd", "a", "bb", "ccc", "dddd"};
    expect_strings(run(g, vg_pack(g, (vg_output[]){s, s}, 2, 0, NULL)), D(2, 2, 2), 3, pk);
    const char *pd[6] = {"", "", "a", "bb", "ccc", "dddd"};
    expect_strings(run(g, pad(g, s, cst(g, VG_INT32, D(2, 2), 2, V(1, 0, 0, 0)))), D(3, 2), 2, pd);
    expect_strings(run(g, vg_reshape_c(g, s, D(4), 1, NULL)), D(4), 1, abcd);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_array__transpose);
    RUN_TEST(test_array__concat);
    RUN_TEST(test_array__concat_offset);
    RUN_TEST(test_array__slice);
    RUN_TEST(test_array__pad);
    RUN_TEST(test_array__pack_unpack);
    RUN_TEST(test_array__gather);
    RUN_TEST(test_array__unsorted_segment_sum);
    RUN_TEST(test_array__one_hot);
    RUN_TEST(test_array__tile);
    RUN_TEST(test_array__boolean_mask);
    RUN_TEST(test_array__strings);
    TEST_MAIN_END();
}
