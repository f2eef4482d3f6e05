/* test_graphdef.c - GraphDef / MetaGraphDef export: byte comparison with TF-written
 * GraphDefs (the multiplication graph, the Saver nodes of a TF1 checkpoint graph),
 * tensor encodings, text format against hand-written expectations, and a MetaGraphDef
 * parsed back (saver_def, collections, VariableDefs, QueueRunnerDefs). */
#include "io/io.h"
#include "test_util.h"
#include "pb_test_util.h"
#include "vigil/graphdef.h"
#include "vigil/ops.h"
#include "vigil/saver.h"
#include "vigil/variables.h"
#include <unistd.h>

#define TD VG_TESTDATA

/* ------------------------------------------------------------------------ */
/* a tiny GraphDef decoder (only what the tests compare) */

typedef struct tattr {
    char key[128];
    const uint8_t *val; /* serialized AttrValue */
    size_t len;
} tattr;

typedef struct tnode {
    char name[128], op[64], device[64];
    char inputs[8][128];
    int ninputs;
    tattr attrs[16];
    int nattrs;
} tnode;

/* A protobuf map entry (the message in field f): its key (field 1, a string, into key)
 * and its value (field 2, bytes left in place: *val, *len). */
static void parse_map_entry(const vg__pb_field *f, char *key, size_t keylen, const uint8_t **val, size_t *len) {
    vg__pb_reader er;
    vg__pb_field ef;
    vg__pb_reader_init(&er, f->data, f->len);
    while (vg__pb_next(&er, &ef, NULL) == VG_OK) {
        if (ef.number == 1) copy_str(key, keylen, &ef);
        else if (ef.number == 2) {
            *val = ef.data;
            *len = ef.len;
        }
    }
}

static bool parse_node(const uint8_t *p, size_t n, tnode *nd) {
    vg__pb_reader r;
    vg__pb_field f;
    memset(nd, 0, sizeof *nd);
    vg__pb_reader_init(&r, p, n);
    while (vg__pb_next(&r, &f, NULL) == VG_OK) {
        if (f.number == 1) copy_str(nd->name, sizeof nd->name, &f);
        else if (f.number == 2) copy_str(nd->op, sizeof nd->op, &f);
        else if (f.number == 3 && nd->ninputs < 8) copy_str(nd->inputs[nd->ninputs++], 128, &f);
        else if (f.number == 4) copy_str(nd->device, sizeof nd->device, &f);
        else if (f.number == 5 && nd->nattrs < 16) {
            tattr *a = &nd->attrs[nd->nattrs++];
            parse_map_entry(&f, a->key, sizeof a->key, &a->val, &a->len);
        }
    }
    return true;
}

/* All nodes of a GraphDef (at most cap). Returns the count; *producer gets versions.producer. */
static int parse_graph(const uint8_t *p, size_t n, tnode *nodes, int cap, int64_t *producer) {
    vg__pb_reader r, vr;
    vg__pb_field f, vf;
    int k = 0;
    *producer = -1;
    vg__pb_reader_init(&r, p, n);
    while (vg__pb_next(&r, &f, NULL) == VG_OK) {
        if (f.number == 1 && k < cap) parse_node(f.data, f.len, &nodes[k++]);
        if (f.number == 4) {
            vg__pb_reader_init(&vr, f.data, f.len);
            while (vg__pb_next(&vr, &vf, NULL) == VG_OK)
                if (vf.number == 1) *producer = (int64_t)vf.u;
        }
    }
    return k;
}

static const tnode *find_node(const tnode *nodes, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(nodes[i].name, name) == 0) return &nodes[i];
    return NULL;
}

static const tattr *find_attr(const tnode *nd, const char *key) {
    for (int i = 0; i < nd->nattrs; i++)
        if (strcmp(nd->attrs[i].key, key) == 0) return &nd->attrs[i];
    return NULL;
}

static uint8_t *slurp(const char *path, size_t *n) {
    uint8_t *d;
    if (vg__io_read_file(path, &d, n, NULL)) return NULL;
    return d;
}

/* ------------------------------------------------------------------------ */

/* a, b: Placeholder float (empty shape); c = Mul(a, b): TF 0.x wrote this GraphDef.
 * Every byte matches except versions.producer (9 there, 27 here). */
