/* test_examples_tf1_speech_commands.c - runs the speech_commands port
 * (examples/tf1/speech_commands, TF's tensorflow/examples/speech_commands/train.py) end
 * to end on a small data set of WAV files written here: two "words" as distinct tones
 * ("yes" a 500 Hz tone, "no" a 2 kHz tone, random phase and loudness, some noise), an
 * "other" word (a 300 Hz - 4 kHz chirp: the _unknown_ label) and a _background_noise_
 * folder, 16 kHz, 0.5 s clips. The conv model must train (mean accuracy of the last 10
 * steps well above chance), follow the learning-rate schedule, validate and test with
 * confusion matrices, and leave checkpoints holding TF's variable names. Also checks
 * the port's which_set against hashlib.sha1 values computed with Python. */
#include "../examples/tf1/speech_commands/input_data.c"
#include "example_test_util.h"
#include "test_util.h"
#include <math.h>
#include <unistd.h>

static char g_dir[512];
static char g_out[1 << 20];

static uint64_t rs = 0x2545F4914F6CDD1Dull;
static double urand(void) { return ex_urand(&rs); }

/* a 16-bit mono PCM WAV, by hand */
static int write_wav(const char *path, const float *x, int n, int rate) {
    FILE *f = fopen(path, "wb");
    if (!f) return 1;
    uint32_t data_bytes = (uint32_t)n * 2, riff = 36 + data_bytes, fmt_len = 16, byte_rate = (uint32_t)rate * 2;
    uint16_t pcm = 1, ch = 1, align = 2, bits = 16;
    uint32_t r = (uint32_t)rate;
    fwrite("RIFF", 1, 4, f), fwrite(&riff, 4, 1, f), fwrite("WAVEfmt ", 1, 8, f), fwrite(&fmt_len, 4, 1, f);
    fwrite(&pcm, 2, 1, f), fwrite(&ch, 2, 1, f), fwrite(&r, 4, 1, f), fwrite(&byte_rate, 4, 1, f);
    fwrite(&align, 2, 1, f), fwrite(&bits, 2, 1, f), fwrite("data", 1, 4, f), fwrite(&data_bytes, 4, 1, f);
    for (int i = 0; i < n; i++) {
        float v = x[i] > 0.999f ? 0.999f : x[i] < -1.0f ? -1.0f : x[i];
        int16_t s = (int16_t)lrintf(v * 32767.0f);
        fwrite(&s, 2, 1, f);
    }
    return fclose(f) != 0;
}

#define RATE 16000
/* --how_many_training_steps=STEPS_1,STEPS_2 --learning_rate=RATE_1,RATE_2 */
#define STEPS_1 60
#define STEPS_2 40
#define RATE_1 0.01
#define RATE_2 0.003
#define TOTAL_STEPS (STEPS_1 + STEPS_2)
#define CLIP 8000 /* 0.5 s */

static int make_dataset(const char *data) {
    static float buf[RATE * 3];
    char path[1024];
    static const char *words[3] = {"yes", "no", "other"};
    mkdir(data, 0755);
    for (int w = 0; w < 3; w++) {
        snprintf(path, sizeof path, "%s/%s", data, words[w]);
        mkdir(path, 0755);
        for (int k = 0; k < 24; k++) {
            double amp = 0.3 + 0.4 * urand(), phase = 6.283 * urand();
            int start = (int)(urand() * 1600), len = 4800 + (int)(urand() * 1600);
            for (int i = 0; i < CLIP; i++) {
                double t = (double)i / RATE, v = 0;
                if (i >= start && i < start + len) {
                    double env = sin(3.14159 * (i - start) / len);
                    if (w == 0)
                        v = sin(6.283 * 500 * t + phase);
                    else if (w == 1)
                        v = sin(6.283 * 2000 * t + phase);
                    else
                        v = sin(6.283 * (300 * t + 3700 * t * t) + phase); /* 300 Hz -> ~4 kHz */
                    v *= amp * env;
                }
                buf[i] = (float)(v + 0.01 * (urand() - 0.5));
            }
            /* speaker-style names: the part before _nohash_ decides the set */
            snprintf(path, sizeof path, "%s/%s/spk%02d_nohash_%d.wav", data, words[w], k / 2, k % 2);
            if (write_wav(path, buf, CLIP, RATE)) return 1;
        }
    }
    snprintf(path, sizeof path, "%s/_background_noise_", data);
    mkdir(path, 0755);
    for (int i = 0; i < RATE * 3; i++) buf[i] = (float)(0.2 * (urand() - 0.5));
    snprintf(path, sizeof path, "%s/_background_noise_/white_noise.wav", data);
    return write_wav(path, buf, RATE * 3, RATE);
}

/* which_set: SHA-1 of the name with _nohash_ stripped, as input_data.py. The expected
 * sets were computed with Python's hashlib (input_data.which_set(name, 10, 10)). */
