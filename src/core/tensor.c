/*
 * tensor.c - reference-counted tensors. A tensor's struct and its data normally live
 * in one 64-byte-aligned block (one allocation per tensor); wrapped caller memory and
 * aliases (a view of another tensor's data with another shape) keep data elsewhere.
 */
#include "core.h"
#include "core/half.h"
#include "core/tensor_internal.h"
#include "vigil/tensor.h"
#include <stdatomic.h>
#include <stdio.h>

typedef struct vg__tstr {
    char *p;
    size_t n;
} vg__tstr;

struct vg_tensor {
    atomic_int refs;
    vg_dtype dtype;
    int ndims;
    bool small; /* the block came from vg__small_block_get */
    int64_t dims[VG_MAX_DIMS];
    int64_t n;
    size_t nbytes;
    void *data;
    vg_dealloc_fn dealloc; /* wrapped caller memory */
    void *payload;
    vg_tensor *base;       /* alias: data belongs to base */
};

#define HDR_SIZE ((sizeof(struct vg_tensor) + VG_TENSOR_ALIGN - 1) & ~(size_t)(VG_TENSOR_ALIGN - 1))
_Static_assert(HDR_SIZE < VG__SMALL_BLOCK, "a small tensor block holds the header and some data");

size_t vg_dtype_size(vg_dtype dt) {
    switch (dt) {
    case VG_FLOAT: case VG_INT32: return 4;
    case VG_DOUBLE: case VG_INT64: case VG_COMPLEX64: return 8;
    case VG_COMPLEX128: return 16;
    case VG_UINT8: case VG_BOOL: return 1;
    case VG_HALF: case VG_BFLOAT16: return 2;
    case VG_RESOURCE: return sizeof(void *);
    default: return 0;
    }
}

const char *vg_dtype_name(vg_dtype dt) {
    switch (dt) {
    case VG_FLOAT: return "float";
    case VG_DOUBLE: return "double";
    case VG_INT32: return "int32";
    case VG_UINT8: return "uint8";
    case VG_STRING: return "string";
    case VG_INT64: return "int64";
    case VG_BOOL: return "bool";
    case VG_HALF: return "half";
    case VG_BFLOAT16: return "bfloat16";
    case VG_COMPLEX64: return "complex64";
    case VG_COMPLEX128: return "complex128";
    case VG_RESOURCE: return "resource";
    default: return "invalid";
    }
}

float vg_half_to_float(uint16_t h) { return vg__half_to_float(h); }
uint16_t vg_float_to_half(float f) { return vg__float_to_half(f); }
float vg_bfloat16_to_float(uint16_t b) { return vg__bf16_to_float(b); }
uint16_t vg_float_to_bfloat16(float f) { return vg__float_to_bf16(f); }

vg_shape vg_shape_make(const int64_t *dims, int ndims) {
    vg_shape s;
    memset(&s, 0, sizeof s);
    if (ndims < 0) { s.ndims = -1; return s; }
    if (ndims > VG_MAX_DIMS) ndims = VG_MAX_DIMS;
    s.ndims = ndims;
    for (int i = 0; i < ndims; i++) s.dims[i] = dims ? dims[i] : -1;
    return s;
}

vg_shape vg_shape_unknown(void) { return vg_shape_make(NULL, -1); }

bool vg_shape_is_fully_defined(const vg_shape *s) {
    if (!s || s->ndims < 0) return false;
    for (int i = 0; i < s->ndims; i++)
        if (s->dims[i] < 0) return false;
    return true;
}

int64_t vg_shape_num_elements(const vg_shape *s) {
    if (!vg_shape_is_fully_defined(s)) return -1;
    int64_t n = 1;
    for (int i = 0; i < s->ndims; i++)
        if (s->dims[i] == 0) return 0;
    for (int i = 0; i < s->ndims; i++)
        if (__builtin_mul_overflow(n, s->dims[i], &n)) return -1; /* not representable: treated as unknown */
    return n;
}

