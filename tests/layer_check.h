/* layer_check.h - the layer rule of docs/architecture.md, as a function of a source tree.
 *
 * lc_check(root, objdir, out, &result) checks the tree under `root` (root/src/<folder>/...,
 * root/include/vigil/<name>.h) against the objects compiled from it (objdir/src/<folder>/<file>.o,
 * the layout of CMake's object library vigil_objects) and writes one line per violation
 * to `out`. test_layers runs it on vigil's tree and on small fake trees that break the
 * rule on purpose.
 *
 * Layers, bottom to top (src/<folder>/, subfolders belong to their top folder):
 *   core (and dist) < io < graph < exec < kernels (and data) < autodiff < train < monitored
 * A folder of src/ that is not in lc_folders below is itself a violation, named in the
 * report: a new folder gets its rank here (and in docs/architecture.md) before it builds.
 *
 * 1. #include "..." lines (the rule as written). A file may include the internal headers
 *    of its own layer and of the layers below it. src/train and src/monitored, built on the
 *    public API, include only public headers (vigil/<name>.h), their own layer's headers
 *    and core/visibility.h (a macro); src/train in addition io/io.h (the io layer's
 *    file-format interface).
 *    A public header's layer is derived, not listed: it is the LOWEST layer among the
 *    objects that define the functions it declares (or calls from an inline body). The
 *    lowest, not the highest: a public header gathers one area of the API, and its
 *    functions may live in several layers (vigil/session.h: exec's vg_session_* and
 *    train's vg_run_metadata_serialize); lower layers include it for its types and its
 *    low functions, and part 2 rejects any call of a higher one, so the two parts
 *    together are exact. A header that declares no function the objects define is, if it
 *    includes public headers (an umbrella: vigil/vigil.h), as high as the highest of
 *    them, and otherwise (types and macros) core's. Adding a header, or moving a
 *    function's definition, needs no table row here.
 * 2. Symbols of the objects (the rule as linked): no object may use a symbol defined by
 *    an object of a higher layer, except the registry's one entry point
 *    vg__op_families_register (the op-family list, as Lua's linit.c, called by graph).
 *    src/train and src/monitored may call only their own layer's internal (vg__)
 *    functions, and src/train in addition io's.
 *    The objects, not the archive libvigil_internal.a: an archive's member names drop the
 *    folder, and two sources may share a file name (src/exec/options_default.c and
 *    src/train/options_default.c).
 * Objects whose source is gone (stale in a build folder after a move) are left out.
 * Part 2, and the public-header part of part 1, need `nm` and objdir; without them
 * result->symbols is false and only the internal includes are checked.
 */
#ifndef VG_LAYER_CHECK_H
#define VG_LAYER_CHECK_H
#include <ctype.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const lc_layer_names[] = {"core", "io", "graph", "exec", "kernels", "autodiff", "train", "monitored"};
enum { LC_NLAYERS = 8, LC_IO = 1, LC_GRAPH = 2, LC_TRAIN = 6 };

/* Every folder of src/ and its layer (an index into lc_layer_names). */
static const struct { const char *folder; int layer; } lc_folders[] = {
    {"core", 0},    {"dist", 0},     /* MPI communication thread (issue 15): uses only core */
    {"io", 1},      {"graph", 2},    {"exec", 3},     {"kernels", 4},
    {"data", 4},                     /* tf.data (issue 32): beside the op families */
    {"autodiff", 5}, {"train", 6},   {"monitored", 7},
};

typedef struct lc_result {
    int files, includes;  /* part 1: files of src/ read, #include "..." lines */
    int headers;          /* public headers whose layer was derived */
    int uses, defs;       /* part 2: undefined and defined symbols of the objects */
    bool symbols;         /* objdir and nm were there: part 2 ran */
    int violations;
} lc_result;

