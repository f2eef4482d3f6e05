/* test_hparams.c - tf.contrib.training.HParams (vigil/hparams.h), translated from TF's
 * hparam_test.py (HParamsTest: testEmpty, testContains, testSomeValues,
 * testWithPeriodInVariableName, testSetFromMap, testBoolParsing, testBoolParsingFail,
 * testLists, testParseValuesWithBadIndexAssigment*, testWithReusedVariables, testJson,
 * testSetHParam, testSetHParamListNonListMismatch, testSetHParamTypeMismatch, testDel),
 * plus json.dumps's float spellings and the all-or-nothing rule. */
#include "test_util.h"
#include "kernels_fixture.h"
#include "vigil/vigil.h"
#include <math.h>

static vg_hparams *some_values(void) {
    vg_status st;
    vg_hparams *hp = vg_hparams_new();
    vg_hparams_add_int(hp, "aaa", 1, &st);
    vg_hparams_add_float(hp, "b", 2.0, &st);
    vg_hparams_add_string(hp, "c_c", "relu6", &st);
    vg_hparams_add_string(hp, "d", "/a/b=c/d", &st);
    return hp;
}

static void expect(vg_hparams *hp, int64_t aaa, double b, const char *c_c, const char *d) {
    vg_status st;
    int64_t i;
    double f;
    const char *s;
    CHECK_OK(vg_hparams_get_int(hp, "aaa", &i, &st), &st);
    CHECK_EQ_INT(i, aaa);
    CHECK_OK(vg_hparams_get_float(hp, "b", &f, &st), &st);
    CHECK(f == b);
    CHECK_OK(vg_hparams_get_string(hp, "c_c", &s, &st), &st);
    CHECK(strcmp(s, c_c) == 0);
    CHECK_OK(vg_hparams_get_string(hp, "d", &s, &st), &st);
    CHECK(strcmp(s, d) == 0);
}

static void parse_fails(vg_hparams *hp, const char *values, const char *msg) {
    vg_status st;
    CHECK_STATUS(vg_hparams_parse(hp, values, &st), &st, VG_INVALID_ARGUMENT, msg);
}

static void test_empty_and_contains(void) {
    vg_status st;
    vg_hparams *hp = vg_hparams_new();
    CHECK_OK(vg_hparams_parse(hp, "", &st), &st);
    CHECK_EQ_INT(vg_hparams_count(hp), 0);
    parse_fails(hp, "xyz=123", "Unknown hyperparameter type for xyz");
    CHECK_OK(vg_hparams_add_int(hp, "foo", 1, &st), &st);
    CHECK(vg_hparams_contains(hp, "foo"));
    CHECK(!vg_hparams_contains(hp, "bar"));
    vg_hparams_free(hp);
}

