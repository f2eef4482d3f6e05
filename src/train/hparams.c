/*
 * hparams.c - tf.contrib.training.HParams (vigil/hparams.h), after TF 1.15's
 * tensorflow/contrib/training/python/training/hparam.py: parse_values' clause grammar
 * (PARAM_RE), _process_scalar_value / _process_list_value, _cast_to_type_if_compatible,
 * set_hparam, override_from_dict, to_json (json.dumps of values()).
 *
 * The grammar of one clause, as PARAM_RE:
 *   name [ '[' ws digits ws ']' ] ws '=' ws ( val | '[' vals ']' ) ( end | ',' ws )
 * where name is [A-Za-z][A-Za-z0-9_.]*, val is any run of characters other than ',' and
 * '[', vals any run other than ']' (split on spaces and commas, empty pieces dropped).
 * Python's conversions are reproduced by hand: int() (base 10, surrounding whitespace,
 * '_' between digits), float() (decimal forms, inf/infinity/nan), and repr(float) for
 * the JSON output (the shortest string that reads back to the same double; exponent form
 * below 1e-4 and from 1e16). The JSON reader takes what json.loads takes for an object
 * of scalars and arrays of scalars (NaN, Infinity and -Infinity included).
 */
#include "train_util.h"
#include "vigil/hparams.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct hval {
    vg_hparam_type type;
    bool is_list;
    int n;
    int64_t *i;
    double *f;
    bool *b;
    char **s;
} hval;

typedef struct param {
    char *name;
    hval v;
} param;

struct vg_hparams {
    param *p;
    int n, cap;
};

/* A Python value as parse / json.loads produce it. */
typedef enum { PV_INT, PV_FLOAT, PV_BOOL, PV_STR, PV_NONE } pv_kind;
typedef struct pyval {
    pv_kind k;
    int64_t i;
    double f;
    bool b;
    char *s; /* owned by the pyval */
} pyval;

static void hval_clear(hval *v) {
    if (v->s)
        for (int k = 0; k < v->n; k++) vg_free(v->s[k]);
    vg_free(v->i);
    vg_free(v->f);
    vg_free(v->b);
    vg_free(v->s);
    memset(v, 0, sizeof *v);
}

/* An hval of type t with room for n elements (at least 1 allocated). */
static bool hval_alloc(hval *v, vg_hparam_type t, bool is_list, int n) {
    memset(v, 0, sizeof *v);
    v->type = t;
    v->is_list = is_list;
    v->n = n;
    size_t m = (size_t)(n > 0 ? n : 1);
    switch (t) {
    case VG_HPARAM_INT: v->i = vg_malloc(m * sizeof *v->i); return v->i != NULL;
    case VG_HPARAM_FLOAT: v->f = vg_malloc(m * sizeof *v->f); return v->f != NULL;
    case VG_HPARAM_BOOL: v->b = vg_malloc(m * sizeof *v->b); return v->b != NULL;
    case VG_HPARAM_STRING: v->s = vg_calloc(m, sizeof *v->s); return v->s != NULL;
    }
    return false;
}

vg_hparams *vg_hparams_new(void) { return vg_calloc(1, sizeof(vg_hparams)); }

void vg_hparams_free(vg_hparams *hp) {
    if (!hp) return;
    for (int k = 0; k < hp->n; k++) {
        vg_free(hp->p[k].name);
        hval_clear(&hp->p[k].v);
    }
    vg_free(hp->p);
    vg_free(hp);
}

static int find(const vg_hparams *hp, const char *name) {
    if (!hp || !name) return -1;
    for (int k = 0; k < hp->n; k++)
        if (strcmp(hp->p[k].name, name) == 0) return k;
    return -1;
}

static const char *type_name(vg_hparam_type t) {
    switch (t) {
    case VG_HPARAM_INT: return "int";
    case VG_HPARAM_FLOAT: return "float";
    case VG_HPARAM_BOOL: return "bool";
    case VG_HPARAM_STRING: return "str";
    }
    return "?";
}

/* ------------------------------------------------------------------------ */
/* Python's float repr and JSON strings */

typedef vg__train_buf sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) { vg__train_buf_put(b, s, n); }

