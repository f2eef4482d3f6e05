/*
 * io_ops.c - the checkpoint ops of TF's io_ops: SaveV2 and RestoreV2 (V2 tensor
 * bundles, one shard; docs/formats.md §2).
 *
 * SaveV2(prefix, tensor_names, shape_and_slices, tensors...) streams each tensor
 * straight from its buffer (for variables: the variable's current value, which the
 * executor hands over by reference) into the bundle writer, which writes under temp
 * names, fsyncs and renames (crash-safe; see io/bundle_writer.c).
 *
 * RestoreV2(prefix, tensor_names, shape_and_slices) -> tensors reads every tensor
 * before it sets any output, checking each stored dtype against attr "dtypes"; any
 * failure (missing key, dtype mismatch, CRC mismatch, truncation) fails the op, so the
 * Assign ops that consume its outputs never run: a failed restore changes nothing.
 * Numeric tensors of 256 KiB and more are read in chunks of up to 8 MiB by the
 * intra-op threads (pread straight into the output, so page faults, copies and CRCs run
 * in parallel; the per-chunk CRC-32Cs are combined and checked per tensor); small and
 * string tensors go through the io layer's bundle reader.
 *
 * Partitioned variables (non-empty shape_and_slices) are not supported.
 */
#include "graph/graph_impl.h"
#include "kernels/kernel.h"
#include "io/io.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__linux__) && !defined(MADV_POPULATE_WRITE)
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels answer EINVAL (ignored) */
#endif

/* TF's DataTypeString for the numbers a checkpoint may hold. */
static const char *tf_dtype_name(int dt) {
    static const char *const names[] = {"invalid", "float", "double", "int32", "uint8", "int16", "int8",
                                        "string", "complex64", "int64", "bool", "qint8", "quint8", "qint32",
                                        "bfloat16", "qint16", "quint16", "uint16", "complex128", "half",
                                        "resource", "variant", "uint32", "uint64"};
    return dt >= 0 && dt < (int)(sizeof names / sizeof *names) ? names[dt] : "unknown";
}

/* ------------------------------------------------------------------------ */
/* shared checks */

/* Inputs 0..2 are string tensors: prefix (scalar), tensor_names and shape_and_slices
 * (vectors). */
static vg_code shape_fixed_inputs(vg_op *op, vg_status *st) {
    static const char *const names[] = {"prefix", "tensor_names", "shape_and_slices"};
    for (int i = 0; i < 3; i++) {
        vg_dtype dt = vg__op_input_dtype(op, i);
        if (dt != VG_STRING)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Input '%s' of '%s' Op has type %s that does not match "
                                 "expected type of string.", names[i], vg_op_type(op), vg_dtype_name(dt));
        vg_shape s = vg__op_input_shape(op, i);
        int want = i == 0 ? 0 : 1;
        if (s.ndims >= 0 && s.ndims != want)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Shape must be rank %d but is rank %d for input '%s' of %s",
                                 want, s.ndims, names[i], vg_op_type(op));
    }
    return VG_OK;
}

/* A copy of string element i (NUL-terminated); NULL on allocation failure. */
static char *string_elem(const vg_tensor *t, int64_t i) {
    size_t n = 0;
    const char *s = vg_tensor_string(t, i, &n);
    return vg__strndup(s ? s : "", s ? n : 0);
}

/* Runtime checks shared by both kernels: a one-element prefix, two string vectors
 * of n elements, empty slice specs. *prefix is new (vg__free). */
static vg_code check_run_inputs(vg__kctx *ctx, int64_t n, char **prefix) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *p = vg__kctx_input(ctx, 0), *names = vg__kctx_input(ctx, 1), *slices = vg__kctx_input(ctx, 2);
    *prefix = NULL;
    if (vg_tensor_num_elements(p) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Input prefix should have a single element, got %lld instead.",
                             (long long)vg_tensor_num_elements(p));
    if (vg_tensor_ndims(names) != 1 || vg_tensor_ndims(slices) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Input tensor_names and shape_and_slices should be an 1-D tensors, got rank %d and %d",
                             vg_tensor_ndims(names), vg_tensor_ndims(slices));
    if (vg_tensor_num_elements(names) != vg_tensor_num_elements(slices))
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "tensor_names and shape_and_slices have different number of elements: %lld vs. %lld",
                             (long long)vg_tensor_num_elements(names), (long long)vg_tensor_num_elements(slices));
    if (vg_tensor_num_elements(names) != n)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Got %lld tensor names but %lld tensors.",
                             (long long)vg_tensor_num_elements(names), (long long)n);
    for (int64_t i = 0; i < n; i++) {
        size_t len = 0;
        vg_tensor_string(slices, i, &len);
        if (len)
            return vg_status_set(st, VG_UNIMPLEMENTED,
                                 "partitioned variables are not supported (shape_and_slices[%lld] is not empty)",
                                 (long long)i);
    }
    if (!(*prefix = string_elem(p, 0))) return VG_OOM(st, "checkpoint prefix");
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* SaveV2 */

