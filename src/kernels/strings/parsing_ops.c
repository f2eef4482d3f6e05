/*
 * parsing_ops.c - TF's parsing ops (tensorflow/core/kernels/{example_parsing_ops,
 * decode_raw_op,string_to_number_op,decode_csv_op}.cc): ParseExample,
 * ParseSingleExample, ParseSingleSequenceExample, DecodeRaw, StringToNumber, DecodeCSV,
 * with their shape functions
 * and the builders of vigil/example.h.
 *
 * ParseExample(serialized [B], names [B] or [0], sparse_keys x Nsparse, dense_keys x
 * Ndense, dense_defaults x Ndense) -> sparse_indices x Nsparse, sparse_values x Nsparse,
 * sparse_shapes x Nsparse, dense_values x Ndense (attrs Nsparse, Ndense, sparse_types,
 * Tdense, dense_shapes). ParseSingleExample(serialized [], dense_defaults) has the keys
 * as attrs (sparse_keys, dense_keys, num_sparse). A dense default with no element
 * makes the feature required. Feature dtypes: int64 (Int64List), float (FloatList),
 * string (BytesList). All allocations are bounded by the input sizes.
 */
#include "kernels/kernel.h"
#include "io/example_io.h"
#include "vigil/example.h"
#include "vigil/ops.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define PARSE_FLAGS VG__OP_NOT_DIFFERENTIABLE

static const char *feat_type_name(int kind) {
    return kind == VG__FEAT_INT64 ? "int64" : kind == VG__FEAT_FLOAT ? "float" : kind == VG__FEAT_BYTES ? "string"
                                                                                                          : "none";
}

static int kind_of(vg_dtype dt) {
    return dt == VG_INT64 ? VG__FEAT_INT64 : dt == VG_FLOAT ? VG__FEAT_FLOAT : dt == VG_STRING ? VG__FEAT_BYTES : -1;
}

/* Printable prefix of a byte string for messages. */
static const char *printable(const uint8_t *p, size_t n, char *buf, size_t cap) {
    size_t k = 0;
    for (size_t i = 0; i < n && k + 5 < cap; i++) {
        if (p[i] >= 32 && p[i] < 127 && p[i] != '\\') buf[k++] = (char)p[i];
        else k += (size_t)snprintf(buf + k, cap - k, "\\x%02x", p[i]);
    }
    if (k >= cap) k = cap - 1;
    buf[k] = 0;
    return buf;
}

/* ------------------------------------------------------------------------ */
/* the shared parser */

typedef struct parse_cfg {
    int nsparse, ndense;
    const vg_dtype *sparse_types, *dense_types;
    const vg_shape *dense_shapes;
    const char **sparse_keys, **dense_keys; /* NUL-terminated */
    size_t *sparse_klen, *dense_klen;
    vg_tensor **defaults;                   /* ndense */
    bool single;                            /* ParseSingleExample: no batch dim */
} parse_cfg;

/* Sparse values collected over the batch for one key. */
typedef struct sparse_acc {
    int64_t *rows;     /* per value: the batch index */
    int64_t *cols;     /* per value: the position in its example */
    void *vals;        /* int64 / float values, or vg_tensor-free string copies */
    char **strs;
    size_t *slen;
    int64_t n, cap, max_per;
} sparse_acc;

static vg_code acc_reserve(sparse_acc *a, vg_dtype dt, int64_t more, vg_status *st) {
    if (a->n + more <= a->cap) return VG_OK;
    int64_t nc = a->cap ? a->cap : 64;
    while (nc < a->n + more) nc *= 2;
    size_t es = dt == VG_STRING ? 0 : 8;
    int64_t *r = vg__realloc(a->rows, (size_t)a->cap * 8, (size_t)nc * 8);
    if (r) a->rows = r;
    int64_t *c = r ? vg__realloc(a->cols, (size_t)a->cap * 8, (size_t)nc * 8) : NULL;
    if (c) a->cols = c;
    bool ok = r && c;
    if (ok && es) {
        void *v = vg__realloc(a->vals, (size_t)a->cap * es, (size_t)nc * es);
        if (v) a->vals = v;
        ok = v != NULL;
    }
    if (ok && !es) {
        char **s = vg__realloc(a->strs, (size_t)a->cap * sizeof(char *), (size_t)nc * sizeof(char *));
        if (s) a->strs = s;
        size_t *l = s ? vg__realloc(a->slen, (size_t)a->cap * sizeof(size_t), (size_t)nc * sizeof(size_t)) : NULL;
        if (l) a->slen = l;
        ok = s && l;
    }
    if (!ok) return VG_OOM(st, "sparse feature values");
    a->cap = nc;
    return VG_OK;
}

static void acc_free(sparse_acc *a) {
    if (a->strs)
        for (int64_t i = 0; i < a->n; i++) vg__free(a->strs[i]);
    vg__free(a->rows);
    vg__free(a->cols);
    vg__free(a->vals);
    vg__free(a->strs);
    vg__free(a->slen);
}

/* Name of record b for messages. */
static const char *record_name(const vg_tensor *names, int64_t b, char *buf, size_t cap) {
    size_t len;
    const char *s = names && vg_tensor_num_elements(names) > b ? vg_tensor_string(names, b, &len) : NULL;
    if (!s || len == 0) return "<unknown>";
    snprintf(buf, cap, "%.*s", (int)(len < cap - 1 ? len : cap - 1), s);
    return buf;
}

static vg_code type_mismatch(vg_status *st, const char *name, const char *key, int got, vg_dtype want) {
    return vg_status_set(st, VG_INVALID_ARGUMENT,
                         "Name: %s, Feature: %s.  Data types don't match. Data type: %s but expected type: %s", name,
                         key, feat_type_name(got), vg_dtype_name(want));
}

/* Writes the default of dense feature d into out at element offset `at`. */
static vg_code put_default(vg_tensor *out, int64_t at, const vg_tensor *def, int64_t n, vg_status *st) {
    int64_t dn = vg_tensor_num_elements(def);
    vg_dtype dt = vg_tensor_dtype(out);
    for (int64_t i = 0; i < n; i++) {
        int64_t j = dn == 1 ? 0 : i;
        if (dt == VG_STRING) {
            size_t len;
            const char *s = vg_tensor_string(def, j, &len);
            vg_code rc = vg_tensor_set_string(out, at + i, s, len, st);
            if (rc != VG_OK) return rc;
        } else {
            size_t es = vg_dtype_size(dt);
            memcpy((uint8_t *)vg_tensor_data(out) + (size_t)(at + i) * es, (const uint8_t *)vg_tensor_data(def) + (size_t)j * es,
                   es);
        }
    }
    return VG_OK;
}

/* Parses record b into the dense outputs and the sparse accumulators. */
static vg_code fill_features(const parse_cfg *c, const vg__features *fs, int64_t b, const char *name,
                             vg_tensor **dense, sparse_acc *acc, vg_status *st);

static vg_code bad_record(const uint8_t *rec, size_t rlen, int64_t b, const char *what, vg_status *st) {
    char pbuf[300], why[256];
    snprintf(why, sizeof why, "%.200s", st->msg);
    return vg_status_set(st, VG_INVALID_ARGUMENT, "Could not parse %s input, value: '%s' (record %lld: %s)", what,
                         printable(rec, rlen < 64 ? rlen : 64, pbuf, sizeof pbuf), (long long)b, why);
}

static vg_code parse_one(const parse_cfg *c, const uint8_t *rec, size_t rlen, int64_t b, const vg_tensor *names,
                         vg__features *fs, vg_tensor **dense, sparse_acc *acc, vg_status *st) {
    char nbuf[256];
    const char *name = record_name(names, b, nbuf, sizeof nbuf);
    vg_code rc = vg__example_decode(rec, rlen, fs, st);
    if (rc == VG_RESOURCE_EXHAUSTED) return rc;
    if (rc != VG_OK) return bad_record(rec, rlen, b, "example", st);
    return fill_features(c, fs, b, name, dense, acc, st);
}

