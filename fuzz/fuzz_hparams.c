/* fuzz_hparams.c - HParams strings from the command line and JSON files
 * (vigil/hparams.h): byte 0 picks parse() or parse_json(); whatever is accepted must
 * serialize with to_json and read back through parse_json to the same JSON. */
#include "fuzz_util.h"
#include "vigil/hparams.h"
#include <stdlib.h>

static vg_hparams *fresh(void) {
    vg_status st;
    vg_hparams *hp = vg_hparams_new();
    if (!hp) return NULL;
    int64_t il[2] = {1, 2};
    double fl[2] = {0.5, 2.0};
    bool bl[1] = {true};
    const char *sl[2] = {"relu", "tanh"};
    vg_hparams_add_int(hp, "a", 1, &st);
    vg_hparams_add_float(hp, "b", 0.1, &st);
    vg_hparams_add_bool(hp, "c", false, &st);
    vg_hparams_add_string(hp, "d", "x", &st);
    vg_hparams_add_int_list(hp, "e", il, 2, &st);
    vg_hparams_add_float_list(hp, "f", fl, 2, &st);
    vg_hparams_add_bool_list(hp, "g", bl, 1, &st);
    vg_hparams_add_string_list(hp, "h.i", sl, 2, &st);
    return hp;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    char *s = malloc(size);
    if (!s) return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = 0;
    vg_status st;
    vg_hparams *hp = fresh();
    vg_code rc = (data[0] & 1) ? vg_hparams_parse_json(hp, s, &st) : vg_hparams_parse(hp, s, &st);
    if (rc == VG_OK) {
        char *j1 = vg_hparams_to_json(hp, &st);
        if (!j1) __builtin_trap();
        vg_hparams *h2 = fresh();
        if (vg_hparams_parse_json(h2, j1, &st) != VG_OK) __builtin_trap();
        char *j2 = vg_hparams_to_json(h2, &st);
        if (!j2 || strcmp(j1, j2) != 0) __builtin_trap();
        vg_free(j1);
        vg_free(j2);
        vg_hparams_free(h2);
    }
    vg_hparams_free(hp);
    free(s);
    return 0;
}