static vg_code shape_save_v2(vg_op *op, vg_status *st) {
    vg_code c = shape_fixed_inputs(op, st);
    if (c) return c;
    int n = vg_op_num_inputs(op) - 3;
    vg__attr *a = vg__op_find_attr(op, "dtypes");
    if (a && (a->type != VG_ATTR_TYPE_LIST || a->u.list.n != n))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "SaveV2: attr 'dtypes' must list the %d tensors' types", n);
    vg_dtype local[64], *dts = n <= 64 ? local : vg__malloc((size_t)n * sizeof *dts);
    if (!dts) return VG_OOM(st, "SaveV2 dtypes");
    for (int i = 0; i < n; i++) {
        dts[i] = vg__op_input_dtype(op, 3 + i);
        if (a && ((const vg_dtype *)a->u.list.p)[i] != dts[i]) {
            c = vg_status_set(st, VG_INVALID_ARGUMENT, "SaveV2: tensor %d has type %s but attr 'dtypes' says %s", i,
                              vg_dtype_name(dts[i]), vg_dtype_name(((const vg_dtype *)a->u.list.p)[i]));
            break;
        }
        if (dts[i] == VG_RESOURCE || (vg_dtype_size(dts[i]) == 0 && dts[i] != VG_STRING)) {
            c = vg_status_set(st, VG_INVALID_ARGUMENT, "SaveV2: cannot save a tensor of type %s",
                              vg_dtype_name(dts[i]));
            break;
        }
    }
    if (!c && !a) {
        vg__attr na = {.name = "dtypes", .type = VG_ATTR_TYPE_LIST, .u.list = {dts, n}};
        if (!vg__op_put_attr(op, &na)) c = VG_OOM(st, "SaveV2 dtypes");
    }
    if (dts != local) vg__free(dts);
    if (!c) vg__op_set_num_outputs(op, 0);
    return c;
}

/* Adds one tensor to the bundle: numeric bytes straight from t's buffer. */
static vg_code save_one(vg__bundle_writer *w, const char *name, const vg_tensor *t, vg_status *st) {
    vg_dtype dt = vg_tensor_dtype(t);
    const int64_t *dims = vg_tensor_dims(t);
    int nd = vg_tensor_ndims(t);
    if (dt != VG_STRING) return vg__bundle_writer_add(w, name, (int)dt, dims, nd, vg_tensor_data(t), vg_tensor_nbytes(t), st);
    int64_t n = vg_tensor_num_elements(t);
    const char **strs = vg__malloc((size_t)(n ? n : 1) * sizeof *strs);
    size_t *lens = vg__malloc((size_t)(n ? n : 1) * sizeof *lens);
    vg_code c = VG_OK;
    if (!strs || !lens) c = VG_OOM(st, "SaveV2 strings");
    for (int64_t i = 0; !c && i < n; i++) {
        strs[i] = vg_tensor_string(t, i, &lens[i]);
        if (!strs[i]) strs[i] = "";
    }
    if (!c) c = vg__bundle_writer_add_strings(w, name, dims, nd, strs, lens, n, st);
    vg__free(strs);
    vg__free(lens);
    return c;
}