/* Fills record b's dense values and sparse accumulators from decoded features. */
static vg_code fill_features(const parse_cfg *c, const vg__features *fs, int64_t b, const char *name,
                             vg_tensor **dense, sparse_acc *acc, vg_status *st) {
    vg_code rc;
    for (int d = 0; d < c->ndense; d++) {
        const char *key = c->dense_keys[d];
        vg_dtype dt = c->dense_types[d];
        int64_t n = vg_shape_num_elements(&c->dense_shapes[d]), at = c->single ? 0 : b * n;
        const vg__feature *f = vg__features_find(fs, key, c->dense_klen[d]);
        if (!f || f->kind == VG__FEAT_NONE) {
            if (vg_tensor_num_elements(c->defaults[d]) == 0 && c->single) /* one record: no index to name */
                return vg_status_set(st, VG_INVALID_ARGUMENT, "Name: %s, Feature: %s is required but could not be found.",
                                     name, key);
            if (vg_tensor_num_elements(c->defaults[d]) == 0)
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "Name: %s, Feature: %s is required but could not be found. (record %lld)", name,
                                     key, (long long)b);
            if ((rc = put_default(dense[d], at, c->defaults[d], n, st)) != VG_OK) return rc;
            continue;
        }
        if (f->kind != kind_of(dt)) return type_mismatch(st, name, key, f->kind, dt);
        int64_t cnt;
        if ((rc = vg__feature_count(f, &cnt, st)) != VG_OK) return rc;
        if (cnt != n) {
            char sb[128];
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "Name: %s, Key: %s, Index: %lld.  Number of %s values != expected.  Values size: "
                                 "%lld but output shape: %s",
                                 name, key, (long long)b, feat_type_name(f->kind), (long long)cnt,
                                 vg_shape_str(&c->dense_shapes[d], sb, sizeof sb));
        }
        int64_t got;
        if (dt == VG_INT64) {
            rc = vg__feature_int64s(f, (int64_t *)vg_tensor_data(dense[d]) + at, n, &got, st);
        } else if (dt == VG_FLOAT) {
            rc = vg__feature_floats(f, (float *)vg_tensor_data(dense[d]) + at, n, &got, st);
        } else {
            vg__pb_reader r;
            const uint8_t *p;
            size_t len;
            vg__pb_reader_init(&r, f->list, f->list_len);
            for (int64_t i = 0; i < n && rc == VG_OK; i++) {
                if ((rc = vg__feature_bytes_next(&r, &p, &len, st)) == VG_OK)
                    rc = vg_tensor_set_string(dense[d], at + i, (const char *)p, len, st);
            }
        }
        if (rc != VG_OK) return rc;
    }
    for (int s = 0; s < c->nsparse; s++) {
        const char *key = c->sparse_keys[s];
        vg_dtype dt = c->sparse_types[s];
        const vg__feature *f = vg__features_find(fs, key, c->sparse_klen[s]);
        if (!f || f->kind == VG__FEAT_NONE) continue;
        if (f->kind != kind_of(dt)) return type_mismatch(st, name, key, f->kind, dt);
        int64_t cnt, got;
        if ((rc = vg__feature_count(f, &cnt, st)) != VG_OK) return rc;
        sparse_acc *a = &acc[s];
        if ((rc = acc_reserve(a, dt, cnt, st)) != VG_OK) return rc;
        for (int64_t i = 0; i < cnt; i++) {
            a->rows[a->n + i] = b;
            a->cols[a->n + i] = i;
        }
        if (dt == VG_INT64) {
            rc = vg__feature_int64s(f, (int64_t *)a->vals + a->n, cnt, &got, st);
        } else if (dt == VG_FLOAT) {
            float *fv = vg__malloc(sizeof(float) * (size_t)(cnt ? cnt : 1));
            if (!fv) return VG_OOM(st, "sparse float values");
            rc = vg__feature_floats(f, fv, cnt, &got, st);
            for (int64_t i = 0; i < cnt && rc == VG_OK; i++) ((double *)a->vals)[a->n + i] = fv[i];
            vg__free(fv);
        } else {
            vg__pb_reader r;
            const uint8_t *p;
            size_t len;
            vg__pb_reader_init(&r, f->list, f->list_len);
            int64_t base = a->n;
            for (int64_t i = 0; i < cnt && rc == VG_OK; i++) {
                if ((rc = vg__feature_bytes_next(&r, &p, &len, st)) != VG_OK) break;
                if (!(a->strs[base + i] = vg__malloc(len + 1))) {
                    rc = VG_OOM(st, "sparse string value");
                    break;
                }
                memcpy(a->strs[base + i], p, len);
                a->slen[base + i] = len;
                a->n = base + i + 1; /* counted as copied, so a failure frees them */
            }
            if (rc != VG_OK) return rc;
            a->n = base;
        }
        if (rc != VG_OK) return rc;
        a->n += cnt;
        if (cnt > a->max_per) a->max_per = cnt;
    }
    return VG_OK;
}

/* Emits the sparse outputs of key s. */
static vg_code emit_sparse(vg__kctx *ctx, const parse_cfg *c, int s, sparse_acc *a, int64_t batch) {
    vg_status *st = vg__kctx_status(ctx);
    int rank = c->single ? 1 : 2;
    vg_tensor *ind, *val, *shp;
    int64_t idims[2] = {a->n, rank};
    vg_code rc = vg__kctx_alloc_output(ctx, s, VG_INT64, idims, 2, &ind);
    if (rc == VG_OK) rc = vg__kctx_alloc_output(ctx, c->nsparse + s, c->sparse_types[s], &a->n, 1, &val);
    int64_t sd = rank;
    if (rc == VG_OK) rc = vg__kctx_alloc_output(ctx, 2 * c->nsparse + s, VG_INT64, &sd, 1, &shp);
    if (rc != VG_OK) return rc;
    int64_t *ip = vg_tensor_data(ind), *sp = vg_tensor_data(shp);
    for (int64_t i = 0; i < a->n; i++) {
        if (c->single) {
            ip[i] = a->cols[i];
        } else {
            ip[2 * i] = a->rows[i];
            ip[2 * i + 1] = a->cols[i];
        }
    }
    if (c->single) sp[0] = a->max_per;
    else sp[0] = batch, sp[1] = a->max_per;
    vg_dtype dt = c->sparse_types[s];
    if (dt == VG_INT64) {
        if (a->n) memcpy(vg_tensor_data(val), a->vals, (size_t)a->n * 8);
    } else if (dt == VG_FLOAT) {
        float *fv = vg_tensor_data(val);
        for (int64_t i = 0; i < a->n; i++) fv[i] = (float)((double *)a->vals)[i];
    } else {
        for (int64_t i = 0; i < a->n && rc == VG_OK; i++) rc = vg_tensor_set_string(val, i, a->strs[i], a->slen[i], st);
    }
    return rc;
}

/* Parses the batch (or, with pre != NULL, the given decoded features as one record
 * named pre_name) into outputs 0 .. 3 * nsparse + ndense - 1. */
static vg_code run_parse_ex(vg__kctx *ctx, parse_cfg *c, const vg_tensor *serialized, const vg_tensor *names,
                            const vg__features *pre, const char *pre_name) {
    vg_status *st = vg__kctx_status(ctx);
    int64_t batch = c->single ? 1 : vg_tensor_num_elements(serialized);
    vg_code rc = VG_OK;
    vg_tensor *dense_local[32], **dense = c->ndense <= 32 ? dense_local : vg__calloc((size_t)c->ndense, sizeof *dense);
    sparse_acc acc_local[16], *acc = c->nsparse <= 16 ? acc_local : vg__calloc((size_t)c->nsparse, sizeof *acc);
    if (!dense || !acc) {
        rc = VG_OOM(st, "parse outputs");
        goto out;
    }
    memset(acc, 0, sizeof *acc * (size_t)c->nsparse);
    for (int d = 0; d < c->ndense && rc == VG_OK; d++) {
        const vg_shape *sh = &c->dense_shapes[d];
        int64_t n = vg_shape_num_elements(sh), dn = vg_tensor_num_elements(c->defaults[d]);
        if (dn != 0 && dn != 1 && dn != n) {
            char sb[128];
            rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                               "Default value for dense key %s has %lld elements; expected 0, 1 or %lld (shape %s)",
                               c->dense_keys[d], (long long)dn, (long long)n, vg_shape_str(sh, sb, sizeof sb));
            break;
        }
        if (dn && vg_tensor_dtype(c->defaults[d]) != c->dense_types[d]) {
            rc = vg_status_set(st, VG_INVALID_ARGUMENT, "Default value for dense key %s has dtype %s, expected %s",
                               c->dense_keys[d], vg_dtype_name(vg_tensor_dtype(c->defaults[d])),
                               vg_dtype_name(c->dense_types[d]));
            break;
        }
        int64_t dims[VG_MAX_DIMS + 1];
        int nd = 0;
        if (!c->single) dims[nd++] = batch;
        for (int i = 0; i < sh->ndims && nd < VG_MAX_DIMS; i++) dims[nd++] = sh->dims[i];
        rc = vg__kctx_alloc_output(ctx, 3 * c->nsparse + d, c->dense_types[d], dims, nd, &dense[d]);
    }
    vg__features fs = {0};
    if (pre && rc == VG_OK) rc = fill_features(c, pre, 0, pre_name, dense, acc, st);
    for (int64_t b = 0; !pre && b < batch && rc == VG_OK; b++) {
        size_t len;
        const char *rec = vg_tensor_string(serialized, b, &len);
        rc = parse_one(c, (const uint8_t *)rec, len, b, names, &fs, dense, acc, st);
    }
    vg__features_free(&fs);
    for (int s = 0; s < c->nsparse && rc == VG_OK; s++) rc = emit_sparse(ctx, c, s, &acc[s], batch);
out:
    if (acc) {
        for (int s = 0; s < c->nsparse; s++) acc_free(&acc[s]);
        if (acc != acc_local) vg__free(acc);
    }
    if (dense != dense_local) vg__free(dense);
    return rc;
}

static vg_code run_parse(vg__kctx *ctx, parse_cfg *c, const vg_tensor *serialized, const vg_tensor *names) {
    return run_parse_ex(ctx, c, serialized, names, NULL, NULL);
}

/* Reads the attr lists shared by both ops. */
static vg_code cfg_types(const vg_op *op, parse_cfg *c, const char *nsparse_attr, vg_status *st) {
    int64_t ns = 0, nd = 0;
    int nt = 0, ntd = 0, nsh = 0;
    vg_op_attr_int(op, nsparse_attr, &ns);
    if (!vg_op_attr_type_list(op, "sparse_types", &c->sparse_types, &nt)) nt = 0, c->sparse_types = NULL;
    if (!vg_op_attr_type_list(op, "Tdense", &c->dense_types, &ntd)) ntd = 0, c->dense_types = NULL;
    if (!vg_op_attr_shape_list(op, "dense_shapes", &c->dense_shapes, &nsh)) nsh = 0, c->dense_shapes = NULL;
    if (vg_op_attr_int(op, "Ndense", &nd) && nd != ntd)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: Ndense %lld != len(Tdense) %d", vg_op_type(op),
                             (long long)nd, ntd);
    if (ns != nt || ntd != nsh || ns < 0 || ns > 4096 || ntd > 4096)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "%s: %s (%lld) must equal len(sparse_types) (%d), len(Tdense) (%d) len(dense_shapes) (%d)",
                             vg_op_type(op), nsparse_attr, (long long)ns, nt, ntd, nsh);
    c->nsparse = (int)ns;
    c->ndense = ntd;
    for (int i = 0; i < c->nsparse; i++)
        if (kind_of(c->sparse_types[i]) < 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: sparse_types[%d] must be int64, float or string, got %s",
                                 vg_op_type(op), i, vg_dtype_name(c->sparse_types[i]));
    for (int i = 0; i < c->ndense; i++) {
        if (kind_of(c->dense_types[i]) < 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: Tdense[%d] must be int64, float or string, got %s",
                                 vg_op_type(op), i, vg_dtype_name(c->dense_types[i]));
        if (!vg_shape_is_fully_defined(&c->dense_shapes[i]))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: dense_shapes[%d] must be fully defined", vg_op_type(op),
                                 i);
    }
    return VG_OK;
}

