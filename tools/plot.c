/*
 * plot.c - `vigil plot <dir> -o curves.svg`: scalar curves (by default loss and
 * accuracy) against the global step, one panel per tag, drawn as SVG by hand (axes,
 * tick values, grid, title with the last value). `-o x.png` writes the SVG and converts
 * it with rsvg-convert (librsvg2-bin) or ImageMagick's convert when one is installed.
 *
 * Runs that resumed from a checkpoint repeat steps: like TensorBoard, a SessionLog
 * START at step s drops the points with step >= s read before it (orphans of the
 * killed run), so each curve is the history of the surviving run.
 */
#include "cli.h"
#include <errno.h>
#include <float.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *plot_help =
    "usage: vigil plot <dir|file> [-o curves.svg] [--tags a,b] [--width PX] [--panel-height PX]\n"
    "\n"
    "Draws the scalar summaries of the event files in <dir> against the step, one\n"
    "panel per tag. Default tags: loss and accuracy when present, else every scalar.\n"
    "  -o FILE            output (default curves.svg); FILE.png is converted from the\n"
    "                     SVG with rsvg-convert or ImageMagick's convert if installed\n"
    "  --tags a,b         tags to draw, in this order\n"
    "  --width PX         image width (default 800)\n"
    "  --panel-height PX  height of each panel (default 280)\n";

typedef struct series {
    char *tag;
    int64_t *step;
    double *value;
    int n, cap;
} series;

typedef struct plot_data {
    series *s;
    int n, cap;
    bool oom;
} plot_data;

static series *find_series(plot_data *d, const char *tag, size_t len, bool create) {
    for (int i = 0; i < d->n; i++)
        if (strlen(d->s[i].tag) == len && !memcmp(d->s[i].tag, tag, len)) return &d->s[i];
    if (!create) return NULL;
    if (d->n == d->cap) {
        int nc = d->cap ? 2 * d->cap : 8;
        series *ns = realloc(d->s, sizeof *ns * (size_t)nc);
        if (!ns) return NULL;
        d->s = ns;
        d->cap = nc;
    }
    series *s = &d->s[d->n];
    memset(s, 0, sizeof *s);
    if (!(s->tag = malloc(len + 1))) return NULL;
    memcpy(s->tag, tag, len);
    s->tag[len] = 0;
    d->n++;
    return s;
}

static void collect(void *payload, const char *file, int64_t step, double wall_time, const char *tag, size_t tag_len,
                    double value) {
    plot_data *d = payload;
    if (!tag) { /* SessionLog START: purge the orphaned steps of earlier runs */
        for (int i = 0; i < d->n; i++) {
            series *s = &d->s[i];
            int k = 0;
            for (int j = 0; j < s->n; j++)
                if (s->step[j] < step) {
                    s->step[k] = s->step[j];
                    s->value[k++] = s->value[j];
                }
            s->n = k;
        }
        return;
    }
    if (!isfinite(value)) return;
    series *s = find_series(d, tag, tag_len, true);
    if (!s) {
        d->oom = true;
        return;
    }
    if (s->n == s->cap) {
        int nc = s->cap ? 2 * s->cap : 64;
        int64_t *ns = realloc(s->step, sizeof *ns * (size_t)nc);
        if (ns) s->step = ns;
        double *nv = realloc(s->value, sizeof *nv * (size_t)nc);
        if (nv) s->value = nv;
        if (!ns || !nv) {
            d->oom = true;
            return;
        }
        s->cap = nc;
    }
    s->step[s->n] = step;
    s->value[s->n++] = value;
}

/* Stable order by step (event files of one run are in step order already). */
static void sort_series(series *s) {
    for (int i = 1; i < s->n; i++) {
        int64_t st = s->step[i];
        double v = s->value[i];
        int j = i - 1;
        while (j >= 0 && s->step[j] > st) {
            s->step[j + 1] = s->step[j];
            s->value[j + 1] = s->value[j];
            j--;
        }
        s->step[j + 1] = st;
        s->value[j + 1] = v;
    }
}

/* "Nice" tick spacing: 1, 2 or 5 times a power of ten, about `want` ticks. */
static double nice_step(double range, int want) {
    double raw = range / want, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p;
}

static void fmt_tick(char *buf, size_t len, double v, double step) {
    if (fabs(v) < step * 1e-9) v = 0;
    if (fabs(v) >= 1e6 || (fabs(v) < 1e-3 && v != 0)) snprintf(buf, len, "%.3g", v);
    else {
        int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
        if (dec > 6) dec = 6;
        snprintf(buf, len, "%.*f", dec, v);
    }
}

