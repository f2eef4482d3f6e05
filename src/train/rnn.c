/*
 * rnn.c - TF1's RNN cells (rnn_cell_impl.py, contrib/rnn lstm_ops.py) and static_rnn
 * (rnn.py) on the public API. Semantics and names in vigil/rnn.h.
 *
 * Scopes, as TF's Layer-based cells open them (tensorflow/python/layers/base.py):
 * a cell's first call captures a variable scope of its own, tf.variable_scope(None,
 * default_name=<name>) in the current variable scope ("rnn/basic_lstm_cell", a second
 * cell "basic_lstm_cell_1"); every call re-enters that scope object (reuse=True once
 * built) without a new name scope and puts its ops into the name scope the capture
 * opened (its original_name_scope). The variables are made by tf.get_variable in that
 * scope on the first call. MultiRNNCell (an RNNCell: RNNCell.__call__ re-enters the
 * variable scope current at its first call, then the Layer steps) opens
 * tf.variable_scope("cell_<i>") around each child; DropoutWrapper and ResidualWrapper
 * call the wrapped cell directly. The drivers open tf.variable_scope(scope or "rnn").
 */
#include "variable_internal.h"
#include "vigil/rnn.h"
#include "vigil/ops_ext.h"
#include "vigil/variable_scope.h"
#include "vigil/train_lib.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum cell_kind { K_BASIC_RNN, K_BASIC_LSTM, K_LSTM, K_GRU, K_BLOCK, K_FUSED, K_MULTI, K_DROPOUT, K_RESIDUAL, K_CUSTOM };

#define VS_MAX 512

struct vg_rnn_cell {
    enum cell_kind kind;
    char name[64];
    int64_t units, num_proj;
    float forget_bias, cell_clip, proj_clip;
    bool tuple, peep;
    vg_activation act;
    /* the Layer scope (TF's _scope), captured by the first call in scope_graph; for
     * MultiRNNCell also RNNCell.__call__'s captured current scope (rnn_scope) */
    vg_vscope *scope, *rnn_scope;
    vg_graph *scope_graph;
    uint64_t scope_serial;
    /* MultiRNNCell built by vg_dynamic_rnn before its loop: the name scopes that build
     * opened (rnn_scope's, then cell_<i>'s), which the first real call takes over as
     * TF's first call (in the loop) opens them */
    char **pending_ns;
    vg_initializer kinit; /* the kernels' initializer: vg_init_default() = TF's None */
    bool has_binit;       /* GRUCell's bias_initializer */
    vg_initializer binit;
    /* variables (read outputs), set by the first call */
    bool built;
    vg_output kernel, bias, kernel2, bias2, wi, wf, wo, proj;
    /* MultiRNNCell children, or the wrapped cell in kids[0] */
    vg_rnn_cell **kids;
    int nkids;
    double keep_in, keep_out, keep_state;
    int64_t seed;
    /* K_CUSTOM: the user's definition (state_shapes copied into shapes) */
    vg_rnn_cell_def def;
    vg_shape *shapes;
};

static vg_output none(void) { return (vg_output){NULL, 0}; }

static vg_rnn_cell *cell_new(enum cell_kind k, const char *name, int64_t units) {
    if (units <= 0 && k != K_MULTI && k != K_DROPOUT && k != K_RESIDUAL) return NULL;
    vg_rnn_cell *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->kind = k;
    snprintf(c->name, sizeof c->name, "%s", name);
    c->units = units;
    c->forget_bias = 1.0f;
    c->tuple = true;
    c->act = VG_ACT_TANH;
    c->kinit = vg_init_default();
    return c;
}

vg_rnn_cell *vg_basic_rnn_cell_new(int64_t num_units, vg_activation activation) {
    vg_rnn_cell *c = cell_new(K_BASIC_RNN, "basic_rnn_cell", num_units);
    if (c && activation != VG_ACT_NONE) c->act = activation;
    return c;
}

vg_rnn_cell *vg_basic_lstm_cell_new(int64_t num_units, float forget_bias, bool state_is_tuple) {
    vg_rnn_cell *c = cell_new(K_BASIC_LSTM, "basic_lstm_cell", num_units);
    if (!c) return NULL;
    c->forget_bias = forget_bias;
    c->tuple = state_is_tuple;
    return c;
}

vg_rnn_cell *vg_lstm_cell_new(int64_t num_units, const vg_lstm_cell_options *o) {
    vg_lstm_cell_options d = {0};
    if (!o) o = &d;
    if (o->num_proj < 0) return NULL;
    vg_rnn_cell *c = cell_new(K_LSTM, "lstm_cell", num_units);
    if (!c) return NULL;
    c->peep = o->use_peepholes;
    c->cell_clip = o->cell_clip;
    c->num_proj = o->num_proj;
    c->proj_clip = o->proj_clip;
    c->forget_bias = o->zero_forget_bias ? 0.0f : o->forget_bias != 0.0f ? o->forget_bias : 1.0f; /* TF's 1.0 */
    c->tuple = !o->concat_state;
    if (o->initializer) c->kinit = *o->initializer;
    return c;
}

vg_rnn_cell *vg_gru_cell_new(int64_t num_units) { return cell_new(K_GRU, "gru_cell", num_units); }

vg_rnn_cell *vg_gru_cell_new_ex(int64_t num_units, vg_activation activation, const vg_initializer *kernel_initializer,
                                const vg_initializer *bias_initializer) {
    vg_rnn_cell *c = cell_new(K_GRU, "gru_cell", num_units);
    if (!c) return NULL;
    if (activation != VG_ACT_NONE) c->act = activation;
    if (kernel_initializer) c->kinit = *kernel_initializer;
    if (bias_initializer && bias_initializer->kind != VG_INIT_DEFAULT && bias_initializer->kind != VG_INIT_UNSET) {
        c->has_binit = true;
        c->binit = *bias_initializer;
    }
    return c;
}

static vg_rnn_cell *block_new(enum cell_kind k, const char *name, int64_t num_units, float forget_bias,
                              float cell_clip, bool use_peephole) {
    vg_rnn_cell *c = cell_new(k, name, num_units);
    if (!c) return NULL;
    c->forget_bias = forget_bias;
    c->cell_clip = cell_clip > 0 ? cell_clip : -1.0f;
    c->peep = use_peephole;
    return c;
}

vg_rnn_cell *vg_lstm_block_cell_new(int64_t num_units, float forget_bias, float cell_clip, bool use_peephole) {
    return block_new(K_BLOCK, "lstm_cell", num_units, forget_bias, cell_clip, use_peephole);
}

vg_rnn_cell *vg_lstm_block_fused_cell_new(int64_t num_units, float forget_bias, float cell_clip, bool use_peephole) {
    return block_new(K_FUSED, "lstm_fused_cell", num_units, forget_bias, cell_clip, use_peephole);
}

static vg_rnn_cell *wrap(enum cell_kind k, const char *name, vg_rnn_cell *const *cells, int n) {
    bool ok = n > 0 && cells;
    for (int i = 0; ok && i < n; i++)
        if (!cells[i] || cells[i]->kind == K_FUSED) ok = false;
    vg_rnn_cell *c = ok ? cell_new(k, name, 0) : NULL;
    if (c) c->kids = malloc(sizeof(vg_rnn_cell *) * (size_t)n);
    if (!c || !c->kids) {
        free(c);
        for (int i = 0; cells && i < n; i++) vg_rnn_cell_free(cells[i]);
        return NULL;
    }
    memcpy(c->kids, cells, sizeof(vg_rnn_cell *) * (size_t)n);
    c->nkids = n;
    return c;
}

