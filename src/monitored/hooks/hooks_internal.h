/* hooks_internal.h - helpers shared by the standard hooks (built on the public API). */
#ifndef VG_HOOKS_INTERNAL_H
#define VG_HOOKS_INTERNAL_H
#include "core/visibility.h"
#include "vigil/hooks.h"
#include "vigil/variables.h"
#include <stdio.h>
#include <string.h>


/* training_util._get_or_create_global_step_read: "<global_step>/add" = global_step + 0,
 * cached in the "global_step_read_op_cache" collection. FAILED_PRECONDITION "Global step
 * should be created to use <hook>." when the graph has no global step. */
VG_HIDDEN vg_code vg__global_step_read(vg_graph *g, const char *hook, vg_output *out, vg_status *st);
/* Runs the global step variable on the raw session; its int64 value in *step. */
VG_HIDDEN vg_code vg__global_step_value(vg_session *sess, vg_graph *g, int64_t *step, vg_status *st);
/* The after_run check of the step-triggered hooks (TF's StepCounterHook and
 * CheckpointSaverHook): when t would trigger for the stale step (the one fetched) plus
 * steps_per_run, the fresh global step is read on ctx's raw session into *step and *fire
 * says whether t triggers for it. *fire false otherwise; the failed read's code. */
VG_HIDDEN vg_code vg__hk_step_trigger(vg_timer *t, int64_t stale, int64_t steps_per_run, vg_run_context *ctx,
                                      vg_graph *g, int64_t *step, bool *fire, vg_status *st);
/* int64 value of a scalar tensor (int32/int64/float). */
VG_HIDDEN int64_t vg__tensor_i64(const vg_tensor *t);
/* Copy of s through the vigil allocator (NULL for NULL or on failure). */
VG_HIDDEN char *vg__hk_strdup(const char *s);
/* An empty hook with a name, a payload and its destructor; callbacks set by the caller. */
VG_HIDDEN vg_hook vg__hk_make(const char *name, void *payload, void (*destroy)(void *));
/* A new hook's payload: size zeroed bytes, and *out = vg__hk_make(name, payload,
 * destroy). NULL (st RESOURCE_EXHAUSTED "out of memory", *out untouched) when out of
 * memory. */
VG_HIDDEN void *vg__hk_new(vg_hook *out, const char *name, size_t size, void (*destroy)(void *), vg_status *st);
/* The start of a hook constructor: INVALID_ARGUMENT "out (the hook to fill) is NULL"
 * when out is NULL, else *out zeroed and VG_OK. */
static inline vg_code vg__hk_out_begin(vg_hook *out, vg_status *st) {
    if (!out) return vg_status_set(st, VG_INVALID_ARGUMENT, "out (the hook to fill) is NULL");
    memset(out, 0, sizeof *out);
    return VG_OK;
}
/* A before_run that asks for the one tensor *t (held by the hook): VG_OK. */
static inline vg_code vg__hk_fetch_one(vg_run_args *args, vg_output *t) {
    args->fetches = t;
    args->nfetches = 1;
    return VG_OK;
}
/* Sets a hook's five callbacks at once (NULL: none), in vg_hook's order. */
static inline void vg__hk_callbacks(vg_hook *out, vg_code (*begin)(void *, vg_graph *, vg_status *),
                                    vg_code (*after_create_session)(void *, vg_session *, vg_coord *, vg_status *),
                                    vg_code (*before_run)(void *, vg_run_context *, vg_run_args *, vg_status *),
                                    vg_code (*after_run)(void *, vg_run_context *, const vg_run_values *, vg_status *),
                                    vg_code (*end)(void *, vg_session *, vg_status *)) {
    out->begin = begin;
    out->after_create_session = after_create_session;
    out->before_run = before_run;
    out->after_run = after_run;
    out->end = end;
}
/* The destroy of a payload that owns one vigil allocation besides itself (a directory
 * string, ...): vg_free(owned) then vg_free(payload); nothing for a NULL payload. */
static inline void vg__hk_free_with(void *payload, void *owned) {
    if (!payload) return;
    vg_free(owned);
    vg_free(payload);
}
#endif