static void test_which_set(void) {
    unsigned char d[20];
    sha1("abc", 3, d); /* FIPS 180-4's example: a9993e36 4706816a ba3e2571 7850c26c 9cd0d89d */
    static const unsigned char abc[20] = {0xa9, 0x99, 0x3e, 0x36, 0x47, 0x06, 0x81, 0x6a, 0xba, 0x3e,
                                          0x25, 0x71, 0x78, 0x50, 0xc2, 0x6c, 0x9c, 0xd0, 0xd8, 0x9d};
    CHECK(memcmp(d, abc, 20) == 0);
    const char *long_msg = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 bytes: two blocks */
    static const unsigned char lm[20] = {0x84, 0x98, 0x3e, 0x44, 0x1c, 0x3b, 0xd2, 0x6e, 0xba, 0xae,
                                         0x4a, 0xa1, 0xf9, 0x51, 0x29, 0xe5, 0xe5, 0x46, 0x70, 0xf1};
    sha1(long_msg, strlen(long_msg), d);
    CHECK(memcmp(d, lm, 20) == 0);
    /* the _nohash_ suffix is ignored */
    CHECK_EQ_INT(which_set("/x/yes/bobby_nohash_0.wav", 10, 10), which_set("/y/no/bobby_nohash_1.wav", 10, 10));
    CHECK_EQ_INT(which_set("/d/w/spk00_nohash_0.wav", 10, 10), SET_TRAINING);
    CHECK_EQ_INT(which_set("/d/w/spk01_nohash_0.wav", 10, 10), SET_TRAINING);
    CHECK_EQ_INT(which_set("/d/w/spk02_nohash_0.wav", 10, 10), SET_TRAINING);
    CHECK_EQ_INT(which_set("/d/w/spk03_nohash_0.wav", 10, 10), SET_TRAINING);
    CHECK_EQ_INT(which_set("/d/w/spk04_nohash_0.wav", 10, 10), SET_TRAINING);
    CHECK_EQ_INT(which_set("/d/w/spk05_nohash_0.wav", 10, 10), SET_TRAINING);
    CHECK_EQ_INT(which_set("/d/w/spk06_nohash_0.wav", 10, 10), SET_TRAINING);
    CHECK_EQ_INT(which_set("/d/w/spk07_nohash_0.wav", 10, 10), SET_TESTING);
    CHECK_EQ_INT(which_set("/d/w/spk08_nohash_0.wav", 10, 10), SET_TRAINING);
    CHECK_EQ_INT(which_set("/d/w/spk09_nohash_0.wav", 10, 10), SET_TRAINING);
    CHECK_EQ_INT(which_set("/d/w/spk10_nohash_0.wav", 10, 10), SET_VALIDATION);
    CHECK_EQ_INT(which_set("/d/w/spk11_nohash_0.wav", 10, 10), SET_TRAINING);
    CHECK_EQ_INT(which_set("/d/w/bobby_nohash_0.wav", 10, 10), SET_TRAINING);
    CHECK_EQ_INT(which_set("/d/w/a.wav", 10, 10), SET_TRAINING);
    CHECK_EQ_INT(which_set("/d/w/0a7c2a8d_nohash_0.wav", 10, 10), SET_TRAINING);
    CHECK_EQ_INT(which_set("spk03_nohash_1.wav", 30, 30), SET_VALIDATION);
    CHECK_EQ_INT(which_set("a.wav", 30, 30), SET_TESTING);
}

