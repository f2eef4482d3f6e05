/* test_layers.c - the layer rule of docs/architecture.md stays true.
 *
 * The library's layers, bottom to top:
 *   core < io < graph < exec < kernels < autodiff < train < monitored
 * (src/<layer>/, src/monitored/hooks/ belongs to monitored). A file may include the
 * internal headers of its own layer and of the layers below it; src/train and
 * src/monitored, built on the public API, include only public headers (vigil/<name>.h),
 * their own headers and core/visibility.h (a macro), and src/train in addition the io
 * layer's file-format interface io/io.h. A public header may be included by a layer
 * at or above the lowest layer that implements it (table below).
 *
 * Part 1 reads every #include "..." line under src/ (the rule as written); part 2
 * checks the symbols of the built static library (the rule as linked): no object may
 * use a symbol defined by an object of a higher layer, except the registry's one
 * entry point vg__op_families_register (the op-family list, as Lua's linit.c).
 * Part 2 also holds src/train and src/monitored to the public API: the only internal
 * (vg__) functions they may call are their own layer's, and for src/train io's.
 * Part 2 needs `nm` and the static archive libvigil_internal.a (or a static
 * libvigil.a); it reports SKIP when either is missing.
 */
#include "test_util.h"
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const k_layers[] = {"core", "io", "graph", "exec", "kernels", "autodiff", "train", "monitored"};
enum { NLAYERS = sizeof k_layers / sizeof k_layers[0], L_TRAIN = 6, L_MONITORED = 7 };

/* Public headers: the lowest layer that implements a function they declare. A header
 * not listed is not checked here (part 2 checks the calls). */
static const struct { const char *header, *layer; } k_public[] = {
    {"vigil/status.h", "core"},        {"vigil/tensor.h", "core"},        {"vigil/graph.h", "graph"},
    {"vigil/graphdef.h", "graph"},     {"vigil/import.h", "graph"},       {"vigil/variables.h", "train"},
    {"vigil/session.h", "exec"},       {"vigil/ops.h", "kernels"},        {"vigil/queue_ops.h", "kernels"},
    {"vigil/gradients.h", "autodiff"}, {"vigil/optimizer.h", "train"},    {"vigil/saver.h", "train"},
    {"vigil/graphdef.h", "graph"},     {"vigil/import.h", "graph"},       {"vigil/variables.h", "graph"},
    {"vigil/session.h", "exec"},       {"vigil/ops.h", "kernels"},        {"vigil/queue.h", "kernels"},
    {"vigil/data.h", "kernels"},       {"vigil/gradients.h", "autodiff"}, {"vigil/optimizer.h", "train"},    {"vigil/saver.h", "train"},
    {"vigil/summary.h", "train"},      {"vigil/coordinator.h", "train"},  {"vigil/layers.h", "train"},
    {"vigil/saved_model.h", "train"},
    {"vigil/monitored.h", "monitored"}, {"vigil/hooks.h", "monitored"},    {"vigil/vigil.h", "monitored"},
    {"vigil/queue.h", "train"},
    {"vigil/version.h", "core"},       {"vigil/events.h", "io"},          {"vigil/idx.h", "io"},
    {"vigil/npy.h", "io"},
    {"vigil/distributed.h", "dist"},
    {"vigil/ops_ext.h", "kernels"},    {"vigil/train_lib.h", "train"},    {"vigil/losses.h", "train"},
    {"vigil/control_flow.h", "kernels"},
    {"vigil/rnn_ops.h", "kernels"},    {"vigil/rnn.h", "train"},
    {"vigil/lookup.h", "kernels"},
    {"vigil/metrics.h", "train"},
    {"vigil/evaluation.h", "monitored"},
    {"vigil/image_ops.h", "kernels"},  {"vigil/image.h", "train"},
    {"vigil/variable_scope.h", "train"}, {"vigil/nn_ext.h", "kernels"}, {"vigil/config.h", "train"}, {"vigil/custom_op.h", "kernels"},
};

