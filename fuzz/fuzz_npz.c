/* fuzz_npz.c - NumPy .npz archives (vigil/npy.h): open from bytes, read every array
 * (libzip's container parsing, the member size check, CRC and vg_npy_parse). No
 * allocation may exceed what the input can hold (run with -malloc_limit_mb), except the
 * member size check's own limit, which the harness lowers to 64 MiB. */
#include "fuzz_util.h"
#include "vigil/data.h"
#include "vigil/npy.h"

static const char *npz_key(void *z, int i) { return vg_npz_key(z, i); }
static vg_tensor *npz_get(void *z, const char *key, vg_status *st) { return vg_npz_get(z, key, st); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int once;
    if (!once) {
        vg_decode_limits l = vg_decode_limits_default();
        l.max_record_bytes = (int64_t)64 << 20;
        vg_status st0;
        vg_set_decode_limits(&l, &st0);
        once = 1;
    }
    vg_status st;
    vg_npz *z = vg_npz_parse(data, size, "fuzz.npz", &st);
    if (!z) return 0;
    int n = vg_npz_count(z);
    fz_read_entries(z, n, npz_key, npz_get);
    if (vg_npz_key(z, n) != NULL) __builtin_trap();
    vg_npz_close(z);
    return 0;
}