static void test_graphdef__multiplication_matches_tf(void) {
    vg_graph *g = vg_graph_new();
    vg_output a = vg_placeholder(g, VG_FLOAT, NULL, 0, "a");
    vg_output b = vg_placeholder(g, VG_FLOAT, NULL, 0, "b");
    vg_mul(g, a, b, "c");
    vg_status st;
    void *bytes;
    size_t len;
    CHECK_OK(vg_graph_to_graphdef(g, &bytes, &len, &st), &st);
    size_t tn;
    uint8_t *tf = slurp(TD "/graphs/rust_multiplication_tf0.pb", &tn);
    CHECK(tf != NULL);
    if (tf) {
        static const uint8_t ours_versions[] = {0x22, 0x02, 0x08, 0x1b};
        CHECK_EQ_INT(len, tn);
        CHECK(len == tn && memcmp(bytes, tf, tn - 4) == 0);
        CHECK(len == tn && memcmp((uint8_t *)bytes + tn - 4, ours_versions, 4) == 0);
        CHECK(memcmp(tf + tn - 4, "\x22\x02\x08\x09", 4) == 0);
    }
    vg_free(bytes);
    vg__free(tf);
    vg_graph_free(g);
}

/* The saver's nodes equal the ones TF 1.x wrote for a Saver over variables b and w
 * (rust_regression_checkpoint_tf1.pb): op, inputs, device and every attr's bytes. */
static void test_graphdef__saver_nodes_match_tf(void) {
    vg_graph *g = vg_graph_new();
    int64_t one = 1;
    vg_get_variable(g, "w", VG_FLOAT, &one, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
    vg_get_variable(g, "b", VG_FLOAT, &one, 1, vg_init_zeros(), VG_VAR_TRAINABLE);
    vg_status st;
    vg_saver *sv = vg_saver_new(g, NULL, &st);
    CHECK(sv != NULL);
    void *bytes = NULL;
    size_t len = 0, tn = 0;
    CHECK_OK(vg_graph_to_graphdef(g, &bytes, &len, &st), &st);
    uint8_t *tf = slurp(TD "/graphs/rust_regression_checkpoint_tf1.pb", &tn);
    static tnode ours[256], theirs[256];
    int64_t p1, p2;
    int no = parse_graph(bytes, len, ours, 256, &p1), nt = tf ? parse_graph(tf, tn, theirs, 256, &p2) : 0;
    CHECK_EQ_INT(p1, 27);
    int compared = 0;
    for (int i = 0; i < nt; i++) {
        const tnode *t = &theirs[i];
        if (strncmp(t->name, "save/", 5) != 0) continue;
        const tnode *o = find_node(ours, no, t->name);
        CHECK(o != NULL);
        if (!o) {
            fprintf(stderr, "  missing node %s\n", t->name);
            continue;
        }
        compared++;
        CHECK(strcmp(o->op, t->op) == 0);
        CHECK(strcmp(o->device, t->device) == 0);
        CHECK_EQ_INT(o->ninputs, t->ninputs);
        for (int k = 0; k < t->ninputs && k < o->ninputs; k++) CHECK(strcmp(o->inputs[k], t->inputs[k]) == 0);
        CHECK_EQ_INT(o->nattrs, t->nattrs);
        for (int k = 0; k < t->nattrs; k++) {
            const tattr *oa = find_attr(o, t->attrs[k].key);
            bool same = oa && oa->len == t->attrs[k].len && memcmp(oa->val, t->attrs[k].val, oa->len) == 0;
            if (!same) fprintf(stderr, "  %s: attr %s differs\n", t->name, t->attrs[k].key);
            CHECK(same);
        }
    }
    CHECK_EQ_INT(compared, 11);
    /* TF's maps are unordered; ours are sorted by key */
    const tnode *assign = find_node(ours, no, "save/Assign_1");
    CHECK(assign && assign->nattrs == 4 && strcmp(assign->attrs[0].key, "T") == 0 &&
          strcmp(assign->attrs[1].key, "_class") == 0 && strcmp(assign->attrs[2].key, "use_locking") == 0 &&
          strcmp(assign->attrs[3].key, "validate_shape") == 0);
    vg_free(bytes);
    vg__free(tf);
    vg_saver_free(sv);
    vg_graph_free(g);
}

/* Serialized AttrValue of Const "value" for a given tensor. */
static bool const_value_bytes(vg_tensor *t, uint8_t *out, size_t cap, size_t *n) {
    vg_graph *g = vg_graph_new();
    vg_const(g, t, "k");
    vg_tensor_free(t);
    void *bytes;
    size_t len;
    bool ok = false;
    if (vg_graph_to_graphdef(g, &bytes, &len, NULL) == VG_OK) {
        static tnode nodes[4];
        int64_t p;
        int k = parse_graph(bytes, len, nodes, 4, &p);
        const tattr *a = k == 1 ? find_attr(&nodes[0], "value") : NULL;
        if (a && a->len <= cap) {
            memcpy(out, a->val, a->len);
            *n = a->len;
            ok = true;
        }
        vg_free(bytes);
    }
    vg_graph_free(g);
    return ok;
}

#define CHECK_BYTES(t, ...) do { static const uint8_t _e[] = {__VA_ARGS__}; uint8_t _b[256]; size_t _n = 0; \
    bool _ok = const_value_bytes((t), _b, sizeof _b, &_n); CHECK(_ok); CHECK_EQ_INT(_n, sizeof _e); \
    if (_ok && _n == sizeof _e && memcmp(_b, _e, _n)) { fprintf(stderr, "%s:%d: bytes differ:", __FILE__, __LINE__); \
    for (size_t _i = 0; _i < _n; _i++) { fprintf(stderr, " %02x", _b[_i]); } fprintf(stderr, "\n"); \
    vg_test_failures++; } } while (0)

