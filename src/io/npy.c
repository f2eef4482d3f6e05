/*
 * npy.c - NumPy .npy files (vigil/npy.h), after numpy/lib/format.py (NumPy 1.24):
 * magic "\x93NUMPY", version (1,0) / (2,0) / (3,0), header length (<H in 1.0, <I
 * after), a dict literal with the keys descr, fortran_order and shape, padded to a
 * multiple of 64 bytes with spaces and a final newline; then the elements.
 *
 * The header parser accepts the Python literal forms NumPy itself writes and reads
 * (single or double quotes, any spacing, a trailing comma, 'True'/'False', 'L'
 * suffixes of Python 2 longs) and nothing else; headers longer than 1 MiB are rejected
 * (NumPy refuses more than 10000 bytes by default).
 */
#include "io/io.h"
#include "vigil/npy.h"
#include <stdio.h>

#define MAX_HEADER ((size_t)1 << 20)
#define GROWTH_AXIS_MAX_DIGITS 21 /* numpy.lib.format: header spare room */

static const uint8_t k_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

typedef struct hdr {
    char order;     /* '<', '>', '|', '=' */
    char kind;      /* 'f', 'i', 'u', 'b', 'S' */
    int64_t width;  /* bytes per element */
    bool fortran, have_descr, have_fortran, have_shape;
    int ndims;
    int64_t dims[VG_MAX_DIMS];
    char descr[32];
} hdr;

typedef struct lex {
    const char *p, *end, *name;
    vg_status *st;
} lex;

static vg_code bad(lex *l, const char *what) {
    return vg_status_set(l->st, VG_DATA_LOSS, "%s: bad .npy header: %s", l->name, what);
}

static void ws(lex *l) {
    while (l->p < l->end && (*l->p == ' ' || *l->p == '\t' || *l->p == '\n' || *l->p == '\r')) l->p++;
}

static bool eat(lex *l, char c) {
    ws(l);
    return vg__io_accept_char(&l->p, l->end, c);
}

/* A quoted string (no escapes: NumPy's keys and descrs have none) into buf. */
static vg_code qstring(lex *l, char *buf, size_t cap) {
    ws(l);
    if (l->p >= l->end || (*l->p != '\'' && *l->p != '"')) return bad(l, "expected a quoted string");
    char q = *l->p++;
    size_t n = 0;
    while (l->p < l->end && *l->p != q) {
        if (*l->p == '\\' || n + 1 >= cap) return bad(l, "string too long or escaped");
        buf[n++] = *l->p++;
    }
    if (l->p >= l->end) return bad(l, "unterminated string");
    l->p++;
    buf[n] = 0;
    return VG_OK;
}

static bool word(lex *l, const char *w) {
    ws(l);
    size_t n = strlen(w);
    if ((size_t)(l->end - l->p) >= n && memcmp(l->p, w, n) == 0) {
        l->p += n;
        return true;
    }
    return false;
}

static vg_code integer(lex *l, int64_t *v) {
    ws(l);
    int64_t x = 0;
    const char *s = l->p;
    while (l->p < l->end && *l->p >= '0' && *l->p <= '9') {
        if (x > (INT64_MAX - 9) / 10) return bad(l, "dimension too large");
        x = x * 10 + (*l->p++ - '0');
    }
    if (l->p == s) return bad(l, "expected a dimension");
    if (l->p < l->end && *l->p == 'L') l->p++;
    *v = x;
    return VG_OK;
}

static vg_code parse_descr(lex *l, hdr *h) {
    const char *d = h->descr;
    h->order = '=';
    if (*d == '<' || *d == '>' || *d == '|' || *d == '=') h->order = *d++;
    if (!*d) return bad(l, "empty descr");
    h->kind = *d++;
    int64_t w = *d ? 0 : -1;
    for (; *d; d++) {
        if (*d < '0' || *d > '9' || w > 1000000) {
            w = -1;
            break;
        }
        w = w * 10 + (*d - '0');
    }
    bool ok = ((h->kind == 'f' || h->kind == 'i') && (w == 4 || w == 8)) ||
              ((h->kind == 'u' || h->kind == 'b') && w == 1) || (h->kind == 'S' && w >= 0);
    if (!ok)
        return vg_status_set(l->st, VG_UNIMPLEMENTED, "%s: .npy element type '%s' is not supported (float32/64, "
                             "int32/64, uint8, bool and byte strings are)", l->name, h->descr);
    h->width = w;
    return VG_OK;
}

