/* test_string_ops.c - the ops of TF's sharded Saver (src/kernels/strings/string_ops.c):
 * StringJoin, RegexFullMatch, StaticRegexFullMatch, ShardedFilename, ShardedFilespec,
 * MergeV2Checkpoints, StringSplit; and TF-written SavedModels whose own sharded save/restore
 * subgraphs now run: restore from TF's variables bundle, save again, and compare the
 * written bundle with TF's bytes. */
#include "test_util.h"
#include "session_test_util.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include <dirent.h>
#include <unistd.h>

#define TDL VG_SRCDIR "/tests/data/tf"

static vg_op *build(vg_graph *g, const char *type, const char *name, const vg_output *in, int n) {
    vg_op_builder *b = vg_op_builder_new(g, type, name);
    vg_op_builder_add_inputs(b, in, n);
    return vg_op_builder_finish(b);
}

static vg_output out0(vg_op *op) { return (vg_output){op, 0}; }

static void test_string_join(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_tensor *v = vg_tensor_new(VG_STRING, (int64_t[]){3}, 1, &st);
    const char *w[] = {"a", "", "ccc"};
    for (int i = 0; i < 3; i++) vg_tensor_set_string(v, i, w[i], strlen(w[i]), &st);
    vg_output in[3] = {vg_const_string(g, "x", "s"), vg_const(g, v, "v"), vg_const_string(g, "y", "t")};
    vg_tensor_free(v);
    vg_op_builder *b = vg_op_builder_new(g, "StringJoin", "join");
    vg_op_builder_add_inputs(b, in, 3);
    vg_op_builder_set_attr_string(b, "separator", "--", 2);
    vg_op *j = vg_op_builder_finish(b);
    CHECK(j != NULL);
    vg_op *j2 = build(g, "StringJoin", "join2", in, 1);
    vg_tensor *t = run1(g, out0(j), &st);
    CHECK_OK(st.code, &st);
    CHECK(t && vg_tensor_ndims(t) == 1 && vg_tensor_dim(t, 0) == 3);
    CHECK(t && str_is(t, 0, "x--a--y") && str_is(t, 1, "x----y") && str_is(t, 2, "x--ccc--y"));
    vg_tensor_free(t);
    t = run1(g, out0(j2), &st);
    CHECK(t && vg_tensor_ndims(t) == 0 && str_is(t, 0, "x"));
    vg_tensor_free(t);
    /* mismatched non-scalar shapes: INVALID_ARGUMENT at graph build */
    vg_tensor *v2 = vg_tensor_new(VG_STRING, (int64_t[]){2}, 1, &st);
    vg_output bad[2] = {in[1], vg_const(g, v2, "v2")};
    vg_tensor_free(v2);
    CHECK(build(g, "StringJoin", "bad", bad, 2) == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "do not match");
    vg_graph_free(g);
}

