/*
 * io.h - vigil's file formats (internal): CRC-32C, protobuf wire format, TFRecord
 * framing, Snappy, LevelDB-style SSTables, V2 checkpoint bundles, the `checkpoint`
 * state file, event files and summaries, and the IDX (MNIST) reader.
 *
 * Byte layouts follow docs/formats.md; the short version:
 *
 *   TFRecord record   fixed64 len | fixed32 mask(crc(len bytes)) | data | fixed32 mask(crc(data))
 *   SSTable (.index)  data blocks | metaindex block | index block | 48-byte footer
 *                     (block = entries + restart array; 5-byte trailer: type, masked crc;
 *                      footer = 2 block handles padded to 40 bytes + magic 0xdb4775248b80fb57)
 *   Bundle            P.index (SSTable: "" -> BundleHeaderProto, name -> BundleEntryProto)
 *                     P.data-00000-of-00001 (tensor bytes back to back, in add order)
 *   Event file        TFRecords holding serialized tensorflow.Event messages; the first
 *                     is {wall_time, file_version: "brain.Event:2"}.
 *
 * All functions that can fail take `vg_status *st` last (NULL allowed) and return their
 * vg_code. Objects here are not thread-safe: use one from one thread at a time.
 * All memory comes from the vg__ allocation hook, except what zlib (gzopen) and
 * libsnappy's compressor allocate internally.
 */
#ifndef VG_IO_H
#define VG_IO_H

#include "core/core.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* TensorFlow DataType numbers used here (same as the public tensor header). */
enum {
    VG__DT_FLOAT = 1, VG__DT_DOUBLE = 2, VG__DT_INT32 = 3, VG__DT_UINT8 = 4,
    VG__DT_INT16 = 5, VG__DT_INT8 = 6, VG__DT_STRING = 7, VG__DT_COMPLEX64 = 8,
    VG__DT_INT64 = 9, VG__DT_BOOL = 10, VG__DT_BFLOAT16 = 14, VG__DT_UINT16 = 17,
    VG__DT_COMPLEX128 = 18, VG__DT_HALF = 19, VG__DT_UINT32 = 22, VG__DT_UINT64 = 23
};

/* Bytes per element of a numeric dtype (quantized types included); 0 for DT_STRING,
 * DT_RESOURCE, DT_VARIANT and unknown numbers. */
VG_HIDDEN size_t vg__io_dtype_size(int dtype);

/* Most dimensions a bundle entry or IDX file may have in vigil. */
#define VG__IO_MAX_DIMS 32

/* Grows a dynamic array *arr of *cap elements of elem bytes to hold at least need:
 * *cap becomes first (when 0) or twice *cap, doubled until it holds need; the new part
 * is not zeroed. Returns false (array untouched) on allocation failure. In fs.c. */
VG_HIDDEN bool vg__io_grow(void **arr, size_t *cap, size_t need, size_t first, size_t elem);

/* ------------------------------------------------------------------------ */
/* fs.c: small POSIX file helpers shared by the writers. */

/* TF's errno -> code mapping (ENOSPC -> RESOURCE_EXHAUSTED, EACCES -> PERMISSION_DENIED,
 * ENOENT -> NOT_FOUND, EIO -> UNKNOWN, ...), except that no errno maps to OUT_OF_RANGE
 * (TF: EFBIG, EOVERFLOW, ERANGE), which the training loop reads as "end of input";
 * EFBIG is RESOURCE_EXHAUSTED here. */
VG_HIDDEN vg_code vg__io_errno_code(int err);
/* Sets st from errno: "<what> <path>: <strerror>". Returns the code. */
VG_HIDDEN vg_code vg__io_errno_status(vg_status *st, int err, const char *what, const char *path);
/* mkdir -p. Fails with the errno code (PERMISSION_DENIED, FAILED_PRECONDITION, ...). */
VG_HIDDEN vg_code vg__io_mkdirs(const char *dir, vg_status *st);
/* Opens path read-only without blocking on FIFOs (O_NONBLOCK) and accepts only regular
 * files. Returns the fd (blocking mode restored), or -1 with st set: errno codes
 * (NOT_FOUND naming the file, PERMISSION_DENIED, ...) or FAILED_PRECONDITION "<path> is
 * not a regular file (a FIFO)" for directories, FIFOs, devices and sockets. */
VG_HIDDEN int vg__io_open_regular(const char *path, vg_status *st);
/* The same for stdio: fdopen() over vg__io_open_regular's fd ("rb"). NULL with st set. */
VG_HIDDEN FILE *vg__io_fopen_regular(const char *path, vg_status *st);
/* The process-wide decode limits (vg_set_decode_limits in vigil/data.h, defined in
 * src/kernels/media/image_codec_ops.c), read atomically; defaults equal to data.h's
 * VG_DEFAULT_MAX_*. The setter takes a value <= 0 as the default. */
