/*
 * signal.c - the float32 part of tf.signal (TF 1.15 tensorflow/python/ops/signal/):
 * frame (shape_ops.py), overlap_and_add (reconstruction_ops.py), hann_window /
 * hamming_window (window_ops.py), linear_to_mel_weight_matrix (mel_ops.py).
 *
 * frame and overlap_and_add are built from public ops so their gradients come from
 * those ops: frame gathers the frames with one GatherV2 along the axis (TF gathers
 * "subframes" of gcd(frame_length, frame_step) samples and reshapes: the same values),
 * pad_end pads with Pad (plus Cast(position >= length) * pad_value for a non-zero
 * pad_value); overlap_and_add is TF 1.15's Pad / Reshape / Transpose / Slice / Sum
 * construction. Sizes known at build time become constants (so shapes are inferred);
 * unknown ones are computed in the graph from Shape (the iv helpers). The windows and
 * the mel matrix have no tensor inputs: they are computed here in the requested
 * dtype, rounding after each operation as TF's ops would, and emitted as Consts (TF's
 * Grappler folds its graph to the same single Const).
 */
#include "vigil/audio.h"
#include "vigil/ops.h"
#include "vigil/ops_ext.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const vg_output k_none = {NULL, 0};

static bool ok(vg_graph *g, vg_output x) { return g && x.op && vg_graph_status(g, NULL) == VG_OK; }

/* ---- integers known at build time or computed in the graph ----------------------- */

/* A scalar int: v when known at build time (t.op == NULL), else the [1] int32 tensor t. */
typedef struct iv {
    int64_t v;
    vg_output t;
} iv;

static iv iv_c(int64_t v) { return (iv){v, {NULL, 0}}; }
static bool iv_known(iv a) { return a.t.op == NULL; }
static vg_output iv_t(vg_graph *g, iv a) {
    if (!iv_known(a)) return a.t;
    int32_t v = (int32_t)a.v;
    return vg_const_i32_vec(g, &v, 1, "Const");
}

enum { IV_ADD, IV_SUB, IV_MUL, IV_FDIV, IV_MAX };