char *vg_shape_str(const vg_shape *s, char *buf, size_t len) {
    if (!len || !buf) return buf;
    if (!s || s->ndims < 0) { snprintf(buf, len, "<unknown>"); return buf; }
    size_t o = 0;
    o += (size_t)snprintf(buf + o, len - o, "[");
    for (int i = 0; i < s->ndims && o < len; i++) {
        if (s->dims[i] < 0) o += (size_t)snprintf(buf + o, len - o, "%s?", i ? "," : "");
        else o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? "," : "", (long long)s->dims[i]);
    }
    if (o < len) snprintf(buf + o, len - o, "]");
    return buf;
}

static bool check_dims(vg_dtype dt, const int64_t *dims, int ndims, int64_t *n, vg_status *st) {
    if (dt != VG_STRING && vg_dtype_size(dt) == 0) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "invalid dtype %d", (int)dt);
        return false;
    }
    if (ndims < 0 || ndims > VG_MAX_DIMS) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "tensor rank %d out of range [0, %d]", ndims, VG_MAX_DIMS);
        return false;
    }
    if (ndims > 0 && !dims) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "dims is NULL for a tensor of rank %d", ndims);
        return false;
    }
    /* the non-zero dims must multiply to at most INT64_MAX even when another dim is 0
     * ([0, 2^62, 8]): kernels form strides and slice sizes from them (issue 29) */
    int64_t c = 1;
    bool zero = false;
    for (int i = 0; i < ndims; i++) {
        if (dims[i] < 0) {
            vg_status_set(st, VG_INVALID_ARGUMENT, "negative dimension %lld", (long long)dims[i]);
            return false;
        }
        if (dims[i] == 0) {
            zero = true;
            continue;
        }
        if (c > INT64_MAX / dims[i]) {
            vg_status_set(st, VG_INVALID_ARGUMENT, "tensor too large");
            return false;
        }
        c *= dims[i];
    }
    *n = zero ? 0 : c;
    return true;
}

/* A tensor block of total bytes (header first): a small block from the thread's list
 * when it fits, else one from the allocator. */
static vg_tensor *block_alloc(size_t total) {
    vg_tensor *t;
    if (total <= VG__SMALL_BLOCK && (t = vg__small_block_get())) {
        t->small = true;
        return t;
    }
    if ((t = vg__aligned_alloc(total, VG_TENSOR_ALIGN))) t->small = false;
    return t;
}

static void init_header(vg_tensor *t, vg_dtype dt, const int64_t *dims, int ndims, int64_t n) {
    atomic_init(&t->refs, 1);
    t->dtype = dt;
    t->ndims = ndims;
    for (int i = 0; i < ndims; i++) t->dims[i] = dims[i];
    t->n = n;
    t->dealloc = NULL;
    t->payload = NULL;
    t->base = NULL;
}

vg_tensor *vg_tensor_new(vg_dtype dt, const int64_t *dims, int ndims, vg_status *st) {
    int64_t n;
    if (!check_dims(dt, dims, ndims, &n, st)) return NULL;
    size_t esz = dt == VG_STRING ? sizeof(vg__tstr) : vg_dtype_size(dt);
    if ((uint64_t)n > (SIZE_MAX - HDR_SIZE) / (esz ? esz : 1)) {
        vg_status_set(st, VG_RESOURCE_EXHAUSTED, "tensor too large");
        return NULL;
    }
    size_t nbytes = (size_t)n * esz;
    vg_tensor *t = block_alloc(HDR_SIZE + nbytes);
    if (!t) {
        vg_status_set(st, VG_RESOURCE_EXHAUSTED, "OOM when allocating tensor of %zu bytes", nbytes);
        return NULL;
    }
    init_header(t, dt, dims, ndims, n);
    t->nbytes = nbytes;
    t->data = (char *)t + HDR_SIZE;
    if (dt == VG_STRING) memset(t->data, 0, nbytes);
    return t;
}

vg_tensor *vg_tensor_new_zeros(vg_dtype dt, const int64_t *dims, int ndims, vg_status *st) {
    vg_tensor *t = vg_tensor_new(dt, dims, ndims, st);
    if (t) memset(t->data, 0, t->nbytes);
    return t;
}

