/* test_threadpool.c - the worker pool under contention: parallel_for covers every
 * index once for any size and split, from many callers at once, nested inside its own
 * chunks, with the spin window on and off; parallel_for_slots hands each thread one slot
 * and lets a slow slot take fewer pieces; submitted tasks all run (also when the
 * queue is drained by vg__pool_run_one from outside); a pool freed while its workers
 * spin or sleep joins promptly; idle workers stop spinning after the window; and
 * sessions whose inter-op helpers and intra-op splits share one pool compute what a
 * 1-thread session computes. */
#include "test_util.h"
#include "status_fixture.h"
#include "core/threadpool.h"
#include "vigil/vigil.h"
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------------ */
/* parallel_for coverage */

typedef struct cover {
    atomic_int *hits;
    atomic_long calls;
} cover;

static void cover_fn(void *arg, int64_t b, int64_t e) {
    cover *c = arg;
    atomic_fetch_add(&c->calls, 1);
    for (int64_t i = b; i < e; i++) atomic_fetch_add(&c->hits[i], 1);
}

static bool covered_once(vg__pool *p, int64_t n, int parts) {
    cover c;
    c.hits = calloc((size_t)n + 1, sizeof(atomic_int));
    atomic_init(&c.calls, 0);
    vg__pool_parallel_for(p, n, parts, cover_fn, &c);
    bool ok = true;
    for (int64_t i = 0; i < n; i++) ok &= atomic_load(&c.hits[i]) == 1;
    int maxp = parts < vg__pool_size(p) + 1 ? parts : vg__pool_size(p) + 1;
    if (maxp < 1) maxp = 1;
    ok &= n == 0 ? atomic_load(&c.calls) == 0 : atomic_load(&c.calls) >= 1 && atomic_load(&c.calls) <= maxp;
    free(c.hits);
    return ok;
}

