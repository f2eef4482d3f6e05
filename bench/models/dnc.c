/* dnc.c - bench_models' DNC: examples/tf1/dnc's own model code (dnc.c, access.c,
 * addressing.c, util.c and train_graph.c, linked in) at train.py's defaults: LSTM
 * controller of 64, memory 16 x 16, 4 read heads, 1 write head, clip 20, the masked
 * sigmoid cross-entropy of the repeat-copy task, gradients clipped to global norm 50,
 * RMSProp (lr 1e-4, decay 0.9, epsilon 1e-10); batch 16. In place of the in-graph
 * RepeatCopy dataset, a repeat-copy batch is fed (observations [T, B, 6], target [T, B, 5],
 * mask [T, B]) with T = size: 9 by default, the longest sequence the default curriculum
 * (lengths 1-2, repeats 1-2) produces, every example a 2-vector pattern repeated twice. */
#include "models.h"
#include "../../examples/tf1/dnc/dnc.h"
#include <stdio.h>
#include <stdlib.h>

enum { NUM_BITS = 4 };

static void cleanup(void *state) {
    dnc_train_graph_free(state);
    free(state);
}

/* One repeat-copy batch as repeat_copy.py lays it out: obs = [start flag, pattern (L),
 * num-repeats flag (R / 10), zeros], target = [zeros (L + 2), pattern x R, end flag,
 * zeros], mask = 1 over the target part (R L + 1 steps). */
static void fill_repeat_copy(vg_tensor *obs, vg_tensor *targ, vg_tensor *mask, int T, int B, int L, int R) {
    float *o = vg_tensor_data(obs), *t = vg_tensor_data(targ), *m = vg_tensor_data(mask);
    const int no = NUM_BITS + 2, nt = NUM_BITS + 1;
    for (int64_t i = 0; i < (int64_t)T * B * no; i++) o[i] = 0;
    for (int64_t i = 0; i < (int64_t)T * B * nt; i++) t[i] = 0;
    for (int64_t i = 0; i < (int64_t)T * B; i++) m[i] = 0;
    for (int b = 0; b < B; b++) {
        o[(0 * B + b) * no + NUM_BITS] = 1; /* start flag */
        for (int s = 0; s < L; s++)
            for (int k = 0; k < NUM_BITS; k++) {
                float bit = (float)(rand() & 1);
                o[((1 + s) * B + b) * no + k] = bit;
                for (int r = 0; r < R; r++) t[((L + 2 + r * L + s) * B + b) * nt + k] = bit;
            }
        o[((L + 1) * B + b) * no + NUM_BITS + 1] = (float)R / 10.0f; /* num-repeats flag */
        t[((L + 2 + R * L) * B + b) * nt + NUM_BITS] = 1;           /* end flag */
        for (int s = L + 2; s <= L + 2 + R * L; s++) m[s * B + b] = 1;
    }
}

static int build(vg_graph *g, int batch, int size, bm_built *b, vg_status *st) {
    int T = size, L = 2, R = 2;
    while (L > 1 && L * (R + 1) + 3 > T) L--;
    while (R > 1 && L * (R + 1) + 3 > T) R--;
    if (L * (R + 1) + 3 > T) {
        st->code = VG_INVALID_ARGUMENT;
        snprintf(st->msg, sizeof st->msg, "dnc: --size (sequence length) must be >= 5");
        return 1;
    }
    int64_t od[3] = {T, batch, NUM_BITS + 2}, td[3] = {T, batch, NUM_BITS + 1}, md[2] = {T, batch};
    vg_output obs = vg_placeholder(g, VG_FLOAT, od, 3, "observations");
    vg_output targ = vg_placeholder(g, VG_FLOAT, td, 3, "target");
    vg_output mask = vg_placeholder(g, VG_FLOAT, md, 2, "mask");
    /* train.py's FLAGS defaults */
    dnc_train_config cfg = {64, 16, 16, 1, 4, 20.0, 50.0, 1e-4, 1e-10, batch};
    dnc_train_graph *tg = calloc(1, sizeof *tg);
    if (!tg) return 1;
    b->cleanup = cleanup, b->state = tg;
    if (dnc_train_graph_build(g, &cfg, obs, targ, mask, NUM_BITS + 1, false, false, tg, st) != VG_OK) return 1;
    b->train = tg->train_loss;
    b->train_op = tg->train_step;
    b->feeds[0] = obs, b->feeds[1] = targ, b->feeds[2] = mask, b->nfeeds = 3;
    b->fv[0] = vg_tensor_new(VG_FLOAT, od, 3, st);
    b->fv[1] = vg_tensor_new(VG_FLOAT, td, 3, st);
    b->fv[2] = vg_tensor_new(VG_FLOAT, md, 2, st);
    if (!b->fv[0] || !b->fv[1] || !b->fv[2]) return 1;
    fill_repeat_copy(b->fv[0], b->fv[1], b->fv[2], T, batch, L, R);
    return 0;
}

const bm_model bm_dnc = {"dnc", 16, 9, build};
