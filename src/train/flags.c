/*
 * flags.c - tf.flags / absl.flags for ported programs (vigil/flags.h): definitions with
 * defaults and help, absl's command-line rules (FlagValues._parse_args), the --help
 * listing. Public API only.
 */
#include "train_util.h"
#include "vigil/flags.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct flag {
    char *name, *help;
    vg_flag_type type;
    char *s, *s_def; /* string value / default (NULL: None) */
    int64_t i, i_def;
    double d, d_def;
    bool b, b_def;
    bool present;
} flag;

struct vg_flags {
    flag *v;
    int n, cap;
    bool help;
};

vg_flags *vg_flags_new(void) { return vg_calloc(1, sizeof(vg_flags)); }

static void flag_clear(flag *fl) {
    vg_free(fl->name);
    vg_free(fl->help);
    vg_free(fl->s);
    vg_free(fl->s_def);
}

void vg_flags_free(vg_flags *f) {
    if (!f) return;
    for (int i = 0; i < f->n; i++) flag_clear(&f->v[i]);
    vg_free(f->v);
    vg_free(f);
}

static flag *find(const vg_flags *f, const char *name, size_t len) {
    if (!f || !name) return NULL;
    for (int i = 0; i < f->n; i++)
        if (strlen(f->v[i].name) == len && strncmp(f->v[i].name, name, len) == 0) return &f->v[i];
    return NULL;
}

static flag *find0(const vg_flags *f, const char *name) { return name ? find(f, name, strlen(name)) : NULL; }

static vg_code define(vg_flags *f, const char *name, const char *help, vg_flag_type type, flag **out, vg_status *st) {
    *out = NULL;
    if (!f) return vg_status_set(st, VG_INVALID_ARGUMENT, "flags: NULL flag set");
    bool ok = name && *name && *name != '-';
    for (const char *p = name; ok && *p; p++) ok = *p != '=' && !isspace((unsigned char)*p);
    if (!ok) return vg_status_set(st, VG_INVALID_ARGUMENT, "flags: bad flag name '%s'", name ? name : "(null)");
    if (find0(f, name)) return vg_status_set(st, VG_INVALID_ARGUMENT, "The flag '%s' is defined twice.", name);
    if (!vg__train_grow((void **)&f->v, &f->cap, f->n + 1, sizeof(flag))) return VG_OOM(st, "flags");
    flag *fl = &f->v[f->n];
    memset(fl, 0, sizeof *fl);
    fl->type = type;
    fl->name = vg__train_strdup(name);
    fl->help = vg__train_strdup(help ? help : "");
    if (!fl->name || !fl->help) {
        flag_clear(fl);
        return VG_OOM(st, "flags");
    }
    f->n++;
    *out = fl;
    vg_status_clear(st);
    return VG_OK;
}

vg_code vg_flags_define_string(vg_flags *f, const char *name, const char *def, const char *help, vg_status *st) {
    flag *fl;
    vg_code c = define(f, name, help, VG_FLAG_STRING, &fl, st);
    if (c != VG_OK || !def) return c;
    fl->s_def = vg__train_strdup(def);
    fl->s = vg__train_strdup(def);
    if (!fl->s || !fl->s_def) {
        flag_clear(fl);
        f->n--;
        return VG_OOM(st, "flags");
    }
    return VG_OK;
}

/* define() of a numeric or boolean flag, its value and default set from def (the field
 * of the flag's type). */
static vg_code define_scalar(vg_flags *f, const char *name, const char *help, vg_flag_type type, flag def,
                             vg_status *st) {
    flag *fl;
    vg_code c = define(f, name, help, type, &fl, st);
    if (c != VG_OK) return c;
    fl->i = fl->i_def = def.i;
    fl->d = fl->d_def = def.d;
    fl->b = fl->b_def = def.b;
    return VG_OK;
}

vg_code vg_flags_define_integer(vg_flags *f, const char *name, int64_t def, const char *help, vg_status *st) {
    return define_scalar(f, name, help, VG_FLAG_INTEGER, (flag){.i = def}, st);
}

vg_code vg_flags_define_float(vg_flags *f, const char *name, double def, const char *help, vg_status *st) {
    return define_scalar(f, name, help, VG_FLAG_FLOAT, (flag){.d = def}, st);
}

vg_code vg_flags_define_boolean(vg_flags *f, const char *name, bool def, const char *help, vg_status *st) {
    return define_scalar(f, name, help, VG_FLAG_BOOLEAN, (flag){.b = def}, st);
}

