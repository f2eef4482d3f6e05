/*
 * example.c - tf.train.Example and SequenceExample: the decoder used by the parsing
 * ops (example_io.h) and the public builders of vigil/example.h.
 *
 * Encoding follows the C++ serializer: fields in field-number order, packed repeats
 * for Int64List and FloatList (nothing for an empty list), map entries as messages
 * {key = 1, value = 2}, features in insertion order.
 */
#include "io/example_io.h"
#include "vigil/example.h"

/* ------------------------------------------------------------------------ */
/* decoding */

void vg__features_free(vg__features *fs) {
    vg__free(fs->v);
    fs->v = NULL;
    fs->n = fs->cap = 0;
}

static vg_code bad(vg_status *st, const char *what) {
    return vg_status_set(st, VG_DATA_LOSS, "malformed %s", what);
}

vg_code vg__feature_decode(const uint8_t *p, size_t n, vg__feature *f, vg_status *st) {
    vg__pb_reader r;
    vg__pb_field fd;
    vg_code rc;
    f->kind = VG__FEAT_NONE;
    f->list = NULL;
    f->list_len = 0;
    vg__pb_reader_init(&r, p, n);
    while ((rc = vg__pb_next(&r, &fd, st)) == VG_OK) {
        if (fd.number >= 1 && fd.number <= 3) {
            if (fd.wiretype != VG__PB_LEN) return bad(st, "Feature");
            f->kind = fd.number; /* oneof: the last one wins */
            f->list = fd.data;
            f->list_len = fd.len;
        }
    }
    return rc == VG_OUT_OF_RANGE ? VG_OK : rc;
}

/* A map entry {key = 1 (string), value = 2 (message)}. */
static vg_code map_entry(const uint8_t *p, size_t n, const uint8_t **key, size_t *klen, const uint8_t **val,
                         size_t *vlen, vg_status *st) {
    vg__pb_reader r;
    vg__pb_field fd;
    vg_code rc;
    *key = *val = (const uint8_t *)"";
    *klen = *vlen = 0;
    vg__pb_reader_init(&r, p, n);
    while ((rc = vg__pb_next(&r, &fd, st)) == VG_OK) {
        if (fd.number != 1 && fd.number != 2) continue;
        if (fd.wiretype != VG__PB_LEN) return bad(st, "map entry");
        if (fd.number == 1) *key = fd.data, *klen = fd.len;
        else *val = fd.data, *vlen = fd.len;
    }
    return rc == VG_OUT_OF_RANGE ? VG_OK : rc;
}

vg_code vg__features_decode(const uint8_t *p, size_t n, vg__features *fs, vg_status *st) {
    vg__pb_reader r;
    vg__pb_field fd;
    vg_code rc;
    vg__pb_reader_init(&r, p, n);
    while ((rc = vg__pb_next(&r, &fd, st)) == VG_OK) {
        if (fd.number != 1) continue;
        if (fd.wiretype != VG__PB_LEN) return bad(st, "Features");
        vg__feature f;
        const uint8_t *val;
        size_t vlen;
        if ((rc = map_entry(fd.data, fd.len, &f.key, &f.klen, &val, &vlen, st)) != VG_OK) return rc;
        if ((rc = vg__feature_decode(val, vlen, &f, st)) != VG_OK) return rc;
        if (!vg__io_grow((void **)&fs->v, &fs->cap, fs->n + 1, 16, sizeof *fs->v)) return VG_OOM(st, "Example features");
        fs->v[fs->n++] = f;
    }
    return rc == VG_OUT_OF_RANGE ? VG_OK : rc;
}

/* The fast path of vg__example_decode: the C++ serializer's layout only (every field a
 * one-byte tag of a length-delimited field 1 / 2 / 3 where the schema has one, lengths
 * of at most 5 varint bytes that fit). Returns 1 when it decoded the whole record
 * (exactly as the general decoder would), 0 when the record has anything else (the
 * general decoder then starts over: it accepts more, and words the errors), -1 on OOM. */
