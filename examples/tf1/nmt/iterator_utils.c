/* iterator_utils.c - nmt/utils/iterator_utils.py: get_iterator (train / eval) and
 * get_infer_iterator, tf.data pipelines whose map functions look words up in the outer
 * graph's vocabulary tables (vg_dataset_capture); with num_buckets > 1 the batches are
 * bucketed by length (group_by_window, batching_func / key_func / reduce_func). */
#include "nmt.h"
#include <string.h>

typedef struct pipe_ctx {
    const vg_lookup_table *src_table, *tgt_table;
    vg_output tgt_sos_id, tgt_eos_id;
    int64_t src_max_len, tgt_max_len;
} pipe_ctx;

/* tf.string_split([s]).values */
static vg_output split_values(vg_graph *fg, vg_output s) {
    vg_output line = vg_reshape_c(fg, s, (const int64_t[]){1}, 1, NULL);
    vg_op *sp = vg_string_split(fg, line, " ", true, NULL, NULL);
    return sp ? vg_out(sp, 1) : (vg_output){0};
}

/* x[:max_len] */
static vg_output head(vg_graph *fg, vg_output x, int64_t max_len) {
    return vg_strided_slice_c(fg, x, (const int32_t[]){0}, (const int32_t[]){(int32_t)max_len}, NULL, 1, NULL, NULL);
}

/* table.lookup(words) in the function graph, the table's handle and default captured */
static vg_output lookup_i32(vg_graph *fg, const vg_lookup_table *t, vg_output words) {
    vg_lookup_table c = *t;
    c.handle = vg_dataset_capture(fg, t->handle, NULL);
    c.default_value = vg_dataset_capture(fg, t->default_value, NULL);
    return vg_cast(fg, vg_lookup_table_lookup(fg, &c, words, NULL), VG_INT32, NULL);
}

/* lambda src, tgt: (tf.string_split([src]).values, tf.string_split([tgt]).values) */
static vg_code map_split2(vg_graph *fg, const vg_output *a, int na, vg_output *o, int *no, void *p) {
    (void)na, (void)p;
    o[0] = split_values(fg, a[0]);
    o[1] = split_values(fg, a[1]);
    *no = 2;
    return VG_OK;
}

/* lambda src, tgt: tf.logical_and(tf.size(src) > 0, tf.size(tgt) > 0) */
static vg_code filter_nonempty(vg_graph *fg, const vg_output *a, int na, vg_output *o, int *no, void *p) {
    (void)na, (void)p;
    vg_output zero = vg_const_i32(fg, 0, NULL);
    o[0] = vg_logical_and(fg, vg_greater(fg, vg_size(fg, a[0], NULL), zero, NULL),
                          vg_greater(fg, vg_size(fg, a[1], NULL), zero, NULL), NULL);
    *no = 1;
    return VG_OK;
}

/* lambda src, tgt: (src[:src_max_len], tgt) */
static vg_code map_src_max_len(vg_graph *fg, const vg_output *a, int na, vg_output *o, int *no, void *p) {
    const pipe_ctx *c = p;
    for (int i = 0; i < na; i++) o[i] = a[i];
    o[0] = head(fg, a[0], c->src_max_len);
    *no = na;
    return VG_OK;
}

/* lambda src, tgt: (src, tgt[:tgt_max_len]) */
static vg_code map_tgt_max_len(vg_graph *fg, const vg_output *a, int na, vg_output *o, int *no, void *p) {
    const pipe_ctx *c = p;
    (void)na;
    o[0] = a[0];
    o[1] = head(fg, a[1], c->tgt_max_len);
    *no = 2;
    return VG_OK;
}

/* lambda src, tgt: (tf.cast(src_vocab_table.lookup(src), tf.int32),
 *                   tf.cast(tgt_vocab_table.lookup(tgt), tf.int32)) */
static vg_code map_lookup2(vg_graph *fg, const vg_output *a, int na, vg_output *o, int *no, void *p) {
    const pipe_ctx *c = p;
    (void)na;
    o[0] = lookup_i32(fg, c->src_table, a[0]);
    o[1] = lookup_i32(fg, c->tgt_table, a[1]);
    *no = 2;
    return VG_OK;
}

/* lambda src, tgt: (src, tf.concat(([tgt_sos_id], tgt), 0), tf.concat((tgt, [tgt_eos_id]), 0)) */
static vg_code map_sos_eos(vg_graph *fg, const vg_output *a, int na, vg_output *o, int *no, void *p) {
    const pipe_ctx *c = p;
    (void)na;
    vg_output sos = vg_reshape_c(fg, vg_dataset_capture(fg, c->tgt_sos_id, NULL), (const int64_t[]){1}, 1, NULL);
    vg_output eos = vg_reshape_c(fg, vg_dataset_capture(fg, c->tgt_eos_id, NULL), (const int64_t[]){1}, 1, NULL);
    o[0] = a[0];
    o[1] = vg_concat_c(fg, (vg_output[]){sos, a[1]}, 2, 0, NULL);
    o[2] = vg_concat_c(fg, (vg_output[]){a[1], eos}, 2, 0, NULL);
    *no = 3;
    return VG_OK;
}