/* The layer of a folder name (n chars), -1 if it has none. */
static int lc_folder_layer(const char *name, size_t n) {
    for (size_t i = 0; i < sizeof lc_folders / sizeof lc_folders[0]; i++)
        if (strlen(lc_folders[i].folder) == n && strncmp(lc_folders[i].folder, name, n) == 0) return lc_folders[i].layer;
    return -1;
}

/* The layer of a path relative to src/ ("kernels/nn/nn_ops.c"), -1 if none. */
static int lc_path_layer(const char *rel) {
    const char *slash = strchr(rel, '/');
    return slash ? lc_folder_layer(rel, (size_t)(slash - rel)) : -1;
}

typedef struct lc_sym {
    char *name;
    int layer;
    char *obj; /* the defining object, for the report */
} lc_sym;

typedef struct lc_header {
    char name[128];  /* "vigil/session.h" */
    int layer;       /* derived; 0 when it declares nothing defined */
    char why[256];   /* what gave it that layer */
    char incs[32][64]; /* the public headers it includes ("vigil/graph.h") */
    int nincs;
} lc_header;

typedef struct lc_ctx {
    const char *root;
    FILE *out;
    lc_result *r;
    lc_sym *defs, *uses;
    int ndefs, nuses, cdefs, cuses;
    lc_header *hdrs;
    int nhdrs;
} lc_ctx;

static int lc_sym_cmp(const void *a, const void *b) {
    return strcmp(((const lc_sym *)a)->name, ((const lc_sym *)b)->name);
}

__attribute__((format(printf, 2, 3))) static void lc_violation(lc_ctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(c->out, fmt, ap);
    va_end(ap);
    fputc('\n', c->out);
    c->r->violations++;
}

static char *lc_read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) buf[n] = 0;
    return buf;
}

/* ---- the folders of src/ ---------------------------------------------------------- */

static void lc_check_folders(lc_ctx *c) {
    char path[4096];
    snprintf(path, sizeof path, "%s/src", c->root);
    DIR *d = opendir(path);
    if (!d) {
        lc_violation(c, "%s: no src/ folder", c->root);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char full[4400];
        snprintf(full, sizeof full, "%s/%s", path, e->d_name);
        struct stat sb;
        if (stat(full, &sb) != 0) continue;
        if (!S_ISDIR(sb.st_mode))
            lc_violation(c, "src/%s: a file outside the layers' folders", e->d_name);
        else if (lc_folder_layer(e->d_name, strlen(e->d_name)) < 0)
            lc_violation(c, "src/%s/: a folder with no layer (give it one in lc_folders, tests/layer_check.h, "
                            "and in docs/architecture.md)", e->d_name);
    }
    closedir(d);
}

/* ---- symbols of the objects --------------------------------------------------------- */

static void lc_push(lc_sym **arr, int *n, int *cap, const char *name, int layer, const char *obj) {
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 1024;
        *arr = realloc(*arr, sizeof(lc_sym) * (size_t)*cap);
        if (!*arr) abort();
    }
    (*arr)[*n].name = strdup(name);
    (*arr)[*n].obj = strdup(obj);
    (*arr)[*n].layer = layer;
    (*n)++;
}

