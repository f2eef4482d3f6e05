/*
 * ckpt_state.c - the `checkpoint` file: a CheckpointState proto in text format
 * (docs/formats.md §2.6). Writes exactly what TF1's Saver writes (Python text_format:
 * one `field: value` line per value, strings C-escaped with octal for non-printable
 * bytes, doubles in Python repr form), replaced atomically. The parser accepts the
 * general text-format syntax for these four fields (any order, comments, adjacent
 * string literals, `[a, b]` lists, `,`/`;` separators).
 */
#include "io/io.h"
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void vg__ckpt_state_free(vg__ckpt_state *s) {
    if (!s) return;
    vg__free(s->model_checkpoint_path);
    for (int i = 0; i < s->n_all; i++) vg__free(s->all_paths[i]);
    vg__free(s->all_paths);
    vg__free(s->timestamps);
    memset(s, 0, sizeof *s);
}

/* ---- parsing ---- */

typedef struct lexer {
    const char *p, *end;
    int line;
} lexer;

static vg_code syntax(const lexer *lx, vg_status *st, const char *what) {
    return vg_status_set(st, VG_DATA_LOSS, "checkpoint state line %d: %s", lx->line, what);
}

static void skip_ws(lexer *lx) {
    while (lx->p < lx->end) {
        char c = *lx->p;
        if (c == '#') {
            while (lx->p < lx->end && *lx->p != '\n') lx->p++;
        } else if (isspace((unsigned char)c)) {
            if (c == '\n') lx->line++;
            lx->p++;
        } else {
            return;
        }
    }
}

static bool accept(lexer *lx, char c) {
    skip_ws(lx);
    return vg__io_accept_char(&lx->p, lx->end, c);
}

/* One or more adjacent quoted literals -> a new NUL-terminated string. */
static vg_code parse_string(lexer *lx, char **out, vg_status *st) {
    vg__pb_buf b;
    vg__pb_init(&b);
    skip_ws(lx);
    if (lx->p >= lx->end || (*lx->p != '"' && *lx->p != '\'')) return syntax(lx, st, "expected a string");
    while (lx->p < lx->end && (*lx->p == '"' || *lx->p == '\'')) {
        char q = *lx->p++;
        for (;;) {
            if (lx->p >= lx->end || *lx->p == '\n') {
                vg__pb_free(&b);
                return syntax(lx, st, "unterminated string");
            }
            char c = *lx->p++;
            if (c == q) break;
            if (c == '\\') {
                if (vg__io_pbtxt_unescape(&lx->p, lx->end, true, &b)) {
                    vg__pb_free(&b);
                    return syntax(lx, st, "bad escape sequence");
                }
            } else {
                vg__pb_put_raw(&b, &c, 1);
            }
        }
        skip_ws(lx);
    }
    if (!b.oom && b.len && memchr(b.data, 0, b.len)) {
        vg__pb_free(&b);
        return syntax(lx, st, "NUL byte in a path");
    }
    vg__pb_put_raw(&b, "", 1);
    if (b.oom) {
        vg__pb_free(&b);
        return VG_OOM(st, "checkpoint state");
    }
    *out = (char *)b.data;
    return VG_OK;
}

static vg_code parse_double(lexer *lx, double *out, vg_status *st) {
    skip_ws(lx);
    char tok[64];
    size_t n = 0;
    while (lx->p + n < lx->end && n < sizeof tok - 1 &&
           (isalnum((unsigned char)lx->p[n]) || strchr("+-._", lx->p[n])))
        n++;
    memcpy(tok, lx->p, n);
    tok[n] = 0;
    char *e;
    *out = strtod(tok, &e);
    if (!n || *e) {
        /* text format also allows a trailing f/F on floats */
        if (!(n > 1 && (*e == 'f' || *e == 'F') && e[1] == 0)) return syntax(lx, st, "expected a number");
    }
    lx->p += n;
    return VG_OK;
}

/* Amortized growth (capacity doubling): 100k listed paths parse in linear time. */
static vg_code push_path(vg__ckpt_state *s, char *p, vg_status *st) {
    if (s->n_all == INT_MAX || !vg__grow((void **)&s->all_paths, &s->cap_all, s->n_all + 1, sizeof *s->all_paths)) {
        vg__free(p);
        return VG_OOM(st, "checkpoint state");
    }
    s->all_paths[s->n_all++] = p;
    return VG_OK;
}

