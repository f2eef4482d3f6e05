/*
 * dataset_window.c - Dataset.window (TF's WindowDataset, window_dataset_op.cc) and the
 * datasets it yields (TF's window_dataset.cc): each element of a window dataset is, per
 * component of its input, a dataset of that component's values in one window, which a
 * flat_map / interleave function reads (batch, zip, ...).
 *
 * WINDOW: a = size, b = shift, c = stride, flag = drop_remainder. Its iterator keeps a
 * buffer of the input's next (size - 1) * stride + 1 elements (or errors, at their
 * positions); a window takes every stride-th of them and fails with the first error
 * among those; then the buffer drops `shift` elements (reading and discarding more of
 * the input when shift is larger than the buffer). At the input's end, partial windows
 * come out unless drop_remainder.
 *
 * WINDOW_ELEMENTS: a source over d->elems (the window's values of one component).
 *
 * Saved states (TF's SaveInternal): the window iterator writes whether its input is
 * still open, the input's position and the buffer (each item's code, message or
 * tensors); a window element's iterator its index. A window handed out and held by a
 * flat_map / interleave is saved as an element holding a dataset (dataset_state.c:
 * its description and its values).
 */
#include "data/dataset.h"
#include <stdio.h>

/* ------------------------------------------------------------------------ */
/* the elements of one window */

typedef struct elems_it {
    vg__ds_iter base;
    int64_t i;
} elems_it;

static vg_code elems_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    (void)st;
    elems_it *e = (elems_it *)it;
    const vg__dataset *d = it->ds;
    if (e->i >= d->nelems) {
        *end = true;
        return VG_OK;
    }
    out[0] = vg_tensor_ref(d->elems[e->i++]);
    return VG_OK;
}

static vg_code elems_init(vg__ds_iter *it, vg_status *st) {
    (void)st;
    it->next = elems_next;
    return VG_OK;
}

static vg_code elems_save(vg__ds_iter *it, vg__ds_wr *w, vg_status *st) {
    (void)st;
    vg__ds_put_i64(w, ((elems_it *)it)->i);
    return VG_OK;
}

static vg_code elems_restore(vg__ds_iter *it, vg__ds_rd *r, vg_status *st) {
    (void)st;
    ((elems_it *)it)->i = vg__ds_get_range(r, 0, it->ds->nelems);
    return VG_OK;
}

/* one component; its values are checked against it where they are read */
static bool elems_valid(const vg__dataset *d) { return d->ncomp == 1; }

const vg__ds_kind vg__ds_kind_window_elements = {
    .name = "WindowElements",
    .iter_size = sizeof(elems_it),
    .iter_init = elems_init,
    .save = elems_save,
    .restore = elems_restore,
    .valid = elems_valid,
};

/* ------------------------------------------------------------------------ */
/* the window dataset */

typedef struct win_item {
    vg_code code;               /* the input's result at this position */
    char *msg;                  /* its error message (code != OK) */
    vg_tensor *t[VG_DATASET_MAX_COMPONENTS];
} win_item;

typedef struct window_it {
    vg__ds_iter base;
    vg__ds_iter *in;            /* NULL once the input has ended */
    win_item *buf;              /* the buffer, oldest first */
    int64_t n, cap;
} window_it;

static void item_clear(win_item *b, int nc) {
    vg__ds_free_elem(b->t, nc);
    vg__free(b->msg);
    b->msg = NULL;
}

static void window_free(vg__ds_iter *it) {
    window_it *w = (window_it *)it;
    for (int64_t i = 0; i < w->n; i++) item_clear(&w->buf[i], it->ds->ncomp);
    vg__free(w->buf);
    vg__ds_iter_free(w->in);
}

static void window_cancel(vg__ds_iter *it) { vg__ds_iter_cancel(((window_it *)it)->in); }

static void input_done(window_it *w) {
    vg__ds_iter_free(w->in);
    w->in = NULL;
}

/* Drops the buffer's first k items. */
static void buf_drop(window_it *w, int64_t k, int nc) {
    for (int64_t i = 0; i < k; i++) item_clear(&w->buf[i], nc);
    memmove(w->buf, w->buf + k, sizeof(win_item) * (size_t)(w->n - k));
    memset(w->buf + (w->n - k), 0, sizeof(win_item) * (size_t)k);
    w->n -= k;
}