static int64_t floordiv64(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static iv iv_op(vg_graph *g, int op, iv a, iv b) {
    if (iv_known(a) && iv_known(b)) {
        switch (op) {
        case IV_ADD: return iv_c(a.v + b.v);
        case IV_SUB: return iv_c(a.v - b.v);
        case IV_MUL: return iv_c(a.v * b.v);
        case IV_FDIV: return iv_c(floordiv64(a.v, b.v));
        default: return iv_c(a.v > b.v ? a.v : b.v);
        }
    }
    vg_output x = iv_t(g, a), y = iv_t(g, b), r;
    switch (op) {
    case IV_ADD: r = vg_add(g, x, y, "add"); break;
    case IV_SUB: r = vg_sub(g, x, y, "sub"); break;
    case IV_MUL: r = vg_mul(g, x, y, "mul"); break;
    case IV_FDIV: r = vg_floor_div(g, x, y, "floordiv"); break;
    default: r = vg_maximum(g, x, y, "Maximum"); break;
    }
    return (iv){0, r};
}

/* Dimension i of x: its static size, else Shape(x)[i:i+1]. */
static iv iv_dim(vg_graph *g, vg_output x, int i) {
    vg_shape s = vg_output_shape(x);
    if (s.dims[i] >= 0) return iv_c(s.dims[i]);
    int64_t b = i, n = 1;
    return (iv){0, vg_slice_c(g, vg_shape_op(g, x, VG_INT32, "Shape"), &b, &n, 1, "strided_slice")};
}

/* A 1-D int32 shape: x's dimensions [0, nouter) followed by inner[0..ninner). */
static vg_output shape_vec(vg_graph *g, vg_output x, int nouter, const iv *inner, int ninner, const char *name) {
    vg_shape s = vg_output_shape(x);
    bool outer_known = true;
    for (int i = 0; i < nouter; i++) outer_known &= s.dims[i] >= 0;
    bool inner_known = true;
    for (int i = 0; i < ninner; i++) inner_known &= iv_known(inner[i]);
    if (outer_known && inner_known) {
        int32_t v[VG_MAX_DIMS + 4];
        for (int i = 0; i < nouter; i++) v[i] = (int32_t)s.dims[i];
        for (int i = 0; i < ninner; i++) v[nouter + i] = (int32_t)inner[i].v;
        return vg_const_i32_vec(g, v, nouter + ninner, name);
    }
    vg_output parts[VG_MAX_DIMS + 5];
    int np = 0;
    if (nouter > 0) {
        int64_t b = 0, n = nouter;
        parts[np++] = vg_slice_c(g, vg_shape_op(g, x, VG_INT32, "Shape"), &b, &n, 1, "outer_dimensions");
    }
    for (int i = 0; i < ninner; i++) parts[np++] = iv_t(g, inner[i]);
    return vg_concat_c(g, parts, np, 0, name);
}

/* A [rank, 2] int32 paddings tensor, zero except row `axis` = {lo, hi}. */
static vg_output paddings(vg_graph *g, int rank, int axis, iv lo, iv hi) {
    iv v[2 * (VG_MAX_DIMS + 1)];
    for (int i = 0; i < 2 * rank; i++) v[i] = iv_c(0);
    v[2 * axis] = lo, v[2 * axis + 1] = hi;
    bool known = true;
    for (int i = 0; i < 2 * rank; i++) known &= iv_known(v[i]);
    int64_t dims[2] = {rank, 2};
    if (known) {
        int32_t c[2 * (VG_MAX_DIMS + 1)];
        for (int i = 0; i < 2 * rank; i++) c[i] = (int32_t)v[i].v;
        return vg_const_array(g, VG_INT32, dims, 2, c, "paddings");
    }
    vg_output parts[2 * (VG_MAX_DIMS + 1)];
    for (int i = 0; i < 2 * rank; i++) parts[i] = iv_t(g, v[i]);
    return vg_reshape_c(g, vg_concat_c(g, parts, 2 * rank, 0, "concat"), dims, 2, "paddings");
}

static vg_output scalar_of(vg_graph *g, iv a) {
    if (iv_known(a)) return vg_const_i32(g, (int32_t)a.v, "Const");
    return vg_reshape_c(g, a.t, NULL, 0, "Reshape");
}

/* ---- frame ----------------------------------------------------------------------- */

vg_output vg_signal_frame(vg_graph *g, vg_output signal, int64_t frame_length, int64_t frame_step, bool pad_end,
                          double pad_value, int axis, const char *name) {
    if (!ok(g, signal)) return k_none;
    vg_shape s = vg_output_shape(signal);
    if (s.ndims < 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "frame: signal must have a known rank of at least 1, got %d", s.ndims);
        return k_none;
    }
    if (s.ndims > VG_MAX_DIMS - 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "frame: signal rank %d leaves no room for the frames dimension",
                           s.ndims);
        return k_none;
    }
    int a = axis < 0 ? axis + s.ndims : axis;
    if (a < 0 || a >= s.ndims) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "frame: axis %d is out of range for a signal of rank %d", axis, s.ndims);
        return k_none;
    }
    if (frame_length < 0 || frame_step <= 0 || frame_length > INT32_MAX || frame_step > INT32_MAX) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "frame: frame_length (%lld) must be non-negative and frame_step (%lld) positive",
                           (long long)frame_length, (long long)frame_step);
        return k_none;
    }
    vg_dtype dt = vg_output_dtype(signal);
    vg_graph_push_scope(g, name ? name : "frame");
    iv len = iv_dim(g, signal, a), fl = iv_c(frame_length), step = iv_c(frame_step), nf;
    vg_output x = signal;
    if (pad_end) {
        /* frames = ceil(len / step); pad the end to fl + step * (frames - 1) */
        nf = iv_op(g, IV_FDIV, iv_op(g, IV_ADD, len, iv_c(frame_step - 1)), step);
        iv need = iv_op(g, IV_ADD, fl, iv_op(g, IV_MUL, step, iv_op(g, IV_SUB, nf, iv_c(1))));
        iv pad = iv_op(g, IV_MAX, iv_c(0), iv_op(g, IV_SUB, need, len));
        if (!iv_known(pad) || pad.v > 0) {
            x = vg_pad(g, x, paddings(g, s.ndims, a, iv_c(0), pad), "Pad");
            if (pad_value != 0.0) {
                /* pad_value where the position along axis is >= len, broadcast over the
                 * inner axes: Cast(range(len + pad) >= len) * pad_value */
                iv total = iv_op(g, IV_ADD, len, pad);
                vg_output pos = vg_range(g, vg_const_i32(g, 0, "start"), scalar_of(g, total), vg_const_i32(g, 1, "delta"),
                                         "range");
                vg_output m = vg_cast(g, vg_greater_equal(g, pos, scalar_of(g, len), "GreaterEqual"), dt, "Cast");
                int64_t dims[VG_MAX_DIMS];
                int nd = s.ndims - a;
                dims[0] = -1;
                for (int i = 1; i < nd; i++) dims[i] = 1;
                m = vg_reshape_c(g, m, dims, nd, "Reshape_1");
                vg_output pv = vg_const_values(g, dt, &pad_value, 1, NULL, 0, NULL, 0, false, "pad_value");
                x = vg_add(g, x, vg_mul(g, m, pv, "mul_1"), "add_1");
            }
        }
    } else {
        /* frames = max(0, 1 + (len - fl) // step) */
        nf = iv_op(g, IV_MAX, iv_c(0), iv_op(g, IV_ADD, iv_c(1), iv_op(g, IV_FDIV, iv_op(g, IV_SUB, len, fl), step)));
    }
    vg_output out = k_none;
    if (iv_known(nf)) {
        int64_t n = nf.v * frame_length;
        if (nf.v > 0 && n / nf.v != frame_length) n = -1;
        int32_t *idx = n >= 0 && n <= INT32_MAX ? malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t)) : NULL;
        if (idx) {
            for (int64_t f = 0; f < nf.v; f++)
                for (int64_t j = 0; j < frame_length; j++) idx[f * frame_length + j] = (int32_t)(f * frame_step + j);
            int64_t idims[2] = {nf.v, frame_length};
            out = vg_gather(g, x, vg_const_array(g, VG_INT32, idims, 2, idx, "indices"), a, "frames");
            free(idx);
        } else {
            vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "frame: %lld frames of %lld samples are too many",
                               (long long)nf.v, (long long)frame_length);
        }
    } else {
        /* indices[f, j] = f * step + j */
        vg_output fr = vg_range(g, vg_const_i32(g, 0, "start_1"), scalar_of(g, nf), vg_const_i32(g, 1, "delta_1"), "range_1");
        fr = vg_reshape_c(g, vg_mul(g, fr, vg_const_i32(g, (int32_t)frame_step, "frame_step"), "mul_2"), (const int64_t[]){-1, 1},
                          2, "frame_selector");
        vg_output sub = vg_reshape_c(g,
                                     vg_range(g, vg_const_i32(g, 0, "start_2"), vg_const_i32(g, (int32_t)frame_length, "limit"),
                                              vg_const_i32(g, 1, "delta_2"), "range_2"),
                                     (const int64_t[]){1, -1}, 2, "subframe_selector");
        out = vg_gather(g, x, vg_add(g, fr, sub, "selector"), a, "frames");
    }
    vg_graph_pop_scope(g);
    return out;
}

