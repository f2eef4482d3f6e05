/*
 * seq2seq.c - tf.contrib.seq2seq's dynamic_decode (decoder.py), BasicDecoder
 * (basic_decoder.py) and the helpers (helper.py) of TF 1.15 on the public API.
 * Semantics and names in vigil/seq2seq.h.
 */
#include "train_util.h"
#include "vigil/seq2seq.h"
#include "vigil/ops_ext.h"
#include "vigil/variable_scope.h"
#include "vigil/train_lib.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static vg_output none(void) { return (vg_output){NULL, 0}; }

static vg_code fail(vg_graph *g, vg_status *st) {
    vg_code rc = vg_graph_status(g, st);
    return rc;
}

void vg_decoder_free(vg_decoder *d) {
    if (!d) return;
    if (d->free_user) d->free_user(d->user);
    free(d);
}

void vg_decoder_helper_free(vg_decoder_helper *h) {
    if (!h) return;
    if (h->free_user) h->free_user(h->user);
    free(h);
}

/* ------------------------------------------------------------------------ */
/* dynamic_decode */

/* loop variables: time, nout TensorArray flows, ns states, inputs, finished, lengths */
typedef struct dec_ctx {
    vg_decoder *d;
    int nout, ns;
    vg_output handles[VG_DECODER_MAX_OUTPUTS];
    bool impute;
} dec_ctx;

static vg_code dec_cond(vg_graph *g, const vg_output *v, int n, void *user, vg_output *pred) {
    (void)user;
    vg_output finished = v[n - 2];
    *pred = vg_logical_not(g, vg_reduce_all(g, finished, NULL, -1, false, "All"), "LogicalNot");
    return vg_graph_status(g, NULL);
}

static vg_code dec_body(vg_graph *g, const vg_output *v, int n, void *user, vg_output *outs) {
    dec_ctx *c = user;
    int nout = c->nout, ns = c->ns;
    vg_output time = v[0], inputs = v[1 + nout + ns], finished = v[n - 2], lengths = v[n - 1];
    const vg_output *state = v + 1 + nout;
    vg_output step_out[VG_DECODER_MAX_OUTPUTS], next_inputs = none(), dfin = none();
    vg_output *next_state = outs + 1 + nout;
    for (int i = 0; i < nout; i++) step_out[i] = none();
    vg_code rc = c->d->step(g, c->d->user, time, inputs, state, step_out, next_state, &next_inputs, &dfin);
    if (rc != VG_OK) return vg_graph_status(g, NULL) != VG_OK ? vg_graph_status(g, NULL) : rc;
    if (vg_graph_status(g, NULL) != VG_OK) return vg_graph_status(g, NULL);
    if (!next_inputs.op || !dfin.op)
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "dynamic_decode: the decoder's step gave no next inputs "
                                                          "or finished");
    for (int i = 0; i < nout; i++)
        if (!step_out[i].op)
            return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "dynamic_decode: the decoder's step gave no output %d", i);
    for (int i = 0; i < ns; i++)
        if (!next_state[i].op)
            return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "dynamic_decode: the decoder's step gave no state %d", i);
    vg_output next_finished = c->d->tracks_own_finished ? dfin : vg_logical_or(g, dfin, finished, "LogicalOr");
    /* next_sequence_lengths = where(logical_not(finished), fill(shape(lengths), time + 1), lengths) */
    vg_output t1 = vg_add(g, time, vg_const_i32(g, 1, "add/y"), "add");
    vg_output filled = vg_fill(g, vg_shape_op(g, lengths, VG_INT32, "Shape"), t1, "Fill");
    outs[n - 1] = vg_select(g, vg_logical_not(g, finished, "LogicalNot"), filled, lengths, "Select");
    outs[n - 2] = next_finished;
    for (int i = 0; i < nout; i++) {
        vg_output emit = step_out[i];
        if (c->impute) emit = vg_select(g, finished, vg_zeros_like(g, emit, "zeros_like"), emit, "Select");
        vg_tensor_array ta = {c->handles[i], v[1 + i], c->d->output_dtypes[i]};
        ta = vg_tensor_array_write(g, ta, time, emit, "TensorArrayWrite");
        outs[1 + i] = ta.flow;
    }
    if (c->impute)
        for (int i = 0; i < ns; i++) {
            vg_shape cur = vg_output_shape(state[i]);
            if (cur.ndims == 0) continue; /* pass_through: scalars are not copied */
            next_state[i] = vg_select(g, finished, state[i], next_state[i], "Select");
        }
    outs[1 + nout + ns] = next_inputs;
    outs[0] = t1;
    return vg_graph_status(g, NULL);
}