/* Output shapes (batch = -1 unknown, or -2 for the single op). */
static vg_code set_parse_outputs(vg_op *op, const parse_cfg *c, int64_t batch, bool single, int extra) {
    vg__op_set_num_outputs(op, 3 * c->nsparse + c->ndense + extra); /* extra: declared by the caller */
    int rank = single ? 1 : 2;
    for (int s = 0; s < c->nsparse; s++) {
        vg__op_set_output(op, s, VG_INT64, vg_shape_make((int64_t[]){-1, rank}, 2));
        vg__op_set_output(op, c->nsparse + s, c->sparse_types[s], vg_shape_make((int64_t[]){-1}, 1));
        vg__op_set_output(op, 2 * c->nsparse + s, VG_INT64, vg_shape_make((int64_t[]){rank}, 1));
    }
    for (int d = 0; d < c->ndense; d++) {
        vg_shape s = c->dense_shapes[d];
        if (!single) {
            if (s.ndims + 1 > VG_MAX_DIMS) return VG_INVALID_ARGUMENT;
            memmove(s.dims + 1, s.dims, sizeof(int64_t) * (size_t)s.ndims);
            s.dims[0] = batch;
            s.ndims++;
        }
        vg__op_set_output(op, 3 * c->nsparse + d, c->dense_types[d], s);
    }
    return VG_OK;
}

static vg_code check_string_input(vg_op *op, int i, int rank, const char *what, vg_status *st) {
    if (vg__op_input_dtype(op, i) != VG_STRING)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input '%s' must be a string tensor, got %s", vg_op_type(op),
                             what, vg_dtype_name(vg__op_input_dtype(op, i)));
    vg_shape s = vg__op_input_shape(op, i);
    if (rank >= 0 && s.ndims >= 0 && s.ndims != rank)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: Shape must be rank %d but is rank %d for input '%s'",
                             vg_op_type(op), rank, s.ndims, what);
    return VG_OK;
}

static vg_code shape_parse_example(vg_op *op, vg_status *st) {
    parse_cfg c = {0};
    vg_code rc = cfg_types(op, &c, "Nsparse", st);
    if (rc != VG_OK) return rc;
    int want = 2 + c.nsparse + c.ndense + c.ndense; /* serialized, names, keys, defaults */
    if ((rc = vg__op_need_inputs(op, want, st)) != VG_OK) return rc;
    if ((rc = check_string_input(op, 0, 1, "serialized", st)) != VG_OK) return rc;
    if ((rc = check_string_input(op, 1, 1, "names", st)) != VG_OK) return rc;
    for (int i = 0; i < c.nsparse + c.ndense; i++)
        if ((rc = check_string_input(op, 2 + i, 0, i < c.nsparse ? "sparse_keys" : "dense_keys", st)) != VG_OK)
            return rc;
    for (int d = 0; d < c.ndense; d++)
        if (vg__op_input_dtype(op, 2 + c.nsparse + c.ndense + d) != c.dense_types[d])
            return vg_status_set(st, VG_INVALID_ARGUMENT, "ParseExample: dense_defaults[%d] must be %s, got %s", d,
                                 vg_dtype_name(c.dense_types[d]),
                                 vg_dtype_name(vg__op_input_dtype(op, 2 + c.nsparse + c.ndense + d)));
    vg_shape ss = vg__op_input_shape(op, 0);
    return set_parse_outputs(op, &c, ss.ndims == 1 ? ss.dims[0] : -1, false, 0);
}

/* Key i of a ParseExample op (NULL: not a string scalar). */
typedef const char *(*parse_key_fn)(vg__kctx *ctx, const parse_cfg *c, int i, size_t *len);

/* The shared body of ParseExample and ParseExampleV2: copies the keys (key_at), takes
 * the dense defaults from inputs def_base.., checks names against serialized (batched
 * form) and parses. */
static vg_code parse_keyed(vg__kctx *ctx, parse_cfg *c, parse_key_fn key_at, int def_base, const char *opname) {
    vg_status *st = vg__kctx_status(ctx);
    vg_code rc = VG_OK;
    int nk = c->nsparse + c->ndense;
    const char **keys = vg__calloc((size_t)(nk ? nk : 1), sizeof(char *));
    size_t *klen = vg__calloc((size_t)(nk ? nk : 1), sizeof(size_t));
    vg_tensor **defs = vg__calloc((size_t)(c->ndense ? c->ndense : 1), sizeof(vg_tensor *));
    char **owned = vg__calloc((size_t)(nk ? nk : 1), sizeof(char *));
    if (!keys || !klen || !defs || !owned) rc = VG_OOM(st, "ParseExample keys");
    for (int i = 0; i < nk && rc == VG_OK; i++) {
        size_t len = 0;
        const char *k = key_at(ctx, c, i, &len);
        if (!k) rc = vg_status_set(st, VG_INVALID_ARGUMENT, "%s: key %d must be a string scalar", opname, i);
        else if (!(owned[i] = vg__strndup(k, len))) rc = VG_OOM(st, "ParseExample key");
        keys[i] = owned[i];
        klen[i] = len;
    }
    if (rc == VG_OK) {
        for (int d = 0; d < c->ndense; d++) defs[d] = vg__kctx_input(ctx, def_base + d);
        c->sparse_keys = keys;
        c->sparse_klen = klen;
        c->dense_keys = keys + c->nsparse;
        c->dense_klen = klen + c->nsparse;
        c->defaults = defs;
        const vg_tensor *ser = vg__kctx_input(ctx, 0), *names = vg__kctx_input(ctx, 1);
        if (!c->single && vg_tensor_num_elements(names) != 0 &&
            vg_tensor_num_elements(names) != vg_tensor_num_elements(ser))
            rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                               "Expected len(names) == len(serialized), but got: %lld vs. %lld",
                               (long long)vg_tensor_num_elements(names), (long long)vg_tensor_num_elements(ser));
        else
            rc = run_parse(ctx, c, ser, c->single ? NULL : names);
    }
    if (owned)
        for (int i = 0; i < nk; i++) vg__free(owned[i]);
    vg__free(owned);
    vg__free(keys);
    vg__free(klen);
    vg__free(defs);
    return rc;
}

/* ParseExample: key i is the scalar input 2 + i. */
static const char *key_v1(vg__kctx *ctx, const parse_cfg *c, int i, size_t *len) {
    (void)c;
    vg_tensor *t = vg__kctx_input(ctx, 2 + i);
    return vg_tensor_num_elements(t) == 1 ? vg_tensor_string(t, 0, len) : NULL;
}

static vg_code kernel_parse_example(vg__kctx *ctx) {
    parse_cfg c = {0};
    vg_code rc = cfg_types(vg__kctx_op(ctx), &c, "Nsparse", vg__kctx_status(ctx));
    if (rc != VG_OK) return rc;
    return parse_keyed(ctx, &c, key_v1, 2 + c.nsparse + c.ndense, "ParseExample");
}

/* ParseExampleV2 (TF 2.x's tf.io.parse_example): serialized [B] or [] (then no batch
 * dimension, as ParseSingleExample), names [B] or [0], the keys as 1-D string tensors
 * (sparse_keys [num_sparse], dense_keys [len(Tdense)], ragged_keys [0]), dense_defaults
 * x len(Tdense). Ragged features (ragged_value_types) are refused: UNIMPLEMENTED. */
static vg_code v2_cfg(const vg_op *op, parse_cfg *c, vg_status *st) {
    vg_code rc = cfg_types(op, c, "num_sparse", st);
    if (rc != VG_OK) return rc;
    const vg_dtype *rt;
    int nr = 0;
    if (vg_op_attr_type_list(op, "ragged_value_types", &rt, &nr) && nr > 0)
        return vg_status_set(st, VG_UNIMPLEMENTED, "ParseExampleV2: ragged features (%d) are not supported yet", nr);
    return VG_OK;
}

static vg_code shape_parse_example_v2(vg_op *op, vg_status *st) {
    parse_cfg c = {0};
    vg_code rc = v2_cfg(op, &c, st);
    if (rc != VG_OK) return rc;
    if ((rc = vg__op_need_inputs(op, 5 + c.ndense, st)) != VG_OK) return rc;
    vg_shape ss = vg__op_input_shape(op, 0);
    if ((rc = check_string_input(op, 0, -1, "serialized", st)) != VG_OK) return rc;
    if (ss.ndims > 1)
        return vg_status_set(st, VG_UNIMPLEMENTED, "ParseExampleV2: serialized of rank %d (vigil: 0 or 1)", ss.ndims);
    if ((rc = check_string_input(op, 1, -1, "names", st)) != VG_OK) return rc;
    static const char *const kn[] = {"sparse_keys", "dense_keys", "ragged_keys"};
    for (int i = 0; i < 3; i++)
        if ((rc = check_string_input(op, 2 + i, 1, kn[i], st)) != VG_OK) return rc;
    for (int d = 0; d < c.ndense; d++)
        if (vg__op_input_dtype(op, 5 + d) != c.dense_types[d])
            return vg_status_set(st, VG_INVALID_ARGUMENT, "ParseExampleV2: dense_defaults[%d] must be %s, got %s", d,
                                 vg_dtype_name(c.dense_types[d]), vg_dtype_name(vg__op_input_dtype(op, 5 + d)));
    bool single = ss.ndims == 0;
    return set_parse_outputs(op, &c, ss.ndims == 1 ? ss.dims[0] : -1, single, 0);
}

