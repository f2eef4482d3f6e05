/* test_alloc_cache.c - the default allocator's cache of large freed blocks
 * (src/core/alloc.c): a freed block of 64 KiB or more is handed back to the next
 * allocation of the same size; the cache holds at most 256 blocks and 1 GiB, and a
 * block freed into a full cache pushes out the oldest, so a program whose sizes change
 * keeps the blocks it uses now. */
#include "core/core.h"
#include "test_util.h"

static bool cache_on(void) {
    const char *e = getenv("VG_ALLOC_CACHE");
    return !(e && e[0] == '0');
}

static void test_alloc_cache__same_size_reused(void) {
    int b0;
    size_t by0;
    vg__alloc_cache_stats(&b0, &by0);
    void *p = vg__malloc(100000);
    CHECK(p != NULL);
    memset(p, 1, 100000);
    vg__free(p);
    int b1;
    size_t by1;
    vg__alloc_cache_stats(&b1, &by1);
    CHECK_EQ_INT(b1, b0 + 1);
    CHECK_EQ_INT((long long)by1, (long long)(by0 + 100000));
    void *q = vg__malloc(100001); /* another size: not the cached block */
    CHECK(q != p);
    void *r = vg__malloc(100000); /* the same size: the cached block */
    CHECK(r == p);
    vg__free(q);
    vg__free(r);
    void *s = vg__malloc(1000); /* small blocks never enter the cache */
    int b2;
    vg__alloc_cache_stats(&b2, NULL);
    vg__free(s);
    int b3;
    vg__alloc_cache_stats(&b3, NULL);
    CHECK_EQ_INT(b3, b2);
}

/* 300 distinct 64 KiB blocks freed in order: the cache keeps the newest 256 (the
 * oldest pushed out), and allocating them again returns cached blocks only. */
static void test_alloc_cache__oldest_pushed_out(void) {
    enum { N = 300, SZ = 65536 + 64 };
    void *p[N];
    for (int i = 0; i < N; i++) {
        p[i] = vg__malloc(SZ);
        CHECK(p[i] != NULL);
    }
    for (int i = 0; i < N; i++) vg__free(p[i]);
    int blocks;
    size_t bytes;
    vg__alloc_cache_stats(&blocks, &bytes);
    CHECK_EQ_INT(blocks, 256);
    /* every cached block of this size is one of the newest 256 freed */
    void *q[256];
    int newest = 0;
    for (int i = 0; i < 256; i++) {
        q[i] = vg__malloc(SZ);
        for (int k = N - 256; k < N; k++)
            if (q[i] == p[k]) {
                newest++;
                break;
            }
    }
    CHECK_EQ_INT(newest, 256);
    int left;
    vg__alloc_cache_stats(&left, NULL);
    CHECK_EQ_INT(left, 0);
    for (int i = 0; i < 256; i++) vg__free(q[i]);
}

int main(void) {
    if (!cache_on()) {
        printf("skip: VG_ALLOC_CACHE=0\n");
        return 0;
    }
    RUN_TEST(test_alloc_cache__same_size_reused);
    RUN_TEST(test_alloc_cache__oldest_pushed_out);
    TEST_MAIN_END();
}
