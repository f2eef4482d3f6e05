/*
 * data_iterator.c - tf.data's saveable iterator position (the train-layer half of
 * vigil/data.h): IteratorGetNextWithPosition reads and advances a global variable
 * "<iterator>_position", so a Saver checkpoints where the input stands. Creating that
 * variable is train-layer work (vigil/variables.h), hence this file; the op's kernel is
 * in src/kernels/dataset_ops.c.
 */
#include "vigil/data.h"
#include "vigil/ops.h"
#include "vigil/variables.h"
#include <stdio.h>

vg_op *vg_iterator_get_next_resumable(vg_graph *g, vg_output iterator, vg_output *position, const char *name) {
    const vg_op *io = iterator.op;
    const vg_dtype *t;
    const vg_shape *s;
    int n = 0, ns = 0;
    if (!io || !vg_op_attr_type_list(io, "output_types", &t, &n) || !vg_op_attr_shape_list(io, "output_shapes", &s, &ns)) {
        if (vg_graph_status(g, NULL) == VG_OK)
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "iterator_get_next_resumable: not an iterator");
        return NULL;
    }
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
