/* fuzz_idx.c - IDX files (plain; gzip'd when the input starts with the gzip magic):
 * the whole-file read and the record stream. No allocation may exceed what the file
 * can hold (run with -malloc_limit_mb). */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = fz_write("images-idx3-ubyte", data, size);
    vg_status st;
    int64_t dims[4];
    int nd;
    void *buf = NULL;
    size_t nb;
    if (vg__idx_read(p, 0, dims, &nd, &buf, &nb, &st) == VG_OK) vg__free(buf);
    vg__idx_reader *r = vg__idx_reader_open(p, 0, &st);
    if (r) {
        size_t rb = vg__idx_reader_record_bytes(r);
        uint8_t *rec = vg__malloc(rb ? rb : 1);
        for (int i = 0; rec && i < 4096 && vg__idx_reader_next_record(r, rec, &st) == VG_OK; i++) {}
        vg__free(rec);
        vg__idx_reader_close(r);
    }
    return 0;
}
