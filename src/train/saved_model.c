/*
 * saved_model.c - SavedModel loading (vigil/saved_model.h), after TF 1.15's
 * saved_model/loader_impl.py: find the MetaGraphDef by tags, import it, restore the
 * variables from <export_dir>/variables/variables, run the main op. Public API only.
 */
#include "vigil/saved_model.h"
#include "vigil/saver.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void vg_saved_model_free(vg_saved_model *m) {
    if (!m) return;
    vg_session_free(m->session);
    vg_meta_graph_free(m->meta_graph);
    vg_graph_free(m->graph);
    vg_free(m);
}

static bool file_exists(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0;
}

vg_code vg_saved_model_load(const char *export_dir, const char *const *tags, int ntags,
                            const vg_session_options *session_options, vg_saved_model **out, vg_status *st) {
    *out = NULL;
    if (!export_dir) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_saved_model_load: NULL export_dir");
    char path[4096];
    int w = snprintf(path, sizeof path, "%s/saved_model.pb", export_dir);
    if (w < 0 || (size_t)w >= sizeof path) return vg_status_set(st, VG_INVALID_ARGUMENT, "export_dir too long");
    if (!file_exists(path)) {
        snprintf(path, sizeof path, "%s/saved_model.pbtxt", export_dir);
        if (!file_exists(path))
            return vg_status_set(st, VG_NOT_FOUND, "SavedModel file does not exist at: %s/{saved_model.pbtxt|saved_model.pb}",
                                 export_dir);
    }
    vg_saved_model *m = vg_calloc(1, sizeof *m);
    if (!m || !(m->graph = vg_graph_new())) {
        vg_free(m);
        return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory loading a SavedModel");
    }
    vg_meta_import_options o = {0};
    o.omit_saver = true;
    vg_code k = vg_import_saved_model_graph(m->graph, path, tags, ntags, &o, &m->meta_graph, st);
    int nvars = 0;
    const vg_output *vars = k ? NULL : vg_graph_collection(m->graph, VG_GLOBAL_VARIABLES, &nvars);
    vg_saver *saver = NULL;
    if (!k && nvars > 0) {
        vg_saver_options so = VG_SAVER_OPTIONS_INIT;
        so.var_list = vars;
        so.nvars = nvars;
        so.write_meta_graph = false;
        so.name = "vigil_restore";
        saver = vg_saver_new(m->graph, &so, st);
        if (!saver) k = st->code ? st->code : VG_INTERNAL;
    }
    if (!k && !(m->session = vg_session_new(m->graph, session_options, st))) k = st->code ? st->code : VG_INTERNAL;
    if (!k && saver) {
        snprintf(path, sizeof path, "%s/variables/variables", export_dir);
        k = vg_saver_restore(saver, m->session, path, st);
    }
    vg_saver_free(saver);
    /* main op: saved_model_main_op, else legacy_init_op (TF's get_main_op_tensor) */
    if (!k) {
        int n = 0;
        const vg_output *mo = vg_graph_collection(m->graph, "saved_model_main_op", &n);
        if (n == 0) mo = vg_graph_collection(m->graph, "legacy_init_op", &n);
        if (n > 0) k = vg_session_run_targets(m->session, &mo[0].op, 1, st);
    }
    if (k) {
        vg_saved_model_free(m);
        return k;
    }
    vg_graph_finalize(m->graph);
    *out = m;
    vg_status_clear(st);
    return VG_OK;
}

static int find_key(const vg_meta_graph *mg, int sig, bool outputs, const char *key) {
    int n = vg_meta_graph_signature_num_tensors(mg, sig, outputs);
    for (int j = 0; key && j < n; j++)
        if (strcmp(vg_meta_graph_signature_tensor_key(mg, sig, outputs, j), key) == 0) return j;
    return -1;
}

vg_code vg_saved_model_run(vg_saved_model *m, const char *key, const char *const *input_keys,
                           vg_tensor *const *inputs, int ninputs, const char *const *output_keys,
                           vg_tensor **outputs, int noutputs, vg_status *st) {
    for (int i = 0; i < noutputs; i++) outputs[i] = NULL;
    if (!m || ninputs < 0 || noutputs < 0 || ninputs > 256 || noutputs > 256)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_saved_model_run: bad arguments");
    int sig = vg_meta_graph_find_signature(m->meta_graph, key);
    if (sig < 0) return vg_status_set(st, VG_NOT_FOUND, "SignatureDef '%s' not found in the SavedModel", key ? key : "(null)");
    vg_output feeds[256], fetches[256];
    for (int i = 0; i < ninputs + noutputs; i++) {
        bool out = i >= ninputs;
        const char *k = out ? output_keys[i - ninputs] : input_keys[i];
        int j = find_key(m->meta_graph, sig, out, k);
        if (j < 0)
            return vg_status_set(st, VG_NOT_FOUND, "signature '%s' has no %s '%s'", key, out ? "output" : "input",
                                 k ? k : "(null)");
        vg_output t = vg_meta_graph_signature_tensor(m->meta_graph, sig, out, j);
        if (out) fetches[i - ninputs] = t;
        else feeds[i] = t;
    }
    return vg_session_run(m->session, NULL, feeds, inputs, ninputs, fetches, outputs, noutputs, NULL, 0, NULL, st);
}
