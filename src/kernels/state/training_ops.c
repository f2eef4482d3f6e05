/*
 * training_ops.c - the optimizers' update ops (TF's training_ops): ApplyGradientDescent,
 * ApplyMomentum, ApplyAdam, ApplyRMSProp, ApplyAdagrad, ApplyAdadelta, ApplyFtrl,
 * ApplyFtrlV2, ApplyProximalGradientDescent, float32 and float64, and their sparse forms
 * SparseApply{Adagrad,Momentum,Adadelta,Ftrl,FtrlV2,ProximalGradientDescent,RMSProp}
 * (grad rows with an index each: only the indexed rows of var and its slots change; a
 * repeated index is applied once per occurrence, in order, as TF's CPU kernels do).
 *
 * The variable and its slots are ref inputs, or for the ResourceApply* /
 * ResourceSparseApply* forms of the same ops resource handles (kernels/state/resource_var.h):
 * the kernels are shared, only where the storage comes from differs. A kernel locks
 * every distinct slot it touches (in address order, so two kernels sharing slots cannot
 * deadlock), gets the values through vg__var_mutable / vg__rvar_mutable (copy-on-write
 * only if somebody else still holds them) and updates them in place in one pass, split
 * over the intra-op threads for big tensors. Output 0 of the ref forms is the
 * variable's new value (the op forwards its ref); the resource forms have no outputs.
 */
/* The update loops must vectorize (they touch every weight every step); GCC's -O2
 * only vectorizes loops without a remainder, so this file asks for -O3. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

#include "kernels/kernel.h"
#include "kernels/backend/cpu_features.h"
#include "kernels/nn/nn_internal.h"
#include "kernels/state/resource_var.h"
#include "vigil/ops.h"
#include "vigil/resource_variables.h"
#include <math.h>
#include <stdatomic.h>

/* ------------------------------------------------------------------------ */
/* build time */

/* The inputs of an apply op: name of each, whether it is a scalar hyper-parameter. */
typedef struct apply_sig {
    const char *type;
    int n;
    const char *names[10];
    bool scalar[10];
} apply_sig;

static const apply_sig SIG_GD = {"ApplyGradientDescent", 3, {"var", "alpha", "delta"}, {0, 1, 0}};
static const apply_sig SIG_MOMENTUM = {"ApplyMomentum", 5, {"var", "accum", "lr", "grad", "momentum"}, {0, 0, 1, 0, 1}};
static const apply_sig SIG_ADAM = {"ApplyAdam",
                                   10,
                                   {"var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon",
                                    "grad"},
                                   {0, 0, 0, 1, 1, 1, 1, 1, 1, 0}};
static const apply_sig SIG_RMSPROP = {"ApplyRMSProp",
                                      8,
                                      {"var", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad"},
                                      {0, 0, 0, 1, 1, 1, 1, 0}};

static const apply_sig SIG_ADAGRAD = {"ApplyAdagrad", 4, {"var", "accum", "lr", "grad"}, {0, 0, 1, 0}};
static const apply_sig SIG_ADADELTA = {"ApplyAdadelta",
                                       7,
                                       {"var", "accum", "accum_update", "lr", "rho", "epsilon", "grad"},
                                       {0, 0, 0, 1, 1, 1, 0}};
static const apply_sig SIG_FTRL = {"ApplyFtrl",
                                   8,
                                   {"var", "accum", "linear", "grad", "lr", "l1", "l2", "lr_power"},
                                   {0, 0, 0, 0, 1, 1, 1, 1}};
static const apply_sig SIG_FTRL_V2 = {"ApplyFtrlV2",
                                      9,
                                      {"var", "accum", "linear", "grad", "lr", "l1", "l2", "l2_shrinkage", "lr_power"},
                                      {0, 0, 0, 0, 1, 1, 1, 1, 1}};
static const apply_sig SIG_PROXIMAL_GD = {"ApplyProximalGradientDescent",
                                          5,
                                          {"var", "alpha", "l1", "l2", "delta"},
                                          {0, 1, 1, 1, 0}};

/* The Resource* forms take the variable (input 0) and its slots as handles. */
static bool is_resource_op(const vg_op *op) { return vg__op_input_dtype(op, 0) == VG_RESOURCE; }

/* Input i as the update sees it: its own dtype and shape, or for a handle those its
 * VarHandleOp declares (false: a handle from elsewhere, not checked). */
static bool input_info(const vg_op *op, int i, vg_dtype *dt, vg_shape *s) {
    if (vg__op_input_dtype(op, i) == VG_RESOURCE) return vg__rvar_handle_info(op, i, dt, s);
    *dt = vg__op_input_dtype(op, i);
    *s = vg__op_input_shape(op, i);
    return true;
}

/* The dtype T and the var's shape: a ref var's own; for a resource op the "T" attr
 * (the builders set the gradient's dtype) or else the first input that is not a
 * handle, and the shape the var's handle declares. */
static vg_code var_type_shape(vg_op *op, int n, vg_dtype *t, vg_shape *s, vg_status *st) {
    if (!is_resource_op(op)) {
        *t = vg__op_input_dtype(op, 0);
        *s = vg__op_input_shape(op, 0);
        return VG_OK;
    }
    if (!vg_op_attr_type_(op, "T", t)) {
        *t = VG_DTYPE_INVALID;
        for (int i = 1; i < n && *t == VG_DTYPE_INVALID; i++)
            if (vg__op_input_dtype(op, i) != VG_RESOURCE) *t = vg__op_input_dtype(op, i);
    }
    vg_dtype vd;
    if (vg__rvar_handle_info(op, 0, &vd, s) && vd != *t)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Input 'var' of '%s' Op is a variable of type %s that does not match type %s of "
                             "argument 'T'.",
                             vg_op_type(op), vg_dtype_name(vd), vg_dtype_name(*t));
    return VG_OK;
}

/* Output 0 (the var's new value) for the ref forms; none for the resource forms. */
static void set_outputs(vg_op *op, vg_dtype t, vg_shape s) {
    if (is_resource_op(op)) {
        vg__op_set_num_outputs(op, 0);
        return;
    }
    vg__op_set_num_outputs(op, 1);
    vg__op_set_output(op, 0, t, s);
}

/* var_type_shape for the apply ops, which take float or double only. */
static vg_code var_float_type_shape(vg_op *op, int n, vg_dtype *t, vg_shape *s, vg_status *st) {
    if (var_type_shape(op, n, t, s, st)) return st->code;
    if (*t != VG_FLOAT && *t != VG_DOUBLE)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s supports float and double, not %s", vg_op_type(op),
                             vg_dtype_name(*t));
    return VG_OK;
}

/* Build-time check of input i (dtype d, shape *si) of an apply op against var's dtype
 * t: -1 (status set) when its dtype differs or a hyper-parameter is not a scalar, 1
 * for a checked hyper-parameter (sig->scalar[i]), 0 for a tensor input. */
static int check_hyper_input(vg_op *op, const apply_sig *sig, int i, vg_dtype d, vg_dtype t, const vg_shape *si,
                             vg_status *st) {
    if (d != t) {
        vg_status_set(st, VG_INVALID_ARGUMENT,
                      "Input '%s' of '%s' Op has type %s that does not match type %s of argument 'var'.", sig->names[i],
                      vg_op_type(op), vg_dtype_name(d), vg_dtype_name(t));
        return -1;
    }
    if (!sig->scalar[i]) return 0;
    if (si->ndims > 0) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "Shape must be rank 0 but is rank %d (input '%s')", si->ndims,
                      sig->names[i]);
        return -1;
    }
    return 1;
}

/* The end of an apply op's shape function: T and use_locking defaults, output 0. */
static vg_code apply_shape_end(vg_op *op, vg_dtype t, vg_shape s) {
    vg__op_set_default_attr_type(op, "T", t);
    vg__op_set_default_attr_bool(op, "use_locking", false);
    set_outputs(op, t, s);
    return VG_OK;
}

/* Checks dtypes (all T, float or double), scalar ranks and that every tensor input
 * has var's shape; sets T/use_locking defaults and output 0. */
static vg_code shape_apply(vg_op *op, const apply_sig *sig, vg_status *st) {
    vg_dtype t;
    vg_shape s;
    if (var_float_type_shape(op, sig->n, &t, &s, st)) return st->code;
    for (int i = 1; i < sig->n; i++) {
        vg_dtype d;
        vg_shape si;
        if (!input_info(op, i, &d, &si)) continue;
        int sc = check_hyper_input(op, sig, i, d, t, &si, st);
        if (sc < 0) return st->code;
        if (sc) continue;
        if (s.ndims < 0) { s = si; continue; }
        if (si.ndims < 0) continue;
        char a[128], b[128];
        if (si.ndims != s.ndims)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Shapes must be equal rank, but are %d and %d (var and %s)",
                                 s.ndims, si.ndims, sig->names[i]);
        for (int k = 0; k < s.ndims; k++) {
            if (s.dims[k] >= 0 && si.dims[k] >= 0 && s.dims[k] != si.dims[k])
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "Dimension %d in both shapes must be equal, but are %lld and %lld. Shapes are "
                                     "%s and %s. (var and %s)",
                                     k, (long long)s.dims[k], (long long)si.dims[k], vg_shape_str(&s, a, sizeof a),
                                     vg_shape_str(&si, b, sizeof b), sig->names[i]);
            if (s.dims[k] < 0) s.dims[k] = si.dims[k];
        }
    }
    return apply_shape_end(op, t, s);
}