/* absl's IntegerParser.convert: base 10, or 0x / 0o prefixes (after an optional sign). */
static bool parse_int(const char *s, int64_t *out) {
    const char *p = s;
    bool neg = false;
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    int base = 10;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && p[2]) base = 16, p += 2;
    else if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O') && p[2]) base = 8, p += 2;
    if (!*p || isspace((unsigned char)*p) || *p == '+' || *p == '-') return false;
    errno = 0;
    char *end;
    unsigned long long u = strtoull(p, &end, base);
    if (*end || errno == ERANGE) return false;
    if (neg ? u > (unsigned long long)INT64_MAX + 1 : u > (unsigned long long)INT64_MAX) return false;
    *out = neg ? (int64_t)(0 - u) : (int64_t)u;
    return true;
}

static bool parse_float(const char *s, double *out) {
    if (!*s || isspace((unsigned char)*s)) return false;
    char *end;
    double v = strtod(s, &end);
    if (*end) return false;
    *out = v;
    return true;
}

static bool ieq(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return false;
    return !*a && !*b;
}

/* flag.parse(value), absl's messages on a bad value. */
static vg_code set_value(flag *fl, const char *value, vg_status *st) {
    switch (fl->type) {
    case VG_FLAG_STRING: {
        char *d = vg__train_strdup(value);
        if (!d) return VG_OOM(st, "flags");
        vg_free(fl->s);
        fl->s = d;
        break;
    }
    case VG_FLAG_INTEGER:
        if (!parse_int(value, &fl->i))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "flag --%s=%s: invalid literal for int() with base 10: '%s'",
                                 fl->name, value, value);
        break;
    case VG_FLAG_FLOAT:
        if (!parse_float(value, &fl->d))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "flag --%s=%s: could not convert string to float: '%s'",
                                 fl->name, value, value);
        break;
    case VG_FLAG_BOOLEAN:
        if (ieq(value, "true") || ieq(value, "t") || ieq(value, "1")) fl->b = true;
        else if (ieq(value, "false") || ieq(value, "f") || ieq(value, "0")) fl->b = false;
        else
            return vg_status_set(st, VG_INVALID_ARGUMENT, "flag --%s=%s: Non-boolean argument to boolean flag",
                                 fl->name, value);
        break;
    }
    fl->present = true;
    return VG_OK;
}

static bool is_help(const char *name, size_t len) {
    static const char *const h[] = {"help", "helpshort", "helpfull", "?"};
    for (size_t i = 0; i < sizeof h / sizeof h[0]; i++)
        if (strlen(h[i]) == len && strncmp(h[i], name, len) == 0) return true;
    return false;
}

vg_code vg_flags_parse(vg_flags *f, int *argc, char **argv, bool known_only, vg_status *st) {
    if (!f || !argc || *argc < 0 || (*argc > 0 && !argv))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "flags: bad arguments to parse");
    int n = *argc, out = 0;
    /* what stays, collected aside: argv is rewritten only when the parse succeeds */
    char **keep = vg_calloc((size_t)n + 1, sizeof(char *));
    if (!keep) return VG_OOM(st, "flags");
    if (n > 0) keep[out++] = argv[0];
    f->help = false;
    for (int k = 0; k < f->n; k++) f->v[k].present = false;
    vg_code c = VG_OK;
    int i = 1;
    for (; i < n; i++) {
        char *arg = argv[i];
        if (arg[0] != '-') { /* a positional argument (GNU style: keep going) */
            keep[out++] = arg;
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            if (known_only) keep[out++] = arg;
            i++;
            break;
        }
        const char *body = arg[1] == '-' ? arg + 2 : arg + 1;
        const char *eq = strchr(body, '=');
        size_t len = eq ? (size_t)(eq - body) : strlen(body);
        const char *value = eq ? eq + 1 : NULL;
        if (len == 0) { /* all dashes */
            keep[out++] = arg;
            continue;
        }
        flag *fl = find(f, body, len);
        if (fl) {
            if (fl->type == VG_FLAG_BOOLEAN && !value) {
                value = "true";
            } else if (!value) {
                if (i + 1 >= n) {
                    c = vg_status_set(st, VG_INVALID_ARGUMENT, "Missing value for flag %s", arg);
                    break;
                }
                value = argv[++i];
            }
        } else if (len > 2 && strncmp(body, "no", 2) == 0 && (fl = find(f, body + 2, len - 2)) &&
                   fl->type == VG_FLAG_BOOLEAN) {
            if (value) {
                c = vg_status_set(st, VG_INVALID_ARGUMENT, "%s does not take an argument", arg);
                break;
            }
            value = "false";
        } else {
            fl = NULL;
        }
        if (fl) {
            if ((c = set_value(fl, value, st)) != VG_OK) break;
            continue;
        }
        if (is_help(body, len) && !value) {
            f->help = true;
            continue;
        }
        if (!known_only) {
            c = vg_status_set(st, VG_INVALID_ARGUMENT, "Unknown command line flag '%.*s'", (int)len, body);
            break;
        }
        keep[out++] = arg;
    }
    if (c == VG_OK) {
        for (; i < n; i++) keep[out++] = argv[i]; /* after "--" */
        for (int k = 0; k < out; k++) argv[k] = keep[k];
        if (out < n) argv[out] = NULL; /* (main's argv[argc] is NULL already) */
        *argc = out;
        vg_status_clear(st);
    }
    vg_free(keep);
    return c;
}

