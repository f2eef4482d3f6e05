/*
 * dataset_fdef.c - tf.data functions as FunctionDefs: the hooks (graph/fn_hooks.h)
 * through which GraphDef / MetaGraphDef export writes a dataset op's function graph into
 * GraphDef.library, and import builds it again from a library function.
 *
 * A dataset op names its function by a string attr ("f", "predicate") holding the key
 * of a vg__ds_fn in its graph's user data (dataset_ops.c). Export: the key's function
 * graph, its argument placeholders (element components, then captured values) and
 * outputs. Import: the library function inlined into a new graph behind a placeholder
 * per argument (the last `Targuments` of them are the captured values), stored under a
 * new key, as vg_dataset_map & co. store the functions they build.
 */
#include "data/dataset.h"
#include "graph/fn_hooks.h"
#include <stdio.h>
#include <string.h>

#define FN_PREFIX "vigil.dataset_fn:"

static bool fdef_find(const vg_graph *g, const char *key, vg__fn_body *out) {
    const vg__ds_fn *fn = vg_graph_user_data(g, key);
    if (!fn || strncmp(key, FN_PREFIX, sizeof FN_PREFIX - 1) != 0) return false;
    out->g = fn->g;
    out->nargs = fn->nargs;
    out->ncap = fn->ncap;
    out->nouts = fn->nouts;
    out->args = fn->args;
    out->caps = fn->caps;
    out->outs = fn->outs;
    return true;
}

/* The arguments of the function in attr `attr` of an op of type op_type over the input
 * dataset `input` that are datasets (spec[i].n > 0), with their element specs in
 * t / s: a window's components (flat_map / interleave over a WindowDataset: one dataset
 * per component of the window's input), group_by_window's reduce_func (key, window). */
static void arg_specs(const char *op_type, const char *attr, vg_output input, vg__fn_arg_spec *spec,
                      vg_dtype (*t)[VG_DATASET_MAX_COMPONENTS], vg_shape (*s)[VG_DATASET_MAX_COMPONENTS]) {
    if (!input.op) return;
    bool group = strstr(op_type, "GroupByWindowDataset") != NULL;
    if (group && !strcmp(attr, "reduce_func")) { /* (key, the window: a dataset of the input's elements) */
        spec[1].n = vg_dataset_components(input, t[0], s[0]);
        spec[1].types = t[0], spec[1].shapes = s[0];
        return;
    }
    if (group || strcmp(vg_op_type(input.op), "WindowDataset") != 0) return;
    /* the window's elements: per component of its input, a dataset of that component */
    vg_dtype wt[VG_DATASET_MAX_COMPONENTS];
    vg_shape ws[VG_DATASET_MAX_COMPONENTS];
    int n = vg_dataset_components(vg_op_input(input.op, 0), wt, ws);
    for (int i = 0; i < n; i++) {
        t[i][0] = wt[i], s[i][0] = ws[i];
        spec[i].n = 1, spec[i].types = t[i], spec[i].shapes = s[i];
    }
}

static vg_code fdef_import(vg_graph *g, const char *op_type, const char *attr, vg_output input, const uint8_t *lib,
                           size_t lib_len, const char *fname, int ncap, char *key, size_t keycap, vg_status *st) {
    bool reduce = strcmp(op_type, "ReduceDataset") == 0;
    bool group = strstr(op_type, "GroupByWindowDataset") != NULL;
    int kind = vg__ds_kind_by_op(op_type);
    const vg__ds_kind *k = kind >= 0 ? vg__ds_kind_of(kind) : NULL;
    if (!reduce && !group && (!k || k->fn == VG__DS_FN_NONE)) return VG_NOT_FOUND;
    if (ncap < 0 || ncap > VG_DATASET_MAX_CAPTURES)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%d captured values (at most %d)", ncap, VG_DATASET_MAX_CAPTURES);
    vg__ds_fn *f = vg__calloc(1, sizeof *f);
    if (!f || !(f->g = vg_graph_new())) {
        vg__free(f);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    }
    struct specs {
        vg_dtype t[VG_DATASET_MAX_COMPONENTS][VG_DATASET_MAX_COMPONENTS];
        vg_shape s[VG_DATASET_MAX_COMPONENTS][VG_DATASET_MAX_COMPONENTS];
        vg__fn_arg_spec spec[VG_DATASET_MAX_COMPONENTS + VG_DATASET_MAX_CAPTURES];
    } *sp = vg__calloc(1, sizeof *sp);
    if (!sp) {
        vg__ds_fn_free(f);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    }
    arg_specs(op_type, attr, input, sp->spec, sp->t, sp->s);
    vg_output args[VG_DATASET_MAX_COMPONENTS + VG_DATASET_MAX_CAPTURES];
    int nin = 0, nout = 0;
    vg_code rc = vg__graph_import_function(f->g, lib, lib_len, fname, sp->spec, args, &nin,
                                           VG_DATASET_MAX_COMPONENTS + ncap, f->outs, &nout, VG_DATASET_MAX_COMPONENTS, st);
    vg__free(sp);
    if (rc == VG_NOT_FOUND) rc = VG_INVALID_ARGUMENT; /* NOT_FOUND means "not this hook's" */
    if (!rc && (nin < ncap || nout < 1))
        rc = vg_status_set(st, VG_INVALID_ARGUMENT, "the function takes %d arguments and returns %d; the op captures %d "
                           "values", nin, nout, ncap);
    if (rc) {
        vg__ds_fn_free(f);
        return rc;
    }
    f->nargs = nin - ncap;
    f->nouts = nout;
    f->ncap = ncap;
    for (int i = 0; i < f->nargs; i++) f->args[i] = args[i];
    for (int i = 0; i < ncap; i++) f->caps[i] = args[f->nargs + i]; /* cap_outer stays {NULL}: not built here */
    if (k && (k->fn == VG__DS_FN_MAP || k->fn == VG__DS_FN_DATASET) && !reduce) {
        vg__ds_fn_vectorize(f); /* as vg_dataset_map: element by element when it cannot */
        if (!f->vec) f->native_b = vg__ds_native_compile_batched(f);
    }
    if (vg__ds_fn_store(g, f, fname, key, keycap) != VG_OK)
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    return VG_OK;
}

static const vg__fn_hooks k_hooks = {FN_PREFIX, fdef_find, fdef_import};

void vg__dataset_fdef_install(void) { vg__graph_set_fn_hooks(&k_hooks); }
