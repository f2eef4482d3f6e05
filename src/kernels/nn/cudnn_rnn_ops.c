/*
 * cudnn_rnn_ops.c - TF 1.15's cuDNN RNN op family (core/ops/cudnn_rnn_ops.cc, kernels
 * cudnn_rnn_ops.cc; gradient python/ops/cudnn_rnn_grad.py) run on the CPU: CudnnRNN,
 * CudnnRNNBackprop, CudnnRNNParamsSize, CudnnRNNParamsToCanonical and
 * CudnnRNNCanonicalToParams, float32, rnn_mode "lstm", "gru", "rnn_tanh", "rnn_relu",
 * input_mode "linear_input" (and "auto_select" when input_size != num_units, which is
 * the same), unidirectional or bidirectional. TF has no CPU kernel for these ops; vigil
 * gives them one that reads and writes cuDNN's opaque parameter buffer in cuDNN's
 * layout, so a buffer a GPU run of TF saved means the same here (LSTM shown; GRU has 6
 * matrices W_r W_u W_h R_r R_u R_h and 6 biases, rnn_tanh / rnn_relu 2 and 2):
 *
 *   weights: for each layer l, for each direction d (forward first), pseudo-layer
 *     p = l * dirs + d, the 8 matrices W_i, W_f, W_c, W_o (applied to the layer's input,
 *     each [num_units, in_l] row-major, in_0 = input_size, in_l = dirs * num_units) and
 *     R_i, R_f, R_c, R_o ([num_units, num_units], applied to h);
 *   then biases: for each pseudo-layer the 8 vectors bW_i..bW_o, bR_i..bR_o [num_units].
 *
 *   i = sigmoid(W_i x + R_i h + bW_i + bR_i), f = sigmoid(...f), o = sigmoid(...o),
 *   c' = tanh(W_c x + R_c h + bW_c + bR_c), c = f * c_prev + i * c', h = o * tanh(c)
 *
 * The backward direction runs from the last time step to the first; a layer's output
 * is [time, batch, dirs * num_units] (forward units first). h and c are
 * [num_layers * dirs, batch, num_units] in pseudo-layer order. reserve_space is vigil's
 * own float32 buffer (the layers' outputs, the gate activations and the cell states)
 * that CudnnRNNBackprop reads; only a CudnnRNN of the same attributes can fill it.
 * Dropout between layers with is_training is refused (UNIMPLEMENTED: cuDNN's dropout
 * stream cannot be reproduced); it is ignored at inference, as cuDNN does. input_mode
 * "skip_input" is UNIMPLEMENTED.
 */
#include "kernels/kernel.h"
#include "kernels/nn/nn_internal.h"
#include "vigil/ops.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* attributes and the parameter layout */

typedef struct model {
    int64_t L, D, H, I; /* layers, directions, units, input size */
    int64_t NG;         /* gates: 4 (lstm), 3 (gru), 1 (rnn_tanh, rnn_relu); 2 * NG canonical
                           params per pseudo-layer */
    bool relu;          /* rnn_relu */
    float dropout;
    bool training;
} model;

static const char *attr_s(const vg_op *op, const char *name, const char *dflt, char *buf, size_t n) {
    const char *v;
    size_t len;
    if (!vg_op_attr_string(op, name, &v, &len)) return dflt;
    if (len >= n) len = n - 1;
    memcpy(buf, v, len);
    buf[len] = 0;
    return buf;
}

/* Reads rnn_mode, input_mode, direction, dropout, is_training, T. Fills m->D, dropout,
 * training. input_mode is checked later (auto_select needs the sizes). */
static vg_code parse_attrs(const vg_op *op, model *m, vg_status *st) {
    char buf[64];
    const char *t = vg_op_type(op);
    const char *mode = attr_s(op, "rnn_mode", "lstm", buf, sizeof buf);
    m->NG = !strcmp(mode, "gru") ? 3 : !strcmp(mode, "rnn_tanh") || !strcmp(mode, "rnn_relu") ? 1 : 4;
    m->relu = !strcmp(mode, "rnn_relu");
    if (strcmp(mode, "lstm") && strcmp(mode, "gru") && m->NG != 1) {
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: invalid rnn_mode '%s'", t, mode);
    }
    const char *im = attr_s(op, "input_mode", "linear_input", buf, sizeof buf);
    if (strcmp(im, "linear_input") && strcmp(im, "auto_select")) {
        if (!strcmp(im, "skip_input"))
            return vg_status_set(st, VG_UNIMPLEMENTED,
                                 "%s: input_mode 'skip_input' is not implemented on the CPU (only 'linear_input')", t);
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: invalid input_mode '%s'", t, im);
    }
    const char *dir = attr_s(op, "direction", "unidirectional", buf, sizeof buf);
    if (!strcmp(dir, "unidirectional")) m->D = 1;
    else if (!strcmp(dir, "bidirectional")) m->D = 2;
    else return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: invalid direction '%s'", t, dir);
    float f;
    bool b;
    m->dropout = vg_op_attr_float(op, "dropout", &f) ? f : 0.0f;
    m->training = vg_op_attr_bool(op, "is_training", &b) ? b : true;
    if (!(m->dropout >= 0.0f && m->dropout <= 1.0f))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: dropout must be in [0, 1], got %g", t, (double)m->dropout);
    vg_dtype T;
    if (vg_op_attr_type_(op, "T", &T) && T != VG_FLOAT)
        return vg_status_set(st, VG_UNIMPLEMENTED, "%s: T=%s is not implemented on the CPU (only float32)", t,
                             vg_dtype_name(T));
    return VG_OK;
}