vg_rnn_cell *vg_multi_rnn_cell_new(vg_rnn_cell *const *cells, int n) { return wrap(K_MULTI, "multi_rnn_cell", cells, n); }

vg_rnn_cell *vg_dropout_wrapper_new(vg_rnn_cell *cell, double input_keep_prob, double output_keep_prob,
                                    double state_keep_prob, int64_t seed) {
    if (!(input_keep_prob > 0 && input_keep_prob <= 1) || !(output_keep_prob > 0 && output_keep_prob <= 1) ||
        !(state_keep_prob > 0 && state_keep_prob <= 1)) {
        vg_rnn_cell_free(cell);
        return NULL;
    }
    vg_rnn_cell *c = wrap(K_DROPOUT, "dropout_wrapper", &cell, 1);
    if (!c) return NULL;
    c->keep_in = input_keep_prob;
    c->keep_out = output_keep_prob;
    c->keep_state = state_keep_prob;
    c->seed = seed;
    return c;
}

vg_rnn_cell *vg_residual_wrapper_new(vg_rnn_cell *cell) { return wrap(K_RESIDUAL, "residual_wrapper", &cell, 1); }

vg_rnn_cell *vg_custom_rnn_cell_new(const vg_rnn_cell_def *def) {
    if (!def || !def->call || def->state_count < 1 || !def->state_shapes || def->output_size <= 0) return NULL;
    for (int i = 0; i < def->state_count; i++) {
        vg_shape sh = def->state_shapes[i];
        if (sh.ndims < 0 || sh.ndims >= VG_MAX_DIMS) return NULL;
        for (int k = 0; k < sh.ndims; k++)
            if (sh.dims[k] < 0) return NULL;
    }
    vg_rnn_cell *c = cell_new(K_CUSTOM, def->name && *def->name ? def->name : "rnn_cell", def->output_size);
    if (!c) return NULL;
    c->shapes = malloc(sizeof(vg_shape) * (size_t)def->state_count);
    if (!c->shapes) {
        free(c);
        return NULL;
    }
    memcpy(c->shapes, def->state_shapes, sizeof(vg_shape) * (size_t)def->state_count);
    c->def = *def;
    c->def.state_shapes = c->shapes;
    c->def.name = NULL;
    return c;
}

static void drop_pending(vg_rnn_cell *c) {
    if (!c->pending_ns) return;
    for (int i = 0; i <= c->nkids; i++) free(c->pending_ns[i]);
    free(c->pending_ns);
    c->pending_ns = NULL;
}

void vg_rnn_cell_free(vg_rnn_cell *c) {
    if (!c) return;
    drop_pending(c);
    for (int i = 0; i < c->nkids; i++) vg_rnn_cell_free(c->kids[i]);
    free(c->kids);
    free(c->shapes);
    free(c);
}

void vg_rnn_cell_set_name(vg_rnn_cell *c, const char *name) {
    if (c && name && *name) snprintf(c->name, sizeof c->name, "%s", name);
}

/* ------------------------------------------------------------------------ */
/* state structure */

static bool is_lstm(const vg_rnn_cell *c) {
    return c->kind == K_BASIC_LSTM || c->kind == K_LSTM || c->kind == K_BLOCK || c->kind == K_FUSED;
}

static int64_t h_size(const vg_rnn_cell *c) { return c->kind == K_LSTM && c->num_proj > 0 ? c->num_proj : c->units; }

int vg_rnn_cell_state_count(const vg_rnn_cell *c) {
    if (!c) return 0;
    if (c->kind == K_MULTI) {
        int n = 0;
        for (int i = 0; i < c->nkids; i++) n += vg_rnn_cell_state_count(c->kids[i]);
        return n;
    }
    if (c->kind == K_DROPOUT || c->kind == K_RESIDUAL) return vg_rnn_cell_state_count(c->kids[0]);
    if (c->kind == K_CUSTOM) return c->def.state_count;
    return is_lstm(c) && c->tuple ? 2 : 1;
}

int64_t vg_rnn_cell_state_size(const vg_rnn_cell *c, int i) {
    if (!c || i < 0) return -1;
    if (c->kind == K_MULTI) {
        for (int k = 0; k < c->nkids; k++) {
            int n = vg_rnn_cell_state_count(c->kids[k]);
            if (i < n) return vg_rnn_cell_state_size(c->kids[k], i);
            i -= n;
        }
        return -1;
    }
    if (c->kind == K_DROPOUT || c->kind == K_RESIDUAL) return vg_rnn_cell_state_size(c->kids[0], i);
    if (i >= vg_rnn_cell_state_count(c)) return -1;
    if (c->kind == K_CUSTOM) {
        int64_t n = 1;
        for (int k = 0; k < c->shapes[i].ndims; k++) n *= c->shapes[i].dims[k];
        return n;
    }
    if (!is_lstm(c)) return c->units;
    if (!c->tuple) return c->units + h_size(c);
    return i == 0 ? c->units : h_size(c);
}

vg_shape vg_rnn_cell_state_shape(const vg_rnn_cell *c, int i) {
    if (!c || i < 0 || i >= vg_rnn_cell_state_count(c)) return vg_shape_unknown();
    if (c->kind == K_MULTI) {
        for (int k = 0; k < c->nkids; k++) {
            int n = vg_rnn_cell_state_count(c->kids[k]);
            if (i < n) return vg_rnn_cell_state_shape(c->kids[k], i);
            i -= n;
        }
        return vg_shape_unknown();
    }
    if (c->kind == K_DROPOUT || c->kind == K_RESIDUAL) return vg_rnn_cell_state_shape(c->kids[0], i);
    if (c->kind == K_CUSTOM) return c->shapes[i];
    int64_t sz = vg_rnn_cell_state_size(c, i);
    return vg_shape_make(&sz, 1);
}

int64_t vg_rnn_cell_output_size(const vg_rnn_cell *c) {
    if (!c) return -1;
    if (c->kind == K_MULTI) return vg_rnn_cell_output_size(c->kids[c->nkids - 1]);
    if (c->kind == K_DROPOUT || c->kind == K_RESIDUAL) return vg_rnn_cell_output_size(c->kids[0]);
    return h_size(c);
}

/* Whether flat state i is the c of an LSTM state tuple (DropoutWrapper leaves it alone). */
static bool state_is_c(const vg_rnn_cell *c, int i) {
    if (c->kind == K_MULTI) {
        for (int k = 0; k < c->nkids; k++) {
            int n = vg_rnn_cell_state_count(c->kids[k]);
            if (i < n) return state_is_c(c->kids[k], i);
            i -= n;
        }
        return false;
    }
    if (c->kind == K_DROPOUT || c->kind == K_RESIDUAL) return state_is_c(c->kids[0], i);
    return is_lstm(c) && c->tuple && i == 0;
}