static vg_code kernel_save_v2(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    int n = vg__kctx_num_inputs(ctx) - 3;
    char *prefix = NULL;
    vg_code c = check_run_inputs(ctx, n, &prefix);
    if (c) return c;
    const vg_tensor *names = vg__kctx_input(ctx, 1);
    vg__bundle_writer *w = vg__bundle_writer_new(prefix, st);
    if (!w) c = st->code ? st->code : VG_UNKNOWN;
    for (int i = 0; !c && i < n; i++) {
        const vg_tensor *t = vg__kctx_input(ctx, 3 + i);
        char *name = string_elem(names, i);
        if (!name) c = VG_OOM(st, "tensor name");
        else if (!t) c = vg_status_set(st, VG_FAILED_PRECONDITION, "Attempting to save uninitialized value %s", name);
        else c = save_one(w, name, t, st);
        vg__free(name);
    }
    if (!c) c = vg__bundle_writer_finish(w, st);
    vg__bundle_writer_free(w); /* removes the temp files when not finished */
    vg__free(prefix);
    return c;
}

/* ------------------------------------------------------------------------ */
/* RestoreV2 */

static vg_code shape_restore_v2(vg_op *op, vg_status *st) {
    vg_code c = shape_fixed_inputs(op, st);
    if (c) return c;
    const vg_dtype *dts;
    int n;
    if (!vg_op_attr_type_list(op, "dtypes", &dts, &n) || n < 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "RestoreV2 needs a non-empty 'dtypes' attr");
    for (int i = 0; i < n; i++)
        if (dts[i] == VG_RESOURCE || (vg_dtype_size(dts[i]) == 0 && dts[i] != VG_STRING))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "RestoreV2: cannot restore a tensor of type %s",
                                 vg_dtype_name(dts[i]));
    vg_shape s = vg__op_input_shape(op, 1);
    if (s.ndims == 1 && s.dims[0] >= 0 && s.dims[0] != n)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "RestoreV2: %lld tensor names but %d dtypes",
                             (long long)s.dims[0], n);
    vg__op_set_num_outputs(op, n);
    for (int i = 0; i < n; i++) vg__op_set_output(op, i, dts[i], vg_shape_unknown());
    return VG_OK;
}

/* ---- CRC-32C combination (zlib's crc32_combine with the Castagnoli polynomial) ---- */

static uint32_t gf2_times(const uint32_t *mat, uint32_t vec) {
    uint32_t sum = 0;
    for (; vec; vec >>= 1, mat++)
        if (vec & 1) sum ^= *mat;
    return sum;
}

static void gf2_square(uint32_t *sq, const uint32_t *mat) {
    for (int n = 0; n < 32; n++) sq[n] = gf2_times(mat, mat[n]);
}

/* CRC-32C of A||B from crc(A), crc(B) and len(B). */
static uint32_t crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2) {
    uint32_t even[32], odd[32];
    if (!len2) return crc1;
    odd[0] = 0x82f63b78u; /* the operator for one zero bit */
    for (int n = 1; n < 32; n++) odd[n] = 1u << (n - 1);
    gf2_square(even, odd); /* two zero bits */
    gf2_square(odd, even); /* four */
    do {
        gf2_square(even, odd); /* first pass: one zero byte */
        if (len2 & 1) crc1 = gf2_times(even, crc1);
        len2 >>= 1;
        if (!len2) break;
        gf2_square(odd, even);
        if (len2 & 1) crc1 = gf2_times(odd, crc1);
        len2 >>= 1;
    } while (len2);
    return crc1 ^ crc2;
}

/* CRC-32C of a big buffer as three interleaved streams (the crc32 instruction has a
 * latency of 3 cycles and a throughput of 1, so one stream runs at a third of the
 * possible speed), combined afterwards. Local helper: io's vg__crc32c is one stream. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>
__attribute__((target("sse4.2"))) static uint32_t crc32c_3way(const uint8_t *p, size_t n) {
    size_t lane = n / 24 * 8;
    const uint8_t *p1 = p + lane, *p2 = p + 2 * lane;
    uint64_t c0 = 0xffffffffu, c1 = 0xffffffffu, c2 = 0xffffffffu;
    for (size_t i = 0; i < lane; i += 8) {
        uint64_t a, b, c;
        memcpy(&a, p + i, 8);
        memcpy(&b, p1 + i, 8);
        memcpy(&c, p2 + i, 8);
        c0 = _mm_crc32_u64(c0, a);
        c1 = _mm_crc32_u64(c1, b);
        c2 = _mm_crc32_u64(c2, c);
    }
    uint32_t crc = crc32c_combine(~(uint32_t)c0, ~(uint32_t)c1, lane);
    crc = crc32c_combine(crc, ~(uint32_t)c2, lane);
    return vg__crc32c_extend(crc, p + 3 * lane, n - 3 * lane);
}

static uint32_t fast_crc32c(const void *p, size_t n) {
    return n >= 4096 && __builtin_cpu_supports("sse4.2") ? crc32c_3way(p, n) : vg__crc32c(p, n);
}
#else
static uint32_t fast_crc32c(const void *p, size_t n) { return vg__crc32c(p, n); }
#endif

/* ---- bundle layout (local helper: the io reader does not expose the header) ---- */

