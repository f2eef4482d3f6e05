/* test_layers.c - the layer rule of docs/architecture.md stays true.
 *
 * The rule and its checker are in layer_check.h: #include lines (part 1) and the symbols
 * of the compiled objects (part 2), each public header's layer derived from where its
 * functions are defined, every folder of src/ ranked. This test runs the checker on
 * vigil's own tree, and on small fake trees (written and compiled into a temporary
 * directory) that break each part of the rule on purpose, so that a checker that
 * stopped seeing violations fails here. It also checks that every op table of
 * src/kernels and src/data is on the op-family list.
 */
#include "layer_check.h"
#include "test_util.h"
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The objects of CMake's object library vigil_objects (objdir/src/<folder>/<file>.c.o). */
#define VG_OBJDIR VG_BINDIR "/CMakeFiles/vigil_objects.dir"

static void test_tree(void) {
    lc_result r;
    int v = lc_check(VG_SRCDIR, VG_OBJDIR, stderr, &r);
    fprintf(stderr, "checked %d #include lines in %d files, %d public headers, %d symbol uses against %d definitions\n",
            r.includes, r.files, r.headers, r.uses, r.defs);
    CHECK_EQ_INT(v, 0);
    CHECK(r.files > 50);
    CHECK(r.includes > 100);
    if (!r.symbols) {
        fprintf(stderr, "SKIP symbol check and public headers: no objects under %s or no nm\n", VG_OBJDIR);
        return;
    }
    CHECK(r.headers > 30);
    CHECK(r.uses > 100);
}

/* ---- fake trees ------------------------------------------------------------------- */

static bool write_file(const char *root, const char *rel, const char *text) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *s = strchr(path + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = 0;
        mkdir(path, 0700);
        *s = '/';
    }
    FILE *f = fopen(path, "w");
    if (!f) return false;
    fputs(text, f);
    return fclose(f) == 0;
}

/* Compiles root/src/<rel>.c into root/obj/src/<rel>.c.o, as CMake lays out its objects. */
static bool compile(const char *root, const char *rel) {
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/obj/src/%s' && rmdir '%s/obj/src/%s' && '%s' -std=c11 -c -I'%s/include' -I'%s/src' "
             "'%s/src/%s' -o '%s/obj/src/%s.o' 2>&1",
             root, rel, root, rel, VG_C_COMPILER, root, root, root, rel, root, rel);
    return system(cmd) == 0;
}

/* A small tree that keeps the rule: public headers of core and kernels, an internal
 * header of exec, users at and above each. */
static const char *const k_clean[][2] = {
    {"include/vigil/c.h", "/* vg_k() in a comment does not count */\nint vg_c(void);\n"},
    {"include/vigil/k.h", "#include \"c.h\"\nint vg_k(void);\n"},
    {"include/vigil/types.h", "typedef struct vg_thing vg_thing;\n"},
    {"src/core/c.c", "#include \"vigil/c.h\"\n#include \"vigil/types.h\"\nint vg_c(void) { return 1; }\n"},
    {"src/exec/e.h", "int vg__e(void);\n"},
    {"src/exec/e.c", "#include \"exec/e.h\"\n#include \"vigil/c.h\"\nint vg__e(void) { return vg_c(); }\n"},
    {"src/kernels/k.c", "#include \"vigil/k.h\"\n#include \"exec/e.h\"\nint vg_k(void) { return vg__e(); }\n"},
    {"src/train/t.c", "#include \"vigil/k.h\"\nint vg_t(void) { return vg_k(); }\n"},
};

static bool make_tree(const char *root) {
    for (size_t i = 0; i < sizeof k_clean / sizeof k_clean[0]; i++)
        if (!write_file(root, k_clean[i][0], k_clean[i][1])) return false;
    return compile(root, "core/c.c") && compile(root, "exec/e.c") && compile(root, "kernels/k.c") &&
           compile(root, "train/t.c");
}

/* Runs the checker on root; the report goes to *report (caller frees). */
static int check_tree(const char *root, char **report, lc_result *r) {
    char objdir[4096];
    snprintf(objdir, sizeof objdir, "%s/obj", root);
    FILE *out = tmpfile();
    if (!out) return -1;
    int v = lc_check(root, objdir, out, r);
    long n = ftell(out);
    rewind(out);
    *report = calloc(1, (size_t)n + 1);
    if (*report && fread(*report, 1, (size_t)n, out) != (size_t)n) (*report)[0] = 0;
    fclose(out);
    fprintf(stderr, "--- report on %s (%d violations):\n%s---\n", root, v, *report ? *report : "");
    return v;
}

/* A fresh directory (root, len bytes) holding the clean tree: false (and nothing left
 * behind) when no directory could be made (a failed check) or the tree cannot be
 * compiled here (a skip). */
static bool fake_tree_root(char *root, size_t len) {
    tu_mkdtemp(root, len, "layers");
    CHECK(root[0] != 0);
    if (!root[0]) return false;
    if (!make_tree(root)) {
        fprintf(stderr, "SKIP fake trees: cannot compile with %s\n", VG_C_COMPILER);
        tu_rmrf(root);
        return false;
    }
    return true;
}

