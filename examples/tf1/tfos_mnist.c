/* tfos_mnist.c - port of yahoo/TensorFlowOnSpark examples/mnist/tf/mnist_dist.py
 * (map_fun, worker side), single process: the cluster (ps + workers started by
 * TFoS) maps to one worker, task_index 0, num_workers 1, so it is the chief.
 * tf.data: list_files(part-*) -> shard(1, 0) -> repeat(epochs) -> shuffle ->
 * interleave(TFRecordDataset, cycle_length=readers, block_length=1) ->
 * map(_parse_tfr: parse_single_example) -> batch -> one-shot iterator; the model of
 * build_model (hid_w/hid_b/sm_w/sm_b, xw_plus_b, relu, softmax, argmax); the loss
 * -reduce_sum(y_ * log(clip(y))); AdagradOptimizer(0.01); MonitoredTrainingSession
 * with Scaffold(init_op, summary_op, saver) and StopAtStepHook(last_step=steps).
 * See examples/tf1/README.md for the line-by-line mapping.
 *
 * Usage: tfos_mnist [--images_labels DIR] [--model DIR] [--format tfr] [--epochs 1]
 *                   [--batch_size 100] [--steps 1000] [--shuffle_size 1000] [--readers 1]
 * Without --images_labels it writes TFRecord files DIR/part-00000, part-00001 of
 * Examples in the layout of TFoS's mnist_data_setup.py (label: 10 int64 one-hot,
 * image: 784 int64) from Debian's Fashion-MNIST IDX files (--idx_dir, default
 * /usr/share/datasets/fashion-mnist; synthetic images when they are missing),
 * --num_images of them (default 2000), into a temporary directory, and trains 2
 * epochs with 2 readers. Prints "step <n> loss <x>" per step and "first loss" /
 * "final loss" (the means of the first and last 10 steps); exits 0 when training
 * ended cleanly (at the end of the data or at the last step). */
#include "tf1_util.h"
#include "vigil/vigil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define IMAGE_PIXELS 28
#define NPIX (IMAGE_PIXELS * IMAGE_PIXELS)
#define HIDDEN_UNITS 128

typedef struct args_t {
    const char *images_labels, *model, *format, *idx_dir;
    int64_t epochs, batch_size, steps, shuffle_size, readers, num_images;
} args_t;

/* ds.interleave(tf.data.TextLineDataset, ...): one file name -> its lines */
static vg_code text_line_dataset(vg_graph *fg, const vg_output *a, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    (void)p;
    outs[0] = vg_dataset_text_line(fg, a[0], "", NULL);
    *nouts = 1;
    return VG_OK;
}

/* ds.interleave(tf.data.TFRecordDataset, ...): one file name -> its records */
static vg_code tfrecord_dataset(vg_graph *fg, const vg_output *a, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    (void)p;
    outs[0] = vg_dataset_tfrecord(fg, a[0], "", NULL);
    *nouts = 1;
    return VG_OK;
}

/* _parse_tfr(example_proto) */
static vg_code parse_tfr(vg_graph *fg, const vg_output *a, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    (void)p;
    vg_feature_spec feature_def[2] = {
        {"label", VG_INT64, false, vg_shape_make((int64_t[]){10}, 1), {NULL, 0}},
        {"image", VG_INT64, false, vg_shape_make((int64_t[]){NPIX}, 1), {NULL, 0}},
    };
    vg_output f[2];
    if (!vg_parse_single_example(fg, a[0], feature_def, 2, f, NULL, NULL)) return VG_INVALID_ARGUMENT;
    vg_tensor *nt = vg_tensor_new(VG_FLOAT, (int64_t[]){NPIX}, 1, NULL);
    if (!nt) return VG_RESOURCE_EXHAUSTED;
    float *nv = (float *)vg_tensor_data(nt);
    for (int i = 0; i < NPIX; i++) nv[i] = 255.0f;
    vg_output norm = vg_const(fg, nt, "Const"); /* tf.constant(255, shape=(784,)) */
    vg_tensor_free(nt);
    outs[0] = vg_div(fg, vg_cast(fg, f[1], VG_FLOAT, "ToFloat"), norm, NULL);
    outs[1] = vg_cast(fg, f[0], VG_FLOAT, "ToFloat_1");
    *nouts = 2;
    return VG_OK;
}