/* A dataset of the window's values of component c (refs taken), as a resource tensor. */
static vg_tensor *component_dataset(const vg__dataset *d, vg_tensor **vals, int64_t n, int c, vg_status *st) {
    vg__dataset *e = vg__dataset_new(VG__DS_WINDOW_ELEMENTS);
    if (!e || (n && !(e->elems = vg__calloc((size_t)n, sizeof(vg_tensor *))))) {
        vg__dataset_unref(e);
        VG_OOM(st, "window");
        return NULL;
    }
    e->ncomp = 1;
    e->types[0] = d->input->types[c];
    for (int64_t i = 0; i < n; i++) e->elems[i] = vg_tensor_ref(vals[i]);
    e->nelems = n;
    return vg__dataset_tensor(e, st);
}

static vg_code window_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    window_it *w = (window_it *)it;
    const vg__dataset *d = it->ds;
    const int nc = d->input->ncomp;
    const int64_t size = d->a, shift = d->b, stride = d->c, target = (size - 1) * stride + 1;
    const bool drop = d->flag;
    *end = false;
    if (!w->in && (w->n == 0 || (drop && w->n < target))) {
        *end = true;
        return VG_OK;
    }
    /* fill the buffer up to `target` */
    while (w->in && w->n < target) {
        if (w->n == w->cap) {
            int64_t ncap = w->cap ? w->cap * 2 : (target < 16 ? target : 16);
            if (ncap > target) ncap = target;
            win_item *nb = vg__realloc(w->buf, sizeof(win_item) * (size_t)w->cap, sizeof(win_item) * (size_t)ncap);
            if (!nb) return VG_OOM(st, "window buffer");
            memset(nb + w->cap, 0, sizeof(win_item) * (size_t)(ncap - w->cap));
            w->buf = nb;
            w->cap = ncap;
        }
        win_item *b = &w->buf[w->n];
        bool in_end = false;
        vg_status est;
        vg_status_clear(&est);
        vg_code rc = w->in->next(w->in, b->t, &in_end, &est);
        if (rc == VG_CANCELLED) {
            vg_status_copy(st, &est);
            return rc;
        }
        if (rc == VG_OK && in_end) {
            input_done(w);
            break;
        }
        b->code = rc;
        if (rc != VG_OK && !(b->msg = vg__strdup(est.msg))) return VG_OOM(st, "window buffer");
        w->n++;
    }
    if (w->n == 0 || (drop && w->n < target)) {
        *end = true;
        return VG_OK;
    }
    /* the window: every stride-th buffered element; the first error among them fails it */
    int64_t num = 1 + (w->n - 1) / stride;
    vg_code err = VG_OK;
    const char *emsg = NULL;
    for (int64_t i = 0; i < num && err == VG_OK; i++)
        if (w->buf[i * stride].code != VG_OK) err = w->buf[i * stride].code, emsg = w->buf[i * stride].msg;
    vg_code rc = VG_OK;
    if (err != VG_OK) {
        rc = vg_status_set(st, err, "%s", emsg ? emsg : "");
    } else {
        vg_tensor **vals = vg__calloc((size_t)num, sizeof(vg_tensor *));
        if (!vals) return VG_OOM(st, "window");
        for (int c = 0; c < nc && rc == VG_OK; c++) {
            for (int64_t i = 0; i < num; i++) vals[i] = w->buf[i * stride].t[c];
            if (!(out[c] = component_dataset(d, vals, num, c, st))) {
                rc = st->code;
                vg__ds_free_elem(out, c);
            }
        }
        vg__free(vals);
        if (rc != VG_OK) return rc; /* the buffer is kept: the next call retries */
    }
    /* shift the window */
    if (shift >= w->n) {
        for (int64_t i = w->n; w->in && i < shift; i++) { /* discarded (errors ignored) */
            vg_tensor *t[VG_DATASET_MAX_COMPONENTS] = {0};
            bool in_end = false;
            vg_status est;
            vg_status_clear(&est);
            vg_code r2 = w->in->next(w->in, t, &in_end, &est);
            if (r2 == VG_OK && !in_end) vg__ds_free_elem(t, nc);
            if (in_end) input_done(w);
        }
        buf_drop(w, w->n, nc);
    } else {
        buf_drop(w, shift, nc);
    }
    return rc;
}

