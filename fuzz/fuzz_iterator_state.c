/* fuzz_iterator_state.c - the tf.data iterator state that DeserializeIterator reads from
 * a checkpoint (vg_make_saveable_from_iterator; src/data/dataset_state.c): the whole
 * input is the state. Every input is decoded (the dataset description with its map,
 * filter and interleave functions as GraphDefs, then each iterator's position); a state
 * that decodes must serialize, decode again and serialize to the same bytes. A decoded
 * iterator is then run for up to 300 elements when its pipeline is bounded: a state,
 * like a TF program, may describe a pipeline that never ends (repeat forever, a filter
 * that drops everything) or reads any file, which is the program's choice and not a
 * reader's bug, so those are decoded but not run. The seeds are states of the pipelines
 * `range -> map -> shuffle -> batch -> prefetch` and `zip(range, range) -> repeat ->
 * skip -> take` at a few positions. */
#include "fuzz_util.h"
#include "data/dataset.h"

/* A pipeline that ends soon and touches no file or function. */
static bool bounded(const vg__dataset *d, int depth) {
    if (!d || depth > 16) return false;
    switch (d->kind) {
    case VG__DS_RANGE: {
        int64_t span;
        if (d->c == 0 || d->c == INT64_MIN || __builtin_sub_overflow(d->b, d->a, &span)) return false;
        return span / d->c <= 10000;
    }
    case VG__DS_SLICES:
    case VG__DS_FROM_TENSORS: return true;
    case VG__DS_REPEAT: if (d->a < 0 || d->a > 4) return false; break;
    case VG__DS_SHUFFLE: if (d->a > 1000) return false; break;
    case VG__DS_PREFETCH: if (d->a > 64) return false; break;
    case VG__DS_BATCH: if (d->a > 256) return false; break;
    case VG__DS_PADDED_BATCH:
        if (d->a > 256) return false;
        for (int c = 0; c < d->ncomp; c++)
            for (int k = 0; k < d->padded[c].ndims; k++)
                if (d->padded[c].dims[k] > 64) return false;
        break;
    case VG__DS_SKIP: if (d->a > 10000) return false; break;
    case VG__DS_TAKE:
    case VG__DS_SHARD:
    case VG__DS_UNBATCH:
    case VG__DS_IGNORE_ERRORS:
    case VG__DS_ZIP:
    case VG__DS_CONCATENATE: break;
    case VG__DS_CACHE: if (!d->cache || d->cache->file) return false; break;
    default: return false; /* files, functions */
    }
    for (int i = 0; i < d->nmore; i++)
        if (!bounded(d->more[i], depth + 1)) return false;
    return bounded(d->input, depth + 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_dir(); /* quiet logging */
    vg_status st;
    vg__ds_iter *it = vg__ds_deserialize(data, size, &st);
    if (!it) return 0;
    uint8_t *b1 = NULL, *b2 = NULL;
    size_t l1, l2;
    if (vg__ds_serialize(it, &b1, &l1, &st) == VG_OK) {
        vg__ds_iter *it2 = vg__ds_deserialize(b1, l1, &st);
        if (!it2) abort();
        if (vg__ds_serialize(it2, &b2, &l2, &st) != VG_OK) abort();
        if (l1 != l2 || memcmp(b1, b2, l1) != 0) abort();
        vg__ds_iter_free(it2);
        vg__free(b1);
        vg__free(b2);
    }
    if (bounded(it->ds, 0)) {
        int nc = it->ds->ncomp;
        for (int i = 0; i < 300; i++) {
            vg_tensor *out[VG_DATASET_MAX_COMPONENTS] = {NULL};
            bool end = false;
            vg_code rc = it->next(it, out, &end, &st);
            for (int c = 0; c < nc; c++) vg_tensor_free(out[c]);
            if (rc != VG_OK || end) break;
        }
    }
    vg__ds_iter_free(it);
    return 0;
}
