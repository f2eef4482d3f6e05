/*
 * fn_hooks.h - functions held in attrs (tf.data's map / filter / flat_map / interleave /
 * reduce functions) as GraphDef export and import see them.
 *
 * The graph layer writes and reads FunctionDefs (graphdef.c, graphdef_import.c) but
 * does not know where a layer above keeps its functions: a dataset op names its
 * function by a string attr ("f", "predicate") holding a key of its graph's user data
 * (src/data). The data layer installs these hooks (vg__dataset_fdef_install, called
 * from the op-family list) so that export turns such an attr into AttrValue.func and
 * writes the function into GraphDef.library, and import turns a func attr of a
 * dataset op back into a function graph under a new key.
 */
#ifndef VG_FN_HOOKS_H
#define VG_FN_HOOKS_H

#include "core/core.h"
#include "vigil/graph.h"

/* A function graph: its argument placeholders (the element's components, then the
 * captured values) and its outputs, all in g. */
typedef struct vg__fn_body {
    const vg_graph *g;
    int nargs, ncap, nouts;
    const vg_output *args, *caps, *outs;
} vg__fn_body;

typedef struct vg__fn_hooks {
    /* The prefix of the string attr values that name such functions. */
    const char *key_prefix;
    /* The function stored under `key` in g; false when there is none. */
    bool (*find)(const vg_graph *g, const char *key, vg__fn_body *out);
    /* Builds library function `fname` (FunctionDefLibrary bytes lib) for a node of type
     * op_type (its attr `attr`; `input`: the node's first input, its input dataset, or
     * {NULL}) whose last ncap arguments are captured values, into g; writes the string
     * attr value naming it to key. VG_NOT_FOUND without a status: not a function this
     * hook takes (op type); other errors with st set. */
    vg_code (*import)(vg_graph *g, const char *op_type, const char *attr, vg_output input, const uint8_t *lib,
                      size_t lib_len, const char *fname, int ncap, char *key, size_t keycap, vg_status *st);
} vg__fn_hooks;

/* Installs the hooks (one set per process; h must live for the process). */
VG_HIDDEN void vg__graph_set_fn_hooks(const vg__fn_hooks *h);
/* The installed hooks (loading the op families first), or NULL. */
VG_HIDDEN const vg__fn_hooks *vg__graph_fn_hooks(void);

/* The element spec of a function argument that is a dataset (DT_VARIANT in TF's
 * FunctionDef; n = 0: not a dataset). types / shapes are borrowed. */
typedef struct vg__fn_arg_spec {
    int n;
    const vg_dtype *types;
    const vg_shape *shapes;
} vg__fn_arg_spec;

/* Builds library function fname into the empty graph fg: a Placeholder per input
 * argument (named as the argument, unknown shape) and the function body inlined as
 * for a call (docs/import.md "Functions"); args[0..*nargs) = the placeholders,
 * outs[0..*nouts) = the returned tensors. A DT_VARIANT argument i is a dataset of
 * element spec spec[i] (spec may be NULL): a VG_RESOURCE placeholder carrying
 * output_types / output_shapes, as vigil's dataset arguments. UNIMPLEMENTED for
 * arguments typed by attrs or lists and for a DT_VARIANT argument without a spec,
 * NOT_FOUND when the library has no such function, INVALID_ARGUMENT when it has more
 * than max_args arguments or max_outs outputs, the import's errors. */
VG_HIDDEN vg_code vg__graph_import_function(vg_graph *fg, const uint8_t *lib, size_t lib_len, const char *fname,
                                            const vg__fn_arg_spec *spec, vg_output *args, int *nargs, int max_args,
                                            vg_output *outs, int *nouts, int max_outs, vg_status *st);

/* TF 1.15's output argument names of op type `type` for FunctionDef references
 * ("node:arg:index"): for an op of one list argument (*list true) or one tensor per
 * argument, a comma-separated list; NULL when vigil does not know them. */
VG_HIDDEN const char *vg__op_output_args(const char *type, bool *list);

/* GraphDef export without the function library (dataset function keys written as
 * strings): the form saved iterator states keep their functions in. */
VG_HIDDEN vg_code vg__graph_to_graphdef_plain(const vg_graph *g, void **bytes, size_t *len, vg_status *st);

#endif