/* WindowDatasetOp::MakeDataset: size, shift, stride, drop_remainder */
static vg_code window_params(vg__dataset *d, const vg__ds_op_args *a, vg_status *st) {
    d->a = vg__ds_scalar_i64(a->in[1]), d->b = vg__ds_scalar_i64(a->in[2]), d->c = vg__ds_scalar_i64(a->in[3]);
    d->flag = vg_tensor_scalar(a->in[4]) != 0;
    if (d->a <= 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "Window size must be greater than zero.");
    if (d->b <= 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "Window shift must be greater than zero.");
    if (d->c <= 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "Window stride must be greater than zero.");
    if ((d->a - 1) > (INT64_MAX - 1) / d->c || (d->a - 1) * d->c + 1 > ((int64_t)1 << 40))
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Window target buffer size overflow: (window_size=%lld - 1) * window_stride=%lld + 1 is "
                             "not representable.", (long long)d->a, (long long)d->c);
    return VG_OK;
}

static vg_code window_save(vg__ds_iter *it, vg__ds_wr *w, vg_status *st) {
    window_it *wi = (window_it *)it;
    int nc = it->ds->input->ncomp;
    vg_code rc = vg__ds_save_child(wi->in, w, st);
    if (rc != VG_OK) return rc;
    vg__ds_put_i64(w, wi->n);
    for (int64_t i = 0; i < wi->n && rc == VG_OK; i++)
        rc = vg__ds_put_item(w, wi->buf[i].code, wi->buf[i].t, nc, wi->buf[i].msg, st);
    return rc;
}

static vg_code window_restore(vg__ds_iter *it, vg__ds_rd *r, vg_status *st) {
    window_it *wi = (window_it *)it;
    const vg__dataset *d = it->ds;
    int nc = d->input->ncomp;
    vg_code rc = VG_OK;
    bool open = vg__ds_get_range(r, 0, 1) != 0;
    if (r->bad) return VG_OK;
    if (open && (rc = vg__ds_iter_restore(wi->in, r, st)) != VG_OK) return rc;
    if (!open) input_done(wi);
    int64_t n = vg__ds_get_range(r, 0, (d->a - 1) * d->c + 1);
    if (r->bad || n == 0) return VG_OK;
    if (!(wi->buf = vg__calloc((size_t)n, sizeof(win_item)))) return VG_OOM(st, "window buffer");
    wi->cap = n;
    for (int64_t i = 0; i < n && rc == VG_OK; i++) {
        win_item *b = &wi->buf[i];
        if ((rc = vg__ds_get_item(r, nc, &b->code, b->t, &b->msg, st)) == VG_OK) wi->n++;
    }
    return rc;
}

/* the element types are datasets, one per input component */
static bool window_valid(const vg__dataset *d) {
    if (d->input->ncomp != d->ncomp || d->a <= 0 || d->b <= 0 || d->c <= 0 || (d->a - 1) > (((int64_t)1 << 40) - 1) / d->c)
        return false;
    for (int c = 0; c < d->ncomp; c++)
        if (d->types[c] != VG_RESOURCE) return false;
    return true;
}

static vg_code window_init(vg__ds_iter *it, vg_status *st) {
    window_it *w = (window_it *)it;
    it->next = window_next;
    it->free = window_free;
    it->cancel = window_cancel;
    if (!(w->in = vg__ds_iter_child(it, it->ds->input, st))) return st->code;
    return VG_OK;
}

const vg__ds_kind vg__ds_kind_window = {
    .name = "WindowDataset",
    .ops = {"WindowDataset"},
    .iter_size = sizeof(window_it),
    .params = window_params,
    .iter_init = window_init,
    .save = window_save,
    .restore = window_restore,
    .valid = window_valid,
    .inputs = 1,
    .dataset_elements = true,
};
