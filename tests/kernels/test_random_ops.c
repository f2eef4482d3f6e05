/* test_random_ops.c - RandomUniform, RandomStandardNormal, TruncatedNormal and
 * RandomShuffle: determinism for fixed (seed, seed2) (a new session replays the
 * stream, consecutive runs differ), nondeterminism for (0, 0), moments on 100k
 * samples, truncation to +-2, independence from the thread split, concurrent runs
 * never sharing numbers, shuffles being permutations, and the error paths. */
#include "test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include <pthread.h>

#define D(...) ((const int64_t[]){__VA_ARGS__})

static vg_output shape_const(vg_graph *g, const int64_t *dims, int nd) {
    int32_t v[8];
    for (int i = 0; i < nd; i++) v[i] = (int32_t)dims[i];
    return vg_const_i32_vec(g, v, nd, NULL);
}

/* Runs y `runs` times in one session (opts may be NULL); out[i] gets each value. */
static void run_n(vg_graph *g, const vg_session_options *opts, vg_output y, int runs, vg_tensor **out) {
    vg_status st;
    vg_session *s = vg_session_new(g, opts, &st);
    CHECK(s != NULL);
    for (int i = 0; i < runs; i++) {
        out[i] = NULL;
        CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, &y, &out[i], 1, NULL, 0, NULL, &st), &st);
    }
    vg_session_free(s);
}

static bool same_bits(const vg_tensor *a, const vg_tensor *b) {
    return a && b && vg_tensor_nbytes(a) == vg_tensor_nbytes(b) &&
           memcmp(vg_tensor_data(a), vg_tensor_data(b), vg_tensor_nbytes(a)) == 0;
}

static double at(const vg_tensor *t, int64_t i) {
    return vg_tensor_dtype(t) == VG_DOUBLE ? ((const double *)vg_tensor_data(t))[i] : ((const float *)vg_tensor_data(t))[i];
}

static void moments(const vg_tensor *t, double *mean, double *var, double *lo, double *hi) {
    int64_t n = vg_tensor_num_elements(t);
    double s = 0, s2 = 0;
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        double v = at(t, i);
        s += v;
        s2 += v * v;
        if (v < *lo) *lo = v;
        if (v > *hi) *hi = v;
    }
    *mean = s / (double)n;
    *var = s2 / (double)n - *mean * *mean;
}

typedef vg_output (*rand_builder)(vg_graph *, vg_output, vg_dtype, int64_t, int64_t, const char *);

static void test_random__determinism(void) {
    rand_builder builders[3] = {vg_random_uniform, vg_random_standard_normal, vg_truncated_normal};
    for (int b = 0; b < 3; b++) {
        for (int d = 0; d < 2; d++) {
            vg_dtype dt = d ? VG_DOUBLE : VG_FLOAT;
            vg_graph *g = vg_graph_new();
            vg_output y = builders[b](g, shape_const(g, D(3, 333), 2), dt, 7, 11, NULL);
            vg_output y2 = builders[b](g, shape_const(g, D(3, 333), 2), dt, 7, 12, NULL);
            vg_tensor *a[2], *c[1], *e[1];
            run_n(g, NULL, y, 2, a);
            run_n(g, NULL, y, 1, c);
            run_n(g, NULL, y2, 1, e);
            CHECK(same_bits(a[0], c[0]));  /* new session: same first run */
            CHECK(!same_bits(a[0], a[1])); /* consecutive runs differ */
            CHECK(!same_bits(a[0], e[0])); /* another seed2, another stream */
            CHECK(a[0] && vg_tensor_dtype(a[0]) == dt && vg_tensor_dim(a[0], 1) == 333);
            vg_tensor_free(a[0]), vg_tensor_free(a[1]), vg_tensor_free(c[0]), vg_tensor_free(e[0]);
            vg_graph_free(g);
        }
    }
    /* seeds (0, 0): each session draws a fresh key */
    vg_graph *g = vg_graph_new();
    vg_output y = vg_random_uniform(g, shape_const(g, D(64), 1), VG_FLOAT, 0, 0, NULL);
    vg_tensor *a[1], *c[1];
    run_n(g, NULL, y, 1, a);
    run_n(g, NULL, y, 1, c);
    CHECK(!same_bits(a[0], c[0]));
    vg_tensor_free(a[0]), vg_tensor_free(c[0]);
    /* TF's seed rules through the graph seed give the same pair twice */
    int64_t s1, s2, t1, t2;
    vg_graph_set_seed(g, 42);
    vg_graph_get_seed(g, 5, &s1, &s2);
    vg_graph_get_seed(g, 5, &t1, &t2);
    CHECK(s1 == t1 && s2 == t2 && s1 == 42);
    vg_graph_free(g);
}