#define VG__DEFAULT_MAX_IMAGE_PIXELS ((int64_t)1 << 28)
#define VG__DEFAULT_MAX_PNG_CHUNK_BYTES ((int64_t)8 << 20)
#define VG__DEFAULT_MAX_RECORD_BYTES ((int64_t)1 << 30)
VG_HIDDEN int64_t vg__io_max_image_pixels(void);
VG_HIDDEN int64_t vg__io_max_png_chunk_bytes(void);
VG_HIDDEN int64_t vg__io_max_record_bytes(void);
VG_HIDDEN void vg__io_set_decode_limits(int64_t max_image_pixels, int64_t max_png_chunk_bytes,
                                        int64_t max_record_bytes);
/* Reads a whole file into a new buffer (*data, free with vg__free; NUL-terminated one
 * past *len). Fails with NOT_FOUND (naming the file), RESOURCE_EXHAUSTED, errno codes. */
VG_HIDDEN vg_code vg__io_read_file(const char *path, uint8_t **data, size_t *len, vg_status *st);
/* The same for a public reader fn (named in the message): INVALID_ARGUMENT "<fn>: NULL
 * path" for a NULL path first. */
VG_HIDDEN vg_code vg__io_read_path(const char *fn, const char *path, uint8_t **data, size_t *len, vg_status *st);
/* Creates "<final>.tempstate<16 hex>" with O_EXCL. *tmp_path is new (vg__free). */
VG_HIDDEN vg_code vg__io_temp_create(const char *final_path, char **tmp_path, int *fd, vg_status *st);
/* write() loop; errors name path. */
VG_HIDDEN vg_code vg__io_write_all(int fd, const void *p, size_t n, const char *path, vg_status *st);
/* fsync + close (closes even when fsync fails). */
VG_HIDDEN vg_code vg__io_fsync_close(int fd, const char *path, vg_status *st);
/* rename(from, to). */
VG_HIDDEN vg_code vg__io_rename(const char *from, const char *to, vg_status *st);
/* fsync of the directory holding `file_path` (makes a rename durable). */
VG_HIDDEN vg_code vg__io_fsync_parent_dir(const char *file_path, vg_status *st);
/* Writes data to path atomically: temp file in the same directory, fsync, rename, fsync
 * of the directory. The temp file is removed on failure. */
VG_HIDDEN vg_code vg__io_write_file_atomic(const char *path, const void *data, size_t len, vg_status *st);
/* The same without the parent directory's fsync (for a caller that fsyncs the directory
 * itself after several files, as the Saver does). */
VG_HIDDEN vg_code vg__io_write_file_atomic_nodirsync(const char *path, const void *data, size_t len, vg_status *st);

/* ------------------------------------------------------------------------ */
/* crc32c.c: CRC-32C (Castagnoli), as TF's crc32c::Extend/Value/Mask/Unmask. */

/* Continues crc (a finished CRC-32C of earlier bytes; 0 to start) over p[0..n).
 * Uses the SSE4.2 crc32 instruction when the CPU has it. */
VG_HIDDEN uint32_t vg__crc32c_extend(uint32_t crc, const void *p, size_t n);
/* Same with the portable slicing-by-8 tables (exposed for tests). */
VG_HIDDEN uint32_t vg__crc32c_extend_sw(uint32_t crc, const void *p, size_t n);

static inline uint32_t vg__crc32c(const void *p, size_t n) { return vg__crc32c_extend(0, p, n); }

#define VG__CRC32C_MASK_DELTA 0xa282ead8u
/* TF's mask: rotate right by 15 bits and add a constant (stored CRCs are masked). */
static inline uint32_t vg__crc32c_mask(uint32_t crc) {
    return ((crc >> 15) | (crc << 17)) + VG__CRC32C_MASK_DELTA;
}
static inline uint32_t vg__crc32c_unmask(uint32_t masked) {
    uint32_t rot = masked - VG__CRC32C_MASK_DELTA;
    return (rot >> 17) | (rot << 15);
}

/* Checksum comparison. Fuzz builds only (-DVG_FUZZ_NO_CRC, set by fuzz/CMakeLists.txt
 * on a -DVIGIL_FUZZ=ON build) accept every checksum, so that the fuzzer reaches the
 * parsers behind the CRCs; never defined in a normal build. */
#ifdef VG_FUZZ_NO_CRC
#define VG__CRC_MISMATCH(a, b) ((void)(a), (void)(b), 0)
#else
#define VG__CRC_MISMATCH(a, b) ((a) != (b))
#endif

/* Little-endian fixed-width helpers. */
static inline void vg__put_le32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline void vg__put_le64(uint8_t *p, uint64_t v) {
    vg__put_le32(p, (uint32_t)v);
    vg__put_le32(p + 4, (uint32_t)(v >> 32));
}
static inline uint32_t vg__get_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t vg__get_le64(const uint8_t *p) {
    return (uint64_t)vg__get_le32(p) | (uint64_t)vg__get_le32(p + 4) << 32;
}

/* ------------------------------------------------------------------------ */
/* pb.c: protobuf wire format, hand-written (see pb.c for why). */

enum { VG__PB_VARINT = 0, VG__PB_FIXED64 = 1, VG__PB_LEN = 2, VG__PB_SGROUP = 3,
       VG__PB_EGROUP = 4, VG__PB_FIXED32 = 5 };

/* A growable byte buffer with a sticky out-of-memory flag: after a failed growth every
 * put is a no-op and vg__pb_buf_status() reports RESOURCE_EXHAUSTED. */
