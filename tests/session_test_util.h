/* session_test_util.h - small helpers over the public API shared by tests of every
 * layer: sessions and fetches that report their failure on stderr, a one-shot run,
 * string tensors and their checks, shapes, collections, file reads, fetches with a timeout.
 * Include after test_util.h; every helper is static inline (unused ones cost nothing). */
#ifndef VG_SESSION_TEST_UTIL_H
#define VG_SESSION_TEST_UTIL_H
#include "test_util.h"
#include <pthread.h>
#include "vigil/vigil.h"
#include <stdbool.h>
#include <time.h>

/* A session on g with default options; NULL (and the reason on stderr) on failure. */
static inline vg_session *new_session(vg_graph *g) {
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    if (!s) fprintf(stderr, "  session: %s\n", st.msg);
    return s;
}

/* A new float32 tensor of shape dims[nd] holding v. */
static inline vg_tensor *f32(const float *v, const int64_t *dims, int nd) {
    vg_status st;
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= dims[i];
    return vg_tensor_new_copy(VG_FLOAT, dims, nd, v, (size_t)n * 4, &st);
}

/* A session on g with `threads` inter- and intra-op threads; NULL (and the reason on
 * stderr) on failure. */
static inline vg_session *threaded_session(vg_graph *g, int threads) {
    vg_status st;
    vg_session_options o = {0};
    o.inter_op_threads = threads;
    o.intra_op_threads = threads;
    vg_session *s = vg_session_new(g, &o, &st);
    if (!s) fprintf(stderr, "session: %s\n", st.msg);
    return s;
}

/* g as a binary GraphDef (*bytes, *len; vg_free it) and as text (returned, *tlen its
 * length; vg_free it), checking both serializations succeed. */
static inline char *graphdef_and_text(vg_graph *g, void **bytes, size_t *len, size_t *tlen) {
    vg_status st;
    *bytes = NULL;
    *len = 0;
    CHECK_OK(vg_graph_to_graphdef(g, bytes, len, &st), &st);
    char *text = NULL;
    *tlen = 0;
    CHECK_OK(vg_graph_to_graphdef_text(g, &text, tlen, &st), &st);
    return text;
}

/* Fetches o; NULL on failure (st set). */
static inline vg_tensor *fetch_st(vg_session *s, vg_output o, vg_status *st) {
    vg_tensor *t = NULL;
    if (vg_session_run1(s, o, &t, st) != VG_OK) return NULL;
    return t;
}

/* Fetches o; NULL on failure (the reason on stderr). */
static inline vg_tensor *fetch(vg_session *s, vg_output o) {
    vg_status st;
    vg_tensor *t = fetch_st(s, o, &st);
    if (!t) fprintf(stderr, "  fetch %s: %s\n", o.op ? vg_op_name(o.op) : "(null)", st.msg);
    return t;
}

/* Runs op as a target, checking it succeeds. */
static inline void run_target(vg_session *s, vg_op *op) {
    vg_status st;
    CHECK_OK(vg_session_run_targets(s, &op, 1, &st), &st);
}

/* Runs y in a fresh session on g: the value, or NULL with *st set. */
static inline vg_tensor *run1(vg_graph *g, vg_output y, vg_status *st) {
    vg_session *s = vg_session_new(g, NULL, st);
    vg_tensor *t = NULL;
    if (s && vg_session_run1(s, y, &t, st) != VG_OK) t = NULL;
    vg_session_free(s);
    return t;
}

/* Runs y in a fresh session on g, checking the run fails with code and a message that
 * contains msg. */
static inline void expect_run1_error(vg_graph *g, vg_output y, vg_code code, const char *msg) {
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *t = NULL;
    CHECK_CODE(vg_session_run1(s, y, &t, &st), code);
    CHECK_STR_CONTAINS(st.msg, msg);
    vg_tensor_free(t);
    vg_session_free(s);
}

/* Runs y in a fresh session on g with the scalar string text fed to ph, checking the run
 * fails with code and a message that contains msg. */
static inline void expect_string_feed_error(vg_graph *g, vg_output ph, const char *text, vg_output y, vg_code code,
                                            const char *msg) {
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_tensor *feed = vg_tensor_new(VG_STRING, NULL, 0, &st);
    vg_tensor_set_string(feed, 0, text, strlen(text), &st);
    vg_tensor *out = NULL;
    CHECK_CODE(vg_session_run(s, NULL, &ph, &feed, 1, &y, &out, 1, NULL, 0, NULL, &st), code);
    CHECK_STR_CONTAINS(st.msg, msg);
    vg_tensor_free(out);
    vg_tensor_free(feed);
    vg_session_free(s);
}