/* Reads `nm -A -P` of every object under objdir/src; false if there are none or nm fails. */
static bool lc_load_symbols(lc_ctx *c, const char *objdir) {
    char probe[4200];
    struct stat sb;
    snprintf(probe, sizeof probe, "%s/src", objdir ? objdir : "");
    if (!objdir || strchr(objdir, '\'') || stat(probe, &sb) != 0 || !S_ISDIR(sb.st_mode)) return false;
    char cmd[4600];
    snprintf(cmd, sizeof cmd, "cd '%s' && find src -name '*.o' | LC_ALL=C sort | xargs nm -A -P 2>/dev/null", objdir);
    FILE *p = popen(cmd, "r");
    if (!p) return false;
    char line[2048], last_obj[2048] = "";
    bool last_live = false;
    while (fgets(line, sizeof line, p)) {
        /* "src/core/tensor.c.o: vg_tensor_new T 0000000000000000 0000000000000040" */
        char *colon = strstr(line, ": ");
        if (!colon) continue;
        *colon = 0;
        const char *obj = line;
        char name[1024], type = 0;
        if (sscanf(colon + 2, "%1023s %c", name, &type) != 2) continue;
        bool def = strchr("TDRBVWC", type) != NULL;
        if (!def && type != 'U') continue;
        int layer = lc_path_layer(obj + 4); /* after "src/" */
        if (layer < 0) continue;             /* a folder with no layer: reported above */
        if (strcmp(obj, last_obj) != 0) {    /* an object whose source is gone is stale */
            char src[4400];
            struct stat ss;
            snprintf(last_obj, sizeof last_obj, "%s", obj);
            snprintf(src, sizeof src, "%s/%.*s", c->root, (int)(strlen(obj) - 2), obj);
            last_live = strlen(obj) > 2 && stat(src, &ss) == 0;
        }
        if (!last_live) continue;
        if (def) lc_push(&c->defs, &c->ndefs, &c->cdefs, name, layer, obj);
        else lc_push(&c->uses, &c->nuses, &c->cuses, name, layer, obj);
    }
    int rc = pclose(p);
    if (rc != 0 || c->ndefs == 0) return false;
    qsort(c->defs, (size_t)c->ndefs, sizeof *c->defs, lc_sym_cmp);
    c->r->defs = c->ndefs;
    c->r->uses = c->nuses;
    return true;
}

static const lc_sym *lc_find_def(const lc_ctx *c, const char *name) {
    lc_sym key = {(char *)name, 0, NULL};
    return bsearch(&key, c->defs, (size_t)c->ndefs, sizeof *c->defs, lc_sym_cmp);
}

static void lc_check_symbols(lc_ctx *c) {
    for (int i = 0; i < c->nuses; i++) {
        const lc_sym *u = &c->uses[i];
        const lc_sym *d = lc_find_def(c, u->name);
        if (!d) continue;
        int from = u->layer;
        if (from >= LC_TRAIN && strncmp(u->name, "vg__", 4) == 0 && d->layer != from &&
            !(from == LC_TRAIN && d->layer == LC_IO)) {
            lc_violation(c, "%s uses %s, internal to %s (%s), in a public-API-only layer", u->obj, u->name,
                         lc_layer_names[d->layer], d->obj);
            continue;
        }
        if (d->layer <= from) continue;
        if (strcmp(u->name, "vg__op_families_register") == 0 && from == LC_GRAPH) continue;
        lc_violation(c, "%s uses %s, defined in %s (%s), a higher layer", u->obj, u->name, lc_layer_names[d->layer],
                     d->obj);
    }
}

/* ---- public headers: their layer, derived ------------------------------------------ */

/* Blanks comments and string/char literals (examples in comments call everything). */
static void lc_strip(char *s) {
    for (char *p = s; *p; p++) {
        if (p[0] == '/' && p[1] == '*') {
            char *e = strstr(p + 2, "*/");
            char *stop = e ? e + 2 : p + strlen(p);
            for (; p < stop; p++)
                if (*p != '\n') *p = ' ';
            p--;
        } else if (p[0] == '/' && p[1] == '/') {
            for (; *p && *p != '\n'; p++) *p = ' ';
            if (!*p) break;
        } else if (*p == '"' || *p == '\'') {
            char q = *p;
            /* keep #include "x.h": the quotes of an include line stay */
            const char *ls = p;
            while (ls > s && ls[-1] != '\n') ls--;
            while (*ls == ' ' || *ls == '\t') ls++;
            if (*ls == '#') {
                char *e = strchr(p + 1, q);
                if (!e) break;
                p = e;
                continue;
            }
            for (p++; *p && *p != q && *p != '\n'; p++) {
                if (*p == '\\' && p[1]) *p++ = ' ';
                *p = ' ';
            }
            if (!*p) break;
        }
    }
}

