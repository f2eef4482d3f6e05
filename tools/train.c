/*
 * train.c - `vigil train`: Fashion-MNIST under tf.train.MonitoredTrainingSession, the
 * way a TF1 program trains.
 *
 * Input pipeline (TF1's): range_input_producer(N, num_epochs, shuffle) -> DequeueUpTo a
 * chunk of indices -> IdxRecord -> Cast, * 1/255, Reshape -> shuffle_batch
 * (enqueue_many) -> the model; queue runners feed it. The end of the last epoch raises
 * OUT_OF_RANGE, which ends the loop through vg_monitored_session_end.
 *
 * Restarts: the epoch counter is a local variable (not checkpointed), so the producer
 * gets num_epochs = epochs - floor(global_step * batch / N) and a StopAtStepHook at
 * epochs * floor(N / batch) (or --steps) makes a resumed run stop where an uninterrupted
 * one would. SIGINT/SIGTERM set a flag that a hook turns into a stop request; the hooks'
 * end() then saves the final checkpoint. A second signal exits at once.
 *
 * --input queue|tfdata|tfrecord PATH reads the training examples from a TFRecord file of
 * tf.train.Examples written by `vigil convert` instead: queue = TF1's readers
 * (string_input_producer -> TFRecordReader -> parse_single_example -> decode_raw ->
 * shuffle_batch), tfdata (= tfrecord) = tf.data (TFRecordDataset -> shuffle -> repeat ->
 * parallel map(parse) -> batch -> prefetch) through a resumable iterator whose position
 * is checkpointed, so a resumed run continues with the next unseen example.
 *
 * After training, the model is evaluated on the test set in a separate graph (same
 * layer names, a Saver restoring the latest checkpoint) and the last line on stdout is
 * "test_accuracy=<value>".
 */
#include "cli.h"
#include "mnist_nets.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *train_help =
    "usage: vigil train [options]\n"
    "\n"
    "Trains a classifier on Fashion-MNIST under a MonitoredTrainingSession. Running the\n"
    "same command again continues from the latest checkpoint in --checkpoint-dir.\n"
    "\n"
    "  --model mlp|cnn|lstm         mlp: 784-256-256-10 ReLU (default); cnn: conv5x5x32,\n"
    "                               pool, conv5x5x64, pool, dense 128, dense 10; lstm:\n"
    "                               the image row by row (28 steps of 28 pixels) through\n"
    "                               an LSTM 128 (LSTMBlockFusedCell), dense 10\n"
    "  --epochs N                   epochs over the training set (default 5)\n"
    "  --steps N                    stop at global step N at the latest\n"
    "  --batch-size N               (default 64)\n"
    "  --optimizer sgd|momentum|adam|rmsprop   (default adam)\n"
    "  --lr X                       learning rate (default: adam 0.002 for mlp and\n"
    "                               0.001 for cnn, sgd 0.1, momentum 0.01, rmsprop 0.001)\n"
    "  --lr-decay linear|none       linear: decay to lr/100 at the end of the last\n"
    "                               epoch (tf.train.polynomial_decay; default)\n"
    "  --checkpoint-dir DIR         (default runs/fmnist)\n"
    "  --data-dir DIR               (default /usr/share/datasets/fashion-mnist)\n"
    "  --input idx|queue|tfdata|tfrecord [PATH]\n"
    "                               where training examples come from: idx (default,\n"
    "                               the IDX files of --data-dir), or a TFRecord file of\n"
    "                               Examples from `vigil convert` read by TF1's queue\n"
    "                               readers (queue) or by tf.data (tfdata, tfrecord: exact\n"
    "                               mid-epoch resume); GZIP/ZLIB files are recognised\n"
    "  --save-checkpoint-secs S     checkpoint every S seconds (default 600)\n"
    "  --save-checkpoint-steps N    checkpoint every N steps instead\n"
    "                               (a final checkpoint is always written at the end)\n"
    "  --save-summaries-steps N     summaries every N steps (default 100; 0 = off)\n"
    "  --log-step-count-steps N     log lines and global_step/sec every N steps (100)\n"
    "  --threads N                  session intra-op and inter-op threads (default: one\n"
    "                               per core)\n"
    "  --seed N                     graph-level random seed (default 1; 0: none)\n"
    "  --train-limit N              use only the first N training images\n"
    "  --on-nan fail|stop|ignore    a NaN loss (NanTensorHook): fail (default: exit 1),\n"
    "                               stop (end training, keep the last good checkpoint)\n"
    "                               or ignore; no checkpoint holding NaN/Inf variables\n"
    "                               is written unless ignore\n"
    "  --lr-scale linear|none       under mpirun -np N: linear (default) multiplies the\n"
    "                               learning rate by N (global batch = N x batch-size)\n"
    "  --compression none|fp16      under mpirun: gradients cross the network as IEEE\n"
    "                               half (Horovod's Compression.fp16; default none)\n"
    "  --fusion-threshold-mb X      under mpirun: gradient buckets of at most X MB\n"
    "                               (default 64, or HOROVOD_FUSION_THRESHOLD bytes;\n"
    "                               0: one allreduce per gradient)\n"
    "  --hierarchical               under mpirun: reduce inside each host, ring across\n"
    "                               hosts (also VIGIL_HIERARCHICAL=1)\n"
    "  --collective-timeout S       under mpirun: a collective that makes no progress for\n"
    "                               S seconds (default 300; 0 = never) ends the run with\n"
    "                               DEADLINE_EXCEEDED naming the peer (a dead host, a cut\n"
    "                               link); the rank exits 1 without finalising MPI\n"
    "  --heartbeat-timeout S        under mpirun: a peer whose heartbeats (UDP, outside\n"
    "                               MPI) stop for S seconds (default 20; 0 = none) ends\n"
    "                               the run with UNAVAILABLE naming it; a peer that\n"
    "                               still beats is waited for at the end however long\n"
    "  --precision fp32|bf16        bf16: TF's mixed-precision graph rewrite with bfloat16\n"
    "                               (MatMul and Conv2D in bfloat16, variables float32)\n"
    "  --quiet                      no progress output; only the result line\n"
    "  --verbose, -v                debug log lines, including the compute backend\n"
    "                               (oneDNN or OpenBLAS; VG_BACKEND=openblas|dnnl forces one)\n"
    "\n"
    "The checkpoint directory is locked (flock) for the whole run: a second trainer on\n"
    "the same directory fails at once. An unreadable 'checkpoint' state file stops the\n"
    "run (it never starts over from step 0).\n"
    "\n"
    "Under mpirun -np N it trains data-parallel (docs/distributed.md): each rank reads\n"
    "its own shard, gradients are averaged by allreduce, and only rank 0 prints,\n"
    "writes checkpoints and events, and evaluates.\n"
    "\n"
    "Prints test_accuracy=<value> as its last line (exit 0). On SIGINT/SIGTERM it stops,\n"
    "saves a checkpoint and exits 0 without evaluating; a second signal exits at once.\n";

/* ------------------------------------------------------------------------ */
/* options */

typedef struct train_opts {
    bool cnn;
    int64_t epochs, steps, batch;
    const char *optimizer;
    double lr;
    bool lr_decay; /* linear decay to 1% of lr at the last step */
    const char *ckpt_dir, *data_dir;
    int64_t save_ckpt_steps;
    double save_ckpt_secs;
    int64_t save_summaries_steps, log_steps;
    int threads;
    int64_t seed, train_limit;
    bool quiet, verbose;
    int on_nan; /* ON_NAN_* */
    bool lstm;  /* --model lstm: image rows through an LSTM (inputs as for mlp) */
    int input;  /* INPUT_* */
    const char *input_path;
    bool lr_scale_none; /* --lr-scale none (default linear under mpirun) */
    bool fp16, hierarchical; /* --compression fp16, --hierarchical */
    double fusion_mb;        /* --fusion-threshold-mb; < 0: the default */
    bool bf16;          /* --precision bf16: TF's mixed-precision graph rewrite (bfloat16) */
} train_opts;

enum { INPUT_IDX = 0, INPUT_QUEUE = 1, INPUT_TFDATA = 2 };

/* The MPI world (issue 15): rank and size; 0 and 1 without mpirun. */
static int g_rank = 0, g_size = 1;

enum { ON_NAN_FAIL = 0, ON_NAN_STOP = 1, ON_NAN_IGNORE = 2 };

static int parse_int_opt(const char *name, const char *v, int64_t lo, int64_t *out) {
    if (!cli_parse_i64(v, out) || *out < lo)
        return cli_usage_error("train", "%s needs an integer >= %lld, got '%s'", name, (long long)lo, v);
    return 0;
}

