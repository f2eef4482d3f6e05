/*
 * main.c - entry point of the `vigil` command: dispatches to the subcommands (train,
 * ckpt, events, plot, convert) and holds the helpers they share (error messages, option and
 * number parsing, comma lists).
 */
#include "cli.h"
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *usage_text =
    "usage: vigil <command> [options]\n"
    "\n"
    "commands:\n"
    "  train                     train a model on Fashion-MNIST under a MonitoredTrainingSession\n"
    "                            (running it again resumes from the latest checkpoint)\n"
    "  ckpt <dir|prefix>         list the tensors of a checkpoint (--tensor NAME, --stats)\n"
    "  events <dir|file>         print the scalars of event files as TSV (--tags a,b)\n"
    "  plot <dir> -o curves.svg  draw scalar curves (loss, accuracy) as SVG (or .png)\n"
    "  graph FILE                summarize a TF GraphDef / .meta / SavedModel, list ops vigil lacks\n"
    "  run DIR --input k=1,2     evaluate a SavedModel signature (--signature, --output)\n"
    "  convert                   IDX (Fashion-MNIST) to a TFRecord of tf.train.Examples or to\n"
    "                            fixed-length records (--images, --labels, -o, --format)\n"
    "\n"
    "Run 'vigil <command> --help' for the options of a command.\n";

int cli_fail_status(const vg_status *st) {
    /* messages quote names from files: control bytes other than the newlines and tabs
     * of the message's own layout go out as \xNN */
    fprintf(stderr, "vigil: %s: ", vg_code_name(st->code));
    if (!st->msg[0]) fputs("(no message)", stderr);
    for (const unsigned char *p = (const unsigned char *)st->msg; *p; p++)
        if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f) fprintf(stderr, "\\x%02x", *p);
        else fputc(*p, stderr);
    fputc('\n', stderr);
    return 1;
}

void cli_vmessage(const char *fmt, va_list ap) {
    fputs("vigil: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

int cli_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    cli_vmessage(fmt, ap);
    va_end(ap);
    return 1;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "vigil %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(run 'vigil %s --help' for usage)\n", cmd);
    va_end(ap);
    return 2;
}

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 when there is none
 * (overlong forms, surrogates and code points past U+10FFFF are invalid). */
static size_t utf8_len(const unsigned char *p, size_t n) {
    unsigned c = p[0];
    size_t k = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
    if (c < 0xc2 || c > 0xf4 || n < k) return 0;
    for (size_t i = 1; i < k; i++)
        if ((p[i] & 0xc0) != 0x80) return 0;
    if (c == 0xe0 && p[1] < 0xa0) return 0;              /* overlong */
    if (c == 0xed && p[1] >= 0xa0) return 0;             /* surrogates */
    if (c == 0xf0 && p[1] < 0x90) return 0;              /* overlong */
    if (c == 0xf4 && p[1] >= 0x90) return 0;             /* past U+10FFFF */
    if (c == 0xc2 && p[1] < 0xa0) return 0;              /* C1 controls U+0080..U+009F */
    return k;
}

void cli_put_escaped(FILE *f, const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        unsigned c = p[i];
        if (c == '\\') fputs("\\\\", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\r') fputs("\\r", f);
        else if (c < 0x20 || c == 0x7f) fprintf(f, "\\x%02x", c);
        else if (c < 0x80) fputc((int)c, f);
        else {
            size_t k = utf8_len(p + i, len - i);
            if (k == 0) {
                fprintf(f, "\\x%02x", c);
                i++;
                continue;
            }
            fwrite(p + i, 1, k, f);
            i += k;
            continue;
        }
        i++;
    }
}

char *cli_escape(const char *s, size_t len) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) return NULL;
    cli_put_escaped(f, s, len);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

bool cli_opt(int argc, char **argv, int *i, const char *name, const char **val, bool *missing) {
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0) return false;
    if (a[n] == '=') {
        *val = a + n + 1;
        return true;
    }
    if (a[n] != 0) return false;
    if (*i + 1 >= argc) {
        *missing = true;
        return true;
    }
    *val = argv[++*i];
    return true;
}

int cli_other_arg(const char *cmd, const char *help, const char *arg, const char **path) {
    if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
        fputs(help, stdout);
        return 0;
    }
    if (arg[0] == '-' && arg[1]) return cli_usage_error(cmd, "unknown option '%s'", arg);
    if (*path) return cli_usage_error(cmd, "unexpected argument '%s'", arg);
    *path = arg;
    return -1;
}