/* make_tensor_proto's choices: typed field for one element, tensor_content for more,
 * bool_val / string_val lists, one value for an all-equal tensor. */
static void test_graphdef__tensor_encodings(void) {
    vg_status st;
    /* AttrValue{tensor=8 {dtype=1, tensor_shape=2, ...}} */
    CHECK_BYTES(vg_tensor_new_scalar_f32(1.0f, &st), 0x42, 0x0a, 0x08, 0x01, 0x12, 0x00, 0x2a, 0x04, 0x00, 0x00,
                0x80, 0x3f);
    CHECK_BYTES(vg_tensor_new_scalar_i32(-1, &st), 0x42, 0x10, 0x08, 0x03, 0x12, 0x00, 0x3a, 0x0a, 0xff, 0xff, 0xff,
                0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);
    CHECK_BYTES(vg_tensor_new_scalar_i64(300, &st), 0x42, 0x08, 0x08, 0x09, 0x12, 0x00, 0x52, 0x02, 0xac, 0x02);
    CHECK_BYTES(vg_tensor_new_scalar_bool(true, &st), 0x42, 0x07, 0x08, 0x0a, 0x12, 0x00, 0x5a, 0x01, 0x01);
    CHECK_BYTES(vg_tensor_new_string_scalar("hi", 2, &st), 0x42, 0x08, 0x08, 0x07, 0x12, 0x00, 0x42, 0x02, 'h',
                'i');
    int64_t d2[2] = {1, 2};
    float f2[2] = {1.0f, 2.0f};
    CHECK_BYTES(vg_tensor_new_copy(VG_FLOAT, d2, 2, f2, sizeof f2, &st), 0x42, 0x16, 0x08, 0x01, 0x12, 0x08, 0x12,
                0x02, 0x08, 0x01, 0x12, 0x02, 0x08, 0x02, 0x22, 0x08, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00,
                0x40);
    /* all equal: one float_val, full shape [3] */
    int64_t d3 = 3;
    float z3[3] = {0, 0, 0};
    CHECK_BYTES(vg_tensor_new_copy(VG_FLOAT, &d3, 1, z3, sizeof z3, &st), 0x42, 0x0e, 0x08, 0x01, 0x12, 0x04, 0x12,
                0x02, 0x08, 0x03, 0x2a, 0x04, 0x00, 0x00, 0x00, 0x00);
    /* bool vector: bool_val, never tensor_content */
    vg_tensor *bt = vg_tensor_new(VG_BOOL, &d3, 1, &st);
    ((uint8_t *)vg_tensor_data(bt))[0] = 1;
    ((uint8_t *)vg_tensor_data(bt))[1] = 0;
    ((uint8_t *)vg_tensor_data(bt))[2] = 1;
    CHECK_BYTES(bt, 0x42, 0x0d, 0x08, 0x0a, 0x12, 0x04, 0x12, 0x02, 0x08, 0x03, 0x5a, 0x03, 0x01, 0x00, 0x01);
    /* empty tensor: dtype and shape only */
    int64_t d0 = 0;
    CHECK_BYTES(vg_tensor_new(VG_DOUBLE, &d0, 1, &st), 0x42, 0x06, 0x08, 0x02, 0x12, 0x02, 0x12, 0x00);
}