static int layer_index(const char *name, size_t n) {
    /* src/dist (MPI communication thread, issue 15) sits on core's level: it uses only
     * core, and every layer above may use it. */
    if (n == 4 && strncmp(name, "dist", 4) == 0) return 0;
    if (n == 4 && strncmp(name, "data", 4) == 0) return 4; /* src/data (tf.data): kernels' level */
    for (int i = 0; i < NLAYERS; i++)
        if (strlen(k_layers[i]) == n && strncmp(k_layers[i], name, n) == 0) return i;
    return -1;
}

/* The layer of a path relative to src/ ("kernels/nn_ops.c"), -1 if none. */
static int layer_of_path(const char *rel) {
    const char *slash = strchr(rel, '/');
    return slash ? layer_index(rel, (size_t)(slash - rel)) : -1;
}

static int public_layer(const char *inc) {
    for (size_t i = 0; i < sizeof k_public / sizeof k_public[0]; i++)
        if (strcmp(k_public[i].header, inc) == 0) return layer_index(k_public[i].layer, strlen(k_public[i].layer));
    return -1;
}

/* Why `inc`, included by a file of layer `from`, breaks the rule; NULL if it does not. */
static const char *violation(int from, const char *inc) {
    if (strncmp(inc, "vigil/", 6) == 0) {
        int to = public_layer(inc);
        return (to > from) ? "public header of a higher layer" : NULL;
    }
    int to = layer_of_path(inc);
    if (to < 0) return NULL; /* a header of the file's own folder ("exec.h") */
    if (from >= L_TRAIN) {
        if (to == from || strcmp(inc, "core/visibility.h") == 0) return NULL;
        if (from == L_TRAIN && strcmp(inc, "io/io.h") == 0) return NULL;
        return "internal header in a public-API-only layer";
    }
    return (to > from) ? "header of a higher layer" : NULL;
}

static int g_files, g_includes;

static void check_file(const char *srcdir, const char *rel) {
    char path[8192 + 16];
    snprintf(path, sizeof path, "%s/%s", srcdir, rel);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (!f) return;
    g_files++;
    int from = layer_of_path(rel);
    CHECK(from >= 0); /* every file of src/ lives in a layer's folder */
    char line[1024];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        const char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (*p != '#') continue;
        p++;
        while (*p == ' ' || *p == '\t') p++;
        if (strncmp(p, "include", 7) != 0) continue;
        p += 7;
        while (*p == ' ' || *p == '\t') p++;
        if (*p != '"') continue; /* <system> headers */
        const char *end = strchr(p + 1, '"');
        if (!end) continue;
        char inc[512];
        snprintf(inc, sizeof inc, "%.*s", (int)(end - p - 1), p + 1);
        g_includes++;
        const char *why = from >= 0 ? violation(from, inc) : NULL;
        if (why) {
            fprintf(stderr, "src/%s:%d: #include \"%s\": %s (%s may use only its own and lower layers)\n", rel,
                    lineno, inc, why, k_layers[from]);
            vg_test_failures++;
        }
    }
    fclose(f);
}

static void walk(const char *srcdir, const char *rel) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", srcdir, rel);
    DIR *d = opendir(path);
    CHECK(d != NULL);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
        char full[8192];
        snprintf(full, sizeof full, "%s/%s", srcdir, sub);
        struct stat sb;
        if (stat(full, &sb) != 0) continue;
        if (S_ISDIR(sb.st_mode)) walk(srcdir, sub);
        else {
            size_t n = strlen(sub);
            if (n > 2 && (strcmp(sub + n - 2, ".c") == 0 || strcmp(sub + n - 2, ".h") == 0)) check_file(srcdir, sub);
        }
    }
    closedir(d);
}

/* The rule itself: the checker must reject what it is meant to reject. */
static void test_rule_table(void) {
    CHECK(violation(0, "graph/registry.h") != NULL);    /* core -> graph */
    CHECK(violation(2, "kernels/kernel.h") != NULL);    /* graph -> kernels */
    CHECK(violation(3, "kernels/kernel.h") != NULL);    /* exec -> kernels */
    CHECK(violation(4, "exec/exec.h") == NULL);         /* kernels -> exec */
    CHECK(violation(6, "graph/graph_impl.h") != NULL);  /* train: public API only */
    CHECK(violation(6, "io/io.h") == NULL);             /* train: the io interface */
    CHECK(violation(7, "io/io.h") != NULL);             /* monitored: public API only */
    CHECK(violation(7, "core/visibility.h") == NULL);
    CHECK(violation(2, "vigil/session.h") != NULL);     /* graph -> exec's API */
    CHECK(violation(4, "vigil/session.h") == NULL);
    CHECK(violation(5, "vigil/gradients.h") == NULL);
    CHECK(violation(4, "vigil/gradients.h") != NULL);   /* kernels -> autodiff */
    CHECK(violation(3, "exec.h") == NULL);              /* own folder */
}