static void test_random__moments(void) {
    struct { rand_builder b; vg_dtype dt; double mean, var, lo, hi; } cases[] = {
        {vg_random_uniform, VG_FLOAT, 0.5, 1.0 / 12, 0, 1},
        {vg_random_uniform, VG_DOUBLE, 0.5, 1.0 / 12, 0, 1},
        {vg_random_standard_normal, VG_FLOAT, 0, 1, -INFINITY, INFINITY},
        {vg_random_standard_normal, VG_DOUBLE, 0, 1, -INFINITY, INFINITY},
        {vg_truncated_normal, VG_FLOAT, 0, 0.773741, -2, 2}, /* variance of N(0,1) cut at +-2 */
        {vg_truncated_normal, VG_DOUBLE, 0, 0.773741, -2, 2},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        vg_graph *g = vg_graph_new();
        vg_output y = cases[k].b(g, shape_const(g, D(100000), 1), cases[k].dt, 1234, 5678, NULL);
        vg_tensor *t[1];
        run_n(g, NULL, y, 1, t);
        double mean, var, lo, hi;
        moments(t[0], &mean, &var, &lo, &hi);
        if (fabs(mean - cases[k].mean) > 0.01 || fabs(var - cases[k].var) > 0.015)
            fprintf(stderr, "case %zu: mean %g var %g\n", k, mean, var);
        CHECK(fabs(mean - cases[k].mean) <= 0.01);
        CHECK(fabs(var - cases[k].var) <= 0.015);
        if (cases[k].b == vg_random_standard_normal) {
            CHECK(lo < -3.5 && hi > 3.5); /* tails exist */
        } else {
            CHECK(lo >= cases[k].lo && hi < cases[k].hi);
            if (cases[k].b == vg_truncated_normal) CHECK(lo > -2 && hi > 1.9 && lo < -1.9);
        }
        vg_tensor_free(t[0]);
        vg_graph_free(g);
    }
}

static void test_random__thread_split_independent(void) {
    vg_graph *g = vg_graph_new();
    vg_output u = vg_random_uniform(g, shape_const(g, D(1000, 1001), 2), VG_FLOAT, 3, 4, NULL);
    vg_output t = vg_truncated_normal(g, shape_const(g, D(200001), 1), VG_DOUBLE, 3, 4, NULL);
    vg_session_options one = {.intra_op_threads = 1, .inter_op_threads = 1};
    vg_session_options many = {.intra_op_threads = 4, .inter_op_threads = 2};
    vg_tensor *a[1], *b[1], *c[1], *d[1];
    run_n(g, &one, u, 1, a);
    run_n(g, &many, u, 1, b);
    run_n(g, &one, t, 1, c);
    run_n(g, &many, t, 1, d);
    CHECK(same_bits(a[0], b[0]));
    CHECK(same_bits(c[0], d[0]));
    vg_tensor_free(a[0]), vg_tensor_free(b[0]), vg_tensor_free(c[0]), vg_tensor_free(d[0]);
    vg_graph_free(g);
}

typedef struct thr_arg {
    vg_session *s;
    vg_output y;
    vg_tensor *out[8];
} thr_arg;

static void *thr_run(void *p) {
    thr_arg *a = p;
    for (int i = 0; i < 8; i++) {
        a->out[i] = NULL;
        vg_session_run(a->s, NULL, NULL, NULL, 0, &a->y, &a->out[i], 1, NULL, 0, NULL, NULL);
    }
    return NULL;
}

static int cmp_f(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* Concurrent runs reserve disjoint counter blocks: no value repeats across 32 runs. */
static void test_random__concurrent_runs(void) {
    vg_graph *g = vg_graph_new();
    vg_output y = vg_random_uniform(g, shape_const(g, D(256), 1), VG_FLOAT, 9, 9, NULL);
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    thr_arg args[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        args[i].s = s;
        args[i].y = y;
        pthread_create(&th[i], NULL, thr_run, &args[i]);
    }
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    float *all = malloc(sizeof(float) * 256 * 32);
    int n = 0;
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 8; k++) {
            CHECK(args[i].out[k] != NULL);
            if (!args[i].out[k]) continue;
            memcpy(all + n, vg_tensor_data(args[i].out[k]), sizeof(float) * 256);
            n += 256;
            vg_tensor_free(args[i].out[k]);
        }
    qsort(all, (size_t)n, sizeof(float), cmp_f);
    int dups = 0;
    for (int i = 1; i < n; i++) dups += all[i] == all[i - 1];
    CHECK(dups < 40); /* 23-bit floats: ~4 chance collisions expected; a repeated block gives 256 */
    kt_teardown(g, s, NULL, 0, (void *[]){all}, 1);
}

