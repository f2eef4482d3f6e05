/* fuzz_graphdef.c - GraphDef import (binary and text format, vigil/import.h) into a
 * fresh graph, and the missing-op scan, with max_tensor_bytes at 1 MB so that no
 * constant can ask for more under -malloc_limit_mb=64. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vg_status st;
    fz_dir(); /* quiet logging */
    for (int f = 0; f < 2; f++) {
        vg_graph *g = vg_graph_new();
        if (!g) return 0;
        vg_import_options o;
        memset(&o, 0, sizeof o);
        o.prefix = f ? "imported" : NULL;
        o.source = "fuzz";
        o.format = f ? VG_IMPORT_TEXT : VG_IMPORT_AUTO;
        o.max_tensor_bytes = 1 << 20;
        vg_graph_import_graph_def(g, data, size, &o, &st);
        vg_graph_free(g);
    }
    char **types = NULL;
    int *counts = NULL, n = 0;
    if (vg_graph_def_missing_ops(data, size, VG_IMPORT_AUTO, &types, &counts, &n, &st) == VG_OK) {
        vg_import_free_strings(types, n);
        vg_free(counts);
    }
    return 0;
}