static int parse_train_opts(int argc, char **argv, train_opts *o) {
    *o = (train_opts){false, 5, -1, 64, NULL, -1, true, "runs/fmnist", "/usr/share/datasets/fashion-mnist", -1, -1,
                      100, 100, 0, 1, -1, false, false, ON_NAN_FAIL, false, INPUT_IDX, NULL, false,
                      false, false, -1, false};
    static const char *with_value[] = {"--model", "--epochs", "--steps", "--batch-size", "--optimizer", "--lr", "--lr-decay",
                                       "--checkpoint-dir", "--data-dir", "--save-checkpoint-steps",
                                       "--save-checkpoint-secs", "--save-summaries-steps", "--log-step-count-steps",
                                       "--threads", "--seed", "--train-limit", "--on-nan", "--input", "--lr-scale",
                                       "--compression", "--fusion-threshold-mb", "--collective-timeout", "--heartbeat-timeout", "--precision"};
    bool ck_steps_set = false, ck_secs_set = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL, *name = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(train_help, stdout);
            return -1;
        }
        if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            o->quiet = true;
            continue;
        }
        if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) {
            o->verbose = true;
            continue;
        }
        if (!strcmp(a, "--hierarchical")) {
            o->hierarchical = true;
            continue;
        }
        for (size_t k = 0; k < sizeof with_value / sizeof with_value[0] && !name; k++) {
            bool miss = false;
            if (cli_opt(argc, argv, &i, with_value[k], &v, &miss)) {
                if (miss) return cli_usage_error("train", "%s needs a value", a);
                name = with_value[k];
            }
        }
        if (!name) return cli_usage_error("train", a[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'", a);
        int64_t n = 0;
        int rc = 0;
        if (!strcmp(name, "--input")) {
            if (!strcmp(v, "idx")) o->input = INPUT_IDX;
            else if (!strcmp(v, "queue")) o->input = INPUT_QUEUE;
            else if (!strcmp(v, "tfdata") || !strcmp(v, "tfrecord")) o->input = INPUT_TFDATA;
            else rc = cli_usage_error("train", "--input needs idx, queue, tfdata or tfrecord, got '%s'", v);
            if (!rc && o->input != INPUT_IDX) {
                if (i + 1 >= argc || !argv[i + 1][0]) rc = cli_usage_error("train", "--input %s needs a TFRecord file", v);
                else o->input_path = argv[++i];
            }
        } else if (!strcmp(name, "--model")) {
            o->cnn = o->lstm = false;
            if (!strcmp(v, "mlp")) o->cnn = false;
            else if (!strcmp(v, "cnn")) o->cnn = true;
            else if (!strcmp(v, "lstm")) o->lstm = true;
            else rc = cli_usage_error("train", "--model needs mlp, cnn or lstm, got '%s'", v);
        } else if (!strcmp(name, "--epochs")) {
            rc = parse_int_opt(name, v, 1, &o->epochs);
        } else if (!strcmp(name, "--steps")) {
            rc = parse_int_opt(name, v, 0, &o->steps);
        } else if (!strcmp(name, "--batch-size")) {
            rc = parse_int_opt(name, v, 1, &o->batch);
            if (!rc && o->batch > 65536) rc = cli_usage_error("train", "--batch-size is too large");
        } else if (!strcmp(name, "--optimizer")) {
            if (strcmp(v, "sgd") && strcmp(v, "momentum") && strcmp(v, "adam") && strcmp(v, "rmsprop"))
                rc = cli_usage_error("train", "--optimizer needs sgd, momentum, adam or rmsprop, got '%s'", v);
            o->optimizer = v;
        } else if (!strcmp(name, "--lr")) {
            if (!cli_parse_double(v, &o->lr) || o->lr <= 0) rc = cli_usage_error("train", "--lr needs a positive number");
        } else if (!strcmp(name, "--lr-decay")) {
            if (!strcmp(v, "linear")) o->lr_decay = true;
            else if (!strcmp(v, "none")) o->lr_decay = false;
            else rc = cli_usage_error("train", "--lr-decay needs linear or none, got '%s'", v);
        } else if (!strcmp(name, "--checkpoint-dir")) {
            if (!*v) rc = cli_usage_error("train", "--checkpoint-dir needs a directory");
            o->ckpt_dir = v;
        } else if (!strcmp(name, "--data-dir")) {
            if (!*v) rc = cli_usage_error("train", "--data-dir needs a directory");
            o->data_dir = v;
        } else if (!strcmp(name, "--save-checkpoint-steps")) {
            rc = parse_int_opt(name, v, 1, &o->save_ckpt_steps);
            ck_steps_set = true;
        } else if (!strcmp(name, "--save-checkpoint-secs")) {
            if (!cli_parse_double(v, &o->save_ckpt_secs) || o->save_ckpt_secs <= 0)
                rc = cli_usage_error("train", "--save-checkpoint-secs needs a positive number");
            ck_secs_set = true;
        } else if (!strcmp(name, "--save-summaries-steps")) {
            rc = parse_int_opt(name, v, 0, &o->save_summaries_steps);
        } else if (!strcmp(name, "--log-step-count-steps")) {
            rc = parse_int_opt(name, v, 0, &o->log_steps);
        } else if (!strcmp(name, "--threads")) {
            rc = parse_int_opt(name, v, 1, &n);
            if (!rc && n > 256) rc = cli_usage_error("train", "--threads is too large");
            o->threads = (int)n;
        } else if (!strcmp(name, "--seed")) {
            rc = parse_int_opt(name, v, 0, &o->seed);
        } else if (!strcmp(name, "--train-limit")) {
            rc = parse_int_opt(name, v, 1, &o->train_limit);
        } else if (!strcmp(name, "--on-nan")) {
            if (!strcmp(v, "fail")) o->on_nan = ON_NAN_FAIL;
            else if (!strcmp(v, "stop")) o->on_nan = ON_NAN_STOP;
            else if (!strcmp(v, "ignore")) o->on_nan = ON_NAN_IGNORE;
            else rc = cli_usage_error("train", "--on-nan needs fail, stop or ignore, got '%s'", v);
        } else if (!strcmp(name, "--lr-scale")) {
            if (!strcmp(v, "linear")) o->lr_scale_none = false;
            else if (!strcmp(v, "none")) o->lr_scale_none = true;
            else rc = cli_usage_error("train", "--lr-scale needs linear or none, got '%s'", v);
        } else if (!strcmp(name, "--compression")) {
            if (!strcmp(v, "fp16")) o->fp16 = true;
            else if (!strcmp(v, "none")) o->fp16 = false;
            else rc = cli_usage_error("train", "--compression needs none or fp16, got '%s'", v);
        } else if (!strcmp(name, "--fusion-threshold-mb")) {
            if (!cli_parse_double(v, &o->fusion_mb) || o->fusion_mb < 0 || o->fusion_mb > 1e6)
                rc = cli_usage_error("train", "--fusion-threshold-mb needs a number of MB >= 0");
        } else if (!strcmp(name, "--collective-timeout")) {
            double secs = -1;
            vg_status tst;
            if (!cli_parse_double(v, &secs) || secs < 0 || secs > 1e9 ||
                vg_dist_set_collective_timeout_ms((int64_t)(secs * 1000 + 0.5), &tst) != VG_OK)
                rc = cli_usage_error("train", "--collective-timeout needs seconds >= 0, got '%s'", v);
        } else if (!strcmp(name, "--heartbeat-timeout")) { /* set before the world starts (cli_train) */
            double secs = -1;
            if (!cli_parse_double(v, &secs) || secs < 0 || secs > 1e9)
                rc = cli_usage_error("train", "--heartbeat-timeout needs seconds >= 0, got '%s'", v);
        } else if (!strcmp(name, "--precision")) {
            if (!strcmp(v, "fp32") || !strcmp(v, "float32")) o->bf16 = false;
            else if (!strcmp(v, "bf16") || !strcmp(v, "bfloat16")) o->bf16 = true;
            else rc = cli_usage_error("train", "--precision needs fp32 or bf16, got '%s'", v);
        }
        if (rc) return rc;
    }
    if (ck_steps_set && ck_secs_set)
        return cli_usage_error("train", "give --save-checkpoint-steps or --save-checkpoint-secs, not both");
    if (!o->optimizer) o->optimizer = "adam";
    if (o->lr < 0) {
        if (!strcmp(o->optimizer, "sgd")) o->lr = 0.1;
        else if (!strcmp(o->optimizer, "momentum")) o->lr = 0.01;
        else if (!strcmp(o->optimizer, "adam")) o->lr = o->cnn ? 1e-3 : 2e-3;
        else o->lr = 1e-3;
    }
    if (!ck_steps_set && !ck_secs_set) o->save_ckpt_secs = 600;
    if (o->threads == 0) { /* one per core: fastest on 2 cores, see docs/cli.md */
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        o->threads = n < 1 ? 1 : n > 64 ? 64 : (int)n;
    }
    return 0;
}

int cli_train_parse_only(int argc, char **argv) {
    train_opts o;
    return parse_train_opts(argc, argv, &o);
}

/* ------------------------------------------------------------------------ */
/* logging and signals */

static volatile sig_atomic_t g_signal = 0;
static volatile sig_atomic_t g_live_line = 0; /* a progress line is on the terminal */

static void on_signal(int sig) {
    if (g_signal) {
        static const char m[] = "\nvigil: second signal: exiting at once\n";
        ssize_t w = write(2, m, sizeof m - 1);
        (void)w;
        _exit(128 + sig);
    }
    g_signal = sig;
    static const char m[] = "\nvigil: stopping: finishing the step and saving a checkpoint (signal again to exit "
                            "at once)\n";
    ssize_t w = write(2, m, sizeof m - 1);
    (void)w;
}

