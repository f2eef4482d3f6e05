/*
 * dataset_native.c - the commonest vectorized map function run without a session:
 * ParseExample of the records feeding each output through DecodeRaw, Reshape, Cast
 * and arithmetic with a scalar constant (the parse_fn of most TF1 input pipelines:
 * parse_single_example -> decode_raw -> reshape -> cast -> * 1/255).
 *
 * vg__ds_native_compile recognises that form in a vectorized function (fn->vec, see
 * dataset_vectorize.c); vg__ds_native_row then computes one record's outputs straight
 * into the caller's row buffers: the image bytes are read where they lie in the
 * record and converted and scaled in one pass, with no tensor and no allocation per
 * record. It returns false for anything but the plain case (an Example that does not
 * decode, a feature of the wrong kind or count, bytes of another length); the map then
 * runs the block through the session as before, so results and errors are exactly
 * those of the ops: the arithmetic is the kernels' (one float operation per step, C11
 * without FP contraction, as math_cwise_ops.c), the parsing the same functions
 * (io/example_io.h) in the same order as ParseExample's kernel.
 */
#include "data/dataset.h"
#include "kernels/kernel.h"
#include "kernels/simd.h"
#include "io/example_io.h"
#include "vigil/ops.h"

enum { ST_CAST, ST_BIN };
enum { B_MUL, B_ADD, B_SUB, B_DIV };

typedef struct nat_step {
    int kind;           /* ST_* */
    vg_dtype from, to;  /* CAST */
    int op;             /* BIN: B_* on `to` (float or double) */
    bool left;          /* BIN: the constant is the left operand */
    double c;           /* BIN: the constant (exact in its dtype) */
} nat_step;

#define NAT_MAX_STEPS 8

struct vg__ds_xform {
    int feat;           /* the ParseExample dense feature it is computed from */
    bool decode;        /* DecodeRaw of the feature's single string */
    vg_dtype raw;       /* DecodeRaw's out_type */
    bool swap;          /* DecodeRaw: bytes in the other order than the host's */
    int nsteps;
    nat_step steps[NAT_MAX_STEPS];
    vg_dtype dtype;     /* the output's */
    int64_t count;      /* values per element (static; dyn: the scratch's dyn_count) */
    bool dyn;           /* a DecodeRaw of unknown length (a map over batches only) */
    size_t bytes;
    /* the uint8 bytes are stored and the cast / arithmetic done by vg__ds_xform_apply
     * (the fused form: DecodeRaw uint8 -> Cast float -> at most one operation) */
    bool defer;
    int fop;            /* the fused form's operation (B_*), -1: none */
    bool fleft;
    float fc;
};

typedef struct nat_feat {
    char *key;
    size_t klen;
    vg_dtype dtype;
    int64_t n;          /* values (the dense shape's size) */
    vg_tensor *def;     /* the default (a reference), 0 elements: required */
} nat_feat;

typedef struct vg__ds_xform nat_out;

struct vg__ds_native {
    int nfeat;
    nat_feat *feats;
    int nouts;
    nat_out outs[VG_DATASET_MAX_COMPONENTS];
};

void vg__ds_native_free(vg__ds_native *nf) {
    if (!nf) return;
    for (int d = 0; d < nf->nfeat; d++) {
        vg__free(nf->feats[d].key);
        vg_tensor_free(nf->feats[d].def);
    }
    vg__free(nf->feats);
    vg__free(nf);
}

void vg__ds_native_scratch_free(vg__ds_native_scratch *s) {
    vg__features_free(&s->fs);
    vg__free(s->buf[0]);
    vg__free(s->buf[1]);
    memset(s, 0, sizeof *s);
}

static const vg_tensor *const_of(vg_output o) {
    const vg_tensor *t;
    if (!o.op || strcmp(vg_op_type(o.op), "Const") || !vg_op_attr_tensor(o.op, "value", &t)) return NULL;
    return t;
}

