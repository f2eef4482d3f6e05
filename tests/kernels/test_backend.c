/* test_backend.c - the compute backend switch (vigil/backend.h): CPU feature detection
 * against GCC's own cpuid probe, the OpenBLAS core-name check, and MatMul (all four
 * transpose combinations, odd shapes) and Conv2D with both of its gradients (strides 1
 * and 2, SAME and VALID) computed with each backend forced, against a float64
 * reference loop and against each other. Also checks that the oneDNN path starts no
 * threads of its own. (TF has no backend test; the MatMul cases follow the shapes of
 * TF 1.15's matmul_op_test.py, which tests transposes and odd sizes.) */
#include "test_util.h"
#include "op_test_util.h"
#include "kernels/backend/cpu_features.h"
#include "kernels/backend/dnnl_backend.h"
#include "kernels/nn/nn_internal.h"
#include "vigil/backend.h"
#include "vigil/vigil.h"
#include "kernels_fixture.h"
#include "conv_ref_fixture.h"
#include <dirent.h>

static vg_tensor *ftens(const int64_t *dims, int nd, const double *v) {
    vg_status st;
    vg_tensor *t = vg_tensor_new(VG_FLOAT, dims, nd, &st);
    int64_t n = vg_tensor_num_elements(t);
    for (int64_t i = 0; i < n; i++) ((float *)vg_tensor_data(t))[i] = (float)v[i];
    return t;
}

/* Max relative error of t against want (scaled by the row's magnitude sum). */
static int compare(const char *what, const vg_tensor *t, const double *want, const double *scale, int64_t n,
                   double tol) {
    if (!t || vg_tensor_num_elements(t) != n) {
        fprintf(stderr, "%s: wrong output\n", what);
        return 1;
    }
    int bad = 0;
    const float *p = vg_tensor_data(t);
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(p[i] - want[i]) <= tol * (1 + scale[i])) && bad++ < 4)
            fprintf(stderr, "%s[%lld] = %.7g, want %.7g\n", what, (long long)i, p[i], want[i]);
    return bad;
}

static bool have_dnnl(void) {
    vg_status st;
    vg_backend old = vg_backend_get();
    bool ok = vg_backend_set(VG_BACKEND_DNNL, &st) == VG_OK;
    vg_backend_set(old, &st);
    return ok;
}

/* ---- features ---------------------------------------------------------- */

static void test_backend__cpu_features(void) {
    const vg__cpu *c = vg__cpu_get();
    CHECK(c == vg__cpu_get());
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    CHECK_EQ_INT(c->avx2, !!__builtin_cpu_supports("avx2"));
    CHECK_EQ_INT(c->fma, !!__builtin_cpu_supports("fma"));
    CHECK_EQ_INT(c->avx512f, !!__builtin_cpu_supports("avx512f"));
    CHECK_EQ_INT(c->avx512bw, !!__builtin_cpu_supports("avx512bw"));
    CHECK_EQ_INT(c->avx512vl, !!__builtin_cpu_supports("avx512vl"));
    CHECK_EQ_INT(c->avx512_vnni, !!__builtin_cpu_supports("avx512vnni"));
    CHECK(c->vendor[0] != 0);
    CHECK(c->family > 0);
#endif
    int level = vg__cpu_isa_level(c);
    if (c->avx512f && c->avx512bw && c->avx512vl && c->avx512dq) CHECK_EQ_INT(level, VG__ISA_AVX512);
    else if (c->avx2 && c->fma) CHECK_EQ_INT(level, VG__ISA_AVX2);
    else CHECK_EQ_INT(level, VG__ISA_BASE);
    char flags[256];
    vg__cpu_flags_str(c, flags, sizeof flags);
    if (c->avx2) CHECK_STR_CONTAINS(flags, "avx2");
    char tiny[5];
    vg__cpu_flags_str(c, tiny, sizeof tiny); /* truncation keeps it terminated */
    CHECK(strlen(tiny) < sizeof tiny);
}

