/*
 * check_ops.c - TF 1.15's assertions (tensorflow/python/ops/check_ops.py), which are
 * Python compositions: reduce_all of the element-wise comparison ("All") feeding an
 * Assert whose data are TF's message strings and the tensors, under the scope
 * "assert_equal/" etc. The unary ones (assert_positive, ...) build "Const" zero and
 * the binary assertion beneath their scope, as TF does. The data start with the
 * message ("" when none), as TF 1.15's (message = message or ''). assert_equal of two
 * Consts is checked at build time (TF's _assert_static): a failure is the graph's
 * INVALID_ARGUMENT error with the data joined by newlines; the other assertions check
 * Consts at run time, as TF 1.15 does. assert_rank /
 * assert_rank_at_least check a known rank at build time (TF's ValueError text) and
 * fall back to an Assert on Rank(x); assert_type is a build-time check. No op table:
 * the ops are the existing Equal/Less/All/Assert/NoOp (and a cond, "AssertGuard",
 * around the Assert when the data holds tensors other than string/int32, as TF's
 * control_flow_ops.Assert builds it).
 */
#include "kernels/array/array_internal.h"
#include "vigil/control_flow.h"
#include "vigil/ops_ext.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef enum { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE } cmpop;

static const char *const SYM[] = {"==", "!=", "<", "<=", ">", ">="};
static const char *const OPNAME[] = {"assert_equal", "assert_none_equal", "assert_less",
                                     "assert_less_equal", "assert_greater", "assert_greater_equal"};

static vg_output compare(vg_graph *g, cmpop c, vg_output x, vg_output y) {
    switch (c) {
    case CMP_EQ: return vg_equal(g, x, y, "Equal");
    case CMP_NE: return vg_not_equal(g, x, y, "NotEqual");
    case CMP_LT: return vg_less(g, x, y, "Less");
    case CMP_LE: return vg_less_equal(g, x, y, "LessEqual");
    case CMP_GT: return vg_greater(g, x, y, "Greater");
    default: return vg_greater_equal(g, x, y, "GreaterEqual");
    }
}

static bool holds(cmpop c, double a, double b) {
    switch (c) {
    case CMP_EQ: return a == b;
    case CMP_NE: return a != b;
    case CMP_LT: return a < b;
    case CMP_LE: return a <= b;
    case CMP_GT: return a > b;
    default: return a >= b;
    }
}

static double num_at(const vg_tensor *t, int64_t i) {
    vg_dtype dt = vg_tensor_dtype(t);
    return dt == VG_BOOL ? ((const uint8_t *)vg_tensor_data(t))[i] : vg__real_at(t, dt, i, NAN);
}

static bool numeric(vg_dtype dt) {
    return dt == VG_FLOAT || dt == VG_DOUBLE || dt == VG_INT32 || dt == VG_INT64 || dt == VG_UINT8 || dt == VG_BOOL;
}

/* The value of o if it is a Const output (borrowed), else NULL. */
static const vg_tensor *const_of(vg_output o) {
    const vg_tensor *t;
    if (!o.op || strcmp(vg_op_type(o.op), "Const") || !vg_op_attr_tensor(o.op, "value", &t)) return NULL;
    return t;
}

static void out_name(vg_output x, char *buf, size_t n) { snprintf(buf, n, "%s:%d", vg_op_name(x.op), x.index); }

/* TF1's TensorShape str: "(2, 3)", "(3,)", "()", "(?, 3)", "<unknown>". */
static void py_shape(vg_shape s, char *buf, size_t n) {
    if (s.ndims < 0) {
        snprintf(buf, n, "<unknown>");
        return;
    }
    size_t pos = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < s.ndims && pos < n; i++) {
        if (s.dims[i] < 0) pos += (size_t)snprintf(buf + pos, n - pos, "%s?", i ? ", " : "");
        else pos += (size_t)snprintf(buf + pos, n - pos, "%s%lld", i ? ", " : "", (long long)s.dims[i]);
    }
    if (pos < n) snprintf(buf + pos, n - pos, s.ndims == 1 ? ",)" : ")");
}

