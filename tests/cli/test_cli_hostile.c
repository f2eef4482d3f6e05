/* test_cli_hostile.c - issue 9 regressions at the command line, on a tiny generated
 * Fashion-MNIST-shaped data set (IDX files written here, so the runs take well under a
 * second each):
 *   #1  an unparsable `checkpoint` file stops `vigil train` (DATA_LOSS naming it) and
 *       leaves the old checkpoints alone; `vigil ckpt DIR` names the real cause
 *   #3  absurd --epochs and a global_step of 2^62 are INVALID_ARGUMENT
 *   #4  NaN loss: exit 1 by default, no NaN checkpoint written; --on-nan stop;
 *       `vigil ckpt --stats` counts NaN/Inf
 *   #5  50 SIGKILLs leave no temporaries and no orphaned checkpoints behind
 *   #6  zero test images / a test label out of range / bad image dims name the file
 *   #7  a non-UTF-8 summary tag still gives well-formed SVG from `vigil plot`
 *   #8  a FIFO named checkpoint and /dev/zero end at once
 *   #11 a second trainer on a locked directory fails at once naming the holder's pid
 * Skips (passes) when the vigil binary was not built. */
#include "io/io.h"
#include "test_util.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef VG_BINDIR
#define VG_BINDIR "."
#endif

#include "cli_test_util.h"

static void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* IDX u8 file: dims (1 or 3), data generated: images = a class-dependent pattern plus
 * noise, labels = i % 10 (label_override >= 0 replaces record 3's label). */
static void write_idx(const char *path, int ndims, const uint32_t *dims, bool labels, int label_override) {
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); return; }
    uint8_t h[16] = {0, 0, 8, (uint8_t)ndims};
    for (int i = 0; i < ndims; i++) put_be32(h + 4 + 4 * i, dims[i]);
    fwrite(h, 1, 4 + 4 * (size_t)ndims, f);
    size_t rec = 1;
    for (int i = 1; i < ndims; i++) rec *= dims[i];
    for (uint32_t r = 0; r < dims[0]; r++) {
        if (labels) {
            uint8_t l = (uint8_t)(r % 10);
            if ((int)r == 3 && label_override >= 0) l = (uint8_t)label_override;
            fputc(l, f);
        } else {
            for (size_t k = 0; k < rec; k++) fputc((int)((k % 10 == r % 10 ? 200 : 20) + (k * 7 + r) % 17), f);
        }
    }
    fclose(f);
}

/* A data directory: n_train / n_test images of rows x cols, test label 3 overridden
 * when bad_label >= 0. */
static void make_data(const char *dir, uint32_t n_train, uint32_t n_test, uint32_t rows, uint32_t cols,
                      int bad_label) {
    mkdir(dir, 0755);
    char p[600];
    uint32_t d3[3] = {n_train, rows, cols}, d1[1] = {n_train};
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte", dir);
    write_idx(p, 3, d3, false, -1);
    snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte", dir);
    write_idx(p, 1, d1, true, -1);
    d3[0] = d1[0] = n_test;
    snprintf(p, sizeof p, "%s/t10k-images-idx3-ubyte", dir);
    write_idx(p, 3, d3, false, -1);
    snprintf(p, sizeof p, "%s/t10k-labels-idx1-ubyte", dir);
    write_idx(p, 1, d1, true, bad_label);
}

static char data_dir[300];

#define TINY(dir) "train", "--data-dir", data_dir, "--checkpoint-dir", dir, "--batch-size", "32", "--epochs", "2", \
    "--save-summaries-steps", "0", "--log-step-count-steps", "0", "--threads", "1"

static bool file_in(const char *dir, const char *name) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct stat sb;
    return stat(p, &sb) == 0;
}

