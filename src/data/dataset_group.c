/*
 * dataset_group.c - tf.contrib.data.group_by_window (TF 1.15's GroupByWindowDataset,
 * group_by_window_dataset_op.cc).
 *
 * GROUP_BY_WINDOW: three functions, d->fn = key_func (the element's components ->
 * an int64 scalar key), d->fn2 = reduce_func (key, a dataset of the window's elements
 * -> a dataset), d->fn3 = window_size_func (key -> an int64 scalar, run once per key);
 * d->cap holds their captured values in that order (fn->ncap, fn2->ncap, fn3->ncap).
 *
 * The iterator (TF's GetNextInternal): while a window's dataset (reduce_func's result) is
 * open, its elements come out. Otherwise it reads input elements into the group of their
 * key until a group holds its window size; that group is handed to reduce_func and its
 * dataset read to the end. At the input's end the remaining groups are flushed in
 * increasing key order (TF's std::map::begin()). A window's dataset has the input's
 * components: a WindowElements dataset per component (dataset_window.c), zipped when
 * there are several.
 *
 * Saved states (TF's SaveInternal): the description holds the three functions
 * (dataset_state.c); the position is the input's, the open groups with their elements,
 * the window sizes by key, and the window being read (its group, reduce_func run again
 * over it at a restore, as TF's RestoreInternal does, and its iterator's state).
 */
#include "data/dataset.h"
#include <stdio.h>

typedef struct group {
    int64_t key;
    int64_t n, cap;
    vg_tensor **el;             /* n elements of nc components */
} group;

typedef struct gbw_it {
    vg__ds_iter base;
    vg__ds_iter *in;            /* NULL once the input has ended */
    vg_session *ksess, *rsess, *wsess;
    group *groups;              /* sorted by key */
    int64_t ngroups, gcap;
    int64_t *wkeys, *wvals;     /* window sizes by key, sorted */
    int64_t nw, wcap;
    vg__ds_iter *cur;           /* the window being read: reduce_func's dataset */
    group cur_group;            /* its group (kept for a save: a restore runs reduce_func again) */
} gbw_it;

static void group_clear(group *g, int nc) {
    for (int64_t i = 0; i < g->n * nc; i++) vg_tensor_free(g->el[i]);
    vg__free(g->el);
    memset(g, 0, sizeof *g);
}

static void gbw_free(vg__ds_iter *it) {
    gbw_it *w = (gbw_it *)it;
    int nc = it->ds->input->ncomp;
    for (int64_t i = 0; i < w->ngroups; i++) group_clear(&w->groups[i], nc);
    vg__free(w->groups);
    vg__free(w->wkeys);
    vg__free(w->wvals);
    vg__ds_iter_free(w->cur);
    group_clear(&w->cur_group, nc);
    vg__ds_iter_free(w->in);
    if (w->ksess) vg_session_free(w->ksess);
    if (w->rsess) vg_session_free(w->rsess);
    if (w->wsess) vg_session_free(w->wsess);
}

static void gbw_cancel(vg__ds_iter *it) {
    gbw_it *w = (gbw_it *)it;
    vg__ds_iter_cancel(w->in);
    vg__ds_iter_cancel(w->cur);
}

/* The index of key in sorted keys[0..n) or, when absent, -1 - its insertion point. */
static int64_t find_key(const int64_t *keys, size_t stride, int64_t n, int64_t key) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int64_t k = *(const int64_t *)((const char *)keys + (size_t)mid * stride);
        if (k == key) return mid;
        if (k < key) lo = mid + 1;
        else hi = mid;
    }
    return -1 - lo;
}

/* The int64 scalar a function returned, or INVALID_ARGUMENT with TF's message. */
static vg_code int64_scalar(vg_tensor *t, const char *what, int64_t *v, vg_status *st) {
    if (!t || vg_tensor_dtype(t) != VG_INT64 || vg_tensor_num_elements(t) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "`%s` must return a scalar int64.", what);
    *v = *(const int64_t *)vg_tensor_data(t);
    return VG_OK;
}