static void sb_puts(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_printf(sbuf *b, const char *fmt, ...) {
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) sb_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* repr(x) for a finite or infinite double (json: NaN/Infinity spellings). */
static void float_repr(double x, bool json, char *out, size_t len) {
    if (isnan(x)) {
        snprintf(out, len, "%s", json ? "NaN" : "nan");
        return;
    }
    if (isinf(x)) {
        snprintf(out, len, "%s%s", x < 0 ? "-" : "", json ? "Infinity" : "inf");
        return;
    }
    char tmp[48];
    for (int p = 1; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, x);
        if (strtod(tmp, NULL) == x) break;
    }
    /* tmp: [-]d[.ddd]e(+|-)XX */
    const char *q = tmp;
    bool neg = *q == '-';
    if (neg) q++;
    char digits[24];
    int nd = 0;
    for (; *q && *q != 'e'; q++)
        if (isdigit((unsigned char)*q) && nd < 20) digits[nd++] = *q;
    int exp = *q == 'e' ? atoi(q + 1) : 0;
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = 0;
    size_t o = 0;
    char *w = out;
#define PUT(c) do { if (o + 1 < len) w[o++] = (c); } while (0)
    if (neg) PUT('-');
    if (exp >= -4 && exp < 16) {
        if (exp >= 0) {
            for (int k = 0; k <= exp; k++) PUT(k < nd ? digits[k] : '0');
            PUT('.');
            if (nd > exp + 1)
                for (int k = exp + 1; k < nd; k++) PUT(digits[k]);
            else
                PUT('0');
        } else {
            PUT('0');
            PUT('.');
            for (int k = 0; k < -exp - 1; k++) PUT('0');
            for (int k = 0; k < nd; k++) PUT(digits[k]);
        }
        w[o] = 0;
    } else {
        PUT(digits[0]);
        if (nd > 1) {
            PUT('.');
            for (int k = 1; k < nd; k++) PUT(digits[k]);
        }
        w[o] = 0;
        snprintf(w + o, len - o, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    }
#undef PUT
}

/* The next code point of a UTF-8 string (U+FFFD for a bad byte). */
static uint32_t utf8_next(const unsigned char **s) {
    const unsigned char *p = *s;
    uint32_t c = p[0];
    int extra = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : -1;
    if (extra < 0) {
        *s = p + 1;
        return 0xFFFD;
    }
    c &= extra == 0 ? 0x7F : extra == 1 ? 0x1F : extra == 2 ? 0x0F : 0x07;
    for (int k = 1; k <= extra; k++) {
        if ((p[k] & 0xC0) != 0x80) {
            *s = p + k;
            return 0xFFFD;
        }
        c = (c << 6) | (p[k] & 0x3F);
    }
    /* overlong forms (0xC0 0x80 would be a NUL), surrogates and code points past U+10FFFF
     * are not UTF-8 either: one replacement character for the lead byte */
    static const uint32_t min[4] = {0, 0x80, 0x800, 0x10000};
    if (c < min[extra] || (c >= 0xD800 && c < 0xE000) || c > 0x10FFFF) {
        *s = p + 1;
        return 0xFFFD;
    }
    *s = p + 1 + extra;
    return c;
}

/* json.dumps(s) with ensure_ascii. */
static void json_string(sbuf *b, const char *s) {
    sb_puts(b, "\"");
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        uint32_t c = utf8_next(&p);
        switch (c) {
        case '"': sb_puts(b, "\\\""); break;
        case '\\': sb_puts(b, "\\\\"); break;
        case '\n': sb_puts(b, "\\n"); break;
        case '\r': sb_puts(b, "\\r"); break;
        case '\t': sb_puts(b, "\\t"); break;
        case '\b': sb_puts(b, "\\b"); break;
        case '\f': sb_puts(b, "\\f"); break;
        default:
            if (c < 0x20 || (c > 0x7E && c < 0x10000 && c != 0x7F)) {
                sb_printf(b, "\\u%04x", c);
            } else if (c >= 0x10000) {
                uint32_t v = c - 0x10000;
                sb_printf(b, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
            } else {
                char ch = (char)c;
                sb_put(b, &ch, 1);
            }
        }
    }
    sb_puts(b, "\"");
}

/* repr() of a Python value, for messages. */
static void pyval_repr(const pyval *v, char *out, size_t len) {
    switch (v->k) {
    case PV_INT: snprintf(out, len, "%lld", (long long)v->i); break;
    case PV_FLOAT: float_repr(v->f, false, out, len); break;
    case PV_BOOL: snprintf(out, len, "%s", v->b ? "True" : "False"); break;
    case PV_STR: snprintf(out, len, "'%s'", v->s ? v->s : ""); break;
    case PV_NONE: snprintf(out, len, "None"); break;
    }
}

/* ------------------------------------------------------------------------ */
/* _cast_to_type_if_compatible */

static vg_code cast_into(const char *name, vg_hparam_type t, const pyval *v, hval *dst, int k, vg_status *st) {
    bool ok = true;
    switch (t) {
    case VG_HPARAM_STRING: ok = v->k == PV_STR; break;
    case VG_HPARAM_BOOL: ok = v->k == PV_BOOL; break;
    case VG_HPARAM_INT: ok = v->k == PV_INT; break;
    case VG_HPARAM_FLOAT: ok = v->k == PV_INT || v->k == PV_FLOAT; break;
    }
    if (!ok) {
        char r[256];
        pyval_repr(v, r, sizeof r);
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Could not cast hparam '%s' of type '<class '%s'>' from value %s",
                             name, type_name(t), r);
    }
    switch (t) {
    case VG_HPARAM_STRING:
        if (!(dst->s[k] = vg__train_strdup(v->s))) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in hparams");
        break;
    case VG_HPARAM_BOOL: dst->b[k] = v->b; break;
    case VG_HPARAM_INT: dst->i[k] = v->i; break;
    case VG_HPARAM_FLOAT: dst->f[k] = v->k == PV_INT ? (double)v->i : v->f; break;
    }
    return VG_OK;
}

/* set_hparam(name, value) into *out (a new hval); values: one scalar (is_list false) or n
 * elements of a list. */
static vg_code set_value(const vg_hparams *hp, const char *name, bool is_list, const pyval *vals, int n, hval *out,
                         vg_status *st) {
    int k = find(hp, name);
    if (k < 0) return vg_status_set(st, VG_NOT_FOUND, "no hyperparameter named '%s' (KeyError)", name ? name : "");
    const hval *cur = &hp->p[k].v;
    if (is_list && !cur->is_list)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Must not pass a list for single-valued parameter: %s", name);
    if (!is_list && cur->is_list)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Must pass a list for multi-valued parameter: %s.", name);
    if (!hval_alloc(out, cur->type, cur->is_list, is_list ? n : 1))
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in hparams");
    for (int j = 0; j < (is_list ? n : 1); j++) {
        vg_code rc = cast_into(name, cur->type, &vals[j], out, j, st);
        if (rc != VG_OK) {
            hval_clear(out);
            return rc;
        }
    }
    return VG_OK;
}

static void commit(vg_hparams *hp, const char *name, hval *v) {
    int k = find(hp, name);
    hval_clear(&hp->p[k].v);
    hp->p[k].v = *v;
    memset(v, 0, sizeof *v);
}

/* ------------------------------------------------------------------------ */
/* add / set / get / del */