static void sub(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", tmpdir, name); }

/* ---- #1 ---- */
static void test_cli_hostile__bad_state_file_refuses_to_start_over(void) {
    char dir[300], state[400], idx[400];
    sub(dir, sizeof dir, "state");
    const char *a1[] = {TINY(dir), "--steps", "8", NULL};
    int rc = run_vigil(a1, "s1.out", "s1.err");
    CHECK_EQ_INT(rc, 0);
    if (rc) dump("s1.err");
    CHECK(file_in(dir, "model.ckpt-8.index"));
    snprintf(state, sizeof state, "%s/checkpoint", dir);
    snprintf(idx, sizeof idx, "%s/model.ckpt-8.index", dir);
    struct stat before, after;
    stat(idx, &before);
    /* the reproduction: one NUL byte after the path */
    FILE *f = fopen(state, "wb");
    fwrite("model_checkpoint_path: \"model.ckpt-8\"\0\n", 1, 39, f);
    fclose(f);
    const char *a2[] = {TINY(dir), "--steps", "16", NULL};
    rc = run_vigil(a2, "s2.out", "s2.err");
    CHECK_EQ_INT(rc, 1);
    const char *err = slurp("s2.err");
    CHECK_STR_CONTAINS(err, "DATA_LOSS");
    CHECK_STR_CONTAINS(err, state);
    CHECK(!file_in(dir, "model.ckpt-16.index"));
    struct stat ssb;
    CHECK(stat(state, &ssb) == 0 && ssb.st_size == 39); /* the state file was not replaced */
    stat(idx, &after);
    CHECK(before.st_mtime == after.st_mtime && before.st_size == after.st_size);
    /* vigil ckpt DIR names the real cause */
    const char *c1[] = {"ckpt", dir, NULL};
    CHECK_EQ_INT(run_vigil(c1, "c1.out", "c1.err"), 1);
    CHECK_STR_CONTAINS(slurp("c1.err"), "line 1: expected a field name");
    CHECK_STR_CONTAINS(slurp("c1.err"), state);
    /* no state file at all, .index present: resumes from the listing (WARNING) */
    unlink(state);
    rc = run_vigil(a2, "s3.out", "s3.err");
    CHECK_EQ_INT(rc, 0);
    if (rc) dump("s3.err");
    CHECK_STR_CONTAINS(slurp("s3.err"), "found by listing");
    CHECK_STR_CONTAINS(slurp("s3.err"), "at global step 8");
    CHECK(file_in(dir, "model.ckpt-16.index"));
}

/* ---- #3 ---- */
static void test_cli_hostile__absurd_numbers(void) {
    char dir[300];
    sub(dir, sizeof dir, "numbers");
    const char *e1[] = {"train", "--data-dir", data_dir, "--checkpoint-dir", dir, "--epochs", "4611686018427387904", NULL};
    CHECK_EQ_INT(run_vigil(e1, "n1.out", "n1.err"), 1);
    CHECK_STR_CONTAINS(slurp("n1.err"), "INVALID_ARGUMENT");
    CHECK_STR_CONTAINS(slurp("n1.err"), "--epochs 4611686018427387904 is too large");
    const char *e2[] = {"train", "--data-dir", data_dir, "--checkpoint-dir", dir, "--epochs", "1152921504606846977", NULL};
    CHECK_EQ_INT(run_vigil(e2, "n2.out", "n2.err"), 1);
    CHECK_STR_CONTAINS(slurp("n2.err"), "is too large");
    /* a checkpoint whose global_step is 2^62 */
    mkdir(dir, 0755);
    char prefix[400], state[400];
    snprintf(prefix, sizeof prefix, "%s/model.ckpt-5", dir);
    vg_status st;
    vg__bundle_writer *w = vg__bundle_writer_new(prefix, &st);
    int64_t big = (int64_t)1 << 62;
    CHECK_OK(vg__bundle_writer_add(w, "global_step", VG__DT_INT64, NULL, 0, &big, 8, &st), &st);
    CHECK_OK(vg__bundle_writer_finish(w, &st), &st);
    vg__bundle_writer_free(w);
    snprintf(state, sizeof state, "%s/checkpoint", dir);
    FILE *f = fopen(state, "w");
    fputs("model_checkpoint_path: \"model.ckpt-5\"\n", f);
    fclose(f);
    const char *a[] = {TINY(dir), NULL};
    CHECK_EQ_INT(run_vigil(a, "n3.out", "n3.err"), 1);
    CHECK_STR_CONTAINS(slurp("n3.err"), "global_step 4611686018427387904 is out of range");
}

/* ---- #4 ---- */
static int count_nan_rows(const char *out) {
    /* rows of `vigil ckpt --stats`: ... nan inf as the last two columns */
    int bad = 0;
    for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (*l == '#') continue;
        const char *e = strchr(l, '\n');
        size_t n = e ? (size_t)(e - l) : strlen(l);
        char row[512];
        if (n >= sizeof row) n = sizeof row - 1;
        memcpy(row, l, n);
        row[n] = 0;
        long long nan_c = 0, inf_c = 0;
        char *last = strrchr(row, ' ');
        if (!last) continue;
        inf_c = atoll(last + 1);
        *last = 0;
        while (last > row && last[-1] == ' ') *--last = 0;
        char *prev = strrchr(row, ' ');
        if (prev) nan_c = atoll(prev + 1);
        if (nan_c > 0 || inf_c > 0) bad++;
    }
    return bad;
}

