/*
 * npz.c - NumPy .npz archives (numpy.savez / savez_compressed; numpy.load of a .npz),
 * vigil/npy.h. An .npz is a ZIP archive whose members are .npy files named
 * "<key>.npy", stored or deflated. The ZIP container is read and written by libzip
 * (Debian's libzip-dev, BSD-3-Clause): ZIP's central directory, ZIP64 and data
 * descriptors are its job; each member's bytes go through vg_npy_parse.
 *
 * Untrusted archives: a member's size comes from the central directory and is checked
 * against the decode limit (max_record_bytes, vg_set_decode_limits) before anything is
 * allocated; libzip checks each member's CRC when it is read to the end, and a member
 * that inflates to other than its recorded size is DATA_LOSS.
 */
#include "io/io.h"
#include "vigil/npy.h"
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <zip.h>

struct vg_npz {
    zip_t *za;
    uint8_t *bytes; /* the archive's bytes (vg_npz_parse / vg_npz_open keep a copy) */
    char *name;     /* for messages */
    int n;
    char **keys; /* member names without ".npy", in the archive's order */
    int64_t *index;
};

static vg_npz *npz_fail(vg_npz *z) {
    vg_npz_close(z);
    return NULL;
}

/* The archive in bytes[0..len), taken over by z (freed by vg_npz_close). */
static vg_npz *npz_from(uint8_t *bytes, size_t len, const char *name, vg_status *st) {
    vg_npz *z = vg__calloc(1, sizeof *z);
    if (!z || !(z->name = vg__strdup(name ? name : "npz"))) {
        vg__free(bytes);
        vg__free(z);
        VG_OOM(st, "npz archive");
        return NULL;
    }
    z->bytes = bytes;
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(bytes, len, 0, &ze);
    if (!src) {
        zip_error_fini(&ze);
        VG_OOM(st, "npz archive");
        return npz_fail(z);
    }
    z->za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &ze);
    if (!z->za) {
        zip_source_free(src);
        vg_status_set(st, VG_DATA_LOSS, "%s: not a readable .npz (ZIP) archive: %s", z->name, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return npz_fail(z);
    }
    zip_error_fini(&ze);
    zip_int64_t n = zip_get_num_entries(z->za, 0);
    if (n < 0 || n > INT_MAX / 2) {
        vg_status_set(st, VG_DATA_LOSS, "%s: bad .npz member count", z->name);
        return npz_fail(z);
    }
    z->keys = vg__calloc((size_t)n + 1, sizeof *z->keys);
    z->index = vg__calloc((size_t)n + 1, sizeof *z->index);
    if (!z->keys || !z->index) {
        VG_OOM(st, "npz archive");
        return npz_fail(z);
    }
    for (zip_int64_t i = 0; i < n; i++) {
        const char *mn = zip_get_name(z->za, (zip_uint64_t)i, ZIP_FL_ENC_RAW);
        if (!mn) continue;
        size_t ml = strlen(mn);
        if (ml < 5 || strcmp(mn + ml - 4, ".npy") != 0) continue; /* numpy.load also ignores them */
        char *k = vg__malloc(ml - 3);
        if (!k) {
            VG_OOM(st, "npz archive");
            return npz_fail(z);
        }
        memcpy(k, mn, ml - 4);
        k[ml - 4] = 0;
        z->keys[z->n] = k;
        z->index[z->n++] = i;
    }
    return z;
}

vg_npz *vg_npz_parse(const void *bytes, size_t len, const char *name, vg_status *st) {
    if (!bytes && len) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "vg_npz_parse: NULL bytes");
        return NULL;
    }
    uint8_t *copy = vg__malloc(len ? len : 1);
    if (!copy) {
        VG_OOM(st, "npz archive");
        return NULL;
    }
    if (len) memcpy(copy, bytes, len);
    return npz_from(copy, len, name, st);
}

vg_npz *vg_npz_open(const char *path, vg_status *st) {
    uint8_t *data;
    size_t len;
    if (vg__io_read_path("vg_npz_open", path, &data, &len, st)) return NULL;
    return npz_from(data, len, path, st);
}

int vg_npz_count(const vg_npz *z) { return z ? z->n : 0; }

const char *vg_npz_key(const vg_npz *z, int i) { return z && i >= 0 && i < z->n ? z->keys[i] : NULL; }

