/*
 * math_cwise_ops.c - the element-wise math ops (TF's cwise_ops):
 *   - broadcasting binary ops (AddV2, Add, Sub, Mul, RealDiv, Maximum, Minimum, Pow,
 *     SquaredDifference, comparisons, LogicalAnd/Or) and TF's SqrtGrad, RsqrtGrad and
 *     ReciprocalGrad helper ops,
 *   - unary ops (Neg, Square, Sqrt, Rsqrt, Exp, Log, Abs, Sign, Reciprocal,
 *     LogicalNot, IsFinite), Select (TF1), AddN, Cast, CheckNumerics,
 * with their shape functions, kernels and gradients (TF's math_grad.py), the public
 * builders of vigil/ops.h "math ops", vg__shape_broadcast and the op table
 * vg__ops_math_cwise. Reductions and ArgMax/ArgMin are math_reduce_ops.c's family.
 *
 * Kernels: a binary op is planned once per call (NumPy broadcasting, adjacent dims
 * with the same broadcast pattern collapsed, size-1 dims dropped); the innermost
 * collapsed dim then runs one of three tight loops (vector-vector, scalar-vector,
 * vector-scalar), so same-shape, scalar and row-vector ([N,C] op [C]) operands all
 * reduce to a few calls of a loop gcc vectorizes. Large outputs are split over the
 * intra-op pool by flat element range.
 */
#include "core/half.h"
#include "kernels/math/math_internal.h"
#include "kernels/simd.h"
#include "vigil/ops_ext.h"
#include <complex.h>
#include <math.h>
#include <stdio.h>

#if defined(__GNUC__) && !defined(__clang__)
/* The default build is -O2, where gcc 12 vectorizes almost nothing; these loops are
 * written to be vectorized (restrict pointers, no calls, no branches). */
#pragma GCC optimize("O3")
#endif

/* ------------------------------------------------------------------------ */
/* dtype helpers */

int vg__math_slot(vg_dtype dt) {
    switch (dt) {
    case VG_FLOAT: return VG__MS_F32;
    case VG_DOUBLE: return VG__MS_F64;
    case VG_INT32: return VG__MS_I32;
    case VG_INT64: return VG__MS_I64;
    case VG_UINT8: return VG__MS_U8;
    case VG_BOOL: return VG__MS_BOOL;
    case VG_COMPLEX64: return VG__MS_C64;
    case VG_COMPLEX128: return VG__MS_C128;
    default: return -1;
    }
}

vg_code vg__math_check_dtype(const char *what, vg_dtype dt, unsigned mask, vg_status *st) {
    static const vg_dtype all[] = {VG_FLOAT, VG_DOUBLE, VG_INT32, VG_INT64, VG_UINT8, VG_BOOL, VG_HALF,
                                   VG_BFLOAT16, VG_COMPLEX64, VG_COMPLEX128};
    if ((unsigned)dt < 32 && (mask & VG__M(dt))) return VG_OK;
    char allowed[128] = "";
    size_t len = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (!(mask & VG__M(all[i]))) continue;
        len += (size_t)snprintf(allowed + len, sizeof allowed - len, "%s%s", len ? ", " : "",
                                vg_dtype_name(all[i]));
        if (len >= sizeof allowed) break;
    }
    return vg_status_set(st, VG_INVALID_ARGUMENT, "%s has dtype %s, which is not supported (allowed: %s)",
                         what, vg_dtype_name(dt), allowed);
}

/* Checks attr `name` (if present) agrees with the input dtype dt, then defaults it. */
static vg_code check_type_attr(vg_op *op, const char *name, vg_dtype dt, vg_status *st) {
    vg_dtype t;
    if (vg_op_attr_type_(op, name, &t) && t != dt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "attr '%s' is %s but the input has dtype %s", name,
                             vg_dtype_name(t), vg_dtype_name(dt));
    vg__op_set_default_attr_type(op, name, dt);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* Shapes */

vg_code vg__shape_broadcast(const vg_shape *a, const vg_shape *b, vg_shape *out, vg_status *st) {
    if (a->ndims < 0 || b->ndims < 0) {
        *out = vg_shape_unknown();
        return VG_OK;
    }
    vg_shape o;
    memset(&o, 0, sizeof o);
    o.ndims = a->ndims > b->ndims ? a->ndims : b->ndims;
    for (int i = 0; i < o.ndims; i++) {
        int ia = i - (o.ndims - a->ndims), ib = i - (o.ndims - b->ndims);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1, d;
        /* As TF's BroadcastBinaryOpOutputShapeFnHelper (-1 = unknown). */
        if (da > 1) {
            if (db >= 0 && db != 1 && db != da) goto bad;
            d = da;
        } else if (db > 1) {
            if (da >= 0 && da != 1) goto bad;
            d = db;
        } else if (da == 1) {
            d = db;
        } else if (db == 1) {
            d = da;
        } else if (da < 0 && db < 0) {
            d = -1;
        } else {
            d = 0; /* 0 and 0, or 0 and unknown */
        }
        o.dims[i] = d;
    }
    *out = o;
    return VG_OK;
bad:;
    char sa[128], sb[128];
    return vg_status_set(st, VG_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s",
                         vg_shape_str(a, sa, sizeof sa), vg_shape_str(b, sb, sizeof sb));
}

/* Merges two shapes that must be equal (unknown dims/rank take the other's). */
static vg_code merge_shapes(const vg_shape *a, const vg_shape *b, vg_shape *out, const char *what,
                            vg_status *st) {
    if (a->ndims < 0) { *out = *b; return VG_OK; }
    if (b->ndims < 0) { *out = *a; return VG_OK; }
    vg_shape o = *a;
    bool ok = a->ndims == b->ndims;
    for (int i = 0; ok && i < a->ndims; i++) {
        if (a->dims[i] < 0) o.dims[i] = b->dims[i];
        else if (b->dims[i] >= 0 && b->dims[i] != a->dims[i]) ok = false;
    }
    if (!ok) {
        char sa[128], sb[128];
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s must have the same shape, but are %s and %s", what,
                             vg_shape_str(a, sa, sizeof sa), vg_shape_str(b, sb, sizeof sb));
    }
    *out = o;
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* Binary inner loops. Each op/dtype gets three loops over n elements: vv (both
 * operands vectors), sv (a is one scalar), vs (b is one scalar). The expression sees
 * the operands as x and y. Integer arithmetic wraps (through unsigned) as TF does. */

typedef void (*bin_fn)(const void *a, const void *b, void *o, int64_t n);
typedef struct bin_impl { bin_fn vv, sv, vs; } bin_impl;

#define BIN3_(ATTR, NAME, TI, TO, EXPR)                                                      \
    ATTR static void NAME##_vv(const void *a_, const void *b_, void *o_, int64_t n) {       \
        const TI *restrict a = a_, *restrict b = b_;                                 \
        TO *restrict o = o_;                                                           \
        for (int64_t i = 0; i < n; i++) { TI x = a[i], y = b[i]; o[i] = (TO)(EXPR); } \
    }                                                                                  \
    ATTR static void NAME##_sv(const void *a_, const void *b_, void *o_, int64_t n) {       \
        const TI x = *(const TI *)a_;                                                  \
        const TI *restrict b = b_;                                                     \
        TO *restrict o = o_;                                                           \
        for (int64_t i = 0; i < n; i++) { TI y = b[i]; o[i] = (TO)(EXPR); }           \
    }                                                                                  \
    ATTR static void NAME##_vs(const void *a_, const void *b_, void *o_, int64_t n) {       \
        const TI y = *(const TI *)b_;                                                  \
        const TI *restrict a = a_;                                                     \
        TO *restrict o = o_;                                                           \
        for (int64_t i = 0; i < n; i++) { TI x = a[i]; o[i] = (TO)(EXPR); }           \
    }
#define BIN3(NAME, TI, TO, EXPR) BIN3_(, NAME, TI, TO, EXPR)
/* float arithmetic also gets AVX-512 / AVX2 clones (simd.h): the baseline build only
 * vectorizes 4 floats wide */
#define BIN3S(NAME, TI, TO, EXPR) BIN3_(VG_SIMD_CLONES, NAME, TI, TO, EXPR)
#define BI(NAME) {NAME##_vv, NAME##_sv, NAME##_vs}

/* Wrapping integer arithmetic. */
#define WRAP(T, U, e) ((T)(U)(e))
#define IADD(T, U) WRAP(T, U, (U)x + (U)y)
#define ISUB(T, U) WRAP(T, U, (U)x - (U)y)
#define IMUL(T, U) WRAP(T, U, (U)x * (U)y)
#define ISQD(T, U) WRAP(T, U, ((U)x - (U)y) * ((U)x - (U)y))

/* Integer power by squaring (exponent already checked to be >= 0), wrapping. */
static inline int32_t ipow32(int32_t b, int32_t e) {
    uint32_t r = 1, p = (uint32_t)b;
    while (e > 0) { if (e & 1) r *= p; p *= p; e >>= 1; }
    return (int32_t)r;
}
static inline int64_t ipow64(int64_t b, int64_t e) {
    uint64_t r = 1, p = (uint64_t)b;
    while (e > 0) { if (e & 1) r *= p; p *= p; e >>= 1; }
    return (int64_t)r;
}

BIN3S(add_f32, float, float, x + y)
BIN3S(add_f64, double, double, x + y)
BIN3(add_i32, int32_t, int32_t, IADD(int32_t, uint32_t))
BIN3(add_i64, int64_t, int64_t, IADD(int64_t, uint64_t))
BIN3S(sub_f32, float, float, x - y)
BIN3S(sub_f64, double, double, x - y)
BIN3(sub_i32, int32_t, int32_t, ISUB(int32_t, uint32_t))
BIN3(sub_i64, int64_t, int64_t, ISUB(int64_t, uint64_t))
BIN3S(mul_f32, float, float, x * y)
BIN3S(mul_f64, double, double, x * y)
BIN3(mul_i32, int32_t, int32_t, IMUL(int32_t, uint32_t))
BIN3(mul_i64, int64_t, int64_t, IMUL(int64_t, uint64_t))
BIN3S(div_f32, float, float, x / y)
BIN3S(div_f64, double, double, x / y)
/* std::max / std::min, as Eigen's scalar_max_op / scalar_min_op. */
BIN3S(max_f32, float, float, x < y ? y : x)
BIN3S(max_f64, double, double, x < y ? y : x)
BIN3(max_i32, int32_t, int32_t, x < y ? y : x)
BIN3(max_i64, int64_t, int64_t, x < y ? y : x)
BIN3S(min_f32, float, float, y < x ? y : x)
BIN3S(min_f64, double, double, y < x ? y : x)
BIN3(min_i32, int32_t, int32_t, y < x ? y : x)
BIN3(min_i64, int64_t, int64_t, y < x ? y : x)
BIN3(pow_f32, float, float, powf(x, y))
BIN3(pow_f64, double, double, pow(x, y))
BIN3(pow_i32, int32_t, int32_t, ipow32(x, y))
BIN3(pow_i64, int64_t, int64_t, ipow64(x, y))
BIN3S(sqd_f32, float, float, (x - y) * (x - y))
BIN3S(sqd_f64, double, double, (x - y) * (x - y))
BIN3(sqd_i32, int32_t, int32_t, ISQD(int32_t, uint32_t))
BIN3(sqd_i64, int64_t, int64_t, ISQD(int64_t, uint64_t))
/* complex64 / complex128 (C's float _Complex / double _Complex: TF's layout) */
typedef float _Complex cf32;
typedef double _Complex cf64;
BIN3(add_c64, cf32, cf32, x + y)
BIN3(add_c128, cf64, cf64, x + y)
BIN3(sub_c64, cf32, cf32, x - y)
BIN3(sub_c128, cf64, cf64, x - y)
BIN3(mul_c64, cf32, cf32, x * y)
BIN3(mul_c128, cf64, cf64, x * y)
BIN3(div_c64, cf32, cf32, x / y)
BIN3(div_c128, cf64, cf64, x / y)
BIN3(eq_c64, cf32, uint8_t, x == y)
BIN3(eq_c128, cf64, uint8_t, x == y)
BIN3(ne_c64, cf32, uint8_t, x != y)
BIN3(ne_c128, cf64, uint8_t, x != y)
/* Eigen's gradient ops on complex use the conjugate of the output: 0.5 dy / conj(y),
 * -0.5 (dy conj(y)) conj(y)^2, -conj(y)^2 dy. */