/* num_shards and endianness from the BundleHeaderProto under key "". */
static vg_code bundle_layout(const char *prefix, int *num_shards, bool *big_endian, vg_status *st) {
    size_t n = strlen(prefix);
    char *path = vg__malloc(n + 7);
    if (!path) return VG_OOM(st, "path");
    memcpy(path, prefix, n);
    memcpy(path + n, ".index", 7);
    vg__sstable *t = vg__sstable_open(path, st);
    vg__free(path);
    if (!t) return st->code ? st->code : VG_DATA_LOSS;
    const uint8_t *val;
    size_t vlen;
    vg_code c = vg__sstable_get(t, "", 0, &val, &vlen, st);
    *num_shards = 0;
    *big_endian = false;
    if (!c) {
        vg__pb_reader r;
        vg__pb_field f;
        vg__pb_reader_init(&r, val, vlen);
        while (vg__pb_next(&r, &f, NULL) == VG_OK) {
            if (f.number == 1 && f.wiretype == VG__PB_VARINT) *num_shards = (int)f.u;
            if (f.number == 2 && f.wiretype == VG__PB_VARINT) *big_endian = f.u != 0;
        }
    }
    vg__sstable_free(t);
    return c;
}

/* ---- reading ---- */

#define CHUNK ((size_t)8 << 20)   /* bytes per parallel read task */
#define BIG ((size_t)256 << 10)   /* numeric tensors from this size are read as tasks */

/* One tensor to read: its name, the output already allocated, its index entry. */
typedef struct restore_item {
    char *name;
    vg_tensor *out;
    const vg__bundle_entry *e;
    bool chunked;
    int first_task, ntasks;
} restore_item;

/* A chunk of a big tensor: item, byte range, CRC of those bytes once read. */
typedef struct restore_task {
    int item;
    size_t off, len;
    uint32_t crc;
} restore_task;

typedef struct restore_job {
    const char *prefix;
    restore_item *items;
    restore_task *tasks;
    int ntasks;
    int *fds;                /* per shard */
    _Atomic int next;
    _Atomic bool failed;
    pthread_mutex_t mu;
    vg_status err;           /* first failure */
} restore_job;

static void job_fail(restore_job *job, const vg_status *st) {
    pthread_mutex_lock(&job->mu);
    if (!job->err.code) job->err = *st;
    pthread_mutex_unlock(&job->mu);
    job->failed = true;
}

/* Maps the pages of a fresh output buffer in one call (MADV_POPULATE_WRITE): about
 * twice as cheap as taking one page fault per page inside pread. Best effort. */
static void populate(void *p, size_t n) {
#ifdef MADV_POPULATE_WRITE
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) return;
    uintptr_t a = ((uintptr_t)p + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    uintptr_t e = ((uintptr_t)p + n) & ~((uintptr_t)page - 1);
    if (e > a) (void)madvise((void *)a, e - a, MADV_POPULATE_WRITE);
#else
    (void)p;
    (void)n;
#endif
}

/* Reads one chunk with pread straight into the output and checksums it while the
 * bytes are in cache. */
static vg_code read_task(restore_job *job, restore_task *t, vg_status *st) {
    restore_item *it = &job->items[t->item];
    uint8_t *dst = (uint8_t *)vg_tensor_data(it->out) + t->off;
    int fd = job->fds[it->e->shard_id];
    size_t got = 0;
    populate(dst, t->len);
    while (got < t->len) {
        ssize_t k = pread(fd, dst + got, t->len - got, (off_t)(it->e->offset + t->off + got));
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return vg__io_errno_status(st, errno, "cannot read checkpoint data for", it->name);
        if (k == 0)
            return vg_status_set(st, VG_DATA_LOSS, "tensor %s: the data file of checkpoint %s is truncated",
                                 it->name, job->prefix);
        got += (size_t)k;
    }
    t->crc = fast_crc32c(dst, t->len);
    return VG_OK;
}

