/*
 * regex_ops.c - TF 1.15's regular-expression string ops (string_ops.regex_replace,
 * string_ops.regex_full_match):
 *
 *   RegexReplace(input, pattern, rewrite; replace_global)   pattern/rewrite as scalar tensors
 *   StaticRegexReplace(input; pattern, rewrite, replace_global attrs)
 *   RegexFullMatch(input, pattern)
 *   StaticRegexFullMatch(input; pattern attr)
 *
 * Library: PCRE2 (libpcre2-dev, BSD-3-Clause), not RE2. TF uses RE2, but RE2 is C++
 * and vigil is a C11 library with a C link line; PCRE2 is C, in Debian, and kept up.
 * PCRE2 is a backtracking engine where RE2 is linear-time, so two guards keep TF's
 * meaning and keep a hostile pattern from hanging a session:
 *  - patterns are checked for RE2's syntax first: what RE2 refuses and PCRE2 would
 *    accept (backreferences \1..\9 \g \k, lookahead/lookbehind, atomic groups,
 *    possessive quantifiers, recursion, conditionals, callouts, (*VERBS), comments,
 *    the x flag, PCRE-only escapes such as \K \G \Z \R \X \h \v, repeat counts over
 *    1000) is INVALID_ARGUMENT "Invalid pattern: ...", as TF's RE2 would say, so a TF
 *    program never silently means something else;
 *  - every match runs under a match limit (VG__RX_MATCH_LIMIT backtracking steps), a
 *    depth limit and a heap limit: a pattern that exceeds them (catastrophic
 *    backtracking, which RE2 cannot have) is RESOURCE_EXHAUSTED naming the pattern.
 *    PCRE2 applies the limit afresh at each start position of an unanchored search, so
 *    one element of n bytes costs at most about n * 1e5 steps (RE2: linear); searches
 *    advance in windows of 256 start positions and the run's timeout (timeout_in_ms) is
 *    checked before each window (DEADLINE_EXCEEDED), so a run with a timeout stops on
 *    time.
 * RE2's defaults are kept: UTF-8 (invalid UTF-8 in a subject never matches a
 * character instead of failing), '$' only at the end of the text outside (?m),
 * \d \w \s \b ASCII-only, leftmost-first alternation.
 *
 * Rewrite strings use RE2's syntax: \0..\9 name groups, \\ is a backslash. RE2
 * silently leaves the input unchanged for a rewrite naming a group the pattern does not
 * have or holding another escape; here that is INVALID_ARGUMENT (stricter than TF).
 * GlobalReplace follows RE2::GlobalReplace: an empty match right after the previous
 * match is skipped by one UTF-8 character ("" -> "x" on "abc" gives "xaxbxcx").
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "graph/graph_impl.h"
#include "kernels/kernel.h"
#include "vigil/ops.h"
#include "vigil/string_regex.h"
#include <pcre2.h>
#include <stdio.h>

#define NOGRAD VG__OP_NOT_DIFFERENTIABLE
#define VG__RX_MATCH_LIMIT 100000u   /* backtracking steps per start position of an attempt */
#define VG__RX_DEPTH_LIMIT 10000u
#define VG__RX_HEAP_LIMIT_KIB 65536u
#define VG__RX_MAX_REPEAT 1000       /* RE2's kMaxRepeat */
#define VG__RX_WINDOW 256            /* start positions per pcre2_match call of a search */

/* ------------------------------------------------------------------------ */
/* RE2 syntax check */

static vg_code bad_pattern(vg_status *st, const char *op, const char *p, size_t n, const char *why, size_t at) {
    return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: Invalid pattern: %.*s, error: %s at offset %zu (RE2 syntax)", op,
                         (int)(n > 200 ? 200 : n), p, why, at);
}