static void test_cli_hostile__nan_loss(void) {
    char dir[300];
    sub(dir, sizeof dir, "nan");
    const char *a1[] = {TINY(dir), "--steps", "4", NULL};
    CHECK_EQ_INT(run_vigil(a1, "nan1.out", "nan1.err"), 0);
    /* lr 1e30 diverges within a few steps; checkpoints every step */
    const char *a2[] = {TINY(dir), "--lr", "1e30", "--save-checkpoint-steps", "1", NULL};
    int rc = run_vigil(a2, "nan2.out", "nan2.err");
    CHECK_EQ_INT(rc, 1);
    const char *err = slurp("nan2.err");
    CHECK(strstr(err, "NaN loss during training") || strstr(err, "refusing to write a checkpoint"));
    CHECK(strstr(slurp("nan2.out"), "test_accuracy=") == NULL);
    /* whatever was saved holds no NaN/Inf */
    const char *c[] = {"ckpt", dir, "--stats", NULL};
    CHECK_EQ_INT(run_vigil(c, "nan3.out", "nan3.err"), 0);
    CHECK_EQ_INT(count_nan_rows(slurp("nan3.out")), 0);
    /* --on-nan stop: ends cleanly, evaluates the last good checkpoint */
    const char *a3[] = {TINY(dir), "--lr", "1e30", "--save-checkpoint-steps", "1", "--on-nan", "stop", NULL};
    rc = run_vigil(a3, "nan4.out", "nan4.err");
    CHECK_EQ_INT(rc, 0);
    if (rc) dump("nan4.err");
    CHECK_STR_CONTAINS(slurp("nan4.out"), "test_accuracy=");
    CHECK_EQ_INT(run_vigil(c, "nan5.out", "nan5.err"), 0);
    CHECK_EQ_INT(count_nan_rows(slurp("nan5.out")), 0);
    const char *bad[] = {TINY(dir), "--on-nan", "maybe", NULL};
    CHECK_EQ_INT(run_vigil(bad, "nan6.out", "nan6.err"), 2);
    /* --stats counts NaN and Inf; min/max over the finite values */
    char prefix[400];
    cli_tmp_path(prefix, sizeof prefix, "nanstats");
    vg_status st;
    vg__bundle_writer *w = vg__bundle_writer_new(prefix, &st);
    float v[5] = {NAN, 1.0f, INFINITY, 2.0f, NAN};
    int64_t five = 5;
    CHECK_OK(vg__bundle_writer_add(w, "w", VG__DT_FLOAT, &five, 1, v, sizeof v, &st), &st);
    CHECK_OK(vg__bundle_writer_finish(w, &st), &st);
    vg__bundle_writer_free(w);
    const char *c2[] = {"ckpt", prefix, "--stats", NULL};
    CHECK_EQ_INT(run_vigil(c2, "nan7.out", "nan7.err"), 0);
    const char *out = slurp("nan7.out");
    CHECK_STR_CONTAINS(out, "nan");
    char want[256];
    snprintf(want, sizeof want, "  %14.7g  %14.7g  %14.7g  %10d  %10d", 1.0, 2.0, 1.5, 2, 1);
    CHECK_STR_CONTAINS(out, want);
}

