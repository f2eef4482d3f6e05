/* visibility.h - VG_HIDDEN, the one hidden-visibility macro: marks functions shared
 * between the library's own files (vg__ names), never exported (VG_API, in
 * vigil/status.h, marks the exported ones). Macro only, so every layer may include it,
 * the public-API-only layers (src/train, src/monitored) too. Not installed. */
#ifndef VG_VISIBILITY_H
#define VG_VISIBILITY_H

#if defined(__GNUC__)
#define VG_HIDDEN __attribute__((visibility("hidden")))
#else
#define VG_HIDDEN
#endif

#endif
