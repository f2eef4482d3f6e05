/* variable_internal.h - what variables.c and variable_scope.c share (src/train only). */
#ifndef VG_TRAIN_VARIABLE_INTERNAL_H
#define VG_TRAIN_VARIABLE_INTERNAL_H

#include "vigil/variables.h"

/* Creates a get_variable-style variable with the absolute name `full` (made unique
 * against names in use, as TF's name scopes would, unless verbatim), its initial value
 * under "<name>/Initializer/", outside the caller's control dependencies. */
vg_variable vg__train_create_variable(vg_graph *g, const char *full, bool verbatim, vg_dtype dt, const int64_t *dims,
                                      int ndims, vg_initializer init, unsigned flags);

#endif