/* A worker: takes chunks in file order until none is left (or one failed). */
static void restore_worker(void *arg, int64_t begin, int64_t end) {
    restore_job *job = arg;
    vg_status st;
    vg_status_clear(&st);
    for (;;) {
        int k = job->next++;
        if (k >= job->ntasks || job->failed) break;
        if (read_task(job, &job->tasks[k], &st)) {
            job_fail(job, &st);
            break;
        }
    }
}

/* Small and string tensors through the reader (which checks their CRCs). */
static vg_code read_small(vg__bundle_reader *r, restore_item *it, vg_status *st) {
    vg_tensor *t = it->out;
    if (vg_tensor_dtype(t) != VG_STRING)
        return vg__bundle_reader_read(r, it->name, vg_tensor_data(t), vg_tensor_nbytes(t), st);
    char **strs;
    size_t *lens;
    int64_t n;
    vg_code c = vg__bundle_reader_read_strings(r, it->name, &strs, &lens, &n, st);
    if (c) return c;
    if (n != vg_tensor_num_elements(t))
        c = vg_status_set(st, VG_DATA_LOSS, "tensor %s: %lld strings for its shape", it->name, (long long)n);
    for (int64_t i = 0; !c && i < n; i++) c = vg_tensor_set_string(t, i, strs[i], lens[i], st);
    vg__bundle_strings_free(strs, lens, n);
    return c;
}

/* Looks up every name, checks the stored dtype against dtypes[i] and allocates the
 * output with the stored shape. */
static vg_code plan_restore(vg__kctx *ctx, vg__bundle_reader *r, const vg_dtype *dts, restore_item *items, int n) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *names = vg__kctx_input(ctx, 1);
    for (int i = 0; i < n; i++) {
        if (!(items[i].name = string_elem(names, i))) return VG_OOM(st, "tensor name");
        int dtype, nd;
        int64_t dims[VG__IO_MAX_DIMS];
        vg_code c = vg__bundle_reader_lookup(r, items[i].name, &dtype, dims, &nd, st);
        if (c) return c;
        if (dtype != (int)dts[i])
            return vg_status_set(st, VG_INVALID_ARGUMENT,
                                 "tensor_name = %s; expected dtype %s does not equal original dtype %s",
                                 items[i].name, tf_dtype_name((int)dts[i]), tf_dtype_name(dtype));
        if (nd > VG_MAX_DIMS)
            return vg_status_set(st, VG_UNIMPLEMENTED, "tensor %s has rank %d; vigil tensors have at most %d dims",
                                 items[i].name, nd, VG_MAX_DIMS);
        items[i].e = vg__bundle_reader_find(r, items[i].name);
        if (vg__kctx_alloc_output(ctx, i, dts[i], dims, nd, &items[i].out)) return st->code;
    }
    return VG_OK;
}

/* Chooses the chunked path for big numeric tensors of a little-endian bundle whose
 * size matches their shape (anything odd goes through the reader, which reports it). */
static int plan_chunks(restore_item *items, int n, bool big_endian, int num_shards) {
    int ntasks = 0;
    for (int i = 0; i < n; i++) {
        restore_item *it = &items[i];
        const vg__bundle_entry *e = it->e;
        size_t nb = vg_tensor_nbytes(it->out);
        it->chunked = !big_endian && vg_tensor_dtype(it->out) != VG_STRING && nb >= BIG && e && !e->sliced &&
                      e->nbytes == nb && e->shard_id >= 0 && e->shard_id < num_shards;
        if (!it->chunked) continue;
        it->first_task = ntasks;
        it->ntasks = (int)((nb + CHUNK - 1) / CHUNK);
        ntasks += it->ntasks;
    }
    return ntasks;
}

static vg_code open_shards(restore_job *job, int num_shards, vg_status *st) {
    for (int s = 0; s < num_shards; s++) job->fds[s] = -1;
    for (int i = 0; i < job->ntasks; i++) {
        int shard = job->items[job->tasks[i].item].e->shard_id;
        if (job->fds[shard] >= 0) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s.data-%05d-of-%05d", job->prefix, shard, num_shards);
        if ((job->fds[shard] = vg__io_open_regular(path, st)) < 0) /* no FIFO, no device */
            return st->code;
        posix_fadvise(job->fds[shard], 0, 0, POSIX_FADV_SEQUENTIAL);
    }
    return VG_OK;
}