vg_tensor *vg_npz_get(vg_npz *z, const char *key, vg_status *st) {
    if (!z || !key) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "vg_npz_get: %s is NULL", z ? "key" : "the archive");
        return NULL;
    }
    int k = -1;
    for (int i = 0; i < z->n && k < 0; i++)
        if (strcmp(z->keys[i], key) == 0) k = i;
    if (k < 0) {
        vg_status_set(st, VG_NOT_FOUND, "%s: no array '%s' in the archive (%d arrays)", z->name, key, z->n);
        return NULL;
    }
    zip_stat_t zs;
    zip_stat_init(&zs);
    if (zip_stat_index(z->za, (zip_uint64_t)z->index[k], 0, &zs) != 0 || !(zs.valid & ZIP_STAT_SIZE)) {
        vg_status_set(st, VG_DATA_LOSS, "%s: member %s.npy: %s", z->name, key, zip_strerror(z->za));
        return NULL;
    }
    int64_t lim = vg__io_max_record_bytes();
    if (zs.size > (zip_uint64_t)lim) {
        vg_status_set(st, VG_RESOURCE_EXHAUSTED,
                      "%s: member %s.npy claims %llu bytes, over the limit of %lld bytes (max_record_bytes, "
                      "vg_set_decode_limits)",
                      z->name, key, (unsigned long long)zs.size, (long long)lim);
        return NULL;
    }
    size_t size = (size_t)zs.size;
    uint8_t *buf = vg__malloc(size + 1);
    if (!buf) {
        VG_OOM(st, "npz member");
        return NULL;
    }
    zip_file_t *f = zip_fopen_index(z->za, (zip_uint64_t)z->index[k], 0);
    if (!f) {
        vg_status_set(st, VG_DATA_LOSS, "%s: member %s.npy cannot be opened: %s", z->name, key, zip_strerror(z->za));
        vg__free(buf);
        return NULL;
    }
    /* read to the end (and one byte past it) so that libzip checks the CRC and a member
     * that inflates to more than its recorded size is caught */
    size_t got = 0;
    for (;;) {
        zip_int64_t r = zip_fread(f, buf + got, size + 1 - got);
        if (r < 0) {
            vg_status_set(st, VG_DATA_LOSS, "%s: member %s.npy is corrupt: %s", z->name, key,
                          zip_error_strerror(zip_file_get_error(f)));
            zip_fclose(f);
            vg__free(buf);
            return NULL;
        }
        if (r == 0) break;
        got += (size_t)r;
        if (got > size) break;
    }
    zip_fclose(f);
    if (got != size) {
        vg_status_set(st, VG_DATA_LOSS, "%s: member %s.npy holds %s bytes than its recorded %zu", z->name, key,
                      got > size ? "more" : "fewer", size);
        vg__free(buf);
        return NULL;
    }
    char what[512];
    snprintf(what, sizeof what, "%s: %s.npy", z->name, key);
    vg_tensor *t = vg_npy_parse(buf, size, what, st);
    vg__free(buf);
    return t;
}

void vg_npz_close(vg_npz *z) {
    if (!z) return;
    if (z->za) zip_discard(z->za);
    for (int i = 0; i < z->n; i++) vg__free(z->keys[i]);
    vg__free(z->keys);
    vg__free(z->index);
    vg__free(z->bytes);
    vg__free(z->name);
    vg__free(z);
}

vg_code vg_npz_write(const char *path, const char *const *keys, const vg_tensor *const *tensors, int n,
                     bool compressed, vg_status *st) {
    if (!path || (n > 0 && (!keys || !tensors)) || n < 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_npz_write: NULL or negative argument");
    for (int i = 0; i < n; i++)
        if (!keys[i] || !*keys[i] || !tensors[i])
            return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_npz_write: array %d has no %s", i,
                                 tensors[i] ? "key" : "tensor");
    int zerr = 0;
    zip_t *za = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &zerr);
    if (!za) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, zerr);
        vg_code c = zerr == ZIP_ER_OPEN ? VG_NOT_FOUND : VG_UNKNOWN;
        vg_status_set(st, c, "%s: cannot create the .npz: %s", path, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return c;
    }
    /* libzip reads the sources at zip_close: the serialized arrays live until then */
    void **bufs = vg__calloc((size_t)n + 1, sizeof *bufs);
    if (!bufs) {
        zip_discard(za);
        return VG_OOM(st, "npz writer");
    }
    vg_code rc = VG_OK;
    char member[1024];
    for (int i = 0; i < n && rc == VG_OK; i++) {
        size_t len = 0;
        if ((rc = vg_npy_serialize(tensors[i], &bufs[i], &len, st)) != VG_OK) break;
        snprintf(member, sizeof member, "%s.npy", keys[i]);
        zip_source_t *s = zip_source_buffer(za, bufs[i], len, 0);
        zip_int64_t idx = s ? zip_file_add(za, member, s, ZIP_FL_OVERWRITE | ZIP_FL_ENC_UTF_8) : -1;
        if (idx < 0) {
            if (s) zip_source_free(s);
            rc = vg_status_set(st, VG_UNKNOWN, "%s: adding %s: %s", path, member, zip_strerror(za));
            break;
        }
        zip_set_file_compression(za, (zip_uint64_t)idx, compressed ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
    }
    if (rc == VG_OK) {
        if (zip_close(za) != 0) {
            rc = vg_status_set(st, errno == ENOSPC ? VG_RESOURCE_EXHAUSTED : VG_UNKNOWN, "%s: writing the .npz: %s",
                               path, zip_strerror(za));
            zip_discard(za);
        }
    } else {
        zip_discard(za);
    }
    for (int i = 0; i < n; i++) vg_free(bufs[i]);
    vg__free(bufs);
    return rc;
}
