/* test_data_saveable_paths.c - iterator states saved in the middle of tf.data's fast
 * paths (issue 28, item 5; the checks of TF's dataset_serialization_test_base
 * verify_multiple_breaks on the pipelines of test_data_rows): the vectorized and
 * native map with its read-ahead blocks (also asynchronous, num_parallel_calls 2, and
 * pool-split, 3), row views, the slab shuffle, batch, prefetch's ring, the parallel
 * interleave's per-element read-ahead threads and the native map of a batch.
 *
 * TFRecord files of tf.train.Examples, some of them bad (type errors, records that are
 * no Example, a corrupted record: errors are elements of the stream too), go through
 * each pipeline once without a break (the reference, element path) and then with a
 * checkpoint (Saver + vg_make_saveable_from_iterator) at ten break points: each segment
 * runs in a new graph and session restored from the previous checkpoint without an
 * initializer. Every get_next must give the reference's result: tensors bit for bit,
 * error codes and messages. A state saved with the fast paths off restores with them on
 * and the other way round (the state does not depend on the path taken). */
#include "data/dataset.h"
#include "test_util.h"
#include "ds_items_util.h"
#include "dataset_fixture.h"
#include "cf_callbacks.h"
#include "vigil/vigil.h"
#include <sys/stat.h>

#define NREC 300

static vg_feature_spec g_specs[3];
static char g_dir[256], g_ckdir[300], g_files[2][512];


static vg_output file_names(vg_graph *g) { return ds_files_const(g, g_files); }

static void parse3(vg_graph *fg, vg_output rec, vg_output *d, bool batched) {
    vg_feature_spec specs[3] = {g_specs[0], g_specs[1], g_specs[2]};
    specs[1].default_value = vg_const_i64(fg, 77, NULL);
    specs[2].default_value = vg_const_array(fg, VG_FLOAT, (int64_t[]){3}, 1, (float[]){7, 8, 9}, NULL);
    if (batched) vg_parse_example(fg, rec, (vg_output){NULL, 0}, specs, 3, d, NULL, NULL);
    else vg_parse_single_example(fg, rec, specs, 3, d, NULL, NULL);
}

/* the native map's form: image decode_raw -> reshape -> cast * 1/255 (a deferred uint8
 * row), label, w * 2 + 1 */
static vg_code parse_fn(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) {
    (void)nargs;
    bool batched = p != NULL;
    vg_output d[3];
    parse3(fg, args[0], d, batched);
    vg_output img = batched ? vg_reshape_c(fg, vg_decode_raw(fg, d[0], VG_UINT8, true, NULL), (int64_t[]){-1, 4, 4}, 3, NULL)
                            : vg_reshape_c(fg, vg_decode_raw(fg, d[0], VG_UINT8, true, NULL), (int64_t[]){4, 4}, 2, NULL);
    outs[0] = vg_mul(fg, vg_cast(fg, img, VG_FLOAT, NULL), vg_const_f32(fg, 1.0f / 255, NULL), NULL);
    outs[1] = d[1];
    outs[2] = vg_add(fg, vg_mul(fg, d[2], vg_const_f32(fg, 2.0f, NULL), NULL), vg_const_f32(fg, 1.0f, NULL), NULL);
    *nouts = 3;
    return VG_OK;
}

DS_FN1(tfrecord_fn, vg_dataset_tfrecord(fg, args[0], "", NULL))

enum { P_MAP_SHUFFLE_BATCH_PREFETCH, P_MAP_BATCH, P_SHUFFLE_BATCH_PARSE, P_PARALLEL_INTERLEAVE, P_COUNT };
static const char *const g_pnames[P_COUNT] = {"repeat->map->shuffle->batch->prefetch", "map->batch",
                                              "shuffle->batch->map(ParseExample)",
                                              "interleave(parallel)->map->shuffle->batch"};

static vg_output pipeline_ds(vg_graph *g, int kind, int par) {
    vg_output files = file_names(g);
    vg_output ds = vg_dataset_repeat(g, vg_dataset_tfrecord(g, files, "", NULL), 2, NULL);
    switch (kind) {
    case P_MAP_SHUFFLE_BATCH_PREFETCH:
        ds = vg_dataset_map_parallel(g, ds, parse_fn, NULL, par, NULL);
        ds = vg_dataset_batch(g, vg_dataset_shuffle(g, ds, 50, 3, true, NULL), 8, false, NULL);
        return vg_dataset_prefetch(g, ds, 2, NULL);
    case P_MAP_BATCH: return vg_dataset_batch(g, vg_dataset_map_parallel(g, ds, parse_fn, NULL, par, NULL), 5, false, NULL);
    case P_SHUFFLE_BATCH_PARSE:
        ds = vg_dataset_batch(g, vg_dataset_shuffle(g, ds, 40, 7, true, NULL), 6, false, NULL);
        return vg_dataset_map_parallel(g, ds, parse_fn, (void *)1, par, NULL);
    default:
        ds = vg_dataset_from_tensor_slices(g, &files, 1, NULL);
        ds = vg_dataset_interleave_parallel(g, ds, tfrecord_fn, NULL, 2, 3, 2, NULL);
        ds = vg_dataset_map_parallel(g, ds, parse_fn, NULL, par, NULL);
        return vg_dataset_batch(g, vg_dataset_shuffle(g, ds, 30, 9, false, NULL), 4, false, NULL);
    }
}

#define CAP 400

typedef struct run {
    vg_graph *g;
    vg_session *s;
    vg_saver *sv;
    vg_op *init, *next;
} run;