/* auto_select with input_size == num_units is skip_input (UNIMPLEMENTED). */
static vg_code check_input_mode(const vg_op *op, const model *m, vg_status *st) {
    char buf[64];
    if (!strcmp(attr_s(op, "input_mode", "linear_input", buf, sizeof buf), "auto_select") && m->I == m->H)
        return vg_status_set(st, VG_UNIMPLEMENTED,
                             "%s: input_mode 'auto_select' with input_size == num_units (%lld) means skip_input, "
                             "which is not implemented on the CPU",
                             vg_op_type(op), (long long)m->H);
    return VG_OK;
}

static int64_t in_size(const model *m, int64_t l) { return l == 0 ? m->I : m->D * m->H; }
static int64_t weights_of(const model *m, int64_t p) { return m->NG * m->H * (in_size(m, p / m->D) + m->H); }
static int64_t weights_total(const model *m) {
    int64_t n = 0;
    for (int64_t p = 0; p < m->L * m->D; p++) n += weights_of(m, p);
    return n;
}
static int64_t params_size(const model *m) { return weights_total(m) + m->L * m->D * 2 * m->NG * m->H; }
/* offset of pseudo-layer p's first weight matrix (W_i) */
static int64_t w_offset(const model *m, int64_t p) {
    int64_t n = 0;
    for (int64_t q = 0; q < p; q++) n += weights_of(m, q);
    return n;
}
static int64_t b_offset(const model *m, int64_t p) { return weights_total(m) + p * 2 * m->NG * m->H; }
static bool is_lstm(const model *m) { return m->NG == 4; }

/* ------------------------------------------------------------------------ */
/* shape functions */

static vg_code in_rank(vg_op *op, int i, int rank, const char *what, vg_shape *s, vg_status *st) {
    *s = vg__op_input_shape(op, i);
    vg_dtype dt = vg__op_input_dtype(op, i);
    if (dt != VG_DTYPE_INVALID && dt != VG_FLOAT)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: %s must be float32, got %s", vg_op_type(op), what,
                             vg_dtype_name(dt));
    if (s->ndims >= 0 && s->ndims != rank)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: %s must be rank %d, got rank %d", vg_op_type(op), what,
                             rank, s->ndims);
    return VG_OK;
}

static int64_t dim_of(const vg_shape *s, int i) { return s->ndims > i ? s->dims[i] : -1; }

static void set_defaults(vg_op *op) {
    vg__op_set_default_attr_type(op, "T", VG_FLOAT);
    vg__op_set_default_attr_string(op, "rnn_mode", "lstm");
    vg__op_set_default_attr_string(op, "input_mode", "linear_input");
    vg__op_set_default_attr_string(op, "direction", "unidirectional");
    vg__op_default_seeds(op);
}

/* input [T, B, I], input_h, input_c [L * D, B, H], params [N] from input `first`. */
static vg_code forward_shapes(vg_op *op, int first, model *m, vg_shape s[4], vg_status *st) {
    static const char *const names[4] = {"input", "input_h", "input_c", "params"};
    static const int ranks[4] = {3, 3, 3, 1};
    if (parse_attrs(op, m, st)) return st->code;
    for (int k = 0; k < 4; k++)
        if ((k != 2 || is_lstm(m)) && in_rank(op, first + k, ranks[k], names[k], &s[k], st)) return st->code;
    if (!is_lstm(m)) s[2] = vg__op_input_shape(op, first + 2);
    for (int j = 0; j < 3 && is_lstm(m); j++) {
        int64_t a = dim_of(&s[1], j), b = dim_of(&s[2], j);
        if (a >= 0 && b >= 0 && a != b)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "%s: input_c's shape must equal input_h's (dimension %d: %lld vs. %lld)", vg_op_type(op),
                                 j, (long long)b, (long long)a);
    }
    int64_t B = dim_of(&s[0], 1), hb = dim_of(&s[1], 1);
    if (B >= 0 && hb >= 0 && B != hb)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input_h's batch size (%lld) must equal input's (%lld)",
                             vg_op_type(op), (long long)hb, (long long)B);
    int64_t l = dim_of(&s[1], 0);
    if (l >= 0 && l % m->D)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input_h's first dimension (%lld) must be num_layers * %lld",
                             vg_op_type(op), (long long)l, (long long)m->D);
    m->L = l >= 0 ? l / m->D : -1;
    if (m->L > 1 && m->dropout > 0.0f && m->training && !strcmp(vg_op_type(op), "CudnnRNN"))
        return vg_status_set(st, VG_UNIMPLEMENTED,
                             "%s: dropout %g between layers in training is not implemented on the CPU (cuDNN's "
                             "dropout stream cannot be reproduced); use dropout 0 or is_training false",
                             vg_op_type(op), (double)m->dropout);
    m->H = dim_of(&s[1], 2) >= 0 ? dim_of(&s[1], 2) : (is_lstm(m) ? dim_of(&s[2], 2) : -1);
    m->I = dim_of(&s[0], 2);
    if (m->L > 0 && m->H > 0 && m->I > 0) {
        if (check_input_mode(op, m, st)) return st->code;
        int64_t n = dim_of(&s[3], 0), want = params_size(m);
        if (n >= 0 && n != want)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "%s: params size mismatch: %lld vs. %lld (num_layers %lld, num_units %lld, input_size %lld, %s)",
                                 vg_op_type(op), (long long)n, (long long)want, (long long)m->L, (long long)m->H,
                                 (long long)m->I, m->D == 2 ? "bidirectional" : "unidirectional");
    }
    return VG_OK;
}

static vg_code shape_rnn(vg_op *op, vg_status *st) {
    model m;
    vg_shape s[4];
    if (forward_shapes(op, 0, &m, s, st)) return st->code;
    set_defaults(op);
    vg__op_set_default_attr_bool(op, "is_training", true);
    int64_t y[3] = {dim_of(&s[0], 0), dim_of(&s[0], 1), m.H >= 0 ? m.D * m.H : -1}, r[1] = {-1};
    vg__op_set_num_outputs(op, 4);
    vg__op_set_output(op, 0, VG_FLOAT, vg_shape_make(y, 3));
    vg__op_set_output(op, 1, VG_FLOAT, s[1]);
    vg__op_set_output(op, 2, VG_FLOAT, is_lstm(&m) ? s[1] : vg_shape_make(NULL, 0)); /* GRU: a dummy scalar */
    vg__op_set_output(op, 3, VG_FLOAT, vg_shape_make(r, 1));
    return VG_OK;
}

