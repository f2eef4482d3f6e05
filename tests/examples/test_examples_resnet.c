/* test_examples_resnet.c - runs the research/resnet port (examples/tf1/resnet) with a
 * tiny configuration (num_residual_units 1, batch 8, 32x32 records written from
 * Fashion-MNIST in CIFAR-10's format, 50 steps): resnet_main --mode train must exit 0
 * with the mean loss of the last 15 steps below that of the first 15 (the losses come
 * from its LoggingTensorHook), a checkpoint holding exactly the variables TF gives this
 * graph (the DW/beta/gamma/moving_mean/... names, the Momentum slots and the doubled
 * scope of assign_moving_average's zero-debias variables), moving averages that are the
 * debiased biased/local_step values, and resnet_main --mode eval --eval_once must
 * restore the newest checkpoint and report a precision in [0, 1]. Skips when the
 * examples were not built or Fashion-MNIST is not installed. */
#include "test_util.h"
#include "example_test_util.h"
#include "vigil/vigil.h"
#include <sys/wait.h>
#include <unistd.h>

#define DATA_DIR "/usr/share/datasets/fashion-mnist"
#define STEPS 50

static char g_dir[512];
static char g_out[1 << 17];

static int run(const char *cmd) { return ex_run(cmd, g_out, sizeof g_out, EX_STDERR, NULL); }

/* The checkpoint keys of resnet_model.py's train graph with num_residual_units = 1 and
 * no bottleneck, as TF 1.15 names them (sorted, as a V2 checkpoint stores them). */
static int expected_keys(char names[][160], int max) {
    int n = 0;
#define ADD(...) do { if (n < max) snprintf(names[n++], 160, __VA_ARGS__); } while (0)
    static const char *bns[] = {"unit_1_0/shared_activation/init_bn", "unit_1_0/sub2/bn2",
                                "unit_2_0/residual_only_activation/init_bn", "unit_2_0/sub2/bn2",
                                "unit_3_0/residual_only_activation/init_bn", "unit_3_0/sub2/bn2",
                                "unit_last/final_bn"};
    static const char *convs[] = {"init/init_conv", "unit_1_0/sub1/conv1", "unit_1_0/sub2/conv2",
                                  "unit_2_0/sub1/conv1", "unit_2_0/sub2/conv2", "unit_3_0/sub1/conv1",
                                  "unit_3_0/sub2/conv2"};
    ADD("global_step");
    for (int i = 0; i < 7; i++) {
        ADD("%s/DW", convs[i]);
        ADD("%s/DW/Momentum", convs[i]);
    }
    ADD("logit/DW");
    ADD("logit/DW/Momentum");
    ADD("logit/biases");
    ADD("logit/biases/Momentum");
    for (int i = 0; i < 7; i++) {
        ADD("%s/beta", bns[i]);
        ADD("%s/beta/Momentum", bns[i]);
        ADD("%s/gamma", bns[i]);
        ADD("%s/gamma/Momentum", bns[i]);
        ADD("%s/moving_mean", bns[i]);
        ADD("%s/moving_variance", bns[i]);
        ADD("%s/%s/moving_mean/biased", bns[i], bns[i]);
        ADD("%s/%s/moving_mean/local_step", bns[i], bns[i]);
        ADD("%s/%s/moving_variance/biased", bns[i], bns[i]);
        ADD("%s/%s/moving_variance/local_step", bns[i], bns[i]);
    }
#undef ADD
    return n;
}

