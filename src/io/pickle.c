/*
 * pickle.c - reading the dict-of-arrays pickles Python programs write (vigil/npy.h:
 * vg_pickle_dict_*), e.g. the CIFAR-10 "python version" batches that
 * tf.keras.datasets.cifar10 loads: a dict whose values are NumPy arrays, lists of ints
 * and strings.
 *
 * This is a restricted unpickler, not Python's: it runs the opcodes of protocols 2-5
 * that build plain data (None, bools, ints, floats, bytes, str, tuples, lists, dicts,
 * the memo) and calls no Python at all. The only globals it accepts are NumPy's array
 * reconstructors (numpy.core.multiarray._reconstruct / numpy._core.multiarray
 * ._reconstruct, numpy.ndarray, numpy.dtype) and _codecs.encode (how Python 3 writes
 * bytes under protocol 2); an array is rebuilt from its BUILD state (version, shape,
 * dtype, fortran flag, raw bytes) as ndarray.__setstate__ does. Any other global or
 * opcode is UNIMPLEMENTED naming it; malformed input is DATA_LOSS naming the offset.
 * Every length is checked against the bytes left before anything is allocated, and the
 * memo's indices against the input length.
 *
 * Written by hand because no C library in Debian reads pickles (they are Python's own
 * format); the subset is the one NumPy's arrays need.
 */
#include "io/io.h"
#include "vigil/npy.h"
#include <stdio.h>

typedef enum {
    P_NONE, P_BOOL, P_INT, P_FLOAT, P_BYTES, P_TUPLE, P_LIST, P_DICT, P_GLOBAL, P_REDUCE, P_MARK
} pkind;

enum { G_RECONSTRUCT = 1, G_NDARRAY, G_DTYPE, G_ENCODE };

typedef struct pobj pobj;
struct pobj {
    pkind k;
    int64_t i;       /* P_INT, P_BOOL, P_GLOBAL (G_*) */
    double f;        /* P_FLOAT */
    const uint8_t *s; /* P_BYTES: borrowed from the input, or owned (own_s) */
    size_t n;        /* P_BYTES length; P_TUPLE/P_LIST/P_DICT items (dict: 2 per entry) */
    bool own_s;
    pobj **items;
    size_t cap;
    pobj *fn, *args, *state; /* P_REDUCE */
};

struct vg_pickle_dict {
    uint8_t *bytes; /* the input (objects borrow from it) */
    char *name;
    pobj **all;     /* every object, for freeing */
    size_t nall, capall;
    pobj *top;
    char **keys;
    int nkeys;
};

static pobj *pnew(vg_pickle_dict *d, pkind k) {
    if (d->nall == d->capall) {
        size_t cap = d->capall ? 2 * d->capall : 64;
        pobj **np = vg__realloc(d->all, d->capall * sizeof *np, cap * sizeof *np);
        if (!np) return NULL;
        d->all = np;
        d->capall = cap;
    }
    pobj *o = vg__calloc(1, sizeof *o);
    if (!o) return NULL;
    o->k = k;
    d->all[d->nall++] = o;
    return o;
}

static bool push_item(pobj *c, pobj *v) {
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 8;
        pobj **np = vg__realloc(c->items, c->cap * sizeof *np, cap * sizeof *np);
        if (!np) return false;
        c->items = np;
        c->cap = cap;
    }
    c->items[c->n++] = v;
    return true;
}

void vg_pickle_dict_free(vg_pickle_dict *d) {
    if (!d) return;
    for (size_t k = 0; k < d->nall; k++) {
        if (d->all[k]->own_s) vg__free((void *)d->all[k]->s);
        vg__free(d->all[k]->items);
        vg__free(d->all[k]);
    }
    vg__free(d->all);
    for (int k = 0; k < d->nkeys; k++) vg__free(d->keys[k]);
    vg__free(d->keys);
    vg__free(d->bytes);
    vg__free(d->name);
    vg__free(d);
}

/* ------------------------------------------------------------------------ */
/* the machine */

typedef struct pm {
    vg_pickle_dict *d;
    const uint8_t *p, *end, *start;
    pobj **stack;
    size_t sn, scap;
    pobj **memo;
    size_t mcap, mnext;
    vg_status *st;
} pm;

