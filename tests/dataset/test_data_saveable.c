/* test_data_saveable.c - iterator state in checkpoints (issue 28, item 5):
 * vg_make_saveable_from_iterator, i.e. SerializeIterator / DeserializeIterator saved and
 * restored by a Saver under TF's key "Iterator:0-state".
 *
 * Translated from TF 1.15's tensorflow/python/data/experimental/kernel_tests/
 * serialization/: dataset_serialization_test_base.py's run_core_tests (unused, fully
 * used and exhausted iterators, init before restore, ten break points, reset after
 * restore, restore into an empty graph and into a modified one) on each *_test.py's
 * pipelines (each case below names its TF test), and the save/restore tests of TF's
 * range dataset kernel test (testSaveRestore*, testRestore*, testInitThenRestore,
 * testMultipleSaves, ...). Plus vigil's regressions: an unseeded shuffle with
 * reshuffle_each_iteration=False repeats the same order every epoch (TF draws the seed
 * once per dataset); a restore needs no initializer; running the initializer after a
 * restore starts over; the checkpoint's keys are TF's.
 *
 * Adaptations (vigil's API): map functions are C callbacks (no captured tensors: a
 * captured constant is built inside the function); TF's "empty graph" restore of a
 * pipeline with functions fails with NOT_FOUND in vigil (the functions are not in the
 * state) and is checked as such; Dataset.range / repeat with tensor arguments inside a
 * function are built with vg_op_builder (the same RangeDataset / RepeatDataset ops);
 * as_string is a gather from a table of the numbers' strings. */
#include "test_util.h"
#include "cf_callbacks.h"
#include "zlib_test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include "dataset_fixture.h"
#include "mts_fixture.h"
#include <sys/stat.h>
#include <zlib.h>

static char g_dir[256], g_ckdir[300];
static const char *g_case = "";

/* ------------------------------------------------------------------------ */
/* elements, compared as bytes */

typedef struct elems {
    char **v;
    size_t *len;
    int n, cap;
} elems;

static void put(char **b, size_t *n, size_t *cap, const void *p, size_t k) {
    if (*n + k > *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        while (nc < *n + k) nc *= 2;
        *b = realloc(*b, nc);
        *cap = nc;
    }
    memcpy(*b + *n, p, k);
    *n += k;
}

static void elems_push(elems *e, vg_tensor *const *t, int nt) {
    char *b = NULL;
    size_t n = 0, cap = 0;
    for (int i = 0; i < nt; i++) {
        int64_t h[2] = {vg_tensor_dtype(t[i]), vg_tensor_ndims(t[i])};
        put(&b, &n, &cap, h, sizeof h);
        put(&b, &n, &cap, vg_tensor_dims(t[i]), sizeof(int64_t) * (size_t)h[1]);
        if (h[0] == VG_STRING) {
            for (int64_t k = 0; k < vg_tensor_num_elements(t[i]); k++) {
                size_t l;
                const char *s = vg_tensor_string(t[i], k, &l);
                put(&b, &n, &cap, &l, sizeof l);
                put(&b, &n, &cap, s, l);
            }
        } else {
            put(&b, &n, &cap, vg_tensor_data(t[i]), vg_tensor_nbytes(t[i]));
        }
    }
    if (e->n == e->cap) {
        e->cap = e->cap ? e->cap * 2 : 64;
        e->v = realloc(e->v, sizeof(char *) * (size_t)e->cap);
        e->len = realloc(e->len, sizeof(size_t) * (size_t)e->cap);
    }
    e->v[e->n] = b;
    e->len[e->n++] = n;
}

static void elems_free(elems *e) {
    for (int i = 0; i < e->n; i++) free(e->v[i]);
    free(e->v);
    free(e->len);
    memset(e, 0, sizeof *e);
}

static bool elems_match(const elems *a, const elems *b, const char *what) {
    bool ok = a->n == b->n;
    for (int i = 0; ok && i < a->n; i++)
        if (a->len[i] != b->len[i] || memcmp(a->v[i], b->v[i], a->len[i])) {
            fprintf(stderr, "%s / %s: element %d differs\n", g_case, what, i);
            return false;
        }
    if (!ok) fprintf(stderr, "%s / %s: %d elements, expected %d\n", g_case, what, b->n, a->n);
    return ok;
}

/* The int64 scalar element i (its first 8 data bytes). */
static int64_t elem_i64(const elems *e, int i) {
    int64_t v;
    memcpy(&v, e->v[i] + 16, sizeof v);
    return v;
}

/* ------------------------------------------------------------------------ */
/* a pipeline in a graph: initializable iterator "Iterator", its saveable, a Saver
 * (dataset_serialization_test_base._build_graph) */

typedef vg_output (*ds_fn)(vg_graph *g, const void *arg);

typedef struct pipeline {
    vg_graph *g;
    vg_session *s;
    vg_saver *sv;
    vg_op *init, *next;
    vg_output it, saveable;
    int nout;
    vg_output state;    /* a string placeholder fed to `restore` (TF's _restore_op) */
    vg_op *restore;
} pipeline;

/* empty: Iterator.from_structure (an IteratorV2 with the pipeline's types and shapes,
 * no dataset in the graph; _build_empty_graph) */
static bool pipe_build(pipeline *p, ds_fn fn, const void *arg, bool empty) {
    memset(p, 0, sizeof *p);
    p->g = vg_graph_new();
    if (empty) {
        vg_graph *tmp = vg_graph_new();
        vg_dtype t[VG_DATASET_MAX_COMPONENTS];
        vg_shape s[VG_DATASET_MAX_COMPONENTS];
        int n = vg_dataset_components(fn(tmp, arg), t, s);
        vg_graph_free(tmp);
        vg_op_builder *b = vg_op_builder_new(p->g, "IteratorV2", "Iterator");
        vg_op_builder_set_attr_type_list(b, "output_types", t, n);
        vg_op_builder_set_attr_shape_list(b, "output_shapes", s, n);
        vg_op_builder_set_attr_string(b, "container", "", 0);
        vg_op_builder_set_attr_string(b, "shared_name", "", 0);
        p->it = vg_out(vg_op_builder_finish(b), 0);
    } else {
        p->it = vg_make_initializable_iterator(p->g, fn(p->g, arg), &p->init, "Iterator");
    }
    p->saveable = vg_make_saveable_from_iterator(p->g, p->it, NULL);
    p->state = vg_placeholder(p->g, VG_STRING, NULL, 0, "state");
    p->restore = vg_saveable_restore(p->g, p->saveable, p->state, NULL);
    p->next = vg_iterator_get_next(p->g, p->it, NULL);
    p->nout = p->next ? vg_op_num_outputs(p->next) : 0;
    return ds_open(p->g, &p->sv, 0, &p->s, g_case);
}

static void pipe_free(pipeline *p) {
    vg_session_free(p->s);
    vg_saver_free(p->sv);
    vg_graph_free(p->g);
    memset(p, 0, sizeof *p);
}

static vg_code pipe_next(pipeline *p, elems *out, vg_status *st) {
    vg_output f[VG_DATASET_MAX_COMPONENTS];
    vg_tensor *t[VG_DATASET_MAX_COMPONENTS] = {0};
    for (int i = 0; i < p->nout; i++) f[i] = vg_out(p->next, i);
    vg_code rc = vg_session_run(p->s, NULL, NULL, NULL, 0, f, t, p->nout, NULL, 0, NULL, st);
    if (rc == VG_OK && out) elems_push(out, t, p->nout);
    for (int i = 0; i < p->nout; i++) vg_tensor_free(t[i]);
    return rc;
}

static vg_code pipe_init(pipeline *p, vg_status *st) { return vg_session_run_targets(p->s, &p->init, 1, st); }

static vg_code pipe_save(pipeline *p, vg_status *st) {
    char prefix[400];
    snprintf(prefix, sizeof prefix, "%s/iterator", g_ckdir);
    return vg_saver_save(p->sv, p->s, prefix, -1, NULL, 0, st);
}

static vg_code pipe_restore(pipeline *p, vg_status *st) {
    char buf[600];
    const char *ck = vg_latest_checkpoint(g_ckdir, buf, sizeof buf);
    if (!ck) return vg_status_set(st, VG_NOT_FOUND, "no checkpoint in %s", g_ckdir);
    return vg_saver_restore(p->sv, p->s, ck, st);
}

static void ckpt_clear(void) {
    tu_rmrf(g_ckdir);
    mkdir(g_ckdir, 0755);
}

/* ------------------------------------------------------------------------ */
/* dataset_serialization_test_base.py */

typedef struct gen_opts {
    bool ckpt_saved, init_before_restore, verify_exhausted, save_at_end;
} gen_opts;

static const gen_opts GEN = {false, false, true, true};

/* gen_outputs: num outputs, a new graph and session (restored from the checkpoint) at
 * each break point, saving there (and at the end when save_at_end). */
static void gen_outputs(ds_fn fn, const void *arg, const int *breaks, int nb, int num, gen_opts o, elems *out) {
    vg_status st;
    for (int i = 0; i <= nb; i++) {
        pipeline p;
        if (!pipe_build(&p, fn, arg, false)) return;
        if (o.ckpt_saved) {
            if (o.init_before_restore) CHECK_OK(pipe_init(&p, &st), &st);
            CHECK_OK(pipe_restore(&p, &st), &st);
        } else {
            CHECK_OK(pipe_init(&p, &st), &st);
        }
        int start = i > 0 ? breaks[i - 1] : 0, end = i < nb ? breaks[i] : num;
        for (int k = start; k < end; k++) {
            vg_code rc = pipe_next(&p, out, &st);
            if (rc != VG_OK) fprintf(stderr, "%s: output %d: %s\n", g_case, k, st.msg);
            CHECK_OK(rc, &st);
            if (rc != VG_OK) break;
        }
        if (i == nb && o.verify_exhausted) CHECK_CODE(pipe_next(&p, NULL, &st), VG_OUT_OF_RANGE);
        if (o.save_at_end || i < nb) {
            vg_code rc = pipe_save(&p, &st);
            if (rc != VG_OK) fprintf(stderr, "%s: save: %s\n", g_case, st.msg);
            CHECK_OK(rc, &st);
            o.ckpt_saved = true;
        }
        pipe_free(&p);
    }
}

/* np.linspace(0, n, k, dtype=int) */
static int linspace(int n, int k, int *out) {
    for (int i = 0; i < k; i++) out[i] = i == k - 1 ? n : (int)((double)i * n / (k - 1));
    return k;
}

static void verify_run_with_breaks(ds_fn fn, const void *arg, const int *breaks, int nb, int num, bool init_first,
                                   bool exhausted, const char *what) {
    elems a = {0}, b = {0};
    gen_opts o = GEN;
    o.init_before_restore = init_first;
    o.verify_exhausted = exhausted;
    ckpt_clear();
    gen_outputs(fn, arg, NULL, 0, num, o, &a);
    ckpt_clear();
    gen_outputs(fn, arg, breaks, nb, num, o, &b);
    CHECK(elems_match(&a, &b, what));
    elems_free(&a);
    elems_free(&b);
}