static void test_fake_clean(void) {
    char root[256];
    if (!fake_tree_root(root, sizeof root)) return;
    char *rep = NULL;
    lc_result r;
    CHECK_EQ_INT(check_tree(root, &rep, &r), 0);
    CHECK(r.symbols);
    CHECK_EQ_INT(r.headers, 3);
    CHECK_EQ_INT(r.files, 5);
    free(rep);
    tu_rmrf(root);
}

static void test_fake_violations(void) {
    char root[256];
    if (!fake_tree_root(root, sizeof root)) return;
    /* core includes a public header whose function kernels defines, and calls it;
     * graph includes an internal header of exec; monitored one of exec too; an unranked
     * folder; a header that only includes a kernels header is kernels' too. */
    CHECK(write_file(root, "src/core/bad.c", "#include \"vigil/k.h\"\nint vg__bad(void) { return vg_k(); }\n"));
    CHECK(compile(root, "core/bad.c"));
    CHECK(write_file(root, "include/vigil/all.h", "#include \"k.h\"\n"));
    CHECK(write_file(root, "src/io/all.c", "#include \"vigil/all.h\"\n"));
    CHECK(write_file(root, "src/graph/g.c", "\n#include \"exec/e.h\"\n"));
    CHECK(write_file(root, "src/monitored/hooks/m.c", "#include \"exec/e.h\"\n"));
    CHECK(write_file(root, "src/train/t2.c", "int vg__e(void);\nint vg_t2(void) { return vg__e(); }\n"));
    CHECK(compile(root, "train/t2.c"));
    CHECK(write_file(root, "src/widgets/w.c", "#include \"kernels/k.h\"\n"));
    char *rep = NULL;
    lc_result r;
    int v = check_tree(root, &rep, &r);
    if (!rep) return;
    CHECK_STR_CONTAINS(rep, "src/core/bad.c:1: #include \"vigil/k.h\": a public header of a higher layer, kernels "
                            "(vg_k is defined in src/kernels/k.c.o)");
    CHECK_STR_CONTAINS(rep, "src/core/bad.c.o uses vg_k, defined in kernels (src/kernels/k.c.o), a higher layer");
    CHECK_STR_CONTAINS(rep, "src/io/all.c:1: #include \"vigil/all.h\": a public header of a higher layer, kernels "
                            "(it includes vigil/k.h)");
    CHECK_STR_CONTAINS(rep, "src/graph/g.c:2: #include \"exec/e.h\": a header of a higher layer (exec)");
    CHECK_STR_CONTAINS(rep, "src/monitored/hooks/m.c:1: #include \"exec/e.h\": an internal header in a "
                            "public-API-only layer (monitored)");
    CHECK_STR_CONTAINS(rep, "src/train/t2.c.o uses vg__e, internal to exec (src/exec/e.c.o), in a public-API-only layer");
    CHECK_STR_CONTAINS(rep, "src/widgets/: a folder with no layer");
    CHECK_EQ_INT(v, 7);
    free(rep);
    tu_rmrf(root);
}

/* Every op table (const vg__op_def vg__ops_<family>[] = ...) of the folders that define
 * ops (src/kernels and its subfolders, src/data) is handed to the registry by the one
 * list, src/kernels/op_families.c. Returns the number of tables seen under folder `sub`
 * (relative to src/). */
static int check_tables_listed(const char *sub, const char *list) {
    char dirpath[4096];
    snprintf(dirpath, sizeof dirpath, "%s/src/%s", VG_SRCDIR, sub);
    DIR *d = opendir(dirpath);
    CHECK(d != NULL);
    if (!d) return 0;
    int tables = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dirpath, e->d_name);
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            char subdir[4400];
            snprintf(subdir, sizeof subdir, "%s/%s", sub, e->d_name);
            tables += check_tables_listed(subdir, list);
            continue;
        }
        size_t n = strlen(e->d_name);
        if (n < 3 || strcmp(e->d_name + n - 2, ".c") != 0 || strcmp(e->d_name, "op_families.c") == 0) continue;
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
                fprintf(stderr, "src/%s/%s: table %.*s is not listed in src/kernels/op_families.c\n", sub, e->d_name,
                        (int)(end - p), p);
                vg_test_failures++;
            }
        }
        fclose(f);
    }
    closedir(d);
    return tables;
}

static void test_op_families_listed(void) {
    static char list[1 << 16];
    char lpath[4200];
    snprintf(lpath, sizeof lpath, "%s/src/kernels/op_families.c", VG_SRCDIR);
    FILE *lf = fopen(lpath, "r");
    CHECK(lf != NULL);
    if (!lf) return;
    size_t ln = fread(list, 1, sizeof list - 1, lf);
    list[ln] = 0;
    fclose(lf);
    int k = check_tables_listed("kernels", list), dt = check_tables_listed("data", list);
    fprintf(stderr, "checked %d op tables in src/kernels, %d in src/data\n", k, dt);
    CHECK(k >= 50); /* most live in subfolders: a checker that did not descend would see few */
    CHECK(dt >= 1);
}

int main(void) {
    RUN_TEST(test_fake_clean);
    RUN_TEST(test_fake_violations);
    RUN_TEST(test_tree);
    RUN_TEST(test_op_families_listed);
    TEST_MAIN_END();
}
