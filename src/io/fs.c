/*
 * fs.c - POSIX file helpers for the io module: TF's errno -> status mapping, mkdir -p,
 * whole-file reads, temp files named "<final>.tempstate<hex>", write loops, fsync of
 * files and directories, and atomic whole-file replacement.
 */
#include "io/io.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

size_t vg__io_dtype_size(int dtype) {
    switch (dtype) {
    case 1: case 3: case 13: case 22: return 4;      /* float, int32, qint32, uint32 */
    case 2: case 9: case 23: case 8: return 8;       /* double, int64, uint64, complex64 */
    case 4: case 6: case 10: case 11: case 12: return 1; /* uint8, int8, bool, qint8, quint8 */
    case 5: case 14: case 15: case 16: case 17: case 19: return 2; /* int16, bf16, qint16, quint16, uint16, half */
    case 18: return 16;                               /* complex128 */
    default: return 0;
    }
}

vg_code vg__io_errno_code(int err) {
    switch (err) {
    case 0: return VG_OK;
    case EINVAL: case ENAMETOOLONG: case E2BIG: case EFAULT: case EILSEQ: case ENOTTY: case ESPIPE:
        return VG_INVALID_ARGUMENT;
    case ETIMEDOUT: return VG_DEADLINE_EXCEEDED;
    case ENODEV: case ENOENT: case ENXIO: case ESRCH: return VG_NOT_FOUND;
    case EEXIST: return VG_ALREADY_EXISTS;
    case EPERM: case EACCES: case EROFS: return VG_PERMISSION_DENIED;
    case ENOTEMPTY: case EISDIR: case ENOTDIR: case EBADF: case EBUSY: case EPIPE: case ETXTBSY:
        return VG_FAILED_PRECONDITION;
    /* TF maps EFBIG (file size limit) to OUT_OF_RANGE, which vigil's training loop reads
     * as "input exhausted, stop cleanly": a failed save must not look like that. */
    case ENOSPC: case EDQUOT: case EMFILE: case EMLINK: case ENFILE: case ENOBUFS: case ENOMEM: case EFBIG:
        return VG_RESOURCE_EXHAUSTED;
    case ENOSYS: case ENOTSUP: case EXDEV: return VG_UNIMPLEMENTED;
    case EAGAIN: case EINTR: return VG_UNAVAILABLE;
    case EDEADLK: case ESTALE: return VG_ABORTED;
    case ECANCELED: return VG_CANCELLED;
    default: return VG_UNKNOWN; /* EIO and the rest */
    }
}

bool vg__io_grow(void **arr, size_t *cap, size_t need, size_t first, size_t elem) {
    if (need <= *cap) return true;
    size_t nc = *cap ? *cap * 2 : first;
    while (nc < need) nc *= 2;
    void *n = vg__realloc(*arr, *cap * elem, nc * elem);
    if (!n) return false;
    *arr = n;
    *cap = nc;
    return true;
}

vg_code vg__io_errno_status(vg_status *st, int err, const char *what, const char *path) {
    return vg_status_set(st, vg__io_errno_code(err), "%s %s: %s", what, path, strerror(err));
}

vg_code vg__io_mkdirs(const char *dir, vg_status *st) {
    struct stat sb;
    if (!dir || !*dir || stat(dir, &sb) == 0) return VG_OK;
    char *p = vg__strdup(dir);
    if (!p) return VG_OOM(st, "path");
    vg_code c = VG_OK;
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s) continue;
        char save = *s;
        *s = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            c = vg__io_errno_status(st, errno, "cannot create directory", p);
            break;
        }
        *s = save;
        if (!save) break;
    }
    vg__free(p);
    if (c == VG_OK && (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)))
        c = vg_status_set(st, VG_FAILED_PRECONDITION, "%s is not a directory", dir);
    return c;
}