/* Length of the valid UTF-8 sequence at p (1..4) that XML 1.0 allows as a character,
 * or 0 (invalid byte, overlong form, surrogate, > U+10FFFF, U+FFFE/U+FFFF, a control
 * character other than tab, newline and carriage return). */
static int xml_char_len(const unsigned char *p) {
    unsigned c = p[0];
    if (c < 0x80) return (c >= 0x20 || c == '\t' || c == '\n' || c == '\r') ? 1 : 0;
    int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (!n || c > 0xF4) return 0;
    unsigned cp = c & (0x3F >> (n - 1));
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (p[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF) return 0;
    return n;
}

/* Text for XML: markup characters escaped; bytes that are not valid UTF-8 (a tag
 * written by another tool) or not XML characters become U+FFFD, so the SVG stays
 * well-formed. */
static void xml_text(FILE *f, const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        if (*p == '&') fputs("&amp;", f);
        else if (*p == '<') fputs("&lt;", f);
        else if (*p == '>') fputs("&gt;", f);
        else if (*p == '"') fputs("&quot;", f);
        else {
            int n = xml_char_len(p);
            if (n) fwrite(p, 1, (size_t)n, f);
            else fputs("\xEF\xBF\xBD", f);
            p += n ? n : 1;
            continue;
        }
        p++;
    }
}

static const char *colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

/* Points and ticks are placed by their offset from the first step, taken as an
 * unsigned 64-bit difference (steps near 2^63 neither overflow nor collapse into one
 * double); values by halves (v/2 - lo/2 cannot overflow for finite doubles). Tick loops
 * count ticks (at most 64) rather than add to a double that may stop changing. */
static double x_off(const series *s, int64_t step) {
    return (double)((uint64_t)step - (uint64_t)s->step[0]);
}

static void draw_panel(FILE *f, const series *s, int idx, double y0, double width, double height) {
    const double ml = 78, mr = 24, mt = 34, mb = 46;
    double px = ml, py = y0 + mt, pw = width - ml - mr, ph = height - mt - mb;
    double xrange = x_off(s, s->step[s->n - 1]), ymin = INFINITY, ymax = -INFINITY;
    for (int i = 0; i < s->n; i++) {
        if (s->value[i] < ymin) ymin = s->value[i];
        if (s->value[i] > ymax) ymax = s->value[i];
    }
    if (!(xrange > 0)) xrange = 1;
    if (ymax <= ymin) {
        double pad = fabs(ymin) > 0 ? fabs(ymin) * 0.1 : 1;
        ymin = fmax(ymin - pad, -DBL_MAX);
        ymax = fmin(ymax + pad, DBL_MAX);
    }
    double xs = nice_step(xrange, 8), ys = nice_step(ymax / 2 - ymin / 2, 5) * 2;
    if (!(xs >= 1)) xs = 1; /* steps are integers */
    if (xs > 4e18) xs = 4e18;
    if (!isfinite(ys) || !(ys > 0)) ys = DBL_MAX;
    double ylo = fmax(floor(ymin / ys) * ys, -DBL_MAX), yhi = fmin(ceil(ymax / ys) * ys, DBL_MAX);
    if (!isfinite(ylo)) ylo = -DBL_MAX;
    if (!isfinite(yhi)) yhi = DBL_MAX;
    if (yhi / 2 - ylo / 2 <= 0) yhi = fmin(ylo + ys, DBL_MAX);
    if (yhi / 2 - ylo / 2 <= 0) ylo = -DBL_MAX, yhi = DBL_MAX;
#define X(off) (px + (off) / xrange * pw)
#define Y(v) (py + ph - ((v) / 2 - ylo / 2) / (yhi / 2 - ylo / 2) * ph)
    /* title and last value */
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"16\" font-weight=\"bold\">", px, y0 + 22);
    xml_text(f, s->tag);
    fprintf(f, "</text>\n");
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"end\" fill=\"#555\">"
               "last %.5g at step %lld (%d points)</text>\n",
            px + pw, y0 + 22, s->value[s->n - 1], (long long)s->step[s->n - 1], s->n);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fff\" stroke=\"#333\"/>\n", px, py,
            pw, ph);
    /* grid and ticks */
    char buf[64];
    fprintf(f, "<g font-size=\"11\" fill=\"#333\">\n");
    /* x ticks: the multiples of xs (an integer) from the first step to the last */
    int64_t xsi = (int64_t)xs, t0 = s->step[0] / xsi * xsi;
    if (t0 < s->step[0]) t0 = t0 > INT64_MAX - xsi ? s->step[0] : t0 + xsi; /* ceil to a multiple */
    for (int k = 0; k < 64; k++) {
        if (k && t0 > INT64_MAX - xsi) break;
        if (k) t0 += xsi;
        if (t0 > s->step[s->n - 1]) break;
        double x = X(x_off(s, t0));
        fmt_tick(buf, sizeof buf, (double)t0, xs);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e3e3\"/>\n", x, py, x, py + ph);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", x, py + ph, x,
                py + ph + 5);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", x, py + ph + 18, buf);
    }
    for (int k = 0; k < 64; k++) {
        double v = ylo + k * ys;
        if (!isfinite(v) || v > yhi + ys * 1e-9) break;
        double y = Y(v);
        fmt_tick(buf, sizeof buf, v, ys);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e3e3\"/>\n", px, y, px + pw, y);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", px - 5, y, px, y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", px - 8, y + 4, buf);
    }
    fprintf(f, "</g>\n");
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">step</text>\n", px + pw / 2,
            py + ph + 38);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" "
               "transform=\"rotate(-90 %.1f %.1f)\">",
            18.0, py + ph / 2, 18.0, py + ph / 2);
    xml_text(f, s->tag);
    fprintf(f, "</text>\n");
    /* the curve */
    const char *col = colors[idx % (int)(sizeof colors / sizeof colors[0])];
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\" stroke-linejoin=\"round\" points=\"", col);
    bool first = true;
    for (int i = 0; i < s->n; i++) {
        double x = X(x_off(s, s->step[i])), y = Y(s->value[i]);
        if (!isfinite(x) || !isfinite(y)) continue; /* cannot happen; never write a NaN coordinate */
        fprintf(f, "%s%.2f,%.2f", first ? "" : " ", x, y);
        first = false;
    }
    fprintf(f, "\"/>\n");
    if (s->n <= 60)
        for (int i = 0; i < s->n; i++) {
            double x = X(x_off(s, s->step[i])), y = Y(s->value[i]);
            if (isfinite(x) && isfinite(y))
                fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\" fill=\"%s\"/>\n", x, y, col);
        }