static void test_coverage(void) {
    vg__pool *pools[3] = {NULL, vg__pool_new(0), vg__pool_new(3)};
    CHECK(pools[1] && pools[2]);
    CHECK_EQ_INT(vg__pool_size(pools[0]), 0);
    CHECK_EQ_INT(vg__pool_size(pools[1]), 0);
    CHECK_EQ_INT(vg__pool_size(pools[2]), 3);
    int64_t sizes[] = {0, 1, 2, 3, 5, 17, 1000, 100003};
    int parts[] = {1, 2, 3, 4, 9};
    for (int pi = 0; pi < 3; pi++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
            for (size_t k = 0; k < sizeof parts / sizeof *parts; k++)
                CHECK(covered_once(pools[pi], sizes[s], parts[k]));
    vg__pool_free(pools[1]);
    vg__pool_free(pools[2]);
}

/* parallel_for_slots: every index once, in at most nchunks pieces; each slot below
 * the number of taking part threads and kept by one thread for all its pieces; slot 0
 * always runs; a slow slot leaves the rest of the pieces to the others. */
#define SLOT_MAX 16
typedef struct slot_cover {
    atomic_int *hits;
    atomic_long calls;
    atomic_int slot_used[SLOT_MAX];
    pthread_t slot_thread[SLOT_MAX];
    atomic_int bad;      /* a slot out of range or run by two threads */
    int slow_slot;       /* pieces on this slot sleep 2 ms (-1: none) */
    atomic_int slow_pieces, pieces;
} slot_cover;

static void slot_fn(void *arg, int64_t b, int64_t e, int slot) {
    slot_cover *c = arg;
    atomic_fetch_add(&c->calls, 1);
    if (slot < 0 || slot >= SLOT_MAX) {
        atomic_store(&c->bad, 1);
        return;
    }
    if (atomic_fetch_add(&c->slot_used[slot], 1) == 0) c->slot_thread[slot] = pthread_self();
    else if (!pthread_equal(c->slot_thread[slot], pthread_self())) atomic_store(&c->bad, 1);
    atomic_fetch_add(&c->pieces, 1);
    if (slot == c->slow_slot) {
        atomic_fetch_add(&c->slow_pieces, 1);
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    for (int64_t i = b; i < e; i++) atomic_fetch_add(&c->hits[i], 1);
}

static bool slots_covered_once(vg__pool *p, int64_t n, int parts, int64_t nchunks, int slow_slot, int *slow_pieces) {
    slot_cover *c = calloc(1, sizeof *c);
    c->hits = calloc((size_t)n + 1, sizeof(atomic_int));
    c->slow_slot = slow_slot;
    vg__pool_parallel_for_slots(p, n, parts, nchunks, slot_fn, c);
    bool ok = !atomic_load(&c->bad);
    for (int64_t i = 0; i < n; i++) ok &= atomic_load(&c->hits[i]) == 1;
    int maxp = parts < vg__pool_size(p) + 1 ? parts : vg__pool_size(p) + 1;
    if (maxp < 1) maxp = 1;
    int64_t maxc = nchunks < 1 ? 1 : nchunks < n ? nchunks : n;
    long calls = atomic_load(&c->calls);
    ok &= n == 0 ? calls <= 1 : calls >= 1 && calls <= (maxc > maxp ? maxc : maxp);
    if (n > 0) ok &= atomic_load(&c->slot_used[0]) >= 1; /* slot 0 always runs */
    for (int k = maxp; k < SLOT_MAX; k++) ok &= atomic_load(&c->slot_used[k]) == 0;
    if (slow_pieces) *slow_pieces = atomic_load(&c->slow_pieces);
    free(c->hits);
    free(c);
    return ok;
}

static void test_slots(void) {
    vg__pool *pools[3] = {NULL, vg__pool_new(0), vg__pool_new(3)};
    CHECK(pools[1] && pools[2]);
    int64_t sizes[] = {0, 1, 2, 3, 5, 17, 64, 1000};
    int parts[] = {1, 2, 4, 9};
    int64_t chunks[] = {0, 1, 3, 8, 64, 5000};
    for (int pi = 0; pi < 3; pi++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
            for (size_t k = 0; k < sizeof parts / sizeof *parts; k++)
                for (size_t m = 0; m < sizeof chunks / sizeof *chunks; m++)
                    CHECK(slots_covered_once(pools[pi], sizes[s], parts[k], chunks[m], -1, NULL));
    /* 2 threads, 32 pieces, slot 0's pieces take 2 ms each: it runs a few of them while
     * the other thread runs the rest (a fixed half would be 16; all 32 serially take
     * 64 ms, so the worker has ~24 ms to start) */
    vg__pool *two = vg__pool_new(1);
    int sp = 0;
    CHECK(slots_covered_once(two, 64, 2, 32, 0, &sp));
    CHECK(sp >= 1 && sp <= 12);
    vg__pool_free(two);
    vg__pool_free(pools[1]);
    vg__pool_free(pools[2]);
}

/* ------------------------------------------------------------------------ */
/* many callers, and parallel_for inside parallel_for */

typedef struct sum_job {
    const int64_t *x;
    atomic_llong sum;
} sum_job;

static void sum_fn(void *arg, int64_t b, int64_t e) {
    sum_job *j = arg;
    long long s = 0;
    for (int64_t i = b; i < e; i++) s += j->x[i];
    atomic_fetch_add(&j->sum, s);
}

typedef struct caller_arg {
    vg__pool *p;
    const int64_t *x;
    int64_t n;
    int iters;
    int bad;
} caller_arg;

static void *caller(void *a) {
    caller_arg *c = a;
    long long want = (long long)c->n * (c->n - 1) / 2;
    for (int it = 0; it < c->iters; it++) {
        sum_job j = {c->x, 0};
        vg__pool_parallel_for(c->p, c->n, 4, sum_fn, &j);
        if (atomic_load(&j.sum) != want) c->bad++;
    }
    return NULL;
}

static void test_many_callers(void) {
    enum { NC = 6, N = 5000 };
    int64_t *x = malloc(sizeof(int64_t) * N);
    for (int i = 0; i < N; i++) x[i] = i;
    vg__pool *p = vg__pool_new(2);
    pthread_t th[NC];
    caller_arg ca[NC];
    for (int i = 0; i < NC; i++) {
        ca[i] = (caller_arg){p, x, N - i * 7, 400, 0};
        pthread_create(&th[i], NULL, caller, &ca[i]);
    }
    for (int i = 0; i < NC; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(ca[i].bad, 0);
    }
    vg__pool_free(p);
    free(x);
}

typedef struct nest_job {
    vg__pool *p;
    const int64_t *x;
    int64_t inner;
    atomic_llong sum;
    atomic_int on_worker; /* outer chunks run by a pool worker */
} nest_job;

static void nest_outer(void *arg, int64_t b, int64_t e) {
    nest_job *j = arg;
    if (vg__pool_thread_id() > 0) atomic_fetch_add(&j->on_worker, 1);
    for (int64_t r = b; r < e; r++) {
        sum_job s = {j->x + r * j->inner, 0};
        /* the same pool, from a worker or from the caller: never waits on a worker */
        vg__pool_parallel_for(j->p, j->inner, 3, sum_fn, &s);
        atomic_fetch_add(&j->sum, atomic_load(&s.sum));
    }
}

static void test_nested(void) {
    enum { ROWS = 64, INNER = 257 };
    int64_t *x = malloc(sizeof(int64_t) * ROWS * INNER);
    for (int i = 0; i < ROWS * INNER; i++) x[i] = i % 1000;
    long long want = 0;
    for (int i = 0; i < ROWS * INNER; i++) want += x[i];
    vg__pool *p = vg__pool_new(2);
    for (int it = 0; it < 200; it++) {
        nest_job j = {p, x, INNER, 0, 0};
        vg__pool_parallel_for(p, ROWS, 3, nest_outer, &j);
        CHECK_EQ_INT(atomic_load(&j.sum), want);
    }
    vg__pool_free(p);
    free(x);
}

/* ------------------------------------------------------------------------ */
/* submit, run_one, free */

static atomic_int task_runs;
static void count_task(void *arg) {
    (void)arg;
    atomic_fetch_add(&task_runs, 1);
}

static void test_submit_run_one_free(void) {
    /* a pool of no workers queues nothing */
    vg__pool *z = vg__pool_new(0);
    CHECK(!vg__pool_submit(z, count_task, NULL));
    CHECK(!vg__pool_submit(NULL, count_task, NULL));
    CHECK(!vg__pool_run_one(z));
    CHECK(!vg__pool_run_one(NULL));
    vg__pool_free(z);
    vg__pool_free(NULL);
    /* tasks queued by many submits all run exactly once: by the workers, by a caller
     * draining the queue, or at free (which runs what is still queued) */
    for (int round = 0; round < 50; round++) {
        atomic_store(&task_runs, 0);
        vg__pool *p = vg__pool_new(2);
        int queued = 0;
        for (int i = 0; i < 300; i++) queued += vg__pool_submit(p, count_task, NULL);
        CHECK_EQ_INT(queued, 300);
        while (vg__pool_run_one(p)) {
        }
        vg__pool_free(p);
        CHECK_EQ_INT(atomic_load(&task_runs), 300);
    }
    /* freed while the workers spin (just after work) and while they sleep */
    double t0 = tu_now_s();
    for (int round = 0; round < 100; round++) {
        vg__pool *p = vg__pool_new(3);
        cover c;
        c.hits = calloc(64, sizeof(atomic_int));
        atomic_init(&c.calls, 0);
        vg__pool_parallel_for(p, 64, 4, cover_fn, &c);
        free(c.hits);
        vg__pool_free(p);
    }
    double spin_free = tu_now_s() - t0;
    CHECK(spin_free < 20.0); /* 100 pools: joins do not wait out windows or time out */
    vg__pool *p = vg__pool_new(2);
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL); /* past the spin window: the workers sleep on the condvar */
    atomic_store(&task_runs, 0);
    CHECK(vg__pool_submit(p, count_task, NULL));
    vg__pool_free(p);
    CHECK_EQ_INT(atomic_load(&task_runs), 1);
}

/* vg__pool_help runs only parallel_for shares, leaving other tasks to the workers. */
static atomic_int gate, gate_started;
static void gate_task(void *arg) {
    (void)arg;
    atomic_store(&gate_started, 1);
    while (!atomic_load(&gate)) {
        struct timespec ts = {0, 100 * 1000};
        nanosleep(&ts, NULL);
    }
}

static void test_help_takes_only_chunks(void) {
    vg__pool *p = vg__pool_new(1);
    atomic_store(&gate, 0);
    atomic_store(&gate_started, 0);
    atomic_store(&task_runs, 0);
    CHECK(vg__pool_submit(p, gate_task, NULL));
    while (!atomic_load(&gate_started)) { /* the worker is now blocked in gate_task */
        struct timespec ts = {0, 100 * 1000};
        nanosleep(&ts, NULL);
    }
    CHECK(!vg__pool_help(p));
    for (int i = 0; i < 3; i++) CHECK(vg__pool_submit(p, count_task, NULL));
    CHECK(!vg__pool_help(p)); /* count tasks are not chunks */
    /* a parallel_for while the only worker is blocked: the caller does every chunk and
     * its queued share stays behind (a no-op for whoever takes it) */
    cover c;
    c.hits = calloc(10, sizeof(atomic_int));
    atomic_init(&c.calls, 0);
    vg__pool_parallel_for(p, 10, 2, cover_fn, &c);
    for (int i = 0; i < 10; i++) CHECK_EQ_INT(atomic_load(&c.hits[i]), 1);
    CHECK(vg__pool_help(p));  /* the stale share, behind the count tasks */
    CHECK(!vg__pool_help(p));
    CHECK_EQ_INT(atomic_load(&task_runs), 0);
    free(c.hits);
    atomic_store(&gate, 1);
    vg__pool_free(p);
    CHECK_EQ_INT(atomic_load(&task_runs), 3);
}

/* Runs a 16-chunk parallel_for on p and checks each chunk ran once. */
static void cover16(vg__pool *p) {
    cover c;
    c.hits = calloc(16, sizeof(atomic_int));
    atomic_init(&c.calls, 0);
    vg__pool_parallel_for(p, 16, 3, cover_fn, &c);
    for (int i = 0; i < 16; i++) CHECK_EQ_INT(atomic_load(&c.hits[i]), 1);
    free(c.hits);
}

/* The process's CPU time over 0.3 s of sleep stays under 0.1 s: two workers spinning
 * all along would use 0.6 s; one window each is ~0.1 ms. */
static void check_sleeps(const char *what) {
    double c0 = cpu_s();
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    double used = cpu_s() - c0;
    CHECK(used < 0.1);
    if (used >= 0.1) fprintf(stderr, "%s used %.3f s of CPU in 0.3 s\n", what, used);
}

/* An idle pool costs (almost) no CPU: workers spin for one window, then sleep. */
static void test_idle_stops_spinning(void) {
    vg__pool *p = vg__pool_new(2);
    CHECK_EQ_INT(vg__pool_spin_ns(p), 50000); /* the default window */
    CHECK_EQ_INT(vg__pool_spin_ns(NULL), 0);
    cover16(p);
    check_sleeps("idle pool");
    vg__pool_free(p);
}

/* While a run is in progress the window is the longer one (1 ms by default), and the
 * end of the last run brings back the idle window: a pool left idle after runs does
 * not keep spinning; VG_POOL_SPIN_ACTIVE_US sets the run window, VG_POOL_SPIN_US both
 * when only it is set. */
static void test_run_window(void) {
    vg__pool *p = vg__pool_new(2);
    CHECK_EQ_INT(vg__pool_spin_ns(p), 50000);
    vg__pool_run_begin(p);
    CHECK_EQ_INT(vg__pool_spin_ns(p), 1000000);
    vg__pool_run_begin(p); /* two runs at once */
    vg__pool_run_end(p);
    CHECK_EQ_INT(vg__pool_spin_ns(p), 1000000);
    cover16(p);
    vg__pool_run_end(p);
    CHECK_EQ_INT(vg__pool_spin_ns(p), 50000);
    vg__pool_run_begin(NULL);
    vg__pool_run_end(NULL);
    check_sleeps("pool after its runs"); /* the workers saw the run end */
    vg__pool_free(p);
    /* variable = value: the windows during and after a run */
    static const struct { const char *var, *val; int64_t run_ns, idle_ns; } env[] = {
        {"VG_POOL_SPIN_ACTIVE_US", "300", 300000, 50000},
        {"VG_POOL_SPIN_US", "20", 20000, 20000},
    };
    for (int k = 0; k < 2; k++) {
        setenv(env[k].var, env[k].val, 1);
        p = vg__pool_new(1);
        unsetenv(env[k].var);
        vg__pool_run_begin(p);
        CHECK_EQ_INT(vg__pool_spin_ns(p), env[k].run_ns);
        vg__pool_run_end(p);
        CHECK_EQ_INT(vg__pool_spin_ns(p), env[k].idle_ns);
        vg__pool_free(p);
    }
}

/* With VG_POOL_SPIN_US=0 workers sleep at once; results are the same. */
static void test_no_spin(void) {
    setenv("VG_POOL_SPIN_US", "0", 1);
    vg__pool *p = vg__pool_new(2);
    unsetenv("VG_POOL_SPIN_US");
    CHECK_EQ_INT(vg__pool_spin_ns(p), 0);
    vg__pool_run_begin(p);
    CHECK_EQ_INT(vg__pool_spin_ns(p), 0); /* not during runs either */
    vg__pool_run_end(p);
    for (int i = 0; i < 50; i++) CHECK(covered_once(p, 1000 + i, 3));
    int64_t x[300];
    for (int i = 0; i < 300; i++) x[i] = i;
    caller_arg ca = {p, x, 300, 300, 0};
    pthread_t th;
    pthread_create(&th, NULL, caller, &ca);
    caller_arg cb = {p, x, 299, 300, 0};
    caller(&cb);
    pthread_join(th, NULL);
    CHECK_EQ_INT(ca.bad + cb.bad, 0);
    vg__pool_free(p);
    setenv("VG_POOL_SPIN_US", "junk", 1);
    p = vg__pool_new(1);
    unsetenv("VG_POOL_SPIN_US");
    CHECK_EQ_INT(vg__pool_spin_ns(p), 50000); /* unparsable: the default */
    vg__pool_free(p);
}

/* ------------------------------------------------------------------------ */
/* sessions: inter-op helpers and intra-op splits on one pool */

/* Four independent branches of MatMul -> Relu -> MatMul, summed; big enough that the
 * MatMuls split and that the branches are worth helpers. */
typedef struct branches {
    vg_graph *g;
    vg_session *sess;
    vg_output x, s;
    vg_tensor *xv;
    int steps;
    float last;
    int changed;
} branches;

static void branches_build(branches *b, int intra, int inter, int steps) {
    vg_status st;
    memset(b, 0, sizeof *b);
    b->g = vg_graph_new();
    int64_t d[2] = {96, 128}, wd[2] = {128, 128};
    b->x = vg_placeholder(b->g, VG_FLOAT, d, 2, "x");
    vg_output total = {0};
    float *w = malloc(sizeof(float) * 128 * 128);
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < 128 * 128; i++) w[i] = (float)(((i * 7 + k * 13) % 17) - 8) / 64.0f;
        vg_tensor *wt = vg_tensor_new_copy(VG_FLOAT, wd, 2, w, sizeof(float) * 128 * 128, &st);
        vg_output wc = vg_const(b->g, wt, NULL);
        vg_tensor_free(wt);
        vg_output h = vg_relu(b->g, vg_matmul(b->g, b->x, wc, false, false, NULL), NULL);
        h = vg_matmul(b->g, h, wc, false, true, NULL);
        total = k ? vg_add(b->g, total, h, NULL) : h;
    }
    free(w);
    b->s = vg_reduce_sum(b->g, vg_mul(b->g, total, total, NULL), NULL, -1, false, NULL);
    vg_session_options so = {intra, inter};
    b->sess = vg_session_new(b->g, &so, &st);
    CHECK(b->sess != NULL);
    b->xv = vg_tensor_new(VG_FLOAT, d, 2, &st);
    float *xp = vg_tensor_data(b->xv);
    for (int i = 0; i < 96 * 128; i++) xp[i] = (float)((i % 23) - 11) / 16.0f;
    b->steps = steps;
    b->last = -1;
}