/* str() of a constant as numpy prints it, flat: "5", "[1 2 3]". */
static size_t const_str(const vg_tensor *t, char *buf, size_t n) {
    size_t pos = 0;
    int64_t ne = vg_tensor_num_elements(t);
    bool arr = vg_tensor_ndims(t) > 0;
    if (arr) pos += (size_t)snprintf(buf + pos, n - pos, "[");
    for (int64_t i = 0; i < ne && pos < n; i++) {
        if (vg_tensor_dtype(t) == VG_STRING) {
            size_t len;
            const char *s = vg_tensor_string(t, i, &len);
            pos += (size_t)snprintf(buf + pos, n - pos, "%s%.*s", i ? " " : "", (int)len, s ? s : "");
        } else {
            pos += (size_t)snprintf(buf + pos, n - pos, "%s%.9g", i ? " " : "", num_at(t, i));
        }
    }
    if (arr && pos < n) pos += (size_t)snprintf(buf + pos, n - pos, "]");
    return pos < n ? pos : n;
}

/* One entry of an assertion's data: a message string or a tensor. */
typedef struct datum {
    const char *s;
    vg_output t;
} datum;

/* TF's _assert_static: the data as text joined by newlines (a Const's value, a
 * string, or the tensor's name). */
static vg_op *static_fail(vg_graph *g, const datum *d, int nd) {
    char msg[VG_STATUS_MSG_MAX];
    size_t pos = 0;
    for (int i = 0; i < nd && pos < sizeof msg; i++) {
        if (i) pos += (size_t)snprintf(msg + pos, sizeof msg - pos, "\n");
        if (pos >= sizeof msg) break;
        const vg_tensor *c = d[i].s ? NULL : const_of(d[i].t);
        if (d[i].s) pos += (size_t)snprintf(msg + pos, sizeof msg - pos, "%s", d[i].s);
        else if (c) pos += const_str(c, msg + pos, sizeof msg - pos);
        else {
            char nm[512];
            out_name(d[i].t, nm, sizeof nm);
            pos += (size_t)snprintf(msg + pos, sizeof msg - pos, "Tensor(\"%s\")", nm);
        }
    }
    vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s", msg);
    return NULL;
}

typedef struct guard {
    vg_output cond;
    const datum *d;
    int nd, summarize;
} guard;

/* The Assert op itself: string data become Consts (in the current scope or branch). */
static vg_op *assert_op(vg_graph *g, const guard *a) {
    vg_output outs[16];
    int k = 0;
    for (int i = 0; i < a->nd && k < 16; i++) outs[k++] = a->d[i].s ? vg_const_string(g, a->d[i].s, NULL) : a->d[i].t;
    return vg_assert(g, a->cond, outs, k, a->summarize, "Assert");
}

static vg_code guard_pass(vg_graph *g, void *user, vg_output *outs) {
    (void)user;
    vg_op *n = vg_no_op(g, "NoOp");
    outs[0] = vg_out(n, 0);
    return n ? VG_OK : vg_graph_status(g, NULL);
}

static vg_code guard_fail(vg_graph *g, void *user, vg_output *outs) {
    vg_op *a = assert_op(g, user);
    outs[0] = vg_out(a, 0);
    return a ? VG_OK : vg_graph_status(g, NULL);
}

/* control_flow_ops.Assert(condition, data, summarize) under the scope "Assert": the
 * Assert op "Assert/Assert" when every data tensor is string or int32, else (as TF,
 * to keep other tensors off the host) a cond "Assert/AssertGuard" whose true branch is
 * a NoOp and false branch the Assert; its Merge op is returned. */