static vg_code shape_backprop(vg_op *op, vg_status *st) {
    model m;
    vg_shape s[4];
    if (forward_shapes(op, 0, &m, s, st)) return st->code;
    for (int k = 4; k < 11; k++) {
        vg_dtype dt = vg__op_input_dtype(op, k);
        if (dt != VG_DTYPE_INVALID && dt != VG_FLOAT)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input %d must be float32, got %s", vg_op_type(op), k,
                                 vg_dtype_name(dt));
    }
    set_defaults(op);
    vg__op_set_num_outputs(op, 4);
    for (int k = 0; k < 4; k++) vg__op_set_output(op, k, VG_FLOAT, s[k]);
    return VG_OK;
}

/* The int32 scalar inputs num_layers, num_units, input_size (first three) when they are
 * constants; -1 otherwise. */
static void const_sizes(vg_op *op, int64_t v[3]) {
    for (int k = 0; k < 3; k++) {
        const vg_tensor *t = vg__op_const_input(op, k);
        v[k] = t && vg_tensor_dtype(t) == VG_INT32 && vg_tensor_num_elements(t) == 1
                   ? *(const int32_t *)vg_tensor_data(t)
                   : -1;
    }
}

static vg_code check_size_inputs(vg_op *op, vg_status *st) {
    static const char *const names[3] = {"num_layers", "num_units", "input_size"};
    for (int k = 0; k < 3; k++) {
        vg_dtype dt = vg__op_input_dtype(op, k);
        vg_shape s = vg__op_input_shape(op, k);
        if (dt != VG_DTYPE_INVALID && dt != VG_INT32)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: %s must be int32, got %s", vg_op_type(op), names[k],
                                 vg_dtype_name(dt));
        if (s.ndims > 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: %s must be a scalar, got rank %d", vg_op_type(op),
                                 names[k], s.ndims);
    }
    return VG_OK;
}

static vg_code shape_params_size(vg_op *op, vg_status *st) {
    model m;
    if (parse_attrs(op, &m, st) || check_size_inputs(op, st)) return st->code;
    set_defaults(op);
    vg__op_set_default_attr_type(op, "S", VG_INT32);
    vg_dtype S = VG_INT32;
    vg_op_attr_type_(op, "S", &S);
    if (S != VG_INT32 && S != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: S must be int32 or int64, got %s", vg_op_type(op),
                             vg_dtype_name(S));
    int64_t one[1] = {1};
    return vg__op_set_single_output(op, S, vg_shape_make(one, 1));
}

static int64_t num_params_attr(const vg_op *op, int64_t dflt) {
    int64_t n;
    return vg_op_attr_int(op, "num_params", &n) ? n : dflt;
}

static vg_code shape_to_canonical(vg_op *op, vg_status *st) {
    model m;
    vg_shape s;
    if (parse_attrs(op, &m, st) || check_size_inputs(op, st) || in_rank(op, 3, 1, "params", &s, st)) return st->code;
    int64_t n = num_params_attr(op, -1);
    if (n <= 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: num_params must be positive, got %lld", vg_op_type(op),
                             (long long)n);
    set_defaults(op);
    int64_t v[3];
    const_sizes(op, v);
    m.L = v[0], m.H = v[1], m.I = v[2];
    bool known = m.L > 0 && m.H > 0 && m.I > 0;
    int64_t NW = 2 * m.NG;
    if (known && n != m.L * m.D * NW)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: num_params (%lld) must be num_layers * dirs * %lld = %lld",
                             vg_op_type(op), (long long)n, (long long)NW, (long long)(m.L * m.D * NW));
    vg__op_set_num_outputs(op, (int)(2 * n));
    for (int64_t k = 0; k < n; k++) {
        int64_t p = k / NW, w[2] = {known ? m.H : -1, known ? (k % NW < m.NG ? in_size(&m, p / m.D) : m.H) : -1},
                b[1] = {known ? m.H : -1};
        vg__op_set_output(op, (int)k, VG_FLOAT, vg_shape_make(w, 2));
        vg__op_set_output(op, (int)(n + k), VG_FLOAT, vg_shape_make(b, 1));
    }
    return VG_OK;
}

static vg_code shape_to_params(vg_op *op, vg_status *st) {
    model m;
    if (parse_attrs(op, &m, st) || check_size_inputs(op, st)) return st->code;
    int nin = vg_op_num_inputs(op);
    if (nin < 5 || (nin - 3) % 2)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: needs as many weights as biases, got %d inputs after the sizes",
                             vg_op_type(op), nin - 3);
    int64_t n = num_params_attr(op, (nin - 3) / 2);
    if (n != (nin - 3) / 2)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: num_params (%lld) must equal the number of weights (%d)",
                             vg_op_type(op), (long long)n, (nin - 3) / 2);
    for (int k = 3; k < nin; k++) {
        vg_dtype dt = vg__op_input_dtype(op, k);
        if (dt != VG_DTYPE_INVALID && dt != VG_FLOAT)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: %s %d must be float32, got %s", vg_op_type(op),
                                 k - 3 < n ? "weights" : "biases", (int)((k - 3) % n), vg_dtype_name(dt));
    }
    set_defaults(op);
    vg__op_set_default_attr_int(op, "num_params", n);
    int64_t v[3];
    const_sizes(op, v);
    m.L = v[0], m.H = v[1], m.I = v[2];
    int64_t d[1] = {m.L > 0 && m.H > 0 && m.I > 0 ? params_size(&m) : -1};
    if (d[0] >= 0 && n != m.L * m.D * 2 * m.NG)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: num_params (%lld) must be num_layers * dirs * %lld = %lld",
                             vg_op_type(op), (long long)n, (long long)(2 * m.NG), (long long)(m.L * m.D * 2 * m.NG));
    return vg__op_set_single_output(op, VG_FLOAT, vg_shape_make(d, 1));
}