static vg_code shape_gd(vg_op *op, vg_status *st) { return shape_apply(op, &SIG_GD, st); }
static vg_code shape_momentum(vg_op *op, vg_status *st) {
    vg__op_set_default_attr_bool(op, "use_nesterov", false);
    return shape_apply(op, &SIG_MOMENTUM, st);
}
static vg_code shape_adam(vg_op *op, vg_status *st) {
    vg__op_set_default_attr_bool(op, "use_nesterov", false);
    return shape_apply(op, &SIG_ADAM, st);
}
static vg_code shape_rmsprop(vg_op *op, vg_status *st) { return shape_apply(op, &SIG_RMSPROP, st); }
static vg_code shape_adagrad(vg_op *op, vg_status *st) {
    vg__op_set_default_attr_bool(op, "update_slots", true);
    return shape_apply(op, &SIG_ADAGRAD, st);
}
static vg_code shape_adadelta(vg_op *op, vg_status *st) { return shape_apply(op, &SIG_ADADELTA, st); }
static vg_code shape_ftrl(vg_op *op, vg_status *st) { return shape_apply(op, &SIG_FTRL, st); }
static vg_code shape_ftrl_v2(vg_op *op, vg_status *st) { return shape_apply(op, &SIG_FTRL_V2, st); }
static vg_code shape_proximal_gd(vg_op *op, vg_status *st) { return shape_apply(op, &SIG_PROXIMAL_GD, st); }

/* ------------------------------------------------------------------------ */
/* run time: locking, input checks */

/* A variable's storage: the slot behind a ref input or a resource variable. */
typedef struct vslot {
    vg__var *ref;
    vg__rvar *res;
} vslot;

static uintptr_t vslot_addr(vslot s) { return s.ref ? (uintptr_t)s.ref : (uintptr_t)s.res; }
static void vslot_lock(vslot s) {
    if (s.ref) vg__var_lock(s.ref);
    else vg__rvar_lock(s.res);
}
static void vslot_unlock(vslot s) {
    if (s.ref) vg__var_unlock(s.ref);
    else vg__rvar_unlock(s.res);
}
static vg_tensor *vslot_mutable(vslot s, vg_status *st) {
    return s.ref ? vg__var_mutable(s.ref, st) : vg__rvar_mutable(s.res, st);
}

/* The storage behind input i: a ref input's slot or the variable of a handle. */
static vg_code vslot_of(vg__kctx *ctx, int i, vslot *out) {
    vg_status *st = vg__kctx_status(ctx);
    out->ref = vg__kctx_var(ctx, i);
    out->res = NULL;
    if (out->ref) return VG_OK;
    vg_tensor *h = vg__kctx_input(ctx, i);
    if (vg_tensor_dtype(h) != VG_RESOURCE)
        return vg_status_set(st, VG_INTERNAL, "input %d is not a variable reference", i);
    out->res = vg__rvar_of(h, st);
    return out->res ? VG_OK : st->code;
}

typedef struct lockset {
    vslot v[3];
    int n;
} lockset;

static void lockset_release(lockset *ls) {
    for (int i = ls->n - 1; i >= 0; i--) vslot_unlock(ls->v[i]);
    ls->n = 0;
}

/* Locks the variables behind inputs 0..nrefs-1 (refs or handles; distinct ones, by
 * address) and returns their values made mutable in vals. On failure nothing stays
 * locked. */
static vg_code acquire(vg__kctx *ctx, int nrefs, lockset *ls, vg_tensor **vals) {
    vg_status *st = vg__kctx_status(ctx);
    vslot vars[3];
    ls->n = 0;
    for (int i = 0; i < nrefs; i++) {
        if (vslot_of(ctx, i, &vars[i])) return st->code;
        bool dup = false;
        for (int k = 0; k < ls->n; k++) dup |= vslot_addr(ls->v[k]) == vslot_addr(vars[i]);
        if (!dup) ls->v[ls->n++] = vars[i];
    }
    /* insertion sort by address: a fixed lock order */
    for (int i = 1; i < ls->n; i++)
        for (int k = i; k > 0 && vslot_addr(ls->v[k]) < vslot_addr(ls->v[k - 1]); k--) {
            vslot t = ls->v[k];
            ls->v[k] = ls->v[k - 1];
            ls->v[k - 1] = t;
        }
    for (int i = 0; i < ls->n; i++) vslot_lock(ls->v[i]);
    for (int i = 0; i < nrefs; i++) {
        vals[i] = vslot_mutable(vars[i], st);
        if (!vals[i]) {
            lockset_release(ls);
            return st->code;
        }
    }
    return VG_OK;
}

/* Run-time check of input x = vals[i] of an apply op against var's dtype t: -1 (status
 * set) when its dtype differs or a hyper-parameter is not a scalar (TF's
 * IsLegacyScalar: rank 0 or [1]), 1 for a hyper-parameter (its value read into
 * scal[i]), 0 for a tensor input. */
static int run_hyper_input(vg_status *st, const apply_sig *sig, int i, const vg_tensor *x, vg_dtype t, double *scal) {
    char a[128];
    if (vg_tensor_dtype(x) != t) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "%s has dtype %s, var has %s", sig->names[i],
                      vg_dtype_name(vg_tensor_dtype(x)), vg_dtype_name(t));
        return -1;
    }
    if (!sig->scalar[i]) return 0;
    if (vg_tensor_ndims(x) > 1 || vg_tensor_num_elements(x) != 1) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "%s is not a scalar: %s", sig->names[i], vg__tshape_str(x, a, sizeof a));
        return -1;
    }
    scal[i] = t == VG_FLOAT ? (double)*(const float *)vg_tensor_data(x) : *(const double *)vg_tensor_data(x);
    return 1;
}

/* Reads the hyper-parameters (TF's IsLegacyScalar: rank 0, or [1]) and checks that
 * the tensors in vals (0..n-1, refs then grad at sig index) match var's shape. */
