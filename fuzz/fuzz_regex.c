/* fuzz_regex.c - the regex string ops (src/kernels/strings/regex_ops.c) on hostile patterns:
 * byte 0 picks the op (StaticRegexReplace global / first match, StaticRegexFullMatch,
 * RegexReplace with tensor inputs); the rest is pattern NUL rewrite NUL subject. A
 * pattern may be refused (INVALID_ARGUMENT) or exceed the backtracking limit
 * (RESOURCE_EXHAUSTED); anything else than OK or those is a bug, and so is a crash or a
 * hang (libFuzzer's -timeout). Subjects are cut to 256 bytes: the match limit bounds
 * each match attempt, and a global replace makes one attempt per position. */
#include "fuzz_util.h"

static const uint8_t *field(const uint8_t **p, const uint8_t *end, size_t *n) {
    const uint8_t *s = *p;
    const uint8_t *z = memchr(s, 0, (size_t)(end - s));
    *n = z ? (size_t)(z - s) : (size_t)(end - s);
    *p = z ? z + 1 : end;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    fz_dir();
    const uint8_t *p = data + 1, *end = data + size;
    size_t pn, wn, sn;
    const uint8_t *pat = field(&p, end, &pn);
    const uint8_t *rw = field(&p, end, &wn);
    const uint8_t *subj = field(&p, end, &sn);
    if (sn > 256) sn = 256;
    char *ps = strndup((const char *)pat, pn), *ws = strndup((const char *)rw, wn);
    if (!ps || !ws) {
        free(ps);
        free(ws);
        return 0;
    }
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_tensor *t = vg_tensor_new(VG_STRING, NULL, 0, &st);
    if (t) vg_tensor_set_string(t, 0, (const char *)subj, sn, &st);
    vg_output in = vg_const(g, t, "in");
    vg_tensor_free(t);
    vg_output o;
    switch (data[0] & 3) {
    case 0: o = vg_static_regex_replace(g, in, ps, ws, true, NULL); break;
    case 1: o = vg_static_regex_replace(g, in, ps, ws, false, NULL); break;
    case 2: o = vg_static_regex_full_match(g, in, ps, NULL); break;
    default:
        o = vg_regex_replace(g, in, vg_const_string(g, ps, "p"), vg_const_string(g, ws, "w"), (data[0] & 4) != 0, NULL);
        break;
    }
    if (o.op) {
        vg_session *s = vg_session_new(g, NULL, &st);
        vg_tensor *out = NULL;
        if (s) {
            vg_code c = vg_session_run1(s, o, &out, &st);
            if (c != VG_OK && c != VG_INVALID_ARGUMENT && c != VG_RESOURCE_EXHAUSTED) __builtin_trap();
        }
        vg_tensor_free(out);
        vg_session_free(s);
    } else if (vg_graph_status(g, &st) != VG_INVALID_ARGUMENT) {
        __builtin_trap();
    }
    vg_graph_free(g);
    free(ps);
    free(ws);
    return 0;
}
