/*
 * math_rounding_ops.c - rounding and integer-division ops of TF's math family:
 * Floor, Ceil, Round (half to even; identity on integers), Rint, FloorDiv, FloorMod and
 * TruncateDiv. Kernels follow TF 1.15's cwise_ops.h functors (floor_div_real,
 * google_floor_div, floor_fmod, google_floor_mod, safe_div: an integer divisor of 0
 * fails with "Integer division by zero"); INT_MIN / -1 wraps instead of trapping.
 * Gradients as math_grad.py: Floor, Ceil, Round, Rint, FloorDiv and TruncateDiv have
 * none (None), FloorMod gives (grad, -grad * floor_div(x, y)).
 */
#include "kernels/ew_internal.h"
#include <math.h>

/* ---- unary rounding -------------------------------------------------------- */

/* Eigen's scalar_round_op_google / round half to even, without touching fenv. */
static inline float round_even_f(float x) {
    float r = floorf(x), d = x - r;
    if (d > 0.5f || (d == 0.5f && fmodf(r, 2.0f) != 0.0f)) r += 1.0f;
    return r;
}
static inline double round_even_d(double x) {
    double r = floor(x), d = x - r;
    if (d > 0.5 || (d == 0.5 && fmod(r, 2.0) != 0.0)) r += 1.0;
    return r;
}

VG__EW_UN_F(floor_op, floorf(x), floor(x))
VG__EW_UN_F(ceil_op, ceilf(x), ceil(x))
VG__EW_UN_F(round_op, round_even_f(x), round_even_d(x))

static void round_i32(const void *x, void *o, int64_t n, double a) {
    (void)a;
    memcpy(o, x, sizeof(int32_t) * (size_t)n);
}
static void round_i64(const void *x, void *o, int64_t n, double a) {
    (void)a;
    memcpy(o, x, sizeof(int64_t) * (size_t)n);
}

static const vg__ew_un_tbl t_floor = {floor_op_f32, floor_op_f64, NULL, NULL};
static const vg__ew_un_tbl t_ceil = {ceil_op_f32, ceil_op_f64, NULL, NULL};
static const vg__ew_un_tbl t_round = {round_op_f32, round_op_f64, round_i32, round_i64};
static const vg__ew_un_tbl t_rint = {round_op_f32, round_op_f64, NULL, NULL};

#define UNARY(name, tbl)                                                                          \
    static vg_code shape_##name(vg_op *op, vg_status *st) { return vg__ew_unary_shape(op, &tbl, st); } \
    static vg_code kernel_##name(vg__kctx *ctx) { return vg__ew_unary_kernel(ctx, &tbl, NULL, 0); }
UNARY(floor, t_floor)
UNARY(ceil, t_ceil)
UNARY(round, t_round)
UNARY(rint, t_rint)

/* ---- integer / floor division ------------------------------------------------ */

/* floor(x / y) for signed integers: truncating quotient, one less when the signs
 * differ and there is a remainder. y == -1 wraps (no INT_MIN / -1 trap). */
#define SDIV(T, U)                                                                         \
    static inline T floordiv_##T(T x, T y) {                                               \
        if (y == -1) return (T)((U)0 - (U)x);                                              \
        T q = x / y;                                                                       \
        if ((x % y != 0) && ((x < 0) != (y < 0))) q--;                                     \
        return q;                                                                          \
    }                                                                                      \
    static inline T floormod_##T(T x, T y) {                                               \
        if (y == -1) return 0;                                                             \
        T m = x % y;                                                                       \
        return (m != 0 && ((x < 0) != (y < 0))) ? (T)(m + y) : m;                          \
    }                                                                                      \
    static inline T truncdiv_##T(T x, T y) { return y == -1 ? (T)((U)0 - (U)x) : (T)(x / y); }
SDIV(int32_t, uint32_t)
SDIV(int64_t, uint64_t)

static inline float floormod_f(float x, float y) {
    float m = fmodf(x, y);
    return (m != 0.0f && ((y < 0.0f) != (m < 0.0f))) ? m + y : m;
}
static inline double floormod_d(double x, double y) {
    double m = fmod(x, y);
    return (m != 0.0 && ((y < 0.0) != (m < 0.0))) ? m + y : m;
}

