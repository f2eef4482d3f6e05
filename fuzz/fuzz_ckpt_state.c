/* fuzz_ckpt_state.c - the `checkpoint` state text: parse -> format -> parse must give
 * the same state (paths byte for byte, timestamps bit for bit or both NaN), and what
 * parsed once must parse again. */
#include "fuzz_util.h"
#include <math.h>

static bool same_double(double a, double b) {
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vg__ckpt_state a, b;
    vg_status st;
    if (vg__ckpt_state_parse((const char *)data, size, &a, &st) != VG_OK) return 0;
    vg__pb_buf out;
    vg__pb_init(&out);
    if (vg__ckpt_state_format(&a, &out, &st) != VG_OK) abort();
    if (vg__ckpt_state_parse((const char *)out.data, out.len, &b, &st) != VG_OK) {
        fprintf(stderr, "formatted state does not parse: %s\n%.*s\n", st.msg, (int)out.len, (const char *)out.data);
        abort();
    }
    if (strcmp(a.model_checkpoint_path, b.model_checkpoint_path) || a.n_all != b.n_all || a.n_ts != b.n_ts ||
        !same_double(a.last_preserved_timestamp, b.last_preserved_timestamp))
        abort();
    for (int i = 0; i < a.n_all; i++)
        if (strcmp(a.all_paths[i], b.all_paths[i])) abort();
    for (int i = 0; i < a.n_ts; i++)
        if (!same_double(a.timestamps[i], b.timestamps[i])) abort();
    vg__ckpt_state_free(&a);
    vg__ckpt_state_free(&b);
    vg__pb_free(&out);
    return 0;
}