/* SIGINT/SIGTERM are taken by sigwait() on a thread of their own and blocked in every
 * other thread this process creates from here on (threads inherit the mask), so a signal
 * never interrupts a compute kernel. Interrupting one is not harmless: with oneDNN's JIT
 * sgemm on the stack, a handler running on the compute thread corrupted the heap
 * (glibc "corrupted size vs. prev_size", seen in 1 of 8 stops of `--model lstm`). The
 * handler stays installed for threads that existed before (OpenBLAS's pool). */
static void *signal_thread(void *arg) {
    sigset_t *set = arg;
    for (;;) {
        int sig = 0;
        if (sigwait(set, &sig) == 0) on_signal(sig);
    }
    return NULL;
}

static void install_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    static sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_t t;
    if (pthread_sigmask(SIG_BLOCK, &set, NULL) == 0 && pthread_create(&t, NULL, signal_thread, &set) == 0)
        pthread_detach(t);
    else
        pthread_sigmask(SIG_UNBLOCK, &set, NULL); /* no signal thread: the handler takes them */
}

static void log_to_stderr(void *payload, vg_log_level level, const char *msg) {
    static const char *names[] = {"DEBUG", "INFO", "WARNING", "ERROR"};
    const char *clear = g_live_line ? "\r\033[K" : "";
    fprintf(stderr, "%s%s: %s\n", clear, names[level >= 0 && level <= 3 ? level : 1], msg);
}

static bool g_quiet = false;
static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...) {
    if (g_quiet) return;
    va_list ap;
    va_start(ap, fmt);
    cli_vmessage(fmt, ap);
    va_end(ap);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------------ */
/* data files */

typedef struct data_files {
    char train_images[4096], train_labels[4096], test_images[4096], test_labels[4096];
} data_files;

/* "<dir>/<name>.gz" or "<dir>/<name>". */
static bool find_data_file(const char *dir, const char *name, char *out, size_t len) {
    struct stat sb;
    snprintf(out, len, "%s/%s.gz", dir, name);
    if (stat(out, &sb) == 0) return true;
    snprintf(out, len, "%s/%s", dir, name);
    return stat(out, &sb) == 0;
}

static int locate_data(const char *dir, data_files *d) {
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return cli_fail("Fashion-MNIST data directory %s not found (%s); install Debian's dataset-fashion-mnist "
                        "package or pass --data-dir DIR",
                        dir, stat(dir, &sb) != 0 ? strerror(errno) : "not a directory");
    struct { const char *name; char *out; } f[] = {
        {"train-images-idx3-ubyte", d->train_images}, {"train-labels-idx1-ubyte", d->train_labels},
        {"t10k-images-idx3-ubyte", d->test_images},   {"t10k-labels-idx1-ubyte", d->test_labels},
    };
    for (int i = 0; i < 4; i++)
        if (!find_data_file(dir, f[i].name, f[i].out, 4096))
            return cli_fail("%s/%s(.gz) not found: the data directory %s does not hold Fashion-MNIST", dir, f[i].name,
                            dir);
    return 0;
}

/* Image and label files must be [N,28,28] uint8 and [N] uint8 with labels < 10:
 * INVALID_ARGUMENT naming the file (and the record for a bad label) otherwise. Reads
 * the label file (small); the image file's header only. *n = N. */
static vg_code check_data_pair(const char *images, const char *labels, int64_t *n, vg_status *st) {
    int nd = 0, type = 0;
    int64_t d[4] = {0};
    if (vg_idx_header(images, &type, d, &nd, st) != VG_OK) return st->code;
    if (type != VG_IDX_U8)
        return vg_status_set(st, VG_DATA_LOSS, "%s: IDX element type 0x%02x, expected unsigned bytes (0x08)", images,
                             (unsigned)type);
    int64_t ni = d[0];
    bool ok = nd == 3 && d[1] == 28 && d[2] == 28;
    char shape[64];
    if (nd == 3) snprintf(shape, sizeof shape, "[%lld,%lld,%lld]", (long long)d[0], (long long)d[1], (long long)d[2]);
    else snprintf(shape, sizeof shape, "rank %d", nd);
    if (!ok)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: images must be 28x28 ([N,28,28] uint8), the file holds %s",
                             images, shape);
    if (ni == 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: the file holds no images", images);
    int64_t ld[4];
    void *lab = NULL;
    size_t lb;
    if (vg_idx_read(labels, VG_IDX_U8, ld, &nd, &lab, &lb, st) != VG_OK) return st->code;
    vg_code c = VG_OK;
    if (nd != 1 || ld[0] != ni)
        c = vg_status_set(st, VG_INVALID_ARGUMENT, "%s: %lld labels (rank %d) for the %lld images of %s", labels,
                          (long long)ld[0], nd, (long long)ni, images);
    for (int64_t i = 0; c == VG_OK && i < ld[0]; i++)
        if (((const uint8_t *)lab)[i] > 9)
            c = vg_status_set(st, VG_INVALID_ARGUMENT, "%s: record %lld has label %u, outside the classes 0..9", labels,
                              (long long)i, ((const uint8_t *)lab)[i]);
    vg_free(lab);
    *n = ni;
    return c;
}

/* mkdir -p: PERMISSION_DENIED, NOT_FOUND or FAILED_PRECONDITION naming the directory. */
/* The library's lock on the checkpoint directory (vg_checkpoint_dir_lock_acquire:
 * flock, the holder's pid in DIR/.vigil-train.pid), held for the whole run: the
 * checkpoint lookup before training, training (the session's own lock is turned off:
 * this process holds it) and the evaluation; released when cli_train returns (the
 * kernel drops it too if the process dies first). Returns false after reporting. */
static vg_dir_lock *g_ckpt_lock; /* released at the end of cli_train */

static bool lock_checkpoint_dir(const char *dir) {
    vg_status st;
    if ((g_ckpt_lock = vg_checkpoint_dir_lock_acquire(dir, &st))) return true;
    vg_status hint = st;
    if (st.code == VG_FAILED_PRECONDITION && strstr(st.msg, "is locked by"))
        vg_status_set(&hint, st.code, "%s; wait for it or use another --checkpoint-dir", st.msg);
    cli_fail_status(&hint);
    return false;
}

/* ------------------------------------------------------------------------ */
/* model */

/* The MLP or the CNN on x ([k,784] or [k,28,28,1]); same layer names in every graph
 * ("dense", "dense_1", ... / "conv2d", ...), so checkpoints of one restore into the
 * other. */
static vg_output build_model(vg_graph *g, vg_output x, const train_opts *o) {
    if (o->lstm) {
        /* TF1's row-by-row classifier: x [k, 784] -> [28, k, 28] time-major ->
         * tf.contrib.rnn.LSTMBlockFusedCell(128) under "rnn" -> last h -> dense 10 */
        vg_output rows = vg_reshape_c(g, x, (const int64_t[]){-1, 28, 28}, 3, "rows");
        vg_output seq = vg_transpose_c(g, rows, (const int32_t[]){1, 0, 2}, 3, "time_major");
        vg_rnn_cell *cell = vg_lstm_block_fused_cell_new(128, 1.0f, 0.0f, false);
        vg_output outs, fin[2] = {{NULL, 0}, {NULL, 0}};
        vg_variable_scope_push(g, "rnn", NULL); /* with tf.variable_scope("rnn") */
        if (cell) vg_fused_rnn(cell, g, seq, NULL, VG_FLOAT, (vg_output){NULL, 0}, &outs, fin, NULL);
        else vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "out of memory creating the LSTM");
        vg_variable_scope_pop(g);
        vg_rnn_cell_free(cell);
        return vg_layers_dense(g, fin[1], 10, VG_ACT_NONE, NULL);
    }
    return o->cnn ? mnist_cnn(g, x, "VALID") : mnist_mlp(g, x);
}

static vg_optimizer *make_optimizer(const train_opts *o) {
    if (!strcmp(o->optimizer, "momentum")) return vg_optimizer_new_momentum(o->lr, 0.9, false);
    if (!strcmp(o->optimizer, "adam")) return vg_optimizer_new_adam(o->lr, 0.9, 0.999, 1e-8);
    if (!strcmp(o->optimizer, "rmsprop")) return vg_optimizer_new_rmsprop(o->lr, 0.9, 0.0, 1e-10);
    return vg_optimizer_new_sgd(o->lr);
}

#define MAX_GUARDED 64

typedef struct train_graph {
    vg_graph *g;
    vg_op *train_op;
    vg_output loss, accuracy, step; /* step: the global step's snapshot */
    vg_output finite[MAX_GUARDED];  /* per float variable: all(is_finite(v)) */
    const char *finite_names[MAX_GUARDED];
    int nfinite;
} train_graph;

/* images uint8 [k,28,28] -> float [k,784] or [k,28,28,1] in [0,1] */
static vg_output preprocess(vg_graph *g, vg_output images, bool cnn) {
    vg_output x = vg_mul(g, vg_cast(g, images, VG_FLOAT, NULL), vg_const_f32(g, 1.0f / 255.0f, "scale"), NULL);
    if (cnn) return vg_reshape_c(g, x, (const int64_t[]){-1, 28, 28, 1}, 4, "images");
    return vg_reshape_c(g, x, (const int64_t[]){-1, 784}, 2, "images");
}