static vg_op *build_assert(vg_graph *g, vg_output cond, const datum *d, int nd, int summarize) {
    guard a = {cond, d, nd, summarize};
    bool host = true;
    for (int i = 0; i < nd; i++)
        if (!d[i].s && vg_output_dtype(d[i].t) != VG_STRING && vg_output_dtype(d[i].t) != VG_INT32) host = false;
    vg_graph_push_scope(g, "Assert");
    vg_op *r = NULL;
    if (host) {
        r = assert_op(g, &a);
    } else {
        vg_output out = {NULL, 0};
        vg_status st;
        if (vg_cond(g, cond, guard_pass, guard_fail, &a, 1, &out, "AssertGuard", &st) != VG_OK)
            vg_graph_set_error(g, st.code, "%s", st.msg);
        r = out.op;
    }
    vg_graph_pop_scope(g);
    return r;
}

/* Static evaluation of all(x c y) for Consts of one shape or with a single-element
 * side: 1 holds, 0 fails, -1 unknown (not constant or not comparable here). */
static int static_holds(cmpop c, vg_output x, vg_output y) {
    const vg_tensor *a = const_of(x), *b = const_of(y);
    if (!a || !b || !numeric(vg_tensor_dtype(a)) || !numeric(vg_tensor_dtype(b))) return -1;
    int64_t na = vg_tensor_num_elements(a), nb = vg_tensor_num_elements(b);
    vg_shape sa = vg_tensor_shape(a), sb = vg_tensor_shape(b);
    bool same = sa.ndims == sb.ndims;
    for (int i = 0; same && i < sa.ndims; i++) same = sa.dims[i] == sb.dims[i];
    if (!same && na != 1 && nb != 1) return -1;
    int64_t n = na > nb ? na : nb;
    if (na == 0 || nb == 0) return 1;
    for (int64_t i = 0; i < n; i++)
        if (!holds(c, num_at(a, na == 1 ? 0 : i), num_at(b, nb == 1 ? 0 : i))) return 0;
    return 1;
}

/* TF 1.15's assert_equal / assert_less / ...: data/nd the caller's data (NULL: TF's
 * default data, which starts with message). The scope is already pushed by the caller. */
static vg_op *binary_assert_in_scope(vg_graph *g, cmpop c, vg_output x, vg_output y, const datum *data, int nd,
                                     const char *message, int summarize) {
    /* message only goes into the default data (the unary callers put theirs in data) */
    char cond_s[96], xs[600], ys[600], xn[512], yn[512];
    datum def[6];
    int n = 0;
    if (!data) {
        def[n++] = (datum){message ? message : "", {NULL, 0}};
        out_name(x, xn, sizeof xn);
        out_name(y, yn, sizeof yn);
        snprintf(cond_s, sizeof cond_s, "Condition x %s y did not hold %s", SYM[c],
                 c == CMP_NE ? "for every single element:" : "element-wise:");
        snprintf(xs, sizeof xs, "x (%s) = ", xn);
        snprintf(ys, sizeof ys, "y (%s) = ", yn);
        def[n++] = (datum){cond_s, {NULL, 0}};
        def[n++] = (datum){xs, {NULL, 0}};
        def[n++] = (datum){NULL, x};
        def[n++] = (datum){ys, {NULL, 0}};
        def[n++] = (datum){NULL, y};
        data = def;
        nd = n;
    }
    vg_output cond = vg_reduce_all(g, compare(g, c, x, y), NULL, -1, false, "All");
    if (vg_graph_status(g, NULL) != VG_OK) return NULL;
    if (c == CMP_EQ && static_holds(c, x, y) == 0) return static_fail(g, data, nd); /* assert_equal only */
    return build_assert(g, cond, data, nd, summarize);
}

static vg_op *binary_assert(vg_graph *g, cmpop c, vg_output x, vg_output y, const char *message, int summarize,
                            const char *name) {
    if (!x.op || !y.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: x and y must be outputs of ops", OPNAME[c]);
        return NULL;
    }
    vg_graph_push_scope(g, name ? name : OPNAME[c]);
    vg_op *r = binary_assert_in_scope(g, c, x, y, NULL, 0, message, summarize);
    vg_graph_pop_scope(g);
    return r;
}