static bool cast_ok(vg_dtype from, vg_dtype to) {
    bool src = from == VG_UINT8 || from == VG_INT32 || from == VG_INT64 || from == VG_FLOAT || from == VG_DOUBLE;
    if (!src) return false;
    if (to == VG_FLOAT || to == VG_DOUBLE) return true;
    return (to == VG_INT32 && from == VG_UINT8) || (to == VG_INT64 && (from == VG_UINT8 || from == VG_INT32));
}

/* Walks back from output o of the vectorized graph to the ParseExample; fills out
 * (steps in order) and *pe. */
static bool trace(vg_output o, nat_out *out, vg_op **pe) {
    nat_step rev[NAT_MAX_STEPS];
    int n = 0;
    bool decode = false;
    for (;;) {
        const vg_op *op = o.op;
        const char *type = vg_op_type(op);
        if (!strcmp(type, "ParseExample")) {
            if (*pe && *pe != op) return false;
            *pe = (vg_op *)op;
            out->feat = o.index; /* Nsparse is 0: the dense values come first */
            break;
        }
        if (decode) return false; /* DecodeRaw reads the feature's bytes itself */
        if (!strcmp(type, "Identity") || !strcmp(type, "StopGradient") || !strcmp(type, "Reshape")) {
            o = vg_op_input(op, 0);
            continue;
        }
        if (n == NAT_MAX_STEPS) return false;
        nat_step *s = &rev[n];
        memset(s, 0, sizeof *s);
        if (!strcmp(type, "Cast")) {
            s->kind = ST_CAST;
            s->from = vg_output_dtype(vg_op_input(op, 0));
            s->to = vg_output_dtype(o);
            if (!cast_ok(s->from, s->to)) return false;
            n++;
            o = vg_op_input(op, 0);
            continue;
        }
        if (!strcmp(type, "DecodeRaw")) {
            bool little = true;
            vg_op_attr_bool(op, "little_endian", &little);
            const uint16_t one = 1;
            out->decode = decode = true;
            out->raw = vg_output_dtype(o);
            out->swap = vg_dtype_size(out->raw) > 1 && little != (*(const uint8_t *)&one == 1);
            o = vg_op_input(op, 0);
            continue;
        }
        int bop = !strcmp(type, "Mul") ? B_MUL : !strcmp(type, "Add") || !strcmp(type, "AddV2") ? B_ADD
                  : !strcmp(type, "Sub") ? B_SUB : !strcmp(type, "RealDiv") || !strcmp(type, "Div") ? B_DIV : -1;
        if (bop < 0 || vg_op_num_inputs(op) != 2) return false;
        vg_dtype dt = vg_output_dtype(o);
        if (dt != VG_FLOAT && dt != VG_DOUBLE) return false;
        const vg_tensor *c0 = const_of(vg_op_input(op, 0)), *c1 = const_of(vg_op_input(op, 1));
        const vg_tensor *c = c1 ? c1 : c0;
        if ((c0 != NULL) == (c1 != NULL) || vg_tensor_ndims(c) != 0 || vg_tensor_dtype(c) != dt) return false;
        s->kind = ST_BIN;
        s->op = bop;
        s->left = c0 != NULL;
        s->from = s->to = dt;
        s->c = dt == VG_FLOAT ? (double)*(const float *)vg_tensor_data(c) : *(const double *)vg_tensor_data(c);
        n++;
        o = vg_op_input(op, c0 ? 1 : 0);
    }
    out->nsteps = n;
    for (int i = 0; i < n; i++) out->steps[i] = rev[n - 1 - i];
    return true;
}

/* outs: the function over a vector of records `arg`; elem[c]: output c's shape per
 * record. */
