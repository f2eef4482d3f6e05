/* test_flags.c - vigil/flags.h, tf.flags as absl parses them (absl's flags_test cases
 * that C can express): --name=value / --name value / -name=value, booleans with
 * --flag, --noflag and =true/false/t/f/1/0, "--" ending the flags, positional arguments
 * kept in order, known_only (tf.app.run's tolerant parse), absl's error messages, the
 * --help request and listing, defaults and FLAGS[name].present. */
#include "test_util.h"
#include "vigil/vigil.h"

static vg_flags *make(void) {
    vg_status st;
    vg_flags *f = vg_flags_new();
    CHECK(f != NULL);
    CHECK_OK(vg_flags_define_string(f, "data_dir", "/tmp/data", "Where the data is.", &st), &st);
    CHECK_OK(vg_flags_define_integer(f, "batch_size", 128, "Batch size.", &st), &st);
    CHECK_OK(vg_flags_define_float(f, "learning_rate", 0.01, "Initial learning rate.", &st), &st);
    CHECK_OK(vg_flags_define_boolean(f, "fake_data", false, "Use fake data.", &st), &st);
    CHECK_OK(vg_flags_define_boolean(f, "shuffle", true, "Shuffle the input.", &st), &st);
    return f;
}

static void test_flags__defaults(void) {
    vg_flags *f = make();
    CHECK(strcmp(vg_flags_string(f, "data_dir"), "/tmp/data") == 0);
    CHECK_EQ_INT(vg_flags_integer(f, "batch_size"), 128);
    CHECK_NEAR(vg_flags_float(f, "learning_rate"), 0.01, 0);
    CHECK(!vg_flags_boolean(f, "fake_data") && vg_flags_boolean(f, "shuffle"));
    CHECK(!vg_flags_present(f, "batch_size"));
    /* undefined or of another type: zero values */
    CHECK(vg_flags_string(f, "batch_size") == NULL && vg_flags_integer(f, "nope") == 0);
    vg_flag_type t;
    CHECK(vg_flags_defined(f, "learning_rate", &t) && t == VG_FLAG_FLOAT);
    CHECK(!vg_flags_defined(f, "nope", NULL));
    /* DuplicateFlagError */
    vg_status st;
    CHECK_CODE(vg_flags_define_integer(f, "batch_size", 1, "again", &st), VG_INVALID_ARGUMENT);
    CHECK(strcmp(st.msg, "The flag 'batch_size' is defined twice.") == 0);
    CHECK_CODE(vg_flags_define_string(f, "a=b", NULL, "", &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_flags_define_string(f, "-x", NULL, "", &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_flags_define_string(f, "", NULL, "", &st), VG_INVALID_ARGUMENT);
    vg_flags_free(f);
}

static void test_flags__forms(void) {
    vg_status st;
    vg_flags *f = make();
    char *argv[] = {"prog", "in.txt", "--batch_size=64", "-learning_rate", "0.5", "--data_dir", "/d", "--nofake_data",
                    "out.txt", "--noshuffle", "--fake_data", "--batch_size", "0x10", NULL};
    int argc = 13;
    CHECK_OK(vg_flags_parse(f, &argc, argv, false, &st), &st);
    CHECK_EQ_INT(vg_flags_integer(f, "batch_size"), 16); /* the last one wins; base 16 */
    CHECK_NEAR(vg_flags_float(f, "learning_rate"), 0.5, 0);
    CHECK(strcmp(vg_flags_string(f, "data_dir"), "/d") == 0);
    CHECK(vg_flags_boolean(f, "fake_data") && !vg_flags_boolean(f, "shuffle"));
    CHECK(vg_flags_present(f, "batch_size") && vg_flags_present(f, "shuffle"));
    CHECK(!vg_flags_help_requested(f));
    /* positional arguments kept in order after argv[0] */
    CHECK_EQ_INT(argc, 3);
    CHECK(strcmp(argv[0], "prog") == 0 && strcmp(argv[1], "in.txt") == 0 && strcmp(argv[2], "out.txt") == 0);
    CHECK(argv[3] == NULL);
    /* boolean values: t/f/1/0/TRUE, "--flag value" does not take the value */
    const char *yes[] = {"--fake_data=true", "--fake_data=T", "--fake_data=1", "--fake_data=TRUE", "--fake_data"};
    const char *no[] = {"--fake_data=false", "--fake_data=f", "--fake_data=0", "--fake_data=False", "--nofake_data"};
    for (int i = 0; i < 5; i++) {
        char *a1[] = {"p", (char *)yes[i], NULL};
        argc = 2;
        CHECK_OK(vg_flags_parse(f, &argc, a1, false, &st), &st);
        CHECK(vg_flags_boolean(f, "fake_data"));
        char *a2[] = {"p", (char *)no[i], NULL};
        argc = 2;
        CHECK_OK(vg_flags_parse(f, &argc, a2, false, &st), &st);
        CHECK(!vg_flags_boolean(f, "fake_data"));
    }
    char *a3[] = {"p", "--fake_data", "false", NULL};
    argc = 3;
    CHECK_OK(vg_flags_parse(f, &argc, a3, false, &st), &st);
    CHECK(vg_flags_boolean(f, "fake_data"));
    CHECK(argc == 2 && strcmp(a3[1], "false") == 0);
    /* "--" ends the flags: what follows stays, flags or not */
    char *a4[] = {"p", "--batch_size=3", "--", "--batch_size=4", "x", NULL};
    argc = 5;
    CHECK_OK(vg_flags_parse(f, &argc, a4, false, &st), &st);
    CHECK_EQ_INT(vg_flags_integer(f, "batch_size"), 3);
    CHECK(argc == 3 && strcmp(a4[1], "--batch_size=4") == 0 && strcmp(a4[2], "x") == 0);
    /* negative and float forms */
    char *a5[] = {"p", "--batch_size=-7", "--learning_rate=1e-3", NULL};
    argc = 3;
    CHECK_OK(vg_flags_parse(f, &argc, a5, false, &st), &st);
    CHECK_EQ_INT(vg_flags_integer(f, "batch_size"), -7);
    CHECK_NEAR(vg_flags_float(f, "learning_rate"), 1e-3, 0);
    vg_flags_free(f);
}

/* absl's errors; argv untouched by a failed parse. */
static void expect_error(vg_flags *f, char *arg1, char *arg2, const char *msg) {
    vg_status st;
    char *argv[] = {"p", arg1, arg2, NULL};
    int argc = arg2 ? 3 : 2;
    CHECK_CODE(vg_flags_parse(f, &argc, argv, false, &st), VG_INVALID_ARGUMENT);
    if (strcmp(st.msg, msg)) fprintf(stderr, "got \"%s\", want \"%s\"\n", st.msg, msg);
    CHECK(strcmp(st.msg, msg) == 0);
    CHECK_EQ_INT(argc, arg2 ? 3 : 2);
    CHECK(argv[1] == arg1);
}

static void test_flags__errors(void) {
    vg_flags *f = make();
    expect_error(f, "--unknown=3", NULL, "Unknown command line flag 'unknown'");
    expect_error(f, "--batch_size", NULL, "Missing value for flag --batch_size");
    expect_error(f, "--batch_size=abc", NULL, "flag --batch_size=abc: invalid literal for int() with base 10: 'abc'");
    expect_error(f, "--batch_size=99999999999999999999", NULL,
                 "flag --batch_size=99999999999999999999: invalid literal for int() with base 10: "
                 "'99999999999999999999'");
    expect_error(f, "--learning_rate=fast", NULL, "flag --learning_rate=fast: could not convert string to float: 'fast'");
    expect_error(f, "--fake_data=maybe", NULL, "flag --fake_data=maybe: Non-boolean argument to boolean flag");
    expect_error(f, "--nofake_data=1", NULL, "--nofake_data=1 does not take an argument");
    expect_error(f, "--batch_size=5", "--nobatch_size", "Unknown command line flag 'nobatch_size'");
    CHECK_EQ_INT(vg_flags_integer(f, "batch_size"), 5); /* parsed before the failure: kept */
    vg_flags_free(f);
}

/* tf.app.run parses with known_only=True: unknown flags stay in argv for main. */
static void test_flags__known_only(void) {
    vg_status st;
    vg_flags *f = make();
    char *argv[] = {"p", "--other=1", "--batch_size=2", "pos", "--more", "--", "--batch_size=9", NULL};
    int argc = 7;
    CHECK_OK(vg_flags_parse(f, &argc, argv, true, &st), &st);
    CHECK_EQ_INT(vg_flags_integer(f, "batch_size"), 2);
    CHECK_EQ_INT(argc, 6);
    const char *want[6] = {"p", "--other=1", "pos", "--more", "--", "--batch_size=9"};
    for (int i = 0; i < 6 && i < argc; i++) CHECK(strcmp(argv[i], want[i]) == 0);
    vg_flags_free(f);
}

static void test_flags__help(void) {
    vg_status st;
    vg_flags *f = make();
    char *argv[] = {"prog", "--help", NULL};
    int argc = 2;
    CHECK_OK(vg_flags_parse(f, &argc, argv, false, &st), &st);
    CHECK(vg_flags_help_requested(f));
    CHECK_EQ_INT(argc, 1);
    char *h = vg_flags_help(f, "prog");
    CHECK(h != NULL);
    if (h) {
        CHECK(strncmp(h, "USAGE: prog [flags]\nflags:\n", 27) == 0);
        CHECK_STR_CONTAINS(h, "  --batch_size: Batch size.\n    (default: '128')\n    (an integer)\n");
        CHECK_STR_CONTAINS(h, "  --data_dir: Where the data is.\n    (default: '/tmp/data')\n");
        CHECK_STR_CONTAINS(h, "  --[no]fake_data: Use fake data.\n    (default: 'false')\n");
        CHECK_STR_CONTAINS(h, "  --learning_rate: Initial learning rate.\n    (default: '0.01')\n    (a number)\n");
        /* sorted by name */
        CHECK(strstr(h, "--batch_size") < strstr(h, "--data_dir"));
        CHECK(strstr(h, "--data_dir") < strstr(h, "fake_data"));
        CHECK(strstr(h, "--learning_rate") < strstr(h, "shuffle"));
    }
    vg_free(h);
    /* the next parse without it clears the request; -? asks too */
    char *a2[] = {"prog", NULL};
    argc = 1;
    CHECK_OK(vg_flags_parse(f, &argc, a2, false, &st), &st);
    CHECK(!vg_flags_help_requested(f));
    char *a3[] = {"prog", "-?", NULL};
    argc = 2;
    CHECK_OK(vg_flags_parse(f, &argc, a3, false, &st), &st);
    CHECK(vg_flags_help_requested(f));
    /* a program's own flag named help is a flag like any other */
    CHECK_OK(vg_flags_define_boolean(f, "help", false, "mine", &st), &st);
    char *a4[] = {"prog", "--help", NULL};
    argc = 2;
    CHECK_OK(vg_flags_parse(f, &argc, a4, false, &st), &st);
    CHECK(!vg_flags_help_requested(f) && vg_flags_boolean(f, "help"));
    vg_flags_free(f);
}

int main(void) {
    RUN_TEST(test_flags__defaults);
    RUN_TEST(test_flags__forms);
    RUN_TEST(test_flags__errors);
    RUN_TEST(test_flags__known_only);
    RUN_TEST(test_flags__help);
    TEST_MAIN_END();
}
