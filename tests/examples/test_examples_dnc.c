/* test_examples_dnc.c - runs the DNC port (examples/tf1/dnc, DeepMind's dnc train.py on
 * the repeat-copy task) with small sizes: memory 16 x 16, 4 read heads, 1 write head, an
 * LSTM controller of 32, batch 8, 120 steps. The loss must fall (the mean of the last 40
 * steps clearly below the first 40), the CheckpointSaverHook must write the checkpoints
 * holding exactly the variables Sonnet names for this graph (plus RMSProp's slots and
 * global_step), and a second run on the same directory must restore them and continue
 * from global step 120 to 130. Skips when the examples were not built. */
#include "test_util.h"
#include "example_test_util.h"
#include "vigil/vigil.h"
#include <sys/wait.h>
#include <unistd.h>

static char g_dir[512];
static char g_out[1 << 16];

static int run(const char *cmd) { return ex_run(cmd, g_out, sizeof g_out, EX_STDERR | EX_ECHO, "INFO:"); }


static void test_dnc_train_and_resume(void) {
    char prog[1024], cmd[4096];
    snprintf(prog, sizeof prog, "%s/dnc_train", VG_BINDIR);
    if (!ex_built(prog)) return;
    const char *flags = "--memory_size 16 --word_size 16 --num_read_heads 4 --num_write_heads 1 --hidden_size 32 "
                        "--batch_size 8 --learning_rate 1e-2 --seed 1 --quiet 1 --checkpoint_interval 40";
    snprintf(cmd, sizeof cmd, "'%s' %s --checkpoint_dir %s/ckpt --num_training_iterations 120 --report_interval 40", prog,
             flags, g_dir);
    CHECK_EQ_INT(run(cmd), 0);
    CHECK_STR_CONTAINS(g_out, "start iteration 0\n");
    CHECK_STR_CONTAINS(g_out, "119: Avg training loss ");
    double first = ex_value_after(g_out, "first block loss "), last = ex_value_after(g_out, "last block loss ");
    fprintf(stderr, "dnc_train: first 40 steps %g, last 40 steps %g\n", first, last);
    CHECK(!isnan(first) && !isnan(last));
    CHECK(last < 0.92 * first);

    /* the checkpoint's variables: Sonnet's names for DNC(access_config, controller_config)
     * under the module scope "dnc", RMSProp's two slots for each, global_step */
    static const char *trainable[] = {
        "dnc/lstm/b_gates", "dnc/lstm/w_gates",
        "dnc/memory_access/allocation_gate/b", "dnc/memory_access/allocation_gate/w",
        "dnc/memory_access/erase_vectors/b", "dnc/memory_access/erase_vectors/w",
        "dnc/memory_access/free_gate/b", "dnc/memory_access/free_gate/w",
        "dnc/memory_access/read_keys/b", "dnc/memory_access/read_keys/w",
        "dnc/memory_access/read_mode/b", "dnc/memory_access/read_mode/w",
        "dnc/memory_access/read_strengths/b", "dnc/memory_access/read_strengths/w",
        "dnc/memory_access/write_gate/b", "dnc/memory_access/write_gate/w",
        "dnc/memory_access/write_keys/b", "dnc/memory_access/write_keys/w",
        "dnc/memory_access/write_strengths/b", "dnc/memory_access/write_strengths/w",
        "dnc/memory_access/write_vectors/b", "dnc/memory_access/write_vectors/w",
        "dnc/output_linear/b", "dnc/output_linear/w",
    };
    int nt = (int)(sizeof trainable / sizeof trainable[0]);
    vg_status st;
    vg_checkpoint_reader *r = ex_open_ckpt(g_dir, "ckpt/model.ckpt-120", &st);
    if (r) {
        CHECK_EQ_INT(vg_checkpoint_reader_num_tensors(r), 3 * nt + 1);
        int i = 0;
        for (int k = 0; k < nt && i + 2 < vg_checkpoint_reader_num_tensors(r); k++) {
            const char *want[3] = {trainable[k], "RMSProp", "RMSProp_1"};
            for (int j = 0; j < 3; j++, i++) {
                char full[256];
                if (j) snprintf(full, sizeof full, "%s/%s", trainable[k], want[j]);
                else snprintf(full, sizeof full, "%s", want[0]);
                vg_dtype dt;
                vg_shape sh;
                const char *name = vg_checkpoint_reader_tensor(r, i, &dt, &sh);
                if (strcmp(name, full) != 0) fprintf(stderr, "  key %d: %s, expected %s\n", i, name, full);
                CHECK(strcmp(name, full) == 0);
            }
        }
        vg_dtype dt;
        vg_shape sh;
        const char *last_name = vg_checkpoint_reader_tensor(r, 3 * nt, &dt, &sh);
        CHECK(last_name && strcmp(last_name, "global_step") == 0);
        /* shapes: the controller's gates take [input 6 + reads 4 x 16 + hidden 32] */
        vg_tensor *w = vg_checkpoint_reader_read(r, "dnc/lstm/w_gates", &st);
        CHECK(w && vg_tensor_dim(w, 0) == 6 + 64 + 32 && vg_tensor_dim(w, 1) == 4 * 32);
        vg_tensor_free(w);
        CHECK(ex_ckpt_scalar(r, "global_step") == 120);
        vg_checkpoint_reader_free(r);
    }

    /* the second run restores the checkpoint and continues from its global step */
    snprintf(cmd, sizeof cmd, "'%s' %s --checkpoint_dir %s/ckpt --num_training_iterations 130 --report_interval 10", prog,
             flags, g_dir);
    CHECK_EQ_INT(run(cmd), 0);
    CHECK_STR_CONTAINS(g_out, "start iteration 120\n");
    CHECK_STR_CONTAINS(g_out, "steps 10,");
    double resumed = ex_value_after(g_out, "first block loss ");
    fprintf(stderr, "dnc_train resumed: first 10 steps %g\n", resumed);
    CHECK(resumed < first); /* trained weights, not a fresh start */
    char ckpt[1200];
    snprintf(ckpt, sizeof ckpt, "%s/ckpt/model.ckpt-130.index", g_dir);
    CHECK(access(ckpt, R_OK) == 0);

    /* bad flags: a clear message and exit status 2 */
    snprintf(cmd, sizeof cmd, "'%s' --max_length 0", prog);
    CHECK_EQ_INT(run(cmd), 2);
}

int main(void) {
    if (!tu_mkdtemp(g_dir, sizeof g_dir, "dnc")[0]) return 1;
    RUN_TEST(test_dnc_train_and_resume);
    tu_rmrf(g_dir);
    TEST_MAIN_END();
}