/* ---- #6, #7 (dims) ---- */
static void test_cli_hostile__bad_test_sets(void) {
    char dir[300], bad[300];
    sub(dir, sizeof dir, "badsets");
    sub(bad, sizeof bad, "data_zero");
    make_data(bad, 256, 0, 28, 28, -1);
    const char *a1[] = {"train", "--data-dir", bad, "--checkpoint-dir", dir, "--steps", "2", NULL};
    CHECK_EQ_INT(run_vigil(a1, "b1.out", "b1.err"), 1);
    CHECK_STR_CONTAINS(slurp("b1.err"), "INVALID_ARGUMENT");
    CHECK_STR_CONTAINS(slurp("b1.err"), "t10k-images-idx3-ubyte: the file holds no images");
    CHECK(strstr(slurp("b1.out"), "test_accuracy=") == NULL);
    sub(bad, sizeof bad, "data_label");
    make_data(bad, 256, 20, 28, 28, 200);
    CHECK_EQ_INT(run_vigil(a1, "b2.out", "b2.err"), 1);
    CHECK_STR_CONTAINS(slurp("b2.err"), "t10k-labels-idx1-ubyte: record 3 has label 200");
    sub(bad, sizeof bad, "data_dims");
    make_data(bad, 256, 20, 27, 28, -1);
    CHECK_EQ_INT(run_vigil(a1, "b3.out", "b3.err"), 1);
    CHECK_STR_CONTAINS(slurp("b3.err"), "train-images-idx3-ubyte: images must be 28x28");
    sub(bad, sizeof bad, "data_empty");
    make_data(bad, 256, 20, 0, 0, -1);
    CHECK_EQ_INT(run_vigil(a1, "b4.out", "b4.err"), 1);
    CHECK_STR_CONTAINS(slurp("b4.err"), "train-images-idx3-ubyte: images must be 28x28");
    /* an IDX header lying about the count: DATA_LOSS naming the file, at once */
    sub(bad, sizeof bad, "data_liar");
    make_data(bad, 256, 20, 28, 28, -1);
    char p[400];
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte", bad);
    int fd = open(p, O_WRONLY);
    uint8_t cnt[4] = {0xff, 0xff, 0xff, 0xff};
    CHECK(pwrite(fd, cnt, 4, 4) == 4);
    close(fd);
    double t0 = tu_now_s();
    CHECK_EQ_INT(run_vigil(a1, "b5.out", "b5.err"), 1);
    CHECK(tu_now_s() - t0 < 20);
    CHECK_STR_CONTAINS(slurp("b5.err"), "DATA_LOSS");
    CHECK_STR_CONTAINS(slurp("b5.err"), "train-images-idx3-ubyte: IDX header at offset 4");
}

/* ---- #7 (plot) ---- */
static void test_cli_hostile__plot_non_utf8_tag(void) {
    char dir[300];
    sub(dir, sizeof dir, "plot");
    vg_status st;
    vg__event_writer *w = vg__event_writer_open(dir, NULL, &st);
    CHECK(w != NULL);
    if (!w) return;
    for (int step = 1; step <= 3; step++) {
        vg__pb_buf s;
        vg__pb_init(&s);
        vg__summary_add_scalar(&s, "bad\xff\xfe<tag>\x01", (float)step);
        vg__event ev = {0};
        ev.wall_time = 1.0 + step;
        ev.step = step;
        ev.kind = VG__EVENT_SUMMARY;
        ev.data = s.data;
        ev.len = s.len;
        CHECK_OK(vg__event_writer_write_event(w, &ev, &st), &st);
        vg__pb_free(&s);
    }
    vg__event_writer_close(w, &st);
    char svg[400];
    cli_tmp_path(svg, sizeof svg, "out.svg");
    const char *a[] = {"plot", dir, "-o", svg, NULL};
    int rc = run_vigil(a, "p.out", "p.err");
    CHECK_EQ_INT(rc, 0);
    if (rc) dump("p.err");
    const char *x = slurp("out.svg");
    CHECK(strstr(x, "\xff") == NULL && strstr(x, "\x01") == NULL);
    CHECK_STR_CONTAINS(x, "bad\xEF\xBF\xBD\xEF\xBF\xBD&lt;tag&gt;\xEF\xBF\xBD");
}

