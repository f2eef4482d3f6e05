/* test_regex_ops.c - RegexReplace, StaticRegexReplace, RegexFullMatch, StaticRegexFullMatch
 * (src/kernels/strings/regex_ops.c), translated from TF 1.15's regex_replace_op_test.py and
 * regex_full_match_op_test.py (each variant test runs on both the tensor and the static
 * form, as TF's parameterized tests), plus RE2's syntax and GlobalReplace rules and the
 * guards against hostile patterns. */
#include "test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include "session_test_util.h"
#include <time.h>

/* One replace over values with either op form (is_static); checks the outputs. */
static void check_replace(bool is_static, const char *const *values, int n, const char *pattern, const char *rewrite,
                          bool global, const char *const *want) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output in = strings(g, values, n, "in");
    vg_output r = is_static ? vg_static_regex_replace(g, in, pattern, rewrite, global, NULL)
                            : vg_regex_replace(g, in, vg_const_string(g, pattern, "p"), vg_const_string(g, rewrite, "w"),
                                               global, NULL);
    CHECK(r.op != NULL);
    CHECK_STR_CONTAINS(vg_op_type(r.op), is_static ? "StaticRegexReplace" : "RegexReplace");
    vg_tensor *t = run1(g, r, &st);
    CHECK_OK(st.code, &st);
    CHECK(t && vg_tensor_ndims(t) == 1 && vg_tensor_dim(t, 0) == n);
    for (int i = 0; t && i < n; i++) CHECK(str_is(t, i, want[i]));
    vg_tensor_free(t);
    vg_graph_free(g);
}

/* Replace whose pattern or rewrite is refused: the static form at graph build, the tensor
 * form at run time; both INVALID_ARGUMENT with msg_part in the message. */
static void check_replace_refused(const char *pattern, const char *rewrite, const char *msg_part) {
    vg_status st;
    const char *v[] = {"abc"};
    for (int is_static = 0; is_static < 2; is_static++) {
        vg_graph *g = vg_graph_new();
        vg_output in = strings(g, v, 1, "in");
        if (is_static) {
            vg_output r = vg_static_regex_replace(g, in, pattern, rewrite, true, NULL);
            CHECK(r.op == NULL);
            CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
        } else {
            vg_output r = vg_regex_replace(g, in, vg_const_string(g, pattern, "p"), vg_const_string(g, rewrite, "w"),
                                           true, NULL);
            vg_tensor *t = run1(g, r, &st);
            CHECK(t == NULL);
            vg_tensor_free(t);
            CHECK_CODE(st.code, VG_INVALID_ARGUMENT);
        }
        CHECK_STR_CONTAINS(st.msg, msg_part);
        vg_graph_free(g);
    }
}

static void check_full_match(bool is_static, const char *const *values, int n, const char *pattern, const bool *want) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output in = strings(g, values, n, "in");
    vg_output m = is_static ? vg_static_regex_full_match(g, in, pattern, NULL)
                            : vg_regex_full_match(g, in, vg_const_string(g, pattern, "p"), NULL);
    CHECK(m.op != NULL);
    vg_tensor *t = run1(g, m, &st);
    CHECK_OK(st.code, &st);
    const bool *b = t ? vg_tensor_data(t) : NULL;
    CHECK(b && vg_tensor_dtype(t) == VG_BOOL);
    for (int i = 0; b && i < n; i++) {
        if (b[i] != want[i]) fprintf(stderr, "  %s on \"%s\": got %d\n", pattern, values[i], b[i]);
        CHECK(b[i] == want[i]);
    }
    vg_tensor_free(t);
    vg_graph_free(g);
}

/* RegexReplaceOpVariantsTest: testForwarding (input "AbCdE", "HiJkL" is TF's substr of
 * "AbCdEfG", "HiJkLmN"), testRemovePrefix, testRegexReplace, testEmptyMatch, testGlobal. */
static void test_tf_variants(void) {
    for (int s = 0; s < 2; s++) {
        check_replace(s, (const char *[]){"AbCdE", "HiJkL"}, 2, "\\p{Ll}", ".", true,
                      (const char *[]){"A.C.E", "H.J.L"});
        check_replace(s, (const char *[]){"a:foo", "a:bar", "a:foo", "b:baz", "b:qux", "ca:b"}, 6, "^(a:|b:)", "", false,
                      (const char *[]){"foo", "bar", "foo", "baz", "qux", "ca:b"});
        check_replace(s, (const char *[]){"aba\naba", "abcdabcde"}, 2, "a.*a", "(\\0)", true,
                      (const char *[]){"(aba)\n(aba)", "(abcda)bcde"});
        check_replace(s, (const char *[]){"abc", "1"}, 2, "", "x", true, (const char *[]){"xaxbxcx", "x1x"});
        check_replace(s, (const char *[]){"ababababab", "abcabcabc", ""}, 3, "ab", "abc", true,
                      (const char *[]){"abcabcabcabcabc", "abccabccabcc", ""});
    }
}