vg_code vg_rnn_cell_zero_state(vg_rnn_cell *c, vg_graph *g, int64_t batch_size, vg_output batch_tensor, vg_dtype dt,
                               vg_output *state) {
    if (!g) return VG_INVALID_ARGUMENT;
    if (!c || !state || (batch_size < 0 && !batch_tensor.op))
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                                  "zero_state: needs a cell, a state array and a batch size (or batch tensor)");
    int n = vg_rnn_cell_state_count(c);
    vg_graph_push_scope(g, c->kind == K_MULTI ? "MultiRNNCellZeroState" : "zeros");
    for (int i = 0; i < n; i++) {
        vg_shape sh = vg_rnn_cell_state_shape(c, i);
        if (batch_size >= 0) {
            int64_t d[VG_MAX_DIMS] = {batch_size};
            for (int k = 0; k < sh.ndims; k++) d[k + 1] = sh.dims[k];
            state[i] = vg_const_fill(g, dt, d, sh.ndims + 1, 0.0, "zeros");
        } else {
            int32_t rest[VG_MAX_DIMS];
            for (int k = 0; k < sh.ndims; k++) rest[k] = (int32_t)sh.dims[k];
            vg_output parts[2] = {vg_reshape_c(g, vg_cast(g, batch_tensor, VG_INT32, NULL), (int64_t[]){1}, 1, NULL),
                                  vg_const_i32_vec(g, rest, sh.ndims, NULL)};
            vg_output shape = vg_concat_c(g, parts, 2, 0, "concat");
            state[i] = vg_zeros(g, shape, dt, "zeros");
        }
    }
    vg_graph_pop_scope(g);
    return vg_graph_status(g, NULL);
}

/* ------------------------------------------------------------------------ */
/* variables */

/* x's dimension d as a scalar of type dt (computed at run time). */
static vg_output dim_scalar(vg_graph *g, vg_output x, int d, vg_dtype dt) {
    vg_output shp = vg_shape_op(g, x, dt, NULL);
    return vg_reshape_c(g, vg_slice_c(g, shp, (int64_t[]){d}, (int64_t[]){1}, 1, NULL), NULL, 0, NULL);
}

static vg_output var1(vg_graph *g, const char *name, vg_dtype dt, int64_t n, vg_initializer init) {
    vg_variable v = vg_get_variable(g, name, dt, &n, 1, init, VG_VAR_TRAINABLE);
    return v.read;
}

static vg_output var2(vg_graph *g, const char *name, vg_dtype dt, int64_t r, int64_t cols, vg_initializer init) {
    int64_t d[2] = {r, cols};
    vg_variable v = vg_get_variable(g, name, dt, d, 2, init, VG_VAR_TRAINABLE);
    return v.read;
}

/* Creates the cell's variables (its build()) for inputs of depth `depth`, under the
 * cell's variable scope entered by layer_enter. Initializers as TF's: the kernels and
 * peepholes take the cell's initializer (None by default: the variable scope's, else
 * glorot_uniform); biases zeros (GRU gates 1.0, the contrib block cells' Const 0.0). */
static vg_code build(vg_rnn_cell *c, vg_graph *g, int64_t depth, vg_dtype dt) {
    if (c->built) return VG_OK;
    vg_initializer k = c->kinit;
    int64_t U = c->units, in = depth + h_size(c);
    switch (c->kind) {
    case K_BASIC_RNN:
        c->kernel = var2(g, "kernel", dt, in, U, k);
        c->bias = var1(g, "bias", dt, U, vg_init_zeros());
        break;
    case K_BASIC_LSTM:
    case K_LSTM:
        c->kernel = var2(g, "kernel", dt, in, 4 * U, k);
        c->bias = var1(g, "bias", dt, 4 * U, vg_init_zeros());
        if (c->peep) {
            c->wf = var1(g, "w_f_diag", dt, U, k);
            c->wi = var1(g, "w_i_diag", dt, U, k);
            c->wo = var1(g, "w_o_diag", dt, U, k);
        }
        if (c->kind == K_LSTM && c->num_proj > 0) c->proj = var2(g, "projection/kernel", dt, U, c->num_proj, k);
        break;
    case K_BLOCK:
    case K_FUSED:
        c->kernel = var2(g, "kernel", dt, in, 4 * U, k);
        c->bias = var1(g, "bias", dt, 4 * U, vg_init_constant(0.0));
        if (c->peep) {
            c->wi = var1(g, "w_i_diag", dt, U, k);
            c->wf = var1(g, "w_f_diag", dt, U, k);
            c->wo = var1(g, "w_o_diag", dt, U, k);
        }
        break;
    case K_GRU:
        c->kernel = var2(g, "gates/kernel", dt, in, 2 * U, k);
        c->bias = var1(g, "gates/bias", dt, 2 * U, c->has_binit ? c->binit : vg_init_constant(1.0));
        c->kernel2 = var2(g, "candidate/kernel", dt, in, U, k);
        c->bias2 = var1(g, "candidate/bias", dt, U, c->has_binit ? c->binit : vg_init_zeros());
        break;
    default:
        break;
    }
    c->built = vg_graph_status(g, NULL) == VG_OK;
    return vg_graph_status(g, NULL);
}

/* Forgets what a cell captured in another graph (a cell reused for a new graph builds
 * its variables there again). */
static void bind_graph(vg_rnn_cell *c, vg_graph *g) {
    uint64_t serial = vg__train_scope_store_serial(g);
    if (c->scope_graph == g && c->scope_serial == serial) return;
    c->scope_graph = g;
    c->scope_serial = serial;
    c->scope = c->rnn_scope = NULL;
    drop_pending(c);
    c->built = false;
}

/* Layer.__call__'s scopes: _set_scope (the first call captures tf.variable_scope(None,
 * default_name=<name>)), then the captured scope re-entered with reuse=True once built
 * and no new name scope, then the name scope it first opened. layer_leave undoes it. */
static vg_code layer_enter(vg_rnn_cell *c, vg_graph *g) {
    bind_graph(c, g);
    if (!c->scope) {
        vg_variable_scope_opts o;
        memset(&o, 0, sizeof o);
        o.default_name = c->name;
        if (!vg_variable_scope_push(g, NULL, &o)) return vg_graph_status(g, NULL);
        c->scope = vg_get_variable_scope(g);
        vg_variable_scope_pop(g);
        if (!c->scope) return vg_graph_status(g, NULL);
    }
    vg_variable_scope_opts o;
    memset(&o, 0, sizeof o);
    o.no_name_scope = true;
    o.reuse = c->built ? VG_REUSE_TRUE : VG_REUSE_INHERIT;
    if (!vg_variable_scope_enter(g, c->scope, &o)) return vg_graph_status(g, NULL);
    const char *ons = vg_vscope_original_name_scope(c->scope);
    vg_graph_push_scope(g, *ons ? ons : "/");
    return vg_graph_status(g, NULL);
}

static void layer_leave(vg_graph *g) {
    vg_graph_pop_scope(g);
    vg_variable_scope_pop(g);
}

/* ------------------------------------------------------------------------ */
/* cell bodies */

static vg_output activate(vg_graph *g, vg_output x, vg_activation act) {
    switch (act) {
    case VG_ACT_RELU: return vg_relu(g, x, "Relu");
    case VG_ACT_SIGMOID: return vg_sigmoid(g, x, "Sigmoid");
    default: return vg_tanh(g, x, "Tanh");
    }
}

static vg_output linear(vg_graph *g, vg_output a, vg_output b, vg_output kernel, vg_output bias) {
    vg_output xh = vg_concat_c(g, (vg_output[]){a, b}, 2, 1, "concat");
    return vg_bias_add(g, vg_matmul(g, xh, kernel, false, false, "MatMul"), bias, "BiasAdd");
}

static vg_output clip(vg_graph *g, vg_output x, float v, vg_dtype dt) {
    if (!(v > 0)) return x;
    return vg_clip_by_value(g, x, vg_const_fill(g, dt, NULL, 0, -v, NULL), vg_const_fill(g, dt, NULL, 0, v, NULL), NULL);
}

static vg_output scalar(vg_graph *g, vg_dtype dt, double v, const char *name) {
    return vg_const_fill(g, dt, NULL, 0, v, name);
}