static vg_code push_ts(vg__ckpt_state *s, double t, vg_status *st) {
    if (s->n_ts == INT_MAX || !vg__grow((void **)&s->timestamps, &s->cap_ts, s->n_ts + 1, sizeof *s->timestamps))
        return VG_OOM(st, "checkpoint state");
    s->timestamps[s->n_ts++] = t;
    return VG_OK;
}

/* One value of field `f` (1..4). */
static vg_code parse_value(lexer *lx, int f, vg__ckpt_state *s, vg_status *st) {
    vg_code c;
    if (f <= 2) {
        char *str = NULL;
        if ((c = parse_string(lx, &str, st))) return c;
        if (f == 2) return push_path(s, str, st);
        vg__free(s->model_checkpoint_path);
        s->model_checkpoint_path = str;
        return VG_OK;
    }
    double d;
    if ((c = parse_double(lx, &d, st))) return c;
    if (f == 3) return push_ts(s, d, st);
    s->last_preserved_timestamp = d;
    return VG_OK;
}

static const char *const k_fields[] = {"model_checkpoint_path", "all_model_checkpoint_paths",
                                       "all_model_checkpoint_timestamps", "last_preserved_timestamp"};

static vg_code parse_field(lexer *lx, vg__ckpt_state *s, vg_status *st) {
    const char *id = lx->p;
    while (lx->p < lx->end && (isalnum((unsigned char)*lx->p) || *lx->p == '_')) lx->p++;
    size_t n = (size_t)(lx->p - id);
    int f = 0;
    for (int i = 0; i < 4; i++)
        if (strlen(k_fields[i]) == n && memcmp(k_fields[i], id, n) == 0) f = i + 1;
    if (!n) return syntax(lx, st, "expected a field name");
    if (!f) return syntax(lx, st, "unknown field");
    if (!accept(lx, ':')) return syntax(lx, st, "expected ':'");
    vg_code c;
    bool repeated = f == 2 || f == 3;
    if (repeated && accept(lx, '[')) {
        if (accept(lx, ']')) return VG_OK;
        do {
            if ((c = parse_value(lx, f, s, st))) return c;
        } while (accept(lx, ','));
        return accept(lx, ']') ? VG_OK : syntax(lx, st, "expected ']'");
    }
    if ((c = parse_value(lx, f, s, st))) return c;
    if (!accept(lx, ',')) accept(lx, ';');
    return VG_OK;
}

vg_code vg__ckpt_state_parse(const char *text, size_t len, vg__ckpt_state *s, vg_status *st) {
    memset(s, 0, sizeof *s);
    lexer lx = {text, text + len, 1};
    vg_code c = VG_OK;
    for (;;) {
        skip_ws(&lx);
        if (lx.p >= lx.end) break;
        if ((c = parse_field(&lx, s, st))) break;
    }
    if (!c && (!s->model_checkpoint_path || !*s->model_checkpoint_path))
        c = vg_status_set(st, VG_INVALID_ARGUMENT, "invalid checkpoint state: no model_checkpoint_path");
    if (c) vg__ckpt_state_free(s);
    return c;
}

vg_code vg__ckpt_state_read(const char *path, vg__ckpt_state *s, vg_status *st) {
    uint8_t *data;
    size_t len;
    memset(s, 0, sizeof *s);
    vg_code c = vg__io_read_file(path, &data, &len, st);
    if (c) return c;
    c = vg__ckpt_state_parse((const char *)data, len, s, st);
    vg__free(data);
    if (c) vg_status_prefix(st, "%s: ", path);
    return c;
}

/* ---- formatting ---- */