/* testInvalidPattern (both ops): "A[" is "Invalid pattern". */
static void test_tf_invalid_pattern(void) {
    check_replace_refused("A[", "x", "Invalid pattern");
    for (int s = 0; s < 2; s++) {
        vg_status st;
        vg_graph *g = vg_graph_new();
        vg_output in = strings(g, (const char *[]){"abc", "1"}, 2, "in");
        vg_output m = s ? vg_static_regex_full_match(g, in, "A[", NULL)
                        : vg_regex_full_match(g, in, vg_const_string(g, "A[", "p"), NULL);
        if (s) {
            CHECK(m.op == NULL);
            CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
        } else {
            vg_tensor *t = run1(g, m, &st);
            CHECK(t == NULL);
            vg_tensor_free(t);
            CHECK_CODE(st.code, VG_INVALID_ARGUMENT);
        }
        CHECK_STR_CONTAINS(st.msg, "Invalid pattern");
        vg_graph_free(g);
    }
}

/* RegexFullMatchOpVariantsTest: testRegexFullMatch, testRegexFullMatchTwoDims, testEmptyMatch. */
static void test_tf_full_match(void) {
    for (int s = 0; s < 2; s++) {
        check_full_match(s, (const char *[]){"abaaba", "abcdabcde"}, 2, "a.*a", (const bool[]){true, false});
        check_full_match(s, (const char *[]){"abc", "1"}, 2, "", (const bool[]){false, false});
        /* anchoring: a prefix or suffix match is not a full match; alternation backtracks */
        check_full_match(s, (const char *[]){"ab", "abc", "xab", "a"}, 4, "a|ab", (const bool[]){true, false, false, true});
        check_full_match(s, (const char *[]){"ABC", "abd"}, 2, "(?i)abc", (const bool[]){true, false});
        check_full_match(s, (const char *[]){"abc\n", "abc"}, 2, "abc$", (const bool[]){false, true});
        check_full_match(s, (const char *[]){"s3://b/x", "/tmp/x"}, 2, "^s3://.*", (const bool[]){true, false});
    }
    /* testRegexFullMatchTwoDims */
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_tensor *v = vg_tensor_new(VG_STRING, (int64_t[]){2, 2}, 2, &st);
    const char *w[] = {"abaaba", "abcdabcde", "acdcba", "ebcda"};
    for (int i = 0; i < 4; i++) vg_tensor_set_string(v, i, w[i], strlen(w[i]), &st);
    vg_output in = vg_const(g, v, "in");
    vg_tensor_free(v);
    vg_tensor *t = run1(g, vg_static_regex_full_match(g, in, "a.*a", NULL), &st);
    CHECK_OK(st.code, &st);
    const bool *b = t ? vg_tensor_data(t) : NULL;
    CHECK(t && vg_tensor_ndims(t) == 2 && vg_tensor_dim(t, 0) == 2 && vg_tensor_dim(t, 1) == 2);
    CHECK(b && b[0] && !b[1] && b[2] && !b[3]);
    vg_tensor_free(t);
    vg_graph_free(g);
}

