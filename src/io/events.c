/*
 * events.c - tensorflow.Event / Summary / HistogramProto (docs/formats.md §3.3-3.4):
 * encoders with proto3's exact omission rules, TF1's HistogramSummary bucketing
 * (core/lib/histogram/histogram.cc, EncodeToProto with preserve_zero_buckets=false),
 * and best-effort decoders for reading event files back (TF1 simple_value scalars,
 * TF2 tensor scalars, histograms).
 */
#include "io/io.h"
#include <float.h>
#include <math.h>
#include <pthread.h>

/* proto3 omits a double equal to 0.0 (C++ compares the bit pattern: -0.0 is kept). */
static void put_double_nz(vg__pb_buf *b, int field, double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    if (u) vg__pb_put_double(b, field, v);
}

static void put_string_nz(vg__pb_buf *b, int field, const char *s) {
    if (s && *s) vg__pb_put_string(b, field, s);
}

/* ---- Event ---- */

static void encode_oneof_message(vg__pb_buf *out, const vg__event *ev) {
    vg__pb_buf sub;
    vg__pb_init(&sub);
    if (ev->kind == VG__EVENT_LOG_MESSAGE) {
        if (ev->status) vg__pb_put_int32(&sub, 1, ev->status);
        put_string_nz(&sub, 2, ev->msg);
    } else if (ev->kind == VG__EVENT_SESSION_LOG) {
        if (ev->status) vg__pb_put_int32(&sub, 1, ev->status);
        put_string_nz(&sub, 2, ev->path);
        put_string_nz(&sub, 3, ev->msg);
    } else { /* TAGGED_RUN_METADATA */
        put_string_nz(&sub, 1, ev->tag);
        if (ev->len) vg__pb_put_bytes(&sub, 2, ev->data, ev->len);
    }
    vg__pb_put_message(out, (int)ev->kind, &sub);
    vg__pb_free(&sub);
}

void vg__event_encode(vg__pb_buf *out, const vg__event *ev) {
    put_double_nz(out, 1, ev->wall_time);
    if (ev->step) vg__pb_put_int64(out, 2, ev->step);
    switch (ev->kind) {
    case VG__EVENT_FILE_VERSION:
    case VG__EVENT_GRAPH_DEF:
    case VG__EVENT_SUMMARY:
    case VG__EVENT_META_GRAPH_DEF:
        /* oneof members are written when set, even if empty */
        vg__pb_put_bytes(out, (int)ev->kind, ev->data, ev->len);
        break;
    case VG__EVENT_LOG_MESSAGE:
    case VG__EVENT_SESSION_LOG:
    case VG__EVENT_TAGGED_RUN_METADATA:
        encode_oneof_message(out, ev);
        break;
    default:
        break;
    }
}

/* ---- Summary ---- */

void vg__summary_add_scalar(vg__pb_buf *summary, const char *tag, float value) {
    size_t tn = tag ? strlen(tag) : 0;
    size_t vlen = (tn ? 1 + (size_t)vg__pb_varint_size(tn) + tn : 0) + 5;
    vg__pb_put_tag(summary, 1, VG__PB_LEN);
    vg__pb_put_varint(summary, vlen);
    if (tn) vg__pb_put_bytes(summary, 1, tag, tn);
    vg__pb_put_float(summary, 2, value); /* oneof: written even when 0.0 */
}

void vg__summary_add_histo(vg__pb_buf *summary, const char *tag, const vg__pb_buf *histo) {
    size_t tn = tag ? strlen(tag) : 0;
    size_t vlen = (tn ? 1 + (size_t)vg__pb_varint_size(tn) + tn : 0) + 1 + (size_t)vg__pb_varint_size(histo->len) +
                  histo->len;
    if (histo->oom) summary->oom = true;
    vg__pb_put_tag(summary, 1, VG__PB_LEN);
    vg__pb_put_varint(summary, vlen);
    if (tn) vg__pb_put_bytes(summary, 1, tag, tn);
    vg__pb_put_message(summary, 5, histo);
}

/* ---- histograms ---- */

