/* test_dist_world.c - the distributed world of vigil/distributed.h (issue 15).
 * CTest runs it alone (a 1-rank world) and, with MPI built, under mpirun -np 2. */
#include "test_util.h"
#include "status_fixture.h"
#include <vigil/vigil.h>
#include <stdint.h>
#include <stdlib.h>

static int g_rank, g_size;

static void test_dist__world(void) {
    vg_status st;
    CHECK_OK(vg_dist_init(&st), &st);
    CHECK_OK(vg_dist_init(&st), &st); /* idempotent */
    CHECK(vg_dist_initialized());
    g_rank = vg_dist_rank();
    g_size = vg_dist_size();
    const char *env = getenv("OMPI_COMM_WORLD_SIZE");
    if (env && vg_dist_mpi_built()) {
        CHECK_EQ_INT(g_size, atoi(env));
        CHECK_EQ_INT(g_rank, atoi(getenv("OMPI_COMM_WORLD_RANK")));
        CHECK_EQ_INT(vg_dist_local_rank(), atoi(getenv("OMPI_COMM_WORLD_LOCAL_RANK")));
        CHECK_EQ_INT(vg_dist_local_size(), atoi(getenv("OMPI_COMM_WORLD_LOCAL_SIZE")));
    } else if (!env) {
        CHECK_EQ_INT(g_size, 1);
        CHECK_EQ_INT(g_rank, 0);
        CHECK_EQ_INT(vg_dist_local_rank(), 0);
    }
    CHECK(g_rank >= 0 && g_rank < g_size);
    CHECK_OK(vg_dist_barrier(&st), &st);
}

static void test_dist__allreduce(void) {
    vg_status st;
    int n = g_size;
    float f[3] = {1.0f + (float)g_rank, 0.5f, (float)(g_rank * 10)};
    CHECK_OK(vg_dist_allreduce(f, 3, VG_FLOAT, VG_REDUCE_SUM, &st), &st);
    CHECK_NEAR(f[0], n + n * (n - 1) / 2.0, 0);
    CHECK_NEAR(f[1], 0.5 * n, 0);
    CHECK_NEAR(f[2], 10.0 * n * (n - 1) / 2.0, 0);
    double d[2] = {2.0 + g_rank, -(double)g_rank};
    CHECK_OK(vg_dist_allreduce(d, 2, VG_DOUBLE, VG_REDUCE_MAX, &st), &st);
    CHECK_NEAR(d[0], 2.0 + (n - 1), 0);
    CHECK_NEAR(d[1], 0, 0);
    int32_t i[1] = {g_rank + 2};
    CHECK_OK(vg_dist_allreduce(i, 1, VG_INT32, VG_REDUCE_PROD, &st), &st);
    int32_t want = 1;
    for (int r = 0; r < n; r++) want *= r + 2;
    CHECK_EQ_INT(i[0], want);
    int64_t l[1] = {(int64_t)g_rank - 5};
    CHECK_OK(vg_dist_allreduce(l, 1, VG_INT64, VG_REDUCE_MIN, &st), &st);
    CHECK_EQ_INT(l[0], -5);
    /* a large buffer (several MB) */
    int64_t big = 3 << 20;
    float *b = malloc((size_t)big * sizeof(float));
    for (int64_t k = 0; k < big; k++) b[k] = (float)(k % 7) * (float)(g_rank + 1);
    CHECK_OK(vg_dist_allreduce(b, big, VG_FLOAT, VG_REDUCE_SUM, &st), &st);
    int bad = 0;
    for (int64_t k = 0; k < big; k++) bad += b[k] != (float)(k % 7) * (float)(n * (n + 1) / 2);
    CHECK_EQ_INT(bad, 0);
    free(b);
}

static void test_dist__broadcast(void) {
    vg_status st;
    char buf[16];
    snprintf(buf, sizeof buf, "rank%d", g_rank);
    int root = g_size - 1;
    CHECK_OK(vg_dist_broadcast(buf, sizeof buf, root, &st), &st);
    char want[16];
    snprintf(want, sizeof want, "rank%d", root);
    CHECK(strcmp(buf, want) == 0);
}

static void test_dist__bad_input(void) {
    vg_status st;
    float f = 1;
    CHECK_CODE(vg_dist_allreduce(&f, 1, VG_STRING, VG_REDUCE_SUM, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_dist_allreduce(NULL, 3, VG_FLOAT, VG_REDUCE_SUM, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_dist_allreduce(&f, -1, VG_FLOAT, VG_REDUCE_SUM, &st), VG_INVALID_ARGUMENT);
    CHECK_CODE(vg_dist_allreduce(&f, 1, VG_FLOAT, (vg_reduce_op)9, &st), VG_INVALID_ARGUMENT);
    EXPECT_CODE_MSG(vg_dist_broadcast(&f, 4, g_size, &st), &st, VG_INVALID_ARGUMENT, "root");
    CHECK_CODE(vg_dist_broadcast(&f, 4, -1, &st), VG_INVALID_ARGUMENT);
    /* an empty allreduce is fine */
    CHECK_OK(vg_dist_allreduce(NULL, 0, VG_FLOAT, VG_REDUCE_SUM, &st), &st);
}

static void test_dist__finalize(void) {
    vg_status st;
    CHECK_OK(vg_dist_finalize(&st), &st);
    CHECK(!vg_dist_initialized());
    CHECK_OK(vg_dist_finalize(&st), &st); /* twice is fine */
    float f = 1;
    CHECK_CODE(vg_dist_allreduce(&f, 1, VG_FLOAT, VG_REDUCE_SUM, &st), VG_CANCELLED);
    EXPECT_CODE_MSG(vg_dist_init(&st), &st, VG_FAILED_PRECONDITION, "finalize");
}

/* A build without MPI started by mpirun: a clear error naming the build option. */
static void test_dist__no_mpi_build(void) {
    if (vg_dist_mpi_built() || getenv("OMPI_COMM_WORLD_SIZE")) return;
    vg_status st;
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    EXPECT_CODE_MSG(vg_dist_init(&st), &st, VG_UNIMPLEMENTED, "VIGIL_MPI");
    CHECK(!vg_dist_initialized());
    unsetenv("OMPI_COMM_WORLD_SIZE");
}

int main(void) {
    vg_status st;
    float f = 1;
    RUN_TEST(test_dist__no_mpi_build);
    EXPECT_CODE_MSG(vg_dist_allreduce(&f, 1, VG_FLOAT, VG_REDUCE_SUM, &st), &st, VG_FAILED_PRECONDITION,
                    "vg_dist_init");
    RUN_TEST(test_dist__world);
    RUN_TEST(test_dist__allreduce);
    RUN_TEST(test_dist__broadcast);
    RUN_TEST(test_dist__bad_input);
    RUN_TEST(test_dist__finalize);
    TEST_MAIN_END();
}