static vg_code bad(pm *m, const char *what) {
    return vg_status_set(m->st, VG_DATA_LOSS, "%s: bad pickle at offset %ld: %s", m->d->name,
                         (long)(m->p - m->start), what);
}

static vg_code oom(pm *m) { return vg_status_set(m->st, VG_RESOURCE_EXHAUSTED, "%s: out of memory", m->d->name); }

static vg_code push(pm *m, pobj *o) {
    if (!o) return oom(m);
    if (m->sn == m->scap) {
        size_t cap = m->scap ? 2 * m->scap : 64;
        pobj **np = vg__realloc(m->stack, m->scap * sizeof *np, cap * sizeof *np);
        if (!np) return oom(m);
        m->stack = np;
        m->scap = cap;
    }
    m->stack[m->sn++] = o;
    return VG_OK;
}

static pobj *pop(pm *m) {
    if (m->sn == 0 || m->stack[m->sn - 1]->k == P_MARK) return NULL;
    return m->stack[--m->sn];
}

/* The index of the topmost MARK, or -1. */
static long find_mark(pm *m) {
    for (size_t k = m->sn; k > 0; k--)
        if (m->stack[k - 1]->k == P_MARK) return (long)(k - 1);
    return -1;
}

static bool need(pm *m, size_t n) { return (size_t)(m->end - m->p) >= n; }

static uint64_t le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; k--) v = (v << 8) | p[k];
    return v;
}

static vg_code memo_put(pm *m, size_t idx) {
    if (m->sn == 0 || m->stack[m->sn - 1]->k == P_MARK) return bad(m, "memo put of an empty stack");
    if (idx > (size_t)(m->end - m->start) + 16) return bad(m, "memo index out of range");
    if (idx >= m->mcap) {
        size_t cap = m->mcap ? m->mcap : 64;
        while (cap <= idx) cap *= 2;
        pobj **np = vg__realloc(m->memo, m->mcap * sizeof *np, cap * sizeof *np);
        if (!np) return oom(m);
        memset(np + m->mcap, 0, (cap - m->mcap) * sizeof *np);
        m->memo = np;
        m->mcap = cap;
    }
    m->memo[idx] = m->stack[m->sn - 1];
    return VG_OK;
}

static vg_code memo_get(pm *m, size_t idx) {
    if (idx >= m->mcap || !m->memo[idx]) return bad(m, "memo get of an unset index");
    return push(m, m->memo[idx]);
}

static vg_code push_bytes(pm *m, size_t n) {
    if (!need(m, n)) return bad(m, "string runs past the end");
    pobj *o = pnew(m->d, P_BYTES);
    if (!o) return oom(m);
    o->s = m->p;
    o->n = n;
    m->p += n;
    return push(m, o);
}

static int global_id(const char *mod, size_t ml, const char *name, size_t nl) {
#define IS(a, b) (ml == strlen(a) && memcmp(mod, a, ml) == 0 && nl == strlen(b) && memcmp(name, b, nl) == 0)
    if (IS("numpy.core.multiarray", "_reconstruct") || IS("numpy._core.multiarray", "_reconstruct"))
        return G_RECONSTRUCT;
    if (IS("numpy", "ndarray")) return G_NDARRAY;
    if (IS("numpy", "dtype")) return G_DTYPE;
    if (IS("_codecs", "encode")) return G_ENCODE;
#undef IS
    return 0;
}

static vg_code push_global(pm *m, const char *mod, size_t ml, const char *name, size_t nl) {
    int id = global_id(mod, ml, name, nl);
    if (!id)
        return vg_status_set(m->st, VG_UNIMPLEMENTED,
                             "%s: the pickle calls %.*s.%.*s, which vigil does not read (it reads dicts of NumPy "
                             "arrays, lists, numbers and strings)",
                             m->d->name, (int)(ml > 200 ? 200 : ml), mod, (int)(nl > 200 ? 200 : nl), name);
    pobj *o = pnew(m->d, P_GLOBAL);
    if (!o) return oom(m);
    o->i = id;
    return push(m, o);
}

