/* test_examples_evrnn.c - runs examples/tf1/magenta_events_rnn (magenta's
 * events_rnn_graph.py + events_rnn_train.py, issue 13) small: 2 LSTM layers of 32
 * units, batches of 8 synthetic melodies (an ascending scale, each note held one step)
 * read as SequenceExamples through the ported sequence_example_lib. The loss must fall
 * and the accuracy rise over 100 steps, the checkpoint must hold TF's variable names,
 * a second run must resume from the checkpoint and go on to its step count, and the
 * eval mode must evaluate that checkpoint with the streaming metrics. */
#include "test_util.h"
#include "example_test_util.h"
#include "vigil/vigil.h"
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#define PROG VG_BINDIR "/magenta_events_rnn"
#define HPARAMS "batch_size=8,rnn_layer_sizes=[32,32],dropout_keep_prob=0.9,learning_rate=0.02"



/* The values of the LoggingTensorHook line "Global Step = <step>, Loss = .., ..,
 * Accuracy = .." with the given step (first: the first line). */
static bool log_line(const char *out, long step, bool first, long *got_step, double *loss, double *acc) {
    const char *found = NULL;
    for (const char *s = strstr(out, "Global Step = "); s; s = strstr(s + 1, "Global Step = ")) {
        long st = atol(s + 14);
        if (first || st == step) {
            found = s;
            if (first) break;
        }
    }
    if (!found) return false;
    *got_step = atol(found + 14);
    const char *l = strstr(found, "Loss = "), *a = strstr(found, "Accuracy = ");
    if (!l || !a) return false;
    *loss = atof(l + 7);
    *acc = atof(a + 11);
    return true;
}

static char out[1 << 18];

/* Whether an event file under d has a scalar summary with this tag. */
static bool has_scalar_tag(const char *d, const char *tag) {
    char cmd[1200], path[1200];
    snprintf(cmd, sizeof cmd, "ls %s/events.out.tfevents.* 2>/dev/null", d);
    FILE *p = popen(cmd, "r");
    if (!p) return false;
    bool found = false;
    while (!found && fgets(path, sizeof path, p)) {
        path[strcspn(path, "\n")] = 0;
        vg_status st;
        vg_event_reader *r = vg_event_reader_open(path, &st);
        if (!r) continue;
        vg_event ev;
        while (!found && vg_event_reader_next(r, &ev, &st) == VG_OK) {
            if (ev.kind != VG_EVENT_SUMMARY) continue;
            vg_summary_iter it;
            vg_summary_value v;
            vg_summary_iter_init(&it, ev.payload, ev.payload_len);
            while (vg_summary_iter_next(&it, &v, &st) == VG_OK)
                if (v.has_scalar && v.tag_len == strlen(tag) && memcmp(v.tag, tag, v.tag_len) == 0) found = true;
        }
        vg_event_reader_close(r);
    }
    pclose(p);
    if (!found) fprintf(stderr, "no scalar summary %s under %s\n", tag, d);
    return found;
}

static bool has_tensor(vg_checkpoint_reader *r, const char *name, int64_t d0, int64_t d1) {
    for (int i = 0; i < vg_checkpoint_reader_num_tensors(r); i++) {
        vg_dtype dt;
        vg_shape s;
        const char *n = vg_checkpoint_reader_tensor(r, i, &dt, &s);
        if (n && strcmp(n, name) == 0) {
            if (d1 < 0) return s.ndims == 1 && s.dims[0] == d0;
            return s.ndims == 2 && s.dims[0] == d0 && s.dims[1] == d1;
        }
    }
    fprintf(stderr, "checkpoint has no tensor %s\n", name);
    return false;
}

