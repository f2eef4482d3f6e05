/*
 * example_io.h - tf.train.Example / SequenceExample decoding and TFRecord streams with
 * compression (internal; the builders and the writer are public, vigil/example.h).
 *
 * Messages (tensorflow/core/example/{example,feature}.proto):
 *   Example         { Features features = 1; }
 *   SequenceExample { Features context = 1; FeatureLists feature_lists = 2; }
 *   Features        { map<string, Feature> feature = 1; }        entry: key = 1, value = 2
 *   FeatureLists    { map<string, FeatureList> feature_list = 1; }
 *   FeatureList     { repeated Feature feature = 1; }
 *   Feature         { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
 *                                  Int64List int64_list = 3; } }
 *   BytesList { repeated bytes value = 1; }  FloatList { repeated float value = 1 [packed]; }
 *   Int64List { repeated int64 value = 1 [packed]; }
 * The decoder accepts packed and unpacked repeats; for a key given twice the last
 * entry wins (protobuf map semantics). Everything decoded borrows from the input.
 */
#ifndef VG_EXAMPLE_IO_H
#define VG_EXAMPLE_IO_H

#include "io/io.h"

enum { VG__FEAT_NONE = 0, VG__FEAT_BYTES = 1, VG__FEAT_FLOAT = 2, VG__FEAT_INT64 = 3 };

typedef struct vg__feature {
    const uint8_t *key;   /* not NUL-terminated */
    size_t klen;
    int kind;             /* VG__FEAT_* (NONE: the oneof is unset) */
    const uint8_t *list;  /* the BytesList / FloatList / Int64List message */
    size_t list_len;
} vg__feature;

typedef struct vg__features {
    vg__feature *v;
    size_t n, cap;
} vg__features;

typedef struct vg__feature_list {
    const uint8_t *key;
    size_t klen;
    const uint8_t *data;  /* FeatureList message */
    size_t len;
} vg__feature_list;

typedef struct vg__seq_example {
    vg__features context;
    vg__feature_list *lists;
    size_t nlists, cap;
} vg__seq_example;

VG_HIDDEN void vg__features_free(vg__features *fs);   /* frees the array, zeroes */
/* Decodes a Feature message into f's kind/list (key untouched). DATA_LOSS if malformed. */
VG_HIDDEN vg_code vg__feature_decode(const uint8_t *p, size_t n, vg__feature *f, vg_status *st);
/* Appends the entries of a Features message (n = 0 leaves fs as is). DATA_LOSS when
 * malformed, RESOURCE_EXHAUSTED. */
VG_HIDDEN vg_code vg__features_decode(const uint8_t *p, size_t n, vg__features *fs, vg_status *st);
/* Decodes an Example: fs is reset and filled. */
VG_HIDDEN vg_code vg__example_decode(const uint8_t *p, size_t n, vg__features *fs, vg_status *st);
/* The general decoder alone (vg__example_decode first tries a fast path for the C++
 * serializer's layout and falls back to this; tests compare the two). */
VG_HIDDEN vg_code vg__example_decode_general(const uint8_t *p, size_t n, vg__features *fs, vg_status *st);
/* The feature for key (the last one given) or NULL. */
VG_HIDDEN const vg__feature *vg__features_find(const vg__features *fs, const char *key, size_t klen);
/* Number of values in f's list. DATA_LOSS when malformed. */
VG_HIDDEN vg_code vg__feature_count(const vg__feature *f, int64_t *n, vg_status *st);
/* Copies the values (exactly max of them at most; *got gets the count written) of an
 * INT64 / FLOAT feature. */
VG_HIDDEN vg_code vg__feature_int64s(const vg__feature *f, int64_t *dst, int64_t max, int64_t *got, vg_status *st);
VG_HIDDEN vg_code vg__feature_floats(const vg__feature *f, float *dst, int64_t max, int64_t *got, vg_status *st);
/* Iterates the values of a BYTES feature: init a reader over f->list, then call
 * _next until OUT_OF_RANGE. */
VG_HIDDEN vg_code vg__feature_bytes_next(vg__pb_reader *r, const uint8_t **p, size_t *len, vg_status *st);

VG_HIDDEN void vg__seq_example_free(vg__seq_example *se);
VG_HIDDEN vg_code vg__seq_example_decode(const uint8_t *p, size_t n, vg__seq_example *se, vg_status *st);
/* The list for key (last wins) or NULL. */
VG_HIDDEN const vg__feature_list *vg__seq_example_find(const vg__seq_example *se, const char *key, size_t klen);
/* Iterates the Features (steps) of a FeatureList: f gets each step's kind/list. */
VG_HIDDEN vg_code vg__feature_list_next(vg__pb_reader *r, vg__feature *f, vg_status *st);

/* ---- TFRecord streams with compression (zrecord.c) ------------------------ */

/* TFRecord reader over a plain, ZLIB or GZIP file (compression = vg_compression
 * numbers: 0 none, 1 zlib, 2 gzip). Opening fails with NOT_FOUND naming the file. */
typedef struct vg__zrecord_reader vg__zrecord_reader;
VG_HIDDEN vg__zrecord_reader *vg__zrecord_reader_open(const char *path, int compression, vg_status *st);
/* Next record (*data borrowed until the next call). *offset gets the record's offset
 * in the (uncompressed) stream. OUT_OF_RANGE at the clean end; DATA_LOSS "truncated
 * record at offset N in F" / "corrupted record at offset N in F: ..." / a corrupt
 * compressed stream. Memory grows only as record bytes actually arrive. */
VG_HIDDEN vg_code vg__zrecord_reader_next(vg__zrecord_reader *r, const uint8_t **data, size_t *len,
                                          uint64_t *offset, vg_status *st);
VG_HIDDEN void vg__zrecord_reader_close(vg__zrecord_reader *r);

#endif