static void test_graphdef__text_format(void) {
    vg_graph *g = vg_graph_new();
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 3}, 2, "x");
    vg_output c = vg_const_f32(g, 0.1f, "c");
    vg_op *noop = vg_no_op(g, "init");
    vg_graph_push_control_deps(g, &noop, 1);
    vg_mul(g, x, c, "y");
    vg_graph_pop_control_deps(g);
    const char *strs[2] = {"a\"b", "\n"};
    int64_t two = 2;
    vg_tensor *st2 = vg_tensor_new(VG_STRING, &two, 1, NULL);
    vg_tensor_set_string(st2, 0, strs[0], 3, NULL);
    vg_tensor_set_string(st2, 1, strs[1], 1, NULL);
    vg_const(g, st2, "s");
    vg_tensor_free(st2);
    vg_placeholder(g, VG_INT64, NULL, -1, "u");
    vg_status st;
    char *text;
    size_t len;
    CHECK_OK(vg_graph_to_graphdef_text(g, &text, &len, &st), &st);
    const char *expect =
        "node {\n  name: \"x\"\n  op: \"Placeholder\"\n"
        "  attr {\n    key: \"dtype\"\n    value {\n      type: DT_FLOAT\n    }\n  }\n"
        "  attr {\n    key: \"shape\"\n    value {\n      shape {\n        dim {\n          size: -1\n        }\n"
        "        dim {\n          size: 3\n        }\n      }\n    }\n  }\n}\n"
        "node {\n  name: \"c\"\n  op: \"Const\"\n"
        "  attr {\n    key: \"dtype\"\n    value {\n      type: DT_FLOAT\n    }\n  }\n"
        "  attr {\n    key: \"value\"\n    value {\n      tensor {\n        dtype: DT_FLOAT\n"
        "        tensor_shape {\n        }\n        float_val: 0.1\n      }\n    }\n  }\n}\n"
        "node {\n  name: \"init\"\n  op: \"NoOp\"\n}\n"
        "node {\n  name: \"y\"\n  op: \"Mul\"\n  input: \"x\"\n  input: \"c\"\n  input: \"^init\"\n"
        "  attr {\n    key: \"T\"\n    value {\n      type: DT_FLOAT\n    }\n  }\n}\n"
        "node {\n  name: \"s\"\n  op: \"Const\"\n"
        "  attr {\n    key: \"dtype\"\n    value {\n      type: DT_STRING\n    }\n  }\n"
        "  attr {\n    key: \"value\"\n    value {\n      tensor {\n        dtype: DT_STRING\n"
        "        tensor_shape {\n          dim {\n            size: 2\n          }\n        }\n"
        "        string_val: \"a\\\"b\"\n        string_val: \"\\n\"\n      }\n    }\n  }\n}\n"
        "node {\n  name: \"u\"\n  op: \"Placeholder\"\n"
        "  attr {\n    key: \"dtype\"\n    value {\n      type: DT_INT64\n    }\n  }\n"
        "  attr {\n    key: \"shape\"\n    value {\n      shape {\n        unknown_rank: true\n      }\n    }\n  }\n}\n"
        "versions {\n  producer: 27\n}\n";
    CHECK(text && strcmp(text, expect) == 0);
    CHECK_EQ_INT(len, strlen(expect));
    if (text && strcmp(text, expect)) fprintf(stderr, "---- got:\n%s---- expected:\n%s", text, expect);
    vg_free(text);
    vg_graph_free(g);
}