BIN3(sqrtg_c64, cf32, cf32, 0.5f * y / conjf(x))
BIN3(sqrtg_c128, cf64, cf64, 0.5 * y / conj(x))
BIN3(rsqrtg_c64, cf32, cf32, -0.5f * (y * conjf(x)) * (conjf(x) * conjf(x)))
BIN3(rsqrtg_c128, cf64, cf64, -0.5 * (y * conj(x)) * (conj(x) * conj(x)))
BIN3(recipg_c64, cf32, cf32, -conjf(x) * conjf(x) * y)
BIN3(recipg_c128, cf64, cf64, -conj(x) * conj(x) * y)
/* Comparisons write bool as uint8_t 0/1. */
#define CMP5(OP, EXPR)                         \
    BIN3(OP##_f32, float, uint8_t, EXPR)       \
    BIN3(OP##_f64, double, uint8_t, EXPR)      \
    BIN3(OP##_i32, int32_t, uint8_t, EXPR)     \
    BIN3(OP##_i64, int64_t, uint8_t, EXPR)     \
    BIN3(OP##_u8, uint8_t, uint8_t, EXPR)
CMP5(gt, x > y)
CMP5(ge, x >= y)
CMP5(lt, x < y)
CMP5(le, x <= y)
CMP5(eq, x == y)
CMP5(ne, x != y)
BIN3(eq_b, uint8_t, uint8_t, (x != 0) == (y != 0))
BIN3(ne_b, uint8_t, uint8_t, (x != 0) != (y != 0))
BIN3(land_b, uint8_t, uint8_t, (x != 0) & (y != 0))
BIN3(lor_b, uint8_t, uint8_t, (x != 0) | (y != 0))
/* Gradient helpers (x = y of the forward op, y = dy), as Eigen's scalar_*_gradient_op. */
BIN3(sqrtg_f32, float, float, 0.5f * y / x)
BIN3(sqrtg_f64, double, double, 0.5 * y / x)
BIN3(rsqrtg_f32, float, float, -0.5f * (y * x) * (x * x))
BIN3(rsqrtg_f64, double, double, -0.5 * (y * x) * (x * x))
BIN3(recipg_f32, float, float, -x * x * y)
BIN3(recipg_f64, double, double, -x * x * y)

enum {
    B_ADD, B_SUB, B_MUL, B_DIV, B_MAX, B_MIN, B_POW, B_SQDIFF,
    B_GT, B_GE, B_LT, B_LE, B_EQ, B_NE, B_LAND, B_LOR,
    B_SQRTG, B_RSQRTG, B_RECIPG, B_N
};

#define NUM4(OP) {[VG__MS_F32] = BI(OP##_f32), [VG__MS_F64] = BI(OP##_f64), \
                  [VG__MS_I32] = BI(OP##_i32), [VG__MS_I64] = BI(OP##_i64)}
#define FLT2(OP) {[VG__MS_F32] = BI(OP##_f32), [VG__MS_F64] = BI(OP##_f64)}
#define NUMC(OP) {[VG__MS_F32] = BI(OP##_f32), [VG__MS_F64] = BI(OP##_f64), \
                  [VG__MS_I32] = BI(OP##_i32), [VG__MS_I64] = BI(OP##_i64), \
                  [VG__MS_C64] = BI(OP##_c64), [VG__MS_C128] = BI(OP##_c128)}
#define FLTC(OP) {[VG__MS_F32] = BI(OP##_f32), [VG__MS_F64] = BI(OP##_f64), \
                  [VG__MS_C64] = BI(OP##_c64), [VG__MS_C128] = BI(OP##_c128)}
#define CMPT(OP) {[VG__MS_F32] = BI(OP##_f32), [VG__MS_F64] = BI(OP##_f64), \
                  [VG__MS_I32] = BI(OP##_i32), [VG__MS_I64] = BI(OP##_i64), [VG__MS_U8] = BI(OP##_u8)}

static const bin_impl bin_tbl[B_N][VG__MS_N] = {
    [B_ADD] = NUMC(add), [B_SUB] = NUMC(sub), [B_MUL] = NUMC(mul), [B_DIV] = FLTC(div),
    [B_MAX] = NUM4(max), [B_MIN] = NUM4(min), [B_POW] = NUM4(pow), [B_SQDIFF] = NUM4(sqd),
    [B_GT] = CMPT(gt), [B_GE] = CMPT(ge), [B_LT] = CMPT(lt), [B_LE] = CMPT(le),
    [B_EQ] = {[VG__MS_F32] = BI(eq_f32), [VG__MS_F64] = BI(eq_f64), [VG__MS_I32] = BI(eq_i32),
              [VG__MS_I64] = BI(eq_i64), [VG__MS_U8] = BI(eq_u8), [VG__MS_BOOL] = BI(eq_b),
              [VG__MS_C64] = BI(eq_c64), [VG__MS_C128] = BI(eq_c128)},
    [B_NE] = {[VG__MS_F32] = BI(ne_f32), [VG__MS_F64] = BI(ne_f64), [VG__MS_I32] = BI(ne_i32),
              [VG__MS_I64] = BI(ne_i64), [VG__MS_U8] = BI(ne_u8), [VG__MS_BOOL] = BI(ne_b),
              [VG__MS_C64] = BI(ne_c64), [VG__MS_C128] = BI(ne_c128)},
    [B_LAND] = {[VG__MS_BOOL] = BI(land_b)}, [B_LOR] = {[VG__MS_BOOL] = BI(lor_b)},
    [B_SQRTG] = FLTC(sqrtg), [B_RSQRTG] = FLTC(rsqrtg), [B_RECIPG] = FLTC(recipg),
};

typedef struct binop_info {
    unsigned dtypes; /* VG__M_* mask */
    bool out_bool;
    int cost;        /* rough cost per element for parallel_for */
} binop_info;

static const binop_info bin_info[B_N] = {
    [B_ADD] = {VG__M_NUM | VG__M_COMPLEX, false, 1}, [B_SUB] = {VG__M_NUM | VG__M_COMPLEX, false, 1},
    [B_MUL] = {VG__M_NUM | VG__M_COMPLEX, false, 2}, [B_DIV] = {VG__M_FLOAT | VG__M_COMPLEX, false, 4},
    [B_MAX] = {VG__M_NUM, false, 1}, [B_MIN] = {VG__M_NUM, false, 1},
    [B_POW] = {VG__M_NUM, false, 40}, [B_SQDIFF] = {VG__M_NUM, false, 2},
    [B_GT] = {VG__M_CMP, true, 1}, [B_GE] = {VG__M_CMP, true, 1},
    [B_LT] = {VG__M_CMP, true, 1}, [B_LE] = {VG__M_CMP, true, 1},
    [B_EQ] = {VG__M_EQ | VG__M_COMPLEX, true, 1}, [B_NE] = {VG__M_EQ | VG__M_COMPLEX, true, 1},
    [B_LAND] = {VG__M_BOOL, true, 1}, [B_LOR] = {VG__M_BOOL, true, 1},
    [B_SQRTG] = {VG__M_FLOAT | VG__M_COMPLEX, false, 4}, [B_RSQRTG] = {VG__M_FLOAT | VG__M_COMPLEX, false, 4},
    [B_RECIPG] = {VG__M_FLOAT | VG__M_COMPLEX, false, 2},
};

/* ------------------------------------------------------------------------ */
/* Broadcast plan: the output walked as nd collapsed dims, element strides of a and b
 * per dim (0 where broadcast); the innermost dim has stride 0 or 1 for each. */
typedef struct bcast_plan {
    int nd;
    int64_t dims[VG_MAX_DIMS];
    int64_t sa[VG_MAX_DIMS], sb[VG_MAX_DIMS];
    int64_t n;                     /* output elements */
    int64_t odims[VG_MAX_DIMS];    /* output shape (uncollapsed) */
    int ond;
} bcast_plan;

static vg_code bcast_plan_make(const vg_tensor *a, const vg_tensor *b, bcast_plan *p, vg_status *st) {
    int na = vg_tensor_ndims(a), nb = vg_tensor_ndims(b);
    const int64_t *da = vg_tensor_dims(a), *db = vg_tensor_dims(b);
    int r = na > nb ? na : nb;
    /* per output dim: size and whether a / b is broadcast along it */
    int64_t cd[VG_MAX_DIMS];
    int cpat[VG_MAX_DIMS], m = 0;
    p->ond = r;
    p->n = 1;
    for (int i = 0; i < r; i++) {
        int64_t xa = i - (r - na) >= 0 ? da[i - (r - na)] : 1;
        int64_t xb = i - (r - nb) >= 0 ? db[i - (r - nb)] : 1;
        if (xa != xb && xa != 1 && xb != 1) {
            char sa[128], sb[128];
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s",
                                 vg__tshape_str(a, sa, sizeof sa), vg__tshape_str(b, sb, sizeof sb));
        }
        int64_t d = xa == 1 ? xb : xa;
        p->odims[i] = d;
        p->n *= d;
        if (d == 1) continue; /* size-1 output dims are dropped */
        int pat = (xa == 1 ? 1 : 0) | (xb == 1 ? 2 : 0);
        if (m > 0 && cpat[m - 1] == pat) {
            cd[m - 1] *= d;
        } else {
            cd[m] = d;
            cpat[m++] = pat;
        }
    }
    if (m == 0) { /* one element */
        cd[0] = 1;
        cpat[0] = 0;
        m = 1;
    }
    p->nd = m;
    int64_t stra = 1, strb = 1;
    for (int i = m - 1; i >= 0; i--) {
        p->dims[i] = cd[i];
        p->sa[i] = (cpat[i] & 1) ? 0 : stra;
        p->sb[i] = (cpat[i] & 2) ? 0 : strb;
        if (!(cpat[i] & 1)) stra *= cd[i];
        if (!(cpat[i] & 2)) strb *= cd[i];
    }
    return VG_OK;
}

typedef struct bin_job {
    const bcast_plan *p;
    bin_fn fn;               /* the inner loop matching the innermost strides */
    const char *a, *b;
    char *o;
    size_t esz, osz;
} bin_job;

/* Computes output elements [begin, end) (flat indices). */
static void bin_run(void *arg, int64_t begin, int64_t end) {
    const bin_job *j = arg;
    const bcast_plan *p = j->p;
    int nd = p->nd, last = nd - 1;
    int64_t inner = p->dims[last];
    int64_t row = begin / inner, off = begin % inner;
    int64_t idx[VG_MAX_DIMS], ao = 0, bo = 0;
    for (int d = last - 1; d >= 0; d--) {
        idx[d] = row % p->dims[d];
        row /= p->dims[d];
        ao += idx[d] * p->sa[d];
        bo += idx[d] * p->sb[d];
    }
    for (int64_t pos = begin; pos < end;) {
        int64_t len = inner - off < end - pos ? inner - off : end - pos;
        j->fn(j->a + (size_t)(ao + off * p->sa[last]) * j->esz, j->b + (size_t)(bo + off * p->sb[last]) * j->esz,
              j->o + (size_t)pos * j->osz, len);
        pos += len;
        off = 0;
        for (int d = last - 1; d >= 0; d--) { /* odometer over the outer dims */
            ao += p->sa[d];
            bo += p->sb[d];
            if (++idx[d] < p->dims[d]) break;
            ao -= p->sa[d] * p->dims[d];
            bo -= p->sb[d] * p->dims[d];
            idx[d] = 0;
        }
    }
}

/* Integer Pow: TF refuses negative exponents. */
static bool has_negative(const vg_tensor *t) {
    int64_t n = vg_tensor_num_elements(t);
    if (vg_tensor_dtype(t) == VG_INT32) {
        const int32_t *v = vg_tensor_data(t);
        for (int64_t i = 0; i < n; i++) if (v[i] < 0) return true;
    } else if (vg_tensor_dtype(t) == VG_INT64) {
        const int64_t *v = vg_tensor_data(t);
        for (int64_t i = 0; i < n; i++) if (v[i] < 0) return true;
    }
    return false;
}

/* Equal / NotEqual on strings live in lookup_ops.c. */
VG_HIDDEN vg_code vg__string_cmp_shape(vg_op *op, vg_status *st);
VG_HIDDEN vg_code vg__string_cmp_kernel(vg__kctx *ctx, bool not_equal);

static vg_code binary_kernel(vg__kctx *ctx, int bop) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *a = vg__kctx_input(ctx, 0), *b = vg__kctx_input(ctx, 1);
    vg_dtype dt = vg_tensor_dtype(a);
    if (dt == VG_STRING && (bop == B_EQ || bop == B_NE)) return vg__string_cmp_kernel(ctx, bop == B_NE);
    int slot = vg__math_slot(dt);
    const bin_impl *impl = slot >= 0 ? &bin_tbl[bop][slot] : NULL;
    if (!impl || !impl->vv) return vg__math_check_dtype("input", dt, 0, st);
    if (vg_tensor_dtype(b) != dt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "inputs have different dtypes: %s vs. %s",
                             vg_dtype_name(dt), vg_dtype_name(vg_tensor_dtype(b)));
    if (bop == B_POW && (dt == VG_INT32 || dt == VG_INT64) && has_negative(b))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Integers to negative integer powers are not allowed");
    vg_tensor *o;
    vg_dtype odt = bin_info[bop].out_bool ? VG_BOOL : dt;
    vg_code c;
    /* small same-shape operands (scalars, the global step read): no broadcast plan */
    int64_t n0 = vg_tensor_num_elements(a);
    if (n0 <= 4096 && vg_tensor_ndims(a) == vg_tensor_ndims(b) && n0 == vg_tensor_num_elements(b) &&
        memcmp(vg_tensor_dims(a), vg_tensor_dims(b), sizeof(int64_t) * (size_t)vg_tensor_ndims(a)) == 0) {
        if ((c = vg__kctx_alloc_output(ctx, 0, odt, vg_tensor_dims(a), vg_tensor_ndims(a), &o)) != VG_OK) return c;
        if (n0 > 0) impl->vv(vg_tensor_data(a), vg_tensor_data(b), vg_tensor_data(o), n0);
        return VG_OK;
    }
    bcast_plan p;
    c = bcast_plan_make(a, b, &p, st);
    if (c != VG_OK) return c;
    if ((c = vg__kctx_alloc_output(ctx, 0, odt, p.odims, p.ond, &o)) != VG_OK) return c;
    if (p.n == 0) return VG_OK;
    int last = p.nd - 1;
    bin_job j = {&p, p.sa[last] == 0 ? impl->sv : p.sb[last] == 0 ? impl->vs : impl->vv,
                 vg_tensor_data(a), vg_tensor_data(b), vg_tensor_data(o), vg_dtype_size(dt), vg_dtype_size(odt)};
    if (p.n * bin_info[bop].cost < VG__MATH_PAR_MIN) bin_run(&j, 0, p.n);
    else vg__kctx_parallel_for(ctx, p.n, bin_info[bop].cost, bin_run, &j);
    return VG_OK;
}

static vg_code binary_shape(vg_op *op, int bop, vg_status *st) {
    vg_dtype da = vg__op_input_dtype(op, 0), db = vg__op_input_dtype(op, 1);
    if (da == VG_STRING && (bop == B_EQ || bop == B_NE)) return vg__string_cmp_shape(op, st);
    vg_code c = vg__math_check_dtype("input 'x'", da, bin_info[bop].dtypes, st);
    if (c != VG_OK) return c;
    if (db != da)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Input 'y' of '%s' Op has type %s that does not match type %s of argument 'x'.",
                             vg_op_type(op), vg_dtype_name(db), vg_dtype_name(da));
    if (bop != B_LAND && bop != B_LOR && (c = check_type_attr(op, "T", da, st)) != VG_OK) return c;
    vg_shape sa = vg__op_input_shape(op, 0), sb = vg__op_input_shape(op, 1), so;
    if ((c = vg__shape_broadcast(&sa, &sb, &so, st)) != VG_OK) return c;
    return vg__op_set_single_output(op, bin_info[bop].out_bool ? VG_BOOL : da, so);
}

#define BINARY_OP(name, bop)                                                                      \
    static vg_code kernel_##name(vg__kctx *ctx) { return binary_kernel(ctx, bop); }               \
    static vg_code shape_##name(vg_op *op, vg_status *st) { return binary_shape(op, bop, st); }
BINARY_OP(add, B_ADD)
BINARY_OP(sub, B_SUB)
BINARY_OP(mul, B_MUL)
BINARY_OP(div, B_DIV)
BINARY_OP(maximum, B_MAX)
BINARY_OP(minimum, B_MIN)
BINARY_OP(pow, B_POW)
BINARY_OP(sqdiff, B_SQDIFF)
BINARY_OP(greater, B_GT)
BINARY_OP(greater_equal, B_GE)
BINARY_OP(less, B_LT)
BINARY_OP(less_equal, B_LE)
BINARY_OP(equal, B_EQ)
BINARY_OP(not_equal, B_NE)
BINARY_OP(logical_and, B_LAND)
BINARY_OP(logical_or, B_LOR)
BINARY_OP(sqrt_grad, B_SQRTG)
BINARY_OP(rsqrt_grad, B_RSQRTG)
BINARY_OP(reciprocal_grad, B_RECIPG)

/* ------------------------------------------------------------------------ */
/* Unary ops */

typedef void (*un_fn)(const void *x, void *o, int64_t n);

#define UN_(ATTR, NAME, TI, TO, EXPR)                                   \
    ATTR static void NAME(const void *x_, void *o_, int64_t n) {         \
        const TI *restrict xs = x_;                                      \
        TO *restrict o = o_;                                             \
        for (int64_t i = 0; i < n; i++) { TI x = xs[i]; o[i] = (TO)(EXPR); } \
    }
#define UN(NAME, TI, TO, EXPR) UN_(, NAME, TI, TO, EXPR)
#define UNS(NAME, TI, TO, EXPR) UN_(VG_SIMD_CLONES, NAME, TI, TO, EXPR)

UN(neg_f32, float, float, -x)
UN(neg_f64, double, double, -x)
UN(neg_i32, int32_t, int32_t, WRAP(int32_t, uint32_t, 0u - (uint32_t)x))
UN(neg_i64, int64_t, int64_t, WRAP(int64_t, uint64_t, (uint64_t)0 - (uint64_t)x))
UN(square_f32, float, float, x * x)
UN(square_f64, double, double, x * x)
UN(square_i32, int32_t, int32_t, WRAP(int32_t, uint32_t, (uint32_t)x * (uint32_t)x))
UN(square_i64, int64_t, int64_t, WRAP(int64_t, uint64_t, (uint64_t)x * (uint64_t)x))
UN(sqrt_f32, float, float, sqrtf(x))
UN(sqrt_f64, double, double, sqrt(x))
UN(rsqrt_f32, float, float, 1.0f / sqrtf(x))
UN(rsqrt_f64, double, double, 1.0 / sqrt(x))
UN(exp_f32, float, float, expf(x))
UN(exp_f64, double, double, exp(x))
UN(log_f32, float, float, logf(x))
UN(log_f64, double, double, log(x))
UN(abs_f32, float, float, fabsf(x))
UN(abs_f64, double, double, fabs(x))
UN(abs_i32, int32_t, int32_t, WRAP(int32_t, uint32_t, x < 0 ? 0u - (uint32_t)x : (uint32_t)x))
UN(abs_i64, int64_t, int64_t, WRAP(int64_t, uint64_t, x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x))
UN(sign_f32, float, float, (x > 0.0f) - (x < 0.0f))
UN(sign_f64, double, double, (x > 0.0) - (x < 0.0))
UN(sign_i32, int32_t, int32_t, (x > 0) - (x < 0))
UN(sign_i64, int64_t, int64_t, (x > 0) - (x < 0))
UN(recip_f32, float, float, 1.0f / x)
UN(recip_f64, double, double, 1.0 / x)
UN(lnot_b, uint8_t, uint8_t, x == 0)
UN(neg_c64, cf32, cf32, -x)
UN(neg_c128, cf64, cf64, -x)
UN(square_c64, cf32, cf32, x * x)
UN(square_c128, cf64, cf64, x * x)
UN(sqrt_c64, cf32, cf32, csqrtf(x))
UN(sqrt_c128, cf64, cf64, csqrt(x))
UN(rsqrt_c64, cf32, cf32, 1.0f / csqrtf(x))
UN(rsqrt_c128, cf64, cf64, 1.0 / csqrt(x))
UN(exp_c64, cf32, cf32, cexpf(x))
UN(exp_c128, cf64, cf64, cexp(x))
UN(log_c64, cf32, cf32, clogf(x))
UN(log_c128, cf64, cf64, clog(x))
UN(recip_c64, cf32, cf32, 1.0f / x)
UN(recip_c128, cf64, cf64, 1.0 / x)
UN(isfinite_f32, float, uint8_t, isfinite(x))
UN(isfinite_f64, double, uint8_t, isfinite(x))

enum { U_NEG, U_SQUARE, U_SQRT, U_RSQRT, U_EXP, U_LOG, U_ABS, U_SIGN, U_RECIP, U_LNOT, U_ISFINITE, U_N };

#define UNUM4(OP) {[VG__MS_F32] = OP##_f32, [VG__MS_F64] = OP##_f64, [VG__MS_I32] = OP##_i32, \
                   [VG__MS_I64] = OP##_i64}
#define UFLT2(OP) {[VG__MS_F32] = OP##_f32, [VG__MS_F64] = OP##_f64}
#define UNUMC(OP) {[VG__MS_F32] = OP##_f32, [VG__MS_F64] = OP##_f64, [VG__MS_I32] = OP##_i32, \
                   [VG__MS_I64] = OP##_i64, [VG__MS_C64] = OP##_c64, [VG__MS_C128] = OP##_c128}
#define UFLTC(OP) {[VG__MS_F32] = OP##_f32, [VG__MS_F64] = OP##_f64, [VG__MS_C64] = OP##_c64, \
                   [VG__MS_C128] = OP##_c128}

static const un_fn un_tbl[U_N][VG__MS_N] = {
    [U_NEG] = UNUMC(neg), [U_SQUARE] = UNUMC(square), [U_SQRT] = UFLTC(sqrt),
    [U_RSQRT] = UFLTC(rsqrt), [U_EXP] = UFLTC(exp), [U_LOG] = UFLTC(log),
    [U_ABS] = UNUM4(abs), [U_SIGN] = UNUM4(sign), [U_RECIP] = UFLTC(recip),
    [U_LNOT] = {[VG__MS_BOOL] = lnot_b}, [U_ISFINITE] = UFLT2(isfinite),
};

static const struct { unsigned dtypes; bool out_bool; int cost; } un_info[U_N] = {
    [U_NEG] = {VG__M_NUM | VG__M_COMPLEX, false, 1}, [U_SQUARE] = {VG__M_NUM | VG__M_COMPLEX, false, 1},
    [U_SQRT] = {VG__M_FLOAT | VG__M_COMPLEX, false, 4}, [U_RSQRT] = {VG__M_FLOAT | VG__M_COMPLEX, false, 5},
    [U_EXP] = {VG__M_FLOAT | VG__M_COMPLEX, false, 20}, [U_LOG] = {VG__M_FLOAT | VG__M_COMPLEX, false, 20},
    [U_ABS] = {VG__M_NUM, false, 1}, [U_SIGN] = {VG__M_NUM, false, 1},
    [U_RECIP] = {VG__M_FLOAT | VG__M_COMPLEX, false, 2}, [U_LNOT] = {VG__M_BOOL, true, 1},
    [U_ISFINITE] = {VG__M_FLOAT, true, 1},
};

typedef struct un_job {
    un_fn fn;
    const char *x;
    char *o;
    size_t esz, osz;
} un_job;

static void un_run(void *arg, int64_t begin, int64_t end) {
    const un_job *j = arg;
    j->fn(j->x + (size_t)begin * j->esz, j->o + (size_t)begin * j->osz, end - begin);
}

static vg_code unary_kernel(vg__kctx *ctx, int uop) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *x = vg__kctx_input(ctx, 0);
    vg_dtype dt = vg_tensor_dtype(x);
    int slot = vg__math_slot(dt);
    un_fn fn = slot >= 0 ? un_tbl[uop][slot] : NULL;
    if (!fn) return vg__math_check_dtype("input", dt, 0, st);
    vg_dtype odt = un_info[uop].out_bool ? VG_BOOL : dt;
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, odt, vg_tensor_dims(x), vg_tensor_ndims(x), &o);
    if (c != VG_OK) return c;
    int64_t n = vg_tensor_num_elements(x);
    un_job j = {fn, vg_tensor_data(x), vg_tensor_data(o), vg_dtype_size(dt), vg_dtype_size(odt)};
    if (n * un_info[uop].cost < VG__MATH_PAR_MIN) un_run(&j, 0, n);
    else vg__kctx_parallel_for(ctx, n, un_info[uop].cost, un_run, &j);
    return VG_OK;
}

static vg_code unary_shape(vg_op *op, int uop, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    vg_code c = vg__math_check_dtype("input 'x'", dt, un_info[uop].dtypes, st);
    if (c == VG_OK && uop != U_LNOT) c = check_type_attr(op, "T", dt, st);
    if (c != VG_OK) return c;
    return vg__op_set_single_output(op, un_info[uop].out_bool ? VG_BOOL : dt, vg__op_input_shape(op, 0));
}

#define UNARY_OP(name, uop)                                                                     \
    static vg_code kernel_##name(vg__kctx *ctx) { return unary_kernel(ctx, uop); }              \
    static vg_code shape_##name(vg_op *op, vg_status *st) { return unary_shape(op, uop, st); }
UNARY_OP(neg, U_NEG)
UNARY_OP(square, U_SQUARE)
UNARY_OP(sqrt, U_SQRT)
UNARY_OP(rsqrt, U_RSQRT)
UNARY_OP(exp, U_EXP)
UNARY_OP(log, U_LOG)
UNARY_OP(abs, U_ABS)
UNARY_OP(sign, U_SIGN)
UNARY_OP(reciprocal, U_RECIP)
UNARY_OP(logical_not, U_LNOT)
UNARY_OP(is_finite, U_ISFINITE)

/* ------------------------------------------------------------------------ */
/* Select(condition, t, e), TF1 semantics: condition is a scalar, a vector over t's
 * first dim, or t's shape. */

static vg_code shape_select(vg_op *op, vg_status *st) {
    vg_dtype dc = vg__op_input_dtype(op, 0), dt = vg__op_input_dtype(op, 1);
    vg_code c = vg__math_check_dtype("condition", dc, VG__M_BOOL, st);
    if (c != VG_OK) return c;
    if (vg_dtype_size(dt) == 0 && dt != VG_STRING) return vg__math_check_dtype("'t'", dt, VG__M_EQ, st);
    if (vg__op_input_dtype(op, 2) != dt)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "'e' has dtype %s but 't' has dtype %s",
                             vg_dtype_name(vg__op_input_dtype(op, 2)), vg_dtype_name(dt));
    if ((c = check_type_attr(op, "T", dt, st)) != VG_OK) return c;
    vg_shape sc = vg__op_input_shape(op, 0), so;
    vg_shape st_ = vg__op_input_shape(op, 1), se = vg__op_input_shape(op, 2);
    if ((c = merge_shapes(&st_, &se, &so, "'then' and 'else'", st)) != VG_OK) return c;
    if (sc.ndims > 0 && so.ndims >= 0) {
        bool ok;
        if (sc.ndims == 1 && so.ndims > 1) ok = sc.dims[0] < 0 || so.dims[0] < 0 || sc.dims[0] == so.dims[0];
        else ok = merge_shapes(&sc, &so, &so, "'condition' and 'then'", NULL) == VG_OK;
        if (!ok) {
            char a[128], b[128];
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "'condition' must be a scalar, a vector matching the first dimension of 't', "
                                 "or the shape of 't'; got %s and %s",
                                 vg_shape_str(&sc, a, sizeof a), vg_shape_str(&so, b, sizeof b));
        }
    }
    return vg__op_set_single_output(op, dt, so);
}

/* Both branches are loaded unconditionally, so the loop is a vector blend instead of a
 * branch per element (a ReLU mask mispredicts half of them; ResNet's leaky ReLU is a
 * Select: 39% of its step before, issue 30). Split over the intra-op threads. */
typedef struct select_job {
    const uint8_t *c;
    const void *t, *e;
    void *o;
    size_t esz;
} select_job;

#define SELECT_FN(T)                                                                        \
    VG_SIMD_CLONES static void select_##T(const uint8_t *restrict c, const T *restrict tp,   \
                                          const T *restrict ep, T *restrict o, int64_t n) { \
        for (int64_t i = 0; i < n; i++) {                                                   \
            T a = tp[i], b = ep[i];                                                         \
            o[i] = c[i] ? a : b;                                                            \
        }                                                                                   \
    }
SELECT_FN(uint8_t)
SELECT_FN(uint32_t)
SELECT_FN(uint64_t)

static void select_range(void *arg, int64_t i0, int64_t i1) {
    const select_job *j = arg;
    const uint8_t *c = j->c + i0;
    switch (j->esz) {
    case 1: select_uint8_t(c, (const uint8_t *)j->t + i0, (const uint8_t *)j->e + i0, (uint8_t *)j->o + i0, i1 - i0); break;
    case 4:
        select_uint32_t(c, (const uint32_t *)j->t + i0, (const uint32_t *)j->e + i0, (uint32_t *)j->o + i0, i1 - i0);
        break;
    default:
        select_uint64_t(c, (const uint64_t *)j->t + i0, (const uint64_t *)j->e + i0, (uint64_t *)j->o + i0, i1 - i0);
        break;
    }
}

static vg_code kernel_select(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *cond = vg__kctx_input(ctx, 0), *t = vg__kctx_input(ctx, 1), *e = vg__kctx_input(ctx, 2);
    char a[128], b[128];
    if (!vg__same_dims(t, e))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "'then' and 'else' must have the same size.  but are %s and %s",
                             vg__tshape_str(t, a, sizeof a), vg__tshape_str(e, b, sizeof b));
    if (vg_tensor_ndims(cond) == 0) { /* scalar condition: forward one of the branches */
        vg__kctx_set_output(ctx, 0, vg_tensor_ref(*(const uint8_t *)vg_tensor_data(cond) ? t : e));
        return VG_OK;
    }
    size_t esz = vg_dtype_size(vg_tensor_dtype(t));
    int64_t n = vg_tensor_num_elements(t), rows = 0;
    if (!vg__same_dims(cond, t)) {
        if (vg_tensor_ndims(cond) != 1 || vg_tensor_ndims(t) < 1 || vg_tensor_dim(cond, 0) != vg_tensor_dim(t, 0))
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "'condition' must be a scalar, a vector matching the first dimension of 'then', "
                                 "or the shape of 'then'; got %s and %s",
                                 vg__tshape_str(cond, a, sizeof a), vg__tshape_str(t, b, sizeof b));
        rows = vg_tensor_dim(t, 0);
    }
    vg_tensor *out;
    vg_code c = vg__kctx_alloc_output(ctx, 0, vg_tensor_dtype(t), vg_tensor_dims(t), vg_tensor_ndims(t), &out);
    if (c != VG_OK || n == 0) return c;
    const uint8_t *cv = vg_tensor_data(cond);
    const void *tv = vg_tensor_data(t), *ev = vg_tensor_data(e);
    void *ov = vg_tensor_data(out);
    if (vg_tensor_dtype(t) == VG_STRING) { /* strings: element copies */
        int64_t per = rows > 0 ? n / rows : 1;
        for (int64_t i = 0; i < n; i++) {
            size_t len;
            const char *sv = vg_tensor_string(cv[rows > 0 ? i / per : i] ? t : e, i, &len);
            if ((c = vg_tensor_set_string(out, i, sv, len, st)) != VG_OK) return c;
        }
        return VG_OK;
    }
    if (rows > 0) { /* cond is (N,), t is (N, ...): copy whole rows */
        size_t row = (size_t)(n / rows) * esz;
        for (int64_t r = 0; r < rows; r++)
            memcpy((char *)ov + (size_t)r * row, (const char *)(cv[r] ? tv : ev) + (size_t)r * row, row);
        return VG_OK;
    }
    if (esz != 1 && esz != 4 && esz != 8) { /* half, complex128: element copies */
        for (int64_t i = 0; i < n; i++)
            memcpy((char *)ov + (size_t)i * esz, (const char *)(cv[i] ? tv : ev) + (size_t)i * esz, esz);
        return VG_OK;
    }
    select_job j = {cv, tv, ev, ov, esz};
    if (n < 32768) select_range(&j, 0, n);
    else vg__kctx_parallel_for(ctx, n, 2, select_range, &j);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* AddN(inputs): sum of N same-shape tensors. */

static vg_code shape_add_n(vg_op *op, vg_status *st) {
    int n = vg_op_num_inputs(op);
    vg_dtype dt = vg__op_input_dtype(op, 0);
    vg_code c = vg__math_check_dtype("inputs", dt, VG__M_NUM | VG__M_COMPLEX, st);
    if (c != VG_OK) return c;
    vg_shape s = vg__op_input_shape(op, 0);
    for (int i = 1; i < n; i++) {
        if (vg__op_input_dtype(op, i) != dt)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "input %d has dtype %s, expected %s", i,
                                 vg_dtype_name(vg__op_input_dtype(op, i)), vg_dtype_name(dt));
        vg_shape si = vg__op_input_shape(op, i);
        if ((c = merge_shapes(&s, &si, &s, "all inputs", st)) != VG_OK) return c;
    }
    if ((c = check_type_attr(op, "T", dt, st)) != VG_OK) return c;
    vg__op_set_default_attr_int(op, "N", n);
    return vg__op_set_single_output(op, dt, s);
}