/* _codecs.encode(str, 'latin1'): the str's code points (all < 256) as bytes. */
static vg_code codecs_encode(pm *m, pobj *args, pobj **out) {
    if (args->k != P_TUPLE || args->n < 1 || args->items[0]->k != P_BYTES) return bad(m, "_codecs.encode arguments");
    if (args->n >= 2 && (args->items[1]->k != P_BYTES ||
                         !(args->items[1]->n == 6 && memcmp(args->items[1]->s, "latin1", 6) == 0)))
        return bad(m, "_codecs.encode with an encoding other than latin1");
    const pobj *u = args->items[0];
    uint8_t *b = vg__malloc(u->n + 1);
    if (!b) return oom(m);
    size_t o = 0;
    for (size_t k = 0; k < u->n;) {
        uint8_t c = u->s[k];
        if (c < 0x80) {
            b[o++] = c;
            k++;
        } else if ((c & 0xE0) == 0xC0 && k + 1 < u->n && (u->s[k + 1] & 0xC0) == 0x80 && (c & 0x1F) <= 3) {
            b[o++] = (uint8_t)(((c & 0x1F) << 6) | (u->s[k + 1] & 0x3F));
            k += 2;
        } else {
            vg__free(b);
            return bad(m, "_codecs.encode of a character beyond latin1");
        }
    }
    pobj *r = pnew(m->d, P_BYTES);
    if (!r) {
        vg__free(b);
        return oom(m);
    }
    r->s = b;
    r->n = o;
    r->own_s = true;
    *out = r;
    return VG_OK;
}