/* ------------------------------------------------------------------------ */
/* --input queue|tfdata: TFRecord files of Examples written by `vigil convert` */

/* The compression of a TFRecord file from its first bytes: GZIP's magic, a zlib
 * header, else none. */
static const char *tfrecord_compression(const char *path) {
    unsigned char b[2] = {0, 0};
    /* O_NONBLOCK + regular files only: a FIFO must not block here; the reader that
     * opens the file next reports it as "not a regular file" */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat sb;
    ssize_t n = 0;
    if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) n = read(fd, b, 2);
    if (fd >= 0) close(fd);
    if (n == 2 && b[0] == 0x1f && b[1] == 0x8b) return "GZIP";
    if (n == 2 && b[0] == 0x78 && ((b[0] << 8) | b[1]) % 31 == 0) return "ZLIB";
    return "";
}

/* convert_to_records.py's layout: image_raw (bytes) and label (int64) -> the image as
 * float [784] or [28, 28, 1] in [0, 1], and the label. */
static void parse_fashion_example(vg_graph *g, vg_output serialized, bool cnn, vg_output out[2]) {
    vg_feature_spec specs[2] = {{"image_raw", VG_STRING, false, vg_shape_make(NULL, 0), {NULL, 0}},
                                {"label", VG_INT64, false, vg_shape_make(NULL, 0), {NULL, 0}}};
    vg_output dense[2] = {{NULL, 0}, {NULL, 0}};
    vg_parse_single_example(g, serialized, specs, 2, dense, NULL, "ParseSingleExample");
    vg_output px = vg_decode_raw(g, dense[0], VG_UINT8, true, "DecodeRaw");
    vg_output x = vg_mul(g, vg_cast(g, px, VG_FLOAT, NULL), vg_const_f32(g, 1.0f / 255.0f, "scale"), NULL);
    out[0] = cnn ? vg_reshape_c(g, x, (const int64_t[]){28, 28, 1}, 3, "image")
                 : vg_reshape_c(g, x, (const int64_t[]){784}, 1, "image");
    out[1] = dense[1];
}

static vg_code parse_map_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    parse_fashion_example(fg, args[0], *(const bool *)p, outs);
    *nouts = 2;
    return vg_graph_status(fg, NULL);
}

/* Number of records in a TFRecord file (read once through tf.data). */
static vg_code count_records(const char *path, const char *comp, int64_t *n, vg_status *st) {
    *n = 0;
    vg_graph *g = vg_graph_new();
    if (!g) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    vg_output ds = vg_dataset_batch(g, vg_dataset_tfrecord(g, vg_const_string(g, path, "filenames"), comp, NULL), 4096,
                                    false, NULL);
    vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
    vg_session *s = vg_graph_status(g, st) == VG_OK ? vg_session_new(g, NULL, st) : NULL;
    vg_code c = s ? VG_OK : st->code;
    vg_output recs = vg_out(next, 0);
    while (c == VG_OK) {
        vg_tensor *t = NULL;
        c = vg_session_run(s, NULL, NULL, NULL, 0, &recs, &t, 1, NULL, 0, NULL, st);
        if (c == VG_OK) *n += vg_tensor_dim(t, 0);
        vg_tensor_free(t);
    }
    if (c == VG_OUT_OF_RANGE) {
        c = VG_OK;
        vg_status_clear(st);
    }
    vg_session_free(s);
    vg_graph_free(g);
    if (c == VG_OK && *n == 0) c = vg_status_set(st, VG_INVALID_ARGUMENT, "%s: the file holds no records", path);
    return c;
}

/* After the input pipeline failed to parse a record: reads path again, record by
 * record, through the same parsing as training, and names the first record that fails
 * (0-based index, ordinal and, for an uncompressed file, its byte offset), as the
 * pipeline itself cannot (it shuffles, and ParseSingleExample sees one record). Prints
 * nothing when every record parses. */
static void report_bad_record(const char *path, bool cnn) {
    const char *comp = tfrecord_compression(path);
    vg_status st;
    vg_graph *g = vg_graph_new();
    if (!g) return;
    vg_output ds = vg_dataset_batch(g, vg_dataset_tfrecord(g, vg_const_string(g, path, "filenames"), comp, NULL), 1024,
                                    false, NULL);
    vg_op *next = vg_iterator_get_next(g, vg_make_one_shot_iterator(g, ds, NULL), NULL);
    vg_output rec = vg_placeholder(g, VG_STRING, NULL, 0, "record"), parsed[2];
    parse_fashion_example(g, rec, cnn, parsed);
    vg_session *s = vg_graph_status(g, &st) == VG_OK ? vg_session_new(g, NULL, &st) : NULL;
    vg_code c = s ? VG_OK : st.code;
    vg_output recs = vg_out(next, 0);
    int64_t index = 0;
    uint64_t offset = 0;
    while (c == VG_OK) {
        vg_tensor *t = NULL;
        if (vg_session_run(s, NULL, NULL, NULL, 0, &recs, &t, 1, NULL, 0, NULL, &st) != VG_OK) break;
        for (int64_t i = 0; i < vg_tensor_dim(t, 0) && c == VG_OK; i++, index++) {
            size_t len = 0;
            const char *b = vg_tensor_string(t, i, &len);
            vg_tensor *one = vg_tensor_new_string_scalar(b ? b : "", b ? len : 0, &st), *outs[2] = {NULL, NULL};
            if (!one) {
                c = st.code;
                break;
            }
            c = vg_session_run(s, NULL, &rec, &one, 1, parsed, outs, 2, NULL, 0, NULL, &st);
            if (c != VG_OK) {
                char why[VG_STATUS_MSG_MAX];
                snprintf(why, sizeof why, "%s", st.msg);
                why[strcspn(why, "\n")] = 0; /* the message, without its node trace */
                int64_t ord = index + 1;
                const char *sfx = ord % 100 >= 11 && ord % 100 <= 13 ? "th"
                                  : ord % 10 == 1                    ? "st"
                                  : ord % 10 == 2                    ? "nd"
                                  : ord % 10 == 3                    ? "rd"
                                                                     : "th";
                fprintf(stderr,
                        "vigil: %s: record %lld (the %lld%s record, at byte offset %llu%s%s%s) does not parse as a "
                        "Fashion-MNIST Example: %s\n",
                        path, (long long)index, (long long)ord, sfx, (unsigned long long)offset,
                        comp[0] ? " of its decompressed " : "", comp, comp[0] ? " data" : "", why);
            }
            offset += (uint64_t)len + 16; /* length, its CRC, the data, its CRC */
            vg_tensor_free(one);
            vg_tensor_free(outs[0]);
            vg_tensor_free(outs[1]);
        }
        vg_tensor_free(t);
    }
    vg_session_free(s);
    vg_graph_free(g);
}

/* tf.train.polynomial_decay(lr, global_step, decay_steps, end = lr / 100, power 1):
 * lr decays linearly to 1% of itself at decay_steps and stays there. */
static vg_output linear_decay(vg_graph *g, double lr, vg_output step, int64_t decay_steps) {
    vg_graph_push_scope(g, "PolynomialDecay");
    float end = (float)(lr / 100);
    vg_output frac = vg_minimum(g, vg_div(g, vg_cast(g, step, VG_FLOAT, NULL),
                                          vg_const_f32(g, (float)decay_steps, "decay_steps"), NULL),
                                vg_const_f32(g, 1.0f, "one"), NULL);
    vg_output rest = vg_sub(g, vg_const_f32(g, 1.0f, "one_1"), frac, NULL);
    vg_output out = vg_add(g, vg_mul(g, vg_const_f32(g, (float)lr - end, "range"), rest, NULL),
                           vg_const_f32(g, end, "end_learning_rate"), "learning_rate");
    vg_graph_pop_scope(g);
    return out;
}