/* tf.nn.dropout(x, keep_prob) as TF 1.15: x * (1 / keep) * (uniform >= 1 - keep). */
static vg_output dropout(vg_graph *g, vg_output x, double keep, int64_t seed) {
    if (keep >= 1.0) return x;
    vg_graph_push_scope(g, "dropout");
    vg_dtype dt = vg_output_dtype(x);
    vg_output shape = vg_shape_op(g, x, VG_INT32, "Shape");
    vg_output u = vg_random_uniform_range(g, shape, 0.0, 1.0, dt, seed, "random_uniform");
    vg_output mask = vg_cast(g, vg_greater_equal(g, u, scalar(g, dt, 1.0 - keep, "rate"), "GreaterEqual"), dt, "Cast");
    vg_output y = vg_mul(g, vg_mul(g, x, scalar(g, dt, 1.0 / keep, "truediv"), "mul"), mask, "mul_1");
    vg_graph_pop_scope(g);
    return y;
}

static vg_code cell_step(vg_rnn_cell *c, vg_graph *g, vg_output x, int64_t depth, vg_dtype dt, const vg_output *state,
                         vg_output *out, vg_output *ns, bool build_only);

static vg_code call_lstm(vg_rnn_cell *c, vg_graph *g, vg_output x, const vg_output *state, vg_output *out,
                         vg_output *ns, vg_dtype dt) {
    int64_t U = c->units, P = h_size(c);
    vg_output cp = state[0], hp = c->tuple ? state[1] : vg_out(NULL, 0); /* one state tensor unless a tuple */
    if (!c->tuple) {
        vg_op *sp = vg_split_v(g, state[0], (int32_t[]){(int32_t)U, (int32_t)P}, 2, 1, "split");
        if (!sp) return vg_graph_status(g, NULL);
        cp = vg_out(sp, 0);
        hp = vg_out(sp, 1);
    }
    vg_output cnew, hnew;
    if (c->kind == K_BLOCK) {
        vg_output zeros = c->peep ? none() : vg_const_fill(g, dt, &U, 1, 0.0, "zeros");
        vg_op *op = vg_lstm_block_cell(g, x, cp, hp, c->kernel, c->peep ? c->wi : zeros, c->peep ? c->wf : zeros,
                                       c->peep ? c->wo : zeros, c->bias, c->forget_bias, c->cell_clip, c->peep,
                                       "LSTMBlockCell");
        if (!op) return vg_graph_status(g, NULL);
        cnew = vg_out(op, 1);
        hnew = vg_out(op, 6);
    } else {
        vg_output gates = linear(g, x, hp, c->kernel, c->bias);
        vg_op *sp = vg_split(g, gates, 4, 1, "split");
        if (!sp) return vg_graph_status(g, NULL);
        vg_output i = vg_out(sp, 0), j = vg_out(sp, 1), f = vg_out(sp, 2), o = vg_out(sp, 3);
        vg_output fb = scalar(g, dt, c->forget_bias, "forget_bias");
        vg_output fg = vg_add(g, f, fb, "add");
        vg_output ig = i;
        if (c->peep) {
            fg = vg_add(g, fg, vg_mul(g, c->wf, cp, "mul"), "add_1");
            ig = vg_add(g, i, vg_mul(g, c->wi, cp, "mul_1"), "add_2");
        }
        cnew = vg_add(g, vg_mul(g, cp, vg_sigmoid(g, fg, "Sigmoid"), "mul_2"),
                      vg_mul(g, vg_sigmoid(g, ig, "Sigmoid_1"), activate(g, j, c->act), "mul_3"), "add_3");
        if (c->kind == K_LSTM) cnew = clip(g, cnew, c->cell_clip, dt);
        vg_output og = c->peep ? vg_add(g, o, vg_mul(g, c->wo, cnew, "mul_4"), "add_4") : o;
        hnew = vg_mul(g, activate(g, cnew, c->act), vg_sigmoid(g, og, "Sigmoid_2"), "mul_5");
        if (c->kind == K_LSTM && c->num_proj > 0) {
            vg_graph_push_scope(g, "projection");
            hnew = vg_matmul(g, hnew, c->proj, false, false, "MatMul");
            vg_graph_pop_scope(g);
            hnew = clip(g, hnew, c->proj_clip, dt);
        }
    }
    *out = hnew;
    if (c->tuple) {
        ns[0] = cnew;
        ns[1] = hnew;
    } else {
        ns[0] = vg_concat_c(g, (vg_output[]){cnew, hnew}, 2, 1, "concat_1");
    }
    return vg_graph_status(g, NULL);
}

/* The ops of one step of a leaf cell (built), in its name scope. */
static vg_code leaf_ops(vg_rnn_cell *c, vg_graph *g, vg_output x, const vg_output *state, vg_output *out,
                        vg_output *ns, vg_dtype dt) {
    switch (c->kind) {
    case K_BASIC_RNN:
        *out = ns[0] = activate(g, linear(g, x, state[0], c->kernel, c->bias), c->act);
        break;
    case K_GRU: {
        vg_graph_push_scope(g, "gates");
        vg_output v = vg_sigmoid(g, linear(g, x, state[0], c->kernel, c->bias), "Sigmoid");
        vg_graph_pop_scope(g);
        vg_op *sp = vg_split(g, v, 2, 1, "split");
        if (!sp) break;
        vg_output r = vg_out(sp, 0), u = vg_out(sp, 1);
        vg_output rs = vg_mul(g, r, state[0], "mul");
        vg_graph_push_scope(g, "candidate");
        vg_output cand = activate(g, linear(g, x, rs, c->kernel2, c->bias2), c->act);
        vg_graph_pop_scope(g);
        vg_output one = scalar(g, dt, 1.0, "sub/x");
        *out = ns[0] = vg_add(g, vg_mul(g, u, state[0], "mul_1"), vg_mul(g, vg_sub(g, one, u, "sub"), cand, "mul_2"),
                              "add");
        break;
    }
    default:
        call_lstm(c, g, x, state, out, ns, dt);
        break;
    }
    return vg_graph_status(g, NULL);
}

/* A user-defined cell: its build runs once, under the caller's variable scope; each
 * call under a fresh name scope <name>. */
static vg_code custom_step(vg_rnn_cell *c, vg_graph *g, vg_output x, int64_t depth, vg_dtype dt,
                           const vg_output *state, vg_output *out, vg_output *ns, bool build_only) {
    bind_graph(c, g);
    if (!c->built) {
        vg_code rc = c->def.build ? c->def.build(g, depth, dt, c->def.user) : VG_OK;
        if (rc != VG_OK && vg_graph_status(g, NULL) == VG_OK)
            vg_graph_set_error(g, rc, "%s: the cell's build callback failed", c->name);
        c->built = vg_graph_status(g, NULL) == VG_OK;
        if (!c->built) return vg_graph_status(g, NULL);
    }
    if (build_only) return VG_OK;
    vg_graph_push_scope(g, c->name);
    vg_code rc = c->def.call(g, x, state, out, ns, c->def.user);
    if (rc != VG_OK && vg_graph_status(g, NULL) == VG_OK)
        vg_graph_set_error(g, rc, "%s: the cell's call callback failed", c->name);
    vg_graph_pop_scope(g);
    return vg_graph_status(g, NULL);
}

/* One step of a cell (build_only: the scopes and variables of a first call, no ops; x
 * unused, depth gives the input depth). */