static void test_backend__blas_core_check(void) {
    CHECK_EQ_INT(vg__blas_core_level("Prescott"), VG__ISA_BASE);
    CHECK_EQ_INT(vg__blas_core_level("Sandybridge"), VG__ISA_BASE);
    CHECK_EQ_INT(vg__blas_core_level("Haswell"), VG__ISA_AVX2);
    CHECK_EQ_INT(vg__blas_core_level("zen"), VG__ISA_AVX2);
    CHECK_EQ_INT(vg__blas_core_level("SkylakeX"), VG__ISA_AVX512);
    CHECK_EQ_INT(vg__blas_core_level("COOPERLAKE"), VG__ISA_AVX512);
    CHECK_EQ_INT(vg__blas_core_level(NULL), VG__ISA_BASE);
    vg__cpu spr = {.avx2 = true, .fma = true, .avx512f = true, .avx512bw = true, .avx512vl = true, .avx512dq = true};
    vg__cpu hsw = {.avx2 = true, .fma = true};
    CHECK(vg__blas_below_cpu(&spr, "Prescott"));
    CHECK(vg__blas_below_cpu(&spr, "Haswell"));
    CHECK(!vg__blas_below_cpu(&spr, "Cooperlake"));
    CHECK(!vg__blas_below_cpu(&hsw, "Haswell"));
    CHECK(vg__blas_below_cpu(&hsw, "Nehalem"));
    CHECK(strlen(vg__blas_corename()) > 0);
    vg__cpu cpl = spr, avx = {.avx = true}, none = {0};
    cpl.avx512_bf16 = true;
    CHECK(!strcmp(vg__blas_core_for(&cpl), "Cooperlake"));
    CHECK(!strcmp(vg__blas_core_for(&spr), "SkylakeX"));
    CHECK(!strcmp(vg__blas_core_for(&hsw), "Haswell"));
    CHECK(!strcmp(vg__blas_core_for(&avx), "Sandybridge"));
    CHECK(vg__blas_core_for(&none) == NULL);
    /* The hint is only given on OpenBLAS running below this CPU with no core type set. */
    vg_status st;
    vg_backend old = vg_backend_get();
    const char *hint;
    if (vg_backend_set(VG_BACKEND_DNNL, &st) == VG_OK) CHECK(vg_backend_openblas_coretype_hint() == NULL);
    CHECK_OK(vg_backend_set(VG_BACKEND_OPENBLAS, &st), &st);
    hint = vg_backend_openblas_coretype_hint();
    if (getenv("OPENBLAS_CORETYPE") || !vg__blas_below_cpu(vg__cpu_get(), vg__blas_corename())) CHECK(hint == NULL);
    else CHECK(hint != NULL && !strcmp(hint, vg__blas_core_for(vg__cpu_get())));
    CHECK_OK(vg_backend_set(old, &st), &st);
}

static void test_backend__switch(void) {
    vg_status st;
    vg_backend old = vg_backend_get();
    CHECK(old == VG_BACKEND_OPENBLAS || old == VG_BACKEND_DNNL);
    CHECK_STATUS(vg_backend_set((vg_backend)7, &st), &st, VG_INVALID_ARGUMENT, "unknown backend");
    CHECK_OK(vg_backend_set(VG_BACKEND_OPENBLAS, &st), &st);
    CHECK_EQ_INT(vg_backend_get(), VG_BACKEND_OPENBLAS);
    char buf[512];
    CHECK_STR_CONTAINS(vg_backend_describe(buf, sizeof buf), "compute backend openblas");
    CHECK_STR_CONTAINS(buf, "OpenBLAS core");
    vg_code c = vg_backend_set(VG_BACKEND_DNNL, &st);
    if (c == VG_OK) CHECK_EQ_INT(vg_backend_get(), VG_BACKEND_DNNL);
    else {
        CHECK_EQ_INT(c, VG_UNIMPLEMENTED);
        CHECK_EQ_INT(vg_backend_get(), VG_BACKEND_OPENBLAS);
    }
    CHECK_OK(vg_backend_set(VG_BACKEND_AUTO, &st), &st);
    vg_backend a = vg_backend_get();
    /* The automatic choice: oneDNN whenever it is built in and the CPU has AVX2+FMA. */
    if (have_dnnl() && vg__cpu_isa_level(vg__cpu_get()) >= VG__ISA_AVX2 && !getenv("VG_BACKEND"))
        CHECK_EQ_INT(a, VG_BACKEND_DNNL);
    CHECK(!strcmp(vg_backend_name(VG_BACKEND_DNNL), "dnnl"));
    CHECK(!strcmp(vg_backend_name(VG_BACKEND_OPENBLAS), "openblas"));
    CHECK_OK(vg_backend_set(old, &st), &st);
}

/* ---- MatMul ------------------------------------------------------------ */

