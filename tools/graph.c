/*
 * graph.c - `vigil graph FILE`: a summary of a TensorFlow graph in the spirit of
 * `saved_model_cli show`: a GraphDef (.pb / .pbtxt), a MetaGraphDef (.meta) or a
 * SavedModel directory. Prints the node count, the op-type histogram, the op types
 * vigil cannot run (exit status 1 when there are any), and for importable
 * MetaGraphDefs / SavedModels their collections and SignatureDefs.
 */
#include "cli.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *graph_help =
    "usage: vigil graph FILE [--tags serve,train]\n"
    "\n"
    "Summarizes a TensorFlow graph: FILE is a GraphDef (.pb, .pbtxt), a MetaGraphDef\n"
    "(.meta) or a SavedModel directory (saved_model.pb; --tags picks the MetaGraphDef,\n"
    "default the first). Prints nodes, op types, the op types vigil cannot run (exit\n"
    "status 1 when there are any), collections and signatures.\n";

static bool read_all(const char *path, uint8_t **data, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = malloc(cap);
    for (;;) {
        if (!b) break;
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (n < cap) break;
        uint8_t *nb = realloc(b, cap * 2);
        if (!nb) {
            free(b);
            b = NULL;
            break;
        }
        b = nb;
        cap *= 2;
    }
    bool ok = b && !ferror(f);
    fclose(f);
    if (!ok) {
        free(b);
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

static void print_output(vg_output o) {
    vg_shape s = vg_output_shape(o);
    char buf[128];
    printf("%s:%d (%s %s)", vg_op_name(o.op), o.index, vg_dtype_name(vg_output_dtype(o)), vg_shape_str(&s, buf, sizeof buf));
}

static void print_meta(vg_graph *g, vg_meta_graph *mg) {
    int nc = vg_graph_num_collections(g);
    printf("collections (%d):\n", nc);
    for (int i = 0; i < nc; i++) {
        int n = 0;
        const char *key = vg_graph_collection_name(g, i);
        vg_graph_collection(g, key, &n);
        printf("  %s: %d\n", key, n);
    }
    const vg_saver_def *sd = vg_meta_graph_saver_def(mg);
    if (sd)
        printf("saver: filename %s, save %s, restore %s, max_to_keep %d%s\n", sd->filename_tensor_name,
               sd->save_tensor_name, sd->restore_op_name, sd->max_to_keep, sd->sharded ? ", sharded" : "");
    int ns = vg_meta_graph_num_signatures(mg);
    printf("signatures (%d):\n", ns);
    for (int i = 0; i < ns; i++) {
        printf("  %s (%s)\n", vg_meta_graph_signature_key(mg, i), vg_meta_graph_signature_method(mg, i));
        for (int io = 0; io < 2; io++)
            for (int j = 0; j < vg_meta_graph_signature_num_tensors(mg, i, io); j++) {
                printf("    %s %s: ", io ? "output" : "input", vg_meta_graph_signature_tensor_key(mg, i, io, j));
                print_output(vg_meta_graph_signature_tensor(mg, i, io, j));
                printf("\n");
            }
    }
}

int cli_graph(int argc, char **argv) {
    const char *path = NULL, *tags_arg = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        bool missing = false;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(graph_help, stdout);
            return 0;
        } else if (cli_opt(argc, argv, &i, "--tags", &v, &missing)) {
            if (missing) return cli_usage_error("graph", "--tags needs a comma-separated tag list");
            tags_arg = v;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("graph", "unknown option '%s'", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            return cli_usage_error("graph", "unexpected argument '%s'", argv[i]);
        }
    }
    if (!path) return cli_usage_error("graph", "missing FILE");
    struct stat sb;
    if (stat(path, &sb) != 0) return cli_fail("cannot open %s", path);
    bool saved_model = S_ISDIR(sb.st_mode), meta = ends_with(path, ".meta");
    char file[4096];
    if (saved_model) snprintf(file, sizeof file, "%s/saved_model.pb", path);
    else snprintf(file, sizeof file, "%s", path);
    char *tag_buf = NULL;
    const char *tags[32];
    int ntags = 0;
    if (tags_arg) {
        tag_buf = strdup(tags_arg);
        for (char *t = tag_buf ? strtok(tag_buf, ",") : NULL; t && ntags < 32; t = strtok(NULL, ",")) tags[ntags++] = t;
    }
    uint8_t *data = NULL;
    size_t len = 0;
    if (!read_all(file, &data, &len)) {
        free(tag_buf);
        return cli_fail("cannot read %s", file);
    }
    vg_status st;
    const void *gd = data;
    size_t gd_len = len;
    int rc = 0;
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
    for (int i = 0; i < nt; i++) printf("  %-28s %d\n", types[i], counts[i]);
    if (nm) {
        printf("op types vigil cannot run (%d):\n", nm);
        for (int i = 0; i < nm; i++) printf("  %-28s %d node%s\n", miss[i], mcounts[i], mcounts[i] > 1 ? "s" : "");
        rc = 1;
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
        if (c == VG_OK) print_meta(g, mg);
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