static void test_some_values(void) {
    vg_status st;
    vg_hparams *hp = some_values();
    expect(hp, 1, 2.0, "relu6", "/a/b=c/d");
    CHECK_OK(vg_hparams_parse(hp, "aaa=12", &st), &st);
    expect(hp, 12, 2.0, "relu6", "/a/b=c/d");
    CHECK_OK(vg_hparams_parse(hp, "c_c=relu4, b=-2.0e10", &st), &st);
    expect(hp, 12, -2.0e10, "relu4", "/a/b=c/d");
    CHECK_OK(vg_hparams_parse(hp, "c_c=,b=0,", &st), &st);
    expect(hp, 12, 0.0, "", "/a/b=c/d");
    CHECK_OK(vg_hparams_parse(hp, "c_c=2.3\",b=+2,", &st), &st);
    expect(hp, 12, 2.0, "2.3\"", "/a/b=c/d");
    CHECK_OK(vg_hparams_parse(hp, "d=/a/b/c/d,aaa=11,", &st), &st);
    expect(hp, 11, 2.0, "2.3\"", "/a/b/c/d");
    CHECK_OK(vg_hparams_parse(hp, "b=1.5,d=/a=b/c/d,aaa=10,", &st), &st);
    expect(hp, 10, 1.5, "2.3\"", "/a=b/c/d");
    parse_fails(hp, "x=123", "Unknown hyperparameter");
    parse_fails(hp, "aaa=poipoi", "Could not parse hparam 'aaa' of type 'int' with value 'poipoi' in aaa=poipoi");
    parse_fails(hp, "aaa=1.0", "Could not parse");
    parse_fails(hp, "b=12x", "Could not parse hparam 'b' of type 'float'");
    parse_fails(hp, "b=relu", "Could not parse");
    parse_fails(hp, "aaa=[123]", "Must not pass a list for single-valued parameter: aaa");
    /* all or nothing: the good clause before a bad one is not applied */
    parse_fails(hp, "aaa=99,b=oops", "Could not parse");
    parse_fails(hp, "aaa=1,aaa=2", "Multiple assignments to variable 'aaa' in aaa=1,aaa=2");
    parse_fails(hp, "aaa=1;b=2", "with value '1;b=2'"); /* the value runs to the comma */
    parse_fails(hp, "b=1,aaa=1[2", "Malformed hyperparameter value: aaa=1[2");
    parse_fails(hp, "=1", "Malformed hyperparameter value: =1");
    expect(hp, 10, 1.5, "2.3\"", "/a=b/c/d");
    /* Python's int() and float(): spaces around, '_' between digits, inf */
    CHECK_OK(vg_hparams_parse(hp, "aaa= 1_000 ,b=inf", &st), &st);
    int64_t i;
    double f;
    vg_hparams_get_int(hp, "aaa", &i, &st);
    CHECK_EQ_INT(i, 1000);
    vg_hparams_get_float(hp, "b", &f, &st);
    CHECK(isinf(f) && f > 0);
    parse_fails(hp, "aaa=99999999999999999999", "Could not parse");
    vg_hparams_free(hp);
}

static void test_period_in_name(void) {
    vg_status st;
    vg_hparams *hp = vg_hparams_new();
    CHECK_OK(vg_hparams_add_float(hp, "a.b", 0.0, &st), &st);
    CHECK_OK(vg_hparams_parse(hp, "a.b=1.0", &st), &st);
    double f;
    vg_hparams_get_float(hp, "a.b", &f, &st);
    CHECK(f == 1.0);
    CHECK_OK(vg_hparams_add_float(hp, "c.d", 0.0, &st), &st);
    parse_fails(hp, "c.d=abc", "Could not parse");
    CHECK_OK(vg_hparams_add_string(hp, "e.f", "", &st), &st);
    CHECK_OK(vg_hparams_parse(hp, "e.f=abc", &st), &st);
    const char *s;
    vg_hparams_get_string(hp, "e.f", &s, &st);
    CHECK(strcmp(s, "abc") == 0);
    CHECK_OK(vg_hparams_add_float(hp, "d..", 0.0, &st), &st);
    CHECK_OK(vg_hparams_parse(hp, "d..=10.0", &st), &st);
    vg_hparams_get_float(hp, "d..", &f, &st);
    CHECK(f == 10.0);
    vg_hparams_free(hp);
}

static void test_bool_parsing(void) {
    const char *vals[6] = {"true", "false", "True", "False", "1", "0"};
    for (int k = 0; k < 6; k++)
        for (int initial = 0; initial < 2; initial++) {
            vg_status st;
            vg_hparams *hp = vg_hparams_new();
            vg_hparams_add_bool(hp, "use_gpu", initial, &st);
            char buf[64];
            snprintf(buf, sizeof buf, "use_gpu=%s", vals[k]);
            CHECK_OK(vg_hparams_parse(hp, buf, &st), &st);
            bool b;
            vg_hparams_get_bool(hp, "use_gpu", &b, &st);
            CHECK_EQ_INT(b, k == 0 || k == 2 || k == 4);
            vg_hparams_free(hp);
        }
    vg_status st;
    vg_hparams *hp = vg_hparams_new();
    vg_hparams_add_bool(hp, "use_gpu", true, &st);
    parse_fails(hp, "use_gpu=yep", "Could not parse hparam 'use_gpu' of type 'bool'");
    vg_hparams_free(hp);
}