/* Float printing and escapes as protobuf's C++ TextFormat. */
static void test_graphdef__text_values(void) {
    vg_graph *g = vg_graph_new();
    vg_const_f32(g, 1.0f, "one");
    vg_const_f32(g, 1.0f / 3.0f, "third");
    vg_const_f64(g, 0.1, "d");
    vg_const_bool(g, false, "f");
    vg_op_builder *b = vg_op_builder_new(g, "NoOp", "attrs");
    vg_op_builder_set_attr_float(b, "f", 1e-7f);
    vg_op_builder_set_attr_int_list(b, "il", (int64_t[]){1, -2}, 2);
    vg_op_builder_set_attr_string(b, "s", "\x01\xff'", 3);
    vg_op_builder_set_attr_bool(b, "t", true);
    vg_op_builder_finish(b);
    char *text;
    size_t len;
    vg_status st;
    CHECK_OK(vg_graph_to_graphdef_text(g, &text, &len, &st), &st);
    if (text) {
        CHECK_STR_CONTAINS(text, "        float_val: 1\n");
        CHECK_STR_CONTAINS(text, "        float_val: 0.333333343\n");
        CHECK_STR_CONTAINS(text, "        double_val: 0.1\n");
        CHECK_STR_CONTAINS(text, "        bool_val: false\n");
        CHECK_STR_CONTAINS(text, "      f: 1e-07\n");
        CHECK_STR_CONTAINS(text, "      list {\n        i: 1\n        i: -2\n      }\n");
        CHECK_STR_CONTAINS(text, "      s: \"\\001\\377\\'\"\n");
        CHECK_STR_CONTAINS(text, "      b: true\n");
    }
    vg_free(text);
    vg_graph_free(g);
}

/* ------------------------------------------------------------------------ */
/* MetaGraphDef */

typedef struct meta_info {
    char keys[16][64];
    int nkeys;
    const uint8_t *coll[16];
    size_t coll_len[16];
    const uint8_t *graph, *saver, *info;
    size_t graph_len, saver_len, info_len;
} meta_info;

static void parse_meta(const uint8_t *p, size_t n, meta_info *m) {
    vg__pb_reader r;
    vg__pb_field f;
    memset(m, 0, sizeof *m);
    vg__pb_reader_init(&r, p, n);
    while (vg__pb_next(&r, &f, NULL) == VG_OK) {
        if (f.number == 1) { m->info = f.data; m->info_len = f.len; }
        if (f.number == 2) { m->graph = f.data; m->graph_len = f.len; }
        if (f.number == 3) { m->saver = f.data; m->saver_len = f.len; }
        if (f.number == 4 && m->nkeys < 16) {
            parse_map_entry(&f, m->keys[m->nkeys], 64, &m->coll[m->nkeys], &m->coll_len[m->nkeys]);
            m->nkeys++;
        }
    }
}

/* The strings of field `field` of a message, joined with ',' into out. */
static void strings_of(const uint8_t *p, size_t n, int field, char *out, size_t cap) {
    vg__pb_reader r;
    vg__pb_field f;
    out[0] = 0;
    vg__pb_reader_init(&r, p, n);
    while (vg__pb_next(&r, &f, NULL) == VG_OK)
        if (f.number == field && f.wiretype == VG__PB_LEN) {
            size_t k = strlen(out);
            snprintf(out + k, cap - k, "%s%.*s", k ? "," : "", (int)f.len, (const char *)f.data);
        }
}

/* The payload of the first field `field` (a sub-message). */
static const uint8_t *sub_of(const uint8_t *p, size_t n, int field, size_t *len) {
    vg__pb_reader r;
    vg__pb_field f;
    vg__pb_reader_init(&r, p, n);
    while (vg__pb_next(&r, &f, NULL) == VG_OK)
        if (f.number == field && f.wiretype == VG__PB_LEN) {
            *len = f.len;
            return f.data;
        }
    *len = 0;
    return NULL;
}

static int64_t varint_of(const uint8_t *p, size_t n, int field) {
    vg__pb_reader r;
    vg__pb_field f;
    vg__pb_reader_init(&r, p, n);
    while (vg__pb_next(&r, &f, NULL) == VG_OK)
        if (f.number == field && f.wiretype == VG__PB_VARINT) return (int64_t)f.u;
    return -1;
}