/* ParseExampleV2: the keys are elements of the vectors sparse_keys (input 2) and
 * dense_keys (input 3). */
static const char *key_v2(vg__kctx *ctx, const parse_cfg *c, int i, size_t *len) {
    return i < c->nsparse ? vg_tensor_string(vg__kctx_input(ctx, 2), i, len)
                          : vg_tensor_string(vg__kctx_input(ctx, 3), i - c->nsparse, len);
}

static vg_code kernel_parse_example_v2(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    parse_cfg c = {0};
    vg_code rc = v2_cfg(vg__kctx_op(ctx), &c, st);
    if (rc != VG_OK) return rc;
    const vg_tensor *ser = vg__kctx_input(ctx, 0);
    const vg_tensor *kt[3] = {vg__kctx_input(ctx, 2), vg__kctx_input(ctx, 3), vg__kctx_input(ctx, 4)};
    int64_t want[3] = {c.nsparse, c.ndense, 0};
    static const char *const kn[] = {"sparse_keys", "dense_keys", "ragged_keys"};
    for (int i = 0; i < 3; i++)
        if (vg_tensor_ndims(kt[i]) != 1 || vg_tensor_num_elements(kt[i]) != want[i])
            return vg_status_set(st, VG_INVALID_ARGUMENT, "ParseExampleV2: %s must be a vector of %lld keys", kn[i],
                                 (long long)want[i]);
    if (vg_tensor_ndims(ser) > 1)
        return vg_status_set(st, VG_UNIMPLEMENTED, "ParseExampleV2: serialized of rank %d (vigil: 0 or 1)",
                             vg_tensor_ndims(ser));
    c.single = vg_tensor_ndims(ser) == 0;
    return parse_keyed(ctx, &c, key_v2, 5, "ParseExampleV2");
}

/* ParseSingleExample keys are attrs. */
static vg_code single_keys(const vg_op *op, parse_cfg *c, const char **keys, size_t *klen, vg_status *st) {
    const char *const *sk = NULL, *const *dk = NULL;
    int ns = 0, nd = 0;
    if (!vg_op_attr_string_list(op, "sparse_keys", &sk, &ns)) ns = 0;
    if (!vg_op_attr_string_list(op, "dense_keys", &dk, &nd)) nd = 0;
    if (ns != c->nsparse || nd != c->ndense)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "ParseSingleExample: %d sparse_keys and %d dense_keys for %d sparse and %d dense types",
                             ns, nd, c->nsparse, c->ndense);
    for (int i = 0; i < ns; i++) keys[i] = sk[i], klen[i] = strlen(sk[i]);
    for (int i = 0; i < nd; i++) keys[ns + i] = dk[i], klen[ns + i] = strlen(dk[i]);
    return VG_OK;
}

static vg_code shape_parse_single(vg_op *op, vg_status *st) {
    parse_cfg c = {0};
    vg_code rc = cfg_types(op, &c, "num_sparse", st);
    if (rc != VG_OK) return rc;
    const char *const *sk = NULL, *const *dk = NULL;
    int ns = 0, nd = 0;
    if (!vg_op_attr_string_list(op, "sparse_keys", &sk, &ns)) ns = 0;
    if (!vg_op_attr_string_list(op, "dense_keys", &dk, &nd)) nd = 0;
    if (ns != c.nsparse || nd != c.ndense)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "ParseSingleExample: %d sparse_keys and %d dense_keys for %d sparse and %d dense types",
                             ns, nd, c.nsparse, c.ndense);
    if ((rc = vg__op_need_inputs(op, 1 + c.ndense, st)) != VG_OK) return rc;
    if ((rc = check_string_input(op, 0, 0, "serialized", st)) != VG_OK) return rc;
    for (int d = 0; d < c.ndense; d++)
        if (vg__op_input_dtype(op, 1 + d) != c.dense_types[d])
            return vg_status_set(st, VG_INVALID_ARGUMENT, "ParseSingleExample: dense_defaults[%d] must be %s, got %s",
                                 d, vg_dtype_name(c.dense_types[d]), vg_dtype_name(vg__op_input_dtype(op, 1 + d)));
    return set_parse_outputs(op, &c, -1, true, 0);
}

static vg_code kernel_parse_single(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    parse_cfg c = {0};
    vg_code rc = cfg_types(op, &c, "num_sparse", st);
    if (rc != VG_OK) return rc;
    int nk = c.nsparse + c.ndense;
    const char **keys = vg__calloc((size_t)(nk ? nk : 1), sizeof(char *));
    size_t *klen = vg__calloc((size_t)(nk ? nk : 1), sizeof(size_t));
    vg_tensor **defs = vg__calloc((size_t)(c.ndense ? c.ndense : 1), sizeof(vg_tensor *));
    if (!keys || !klen || !defs) rc = VG_OOM(st, "ParseSingleExample keys");
    if (rc == VG_OK) rc = single_keys(op, &c, keys, klen, st);
    if (rc == VG_OK) {
        for (int d = 0; d < c.ndense; d++) defs[d] = vg__kctx_input(ctx, 1 + d);
        c.sparse_keys = keys;
        c.sparse_klen = klen;
        c.dense_keys = keys + c.nsparse;
        c.dense_klen = klen + c.nsparse;
        c.defaults = defs;
        c.single = true;
        rc = run_parse(ctx, &c, vg__kctx_input(ctx, 0), NULL);
    }
    vg__free(keys);
    vg__free(klen);
    vg__free(defs);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* DecodeRaw */

static const vg_dtype k_decode_raw_types[] = {VG_FLOAT, VG_DOUBLE, VG_INT32, VG_UINT8, VG_INT64};

static vg_code shape_decode_raw(vg_op *op, vg_status *st) {
    vg_code rc = check_string_input(op, 0, -1, "bytes", st);
    if (rc != VG_OK) return rc;
    vg_dtype dt;
    if (!vg_op_attr_type_(op, "out_type", &dt) || !vg__dtype_in(dt, k_decode_raw_types, 5))
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "DecodeRaw: out_type must be one of float, double, int32, uint8, int64");
    vg__op_set_default_attr_bool(op, "little_endian", true);
    vg_shape s = vg__op_input_shape(op, 0);
    if (s.ndims >= 0 && s.ndims < VG_MAX_DIMS) s.dims[s.ndims++] = -1;
    else s = vg_shape_unknown();
    return vg__op_set_single_output(op, dt, s);
}

static vg_code kernel_decode_raw(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    vg_dtype dt = VG_UINT8;
    bool little = true;
    vg_op_attr_type_(op, "out_type", &dt);
    vg_op_attr_bool(op, "little_endian", &little);
    const vg_tensor *in = vg__kctx_input(ctx, 0);
    int64_t n = vg_tensor_num_elements(in);
    size_t es = vg_dtype_size(dt), len0 = 0;
    if (n > 0) vg_tensor_string(in, 0, &len0);
    for (int64_t i = 1; i < n; i++) {
        size_t len;
        vg_tensor_string(in, i, &len);
        if (len != len0)
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "DecodeRaw requires input strings to all be the same size, but element %lld has "
                                 "size %zu != %zu",
                                 (long long)i, len, len0);
    }
    if (len0 % es)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Input to DecodeRaw has length %zu that is not a multiple of %zu, the size of %s", len0,
                             es, vg_dtype_name(dt));
    int64_t dims[VG_MAX_DIMS];
    int nd = vg_tensor_ndims(in);
    if (nd + 1 > VG_MAX_DIMS) return vg_status_set(st, VG_INVALID_ARGUMENT, "DecodeRaw: input rank too large");
    memcpy(dims, vg_tensor_dims(in), sizeof(int64_t) * (size_t)nd);
    dims[nd] = (int64_t)(len0 / es);
    vg_tensor *out;
    vg_code rc = vg__kctx_alloc_output(ctx, 0, dt, dims, nd + 1, &out);
    if (rc != VG_OK) return rc;
    uint8_t *o = vg_tensor_data(out);
    const uint16_t one = 1;
    bool host_little = *(const uint8_t *)&one == 1;
    for (int64_t i = 0; i < n; i++) {
        size_t len;
        const uint8_t *s = (const uint8_t *)vg_tensor_string(in, i, &len);
        uint8_t *dst = o + (size_t)i * len0;
        if (len0) memcpy(dst, s, len0);
        if (little != host_little) vg__swap_elem_bytes(dst, len0, es);
    }
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* StringToNumber and the number parsers shared with DecodeCSV */

/* Strict parses of s[0..len): leading/trailing whitespace allowed (as TF's safe_strto*). */
static bool parse_num(const char *s, size_t len, vg_dtype dt, void *out) {
    char buf[128];
    while (len && isspace((unsigned char)*s)) s++, len--;
    while (len && isspace((unsigned char)s[len - 1])) len--;
    if (len == 0 || len >= sizeof buf) return false;
    memcpy(buf, s, len);
    buf[len] = 0;
    char *end;
    errno = 0;
    if (dt == VG_FLOAT || dt == VG_DOUBLE) {
        double d = strtod(buf, &end);
        if (*end) return false;
        if (dt == VG_FLOAT) {
            float f = (float)d;
            memcpy(out, &f, 4);
        } else {
            memcpy(out, &d, 8);
        }
        return true;
    }
    long long v = strtoll(buf, &end, 10);
    if (*end || errno == ERANGE) return false;
    if (dt == VG_INT32) {
        if (v < INT32_MIN || v > INT32_MAX) return false;
        int32_t x = (int32_t)v;
        memcpy(out, &x, 4);
    } else {
        int64_t x = v;
        memcpy(out, &x, 8);
    }
    return true;
}

