/* test_header_examples.c - every code example in the public headers' comments, and the
 * README's C block, compiles against include/vigil (C11, -Wall -Werror, calls to
 * undeclared functions are errors).
 *
 * An example is a run of comment lines indented by four spaces after the " * " (so
 * " *     code"; the run's first line exactly four, later ones four or more) that
 * follows an empty comment line or a line ending in ':'. A run that has an #include or a function definition at its left
 * margin is a whole translation unit; any other run is a fragment, compiled as the body
 * of a function that declares the names examples use without defining them (g, st,
 * sess, x, y, loss, w, train_op, hooks, coord, step, ...). Lines that are only "..."
 * placeholders ("...", "... run merged into out, then:") become comments. */
#include "test_util.h"
#include <dirent.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef VG_C_COMPILER
#define VG_C_COMPILER "cc"
#endif

static char tmpdir[256];
static int nexamples;

static const char *fragment_prelude =
    "#include <vigil/vigil.h>\n"
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "static void fn(vg_coord *c, void *payload) { (void)c; (void)payload; }\n"
    "int example(void);\n"
    "int example(void) {\n"
    "    vg_status st = {0};\n"
    "    vg_graph *g = vg_graph_new();\n"
    "    vg_session *sess = NULL, *s = NULL;\n"
    "    vg_output x = {0}, y = {0}, loss = {0}, w = {0};\n"
    "    vg_tensor *batch = NULL, *out = NULL;\n"
    "    vg_op *train_op = NULL;\n"
    "    vg_hook hooks[2];\n"
    "    vg_coord *coord = NULL;\n"
    "    int64_t step = 0, num_epochs = 1, seed = 0;\n"
    "    const char *images_path = \"i\", *labels_path = \"l\";\n"
    "    char buf[4096];\n"
    "    void *payload = NULL;\n"
    "    (void)st; (void)g; (void)sess; (void)s; (void)x; (void)y; (void)loss; (void)w;\n"
    "    (void)batch; (void)out; (void)train_op; (void)hooks; (void)coord; (void)step;\n"
    "    (void)num_epochs; (void)seed; (void)images_path; (void)labels_path; (void)buf;\n"
    "    (void)payload;\n"
    "    {\n";

static bool is_placeholder(const char *code) {
    while (*code == ' ') code++;
    return strncmp(code, "...", 3) == 0;
}

/* Compiles src (a whole translation unit) and reports failures with the origin. */
static void compile_example(const char *origin, const char *src) {
    char cpath[512], cmd[4096], log[600];
    snprintf(cpath, sizeof cpath, "%s/ex%d.c", tmpdir, nexamples);
    snprintf(log, sizeof log, "%s/ex%d.log", tmpdir, nexamples);
    nexamples++;
    FILE *f = fopen(cpath, "w");
    if (!f) {
        CHECK(f != NULL);
        return;
    }
    fputs(src, f);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "%s -std=c11 -Wall -Wextra -Werror -Werror=implicit-function-declaration -Wno-unused-variable "
             "-Wno-unused-but-set-variable -Wno-unused-function -fsyntax-only -I%s/include %s >%s 2>&1",
             VG_C_COMPILER, VG_SRCDIR, cpath, log);
    int rc = system(cmd);
    if (rc != 0) {
        fprintf(stderr, "example from %s does not compile:\n----\n%s----\n", origin, src);
        FILE *l = fopen(log, "r");
        char line[512];
        while (l && fgets(line, sizeof line, l)) fputs(line, stderr);
        if (l) fclose(l);
        vg_test_failures++;
    }
}