static vg_code run_machine(pm *m) {
    vg_code rc;
    while (m->p < m->end) {
        uint8_t op = *m->p++;
        switch (op) {
        case 0x80: /* PROTO */
            if (!need(m, 1)) return bad(m, "PROTO");
            if (*m->p < 2 || *m->p > 5)
                return vg_status_set(m->st, VG_UNIMPLEMENTED, "%s: pickle protocol %d (vigil reads 2 to 5)",
                                     m->d->name, *m->p);
            m->p++;
            break;
        case 0x95: /* FRAME */
            if (!need(m, 8)) return bad(m, "FRAME");
            m->p += 8;
            break;
        case '}': if ((rc = push(m, pnew(m->d, P_DICT)))) return rc; break;
        case ']': if ((rc = push(m, pnew(m->d, P_LIST)))) return rc; break;
        case ')': if ((rc = push(m, pnew(m->d, P_TUPLE)))) return rc; break;
        case '(': if ((rc = push(m, pnew(m->d, P_MARK)))) return rc; break;
        case 'N': if ((rc = push(m, pnew(m->d, P_NONE)))) return rc; break;
        case 0x88:
        case 0x89: {
            pobj *o = pnew(m->d, P_BOOL);
            if (o) o->i = op == 0x88;
            if ((rc = push(m, o))) return rc;
            break;
        }
        case 'q':
            if (!need(m, 1)) return bad(m, "BINPUT");
            if ((rc = memo_put(m, *m->p++))) return rc;
            break;
        case 'r':
            if (!need(m, 4)) return bad(m, "LONG_BINPUT");
            if ((rc = memo_put(m, (size_t)le(m->p, 4)))) return rc;
            m->p += 4;
            break;
        case 0x94: /* MEMOIZE */
            if ((rc = memo_put(m, m->mnext++))) return rc;
            break;
        case 'h':
            if (!need(m, 1)) return bad(m, "BINGET");
            if ((rc = memo_get(m, *m->p++))) return rc;
            break;
        case 'j':
            if (!need(m, 4)) return bad(m, "LONG_BINGET");
            if ((rc = memo_get(m, (size_t)le(m->p, 4)))) return rc;
            m->p += 4;
            break;
        case 'U': case 'C': case 0x8c: /* SHORT_BINSTRING, SHORT_BINBYTES, SHORT_BINUNICODE */
            if (!need(m, 1)) return bad(m, "short string");
            {
                size_t n = *m->p++;
                if ((rc = push_bytes(m, n))) return rc;
            }
            break;
        case 'T': case 'B': case 'X': /* BINSTRING, BINBYTES, BINUNICODE */
            if (!need(m, 4)) return bad(m, "string length");
            {
                uint64_t n = le(m->p, 4);
                if (op == 'T' && n > 0x7fffffff) return bad(m, "negative BINSTRING length");
                m->p += 4;
                if ((rc = push_bytes(m, (size_t)n))) return rc;
            }
            break;
        case 0x8e: case 0x8d: /* BINBYTES8, BINUNICODE8 */
            if (!need(m, 8)) return bad(m, "string length");
            {
                uint64_t n = le(m->p, 8);
                m->p += 8;
                if (n > (uint64_t)(m->end - m->p)) return bad(m, "string runs past the end");
                if ((rc = push_bytes(m, (size_t)n))) return rc;
            }
            break;
        case 'K': case 'M': case 'J': { /* BININT1, BININT2, BININT */
            int w = op == 'K' ? 1 : op == 'M' ? 2 : 4;
            if (!need(m, (size_t)w)) return bad(m, "int");
            pobj *o = pnew(m->d, P_INT);
            if (o) o->i = op == 'J' ? (int64_t)(int32_t)(uint32_t)le(m->p, 4) : (int64_t)le(m->p, w);
            m->p += w;
            if ((rc = push(m, o))) return rc;
            break;
        }
        case 0x8a: { /* LONG1 */
            if (!need(m, 1)) return bad(m, "LONG1");
            int n = *m->p++;
            if (n > 8) return vg_status_set(m->st, VG_UNIMPLEMENTED, "%s: an integer of %d bytes", m->d->name, n);
            if (!need(m, (size_t)n)) return bad(m, "LONG1");
            uint64_t v = le(m->p, n);
            if (n > 0 && n < 8 && (m->p[n - 1] & 0x80)) v |= ~(uint64_t)0 << (8 * n);
            m->p += n;
            pobj *o = pnew(m->d, P_INT);
            if (o) o->i = (int64_t)v;
            if ((rc = push(m, o))) return rc;
            break;
        }
        case 'G': { /* BINFLOAT, big-endian */
            if (!need(m, 8)) return bad(m, "BINFLOAT");
            uint64_t v = 0;
            for (int k = 0; k < 8; k++) v = (v << 8) | m->p[k];
            m->p += 8;
            pobj *o = pnew(m->d, P_FLOAT);
            if (o) memcpy(&o->f, &v, 8);
            if ((rc = push(m, o))) return rc;
            break;
        }
        case 'c': { /* GLOBAL "module\nname\n" */
            const uint8_t *a = m->p, *nl1 = memchr(a, '\n', (size_t)(m->end - a));
            if (!nl1) return bad(m, "GLOBAL");
            const uint8_t *b = nl1 + 1, *nl2 = memchr(b, '\n', (size_t)(m->end - b));
            if (!nl2) return bad(m, "GLOBAL");
            m->p = nl2 + 1;
            if ((rc = push_global(m, (const char *)a, (size_t)(nl1 - a), (const char *)b, (size_t)(nl2 - b))))
                return rc;
            break;
        }
        case 0x93: { /* STACK_GLOBAL */
            pobj *name = pop(m), *mod = pop(m);
            if (!name || !mod || name->k != P_BYTES || mod->k != P_BYTES) return bad(m, "STACK_GLOBAL");
            if ((rc = push_global(m, (const char *)mod->s, mod->n, (const char *)name->s, name->n))) return rc;
            break;
        }
        case 0x85: case 0x86: case 0x87: { /* TUPLE1..3 */
            size_t n = (size_t)(op - 0x84);
            if (m->sn < n) return bad(m, "TUPLE on a short stack");
            pobj *t = pnew(m->d, P_TUPLE);
            if (!t) return oom(m);
            for (size_t k = m->sn - n; k < m->sn; k++) {
                if (m->stack[k]->k == P_MARK) return bad(m, "TUPLE over a MARK");
                if (!push_item(t, m->stack[k])) return oom(m);
            }
            m->sn -= n;
            if ((rc = push(m, t))) return rc;
            break;
        }
        case 't': case 'e': case 'u': case 'l': case 'd': { /* TUPLE, APPENDS, SETITEMS (and proto-0 LIST, DICT) */
            long mk = find_mark(m);
            if (mk < 0) return bad(m, "no MARK");
            size_t from = (size_t)mk + 1, n = m->sn - from;
            pobj *c;
            if (op == 't' || op == 'l' || op == 'd') {
                c = pnew(m->d, op == 't' ? P_TUPLE : op == 'l' ? P_LIST : P_DICT);
                if (!c) return oom(m);
            } else {
                if (mk == 0) return bad(m, "APPENDS/SETITEMS without a target");
                c = m->stack[mk - 1];
                if (c->k != (op == 'e' ? P_LIST : P_DICT)) return bad(m, "APPENDS/SETITEMS on the wrong type");
            }
            if ((op == 'u' || op == 'd') && n % 2) return bad(m, "SETITEMS of an odd count");
            for (size_t k = from; k < m->sn; k++)
                if (!push_item(c, m->stack[k])) return oom(m);
            m->sn = (size_t)mk;
            if (op == 't' || op == 'l' || op == 'd')
                if ((rc = push(m, c))) return rc;
            break;
        }
        case 'a': case 's': { /* APPEND, SETITEM */
            size_t n = op == 'a' ? 1 : 2;
            if (m->sn < n + 1) return bad(m, "APPEND/SETITEM on a short stack");
            pobj *c = m->stack[m->sn - n - 1];
            if (c->k != (op == 'a' ? P_LIST : P_DICT)) return bad(m, "APPEND/SETITEM on the wrong type");
            for (size_t k = m->sn - n; k < m->sn; k++) {
                if (m->stack[k]->k == P_MARK) return bad(m, "APPEND/SETITEM of a MARK");
                if (!push_item(c, m->stack[k])) return oom(m);
            }
            m->sn -= n;
            break;
        }
        case 'R': { /* REDUCE */
            pobj *args = pop(m), *fn = pop(m);
            if (!args || !fn || fn->k != P_GLOBAL || args->k != P_TUPLE) return bad(m, "REDUCE");
            pobj *o = NULL;
            if (fn->i == G_ENCODE) {
                if ((rc = codecs_encode(m, args, &o))) return rc;
            } else {
                if (fn->i == G_NDARRAY) return bad(m, "numpy.ndarray called directly");
                if (!(o = pnew(m->d, P_REDUCE))) return oom(m);
                o->fn = fn;
                o->args = args;
            }
            if ((rc = push(m, o))) return rc;
            break;
        }
        case 'b': { /* BUILD */
            pobj *state = pop(m), *obj = m->sn ? m->stack[m->sn - 1] : NULL;
            if (!state || !obj || obj->k != P_REDUCE || obj->state) return bad(m, "BUILD");
            obj->state = state;
            break;
        }
        case '.': /* STOP */
            if (m->sn != 1) return bad(m, "STOP with a stack that is not one value");
            m->d->top = m->stack[0];
            return VG_OK;
        case 0x81: case 0x92: case 'i': case 'o': case 0x82: case 0x83: case 0x84:
            return vg_status_set(m->st, VG_UNIMPLEMENTED,
                                 "%s: the pickle builds an object (opcode 0x%02x at offset %ld), which vigil does "
                                 "not do",
                                 m->d->name, op, (long)(m->p - 1 - m->start));
        default:
            m->p--;
            return vg_status_set(m->st, VG_UNIMPLEMENTED, "%s: pickle opcode 0x%02x at offset %ld is not one vigil reads",
                                 m->d->name, op, (long)(m->p - m->start));
        }
    }
    return bad(m, "no STOP");
}

