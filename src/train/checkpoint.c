/*
 * checkpoint.c - checkpoint management as TF's checkpoint_management.py
 * (latest_checkpoint, get_checkpoint_state, checkpoint_exists) and a checkpoint reader
 * over the V2 bundle reader (inspect_checkpoint / tf.train.load_checkpoint).
 *
 * The `checkpoint` state file is parsed by the io layer (io/ckpt_state.c); relative
 * paths in it are joined to the checkpoint directory here, as TF does.
 */
#include "io/io.h"
#include "vigil/saver.h"
#include <stdio.h>
#include <sys/stat.h>

/* ------------------------------------------------------------------------ */
/* paths */

/* os.path.join(dir, p) for one component: p when absolute or dir is empty. New string. */
static char *path_join(const char *dir, const char *p) {
    size_t nd = strlen(dir), np = strlen(p);
    if (p[0] == '/' || nd == 0) return vg__strdup(p);
    bool slash = dir[nd - 1] == '/';
    char *s = vg__malloc(nd + np + 2);
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
    char local[4096], *idx = n + 7 <= sizeof local ? local : vg__malloc(n + 7);
    if (!idx) return file_exists(prefix);
    memcpy(idx, prefix, n);
    memcpy(idx + n, ".index", 7);
    bool ok = file_exists(idx) || file_exists(prefix); /* V2 index, else a V1 file */
    if (idx != local) vg__free(idx);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* CheckpointState */

void vg_checkpoint_state_free(vg_checkpoint_state *cs) {
    if (!cs) return;
    vg__free(cs->model_checkpoint_path);
    for (int i = 0; i < cs->n_all; i++) vg__free(cs->all_model_checkpoint_paths[i]);
    vg__free(cs->all_model_checkpoint_paths);
    vg__free(cs);
}

vg_code vg_get_checkpoint_state(const char *dir, vg_checkpoint_state **out, vg_status *st) {
    if (!out) return vg_status_set(st, VG_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    if (!dir) return vg_status_set(st, VG_INVALID_ARGUMENT, "checkpoint directory is NULL");
    char *path = path_join(dir, "checkpoint");
    if (!path) return VG_OOM(st, "path");
    vg__ckpt_state s;
    memset(&s, 0, sizeof s);
    vg_code c = vg__ckpt_state_read(path, &s, st);
    vg__free(path);
    if (c) return c;
    if (!s.model_checkpoint_path || !*s.model_checkpoint_path) {
        vg__ckpt_state_free(&s);
        return vg_status_set(st, VG_DATA_LOSS, "Invalid checkpoint state loaded from %s", dir);
    }
    vg_checkpoint_state *cs = vg__calloc(1, sizeof *cs);
    if (!cs || !(cs->model_checkpoint_path = path_join(dir, s.model_checkpoint_path))) goto oom;
    if (s.n_all) {
        cs->all_model_checkpoint_paths = vg__calloc((size_t)s.n_all, sizeof(char *));
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
/* reader */

struct vg_checkpoint_reader {
    vg__bundle_reader *r;
};

vg_checkpoint_reader *vg_checkpoint_reader_new(const char *prefix, vg_status *st) {
    if (!prefix || !*prefix) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "empty checkpoint prefix");
        return NULL;
    }
    vg_checkpoint_reader *cr = vg__calloc(1, sizeof *cr);
    if (!cr) {
        VG_OOM(st, "checkpoint reader");
        return NULL;
    }
    if (!(cr->r = vg__bundle_reader_open(prefix, st))) {
        vg__free(cr);
        return NULL;
    }
    vg_status_clear(st);
    return cr;
}

void vg_checkpoint_reader_free(vg_checkpoint_reader *r) {
    if (!r) return;
    vg__bundle_reader_free(r->r);
    vg__free(r);
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
           dt == VG_BOOL || dt == VG_STRING;
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
