/*
 * summary_ops.c - TF1's summary ops (tensorflow/core/kernels/summary_op.cc):
 * ScalarSummary, HistogramSummary and MergeSummary. Each outputs a string scalar
 * holding a serialized tensorflow.Summary; the builders (vg_summary_scalar, ...) are in
 * src/train/summary.c and the encoders (Summary.Value, HistogramProto with TF's default
 * buckets) in src/io/events.c.
 *
 *   ScalarSummary(tags: string, values: T)   one Value{tag, simple_value = float(v)} per
 *                                            element; tags and values of the same shape
 *   HistogramSummary(tag: string, values: T) one Value{tag, histo}; NaN/Inf fail
 *   MergeSummary(inputs: N x string)         the Values of every input Summary in order;
 *                                            a non-empty tag seen twice fails
 * None of them is differentiable (TF registers them with ops.NotDifferentiable).
 */
#include "kernels/kernel.h"
#include "io/io.h"
#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------------------ */
/* shared helpers */

static bool is_real_number_type(vg_dtype dt) {
    return dt == VG_FLOAT || dt == VG_DOUBLE || dt == VG_INT32 || dt == VG_INT64 || dt == VG_UINT8;
}

/* Checks that input i is a string tensor (build time). */
static vg_code check_string_input(vg_op *op, int i, const char *arg, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, i);
    if (dt != VG_STRING)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Input '%s' of '%s' Op has type %s that does not match expected type of string.",
                             arg, vg_op_type(op), vg_dtype_name(dt));
    return VG_OK;
}

/* Checks that input i has a real-number dtype and records it as attr "T". */
static vg_code check_values_input(vg_op *op, int i, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, i);
    if (!is_real_number_type(dt))
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Input 'values' of '%s' Op has type %s, expected one of float, double, int32, int64, uint8.",
                             vg_op_type(op), vg_dtype_name(dt));
    vg__op_set_default_attr_type(op, "T", dt);
    return VG_OK;
}

static void set_scalar_string_output(vg_op *op) {
    vg__op_set_num_outputs(op, 1);
    vg__op_set_output(op, 0, VG_STRING, vg_shape_make(NULL, 0));
}

/* Summary.Value {tag = 1 (omitted when empty), <value field>}: writes the Value's key and
 * length, then the tag; the caller appends the value field (body_len bytes). */
static void put_value_head(vg__pb_buf *b, const char *tag, size_t tag_len, size_t body_len) {
    size_t vlen = (tag_len ? 1 + (size_t)vg__pb_varint_size(tag_len) + tag_len : 0) + body_len;
    vg__pb_put_tag(b, 1, VG__PB_LEN);
    vg__pb_put_varint(b, vlen);
    if (tag_len) vg__pb_put_bytes(b, 1, tag, tag_len);
}

/* Sets output 0 to a scalar string holding b's bytes. */
static vg_code output_summary(vg__kctx *ctx, const vg__pb_buf *b) {
    vg_status *st = vg__kctx_status(ctx);
    vg_tensor *out;
    if (vg__pb_buf_status(b, "summary", st)) return st->code;
    if (vg__kctx_alloc_output(ctx, 0, VG_STRING, NULL, 0, &out)) return st->code;
    return vg_tensor_set_string(out, 0, b->len ? (const char *)b->data : "", b->len, st);
}

/* ------------------------------------------------------------------------ */
/* ScalarSummary */

static vg_code shape_scalar_summary(vg_op *op, vg_status *st) {
    if (check_string_input(op, 0, "tags", st) || check_values_input(op, 1, st)) return st->code;
    set_scalar_string_output(op);
    return VG_OK;
}

