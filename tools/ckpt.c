/*
 * ckpt.c - `vigil ckpt <dir|prefix>`: lists the tensors of a V2 checkpoint (name,
 * dtype, shape, bytes) like TF's inspect_checkpoint, prints one tensor's values
 * (--tensor NAME) and min/max/mean statistics (--stats). Works on checkpoints written
 * by vigil and by TensorFlow (Snappy-compressed indexes, string tensors), through the
 * public checkpoint reader of vigil/saver.h.
 */
#include "cli.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *ckpt_help =
    "usage: vigil ckpt <dir|prefix> [--tensor NAME] [--stats]\n"
    "\n"
    "  <dir>            a checkpoint directory (its 'checkpoint' file names the latest\n"
    "                   checkpoint) or a SavedModel directory (variables/variables)\n"
    "  <prefix>         a checkpoint prefix such as runs/fmnist/model.ckpt-4685\n"
    "  --tensor NAME    print the values of one tensor\n"
    "  --stats          add min, max and mean (of the finite values) and the NaN and\n"
    "                   Inf counts of every numeric tensor\n";

/* TensorFlow DataType names and element sizes (types.proto), also for dtypes vigil
 * cannot hold in a tensor (they are listed, not read). */
static const char *tf_dtype_name(int dt, size_t *size) {
    static const struct { int dt; const char *name; size_t size; } t[] = {
        {1, "float", 4},    {2, "double", 8},   {3, "int32", 4},     {4, "uint8", 1},     {5, "int16", 2},
        {6, "int8", 1},     {7, "string", 0},   {8, "complex64", 8}, {9, "int64", 8},     {10, "bool", 1},
        {11, "qint8", 1},   {12, "quint8", 1},  {13, "qint32", 4},   {14, "bfloat16", 2}, {15, "qint16", 2},
        {16, "quint16", 2}, {17, "uint16", 2},  {18, "complex128", 16}, {19, "half", 2},  {20, "resource", 0},
        {21, "variant", 0}, {22, "uint32", 4},  {23, "uint64", 8},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (t[i].dt == dt) {
            if (size) *size = t[i].size;
            return t[i].name;
        }
    if (size) *size = 0;
    return "unknown";
}

static bool is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}
static bool is_file(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* The checkpoint prefix for a path given by the user. Returns false (reported). */
static bool resolve_prefix(const char *path, char *out, size_t len) {
    if (is_dir(path)) {
        vg_status st;
        vg_code c = vg_checkpoint_find_latest(path, out, len, &st);
        if (c == VG_OK) return true;
        if (c != VG_NOT_FOUND) { /* the real cause: unreadable state file, nothing complete, ... */
            cli_fail_status(&st);
            return false;
        }
        snprintf(out, len, "%s/variables/variables", path);
        char idx[4200];
        snprintf(idx, sizeof idx, "%s.index", out);
        if (is_file(idx)) return true;
        cli_fail("%s: no checkpoint in this directory (no 'checkpoint' file, no .index files, no "
                 "variables/variables.index)", path);
        return false;
    }
    snprintf(out, len, "%s", path);
    size_t n = strlen(out);
    const char *sfx[] = {".index", ".data-00000-of-00001", ".meta"};
    for (size_t i = 0; i < 3; i++) {
        size_t k = strlen(sfx[i]);
        if (n > k && !strcmp(out + n - k, sfx[i])) {
            out[n - k] = 0;
            break;
        }
    }
    return true;
}

static double elem(const vg_tensor *t, int64_t i) { return cli_tensor_elem(t, i, NAN); }

static void print_string(const char *s, size_t len) {
    putchar('"');
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c == '\n') fputs("\\n", stdout);
        else if (c >= 32 && c < 127) putchar(c);
        else printf("\\x%02x", c);
    }
    putchar('"');
}

static void print_elem(const vg_tensor *t, int64_t i) {
    const void *d = vg_tensor_data(t);
    switch (vg_tensor_dtype(t)) {
    case VG_FLOAT: printf("%.9g", ((const float *)d)[i]); break;
    case VG_DOUBLE: printf("%.17g", ((const double *)d)[i]); break;
    case VG_INT32: printf("%d", ((const int32_t *)d)[i]); break;
    case VG_UINT8: printf("%u", ((const uint8_t *)d)[i]); break;
    case VG_INT64: printf("%lld", (long long)((const int64_t *)d)[i]); break;
    case VG_BOOL: fputs(((const bool *)d)[i] ? "True" : "False", stdout); break;
    case VG_HALF: printf("%.5g", (double)vg_half_to_float(((const uint16_t *)d)[i])); break;
    case VG_STRING: {
        size_t len = 0;
        const char *s = vg_tensor_string(t, i, &len);
        print_string(s ? s : "", s ? len : 0);
        break;
    }
    default: fputs("?", stdout); break;
    }
}

