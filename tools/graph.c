/*
 * graph.c - `vigil graph FILE`: a summary of a TensorFlow graph in the spirit of
 * `saved_model_cli show`: a GraphDef (.pb / .pbtxt), a MetaGraphDef (.meta) or a
 * SavedModel directory. Prints the node count, the op-type histogram, the op types
 * vigil cannot run (exit status 1 when there are any), and for importable
 * MetaGraphDefs / SavedModels their collections, assets (and assets.extra files) and
 * SignatureDefs.
 */
#include "cli.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <math.h>
#include <time.h>
#include <sys/stat.h>

static const char *graph_help =
    "usage: vigil graph FILE [--tags serve,train]\n"
    "\n"
    "Summarizes a TensorFlow graph: FILE is a GraphDef (.pb, .pbtxt), a MetaGraphDef\n"
    "(.meta) or a SavedModel directory (saved_model.pb; --tags picks the MetaGraphDef,\n"
    "default the first). Prints nodes, op types, the op types vigil cannot run (exit\n"
    "status 1 when there are any), the functions of its library (tf.data functions,\n"
    "Defuns), collections and signatures.\n";

/* The whole file in a new malloc'd buffer. Regular files only (vg_read_file): a FIFO
 * or a device is refused with st set, never read or waited on. */
static bool read_all(const char *path, uint8_t **data, size_t *len, vg_status *st) {
    void *p = NULL;
    size_t n = 0;
    if (vg_read_file(path, &p, &n, st) != VG_OK) return false;
    uint8_t *b = malloc(n ? n : 1);
    if (b) memcpy(b, p, n);
    vg_free(p);
    if (!b) {
        vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory reading %s", path);
        return false;
    }
    *data = b;
    *len = n;
    return true;
}

static bool ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

/* Names from the file (nodes, op types, keys) go out escaped (cli_put_escaped). */
static void put(const char *s) {
    if (s) cli_put_escaped(stdout, s, strlen(s));
}

/* put, padded with spaces to w columns */
static void put_pad(const char *s, int w) {
    char *e = cli_escape(s ? s : "", s ? strlen(s) : 0);
    printf("%-*s", w, e ? e : "?");
    free(e);
}

static void print_output(vg_output o) {
    vg_shape s = vg_output_shape(o);
    char buf[128];
    put(vg_op_name(o.op));
    printf(":%d (%s %s)", o.index, vg_dtype_name(vg_output_dtype(o)), vg_shape_str(&s, buf, sizeof buf));
}

static void print_meta(vg_graph *g, vg_meta_graph *mg, const char *export_dir) {
    int nc = vg_graph_num_collections(g);
    printf("collections (%d):\n", nc);
    for (int i = 0; i < nc; i++) {
        int n = 0;
        const char *key = vg_graph_collection_name(g, i);
        vg_graph_collection(g, key, &n);
        printf("  ");
        put(key);
        printf(": %d\n", n);
    }
    const vg_saver_def *sd = vg_meta_graph_saver_def(mg);
    if (sd) {
        printf("saver: filename ");
        put(sd->filename_tensor_name);
        printf(", save ");
        put(sd->save_tensor_name);
        printf(", restore ");
        put(sd->restore_op_name);
        printf(", max_to_keep %d%s\n", sd->max_to_keep, sd->sharded ? ", sharded" : "");
    }
    int na = vg_meta_graph_num_assets(mg);
    if (na) printf("assets (%d):\n", na);
    for (int i = 0; i < na; i++) {
        printf("  ");
        put(vg_meta_graph_asset_filename(mg, i));
        printf(" <- ");
        print_output(vg_meta_graph_asset_tensor(mg, i));
        printf("\n");
    }
    if (export_dir) { /* assets.extra: files for the serving system, not the graph */
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/assets.extra", export_dir);
        DIR *d = opendir(dir);
        struct dirent *e;
        bool first = true;
        while (d && (e = readdir(d)))
            if (e->d_name[0] != '.') {
                if (first) printf("assets.extra:\n");
                first = false;
                printf("  ");
                put(e->d_name);
                printf("\n");
            }
        if (d) closedir(d);
    }
    int ns = vg_meta_graph_num_signatures(mg);
    printf("signatures (%d):\n", ns);
    for (int i = 0; i < ns; i++) {
        printf("  ");
        put(vg_meta_graph_signature_key(mg, i));
        printf(" (");
        put(vg_meta_graph_signature_method(mg, i));
        printf(")\n");
        for (int io = 0; io < 2; io++)
            for (int j = 0; j < vg_meta_graph_signature_num_tensors(mg, i, io); j++) {
                printf("    %s ", io ? "output" : "input");
                put(vg_meta_graph_signature_tensor_key(mg, i, io, j));
                printf(": ");
                print_output(vg_meta_graph_signature_tensor(mg, i, io, j));
                printf("\n");
            }
    }
}