/* ------------------------------------------------------------------------ */
/* run-time checks */

static bool has_dims3(const vg_tensor *t, int64_t a, int64_t b, int64_t c) {
    return vg_tensor_ndims(t) == 3 && vg_tensor_dim(t, 0) == a && vg_tensor_dim(t, 1) == b && vg_tensor_dim(t, 2) == c;
}

/* The forward inputs (TF's ExtractForwardInput): fills m, T, B. */
static vg_code check_forward(vg__kctx *ctx, model *m, int64_t *T, int64_t *B) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    if (parse_attrs(op, m, st)) return st->code;
    static const char *const names[4] = {"input", "input_h", "input_c", "params"};
    for (int k = 0; k < 4; k++)
        if ((k != 2 || is_lstm(m)) && vg_tensor_dtype(vg__kctx_input(ctx, k)) != VG_FLOAT)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "RNN %s must be float32, got %s", names[k],
                                 vg_dtype_name(vg_tensor_dtype(vg__kctx_input(ctx, k))));
    const vg_tensor *x = vg__kctx_input(ctx, 0), *h = vg__kctx_input(ctx, 1), *c = vg__kctx_input(ctx, 2),
                    *p = vg__kctx_input(ctx, 3);
    if (vg_tensor_ndims(x) != 3) return vg_status_set(st, VG_INVALID_ARGUMENT, "RNN input must be a 3-D vector.");
    if (vg_tensor_ndims(h) != 3) return vg_status_set(st, VG_INVALID_ARGUMENT, "RNN input_h must be a 3-D vector.");
    *T = vg_tensor_dim(x, 0);
    *B = vg_tensor_dim(x, 1);
    m->I = vg_tensor_dim(x, 2);
    m->H = vg_tensor_dim(h, 2);
    if (vg_tensor_dim(h, 0) % m->D || vg_tensor_dim(h, 0) == 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Invalid input_h shape: [%lld,%lld,%lld] (first dimension must be num_layers * %lld)",
                             (long long)vg_tensor_dim(h, 0), (long long)vg_tensor_dim(h, 1),
                             (long long)vg_tensor_dim(h, 2), (long long)m->D);
    m->L = vg_tensor_dim(h, 0) / m->D;
    if (vg_tensor_dim(h, 1) != *B)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Invalid input_h shape: batch size %lld, input's is %lld",
                             (long long)vg_tensor_dim(h, 1), (long long)*B);
    if (is_lstm(m) && !has_dims3(c, m->L * m->D, *B, m->H))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Invalid input_c shape: it must equal input_h's [%lld,%lld,%lld]",
                             (long long)(m->L * m->D), (long long)*B, (long long)m->H);
    if (m->H <= 0 || m->I <= 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "RNN num_units (%lld) and input_size (%lld) must be positive",
                             (long long)m->H, (long long)m->I);
    if (check_input_mode(op, m, st)) return st->code;
    if (vg_tensor_ndims(p) != 1 || vg_tensor_dim(p, 0) != params_size(m))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "params size mismatch: %lld vs. %lld",
                             (long long)vg_tensor_num_elements(p), (long long)params_size(m));
    if (m->dropout > 0.0f && m->training && m->L > 1 && !strcmp(vg_op_type(op), "CudnnRNN"))
        return vg_status_set(st, VG_UNIMPLEMENTED,
                             "%s: dropout %g between layers in training is not implemented on the CPU (cuDNN's "
                             "dropout stream cannot be reproduced); use dropout 0 or is_training false",
                             vg_op_type(op), (double)m->dropout);
    return VG_OK;
}

static const float *fin(vg__kctx *ctx, int i) { return vg_tensor_data(vg__kctx_input(ctx, i)); }

static inline float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

/* reserve space: Y_l [T, B, D*H] for each layer, then per pseudo-layer the gate
 * activations [T, B, 4H] (i, f, c', o) and the cell states [T, B, H]. */
static int64_t reserve_size(const model *m, int64_t T, int64_t B) {
    return m->L * T * B * m->D * m->H + m->L * m->D * T * B * 5 * m->H;
}
static float *rs_y(float *rs, const model *m, int64_t T, int64_t B, int64_t l) { return rs + l * T * B * m->D * m->H; }
static float *rs_gates(float *rs, const model *m, int64_t T, int64_t B, int64_t p) {
    return rs + m->L * T * B * m->D * m->H + p * T * B * 5 * m->H;
}

/* ------------------------------------------------------------------------ */
/* CudnnRNN */

/* One LSTM step for rows of pseudo-layer output: g holds x W^T + h R^T (pre-activations,
 * i f c' o), overwritten by the activations. */
static void lstm_step(int64_t B, int64_t H, int64_t DH, int64_t d, float *g, const float *bsum, const float *cprev,
                      float *ct, float *y, float *hcur) {
    int64_t G = 4 * H;
    for (int64_t b = 0; b < B; b++) {
        float *gr = g + b * G;
        for (int64_t k = 0; k < H; k++) {
            float i = sigm(gr[k] + bsum[k]), f = sigm(gr[H + k] + bsum[H + k]);
            float cc = tanhf(gr[2 * H + k] + bsum[2 * H + k]), o = sigm(gr[3 * H + k] + bsum[3 * H + k]);
            float cv = f * cprev[b * H + k] + i * cc, hv = o * tanhf(cv);
            gr[k] = i, gr[H + k] = f, gr[2 * H + k] = cc, gr[3 * H + k] = o;
            ct[b * H + k] = cv;
            y[b * DH + d * H + k] = hv;
            hcur[b * H + k] = hv;
        }
    }
}

