/*
 * xoshiro.h - the xoshiro256** generator seeded through splitmix64 (Blackman and Vigna,
 * public domain), for the shuffles that need a fast stream of their own: the
 * RandomShuffleQueue (kernels/state/queue_ops.c) and tf.data's shuffle
 * (data/dataset_iter.c). TF uses Philox there; the order of a shuffle differs from
 * TF's, as any seed-for-seed match would need TF's generator and its exact draws.
 */
#ifndef VG_CORE_XOSHIRO_H
#define VG_CORE_XOSHIRO_H
#include <stdint.h>

/* One step of splitmix64 on the state *x (advances it). */
static inline uint64_t vg__splitmix_next(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t vg__rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* Seeds the four words of s from x through splitmix64. */
static inline void vg__xoshiro_seed(uint64_t s[4], uint64_t x) {
    for (int i = 0; i < 4; i++) s[i] = vg__splitmix_next(&x);
}

/* The next 64 bits of xoshiro256** state s. */
static inline uint64_t vg__xoshiro_next(uint64_t s[4]) {
    uint64_t r = vg__rotl64(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = vg__rotl64(s[3], 45);
    return r;
}
#endif