/* Runs the three components of sp (indices, values, dense_shape) in a fresh session on
 * g into out[3] (checked to succeed; NULLs if not). */
static inline void run_sparse(vg_graph *g, vg_sparse_output sp, vg_tensor **out) {
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    vg_output f[3] = {sp.indices, sp.values, sp.dense_shape};
    out[0] = out[1] = out[2] = NULL;
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, f, out, 3, NULL, 0, NULL, &st), &st);
    vg_session_free(s);
}

/* A 1-D string Const of the n strings v. */
static inline vg_output strings(vg_graph *g, const char *const *v, int n, const char *name) {
    vg_tensor *t = vg_tensor_new(VG_STRING, (int64_t[]){n}, 1, NULL);
    for (int i = 0; i < n; i++) vg_tensor_set_string(t, i, v[i], strlen(v[i]), NULL);
    vg_output o = vg_const(g, t, name);
    vg_tensor_free(t);
    return o;
}

/* Whether string element i of t is want (t may be NULL); prints the element if not. */
static inline bool str_is(const vg_tensor *t, int64_t i, const char *want) {
    size_t n = 0;
    const char *s = t ? vg_tensor_string(t, i, &n) : NULL;
    bool ok = s && n == strlen(want) && memcmp(s, want, n) == 0;
    if (!ok) fprintf(stderr, "  element %lld is \"%.*s\", expected \"%s\"\n", (long long)i, (int)n, s ? s : "", want);
    return ok;
}

/* Appends the serialized example ex to the TFRecord writer w (errors ignored: the
 * readers' checks find a missing record). */
static inline void write_example(vg_tfrecord_writer *w, vg_example *ex) {
    vg_status st;
    size_t len;
    const void *b = vg_example_serialize(ex, &len, &st);
    vg_tfrecord_writer_write(w, b, len, &st);
}

/* Whether o's static shape is exactly dims[ndims]. */
static inline bool shape_is(vg_output o, const int64_t *dims, int ndims) {
    vg_shape s = vg_output_shape(o);
    if (s.ndims != ndims) return false;
    for (int i = 0; i < ndims; i++)
        if (s.dims[i] != dims[i]) return false;
    return true;
}

/* Whether g has an op called name (of the given type, unless type is NULL); says which
 * is not so on stderr. */
static inline bool has_op(vg_graph *g, const char *name, const char *type) {
    vg_op *op = vg_graph_op_by_name(g, name);
    if (!op || (type && strcmp(vg_op_type(op), type) != 0)) {
        fprintf(stderr, "  op %s: %s%s%s\n", name, op ? vg_op_type(op) : "missing", type ? ", expected " : "",
                type ? type : "");
        return false;
    }
    return true;
}

/* Whether an output of op is in collection key. */
static inline bool in_collection(vg_graph *g, const char *key, vg_op *op) {
    int n;
    const vg_output *items = vg_graph_collection(g, key, &n);
    for (int i = 0; i < n; i++)
        if (items[i].op == op) return true;
    return false;
}

/* Runs the global initializer and fetches x, checking both runs succeed (NULL when no
 * session could be made). */
static inline vg_tensor *init_and_fetch(vg_graph *g, vg_output x) {
    vg_status st;
    vg_op *init = vg_global_variables_initializer(g);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    if (!s) return NULL;
    vg_tensor *t = NULL;
    CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
    CHECK_OK(vg_session_run1(s, x, &t, &st), &st);
    vg_session_free(s);
    return t;
}

/* A new layer of kind with units filters, a 2x2 kernel dilated by 2, SAME or VALID
 * padding and no bias (the dilated-convolution tests); vg_layer_free it. */
static inline vg_layer *dilated_2x2_layer(vg_layer_kind kind, int units, bool same) {
    vg_layer_config c = {.kind = kind};
    c.units = units;
    c.kernel_size[0] = c.kernel_size[1] = 2;
    c.dilation_rate[0] = c.dilation_rate[1] = 2;
    c.padding = same ? "same" : "valid";
    c.no_bias = true;
    return vg_layer_new(&c);
}

