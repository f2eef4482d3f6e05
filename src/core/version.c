/* version.c - vg_version(): the library's own version string (include/vigil/version.h). */
#include "vigil/version.h"

#define VG_STR2(x) #x
#define VG_STR(x) VG_STR2(x)

VG_API const char *vg_version(void) {
    return VG_STR(VG_VERSION_MAJOR) "." VG_STR(VG_VERSION_MINOR) "." VG_STR(VG_VERSION_PATCH);
}