/* ---- the function library (GraphDef.library = 2: FunctionDefLibrary {function = 1:
 * FunctionDef {signature = 1: OpDef {name = 1, input_arg = 2, output_arg = 3},
 * node_def = 3}}), read with a minimal protobuf walker */

typedef struct pbf {
    int field, wire;
    uint64_t v;
    const uint8_t *p;
    size_t n;
} pbf;

static bool pb_varint(const uint8_t **p, const uint8_t *e, uint64_t *v) {
    *v = 0;
    for (int sh = 0; *p < e && sh < 64; sh += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80)) return true;
    }
    return false;
}

/* The next field of [*p, e); false at the end or on malformed bytes. */
static bool pb_field(const uint8_t **p, const uint8_t *e, pbf *f) {
    uint64_t tag;
    if (*p >= e || !pb_varint(p, e, &tag)) return false;
    f->field = (int)(tag >> 3);
    f->wire = (int)(tag & 7);
    switch (f->wire) {
    case 0: return pb_varint(p, e, &f->v);
    case 1: if (e - *p < 8) return false; *p += 8; return true;
    case 5: if (e - *p < 4) return false; *p += 4; return true;
    case 2:
        if (!pb_varint(p, e, &f->v) || f->v > (uint64_t)(e - *p)) return false;
        f->p = *p;
        f->n = (size_t)f->v;
        *p += f->n;
        return true;
    default: return false;
    }
}

/* Prints "functions (N):" and one line per FunctionDef of a binary GraphDef. */
static void print_functions(const uint8_t *gd, size_t len) {
    int nf = 0;
    for (int pass = 0; pass < 2; pass++) {
        const uint8_t *p = gd, *e = gd + len;
        pbf f, ff, sf, gf;
        if (pass && nf) printf("functions (%d):\n", nf);
        while (pb_field(&p, e, &gf)) {
            if (gf.field != 2 || gf.wire != 2) continue;
            const uint8_t *lp = gf.p, *le = gf.p + gf.n;
            while (pb_field(&lp, le, &f)) {
                if (f.field != 1 || f.wire != 2) continue;
                if (!pass) {
                    nf++;
                    continue;
                }
                const uint8_t *fp = f.p, *fe = f.p + f.n;
                char name[256] = "?";
                int nin = 0, nout = 0, nodes = 0;
                while (pb_field(&fp, fe, &ff)) {
                    if (ff.field == 3 && ff.wire == 2) nodes++;
                    if (ff.field != 1 || ff.wire != 2) continue;
                    const uint8_t *sp = ff.p, *se = ff.p + ff.n;
                    while (pb_field(&sp, se, &sf)) {
                        if (sf.wire != 2) continue;
                        if (sf.field == 1) snprintf(name, sizeof name, "%.*s", (int)(sf.n < 255 ? sf.n : 255), (const char *)sf.p);
                        nin += sf.field == 2;
                        nout += sf.field == 3;
                    }
                }
                printf("  ");
                put(name);
                printf(": %d input%s, %d output%s, %d node%s\n", nin, nin == 1 ? "" : "s", nout, nout == 1 ? "" : "s",
                       nodes, nodes == 1 ? "" : "s");
            }
        }
    }
}

