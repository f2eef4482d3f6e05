/* import_internal.h - shared by graphdef_import.c and metagraph_import.c. */
#ifndef VG_IMPORT_INTERNAL_H
#define VG_IMPORT_INTERNAL_H

#include "core/core.h"
#include "vigil/import.h"

/* vg_graph_import_graph_def, skipping the nodes named omit_scope or "<omit_scope>/..."
 * (NULL: none); a kept node whose input is a skipped node fails as a missing node. */
VG_HIDDEN vg_code vg__import_graph_def_ex(vg_graph *g, const void *bytes, size_t len, const vg_import_options *opts,
                                          const char *omit_scope, vg_status *st);

/* Reads the file at path into *data (vg__free it; *len bytes) for the vg_*_file import
 * functions; a NULL path fails with INVALID_ARGUMENT naming fn. */
VG_HIDDEN vg_code vg__import_read_path(const char *fn, const char *path, uint8_t **data, size_t *len,
                                       vg_status *st);

#endif