static vg_code parse_header(lex *l, hdr *h) {
    vg_code c;
    if (!eat(l, '{')) return bad(l, "expected '{'");
    for (;;) {
        if (eat(l, '}')) break;
        char key[32];
        if ((c = qstring(l, key, sizeof key))) return c;
        if (!eat(l, ':')) return bad(l, "expected ':'");
        if (!strcmp(key, "descr")) {
            ws(l);
            if (l->p < l->end && *l->p == '[') return vg_status_set(l->st, VG_UNIMPLEMENTED, "%s: structured .npy "
                                                                    "arrays are not supported", l->name);
            if ((c = qstring(l, h->descr, sizeof h->descr))) return c;
            if (h->have_descr) return bad(l, "descr twice");
            h->have_descr = true;
        } else if (!strcmp(key, "fortran_order")) {
            if (word(l, "True")) h->fortran = true;
            else if (word(l, "False")) h->fortran = false;
            else return bad(l, "fortran_order must be True or False");
            if (h->have_fortran) return bad(l, "fortran_order twice");
            h->have_fortran = true;
        } else if (!strcmp(key, "shape")) {
            if (h->have_shape) return bad(l, "shape twice");
            if (!eat(l, '(')) return bad(l, "shape must be a tuple");
            h->ndims = 0;
            while (!eat(l, ')')) {
                if (h->ndims == VG_MAX_DIMS)
                    return vg_status_set(l->st, VG_UNIMPLEMENTED, "%s: .npy array of rank above %d", l->name, VG_MAX_DIMS);
                if ((c = integer(l, &h->dims[h->ndims]))) return c;
                h->ndims++;
                if (eat(l, ')')) break;
                if (!eat(l, ',')) return bad(l, "expected ',' in shape");
            }
            h->have_shape = true;
        } else {
            return bad(l, "unknown key");
        }
        if (eat(l, '}')) break;
        if (!eat(l, ',')) return bad(l, "expected ','");
    }
    ws(l);
    if (l->p != l->end) return bad(l, "text after the dict");
    if (!h->have_descr || !h->have_fortran || !h->have_shape) return bad(l, "descr, fortran_order or shape missing");
    return parse_descr(l, h);
}

static vg_dtype dtype_of(const hdr *h) {
    switch (h->kind) {
    case 'f': return h->width == 4 ? VG_FLOAT : VG_DOUBLE;
    case 'i': return h->width == 4 ? VG_INT32 : VG_INT64;
    case 'u': return VG_UINT8;
    case 'b': return VG_BOOL;
    default: return VG_STRING;
    }
}

/* Row-major index e -> Fortran-order element offset. */
static int64_t fortran_offset(const hdr *h, int64_t e) {
    int64_t off = 0, stride = 1;
    int64_t idx[VG_MAX_DIMS];
    for (int d = h->ndims - 1; d >= 0; d--) {
        idx[d] = h->dims[d] ? e % h->dims[d] : 0;
        e = h->dims[d] ? e / h->dims[d] : 0;
    }
    for (int d = 0; d < h->ndims; d++) {
        off += idx[d] * stride;
        stride *= h->dims[d];
    }
    return off;
}