int cli_parse_opts(int argc, char **argv, const char *cmd, const char *help, const cli_optdef *opts, int nopts,
                   const char **path, const char *what_path) {
    for (int i = 1; i < argc; i++) {
        int k = 0;
        for (; k < nopts; k++) {
            const char *v = NULL;
            bool missing = false;
            if (opts[k].str && cli_opt(argc, argv, &i, opts[k].name, &v, &missing)) {
                if (missing) return cli_usage_error(cmd, "%s needs %s", opts[k].name, opts[k].needs);
                *opts[k].str = v;
                break;
            }
            if (opts[k].flag && !strcmp(argv[i], opts[k].name)) {
                *opts[k].flag = true;
                break;
            }
        }
        if (k < nopts) continue;
        int rc = cli_other_arg(cmd, help, argv[i], path);
        if (rc >= 0) return rc;
    }
    return *path ? -1 : cli_usage_error(cmd, "missing %s", what_path);
}

double cli_tensor_elem(const vg_tensor *t, int64_t i, double other) {
    const void *d = vg_tensor_data(t);
    switch (vg_tensor_dtype(t)) {
    case VG_FLOAT: return ((const float *)d)[i];
    case VG_DOUBLE: return ((const double *)d)[i];
    case VG_INT32: return ((const int32_t *)d)[i];
    case VG_UINT8: return ((const uint8_t *)d)[i];
    case VG_INT64: return (double)((const int64_t *)d)[i];
    case VG_BOOL: return ((const bool *)d)[i];
    case VG_HALF: return vg_half_to_float(((const uint16_t *)d)[i]);
    default: return other;
    }
}

bool cli_parse_i64(const char *s, int64_t *out) {
    if (!s || !*s) return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end) return false;
    *out = v;
    return true;
}

bool cli_parse_double(const char *s, double *out) {
    if (!s || !*s) return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return false;
    *out = v;
    return true;
}

char **cli_split_list(const char *s, int *n) {
    *n = 0;
    int cap = 1;
    for (const char *p = s; *p; p++) cap += *p == ',';
    char **v = calloc((size_t)cap, sizeof *v);
    if (!v) return NULL;
    const char *p = s;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len > 0) {
            char *t = malloc(len + 1);
            if (!t) {
                cli_free_list(v, *n);
                return NULL;
            }
            memcpy(t, p, len);
            t[len] = 0;
            v[(*n)++] = t;
        }
        p += len + (e ? 1 : 0);
    }
    return v;
}

void cli_free_list(char **v, int n) {
    for (int i = 0; v && i < n; i++) free(v[i]);
    free(v);
}

bool cli_list_has(char *const *v, int n, const char *s, size_t len) {
    for (int i = 0; i < n; i++)
        if (strlen(v[i]) == len && memcmp(v[i], s, len) == 0) return true;
    return false;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        fputs(usage_text, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("vigil %s\n", vg_version());
        return 0;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "train")) {
        for (int i = 2; i < argc; i++) /* an imported graph (tools/graph.c) */
            if (!strncmp(argv[i], "--meta-graph", 12)) return cli_train_meta(argc - 1, argv + 1);
        /* OpenBLAS on its generic fallback (a build without oneDNN on a CPU newer than
         * OpenBLAS's table): start again with the matching core type, once. */
        const char *core = vg_backend_openblas_coretype_hint();
        if (core && !getenv("VG_CLI_REEXEC")) {
            setenv("OPENBLAS_CORETYPE", core, 1);
            setenv("VG_CLI_REEXEC", core, 1);
            execv("/proc/self/exe", argv); /* returns only on failure: carry on as we are */
            unsetenv("OPENBLAS_CORETYPE");
        }
        return cli_train(argc - 1, argv + 1);
    }
    if (!strcmp(cmd, "ckpt")) return cli_ckpt(argc - 1, argv + 1);
    if (!strcmp(cmd, "events")) return cli_events(argc - 1, argv + 1);
    if (!strcmp(cmd, "plot")) return cli_plot(argc - 1, argv + 1);
    if (!strcmp(cmd, "graph")) return cli_graph(argc - 1, argv + 1);
    if (!strcmp(cmd, "run")) return cli_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "convert")) return cli_convert(argc - 1, argv + 1);
    fprintf(stderr, "vigil: unknown command '%s'\n\n%s", cmd, usage_text);
    return 2;
}
