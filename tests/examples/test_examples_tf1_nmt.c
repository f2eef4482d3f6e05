/* test_examples_tf1_nmt.c - runs the tensorflow/nmt port (examples/tf1/nmt, nmt_main)
 * end to end on a toy parallel corpus written here: 12 source words, each translated to
 * its own target word ("c" -> "CC"), sentences of 3..7 words in the same order (400
 * training pairs, 40 dev, 40 test), vocab files starting <unk>, <s>, </s>. The
 * attention model (scaled Luong, 32 units, 1 layer, Adam) trains 200 steps through
 * train.py's loop (train / eval / infer graphs, checkpoints, perplexity and external
 * evaluation); the greedy decoding of dev and test must reach a high exact-match and
 * BLEU (chance is ~0: a sentence is 3..7 words out of 12); the checkpoint must hold
 * nmt's variable names; beam search (width 5) through the infer graph restored from the
 * checkpoint (nmt.py's --inference_input_file) must be at least as good as greedy; a
 * short run with the Python's default --num_buckets 5 (group_by_window bucketing) trains
 * and evaluates; a vocab without the special tokens is refused with a clear message. */
#include "example_test_util.h"
#include "test_util.h"
#include "vigil/vigil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dir[512];
static char g_out[1 << 20];
static char g_prog[1024];

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static int irand(int n) { return (int)((ex_xorshift(&rs) >> 11) % (uint64_t)n); }

#define NWORDS 12

static int write_split(const char *prefix, int n) {
    char ps[800], pt[800];
    snprintf(ps, sizeof ps, "%s.src", prefix);
    snprintf(pt, sizeof pt, "%s.tgt", prefix);
    FILE *fs = fopen(ps, "w"), *ft = fopen(pt, "w");
    if (!fs || !ft) return 1;
    for (int i = 0; i < n; i++) {
        int len = 3 + irand(5);
        for (int k = 0; k < len; k++) {
            int w = irand(NWORDS);
            fprintf(fs, "%s%c", k ? " " : "", 'a' + w);
            fprintf(ft, "%s%c%c", k ? " " : "", 'A' + w, 'A' + w);
        }
        fputc('\n', fs), fputc('\n', ft);
    }
    return (fclose(fs) != 0) | (fclose(ft) != 0);
}

static int write_corpus(void) {
    char p[700];
    snprintf(p, sizeof p, "%s/vocab.src", g_dir);
    FILE *vs = fopen(p, "w");
    snprintf(p, sizeof p, "%s/vocab.tgt", g_dir);
    FILE *vt = fopen(p, "w");
    if (!vs || !vt) return 1;
    fputs("<unk>\n<s>\n</s>\n", vs), fputs("<unk>\n<s>\n</s>\n", vt);
    for (int w = 0; w < NWORDS; w++) fprintf(vs, "%c\n", 'a' + w), fprintf(vt, "%c%c\n", 'A' + w, 'A' + w);
    int rc = (fclose(vs) != 0) | (fclose(vt) != 0);
    const char *names[3] = {"train", "dev", "test"};
    const int counts[3] = {400, 40, 40};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", g_dir, names[i]);
        rc |= write_split(p, counts[i]);
    }
    return rc;
}

/* the score printed as "  <metric> <label>: X, global step N" (train) or "  <metric>: X" */
static double score(const char *out, const char *key) {
    const char *p = strstr(out, key);
    double v = -1;
    if (p && sscanf(p + strlen(key), "%lf", &v) != 1) v = -1;
    return v;
}

