/*
 * input.c - TF1's queue-based input pipeline (tensorflow/python/training/input.py):
 * range_input_producer (with limit_epochs), batch and shuffle_batch.
 *
 * Graph layout and op names are TF's, e.g. for range_input_producer(name NULL):
 *   input_producer/range/{start,limit,delta}, input_producer/range (Range),
 *   input_producer/RandomShuffle, input_producer/limit_epochs/Const,
 *   input_producer/limit_epochs/epochs (local int64 variable),
 *   input_producer/limit_epochs/CountUpTo, input_producer/limit_epochs (Identity),
 *   input_producer (FIFOQueueV2), input_producer/input_producer_EnqueueMany,
 *   input_producer/input_producer_Close, input_producer/input_producer_Close_1;
 * and for batch: batch/fifo_queue, batch/fifo_queue_enqueue, batch/n, batch
 * (QueueDequeueManyV2). The "fraction_of_N_full" summaries are not added.
 */
#include "train_util.h"
#include "vigil/queue.h"
#include "vigil/reader.h"
#include "vigil/variables.h"
#include <stdio.h>

/* A TF name scope whose own name may later be given to an op ("batch/" + an op
 * "batch", as TF's name_scope(...) as name + op(name=name)): the unique full name is
 * written to full, and pushed verbatim (not yet marked as used). *base gets its last
 * component, the name to give that op from the enclosing scope. */
static void open_scope(vg_graph *g, const char *name, char *full, size_t len, const char **base) {
    vg_graph_unique_name(g, name, full, len);
    vg__train_push_verbatim(g, full);
    const char *slash = strrchr(full, '/');
    *base = slash ? slash + 1 : full;
}

/* tf.train.limit_epochs: Identity(tensor) that first runs CountUpTo on a local
 * "epochs" counter, so the run after num_epochs of them fails with OUT_OF_RANGE. */
static vg_output limit_epochs(vg_graph *g, vg_output tensor, int64_t num_epochs) {
    char full[1024];
    const char *base;
    open_scope(g, "limit_epochs", full, sizeof full, &base);
    vg_output zero = vg_const_i64(g, 0, "Const");
    vg_variable epochs = vg_variable_new(g, "epochs", zero, VG_VAR_LOCAL);
    vg_op_builder *b = vg_op_builder_new(g, "CountUpTo", "CountUpTo");
    vg_op_builder_add_input(b, epochs.ref);
    vg_op_builder_set_attr_int(b, "limit", num_epochs);
    vg_op *counter = vg_op_builder_finish(b);
    vg_graph_pop_scope(g);
    if (!counter) return (vg_output){NULL, 0};
    vg_graph_push_control_deps(g, &counter, 1);
    vg_output out = vg_identity(g, tensor, base);
    vg_graph_pop_control_deps(g);
    return out;
}

/* The rest of TF's input_producer, inside the producer's scope full (pushed; popped
 * here): x (dtype dt) shuffled, limited to num_epochs, then enqueue_many'd into a
 * FIFOQueue named base (a queue runner added for it). The queue, or a NULL op. */
static vg_output input_producer(vg_graph *g, vg_output x, vg_dtype dt, bool shuffle, int64_t seed,
                                int64_t num_epochs, int capacity, const char *full, const char *base) {
    if (shuffle) {
        int64_t s1, s2;
        vg_graph_get_seed(g, seed, &s1, &s2);
        x = vg_random_shuffle(g, x, s1, s2, "RandomShuffle");
    }
    if (num_epochs > 0) x = limit_epochs(g, x, num_epochs);
    vg_graph_pop_scope(g);
    vg_shape elem = vg_shape_make(NULL, 0);
    vg_output q = vg_fifo_queue(g, &dt, &elem, 1, capacity, base);
    vg__train_push_verbatim(g, full);
    vg_op *enq = vg_queue_enqueue_many(g, q, &x, 1, NULL);
    if (enq) vg_add_queue_runner(g, q, &enq, 1);
    vg_graph_pop_scope(g);
    return enq ? q : (vg_output){NULL, 0};
}

vg_output vg_range_input_producer(vg_graph *g, int64_t limit, int64_t num_epochs, bool shuffle, int64_t seed,
                                  int capacity, const char *name) {
    vg_output fail = {NULL, 0};
    if (limit < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "range_input_producer: limit must be >= 0, got %lld",
                           (long long)limit);
        return fail;
    }
    if (num_epochs < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "num_epochs must be > 0 not %lld.", (long long)num_epochs);
        return fail;
    }
    char full[1024], rng[1100];
    const char *base;
    open_scope(g, name ? name : "input_producer", full, sizeof full, &base);
    /* math_ops.range(limit): int32 (int64 when it does not fit) */
    vg_dtype dt = limit > INT32_MAX ? VG_INT64 : VG_INT32;
    vg_graph_unique_name(g, "range", rng, sizeof rng);
    strcat(rng, "/");
    vg_graph_push_scope(g, rng);
    vg_output start = vg_const_fill(g, dt, NULL, 0, 0, "start");
    vg_output lim = vg_const_fill(g, dt, NULL, 0, (double)limit, "limit");
    vg_output delta = vg_const_fill(g, dt, NULL, 0, 1, "delta");
    vg_graph_pop_scope(g);
    vg_output x = vg_range(g, start, lim, delta, "range");
    return input_producer(g, x, dt, shuffle, seed, num_epochs, capacity, full, base);
}

