/*
 * data_iterator.c - tf.data iterators in checkpoints (the train-layer half of
 * vigil/data.h):
 *  - vg_make_saveable_from_iterator: SerializeIterator / DeserializeIterator and the
 *    graph's list of saveable objects (TF's SAVEABLE_OBJECTS collection) that savers
 *    created afterwards save and restore (src/train/saver.c asks vg_graph_saveable /
 *    vg_saveable_key / vg_saveable_restore). The list lives in the graph's user data, not
 *    in a collection: TF cannot serialize SaveableObjects into a MetaGraphDef either.
 *  - vg_iterator_get_next_resumable: IteratorGetNextWithPosition reads and advances a
 *    global variable "<iterator>_position", so a Saver checkpoints how many elements were
 *    handed out (a replay on restore). Creating that variable is train-layer work
 *    (vigil/variables.h), hence this file.
 * The ops' kernels are in src/data/dataset_ops.c.
 */
#include "train_util.h"
#include "vigil/data.h"
#include "vigil/ops.h"
#include "vigil/variables.h"
#include <stdio.h>

#define SAVEABLES_KEY "vigil.saveable_objects"

typedef struct saveable {
    vg_op *op;          /* SerializeIterator (or another module's tensor: restore set) */
    char *key;          /* "<iterator tensor>-state" */
    vg__saveable_restore_fn restore; /* NULL: DeserializeIterator */
    void *user;
} saveable;

typedef struct saveables {
    int n, cap;
    saveable *v;
} saveables;

static void saveables_free(void *p) {
    saveables *s = p;
    for (int i = 0; i < s->n; i++) vg_free(s->v[i].key);
    vg_free(s->v);
    vg_free(s);
}

static bool is_iterator(const vg_op *op) {
    const char *t = op ? vg_op_type(op) : "";
    return !strcmp(t, "IteratorV2") || !strcmp(t, "OneShotIterator") || !strcmp(t, "IteratorFromStringHandleV2") ||
           !strcmp(t, "Iterator");
}

vg_output vg_make_saveable_from_iterator(vg_graph *g, vg_output iterator, const char *name) {
    vg_output none = {NULL, 0};
    if (!g || vg_graph_status(g, NULL) != VG_OK) return none;
    if (!is_iterator(iterator.op) || vg_output_dtype(iterator) != VG_RESOURCE) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "make_saveable_from_iterator: %s is not an iterator",
                           iterator.op ? vg_op_name(iterator.op) : "NULL");
        return none;
    }
    saveables *s = vg_graph_user_data(g, SAVEABLES_KEY);
    if (!s) {
        if (!(s = vg_calloc(1, sizeof *s)) || vg_graph_set_user_data(g, SAVEABLES_KEY, s, saveables_free) != VG_OK) {
            vg_free(s);
            vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "make_saveable_from_iterator: out of memory");
            return none;
        }
    }
    /* _Saveable: SaveSpec(serialize_iterator(resource), "", resource.name + "-state") */
    char key[1200];
    snprintf(key, sizeof key, "%s:%d-state", vg_op_name(iterator.op), iterator.index);
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->v[i].key, key)) { /* the same iterator again: TF would make a second saveable of that name */
            vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                               "make_saveable_from_iterator: iterator %s already has a saveable", vg_op_name(iterator.op));
            return none;
        }
    vg_op_builder *b = vg_op_builder_new(g, "SerializeIterator", name ? name : "SerializeIterator");
    vg_op_builder_add_input(b, iterator);
    vg_op *op = vg_op_builder_finish(b);
    if (!op) return none;
    char *k = vg__train_strdup(key);
    if (!k || !vg__train_grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v)) {
        vg_free(k);
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "make_saveable_from_iterator: out of memory");
        return none;
    }
    s->v[s->n].op = op;
    s->v[s->n].restore = NULL;
    s->v[s->n].user = NULL;
    s->v[s->n++].key = k;
    return vg_out(op, 0);
}

