/*
 * checkpoint.c - checkpoint management as TF's checkpoint_management.py
 * (latest_checkpoint, get_checkpoint_state, checkpoint_exists) and a checkpoint reader
 * over the V2 bundle reader (inspect_checkpoint / tf.train.load_checkpoint).
 *
 * The `checkpoint` state file is parsed by the io layer (io/ckpt_state.c); relative
 * paths in it are joined to the checkpoint directory here, as TF does.
 */
#include "train_util.h"
#include "io/io.h"
#include "vigil/saver.h"
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* ------------------------------------------------------------------------ */
/* paths */

/* os.path.join(dir, p) for one component: p when absolute or dir is empty. New string. */
static char *path_join(const char *dir, const char *p) {
    size_t nd = strlen(dir), np = strlen(p);
    if (p[0] == '/' || nd == 0) return vg__train_strdup(p);
    bool slash = dir[nd - 1] == '/';
    char *s = vg_malloc(nd + np + 2);
    if (!s) return NULL;
    memcpy(s, dir, nd);
    if (!slash) s[nd++] = '/';
    memcpy(s + nd, p, np + 1);
    return s;
}

static bool file_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode);
}

/* No allocation for the usual path lengths: an out-of-memory condition must not make
 * a checkpoint look absent. */
bool vg_checkpoint_exists(const char *prefix) {
    if (!prefix || !*prefix) return false;
    size_t n = strlen(prefix);
    char local[4096], *idx = n + 7 <= sizeof local ? local : vg_malloc(n + 7);
    if (!idx) return file_exists(prefix);
    memcpy(idx, prefix, n);
    memcpy(idx + n, ".index", 7);
    bool ok = file_exists(idx) || file_exists(prefix); /* V2 index, else a V1 file */
    if (idx != local) vg_free(idx);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* CheckpointState */

void vg_checkpoint_state_free(vg_checkpoint_state *cs) {
    if (!cs) return;
    vg_free(cs->model_checkpoint_path);
    for (int i = 0; i < cs->n_all; i++) vg_free(cs->all_model_checkpoint_paths[i]);
    vg_free(cs->all_model_checkpoint_paths);
    vg_free(cs);
}

vg_code vg_get_checkpoint_state(const char *dir, vg_checkpoint_state **out, vg_status *st) {
    if (!out) return vg_status_set(st, VG_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    if (!dir) return vg_status_set(st, VG_INVALID_ARGUMENT, "checkpoint directory is NULL");
    char *path = path_join(dir, "checkpoint");
    if (!path) return VG_OOM(st, "path");
    vg__ckpt_state s;
    memset(&s, 0, sizeof s);
    uint8_t *text = NULL;
    size_t len = 0;
    vg_code c = vg__io_read_file(path, &text, &len, st);
    if (!c) {
        c = vg__ckpt_state_parse((const char *)text, len, &s, st);
        vg_free(text); /* vg__io_read_file allocates with the vigil allocator */
        /* TF: a file that parses but names no model_checkpoint_path is ValueError */
        if (c == VG_INVALID_ARGUMENT) c = vg_status_set(st, c, "Invalid checkpoint state loaded from %s", dir);
        else if (c) vg_status_prefix(st, "%s: ", path);
    }
    vg_free(path);
    if (c) return c;
    if (!s.model_checkpoint_path || !*s.model_checkpoint_path) {
        vg__ckpt_state_free(&s);
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Invalid checkpoint state loaded from %s", dir);
    }
    vg_checkpoint_state *cs = vg_calloc(1, sizeof *cs);
    if (!cs || !(cs->model_checkpoint_path = path_join(dir, s.model_checkpoint_path))) goto oom;
    if (s.n_all) {
        cs->all_model_checkpoint_paths = vg_calloc((size_t)s.n_all, sizeof(char *));
        if (!cs->all_model_checkpoint_paths) goto oom;
        for (int i = 0; i < s.n_all; i++, cs->n_all++)
            if (!(cs->all_model_checkpoint_paths[i] = path_join(dir, s.all_paths[i]))) goto oom;
    }
    vg__ckpt_state_free(&s);
    *out = cs;
    vg_status_clear(st);
    return VG_OK;
oom:
    vg__ckpt_state_free(&s);
    vg_checkpoint_state_free(cs);
    return VG_OOM(st, "checkpoint state");
}

const char *vg_latest_checkpoint(const char *dir, char *buf, size_t len) {
    vg_checkpoint_state *cs = NULL;
    if (!buf || !len || vg_get_checkpoint_state(dir, &cs, NULL) != VG_OK) return NULL;
    const char *res = NULL;
    if (!vg_checkpoint_exists(cs->model_checkpoint_path)) {
        vg_logf(VG_LOG_ERROR, "Couldn't match files for checkpoint %s", cs->model_checkpoint_path);
    } else if (strlen(cs->model_checkpoint_path) >= len) {
        vg_logf(VG_LOG_ERROR, "checkpoint path %s does not fit the buffer", cs->model_checkpoint_path);
    } else {
        strcpy(buf, cs->model_checkpoint_path);
        res = buf;
    }
    vg_checkpoint_state_free(cs);
    return res;
}

/* ------------------------------------------------------------------------ */
/* finding the checkpoint to resume from (no silent restart from step 0) */

/* A complete V2 checkpoint: its index parses and every tensor's bytes lie inside
 * existing data files. */
static bool checkpoint_complete(const char *prefix) {
    vg_status tmp;
    vg__bundle_reader *r = vg__bundle_reader_open(prefix, &tmp);
    if (!r) return false;
    bool ok = true;
    size_t n = vg__bundle_reader_num_entries(r);
    for (size_t i = 0; ok && i < n; i++) {
        const vg__bundle_entry *e = vg__bundle_reader_entry(r, i);
        if (!e->sliced) ok = vg__bundle_reader_check_data(r, e->name, &tmp) == VG_OK;
    }
    vg__bundle_reader_free(r);
    return ok;
}

static vg_code copy_out(const char *p, char *buf, size_t len, vg_status *st) {
    if (strlen(p) >= len) return vg_status_set(st, VG_INVALID_ARGUMENT, "checkpoint path %s does not fit the buffer", p);
    strcpy(buf, p);
    vg_status_clear(st);
    return VG_OK;
}

typedef struct listed_ckpt {
    char *prefix;
    long long step;      /* the "-N" suffix, -1 when none */
    int64_t mtime_ns;    /* of the .index file */
} listed_ckpt;

static int cmp_listed_newest_first(const void *a, const void *b) {
    const listed_ckpt *x = a, *y = b;
    if (x->step != y->step) return x->step < y->step ? 1 : -1;
    if (x->mtime_ns != y->mtime_ns) return x->mtime_ns < y->mtime_ns ? 1 : -1;
    return strcmp(x->prefix, y->prefix);
}

static long long prefix_step(const char *prefix) {
    size_t n = strlen(prefix), i = n;
    while (i > 0 && prefix[i - 1] >= '0' && prefix[i - 1] <= '9') i--;
    if (i == n || i == 0 || prefix[i - 1] != '-' || n - i > 18) return -1;
    return strtoll(prefix + i, NULL, 10);
}

/* The newest complete checkpoint among the "<dir>/...index" files into buf. VG_OK, VG_NOT_FOUND
 * (no .index file at all), DATA_LOSS (index files, none complete). *nindex = how many
 * .index files were seen. */
static vg_code newest_listed(const char *dir, char *buf, size_t len, int *nindex, vg_status *st) {
    *nindex = 0;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT) return vg_status_set(st, VG_NOT_FOUND, "no checkpoint directory %s", dir);
        return vg_status_set(st, VG_DATA_LOSS, "cannot list checkpoint directory %s: %s", dir, strerror(errno));
    }
    listed_ckpt *v = NULL;
    int n = 0, cap = 0;
    vg_code c = VG_OK;
    struct dirent *e;
    while (!c && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l <= 6 || strcmp(e->d_name + l - 6, ".index") != 0) continue;
        char *idx = path_join(dir, e->d_name);
        struct stat sb;
        if (!idx || !vg__train_grow((void **)&v, &cap, n + 1, sizeof *v)) {
            vg_free(idx);
            c = VG_OOM(st, "checkpoint listing");
            break;
        }
        if (stat(idx, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            vg_free(idx);
            continue;
        }
        idx[strlen(idx) - 6] = 0;
        v[n].prefix = idx;
        v[n].step = prefix_step(idx);
        v[n].mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
        n++;
    }
    closedir(d);
    *nindex = n;
    if (!c) {
        if (n > 1) qsort(v, (size_t)n, sizeof *v, cmp_listed_newest_first); /* v may be NULL when n == 0 */
        c = n ? vg_status_set(st, VG_DATA_LOSS, "%s holds %d checkpoint index files but no complete checkpoint", dir, n)
              : vg_status_set(st, VG_NOT_FOUND, "no checkpoint in %s", dir);
        for (int i = 0; i < n; i++)
            if (checkpoint_complete(v[i].prefix)) {
                c = copy_out(v[i].prefix, buf, len, st);
                break;
            }
    }
    for (int i = 0; i < n; i++) vg_free(v[i].prefix);
    vg_free(v);
    return c;
}

