/* cifar10.h - the port of TF's CIFAR-10 tutorial (tensorflow/models/image/cifar10):
 * the flags of cifar10.py / cifar10_input.py and their functions. See README.md. */
#ifndef CIFAR10_H
#define CIFAR10_H

#include <vigil/vigil.h>

/* tf.app.flags of cifar10.py (+ the train/eval programs' own, in their files) */
typedef struct cifar10_flags {
    int batch_size;                 /* 128 */
    const char *data_dir;           /* /tmp/cifar10_data */
    /* vigil: the data set is made from Fashion-MNIST (no download); see README */
    const char *fmnist_dir;         /* /usr/share/datasets/fashion-mnist */
    int limit;                      /* 0: all 60000 training examples (10000 test) */
    int num_preprocess_threads;     /* 16 (a constant in cifar10_input.py) */
} cifar10_flags;
extern cifar10_flags FLAGS;

/* cifar10_input.py */
#define IMAGE_SIZE 24
#define NUM_CLASSES 10
extern int NUM_EXAMPLES_PER_EPOCH_FOR_TRAIN; /* 50000 in CIFAR-10; the converted count here */
extern int NUM_EXAMPLES_PER_EPOCH_FOR_EVAL;  /* 10000 */
void cifar10_input_distorted_inputs(vg_graph *g, const char *data_dir, int batch_size, vg_output *images,
                                    vg_output *labels);
void cifar10_input_inputs(vg_graph *g, bool eval_data, const char *data_dir, int batch_size, vg_output *images,
                          vg_output *labels);

/* cifar10.py */
#define MOVING_AVERAGE_DECAY 0.9999
#define NUM_EPOCHS_PER_DECAY 350.0
#define LEARNING_RATE_DECAY_FACTOR 0.1
#define INITIAL_LEARNING_RATE 0.1
void cifar10_distorted_inputs(vg_graph *g, vg_output *images, vg_output *labels);
void cifar10_inputs(vg_graph *g, bool eval_data, vg_output *images, vg_output *labels);
vg_output cifar10_inference(vg_graph *g, vg_output images);
vg_output cifar10_loss(vg_graph *g, vg_output logits, vg_output labels);
vg_op *cifar10_train(vg_graph *g, vg_output total_loss, vg_output global_step);
/* maybe_download_and_extract: here, writes the CIFAR-10 binary files from Fashion-MNIST. */
int cifar10_maybe_download_and_extract(void);
/* Parses --name=value / --name value for the cifar10.py flags; returns 0 or prints the
 * problem and returns 2. Unknown flags are left for the program (*handled false). */
int cifar10_parse_flag(const char *arg, const char *next, bool *handled, bool *used_next);
/* A program's flags: the cifar10.py ones (cifar10_parse_flag), the others through
 * own(arg, value, eq, &used_next): value is what follows '=' in "--name=value" (eq true),
 * else the next argument (NULL at the end; own sets *used_next when it takes it). own
 * returns 0, -1 for a flag it does not know ("unknown flag <arg>" is printed, status 2),
 * or an exit status after printing the problem. Returns 0 or that status. */
int cifar10_parse_args(int argc, char **argv, int (*own)(const char *arg, const char *value, bool eq, bool *used_next));

#endif
