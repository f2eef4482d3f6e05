/* test_core_tensor.c - tensors: shapes, reference counts, strings, wrapped memory,
 * aliases, dtype names, status helpers. */
#include "test_util.h"
#include "kernels/kernel.h"
#include "vigil/vigil.h"
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

static int dealloc_calls;
static void my_dealloc(void *data, size_t len, void *payload) {
    dealloc_calls++;
    *(size_t *)payload = len;
    free(data);
}

static void test_core__tensor_basics(void) {
    vg_status st;
    int64_t dims[2] = {2, 3};
    vg_tensor *t = vg_tensor_new(VG_FLOAT, dims, 2, &st);
    CHECK(t != NULL);
    CHECK_EQ_INT(vg_tensor_ndims(t), 2);
    CHECK_EQ_INT(vg_tensor_dim(t, 1), 3);
    CHECK_EQ_INT(vg_tensor_num_elements(t), 6);
    CHECK_EQ_INT(vg_tensor_nbytes(t), 24);
    CHECK_EQ_INT(((uintptr_t)vg_tensor_data(t)) % 64, 0);
    float *x = vg_tensor_data(t);
    for (int i = 0; i < 6; i++) x[i] = (float)i;
    vg_tensor *c = vg_tensor_copy(t, &st);
    CHECK(c && vg_tensor_data(c) != vg_tensor_data(t));
    CHECK_NEAR(((float *)vg_tensor_data(c))[5], 5.0, 0);
    CHECK_EQ_INT(vg__tensor_refcount(t), 1);
    vg_tensor_ref(t);
    CHECK_EQ_INT(vg__tensor_refcount(t), 2);
    vg_tensor_free(t);
    int64_t d3[1] = {6};
    vg_tensor *a = vg__tensor_alias(t, d3, 1, &st);
    CHECK(a && vg_tensor_data(a) == vg_tensor_data(t));
    CHECK_EQ_INT(vg__tensor_refcount(t), 2);
    CHECK_EQ_INT(vg__tensor_refcount(a), 2);
    vg_tensor_free(t);
    CHECK_NEAR(((float *)vg_tensor_data(a))[4], 4.0, 0);
    CHECK_EQ_INT(vg__tensor_refcount(a), 1);
    vg_tensor_free(a);
    vg_tensor_free(c);
    vg_tensor_free(NULL);
}

