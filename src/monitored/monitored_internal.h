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

#endif
