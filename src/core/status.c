/* status.c - vg_status and the code names. */
#include "core.h"
#include <stdio.h>

void vg_status_clear(vg_status *st) {
    if (!st) return;
    st->code = VG_OK;
    st->msg[0] = 0;
}

vg_code vg_status_setv(vg_status *st, vg_code code, const char *fmt, va_list ap) {
    if (!st) return code;
    st->code = code;
    if (fmt) vsnprintf(st->msg, sizeof st->msg, fmt, ap);
    else st->msg[0] = 0;
    return code;
}

vg_code vg_status_set(vg_status *st, vg_code code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vg_status_setv(st, code, fmt, ap);
    va_end(ap);
    return code;
}

void vg_status_prefix(vg_status *st, const char *fmt, ...) {
    if (!st || st->code == VG_OK) return;
    char pre[VG_STATUS_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    size_t np = strlen(pre), nm = strlen(st->msg);
    if (np >= sizeof st->msg) np = sizeof st->msg - 1;
    if (np + nm >= sizeof st->msg) nm = sizeof st->msg - 1 - np;
    memmove(st->msg + np, st->msg, nm);
    memcpy(st->msg, pre, np);
    st->msg[np + nm] = 0;
}

void vg_status_copy(vg_status *dst, const vg_status *src) {
    if (!dst) return;
    if (!src) { vg_status_clear(dst); return; }
    if (dst != src) memcpy(dst, src, sizeof *dst);
}

const char *vg_code_name(vg_code code) {
    static const char *names[] = {
        "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
        "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
        "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
    if (code == VG_STOP_ITERATION) return "STOP_ITERATION";
    if ((int)code < 0 || (int)code >= (int)(sizeof names / sizeof names[0])) return "UNKNOWN_CODE";
    return names[code];
}