static vg_code cell_step(vg_rnn_cell *c, vg_graph *g, vg_output x, int64_t depth, vg_dtype dt, const vg_output *state,
                         vg_output *out, vg_output *ns, bool build_only) {
    if (vg_graph_status(g, NULL) != VG_OK) return vg_graph_status(g, NULL);
    if (!build_only) {
        if (!x.op) return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "rnn cell: NULL input");
        vg_shape s = vg_output_shape(x);
        bool leaf = c->kind != K_MULTI && c->kind != K_DROPOUT && c->kind != K_RESIDUAL && c->kind != K_FUSED;
        if (leaf && (s.ndims != 2 || s.dims[1] < 0))
            return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: the input must be [batch, depth] with depth known",
                                      c->name);
        depth = s.ndims == 2 ? s.dims[1] : -1;
        dt = vg_output_dtype(x);
    }
    switch (c->kind) {
    case K_FUSED:
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                                  "%s: a fused cell runs whole sequences (vg_fused_rnn), not single steps", c->name);
    case K_CUSTOM:
        return custom_step(c, g, x, depth, dt, state, out, ns, build_only);
    case K_MULTI: {
        /* RNNCell.__call__: re-enter the variable scope current at the first call (the
         * copy made when it was first entered, as TF caches it) */
        bind_graph(c, g);
        if (build_only && c->built) return VG_OK; /* the scopes are the first call's business */
        bool first = !c->rnn_scope;
        if (first) c->rnn_scope = vg_get_variable_scope(g);
        char **pending = build_only ? NULL : c->pending_ns; /* name scopes a build-only call opened */
        if (pending) c->pending_ns = NULL;
        if (build_only && first) c->pending_ns = calloc((size_t)c->nkids + 1, sizeof(char *));
        vg_variable_scope_opts quiet;
        memset(&quiet, 0, sizeof quiet);
        quiet.no_name_scope = pending != NULL;
        bool ok = c->rnn_scope && vg_variable_scope_enter(g, c->rnn_scope, &quiet);
        if (ok && pending) vg_graph_push_scope(g, pending[0] ? pending[0] : "/");
        if (ok && c->pending_ns && !c->pending_ns[0]) {
            const char *cur = vg_graph_scope(g);
            c->pending_ns[0] = malloc(strlen(cur) + 2);
            if (c->pending_ns[0]) sprintf(c->pending_ns[0], "%s/", cur);
        }
        if (ok && first) c->rnn_scope = vg_get_variable_scope(g);
        if (ok && layer_enter(c, g) != VG_OK) {
            if (pending) vg_graph_pop_scope(g);
            vg_variable_scope_pop(g);
            ok = false;
        }
        if (!ok) {
            if (pending) {
                for (int i = 0; i <= c->nkids; i++) free(pending[i]);
                free(pending);
            }
            return vg_graph_status(g, NULL);
        }
        vg_output cur = x;
        int off = 0;
        for (int i = 0; i < c->nkids; i++) {
            char nm[32];
            snprintf(nm, sizeof nm, "cell_%d", i);
            if (!vg_variable_scope_push(g, nm, &quiet)) break;
            if (pending) vg_graph_push_scope(g, pending[i + 1] ? pending[i + 1] : "/");
            if (c->pending_ns && !c->pending_ns[i + 1]) {
                const char *ns = vg_variable_scope_original_name_scope(g);
                c->pending_ns[i + 1] = malloc(strlen(ns) + 1);
                if (c->pending_ns[i + 1]) strcpy(c->pending_ns[i + 1], ns);
            }
            vg_code rc = cell_step(c->kids[i], g, cur, depth, dt, state ? state + off : NULL, &cur,
                                   ns ? ns + off : NULL, build_only);
            if (pending) vg_graph_pop_scope(g);
            vg_variable_scope_pop(g);
            if (rc != VG_OK) break;
            depth = vg_rnn_cell_output_size(c->kids[i]);
            off += vg_rnn_cell_state_count(c->kids[i]);
        }
        layer_leave(g);
        if (pending) vg_graph_pop_scope(g);
        vg_variable_scope_pop(g);
        if (pending) {
            for (int i = 0; i <= c->nkids; i++) free(pending[i]);
            free(pending);
        }
        c->built = vg_graph_status(g, NULL) == VG_OK;
        if (!build_only) *out = cur;
        return vg_graph_status(g, NULL);
    }
    case K_DROPOUT: {
        if (build_only) return cell_step(c->kids[0], g, x, depth, dt, state, out, ns, true);
        int64_t seed = c->seed;
        vg_output in = dropout(g, x, c->keep_in, seed ? seed : 0);
        vg_code rc = cell_step(c->kids[0], g, in, depth, dt, state, out, ns, false);
        if (rc != VG_OK) return rc;
        int n = vg_rnn_cell_state_count(c);
        for (int i = 0; i < n; i++)
            if (!state_is_c(c->kids[0], i)) ns[i] = dropout(g, ns[i], c->keep_state, seed ? seed + 1 + i : 0);
        *out = dropout(g, *out, c->keep_out, seed ? seed + 1000 : 0);
        return vg_graph_status(g, NULL);
    }
    case K_RESIDUAL: {
        vg_code rc = cell_step(c->kids[0], g, x, depth, dt, state, out, ns, build_only);
        if (rc != VG_OK || build_only) return rc;
        *out = vg_add(g, x, *out, "add");
        return vg_graph_status(g, NULL);
    }
    default:
        if (layer_enter(c, g) != VG_OK) return vg_graph_status(g, NULL);
        if (build(c, g, depth, dt) == VG_OK && !build_only) leaf_ops(c, g, x, state, out, ns, dt);
        layer_leave(g);
        return vg_graph_status(g, NULL);
    }
}

vg_code vg_rnn_cell_call(vg_rnn_cell *c, vg_graph *g, vg_output input, const vg_output *state, vg_output *output,
                         vg_output *new_state) {
    if (!g) return VG_INVALID_ARGUMENT;
    if (!c || !state || !output || !new_state)
        return vg_graph_set_error(g, VG_INVALID_ARGUMENT, "rnn cell call: NULL cell, state, output or new_state");
    return cell_step(c, g, input, -1, VG_FLOAT, state, output, new_state, false);
}

/* ------------------------------------------------------------------------ */
/* static_rnn */

static vg_code fail(vg_graph *g, vg_status *st) { return vg_graph_status(g, st); }

vg_code vg_static_rnn(vg_rnn_cell *cell, vg_graph *g, const vg_output *inputs, int T, const vg_output *initial_state,
                      vg_dtype dt, vg_output sequence_length, const char *scope, vg_output *outputs,
                      vg_output *final_state, vg_status *st) {
    if (!g) return vg_status_set(st, VG_INVALID_ARGUMENT, "static_rnn: NULL graph");
    if (!cell || !inputs || T <= 0 || !outputs || !final_state) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "static_rnn: needs a cell, T >= 1 inputs, outputs and final_state");
        return fail(g, st);
    }
    int n = vg_rnn_cell_state_count(cell);
    vg_output *state = calloc((size_t)(2 * n + 1), sizeof(vg_output));
    if (!state) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "static_rnn: out of memory");
        return fail(g, st);
    }
    vg_output *next = state + n;
    /* with vs.variable_scope(scope or "rnn") as varscope */
    if (!vg_variable_scope_push(g, scope && *scope ? scope : "rnn", NULL)) {
        free(state);
        return fail(g, st);
    }
    if (initial_state) {
        memcpy(state, initial_state, sizeof(vg_output) * (size_t)n);
    } else {
        vg_shape s0 = vg_output_shape(inputs[0]);
        int64_t b = s0.ndims >= 1 ? s0.dims[0] : -1;
        vg_output bt = b < 0 ? dim_scalar(g, inputs[0], 0, VG_INT32) : none();
        vg_rnn_cell_zero_state(cell, g, b, bt, dt, state);
    }
    vg_output seq = sequence_length.op ? vg_cast(g, sequence_length, VG_INT32, "sequence_length") : none();
    vg_output zero_out = none();
    for (int t = 0; t < T && vg_graph_status(g, NULL) == VG_OK; t++) {
        vg_output out;
        if (t > 0) vg_variable_scope_reuse_variables(g); /* varscope.reuse_variables() */
        if (cell_step(cell, g, inputs[t], -1, dt, state, &out, next, false) != VG_OK) break;
        if (seq.op) {
            /* rnn.py _rnn_step: copy_cond = time >= sequence_length */
            if (!zero_out.op) zero_out = vg_zeros_like(g, out, "zeros_like");
            vg_output copy = vg_greater_equal(g, vg_const_i32(g, t, "time"), seq, "GreaterEqual");
            out = vg_select(g, copy, zero_out, out, "Select");
            for (int i = 0; i < n; i++) next[i] = vg_select(g, copy, state[i], next[i], "Select");
        }
        outputs[t] = out;
        memcpy(state, next, sizeof(vg_output) * (size_t)n);
    }
    vg_variable_scope_pop(g);
    memcpy(final_state, state, sizeof(vg_output) * (size_t)n);
    free(state);
    return fail(g, st);
}