static void test_graphdef__meta_graph_round_trip(void) {
    vg_graph *g = vg_graph_new();
    int64_t dims[2] = {2, 3};
    vg_variable w = vg_get_variable(g, "w", VG_FLOAT, dims, 2, vg_init_zeros(), VG_VAR_TRAINABLE);
    vg_output gs = vg_get_or_create_global_step(g);
    vg_output x = vg_placeholder(g, VG_FLOAT, (int64_t[]){-1, 2}, 2, "x");
    vg_output y = vg_matmul(g, x, w.read, false, false, "y");
    vg_output loss = vg_reduce_sum(g, y, NULL, -1, false, "loss");
    vg_graph_add_to_collection(g, VG_LOSSES, loss);
    vg_op *train = vg_no_op(g, "train");
    vg_graph_add_to_collection(g, VG_TRAIN_OP, vg_out(train, 0));
    vg_graph_add_to_collection(g, "empty_after_clear", loss);
    vg_graph_clear_collection(g, "empty_after_clear");
    vg_status st;
    vg_saver *sv = vg_saver_new(g, NULL, &st);
    CHECK(sv != NULL);
    vg_graph_add_to_collection(g, VG_SAVERS, vg_out(vg_saver_restore_op(sv), 0));
    CHECK_OK(vg_graph_status(g, &st), &st);
    vg_saver_def sd = {"save/Const:0", "save/control_dependency:0", "save/restore_all", 5, false, 10000.0f};
    void *bytes;
    size_t len;
    CHECK_OK(vg_graph_to_meta_graph(g, &sd, &bytes, &len, &st), &st);
    meta_info m;
    parse_meta(bytes, len, &m);
    /* meta_info_def */
    char buf[1024];
    strings_of(m.info, m.info_len, 5, buf, sizeof buf);
    CHECK(strcmp(buf, "1.15.0") == 0);
    /* saver_def */
    strings_of(m.saver, m.saver_len, 1, buf, sizeof buf);
    CHECK(strcmp(buf, "save/Const:0") == 0);
    strings_of(m.saver, m.saver_len, 2, buf, sizeof buf);
    CHECK(strcmp(buf, "save/control_dependency:0") == 0);
    strings_of(m.saver, m.saver_len, 3, buf, sizeof buf);
    CHECK(strcmp(buf, "save/restore_all") == 0);
    CHECK_EQ_INT(varint_of(m.saver, m.saver_len, 4), 5);
    CHECK_EQ_INT(varint_of(m.saver, m.saver_len, 7), 2);
    /* graph_def: every node, with _output_shapes */
    static tnode nodes[128];
    int64_t producer;
    int nn = parse_graph(m.graph, m.graph_len, nodes, 128, &producer);
    CHECK_EQ_INT(nn, vg_graph_num_ops(g));
    CHECK_EQ_INT(producer, 27);
    const tnode *wn = find_node(nodes, nn, "w");
    CHECK(wn && find_attr(wn, "_output_shapes"));
    const tnode *ra = find_node(nodes, nn, "save/restore_all");
    const tattr *os = ra ? find_attr(ra, "_output_shapes") : NULL;
    CHECK(os && os->len == 2 && os->val[0] == 0x0a && os->val[1] == 0x00); /* list {} */
    /* collections in key order, empty ones skipped */
    const char *want[] = {"global_step", "losses", "savers", "train_op", "trainable_variables", "variables"};
    CHECK_EQ_INT(m.nkeys, 6);
    for (int i = 0; i < 6 && i < m.nkeys; i++) CHECK(strcmp(m.keys[i], want[i]) == 0);
    for (int i = 0; i < m.nkeys; i++) {
        size_t n1;
        if (strcmp(m.keys[i], "losses") == 0) {
            const uint8_t *nl = sub_of(m.coll[i], m.coll_len[i], 1, &n1);
            strings_of(nl, n1, 1, buf, sizeof buf);
            CHECK(strcmp(buf, "loss:0") == 0);
        } else if (strcmp(m.keys[i], "train_op") == 0) {
            const uint8_t *nl = sub_of(m.coll[i], m.coll_len[i], 1, &n1);
            strings_of(nl, n1, 1, buf, sizeof buf);
            CHECK(strcmp(buf, "train") == 0);
        } else if (strcmp(m.keys[i], "variables") == 0) {
            const uint8_t *bl = sub_of(m.coll[i], m.coll_len[i], 2, &n1);
            /* two VariableDefs: w, then global_step */
            vg__pb_reader r;
            vg__pb_field f;
            int k = 0;
            vg__pb_reader_init(&r, bl, n1);
            while (vg__pb_next(&r, &f, NULL) == VG_OK) {
                char name[128], init[128], snap[128], initial[128];
                strings_of(f.data, f.len, 1, name, sizeof name);
                strings_of(f.data, f.len, 2, init, sizeof init);
                strings_of(f.data, f.len, 3, snap, sizeof snap);
                strings_of(f.data, f.len, 6, initial, sizeof initial);
                if (k == 0) {
                    CHECK(strcmp(name, "w:0") == 0);
                    CHECK(strcmp(init, "w/Assign") == 0);
                    CHECK(strcmp(snap, "w/read:0") == 0);
                    CHECK(strcmp(initial, "w/Initializer/zeros:0") == 0);
                    CHECK_EQ_INT(varint_of(f.data, f.len, 7), 1);
                } else {
                    CHECK(strcmp(name, "global_step:0") == 0);
                    CHECK(strcmp(init, "global_step/Assign") == 0);
                    CHECK_EQ_INT(varint_of(f.data, f.len, 7), -1); /* not trainable: omitted */
                }
                k++;
            }
            CHECK_EQ_INT(k, 2);
        } else if (strcmp(m.keys[i], "savers") == 0) {
            const uint8_t *bl = sub_of(m.coll[i], m.coll_len[i], 2, &n1);
            size_t n2;
            const uint8_t *sdef = sub_of(bl, n1, 1, &n2);
            strings_of(sdef, n2, 2, buf, sizeof buf);
            CHECK(strcmp(buf, "save/control_dependency:0") == 0);
        }
    }
    (void)gs;
    vg_free(bytes);
    vg_saver_free(sv);
    vg_graph_free(g);
}

