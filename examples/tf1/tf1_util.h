/* tf1_util.h - small helpers the TF1 ports in examples/tf1 share (none of them is part
 * of a TF example: flag tables, the Fashion-MNIST files, a training loop's clean-up).
 * Header-only, public API only, so that each port stays one program to read. */
#ifndef VIGIL_EXAMPLES_TF1_UTIL_H
#define VIGIL_EXAMPLES_TF1_UTIL_H

#include "vigil/vigil.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One "--name value" flag of a table: kind 's' (const char *), 'i' (int), 'l' (int64_t)
 * or 'd' (double); dst points at the variable. */
typedef struct tf1_flag {
    const char *name;
    char kind;
    void *dst;
} tf1_flag;

/* argv's "--name value" pairs into the table's variables; "unknown flag <name>" on stderr
 * and 2 for a name not in it, else 0. */
static inline int tf1_parse_flag_pairs(int argc, char **argv, const tf1_flag *flags, int nflags) {
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        const tf1_flag *f = NULL;
        for (int j = 0; j < nflags && !f; j++)
            if (!strcmp(k, flags[j].name)) f = &flags[j];
        if (!f) {
            fprintf(stderr, "unknown flag %s\n", k);
            return 2;
        }
        switch (f->kind) {
        case 's': *(const char **)f->dst = v; break;
        case 'i': *(int *)f->dst = atoi(v); break;
        case 'l': *(int64_t *)f->dst = atoll(v); break;
        default: *(double *)f->dst = atof(v); break;
        }
    }
    return 0;
}

/* The (Fashion-)MNIST training set of dir, uint8: "train-images-idx3-ubyte" and
 * "train-labels-idx1-ubyte", plain or else ".gz". True with *pix (di: its dims) and *lab
 * (dl) to vg_free; false, both NULL, when dir is NULL or neither pair can be read. */
static inline bool tf1_read_mnist_train(const char *dir, uint8_t **pix, uint8_t **lab, int64_t di[4], int64_t dl[4]) {
    char ip[4096], lp[4096];
    vg_status st;
    int ni, nl;
    size_t nb;
    *pix = *lab = NULL;
    for (int gz = 0; gz < 2 && dir; gz++) {
        snprintf(ip, sizeof ip, "%s/train-images-idx3-ubyte%s", dir, gz ? ".gz" : "");
        snprintf(lp, sizeof lp, "%s/train-labels-idx1-ubyte%s", dir, gz ? ".gz" : "");
        if (access(ip, R_OK) == 0 && vg_idx_read(ip, VG_IDX_U8, di, &ni, (void **)pix, &nb, &st) == VG_OK &&
            vg_idx_read(lp, VG_IDX_U8, dl, &nl, (void **)lab, &nb, &st) == VG_OK)
            return true;
        vg_free(*pix);
        vg_free(*lab);
        *pix = *lab = NULL;
    }
    return false;
}

/* One IDX file dir/file of any type into *data (to vg_free), *n its first dimension;
 * 1 with the error on stderr when it cannot be read, else 0. */
static inline int tf1_load_idx(const char *dir, const char *file, uint8_t **data, int64_t *n) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int64_t dims[4];
    int nd;
    size_t nb;
    vg_status st;
    if (vg_idx_read(path, VG_IDX_ANY, dims, &nd, (void **)data, &nb, &st) != VG_OK) {
        fprintf(stderr, "%s\n", st.msg);
        return 1;
    }
    *n = dims[0];
    return 0;
}

/* Removes the self-test's temporary directory tmp (rm -rf; nothing when tmp is ""). */
static inline void tf1_remove_tmpdir(const char *tmp) {
    if (!tmp[0]) return;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
}

/* The end of a training loop fed by queue runners: stop the coordinator, close the
 * session, join the runners (10 s), close the summary writer; frees all three (each may
 * be NULL). */
static inline void tf1_close_training(vg_coord *coord, vg_session *sess, vg_file_writer *summary_writer) {
    vg_coord_request_stop(coord, NULL);
    if (sess) vg_session_close(sess, NULL);
    vg_coord_join(coord, 10, true, NULL);
    vg_coord_free(coord);
    if (summary_writer) vg_file_writer_close(summary_writer, NULL);
    vg_file_writer_free(summary_writer);
    vg_session_free(sess);
}

#endif