vg_op *vg_assert_equal(vg_graph *g, vg_output x, vg_output y, const char *message, int summarize, const char *name) {
    return binary_assert(g, CMP_EQ, x, y, message, summarize, name);
}
vg_op *vg_assert_none_equal(vg_graph *g, vg_output x, vg_output y, const char *message, int summarize,
                            const char *name) {
    return binary_assert(g, CMP_NE, x, y, message, summarize, name);
}
vg_op *vg_assert_less(vg_graph *g, vg_output x, vg_output y, const char *message, int summarize, const char *name) {
    return binary_assert(g, CMP_LT, x, y, message, summarize, name);
}
vg_op *vg_assert_less_equal(vg_graph *g, vg_output x, vg_output y, const char *message, int summarize,
                            const char *name) {
    return binary_assert(g, CMP_LE, x, y, message, summarize, name);
}
vg_op *vg_assert_greater(vg_graph *g, vg_output x, vg_output y, const char *message, int summarize,
                         const char *name) {
    return binary_assert(g, CMP_GT, x, y, message, summarize, name);
}
vg_op *vg_assert_greater_equal(vg_graph *g, vg_output x, vg_output y, const char *message, int summarize,
                               const char *name) {
    return binary_assert(g, CMP_GE, x, y, message, summarize, name);
}

/* assert_negative etc.: data [message or '', condition text, 'x (name) = ', x], then
 * assert_less / assert_less_equal against Const 0 of x's dtype, nested in the scope. */
static vg_op *unary_assert(vg_graph *g, const char *opname, const char *cond_text, cmpop c, bool zero_first,
                           vg_output x, const char *message, int summarize, const char *name) {
    if (!x.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: x must be the output of an op", opname);
        return NULL;
    }
    vg_graph_push_scope(g, name ? name : opname);
    char xn[512], xs[700];
    out_name(x, xn, sizeof xn);
    /* assert_non_positive's two strings lack a comma in TF 1.15, so they are one */
    bool joined = c == CMP_LE && !zero_first;
    datum d[4];
    int n = 0;
    d[n++] = (datum){message ? message : "", {NULL, 0}};
    if (joined) {
        snprintf(xs, sizeof xs, "%sx (%s) = ", cond_text, xn);
        d[n++] = (datum){xs, {NULL, 0}};
    } else {
        snprintf(xs, sizeof xs, "x (%s) = ", xn);
        d[n++] = (datum){cond_text, {NULL, 0}};
        d[n++] = (datum){xs, {NULL, 0}};
    }
    d[n++] = (datum){NULL, x};
    vg_output zero = vg_const_fill(g, vg_output_dtype(x), NULL, 0, 0, "Const");
    vg_op *r = NULL;
    if (zero.op) {
        vg_graph_push_scope(g, OPNAME[c]);
        r = zero_first ? binary_assert_in_scope(g, c, zero, x, d, n, NULL, summarize)
                       : binary_assert_in_scope(g, c, x, zero, d, n, NULL, summarize);
        vg_graph_pop_scope(g);
    }
    vg_graph_pop_scope(g);
    return r;
}

vg_op *vg_assert_negative(vg_graph *g, vg_output x, const char *message, int summarize, const char *name) {
    return unary_assert(g, "assert_negative", "Condition x < 0 did not hold element-wise:", CMP_LT, false, x, message,
                        summarize, name);
}
vg_op *vg_assert_positive(vg_graph *g, vg_output x, const char *message, int summarize, const char *name) {
    return unary_assert(g, "assert_positive", "Condition x > 0 did not hold element-wise:", CMP_LT, true, x, message,
                        summarize, name);
}
vg_op *vg_assert_non_negative(vg_graph *g, vg_output x, const char *message, int summarize, const char *name) {
    return unary_assert(g, "assert_non_negative", "Condition x >= 0 did not hold element-wise:", CMP_LE, true, x,
                        message, summarize, name);
}
vg_op *vg_assert_non_positive(vg_graph *g, vg_output x, const char *message, int summarize, const char *name) {
    return unary_assert(g, "assert_non_positive", "Condition x <= 0 did not hold element-wise:", CMP_LE, false, x,
                        message, summarize, name);
}

