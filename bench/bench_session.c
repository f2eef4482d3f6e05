/* bench_session.c - session.run overhead (1 thread) and monitored-session overhead.
 *
 * Figures (medians over blocks of runs, microseconds per run):
 *   run_addv2_fetch_us   fetch of a 1-element AddV2 of two Consts
 *   run_assign_add_us    a run whose only target is AssignAdd on a scalar variable
 *   raw_train_us         raw session run of a trivial train op (global step += 1, loss fetched)
 *   monitored_train_us   the same through a MonitoredSession with the default hook set:
 *                        StopAtStep, StepCounter, NanTensor, LoggingTensor every 100,
 *                        CheckpointSaver every 600 s, SummarySaver every 100 steps
 *   monitored_overhead_us = monitored_train_us - raw_train_us
 * Peer: PyTorch's eager dispatch of a 1-element add (torch.add on two 1-element
 * tensors), measured in the same run when /usr/bin/python3 has torch.
 * Prints one JSON line. Usage: bench_session [blocks=41] [runs_per_block=2000] */
#include "bench_util.h"
#include "vigil/hooks.h"
#include "vigil/vigil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static void die(const char *what, vg_status *st) {
    fprintf(stderr, "bench_session: %s: %s\n", what, st->msg);
    exit(1);
}

#include "torch_peer.h"

static double torch_add_us(void) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s -c \"\n"
                    "import os\nos.environ['OMP_NUM_THREADS']='1'\n"
                    "import torch,time\ntorch.set_num_threads(1)\n"
                    "a=torch.ones(1);b=torch.ones(1)\nr=[]\n"
                    "for k in range(41):\n t=time.perf_counter()\n for i in range(2000): c=a+b\n"
                    " r.append((time.perf_counter()-t)/2000*1e6)\n"
                    "r.sort();print(r[len(r)//2])\n\" 2>/dev/null",
             bench_python());
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    double v = -1;
    if (fscanf(p, "%lf", &v) != 1) v = -1;
    pclose(p);
    return v;
}