static vg_code kernel_scalar_summary(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *tags = vg__kctx_input(ctx, 0), *values = vg__kctx_input(ctx, 1);
    // tags and values have the same shape (both scalars in tf.summary.scalar)
    if (!vg__same_dims(tags, values)) {
        char a[128], b[128], one[300] = "";
        size_t tl;
        const char *t0 = vg_tensor_num_elements(tags) == 1 ? vg_tensor_string(tags, 0, &tl) : NULL;
        if (t0) snprintf(one, sizeof one, " (tag '%.*s')", (int)(tl > 256 ? 256 : tl), t0);
        return vg_status_set(st, VG_INVALID_ARGUMENT, "tags and values not the same shape: %s != %s%s",
                             vg__tshape_str(tags, a, sizeof a), vg__tshape_str(values, b, sizeof b), one);
    }
    vg_dtype dt = vg_tensor_dtype(values);
    vg__pb_buf b;
    vg__pb_init(&b);
    int64_t n = vg_tensor_num_elements(tags);
    for (int64_t i = 0; i < n; i++) {
        size_t tl;
        const char *tag = vg_tensor_string(tags, i, &tl);
        put_value_head(&b, tag, tl, 5);
        vg__pb_put_float(&b, 2, (float)vg__real_at(values, dt, i, 0.0)); /* oneof: written even when 0 */
    }
    vg_code c = output_summary(ctx, &b);
    vg__pb_free(&b);
    return c;
}

/* ------------------------------------------------------------------------ */
/* HistogramSummary */

static vg_code shape_histogram_summary(vg_op *op, vg_status *st) {
    if (check_string_input(op, 0, "tag", st) || check_values_input(op, 1, st)) return st->code;
    vg_shape ts = vg__op_input_shape(op, 0);
    if (ts.ndims > 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "tags must be scalar, got rank %d", ts.ndims);
    set_scalar_string_output(op);
    return VG_OK;
}

/* HistogramProto of any real-number tensor: floats and doubles directly, integers
 * through a double copy. NaN/Inf -> "Nan in summary histogram for: <op name>". */
static vg_code encode_histo(vg__pb_buf *h, const vg_tensor *values, const char *name, vg_status *st) {
    vg_dtype dt = vg_tensor_dtype(values);
    int64_t n = vg_tensor_num_elements(values);
    if (dt == VG_FLOAT) return vg__histogram_encode_floats(h, vg_tensor_data(values), (size_t)n, name, st);
    if (dt == VG_DOUBLE) return vg__histogram_encode_doubles(h, vg_tensor_data(values), (size_t)n, name, st);
    double *tmp = vg__malloc((size_t)(n ? n : 1) * sizeof(double));
    if (!tmp) return VG_OOM(st, "histogram values");
    for (int64_t i = 0; i < n; i++) tmp[i] = vg__real_at(values, dt, i, 0.0);
    vg_code c = vg__histogram_encode_doubles(h, tmp, (size_t)n, name, st);
    vg__free(tmp);
    return c;
}

static vg_code kernel_histogram_summary(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *tag = vg__kctx_input(ctx, 0), *values = vg__kctx_input(ctx, 1);
    if (vg_tensor_ndims(tag) != 0) {
        char a[128];
        return vg_status_set(st, VG_INVALID_ARGUMENT, "tags must be scalar: %s", vg__tshape_str(tag, a, sizeof a));
    }
    vg__pb_buf h, b;
    vg__pb_init(&h);
    vg__pb_init(&b);
    vg_code c = encode_histo(&h, values, vg_op_name(vg__kctx_op(ctx)), st);
    if (!c) {
        size_t tl;
        const char *t = vg_tensor_string(tag, 0, &tl);
        put_value_head(&b, t, tl, 1 + (size_t)vg__pb_varint_size(h.len) + h.len);
        vg__pb_put_message(&b, 5, &h);
        c = output_summary(ctx, &b);
    }
    vg__pb_free(&h);
    vg__pb_free(&b);
    return c;
}

/* ------------------------------------------------------------------------ */
/* MergeSummary */

static vg_code shape_merge_summary(vg_op *op, vg_status *st) {
    int n = vg_op_num_inputs(op);
    for (int i = 0; i < n; i++)
        if (check_string_input(op, i, "inputs", st)) return st->code;
    vg__op_set_default_attr_int(op, "N", n);
    set_scalar_string_output(op);
    return VG_OK;
}

/* A Value's tag (for the duplicate check) and its position among all values. */
typedef struct tag_ref {
    const uint8_t *tag;
    size_t len;
    size_t order;
} tag_ref;

static int cmp_tag_ref(const void *pa, const void *pb) {
    const tag_ref *a = pa, *b = pb;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->tag, b->tag, n);
    if (c) return c;
    if (a->len != b->len) return a->len < b->len ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* Parses one serialized Summary: appends each Value (as field 1) to out and its
 * non-empty tag to *tags. false when the bytes are not a Summary. */