static vg_code check_inputs(vg__kctx *ctx, const apply_sig *sig, vg_tensor *const *vals, double *scal) {
    vg_status *st = vg__kctx_status(ctx);
    vg_dtype t = vg_tensor_dtype(vals[0]);
    char a[128], b[128];
    for (int i = 1; i < sig->n; i++) {
        const vg_tensor *x = vals[i];
        int sc = run_hyper_input(st, sig, i, x, t, scal);
        if (sc < 0) return st->code;
        if (!sc && !vg__same_dims(vals[0], x)) {
            return vg_status_set(st, VG_INVALID_ARGUMENT, "var and %s do not have the same shape%s %s", sig->names[i],
                                 vg__tshape_str(vals[0], a, sizeof a), vg__tshape_str(x, b, sizeof b));
        }
    }
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* the update loops, one per op and dtype (x[i] in one pass, all in registers) */

typedef struct upd_args {
    void *var, *s1, *s2;   /* var and up to two slots */
    const void *grad;
    double c[6];           /* op-specific coefficients */
    bool nesterov;
} upd_args;

#define DEFINE_LOOPS(T, SFX, SQRT)                                                              \
    static void gd_##SFX(void *arg, int64_t b, int64_t e) {                                     \
        const upd_args *a = arg;                                                                \
        T *restrict var = a->var;                                                               \
        const T *restrict d = a->grad;                                                          \
        const T alpha = (T)a->c[0];                                                             \
        for (int64_t i = b; i < e; i++) var[i] -= alpha * d[i];                                 \
    }                                                                                           \
    static void momentum_##SFX(void *arg, int64_t b, int64_t e) {                               \
        const upd_args *a = arg;                                                                \
        T *restrict var = a->var, *restrict acc = a->s1;                                        \
        const T *restrict g = a->grad;                                                          \
        const T lr = (T)a->c[0], mom = (T)a->c[1];                                              \
        if (a->nesterov) {                                                                      \
            for (int64_t i = b; i < e; i++) {                                                   \
                T ac = acc[i] * mom + g[i];                                                     \
                acc[i] = ac;                                                                    \
                var[i] -= g[i] * lr + ac * mom * lr;                                            \
            }                                                                                   \
        } else {                                                                                \
            for (int64_t i = b; i < e; i++) {                                                   \
                T ac = acc[i] * mom + g[i];                                                     \
                acc[i] = ac;                                                                    \
                var[i] -= lr * ac;                                                              \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    /* c: lr_t, beta1, 1-beta1, 1-beta2, epsilon */                                             \
    static void adam_scalar_##SFX(const upd_args *a, int64_t b, int64_t e) {                    \
        T *restrict var = a->var, *restrict m = a->s1, *restrict v = a->s2;                     \
        const T *restrict g = a->grad;                                                          \
        const T lr = (T)a->c[0], b1 = (T)a->c[1], omb1 = (T)a->c[2], omb2 = (T)a->c[3];         \
        const T eps = (T)a->c[4];                                                               \
        if (a->nesterov) {                                                                      \
            for (int64_t i = b; i < e; i++) {                                                   \
                T gi = g[i];                                                                    \
                T mi = m[i] + (gi - m[i]) * omb1;                                               \
                T vi = v[i] + (gi * gi - v[i]) * omb2;                                          \
                m[i] = mi;                                                                      \
                v[i] = vi;                                                                      \
                var[i] -= ((gi * omb1 + b1 * mi) * lr) / (SQRT(vi) + eps);                      \
            }                                                                                   \
        } else {                                                                                \
            for (int64_t i = b; i < e; i++) {                                                   \
                T gi = g[i];                                                                    \
                T mi = m[i] + (gi - m[i]) * omb1;                                               \
                T vi = v[i] + (gi * gi - v[i]) * omb2;                                          \
                m[i] = mi;                                                                      \
                v[i] = vi;                                                                      \
                var[i] -= (mi * lr) / (SQRT(vi) + eps);                                         \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    /* c: lr, 1-rho, momentum, epsilon */                                                       \
    static void rmsprop_scalar_##SFX(const upd_args *a, int64_t b, int64_t e) {                 \
        T *restrict var = a->var, *restrict ms = a->s1, *restrict mom = a->s2;                  \
        const T *restrict g = a->grad;                                                          \
        const T lr = (T)a->c[0], omr = (T)a->c[1], mo = (T)a->c[2], eps = (T)a->c[3];           \
        for (int64_t i = b; i < e; i++) {                                                       \
            T gi = g[i];                                                                        \
            T msi = ms[i] + (gi * gi - ms[i]) * omr;                                            \
            T mm = mom[i] * mo + lr * gi / SQRT(msi + eps);                                     \
            ms[i] = msi;                                                                        \
            mom[i] = mm;                                                                        \
            var[i] -= mm;                                                                       \
        }                                                                                       \
    }

DEFINE_LOOPS(float, f32, sqrtf)
DEFINE_LOOPS(double, f64, sqrt)

/* The loops of the optimizers added later (scalar; TF's Eigen expressions, in the same
 * order of operations). */
#define DEFINE_LOOPS2(T, SFX, SQRT, POW, FABS)                                                  \
    /* c: lr; nesterov = update_slots */                                                        \
    static void adagrad_##SFX(void *arg, int64_t b, int64_t e) {                                \
        const upd_args *a = arg;                                                                \
        T *restrict var = a->var, *restrict acc = a->s1;                                        \
        const T *restrict g = a->grad;                                                          \
        const T lr = (T)a->c[0];                                                                \
        for (int64_t i = b; i < e; i++) {                                                       \
            if (a->nesterov) acc[i] += g[i] * g[i];                                             \
            var[i] -= lr * g[i] * ((T)1 / SQRT(acc[i]));                                        \
        }                                                                                       \
    }                                                                                           \
    /* c: lr, rho, epsilon */                                                                   \
    static void adadelta_##SFX(void *arg, int64_t b, int64_t e) {                               \
        const upd_args *a = arg;                                                                \
        T *restrict var = a->var, *restrict acc = a->s1, *restrict accu = a->s2;                \
        const T *restrict g = a->grad;                                                          \
        const T lr = (T)a->c[0], rho = (T)a->c[1], eps = (T)a->c[2];                            \
        for (int64_t i = b; i < e; i++) {                                                       \
            T ac = acc[i] * rho + g[i] * g[i] * ((T)1 - rho);                                   \
            T upd = SQRT(accu[i] + eps) * ((T)1 / SQRT(ac + eps)) * g[i];                       \
            acc[i] = ac;                                                                        \
            var[i] -= upd * lr;                                                                 \
            accu[i] = accu[i] * rho + upd * upd * ((T)1 - rho);                                 \
        }                                                                                       \
    }                                                                                           \
    /* c: lr, l1, l2, l2_shrinkage, lr_power */                                                 \
    static void ftrl_##SFX(void *arg, int64_t b, int64_t e) {                                   \
        const upd_args *a = arg;                                                                \
        T *restrict var = a->var, *restrict acc = a->s1, *restrict lin = a->s2;                 \
        const T *restrict g = a->grad;                                                          \
        const T lr = (T)a->c[0], l1 = (T)a->c[1], l2 = (T)a->c[2], shr = (T)a->c[3];            \
        const T lp = (T)a->c[4];                                                                \
        const bool half = lp == (T)-0.5;                                                        \
        for (int64_t i = b; i < e; i++) {                                                       \
            T gi = g[i], gs = gi + (T)2 * shr * var[i];                                         \
            T na = acc[i] + gi * gi;                                                            \
            T sigma = half ? (SQRT(na) - SQRT(acc[i])) / lr : (POW(na, -lp) - POW(acc[i], -lp)) / lr; \
            T li = lin[i] + gs - sigma * var[i];                                                \
            T y = (half ? SQRT(na) / lr : POW(na, -lp) / lr) + (T)2 * l2;                       \
            T x = (li < -l1 ? -l1 : li > l1 ? l1 : li) - li;                                    \
            lin[i] = li;                                                                        \
            var[i] = FABS(li) > l1 ? x / y : (T)0;                                              \
            acc[i] = na;                                                                        \
        }                                                                                       \
    }                                                                                           \
    /* c: alpha, l1, l2 */                                                                      \
    static void proximal_gd_##SFX(void *arg, int64_t b, int64_t e) {                            \
        const upd_args *a = arg;                                                                \
        T *restrict var = a->var;                                                               \
        const T *restrict d = a->grad;                                                          \
        const T alpha = (T)a->c[0], l1 = (T)a->c[1], l2 = (T)a->c[2];                           \
        for (int64_t i = b; i < e; i++) {                                                       \
            T p = var[i] - alpha * d[i];                                                        \
            if (l1 > (T)0) {                                                                    \
                T m = FABS(p) - alpha * l1;                                                     \
                T sg = p > (T)0 ? (T)1 : p < (T)0 ? (T)-1 : (T)0;                               \
                var[i] = sg * (m > (T)0 ? m : (T)0) / ((T)1 + alpha * l2);                      \
            } else {                                                                            \
                var[i] = p / ((T)1 + alpha * l2);                                               \
            }                                                                                   \
        }                                                                                       \
    }

DEFINE_LOOPS2(float, f32, sqrtf, powf, fabsf)
DEFINE_LOOPS2(double, f64, sqrt, pow, fabs)

/* GCC does not vectorize sqrtf under math-errno (the default), so the float32 Adam
 * and RMSProp loops use SSE for whole groups of 4 and the scalar loop for the rest.
 * sqrtps/divps round exactly as sqrtss/divss: the results are the same bits. */
#if defined(__SSE2__)
#include <emmintrin.h>

static int64_t adam_sse_f32(const upd_args *a, int64_t i, int64_t e) {
    float *restrict var = a->var, *restrict m = a->s1, *restrict v = a->s2;
    const float *restrict g = a->grad;
    const __m128 lr = _mm_set1_ps((float)a->c[0]), b1 = _mm_set1_ps((float)a->c[1]);
    const __m128 omb1 = _mm_set1_ps((float)a->c[2]), omb2 = _mm_set1_ps((float)a->c[3]);
    const __m128 eps = _mm_set1_ps((float)a->c[4]);
    const bool nesterov = a->nesterov;
    for (; i + 4 <= e; i += 4) {
        __m128 gi = _mm_loadu_ps(g + i), mi = _mm_loadu_ps(m + i), vi = _mm_loadu_ps(v + i);
        mi = _mm_add_ps(mi, _mm_mul_ps(_mm_sub_ps(gi, mi), omb1));
        vi = _mm_add_ps(vi, _mm_mul_ps(_mm_sub_ps(_mm_mul_ps(gi, gi), vi), omb2));
        _mm_storeu_ps(m + i, mi);
        _mm_storeu_ps(v + i, vi);
        __m128 num = nesterov ? _mm_add_ps(_mm_mul_ps(gi, omb1), _mm_mul_ps(b1, mi)) : mi;
        __m128 upd = _mm_div_ps(_mm_mul_ps(num, lr), _mm_add_ps(_mm_sqrt_ps(vi), eps));
        _mm_storeu_ps(var + i, _mm_sub_ps(_mm_loadu_ps(var + i), upd));
    }
    return i;
}

