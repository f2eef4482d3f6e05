/*
 * vigil/coordinator.h - tf.train.Coordinator: stop requests shared by a set of threads.
 *
 *     vg_coord *coord = vg_coord_new(NULL, 0);        // default: OUT_OF_RANGE is a clean stop
 *     vg_coord_start_thread(coord, "reader", fn, payload, &st);
 *     while (!vg_coord_should_stop(coord)) step++;      // the training loop
 *     vg_coord_request_stop(coord, NULL);
 *     vg_code rc = vg_coord_join(coord, 120, false, &st); // first error a thread reported
 *     vg_coord_free(coord);
 *
 * A thread function gets the coordinator and loops until vg_coord_should_stop(); on an
 * error it calls vg_coord_request_stop(coord, &its_status). The first error wins; an
 * error whose code is in the clean-stop list only stops (it is not kept as an error).
 */
#ifndef VIGIL_COORDINATOR_H
#define VIGIL_COORDINATOR_H

#include "status.h"
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vg_coord vg_coord;

/* New coordinator. clean_stop_codes (n codes) are treated as a clean stop when
 * reported; pass NULL, 0 for TF's default {VG_OUT_OF_RANGE}, or a pointer to an empty
 * list with n = 0 and clean_stop_codes != NULL for "none" (MonitoredSession's choice).
 * NULL on allocation failure. */
VG_API vg_coord *vg_coord_new(const vg_code *clean_stop_codes, int n);
/* Frees. Join the threads first; threads still running (stragglers left by join, or
 * never joined) are detached and keep the memory alive until they end, so they may
 * still call vg_coord_should_stop safely. NULL is a no-op. */
VG_API void vg_coord_free(vg_coord *c);

/* Requests a stop. err == NULL or err->code == VG_OK: plain stop. Otherwise the error
 * is kept if it is the first one and not a clean-stop code; once a stop has been
 * requested, later errors are ignored. Returns VG_OK, except after join: an error (not
 * a clean-stop code) is then not stored and its code is returned (TF re-raises it; its
 * message is the caller's *err). INVALID_ARGUMENT for c == NULL. Thread-safe. */
VG_API vg_code vg_coord_request_stop(vg_coord *c, const vg_status *err);
VG_API bool vg_coord_should_stop(vg_coord *c);
/* Waits up to timeout_secs (< 0: forever) for a stop request; true if stopped. */
VG_API bool vg_coord_wait_for_stop(vg_coord *c, double timeout_secs);
/* Clears the stop request and the stored error (before restarting threads). */
VG_API void vg_coord_clear_stop(vg_coord *c);
/* The stored error (raise_requested_exception): its code, copied into st; VG_OK if none. */
VG_API vg_code vg_coord_raise_requested_exception(vg_coord *c, vg_status *st);

/* Starts a thread running fn(coord, payload) and registers it. Fails with
 * RESOURCE_EXHAUSTED (thread or memory). name is copied (used in join's messages). */
typedef void (*vg_coord_thread_fn)(vg_coord *c, void *payload);
VG_API vg_code vg_coord_start_thread(vg_coord *c, const char *name, vg_coord_thread_fn fn, void *payload,
                                     vg_status *st);
/* LooperThread: calls fn(payload) every interval_secs (first call at once) until a stop
 * is requested; an error returned by fn (non-OK code with *st filled) requests a stop
 * with that error. */
typedef vg_code (*vg_coord_looper_fn)(void *payload, vg_status *st);
VG_API vg_code vg_coord_start_looper(vg_coord *c, const char *name, double interval_secs, vg_coord_looper_fn fn,
                                     void *payload, vg_status *st);

/* Waits for all registered threads. Once a stop is requested, threads get
 * stop_grace_period_secs to finish; threads still running then are named in the
 * message: with ignore_live_threads they are only logged (and left detached), else
 * join fails with VG_FAILED_PRECONDITION (TF's RuntimeError: "Coordinator stopped with threads still
 * running: reader"). Otherwise returns the first error reported (its code, message in
 * st), or VG_OK. */
VG_API vg_code vg_coord_join(vg_coord *c, double stop_grace_period_secs, bool ignore_live_threads, vg_status *st);

#ifdef __cplusplus
}
#endif
#endif