/* ---- overlap_and_add ------------------------------------------------------------- */

/* Slice(x, b, sz[0..n)): a constant size when every sz[i] is known at build time, else
 * the sizes concatenated in the graph (size_name) from a zero begin (begin_name). */
static vg_output slice_front(vg_graph *g, vg_output x, const int64_t *b, const iv *sz, int n, const char *begin_name,
                             const char *size_name, const char *name) {
    bool known = true;
    for (int i = 0; i < n; i++) known &= iv_known(sz[i]);
    if (known) {
        int64_t szc[VG_MAX_DIMS];
        for (int i = 0; i < n; i++) szc[i] = sz[i].v;
        return vg_slice_c(g, x, b, szc, n, name);
    }
    vg_output parts[VG_MAX_DIMS];
    for (int i = 0; i < n; i++) parts[i] = iv_t(g, sz[i]);
    vg_output bt = vg_const_array(g, VG_INT32, (const int64_t[]){n}, 1, (const int32_t[VG_MAX_DIMS]){0}, begin_name);
    return vg_slice(g, x, bt, vg_concat_c(g, parts, n, 0, size_name), name);
}

vg_output vg_signal_overlap_and_add(vg_graph *g, vg_output signal, int64_t frame_step, const char *name) {
    if (!ok(g, signal)) return k_none;
    vg_shape s = vg_output_shape(signal);
    if (s.ndims < 2) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "overlap_and_add: signal must have a known rank of at least 2, got %d",
                           s.ndims);
        return k_none;
    }
    if (frame_step <= 0 || frame_step > INT32_MAX) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "overlap_and_add: frame_step must be positive, got %lld",
                           (long long)frame_step);
        return k_none;
    }
    int outer = s.ndims - 2;
    vg_graph_push_scope(g, name ? name : "overlap_and_add");
    iv frames = iv_dim(g, signal, s.ndims - 2), fl = iv_dim(g, signal, s.ndims - 1), step = iv_c(frame_step);
    /* output_length = frame_length + frame_step * (frames - 1) */
    iv out_len = iv_op(g, IV_ADD, fl, iv_op(g, IV_MUL, step, iv_op(g, IV_SUB, frames, iv_c(1))));
    out_len = iv_op(g, IV_MAX, iv_c(0), out_len); /* (0 frames of fewer than frame_step samples) */
    vg_output out;
    if (iv_known(fl) && fl.v == frame_step) { /* no overlap: a reshape */
        out = vg_reshape(g, signal, shape_vec(g, signal, outer, &out_len, 1, "concat"), "fast_path");
        vg_graph_pop_scope(g);
        return out;
    }
    /* segments = ceil(frame_length / frame_step) */
    iv seg = iv_op(g, IV_FDIV, iv_op(g, IV_ADD, fl, iv_c(frame_step - 1)), step);
    vg_output pads_frames = paddings(g, s.ndims, outer, iv_c(0), seg);
    vg_output x = vg_pad(g, signal, pads_frames, "Pad");
    x = vg_pad(g, x, paddings(g, s.ndims, outer + 1, iv_c(0), iv_op(g, IV_SUB, iv_op(g, IV_MUL, seg, step), fl)), "Pad_1");
    iv fs = iv_op(g, IV_ADD, frames, seg);                /* frames + segments */
    iv fs1 = iv_op(g, IV_SUB, fs, iv_c(1));               /* frames + segments - 1 */
    iv sh1[3] = {fs, seg, step};
    x = vg_reshape(g, x, shape_vec(g, signal, outer, sh1, 3, "concat_1"), "Reshape");
    int32_t perm[VG_MAX_DIMS];
    for (int i = 0; i < outer; i++) perm[i] = i;
    perm[outer] = outer + 1, perm[outer + 1] = outer, perm[outer + 2] = outer + 2;
    x = vg_transpose_c(g, x, perm, outer + 3, "transpose");
    iv sh2[2] = {iv_op(g, IV_MUL, fs, seg), step};
    x = vg_reshape(g, x, shape_vec(g, signal, outer, sh2, 2, "concat_2"), "Reshape_1");
    /* keep the first (frames + segments - 1) * segments rows */
    iv keep = iv_op(g, IV_MUL, fs1, seg);
    int64_t b[VG_MAX_DIMS] = {0};
    iv sz[VG_MAX_DIMS];
    for (int i = 0; i < outer; i++) sz[i] = iv_c(-1);
    sz[outer] = keep, sz[outer + 1] = iv_c(-1);
    x = slice_front(g, x, b, sz, outer + 2, "begin", "size", "strided_slice");
    iv sh3[3] = {seg, fs1, step};
    x = vg_reshape(g, x, shape_vec(g, signal, outer, sh3, 3, "concat_3"), "Reshape_2");
    int32_t ax = outer;
    x = vg_reduce_sum(g, x, &ax, 1, false, "Sum");
    iv sh4 = iv_op(g, IV_MUL, fs1, step);
    x = vg_reshape(g, x, shape_vec(g, signal, outer, &sh4, 1, "concat_4"), "Reshape_3");
    /* truncate to output_length */
    for (int i = 0; i < outer; i++) sz[i] = iv_c(-1);
    sz[outer] = out_len;
    out = slice_front(g, x, b, sz, outer + 1, "begin_1", "size_1", "strided_slice_1");
    vg_graph_pop_scope(g);
    return out;
}

