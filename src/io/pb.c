/*
 * pb.c - protobuf wire format: a growable writer and a field iterator.
 *
 * Hand-written on purpose: vigil reads and writes a handful of small messages (bundle
 * header/entry, Event, Summary, HistogramProto, GraphDef pieces) and must produce
 * exactly the bytes TF's serializer does (field order, proto3 omissions, packed
 * repeats). protobuf-c would add a code generator, a runtime dependency and generated
 * sources for little gain, and would still need care to match TF's bytes.
 */
#include "io/io.h"

void vg__pb_init(vg__pb_buf *b) {
    b->data = NULL;
    b->len = b->cap = 0;
    b->oom = false;
}

void vg__pb_free(vg__pb_buf *b) {
    vg__free(b->data);
    vg__pb_init(b);
}

void vg__pb_reset(vg__pb_buf *b) { b->len = 0; }

bool vg__pb_reserve(vg__pb_buf *b, size_t extra) {
    if (b->oom) return false;
    if (extra <= b->cap - b->len) return true;
    if (extra > SIZE_MAX / 2 - b->len) {
        b->oom = true;
        return false;
    }
    size_t nc = b->cap ? b->cap : 64;
    while (nc - b->len < extra) nc *= 2;
    uint8_t *n = vg__realloc(b->data, b->len, nc);
    if (!n) {
        b->oom = true;
        return false;
    }
    b->data = n;
    b->cap = nc;
    return true;
}

vg_code vg__pb_buf_status(const vg__pb_buf *b, const char *what, vg_status *st) {
    if (b->oom) return VG_OOM(st, what);
    return VG_OK;
}

void vg__pb_put_raw(vg__pb_buf *b, const void *p, size_t n) {
    if (!n || !vg__pb_reserve(b, n)) return;
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

int vg__pb_encode_varint(uint8_t *out, uint64_t v) {
    int n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

int vg__pb_varint_size(uint64_t v) {
    int n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

void vg__pb_put_varint(vg__pb_buf *b, uint64_t v) {
    uint8_t tmp[10];
    vg__pb_put_raw(b, tmp, (size_t)vg__pb_encode_varint(tmp, v));
}

void vg__pb_put_fixed32(vg__pb_buf *b, uint32_t v) {
    uint8_t tmp[4];
    vg__put_le32(tmp, v);
    vg__pb_put_raw(b, tmp, 4);
}

void vg__pb_put_fixed64(vg__pb_buf *b, uint64_t v) {
    uint8_t tmp[8];
    vg__put_le64(tmp, v);
    vg__pb_put_raw(b, tmp, 8);
}

void vg__pb_put_tag(vg__pb_buf *b, int field, int wiretype) {
    vg__pb_put_varint(b, ((uint64_t)(uint32_t)field << 3) | (uint64_t)wiretype);
}

void vg__pb_put_uint64(vg__pb_buf *b, int field, uint64_t v) {
    vg__pb_put_tag(b, field, VG__PB_VARINT);
    vg__pb_put_varint(b, v);
}

void vg__pb_put_int64(vg__pb_buf *b, int field, int64_t v) { vg__pb_put_uint64(b, field, (uint64_t)v); }

/* int32 negatives are sign-extended to 64 bits (10-byte varints), as protobuf does. */
void vg__pb_put_int32(vg__pb_buf *b, int field, int32_t v) { vg__pb_put_uint64(b, field, (uint64_t)(int64_t)v); }

void vg__pb_put_bool(vg__pb_buf *b, int field, bool v) { vg__pb_put_uint64(b, field, v ? 1 : 0); }

void vg__pb_put_fixed32_field(vg__pb_buf *b, int field, uint32_t v) {
    vg__pb_put_tag(b, field, VG__PB_FIXED32);
    vg__pb_put_fixed32(b, v);
}

void vg__pb_put_fixed64_field(vg__pb_buf *b, int field, uint64_t v) {
    vg__pb_put_tag(b, field, VG__PB_FIXED64);
    vg__pb_put_fixed64(b, v);
}

void vg__pb_put_float(vg__pb_buf *b, int field, float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    vg__pb_put_fixed32_field(b, field, u);
}

void vg__pb_put_double(vg__pb_buf *b, int field, double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    vg__pb_put_fixed64_field(b, field, u);
}

void vg__pb_put_bytes(vg__pb_buf *b, int field, const void *p, size_t n) {
    vg__pb_put_tag(b, field, VG__PB_LEN);
    vg__pb_put_varint(b, n);
    vg__pb_put_raw(b, p, n);
}

void vg__pb_put_string(vg__pb_buf *b, int field, const char *s) {
    vg__pb_put_bytes(b, field, s ? s : "", s ? strlen(s) : 0);
}

void vg__pb_put_message(vg__pb_buf *b, int field, const vg__pb_buf *sub) {
    if (sub->oom) b->oom = true;
    vg__pb_put_bytes(b, field, sub->data, sub->len);
}

void vg__pb_put_packed_double(vg__pb_buf *b, int field, const double *v, size_t n) {
    if (!n) return;
    vg__pb_put_tag(b, field, VG__PB_LEN);
    vg__pb_put_varint(b, (uint64_t)n * 8);
    if (!vg__pb_reserve(b, n * 8)) return;
    for (size_t i = 0; i < n; i++) {
        uint64_t u;
        memcpy(&u, &v[i], 8);
        vg__put_le64(b->data + b->len + i * 8, u);
    }
    b->len += n * 8;
}

/* ---- reader ---- */

void vg__pb_reader_init(vg__pb_reader *r, const void *p, size_t n) {
    r->p = p;
    r->end = r->p + n;
}

bool vg__pb_get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *v) {
    const uint8_t *p = *pp;
    uint64_t x = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (p >= end) return false;
        uint8_t c = *p++;
        x |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *pp = p;
            *v = x;
            return true;
        }
    }
    return false; /* more than 10 bytes */
}

