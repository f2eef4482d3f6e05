/* graph_net.c - bench_models' graph-network block: graph_nets' InteractionNetwork (an
 * EdgeBlock then a NodeBlock, no globals) with the demos' make_mlp_model as edge and
 * node model (snt.nets.MLP([128, 128], activate_final=True) then a layer norm), then
 * a linear decoder of the nodes to 2 outputs, tf.losses.mean_squared_error against fed
 * targets, Adam 1e-3. One fixed random graph (seeded): 2048 nodes, 12288 edges, latent
 * 128 (size), node and edge features fed [2048, 128] / [12288, 128], senders and
 * receivers int32 Consts [12288].
 *
 * The graph as TF builds it from graph_nets (blocks.py):
 *   EdgeBlock: concat([edges, gather(nodes, receivers), gather(nodes, senders)], -1)
 *     [12288, 384] -> mlp (linear_0, relu, linear_1, relu; snt.Linear is MatMul + Add,
 *     w truncated normal with stddev 1/sqrt(fan_in), b zeros) -> layer norm.
 *   NodeBlock: concat([unsorted_segment_sum(new edges, receivers, 2048), nodes], -1)
 *     [2048, 256] -> the same MLP shape -> layer norm.
 * The layer norm is tf.contrib.layers.layer_norm (vg_layer_norm, variables
 * LayerNorm/beta, LayerNorm/gamma), which a TF1 port writes where Sonnet has
 * snt.LayerNorm (layer_norm/gamma, beta; the same math but its epsilon 1e-5).
 * Variable names: interaction_network/edge_block/mlp/linear_0/w, .../b,
 * interaction_network/edge_block/LayerNorm/gamma, ..., decoder/linear/w. The number of
 * segments is a Const 2048 where graph_nets computes reduce_sum(n_node) (the same value
 * for one graph; vigil's shapes are then static). Only the variables are
 * differentiated, as in TF: no gradient flows to the fed features (nor in the peers). */
#include "models.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GN_NODES 2048
#define GN_EDGES 12288
#define GN_OUT 2

/* snt.Linear(units, name): outputs = matmul(x, w) + b */
static vg_output linear(vg_graph *g, vg_output x, int64_t in, int64_t units, const char *name) {
    vg_variable_scope_push(g, name, NULL);
    vg_get_variable_opts wo = {.dt = VG_FLOAT, .dims = (int64_t[]){in, units}, .ndims = 2, .has_init = true,
                               .init = vg_init_truncated_normal(0, 1.0 / sqrt((double)in), 0)};
    vg_get_variable_opts bo = {.dt = VG_FLOAT, .dims = (int64_t[]){units}, .ndims = 1, .has_init = true,
                               .init = vg_init_zeros()};
    vg_variable w = vg_get_variable_ex(g, "w", &wo), b = vg_get_variable_ex(g, "b", &bo);
    vg_output y = vg_add(g, vg_matmul(g, x, w.read, false, false, "MatMul"), b.read, "add");
    vg_variable_scope_pop(g);
    return y;
}

/* make_mlp_model(): snt.Sequential([snt.nets.MLP([latent] * 2, activate_final=True),
 * layer norm]) */
static vg_output mlp_model(vg_graph *g, vg_output x, int64_t in, int64_t latent) {
    vg_variable_scope_push(g, "mlp", NULL);
    vg_output h = vg_relu(g, linear(g, x, in, latent, "linear_0"), "Relu");
    h = vg_relu(g, linear(g, h, latent, latent, "linear_1"), "Relu_1");
    vg_variable_scope_pop(g);
    return vg_layer_norm(g, h, NULL);
}

static void free_opt(void *o) { vg_optimizer_free(o); }

static vg_output int_const(vg_graph *g, const int32_t *v, int64_t n, const char *name, vg_status *st) {
    vg_tensor *t = vg_tensor_new(VG_INT32, &n, 1, st);
    if (!t) return (vg_output){NULL, 0};
    memcpy(vg_tensor_data(t), v, sizeof(int32_t) * (size_t)n);
    vg_output c = vg_const(g, t, name);
    vg_tensor_free(t);
    return c;
}