static void verify_unused_iterator(ds_fn fn, const void *arg, int num, bool exhausted) {
    int br[1] = {0};
    verify_run_with_breaks(fn, arg, br, 1, num, false, exhausted, "verify_unused_iterator");
}

static void verify_fully_used_iterator(ds_fn fn, const void *arg, int num) {
    int br[1] = {num};
    verify_run_with_breaks(fn, arg, br, 1, num, false, true, "verify_fully_used_iterator");
}

static void verify_exhausted_iterator(ds_fn fn, const void *arg, int num) {
    elems a = {0}, b = {0};
    ckpt_clear();
    gen_outputs(fn, arg, NULL, 0, num, GEN, &a);
    gen_opts o = GEN;
    o.ckpt_saved = true;
    gen_outputs(fn, arg, NULL, 0, 0, o, &b);
    CHECK_EQ_INT(b.n, 0);
    elems_free(&a);
    elems_free(&b);
}

static void verify_init_before_restore(ds_fn fn, const void *arg, int num, bool exhausted) {
    int br[10];
    verify_run_with_breaks(fn, arg, br, linspace(num, 10, br), num, true, exhausted, "verify_init_before_restore");
}

static void verify_multiple_breaks(ds_fn fn, const void *arg, int num, bool exhausted) {
    int br[10];
    verify_run_with_breaks(fn, arg, br, linspace(num, 10, br), num, false, exhausted, "verify_multiple_breaks");
}

/* Restore, then run the initializer: the iterator starts over. */
static void verify_reset_restored_iterator(ds_fn fn, const void *arg, int num, bool exhausted) {
    vg_status st;
    int bp = num / 2;
    elems exp = {0}, act = {0};
    gen_opts o = GEN;
    o.verify_exhausted = exhausted;
    ckpt_clear();
    gen_outputs(fn, arg, NULL, 0, num, o, &exp);
    o.verify_exhausted = false;
    gen_outputs(fn, arg, NULL, 0, bp, o, NULL);
    pipeline p;
    if (pipe_build(&p, fn, arg, false)) {
        CHECK_OK(pipe_restore(&p, &st), &st);
        CHECK_OK(pipe_init(&p, &st), &st);
        for (int i = 0; i < num; i++) CHECK_OK(pipe_next(&p, &act, &st), &st);
        if (exhausted) CHECK_CODE(pipe_next(&p, NULL, &st), VG_OUT_OF_RANGE);
        pipe_free(&p);
    }
    CHECK(elems_match(&exp, &act, "verify_reset_restored_iterator"));
    elems_free(&exp);
    elems_free(&act);
}

/* The checkpoint of fn1 after num/2 outputs restored into the graph of fn2 (or an
 * empty graph, fn2 NULL: not even fn1's functions are there): the rest of fn1's
 * outputs. */
static void verify_restore_elsewhere(ds_fn fn1, const void *a1, ds_fn fn2, const void *a2, int num,
                                     const char *what) {
    vg_status st;
    int bp = num / 2;
    elems exp = {0}, act = {0};
    gen_opts o = GEN;
    o.verify_exhausted = false;
    ckpt_clear();
    gen_outputs(fn1, a1, NULL, 0, bp, o, NULL);
    o = GEN;
    o.ckpt_saved = true;
    gen_outputs(fn1, a1, NULL, 0, num - bp, o, &exp);
    o = GEN;
    o.verify_exhausted = false;
    gen_outputs(fn1, a1, NULL, 0, bp, o, NULL);
    pipeline p;
    bool empty = fn2 == NULL;
    if (pipe_build(&p, empty ? fn1 : fn2, empty ? a1 : a2, empty)) {
        vg_code rc = pipe_restore(&p, &st);
        CHECK_OK(rc, &st);
        for (int i = 0; i < num - bp && rc == VG_OK; i++) CHECK_OK(pipe_next(&p, &act, &st), &st);
        CHECK_CODE(pipe_next(&p, NULL, &st), VG_OUT_OF_RANGE);
        CHECK(elems_match(&exp, &act, what));
        pipe_free(&p);
    }
    elems_free(&exp);
    elems_free(&act);
}

/* run_core_tests(ds_fn1, ds_fn2, num_outputs) */
static void run_core_tests(const char *name, ds_fn fn1, const void *a1, ds_fn fn2, const void *a2, int num) {
    int before = vg_test_failures;
    g_case = name;
    verify_unused_iterator(fn1, a1, num, true);
    verify_fully_used_iterator(fn1, a1, num);
    verify_exhausted_iterator(fn1, a1, num);
    verify_init_before_restore(fn1, a1, num, true);
    verify_multiple_breaks(fn1, a1, num, true);
    verify_reset_restored_iterator(fn1, a1, num, true);
    verify_restore_elsewhere(fn1, a1, NULL, NULL, num, "verify_restore_in_empty_graph");
    if (fn2) verify_restore_elsewhere(fn1, a1, fn2, a2, num, "verify_restore_in_modified_graph");
    if (vg_test_failures != before) fprintf(stderr, "FAIL in %s\n", name);
}

/* verify_error_on_save: the save after num/2 outputs fails with `code`. */
static void verify_error_on_save(const char *name, ds_fn fn, const void *arg, int num, vg_code code,
                                 const char *msg) {
    vg_status st;
    g_case = name;
    ckpt_clear();
    pipeline p;
    if (!pipe_build(&p, fn, arg, false)) return;
    CHECK_OK(pipe_init(&p, &st), &st);
    for (int i = 0; i < num / 2; i++) CHECK_OK(pipe_next(&p, NULL, &st), &st);
    CHECK_CODE(pipe_save(&p, &st), code);
    if (msg) CHECK_STR_CONTAINS(st.msg, msg);
    pipe_free(&p);
}

/* ------------------------------------------------------------------------ */
/* pipelines */

static vg_output vec_i64(vg_graph *g, const int64_t *v, int n) {
    return vg_const_array(g, VG_INT64, (int64_t[]){n}, 1, v, NULL);
}

/* Dataset.range with tensor arguments (RangeDataset, as TF builds it). */
static vg_output range_t(vg_graph *g, vg_output start, vg_output stop, vg_output step) {
    vg_dtype t = VG_INT64;
    vg_shape s = vg_shape_make(NULL, 0);
    vg_op_builder *b = vg_op_builder_new(g, "RangeDataset", "RangeDataset");
    vg_op_builder_add_input(b, start);
    vg_op_builder_add_input(b, stop);
    vg_op_builder_add_input(b, step);
    vg_op_builder_set_attr_type_list(b, "output_types", &t, 1);
    vg_op_builder_set_attr_shape_list(b, "output_shapes", &s, 1);
    return vg_out(vg_op_builder_finish(b), 0);
}

/* range_dataset_serialization_test.py: Dataset.range(start, stop) */
typedef struct range_arg {
    int64_t start, stop, step;
} range_arg;
static vg_output ds_range(vg_graph *g, const void *a) {
    const range_arg *r = a;
    return vg_dataset_range(g, r->start, r->stop, r->step ? r->step : 1, NULL);
}

/* range(start, stop).repeat(epochs) */
typedef struct range_rep_arg {
    int64_t start, stop, epochs;
} range_rep_arg;
static vg_output ds_range_repeat(vg_graph *g, const void *a) {
    const range_rep_arg *r = a;
    return vg_dataset_repeat(g, vg_dataset_range(g, r->start, r->stop, 1, NULL), r->epochs, NULL);
}

/* the components of map / batch / unbatch tests: (arange(n), [[1, 2, 3]] * arange(n)[:,
 * None], multiplier * arange(n)) */
static void three_components(vg_graph *g, int n, double mult, vg_output *c) {
    int64_t a[16], b[48];
    double d[16];
    for (int i = 0; i < n; i++) {
        a[i] = i, d[i] = mult * i;
        for (int k = 0; k < 3; k++) b[i * 3 + k] = (k + 1) * i;
    }
    c[0] = vec_i64(g, a, n);
    c[1] = vg_const_array(g, VG_INT64, (int64_t[]){n, 3}, 2, b, NULL);
    c[2] = vg_const_array(g, VG_DOUBLE, (int64_t[]){n}, 1, d, NULL);
}

static vg_code square3_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)p;
    for (int i = 0; i < nargs; i++) outs[i] = vg_square(fg, args[i], NULL);
    *nouts = nargs;
    return VG_OK;
}

/* map_dataset_serialization_test.py _build_ds: from_tensor_slices(3 components of 7).map(
 * square).repeat(14); parallel_map_dataset_serialization_test.py: map(num_parallel_calls
 * 3).repeat(1) [.prefetch(5)] */
typedef struct map_arg {
    double mult;
    int epochs, par;
    bool prefetch;
} map_arg;
static vg_output ds_map(vg_graph *g, const void *a) {
    const map_arg *m = a;
    vg_output c[3];
    three_components(g, 7, m->mult, c);
    vg_output ds = vg_dataset_map_parallel(g, vg_dataset_from_tensor_slices(g, c, 3, NULL), square3_fn, NULL, m->par,
                                           NULL);
    ds = vg_dataset_repeat(g, ds, m->epochs, NULL);
    return m->prefetch ? vg_dataset_prefetch(g, ds, 5, NULL) : ds;
}

DS_FN1(plus5_fn, vg_add(fg, args[0], vg_const_i32(fg, 5, NULL), NULL))

/* testCaptureConstantInMapFn: from_tensors(0).repeat(10).map(x + 5) [parallel: ,
 * num_parallel_calls=2).prefetch(2)] */
static vg_output ds_capture_const(vg_graph *g, const void *a) {
    int par = *(const int *)a;
    vg_output z = vg_const_i32(g, 0, NULL);
    vg_output ds = vg_dataset_repeat(g, vg_dataset_from_tensors(g, &z, 1, NULL), 10, NULL);
    ds = vg_dataset_map_parallel(g, ds, plus5_fn, NULL, par, NULL);
    return par ? vg_dataset_prefetch(g, ds, 2, NULL) : ds;
}

static vg_code random_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_output r = vg_random_uniform(fg, vg_const_array(fg, VG_INT32, (int64_t[]){0}, 1, NULL, NULL), VG_FLOAT, 0, 0,
                                    "random_uniform");
    outs[0] = vg_mul(fg, r, vg_cast(fg, args[0], VG_FLOAT, NULL), NULL);
    *nouts = 1;
    return VG_OK;
}

/* testSaveStatefulFunction: range(100).map(random_uniform * x) */
static vg_output ds_stateful_map(vg_graph *g, const void *a) {
    (void)a;
    return vg_dataset_map(g, vg_dataset_range(g, 0, 100, 1, NULL), random_fn, NULL, NULL);
}

static vg_code mod_ne2_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    int64_t div = *(const int64_t *)p;
    outs[0] = vg_not_equal(fg, vg_floor_mod(fg, args[0], vg_const_i64(fg, div, NULL), NULL), vg_const_i64(fg, 2, NULL),
                           NULL);
    *nouts = 1;
    return VG_OK;
}