typedef struct vg__pb_buf {
    uint8_t *data;
    size_t len, cap;
    bool oom;
} vg__pb_buf;

VG_HIDDEN void vg__pb_init(vg__pb_buf *b);
VG_HIDDEN void vg__pb_free(vg__pb_buf *b);                 /* frees data, re-inits */
VG_HIDDEN void vg__pb_reset(vg__pb_buf *b);                /* len = 0, keeps memory and oom */
VG_HIDDEN bool vg__pb_reserve(vg__pb_buf *b, size_t extra); /* false (and oom) on failure */
/* OK, or RESOURCE_EXHAUSTED naming `what` when a put failed. */
VG_HIDDEN vg_code vg__pb_buf_status(const vg__pb_buf *b, const char *what, vg_status *st);

/* Raw primitives (no field key). */
VG_HIDDEN void vg__pb_put_raw(vg__pb_buf *b, const void *p, size_t n);
VG_HIDDEN void vg__pb_put_varint(vg__pb_buf *b, uint64_t v);
VG_HIDDEN void vg__pb_put_fixed32(vg__pb_buf *b, uint32_t v);
VG_HIDDEN void vg__pb_put_fixed64(vg__pb_buf *b, uint64_t v);
VG_HIDDEN int vg__pb_varint_size(uint64_t v);
/* Encodes v into out (>= 10 bytes); returns the byte count. */
VG_HIDDEN int vg__pb_encode_varint(uint8_t *out, uint64_t v);

/* Fields (key + value). These always write; proto3 "omit defaults" is the caller's
 * job. int32/int64 negatives become 10-byte varints. */
VG_HIDDEN void vg__pb_put_tag(vg__pb_buf *b, int field, int wiretype);
VG_HIDDEN void vg__pb_put_uint64(vg__pb_buf *b, int field, uint64_t v);
VG_HIDDEN void vg__pb_put_int64(vg__pb_buf *b, int field, int64_t v);
VG_HIDDEN void vg__pb_put_int32(vg__pb_buf *b, int field, int32_t v);
VG_HIDDEN void vg__pb_put_bool(vg__pb_buf *b, int field, bool v);
VG_HIDDEN void vg__pb_put_fixed32_field(vg__pb_buf *b, int field, uint32_t v);
VG_HIDDEN void vg__pb_put_fixed64_field(vg__pb_buf *b, int field, uint64_t v);
VG_HIDDEN void vg__pb_put_float(vg__pb_buf *b, int field, float v);
VG_HIDDEN void vg__pb_put_double(vg__pb_buf *b, int field, double v);
VG_HIDDEN void vg__pb_put_bytes(vg__pb_buf *b, int field, const void *p, size_t n);
VG_HIDDEN void vg__pb_put_string(vg__pb_buf *b, int field, const char *s);
/* A nested message: key, length, then sub's bytes (propagates sub's oom flag). */
VG_HIDDEN void vg__pb_put_message(vg__pb_buf *b, int field, const vg__pb_buf *sub);
/* Packed repeated double (one length-delimited record; nothing when n == 0). */
VG_HIDDEN void vg__pb_put_packed_double(vg__pb_buf *b, int field, const double *v, size_t n);

/* Reader: iterates the fields of one message. Unknown fields are simply yielded (the
 * caller ignores numbers it does not know); groups are skipped whole. */
typedef struct vg__pb_reader {
    const uint8_t *p, *end;
} vg__pb_reader;

typedef struct vg__pb_field {
    int number;
    int wiretype;
    uint64_t u;          /* VARINT, FIXED32, FIXED64 value */
    const uint8_t *data; /* LEN: payload (borrowed from the input) */
    size_t len;
} vg__pb_field;

VG_HIDDEN void vg__pb_reader_init(vg__pb_reader *r, const void *p, size_t n);
/* Next field: VG_OK, VG_OUT_OF_RANGE at the clean end, VG_DATA_LOSS when malformed
 * (truncated varint/fixed, length past the end, field number 0, bad wire type). */
VG_HIDDEN vg_code vg__pb_next(vg__pb_reader *r, vg__pb_field *f, vg_status *st);
/* Reads a varint at *p (< end), advancing *p; false when truncated or > 10 bytes. */
VG_HIDDEN bool vg__pb_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);
static inline float vg__pb_as_float(const vg__pb_field *f) {
    uint32_t u = (uint32_t)f->u;
    float x;
    memcpy(&x, &u, 4);
    return x;
}
static inline double vg__pb_as_double(const vg__pb_field *f) {
    double x;
    memcpy(&x, &f->u, 8);
    return x;
}

/* ------------------------------------------------------------------------ */
/* tfrecord.c: TFRecord files. Neither object is thread-safe. */

typedef struct vg__tfrecord_writer vg__tfrecord_writer;

/* Opens path for writing (append = keep existing records). Fails with errno codes. */
VG_HIDDEN vg__tfrecord_writer *vg__tfrecord_writer_open(const char *path, bool append, vg_status *st);
/* A new file only (O_CREAT | O_EXCL | O_NOFOLLOW): fails with ALREADY_EXISTS when
 * anything, a symlink included, has that name; never truncates or follows. */