static vg__ds_native *compile(const vg_output *outs, int nouts, vg_output arg, const vg_shape *elem, bool dyn_ok) {
    vg__ds_native *nf = vg__calloc(1, sizeof *nf);
    if (!nf) return NULL;
    vg_op *pe = NULL;
    bool ok = true;
    nf->nouts = nouts;
    for (int c = 0; ok && c < nouts; c++) {
        nat_out *o = &nf->outs[c];
        ok = trace(outs[c], o, &pe);
        vg_shape s = elem[c];
        o->dtype = vg_output_dtype(outs[c]);
        o->count = 1;
        if (ok && dyn_ok && o->decode && s.ndims == 1 && s.dims[0] < 0) { /* decode_raw without reshape */
            o->dyn = true;
            s.ndims = 0;
        }
        for (int k = 0; ok && k < s.ndims; k++) {
            ok = s.dims[k] >= 0;
            o->count *= s.dims[k];
        }
        ok = ok && s.ndims >= 0 && vg_dtype_size(o->dtype) > 0;
        o->bytes = (size_t)o->count * vg_dtype_size(o->dtype);
    }
    int64_t ns = -1, ndn = -1;
    const vg_dtype *tdense = NULL;
    const vg_shape *shapes = NULL;
    int nt = 0, nsh = 0;
    ok = ok && pe && vg_op_attr_int(pe, "Nsparse", &ns) && ns == 0 && vg_op_attr_int(pe, "Ndense", &ndn) &&
         vg_op_attr_type_list(pe, "Tdense", &tdense, &nt) && vg_op_attr_shape_list(pe, "dense_shapes", &shapes, &nsh) &&
         nt == ndn && nsh == ndn && vg_op_num_inputs(pe) == 2 + 2 * (int)ndn;
    if (ok) {
        vg_output ser = vg_op_input(pe, 0);
        ok = ser.op == arg.op && ser.index == arg.index;
    }
    if (ok && !(nf->feats = vg__calloc((size_t)(ndn ? ndn : 1), sizeof *nf->feats))) ok = false;
    for (int d = 0; ok && d < ndn; d++) {
        nat_feat *f = &nf->feats[d];
        nf->nfeat = d + 1;
        const vg_tensor *k = const_of(vg_op_input(pe, 2 + d)), *def = const_of(vg_op_input(pe, 2 + (int)ndn + d));
        size_t kl;
        const char *ks = k && vg_tensor_dtype(k) == VG_STRING && vg_tensor_num_elements(k) == 1 ? vg_tensor_string(k, 0, &kl)
                                                                                                 : NULL;
        if (!ks || !def || !(f->key = vg__strndup(ks, kl))) {
            ok = false;
            break;
        }
        f->klen = kl;
        f->dtype = tdense[d];
        f->n = vg_shape_num_elements(&shapes[d]);
        int64_t dn = vg_tensor_num_elements(def);
        /* the kernel's checks of the defaults, which fail every run: left to it */
        ok = f->n >= 0 && (dn == 0 || dn == 1 || dn == f->n) && (dn == 0 || vg_tensor_dtype(def) == f->dtype) &&
             (f->dtype == VG_INT64 || f->dtype == VG_FLOAT || f->dtype == VG_STRING);
        f->def = vg_tensor_ref((vg_tensor *)def);
    }
    for (int c = 0; ok && c < nouts; c++) { /* the types flow, the counts agree */
        nat_out *o = &nf->outs[c];
        ok = o->feat < ndn;
        if (!ok) break;
        const nat_feat *f = &nf->feats[o->feat];
        vg_dtype cur = f->dtype;
        if (o->decode) {
            ok = f->dtype == VG_STRING && shapes[o->feat].ndims == 0;
            cur = o->raw;
        } else {
            ok = f->dtype != VG_STRING && f->n == o->count;
        }
        for (int i = 0; ok && i < o->nsteps; i++) {
            ok = o->steps[i].from == cur;
            cur = o->steps[i].to;
        }
        ok = ok && cur == o->dtype;
        if (ok && o->decode && o->raw == VG_UINT8 && o->nsteps >= 1 && o->nsteps <= 2 &&
            o->steps[0].kind == ST_CAST && o->steps[0].to == VG_FLOAT && (o->nsteps == 1 || o->steps[1].to == VG_FLOAT)) {
            o->defer = true;
            o->fop = o->nsteps == 2 ? o->steps[1].op : -1;
            o->fleft = o->nsteps == 2 && o->steps[1].left;
            o->fc = o->nsteps == 2 ? (float)o->steps[1].c : 0;
        }
    }
    if (!ok) {
        vg__ds_native_free(nf);
        return NULL;
    }
    return nf;
}