/* ------------------------------------------------------------------------ */
/* LSTMBlockFusedCell */

vg_code vg_fused_rnn(vg_rnn_cell *c, vg_graph *g, vg_output inputs, const vg_output *initial_state, vg_dtype dt,
                     vg_output sequence_length, vg_output *outputs, vg_output *final_state, vg_status *st) {
    if (!g) return vg_status_set(st, VG_INVALID_ARGUMENT, "fused rnn: NULL graph");
    if (!c || c->kind != K_FUSED || !outputs || !final_state || !inputs.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "fused rnn: needs an LSTMBlockFusedCell, inputs, outputs and final_state");
        return fail(g, st);
    }
    vg_shape s = vg_output_shape(inputs);
    if (s.ndims != 3 || s.dims[2] < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: inputs must be [time, batch, depth] with depth known", c->name);
        return fail(g, st);
    }
    if (initial_state) dt = vg_output_dtype(initial_state[0]);
    /* Layer.__call__: the cell's variable scope, its variables on the first call */
    if (layer_enter(c, g) != VG_OK) return fail(g, st);
    if (build(c, g, s.dims[2], dt) != VG_OK) {
        layer_leave(g);
        return fail(g, st);
    }
    int64_t U = c->units;
    vg_output cs0, h0;
    if (initial_state) {
        cs0 = initial_state[0];
        h0 = initial_state[1];
    } else if (s.dims[1] >= 0) {
        cs0 = h0 = vg_const_fill(g, dt, (int64_t[]){s.dims[1], U}, 2, 0.0, "zeros");
    } else {
        vg_output shp = vg_shape_op(g, inputs, VG_INT32, "Shape");
        vg_output bsz = vg_slice_c(g, shp, (int64_t[]){1}, (int64_t[]){1}, 1, "batch_size");
        vg_output shape = vg_concat_c(g, (vg_output[]){bsz, vg_const_i32_vec(g, (int32_t[]){(int32_t)U}, 1, NULL)}, 2, 0,
                                      "stack");
        cs0 = h0 = vg_zeros(g, shape, dt, "zeros");
    }
    vg_output seq = sequence_length.op ? vg_cast(g, sequence_length, VG_INT64, "Cast") : none();
    vg_output maxlen;
    if (seq.op) {
        maxlen = vg_reduce_max(g, seq, NULL, -1, false, "Max");
    } else if (s.dims[0] >= 0) {
        maxlen = vg_const_i64(g, s.dims[0], "Cast");
    } else {
        maxlen = dim_scalar(g, inputs, 0, VG_INT64);
    }
    vg_output zeros = c->peep ? none() : vg_const_fill(g, dt, &U, 1, 0.0, "zeros_1");
    vg_op *op = vg_block_lstm(g, maxlen, inputs, cs0, h0, c->kernel, c->peep ? c->wi : zeros, c->peep ? c->wf : zeros,
                              c->peep ? c->wo : zeros, c->bias, c->forget_bias, c->cell_clip, c->peep, "BlockLSTM");
    if (!op) {
        layer_leave(g);
        return fail(g, st);
    }
    vg_output cs = vg_out(op, 1), h = vg_out(op, 6);
    if (!seq.op) {
        /* final state = the last step */
        int64_t T = s.dims[0];
        if (T >= 0) {
            final_state[0] = vg_squeeze(g, vg_slice_c(g, cs, (int64_t[]){T - 1, 0, 0}, (int64_t[]){1, -1, -1}, 3, NULL),
                                        (int32_t[]){0}, 1, "strided_slice");
            final_state[1] = vg_squeeze(g, vg_slice_c(g, h, (int64_t[]){T - 1, 0, 0}, (int64_t[]){1, -1, -1}, 3, NULL),
                                        (int32_t[]){0}, 1, "strided_slice_1");
        } else {
            vg_output tm1 = vg_sub(g, vg_cast(g, maxlen, VG_INT32, NULL), vg_const_i32(g, 1, NULL), NULL);
            final_state[0] = vg_gather(g, cs, tm1, 0, "strided_slice");
            final_state[1] = vg_gather(g, h, tm1, 0, "strided_slice_1");
        }
        *outputs = h;
    } else {
        /* mask the outputs past each sequence's end; final state at index seq_len (with
         * the initial state prepended), as lstm_ops.py's _gather_states */
        vg_output mask = vg_cast(g, vg_less(g, vg_expand_dims(g, vg_range(g, vg_const_i64(g, 0, NULL), dim_scalar(g, inputs, 0, VG_INT64), vg_const_i64(g, 1, NULL), NULL), 1, NULL),
                                            vg_expand_dims(g, seq, 0, NULL), "Less"),
                                 dt, "mask");
        *outputs = vg_mul(g, h, vg_expand_dims(g, mask, 2, NULL), "mul");
        vg_output csa = vg_concat_c(g, (vg_output[]){vg_expand_dims(g, cs0, 0, NULL), cs}, 2, 0, "concat");
        vg_output ha = vg_concat_c(g, (vg_output[]){vg_expand_dims(g, h0, 0, NULL), *outputs}, 2, 0, "concat_1");
        vg_output bidx = vg_range(g, vg_const_i64(g, 0, NULL), dim_scalar(g, seq, 0, VG_INT64),
                                  vg_const_i64(g, 1, NULL), "range");
        vg_output ind = vg_pack(g, (vg_output[]){seq, bidx}, 2, 1, "stack");
        final_state[0] = vg_gather_nd(g, csa, ind, "GatherNd");
        final_state[1] = vg_gather_nd(g, ha, ind, "GatherNd_1");
    }
    layer_leave(g);
    return fail(g, st);
}

/* ------------------------------------------------------------------------ */
/* embedding_lookup, sequence_loss */

vg_output vg_embedding_lookup(vg_graph *g, vg_output params, vg_output ids, const char *name) {
    if (!g) return none();
    if (!params.op || !ids.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "embedding_lookup: NULL params or ids");
        return none();
    }
    const char *nm = name && *name ? name : "embedding_lookup";
    vg_output r = vg_gather(g, params, ids, 0, nm);
    /* the Identity goes into the scope named like the gather op ("embedding_lookup/Identity") */
    char sc[VS_MAX];
    snprintf(sc, sizeof sc, "%s/", r.op ? vg_op_name(r.op) : nm);
    vg_graph_push_scope(g, sc);
    r = vg_identity(g, r, "Identity");
    vg_graph_pop_scope(g);
    return r;
}

