/* variable_internal.h - what variables.c and variable_scope.c share (src/train only). */
#ifndef VG_TRAIN_VARIABLE_INTERNAL_H
#define VG_TRAIN_VARIABLE_INTERNAL_H

#include "vigil/variable_scope.h"
#include "vigil/variables.h"
#include <string.h>

/* Creates a get_variable-style variable with the absolute name `full` (made unique
 * against names in use, as TF's name scopes would, unless verbatim), its initial value
 * under "<name>/Initializer/", outside the caller's control dependencies. */
vg_variable vg__train_create_variable(vg_graph *g, const char *full, bool verbatim, vg_dtype dt, const int64_t *dims,
                                      int ndims, vg_initializer init, unsigned flags);

/* The serial number of the graph's variable scope store (made if needed; 0 when out of
 * memory): a cell or layer that captured scope objects of a graph keeps it to tell a
 * later graph at the same address apart (the objects die with their graph). */
/* TF's initializer=None: VG_INIT_DEFAULT, or VG_INIT_UNSET (a zero vg_initializer). */
static inline bool vg__init_is_none(vg_initializer i) { return i.kind == VG_INIT_DEFAULT || i.kind == VG_INIT_UNSET; }

uint64_t vg__train_scope_store_serial(vg_graph *g);

/* TF's _try_guard_against_uninitialized_dependencies for the variable named var_name
 * (absolute; call with the root scope pushed): initial with every read of a ref
 * variable replaced by "its value, or its initial value while uninitialized". Used by
 * resource_variables.c too. */
vg_output vg__train_guard_initial_value(vg_graph *g, const char *var_name, vg_output initial);

/* The initial value that init makes for the variable named full (absolute; call with the
 * root scope pushed), built under "<full>/Initializer/" as TF builds it. A NULL op on a
 * graph error. Used by resource_variables.c too. */
vg_output vg__train_initializer_value(vg_graph *g, const char *full, vg_initializer init, vg_dtype dt,
                                      const int64_t *dims, int ndims);

/* The checks tf.Variable and ResourceVariable make of an initial value: false (and no
 * error) when g is NULL; false with the graph error INVALID_ARGUMENT ("<what> <name>:
 * invalid initial value", set only while g has none) when initial has no op, or when
 * its shape (*s) is not fully defined; true with *s its shape. */
bool vg__train_check_initial_value(vg_graph *g, const char *what, const char *name, vg_output initial,
                                   vg_shape *s);

/* The get_variable options of a variable with dtype dt, shape dims[0..ndims) and the
 * initializer init given explicitly (has_init; dims borrowed), every other field zero:
 * what vg_get_variable and slim's model variables start from. */
static inline vg_get_variable_opts vg__train_var_opts(vg_dtype dt, const int64_t *dims, int ndims, vg_initializer init) {
    vg_get_variable_opts o;
    memset(&o, 0, sizeof o);
    o.dt = dt;
    o.dims = dims;
    o.ndims = ndims;
    o.has_init = true;
    o.init = init;
    return o;
}

/* How a variable's initial value is made (variables.c and resource_variables.c): given
 * (tf.Variable: `initial`, when !use_init) or built from the initializer init under
 * "<name>/Initializer" (tf.get_variable); dtype, shape and the VG_VAR_* flags. */
typedef struct vg__train_var_spec {
    vg_dtype dt;
    const int64_t *dims;
    int ndims;
    vg_output initial;
    bool use_init;
    vg_initializer init;
    unsigned flags;
} vg__train_var_spec;

/* The initial value of the variable named full that sp describes: sp->initial, or (use_init)
 * init's value (vg__train_initializer_value; a NULL op on a graph error). */
static inline vg_output vg__train_spec_initial(vg_graph *g, const char *full, const vg__train_var_spec *sp) {
    return sp->use_init ? vg__train_initializer_value(g, full, sp->init, sp->dt, sp->dims, sp->ndims) : sp->initial;
}

#endif