static void test_includes(void) {
    char srcdir[4096];
    snprintf(srcdir, sizeof srcdir, "%s/src", VG_SRCDIR);
    walk(srcdir, "");
    fprintf(stderr, "checked %d #include lines in %d files\n", g_includes, g_files);
    CHECK(g_files > 50);
    CHECK(g_includes > 100);
}

/* Every op table of src/kernels (const vg__op_def vg__ops_<family>[] = ...) is handed to
 * the registry by the one list, src/kernels/op_families.c. */
static void test_op_families_listed(void) {
    char dirpath[4096], list[1 << 16];
    snprintf(dirpath, sizeof dirpath, "%s/src/kernels", VG_SRCDIR);
    char lpath[4200];
    snprintf(lpath, sizeof lpath, "%s/op_families.c", dirpath);
    FILE *lf = fopen(lpath, "r");
    CHECK(lf != NULL);
    if (!lf) return;
    size_t ln = fread(list, 1, sizeof list - 1, lf);
    list[ln] = 0;
    fclose(lf);
    DIR *d = opendir(dirpath);
    CHECK(d != NULL);
    if (!d) return;
    int tables = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 3 || strcmp(e->d_name + n - 2, ".c") != 0 || strcmp(e->d_name, "op_families.c") == 0) continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dirpath, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        char line[1024];
        while (fgets(line, sizeof line, f)) {
            const char *p = strstr(line, "const vg__op_def vg__ops_");
            if (p != line) continue; /* a definition starts its line */
            p += strlen("const vg__op_def ");
            const char *end = strchr(p, '[');
            if (!end) continue;
            char call[256];
            snprintf(call, sizeof call, "vg__registry_add_family(%.*s);", (int)(end - p), p);
            tables++;
            if (!strstr(list, call)) {
                fprintf(stderr, "src/kernels/%s: table %.*s is not listed in src/kernels/op_families.c\n", e->d_name,
                        (int)(end - p), p);
                vg_test_failures++;
            }
        }
        fclose(f);
    }
    closedir(d);
    fprintf(stderr, "checked %d op tables\n", tables);
    CHECK(tables >= 10);
}

/* ---- part 2: symbols of the static library -------------------------------- */

typedef struct sym {
    char *name;
    int layer;
} sym;

static int sym_cmp(const void *a, const void *b) { return strcmp(((const sym *)a)->name, ((const sym *)b)->name); }

/* Object file "tensor.c.o" -> layer, by finding tensor.c under src/. */
static int object_layer(const char *srcdir, const char *obj) {
    if (strlen(srcdir) > 2048) return -1;
    char base[256];
    snprintf(base, sizeof base, "%s", obj);
    char *dot = strstr(base, ".c.o");
    if (!dot) return -1;
    dot[2] = 0; /* "tensor.c" */
    for (int i = 0; i < NLAYERS; i++) {
        char p[4096 + 512];
        struct stat sb;
        snprintf(p, sizeof p, "%s/%s/%s", srcdir, k_layers[i], base);
        if (stat(p, &sb) == 0) return i;
        snprintf(p, sizeof p, "%s/%s/hooks/%s", srcdir, k_layers[i], base);
        if (stat(p, &sb) == 0) return i;
    }
    char p[4096 + 512];
    struct stat sb;
    snprintf(p, sizeof p, "%s/dist/%s", srcdir, base);
    if (stat(p, &sb) == 0) return layer_index("dist", 4);
    snprintf(p, sizeof p, "%s/data/%s", srcdir, base);
    if (stat(p, &sb) == 0) return layer_index("data", 4);
    return -1;
}