#define NLIMITS_MAX 1600
static double g_limits[NLIMITS_MAX];
static int g_nlimits;
static pthread_once_t g_limits_once = PTHREAD_ONCE_INIT;

/* histogram.cc: 1e-12 * 1.1^k (by repeated multiplication) while < 1e20, then DBL_MAX;
 * negated in reverse order in front, 0.0 in the middle. */
static void build_limits(void) {
    double pos[NLIMITS_MAX / 2];
    int n = 0;
    for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) pos[n++] = v;
    pos[n++] = DBL_MAX;
    int k = 0;
    for (int i = n - 1; i >= 0; i--) g_limits[k++] = -pos[i];
    g_limits[k++] = 0.0;
    for (int i = 0; i < n; i++) g_limits[k++] = pos[i];
    g_nlimits = k;
}

const double *vg__histogram_default_limits(int *n) {
    pthread_once(&g_limits_once, build_limits);
    if (n) *n = g_nlimits;
    return g_limits;
}

typedef struct histo {
    double min, max, num, sum, sum_squares;
    double *counts;
} histo_acc;

/* First bucket whose limit is > v (std::upper_bound); DBL_MAX stays in the last one. */
static int bucket_of(const double *lim, int n, double v) {
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (lim[mid] > v) hi = mid;
        else lo = mid + 1;
    }
    return lo < n ? lo : n - 1;
}

static void histo_add(histo_acc *h, const double *lim, int n, double v) {
    h->counts[bucket_of(lim, n, v)] += 1.0;
    if (h->min > v) h->min = v;
    if (h->max < v) h->max = v;
    h->num += 1;
    h->sum += v;
    h->sum_squares += v * v;
}

/* EncodeToProto(preserve_zero_buckets = false): each maximal run of empty buckets
 * becomes one (limit of its last bucket, 0) entry. */
static void histo_encode(vg__pb_buf *out, const histo_acc *h, const double *lim, int n, double *ol, double *oc) {
    put_double_nz(out, 1, h->min);
    put_double_nz(out, 2, h->max);
    put_double_nz(out, 3, h->num);
    put_double_nz(out, 4, h->sum);
    put_double_nz(out, 5, h->sum_squares);
    size_t k = 0;
    for (int i = 0; i < n;) {
        double end = lim[i], count = h->counts[i];
        i++;
        if (count <= 0.0)
            while (i < n && h->counts[i] <= 0.0) end = lim[i], count = h->counts[i], i++;
        ol[k] = end;
        oc[k++] = count;
    }
    if (k == 0) { /* only with an empty limit list; kept for parity with TF */
        ol[k] = DBL_MAX;
        oc[k++] = 0.0;
    }
    vg__pb_put_packed_double(out, 6, ol, k);
    vg__pb_put_packed_double(out, 7, oc, k);
}

static vg_code histogram_encode(vg__pb_buf *out, const double *dv, const float *fv, size_t n, const char *tag,
                                vg_status *st) {
    int nl;
    const double *lim = vg__histogram_default_limits(&nl);
    double *mem = vg__calloc(3 * (size_t)nl, sizeof *mem);
    if (!mem) return VG_OOM(st, "histogram");
    histo_acc h = {.min = lim[nl - 1], .max = -DBL_MAX, .counts = mem};
    vg_code c = VG_OK;
    for (size_t i = 0; i < n && !c; i++) {
        double v = dv ? dv[i] : (double)fv[i];
        if (isnan(v) || isinf(v))
            c = vg_status_set(st, VG_INVALID_ARGUMENT, "%s in summary histogram for: %s",
                              isnan(v) ? "Nan" : "Infinity", tag ? tag : "");
        else
            histo_add(&h, lim, nl, v);
    }
    if (!c) {
        histo_encode(out, &h, lim, nl, mem + nl, mem + 2 * (size_t)nl);
        c = vg__pb_buf_status(out, "histogram", st);
    }
    vg__free(mem);
    return c;
}

vg_code vg__histogram_encode_doubles(vg__pb_buf *out, const double *v, size_t n, const char *tag, vg_status *st) {
    return histogram_encode(out, v, NULL, n, tag, st);
}

