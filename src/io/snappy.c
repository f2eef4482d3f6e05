/*
 * snappy.c - thin wrappers over libsnappy's C API (snappy-c.h) with vigil's status and
 * allocation conventions. Used for Snappy-compressed SSTable blocks (type 1), which TF
 * 1.14+ and some 2.x builds write into checkpoint .index files.
 */
#include "io/io.h"
#include <snappy-c.h>

vg_code vg__snappy_uncompress(const void *in, size_t n, size_t max_len, uint8_t **out, size_t *out_len,
                              vg_status *st) {
    size_t ulen = 0;
    *out = NULL;
    *out_len = 0;
    if (snappy_uncompressed_length(in, n, &ulen) != SNAPPY_OK)
        return vg_status_set(st, VG_DATA_LOSS, "corrupted snappy data (bad length preamble)");
    if (ulen > max_len)
        return vg_status_set(st, VG_DATA_LOSS, "snappy data claims %zu bytes (limit %zu)", ulen, max_len);
    /* Snappy expands at most 64 bytes per 3-byte copy: a longer claim is a lie, and the
     * stream is validated (no allocation) before the output buffer is sized by it. */
    if (ulen / 22 > n + 2 || snappy_validate_compressed_buffer(in, n) != SNAPPY_OK)
        return vg_status_set(st, VG_DATA_LOSS, "corrupted snappy data (%zu bytes claimed from %zu)", ulen, n);
    uint8_t *buf = vg__malloc(ulen ? ulen : 1);
    if (!buf) return VG_OOM(st, "snappy output");
    size_t got = ulen;
    if (snappy_uncompress(in, n, (char *)buf, &got) != SNAPPY_OK || got != ulen) {
        vg__free(buf);
        return vg_status_set(st, VG_DATA_LOSS, "corrupted snappy data");
    }
    *out = buf;
    *out_len = ulen;
    return VG_OK;
}

vg_code vg__snappy_compress(const void *in, size_t n, uint8_t **out, size_t *out_len, vg_status *st) {
    size_t cap = snappy_max_compressed_length(n);
    *out = NULL;
    *out_len = 0;
    uint8_t *buf = vg__malloc(cap ? cap : 1);
    if (!buf) return VG_OOM(st, "snappy output");
    size_t got = cap;
    if (snappy_compress(in, n, (char *)buf, &got) != SNAPPY_OK) {
        vg__free(buf);
        return vg_status_set(st, VG_INTERNAL, "snappy compression failed");
    }
    *out = buf;
    *out_len = got;
    return VG_OK;
}