static int count_lines(const char *path) {
    FILE *f = fopen(path, "r");
    int n = 0, c;
    if (!f) return -1;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

#define COMMON                                                                                                 \
    "--src src --tgt tgt --vocab_prefix %s/vocab --out_dir %s/out --attention scaled_luong --num_units 32 " \
    "--num_layers 1 --num_buckets 1 --src_max_len 10 --tgt_max_len 10 --metrics bleu,accuracy "

static double g_greedy_bleu = -1, g_greedy_acc = -1;

static void test_train_greedy(void) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "'%s' " COMMON "--train_prefix %s/train --dev_prefix %s/dev --test_prefix %s/test --dropout 0 "
             "--optimizer adam --learning_rate 0.01 --num_train_steps 200 --steps_per_stats 20 --batch_size 32 "
             "--random_seed 1",
             g_prog, g_dir, g_dir, g_dir, g_dir, g_dir);
    int rc = ex_run(cmd, g_out, sizeof g_out, EX_STDERR, NULL);
    if (rc != 0) fputs(g_out, stderr);
    CHECK_EQ_INT(rc, 0);
    /* the trainable variables, in nmt's names */
    CHECK_STR_CONTAINS(g_out, "  embeddings/encoder/embedding_encoder\n");
    CHECK_STR_CONTAINS(g_out, "  dynamic_seq2seq/decoder/attention/attention_layer/kernel\n");
    /* perplexity falls (first and last stats lines) */
    double ppl0 = -1, ppl1 = -1;
    const char *p = g_out;
    while ((p = strstr(p, "  global step ")) != NULL) {
        const char *q = strstr(p, " ppl ");
        if (q) {
            double v = atof(q + 5);
            if (ppl0 < 0) ppl0 = v;
            ppl1 = v;
        }
        p += 14;
    }
    fprintf(stderr, "nmt: train perplexity %.2f at step 20, %.2f at step 200\n", ppl0, ppl1);
    CHECK(ppl0 > 5.0);  /* 15 target words: a uniform guess is 15 */
    CHECK(ppl1 < 2.0);
    CHECK(ppl1 < ppl0);
    /* internal eval at the end (translate.ckpt-200 into the eval graph) */
    const char *fin = strstr(g_out, "# Final, step 200");
    CHECK(fin != NULL);
    if (fin) {
        double v = score(fin, "eval dev: perplexity ");
        CHECK(v > 0 && v < 2.0);
    }
    /* external eval: greedy decoding of dev and test through the infer graph */
    double dev_acc = score(g_out, "  accuracy dev: "), dev_bleu = score(g_out, "  bleu dev: ");
    double test_acc = score(g_out, "  accuracy test: "), test_bleu = score(g_out, "  bleu test: ");
    fprintf(stderr, "nmt: greedy dev bleu %.1f accuracy %.1f; test bleu %.1f accuracy %.1f\n", dev_bleu, dev_acc,
            test_bleu, test_acc);
    g_greedy_acc = dev_acc, g_greedy_bleu = dev_bleu;
    CHECK(dev_acc >= 70.0 && test_acc >= 70.0);
    CHECK(dev_bleu >= 80.0 && test_bleu >= 80.0);
    char path[1200];
    snprintf(path, sizeof path, "%s/out/output_dev", g_dir);
    CHECK_EQ_INT(count_lines(path), 40);

    /* the checkpoint: nmt's variable names (and Adam's slots, the global step "Variable") */
    snprintf(path, sizeof path, "%s/out/translate.ckpt-200", g_dir);
    vg_status st;
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(path, &st);
    CHECK(r != NULL);
    if (r) {
        static const char *want[] = {"Variable",
                                     "embeddings/encoder/embedding_encoder",
                                     "embeddings/decoder/embedding_decoder",
                                     "dynamic_seq2seq/encoder/rnn/basic_lstm_cell/kernel",
                                     "dynamic_seq2seq/encoder/rnn/basic_lstm_cell/bias",
                                     "dynamic_seq2seq/decoder/memory_layer/kernel",
                                     "dynamic_seq2seq/decoder/attention/basic_lstm_cell/kernel",
                                     "dynamic_seq2seq/decoder/attention/basic_lstm_cell/bias",
                                     "dynamic_seq2seq/decoder/attention/luong_attention/attention_g",
                                     "dynamic_seq2seq/decoder/attention/attention_layer/kernel",
                                     "dynamic_seq2seq/decoder/output_projection/kernel",
                                     "dynamic_seq2seq/decoder/output_projection/kernel/Adam"};
        int n = vg_checkpoint_reader_num_tensors(r);
        for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
            bool found = false;
            for (int i = 0; i < n && !found; i++) {
                vg_dtype dt;
                vg_shape sh;
                found = strcmp(vg_checkpoint_reader_tensor(r, i, &dt, &sh), want[k]) == 0;
            }
            if (!found) fprintf(stderr, "  missing checkpoint key %s\n", want[k]);
            CHECK(found);
        }
        CHECK(ex_ckpt_scalar(r, "Variable") == 200);
        vg_tensor *emb = vg_checkpoint_reader_read(r, "embeddings/decoder/embedding_decoder", &st);
        CHECK(emb != NULL);
        if (emb) CHECK(vg_tensor_dim(emb, 0) == NWORDS + 3 && vg_tensor_dim(emb, 1) == 32);
        vg_tensor_free(emb);
        vg_checkpoint_reader_free(r);
    }
}