/* assert_rank / assert_rank_at_least (_assert_rank_condition with a static rank). */
static vg_op *rank_assert(vg_graph *g, vg_output x, int rank, bool at_least, const char *message, int summarize,
                          const char *name) {
    const char *opname = at_least ? "assert_rank_at_least" : "assert_rank";
    if (!x.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: x must be the output of an op", opname);
        return NULL;
    }
    char xn[512], sh[256];
    out_name(x, xn, sizeof xn);
    vg_shape s = vg_output_shape(x);
    if (s.ndims >= 0) {
        if (at_least ? s.ndims >= rank : s.ndims == rank) {
            vg_graph_push_scope(g, name ? name : opname);
            vg_const_i32(g, rank, "rank"); /* TF converts rank before the static check */
            vg_op *r = vg_no_op(g, "static_checks_determined_all_ok");
            vg_graph_pop_scope(g);
            return r;
        }
        py_shape(s, sh, sizeof sh);
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s.  Tensor %s must have rank%s %d.  Received rank %d, shape %s",
                           message ? message : "", xn, at_least ? " at least" : "", rank, s.ndims, sh);
        return NULL;
    }
    vg_graph_push_scope(g, name ? name : opname);
    char what[700];
    snprintf(what, sizeof what, "Tensor %s must have rank%s", xn, at_least ? " at least" : "");
    vg_output rk = vg_const_i32(g, rank, "rank");
    datum d[5] = {{message ? message : "", {NULL, 0}}, {what, {NULL, 0}}, {NULL, rk}, {"Received shape: ", {NULL, 0}},
                  {NULL, vg_shape_op(g, x, VG_INT32, "Shape")}};
    vg_output xr = vg_rank(g, x, "Rank");
    vg_output cond = at_least ? vg_greater_equal(g, xr, rk, "GreaterEqual") : vg_equal(g, xr, rk, "Equal");
    vg_op *r = vg_graph_status(g, NULL) == VG_OK ? build_assert(g, cond, d, 5, summarize) : NULL;
    vg_graph_pop_scope(g);
    return r;
}

vg_op *vg_assert_rank(vg_graph *g, vg_output x, int rank, const char *message, int summarize, const char *name) {
    return rank_assert(g, x, rank, false, message, summarize, name);
}
vg_op *vg_assert_rank_at_least(vg_graph *g, vg_output x, int rank, const char *message, int summarize,
                               const char *name) {
    return rank_assert(g, x, rank, true, message, summarize, name);
}

/* Python's repr of a tf.DType name. */
static const char *py_dtype(vg_dtype dt) {
    switch (dt) {
    case VG_FLOAT: return "float32";
    case VG_DOUBLE: return "float64";
    case VG_HALF: return "float16";
    case VG_BFLOAT16: return "bfloat16";
    default: return vg_dtype_name(dt);
    }
}

vg_op *vg_assert_type(vg_graph *g, vg_output x, vg_dtype dt, const char *message, const char *name) {
    if (!x.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "assert_type: x must be the output of an op");
        return NULL;
    }
    if (vg_output_dtype(x) != dt) {
        char xn[512];
        out_name(x, xn, sizeof xn);
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s  %s must be of type <dtype: '%s'>", message ? message : "", xn,
                           py_dtype(dt));
        return NULL;
    }
    vg_graph_push_scope(g, name ? name : "assert_type");
    vg_op *r = vg_no_op(g, "statically_determined_correct_type");
    vg_graph_pop_scope(g);
    return r;
}