static void test_sharded_filename_and_regex(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_output base = vg_const_string(g, "/ck/model_temp_x/part", "base");
    vg_output in[3] = {base, vg_const_i32(g, 3, "shard"), vg_const_i32(g, 12, "n")};
    vg_op *fn = build(g, "ShardedFilename", "fn", in, 3);
    vg_output sin[2] = {base, in[2]};
    vg_op *spec = build(g, "ShardedFilespec", "spec", sin, 2);
    vg_tensor *t = run1(g, out0(fn), &st);
    CHECK(t && str_is(t, 0, "/ck/model_temp_x/part-00003-of-00012"));
    vg_tensor_free(t);
    t = run1(g, out0(spec), &st);
    CHECK(t && str_is(t, 0, "/ck/model_temp_x/part-?\?\?\?\?-of-00012"));
    vg_tensor_free(t);
    /* the saver's test: "^s3://.*" matches the whole string only */
    vg_tensor *v = vg_tensor_new(VG_STRING, (int64_t[]){3}, 1, &st);
    const char *w[] = {"s3://bucket/ckpt", "/tmp/s3://x", "s3:/"};
    for (int i = 0; i < 3; i++) vg_tensor_set_string(v, i, w[i], strlen(w[i]), &st);
    vg_output rin[2] = {vg_const(g, v, "paths"), vg_const_string(g, "^s3://.*", "pat")};
    vg_tensor_free(v);
    vg_op *re = build(g, "RegexFullMatch", "re", rin, 2);
    vg_op_builder *b = vg_op_builder_new(g, "StaticRegexFullMatch", "sre");
    vg_op_builder_add_input(b, rin[0]);
    vg_op_builder_set_attr_string(b, "pattern", "[a-z0-9]+:/.*", 13);
    vg_op *sre = vg_op_builder_finish(b);
    t = run1(g, out0(re), &st);
    CHECK_OK(st.code, &st);
    const bool *p = t ? vg_tensor_data(t) : NULL;
    CHECK(p && p[0] && !p[1] && !p[2]);
    vg_tensor_free(t);
    t = run1(g, out0(sre), &st);
    p = t ? vg_tensor_data(t) : NULL;
    CHECK(p && p[0] && !p[1] && p[2]);
    vg_tensor_free(t);
    /* a pattern that does not compile */
    vg_output bin[2] = {rin[0], vg_const_string(g, "(unclosed", "badpat")};
    vg_op *bre = build(g, "RegexFullMatch", "badre", bin, 2);
    t = run1(g, out0(bre), &st);
    CHECK(t == NULL);
    CHECK_STATUS(st.code, &st, VG_INVALID_ARGUMENT, "(unclosed");
    /* wrong input type */
    vg_output win[3] = {base, vg_const_f32(g, 1, "f"), in[2]};
    CHECK(build(g, "ShardedFilename", "wrong", win, 3) == NULL);
    CHECK_CODE(vg_graph_status(g, &st), VG_INVALID_ARGUMENT);
    vg_graph_free(g);
}

static size_t count_entries(const char *dir) {
    DIR *d = opendir(dir);
    size_t n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    if (d) closedir(d);
    return n;
}

/* Two shards written by SaveV2 under a temp directory, merged, read back by
 * RestoreV2 (which opens both data files); a duplicate key and a missing input fail. */