/* The window size of key: cached, else window_size_func(key). */
static vg_code window_size_of(gbw_it *w, vg_tensor *key_t, int64_t key, int64_t *size, vg_status *st) {
    const vg__dataset *d = w->base.ds;
    int64_t at = find_key(w->wkeys, sizeof(int64_t), w->nw, key);
    if (at >= 0) {
        *size = w->wvals[at];
        return VG_OK;
    }
    vg_tensor *out = NULL;
    vg_code rc = vg__ds_fn_run_with(w->wsess, d->fn3, d->cap + d->fn->ncap + d->fn2->ncap, &key_t, &out, 1, st);
    if (rc == VG_OK) rc = int64_scalar(out, "window_size_func", size, st);
    vg_tensor_free(out);
    if (rc != VG_OK) return rc;
    if (*size <= 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Window size must be greater than zero, but got %lld.",
                             (long long)*size);
    if (w->nw == w->wcap) {
        int64_t nc = w->wcap ? 2 * w->wcap : 8;
        int64_t *nk = vg__realloc(w->wkeys, sizeof(int64_t) * (size_t)w->wcap, sizeof(int64_t) * (size_t)nc);
        if (nk) w->wkeys = nk;
        int64_t *nv = nk ? vg__realloc(w->wvals, sizeof(int64_t) * (size_t)w->wcap, sizeof(int64_t) * (size_t)nc) : NULL;
        if (nv) w->wvals = nv;
        if (!nk || !nv) return VG_OOM(st, "group_by_window");
        w->wcap = nc;
    }
    at = -1 - at;
    memmove(w->wkeys + at + 1, w->wkeys + at, sizeof(int64_t) * (size_t)(w->nw - at));
    memmove(w->wvals + at + 1, w->wvals + at, sizeof(int64_t) * (size_t)(w->nw - at));
    w->wkeys[at] = key, w->wvals[at] = *size;
    w->nw++;
    return VG_OK;
}

/* The group of key (created empty when absent); NULL on OOM. */
static group *group_of(gbw_it *w, int64_t key) {
    int64_t at = w->ngroups ? find_key(&w->groups[0].key, sizeof(group), w->ngroups, key) : -1;
    if (at >= 0) return &w->groups[at];
    if (w->ngroups == w->gcap) {
        int64_t nc = w->gcap ? 2 * w->gcap : 8;
        group *ng = vg__realloc(w->groups, sizeof(group) * (size_t)w->gcap, sizeof(group) * (size_t)nc);
        if (!ng) return NULL;
        w->groups = ng;
        w->gcap = nc;
    }
    at = -1 - at;
    memmove(w->groups + at + 1, w->groups + at, sizeof(group) * (size_t)(w->ngroups - at));
    memset(&w->groups[at], 0, sizeof(group));
    w->groups[at].key = key;
    w->ngroups++;
    return &w->groups[at];
}

/* A dataset of a group's elements (the input's components), as a resource tensor. */
static vg_tensor *group_dataset(const vg__dataset *d, const group *g, vg_status *st) {
    const vg__dataset *in = d->input;
    int nc = in->ncomp;
    vg__dataset *parts[VG_DATASET_MAX_COMPONENTS] = {0};
    vg_code rc = VG_OK;
    for (int c = 0; c < nc && rc == VG_OK; c++) {
        vg__dataset *e = parts[c] = vg__dataset_new(VG__DS_WINDOW_ELEMENTS);
        if (!e || (g->n && !(e->elems = vg__calloc((size_t)g->n, sizeof(vg_tensor *))))) {
            rc = VG_OOM(st, "group_by_window");
            break;
        }
        e->ncomp = 1;
        e->types[0] = in->types[c];
        for (int64_t i = 0; i < g->n; i++) e->elems[i] = vg_tensor_ref(g->el[i * nc + c]);
        e->nelems = g->n;
    }
    vg__dataset *z = NULL;
    if (rc == VG_OK && nc == 1) {
        z = parts[0];
        parts[0] = NULL;
    } else if (rc == VG_OK) {
        if (!(z = vg__dataset_new(VG__DS_ZIP))) {
            rc = VG_OOM(st, "group_by_window");
        } else {
            z->ncomp = nc;
            memcpy(z->types, in->types, sizeof(vg_dtype) * (size_t)nc);
            z->input = parts[0];
            parts[0] = NULL;
            for (int c = 1; c < nc; c++) z->more[z->nmore++] = parts[c], parts[c] = NULL;
        }
    }
    for (int c = 0; c < nc; c++) vg__dataset_unref(parts[c]);
    return rc == VG_OK ? vg__dataset_tensor(z, st) : NULL;
}