/* numpy-style nested brackets, one innermost row per line. */
static void print_values(const vg_tensor *t) {
    int nd = vg_tensor_ndims(t);
    const int64_t *dims = vg_tensor_dims(t);
    int64_t n = vg_tensor_num_elements(t);
    if (nd == 0) {
        print_elem(t, 0);
        putchar('\n');
        return;
    }
    if (n == 0) {
        for (int d = 0; d < nd; d++) putchar('[');
        for (int d = 0; d < nd; d++) putchar(']');
        putchar('\n');
        return;
    }
    int64_t stride[VG_MAX_DIMS];
    stride[nd - 1] = 1;
    for (int d = nd - 2; d >= 0; d--) stride[d] = stride[d + 1] * dims[d + 1];
    for (int64_t i = 0; i < n; i++) {
        int open = 0; /* how many dimensions start a new block at element i */
        for (int d = 0; d < nd; d++)
            if (i % (stride[d] * dims[d]) == 0) { open = nd - d; break; }
        if (open) {
            if (i) fputs("\n", stdout);
            for (int k = 0; k < nd - open; k++) putchar(' ');
            for (int k = 0; k < open; k++) putchar('[');
        } else {
            putchar(' ');
        }
        print_elem(t, i);
        int close = 0;
        for (int d = 0; d < nd; d++)
            if ((i + 1) % (stride[d] * dims[d]) == 0) { close = nd - d; break; }
        for (int k = 0; k < close; k++) putchar(']');
    }
    putchar('\n');
}

typedef struct stats {
    bool ok;
    double min, max, mean; /* over the finite values (NAN when there are none) */
    long long nan, inf;
} stats;

static stats tensor_stats(const vg_tensor *t) {
    stats s = {false, 0, 0, 0, 0, 0};
    vg_dtype dt = vg_tensor_dtype(t);
    if (dt == VG_STRING) return s;
    int64_t n = vg_tensor_num_elements(t);
    if (n == 0) return s;
    double sum = 0;
    s.min = INFINITY;
    s.max = -INFINITY;
    int64_t nfin = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = elem(t, i);
        if (isnan(v)) { s.nan++; continue; }
        if (isinf(v)) { s.inf++; continue; }
        if (v < s.min) s.min = v;
        if (v > s.max) s.max = v;
        sum += v;
        nfin++;
    }
    if (nfin) s.mean = sum / (double)nfin;
    else s.min = s.max = s.mean = NAN;
    s.ok = true;
    return s;
}

/* Bytes of a tensor: elements * size, or the string bytes (read when needed). */
static long long tensor_bytes(vg_checkpoint_reader *r, const char *name, int dt, const vg_shape *shape) {
    size_t es;
    tf_dtype_name(dt, &es);
    int64_t n = vg_shape_num_elements(shape);
    if (dt != VG_STRING) return es && n >= 0 ? (long long)(es * (size_t)n) : -1;
    vg_status st;
    vg_tensor *t = vg_checkpoint_reader_read(r, name, &st);
    if (!t) return -1;
    long long total = 0;
    for (int64_t i = 0; i < vg_tensor_num_elements(t); i++) {
        size_t len = 0;
        vg_tensor_string(t, i, &len);
        total += (long long)len;
    }
    vg_tensor_free(t);
    return total;
}