vg_code vg__histogram_encode_floats(vg__pb_buf *out, const float *v, size_t n, const char *tag, vg_status *st) {
    return histogram_encode(out, NULL, v, n, tag, st);
}

/* ---- decoding ---- */

static vg_code bad_event(vg_status *st, const char *what) {
    return vg_status_set(st, VG_DATA_LOSS, "malformed %s", what);
}

vg_code vg__event_decode(const void *data, size_t len, vg__event_info *ev, vg_status *st) {
    vg__pb_reader r, sr;
    vg__pb_field f, g;
    vg_code c;
    memset(ev, 0, sizeof *ev);
    vg__pb_reader_init(&r, data, len);
    while ((c = vg__pb_next(&r, &f, st)) == VG_OK) {
        if (f.number == 1 && f.wiretype == VG__PB_FIXED64) ev->wall_time = vg__pb_as_double(&f);
        else if (f.number == 2 && f.wiretype == VG__PB_VARINT) ev->step = (int64_t)f.u;
        else if (f.number >= 3 && f.number <= 9 && f.wiretype == VG__PB_LEN) {
            ev->kind = (vg__event_kind)f.number;
            ev->payload = f.data;
            ev->payload_len = f.len;
            ev->session_status = 0;
            if (f.number != VG__EVENT_SESSION_LOG) continue;
            vg__pb_reader_init(&sr, f.data, f.len);
            while ((c = vg__pb_next(&sr, &g, st)) == VG_OK)
                if (g.number == 1 && g.wiretype == VG__PB_VARINT) ev->session_status = (int)g.u;
            if (c != VG_OUT_OF_RANGE) return bad_event(st, "SessionLog");
        }
    }
    return c == VG_OUT_OF_RANGE ? VG_OK : bad_event(st, "Event");
}

void vg__summary_iter_init(vg__summary_iter *it, const void *summary, size_t len) {
    vg__pb_reader_init(&it->r, summary, len);
}

/* Reads element 0 of a packed or unpacked numeric field; counts the elements. */
static void tensor_val(const vg__pb_field *f, int width, double *first, int64_t *count, int dtype) {
    uint64_t u = f->u;
    int64_t n = 1;
    if (f->wiretype == VG__PB_LEN) {
        if (width) {
            n = (int64_t)(f->len / (size_t)width);
            u = f->len >= (size_t)width ? (width == 4 ? vg__get_le32(f->data) : vg__get_le64(f->data)) : 0;
        } else {
            const uint8_t *p = f->data;
            n = 0;
            for (uint64_t x; p < f->data + f->len && vg__pb_get_varint(&p, f->data + f->len, &x); n++)
                if (n == 0) u = x;
        }
    }
    if (n >= 1 && *count == 0) {
        if (dtype == VG__DT_FLOAT) { uint32_t b = (uint32_t)u; float x; memcpy(&x, &b, 4); *first = x; }
        else if (dtype == VG__DT_DOUBLE) { double x; memcpy(&x, &u, 8); *first = x; }
        else if (dtype == VG__DT_INT64) *first = (double)(int64_t)u;
        else *first = (double)(int32_t)u;
    }
    *count += n;
}

