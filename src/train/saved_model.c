/*
 * saved_model.c - SavedModel loading (vigil/saved_model.h), after TF 1.15's
 * saved_model/loader_impl.py: find the MetaGraphDef by tags, import it, restore the
 * variables from <export_dir>/variables/variables, run the main op. Public API only.
 */
#include "vigil/saved_model.h"
#include "train_util.h"
#include "vigil/graphdef.h"
#include "vigil/saver.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

void vg_saved_model_free(vg_saved_model *m) {
    if (!m) return;
    vg_session_free(m->session);
    vg_meta_graph_free(m->meta_graph);
    vg_graph_free(m->graph);
    vg_free(m);
}

static bool file_exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* Runs the main op with every asset tensor fed "<export_dir>/assets/<filename>", as
 * loader_impl.load feeds get_asset_tensors' dictionary. */
static vg_code run_main_op(vg_saved_model *m, const char *export_dir, vg_op *main_op, const vg_run_options *ro,
                           vg_status *st) {
    int na = vg_meta_graph_num_assets(m->meta_graph);
    if (na > 1024) return vg_status_set(st, VG_INVALID_ARGUMENT, "SavedModel %s lists %d assets", export_dir, na);
    vg_output feeds[1024];
    vg_tensor *vals[1024];
    vg_code k = VG_OK;
    int n = 0;
    for (int i = 0; i < na && !k; i++) {
        char path[4096];
        int w = snprintf(path, sizeof path, "%s/assets/%s", export_dir, vg_meta_graph_asset_filename(m->meta_graph, i));
        if (w < 0 || (size_t)w >= sizeof path) {
            k = vg_status_set(st, VG_INVALID_ARGUMENT, "asset path too long in %s", export_dir);
            break;
        }
        feeds[n] = vg_meta_graph_asset_tensor(m->meta_graph, i);
        if (!(vals[n] = vg_tensor_new_string_scalar(path, (size_t)w, st))) k = st->code ? st->code : VG_RESOURCE_EXHAUSTED;
        else n++;
    }
    if (!k) k = vg_session_run(m->session, ro, feeds, vals, n, NULL, NULL, 0, &main_op, 1, NULL, st);
    for (int i = 0; i < n; i++) vg_tensor_free(vals[i]);
    return k;
}

/* Op types that create, write, rename or delete files (TF's and vigil's): SaveV2 writes
 * a checkpoint anywhere its prefix says, MergeV2Checkpoints renames and deletes files;
 * the others are TF ops vigil lacks (an import fails on them first), listed so that
 * adding one keeps the refusal. CacheDataset writes only with a filename other than a
 * constant "" (checked in file_writer). */
static const char *const file_writing_ops[] = {
    "SaveV2", "Save", "SaveSlices", "MergeV2Checkpoints", "WriteFile", "CreateSummaryFileWriter",
    "CreateSummaryDbWriter", "WriteSummary", "WriteScalarSummary", "WriteHistogramSummary", "WriteImageSummary",
    "WriteAudioSummary", "WriteGraphSummary", "WriteRawProtoSummary", "ImportEvent", "FlushSummaryWriter",
    "CloseSummaryWriter", "DatasetToTFRecord", "ExperimentalDatasetToTFRecord", "SnapshotDataset",
    "ExperimentalSnapshotDataset", "SaveDataset", "PrintV2", "DebugIdentity", "DebugNanCount",
    "DebugNumericSummary", "CacheDatasetV2", NULL};

/* The first op of g that may write files, NULL when none. */
static vg_op *file_writer(const vg_graph *g) {
    int n = vg_graph_num_ops(g);
    for (int i = 0; i < n; i++) {
        vg_op *op = vg_graph_op(g, i);
        const char *t = vg_op_type(op);
        for (int j = 0; file_writing_ops[j]; j++)
            if (!strcmp(t, file_writing_ops[j])) return op;
        if (!strcmp(t, "CacheDataset") && vg_op_num_inputs(op) > 1) {
            vg_output fn = vg_op_input(op, 1);
            const vg_tensor *v = NULL;
            size_t len = 1;
            if (!fn.op || strcmp(vg_op_type(fn.op), "Const") != 0 || !vg_op_attr_tensor(fn.op, "value", &v) || !v ||
                vg_tensor_dtype(v) != VG_STRING || vg_tensor_num_elements(v) != 1 || !vg_tensor_string(v, 0, &len) ||
                len != 0)
                return op;
        }
    }
    return NULL;
}