vg__ds_native *vg__ds_native_compile(const vg__ds_fn *fn) {
    if (!fn->vec || fn->nargs != 1 || vg_output_dtype(fn->args[0]) != VG_STRING) return NULL;
    vg_shape shapes[VG_DATASET_MAX_COMPONENTS]; /* per element: the function's own */
    for (int c = 0; c < fn->nouts; c++) shapes[c] = vg_output_shape(fn->outs[c]);
    return compile(fn->vec_outs, fn->nouts, fn->vec_args[0], shapes, false);
}

vg__ds_native *vg__ds_native_compile_batched(const vg__ds_fn *fn) {
    if (fn->ncap > 0 || fn->nargs != 1 || vg_output_dtype(fn->args[0]) != VG_STRING ||
        vg_output_shape(fn->args[0]).ndims != 1)
        return NULL;
    int64_t b = vg_output_shape(fn->args[0]).dims[0];
    vg_shape shapes[VG_DATASET_MAX_COMPONENTS]; /* per record: the outputs' without the batch */
    for (int c = 0; c < fn->nouts; c++) {
        vg_shape s = vg_output_shape(fn->outs[c]);
        if (s.ndims < 1 || (s.dims[0] >= 0 && s.dims[0] != b)) return NULL;
        shapes[c] = vg_shape_make(s.dims + 1, s.ndims - 1);
    }
    return compile(fn->outs, fn->nouts, fn->args[0], shapes, true);
}

/* ------------------------------------------------------------------------ */
/* the arithmetic, as the kernels do it */

/* blocks of 16 (a loop of constant trip count, which -O2 vectorizes), then the rest */
#define U8F32(NAME, EXPR)                                                                  \
    VG_SIMD_CLONES static void NAME(const uint8_t *restrict s, float *restrict o, int64_t n, float c) { \
        int64_t i = 0;                                                                     \
        for (; i + 16 <= n; i += 16)                                                       \
            for (int k = 0; k < 16; k++) {                                                 \
                float x = (float)s[i + k];                                                 \
                o[i + k] = EXPR;                                                           \
            }                                                                              \
        for (; i < n; i++) {                                                               \
            float x = (float)s[i];                                                         \
            o[i] = EXPR;                                                                   \
        }                                                                                  \
    }
U8F32(u8f32_cast, x)
U8F32(u8f32_mul, x * c)
U8F32(u8f32_add, x + c)
U8F32(u8f32_sub, x - c)
U8F32(u8f32_rsub, c - x)
U8F32(u8f32_div, x / c)
U8F32(u8f32_rdiv, c / x)

static void cast_vals(vg_dtype from, vg_dtype to, const void *in, void *out, int64_t n) {
#define CV(TI, TO)                                                          \
    do {                                                                    \
        const TI *a = in;                                                   \
        TO *b = out;                                                        \
        for (int64_t i = 0; i < n; i++) b[i] = (TO)a[i];                    \
    } while (0)
#define FROM(TO)                                                            \
    switch (from) {                                                         \
    case VG_UINT8: CV(uint8_t, TO); break;                                  \
    case VG_INT32: CV(int32_t, TO); break;                                  \
    case VG_INT64: CV(int64_t, TO); break;                                  \
    case VG_FLOAT: CV(float, TO); break;                                    \
    case VG_DOUBLE: CV(double, TO); break;                                  \
    default: break;                                                         \
    }
    switch (to) {
    case VG_FLOAT: FROM(float) break;
    case VG_DOUBLE: FROM(double) break;
    case VG_INT32: FROM(int32_t) break;
    case VG_INT64: FROM(int64_t) break;
    default: break;
    }
#undef FROM
#undef CV
}