static bool bytes_eq(const pobj *o, const char *s) {
    return o && o->k == P_BYTES && o->n == strlen(s) && memcmp(o->s, s, o->n) == 0;
}

vg_pickle_dict *vg_pickle_dict_parse(const void *bytes, size_t len, const char *name, vg_status *st) {
    if (!bytes && len) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "vg_pickle_dict_parse: NULL bytes");
        return NULL;
    }
    vg_pickle_dict *d = vg__calloc(1, sizeof *d);
    if (!d || !(d->name = vg__strdup(name ? name : "pickle")) || !(d->bytes = vg__malloc(len ? len : 1))) {
        vg_pickle_dict_free(d);
        VG_OOM(st, "pickle");
        return NULL;
    }
    if (len) memcpy(d->bytes, bytes, len);
    pm m = {d, d->bytes, d->bytes + len, d->bytes, NULL, 0, 0, NULL, 0, 0, st};
    vg_code rc = run_machine(&m);
    vg__free(m.stack);
    vg__free(m.memo);
    if (rc == VG_OK && d->top->k != P_DICT)
        rc = vg_status_set(st, VG_INVALID_ARGUMENT, "%s: the pickle holds no dict at its top", d->name);
    if (rc == VG_OK) {
        size_t n = d->top->n / 2;
        d->keys = vg__calloc(n + 1, sizeof *d->keys);
        if (!d->keys) rc = VG_OOM(st, "pickle");
        for (size_t k = 0; k < n && rc == VG_OK; k++) {
            const pobj *key = d->top->items[2 * k];
            if (key->k != P_BYTES || memchr(key->s, 0, key->n)) {
                rc = vg_status_set(st, VG_UNIMPLEMENTED, "%s: dict key %zu is not a string", d->name, k);
                break;
            }
            char *s = vg__malloc(key->n + 1);
            if (!s) {
                rc = VG_OOM(st, "pickle");
                break;
            }
            memcpy(s, key->s, key->n);
            s[key->n] = 0;
            d->keys[d->nkeys++] = s;
        }
    }
    if (rc != VG_OK) {
        vg_pickle_dict_free(d);
        return NULL;
    }
    return d;
}

