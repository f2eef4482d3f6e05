/* test_summary_run_metadata.c - vg_run_metadata_serialize (RunMetadata proto decoded
 * back field by field) and vg_run_metadata_to_chrome_trace (TF timeline.py JSON),
 * including allocation failures. */
#include "io/io.h"
#include "test_util.h"
#include "fail_nth_alloc.h"
#include "pb_test_util.h"
#include "vigil/summary.h"
#include "vigil/vigil.h"
#include <unistd.h>

/* Runs a small graph (a, b, a*b + a) with FULL tracing into md. */
static vg_graph *traced_run(vg_run_metadata *md, bool partition_graphs) {
    vg_graph *g = vg_graph_new();
    vg_output a = vg_const_f32(g, 2, "a");
    vg_output b = vg_const_f32(g, 3, "b");
    vg_output y = vg_add(g, vg_mul(g, a, b, "mul"), a, "y\"q"); /* a quote to escape in JSON */
    vg_status st;
    vg_session *s = vg_session_new(g, NULL, &st);
    CHECK(s != NULL);
    vg_run_options ro = {0};
    ro.trace_level = VG_TRACE_FULL;
    ro.output_partition_graphs = partition_graphs;
    vg_tensor *out = NULL;
    CHECK_OK(vg_session_run(s, &ro, NULL, NULL, 0, &y, &out, 1, NULL, 0, md, &st), &st);
    vg_tensor_free(out);
    vg_session_free(s);
    return g;
}

/* One decoded NodeExecStats. */
typedef struct node {
    char name[64];
    char label[128];
    int64_t start, op_end, all_end, sched, bytes;
    uint64_t tid;
} node;

static void decode_node(const vg__pb_field *nf, node *n) {
    vg__pb_reader r, mr;
    vg__pb_field f, m;
    memset(n, 0, sizeof *n);
    vg__pb_reader_init(&r, nf->data, nf->len);
    while (vg__pb_next(&r, &f, NULL) == VG_OK) {
        switch (f.number) {
        case 1: copy_str(n->name, sizeof n->name, &f); break;
        case 2: n->start = (int64_t)f.u; break;
        case 3: CHECK(0); break; /* op_start_rel_micros is 0: omitted */
        case 4: n->op_end = (int64_t)f.u; break;
        case 5: n->all_end = (int64_t)f.u; break;
        case 6:
            vg__pb_reader_init(&mr, f.data, f.len);
            while (vg__pb_next(&mr, &m, NULL) == VG_OK)
                if (m.number == 2) n->bytes = (int64_t)m.u;
            break;
        case 8: copy_str(n->label, sizeof n->label, &f); break;
        case 9: n->sched = (int64_t)f.u; break;
        case 10: n->tid = f.u; break;
        default: break;
        }
    }
}

/* Decodes RunMetadata: fills nodes, returns the count; *device, *npart. */
static int decode_run_metadata(const void *bytes, size_t len, node *nodes, int max, char *device, int *npart) {
    vg__pb_reader r, sr, dr;
    vg__pb_field f, s, d;
    int n = 0, ndev = 0;
    *npart = 0;
    device[0] = 0;
    vg__pb_reader_init(&r, bytes, len);
    vg_code c;
    while ((c = vg__pb_next(&r, &f, NULL)) == VG_OK) {
        if (f.number == 3) {
            CHECK_EQ_INT(f.len, 0);
            (*npart)++;
        }
        if (f.number != 1) continue;
        vg__pb_reader_init(&sr, f.data, f.len);
        while (vg__pb_next(&sr, &s, NULL) == VG_OK) {
            CHECK_EQ_INT(s.number, 1);
            ndev++;
            vg__pb_reader_init(&dr, s.data, s.len);
            while (vg__pb_next(&dr, &d, NULL) == VG_OK) {
                if (d.number == 1) copy_str(device, 128, &d);
                if (d.number == 2 && n < max) decode_node(&d, &nodes[n++]);
            }
        }
    }
    CHECK_EQ_INT(c, VG_OUT_OF_RANGE);
    CHECK(n == 0 || ndev == 1);
    return n;
}