static void test_merge_v2_checkpoints(void) {
    vg_status st;
    char dir[256], pre[512], p0[600], p1[600], tmpdir[512];
    tu_mkdtemp(dir, sizeof dir, "merge");
    CHECK(dir[0] != 0);
    snprintf(pre, sizeof pre, "%s/model.ckpt", dir);
    snprintf(tmpdir, sizeof tmpdir, "%s/model.ckpt_temp_abc", dir);
    snprintf(p0, sizeof p0, "%s/part-00000-of-00002", tmpdir);
    snprintf(p1, sizeof p1, "%s/part-00001-of-00002", tmpdir);
    vg_graph *g = vg_graph_new();
    float av[3] = {1, 2, 3};
    int32_t bv = 7;
    vg_output a = vg_const_array(g, VG_FLOAT, (int64_t[]){3}, 1, av, "a");
    vg_output b = vg_const_array(g, VG_INT32, NULL, 0, &bv, "b");
    vg_output empty = vg_const_string(g, "", "empty");
    (void)empty;
    const char *shard_pre[2] = {p0, p1};
    const char *keys[2] = {"w/a", "v/b"};
    vg_output vals[2] = {a, b};
    vg_op *saves[2];
    for (int i = 0; i < 2; i++) {
        vg_tensor *names = vg_tensor_new(VG_STRING, (int64_t[]){1}, 1, &st);
        vg_tensor *slices = vg_tensor_new(VG_STRING, (int64_t[]){1}, 1, &st);
        vg_tensor_set_string(names, 0, keys[i], strlen(keys[i]), &st);
        char nm[32];
        snprintf(nm, sizeof nm, "names%d", i);
        vg_output in[4] = {vg_const_string(g, shard_pre[i], NULL), vg_const(g, names, nm), vg_const(g, slices, NULL),
                           vals[i]};
        vg_tensor_free(names);
        vg_tensor_free(slices);
        snprintf(nm, sizeof nm, "save%d", i);
        saves[i] = build(g, "SaveV2", nm, in, 4);
        CHECK(saves[i] != NULL);
    }
    vg_tensor *pv = vg_tensor_new(VG_STRING, (int64_t[]){2}, 1, &st);
    vg_tensor_set_string(pv, 0, p0, strlen(p0), &st);
    vg_tensor_set_string(pv, 1, p1, strlen(p1), &st);
    vg_output min[2] = {vg_const(g, pv, "prefixes"), vg_const_string(g, pre, "dest")};
    vg_tensor_free(pv);
    vg_op_builder *mb = vg_op_builder_new(g, "MergeV2Checkpoints", "merge");
    vg_op_builder_add_inputs(mb, min, 2);
    vg_op_builder_add_control_input(mb, saves[0]);
    vg_op_builder_add_control_input(mb, saves[1]);
    vg_op *merge = vg_op_builder_finish(mb);
    CHECK(merge != NULL);
    /* restore both from the merged prefix */
    vg_tensor *rn = vg_tensor_new(VG_STRING, (int64_t[]){2}, 1, &st);
    vg_tensor_set_string(rn, 0, "v/b", 3, &st);
    vg_tensor_set_string(rn, 1, "w/a", 3, &st);
    vg_tensor *rs = vg_tensor_new(VG_STRING, (int64_t[]){2}, 1, &st);
    vg_output rin[3] = {min[1], vg_const(g, rn, "rnames"), vg_const(g, rs, "rslices")};
    vg_tensor_free(rn);
    vg_tensor_free(rs);
    vg_op_builder *rb = vg_op_builder_new(g, "RestoreV2", "restore");
    vg_op_builder_add_inputs(rb, rin, 3);
    vg_op_builder_set_attr_type_list(rb, "dtypes", (const vg_dtype[]){VG_INT32, VG_FLOAT}, 2);
    vg_op *restore = vg_op_builder_finish(rb);
    CHECK(restore != NULL);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    CHECK_OK(vg_session_run_targets(s, &merge, 1, &st), &st);
    /* two data files under the merged name; the temp directory is gone */
    char f[600];
    snprintf(f, sizeof f, "%s.data-00000-of-00002", pre);
    CHECK(access(f, F_OK) == 0);
    snprintf(f, sizeof f, "%s.data-00001-of-00002", pre);
    CHECK(access(f, F_OK) == 0);
    CHECK(access(tmpdir, F_OK) != 0);
    CHECK_EQ_INT(count_entries(dir), 3);
    vg_output fo[2] = {{restore, 0}, {restore, 1}};
    vg_tensor *ro[2] = {NULL, NULL};
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, fo, ro, 2, NULL, 0, NULL, &st), &st);
    CHECK(ro[0] && *(const int32_t *)vg_tensor_data(ro[0]) == 7);
    CHECK(ro[1] && vg_tensor_num_elements(ro[1]) == 3 && ((const float *)vg_tensor_data(ro[1]))[2] == 3.0f);
    vg_tensor_free(ro[0]);
    vg_tensor_free(ro[1]);
    /* run again: SaveV2 writes the temp shards again; merging over the existing prefix
     * replaces it (same result) */
    CHECK_OK(vg_session_run_targets(s, &merge, 1, &st), &st);
    CHECK_EQ_INT(count_entries(dir), 3);
    vg_session_free(s);
    vg_graph_free(g);

    /* duplicate key: both shards hold "k" */
    g = vg_graph_new();
    vg_op *sv[2];
    for (int i = 0; i < 2; i++) {
        vg_tensor *names = vg_tensor_new(VG_STRING, (int64_t[]){1}, 1, &st);
        vg_tensor *slices = vg_tensor_new(VG_STRING, (int64_t[]){1}, 1, &st);
        vg_tensor_set_string(names, 0, "k", 1, &st);
        vg_output in[4] = {vg_const_string(g, shard_pre[i], NULL), vg_const(g, names, NULL), vg_const(g, slices, NULL),
                           vg_const_f32(g, (float)i, NULL)};
        vg_tensor_free(names);
        vg_tensor_free(slices);
        sv[i] = build(g, "SaveV2", NULL, in, 4);
    }
    pv = vg_tensor_new(VG_STRING, (int64_t[]){2}, 1, &st);
    vg_tensor_set_string(pv, 0, p0, strlen(p0), &st);
    vg_tensor_set_string(pv, 1, p1, strlen(p1), &st);
    char pre2[600];
    snprintf(pre2, sizeof pre2, "%s/dup", dir);
    vg_output din[2] = {vg_const(g, pv, NULL), vg_const_string(g, pre2, NULL)};
    vg_tensor_free(pv);
    mb = vg_op_builder_new(g, "MergeV2Checkpoints", "merge");
    vg_op_builder_add_inputs(mb, din, 2);
    vg_op_builder_add_control_input(mb, sv[0]);
    vg_op_builder_add_control_input(mb, sv[1]);
    merge = vg_op_builder_finish(mb);
    /* missing input */
    vg_tensor *mv = vg_tensor_new(VG_STRING, (int64_t[]){1}, 1, &st);
    char nothere[600];
    snprintf(nothere, sizeof nothere, "%s/nothere", dir);
    vg_tensor_set_string(mv, 0, nothere, strlen(nothere), &st);
    vg_output xin[2] = {vg_const(g, mv, NULL), vg_const_string(g, pre2, NULL)};
    vg_tensor_free(mv);
    vg_op *missing = build(g, "MergeV2Checkpoints", "missing", xin, 2);
    s = vg_session_new(g, NULL, &st);
    CHECK_STATUS(vg_session_run_targets(s, &merge, 1, &st), &st, VG_INVALID_ARGUMENT, "Duplicate tensor keyed by k");
    CHECK_STATUS(vg_session_run_targets(s, &missing, 1, &st), &st, VG_NOT_FOUND, "nothere.index");
    vg_session_free(s);
    vg_graph_free(g);
    tu_rmrf(dir);
}