/* nmt.py --inference_input_file: the infer graph restored from the latest checkpoint */
static void infer(const char *mode, int beam_width, double *bleu, double *acc) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "'%s' " COMMON "--infer_mode %s --beam_width %d --inference_input_file %s/dev.src "
             "--inference_output_file %s/out/infer_%s --inference_ref_file %s/dev.tgt",
             g_prog, g_dir, g_dir, mode, beam_width, g_dir, g_dir, mode, g_dir);
    int rc = ex_run(cmd, g_out, sizeof g_out, EX_STDERR, NULL);
    if (rc != 0) fputs(g_out, stderr);
    CHECK_EQ_INT(rc, 0);
    CHECK_STR_CONTAINS(g_out, "translate.ckpt-200");
    *bleu = score(g_out, "  bleu: ");
    *acc = score(g_out, "  accuracy: ");
    char path[1200];
    snprintf(path, sizeof path, "%s/out/infer_%s", g_dir, mode);
    CHECK_EQ_INT(count_lines(path), 40);
}

static void test_infer_greedy_and_beam(void) {
    double gb, ga, bb, ba;
    infer("greedy", 0, &gb, &ga);
    infer("beam_search", 5, &bb, &ba);
    fprintf(stderr, "nmt: inference on dev: greedy bleu %.1f accuracy %.1f, beam 5 bleu %.1f accuracy %.1f\n", gb, ga,
            bb, ba);
    CHECK(ga >= 70.0 && gb >= 80.0);
    /* the same checkpoint and decoder as train's last external evaluation of dev */
    CHECK_NEAR(ga, g_greedy_acc, 1e-9);
    CHECK_NEAR(gb, g_greedy_bleu, 1e-9);
    CHECK(ba >= ga);
    CHECK(bb >= gb - 1e-9);
    CHECK(ba >= 70.0);
}

/* the Python's default --num_buckets 5: batches bucketed by length
 * (tf.contrib.data.group_by_window), for train and the external evaluations */
static void test_train_buckets(void) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "'%s' --src src --tgt tgt --vocab_prefix %s/vocab --out_dir %s/out2 --train_prefix %s/train "
             "--dev_prefix %s/dev --test_prefix %s/test --num_units 8 --num_layers 1 --num_train_steps 12 "
             "--steps_per_stats 4 --batch_size 4 --src_max_len 10 --tgt_max_len 10",
             g_prog, g_dir, g_dir, g_dir, g_dir, g_dir);
    int rc = ex_run(cmd, g_out, sizeof g_out, EX_STDERR, NULL);
    if (rc != 0) fprintf(stderr, "%s\n", g_out);
    CHECK_EQ_INT(rc, 0);
    CHECK_STR_CONTAINS(g_out, "# Final, step 12");
}

static void test_refusals(void) {
    char cmd[4096];
    int rc;
    /* a vocab without the special tokens first */
    char p[700];
    snprintf(p, sizeof p, "%s/bad.src", g_dir);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    if (f) fputs("a\nb\n", f), fclose(f);
    snprintf(p, sizeof p, "%s/bad.tgt", g_dir);
    f = fopen(p, "w");
    if (f) fputs("<unk>\n<s>\n</s>\nAA\n", f), fclose(f);
    snprintf(cmd, sizeof cmd, "'%s' --src src --tgt tgt --vocab_prefix %s/bad --out_dir %s/out3 --num_buckets 1",
             g_prog, g_dir, g_dir);
    rc = ex_run(cmd, g_out, sizeof g_out, EX_STDERR, NULL);
    CHECK(rc != 0);
    CHECK_STR_CONTAINS(g_out, "the vocab must start with <unk>, <s>, </s>");
}

int main(void) {
    snprintf(g_prog, sizeof g_prog, "%s/nmt_main", VG_BINDIR);
    if (access(g_prog, X_OK) != 0) {
        fprintf(stderr, "SKIP: nmt_main not built (-DVIGIL_EXAMPLES=ON)\n");
        TEST_MAIN_END();
    }
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "nmt")[0]) return 1;
    CHECK_EQ_INT(write_corpus(), 0);
    RUN_TEST(test_train_greedy);
    RUN_TEST(test_infer_greedy_and_beam);
    RUN_TEST(test_train_buckets);
    RUN_TEST(test_refusals);
    if (!getenv("KEEP")) tu_rmrf(g_dir);
    TEST_MAIN_END();
}