int cli_graph(int argc, char **argv) {
    const char *path = NULL, *tags_arg = NULL;
    const cli_optdef opts[] = {{"--tags", "a comma-separated tag list", &tags_arg, NULL}};
    int prc = cli_parse_opts(argc, argv, "graph", graph_help, opts, 1, &path, "FILE");
    if (prc >= 0) return prc;
    struct stat sb;
    if (stat(path, &sb) != 0) return cli_fail("cannot open %s", path);
    bool saved_model = S_ISDIR(sb.st_mode), meta = ends_with(path, ".meta");
    char file[4096];
    if (saved_model) {
        snprintf(file, sizeof file, "%s/saved_model.pb", path);
        if (stat(file, &sb) != 0) snprintf(file, sizeof file, "%s/saved_model.pbtxt", path); /* the loader's fallback */
    } else {
        snprintf(file, sizeof file, "%s", path);
    }
    char *tag_buf = NULL;
    const char *tags[32];
    int ntags = 0;
    if (tags_arg) {
        tag_buf = strdup(tags_arg);
        for (char *t = tag_buf ? strtok(tag_buf, ",") : NULL; t && ntags < 32; t = strtok(NULL, ",")) tags[ntags++] = t;
    }
    uint8_t *data = NULL;
    size_t len = 0;
    vg_status st;
    if (!read_all(file, &data, &len, &st)) {
        free(tag_buf);
        return cli_fail_status(&st);
    }
    int rc = 0;
    if ((saved_model || meta) && ends_with(file, ".pbtxt")) { /* text SavedModel: to binary first */
        void *bin = NULL;
        size_t blen = 0;
        if (vg_proto_text_to_binary(data, len, saved_model ? "SavedModel" : "MetaGraphDef", &bin, &blen, &st) != VG_OK) {
            free(data);
            free(tag_buf);
            return cli_fail_status(&st);
        }
        free(data);
        data = malloc(blen ? blen : 1);
        if (data) memcpy(data, bin, blen);
        len = blen;
        vg_free(bin);
        if (!data) {
            free(tag_buf);
            return cli_fail("out of memory");
        }
    }
    const void *gd = data;
    size_t gd_len = len;
    if ((saved_model || meta) &&
        vg_meta_graph_def_graph_def(data, len, saved_model, tags, ntags, &gd, &gd_len, &st) != VG_OK) {
        rc = cli_fail_status(&st);
        goto done;
    }
    char **types = NULL, **miss = NULL;
    int *counts = NULL, *mcounts = NULL, nt = 0, nm = 0, nodes = 0;
    vg_import_format fmt = saved_model || meta ? VG_IMPORT_BINARY : ends_with(path, ".pbtxt") ? VG_IMPORT_TEXT : VG_IMPORT_AUTO;
    if (vg_graph_def_op_types(gd, gd_len, fmt, &types, &counts, &nt, &st) != VG_OK ||
        vg_graph_def_missing_ops(gd, gd_len, fmt, &miss, &mcounts, &nm, &st) != VG_OK) {
        rc = cli_fail_status(&st);
        goto done;
    }
    for (int i = 0; i < nt; i++) nodes += counts[i];
    printf("file: %s (%s)\n", file, saved_model ? "SavedModel" : meta ? "MetaGraphDef" : "GraphDef");
    printf("nodes: %d\n", nodes);
    printf("op types (%d):\n", nt);
    for (int i = 0; i < nt; i++) {
        printf("  ");
        put_pad(types[i], 28);
        printf(" %d\n", counts[i]);
    }
    if (nm) {
        printf("op types vigil cannot run (%d):\n", nm);
        for (int i = 0; i < nm; i++) {
            printf("  ");
            put_pad(miss[i], 28);
            printf(" %d node%s\n", mcounts[i], mcounts[i] > 1 ? "s" : "");
        }
        rc = 1;
    }
    {
        void *bin = NULL;
        size_t blen = 0;
        vg_status tst;
        if (fmt != VG_IMPORT_BINARY && vg_proto_text_to_binary(gd, gd_len, "GraphDef", &bin, &blen, &tst) == VG_OK)
            print_functions(bin, blen);
        else
            print_functions(gd, gd_len);
        vg_free(bin);
    }
    if (saved_model || meta) {
        /* collections and signatures of the graph as vigil imports it (the saver's own
         * ops left out, as vg_saved_model_load does) */
        vg_graph *g = vg_graph_new();
        vg_meta_graph *mg = NULL;
        vg_meta_import_options o = {0};
        o.omit_saver = true;
        o.source = file;
        vg_code c = saved_model ? vg_import_saved_model_graph(g, file, tags, ntags, &o, &mg, &st)
                                : vg_import_meta_graph(g, data, len, &o, &mg, &st);
        if (c == VG_OK) print_meta(g, mg, saved_model ? path : NULL);
        else printf("not importable: %s: %s\n", vg_code_name(st.code), st.msg);
        vg_meta_graph_free(mg);
        vg_graph_free(g);
    }
    vg_import_free_strings(types, nt);
    vg_import_free_strings(miss, nm);
    vg_free(counts);
    vg_free(mcounts);
done:
    free(data);
    free(tag_buf);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* vigil run: evaluate a SavedModel signature */

static const char *run_help =
    "usage: vigil run DIR [--tags serve] [--signature serving_default] --input KEY=v1,v2,...|KEY=FILE.npy\n"
    "                 [--input_examples KEY='[{\"x\":[1.0]},...]'] [--output KEY] [--outdir DIR [--overwrite]]\n"
    "                 [--timeout SECONDS] [--allow-file-writes]\n"
    "\n"
    "Loads the SavedModel in DIR (variables restored, main op run), feeds each --input\n"
    "(a comma-separated list of numbers, shaped [-1, <known trailing dims>] of the\n"
    "signature input, or a NumPy .npy file, converted to the input's type as a TF feed\n"
    "is; --input_examples feeds serialized tf.train.Examples built from a list of\n"
    "feature dicts, as saved_model_cli does) and prints the outputs (all of the\n"
    "signature's by default). With --outdir each\n"
    "output is also written as DIR/KEY.npy (an existing file only with --overwrite), as\n"
    "saved_model_cli run --outdir does.\n"
    "\n"
    "A model is code: its main op and signatures could write, rename or delete files\n"
    "(SaveV2, MergeV2Checkpoints, ...). vigil run refuses to load a model holding such\n"
    "ops (PERMISSION_DENIED, naming the op); --allow-file-writes loads it anyway (trusted\n"
    "models only). --timeout SECONDS bounds the main op and the signature's run\n"
    "together (DEADLINE_EXCEEDED, exit 1).\n";

/* saved_model_cli's --input_examples: KEY=[{"x":[1.0,2.0],"name":["a"]},{...}] -> a
 * vector of serialized tf.train.Examples, one per dict; a feature whose first value is
 * a quoted string is a bytes_list, one with a '.', 'e' or "nan"/"inf" a float_list,
 * else an int64_list (Python's float / str / int). */
typedef struct exlex {
    const char *p;
    vg_status *st;
} exlex;

static void ex_ws(exlex *l) {
    while (*l->p == ' ' || *l->p == '\t' || *l->p == '\n') l->p++;
}

static bool ex_eat(exlex *l, char c) {
    ex_ws(l);
    if (*l->p != c) return false;
    l->p++;
    return true;
}

/* A quoted string into buf (no escapes). */
static bool ex_str(exlex *l, char *buf, size_t cap) {
    ex_ws(l);
    char q = *l->p;
    if (q != '"' && q != '\'') return false;
    const char *e = strchr(l->p + 1, q);
    if (!e || (size_t)(e - l->p - 1) >= cap) return false;
    memcpy(buf, l->p + 1, (size_t)(e - l->p - 1));
    buf[e - l->p - 1] = 0;
    l->p = e + 1;
    return true;
}

static vg_code ex_feature(exlex *l, vg_example *ex, const char *key) {
    bool list = ex_eat(l, '['), is_str = false, is_float = false;
    char items[64][256];
    int n = 0;
    for (;;) {
        if (list && ex_eat(l, ']')) break;
        if (n == 64) return vg_status_set(l->st, VG_INVALID_ARGUMENT, "feature '%s': more than 64 values", key);
        ex_ws(l);
        if (*l->p == '"' || *l->p == '\'') {
            if (!ex_str(l, items[n], sizeof items[n])) return vg_status_set(l->st, VG_INVALID_ARGUMENT, "feature '%s': bad string", key);
            is_str = true;
        } else {
            size_t k = strcspn(l->p, ",]} \t\n");
            if (k == 0 || k >= sizeof items[n]) return vg_status_set(l->st, VG_INVALID_ARGUMENT, "feature '%s': bad value", key);
            memcpy(items[n], l->p, k);
            items[n][k] = 0;
            if (strpbrk(items[n], ".eEnN")) is_float = true;
            l->p += k;
        }
        n++;
        if (!list) break;
        if (!ex_eat(l, ',')) {
            if (!ex_eat(l, ']')) return vg_status_set(l->st, VG_INVALID_ARGUMENT, "feature '%s': expected ',' or ']'", key);
            break;
        }
    }
    if (is_str) {
        const char *v[64];
        size_t lens[64];
        for (int i = 0; i < n; i++) v[i] = items[i], lens[i] = strlen(items[i]);
        return vg_example_add_bytes(ex, key, v, lens, (size_t)n, l->st);
    }
    if (is_float) {
        float v[64];
        for (int i = 0; i < n; i++) {
            double d;
            if (!cli_parse_double(items[i], &d)) return vg_status_set(l->st, VG_INVALID_ARGUMENT, "'%s' is not a number", items[i]);
            v[i] = (float)d;
        }
        return vg_example_add_float(ex, key, v, (size_t)n, l->st);
    }
    int64_t v[64];
    for (int i = 0; i < n; i++)
        if (!cli_parse_i64(items[i], &v[i])) return vg_status_set(l->st, VG_INVALID_ARGUMENT, "'%s' is not an integer", items[i]);
    return vg_example_add_int64(ex, key, v, (size_t)n, l->st);
}

static vg_tensor *parse_examples(const char *text, vg_status *st) {
    exlex l = {text, st};
    char *bufs[256];
    size_t lens[256];
    int n = 0;
    vg_code c = VG_OK;
    if (!ex_eat(&l, '[')) c = vg_status_set(st, VG_INVALID_ARGUMENT, "--input_examples: expected a list [{...}, ...]");
    while (!c && !ex_eat(&l, ']')) {
        if (n == 256 || !ex_eat(&l, '{')) {
            c = vg_status_set(st, VG_INVALID_ARGUMENT, "--input_examples: expected '{' (at most 256 examples)");
            break;
        }
        vg_example *ex = vg_example_new();
        while (!c && !ex_eat(&l, '}')) {
            char key[256];
            if (!ex_str(&l, key, sizeof key) || !ex_eat(&l, ':'))
                c = vg_status_set(st, VG_INVALID_ARGUMENT, "--input_examples: expected \"feature\": values");
            else c = ex_feature(&l, ex, key);
            if (!c && !ex_eat(&l, ',') && (ex_ws(&l), *l.p != '}'))
                c = vg_status_set(st, VG_INVALID_ARGUMENT, "--input_examples: expected ',' or '}'");
        }
        size_t len = 0;
        const void *b = c ? NULL : vg_example_serialize(ex, &len, st);
        if (!c && !b) c = st->code ? st->code : VG_INTERNAL;
        if (!c) {
            bufs[n] = malloc(len ? len : 1);
            if (bufs[n]) memcpy(bufs[n], b, len);
            lens[n++] = len;
        }
        vg_example_free(ex);
        if (!c) ex_eat(&l, ',');
    }
    vg_tensor *t = NULL;
    if (!c) {
        int64_t d = n;
        t = vg_tensor_new(VG_STRING, &d, 1, st);
        for (int i = 0; t && i < n; i++)
            if (!bufs[i] || vg_tensor_set_string(t, i, bufs[i], lens[i], st)) {
                vg_tensor_free(t);
                t = NULL;
            }
    }
    for (int i = 0; i < n; i++) free(bufs[i]);
    return t;
}

static bool is_npy_arg(const char *v) {
    size_t n = strlen(v);
    return n > 4 && strcmp(v + n - 4, ".npy") == 0;
}

/* A .npy array for signature input t, converted to t's numeric dtype when it differs
 * (NumPy's default float64 arrays fed to float32 inputs, as session.run's feed does). */
static vg_tensor *read_npy_input(const char *path, vg_output t, vg_status *st) {
    vg_tensor *x = vg_npy_read(path, st);
    if (!x) return NULL;
    vg_dtype want = vg_output_dtype(t), have = vg_tensor_dtype(x);
    if (want == have) return x;
    if (want == VG_STRING || have == VG_STRING || vg_dtype_size(want) == 0) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "%s holds %s, the input wants %s", path, vg_dtype_name(have),
                      vg_dtype_name(want));
        vg_tensor_free(x);
        return NULL;
    }
    int64_t dims[VG_MAX_DIMS];
    int nd = vg_tensor_ndims(x);
    for (int d = 0; d < nd; d++) dims[d] = vg_tensor_dim(x, d);
    vg_tensor *y = vg_tensor_new(want, dims, nd, st);
    void *q = y ? vg_tensor_data(y) : NULL;
    for (int64_t i = 0; y && i < vg_tensor_num_elements(x); i++) {
        double d = cli_tensor_elem(x, i, 0); /* float16 arrays convert too */
        switch (want) {
        case VG_FLOAT: ((float *)q)[i] = (float)d; break;
        case VG_DOUBLE: ((double *)q)[i] = d; break;
        case VG_INT32: ((int32_t *)q)[i] = (int32_t)d; break;
        case VG_INT64: ((int64_t *)q)[i] = (int64_t)d; break;
        case VG_UINT8: ((uint8_t *)q)[i] = (uint8_t)d; break;
        case VG_BOOL: ((bool *)q)[i] = d != 0; break;
        default: break;
        }
    }
    vg_tensor_free(x);
    return y;
}