static int list_tensors(vg_checkpoint_reader *r, const char *prefix, bool with_stats) {
    int n = vg_checkpoint_reader_num_tensors(r);
    int w = 4;
    char **names = calloc(n > 0 ? (size_t)n : 1, sizeof *names); /* escaped: names come from the file */
    if (!names) return cli_fail("out of memory");
    for (int i = 0; i < n; i++) {
        const char *nm = vg_checkpoint_reader_tensor(r, i, NULL, NULL);
        names[i] = cli_escape(nm, strlen(nm));
        int l = names[i] ? (int)strlen(names[i]) : 1;
        if (l > w && l < 4096) w = l;
    }
    printf("# checkpoint ");
    cli_put_escaped(stdout, prefix, strlen(prefix));
    printf("\n");
    printf("%-*s  %-8s  %-18s  %12s", w, "name", "dtype", "shape", "bytes");
    if (with_stats) printf("  %14s  %14s  %14s  %10s  %10s", "min", "max", "mean", "nan", "inf");
    putchar('\n');
    long long total = 0;
    int rc = 0, unreadable = 0;
    vg_status first_err;
    vg_status_clear(&first_err);
    for (int i = 0; i < n; i++) {
        vg_dtype dt;
        vg_shape shape;
        const char *name = vg_checkpoint_reader_tensor(r, i, &dt, &shape);
        char sh[256];
        long long b = tensor_bytes(r, name, (int)dt, &shape);
        if (b > 0) total += b;
        printf("%-*s  %-8s  %-18s  %12lld", w, names[i] ? names[i] : "?", tf_dtype_name((int)dt, NULL), vg_shape_str(&shape, sh, sizeof sh),
               b);
        if (with_stats) {
            vg_status st;
            vg_tensor *t = dt == VG_STRING ? NULL : vg_checkpoint_reader_read(r, name, &st);
            stats s = t ? tensor_stats(t) : (stats){false, 0, 0, 0, 0, 0};
            if (s.ok) printf("  %14.7g  %14.7g  %14.7g  %10lld  %10lld", s.min, s.max, s.mean, s.nan, s.inf);
            else printf("  %14s  %14s  %14s  %10s  %10s", "-", "-", "-", "-", "-");
            if (!t && dt != VG_STRING && unreadable++ == 0) vg_status_copy(&first_err, &st);
            vg_tensor_free(t);
        }
        putchar('\n');
    }
    printf("# %d tensors, %lld bytes\n", n, total);
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    if (unreadable) {
        fflush(stdout);
        fprintf(stderr, "vigil: %d tensor(s) could not be read for --stats; the first: %s: %s\n", unreadable,
                vg_code_name(first_err.code), first_err.msg);
        rc = 1;
    }
    return rc;
}

static int show_tensor(vg_checkpoint_reader *r, const char *name, bool with_stats) {
    vg_status st;
    vg_tensor *t = vg_checkpoint_reader_read(r, name, &st);
    if (!t) {
        if (st.code == VG_NOT_FOUND) {
            fprintf(stderr, "vigil: NOT_FOUND: tensor '");
            cli_put_escaped(stderr, name, strlen(name));
            fprintf(stderr, "' is not in the checkpoint; its tensors are:\n");
            for (int i = 0; i < vg_checkpoint_reader_num_tensors(r) && i < 50; i++) {
                const char *nm = vg_checkpoint_reader_tensor(r, i, NULL, NULL);
                fputs("  ", stderr);
                cli_put_escaped(stderr, nm, strlen(nm));
                fputc('\n', stderr);
            }
            return 1;
        }
        return cli_fail_status(&st);
    }
    vg_shape shape = vg_tensor_shape(t);
    char sh[256];
    printf("# ");
    cli_put_escaped(stdout, name, strlen(name));
    printf(" %s %s\n", tf_dtype_name((int)vg_tensor_dtype(t), NULL), vg_shape_str(&shape, sh, sizeof sh));
    print_values(t);
    if (with_stats) {
        stats s = tensor_stats(t);
        if (s.ok) printf("# min %.9g max %.9g mean %.9g nan %lld inf %lld\n", s.min, s.max, s.mean, s.nan, s.inf);
    }
    vg_tensor_free(t);
    return 0;
}

int cli_ckpt(int argc, char **argv) {
    const char *path = NULL, *tensor = NULL;
    bool with_stats = false;
    const cli_optdef opts[] = {{"--tensor", "a tensor name", &tensor, NULL}, {"--stats", NULL, NULL, &with_stats}};
    int prc = cli_parse_opts(argc, argv, "ckpt", ckpt_help, opts, 2, &path, "<dir|prefix>");
    if (prc >= 0) return prc;
    char prefix[4096];
    if (!resolve_prefix(path, prefix, sizeof prefix)) return 1;
    vg_status st;
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(prefix, &st);
    if (!r) return cli_fail_status(&st);
    int rc = tensor ? show_tensor(r, tensor, with_stats) : list_tensors(r, prefix, with_stats);
    vg_checkpoint_reader_free(r);
    return rc;
}