/* _shapes(): every tensor's shape (without the batch dim for enqueue_many) must be
 * fully defined. */
static vg_code batch_shapes(vg_graph *g, const char *what, const vg_output *tensors, int n, bool enqueue_many,
                            bool dynamic_pad, vg_dtype *types, vg_shape *shapes) {
    for (int i = 0; i < n; i++) {
        if (!tensors[i].op) return vg_graph_status(g, NULL) ? vg_graph_status(g, NULL) : VG_INVALID_ARGUMENT;
        types[i] = vg_output_dtype(tensors[i]);
        vg_shape s = vg_output_shape(tensors[i]);
        char buf[128];
        if (enqueue_many) {
            if (s.ndims == 0)
                return vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                                          "%s: enqueue_many needs tensors of rank >= 1; tensor %d is a scalar",
                                          what, i);
            if (s.ndims > 0) {
                memmove(s.dims, s.dims + 1, sizeof(int64_t) * (size_t)(s.ndims - 1));
                s.ndims--;
            }
        }
        if (dynamic_pad && s.ndims < 0)
            return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: dynamic_pad needs tensors of known rank; tensor %d has "
                                      "unknown rank", what, i);
        if (!dynamic_pad && !vg_shape_is_fully_defined(&s))
            return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: All shapes must be fully defined: tensor %d has %s",
                                      what, i, vg_shape_str(&s, buf, sizeof buf));
        shapes[i] = s;
    }
    return VG_OK;
}

/* The shared body of batch and shuffle_batch. */
/* The shared body of batch, shuffle_batch and their _join forms: nlists lists of n
 * tensors (tensors[l * n + i]), one enqueue op each; num_threads threads per enqueue op
 * (the join forms: one). */
static vg_code build_batch_ex(vg_graph *g, const char *what, const vg_output *tensors, int nlists, int n, int batch_size,
                              int num_threads, int capacity, bool shuffle, int min_after_dequeue, int64_t seed,
                              bool enqueue_many, bool dynamic_pad, bool allow_smaller, const char *name,
                              vg_output *outputs);
static vg_code build_batch(vg_graph *g, const char *what, const vg_output *tensors, int n, int batch_size,
                           int num_threads, int capacity, bool shuffle, int min_after_dequeue, int64_t seed,
                           bool enqueue_many, const char *name, vg_output *outputs) {
    return build_batch_ex(g, what, tensors, 1, n, batch_size, num_threads, capacity, shuffle, min_after_dequeue, seed,
                          enqueue_many, false, false, name, outputs);
}