typedef struct addn_job {
    const void *const *in;
    int n;
    void *o;
    vg_dtype dt;
} addn_job;

#define ADDN_LOOP(T, U)                                                                       \
    do {                                                                                      \
        T *restrict o = (T *)j->o + b;                                                        \
        const T *restrict x0 = (const T *)j->in[0] + b;                                       \
        if (j->n == 1) { memcpy(o, x0, sizeof(T) * (size_t)len); break; }                     \
        const T *restrict x1 = (const T *)j->in[1] + b;                                       \
        for (int64_t i = 0; i < len; i++) o[i] = (T)((U)x0[i] + (U)x1[i]);                    \
        for (int k = 2; k < j->n; k++) {                                                      \
            const T *restrict xk = (const T *)j->in[k] + b;                                   \
            for (int64_t i = 0; i < len; i++) o[i] = (T)((U)o[i] + (U)xk[i]);                 \
        }                                                                                     \
    } while (0)

static void addn_run(void *arg, int64_t b, int64_t e) {
    const addn_job *j = arg;
    int64_t len = e - b;
    switch (j->dt) {
    case VG_FLOAT: ADDN_LOOP(float, float); break;
    case VG_DOUBLE: ADDN_LOOP(double, double); break;
    case VG_INT32: ADDN_LOOP(int32_t, uint32_t); break;
    case VG_INT64: ADDN_LOOP(int64_t, uint64_t); break;
    case VG_COMPLEX64: ADDN_LOOP(cf32, cf32); break;
    case VG_COMPLEX128: ADDN_LOOP(cf64, cf64); break;
    default: break;
    }
}