static vg_code shape_string_to_number(vg_op *op, vg_status *st) {
    vg_code rc = check_string_input(op, 0, -1, "string_tensor", st);
    if (rc != VG_OK) return rc;
    vg__op_set_default_attr_type(op, "out_type", VG_FLOAT);
    vg_dtype dt = VG_FLOAT;
    vg_op_attr_type_(op, "out_type", &dt);
    if (dt != VG_FLOAT && dt != VG_DOUBLE && dt != VG_INT32 && dt != VG_INT64)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "StringToNumber: out_type must be float, double, int32 or int64");
    return vg__op_set_single_output(op, dt, vg__op_input_shape(op, 0));
}

static vg_code kernel_string_to_number(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    vg_dtype dt = VG_FLOAT;
    vg_op_attr_type_(vg__kctx_op(ctx), "out_type", &dt);
    const vg_tensor *in = vg__kctx_input(ctx, 0);
    vg_tensor *out;
    vg_code rc = vg__kctx_alloc_output(ctx, 0, dt, vg_tensor_dims(in), vg_tensor_ndims(in), &out);
    if (rc != VG_OK) return rc;
    size_t es = vg_dtype_size(dt);
    for (int64_t i = 0; i < vg_tensor_num_elements(in); i++) {
        size_t len;
        const char *s = vg_tensor_string(in, i, &len);
        if (!parse_num(s, len, dt, (uint8_t *)vg_tensor_data(out) + (size_t)i * es)) {
            char pb[300];
            return vg_status_set(st, VG_INVALID_ARGUMENT, "StringToNumberOp could not correctly convert string: %s",
                                 printable((const uint8_t *)s, len < 64 ? len : 64, pb, sizeof pb));
        }
    }
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* DecodeCSV */

static const vg_dtype k_csv_types[] = {VG_INT32, VG_INT64, VG_FLOAT, VG_DOUBLE, VG_STRING};

static vg_code shape_decode_csv(vg_op *op, vg_status *st) {
    vg_code rc = check_string_input(op, 0, -1, "records", st);
    if (rc != VG_OK) return rc;
    int n = vg_op_num_inputs(op) - 1;
    if (n < 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "DecodeCSV needs at least one record default");
    vg__op_set_num_outputs(op, n);
    for (int i = 0; i < n; i++) {
        vg_dtype dt = vg__op_input_dtype(op, 1 + i);
        if (!vg__dtype_in(dt, k_csv_types, 5))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "DecodeCSV: record_defaults[%d] has unsupported type %s", i,
                                 vg_dtype_name(dt));
        vg_shape s = vg__op_input_shape(op, 1 + i);
        if (s.ndims > 1 || (s.ndims == 1 && s.dims[0] > 1))
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "DecodeCSV: Shape of a default must be a length-0 or length-1 vector, or a scalar.");
        vg__op_set_output(op, i, dt, vg__op_input_shape(op, 0));
    }
    vg__op_set_default_attr_string(op, "field_delim", ",");
    vg__op_set_default_attr_bool(op, "use_quote_delim", true);
    vg__op_set_default_attr_string(op, "na_value", "");
    return VG_OK;
}

/* Splits one record into n fields; fields[i] is a fresh string (quotes resolved).
 * Returns VG_OK or INVALID_ARGUMENT naming the record. */
typedef struct csv_field {
    char *s;
    size_t len;
} csv_field;

static vg_code csv_split(const char *rec, size_t len, char delim, bool quotes, int64_t recno, csv_field *f, int n,
                         vg_status *st) {
    int k = 0;
    size_t i = 0;
    for (;;) {
        if (k == n) return vg_status_set(st, VG_INVALID_ARGUMENT, "Expect %d fields but have more than that in record %lld", n, (long long)recno);
        f[k].s = vg__malloc(len - (i < len ? i : len) + 1);
        if (!f[k].s) return VG_OOM(st, "CSV field");
        size_t o = 0;
        if (quotes && i < len && rec[i] == '"') {
            i++;
            for (;;) {
                if (i >= len)
                    return vg_status_set(st, VG_INVALID_ARGUMENT,
                                         "Quoted field has to end with quote followed by delim or end in record %lld",
                                         (long long)recno);
                if (rec[i] == '"') {
                    if (i + 1 < len && rec[i + 1] == '"') {
                        f[k].s[o++] = '"';
                        i += 2;
                        continue;
                    }
                    i++;
                    break;
                }
                f[k].s[o++] = rec[i++];
            }
            if (i < len && rec[i] != delim)
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "Quote inside a string has to be escaped by another quote in record %lld",
                                     (long long)recno);
        } else {
            while (i < len && rec[i] != delim) {
                if (quotes && rec[i] == '"')
                    return vg_status_set(st, VG_INVALID_ARGUMENT,
                                         "Unquoted fields cannot have quotes/CRLFs inside in record %lld",
                                         (long long)recno);
                f[k].s[o++] = rec[i++];
            }
        }
        f[k].s[o] = 0;
        f[k].len = o;
        k++;
        if (i >= len) break;
        i++; /* the delimiter: another field follows (possibly empty) */
        if (i == len) {
            if (k == n) return vg_status_set(st, VG_INVALID_ARGUMENT, "Expect %d fields but have %d in record %lld", n, k + 1, (long long)recno);
            if (!(f[k].s = vg__malloc(1))) return VG_OOM(st, "CSV field");
            f[k].s[0] = 0;
            f[k].len = 0;
            k++;
            break;
        }
    }
    if (k != n)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Expect %d fields but have %d in record %lld", n, k,
                             (long long)recno);
    return VG_OK;
}

static vg_code kernel_decode_csv(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    const vg_tensor *recs = vg__kctx_input(ctx, 0);
    int n = vg__kctx_num_inputs(ctx) - 1;
    const char *delim_s = ",", *na = "";
    size_t dl = 1, nal = 0;
    bool quotes = true;
    vg_op_attr_string(op, "field_delim", &delim_s, &dl);
    vg_op_attr_string(op, "na_value", &na, &nal);
    vg_op_attr_bool(op, "use_quote_delim", &quotes);
    if (dl != 1) return vg_status_set(st, VG_INVALID_ARGUMENT, "field_delim should be only 1 char");
    vg_tensor **outs = vg__calloc((size_t)n, sizeof *outs);
    csv_field *f = vg__calloc((size_t)n, sizeof *f);
    vg_code rc = outs && f ? VG_OK : VG_OOM(st, "DecodeCSV");
    for (int i = 0; i < n && rc == VG_OK; i++) {
        const vg_tensor *d = vg__kctx_input(ctx, 1 + i);
        if (vg_tensor_num_elements(d) > 1) {
            rc = vg_status_set(st, VG_INVALID_ARGUMENT, "Shape of a default must be a length-0 or length-1 vector, or a scalar.");
            break;
        }
        rc = vg__kctx_alloc_output(ctx, i, vg_tensor_dtype(d), vg_tensor_dims(recs), vg_tensor_ndims(recs), &outs[i]);
    }
    for (int64_t r = 0; r < vg_tensor_num_elements(recs) && rc == VG_OK; r++) {
        size_t len;
        const char *rec = vg_tensor_string(recs, r, &len);
        rc = csv_split(rec, len, delim_s[0], quotes, r, f, n, st);
        for (int i = 0; i < n && rc == VG_OK; i++) {
            const vg_tensor *d = vg__kctx_input(ctx, 1 + i);
            vg_dtype dt = vg_tensor_dtype(d);
            bool empty = f[i].len == 0 || (nal > 0 && f[i].len == nal && memcmp(f[i].s, na, nal) == 0);
            if (empty) {
                if (vg_tensor_num_elements(d) == 0) {
                    rc = vg_status_set(st, VG_INVALID_ARGUMENT, "Field %d is required but missing in record %lld!", i,
                                       (long long)r);
                    break;
                }
                rc = put_default(outs[i], r, d, 1, st);
                continue;
            }
            if (dt == VG_STRING) {
                rc = vg_tensor_set_string(outs[i], r, f[i].s, f[i].len, st);
            } else if (!parse_num(f[i].s, f[i].len, dt, (uint8_t *)vg_tensor_data(outs[i]) + (size_t)r * vg_dtype_size(dt))) {
                rc = vg_status_set(st, VG_INVALID_ARGUMENT, "Field %d in record %lld is not a valid %s: %s", i,
                                   (long long)r, vg_dtype_name(dt), f[i].s);
            }
        }
        for (int i = 0; i < n; i++) {
            vg__free(f[i].s);
            f[i].s = NULL;
        }
    }
    vg__free(outs);
    vg__free(f);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* builders */

static bool specs_ok(vg_graph *g, const char *what, const vg_feature_spec *specs, int n) {
    if (n < 0 || (n > 0 && !specs)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: bad feature specs", what);
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (!specs[i].key || !*specs[i].key || kind_of(specs[i].dtype) < 0) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: feature %d needs a key and dtype int64, float or string",
                               what, i);
            return false;
        }
        if (!specs[i].var_len && !vg_shape_is_fully_defined(&specs[i].shape)) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: FixedLenFeature '%s' needs a fully defined shape", what,
                               specs[i].key);
            return false;
        }
    }
    return true;
}

/* The dense default input: the given tensor, or an empty one (required). */
static vg_output dense_default(vg_graph *g, const vg_feature_spec *s) {
    if (s->default_value.op) return s->default_value;
    int64_t zero = 0;
    vg_status st;
    vg_tensor *t = vg_tensor_new(s->dtype, &zero, 1, &st);
    if (!t) {
        vg_graph_set_error(g, st.code, "%s", st.msg);
        return (vg_output){NULL, 0};
    }
    vg_output o = vg_const(g, t, "Const");
    vg_tensor_free(t);
    return o;
}