/* Batch dim k as TF's _shape(decoder.batch_size, ...) knows it statically: from the
 * first finished, inputs or state (-1 if none knows it), so that a loop that runs no
 * step still stacks its empty outputs with a fully defined element shape. */
static int64_t static_batch_dim(vg_output finished, vg_output inputs, vg_output state0, int k) {
    vg_output c[3] = {finished, inputs, state0};
    for (int i = 0; i < 3; i++) {
        vg_shape s = c[i].op ? vg_output_shape(c[i]) : vg_shape_unknown();
        if (s.ndims > k && s.dims[k] >= 0) return s.dims[k];
    }
    return -1;
}

vg_code vg_dynamic_decode(vg_graph *g, vg_decoder *d, const vg_dynamic_decode_options *o, vg_output *final_outputs,
                          vg_output *final_state, vg_output *final_sequence_lengths, vg_status *st) {
    if (!g) return vg_status_set(st, VG_INVALID_ARGUMENT, "dynamic_decode: NULL graph");
    if (vg_graph_status(g, NULL) != VG_OK) return fail(g, st);
    vg_dynamic_decode_options defaults = {0};
    if (!o) o = &defaults;
    if (!d || !final_outputs || !final_state || !d->initialize || !d->step || d->output_count < 1 ||
        d->output_count > VG_DECODER_MAX_OUTPUTS || d->state_count < 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "dynamic_decode: needs a decoder with initialize and step, 1..%d outputs and a state, and "
                           "arrays for the final outputs and state",
                           VG_DECODER_MAX_OUTPUTS);
        return fail(g, st);
    }
    if (o->maximum_iterations.op && vg_output_shape(o->maximum_iterations).ndims > 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "maximum_iterations must be a scalar");
        return fail(g, st);
    }
    int nout = d->output_count, ns = d->state_count, n = 1 + nout + ns + 3;
    int nfinal = d->final_output_count > 0 ? d->final_output_count : nout;
    if (nfinal > VG_DECODER_MAX_OUTPUTS) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "dynamic_decode: final_output_count above %d",
                           VG_DECODER_MAX_OUTPUTS);
        return fail(g, st);
    }
    vg_output *vars = calloc((size_t)(2 * n), sizeof(vg_output));
    if (!vars) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "dynamic_decode: out of memory");
        return fail(g, st);
    }
    vg_output *exits = vars + n;
    if (!vg_variable_scope_push(g, o->scope && *o->scope ? o->scope : "decoder", NULL)) {
        free(vars);
        return fail(g, st);
    }
    dec_ctx c;
    memset(&c, 0, sizeof c);
    c.d = d;
    c.nout = nout;
    c.ns = ns;
    c.impute = o->impute_finished;
    vg_output finished = none(), inputs = none();
    vg_code rc = d->initialize(g, d->user, &finished, &inputs, vars + 1 + nout);
    if (rc == VG_OK && vg_graph_status(g, NULL) == VG_OK) {
        if (!finished.op || !inputs.op)
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "dynamic_decode: initialize gave no finished or inputs");
        for (int i = 0; i < ns && vg_graph_status(g, NULL) == VG_OK; i++)
            if (!vars[1 + nout + i].op)
                vg_graph_set_error(g, VG_INVALID_ARGUMENT, "dynamic_decode: initialize gave no state %d", i);
    } else if (vg_graph_status(g, NULL) == VG_OK) {
        vg_graph_set_error(g, rc, "dynamic_decode: the decoder's initialize failed");
    }
    vg_output max_it = none();
    if (vg_graph_status(g, NULL) == VG_OK) {
        if (o->maximum_iterations.op) {
            max_it = vg_cast(g, o->maximum_iterations, VG_INT32, "maximum_iterations");
            finished = vg_logical_or(g, finished,
                                     vg_greater_equal(g, vg_const_i32(g, 0, "GreaterEqual/x"), max_it, "GreaterEqual"),
                                     "LogicalOr");
        }
        vars[0] = vg_const_i32(g, 0, "Const");
        for (int i = 0; i < nout; i++) {
            vg_shape es = d->output_shapes[i];
            int bd = d->batch_dims > 0 ? d->batch_dims : 1;
            int64_t dims[VG_MAX_DIMS];
            int nd = 0;
            for (int k = 0; k < bd && nd < VG_MAX_DIMS; k++) dims[nd++] = static_batch_dim(finished, inputs, vars[1 + nout], k);
            for (int k = 0; k < es.ndims && nd < VG_MAX_DIMS; k++) dims[nd++] = es.dims[k];
            vg_shape el = es.ndims >= 0 ? vg_shape_make(dims, nd) : vg_shape_unknown();
            vg_tensor_array ta = vg_tensor_array_new(g, d->output_dtypes[i], vg_const_i32(g, 0, "TensorArray/size"),
                                                     true, true, &el, "TensorArray");
            c.handles[i] = ta.handle;
            vars[1 + i] = ta.flow;
        }
        vars[1 + nout + ns] = inputs;
        vars[n - 2] = finished;
        vars[n - 1] = vg_zeros_like_dtype(g, finished, VG_INT32, "zeros_like");
    }
    if (vg_graph_status(g, NULL) == VG_OK) {
        vg_status ls;
        memset(&ls, 0, sizeof ls);
        rc = vg_while_loop(g, dec_cond, dec_body, &c, vars, n, NULL,
                           o->parallel_iterations > 0 ? o->parallel_iterations : 32, max_it, "while", exits, &ls);
        if (rc != VG_OK && vg_graph_status(g, NULL) == VG_OK) vg_graph_set_error(g, rc, "%s", ls.msg);
    }
    if (vg_graph_status(g, NULL) == VG_OK) {
        vg_output fo[VG_DECODER_MAX_OUTPUTS];
        for (int i = 0; i < VG_DECODER_MAX_OUTPUTS; i++) fo[i] = none();
        for (int i = 0; i < nout; i++) {
            vg_tensor_array ta = {c.handles[i], exits[1 + i], d->output_dtypes[i]};
            fo[i] = vg_tensor_array_stack(g, ta, "TensorArrayStack");
        }
        memcpy(final_state, exits + 1 + nout, sizeof(vg_output) * (size_t)ns);
        vg_output lengths = exits[n - 1];
        if (d->finalize) {
            rc = d->finalize(g, d->user, fo, final_state, lengths);
            if (rc != VG_OK && vg_graph_status(g, NULL) == VG_OK)
                vg_graph_set_error(g, rc, "dynamic_decode: the decoder's finalize failed");
        }
        for (int i = 0; i < nfinal && vg_graph_status(g, NULL) == VG_OK; i++) {
            final_outputs[i] = fo[i];
            if (o->output_time_major) continue;
            /* _transpose_batch_time: swap the first two dims */
            int r = fo[i].op ? vg_output_shape(fo[i]).ndims : -1;
            if (r < 2) {
                vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                                   "dynamic_decode: output %d needs a known rank >= 2 to be made batch-major", i);
                break;
            }
            int32_t perm[VG_MAX_DIMS];
            for (int k = 0; k < r && k < VG_MAX_DIMS; k++) perm[k] = k;
            perm[0] = 1;
            perm[1] = 0;
            final_outputs[i] = vg_transpose_c(g, fo[i], perm, r, "transpose");
        }
        if (final_sequence_lengths) *final_sequence_lengths = lengths;
    }
    vg_variable_scope_pop(g);
    free(vars);
    return fail(g, st);
}

