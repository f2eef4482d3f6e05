/* config.c - ConfigProto for sessions: the placer's device check (TF's
 * DeviceNameUtils::ParseFullName rules for the common spellings), soft placement onto
 * the CPU, device-placement logging; public API only. */
#include "train_util.h"
#include "vigil/config.h"
#include "vigil/mixed_precision.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#define CPU_DEVICE "/job:localhost/replica:0/task:0/device:CPU:0"

typedef enum { DEV_CPU0, DEV_OTHER, DEV_BAD } dev_kind;

static bool eq_ci(const char *a, size_t n, const char *b) {
    if (strlen(b) != n) return false;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i])) return false;
    return true;
}

static bool all_digits(const char *s, size_t n) {
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i])) return false;
    return true;
}

/* Classifies a device string: "/job:x/replica:n/task:n/device:TYPE:n" with any part
 * missing, the legacy "/cpu:0" / "/gpu:0" forms, or a bare "CPU" / "CPU:0". */
static dev_kind classify(const char *d) {
    bool cpu = true, other = false;
    const char *p = d;
    if (*p != '/') { /* "CPU", "GPU:1" */
        const char *colon = strchr(p, ':');
        size_t tn = colon ? (size_t)(colon - p) : strlen(p);
        if (tn == 0) return DEV_BAD;
        if (colon && !all_digits(colon + 1, strlen(colon + 1)) && strcmp(colon + 1, "*") != 0) return DEV_BAD;
        if (!eq_ci(p, tn, "cpu")) return DEV_OTHER;
        return colon && strcmp(colon + 1, "0") != 0 && strcmp(colon + 1, "*") != 0 ? DEV_OTHER : DEV_CPU0;
    }
    while (*p == '/') {
        p++;
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *colon = memchr(p, ':', n);
        if (!colon) return DEV_BAD;
        size_t kn = (size_t)(colon - p);
        const char *v = colon + 1;
        size_t vn = n - kn - 1;
        if (eq_ci(p, kn, "job")) {
            if (!(vn == 9 && strncmp(v, "localhost", 9) == 0)) other = true;
        } else if (eq_ci(p, kn, "replica") || eq_ci(p, kn, "task")) {
            if (!all_digits(v, vn)) return DEV_BAD;
            if (!(vn == 1 && v[0] == '0')) other = true;
        } else if (eq_ci(p, kn, "device")) {
            const char *c2 = memchr(v, ':', vn);
            size_t tn = c2 ? (size_t)(c2 - v) : vn;
            if (tn == 0) return DEV_BAD;
            if (!eq_ci(v, tn, "cpu")) cpu = false;
            if (c2) {
                size_t in = vn - tn - 1;
                if (!(in == 1 && c2[1] == '*') && !all_digits(c2 + 1, in)) return DEV_BAD;
                if (!(in == 1 && (c2[1] == '0' || c2[1] == '*'))) other = true;
            }
        } else if (eq_ci(p, kn, "cpu") || eq_ci(p, kn, "gpu")) { /* legacy "/gpu:0" */
            if (!(vn == 1 && v[0] == '*') && !all_digits(v, vn)) return DEV_BAD;
            if (!eq_ci(p, kn, "cpu")) cpu = false;
            if (!(vn == 1 && (v[0] == '0' || v[0] == '*'))) other = true;
        } else {
            return DEV_BAD;
        }
        p += n;
    }
    if (*p) return DEV_BAD;
    return cpu && !other ? DEV_CPU0 : DEV_OTHER;
}

vg_code vg_config_check_placement(const vg_graph *g, const vg_config_proto *config, vg_status *st) {
    vg_status local;
    if (!st) st = &local;
    if (!g) return vg_status_set(st, VG_INVALID_ARGUMENT, "config: graph is NULL");
    vg_config_proto def = {0};
    if (!config) config = &def;
    if (config->gpu_per_process_memory_fraction != 0 || config->gpu_allow_growth)
        vg_logf(VG_LOG_INFO, "ConfigProto gpu_options are ignored: vigil runs on the CPU");
    if (config->log_device_placement) vg_logf(VG_LOG_INFO, "Device mapping: no known devices.");
    int n = vg_graph_num_ops(g);
    for (int i = 0; i < n; i++) {
        vg_op *op = vg_graph_op(g, i);
        const char *d = vg_op_device(op);
        if (*d) {
            dev_kind k = classify(d);
            if (k == DEV_BAD)
                return vg_status_set(st, VG_INVALID_ARGUMENT, "Malformed device specification '%s' in node %s", d,
                                     vg_op_name(op));
            if (k == DEV_OTHER && !config->allow_soft_placement)
                return vg_status_set(st, VG_INVALID_ARGUMENT,
                                     "Cannot assign a device for operation %s: %s was explicitly assigned to %s but "
                                     "available devices are [ " CPU_DEVICE " ]. Make sure the device specification "
                                     "refers to a valid device.",
                                     vg_op_name(op), vg_op_name(op), d);
        }
        if (config->log_device_placement)
            vg_logf(VG_LOG_INFO, "%s: (%s): " CPU_DEVICE, vg_op_name(op), vg_op_type(op));
    }
    vg_status_clear(st);
    return VG_OK;
}

vg_session *vg_session_new_with_config(vg_graph *g, const vg_config_proto *config, vg_status *st) {
    if (vg_config_check_placement(g, config, st) != VG_OK) return NULL;
    vg_session_options o = {0};
    if (config) {
        o.intra_op_threads = config->intra_op_parallelism_threads;
        o.inter_op_threads = config->inter_op_parallelism_threads;
    }
    vg_session *s = vg_session_new(g, &o, st);
    if (s && config && config->auto_mixed_precision && vg_session_set_auto_mixed_precision(s, true, st) != VG_OK) {
        vg_session_free(s);
        return NULL;
    }
    return s;
}
