/* test_data_cache_file.c - Dataset.cache(filename): the first full pass writes a tensor
 * bundle at the prefix; later epochs of a repeat, and a new graph and session over
 * another input (as a later process would), read the file instead of the input;
 * string and numeric components of any shape survive; an iterator dropped mid-pass
 * leaves no file; a corrupt index is DATA_LOSS. */
#include "test_util.h"
#include "vigil/vigil.h"
#define TMPDIR_TAG "cache_file"
#include "tmpdir_util.h"
#include <sys/stat.h>
#include <unistd.h>

/* map x -> (x * 10, the English name of x) */
static vg_code pair_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    const char *names[5] = {"zero", "one", "two", "three", "four"};
    vg_output tbl = vg_const_array(fg, VG_STRING, (const int64_t[]){5}, 1, names, "names");
    outs[0] = vg_mul(fg, args[0], vg_const_i64(fg, 10, "ten"), NULL);
    outs[1] = vg_gather(fg, tbl, args[0], 0, NULL);
    *nouts = 2;
    return vg_graph_status(fg, NULL);
}

/* range(k).map(pair_fn).cache(prefix) */
static vg_output cached_pairs(vg_graph *g, int64_t k, const char *prefix) {
    return vg_dataset_cache(g, vg_dataset_map(g, vg_dataset_range(g, 0, k, 1, NULL), pair_fn, NULL, NULL), prefix, NULL);
}

/* Drains ds: component 0 values into v, component 1 strings' first letters into s. */
static int drain(vg_graph *g, vg_output ds, int64_t *v, char *s, int max, int stop_after, vg_code *end) {
    vg_status st;
    vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *sess = vg_session_new(g, NULL, &st);
    int n = 0;
    *end = VG_OK;
    while (sess && n < max && (stop_after < 0 || n < stop_after)) {
        vg_tensor *o[2] = {NULL, NULL};
        vg_code rc = vg_session_run(sess, NULL, NULL, NULL, 0, (vg_output[]){vg_out(next, 0), vg_out(next, 1)}, o, 2, NULL, 0,
                                    NULL, &st);
        if (rc != VG_OK) {
            *end = rc;
            if (rc != VG_OUT_OF_RANGE) fprintf(stderr, "drain: %s\n", st.msg);
            break;
        }
        v[n] = *(int64_t *)vg_tensor_data(o[0]);
        size_t l;
        s[n] = vg_tensor_string(o[1], 0, &l)[0];
        n++;
        vg_tensor_free(o[0]), vg_tensor_free(o[1]);
    }
    vg_session_free(sess);
    return n;
}

static void test_cache_file(void) {
    char prefix[512], idx[600];
    snprintf(idx, sizeof idx, "%s.index", tmp_path(prefix, "cache"));
    int64_t v[32];
    char s[32];
    vg_code end;
    /* an iterator dropped after 2 elements leaves no file */
    vg_graph *g = vg_graph_new();
    vg_output ds = cached_pairs(g, 5, prefix);
    CHECK_EQ_INT(drain(g, ds, v, s, 32, 2, &end), 2);
    vg_graph_free(g);
    CHECK(access(idx, F_OK) != 0);
    /* range(5).map.cache(file).repeat(2): ten elements, the file written at the first end */
    g = vg_graph_new();
    ds = cached_pairs(g, 5, prefix);
    int n = drain(g, vg_dataset_repeat(g, ds, 2, NULL), v, s, 32, -1, &end);
    CHECK_EQ_INT(n, 10);
    CHECK_CODE(end, VG_OUT_OF_RANGE);
    for (int i = 0; i < n; i++) CHECK(v[i] == (i % 5) * 10);
    CHECK(s[0] == 'z' && s[3] == 't' && s[9] == 'f');
    vg_graph_free(g);
    CHECK(access(idx, F_OK) == 0);
    /* a new graph whose input is different (range(3)) reads the file: the cached 5 */
    g = vg_graph_new();
    ds = cached_pairs(g, 3, prefix);
    n = drain(g, ds, v, s, 32, -1, &end);
    CHECK_EQ_INT(n, 5);
    CHECK(v[4] == 40 && s[4] == 'f');
    vg_graph_free(g);
    /* a corrupt index */
    FILE *f = fopen(idx, "wb");
    fputs("not an sstable at all, not at all", f);
    fclose(f);
    g = vg_graph_new();
    ds = cached_pairs(g, 3, prefix);
    n = drain(g, ds, v, s, 32, -1, &end);
    CHECK_EQ_INT(n, 0);
    CHECK_CODE(end, VG_DATA_LOSS);
    vg_graph_free(g);
}

int main(void) {
    make_tmpdir();
    RUN_TEST(test_cache_file);
    remove_tmpdir();
    TEST_MAIN_END();
}