/* Splits specs into sparse and dense lists; fills the outputs. */
static vg_op *build_parse(vg_graph *g, bool single, vg_output serialized, vg_output names,
                          const vg_feature_spec *specs, int n, vg_output *dense, vg_sparse_output *sparse,
                          const char *name) {
    const char *what = single ? "parse_single_example" : "parse_example";
    if (!specs_ok(g, what, specs, n)) return NULL;
    int ns = 0, nd = 0;
    for (int i = 0; i < n; i++) specs[i].var_len ? ns++ : nd++;
    vg_dtype *stypes = vg__calloc((size_t)n + 1, sizeof(vg_dtype)), *dtypes = vg__calloc((size_t)n + 1, sizeof(vg_dtype));
    vg_shape *shapes = vg__calloc((size_t)n + 1, sizeof(vg_shape));
    const char **skeys = vg__calloc((size_t)n + 1, sizeof(char *)), **dkeys = vg__calloc((size_t)n + 1, sizeof(char *));
    vg_output *defs = vg__calloc((size_t)n + 1, sizeof(vg_output)), *keyc = vg__calloc((size_t)n + 1, sizeof(vg_output));
    vg_op *op = NULL;
    if (!stypes || !dtypes || !shapes || !skeys || !dkeys || !defs || !keyc) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "%s: out of memory", what);
        goto out;
    }
    int is = 0, id = 0;
    for (int i = 0; i < n; i++) {
        if (specs[i].var_len) {
            stypes[is] = specs[i].dtype;
            skeys[is++] = specs[i].key;
        } else {
            dtypes[id] = specs[i].dtype;
            shapes[id] = specs[i].shape;
            dkeys[id++] = specs[i].key;
        }
    }
    vg_graph_push_scope(g, single ? "ParseSingleExample" : "ParseExample");
    for (int i = 0, d = 0; i < n; i++)
        if (!specs[i].var_len) defs[d++] = dense_default(g, &specs[i]);
    if (!single) {
        for (int i = 0; i < ns; i++) keyc[i] = vg_const_string(g, skeys[i], "Const");
        for (int i = 0; i < nd; i++) keyc[ns + i] = vg_const_string(g, dkeys[i], "Const");
        if (!names.op) {
            int64_t zero = 0;
            vg_tensor *t = vg_tensor_new(VG_STRING, &zero, 1, NULL);
            names = t ? vg_const(g, t, "Const") : (vg_output){NULL, 0};
            vg_tensor_free(t);
        }
    }
    vg_graph_pop_scope(g);
    vg_op_builder *b = vg_op_builder_new(g, single ? "ParseSingleExample" : "ParseExample",
                                         name ? name : (single ? "ParseSingleExample/ParseSingleExample" : "ParseExample/ParseExample"));
    vg_op_builder_add_input(b, serialized);
    if (!single) {
        vg_op_builder_add_input(b, names);
        vg_op_builder_add_inputs(b, keyc, ns + nd);
        vg_op_builder_set_attr_int(b, "Nsparse", ns);
        vg_op_builder_set_attr_int(b, "Ndense", nd);
    } else {
        vg_op_builder_set_attr_int(b, "num_sparse", ns);
        vg_op_builder_set_attr_string_list(b, "sparse_keys", skeys, ns);
        vg_op_builder_set_attr_string_list(b, "dense_keys", dkeys, nd);
    }
    vg_op_builder_add_inputs(b, defs, nd);
    vg_op_builder_set_attr_type_list(b, "sparse_types", stypes, ns);
    vg_op_builder_set_attr_type_list(b, "Tdense", dtypes, nd);
    vg_op_builder_set_attr_shape_list(b, "dense_shapes", shapes, nd);
    op = vg_op_builder_finish(b);
    is = id = 0;
    for (int i = 0; i < n; i++) {
        if (specs[i].var_len) {
            if (dense) dense[i] = (vg_output){NULL, 0};
            if (sparse) {
                sparse[i].indices = vg_out(op, is);
                sparse[i].values = vg_out(op, ns + is);
                sparse[i].dense_shape = vg_out(op, 2 * ns + is);
            }
            is++;
        } else {
            if (sparse) sparse[i] = (vg_sparse_output){{NULL, 0}, {NULL, 0}, {NULL, 0}};
            if (dense) dense[i] = vg_out(op, 3 * ns + id);
            id++;
        }
    }
out:
    vg__free(stypes);
    vg__free(dtypes);
    vg__free(shapes);
    vg__free(skeys);
    vg__free(dkeys);
    vg__free(defs);
    vg__free(keyc);
    return op;
}

vg_op *vg_parse_example(vg_graph *g, vg_output serialized, vg_output names, const vg_feature_spec *specs, int n,
                        vg_output *dense, vg_sparse_output *sparse, const char *name) {
    return build_parse(g, false, serialized, names, specs, n, dense, sparse, name);
}

vg_op *vg_parse_single_example(vg_graph *g, vg_output serialized, const vg_feature_spec *specs, int n,
                               vg_output *dense, vg_sparse_output *sparse, const char *name) {
    return build_parse(g, true, serialized, (vg_output){NULL, 0}, specs, n, dense, sparse, name);
}

vg_output vg_decode_raw(vg_graph *g, vg_output bytes, vg_dtype out_type, bool little_endian, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "DecodeRaw", name, "DecodeRaw", (vg_output[]){bytes}, 1);
    vg_op_builder_set_attr_type(b, "out_type", out_type);
    vg_op_builder_set_attr_bool(b, "little_endian", little_endian);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_string_to_number(vg_graph *g, vg_output strings, vg_dtype out_type, const char *name) {
    vg_op_builder *b = vg__builder_with_inputs(g, "StringToNumber", name, "StringToNumber", (vg_output[]){strings}, 1);
    vg_op_builder_set_attr_type(b, "out_type", out_type);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_op *vg_decode_csv(vg_graph *g, vg_output records, const vg_output *record_defaults, int n, const char *field_delim,
                     bool use_quote_delim, const char *na_value, vg_output *outputs, const char *name) {
    if (n < 1 || !record_defaults) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "decode_csv needs at least one record default");
        return NULL;
    }
    vg_op_builder *b = vg__builder_with_inputs(g, "DecodeCSV", name, "DecodeCSV", (vg_output[]){records}, 1);
    vg_op_builder_add_inputs(b, record_defaults, n);
    vg_dtype *types = vg__malloc((size_t)n * sizeof *types); /* TFoS's MNIST CSV has 784 columns */
    for (int i = 0; types && i < n; i++)
        types[i] = record_defaults[i].op ? vg_output_dtype(record_defaults[i]) : VG_DTYPE_INVALID;
    if (types) vg_op_builder_set_attr_type_list(b, "OUT_TYPE", types, n);
    else vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "decode_csv: out of memory");
    vg__free(types);
    const char *fd = field_delim ? field_delim : ",", *na = na_value ? na_value : "";
    vg_op_builder_set_attr_string(b, "field_delim", fd, strlen(fd));
    vg_op_builder_set_attr_bool(b, "use_quote_delim", use_quote_delim);
    vg_op_builder_set_attr_string(b, "na_value", na, strlen(na));
    vg_op *op = vg_op_builder_finish(b);
    for (int i = 0; i < n && outputs; i++) outputs[i] = vg_out(op, i);
    return op;
}


/* ------------------------------------------------------------------------ */
/* ParseSingleSequenceExample */

typedef struct seq_cfg {
    parse_cfg ctx;                 /* context: as ParseSingleExample */
    int nfs, nfd;
    const vg_dtype *fs_types, *fd_types;
    const vg_shape *fd_shapes;
} seq_cfg;

static vg_code seq_types(const vg_op *op, seq_cfg *c, vg_status *st) {
    int64_t ncs = 0, ncd = 0, nfs = 0, nfd = 0;
    int a = 0, b = 0, d = 0, e = 0, f = 0, h = 0;
    vg_op_attr_int(op, "Ncontext_sparse", &ncs);
    vg_op_attr_int(op, "Ncontext_dense", &ncd);
    vg_op_attr_int(op, "Nfeature_list_sparse", &nfs);
    vg_op_attr_int(op, "Nfeature_list_dense", &nfd);
    if (!vg_op_attr_type_list(op, "context_sparse_types", &c->ctx.sparse_types, &a)) a = 0;
    if (!vg_op_attr_type_list(op, "Tcontext_dense", &c->ctx.dense_types, &b)) b = 0;
    if (!vg_op_attr_shape_list(op, "context_dense_shapes", &c->ctx.dense_shapes, &d)) d = 0;
    if (!vg_op_attr_type_list(op, "feature_list_sparse_types", &c->fs_types, &e)) e = 0;
    if (!vg_op_attr_type_list(op, "feature_list_dense_types", &c->fd_types, &f)) f = 0;
    if (!vg_op_attr_shape_list(op, "feature_list_dense_shapes", &c->fd_shapes, &h)) h = 0;
    if (a != ncs || b != ncd || d != ncd || e != nfs || f != nfd || h != nfd || ncs > 1024 || nfs > 1024)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "ParseSingleSequenceExample: inconsistent feature counts");
    c->ctx.nsparse = (int)ncs;
    c->ctx.ndense = (int)ncd;
    c->nfs = (int)nfs;
    c->nfd = (int)nfd;
    c->ctx.single = true;
    for (int i = 0; i < a; i++)
        if (kind_of(c->ctx.sparse_types[i]) < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "bad context sparse type");
    for (int i = 0; i < b; i++)
        if (kind_of(c->ctx.dense_types[i]) < 0 || !vg_shape_is_fully_defined(&c->ctx.dense_shapes[i]))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "bad context dense type or shape %d", i);
    for (int i = 0; i < e; i++)
        if (kind_of(c->fs_types[i]) < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "bad feature list sparse type");
    for (int i = 0; i < f; i++)
        if (kind_of(c->fd_types[i]) < 0 || !vg_shape_is_fully_defined(&c->fd_shapes[i]) ||
            c->fd_shapes[i].ndims + 1 > VG_MAX_DIMS)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "bad feature list dense type or shape %d", i);
    return VG_OK;
}

