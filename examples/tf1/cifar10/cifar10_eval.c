/* cifar10_eval.c - port of cifar10_eval.py: evaluates the latest checkpoint of
 * cifar10_train with the moving-average versions of the variables
 * (ExponentialMovingAverage.variables_to_restore), precision @ 1 with in_top_k. */
#include "cifar10.h"
#include "../tf1_util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *eval_dir = "/tmp/cifar10_eval";
static const char *eval_data = "test";
static const char *checkpoint_dir = "/tmp/cifar10_train";
static int eval_interval_secs = 60 * 5;
static int num_examples = 10000;
static bool run_once = false;

/* eval_once(saver, summary_writer, top_k_op, summary_op) */
static int eval_once(vg_saver *saver, vg_file_writer *summary_writer, vg_output top_k_op, vg_output summary_op) {
    vg_status st;
    vg_session *sess = vg_session_new(vg_op_graph(top_k_op.op), NULL, &st);
    if (!sess) {
        fprintf(stderr, "%s\n", st.msg);
        return 1;
    }
    vg_checkpoint_state *ckpt = NULL;
    int64_t global_step = 0;
    if (vg_get_checkpoint_state(checkpoint_dir, &ckpt, &st) == VG_OK && ckpt && ckpt->model_checkpoint_path) {
        char path[2048];
        const char *p = ckpt->model_checkpoint_path;
        if (p[0] != '/') snprintf(path, sizeof path, "%s/%s", checkpoint_dir, p);
        else snprintf(path, sizeof path, "%s", p);
        /* Restores from checkpoint */
        if (vg_saver_restore(saver, sess, path, &st) != VG_OK) {
            fprintf(stderr, "%s\n", st.msg);
            vg_checkpoint_state_free(ckpt);
            vg_session_free(sess);
            return 1;
        }
        const char *dash = strrchr(path, '-');
        global_step = dash ? atoll(dash + 1) : 0;
        vg_checkpoint_state_free(ckpt);
    } else {
        printf("No checkpoint file found\n");
        vg_checkpoint_state_free(ckpt);
        vg_session_free(sess);
        return 1;
    }
    /* Start the queue runners. */
    vg_coord *coord = vg_coord_new(NULL, 0);
    int rc = 0;
    if (vg_start_queue_runners(sess, coord, &st) == VG_OK) {
        int num_iter = (int)ceil((double)num_examples / FLAGS.batch_size);
        long true_count = 0;
        long total_sample_count = (long)num_iter * FLAGS.batch_size;
        int step = 0;
        while (step < num_iter && !vg_coord_should_stop(coord)) {
            vg_tensor *predictions = NULL;
            if (vg_session_run1(sess, top_k_op, &predictions, &st) != VG_OK) {
                vg_coord_request_stop(coord, &st);
                rc = 1;
                break;
            }
            const bool *pb = vg_tensor_data(predictions);
            for (int64_t i = 0; i < vg_tensor_num_elements(predictions); i++) true_count += pb[i];
            vg_tensor_free(predictions);
            step++;
        }
        /* Compute precision @ 1. */
        double precision = (double)true_count / (double)total_sample_count;
        printf("precision @ 1 = %.3f\n", precision);
        vg_tensor *summary = NULL;
        if (summary_op.op && vg_session_run1(sess, summary_op, &summary, &st) == VG_OK) {
            size_t len = 0;
            const char *bytes = vg_tensor_string(summary, 0, &len);
            vg_file_writer_add_summary(summary_writer, bytes, len, global_step, &st);
            vg_tensor_free(summary);
        }
        vg_file_writer_add_scalar(summary_writer, "Precision @ 1", precision, global_step, &st);
    } else {
        vg_coord_request_stop(coord, &st);
        rc = 1;
    }
    tf1_close_training(coord, sess, NULL);
    return rc;
}

static int evaluate(void) {
    vg_status st;
    vg_graph *g = vg_graph_new();
    /* Get images and labels for CIFAR-10. */
    bool is_test = strcmp(eval_data, "test") == 0;
    vg_output images, labels;
    cifar10_inputs(g, is_test, &images, &labels);
    /* Build a Graph that computes the logits predictions from the inference model. */
    vg_output logits = cifar10_inference(g, images);
    /* Calculate predictions. */
    vg_output top_k_op = vg_in_top_k(g, logits, labels, 1, NULL);
    /* Restore the moving average version of the learned variables for eval. */
    vg_ema *variable_averages = vg_ema_new(g, MOVING_AVERAGE_DECAY, (vg_output){0}, false, NULL);
    vg_name_map variables_to_restore = {0};
    vg_saver *saver = NULL;
    if (vg_graph_status(g, &st) == VG_OK &&
        vg_ema_variables_to_restore(variable_averages, NULL, 0, &variables_to_restore, &st) == VG_OK) {
        vg_saver_options o = {0};
        o.var_list = variables_to_restore.vars;
        o.var_names = (const char *const *)variables_to_restore.names;
        o.nvars = variables_to_restore.n;
        saver = vg_saver_new(g, &o, &st);
    }
    for (int i = 0; i < variables_to_restore.n; i++)
        printf("restore %s <- %s\n", vg_op_name(variables_to_restore.vars[i].op), variables_to_restore.names[i]);
    /* Build the summary operation based on the TF collection of Summaries. */
    vg_output summary_op = vg_summary_merge_all(g);
    vg_file_writer *summary_writer = saver ? vg_file_writer_new(eval_dir, NULL, &st) : NULL;
    int rc = 1;
    if (summary_writer && vg_file_writer_add_graph(summary_writer, g, 0, &st) == VG_OK) {
        for (;;) {
            rc = eval_once(saver, summary_writer, top_k_op, summary_op);
            if (run_once) break;
            sleep((unsigned)eval_interval_secs);
        }
    } else {
        fprintf(stderr, "cifar10_eval: %s\n", st.msg);
    }
    if (summary_writer) vg_file_writer_close(summary_writer, NULL);
    vg_file_writer_free(summary_writer);
    vg_saver_free(saver);
    vg_name_map_free(&variables_to_restore);
    vg_ema_free(variable_averages);
    vg_graph_free(g);
    return rc;
}

/* This program's own flags (cifar10_parse_args). */
static int eval_flag(const char *a, const char *v, bool eq, bool *used_next) {
    if (!strncmp(a, "--run_once", 10)) {
        run_once = true;
        return 0;
    }
    if (!v) {
        fprintf(stderr, "flag %s needs a value\n", a);
        return 2;
    }
    if (!strncmp(a, "--eval_dir", 10)) eval_dir = v;
    else if (!strncmp(a, "--eval_data", 11)) eval_data = v;
    else if (!strncmp(a, "--checkpoint_dir", 16)) checkpoint_dir = v;
    else if (!strncmp(a, "--eval_interval_secs", 20)) eval_interval_secs = atoi(v);
    else if (!strncmp(a, "--num_examples", 14)) num_examples = atoi(v);
    else return -1;
    *used_next = !eq;
    return 0;
}

int main(int argc, char **argv) {
    int rc = cifar10_parse_args(argc, argv, eval_flag);
    if (rc) return rc;
    if (cifar10_maybe_download_and_extract()) return 1;
    mkdir(eval_dir, 0755);
    return evaluate();
}
