/*
 * vigil/backend.h - the compute backend of the float32 matrix products (MatMul and the
 * GEMM path of the convolutions) and convolutions: on oneDNN, float32 Conv2D and its
 * two gradients run oneDNN's convolution primitives where they beat vigil's direct
 * kernels (see README, "Compute backend"); on OpenBLAS, vigil's own kernels.
 *
 * By default (VG_BACKEND_AUTO) vigil picks by what the CPU can do, not by its model
 * number: oneDNN (JIT kernels dispatched on the ISA bits: AVX2, AVX-512, ...) when the
 * library was built with it and the CPU has AVX2+FMA, else OpenBLAS. The environment
 * variable VG_BACKEND=openblas|dnnl|auto, read once at the first use, overrides the
 * automatic choice. float64 always uses OpenBLAS. The choice is logged once at
 * VG_LOG_DEBUG, with the CPU's features and OpenBLAS's core name.
 */
#ifndef VIGIL_BACKEND_H
#define VIGIL_BACKEND_H

#include "status.h"
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vg_backend {
    VG_BACKEND_AUTO = 0,     /* chosen from the CPU's features (and VG_BACKEND) */
    VG_BACKEND_OPENBLAS = 1, /* cblas_sgemm */
    VG_BACKEND_DNNL = 2      /* oneDNN's dnnl_sgemm and convolutions, one thread per call */
} vg_backend;

/* Sets the backend process-wide (VG_BACKEND_AUTO: back to the automatic choice).
 * Meant for start-up, tests and benchmarks; kernels already running finish on the old
 * one. Fails with INVALID_ARGUMENT for an unknown value and UNIMPLEMENTED for
 * VG_BACKEND_DNNL when vigil was built without oneDNN (the backend is then unchanged). */
VG_API vg_code vg_backend_set(vg_backend b, vg_status *st);

/* The backend in use (never VG_BACKEND_AUTO: the automatic choice resolved). */
VG_API vg_backend vg_backend_get(void);

/* "openblas", "dnnl" or "auto". Static string. */
VG_API const char *vg_backend_name(vg_backend b);

/* One line describing the choice: backend, why, the CPU's ISA features and OpenBLAS's
 * core name (flagging a core below the CPU, e.g. its generic fallback). Writes at most
 * len bytes, NUL-terminated, into buf (caller-owned); returns buf. */
VG_API char *vg_backend_describe(char *buf, size_t len);

/* For programs that can re-execute themselves (the vigil CLI does): when float32
 * products run on OpenBLAS (vigil built without oneDNN, or VG_BACKEND=openblas) and
 * OpenBLAS runs kernels below the CPU's ISA (its generic fallback) while
 * OPENBLAS_CORETYPE is unset, returns the OPENBLAS_CORETYPE that matches the CPU
 * ("Cooperlake", "SkylakeX", "Haswell" or "Sandybridge"); OpenBLAS reads it only when
 * it loads, so the process must be started again with it set. Else NULL. Static
 * string. Resolves the backend (see vg_backend_get). */
VG_API const char *vg_backend_openblas_coretype_hint(void);

#ifdef __cplusplus
}
#endif

#endif
