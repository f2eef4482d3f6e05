/* monitored_internal.h - functions shared by the files of src/monitored/. */
#ifndef VG_MONITORED_INTERNAL_H
#define VG_MONITORED_INTERNAL_H
#include "core/visibility.h"
#include "vigil/monitored.h"


/* Fills the init-related fields of po from a finalized scaffold. */
VG_HIDDEN void vg__scaffold_prepare_options(const vg_scaffold *s, vg_prepare_options *po);

/* A chief (or worker) session creator that owns scaffold (freed with the creator); a
 * chief with checkpoint_dir and lock_dir locks the directory (dir_lock.c). On failure
 * (*st set) the returned creator has create_session == NULL and scaffold is NOT freed. */
VG_HIDDEN vg_session_creator vg__session_creator_owning(vg_graph *g, vg_scaffold *scaffold,
                                                            const vg_config_proto *config, bool chief,
                                                            const char *checkpoint_dir, double max_wait_secs,
                                                            bool lock_dir, vg_status *st);

/* vg_mts_options with TF's defaults resolved (mts.c): frequencies > 0 or 0 = None. */
typedef struct vg__mts_resolved {
    int64_t save_summaries_steps, save_checkpoint_steps, log_step_count_steps;
    double save_summaries_secs, save_checkpoint_secs, stop_grace_period_secs, max_wait_secs;
    bool is_chief;
} vg__mts_resolved;
VG_HIDDEN void vg__resolve_mts_options(const vg_mts_options *o, vg__mts_resolved *r);

/* vg_calloc(1, size): zeroed memory, or NULL with st RESOURCE_EXHAUSTED msg. */
static inline void *vg__mon_calloc(size_t size, vg_status *st, const char *msg) {
    void *p = vg_calloc(1, size);
    if (!p) vg_status_set(st, VG_RESOURCE_EXHAUSTED, "%s", msg);
    return p;
}

#endif