vg_tensor *vg_tensor_new_copy(vg_dtype dt, const int64_t *dims, int ndims, const void *data,
                              size_t len, vg_status *st) {
    if (dt == VG_STRING) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "vg_tensor_new_copy does not take string tensors");
        return NULL;
    }
    vg_tensor *t = vg_tensor_new(dt, dims, ndims, st);
    if (!t) return NULL;
    if (len != t->nbytes) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "data of %zu bytes for a tensor of %zu bytes", len, t->nbytes);
        vg_tensor_free(t);
        return NULL;
    }
    if (len && !data) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "data is NULL for %zu bytes", len);
        vg_tensor_free(t);
        return NULL;
    }
    if (len) memcpy(t->data, data, len);
    return t;
}

vg_tensor *vg_tensor_new_from(vg_dtype dt, const int64_t *dims, int ndims, void *data, size_t len,
                              vg_dealloc_fn dealloc, void *payload, vg_status *st) {
    int64_t n;
    if (dt == VG_STRING) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "cannot wrap caller memory as a string tensor");
        return NULL;
    }
    if (!check_dims(dt, dims, ndims, &n, st)) return NULL;
    if ((size_t)n * vg_dtype_size(dt) != len) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "data of %zu bytes for a tensor of %zu bytes", len,
                      (size_t)n * vg_dtype_size(dt));
        return NULL;
    }
    vg_tensor *t = block_alloc(HDR_SIZE);
    if (!t) { VG_OOM(st, "tensor"); return NULL; }
    init_header(t, dt, dims, ndims, n);
    t->nbytes = len;
    t->data = data;
    t->dealloc = dealloc;
    t->payload = payload;
    return t;
}

#define SCALAR_NEW(fn, dt, ctype) \
    vg_tensor *fn(ctype v, vg_status *st) { \
        vg_tensor *t = vg_tensor_new(dt, NULL, 0, st); \
        if (t) *(ctype *)t->data = v; \
        return t; \
    }
SCALAR_NEW(vg_tensor_new_scalar_f32, VG_FLOAT, float)
SCALAR_NEW(vg_tensor_new_scalar_i64, VG_INT64, int64_t)
SCALAR_NEW(vg_tensor_new_scalar_i32, VG_INT32, int32_t)
SCALAR_NEW(vg_tensor_new_scalar_bool, VG_BOOL, bool)

vg_tensor *vg_tensor_new_string_scalar(const char *s, size_t len, vg_status *st) {
    vg_tensor *t = vg_tensor_new(VG_STRING, NULL, 0, st);
    if (t && vg_tensor_set_string(t, 0, s, len, st) != VG_OK) {
        vg_tensor_free(t);
        return NULL;
    }
    return t;
}

vg_tensor *vg_tensor_ref(vg_tensor *t) {
    if (t) atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
    return t;
}

void vg_tensor_free(vg_tensor *t) {
    if (!t) return;
    if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1) return;
    if (t->base) {
        vg_tensor_free(t->base);
    } else if (t->dtype == VG_STRING) {
        vg__tstr *s = t->data;
        for (int64_t i = 0; i < t->n; i++) vg__free(s[i].p);
    } else if (t->dealloc) {
        t->dealloc(t->data, t->nbytes, t->payload);
    }
    if (t->small) vg__small_block_put(t);
    else vg__free(t);
}

int vg__tensor_refcount(const vg_tensor *t) {
    int r = atomic_load_explicit(&((vg_tensor *)t)->refs, memory_order_acquire);
    /* An alias shares its base's buffer: count the base's holders too. */
    if (t->base) r += vg__tensor_refcount(t->base) - 1;
    return r;
}

vg_tensor *vg__tensor_alias(vg_tensor *t, const int64_t *dims, int ndims, vg_status *st) {
    int64_t n;
    if (!check_dims(t->dtype, dims, ndims, &n, st)) return NULL;
    if (n != t->n) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "alias of %lld elements as %lld", (long long)t->n, (long long)n);
        return NULL;
    }
    vg_tensor *a = block_alloc(HDR_SIZE);
    if (!a) { VG_OOM(st, "tensor"); return NULL; }
    init_header(a, t->dtype, dims, ndims, n);
    a->nbytes = t->nbytes;
    a->data = t->data;
    a->base = vg_tensor_ref(t->base ? t->base : t);
    return a;
}