/* inputs: serialized, missing_assumed_empty, keys (ncs, ncd, nfs, nfd), context
 * defaults (ncd), debug_name */
static vg_code shape_parse_sequence(vg_op *op, vg_status *st) {
    seq_cfg c = {0};
    vg_code rc = seq_types(op, &c, st);
    if (rc != VG_OK) return rc;
    int nk = c.ctx.nsparse + c.ctx.ndense + c.nfs + c.nfd, want = 2 + nk + c.ctx.ndense + 1;
    if ((rc = vg__op_need_inputs(op, want, st)) != VG_OK) return rc;
    if ((rc = check_string_input(op, 0, 0, "serialized", st)) != VG_OK) return rc;
    if ((rc = check_string_input(op, 1, 1, "feature_list_dense_missing_assumed_empty", st)) != VG_OK) return rc;
    for (int i = 0; i < nk; i++)
        if ((rc = check_string_input(op, 2 + i, 0, "keys", st)) != VG_OK) return rc;
    for (int d = 0; d < c.ctx.ndense; d++)
        if (vg__op_input_dtype(op, 2 + nk + d) != c.ctx.dense_types[d])
            return vg_status_set(st, VG_INVALID_ARGUMENT, "context_dense_defaults[%d] must be %s", d,
                                 vg_dtype_name(c.ctx.dense_types[d]));
    int base = 3 * c.ctx.nsparse + c.ctx.ndense;
    set_parse_outputs(op, &c.ctx, -1, true, 3 * c.nfs + c.nfd);
    for (int s = 0; s < c.nfs; s++) {
        vg__op_set_output(op, base + s, VG_INT64, vg_shape_make((int64_t[]){-1, 2}, 2));
        vg__op_set_output(op, base + c.nfs + s, c.fs_types[s], vg_shape_make((int64_t[]){-1}, 1));
        vg__op_set_output(op, base + 2 * c.nfs + s, VG_INT64, vg_shape_make((int64_t[]){2}, 1));
    }
    for (int d = 0; d < c.nfd; d++) {
        vg_shape sh = c.fd_shapes[d];
        memmove(sh.dims + 1, sh.dims, sizeof(int64_t) * (size_t)sh.ndims);
        sh.dims[0] = -1;
        sh.ndims++;
        vg__op_set_output(op, base + 3 * c.nfs + d, c.fd_types[d], sh);
    }
    return VG_OK;
}

/* Copies one step's values (count checked by the caller) into out at element `at`. */
static vg_code put_values(const vg__feature *f, vg_tensor *out, int64_t at, int64_t n, vg_status *st) {
    int64_t got;
    vg_dtype dt = vg_tensor_dtype(out);
    if (dt == VG_INT64) return vg__feature_int64s(f, (int64_t *)vg_tensor_data(out) + at, n, &got, st);
    if (dt == VG_FLOAT) return vg__feature_floats(f, (float *)vg_tensor_data(out) + at, n, &got, st);
    vg__pb_reader r;
    const uint8_t *p;
    size_t len;
    vg_code rc = VG_OK;
    vg__pb_reader_init(&r, f->list, f->list_len);
    for (int64_t i = 0; i < n && rc == VG_OK; i++)
        if ((rc = vg__feature_bytes_next(&r, &p, &len, st)) == VG_OK)
            rc = vg_tensor_set_string(out, at + i, (const char *)p, len, st);
    return rc;
}

/* Counts the steps of a feature list and checks each step's kind; *total = values. */
static vg_code scan_steps(const vg__feature_list *fl, int want_kind, const char *name, const char *key, vg_dtype dt,
                          int64_t *steps, int64_t *total, int64_t *maxc, vg_status *st) {
    vg__pb_reader r;
    vg__feature f;
    vg_code rc;
    *steps = *total = *maxc = 0;
    vg__pb_reader_init(&r, fl->data, fl->len);
    while ((rc = vg__feature_list_next(&r, &f, st)) == VG_OK) {
        if (f.kind != want_kind && f.kind != VG__FEAT_NONE) return type_mismatch(st, name, key, f.kind, dt);
        int64_t n;
        if ((rc = vg__feature_count(&f, &n, st)) != VG_OK) return rc;
        (*steps)++;
        *total += n;
        if (n > *maxc) *maxc = n;
    }
    return rc == VG_OUT_OF_RANGE ? VG_OK : rc;
}

static vg_code kernel_parse_sequence(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    seq_cfg c = {0};
    vg_code rc = seq_types(op, &c, st);
    if (rc != VG_OK) return rc;
    int nk = c.ctx.nsparse + c.ctx.ndense + c.nfs + c.nfd;
    char **keys = vg__calloc((size_t)nk + 1, sizeof(char *));
    size_t *klen = vg__calloc((size_t)nk + 1, sizeof(size_t));
    vg_tensor **defs = vg__calloc((size_t)c.ctx.ndense + 1, sizeof(vg_tensor *));
    vg__seq_example se = {0};
    if (!keys || !klen || !defs) rc = VG_OOM(st, "ParseSingleSequenceExample");
    for (int i = 0; i < nk && rc == VG_OK; i++) {
        vg_tensor *t = vg__kctx_input(ctx, 2 + i);
        size_t len = 0;
        const char *p = vg_tensor_num_elements(t) == 1 ? vg_tensor_string(t, 0, &len) : NULL;
        if (!p) rc = vg_status_set(st, VG_INVALID_ARGUMENT, "key %d must be a string scalar", i);
        else if (!(keys[i] = vg__strndup(p, len))) rc = VG_OOM(st, "key");
        klen[i] = len;
    }
    char name[256] = "<unknown>";
    size_t nl;
    const char *dn = vg_tensor_string(vg__kctx_input(ctx, vg__kctx_num_inputs(ctx) - 1), 0, &nl);
    if (dn && nl) snprintf(name, sizeof name, "%.*s", (int)(nl < 255 ? nl : 255), dn);
    size_t rlen = 0;
    const char *rec = vg_tensor_string(vg__kctx_input(ctx, 0), 0, &rlen);
    if (rc == VG_OK && (rc = vg__seq_example_decode((const uint8_t *)rec, rlen, &se, st)) != VG_OK &&
        rc != VG_RESOURCE_EXHAUSTED)
        rc = bad_record((const uint8_t *)rec, rlen, 0, "sequence example", st);
    if (rc == VG_OK) {
        for (int d = 0; d < c.ctx.ndense; d++) defs[d] = vg__kctx_input(ctx, 2 + nk + d);
        c.ctx.sparse_keys = (const char **)keys;
        c.ctx.sparse_klen = klen;
        c.ctx.dense_keys = (const char **)keys + c.ctx.nsparse;
        c.ctx.dense_klen = klen + c.ctx.nsparse;
        c.ctx.defaults = defs;
        rc = run_parse_ex(ctx, &c.ctx, NULL, NULL, &se.context, name);
    }
    int base = 3 * c.ctx.nsparse + c.ctx.ndense, k0 = c.ctx.nsparse + c.ctx.ndense;
    const vg_tensor *missing_ok = vg__kctx_input(ctx, 1);
    for (int d = 0; d < c.nfd && rc == VG_OK; d++) {
        const char *key = keys[k0 + c.nfs + d];
        vg_dtype dt = c.fd_types[d];
        const vg__feature_list *fl = vg__seq_example_find(&se, key, klen[k0 + c.nfs + d]);
        int64_t steps = 0, total = 0, maxc = 0, n = vg_shape_num_elements(&c.fd_shapes[d]);
        if (!fl) {
            bool ok = false;
            for (int64_t i = 0; i < vg_tensor_num_elements(missing_ok) && !ok; i++) {
                size_t l;
                const char *m = vg_tensor_string(missing_ok, i, &l);
                ok = l == klen[k0 + c.nfs + d] && memcmp(m, key, l) == 0;
            }
            if (!ok) {
                rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                                   "Name: %s, Feature list '%s' is required but could not be found.  Did you mean to "
                                   "include it in feature_list_dense_missing_assumed_empty or "
                                   "feature_list_dense_defaults?",
                                   name, key);
                break;
            }
        } else if ((rc = scan_steps(fl, kind_of(dt), name, key, dt, &steps, &total, &maxc, st)) != VG_OK) {
            break;
        }
        int64_t dims[VG_MAX_DIMS];
        dims[0] = steps;
        memcpy(dims + 1, c.fd_shapes[d].dims, sizeof(int64_t) * (size_t)c.fd_shapes[d].ndims);
        vg_tensor *out;
        if ((rc = vg__kctx_alloc_output(ctx, base + 3 * c.nfs + d, dt, dims, c.fd_shapes[d].ndims + 1, &out)) != VG_OK)
            break;
        if (!fl) continue;
        vg__pb_reader r;
        vg__feature f;
        int64_t t = 0;
        vg__pb_reader_init(&r, fl->data, fl->len);
        while (rc == VG_OK && (rc = vg__feature_list_next(&r, &f, st)) == VG_OK) {
            int64_t cnt;
            if ((rc = vg__feature_count(&f, &cnt, st)) != VG_OK) break;
            if (cnt != n) {
                char sb[128];
                rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                                   "Name: %s, Key: %s, Index: %lld.  Number of %s values != expected.  values size: "
                                   "%lld but output shape: %s",
                                   name, key, (long long)t, vg_dtype_name(dt), (long long)cnt,
                                   vg_shape_str(&c.fd_shapes[d], sb, sizeof sb));
                break;
            }
            rc = put_values(&f, out, t * n, n, st);
            t++;
        }
        if (rc == VG_OUT_OF_RANGE) rc = VG_OK;
    }
    for (int sidx = 0; sidx < c.nfs && rc == VG_OK; sidx++) {
        const char *key = keys[k0 + sidx];
        vg_dtype dt = c.fs_types[sidx];
        const vg__feature_list *fl = vg__seq_example_find(&se, key, klen[k0 + sidx]);
        int64_t steps = 0, total = 0, maxc = 0;
        if (fl && (rc = scan_steps(fl, kind_of(dt), name, key, dt, &steps, &total, &maxc, st)) != VG_OK) break;
        vg_tensor *ind, *val, *shp;
        if ((rc = vg__kctx_alloc_output(ctx, base + sidx, VG_INT64, (int64_t[]){total, 2}, 2, &ind)) != VG_OK ||
            (rc = vg__kctx_alloc_output(ctx, base + c.nfs + sidx, dt, &total, 1, &val)) != VG_OK ||
            (rc = vg__kctx_alloc_output(ctx, base + 2 * c.nfs + sidx, VG_INT64, (int64_t[]){2}, 1, &shp)) != VG_OK)
            break;
        int64_t *sp = vg_tensor_data(shp), *ip = vg_tensor_data(ind);
        sp[0] = steps;
        sp[1] = maxc;
        if (!fl) continue;
        vg__pb_reader r;
        vg__feature f;
        int64_t t = 0, at = 0;
        vg__pb_reader_init(&r, fl->data, fl->len);
        while (rc == VG_OK && (rc = vg__feature_list_next(&r, &f, st)) == VG_OK) {
            int64_t cnt;
            if ((rc = vg__feature_count(&f, &cnt, st)) != VG_OK) break;
            for (int64_t j = 0; j < cnt; j++) {
                ip[2 * (at + j)] = t;
                ip[2 * (at + j) + 1] = j;
            }
            if (cnt) rc = put_values(&f, val, at, cnt, st);
            at += cnt;
            t++;
        }
        if (rc == VG_OUT_OF_RANGE) rc = VG_OK;
    }
    vg__seq_example_free(&se);
    if (keys)
        for (int i = 0; i < nk; i++) vg__free(keys[i]);
    vg__free(keys);
    vg__free(klen);
    vg__free(defs);
    return rc;
}