VG_HIDDEN vg__tfrecord_writer *vg__tfrecord_writer_create(const char *path, vg_status *st);
/* Appends one record (buffered). Fails with RESOURCE_EXHAUSTED (ENOSPC), UNKNOWN (EIO). */
VG_HIDDEN vg_code vg__tfrecord_writer_write(vg__tfrecord_writer *w, const void *data, size_t len, vg_status *st);
/* fflush, and fsync too when asked. */
VG_HIDDEN vg_code vg__tfrecord_writer_flush(vg__tfrecord_writer *w, bool fsync_too, vg_status *st);
/* Flushes, closes and frees (always frees; returns the first error). NULL is a no-op. */
VG_HIDDEN vg_code vg__tfrecord_writer_close(vg__tfrecord_writer *w, vg_status *st);
/* Builds the 12-byte record header for a payload of len bytes. */
VG_HIDDEN void vg__tfrecord_header(uint8_t hdr[12], uint64_t len);

typedef struct vg__tfrecord_reader vg__tfrecord_reader;

/* Opens for reading. Fails with NOT_FOUND (naming path) or errno codes. */
VG_HIDDEN vg__tfrecord_reader *vg__tfrecord_reader_open(const char *path, vg_status *st);
/* Next record; *data is borrowed until the next call on r.
 *   VG_OK           a record; the position moves past it.
 *   VG_OUT_OF_RANGE clean end of file.
 *   VG_DATA_LOSS    "truncated record at offset N": the file ends inside a record; the
 *                   position stays at N so a call after the file has grown retries it.
 *                   "corrupted record at offset N": a CRC mismatch; position stays at N;
 *                   call _skip_corrupt to move on or stop reading. */
VG_HIDDEN vg_code vg__tfrecord_reader_next(vg__tfrecord_reader *r, const uint8_t **data, size_t *len, vg_status *st);
/* After a "corrupted" DATA_LOSS: moves to the next record that verifies (skips the bad
 * record when its length was intact, else scans forward byte by byte). OUT_OF_RANGE
 * when no valid record follows. */
VG_HIDDEN vg_code vg__tfrecord_reader_skip_corrupt(vg__tfrecord_reader *r, vg_status *st);
/* Byte offset of the next record. */
VG_HIDDEN uint64_t vg__tfrecord_reader_offset(const vg__tfrecord_reader *r);
VG_HIDDEN void vg__tfrecord_reader_close(vg__tfrecord_reader *r);

/* ------------------------------------------------------------------------ */
/* snappy.c: wrappers over libsnappy's C API. Outputs are new buffers (vg__free). */

/* Fails with DATA_LOSS (corrupt input, or uncompressed length > max_len) or
 * RESOURCE_EXHAUSTED. */
VG_HIDDEN vg_code vg__snappy_uncompress(const void *in, size_t n, size_t max_len, uint8_t **out,
                                        size_t *out_len, vg_status *st);
/* Fails with RESOURCE_EXHAUSTED or INTERNAL. */
VG_HIDDEN vg_code vg__snappy_compress(const void *in, size_t n, uint8_t **out, size_t *out_len, vg_status *st);

/* ------------------------------------------------------------------------ */
/* sstable.c: LevelDB table format as tensorflow::table writes it. */

#define VG__SSTABLE_BLOCK_SIZE 262144
#define VG__SSTABLE_FOOTER_LEN 48
#define VG__SSTABLE_MAGIC 0xdb4775248b80fb57ull

typedef struct vg__sstable_builder vg__sstable_builder;

/* A builder that writes to f (borrowed; NULL = build into memory). snappy = compress
 * data blocks when it saves >= 12.5% (TF's rule); TF-compatible writers pass false. */
VG_HIDDEN vg__sstable_builder *vg__sstable_builder_new(FILE *f, bool snappy, vg_status *st);
/* Adds an entry; keys must be strictly increasing (memcmp order) -> else
 * INVALID_ARGUMENT. Also RESOURCE_EXHAUSTED, write errors. */
VG_HIDDEN vg_code vg__sstable_builder_add(vg__sstable_builder *b, const void *key, size_t klen,
                                          const void *val, size_t vlen, vg_status *st);
/* Writes the last data block, metaindex, index and footer. */
VG_HIDDEN vg_code vg__sstable_builder_finish(vg__sstable_builder *b, vg_status *st);
/* The built bytes (memory mode; borrowed until _free). */
VG_HIDDEN const uint8_t *vg__sstable_builder_data(const vg__sstable_builder *b, size_t *len);
VG_HIDDEN void vg__sstable_builder_free(vg__sstable_builder *b);

typedef struct vg__sstable vg__sstable;

/* Parses a whole table held in memory. Takes ownership of data (a vg__malloc block)
 * even on failure. name is used in messages. Every block trailer CRC is verified and
 * Snappy blocks are decompressed. Fails with DATA_LOSS (naming the file) or
 * RESOURCE_EXHAUSTED. */