/* ------------------------------------------------------------------------ */
/* helpers */

typedef struct helper_data {
    /* TrainingHelper */
    vg_tensor_array in_ta;
    vg_output seq, zero_inputs;
    /* embedding helpers */
    vg_output embedding, start_inputs;
    int32_t end_token;
    double temperature;
    int64_t seed;
    /* ScheduledEmbeddingTrainingHelper */
    vg_output sampling_probability;
    int64_t scheduling_seed;
} helper_data;

static vg_decoder_helper *helper_alloc(void) {
    vg_decoder_helper *h = calloc(1, sizeof *h);
    helper_data *hd = calloc(1, sizeof *hd);
    if (!h || !hd) {
        free(h);
        free(hd);
        return NULL;
    }
    h->user = hd;
    h->free_user = free;
    h->sample_ids_dtype = VG_INT32;
    h->sample_ids_shape = vg_shape_make(NULL, 0);
    return h;
}

static vg_code argmax_sample(vg_graph *g, void *user, vg_output time, vg_output outputs, const vg_output *state,
                             int nstate, vg_output *ids) {
    (void)user, (void)time, (void)state, (void)nstate;
    int r = vg_output_shape(outputs).ndims;
    *ids = vg_argmax(g, outputs, r > 0 ? r - 1 : -1, VG_INT32, "ArgMax");
    return vg_graph_status(g, NULL);
}

/* A built helper with its callbacks (argmax sampling), or NULL (h freed) when the graph
 * has an error. */
static vg_decoder_helper *helper_done(vg_graph *g, vg_decoder_helper *h,
                                      vg_code (*initialize)(vg_graph *, void *, vg_output *, vg_output *),
                                      vg_code (*next_inputs)(vg_graph *, void *, vg_output, vg_output,
                                                             const vg_output *, int, vg_output, vg_output *,
                                                             vg_output *, vg_output *)) {
    h->initialize = initialize;
    h->sample = argmax_sample;
    h->next_inputs = next_inputs;
    if (vg_graph_status(g, NULL) != VG_OK) {
        vg_decoder_helper_free(h);
        return NULL;
    }
    return h;
}