static vg_code build_batch_ex(vg_graph *g, const char *what, const vg_output *tensors, int nlists, int n, int batch_size,
                              int num_threads, int capacity, bool shuffle, int min_after_dequeue, int64_t seed,
                              bool enqueue_many, bool dynamic_pad, bool allow_smaller, const char *name,
                              vg_output *outputs) {
    if (!outputs) return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: outputs is NULL", what);
    for (int i = 0; i < n; i++) outputs[i] = (vg_output){NULL, 0};
    if (n < 1 || !tensors || nlists < 1)
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Expected at least one tensor in %s().", what);
    if (nlists > 64) return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: at most 64 tensor lists", what);
    if (n > 64) return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: at most 64 tensors", what);
    if (batch_size < 1 || num_threads < 1)
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: batch_size and num_threads must be >= 1", what);
    if (shuffle && capacity <= min_after_dequeue)
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "capacity %d must be bigger than min_after_dequeue %d.",
                                  capacity, min_after_dequeue);
    vg_dtype types[64];
    vg_shape shapes[64];
    vg_code rc = batch_shapes(g, what, tensors, n, enqueue_many, dynamic_pad, types, shapes);
    if (rc != VG_OK) return rc;
    /* _validate_join: every list has the same dtypes; with dynamic_pad the shapes merge */
    for (int l = 1; l < nlists; l++) {
        vg_dtype t2[64];
        vg_shape s2[64];
        if ((rc = batch_shapes(g, what, tensors + (size_t)l * n, n, enqueue_many, dynamic_pad, t2, s2)) != VG_OK) return rc;
        for (int i = 0; i < n; i++) {
            bool same = t2[i] == types[i] && s2[i].ndims == shapes[i].ndims;
            for (int d = 0; same && d < s2[i].ndims; d++) {
                if (s2[i].dims[d] != shapes[i].dims[d]) {
                    if (!dynamic_pad) same = false;
                    else shapes[i].dims[d] = -1;
                }
            }
            if (!same)
                return vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                                          "%s: tensor %d of list %d does not match list 0's dtype and shape", what, i, l);
        }
    }
    char full[1024];
    const char *base;
    open_scope(g, name ? name : what, full, sizeof full, &base);
    vg_output q;
    if (shuffle) {
        int64_t s1, s2;
        vg_graph_get_seed(g, seed, &s1, &s2);
        q = vg_random_shuffle_queue(g, types, shapes, n, capacity, min_after_dequeue, s1, s2, NULL);
    } else if (dynamic_pad) {
        q = vg_padding_fifo_queue(g, types, shapes, n, capacity, NULL);
    } else {
        q = vg_fifo_queue(g, types, shapes, n, capacity, NULL);
    }
    vg_op *enq = NULL, *deq = NULL;
    /* TF's _enqueue: [enqueue_op] * num_threads (the same op, one thread each);
     * _enqueue_join: one enqueue op (and thread) per tensor list. */
    int nops = nlists > 1 ? nlists : num_threads;
    vg_op *ops_local[16], **ops = nops <= 16 ? ops_local : vg_malloc(sizeof(vg_op *) * (size_t)nops);
    if (!ops) {
        vg_graph_pop_scope(g);
        return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory building %s", what);
    }
    for (int l = 0; l < nlists; l++) {
        const vg_output *ts = tensors + (size_t)l * n;
        enq = enqueue_many ? vg_queue_enqueue_many(g, q, ts, n, NULL) : vg_queue_enqueue(g, q, ts, n, NULL);
        if (nlists > 1) ops[l] = enq;
    }
    if (nlists == 1)
        for (int i = 0; i < num_threads; i++) ops[i] = enq;
    if (enq) vg_add_queue_runner(g, q, ops, nops);
    if (ops != ops_local) vg_free(ops);
    vg_output nconst = vg_const_i32(g, batch_size, "n");
    vg_graph_pop_scope(g);
    if (enq) deq = allow_smaller ? vg_queue_dequeue_up_to(g, q, nconst, base) : vg_queue_dequeue_many(g, q, nconst, base);
    for (int i = 0; deq && i < n; i++) outputs[i] = vg_out(deq, i);
    rc = vg_graph_status(g, NULL);
    return rc ? rc : (deq ? VG_OK : VG_INTERNAL);
}

vg_code vg_batch(vg_graph *g, const vg_output *tensors, int n, int batch_size, int num_threads, int capacity,
                 bool enqueue_many, const char *name, vg_output *outputs) {
    return build_batch(g, "batch", tensors, n, batch_size, num_threads, capacity, false, 0, 0, enqueue_many, name,
                       outputs);
}

vg_code vg_shuffle_batch(vg_graph *g, const vg_output *tensors, int n, int batch_size, int capacity,
                         int min_after_dequeue, int num_threads, int64_t seed, bool enqueue_many, const char *name,
                         vg_output *outputs) {
    return build_batch(g, "shuffle_batch", tensors, n, batch_size, num_threads, capacity, true, min_after_dequeue,
                       seed, enqueue_many, name, outputs);
}

/* tf.train.string_input_producer: input_producer(string_tensor) with an Identity
 * under the producer's scope that first runs TF's Assert(Size > 0, [not_null_err])
 * (a constant empty tensor is also refused at build time, TF's ValueError). */
vg_output vg_string_input_producer(vg_graph *g, vg_output string_tensor, int64_t num_epochs, bool shuffle,
                                   int64_t seed, int capacity, const char *name) {
    vg_output fail = {NULL, 0};
    if (!string_tensor.op) {
        if (vg_graph_status(g, NULL) == VG_OK)
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "string_input_producer: NULL string_tensor");
        return fail;
    }
    vg_shape s = vg_output_shape(string_tensor);
    if (vg_output_dtype(string_tensor) != VG_STRING || (s.ndims >= 0 && s.ndims != 1)) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "string_input_producer: string_tensor must be a 1-D string tensor");
        return fail;
    }
    if (s.ndims == 1 && s.dims[0] == 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "string_input_producer requires a non-null input tensor");
        return fail;
    }
    if (num_epochs < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "num_epochs must be > 0 not %lld.", (long long)num_epochs);
        return fail;
    }
    char full[1024];
    const char *base;
    open_scope(g, name ? name : "input_producer", full, sizeof full, &base);
    vg_output size = vg_size(g, string_tensor, "Size");
    vg_output positive = vg_greater(g, size, vg_const_i32(g, 0, "Greater/y"), "Greater");
    vg_graph_push_scope(g, "Assert");
    vg_output msg = vg_const_string(g, "string_input_producer requires a non-null input tensor", "Const");
    vg_graph_pop_scope(g);
    vg_op *check = vg_assert(g, positive, &msg, 1, 3, "Assert/Assert");
    vg_output x = {NULL, 0};
    if (check) {
        vg_graph_push_control_deps(g, &check, 1);
        x = vg_identity(g, string_tensor, "Identity");
        vg_graph_pop_control_deps(g);
    }
    return input_producer(g, x, VG_STRING, shuffle, seed, num_epochs, capacity, full, base);
}