VG_HIDDEN vg__sstable *vg__sstable_open_buffer(uint8_t *data, size_t len, const char *name, vg_status *st);
/* Reads and parses a file; NOT_FOUND when missing. */
VG_HIDDEN vg__sstable *vg__sstable_open(const char *path, vg_status *st);
VG_HIDDEN size_t vg__sstable_count(const vg__sstable *t);
/* Entry i in key order. key is NUL-terminated (one past klen); both are borrowed until
 * _free. */
VG_HIDDEN void vg__sstable_entry(const vg__sstable *t, size_t i, const uint8_t **key, size_t *klen,
                                 const uint8_t **val, size_t *vlen);
/* Binary search; index of the key or -1. */
VG_HIDDEN int64_t vg__sstable_find(const vg__sstable *t, const void *key, size_t klen);
/* Like find; NOT_FOUND when absent. */
VG_HIDDEN vg_code vg__sstable_get(const vg__sstable *t, const void *key, size_t klen, const uint8_t **val,
                                  size_t *vlen, vg_status *st);
VG_HIDDEN void vg__sstable_free(vg__sstable *t);

/* ------------------------------------------------------------------------ */
/* bundle.c: V2 checkpoint (tensor bundle) writer and reader. */

typedef struct vg__bundle_writer vg__bundle_writer;

/* Starts a bundle for prefix (creates its directory). Tensor data is streamed to a temp
 * file next to "<prefix>.data-00000-of-00001". Fails with errno codes. */
VG_HIDDEN vg__bundle_writer *vg__bundle_writer_new(const char *prefix, vg_status *st);
/* Adds a numeric tensor: raw little-endian, row-major bytes (data borrowed for the
 * call). Fails with INVALID_ARGUMENT (bad dtype, size != numel * dtype size, empty
 * name, rank), ALREADY_EXISTS (name added before), write errors. A failed write makes
 * the writer unusable (every later call returns the same error) and removes its temp
 * file at once. */
VG_HIDDEN vg_code vg__bundle_writer_add(vg__bundle_writer *w, const char *name, int dtype, const int64_t *dims,
                                        int ndims, const void *data, size_t nbytes, vg_status *st);
/* Adds a DT_STRING tensor of n = numel elements (strs[i] has lens[i] bytes). */
VG_HIDDEN vg_code vg__bundle_writer_add_strings(vg__bundle_writer *w, const char *name, const int64_t *dims,
                                                int ndims, const char *const *strs, const size_t *lens,
                                                int64_t n, vg_status *st);
/* Writes the index (sorted by name) and renames both files into place, crash-safely
 * (temp + fsync + rename data, rename index, fsync dir). On failure the temp files are
 * removed. Fails with RESOURCE_EXHAUSTED (ENOSPC), PERMISSION_DENIED, UNKNOWN (EIO). */
VG_HIDDEN vg_code vg__bundle_writer_finish(vg__bundle_writer *w, vg_status *st);
/* Frees; removes the temp files when finish did not succeed. NULL is a no-op. */
VG_HIDDEN void vg__bundle_writer_free(vg__bundle_writer *w);

typedef struct vg__bundle_entry {
    const char *name;     /* NUL-terminated */
    int dtype;
    int ndims;
    const int64_t *dims;
    int shard_id;
    uint64_t offset;
    uint64_t nbytes;      /* stored size */
    uint32_t masked_crc;
    bool sliced;          /* a partitioned tensor (unsupported) */
} vg__bundle_entry;

typedef struct vg__bundle_reader vg__bundle_reader;

/* Opens "<prefix>.index" and checks the header (num_shards >= 1, endianness, version:
 * producer >= 0, min_consumer <= 1, 1 not a bad consumer). Fails with NOT_FOUND
 * (naming the file), DATA_LOSS (corrupt index), INVALID_ARGUMENT (version). */
VG_HIDDEN vg__bundle_reader *vg__bundle_reader_open(const char *prefix, vg_status *st);
VG_HIDDEN void vg__bundle_reader_free(vg__bundle_reader *r);
/* Number of tensors (the "" header key is not counted). */
VG_HIDDEN size_t vg__bundle_reader_num_entries(const vg__bundle_reader *r);
/* Tensor i in key order (borrowed until _free). */
VG_HIDDEN const vg__bundle_entry *vg__bundle_reader_entry(const vg__bundle_reader *r, size_t i);
/* The named entry or NULL. */
VG_HIDDEN const vg__bundle_entry *vg__bundle_reader_find(const vg__bundle_reader *r, const char *name);
/* dtype and shape (dims must hold VG__IO_MAX_DIMS). NOT_FOUND
 * "Key <name> not found in checkpoint <prefix>". */
VG_HIDDEN vg_code vg__bundle_reader_lookup(const vg__bundle_reader *r, const char *name, int *dtype,
                                           int64_t *dims, int *ndims, vg_status *st);
/* Checks, before a caller allocates for it, that the named tensor's bytes lie inside
 * its data file (opening it). NOT_FOUND (no such tensor / data file), DATA_LOSS naming
 * tensor, file and offset when the index claims more bytes than the file holds. */
VG_HIDDEN vg_code vg__bundle_reader_check_data(vg__bundle_reader *r, const char *name, vg_status *st);
/* Reads a numeric tensor into dst (dst_nbytes must equal its size), verifies the CRC,
 * byte-swaps big-endian bundles. Fails with NOT_FOUND, INVALID_ARGUMENT (size, string
 * dtype), DATA_LOSS (crc/short file, naming tensor and file), UNIMPLEMENTED (sliced). */