static uint8_t *slurp_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    *n = 0;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(sz > 0 ? (size_t)sz : 1);
    if (p && sz > 0 && fread(p, 1, (size_t)sz, f) != (size_t)sz) sz = 0;
    fclose(f);
    *n = sz > 0 ? (size_t)sz : 0;
    return p;
}

static bool same_file(const char *a, const char *b) {
    size_t na, nb;
    uint8_t *pa = slurp_file(a, &na), *pb = slurp_file(b, &nb);
    bool same = pa && pb && na == nb && memcmp(pa, pb, na) == 0;
    free(pa);
    free(pb);
    return same;
}

/* A TF SavedModel imported with its own saver subgraph (omit_saver off): restore from
 * TF's bundle through save/restore_all, save through the sharded save ops into a new
 * prefix, and compare with TF's files (TF's merged index and data bytes), then run the
 * signature on a fresh import restored from vigil's copy. */
static void sharded_roundtrip(const char *model, int ntags, const char *tag, const char *sig, const char *in_key,
                              const char *out_key, float x, float want, bool index_bytes_equal) {
    vg_status st;
    char pb[512], tf_pre[512], dir[256], pre[512], a[600], b[600];
    snprintf(pb, sizeof pb, "%s/%s/saved_model.pb", TDL, model);
    snprintf(tf_pre, sizeof tf_pre, "%s/%s/variables/variables", TDL, model);
    tu_mkdtemp(dir, sizeof dir, "shsave");
    snprintf(pre, sizeof pre, "%s/model.ckpt-1", dir);
    vg_graph *g = vg_graph_new();
    vg_meta_graph *mg = NULL;
    vg_meta_import_options o = {0};
    CHECK_OK(vg_import_saved_model_graph(g, pb, (const char *[]){tag, "train"}, ntags, &o, &mg, &st), &st);
    const vg_saver_def *sd = mg ? vg_meta_graph_saver_def(mg) : NULL;
    CHECK(sd && sd->sharded);
    if (!sd) {
        vg_meta_graph_free(mg);
        vg_graph_free(g);
        return;
    }
    vg_output fname = vg_graph_output_by_name(g, sd->filename_tensor_name, &st);
    vg_output save = vg_graph_output_by_name(g, sd->save_tensor_name, &st);
    vg_op *restore = vg_graph_op_by_name(g, sd->restore_op_name);
    CHECK(fname.op && save.op && restore);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    vg_tensor *fv = vg_tensor_new_string_scalar(tf_pre, strlen(tf_pre), &st);
    CHECK_OK(vg_session_run(s, NULL, &fname, &fv, 1, NULL, NULL, 0, &restore, 1, NULL, &st), &st);
    vg_tensor_free(fv);
    fv = vg_tensor_new_string_scalar(pre, strlen(pre), &st);
    vg_tensor *ret = NULL;
    CHECK_OK(vg_session_run(s, NULL, &fname, &fv, 1, &save, &ret, 1, NULL, 0, NULL, &st), &st);
    CHECK(ret && str_is(ret, 0, pre));
    vg_tensor_free(ret);
    vg_tensor_free(fv);
    vg_session_free(s);
    /* exactly the two bundle files: the "_temp_<uuid>" directory is gone */
    CHECK_EQ_INT(count_entries(dir), 2);
    snprintf(a, sizeof a, "%s.data-00000-of-00001", pre);
    snprintf(b, sizeof b, "%s.data-00000-of-00001", tf_pre);
    CHECK(same_file(a, b));
    snprintf(a, sizeof a, "%s.index", pre);
    snprintf(b, sizeof b, "%s.index", tf_pre);
    if (index_bytes_equal) CHECK(same_file(a, b));
    vg_meta_graph_free(mg);
    vg_graph_free(g);
    /* a fresh import restored from vigil's checkpoint runs the signature */
    g = vg_graph_new();
    mg = NULL;
    CHECK_OK(vg_import_saved_model_graph(g, pb, (const char *[]){tag, "train"}, ntags, &o, &mg, &st), &st);
    s = vg_session_new(g, NULL, &st);
    fname = vg_graph_output_by_name(g, sd ? vg_meta_graph_saver_def(mg)->filename_tensor_name : "", &st);
    restore = vg_graph_op_by_name(g, vg_meta_graph_saver_def(mg)->restore_op_name);
    fv = vg_tensor_new_string_scalar(pre, strlen(pre), &st);
    CHECK_OK(vg_session_run(s, NULL, &fname, &fv, 1, NULL, NULL, 0, &restore, 1, NULL, &st), &st);
    vg_tensor_free(fv);
    if (sig) {
        int si = vg_meta_graph_find_signature(mg, sig);
        CHECK(si >= 0);
        vg_output xin = {0}, yout = {0};
        for (int i = 0; si >= 0 && i < vg_meta_graph_signature_num_tensors(mg, si, false); i++)
            if (!strcmp(vg_meta_graph_signature_tensor_key(mg, si, false, i), in_key))
                xin = vg_meta_graph_signature_tensor(mg, si, false, i);
        for (int i = 0; si >= 0 && i < vg_meta_graph_signature_num_tensors(mg, si, true); i++)
            if (!strcmp(vg_meta_graph_signature_tensor_key(mg, si, true, i), out_key))
                yout = vg_meta_graph_signature_tensor(mg, si, true, i);
        CHECK(xin.op && yout.op);
        vg_tensor *xt = vg_tensor_new_copy(VG_FLOAT, (int64_t[]){1, 1}, 2, &x, sizeof x, &st);
        vg_tensor *yt = NULL;
        CHECK_OK(vg_session_run(s, NULL, &xin, &xt, 1, &yout, &yt, 1, NULL, 0, NULL, &st), &st);
        CHECK(yt && vg_tensor_num_elements(yt) == 1);
        if (yt) CHECK_NEAR(((const float *)vg_tensor_data(yt))[0], want, 1e-6);
        vg_tensor_free(yt);
        vg_tensor_free(xt);
    }
    vg_session_free(s);
    vg_meta_graph_free(mg);
    vg_graph_free(g);
    tu_rmrf(dir);
}