vg_tensor *vg_npy_parse(const void *bytes, size_t len, const char *name, vg_status *st) {
    const char *nm = name ? name : "npy";
    if (!bytes && len) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "vg_npy_parse: NULL bytes");
        return NULL;
    }
    const uint8_t *p = bytes;
    if (len < 10 || memcmp(p, k_magic, 6) != 0) {
        vg_status_set(st, VG_DATA_LOSS, "%s: not a .npy file (bad magic)", nm);
        return NULL;
    }
    int major = p[6];
    size_t hlen, off;
    if (major == 1) {
        hlen = (size_t)p[8] | (size_t)p[9] << 8;
        off = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12) {
            vg_status_set(st, VG_DATA_LOSS, "%s: truncated .npy header", nm);
            return NULL;
        }
        hlen = vg__get_le32(p + 8);
        off = 12;
    } else {
        vg_status_set(st, VG_DATA_LOSS, "%s: .npy format version %d.%d is not 1.0, 2.0 or 3.0", nm, p[6], p[7]);
        return NULL;
    }
    if (hlen > MAX_HEADER || hlen > len - off) {
        vg_status_set(st, VG_DATA_LOSS, "%s: .npy header of %zu bytes does not fit the %zu-byte file", nm, hlen, len);
        return NULL;
    }
    hdr h;
    memset(&h, 0, sizeof h);
    lex l = {(const char *)p + off, (const char *)p + off + hlen, nm, st};
    if (memchr(l.p, 0, hlen)) {
        vg_status_set(st, VG_DATA_LOSS, "%s: bad .npy header: NUL byte", nm);
        return NULL;
    }
    if (parse_header(&l, &h)) return NULL;
    /* sizes before any allocation */
    size_t data_off = off + hlen, avail = len - data_off;
    int64_t numel = 1;
    for (int d = 0; d < h.ndims; d++) {
        if (h.dims[d] != 0 && numel > INT64_MAX / h.dims[d]) {
            vg_status_set(st, VG_DATA_LOSS, "%s: .npy shape overflows", nm);
            return NULL;
        }
        numel *= h.dims[d];
    }
    if (h.width > 0 && (uint64_t)numel > avail / (uint64_t)h.width) {
        vg_status_set(st, VG_DATA_LOSS, "%s: .npy data holds %zu bytes, the shape needs %lld elements of %lld bytes", nm,
                      avail, (long long)numel, (long long)h.width);
        return NULL;
    }
    if (h.width == 0 && numel > (int64_t)avail + (1 << 20)) {
        /* zero-width strings take no bytes: still bound the element count */
        vg_status_set(st, VG_DATA_LOSS, "%s: .npy shape of %lld empty strings", nm, (long long)numel);
        return NULL;
    }
    vg_dtype dt = dtype_of(&h);
    vg_tensor *t = vg_tensor_new(dt, h.dims, h.ndims, st);
    if (!t) return NULL;
    const uint8_t *src = p + data_off;
    bool swap = h.order == '>' && h.width > 1;
    if (dt == VG_STRING) {
        for (int64_t e = 0; e < numel; e++) {
            const uint8_t *s = src + (h.fortran ? fortran_offset(&h, e) : e) * h.width;
            size_t n = (size_t)h.width;
            while (n > 0 && s[n - 1] == 0) n--;
            if (vg_tensor_set_string(t, e, (const char *)s, n, st)) {
                vg_tensor_free(t);
                return NULL;
            }
        }
    } else {
        uint8_t *dst = vg_tensor_data(t);
        size_t w = (size_t)h.width;
        if (!h.fortran && !swap && numel > 0) memcpy(dst, src, (size_t)numel * w);
        else
            for (int64_t e = 0; e < numel; e++) {
                const uint8_t *s = src + (size_t)(h.fortran ? fortran_offset(&h, e) : e) * w;
                uint8_t *o = dst + (size_t)e * w;
                for (size_t b = 0; b < w; b++) o[b] = swap ? s[w - 1 - b] : s[b];
            }
        if (dt == VG_BOOL)
            for (int64_t e = 0; e < numel; e++) dst[e] = dst[e] != 0;
    }
    vg_status_clear(st);
    return t;
}

static void *parse_npy(const void *bytes, size_t len, const char *name, vg_status *st) {
    return vg_npy_parse(bytes, len, name, st);
}

vg_tensor *vg_npy_read(const char *path, vg_status *st) {
    return vg__io_parse_path("vg_npy_read", path, parse_npy, st);
}

/* ------------------------------------------------------------------------ */
/* writing */

