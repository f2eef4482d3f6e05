/* bench_saver.c - checkpoint save and restore throughput against the disk's own speed.
 *
 * For each size (default 100 MB and 1 GB of float32 variables, split into 8 variables
 * initialised uniformly at random, in a finalized graph as in training):
 *   save_mbps      vg_saver_save (SaveV2 + .meta + `checkpoint`, all fsync'ed) MB/s
 *   dd_write_mbps  `dd if=/dev/zero of=F bs=1M count=N conv=fsync` MB/s, run right after
 *   restore_mbps   vg_saver_restore MB/s, page cache dropped before (cold) when possible
 *   read_mbps      `dd if=<the .data file> of=/dev/null bs=1M` MB/s, same cache state
 *   save_ratio, restore_ratio: medians of the per-repetition ratios save/dd_write and
 *                  restore/read (each pair runs back to back, so a busy disk or CPU
 *                  affects both sides of a ratio alike)
 * Speeds are medians over `reps` repetitions. Cold reads need root (`echo 3 >
 * /proc/sys/vm/drop_caches`); when that fails both reads are warm and "cold" is false.
 * MB = 10^6 bytes. Prints one JSON line.
 * Usage: bench_saver [dir=/tmp] [reps=3] [sizes_mb=100,1000] */
#include "bench_util.h"
#include "vigil/vigil.h"
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what, const vg_status *st) {
    fprintf(stderr, "bench_saver: %s: %s\n", what, st ? st->msg : "");
    exit(1);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) { return remove(p); }

/* sync + drop the page cache; false when not permitted. */
static bool drop_caches(void) {
    sync();
    FILE *f = fopen("/proc/sys/vm/drop_caches", "w");
    if (!f) return false;
    bool ok = fputs("3\n", f) >= 0;
    ok = fclose(f) == 0 && ok;
    return ok;
}

static double run_secs(const char *cmd) {
    double t = now_s();
    if (system(cmd) != 0) {
        fprintf(stderr, "bench_saver: command failed: %s\n", cmd);
        exit(1);
    }
    return now_s() - t;
}

typedef struct result {
    double mb, save, dd_write, restore, read, save_ratio, restore_ratio;
    bool cold;
} result;

static result bench_size(const char *dir, int64_t mb, int reps) {
    enum { NVARS = 8 };
    vg_status st;
    vg_graph *g = vg_graph_new();
    int64_t total = mb * 1000000 / 4, per = total / NVARS;
    for (int i = 0; i < NVARS; i++) {
        char name[32];
        snprintf(name, sizeof name, "layer%d/kernel", i);
        vg_get_variable(g, name, VG_FLOAT, &per, 1, vg_init_random_uniform(-1, 1, i + 1), VG_VAR_TRAINABLE);
    }
    vg_op *init = vg_global_variables_initializer(g);
    vg_saver_options so = {0};
    so.max_to_keep = 1;
    vg_saver *saver = vg_saver_new(g, &so, &st);
    if (!saver) die("saver", &st);
    vg_session *sess = vg_session_new(g, NULL, &st);
    if (!sess || vg_session_run_targets(sess, &init, 1, &st)) die("init", &st);
    vg_graph_finalize(g);
    double bytes = (double)per * NVARS * 4;
    double *sv = calloc((size_t)reps, sizeof(double)), *dw = calloc((size_t)reps, sizeof(double));
    double *rs = calloc((size_t)reps, sizeof(double)), *rd = calloc((size_t)reps, sizeof(double));
    char prefix[600], path[700], cmd[1600], ddfile[600], data[800];
    snprintf(prefix, sizeof prefix, "%s/model.ckpt", dir);
    snprintf(ddfile, sizeof ddfile, "%s/dd.out", dir);
    bool cold = true;
    for (int r = 0; r < reps; r++) {
        drop_caches();
        double t = now_s();
        if (vg_saver_save(saver, sess, prefix, r, path, sizeof path, &st)) die("save", &st);
        sv[r] = bytes / 1e6 / (now_s() - t);
        snprintf(cmd, sizeof cmd, "dd if=/dev/zero of=%s bs=1M count=%lld conv=fsync status=none", ddfile,
                 (long long)(bytes / 1048576.0 + 0.5));
        drop_caches();
        dw[r] = (double)(long long)(bytes / 1048576.0 + 0.5) * 1048576.0 / 1e6 / run_secs(cmd);
        unlink(ddfile);
        cold = drop_caches() && cold;
        t = now_s();
        if (vg_saver_restore(saver, sess, path, &st)) die("restore", &st);
        rs[r] = bytes / 1e6 / (now_s() - t);
        snprintf(data, sizeof data, "%s.data-00000-of-00001", path);
        snprintf(cmd, sizeof cmd, "dd if=%s of=/dev/null bs=1M status=none", data);
        cold = drop_caches() && cold;
        rd[r] = bytes / 1e6 / run_secs(cmd);
    }
    double *q1 = calloc((size_t)reps, sizeof(double)), *q2 = calloc((size_t)reps, sizeof(double));
    for (int r = 0; r < reps; r++) {
        q1[r] = sv[r] / dw[r];
        q2[r] = rs[r] / rd[r];
    }
    result res = {bytes / 1e6,      median(sv, reps), median(dw, reps), median(rs, reps),
                  median(rd, reps), median(q1, reps), median(q2, reps), cold};
    free(q1);
    free(q2);
    free(sv);
    free(dw);
    free(rs);
    free(rd);
    vg_session_free(sess);
    vg_saver_free(saver);
    vg_graph_free(g);
    return res;
}

int main(int argc, char **argv) {
    const char *base = argc > 1 ? argv[1] : "/tmp";
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    const char *sizes = argc > 3 ? argv[3] : "100,1000";
    char dir[512];
    snprintf(dir, sizeof dir, "%s/vg_bench_saver_XXXXXX", base);
    if (!mkdtemp(dir)) die("mkdtemp", NULL);
    if (reps < 1) reps = 1;
    printf("{\"bench\":\"saver\",\"unit\":\"MB/s\",\"reps\":%d,\"results\":[", reps);
    int k = 0;
    for (const char *p = sizes; *p;) {
        int64_t mb = atoll(p);
        result r = bench_size(dir, mb, reps);
        printf("%s{\"mb\":%.0f,\"save_mbps\":%.1f,\"dd_write_mbps\":%.1f,\"save_ratio\":%.3f,"
               "\"restore_mbps\":%.1f,\"read_mbps\":%.1f,\"restore_ratio\":%.3f,\"cold_read\":%s}",
               k++ ? "," : "", r.mb, r.save, r.dd_write, r.save_ratio, r.restore, r.read, r.restore_ratio,
               r.cold ? "true" : "false");
        fflush(stdout);
        const char *comma = strchr(p, ',');
        if (!comma) break;
        p = comma + 1;
    }
    printf("]}\n");
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
