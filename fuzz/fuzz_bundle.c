/* fuzz_bundle.c - a whole V2 checkpoint: input = 4-byte length, the .index bytes, the
 * .data-00000-of-00001 bytes. Every tensor is read through the public checkpoint
 * reader (numeric and string), as `vigil ckpt --stats` does. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *idx, *dat;
    size_t ni, nd;
    fz_split(data, size, &idx, &ni, &dat, &nd);
    fz_write("c.index", idx, ni);
    fz_write("c.data-00000-of-00001", dat, nd);
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s/c", fz_dir());
    vg_status st;
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(prefix, &st);
    if (!r) return 0;
    int n = vg_checkpoint_reader_num_tensors(r);
    for (int i = 0; i < n; i++) {
        vg_dtype dt;
        vg_shape shape;
        const char *name = vg_checkpoint_reader_tensor(r, i, &dt, &shape);
        vg_tensor *t = vg_checkpoint_reader_read(r, name, &st);
        if (t) {
            /* a tensor that was read fits the data file */
            if (dt != VG_STRING && vg_tensor_nbytes(t) > nd) abort();
            vg_tensor_free(t);
        }
    }
    vg_checkpoint_reader_free(r);
    return 0;
}
