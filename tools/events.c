/*
 * events.c - `vigil events <dir|file>`: the scalar summaries of TensorFlow event files
 * as TSV (step, wall_time, tag, value), and the event-file scanning that `vigil plot`
 * shares. Records are read with vigil's event-file reader (vigil/events.h): a corrupt record is
 * reported on stderr with its file and offset and skipped, a torn last record (a writer
 * killed mid-write) is reported and ends that file; nothing in a damaged file crashes
 * the reader.
 */
#include "cli.h"
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *events_help =
    "usage: vigil events <dir|file> [--tags a,b]\n"
    "\n"
    "Prints every scalar summary as TSV with the header line\n"
    "  step<TAB>wall_time<TAB>tag<TAB>value\n"
    "For a directory, all files in it whose name contains 'tfevents' are read, in name\n"
    "(= creation time) order. Events without a step field have step 0.\n"
    "  --tags a,b   only these tags\n"
    "Damaged records are reported on stderr (file and byte offset) and skipped. Exit\n"
    "status 0 when every file could be opened (damaged ones included), 1 otherwise.\n";

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int cli_event_files(const char *path, char ***files, int *n) {
    *files = NULL;
    *n = 0;
    struct stat sb;
    if (stat(path, &sb) != 0) return cli_fail("%s: %s", path, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) {
        char **v = malloc(sizeof *v);
        if (!v || !(v[0] = strdup(path))) {
            free(v);
            return cli_fail("out of memory");
        }
        *files = v;
        *n = 1;
        return 0;
    }
    DIR *d = opendir(path);
    if (!d) return cli_fail("%s: %s", path, strerror(errno));
    int cap = 0;
    char **v = NULL;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, "tfevents")) continue;
        char full[4200];
        snprintf(full, sizeof full, "%s/%s", path, e->d_name);
        if (stat(full, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            char **nv = realloc(v, sizeof *v * (size_t)cap);
            if (!nv) break;
            v = nv;
        }
        if (!(v[*n] = strdup(full))) break;
        (*n)++;
    }
    closedir(d);
    if (*n == 0) {
        free(v);
        return cli_fail("%s: no event files (events.out.tfevents.*) in this directory", path);
    }
    qsort(v, (size_t)*n, sizeof *v, cmp_str);
    *files = v;
    return 0;
}

static void emit_summary(const char *file, const vg_event *ev, cli_scalar_fn fn, void *payload, int *damaged) {
    vg_summary_iter it;
    vg_summary_iter_init(&it, ev->payload, ev->payload_len);
    for (;;) {
        vg_summary_value v;
        vg_status st;
        vg_code c = vg_summary_iter_next(&it, &v, &st);
        if (c == VG_OUT_OF_RANGE) break;
        if (c != VG_OK) {
            fflush(stdout);
            fprintf(stderr, "vigil: %s: malformed summary in the record at offset %llu: %s (skipped)\n", file,
                    (unsigned long long)ev->offset, st.msg);
            (*damaged)++;
            break;
        }
        if (v.has_scalar) fn(payload, file, ev->step, ev->wall_time, v.tag, v.tag_len, v.scalar);
    }
}

int cli_read_scalars(const char *file, cli_scalar_fn fn, void *payload, int *damaged) {
    vg_status st;
    vg_event_reader *r = vg_event_reader_open(file, &st);
    if (!r) return cli_fail_status(&st);
    for (;;) {
        uint64_t off = vg_event_reader_offset(r);
        vg_event ev;
        vg_code c = vg_event_reader_next(r, &ev, &st);
        if (c == VG_OUT_OF_RANGE) break;
        vg_event_damage dmg = c == VG_DATA_LOSS ? vg_event_reader_damage(r) : VG_EVENT_DAMAGE_NONE;
        if (dmg == VG_EVENT_DAMAGE_TORN) {
            fflush(stdout);
            fprintf(stderr, "vigil: %s: torn record at offset %llu (the file ends inside it; the writer was "
                            "probably killed): rest of the file skipped\n", file, (unsigned long long)off);
            (*damaged)++;
            break;
        }
        if (dmg == VG_EVENT_DAMAGE_CORRUPT) {
            fflush(stdout);
            fprintf(stderr, "vigil: %s: skipped\n", st.msg); /* names the offset and the file */
            (*damaged)++;
            c = vg_event_reader_skip_corrupt(r, &st);
            if (c == VG_OUT_OF_RANGE) break;
            if (c != VG_OK) {
                fprintf(stderr, "vigil: %s: %s: %s\n", file, vg_code_name(st.code), st.msg);
                break;
            }
            continue;
        }
        if (dmg == VG_EVENT_DAMAGE_MALFORMED) {
            fflush(stdout);
            fprintf(stderr, "vigil: %s: record at offset %llu is not an Event (%s): skipped\n", file,
                    (unsigned long long)off, st.msg);
            (*damaged)++;
            continue;
        }
        if (c != VG_OK) {
            fflush(stdout);
            fprintf(stderr, "vigil: %s: %s: %s\n", file, vg_code_name(st.code), st.msg);
            (*damaged)++;
            break;
        }
        if (ev.kind == VG_EVENT_SUMMARY) emit_summary(file, &ev, fn, payload, damaged);
        else if (ev.kind == VG_EVENT_SESSION_LOG && ev.session_log_status == VG_SESSION_LOG_START)
            fn(payload, file, ev.step, ev.wall_time, NULL, 0, 0);
    }
    vg_event_reader_close(r);
    return 0;
}

typedef struct tsv_ctx {
    char **tags;
    int ntags;
} tsv_ctx;

static void print_tsv(void *payload, const char *file, int64_t step, double wall_time, const char *tag,
                      size_t tag_len, double value) {
    tsv_ctx *c = payload;
    if (!tag) return;
    if (c->ntags && !cli_list_has(c->tags, c->ntags, tag, tag_len)) return;
    printf("%lld\t%.6f\t", (long long)step, wall_time);
    cli_put_escaped(stdout, tag, tag_len); /* a tag's tab or newline would forge a row */
    printf("\t%.9g\n", value);
}

int cli_events(int argc, char **argv) {
    const char *path = NULL, *tags = NULL;
    const cli_optdef opts[] = {{"--tags", "a comma-separated list", &tags, NULL}};
    int prc = cli_parse_opts(argc, argv, "events", events_help, opts, 1, &path, "<dir|file>");
    if (prc >= 0) return prc;
    tsv_ctx c = {NULL, 0};
    if (tags && !(c.tags = cli_split_list(tags, &c.ntags))) return cli_fail("out of memory");
    char **files;
    int nfiles, rc = 0, damaged = 0;
    if (cli_event_files(path, &files, &nfiles) != 0) {
        cli_free_list(c.tags, c.ntags);
        return 1;
    }
    printf("step\twall_time\ttag\tvalue\n");
    for (int i = 0; i < nfiles; i++)
        if (cli_read_scalars(files[i], print_tsv, &c, &damaged) != 0) rc = 1;
    fflush(stdout);
    if (damaged) fprintf(stderr, "vigil: %d damaged record(s) reported; the rest was printed\n", damaged);
    cli_free_list(files, nfiles);
    cli_free_list(c.tags, c.ntags);
    return rc;
}