/* ---- windows and the mel matrix: computed here in the dtype TF computes them in ---- */

/* x rounded to dt's precision (float32 or float64). */
static double rnd(vg_dtype dt, double x) { return dt == VG_FLOAT ? (double)(float)x : x; }

static bool float_dtype(vg_graph *g, vg_dtype dt, const char *fn) {
    if (dt == VG_FLOAT || dt == VG_DOUBLE) return true;
    vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: dtype must be a floating point type (float32 or float64). Got: %s", fn,
                       vg_dtype_name(dt));
    return false;
}

/* values (doubles already rounded to dt) as a Const of dtype dt. */
static vg_output const_of(vg_graph *g, vg_dtype dt, const double *v, const int64_t *dims, int nd, const char *name) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= dims[i];
    if (dt == VG_DOUBLE) return vg_const_array(g, VG_DOUBLE, dims, nd, v, name);
    float *f = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!f) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "%s: out of memory", name);
        return k_none;
    }
    for (int64_t i = 0; i < n; i++) f[i] = (float)v[i];
    vg_output o = vg_const_array(g, VG_FLOAT, dims, nd, f, name);
    free(f);
    return o;
}

/* window_ops.py _raised_cosine_window: a - b * cos(2 pi * n / N), each op in dt. */
static vg_output raised_cosine(vg_graph *g, int64_t n, bool periodic, double a, double b, vg_dtype dt, const char *scope) {
    if (!g || vg_graph_status(g, NULL) != VG_OK) return k_none;
    if (!float_dtype(g, dt, scope)) return k_none;
    if (n < 0 || n > (INT64_C(1) << 28)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: window_length must be in [0, 2^28], got %lld", scope, (long long)n);
        return k_none;
    }
    double *w = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    if (!w) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "%s: out of memory", scope);
        return k_none;
    }
    if (n == 1) {
        w[0] = 1.0;
    } else {
        int64_t even = 1 - n % 2;
        double N = rnd(dt, (double)(n + (periodic ? 1 : 0) * even - 1));
        double two_pi = rnd(dt, 2.0 * 3.14159265358979323846);
        a = rnd(dt, a), b = rnd(dt, b);
        for (int64_t i = 0; i < n; i++) {
            double arg = rnd(dt, rnd(dt, two_pi * (double)i) / N);
            w[i] = rnd(dt, a - rnd(dt, b * rnd(dt, cos(arg))));
        }
    }
    vg_graph_push_scope(g, scope);
    vg_output out = const_of(g, dt, w, &n, 1, "window");
    vg_graph_pop_scope(g);
    free(w);
    return out;
}