static vg_code read_fd(int fd, const char *path, uint8_t **data, size_t *len, vg_status *st) {
    struct stat sb;
    if (fstat(fd, &sb) != 0) return vg__io_errno_status(st, errno, "cannot stat", path);
    size_t cap = (size_t)sb.st_size + 1, n = 0;
    uint8_t *buf = vg__malloc(cap);
    if (!buf) return VG_OOM(st, path);
    for (;;) {
        if (n + 1 >= cap) { /* the file grew: make room */
            uint8_t *nb = vg__realloc(buf, n, cap * 2);
            if (!nb) { vg__free(buf); return VG_OOM(st, path); }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            vg__free(buf);
            return vg__io_errno_status(st, e, "cannot read", path);
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    buf[n] = 0;
    *data = buf;
    *len = n;
    return VG_OK;
}

int vg__io_open_regular(const char *path, vg_status *st) {
    /* O_NONBLOCK: opening a FIFO for reading must not wait for a writer */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        vg__io_errno_status(st, errno, "cannot open", path);
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        vg__io_errno_status(st, errno, "cannot stat", path);
        close(fd);
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        vg_status_set(st, VG_FAILED_PRECONDITION, "%s is not a regular file (%s)", path,
                      S_ISDIR(sb.st_mode) ? "a directory" : S_ISFIFO(sb.st_mode) ? "a FIFO"
                      : S_ISCHR(sb.st_mode) ? "a character device" : S_ISBLK(sb.st_mode) ? "a block device"
                      : S_ISSOCK(sb.st_mode) ? "a socket" : "a special file");
        close(fd);
        return -1;
    }
    /* back to blocking reads for a regular file (no effect on them, but be plain) */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

vg_code vg__io_read_file(const char *path, uint8_t **data, size_t *len, vg_status *st) {
    *data = NULL;
    *len = 0;
    vg_status tmp;
    if (!st) st = &tmp;
    int fd = vg__io_open_regular(path, st);
    if (fd < 0) return st->code;
    vg_code c = read_fd(fd, path, data, len, st);
    close(fd);
    return c;
}

vg_code vg__io_read_path(const char *fn, const char *path, uint8_t **data, size_t *len, vg_status *st) {
    if (!path) {
        *data = NULL;
        *len = 0;
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: NULL path", fn);
    }
    return vg__io_read_file(path, data, len, st);
}

FILE *vg__io_fopen_regular(const char *path, vg_status *st) {
    vg_status tmp;
    if (!st) st = &tmp;
    if (!path) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "NULL path");
        return NULL;
    }
    int fd = vg__io_open_regular(path, st);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        vg__io_errno_status(st, errno, "cannot open", path);
        close(fd);
    }
    return f;
}

/* ---- decode limits (vg_set_decode_limits, vigil/data.h; set in src/kernels) ---- */

static int64_t g_max_image_pixels = VG__DEFAULT_MAX_IMAGE_PIXELS;
static int64_t g_max_png_chunk_bytes = VG__DEFAULT_MAX_PNG_CHUNK_BYTES;
static int64_t g_max_record_bytes = VG__DEFAULT_MAX_RECORD_BYTES;

int64_t vg__io_max_image_pixels(void) { return __atomic_load_n(&g_max_image_pixels, __ATOMIC_RELAXED); }
int64_t vg__io_max_png_chunk_bytes(void) { return __atomic_load_n(&g_max_png_chunk_bytes, __ATOMIC_RELAXED); }
int64_t vg__io_max_record_bytes(void) { return __atomic_load_n(&g_max_record_bytes, __ATOMIC_RELAXED); }

void vg__io_set_decode_limits(int64_t max_image_pixels, int64_t max_png_chunk_bytes, int64_t max_record_bytes) {
    __atomic_store_n(&g_max_image_pixels, max_image_pixels > 0 ? max_image_pixels : VG__DEFAULT_MAX_IMAGE_PIXELS,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&g_max_png_chunk_bytes,
                     max_png_chunk_bytes > 0 ? max_png_chunk_bytes : VG__DEFAULT_MAX_PNG_CHUNK_BYTES, __ATOMIC_RELAXED);
    __atomic_store_n(&g_max_record_bytes, max_record_bytes > 0 ? max_record_bytes : VG__DEFAULT_MAX_RECORD_BYTES,
                     __ATOMIC_RELAXED);
}

