/* zlib_test_util.h - compressed test inputs written here: deflate_to makes a zlib stream
 * or one gzip member (deflateInit2 with 16 + MAX_WBITS) of in[n] into out[cap] and
 * returns its length. */
#ifndef VG_ZLIB_TEST_UTIL_H
#define VG_ZLIB_TEST_UTIL_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

static inline size_t deflate_to(uint8_t *out, size_t cap, const void *in, size_t n, bool gzip) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    deflateInit2(&zs, 6, Z_DEFLATED, gzip ? 16 + MAX_WBITS : MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    zs.next_in = (Bytef *)(uintptr_t)in;
    zs.avail_in = (uInt)n;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    deflate(&zs, Z_FINISH);
    size_t got = cap - zs.avail_out;
    deflateEnd(&zs);
    return got;
}

/* Writes the zlib stream (gzip: one gzip member) of the file at src (its first 4 KiB) to
 * the file at dst; returns the bytes written, 0 when a file did not open or a write
 * fell short. */
static inline size_t deflate_file(const char *src, const char *dst, bool gzip) {
    static uint8_t in[4096], out[8192];
    FILE *f = fopen(src, "rb");
    size_t n = f ? fread(in, 1, sizeof in, f) : 0;
    if (f) fclose(f);
    size_t m = deflate_to(out, sizeof out, in, n, gzip);
    FILE *o = f ? fopen(dst, "wb") : NULL;
    bool ok = o && fwrite(out, 1, m, o) == m;
    if (o) fclose(o);
    return ok ? m : 0;
}
#endif