vg_output vg_signal_hann_window(vg_graph *g, int64_t window_length, bool periodic, vg_dtype dtype, const char *name) {
    return raised_cosine(g, window_length, periodic, 0.5, 0.5, dtype, name ? name : "hann_window");
}

vg_output vg_signal_hamming_window(vg_graph *g, int64_t window_length, bool periodic, vg_dtype dtype, const char *name) {
    return raised_cosine(g, window_length, periodic, 0.54, 0.46, dtype, name ? name : "hamming_window");
}

/* mel_ops.py _hertz_to_mel: 1127 * log(1 + hz / 700). */
static double hz_to_mel(vg_dtype dt, double hz) {
    return rnd(dt, 1127.0 * rnd(dt, log(rnd(dt, 1.0 + rnd(dt, hz / 700.0)))));
}

/* LinSpace as TF's kernel computes it: start + step * i, the last exactly stop. */
static void linspace(vg_dtype dt, double start, double stop, int64_t num, double *out) {
    if (num == 1) {
        out[0] = start;
        return;
    }
    double step = rnd(dt, rnd(dt, stop - start) / (double)(num - 1));
    for (int64_t i = 0; i < num - 1; i++) out[i] = rnd(dt, start + rnd(dt, step * (double)i));
    out[num - 1] = stop;
}