static vg_code add(vg_hparams *hp, const char *name, vg_hparam_type t, bool is_list, const pyval *vals, int n,
                   vg_status *st) {
    if (!hp || !name || !*name)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "add_hparam: %s", !hp ? "hparams is NULL" : "empty name");
    if (find(hp, name) >= 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "Hyperparameter name is reserved: %s", name);
    if (is_list && n <= 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Multi-valued hyperparameters cannot be empty: %s", name);
    if (hp->n == hp->cap) {
        int cap = hp->cap ? 2 * hp->cap : 8;
        param *np = vg_realloc(hp->p, (size_t)hp->cap * sizeof *np, (size_t)cap * sizeof *np);
        if (!np) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in hparams");
        hp->p = np;
        hp->cap = cap;
    }
    param *p = &hp->p[hp->n];
    memset(p, 0, sizeof *p);
    if (!(p->name = vg__train_strdup(name)) || !hval_alloc(&p->v, t, is_list, is_list ? n : 1)) {
        vg_free(p->name);
        hval_clear(&p->v);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in hparams");
    }
    for (int j = 0; j < (is_list ? n : 1); j++) {
        vg_code rc = cast_into(name, t, &vals[j], &p->v, j, st);
        if (rc != VG_OK) {
            vg_free(p->name);
            hval_clear(&p->v);
            return rc;
        }
    }
    hp->n++;
    return VG_OK;
}

static pyval pv_int(int64_t v) { return (pyval){PV_INT, v, 0, false, NULL}; }
static pyval pv_float(double v) { return (pyval){PV_FLOAT, 0, v, false, NULL}; }
static pyval pv_bool(bool v) { return (pyval){PV_BOOL, 0, 0, v, NULL}; }
static pyval pv_str(const char *v) { return (pyval){PV_STR, 0, 0, false, (char *)v}; }

vg_code vg_hparams_add_int(vg_hparams *hp, const char *name, int64_t value, vg_status *st) {
    pyval v = pv_int(value);
    return add(hp, name, VG_HPARAM_INT, false, &v, 1, st);
}
vg_code vg_hparams_add_float(vg_hparams *hp, const char *name, double value, vg_status *st) {
    pyval v = pv_float(value);
    return add(hp, name, VG_HPARAM_FLOAT, false, &v, 1, st);
}
vg_code vg_hparams_add_bool(vg_hparams *hp, const char *name, bool value, vg_status *st) {
    pyval v = pv_bool(value);
    return add(hp, name, VG_HPARAM_BOOL, false, &v, 1, st);
}
vg_code vg_hparams_add_string(vg_hparams *hp, const char *name, const char *value, vg_status *st) {
    if (!value) return vg_status_set(st, VG_INVALID_ARGUMENT, "add_hparam %s: the string is NULL", name ? name : "");
    pyval v = pv_str(value);
    return add(hp, name, VG_HPARAM_STRING, false, &v, 1, st);
}

/* The C arrays as pyval lists (strings borrowed). */
static pyval *to_pyvals(vg_hparam_type t, const void *values, int n, vg_status *st) {
    if (n < 0 || (n > 0 && !values)) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "hparams: NULL or negative list");
        return NULL;
    }
    pyval *pv = vg_calloc((size_t)(n > 0 ? n : 1), sizeof *pv);
    if (!pv) {
        vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in hparams");
        return NULL;
    }
    for (int j = 0; j < n; j++) {
        switch (t) {
        case VG_HPARAM_INT: pv[j] = pv_int(((const int64_t *)values)[j]); break;
        case VG_HPARAM_FLOAT: pv[j] = pv_float(((const double *)values)[j]); break;
        case VG_HPARAM_BOOL: pv[j] = pv_bool(((const bool *)values)[j]); break;
        case VG_HPARAM_STRING: {
            const char *s = ((const char *const *)values)[j];
            if (!s) {
                vg_free(pv);
                vg_status_set(st, VG_INVALID_ARGUMENT, "hparams: string %d of the list is NULL", j);
                return NULL;
            }
            pv[j] = pv_str(s);
            break;
        }
        }
    }
    return pv;
}