#undef X
#undef Y
}

/* A new temporary "<out>.XXXXXX<ext>" (mkstemps: O_EXCL, so a symlink planted at any
 * name is never followed); its name goes to buf. Returns the fd, or -1 (reported). */
static int temp_for(const char *out, const char *ext, char *buf, size_t len) {
    if ((size_t)snprintf(buf, len, "%s.XXXXXX%s", out, ext) >= len) {
        cli_fail("output name too long: %s", out);
        return -1;
    }
    int fd = mkstemps(buf, (int)strlen(ext));
    if (fd < 0) {
        cli_fail("cannot create a temporary file next to %s: %s", out, strerror(errno));
        return -1;
    }
    mode_t um = umask(0);
    umask(um);
    fchmod(fd, 0666 & ~um); /* what fopen(out, "w") would have given */
    return fd;
}

/* Writes the SVG to a new temporary next to `out`, whose name goes to tmp. */
static int write_svg(const char *out, char *tmp, size_t tmp_len, series *const *sel, int nsel, double width,
                     double panel_h) {
    int fd = temp_for(out, ".svg", tmp, tmp_len);
    if (fd < 0) return 1;
    const char *path = tmp;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        return cli_fail("cannot write %s: %s", path, strerror(errno));
    }
    double h = panel_h * nsel;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
            width, h, width, h);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#fafafa\"/>\n");
    for (int i = 0; i < nsel; i++) draw_panel(f, sel[i], i, panel_h * i, width, panel_h);
    fprintf(f, "</svg>\n");
    if (ferror(f) | (fclose(f) != 0)) return cli_fail("error writing %s", path);
    return 0;
}

/* Runs argv; returns its exit status, or -1 when the program is not installed. */
static int run_tool(char *const *argv) {
    pid_t pid;
    if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0) return -1;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static int svg_to_png(const char *svg, const char *png) {
    char *rsvg[] = {"rsvg-convert", "-b", "white", "-o", (char *)png, (char *)svg, NULL};
    int rc = run_tool(rsvg);
    if (rc == -1) {
        char *im[] = {"convert", (char *)svg, (char *)png, NULL};
        rc = run_tool(im);
    }
    if (rc == -1)
        return cli_fail("PNG output needs rsvg-convert (Debian: apt install librsvg2-bin) or ImageMagick's convert; "
                        "neither is installed. Write an SVG instead: -o curves.svg");
    if (rc != 0) return cli_fail("converting %s to %s failed (exit %d)", svg, png, rc);
    return 0;
}

