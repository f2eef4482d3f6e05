/*
 * vigil/status.h - status codes, the status object, logging and the allocator hook.
 *
 * Every call that can fail takes a `vg_status *st` last (NULL allowed) and also
 * returns its vg_code, so both styles work:
 *
 *     vg_status st;
 *     if (vg_session_run1(s, y, &out, &st) != VG_OK) {
 *         fprintf(stderr, "%s: %s\n", vg_code_name(st.code), st.msg);
 *     }
 *
 * The code numbers are TensorFlow's canonical ones (tensorflow/core/protobuf/
 * error_codes.proto). Supervision depends on them: VG_OUT_OF_RANGE means the input
 * is exhausted (a clean stop), VG_ABORTED and VG_UNAVAILABLE mean "recreate the
 * session", anything else stops training with that error.
 *
 * The library never prints and never exits. It reports through the log callback
 * (vg_log_set, vg_logf) and allocates through one hook (vg_allocator_set), which tests also
 * use to inject allocation failures.
 */
#ifndef VIGIL_STATUS_H
#define VIGIL_STATUS_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define VG_API __attribute__((visibility("default")))
#define VG_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define VG_API
#define VG_PRINTF(a, b)
#endif

/* ------------------------------------------------------------------------ */
/* Codes: TensorFlow's canonical error codes, same numbers. */
typedef enum vg_code {
    VG_OK = 0,
    VG_CANCELLED = 1,
    VG_UNKNOWN = 2,
    VG_INVALID_ARGUMENT = 3,
    VG_DEADLINE_EXCEEDED = 4,
    VG_NOT_FOUND = 5,
    VG_ALREADY_EXISTS = 6,
    VG_PERMISSION_DENIED = 7,
    VG_RESOURCE_EXHAUSTED = 8,
    VG_FAILED_PRECONDITION = 9,
    VG_ABORTED = 10,
    VG_OUT_OF_RANGE = 11,
    VG_UNIMPLEMENTED = 12,
    VG_INTERNAL = 13,
    VG_UNAVAILABLE = 14,
    VG_DATA_LOSS = 15,
    VG_UNAUTHENTICATED = 16,
    /* vigil's one addition (not a TensorFlow code): a step function asked the loop to
     * stop, Python's StopIteration in TF's run_step_fn. See vigil/monitored.h. */
    VG_STOP_ITERATION = 101
} vg_code;

#define VG_STATUS_MSG_MAX 1024

/* A status: a code and a message. A plain struct; keep it on the stack.
 * The message is always NUL-terminated ("" when code is VG_OK). A message longer than
 * VG_STATUS_MSG_MAX - 1 bytes is shortened in the middle ("start...end"), so the
 * reason at its end survives a long path. */
typedef struct vg_status {
    vg_code code;
    char msg[VG_STATUS_MSG_MAX];
} vg_status;

/* Sets *st to OK with an empty message. NULL st is allowed. */
VG_API void vg_status_clear(vg_status *st);

/* Sets code and a printf-formatted message; returns code. NULL st is allowed
 * (then only the code is returned). Never fails. */
VG_API vg_code vg_status_set(vg_status *st, vg_code code, const char *fmt, ...) VG_PRINTF(3, 4);
VG_API vg_code vg_status_setv(vg_status *st, vg_code code, const char *fmt, va_list ap);

/* Prepends "<prefix>" to the message of a failed status, keeping the code. */
VG_API void vg_status_prefix(vg_status *st, const char *fmt, ...) VG_PRINTF(2, 3);

/* Copies src into dst (either may be NULL). */
VG_API void vg_status_copy(vg_status *dst, const vg_status *src);

/* TensorFlow's name of a code, e.g. "OUT_OF_RANGE". Static string. */
VG_API const char *vg_code_name(vg_code code);

/* ------------------------------------------------------------------------ */
/* Logging. The library calls the callback and never writes to stdout/stderr itself,
 * except through the default callback, vg_log_stderr, which is installed until
 * vg_log_set is called (as TF, INFO and above reach stderr by default: vigil logs TF's
 * lines "Graph was finalized.", "Restoring parameters from <path>", "Running
 * local_init_op.", "Done running local_init_op.", "Saving checkpoints for N into
 * <path>." and LoggingTensorHook's values at the same moments as TF). */
typedef enum vg_log_level {
    VG_LOG_DEBUG = 0,
    VG_LOG_INFO = 1,
    VG_LOG_WARN = 2,
    VG_LOG_ERROR = 3
} vg_log_level;

typedef void (*vg_log_fn)(void *payload, vg_log_level level, const char *msg);

/* Installs the process-wide log callback (NULL = discard everything) and the minimum
 * level passed to it. Default: vg_log_stderr at VG_LOG_INFO. Not thread-safe against
 * concurrent logging; call at start-up. */
VG_API void vg_log_set(vg_log_fn fn, void *payload, vg_log_level min_level);
/* The default callback: one line "INFO:vigil:<msg>" (WARNING, ERROR, DEBUG) on stderr.
 * payload is unused. */
VG_API void vg_log_stderr(void *payload, vg_log_level level, const char *msg);

/* Logs through the callback (for vigil's own modules and for hooks). */
VG_API void vg_logf(vg_log_level level, const char *fmt, ...) VG_PRINTF(2, 3);

/* ------------------------------------------------------------------------ */
/* Allocator hook. All of vigil's memory goes through it (tensor data included).
 * alloc returns size bytes aligned to align (a power of two, >= sizeof(void *)) or
 * NULL; free releases a pointer alloc returned (never called with NULL). */
typedef struct vg_allocator {
    void *(*alloc)(void *payload, size_t size, size_t align);
    void (*free)(void *payload, void *ptr);
    void *payload;
} vg_allocator;

/* Installs the allocator (NULL restores the default, posix_memalign/free). Call it
 * only while no vigil object exists: memory must be freed by the hook that made it. */
VG_API void vg_allocator_set(const vg_allocator *a);

/* Allocation through the installed hook, for code built on vigil's public API (the
 * training layers use it). vg_malloc/vg_calloc return NULL on failure; vg_realloc
 * keeps the first min(old_size, new_size) bytes and leaves p untouched on failure;
 * vg_free(NULL) is a no-op. (vg_free is declared here too.) */
VG_API void *vg_malloc(size_t size);
VG_API void *vg_calloc(size_t n, size_t size);
VG_API void *vg_realloc(void *p, size_t old_size, size_t new_size);
VG_API void vg_free(void *p);

#ifdef __cplusplus
}
#endif
#endif /* VIGIL_STATUS_H */