/* filter_dataset_serialization_test.py: range(100).filter(x % div != 2) */
static vg_output ds_filter(vg_graph *g, const void *a) {
    return vg_dataset_filter(g, vg_dataset_range(g, 0, 100, 1, NULL), mod_ne2_fn, (void *)a, NULL);
}

static vg_code foo_bar_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    outs[0] = vg_mul(fg, args[0], vg_const_i64(fg, 2, NULL), NULL);
    outs[1] = vg_mul(fg, args[0], args[0], NULL);
    *nouts = 2;
    return VG_OK;
}
DS_FN1(bar_even_fn,
       vg_equal(fg, vg_floor_mod(fg, args[1], vg_const_i64(fg, 2, NULL), NULL), vg_const_i64(fg, 0, NULL), NULL))
DS_FN1(add2_fn, vg_add(fg, args[0], args[1], NULL))

/* testFilterDictCore: range(10).map({foo: 2x, bar: x**2}).filter(bar % 2 == 0).map(foo + bar) */
static vg_output ds_filter_dict(vg_graph *g, const void *a) {
    (void)a;
    vg_output ds = vg_dataset_map(g, vg_dataset_range(g, 0, 10, 1, NULL), foo_bar_fn, NULL, NULL);
    ds = vg_dataset_filter(g, ds, bar_even_fn, NULL, NULL);
    return vg_dataset_map(g, ds, add2_fn, NULL, NULL);
}

/* batch_dataset_serialization_test.py testCore: from_tensor_slices(3 components of 8,
 * multiplier 15).batch(2); unbatch_dataset_serialization_test.py: .unbatch() after */
static vg_output ds_batch(vg_graph *g, const void *a) {
    bool unbatch = *(const bool *)a;
    vg_output c[3];
    three_components(g, 8, 15.0, c);
    vg_output ds = vg_dataset_batch(g, vg_dataset_from_tensor_slices(g, c, 3, NULL), 2, false, NULL);
    return unbatch ? vg_dataset_unbatch(g, ds, NULL) : ds;
}

/* shuffle_dataset_serialization_test.py: range(limit).shuffle(buffer_size, seed,
 * reshuffle_each_iteration).repeat(num_repeats) */
typedef struct shuffle_arg {
    int64_t limit, repeats, buffer, seed;
    bool reshuffle;
} shuffle_arg;
static vg_output ds_shuffle(vg_graph *g, const void *a) {
    const shuffle_arg *s = a;
    vg_output ds = vg_dataset_shuffle(g, vg_dataset_range(g, 0, s->limit, 1, NULL), s->buffer, s->seed, s->reshuffle,
                                      NULL);
    return vg_dataset_repeat(g, ds, s->repeats, NULL);
}

/* sequence_dataset_serialization_test.py: from_tensor_slices(arange(10)).skip(count) /
 * .take(count) / .take(take_count).repeat(count) */
typedef struct seq_arg {
    int kind; /* 0 skip, 1 take, 2 take + repeat */
    int64_t count, take;
} seq_arg;
static vg_output ds_seq(vg_graph *g, const void *a) {
    const seq_arg *q = a;
    int64_t v[10];
    for (int i = 0; i < 10; i++) v[i] = i;
    vg_output c = vec_i64(g, v, 10);
    vg_output ds = vg_dataset_from_tensor_slices(g, &c, 1, NULL);
    if (q->kind == 0) return vg_dataset_skip(g, ds, q->count, NULL);
    if (q->kind == 1) return vg_dataset_take(g, ds, q->count, NULL);
    return vg_dataset_repeat(g, vg_dataset_take(g, ds, q->take, NULL), q->count, NULL);
}

/* from_tensor_slices(fill([x], x)): x elements of value x (Dataset.from_tensors(x).repeat(x)) */
static vg_code repeat_x_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs, (void)p;
    vg_op_builder *b = vg_op_builder_new(fg, "RepeatDataset", "RepeatDataset");
    vg_dtype t = VG_INT64;
    vg_shape s = vg_shape_make(NULL, 0);
    vg_output x = args[0];
    vg_op_builder_add_input(b, vg_dataset_from_tensors(fg, &x, 1, NULL));
    vg_op_builder_add_input(b, x);
    vg_op_builder_set_attr_type_list(b, "output_types", &t, 1);
    vg_op_builder_set_attr_shape_list(b, "output_shapes", &s, 1);
    outs[0] = vg_out(vg_op_builder_finish(b), 0);
    *nouts = 1;
    return VG_OK;
}

/* interleave_dataset_serialization_test.py: from_tensor_slices([4, 5, 6]).repeat(2)
 * .interleave(lambda x: from_tensors(x).repeat(x), cycle_length, block_length,
 * num_parallel_calls) */
typedef struct inter_arg {
    int64_t cycle, block;
    int par; /* 0: None */
} inter_arg;
static vg_output ds_interleave(vg_graph *g, const void *a) {
    const inter_arg *q = a;
    vg_output c = vec_i64(g, (int64_t[]){4, 5, 6}, 3);
    vg_output ds = vg_dataset_repeat(g, vg_dataset_from_tensor_slices(g, &c, 1, NULL), 2, NULL);
    if (!q->par) return vg_dataset_interleave(g, ds, repeat_x_fn, NULL, q->cycle, q->block, NULL);
    return vg_dataset_interleave_parallel(g, ds, repeat_x_fn, NULL, q->cycle, q->block, q->par, NULL);
}

DS_FN1(range5_fn, range_t(fg, args[0], vg_add(fg, args[0], vg_const_i64(fg, 5, NULL), NULL), vg_const_i64(fg, 1, NULL)))

/* flat_map_dataset_serialization_test.py testCore: range(start, start + 25, 5).flat_map(
 * lambda x: range(x, x + 5)) */
static vg_output ds_flat_map(vg_graph *g, const void *a) {
    int64_t start = *(const int64_t *)a;
    return vg_dataset_flat_map(g, vg_dataset_range(g, start, start + 25, 5, NULL), range5_fn, NULL, NULL);
}

DS_FN1(times10_fn, vg_mul(fg, vg_const_i32(fg, 10, NULL), vg_cast(fg, args[0], VG_INT32, NULL), NULL))
DS_FN1(range100_map_fn,
       vg_dataset_map(fg, vg_dataset_range(fg, 0, 100, 1, NULL), p ? random_fn : times10_fn, NULL, NULL))

/* testMapThenFlatMap: range(5).flat_map(lambda _: range(100).map(10 * y)) (stateful:
 * testDisallowCapturingStatefulOps, the inner map random) */
static vg_output ds_map_then_flat_map(vg_graph *g, const void *a) {
    return vg_dataset_flat_map(g, vg_dataset_range(g, 0, 5, 1, NULL), range100_map_fn, (void *)a, NULL);
}

/* prefetch_dataset_serialization_test.py: range(100).prefetch(10).shuffle(10, seed,
 * reshuffle_each_iteration=False) */
static vg_output ds_prefetch(vg_graph *g, const void *a) {
    (void)a;
    vg_output ds = vg_dataset_prefetch(g, vg_dataset_range(g, 0, 100, 1, NULL), 10, NULL);
    return vg_dataset_shuffle(g, ds, 10, 10, false, NULL);
}

static vg_output tile_col(vg_graph *g, const int64_t *col, int rows, int reps) {
    int64_t v[8 * 22];
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < reps; k++) v[r * reps + k] = col[r];
    return vg_const_array(g, VG_INT64, (int64_t[]){rows, reps}, 2, v, NULL);
}

/* zip_dataset_serialization_test.py: zip((from_tensor_slices(tile([[1],[2],[3],[4]], 20)),
 * (from_tensor_slices(tile([[12],..,[15]], 22)), from_tensor_slices(arr)))) */
static vg_output ds_zip(vg_graph *g, const void *a) {
    const double *arr = a;
    int n = (int)arr[0];
    vg_output c0 = tile_col(g, (int64_t[]){1, 2, 3, 4}, 4, 20), c1 = tile_col(g, (int64_t[]){12, 13, 14, 15}, 4, 22);
    vg_output c2 = vg_const_array(g, VG_DOUBLE, (int64_t[]){n}, 1, arr + 1, NULL);
    vg_output ds[3] = {vg_dataset_from_tensor_slices(g, &c0, 1, NULL), vg_dataset_from_tensor_slices(g, &c1, 1, NULL),
                       vg_dataset_from_tensor_slices(g, &c2, 1, NULL)};
    return vg_dataset_zip(g, ds, 3, NULL);
}

/* concatenate_dataset_serialization_test.py */
static vg_output ds_concatenate(vg_graph *g, const void *a) {
    (void)a;
    vg_output in[2] = {tile_col(g, (int64_t[]){1, 2, 3, 4}, 4, 20), tile_col(g, (int64_t[]){12, 13, 14, 15}, 4, 4)};
    vg_output to[2] = {tile_col(g, (int64_t[]){5, 6, 7, 8, 9}, 5, 20), tile_col(g, (int64_t[]){16, 17, 18, 19, 20}, 5, 15)};
    return vg_dataset_concatenate(g, vg_dataset_from_tensor_slices(g, in, 2, NULL),
                                  vg_dataset_from_tensor_slices(g, to, 2, NULL), NULL);
}

/* dataset_constructor_serialization_test.py testFromTensorsCore: from_tensors((arr,
 * [1, 2, 3], 37.0)) */
static vg_output ds_from_tensors(vg_graph *g, const void *a) {
    vg_output c[3] = {vg_const_i64(g, *(const int64_t *)a, NULL), vec_i64(g, (int64_t[]){1, 2, 3}, 3),
                      vg_const_array(g, VG_DOUBLE, NULL, 0, (double[]){37.0}, NULL)};
    return vg_dataset_from_tensors(g, c, 3, NULL);
}

/* testFromTensorSlicesCore */
static vg_output ds_from_slices(vg_graph *g, const void *a) {
    int which = *(const int *)a;
    if (which == 2) { /* {"foo": [1, 2, 3], "bar": [[4.0], [5.0], [6.0]]} (sorted keys: bar, foo) */
        vg_output c[2] = {vg_const_array(g, VG_FLOAT, (int64_t[]){3, 1}, 2, (float[]){4, 5, 6}, NULL),
                          vg_const_array(g, VG_INT32, (int64_t[]){3}, 1, (int32_t[]){1, 2, 3}, NULL)};
        return vg_dataset_from_tensor_slices(g, c, 2, NULL);
    }
    vg_output c[3] = {tile_col(g, (int64_t[]){1, 2, 3, 4}, 4, 20),
                      which ? tile_col(g, (int64_t[]){5, 6, 7, 8}, 4, 22) : tile_col(g, (int64_t[]){12, 13, 14, 15}, 4, 22),
                      vg_const_array(g, VG_DOUBLE, (int64_t[]){4}, 1,
                                     which ? (double[]){1, 2, 3, 4} : (double[]){37, 38, 39, 40}, NULL)};
    return vg_dataset_from_tensor_slices(g, c, 3, NULL);
}