/* RE2's semantics where PCRE's defaults differ, and RE2's rewrite rules. */
static void test_re2_semantics(void) {
    for (int s = 0; s < 2; s++) {
        /* '$' is the end of the text only (PCRE's default also matches before a final \n) */
        check_replace(s, (const char *[]){"a\n", "ba"}, 2, "a$", "X", false, (const char *[]){"a\n", "bX"});
        /* (?m): '$' before each newline */
        check_replace(s, (const char *[]){"a\na"}, 1, "(?m)a$", "X", true, (const char *[]){"X\nX"});
        /* groups; an unmatched group rewrites to nothing; \\ is a backslash */
        check_replace(s, (const char *[]){"john smith", "b"}, 2, "(\\w+) (\\w+)|b", "\\2\\\\\\1", true,
                      (const char *[]){"smith\\john", "\\"});
        check_replace(s, (const char *[]){"k=v"}, 1, "(?P<key>\\w)=(\\w)", "\\2=\\1", true, (const char *[]){"v=k"});
        /* an empty match after a match is skipped by one UTF-8 character (RE2::GlobalReplace) */
        check_replace(s, (const char *[]){"\xc3\xa9t\xc3\xa9", "abc"}, 2, "x*", "-", true,
                      (const char *[]){"-\xc3\xa9-t-\xc3\xa9-", "-a-b-c-"});
        check_replace(s, (const char *[]){"aaa"}, 1, "a*", "-", true, (const char *[]){"-"});
        check_replace(s, (const char *[]){"baaac"}, 1, "a*", "-", true, (const char *[]){"-b-c-"});
        /* Unicode classes and case folding in UTF-8 */
        check_replace(s, (const char *[]){"\xc3\x89t\xc3\xa9"}, 1, "\\p{Lu}", "U", true, (const char *[]){"Ut\xc3\xa9"});
        /* \d is ASCII, as RE2: Arabic-Indic digit three (U+0663) is not a digit */
        check_replace(s, (const char *[]){"3\xd9\xa3"}, 1, "\\d", "D", true, (const char *[]){"D\xd9\xa3"});
        /* invalid UTF-8 in the subject: the bad byte matches no character, nothing fails */
        check_replace(s, (const char *[]){"a\xff" "b"}, 1, "[ab]", "_", true, (const char *[]){"_\xff_"});
    }
    /* searches run in windows of 256 start positions: matches past the first window,
     * across a window's end, and a 2-byte character at a window's edge */
    {
        char *lng = malloc(2001), *want = malloc(2001);
        memset(lng, 'x', 2000);
        lng[2000] = 0;
        memcpy(lng + 1500, "abc", 3);
        memcpy(lng + 255, "abc", 3);
        memcpy(lng + 511, "\xc3\xa9", 2);
        memcpy(want, lng, 2001);
        memcpy(want + 1500, "AbC", 3);
        memcpy(want + 255, "AbC", 3);
        for (int s = 0; s < 2; s++)
            check_replace(s, (const char *[]){lng}, 1, "a(b)c", "A\\1C", true, (const char *[]){want});
        free(lng), free(want);
    }
    check_replace(true, (const char *[]){"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxy"},
                  1, "y", "Y", false,
                  (const char *[]){"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxY"});
    /* rewrites RE2 cannot apply */
    check_replace_refused("(a)", "\\2", "only has 1 parenthesized");
    check_replace_refused("a", "\\x", "invalid rewrite");
    check_replace_refused("a", "x\\", "invalid rewrite");
}

/* Constructs RE2 refuses (and PCRE2 would accept) are refused, so a TF program never
 * silently means something else; RE2 constructs are accepted. */
static void test_re2_syntax(void) {
    const char *refused[] = {"(a)\\1", "a(?=b)", "a(?!b)", "(?<=a)b", "(?<!a)b", "(?>a+)b", "a++", "a*+", "a?+",
                             "a{2}+", "(?R)", "(?(1)a|b)", "(?#c)a", "(?x)a b", "(*UTF)a", "a\\Kb", "\\Ga", "a\\Z",
                             "\\R", "\\X", "\\h", "\\v", "(?<n>a)", "(?|a)", "a{1001}", "a{2,1001}", "[\\1]",
                             "(?'n'a)", "\\k<n>", "\\g1", "\\C"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        vg_status st;
        vg_graph *g = vg_graph_new();
        vg_output m = vg_static_regex_full_match(g, vg_const_string(g, "ab", "in"), refused[i], NULL);
        if (m.op != NULL) fprintf(stderr, "  pattern %s was accepted\n", refused[i]);
        CHECK(m.op == NULL);
        CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "Invalid pattern");
        vg_graph_free(g);
    }
    const char *accepted[] = {"(?i)a", "(?i:a)b", "(?s).", "(?U)a+", "(?-i)a", "(?P<x>a)", "[[:alpha:]]+", "\\Qa++\\E",
                              "a{2,1000}", "[(?=]", "\\x{41}+", "\\pL+", "\\p{Greek}", "a+?", "\\Aa\\z", "\\b\\B",
                              "[^]a]", "\\0101", "x{", "\\.\\+"};
    for (size_t i = 0; i < sizeof accepted / sizeof *accepted; i++) {
        vg_status st;
        vg_graph *g = vg_graph_new();
        vg_output m = vg_static_regex_full_match(g, vg_const_string(g, "ab", "in"), accepted[i], NULL);
        if (m.op == NULL) {
            vg_graph_status(g, &st);
            fprintf(stderr, "  pattern %s was refused: %s\n", accepted[i], st.msg);
        }
        CHECK(m.op != NULL);
        vg_graph_free(g);
    }
    /* \Q...\E is literal: "a++" matches itself */
    check_full_match(true, (const char *[]){"a++", "aa"}, 2, "\\Qa++\\E", (const bool[]){true, false});
}

/* A pattern that backtracks catastrophically (RE2 would run it in linear time) fails the
 * run with RESOURCE_EXHAUSTED, quickly, instead of hanging. */