/* Parses "{n}", "{n,}", "{n,m}" at p[i]; returns the index after '}' or 0 when not a repeat. */
static size_t parse_repeat(const char *p, size_t n, size_t i, long *lo, long *hi) {
    size_t j = i + 1;
    long a = -1, b = -1;
    if (j >= n || p[j] < '0' || p[j] > '9') return 0;
    for (a = 0; j < n && p[j] >= '0' && p[j] <= '9'; j++) a = a > 100000 ? a : a * 10 + (p[j] - '0');
    if (j < n && p[j] == ',') {
        j++;
        if (j < n && p[j] >= '0' && p[j] <= '9')
            for (b = 0; j < n && p[j] >= '0' && p[j] <= '9'; j++) b = b > 100000 ? b : b * 10 + (p[j] - '0');
    } else {
        b = a;
    }
    if (j >= n || p[j] != '}') return 0;
    *lo = a;
    *hi = b;
    return j + 1;
}

static vg_code check_re2_syntax(const char *p, size_t n, vg_status *st, const char *op) {
    bool after_quant = false;
    size_t i = 0;
    while (i < n) {
        char c = p[i];
        if (c == '\\') {
            if (i + 1 >= n) return VG_OK;  /* trailing backslash: PCRE2 reports it */
            char d = p[i + 1];
            after_quant = false;
            if (d == 'Q') {                 /* \Q...\E: literal text */
                size_t j = i + 2;
                while (j + 1 < n && !(p[j] == '\\' && p[j + 1] == 'E')) j++;
                i = j + 1 < n ? j + 2 : n;
                continue;
            }
            if (d >= '1' && d <= '9') return bad_pattern(st, op, p, n, "backreferences are not supported", i);
            if ((d >= 'a' && d <= 'z') || (d >= 'A' && d <= 'Z') || d == '_') {
                if (!strchr("aftnrxpPdDsSwWbBAzE0", d) || d == '_')
                    return bad_pattern(st, op, p, n, "invalid escape sequence", i);
            }
            i += 2;
            if ((d == 'x' || d == 'p' || d == 'P') && i < n && p[i] == '{') {
                while (i < n && p[i] != '}') i++;
                if (i < n) i++;
            }
            continue;
        }
        if (c == '[') {                     /* character class: skip to its ']' */
            size_t j = i + 1;
            if (j < n && p[j] == '^') j++;
            if (j < n && p[j] == ']') j++;
            while (j < n && p[j] != ']') {
                if (p[j] == '\\') {
                    if (j + 1 < n && p[j + 1] >= '1' && p[j + 1] <= '9')
                        return bad_pattern(st, op, p, n, "backreferences are not supported", j);
                    j += 2;
                } else if (p[j] == '[' && j + 1 < n && p[j + 1] == ':') {
                    const char *e = NULL;
                    for (size_t k = j + 2; k + 1 < n; k++)
                        if (p[k] == ':' && p[k + 1] == ']') { e = p + k; break; }
                    j = e ? (size_t)(e - p) + 2 : j + 1;
                } else {
                    j++;
                }
            }
            i = j < n ? j + 1 : n;
            after_quant = false;
            continue;
        }
        if (c == '(') {
            after_quant = false;
            if (i + 1 < n && p[i + 1] == '*') return bad_pattern(st, op, p, n, "(*VERB) is not supported", i);
            if (i + 1 < n && p[i + 1] == '?') {
                size_t j = i + 2;
                if (j + 1 < n && p[j] == 'P' && p[j + 1] == '<') {   /* (?P<name>re) */
                    i = j + 2;
                    continue;
                }
                bool ok = j < n;
                for (; j < n && p[j] != ':' && p[j] != ')'; j++)
                    if (!strchr("imsU-", p[j])) { ok = false; break; }
                if (!ok || j >= n)
                    return bad_pattern(st, op, p, n,
                                       "group syntax (lookaround, atomic, named, conditional, comment, or flag) "
                                       "is not supported", i);
                i = j + 1;
                continue;
            }
            i++;
            continue;
        }
        if (c == '*' || c == '+' || c == '?') {
            if (after_quant && c == '+') return bad_pattern(st, op, p, n, "possessive repetition is not supported", i);
            if (after_quant && c == '?') {  /* lazy */
                after_quant = false;
                i++;
                continue;
            }
            after_quant = true;
            i++;
            continue;
        }
        if (c == '{') {
            long lo, hi;
            size_t e = parse_repeat(p, n, i, &lo, &hi);
            if (e) {
                if (lo > VG__RX_MAX_REPEAT || hi > VG__RX_MAX_REPEAT)
                    return bad_pattern(st, op, p, n, "bad repetition operator (count over 1000)", i);
                if (after_quant) return bad_pattern(st, op, p, n, "bad repetition operator", i);
                after_quant = true;
                i = e;
                continue;
            }
        }
        after_quant = false;
        i++;
    }
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* compiled pattern */

typedef struct rx {
    pcre2_code *code;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    uint32_t ngroups;
    const char *pat;   /* borrowed, for messages */
    size_t patn;
    const char *op;
    int64_t deadline_ns;  /* the run's timeout (vg__now_ns clock), 0 = none */
    bool full;
} rx;

static void rx_free(rx *r) {
    if (r->md) pcre2_match_data_free(r->md);
    if (r->mctx) pcre2_match_context_free(r->mctx);
    if (r->code) pcre2_code_free(r->code);
    memset(r, 0, sizeof *r);
}

/* Compiles p[0..n) with RE2's defaults; full: anchored at both ends (FullMatch). */
static vg_code rx_compile(const char *p, size_t n, bool full, rx *r, vg_status *st, const char *op) {
    memset(r, 0, sizeof *r);
    r->pat = p;
    r->patn = n;
    r->op = op;
    vg_code c = check_re2_syntax(p, n, st, op);
    if (c) return c;
    pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
    if (!cc) return VG_OOM(st, "regex compile context");
    pcre2_set_newline(cc, PCRE2_NEWLINE_LF);
    pcre2_set_max_pattern_length(cc, 1u << 20);
    uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_NEVER_BACKSLASH_C;
    if (full) opts |= PCRE2_ANCHORED | PCRE2_ENDANCHORED;
    else opts |= PCRE2_USE_OFFSET_LIMIT;   /* searches advance in windows (rx_match) */
    r->full = full;
    int err = 0;
    PCRE2_SIZE off = 0;
    r->code = pcre2_compile((PCRE2_SPTR)p, n, opts, &err, &off, cc);
    pcre2_compile_context_free(cc);
    if (!r->code) {
        PCRE2_UCHAR msg[256];
        if (pcre2_get_error_message(err, msg, sizeof msg) < 0) snprintf((char *)msg, sizeof msg, "error %d", err);
        return bad_pattern(st, op, p, n, (const char *)msg, (size_t)off);
    }
    pcre2_pattern_info(r->code, PCRE2_INFO_CAPTURECOUNT, &r->ngroups);
    r->md = pcre2_match_data_create_from_pattern(r->code, NULL);
    r->mctx = pcre2_match_context_create(NULL);
    if (!r->md || !r->mctx) {
        rx_free(r);
        return VG_OOM(st, "regex match data");
    }
    pcre2_set_match_limit(r->mctx, VG__RX_MATCH_LIMIT);
    pcre2_set_depth_limit(r->mctx, VG__RX_DEPTH_LIMIT);
    pcre2_set_heap_limit(r->mctx, VG__RX_HEAP_LIMIT_KIB);
    return VG_OK;
}

/* One match attempt from offset: 1 matched, 0 none, -1 error (st set). An unanchored
 * search runs in windows of VG__RX_WINDOW start positions (pcre2_set_offset_limit), so
 * that the run's timeout is checked every window: PCRE2 restarts its backtracking limit
 * at each start position, and a long subject can cost its length times the limit. */
static int rx_match(rx *r, const char *s, size_t n, size_t offset, int64_t elem, vg_status *st) {
    if (!s) s = "";
    size_t p = offset;
    for (;;) {
        if (r->deadline_ns && vg__now_ns() > r->deadline_ns) {
            vg_status_set(st, VG_DEADLINE_EXCEEDED, "Timed out: the run exceeded its timeout (at '%s', element %lld)",
                          r->op, (long long)elem);
            return -1;
        }
        size_t lim = n;
        if (!r->full && n - p > VG__RX_WINDOW) lim = p + VG__RX_WINDOW;
        if (!r->full) pcre2_set_offset_limit(r->mctx, lim);
        int rc = pcre2_match(r->code, (PCRE2_SPTR)s, n, p, 0, r->md, r->mctx);
        if (rc >= 0) return 1;
        if (rc == PCRE2_ERROR_NOMATCH) {
            if (r->full || lim >= n) return 0;
            p = lim + 1;   /* the next window starts at the next character */
            while (p < n && ((unsigned char)s[p] & 0xC0) == 0x80) p++;
            continue;
        }
        if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT) {
            vg_status_set(st, VG_RESOURCE_EXHAUSTED,
                          "%s: pattern %.*s exceeded the regex backtracking limit (%u steps) on element %lld; RE2 "
                          "matches such patterns in linear time but vigil's PCRE2 backtracks: simplify the pattern",
                          r->op, (int)(r->patn > 200 ? 200 : r->patn), r->pat, VG__RX_MATCH_LIMIT, (long long)elem);
            return -1;
        }
        PCRE2_UCHAR msg[256];
        if (pcre2_get_error_message(rc, msg, sizeof msg) < 0) snprintf((char *)msg, sizeof msg, "error %d", rc);
        vg_status_set(st, VG_INTERNAL, "%s: matching element %lld failed: %s", r->op, (long long)elem,
                      (const char *)msg);
        return -1;
    }
}