VG__EW_ELEM(fdiv_f32, float, floorf(x / y))
VG__EW_ELEM(fdiv_f64, double, floor(x / y))
VG__EW_ELEM(fdiv_i32, int32_t, floordiv_int32_t(x, y))
VG__EW_ELEM(fdiv_i64, int64_t, floordiv_int64_t(x, y))
VG__EW_ELEM(fdiv_u8, uint8_t, (uint8_t)(x / y))
VG__EW_ELEM(fmod_f32, float, floormod_f(x, y))
VG__EW_ELEM(fmod_f64, double, floormod_d(x, y))
VG__EW_ELEM(fmod_i32, int32_t, floormod_int32_t(x, y))
VG__EW_ELEM(fmod_i64, int64_t, floormod_int64_t(x, y))
VG__EW_ELEM(tdiv_i32, int32_t, truncdiv_int32_t(x, y))
VG__EW_ELEM(tdiv_i64, int64_t, truncdiv_int64_t(x, y))
VG__EW_ELEM(tdiv_u8, uint8_t, (uint8_t)(x / y))

static const vg__ew_elem_tbl t_floordiv = {fdiv_f32, fdiv_f64, fdiv_i32, fdiv_i64, fdiv_u8};
static const vg__ew_elem_tbl t_floormod = {fmod_f32, fmod_f64, fmod_i32, fmod_i64, NULL};
/* TF 1.15 has CPU TruncateDiv kernels for integer types only. */
static const vg__ew_elem_tbl t_truncdiv = {NULL, NULL, tdiv_i32, tdiv_i64, tdiv_u8};

#define BCAST(name, tbl)                                                                           \
    static vg_code shape_##name(vg_op *op, vg_status *st) { return vg__ew_bcast_shape(op, &tbl, st); } \
    static vg_code kernel_##name(vg__kctx *ctx) { return vg__ew_bcast_kernel(ctx, &tbl, true); }
BCAST(floordiv, t_floordiv)
BCAST(floormod, t_floormod)
BCAST(truncdiv, t_truncdiv)

/* ---- gradients ------------------------------------------------------------- */

/* Floor, Ceil, Round, Rint, FloorDiv, TruncateDiv: None for every input. */
static vg_code grad_none(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    (void)op, (void)dy, (void)dx;
    return vg_graph_status(g, NULL);
}

/* _FloorModGrad: (grad, grad * -floor_div(x, y)), each reduced over broadcasting. */
static vg_code grad_floormod(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = vg_op_input(op, 0), y = vg_op_input(op, 1);
    vg_output floor_xy = vg_floor_div(g, x, y, "FloorDiv");
    vg_output gy = vg_mul(g, dy[0], vg_neg(g, floor_xy, "Neg"), "mul");
    vg__ew_bcast_reduce(g, op, dy[0], gy, dx);
    return vg_graph_status(g, NULL);
}

/* ---- builders ---------------------------------------------------------------- */

vg_output vg_floor(vg_graph *g, vg_output x, const char *name) { return vg__ew_build1(g, "Floor", x, name); }
vg_output vg_ceil(vg_graph *g, vg_output x, const char *name) { return vg__ew_build1(g, "Ceil", x, name); }
vg_output vg_round(vg_graph *g, vg_output x, const char *name) { return vg__ew_build1(g, "Round", x, name); }
vg_output vg_rint(vg_graph *g, vg_output x, const char *name) { return vg__ew_build1(g, "Rint", x, name); }
vg_output vg_floor_div(vg_graph *g, vg_output x, vg_output y, const char *name) {
    return vg__ew_build2(g, "FloorDiv", x, y, name);
}
vg_output vg_floor_mod(vg_graph *g, vg_output x, vg_output y, const char *name) {
    return vg__ew_build2(g, "FloorMod", x, y, name);
}
vg_output vg_truncate_div(vg_graph *g, vg_output x, vg_output y, const char *name) {
    return vg__ew_build2(g, "TruncateDiv", x, y, name);
}

const vg__op_def vg__ops_math_rounding[] = {
    {"Floor", 1, 1, 0, 0, shape_floor, kernel_floor, grad_none},
    {"Ceil", 1, 1, 0, 0, shape_ceil, kernel_ceil, grad_none},
    {"Round", 1, 1, 0, 0, shape_round, kernel_round, grad_none},
    {"Rint", 1, 1, 0, 0, shape_rint, kernel_rint, grad_none},
    {"FloorDiv", 2, 2, 0, 0, shape_floordiv, kernel_floordiv, grad_none},
    {"FloorMod", 2, 2, 0, 0, shape_floormod, kernel_floormod, grad_floormod},
    {"TruncateDiv", 2, 2, 0, 0, shape_truncdiv, kernel_truncdiv, grad_none},
    {0},
};