/* The true branch of this file's conds: Identity of the tensor its user data begins
 * with (the first member of helper_branch and emb_branch). */
static vg_code pass_branch(vg_graph *g, void *user, vg_output *outs) {
    outs[0] = vg_identity(g, *(const vg_output *)user, "Identity");
    return vg_graph_status(g, NULL);
}

/* The user data of a helper's cond: pass (pass_branch's), the helper's data and the
 * other branch's tensor (the TensorArray read's index, or the sampled ids). */
typedef struct helper_branch {
    vg_output pass;
    helper_data *hd;
    vg_output x;
} helper_branch;

static vg_code read_ta_branch(vg_graph *g, void *user, vg_output *outs) {
    helper_branch *rb = user;
    outs[0] = vg_tensor_array_read(g, rb->hd->in_ta, rb->x, "TensorArrayReadV3");
    return vg_graph_status(g, NULL);
}

/* cond(all(finished), zero_inputs, input_tas.read(index)) */
static vg_output training_inputs(vg_graph *g, helper_data *hd, vg_output finished, vg_output index) {
    vg_output all = vg_reduce_all(g, finished, NULL, -1, false, "All");
    helper_branch rb = {hd->zero_inputs, hd, index};
    vg_output out = none();
    vg_cond(g, all, pass_branch, read_ta_branch, &rb, 1, &out, "cond", NULL);
    vg_shape zs = vg_output_shape(hd->zero_inputs);
    if (out.op && zs.ndims == 2 && zs.dims[1] >= 0) out = vg_reshape_c(g, out, (int64_t[]){-1, zs.dims[1]}, 2, NULL);
    return out;
}

static vg_code training_initialize(vg_graph *g, void *user, vg_output *finished, vg_output *next_inputs) {
    helper_data *hd = user;
    vg_graph_push_scope(g, "TrainingHelperInitialize");
    *finished = vg_equal(g, vg_const_i32(g, 0, "Equal/x"), hd->seq, "Equal");
    *next_inputs = training_inputs(g, hd, *finished, vg_const_i32(g, 0, "index"));
    vg_graph_pop_scope(g);
    return vg_graph_status(g, NULL);
}

static vg_code training_next(vg_graph *g, void *user, vg_output time, vg_output outputs, const vg_output *state,
                             int nstate, vg_output ids, vg_output *finished, vg_output *next_inputs,
                             vg_output *next_state) {
    (void)outputs, (void)ids;
    helper_data *hd = user;
    vg_graph_push_scope(g, "TrainingHelperNextInputs");
    vg_output next_time = vg_add(g, time, vg_const_i32(g, 1, "add/y"), "add");
    *finished = vg_greater_equal(g, next_time, hd->seq, "GreaterEqual");
    *next_inputs = training_inputs(g, hd, *finished, next_time);
    for (int i = 0; i < nstate; i++) next_state[i] = state[i];
    vg_graph_pop_scope(g);
    return vg_graph_status(g, NULL);
}

vg_decoder_helper *vg_training_helper_new(vg_graph *g, vg_output inputs, vg_output sequence_length, bool time_major,
                                          const char *name) {
    if (!g || vg_graph_status(g, NULL) != VG_OK) return NULL;
    if (!inputs.op || !sequence_length.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "TrainingHelper: needs inputs and sequence_length");
        return NULL;
    }
    vg_shape s = vg_output_shape(inputs), ls = vg_output_shape(sequence_length);
    if (s.ndims != 3 || s.dims[2] < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "TrainingHelper: inputs must be rank 3 with a known depth");
        return NULL;
    }
    if (ls.ndims != 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Expected sequence_length to be a vector, but received shape: rank %d",
                           ls.ndims);
        return NULL;
    }
    vg_decoder_helper *h = helper_alloc();
    if (!h) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "TrainingHelper: out of memory");
        return NULL;
    }
    helper_data *hd = h->user;
    char scope[256];
    vg_graph_unique_name(g, name && *name ? name : "TrainingHelper", scope, sizeof scope);
    char ns[260];
    snprintf(ns, sizeof ns, "%s/", scope);
    vg_graph_push_scope(g, ns);
    vg_output x = vg_identity(g, inputs, "inputs");
    if (!time_major) x = vg_transpose_c(g, x, (int32_t[]){1, 0, 2}, 3, "transpose");
    vg_shape xs = vg_output_shape(x);
    vg_output T = vg_gather(g, vg_shape_op(g, x, VG_INT32, "Shape"), vg_const_i32(g, 0, "time_axis"), 0, "time_steps");
    vg_shape el = vg_shape_make((int64_t[]){xs.dims[1], xs.dims[2]}, 2);
    hd->in_ta = vg_tensor_array_new(g, vg_output_dtype(x), T, false, true, &el, "TensorArray");
    hd->in_ta = vg_tensor_array_unstack(g, hd->in_ta, x, "TensorArrayUnstack");
    hd->seq = vg_identity(g, vg_output_dtype(sequence_length) == VG_INT32 ? sequence_length
                                                                          : vg_cast(g, sequence_length, VG_INT32, NULL),
                          "sequence_length");
    vg_output x0 = vg_reshape_c(g, vg_slice_c(g, x, (int64_t[]){0, 0, 0}, (int64_t[]){1, -1, -1}, 3, "Slice"),
                                (int64_t[]){-1, xs.dims[2]}, 2, "Reshape");
    hd->zero_inputs = vg_zeros_like(g, x0, "zeros_like");
    vg_graph_pop_scope(g);
    return helper_done(g, h, training_initialize, training_next);
}