static void test_tf_sharded_savers(void) {
    /* TF 1.0 / 1.2 / 1.5 merged indexes are stored uncompressed, TF 1.14's Snappy */
    sharded_roundtrip("serving_half_plus_three_tf1.0", 1, "serve", NULL, NULL, NULL, 0, 0, true);
    sharded_roundtrip("rust_regression_model_tf1.2", 2, "serve", NULL, NULL, NULL, 0, 0, true);
    sharded_roundtrip("serving_counter_tf1.5", 1, "serve", NULL, NULL, NULL, 0, 0, true);
    sharded_roundtrip("serving_half_plus_two_cpu_tf1.14", 1, "serve", "serving_default", "x", "y", 3.0f, 3.5f, true);
}

/* StringSplit (tf.string_split), TF 1.15's string_split_op_test.py translated: runs
 * the op on strs with delimiter and checks the SparseTensor against the expected
 * (row, col) pairs, values and dense shape. */
static void check_split(const char *const *strs, int n, const char *delim, bool skip_empty, const int64_t *want_idx,
                        const char *const *want_vals, int64_t nwant, int64_t rows, int64_t cols) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_tensor *v = vg_tensor_new(VG_STRING, (int64_t[]){n}, 1, &st);
    for (int i = 0; i < n; i++) vg_tensor_set_string(v, i, strs[i], strlen(strs[i]), &st);
    vg_output src = vg_const(g, v, "src");
    vg_tensor_free(v);
    vg_sparse_output sp;
    vg_op *op = vg_string_split(g, src, delim, skip_empty, &sp, NULL);
    CHECK(op != NULL);
    CHECK(op && strcmp(vg_op_type(op), "StringSplit") == 0);
    vg_tensor *out[3];
    run_sparse(g, sp, out);
    if (out[0] && out[1] && out[2]) {
        CHECK_EQ_INT(vg_tensor_ndims(out[0]), 2);
        CHECK_EQ_INT(vg_tensor_dim(out[0], 0), nwant);
        CHECK_EQ_INT(vg_tensor_dim(out[0], 1), 2);
        CHECK_EQ_INT(vg_tensor_dim(out[1], 0), nwant);
        const int64_t *idx = vg_tensor_data(out[0]), *shp = vg_tensor_data(out[2]);
        for (int64_t i = 0; i < 2 * nwant && vg_tensor_dim(out[0], 0) == nwant; i++) CHECK_EQ_INT(idx[i], want_idx[i]);
        for (int64_t i = 0; i < nwant && vg_tensor_dim(out[1], 0) == nwant; i++) CHECK(str_is(out[1], i, want_vals[i]));
        CHECK_EQ_INT(shp[0], rows);
        CHECK_EQ_INT(shp[1], cols);
    }
    for (int i = 0; i < 3; i++) vg_tensor_free(out[i]);
    vg_graph_free(g);
}