static vg_code build_train_graph(const train_opts *o, const data_files *d, int64_t n_train, int64_t num_epochs,
                                 int64_t decay_steps, int64_t seed, train_graph *tg, vg_status *st) {
    vg_graph *g = tg->g = vg_graph_new();
    if (!g) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory creating the graph");
    vg_graph_set_seed(g, seed);
    vg_output gs = vg_get_or_create_global_step(g);
    tg->step = vg_variable_snapshot(gs.op);
    if (!tg->step.op) tg->step = vg_identity(g, gs, "global_step_value");
    /* input pipeline */
    vg_output batch[2];
    int b = (int)o->batch;
    if (o->input == INPUT_IDX) {
        const int chunk = 256;
        vg_output idx_q = vg_range_input_producer(g, n_train, num_epochs, true, 0, 2 * chunk, "input_producer");
        vg_op *deq = vg_queue_dequeue_up_to(g, idx_q, vg_const_i32(g, chunk, "chunk"), NULL);
        vg_output idx = vg_out(deq, 0);
        if (g_size > 1) { /* this rank's shard: images rank, rank + N, rank + 2N, ... */
            vg_dtype it = vg_output_dtype(idx);
            idx = vg_add(g, vg_mul(g, idx, vg_const_fill(g, it, NULL, 0, g_size, "num_shards"), NULL),
                         vg_const_fill(g, it, NULL, 0, g_rank, "shard_index"), "shard");
        }
        vg_op *rec = vg_idx_record(g, d->train_images, d->train_labels, idx, "read");
        vg_output ex[2] = {preprocess(g, vg_out(rec, 0), o->cnn), vg_out(rec, 1)};
        vg_shuffle_batch(g, ex, 2, b, 20 * b, 10 * b, 1, 0, true, "shuffle_batch", batch);
    } else if (o->input == INPUT_QUEUE) { /* TF1's readers */
        const char *path = o->input_path;
        vg_output files = vg_const_array(g, VG_STRING, (const int64_t[]){1}, 1, &path, "input_files");
        vg_output q = vg_string_input_producer(g, files, num_epochs, false, 0, 32, "input_producer");
        vg_op *read = vg_reader_read(g, vg_tfrecord_reader(g, tfrecord_compression(path), "TFRecordReader"), q,
                                     "ReaderReadV2");
        vg_output ex[2];
        parse_fashion_example(g, vg_out(read, 1), o->cnn, ex);
        vg_shuffle_batch(g, ex, 2, b, 20 * b, 10 * b, 1, 0, false, "shuffle_batch", batch);
    } else { /* tf.data, resumable: the iterator's position is checkpointed */
        static bool cnn_flag[2] = {false, true};
        vg_output ds = vg_dataset_tfrecord(g, vg_const_string(g, o->input_path, "filenames"),
                                           tfrecord_compression(o->input_path), NULL);
        if (g_size > 1) ds = vg_dataset_shard(g, ds, g_size, g_rank, NULL); /* this rank's records */
        if (o->train_limit > 0) ds = vg_dataset_take(g, ds, n_train, NULL);
        ds = vg_dataset_shuffle(g, ds, n_train < 10000 ? n_train : 10000, 0, true, NULL);
        ds = vg_dataset_repeat(g, ds, o->epochs, NULL);
        ds = vg_dataset_map_parallel(g, ds, parse_map_fn, &cnn_flag[o->cnn], o->threads > 1 ? o->threads : 1, NULL);
        ds = vg_dataset_prefetch(g, vg_dataset_batch(g, ds, b, true, NULL), 2, NULL);
        vg_output pos;
        vg_op *next = vg_iterator_get_next_resumable(g, vg_make_one_shot_iterator(g, ds, "Iterator"), &pos, NULL);
        batch[0] = vg_out(next, 0), batch[1] = vg_out(next, 1);
    }
    /* model, loss, accuracy */
    vg_output logits = build_model(g, batch[0], o);
    vg_op *xent = vg_sparse_softmax_xent(g, logits, batch[1], "xent");
    tg->loss = vg_reduce_mean(g, vg_out(xent, 0), NULL, -1, false, "cross_entropy");
    vg_output correct = vg_equal(g, vg_argmax(g, logits, 1, VG_INT64, NULL), batch[1], NULL);
    tg->accuracy = vg_reduce_mean(g, vg_cast(g, correct, VG_FLOAT, NULL), NULL, -1, false, "batch_accuracy");
    vg_optimizer *opt = make_optimizer(o);
    if (opt && o->bf16) opt = vg_enable_mixed_precision_graph_rewrite(opt); /* sessions from now on */
    if (!opt) return vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory creating the optimizer");
    if (o->lr_decay) {
        vg_output lr = linear_decay(g, o->lr, tg->step, decay_steps);
        vg_optimizer_set_learning_rate_tensor(opt, lr);
        vg_summary_scalar(g, "learning_rate", lr);
    }
    vg_dist_options dopt = {0}; /* Horovod's defaults (HOROVOD_FUSION_THRESHOLD, else 64 MB) */
    if (o->fusion_mb >= 0) dopt.fusion_threshold_bytes = (int64_t)(o->fusion_mb * 1024 * 1024);
    dopt.no_fusion = o->fusion_mb >= 0 && dopt.fusion_threshold_bytes == 0;
    dopt.compression = o->fp16 ? VG_DIST_COMPRESSION_FP16 : VG_DIST_COMPRESSION_NONE;
    dopt.hierarchical = o->hierarchical;
    if (g_size > 1) tg->train_op = vg_dist_minimize(opt, g, tg->loss, NULL, 0, gs, &dopt, NULL);
    else tg->train_op = vg_optimizer_minimize(opt, g, tg->loss, NULL, 0, gs, NULL);
    vg_optimizer_free(opt);
    /* the checkpoint guard's checks: every float variable (weights and optimizer slots)
     * must be finite before a checkpoint is written */
    int ng;
    const vg_output *gvars = vg_graph_collection(g, VG_GLOBAL_VARIABLES, &ng);
    vg_graph_push_scope(g, "checkpoint_guard");
    for (int i = 0; i < ng && tg->nfinite < MAX_GUARDED; i++) {
        if (vg_output_dtype(gvars[i]) != VG_FLOAT) continue;
        vg_output snap = vg_variable_snapshot(gvars[i].op);
        if (!snap.op) snap = vg_identity(g, gvars[i], NULL);
        vg_output bad = vg_reduce_sum(g, vg_cast(g, vg_logical_not(g, vg_is_finite(g, snap, NULL), NULL), VG_INT32, NULL),
                                      NULL, -1, false, NULL);
        tg->finite_names[tg->nfinite] = vg_op_name(gvars[i].op);
        tg->finite[tg->nfinite++] = bad;
    }
    vg_graph_pop_scope(g);
    /* summaries: loss, accuracy, kernel histograms (MonitoredTrainingSession adds
     * global_step/sec) */
    vg_summary_scalar(g, "loss", tg->loss);
    vg_summary_scalar(g, "accuracy", tg->accuracy);
    int nv;
    const vg_output *vars = vg_graph_collection(g, VG_TRAINABLE_VARIABLES, &nv);
    vg_output kernels[16];
    int nk = 0;
    for (int i = 0; i < nv && nk < 16; i++) {
        const char *name = vg_op_name(vars[i].op);
        size_t l = strlen(name);
        if (l > 7 && !strcmp(name + l - 7, "/kernel")) kernels[nk++] = vars[i];
    }
    for (int i = 0; i < nk; i++) {
        char tag[256];
        const char *name = vg_op_name(kernels[i].op);
        snprintf(tag, sizeof tag, "weights/%.*s", (int)(strlen(name) - 7), name);
        vg_summary_histogram(g, tag, vg_variable_snapshot(kernels[i].op));
    }
    return vg_graph_status(g, st);
}

/* ------------------------------------------------------------------------ */
/* hooks of our own, on the public hook API */

/* Turns the signal flag into a stop request; remembers the final global step. */
typedef struct stop_hook {
    vg_output step;
    int64_t final_step; /* -1 unknown */
    int64_t runs;       /* steps run by this process */
    double t_first, t_last; /* when the first and the last step finished */
} stop_hook;

static vg_code stop_after_run(void *p, vg_run_context *ctx, const vg_run_values *v, vg_status *st) {
    stop_hook *h = p;
    h->t_last = now_s();
    if (h->runs++ == 0) h->t_first = h->t_last;
    int32_t stop = g_signal != 0;
    /* under mpirun all ranks stop after the same step (a signal reaches them at
     * different moments; a rank that stopped alone would leave the others waiting) */
    if (g_size > 1 && vg_dist_allreduce(&stop, 1, VG_INT32, VG_REDUCE_MAX, st) != VG_OK) return st->code;
    if (stop) vg_run_context_request_stop(ctx);
    return VG_OK;
}
static vg_code stop_end(void *p, vg_session *sess, vg_status *st) {
    stop_hook *h = p;
    if (!sess) return VG_OK;
    vg_tensor *t = NULL;
    vg_status ignore;
    if (vg_session_run1(sess, h->step, &t, &ignore) == VG_OK) h->final_step = (int64_t)vg_tensor_scalar(t);
    vg_tensor_free(t);
    return VG_OK;
}

/* CheckpointSaverListener.before_save: refuses to write a checkpoint whose variables
 * hold NaN or Inf, so a diverged run never overwrites a good checkpoint. */
typedef struct ckpt_guard {
    const train_graph *tg;
    bool refused;          /* a save was refused */
    char what[512];
} ckpt_guard;

static vg_code guard_before_save(void *p, vg_session *sess, int64_t step, vg_status *st) {
    ckpt_guard *gd = p;
    const train_graph *tg = gd->tg;
    if (!tg->nfinite) return VG_OK;
    vg_tensor *vals[MAX_GUARDED] = {0};
    vg_code rc = vg_session_run(sess, NULL, NULL, NULL, 0, tg->finite, vals, tg->nfinite, NULL, 0, NULL, st);
    for (int i = 0; rc == VG_OK && i < tg->nfinite; i++) {
        double nbad = vg_tensor_scalar(vals[i]);
        if (nbad > 0) {
            snprintf(gd->what, sizeof gd->what, "variable %s holds %.0f NaN/Inf values at step %lld", tg->finite_names[i],
                     nbad, (long long)step);
            gd->refused = true;
            rc = vg_status_set(st, VG_INVALID_ARGUMENT, "refusing to write a checkpoint: %s (the last good checkpoint is "
                               "kept)", gd->what);
        }
    }
    for (int i = 0; i < tg->nfinite; i++) vg_tensor_free(vals[i]);
    return rc;
}