static vg_code add_list(vg_hparams *hp, const char *name, vg_hparam_type t, const void *values, int n,
                        vg_status *st) {
    if (n <= 0 && hp && name && *name && find(hp, name) < 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Multi-valued hyperparameters cannot be empty: %s", name);
    pyval *pv = to_pyvals(t, values, n, st);
    if (!pv) return st ? st->code : VG_INVALID_ARGUMENT;
    vg_code rc = add(hp, name, t, true, pv, n, st);
    vg_free(pv);
    return rc;
}

vg_code vg_hparams_add_int_list(vg_hparams *hp, const char *name, const int64_t *values, int n, vg_status *st) {
    return add_list(hp, name, VG_HPARAM_INT, values, n, st);
}
vg_code vg_hparams_add_float_list(vg_hparams *hp, const char *name, const double *values, int n, vg_status *st) {
    return add_list(hp, name, VG_HPARAM_FLOAT, values, n, st);
}
vg_code vg_hparams_add_bool_list(vg_hparams *hp, const char *name, const bool *values, int n, vg_status *st) {
    return add_list(hp, name, VG_HPARAM_BOOL, values, n, st);
}
vg_code vg_hparams_add_string_list(vg_hparams *hp, const char *name, const char *const *values, int n,
                                   vg_status *st) {
    return add_list(hp, name, VG_HPARAM_STRING, values, n, st);
}

static vg_code set_one(vg_hparams *hp, const char *name, bool is_list, const pyval *vals, int n, vg_status *st) {
    if (!hp) return vg_status_set(st, VG_INVALID_ARGUMENT, "set_hparam: hparams is NULL");
    hval nv;
    vg_code rc = set_value(hp, name, is_list, vals, n, &nv, st);
    if (rc == VG_OK) commit(hp, name, &nv);
    return rc;
}

vg_code vg_hparams_set_int(vg_hparams *hp, const char *name, int64_t value, vg_status *st) {
    pyval v = pv_int(value);
    return set_one(hp, name, false, &v, 1, st);
}
vg_code vg_hparams_set_float(vg_hparams *hp, const char *name, double value, vg_status *st) {
    pyval v = pv_float(value);
    return set_one(hp, name, false, &v, 1, st);
}
vg_code vg_hparams_set_bool(vg_hparams *hp, const char *name, bool value, vg_status *st) {
    pyval v = pv_bool(value);
    return set_one(hp, name, false, &v, 1, st);
}
vg_code vg_hparams_set_string(vg_hparams *hp, const char *name, const char *value, vg_status *st) {
    if (!value) return vg_status_set(st, VG_INVALID_ARGUMENT, "set_hparam %s: the string is NULL", name ? name : "");
    pyval v = pv_str(value);
    return set_one(hp, name, false, &v, 1, st);
}

static vg_code set_list(vg_hparams *hp, const char *name, vg_hparam_type t, const void *values, int n,
                        vg_status *st) {
    pyval *pv = to_pyvals(t, values, n, st);
    if (!pv) return st ? st->code : VG_INVALID_ARGUMENT;
    vg_code rc = set_one(hp, name, true, pv, n, st);
    vg_free(pv);
    return rc;
}

vg_code vg_hparams_set_int_list(vg_hparams *hp, const char *name, const int64_t *values, int n, vg_status *st) {
    return set_list(hp, name, VG_HPARAM_INT, values, n, st);
}
vg_code vg_hparams_set_float_list(vg_hparams *hp, const char *name, const double *values, int n, vg_status *st) {
    return set_list(hp, name, VG_HPARAM_FLOAT, values, n, st);
}
vg_code vg_hparams_set_string_list(vg_hparams *hp, const char *name, const char *const *values, int n,
                                   vg_status *st) {
    return set_list(hp, name, VG_HPARAM_STRING, values, n, st);
}

vg_code vg_hparams_del(vg_hparams *hp, const char *name, vg_status *st) {
    int k = find(hp, name);
    if (k < 0) return vg_status_set(st, VG_NOT_FOUND, "no hyperparameter named '%s' (KeyError)", name ? name : "");
    vg_free(hp->p[k].name);
    hval_clear(&hp->p[k].v);
    memmove(&hp->p[k], &hp->p[k + 1], (size_t)(hp->n - k - 1) * sizeof *hp->p);
    hp->n--;
    return VG_OK;
}

static const hval *get(const vg_hparams *hp, const char *name, bool is_list, vg_hparam_type t, vg_status *st) {
    int k = find(hp, name);
    if (k < 0) {
        vg_status_set(st, VG_NOT_FOUND, "no hyperparameter named '%s'", name ? name : "");
        return NULL;
    }
    const hval *v = &hp->p[k].v;
    bool type_ok = v->type == t || (t == VG_HPARAM_FLOAT && !is_list && v->type == VG_HPARAM_INT);
    if (v->is_list != is_list || !type_ok) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "hyperparameter '%s' is %s%s%s, not %s%s%s", name,
                      v->is_list ? "list<" : "", type_name(v->type), v->is_list ? ">" : "", is_list ? "list<" : "",
                      type_name(t), is_list ? ">" : "");
        return NULL;
    }
    return v;
}

/* The getters: the value of the scalar (is_list false: *out, typed as t says: int64_t,
 * double (an int converted), bool, const char *) or list (values: a pointer to the
 * array of those, and *n) hyperparameter `name` of type t. NULL out / values / n are
 * skipped. */
static vg_code get_value(const vg_hparams *hp, const char *name, bool is_list, vg_hparam_type t, void *out, int *n,
                         vg_status *st) {
    const hval *v = get(hp, name, is_list, t, st);
    if (!v) return st ? st->code : VG_NOT_FOUND;
    if (n) *n = v->n;
    if (!out) return VG_OK;
    switch (t) {
    case VG_HPARAM_INT:
        if (is_list)
            *(const int64_t **)out = v->i;
        else
            *(int64_t *)out = v->i[0];
        break;
    case VG_HPARAM_FLOAT:
        if (is_list)
            *(const double **)out = v->f;
        else
            *(double *)out = v->type == VG_HPARAM_INT ? (double)v->i[0] : v->f[0];
        break;
    case VG_HPARAM_BOOL:
        if (is_list)
            *(const bool **)out = v->b;
        else
            *(bool *)out = v->b[0];
        break;
    case VG_HPARAM_STRING:
        if (is_list)
            *(const char *const **)out = (const char *const *)v->s;
        else
            *(const char **)out = v->s[0];
        break;
    }
    return VG_OK;
}

vg_code vg_hparams_get_int(const vg_hparams *hp, const char *name, int64_t *out, vg_status *st) {
    return get_value(hp, name, false, VG_HPARAM_INT, out, NULL, st);
}
vg_code vg_hparams_get_float(const vg_hparams *hp, const char *name, double *out, vg_status *st) {
    return get_value(hp, name, false, VG_HPARAM_FLOAT, out, NULL, st);
}
vg_code vg_hparams_get_bool(const vg_hparams *hp, const char *name, bool *out, vg_status *st) {
    return get_value(hp, name, false, VG_HPARAM_BOOL, out, NULL, st);
}
vg_code vg_hparams_get_string(const vg_hparams *hp, const char *name, const char **out, vg_status *st) {
    return get_value(hp, name, false, VG_HPARAM_STRING, out, NULL, st);
}
vg_code vg_hparams_get_int_list(const vg_hparams *hp, const char *name, const int64_t **values, int *n,
                                vg_status *st) {
    return get_value(hp, name, true, VG_HPARAM_INT, values, n, st);
}
vg_code vg_hparams_get_float_list(const vg_hparams *hp, const char *name, const double **values, int *n,
                                  vg_status *st) {
    return get_value(hp, name, true, VG_HPARAM_FLOAT, values, n, st);
}
vg_code vg_hparams_get_bool_list(const vg_hparams *hp, const char *name, const bool **values, int *n,
                                 vg_status *st) {
    return get_value(hp, name, true, VG_HPARAM_BOOL, values, n, st);
}
vg_code vg_hparams_get_string_list(const vg_hparams *hp, const char *name, const char *const **values, int *n,
                                   vg_status *st) {
    return get_value(hp, name, true, VG_HPARAM_STRING, (void *)values, n, st);
}