static void lc_derive_header(lc_ctx *c, lc_header *h, char *text) {
    lc_strip(text);
    h->layer = -1;
    for (char *p = text; *p; p++) {
        if (*p == '#') { /* #include "x.h" / "vigil/x.h" of a public header */
            char *q = p + 1;
            while (*q == ' ' || *q == '\t') q++;
            if (strncmp(q, "include", 7) == 0) {
                q += 7;
                while (*q == ' ' || *q == '\t') q++;
                char *e = (*q == '"' || *q == '<') ? strpbrk(q + 1, "\">") : NULL;
                if (e && h->nincs < 32) {
                    char inc[64];
                    snprintf(inc, sizeof inc, "%.*s", (int)(e - q - 1), q + 1);
                    if (strncmp(inc, "vigil/", 6) == 0) snprintf(h->incs[h->nincs++], 64, "%s", inc);
                    else if (!strchr(inc, '/') && strstr(inc, ".h")) snprintf(h->incs[h->nincs++], 64, "vigil/%.50s", inc);
                }
            }
            continue;
        }
        if (!(p[0] == 'v' && p[1] == 'g' && p[2] == '_') || (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_')))
            continue;
        char *e = p;
        while (isalnum((unsigned char)*e) || *e == '_') e++;
        char *q = e;
        while (*q == ' ' || *q == '\t' || *q == '\n') q++;
        if (*q == '(') {
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(e - p), p);
            const lc_sym *d = lc_find_def(c, name);
            if (d && (h->layer < 0 || d->layer < h->layer)) {
                h->layer = d->layer;
                snprintf(h->why, sizeof h->why, "%.120s is defined in %.120s", name, d->obj);
            }
        }
        p = e - 1;
    }
}

static void lc_derive_headers(lc_ctx *c) {
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/include/vigil", c->root);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 3 || n > 100 || strcmp(e->d_name + n - 2, ".h") != 0) continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *text = lc_read_file(path);
        if (!text) continue;
        c->hdrs = realloc(c->hdrs, sizeof *c->hdrs * (size_t)(c->nhdrs + 1));
        if (!c->hdrs) abort();
        lc_header *h = &c->hdrs[c->nhdrs++];
        memset(h, 0, sizeof *h);
        snprintf(h->name, sizeof h->name, "vigil/%s", e->d_name);
        lc_derive_header(c, h, text);
        free(text);
    }
    closedir(d);
    /* a header that declares no defined function: an umbrella (vigil/vigil.h) is as high
     * as the highest public header it includes, one of types and macros only is core's */
    bool *umbrella = calloc((size_t)c->nhdrs + 1, sizeof *umbrella);
    if (!umbrella) abort();
    for (int i = 0; i < c->nhdrs; i++)
        if (c->hdrs[i].layer < 0) {
            umbrella[i] = true;
            c->hdrs[i].layer = 0;
            snprintf(c->hdrs[i].why, sizeof c->hdrs[i].why, "declares no function the objects define");
        }
    for (bool changed = true; changed;) {
        changed = false;
        for (int i = 0; i < c->nhdrs; i++)
            for (int k = 0; umbrella[i] && k < c->hdrs[i].nincs; k++)
                for (int j = 0; j < c->nhdrs; j++)
                    if (strcmp(c->hdrs[j].name, c->hdrs[i].incs[k]) == 0 && c->hdrs[j].layer > c->hdrs[i].layer) {
                        c->hdrs[i].layer = c->hdrs[j].layer;
                        snprintf(c->hdrs[i].why, sizeof c->hdrs[i].why, "it includes %.120s", c->hdrs[j].name);
                        changed = true;
                    }
    }
    free(umbrella);
    c->r->headers = c->nhdrs;
    if (getenv("LC_LIST_HEADERS"))
        for (int i = 0; i < c->nhdrs; i++)
            fprintf(stderr, "%-28s %-9s %s\n", c->hdrs[i].name, lc_layer_names[c->hdrs[i].layer], c->hdrs[i].why);
}

