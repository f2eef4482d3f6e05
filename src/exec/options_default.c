/* options_default.c - the _default() functions of the exec layer's option structs:
 * the same values as their _INIT macros (tests/test_options_default.c checks it). */
#include "vigil/session.h"

vg_session_options vg_session_options_default(void) {
    vg_session_options o = VG_SESSION_OPTIONS_INIT;
    return o;
}

vg_run_options vg_run_options_default(void) {
    vg_run_options o = VG_RUN_OPTIONS_INIT;
    return o;
}