static inline bool fast_len(const uint8_t **p, const uint8_t *end, size_t *len) {
    const uint8_t *q = *p;
    uint64_t v = 0;
    for (int i = 0; i < 5 && q < end; i++) {
        uint8_t b = *q++;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            if (v > (uint64_t)(end - q)) return false;
            *p = q;
            *len = (size_t)v;
            return true;
        }
    }
    return false;
}

static int fast_example(const uint8_t *p, size_t n, vg__features *fs, vg_status *st) {
    const uint8_t *end = p + n;
    while (p < end) {
        size_t flen;
        if (*p++ != 0x0a || !fast_len(&p, end, &flen)) return 0; /* Example.features */
        const uint8_t *fend = p + flen;
        while (p < fend) {
            size_t elen;
            if (*p++ != 0x0a || !fast_len(&p, fend, &elen)) return 0; /* Features.feature entry */
            const uint8_t *eend = p + elen, *val = (const uint8_t *)"";
            size_t vlen = 0;
            vg__feature f = {(const uint8_t *)"", 0, VG__FEAT_NONE, NULL, 0};
            while (p < eend) {
                uint8_t tag = *p++;
                size_t l;
                if ((tag != 0x0a && tag != 0x12) || !fast_len(&p, eend, &l)) return 0;
                if (tag == 0x0a) f.key = p, f.klen = l;
                else val = p, vlen = l;
                p += l;
            }
            for (const uint8_t *q = val, *vend = val + vlen; q < vend;) { /* Feature: the oneof */
                uint8_t tag = *q++;
                size_t l;
                if ((tag != 0x0a && tag != 0x12 && tag != 0x1a) || !fast_len(&q, vend, &l)) return 0;
                f.kind = tag >> 3;
                f.list = q;
                f.list_len = l;
                q += l;
            }
            if (!vg__io_grow((void **)&fs->v, &fs->cap, fs->n + 1, 16, sizeof *fs->v)) {
                VG_OOM(st, "Example features");
                return -1;
            }
            fs->v[fs->n++] = f;
        }
    }
    return 1;
}

vg_code vg__example_decode(const uint8_t *p, size_t n, vg__features *fs, vg_status *st) {
    fs->n = 0;
    int fast = fast_example(p, n, fs, st);
    if (fast > 0) return VG_OK;
    if (fast < 0) return st->code;
    return vg__example_decode_general(p, n, fs, st);
}

vg_code vg__example_decode_general(const uint8_t *p, size_t n, vg__features *fs, vg_status *st) {
    vg__pb_reader r;
    vg__pb_field fd;
    vg_code rc;
    fs->n = 0;
    vg__pb_reader_init(&r, p, n);
    while ((rc = vg__pb_next(&r, &fd, st)) == VG_OK) {
        if (fd.number != 1) continue;
        if (fd.wiretype != VG__PB_LEN) return bad(st, "Example");
        /* a repeated occurrence of a message field merges: the maps concatenate */
        if ((rc = vg__features_decode(fd.data, fd.len, fs, st)) != VG_OK) return rc;
    }
    return rc == VG_OUT_OF_RANGE ? VG_OK : rc;
}

const vg__feature *vg__features_find(const vg__features *fs, const char *key, size_t klen) {
    for (size_t i = fs->n; i-- > 0;)
        if (fs->v[i].klen == klen && memcmp(fs->v[i].key, key, klen) == 0) return &fs->v[i];
    return NULL;
}

/* Counts (and optionally copies) the values of a numeric list: packed runs and single
 * values may be mixed. */