static bool run_new(run *r, int kind, int par) {
    memset(r, 0, sizeof *r);
    r->g = vg_graph_new();
    vg_output it = vg_make_initializable_iterator(r->g, pipeline_ds(r->g, kind, par), &r->init, "Iterator");
    vg_make_saveable_from_iterator(r->g, it, NULL);
    r->next = vg_iterator_get_next(r->g, it, NULL);
    return ds_open(r->g, &r->sv, 1, &r->s, "run_new");
}

static void run_free(run *r) {
    vg_session_free(r->s);
    vg_saver_free(r->sv);
    vg_graph_free(r->g);
}

/* One get_next into *it; false at the end. */
static bool run_next(run *r, item *it) {
    vg_output f[3] = {vg_out(r->next, 0), vg_out(r->next, 1), vg_out(r->next, 2)};
    return item_next(r->s, f, 3, it);
}

/* The items of the pipeline with a checkpoint at each break point (none: nb 0); the
 * fast paths at level_a before the first break, level_b after it. */
static int collect(int kind, int par, const int *breaks, int nb, int level_a, int level_b, item *out) {
    vg_status st;
    char prefix[400], buf[600];
    snprintf(prefix, sizeof prefix, "%s/model.ckpt", g_ckdir);
    tu_rmrf(g_ckdir);
    mkdir(g_ckdir, 0755);
    int n = 0;
    for (int seg = 0; seg <= nb; seg++) {
        set_paths(seg == 0 ? level_a : level_b);
        run r;
        if (!run_new(&r, kind, par)) return n;
        if (seg == 0) {
            CHECK_OK(vg_session_run_targets(r.s, &r.init, 1, &st), &st);
        } else {
            const char *ck = vg_latest_checkpoint(g_ckdir, buf, sizeof buf);
            CHECK(ck != NULL);
            if (ck) CHECK_OK(vg_saver_restore(r.sv, r.s, ck, &st), &st); /* no initializer */
        }
        int end = seg < nb ? breaks[seg] : CAP;
        bool more = true;
        while (n < end && (more = run_next(&r, &out[n]))) n++;
        if (seg < nb) {
            vg_code rc = vg_saver_save(r.sv, r.s, prefix, seg, NULL, 0, &st);
            if (rc != VG_OK) fprintf(stderr, "save at %d: %s\n", n, st.msg);
            CHECK_OK(rc, &st);
        }
        run_free(&r);
        if (!more) break;
    }
    return n;
}

static bool same_items(const item *ref, int nref, const item *got, int n, const char *what) {
    if (n != nref) {
        fprintf(stderr, "%s: %d items, reference %d\n", what, n, nref);
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (got[i].rc != ref[i].rc || strcmp(got[i].msg, ref[i].msg)) {
            fprintf(stderr, "%s: item %d: %s \"%s\", reference %s \"%s\"\n", what, i, vg_code_name(got[i].rc), got[i].msg,
                    vg_code_name(ref[i].rc), ref[i].msg);
            return false;
        }
        for (int c = 0; c < 3; c++)
            if (!same_tensor(got[i].t[c], ref[i].t[c])) {
                fprintf(stderr, "%s: item %d component %d differs\n", what, i, c);
                return false;
            }
    }
    return true;
}

static item g_ref[CAP], g_got[CAP];

static void test_breaks(void) {
    static const int pars[3] = {0, 2, 3};
    for (int kind = 0; kind < P_COUNT; kind++)
        for (int pi = 0; pi < 3; pi++) {
            int par = pars[pi];
            int nref = collect(kind, par, NULL, 0, 0, 0, g_ref), errors = 0;
            for (int i = 0; i < nref; i++) errors += g_ref[i].rc != VG_OK;
            CHECK(nref > 20 && nref < CAP);
            CHECK(errors >= 2);
            /* dataset_serialization_test_base.gen_break_points: linspace(0, n, 10) */
            int br[10];
            for (int k = 0; k < 10; k++) br[k] = k == 9 ? nref : (int)((double)k * nref / 9);
            static const int levels[4][2] = {{0, 0}, {3, 3}, {0, 3}, {3, 0}};
            for (int l = 0; l < 4; l++) {
                char what[200];
                snprintf(what, sizeof what, "%s, num_parallel_calls %d, fast paths %d then %d", g_pnames[kind], par,
                         levels[l][0], levels[l][1]);
                int n = collect(kind, par, br, 10, levels[l][0], levels[l][1], g_got);
                CHECK(same_items(g_ref, nref, g_got, n, what));
                free_items(g_got, n);
            }
            /* odd break points (mid-block of the map's read-ahead, mid-ring) */
            int odd[4] = {1, 3, 7, nref - 2};
            int n = collect(kind, par, odd, 4, 3, 3, g_got);
            CHECK(same_items(g_ref, nref, g_got, n, "odd break points"));
            free_items(g_got, n);
            free_items(g_ref, nref);
        }
    set_paths(3);
}

int main(void) {
    vg_log_set(vg_log_stderr, NULL, VG_LOG_WARN);
    ds_example_specs(g_specs);
    if (!*tu_mkdtemp(g_dir, sizeof g_dir, "saveable_paths")) {
        CHECK(false);
        TEST_MAIN_END();
    }
    snprintf(g_ckdir, sizeof g_ckdir, "%s/ckpt", g_dir);
    ds_write_example_files(g_files, g_dir, NREC, 7, 100, false, 400);
    RUN_TEST(test_breaks);
    tu_rmrf(g_dir);
    TEST_MAIN_END();
}
