/*
 * vigil/config.h - tf.ConfigProto for sessions: thread counts, allow_soft_placement,
 * log_device_placement, and the GPU options vigil accepts and ignores (it runs on the
 * CPU). Device strings come from tf.device scopes (vg_graph_push_device in
 * vigil/graph.h) or from imported graphs.
 *
 *     vg_graph_push_device(g, "/gpu:0");
 *     vg_output c = vg_const_f32(g, 1, "c");      // device "/gpu:0"
 *     vg_graph_pop_device(g);
 *     vg_config_proto cfg = {.allow_soft_placement = true}; // without it: INVALID_ARGUMENT, as TF
 *     vg_session *sess = vg_session_new_with_config(g, &cfg, &st);
 *     vg_session_free(sess);
 *     (void)c;
 */
#ifndef VIGIL_CONFIG_H
#define VIGIL_CONFIG_H

#include "session.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vg_config_proto {
    int intra_op_parallelism_threads;  /* 0: number of cores */
    int inter_op_parallelism_threads;  /* 0: number of cores */
    bool allow_soft_placement;         /* false: an op placed on a device vigil lacks fails */
    bool log_device_placement;         /* false: true logs "<op>: (<type>): <device>" per op (INFO) */
    double gpu_per_process_memory_fraction; /* gpu_options: accepted, ignored (logged once) */
    bool gpu_allow_growth;                  /* gpu_options: accepted, ignored (logged once) */
    bool auto_mixed_precision; /* graph_options.rewrite_options.auto_mixed_precision ON: bfloat16
                                  mixed precision (vigil/mixed_precision.h) */
} vg_config_proto;


/* The placer's check: every op's device (empty, or a CPU:0 of /job:localhost, replica 0,
 * task 0, in any of TF's spellings: "/cpu:0", "/device:CPU:0", "CPU",
 * "/job:localhost/replica:0/task:0/device:CPU:0") is placed on the CPU; another device
 * ("/gpu:0", "/device:GPU:1", "/device:TPU:0", "/cpu:1") goes to the CPU with
 * allow_soft_placement and otherwise fails with INVALID_ARGUMENT "Cannot assign a device
 * for operation <op>: <op> was explicitly assigned to <device> but available devices
 * are [ /job:localhost/replica:0/task:0/device:CPU:0 ]. Make sure the device
 * specification refers to a valid device."; a malformed string fails with
 * INVALID_ARGUMENT naming the op. With log_device_placement each placement is logged.
 * config NULL = defaults. */
VG_API vg_code vg_config_check_placement(const vg_graph *g, const vg_config_proto *config, vg_status *st);

/* tf.Session(config=...): vg_config_check_placement, then vg_session_new with the
 * thread counts. Ownership: as vg_session_new. NULL on failure (st set). */
VG_API vg_session *vg_session_new_with_config(vg_graph *g, const vg_config_proto *config, vg_status *st);

#ifdef __cplusplus
}
#endif
#endif