/* shard_dataset_serialization_test.py: range(elems).shard(num_shards, index) */
static vg_output ds_shard(vg_graph *g, const void *a) {
    const int64_t *v = a;
    return vg_dataset_shard(g, vg_dataset_range(g, 0, v[0], 1, NULL), v[1], v[2], NULL);
}

static vg_code check_numerics_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts,
                                 void *p) {
    (void)nargs, (void)p;
    outs[0] = vg_check_numerics(fg, args[0], "message", NULL);
    *nouts = 1;
    return VG_OK;
}

/* ignore_errors_serialization_test.py: from_tensor_slices(c).map(check_numerics)
 * .ignore_errors() */
static vg_output ds_ignore_errors(vg_graph *g, const void *a) {
    const float *v = a;
    int n = (int)v[0];
    vg_output c = vg_const_array(g, VG_FLOAT, (int64_t[]){n}, 1, v + 1, NULL);
    vg_output ds = vg_dataset_map(g, vg_dataset_from_tensor_slices(g, &c, 1, NULL), check_numerics_fn, NULL, NULL);
    return vg_dataset_ignore_errors(g, ds, NULL);
}

static int32_t g_seq_lens[32];

static vg_code fill_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    vg_output filled = vg_fill(fg, vg_reshape_c(fg, args[0], (int64_t[]){1}, 1, NULL), args[0], NULL);
    outs[0] = filled;
    *nouts = 1;
    if (p) { /* string_ops.as_string(filled): the numbers' strings from a table */
        static const char *nums[20] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14",
                                       "15", "16", "17", "18", "19"};
        vg_status st;
        vg_tensor *t = vg_tensor_new(VG_STRING, (int64_t[]){20}, 1, &st);
        for (int i = 0; i < 20; i++) vg_tensor_set_string(t, i, nums[i], strlen(nums[i]), &st);
        outs[1] = vg_gather(fg, vg_const(fg, t, "as_string_table"), filled, 0, NULL);
        vg_tensor_free(t);
        *nouts = 2;
    }
    return VG_OK;
}

/* padded_batch_dataset_serialization_test.py: from_tensor_slices(seq_lens).map(fill([x],
 * x)[, as_string]).padded_batch(4, padded_shapes=[-1][, padding_values=(-1, "<end>")]) */
static vg_output ds_padded_batch(vg_graph *g, const void *a) {
    bool pad = *(const bool *)a;
    vg_output c = vg_const_array(g, VG_INT32, (int64_t[]){32}, 1, g_seq_lens, NULL);
    vg_output ds = vg_dataset_map(g, vg_dataset_from_tensor_slices(g, &c, 1, NULL), fill_fn, pad ? (void *)1 : NULL,
                                  NULL);
    vg_shape ps[2] = {vg_shape_make((int64_t[]){-1}, 1), vg_shape_make((int64_t[]){-1}, 1)};
    vg_output pv[2] = {vg_const_i32(g, -1, NULL), vg_const_string(g, "<end>", NULL)};
    return vg_dataset_padded_batch(g, ds, 4, ps, pad ? pv : NULL, false, NULL);
}

/* ---- files ---- */

static char g_text[3][5][300];    /* [compression][file] */
static char g_records[3][2][300]; /* TFRecords: plain, ZLIB, GZIP */
static char g_fixed[2][300];

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(fwrite(p, 1, n, f) == n);
    fclose(f);
}

/* reader_dataset_ops_test_base: TextLineDatasetTestBase._createFiles(5, 5, crlf=True,
 * compression) ("%d: %d" lines; no newline after the last line but in file 0), the
 * TFRecordDatasetTestBase files (2 files of 7 records "Record %d of file %d"), and the
 * FixedLengthRecordDatasetTestBase files (header "HHHHH", records str(f * 2 + r) * 3,
 * footer "FF"; 2 files of 7 records). */
static void write_files(void) {
    static uint8_t plain[4096], z[8192];
    for (int c = 0; c < 3; c++)
        for (int f = 0; f < 5; f++) {
            size_t n = 0;
            for (int l = 0; l < 5; l++) {
                n += (size_t)snprintf((char *)plain + n, sizeof plain - n, "%d: %d", f, l);
                if (l + 1 != 5 || f == 0) n += (size_t)snprintf((char *)plain + n, sizeof plain - n, "\r\n");
            }
            snprintf(g_text[c][f], sizeof g_text[c][f], "%s/text_line.%d.%d.txt", g_dir, c, f);
            if (c == 0) write_bytes(g_text[c][f], plain, n);
            else write_bytes(g_text[c][f], z, deflate_to(z, sizeof z, plain, n, c == 2));
        }
    for (int f = 0; f < 2; f++) {
        snprintf(g_records[0][f], sizeof g_records[0][f], "%s/tf_record.%d.txt", g_dir, f);
        ds_write_text_records(g_records[0][f], 7, "Record %d of file %d", f);
        snprintf(g_records[1][f], sizeof g_records[1][f], "%s/tfrecord_%d.z", g_dir, f);
        CHECK(deflate_file(g_records[0][f], g_records[1][f], false) > 0);
        snprintf(g_records[2][f], sizeof g_records[2][f], "%s/tfrecord_%d.gz", g_dir, f);
        CHECK(deflate_file(g_records[0][f], g_records[2][f], true) > 0);
        size_t k = 0;
        k += (size_t)snprintf((char *)plain + k, sizeof plain - k, "HHHHH");
        for (int r = 0; r < 7; r++) {
            char s[16];
            snprintf(s, sizeof s, "%d", f * 2 + r);
            for (int i = 0; i < 3; i++) plain[k++] = (uint8_t)s[0]; /* one digit: 0..7 */
        }
        k += (size_t)snprintf((char *)plain + k, sizeof plain - k, "FF");
        snprintf(g_fixed[f], sizeof g_fixed[f], "%s/fixed_length_record.%d.txt", g_dir, f);
        write_bytes(g_fixed[f], plain, k);
    }
}

static vg_output names(vg_graph *g, char (*files)[300], int n) {
    return ds_string_rows(g, files[0], sizeof files[0], n, "filenames");
}

/* textline_dataset_serialization_test.py: TextLineDataset(files, compression_type) */
static vg_output ds_text(vg_graph *g, const void *a) {
    int c = *(const int *)a;
    static const char *ct[3] = {"", "ZLIB", "GZIP"};
    return vg_dataset_text_line(g, names(g, g_text[c], 5), ct[c], NULL);
}

/* tf_record_dataset_serialization_test.py: TFRecordDataset(files, compression)
 * .repeat(num_epochs).batch(batch_size) */
typedef struct rec_arg {
    int compression;
    int64_t epochs, batch;
} rec_arg;
static vg_output ds_tfrecord(vg_graph *g, const void *a) {
    const rec_arg *r = a;
    static const char *ct[3] = {"", "ZLIB", "GZIP"};
    vg_output ds = vg_dataset_tfrecord(g, names(g, g_records[r->compression], 2), ct[r->compression], NULL);
    return vg_dataset_batch(g, vg_dataset_repeat(g, ds, r->epochs, NULL), r->batch, false, NULL);
}

/* fixed_length_record_dataset_serialization_test.py: FixedLengthRecordDataset(files,
 * record 3, header 5, footer 2).repeat(num_epochs) */
static vg_output ds_fixed(vg_graph *g, const void *a) {
    int64_t epochs = *(const int64_t *)a;
    return vg_dataset_repeat(g, vg_dataset_fixed_length_record(g, names(g, g_fixed, 2), 5, 3, 2, NULL), epochs, NULL);
}

/* cache_dataset_serialization_test.py: range(10).cache(filename).repeat(3) */
static char g_cache_file[300];
static vg_output ds_cache(vg_graph *g, const void *a) {
    bool memory = *(const bool *)a;
    return vg_dataset_repeat(g, vg_dataset_cache(g, vg_dataset_range(g, 0, 10, 1, NULL), memory ? "" : g_cache_file, NULL),
                             3, NULL);
}

/* ------------------------------------------------------------------------ */
/* the translated tests */

static void test_range_core(void) {
    range_arg a = {2, 10, 1}, b = {2, 8, 1};
    run_core_tests("RangeDatasetSerializationTest.testRangeCore", ds_range, &a, ds_range, &b, 8);
}

static void test_map_core(void) {
    map_arg a = {37.0, 14, 0, false}, b = {15.0, 14, 0, false};
    run_core_tests("MapDatasetSerializationTest.testSaveRestoreCore", ds_map, &a, ds_map, &b, 98);
    int par = 0;
    run_core_tests("MapDatasetSerializationTest.testCaptureConstantInMapFn", ds_capture_const, &par, NULL, NULL, 10);
    verify_error_on_save("MapDatasetSerializationTest.testSaveStatefulFunction", ds_stateful_map, NULL, 15,
                         VG_INVALID_ARGUMENT, "stateful op random_uniform");
}

static void test_parallel_map_core(void) {
    map_arg a = {37.0, 1, 3, false}, b = {37.0, 1, 3, true};
    run_core_tests("ParallelMapDatasetSerializationTest.testSaveRestoreCore (_build_ds)", ds_map, &a, NULL, NULL, 7);
    run_core_tests("ParallelMapDatasetSerializationTest.testSaveRestoreCore (_build_ds_with_prefetch)", ds_map, &b, NULL,
                   NULL, 7);
    int par = 2;
    run_core_tests("ParallelMapDatasetSerializationTest.testCaptureConstantInMapFn", ds_capture_const, &par, NULL, NULL,
                   10);
}

static void test_filter_core(void) {
    int64_t d3 = 3, d6 = 6;
    run_core_tests("FilterDatasetSerializationTest.testFilterCore", ds_filter, &d3, ds_filter, &d6, 67);
    run_core_tests("FilterDatasetSerializationTest.testFilterDictCore", ds_filter_dict, NULL, NULL, NULL, 5);
}

static void test_batch_unbatch_core(void) {
    bool no = false, yes = true;
    run_core_tests("BatchDatasetSerializationTest.testCore", ds_batch, &no, NULL, NULL, 4);
    run_core_tests("UnbatchDatasetSerializationTest.testCore", ds_batch, &yes, NULL, NULL, 8);
}

static void test_padded_batch_core(void) {
    uint32_t x = 12345; /* np.random.randint(1, 20, size=(32,)): a fixed draw here */
    for (int i = 0; i < 32; i++) {
        x = x * 1103515245u + 12345u;
        g_seq_lens[i] = 1 + (int32_t)((x >> 16) % 19);
    }
    bool no = false, yes = true;
    run_core_tests("PaddedBatchDatasetSerializationTest.testPaddedBatch", ds_padded_batch, &no, NULL, NULL, 8);
    run_core_tests("PaddedBatchDatasetSerializationTest.testPaddedBatchNonDefaultPadding", ds_padded_batch, &yes, NULL,
                   NULL, 8);
}

static void test_shuffle_core(void) {
    static const int64_t sizes[5] = {1, 3, 5, 8, 10};
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 5; k++) {
            shuffle_arg a = {5, 2, sizes[k], 55, r == 0};
            char name[128];
            snprintf(name, sizeof name, "ShuffleDatasetSerializationTest.testShuffleCore (reshuffle %d, buffer %lld)",
                     r == 0, (long long)sizes[k]);
            run_core_tests(name, ds_shuffle, &a, NULL, NULL, 10);
        }
}