static int64_t rmsprop_sse_f32(const upd_args *a, int64_t i, int64_t e) {
    float *restrict var = a->var, *restrict ms = a->s1, *restrict mom = a->s2;
    const float *restrict g = a->grad;
    const __m128 lr = _mm_set1_ps((float)a->c[0]), omr = _mm_set1_ps((float)a->c[1]);
    const __m128 mo = _mm_set1_ps((float)a->c[2]), eps = _mm_set1_ps((float)a->c[3]);
    for (; i + 4 <= e; i += 4) {
        __m128 gi = _mm_loadu_ps(g + i), msi = _mm_loadu_ps(ms + i);
        msi = _mm_add_ps(msi, _mm_mul_ps(_mm_sub_ps(_mm_mul_ps(gi, gi), msi), omr));
        __m128 mm = _mm_add_ps(_mm_mul_ps(_mm_loadu_ps(mom + i), mo),
                               _mm_div_ps(_mm_mul_ps(lr, gi), _mm_sqrt_ps(_mm_add_ps(msi, eps))));
        _mm_storeu_ps(ms + i, msi);
        _mm_storeu_ps(mom + i, mm);
        _mm_storeu_ps(var + i, _mm_sub_ps(_mm_loadu_ps(var + i), mm));
    }
    return i;
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ADAM_AVX512 1
/* The Adam loop 16 floats wide (AVX-512F): the same operations in the same order as
 * adam_sse_f32 (no FMA contraction in ISO C mode), so the same bits. The dense
 * layer's 401k floats per step: division and square root 16 wide instead of 4. */
__attribute__((target("avx512f"))) static int64_t adam_avx512_f32(const upd_args *a, int64_t i, int64_t e) {
    float *restrict var = a->var, *restrict m = a->s1, *restrict v = a->s2;
    const float *restrict g = a->grad;
    const __m512 lr = _mm512_set1_ps((float)a->c[0]), b1 = _mm512_set1_ps((float)a->c[1]);
    const __m512 omb1 = _mm512_set1_ps((float)a->c[2]), omb2 = _mm512_set1_ps((float)a->c[3]);
    const __m512 eps = _mm512_set1_ps((float)a->c[4]);
    const bool nesterov = a->nesterov;
    for (; i + 16 <= e; i += 16) {
        __m512 gi = _mm512_loadu_ps(g + i), mi = _mm512_loadu_ps(m + i), vi = _mm512_loadu_ps(v + i);
        mi = _mm512_add_ps(mi, _mm512_mul_ps(_mm512_sub_ps(gi, mi), omb1));
        vi = _mm512_add_ps(vi, _mm512_mul_ps(_mm512_sub_ps(_mm512_mul_ps(gi, gi), vi), omb2));
        _mm512_storeu_ps(m + i, mi);
        _mm512_storeu_ps(v + i, vi);
        __m512 num = nesterov ? _mm512_add_ps(_mm512_mul_ps(gi, omb1), _mm512_mul_ps(b1, mi)) : mi;
        __m512 upd = _mm512_div_ps(_mm512_mul_ps(num, lr), _mm512_add_ps(_mm512_sqrt_ps(vi), eps));
        _mm512_storeu_ps(var + i, _mm512_sub_ps(_mm512_loadu_ps(var + i), upd));
    }
    return i;
}
#endif

static atomic_int g_adam_simd = 1; /* vg__adam_set_simd */

int vg__adam_set_simd(int on) {
    atomic_store(&g_adam_simd, on);
#ifdef ADAM_AVX512
    return on && vg__cpu_isa_level(vg__cpu_get()) >= VG__ISA_AVX512;
#else
    return 0;
#endif
}

#if !defined(__SSE2__)
static int64_t adam_sse_f32(const upd_args *a, int64_t i, int64_t e) { return i; }
static int64_t rmsprop_sse_f32(const upd_args *a, int64_t i, int64_t e) { return i; }
#endif

static void adam_f32(void *arg, int64_t b, int64_t e) {
#ifdef ADAM_AVX512
    if (atomic_load_explicit(&g_adam_simd, memory_order_relaxed) &&
        vg__cpu_isa_level(vg__cpu_get()) >= VG__ISA_AVX512)
        b = adam_avx512_f32(arg, b, e);
#endif
    adam_scalar_f32(arg, adam_sse_f32(arg, b, e), e);
}
static void adam_f64(void *arg, int64_t b, int64_t e) { adam_scalar_f64(arg, b, e); }
static void rmsprop_f32(void *arg, int64_t b, int64_t e) { rmsprop_scalar_f32(arg, rmsprop_sse_f32(arg, b, e), e); }
static void rmsprop_f64(void *arg, int64_t b, int64_t e) { rmsprop_scalar_f64(arg, b, e); }

/* Runs the loop for the var's dtype over all elements, splitting big tensors. */
static void run_loop(vg__kctx *ctx, vg_dtype t, vg__range_fn f32, vg__range_fn f64, int64_t n, int64_t cost,
                     upd_args *a) {
    vg__range_fn fn = t == VG_FLOAT ? f32 : f64;
    if (n * cost < 32768) fn(a, 0, n);
    else vg__kctx_parallel_for(ctx, n, cost, fn, a);
}

/* Unlocks; the ref forms output the var's new value (a new reference taken first). */
static void finish(vg__kctx *ctx, lockset *ls, vg_tensor *var) {
    vg_tensor *out = vg_op_num_outputs(vg__kctx_op(ctx)) > 0 ? vg_tensor_ref(var) : NULL;
    lockset_release(ls);
    if (out) vg__kctx_set_output(ctx, 0, out);
}

/* Common driver: lock refs, gather inputs, check, run, output var, unlock. */
typedef void (*setup_fn)(upd_args *a, const double *scal, const vg_op *op);

static vg_code apply_kernel(vg__kctx *ctx, const apply_sig *sig, int nrefs, int grad_index, vg__range_fn f32,
                            vg__range_fn f64, int64_t cost, setup_fn setup) {
    vg_tensor *vals[10];
    double scal[10] = {0};
    lockset ls;
    if (acquire(ctx, nrefs, &ls, vals)) return vg__kctx_status(ctx)->code;
    for (int i = nrefs; i < sig->n; i++) vals[i] = vg__kctx_input(ctx, i);
    if (check_inputs(ctx, sig, vals, scal)) {
        lockset_release(&ls);
        return vg__kctx_status(ctx)->code;
    }
    upd_args a = {vg_tensor_data(vals[0]), nrefs > 1 ? vg_tensor_data(vals[1]) : NULL,
                  nrefs > 2 ? vg_tensor_data(vals[2]) : NULL, vg_tensor_data(vals[grad_index]), {0}, false};
    setup(&a, scal, vg__kctx_op(ctx));
    run_loop(ctx, vg_tensor_dtype(vals[0]), f32, f64, vg_tensor_num_elements(vals[0]), cost, &a);
    finish(ctx, &ls, vals[0]);
    return VG_OK;
}

static bool attr_nesterov(const vg_op *op) {
    bool b = false;
    vg_op_attr_bool(op, "use_nesterov", &b);
    return b;
}

/* ApplyGradientDescent(var, alpha, delta): var -= alpha * delta */
static void setup_gd(upd_args *a, const double *s, const vg_op *op) { a->c[0] = s[1]; }
static vg_code kernel_gd(vg__kctx *ctx) { return apply_kernel(ctx, &SIG_GD, 1, 2, gd_f32, gd_f64, 2, setup_gd); }

/* ApplyMomentum(var, accum, lr, grad, momentum):
 * accum = accum * momentum + grad; var -= lr * accum
 * (nesterov: var -= grad * lr + accum * momentum * lr) */
static void setup_momentum(upd_args *a, const double *s, const vg_op *op) {
    a->c[0] = s[2];
    a->c[1] = s[4];
    a->nesterov = attr_nesterov(op);
}
static vg_code kernel_momentum(vg__kctx *ctx) {
    return apply_kernel(ctx, &SIG_MOMENTUM, 2, 3, momentum_f32, momentum_f64, 5, setup_momentum);
}

/* ApplyAdam(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad):
 * lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
 * m += (g - m) * (1 - beta1); v += (g^2 - v) * (1 - beta2)
 * var -= lr_t * m / (sqrt(v) + epsilon)
 * (nesterov: var -= lr_t * (g * (1 - beta1) + beta1 * m) / (sqrt(v) + epsilon)) */
static void setup_adam(upd_args *a, const double *s, const vg_op *op) {
    double b1p = s[3], b2p = s[4], lr = s[5], b1 = s[6], b2 = s[7], eps = s[8];
    a->c[0] = lr * sqrt(1 - b2p) / (1 - b1p);
    a->c[1] = b1;
    a->c[2] = 1 - b1;
    a->c[3] = 1 - b2;
    a->c[4] = eps;
    a->nesterov = attr_nesterov(op);
}
static vg_code kernel_adam(vg__kctx *ctx) {
    return apply_kernel(ctx, &SIG_ADAM, 3, 9, adam_f32, adam_f64, 16, setup_adam);
}

/* ApplyRMSProp(var, ms, mom, lr, rho, momentum, epsilon, grad):
 * ms += (g^2 - ms) * (1 - rho); mom = mom * momentum + lr * g / sqrt(ms + epsilon);
 * var -= mom */
static void setup_rmsprop(upd_args *a, const double *s, const vg_op *op) {
    a->c[0] = s[3];
    a->c[1] = 1 - s[4];
    a->c[2] = s[5];
    a->c[3] = s[6];
}
static vg_code kernel_rmsprop(vg__kctx *ctx) {
    return apply_kernel(ctx, &SIG_RMSPROP, 3, 7, rmsprop_f32, rmsprop_f64, 16, setup_rmsprop);
}

/* ApplyAdagrad(var, accum, lr, grad; update_slots): accum += grad^2 (when
 * update_slots); var -= lr * grad * rsqrt(accum) */
static void setup_adagrad(upd_args *a, const double *s, const vg_op *op) {
    bool upd = true;
    vg_op_attr_bool(op, "update_slots", &upd);
    a->c[0] = s[2];
    a->nesterov = upd;
}
static vg_code kernel_adagrad(vg__kctx *ctx) {
    return apply_kernel(ctx, &SIG_ADAGRAD, 2, 3, adagrad_f32, adagrad_f64, 8, setup_adagrad);
}

/* ApplyAdadelta(var, accum, accum_update, lr, rho, epsilon, grad):
 * accum = rho * accum + (1 - rho) * grad^2
 * update = sqrt(accum_update + epsilon) * rsqrt(accum + epsilon) * grad
 * var -= lr * update; accum_update = rho * accum_update + (1 - rho) * update^2 */
static void setup_adadelta(upd_args *a, const double *s, const vg_op *op) {
    (void)op;
    a->c[0] = s[3];
    a->c[1] = s[4];
    a->c[2] = s[5];
}
static vg_code kernel_adadelta(vg__kctx *ctx) {
    return apply_kernel(ctx, &SIG_ADADELTA, 3, 6, adadelta_f32, adadelta_f64, 24, setup_adadelta);
}

/* ApplyFtrl(var, accum, linear, grad, lr, l1, l2, lr_power) and ApplyFtrlV2 (+
 * l2_shrinkage before lr_power): g' = grad + 2 * l2_shrinkage * var;
 * new_accum = accum + grad^2;
 * linear += g' - (new_accum^-lr_power - accum^-lr_power) / lr * var;
 * var = |linear| > l1 ? (clip(linear, -l1, l1) - linear) / (new_accum^-lr_power / lr +
 * 2 * l2) : 0; accum = new_accum. lr must be positive (TF's kernel check). */
static void setup_ftrl(upd_args *a, const double *s, const vg_op *op) {
    (void)op;
    a->c[0] = s[4];
    a->c[1] = s[5];
    a->c[2] = s[6];
    a->c[3] = 0;
    a->c[4] = s[7];
}
static void setup_ftrl_v2(upd_args *a, const double *s, const vg_op *op) {
    (void)op;
    a->c[0] = s[4];
    a->c[1] = s[5];
    a->c[2] = s[6];
    a->c[3] = s[7];
    a->c[4] = s[8];
}

/* TF's Ftrl kernels validate the scalars before touching the variables. */
static vg_code check_ftrl_scalars(vg__kctx *ctx, const apply_sig *sig) {
    vg_status *st = vg__kctx_status(ctx);
    for (int i = 1; i < sig->n; i++) {
        if (!sig->scalar[i]) continue;
        const vg_tensor *x = vg__kctx_input(ctx, i);
        if (!x || vg_tensor_num_elements(x) != 1) continue; /* check_inputs reports it */
        double v = vg_tensor_dtype(x) == VG_FLOAT ? (double)*(const float *)vg_tensor_data(x)
                                                  : *(const double *)vg_tensor_data(x);
        const char *n = sig->names[i];
        bool bad = strcmp(n, "lr") == 0 ? !(v > 0) : strcmp(n, "lr_power") == 0 ? !(v <= 0) : !(v >= 0);
        if (bad)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: %s is not a %s scalar: %g",
                                 vg_op_type(vg__kctx_op(ctx)), n,
                                 strcmp(n, "lr") == 0 ? "positive" : strcmp(n, "lr_power") == 0 ? "non-positive"
                                                                                                : "non-negative",
                                 v);
    }
    return VG_OK;
}
static vg_code kernel_ftrl(vg__kctx *ctx) {
    if (check_ftrl_scalars(ctx, &SIG_FTRL)) return vg__kctx_status(ctx)->code;
    return apply_kernel(ctx, &SIG_FTRL, 3, 3, ftrl_f32, ftrl_f64, 40, setup_ftrl);
}
static vg_code kernel_ftrl_v2(vg__kctx *ctx) {
    if (check_ftrl_scalars(ctx, &SIG_FTRL_V2)) return vg__kctx_status(ctx)->code;
    return apply_kernel(ctx, &SIG_FTRL_V2, 3, 3, ftrl_f32, ftrl_f64, 40, setup_ftrl_v2);
}