static vg_code malformed(vg_status *st, const char *what) {
    return vg_status_set(st, VG_DATA_LOSS, "malformed protobuf: %s", what);
}

static vg_code read_value(vg__pb_reader *r, vg__pb_field *f, vg_status *st);

/* Skips a group whose start key for `number` has been read; nested groups too. */
static vg_code skip_group(vg__pb_reader *r, int number, int depth, vg_status *st) {
    if (depth > 64) return malformed(st, "groups nested too deeply");
    for (;;) {
        uint64_t key;
        if (!vg__pb_get_varint(&r->p, r->end, &key)) return malformed(st, "unterminated group");
        int wt = (int)(key & 7), num = (int)(key >> 3);
        if (wt == VG__PB_EGROUP) {
            if (num != number) return malformed(st, "mismatched end group");
            return VG_OK;
        }
        if (wt == VG__PB_SGROUP) {
            vg_code c = skip_group(r, num, depth + 1, st);
            if (c) return c;
            continue;
        }
        vg__pb_field f = {.number = num, .wiretype = wt};
        vg_code c = read_value(r, &f, st);
        if (c) return c;
    }
}

static vg_code read_value(vg__pb_reader *r, vg__pb_field *f, vg_status *st) {
    switch (f->wiretype) {
    case VG__PB_VARINT:
        if (!vg__pb_get_varint(&r->p, r->end, &f->u)) return malformed(st, "truncated varint");
        return VG_OK;
    case VG__PB_FIXED64:
        if (r->end - r->p < 8) return malformed(st, "truncated fixed64");
        f->u = vg__get_le64(r->p);
        r->p += 8;
        return VG_OK;
    case VG__PB_FIXED32:
        if (r->end - r->p < 4) return malformed(st, "truncated fixed32");
        f->u = vg__get_le32(r->p);
        r->p += 4;
        return VG_OK;
    case VG__PB_LEN: {
        uint64_t n;
        if (!vg__pb_get_varint(&r->p, r->end, &n)) return malformed(st, "truncated length");
        if (n > (uint64_t)(r->end - r->p)) return malformed(st, "length past the end");
        f->data = r->p;
        f->len = (size_t)n;
        r->p += n;
        return VG_OK;
    }
    default:
        return malformed(st, "bad wire type");
    }
}

vg_code vg__pb_next(vg__pb_reader *r, vg__pb_field *f, vg_status *st) {
    for (;;) {
        if (r->p >= r->end) return VG_OUT_OF_RANGE;
        uint64_t key;
        if (!vg__pb_get_varint(&r->p, r->end, &key)) return malformed(st, "truncated key");
        if ((key >> 3) == 0 || (key >> 3) > 0x1fffffff) return malformed(st, "bad field number");
        f->number = (int)(key >> 3);
        f->wiretype = (int)(key & 7);
        f->u = 0;
        f->data = NULL;
        f->len = 0;
        if (f->wiretype == VG__PB_SGROUP) {
            vg_code c = skip_group(r, f->number, 0, st);
            if (c) return c;
            continue;
        }
        if (f->wiretype == VG__PB_EGROUP) return malformed(st, "unexpected end group");
        return read_value(r, f, st);
    }
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

const char *vg__io_pbtxt_unescape(const char **p, const char *end, bool upper_x, vg__pb_buf *out) {
    static const char from[] = "nrtabfv\\'\"?", to[] = "\n\r\t\a\b\f\v\\'\"?";
    const char *q = *p;
    if (q >= end) return "unterminated escape";
    char c = *q++;
    const char *k = c ? strchr(from, c) : NULL;
    unsigned v;
    if (k) {
        v = (unsigned char)to[k - from];
    } else if (c >= '0' && c <= '7') {
        v = (unsigned)(c - '0');
        for (int i = 0; i < 2 && q < end && *q >= '0' && *q <= '7'; i++) v = v * 8 + (unsigned)(*q++ - '0');
        if (v > 255) return "octal escape out of range";
    } else if (c == 'x' || (upper_x && c == 'X')) {
        int nd = 0;
        v = 0;
        while (nd < 2 && q < end && hexval(*q) >= 0) v = v * 16 + (unsigned)hexval(*q++), nd++;
        if (!nd) return "bad \\x escape";
    } else {
        return "unknown escape";
    }
    uint8_t b = (uint8_t)v;
    vg__pb_put_raw(out, &b, 1);
    *p = q;
    return NULL;
}