/* ------------------------------------------------------------------------ */
/* rewrite strings (RE2::Rewrite) */

static vg_code check_rewrite(const char *w, size_t n, const rx *r, vg_status *st) {
    for (size_t i = 0; i < n; i++) {
        if (w[i] != '\\') continue;
        if (i + 1 >= n)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: invalid rewrite pattern: trailing '\\' in %.*s", r->op,
                                 (int)(n > 200 ? 200 : n), w);
        char d = w[++i];
        if (d >= '0' && d <= '9') {
            if ((uint32_t)(d - '0') > r->ngroups)
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "%s: Rewrite schema requests %d matches, but the regexp only has %u parenthesized "
                                     "subexpressions", r->op, d - '0', r->ngroups);
        } else if (d != '\\') {
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: invalid rewrite pattern: \\%c in %.*s", r->op, d,
                                 (int)(n > 200 ? 200 : n), w);
        }
    }
    return VG_OK;
}

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n) {
    if (b->oom || n == 0) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n) cap *= 2;
        char *q = vg__realloc(b->p, b->cap, cap);
        if (!q) {
            b->oom = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

/* Appends the rewrite of the current match (checked by check_rewrite). */
static void apply_rewrite(sbuf *b, const char *w, size_t wn, const char *s, const rx *r) {
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(r->md);
    for (size_t i = 0; i < wn; i++) {
        if (w[i] != '\\') {
            size_t j = i;
            while (j < wn && w[j] != '\\') j++;
            sb_add(b, w + i, j - i);
            i = j - 1;
            continue;
        }
        char d = w[++i];
        if (d == '\\') {
            sb_add(b, "\\", 1);
        } else {
            int g = d - '0';
            if (ov[2 * g] != PCRE2_UNSET) sb_add(b, s + ov[2 * g], ov[2 * g + 1] - ov[2 * g]);
        }
    }
}

/* Byte length of the UTF-8 character at s[0..n) (1 for an invalid sequence), as RE2's
 * chartorune when GlobalReplace skips past an empty match. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (len <= 1 || len > n) return 1;
    for (size_t k = 1; k < len; k++)
        if ((s[k] & 0xC0) != 0x80) return 1;
    uint32_t cp = len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < len; k++) cp = (cp << 6) | (s[k] & 0x3F);
    if (cp > 0x10FFFF || (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)) return 1;
    return len;
}

/* RE2::Replace / RE2::GlobalReplace of element s[0..n) into b; *changed when any
 * replacement was made. 0 ok, -1 error (st set). */
static int replace_one(rx *r, const char *s, size_t n, const char *w, size_t wn, bool global, int64_t elem, sbuf *b,
                       bool *changed, vg_status *st) {
    *changed = false;
    size_t p = 0;
    size_t lastend = (size_t)-1;
    int count = 0;
    while (p <= n) {
        int m = rx_match(r, s, n, p, elem, st);
        if (m < 0) return -1;
        if (m == 0) break;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(r->md);
        size_t ms = ov[0], me = ov[1];
        if (p < ms) sb_add(b, s + p, ms - p);
        if (ms == lastend && ms == me) {     /* empty match at the end of the last one */
            size_t k = p < n ? utf8_len((const unsigned char *)s + p, n - p) : 1;
            if (p < n) sb_add(b, s + p, k);
            p += k;
            continue;
        }
        apply_rewrite(b, w, wn, s, r);
        p = me;
        lastend = p;
        count++;
        if (!global) break;
    }
    if (count == 0) return 0;
    if (p < n) sb_add(b, s + p, n - p);
    *changed = true;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* shapes and kernels */

static vg_code want_string(vg_op *op, int i, const char *arg, bool scalar, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, i);
    if (dt != VG_STRING)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Input '%s' of '%s' Op (%s) has type %s that does not match "
                             "expected type of string.", arg, vg_op_type(op), vg_op_name(op), vg_dtype_name(dt));
    vg_shape s = vg__op_input_shape(op, i);
    if (scalar && s.ndims > 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Shape must be rank 0 but is rank %d for input '%s' of %s (%s)",
                             s.ndims, arg, vg_op_type(op), vg_op_name(op));
    return VG_OK;
}