static void test_symbols(void) {
    const char *cands[] = {VG_BINDIR "/libvigil_internal.a", VG_BINDIR "/libvigil.a", VG_BINDIR "/lib/libvigil.a", VG_BINDIR "/src/libvigil.a"};
    const char *lib = NULL;
    struct stat sb;
    for (size_t i = 0; i < sizeof cands / sizeof cands[0] && !lib; i++)
        if (stat(cands[i], &sb) == 0) lib = cands[i];
    if (!lib) {
        fprintf(stderr, "SKIP symbol check: no libvigil_internal.a or libvigil.a under %s\n", VG_BINDIR);
        return;
    }
    char srcdir[4096], cmd[8192];
    snprintf(srcdir, sizeof srcdir, "%s/src", VG_SRCDIR);
    snprintf(cmd, sizeof cmd, "nm -A '%s' 2>/dev/null", lib);
    FILE *p = popen(cmd, "r");
    if (!p) {
        fprintf(stderr, "SKIP symbol check: cannot run nm\n");
        return;
    }
    sym *defs = NULL, *uses = NULL;
    int ndefs = 0, nuses = 0, cdefs = 0, cuses = 0;
    char line[2048];
    while (fgets(line, sizeof line, p)) {
        /* "<lib>:<object>:<value> <type> <name>" or "<lib>:<object>:<spaces>U <name>" */
        char *obj = strstr(line, ".a:");
        if (!obj) continue;
        obj += 3;
        char *colon = strchr(obj, ':');
        if (!colon) continue;
        *colon = 0;
        char type = 0, name[1024];
        char *rest = colon + 1;
        int got = (*rest == ' ') ? sscanf(rest, " %c %1023s", &type, name) /* no value: undefined */
                                 : sscanf(rest, "%*s %c %1023s", &type, name);
        if (got != 2) continue;
        bool def = strchr("TDRBVWC", type) != NULL;
        if (!def && type != 'U') continue;
        int layer = object_layer(srcdir, obj);
        if (layer < 0) continue;
        sym **arr = def ? &defs : &uses;
        int *n = def ? &ndefs : &nuses, *cap = def ? &cdefs : &cuses;
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 1024;
            *arr = realloc(*arr, sizeof(sym) * (size_t)*cap);
            if (!*arr) abort();
        }
        (*arr)[*n].name = strdup(name);
        (*arr)[*n].layer = layer;
        (*n)++;
    }
    int rc = pclose(p);
    if (rc != 0 || ndefs == 0) {
        fprintf(stderr, "SKIP symbol check: nm failed or found no symbols\n");
    } else {
        qsort(defs, (size_t)ndefs, sizeof *defs, sym_cmp);
        int upward = 0;
        for (int i = 0; i < nuses; i++) {
            sym *d = bsearch(&uses[i], defs, (size_t)ndefs, sizeof *defs, sym_cmp);
            if (!d) continue;
            /* the public-API-only layers: internal (vg__) functions of their own layer,
             * and for train those of io */
            int from = uses[i].layer;
            if (from >= L_TRAIN && strncmp(uses[i].name, "vg__", 4) == 0 && d->layer != from &&
                !(from == L_TRAIN && d->layer == 1)) {
                fprintf(stderr, "an object of %s uses %s, internal to %s\n", k_layers[from], uses[i].name,
                        k_layers[d->layer]);
                upward++;
                continue;
            }
            if (d->layer <= from) continue;
            if (strcmp(uses[i].name, "vg__op_families_register") == 0 && uses[i].layer == 2) continue;
            fprintf(stderr, "an object of %s uses %s, defined in %s\n", k_layers[uses[i].layer], uses[i].name,
                    k_layers[d->layer]);
            upward++;
        }
        fprintf(stderr, "checked %d symbol uses against %d definitions\n", nuses, ndefs);
        CHECK_EQ_INT(upward, 0);
        CHECK(nuses > 100);
    }
    for (int i = 0; i < ndefs; i++) free(defs[i].name);
    for (int i = 0; i < nuses; i++) free(uses[i].name);
    free(defs);
    free(uses);
}

int main(void) {
    RUN_TEST(test_rule_table);
    RUN_TEST(test_includes);
    RUN_TEST(test_op_families_listed);
    RUN_TEST(test_symbols);
    TEST_MAIN_END();
}
