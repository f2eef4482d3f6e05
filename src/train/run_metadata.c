/*
 * run_metadata.c - run metadata out of vigil: the RunMetadata proto that TensorBoard
 * reads from tagged_run_metadata events, and Chrome trace JSON in the format of TF's
 * python/client/timeline.py (what the ProfilerHook writes as timeline-<step>.json).
 *
 * RunMetadata (config.proto / step_stats.proto), fields written:
 *   step_stats = 1        StepStats { dev_stats = 1 DeviceStepStats {
 *                           device = 1 "/job:localhost/replica:0/task:0/device:CPU:0",
 *                           node_stats = 2 NodeExecStats {
 *                             node_name = 1, all_start_micros = 2, op_start_rel_micros = 3,
 *                             op_end_rel_micros = 4, all_end_rel_micros = 5,
 *                             memory = 6 AllocatorMemoryUsed {allocator_name = 1 "cpu",
 *                                        total_bytes = 2, peak_bytes = 3} (when bytes > 0),
 *                             timeline_label = 8 "name = Op()", scheduled_micros = 9,
 *                             thread_id = 10 } } }
 *   partition_graphs = 3  one empty GraphDef per partition graph counted
 * proto3 rules: zero scalars are omitted. step_stats is omitted when nothing was traced.
 * Only vigil's public accessors (vigil/session.h) are read; the protobuf writer is the
 * io layer's.
 */
#include "io/io.h"
#include "vigil/summary.h"
#include <inttypes.h>
#include <stdio.h>

#define CPU_DEVICE "/job:localhost/replica:0/task:0/device:CPU:0"

/* Hands b's bytes to the caller (never NULL, even when empty). */
static vg_code take_bytes(vg__pb_buf *b, void **bytes, size_t *len, const char *what, vg_status *st) {
    if (!b->data) vg__pb_reserve(b, 1);
    vg_code c = vg__pb_buf_status(b, what, st);
    if (c) {
        vg__pb_free(b);
        return c;
    }
    *bytes = b->data;
    if (len) *len = b->len;
    return VG_OK;
}

static void put_node_stats(vg__pb_buf *ns, const vg_node_stats *s) {
    int64_t dur = s->end_us > s->start_us ? s->end_us - s->start_us : 0;
    const char *name = s->node_name ? s->node_name : "";
    const char *type = s->op_type ? s->op_type : "";
    vg__pb_reset(ns);
    if (*name) vg__pb_put_string(ns, 1, name);
    if (s->start_us) vg__pb_put_int64(ns, 2, s->start_us);
    /* op_start_rel_micros (3) is 0: vigil does not separate scheduling from compute */
    if (dur) vg__pb_put_int64(ns, 4, dur);
    if (dur) vg__pb_put_int64(ns, 5, dur);
    if (s->bytes_allocated > 0) {
        vg__pb_buf mem;
        vg__pb_init(&mem);
        vg__pb_put_string(&mem, 1, "cpu");
        vg__pb_put_int64(&mem, 2, s->bytes_allocated);
        vg__pb_put_int64(&mem, 3, s->bytes_allocated);
        vg__pb_put_message(ns, 6, &mem);
        vg__pb_free(&mem);
    }
    /* step_stats_collector's label is "name = Op(input, ...)"; the inputs are not part
     * of vg_node_stats, so they are left out. */
    size_t ll = strlen(name) + 3 + strlen(type) + 2;
    vg__pb_put_tag(ns, 8, VG__PB_LEN);
    vg__pb_put_varint(ns, ll);
    vg__pb_put_raw(ns, name, strlen(name));
    vg__pb_put_raw(ns, " = ", 3);
    vg__pb_put_raw(ns, type, strlen(type));
    vg__pb_put_raw(ns, "()", 2);
    if (s->start_us) vg__pb_put_int64(ns, 9, s->start_us);
    if (s->thread_id) vg__pb_put_uint64(ns, 10, (uint32_t)s->thread_id);
}

vg_code vg_run_metadata_serialize(const vg_run_metadata *md, void **bytes, size_t *len, vg_status *st) {
    if (!md || !bytes) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_run_metadata_serialize: NULL argument");
    *bytes = NULL;
    if (len) *len = 0;
    vg__pb_buf out, dev, ns;
    vg__pb_init(&out);
    vg__pb_init(&dev);
    vg__pb_init(&ns);
    int n = vg_run_metadata_num_nodes(md);
    if (n > 0) {
        vg__pb_put_string(&dev, 1, CPU_DEVICE);
        for (int i = 0; i < n; i++) {
            const vg_node_stats *s = vg_run_metadata_node(md, i);
            if (!s) continue;
            put_node_stats(&ns, s);
            vg__pb_put_message(&dev, 2, &ns);
        }
        /* step_stats { dev_stats { ... } }: two nested length prefixes */
        size_t dl = 1 + (size_t)vg__pb_varint_size(dev.len) + dev.len;
        vg__pb_put_tag(&out, 1, VG__PB_LEN);
        vg__pb_put_varint(&out, dl);
        vg__pb_put_message(&out, 1, &dev);
    }
    int np = vg_run_metadata_num_partition_graphs(md);
    for (int i = 0; i < np; i++) {
        vg__pb_put_tag(&out, 3, VG__PB_LEN);
        vg__pb_put_varint(&out, 0);
    }
    if (ns.oom || dev.oom) out.oom = true;
    vg__pb_free(&ns);
    vg__pb_free(&dev);
    return take_bytes(&out, bytes, len, "run metadata", st);
}

