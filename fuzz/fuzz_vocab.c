/* fuzz_vocab.c - InitializeTableFromTextFileV2 (src/kernels/state/lookup_ops.c): a
 * vocabulary file of outside bytes read into a lookup table. Byte 0 picks the table:
 *   0: string (whole line) -> int64 (line number), as index_table_from_file;
 *   1: int64 (line number) -> string (whole line), as index_to_string_table_from_file;
 *   2: string column 1 -> int64 column 0, tab-separated;
 *   3: int64 column 0 -> float column 2, space-separated;
 *   4: int64 (whole line) -> double column 1, comma-separated, vocab_size 3;
 *   5: string (whole line) -> int64 (line number), vocab_size 2.
 * Each input gets a fresh session: the initializer runs; when it succeeds the table's
 * size must equal the number of exported keys, and a lookup of the exported keys must
 * find every one. The graph is built once per process. */
#include "fuzz_util.h"

#define NT 6
static vg_graph *g;
static vg_op *init[NT];
static vg_output size[NT], ex[NT][2];
static vg_output keys_in[NT], found[NT];

static void build(void) {
    g = vg_graph_new();
    const char *path = fz_write("vocab.txt", (const uint8_t *)"", 0);
    static const struct {
        vg_dtype kd, vd;
        int64_t ki, vi, vocab;
        char delim;
    } cfg[NT] = {
        {VG_STRING, VG_INT64, VG_TEXT_FILE_WHOLE_LINE, VG_TEXT_FILE_LINE_NUMBER, 0, 0},
        {VG_INT64, VG_STRING, VG_TEXT_FILE_LINE_NUMBER, VG_TEXT_FILE_WHOLE_LINE, 0, 0},
        {VG_STRING, VG_INT64, 1, 0, 0, '\t'},
        {VG_INT64, VG_FLOAT, 0, 2, 0, ' '},
        {VG_INT64, VG_DOUBLE, VG_TEXT_FILE_WHOLE_LINE, 1, 3, ','},
        {VG_STRING, VG_INT64, VG_TEXT_FILE_WHOLE_LINE, VG_TEXT_FILE_LINE_NUMBER, 2, 0},
    };
    for (int i = 0; i < NT; i++) {
        vg_table_initializer ti =
            vg_text_file_initializer(path, cfg[i].kd, cfg[i].ki, cfg[i].vd, cfg[i].vi, cfg[i].vocab, cfg[i].delim, NULL);
        vg_output def = cfg[i].vd == VG_STRING  ? vg_const_string(g, "UNK", NULL)
                        : cfg[i].vd == VG_FLOAT ? vg_const_f32(g, -1, NULL)
                        : cfg[i].vd == VG_DOUBLE ? vg_const_f64(g, -1, NULL)
                                                 : vg_const_i64(g, -1, NULL);
        vg_lookup_table t = vg_static_hash_table(g, &ti, def, NULL);
        init[i] = t.initializer;
        size[i] = vg_lookup_table_size(g, &t, NULL);
        vg_lookup_table_export(g, &t, ex[i], NULL);
        keys_in[i] = vg_placeholder(g, cfg[i].kd, NULL, -1, NULL);
        found[i] = vg_lookup_table_lookup(g, &t, keys_in[i], NULL);
    }
    if (vg_graph_status(g, NULL) != VG_OK) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size_) {
    if (size_ == 0) return 0;
    if (!g) build();
    vg_status st;
    int m = data[0] % NT;
    fz_write("vocab.txt", data + 1, size_ - 1);
    vg_session *s = vg_session_new(g, NULL, &st);
    if (!s) abort();
    if (vg_session_run_targets(s, &init[m], 1, &st) == VG_OK) {
        vg_tensor *out[3] = {NULL, NULL, NULL};
        vg_output f[3] = {size[m], ex[m][0], ex[m][1]};
        if (vg_session_run(s, NULL, NULL, NULL, 0, f, out, 3, NULL, 0, NULL, &st) != VG_OK) abort();
        int64_t n = *(int64_t *)vg_tensor_data(out[0]);
        if (vg_tensor_num_elements(out[1]) != n || vg_tensor_num_elements(out[2]) != n) abort();
        vg_tensor *got = NULL;
        if (vg_session_run(s, NULL, &keys_in[m], &out[1], 1, &found[m], &got, 1, NULL, 0, NULL, &st) != VG_OK) abort();
        if (vg_tensor_num_elements(got) != n) abort();
        vg_tensor_free(got);
        for (int i = 0; i < 3; i++) vg_tensor_free(out[i]);
    }
    vg_session_free(s);
    return 0;
}