static vg_code embedding_initialize(vg_graph *g, void *user, vg_output *finished, vg_output *next_inputs) {
    helper_data *hd = user;
    /* finished = tile([False], [batch_size]) */
    vg_output bs = vg_reshape_c(g, vg_size(g, hd->seq, "Size"), (int64_t[]){1}, 1,
                                "Reshape");
    *finished = vg_tile(g, vg_const_array(g, VG_BOOL, (int64_t[]){1}, 1, (bool[]){false}, "Const"), bs, "Tile");
    *next_inputs = hd->start_inputs;
    return vg_graph_status(g, NULL);
}

typedef struct emb_branch {
    vg_output start_inputs; /* first: pass_branch's */
    vg_output embedding, ids;
} emb_branch;

static vg_code lookup_branch(vg_graph *g, void *user, vg_output *outs) {
    emb_branch *eb = user;
    outs[0] = vg_embedding_lookup(g, eb->embedding, eb->ids, NULL);
    return vg_graph_status(g, NULL);
}

vg_output vg__train_embedding_next_inputs(vg_graph *g, vg_output finished, vg_output start_inputs, vg_output embedding,
                                          vg_output ids) {
    vg_output all = vg_reduce_all(g, finished, NULL, -1, false, "All");
    emb_branch eb = {start_inputs, embedding, ids};
    vg_output next = none();
    vg_cond(g, all, pass_branch, lookup_branch, &eb, 1, &next, "cond", NULL);
    return next;
}

static vg_code embedding_next(vg_graph *g, void *user, vg_output time, vg_output outputs, const vg_output *state,
                              int nstate, vg_output ids, vg_output *finished, vg_output *next_inputs,
                              vg_output *next_state) {
    (void)time, (void)outputs;
    helper_data *hd = user;
    *finished = vg_equal(g, ids, vg_const_i32(g, hd->end_token, "end_token"), "Equal");
    *next_inputs = vg__train_embedding_next_inputs(g, *finished, hd->start_inputs, hd->embedding, ids);
    vg_shape ss = vg_output_shape(hd->start_inputs);
    if (next_inputs->op && ss.ndims == 2 && ss.dims[1] >= 0)
        *next_inputs = vg_reshape_c(g, *next_inputs, (int64_t[]){-1, ss.dims[1]}, 2, NULL);
    for (int i = 0; i < nstate; i++) next_state[i] = state[i];
    return vg_graph_status(g, NULL);
}

static vg_code categorical_sample(vg_graph *g, void *user, vg_output time, vg_output outputs, const vg_output *state,
                                  int nstate, vg_output *ids) {
    (void)time, (void)state, (void)nstate;
    helper_data *hd = user;
    vg_output logits = outputs;
    if (hd->temperature > 0)
        logits = vg_div(g, logits, vg_const_fill(g, vg_output_dtype(logits), NULL, 0, hd->temperature, "temperature"),
                        "truediv");
    vg_output s = vg_multinomial(g, logits, 1, hd->seed, VG_INT32, "multinomial");
    *ids = vg_reshape_c(g, s, (int64_t[]){-1}, 1, "Reshape");
    return vg_graph_status(g, NULL);
}