/* lambda src, tgt_in, tgt_out: (src, tgt_in, tgt_out, tf.size(src), tf.size(tgt_in)) */
static vg_code map_lengths(vg_graph *fg, const vg_output *a, int na, vg_output *o, int *no, void *p) {
    (void)na, (void)p;
    o[0] = a[0], o[1] = a[1], o[2] = a[2];
    o[3] = vg_size(fg, a[0], NULL);
    o[4] = vg_size(fg, a[1], NULL);
    *no = 5;
    return VG_OK;
}

static vg_output eos_id(vg_graph *g, const vg_lookup_table *t) {
    /* tf.cast(vocab_table.lookup(tf.constant(eos)), tf.int32) */
    return vg_cast(g, vg_lookup_table_lookup(g, t, vg_const_string(g, NMT_EOS, NULL), NULL), VG_INT32, NULL);
}

static void fill_input(vg_graph *g, vg_output ds, nmt_batched_input *out, bool infer) {
    vg_op *init = NULL;
    vg_output it = vg_make_initializable_iterator(g, ds, &init, NULL);
    vg_op *next = vg_iterator_get_next(g, it, NULL);
    memset(out, 0, sizeof *out);
    out->initializer = init;
    if (!next) return;
    out->source = vg_out(next, 0);
    if (infer) {
        out->source_sequence_length = vg_out(next, 1);
    } else {
        out->target_input = vg_out(next, 1);
        out->target_output = vg_out(next, 2);
        out->source_sequence_length = vg_out(next, 3);
        out->target_sequence_length = vg_out(next, 4);
    }
}

typedef struct batch_ctx {
    int64_t batch_size, src_pad_len;
    vg_output src_eos_id, tgt_eos_id; /* in the outer graph */
    int64_t num_buckets, src_max_len;
} batch_ctx;

/* batching_func: padded_batch(batch_size, padded_shapes=([None], [None], [None], [], []),
 * padding_values=(src_eos_id, tgt_eos_id, tgt_eos_id, 0, 0)); the source is padded to
 * src_max_len (see README: the attention memory needs a static length). The padding
 * values are given in x's graph (captured inside reduce_func). */
static vg_output batching_func(vg_graph *g, vg_output x, const batch_ctx *b, vg_output src_eos_id,
                               vg_output tgt_eos_id) {
    vg_shape shapes[5] = {vg_shape_make((const int64_t[]){b->src_pad_len > 0 ? b->src_pad_len : -1}, 1),
                          vg_shape_make((const int64_t[]){-1}, 1), vg_shape_make((const int64_t[]){-1}, 1),
                          vg_shape_make(NULL, 0), vg_shape_make(NULL, 0)};
    vg_output pad[5] = {src_eos_id, tgt_eos_id, tgt_eos_id, vg_const_i32(g, 0, NULL), vg_const_i32(g, 0, NULL)};
    return vg_dataset_padded_batch(g, x, b->batch_size, shapes, pad, false, NULL);
}

/* key_func(unused_1, unused_2, unused_3, src_len, tgt_len):
 *   bucket_width = (src_max_len + num_buckets - 1) // num_buckets if src_max_len else 10
 *   bucket_id = tf.maximum(src_len // bucket_width, tgt_len // bucket_width)
 *   return tf.to_int64(tf.minimum(num_buckets, bucket_id)) */
static vg_code bucket_key_func(vg_graph *fg, const vg_output *a, int na, vg_output *o, int *no, void *p) {
    const batch_ctx *b = p;
    (void)na;
    int64_t width = b->src_max_len > 0 ? (b->src_max_len + b->num_buckets - 1) / b->num_buckets : 10;
    vg_output w = vg_const_i32(fg, (int32_t)width, "bucket_width");
    vg_output id = vg_maximum(fg, vg_floor_div(fg, a[3], w, NULL), vg_floor_div(fg, a[4], w, NULL), NULL);
    o[0] = vg_cast(fg, vg_minimum(fg, vg_const_i32(fg, (int32_t)b->num_buckets, NULL), id, NULL), VG_INT64, NULL);
    *no = 1;
    return vg_graph_status(fg, NULL);
}

/* reduce_func(unused_key, windowed_data): batching_func(windowed_data) */
static vg_code bucket_reduce_func(vg_graph *fg, const vg_output *a, int na, vg_output *o, int *no, void *p) {
    const batch_ctx *b = p;
    (void)na;
    o[0] = batching_func(fg, a[1], b, vg_dataset_capture(fg, b->src_eos_id, NULL),
                         vg_dataset_capture(fg, b->tgt_eos_id, NULL));
    *no = 1;
    return vg_graph_status(fg, NULL);
}