/* ApplyProximalGradientDescent(var, alpha, l1, l2, delta): prox = var - alpha * delta;
 * var = sign(prox) * max(|prox| - alpha * l1, 0) / (1 + alpha * l2) (l1 > 0), else
 * prox / (1 + alpha * l2). */
static void setup_proximal_gd(upd_args *a, const double *s, const vg_op *op) {
    (void)op;
    a->c[0] = s[1];
    a->c[1] = s[2];
    a->c[2] = s[3];
}
static vg_code kernel_proximal_gd(vg__kctx *ctx) {
    return apply_kernel(ctx, &SIG_PROXIMAL_GD, 1, 4, proximal_gd_f32, proximal_gd_f64, 6, setup_proximal_gd);
}

/* ------------------------------------------------------------------------ */
/* sparse variants: grad [N, rest of var's shape], indices [N] int32/int64 */

typedef struct sparse_sig {
    apply_sig s; /* every input; indices is not T */
    int nrefs, grad, indices;
} sparse_sig;

static const sparse_sig SP_ADAGRAD = {
    {"SparseApplyAdagrad", 5, {"var", "accum", "lr", "grad", "indices"}, {0, 0, 1, 0, 0}}, 2, 3, 4};
static const sparse_sig SP_MOMENTUM = {
    {"SparseApplyMomentum", 6, {"var", "accum", "lr", "grad", "indices", "momentum"}, {0, 0, 1, 0, 0, 1}}, 2, 3, 4};
static const sparse_sig SP_ADADELTA = {{"SparseApplyAdadelta",
                                        8,
                                        {"var", "accum", "accum_update", "lr", "rho", "epsilon", "grad", "indices"},
                                        {0, 0, 0, 1, 1, 1, 0, 0}},
                                       3,
                                       6,
                                       7};
static const sparse_sig SP_FTRL = {{"SparseApplyFtrl",
                                    9,
                                    {"var", "accum", "linear", "grad", "indices", "lr", "l1", "l2", "lr_power"},
                                    {0, 0, 0, 0, 0, 1, 1, 1, 1}},
                                   3,
                                   3,
                                   4};
static const sparse_sig SP_FTRL_V2 = {
    {"SparseApplyFtrlV2",
     10,
     {"var", "accum", "linear", "grad", "indices", "lr", "l1", "l2", "l2_shrinkage", "lr_power"},
     {0, 0, 0, 0, 0, 1, 1, 1, 1, 1}},
    3,
    3,
    4};
static const sparse_sig SP_PROXIMAL_GD = {{"SparseApplyProximalGradientDescent",
                                           6,
                                           {"var", "alpha", "l1", "l2", "grad", "indices"},
                                           {0, 1, 1, 1, 0, 0}},
                                          1,
                                          4,
                                          5};
static const sparse_sig SP_RMSPROP = {{"SparseApplyRMSProp",
                                       9,
                                       {"var", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad", "indices"},
                                       {0, 0, 0, 1, 1, 1, 1, 0, 0}},
                                      3,
                                      7,
                                      8};

static vg_code shape_sparse(vg_op *op, const sparse_sig *sp, vg_status *st) {
    const apply_sig *sig = &sp->s;
    const char *type = vg_op_type(op);
    vg_dtype t;
    vg_shape s;
    if (var_float_type_shape(op, sig->n, &t, &s, st)) return st->code;
    char a[128], b[128];
    for (int i = 1; i < sig->n; i++) {
        vg_dtype d;
        vg_shape si;
        if (!input_info(op, i, &d, &si)) continue;
        if (i == sp->indices) {
            if (d != VG_INT32 && d != VG_INT64)
                return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: indices must be int32 or int64, not %s",
                                     type, vg_dtype_name(d));
            if (si.ndims >= 0 && si.ndims != 1)
                return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: indices must be a vector, got rank %d",
                                     type, si.ndims);
            continue;
        }
        int sc = check_hyper_input(op, sig, i, d, t, &si, st);
        if (sc < 0) return st->code;
        if (sc) continue;
        if (s.ndims < 0 || si.ndims < 0) continue;
        bool grad = i == sp->grad;
        bool good = si.ndims == s.ndims && s.ndims >= 1;
        for (int k = grad ? 1 : 0; good && k < s.ndims; k++)
            if (s.dims[k] >= 0 && si.dims[k] >= 0 && s.dims[k] != si.dims[k]) good = false;
        if (!good)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: var %s and %s %s do not match%s", type,
                                 vg_shape_str(&s, a, sizeof a), sig->names[i], vg_shape_str(&si, b, sizeof b),
                                 grad ? " (grad must be [N] + var.shape[1:])" : "");
    }
    vg_shape g = vg__op_input_shape(op, sp->grad), ix = vg__op_input_shape(op, sp->indices);
    if (g.ndims >= 1 && ix.ndims == 1 && g.dims[0] >= 0 && ix.dims[0] >= 0 && g.dims[0] != ix.dims[0])
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: grad has %lld rows but indices %lld", type,
                             (long long)g.dims[0], (long long)ix.dims[0]);
    vg__op_set_default_attr_type(op, "Tindices", vg__op_input_dtype(op, sp->indices));
    return apply_shape_end(op, t, s);
}

static vg_code shape_sp_adagrad(vg_op *op, vg_status *st) {
    vg__op_set_default_attr_bool(op, "update_slots", true);
    return shape_sparse(op, &SP_ADAGRAD, st);
}
static vg_code shape_sp_momentum(vg_op *op, vg_status *st) {
    vg__op_set_default_attr_bool(op, "use_nesterov", false);
    return shape_sparse(op, &SP_MOMENTUM, st);
}
static vg_code shape_sp_adadelta(vg_op *op, vg_status *st) { return shape_sparse(op, &SP_ADADELTA, st); }
static vg_code shape_sp_ftrl(vg_op *op, vg_status *st) { return shape_sparse(op, &SP_FTRL, st); }
static vg_code shape_sp_ftrl_v2(vg_op *op, vg_status *st) { return shape_sparse(op, &SP_FTRL_V2, st); }
static vg_code shape_sp_proximal_gd(vg_op *op, vg_status *st) { return shape_sparse(op, &SP_PROXIMAL_GD, st); }
static vg_code shape_sp_rmsprop(vg_op *op, vg_status *st) { return shape_sparse(op, &SP_RMSPROP, st); }