static bool merge_one(const uint8_t *s, size_t len, vg__pb_buf *out, tag_ref **tags, size_t *ntags,
                      size_t *cap, size_t *order) {
    vg__pb_reader r, vr;
    vg__pb_field f, g;
    vg_code c;
    vg__pb_reader_init(&r, s, len);
    while ((c = vg__pb_next(&r, &f, NULL)) == VG_OK) {
        if (f.number != 1) continue; /* Summary has no other field */
        if (f.wiretype != VG__PB_LEN) return false;
        const uint8_t *tag = NULL;
        size_t tl = 0;
        vg__pb_reader_init(&vr, f.data, f.len);
        while ((c = vg__pb_next(&vr, &g, NULL)) == VG_OK)
            if (g.number == 1 && g.wiretype == VG__PB_LEN) tag = g.data, tl = g.len;
        if (c != VG_OUT_OF_RANGE) return false;
        vg__pb_put_bytes(out, 1, f.data, f.len);
        (*order)++;
        if (!tl) continue; /* untagged values (old image/audio) are never duplicates */
        if (*ntags == *cap) {
            size_t nc = *cap ? *cap * 2 : 16;
            tag_ref *p = vg__realloc(*tags, *cap * sizeof **tags, nc * sizeof **tags);
            if (!p) {
                out->oom = true;
                return true;
            }
            *tags = p;
            *cap = nc;
        }
        (*tags)[(*ntags)++] = (tag_ref){tag, tl, *order};
    }
    return c == VG_OUT_OF_RANGE;
}

/* TF reports the first tag whose second occurrence comes earliest. */
static vg_code check_duplicates(tag_ref *tags, size_t n, vg_status *st) {
    if (n < 2) return VG_OK;
    qsort(tags, n, sizeof *tags, cmp_tag_ref);
    const tag_ref *dup = NULL;
    for (size_t i = 1; i < n; i++) {
        if (tags[i].len != tags[i - 1].len || memcmp(tags[i].tag, tags[i - 1].tag, tags[i].len)) continue;
        if (i >= 2 && tags[i - 2].len == tags[i].len && !memcmp(tags[i - 2].tag, tags[i].tag, tags[i].len))
            continue; /* third or later occurrence */
        if (!dup || tags[i].order < dup->order) dup = &tags[i];
    }
    if (!dup) return VG_OK;
    return vg_status_set(st, VG_INVALID_ARGUMENT, "Duplicate tag %.*s found in summary inputs",
                         (int)(dup->len > 512 ? 512 : dup->len), (const char *)dup->tag);
}

static vg_code kernel_merge_summary(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg__pb_buf b;
    vg__pb_init(&b);
    tag_ref *tags = NULL;
    size_t ntags = 0, cap = 0, order = 0;
    vg_code c = VG_OK;
    int n = vg__kctx_num_inputs(ctx);
    for (int i = 0; i < n && !c; i++) {
        const vg_tensor *in = vg__kctx_input(ctx, i);
        int64_t ne = vg_tensor_num_elements(in);
        for (int64_t k = 0; k < ne && !c; k++) {
            size_t len;
            const char *s = vg_tensor_string(in, k, &len);
            if (!merge_one((const uint8_t *)s, len, &b, &tags, &ntags, &cap, &order))
                c = vg_status_set(st, VG_INVALID_ARGUMENT, "Could not parse one of the summary inputs");
        }
    }
    if (!c && b.oom) c = VG_OOM(st, "merged summary");
    if (!c) c = check_duplicates(tags, ntags, st);
    if (!c) c = output_summary(ctx, &b);
    vg__free(tags);
    vg__pb_free(&b);
    return c;
}

/* ------------------------------------------------------------------------ */

const vg__op_def vg__ops_summary[] = {
    {"ScalarSummary", 2, 2, VG__OP_NOT_DIFFERENTIABLE, 0, shape_scalar_summary, kernel_scalar_summary, NULL},
    {"HistogramSummary", 2, 2, VG__OP_NOT_DIFFERENTIABLE, 0, shape_histogram_summary, kernel_histogram_summary, NULL},
    {"MergeSummary", 1, -1, VG__OP_NOT_DIFFERENTIABLE, 0, shape_merge_summary, kernel_merge_summary, NULL},
    {0},
};