VG_HIDDEN vg_code vg__bundle_reader_read(vg__bundle_reader *r, const char *name, void *dst, size_t dst_nbytes,
                                         vg_status *st);
/* Reads a DT_STRING tensor: *strs (n new NUL-terminated strings) and *lens; free with
 * vg__bundle_strings_free. Both checksums verified. */
VG_HIDDEN vg_code vg__bundle_reader_read_strings(vg__bundle_reader *r, const char *name, char ***strs,
                                                 size_t **lens, int64_t *n, vg_status *st);
VG_HIDDEN void vg__bundle_strings_free(char **strs, size_t *lens, int64_t n);
/* bundle_merge.c: merges the bundles at prefixes[0..n) into `merged` as TF's MergeBundles
 * (MergeV2Checkpoints): data files renamed to "<merged>.data-<k>-of-<total>" in input
 * order, one index with every entry (shard ids moved), inputs' .index files deleted.
 * Fails with NOT_FOUND (an input index or data file, naming it), DATA_LOSS (corrupt
 * index), INVALID_ARGUMENT (a key in two inputs, naming it; no inputs), UNIMPLEMENTED
 * (mixed endianness), I/O codes. */
VG_HIDDEN vg_code vg__bundle_merge(const char *const *prefixes, int n, const char *merged, vg_status *st);

/* ------------------------------------------------------------------------ */
/* ckpt_state.c: the `checkpoint` text file (CheckpointState proto, text format). */

typedef struct vg__ckpt_state {
    char *model_checkpoint_path;  /* NULL when absent */
    char **all_paths;
    int n_all;
    double *timestamps;           /* all_model_checkpoint_timestamps */
    int n_ts;
    double last_preserved_timestamp; /* 0 when absent */
    int cap_all, cap_ts;          /* allocated slots (parser's growth; 0 is fine for writers) */
} vg__ckpt_state;

/* Parses text format. Paths are kept as written (relative paths are not joined). Fails
 * with DATA_LOSS (syntax, unknown field), INVALID_ARGUMENT (parsed, but no or an empty
 * model_checkpoint_path: TF's ValueError) or RESOURCE_EXHAUSTED. On failure *s is empty. */
VG_HIDDEN vg_code vg__ckpt_state_parse(const char *text, size_t len, vg__ckpt_state *s, vg_status *st);
/* Reads a file; NOT_FOUND (naming it) when missing. */
VG_HIDDEN vg_code vg__ckpt_state_read(const char *path, vg__ckpt_state *s, vg_status *st);
/* Text exactly as TF writes it (escaped strings, field-number order; timestamps in
 * Python's repr form). Appends to out. */
VG_HIDDEN vg_code vg__ckpt_state_format(const vg__ckpt_state *s, vg__pb_buf *out, vg_status *st);
/* Formats and replaces path atomically (temp, fsync, rename, fsync dir). */
VG_HIDDEN vg_code vg__ckpt_state_write(const char *path, const vg__ckpt_state *s, vg_status *st);
VG_HIDDEN void vg__ckpt_state_free(vg__ckpt_state *s); /* frees members, zeroes *s */

/* ------------------------------------------------------------------------ */
/* events.c: Event / Summary / HistogramProto encoding, decoding, event file writer. */

typedef enum vg__event_kind {
    VG__EVENT_NONE = 0,
    VG__EVENT_FILE_VERSION = 3,
    VG__EVENT_GRAPH_DEF = 4,
    VG__EVENT_SUMMARY = 5,
    VG__EVENT_LOG_MESSAGE = 6,
    VG__EVENT_SESSION_LOG = 7,
    VG__EVENT_TAGGED_RUN_METADATA = 8,
    VG__EVENT_META_GRAPH_DEF = 9
} vg__event_kind;   /* = the Event field number of the oneof */

enum { VG__SESSION_LOG_UNSPECIFIED = 0, VG__SESSION_LOG_START = 1, VG__SESSION_LOG_STOP = 2,
       VG__SESSION_LOG_CHECKPOINT = 3 };

/* An Event to encode. Only the members of `kind` are used; all pointers borrowed. */
typedef struct vg__event {
    double wall_time;
    int64_t step;
    vg__event_kind kind;
    const void *data;       /* FILE_VERSION: the string; GRAPH_DEF / META_GRAPH_DEF: the
                               serialized proto; SUMMARY: a serialized Summary;
                               TAGGED_RUN_METADATA: serialized RunMetadata */
    size_t len;
    const char *tag;        /* TAGGED_RUN_METADATA */
    int status;             /* SESSION_LOG status; LOG_MESSAGE level */
    const char *path;       /* SESSION_LOG checkpoint_path (NULL/"" = none) */
    const char *msg;        /* SESSION_LOG msg / LOG_MESSAGE message */
} vg__event;

/* Appends the serialized Event to out (proto3 rules: zero wall_time/step omitted). */
VG_HIDDEN void vg__event_encode(vg__pb_buf *out, const vg__event *ev);