static vg_code numeric_values(const vg__feature *f, bool is_float, void *dst, int64_t max, int64_t *got,
                              vg_status *st) {
    vg__pb_reader r;
    vg__pb_field fd;
    vg_code rc;
    int64_t k = 0;
    vg__pb_reader_init(&r, f->list, f->list_len);
    while ((rc = vg__pb_next(&r, &fd, st)) == VG_OK) {
        if (fd.number != 1) continue;
        if (fd.wiretype == VG__PB_LEN) {
            const uint8_t *q = fd.data, *end = fd.data + fd.len;
            if (is_float) {
                if (fd.len % 4) return bad(st, "FloatList");
                for (; q < end; q += 4, k++)
                    if (dst && k < max) {
                        uint32_t u = vg__get_le32(q);
                        memcpy((float *)dst + k, &u, 4);
                    }
            } else {
                while (q < end) {
                    uint64_t v;
                    if (!vg__pb_get_varint(&q, end, &v)) return bad(st, "Int64List");
                    if (dst && k < max) ((int64_t *)dst)[k] = (int64_t)v;
                    k++;
                }
            }
        } else if (is_float && fd.wiretype == VG__PB_FIXED32) {
            if (dst && k < max) {
                float x = vg__pb_as_float(&fd);
                ((float *)dst)[k] = x;
            }
            k++;
        } else if (!is_float && fd.wiretype == VG__PB_VARINT) {
            if (dst && k < max) ((int64_t *)dst)[k] = (int64_t)fd.u;
            k++;
        } else {
            return bad(st, is_float ? "FloatList" : "Int64List");
        }
    }
    if (rc != VG_OUT_OF_RANGE) return rc;
    *got = dst && k > max ? max : k;
    return VG_OK;
}

vg_code vg__feature_count(const vg__feature *f, int64_t *n, vg_status *st) {
    *n = 0;
    if (f->kind == VG__FEAT_FLOAT || f->kind == VG__FEAT_INT64)
        return numeric_values(f, f->kind == VG__FEAT_FLOAT, NULL, 0, n, st);
    if (f->kind != VG__FEAT_BYTES) return VG_OK;
    vg__pb_reader r;
    const uint8_t *p;
    size_t len;
    vg_code rc;
    vg__pb_reader_init(&r, f->list, f->list_len);
    while ((rc = vg__feature_bytes_next(&r, &p, &len, st)) == VG_OK) (*n)++;
    return rc == VG_OUT_OF_RANGE ? VG_OK : rc;
}

vg_code vg__feature_int64s(const vg__feature *f, int64_t *dst, int64_t max, int64_t *got, vg_status *st) {
    return numeric_values(f, false, dst, max, got, st);
}

vg_code vg__feature_floats(const vg__feature *f, float *dst, int64_t max, int64_t *got, vg_status *st) {
    return numeric_values(f, true, dst, max, got, st);
}

vg_code vg__feature_bytes_next(vg__pb_reader *r, const uint8_t **p, size_t *len, vg_status *st) {
    vg__pb_field fd;
    vg_code rc;
    while ((rc = vg__pb_next(r, &fd, st)) == VG_OK) {
        if (fd.number != 1) continue;
        if (fd.wiretype != VG__PB_LEN) return bad(st, "BytesList");
        *p = fd.data;
        *len = fd.len;
        return VG_OK;
    }
    return rc;
}

void vg__seq_example_free(vg__seq_example *se) {
    vg__features_free(&se->context);
    vg__free(se->lists);
    memset(se, 0, sizeof *se);
}