/* queue_runners: QueueRunnerDef bytes from the graph's queue runner defs. */
static void test_graphdef__meta_queue_runners(void) {
    vg_graph *g = vg_graph_new();
    vg_op *q = vg_no_op(g, "input_producer"), *e1 = vg_no_op(g, "enq"), *e2 = vg_no_op(g, "enq_1");
    vg_op *cl = vg_no_op(g, "close"), *ca = vg_no_op(g, "cancel");
    vg_op *enq[2] = {e1, e2};
    vg_queue_runner_def def = {q, enq, 2, cl, ca};
    vg_status st;
    CHECK_OK(vg_graph_add_queue_runner(g, &def), &st);
    void *bytes;
    size_t len;
    CHECK_OK(vg_graph_to_meta_graph(g, NULL, &bytes, &len, &st), &st);
    meta_info m;
    parse_meta(bytes, len, &m);
    CHECK(m.saver == NULL);
    CHECK_EQ_INT(m.nkeys, 1);
    if (m.nkeys == 1) {
        CHECK(strcmp(m.keys[0], "queue_runners") == 0);
        size_t n1, n2;
        const uint8_t *bl = sub_of(m.coll[0], m.coll_len[0], 2, &n1);
        const uint8_t *qr = sub_of(bl, n1, 1, &n2);
        char buf[256];
        strings_of(qr, n2, 1, buf, sizeof buf);
        CHECK(strcmp(buf, "input_producer") == 0);
        strings_of(qr, n2, 2, buf, sizeof buf);
        CHECK(strcmp(buf, "enq,enq_1") == 0);
        strings_of(qr, n2, 3, buf, sizeof buf);
        CHECK(strcmp(buf, "close") == 0);
        strings_of(qr, n2, 4, buf, sizeof buf);
        CHECK(strcmp(buf, "cancel") == 0);
        /* queue_closed_exception_types: [OUT_OF_RANGE] packed */
        static const uint8_t tail[] = {0x2a, 0x01, 0x0b};
        CHECK(n2 >= 3 && memcmp(qr + n2 - 3, tail, 3) == 0);
    }
    vg_free(bytes);
    vg_graph_free(g);
}