vg_tensor *vg_tensor_copy(const vg_tensor *t, vg_status *st) {
    if (!t) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "tensor is NULL");
        return NULL;
    }
    if (t->dtype != VG_STRING) { /* t is valid already: no checks (session fetches copy small tensors often) */
        vg_tensor *c = block_alloc(HDR_SIZE + t->nbytes);
        if (!c) {
            vg_status_set(st, VG_RESOURCE_EXHAUSTED, "OOM when allocating tensor of %zu bytes", t->nbytes);
            return NULL;
        }
        init_header(c, t->dtype, t->dims, t->ndims, t->n);
        c->nbytes = t->nbytes;
        c->data = (char *)c + HDR_SIZE;
        if (t->nbytes) memcpy(c->data, t->data, t->nbytes);
        return c;
    }
    vg_tensor *c = vg_tensor_new(t->dtype, t->dims, t->ndims, st);
    if (!c) return NULL;
    const vg__tstr *s = t->data;
    for (int64_t i = 0; i < t->n; i++) {
        if (vg_tensor_set_string(c, i, s[i].p, s[i].n, st) != VG_OK) {
            vg_tensor_free(c);
            return NULL;
        }
    }
    return c;
}

/* Accessors: a NULL tensor reads as an invalid, empty one (no crash). */
vg_dtype vg_tensor_dtype(const vg_tensor *t) { return t ? t->dtype : VG_DTYPE_INVALID; }
int vg_tensor_ndims(const vg_tensor *t) { return t ? t->ndims : -1; }
int64_t vg_tensor_dim(const vg_tensor *t, int i) { return (t && i >= 0 && i < t->ndims) ? t->dims[i] : -1; }
const int64_t *vg_tensor_dims(const vg_tensor *t) { return t ? t->dims : NULL; }
vg_shape vg_tensor_shape(const vg_tensor *t) { return t ? vg_shape_make(t->dims, t->ndims) : vg_shape_unknown(); }
int64_t vg_tensor_num_elements(const vg_tensor *t) { return t ? t->n : 0; }
size_t vg_tensor_nbytes(const vg_tensor *t) { return t ? t->nbytes : 0; }
void *vg_tensor_data(const vg_tensor *t) { return t ? t->data : NULL; }

const char *vg_tensor_string(const vg_tensor *t, int64_t i, size_t *len) {
    if (!t || t->dtype != VG_STRING || i < 0 || i >= t->n) return NULL;
    const vg__tstr *s = (const vg__tstr *)t->data + i;
    if (len) *len = s->n;
    return s->p ? s->p : "";
}

vg_code vg_tensor_set_string(vg_tensor *t, int64_t i, const char *s, size_t len, vg_status *st) {
    if (!t || t->dtype != VG_STRING || i < 0 || i >= t->n)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "string element %lld out of range", (long long)i);
    if (len && !s) return vg_status_set(st, VG_INVALID_ARGUMENT, "string is NULL with length %zu", len);
    char *p = vg__malloc(len + 1);
    if (!p) return VG_OOM(st, "string");
    if (len) memcpy(p, s, len);
    p[len] = 0;
    vg__tstr *e = (vg__tstr *)t->data + i;
    vg__free(e->p);
    e->p = p;
    e->n = len;
    return VG_OK;
}

double vg_tensor_scalar(const vg_tensor *t) {
    if (!t || t->n < 1) return 0;
    switch (t->dtype) {
    case VG_FLOAT: return ((const float *)t->data)[0];
    case VG_DOUBLE: return ((const double *)t->data)[0];
    case VG_INT32: return ((const int32_t *)t->data)[0];
    case VG_INT64: return (double)((const int64_t *)t->data)[0];
    case VG_UINT8: return ((const uint8_t *)t->data)[0];
    case VG_BOOL: return ((const bool *)t->data)[0];
    case VG_HALF: return vg__half_to_float(((const uint16_t *)t->data)[0]);
    case VG_BFLOAT16: return vg__bf16_to_float(((const uint16_t *)t->data)[0]);
    case VG_COMPLEX64: return ((const float *)t->data)[0];   /* the real part */
    case VG_COMPLEX128: return ((const double *)t->data)[0]; /* the real part */
    default: return 0;
    }
}