static void test_speech_commands_train(void) {
    char prog[1024], cmd[8192], data[700], train_dir[700], sum_dir[700];
    snprintf(prog, sizeof prog, "%s/speech_commands_train", VG_BINDIR);
    if (!ex_built(prog)) return;
    snprintf(data, sizeof data, "%s/data", g_dir);
    snprintf(train_dir, sizeof train_dir, "%s/train", g_dir);
    snprintf(sum_dir, sizeof sum_dir, "%s/logs", g_dir);
    CHECK_EQ_INT(make_dataset(data), 0);
    snprintf(cmd, sizeof cmd,
             "'%s' --data_url= --data_dir=%s --train_dir=%s --summaries_dir=%s --wanted_words=yes,no "
             "--sample_rate=16000 --clip_duration_ms=500 --window_size_ms=30 --window_stride_ms=20 "
             "--feature_bin_count=10 --how_many_training_steps=%d,%d --learning_rate=%g,%g "
             "--batch_size=16 --eval_step_interval=40 --save_step_interval=40 --time_shift_ms=50 "
             "--silence_percentage=25 --unknown_percentage=25",
             prog, data, train_dir, sum_dir, STEPS_1, STEPS_2, RATE_1, RATE_2);
    int rc = ex_run(cmd, g_out, sizeof g_out, EX_STDERR, NULL);
    if (rc != 0) fputs(g_out, stderr);
    CHECK_EQ_INT(rc, 0);
    /* the schedule, and the accuracy of the last 10 steps */
    int steps = 0;
    double acc[1000];
    const char *p = g_out;
    while ((p = strstr(p, "Step #")) != NULL) {
        long step;
        double rate, a, xent;
        if (sscanf(p, "Step #%ld: rate %lf, accuracy %lf%%, cross entropy %lf", &step, &rate, &a, &xent) == 4 &&
            steps < 1000) {
            CHECK_EQ_INT(step, steps + 1);
            CHECK_NEAR(rate, step <= STEPS_1 ? RATE_1 : RATE_2, 1e-9);
            acc[steps++] = a;
        }
        p += 6;
    }
    CHECK_EQ_INT(steps, TOTAL_STEPS);
    double last = 0, first = 0;
    for (int i = 0; i < 10 && steps >= 10; i++) first += acc[i] / 10, last += acc[steps - 1 - i] / 10;
    fprintf(stderr, "speech_commands: training accuracy, first 10 steps %.1f%%, last 10 steps %.1f%%\n", first, last);
    CHECK(last >= 70.0); /* 4 labels: chance is 25% */
    CHECK_STR_CONTAINS(g_out, "Validation accuracy = ");
    CHECK_STR_CONTAINS(g_out, "Confusion Matrix:");
    CHECK_STR_CONTAINS(g_out, "Final test accuracy = ");
    /* outputs: labels, graph, checkpoints with TF's names, event files */
    char path[1200];
    snprintf(path, sizeof path, "%s/conv_labels.txt", train_dir);
    char labels[256] = {0};
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (f) {
        size_t n = fread(labels, 1, sizeof labels - 1, f);
        labels[n] = 0;
        fclose(f);
    }
    CHECK(strcmp(labels, "_silence_\n_unknown_\nyes\nno") == 0);
    snprintf(path, sizeof path, "%s/conv.pbtxt", train_dir);
    CHECK(access(path, R_OK) == 0);
    snprintf(path, sizeof path, "%s/conv.ckpt-40.index", train_dir);
    CHECK(access(path, R_OK) == 0);
    snprintf(path, sizeof path, "%s/conv.ckpt-%d", train_dir, TOTAL_STEPS);
    vg_status st;
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(path, &st);
    CHECK(r != NULL);
    if (r) {
        static const char *expected[] = {"final_fc_bias", "final_fc_weights", "first_bias",    "first_weights",
                                         "global_step",   "second_bias",      "second_weights"};
        CHECK_EQ_INT(vg_checkpoint_reader_num_tensors(r), 7);
        for (int i = 0; i < 7 && i < vg_checkpoint_reader_num_tensors(r); i++) {
            vg_dtype dt;
            vg_shape sh;
            const char *name = vg_checkpoint_reader_tensor(r, i, &dt, &sh);
            if (strcmp(name, expected[i]) != 0) fprintf(stderr, "  key %d: %s, expected %s\n", i, name, expected[i]);
            CHECK(strcmp(name, expected[i]) == 0);
        }
        CHECK(ex_ckpt_scalar(r, "global_step") == TOTAL_STEPS);
        /* first_weights [20, 8, 1, 64]: conv filter 20 (time) x 8 (frequency) */
        vg_tensor *w = vg_checkpoint_reader_read(r, "first_weights", &st);
        CHECK(w && vg_tensor_num_elements(w) == 20 * 8 * 64);
        vg_tensor_free(w);
        vg_checkpoint_reader_free(r);
    }
    static const char *subdirs[3] = {"train", "validation", "data"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "ls %s/%s/events.out.tfevents.* >/dev/null 2>&1", sum_dir, subdirs[i]);
        CHECK_EQ_INT(system(path), 0);
    }

    /* --start_checkpoint: resumes from the checkpoint's global step */
    snprintf(cmd, sizeof cmd,
             "'%s' --data_url= --data_dir=%s --train_dir=%s --summaries_dir= --wanted_words=yes,no "
             "--clip_duration_ms=500 --window_stride_ms=20 --feature_bin_count=10 "
             "--how_many_training_steps=%d,2 --learning_rate=0.001,0.001 --batch_size=16 "
             "--start_checkpoint=%s/conv.ckpt-%d",
             prog, data, train_dir, TOTAL_STEPS, train_dir, TOTAL_STEPS);
    rc = ex_run(cmd, g_out, sizeof g_out, EX_STDERR, NULL);
    if (rc != 0) fputs(g_out, stderr);
    CHECK_EQ_INT(rc, 0);
    char want[64];
    snprintf(want, sizeof want, "Training from step: %d ", TOTAL_STEPS);
    CHECK_STR_CONTAINS(g_out, want);
    snprintf(want, sizeof want, "Step #%d: ", TOTAL_STEPS + 2);
    CHECK_STR_CONTAINS(g_out, want);
}

int main(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "speech")[0]) return 1;
    RUN_TEST(test_which_set);
    RUN_TEST(test_speech_commands_train);
    if (!getenv("KEEP")) tu_rmrf(g_dir);
    TEST_MAIN_END();
}