/* reduce_func(g's key, g's dataset) becomes w->cur. */
static vg_code open_window(gbw_it *w, const group *g, vg_status *st) {
    const vg__dataset *d = w->base.ds;
    vg_tensor *args[2] = {vg_tensor_new(VG_INT64, NULL, 0, st), NULL};
    vg_code rc = args[0] ? VG_OK : st->code;
    if (rc == VG_OK) {
        *(int64_t *)vg_tensor_data(args[0]) = g->key;
        if (!(args[1] = group_dataset(d, g, st))) rc = st->code;
    }
    vg_tensor *out = NULL;
    if (rc == VG_OK) rc = vg__ds_fn_run_with(w->rsess, d->fn2, d->cap + d->fn->ncap, args, &out, 1, st);
    vg__ds_free_elem(args, 2);
    vg__dataset *r = NULL;
    if (rc == VG_OK && !(r = vg__dataset_of(out, st))) rc = st->code;
    if (rc == VG_OK && (r->ncomp != d->ncomp || memcmp(r->types, d->types, sizeof(vg_dtype) * (size_t)d->ncomp)))
        rc = vg_status_set(st, VG_INVALID_ARGUMENT,
                           "`reduce_func` returned a dataset of %d components that differ from the %d expected",
                           r->ncomp, d->ncomp);
    if (rc == VG_OK && !(w->cur = vg__ds_iter_child(&w->base, r, st))) rc = st->code;
    vg_tensor_free(out);
    return rc;
}

/* TF's StartFlushingGroup: the group at gi is reduced (open_window) and becomes
 * w->cur_group. */
static vg_code start_flushing(gbw_it *w, int64_t gi, vg_status *st) {
    vg_code rc = open_window(w, &w->groups[gi], st);
    if (rc != VG_OK) return rc;
    w->cur_group = w->groups[gi];
    memmove(w->groups + gi, w->groups + gi + 1, sizeof(group) * (size_t)(w->ngroups - gi - 1));
    w->ngroups--;
    return VG_OK;
}

/* Adds element e (nc references, taken) to its group; *full = the group's index when it
 * reached its window size, else -1. */
static vg_code add_element(gbw_it *w, vg_tensor **e, int64_t *full, vg_status *st) {
    const vg__dataset *d = w->base.ds;
    int nc = d->input->ncomp;
    vg_tensor *kt = NULL;
    int64_t key = 0, size = 0;
    vg_code rc = vg__ds_fn_run_with(w->ksess, d->fn, d->cap, e, &kt, 1, st);
    if (rc == VG_OK) rc = int64_scalar(kt, "key_func", &key, st);
    if (rc == VG_OK) rc = window_size_of(w, kt, key, &size, st);
    vg_tensor_free(kt);
    group *g = rc == VG_OK ? group_of(w, key) : NULL;
    if (rc == VG_OK && !g) rc = VG_OOM(st, "group_by_window");
    if (rc == VG_OK && g->n == g->cap) {
        int64_t ncap = g->cap ? 2 * g->cap : 4;
        vg_tensor **nel = vg__realloc(g->el, sizeof(vg_tensor *) * (size_t)(g->cap * nc),
                                      sizeof(vg_tensor *) * (size_t)(ncap * nc));
        if (!nel) rc = VG_OOM(st, "group_by_window");
        else g->el = nel, g->cap = ncap;
    }
    if (rc != VG_OK) {
        vg__ds_free_elem(e, nc);
        return rc;
    }
    memcpy(g->el + g->n * nc, e, sizeof(vg_tensor *) * (size_t)nc);
    g->n++;
    *full = g->n == size ? g - w->groups : -1;
    return VG_OK;
}