static int build(vg_graph *g, int batch, int size, bm_built *b, vg_status *st) {
    (void)batch;
    const int64_t latent = size, nn = GN_NODES, ne = GN_EDGES;
    int64_t nd[2] = {nn, latent}, ed[2] = {ne, latent}, td[2] = {nn, GN_OUT};
    vg_output nodes = vg_placeholder(g, VG_FLOAT, nd, 2, "nodes");
    vg_output edges = vg_placeholder(g, VG_FLOAT, ed, 2, "edges");
    vg_output targets = vg_placeholder(g, VG_FLOAT, td, 2, "targets");
    /* the fixed random graph: every edge a uniform (sender, receiver) pair */
    int32_t *snd = malloc(sizeof(int32_t) * ne), *rcv = malloc(sizeof(int32_t) * ne);
    if (!snd || !rcv) return free(snd), free(rcv), 1;
    for (int64_t i = 0; i < ne; i++) snd[i] = rand() % (int)nn, rcv[i] = rand() % (int)nn;
    vg_output senders = int_const(g, snd, ne, "senders", st), receivers = int_const(g, rcv, ne, "receivers", st);
    free(snd), free(rcv);
    if (!senders.op || !receivers.op) return 1;

    vg_variable_scope_push(g, "interaction_network", NULL);
    vg_variable_scope_push(g, "edge_block", NULL);
    vg_output parts[3] = {edges, vg_gather(g, nodes, receivers, 0, "broadcast_receiver_nodes_to_edges/GatherV2"),
                          vg_gather(g, nodes, senders, 0, "broadcast_sender_nodes_to_edges/GatherV2")};
    vg_output new_edges = mlp_model(g, vg_concat_c(g, parts, 3, -1, "concat"), 3 * latent, latent);
    vg_variable_scope_pop(g);
    vg_variable_scope_push(g, "node_block", NULL);
    vg_output agg = vg_unsorted_segment_sum(g, new_edges, receivers, vg_const_i32(g, (int32_t)nn, "num_nodes"),
                                            "received_edges_to_nodes_aggregator/UnsortedSegmentSum");
    vg_output nparts[2] = {agg, nodes};
    vg_output new_nodes = mlp_model(g, vg_concat_c(g, nparts, 2, -1, "concat"), 2 * latent, latent);
    vg_variable_scope_pop(g);
    vg_variable_scope_pop(g);

    vg_variable_scope_push(g, "decoder", NULL);
    vg_output out = linear(g, new_nodes, latent, GN_OUT, "linear");
    vg_variable_scope_pop(g);
    b->train = vg_losses_mean_squared_error(g, targets, out, NULL);
    vg_optimizer *opt = vg_optimizer_new_adam(1e-3, 0.9, 0.999, 1e-8);
    vg_output gs = vg_get_or_create_global_step(g);
    b->train_op = vg_optimizer_minimize(opt, g, b->train, NULL, 0, gs, NULL);
    b->cleanup = free_opt, b->state = opt;
    if (!b->train_op) return 1;
    b->feeds[0] = nodes, b->feeds[1] = edges, b->feeds[2] = targets, b->nfeeds = 3;
    b->fv[0] = vg_tensor_new(VG_FLOAT, nd, 2, st);
    b->fv[1] = vg_tensor_new(VG_FLOAT, ed, 2, st);
    b->fv[2] = vg_tensor_new(VG_FLOAT, td, 2, st);
    if (!b->fv[0] || !b->fv[1] || !b->fv[2]) return 1;
    bm_fill_uniform(b->fv[0]);
    bm_fill_uniform(b->fv[1]);
    bm_fill_uniform(b->fv[2]);
    return 0;
}

const bm_model bm_graph_net = {"graph_net", 1, 128, build};
