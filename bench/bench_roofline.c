/* bench_roofline.c - the roofline of this machine, one core: the float32 FMA peak
 * (AVX2 and AVX-512 register-only loops, best burst) and the best sgemm each available
 * backend reaches: OpenBLAS as loaded, OpenBLAS with every OPENBLAS_CORETYPE the CPU
 * can run (re-executing itself with the variable set: OpenBLAS reads it only at load),
 * and oneDNN's dnnl_sgemm (vigil's backend call, one thread).
 *
 * sgemm figures: "mlp8" = total flops of the MLP 784-256-256-10 step's eight GEMM shapes
 * (bench_matmul's) over the sum of their best times; "sq1024" = a 1024^3 product.
 * Every time is the best of REPS (default 7) repetitions of >= ~10 ms, interleaved
 * between the in-process backends.
 *
 * Usage: bench_roofline [reps]. Prints one JSON line. Not part of ctest. */
#define _POSIX_C_SOURCE 200809L
#include "roofline.h"
#include "kernels/backend/cpu_features.h"
#include "kernels/backend/dnnl_backend.h"
#include <cblas.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

extern void openblas_set_num_threads(int num_threads);

typedef struct shape {
    int M, N, K, ta, tb;
} shape;
static const shape mlp8[] = {{64, 256, 784, 0, 0}, {64, 256, 256, 0, 0}, {64, 10, 256, 0, 0},
                             {256, 10, 64, 1, 0},  {64, 256, 10, 0, 1},  {256, 256, 64, 1, 0},
                             {64, 256, 256, 0, 1}, {784, 256, 64, 1, 0}};
#define NMLP ((int)(sizeof mlp8 / sizeof mlp8[0]))
static const shape sq1024 = {1024, 1024, 1024, 0, 0};

enum { BE_OPENBLAS, BE_DNNL };
static float *gA, *gB, *gC;

static void gemm(int be, const shape *s) {
    int lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N;
    if (be == BE_DNNL && vg__dnnl_sgemm(s->ta, s->tb, s->M, s->N, s->K, gA, lda, gB, ldb, 0.0f, gC, s->N)) return;
    cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans, s->tb ? CblasTrans : CblasNoTrans, s->M, s->N,
                s->K, 1.0f, gA, lda, gB, ldb, 0.0f, gC, s->N);
}

/* Seconds per call of one timed repetition (>= ~10 ms of calls). */
static double time_rep(int be, const shape *s, int iters) {
    double t = now_s();
    for (int i = 0; i < iters; i++) gemm(be, s);
    return (now_s() - t) / iters;
}

static int calibrate(int be, const shape *s) {
    double t = time_rep(be, s, 1);
    int it = t > 0 ? (int)(0.01 / t) + 1 : 1;
    return it > 100000 ? 100000 : it;
}

/* Best GFLOP/s of the mlp8 set and of sq1024 for each of nbe backends, interleaved. */
static void measure(const int *bes, int nbe, int reps, double *mlp_gf, double *sq_gf) {
    double best[2][NMLP + 1];
    int iters[2][NMLP + 1];
    for (int b = 0; b < nbe; b++)
        for (int i = 0; i <= NMLP; i++) {
            best[b][i] = 1e30;
            iters[b][i] = calibrate(bes[b], i < NMLP ? &mlp8[i] : &sq1024);
        }
    for (int r = 0; r < reps; r++)
        for (int i = 0; i <= NMLP; i++)
            for (int b = 0; b < nbe; b++) {
                double t = time_rep(bes[b], i < NMLP ? &mlp8[i] : &sq1024, iters[b][i]);
                if (t < best[b][i]) best[b][i] = t;
            }
    for (int b = 0; b < nbe; b++) {
        double fl = 0, t = 0;
        for (int i = 0; i < NMLP; i++) {
            fl += 2.0 * mlp8[i].M * mlp8[i].N * mlp8[i].K;
            t += best[b][i];
        }
        mlp_gf[b] = fl / t * 1e-9;
        sq_gf[b] = 2.0 * 1024 * 1024 * 1024 / best[b][NMLP] * 1e-9;
    }
}

static void cpu_model(char *buf, size_t len) {
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            char *p = strchr(line, ':');
            if (p) {
                p += 1 + (p[1] == ' ');
                p[strcspn(p, "\n")] = 0;
                snprintf(buf, len, "%s", p);
            }
            break;
        }
    fclose(f);
}

