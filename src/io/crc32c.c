/*
 * crc32c.c - CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of
 * every TF file format. Two implementations with identical results: the SSE4.2 crc32
 * instruction (8 bytes per step, three lanes at a time on buffers of 768 bytes and
 * more) chosen at run time, and portable slicing-by-8 tables.
 * "Extend" continues a finished CRC, as TF's crc32c::Extend does.
 */
#include "io/io.h"
#include <pthread.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>
#define VG_HAVE_SSE42_PATH 1
#endif

#define POLY 0x82f63b78u

static uint32_t g_table[8][256];
static pthread_once_t g_table_once = PTHREAD_ONCE_INIT;

static void build_tables(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        g_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = g_table[0][i];
        for (int t = 1; t < 8; t++) {
            c = g_table[0][c & 0xff] ^ (c >> 8);
            g_table[t][i] = c;
        }
    }
}

uint32_t vg__crc32c_extend_sw(uint32_t crc, const void *data, size_t n) {
    pthread_once(&g_table_once, build_tables);
    const uint8_t *p = data;
    uint32_t c = ~crc;
    while (n && ((uintptr_t)p & 7)) {
        c = g_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
        n--;
    }
    while (n >= 8) {
        uint32_t lo = vg__get_le32(p) ^ c, hi = vg__get_le32(p + 4);
        c = g_table[7][lo & 0xff] ^ g_table[6][(lo >> 8) & 0xff] ^ g_table[5][(lo >> 16) & 0xff] ^
            g_table[4][lo >> 24] ^ g_table[3][hi & 0xff] ^ g_table[2][(hi >> 8) & 0xff] ^
            g_table[1][(hi >> 16) & 0xff] ^ g_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) c = g_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return ~c;
}

#ifdef VG_HAVE_SSE42_PATH
/* Three streams: the crc32 instruction has a latency of ~3 cycles and a throughput of
 * one per cycle, so a buffer of 3 x LANE bytes is checksummed as three independent
 * LANE-byte lanes and the lane CRCs are combined. The CRC register update is linear,
 * so crc(A B C) = shift(shift(a) ^ b) ^ c, where a, b, c are the lanes' registers (b
 * and c started from 0) and shift(x) is x advanced over LANE zero bytes: a linear map
 * of 32 bits, tabulated per byte of x (g_shift). */
#define LANE 256

static uint32_t g_shift[4][256];
static pthread_once_t g_shift_once = PTHREAD_ONCE_INIT;

__attribute__((target("sse4.2"))) static uint32_t zeros_hw(uint32_t c, size_t n) {
    uint64_t r = c;
    for (size_t i = 0; i < n; i += 8) r = _mm_crc32_u64(r, 0);
    return (uint32_t)r;
}

__attribute__((target("sse4.2"))) static void build_shift(void) {
    uint32_t basis[32];
    for (int b = 0; b < 32; b++) basis[b] = zeros_hw(1u << b, LANE);
    for (int j = 0; j < 4; j++)
        for (uint32_t v = 0; v < 256; v++) {
            uint32_t x = 0;
            for (int i = 0; i < 8; i++)
                if (v & (1u << i)) x ^= basis[8 * j + i];
            g_shift[j][v] = x;
        }
}

static inline uint32_t shift_lane(uint32_t x) {
    return g_shift[0][x & 0xff] ^ g_shift[1][(x >> 8) & 0xff] ^ g_shift[2][(x >> 16) & 0xff] ^ g_shift[3][x >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const void *data, size_t n) {
    const uint8_t *p = data;
    uint64_t c = ~crc;
    while (n && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        n--;
    }
    if (n >= 3 * LANE) {
        pthread_once(&g_shift_once, build_shift);
        while (n >= 3 * LANE) {
            uint64_t c1 = 0, c2 = 0;
            for (size_t i = 0; i < LANE; i += 8) {
                uint64_t w0, w1, w2;
                memcpy(&w0, p + i, 8);
                memcpy(&w1, p + LANE + i, 8);
                memcpy(&w2, p + 2 * LANE + i, 8);
                c = _mm_crc32_u64(c, w0);
                c1 = _mm_crc32_u64(c1, w1);
                c2 = _mm_crc32_u64(c2, w2);
            }
            c = shift_lane(shift_lane((uint32_t)c) ^ (uint32_t)c1) ^ (uint32_t)c2;
            p += 3 * LANE;
            n -= 3 * LANE;
        }
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        n -= 8;
    }
    while (n--) c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}

uint32_t vg__crc32c_extend(uint32_t crc, const void *p, size_t n) {
    /* __builtin_cpu_supports reads a flag set up by libgcc's constructor: cheap. */
    if (__builtin_cpu_supports("sse4.2")) return crc32c_hw(crc, p, n);
    return vg__crc32c_extend_sw(crc, p, n);
}
#else
uint32_t vg__crc32c_extend(uint32_t crc, const void *p, size_t n) { return vg__crc32c_extend_sw(crc, p, n); }
#endif