static vg_decoder_helper *embedding_helper(vg_graph *g, vg_output embedding, vg_output start_tokens, int32_t end_token,
                                           const char *what) {
    if (!g || vg_graph_status(g, NULL) != VG_OK) return NULL;
    if (!embedding.op || !start_tokens.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: needs an embedding and start_tokens", what);
        return NULL;
    }
    if (vg_output_shape(start_tokens).ndims != 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "start_tokens must be a vector");
        return NULL;
    }
    vg_decoder_helper *h = helper_alloc();
    if (!h) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "%s: out of memory", what);
        return NULL;
    }
    helper_data *hd = h->user;
    hd->embedding = embedding;
    hd->seq = vg_output_dtype(start_tokens) == VG_INT32 ? start_tokens
                                                        : vg_cast(g, start_tokens, VG_INT32, "start_tokens");
    hd->end_token = end_token;
    hd->start_inputs = vg_embedding_lookup(g, embedding, hd->seq, NULL);
    return helper_done(g, h, embedding_initialize, embedding_next);
}

vg_decoder_helper *vg_greedy_embedding_helper_new(vg_graph *g, vg_output embedding, vg_output start_tokens,
                                                  int32_t end_token) {
    return embedding_helper(g, embedding, start_tokens, end_token, "GreedyEmbeddingHelper");
}

vg_decoder_helper *vg_sample_embedding_helper_new(vg_graph *g, vg_output embedding, vg_output start_tokens,
                                                  int32_t end_token, double softmax_temperature, int64_t seed) {
    vg_decoder_helper *h = embedding_helper(g, embedding, start_tokens, end_token, "SampleEmbeddingHelper");
    if (!h) return NULL;
    helper_data *hd = h->user;
    hd->temperature = softmax_temperature;
    hd->seed = seed;
    h->sample = categorical_sample;
    return h;
}

/* ScheduledEmbeddingTrainingHelper (helper.py): sample ids drawn from the outputs
 * where a Bernoulli(sampling_probability) says so, -1 elsewhere; the next inputs are
 * the sampled ids' embeddings there and TrainingHelper's inputs elsewhere. */
static vg_code scheduled_sample(vg_graph *g, void *user, vg_output time, vg_output outputs, const vg_output *state,
                                int nstate, vg_output *ids) {
    (void)time, (void)state, (void)nstate;
    helper_data *hd = user;
    vg_graph_push_scope(g, "ScheduledEmbeddingTrainingHelperSample");
    vg_output bshape = vg_reshape_c(g, vg_size(g, hd->seq, "Size"), (int64_t[]){1}, 1, "Reshape");
    int64_t s1 = 0, s2 = 0;
    vg_graph_get_seed(g, hd->scheduling_seed, &s1, &s2);
    vg_output u = vg_random_uniform(g, bshape, vg_output_dtype(hd->sampling_probability), s1, s2, "random_uniform");
    vg_output select = vg_less(g, u, hd->sampling_probability, "Less");
    vg_output drawn = vg_reshape_c(g, vg_multinomial(g, outputs, 1, hd->seed, VG_INT32, "multinomial"),
                                   (int64_t[]){-1}, 1, "Reshape_1");
    vg_output minus1 = vg_fill(g, bshape, vg_const_i32(g, -1, "Fill/value"), "Fill");
    *ids = vg_select(g, select, drawn, minus1, "Select");
    vg_graph_pop_scope(g);
    return vg_graph_status(g, NULL);
}

static vg_code maybe_sample_branch(vg_graph *g, void *user, vg_output *outs) {
    helper_branch *sb = user; /* pass: the base inputs, x: the sampled ids */
    /* where sample_ids > -1 the embedding of the id, elsewhere the base inputs (TF
     * gathers and scatters the two sets of rows; the values are the same) */
    vg_output sampling = vg_greater(g, sb->x, vg_const_i32(g, -1, "Greater/y"), "Greater");
    vg_output safe = vg_maximum(g, sb->x, vg_const_i32(g, 0, "Maximum/y"), "Maximum");
    vg_output emb = vg_embedding_lookup(g, sb->hd->embedding, safe, NULL);
    outs[0] = vg_select(g, sampling, emb, sb->pass, "Select");
    return vg_graph_status(g, NULL);
}

static vg_code scheduled_next(vg_graph *g, void *user, vg_output time, vg_output outputs, const vg_output *state,
                              int nstate, vg_output ids, vg_output *finished, vg_output *next_inputs,
                              vg_output *next_state) {
    helper_data *hd = user;
    vg_output base = none();
    vg_code rc = training_next(g, user, time, outputs, state, nstate, ids, finished, &base, next_state);
    if (rc != VG_OK) return rc;
    vg_graph_push_scope(g, "ScheduledEmbeddingTrainingHelperNextInputs");
    vg_output all = vg_reduce_all(g, *finished, NULL, -1, false, "All");
    helper_branch sb = {base, hd, ids};
    *next_inputs = none();
    vg_cond(g, all, pass_branch, maybe_sample_branch, &sb, 1, next_inputs, "cond", NULL);
    vg_shape bs = vg_output_shape(base);
    if (next_inputs->op && bs.ndims == 2 && bs.dims[1] >= 0)
        *next_inputs = vg_reshape_c(g, *next_inputs, (int64_t[]){-1, bs.dims[1]}, 2, NULL);
    vg_graph_pop_scope(g);
    return vg_graph_status(g, NULL);
}