static void test_lists(void) {
    vg_status st;
    vg_hparams *hp = vg_hparams_new();
    int64_t one = 1;
    double two[2] = {2.0, 3.0};
    const char *relu6 = "relu6";
    CHECK_OK(vg_hparams_add_int_list(hp, "aaa", &one, 1, &st), &st);
    CHECK_OK(vg_hparams_add_float_list(hp, "b", two, 2, &st), &st);
    CHECK_OK(vg_hparams_add_string_list(hp, "c_c", &relu6, 1, &st), &st);
    const int64_t *iv;
    const double *fv;
    const char *const *sv;
    int n;
    CHECK_OK(vg_hparams_parse(hp, "aaa=[12,34,56]", &st), &st);
    vg_hparams_get_int_list(hp, "aaa", &iv, &n, &st);
    CHECK(n == 3 && iv[0] == 12 && iv[1] == 34 && iv[2] == 56);
    CHECK_OK(vg_hparams_parse(hp, "c_c=[relu4,relu12],b=[1.0]", &st), &st);
    vg_hparams_get_string_list(hp, "c_c", &sv, &n, &st);
    CHECK(n == 2 && strcmp(sv[0], "relu4") == 0 && strcmp(sv[1], "relu12") == 0);
    vg_hparams_get_float_list(hp, "b", &fv, &n, &st);
    CHECK(n == 1 && fv[0] == 1.0);
    CHECK_OK(vg_hparams_parse(hp, "c_c=[],aaa=[-34]", &st), &st);
    vg_hparams_get_int_list(hp, "aaa", &iv, &n, &st);
    CHECK(n == 1 && iv[0] == -34);
    vg_hparams_get_string_list(hp, "c_c", &sv, &n, &st);
    CHECK_EQ_INT(n, 0);
    CHECK_OK(vg_hparams_parse(hp, "c_c=[_12,3'4\"],aaa=[+3]", &st), &st);
    vg_hparams_get_int_list(hp, "aaa", &iv, &n, &st);
    CHECK(n == 1 && iv[0] == 3);
    vg_hparams_get_string_list(hp, "c_c", &sv, &n, &st);
    CHECK(n == 2 && strcmp(sv[0], "_12") == 0 && strcmp(sv[1], "3'4\"") == 0);
    parse_fails(hp, "x=[123]", "Unknown hyperparameter");
    parse_fails(hp, "aaa=[poipoi]", "Could not parse");
    parse_fails(hp, "aaa=[1.0]", "Could not parse");
    parse_fails(hp, "b=[12x]", "Could not parse");
    parse_fails(hp, "b=[relu]", "Could not parse");
    parse_fails(hp, "aaa=123", "Must pass a list for multi-valued parameter: aaa.");
    /* testParseValuesWithBadIndexAssigment1 / testWithReusedVariables */
    parse_fails(hp, "aaa[1]=[1,2,3]", "Assignment of a list to a list index.");
    parse_fails(hp, "aaa=[100,200],aaa[0]=10", "Multiple assignments to variable 'aaa'");
    parse_fails(hp, "aaa[0]=10,aaa[0]=20", "Multiple assignments to variable 'aaa[0]'");
    parse_fails(hp, "aaa[0]=10,aaa=[100]", "Multiple assignments to variable 'aaa'");
    /* an index clause parses, then override_from_dict refuses its dict as TF 1.15 does */
    parse_fails(hp, "aaa[0]=10", "Must pass a list for multi-valued parameter: aaa.");
    CHECK_STATUS(vg_hparams_add_int_list(hp, "empty", NULL, 0, &st), &st, VG_INVALID_ARGUMENT,
                 "Multi-valued hyperparameters cannot be empty: empty");
    vg_hparams_free(hp);
}