int cli_plot(int argc, char **argv) {
    const char *path = NULL, *out = "curves.svg", *tags = NULL;
    double width = 800, panel_h = 280;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        bool missing = false;
        if (cli_opt(argc, argv, &i, "-o", &v, &missing) || cli_opt(argc, argv, &i, "--output", &v, &missing)) {
            if (missing) return cli_usage_error("plot", "-o needs a file name");
            out = v;
        } else if (cli_opt(argc, argv, &i, "--tags", &v, &missing)) {
            if (missing) return cli_usage_error("plot", "--tags needs a comma-separated list");
            tags = v;
        } else if (cli_opt(argc, argv, &i, "--width", &v, &missing)) {
            if (missing || !cli_parse_double(v, &width) || width < 200 || width > 10000)
                return cli_usage_error("plot", "--width needs a number of pixels in [200, 10000]");
        } else if (cli_opt(argc, argv, &i, "--panel-height", &v, &missing)) {
            if (missing || !cli_parse_double(v, &panel_h) || panel_h < 120 || panel_h > 5000)
                return cli_usage_error("plot", "--panel-height needs a number of pixels in [120, 5000]");
        } else {
            int rc = cli_other_arg("plot", plot_help, argv[i], &path);
            if (rc >= 0) return rc;
        }
    }
    if (!path) return cli_usage_error("plot", "missing <dir|file>");
    size_t ol = strlen(out);
    bool png = ol > 4 && !strcasecmp(out + ol - 4, ".png");
    char **files;
    int nfiles, damaged = 0, rc = 0;
    if (cli_event_files(path, &files, &nfiles) != 0) return 1;
    plot_data d = {NULL, 0, 0, false};
    for (int i = 0; i < nfiles; i++) cli_read_scalars(files[i], collect, &d, &damaged);
    cli_free_list(files, nfiles);
    char **want = NULL;
    int nwant = 0;
    series *sel[64];
    int nsel = 0;
    if (d.oom) {
        rc = cli_fail("out of memory reading the event files");
        goto done;
    }
    if (tags) {
        if (!(want = cli_split_list(tags, &nwant))) {
            rc = cli_fail("out of memory");
            goto done;
        }
        for (int i = 0; i < nwant && nsel < 64; i++) {
            series *s = find_series(&d, want[i], strlen(want[i]), false);
            if (!s || s->n == 0) fprintf(stderr, "vigil: no scalar '%s' in %s (skipped)\n", want[i], path);
            else sel[nsel++] = s;
        }
    } else {
        const char *defaults[] = {"loss", "accuracy"};
        for (int i = 0; i < 2; i++) {
            series *s = find_series(&d, defaults[i], strlen(defaults[i]), false);
            if (s && s->n) sel[nsel++] = s;
        }
        if (nsel == 0) /* neither: every scalar tag, in the order first seen */
            for (int i = 0; i < d.n && nsel < 64; i++)
                if (d.s[i].n) sel[nsel++] = &d.s[i];
    }
    if (nsel == 0) {
        rc = cli_fail("%s: no scalar summaries to plot%s", path, tags ? " for these tags" : "");
        goto done;
    }
    for (int i = 0; i < nsel; i++) sort_series(sel[i]);
    /* every file goes to a new temporary (mkstemps) renamed over `out`: a symlink
     * planted at a temporary's name is never followed, one at `out` is replaced */
    char tmp[4200] = "", tmp_png[4200] = "";
    rc = write_svg(out, tmp, sizeof tmp, sel, nsel, width, panel_h);
    if (rc == 0 && png) {
        int fd = temp_for(out, ".png", tmp_png, sizeof tmp_png);
        if (fd < 0) rc = 1;
        else close(fd);
        if (rc == 0) rc = svg_to_png(tmp, tmp_png);
    }
    char *result = png ? tmp_png : tmp;
    if (rc == 0 && rename(result, out) != 0) rc = cli_fail("cannot rename %s to %s: %s", result, out, strerror(errno));
    if (rc == 0) result[0] = 0; /* renamed: nothing left to remove */
    if (tmp[0]) unlink(tmp);
    if (tmp_png[0]) unlink(tmp_png);
    if (rc == 0) {
        fprintf(stderr, "vigil: wrote %s (", out);
        for (int i = 0; i < nsel; i++) fprintf(stderr, "%s%s", i ? ", " : "", sel[i]->tag);
        fprintf(stderr, ")\n");
    }
done:
    for (int i = 0; i < d.n; i++) {
        free(d.s[i].tag);
        free(d.s[i].step);
        free(d.s[i].value);
    }
    free(d.s);
    cli_free_list(want, nwant);
    return rc;
}
