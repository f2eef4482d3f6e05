/* test_version.c - include/vigil/version.h agrees with CMakeLists.txt's project(VERSION)
 * (passed in as VG_PROJECT_VERSION*), and vg_version() reports the same string. */
#include "test_util.h"
#include "vigil/vigil.h"

int main(void) {
    CHECK(VG_VERSION_MAJOR == VG_PROJECT_VERSION_MAJOR);
    CHECK(VG_VERSION_MINOR == VG_PROJECT_VERSION_MINOR);
    CHECK(VG_VERSION_PATCH == VG_PROJECT_VERSION_PATCH);
    CHECK(vg_version() != NULL);
    CHECK(strcmp(vg_version(), VG_PROJECT_VERSION) == 0);
    CHECK(VG_VERSION_NUMBER == VG_PROJECT_VERSION_MAJOR * 10000 + VG_PROJECT_VERSION_MINOR * 100 +
                                   VG_PROJECT_VERSION_PATCH);
    fprintf(stderr, "vg_version() = %s\n", vg_version());
    TEST_MAIN_END();
}