static void test_summary__run_metadata_serialize(void) {
    vg_run_metadata *md = vg_run_metadata_new();
    vg_graph *g = traced_run(md, true);
    int n = vg_run_metadata_num_nodes(md);
    CHECK(n >= 4);
    void *bytes = NULL;
    size_t len = 0;
    vg_status st;
    CHECK_OK(vg_run_metadata_serialize(md, &bytes, &len, &st), &st);
    node nodes[16];
    char device[128];
    int npart;
    int m = decode_run_metadata(bytes, len, nodes, 16, device, &npart);
    CHECK_EQ_INT(m, n);
    CHECK(strcmp(device, "/job:localhost/replica:0/task:0/device:CPU:0") == 0);
    CHECK_EQ_INT(npart, vg_run_metadata_num_partition_graphs(md));
    CHECK(npart >= 1);
    bool saw_mul = false;
    for (int i = 0; i < m && i < 16; i++) {
        const vg_node_stats *ns = vg_run_metadata_node(md, i);
        CHECK(strcmp(nodes[i].name, ns->node_name) == 0);
        CHECK_EQ_INT(nodes[i].tid, (uint64_t)ns->thread_id);
        CHECK_EQ_INT(nodes[i].start, ns->start_us);
        CHECK_EQ_INT(nodes[i].sched, ns->start_us);
        CHECK_EQ_INT(nodes[i].op_end, ns->end_us - ns->start_us);
        CHECK_EQ_INT(nodes[i].all_end, ns->end_us - ns->start_us);
        CHECK_EQ_INT(nodes[i].bytes, ns->bytes_allocated > 0 ? ns->bytes_allocated : 0);
        char want[128];
        snprintf(want, sizeof want, "%s = %s()", ns->node_name, ns->op_type);
        CHECK(strcmp(nodes[i].label, want) == 0);
        if (strcmp(nodes[i].name, "mul") == 0) {
            saw_mul = true;
            CHECK(strcmp(nodes[i].label, "mul = Mul()") == 0);
        }
    }
    CHECK(saw_mul);
    vg_free(bytes);

    /* cleared metadata: no step_stats at all, still a valid (empty) buffer */
    vg_run_metadata_clear(md);
    CHECK_OK(vg_run_metadata_serialize(md, &bytes, &len, &st), &st);
    CHECK(bytes != NULL);
    CHECK_EQ_INT(len, 0);
    vg_free(bytes);
    CHECK_EQ_INT(vg_run_metadata_serialize(NULL, &bytes, &len, &st), VG_INVALID_ARGUMENT);
    vg_run_metadata_free(md);
    vg_graph_free(g);
}

/* Minimal JSON checker: strings with escapes, balanced {} and [] outside strings. */
static bool json_balanced(const char *s) {
    int depth = 0;
    bool in_str = false;
    for (; *s; s++) {
        if (in_str) {
            if (*s == '\\') {
                if (!s[1]) return false;
                s++;
            } else if (*s == '"') {
                in_str = false;
            } else if ((unsigned char)*s < 0x20) {
                return false;
            }
            continue;
        }
        if (*s == '"') in_str = true;
        else if (*s == '{' || *s == '[') depth++;
        else if (*s == '}' || *s == ']') {
            if (--depth < 0) return false;
        }
    }
    return depth == 0 && !in_str;
}