/* div_no_nan(a, b): a / b, 0 where b == 0 */
static vg_output div_no_nan(vg_graph *g, vg_output a, vg_output b, vg_dtype dt) {
    vg_output zero = scalar(g, dt, 0.0, "zero");
    vg_output is0 = vg_equal(g, b, vg_zeros_like(g, b, NULL), "Equal");
    vg_output safe = vg_select(g, is0, vg_ones_like(g, b, NULL), b, "Select");
    vg_output q = vg_div(g, a, safe, "div_no_nan");
    return vg_select(g, is0, vg_add(g, vg_zeros_like(g, q, NULL), zero, NULL), q, "Select_1");
}

vg_output vg_sequence_loss(vg_graph *g, vg_output logits, vg_output targets, vg_output weights,
                           bool average_across_timesteps, bool average_across_batch, const char *name) {
    if (!g) return none();
    if (!logits.op || !targets.op || !weights.op) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "sequence_loss: NULL logits, targets or weights");
        return none();
    }
    vg_shape ls = vg_output_shape(logits);
    if (ls.ndims != 3) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "sequence_loss: logits must be [batch, time, classes], got rank %d",
                           ls.ndims);
        return none();
    }
    vg_dtype dt = vg_output_dtype(logits);
    vg_graph_push_scope(g, name && *name ? name : "sequence_loss");
    vg_output shp = vg_shape_op(g, logits, VG_INT32, "Shape");
    vg_output nc = vg_slice_c(g, shp, (int64_t[]){2}, (int64_t[]){1}, 1, "num_classes");
    vg_output flat_shape = vg_concat_c(g, (vg_output[]){vg_const_i32_vec(g, (int32_t[]){-1}, 1, NULL), nc}, 2, 0, NULL);
    vg_output lf = vg_reshape(g, logits, flat_shape, "Reshape");
    vg_output tf = vg_cast(g, vg_reshape_c(g, targets, (int64_t[]){-1}, 1, "Reshape_1"), VG_INT64, NULL);
    vg_op *xe = vg_sparse_softmax_xent(g, lf, tf, "SparseSoftmaxCrossEntropyWithLogits");
    vg_output ce = vg_mul(g, vg_out(xe, 0), vg_reshape_c(g, weights, (int64_t[]){-1}, 1, "Reshape_2"), "mul");
    vg_output out;
    if (average_across_timesteps && average_across_batch) {
        out = div_no_nan(g, vg_reduce_sum(g, ce, NULL, -1, false, "Sum"), vg_reduce_sum(g, weights, NULL, -1, false, "Sum_1"),
                         dt);
    } else {
        vg_output bt = vg_slice_c(g, shp, (int64_t[]){0}, (int64_t[]){2}, 1, "batch_time");
        out = vg_reshape(g, ce, bt, "Reshape_3");
        if (average_across_timesteps || average_across_batch) {
            int32_t ax = average_across_timesteps ? 1 : 0;
            out = div_no_nan(g, vg_reduce_sum(g, out, &ax, 1, false, "Sum"), vg_reduce_sum(g, weights, &ax, 1, false, "Sum_1"),
                             dt);
        }
    }
    vg_graph_pop_scope(g);
    return out;
}

/* ------------------------------------------------------------------------ */
/* dynamic_rnn (rnn.py _dynamic_rnn_loop) */

/* TF makes the cell's variables on its first call, inside the while loop's body; vigil
 * makes them before the loop (the body then only reads them) with the scopes that
 * first call would have: the variable scope current here and the name scope the loop
 * body will have ("<scope>/while/"), so that the body's ops get TF's names
 * ("rnn/while/basic_lstm_cell/MatMul") and the variables too
 * ("rnn/basic_lstm_cell/kernel"). */
static vg_code prebuild(vg_rnn_cell *c, vg_graph *g, int64_t depth, vg_dtype dt) {
    char loop[VS_MAX], ns[VS_MAX + 2];
    vg_graph_unique_name(g, "while", loop, sizeof loop);
    snprintf(ns, sizeof ns, "%s/", loop);
    vg_graph_push_scope(g, ns);
    vg_code rc = cell_step(c, g, none(), depth, dt, NULL, NULL, NULL, true);
    vg_graph_pop_scope(g);
    return rc;
}

typedef struct dyn_ctx {
    vg_rnn_cell *cell;
    int n;                 /* state count */
    vg_tensor_array in_ta; /* unstacked inputs (outside the loop) */
    vg_output out_handle;  /* the output TensorArray's handle (outside) */
    vg_dtype dt;
    vg_output time_steps, seq, zero_out;
    int64_t depth;
} dyn_ctx;

static vg_code dyn_cond(vg_graph *g, const vg_output *v, int n, void *user, vg_output *pred) {
    (void)n;
    dyn_ctx *d = user;
    *pred = vg_less(g, v[0], d->time_steps, "Less");
    return vg_graph_status(g, NULL);
}

static vg_code dyn_body(vg_graph *g, const vg_output *v, int n, void *user, vg_output *outs) {
    (void)n;
    dyn_ctx *d = user;
    vg_output time = v[0];
    vg_output x = vg_tensor_array_read(g, d->in_ta, time, "TensorArrayReadV3");
    vg_shape xs = vg_output_shape(x);
    if (xs.ndims != 2 || xs.dims[1] < 0) x = vg_reshape_c(g, x, (int64_t[]){-1, d->depth}, 2, "input_t");
    vg_output out;
    if (cell_step(d->cell, g, x, d->depth, d->dt, v + 2, &out, outs + 2, false) != VG_OK) return vg_graph_status(g, NULL);
    if (d->seq.op) {
        /* _rnn_step(skip_conditionals=True): copy_cond = time >= sequence_length */
        vg_output copy = vg_greater_equal(g, time, d->seq, "GreaterEqual");
        vg_output zeros = vg_zeros_like(g, out, "zeros_like");
        out = vg_select(g, copy, zeros, out, "Select");
        for (int i = 0; i < d->n; i++) outs[2 + i] = vg_select(g, copy, v[2 + i], outs[2 + i], "Select");
    }
    vg_tensor_array ta = {d->out_handle, v[1], d->dt};
    ta = vg_tensor_array_write(g, ta, time, out, "TensorArrayWrite");
    outs[0] = vg_add(g, time, vg_const_i32(g, 1, "add/y"), "add");
    outs[1] = ta.flow;
    return vg_graph_status(g, NULL);
}

