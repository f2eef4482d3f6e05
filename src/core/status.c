/* status.c - vg_status and the code names. */
#include "core.h"
#include <stdio.h>

void vg_status_clear(vg_status *st) {
    if (!st) return;
    st->code = VG_OK;
    st->msg[0] = 0;
}

/* Copies src[0..n) into dst (cap bytes, NUL-terminated). When it does not fit, the
 * middle is replaced by "..." so that both the start (what failed) and the end (why:
 * "File name too long", "at offset N") survive a long path; cuts never split a UTF-8
 * sequence. */
static void copy_shortened(char *dst, size_t cap, const char *src, size_t n) {
    if (n < cap) {
        memmove(dst, src, n);
        dst[n] = 0;
        return;
    }
    size_t head = (cap - 4) / 3, tail = cap - 4 - head;
    while (head > 0 && ((unsigned char)src[head] & 0xC0) == 0x80) head--;
    size_t from = n - tail;
    while (from < n && ((unsigned char)src[from] & 0xC0) == 0x80) from++;
    memcpy(dst, src, head); /* src and dst never overlap here */
    memcpy(dst + head, "...", 3);
    memcpy(dst + head + 3, src + from, n - from);
    dst[head + 3 + (n - from)] = 0;
}

vg_code vg_status_setv(vg_status *st, vg_code code, const char *fmt, va_list ap) {
    if (!st) return code;
    st->code = code;
    if (!fmt) {
        st->msg[0] = 0;
        return code;
    }
    char big[4 * VG_STATUS_MSG_MAX];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(st->msg, sizeof st->msg, fmt, ap);
    if (n >= (int)sizeof st->msg) {
        /* too long: format the whole message again (heap when it fits no stack buffer;
         * the stack buffer's prefix when even that fails) and shorten it in the middle */
        char *heap = (size_t)n >= sizeof big ? vg__malloc((size_t)n + 1) : NULL;
        char *buf = heap ? heap : big;
        size_t cap = heap ? (size_t)n + 1 : sizeof big;
        int m = vsnprintf(buf, cap, fmt, ap2);
        size_t len = m < 0 ? 0 : (size_t)m >= cap ? cap - 1 : (size_t)m;
        copy_shortened(st->msg, sizeof st->msg, buf, len);
        vg__free(heap);
    }
    va_end(ap2);
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
    char buf[2 * VG_STATUS_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf, VG_STATUS_MSG_MAX, fmt, ap);
    va_end(ap);
    size_t np = k < 0 ? 0 : (size_t)k >= VG_STATUS_MSG_MAX ? VG_STATUS_MSG_MAX - 1 : (size_t)k;
    size_t nm = strlen(st->msg);
    memcpy(buf + np, st->msg, nm);
    copy_shortened(st->msg, sizeof st->msg, buf, np + nm);
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