vg_decoder_helper *vg_scheduled_embedding_training_helper_new(vg_graph *g, vg_output inputs, vg_output sequence_length,
                                                              vg_output embedding, vg_output sampling_probability,
                                                              bool time_major, int64_t seed, int64_t scheduling_seed,
                                                              const char *name) {
    if (!g || vg_graph_status(g, NULL) != VG_OK) return NULL;
    if (!embedding.op || !sampling_probability.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "ScheduledEmbeddingTrainingHelper: needs an embedding and a "
                                                   "sampling_probability");
        return NULL;
    }
    int r = vg_output_shape(sampling_probability).ndims;
    if (r != 0 && r != 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "sampling_probability must be either a scalar or a vector. saw shape: rank %d", r);
        return NULL;
    }
    vg_dtype pd = vg_output_dtype(sampling_probability);
    if (pd != VG_FLOAT && pd != VG_DOUBLE) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "sampling_probability must be float or double");
        return NULL;
    }
    vg_decoder_helper *h = vg_training_helper_new(g, inputs, sequence_length, time_major,
                                                  name && *name ? name : "ScheduledEmbeddingSamplingWrapper");
    if (!h) return NULL;
    helper_data *hd = h->user;
    hd->embedding = embedding;
    hd->sampling_probability = sampling_probability;
    hd->seed = seed;
    hd->scheduling_seed = scheduling_seed;
    h->sample = scheduled_sample;
    h->next_inputs = scheduled_next;
    return h;
}

/* ------------------------------------------------------------------------ */
/* BasicDecoder */

typedef struct basic_dec {
    vg_rnn_cell *cell;
    vg_decoder_helper *helper;
    vg_layer *layer;
    int ns;
    vg_output *init_state;
} basic_dec;

static void basic_free(void *u) {
    basic_dec *b = u;
    if (!b) return;
    free(b->init_state);
    free(b);
}

static vg_code basic_initialize(vg_graph *g, void *user, vg_output *finished, vg_output *inputs, vg_output *state) {
    basic_dec *b = user;
    vg_code rc = b->helper->initialize(g, b->helper->user, finished, inputs);
    if (rc != VG_OK) return rc;
    memcpy(state, b->init_state, sizeof(vg_output) * (size_t)b->ns);
    return vg_graph_status(g, NULL);
}

static vg_code basic_step(vg_graph *g, void *user, vg_output time, vg_output inputs, const vg_output *state,
                          vg_output *outputs, vg_output *next_state, vg_output *next_inputs, vg_output *finished) {
    basic_dec *b = user;
    vg_output *cell_state = calloc((size_t)b->ns, sizeof(vg_output));
    if (!cell_state) return vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "BasicDecoder: out of memory");
    vg_graph_push_scope(g, "BasicDecoderStep");
    vg_output out = none(), ids = none();
    vg_code rc = vg_rnn_cell_call(b->cell, g, inputs, state, &out, cell_state);
    if (rc == VG_OK && b->layer) out = vg_layer_apply(b->layer, g, out, none());
    if (rc == VG_OK && vg_graph_status(g, NULL) == VG_OK)
        rc = b->helper->sample(g, b->helper->user, time, out, cell_state, b->ns, &ids);
    if (rc == VG_OK && vg_graph_status(g, NULL) == VG_OK)
        rc = b->helper->next_inputs(g, b->helper->user, time, out, cell_state, b->ns, ids, finished, next_inputs,
                                    next_state);
    vg_graph_pop_scope(g);
    free(cell_state);
    outputs[0] = out;
    outputs[1] = ids;
    return rc != VG_OK ? rc : vg_graph_status(g, NULL);
}

