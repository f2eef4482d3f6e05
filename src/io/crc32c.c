/*
 * crc32c.c - CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of
 * every TF file format. Two implementations with identical results: the SSE4.2 crc32
 * instruction (8 bytes per step) chosen at run time, and portable slicing-by-8 tables.
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
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const void *data, size_t n) {
    const uint8_t *p = data;
    uint64_t c = ~crc;
    while (n && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        n--;
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