/* ------------------------------------------------------------------------ */
/* Chrome trace JSON (timeline.py's _ChromeTraceFormatter, compact separators). */

static void jraw(vg__pb_buf *b, const char *s) { vg__pb_put_raw(b, s, strlen(s)); }

static void jstr(vg__pb_buf *b, const char *s) {
    vg__pb_put_raw(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            vg__pb_put_raw(b, esc, 2);
        } else if (*p < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            vg__pb_put_raw(b, esc, 6);
        } else {
            vg__pb_put_raw(b, p, 1);
        }
    }
    vg__pb_put_raw(b, "\"", 1);
}

static void jint(vg__pb_buf *b, int64_t v) {
    char num[32];
    snprintf(num, sizeof num, "%" PRId64, v);
    jraw(b, num);
}

/* raw text (a key) followed by an integer / a string value */
static void jraw_int(vg__pb_buf *b, const char *raw, int64_t v) {
    jraw(b, raw);
    jint(b, v);
}

static void jraw_str(vg__pb_buf *b, const char *raw, const char *v) {
    jraw(b, raw);
    jstr(b, v);
}

/* {"name":"process_name","ph":"M","pid":P,"args":{"name":N}} (tid >= 0: thread_name). */
static void emit_meta(vg__pb_buf *b, bool *first, int pid, int tid, const char *name, const char *suffix) {
    jraw(b, *first ? "" : ",");
    *first = false;
    jraw_int(b,
             tid < 0 ? "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":"
                     : "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":",
             pid);
    if (tid >= 0) jraw_int(b, ",\"tid\":", tid);
    jraw(b, ",\"args\":{\"name\":");
    if (suffix) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s%s", name, suffix);
        jstr(b, buf);
    } else {
        jstr(b, name);
    }
    jraw(b, "}}");
}

static void emit_op(vg__pb_buf *b, const vg_node_stats *s, int pid) {
    int64_t dur = s->end_us > s->start_us ? s->end_us - s->start_us : 0;
    jraw_str(b, ",{\"ph\":\"X\",\"cat\":\"Op\",\"name\":", s->op_type);
    jraw_int(b, ",\"pid\":", pid);
    jraw_int(b, ",\"tid\":", s->thread_id);
    jraw_int(b, ",\"ts\":", s->start_us);
    jraw_int(b, ",\"dur\":", dur);
    jraw_str(b, ",\"args\":{\"name\":", s->node_name);
    jraw_str(b, ",\"op\":", s->op_type);
    jraw(b, "}}");
}

/* show_memory: a "Memory" counter on the Allocators process with the bytes each op's
 * outputs took, at the op's end (vigil records no tensor lifetimes to add them up). */
static void emit_memory(vg__pb_buf *b, const vg_node_stats *s, int pid) {
    jraw_int(b, ",{\"ph\":\"C\",\"cat\":\"Memory\",\"name\":\"cpu\",\"pid\":", pid);
    jraw_int(b, ",\"ts\":", s->end_us > s->start_us ? s->end_us : s->start_us);
    jraw_int(b, ",\"args\":{\"cpu\":", s->bytes_allocated);
    jraw(b, "}}");
}

/* Distinct thread ids in order of first appearance (bounded; the rest share no name). */
static int collect_tids(const vg_run_metadata *md, int *tids, int max) {
    int nt = 0, n = vg_run_metadata_num_nodes(md);
    for (int i = 0; i < n; i++) {
        const vg_node_stats *s = vg_run_metadata_node(md, i);
        int k = 0;
        while (k < nt && tids[k] != s->thread_id) k++;
        if (k == nt && nt < max) tids[nt++] = s->thread_id;
    }
    return nt;
}

vg_code vg_run_metadata_to_chrome_trace(const vg_run_metadata *md, bool show_memory, char **json, size_t *len,
                                        vg_status *st) {
    if (!md || !json) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_run_metadata_to_chrome_trace: NULL argument");
    *json = NULL;
    if (len) *len = 0;
    /* pids as timeline.py allocates them: Allocators, then per device Compute, Tensors */
    enum { PID_ALLOCATORS = 0, PID_COMPUTE = 1, PID_TENSORS = 2 };
    vg__pb_buf b;
    vg__pb_init(&b);
    bool first = true;
    jraw(&b, "{\"traceEvents\":[");
    emit_meta(&b, &first, PID_ALLOCATORS, -1, "Allocators", NULL);
    emit_meta(&b, &first, PID_COMPUTE, -1, CPU_DEVICE, " Compute");
    emit_meta(&b, &first, PID_TENSORS, -1, CPU_DEVICE, " Tensors");
    int tids[256];
    int nt = collect_tids(md, tids, 256);
    for (int i = 0; i < nt; i++) {
        char name[32];
        snprintf(name, sizeof name, "thread %d", tids[i]);
        emit_meta(&b, &first, PID_COMPUTE, tids[i], name, NULL);
    }
    int n = vg_run_metadata_num_nodes(md);
    for (int i = 0; i < n; i++) {
        const vg_node_stats *s = vg_run_metadata_node(md, i);
        emit_op(&b, s, PID_COMPUTE);
        if (show_memory && s->bytes_allocated > 0) emit_memory(&b, s, PID_ALLOCATORS);
    }
    jraw(&b, "]}");
    vg__pb_put_raw(&b, "", 1); /* NUL terminator, not counted */
    void *bytes;
    size_t blen;
    vg_code c = take_bytes(&b, &bytes, &blen, "chrome trace", st);
    if (c) return c;
    *json = bytes;
    if (len) *len = blen - 1;
    return VG_OK;
}