static vg_code gbw_next(vg__ds_iter *it, vg_tensor **out, bool *end, vg_status *st) {
    gbw_it *w = (gbw_it *)it;
    int nc = it->ds->input->ncomp;
    *end = false;
    do {
        if (w->cur) {
            bool e = false;
            vg_code rc = w->cur->next(w->cur, out, &e, st);
            if (rc != VG_OK || !e) return rc;
            vg__ds_iter_free(w->cur);
            w->cur = NULL;
            group_clear(&w->cur_group, nc);
        }
        while (w->in) {
            vg_tensor *e[VG_DATASET_MAX_COMPONENTS] = {0};
            bool in_end = false;
            vg_code rc = w->in->next(w->in, e, &in_end, st);
            if (rc != VG_OK) return rc;
            if (in_end) {
                vg__ds_iter_free(w->in);
                w->in = NULL;
                break;
            }
            int64_t full = -1;
            if ((rc = add_element(w, e, &full, st)) != VG_OK) return rc;
            if (full >= 0) {
                if ((rc = start_flushing(w, full, st)) != VG_OK) return rc;
                break;
            }
        }
        if (!w->in && !w->cur && w->ngroups > 0) {
            vg_code rc = start_flushing(w, 0, st); /* the smallest key first */
            if (rc != VG_OK) return rc;
        }
    } while (w->cur || w->in);
    *end = true;
    return VG_OK;
}

static vg_code gbw_init(vg__ds_iter *it, vg_status *st) {
    gbw_it *w = (gbw_it *)it;
    const vg__dataset *d = it->ds;
    it->next = gbw_next;
    it->free = gbw_free;
    it->cancel = gbw_cancel;
    vg_session_options o = {0};
    o.intra_op_threads = 1;
    o.inter_op_threads = 1;
    if (!(w->ksess = vg_session_new(d->fn->g, &o, st)) || !(w->rsess = vg_session_new(d->fn2->g, &o, st)) ||
        !(w->wsess = vg_session_new(d->fn3->g, &o, st)))
        return st->code;
    if (!(w->in = vg__ds_iter_child(it, d->input, st))) return st->code;
    return VG_OK;
}

/* A group: key, count, its elements. */
static vg_code put_group(vg__ds_wr *wr, const group *g, int nc, vg_status *st) {
    vg__ds_put_i64(wr, g->key);
    vg__ds_put_i64(wr, g->n);
    vg_code rc = VG_OK;
    for (int64_t i = 0; i < g->n && rc == VG_OK; i++) rc = vg__ds_put_item(wr, VG_OK, g->el + i * nc, nc, NULL, st);
    return rc;
}

static vg_code get_group(vg__ds_rd *r, group *g, int nc, vg_status *st) {
    g->key = vg__ds_get_i64(r);
    int64_t n = vg__ds_get_range(r, 0, (int64_t)((r->len - r->pos) / 8));
    if (r->bad) return VG_OK;
    if (n && !(g->el = vg__calloc((size_t)(n * nc), sizeof(vg_tensor *)))) return VG_OOM(st, "group_by_window");
    g->cap = n;
    for (int64_t i = 0; i < n && !r->bad; i++) {
        vg_code code;
        char *msg = NULL;
        vg_code rc = vg__ds_get_item(r, nc, &code, g->el + i * nc, &msg, st);
        vg__free(msg);
        if (rc != VG_OK) return rc;
        if (code != VG_OK) {
            r->bad = true;
            break;
        }
        g->n++;
    }
    return VG_OK;
}