vg_code vg_checkpoint_find_latest(const char *dir, char *buf, size_t len, vg_status *st) {
    if (!dir || !buf || !len) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_checkpoint_find_latest: NULL argument");
    buf[0] = 0;
    char *state_path = path_join(dir, "checkpoint");
    if (!state_path) return VG_OOM(st, "path");
    struct stat lsb;
    bool have_state = lstat(state_path, &lsb) == 0;
    vg_code c;
    if (have_state) {
        vg_checkpoint_state *cs = NULL;
        vg_status why;
        if ((c = vg_get_checkpoint_state(dir, &cs, &why)) != VG_OK) {
            c = vg_status_set(st, VG_DATA_LOSS,
                              "checkpoint state file %s exists but cannot be used (%s); refusing to start over: "
                              "repair or remove it",
                              state_path, why.msg);
            vg_free(state_path);
            return c;
        }
        c = VG_NOT_FOUND;
        if (checkpoint_complete(cs->model_checkpoint_path)) {
            c = copy_out(cs->model_checkpoint_path, buf, len, st);
        } else {
            for (int i = cs->n_all - 1; i >= 0; i--)
                if (checkpoint_complete(cs->all_model_checkpoint_paths[i])) {
                    vg_logf(VG_LOG_WARN, "%s names %s, which is missing or incomplete; using %s, the newest complete "
                            "checkpoint it lists", state_path, cs->model_checkpoint_path,
                            cs->all_model_checkpoint_paths[i]);
                    c = copy_out(cs->all_model_checkpoint_paths[i], buf, len, st);
                    break;
                }
        }
        if (c == VG_NOT_FOUND) {
            int nidx;
            c = newest_listed(dir, buf, len, &nidx, st);
            if (c == VG_OK)
                vg_logf(VG_LOG_WARN, "%s names no complete checkpoint (latest: %s); using %s, the newest complete "
                        "checkpoint found by listing %s", state_path, cs->model_checkpoint_path, buf, dir);
            else if (c == VG_NOT_FOUND || c == VG_DATA_LOSS)
                c = vg_status_set(st, VG_DATA_LOSS, "%s names %s, but no complete checkpoint exists in %s; refusing "
                                  "to start over", state_path, cs->model_checkpoint_path, dir);
        }
        vg_checkpoint_state_free(cs);
        vg_free(state_path);
        return c;
    }
    int nidx;
    c = newest_listed(dir, buf, len, &nidx, st);
    if (c == VG_OK)
        vg_logf(VG_LOG_WARN, "no checkpoint state file %s; using %s, the newest complete checkpoint found by listing "
                "the directory", state_path, buf);
    vg_free(state_path);
    return c;
}