/* Turns the collected lines of one example into a translation unit and compiles it. */
static void finish_example(const char *origin, char **lines, int n) {
    bool whole = false;
    for (int i = 0; i < n; i++) {
        const char *l = lines[i];
        size_t len = strlen(l);
        if (!strncmp(l, "#include", 8)) whole = true;
        if (l[0] != ' ' && len > 2 && l[len - 1] == '{' && strchr(l, '(') && strncmp(l, "if ", 3) &&
            strncmp(l, "if(", 3) && strncmp(l, "while", 5) && strncmp(l, "for", 3) && strncmp(l, "switch", 6) &&
            strncmp(l, "else", 4) && strncmp(l, "do", 2))
            whole = true; /* a function definition at the margin */
    }
    size_t cap = 4096;
    for (int i = 0; i < n; i++) cap += strlen(lines[i]) + 8;
    char *src = malloc(cap + strlen(fragment_prelude));
    if (!src) return;
    src[0] = 0;
    if (!whole) strcat(src, fragment_prelude);
    for (int i = 0; i < n; i++) {
        if (is_placeholder(lines[i])) strcat(src, "/* (placeholder) */");
        else strcat(src, lines[i]);
        strcat(src, "\n");
    }
    if (!whole) strcat(src, "    }\n    return 0;\n}\n");
    compile_example(origin, src);
    free(src);
}

/* Scans one header for " *     " example runs. */
static void scan_header(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) {
        CHECK(f != NULL);
        return;
    }
    char line[1024], origin[1200], cur[1024] = "";
    char *lines[256];
    char prev[1024] = "";
    int n = 0, lineno = 0, start = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\n")] = 0;
        if (lineno > 1) snprintf(prev, sizeof prev, "%s", cur);
        snprintf(cur, sizeof cur, "%s", line);
        bool code = strncmp(line, " *     ", 7) == 0;
        /* a run starts at exactly four spaces of indentation; deeper lines only continue one
         * (deeper runs are continued prose or layout tables, not code) */
        if (code && n == 0 && line[7] == ' ') code = false;
        /* and only after an empty comment line or a line ending in ':' (an indented
         * continuation of a list item is prose) */
        if (code && n == 0) {
            size_t pl = strlen(prev);
            while (pl && prev[pl - 1] == ' ') pl--;
            bool after_blank = pl == 2 && !strncmp(prev, " *", 2);
            bool after_colon = pl && prev[pl - 1] == ':';
            if (!after_blank && !after_colon) code = false;
        }
        if (code && n < 256) {
            if (n == 0) start = lineno;
            lines[n++] = strdup(line + 7);
            continue;
        }
        if (n) {
            snprintf(origin, sizeof origin, "%s:%d", path, start);
            finish_example(origin, lines, n);
            for (int i = 0; i < n; i++) free(lines[i]);
            n = 0;
        }
    }
    fclose(f);
}

/* The README's ```c blocks. */
static int scan_readme(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[1024], origin[1200];
    char *lines[512];
    int n = 0, lineno = 0, start = 0, blocks = 0;
    bool in = false;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\n")] = 0;
        if (!in && !strcmp(line, "```c")) {
            in = true;
            start = lineno + 1;
            continue;
        }
        if (in && !strcmp(line, "```")) {
            snprintf(origin, sizeof origin, "%s:%d", path, start);
            finish_example(origin, lines, n);
            for (int i = 0; i < n; i++) free(lines[i]);
            n = 0;
            in = false;
            blocks++;
            continue;
        }
        if (in && n < 512) lines[n++] = strdup(line);
    }
    fclose(f);
    return blocks;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(void) {
    if (!tu_mkdtemp(tmpdir, sizeof tmpdir, "examples")[0]) {
        perror("mkdtemp");
        return 1;
    }
    char dir[512];
    snprintf(dir, sizeof dir, "%s/include/vigil", VG_SRCDIR);
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    char *names[128];
    int nn = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) && nn < 128) {
        size_t len = strlen(e->d_name);
        if (len > 2 && !strcmp(e->d_name + len - 2, ".h")) names[nn++] = strdup(e->d_name);
    }
    if (d) closedir(d);
    qsort(names, (size_t)nn, sizeof *names, cmp_str);
    for (int i = 0; i < nn; i++) {
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        scan_header(p);
        free(names[i]);
    }
    int header_examples = nexamples;
    char readme[512];
    snprintf(readme, sizeof readme, "%s/README.md", VG_SRCDIR);
    int blocks = scan_readme(readme);
    fprintf(stderr, "%d header examples, %d README C block(s) compiled\n", header_examples, blocks);
    CHECK(header_examples >= 15); /* the headers do have examples: the scan found them */
    CHECK(blocks >= 1);
    tu_rmrf(tmpdir);
    TEST_MAIN_END();
}