/* One GRU step (cuDNN's: h' = tanh(W_h x + bW_h + r * (R_h h + bR_h))): g holds x W^T
 * (r u h'), gh h R^T; g gets the activations r, u, h', ghn R_h h + bR_h. */
static void gru_step(int64_t B, int64_t H, int64_t DH, int64_t d, float *g, const float *gh, const float *bw,
                     const float *br, float *ghn, float *y, float *hcur) {
    int64_t G = 3 * H;
    for (int64_t b = 0; b < B; b++) {
        float *gr = g + b * G;
        const float *hr = gh + b * G;
        for (int64_t k = 0; k < H; k++) {
            float r = sigm(gr[k] + bw[k] + hr[k] + br[k]), u = sigm(gr[H + k] + bw[H + k] + hr[H + k] + br[H + k]);
            float hn = hr[2 * H + k] + br[2 * H + k];
            float n = tanhf(gr[2 * H + k] + bw[2 * H + k] + r * hn);
            float hv = (1.0f - u) * n + u * hcur[b * H + k];
            gr[k] = r, gr[H + k] = u, gr[2 * H + k] = n;
            ghn[b * H + k] = hn;
            y[b * DH + d * H + k] = hv;
            hcur[b * H + k] = hv;
        }
    }
}

static vg_code kernel_rnn(vg__kctx *ctx) {
    model m;
    int64_t T, B;
    vg_code c = check_forward(ctx, &m, &T, &B);
    if (c != VG_OK) return c;
    bool lstm = is_lstm(&m);
    int64_t H = m.H, D = m.D, G = m.NG * H, BH = B * H, DH = D * H;
    int64_t yd[3] = {T, B, DH}, hd[3] = {m.L * D, B, H}, rd[1] = {reserve_size(&m, T, B)};
    vg_tensor *yt, *hnt, *cnt, *rst;
    if ((c = vg__kctx_alloc_output(ctx, 0, VG_FLOAT, yd, 3, &yt)) || (c = vg__kctx_alloc_output(ctx, 1, VG_FLOAT, hd, 3, &hnt)) ||
        (c = vg__kctx_alloc_output(ctx, 2, VG_FLOAT, hd, lstm ? 3 : 0, &cnt)) ||
        (c = vg__kctx_alloc_output(ctx, 3, VG_FLOAT, rd, 1, &rst)))
        return c;
    float *y = vg_tensor_data(yt), *hn = vg_tensor_data(hnt), *cn = vg_tensor_data(cnt), *rs = vg_tensor_data(rst);
    if (!lstm) cn[0] = 0.0f;
    const float *x = fin(ctx, 0), *h0 = fin(ctx, 1), *c0 = lstm ? fin(ctx, 2) : NULL, *params = fin(ctx, 3);
    float *tmp = vg_malloc(sizeof(float) * (size_t)(BH + G + B * G + 1));
    if (!tmp) return vg_status_set(vg__kctx_status(ctx), VG_RESOURCE_EXHAUSTED, "CudnnRNN: out of memory");
    float *hcur = tmp, *bsum = tmp + BH, *gh = bsum + G;
    for (int64_t l = 0; l < m.L; l++) {
        int64_t in = in_size(&m, l);
        const float *X = l == 0 ? x : rs_y(rs, &m, T, B, l - 1);
        float *Y = rs_y(rs, &m, T, B, l);
        for (int64_t d = 0; d < D; d++) {
            int64_t p = l * D + d;
            const float *W = params + w_offset(&m, p), *R = W + G * in, *bw = params + b_offset(&m, p), *br = bw + G;
            float *gates = rs_gates(rs, &m, T, B, p), *C = gates + T * B * G;
            for (int64_t k = 0; k < G; k++) bsum[k] = bw[k] + br[k];
            /* every step's input projection at once: [T*B, in] x W^T */
            if (T * B > 0) vg__nn_gemm(ctx, VG_FLOAT, false, true, T * B, G, in, X, in, W, in, 0.0, gates);
            memcpy(hcur, h0 + p * BH, sizeof(float) * (size_t)BH);
            const float *cprev = lstm ? c0 + p * BH : NULL;
            for (int64_t s = 0; s < T; s++) {
                int64_t t = d ? T - 1 - s : s;
                float *g = gates + t * B * G, *ct = C + t * BH;
                if (lstm) {
                    vg__nn_gemm(ctx, VG_FLOAT, false, true, B, G, H, hcur, H, R, H, 1.0, g);
                    lstm_step(B, H, DH, d, g, bsum, cprev, ct, Y + t * B * DH, hcur);
                    cprev = ct;
                } else if (m.NG == 3) {
                    vg__nn_gemm(ctx, VG_FLOAT, false, true, B, G, H, hcur, H, R, H, 0.0, gh);
                    gru_step(B, H, DH, d, g, gh, bw, br, ct, Y + t * B * DH, hcur);
                } else { /* h = tanh / relu(W x + R h + bW + bR); g keeps h */
                    vg__nn_gemm(ctx, VG_FLOAT, false, true, B, G, H, hcur, H, R, H, 1.0, g);
                    for (int64_t b = 0; b < B; b++)
                        for (int64_t k = 0; k < H; k++) {
                            float v = g[b * H + k] + bsum[k];
                            float hv = m.relu ? (v > 0.0f ? v : 0.0f) : tanhf(v);
                            g[b * H + k] = hv;
                            Y[(t * B + b) * DH + d * H + k] = hv;
                            hcur[b * H + k] = hv;
                        }
                }
            }
            memcpy(hn + p * BH, hcur, sizeof(float) * (size_t)BH);
            if (lstm) memcpy(cn + p * BH, cprev, sizeof(float) * (size_t)BH);
        }
    }
    memcpy(y, rs_y(rs, &m, T, B, m.L - 1), sizeof(float) * (size_t)(T * B * DH));
    vg_free(tmp);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* CudnnRNNBackprop */

static vg_code kernel_backprop(vg__kctx *ctx) {
    model m;
    int64_t T, B;
    vg_code c = check_forward(ctx, &m, &T, &B);
    if (c != VG_OK) return c;
    vg_status *st = vg__kctx_status(ctx);
    bool lstm = is_lstm(&m);
    int64_t H = m.H, D = m.D, G = m.NG * H, BH = B * H, DH = D * H, I = m.I;
    static const char *const names[7] = {"output", "output_h", "output_c", "output_backprop", "output_h_backprop",
                                         "output_c_backprop", "reserve_space"};
    for (int k = 4; k < 11; k++) {
        const vg_tensor *t = vg__kctx_input(ctx, k);
        bool ok = vg_tensor_dtype(t) == VG_FLOAT;
        if (k == 4 || k == 7) ok = ok && has_dims3(t, T, B, DH);
        else if (k == 6 || k == 9) ok = ok && (!lstm || has_dims3(t, m.L * D, B, H));
        else if (k < 10) ok = ok && has_dims3(t, m.L * D, B, H);
        else ok = ok && vg_tensor_ndims(t) == 1 && vg_tensor_dim(t, 0) == reserve_size(&m, T, B);
        if (!ok)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "CudnnRNNBackprop: %s does not match the forward pass (dtype or shape; a "
                                 "reserve_space must come from a CudnnRNN of the same configuration)",
                                 names[k - 4]);
    }
    const vg_tensor *cin = vg__kctx_input(ctx, 2);
    int64_t xd[3] = {T, B, I}, hd[3] = {m.L * D, B, H}, pd[1] = {params_size(&m)}, cd[VG_MAX_DIMS];
    for (int i = 0; !lstm && i < vg_tensor_ndims(cin); i++) cd[i] = vg_tensor_dim(cin, i);
    vg_tensor *dxt, *dht, *dct, *dpt;
    if ((c = vg__kctx_alloc_output(ctx, 0, VG_FLOAT, xd, 3, &dxt)) || (c = vg__kctx_alloc_output(ctx, 1, VG_FLOAT, hd, 3, &dht)) ||
        (c = vg__kctx_alloc_output(ctx, 2, VG_FLOAT, lstm ? hd : cd, lstm ? 3 : vg_tensor_ndims(cin), &dct)) ||
        (c = vg__kctx_alloc_output(ctx, 3, VG_FLOAT, pd, 1, &dpt)))
        return c;
    float *dx = vg_tensor_data(dxt), *dh0 = vg_tensor_data(dht), *dc0 = vg_tensor_data(dct), *dp = vg_tensor_data(dpt);
    if (!lstm) memset(dc0, 0, sizeof(float) * (size_t)vg_tensor_num_elements(dct));
    const float *x = fin(ctx, 0), *h0 = fin(ctx, 1), *c0 = lstm ? fin(ctx, 2) : NULL, *params = fin(ctx, 3),
                *dy = fin(ctx, 7), *dhn = fin(ctx, 8), *dcn = lstm ? fin(ctx, 9) : NULL;
    float *rs = (float *)fin(ctx, 10);
    int64_t TB = T * B;
    size_t nbuf = (size_t)(2 * TB * DH + 2 * TB * G + TB * H + 2 * BH + 1);
    float *buf = vg_malloc(sizeof(float) * nbuf);
    if (!buf) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "CudnnRNNBackprop: out of memory");
    float *dY = buf, *dXl = dY + TB * DH, *dG = dXl + TB * DH, *dGh = dG + TB * G, *Hp = dGh + TB * G,
          *dh = Hp + TB * H, *dc = dh + BH;
    if (m.NG != 3) dGh = dG; /* the same pre-activations take x W^T and h R^T */
    memset(dp, 0, sizeof(float) * (size_t)pd[0]);
    memcpy(dY, dy, sizeof(float) * (size_t)(TB * DH));
    for (int64_t l = m.L - 1; l >= 0; l--) {
        int64_t in = in_size(&m, l);
        const float *X = l == 0 ? x : rs_y(rs, &m, T, B, l - 1), *Y = rs_y(rs, &m, T, B, l);
        float *dX = l == 0 ? dx : dXl;
        memset(dX, 0, sizeof(float) * (size_t)(TB * in));
        for (int64_t d = 0; d < D; d++) {
            int64_t p = l * D + d;
            const float *W = params + w_offset(&m, p), *R = W + G * in;
            const float *gates = rs_gates(rs, &m, T, B, p), *C = gates + TB * G;
            memcpy(dh, dhn + p * BH, sizeof(float) * (size_t)BH);
            if (lstm) memcpy(dc, dcn + p * BH, sizeof(float) * (size_t)BH);
            for (int64_t s = T - 1; s >= 0; s--) {
                int64_t t = d ? T - 1 - s : s, tp = d ? t + 1 : t - 1;
                const float *cp = lstm ? (s ? C + tp * BH : c0 + p * BH) : NULL;
                for (int64_t b = 0; b < B; b++) {
                    const float *gr = gates + (t * B + b) * G;
                    float *dg = dG + (t * B + b) * G, *dgh = dGh + (t * B + b) * G;
                    for (int64_t k = 0; k < H; k++) {
                        float hp = s ? Y[(tp * B + b) * DH + d * H + k] : h0[p * BH + b * H + k];
                        float dhv = dh[b * H + k] + dY[(t * B + b) * DH + d * H + k];
                        Hp[t * BH + b * H + k] = hp;
                        if (lstm) {
                            float i = gr[k], f = gr[H + k], cc = gr[2 * H + k], o = gr[3 * H + k];
                            float tc = tanhf(C[t * BH + b * H + k]);
                            float dcv = dc[b * H + k] + dhv * o * (1.0f - tc * tc);
                            dg[k] = dcv * cc * i * (1.0f - i);
                            dg[H + k] = dcv * cp[b * H + k] * f * (1.0f - f);
                            dg[2 * H + k] = dcv * i * (1.0f - cc * cc);
                            dg[3 * H + k] = dhv * tc * o * (1.0f - o);
                            dc[b * H + k] = dcv * f;
                        } else if (m.NG == 1) {
                            float hv = gr[k];
                            dg[k] = m.relu ? (hv > 0.0f ? dhv : 0.0f) : dhv * (1.0f - hv * hv);
                        } else {
                            float r = gr[k], u = gr[H + k], n = gr[2 * H + k], ghn = C[t * BH + b * H + k];
                            float dn = dhv * (1.0f - u) * (1.0f - n * n);
                            float dr = dn * ghn * r * (1.0f - r);
                            float du = dhv * (hp - n) * u * (1.0f - u);
                            dg[k] = dgh[k] = dr;
                            dg[H + k] = dgh[H + k] = du;
                            dg[2 * H + k] = dn;
                            dgh[2 * H + k] = dn * r;
                            dc[b * H + k] = dhv * u; /* h_prev's direct part */
                        }
                    }
                }
                /* dh = (GRU: u * dh +) dGh_t R */
                vg__nn_gemm(ctx, VG_FLOAT, false, false, B, H, G, dGh + t * B * G, G, R, H, 0.0, dh);
                if (m.NG == 3)
                    for (int64_t i = 0; i < BH; i++) dh[i] += dc[i];
            }
            memcpy(dh0 + p * BH, dh, sizeof(float) * (size_t)BH);
            if (lstm) memcpy(dc0 + p * BH, dc, sizeof(float) * (size_t)BH);
            if (TB == 0) continue;
            float *dW = dp + w_offset(&m, p), *dR = dW + G * in, *dbw = dp + b_offset(&m, p), *dbr = dbw + G;
            vg__nn_gemm(ctx, VG_FLOAT, true, false, G, in, TB, dG, G, X, in, 0.0, dW);
            vg__nn_gemm(ctx, VG_FLOAT, true, false, G, H, TB, dGh, G, Hp, H, 0.0, dR);
            for (int64_t r = 0; r < TB; r++)
                for (int64_t k = 0; k < G; k++) dbw[k] += dG[r * G + k], dbr[k] += dGh[r * G + k];
            vg__nn_gemm(ctx, VG_FLOAT, false, false, TB, in, G, dG, G, W, in, 1.0, dX);
        }
        if (l > 0) memcpy(dY, dXl, sizeof(float) * (size_t)(TB * DH));
    }
    vg_free(buf);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* CudnnRNNParamsSize, CudnnRNNParamsToCanonical, CudnnRNNCanonicalToParams */