vg_decoder *vg_basic_decoder_new(vg_rnn_cell *cell, vg_decoder_helper *helper, const vg_output *initial_state,
                                 vg_layer *output_layer) {
    if (!cell || !helper || !initial_state || !helper->initialize || !helper->sample || !helper->next_inputs)
        return NULL;
    if (output_layer && output_layer->config.kind != VG_LAYER_DENSE) return NULL;
    int ns = vg_rnn_cell_state_count(cell);
    for (int i = 0; i < ns; i++)
        if (!initial_state[i].op) return NULL;
    vg_decoder *d = calloc(1, sizeof *d);
    basic_dec *b = calloc(1, sizeof *b);
    vg_output *init = calloc((size_t)ns, sizeof(vg_output));
    if (!d || !b || !init) {
        free(d);
        free(b);
        free(init);
        return NULL;
    }
    memcpy(init, initial_state, sizeof(vg_output) * (size_t)ns);
    b->cell = cell;
    b->helper = helper;
    b->layer = output_layer;
    b->ns = ns;
    b->init_state = init;
    int64_t units = output_layer ? output_layer->config.units : vg_rnn_cell_output_size(cell);
    d->output_count = 2;
    d->output_dtypes[0] = vg_output_dtype(initial_state[0]);
    d->output_shapes[0] = vg_shape_make(&units, 1);
    d->output_dtypes[1] = helper->sample_ids_dtype;
    d->output_shapes[1] = helper->sample_ids_shape;
    d->state_count = ns;
    d->batch_dims = 1;
    d->initialize = basic_initialize;
    d->step = basic_step;
    d->free_user = basic_free;
    d->user = b;
    return d;
}

/* ------------------------------------------------------------------------ */
/* sequence_loss with sum_over_* (loss.py) */

static vg_output div_no_nan(vg_graph *g, vg_output a, vg_output b) {
    vg_output is0 = vg_equal(g, b, vg_zeros_like(g, b, NULL), "Equal");
    vg_output safe = vg_select(g, is0, vg_ones_like(g, b, NULL), b, "Select");
    vg_output q = vg_div(g, a, safe, "div_no_nan");
    return vg_select(g, is0, vg_zeros_like(g, q, NULL), q, "Select_1");
}

/* cast(count_nonzero(weights, axis), dt) */
static vg_output count_nonzero(vg_graph *g, vg_output w, const int32_t *axis, int naxes, vg_dtype dt) {
    vg_output nz = vg_not_equal(g, w, vg_zeros_like(g, w, NULL), "NotEqual");
    return vg_cast(g, vg_reduce_sum(g, vg_cast(g, nz, VG_INT64, "Cast"), axis, naxes, false, "count_nonzero"), dt,
                   "Cast_1");
}

vg_output vg_sequence_loss_ex(vg_graph *g, vg_output logits, vg_output targets, vg_output weights,
                              const vg_sequence_loss_options *o) {
    vg_sequence_loss_options d = {0};
    if (!o) o = &d;
    bool avg_time = !o->no_average_across_timesteps, avg_batch = !o->no_average_across_batch;
    if (!g || vg_graph_status(g, NULL) != VG_OK) return none();
    if (!logits.op || !targets.op || !weights.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "sequence_loss: NULL logits, targets or weights");
        return none();
    }
    if (vg_output_shape(logits).ndims != 3) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Logits must be a [batch_size x sequence_length x logits] tensor");
        return none();
    }
    if (vg_output_shape(targets).ndims != 2) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Targets must be a [batch_size x sequence_length] tensor");
        return none();
    }
    if (vg_output_shape(weights).ndims != 2) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Weights must be a [batch_size x sequence_length] tensor");
        return none();
    }
    if (avg_time && o->sum_over_timesteps) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "average_across_timesteps and sum_over_timesteps cannot be set to True at same time.");
        return none();
    }
    if (avg_batch && o->sum_over_batch) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "average_across_batch and sum_over_batch cannot be set to True at same time.");
        return none();
    }
    bool avg = avg_time || avg_batch;
    bool sum = o->sum_over_timesteps || o->sum_over_batch;
    if (avg || !sum)
        return vg_sequence_loss(g, logits, targets, weights, avg_time, avg_batch,
                                o->name);
    vg_output ce = vg_sequence_loss(g, logits, targets, weights, false, false, o->name);
    if (!ce.op) return none();
    vg_dtype dt = vg_output_dtype(ce);
    char scope[256], ns[260];
    vg_graph_unique_name(g, o->name && *o->name ? o->name : "sequence_loss", scope, sizeof scope);
    snprintf(ns, sizeof ns, "%s/", scope);
    vg_graph_push_scope(g, ns);
    vg_output out;
    if (o->sum_over_timesteps && o->sum_over_batch) {
        out = div_no_nan(g, vg_reduce_sum(g, ce, NULL, -1, false, "Sum"), count_nonzero(g, weights, NULL, -1, dt));
    } else {
        int32_t ax = o->sum_over_batch ? 0 : 1;
        out = div_no_nan(g, vg_reduce_sum(g, ce, &ax, 1, false, "Sum"), count_nonzero(g, weights, &ax, 1, dt));
    }
    vg_graph_pop_scope(g);
    return out;
}
