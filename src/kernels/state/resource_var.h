/*
 * resource_var.h - resource variables (TF's ResourceVariable / Var resource) inside the
 * kernel layer: what resource_variable_ops.c (the VarHandleOp family) shares with
 * training_ops.c (the ResourceApply* ops).
 *
 * A resource variable is a per-session resource named "<container>/<shared_name>"
 * (container "" is TF's default "localhost"), created by the first VarHandleOp that
 * names it and kept until the session is freed. A VarHandleOp outputs a VG_RESOURCE
 * scalar that points to it. The variable "exists" (TF's LookupResource succeeds) from
 * its first AssignVariableOp until a DestroyResourceOp; its value is a reference-counted
 * tensor: a read takes a new reference (a stable snapshot), a writer that finds the
 * value shared copies it first (vg__rvar_mutable), as TF's copy-on-write does.
 */
#ifndef VG_KERNELS_RESOURCE_VAR_H
#define VG_KERNELS_RESOURCE_VAR_H

#include "kernels/kernel.h"

typedef struct vg__rvar vg__rvar;

/* The variable a handle tensor points to. INVALID_ARGUMENT when t is not a scalar
 * VG_RESOURCE tensor made by a VarHandleOp. */
VG_HIDDEN vg__rvar *vg__rvar_of(const vg_tensor *t, vg_status *st);
/* Locking: hold vg__rvar_lock around vg__rvar_value / vg__rvar_mutable / vg__rvar_set. */
VG_HIDDEN void vg__rvar_lock(vg__rvar *v);
VG_HIDDEN void vg__rvar_unlock(vg__rvar *v);
/* The current value (borrowed); NULL while the variable does not exist. Lock held. */
VG_HIDDEN vg_tensor *vg__rvar_value(vg__rvar *v);
/* Replaces the value (takes over one reference of t; NULL = destroyed). Lock held. */
VG_HIDDEN void vg__rvar_set(vg__rvar *v, vg_tensor *t);
/* The value made safe to modify in place (copied first when anyone else holds it).
 * Lock held. NOT_FOUND "Resource localhost/<name>/N10tensorflow3VarE does not exist."
 * while the variable does not exist; RESOURCE_EXHAUSTED. */
VG_HIDDEN vg_tensor *vg__rvar_mutable(vg__rvar *v, vg_status *st);
/* Sets TF's NOT_FOUND "Resource <container>/<name>/N10tensorflow3VarE does not exist."
 * and returns VG_NOT_FOUND. */
VG_HIDDEN vg_code vg__rvar_not_found(const vg__rvar *v, vg_status *st);
VG_HIDDEN const char *vg__rvar_name(const vg__rvar *v);
VG_HIDDEN const char *vg__rvar_container(const vg__rvar *v);

/* Build time: the dtype and shape declared by the VarHandleOp behind input i of op
 * (followed through Identity ops). false when input i is not such a handle (dtype then
 * VG_DTYPE_INVALID, shape unknown: TF's missing handle data). */
VG_HIDDEN bool vg__rvar_handle_info(const vg_op *op, int i, vg_dtype *dt, vg_shape *shape);

#endif