static void test_json(void) {
    vg_status st;
    vg_hparams *hp = vg_hparams_new();
    vg_hparams_add_int(hp, "aaa", 1, &st);
    vg_hparams_add_float(hp, "b", 2.0, &st);
    vg_hparams_add_string(hp, "c_c", "relu6", &st);
    vg_hparams_add_bool(hp, "d", true, &st);
    CHECK_OK(vg_hparams_parse_json(hp, "{\"aaa\": 12, \"b\": 3.0, \"c_c\": \"relu4\", \"d\": false}", &st), &st);
    char *js = vg_hparams_to_json(hp, &st);
    CHECK(js && strcmp(js, "{\"aaa\": 12, \"b\": 3.0, \"c_c\": \"relu4\", \"d\": false}") == 0);
    vg_hparams *hp2 = vg_hparams_new();
    vg_hparams_add_int(hp2, "aaa", 10, &st);
    vg_hparams_add_float(hp2, "b", 20.0, &st);
    vg_hparams_add_string(hp2, "c_c", "hello", &st);
    vg_hparams_add_bool(hp2, "d", false, &st);
    CHECK_OK(vg_hparams_parse_json(hp2, js, &st), &st);
    int64_t i;
    vg_hparams_get_int(hp2, "aaa", &i, &st);
    CHECK_EQ_INT(i, 12);
    vg_free(js);
    vg_hparams_free(hp2);
    /* json.dumps's spellings: repr(float), ensure_ascii, lists */
    vg_hparams *h3 = vg_hparams_new();
    double fl[4] = {0.1, 1e16, 1.5e-05, 123456.789};
    vg_hparams_add_float_list(h3, "f", fl, 4, &st);
    vg_hparams_add_string(h3, "s", "caf\xc3\xa9 \"q\"\n", &st);
    vg_hparams_add_float(h3, "nan", NAN, &st);
    js = vg_hparams_to_json(h3, &st);
    CHECK(js && strcmp(js, "{\"f\": [0.1, 1e+16, 1.5e-05, 123456.789], \"s\": \"caf\\u00e9 \\\"q\\\"\\n\", \"nan\": NaN}") == 0);
    if (js) printf("to_json: %s\n", js);
    vg_free(js);
    /* bytes that are not UTF-8 (an overlong NUL, a lone continuation byte) become U+FFFD,
     * never a \u0000 that parse_json would refuse (fuzz_hparams' round trip) */
    vg_hparams *h4 = vg_hparams_new();
    vg_hparams_add_string(h4, "d", "x", &st);
    CHECK_OK(vg_hparams_parse(h4, "d=l\xc0\x80\xa4", &st), &st);
    js = vg_hparams_to_json(h4, &st);
    CHECK(js && strcmp(js, "{\"d\": \"l\\ufffd\\ufffd\\ufffd\"}") == 0);
    CHECK_OK(vg_hparams_parse_json(h4, js, &st), &st);
    vg_free(js);
    vg_hparams_free(h4);
    /* casts as override_from_dict: an int into a float is fine, the rest as TF refuses;
     * a failing entry changes nothing */
    CHECK_OK(vg_hparams_parse_json(hp, "{\"b\": 7}", &st), &st);
    double f;
    vg_hparams_get_float(hp, "b", &f, &st);
    CHECK(f == 7.0);
    CHECK_STATUS(vg_hparams_parse_json(hp, "{\"b\": 8.5, \"aaa\": 1.5}", &st), &st, VG_INVALID_ARGUMENT,
                 "Could not cast hparam 'aaa' of type '<class 'int'>' from value 1.5");
    vg_hparams_get_float(hp, "b", &f, &st);
    CHECK(f == 7.0);
    CHECK_EQ_INT(vg_hparams_parse_json(hp, "{\"d\": 1}", &st), VG_INVALID_ARGUMENT);
    CHECK_EQ_INT(vg_hparams_parse_json(hp, "{\"zzz\": 1}", &st), VG_NOT_FOUND);
    CHECK_STATUS(vg_hparams_parse_json(hp, "{\"aaa\": 1", &st), &st, VG_INVALID_ARGUMENT, "offset 9");
    CHECK_EQ_INT(vg_hparams_parse_json(hp, "[1]", &st), VG_INVALID_ARGUMENT);
    CHECK_STATUS(vg_hparams_parse_json(hp, "{\"aaa\": [1]}", &st), &st, VG_INVALID_ARGUMENT,
                 "Must not pass a list for single-valued parameter: aaa");
    vg_hparams_free(h3);
    vg_hparams_free(hp);
}