static vg_code kernel_add_n(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    int n = vg__kctx_num_inputs(ctx);
    const vg_tensor *x0 = vg__kctx_input(ctx, 0);
    vg_dtype dt = vg_tensor_dtype(x0);
    vg_code c = vg__math_check_dtype("inputs", dt, VG__M_NUM | VG__M_COMPLEX, st);
    if (c != VG_OK) return c;
    const void *stackp[16];
    const void **in = n <= 16 ? stackp : vg__malloc(sizeof(void *) * (size_t)n);
    if (!in) return VG_OOM(st, "AddN inputs");
    for (int i = 0; i < n && c == VG_OK; i++) {
        const vg_tensor *xi = vg__kctx_input(ctx, i);
        char a[128], b[128];
        if (vg_tensor_dtype(xi) != dt || !vg__same_dims(xi, x0))
            c = vg_status_set(st, VG_INVALID_ARGUMENT,
                              "Inputs to operation AddN must have the same size and shape.  "
                              "Input 0: %s != input %d: %s",
                              vg__tshape_str(x0, a, sizeof a), i, vg__tshape_str(xi, b, sizeof b));
        in[i] = vg_tensor_data(xi);
    }
    vg_tensor *o;
    if (c == VG_OK) c = vg__kctx_alloc_output(ctx, 0, dt, vg_tensor_dims(x0), vg_tensor_ndims(x0), &o);
    if (c == VG_OK) {
        addn_job j = {in, n, vg_tensor_data(o), dt};
        int64_t ne = vg_tensor_num_elements(x0);
        if (ne * n < VG__MATH_PAR_MIN) addn_run(&j, 0, ne);
        else vg__kctx_parallel_for(ctx, ne, n, addn_run, &j);
    }
    if (in != stackp) vg__free(in);
    return c;
}

