/* fuzz_pickle.c - pickled dicts of arrays (vigil/npy.h: vg_pickle_dict_parse, _get): the
 * restricted unpickler over any bytes, then every key converted to a tensor. No
 * allocation may exceed what the input can hold (run with -malloc_limit_mb): every
 * length is checked against the bytes left, memo indices against the input length. */
#include "fuzz_util.h"
#include "vigil/npy.h"

static const char *dict_key(void *d, int i) { return vg_pickle_dict_key(d, i); }
static vg_tensor *dict_get(void *d, const char *key, vg_status *st) { return vg_pickle_dict_get(d, key, st); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vg_status st;
    vg_pickle_dict *d = vg_pickle_dict_parse(data, size, "fuzz.pkl", &st);
    if (!d) return 0;
    fz_read_entries(d, vg_pickle_dict_count(d), dict_key, dict_get);
    vg_pickle_dict_free(d);
    return 0;
}
