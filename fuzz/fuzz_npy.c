/* fuzz_npy.c - NumPy .npy files (vigil/npy.h): parse; whatever parses must serialize
 * and parse back to the same dtype, shape and bytes (numeric) or strings. No
 * allocation may exceed what the input can hold (run with -malloc_limit_mb). */
#include "fuzz_util.h"
#include "vigil/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vg_status st;
    vg_tensor *t = vg_npy_parse(data, size, "fuzz.npy", &st);
    if (!t) return 0;
    void *b = NULL;
    size_t n = 0;
    if (vg_npy_serialize(t, &b, &n, &st) == VG_OK) {
        vg_tensor *u = vg_npy_parse(b, n, "again.npy", &st);
        if (!u) __builtin_trap();
        if (vg_tensor_dtype(u) != vg_tensor_dtype(t) || vg_tensor_ndims(u) != vg_tensor_ndims(t) ||
            vg_tensor_num_elements(u) != vg_tensor_num_elements(t))
            __builtin_trap();
        if (vg_tensor_dtype(t) != VG_STRING) {
            if (memcmp(vg_tensor_data(u), vg_tensor_data(t), vg_tensor_nbytes(t)) != 0) __builtin_trap();
        } else {
            for (int64_t i = 0; i < vg_tensor_num_elements(t); i++) {
                size_t la, lb;
                const char *sa = vg_tensor_string(t, i, &la), *sb = vg_tensor_string(u, i, &lb);
                /* trailing NULs are not representable in '|S' */
                while (la && sa[la - 1] == 0) la--;
                if (la != lb || (la && memcmp(sa, sb, la) != 0)) __builtin_trap();
            }
        }
        vg_tensor_free(u);
        vg_free(b);
    }
    vg_tensor_free(t);
    return 0;
}
