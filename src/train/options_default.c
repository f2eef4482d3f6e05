/* options_default.c - the _default() functions of the train layer's option structs:
 * the same values as their _INIT macros (tests/test_options_default.c checks it). */
#include "vigil/saver.h"
#include "vigil/summary.h"

vg_saver_options vg_saver_options_default(void) {
    vg_saver_options o = VG_SAVER_OPTIONS_INIT;
    return o;
}

vg_file_writer_options vg_file_writer_options_default(void) {
    vg_file_writer_options o = VG_FILE_WRITER_OPTIONS_INIT;
    return o;
}