/* dynamic_rnn with scope given as a name or (scope_obj) a captured scope object. */
static vg_code dynamic_rnn(vg_rnn_cell *cell, vg_graph *g, vg_output inputs, vg_output sequence_length,
                           const vg_output *initial_state, vg_dtype dt, int parallel_iterations, bool time_major,
                           const char *scope, vg_vscope *scope_obj, vg_output *outputs, vg_output *final_state,
                           vg_status *st) {
    if (!g) return vg_status_set(st, VG_INVALID_ARGUMENT, "dynamic_rnn: NULL graph");
    if (vg_graph_status(g, NULL) != VG_OK) return fail(g, st);
    if (!cell || !inputs.op || !outputs || !final_state) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "dynamic_rnn: needs a cell, inputs, outputs and final_state");
        return fail(g, st);
    }
    if (cell->kind == K_FUSED) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "dynamic_rnn: %s is a fused cell (use vg_fused_rnn)", cell->name);
        return fail(g, st);
    }
    vg_shape s = vg_output_shape(inputs);
    if (s.ndims != 3 || s.dims[2] < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "dynamic_rnn: inputs must be rank 3 with a known depth (last dimension)");
        return fail(g, st);
    }
    if (initial_state) dt = vg_output_dtype(initial_state[0]);
    int n = vg_rnn_cell_state_count(cell);
    vg_output *vars = calloc((size_t)(2 * (n + 2)), sizeof(vg_output));
    if (!vars) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "dynamic_rnn: out of memory");
        return fail(g, st);
    }
    vg_output *exits = vars + n + 2;
    /* with vs.variable_scope(scope or "rnn") as varscope */
    const char *entered = scope_obj ? vg_variable_scope_enter(g, scope_obj, NULL)
                                    : vg_variable_scope_push(g, scope && *scope ? scope : "rnn", NULL);
    if (!entered) {
        free(vars);
        return fail(g, st);
    }
    int64_t depth = s.dims[2];
    prebuild(cell, g, depth, dt);
    vg_output x = time_major ? inputs : vg_transpose_c(g, inputs, (int32_t[]){1, 0, 2}, 3, "transpose");
    int64_t T = time_major ? s.dims[0] : s.dims[1], Bs = time_major ? s.dims[1] : s.dims[0];
    dyn_ctx d = {cell, n, {{NULL, 0}, {NULL, 0}, dt}, {NULL, 0}, dt, {NULL, 0}, {NULL, 0}, {NULL, 0}, depth};
    d.seq = sequence_length.op ? vg_identity(g, vg_cast(g, sequence_length, VG_INT32, "ToInt32"), "sequence_length")
                               : none();
    if (initial_state) {
        memcpy(vars + 2, initial_state, sizeof(vg_output) * (size_t)n);
    } else {
        vg_output bt = Bs < 0 ? dim_scalar(g, x, 1, VG_INT32) : none();
        vg_rnn_cell_zero_state(cell, g, Bs, bt, dt, vars + 2);
    }
    vg_graph_push_scope(g, "dynamic_rnn");
    d.time_steps = T >= 0 ? vg_const_i32(g, (int32_t)T, "time_steps") : dim_scalar(g, x, 0, VG_INT32);
    vars[0] = vg_const_i32(g, 0, "time");
    vg_shape in_el = vg_shape_make((int64_t[]){Bs, depth}, 2), out_el = vg_shape_make((int64_t[]){Bs, vg_rnn_cell_output_size(cell)}, 2);
    vg_tensor_array out_ta = vg_tensor_array_new(g, dt, d.time_steps, false, true, &out_el, "output_0");
    d.in_ta = vg_tensor_array_new(g, vg_output_dtype(x), d.time_steps, false, true, &in_el, "input_0");
    d.in_ta = vg_tensor_array_unstack(g, d.in_ta, x, "TensorArrayUnstack");
    d.out_handle = out_ta.handle;
    vars[1] = out_ta.flow;
    vg_graph_pop_scope(g);
    if (vg_graph_status(g, NULL) == VG_OK)
        vg_while_loop(g, dyn_cond, dyn_body, &d, vars, n + 2, NULL, parallel_iterations > 0 ? parallel_iterations : 32,
                      d.time_steps, "while", exits, NULL);
    if (vg_graph_status(g, NULL) == VG_OK) {
        vg_tensor_array fin = {out_ta.handle, exits[1], dt};
        vg_output stacked = vg_tensor_array_stack(g, fin, "TensorArrayStack");
        if (T >= 0 || Bs >= 0) /* give the stacked outputs their static shape */
            stacked = vg_reshape_c(g, stacked, (int64_t[]){T >= 0 ? T : -1, Bs >= 0 ? Bs : -1, vg_rnn_cell_output_size(cell)},
                                   3, "stacked");
        *outputs = time_major ? stacked : vg_transpose_c(g, stacked, (int32_t[]){1, 0, 2}, 3, "transpose_1");
        memcpy(final_state, exits + 2, sizeof(vg_output) * (size_t)n);
    }
    vg_variable_scope_pop(g);
    free(vars);
    return fail(g, st);
}

vg_code vg_dynamic_rnn(vg_rnn_cell *cell, vg_graph *g, vg_output inputs, vg_output sequence_length,
                       const vg_output *initial_state, vg_dtype dt, int parallel_iterations, bool time_major,
                       const char *scope, vg_output *outputs, vg_output *final_state, vg_status *st) {
    return dynamic_rnn(cell, g, inputs, sequence_length, initial_state, dt, parallel_iterations, time_major, scope, NULL,
                       outputs, final_state, st);
}

/* tf.reverse_sequence(x, lengths, seq_axis=0, batch_axis=1) for time-major x [T, B, ...]. */
static vg_output reverse_sequence_tm(vg_graph *g, vg_output x, vg_output len) {
    return vg_reverse_sequence(g, x, len, 0, 1, "ReverseSequence");
}

vg_code vg_bidirectional_dynamic_rnn(vg_rnn_cell *cell_fw, vg_rnn_cell *cell_bw, vg_graph *g, vg_output inputs,
                                     vg_output sequence_length, const vg_output *initial_state_fw,
                                     const vg_output *initial_state_bw, vg_dtype dt, int parallel_iterations,
                                     bool time_major, const char *scope, vg_output outputs[2], vg_output *final_fw,
                                     vg_output *final_bw, vg_status *st) {
    if (!g) return vg_status_set(st, VG_INVALID_ARGUMENT, "bidirectional_dynamic_rnn: NULL graph");
    if (!cell_fw || !cell_bw || !inputs.op || !outputs || !final_fw || !final_bw) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT,
                           "bidirectional_dynamic_rnn: needs two cells, inputs, outputs and final states");
        return fail(g, st);
    }
    /* with vs.variable_scope(scope or "bidirectional_rnn"): dynamic_rnn of each cell in
     * the scope object captured by `with vs.variable_scope("fw"/"bw") as ..._scope` */
    if (!vg_variable_scope_push(g, scope && *scope ? scope : "bidirectional_rnn", NULL)) return fail(g, st);
    if (vg_variable_scope_push(g, "fw", NULL)) {
        vg_vscope *fw = vg_get_variable_scope(g);
        dynamic_rnn(cell_fw, g, inputs, sequence_length, initial_state_fw, dt, parallel_iterations, time_major, NULL, fw,
                    &outputs[0], final_fw, NULL);
        vg_variable_scope_pop(g);
    }
    vg_output len = none(), tmp = none();
    if (vg_graph_status(g, NULL) == VG_OK && vg_variable_scope_push(g, "bw", NULL)) {
        vg_vscope *bw = vg_get_variable_scope(g);
        len = sequence_length.op ? vg_cast(g, sequence_length, VG_INT32, NULL) : none();
        vg_output xt = time_major ? inputs : vg_transpose_c(g, inputs, (int32_t[]){1, 0, 2}, 3, "transpose");
        vg_output xr = len.op ? reverse_sequence_tm(g, xt, len) : vg_reverse_c(g, xt, (int32_t[]){0}, 1, "ReverseV2");
        dynamic_rnn(cell_bw, g, xr, sequence_length, initial_state_bw, dt, parallel_iterations, true, NULL, bw, &tmp,
                    final_bw, NULL);
        vg_variable_scope_pop(g);
    }
    vg_variable_scope_pop(g);
    if (vg_graph_status(g, NULL) == VG_OK) { /* output_bw = _reverse(tmp), outside the scope */
        vg_output back = len.op ? reverse_sequence_tm(g, tmp, len) : vg_reverse_c(g, tmp, (int32_t[]){0}, 1, "ReverseV2");
        outputs[1] = time_major ? back : vg_transpose_c(g, back, (int32_t[]){1, 0, 2}, 3, "transpose");
    }
    return fail(g, st);
}
