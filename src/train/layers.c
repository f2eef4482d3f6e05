/* layers.c - tf.layers dense / conv2d / max_pooling2d / flatten on the public API. */
#include "vigil/layers.h"

static vg_output activate(vg_graph *g, vg_output x, vg_activation act) {
    switch (act) {
    case VG_ACT_RELU: return vg_relu(g, x, "Relu");
    case VG_ACT_SIGMOID: return vg_sigmoid(g, x, "Sigmoid");
    case VG_ACT_TANH: return vg_tanh(g, x, "Tanh");
    default: return x;
    }
}

vg_output vg_layers_dense(vg_graph *g, vg_output x, int64_t units, vg_activation act, const char *name) {
    vg_output none = {NULL, 0};
    if (!x.op) return none;
    vg_shape s = vg_output_shape(x);
    if (s.ndims != 2 || s.dims[1] < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "dense: the input must be [batch, in] with `in` known");
        return none;
    }
    vg_graph_push_scope(g, name ? name : "dense");
    int64_t kdims[2] = {s.dims[1], units}, bdims[1] = {units};
    vg_variable k = vg_get_variable(g, "kernel", vg_output_dtype(x), kdims, 2, vg_init_glorot_uniform(0), VG_VAR_TRAINABLE);
    vg_variable b = vg_get_variable(g, "bias", vg_output_dtype(x), bdims, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
    vg_output y = vg_bias_add(g, vg_matmul(g, x, k.read, false, false, "MatMul"), b.read, "BiasAdd");
    y = activate(g, y, act);
    vg_graph_pop_scope(g);
    return y;
}

vg_output vg_layers_conv2d(vg_graph *g, vg_output x, int64_t filters, int kh, int kw, int stride,
                           const char *padding, vg_activation act, const char *name) {
    vg_output none = {NULL, 0};
    if (!x.op) return none;
    vg_shape s = vg_output_shape(x);
    if (s.ndims != 4 || s.dims[3] < 0) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "conv2d: the input must be NHWC with known channels");
        return none;
    }
    vg_graph_push_scope(g, name ? name : "conv2d");
    int64_t kdims[4] = {kh, kw, s.dims[3], filters}, bdims[1] = {filters};
    vg_variable k = vg_get_variable(g, "kernel", vg_output_dtype(x), kdims, 4, vg_init_glorot_uniform(0), VG_VAR_TRAINABLE);
    vg_variable b = vg_get_variable(g, "bias", vg_output_dtype(x), bdims, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
    int64_t strides[4] = {1, stride, stride, 1};
    vg_output y = vg_bias_add(g, vg_conv2d(g, x, k.read, strides, padding, "Conv2D"), b.read, "BiasAdd");
    y = activate(g, y, act);
    vg_graph_pop_scope(g);
    return y;
}

vg_output vg_layers_max_pooling2d(vg_graph *g, vg_output x, int pool, int stride, const char *padding,
                                  const char *name) {
    vg_graph_push_scope(g, name ? name : "max_pooling2d");
    int64_t k[4] = {1, pool, pool, 1}, s[4] = {1, stride, stride, 1};
    vg_output y = vg_max_pool(g, x, k, s, padding, "MaxPool");
    vg_graph_pop_scope(g);
    return y;
}

vg_output vg_layers_flatten(vg_graph *g, vg_output x, const char *name) {
    vg_output none = {NULL, 0};
    if (!x.op) return none;
    vg_shape s = vg_output_shape(x);
    int64_t n = 1;
    for (int i = 1; i < s.ndims; i++) {
        if (s.dims[i] < 0) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "flatten: trailing dimensions must be known");
            return none;
        }
        n *= s.dims[i];
    }
    if (s.ndims < 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "flatten: input rank must be known and >= 1");
        return none;
    }
    vg_graph_push_scope(g, name ? name : "flatten");
    int64_t dims[2] = {-1, n};
    vg_output y = vg_reshape_c(g, x, dims, 2, "Reshape");
    vg_graph_pop_scope(g);
    return y;
}