static int cmp_str(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

static float read_f(vg_checkpoint_reader *r, const char *name, int i) {
    vg_status st;
    vg_tensor *t = vg_checkpoint_reader_read(r, name, &st);
    if (!t) {
        fprintf(stderr, "missing %s: %s\n", name, st.msg);
        return NAN;
    }
    float v = ((const float *)vg_tensor_data(t))[i];
    vg_tensor_free(t);
    return v;
}

static void test_resnet_train_and_eval(void) {
    char prog[1024], cmd[4096];
    snprintf(prog, sizeof prog, "%s/resnet_main", VG_BINDIR);
    if (!ex_built(prog)) return;
    if (access(DATA_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0) {
        fprintf(stderr, "SKIP: Fashion-MNIST not installed in %s (Debian package dataset-fashion-mnist)\n", DATA_DIR);
        return;
    }
    snprintf(cmd, sizeof cmd,
             "'%s' --mode train --prepare_data_dir %s/data --limit 1000 --train_data_path '%s/data/data_batch*' "
             "--train_dir %s/log/train --log_root %s/log --batch_size 8 --num_residual_units 1 --max_steps %d "
             "--log_every_n_iter 1",
             prog, g_dir, g_dir, g_dir, g_dir, STEPS);
    CHECK_EQ_INT(run(cmd), 0);
    CHECK_STR_CONTAINS(g_out, "total_params: ");
    /* the LoggingTensorHook's lines: "loss = <v>, precision = <p>, step = <s>" */
    double loss[STEPS + 8];
    int nl = 0;
    for (const char *p = g_out; (p = strstr(p, "loss = ")) && nl < STEPS + 8; p += 7) {
        double prec = -1;
        if (sscanf(p, "loss = %lf, precision = %lf", &loss[nl], &prec) == 2) {
            CHECK(prec >= 0 && prec <= 1);
            nl++;
        }
    }
    CHECK_EQ_INT(nl, STEPS);
    if (nl == STEPS) {
        double first = 0, last = 0;
        for (int i = 0; i < 15; i++) first += loss[i] / 15, last += loss[STEPS - 15 + i] / 15;
        fprintf(stderr, "resnet train: mean loss of the first 15 steps %.4f, of the last 15 %.4f\n", first, last);
        CHECK(isfinite(first) && isfinite(last) && last < first);
    }

    /* the checkpoint of the last step */
    char ckpt[1200], latest[1200];
    snprintf(ckpt, sizeof ckpt, "%s/log", g_dir);
    CHECK(vg_latest_checkpoint(ckpt, latest, sizeof latest) != NULL);
    CHECK_STR_CONTAINS(latest, "model.ckpt-50");
    static char expected[128][160];
    int ne = expected_keys(expected, 128);
    CHECK_EQ_INT(ne, 1 + 14 + 4 + 70);
    qsort(expected, (size_t)ne, sizeof expected[0], cmp_str);
    vg_status st;
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(latest, &st);
    CHECK(r != NULL);
    if (r) {
        const char *keys[128];
        for (int i = 0; i < ne; i++) keys[i] = expected[i];
        ex_check_ckpt_keys(r, keys, ne);
        /* the names the issue spells out */
        vg_tensor *t = vg_checkpoint_reader_read(r, "unit_1_0/sub1/conv1/DW", &st);
        CHECK(t && vg_tensor_ndims(t) == 4 && vg_tensor_dim(t, 3) == 16);
        vg_tensor_free(t);
        t = vg_checkpoint_reader_read(r, "init/init_conv/DW", &st);
        CHECK(t && vg_tensor_dim(t, 2) == 3);
        vg_tensor_free(t);
        /* assign_moving_average with zero_debias: local_step counts the updates and the
         * moving mean is biased / (1 - 0.9^local_step) */
        const char *bn = "unit_2_0/sub2/bn2";
        char n1[256], n2[256], n3[256];
        snprintf(n1, sizeof n1, "%s/moving_mean", bn);
        snprintf(n2, sizeof n2, "%s/%s/moving_mean/biased", bn, bn);
        snprintf(n3, sizeof n3, "%s/%s/moving_mean/local_step", bn, bn);
        float steps = read_f(r, n3, 0);
        CHECK_NEAR(steps, STEPS, 0);
        for (int c = 0; c < 4; c++) {
            float mm = read_f(r, n1, c), biased = read_f(r, n2, c);
            CHECK(mm != 0.0f);
            CHECK_NEAR(mm, biased / (1.0 - pow(0.9, steps)), 1e-4 * (1 + fabs(mm)));
        }
        /* the learning rate the hook fed was used: global step advanced once per run */
        CHECK(ex_ckpt_scalar(r, "global_step") == STEPS);
        vg_checkpoint_reader_free(r);
    }

    /* evaluate(): Saver restore of the latest checkpoint, precision over the batches */
    snprintf(cmd, sizeof cmd,
             "'%s' --mode eval --eval_data_path '%s/data/test_batch*' --eval_dir %s/log/eval --log_root %s/log "
             "--batch_size 8 --num_residual_units 1 --eval_once --eval_batch_count 4",
             prog, g_dir, g_dir, g_dir);
    CHECK_EQ_INT(run(cmd), 0);
    CHECK_STR_CONTAINS(g_out, "Loading checkpoint ");
    CHECK_STR_CONTAINS(g_out, "model.ckpt-50");
    const char *p = strstr(g_out, "precision: ");
    double prec = -1, best = -1, eloss = -1;
    const char *lp = strstr(g_out, "loss: ");
    if (lp) sscanf(lp, "loss: %lf, precision: %lf, best precision: %lf", &eloss, &prec, &best);
    CHECK(p != NULL);
    fprintf(stderr, "resnet eval: loss %.3f precision %.3f\n", eloss, prec);
    CHECK(prec >= 0.0 && prec <= 1.0);
    CHECK(best == prec);
    CHECK(isfinite(eloss) && eloss > 0);
    /* the eval event file got the Precision scalar */
    char evdir[1200];
    snprintf(evdir, sizeof evdir, "%s/log/eval", g_dir);
    CHECK(access(evdir, F_OK) == 0);

    /* bad input: an unknown mode and a pattern that matches nothing fail cleanly */
    snprintf(cmd, sizeof cmd, "'%s' --mode predict", prog);
    CHECK_EQ_INT(run(cmd), 2);
    snprintf(cmd, sizeof cmd, "'%s' --mode train --train_data_path '%s/nothing*' --log_root %s/log2 --max_steps 1", prog,
             g_dir, g_dir);
    CHECK_EQ_INT(run(cmd), 1);
    CHECK_STR_CONTAINS(g_out, "no files match");
}

int main(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "resnet")[0]) return 1;
    RUN_TEST(test_resnet_train_and_eval);
    tu_rmrf(g_dir);
    TEST_MAIN_END();
}
