/* core_fixture.h - the checkpoint round trip shared by the reduced-precision tests of
 * tests/core (test_half.c, test_bfloat16.c). Include after test_util.h. */
#ifndef VG_CORE_FIXTURE_H
#define VG_CORE_FIXTURE_H
#include "test_util.h"
#include "vigil/vigil.h"

/* A fresh temporary directory (dir, 256 bytes; /tmp/vg_<tag>_XXXXXX) and the checkpoint
 * prefix dir/model.ckpt in it (prefix, 300 bytes). */
static inline void ckpt_tmp_prefix(char dir[256], char prefix[300], const char *tag) {
    tu_mkdtemp(dir, 256, tag);
    snprintf(prefix, 300, "%s/model.ckpt", dir);
}

/* The save half of a round trip: runs init in s, fetches x (returned; NULL when the run
 * fails) and saves with sv under prefix (the checkpoint's path into path, len bytes);
 * each step is checked. */
static inline vg_tensor *init_fetch_save(vg_session *s, vg_op *init, vg_saver *sv, vg_output x, const char *prefix,
                                         char *path, size_t len) {
    vg_status st;
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, &init, 1, NULL, &st), &st);
    vg_tensor *v0 = NULL;
    CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, &x, &v0, 1, NULL, 0, NULL, &st), &st);
    CHECK_OK(vg_saver_save(sv, s, prefix, -1, path, len, &st), &st);
    return v0;
}

/* The restore half of a round trip: frees *s and makes a new session on g (into *s) in
 * which sv restores path; x must then hold v0's bytes exactly (dtype dt, nbytes bytes).
 * Frees v0. */
static inline void check_restored(vg_graph *g, vg_saver *sv, vg_session **s, const char *path, vg_output x,
                                  vg_tensor *v0, vg_dtype dt, size_t nbytes) {
    vg_status st;
    vg_session_free(*s);
    *s = vg_session_new(g, NULL, &st);
    CHECK_OK(vg_saver_restore(sv, *s, path, &st), &st);
    vg_tensor *v1 = NULL;
    CHECK_OK(vg_session_run(*s, NULL, NULL, NULL, 0, &x, &v1, 1, NULL, 0, NULL, &st), &st);
    CHECK(v0 && v1 && vg_tensor_dtype(v1) == dt && memcmp(vg_tensor_data(v0), vg_tensor_data(v1), nbytes) == 0);
    vg_tensor_free(v0);
    vg_tensor_free(v1);
}

/* The start of a checkpoint round trip: a fresh directory and checkpoint prefix in it
 * (ckpt_tmp_prefix with tag) and a new graph g for the variable. */
typedef struct ckpt_round_trip {
    char dir[256], prefix[300];
    vg_graph *g;
} ckpt_round_trip;
static inline ckpt_round_trip ckpt_round_trip_begin(const char *tag) {
    ckpt_round_trip r;
    ckpt_tmp_prefix(r.dir, r.prefix, tag);
    r.g = vg_graph_new();
    return r;
}

/* Checks that text (NULL: nothing to check, its making failed a check already) holds
 * each of the n strings want. */
static inline void text_holds_all(const char *text, const char *const *want, int n) {
    for (int i = 0; text && i < n; i++) CHECK_STR_CONTAINS(text, want[i]);
}

#endif