/* The name of o's op ("(null)" for none). */
static inline const char *vname(vg_output v) { return v.op ? vg_op_name(v.op) : "(null)"; }

/* The names of a collection, in order, joined by ' '. */
static inline void collection_names(vg_graph *g, const char *key, char *buf, size_t len) {
    int n;
    const vg_output *items = vg_graph_collection(g, key, &n);
    buf[0] = 0;
    for (int i = 0; i < n; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s", i ? " " : "", vname(items[i]));
    }
}

#define CHECK_COLLECTION(g, key, want)                                                                                 \
    do {                                                                                                               \
        char _b[4096];                                                                                                 \
        collection_names((g), (key), _b, sizeof _b);                                                                   \
        if (strcmp(_b, (want)) != 0) {                                                                                 \
            fprintf(stderr, "%s:%d: collection %s is \"%s\", expected \"%s\"\n", __FILE__, __LINE__, (key), _b,      \
                    (want));                                                                                           \
            vg_test_failures++;                                                                                        \
        }                                                                                                              \
    } while (0)

/* The first 64 KiB of the file at path (malloc'd; *n its length), or NULL. */
static inline uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    *n = 0;
    if (!f) return NULL;
    uint8_t *p = malloc(1 << 16);
    *n = p ? fread(p, 1, 1 << 16, f) : 0;
    fclose(f);
    return p;
}

/* Main-thread dequeues from queues fed by runner threads give up after 20 s instead of
 * hanging the test when the pipeline stalls: runs the n fetches f into out (out NULL:
 * the values are freed). */
static inline vg_code fetch_timeout(vg_session *s, const vg_output *f, vg_tensor **out, int n, vg_status *st) {
    vg_run_options ro = {0};
    ro.timeout_in_ms = 20000;
    vg_tensor *tmp[4];
    vg_code rc = vg_session_run(s, &ro, NULL, NULL, 0, f, out ? out : tmp, n, NULL, 0, NULL, st);
    if (!out)
        for (int i = 0; i < n; i++) vg_tensor_free(tmp[i]);
    return rc;
}

/* The number of elements of o's value in s; -1 (a failed check) when the run fails. */
static inline int64_t fetch_num_elements(vg_session *s, vg_output o) {
    vg_tensor *t = fetch(s, o);
    CHECK(t != NULL);
    int64_t n = t ? vg_tensor_num_elements(t) : -1;
    vg_tensor_free(t);
    return n;
}

/* One thread of run_target_concurrently: runs target `runs` times, counting failures. */
typedef struct tu_target_runner {
    vg_session *s;
    vg_op *target;
    int runs, failures;
} tu_target_runner;
static inline void *tu_target_runner_main(void *arg) {
    tu_target_runner *r = arg;
    vg_status st;
    for (int i = 0; i < r->runs; i++)
        if (vg_session_run_targets(r->s, &r->target, 1, &st) != VG_OK) r->failures++;
    return NULL;
}

/* Runs target on s from nthreads threads at once (at most 16), runs times on each; the
 * number of runs that failed. */
static inline int run_target_concurrently(vg_session *s, vg_op *target, int nthreads, int runs) {
    pthread_t th[16];
    tu_target_runner r[16];
    int failures = 0;
    if (nthreads > 16) nthreads = 16;
    for (int i = 0; i < nthreads; i++) {
        r[i] = (tu_target_runner){s, target, runs, 0};
        pthread_create(&th[i], NULL, tu_target_runner_main, &r[i]);
    }
    for (int i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        failures += r[i].failures;
    }
    return failures;
}

/* Element 0 of the float32 x after init_and_fetch; NAN when it could not be fetched. */
static inline double init_and_fetch_f32(vg_graph *g, vg_output x) {
    vg_tensor *t = init_and_fetch(g, x);
    double v = t ? ((const float *)vg_tensor_data(t))[0] : NAN;
    vg_tensor_free(t);
    return v;
}

/* Checks that g has each of the n ops {name, type} of ops (has_op); a failure names the op. */
static inline void expect_ops(vg_graph *g, const char *const ops[][2], int n) {
    for (int i = 0; i < n; i++)
        if (!has_op(g, ops[i][0], ops[i][1])) {
            fprintf(stderr, "expect_ops: no op %s of type %s\n", ops[i][0], ops[i][1]);
            vg_test_failures++;
        }
}

#endif