vg_code vg__seq_example_decode(const uint8_t *p, size_t n, vg__seq_example *se, vg_status *st) {
    vg__pb_reader r, r2;
    vg__pb_field fd, fd2;
    vg_code rc;
    se->context.n = 0;
    se->nlists = 0;
    vg__pb_reader_init(&r, p, n);
    while ((rc = vg__pb_next(&r, &fd, st)) == VG_OK) {
        if (fd.number != 1 && fd.number != 2) continue;
        if (fd.wiretype != VG__PB_LEN) return bad(st, "SequenceExample");
        if (fd.number == 1) {
            if ((rc = vg__features_decode(fd.data, fd.len, &se->context, st)) != VG_OK) return rc;
            continue;
        }
        vg__pb_reader_init(&r2, fd.data, fd.len);
        while ((rc = vg__pb_next(&r2, &fd2, st)) == VG_OK) {
            if (fd2.number != 1) continue;
            if (fd2.wiretype != VG__PB_LEN) return bad(st, "FeatureLists");
            vg__feature_list fl;
            if ((rc = map_entry(fd2.data, fd2.len, &fl.key, &fl.klen, &fl.data, &fl.len, st)) != VG_OK) return rc;
            if (!vg__io_grow((void **)&se->lists, &se->cap, se->nlists + 1, 8, sizeof *se->lists))
                return VG_OOM(st, "SequenceExample feature lists");
            se->lists[se->nlists++] = fl;
        }
        if (rc != VG_OUT_OF_RANGE) return rc;
    }
    return rc == VG_OUT_OF_RANGE ? VG_OK : rc;
}

const vg__feature_list *vg__seq_example_find(const vg__seq_example *se, const char *key, size_t klen) {
    for (size_t i = se->nlists; i-- > 0;)
        if (se->lists[i].klen == klen && memcmp(se->lists[i].key, key, klen) == 0) return &se->lists[i];
    return NULL;
}

vg_code vg__feature_list_next(vg__pb_reader *r, vg__feature *f, vg_status *st) {
    vg__pb_field fd;
    vg_code rc;
    while ((rc = vg__pb_next(r, &fd, st)) == VG_OK) {
        if (fd.number != 1) continue;
        if (fd.wiretype != VG__PB_LEN) return bad(st, "FeatureList");
        return vg__feature_decode(fd.data, fd.len, f, st);
    }
    return rc;
}

/* ------------------------------------------------------------------------ */
/* building */

/* One feature (or one step of a feature list): its kind and the encoded list message. */
typedef struct built_feature {
    char *key;
    int kind;
    vg__pb_buf list;  /* Features: the Feature message; lists: the FeatureList message */
} built_feature;

struct vg_example {
    built_feature *f;
    size_t n, cap;
    vg__pb_buf out;
};

struct vg_sequence_example {
    vg_example context;
    built_feature *lists; /* list: the concatenated "feature" entries of a FeatureList */
    size_t nlists, cap;
    vg__pb_buf out;
};

vg_example *vg_example_new(void) { return vg__calloc(1, sizeof(vg_example)); }

static void example_release(vg_example *ex) {
    for (size_t i = 0; i < ex->n; i++) {
        vg__free(ex->f[i].key);
        vg__pb_free(&ex->f[i].list);
    }
    vg__free(ex->f);
    vg__pb_free(&ex->out);
}

void vg_example_free(vg_example *ex) {
    if (!ex) return;
    example_release(ex);
    vg__free(ex);
}

void vg_example_clear(vg_example *ex) {
    if (!ex) return;
    for (size_t i = 0; i < ex->n; i++) {
        vg__free(ex->f[i].key);
        vg__pb_free(&ex->f[i].list);
    }
    ex->n = 0;
}

/* Encodes a Feature message of the given kind into b. */
static void encode_feature(vg__pb_buf *b, int kind, const void *v, const size_t *lens, size_t n) {
    vg__pb_buf list;
    vg__pb_init(&list);
    if (kind == VG__FEAT_BYTES) {
        const char *const *s = v;
        for (size_t i = 0; i < n; i++) vg__pb_put_bytes(&list, 1, s[i], lens[i]);
    } else if (n > 0) {
        size_t plen = 0;
        if (kind == VG__FEAT_FLOAT) {
            plen = 4 * n;
        } else {
            for (size_t i = 0; i < n; i++) plen += (size_t)vg__pb_varint_size((uint64_t)((const int64_t *)v)[i]);
        }
        vg__pb_put_tag(&list, 1, VG__PB_LEN);
        vg__pb_put_varint(&list, plen);
        if (kind == VG__FEAT_FLOAT) {
            for (size_t i = 0; i < n; i++) {
                uint32_t u;
                memcpy(&u, (const float *)v + i, 4);
                vg__pb_put_fixed32(&list, u);
            }
        } else {
            for (size_t i = 0; i < n; i++) vg__pb_put_varint(&list, (uint64_t)((const int64_t *)v)[i]);
        }
    }
    vg__pb_put_message(b, kind, &list);
    vg__pb_free(&list);
}