static void test_string_split(void) {
    /* testStringSplit */
    check_split((const char *[]){"pigs on the wing", "animals"}, 2, NULL, true,
                (int64_t[]){0, 0, 0, 1, 0, 2, 0, 3, 1, 0}, (const char *[]){"pigs", "on", "the", "wing", "animals"},
                5, 2, 4);
    /* testStringSplitEmptyDelimiter: single bytes, also of a multi-byte character */
    check_split((const char *[]){"hello", "hola", "\xF0\x9F\x98\x8E"}, 3, "", true,
                (int64_t[]){0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 1, 0, 1, 1, 1, 2, 1, 3, 2, 0, 2, 1, 2, 2, 2, 3},
                (const char *[]){"h", "e", "l", "l", "o", "h", "o", "l", "a", "\xF0", "\x9F", "\x98", "\x8E"}, 13, 3,
                5);
    /* testStringSplitEmptyToken */
    const char *empt[] = {"", " a", "b ", " c", " ", " d ", "  e", "f  ", "  g  ", "  "};
    const int64_t eidx[] = {1, 0, 2, 0, 3, 0, 5, 0, 6, 0, 7, 0, 8, 0};
    const char *evals[] = {"a", "b", "c", "d", "e", "f", "g"};
    check_split(empt, 10, " ", true, eidx, evals, 7, 10, 1);
    /* testStringSplitOnSetEmptyToken: every byte of the delimiter splits */
    check_split((const char *[]){"", " a", "b ", " c", " ", " d ", ". e", "f .", " .g. ", " ."}, 10, " .", true, eidx,
                evals, 7, 10, 1);
    /* testStringSplitWithDelimiter */
    check_split((const char *[]){"hello|world", "hello world"}, 2, "|", true, (int64_t[]){0, 0, 0, 1, 1, 0},
                (const char *[]){"hello", "world", "hello world"}, 3, 2, 2);
    check_split((const char *[]){"hello|world", "hello world"}, 2, "| ", true, (int64_t[]){0, 0, 0, 1, 1, 0, 1, 1},
                (const char *[]){"hello", "world", "hello", "world"}, 4, 2, 2);
    /* skip_empty=False keeps the empty tokens */
    check_split((const char *[]){"#a", "b#", "#c#"}, 3, "#", false, (int64_t[]){0, 0, 0, 1, 1, 0, 1, 1, 2, 0, 2, 1, 2, 2},
                (const char *[]){"", "a", "b", "", "", "c", ""}, 7, 3, 3);
    /* no input rows: an empty SparseTensor of shape {0, 0} */
    check_split(NULL, 0, " ", true, NULL, NULL, 0, 0, 0);
    /* the TFoS CSV line: label|pixels */
    check_split((const char *[]){"7|0,0,255"}, 1, "|", true, (int64_t[]){0, 0, 0, 1}, (const char *[]){"7", "0,0,255"},
                2, 1, 2);

    /* a source that is not a vector: INVALID_ARGUMENT at build time (known rank) and at
     * run time (placeholder of unknown shape) */
    vg_status st;
    vg_graph *g = vg_graph_new();
    CHECK(vg_string_split(g, vg_const_string(g, "a b", "scalar"), " ", true, NULL, NULL) == NULL);
    CHECK_STATUS(vg_graph_status(g, &st), &st, VG_INVALID_ARGUMENT, "input");
    vg_graph_free(g);
    g = vg_graph_new();
    vg_output ph = vg_placeholder(g, VG_STRING, NULL, -1, "ph");
    vg_sparse_output sp;
    CHECK(vg_string_split(g, ph, " ", true, &sp, NULL) != NULL);
    expect_string_feed_error(g, ph, "a b", sp.values, VG_INVALID_ARGUMENT, "input must be a vector");
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_string_join);
    RUN_TEST(test_sharded_filename_and_regex);
    RUN_TEST(test_merge_v2_checkpoints);
    RUN_TEST(test_string_split);
    RUN_TEST(test_tf_sharded_savers);
    TEST_MAIN_END();
}