/* testMultipleIterators: two one-shot iterators over one unseeded shuffle, saved before
 * use; after a restore both produce what they produced after the save. */
static void test_shuffle_multiple_iterators(void) {
    static const int64_t sizes[5] = {1, 3, 5, 8, 10};
    g_case = "ShuffleDatasetSerializationTest.testMultipleIterators";
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 5; k++) {
            vg_status st;
            ckpt_clear();
            shuffle_arg a = {5, 2, sizes[k], 0, r == 0};
            vg_graph *g = vg_graph_new();
            vg_output ds = ds_shuffle(g, &a);
            vg_output its[2] = {vg_make_one_shot_iterator(g, ds, NULL), vg_make_one_shot_iterator(g, ds, NULL)};
            vg_output f[2] = {vg_out(vg_iterator_get_next(g, its[0], NULL), 0),
                              vg_out(vg_iterator_get_next(g, its[1], NULL), 0)};
            for (int i = 0; i < 2; i++) vg_make_saveable_from_iterator(g, its[i], NULL);
            vg_saver_options so = {0};
            so.allow_empty = true;
            so.no_meta_graph = true;
            pipeline p = {0};
            p.g = g;
            p.sv = vg_saver_new(g, &so, &st);
            p.s = p.sv ? vg_session_new(g, NULL, &st) : NULL;
            CHECK(p.s != NULL);
            if (!p.s) {
                pipe_free(&p);
                continue;
            }
            CHECK_OK(pipe_save(&p, &st), &st);
            elems exp = {0}, act = {0};
            for (int pass = 0; pass < 2; pass++) {
                if (pass == 1) CHECK_OK(pipe_restore(&p, &st), &st);
                for (int i = 0; i < 10; i++) {
                    vg_tensor *t[2] = {0};
                    CHECK_OK(vg_session_run(p.s, NULL, NULL, NULL, 0, f, t, 2, NULL, 0, NULL, &st), &st);
                    if (t[0] && t[1]) elems_push(pass ? &act : &exp, t, 2);
                    vg_tensor_free(t[0]);
                    vg_tensor_free(t[1]);
                }
            }
            CHECK(elems_match(&exp, &act, "restore"));
            elems_free(&exp);
            elems_free(&act);
            pipe_free(&p);
        }
}

static void test_sequence_core(void) {
    seq_arg s4 = {0, 4, 0};
    run_core_tests("SkipDatasetSerializationTest.testSkipFewerThanInputs", ds_seq, &s4, NULL, NULL, 6);
    static const int64_t skips[4] = {20, 10, -1, 0};
    for (int i = 0; i < 4; i++) {
        seq_arg s = {0, skips[i], 0};
        run_core_tests("SkipDatasetSerializationTest.testSkipVarious", ds_seq, &s, NULL, NULL, skips[i] == 0 ? 10 : 0);
    }
    seq_arg t4 = {1, 4, 0};
    run_core_tests("TakeDatasetSerializationTest.testTakeFewerThanInputs", ds_seq, &t4, NULL, NULL, 4);
    static const int64_t takes[4] = {20, 10, -1, 0};
    for (int i = 0; i < 4; i++) {
        seq_arg s = {1, takes[i], 0};
        run_core_tests("TakeDatasetSerializationTest.testTakeVarious", ds_seq, &s, NULL, NULL, takes[i] == 0 ? 0 : 10);
    }
    seq_arg r10 = {2, 10, 3}, r0 = {2, 0, 3}, rinf = {2, -1, 3}, rinf0 = {2, -1, 0};
    run_core_tests("RepeatDatasetSerializationTest.testFiniteRepeat", ds_seq, &r10, NULL, NULL, 30);
    run_core_tests("RepeatDatasetSerializationTest.testEmptyRepeat", ds_seq, &r0, NULL, NULL, 0);
    g_case = "RepeatDatasetSerializationTest.testInfiniteRepeat";
    verify_unused_iterator(ds_seq, &rinf, 10, false);
    verify_multiple_breaks(ds_seq, &rinf, 20, false);
    verify_reset_restored_iterator(ds_seq, &rinf, 20, false);
    run_core_tests("RepeatDatasetSerializationTest.testInfiniteRepeat (empty input)", ds_seq, &rinf0, NULL, NULL, 0);
}

static void test_interleave_core(void) {
    static const inter_arg cases[8] = {{2, 3, 0}, {2, 3, 1}, {2, 3, 2}, {1, 3, 0}, {1, 3, 1}, {2, 1, 0}, {2, 1, 1}, {2, 1, 2}};
    for (int i = 0; i < 8; i++) {
        inter_arg b = cases[i];
        b.cycle *= 2;
        char name[128];
        snprintf(name, sizeof name, "InterleaveDatasetSerializationTest.testSerializationCore (%d)", i + 1);
        run_core_tests(name, ds_interleave, &cases[i], ds_interleave, &b, 30);
    }
}

static void test_flat_map_core(void) {
    int64_t s0 = 0, s10 = 10;
    run_core_tests("FlatMapDatasetSerializationTest.testCore", ds_flat_map, &s0, ds_flat_map, &s10, 25);
    run_core_tests("FlatMapDatasetSerializationTest.testMapThenFlatMap", ds_map_then_flat_map, NULL, NULL, NULL, 500);
    verify_error_on_save("FlatMapDatasetSerializationTest.testDisallowCapturingStatefulOps", ds_map_then_flat_map,
                         (void *)1, 500, VG_INVALID_ARGUMENT, "stateful op");
}

static void test_prefetch_zip_concatenate_core(void) {
    run_core_tests("PrefetchDatasetSerializationTest.testCore", ds_prefetch, NULL, NULL, NULL, 100);
    static const double arr[5] = {4, 37.0, 38.0, 39.0, 40.0}, diff[3] = {2, 1.0, 2.0};
    run_core_tests("ZipDatasetSerializationTest.testCore", ds_zip, arr, NULL, NULL, 4);
    run_core_tests("ZipDatasetSerializationTest.testCore (variable length)", ds_zip, diff, NULL, NULL, 2);
    run_core_tests("ConcatenateDatasetSerializationTest.testConcatenateCore", ds_concatenate, NULL, NULL, NULL, 9);
}

static void test_constructor_shard_ignore_errors_core(void) {
    int64_t a1 = 1, a2 = 2;
    run_core_tests("DatasetConstructorSerializationTest.testFromTensorsCore", ds_from_tensors, &a1, ds_from_tensors, &a2,
                   1);
    int w0 = 0, w1 = 1, w2 = 2;
    run_core_tests("DatasetConstructorSerializationTest.testFromTensorSlicesCore", ds_from_slices, &w0, ds_from_slices,
                   &w1, 4);
    run_core_tests("DatasetConstructorSerializationTest.testFromTensorSlicesCore (dict)", ds_from_slices, &w2, NULL, NULL,
                   3);
    static const int64_t elems_[2] = {10, 100}, shards[2] = {2, 5};
    for (int e = 0; e < 2; e++)
        for (int s = 0; s < 2; s++)
            for (int i = 0; i < 2; i++) {
                int64_t v[3] = {elems_[e], shards[s], i};
                run_core_tests("ShardDatasetSerializationTest.testCore", ds_shard, v, NULL, NULL,
                               (int)(elems_[e] / shards[s]));
            }
    static const float c[6] = {5, 1, 2, 3, NAN, 5}, d[5] = {4, 1, 2, 3, NAN};
    run_core_tests("IgnoreErrorsSerializationTest.testIgnoreErrorsCore", ds_ignore_errors, c, ds_ignore_errors, d, 4);
}

static void test_readers_core(void) {
    for (int c = 0; c < 3; c++)
        run_core_tests("TextLineDatasetSerializationTest.testTextLineCore", ds_text, &c, NULL, NULL, 25);
    rec_arg nb = {0, 5, 5}, nb2 = {0, 10, 5}, one = {0, 5, 1}, one2 = {0, 10, 1};
    run_core_tests("TFRecordDatasetSerializationTest.testTFRecordWithoutBufferCore", ds_tfrecord, &nb, ds_tfrecord, &nb2,
                   14);
    run_core_tests("TFRecordDatasetSerializationTest.testTFRecordWithoutBufferCore (batch 1)", ds_tfrecord, &one, NULL,
                   NULL, 70);
    run_core_tests("TFRecordDatasetSerializationTest.testTFRecordWithBufferCore", ds_tfrecord, &one, ds_tfrecord, &one2,
                   70);
    rec_arg z = {1, 5, 1}, gz = {2, 5, 1};
    run_core_tests("TFRecordDatasetSerializationTest.testTFRecordWithCompressionCore (ZLIB)", ds_tfrecord, &z,
                   ds_tfrecord, &one2, 70);
    run_core_tests("TFRecordDatasetSerializationTest.testTFRecordWithCompressionCore (GZIP)", ds_tfrecord, &gz,
                   ds_tfrecord, &one2, 70);
    int64_t e5 = 5;
    run_core_tests("FixedLengthRecordDatasetSerializationTest.testFixedLengthRecordCore", ds_fixed, &e5, NULL, NULL, 70);
}

/* cache_dataset_serialization_test.py (memory and file): checkpoints before, during and
 * after the first epoch; the output is range(10) three times whatever happens. */
static void check_range10x3(const elems *prefix_e, int keep, const elems *rest, const char *what) {
    int n = keep + rest->n;
    CHECK_EQ_INT(n, 30);
    for (int i = 0; i < n && i < 30; i++) {
        int64_t v = i < keep ? elem_i64(prefix_e, i) : elem_i64(rest, i - keep);
        if (v != i % 10) {
            fprintf(stderr, "%s / %s: output %d is %lld\n", g_case, what, i, (long long)v);
            CHECK(false);
            break;
        }
    }
}