static vg_code read_sizes(vg__kctx *ctx, model *m) {
    vg_status *st = vg__kctx_status(ctx);
    static const char *const names[3] = {"num_layers", "num_units", "input_size"};
    int64_t v[3];
    for (int k = 0; k < 3; k++) {
        const vg_tensor *t = vg__kctx_input(ctx, k);
        if (vg_tensor_dtype(t) != VG_INT32 || vg_tensor_ndims(t) != 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s must be an int32 scalar", names[k]);
        v[k] = *(const int32_t *)vg_tensor_data(t);
        if (v[k] <= 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "%s must be positive, got %lld", names[k], (long long)v[k]);
    }
    m->L = v[0], m->H = v[1], m->I = v[2];
    return check_input_mode(vg__kctx_op(ctx), m, st);
}

static vg_code kernel_params_size(vg__kctx *ctx) {
    model m;
    vg_status *st = vg__kctx_status(ctx);
    if (parse_attrs(vg__kctx_op(ctx), &m, st) || read_sizes(ctx, &m)) return st->code;
    vg_dtype S = VG_INT32;
    vg_op_attr_type_(vg__kctx_op(ctx), "S", &S);
    int64_t one[1] = {1}, n = params_size(&m);
    vg_tensor *t;
    vg_code c = vg__kctx_alloc_output(ctx, 0, S, one, 1, &t);
    if (c != VG_OK) return c;
    if (S == VG_INT64) *(int64_t *)vg_tensor_data(t) = n;
    else {
        if (n > INT32_MAX) return vg_status_set(st, VG_INVALID_ARGUMENT, "params size %lld does not fit in int32", (long long)n);
        *(int32_t *)vg_tensor_data(t) = (int32_t)n;
    }
    return VG_OK;
}

/* rows x cols of canonical weight k (0..num_params) */
static void weight_dims(const model *m, int64_t k, int64_t *rows, int64_t *cols) {
    *rows = m->H;
    *cols = k % (2 * m->NG) < m->NG ? in_size(m, k / (2 * m->NG) / m->D) : m->H;
}
/* offset of canonical weight k in the opaque buffer */
static int64_t weight_offset(const model *m, int64_t k) {
    int64_t NW = 2 * m->NG, p = k / NW, j = k % NW, in = in_size(m, p / m->D), off = w_offset(m, p);
    return j < m->NG ? off + j * m->H * in : off + m->NG * m->H * in + (j - m->NG) * m->H * m->H;
}

static vg_code kernel_to_canonical(vg__kctx *ctx) {
    model m;
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    if (parse_attrs(op, &m, st) || read_sizes(ctx, &m)) return st->code;
    int64_t n = num_params_attr(op, -1);
    if (n != m.L * m.D * 2 * m.NG)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "num_params (%lld) must be num_layers * dirs * %lld = %lld",
                             (long long)n, (long long)(2 * m.NG), (long long)(m.L * m.D * 2 * m.NG));
    const vg_tensor *p = vg__kctx_input(ctx, 3);
    if (vg_tensor_dtype(p) != VG_FLOAT || vg_tensor_ndims(p) != 1 || vg_tensor_dim(p, 0) != params_size(&m))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "params size mismatch: %lld vs. %lld (or not float32)",
                             (long long)vg_tensor_num_elements(p), (long long)params_size(&m));
    const float *src = vg_tensor_data(p);
    for (int64_t k = 0; k < n; k++) {
        int64_t d[2];
        weight_dims(&m, k, &d[0], &d[1]);
        vg_tensor *t;
        vg_code c = vg__kctx_alloc_output(ctx, (int)k, VG_FLOAT, d, 2, &t);
        if (c != VG_OK) return c;
        memcpy(vg_tensor_data(t), src + weight_offset(&m, k), sizeof(float) * (size_t)(d[0] * d[1]));
        if ((c = vg__kctx_alloc_output(ctx, (int)(n + k), VG_FLOAT, d, 1, &t)) != VG_OK) return c;
        memcpy(vg_tensor_data(t), src + b_offset(&m, k / (2 * m.NG)) + (k % (2 * m.NG)) * m.H, sizeof(float) * (size_t)m.H);
    }
    return VG_OK;
}