static bool is_static(const vg_op *op) { return strncmp(vg_op_type(op), "Static", 6) == 0; }
static bool is_replace(const vg_op *op) { return strstr(vg_op_type(op), "Replace") != NULL; }

static vg_code shape_regex(vg_op *op, vg_status *st) {
    bool stat = is_static(op), repl = is_replace(op);
    vg_code c = want_string(op, 0, "input", false, st);
    if (!c && !stat) c = want_string(op, 1, "pattern", true, st);
    if (!c && !stat && repl) c = want_string(op, 2, "rewrite", true, st);
    if (c) return c;
    if (stat) {   /* the pattern is known now: refuse a bad one when the graph is built, as TF's kernel constructor */
        const char *p, *w;
        size_t n, wn;
        if (!vg_op_attr_string(op, "pattern", &p, &n))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s %s needs attr 'pattern'", vg_op_type(op), vg_op_name(op));
        if (repl && !vg_op_attr_string(op, "rewrite", &w, &wn))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s %s needs attr 'rewrite'", vg_op_type(op), vg_op_name(op));
        rx r;
        c = rx_compile(p, n, !repl, &r, st, vg_op_type(op));
        if (!c && repl) c = check_rewrite(w, wn, &r, st);
        rx_free(&r);
        if (c) return c;
    }
    return vg__op_set_single_output(op, repl ? VG_STRING : VG_BOOL, vg__op_input_shape(op, 0));
}

