/* bench_fmnist.c - end-to-end `vigil train` on Fashion-MNIST against the PyTorch peer
 * (bench/peers/torch_fmnist.py), interleaved round by round in one run:
 *   - vigil: process wall time of `vigil train --epochs E` (start-up, data loading,
 *     training, final checkpoint and test evaluation included), time to the first step,
 *     samples/s after the first step (whole input pipeline and hooks included), peak RSS
 *     (wait4), test accuracy; once with the peer's optimizer (mlp: SGD 0.1, cnn: Adam
 *     1e-3, constant rate) and once with vigil's defaults;
 *   - peer: median step time of its timing phase (pre-sliced batches, compute only) as
 *     samples/s, and its peak RSS.
 * The vigil binary is looked up next to this one (the build directory).
 *
 * Usage: bench_fmnist [--model mlp|cnn] [--epochs E] [--threads N] [--rounds R] [--no-peer]
 * Prints one JSON line with the medians over the rounds. */
#include "bench_util.h"
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct run_result {
    double wall_s, first_step_s, samples_per_s, rss_mb, test_acc;
    bool ok;
} run_result;

/* Runs argv with stdout+stderr into a temp file; fills wall time and peak RSS; the
 * output is left in *text (malloc'd). */
static int run_capture(char *const *argv, double *wall, double *rss_mb, char **text) {
    char path[] = "/tmp/bench_fmnist_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {}
    *wall = now_s() - t0;
    *rss_mb = ru.ru_maxrss / 1024.0;
    off_t len = lseek(fd, 0, SEEK_END);
    *text = calloc(1, (size_t)(len > 0 ? len : 0) + 1);
    if (*text && len > 0 && pread(fd, *text, (size_t)len, 0) < 0) (*text)[0] = 0;
    close(fd);
    unlink(path);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static double number_after(const char *text, const char *key) {
    const char *p = text ? strstr(text, key) : NULL;
    return p ? atof(p + strlen(key)) : -1;
}

static run_result run_vigil(const char *vigil, const char *model, int epochs, int threads, bool peer_opt) {
    run_result r = {0};
    char ep[32], th[32], dir[] = "/tmp/bench_fmnist_ckpt_XXXXXX";
    if (!mkdtemp(dir)) return r;
    snprintf(ep, sizeof ep, "%d", epochs);
    snprintf(th, sizeof th, "%d", threads);
    bool cnn = !strcmp(model, "cnn");
    char *argv[32] = {(char *)vigil, "train", "--model", (char *)model, "--epochs", ep, "--threads", th,
                      "--checkpoint-dir", dir, "--log-step-count-steps", "0", NULL};
    int n = 12;
    if (peer_opt) {
        argv[n++] = "--optimizer";
        argv[n++] = cnn ? "adam" : "sgd";
        argv[n++] = "--lr";
        argv[n++] = cnn ? "0.001" : "0.1";
        argv[n++] = "--lr-decay";
        argv[n++] = "none";
    }
    argv[n] = NULL;
    char *text = NULL;
    int rc = run_capture(argv, &r.wall_s, &r.rss_mb, &text);
    r.first_step_s = number_after(text, "first step done ");
    const char *p = text ? strstr(text, "steps/s (") : NULL;
    r.samples_per_s = p ? atof(p + 9) : -1;
    r.test_acc = number_after(text, "test_accuracy=");
    r.ok = rc == 0 && r.samples_per_s > 0;
    if (!r.ok) fprintf(stderr, "vigil failed (exit %d):\n%s\n", rc, text ? text : "");
    free(text);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return r;
}

#include "torch_peer.h"

static const char *peer_path(const char *self_dir) {
    static char buf[2048];
    const char *e = getenv("VG_TORCH_PEER");
    if (e) return e;
    (void)self_dir;
    snprintf(buf, sizeof buf, "%s/bench/peers/torch_fmnist.py", VG_SRCDIR);
    if (access(buf, R_OK) == 0) return buf;
    return NULL;
}

static run_result run_peer(const char *peer, const char *model, int threads) {
    run_result r = {0};
    char th[32];
    snprintf(th, sizeof th, "%d", threads);
    char *argv[] = {(char *)bench_python(), (char *)peer, "--model", (char *)model, "--threads", th,
                    "--steps", !strcmp(model, "cnn") ? "60" : "1000", "--epochs", "0", NULL};
    char *text = NULL;
    int rc = run_capture(argv, &r.wall_s, &r.rss_mb, &text);
    r.samples_per_s = number_after(text, "\"samples_per_s\": ");
    double rss = number_after(text, "\"peak_rss_mb\": ");
    if (rss > 0) r.rss_mb = rss;
    r.ok = rc == 0 && r.samples_per_s > 0;
    if (!r.ok) fprintf(stderr, "peer failed (exit %d)\n", rc);
    free(text);
    return r;
}

int main(int argc, char **argv) {
    const char *model = "mlp";
    int epochs = 1, threads = 1, rounds = 3;
    bool peer = true;
    const bench_arg args[] = {{"--model", 's', &model},
                              {"--epochs", 'i', &epochs},
                              {"--threads", 'i', &threads},
                              {"--rounds", 'i', &rounds},
                              {"--no-peer", 'f', &peer}};
    for (int i = 1; i < argc; i++) bench_match_arg(argc, argv, &i, args, (int)(sizeof args / sizeof args[0]));
    if (rounds < 1) rounds = 1;
    if (rounds > 16) rounds = 16;
    char self[2048], vigil[2100];
    snprintf(self, sizeof self, "%s", argv[0]);
    char *dir = dirname(self);
    snprintf(vigil, sizeof vigil, "%s/vigil", dir);
    if (access(vigil, X_OK) != 0) {
        fprintf(stderr, "bench_fmnist: %s not found (build with -DVIGIL_TOOLS=ON)\n", vigil);
        return 1;
    }
    const char *peer_status = "disabled (--no-peer)";
    if (peer && !bench_torch_probe(&peer_status)) peer = false;
    const char *pp = peer ? peer_path(dir) : NULL;
    double vs[16], vw[16], vf[16], vr[16], va[16], ds[16], dw[16], da[16], ps[16], pr[16];
    int nv = 0, nd = 0, np = 0;
    for (int r = 0; r < rounds; r++) {
        run_result a = run_vigil(vigil, model, epochs, threads, true);
        if (a.ok) {
            vs[nv] = a.samples_per_s, vw[nv] = a.wall_s, vf[nv] = a.first_step_s, vr[nv] = a.rss_mb;
            va[nv++] = a.test_acc;
        }
        run_result b = run_vigil(vigil, model, epochs, threads, false);
        if (b.ok) ds[nd] = b.samples_per_s, dw[nd] = b.wall_s, da[nd++] = b.test_acc;
        run_result c = pp ? run_peer(pp, model, threads) : (run_result){0};
        if (c.ok) ps[np] = c.samples_per_s, pr[np++] = c.rss_mb;
        fprintf(stderr, "round %d: vigil(peer opt) %.0f samples/s wall %.2f s first step %.3f s rss %.1f MB acc %.4f | "
                        "vigil(defaults) %.0f samples/s acc %.4f | peer %.0f samples/s rss %.1f MB\n",
                r, a.samples_per_s, a.wall_s, a.first_step_s, a.rss_mb, a.test_acc, b.samples_per_s, b.test_acc,
                c.samples_per_s, c.rss_mb);
    }
    double pm = median(ps, np), vm = median(vs, nv);
    printf("{\"bench\":\"fmnist_train\",\"model\":\"%s\",\"epochs\":%d,\"threads\":%d,\"rounds\":%d,"
           "\"vigil_peer_opt\":{\"samples_per_s\":%.1f,\"wall_s\":%.3f,\"first_step_s\":%.3f,\"peak_rss_mb\":%.1f,"
           "\"test_acc\":%.4f},\"vigil_defaults\":{\"samples_per_s\":%.1f,\"wall_s\":%.3f,\"test_acc\":%.4f},"
           "\"peer\":{\"samples_per_s\":%.1f,\"peak_rss_mb\":%.1f,\"script\":\"%s\",\"status\":\"%s\"},"
           "\"ratio_samples_per_s\":%.3f}\n",
           model, epochs, threads, rounds, vm, median(vw, nv), median(vf, nv), median(vr, nv), median(va, nv),
           median(ds, nd), median(dw, nd), median(da, nd), pm, median(pr, np), pp ? pp : "unavailable",
           peer_status, pm > 0 && vm > 0 ? vm / pm : -1.0);
    return nv == rounds ? 0 : 1;
}