static void *parse_pickle(const void *bytes, size_t len, const char *name, vg_status *st) {
    return vg_pickle_dict_parse(bytes, len, name, st);
}

vg_pickle_dict *vg_pickle_dict_read(const char *path, vg_status *st) {
    return vg__io_parse_path("vg_pickle_dict_read", path, parse_pickle, st);
}

int vg_pickle_dict_count(const vg_pickle_dict *d) { return d ? d->nkeys : 0; }

const char *vg_pickle_dict_key(const vg_pickle_dict *d, int i) {
    return d && i >= 0 && i < d->nkeys ? d->keys[i] : NULL;
}

/* ------------------------------------------------------------------------ */
/* values as tensors */

static vg_tensor *array_tensor(const vg_pickle_dict *d, const char *key, const pobj *o, vg_status *st) {
    /* _reconstruct(ndarray, (0,), b'b') with BUILD state (version, shape, dtype, fortran, data) */
    const pobj *s = o->state;
    if (o->fn->i != G_RECONSTRUCT || !s || s->k != P_TUPLE || (s->n != 5 && s->n != 4)) goto bad;
    size_t base = s->n == 5 ? 1 : 0;
    const pobj *shape = s->items[base], *dt = s->items[base + 1], *fortran = s->items[base + 2],
               *raw = s->items[base + 3];
    if (shape->k != P_TUPLE || dt->k != P_REDUCE || dt->fn->i != G_DTYPE || dt->args->n < 1 ||
        dt->args->items[0]->k != P_BYTES || (fortran->k != P_BOOL && fortran->k != P_INT) || raw->k != P_BYTES)
        goto bad;
    if (shape->n > VG_MAX_DIMS) {
        vg_status_set(st, VG_UNIMPLEMENTED, "%s: array '%s' has rank %zu, above %d", d->name, key, shape->n,
                      VG_MAX_DIMS);
        return NULL;
    }
    char order = '|';
    const pobj *ds = dt->state;
    if (ds && ds->k == P_TUPLE && ds->n >= 2 && ds->items[1]->k == P_BYTES && ds->items[1]->n == 1)
        order = (char)ds->items[1]->s[0];
    const pobj *code = dt->args->items[0];
    static const struct { const char *c; vg_dtype t; size_t w; } types[] = {
        {"f4", VG_FLOAT, 4}, {"f8", VG_DOUBLE, 8}, {"i4", VG_INT32, 4}, {"i8", VG_INT64, 8},
        {"u1", VG_UINT8, 1}, {"b1", VG_BOOL, 1}, {"f2", VG_HALF, 2}};
    int ti = -1;
    for (int k = 0; k < (int)(sizeof types / sizeof types[0]); k++)
        if (bytes_eq(code, types[k].c)) ti = k;
    if (ti < 0) {
        vg_status_set(st, VG_UNIMPLEMENTED, "%s: array '%s' has NumPy dtype '%.*s', which vigil does not read",
                      d->name, key, (int)(code->n > 16 ? 16 : code->n), code->s);
        return NULL;
    }
    int64_t dims[VG_MAX_DIMS];
    uint64_t count = 1;
    for (size_t k = 0; k < shape->n; k++) {
        if (shape->items[k]->k != P_INT || shape->items[k]->i < 0) goto bad;
        dims[k] = shape->items[k]->i;
        if (dims[k] && count > UINT64_MAX / (uint64_t)dims[k]) goto bad;
        count *= (uint64_t)dims[k];
    }
    size_t w = types[ti].w;
    if (count > (uint64_t)raw->n / w || count * w != raw->n) {
        vg_status_set(st, VG_DATA_LOSS, "%s: array '%s' holds %zu bytes, its shape and dtype need %llu", d->name, key,
                      raw->n, (unsigned long long)(count * w));
        return NULL;
    }
    vg_tensor *t = vg_tensor_new(types[ti].t, dims, (int)shape->n, st);
    if (!t) return NULL;
    uint8_t *out = vg_tensor_data(t);
    bool swap = order == '>' && w > 1;
    bool fort = fortran->i != 0 && shape->n > 1;
    for (uint64_t e = 0; e < count; e++) {
        /* element e of the row-major output; in Fortran order its source index differs */
        uint64_t src = e;
        if (fort) {
            uint64_t rem = e;
            src = 0;
            for (int k = (int)shape->n - 1; k >= 0; k--) {
                uint64_t idx = rem % (uint64_t)dims[k], stride = 1;
                rem /= (uint64_t)dims[k];
                for (int j = 0; j < k; j++) stride *= (uint64_t)dims[j];
                src += idx * stride;
            }
        }
        const uint8_t *from = raw->s + src * w;
        uint8_t *to = out + e * w;
        for (size_t b = 0; b < w; b++) to[b] = swap ? from[w - 1 - b] : from[b];
    }
    if (types[ti].t == VG_BOOL)
        for (uint64_t e = 0; e < count; e++) out[e] = out[e] != 0;
    return t;
bad:
    vg_status_set(st, VG_DATA_LOSS, "%s: value '%s' is not a NumPy array as numpy pickles one", d->name, key);
    return NULL;
}