static vg_code kernel_to_params(vg__kctx *ctx) {
    model m;
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    if (parse_attrs(op, &m, st) || read_sizes(ctx, &m)) return st->code;
    int64_t n = (vg__kctx_num_inputs(ctx) - 3) / 2;
    if (n != m.L * m.D * 2 * m.NG)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "num_params (%lld) must be num_layers * dirs * %lld = %lld",
                             (long long)n, (long long)(2 * m.NG), (long long)(m.L * m.D * 2 * m.NG));
    int64_t d[1] = {params_size(&m)};
    vg_tensor *t;
    vg_code c = vg__kctx_alloc_output(ctx, 0, VG_FLOAT, d, 1, &t);
    if (c != VG_OK) return c;
    float *dst = vg_tensor_data(t);
    int64_t NW = 2 * m.NG;
    for (int64_t k = 0; k < 2 * n; k++) {
        const vg_tensor *w = vg__kctx_input(ctx, (int)(3 + k));
        int64_t rows = m.H, cols = 1;
        if (k < n) weight_dims(&m, k, &rows, &cols);
        if (vg_tensor_dtype(w) != VG_FLOAT || vg_tensor_num_elements(w) != rows * cols)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "CudnnRNNCanonicalToParams: %s %lld (layer %lld%s, %s) must be float32 with %lld "
                                 "elements ([%lld, %lld]), got %lld",
                                 k < n ? "weights" : "biases", (long long)(k % n), (long long)((k % n) / NW / m.D),
                                 m.D == 2 ? ((k % n) / NW % 2 ? " backward" : " forward") : "",
                                 (k % n) % NW < m.NG ? "input" : "recurrent", (long long)(rows * cols), (long long)rows,
                                 (long long)cols, (long long)vg_tensor_num_elements(w));
        float *o = k < n ? dst + weight_offset(&m, k) : dst + b_offset(&m, (k - n) / NW) + ((k - n) % NW) * m.H;
        memcpy(o, vg_tensor_data(w), sizeof(float) * (size_t)(rows * cols));
    }
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* gradient (cudnn_rnn_grad.py _cudnn_rnn_backward) */