static void *branches_run(void *arg) {
    branches *b = arg;
    vg_status st;
    for (int k = 0; k < b->steps && b->sess; k++) {
        vg_tensor *out = NULL;
        if (vg_session_run(b->sess, NULL, &b->x, &b->xv, 1, &b->s, &out, 1, NULL, 0, NULL, &st)) {
            b->changed++;
            continue;
        }
        float v = vg_tensor_scalar(out);
        if (k && v != b->last) b->changed++; /* deterministic run to run */
        b->last = v;
        vg_tensor_free(out);
    }
    return NULL;
}

static void branches_free(branches *b) {
    vg_tensor_free(b->xv);
    free_session_graph(b->sess, b->g);
}

static void test_shared_pool_sessions(void) {
    branches b;
    branches_build(&b, 1, 1, 3);
    branches_run(&b);
    float ref = b.last;
    CHECK(ref > 0);
    CHECK_EQ_INT(b.changed, 0);
    branches_free(&b);
    int cfg[][2] = {{2, 2}, {3, 3}, {2, 4}, {4, 2}, {1, 3}, {3, 1}};
    for (size_t i = 0; i < sizeof cfg / sizeof *cfg; i++) {
        branches_build(&b, cfg[i][0], cfg[i][1], 40);
        branches_run(&b);
        CHECK_NEAR(b.last, ref, 1e-4);
        CHECK_EQ_INT(b.changed, 0);
        /* three threads running the same session at once share its pool */
        branches c[3];
        pthread_t th[3];
        for (int k = 0; k < 3; k++) {
            c[k] = b;
            c[k].steps = 25;
            pthread_create(&th[k], NULL, branches_run, &c[k]);
        }
        for (int k = 0; k < 3; k++) {
            pthread_join(th[k], NULL);
            CHECK_NEAR(c[k].last, ref, 1e-4);
            CHECK_EQ_INT(c[k].changed, 0);
        }
        branches_free(&b);
    }
}

int main(void) {
    RUN_TEST(test_coverage);
    RUN_TEST(test_slots);
    RUN_TEST(test_many_callers);
    RUN_TEST(test_nested);
    RUN_TEST(test_submit_run_one_free);
    RUN_TEST(test_help_takes_only_chunks);
    RUN_TEST(test_idle_stops_spinning);
    RUN_TEST(test_run_window);
    RUN_TEST(test_no_spin);
    RUN_TEST(test_shared_pool_sessions);
    TEST_MAIN_END();
}