int main(int argc, char **argv) {
    int blocks = argc > 1 ? atoi(argv[1]) : 41, per = argc > 2 ? atoi(argv[2]) : 2000;
    vg_status st;
    double *t = malloc(sizeof(double) * (size_t)blocks);
    vg_session_options so = {1, 1};

    /* 1. fetch of a 1-element AddV2 */
    vg_graph *g = vg_graph_new();
    int64_t one[1] = {1};
    float v1 = 1.0f, v2 = 2.0f;
    vg_output a = vg_const_array(g, VG_FLOAT, one, 1, &v1, "a");
    vg_output b = vg_const_array(g, VG_FLOAT, one, 1, &v2, "b");
    vg_output sum = vg_add(g, a, b, "sum");
    vg_output gs = vg_get_or_create_global_step(g);
    vg_output inc = vg_assign_add(g, gs, vg_const_i64(g, 1, NULL), "inc");
    vg_op *init = vg_global_variables_initializer(g);
    vg_session *s = vg_session_new(g, &so, &st);
    if (!s) die("session", &st);
    if (vg_session_run_targets(s, &init, 1, &st)) die("init", &st);
    for (int k = 0; k < blocks; k++) {
        double t0 = now_us();
        for (int i = 0; i < per; i++) {
            vg_tensor *o;
            vg_session_run(s, NULL, NULL, NULL, 0, &sum, &o, 1, NULL, 0, NULL, &st);
            vg_tensor_free(o);
        }
        t[k] = (now_us() - t0) / per;
    }
    double add_us = median(t, blocks);
    for (int k = 0; k < blocks; k++) {
        double t0 = now_us();
        for (int i = 0; i < per; i++) vg_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &inc.op, 1, NULL, &st);
        t[k] = (now_us() - t0) / per;
    }
    double assign_us = median(t, blocks);
    vg_session_free(s);
    vg_graph_free(g);

    /* 2. raw vs monitored trivial train step */
    char dir[] = "/tmp/vg_bench_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    g = vg_graph_new();
    gs = vg_get_or_create_global_step(g);
    vg_output loss = vg_const_f32(g, 0.5f, "loss");
    vg_summary_scalar(g, "loss", loss);
    vg_op *train = vg_assign_add(g, gs, vg_const_i64(g, 1, NULL), "train").op;
    vg_hook hooks[6];
    if (vg_stop_at_step_hook(-1, (int64_t)1 << 60, &hooks[0], &st)) die("hook", &st);
    if (vg_step_counter_hook(&(vg_step_counter_options){.every_n_steps = 100, .every_n_secs = -1, .output_dir = dir},
                             &hooks[1], &st))
        die("hook", &st);
    if (vg_nan_tensor_hook(loss, true, &hooks[2], &st)) die("hook", &st);
    vg_logging_tensor_options lo = {0};
    lo.tensors = &loss; lo.ntensors = 1; lo.every_n_iter = 100;
    if (vg_logging_tensor_hook(&lo, &hooks[3], &st)) die("hook", &st);
    vg_scaffold *scaffold = vg_scaffold_new(NULL);
    vg_checkpoint_saver_options co = {0};
    co.checkpoint_dir = dir; co.save_secs = 600; co.scaffold = scaffold;
    if (vg_checkpoint_saver_hook(&co, &hooks[4], &st)) die("hook", &st);
    vg_summary_saver_options sso = {0};
    sso.save_steps = 100; sso.output_dir = dir; sso.scaffold = scaffold;
    if (vg_summary_saver_hook(&sso, &hooks[5], &st)) die("hook", &st);
    vg_singular_options o = {0};
    vg_config_proto cfg = {0};
    cfg.intra_op_parallelism_threads = cfg.inter_op_parallelism_threads = 1;
    o.hooks = hooks; o.nhooks = 6; o.scaffold = scaffold; o.config = &cfg;
    vg_monitored_session *ms = vg_singular_monitored_session_new(g, &o, &st);
    if (!ms) die("monitored session", &st);
    vg_session *raw = vg_monitored_session_raw_session(ms);
    vg_run_args ra = {0};
    ra.fetches = &loss; ra.nfetches = 1; ra.targets = &train; ra.ntargets = 1;
    double *tm = malloc(sizeof(double) * (size_t)blocks), *tr = malloc(sizeof(double) * (size_t)blocks);
    for (int k = 0; k < blocks; k++) { /* interleave raw and monitored blocks */
        double t0 = now_us();
        for (int i = 0; i < per; i++) {
            vg_tensor *out;
            vg_session_run(raw, NULL, NULL, NULL, 0, &loss, &out, 1, &train, 1, NULL, &st);
            vg_tensor_free(out);
        }
        tr[k] = (now_us() - t0) / per;
        t0 = now_us();
        for (int i = 0; i < per; i++) {
            vg_tensor *out;
            if (vg_monitored_session_run(ms, &ra, &out, NULL, &st)) die("monitored run", &st);
            vg_tensor_free(out);
        }
        tm[k] = (now_us() - t0) / per;
    }
    double raw_us = median(tr, blocks), mon_us = median(tm, blocks);
    vg_monitored_session_end(ms, VG_OK, &st);
    vg_monitored_session_free(ms);
    vg_scaffold_free(scaffold);
    vg_file_writer_cache_clear();
    vg_graph_free(g);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
    const char *peer_status = "disabled (VG_BENCH_NO_PEER)";
    double torch_us = getenv("VG_BENCH_NO_PEER") || !bench_torch_probe(&peer_status) ? -1 : torch_add_us();
    printf("{\"bench\":\"session_overhead\",\"threads\":1,\"run_addv2_fetch_us\":%.3f,\"run_assign_add_us\":%.3f,"
           "\"raw_train_us\":%.3f,\"monitored_train_us\":%.3f,\"monitored_overhead_us\":%.3f,"
           "\"peer\":\"pytorch eager 1-element add\",\"peer_add_us\":%.3f,\"ratio_addv2_to_peer\":%.3f,"
           "\"peer_status\":\"%s\"}\n",
           add_us, assign_us, raw_us, mon_us, mon_us - raw_us, torch_us, torch_us > 0 ? add_us / torch_us : -1,
           peer_status);
    free(t);
    free(tm);
    free(tr);
    return 0;
}