int main(int argc, char **argv) {
    bool child = argc > 1 && !strcmp(argv[1], "--child-openblas");
    int reps = !child && argc > 1 ? atoi(argv[1]) : child && argc > 2 ? atoi(argv[2]) : 7;
    if (reps < 1) reps = 7;
    openblas_set_num_threads(1);
    size_t n = 1024 * 1024;
    gA = malloc(n * sizeof(float)), gB = malloc(n * sizeof(float)), gC = malloc(n * sizeof(float));
    if (!gA || !gB || !gC) return 1;
    for (size_t i = 0; i < n; i++) gA[i] = (float)(i % 97) / 97.0f, gB[i] = (float)(i % 89) / 89.0f, gC[i] = 0;
    if (child) { /* re-executed with OPENBLAS_CORETYPE set: OpenBLAS only */
        int be = BE_OPENBLAS;
        double mg, sg;
        measure(&be, 1, reps, &mg, &sg);
        printf("%s %.2f %.2f\n", vg__blas_corename(), mg, sg);
        return 0;
    }
    const vg__cpu *c = vg__cpu_get();
    char model[256], flags[256];
    cpu_model(model, sizeof model);
    vg__cpu_flags_str(c, flags, sizeof flags);
    double p512 = rl_fma_peak(16, 20, 0.01), p256 = rl_fma_peak(8, 20, 0.01);
    bool dnnl = vg__dnnl_sgemm(false, false, 1, 1, 1, gA, 1, gB, 1, 0.0f, gC, 1);
    int bes[2] = {BE_OPENBLAS, BE_DNNL};
    double mg[2] = {0}, sg[2] = {0};
    measure(bes, dnnl ? 2 : 1, reps, mg, sg);
    const char *core0 = vg__blas_corename();
    printf("{\"bench\":\"roofline\",\"cpu\":\"%s\",\"family\":%u,\"model\":%u,\"features\":\"%s\","
           "\"fma_peak_avx2_gflops\":%.1f,\"fma_peak_avx512_gflops\":%.1f,\"sgemm\":[",
           model, c->family, c->model, flags, p256, p512);
    printf("{\"backend\":\"openblas\",\"core\":\"%s\",\"env\":\"\",\"mlp8_gflops\":%.1f,\"sq1024_gflops\":%.1f}", core0,
           mg[0], sg[0]);
    double best = mg[0];
    const char *best_name = "openblas (as loaded)";
    if (dnnl) {
        printf(",{\"backend\":\"dnnl\",\"env\":\"\",\"mlp8_gflops\":%.1f,\"sq1024_gflops\":%.1f}", mg[1], sg[1]);
        if (mg[1] > best) best = mg[1], best_name = "dnnl";
    }
    /* OpenBLAS core types by the ISA they need. */
    struct { const char *core; bool ok; } cores[] = {
        {"Prescott", true}, {"Nehalem", c->sse42}, {"Sandybridge", c->avx}, {"Haswell", c->avx2 && c->fma},
        {"SkylakeX", vg__cpu_isa_level(c) >= VG__ISA_AVX512}, {"Cooperlake", c->avx512_bf16},
        {"SapphireRapids", c->amx_tile && c->avx512_fp16}};
    static char best_core[64];
    char self[400] = "";
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl > 0 && !strchr(self, '\'')) self[sl] = 0;
    else snprintf(self, sizeof self, "%s", argv[0]);
    for (size_t i = 0; i < sizeof cores / sizeof cores[0]; i++) {
        if (!cores[i].ok || !strcasecmp(cores[i].core, core0)) continue;
        char cmd[600], line[256], got[64] = "";
        snprintf(cmd, sizeof cmd, "OPENBLAS_CORETYPE=%s '%s' --child-openblas %d", cores[i].core, self, reps);
        FILE *p = popen(cmd, "r");
        double cm = 0, cs = 0;
        if (p && fgets(line, sizeof line, p)) sscanf(line, "%63s %lf %lf", got, &cm, &cs);
        if (p) pclose(p);
        if (strcasecmp(got, cores[i].core)) continue; /* this OpenBLAS build lacks the core type */
        printf(",{\"backend\":\"openblas\",\"core\":\"%s\",\"env\":\"OPENBLAS_CORETYPE=%s\",\"mlp8_gflops\":%.1f,"
               "\"sq1024_gflops\":%.1f}", got, cores[i].core, cm, cs);
        if (cm > best) {
            best = cm;
            snprintf(best_core, sizeof best_core, "openblas OPENBLAS_CORETYPE=%s", cores[i].core);
            best_name = best_core;
        }
    }
    double peak = p512 > 0 ? p512 : p256;
    printf("],\"best_mlp8_gflops\":%.1f,\"best\":\"%s\",\"best_fraction_of_peak\":%.3f,\"vigil_backend\":\"%s\"}\n",
           best, best_name, peak > 0 ? best / peak : 0, vg_backend_name(vg_backend_get()));
    free(gA), free(gB), free(gC);
    return 0;
}