/* _parse_csv(ln): "label|p0,p1,...,p783" */
static vg_code parse_csv(vg_graph *fg, const vg_output *a, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    (void)p;
    vg_sparse_output splits; /* tf.string_split([ln], delimiter='|') */
    if (!vg_string_split(fg, vg_pack(fg, a, 1, 0, "packed"), "|", true, &splits, NULL)) return VG_INVALID_ARGUMENT;
    vg_output lbl = vg_gather(fg, splits.values, vg_const_i32(fg, 0, NULL), 0, NULL);
    vg_output img = vg_gather(fg, splits.values, vg_const_i32(fg, 1, NULL), 0, NULL);
    vg_output image_defaults[NPIX], cols[NPIX];
    vg_tensor *zero = vg_tensor_new(VG_FLOAT, (int64_t[]){1}, 1, NULL);
    if (!zero) return VG_RESOURCE_EXHAUSTED;
    ((float *)vg_tensor_data(zero))[0] = 0.0f;
    vg_output z = vg_const(fg, zero, "Const"); /* [[0.0] for col in range(784)]: one shared constant */
    vg_tensor_free(zero);
    for (int i = 0; i < NPIX; i++) image_defaults[i] = z;
    if (!vg_decode_csv(fg, img, image_defaults, NPIX, ",", true, NULL, cols, NULL)) return VG_INVALID_ARGUMENT;
    vg_output image = vg_pack(fg, cols, NPIX, 0, NULL); /* tf.stack */
    vg_tensor *nt = vg_tensor_new(VG_FLOAT, (int64_t[]){NPIX}, 1, NULL);
    if (!nt) return VG_RESOURCE_EXHAUSTED;
    float *nv = (float *)vg_tensor_data(nt);
    for (int i = 0; i < NPIX; i++) nv[i] = 255.0f;
    vg_output norm = vg_const(fg, nt, "Const_1");
    vg_tensor_free(nt);
    outs[0] = vg_div(fg, image, norm, NULL);
    vg_output label_value = vg_string_to_number(fg, lbl, VG_INT32, NULL);
    outs[1] = vg_one_hot(fg, label_value, 10, 1.0f, 0.0f, NULL);
    *nouts = 2;
    return VG_OK;
}

static vg_output var(vg_graph *g, const char *name, vg_initializer init, const int64_t *dims, int ndims) {
    return vg_variable_new(g, name, vg_initializer_build(g, init, VG_FLOAT, dims, ndims), VG_VAR_TRAINABLE).read;
}

/* tf.nn.xw_plus_b */
static vg_output xw_plus_b(vg_graph *g, vg_output x, vg_output w, vg_output b) {
    return vg_add(g, vg_matmul(g, x, w, false, false, NULL), b, NULL);
}

/* build_model(graph, x) -> y, prediction */
static void build_model(vg_graph *g, vg_output x, vg_output *y, vg_output *prediction) {
    vg_output hid_w = var(g, "hid_w", vg_init_truncated_normal(0, 1.0 / IMAGE_PIXELS, 0),
                          (int64_t[]){NPIX, HIDDEN_UNITS}, 2);
    vg_output hid_b = var(g, "hid_b", vg_init_zeros(), (int64_t[]){HIDDEN_UNITS}, 1);
    vg_summary_histogram(g, "hidden_weights", hid_w);
    vg_output sm_w = var(g, "sm_w", vg_init_truncated_normal(0, 1.0 / sqrt((double)HIDDEN_UNITS), 0),
                         (int64_t[]){HIDDEN_UNITS, 10}, 2);
    vg_output sm_b = var(g, "sm_b", vg_init_zeros(), (int64_t[]){10}, 1);
    vg_summary_histogram(g, "softmax_weights", sm_w);
    vg_output hid = vg_relu(g, xw_plus_b(g, x, hid_w, hid_b), NULL);
    *y = vg_softmax(g, xw_plus_b(g, hid, sm_w, sm_b), NULL);
    *prediction = vg_argmax(g, *y, 1, VG_INT64, "prediction");
}