/* A tensor for signature input t from "1,2,3". */
static vg_tensor *parse_input(const char *vals, vg_output t, vg_status *st) {
    int n = 0;
    char **v = cli_split_list(vals, &n);
    vg_dtype dt = vg_output_dtype(t);
    vg_shape s = vg_output_shape(t);
    int64_t dims[VG_MAX_DIMS], tail = 1;
    int nd = 1;
    dims[0] = n;
    if (s.ndims > 1) {
        bool known = true;
        for (int i = 1; i < s.ndims; i++) known = known && s.dims[i] >= 0;
        if (known) {
            for (int i = 1; i < s.ndims; i++) tail *= s.dims[i];
            if (tail > 0 && n % tail == 0) {
                nd = s.ndims;
                dims[0] = n / tail;
                for (int i = 1; i < s.ndims; i++) dims[i] = s.dims[i];
            }
        }
    } else if (s.ndims <= 0 && n == 1) { /* a scalar input, or one value for an unknown shape */
        nd = 0;
    }
    vg_tensor *x = vg_tensor_new(dt, dims, nd, st);
    for (int i = 0; x && i < n; i++) {
        double d;
        if (!cli_parse_double(v[i], &d)) {
            vg_status_set(st, VG_INVALID_ARGUMENT, "'%s' is not a number", v[i]);
            vg_tensor_free(x);
            x = NULL;
            break;
        }
        void *p = vg_tensor_data(x);
        switch (dt) {
        case VG_FLOAT: ((float *)p)[i] = (float)d; break;
        case VG_DOUBLE: ((double *)p)[i] = d; break;
        case VG_INT32: ((int32_t *)p)[i] = (int32_t)d; break;
        case VG_INT64: ((int64_t *)p)[i] = (int64_t)d; break;
        default:
            vg_status_set(st, VG_UNIMPLEMENTED, "inputs of type %s are not supported by vigil run", vg_dtype_name(dt));
            vg_tensor_free(x);
            x = NULL;
        }
    }
    cli_free_list(v, n);
    return x;
}