static void test_examples_evrnn__train_resume_eval(void) {
    if (!ex_built(PROG)) return;
    char dir[64], cmd[1024];
    CHECK(tu_mkdtemp(dir, sizeof dir, "evrnn_test")[0] != 0);

    /* 1. train 100 steps: the loss falls, the accuracy rises */
    snprintf(cmd, sizeof cmd,
             PROG " --run_dir %s --num_training_steps 100 --summary_frequency 10 --hparams '" HPARAMS "' 2>&1", dir);
    int rc = ex_run(cmd, out, sizeof out, 0, NULL);
    fputs(out, stderr);
    CHECK_EQ_INT(rc, 0);
    long s0 = -1, s1 = -1;
    double loss0 = NAN, acc0 = NAN, loss1 = NAN, acc1 = NAN;
    CHECK(log_line(out, 0, true, &s0, &loss0, &acc0));
    CHECK(log_line(out, 90, false, &s1, &loss1, &acc1));
    CHECK_EQ_INT((int)s0, 0);
    fprintf(stderr, "step %ld: loss %g accuracy %g; step %ld: loss %g accuracy %g\n", s0, loss0, acc0, s1, loss1,
            acc1);
    CHECK(isfinite(loss0) && isfinite(loss1));
    /* 38 classes: the first loss is about log(38) = 3.6 */
    CHECK(loss0 > 3.0);
    CHECK(loss1 < 0.5 * loss0);
    /* learned: well above chance (1/38) and above predicting the commonest event, which
     * an unseeded initial model sometimes does already (accuracy up to ~0.31 at step 0) */
    CHECK(acc1 > 0.45 && acc1 > acc0 + 0.15);
    CHECK_STR_CONTAINS(out, "final loss ");

    /* 2. the checkpoint: TF's names and shapes (input 38 one-hot + 32 recurrent) */
    vg_status st;
    vg_checkpoint_reader *r = ex_open_ckpt(dir, "train/model.ckpt-100", &st);
    if (r) {
        CHECK(has_tensor(r, "rnn/multi_rnn_cell/cell_0/basic_lstm_cell/kernel", 38 + 32, 4 * 32));
        CHECK(has_tensor(r, "rnn/multi_rnn_cell/cell_0/basic_lstm_cell/bias", 4 * 32, -1));
        CHECK(has_tensor(r, "rnn/multi_rnn_cell/cell_1/basic_lstm_cell/kernel", 32 + 32, 4 * 32));
        CHECK(has_tensor(r, "rnn/multi_rnn_cell/cell_1/basic_lstm_cell/bias", 4 * 32, -1));
        CHECK(has_tensor(r, "fully_connected/weights", 32, 38));
        CHECK(has_tensor(r, "fully_connected/biases", 38, -1));
        CHECK(has_tensor(r, "fully_connected/weights/Adam", 32, 38));
        CHECK(has_tensor(r, "fully_connected/weights/Adam_1", 32, 38));
        CHECK(ex_ckpt_scalar(r, "global_step") == 100);
        vg_tensor *b1 = vg_checkpoint_reader_read(r, "beta1_power", &st);
        CHECK(b1 != NULL);
        vg_tensor_free(b1);
        vg_checkpoint_reader_free(r);
    }
    /* the summaries of events_rnn_graph.py's train mode and the StepCounterHook's */
    char sub[1200];
    snprintf(sub, sizeof sub, "%s/train", dir);
    static const char *const train_tags[] = {"loss", "metrics/perplexity", "metrics/accuracy",
                                             "metrics/event_accuracy", "metrics/no_event_accuracy",
                                             "metrics/loss_per_step", "metrics/perplexity_per_step", "global_step/sec"};
    for (size_t i = 0; i < sizeof train_tags / sizeof train_tags[0]; i++) CHECK(has_scalar_tag(sub, train_tags[i]));

    /* 3. resume: StopAtStepHook(num_steps=40) counts from the restored step 100 */
    snprintf(cmd, sizeof cmd,
             PROG " --run_dir %s --num_training_steps 40 --summary_frequency 10 --hparams '" HPARAMS "' 2>&1", dir);
    rc = ex_run(cmd, out, sizeof out, 0, NULL);
    fputs(out, stderr);
    CHECK_EQ_INT(rc, 0);
    long s2 = -1;
    double loss2 = NAN, acc2 = NAN;
    CHECK(log_line(out, 0, true, &s2, &loss2, &acc2));
    CHECK_EQ_INT((int)s2, 100); /* the first logged step is the restored one */
    CHECK(loss2 < 0.6 * loss0); /* restored weights, not fresh ones */
    snprintf(cmd, sizeof cmd, "test -f %s/train/model.ckpt-140.index", dir);
    CHECK_EQ_INT(ex_run(cmd, out, sizeof out, 0, NULL), 0);

    /* 4. eval: evaluate_repeatedly over the newest checkpoint (one, then the timeout) */
    snprintf(cmd, sizeof cmd,
             PROG " --run_dir %s --eval 1 --num_melodies 64 --eval_interval_secs 0 --eval_timeout_secs 0 --hparams '" HPARAMS
                  "' 2>&1",
             dir);
    rc = ex_run(cmd, out, sizeof out, 0, NULL);
    fputs(out, stderr);
    CHECK_EQ_INT(rc, 0);
    CHECK_STR_CONTAINS(out, "evaluations 1");
    long s3 = -1;
    double loss3 = NAN, acc3 = NAN;
    CHECK(log_line(out, 140, false, &s3, &loss3, &acc3));
    CHECK(isfinite(loss3) && loss3 < 0.6 * loss0);
    CHECK(acc3 > 0.45 && acc3 > acc0 + 0.15);
    /* SummaryAtEndHook: the streaming metrics of the eval mode */
    snprintf(sub, sizeof sub, "%s/eval", dir);
    static const char *const eval_tags[] = {"loss", "metrics/accuracy", "metrics/per_class_accuracy",
                                            "metrics/event_accuracy", "metrics/no_event_accuracy",
                                            "metrics/loss_per_step", "metrics/perplexity",
                                            "metrics/perplexity_per_step"};
    for (size_t i = 0; i < sizeof eval_tags / sizeof eval_tags[0]; i++) CHECK(has_scalar_tag(sub, eval_tags[i]));

    CHECK(tu_rmrf(dir) == 0);
}

static void test_examples_evrnn__bad_flags(void) {
    if (!ex_built(PROG)) return;
    CHECK_EQ_INT(ex_run(PROG " --num_training_steps 1 2>&1", out, sizeof out, 0, NULL), 2);
    CHECK_STR_CONTAINS(out, "--run_dir is required");
    CHECK_EQ_INT(ex_run(PROG " --run_dir /tmp --hparams 'batch_size=0' 2>&1", out, sizeof out, 0, NULL), 2);
    CHECK_STR_CONTAINS(out, "must be positive");
    CHECK_EQ_INT(ex_run(PROG " --run_dir /tmp --hparams 'attn_length=8' 2>&1", out, sizeof out, 0, NULL), 2);
    CHECK_STR_CONTAINS(out, "unknown hparam 'attn_length'");
}

int main(void) {
    RUN_TEST(test_examples_evrnn__train_resume_eval);
    RUN_TEST(test_examples_evrnn__bad_flags);
    TEST_MAIN_END();
}