/* ------------------------------------------------------------------------ */
/* Cast(x) SrcT -> DstT among float, double, int32, int64, uint8, bool. Float to int
 * conversions mimic x86 (cvttss2si): NaN and out-of-range give the most negative
 * value; uint8 takes the low byte of the int32 conversion. */

static inline int32_t f2i32(double x) {
    return (x > -2147483649.0 && x < 2147483648.0) ? (int32_t)x : INT32_MIN;
}
static inline int64_t f2i64(double x) {
    return (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? (int64_t)x : INT64_MIN;
}

typedef void (*cast_fn)(const void *x, void *o, int64_t n);
#define CASTFN(NAME, TI, TO, EXPR) UN(NAME, TI, TO, EXPR)
/* to float / double */
UNS(c_f64_f32, double, float, x)
UNS(c_i32_f32, int32_t, float, x)
CASTFN(c_i64_f32, int64_t, float, x)
UNS(c_u8_f32, uint8_t, float, x)
CASTFN(c_b_f32, uint8_t, float, x != 0)
UNS(c_f32_f64, float, double, x)
UNS(c_i32_f64, int32_t, double, x)
CASTFN(c_i64_f64, int64_t, double, x)
UNS(c_u8_f64, uint8_t, double, x)
CASTFN(c_b_f64, uint8_t, double, x != 0)
/* to int32 / int64 */
CASTFN(c_f32_i32, float, int32_t, f2i32(x))
CASTFN(c_f64_i32, double, int32_t, f2i32(x))
CASTFN(c_i64_i32, int64_t, int32_t, (uint32_t)(uint64_t)x)
CASTFN(c_u8_i32, uint8_t, int32_t, x)
CASTFN(c_b_i32, uint8_t, int32_t, x != 0)
CASTFN(c_f32_i64, float, int64_t, f2i64(x))
CASTFN(c_f64_i64, double, int64_t, f2i64(x))
CASTFN(c_i32_i64, int32_t, int64_t, x)
CASTFN(c_u8_i64, uint8_t, int64_t, x)
CASTFN(c_b_i64, uint8_t, int64_t, x != 0)
/* to uint8 */
CASTFN(c_f32_u8, float, uint8_t, (uint32_t)f2i32(x))
CASTFN(c_f64_u8, double, uint8_t, (uint32_t)f2i32(x))
CASTFN(c_i32_u8, int32_t, uint8_t, (uint32_t)x)
CASTFN(c_i64_u8, int64_t, uint8_t, (uint64_t)x)
CASTFN(c_b_u8, uint8_t, uint8_t, x != 0)
/* to bool */
CASTFN(c_f32_b, float, uint8_t, x != 0)
CASTFN(c_f64_b, double, uint8_t, x != 0)
CASTFN(c_i32_b, int32_t, uint8_t, x != 0)
CASTFN(c_i64_b, int64_t, uint8_t, x != 0)
CASTFN(c_u8_b, uint8_t, uint8_t, x != 0)
/* complex: a real value gets imaginary part 0; complex to a real or integer type keeps
 * the real part (TF's cast_op.h; complex -> bool is real != 0) */
CASTFN(c_f32_c64, float, cf32, x)
CASTFN(c_f64_c64, double, cf32, x)
CASTFN(c_i32_c64, int32_t, cf32, x)
CASTFN(c_i64_c64, int64_t, cf32, x)
CASTFN(c_u8_c64, uint8_t, cf32, x)
CASTFN(c_b_c64, uint8_t, cf32, x != 0)
CASTFN(c_c128_c64, cf64, cf32, x)
CASTFN(c_f32_c128, float, cf64, x)
CASTFN(c_f64_c128, double, cf64, x)
CASTFN(c_i32_c128, int32_t, cf64, x)
CASTFN(c_i64_c128, int64_t, cf64, x)
CASTFN(c_u8_c128, uint8_t, cf64, x)
CASTFN(c_b_c128, uint8_t, cf64, x != 0)
CASTFN(c_c64_c128, cf32, cf64, x)
CASTFN(c_c64_f32, cf32, float, crealf(x))
CASTFN(c_c64_f64, cf32, double, crealf(x))
CASTFN(c_c64_i32, cf32, int32_t, f2i32(crealf(x)))
CASTFN(c_c64_i64, cf32, int64_t, f2i64(crealf(x)))
CASTFN(c_c64_u8, cf32, uint8_t, (uint32_t)f2i32(crealf(x)))
CASTFN(c_c64_b, cf32, uint8_t, crealf(x) != 0)
CASTFN(c_c128_f32, cf64, float, creal(x))
CASTFN(c_c128_f64, cf64, double, creal(x))
CASTFN(c_c128_i32, cf64, int32_t, f2i32(creal(x)))
CASTFN(c_c128_i64, cf64, int64_t, f2i64(creal(x)))
CASTFN(c_c128_u8, cf64, uint8_t, (uint32_t)f2i32(creal(x)))
CASTFN(c_c128_b, cf64, uint8_t, creal(x) != 0)

/* [src slot][dst slot]; NULL on the diagonal (the input is forwarded). */
static const cast_fn cast_tbl[VG__MS_N][VG__MS_N] = {
    [VG__MS_F32] = {[VG__MS_F64] = c_f32_f64, [VG__MS_I32] = c_f32_i32, [VG__MS_I64] = c_f32_i64,
                    [VG__MS_U8] = c_f32_u8, [VG__MS_BOOL] = c_f32_b, [VG__MS_C64] = c_f32_c64,
                    [VG__MS_C128] = c_f32_c128},
    [VG__MS_F64] = {[VG__MS_F32] = c_f64_f32, [VG__MS_I32] = c_f64_i32, [VG__MS_I64] = c_f64_i64,
                    [VG__MS_U8] = c_f64_u8, [VG__MS_BOOL] = c_f64_b, [VG__MS_C64] = c_f64_c64,
                    [VG__MS_C128] = c_f64_c128},
    [VG__MS_I32] = {[VG__MS_F32] = c_i32_f32, [VG__MS_F64] = c_i32_f64, [VG__MS_I64] = c_i32_i64,
                    [VG__MS_U8] = c_i32_u8, [VG__MS_BOOL] = c_i32_b, [VG__MS_C64] = c_i32_c64,
                    [VG__MS_C128] = c_i32_c128},
    [VG__MS_I64] = {[VG__MS_F32] = c_i64_f32, [VG__MS_F64] = c_i64_f64, [VG__MS_I32] = c_i64_i32,
                    [VG__MS_U8] = c_i64_u8, [VG__MS_BOOL] = c_i64_b, [VG__MS_C64] = c_i64_c64,
                    [VG__MS_C128] = c_i64_c128},
    [VG__MS_U8] = {[VG__MS_F32] = c_u8_f32, [VG__MS_F64] = c_u8_f64, [VG__MS_I32] = c_u8_i32,
                   [VG__MS_I64] = c_u8_i64, [VG__MS_BOOL] = c_u8_b, [VG__MS_C64] = c_u8_c64,
                   [VG__MS_C128] = c_u8_c128},
    [VG__MS_BOOL] = {[VG__MS_F32] = c_b_f32, [VG__MS_F64] = c_b_f64, [VG__MS_I32] = c_b_i32,
                     [VG__MS_I64] = c_b_i64, [VG__MS_U8] = c_b_u8, [VG__MS_C64] = c_b_c64,
                     [VG__MS_C128] = c_b_c128},
    [VG__MS_C64] = {[VG__MS_F32] = c_c64_f32, [VG__MS_F64] = c_c64_f64, [VG__MS_I32] = c_c64_i32,
                    [VG__MS_I64] = c_c64_i64, [VG__MS_U8] = c_c64_u8, [VG__MS_BOOL] = c_c64_b,
                    [VG__MS_C128] = c_c64_c128},
    [VG__MS_C128] = {[VG__MS_F32] = c_c128_f32, [VG__MS_F64] = c_c128_f64, [VG__MS_I32] = c_c128_i32,
                     [VG__MS_I64] = c_c128_i64, [VG__MS_U8] = c_c128_u8, [VG__MS_BOOL] = c_c128_b,
                     [VG__MS_C64] = c_c128_c64},
};

/* half / bfloat16 <-> anything: through float in blocks, as Eigen::half and
 * tensorflow::bfloat16 do (double and the integers convert to float first, then round to
 * nearest even). */
typedef struct half_cast_job {
    const void *x;
    void *o;
    size_t isz, osz;
    void (*in16)(const uint16_t *, float *, size_t);  /* the source is 16-bit: to float */
    void (*out16)(const float *, uint16_t *, size_t); /* the destination is 16-bit: from float */
    cast_fn in_via, out_via; /* src -> float / float -> dst for the other types; NULL: float itself */
} half_cast_job;

static void half_cast_run(void *arg, int64_t begin, int64_t end) {
    const half_cast_job *j = arg;
    float tmp[256];
    for (int64_t i = begin; i < end; i += 256) {
        size_t n = (size_t)(end - i < 256 ? end - i : 256);
        const char *x = (const char *)j->x + (size_t)i * j->isz;
        char *o = (char *)j->o + (size_t)i * j->osz;
        const float *f = (const float *)(const void *)x;
        if (j->in16) { j->in16((const uint16_t *)(const void *)x, tmp, n); f = tmp; }
        else if (j->in_via) { j->in_via(x, tmp, (int64_t)n); f = tmp; }
        if (j->out16) j->out16(f, (uint16_t *)(void *)o, n);
        else if (j->out_via) j->out_via(f, o, (int64_t)n);
        else memcpy(o, f, n * sizeof(float));
    }
}

#define VG__M_CAST (VG__M_CMP | VG__M(VG_BOOL) | VG__M(VG_HALF) | VG__M(VG_BFLOAT16) | VG__M_COMPLEX)

static vg_code shape_cast(vg_op *op, vg_status *st) {
    vg_dtype src = vg__op_input_dtype(op, 0), dst;
    vg_code c = vg__math_check_dtype("input 'x'", src, VG__M_CAST, st);
    if (c == VG_OK) c = check_type_attr(op, "SrcT", src, st);
    if (c != VG_OK) return c;
    if (!vg_op_attr_type_(op, "DstT", &dst))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "attr 'DstT' is required");
    if ((c = vg__math_check_dtype("DstT", dst, VG__M_CAST, st)) != VG_OK) return c;
    vg__op_set_default_attr_bool(op, "Truncate", false);
    return vg__op_set_single_output(op, dst, vg__op_input_shape(op, 0));
}