vg_code vg_batch_ex(vg_graph *g, const vg_output *tensors, int n, int batch_size, int num_threads, int capacity,
                    bool enqueue_many, bool dynamic_pad, bool allow_smaller_final_batch, const char *name,
                    vg_output *outputs) {
    return build_batch_ex(g, "batch", tensors, 1, n, batch_size, num_threads, capacity, false, 0, 0, enqueue_many,
                          dynamic_pad, allow_smaller_final_batch, name, outputs);
}

vg_code vg_shuffle_batch_ex(vg_graph *g, const vg_output *tensors, int n, int batch_size, int capacity,
                            int min_after_dequeue, int num_threads, int64_t seed, bool enqueue_many,
                            bool allow_smaller_final_batch, const char *name, vg_output *outputs) {
    return build_batch_ex(g, "shuffle_batch", tensors, 1, n, batch_size, num_threads, capacity, true, min_after_dequeue,
                          seed, enqueue_many, false, allow_smaller_final_batch, name, outputs);
}

vg_code vg_batch_join(vg_graph *g, const vg_output *tensors_list, int nlists, int n, int batch_size, int capacity,
                      bool enqueue_many, bool dynamic_pad, bool allow_smaller_final_batch, const char *name,
                      vg_output *outputs) {
    return build_batch_ex(g, "batch_join", tensors_list, nlists, n, batch_size, 1, capacity, false, 0, 0, enqueue_many,
                          dynamic_pad, allow_smaller_final_batch, name, outputs);
}

vg_code vg_shuffle_batch_join(vg_graph *g, const vg_output *tensors_list, int nlists, int n, int batch_size,
                              int capacity, int min_after_dequeue, int64_t seed, bool enqueue_many,
                              bool allow_smaller_final_batch, const char *name, vg_output *outputs) {
    return build_batch_ex(g, "shuffle_batch_join", tensors_list, nlists, n, batch_size, 1, capacity, true,
                          min_after_dequeue, seed, enqueue_many, false, allow_smaller_final_batch, name, outputs);
}

/* tf.train.match_filenames_once(pattern, name): under name_scope "matching_filenames",
 * MatchingFiles(pattern) and a local variable of that name with no fixed shape
 * (validate_shape=False) initialised with it; the value is its "<name>/read". */
vg_output vg_match_filenames_once(vg_graph *g, vg_output pattern, const char *name) {
    vg_output fail = {NULL, 0};
    if (!g) return fail;
    if (!pattern.op || vg_output_dtype(pattern) != VG_STRING) {
        if (vg_graph_status(g, NULL) == VG_OK)
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "match_filenames_once: pattern must be a string tensor");
        return fail;
    }
    char full[1024], sc[1100];
    const char *base;
    open_scope(g, name ? name : "matching_filenames", full, sizeof full, &base);
    vg_output files = vg_matching_files(g, pattern, "MatchingFiles");
    vg_graph_pop_scope(g);
    if (!files.op) return fail;
    /* vs.variable(name=scope, initial_value, trainable=False, validate_shape=False,
     * collections=[LOCAL_VARIABLES]): created in the init scope, absolute names */
    vg__train_enter_root(g);
    vg_output var = vg_variable_op(g, VG_STRING, NULL, -1, full);
    snprintf(sc, sizeof sc, "%s/", full);
    vg_graph_push_scope(g, sc);
    vg_output assign = var.op ? vg_assign(g, var, files, false, "Assign") : fail;
    vg_output read = var.op ? vg_identity(g, var, "read") : fail;
    vg_graph_pop_scope(g);
    vg__train_leave_root(g);
    if (!assign.op || !read.op) return fail;
    vg_status st;
    if (vg_variable_set_parts(var.op, assign.op, read, &st) != VG_OK) {
        vg_graph_set_error(g, st.code, "%s", st.msg);
        return fail;
    }
    if (vg_graph_add_to_collection(g, VG_LOCAL_VARIABLES, var) != VG_OK) return fail;
    return read;
}