vg_op *vg_parse_single_sequence_example(vg_graph *g, vg_output serialized, const vg_feature_spec *context, int ncontext,
                                        const vg_sequence_feature_spec *sequence, int nsequence,
                                        vg_output *context_dense, vg_sparse_output *context_sparse,
                                        vg_output *sequence_dense, vg_sparse_output *sequence_sparse,
                                        const char *name) {
    if (!specs_ok(g, "parse_single_sequence_example", context, ncontext)) return NULL;
    if (nsequence < 0 || nsequence > 128 || ncontext > 128 || (nsequence > 0 && !sequence)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "parse_single_sequence_example: bad sequence specs");
        return NULL;
    }
    vg_dtype cst[128], cdt[128], fst[128], fdt[128];
    vg_shape cds[128], fds[128];
    const char *csk[128], *cdk[128], *fsk[128], *fdk[128], *missing[128];
    int ncs = 0, ncd = 0, nfs = 0, nfd = 0, nmiss = 0;
    vg_output defs[128];
    for (int i = 0; i < ncontext; i++) {
        if (context[i].var_len) {
            cst[ncs] = context[i].dtype, csk[ncs++] = context[i].key;
        } else {
            cdt[ncd] = context[i].dtype, cds[ncd] = context[i].shape, cdk[ncd] = context[i].key;
            defs[ncd++] = dense_default(g, &context[i]);
        }
    }
    for (int i = 0; i < nsequence; i++) {
        const vg_sequence_feature_spec *q = &sequence[i];
        if (!q->key || !*q->key || kind_of(q->dtype) < 0 || (!q->var_len && !vg_shape_is_fully_defined(&q->shape))) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                               "parse_single_sequence_example: sequence feature %d needs a key, dtype int64, float or "
                               "string and (FixedLenSequenceFeature) a fully defined shape",
                               i);
            return NULL;
        }
        if (q->var_len) {
            fst[nfs] = q->dtype, fsk[nfs++] = q->key;
        } else {
            fdt[nfd] = q->dtype, fds[nfd] = q->shape, fdk[nfd++] = q->key;
            if (q->allow_missing) missing[nmiss++] = q->key;
        }
    }
    vg_graph_push_scope(g, "ParseSingleSequenceExample");
    vg_output keyc[256];
    int nk = 0;
    for (int i = 0; i < ncs; i++) keyc[nk++] = vg_const_string(g, csk[i], "Const");
    for (int i = 0; i < ncd; i++) keyc[nk++] = vg_const_string(g, cdk[i], "Const");
    for (int i = 0; i < nfs; i++) keyc[nk++] = vg_const_string(g, fsk[i], "Const");
    for (int i = 0; i < nfd; i++) keyc[nk++] = vg_const_string(g, fdk[i], "Const");
    int64_t nm = nmiss;
    vg_status st;
    vg_tensor *mt = vg_tensor_new(VG_STRING, &nm, 1, &st);
    for (int i = 0; mt && i < nmiss; i++) vg_tensor_set_string(mt, i, missing[i], strlen(missing[i]), &st);
    vg_output miss = mt ? vg_const(g, mt, "feature_list_dense_missing_assumed_empty") : (vg_output){NULL, 0};
    vg_tensor_free(mt);
    vg_output debug = vg_const_string(g, "", "debug_name");
    vg_graph_pop_scope(g);
    vg_op_builder *b = vg_op_builder_new(g, "ParseSingleSequenceExample",
                                         name ? name : "ParseSingleSequenceExample/ParseSingleSequenceExample");
    vg_op_builder_add_input(b, serialized);
    vg_op_builder_add_input(b, miss);
    vg_op_builder_add_inputs(b, keyc, nk);
    vg_op_builder_add_inputs(b, defs, ncd);
    vg_op_builder_add_input(b, debug);
    vg_op_builder_set_attr_int(b, "Ncontext_sparse", ncs);
    vg_op_builder_set_attr_int(b, "Ncontext_dense", ncd);
    vg_op_builder_set_attr_int(b, "Nfeature_list_sparse", nfs);
    vg_op_builder_set_attr_int(b, "Nfeature_list_dense", nfd);
    vg_op_builder_set_attr_type_list(b, "context_sparse_types", cst, ncs);
    vg_op_builder_set_attr_type_list(b, "Tcontext_dense", cdt, ncd);
    vg_op_builder_set_attr_shape_list(b, "context_dense_shapes", cds, ncd);
    vg_op_builder_set_attr_type_list(b, "feature_list_sparse_types", fst, nfs);
    vg_op_builder_set_attr_type_list(b, "feature_list_dense_types", fdt, nfd);
    vg_op_builder_set_attr_shape_list(b, "feature_list_dense_shapes", fds, nfd);
    vg_op *op = vg_op_builder_finish(b);
    int base = 3 * ncs + ncd, is = 0, id = 0;
    for (int i = 0; i < ncontext; i++) {
        if (context[i].var_len) {
            if (context_sparse)
                context_sparse[i] = (vg_sparse_output){vg_out(op, is), vg_out(op, ncs + is), vg_out(op, 2 * ncs + is)};
            if (context_dense) context_dense[i] = (vg_output){NULL, 0};
            is++;
        } else {
            if (context_dense) context_dense[i] = vg_out(op, 3 * ncs + id);
            if (context_sparse) context_sparse[i] = (vg_sparse_output){{NULL, 0}, {NULL, 0}, {NULL, 0}};
            id++;
        }
    }
    is = id = 0;
    for (int i = 0; i < nsequence; i++) {
        if (sequence[i].var_len) {
            if (sequence_sparse)
                sequence_sparse[i] = (vg_sparse_output){vg_out(op, base + is), vg_out(op, base + nfs + is),
                                                        vg_out(op, base + 2 * nfs + is)};
            if (sequence_dense) sequence_dense[i] = (vg_output){NULL, 0};
            is++;
        } else {
            if (sequence_dense) sequence_dense[i] = vg_out(op, base + 3 * nfs + id);
            if (sequence_sparse) sequence_sparse[i] = (vg_sparse_output){{NULL, 0}, {NULL, 0}, {NULL, 0}};
            id++;
        }
    }
    return op;
}

/* ------------------------------------------------------------------------ */

const vg__op_def vg__ops_parsing[] = {
    {"ParseExample", 2, -1, PARSE_FLAGS, 0, shape_parse_example, kernel_parse_example, NULL},
    {"ParseExampleV2", 5, -1, PARSE_FLAGS, 0, shape_parse_example_v2, kernel_parse_example_v2, NULL},
    {"ParseSingleExample", 1, -1, PARSE_FLAGS, 0, shape_parse_single, kernel_parse_single, NULL},
    {"ParseSingleSequenceExample", 3, -1, PARSE_FLAGS, 0, shape_parse_sequence, kernel_parse_sequence, NULL},
    {"DecodeRaw", 1, 1, PARSE_FLAGS, 0, shape_decode_raw, kernel_decode_raw, NULL},
    {"StringToNumber", 1, 1, PARSE_FLAGS, 0, shape_string_to_number, kernel_string_to_number, NULL},
    {"DecodeCSV", 2, -1, PARSE_FLAGS, 0, shape_decode_csv, kernel_decode_csv, NULL},
    {0},
};