static vg_code kernel_cast(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *x = vg__kctx_input(ctx, 0);
    vg_dtype src = vg_tensor_dtype(x), dst = VG_DTYPE_INVALID;
    vg_op_attr_type_(vg__kctx_op(ctx), "DstT", &dst);
    if (src == dst) {
        vg__kctx_set_output(ctx, 0, vg_tensor_ref(x));
        return VG_OK;
    }
    bool s16 = src == VG_HALF || src == VG_BFLOAT16, d16 = dst == VG_HALF || dst == VG_BFLOAT16;
    if (s16 || d16) {
        int si = s16 ? VG__MS_F32 : vg__math_slot(src), di = d16 ? VG__MS_F32 : vg__math_slot(dst);
        if (si < 0 || di < 0)
            return vg_status_set(st, VG_UNIMPLEMENTED, "Cast %s to %s is not supported", vg_dtype_name(src),
                                 vg_dtype_name(dst));
        half_cast_job hj = {vg_tensor_data(x), NULL, vg_dtype_size(src), vg_dtype_size(dst),
                            !s16 ? NULL : src == VG_HALF ? vg__half_to_float_n : vg__bf16_to_float_n,
                            !d16 ? NULL : dst == VG_HALF ? vg__float_to_half_n : vg__float_to_bf16_n,
                            s16 || si == VG__MS_F32 ? NULL : cast_tbl[si][VG__MS_F32],
                            d16 || di == VG__MS_F32 ? NULL : cast_tbl[VG__MS_F32][di]};
        vg_tensor *ho;
        vg_code hc = vg__kctx_alloc_output(ctx, 0, dst, vg_tensor_dims(x), vg_tensor_ndims(x), &ho);
        if (hc != VG_OK) return hc;
        hj.o = vg_tensor_data(ho);
        int64_t hn = vg_tensor_num_elements(x);
        if (hn < VG__MATH_PAR_MIN) half_cast_run(&hj, 0, hn);
        else vg__kctx_parallel_for(ctx, hn, 2, half_cast_run, &hj);
        return VG_OK;
    }
    int s = vg__math_slot(src), d = vg__math_slot(dst);
    cast_fn fn = s >= 0 && d >= 0 ? cast_tbl[s][d] : NULL;
    if (!fn)
        return vg_status_set(st, VG_UNIMPLEMENTED, "Cast %s to %s is not supported", vg_dtype_name(src),
                             vg_dtype_name(dst));
    vg_tensor *o;
    vg_code c = vg__kctx_alloc_output(ctx, 0, dst, vg_tensor_dims(x), vg_tensor_ndims(x), &o);
    if (c != VG_OK) return c;
    int64_t n = vg_tensor_num_elements(x);
    un_job j = {fn, vg_tensor_data(x), vg_tensor_data(o), vg_dtype_size(src), vg_dtype_size(dst)};
    if (n < VG__MATH_PAR_MIN) un_run(&j, 0, n);
    else vg__kctx_parallel_for(ctx, n, 2, un_run, &j);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* CheckNumerics(tensor, message): forwards the input, fails on NaN / Inf. */

static vg_code shape_check_numerics(vg_op *op, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, 0);
    vg_code c = vg__math_check_dtype("input 'tensor'", dt, VG__M_FLOAT, st);
    if (c == VG_OK) c = check_type_attr(op, "T", dt, st);
    if (c != VG_OK) return c;
    vg__op_set_default_attr_string(op, "message", "");
    return vg__op_set_single_output(op, dt, vg__op_input_shape(op, 0));
}

static vg_code kernel_check_numerics(vg__kctx *ctx) {
    vg_tensor *x = vg__kctx_input(ctx, 0);
    int64_t n = vg_tensor_num_elements(x);
    int nan = 0, inf = 0;
    if (vg_tensor_dtype(x) == VG_FLOAT) {
        const float *v = vg_tensor_data(x);
        for (int64_t i = 0; i < n; i++) {
            nan |= v[i] != v[i];
            inf |= fabsf(v[i]) == INFINITY;
        }
    } else if (vg_tensor_dtype(x) == VG_DOUBLE) {
        const double *v = vg_tensor_data(x);
        for (int64_t i = 0; i < n; i++) {
            nan |= v[i] != v[i];
            inf |= fabs(v[i]) == INFINITY;
        }
    }
    if (nan || inf) {
        const char *msg = "";
        size_t len = 0;
        vg_op_attr_string(vg__kctx_op(ctx), "message", &msg, &len);
        return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "%.*s : Tensor had %s values", (int)len,
                             msg, nan && inf ? "Inf and NaN" : inf ? "Inf" : "NaN");
    }
    vg__kctx_set_output(ctx, 0, vg_tensor_ref(x));
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* Builders */

static vg_output build1(vg_graph *g, const char *type, vg_output x, const char *name) {
    return vg__build_simple(g, type, name, NULL, (vg_output[]){x}, 1);
}

static vg_output build2(vg_graph *g, const char *type, vg_output x, vg_output y, const char *name) {
    return vg__build_simple(g, type, name, NULL, (vg_output[]){x, y}, 2);
}