/* ---- #8 ---- */
static void test_cli_hostile__special_files(void) {
    double t0 = tu_now_s();
    const char *e[] = {"events", "/dev/zero", NULL};
    int rc = run_vigil(e, "e.out", "e.err");
    CHECK(rc != 0 && rc != -1);
    CHECK_STR_CONTAINS(slurp("e.err"), "not a regular file");
    char dir[300], fifo[400];
    sub(dir, sizeof dir, "fifo");
    mkdir(dir, 0755);
    snprintf(fifo, sizeof fifo, "%s/checkpoint", dir);
    CHECK(mkfifo(fifo, 0644) == 0);
    const char *c[] = {"ckpt", dir, NULL};
    CHECK_EQ_INT(run_vigil(c, "f1.out", "f1.err"), 1);
    CHECK_STR_CONTAINS(slurp("f1.err"), "FIFO");
    const char *t[] = {TINY(dir), NULL};
    CHECK_EQ_INT(run_vigil(t, "f2.out", "f2.err"), 1);
    CHECK_STR_CONTAINS(slurp("f2.err"), "FIFO");
    CHECK(tu_now_s() - t0 < 60);
}

/* ---- #11 ---- */
static void test_cli_hostile__second_trainer_fails_at_once(void) {
    char dir[300], pidfile[400];
    sub(dir, sizeof dir, "locked");
    mkdir(dir, 0755);
    /* this process holds the lock, as a running trainer would */
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    CHECK(flock(fd, LOCK_EX | LOCK_NB) == 0);
    snprintf(pidfile, sizeof pidfile, "%s/.vigil-train.pid", dir);
    FILE *f = fopen(pidfile, "w");
    fprintf(f, "%ld\n", (long)getpid());
    fclose(f);
    const char *a[] = {TINY(dir), "--steps", "4", NULL};
    double t0 = tu_now_s();
    CHECK_EQ_INT(run_vigil(a, "l1.out", "l1.err"), 1);
    CHECK(tu_now_s() - t0 < 20);
    char want[64];
    snprintf(want, sizeof want, "(pid %ld)", (long)getpid());
    const char *err = slurp("l1.err");
    CHECK_STR_CONTAINS(err, "FAILED_PRECONDITION");
    CHECK_STR_CONTAINS(err, dir);
    CHECK_STR_CONTAINS(err, want);
    CHECK(!file_in(dir, "checkpoint"));
    close(fd); /* released, as when the holder dies */
    int rc = run_vigil(a, "l2.out", "l2.err");
    CHECK_EQ_INT(rc, 0);
    if (rc) dump("l2.err");
    /* a holder killed by SIGKILL leaves no lock behind */
    pid_t child = fork();
    if (child == 0) {
        int cfd = open(dir, O_RDONLY | O_DIRECTORY);
        flock(cfd, LOCK_EX);
        pause();
        _exit(0);
    }
    usleep(100000);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    const char *b[] = {TINY(dir), "--steps", "8", NULL};
    CHECK_EQ_INT(run_vigil(b, "l3.out", "l3.err"), 0);
}

/* ---- #5: 50 SIGKILLs ---- */

/* Counts temporaries and checkpoints in dir that the state file does not list and that
 * are older than its newest entry. */