static void test_summary__chrome_trace(void) {
    vg_run_metadata *md = vg_run_metadata_new();
    vg_graph *g = traced_run(md, false);
    char *json = NULL;
    size_t len = 0;
    vg_status st;
    CHECK_OK(vg_run_metadata_to_chrome_trace(md, true, &json, &len, &st), &st);
    CHECK(json != NULL);
    if (!json) return;
    CHECK_EQ_INT(strlen(json), len);
    CHECK(strncmp(json, "{\"traceEvents\":[", 16) == 0);
    CHECK(json_balanced(json));
    CHECK_STR_CONTAINS(json, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"Allocators\"}}");
    CHECK_STR_CONTAINS(json, "\"args\":{\"name\":\"/job:localhost/replica:0/task:0/device:CPU:0 Compute\"}");
    CHECK_STR_CONTAINS(json, "\"name\":\"thread_name\"");
    CHECK_STR_CONTAINS(json, "{\"ph\":\"X\",\"cat\":\"Op\",\"name\":\"Mul\",\"pid\":1,");
    CHECK_STR_CONTAINS(json, "\"args\":{\"name\":\"mul\",\"op\":\"Mul\"}}");
    CHECK_STR_CONTAINS(json, "\"args\":{\"name\":\"y\\\"q\",\"op\":\"AddV2\"}}");
    CHECK_STR_CONTAINS(json, "\"name\":\"a\"");
    CHECK_STR_CONTAINS(json, "\"name\":\"b\"");
    CHECK_STR_CONTAINS(json, "{\"ph\":\"C\",\"cat\":\"Memory\"");
    /* every op appears once as an X event */
    int nx = 0;
    for (const char *p = json; (p = strstr(p, "\"ph\":\"X\"")); p++) nx++;
    CHECK_EQ_INT(nx, vg_run_metadata_num_nodes(md));

    /* real JSON check when Python is around */
    if (access("/usr/bin/python3", X_OK) == 0) {
        char path[] = "/tmp/vg_trace_XXXXXX";
        int fd = mkstemp(path);
        CHECK(fd >= 0);
        if (fd >= 0) {
            CHECK_EQ_INT(write(fd, json, len), (long long)len);
            close(fd);
            char cmd[256];
            snprintf(cmd, sizeof cmd,
                     "/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
                     "assert isinstance(d[\"traceEvents\"], list)' %s", path);
            CHECK_EQ_INT(system(cmd), 0);
            unlink(path);
        }
    }
    vg_free(json);

    /* show_memory off: no counters */
    CHECK_OK(vg_run_metadata_to_chrome_trace(md, false, &json, &len, &st), &st);
    CHECK(json && !strstr(json, "\"ph\":\"C\""));
    vg_free(json);
    vg_run_metadata_free(md);
    vg_graph_free(g);
}

/* ---- allocation failures ---- */

static void test_summary__run_metadata_alloc_failures(void) {
    /* installed before any object exists: every block is freed by the hook that made it */
    vg_allocator a = {fail_alloc, fail_free, NULL};
    vg_allocator_set(&a);
    vg_run_metadata *md = vg_run_metadata_new();
    vg_graph *g = traced_run(md, true);
    for (int which = 0; which < 2; which++) {
        bool ok = false;
        for (int n = 0; n < 200 && !ok; n++) {
            g_fail_at = n;
            g_count = 0;
            void *out = NULL;
            size_t len;
            vg_status st;
            vg_code c = which == 0 ? vg_run_metadata_serialize(md, &out, &len, &st)
                                   : vg_run_metadata_to_chrome_trace(md, true, (char **)&out, &len, &st);
            if (c == VG_OK) {
                ok = true;
                vg_free(out);
            } else {
                CHECK_EQ_INT(c, VG_RESOURCE_EXHAUSTED);
                CHECK(out == NULL);
            }
        }
        CHECK(ok);
    }
    g_fail_at = -1;
    vg_run_metadata_free(md);
    vg_graph_free(g);
    vg_allocator_set(NULL);
}

int main(void) {
    RUN_TEST(test_summary__run_metadata_serialize);
    RUN_TEST(test_summary__chrome_trace);
    RUN_TEST(test_summary__run_metadata_alloc_failures);
    TEST_MAIN_END();
}
