/*
 * version.h - the version of vigil: compile-time macros and the version of the library
 * actually linked (they differ when a program runs against a newer libvigil.so.0).
 *
 * The macros are kept equal to CMakeLists.txt's project(VERSION) by test_version.
 * The shared library's SONAME is libvigil.so.<VG_VERSION_MAJOR>.
 *
 * Example:
 *     #include <vigil/version.h>
 *     #include <stdio.h>
 *     void show(void) {
 *         printf("built with %d.%d.%d, running %s\n", VG_VERSION_MAJOR, VG_VERSION_MINOR,
 *                VG_VERSION_PATCH, vg_version());
 *     }
 */
#ifndef VIGIL_VERSION_H
#define VIGIL_VERSION_H

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VG_VERSION_MAJOR 0
#define VG_VERSION_MINOR 1
#define VG_VERSION_PATCH 0
/* VG_VERSION_MAJOR * 10000 + VG_VERSION_MINOR * 100 + VG_VERSION_PATCH, for #if tests. */
#define VG_VERSION_NUMBER (VG_VERSION_MAJOR * 10000 + VG_VERSION_MINOR * 100 + VG_VERSION_PATCH)

/* The linked library's version as "MAJOR.MINOR.PATCH": a static string, never NULL,
 * not to be freed. Cannot fail. */
VG_API const char *vg_version(void);

#ifdef __cplusplus
}
#endif

#endif