static void bin_vals(const nat_step *s, const void *in, void *out, int64_t n) {
#define BV(T)                                                                          \
    do {                                                                               \
        const T *a = in;                                                               \
        T *b = out, c = (T)s->c;                                                       \
        for (int64_t i = 0; i < n; i++) {                                              \
            T x = a[i];                                                                \
            b[i] = s->op == B_MUL ? (s->left ? c * x : x * c)                           \
                   : s->op == B_ADD ? (s->left ? c + x : x + c)                         \
                   : s->op == B_SUB ? (s->left ? c - x : x - c)                         \
                                    : (s->left ? c / x : x / c);                        \
        }                                                                              \
    } while (0)
    if (s->to == VG_FLOAT) BV(float);
    else BV(double);
#undef BV
}

static bool grow(vg__ds_native_scratch *s, int k, size_t need) {
    if (s->cap[k] >= need) return true;
    void *p = vg__aligned_alloc(need, 64);
    if (!p) return false;
    vg__free(s->buf[k]);
    s->buf[k] = p;
    s->cap[k] = need;
    return true;
}

/* Output o of one record from its feature's values (or bytes). */
static bool run_out(const vg__ds_native *nf, const nat_out *o, vg__ds_native_scratch *s, const vg__feature *f,
                    uint8_t *dst, int c) {
    const nat_feat *ft = &nf->feats[o->feat];
    vg_status st;
    int64_t count = o->dyn ? s->dyn_count[c] : o->count;
    if (o->decode) {
        const uint8_t *p;
        size_t len;
        if (f) {
            vg__pb_reader r;
            vg__pb_reader_init(&r, f->list, f->list_len);
            if (vg__feature_bytes_next(&r, &p, &len, &st) != VG_OK) return false;
        } else {
            p = (const uint8_t *)vg_tensor_string(ft->def, 0, &len);
        }
        size_t es = vg_dtype_size(o->raw);
        if (len != (size_t)count * es) return false;
        if (o->defer) { /* the bytes; vg__ds_xform_apply does the rest */
            memcpy(dst, p, len);
            return true;
        }
        if (!o->nsteps) {
            memcpy(dst, p, len);
            if (o->swap) vg__swap_elem_bytes(dst, len, es);
            return true;
        }
        if (!grow(s, 0, len ? len : 1)) return false;
        memcpy(s->buf[0], p, len);
        if (o->swap) vg__swap_elem_bytes(s->buf[0], len, es);
    } else {
        size_t vb = (size_t)count * 8;
        uint8_t *vals = o->nsteps ? (grow(s, 0, vb ? vb : 1) ? s->buf[0] : NULL) : dst;
        if (!vals) return false;
        if (f) {
            int64_t got;
            vg_code rc = ft->dtype == VG_INT64 ? vg__feature_int64s(f, (int64_t *)vals, count, &got, &st)
                                                : vg__feature_floats(f, (float *)vals, count, &got, &st);
            if (rc != VG_OK || got != count) return false;
        } else { /* the default, one value or all */
            size_t es = vg_dtype_size(ft->dtype);
            int64_t dn = vg_tensor_num_elements(ft->def);
            for (int64_t i = 0; i < count; i++)
                memcpy(vals + (size_t)i * es, (const uint8_t *)vg_tensor_data(ft->def) + (size_t)(dn == 1 ? 0 : i) * es, es);
        }
        if (!o->nsteps) return true;
    }
    /* the steps one after the other, between the two scratch buffers; the last one
     * writes the row */
    if (!grow(s, 1, (size_t)count * 8 + 1)) return false;
    int cur = 0;
    for (int i = 0; i < o->nsteps; i++) {
        void *to = i == o->nsteps - 1 ? (void *)dst : s->buf[cur ^ 1];
        if (o->steps[i].kind == ST_CAST) cast_vals(o->steps[i].from, o->steps[i].to, s->buf[cur], to, count);
        else bin_vals(&o->steps[i], s->buf[cur], to, count);
        cur ^= 1;
    }
    return true;
}

