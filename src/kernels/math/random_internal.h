/* random_internal.h - the seeded counter streams of the sampling ops that do not follow
 * TF's Philox bits (random_sampling_ops.c: Multinomial, RandomUniformInt; gamma_ops.c:
 * RandomGamma): a per-(session, op) key from the op's seed / seed2 (both 0: a
 * non-deterministic key) and an atomic counter; element i of a run draws from
 * splitmix64(key ^ splitmix64(base + i)). Same seeds, same values. */
#ifndef VG_KERNELS_RANDOM_INTERNAL_H
#define VG_KERNELS_RANDOM_INTERNAL_H

#include "core/core.h"
#include "vigil/graph.h"
#include <stdatomic.h>
#include <stdint.h>

typedef struct vg__seed_stream {
    uint64_t key;
    _Atomic uint64_t counter;
} vg__seed_stream;

/* splitmix64's finalizer of x + the golden-ratio increment. */
static inline uint64_t vg__splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* A new stream for op (freed with vg__free): key from its "seed" / "seed2" attrs and salt
 * (one per op kind, so two kinds with the same seeds differ). NULL with RESOURCE_EXHAUSTED
 * naming `what`. Defined in random_sampling_ops.c. */
VG_HIDDEN vg__seed_stream *vg__seed_stream_new(const vg_op *op, uint64_t salt, const char *what, vg_status *st);

#endif