static vg_code check_args(const char *key, const void *v, size_t n, vg_status *st) {
    if (!key || !*key) return vg_status_set(st, VG_INVALID_ARGUMENT, "feature key must be a non-empty string");
    if (!v && n > 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "feature '%s': NULL values with n = %zu", key, n);
    return VG_OK;
}

static vg_code example_add(vg_example *ex, const char *key, int kind, const void *v, const size_t *lens, size_t n,
                           vg_status *st) {
    if (!ex) return vg_status_set(st, VG_INVALID_ARGUMENT, "NULL example");
    vg_code rc = check_args(key, v, n, st);
    if (rc != VG_OK) return rc;
    if (kind == VG__FEAT_BYTES && n > 0 && !lens)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "feature '%s': NULL lengths", key);
    for (size_t i = 0; i < ex->n; i++)
        if (strcmp(ex->f[i].key, key) == 0)
            return vg_status_set(st, VG_ALREADY_EXISTS, "feature '%s' was already added", key);
    if (!vg__io_grow((void **)&ex->f, &ex->cap, ex->n + 1, 8, sizeof *ex->f)) return VG_OOM(st, "example feature");
    built_feature *f = &ex->f[ex->n];
    f->kind = kind;
    vg__pb_init(&f->list);
    if (!(f->key = vg__strdup(key))) return VG_OOM(st, "example feature key");
    encode_feature(&f->list, kind, v, lens, n);
    if (f->list.oom) {
        vg__free(f->key);
        vg__pb_free(&f->list);
        return VG_OOM(st, "example feature");
    }
    ex->n++;
    return VG_OK;
}

vg_code vg_example_add_int64(vg_example *ex, const char *key, const int64_t *v, size_t n, vg_status *st) {
    return example_add(ex, key, VG__FEAT_INT64, v, NULL, n, st);
}
vg_code vg_example_add_float(vg_example *ex, const char *key, const float *v, size_t n, vg_status *st) {
    return example_add(ex, key, VG__FEAT_FLOAT, v, NULL, n, st);
}
vg_code vg_example_add_bytes(vg_example *ex, const char *key, const char *const *v, const size_t *lens, size_t n,
                             vg_status *st) {
    return example_add(ex, key, VG__FEAT_BYTES, v, lens, n, st);
}

/* Map entries {key, value} of a Features / FeatureLists message into b. */
static void encode_map(vg__pb_buf *b, const built_feature *f, size_t n) {
    vg__pb_buf entry;
    vg__pb_init(&entry);
    for (size_t i = 0; i < n; i++) {
        vg__pb_reset(&entry);
        vg__pb_put_string(&entry, 1, f[i].key);
        vg__pb_put_message(&entry, 2, &f[i].list);
        vg__pb_put_message(b, 1, &entry);
    }
    if (entry.oom) b->oom = true;
    vg__pb_free(&entry);
}

const void *vg_example_serialize(vg_example *ex, size_t *len, vg_status *st) {
    if (!ex || !len) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "NULL example or length");
        return NULL;
    }
    vg__pb_buf feats;
    vg__pb_init(&feats);
    encode_map(&feats, ex->f, ex->n);
    vg__pb_reset(&ex->out);
    ex->out.oom = false;
    vg__pb_put_message(&ex->out, 1, &feats);
    vg__pb_free(&feats);
    if (vg__pb_buf_status(&ex->out, "serialized Example", st) != VG_OK) return NULL;
    *len = ex->out.len;
    return ex->out.data ? (const void *)ex->out.data : (const void *)"";
}