/* The live progress line on a terminal: at most 10 updates a second. */
typedef struct progress_hook {
    vg_output fetches[3]; /* loss, accuracy, step */
    double loss, acc;     /* last values shown */
    bool want;
    double last_print, prev_t, rate;
    int64_t prev_step, last_step, steps_per_epoch, epochs;
    int64_t batch;
} progress_hook;

static vg_code progress_before(void *p, vg_run_context *ctx, vg_run_args *args, vg_status *st) {
    progress_hook *h = p;
    double t = now_s();
    h->want = t - h->last_print >= 0.1;
    if (h->want) {
        args->fetches = h->fetches;
        args->nfetches = 3;
    }
    return VG_OK;
}

static void fmt_eta(char *buf, size_t len, double secs) {
    if (!isfinite(secs) || secs < 0) {
        snprintf(buf, len, "--:--");
        return;
    }
    long s = (long)(secs + 0.5);
    if (s >= 3600) snprintf(buf, len, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else snprintf(buf, len, "%ld:%02ld", s / 60, s % 60);
}

static void progress_print(progress_hook *h, int64_t step) {
    int64_t epoch = h->steps_per_epoch > 0 ? (step - 1) / h->steps_per_epoch + 1 : 1;
    if (epoch > h->epochs) epoch = h->epochs;
    if (epoch < 1) epoch = 1;
    char eta[32], rate[64];
    fmt_eta(eta, sizeof eta, h->rate > 0 ? (double)(h->last_step - step) / h->rate : NAN);
    if (h->rate > 0) snprintf(rate, sizeof rate, "%.0f steps/s (%.0f samples/s)", h->rate, h->rate * (double)h->batch);
    else snprintf(rate, sizeof rate, "- steps/s");
    printf("\r\033[Kstep %lld/%lld  epoch %lld/%lld  loss %.4f  acc %.3f  %s  ETA %s", (long long)step,
           (long long)h->last_step, (long long)epoch, (long long)h->epochs, h->loss, h->acc, rate, eta);
    fflush(stdout);
    g_live_line = 1;
}

static vg_code progress_after(void *p, vg_run_context *ctx, const vg_run_values *v, vg_status *st) {
    progress_hook *h = p;
    if (!h->want || v->nresults < 3) return VG_OK;
    double t = now_s();
    int64_t step = (int64_t)vg_tensor_scalar(v->results[2]) + 1;
    if (h->prev_step >= 0 && t > h->prev_t && step > h->prev_step) {
        double r = (double)(step - h->prev_step) / (t - h->prev_t);
        h->rate = h->rate > 0 ? 0.7 * h->rate + 0.3 * r : r;
    }
    h->prev_step = step;
    h->prev_t = t;
    h->last_print = t;
    h->loss = vg_tensor_scalar(v->results[0]);
    h->acc = vg_tensor_scalar(v->results[1]);
    progress_print(h, step);
    return VG_OK;
}

/* The final state of the line (the step reached), then a newline. */
static vg_code progress_end(void *p, vg_session *sess, vg_status *st) {
    progress_hook *h = p;
    vg_tensor *t = NULL;
    vg_status ignore;
    if (sess && g_live_line && vg_session_run1(sess, h->fetches[2], &t, &ignore) == VG_OK)
        progress_print(h, (int64_t)vg_tensor_scalar(t));
    vg_tensor_free(t);
    if (g_live_line) {
        putchar('\n');
        fflush(stdout);
        g_live_line = 0;
    }
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* evaluation */

/* Accuracy of the checkpoint at prefix on the test set: a fresh graph with the same
 * layer names, a Saver over its variables, batches of 1000 fed by placeholders.
 * Returns VG_CANCELLED when a signal arrived meanwhile. */
static vg_code evaluate(const train_opts *o, const data_files *d, const char *prefix, double *acc, vg_status *st) {
    void *img = NULL, *lab = NULL;
    int64_t idims[4], ldims[4];
    int ind, lnd;
    size_t ib, lb;
    vg_graph *g = NULL;
    vg_saver *saver = NULL;
    vg_session *sess = NULL;
    vg_tensor *xt = NULL, *yt = NULL;
    vg_code rc = vg_idx_read(d->test_images, VG_IDX_U8, idims, &ind, &img, &ib, st);
    if (rc == VG_OK) rc = vg_idx_read(d->test_labels, VG_IDX_U8, ldims, &lnd, &lab, &lb, st);
    if (rc == VG_OK && (ind != 3 || idims[1] * idims[2] != 784 || lnd != 1 || ldims[0] != idims[0]))
        rc = vg_status_set(st, VG_DATA_LOSS, "%s / %s: not 28x28 images with one label each", d->test_images,
                           d->test_labels);
    if (rc != VG_OK) goto done;
    int64_t n = idims[0], bs = 1000;
    if (!(g = vg_graph_new())) {
        rc = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
        goto done;
    }
    vg_output x = o->cnn ? vg_placeholder(g, VG_FLOAT, (const int64_t[]){-1, 28, 28, 1}, 4, "images")
                         : vg_placeholder(g, VG_FLOAT, (const int64_t[]){-1, 784}, 2, "images");
    vg_output y = vg_placeholder(g, VG_INT64, (const int64_t[]){-1}, 1, "labels");
    vg_output logits = build_model(g, x, o);
    vg_output correct = vg_reduce_sum(
        g, vg_cast(g, vg_equal(g, vg_argmax(g, logits, 1, VG_INT64, NULL), y, NULL), VG_FLOAT, NULL), NULL, -1,
        false, "correct");
    if ((rc = vg_graph_status(g, st)) != VG_OK) goto done;
    vg_saver_options so = {0};
    so.no_meta_graph = true;
    if (!(saver = vg_saver_new(g, &so, st))) {
        rc = st->code;
        goto done;
    }
    vg_session_options sopt = {o->threads, o->threads};
    if (!(sess = vg_session_new(g, &sopt, st))) {
        rc = st->code;
        goto done;
    }
    if ((rc = vg_saver_restore(saver, sess, prefix, st)) != VG_OK) goto done;
    double total = 0;
    for (int64_t i = 0; i < n && rc == VG_OK; i += bs) {
        if (g_signal) {
            rc = vg_status_set(st, VG_CANCELLED, "evaluation interrupted by a signal");
            break;
        }
        int64_t k = n - i < bs ? n - i : bs;
        int64_t xd[4] = {k, 28, 28, 1}, x2[2] = {k, 784}, yd[1] = {k};
        vg_tensor_free(xt);
        vg_tensor_free(yt);
        xt = o->cnn ? vg_tensor_new(VG_FLOAT, xd, 4, st) : vg_tensor_new(VG_FLOAT, x2, 2, st);
        yt = vg_tensor_new(VG_INT64, yd, 1, st);
        if (!xt || !yt) {
            rc = st->code;
            break;
        }
        float *xp = vg_tensor_data(xt);
        const uint8_t *ip = (const uint8_t *)img + (size_t)i * 784;
        for (int64_t j = 0; j < k * 784; j++) xp[j] = ip[j] * (1.0f / 255.0f);
        int64_t *yp = vg_tensor_data(yt);
        for (int64_t j = 0; j < k; j++) yp[j] = ((const uint8_t *)lab)[i + j];
        vg_output feeds[2] = {x, y};
        vg_tensor *vals[2] = {xt, yt}, *out = NULL;
        rc = vg_session_run(sess, NULL, feeds, vals, 2, &correct, &out, 1, NULL, 0, NULL, st);
        if (rc == VG_OK) total += vg_tensor_scalar(out);
        vg_tensor_free(out);
    }
    if (rc == VG_OK) *acc = n > 0 ? total / (double)n : 0;
done:
    vg_tensor_free(xt);
    vg_tensor_free(yt);
    vg_session_free(sess);
    vg_saver_free(saver);
    vg_graph_free(g);
    vg_free(img);
    vg_free(lab);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* the command */

/* global_step of the latest checkpoint in dir (0 when there is none); its prefix in
 * prefix ("" when none). */
static vg_code checkpoint_step(const char *dir, int64_t batch, char *prefix, size_t len, int64_t *step,
                               vg_status *st) {
    *step = 0;
    prefix[0] = 0;
    vg_code c = vg_checkpoint_find_latest(dir, prefix, len, st);
    if (c == VG_NOT_FOUND) { /* no state file and no checkpoint files: a fresh start */
        prefix[0] = 0;
        vg_status_clear(st);
        return VG_OK;
    }
    if (c != VG_OK) {
        prefix[0] = 0;
        return c;
    }
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(prefix, st);
    if (!r) return st->code;
    vg_tensor *t = vg_checkpoint_reader_read(r, "global_step", st);
    vg_checkpoint_reader_free(r);
    if (!t) return st->code;
    int64_t v = -1;
    if (vg_tensor_dtype(t) == VG_INT64 && vg_tensor_num_elements(t) == 1) v = *(const int64_t *)vg_tensor_data(t);
    else if (vg_tensor_dtype(t) == VG_INT32 && vg_tensor_num_elements(t) == 1) v = *(const int32_t *)vg_tensor_data(t);
    vg_tensor_free(t);
    /* step * batch must stay representable (epoch arithmetic) */
    if (v < 0 || v > INT64_MAX / batch)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "checkpoint %s: global_step %lld is out of range", prefix,
                             (long long)v);
    *step = v;
    return VG_OK;
}

/* A restore that fails on names or shapes: the directory holds another model's
 * checkpoints. */
static void restore_hint(const train_opts *o, const vg_status *st, bool had_checkpoint) {
    if (had_checkpoint && (st->code == VG_NOT_FOUND || st->code == VG_INVALID_ARGUMENT))
        fprintf(stderr, "vigil: the checkpoints in %s do not fit --model %s (written by another model or "
                        "version?); pass another --checkpoint-dir\n", o->ckpt_dir, o->lstm ? "lstm" : o->cnn ? "cnn" : "mlp");
}

/* Trains until the data, the step limit or a signal ends it. Returns the exit status. */
static int run_training(const train_opts *o, const data_files *d, int64_t n_train, int64_t start_step,
                        int64_t last_step, double t_start, bool *nan_stopped) {
    int64_t spe = n_train / o->batch;
    int64_t done_epochs = start_step * o->batch / n_train;
    int64_t num_epochs = o->epochs - done_epochs;
    vg_status st;
    vg_status_clear(&st);
    /* A resumed run reshuffles differently from the first one (the epoch order is not
     * checkpointed in TF either), deterministically for a given seed and start. */
    int64_t seed = start_step ? (int64_t)(((uint64_t)o->seed * 1000003u) ^ (uint64_t)start_step) & INT64_MAX : o->seed;
    if (o->input == INPUT_TFDATA) seed = o->seed; /* the replayed pipeline must shuffle as the first run did */
    if (o->seed == 0) seed = 0;      /* --seed 0: no graph-level seed (TF's default: nondeterministic) */
    else if (seed == 0) seed = 1;    /* 0 would mean "no graph seed" */
    train_graph tg;
    memset(&tg, 0, sizeof tg);
    if (build_train_graph(o, d, n_train, num_epochs, o->epochs * spe, seed, &tg, &st) != VG_OK) {
        vg_graph_free(tg.g);
        return cli_fail_status(&st);
    }
    stop_hook sh = {tg.step, -1, 0, 0, 0};
    progress_hook ph;
    memset(&ph, 0, sizeof ph);
    ph.fetches[0] = tg.loss;
    ph.fetches[1] = tg.accuracy;
    ph.fetches[2] = tg.step;
    ph.prev_step = -1;
    ph.last_step = last_step;
    ph.steps_per_epoch = spe;
    ph.epochs = o->epochs;
    ph.batch = o->batch * g_size; /* samples/s of the whole job */
    ph.last_print = -1;
    bool tty = !o->quiet && isatty(1);
    vg_hook hooks[7];
    int nh = 0;
    memset(hooks, 0, sizeof hooks);
    vg_code rc = VG_OK;
    /* NanTensorHook first: a NaN loss ends the step before anything saves it */
    if (o->on_nan != ON_NAN_IGNORE) {
        rc = vg_nan_tensor_hook(tg.loss, o->on_nan == ON_NAN_FAIL, &hooks[nh], &st);
        if (rc == VG_OK) nh++;
    }
    /* Checkpoints: MonitoredTrainingSession's CheckpointSaverHook, made here so that it
     * gets the guard listener (same scaffold and saver as the session's restore). */
    vg_scaffold *scaffold = vg_scaffold_new(NULL);
    ckpt_guard guard = {&tg, false, ""};
    vg_checkpoint_listener guard_l = {NULL, guard_before_save, NULL, NULL, NULL, &guard};
    if (!scaffold && rc == VG_OK) rc = vg_status_set(&st, VG_RESOURCE_EXHAUSTED, "out of memory creating the scaffold");
    if (rc == VG_OK && g_size > 1) { /* every rank starts from rank 0's variables */
        rc = vg_broadcast_global_variables_hook(0, &hooks[nh], &st);
        if (rc == VG_OK) nh++;
    }
    if (rc == VG_OK && g_rank == 0) {
        vg_checkpoint_saver_options co = {0};
        co.checkpoint_dir = o->ckpt_dir;
        co.scaffold = scaffold;
        if (o->save_ckpt_steps > 0) co.save_steps = o->save_ckpt_steps;
        else co.save_secs = o->save_ckpt_secs;
        if (o->on_nan != ON_NAN_IGNORE) {
            co.listeners = &guard_l;
            co.nlisteners = 1;
        }
        rc = vg_checkpoint_saver_hook(&co, &hooks[nh], &st);
        if (rc == VG_OK) nh++;
    }
    if (rc == VG_OK) rc = vg_stop_at_step_hook(-1, last_step, &hooks[nh], &st);
    if (rc == VG_OK) nh++;
    hooks[nh].name = "SignalStopHook";
    hooks[nh].after_run = stop_after_run;
    hooks[nh].end = stop_end;
    hooks[nh++].payload = &sh;
    if (rc == VG_OK && tty) {
        hooks[nh].name = "ProgressHook";
        hooks[nh].before_run = progress_before;
        hooks[nh].after_run = progress_after;
        hooks[nh].end = progress_end;
        hooks[nh++].payload = &ph;
    } else if (rc == VG_OK && !o->quiet && o->log_steps > 0) {
        vg_output t[3] = {tg.loss, tg.accuracy, tg.step};
        const char *names[3] = {"loss", "accuracy", "step"};
        vg_logging_tensor_options lo = {0};
        lo.tensors = t;
        lo.names = names;
        lo.ntensors = 3;
        lo.every_n_iter = o->log_steps;
        rc = vg_logging_tensor_hook(&lo, &hooks[nh], &st);
        if (rc == VG_OK) nh++;
    }
    if (rc != VG_OK) {
        for (int i = 0; i < nh; i++) vg_hook_free(&hooks[i]);
        vg_scaffold_free(scaffold);
        vg_graph_free(tg.g);
        return cli_fail_status(&st);
    }
    vg_config_proto so = {0};
    so.intra_op_parallelism_threads = so.inter_op_parallelism_threads = o->threads;
    vg_mts_options mo = {0};
    mo.checkpoint_dir = g_rank == 0 ? o->ckpt_dir : NULL; /* the chief restores and saves */
    mo.no_checkpoint_dir_lock = true; /* main() holds the directory's lock for the whole run */
    mo.hooks = hooks;
    mo.nhooks = nh;
    mo.config = &so;
    mo.save_summaries_steps = o->save_summaries_steps;          /* < 0: TF's default (100) */
    mo.no_summaries = o->save_summaries_steps == 0;             /* no SummarySaverHook */
    mo.log_step_count_steps = o->log_steps;
    mo.no_step_counter = o->log_steps <= 0;
    mo.no_checkpoints = true; /* the hook above saves */
    mo.scaffold = scaffold;
    vg_monitored_session *ms = vg_monitored_training_session_new(tg.g, &mo, &st);
    if (!ms) {
        vg_scaffold_free(scaffold);
        vg_graph_free(tg.g);
        vg_file_writer_cache_clear();
        cli_fail_status(&st);
        restore_hint(o, &st, start_step > 0);
        return 1;
    }
    note("training from step %lld to step %lld (session ready %.2f s after start)", (long long)start_step,
         (long long)last_step, now_s() - t_start);
    vg_run_args args = {0};
    args.targets = &tg.train_op;
    args.ntargets = 1;
    rc = VG_OK;
    double t0 = now_s();
    while (rc == VG_OK && !vg_monitored_session_should_stop(ms)) rc = vg_monitored_session_run(ms, &args, NULL, NULL, &st);
    vg_code loop_rc = rc;
    rc = vg_monitored_session_end(ms, rc, &st);
    double secs = now_s() - t0;
    if (g_live_line) {
        putchar('\n');
        fflush(stdout);
        g_live_line = 0;
    }
    vg_monitored_session_free(ms);
    vg_scaffold_free(scaffold);
    vg_graph_free(tg.g);
    vg_file_writer_cache_clear();
    if (rc != VG_OK && guard.refused && o->on_nan == ON_NAN_STOP) {
        /* --on-nan stop: the NaN hook asked for a stop, the final save was refused */
        fprintf(stderr, "vigil: stopped on a NaN loss: %s; the last good checkpoint is kept\n", guard.what);
        *nan_stopped = true;
        return 0;
    }
    if (rc != VG_OK) {
        cli_fail_status(&st);
        /* a parse error from the input pipeline names neither the file nor the record */
        if (st.code == VG_INVALID_ARGUMENT && o->input != INPUT_IDX && o->input_path &&
            (strstr(st.msg, "ParseSingleExample") || strstr(st.msg, "DecodeRaw") || strstr(st.msg, "Reshape") ||
             strstr(st.msg, "Feature")))
            report_bad_record(o->input_path, o->cnn);
        return 1;
    }
    double steady = sh.t_last - sh.t_first;
    note("%s at step %lld: %lld steps in %.2f s; first step done %.3f s after start; after it %.1f steps/s "
         "(%.0f samples/s)",
         g_signal ? "stopped by signal" : loop_rc == VG_OUT_OF_RANGE ? "input exhausted" : "done",
         (long long)sh.final_step, (long long)sh.runs, secs, sh.runs ? sh.t_first - t_start : 0.0,
         sh.runs > 1 && steady > 0 ? (double)(sh.runs - 1) / steady : 0.0,
         sh.runs > 1 && steady > 0 ? (double)(sh.runs - 1) * (double)(o->batch * g_size) / steady : 0.0);
    return 0;
}

static int train_main(int argc, char **argv);

/* Under mpirun every rank runs this; the world is joined first and left last. */
int cli_train(int argc, char **argv) {
    vg_status st;
    /* --heartbeat-timeout takes effect when the world starts: read it first (a bad value
     * is reported by the option parser below) */
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--heartbeat-timeout") && i + 1 < argc) v = argv[i + 1];
        else if (!strncmp(argv[i], "--heartbeat-timeout=", 20)) v = argv[i] + 20;
        double secs = -1;
        if (v && cli_parse_double(v, &secs) && secs >= 0 && secs <= 1e9)
            vg_dist_set_heartbeat_timeout_ms((int64_t)(secs * 1000 + 0.5), &st);
    }
    if (vg_dist_init(&st) != VG_OK) return cli_fail_status(&st);
    g_rank = vg_dist_rank();
    g_size = vg_dist_size();
    int rc = train_main(argc, argv);
    vg_checkpoint_dir_lock_release(g_ckpt_lock);
    g_ckpt_lock = NULL;
    /* A rank that failed leaves without finalising: its peers may be waiting for it in
     * a collective, and mpirun ends the whole job when a rank exits unfinalised. */
    if (rc == 0 || g_size == 1) vg_dist_finalize(&st);
    return rc;
}

/* Rank 0 reads the checkpoint state; every rank gets its step (the checkpoint
 * directory need not be shared). */
typedef struct dist_start {
    int64_t start_step, code;
    char prefix[4096];
    char msg[1024];
} dist_start;

static int train_main(int argc, char **argv) {
    double t_start = now_s();
    train_opts o;
    int prc = parse_train_opts(argc, argv, &o);
    if (prc) return prc < 0 ? 0 : prc;
    if (g_size > 1) {
        if (g_rank != 0) o.quiet = true; /* the others log to stderr only on error */
        if (!o.lr_scale_none) o.lr *= g_size;
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN), per = ncpu / (vg_dist_local_size() > 0 ? vg_dist_local_size() : 1);
        bool threads_given = false;
        for (int i = 1; i < argc; i++) threads_given |= !strncmp(argv[i], "--threads", 9);
        if (!threads_given) o.threads = per > 1 ? (int)per : 1; /* the cores of this host, shared */
    }
    g_quiet = o.quiet;
    setvbuf(stdout, NULL, _IOLBF, 0);
    bool tty = !o.quiet && isatty(1);
    vg_log_set(log_to_stderr, NULL, o.verbose ? VG_LOG_DEBUG : o.quiet || tty ? VG_LOG_WARN : VG_LOG_INFO);
    if (o.verbose) {
        char be[512];
        vg_logf(VG_LOG_DEBUG, "%s%s", vg_backend_describe(be, sizeof be),
                getenv("VG_CLI_REEXEC") ? " (restarted with OPENBLAS_CORETYPE set to match the CPU)" : "");
    }
    install_signals();
    data_files d;
    if (locate_data(o.data_dir, &d) != 0) return 1;
    vg_status st;
    int64_t n_train, n_test;
    if (check_data_pair(d.train_images, d.train_labels, &n_train, &st) != VG_OK ||
        check_data_pair(d.test_images, d.test_labels, &n_test, &st) != VG_OK)
        return cli_fail_status(&st);
    if (o.input != INPUT_IDX) {
        if (o.input == INPUT_QUEUE && o.train_limit > 0)
            return cli_fail("--train-limit is not supported with --input queue (use tfdata)");
        if (o.input == INPUT_QUEUE && g_size > 1)
            return cli_fail("--input queue reads one file in order and cannot be sharded across %d MPI ranks "
                            "(use --input tfdata, which shards by rank)", g_size);
        if (count_records(o.input_path, tfrecord_compression(o.input_path), &n_train, &st) != VG_OK)
            return cli_fail_status(&st);
    }
    if (o.train_limit > 0 && o.train_limit < n_train) n_train = o.train_limit;
    if (g_size > 1) n_train /= g_size; /* this rank's shard: epochs and steps count shards */
    if (n_train < o.batch)
        return cli_fail("--batch-size %lld is larger than the %lld training images", (long long)o.batch,
                        (long long)n_train);
    int64_t spe = n_train / o.batch, last_step, total_examples;
    /* checked arithmetic: the step count and the producer's epochs x images must fit */
    if (__builtin_mul_overflow(o.epochs, spe, &last_step) || __builtin_mul_overflow(o.epochs, n_train, &total_examples)) {
        vg_status_set(&st, VG_INVALID_ARGUMENT, "--epochs %lld is too large (%lld epochs x %lld images overflows)",
                      (long long)o.epochs, (long long)o.epochs, (long long)n_train);
        return cli_fail_status(&st);
    }
    if (o.steps >= 0 && o.steps < last_step) last_step = o.steps;
    /* one trainer per checkpoint directory, for the whole run (fd kept until exit) */
    if (g_rank == 0 && !lock_checkpoint_dir(o.ckpt_dir)) return 1;
    char prefix[4096];
    int64_t start_step = 0;
    prefix[0] = 0;
    vg_code cs = g_rank == 0 ? checkpoint_step(o.ckpt_dir, o.batch, prefix, sizeof prefix, &start_step, &st) : VG_OK;
    if (g_size > 1) { /* rank 0's answer for everyone */
        static dist_start ds;
        memset(&ds, 0, sizeof ds);
        ds.start_step = start_step;
        ds.code = cs;
        snprintf(ds.prefix, sizeof ds.prefix, "%s", prefix);
        if (cs != VG_OK) snprintf(ds.msg, sizeof ds.msg, "%s", st.msg);
        vg_status bst;
        if (vg_dist_broadcast(&ds, sizeof ds, 0, &bst) != VG_OK) return cli_fail_status(&bst);
        start_step = ds.start_step;
        snprintf(prefix, sizeof prefix, "%s", ds.prefix);
        if (ds.code != VG_OK && g_rank != 0) vg_status_set(&st, (vg_code)ds.code, "%s", ds.msg);
        cs = (vg_code)ds.code;
    }
    if (cs != VG_OK) {
        fprintf(stderr, "vigil: refusing to train in %s: its checkpoints cannot be resumed%s%s\n", o.ckpt_dir,
                prefix[0] ? " from " : "", prefix);
        return cli_fail_status(&st);
    }
    if (g_size > 1)
        note("data-parallel on %d MPI ranks: %lld images per rank, global batch %lld", g_size, (long long)n_train,
             (long long)(o.batch * g_size));
    note("%s %s on %lld images, batch %lld, %lld steps/epoch, %s lr %g, checkpoints in %s", o.lstm ? "lstm" : o.cnn ? "cnn" : "mlp",
         prefix[0] ? "resuming" : "training", (long long)n_train, (long long)o.batch, (long long)spe, o.optimizer,
         o.lr, o.ckpt_dir);
    if (prefix[0])
        note("resuming from checkpoint %s at global step %lld (%lld complete epochs)", prefix, (long long)start_step,
             (long long)(start_step * o.batch / n_train));
    if (start_step >= last_step && !prefix[0]) {
        return cli_fail("nothing to train (--steps %lld) and no checkpoint in %s to evaluate", (long long)o.steps,
                        o.ckpt_dir);
    } else if (start_step >= last_step) {
        if (g_rank != 0) return 0;
        note("already trained to step %lld (target %lld): evaluating only", (long long)start_step,
             (long long)last_step);
    } else {
        bool nan_stopped = false;
        int rc = run_training(&o, &d, n_train, start_step, last_step, t_start, &nan_stopped);
        if (rc) return rc;
        if (g_rank != 0) return 0; /* rank 0 evaluates */
        if (g_signal) {
            char p[4096];
            if (vg_latest_checkpoint(o.ckpt_dir, p, sizeof p)) note("checkpoint saved: %s (evaluation skipped)", p);
            return 0;
        }
        if (!vg_latest_checkpoint(o.ckpt_dir, prefix, sizeof prefix))
            return cli_fail("no checkpoint in %s after training", o.ckpt_dir);
    }
    double acc = 0, te = now_s();
    vg_code rc = evaluate(&o, &d, prefix, &acc, &st);
    if (rc == VG_CANCELLED && g_signal) {
        note("evaluation skipped: interrupted by a signal");
        return 0;
    }
    if (rc != VG_OK) {
        cli_fail_status(&st);
        restore_hint(&o, &st, true);
        return 1;
    }
    note("evaluated %s on the test set in %.2f s", prefix, now_s() - te);
    printf("test_accuracy=%.4f\n", acc);
    return 0;
}