/* ------------------------------------------------------------------------ */
/* reader */

struct vg_checkpoint_reader {
    vg__bundle_reader *r;
};

vg_checkpoint_reader *vg_checkpoint_reader_new(const char *prefix, vg_status *st) {
    if (!prefix || !*prefix) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "empty checkpoint prefix");
        return NULL;
    }
    vg_checkpoint_reader *cr = vg__train_calloc(sizeof *cr, st, "checkpoint reader");
    if (!cr) return NULL;
    if (!(cr->r = vg__bundle_reader_open(prefix, st))) {
        vg_free(cr);
        /* TF's NewCheckpointReader falls back to the V1 TensorSliceReader when there is
         * no V2 index, and that fails with this NotFoundError */
        if (st && st->code == VG_NOT_FOUND && !vg_checkpoint_exists(prefix))
            vg_status_set(st, VG_NOT_FOUND,
                          "Unsuccessful TensorSliceReader constructor: Failed to find any matching files for %s",
                          prefix);
        return NULL;
    }
    vg_status_clear(st);
    return cr;
}

void vg_checkpoint_reader_free(vg_checkpoint_reader *r) {
    if (!r) return;
    vg__bundle_reader_free(r->r);
    vg_free(r);
}

int vg_checkpoint_reader_num_tensors(const vg_checkpoint_reader *r) {
    return r ? (int)vg__bundle_reader_num_entries(r->r) : 0;
}

