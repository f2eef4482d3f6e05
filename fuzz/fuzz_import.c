/* fuzz_import.c - libFuzzer harness for the graph importers (issue 14 / issue 9): the
 * bytes as a GraphDef (wire format or text, auto-detected) into a fresh graph and into a
 * graph that already has ops (name clashes, input_map), and as a MetaGraphDef (with and
 * without the saver subgraph; its assets), and the text-to-binary converter. Tensors are capped at 1 MiB so -malloc_limit_mb=64 holds.
 * To build: add fuzz_import to VIGIL_FUZZERS in fuzz/CMakeLists.txt. */
#include "vigil/vigil.h"
#include <stdint.h>
#include <stddef.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    if (!g) return 0;
    vg_import_options o = {0};
    o.max_tensor_bytes = 1 << 20;
    vg_graph_import_graph_def(g, data, size, &o, &st);
    /* again into the same graph: clashes, or a prefix and an input_map */
    vg_output feed = vg_placeholder(g, VG_FLOAT, NULL, -1, "fuzz_feed");
    o.prefix = "p";
    o.n_input_map = 1;
    o.input_map_keys = (const char *[]){"x:0"};
    o.input_map_values = &feed;
    vg_graph_import_graph_def(g, data, size, &o, &st);
    vg_graph_free(g);

    for (int omit = 0; omit < 2; omit++) {
        vg_graph *h = vg_graph_new();
        vg_meta_graph *mg = NULL;
        vg_meta_import_options mo = {0};
        mo.max_tensor_bytes = 1 << 20;
        mo.omit_saver = omit;
        if (h && vg_import_meta_graph(h, data, size, &mo, &mg, &st) == VG_OK) {
            for (int i = 0; i < vg_meta_graph_num_signatures(mg); i++)
                for (int j = 0; j < vg_meta_graph_signature_num_tensors(mg, i, true); j++)
                    (void)vg_output_dtype(vg_meta_graph_signature_tensor(mg, i, true, j));
            for (int i = 0; i < vg_meta_graph_num_assets(mg); i++)
                if (!vg_meta_graph_asset_filename(mg, i) || !vg_meta_graph_asset_tensor(mg, i).op) __builtin_trap();
        }
        vg_meta_graph_free(mg);
        vg_graph_free(h);
    }
    /* text to binary for each root message */
    static const char *const roots[] = {"GraphDef", "MetaGraphDef", "SavedModel"};
    for (int r = 0; r < 3; r++) {
        void *bin = NULL;
        size_t blen = 0;
        if (vg_proto_text_to_binary(data, size, roots[r], &bin, &blen, &st) == VG_OK) vg_free(bin);
    }
    char **types = NULL;
    int n = 0;
    if (vg_graph_def_op_types(data, size, VG_IMPORT_AUTO, &types, NULL, &n, &st) == VG_OK)
        vg_import_free_strings(types, n);
    return 0;
}