static void test_core__tensor_errors(void) {
    vg_status st;
    int64_t bad[1] = {-1};
    CHECK(vg_tensor_new(VG_FLOAT, bad, 1, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_INVALID_ARGUMENT);
    CHECK(vg_tensor_new((vg_dtype)99, NULL, 0, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_INVALID_ARGUMENT);
    int64_t d[1] = {3};
    float buf[2];
    CHECK(vg_tensor_new_copy(VG_FLOAT, d, 1, buf, sizeof buf, &st) == NULL);
    CHECK_EQ_INT(st.code, VG_INVALID_ARGUMENT);
    int64_t huge[2] = {INT64_MAX / 2, 4};
    CHECK(vg_tensor_new(VG_FLOAT, huge, 2, &st) == NULL);
    CHECK(st.code == VG_INVALID_ARGUMENT || st.code == VG_RESOURCE_EXHAUSTED);
}

static void test_core__tensor_wrap(void) {
    vg_status st;
    size_t seen = 0;
    int64_t d[1] = {4};
    double *mem = malloc(4 * sizeof(double));
    vg_tensor *t = vg_tensor_new_from(VG_DOUBLE, d, 1, mem, 4 * sizeof(double), my_dealloc, &seen, &st);
    CHECK(t && vg_tensor_data(t) == mem);
    vg_tensor_ref(t);
    vg_tensor_free(t);
    CHECK_EQ_INT(dealloc_calls, 0);
    vg_tensor_free(t);
    CHECK_EQ_INT(dealloc_calls, 1);
    CHECK_EQ_INT(seen, 32);
}

static void test_core__tensor_strings(void) {
    vg_status st;
    int64_t d[1] = {3};
    vg_tensor *t = vg_tensor_new(VG_STRING, d, 1, &st);
    size_t len = 99;
    CHECK(strcmp(vg_tensor_string(t, 0, &len), "") == 0 && len == 0);
    CHECK_OK(vg_tensor_set_string(t, 1, "abc\0d", 5, &st), &st);
    const char *s = vg_tensor_string(t, 1, &len);
    CHECK(len == 5 && memcmp(s, "abc\0d", 5) == 0);
    CHECK_CODE(vg_tensor_set_string(t, 3, "x", 1, &st), VG_INVALID_ARGUMENT);
    vg_tensor *c = vg_tensor_copy(t, &st);
    vg_tensor_set_string(t, 1, "zz", 2, &st);
    s = vg_tensor_string(c, 1, &len);
    CHECK(len == 5 && s[0] == 'a');
    vg_tensor_free(c);
    vg_tensor_free(t);
    vg_tensor *sc = vg_tensor_new_string_scalar("hello", 5, &st);
    CHECK(strcmp(vg_tensor_string(sc, 0, NULL), "hello") == 0);
    vg_tensor_free(sc);
}

static void test_core__shapes_and_names(void) {
    char buf[64];
    int64_t d[3] = {2, -1, 3};
    vg_shape s = vg_shape_make(d, 3);
    CHECK(strcmp(vg_shape_str(&s, buf, sizeof buf), "[2,?,3]") == 0);
    CHECK(!vg_shape_is_fully_defined(&s));
    CHECK_EQ_INT(vg_shape_num_elements(&s), -1);
    vg_shape u = vg_shape_unknown();
    CHECK(strcmp(vg_shape_str(&u, buf, sizeof buf), "<unknown>") == 0);
    CHECK(strcmp(vg_dtype_name(VG_INT64), "int64") == 0);
    CHECK_EQ_INT(vg_dtype_size(VG_DOUBLE), 8);
    CHECK_EQ_INT(VG_OUT_OF_RANGE, 11);
    CHECK_EQ_INT(VG_ABORTED, 10);
    CHECK_EQ_INT(VG_UNAVAILABLE, 14);
    CHECK_EQ_INT(VG_DATA_LOSS, 15);
    CHECK(strcmp(vg_code_name(VG_OUT_OF_RANGE), "OUT_OF_RANGE") == 0);
    vg_status st;
    CHECK_EQ_INT(vg_status_set(&st, VG_NOT_FOUND, "no %s", "file"), VG_NOT_FOUND);
    vg_status_prefix(&st, "reading %d: ", 7);
    CHECK(strcmp(st.msg, "reading 7: no file") == 0);
    CHECK_EQ_INT(vg_status_set(NULL, VG_ABORTED, "x"), VG_ABORTED);
}

/* Small tensors come from a per-thread block list (alloc.c): reused blocks carry no
 * stale shape, dtype, alias or deallocator; a user allocator sees every tensor while it
 * is installed; tensors made on one thread and freed on another are fine (TSan build). */
static long hook_allocs, hook_frees;
static void *count_alloc(void *payload, size_t size, size_t align) {
    (void)payload;
    void *p = NULL;
    if (posix_memalign(&p, align, size ? size : 1)) return NULL;
    hook_allocs++;
    return p;
}
static void count_free(void *payload, void *p) {
    (void)payload;
    hook_frees++;
    free(p);
}
static void *free_on_thread(void *arg) {
    vg_tensor **ts = arg;
    for (int i = 0; i < 64; i++) {
        CHECK_EQ_INT((int)*(int64_t *)vg_tensor_data(ts[i]), i);
        vg_tensor_free(ts[i]);
    }
    for (int i = 0; i < 64; i++) { /* this thread's list now holds blocks: use them, end with them */
        vg_tensor *t = vg_tensor_new_scalar_i64(-i, NULL);
        CHECK(t != NULL && *(int64_t *)vg_tensor_data(t) == -i);
        vg_tensor_free(t);
    }
    return NULL;
}
static void test_core__small_tensor_blocks(void) {
    vg_status st;
    for (int round = 0; round < 3; round++) {
        vg_tensor *keep[40];
        for (int i = 0; i < 40; i++) { /* more than a list holds, of every small kind */
            int64_t dims[3] = {1 + i % 4, 2, 1 + i % 3};
            if (i % 4 == 0) keep[i] = vg_tensor_new_scalar_f32((float)i, &st);
            else if (i % 4 == 1) keep[i] = vg_tensor_new(VG_INT32, dims, 3, &st);
            else if (i % 4 == 2) keep[i] = vg_tensor_new_string_scalar("block", 5, &st);
            else keep[i] = vg_tensor_new_zeros(VG_DOUBLE, dims, 2, &st);
            CHECK(keep[i] != NULL);
        }
        for (int i = 0; i < 40; i++) {
            int nd = vg_tensor_ndims(keep[i]);
            if (i % 4 == 0) CHECK(nd == 0 && *(float *)vg_tensor_data(keep[i]) == (float)i);
            if (i % 4 == 1) CHECK(nd == 3 && vg_tensor_num_elements(keep[i]) == (1 + i % 4) * 2 * (1 + i % 3));
            if (i % 4 == 2) {
                size_t len;
                const char *s = vg_tensor_string(keep[i], 0, &len);
                CHECK(nd == 0 && len == 5 && memcmp(s, "block", 5) == 0);
            }
            if (i % 4 == 3) {
                CHECK(nd == 2 && vg_tensor_dtype(keep[i]) == VG_DOUBLE);
                for (int64_t k = 0; k < vg_tensor_num_elements(keep[i]); k++)
                    CHECK(((double *)vg_tensor_data(keep[i]))[k] == 0.0);
            }
            vg_tensor_free(keep[i]);
        }
        /* a reused block as a reshape alias and as wrapped caller memory */
        int64_t d4[1] = {4}, d22[2] = {2, 2};
        vg_tensor *base = vg_tensor_new(VG_FLOAT, d4, 1, &st);
        vg_tensor *al = vg__tensor_alias(base, d22, 2, &st);
        CHECK(al != NULL && vg_tensor_ndims(al) == 2 && vg_tensor_data(al) == vg_tensor_data(base));
        vg_tensor_free(base);
        CHECK(vg__tensor_refcount(al) == 1);
        vg_tensor_free(al);
        size_t freed = 0;
        dealloc_calls = 0;
        vg_tensor *w = vg_tensor_new_from(VG_FLOAT, d4, 1, malloc(16), 16, my_dealloc, &freed, &st);
        CHECK(w != NULL);
        vg_tensor_free(w);
        CHECK_EQ_INT(dealloc_calls, 1);
        CHECK(freed == 16);
        vg_tensor *plain = vg_tensor_new_scalar_i64(7, &st); /* a fresh small tensor: no deallocator left */
        dealloc_calls = 0;
        vg_tensor_free(plain);
        CHECK_EQ_INT(dealloc_calls, 0);
    }
    /* with a user allocator every tensor goes through it, small ones included (no
     * vigil object lives across the switch, as vg_allocator_set requires) */
    vg_allocator a = {count_alloc, count_free, NULL};
    vg_allocator_set(&a);
    hook_allocs = hook_frees = 0;
    for (int i = 0; i < 10; i++) vg_tensor_free(vg_tensor_new_scalar_i64(i, &st));
    CHECK(hook_allocs == 10 && hook_frees == 10);
    vg_allocator_set(NULL);
    /* made here, freed on another thread */
    vg_tensor *ts[64];
    for (int i = 0; i < 64; i++) CHECK((ts[i] = vg_tensor_new_scalar_i64(i, &st)) != NULL);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, free_on_thread, ts) == 0);
    pthread_join(th, NULL);
}

int main(void) {
    RUN_TEST(test_core__tensor_basics);
    RUN_TEST(test_core__tensor_errors);
    RUN_TEST(test_core__tensor_wrap);
    RUN_TEST(test_core__tensor_strings);
    RUN_TEST(test_core__shapes_and_names);
    RUN_TEST(test_core__small_tensor_blocks);
    TEST_MAIN_END();
}