/* The data, as TFoS's mnist_data_setup.py writes it, split over nparts files
 * part-0000k: format tfr, Examples with "label" (one-hot, 10 int64) and "image" (784
 * int64 pixels); format csv2, text lines "label|p0,p1,...,p783". */
static int write_data(const args_t *a, const char *dir, int nparts, bool csv) {
    vg_status st;
    int64_t di[4], dl[4];
    uint8_t *pix, *lab;
    tf1_read_mnist_train(a->idx_dir, &pix, &lab, di, dl);
    int64_t n = a->num_images;
    if (pix && lab) {
        int64_t avail = di[0] < dl[0] ? di[0] : dl[0];
        if (n > avail) n = avail;
        printf("data: %lld Fashion-MNIST images from %s\n", (long long)n, a->idx_dir);
    } else {
        printf("data: %lld synthetic images (no IDX files in %s)\n", (long long)n, a->idx_dir ? a->idx_dir : "-");
    }
    unsigned seed = 1;
    int rc = 0;
    int64_t per = (n + nparts - 1) / nparts;
    for (int p = 0; p < nparts && rc == 0; p++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/part-%05d", dir, p);
        vg_tfrecord_writer *w = NULL;
        FILE *cf = NULL;
        if (csv) cf = fopen(path, "w");
        else w = vg_tfrecord_writer_open(path, VG_COMPRESSION_NONE, &st);
        if (csv && !cf) {
            perror(path);
            rc = 1;
            break;
        }
        if (!csv && !w) {
            fprintf(stderr, "%s\n", st.msg);
            rc = 1;
            break;
        }
        for (int64_t i = p * per; i < n && i < (p + 1) * per && rc == 0; i++) {
            int64_t label[10] = {0}, image[NPIX];
            int64_t l = pix ? lab[i] % 10 : rand_r(&seed) % 10;
            label[l] = 1;
            for (int k = 0; k < NPIX; k++) {
                int r = k / 28, c = k % 28, block = (r / 7) * 4 + c / 7;
                image[k] = pix ? pix[i * NPIX + k] : (block == l ? 160 : 0) + rand_r(&seed) % 96;
            }
            if (csv) {
                fprintf(cf, "%d|", (int)l);
                for (int k = 0; k < NPIX; k++) fprintf(cf, k ? ",%d" : "%d", (int)image[k]);
                fputc('\n', cf);
                continue;
            }
            vg_example *ex = vg_example_new();
            size_t len = 0;
            const void *b = NULL;
            if (ex && vg_example_add_int64(ex, "label", label, 10, &st) == VG_OK &&
                vg_example_add_int64(ex, "image", image, NPIX, &st) == VG_OK)
                b = vg_example_serialize(ex, &len, &st);
            if (!b || vg_tfrecord_writer_write(w, b, len, &st) != VG_OK) {
                fprintf(stderr, "%s\n", st.msg);
                rc = 1;
            }
            vg_example_free(ex);
        }
        if (csv) {
            if (fclose(cf) != 0 && rc == 0) {
                perror(path);
                rc = 1;
            }
        } else if (vg_tfrecord_writer_close(w, &st) != VG_OK && rc == 0) {
            fprintf(stderr, "%s\n", st.msg);
            rc = 1;
        }
    }
    vg_free(pix);
    vg_free(lab);
    return rc;
}