static void print_tensor(const char *key, const vg_tensor *t) {
    vg_shape s = vg_tensor_shape(t);
    char buf[128];
    cli_put_escaped(stdout, key, strlen(key)); /* signature keys come from the model */
    printf(" %s %s:", vg_dtype_name(vg_tensor_dtype(t)), vg_shape_str(&s, buf, sizeof buf));
    int64_t n = vg_tensor_num_elements(t);
    const void *p = vg_tensor_data(t);
    for (int64_t i = 0; i < n; i++) {
        switch (vg_tensor_dtype(t)) {
        case VG_FLOAT: printf(" %.9g", ((const float *)p)[i]); break;
        case VG_DOUBLE: printf(" %.17g", ((const double *)p)[i]); break;
        case VG_INT32: printf(" %d", ((const int32_t *)p)[i]); break;
        case VG_INT64: printf(" %lld", (long long)((const int64_t *)p)[i]); break;
        case VG_BOOL: printf(" %s", ((const uint8_t *)p)[i] ? "true" : "false"); break;
        case VG_UINT8: printf(" %u", (unsigned)((const uint8_t *)p)[i]); break;
        case VG_STRING: {
            size_t len = 0;
            const char *sv = vg_tensor_string(t, i, &len);
            fputs(" \"", stdout);
            if (sv) cli_put_escaped(stdout, sv, len);
            fputs("\"", stdout);
            break;
        }
        default: printf(" ?"); break;
        }
    }
    printf("\n");
}