static void test_random__shapes_and_errors(void) {
    vg_graph *g = vg_graph_new();
    vg_status st;
    vg_output y = vg_random_uniform(g, shape_const(g, D(2, 3), 2), VG_FLOAT, 1, 1, NULL);
    vg_shape s = vg_output_shape(y);
    CHECK(s.ndims == 2 && s.dims[0] == 2 && s.dims[1] == 3);
    CHECK_EQ_INT(strcmp(vg_op_name(y.op), "RandomUniform"), 0);
    int64_t seed = 0;
    CHECK(vg_op_attr_int(y.op, "seed2", &seed) && seed == 1);
    vg_output sh = vg_placeholder(g, VG_INT64, D(-1), 1, "sh");
    vg_output z = vg_random_standard_normal(g, sh, VG_DOUBLE, 1, 1, NULL);
    s = vg_output_shape(z);
    CHECK_EQ_INT(s.ndims, -1);
    vg_tensor *shv = vg_tensor_new(VG_INT64, D(3), 1, NULL), *out = NULL;
    int64_t dims[3] = {2, 0, 5};
    memcpy(vg_tensor_data(shv), dims, sizeof dims);
    vg_session *ss = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_session_run(ss, NULL, &sh, &shv, 1, &z, &out, 1, NULL, 0, NULL, &st), &st);
    CHECK(out && vg_tensor_ndims(out) == 3 && vg_tensor_num_elements(out) == 0);
    vg_tensor_free(out);
    dims[1] = -4;
    memcpy(vg_tensor_data(shv), dims, sizeof dims);
    CHECK_STATUS(vg_session_run(ss, NULL, &sh, &shv, 1, &z, &out, 1, NULL, 0, NULL, &st), &st, VG_INVALID_ARGUMENT,
        "Dimension -4 must be >= 0");
    vg_tensor_free(shv);
    vg_session_free(ss);
    CHECK(vg_random_uniform(g, shape_const(g, D(2), 1), VG_INT32, 1, 1, NULL).op == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "dtype must be float or double");
    vg_graph_free(g);
}

static void test_random__shuffle(void) {
    vg_graph *g = vg_graph_new();
    int64_t n = 1000;
    vg_tensor *x = vg_tensor_new(VG_INT32, &n, 1, NULL);
    for (int i = 0; i < n; i++) ((int32_t *)vg_tensor_data(x))[i] = i;
    vg_output y = vg_random_shuffle(g, vg_const(g, x, NULL), 5, 6, NULL);
    vg_tensor_free(x);
    vg_tensor *a[2], *b[1];
    run_n(g, NULL, y, 2, a);
    run_n(g, NULL, y, 1, b);
    CHECK(same_bits(a[0], b[0]));
    CHECK(!same_bits(a[0], a[1]));
    char seen[1000] = {0};
    int moved = 0;
    for (int i = 0; i < n; i++) {
        int v = ((int32_t *)vg_tensor_data(a[0]))[i];
        CHECK(v >= 0 && v < n && !seen[v]);
        if (v >= 0 && v < n) seen[v] = 1;
        moved += v != i;
    }
    CHECK(moved > 900);
    vg_tensor_free(a[0]), vg_tensor_free(a[1]), vg_tensor_free(b[0]);
    /* rows stay intact; strings work */
    vg_tensor *m = vg_tensor_new(VG_FLOAT, D(50, 3), 2, NULL);
    for (int i = 0; i < 150; i++) ((float *)vg_tensor_data(m))[i] = (float)i;
    vg_output ym = vg_random_shuffle(g, vg_const(g, m, NULL), 1, 2, NULL);
    vg_tensor_free(m);
    vg_tensor *o[1];
    run_n(g, NULL, ym, 1, o);
    for (int r = 0; o[0] && r < 50; r++) {
        const float *row = (const float *)vg_tensor_data(o[0]) + 3 * r;
        CHECK(row[1] == row[0] + 1 && row[2] == row[0] + 2 && (int)row[0] % 3 == 0);
    }
    vg_tensor_free(o[0]);
    const char *names[4] = {"a", "b", "c", "d"};
    vg_output ys = vg_random_shuffle(g, vg_const_array(g, VG_STRING, D(4), 1, names, NULL), 3, 4, NULL);
    run_n(g, NULL, ys, 1, o);
    int mask = 0;
    for (int i = 0; o[0] && i < 4; i++) mask |= 1 << (vg_tensor_string(o[0], i, NULL)[0] - 'a');
    CHECK_EQ_INT(mask, 15);
    vg_tensor_free(o[0]);
    /* scalars and single rows pass through */
    vg_output y1 = vg_random_shuffle(g, vg_const_f32(g, 3, NULL), 0, 0, NULL);
    run_n(g, NULL, y1, 1, o);
    CHECK(o[0] && at(o[0], 0) == 3);
    vg_tensor_free(o[0]);
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_random__determinism);
    RUN_TEST(test_random__moments);
    RUN_TEST(test_random__thread_split_independent);
    RUN_TEST(test_random__concurrent_runs);
    RUN_TEST(test_random__shapes_and_errors);
    RUN_TEST(test_random__shuffle);
    TEST_MAIN_END();
}