/* TF's SaveInternal: whether the input is open and its state; the groups (key and
 * elements, in key order); the window sizes by key; the window being read (its group,
 * then its iterator's state), if any. */
static vg_code gbw_save(vg__ds_iter *it, vg__ds_wr *wr, vg_status *st) {
    gbw_it *w = (gbw_it *)it;
    int nc = it->ds->input->ncomp;
    vg_code rc = vg__ds_save_child(w->in, wr, st);
    if (rc != VG_OK) return rc;
    vg__ds_put_i64(wr, w->ngroups);
    for (int64_t i = 0; i < w->ngroups && rc == VG_OK; i++) rc = put_group(wr, &w->groups[i], nc, st);
    vg__ds_put_i64(wr, w->nw);
    for (int64_t i = 0; i < w->nw; i++) {
        vg__ds_put_i64(wr, w->wkeys[i]);
        vg__ds_put_i64(wr, w->wvals[i]);
    }
    vg__ds_put_i64(wr, w->cur != NULL);
    if (w->cur && rc == VG_OK) rc = put_group(wr, &w->cur_group, nc, st);
    if (w->cur && rc == VG_OK) rc = vg__ds_iter_save(w->cur, wr, st);
    return rc;
}

/* TF's RestoreInternal: the window being read is reduce_func run again over its group,
 * then restored. */
static vg_code gbw_restore(vg__ds_iter *it, vg__ds_rd *r, vg_status *st) {
    gbw_it *w = (gbw_it *)it;
    int nc = it->ds->input->ncomp;
    vg_code rc = VG_OK;
    bool open = vg__ds_get_range(r, 0, 1) != 0;
    if (r->bad) return VG_OK;
    if (open && (rc = vg__ds_iter_restore(w->in, r, st)) != VG_OK) return rc;
    if (!open) {
        vg__ds_iter_free(w->in);
        w->in = NULL;
    }
    int64_t ng = vg__ds_get_range(r, 0, (int64_t)((r->len - r->pos) / 16));
    if (r->bad) return VG_OK;
    if (ng && !(w->groups = vg__calloc((size_t)ng, sizeof(group)))) return VG_OOM(st, "group_by_window");
    w->gcap = ng;
    for (int64_t i = 0; i < ng && !r->bad && rc == VG_OK; i++) {
        rc = get_group(r, &w->groups[i], nc, st);
        w->ngroups++;
        if (i > 0 && w->groups[i].key <= w->groups[i - 1].key) r->bad = true; /* sorted, distinct */
    }
    int64_t nw = r->bad || rc != VG_OK ? 0 : vg__ds_get_range(r, 0, (int64_t)((r->len - r->pos) / 16));
    if (nw && !r->bad && rc == VG_OK) {
        if (!(w->wkeys = vg__calloc((size_t)nw, sizeof(int64_t))) || !(w->wvals = vg__calloc((size_t)nw, sizeof(int64_t))))
            return VG_OOM(st, "group_by_window");
        w->wcap = nw;
        for (int64_t i = 0; i < nw && !r->bad; i++) {
            w->wkeys[i] = vg__ds_get_i64(r);
            w->wvals[i] = vg__ds_get_range(r, 1, INT64_MAX);
            w->nw++;
            if (i > 0 && w->wkeys[i] <= w->wkeys[i - 1]) r->bad = true;
        }
    }
    if (r->bad || rc != VG_OK) return rc;
    if (vg__ds_get_range(r, 0, 1) && !r->bad) {
        if ((rc = get_group(r, &w->cur_group, nc, st)) != VG_OK || r->bad) return rc;
        if ((rc = open_window(w, &w->cur_group, st)) != VG_OK) return rc;
        rc = vg__ds_iter_restore(w->cur, r, st);
    }
    return rc;
}

/* the description's parameters: the functions (checked against the input by the state
 * decoder) and one dataset component type per output */