int main(int argc, char **argv) {
    args_t a = {NULL, NULL, "tfr", "/usr/share/datasets/fashion-mnist", 1, 100, 1000, 1000, 1, 2000};
    const tf1_flag flag_table[] = {
        {"--images_labels", 's', &a.images_labels}, {"--model", 's', &a.model},
        {"--format", 's', &a.format},               {"--idx_dir", 's', &a.idx_dir},
        {"--epochs", 'l', &a.epochs},               {"--batch_size", 'l', &a.batch_size},
        {"--steps", 'l', &a.steps},                 {"--shuffle_size", 'l', &a.shuffle_size},
        {"--readers", 'l', &a.readers},             {"--num_images", 'l', &a.num_images},
    };
    if (tf1_parse_flag_pairs(argc, argv, flag_table, (int)(sizeof flag_table / sizeof flag_table[0]))) return 2;
    bool csv = strcmp(a.format, "csv2") == 0;
    if (!csv && strcmp(a.format, "tfr") != 0) {
        fprintf(stderr, "--format %s: must be tfr or csv2\n", a.format);
        return 2;
    }
    if (a.batch_size <= 0 || a.readers <= 0 || a.shuffle_size <= 0 || a.num_images <= 0) {
        fprintf(stderr, "batch_size, readers, shuffle_size and num_images must be positive\n");
        return 2;
    }
    char tmp[64] = "";
    if (!a.images_labels) { /* self-test mode: write the records, 2 epochs, 2 readers */
        strcpy(tmp, "/tmp/vg_tfos_mnist_XXXXXX");
        if (!mkdtemp(tmp) || write_data(&a, tmp, 2, csv)) return 1;
        a.images_labels = tmp;
        if (!a.model) a.model = tmp;
        a.epochs = 2;
        a.readers = 2;
    }
    if (!a.model) a.model = "mnist_model";
    const int64_t num_workers = 1, task_index = 0; /* one worker: the chief */

    vg_status st;
    vg_graph *g = vg_graph_new();
    /* Dataset for input data */
    char file_pattern[4200];
    snprintf(file_pattern, sizeof file_pattern, "%s/part-*", a.images_labels);
    vg_output ds = vg_dataset_list_files(g, file_pattern, true, 0, NULL);
    ds = vg_dataset_shard(g, ds, num_workers, task_index, NULL);
    ds = vg_dataset_repeat(g, ds, a.epochs, NULL);
    ds = vg_dataset_shuffle(g, ds, a.shuffle_size, 0, true, NULL);
    if (csv) { /* args.format == 'csv2' */
        ds = vg_dataset_interleave(g, ds, text_line_dataset, NULL, a.readers, 1, NULL);
        ds = vg_dataset_map(g, ds, parse_csv, NULL, NULL);
    } else { /* args.format == 'tfr' */
        ds = vg_dataset_interleave(g, ds, tfrecord_dataset, NULL, a.readers, 1, NULL);
        ds = vg_dataset_map(g, ds, parse_tfr, NULL, NULL);
    }
    ds = vg_dataset_batch(g, ds, a.batch_size, false, NULL);
    vg_output iterator = vg_make_one_shot_iterator(g, ds, NULL);
    vg_op *next = vg_iterator_get_next(g, iterator, NULL);
    vg_output x = vg_out(next, 0), y_ = vg_out(next, 1);

    /* Build core model */
    vg_output y, prediction;
    build_model(g, x, &y, &prediction);
    /* Add training bits */
    vg_output x_img = vg_reshape_c(g, x, (int64_t[]){-1, IMAGE_PIXELS, IMAGE_PIXELS, 1}, 4, NULL);
    vg_summary_image(g, "x_img", x_img, 3);
    vg_output global_step = vg_get_or_create_global_step(g);
    vg_output loss = vg_neg(g, vg_reduce_sum(g, vg_mul(g, y_, vg_log(g, vg_clip_by_value(g, y, vg_const_f32(g, 1e-10f, NULL),
                                                                                        vg_const_f32(g, 1.0f, NULL), NULL),
                                                                     NULL), NULL),
                                             NULL, -1, false, NULL),
                            NULL);
    vg_summary_scalar(g, "loss", loss);
    vg_optimizer *opt = vg_optimizer_new_adagrad_default(0.01);
    vg_op *train_op = vg_optimizer_minimize(opt, g, loss, NULL, 0, global_step, NULL);
    vg_output label = vg_argmax(g, y_, 1, VG_INT64, "label");
    vg_output correct_prediction = vg_equal(g, prediction, label, NULL);
    vg_output accuracy = vg_reduce_mean(g, vg_cast(g, correct_prediction, VG_FLOAT, NULL), NULL, -1, false, "accuracy");
    vg_summary_scalar(g, "acc", accuracy);
    vg_saver *saver = vg_saver_new(g, NULL, &st);
    vg_output summary_op = vg_summary_merge_all(g);
    vg_op *init_op = vg_global_variables_initializer(g);
    if (vg_graph_status(g, &st) != VG_OK || !saver) {
        fprintf(stderr, "graph: %s\n", st.msg);
        vg_saver_free(saver);
        vg_optimizer_free(opt);
        vg_graph_free(g);
        return 1;
    }

    vg_scaffold_options so = {0};
    so.init_op = init_op;
    so.summary_op = summary_op;
    so.saver = saver;
    vg_scaffold *scaffold = vg_scaffold_new(&so);
    vg_hook hook;
    vg_code rc = vg_stop_at_step_hook(-1, a.steps, &hook, &st);
    vg_monitored_session *sess = NULL;
    if (rc == VG_OK && scaffold) {
        vg_mts_options o = {0};
        o.not_chief = task_index != 0;
        o.scaffold = scaffold;
        o.checkpoint_dir = a.model;
        o.hooks = &hook;
        o.nhooks = 1;
        o.no_step_counter = true;
        sess = vg_monitored_training_session_new(g, &o, &st);
    }
    if (!sess) {
        fprintf(stderr, "session: %s\n", scaffold ? st.msg : "out of memory");
        vg_scaffold_free(scaffold);
        vg_saver_free(saver);
        vg_optimizer_free(opt);
        vg_graph_free(g);
        return 1;
    }
    printf("session ready\n");
    /* Loop until the session shuts down */
    int64_t step = 0, nsteps = 0;
    double first = 0, recent[10] = {0};
    int nfirst = 0;
    vg_output fetches[4] = {summary_op, global_step, loss, accuracy};
    rc = VG_OK;
    while (rc == VG_OK && !vg_monitored_session_should_stop(sess)) {
        vg_tensor *out[4] = {NULL};
        vg_run_args ra = {0};
        if (step % 100 == 0) { /* sess.run(accuracy) */
            ra.fetches = &accuracy;
            ra.nfetches = 1;
            rc = vg_monitored_session_run(sess, &ra, out, NULL, &st);
            if (rc != VG_OK) break;
            printf("step: %lld accuracy: %g\n", (long long)step, vg_tensor_scalar(out[0]));
            vg_tensor_free(out[0]);
            if (vg_monitored_session_should_stop(sess)) break;
        }
        /* _, summary, step = sess.run([train_op, summary_op, global_step]) (+ the loss) */
        ra.fetches = fetches;
        ra.nfetches = 3;
        ra.targets = &train_op;
        ra.ntargets = 1;
        rc = vg_monitored_session_run(sess, &ra, out, NULL, &st);
        if (rc != VG_OK) break;
        step = (int64_t)vg_tensor_scalar(out[1]);
        double l = vg_tensor_scalar(out[2]);
        printf("step %lld loss %.4f\n", (long long)step, l);
        if (nfirst < 10) first += l, nfirst++;
        recent[nsteps % 10] = l;
        nsteps++;
        for (int i = 0; i < 3; i++) vg_tensor_free(out[i]);
    }
    rc = vg_monitored_session_end(sess, rc, &st); /* OUT_OF_RANGE at the data's end: a clean exit */
    vg_monitored_session_free(sess);
    if (rc != VG_OK) fprintf(stderr, "training: %s: %s\n", vg_code_name(rc), st.msg);
    printf("stopping MonitoredTrainingSession\n");
    int nlast = nsteps < 10 ? (int)nsteps : 10;
    double last = 0;
    for (int i = 0; i < nlast; i++) last += recent[i];
    printf("steps %lld\nfirst loss %.6f\nfinal loss %.6f\n", (long long)nsteps, nfirst ? first / nfirst : NAN,
           nlast ? last / nlast : NAN);
    vg_scaffold_free(scaffold);
    vg_saver_free(saver);
    vg_optimizer_free(opt);
    vg_file_writer_cache_clear();
    vg_graph_free(g);
    tf1_remove_tmpdir(tmp);
    return rc == VG_OK ? 0 : 1;
}