static void test_cache(void) {
    for (int mem = 1; mem >= 0; mem--) {
        bool m = mem;
        snprintf(g_cache_file, sizeof g_cache_file, "%s/cache_%d", g_dir, 0);
        gen_opts o = GEN, r = GEN;
        o.verify_exhausted = false;
        r.verify_exhausted = false;
        r.ckpt_saved = true;
        static const struct {
            const char *name;
            int brk, first, keep;
        } cases[] = {{"testCheckpointBeforeOneEpoch", -1, 5, 5},
                     {"testCheckpointBeforeOneEpochThenRunFewSteps", 5, 8, 5},
                     {"testCheckpointAfterOneEpoch", -1, 15, 15},
                     {"testCheckpointAfterOneEpochThenRunFewSteps", 15, 18, 15},
                     {"testCheckpointBeforeOneEpochButRunCompleteEpoch", 5, 13, 5},
                     {"testCheckpointUnusedWriterIterator", -1, 0, 0}};
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            char name[160];
            snprintf(name, sizeof name, "CacheDatasetSerializationTest.%s (%s)", cases[k].name, m ? "memory" : "file");
            g_case = name;
            snprintf(g_cache_file, sizeof g_cache_file, "%s/cache_%d_%zu", g_dir, mem, k);
            ckpt_clear();
            elems a = {0}, b = {0};
            gen_opts oo = o;
            int br = cases[k].brk;
            if (br >= 0) oo.save_at_end = false;
            gen_outputs(ds_cache, &m, br >= 0 ? &br : NULL, br >= 0 ? 1 : 0, cases[k].first, oo, &a);
            CHECK_EQ_INT(a.n, cases[k].first);
            for (int i = 0; i < a.n; i++) CHECK_EQ_INT(elem_i64(&a, i), i % 10);
            gen_outputs(ds_cache, &m, NULL, 0, 30 - cases[k].keep, r, &b);
            check_range10x3(&a, cases[k].keep, &b, "restored");
            elems_free(&a);
            elems_free(&b);
        }
        /* testCheckpointUnusedMidwayWriterIterator: 5, then 0 (restore and save), then the rest */
        snprintf(g_cache_file, sizeof g_cache_file, "%s/cache_%d_midway", g_dir, mem);
        g_case = m ? "CacheDatasetSerializationTest.testCheckpointUnusedMidwayWriterIterator (memory)"
                   : "CacheDatasetSerializationTest.testCheckpointUnusedMidwayWriterIterator (file)";
        ckpt_clear();
        elems a = {0}, b = {0};
        gen_outputs(ds_cache, &m, NULL, 0, 5, o, &a);
        gen_outputs(ds_cache, &m, NULL, 0, 0, r, &a);
        CHECK_EQ_INT(a.n, 5);
        gen_outputs(ds_cache, &m, NULL, 0, 25, r, &b);
        check_range10x3(&a, 5, &b, "restored");
        elems_free(&a);
        elems_free(&b);
        /* testIgnoreCheckpointIfCacheWritten: after 15 outputs the cache is complete; a
         * new iterator that does not restore reads it */
        snprintf(g_cache_file, sizeof g_cache_file, "%s/cache_%d_written", g_dir, mem);
        g_case = "CacheDatasetSerializationTest.testIgnoreCheckpointIfCacheWritten";
        ckpt_clear();
        gen_outputs(ds_cache, &m, NULL, 0, 15, o, &a);
        gen_outputs(ds_cache, &m, NULL, 0, 30, o, &b);
        check_range10x3(&a, 0, &b, "ignored");
        elems_free(&a);
        elems_free(&b);
        if (!m) {
            struct stat sb;
            char idx[400];
            snprintf(idx, sizeof idx, "%s.index", g_cache_file);
            CHECK(stat(idx, &sb) == 0); /* the file cache was written by the first pass */
        }
    }
}

/* ------------------------------------------------------------------------ */
/* TF's range dataset kernel test (contrib range_dataset_op_test.py RangeDatasetTest,
 * which TF 1.15 keeps with the serialization tests): the save / restore ops directly
 * (_save_op writes SerializeIterator's state to a file, _restore_op feeds it to
 * DeserializeIterator) and through a Saver. */

typedef struct raw_pipe {
    pipeline p;
} raw_pipe;

static bool raw_build(raw_pipe *r, ds_fn fn, const void *arg, bool empty) { return pipe_build(&r->p, fn, arg, empty); }

static char g_state_file[300];

static vg_code raw_save(raw_pipe *r, vg_status *st) {
    vg_tensor *t = NULL;
    vg_code rc = vg_session_run1(r->p.s, r->p.saveable, &t, st);
    if (rc == VG_OK) {
        size_t l;
        const char *b = vg_tensor_string(t, 0, &l);
        write_bytes(g_state_file, b, l);
    }
    vg_tensor_free(t);
    return rc;
}

static vg_code raw_restore(raw_pipe *r, vg_status *st) {
    FILE *f = fopen(g_state_file, "rb");
    if (!f) return vg_status_set(st, VG_NOT_FOUND, "%s not found", g_state_file);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    size_t got = fread(b, 1, (size_t)n, f);
    fclose(f);
    vg_tensor *t = vg_tensor_new_string_scalar(b, got, st);
    free(b);
    vg_code rc = vg_session_run(r->p.s, NULL, &r->p.state, &t, 1, NULL, NULL, 0, &r->p.restore, 1, NULL, st);
    vg_tensor_free(t);
    return rc;
}

static void expect_range(pipeline *p, int64_t from, int64_t to) {
    vg_status st;
    elems e = {0};
    for (int64_t i = from; i < to; i++) {
        vg_code rc = pipe_next(p, &e, &st);
        CHECK_OK(rc, &st);
        if (rc != VG_OK) break;
        if (elem_i64(&e, e.n - 1) != i) {
            fprintf(stderr, "%s: got %lld, expected %lld\n", g_case, (long long)elem_i64(&e, e.n - 1), (long long)i);
            CHECK(false);
            break;
        }
    }
    elems_free(&e);
}

static void test_range_save_restore(void) {
    vg_status st;
    range_arg r = {2, 10, 1}, r_new = {2, 15, 1}, r_1 = {2, 8, 1};
    raw_pipe a, b;
    snprintf(g_state_file, sizeof g_state_file, "%s/iterator_state", g_dir);

    g_case = "RangeDatasetTest.testSaveRestore";
    unlink(g_state_file);
    if (raw_build(&a, ds_range, &r, false)) { /* different sessions */
        CHECK_OK(pipe_init(&a.p, &st), &st);
        expect_range(&a.p, 2, 5);
        CHECK_OK(raw_save(&a, &st), &st);
        pipe_free(&a.p);
    }
    if (raw_build(&b, ds_range, &r, false)) {
        CHECK_OK(pipe_init(&b.p, &st), &st);
        CHECK_OK(raw_restore(&b, &st), &st);
        expect_range(&b.p, 5, 10);
        CHECK_CODE(pipe_next(&b.p, NULL, &st), VG_OUT_OF_RANGE);
        pipe_free(&b.p);
    }
    if (raw_build(&a, ds_range, &r, false)) { /* the same session */
        CHECK_OK(pipe_init(&a.p, &st), &st);
        expect_range(&a.p, 2, 5);
        CHECK_OK(raw_save(&a, &st), &st);
        CHECK_OK(raw_restore(&a, &st), &st);
        expect_range(&a.p, 5, 10);
        CHECK_CODE(pipe_next(&a.p, NULL, &st), VG_OUT_OF_RANGE);
        pipe_free(&a.p);
    }

    /* testSaveRestoreUsingSaverFromMetaGraph (the graph rebuilt, vigil has no
     * import_meta_graph) and testSaveRestoreUsingBuiltSaver: a Saver restores the
     * iterator without its initializer being run, in a graph whose range was changed */
    g_case = "RangeDatasetTest.testSaveRestoreUsingBuiltSaver";
    pipeline p;
    ckpt_clear();
    if (pipe_build(&p, ds_range, &r, false)) {
        CHECK_OK(pipe_init(&p, &st), &st);
        expect_range(&p, 2, 5);
        CHECK_OK(pipe_save(&p, &st), &st);
        pipe_free(&p);
    }
    if (pipe_build(&p, ds_range, &r_new, false)) {
        CHECK_OK(pipe_restore(&p, &st), &st);
        expect_range(&p, 5, 10);
        CHECK_CODE(pipe_next(&p, NULL, &st), VG_OUT_OF_RANGE);
        pipe_free(&p);
    }
    /* testSaveRestoreUsingSaverThenInit: the initializer after the restore starts over */
    g_case = "RangeDatasetTest.testSaveRestoreUsingSaverThenInit";
    if (pipe_build(&p, ds_range, &r_new, false)) {
        CHECK_OK(pipe_restore(&p, &st), &st);
        CHECK_OK(pipe_init(&p, &st), &st);
        expect_range(&p, 2, 15);
        CHECK_CODE(pipe_next(&p, NULL, &st), VG_OUT_OF_RANGE);
        pipe_free(&p);
    }

    /* testRestoreWithoutBuildingDatasetGraph: range(2, 10).repeat(5) saved after 3
     * epochs and 3 elements, restored into Iterator.from_structure(int64, scalar) */
    g_case = "RangeDatasetTest.testRestoreWithoutBuildingDatasetGraph";
    range_rep_arg rr = {2, 10, 5};
    unlink(g_state_file);
    if (raw_build(&a, ds_range_repeat, &rr, false)) {
        CHECK_OK(pipe_init(&a.p, &st), &st);
        for (int e = 0; e < 3; e++) expect_range(&a.p, 2, 10);
        expect_range(&a.p, 2, 5);
        CHECK_OK(raw_save(&a, &st), &st);
        pipe_free(&a.p);
    }
    if (raw_build(&b, ds_range_repeat, &rr, true)) {
        CHECK(vg_graph_op_by_name(b.p.g, "RangeDataset") == NULL); /* no dataset in this graph */
        CHECK_OK(raw_restore(&b, &st), &st);
        expect_range(&b.p, 5, 10);
        for (int e = 4; e < 5; e++) expect_range(&b.p, 2, 10);
        CHECK_CODE(pipe_next(&b.p, NULL, &st), VG_OUT_OF_RANGE);
        pipe_free(&b.p);
    }

    /* testRestoreInModifiedGraph: the state's dataset (stop 10) wins over the graph's (8) */
    g_case = "RangeDatasetTest.testRestoreInModifiedGraph";
    unlink(g_state_file);
    if (raw_build(&a, ds_range, &r, false)) {
        CHECK_OK(pipe_init(&a.p, &st), &st);
        expect_range(&a.p, 2, 5);
        CHECK_OK(raw_save(&a, &st), &st);
        pipe_free(&a.p);
    }
    if (raw_build(&b, ds_range, &r_1, false)) {
        CHECK_OK(raw_restore(&b, &st), &st);
        expect_range(&b.p, 5, 10);
        CHECK_CODE(pipe_next(&b.p, NULL, &st), VG_OUT_OF_RANGE);
        pipe_free(&b.p);
    }
    /* testInitThenRestore */
    g_case = "RangeDatasetTest.testInitThenRestore";
    if (raw_build(&b, ds_range, &r, false)) {
        CHECK_OK(pipe_init(&b.p, &st), &st);
        CHECK_OK(raw_restore(&b, &st), &st);
        expect_range(&b.p, 5, 10);
        CHECK_CODE(pipe_next(&b.p, NULL, &st), VG_OUT_OF_RANGE);
        pipe_free(&b.p);
    }
    /* testMultipleSaves: 5, then 5..7 and a second save, then 7..10 */
    g_case = "RangeDatasetTest.testMultipleSaves";
    if (raw_build(&b, ds_range, &r, false)) {
        CHECK_OK(raw_restore(&b, &st), &st);
        expect_range(&b.p, 5, 7);
        CHECK_OK(raw_save(&b, &st), &st);
        pipe_free(&b.p);
    }
    if (raw_build(&b, ds_range, &r, false)) {
        CHECK_OK(raw_restore(&b, &st), &st);
        expect_range(&b.p, 7, 10);
        CHECK_CODE(pipe_next(&b.p, NULL, &st), VG_OUT_OF_RANGE);
        pipe_free(&b.p);
    }
    /* testSaveRestoreWithRepeat: no state yet (NOT_FOUND), 2 epochs + 3, then the rest;
     * testSaveRestoreExhaustedIterator: saved after the end, restored at the end */
    g_case = "RangeDatasetTest.testSaveRestoreWithRepeat";
    unlink(g_state_file);
    if (raw_build(&a, ds_range_repeat, &rr, false)) {
        CHECK_OK(pipe_init(&a.p, &st), &st);
        CHECK_CODE(raw_restore(&a, &st), VG_NOT_FOUND);
        for (int e = 0; e < 2; e++) expect_range(&a.p, 2, 10);
        expect_range(&a.p, 2, 5);
        CHECK_OK(raw_save(&a, &st), &st);
        pipe_free(&a.p);
    }
    if (raw_build(&b, ds_range_repeat, &rr, false)) {
        CHECK_OK(raw_restore(&b, &st), &st);
        expect_range(&b.p, 5, 10);
        for (int e = 3; e < 5; e++) expect_range(&b.p, 2, 10);
        CHECK_CODE(pipe_next(&b.p, NULL, &st), VG_OUT_OF_RANGE);
        pipe_free(&b.p);
    }
    g_case = "RangeDatasetTest.testSaveRestoreExhaustedIterator";
    unlink(g_state_file);
    if (raw_build(&a, ds_range_repeat, &rr, false)) {
        CHECK_OK(pipe_init(&a.p, &st), &st);
        for (int e = 0; e < 5; e++) expect_range(&a.p, 2, 10);
        CHECK_CODE(pipe_next(&a.p, NULL, &st), VG_OUT_OF_RANGE);
        CHECK_OK(raw_save(&a, &st), &st);
        pipe_free(&a.p);
    }
    if (raw_build(&b, ds_range_repeat, &rr, false)) {
        CHECK_OK(raw_restore(&b, &st), &st);
        CHECK_CODE(pipe_next(&b.p, NULL, &st), VG_OUT_OF_RANGE);
        pipe_free(&b.p);
    }
}