static bool gbw_valid(const vg__dataset *d) {
    if (!d->fn || !d->fn2 || !d->fn3 || d->ncap != d->fn->ncap + d->fn2->ncap + d->fn3->ncap) return false;
    for (int c = 0; c < d->ncomp; c++)
        if (d->types[c] == VG_RESOURCE) return false; /* windows of windows: not here */
    return true;
}

/* The function named by string attr `attr` of the op, checked against its captured
 * values: Targuments attr `tattr` and the op's inputs at[0..n); appended to d->cap. */
static vg_code group_fn(vg__dataset *d, const vg__ds_op_args *a, const char *attr, const char *tattr, int *at,
                        const vg__ds_fn **out, vg_status *st) {
    const char *type = vg_op_type(a->op), *key;
    size_t kl;
    if (!vg_op_attr_string(a->op, attr, &key, &kl))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s needs attr %s", type, attr);
    char k[600];
    snprintf(k, sizeof k, "%.*s", (int)(kl < 590 ? kl : 590), key);
    const vg__ds_fn *fn = vg_graph_user_data(vg_op_graph(a->op), k);
    if (!fn) return vg_status_set(st, VG_NOT_FOUND, "%s: function '%s' (attr %s) not found", type, k, attr);
    const vg_dtype *targs;
    int ncap = 0;
    if (!vg_op_attr_type_list(a->op, tattr, &targs, &ncap)) ncap = 0;
    if (ncap != fn->ncap || *at + ncap > a->nin || d->ncap + ncap > VG_DATASET_MAX_CAPTURES)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: function '%s' captures %d values, the op passes %d", type,
                             attr, fn->ncap, ncap);
    for (int i = 0; i < ncap; i++) {
        vg_tensor *t = a->in[*at + i];
        if (vg_tensor_dtype(t) != targs[i] || vg_output_dtype(fn->caps[i]) != targs[i])
            return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: %s's captured value %d has dtype %s, expected %s", type,
                                 attr, i, vg_dtype_name(vg_tensor_dtype(t)), vg_dtype_name(vg_output_dtype(fn->caps[i])));
        d->cap[d->ncap++] = vg_tensor_ref(t);
    }
    *at += ncap;
    *out = fn;
    return VG_OK;
}

/* inputs: dataset, key_func_other_arguments, reduce_func_other_arguments,
 * window_size_func_other_arguments */
static vg_code gbw_params(vg__dataset *d, const vg__ds_op_args *a, vg_status *st) {
    int at = 1;
    vg_code rc = group_fn(d, a, "key_func", "Tkey_func_other_arguments", &at, &d->fn, st);
    if (rc == VG_OK) rc = group_fn(d, a, "reduce_func", "Treduce_func_other_arguments", &at, &d->fn2, st);
    if (rc == VG_OK) rc = group_fn(d, a, "window_size_func", "Twindow_size_func_other_arguments", &at, &d->fn3, st);
    if (rc != VG_OK) return rc;
    const vg__ds_fn *k = d->fn, *r = d->fn2, *ws = d->fn3;
    if (k->nargs != d->input->ncomp || k->nouts != 1 || r->nargs != 2 || r->nouts != 1 || ws->nargs != 1 ||
        ws->nouts != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "%s: the functions' signatures do not match (key_func takes %d arguments for %d "
                             "components; reduce_func takes %d, window_size_func %d)",
                             vg_op_type(a->op), k->nargs, d->input->ncomp, r->nargs, ws->nargs);
    return VG_OK;
}

const vg__ds_kind vg__ds_kind_group_by_window = {
    .name = "GroupByWindowDataset",
    .ops = {"GroupByWindowDataset", "ExperimentalGroupByWindowDataset"},
    .iter_size = sizeof(gbw_it),
    .params = gbw_params,
    .iter_init = gbw_init,
    .save = gbw_save,
    .restore = gbw_restore,
    .valid = gbw_valid,
    .inputs = 1,
    .fn = VG__DS_FN_GROUP,
};
