/* vocab_utils.c - nmt/utils/vocab_utils.py: check_vocab, create_vocab_tables. */
#include "nmt.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nmt_read_lines(const char *path, char ***lines, int *n) {
    FILE *f = fopen(path, "r");
    *lines = NULL, *n = 0;
    if (!f) return -1;
    char buf[4096];
    int cap = 0;
    while (fgets(buf, sizeof buf, f)) {
        size_t l = strlen(buf);
        while (l && (buf[l - 1] == '\n' || buf[l - 1] == '\r')) buf[--l] = 0;
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nl = realloc(*lines, (size_t)cap * sizeof *nl);
            if (!nl) break;
            *lines = nl;
        }
        (*lines)[(*n)++] = strdup(buf);
    }
    fclose(f);
    return 0;
}

void nmt_free_lines(char **lines, int n) {
    for (int i = 0; i < n; i++) free(lines[i]);
    free(lines);
}

/* check_vocab(vocab_file, out_dir, check_special_token=True, sos, eos, unk): the vocab
 * must start with <unk>, <s>, </s>. The Python writes a new vocab file with them
 * prepended when they are missing; here that is an error (the files the port is given
 * must be ready). */
vg_code nmt_check_vocab(const char *vocab_file, int64_t *vocab_size, vg_status *st) {
    char **v;
    int n;
    if (nmt_read_lines(vocab_file, &v, &n) != 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vocab_file '%s' does not exist.", vocab_file);
    bool ok = n >= 3 && strcmp(v[0], NMT_UNK) == 0 && strcmp(v[1], NMT_SOS) == 0 && strcmp(v[2], NMT_EOS) == 0;
    nmt_free_lines(v, n);
    if (!ok)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "%s: the vocab must start with %s, %s, %s (the port does not write a new vocab file)",
                             vocab_file, NMT_UNK, NMT_SOS, NMT_EOS);
    *vocab_size = n;
    return VG_OK;
}

/* create_vocab_tables(src_vocab_file, tgt_vocab_file, share_vocab):
 * lookup_ops.index_table_from_file(vocab_file, default_value=UNK_ID) for each. */
void nmt_create_vocab_tables(vg_graph *g, const char *src_vocab_file, const char *tgt_vocab_file,
                             vg_lookup_table *src_table, vg_lookup_table *tgt_table) {
    vg_index_table_options o = {0};
    o.has_default_value = true;
    o.default_value = NMT_UNK_ID;
    *src_table = vg_index_table_from_file(g, src_vocab_file, &o, NULL);
    if (strcmp(src_vocab_file, tgt_vocab_file) == 0)
        *tgt_table = *src_table; /* share_vocab */
    else
        *tgt_table = vg_index_table_from_file(g, tgt_vocab_file, &o, NULL);
}