/* testSaveRestoreUsingSaverFromMetaGraph: the .meta the Saver wrote (SerializeIterator
 * in the save op, DeserializeIterator in restore_all) imported into an empty graph
 * (import_meta_graph); its restore op, run with the checkpoint fed, puts the iterator
 * where it was, and get_next comes from the "iterator_ops" collection. */
static void test_restore_from_meta_graph(void) {
    vg_status st;
    g_case = "RangeDatasetTest.testSaveRestoreUsingSaverFromMetaGraph";
    ckpt_clear();
    char prefix[400], meta[500];
    snprintf(prefix, sizeof prefix, "%s/iterator", g_ckdir);
    snprintf(meta, sizeof meta, "%s.meta", prefix);
    vg_graph *g = vg_graph_new();
    vg_op *init;
    vg_output it = vg_make_initializable_iterator(g, vg_dataset_range(g, 2, 10, 1, NULL), &init, "Iterator");
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    vg_graph_add_to_collection(g, "iterator_ops", vg_out(init, 0));
    vg_graph_add_to_collection(g, "iterator_ops", vg_out(next, 0));
    vg_make_saveable_from_iterator(g, it, NULL);
    vg_saver *sv = vg_saver_new(g, NULL, &st);
    vg_session *s = sv ? vg_session_new(g, NULL, &st) : NULL;
    CHECK(s != NULL);
    if (s) {
        CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
        pipeline p = {.g = g, .s = s, .next = next, .nout = 1};
        expect_range(&p, 2, 5);
        CHECK_OK(vg_saver_save(sv, s, prefix, -1, NULL, 0, &st), &st);
    }
    vg_session_free(s);
    vg_saver_free(sv);
    vg_graph_free(g);

    g = vg_graph_new();
    vg_meta_graph *mg = NULL;
    CHECK_OK(vg_import_meta_graph_file(g, meta, NULL, &mg, &st), &st);
    int n = 0;
    const vg_output *ops = vg_graph_collection(g, "iterator_ops", &n);
    const vg_saver_def *sd = mg ? vg_meta_graph_saver_def(mg) : NULL;
    CHECK(n == 2 && sd != NULL);
    s = vg_session_new(g, NULL, &st);
    if (s && n == 2 && sd) {
        char fname[300];
        snprintf(fname, sizeof fname, "%s", sd->filename_tensor_name);
        char *colon = strchr(fname, ':');
        if (colon) *colon = 0;
        vg_output feed = vg_out(vg_graph_op_by_name(g, fname), 0);
        vg_op *restore = vg_graph_op_by_name(g, sd->restore_op_name);
        CHECK(feed.op && restore);
        vg_tensor *t = vg_tensor_new_string_scalar(prefix, strlen(prefix), &st);
        if (feed.op && restore)
            CHECK_OK(vg_session_run(s, NULL, &feed, &t, 1, NULL, NULL, 0, &restore, 1, NULL, &st), &st);
        vg_tensor_free(t);
        pipeline p = {.g = g, .s = s, .next = ops[1].op, .nout = 1};
        expect_range(&p, 5, 10);
        CHECK_CODE(pipe_next(&p, NULL, &st), VG_OUT_OF_RANGE);
    }
    vg_session_free(s);
    vg_meta_graph_free(mg);
    vg_graph_free(g);
}

/* ------------------------------------------------------------------------ */
/* vigil's regressions */

/* The checkpoint holds TF's key "Iterator:0-state" next to the variables, and the saver
 * built without a var_list picks the iterator up (SAVEABLE_OBJECTS). A save before the
 * iterator is initialized is TF's FAILED_PRECONDITION. */