/* A scalar string input of the kernel (pattern, rewrite). */
static vg_code scalar_string(vg__kctx *ctx, int i, const char *what, const char **s, size_t *n) {
    const vg_tensor *t = vg__kctx_input(ctx, i);
    if (!t || vg_tensor_ndims(t) != 0)
        return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "%s must be scalar, but received rank %d", what,
                             t ? vg_tensor_ndims(t) : -1);
    *s = vg_tensor_string(t, 0, n);
    if (!*s) *s = "", *n = 0;
    return VG_OK;
}

static vg_code kernel_regex(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    bool stat = is_static(op), repl = is_replace(op);
    const char *p = "", *w = "";
    size_t pn = 0, wn = 0;
    bool global = true;
    vg_code c = VG_OK;
    if (stat) {
        if (!vg_op_attr_string(op, "pattern", &p, &pn) || (repl && !vg_op_attr_string(op, "rewrite", &w, &wn)))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: missing pattern/rewrite attr", vg_op_type(op));
    } else {
        c = scalar_string(ctx, 1, "Pattern", &p, &pn);
        if (!c && repl) c = scalar_string(ctx, 2, "Rewrite", &w, &wn);
        if (c) return c;
    }
    if (repl && !vg_op_attr_bool(op, "replace_global", &global)) global = true;
    rx r;
    c = rx_compile(p, pn, !repl, &r, st, vg_op_type(op));
    if (c) return c;
    r.deadline_ns = vg__kctx_deadline_ns(ctx);
    if (repl && (c = check_rewrite(w, wn, &r, st)) != VG_OK) {
        rx_free(&r);
        return c;
    }
    const vg_tensor *in = vg__kctx_input(ctx, 0);
    int64_t dims[VG_MAX_DIMS];
    int nd = vg_tensor_ndims(in);
    for (int d = 0; d < nd; d++) dims[d] = vg_tensor_dim(in, d);
    vg_tensor *out;
    c = vg__kctx_alloc_output(ctx, 0, repl ? VG_STRING : VG_BOOL, dims, nd, &out);
    sbuf b = {0};
    int64_t total = vg_tensor_num_elements(in);
    for (int64_t i = 0; !c && i < total; i++) {
        size_t n = 0;
        const char *s = vg_tensor_string(in, i, &n);
        if (!s) s = "", n = 0;
        if (!repl) {
            int m = rx_match(&r, s, n, 0, i, st);
            if (m < 0) c = st->code;
            else ((bool *)vg_tensor_data(out))[i] = m == 1;
            continue;
        }
        bool changed;
        b.n = 0;
        if (replace_one(&r, s, n, w, wn, global, i, &b, &changed, st) < 0) {
            c = st->code;
        } else if (b.oom) {
            c = VG_OOM(st, "RegexReplace output");
        } else {
            c = changed ? vg_tensor_set_string(out, i, b.p ? b.p : "", b.n, st) : vg_tensor_set_string(out, i, s, n, st);
        }
    }
    vg__free(b.p);
    rx_free(&r);
    return c;
}