vg_code vg__register_saveable(vg_graph *g, vg_output t, const char *key, vg__saveable_restore_fn restore, void *user) {
    if (!g || vg_graph_status(g, NULL) != VG_OK) return g ? vg_graph_status(g, NULL) : VG_INVALID_ARGUMENT;
    if (!t.op || t.index != 0 || !key || !restore)
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "register_saveable: needs output 0 of an op, a key, a restore");
    saveables *s = vg_graph_user_data(g, SAVEABLES_KEY);
    if (!s) {
        if (!(s = vg_calloc(1, sizeof *s)) || vg_graph_set_user_data(g, SAVEABLES_KEY, s, saveables_free) != VG_OK) {
            vg_free(s);
            return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "register_saveable: out of memory");
        }
    }
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->v[i].key, key) || s->v[i].op == t.op)
            return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "register_saveable: a saveable named %s already exists", key);
    char *k = vg__train_strdup(key);
    if (!k || !vg__train_grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v)) {
        vg_free(k);
        return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "register_saveable: out of memory");
    }
    s->v[s->n].op = t.op;
    s->v[s->n].restore = restore;
    s->v[s->n].user = user;
    s->v[s->n++].key = k;
    return VG_OK;
}

bool vg__saveables_complete(const vg_graph *g, const vg_output *list, int n, const char **missing,
                            const char **present) {
    const saveables *s = g ? vg_graph_user_data(g, SAVEABLES_KEY) : NULL;
    for (int i = 0; s && i < s->n; i++) {
        const saveable *a = &s->v[i];
        if (!a->restore || !a->user) continue; /* an object of one tensor */
        bool listed = false;
        for (int k = 0; k < n && !listed; k++) listed = list[k].op == a->op;
        if (listed) continue;
        for (int j = 0; j < s->n; j++) { /* a listed sibling of this absent part? */
            const saveable *b = &s->v[j];
            if (b->restore != a->restore || b->user != a->user) continue;
            for (int k = 0; k < n; k++)
                if (list[k].op == b->op) {
                    *missing = a->key;
                    *present = b->key;
                    return false;
                }
        }
    }
    return true;
}

int vg_graph_num_saveables(const vg_graph *g) {
    const saveables *s = g ? vg_graph_user_data(g, SAVEABLES_KEY) : NULL;
    return s ? s->n : 0;
}

vg_output vg_graph_saveable(const vg_graph *g, int i) {
    const saveables *s = g ? vg_graph_user_data(g, SAVEABLES_KEY) : NULL;
    if (!s || i < 0 || i >= s->n) return (vg_output){NULL, 0};
    return vg_out(s->v[i].op, 0);
}

const char *vg_saveable_key(vg_output t) {
    const saveables *s = t.op && t.index == 0 ? vg_graph_user_data(vg_op_graph(t.op), SAVEABLES_KEY) : NULL;
    for (int i = 0; s && i < s->n; i++)
        if (s->v[i].op == t.op) return s->v[i].key;
    return NULL;
}

vg_op *vg_saveable_restore(vg_graph *g, vg_output t, vg_output restored, const char *name) {
    if (!vg_saveable_key(t)) {
        if (g && vg_graph_status(g, NULL) == VG_OK)
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "saveable_restore: %s is not a saveable object",
                               t.op ? vg_op_name(t.op) : "NULL");
        return NULL;
    }
    const saveables *s = vg_graph_user_data(vg_op_graph(t.op), SAVEABLES_KEY);
    for (int i = 0; i < s->n; i++)
        if (s->v[i].op == t.op && s->v[i].restore) return s->v[i].restore(g, t, restored, s->v[i].user);
    /* _Saveable.restore: deserialize_iterator(resource, restored_tensors[0]) */
    vg_op_builder *b = vg_op_builder_new(g, "DeserializeIterator", name ? name : "DeserializeIterator");
    vg_op_builder_add_input(b, vg_op_input(t.op, 0));
    vg_op_builder_add_input(b, restored);
    return vg_op_builder_finish(b);
}

vg_op *vg_iterator_get_next_resumable(vg_graph *g, vg_output iterator, vg_output *position, const char *name) {
    const vg_dtype *t;
    const vg_shape *s;
    int n = 0, ns = 0;
    if (!vg_iterator_signature(g, iterator, "iterator_get_next_resumable", &t, &s, &n, &ns)) return NULL;
    const vg_op *io = iterator.op;
    char vn[600];
    snprintf(vn, sizeof vn, "%s_position", vg_op_name(io));
    vg_variable pos = vg_variable_new(g, vn, vg_const_i64(g, 0, NULL), 0);
    if (position) *position = pos.read;
    vg_op_builder *b = vg_op_builder_new(g, "IteratorGetNextWithPosition", name ? name : "IteratorGetNext");
    vg_op_builder_add_input(b, iterator);
    vg_op_builder_add_input(b, pos.ref);
    vg_op_builder_set_attr_type_list(b, "output_types", t, n);
    vg_op_builder_set_attr_shape_list(b, "output_shapes", s, ns);
    return vg_op_builder_finish(b);
}
