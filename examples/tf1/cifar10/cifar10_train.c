/* cifar10_train.c - port of cifar10_train.py: trains the CIFAR-10 model with a plain
 * session, queue runners, summaries every 100 steps and checkpoints every 1000 steps
 * (and at the last step). See README.md for the line-by-line map. */
#define _XOPEN_SOURCE 700
#include "cifar10.h"
#include "../tf1_util.h"
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

void cifar10_free_averages(void);

static const char *train_dir = "/tmp/cifar10_train";
static long max_steps = 1000000;
static bool log_device_placement = false;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static int train(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    vg_variable global_step = vg_variable_new(g, NULL, vg_const_i32(g, 0, "Variable/initial_value"), 0);
    /* Get images and labels for CIFAR-10. */
    vg_output images, labels;
    cifar10_distorted_inputs(g, &images, &labels);
    /* Build a Graph that computes the logits predictions from the inference model. */
    vg_output logits = cifar10_inference(g, images);
    /* Calculate loss. */
    vg_output loss = cifar10_loss(g, logits, labels);
    /* Build a Graph that trains the model with one batch of examples. */
    vg_op *train_op = cifar10_train(g, loss, global_step.ref);
    /* Create a saver (tf.all_variables()). */
    vg_saver *saver = vg_graph_status(g, &st) == VG_OK ? vg_saver_new(g, NULL, &st) : NULL;
    /* Build the summary operation based on the TF collection of Summaries. */
    vg_output summary_op = vg_summary_merge_all(g);
    /* Build an initialization operation to run below. */
    vg_op *init = vg_global_variables_initializer(g);
    if (!saver || vg_graph_status(g, &st) != VG_OK) {
        fprintf(stderr, "building the graph failed: %s\n", st.msg);
        vg_saver_free(saver);
        cifar10_free_averages();
        vg_graph_free(g);
        return 1;
    }
    /* Start running operations on the Graph (ConfigProto(log_device_placement)). */
    vg_config_proto config = {0};
    config.log_device_placement = log_device_placement;
    vg_session *sess = vg_session_new_with_config(g, &config, &st);
    int rc = 0;
    vg_coord *coord = vg_coord_new(NULL, 0);
    vg_file_writer *summary_writer = NULL;
    if (!sess || vg_session_run_targets(sess, &init, 1, &st) != VG_OK) goto fail;
    /* Start the queue runners. */
    if (vg_start_queue_runners(sess, coord, &st) != VG_OK) goto fail;
    summary_writer = vg_file_writer_new(train_dir, NULL, &st);
    if (!summary_writer || vg_file_writer_add_graph(summary_writer, g, 0, &st) != VG_OK) goto fail;
    /* not in the Python: the mean loss of the first and of the last 10 steps, printed at
     * the end for the test (single-batch losses are too noisy to compare) */
    float loss_value = NAN;
    double first_sum = 0, last_sum = 0;
    long first_n = 0, last_n = 0;
    for (long step = 0; step < max_steps; step++) {
        double start_time = now();
        vg_tensor *out = NULL;
        if (vg_session_run(sess, NULL, NULL, NULL, 0, &loss, &out, 1, &train_op, 1, NULL, &st) != VG_OK) goto fail;
        double duration = now() - start_time;
        loss_value = *(const float *)vg_tensor_data(out);
        vg_tensor_free(out);
        if (step < 10) first_sum += loss_value, first_n++;
        if (step >= max_steps - 10) last_sum += loss_value, last_n++;
        if (isnan(loss_value)) {
            fprintf(stderr, "Model diverged with loss = NaN\n");
            rc = 1;
            break;
        }
        if (step % 10 == 0) {
            int num_examples_per_step = FLAGS.batch_size;
            double examples_per_sec = num_examples_per_step / duration;
            printf("step %ld, loss = %.2f (%.1f examples/sec; %.3f sec/batch)\n", step, loss_value, examples_per_sec,
                   duration);
            fflush(stdout);
        }
        if (step % 100 == 0) {
            vg_tensor *summary_str = NULL;
            if (vg_session_run1(sess, summary_op, &summary_str, &st) != VG_OK) goto fail;
            size_t len = 0;
            const char *bytes = vg_tensor_string(summary_str, 0, &len);
            vg_code c = vg_file_writer_add_summary(summary_writer, bytes, len, step, &st);
            vg_tensor_free(summary_str);
            if (c != VG_OK) goto fail;
        }
        /* Save the model checkpoint periodically. */
        if (step % 1000 == 0 || step + 1 == max_steps) {
            char checkpoint_path[1200];
            snprintf(checkpoint_path, sizeof checkpoint_path, "%s/model.ckpt", train_dir);
            if (vg_saver_save(saver, sess, checkpoint_path, step, NULL, 0, &st) != VG_OK) goto fail;
        }
    }
    printf("first loss %g\nfinal loss %g\n", first_n ? first_sum / (double)first_n : NAN,
           last_n ? last_sum / (double)last_n : NAN);
    goto done;
fail:
    fprintf(stderr, "cifar10_train: %s\n", st.msg);
    rc = 1;
done:
    tf1_close_training(coord, sess, summary_writer);
    vg_saver_free(saver);
    cifar10_free_averages();
    vg_graph_free(g);
    return rc;
}

/* This program's own flags (cifar10_parse_args). */
static int train_flag(const char *a, const char *v, bool eq, bool *used_next) {
    if (!strncmp(a, "--train_dir", 11) && v) train_dir = v;
    else if (!strncmp(a, "--max_steps", 11) && v) max_steps = atol(v);
    else if (!strncmp(a, "--log_device_placement", 22)) {
        log_device_placement = true;
        eq = true;
    } else {
        return -1;
    }
    *used_next = !eq;
    return 0;
}

int main(int argc, char **argv) {
    int rc = cifar10_parse_args(argc, argv, train_flag);
    if (rc) return rc;
    if (cifar10_maybe_download_and_extract()) return 1;
    struct stat sb;
    if (stat(train_dir, &sb) == 0) nftw(train_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    mkdir(train_dir, 0755);
    return train();
}