vg_output vg_add(vg_graph *g, vg_output a, vg_output b, const char *name) { return build2(g, "AddV2", a, b, name); }
vg_output vg_add_legacy(vg_graph *g, vg_output a, vg_output b, const char *name) { return build2(g, "Add", a, b, name); }
vg_output vg_sub(vg_graph *g, vg_output a, vg_output b, const char *name) { return build2(g, "Sub", a, b, name); }
vg_output vg_mul(vg_graph *g, vg_output a, vg_output b, const char *name) { return build2(g, "Mul", a, b, name); }
vg_output vg_div(vg_graph *g, vg_output a, vg_output b, const char *name) { return build2(g, "RealDiv", a, b, name); }
vg_output vg_maximum(vg_graph *g, vg_output a, vg_output b, const char *name) { return build2(g, "Maximum", a, b, name); }
vg_output vg_minimum(vg_graph *g, vg_output a, vg_output b, const char *name) { return build2(g, "Minimum", a, b, name); }
vg_output vg_pow(vg_graph *g, vg_output a, vg_output b, const char *name) { return build2(g, "Pow", a, b, name); }
vg_output vg_squared_difference(vg_graph *g, vg_output a, vg_output b, const char *name) {
    return build2(g, "SquaredDifference", a, b, name);
}
vg_output vg_greater(vg_graph *g, vg_output a, vg_output b, const char *name) { return build2(g, "Greater", a, b, name); }
vg_output vg_greater_equal(vg_graph *g, vg_output a, vg_output b, const char *name) {
    return build2(g, "GreaterEqual", a, b, name);
}
vg_output vg_less(vg_graph *g, vg_output a, vg_output b, const char *name) { return build2(g, "Less", a, b, name); }
vg_output vg_less_equal(vg_graph *g, vg_output a, vg_output b, const char *name) {
    return build2(g, "LessEqual", a, b, name);
}
vg_output vg_equal(vg_graph *g, vg_output a, vg_output b, const char *name) { return build2(g, "Equal", a, b, name); }
vg_output vg_not_equal(vg_graph *g, vg_output a, vg_output b, const char *name) {
    return build2(g, "NotEqual", a, b, name);
}
vg_output vg_logical_and(vg_graph *g, vg_output a, vg_output b, const char *name) {
    return build2(g, "LogicalAnd", a, b, name);
}
vg_output vg_logical_or(vg_graph *g, vg_output a, vg_output b, const char *name) {
    return build2(g, "LogicalOr", a, b, name);
}
vg_output vg_logical_not(vg_graph *g, vg_output x, const char *name) { return build1(g, "LogicalNot", x, name); }
vg_output vg_neg(vg_graph *g, vg_output x, const char *name) { return build1(g, "Neg", x, name); }
vg_output vg_square(vg_graph *g, vg_output x, const char *name) { return build1(g, "Square", x, name); }
vg_output vg_sqrt(vg_graph *g, vg_output x, const char *name) { return build1(g, "Sqrt", x, name); }
vg_output vg_rsqrt(vg_graph *g, vg_output x, const char *name) { return build1(g, "Rsqrt", x, name); }
vg_output vg_exp(vg_graph *g, vg_output x, const char *name) { return build1(g, "Exp", x, name); }
vg_output vg_log(vg_graph *g, vg_output x, const char *name) { return build1(g, "Log", x, name); }
vg_output vg_abs(vg_graph *g, vg_output x, const char *name) { /* tf.abs: ComplexAbs on complex */
    vg_dtype dt = x.op ? vg_output_dtype(x) : VG_DTYPE_INVALID;
    if (dt == VG_COMPLEX64 || dt == VG_COMPLEX128) return vg_complex_abs(g, x, name);
    return build1(g, "Abs", x, name);
}
vg_output vg_sign(vg_graph *g, vg_output x, const char *name) { return build1(g, "Sign", x, name); }
vg_output vg_reciprocal(vg_graph *g, vg_output x, const char *name) { return build1(g, "Reciprocal", x, name); }
vg_output vg_is_finite(vg_graph *g, vg_output x, const char *name) { return build1(g, "IsFinite", x, name); }

vg_output vg_select(vg_graph *g, vg_output cond, vg_output t, vg_output e, const char *name) {
    return vg__build_simple(g, "Select", name, NULL, (vg_output[]){cond, t, e}, 3);
}

vg_output vg_add_n(vg_graph *g, const vg_output *inputs, int n, const char *name) {
    if (n <= 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "AddN needs at least one input");
        return vg_out(NULL, 0);
    }
    if (n == 1) /* as tf.add_n: a single input is returned (through Identity if named) */
        return name ? vg_identity(g, inputs[0], name) : inputs[0];
    vg_op_builder *b = vg_op_builder_new(g, "AddN", name);
    if (!b) return vg_out(NULL, 0);
    vg_op_builder_add_inputs(b, inputs, n);
    vg_op_builder_set_attr_int(b, "N", n);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_cast(vg_graph *g, vg_output x, vg_dtype dt, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "Cast", name, NULL, (vg_output[]){x}, 1);
    if (!b) return vg_out(NULL, 0);
    vg_op_builder_set_attr_type(b, "DstT", dt);
    vg_op_builder_set_attr_bool(b, "Truncate", false);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_check_numerics(vg_graph *g, vg_output x, const char *message, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "CheckNumerics", name, NULL, (vg_output[]){x}, 1);
    if (!b) return vg_out(NULL, 0);
    if (!message) message = "";
    vg_op_builder_set_attr_string(b, "message", message, strlen(message));
    return vg_out(vg_op_builder_finish(b), 0);
}

/* ------------------------------------------------------------------------ */
/* Gradients (tensorflow/python/ops/math_grad.py) */

static vg_output in_(vg_op *op, int i) { return vg_op_input(op, i); }

/* math_ops.conj: the conjugate of a complex tensor; any other tensor as it is. */
static vg_output conj_(vg_graph *g, vg_output x) {
    vg_dtype dt = vg_output_dtype(x);
    return dt == VG_COMPLEX64 || dt == VG_COMPLEX128 ? vg_conj(g, x, "Conj") : x;
}

/* Scalar Const of x's dtype. */
static vg_output scalar_like(vg_graph *g, vg_output x, double v) {
    return vg_const_fill(g, vg_output_dtype(x), NULL, 0, v, "Const");
}

/* The axes along which input shape s of a binary op (other input shape o) is
 * broadcast, when that is decidable at build time: a known 1 is summed over (harmless
 * when the output dim turns out to be 1 too); an unknown dim is undecidable unless
 * the other side is 1 or absent there. *only_leading: all axes are leading ones (the
 * Sum result already has s's shape). */
static bool static_reduce_axes(const vg_shape *s, const vg_shape *o, int32_t *axes, int *n, bool *only_leading) {
    if (s->ndims < 0 || o->ndims < 0) return false;
    int r = s->ndims > o->ndims ? s->ndims : o->ndims, off = r - s->ndims, ooff = r - o->ndims;
    *n = 0;
    *only_leading = true;
    for (int i = 0; i < r; i++) {
        if (i < off) {
            axes[(*n)++] = i;
            continue;
        }
        int64_t d = s->dims[i - off], od = i >= ooff ? o->dims[i - ooff] : 1;
        if (d == 1 && od != 1) {
            axes[(*n)++] = i;
            *only_leading = false;
        } else if (d < 0 && od != 1) {
            return false;
        }
    }
    return true;
}

/* Sums grad over the Const axes and reshapes it to x's shape (Const when known). */
static vg_output reduce_static(vg_graph *g, vg_output grad, vg_output x, const int32_t *axes, int n,
                               bool only_leading, const char *sum_name, const char *reshape_name) {
    if (!grad.op || n == 0) return grad; /* no broadcasting happened */
    vg_output s = vg_sum(g, grad, vg_const_i32_vec(g, axes, n, "Const"), false, sum_name);
    if (only_leading) return s;
    vg_shape sx = vg_output_shape(x);
    if (vg_shape_is_fully_defined(&sx)) return vg_reshape_c(g, s, sx.dims, sx.ndims, reshape_name);
    return vg_reshape(g, s, vg_shape_op(g, x, VG_INT32, "Shape"), reshape_name);
}

/* TF's broadcast reduction for a binary op's gradient: dx[0] = reshape(reduce_sum(gx,
 * rx), shape(x)), dx[1] likewise for gy. Where the axes can be decided from the
 * build-time shapes they become a Const (Sum + Reshape, or nothing at all without
 * broadcasting: the common [N,C] op [C] case with an unknown N needs one Sum);
 * otherwise Shape -> BroadcastGradientArgs -> Sum -> Reshape as TF. */
static void bcast_reduce(vg_graph *g, vg_op *op, vg_output gx, vg_output gy, vg_output *dx) {
    vg_output in[2] = {in_(op, 0), in_(op, 1)}, gs[2] = {gx, gy};
    vg_shape sh[2] = {vg_output_shape(in[0]), vg_output_shape(in[1])};
    vg_op *bga = NULL;
    vg_output shp[2];
    for (int k = 0; k < 2; k++) {
        int32_t axes[VG_MAX_DIMS];
        int n;
        bool lead;
        if (static_reduce_axes(&sh[k], &sh[1 - k], axes, &n, &lead)) {
            dx[k] = reduce_static(g, gs[k], in[k], axes, n, lead, k ? "Sum_1" : "Sum", k ? "Reshape_1" : "Reshape");
            continue;
        }
        if (!bga) {
            shp[0] = vg_shape_op(g, in[0], VG_INT32, "Shape");
            shp[1] = vg_shape_op(g, in[1], VG_INT32, "Shape_1");
            bga = vg_broadcast_gradient_args(g, shp[0], shp[1], "BroadcastGradientArgs");
        }
        dx[k] = vg_reshape(g, vg_sum(g, gs[k], vg_out(bga, k), false, k ? "Sum_1" : "Sum"), shp[k],
                           k ? "Reshape_1" : "Reshape");
    }
}

static vg_code grad_add(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    bcast_reduce(g, op, dy[0], dy[0], dx);
    return vg_graph_status(g, NULL);
}

static vg_code grad_sub(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    bcast_reduce(g, op, dy[0], dy[0], dx);
    dx[1] = vg_neg(g, dx[1], "Neg");
    return vg_graph_status(g, NULL);
}

static vg_code grad_mul(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = conj_(g, in_(op, 0)), y = conj_(g, in_(op, 1));
    bcast_reduce(g, op, vg_mul(g, dy[0], y, "Mul"), vg_mul(g, x, dy[0], "Mul_1"), dx);
    return vg_graph_status(g, NULL);
}

static vg_code grad_div(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = conj_(g, in_(op, 0)), y = conj_(g, in_(op, 1));
    vg_output gx = vg_div(g, dy[0], y, "RealDiv");
    vg_output t = vg_div(g, vg_div(g, vg_neg(g, x, "Neg"), y, "RealDiv_1"), y, "RealDiv_2");
    bcast_reduce(g, op, gx, vg_mul(g, dy[0], t, "mul"), dx);
    return vg_graph_status(g, NULL);
}

/* _MaximumMinimumGrad: the gradient goes to x where x >= y (max) / x <= y (min). */
static vg_code grad_max_min(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx, bool is_max) {
    vg_output x = in_(op, 0), y = in_(op, 1);
    vg_output zeros = vg_zeros_like(g, dy[0], "zeros");
    vg_output mask = is_max ? vg_greater_equal(g, x, y, "GreaterEqual") : vg_less_equal(g, x, y, "LessEqual");
    bcast_reduce(g, op, vg_select(g, mask, dy[0], zeros, "Select"), vg_select(g, mask, zeros, dy[0], "Select_1"),
                 dx);
    return vg_graph_status(g, NULL);
}
static vg_code grad_maximum(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    return grad_max_min(g, op, dy, dx, true);
}
static vg_code grad_minimum(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    return grad_max_min(g, op, dy, dx, false);
}