static void test_hostile_pattern(void) {
    const char *subject = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!";
    const char *pats[] = {"(\\w+\\s?)*$", "(a|aa)+$", "(x+x+)+[yz]"};
    for (size_t k = 0; k < 3; k++) {
        for (int s = 0; s < 2; s++) {
            vg_status st;
            vg_graph *g = vg_graph_new();
            vg_output in = vg_const_string(g, k == 2 ? "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" : subject, "in");
            vg_output m = s ? vg_static_regex_replace(g, in, pats[k], "", true, NULL)
                            : vg_regex_full_match(g, in, vg_const_string(g, pats[k], "p"), NULL);
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            vg_tensor *t = run1(g, m, &st);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
            if (t) fprintf(stderr, "  %s (%s form) ran to the end in %.3f s\n", pats[k], s ? "static" : "tensor", secs);
            CHECK(t == NULL);
            vg_tensor_free(t);
            CHECK_STATUS(st.code, &st, VG_RESOURCE_EXHAUSTED, "backtracking limit");
            CHECK(secs < 20.0);
            vg_graph_free(g);
        }
    }
}

/* PCRE2 restarts its backtracking limit at each start position, so a long subject can
 * still cost a lot; the run's timeout_in_ms bounds it (DEADLINE_EXCEEDED, checked every
 * 256 start positions and between match attempts). Subject: 20000 chunks of 20 'a' and
 * a '!'; (a|aa)+[bc] never matches and backtracks through ~fib(20) paths from each 'a'
 * (below the limit): minutes without the timeout; (a|aa)+b|! does the same work before
 * it matches each '!' in a global replace. */
static void test_run_timeout(void) {
    const char *pats[2] = {"(a|aa)+[bc]", "(a|aa)+b|!"};
    size_t n = 20000 * 21;
    char *subject = malloc(n + 1);
    for (size_t i = 0; i < n; i++) subject[i] = i % 21 == 20 ? '!' : 'a';
    subject[n] = 0;
    for (int k = 0; k < 2; k++) {
        vg_status st;
        vg_graph *g = vg_graph_new();
        /* fed, not a Const: a constant input would be folded before the run starts */
        vg_output in = vg_placeholder(g, VG_STRING, NULL, 0, "in");
        vg_output r = vg_static_regex_replace(g, in, pats[k], "", true, NULL);
        vg_tensor *v = vg_tensor_new(VG_STRING, NULL, 0, &st);
        vg_tensor_set_string(v, 0, subject, n, &st);
        vg_session *s = vg_session_new(g, NULL, &st);
        vg_run_options ro = {0};
        ro.timeout_in_ms = 200;
        vg_tensor *out = NULL;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        vg_code c = vg_session_run(s, &ro, &in, &v, 1, &r, &out, 1, NULL, 0, NULL, &st);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        CHECK_STATUS(c, &st, VG_DEADLINE_EXCEEDED, "Timed out");
        CHECK_STR_CONTAINS(st.msg, "StaticRegexReplace");
        CHECK(secs < 10.0);
        vg_tensor_free(v);
        vg_tensor_free(out);
        vg_session_free(s);
        vg_graph_free(g);
    }
    free(subject);
}

/* Shapes and dtypes at graph build; a non-scalar pattern tensor at run time. */
static void test_arguments(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output v = strings(g, (const char *[]){"a", "b"}, 2, "v");
    vg_output r = vg_regex_replace(g, v, v, vg_const_string(g, "x", "w"), true, NULL);   /* pattern is a vector */
    CHECK(r.op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "rank 0");
    vg_graph_free(g);
    g = vg_graph_new();
    r = vg_static_regex_full_match(g, vg_const_f32(g, 1.0f, "f"), "a", NULL);
    CHECK(r.op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "string");
    vg_graph_free(g);
    /* a placeholder pattern fed with a vector: "Pattern must be scalar" at run time */
    g = vg_graph_new();
    vg_output p = vg_placeholder(g, VG_STRING, NULL, -1, "p");
    vg_output m = vg_regex_full_match(g, vg_const_string(g, "a", "in"), p, NULL);
    CHECK(m.op != NULL);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *pv = vg_tensor_new(VG_STRING, (int64_t[]){1}, 1, &st);
    vg_tensor_set_string(pv, 0, "a", 1, &st);
    vg_tensor *out = NULL;
    vg_code c = vg_session_run(s, NULL, &p, &pv, 1, &m, &out, 1, NULL, 0, NULL, &st);
    CHECK_STATUS(c, &st, VG_INVALID_ARGUMENT, "Pattern must be scalar");
    kt_teardown(g, s, (vg_tensor *[]){pv, out}, 2, NULL, 0);
}

int main(void) {
    RUN_TEST(test_tf_variants);
    RUN_TEST(test_tf_invalid_pattern);
    RUN_TEST(test_tf_full_match);
    RUN_TEST(test_re2_semantics);
    RUN_TEST(test_re2_syntax);
    RUN_TEST(test_hostile_pattern);
    RUN_TEST(test_run_timeout);
    RUN_TEST(test_arguments);
    TEST_MAIN_END();
}