vg_output vg_signal_linear_to_mel_weight_matrix(vg_graph *g, int64_t num_mel_bins, int64_t num_spectrogram_bins,
                                                double sample_rate, double lower_edge_hertz, double upper_edge_hertz,
                                                vg_dtype dtype, const char *name) {
    if (!g || vg_graph_status(g, NULL) != VG_OK) return k_none;
    if (num_mel_bins <= 0)
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "num_mel_bins must be positive. Got: %lld", (long long)num_mel_bins),
               k_none;
    if (sample_rate <= 0.0)
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "sample_rate must be positive. Got: %g", sample_rate), k_none;
    if (lower_edge_hertz < 0.0)
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "lower_edge_hertz must be non-negative. Got: %g", lower_edge_hertz),
               k_none;
    if (lower_edge_hertz >= upper_edge_hertz)
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "lower_edge_hertz %.1f >= upper_edge_hertz %.1f", lower_edge_hertz,
                                  upper_edge_hertz),
               k_none;
    if (upper_edge_hertz > sample_rate / 2)
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                                  "upper_edge_hertz must not be larger than the Nyquist frequency (sample_rate / 2). Got: "
                                  "%g for sample_rate: %g",
                                  upper_edge_hertz, sample_rate),
               k_none;
    if (!float_dtype(g, dtype, "linear_to_mel_weight_matrix")) return k_none;
    if (num_spectrogram_bins <= 0)
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Requires num > 0: %lld", (long long)num_spectrogram_bins), k_none;
    if (num_spectrogram_bins > (1 << 24) || num_mel_bins > (1 << 16) || num_spectrogram_bins * num_mel_bins > (1 << 26))
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "linear_to_mel_weight_matrix: %lld x %lld is too large",
                                  (long long)num_spectrogram_bins, (long long)num_mel_bins),
               k_none;
    vg_dtype dt = dtype;
    int64_t nb = num_spectrogram_bins, nm = num_mel_bins;
    double *freq = malloc((size_t)nb * sizeof(double)), *edges = malloc((size_t)(nm + 2) * sizeof(double));
    double *w = calloc((size_t)(nb * nm), sizeof(double));
    vg_output out = k_none;
    if (!freq || !edges || !w) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "linear_to_mel_weight_matrix: out of memory");
        goto done;
    }
    double nyquist = rnd(dt, rnd(dt, sample_rate) / 2.0);
    linspace(dt, 0.0, nyquist, nb, freq);
    linspace(dt, hz_to_mel(dt, rnd(dt, lower_edge_hertz)), hz_to_mel(dt, rnd(dt, upper_edge_hertz)), nm + 2, edges);
    for (int64_t i = 1; i < nb; i++) { /* row 0, the DC bin, stays 0 (HTK) */
        double mel = hz_to_mel(dt, freq[i]);
        for (int64_t j = 0; j < nm; j++) {
            double lo = edges[j], c = edges[j + 1], hi = edges[j + 2];
            double ls = rnd(dt, rnd(dt, mel - lo) / rnd(dt, c - lo)), us = rnd(dt, rnd(dt, hi - mel) / rnd(dt, hi - c));
            double m = ls < us ? ls : us;
            w[i * nm + j] = m > 0.0 ? m : 0.0;
        }
    }
    vg_graph_push_scope(g, name ? name : "linear_to_mel_weight_matrix");
    int64_t dims[2] = {nb, nm};
    out = const_of(g, dt, w, dims, 2, "weights");
    vg_graph_pop_scope(g);
done:
    free(freq);
    free(edges);
    free(w);
    return out;
}

/* ---- stft, inverse_stft (spectral_ops.py), mfccs_from_log_mel_spectrograms ---------- */

vg_output vg_signal_hann_window_fn(vg_graph *g, int64_t length, vg_dtype dtype, const void *ctx) {
    (void)ctx;
    return vg_signal_hann_window(g, length, true, dtype, NULL);
}

vg_output vg_signal_hamming_window_fn(vg_graph *g, int64_t length, vg_dtype dtype, const void *ctx) {
    (void)ctx;
    return vg_signal_hamming_window(g, length, true, dtype, NULL);
}

/* inverse_stft_window_fn's inner function: forward / (the squared forward window summed
 * over the frame_step phases), TF's ops (Griffin-Lim equation 7). */
vg_output vg_signal_inverse_stft_window_fn(vg_graph *g, int64_t length, vg_dtype dtype, const void *ctx) {
    const vg_signal_inverse_window *w = ctx;
    if (!g || vg_graph_status(g, NULL) != VG_OK) return k_none;
    if (!w || w->frame_step <= 0 || w->frame_step > INT32_MAX || length < 0 || length > INT32_MAX) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "inverse_stft_window_fn: frame_step must be positive and the length "
                                                   "non-negative");
        return k_none;
    }
    vg_signal_window_fn fwd = w->forward ? w->forward : vg_signal_hann_window_fn;
    vg_graph_push_scope(g, "inverse_stft_window_fn");
    vg_output win = fwd(g, length, dtype, w->forward_ctx), out = k_none;
    if (ok(g, win)) {
        int64_t step = w->frame_step, overlaps = (length + step - 1) / step;
        vg_output denom = vg_square(g, win, "Square");
        int32_t pads[2] = {0, (int32_t)(overlaps * step - length)};
        denom = vg_pad(g, denom, vg_const_array(g, VG_INT32, (const int64_t[]){1, 2}, 2, pads, "Pad/paddings"), "Pad");
        denom = vg_reshape_c(g, denom, (const int64_t[]){overlaps, step}, 2, "Reshape");
        int32_t ax = 0;
        denom = vg_reduce_sum(g, denom, &ax, 1, true, "Sum");
        int32_t mult[2] = {(int32_t)overlaps, 1};
        denom = vg_tile(g, denom, vg_const_i32_vec(g, mult, 2, "Tile/multiples"), "Tile");
        denom = vg_reshape_c(g, denom, (const int64_t[]){overlaps * step}, 1, "Reshape_1");
        denom = vg_slice_c(g, denom, (const int64_t[]){0}, (const int64_t[]){length}, 1, "strided_slice");
        out = vg_div(g, win, denom, "truediv");
    }
    vg_graph_pop_scope(g);
    return out;
}