vg_code vg_npy_serialize(const vg_tensor *t, void **bytes, size_t *len, vg_status *st) {
    if (bytes) *bytes = NULL;
    if (len) *len = 0;
    if (!t || !bytes || !len) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_npy_serialize: NULL argument");
    vg_dtype dt = vg_tensor_dtype(t);
    const char *descr;
    char sdescr[32];
    int64_t numel = vg_tensor_num_elements(t);
    size_t width = 0;
    switch (dt) {
    case VG_FLOAT: descr = "<f4"; break;
    case VG_DOUBLE: descr = "<f8"; break;
    case VG_INT32: descr = "<i4"; break;
    case VG_INT64: descr = "<i8"; break;
    case VG_UINT8: descr = "|u1"; break;
    case VG_BOOL: descr = "|b1"; break;
    case VG_STRING:
        for (int64_t e = 0; e < numel; e++) {
            size_t n = 0;
            vg_tensor_string(t, e, &n);
            if (n > width) width = n;
        }
        if (width == 0) width = 1;
        snprintf(sdescr, sizeof sdescr, "|S%zu", width);
        descr = sdescr;
        break;
    default: return vg_status_set(st, VG_INVALID_ARGUMENT, "cannot write a %s tensor as .npy", vg_dtype_name(dt));
    }
    if (dt != VG_STRING) width = vg_dtype_size(dt);
    /* the header as numpy 1.24's _write_array_header: keys sorted, repr values, spare
     * room for the first axis to grow, padded so the data starts at a multiple of 64 */
    char shape[VG_MAX_DIMS * 24 + 8];
    int nd = vg_tensor_ndims(t), sp = 0;
    shape[sp++] = '(';
    for (int d = 0; d < nd; d++)
        sp += snprintf(shape + sp, sizeof shape - (size_t)sp, d ? ", %lld" : "%lld", (long long)vg_tensor_dim(t, d));
    if (nd == 1) shape[sp++] = ',';
    shape[sp++] = ')';
    shape[sp] = 0;
    char head[VG_MAX_DIMS * 24 + 160];
    int hn = snprintf(head, sizeof head, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
    if (nd > 0) {
        char first[24];
        int fl = snprintf(first, sizeof first, "%lld", (long long)vg_tensor_dim(t, 0));
        for (int i = fl; i < GROWTH_AXIS_MAX_DIGITS; i++) head[hn++] = ' ';
        head[hn] = 0;
    }
    size_t hlen = (size_t)hn + 1; /* + '\n' */
    int major = 1;
    size_t prefix = 10;
    size_t pad = 64 - ((prefix + hlen) % 64);
    if (hlen + pad > 65535) {
        major = 2;
        prefix = 12;
        pad = 64 - ((prefix + hlen) % 64);
    }
    if (numel > 0 && width > (SIZE_MAX - 4096) / (size_t)numel)
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "tensor too large for .npy");
    size_t dlen = (size_t)numel * width, total = prefix + hlen + pad + dlen;
    uint8_t *out = vg__malloc(total ? total : 1);
    if (!out) return VG_OOM(st, ".npy bytes");
    memcpy(out, k_magic, 6);
    out[6] = (uint8_t)major;
    out[7] = 0;
    size_t field = hlen + pad;
    if (major == 1) {
        out[8] = (uint8_t)(field & 0xff);
        out[9] = (uint8_t)(field >> 8);
    } else {
        vg__put_le32(out + 8, (uint32_t)field);
    }
    memcpy(out + prefix, head, (size_t)hn);
    memset(out + prefix + (size_t)hn, ' ', pad);
    out[prefix + (size_t)hn + pad] = '\n';
    uint8_t *d = out + prefix + hlen + pad;
    if (dt == VG_STRING) {
        memset(d, 0, dlen);
        for (int64_t e = 0; e < numel; e++) {
            size_t n = 0;
            const char *s = vg_tensor_string(t, e, &n);
            if (n) memcpy(d + (size_t)e * width, s, n);
        }
    } else if (dlen) {
        memcpy(d, vg_tensor_data(t), dlen);
    }
    *bytes = out;
    *len = total;
    vg_status_clear(st);
    return VG_OK;
}

vg_code vg_npy_write(const char *path, const vg_tensor *t, vg_status *st) {
    if (!path) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_npy_write: NULL path");
    void *b = NULL;
    size_t n = 0;
    vg_code c = vg_npy_serialize(t, &b, &n, st);
    if (!c) c = vg__io_write_file_atomic(path, b, n, st);
    vg__free(b);
    return c;
}