static void test_checkpoint_keys(void) {
    vg_status st;
    g_case = "checkpoint keys";
    ckpt_clear();
    vg_graph *g = vg_graph_new();
    vg_variable v = vg_variable_new(g, "w", vg_const_f32(g, 1.5f, NULL), 0);
    (void)v;
    vg_op *init;
    vg_output it = vg_make_initializable_iterator(g, vg_dataset_range(g, 0, 5, 1, NULL), &init, "Iterator");
    vg_output sv_t = vg_make_saveable_from_iterator(g, it, NULL);
    CHECK(sv_t.op && !strcmp(vg_op_type(sv_t.op), "SerializeIterator"));
    CHECK(vg_saveable_key(sv_t) && !strcmp(vg_saveable_key(sv_t), "Iterator:0-state"));
    CHECK(vg_saveable_key(it) == NULL);
    CHECK_EQ_INT(vg_graph_num_saveables(g), 1);
    /* the same iterator twice: refused */
    vg_make_saveable_from_iterator(g, it, NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);

    g = vg_graph_new();
    vg_variable_new(g, "w", vg_const_f32(g, 1.5f, NULL), 0);
    it = vg_make_initializable_iterator(g, vg_dataset_range(g, 0, 5, 1, NULL), &init, "Iterator");
    vg_make_saveable_from_iterator(g, it, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    vg_op *vinit = vg_global_variables_initializer(g);
    vg_saver_options so = {0};
    so.no_meta_graph = true;
    vg_saver *sv = vg_saver_new(g, &so, &st);
    CHECK(sv != NULL);
    vg_session *s = sv ? vg_session_new(g, NULL, &st) : NULL;
    char prefix[400], path[600];
    snprintf(prefix, sizeof prefix, "%s/model.ckpt", g_ckdir);
    if (s) {
        CHECK_OK(vg_session_run_targets(s, &vinit, 1, &st), &st);
        CHECK_STATUS(vg_saver_save(sv, s, prefix, 1, path, sizeof path, &st), &st, VG_FAILED_PRECONDITION,
            "the iterator has not been initialized");
        CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
        CHECK_OK(vg_session_run1(s, vg_out(next, 0), NULL, &st), &st);
        CHECK_OK(vg_saver_save(sv, s, prefix, 1, path, sizeof path, &st), &st);
        vg_checkpoint_reader *r = vg_checkpoint_reader_new(path, &st);
        CHECK(r != NULL);
        if (r) {
            CHECK_EQ_INT(vg_checkpoint_reader_num_tensors(r), 2);
            vg_dtype dt;
            vg_shape sh;
            const char *k0 = vg_checkpoint_reader_tensor(r, 0, &dt, &sh);
            const char *k1 = vg_checkpoint_reader_tensor(r, 1, &dt, &sh);
            CHECK(!strcmp(k0, "Iterator:0-state") && !strcmp(k1, "w"));
            vg_checkpoint_reader_tensor(r, 0, &dt, &sh);
            CHECK(dt == VG_STRING && sh.ndims == 0);
            vg_checkpoint_reader_free(r);
        }
    }
    vg_session_free(s);
    vg_saver_free(sv);
    vg_graph_free(g);
}

/* Item 2: shuffle without a seed (graph seed unset) and reshuffle_each_iteration=False
 * gives the same order in every epoch of a repeat, as TF's ShuffleDatasetOp draws the
 * seeds once when the dataset is made (FixedSeedDataset); with reshuffling the epochs
 * differ; a re-initialized iterator makes the dataset again (another order). */
static void test_unseeded_shuffle_epochs(void) {
    vg_status st;
    g_case = "unseeded shuffle";
    for (int reshuffle = 0; reshuffle <= 1; reshuffle++) {
        vg_graph *g = vg_graph_new();
        shuffle_arg a = {50, 3, 50, 0, reshuffle != 0};
        vg_op *init;
        vg_output it = vg_make_initializable_iterator(g, ds_shuffle(g, &a), &init, NULL);
        vg_op *next = vg_iterator_get_next(g, it, NULL);
        vg_session *s = vg_session_new(g, NULL, &st);
        int64_t v[2][150];
        for (int run = 0; run < 2 && s; run++) {
            CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
            for (int i = 0; i < 150; i++) {
                vg_tensor *t = NULL;
                CHECK_OK(vg_session_run1(s, vg_out(next, 0), &t, &st), &st);
                v[run][i] = t ? *(const int64_t *)vg_tensor_data(t) : -1;
                vg_tensor_free(t);
            }
            CHECK_CODE(vg_session_run1(s, vg_out(next, 0), NULL, &st), VG_OUT_OF_RANGE);
            bool e01 = !memcmp(v[run], v[run] + 50, sizeof(int64_t) * 50);
            bool e12 = !memcmp(v[run] + 50, v[run] + 100, sizeof(int64_t) * 50);
            bool sorted = true;
            for (int i = 0; i < 50; i++) sorted = sorted && v[run][i] == i;
            CHECK(!sorted);
            if (reshuffle) CHECK(!e01 && !e12);
            else CHECK(e01 && e12);
        }
        CHECK(memcmp(v[0], v[1], sizeof(int64_t) * 50) != 0); /* new seeds at re-initialization */
        vg_session_free(s);
        vg_graph_free(g);
    }
}

/* Restore without an initializer, with buffers in flight: range -> shuffle(unseeded,
 * reshuffling) -> repeat(3) -> map(parallel) -> batch -> prefetch; the restored run in
 * a new process-like graph continues with exactly the uninterrupted run's batches (the
 * unseeded seeds travel in the state). */
DS_FN1(sq1_fn, vg_square(fg, args[0], NULL))
static vg_output ds_buffers(vg_graph *g, const void *a) {
    int par = *(const int *)a;
    vg_output ds = vg_dataset_shuffle(g, vg_dataset_range(g, 0, 40, 1, NULL), 16, 0, true, NULL);
    ds = vg_dataset_repeat(g, ds, 3, NULL);
    ds = vg_dataset_map_parallel(g, ds, sq1_fn, NULL, par, NULL);
    return vg_dataset_prefetch(g, vg_dataset_batch(g, ds, 7, false, NULL), 3, NULL);
}

static void test_restore_without_init(void) {
    vg_status st;
    g_case = "restore without init (unseeded shuffle, parallel map, prefetch)";
    for (int par = 0; par <= 2; par += 2)
        for (int bp = 0; bp <= 18; bp += 6) {
            ckpt_clear();
            elems exp = {0}, act = {0};
            pipeline p;
            if (!pipe_build(&p, ds_buffers, &par, false)) continue;
            CHECK_OK(pipe_init(&p, &st), &st);
            for (int i = 0; i < bp; i++) CHECK_OK(pipe_next(&p, &exp, &st), &st);
            CHECK_OK(pipe_save(&p, &st), &st);
            elems cont = {0};
            vg_code rc;
            while ((rc = pipe_next(&p, &cont, &st)) == VG_OK) {
            }
            CHECK_CODE(rc, VG_OUT_OF_RANGE);
            CHECK_EQ_INT(exp.n + cont.n, 18); /* 120 elements in batches of 7 */
            pipe_free(&p);
            if (!pipe_build(&p, ds_buffers, &par, false)) continue;
            CHECK_OK(pipe_restore(&p, &st), &st); /* no initializer */
            while ((rc = pipe_next(&p, &act, &st)) == VG_OK) {
            }
            CHECK_CODE(rc, VG_OUT_OF_RANGE);
            CHECK(elems_match(&cont, &act, "continuation"));
            pipe_free(&p);
            elems_free(&exp);
            elems_free(&cont);
            elems_free(&act);
        }
}

/* MonitoredTrainingSession: the Scaffold's default saver (made when the session is)
 * checkpoints the iterator with the model; a run stopped after 7 steps
 * (StopAtStepHook; the CheckpointSaverHook saves at the end) and a second session
 * restored from checkpoint_dir (no initializer for the one-shot iterator) continue the
 * input exactly where it stood: together they give the uninterrupted run's elements. */
static vg_graph *mts_graph(vg_op **step, vg_output *value) {
    vg_graph *g = vg_graph_new();
    vg_output gs = vg_get_or_create_global_step(g);
    *step = vg_assign_add(g, gs, vg_const_i64(g, 1, NULL), NULL).op;
    vg_output ds = vg_dataset_shuffle(g, vg_dataset_range(g, 0, 30, 1, NULL), 8, 5, true, NULL);
    ds = vg_dataset_map_parallel(g, vg_dataset_repeat(g, ds, 2, NULL), sq1_fn, NULL, 2, NULL);
    vg_output it = vg_make_one_shot_iterator(g, vg_dataset_prefetch(g, ds, 2, NULL), NULL);
    vg_make_saveable_from_iterator(g, it, NULL);
    *value = vg_out(vg_iterator_get_next(g, it, NULL), 0);
    return g;
}

static void test_monitored_training_session(void) {
    vg_status st;
    g_case = "MonitoredTrainingSession";
    char dir[300];
    snprintf(dir, sizeof dir, "%s/mts", g_dir);
    int64_t ref[60], got[70];
    int nref = 0, n = 0;
    vg_op *step;
    vg_output value;
    vg_graph *g = mts_graph(&step, &value);
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *t = NULL;
    while (s && nref < 60 && vg_session_run1(s, value, &t, &st) == VG_OK) {
        ref[nref++] = *(const int64_t *)vg_tensor_data(t);
        vg_tensor_free(t);
    }
    CHECK_EQ_INT(nref, 60);
    vg_session_free(s);
    vg_graph_free(g);
    for (int round = 0; round < 2; round++) {
        g = mts_graph(&step, &value);
        vg_monitored_session *ms = mts_no_counter(g, dir, round == 0 ? 7 : 1000, &st);
        vg_code rc = ms ? VG_OK : st.code;
        while (ms && rc == VG_OK && !vg_monitored_session_should_stop(ms) && n < 70) {
            vg_tensor *out = NULL;
            rc = mts_run1(ms, &value, step, &out, &st);
            if (rc == VG_OK) got[n++] = *(const int64_t *)vg_tensor_data(out);
            vg_tensor_free(out);
        }
        if (round == 0) CHECK_EQ_INT(n, 7);
        else CHECK_CODE(rc, VG_OUT_OF_RANGE);
        if (ms) {
            CHECK_OK(vg_monitored_session_end(ms, rc, &st), &st);
            vg_monitored_session_free(ms);
        }
        vg_graph_free(g);
    }
    CHECK_EQ_INT(n, 60);
    for (int i = 0; i < n && i < nref; i++)
        if (got[i] != ref[i]) {
            fprintf(stderr, "%s: element %d is %lld, uninterrupted %lld\n", g_case, i, (long long)got[i],
                    (long long)ref[i]);
            CHECK(false);
            break;
        }
}

/* from_tensors(a dataset): an element holding a dataset cannot be saved */
static vg_output ds_nested(vg_graph *g, const void *a) {
    (void)a;
    vg_output inner = vg_dataset_range(g, 0, 3, 1, NULL);
    return vg_dataset_from_tensors(g, &inner, 1, NULL);
}

/* A state that is not one, a truncated one, a state whose function the graph lacks,
 * and an element that cannot be saved. */
static void test_bad_states(void) {
    vg_status st;
    g_case = "bad states";
    verify_error_on_save("element holding a dataset", ds_nested, NULL, 0, VG_UNIMPLEMENTED, "TensorDataset");
    snprintf(g_state_file, sizeof g_state_file, "%s/iterator_state", g_dir);
    raw_pipe a;
    range_arg r = {0, 10, 1};
    if (raw_build(&a, ds_range, &r, false)) {
        write_bytes(g_state_file, "not a state", 11);
        CHECK_STATUS(raw_restore(&a, &st), &st, VG_INVALID_ARGUMENT, "not a vigil iterator state");
        CHECK_OK(pipe_init(&a.p, &st), &st);
        expect_range(&a.p, 0, 3);
        CHECK_OK(raw_save(&a, &st), &st);
        /* truncated: every prefix of the state is refused cleanly */
        FILE *f = fopen(g_state_file, "rb");
        static char buf[4096];
        size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
        if (f) fclose(f);
        for (size_t k = 0; k + 1 < n; k += 7) {
            write_bytes(g_state_file, buf, k);
            CHECK_CODE(raw_restore(&a, &st), VG_INVALID_ARGUMENT);
        }
        expect_range(&a.p, 3, 5); /* a failed restore leaves the iterator as it was */
        pipe_free(&a.p);
    }
    int par = 0;
    if (raw_build(&a, ds_capture_const, &par, false)) {
        CHECK_OK(pipe_init(&a.p, &st), &st);
        CHECK_OK(raw_save(&a, &st), &st);
        pipe_free(&a.p);
    }
    if (raw_build(&a, ds_capture_const, &par, true)) { /* a graph without the map's function: it is in the state */
        CHECK_OK(raw_restore(&a, &st), &st);
        elems e = {0};
        for (int i = 0; i < 10; i++) CHECK_OK(pipe_next(&a.p, &e, &st), &st);
        CHECK_CODE(pipe_next(&a.p, NULL, &st), VG_OUT_OF_RANGE);
        for (int i = 0; i < e.n; i++) CHECK_EQ_INT(*(const int32_t *)(e.v[i] + 16), 5);
        elems_free(&e);
        pipe_free(&a.p);
    }
    /* bytes flipped anywhere in a state with buffers (shuffle, map read-ahead, prefetch
     * ring): the restore fails cleanly or gives an iterator that runs to its end */
    int par2 = 2;
    if (raw_build(&a, ds_buffers, &par2, false)) {
        CHECK_OK(pipe_init(&a.p, &st), &st);
        for (int i = 0; i < 5; i++) CHECK_OK(pipe_next(&a.p, NULL, &st), &st);
        CHECK_OK(raw_save(&a, &st), &st);
        static char good[1 << 16];
        FILE *f = fopen(g_state_file, "rb");
        size_t n = f ? fread(good, 1, sizeof good, f) : 0;
        if (f) fclose(f);
        CHECK(n > 1000 && n < sizeof good);
        uint32_t x = 99;
        int failed = 0;
        for (int k = 0; k < 300 && n > 0; k++) {
            static char bad[1 << 16];
            memcpy(bad, good, n);
            for (int j = 0; j < 1 + k % 3; j++) {
                x = x * 1103515245u + 12345u;
                bad[(x >> 8) % n] ^= (char)(1 + (x >> 24) % 255);
            }
            write_bytes(g_state_file, bad, n);
            if (raw_restore(&a, &st) != VG_OK) {
                failed++;
                continue;
            }
            vg_code rc;
            for (int i = 0; i < 10000 && (rc = pipe_next(&a.p, NULL, &st)) != VG_OUT_OF_RANGE; i++) {
            }
        }
        CHECK(failed > 0);
        pipe_free(&a.p);
    }
}

int main(void) {
    vg_log_set(vg_log_stderr, NULL, VG_LOG_WARN); /* not the saver's INFO line per restore */
    if (!*tu_mkdtemp(g_dir, sizeof g_dir, "saveable")) {
        CHECK(false);
        TEST_MAIN_END();
    }
    snprintf(g_ckdir, sizeof g_ckdir, "%s/ckpt", g_dir);
    write_files();
    RUN_TEST(test_checkpoint_keys);
    RUN_TEST(test_unseeded_shuffle_epochs);
    RUN_TEST(test_restore_without_init);
    RUN_TEST(test_bad_states);
    RUN_TEST(test_monitored_training_session);
    RUN_TEST(test_range_save_restore);
    RUN_TEST(test_restore_from_meta_graph);
    RUN_TEST(test_range_core);
    RUN_TEST(test_map_core);
    RUN_TEST(test_parallel_map_core);
    RUN_TEST(test_filter_core);
    RUN_TEST(test_batch_unbatch_core);
    RUN_TEST(test_padded_batch_core);
    RUN_TEST(test_shuffle_core);
    RUN_TEST(test_shuffle_multiple_iterators);
    RUN_TEST(test_sequence_core);
    RUN_TEST(test_interleave_core);
    RUN_TEST(test_flat_map_core);
    RUN_TEST(test_prefetch_zip_concatenate_core);
    RUN_TEST(test_constructor_shard_ignore_errors_core);
    RUN_TEST(test_readers_core);
    RUN_TEST(test_cache);
    tu_rmrf(g_dir);
    TEST_MAIN_END();
}