bool vg_flags_help_requested(const vg_flags *f) { return f && f->help; }

/* Python's str(float): the shortest repr that reads back. */
static void float_repr(double v, char *buf, size_t len) {
    if (isnan(v)) {
        snprintf(buf, len, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, len, v < 0 ? "-inf" : "inf");
        return;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, len, "%.*g", p, v);
        if (strtod(buf, NULL) == v) break;
    }
    if (!strpbrk(buf, ".eni")) strncat(buf, ".0", len - strlen(buf) - 1);
}

static int cmp_flag(const void *a, const void *b) {
    return strcmp((*(const flag *const *)a)->name, (*(const flag *const *)b)->name);
}

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static void sb_add(sbuf *b, const char *fmt, ...) VG_PRINTF(2, 3);
static void sb_add(sbuf *b, const char *fmt, ...) {
    if (b->oom) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    if (!vg__train_reserve_bytes((void **)&b->p, &b->cap, b->n + (size_t)k + 1, 256)) {
        b->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
}

char *vg_flags_help(const vg_flags *f, const char *program) {
    sbuf b = {NULL, 0, 0, false};
    sb_add(&b, "USAGE: %s [flags]\nflags:\n", program && *program ? program : "program");
    int n = f ? f->n : 0;
    const flag **order = vg_calloc((size_t)(n ? n : 1), sizeof *order);
    if (!order) {
        vg_free(b.p);
        return NULL;
    }
    for (int i = 0; i < n; i++) order[i] = &f->v[i];
    qsort(order, (size_t)n, sizeof *order, cmp_flag);
    for (int i = 0; i < n; i++) {
        const flag *fl = order[i];
        char num[64];
        sb_add(&b, "  --%s%s:%s%s\n", fl->type == VG_FLAG_BOOLEAN ? "[no]" : "", fl->name, *fl->help ? " " : "",
               fl->help);
        switch (fl->type) {
        case VG_FLAG_STRING:
            if (fl->s_def) sb_add(&b, "    (default: '%s')\n", fl->s_def);
            else sb_add(&b, "    (default: None)\n");
            break;
        case VG_FLAG_INTEGER:
            sb_add(&b, "    (default: '%lld')\n    (an integer)\n", (long long)fl->i_def);
            break;
        case VG_FLAG_FLOAT:
            float_repr(fl->d_def, num, sizeof num);
            sb_add(&b, "    (default: '%s')\n    (a number)\n", num);
            break;
        case VG_FLAG_BOOLEAN:
            sb_add(&b, "    (default: '%s')\n", fl->b_def ? "true" : "false");
            break;
        }
    }
    vg_free(order);
    if (b.oom) {
        vg_free(b.p);
        return NULL;
    }
    return b.p;
}

static const flag *typed(const vg_flags *f, const char *name, vg_flag_type t) {
    const flag *fl = find0(f, name);
    return fl && fl->type == t ? fl : NULL;
}

const char *vg_flags_string(const vg_flags *f, const char *name) {
    const flag *fl = typed(f, name, VG_FLAG_STRING);
    return fl ? fl->s : NULL;
}
int64_t vg_flags_integer(const vg_flags *f, const char *name) {
    const flag *fl = typed(f, name, VG_FLAG_INTEGER);
    return fl ? fl->i : 0;
}
double vg_flags_float(const vg_flags *f, const char *name) {
    const flag *fl = typed(f, name, VG_FLAG_FLOAT);
    return fl ? fl->d : 0.0;
}
bool vg_flags_boolean(const vg_flags *f, const char *name) {
    const flag *fl = typed(f, name, VG_FLAG_BOOLEAN);
    return fl ? fl->b : false;
}
bool vg_flags_present(const vg_flags *f, const char *name) {
    const flag *fl = find0(f, name);
    return fl && fl->present;
}
bool vg_flags_defined(const vg_flags *f, const char *name, vg_flag_type *type) {
    const flag *fl = find0(f, name);
    if (fl && type) *type = fl->type;
    return fl != NULL;
}