vg_code vg_saved_model_load(const char *export_dir, const char *const *tags, int ntags,
                            const vg_session_options *session_options, vg_saved_model **out, vg_status *st) {
    vg_saved_model_load_options o = {0};
    o.session_options = session_options;
    return vg_saved_model_load_ex(export_dir, tags, ntags, &o, out, st);
}

/* Runs the SavedModel's own restore op (saver_def.restore_op_name) with its filename
 * tensor fed "<export_dir>/variables/variables", when the graph has both and a
 * variables index exists. */
static vg_code run_tf2_restore(vg_saved_model *m, const char *export_dir, const vg_run_options *ro, vg_status *st) {
    const vg_saver_def *sd = vg_meta_graph_saver_def(m->meta_graph);
    if (!sd || !sd->restore_op_name || !sd->filename_tensor_name) return VG_OK;
    vg_op *restore = vg_graph_op_by_name(m->graph, sd->restore_op_name);
    vg_status es;
    vg_output fname = vg_graph_output_by_name(m->graph, sd->filename_tensor_name, &es);
    if (!restore || !fname.op) return VG_OK; /* the TF 1 saver scope the import omitted */
    char path[4096];
    snprintf(path, sizeof path, "%s/variables/variables.index", export_dir);
    if (!file_exists(path)) return VG_OK;
    snprintf(path, sizeof path, "%s/variables/variables", export_dir);
    vg_tensor *t = vg_tensor_new_string_scalar(path, strlen(path), st);
    if (!t) return st->code ? st->code : VG_RESOURCE_EXHAUSTED;
    vg_code k = vg_session_run(m->session, ro, &fname, &t, 1, NULL, NULL, 0, &restore, 1, NULL, st);
    vg_tensor_free(t);
    if (k) vg_status_prefix(st, "SavedModel %s: restoring its variables (%s): ", export_dir, sd->restore_op_name);
    return k;
}