static void test_graphdef__write_file_atomic(void) {
    char dir[64], path[256];
    CHECK(tu_mkdtemp(dir, sizeof dir, "gd")[0] != 0);
    snprintf(path, sizeof path, "%s/g.pb", dir);
    vg_status st;
    CHECK_OK(vg_write_file_atomic(path, "abc", 3, &st), &st);
    size_t n;
    uint8_t *d = slurp(path, &n);
    CHECK(d && n == 3 && memcmp(d, "abc", 3) == 0);
    vg__free(d);
    snprintf(path, sizeof path, "%s/missing/g.pb", dir);
    CHECK_CODE(vg_write_file_atomic(path, "abc", 3, &st), VG_NOT_FOUND);
    snprintf(path, sizeof path, "%s/g.pb", dir);
    unlink(path);
    rmdir(dir);
}

/* vg_op_builder_copy_attrs: a Conv2D rebuilt under another name with the first one's
 * attrs (int list, string, type, bool) has the same attrs and output shape; an attr
 * the builder already had is replaced; a Const's tensor attr is shared by reference. */
static void test_graphdef__builder_copy_attrs(void) {
    vg_graph *g = vg_graph_new();
    int64_t xd[4] = {1, 5, 5, 1}, fd[4] = {3, 3, 1, 2}, strides[4] = {1, 2, 2, 1};
    vg_output x = vg_placeholder(g, VG_FLOAT, xd, 4, "x");
    vg_output f = vg_const_fill(g, VG_FLOAT, fd, 4, 0.5, "f");
    vg_output c1 = vg_conv2d(g, x, f, strides, "VALID", "c1");
    vg_op_builder *b = vg_op_builder_new(g, "Conv2D", "c2");
    vg_op_builder_add_input(b, x);
    vg_op_builder_add_input(b, f);
    vg_op_builder_set_attr_string(b, "padding", "SAME", 4); /* replaced by the copy */
    vg_op_builder_copy_attrs(b, c1.op);
    vg_op *c2 = vg_op_builder_finish(b);
    CHECK(c2 != NULL);
    if (!c2) { vg_graph_free(g); return; }
    const int64_t *s1, *s2;
    int n1 = 0, n2 = 0;
    CHECK(vg_op_attr_int_list(c1.op, "strides", &s1, &n1) && vg_op_attr_int_list(c2, "strides", &s2, &n2));
    CHECK_EQ_INT(n2, 4);
    for (int i = 0; i < n1 && i < n2; i++) CHECK_EQ_INT(s2[i], s1[i]);
    const char *pad;
    size_t len;
    CHECK(vg_op_attr_string(c2, "padding", &pad, &len) && len == 5 && memcmp(pad, "VALID", 5) == 0);
    vg_dtype t;
    CHECK(vg_op_attr_type_(c2, "T", &t) && t == VG_FLOAT);
    vg_shape sh1 = vg_output_shape(c1), sh2 = vg_output_shape(vg_out(c2, 0));
    CHECK_EQ_INT(sh2.ndims, 4);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(sh2.dims[i], sh1.dims[i]); /* VALID: 1x2x2x2 */
    CHECK_EQ_INT(sh2.dims[1], 2);
    vg_op_builder *cb = vg_op_builder_new(g, "Const", "f2");
    vg_op_builder_copy_attrs(cb, f.op);
    vg_op *f2 = vg_op_builder_finish(cb);
    const vg_tensor *t1 = NULL, *t2 = NULL;
    CHECK(f2 && vg_op_attr_tensor(f.op, "value", &t1) && vg_op_attr_tensor(f2, "value", &t2));
    CHECK(t1 && t2 && vg_tensor_num_elements(t2) == 18 && ((const float *)vg_tensor_data(t2))[17] == 0.5f);
    vg_op_builder_copy_attrs(NULL, f.op); /* no-ops */
    vg_graph_free(g);
}

int main(void) {
    RUN_TEST(test_graphdef__builder_copy_attrs);
    RUN_TEST(test_graphdef__multiplication_matches_tf);
    RUN_TEST(test_graphdef__saver_nodes_match_tf);
    RUN_TEST(test_graphdef__tensor_encodings);
    RUN_TEST(test_graphdef__text_format);
    RUN_TEST(test_graphdef__text_values);
    RUN_TEST(test_graphdef__meta_graph_round_trip);
    RUN_TEST(test_graphdef__meta_queue_runners);
    RUN_TEST(test_graphdef__write_file_atomic);
    TEST_MAIN_END();
}
