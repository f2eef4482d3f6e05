/* test_queue_oom.c - allocation failures (SQLite-style) in the queue and data ops at
 * run time, and in the coordinator: allocation N fails for N = 1, 2, ... until the
 * sequence runs through. Every failure must surface as RESOURCE_EXHAUSTED, with no
 * crash, no hang and (under ASan) no leak. */
#include "test_util.h"
#include "vigil/ops.h"
#include "vigil/queue.h"
#include "vigil/session.h"
#include <unistd.h>
#include <zlib.h>

#include "oom_util.h"

static char g_img[256], g_lab[256];

static void write_gz(const char *path, const uint8_t *hdr, size_t hl, const uint8_t *data, size_t n) {
    gzFile f = gzopen(path, "wb");
    gzwrite(f, hdr, (unsigned)hl);
    gzwrite(f, data, (unsigned)n);
    gzclose(f);
}

typedef struct model {
    vg_graph *g;
    vg_session *s;
    vg_output xs, n, ux, idx;
    vg_op *enq_many, *deq_many, *uenq, *udeq, *senq, *sdeq, *rec;
} model;

static bool build(model *m) {
    vg_status st;
    vg_graph *g = m->g = vg_graph_new();
    vg_dtype f = VG_FLOAT;
    vg_shape row = vg_shape_make((int64_t[]){2}, 1);
    vg_output q = vg_fifo_queue(g, &f, &row, 1, 10, "q");
    m->xs = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 2}, 2, "xs");
    m->n = vg_placeholder(g, VG_INT32, NULL, 0, "n");
    m->enq_many = vg_queue_enqueue_many(g, q, &m->xs, 1, NULL);
    m->deq_many = vg_queue_dequeue_many(g, q, m->n, NULL);
    vg_output uq = vg_fifo_queue(g, &f, NULL, 1, 10, "uq");
    m->ux = vg_placeholder(g, VG_FLOAT, NULL, -1, "ux");
    m->uenq = vg_queue_enqueue(g, uq, &m->ux, 1, NULL);
    m->udeq = vg_queue_dequeue(g, uq, NULL);
    vg_output sq = vg_random_shuffle_queue(g, &f, &row, 1, 10, 1, 3, 0, "sq");
    m->senq = vg_queue_enqueue_many(g, sq, &m->xs, 1, NULL);
    m->sdeq = vg_queue_dequeue_many(g, sq, m->n, NULL);
    m->idx = vg_placeholder(g, VG_INT32, (int64_t[]){-1}, 1, "idx");
    m->rec = vg_idx_record(g, g_img, g_lab, m->idx, "rec");
    if (vg_graph_status(g, &st) != VG_OK) return false;
    m->s = vg_session_new(g, NULL, &st);
    return m->s != NULL;
}

static vg_code feed_run(model *m, vg_output feed, vg_tensor *v, vg_op *target, vg_op *fetch_op, vg_status *st) {
    vg_tensor *out = NULL;
    vg_output f = fetch_op ? vg_out(fetch_op, 0) : (vg_output){NULL, 0};
    vg_code rc = vg_session_run(m->s, NULL, &feed, &v, v ? 1 : 0, fetch_op ? &f : NULL, &out, fetch_op ? 1 : 0,
                                target ? &target : NULL, target ? 1 : 0, NULL, st);
    vg_tensor_free(out);
    return rc;
}

static void idle_thread(vg_coord *c, void *payload) {
    (void)payload;
    vg_coord_wait_for_stop(c, -1);
}

/* The armed sequence; returns the number of unexpected codes. */
static int sequence(model *m) {
    int bad = 0;
    vg_status st;
    vg_tensor *rows = vg_tensor_new_zeros(VG_FLOAT, (int64_t[]){4, 2}, 2, &st);
    vg_tensor *two = vg_tensor_new_scalar_i32(2, &st);
    vg_tensor *one_el = vg_tensor_new_zeros(VG_FLOAT, (int64_t[]){3}, 1, &st);
    vg_tensor *ids = vg_tensor_new_copy(VG_INT32, (int64_t[]){2}, 1, (int32_t[]){1, 0}, 8, &st);
    if (!rows || !two || !one_el || !ids) goto done;
#define EXPECT(call)                                                                                    \
    do {                                                                                                \
        vg_code _rc = (call);                                                                           \
        if (_rc != VG_OK && _rc != VG_RESOURCE_EXHAUSTED) {                                             \
            fprintf(stderr, "  alloc %ld: %s: code %d: %s\n", g_fail_at, #call, _rc, st.msg);           \
            bad++;                                                                                      \
        }                                                                                               \
        ok = _rc == VG_OK;                                                                              \
    } while (0)
    bool ok;
    EXPECT(feed_run(m, m->xs, rows, m->enq_many, NULL, &st));
    if (ok) EXPECT(feed_run(m, m->n, two, NULL, m->deq_many, &st));
    EXPECT(feed_run(m, m->ux, one_el, m->uenq, NULL, &st));
    if (ok) EXPECT(feed_run(m, (vg_output){NULL, 0}, NULL, NULL, m->udeq, &st));
    EXPECT(feed_run(m, m->xs, rows, m->senq, NULL, &st));
    if (ok) EXPECT(feed_run(m, m->n, two, NULL, m->sdeq, &st));
    EXPECT(feed_run(m, m->idx, ids, NULL, m->rec, &st));
    vg_coord *c = vg_coord_new(NULL, 0);
    if (c) {
        EXPECT(vg_coord_start_thread(c, "t", idle_thread, NULL, &st));
        vg_coord_request_stop(c, NULL);
        EXPECT(vg_coord_join(c, 5, false, &st));
        vg_coord_free(c);
    }
#undef EXPECT
done:
    vg_tensor_free(rows);
    vg_tensor_free(two);
    vg_tensor_free(one_el);
    vg_tensor_free(ids);
    return bad;
}

static void test_queue_oom__runs(void) {
    oom_install();
    int bad = 0;
    long n;
    for (n = 1; n < 100000; n++) {
        arm(0);
        model m = {0};
        if (!build(&m)) {
            fprintf(stderr, "  build failed without injected failures\n");
            bad++;
            vg_session_free(m.s);
            vg_graph_free(m.g);
            break;
        }
        arm(n);
        bad += sequence(&m);
        bool injected = g_count >= n;
        arm(0);
        vg_session_free(m.s);
        vg_graph_free(m.g);
        if (!injected) break;
    }
    vg_allocator_set(NULL);
    CHECK_EQ_INT(bad, 0);
    CHECK(n > 20);
    fprintf(stderr, "  %ld allocations exercised\n", n);
}

int main(void) {
    snprintf(g_img, sizeof g_img, "/tmp/vg_qoom_img_%d.gz", (int)getpid());
    snprintf(g_lab, sizeof g_lab, "/tmp/vg_qoom_lab_%d.gz", (int)getpid());
    uint8_t ih[16] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2}, lh[8] = {0, 0, 8, 1, 0, 0, 0, 2};
    uint8_t pix[8] = {1, 2, 3, 4, 5, 6, 7, 8}, lab[2] = {3, 4};
    write_gz(g_img, ih, sizeof ih, pix, sizeof pix);
    write_gz(g_lab, lh, sizeof lh, lab, sizeof lab);
    RUN_TEST(test_queue_oom__runs);
    unlink(g_img);
    unlink(g_lab);
    TEST_MAIN_END();
}