vg_code vg_saved_model_load_ex(const char *export_dir, const char *const *tags, int ntags,
                               const vg_saved_model_load_options *options, vg_saved_model **out, vg_status *st) {
    if (!out) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_saved_model_load: out is NULL");
    *out = NULL;
    vg_saved_model_load_options defaults = {0};
    if (!options) options = &defaults;
    const vg_session_options *session_options = options->session_options;
    if (!export_dir) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_saved_model_load: NULL export_dir");
    char path[4096];
    int w = snprintf(path, sizeof path, "%s/saved_model.pb", export_dir);
    if (w < 0 || (size_t)w >= sizeof path) return vg_status_set(st, VG_INVALID_ARGUMENT, "export_dir too long");
    if (!file_exists(path)) {
        snprintf(path, sizeof path, "%s/saved_model.pbtxt", export_dir);
        if (!file_exists(path))
            return vg_status_set(st, VG_NOT_FOUND, "SavedModel file does not exist at: %s/{saved_model.pbtxt|saved_model.pb}",
                                 export_dir);
    }
    vg_saved_model *m = vg_calloc(1, sizeof *m);
    if (!m || !(m->graph = vg_graph_new())) {
        vg_free(m);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory loading a SavedModel");
    }
    vg_meta_import_options o = {0};
    o.omit_saver = true;
    vg_code k = vg_import_saved_model_graph(m->graph, path, tags, ntags, &o, &m->meta_graph, st);
    /* before the restoring Saver adds its own SaveV2 */
    vg_op *fw = k || !options->refuse_file_writes ? NULL : file_writer(m->graph);
    if (fw)
        k = vg_status_set(st, VG_PERMISSION_DENIED,
                          "SavedModel %s: op '%s' (%s) can write, rename or delete files; refusing to load it "
                          "(file-writing ops are refused for untrusted models)",
                          export_dir, vg_op_name(fw), vg_op_type(fw));
    int nvars = 0;
    const vg_output *vars = k ? NULL : vg_graph_collection(m->graph, VG_GLOBAL_VARIABLES, &nvars);
    vg_saver *saver = NULL;
    if (!k && nvars > 0) {
        vg_saver_options so = {0};
        so.var_list = vars;
        so.nvars = nvars;
        so.no_meta_graph = true;
        so.name = "vigil_restore";
        saver = vg_saver_new(m->graph, &so, st);
        if (!saver) k = st->code ? st->code : VG_INTERNAL;
    }
    if (!k && !(m->session = vg_session_new(m->graph, session_options, st))) k = st->code ? st->code : VG_INTERNAL;
    if (!k && saver) {
        snprintf(path, sizeof path, "%s/variables/variables", export_dir);
        k = vg_saver_restore(saver, m->session, path, st);
    }
    vg_saver_free(saver);
    /* TF 2 SavedModels have no variable collections: their own saver (a restore
     * function call, kept by the import) restores, fed the variables' path, as TF's
     * loader does (loader.py restore_variables: run restore_op_name) */
    if (!k && nvars == 0) k = run_tf2_restore(m, export_dir, options->main_op_run_options, st);
    /* main op: saved_model_main_op, else legacy_init_op (TF's get_main_op_tensor),
     * else the op of TF 2's "__saved_model_init_op" signature */
    if (!k) {
        int n = 0;
        const vg_output *mo = vg_graph_collection(m->graph, "saved_model_main_op", &n);
        if (n == 0) mo = vg_graph_collection(m->graph, "legacy_init_op", &n);
        if (n > 0) k = run_main_op(m, export_dir, mo[0].op, options->main_op_run_options, st);
        int si = n > 0 ? -1 : vg_meta_graph_find_signature(m->meta_graph, "__saved_model_init_op");
        if (si >= 0 && vg_meta_graph_signature_num_tensors(m->meta_graph, si, true) > 0)
            k = run_main_op(m, export_dir, vg_meta_graph_signature_tensor(m->meta_graph, si, true, 0).op,
                            options->main_op_run_options, st);
    }
    if (k) {
        vg_saved_model_free(m);
        return k;
    }
    vg_graph_finalize(m->graph);
    *out = m;
    vg_status_clear(st);
    return VG_OK;
}

static int find_key(const vg_meta_graph *mg, int sig, bool outputs, const char *key) {
    int n = vg_meta_graph_signature_num_tensors(mg, sig, outputs);
    for (int j = 0; key && j < n; j++)
        if (strcmp(vg_meta_graph_signature_tensor_key(mg, sig, outputs, j), key) == 0) return j;
    return -1;
}

vg_code vg_saved_model_run(vg_saved_model *m, const char *key, const char *const *input_keys,
                           vg_tensor *const *inputs, int ninputs, const char *const *output_keys,
                           vg_tensor **outputs, int noutputs, vg_status *st) {
    return vg_saved_model_run_ex(m, NULL, key, input_keys, inputs, ninputs, output_keys, outputs, noutputs, st);
}