/* Python's CEscape(as_utf8=False): \n \r \t \" \' \\, octal for other bytes < 32 or >= 127. */
static void put_escaped(vg__pb_buf *b, const char *s) {
    vg__pb_put_raw(b, "\"", 1);
    for (const uint8_t *p = (const uint8_t *)s; *p; p++) {
        char tmp[5];
        const char *e = NULL;
        switch (*p) {
        case '\n': e = "\\n"; break;
        case '\r': e = "\\r"; break;
        case '\t': e = "\\t"; break;
        case '"': e = "\\\""; break;
        case '\'': e = "\\'"; break;
        case '\\': e = "\\\\"; break;
        default:
            if (*p < 32 || *p >= 127) {
                snprintf(tmp, sizeof tmp, "\\%03o", *p);
                e = tmp;
            }
        }
        if (e) vg__pb_put_raw(b, e, strlen(e));
        else vg__pb_put_raw(b, p, 1);
    }
    vg__pb_put_raw(b, "\"", 1);
}

/* Python 3 repr(float): shortest round-trip digits; positional when the decimal
 * exponent is in [-4, 16), else d.ddde+XX. */
static void py_repr(double x, char *out, size_t n) {
    if (isnan(x)) { snprintf(out, n, "nan"); return; }
    if (isinf(x)) { snprintf(out, n, x < 0 ? "-inf" : "inf"); return; }
    if (x == 0) { snprintf(out, n, signbit(x) ? "-0.0" : "0.0"); return; }
    char e[40];
    for (int prec = 0; prec < 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec, x);
        if (strtod(e, NULL) == x) break;
    }
    /* e = [-]d[.ddd]e[+-]XX */
    const char *p = e;
    bool neg = *p == '-';
    if (neg) p++;
    char digits[24];
    int nd = 0;
    for (; *p && *p != 'e'; p++)
        if (isdigit((unsigned char)*p)) digits[nd++] = *p;
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = 0;
    int exp10 = atoi(p + 1), decpt = exp10 + 1;
    char *o = out;
    size_t left = n;
#define OUT(...) do { int k_ = snprintf(o, left, __VA_ARGS__); if (k_ > 0 && (size_t)k_ < left) { o += k_; left -= (size_t)k_; } } while (0)
    if (neg) OUT("-");
    if (decpt <= -4 || decpt > 16) {
        OUT("%c", digits[0]);
        if (nd > 1) OUT(".%s", digits + 1);
        OUT("e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    } else if (decpt <= 0) {
        OUT("0.%.*s%s", -decpt, "0000", digits);
    } else if (decpt < nd) {
        OUT("%.*s.%s", decpt, digits, digits + decpt);
    } else {
        OUT("%s%.*s.0", digits, decpt - nd, "0000000000000000");
    }
#undef OUT
}

vg_code vg__ckpt_state_format(const vg__ckpt_state *s, vg__pb_buf *out, vg_status *st) {
    char num[48];
    if (s->model_checkpoint_path && *s->model_checkpoint_path) {
        vg__pb_put_raw(out, "model_checkpoint_path: ", 23);
        put_escaped(out, s->model_checkpoint_path);
        vg__pb_put_raw(out, "\n", 1);
    }
    for (int i = 0; i < s->n_all; i++) {
        vg__pb_put_raw(out, "all_model_checkpoint_paths: ", 28);
        put_escaped(out, s->all_paths[i] ? s->all_paths[i] : "");
        vg__pb_put_raw(out, "\n", 1);
    }
    for (int i = 0; i < s->n_ts; i++) {
        py_repr(s->timestamps[i], num, sizeof num);
        vg__pb_put_raw(out, "all_model_checkpoint_timestamps: ", 33);
        vg__pb_put_raw(out, num, strlen(num));
        vg__pb_put_raw(out, "\n", 1);
    }
    if (s->last_preserved_timestamp != 0 || signbit(s->last_preserved_timestamp)) { /* -0.0 too: its bits are not the default */
        py_repr(s->last_preserved_timestamp, num, sizeof num);
        vg__pb_put_raw(out, "last_preserved_timestamp: ", 26);
        vg__pb_put_raw(out, num, strlen(num));
        vg__pb_put_raw(out, "\n", 1);
    }
    return vg__pb_buf_status(out, "checkpoint state", st);
}

vg_code vg__ckpt_state_write(const char *path, const vg__ckpt_state *s, vg_status *st) {
    vg__pb_buf b;
    vg__pb_init(&b);
    vg_code c = vg__ckpt_state_format(s, &b, st);
    if (!c) c = vg__io_write_file_atomic(path, b.data ? (const void *)b.data : "", b.len, st);
    vg__pb_free(&b);
    return c;
}