static const int64_t mm_shapes[][3] = {{1, 1, 1}, {7, 13, 5}, {64, 10, 256}, {33, 65, 17},
                                       {130, 3, 257}, {200, 300, 100}, {1, 257, 31}, {64, 256, 784}};

/* C = op(A) op(B) with each backend in turn, threads 1 and 2. */
static void test_backend__matmul_all_backends(void) {
    vg_backend backends[2] = {VG_BACKEND_OPENBLAS, VG_BACKEND_DNNL};
    int nb = have_dnnl() ? 2 : 1;
    vg_status st;
    for (size_t si = 0; si < sizeof mm_shapes / sizeof mm_shapes[0]; si++)
        for (int tr = 0; tr < 4; tr++) {
            int64_t M = mm_shapes[si][0], N = mm_shapes[si][1], K = mm_shapes[si][2];
            bool ta = tr & 1, tb = tr & 2;
            double *a = randv(M * K, (unsigned)(si * 8 + tr)), *b = randv(K * N, (unsigned)(si * 8 + tr + 100));
            double *want = calloc((size_t)(M * N), sizeof(double)), *scale = calloc((size_t)(M * N), sizeof(double));
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++)
                    for (int64_t k = 0; k < K; k++) {
                        double av = ta ? a[k * M + i] : a[i * K + k], bv = tb ? b[j * K + k] : b[k * N + j];
                        av = (float)av, bv = (float)bv;
                        want[i * N + j] += av * bv;
                        scale[i * N + j] += fabs(av * bv);
                    }
            int64_t ad[2] = {ta ? K : M, ta ? M : K}, bd[2] = {tb ? N : K, tb ? K : N};
            vg_tensor *res[2][2] = {{NULL}};
            for (int bi = 0; bi < nb; bi++)
                for (int th = 1; th <= (tu_emulated() ? 1 : 2); th++) { /* tu_emulated: test_util.h */
                    CHECK_OK(vg_backend_set(backends[bi], &st), &st);
                    vg_graph *g = vg_graph_new();
                    vg_output pa = vg_placeholder(g, VG_FLOAT, NULL, -1, "a"),
                              pb = vg_placeholder(g, VG_FLOAT, NULL, -1, "b");
                    vg_output y = vg_matmul(g, pa, pb, ta, tb, NULL);
                    vg_tensor *vals[2] = {ftens(ad, 2, a), ftens(bd, 2, b)};
                    vg_output feeds[2] = {pa, pb};
                    vg_tensor *out = NULL;
                    CHECK_OK(run_threads(g, th, feeds, vals, 2, &y, &out, 1, &st), &st);
                    char what[96];
                    snprintf(what, sizeof what, "matmul %s %lldx%lldx%lld ta=%d tb=%d th=%d",
                             vg_backend_name(backends[bi]), (long long)M, (long long)N, (long long)K, ta, tb, th);
                    CHECK(compare(what, out, want, scale, M * N, 1e-6) == 0);
                    res[bi][th - 1] = out;
                    vg_tensor_free(vals[0]);
                    vg_tensor_free(vals[1]);
                    vg_graph_free(g);
                }
            /* The two backends agree with each other within float rounding. */
            if (nb == 2 && res[0][0] && res[1][0]) {
                const float *p0 = vg_tensor_data(res[0][0]), *p1 = vg_tensor_data(res[1][0]);
                double worst = 0;
                for (int64_t i = 0; i < M * N; i++) {
                    double e = fabs(p0[i] - p1[i]) / (1 + scale[i]);
                    if (e > worst) worst = e;
                }
                CHECK(worst <= 1e-6);
            }
            for (int bi = 0; bi < 2; bi++)
                for (int th = 0; th < 2; th++) vg_tensor_free(res[bi][th]);
            free(a), free(b), free(want), free(scale);
        }
    CHECK_OK(vg_backend_set(VG_BACKEND_AUTO, &st), &st);
}

/* ---- Conv2D ------------------------------------------------------------ */

typedef conv_cfg cfg;

static const cfg conv_cfgs[] = {
    {2, 9, 7, 3, 3, 3, 5, 1, 1, true},   {2, 9, 7, 3, 3, 3, 5, 2, 2, true},  {1, 8, 8, 4, 5, 5, 16, 1, 1, true},
    {3, 10, 9, 2, 3, 2, 7, 2, 1, false}, {2, 6, 6, 1, 5, 5, 32, 1, 1, true}, {1, 7, 7, 8, 1, 1, 3, 2, 2, false},
    {4, 14, 14, 32, 5, 5, 64, 1, 1, true}};