/* Summary building: a Summary message is a sequence of `value` fields, so appending
 * values to one buffer builds it. */
VG_HIDDEN void vg__summary_add_scalar(vg__pb_buf *summary, const char *tag, float value);
/* histo = a serialized HistogramProto (from vg__histogram_encode_*). */
VG_HIDDEN void vg__summary_add_histo(vg__pb_buf *summary, const char *tag, const vg__pb_buf *histo);

/* TF's default histogram bucket limits (1551 values: -DBL_MAX .. 0 .. DBL_MAX). */
VG_HIDDEN const double *vg__histogram_default_limits(int *n);
/* HistogramProto of the values as TF1's HistogramSummary op builds it (default buckets,
 * runs of empty buckets collapsed). Appends to out. Fails with INVALID_ARGUMENT for
 * NaN/Inf ("Nan in summary histogram for: <tag>"; tag may be NULL). */
VG_HIDDEN vg_code vg__histogram_encode_doubles(vg__pb_buf *out, const double *v, size_t n, const char *tag,
                                               vg_status *st);
VG_HIDDEN vg_code vg__histogram_encode_floats(vg__pb_buf *out, const float *v, size_t n, const char *tag,
                                              vg_status *st);

/* A decoded Event (pointers borrow from the decoded bytes). */
typedef struct vg__event_info {
    double wall_time;
    int64_t step;
    vg__event_kind kind;
    const uint8_t *payload;  /* bytes of the oneof field (string / message) */
    size_t payload_len;
    int session_status;      /* SESSION_LOG */
} vg__event_info;

/* Decodes one Event. DATA_LOSS when malformed. */
VG_HIDDEN vg_code vg__event_decode(const void *data, size_t len, vg__event_info *ev, vg_status *st);

typedef enum vg__value_kind {
    VG__VALUE_OTHER = 0, VG__VALUE_SIMPLE, VG__VALUE_HISTO, VG__VALUE_TENSOR,
    VG__VALUE_IMAGE, VG__VALUE_AUDIO
} vg__value_kind;

typedef struct vg__summary_value {
    const char *tag;      /* not NUL-terminated */
    size_t tag_len;
    vg__value_kind kind;
    bool has_scalar;      /* simple_value, or a scalar-like tensor (TF2 scalars) */
    double scalar;
    const uint8_t *histo; /* HistogramProto bytes when kind == HISTO */
    size_t histo_len;
} vg__summary_value;

/* Iterates the values of a serialized Summary. */
typedef struct vg__summary_iter {
    vg__pb_reader r;
} vg__summary_iter;
VG_HIDDEN void vg__summary_iter_init(vg__summary_iter *it, const void *summary, size_t len);
/* VG_OK, VG_OUT_OF_RANGE at the end, VG_DATA_LOSS when malformed. */
VG_HIDDEN vg_code vg__summary_next(vg__summary_iter *it, vg__summary_value *v, vg_status *st);
/* The statistics of a HistogramProto (num, min, max, sum; bucket count). */
typedef struct vg__histo_stats {
    double min, max, num, sum, sum_squares;
    size_t nbuckets, nlimits;
} vg__histo_stats;
VG_HIDDEN vg_code vg__histo_decode_stats(const void *histo, size_t len, vg__histo_stats *hs, vg_status *st);

/* Event-file reader: a TFRecord reader that decodes each record as an Event. Same
 * return codes as vg__tfrecord_reader_next plus DATA_LOSS for a malformed Event. */
typedef struct vg__event_reader vg__event_reader;
VG_HIDDEN vg__event_reader *vg__event_reader_open(const char *path, vg_status *st);
VG_HIDDEN vg_code vg__event_reader_next(vg__event_reader *r, vg__event_info *ev, vg_status *st);
VG_HIDDEN void vg__event_reader_close(vg__event_reader *r);

/* Event-file writer (synchronous, not thread-safe: a queueing thread belongs on top).
 * Creates <dir>/events.out.tfevents.<10-digit secs>.<hostname><suffix> (dir made
 * recursively) and writes the file_version "brain.Event:2" event (flushed). Fails with
 * errno codes. suffix may be NULL. */
typedef struct vg__event_writer vg__event_writer;
VG_HIDDEN vg__event_writer *vg__event_writer_open(const char *dir, const char *filename_suffix, vg_status *st);
/* Appends one serialized Event (buffered). */
VG_HIDDEN vg_code vg__event_writer_write(vg__event_writer *w, const void *event, size_t len, vg_status *st);
/* Encodes and appends. */
VG_HIDDEN vg_code vg__event_writer_write_event(vg__event_writer *w, const vg__event *ev, vg_status *st);
/* fflush + fsync. */
VG_HIDDEN vg_code vg__event_writer_flush(vg__event_writer *w, vg_status *st);
/* Writes the buffered records to the file without fsync (visible to readers). */
VG_HIDDEN vg_code vg__event_writer_drain(vg__event_writer *w, vg_status *st);
/* Flushes, closes and frees (always frees). NULL is a no-op. */
VG_HIDDEN vg_code vg__event_writer_close(vg__event_writer *w, vg_status *st);
/* The file's path (borrowed until close). */
VG_HIDDEN const char *vg__event_writer_path(const vg__event_writer *w);

