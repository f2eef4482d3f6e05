/*
 * vigil.h - umbrella header: TensorFlow 1's monitored training sessions in C.
 *
 * vigil is a dataflow runtime (tensors, graphs of TF-named ops, sessions, CPU kernels,
 * autodiff, optimizers) with TF1's training supervision on top, writing checkpoints
 * and event files that TensorFlow's tools read.
 */
#ifndef VIGIL_H
#define VIGIL_H

#include "status.h"
#include "tensor.h"
#include "graph.h"
#include "ops.h"
#include "ops_ext.h"
#include "nn_ext.h"
#include "session.h"
#include "config.h"
#include "custom_op.h"
#include "gradients.h"
#include "variables.h"
#include "resource_variables.h"
#include "optimizer.h"
#include "mixed_precision.h"
#include "train_lib.h"
#include "losses.h"
#include "metrics.h"
#include "variable_scope.h"
#include "layers.h"
#include "coordinator.h"
#include "queue_ops.h"
#include "queue.h"
#include "lookup.h"
#include "saver.h"
#include "summary.h"
#include "graphdef.h"
#include "import.h"
#include "saved_model.h"
#include "monitored.h"
#include "hooks.h"
#include "evaluation.h"
#include "version.h"
#include "events.h"
#include "idx.h"
#include "example.h"
#include "reader.h"
#include "data.h"
#include "image_ops.h"
#include "image.h"
#include "backend.h"
#include "control_flow.h"
#include "rnn_ops.h"
#include "rnn.h"
#include "npy.h"
#include "distributed.h"
#include "flags.h"
#include "audio.h"
#include "math_nn_ops.h"
#include "keras_datasets.h"
#include "hparams.h"
#include "slim.h"
#include "distributions.h"

#endif