/* ------------------------------------------------------------------------ */
/* builders */

vg_output vg_regex_replace(vg_graph *g, vg_output input, vg_output pattern, vg_output rewrite, bool replace_global,
                           const char *name) {
    vg_op_builder *b =
        vg__builder_with_inputs(g, "RegexReplace", name, "RegexReplace", (vg_output[]){input, pattern, rewrite}, 3);
    vg_op_builder_set_attr_bool(b, "replace_global", replace_global);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_static_regex_replace(vg_graph *g, vg_output input, const char *pattern, const char *rewrite,
                                  bool replace_global, const char *name) {
    vg_op_builder *b =
        vg__builder_with_inputs(g, "StaticRegexReplace", name, "StaticRegexReplace", (vg_output[]){input}, 1);
    vg_op_builder_set_attr_string(b, "pattern", pattern ? pattern : "", pattern ? strlen(pattern) : 0);
    vg_op_builder_set_attr_string(b, "rewrite", rewrite ? rewrite : "", rewrite ? strlen(rewrite) : 0);
    vg_op_builder_set_attr_bool(b, "replace_global", replace_global);
    return vg_out(vg_op_builder_finish(b), 0);
}

vg_output vg_regex_full_match(vg_graph *g, vg_output input, vg_output pattern, const char *name) {
    return vg__build_simple(g, "RegexFullMatch", name, "RegexFullMatch", (vg_output[]){input, pattern}, 2);
}

vg_output vg_static_regex_full_match(vg_graph *g, vg_output input, const char *pattern, const char *name) {
    vg_op_builder *b =
        vg__builder_with_inputs(g, "StaticRegexFullMatch", name, "StaticRegexFullMatch", (vg_output[]){input}, 1);
    vg_op_builder_set_attr_string(b, "pattern", pattern ? pattern : "", pattern ? strlen(pattern) : 0);
    return vg_out(vg_op_builder_finish(b), 0);
}

const vg__op_def vg__ops_regex[] = {
    {"RegexReplace", 3, 3, NOGRAD, 0, shape_regex, kernel_regex, NULL},
    {"StaticRegexReplace", 1, 1, NOGRAD, 0, shape_regex, kernel_regex, NULL},
    {"RegexFullMatch", 2, 2, NOGRAD, 0, shape_regex, kernel_regex, NULL},
    {"StaticRegexFullMatch", 1, 1, NOGRAD, 0, shape_regex, kernel_regex, NULL},
    {0},
};