/* A load or run failure, with what to do about --timeout and refused file writes. */
static int run_fail(const vg_status *st, double timeout_s, bool allow_writes) {
    int rc = cli_fail_status(st);
    if (st->code == VG_DEADLINE_EXCEEDED && timeout_s > 0)
        fprintf(stderr, "vigil: the model did not finish within --timeout %g s\n", timeout_s);
    else if (st->code == VG_PERMISSION_DENIED && !allow_writes && strstr(st->msg, "refusing to load"))
        fprintf(stderr, "vigil: add --allow-file-writes to run a model you trust that writes files\n");
    return rc;
}

int cli_run(int argc, char **argv) {
    const char *dir = NULL, *tags_arg = "serve", *sig_key = "serving_default";
    const char *in_keys[16], *in_vals[16], *out_keys[16];
    int nin = 0, nout = 0;
    const char *outdir = NULL;
    bool overwrite = false, allow_writes = false;
    double timeout_s = 0;
    bool in_is_ex[16] = {false};
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        bool missing = false;
        if (cli_opt(argc, argv, &i, "--tags", &v, &missing)) {
            if (missing) return cli_usage_error("run", "--tags needs a tag list");
            tags_arg = v;
        } else if (cli_opt(argc, argv, &i, "--signature", &v, &missing)) {
            if (missing) return cli_usage_error("run", "--signature needs a key");
            sig_key = v;
        } else if (cli_opt(argc, argv, &i, "--input", &v, &missing)) {
            const char *eq = v ? strchr(v, '=') : NULL;
            if (missing || !eq || eq == v || nin == 16) return cli_usage_error("run", "--input needs KEY=v1,v2,...");
            static char keys[16][256];
            snprintf(keys[nin], sizeof keys[nin], "%.*s", (int)(eq - v), v);
            in_keys[nin] = keys[nin];
            in_vals[nin++] = eq + 1;
        } else if (cli_opt(argc, argv, &i, "--output", &v, &missing)) {
            if (missing || nout == 16) return cli_usage_error("run", "--output needs a key");
            out_keys[nout++] = v;
        } else if (cli_opt(argc, argv, &i, "--input_examples", &v, &missing)) {
            const char *eq = v ? strchr(v, '=') : NULL;
            if (missing || !eq || eq == v || nin == 16) return cli_usage_error("run", "--input_examples needs KEY=[{...}]");
            static char ekeys[16][256];
            snprintf(ekeys[nin], sizeof ekeys[nin], "%.*s", (int)(eq - v), v);
            in_keys[nin] = ekeys[nin];
            in_is_ex[nin] = true;
            in_vals[nin++] = eq + 1;
        } else if (cli_opt(argc, argv, &i, "--outdir", &v, &missing)) {
            if (missing) return cli_usage_error("run", "--outdir needs a directory");
            outdir = v;
        } else if (!strcmp(argv[i], "--overwrite")) {
            overwrite = true;
        } else if (!strcmp(argv[i], "--allow-file-writes")) {
            allow_writes = true;
        } else if (cli_opt(argc, argv, &i, "--timeout", &v, &missing)) {
            if (missing || !cli_parse_double(v, &timeout_s) || !(timeout_s > 0) || timeout_s > 1e9)
                return cli_usage_error("run", "--timeout needs a number of seconds > 0");
        } else {
            int rc = cli_other_arg("run", run_help, argv[i], &dir);
            if (rc >= 0) return rc;
        }
    }
    if (!dir) return cli_usage_error("run", "missing SavedModel DIR");
    int ntags = 0;
    char **tags = cli_split_list(tags_arg, &ntags);
    vg_status st;
    vg_saved_model *m = NULL;
    int rc = 0;
    vg_tensor *ins[16] = {0}, *outs[16] = {0};
    vg_run_options ro = {0};
    ro.timeout_in_ms = (int64_t)ceil(timeout_s * 1000);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    vg_saved_model_load_options lo = {0};
    lo.refuse_file_writes = !allow_writes;
    lo.main_op_run_options = &ro;
    if (vg_saved_model_load_ex(dir, (const char *const *)tags, ntags, &lo, &m, &st) != VG_OK) {
        rc = run_fail(&st, timeout_s, allow_writes);
        goto done;
    }
    int sig = vg_meta_graph_find_signature(m->meta_graph, sig_key);
    if (sig < 0) {
        rc = cli_fail("no signature '%s' in %s", sig_key, dir);
        goto done;
    }
    if (nout == 0)
        for (int j = 0; j < vg_meta_graph_signature_num_tensors(m->meta_graph, sig, true) && nout < 16; j++)
            out_keys[nout++] = vg_meta_graph_signature_tensor_key(m->meta_graph, sig, true, j);
    for (int i = 0; i < nin; i++) {
        int j = 0, nt = vg_meta_graph_signature_num_tensors(m->meta_graph, sig, false);
        while (j < nt && strcmp(vg_meta_graph_signature_tensor_key(m->meta_graph, sig, false, j), in_keys[i]) != 0) j++;
        if (j == nt) {
            rc = cli_fail("signature '%s' has no input '%s'", sig_key, in_keys[i]);
            goto done;
        }
        vg_output it = vg_meta_graph_signature_tensor(m->meta_graph, sig, false, j);
        if (!(ins[i] = in_is_ex[i]            ? parse_examples(in_vals[i], &st)
                       : is_npy_arg(in_vals[i]) ? read_npy_input(in_vals[i], it, &st)
                                                : parse_input(in_vals[i], it, &st))) {
            rc = cli_fail_status(&st);
            goto done;
        }
    }
    if (ro.timeout_in_ms > 0) { /* what the load left of the timeout */
        struct timespec t1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        int64_t used = (int64_t)(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
        ro.timeout_in_ms = ro.timeout_in_ms - used > 1 ? ro.timeout_in_ms - used : 1;
    }
    if (vg_saved_model_run_ex(m, &ro, sig_key, in_keys, ins, nin, out_keys, outs, nout, &st) != VG_OK) {
        rc = run_fail(&st, timeout_s, allow_writes);
        goto done;
    }
    for (int i = 0; i < nout; i++) print_tensor(out_keys[i], outs[i]);
    for (int i = 0; outdir && i < nout; i++) {
        char path[4096];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s.npy", outdir, out_keys[i]);
        if (strchr(out_keys[i], '/')) {
            rc = cli_fail("output key '%s' is not a file name", out_keys[i]);
            goto done;
        }
        if (!overwrite && stat(path, &sb) == 0) {
            rc = cli_fail("output file %s already exists; add --overwrite", path);
            goto done;
        }
        if (vg_npy_write(path, outs[i], &st) != VG_OK) {
            rc = cli_fail_status(&st);
            goto done;
        }
        printf("%s written to %s\n", out_keys[i], path);
    }
done:
    for (int i = 0; i < 16; i++) {
        vg_tensor_free(ins[i]);
        vg_tensor_free(outs[i]);
    }
    vg_saved_model_free(m);
    cli_free_list(tags, ntags);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* vigil train --meta-graph: keep training an imported graph */

static const char *train_meta_help =
    "usage: vigil train --meta-graph FILE.meta --steps N --checkpoint-dir DIR [--train-op NAME]\n"
    "\n"
    "Imports a MetaGraphDef (TF's import_meta_graph) and trains it under a\n"
    "MonitoredTrainingSession until the global step reaches N (StopAtStepHook last_step),\n"
    "resuming from DIR's latest checkpoint and saving there at the end. The graph's input\n"
    "pipeline must be inside it (queue runners are started); the train op is NAME or the\n"
    "graph's train_op collection.\n";

int cli_train_meta(int argc, char **argv) {
    const char *meta = NULL, *dir = NULL, *op_name = NULL;
    int64_t steps = -1;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        bool missing = false;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(train_meta_help, stdout);
            return 0;
        } else if (cli_opt(argc, argv, &i, "--meta-graph", &v, &missing)) {
            if (missing) return cli_usage_error("train", "--meta-graph needs a file");
            meta = v;
        } else if (cli_opt(argc, argv, &i, "--checkpoint-dir", &v, &missing)) {
            if (missing) return cli_usage_error("train", "--checkpoint-dir needs a directory");
            dir = v;
        } else if (cli_opt(argc, argv, &i, "--train-op", &v, &missing)) {
            if (missing) return cli_usage_error("train", "--train-op needs an op name");
            op_name = v;
        } else if (cli_opt(argc, argv, &i, "--steps", &v, &missing)) {
            if (missing || !cli_parse_i64(v, &steps) || steps < 0)
                return cli_usage_error("train", "--steps needs a non-negative integer");
        } else {
            return cli_usage_error("train", "unexpected argument '%s' (with --meta-graph)", argv[i]);
        }
    }
    if (!meta || !dir || steps < 0) return cli_usage_error("train", "--meta-graph, --steps and --checkpoint-dir are needed");
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_meta_import_options o = {0};
    o.omit_saver = true; /* MTS's Scaffold makes its own saver over the variables */
    if (!g || vg_import_meta_graph_file(g, meta, &o, NULL, &st) != VG_OK) {
        vg_graph_free(g);
        return cli_fail_status(&st);
    }
    vg_op *train = NULL;
    int n = 0;
    const vg_output *tr = vg_graph_collection(g, VG_TRAIN_OP, &n);
    if (op_name) train = vg_graph_op_by_name(g, op_name);
    else if (n > 0) train = tr[0].op;
    if (!train) {
        vg_graph_free(g);
        return cli_fail("%s: no train op %s%s%s", meta, op_name ? "'" : "(train_op collection empty; pass --train-op)",
                        op_name ? op_name : "", op_name ? "'" : "");
    }
    if (!vg_get_global_step(g).op) {
        vg_graph_free(g);
        return cli_fail("%s: the graph has no global step", meta);
    }
    vg_hook stop;
    if (vg_stop_at_step_hook(-1, steps, &stop, &st) != VG_OK) {
        vg_graph_free(g);
        return cli_fail_status(&st);
    }
    vg_mts_options mo = {0};
    mo.checkpoint_dir = dir;
    mo.hooks = &stop;
    mo.nhooks = 1;
    vg_monitored_session *ms = vg_monitored_training_session_new(g, &mo, &st);
    if (!ms) {
        vg_graph_free(g);
        return cli_fail_status(&st);
    }
    vg_output gs = vg_get_global_step(g);
    vg_run_args args = {&gs, 1, NULL, NULL, 0, &train, 1, NULL};
    vg_code rc = VG_OK;
    int64_t last = -1;
    while (rc == VG_OK && !vg_monitored_session_should_stop(ms)) {
        vg_tensor *out = NULL;
        rc = vg_monitored_session_run(ms, &args, &out, NULL, &st);
        if (out) last = *(const int64_t *)vg_tensor_data(out);
        vg_tensor_free(out);
    }
    rc = vg_monitored_session_end(ms, rc, &st);
    vg_monitored_session_free(ms);
    vg_graph_free(g);
    if (rc != VG_OK) return cli_fail_status(&st);
    printf("global_step %lld\n", (long long)(last + 1));
    return 0;
}
