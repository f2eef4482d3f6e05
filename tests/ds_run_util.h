/* ds_run_util.h - running a dataset pipeline in tests (ds_run: an initializable iterator, its
 * get_next and a session), and iterator checkpoint tests: run a pipeline without a break,
 * then break it after N elements, save the iterator's state through
 * make_saveable_from_iterator, restore it in a new graph and session and read the rest; the
 * values must be the same. Include after test_util.h. */
#ifndef VIGIL_TESTS_DS_RUN_UTIL_H
#define VIGIL_TESTS_DS_RUN_UTIL_H

#include "test_util.h"
#include "vigil/vigil.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct ds_run {
    vg_graph *g;
    vg_session *s;
    vg_op *next, *init;
    int nout; /* the element's components (at most 8) */
} ds_run;

/* Makes ds's initializable iterator, its get_next and a session on g (r owns g from now on);
 * false (after a failed check) where the graph or the session fails. Does not run init. */
static inline bool ds_run_open(ds_run *r, vg_graph *g, vg_output ds) {
    vg_status st;
    memset(r, 0, sizeof *r);
    r->g = g;
    vg_output it = vg_make_initializable_iterator(g, ds, &r->init, NULL);
    r->next = vg_iterator_get_next(g, it, NULL);
    CHECK_OK(vg_graph_status(g, &st), &st);
    if (vg_graph_status(g, &st) != VG_OK) return false;
    r->nout = vg_op_num_outputs(r->next);
    r->s = vg_session_new(g, NULL, &st);
    CHECK(r->s != NULL);
    return r->s != NULL;
}

static inline vg_code ds_run_init(ds_run *r, vg_status *st) { return vg_session_run_targets(r->s, &r->init, 1, st); }

/* The next element's components (new tensors), or the run's error / OUT_OF_RANGE. */
static inline vg_code ds_run_next(ds_run *r, vg_tensor **t, vg_status *st) {
    vg_output f[8];
    for (int i = 0; i < r->nout; i++) f[i] = vg_out(r->next, i);
    return vg_session_run(r->s, NULL, NULL, NULL, 0, f, t, r->nout, NULL, 0, NULL, st);
}

/* Frees r's session and graph. */
static inline void ds_run_close(ds_run *r) {
    vg_session_free(r->s);
    vg_graph_free(r->g);
}

static inline void ds_free_all(vg_tensor **t, int n) {
    for (int i = 0; i < n; i++) vg_tensor_free(t[i]);
}

/* the most values (element values plus a -1 after each element) one run may read */
#define DS_CKPT_MAX 512

/* Appends the next element's values (int64) then -1 to v at k: the new length; k at the end
 * (st's code is then OUT_OF_RANGE); -1 on another error. */
static inline int ds_take_i64(vg_session *s, vg_op *next, int64_t *v, int k, vg_status *st) {
    vg_output f = vg_out(next, 0);
    vg_tensor *t = NULL;
    vg_code rc = vg_session_run(s, NULL, NULL, NULL, 0, &f, &t, 1, NULL, 0, NULL, st);
    if (rc != VG_OK) return rc == VG_OUT_OF_RANGE ? k : -1;
    for (int64_t i = 0; i < vg_tensor_num_elements(t) && k < DS_CKPT_MAX - 1; i++)
        v[k++] = ((const int64_t *)vg_tensor_data(t))[i];
    v[k++] = -1;
    vg_tensor_free(t);
    return k;
}

/* Runs build's pipeline to its end (checked to be OUT_OF_RANGE) reading the values into
 * all[0..DS_CKPT_MAX); then, for each of the nb breaks, reads breaks[bi] elements, saves the
 * iterator, restores it in a new graph and session and reads to the end: the values must be
 * all's (a failure names what and the break). Returns how many values all holds (all may
 * be NULL when the caller does not want them). */
static inline int ds_checkpoint_breaks(const char *what, vg_output (*build)(vg_graph *g), const int *breaks, int nb,
                                       int64_t *all) {
    vg_status st;
    int64_t local[DS_CKPT_MAX];
    if (!all) all = local;
    int nall = 0;
    { /* uninterrupted */
        vg_graph *g = vg_graph_new();
        vg_op *init;
        vg_op *next = vg_iterator_get_next(g, vg_make_initializable_iterator(g, build(g), &init, NULL), NULL);
        vg_session *s = vg_session_new(g, NULL, &st);
        CHECK(s != NULL);
        if (s) {
            CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
            for (int k; (k = ds_take_i64(s, next, all, nall, &st)) > nall;) nall = k;
            CHECK_EQ_INT(st.code, VG_OUT_OF_RANGE);
        }
        vg_session_free(s);
        vg_graph_free(g);
    }
    for (int bi = 0; bi < nb; bi++) {
        int64_t got[DS_CKPT_MAX];
        int ngot = 0;
        char *saved = NULL;
        size_t slen = 0;
        for (int phase = 0; phase < 2; phase++) {
            vg_graph *g = vg_graph_new();
            vg_op *init;
            vg_output it = vg_make_initializable_iterator(g, build(g), &init, NULL);
            vg_output sv = vg_make_saveable_from_iterator(g, it, NULL);
            vg_output ph = vg_placeholder(g, VG_STRING, NULL, 0, "state");
            vg_op *restore = vg_saveable_restore(g, sv, ph, NULL);
            vg_op *next = vg_iterator_get_next(g, it, NULL);
            vg_session *s = vg_session_new(g, NULL, &st);
            CHECK(s != NULL);
            if (s && phase == 0) {
                CHECK_OK(vg_session_run_targets(s, &init, 1, &st), &st);
                for (int e = 0; e < breaks[bi] && ngot >= 0; e++) ngot = ds_take_i64(s, next, got, ngot, &st);
                vg_tensor *t = NULL;
                CHECK_OK(vg_session_run(s, NULL, NULL, NULL, 0, &sv, &t, 1, NULL, 0, NULL, &st), &st);
                if (t) {
                    const char *b = vg_tensor_string(t, 0, &slen);
                    saved = malloc(slen);
                    memcpy(saved, b, slen);
                    vg_tensor_free(t);
                }
            } else if (s && saved) {
                vg_tensor *t = vg_tensor_new_string_scalar(saved, slen, &st);
                CHECK_OK(vg_session_run(s, NULL, &ph, &t, 1, NULL, NULL, 0, &restore, 1, NULL, &st), &st);
                vg_tensor_free(t);
                for (int k; ngot >= 0 && (k = ds_take_i64(s, next, got, ngot, &st)) > ngot;) ngot = k;
            }
            vg_session_free(s);
            vg_graph_free(g);
        }
        free(saved);
        bool same = ngot == nall && memcmp(got, all, sizeof(int64_t) * (size_t)nall) == 0;
        if (!same) fprintf(stderr, "%s: break after %d elements: %d values, expected %d\n", what, breaks[bi], ngot, nall);
        CHECK(same);
    }
    return nall;
}

#endif
