/* pb_test_util.h - reading protocol buffers the library wrote, in tests that link the
 * internals (io/io.h's vg__pb_field): copy_str copies a length-delimited field into a
 * NUL-terminated buffer of cap bytes, cut to fit. */
#ifndef VG_PB_TEST_UTIL_H
#define VG_PB_TEST_UTIL_H
#include "io/io.h"
#include <string.h>

static inline void copy_str(char *dst, size_t cap, const vg__pb_field *f) {
    size_t n = f->len < cap - 1 ? f->len : cap - 1;
    memcpy(dst, f->data, n);
    dst[n] = 0;
}
#endif