/* direct: vg__conv_set_direct's level; dnnl: vg__conv_set_dnnl's mode (oneDNN's
 * convolution primitives: 0 off, 2 forced). */
static void conv_case(const cfg *c, vg_backend be, int threads, int direct, int dnnl) {
    vg_status st;
    CHECK_OK(vg_backend_set(be, &st), &st);
    vg__conv_set_direct(direct);
    vg__conv_set_dnnl(dnnl);
    long long runs0 = vg__conv_dnnl_runs();
    int64_t oh, ow, pt, pl;
    win(c->h, c->kh, c->sh, c->same, &oh, &pt);
    win(c->w, c->kw, c->sw, c->same, &ow, &pl);
    int64_t xs[4] = {c->n, c->h, c->w, c->ci}, fs[4] = {c->kh, c->kw, c->ci, c->co}, ys[4] = {c->n, oh, ow, c->co};
    int64_t nx = c->n * c->h * c->w * c->ci, nf = c->kh * c->kw * c->ci * c->co, ny = c->n * oh * ow * c->co;
    double *x = randv(nx, 1), *f = randv(nf, 2), *dy = randv(ny, 3);
    double *y = calloc((size_t)ny, 8), *dx = calloc((size_t)nx, 8), *df = calloc((size_t)nf, 8);
    double *sy = calloc((size_t)ny, 8), *sx = calloc((size_t)nx, 8), *sf = calloc((size_t)nf, 8);
    conv_ref_ex(c, 0, x, f, y, sy, true);
    conv_ref_ex(c, 1, dx, f, dy, sx, true);
    conv_ref_ex(c, 2, x, df, dy, sf, true);
    vg_graph *g = vg_graph_new();
    vg_output xp = vg_placeholder(g, VG_FLOAT, NULL, -1, "x"), fp = vg_placeholder(g, VG_FLOAT, NULL, -1, "f"),
              dyp = vg_placeholder(g, VG_FLOAT, NULL, -1, "dy");
    int64_t strides[4] = {1, c->sh, c->sw, 1};
    const char *pad = c->same ? "SAME" : "VALID";
    int32_t xs32[4] = {(int32_t)xs[0], (int32_t)xs[1], (int32_t)xs[2], (int32_t)xs[3]};
    int32_t fs32[4] = {(int32_t)fs[0], (int32_t)fs[1], (int32_t)fs[2], (int32_t)fs[3]};
    vg_output fetch[3] = {
        vg_conv2d(g, xp, fp, strides, pad, NULL),
        vg_conv2d_backprop_input(g, vg_const_i32_vec(g, xs32, 4, NULL), fp, dyp, strides, pad, NULL),
        vg_conv2d_backprop_filter(g, xp, vg_const_i32_vec(g, fs32, 4, NULL), dyp, strides, pad, NULL)};
    vg_tensor *vals[3] = {ftens(xs, 4, x), ftens(fs, 4, f), ftens(ys, 4, dy)};
    vg_output feeds[3] = {xp, fp, dyp};
    vg_tensor *out[3] = {NULL};
    CHECK_OK(run_threads(g, threads, feeds, vals, 3, fetch, out, 3, &st), &st);
    char what[160];
    snprintf(what, sizeof what, "conv %s th=%d direct=%d n%lld %lldx%lld ci%lld k%lldx%lld co%lld s%lldx%lld %s",
             vg_backend_name(be), threads, direct, (long long)c->n, (long long)c->h, (long long)c->w,
             (long long)c->ci, (long long)c->kh, (long long)c->kw, (long long)c->co, (long long)c->sh,
             (long long)c->sw, pad);
    CHECK(compare(what, out[0], y, sy, ny, 1e-6) == 0);
    CHECK(compare(what, out[1], dx, sx, nx, 1e-6) == 0);
    CHECK(compare(what, out[2], df, sf, nf, 1e-6) == 0);
    /* forced oneDNN convolutions ran all three ops; with them off, none */
    CHECK_EQ_INT(vg__conv_dnnl_runs() - runs0, dnnl == 2 && be == VG_BACKEND_DNNL ? 3 : 0);
    for (int i = 0; i < 3; i++) vg_tensor_free(out[i]), vg_tensor_free(vals[i]);
    vg_graph_free(g);
    free(x), free(f), free(dy), free(y), free(dx), free(df), free(sy), free(sx), free(sf);
}