/* _enclosing_power_of_two: 2^ceil(log2(v)) (v >= 1). */
static int64_t enclosing_pow2(int64_t v) {
    int64_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

/* x with its last dim (static, `have`) zero-padded to `want` (no-op if have >= want). */
static vg_output pad_last(vg_graph *g, vg_output x, int rank, int64_t have, int64_t want, const char *name) {
    if (have < 0 || have >= want) return x;
    int32_t p[2 * VG_MAX_DIMS] = {0};
    p[2 * (rank - 1) + 1] = (int32_t)(want - have);
    return vg_pad(g, x, vg_const_array(g, VG_INT32, (const int64_t[]){rank, 2}, 2, p, "paddings"), name);
}

static bool lengths_ok(vg_graph *g, const char *fn, int64_t frame_length, int64_t frame_step, int64_t *fft_length) {
    if (frame_length <= 0 || frame_step <= 0 || frame_length > INT32_MAX / 2 || frame_step > INT32_MAX ||
        *fft_length > INT32_MAX / 2) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: frame_length (%lld) and frame_step (%lld) must be positive", fn,
                           (long long)frame_length, (long long)frame_step);
        return false;
    }
    if (*fft_length <= 0) *fft_length = enclosing_pow2(frame_length);
    return true;
}

vg_output vg_signal_stft(vg_graph *g, vg_output signals, int64_t frame_length, int64_t frame_step, int64_t fft_length,
                         vg_signal_window_fn window_fn, const void *window_ctx, bool pad_end, const char *name) {
    if (!ok(g, signals)) return k_none;
    vg_dtype dt = vg_output_dtype(signals);
    if (!float_dtype(g, dt, "stft")) return k_none;
    if (!lengths_ok(g, "stft", frame_length, frame_step, &fft_length)) return k_none;
    vg_graph_push_scope(g, name ? name : "stft");
    vg_output framed = vg_signal_frame(g, signals, frame_length, frame_step, pad_end, 0.0, -1, "frame");
    vg_output out = k_none;
    if (ok(g, framed) && window_fn) {
        vg_output w = window_fn(g, frame_length, dt, window_ctx);
        framed = ok(g, w) ? vg_mul(g, framed, w, "mul") : k_none;
    }
    if (ok(g, framed)) {
        /* fft_ops.rfft pads the frames to fft_length; the kernel crops longer ones */
        int rank = vg_output_shape(framed).ndims;
        framed = pad_last(g, framed, rank, frame_length, fft_length, "rfft/Pad");
        int32_t fl = (int32_t)fft_length;
        out = vg_rfft(g, framed, vg_const_i32_vec(g, &fl, 1, "rfft/fft_length"), 1, "rfft");
    }
    vg_graph_pop_scope(g);
    return out;
}

vg_output vg_signal_inverse_stft(vg_graph *g, vg_output stfts, int64_t frame_length, int64_t frame_step,
                                 int64_t fft_length, vg_signal_window_fn window_fn, const void *window_ctx,
                                 const char *name) {
    if (!ok(g, stfts)) return k_none;
    vg_dtype dt = vg_output_dtype(stfts);
    vg_shape s = vg_output_shape(stfts);
    if (dt != VG_COMPLEX64 && dt != VG_COMPLEX128) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "inverse_stft: stfts must be complex64 or complex128, got %s",
                           vg_dtype_name(dt));
        return k_none;
    }
    if (s.ndims < 2) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "inverse_stft: stfts must have a known rank of at least 2, got %d",
                           s.ndims);
        return k_none;
    }
    if (!lengths_ok(g, "inverse_stft", frame_length, frame_step, &fft_length)) return k_none;
    vg_dtype rt = dt == VG_COMPLEX128 ? VG_DOUBLE : VG_FLOAT;
    vg_graph_push_scope(g, name ? name : "inverse_stft");
    /* fft_ops.irfft pads the bins to fft_length / 2 + 1 */
    vg_output x = pad_last(g, stfts, s.ndims, s.dims[s.ndims - 1], fft_length / 2 + 1, "irfft/Pad");
    int32_t fl = (int32_t)fft_length;
    vg_output frames = vg_irfft(g, x, vg_const_i32_vec(g, &fl, 1, "irfft/fft_length"), 1, "irfft");
    /* pad or truncate the frames to frame_length */
    if (fft_length > frame_length) {
        int64_t b[VG_MAX_DIMS] = {0}, sz[VG_MAX_DIMS];
        for (int i = 0; i < s.ndims; i++) sz[i] = -1;
        sz[s.ndims - 1] = frame_length;
        frames = vg_slice_c(g, frames, b, sz, s.ndims, "strided_slice");
    } else {
        frames = pad_last(g, frames, s.ndims, fft_length, frame_length, "Pad");
    }
    if (ok(g, frames) && window_fn) {
        vg_output w = window_fn(g, frame_length, rt, window_ctx);
        frames = ok(g, w) ? vg_mul(g, frames, w, "mul") : k_none;
    }
    vg_output out = ok(g, frames) ? vg_signal_overlap_and_add(g, frames, frame_step, "overlap_and_add") : k_none;
    vg_graph_pop_scope(g);
    return out;
}