static uint64_t random_u64(void) {
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) {
        static unsigned counter;
        v = (uint64_t)vg__now_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) * 0x9e3779b97f4a7c15ull;
    }
    return v;
}

vg_code vg__io_temp_create(const char *final_path, char **tmp_path, int *fd, vg_status *st) {
    size_t n = strlen(final_path) + 32;
    char *tmp = vg__malloc(n);
    if (!tmp) return VG_OOM(st, "temp path");
    for (int tries = 0; tries < 100; tries++) {
        snprintf(tmp, n, "%s.tempstate%016llx", final_path, (unsigned long long)random_u64());
        int f = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (f >= 0) {
            *tmp_path = tmp;
            *fd = f;
            return VG_OK;
        }
        if (errno != EEXIST) {
            vg_code c = vg__io_errno_status(st, errno, "cannot create", tmp);
            vg__free(tmp);
            return c;
        }
    }
    vg__free(tmp);
    return vg_status_set(st, VG_ALREADY_EXISTS, "cannot pick a temp name for %s", final_path);
}

vg_code vg__io_write_all(int fd, const void *p, size_t n, const char *path, vg_status *st) {
    const uint8_t *b = p;
    while (n) {
        size_t chunk = n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n;
        ssize_t w = write(fd, b, chunk);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return vg__io_errno_status(st, errno, "cannot write", path);
        if (w == 0) return vg__io_errno_status(st, ENOSPC, "cannot write", path);
        b += w;
        n -= (size_t)w;
    }
    return VG_OK;
}

vg_code vg__io_fsync_close(int fd, const char *path, vg_status *st) {
    vg_code c = VG_OK;
    if (fsync(fd) != 0) c = vg__io_errno_status(st, errno, "cannot fsync", path);
    if (close(fd) != 0 && c == VG_OK) c = vg__io_errno_status(st, errno, "cannot close", path);
    return c;
}

vg_code vg__io_rename(const char *from, const char *to, vg_status *st) {
    if (rename(from, to) != 0) {
        int e = errno;
        return vg_status_set(st, vg__io_errno_code(e), "cannot rename %s to %s: %s", from, to, strerror(e));
    }
    return VG_OK;
}

vg_code vg__io_fsync_parent_dir(const char *file_path, vg_status *st) {
    const char *slash = strrchr(file_path, '/');
    char *dir = slash ? vg__strndup(file_path, slash == file_path ? 1 : (size_t)(slash - file_path))
                      : vg__strdup(".");
    if (!dir) return VG_OOM(st, "path");
    vg_code c = VG_OK;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) c = vg__io_errno_status(st, errno, "cannot open directory", dir);
    else {
        /* Some filesystems refuse fsync on directories (EINVAL): not an error. */
        if (fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
            c = vg__io_errno_status(st, errno, "cannot fsync directory", dir);
        close(fd);
    }
    vg__free(dir);
    return c;
}

static vg_code write_file_atomic(const char *path, const void *data, size_t len, bool dirsync, vg_status *st) {
    char *tmp = NULL;
    int fd = -1;
    vg_code c = vg__io_temp_create(path, &tmp, &fd, st);
    if (c) return c;
    c = vg__io_write_all(fd, data, len, tmp, st);
    if (c) close(fd);
    else c = vg__io_fsync_close(fd, tmp, st);
    if (!c) c = vg__io_rename(tmp, path, st);
    if (c) unlink(tmp);
    else if (dirsync) c = vg__io_fsync_parent_dir(path, st);
    vg__free(tmp);
    return c;
}

vg_code vg__io_write_file_atomic(const char *path, const void *data, size_t len, vg_status *st) {
    return write_file_atomic(path, data, len, true, st);
}

vg_code vg__io_write_file_atomic_nodirsync(const char *path, const void *data, size_t len, vg_status *st) {
    return write_file_atomic(path, data, len, false, st);
}