/* The run-time checks of TF's sparse kernels; fills scal[] like check_inputs. */
static vg_code check_sparse(vg__kctx *ctx, const sparse_sig *sp, vg_tensor *const *vals, double *scal) {
    const apply_sig *sig = &sp->s;
    vg_status *st = vg__kctx_status(ctx);
    vg_dtype t = vg_tensor_dtype(vals[0]);
    char a[128], b[128];
    if (vg_tensor_ndims(vals[0]) < 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "var must be at least 1 dimensional");
    for (int i = 1; i < sig->n; i++) {
        const vg_tensor *x = vals[i];
        if (i == sp->indices) {
            vg_dtype d = vg_tensor_dtype(x);
            if ((d != VG_INT32 && d != VG_INT64) || vg_tensor_ndims(x) != 1)
                return vg_status_set(st, VG_INVALID_ARGUMENT, "indices must be a vector of int32 or int64: %s %s",
                                     vg_dtype_name(d), vg__tshape_str(x, a, sizeof a));
            continue;
        }
        int sc = run_hyper_input(st, sig, i, x, t, scal);
        if (sc < 0) return st->code;
        if (sc) continue;
        if (i == sp->grad) {
            bool good = vg_tensor_ndims(x) == vg_tensor_ndims(vals[0]);
            for (int k = 1; good && k < vg_tensor_ndims(x); k++)
                good = vg_tensor_dim(x, k) == vg_tensor_dim(vals[0], k);
            if (!good)
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "var and grad do not have the same shape except the first dimension%s %s",
                                     vg__tshape_str(vals[0], a, sizeof a), vg__tshape_str(x, b, sizeof b));
            if (vg_tensor_dim(x, 0) != vg_tensor_dim(vals[sp->indices], 0))
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "grad must be the same size as indices in the first dimension: %s %s",
                                     vg__tshape_str(x, a, sizeof a), vg__tshape_str(vals[sp->indices], b, sizeof b));
        } else if (!vg__same_dims(vals[0], x)) {
            return vg_status_set(st, VG_INVALID_ARGUMENT, "var and %s do not have the same shape%s %s", sig->names[i],
                                 vg__tshape_str(vals[0], a, sizeof a), vg__tshape_str(x, b, sizeof b));
        }
    }
    return VG_OK;
}

/* Locks the refs, checks, checks every index against var's first dimension (before
 * any update, as TF), then runs the dense loop on each indexed row. */
static vg_code sparse_kernel(vg__kctx *ctx, const sparse_sig *sp, vg__range_fn f32, vg__range_fn f64,
                             setup_fn setup) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *vals[10];
    double scal[10] = {0};
    lockset ls;
    if (acquire(ctx, sp->nrefs, &ls, vals)) return st->code;
    for (int i = sp->nrefs; i < sp->s.n; i++) vals[i] = vg__kctx_input(ctx, i);
    if (check_sparse(ctx, sp, vals, scal)) {
        lockset_release(&ls);
        return st->code;
    }
    const vg_tensor *idx = vals[sp->indices];
    int64_t n = vg_tensor_dim(idx, 0), rows = vg_tensor_dim(vals[0], 0);
    int64_t row = rows > 0 ? vg_tensor_num_elements(vals[0]) / rows : 0;
    bool i32 = vg_tensor_dtype(idx) == VG_INT32;
    for (int64_t i = 0; i < n; i++) {
        int64_t r = i32 ? ((const int32_t *)vg_tensor_data(idx))[i] : ((const int64_t *)vg_tensor_data(idx))[i];
        if (r < 0 || r >= rows) {
            lockset_release(&ls);
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Index %lld at offset %lld in indices is out of range",
                                 (long long)r, (long long)i);
        }
    }
    vg_dtype t = vg_tensor_dtype(vals[0]);
    size_t es = vg_dtype_size(t);
    upd_args base = {NULL, NULL, NULL, NULL, {0}, false};
    setup(&base, scal, vg__kctx_op(ctx));
    vg__range_fn fn = t == VG_FLOAT ? f32 : f64;
    for (int64_t i = 0; i < n && row > 0; i++) {
        int64_t r = i32 ? ((const int32_t *)vg_tensor_data(idx))[i] : ((const int64_t *)vg_tensor_data(idx))[i];
        size_t off = (size_t)(r * row) * es;
        upd_args a = base;
        a.var = (char *)vg_tensor_data(vals[0]) + off;
        a.s1 = sp->nrefs > 1 ? (char *)vg_tensor_data(vals[1]) + off : NULL;
        a.s2 = sp->nrefs > 2 ? (char *)vg_tensor_data(vals[2]) + off : NULL;
        a.grad = (const char *)vg_tensor_data(vals[sp->grad]) + (size_t)(i * row) * es;
        fn(&a, 0, row);
    }
    finish(ctx, &ls, vals[0]);
    return VG_OK;
}

/* setups reading the scalars at the sparse signatures' positions */
static void sp_setup_adagrad(upd_args *a, const double *s, const vg_op *op) { setup_adagrad(a, s, op); }
static void sp_setup_momentum(upd_args *a, const double *s, const vg_op *op) {
    a->c[0] = s[2];
    a->c[1] = s[5];
    a->nesterov = attr_nesterov(op);
}
static void sp_setup_adadelta(upd_args *a, const double *s, const vg_op *op) { setup_adadelta(a, s, op); }
static void sp_setup_ftrl(upd_args *a, const double *s, const vg_op *op) {
    (void)op;
    a->c[0] = s[5];
    a->c[1] = s[6];
    a->c[2] = s[7];
    a->c[3] = 0;
    a->c[4] = s[8];
}
static void sp_setup_ftrl_v2(upd_args *a, const double *s, const vg_op *op) {
    (void)op;
    a->c[0] = s[5];
    a->c[1] = s[6];
    a->c[2] = s[7];
    a->c[3] = s[8];
    a->c[4] = s[9];
}
static void sp_setup_proximal_gd(upd_args *a, const double *s, const vg_op *op) { setup_proximal_gd(a, s, op); }
static void sp_setup_rmsprop(upd_args *a, const double *s, const vg_op *op) { setup_rmsprop(a, s, op); }

static vg_code kernel_sp_adagrad(vg__kctx *ctx) {
    return sparse_kernel(ctx, &SP_ADAGRAD, adagrad_f32, adagrad_f64, sp_setup_adagrad);
}
static vg_code kernel_sp_momentum(vg__kctx *ctx) {
    return sparse_kernel(ctx, &SP_MOMENTUM, momentum_f32, momentum_f64, sp_setup_momentum);
}
static vg_code kernel_sp_adadelta(vg__kctx *ctx) {
    return sparse_kernel(ctx, &SP_ADADELTA, adadelta_f32, adadelta_f64, sp_setup_adadelta);
}
static vg_code kernel_sp_ftrl(vg__kctx *ctx) {
    if (check_ftrl_scalars(ctx, &SP_FTRL.s)) return vg__kctx_status(ctx)->code;
    return sparse_kernel(ctx, &SP_FTRL, ftrl_f32, ftrl_f64, sp_setup_ftrl);
}
static vg_code kernel_sp_ftrl_v2(vg__kctx *ctx) {
    if (check_ftrl_scalars(ctx, &SP_FTRL_V2.s)) return vg__kctx_status(ctx)->code;
    return sparse_kernel(ctx, &SP_FTRL_V2, ftrl_f32, ftrl_f64, sp_setup_ftrl_v2);
}
static vg_code kernel_sp_proximal_gd(vg__kctx *ctx) {
    return sparse_kernel(ctx, &SP_PROXIMAL_GD, proximal_gd_f32, proximal_gd_f64, sp_setup_proximal_gd);
}
static vg_code kernel_sp_rmsprop(vg__kctx *ctx) {
    return sparse_kernel(ctx, &SP_RMSPROP, rmsprop_f32, rmsprop_f64, sp_setup_rmsprop);
}

/* ------------------------------------------------------------------------ */
/* builders (ref forms: vigil/ops.h; resource forms: vigil/resource_variables.h) */

static vg_output build_apply(vg_graph *g, const char *type, const vg_output *in, int n, bool use_locking,
                             int nesterov, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, type, name);
    vg_op_builder_add_inputs(b, in, n);
    if (in[0].op) vg_op_builder_set_attr_type(b, "T", vg_output_dtype(in[0]));
    vg_op_builder_set_attr_bool(b, "use_locking", use_locking);
    if (nesterov >= 0) vg_op_builder_set_attr_bool(b, "use_nesterov", nesterov != 0);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_apply_gradient_descent(vg_graph *g, vg_output var, vg_output alpha, vg_output delta, bool use_locking,
                                    const char *name) {
    vg_output in[3] = {var, alpha, delta};
    return build_apply(g, "ApplyGradientDescent", in, 3, use_locking, -1, name);
}

vg_output vg_apply_momentum(vg_graph *g, vg_output var, vg_output accum, vg_output lr, vg_output grad,
                            vg_output momentum, bool use_locking, bool use_nesterov, const char *name) {
    vg_output in[5] = {var, accum, lr, grad, momentum};
    return build_apply(g, "ApplyMomentum", in, 5, use_locking, use_nesterov, name);
}

vg_output vg_apply_adam(vg_graph *g, vg_output var, vg_output m, vg_output v, vg_output beta1_power,
                        vg_output beta2_power, vg_output lr, vg_output beta1, vg_output beta2, vg_output epsilon,
                        vg_output grad, bool use_locking, bool use_nesterov, const char *name) {
    vg_output in[10] = {var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad};
    return build_apply(g, "ApplyAdam", in, 10, use_locking, use_nesterov, name);
}

vg_output vg_apply_rms_prop(vg_graph *g, vg_output var, vg_output ms, vg_output mom, vg_output lr, vg_output rho,
                            vg_output momentum, vg_output epsilon, vg_output grad, bool use_locking,
                            const char *name) {
    vg_output in[8] = {var, ms, mom, lr, rho, momentum, epsilon, grad};
    return build_apply(g, "ApplyRMSProp", in, 8, use_locking, -1, name);
}

