/* fuzz_sstable.c - the SSTable reader (checkpoint .index files) on arbitrary bytes,
 * then the bundle index on top of it (header, BundleEntryProtos, size validation):
 * entries are iterated and looked up. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vg_status st;
    uint8_t *copy = vg__malloc(size ? size : 1);
    if (!copy) return 0;
    if (size) memcpy(copy, data, size);
    vg__sstable *t = vg__sstable_open_buffer(copy, size, "fuzz.index", &st); /* takes copy */
    if (t) {
        size_t n = vg__sstable_count(t);
        for (size_t i = 0; i < n; i++) {
            const uint8_t *k, *v;
            size_t kl, vl;
            vg__sstable_entry(t, i, &k, &kl, &v, &vl);
            (void)vg__sstable_find(t, k, kl);
        }
        vg__sstable_free(t);
    }
    fz_write("b.index", data, size);
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s/b", fz_dir());
    vg__bundle_reader *r = vg__bundle_reader_open(prefix, &st);
    if (r) {
        size_t n = vg__bundle_reader_num_entries(r);
        for (size_t i = 0; i < n; i++) {
            const vg__bundle_entry *e = vg__bundle_reader_entry(r, i);
            int dt, nd;
            int64_t dims[VG__IO_MAX_DIMS];
            vg__bundle_reader_lookup(r, e->name, &dt, dims, &nd, &st);
            /* no data file: every read must fail cleanly */
            if (vg__bundle_reader_check_data(r, e->name, &st) == VG_OK) abort();
        }
        vg__bundle_reader_free(r);
    }
    return 0;
}