static vg_shape entry_shape(const vg__bundle_entry *e) {
    if (e->ndims > VG_MAX_DIMS) return vg_shape_unknown();
    return vg_shape_make(e->dims, e->ndims);
}

const char *vg_checkpoint_reader_tensor(const vg_checkpoint_reader *r, int i, vg_dtype *dt, vg_shape *shape) {
    if (!r || i < 0 || (size_t)i >= vg__bundle_reader_num_entries(r->r)) return NULL;
    const vg__bundle_entry *e = vg__bundle_reader_entry(r->r, (size_t)i);
    if (dt) *dt = (vg_dtype)e->dtype;
    if (shape) *shape = entry_shape(e);
    return e->name;
}

static bool vigil_dtype(int dt) {
    return dt == VG_FLOAT || dt == VG_DOUBLE || dt == VG_INT32 || dt == VG_UINT8 || dt == VG_INT64 ||
           dt == VG_BOOL || dt == VG_HALF || dt == VG_BFLOAT16 || dt == VG_STRING || dt == VG_COMPLEX64 || dt == VG_COMPLEX128;
}

static vg_code read_strings(vg_checkpoint_reader *r, const char *name, vg_tensor *t, vg_status *st) {
    char **strs;
    size_t *lens;
    int64_t n;
    vg_code c = vg__bundle_reader_read_strings(r->r, name, &strs, &lens, &n, st);
    if (c) return c;
    for (int64_t i = 0; !c && i < n && i < vg_tensor_num_elements(t); i++)
        c = vg_tensor_set_string(t, i, strs[i], lens[i], st);
    vg__bundle_strings_free(strs, lens, n);
    return c;
}

vg_tensor *vg_checkpoint_reader_read(vg_checkpoint_reader *r, const char *name, vg_status *st) {
    if (!r || !name) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "NULL checkpoint reader or tensor name");
        return NULL;
    }
    const vg__bundle_entry *e = vg__bundle_reader_find(r->r, name);
    if (!e) {
        vg_status_set(st, VG_NOT_FOUND, "Key %s not found in checkpoint", name);
        return NULL;
    }
    if (!vigil_dtype(e->dtype)) {
        vg_status_set(st, VG_UNIMPLEMENTED, "tensor %s has dtype %d, which vigil has no tensor type for", name,
                      e->dtype);
        return NULL;
    }
    if (e->ndims > VG_MAX_DIMS) {
        vg_status_set(st, VG_UNIMPLEMENTED, "tensor %s has rank %d; vigil tensors have at most %d dims", name,
                      e->ndims, VG_MAX_DIMS);
        return NULL;
    }
    if (e->sliced) { /* refused before a tensor of the (unchecked) full shape is allocated */
        vg_status_set(st, VG_UNIMPLEMENTED, "tensor %s is partitioned (sliced) in the checkpoint; vigil reads only "
                      "whole tensors", name);
        return NULL;
    }
    /* the index's size must fit the data file before the tensor is allocated */
    if (vg__bundle_reader_check_data(r->r, name, st) != VG_OK) return NULL;
    vg_tensor *t = vg_tensor_new((vg_dtype)e->dtype, e->dims, e->ndims, st);
    if (!t) return NULL;
    vg_code c = e->dtype == VG_STRING ? read_strings(r, name, t, st)
                                      : vg__bundle_reader_read(r->r, name, vg_tensor_data(t), vg_tensor_nbytes(t), st);
    if (c) {
        vg_tensor_free(t);
        return NULL;
    }
    vg_status_clear(st);
    return t;
}