bool vg_hparams_contains(const vg_hparams *hp, const char *name) { return find(hp, name) >= 0; }
int vg_hparams_count(const vg_hparams *hp) { return hp ? hp->n : 0; }
const char *vg_hparams_name(const vg_hparams *hp, int i) { return hp && i >= 0 && i < hp->n ? hp->p[i].name : NULL; }

vg_code vg_hparams_type(const vg_hparams *hp, const char *name, vg_hparam_type *type, bool *is_list, vg_status *st) {
    int k = find(hp, name);
    if (k < 0) return vg_status_set(st, VG_NOT_FOUND, "no hyperparameter named '%s'", name ? name : "");
    if (type) *type = hp->p[k].v.type;
    if (is_list) *is_list = hp->p[k].v.is_list;
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* Python's int() and float() of a string */

static bool py_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/* s[0..n) stripped of Python whitespace, with '_' between digits removed, into buf;
 * false when an '_' is not between two digits. */
static bool py_clean(const char *s, size_t n, char *buf, size_t len) {
    while (n && py_space(*s)) s++, n--;
    while (n && py_space(s[n - 1])) n--;
    if (n + 1 > len) return false;
    size_t o = 0;
    for (size_t k = 0; k < n; k++) {
        if (s[k] == '_') {
            if (k == 0 || k + 1 >= n || !isdigit((unsigned char)s[k - 1]) || !isdigit((unsigned char)s[k + 1]))
                return false;
            continue;
        }
        buf[o++] = s[k];
    }
    buf[o] = 0;
    return true;
}

static bool py_int(const char *s, size_t n, int64_t *out) {
    char buf[128];
    if (!py_clean(s, n, buf, sizeof buf)) return false;
    const char *p = buf;
    if (*p == '+' || *p == '-') p++;
    if (!*p) return false;
    for (const char *q = p; *q; q++)
        if (!isdigit((unsigned char)*q)) return false;
    errno = 0;
    long long v = strtoll(buf, NULL, 10);
    if (errno == ERANGE) return false;
    *out = (int64_t)v;
    return true;
}

static bool py_float(const char *s, size_t n, double *out) {
    char buf[400];
    if (!py_clean(s, n, buf, sizeof buf)) return false;
    const char *p = buf;
    if (*p == '+' || *p == '-') p++;
    const char *specials[] = {"inf", "infinity", "nan"};
    for (int k = 0; k < 3; k++)
        if (strcasecmp(p, specials[k]) == 0) {
            double v = k == 2 ? NAN : INFINITY;
            *out = buf[0] == '-' ? -v : v;
            return true;
        }
    /* digits [. digits] | . digits, then [e [sign] digits] */
    const char *q = p;
    int dig = 0;
    while (isdigit((unsigned char)*q)) q++, dig++;
    if (*q == '.') {
        q++;
        while (isdigit((unsigned char)*q)) q++, dig++;
    }
    if (!dig) return false;
    if (*q == 'e' || *q == 'E') {
        q++;
        if (*q == '+' || *q == '-') q++;
        if (!isdigit((unsigned char)*q)) return false;
        while (isdigit((unsigned char)*q)) q++;
    }
    if (*q) return false;
    *out = strtod(buf, NULL);
    return true;
}

/* ------------------------------------------------------------------------ */
/* parse(values) */

typedef struct clause {
    char name[128];
    int index;     /* -1: none */
    bool is_list;
    pyval *vals;
    int n;
} clause;

static void clause_free(clause *c) {
    for (int k = 0; k < c->n; k++) vg_free(c->vals[k].s);
    vg_free(c->vals);
    c->vals = NULL;
    c->n = 0;
}

/* One value in Python's parse function of type t. */
static bool parse_scalar(vg_hparam_type t, const char *s, size_t n, pyval *out) {
    memset(out, 0, sizeof *out);
    switch (t) {
    case VG_HPARAM_INT:
        out->k = PV_INT;
        return py_int(s, n, &out->i);
    case VG_HPARAM_FLOAT:
        out->k = PV_FLOAT;
        return py_float(s, n, &out->f);
    case VG_HPARAM_BOOL: {
        out->k = PV_BOOL;
        if ((n == 4 && (memcmp(s, "true", 4) == 0 || memcmp(s, "True", 4) == 0))) {
            out->b = true;
            return true;
        }
        if ((n == 5 && (memcmp(s, "false", 5) == 0 || memcmp(s, "False", 5) == 0))) {
            out->b = false;
            return true;
        }
        int64_t v;
        if (!py_int(s, n, &v)) return false;
        out->b = v != 0;
        return true;
    }
    case VG_HPARAM_STRING:
        out->k = PV_STR;
        out->s = vg_malloc(n + 1);
        if (!out->s) return false;
        memcpy(out->s, s, n);
        out->s[n] = 0;
        return true;
    }
    return false;
}

static vg_code parse_fail(vg_status *st, const char *name, vg_hparam_type t, const char *v, size_t vn,
                          const char *values) {
    return vg_status_set(st, VG_INVALID_ARGUMENT, "Could not parse hparam '%s' of type '%s' with value '%.*s' in %s",
                         name, type_name(t), (int)vn, v, values);
}

vg_code vg_hparams_parse(vg_hparams *hp, const char *values, vg_status *st) {
    if (!hp || !values) return vg_status_set(st, VG_INVALID_ARGUMENT, "parse: %s is NULL", hp ? "values" : "hparams");
    size_t len = strlen(values), pos = 0;
    int ncl = 0, capcl = 0;
    clause *cl = NULL;
    vg_code rc = VG_OK;
    while (pos < len && rc == VG_OK) {
        const char *s = values + pos, *p = s;
        clause c;
        memset(&c, 0, sizeof c);
        c.index = -1;
        /* name */
        if (!isalpha((unsigned char)*p)) goto malformed;
        while (isalnum((unsigned char)*p) || *p == '_' || *p == '.') p++;
        if ((size_t)(p - s) >= sizeof c.name) goto malformed;
        memcpy(c.name, s, (size_t)(p - s));
        /* [ index ] */
        if (*p == '[') {
            const char *q = p + 1;
            while (py_space(*q)) q++;
            if (!isdigit((unsigned char)*q)) goto malformed;
            long idx = 0;
            while (isdigit((unsigned char)*q)) {
                idx = idx < 100000000 ? idx * 10 + (*q - '0') : idx;
                q++;
            }
            while (py_space(*q)) q++;
            if (*q != ']') goto malformed;
            c.index = (int)idx;
            p = q + 1;
        }
        while (py_space(*p)) p++;
        if (*p != '=') goto malformed;
        p++;
        while (py_space(*p)) p++;
        const char *v = p, *vend;
        if (*p != '[') {
            while (*p && *p != ',' && *p != '[') p++;
            if (*p == '[') goto malformed;
            vend = p;
        } else {
            v = ++p;
            while (*p && *p != ']') p++;
            if (*p != ']') goto malformed;
            vend = p++;
            if (*p && *p != ',') goto malformed;
            c.is_list = true;
        }
        if (*p == ',') {
            p++;
            while (py_space(*p)) p++;
        }
        pos = (size_t)(p - values);
        {
            int k = find(hp, c.name);
            if (k < 0) {
                rc = vg_status_set(st, VG_INVALID_ARGUMENT, "Unknown hyperparameter type for %s", c.name);
                break;
            }
            vg_hparam_type t = hp->p[k].v.type;
            if (c.is_list) {
                if (c.index >= 0) {
                    rc = vg_status_set(st, VG_INVALID_ARGUMENT, "Assignment of a list to a list index.");
                    break;
                }
                size_t cap = (size_t)(vend - v) / 2 + 2;
                c.vals = vg_calloc(cap, sizeof *c.vals);
                if (!c.vals) {
                    rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in hparams");
                    break;
                }
                const char *e = v;
                while (e < vend && rc == VG_OK) {
                    while (e < vend && (*e == ' ' || *e == ',')) e++;
                    if (e >= vend) break;
                    const char *b = e;
                    while (e < vend && *e != ' ' && *e != ',') e++;
                    if (!parse_scalar(t, b, (size_t)(e - b), &c.vals[c.n]))
                        rc = parse_fail(st, c.name, t, v, (size_t)(vend - v), values);
                    else
                        c.n++;
                }
            } else {
                c.vals = vg_calloc(1, sizeof *c.vals);
                if (!c.vals) {
                    rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in hparams");
                    break;
                }
                if (!parse_scalar(t, v, (size_t)(vend - v), &c.vals[0]))
                    rc = parse_fail(st, c.name, t, v, (size_t)(vend - v), values);
                else
                    c.n = 1;
            }
            /* reuse of a name (or of one index) */
            for (int j = 0; j < ncl && rc == VG_OK; j++) {
                if (strcmp(cl[j].name, c.name) != 0) continue;
                if (c.index < 0 || cl[j].index < 0)
                    rc = vg_status_set(st, VG_INVALID_ARGUMENT, "Multiple assignments to variable '%s' in %s", c.name,
                                       values);
                else if (cl[j].index == c.index)
                    rc = vg_status_set(st, VG_INVALID_ARGUMENT, "Multiple assignments to variable '%s[%d]' in %s",
                                       c.name, c.index, values);
            }
            if (rc != VG_OK) {
                clause_free(&c);
                break;
            }
            if (ncl == capcl) {
                int nc = capcl ? 2 * capcl : 8;
                clause *ncp = vg_realloc(cl, (size_t)capcl * sizeof *ncp, (size_t)nc * sizeof *ncp);
                if (!ncp) {
                    clause_free(&c);
                    rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in hparams");
                    break;
                }
                cl = ncp;
                capcl = nc;
            }
            cl[ncl++] = c;
            continue;
        }
    malformed:
        rc = vg_status_set(st, VG_INVALID_ARGUMENT, "Malformed hyperparameter value: %s", s);
    }
    /* override_from_dict: index clauses become {index: value} dicts, which set_hparam
     * refuses (a dict is not a list, nor castable to a scalar type) */
    hval *nv = rc == VG_OK ? vg_calloc((size_t)(ncl > 0 ? ncl : 1), sizeof *nv) : NULL;
    if (rc == VG_OK && !nv) rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in hparams");
    int done = 0;
    for (int j = 0; j < ncl && rc == VG_OK; j++, done++) {
        if (cl[j].index >= 0) {
            const hval *cur = &hp->p[find(hp, cl[j].name)].v;
            if (cur->is_list) {
                rc = vg_status_set(st, VG_INVALID_ARGUMENT, "Must pass a list for multi-valued parameter: %s.",
                                   cl[j].name);
            } else {
                char r[256];
                pyval_repr(&cl[j].vals[0], r, sizeof r);
                rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                                   "Could not cast hparam '%s' of type '<class '%s'>' from value {%d: %s}", cl[j].name,
                                   type_name(cur->type), cl[j].index, r);
            }
            break;
        }
        rc = set_value(hp, cl[j].name, cl[j].is_list, cl[j].vals, cl[j].n, &nv[j], st);
    }
    if (rc == VG_OK)
        for (int j = 0; j < ncl; j++) commit(hp, cl[j].name, &nv[j]);
    for (int j = 0; j < done && nv; j++) hval_clear(&nv[j]);
    vg_free(nv);
    for (int j = 0; j < ncl; j++) clause_free(&cl[j]);
    vg_free(cl);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* parse_json(values_json) */

typedef struct jlex {
    const char *s, *p;
    vg_status *st;
} jlex;

static void jws(jlex *l) {
    while (*l->p == ' ' || *l->p == '\t' || *l->p == '\n' || *l->p == '\r') l->p++;
}

static vg_code jerr(jlex *l, const char *what) {
    return vg_status_set(l->st, VG_INVALID_ARGUMENT, "parse_json: %s at offset %ld", what, (long)(l->p - l->s));
}

static void put_utf8(sbuf *b, uint32_t c) {
    char u[4];
    size_t n;
    if (c < 0x80) {
        u[0] = (char)c;
        n = 1;
    } else if (c < 0x800) {
        u[0] = (char)(0xC0 | (c >> 6));
        u[1] = (char)(0x80 | (c & 0x3F));
        n = 2;
    } else if (c < 0x10000) {
        u[0] = (char)(0xE0 | (c >> 12));
        u[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        u[2] = (char)(0x80 | (c & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (c >> 18));
        u[1] = (char)(0x80 | ((c >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((c >> 6) & 0x3F));
        u[3] = (char)(0x80 | (c & 0x3F));
        n = 4;
    }
    sb_put(b, u, n);
}

static bool hex4(const char *p, uint32_t *out) {
    uint32_t v = 0;
    for (int k = 0; k < 4; k++) {
        char c = p[k];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return false;
        v = v * 16 + (uint32_t)d;
    }
    *out = v;
    return true;
}

/* A JSON string at l->p (the opening quote) into a new C string. */
static vg_code jstring(jlex *l, char **out) {
    sbuf b = {0};
    sb_puts(&b, "");
    l->p++;
    for (;;) {
        unsigned char c = (unsigned char)*l->p;
        if (!c) {
            vg_free(b.p);
            return jerr(l, "unterminated string");
        }
        if (c == '"') {
            l->p++;
            break;
        }
        if (c < 0x20) {
            vg_free(b.p);
            return jerr(l, "control character in a string");
        }
        if (c != '\\') {
            sb_put(&b, l->p, 1);
            l->p++;
            continue;
        }
        char e = l->p[1];
        l->p += 2;
        switch (e) {
        case '"': sb_puts(&b, "\""); break;
        case '\\': sb_puts(&b, "\\"); break;
        case '/': sb_puts(&b, "/"); break;
        case 'b': sb_puts(&b, "\b"); break;
        case 'f': sb_puts(&b, "\f"); break;
        case 'n': sb_puts(&b, "\n"); break;
        case 'r': sb_puts(&b, "\r"); break;
        case 't': sb_puts(&b, "\t"); break;
        case 'u': {
            uint32_t u, lo;
            if (!hex4(l->p, &u)) {
                vg_free(b.p);
                return jerr(l, "bad \\u escape");
            }
            l->p += 4;
            if (u >= 0xD800 && u < 0xDC00 && l->p[0] == '\\' && l->p[1] == 'u' && hex4(l->p + 2, &lo) &&
                lo >= 0xDC00 && lo < 0xE000) {
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
                l->p += 6;
            }
            if (u == 0) {
                vg_free(b.p);
                return jerr(l, "a NUL character in a string");
            }
            put_utf8(&b, u);
            break;
        }
        default:
            vg_free(b.p);
            l->p -= 1;
            return jerr(l, "bad escape");
        }
    }
    if (b.oom) {
        vg_free(b.p);
        return vg_status_set(l->st, VG_RESOURCE_EXHAUSTED, "out of memory in parse_json");
    }
    *out = b.p;
    return VG_OK;
}

/* A JSON scalar (string, number, true, false, null, NaN, Infinity, -Infinity). */
static vg_code jscalar(jlex *l, pyval *v) {
    memset(v, 0, sizeof *v);
    const char *p = l->p;
    if (*p == '"') {
        v->k = PV_STR;
        return jstring(l, &v->s);
    }
    static const struct { const char *w; pv_kind k; int val; } words[] = {
        {"true", PV_BOOL, 1}, {"false", PV_BOOL, 0}, {"null", PV_NONE, 0},
        {"NaN", PV_FLOAT, 0}, {"Infinity", PV_FLOAT, 1}, {"-Infinity", PV_FLOAT, -1}};
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++) {
        size_t n = strlen(words[k].w);
        if (strncmp(p, words[k].w, n) == 0) {
            v->k = words[k].k;
            v->b = words[k].val != 0;
            if (v->k == PV_FLOAT) v->f = words[k].val == 0 ? NAN : words[k].val > 0 ? INFINITY : -INFINITY;
            l->p += n;
            return VG_OK;
        }
    }
    /* -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)? */
    const char *q = p;
    bool is_float = false;
    if (*q == '-') q++;
    if (*q == '0') {
        q++;
    } else if (*q >= '1' && *q <= '9') {
        while (isdigit((unsigned char)*q)) q++;
    } else {
        return jerr(l, "expected a value");
    }
    if (*q == '.') {
        is_float = true;
        q++;
        if (!isdigit((unsigned char)*q)) return jerr(l, "bad number");
        while (isdigit((unsigned char)*q)) q++;
    }
    if (*q == 'e' || *q == 'E') {
        is_float = true;
        q++;
        if (*q == '+' || *q == '-') q++;
        if (!isdigit((unsigned char)*q)) return jerr(l, "bad number");
        while (isdigit((unsigned char)*q)) q++;
    }
    char buf[400];
    size_t n = (size_t)(q - p);
    if (n >= sizeof buf) return jerr(l, "number too long");
    memcpy(buf, p, n);
    buf[n] = 0;
    if (is_float) {
        v->k = PV_FLOAT;
        v->f = strtod(buf, NULL);
    } else {
        v->k = PV_INT;
        errno = 0;
        v->i = strtoll(buf, NULL, 10);
        if (errno == ERANGE) return jerr(l, "integer out of the int64 range");
    }
    l->p = q;
    return VG_OK;
}

typedef struct jentry {
    char *name;
    bool is_list;
    pyval *vals;
    int n;
} jentry;

static void jentry_free(jentry *e) {
    vg_free(e->name);
    for (int k = 0; k < e->n; k++) vg_free(e->vals[k].s);
    vg_free(e->vals);
}

vg_code vg_hparams_parse_json(vg_hparams *hp, const char *values_json, vg_status *st) {
    if (!hp || !values_json)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "parse_json: %s is NULL", hp ? "values_json" : "hparams");
    jlex l = {values_json, values_json, st};
    jentry *es = NULL;
    int ne = 0, cap = 0;
    vg_code rc = VG_OK;
    jws(&l);
    if (*l.p != '{') {
        rc = jerr(&l, "expected a JSON object");
    } else {
        l.p++;
        jws(&l);
        if (*l.p == '}') l.p++;
        else
            for (;;) {
                jws(&l);
                if (*l.p != '"') {
                    rc = jerr(&l, "expected a name");
                    break;
                }
                if (ne == cap) {
                    int nc = cap ? 2 * cap : 8;
                    jentry *np = vg_realloc(es, (size_t)cap * sizeof *np, (size_t)nc * sizeof *np);
                    if (!np) {
                        rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in parse_json");
                        break;
                    }
                    es = np;
                    cap = nc;
                }
                jentry *e = &es[ne++];
                memset(e, 0, sizeof *e);
                if ((rc = jstring(&l, &e->name)) != VG_OK) break;
                jws(&l);
                if (*l.p != ':') {
                    rc = jerr(&l, "expected ':'");
                    break;
                }
                l.p++;
                jws(&l);
                if (*l.p == '[') {
                    e->is_list = true;
                    l.p++;
                    jws(&l);
                    int vcap = 0;
                    if (*l.p == ']') {
                        l.p++;
                    } else {
                        for (;;) {
                            jws(&l);
                            if (*l.p == '[' || *l.p == '{') {
                                rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                                                   "parse_json: the value of '%s' nests a list or object (offset %ld)",
                                                   e->name, (long)(l.p - l.s));
                                break;
                            }
                            if (e->n == vcap) {
                                int nc = vcap ? 2 * vcap : 8;
                                pyval *np = vg_realloc(e->vals, (size_t)vcap * sizeof *np, (size_t)nc * sizeof *np);
                                if (!np) {
                                    rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in parse_json");
                                    break;
                                }
                                e->vals = np;
                                vcap = nc;
                            }
                            if ((rc = jscalar(&l, &e->vals[e->n])) != VG_OK) break;
                            e->n++;
                            jws(&l);
                            if (*l.p == ',') {
                                l.p++;
                                continue;
                            }
                            if (*l.p == ']') {
                                l.p++;
                                break;
                            }
                            rc = jerr(&l, "expected ',' or ']'");
                            break;
                        }
                    }
                    if (rc != VG_OK) break;
                } else if (*l.p == '{') {
                    rc = vg_status_set(st, VG_INVALID_ARGUMENT, "parse_json: the value of '%s' is an object",
                                       e->name);
                    break;
                } else {
                    if (!(e->vals = vg_calloc(1, sizeof *e->vals))) {
                        rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in parse_json");
                        break;
                    }
                    if ((rc = jscalar(&l, &e->vals[0])) != VG_OK) break;
                    e->n = 1;
                }
                jws(&l);
                if (*l.p == ',') {
                    l.p++;
                    continue;
                }
                if (*l.p == '}') {
                    l.p++;
                    break;
                }
                rc = jerr(&l, "expected ',' or '}'");
                break;
            }
        if (rc == VG_OK) {
            jws(&l);
            if (*l.p) rc = jerr(&l, "extra data after the object");
        }
    }
    /* override_from_dict, in the object's order (a repeated name: the last wins, as a
     * Python dict) */
    hval *nv = rc == VG_OK ? vg_calloc((size_t)(ne > 0 ? ne : 1), sizeof *nv) : NULL;
    if (rc == VG_OK && !nv) rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in parse_json");
    int done = 0;
    for (int j = 0; j < ne && rc == VG_OK; j++, done++)
        rc = set_value(hp, es[j].name, es[j].is_list, es[j].vals, es[j].n, &nv[j], st);
    if (rc == VG_OK)
        for (int j = 0; j < ne; j++) commit(hp, es[j].name, &nv[j]);
    for (int j = 0; j < done && nv; j++) hval_clear(&nv[j]);
    vg_free(nv);
    for (int j = 0; j < ne; j++) jentry_free(&es[j]);
    vg_free(es);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* to_json */

static void json_elem(sbuf *b, const hval *v, int k) {
    char tmp[64];
    switch (v->type) {
    case VG_HPARAM_INT: sb_printf(b, "%lld", (long long)v->i[k]); break;
    case VG_HPARAM_FLOAT:
        float_repr(v->f[k], true, tmp, sizeof tmp);
        sb_puts(b, tmp);
        break;
    case VG_HPARAM_BOOL: sb_puts(b, v->b[k] ? "true" : "false"); break;
    case VG_HPARAM_STRING: json_string(b, v->s[k]); break;
    }
}

char *vg_hparams_to_json(const vg_hparams *hp, vg_status *st) {
    if (!hp) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "to_json: hparams is NULL");
        return NULL;
    }
    sbuf b = {0};
    sb_puts(&b, "{");
    for (int k = 0; k < hp->n; k++) {
        if (k) sb_puts(&b, ", ");
        json_string(&b, hp->p[k].name);
        sb_puts(&b, ": ");
        const hval *v = &hp->p[k].v;
        if (v->is_list) {
            sb_puts(&b, "[");
            for (int j = 0; j < v->n; j++) {
                if (j) sb_puts(&b, ", ");
                json_elem(&b, v, j);
            }
            sb_puts(&b, "]");
        } else {
            json_elem(&b, v, 0);
        }
    }
    sb_puts(&b, "}");
    if (b.oom) {
        vg_free(b.p);
        vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory in to_json");
        return NULL;
    }
    return b.p;
}
