/* fed_bytes_fixture.h - running a state-restore op with its scalar string placeholder fed
 * raw bytes (a reader's or an iterator's serialized state), as test_data_reader_state and
 * the fuzz/fuzz_reader_data harness do. Depends on the public API only (the harness
 * includes it too). */
#ifndef VG_FED_BYTES_FIXTURE_H
#define VG_FED_BYTES_FIXTURE_H
#include "vigil/vigil.h"
#include <stddef.h>

/* Runs target with the scalar string placeholder fed holding the n bytes p; returns the
 * run's code (*st set on failure). */
static inline vg_code run_fed_bytes(vg_session *s, vg_op *target, vg_output fed, const void *p, size_t n,
                                    vg_status *st) {
    vg_tensor *t = vg_tensor_new(VG_STRING, NULL, 0, st);
    if (!t) return st->code;
    vg_tensor_set_string(t, 0, p, n, st);
    vg_code rc = vg_session_run(s, NULL, &fed, &t, 1, NULL, NULL, 0, &target, 1, NULL, st);
    vg_tensor_free(t);
    return rc;
}
#endif
