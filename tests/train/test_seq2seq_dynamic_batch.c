/* test_seq2seq_dynamic_batch.c - training a seq2seq model whose batch size is only known
 * at run time (tf.data's padded_batch gives [?, ?] batches, as in tensorflow/nmt): an
 * LSTM encoder (dynamic_rnn, time major) and a TrainingHelper / BasicDecoder decoder
 * (dynamic_decode) with a dense projection and the masked cross-entropy of nmt's
 * _compute_loss. The gradient loops must build (TF builds their back edges without
 * shape invariants: a gradient may leave the loop body with less static shape than it
 * entered) and give the same loss and gradients as the same graph with a static batch. */
#include "test_util.h"
#include "vigil/vigil.h"
#include <string.h>

#define B 2
#define TS 4
#define TT 3
#define V 6
#define H 4

typedef struct result {
    double loss;
    int n;
    float grads[16][256];
    int64_t sizes[16];
} result;

static void build_and_run(bool dynamic, result *r) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    int64_t bdim = dynamic ? -1 : B;
    vg_output src = vg_placeholder(g, VG_INT32, (const int64_t[]){bdim, dynamic ? -1 : TS}, 2, "src");
    vg_output src_len = vg_placeholder(g, VG_INT32, (const int64_t[]){bdim}, 1, "src_len");
    vg_output tgt_in = vg_placeholder(g, VG_INT32, (const int64_t[]){bdim, dynamic ? -1 : TT}, 2, "tgt_in");
    vg_output tgt_out = vg_placeholder(g, VG_INT32, (const int64_t[]){bdim, dynamic ? -1 : TT}, 2, "tgt_out");
    vg_output tgt_len = vg_placeholder(g, VG_INT32, (const int64_t[]){bdim}, 1, "tgt_len");
    vg_initializer init = vg_init_random_uniform(-0.5, 0.5, 11);
    vg_vscope_set_initializer(vg_get_variable_scope(g), &init);
    vg_get_variable_opts eo = {0};
    eo.dims = (const int64_t[]){V, 3};
    eo.ndims = 2;
    vg_output emb = vg_get_variable_ex(g, "embedding", &eo).ref;
    const int32_t perm[2] = {1, 0};
    /* encoder */
    vg_rnn_cell *enc = vg_basic_lstm_cell_new(H, 1.0f, true);
    vg_variable_scope_push(g, "encoder", NULL);
    vg_output enc_out, enc_state[2];
    CHECK_OK(vg_dynamic_rnn(enc, g, vg_embedding_lookup(g, emb, vg_transpose_c(g, src, perm, 2, NULL), NULL), src_len,
                            NULL, VG_FLOAT, 0, true, NULL, &enc_out, enc_state, &st),
             &st);
    vg_variable_scope_pop(g);
    /* decoder */
    vg_rnn_cell *dec = vg_basic_lstm_cell_new(H, 1.0f, true);
    vg_decoder_helper *h = vg_training_helper_new(
        g, vg_embedding_lookup(g, emb, vg_transpose_c(g, tgt_in, perm, 2, NULL), NULL), tgt_len, true, NULL);
    vg_decoder *d = vg_basic_decoder_new(dec, h, enc_state, NULL);
    vg_dynamic_decode_options o = {0};
    o.output_time_major = true;
    vg_output outs[VG_DECODER_MAX_OUTPUTS], fin[2];
    CHECK_OK(vg_dynamic_decode(g, d, &o, outs, fin, NULL, &st), &st);
    vg_layer_config pc = {.kind = VG_LAYER_DENSE};
    pc.units = V;
    pc.no_bias = true;
    pc.name = "output_projection";
    vg_layer *proj = vg_layer_new(&pc);
    vg_output logits = vg_layer_apply(proj, g, outs[0], (vg_output){0});
    /* nmt's _compute_loss */
    vg_output target = vg_transpose_c(g, tgt_out, perm, 2, NULL);
    vg_output crossent = vg_sparse_softmax_cross_entropy_with_logits(g, target, logits, NULL);
    vg_output max_time = vg_slice_c(g, vg_shape_op(g, target, VG_INT32, NULL), (const int64_t[]){0},
                                    (const int64_t[]){1}, 1, NULL);
    max_time = vg_reshape_c(g, max_time, NULL, 0, NULL);
    vg_output w = vg_transpose_c(g, vg_sequence_mask(g, tgt_len, max_time, VG_FLOAT, NULL), perm, 2, NULL);
    vg_output loss = vg_div(g, vg_reduce_sum(g, vg_mul(g, crossent, w, NULL), NULL, -1, false, NULL),
                            vg_cast(g, vg_size(g, src_len, NULL), VG_FLOAT, NULL), NULL);
    int n = 0;
    const vg_output *params = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &n);
    CHECK(n == 6); /* embedding, 2 x (kernel, bias), projection */
    vg_output grads[16];
    CHECK_OK(vg_gradients(g, &loss, 1, params, n, NULL, grads, &st), &st);
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    vg_op *vi = vg_global_variables_initializer(g);
    CHECK_OK(vg_session_run_targets(s, &vi, 1, &st), &st);
    const int32_t src_v[B * TS] = {3, 4, 5, 2, 5, 3, 2, 2}, src_len_v[B] = {4, 2};
    const int32_t tin_v[B * TT] = {1, 3, 4, 1, 5, 2}, tout_v[B * TT] = {3, 4, 2, 5, 2, 2}, tlen_v[B] = {3, 2};
    vg_tensor *fv[5] = {vg_tensor_new_copy(VG_INT32, (const int64_t[]){B, TS}, 2, src_v, sizeof src_v, &st),
                        vg_tensor_new_copy(VG_INT32, (const int64_t[]){B}, 1, src_len_v, sizeof src_len_v, &st),
                        vg_tensor_new_copy(VG_INT32, (const int64_t[]){B, TT}, 2, tin_v, sizeof tin_v, &st),
                        vg_tensor_new_copy(VG_INT32, (const int64_t[]){B, TT}, 2, tout_v, sizeof tout_v, &st),
                        vg_tensor_new_copy(VG_INT32, (const int64_t[]){B}, 1, tlen_v, sizeof tlen_v, &st)};
    vg_output feeds[5] = {src, src_len, tgt_in, tgt_out, tgt_len};
    vg_output fetch[17];
    vg_tensor *out[17] = {0};
    fetch[0] = loss;
    for (int i = 0; i < n; i++) fetch[1 + i] = grads[i];
    CHECK_OK(vg_session_run(s, NULL, feeds, fv, 5, fetch, out, 1 + n, NULL, 0, NULL, &st), &st);
    r->n = n;
    r->loss = out[0] ? vg_tensor_scalar(out[0]) : -1;
    for (int i = 0; i < n; i++) {
        r->sizes[i] = out[1 + i] ? vg_tensor_num_elements(out[1 + i]) : 0;
        if (r->sizes[i] > 0 && r->sizes[i] <= 256)
            memcpy(r->grads[i], vg_tensor_data(out[1 + i]), (size_t)r->sizes[i] * sizeof(float));
    }
    for (int i = 0; i < 1 + n; i++) vg_tensor_free(out[i]);
    for (int i = 0; i < 5; i++) vg_tensor_free(fv[i]);
    vg_session_free(s);
    vg_decoder_free(d);
    vg_decoder_helper_free(h);
    vg_layer_free(proj);
    vg_rnn_cell_free(enc);
    vg_rnn_cell_free(dec);
    vg_graph_free(g);
}

static void test_dynamic_batch_matches_static(void) {
    static result rs, rd;
    build_and_run(false, &rs);
    build_and_run(true, &rd);
    CHECK(rs.loss > 0);
    CHECK_NEAR(rd.loss, rs.loss, 1e-6);
    CHECK_EQ_INT(rd.n, rs.n);
    double total = 0;
    for (int i = 0; i < rs.n && i < rd.n; i++) {
        CHECK(rs.sizes[i] > 0);
        CHECK(rd.sizes[i] == rs.sizes[i]);
        for (int64_t k = 0; k < rs.sizes[i] && k < 256; k++) {
            CHECK_NEAR(rd.grads[i][k], rs.grads[i][k], 1e-5);
            total += rs.grads[i][k] * rs.grads[i][k];
        }
    }
    CHECK(total > 1e-6); /* the gradients are not all zero */
}

int main(void) {
    RUN_TEST(test_dynamic_batch_matches_static);
    TEST_MAIN_END();
}
