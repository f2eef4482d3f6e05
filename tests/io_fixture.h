/* io_fixture.h - what the tests of tests/io share. */
#ifndef VG_IO_FIXTURE_H
#define VG_IO_FIXTURE_H
#include "test_util.h"
#include <vigil/vigil.h>

/* A reader (or any handle) that an open call on path returned: checks that it is not
 * NULL and, when it is, prints path and the status' message on stderr. Returns r. */
static inline void *io_fx_opened(void *r, const char *path, const vg_status *st) {
    CHECK(r != NULL);
    if (!r) fprintf(stderr, "  %s: %s\n", path, st->msg);
    return r;
}
#endif