vg_tensor *vg_pickle_dict_get(const vg_pickle_dict *d, const char *key, vg_status *st) {
    if (!d || !key) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "vg_pickle_dict_get: %s is NULL", d ? "key" : "the dict");
        return NULL;
    }
    const pobj *v = NULL;
    for (size_t k = 0; 2 * k < d->top->n; k++)
        if (bytes_eq(d->top->items[2 * k], key)) v = d->top->items[2 * k + 1]; /* the last wins, as a dict */
    if (!v) {
        vg_status_set(st, VG_NOT_FOUND, "%s: no key '%s' in the pickled dict", d->name, key);
        return NULL;
    }
    switch (v->k) {
    case P_REDUCE: return array_tensor(d, key, v, st);
    case P_INT: return vg_tensor_new_scalar_i64(v->i, st);
    case P_BYTES: return vg_tensor_new_string_scalar((const char *)v->s, v->n, st);
    case P_LIST:
    case P_TUPLE: {
        pkind ek = v->n ? v->items[0]->k : P_INT;
        for (size_t k = 0; k < v->n; k++)
            if (v->items[k]->k != ek || (ek != P_INT && ek != P_FLOAT && ek != P_BYTES)) {
                vg_status_set(st, VG_UNIMPLEMENTED,
                              "%s: list '%s' mixes types or holds other than ints, floats or strings", d->name, key);
                return NULL;
            }
        int64_t n = (int64_t)v->n;
        vg_tensor *t = vg_tensor_new(ek == P_INT ? VG_INT64 : ek == P_FLOAT ? VG_DOUBLE : VG_STRING, &n, 1, st);
        if (!t) return NULL;
        for (size_t k = 0; k < v->n; k++) {
            if (ek == P_INT) ((int64_t *)vg_tensor_data(t))[k] = v->items[k]->i;
            else if (ek == P_FLOAT) ((double *)vg_tensor_data(t))[k] = v->items[k]->f;
            else if (vg_tensor_set_string(t, (int64_t)k, (const char *)v->items[k]->s, v->items[k]->n, st) != VG_OK) {
                vg_tensor_free(t);
                return NULL;
            }
        }
        return t;
    }
    default:
        vg_status_set(st, VG_UNIMPLEMENTED, "%s: value '%s' is not an array, list, number or string", d->name, key);
        return NULL;
    }
}
