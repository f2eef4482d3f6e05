/* ds_items_util.h - comparing what tf.data pipelines give with the fast paths on and
 * off (test_data_rows, test_data_vectorize, test_data_saveable_paths; white-box:
 * data/dataset.h): an item is one get_next (its code, its message, up to five
 * components); item_next runs one, same_tensor compares components (strings by
 * content), free_items frees them, set_paths switches the fast paths on up to a level.
 * Include after test_util.h. */
#ifndef VG_DS_ITEMS_UTIL_H
#define VG_DS_ITEMS_UTIL_H
#include "test_util.h"
#include "data/dataset.h"
#include "vigil/vigil.h"

typedef struct item {
    vg_code rc;
    char msg[1100];
    vg_tensor *t[5];
} item;

/* One get_next of the nout (at most 5) fetches into *it; false at the end of input
 * (OUT_OF_RANGE). An error's message is kept in it->msg. */
static inline bool item_next(vg_session *s, const vg_output *fetch, int nout, item *it) {
    vg_status st;
    memset(it, 0, sizeof *it);
    it->rc = vg_session_run(s, NULL, NULL, NULL, 0, fetch, it->t, nout, NULL, 0, NULL, &st);
    if (it->rc == VG_OUT_OF_RANGE) return false;
    if (it->rc != VG_OK) snprintf(it->msg, sizeof it->msg, "%s", st.msg);
    return true;
}

/* Equal dtype, shape and values (strings: each element's bytes); both NULL is equal. */
static inline bool same_tensor(const vg_tensor *a, const vg_tensor *b) {
    if (!a || !b) return a == b;
    if (vg_tensor_dtype(a) != vg_tensor_dtype(b) || vg_tensor_ndims(a) != vg_tensor_ndims(b)) return false;
    if (memcmp(vg_tensor_dims(a), vg_tensor_dims(b), sizeof(int64_t) * (size_t)vg_tensor_ndims(a))) return false;
    if (vg_tensor_dtype(a) != VG_STRING) return !memcmp(vg_tensor_data(a), vg_tensor_data(b), vg_tensor_nbytes(a));
    for (int64_t i = 0; i < vg_tensor_num_elements(a); i++) {
        size_t la, lb;
        const char *sa = vg_tensor_string(a, i, &la), *sb = vg_tensor_string(b, i, &lb);
        if (la != lb || memcmp(sa, sb, la)) return false;
    }
    return true;
}

static inline void free_items(item *v, int n) {
    for (int i = 0; i < n; i++)
        for (int c = 0; c < 5; c++) vg_tensor_free(v[i].t[c]);
}

/* The fast paths on up to level: 1 the vectorized map, 2 row views, 3 the native map. */
static inline void set_paths(int level) {
    vg__ds_set_vectorize(level >= 1);
    vg__ds_set_rows(level >= 2);
    vg__ds_set_native(level >= 3);
}
#endif