vg_code vg_saved_model_run_ex(vg_saved_model *m, const vg_run_options *run_options, const char *key,
                              const char *const *input_keys, vg_tensor *const *inputs, int ninputs,
                              const char *const *output_keys, vg_tensor **outputs, int noutputs, vg_status *st) {
    if (noutputs > 0 && (!outputs || !output_keys))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_saved_model_run: %s is NULL", outputs ? "output_keys" : "outputs");
    if (ninputs > 0 && (!inputs || !input_keys))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_saved_model_run: %s is NULL", inputs ? "input_keys" : "inputs");
    for (int i = 0; i < noutputs; i++) outputs[i] = NULL;
    if (!m || ninputs < 0 || noutputs < 0 || ninputs > 256 || noutputs > 256)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_saved_model_run: bad arguments");
    int sig = vg_meta_graph_find_signature(m->meta_graph, key);
    if (sig < 0) return vg_status_set(st, VG_NOT_FOUND, "SignatureDef '%s' not found in the SavedModel", key ? key : "(null)");
    vg_output feeds[256], fetches[256];
    for (int i = 0; i < ninputs + noutputs; i++) {
        bool out = i >= ninputs;
        const char *k = out ? output_keys[i - ninputs] : input_keys[i];
        int j = find_key(m->meta_graph, sig, out, k);
        if (j < 0)
            return vg_status_set(st, VG_NOT_FOUND, "signature '%s' has no %s '%s'", key, out ? "output" : "input",
                                 k ? k : "(null)");
        vg_output t = vg_meta_graph_signature_tensor(m->meta_graph, sig, out, j);
        if (out) fetches[i - ninputs] = t;
        else feeds[i] = t;
    }
    return vg_session_run(m->session, run_options, feeds, inputs, ninputs, fetches, outputs, noutputs, NULL, 0, NULL, st);
}

/* ------------------------------------------------------------------------ */
/* writing: a tiny protobuf writer (the train layer uses only the public API) */

typedef vg__train_buf wbuf;

static void w_raw(wbuf *b, const void *d, size_t n) { vg__train_buf_put(b, d, n); }