/* mfcc_ops.py: dct(x, type=2) * rsqrt(2 N), with dct_ops.py's DCT-II through an RFFT of
 * length 2N: real(rfft(x, [2N])[..., :N] * 2 exp(-i pi k / (2N))). */
vg_output vg_signal_mfccs_from_log_mel_spectrograms(vg_graph *g, vg_output log_mel_spectrograms, const char *name) {
    vg_output x = log_mel_spectrograms;
    if (!ok(g, x)) return k_none;
    vg_dtype dt = vg_output_dtype(x);
    if (!float_dtype(g, dt, "mfccs_from_log_mel_spectrograms")) return k_none;
    vg_shape s = vg_output_shape(x);
    int64_t n = s.ndims >= 1 ? s.dims[s.ndims - 1] : -1;
    if (n == 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "num_mel_bins must be positive. Got: 0");
        return k_none;
    }
    if (n < 0 || n > INT32_MAX / 2) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "mfccs_from_log_mel_spectrograms: the number of mel bins (the last dim) must be known");
        return k_none;
    }
    vg_graph_push_scope(g, name ? name : "mfccs_from_log_mel_spectrograms");
    vg_graph_push_scope(g, "dct");
    vg_output p = pad_last(g, x, s.ndims, n, 2 * n, "rfft/Pad");
    int32_t fl = (int32_t)(2 * n);
    vg_output r = vg_rfft(g, p, vg_const_i32_vec(g, &fl, 1, "rfft/fft_length"), 1, "rfft");
    int64_t b[VG_MAX_DIMS] = {0}, sz[VG_MAX_DIMS];
    for (int i = 0; i < s.ndims; i++) sz[i] = -1;
    sz[s.ndims - 1] = n;
    r = vg_slice_c(g, r, b, sz, s.ndims, "strided_slice");
    /* scale = 2 exp(complex(0, -range(N) * pi * 0.5 / N)), each step in dt */
    vg_dtype ct = dt == VG_DOUBLE ? VG_COMPLEX128 : VG_COMPLEX64;
    vg_tensor *sc = vg_tensor_new(ct, &n, 1, NULL);
    vg_output out = k_none;
    if (!sc) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "mfccs_from_log_mel_spectrograms: out of memory");
    } else {
        for (int64_t k = 0; k < n; k++) {
            double ang = rnd(dt, rnd(dt, rnd(dt, -(double)k * rnd(dt, M_PI)) * 0.5) / (double)n);
            double re = rnd(dt, 2.0 * rnd(dt, cos(ang))), im = rnd(dt, 2.0 * rnd(dt, sin(ang)));
            if (dt == VG_DOUBLE) ((double *)vg_tensor_data(sc))[2 * k] = re, ((double *)vg_tensor_data(sc))[2 * k + 1] = im;
            else ((float *)vg_tensor_data(sc))[2 * k] = (float)re, ((float *)vg_tensor_data(sc))[2 * k + 1] = (float)im;
        }
        vg_output scale = vg_const(g, sc, "mul");
        vg_tensor_free(sc);
        vg_output dct2 = vg_real(g, vg_mul(g, r, scale, "mul_1"), "Real");
        vg_graph_pop_scope(g);
        double f = rnd(dt, 1.0 / sqrt(rnd(dt, (double)n * 2.0)));
        out = vg_mul(g, dct2, const_of(g, dt, &f, NULL, 0, "Rsqrt"), "mul");
        vg_graph_pop_scope(g);
        return out;
    }
    vg_graph_pop_scope(g);
    vg_graph_pop_scope(g);
    return out;
}