static long long leftovers(const char *dir, int *temps, int *orphans, int *listed_ok) {
    *temps = *orphans = 0;
    *listed_ok = 1;
    char state[400];
    snprintf(state, sizeof state, "%s/checkpoint", dir);
    vg__ckpt_state cs;
    vg_status st;
    if (vg__ckpt_state_read(state, &cs, &st) != VG_OK) {
        *listed_ok = 0;
        return -1;
    }
    long long newest = -1;
    const char *last = cs.n_all ? cs.all_paths[cs.n_all - 1] : cs.model_checkpoint_path;
    const char *dash = strrchr(last, '-');
    if (dash) newest = atoll(dash + 1);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strstr(e->d_name, ".tempstate")) (*temps)++;
        long long step;
        char rest[64];
        if (sscanf(e->d_name, "model.ckpt-%lld%63s", &step, rest) != 2 || strcmp(rest, ".index")) continue;
        char name[300];
        snprintf(name, sizeof name, "model.ckpt-%lld", step);
        bool listed = false;
        for (int i = 0; i < cs.n_all; i++) {
            const char *b = strrchr(cs.all_paths[i], '/');
            if (!strcmp(b ? b + 1 : cs.all_paths[i], name)) listed = true;
        }
        if (!listed && step < newest) (*orphans)++;
    }
    if (d) closedir(d);
    vg__ckpt_state_free(&cs);
    return newest;
}

static void test_cli_hostile__kill_loop_leaves_nothing_behind(void) {
    char dir[300];
    sub(dir, sizeof dir, "kill50");
    /* 512 images, batch 32: 16 steps per epoch; a checkpoint every step */
    const char *args[] = {TINY(dir), "--epochs", "1000", "--save-checkpoint-steps", "1", NULL};
    srand(12345u ^ (unsigned)getpid());
    int max_temps = 0, max_orphans = 0, killed = 0;
    for (int round = 0; round < 50; round++) {
        pid_t pid = spawn_vigil(args, "k.out", "k.err");
        CHECK(pid > 0);
        usleep((useconds_t)(150 + rand() % 400) * 1000);
        kill(pid, SIGKILL);
        int rc = wait_vigil(pid, 30);
        if (rc == 128 + SIGKILL) killed++;
        else if (rc != 0) {
            fprintf(stderr, "round %d: exit %d\n", round, rc);
            dump("k.err");
            CHECK(rc == 128 + SIGKILL || rc == 0);
            break;
        }
        int t, o, ok;
        leftovers(dir, &t, &o, &ok);
        if (t > max_temps) max_temps = t;
        if (o > max_orphans) max_orphans = o;
    }
    fprintf(stderr, "50 kills (%d during the run): at most %d temporaries and %d orphans between runs\n", killed,
            max_temps, max_orphans);
    /* a kill leaves at most the files of the save it interrupted; the next start removes
     * them, so nothing accumulates */
    CHECK(max_temps <= 3);
    CHECK(max_orphans <= 2);
    /* one more start cleans up and trains on */
    int t, o, ok;
    char steps[32];
    snprintf(steps, sizeof steps, "%lld", leftovers(dir, &t, &o, &ok) + 3);
    const char *fin[] = {TINY(dir), "--epochs", "1000", "--save-checkpoint-steps", "1", "--steps", steps, NULL};
    int rc = run_vigil(fin, "k2.out", "k2.err");
    CHECK_EQ_INT(rc, 0);
    if (rc) dump("k2.err");
    leftovers(dir, &t, &o, &ok);
    CHECK(ok);
    CHECK_EQ_INT(t, 0);
    CHECK_EQ_INT(o, 0);
    /* max_to_keep = 5: at most 5 checkpoints (+ one newer unlisted in flight: none now) */
    int nidx = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".index")) nidx++;
    if (d) closedir(d);
    CHECK(nidx <= 6);
}

static int setup(void) {
    make_data(cli_tmp_path(data_dir, sizeof data_dir, "data"), 512, 100, 28, 28, -1);
    return 0;
}

static const cli_case cases[] = {
    CLI_CASE(test_cli_hostile__bad_state_file_refuses_to_start_over),
    CLI_CASE(test_cli_hostile__absurd_numbers),
    CLI_CASE(test_cli_hostile__nan_loss),
    CLI_CASE(test_cli_hostile__bad_test_sets),
    CLI_CASE(test_cli_hostile__plot_non_utf8_tag),
    CLI_CASE(test_cli_hostile__special_files),
    CLI_CASE(test_cli_hostile__second_trainer_fails_at_once),
    CLI_CASE(test_cli_hostile__kill_loop_leaves_nothing_behind),
};
static const cli_suite suite = {.tag = "cli_hostile", .setup = setup};
CLI_TEST_MAIN(suite, cases)