static void w_varint(wbuf *b, uint64_t v) {
    uint8_t t[10];
    int n = 0;
    do {
        t[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    w_raw(b, t, (size_t)n);
}

static void w_len(wbuf *b, int field, const void *d, size_t n) {
    w_varint(b, (uint64_t)field << 3 | 2);
    w_varint(b, n);
    w_raw(b, d, n);
}

static void w_str(wbuf *b, int field, const char *s) { w_len(b, field, s, strlen(s)); }
static void w_sub(wbuf *b, int field, wbuf *sub) {
    if (sub->oom) b->oom = true;
    w_len(b, field, sub->p, sub->n);
    sub->n = 0;
}

/* Reads one top-level field of a message: number, wire type, and its bytes span. */
static bool r_field(const uint8_t **p, const uint8_t *end, int *num, const uint8_t **start) {
    *start = *p;
    uint64_t key = 0, v = 0;
    int shift = 0;
    do {
        if (*p >= end || shift > 63) return false;
        key |= (uint64_t)(**p & 0x7f) << shift;
        shift += 7;
    } while (*(*p)++ & 0x80);
    *num = (int)(key >> 3);
    switch (key & 7) {
    case 0:
        do {
            if (*p >= end) return false;
        } while (*(*p)++ & 0x80);
        return true;
    case 1: if (end - *p < 8) return false; *p += 8; return true;
    case 5: if (end - *p < 4) return false; *p += 4; return true;
    case 2:
        shift = 0;
        do {
            if (*p >= end || shift > 63) return false;
            v |= (uint64_t)(**p & 0x7f) << shift;
            shift += 7;
        } while (*(*p)++ & 0x80);
        if (v > (uint64_t)(end - *p)) return false;
        *p += v;
        return true;
    default: return false;
    }
}

/* TensorInfo {name = 1, dtype = 2, tensor_shape = 3 {dim = 2 {size = 1}, unknown_rank = 3}} */
static void w_tensor_info(wbuf *b, vg_output o) {
    char name[1100];
    snprintf(name, sizeof name, "%s:%d", vg_op_name(o.op), o.index);
    w_str(b, 1, name);
    w_varint(b, 2 << 3);
    w_varint(b, (uint64_t)vg_output_dtype(o));
    vg_shape s = vg_output_shape(o);
    wbuf sh = {0}, dim = {0};
    if (s.ndims < 0) {
        w_varint(&sh, 3 << 3);
        w_varint(&sh, 1);
    }
    for (int i = 0; i < s.ndims; i++) {
        if (s.dims[i]) {
            w_varint(&dim, 1 << 3);
            w_varint(&dim, (uint64_t)s.dims[i]);
        }
        w_sub(&sh, 2, &dim);
    }
    w_sub(b, 3, &sh);
    vg_free(sh.p);
    vg_free(dim.p);
}

static vg_code write_signatures(wbuf *b, vg_graph *g, const vg_signature_def *sigs, int nsigs, vg_status *st) {
    wbuf entry = {0}, sig = {0}, io = {0}, ti = {0};
    vg_code c = VG_OK;
    for (int i = 0; i < nsigs && !c; i++) {
        if (!sigs[i].key) {
            c = vg_status_set(st, VG_INVALID_ARGUMENT, "signature %d has no key", i);
            break;
        }
        for (int k = 0; k < 2 && !c; k++) {
            const vg_signature_tensor *t = k ? sigs[i].outputs : sigs[i].inputs;
            int n = k ? sigs[i].noutputs : sigs[i].ninputs;
            for (int j = 0; j < n; j++) {
                if (!t[j].key || !t[j].tensor.op || vg_op_graph(t[j].tensor.op) != g) {
                    c = vg_status_set(st, VG_INVALID_ARGUMENT, "signature '%s': %s %d is NULL or from another graph",
                                      sigs[i].key, k ? "output" : "input", j);
                    break;
                }
                w_str(&io, 1, t[j].key);
                w_tensor_info(&ti, t[j].tensor);
                w_sub(&io, 2, &ti);
                w_sub(&sig, k + 1, &io);
            }
        }
        w_str(&sig, 3, sigs[i].method_name ? sigs[i].method_name : "tensorflow/serving/predict");
        w_str(&entry, 1, sigs[i].key);
        w_sub(&entry, 2, &sig);
        w_sub(b, 5, &entry);
    }
    vg_free(entry.p);
    vg_free(sig.p);
    vg_free(io.p);
    vg_free(ti.p);
    return c;
}

static vg_code write_file(const char *path, const void *d, size_t n, vg_status *st) {
    return vg_write_file_atomic(path, d, n, st);
}

/* Copies file `src` to `dst` (whole file in memory; assets are vocabularies and such). */
static vg_code copy_file(const char *src, const char *dst, vg_status *st) {
    void *p = NULL; /* regular files only: a FIFO or /dev/zero is refused, not read */
    size_t n = 0;
    vg_code c = vg_read_file(src, &p, &n, st);
    if (c == VG_NOT_FOUND) return vg_status_set(st, VG_NOT_FOUND, "asset file %s cannot be opened", src);
    if (c) return c;
    c = write_file(dst, p, n, st);
    vg_free(p);
    return c;
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The graph's "asset_filepaths" collection (tf.GraphKeys.ASSET_FILEPATHS): each item a
 * string Const whose value is a source file. As builder_impl._maybe_save_assets: an
 * AssetFileDef {tensor_info {name}, filename = basename} per item (a second source
 * with a basename already taken becomes "name_1.ext", ...), the files copied to
 * <export_dir>/assets/. Writes MetaGraphDef field 6 entries into b. */
static vg_code write_assets(wbuf *b, vg_graph *g, const char *export_dir, vg_status *st) {
    int n = 0;
    const vg_output *items = vg_graph_collection(g, "asset_filepaths", &n);
    if (n == 0) return VG_OK;
    if (n > 4096) return vg_status_set(st, VG_INVALID_ARGUMENT, "%d assets", n);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/assets", export_dir);
    if (mkdir(dir, 0755) != 0) return vg_status_set(st, VG_PERMISSION_DENIED, "cannot create %s", dir);
    char **srcs = vg_calloc((size_t)n, sizeof *srcs), **names = vg_calloc((size_t)n, sizeof *names);
    vg_code c = (!srcs || !names) ? vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory writing assets") : VG_OK;
    wbuf afd = {0}, ti = {0};
    for (int i = 0; i < n && !c; i++) {
        const vg_tensor *v = NULL;
        size_t len = 0;
        const char *src = NULL;
        if (strcmp(vg_op_type(items[i].op), "Const") == 0 && vg_op_attr_tensor(items[i].op, "value", &v) && v &&
            vg_tensor_dtype(v) == VG_STRING && vg_tensor_num_elements(v) == 1)
            src = vg_tensor_string(v, 0, &len);
        if (!src || len == 0 || len >= 4000 || memchr(src, 0, len)) {
            c = vg_status_set(st, VG_INVALID_ARGUMENT, "Invalid asset filepath tensor %s: not a string Const naming "
                              "a file", vg_op_name(items[i].op));
            break;
        }
        char *sp = vg_malloc(len + 1), name[4200];
        if (!sp) {
            c = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory writing assets");
            break;
        }
        memcpy(sp, src, len);
        sp[len] = 0;
        srcs[i] = sp;
        const char *bn = base_name(sp);
        snprintf(name, sizeof name, "%s", bn);
        for (int suffix = 1;; suffix++) {
            int j = 0;
            while (j < i && !(names[j] && strcmp(names[j], name) == 0)) j++;
            if (j == i || strcmp(srcs[j], sp) == 0) break; /* free, or the same source */
            const char *dot = strrchr(bn, '.');
            int stem = dot && dot != bn ? (int)(dot - bn) : (int)strlen(bn);
            snprintf(name, sizeof name, "%.*s_%d%s", stem, bn, suffix, dot && dot != bn ? dot : "");
        }
        size_t nl = strlen(name);
        if (!(names[i] = vg_malloc(nl + 1))) {
            c = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory writing assets");
            break;
        }
        memcpy(names[i], name, nl + 1);
        char tname[1100], dst[8400];
        snprintf(tname, sizeof tname, "%s:%d", vg_op_name(items[i].op), items[i].index);
        w_str(&ti, 1, tname);
        w_sub(&afd, 1, &ti);
        w_str(&afd, 2, name);
        w_sub(b, 6, &afd);
        snprintf(dst, sizeof dst, "%s/%s", dir, name);
        struct stat sb;
        if (stat(dst, &sb) != 0) c = copy_file(sp, dst, st);
    }
    for (int i = 0; i < n; i++) {
        if (srcs) vg_free(srcs[i]);
        if (names) vg_free(names[i]);
    }
    vg_free(srcs);
    vg_free(names);
    vg_free(afd.p);
    vg_free(ti.p);
    return c;
}

vg_code vg_saved_model_add_assets_extra(const char *export_dir, const char *const *files, int nfiles, vg_status *st) {
    if (!export_dir || nfiles < 0 || (nfiles && !files))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_saved_model_add_assets_extra: NULL argument");
    char dir[4096], dst[8200];
    int w = snprintf(dir, sizeof dir, "%s/assets.extra", export_dir);
    if (w < 0 || (size_t)w >= sizeof dir) return vg_status_set(st, VG_INVALID_ARGUMENT, "export_dir too long");
    struct stat sb;
    if (stat(export_dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return vg_status_set(st, VG_NOT_FOUND, "SavedModel directory %s does not exist", export_dir);
    if (mkdir(dir, 0755) != 0 && stat(dir, &sb) != 0) return vg_status_set(st, VG_PERMISSION_DENIED, "cannot create %s", dir);
    for (int i = 0; i < nfiles; i++) {
        if (!files[i] || !*base_name(files[i]))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "assets.extra file %d is NULL or a directory name", i);
        snprintf(dst, sizeof dst, "%s/%s", dir, base_name(files[i]));
        vg_code c = copy_file(files[i], dst, st);
        if (c) return c;
    }
    vg_status_clear(st);
    return VG_OK;
}

vg_code vg_saved_model_save(vg_graph *g, vg_session *sess, vg_saver *saver, const char *export_dir,
                            const char *const *tags, int ntags, const vg_signature_def *sigs, int nsigs,
                            vg_op *main_op, vg_status *st) {
    if (!g || !sess || !export_dir || ntags < 0 || nsigs < 0 || (ntags && !tags) || (nsigs && !sigs))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_saved_model_save: NULL argument");
    struct stat sb;
    if (stat(export_dir, &sb) == 0)
        return vg_status_set(st, VG_ALREADY_EXISTS, "Export directory already exists, and isn't empty. Please choose a "
                                                    "different export directory, or delete all the contents of the "
                                                    "specified directory: %s",
                             export_dir);
    char path[4096];
    int w = snprintf(path, sizeof path, "%s/variables", export_dir);
    if (w < 0 || (size_t)w >= sizeof path - 64) return vg_status_set(st, VG_INVALID_ARGUMENT, "export_dir too long");
    if (mkdir(export_dir, 0755) != 0 || mkdir(path, 0755) != 0)
        return vg_status_set(st, VG_PERMISSION_DENIED, "cannot create %s", path);
    /* main_op goes into the collection (a collection change, no new op) */
    int nmo = 0;
    vg_graph_collection(g, "saved_model_main_op", &nmo);
    if (main_op && nmo == 0 && vg_graph_add_to_collection(g, "saved_model_main_op", vg_out(main_op, 0)) != VG_OK)
        return vg_graph_status(g, st);
    vg_saver_def sd = {0};
    char fn[1100], sv[1100];
    vg_code c = VG_OK;
    if (saver) {
        snprintf(path, sizeof path, "%s/variables/variables", export_dir);
        c = vg_saver_save(saver, sess, path, -1, NULL, 0, st);
        vg_output f = vg_saver_filename_tensor(saver), s = vg_saver_save_tensor(saver);
        snprintf(fn, sizeof fn, "%s:%d", vg_op_name(f.op), f.index);
        snprintf(sv, sizeof sv, "%s:%d", vg_op_name(s.op), s.index);
        sd = (vg_saver_def){fn, sv, vg_op_name(vg_saver_restore_op(saver)), 5, false, 10000.0f};
    }
    void *meta = NULL;
    size_t mlen = 0;
    if (!c) c = vg_graph_to_meta_graph(g, saver ? &sd : NULL, &meta, &mlen, st);
    wbuf mg = {0}, info = {0}, model = {0};
    if (!c) {
        /* the MetaGraphDef's fields in order, meta_info_def with the tags, signature_def
         * entries after the collection_defs (field 4) */
        const uint8_t *p = meta, *end = (const uint8_t *)meta + mlen, *start;
        int num;
        bool sigs_done = false;
        while (!c && p < end) {
            if (!r_field(&p, end, &num, &start)) {
                c = vg_status_set(st, VG_INTERNAL, "cannot re-read the exported MetaGraphDef");
                break;
            }
            if (num > 4 && !sigs_done) {
                c = write_signatures(&mg, g, sigs, nsigs, st);
                if (!c) c = write_assets(&mg, g, export_dir, st);
                sigs_done = true;
            }
            if (num == 1) { /* MetaInfoDef: its fields, then the tags (field 4) */
                const uint8_t *q = start;
                uint64_t skip = 0;
                int sh = 0;
                while (*q++ & 0x80) { }
                do {
                    skip |= (uint64_t)(*q & 0x7f) << sh;
                    sh += 7;
                } while (*q++ & 0x80);
                w_raw(&info, q, (size_t)skip);
                for (int i = 0; i < ntags; i++) w_str(&info, 4, tags[i]);
                w_sub(&mg, 1, &info);
            } else {
                w_raw(&mg, start, (size_t)(p - start));
            }
        }
        if (!c && !sigs_done) c = write_signatures(&mg, g, sigs, nsigs, st);
        if (!c && !sigs_done) c = write_assets(&mg, g, export_dir, st);
    }
    if (!c) {
        w_varint(&model, 1 << 3); /* saved_model_schema_version */
        w_varint(&model, 1);
        w_sub(&model, 2, &mg);
        if (model.oom || mg.oom) c = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory writing saved_model.pb");
    }
    if (!c) {
        snprintf(path, sizeof path, "%s/saved_model.pb", export_dir);
        c = write_file(path, model.p, model.n, st);
    }
    vg_free(meta);
    vg_free(mg.p);
    vg_free(info.p);
    vg_free(model.p);
    if (!c) vg_status_clear(st);
    return c;
}