vg_sequence_example *vg_sequence_example_new(void) { return vg__calloc(1, sizeof(vg_sequence_example)); }

void vg_sequence_example_free(vg_sequence_example *se) {
    if (!se) return;
    example_release(&se->context);
    for (size_t i = 0; i < se->nlists; i++) {
        vg__free(se->lists[i].key);
        vg__pb_free(&se->lists[i].list);
    }
    vg__free(se->lists);
    vg__pb_free(&se->out);
    vg__free(se);
}

vg_example *vg_sequence_example_context(vg_sequence_example *se) { return se ? &se->context : NULL; }

static vg_code seq_append(vg_sequence_example *se, const char *key, int kind, const void *v, const size_t *lens,
                          size_t n, vg_status *st) {
    if (!se) return vg_status_set(st, VG_INVALID_ARGUMENT, "NULL sequence example");
    vg_code rc = check_args(key, v, n, st);
    if (rc != VG_OK) return rc;
    if (kind == VG__FEAT_BYTES && n > 0 && !lens)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "feature list '%s': NULL lengths", key);
    built_feature *f = NULL;
    for (size_t i = 0; i < se->nlists && !f; i++)
        if (strcmp(se->lists[i].key, key) == 0) f = &se->lists[i];
    if (f && f->kind != kind)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "feature list '%s' holds another kind of feature", key);
    if (!f) {
        if (!vg__io_grow((void **)&se->lists, &se->cap, se->nlists + 1, 8, sizeof *se->lists))
            return VG_OOM(st, "feature list");
        f = &se->lists[se->nlists];
        f->kind = kind;
        vg__pb_init(&f->list);
        if (!(f->key = vg__strdup(key))) return VG_OOM(st, "feature list key");
        se->nlists++;
    }
    vg__pb_buf feat;
    vg__pb_init(&feat);
    encode_feature(&feat, kind, v, lens, n);
    size_t before = f->list.len;
    vg__pb_put_message(&f->list, 1, &feat);
    vg__pb_free(&feat);
    if (f->list.oom) {
        f->list.len = before;
        f->list.oom = false;
        return VG_OOM(st, "feature list step");
    }
    return VG_OK;
}

vg_code vg_sequence_example_append_int64(vg_sequence_example *se, const char *key, const int64_t *v, size_t n,
                                         vg_status *st) {
    return seq_append(se, key, VG__FEAT_INT64, v, NULL, n, st);
}
vg_code vg_sequence_example_append_float(vg_sequence_example *se, const char *key, const float *v, size_t n,
                                         vg_status *st) {
    return seq_append(se, key, VG__FEAT_FLOAT, v, NULL, n, st);
}
vg_code vg_sequence_example_append_bytes(vg_sequence_example *se, const char *key, const char *const *v,
                                         const size_t *lens, size_t n, vg_status *st) {
    return seq_append(se, key, VG__FEAT_BYTES, v, lens, n, st);
}

const void *vg_sequence_example_serialize(vg_sequence_example *se, size_t *len, vg_status *st) {
    if (!se || !len) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "NULL sequence example or length");
        return NULL;
    }
    vg__pb_buf sub;
    vg__pb_init(&sub);
    vg__pb_reset(&se->out);
    se->out.oom = false;
    if (se->context.n > 0) {
        encode_map(&sub, se->context.f, se->context.n);
        vg__pb_put_message(&se->out, 1, &sub);
    }
    if (se->nlists > 0) {
        vg__pb_reset(&sub);
        encode_map(&sub, se->lists, se->nlists);
        vg__pb_put_message(&se->out, 2, &sub);
    }
    if (sub.oom) se->out.oom = true;
    vg__pb_free(&sub);
    if (vg__pb_buf_status(&se->out, "serialized SequenceExample", st) != VG_OK) return NULL;
    *len = se->out.len;
    return se->out.data ? (const void *)se->out.data : (const void *)"";
}