vg_code nmt_get_iterator(vg_graph *g, vg_output src_dataset, vg_output tgt_dataset, const vg_lookup_table *src_table,
                         const vg_lookup_table *tgt_table, int64_t batch_size, int64_t random_seed,
                         int64_t num_buckets, int64_t src_max_len, int64_t tgt_max_len, int64_t output_buffer_size,
                         int64_t src_pad_len, nmt_batched_input *out) {
    pipe_ctx ctx = {0}, *c = &ctx; /* the map functions are built now (vg_dataset_map calls them at once) */
    if (output_buffer_size <= 0) output_buffer_size = batch_size * 1000;
    vg_output src_eos_id = eos_id(g, src_table);
    c->src_table = src_table, c->tgt_table = tgt_table;
    c->tgt_sos_id = vg_cast(g, vg_lookup_table_lookup(g, tgt_table, vg_const_string(g, NMT_SOS, NULL), NULL),
                            VG_INT32, NULL);
    c->tgt_eos_id = eos_id(g, tgt_table);
    c->src_max_len = src_max_len, c->tgt_max_len = tgt_max_len;

    vg_output ds = vg_dataset_zip(g, (vg_output[]){src_dataset, tgt_dataset}, 2, NULL);
    /* shard(1, 0) and skip(skip_count) of the Python are no-ops here (see README) */
    ds = vg_dataset_shuffle(g, ds, output_buffer_size, random_seed, true, NULL);
    ds = vg_dataset_map(g, ds, map_split2, NULL, NULL);
    ds = vg_dataset_filter(g, ds, filter_nonempty, NULL, NULL);
    if (src_max_len > 0) ds = vg_dataset_map(g, ds, map_src_max_len, c, NULL);
    if (tgt_max_len > 0) ds = vg_dataset_map(g, ds, map_tgt_max_len, c, NULL);
    ds = vg_dataset_map(g, ds, map_lookup2, c, NULL);
    ds = vg_dataset_map(g, ds, map_sos_eos, c, NULL);
    ds = vg_dataset_map(g, ds, map_lengths, NULL, NULL);
    batch_ctx bc = {batch_size, src_pad_len, src_eos_id, c->tgt_eos_id, num_buckets, src_max_len};
    if (num_buckets > 1) /* tf.contrib.data.group_by_window(key_func, reduce_func, window_size=batch_size) */
        ds = vg_dataset_group_by_window(g, ds, bucket_key_func, bucket_reduce_func, batch_size, NULL, &bc, NULL);
    else
        ds = batching_func(g, ds, &bc, src_eos_id, c->tgt_eos_id);
    fill_input(g, ds, out, false);
    return vg_graph_status(g, NULL);
}

int64_t nmt_src_pad_len(const nmt_hparams *hp, nmt_mode mode) {
    if (!hp->attention[0]) return -1;
    if (mode == NMT_TRAIN || hp->src_max_len_infer <= 0) return hp->src_max_len;
    return hp->src_max_len_infer;
}

/* lambda src: tf.string_split([src]).values */
static vg_code map_split1(vg_graph *fg, const vg_output *a, int na, vg_output *o, int *no, void *p) {
    (void)na, (void)p;
    o[0] = split_values(fg, a[0]);
    *no = 1;
    return VG_OK;
}
static vg_code map_lookup1(vg_graph *fg, const vg_output *a, int na, vg_output *o, int *no, void *p) {
    const pipe_ctx *c = p;
    (void)na;
    o[0] = lookup_i32(fg, c->src_table, a[0]);
    *no = 1;
    return VG_OK;
}
static vg_code map_src_len(vg_graph *fg, const vg_output *a, int na, vg_output *o, int *no, void *p) {
    (void)na, (void)p;
    o[0] = a[0];
    o[1] = vg_size(fg, a[0], NULL);
    *no = 2;
    return VG_OK;
}

vg_code nmt_get_infer_iterator(vg_graph *g, vg_output src_dataset, const vg_lookup_table *src_table,
                               int64_t batch_size, int64_t src_max_len, int64_t src_pad_len, nmt_batched_input *out) {
    pipe_ctx ctx = {0}, *c = &ctx;
    c->src_table = src_table, c->src_max_len = src_max_len;
    vg_output src_eos_id = eos_id(g, src_table);
    vg_output ds = vg_dataset_map(g, src_dataset, map_split1, NULL, NULL);
    if (src_max_len > 0) ds = vg_dataset_map(g, ds, map_src_max_len, c, NULL);
    ds = vg_dataset_map(g, ds, map_lookup1, c, NULL);
    ds = vg_dataset_map(g, ds, map_src_len, NULL, NULL);
    vg_shape shapes[2] = {vg_shape_make((const int64_t[]){src_pad_len > 0 ? src_pad_len : -1}, 1),
                          vg_shape_make(NULL, 0)};
    vg_output pad[2] = {src_eos_id, vg_const_i32(g, 0, NULL)};
    ds = vg_dataset_padded_batch(g, ds, batch_size, shapes, pad, false, NULL);
    fill_input(g, ds, out, true);
    return vg_graph_status(g, NULL);
}