static void copy_attr_s(vg_op_builder *b, const vg_op *op, const char *name, const char *dflt) {
    char buf[64];
    const char *v = attr_s(op, name, dflt, buf, sizeof buf);
    vg_op_builder_set_attr_string(b, name, v, strlen(v));
}

static vg_code grad_rnn(vg_graph *g, vg_op *op, const vg_output *dy, vg_output *dx) {
    vg_op_builder *b = vg_op_builder_new(g, "CudnnRNNBackprop", "CudnnRNNBackprop");
    if (!b) return vg_graph_status(g, NULL);
    for (int k = 0; k < 4; k++) vg_op_builder_add_input(b, vg_op_input(op, k));
    for (int k = 0; k < 3; k++) vg_op_builder_add_input(b, vg_out(op, k));
    for (int k = 0; k < 3; k++) vg_op_builder_add_input(b, dy[k]);
    vg_op_builder_add_input(b, vg_out(op, 3));
    vg_op_builder_set_attr_type(b, "T", VG_FLOAT);
    copy_attr_s(b, op, "rnn_mode", "lstm");
    copy_attr_s(b, op, "input_mode", "linear_input");
    copy_attr_s(b, op, "direction", "unidirectional");
    float f;
    int64_t s;
    vg_op_builder_set_attr_float(b, "dropout", vg_op_attr_float(op, "dropout", &f) ? f : 0.0f);
    vg_op_builder_set_attr_int(b, "seed", vg_op_attr_int(op, "seed", &s) ? s : 0);
    vg_op_builder_set_attr_int(b, "seed2", vg_op_attr_int(op, "seed2", &s) ? s : 0);
    vg_op *gr = vg_op_builder_finish(b);
    if (!gr) return vg_graph_status(g, NULL);
    for (int k = 0; k < 4; k++) dx[k] = vg_out(gr, k);
    return VG_OK;
}

const vg__op_def vg__ops_cudnn_rnn[] = {
    {"CudnnRNN", 4, 4, VG__OP_STATEFUL, 0, shape_rnn, kernel_rnn, grad_rnn},
    {"CudnnRNNBackprop", 11, 11, VG__OP_STATEFUL, 0, shape_backprop, kernel_backprop, NULL},
    {"CudnnRNNParamsSize", 3, 3, 0, 0, shape_params_size, kernel_params_size, NULL},
    {"CudnnRNNParamsToCanonical", 4, 4, 0, 0, shape_to_canonical, kernel_to_canonical, NULL},
    {"CudnnRNNCanonicalToParams", 5, -1, 0, 0, shape_to_params, kernel_to_params, NULL},
    {0},
};