/* TensorProto holding one float/double/int32/int64 element -> scalar (TF2 scalars). */
static bool tensor_scalar(const uint8_t *p, size_t len, double *out) {
    vg__pb_reader r;
    vg__pb_field f;
    int dtype = 0;
    const uint8_t *content = NULL;
    size_t clen = 0;
    double first = 0;
    int64_t count = 0;
    vg__pb_reader_init(&r, p, len);
    while (vg__pb_next(&r, &f, NULL) == VG_OK) {
        if (f.number == 1 && f.wiretype == VG__PB_VARINT) dtype = (int)f.u;
        else if (f.number == 4 && f.wiretype == VG__PB_LEN) content = f.data, clen = f.len;
        else if (f.number == 5) tensor_val(&f, 4, &first, &count, VG__DT_FLOAT);
        else if (f.number == 6) tensor_val(&f, 8, &first, &count, VG__DT_DOUBLE);
        else if (f.number == 7) tensor_val(&f, 0, &first, &count, VG__DT_INT32);
        else if (f.number == 10) tensor_val(&f, 0, &first, &count, VG__DT_INT64);
    }
    size_t es = vg__io_dtype_size(dtype);
    if (content && es && clen == es) {
        vg__pb_field cf = {.wiretype = VG__PB_LEN, .data = content, .len = clen};
        count = 0;
        if (dtype == VG__DT_FLOAT || dtype == VG__DT_DOUBLE) tensor_val(&cf, (int)es, &first, &count, dtype);
        else if (dtype == VG__DT_INT32 || dtype == VG__DT_INT64) {
            uint64_t u = es == 4 ? (uint64_t)(int64_t)(int32_t)vg__get_le32(content) : vg__get_le64(content);
            first = (double)(int64_t)u;
            count = 1;
        }
    }
    *out = first;
    return count == 1;
}

static vg_code parse_value(const vg__pb_field *vf, vg__summary_value *v, vg_status *st) {
    vg__pb_reader r;
    vg__pb_field f;
    vg_code c;
    memset(v, 0, sizeof *v);
    vg__pb_reader_init(&r, vf->data, vf->len);
    while ((c = vg__pb_next(&r, &f, st)) == VG_OK) {
        if (f.number == 1 && f.wiretype == VG__PB_LEN) {
            v->tag = (const char *)f.data;
            v->tag_len = f.len;
        } else if (f.number == 2 && f.wiretype == VG__PB_FIXED32) {
            v->kind = VG__VALUE_SIMPLE;
            v->has_scalar = true;
            v->scalar = vg__pb_as_float(&f);
        } else if (f.number == 5 && f.wiretype == VG__PB_LEN) {
            v->kind = VG__VALUE_HISTO;
            v->histo = f.data;
            v->histo_len = f.len;
        } else if (f.number == 8 && f.wiretype == VG__PB_LEN) {
            v->kind = VG__VALUE_TENSOR;
            v->has_scalar = tensor_scalar(f.data, f.len, &v->scalar);
        } else if ((f.number == 4 || f.number == 6) && f.wiretype == VG__PB_LEN) {
            v->kind = f.number == 4 ? VG__VALUE_IMAGE : VG__VALUE_AUDIO;
        }
    }
    return c == VG_OUT_OF_RANGE ? VG_OK : bad_event(st, "Summary.Value");
}

vg_code vg__summary_next(vg__summary_iter *it, vg__summary_value *v, vg_status *st) {
    vg__pb_field f;
    vg_code c;
    while ((c = vg__pb_next(&it->r, &f, st)) == VG_OK)
        if (f.number == 1 && f.wiretype == VG__PB_LEN) return parse_value(&f, v, st);
    return c;
}

static void count_doubles(const vg__pb_field *f, size_t *n) {
    *n += f->wiretype == VG__PB_LEN ? f->len / 8 : f->wiretype == VG__PB_FIXED64 ? 1 : 0;
}

vg_code vg__histo_decode_stats(const void *histo, size_t len, vg__histo_stats *hs, vg_status *st) {
    vg__pb_reader r;
    vg__pb_field f;
    vg_code c;
    memset(hs, 0, sizeof *hs);
    double *slots[6] = {NULL, &hs->min, &hs->max, &hs->num, &hs->sum, &hs->sum_squares};
    vg__pb_reader_init(&r, histo, len);
    while ((c = vg__pb_next(&r, &f, st)) == VG_OK) {
        if (f.number >= 1 && f.number <= 5 && f.wiretype == VG__PB_FIXED64) *slots[f.number] = vg__pb_as_double(&f);
        else if (f.number == 6) count_doubles(&f, &hs->nlimits);
        else if (f.number == 7) count_doubles(&f, &hs->nbuckets);
    }
    return c == VG_OUT_OF_RANGE ? VG_OK : bad_event(st, "HistogramProto");
}