bool vg__ds_native_row(const vg__ds_native *nf, vg__ds_native_scratch *s, const uint8_t *rec, size_t len,
                       uint8_t *const *dst) {
    vg_status st;
    if (vg__example_decode(rec, len, &s->fs, &st) != VG_OK) return false;
    const vg__feature *found[64];
    if (nf->nfeat > 64) return false;
    /* every dense feature as the kernel checks it, used or not */
    for (int d = 0; d < nf->nfeat; d++) {
        const nat_feat *ft = &nf->feats[d];
        const vg__feature *f = vg__features_find(&s->fs, ft->key, ft->klen);
        if (!f || f->kind == VG__FEAT_NONE) {
            if (vg_tensor_num_elements(ft->def) == 0) return false; /* required */
            found[d] = NULL;
            continue;
        }
        int want = ft->dtype == VG_INT64 ? VG__FEAT_INT64 : ft->dtype == VG_FLOAT ? VG__FEAT_FLOAT : VG__FEAT_BYTES;
        int64_t cnt;
        if (f->kind != want || vg__feature_count(f, &cnt, &st) != VG_OK || cnt != ft->n) return false;
        found[d] = f;
    }
    for (int c = 0; c < nf->nouts; c++)
        if (!run_out(nf, &nf->outs[c], s, found[nf->outs[c].feat], dst[c], c)) return false;
    return true;
}

const vg__ds_xform *vg__ds_native_out(const vg__ds_native *nf, int c, size_t *raw) {
    const nat_out *o = &nf->outs[c];
    *raw = o->defer ? (size_t)o->count : o->bytes;
    return o->defer ? o : NULL;
}

void vg__ds_xform_apply(const vg__ds_xform *xf, const uint8_t *src, uint8_t *dst) {
    vg__ds_xform_apply_n(xf, src, dst, xf->count);
}

bool vg__ds_native_dyn_counts(const vg__ds_native *nf, vg__ds_native_scratch *s, const uint8_t *rec, size_t len) {
    bool any = false;
    for (int c = 0; c < nf->nouts; c++) any = any || nf->outs[c].dyn;
    if (!any) return true;
    vg_status st;
    if (vg__example_decode(rec, len, &s->fs, &st) != VG_OK) return false;
    for (int c = 0; c < nf->nouts; c++) {
        const nat_out *o = &nf->outs[c];
        if (!o->dyn) continue;
        const nat_feat *ft = &nf->feats[o->feat];
        const vg__feature *f = vg__features_find(&s->fs, ft->key, ft->klen);
        const uint8_t *p;
        size_t n;
        if (f && f->kind == VG__FEAT_BYTES) {
            vg__pb_reader r;
            vg__pb_reader_init(&r, f->list, f->list_len);
            if (vg__feature_bytes_next(&r, &p, &n, &st) != VG_OK) return false;
        } else if (!f && vg_tensor_num_elements(ft->def) == 1) {
            vg_tensor_string(ft->def, 0, &n);
        } else {
            return false;
        }
        size_t es = vg_dtype_size(o->raw);
        if (n % es) return false;
        s->dyn_count[c] = (int64_t)(n / es);
    }
    return true;
}

int64_t vg__ds_native_count(const vg__ds_native *nf, const vg__ds_native_scratch *s, int c) {
    return nf->outs[c].dyn ? s->dyn_count[c] : nf->outs[c].count;
}

void vg__ds_xform_apply_n(const vg__ds_xform *xf, const uint8_t *src, uint8_t *dst, int64_t n) {
    float *d = (float *)dst;
    float c = xf->fc;
    if (xf->fop < 0) u8f32_cast(src, d, n, c);
    else if (xf->fop == B_MUL) u8f32_mul(src, d, n, c);
    else if (xf->fop == B_ADD) u8f32_add(src, d, n, c);
    else if (xf->fop == B_SUB) (xf->fleft ? u8f32_rsub : u8f32_sub)(src, d, n, c);
    else (xf->fleft ? u8f32_rdiv : u8f32_div)(src, d, n, c);
}
