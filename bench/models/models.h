/* models.h - the model table of bench_models (issue 30's suite): one file per model in
 * bench/models/, each building its training step with vigil's public TF1-style API. */
#ifndef VIGIL_BENCH_MODELS_H
#define VIGIL_BENCH_MODELS_H
#include "vigil/vigil.h"

#define BM_MAX_FEEDS 8

/* What a model's build leaves for the timing loop: the placeholders and the tensors fed
 * to them (random data of the model's shapes, owned here), the fetched float loss, the
 * train op run as a target where the program has one (NULL otherwise: the loss tensor
 * itself trains, as slim's create_train_op), and what to free after the session. */
typedef struct bm_built {
    vg_output feeds[BM_MAX_FEEDS];
    vg_tensor *fv[BM_MAX_FEEDS];
    int nfeeds;
    vg_output train;
    vg_op *train_op;
    void (*cleanup)(void *state); /* optional, called with state after the session is freed */
    void *state;
} bm_built;

typedef struct bm_model {
    const char *name;
    int batch, size; /* the original program's batch and input size (size: model-defined) */
    /* Builds the step into g (seed set by the caller) for batch and size; 0 on success,
     * otherwise nonzero with the reason in st or in vg_graph_status(g). */
    int (*build)(vg_graph *g, int batch, int size, bm_built *b, vg_status *st);
} bm_model;

extern const bm_model bm_mobilenet, bm_cifar10, bm_resnet, bm_ptb_lm, bm_graph_net, bm_dnc;

/* Fills a float tensor with uniform [0, 1) values from rand(). */
void bm_fill_uniform(vg_tensor *t);

#endif