static void test_backend__conv2d_all_backends(void) {
    vg_backend backends[2] = {VG_BACKEND_OPENBLAS, VG_BACKEND_DNNL};
    int nb = have_dnnl() ? 2 : 1;
    vg__conv_set_winograd(0); /* the paths under test here; Winograd: test_conv_winograd.c */
    for (size_t i = 0; i < sizeof conv_cfgs / sizeof conv_cfgs[0]; i++)
        for (int bi = 0; bi < nb; bi++) {
            /* Emulated (tu_emulated): each path once, at 1 thread; the 2-thread splits run
             * the same kernels and are covered by the native run. */
            int th2 = tu_emulated() ? 1 : 2;
            /* ... and a batch of at most 2: the largest case (the CNN's conv2 at batch 4,
             * ~240 MFLOP a pass) took most of test_backend's 400 s as Haswell-v4. */
            cfg c = conv_cfgs[i];
            if (tu_emulated() && c.n > 2) c.n = 2;
            conv_case(&c, backends[bi], 1, 0, 0); /* im2col + GEMM on the backend */
            if (th2 == 2) conv_case(&c, backends[bi], 2, 0, 0);
            conv_case(&c, backends[bi], th2, 2, 0); /* direct kernels where they apply */
            if (backends[bi] == VG_BACKEND_DNNL) {
                conv_case(&c, backends[bi], 1, 2, 2); /* oneDNN's convolution primitives */
                if (th2 == 2) conv_case(&c, backends[bi], 2, 2, 2);
            }
        }
    vg_status st;
    vg__conv_set_direct(2);
    vg__conv_set_dnnl(1);
    vg__conv_set_winograd(1);
    CHECK_OK(vg_backend_set(VG_BACKEND_AUTO, &st), &st);
}

/* oneDNN's convolutions take their scratchpad at any alignment and write nothing past
 * vg__dconv_scratch_bytes: each mode of a few geometries (the 1x1 stride-2 one, whose
 * AVX2 filter gradient wrote 36 bytes past a scratchpad that was 64- but not
 * 128-aligned; ctest runs this file again with DNNL_MAX_CPU_ISA=AVX2 and SSE41), with
 * the scratchpad at offsets 0, 8, 64 and 192 of a 4096-aligned block followed by guard
 * bytes; the results agree bit for bit across offsets. */
