/* global_step_read.c - vg_global_step_read (include/vigil/hooks.h): the public face of
 * the step hooks' shared global-step read tensor. */
#include "monitored/hooks/hooks_internal.h"

VG_API vg_code vg_global_step_read(vg_graph *g, vg_output *out, vg_status *st) {
    if (!g || !out)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_global_step_read: %s is NULL", !g ? "g" : "out");
    return vg__global_step_read(g, "vg_global_step_read", out, st);
}