static void test_set_and_del(void) {
    vg_status st;
    vg_hparams *hp = vg_hparams_new();
    vg_hparams_add_int(hp, "int_", 1, &st);
    vg_hparams_add_string(hp, "str_", "str", &st);
    vg_hparams_add_bool(hp, "bool_", true, &st);
    vg_hparams_add_float(hp, "float_", 1.1, &st);
    int64_t li[2] = {1, 2};
    vg_hparams_add_int_list(hp, "list_int", li, 2, &st);
    CHECK_EQ_INT(vg_hparams_set_float(hp, "str_", 2.2, &st), VG_INVALID_ARGUMENT);
    CHECK_EQ_INT(vg_hparams_set_bool(hp, "int_", false, &st), VG_INVALID_ARGUMENT);
    CHECK_EQ_INT(vg_hparams_set_int(hp, "bool_", 1, &st), VG_INVALID_ARGUMENT);
    CHECK_STATUS(vg_hparams_set_float(hp, "int_", 2.2, &st), &st, VG_INVALID_ARGUMENT,
                 "Could not cast hparam 'int_' of type '<class 'int'>' from value 2.2");
    double bad[2] = {2, 3.3};
    CHECK_EQ_INT(vg_hparams_set_float_list(hp, "list_int", bad, 2, &st), VG_INVALID_ARGUMENT);
    CHECK_EQ_INT(vg_hparams_set_string(hp, "int_", "2", &st), VG_INVALID_ARGUMENT);
    CHECK_OK(vg_hparams_set_int(hp, "float_", 1, &st), &st); /* casting int to float is OK */
    double f;
    vg_hparams_get_float(hp, "float_", &f, &st);
    CHECK(f == 1.0);
    CHECK_STATUS(vg_hparams_set_float_list(hp, "int_", bad, 1, &st), &st, VG_INVALID_ARGUMENT, "Must not pass a list");
    CHECK_STATUS(vg_hparams_set_int(hp, "list_int", 1, &st), &st, VG_INVALID_ARGUMENT, "Must pass a list");
    CHECK_EQ_INT(vg_hparams_set_int(hp, "nope", 1, &st), VG_NOT_FOUND);
    /* testDel */
    CHECK_EQ_INT(vg_hparams_set_string(hp, "int_", "will fail", &st), VG_INVALID_ARGUMENT);
    CHECK_STATUS(vg_hparams_add_string(hp, "int_", "will fail", &st), &st, VG_INVALID_ARGUMENT,
                 "Hyperparameter name is reserved: int_");
    CHECK_OK(vg_hparams_del(hp, "int_", &st), &st);
    CHECK_OK(vg_hparams_add_string(hp, "int_", "will work", &st), &st);
    CHECK_OK(vg_hparams_set_string(hp, "int_", "still works", &st), &st);
    const char *s;
    vg_hparams_get_string(hp, "int_", &s, &st);
    CHECK(strcmp(s, "still works") == 0);
    CHECK_EQ_INT(vg_hparams_count(hp), 5);
    CHECK(strcmp(vg_hparams_name(hp, 4), "int_") == 0);
    vg_hparam_type t;
    bool is_list;
    CHECK_OK(vg_hparams_type(hp, "list_int", &t, &is_list, &st), &st);
    CHECK(t == VG_HPARAM_INT && is_list);
    CHECK_EQ_INT(vg_hparams_del(hp, "gone", &st), VG_NOT_FOUND);
    int64_t iv;
    CHECK_EQ_INT(vg_hparams_get_int(hp, "float_", &iv, &st), VG_INVALID_ARGUMENT);
    vg_hparams_free(hp);
}

int main(void) {
    RUN_TEST(test_empty_and_contains);
    RUN_TEST(test_some_values);
    RUN_TEST(test_period_in_name);
    RUN_TEST(test_bool_parsing);
    RUN_TEST(test_lists);
    RUN_TEST(test_json);
    RUN_TEST(test_set_and_del);
    TEST_MAIN_END();
}