static void test_backend__dnnl_conv_scratch_alignment(void) {
    if (!have_dnnl()) return;
    static const vg__dconv_geom geoms[] = {
        {.n = 2, .h = 6, .w = 6, .ci = 3, .kh = 1, .kw = 1, .co = 2, .sh = 2, .sw = 2, .oh = 3, .ow = 3},
        {.n = 3, .h = 8, .w = 7, .ci = 16, .kh = 3, .kw = 3, .co = 16, .sh = 1, .sw = 1, .oh = 8, .ow = 7, .pt = 1,
         .pl = 1, .bias = 1},
        {.n = 2, .h = 9, .w = 9, .ci = 8, .kh = 5, .kw = 5, .co = 24, .sh = 2, .sw = 2, .oh = 3, .ow = 3},
    };
    static const size_t offs[] = {0, 8, 64, 192};
    enum { GUARD = 4096 };
    for (size_t gi = 0; gi < sizeof geoms / sizeof geoms[0]; gi++) {
        const vg__dconv_geom *g = &geoms[gi];
        int64_t nx = g->n * g->h * g->w * g->ci, ny = g->n * g->oh * g->ow * g->co;
        int64_t nw = g->kh * g->kw * g->ci * g->co;
        for (int mode = VG__DCONV_FWD; mode <= VG__DCONV_BWD_WEIGHTS; mode++) {
            const vg__dconv_plan *p = vg__dconv_plan_get(mode, g);
            CHECK(p != NULL);
            if (!p) continue;
            size_t sb = vg__dconv_scratch_bytes(p), wb = vg__dconv_weights_bytes(p);
            int64_t nin = mode == VG__DCONV_BWD_DATA ? ny : nx;
            int64_t nout = mode == VG__DCONV_FWD ? ny : mode == VG__DCONV_BWD_DATA ? nx : (wb ? (int64_t)(wb / 4) : nw);
            int64_t nw2 = mode == VG__DCONV_BWD_WEIGHTS ? ny : (wb ? (int64_t)(wb / 4) : nw);
            float *in = malloc(sizeof(float) * (size_t)nin), *w = malloc(sizeof(float) * (size_t)nw2);
            float *bias = malloc(sizeof(float) * (size_t)g->co), *db = malloc(sizeof(float) * (size_t)g->co);
            float *out = malloc(sizeof(float) * (size_t)nout), *first = malloc(sizeof(float) * (size_t)nout);
            unsigned char *blk = aligned_alloc(4096, (192 + sb + GUARD + 4095) / 4096 * 4096); /* 192: the largest offset */
            CHECK(in && w && bias && db && out && first && blk);
            if (!(in && w && bias && db && out && first && blk)) break;
            for (int64_t i = 0; i < nin; i++) in[i] = (float)((i * 37) % 23) / 23.0f - 0.4f;
            for (int64_t i = 0; i < nw2; i++) w[i] = (float)((i * 53) % 19) / 19.0f - 0.5f;
            for (int64_t i = 0; i < g->co; i++) bias[i] = (float)i / 8.0f;
            for (size_t oi = 0; oi < sizeof offs / sizeof offs[0]; oi++) {
                unsigned char *sp = blk + offs[oi];
                memset(blk, 0x5a, offs[oi] + sb + GUARD);
                memset(out, 0, sizeof(float) * (size_t)nout);
                CHECK(vg__dconv_exec(p, in, w, bias, out, db, sp));
                int bad = 0;
                for (size_t k = 0; k < GUARD; k++) bad += sp[sb + k] != 0x5a;
                for (size_t k = 0; k < offs[oi]; k++) bad += blk[k] != 0x5a;
                if (bad)
                    fprintf(stderr, "geometry %zu mode %d scratch at +%zu: %d guard bytes written (scratch %zu)\n", gi,
                            mode, offs[oi], bad, sb);
                CHECK_EQ_INT(bad, 0);
                if (oi == 0) memcpy(first, out, sizeof(float) * (size_t)nout);
                else CHECK(memcmp(first, out, sizeof(float) * (size_t)nout) == 0);
            }
            free(in), free(w), free(bias), free(db), free(out), free(first), free(blk);
        }
    }
}

/* ---- threads ----------------------------------------------------------- */

static int count_threads(void) {
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

/* A large GEMM on oneDNN runs on the calling thread: no OpenMP team appears. */
static void test_backend__dnnl_starts_no_threads(void) {
    if (!have_dnnl()) return;
    vg_status st;
    CHECK_OK(vg_backend_set(VG_BACKEND_DNNL, &st), &st);
    vg_graph *g = vg_graph_new();
    vg_output a = vg_placeholder(g, VG_FLOAT, NULL, -1, "a");
    vg_output y = vg_matmul(g, a, a, false, false, NULL);
    int64_t d[2] = {512, 512};
    double *v = randv(512 * 512, 5);
    vg_tensor *t = ftens(d, 2, v);
    vg_session_options o = {0};
    o.intra_op_threads = 2;
    o.inter_op_threads = 1;
    vg_session *s = vg_session_new(g, &o, &st);
    CHECK(s != NULL);
    vg_tensor *out = NULL;
    CHECK_OK(vg_session_run(s, NULL, &a, &t, 1, &y, &out, 1, NULL, 0, NULL, &st), &st);
    vg_tensor_free(out);
    int before = count_threads();
    for (int i = 0; i < 3; i++) {
        out = NULL;
        CHECK_OK(vg_session_run(s, NULL, &a, &t, 1, &y, &out, 1, NULL, 0, NULL, &st), &st);
        vg_tensor_free(out);
    }
    CHECK_EQ_INT(count_threads(), before);
    vg_session_free(s);
    vg_tensor_free(t);
    vg_graph_free(g);
    free(v);
    CHECK_OK(vg_backend_set(VG_BACKEND_AUTO, &st), &st);
}

int main(void) {
    RUN_TEST(test_backend__cpu_features);
    RUN_TEST(test_backend__blas_core_check);
    RUN_TEST(test_backend__switch);
    RUN_TEST(test_backend__matmul_all_backends);
    RUN_TEST(test_backend__conv2d_all_backends);
    RUN_TEST(test_backend__dnnl_conv_scratch_alignment);
    RUN_TEST(test_backend__dnnl_starts_no_threads);
    TEST_MAIN_END();
}