/* Reads the chunks of the big tensors on the intra-op threads, then checks each
 * tensor's CRC (combined from its chunks' CRCs). */
static vg_code read_chunked(vg__kctx *ctx, restore_job *job, int num_shards) {
    vg_status *st = vg__kctx_status(ctx);
    for (int i = 0, k = 0; i < job->ntasks; i++) {
        while (!job->items[k].chunked || i >= job->items[k].first_task + job->items[k].ntasks) k++;
        restore_item *it = &job->items[k];
        size_t off = (size_t)(i - it->first_task) * CHUNK, nb = vg_tensor_nbytes(it->out);
        job->tasks[i] = (restore_task){k, off, nb - off < CHUNK ? nb - off : CHUNK, 0};
    }
    vg_code c = open_shards(job, num_shards, st);
    if (!c) {
        int workers = vg__kctx_num_threads(ctx);
        vg__kctx_parallel_for(ctx, workers < job->ntasks ? workers : job->ntasks, 1 << 30, restore_worker, job);
        if (job->failed) {
            vg_status_copy(st, &job->err);
            c = job->err.code;
        }
    }
    for (int i = 0; !c && i < job->ntasks;) {
        restore_item *it = &job->items[job->tasks[i].item];
        uint32_t crc = 0;
        for (int k = 0; k < it->ntasks; k++, i++) crc = crc32c_combine(crc, job->tasks[i].crc, job->tasks[i].len);
        if (vg__crc32c_mask(crc) != it->e->masked_crc)
            c = vg_status_set(st, VG_DATA_LOSS,
                              "Checksum does not match for tensor %s in checkpoint %s: stored %08x vs. calculated "
                              "on the restored bytes %08x",
                              it->name, job->prefix, it->e->masked_crc, vg__crc32c_mask(crc));
    }
    for (int s = 0; s < num_shards; s++)
        if (job->fds[s] >= 0) close(job->fds[s]);
    return c;
}

static vg_code kernel_restore_v2(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_dtype *dts;
    int n, num_shards = 0;
    bool big_endian = false;
    if (!vg_op_attr_type_list(vg__kctx_op(ctx), "dtypes", &dts, &n))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "RestoreV2 without 'dtypes'");
    char *prefix = NULL;
    vg_code c = check_run_inputs(ctx, n, &prefix);
    if (c) return c;
    restore_item *items = vg__calloc((size_t)n, sizeof *items);
    vg__bundle_reader *r = NULL;
    restore_job job = {prefix, items, NULL, 0, NULL, 0, false, PTHREAD_MUTEX_INITIALIZER, {VG_OK, ""}};
    if (!items) c = VG_OOM(st, "RestoreV2");
    if (!c && !(r = vg__bundle_reader_open(prefix, st))) c = st->code ? st->code : VG_NOT_FOUND;
    if (!c) c = plan_restore(ctx, r, dts, items, n);
    if (!c) c = bundle_layout(prefix, &num_shards, &big_endian, st);
    if (!c && (job.ntasks = plan_chunks(items, n, big_endian, num_shards)) > 0) {
        job.tasks = vg__calloc((size_t)job.ntasks, sizeof *job.tasks);
        job.fds = vg__calloc((size_t)num_shards, sizeof *job.fds);
        if (!job.tasks || !job.fds) c = VG_OOM(st, "RestoreV2");
        if (!c) c = read_chunked(ctx, &job, num_shards);
    }
    for (int i = 0; !c && i < n; i++)
        if (!items[i].chunked) c = read_small(r, &items[i], st);
    pthread_mutex_destroy(&job.mu);
    vg__free(job.tasks);
    vg__free(job.fds);
    vg__bundle_reader_free(r);
    for (int i = 0; items && i < n; i++) vg__free(items[i].name);
    vg__free(items);
    vg__free(prefix);
    return c; /* on failure the executor drops the outputs allocated above */
}

/* ------------------------------------------------------------------------ */

const vg__op_def vg__ops_io[] = {
    {"SaveV2", 4, -1, VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE, 0, shape_save_v2, kernel_save_v2, NULL},
    {"RestoreV2", 3, 3, VG__OP_STATEFUL | VG__OP_NOT_DIFFERENTIABLE, 0, shape_restore_v2, kernel_restore_v2, NULL},
    {0},
};