static const lc_header *lc_find_header(const lc_ctx *c, const char *name) {
    for (int i = 0; i < c->nhdrs; i++)
        if (strcmp(c->hdrs[i].name, name) == 0) return &c->hdrs[i];
    return NULL;
}

/* ---- #include lines ---------------------------------------------------------------- */

static void lc_check_include(lc_ctx *c, const char *rel, int lineno, int from, const char *inc) {
    char where[600];
    snprintf(where, sizeof where, "src/%s:%d", rel, lineno);
    if (strncmp(inc, "vigil/", 6) == 0) {
        const lc_header *h = lc_find_header(c, inc);
        if (h && h->layer > from) {
            char why[400];
            snprintf(why, sizeof why, "%s (%s)", lc_layer_names[h->layer], h->why);
            lc_violation(c, "%s: #include \"%s\": a public header of a higher layer, %s; %s uses its own and lower layers",
                         where, inc, why, lc_layer_names[from]);
        }
        return;
    }
    int to = lc_path_layer(inc);
    if (to < 0) return; /* a header of the file's own folder ("exec.h") */
    if (from >= LC_TRAIN) {
        if (to == from || strcmp(inc, "core/visibility.h") == 0) return;
        if (from == LC_TRAIN && strcmp(inc, "io/io.h") == 0) return;
        lc_violation(c, "%s: #include \"%s\": an internal header in a public-API-only layer (%s)", where, inc,
                     lc_layer_names[from]);
        return;
    }
    if (to > from)
        lc_violation(c, "%s: #include \"%s\": a header of a higher layer (%s); %s uses its own and lower layers", where,
                     inc, lc_layer_names[to], lc_layer_names[from]);
}

static void lc_check_file(lc_ctx *c, const char *rel) {
    char path[4400];
    snprintf(path, sizeof path, "%s/src/%s", c->root, rel);
    FILE *f = fopen(path, "r");
    if (!f) return;
    c->r->files++;
    int from = lc_path_layer(rel);
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
        c->r->includes++;
        if (from >= 0) lc_check_include(c, rel, lineno, from, inc);
    }
    fclose(f);
}

static void lc_walk(lc_ctx *c, const char *rel) {
    char path[4400];
    snprintf(path, sizeof path, "%s/src/%s", c->root, rel);
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char sub[2048];
        snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
        char full[4400];
        snprintf(full, sizeof full, "%s/src/%s", c->root, sub);
        struct stat sb;
        if (stat(full, &sb) != 0) continue;
        if (S_ISDIR(sb.st_mode)) lc_walk(c, sub);
        else {
            size_t n = strlen(sub);
            if (n > 2 && (strcmp(sub + n - 2, ".c") == 0 || strcmp(sub + n - 2, ".h") == 0)) lc_check_file(c, sub);
        }
    }
    closedir(d);
}

/* Checks the tree at root against the objects under objdir (NULL: includes only).
 * Returns the number of violations, each reported as one line on out. */
static int lc_check(const char *root, const char *objdir, FILE *out, lc_result *r) {
    memset(r, 0, sizeof *r);
    lc_ctx c = {0};
    c.root = root;
    c.out = out;
    c.r = r;
    lc_check_folders(&c);
    r->symbols = lc_load_symbols(&c, objdir);
    if (r->symbols) lc_derive_headers(&c);
    lc_walk(&c, "");
    if (r->symbols) lc_check_symbols(&c);
    for (int i = 0; i < c.ndefs; i++) { free(c.defs[i].name); free(c.defs[i].obj); }
    for (int i = 0; i < c.nuses; i++) { free(c.uses[i].name); free(c.uses[i].obj); }
    free(c.defs);
    free(c.uses);
    free(c.hdrs);
    return r->violations;
}

#endif