/* _PowGrad: dx = dy * y * x^(y-1); dy = dy * z * log(x) where x > 0, else 0. */
static vg_code grad_pow(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = in_(op, 0), y = in_(op, 1), z = vg_out(op, 0);
    vg_output gx = vg_mul(g, vg_mul(g, dy[0], y, "mul"),
                          vg_pow(g, x, vg_sub(g, y, scalar_like(g, y, 1), "sub"), "Pow"), "mul_1");
    vg_output mask = vg_greater(g, x, scalar_like(g, x, 0), "Greater");
    vg_output safe_x = vg_select(g, mask, x, vg_ones_like(g, x, "ones_like"), "Select");
    vg_output log_x = vg_select(g, mask, vg_log(g, safe_x, "Log"), vg_zeros_like(g, x, "zeros_like"), "Select_1");
    vg_output gy = vg_mul(g, vg_mul(g, dy[0], z, "mul_2"), log_x, "mul_3");
    bcast_reduce(g, op, gx, gy, dx);
    return vg_graph_status(g, NULL);
}

static vg_code grad_sqdiff(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = in_(op, 0), y = in_(op, 1);
    vg_output xg = vg_mul(g, vg_mul(g, scalar_like(g, dy[0], 2), dy[0], "scalar_mul"), vg_sub(g, x, y, "sub"),
                          "mul");
    bcast_reduce(g, op, xg, xg, dx);
    dx[1] = vg_neg(g, dx[1], "Neg");
    return vg_graph_status(g, NULL);
}

static vg_code grad_neg(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = vg_neg(g, dy[0], "Neg");
    return vg_graph_status(g, NULL);
}

static vg_code grad_square(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output x = conj_(g, in_(op, 0));
    dx[0] = vg_mul(g, dy[0], vg_mul(g, x, scalar_like(g, x, 2), "Mul"), "Mul_1");
    return vg_graph_status(g, NULL);
}

static vg_output build_grad_op(vg_graph *g, const char *type, vg_output y, vg_output dy) {
    return build2(g, type, y, dy, type);
}

static vg_code grad_sqrt(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = build_grad_op(g, "SqrtGrad", vg_out(op, 0), dy[0]);
    return vg_graph_status(g, NULL);
}

static vg_code grad_rsqrt(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = build_grad_op(g, "RsqrtGrad", vg_out(op, 0), dy[0]);
    return vg_graph_status(g, NULL);
}

static vg_code grad_reciprocal(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = build_grad_op(g, "ReciprocalGrad", vg_out(op, 0), dy[0]);
    return vg_graph_status(g, NULL);
}

static vg_code grad_exp(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = vg_mul(g, dy[0], conj_(g, vg_out(op, 0)), "mul");
    return vg_graph_status(g, NULL);
}

static vg_code grad_log(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = vg_mul(g, dy[0], vg_reciprocal(g, conj_(g, in_(op, 0)), "Reciprocal"), "mul");
    return vg_graph_status(g, NULL);
}

static vg_code grad_abs(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = vg_mul(g, dy[0], vg_sign(g, in_(op, 0), "Sign"), "mul");
    return vg_graph_status(g, NULL);
}

static vg_code grad_sign(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    dx[0] = vg_zeros_like(g, in_(op, 0), "zeros_like");
    return vg_graph_status(g, NULL);
}

/* _SqrtGradGrad: y = 0.5 * dy / a  ->  (-grad / a * y, 0.5 * grad / a). */
static vg_code grad_sqrt_grad(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output a = in_(op, 0), y = vg_out(op, 0);
    vg_output ga = vg_div(g, dy[0], a, "truediv");
    dx[0] = vg_mul(g, vg_neg(g, ga, "Neg"), y, "mul");
    dx[1] = vg_mul(g, scalar_like(g, ga, 0.5), ga, "mul_1");
    return vg_graph_status(g, NULL);
}

/* _RsqrtGradGrad: y = -0.5 * b * a^3  ->  (-1.5 * grad * b * a^2, RsqrtGrad(a, grad)). */
static vg_code grad_rsqrt_grad(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output a = in_(op, 0), b = in_(op, 1);
    vg_output ga = vg_mul(g, vg_mul(g, scalar_like(g, a, -1.5), vg_mul(g, dy[0], b, "mul"), "mul_1"),
                          vg_square(g, a, "Square"), "mul_2");
    dx[0] = ga;
    dx[1] = build_grad_op(g, "RsqrtGrad", a, dy[0]);
    return vg_graph_status(g, NULL);
}

/* _ReciprocalGradGrad: y = -b * a^2  ->  (-2 * grad * b * a, ReciprocalGrad(a, grad)). */
static vg_code grad_reciprocal_grad(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output a = in_(op, 0), b = in_(op, 1);
    dx[0] = vg_mul(g, scalar_like(g, a, -2), vg_mul(g, vg_mul(g, dy[0], b, "mul"), a, "mul_1"), "mul_2");
    dx[1] = build_grad_op(g, "ReciprocalGrad", a, dy[0]);
    return vg_graph_status(g, NULL);
}

/* _SelectGrad: (None, select(c, grad, 0), select(c, 0, grad)). */
static vg_code grad_select(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_output c = in_(op, 0);
    vg_output zeros = vg_zeros_like(g, in_(op, 1), "zeros_like");
    dx[1] = vg_select(g, c, dy[0], zeros, "Select");
    dx[2] = vg_select(g, c, zeros, dy[0], "Select_1");
    return vg_graph_status(g, NULL);
}

static vg_code grad_add_n(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    for (int i = 0; i < vg_op_num_inputs(op); i++) dx[i] = dy[0];
    return vg_graph_status(g, NULL);
}

/* _CastGrad: only between floating dtypes; none for the rest. */
static vg_code grad_cast(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_dtype src = vg_output_dtype(in_(op, 0)), dst = vg_output_dtype(vg_out(op, 0));
    unsigned fl = VG__M(VG_FLOAT) | VG__M(VG_DOUBLE) | VG__M(VG_HALF) | VG__M(VG_BFLOAT16) | VG__M_COMPLEX;
    bool fs = (unsigned)src < 32 && (fl & VG__M(src)), fd = (unsigned)dst < 32 && (fl & VG__M(dst));
    if (fs && fd) dx[0] = vg_cast(g, dy[0], src, "Cast");
    return vg_graph_status(g, NULL);
}

static vg_code grad_check_numerics(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    const char *msg = "";
    size_t len = 0;
    vg_op_attr_string(op, "message", &msg, &len);
    char buf[1024];
    snprintf(buf, sizeof buf, "Not a number (NaN) or infinity (Inf) values detected in gradient. %.*s", (int)len,
             msg);
    dx[0] = vg_check_numerics(g, dy[0], buf, "CheckNumerics");
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* The table */

#define ND VG__OP_NOT_DIFFERENTIABLE
const vg__op_def vg__ops_math_cwise[] = {
    {"AddV2", 2, 2, 0, 0, shape_add, kernel_add, grad_add},
    {"Add", 2, 2, 0, 0, shape_add, kernel_add, grad_add},
    {"Sub", 2, 2, 0, 0, shape_sub, kernel_sub, grad_sub},
    {"Mul", 2, 2, 0, 0, shape_mul, kernel_mul, grad_mul},
    {"RealDiv", 2, 2, 0, 0, shape_div, kernel_div, grad_div},
    {"Maximum", 2, 2, 0, 0, shape_maximum, kernel_maximum, grad_maximum},
    {"Minimum", 2, 2, 0, 0, shape_minimum, kernel_minimum, grad_minimum},
    {"Pow", 2, 2, 0, 0, shape_pow, kernel_pow, grad_pow},
    {"SquaredDifference", 2, 2, 0, 0, shape_sqdiff, kernel_sqdiff, grad_sqdiff},
    {"Greater", 2, 2, ND, 0, shape_greater, kernel_greater, NULL},
    {"GreaterEqual", 2, 2, ND, 0, shape_greater_equal, kernel_greater_equal, NULL},
    {"Less", 2, 2, ND, 0, shape_less, kernel_less, NULL},
    {"LessEqual", 2, 2, ND, 0, shape_less_equal, kernel_less_equal, NULL},
    {"Equal", 2, 2, ND, 0, shape_equal, kernel_equal, NULL},
    {"NotEqual", 2, 2, ND, 0, shape_not_equal, kernel_not_equal, NULL},
    {"LogicalAnd", 2, 2, ND, 0, shape_logical_and, kernel_logical_and, NULL},
    {"LogicalOr", 2, 2, ND, 0, shape_logical_or, kernel_logical_or, NULL},
    {"LogicalNot", 1, 1, ND, 0, shape_logical_not, kernel_logical_not, NULL},
    {"SqrtGrad", 2, 2, 0, 0, shape_sqrt_grad, kernel_sqrt_grad, grad_sqrt_grad},
    {"RsqrtGrad", 2, 2, 0, 0, shape_rsqrt_grad, kernel_rsqrt_grad, grad_rsqrt_grad},
    {"ReciprocalGrad", 2, 2, 0, 0, shape_reciprocal_grad, kernel_reciprocal_grad, grad_reciprocal_grad},
    {"Neg", 1, 1, 0, 0, shape_neg, kernel_neg, grad_neg},
    {"Square", 1, 1, 0, 0, shape_square, kernel_square, grad_square},
    {"Sqrt", 1, 1, 0, 0, shape_sqrt, kernel_sqrt, grad_sqrt},
    {"Rsqrt", 1, 1, 0, 0, shape_rsqrt, kernel_rsqrt, grad_rsqrt},
    {"Exp", 1, 1, 0, 0, shape_exp, kernel_exp, grad_exp},
    {"Log", 1, 1, 0, 0, shape_log, kernel_log, grad_log},
    {"Abs", 1, 1, 0, 0, shape_abs, kernel_abs, grad_abs},
    {"Sign", 1, 1, 0, 0, shape_sign, kernel_sign, grad_sign},
    {"Reciprocal", 1, 1, 0, 0, shape_reciprocal, kernel_reciprocal, grad_reciprocal},
    {"IsFinite", 1, 1, ND, 0, shape_is_finite, kernel_is_finite, NULL},
    {"Select", 3, 3, 0, 0, shape_select, kernel_select, grad_select},
    {"AddN", 1, -1, 0, 0, shape_add_n, kernel_add_n, grad_add_n},
    {"Cast", 1, 1, 0, 0, shape_cast, kernel_cast, grad_cast},
    {"CheckNumerics", 1, 1, 0, 0, shape_check_numerics, kernel_check_numerics, grad_check_numerics},
    {0},
};