vg_output vg_apply_adagrad(vg_graph *g, vg_output var, vg_output accum, vg_output lr, vg_output grad, bool use_locking,
                           bool update_slots, const char *name) {
    vg_output in[4] = {var, accum, lr, grad};
    vg_op_builder *b = vg_op_builder_new(g, "ApplyAdagrad", name);
    vg_op_builder_add_inputs(b, in, 4);
    if (var.op) vg_op_builder_set_attr_type(b, "T", vg_output_dtype(var));
    vg_op_builder_set_attr_bool(b, "use_locking", use_locking);
    vg_op_builder_set_attr_bool(b, "update_slots", update_slots);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_apply_adadelta(vg_graph *g, vg_output var, vg_output accum, vg_output accum_update, vg_output lr,
                            vg_output rho, vg_output epsilon, vg_output grad, bool use_locking, const char *name) {
    vg_output in[7] = {var, accum, accum_update, lr, rho, epsilon, grad};
    return build_apply(g, "ApplyAdadelta", in, 7, use_locking, -1, name);
}

vg_output vg_apply_ftrl(vg_graph *g, vg_output var, vg_output accum, vg_output linear, vg_output grad, vg_output lr,
                        vg_output l1, vg_output l2, vg_output lr_power, bool use_locking, const char *name) {
    vg_output in[8] = {var, accum, linear, grad, lr, l1, l2, lr_power};
    return build_apply(g, "ApplyFtrl", in, 8, use_locking, -1, name);
}

vg_output vg_apply_ftrl_v2(vg_graph *g, vg_output var, vg_output accum, vg_output linear, vg_output grad,
                           vg_output lr, vg_output l1, vg_output l2, vg_output l2_shrinkage, vg_output lr_power,
                           bool use_locking, const char *name) {
    vg_output in[9] = {var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power};
    return build_apply(g, "ApplyFtrlV2", in, 9, use_locking, -1, name);
}

vg_output vg_apply_proximal_gradient_descent(vg_graph *g, vg_output var, vg_output alpha, vg_output l1, vg_output l2,
                                             vg_output delta, bool use_locking, const char *name) {
    vg_output in[5] = {var, alpha, l1, l2, delta};
    return build_apply(g, "ApplyProximalGradientDescent", in, 5, use_locking, -1, name);
}

static vg_output build_sparse(vg_graph *g, const char *type, const vg_output *in, int n, bool use_locking,
                              const char *bool_attr, bool bool_val, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, type, name);
    vg_op_builder_add_inputs(b, in, n);
    if (in[0].op) vg_op_builder_set_attr_type(b, "T", vg_output_dtype(in[0]));
    vg_op_builder_set_attr_bool(b, "use_locking", use_locking);
    if (bool_attr) vg_op_builder_set_attr_bool(b, bool_attr, bool_val);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_sparse_apply_adagrad(vg_graph *g, vg_output var, vg_output accum, vg_output lr, vg_output grad,
                                  vg_output indices, bool use_locking, bool update_slots, const char *name) {
    vg_output in[5] = {var, accum, lr, grad, indices};
    return build_sparse(g, "SparseApplyAdagrad", in, 5, use_locking, "update_slots", update_slots, name);
}

vg_output vg_sparse_apply_momentum(vg_graph *g, vg_output var, vg_output accum, vg_output lr, vg_output grad,
                                   vg_output indices, vg_output momentum, bool use_locking, bool use_nesterov,
                                   const char *name) {
    vg_output in[6] = {var, accum, lr, grad, indices, momentum};
    return build_sparse(g, "SparseApplyMomentum", in, 6, use_locking, "use_nesterov", use_nesterov, name);
}

vg_output vg_sparse_apply_adadelta(vg_graph *g, vg_output var, vg_output accum, vg_output accum_update, vg_output lr,
                                   vg_output rho, vg_output epsilon, vg_output grad, vg_output indices,
                                   bool use_locking, const char *name) {
    vg_output in[8] = {var, accum, accum_update, lr, rho, epsilon, grad, indices};
    return build_sparse(g, "SparseApplyAdadelta", in, 8, use_locking, NULL, false, name);
}

vg_output vg_sparse_apply_ftrl(vg_graph *g, vg_output var, vg_output accum, vg_output linear, vg_output grad,
                               vg_output indices, vg_output lr, vg_output l1, vg_output l2, vg_output lr_power,
                               bool use_locking, const char *name) {
    vg_output in[9] = {var, accum, linear, grad, indices, lr, l1, l2, lr_power};
    return build_sparse(g, "SparseApplyFtrl", in, 9, use_locking, NULL, false, name);
}

vg_output vg_sparse_apply_ftrl_v2(vg_graph *g, vg_output var, vg_output accum, vg_output linear, vg_output grad,
                                  vg_output indices, vg_output lr, vg_output l1, vg_output l2,
                                  vg_output l2_shrinkage, vg_output lr_power, bool use_locking, const char *name) {
    vg_output in[10] = {var, accum, linear, grad, indices, lr, l1, l2, l2_shrinkage, lr_power};
    return build_sparse(g, "SparseApplyFtrlV2", in, 10, use_locking, NULL, false, name);
}

vg_output vg_sparse_apply_proximal_gradient_descent(vg_graph *g, vg_output var, vg_output alpha, vg_output l1,
                                                    vg_output l2, vg_output grad, vg_output indices,
                                                    bool use_locking, const char *name) {
    vg_output in[6] = {var, alpha, l1, l2, grad, indices};
    return build_sparse(g, "SparseApplyProximalGradientDescent", in, 6, use_locking, NULL, false, name);
}

vg_output vg_sparse_apply_rms_prop(vg_graph *g, vg_output var, vg_output ms, vg_output mom, vg_output lr,
                                   vg_output rho, vg_output momentum, vg_output epsilon, vg_output grad,
                                   vg_output indices, bool use_locking, const char *name) {
    vg_output in[9] = {var, ms, mom, lr, rho, momentum, epsilon, grad, indices};
    return build_sparse(g, "SparseApplyRMSProp", in, 9, use_locking, NULL, false, name);
}

/* resource builders: attr T is the gradient's dtype (input grad_index) */
static vg_op *build_resource(vg_graph *g, const char *type, const vg_output *in, int n, int grad_index,
                             bool use_locking, const char *bool_attr, bool bool_val, const char *name) {
    vg_op_builder *b = vg_op_builder_new(g, type, name);
    vg_op_builder_add_inputs(b, in, n);
    if (in[grad_index].op) vg_op_builder_set_attr_type(b, "T", vg_output_dtype(in[grad_index]));
    vg_op_builder_set_attr_bool(b, "use_locking", use_locking);
    if (bool_attr) vg_op_builder_set_attr_bool(b, bool_attr, bool_val);
    return vg_op_builder_finish(b);
}

vg_op *vg_resource_apply_gradient_descent(vg_graph *g, vg_output var, vg_output alpha, vg_output delta,
                                          bool use_locking, const char *name) {
    vg_output in[3] = {var, alpha, delta};
    return build_resource(g, "ResourceApplyGradientDescent", in, 3, 2, use_locking, NULL, false, name);
}

vg_op *vg_resource_apply_momentum(vg_graph *g, vg_output var, vg_output accum, vg_output lr, vg_output grad,
                                  vg_output momentum, bool use_locking, bool use_nesterov, const char *name) {
    vg_output in[5] = {var, accum, lr, grad, momentum};
    return build_resource(g, "ResourceApplyMomentum", in, 5, 3, use_locking, "use_nesterov", use_nesterov, name);
}

vg_op *vg_resource_apply_adam(vg_graph *g, vg_output var, vg_output m, vg_output v, vg_output beta1_power,
                              vg_output beta2_power, vg_output lr, vg_output beta1, vg_output beta2,
                              vg_output epsilon, vg_output grad, bool use_locking, bool use_nesterov,
                              const char *name) {
    vg_output in[10] = {var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad};
    return build_resource(g, "ResourceApplyAdam", in, 10, 9, use_locking, "use_nesterov", use_nesterov, name);
}

vg_op *vg_resource_apply_rms_prop(vg_graph *g, vg_output var, vg_output ms, vg_output mom, vg_output lr,
                                  vg_output rho, vg_output momentum, vg_output epsilon, vg_output grad,
                                  bool use_locking, const char *name) {
    vg_output in[8] = {var, ms, mom, lr, rho, momentum, epsilon, grad};
    return build_resource(g, "ResourceApplyRMSProp", in, 8, 7, use_locking, NULL, false, name);
}

vg_op *vg_resource_apply_adagrad(vg_graph *g, vg_output var, vg_output accum, vg_output lr, vg_output grad,
                                 bool use_locking, bool update_slots, const char *name) {
    vg_output in[4] = {var, accum, lr, grad};
    return build_resource(g, "ResourceApplyAdagrad", in, 4, 3, use_locking, "update_slots", update_slots, name);
}

vg_op *vg_resource_apply_adadelta(vg_graph *g, vg_output var, vg_output accum, vg_output accum_update,
                                  vg_output lr, vg_output rho, vg_output epsilon, vg_output grad, bool use_locking,
                                  const char *name) {
    vg_output in[7] = {var, accum, accum_update, lr, rho, epsilon, grad};
    return build_resource(g, "ResourceApplyAdadelta", in, 7, 6, use_locking, NULL, false, name);
}

vg_op *vg_resource_apply_ftrl(vg_graph *g, vg_output var, vg_output accum, vg_output linear, vg_output grad,
                              vg_output lr, vg_output l1, vg_output l2, vg_output lr_power, bool use_locking,
                              const char *name) {
    vg_output in[8] = {var, accum, linear, grad, lr, l1, l2, lr_power};
    return build_resource(g, "ResourceApplyFtrl", in, 8, 3, use_locking, NULL, false, name);
}

vg_op *vg_resource_apply_ftrl_v2(vg_graph *g, vg_output var, vg_output accum, vg_output linear, vg_output grad,
                                 vg_output lr, vg_output l1, vg_output l2, vg_output l2_shrinkage,
                                 vg_output lr_power, bool use_locking, const char *name) {
    vg_output in[9] = {var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power};
    return build_resource(g, "ResourceApplyFtrlV2", in, 9, 3, use_locking, NULL, false, name);
}

vg_op *vg_resource_apply_proximal_gradient_descent(vg_graph *g, vg_output var, vg_output alpha, vg_output l1,
                                                   vg_output l2, vg_output delta, bool use_locking,
                                                   const char *name) {
    vg_output in[5] = {var, alpha, l1, l2, delta};
    return build_resource(g, "ResourceApplyProximalGradientDescent", in, 5, 4, use_locking, NULL, false, name);
}

vg_op *vg_resource_sparse_apply_adagrad(vg_graph *g, vg_output var, vg_output accum, vg_output lr, vg_output grad,
                                        vg_output indices, bool use_locking, bool update_slots, const char *name) {
    vg_output in[5] = {var, accum, lr, grad, indices};
    return build_resource(g, "ResourceSparseApplyAdagrad", in, 5, 3, use_locking, "update_slots", update_slots,
                          name);
}

vg_op *vg_resource_sparse_apply_momentum(vg_graph *g, vg_output var, vg_output accum, vg_output lr,
                                         vg_output grad, vg_output indices, vg_output momentum, bool use_locking,
                                         bool use_nesterov, const char *name) {
    vg_output in[6] = {var, accum, lr, grad, indices, momentum};
    return build_resource(g, "ResourceSparseApplyMomentum", in, 6, 3, use_locking, "use_nesterov", use_nesterov,
                          name);
}

vg_op *vg_resource_sparse_apply_adadelta(vg_graph *g, vg_output var, vg_output accum, vg_output accum_update,
                                         vg_output lr, vg_output rho, vg_output epsilon, vg_output grad,
                                         vg_output indices, bool use_locking, const char *name) {
    vg_output in[8] = {var, accum, accum_update, lr, rho, epsilon, grad, indices};
    return build_resource(g, "ResourceSparseApplyAdadelta", in, 8, 6, use_locking, NULL, false, name);
}

vg_op *vg_resource_sparse_apply_ftrl(vg_graph *g, vg_output var, vg_output accum, vg_output linear,
                                     vg_output grad, vg_output indices, vg_output lr, vg_output l1, vg_output l2,
                                     vg_output lr_power, bool use_locking, const char *name) {
    vg_output in[9] = {var, accum, linear, grad, indices, lr, l1, l2, lr_power};
    return build_resource(g, "ResourceSparseApplyFtrl", in, 9, 3, use_locking, NULL, false, name);
}

vg_op *vg_resource_sparse_apply_ftrl_v2(vg_graph *g, vg_output var, vg_output accum, vg_output linear,
                                        vg_output grad, vg_output indices, vg_output lr, vg_output l1,
                                        vg_output l2, vg_output l2_shrinkage, vg_output lr_power, bool use_locking,
                                        const char *name) {
    vg_output in[10] = {var, accum, linear, grad, indices, lr, l1, l2, l2_shrinkage, lr_power};
    return build_resource(g, "ResourceSparseApplyFtrlV2", in, 10, 3, use_locking, NULL, false, name);
}

vg_op *vg_resource_sparse_apply_proximal_gradient_descent(vg_graph *g, vg_output var, vg_output alpha,
                                                          vg_output l1, vg_output l2, vg_output grad,
                                                          vg_output indices, bool use_locking, const char *name) {
    vg_output in[6] = {var, alpha, l1, l2, grad, indices};
    return build_resource(g, "ResourceSparseApplyProximalGradientDescent", in, 6, 4, use_locking, NULL, false,
                          name);
}

vg_op *vg_resource_sparse_apply_rms_prop(vg_graph *g, vg_output var, vg_output ms, vg_output mom, vg_output lr,
                                         vg_output rho, vg_output momentum, vg_output epsilon, vg_output grad,
                                         vg_output indices, bool use_locking, const char *name) {
    vg_output in[9] = {var, ms, mom, lr, rho, momentum, epsilon, grad, indices};
    return build_resource(g, "ResourceSparseApplyRMSProp", in, 9, 7, use_locking, NULL, false, name);
}

/* ------------------------------------------------------------------------ */

#define APPLY_FLAGS (VG__OP_PASS_REF | VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE)
#define RESOURCE_FLAGS (VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE)

const vg__op_def vg__ops_training[] = {
    {"ApplyGradientDescent", 3, 3, APPLY_FLAGS, 0x1u, shape_gd, kernel_gd, NULL},
    {"ApplyMomentum", 5, 5, APPLY_FLAGS, 0x3u, shape_momentum, kernel_momentum, NULL},
    {"ApplyAdam", 10, 10, APPLY_FLAGS, 0x7u, shape_adam, kernel_adam, NULL},
    {"ApplyRMSProp", 8, 8, APPLY_FLAGS, 0x7u, shape_rmsprop, kernel_rmsprop, NULL},
    {"ApplyAdagrad", 4, 4, APPLY_FLAGS, 0x3u, shape_adagrad, kernel_adagrad, NULL},
    {"ApplyAdadelta", 7, 7, APPLY_FLAGS, 0x7u, shape_adadelta, kernel_adadelta, NULL},
    {"ApplyFtrl", 8, 8, APPLY_FLAGS, 0x7u, shape_ftrl, kernel_ftrl, NULL},
    {"ApplyFtrlV2", 9, 9, APPLY_FLAGS, 0x7u, shape_ftrl_v2, kernel_ftrl_v2, NULL},
    {"ApplyProximalGradientDescent", 5, 5, APPLY_FLAGS, 0x1u, shape_proximal_gd, kernel_proximal_gd, NULL},
    {"SparseApplyAdagrad", 5, 5, APPLY_FLAGS, 0x3u, shape_sp_adagrad, kernel_sp_adagrad, NULL},
    {"SparseApplyMomentum", 6, 6, APPLY_FLAGS, 0x3u, shape_sp_momentum, kernel_sp_momentum, NULL},
    {"SparseApplyAdadelta", 8, 8, APPLY_FLAGS, 0x7u, shape_sp_adadelta, kernel_sp_adadelta, NULL},
    {"SparseApplyFtrl", 9, 9, APPLY_FLAGS, 0x7u, shape_sp_ftrl, kernel_sp_ftrl, NULL},
    {"SparseApplyFtrlV2", 10, 10, APPLY_FLAGS, 0x7u, shape_sp_ftrl_v2, kernel_sp_ftrl_v2, NULL},
    {"SparseApplyProximalGradientDescent", 6, 6, APPLY_FLAGS, 0x1u, shape_sp_proximal_gd, kernel_sp_proximal_gd,
     NULL},
    {"SparseApplyRMSProp", 9, 9, APPLY_FLAGS, 0x7u, shape_sp_rmsprop, kernel_sp_rmsprop, NULL},
    /* the same ops on resource variables: handles instead of refs, no outputs */
    {"ResourceApplyGradientDescent", 3, 3, RESOURCE_FLAGS, 0, shape_gd, kernel_gd, NULL},
    {"ResourceApplyMomentum", 5, 5, RESOURCE_FLAGS, 0, shape_momentum, kernel_momentum, NULL},
    {"ResourceApplyAdam", 10, 10, RESOURCE_FLAGS, 0, shape_adam, kernel_adam, NULL},
    {"ResourceApplyRMSProp", 8, 8, RESOURCE_FLAGS, 0, shape_rmsprop, kernel_rmsprop, NULL},
    {"ResourceApplyAdagrad", 4, 4, RESOURCE_FLAGS, 0, shape_adagrad, kernel_adagrad, NULL},
    {"ResourceApplyAdadelta", 7, 7, RESOURCE_FLAGS, 0, shape_adadelta, kernel_adadelta, NULL},
    {"ResourceApplyFtrl", 8, 8, RESOURCE_FLAGS, 0, shape_ftrl, kernel_ftrl, NULL},
    {"ResourceApplyFtrlV2", 9, 9, RESOURCE_FLAGS, 0, shape_ftrl_v2, kernel_ftrl_v2, NULL},
    {"ResourceApplyProximalGradientDescent", 5, 5, RESOURCE_FLAGS, 0, shape_proximal_gd, kernel_proximal_gd, NULL},
    {"ResourceSparseApplyAdagrad", 5, 5, RESOURCE_FLAGS, 0, shape_sp_adagrad, kernel_sp_adagrad, NULL},
    {"ResourceSparseApplyMomentum", 6, 6, RESOURCE_FLAGS, 0, shape_sp_momentum, kernel_sp_momentum, NULL},
    {"ResourceSparseApplyAdadelta", 8, 8, RESOURCE_FLAGS, 0, shape_sp_adadelta, kernel_sp_adadelta, NULL},
    {"ResourceSparseApplyFtrl", 9, 9, RESOURCE_FLAGS, 0, shape_sp_ftrl, kernel_sp_ftrl, NULL},
    {"ResourceSparseApplyFtrlV2", 10, 10, RESOURCE_FLAGS, 0, shape_sp_ftrl_v2, kernel_sp_ftrl_v2, NULL},
    {"ResourceSparseApplyProximalGradientDescent", 6, 6, RESOURCE_FLAGS, 0, shape_sp_proximal_gd,
     kernel_sp_proximal_gd, NULL},
    {"ResourceSparseApplyRMSProp", 9, 9, RESOURCE_FLAGS, 0, shape_sp_rmsprop, kernel_sp_rmsprop, NULL},
    {0},
};