/* ------------------------------------------------------------------------ */
/* idx.c: IDX files (MNIST / Fashion-MNIST), plain or gzip'd. Header: 2 zero bytes, a
 * type byte (0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64), ndims, then
 * ndims big-endian uint32 sizes; data big-endian (converted to host order here). */

#define VG__IDX_U8 0x08

/* Reads a whole file. expected_type 0 = any. dims must hold 4 (at most 4 dims).
 * *data is new (vg__free). Fails with NOT_FOUND (path), DATA_LOSS (bad magic, type
 * mismatch, short data; naming path), RESOURCE_EXHAUSTED. */
VG_HIDDEN vg_code vg__idx_read(const char *path, uint8_t expected_type, int64_t dims[4], int *ndims,
                               void **data, size_t *nbytes, vg_status *st);

typedef struct vg__idx_reader vg__idx_reader;
/* Opens and reads the header; records are slices along the first dimension. */
VG_HIDDEN vg__idx_reader *vg__idx_reader_open(const char *path, uint8_t expected_type, vg_status *st);
VG_HIDDEN int64_t vg__idx_reader_num_records(const vg__idx_reader *r);
VG_HIDDEN size_t vg__idx_reader_record_bytes(const vg__idx_reader *r);
/* dims of the file (dims[0] = number of records). */
VG_HIDDEN const int64_t *vg__idx_reader_dims(const vg__idx_reader *r, int *ndims);
/* Reads the next record into dst (record_bytes). OUT_OF_RANGE after the last one,
 * DATA_LOSS on short data. */
VG_HIDDEN vg_code vg__idx_reader_next_record(vg__idx_reader *r, void *dst, vg_status *st);
/* Back to the first record. */
VG_HIDDEN vg_code vg__idx_reader_reset(vg__idx_reader *r, vg_status *st);
VG_HIDDEN void vg__idx_reader_close(vg__idx_reader *r);
/* The element type byte (0x08 ...). */
VG_HIDDEN uint8_t vg__idx_reader_type(const vg__idx_reader *r);

/* Reverses the byte order of each `unit`-byte element of data[0..nbytes) (big-endian
 * file data to host order and back); units of 0 or 1 byte are left alone. Used by the
 * bundle reader and the IDX reader. */
static inline void vg__io_swap_units(void *data, size_t nbytes, size_t unit) {
    if (unit <= 1) return;
    uint8_t *p = data;
    for (size_t i = 0; i + unit <= nbytes; i += unit)
        for (size_t a = 0, b = unit - 1; a < b; a++, b--) {
            uint8_t t = p[i + a];
            p[i + a] = p[i + b];
            p[i + b] = t;
        }
}

/* A new zeroed object of `size` bytes whose `char *` field at path_offset (offsetof)
 * owns a copy of path: the start of the readers and writers that keep their file's
 * name. NULL, with st RESOURCE_EXHAUSTED "out of memory allocating <what>", when out
 * of memory. Free the copy and the object with vg__free. */
static inline void *vg__io_new_with_path(size_t size, size_t path_offset, const char *path, const char *what,
                                         vg_status *st) {
    char *obj = vg__calloc(1, size);
    char *copy = obj ? vg__strdup(path) : NULL;
    if (!copy) {
        vg__free(obj);
        VG_OOM(st, what);
        return NULL;
    }
    memcpy(obj + path_offset, &copy, sizeof copy);
    return obj;
}

/* A parser of a whole file's bytes (vg_npy_parse, vg_pickle_dict_parse) as one type. */
typedef void *(*vg__io_parse_fn)(const void *bytes, size_t len, const char *name, vg_status *st);

/* Reads path (vg__io_read_path: fn names the public reader) and returns parse(its
 * bytes, path); the bytes are freed either way. NULL on failure (st set). */
static inline void *vg__io_parse_path(const char *fn, const char *path, vg__io_parse_fn parse, vg_status *st) {
    uint8_t *data;
    size_t len;
    if (vg__io_read_path(fn, path, &data, &len, st)) return NULL;
    void *r = parse(data, len, path, st);
    vg__free(data);
    return r;
}

/* The text scanners' one-character look-ahead (ckpt_state.c's text proto, npy.c's
 * header dict): when *p (before end) is c, steps past it and returns true; else false
 * and *p untouched. */
static inline bool vg__io_accept_char(const char **p, const char *end, char c) {
    if (*p >= end || **p != c) return false;
    (*p)++;
    return true;
}

/* Protocol-buffer text format: the escape sequence after a backslash (*p points just past
 * it, end bounds the text): \n \r \t \a \b \f \v \\ \' \" \?, octal \o[o[o]] up to 255,
 * hex \xh[h] (and \Xh[h] when upper_x). Appends the byte to out and advances *p past
 * the sequence. Returns NULL, or (nothing appended) a static description of what is
 * wrong: "unterminated escape", "bad \\x escape", "octal escape out of range",
 * "unknown escape". Shared by the GraphDef text parser and the checkpoint-state reader. */
VG_HIDDEN const char *vg__io_pbtxt_unescape(const char **p, const char *end, bool upper_x, vg__pb_buf *out);

#endif
