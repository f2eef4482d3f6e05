/*
 * vigil/string_regex.h - TF 1.15's regular-expression string ops (tf.strings.regex_replace,
 * tf.strings.regex_full_match) as graph builders (src/kernels/strings/regex_ops.c):
 *
 *     vg_output s = vg_const_string(g, "a:foo", "s");
 *     vg_output t = vg_static_regex_replace(g, s, "^(a:|b:)", "", false, NULL);   // "foo"
 *     vg_output m = vg_static_regex_full_match(g, s, "[a-z]:.*", NULL);          // true
 *
 * Patterns use RE2's syntax, as TF: what RE2 refuses (backreferences, lookaround, atomic
 * groups, possessive repetition, \K \G \Z \R \X \h \v and other PCRE-only escapes, repeat
 * counts over 1000) is INVALID_ARGUMENT "Invalid pattern: <pattern>, error: ...", even where
 * the engine underneath (PCRE2) would accept it. Matching is UTF-8, '$' matches only at the
 * end of the text outside (?m), \d \w \s \b are ASCII. A match that exceeds the backtracking
 * limit (1e5 steps per start position; RE2 is linear-time, PCRE2 backtracks) fails the run
 * with RESOURCE_EXHAUSTED naming the pattern instead of hanging; as the limit applies per
 * start position, an element of n bytes may still cost up to about n * 1e5 steps, and
 * the run's timeout_in_ms (checked between match attempts) bounds a run.
 *
 * Rewrites use RE2's syntax: \0 the whole match, \1..\9 groups, \\ a backslash; a rewrite
 * naming a group the pattern lacks or holding another escape is INVALID_ARGUMENT (TF's RE2
 * leaves the string unchanged then). replace_global follows RE2::GlobalReplace (an empty
 * match right after a match is skipped: pattern "" and rewrite "x" turn "abc" into "xaxbxcx");
 * otherwise only the first match is replaced.
 *
 * Every builder returns an output that belongs to g; on failure (wrong dtype, a pattern or
 * rewrite input that is not a scalar, a static pattern that does not compile) the graph
 * records INVALID_ARGUMENT and the returned output has op == NULL.
 */
#ifndef VIGIL_STRING_REGEX_H
#define VIGIL_STRING_REGEX_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* RegexReplace(input, pattern, rewrite; replace_global): input any-shape string; pattern and
 * rewrite scalar string tensors, checked at run time (INVALID_ARGUMENT "Invalid pattern").
 * Output: string, input's shape. */
VG_API vg_output vg_regex_replace(vg_graph *g, vg_output input, vg_output pattern, vg_output rewrite,
                                  bool replace_global, const char *name);
/* StaticRegexReplace: pattern and rewrite as attrs (copied), checked when the op is built. */
VG_API vg_output vg_static_regex_replace(vg_graph *g, vg_output input, const char *pattern, const char *rewrite,
                                         bool replace_global, const char *name);
/* RegexFullMatch(input, pattern): bool, input's shape; true where the whole string matches
 * (RE2::FullMatch). pattern is a scalar string tensor. */
VG_API vg_output vg_regex_full_match(vg_graph *g, vg_output input, vg_output pattern, const char *name);
/* StaticRegexFullMatch: pattern as an attr (copied), checked when the op is built. */
VG_API vg_output vg_static_regex_full_match(vg_graph *g, vg_output input, const char *pattern, const char *name);

#ifdef __cplusplus
}
#endif
#endif
