/*
 * graphdef_import.c - GraphDef import (vigil/import.h), in the spirit of TF 1.15's
 * ImportGraphDef (tensorflow/core/graph/graph_constructor.cc) and
 * tf.import_graph_def: parse every node first, check op types (all missing ones in one
 * message), resolve inputs (input_map, missing nodes), order the nodes topologically
 * (cycles rejected), then build each op with the generic op builder.
 *
 * Wire format (tf-formats.md; graph.proto, node_def.proto, attr_value.proto,
 * tensor.proto, tensor_shape.proto, versions.proto):
 *   GraphDef  {node = 1 (NodeDef), versions = 4 (VersionDef), version = 3, library = 2}
 *   NodeDef   {name = 1, op = 2, input = 3, device = 4, attr = 5 (map entry key 1, value 2)}
 *   AttrValue {list = 1, s = 2, i = 3, f = 4, b = 5, type = 6, shape = 7, tensor = 8,
 *              placeholder = 9, func = 10}
 *   ListValue {s = 2, i = 3, f = 4, b = 5, type = 6, shape = 7, tensor = 8, func = 9}
 *   TensorProto {dtype = 1, tensor_shape = 2, tensor_content = 4, float_val = 5,
 *              double_val = 6, int_val = 7, string_val = 8, int64_val = 10, bool_val = 11}
 *   TensorShapeProto {dim = 2 {size = 1}, unknown_rank = 3}
 *   VersionDef {producer = 1, min_consumer = 2, bad_consumers = 3}
 * Repeated numeric fields are accepted packed or not, as protobuf parsers do.
 */
#include "graph/graph_impl.h"
#include "graph/fn_hooks.h"
#include "graph/import_internal.h"
#include "graph/pbtxt.h"
#include "io/io.h"
#include "vigil/import.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_MAX_TENSOR_BYTES ((int64_t)1 << 30)

typedef struct rattr {
    const uint8_t *key;
    size_t key_len;
    const uint8_t *val;
    size_t val_len;
} rattr;

typedef struct inode {
    char *name;     /* GraphDef name */
    char *op;       /* op type after legacy mapping */
    char *orig_op;  /* op type as written */
    char *device;
    char **inputs;  /* raw input specs */
    int ninputs, inputs_cap;
    rattr *attrs;
    int nattrs, attrs_cap;
    /* resolution */
    int *in_node;   /* node index of each input, -1 when mapped */
    int pending;
    uint64_t back;  /* bit j: input j is a loop back edge (NextIteration -> Merge), set after building */
    uint64_t fn_check; /* bit j: input j names an output of an inlined body by an index vigil assumed */
    int fn_depth;      /* function-call nesting of an inlined node (0: the GraphDef's own) */
    vg_op *built;
} inode;

typedef struct ctx {
    const char *src;
    inode *nodes;
    int n, cap;
    vg__strmap by_name; /* GraphDef name -> index + 1 */
    bool has_versions;
    int64_t producer, min_consumer;
    int64_t *bad_consumers;
    int nbad, bad_cap;
    vg_status *st;
    const char *omit_scope; /* nodes named "<omit_scope>/..." are skipped (NULL: none) */
    const uint8_t *library; /* GraphDef.library (FunctionDefLibrary), borrowed; NULL: none */
    size_t library_len;
    uint8_t **owned; /* attr bytes made for inlined function calls */
    int nowned, owned_cap;
    vg_graph *g;     /* the graph being built into */
} ctx;

static vg_code oom(ctx *c, const char *what) {
    return vg_status_set(c->st, VG_RESOURCE_EXHAUSTED, "%s: out of memory allocating %s", c->src, what);
}

static void inode_free(inode *nd) {
    vg__free(nd->name);
    vg__free(nd->op);
    vg__free(nd->orig_op);
    vg__free(nd->device);
    for (int j = 0; j < nd->ninputs; j++) vg__free(nd->inputs[j]);
    vg__free(nd->inputs);
    vg__free(nd->attrs);
    vg__free(nd->in_node);
}

static void ctx_free(ctx *c) {
    for (int i = 0; i < c->n; i++) inode_free(&c->nodes[i]);
    vg__free(c->nodes);
    vg__free(c->bad_consumers);
    for (int i = 0; i < c->nowned; i++) vg__free(c->owned[i]);
    vg__free(c->owned);
    vg__strmap_free(&c->by_name);
}

/* A proto string as a NUL-terminated copy; strings with NUL bytes are rejected. */
static vg_code dup_str(ctx *c, const vg__pb_field *f, const char *what, char **out) {
    *out = NULL; /* the caller freed the previous value */
    if (memchr(f->data, 0, f->len))
        return vg_status_set(c->st, VG_INVALID_ARGUMENT, "%s: %s contains a NUL byte", c->src, what);
    *out = vg__strndup((const char *)f->data, f->len);
    if (!*out) return oom(c, what);
    return VG_OK;
}

static vg_code need_len(ctx *c, const vg__pb_field *f, const char *what) {
    if (f->wiretype != VG__PB_LEN)
        return vg_status_set(c->st, VG_DATA_LOSS, "%s: malformed protobuf: %s has wire type %d", c->src, what,
                             f->wiretype);
    return VG_OK;
}

/* A length-delimited string field `field` that replaces *slot (freed): its bytes, no NUL. */
static vg_code replace_str(ctx *c, const vg__pb_field *f, const char *field, const char *what, char **slot) {
    vg_code k = need_len(c, f, field);
    if (k) return k;
    vg__free(*slot);
    return dup_str(c, f, what, slot);
}

static vg_code pb_err(ctx *c, vg_code code, const char *what) {
    if (code == VG_DATA_LOSS) vg_status_prefix(c->st, "%s: %s", c->src, what);
    return code;
}

/* ------------------------------------------------------------------------ */
/* parse phase */

static bool valid_node_name(const char *s) {
    /* TF: [A-Za-z0-9.][A-Za-z0-9_.\-/>]* */
    if (!*s) return false;
    for (const char *p = s; *p; p++) {
        char ch = *p;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.';
        if (p != s) ok = ok || ch == '_' || ch == '-' || ch == '/' || ch == '>';
        if (!ok) return false;
    }
    return true;
}

static vg_code parse_node(ctx *c, const uint8_t *p, size_t n, inode *nd) {
    vg__pb_reader r;
    vg__pb_field f;
    vg__pb_reader_init(&r, p, n);
    vg_code k;
    while ((k = vg__pb_next(&r, &f, c->st)) == VG_OK) {
        switch (f.number) {
        case 1:
            if ((k = replace_str(c, &f, "NodeDef.name", "a node name", &nd->name))) return k;
            break;
        case 2:
            if ((k = replace_str(c, &f, "NodeDef.op", "an op type", &nd->orig_op))) return k;
            break;
        case 3: {
            if ((k = need_len(c, &f, "NodeDef.input"))) return k;
            if (!vg__grow((void **)&nd->inputs, &nd->inputs_cap, nd->ninputs + 1, sizeof(char *)))
                return oom(c, "node inputs");
            if ((k = dup_str(c, &f, "a node input", &nd->inputs[nd->ninputs]))) return k;
            nd->ninputs++;
            break;
        }
        case 4:
            if ((k = replace_str(c, &f, "NodeDef.device", "a device", &nd->device))) return k;
            break;
        case 5: {
            if ((k = need_len(c, &f, "NodeDef.attr"))) return k;
            rattr a = {(const uint8_t *)"", 0, NULL, 0};
            vg__pb_reader er;
            vg__pb_field ef;
            vg__pb_reader_init(&er, f.data, f.len);
            while ((k = vg__pb_next(&er, &ef, c->st)) == VG_OK) {
                if (ef.number == 1 && ef.wiretype == VG__PB_LEN) {
                    a.key = ef.data;
                    a.key_len = ef.len;
                } else if (ef.number == 2 && ef.wiretype == VG__PB_LEN) {
                    a.val = ef.data;
                    a.val_len = ef.len;
                }
            }
            if (k != VG_OUT_OF_RANGE) return pb_err(c, k, "NodeDef.attr");
            /* a later entry with the same key replaces the earlier (map semantics) */
            int j = 0;
            for (; j < nd->nattrs; j++)
                if (nd->attrs[j].key_len == a.key_len && memcmp(nd->attrs[j].key, a.key, a.key_len) == 0) break;
            if (j == nd->nattrs) {
                if (!vg__grow((void **)&nd->attrs, &nd->attrs_cap, nd->nattrs + 1, sizeof(rattr)))
                    return oom(c, "node attrs");
                nd->nattrs++;
            }
            nd->attrs[j] = a;
            break;
        }
        default: break;
        }
    }
    if (k != VG_OUT_OF_RANGE) return pb_err(c, k, "NodeDef");
    if (!nd->name) return vg_status_set(c->st, VG_INVALID_ARGUMENT, "%s: a node has no name", c->src);
    if (!valid_node_name(nd->name))
        return vg_status_set(c->st, VG_INVALID_ARGUMENT, "%s: node name '%s' contains invalid characters", c->src,
                             nd->name);
    if (!nd->orig_op || !*nd->orig_op)
        return vg_status_set(c->st, VG_INVALID_ARGUMENT, "%s: node '%s' has no op type", c->src, nd->name);
    return VG_OK;
}

static vg_code parse_versions(ctx *c, const uint8_t *p, size_t n) {
    vg__pb_reader r;
    vg__pb_field f;
    vg__pb_reader_init(&r, p, n);
    vg_code k;
    c->has_versions = true;
    while ((k = vg__pb_next(&r, &f, c->st)) == VG_OK) {
        if (f.number == 1 && f.wiretype == VG__PB_VARINT) c->producer = (int32_t)f.u;
        else if (f.number == 2 && f.wiretype == VG__PB_VARINT) c->min_consumer = (int32_t)f.u;
        else if (f.number == 3) {
            bool packed = f.wiretype == VG__PB_LEN;
            if (packed && f.len == 0) continue; /* an empty packed list */
            const uint8_t *q = packed ? f.data : NULL, *e = packed ? f.data + f.len : NULL;
            uint64_t v = f.u;
            do {
                if (packed && !vg__pb_get_varint(&q, e, &v))
                    return vg_status_set(c->st, VG_DATA_LOSS, "%s: malformed VersionDef.bad_consumers", c->src);
                if (!vg__grow((void **)&c->bad_consumers, &c->bad_cap, c->nbad + 1, sizeof(int64_t)))
                    return oom(c, "versions");
                c->bad_consumers[c->nbad++] = (int32_t)v;
            } while (packed && q < e);
        }
    }
    if (k != VG_OUT_OF_RANGE) return pb_err(c, k, "VersionDef");
    return VG_OK;
}

static vg_code parse_graph(ctx *c, const uint8_t *p, size_t n) {
    vg__pb_reader r;
    vg__pb_field f;
    vg__pb_reader_init(&r, p, n);
    vg_code k;
    while ((k = vg__pb_next(&r, &f, c->st)) == VG_OK) {
        if (f.number == 1) {
            if ((k = need_len(c, &f, "GraphDef.node"))) return k;
            if (!vg__grow((void **)&c->nodes, &c->cap, c->n + 1, sizeof(inode))) return oom(c, "nodes");
            inode *nd = &c->nodes[c->n++];
            memset(nd, 0, sizeof *nd);
            if ((k = parse_node(c, f.data, f.len, nd))) return k;
            size_t ol = c->omit_scope ? strlen(c->omit_scope) : 0;
            if (ol && strncmp(nd->name, c->omit_scope, ol) == 0 && (nd->name[ol] == '/' || !nd->name[ol])) {
                inode_free(nd);
                c->n--;
            }
        } else if (f.number == 4) {
            if ((k = need_len(c, &f, "GraphDef.versions"))) return k;
            if ((k = parse_versions(c, f.data, f.len))) return k;
        } else if (f.number == 2 && f.wiretype == VG__PB_LEN) {
            c->library = f.data;
            c->library_len = f.len;
        }
    }
    if (k != VG_OUT_OF_RANGE) return pb_err(c, k, "GraphDef");
    for (int i = 0; i < c->n; i++) {
        bool found = false;
        vg__strmap_get(&c->by_name, c->nodes[i].name, &found);
        if (found)
            return vg_status_set(c->st, VG_INVALID_ARGUMENT, "%s: node '%s' is defined twice", c->src,
                                 c->nodes[i].name);
        if (!vg__strmap_put(&c->by_name, c->nodes[i].name, (void *)(intptr_t)(i + 1))) return oom(c, "name map");
    }
    return VG_OK;
}

static vg_code check_versions(ctx *c) {
    if (!c->has_versions) return VG_OK;
    if (c->producer < VG_GRAPH_DEF_VERSION_MIN_PRODUCER)
        return vg_status_set(c->st, VG_INVALID_ARGUMENT,
                             "%s: GraphDef producer version %lld below min producer %d supported by vigil. "
                             "Please regenerate your graph.",
                             c->src, (long long)c->producer, VG_GRAPH_DEF_VERSION_MIN_PRODUCER);
    if (c->min_consumer > VG_GRAPH_DEF_VERSION)
        return vg_status_set(c->st, VG_INVALID_ARGUMENT,
                             "%s: GraphDef min consumer version %lld above current version %d for vigil (as TF "
                             "1.15). Please upgrade vigil.",
                             c->src, (long long)c->min_consumer, VG_GRAPH_DEF_VERSION);
    for (int i = 0; i < c->nbad; i++)
        if (c->bad_consumers[i] == VG_GRAPH_DEF_VERSION)
            return vg_status_set(c->st, VG_INVALID_ARGUMENT, "%s: GraphDef disallows consumer version %d.", c->src,
                                 VG_GRAPH_DEF_VERSION);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* legacy op names */

static const rattr *find_rattr(const inode *nd, const char *key) {
    size_t kl = strlen(key);
    for (int i = 0; i < nd->nattrs; i++)
        if (nd->attrs[i].key_len == kl && memcmp(nd->attrs[i].key, key, kl) == 0) return &nd->attrs[i];
    return NULL;
}

/* The "type" field of a type attr, or -1. */
static int rattr_type(const inode *nd, const char *key) {
    const rattr *a = find_rattr(nd, key);
    if (!a || !a->val) return -1;
    vg__pb_reader r;
    vg__pb_field f;
    vg_status st;
    int t = -1;
    vg__pb_reader_init(&r, a->val, a->val_len);
    while (vg__pb_next(&r, &f, &st) == VG_OK)
        if (f.number == 6 && f.wiretype == VG__PB_VARINT) t = (int)(f.u % 100);
    return t;
}

static const char *legacy_map(const inode *nd) {
    const char *t = nd->orig_op;
    if (vg__registry_find(t)) return t;
    if (strcmp(t, "Variable") == 0) return "VariableV2";
    if (strcmp(t, "Div") == 0) {
        int dt = rattr_type(nd, "T");
        if (dt == VG_FLOAT || dt == VG_DOUBLE) return "RealDiv";
        /* integer Div truncates (C division), as TruncateDiv */
        if ((dt == VG_INT32 || dt == VG_INT64 || dt == VG_UINT8) && vg__registry_find("TruncateDiv")) return "TruncateDiv";
        return t;
    }
    if (strcmp(t, "Concat") == 0) return "ConcatV2";
    if (strcmp(t, "BatchMatMul") == 0 && vg__registry_find("BatchMatMulV2")) return "BatchMatMulV2";
    if (strcmp(t, "Inv") == 0) return "Reciprocal";
    if (strcmp(t, "InvGrad") == 0) return "ReciprocalGrad";
    return t;
}

/* TF's ValidateNodeDef (after its op-def defaults are added): a type attr "T" without
 * a default in TF's op def must be in the NodeDef. vigil's op table declares no attrs,
 * so the op's shape function tells: it gave the built op a type "T" the NodeDef lacked
 * (from the input dtypes). Ops whose TF "T" has a default are exempt. */
static vg_code check_required_type_attr(ctx *c, const inode *nd) {
    static const char *const t_has_default[] = {
        "Where", "BroadcastGradientArgs", "InvertPermutation", "InTopKV2", "MaxPool", "MaxPoolGrad", "LRN",
        "LRNGrad", "LeakyRelu", "LeakyReluGrad", "HistogramSummary", "ImageSummary", "EncodePng",
        "AdjustContrastv2", "AdjustHue", "AdjustSaturation", "RGBToHSV", "HSVToRGB", NULL};
    vg_dtype t;
    if (find_rattr(nd, "T") || !vg_op_attr_type_(nd->built, "T", &t)) return VG_OK;
    for (int i = 0; t_has_default[i]; i++)
        if (strcmp(nd->op, t_has_default[i]) == 0) return VG_OK;
    return vg_status_set(c->st, VG_INVALID_ARGUMENT, "%s: node '%s': NodeDef missing attr 'T' from Op<name=%s>; NodeDef: {{node %s}}",
                         c->src, nd->name, nd->orig_op, nd->name);
}

typedef struct missing {
    const char *type;
    int count;
    int first; /* index of the first node */
} missing;

/* Maps op types, then lists the unknown ones (first-seen order) into *out (allocated). */
static vg_code collect_missing(ctx *c, missing **out, int *nout) {
    missing *m = NULL;
    int n = 0, cap = 0;
    for (int i = 0; i < c->n; i++) {
        inode *nd = &c->nodes[i];
        nd->op = vg__strdup(legacy_map(nd));
        if (!nd->op) {
            vg__free(m);
            return oom(c, "op type");
        }
        if (vg__registry_find(nd->op)) continue;
        int j = 0;
        while (j < n && strcmp(m[j].type, nd->orig_op) != 0) j++;
        if (j == n) {
            if (!vg__grow((void **)&m, &cap, n + 1, sizeof *m)) {
                vg__free(m);
                return oom(c, "op list");
            }
            m[n++] = (missing){nd->orig_op, 0, i};
        }
        m[j].count++;
    }
    *out = m;
    *nout = n;
    return VG_OK;
}

/* Whether op type `type` is a function of the GraphDef's library:
 * FunctionDefLibrary {function = 1: FunctionDef {signature = 1: OpDef {name = 1}}}. */
static bool is_library_function(const ctx *c, const char *type) {
    vg__pb_reader r, fr, sr;
    vg__pb_field f, ff, sf;
    size_t tl = strlen(type);
    if (!c->library) return false;
    vg__pb_reader_init(&r, c->library, c->library_len);
    while (vg__pb_next(&r, &f, NULL) == VG_OK) {
        if (f.number != 1 || f.wiretype != VG__PB_LEN) continue;
        vg__pb_reader_init(&fr, f.data, f.len);
        while (vg__pb_next(&fr, &ff, NULL) == VG_OK) {
            if (ff.number != 1 || ff.wiretype != VG__PB_LEN) continue;
            vg__pb_reader_init(&sr, ff.data, ff.len);
            while (vg__pb_next(&sr, &sf, NULL) == VG_OK)
                if (sf.number == 1 && sf.wiretype == VG__PB_LEN && sf.len == tl && memcmp(sf.data, type, tl) == 0)
                    return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------------------ */
/* function calls (GraphDef.library): inlined at import
 *
 * FunctionDefLibrary {function = 1 (FunctionDef)}
 * FunctionDef {signature = 1 (OpDef), node_def = 3 (NodeDef), ret = 4 (map<string,
 *              string>: output arg -> "node:out_arg:index" or an input arg),
 *              attr = 5, control_ret = 6 (map<string, string>)}
 * OpDef       {name = 1, input_arg = 2, output_arg = 3 (ArgDef)}
 * ArgDef      {name = 1, type = 3, type_attr = 4, number_attr = 5, type_list_attr = 6}
 * NameAttrList {name = 1, attr = 2 (map<string, AttrValue>)}: the `f` attr of a
 *              PartitionedCall / StatefulPartitionedCall.
 *
 * A node whose op is a library function (or a PartitionedCall naming one) becomes, as
 * TF's function inliner (common_runtime/function.cc InlineFunctionBody) does it: one
 * Identity "<call>/<arg>" per input argument, the body's nodes renamed "<call>/<node>"
 * (attr placeholders replaced by the call's attr values; nodes without inputs wait
 * on the call's control inputs), and the call's own name for its outputs: an Identity
 * (one output), an IdentityN (several) or a NoOp (none), which also waits, through
 * control inputs, on every body node no other body node reads (TF runs the whole body
 * of a call). Body references "node:out_arg:i" are turned into output indices with the
 * output argument names of the producer's op; an op whose names vigil does not know
 * and that has more than one output is refused at build time, never guessed. */

typedef struct fn_arg {
    const uint8_t *name, *type_attr;
    size_t name_len, type_attr_len;
    int type; /* -1: from type_attr */
    bool list;
} fn_arg;

typedef struct fn_def {
    const uint8_t *name;
    size_t name_len;
    fn_arg *in, *out;
    int nin, nout, in_cap, out_cap;
    const uint8_t **node;
    size_t *node_len;
    int nnode, node_cap, node_len_cap;
    const uint8_t **ret_key, **ret_val;
    size_t *ret_key_len, *ret_val_len;
    int nret, ret_cap[4];
} fn_def;

static void fn_free(fn_def *f) {
    vg__free(f->in);
    vg__free(f->out);
    vg__free(f->node);
    vg__free(f->node_len);
    vg__free(f->ret_key);
    vg__free(f->ret_val);
    vg__free(f->ret_key_len);
    vg__free(f->ret_val_len);
}

static bool bytes_eq(const uint8_t *p, size_t n, const char *s) { return strlen(s) == n && memcmp(p, s, n) == 0; }

static vg_code parse_arg(ctx *c, const uint8_t *p, size_t n, fn_arg *a) {
    vg__pb_reader r;
    vg__pb_field f;
    vg_code k;
    memset(a, 0, sizeof *a);
    a->type = -1;
    vg__pb_reader_init(&r, p, n);
    while ((k = vg__pb_next(&r, &f, c->st)) == VG_OK) {
        if (f.number == 1 && f.wiretype == VG__PB_LEN) a->name = f.data, a->name_len = f.len;
        else if (f.number == 3 && f.wiretype == VG__PB_VARINT) a->type = (int)(f.u % 100);
        else if (f.number == 4 && f.wiretype == VG__PB_LEN) a->type_attr = f.data, a->type_attr_len = f.len;
        else if ((f.number == 5 || f.number == 6) && f.wiretype == VG__PB_LEN && f.len) a->list = true;
    }
    if (k != VG_OUT_OF_RANGE) return pb_err(c, k, "ArgDef");
    if (!a->name) return vg_status_set(c->st, VG_INVALID_ARGUMENT, "%s: a function argument has no name", c->src);
    if (a->type == 0) a->type = -1;
    return VG_OK;
}

static vg_code find_fn_parse(ctx *c, const char *name, fn_def *out);

/* Finds and parses library function `name`; VG_NOT_FOUND (no status) when absent.
 * *out is to be freed with fn_free on success only. */
static vg_code find_fn(ctx *c, const char *name, fn_def *out) {
    vg_code k = find_fn_parse(c, name, out);
    if (k) fn_free(out);
    return k;
}

static vg_code find_fn_parse(ctx *c, const char *name, fn_def *out) {
    vg__pb_reader r, fr, sr;
    vg__pb_field f, ff, sf;
    vg_code k;
    memset(out, 0, sizeof *out);
    if (!c->library) return VG_NOT_FOUND;
    vg__pb_reader_init(&r, c->library, c->library_len);
    while (vg__pb_next(&r, &f, NULL) == VG_OK) {
        if (f.number != 1 || f.wiretype != VG__PB_LEN) continue;
        /* the signature's name first */
        bool match = false;
        vg__pb_reader_init(&fr, f.data, f.len);
        while (!match && vg__pb_next(&fr, &ff, NULL) == VG_OK) {
            if (ff.number != 1 || ff.wiretype != VG__PB_LEN) continue;
            vg__pb_reader_init(&sr, ff.data, ff.len);
            while (vg__pb_next(&sr, &sf, NULL) == VG_OK)
                if (sf.number == 1 && sf.wiretype == VG__PB_LEN && bytes_eq(sf.data, sf.len, name)) match = true;
        }
        if (!match) continue;
        vg__pb_reader_init(&fr, f.data, f.len);
        while ((k = vg__pb_next(&fr, &ff, c->st)) == VG_OK) {
            if (ff.wiretype != VG__PB_LEN) continue;
            if (ff.number == 1) {
                vg__pb_reader_init(&sr, ff.data, ff.len);
                while ((k = vg__pb_next(&sr, &sf, c->st)) == VG_OK) {
                    if (sf.wiretype != VG__PB_LEN) continue;
                    if (sf.number == 1) out->name = sf.data, out->name_len = sf.len;
                    else if (sf.number == 2 || sf.number == 3) {
                        fn_arg **v = sf.number == 2 ? &out->in : &out->out;
                        int *nv = sf.number == 2 ? &out->nin : &out->nout;
                        int *cap = sf.number == 2 ? &out->in_cap : &out->out_cap;
                        if (!vg__grow((void **)v, cap, *nv + 1, sizeof(fn_arg))) return oom(c, "function arguments");
                        if ((k = parse_arg(c, sf.data, sf.len, &(*v)[*nv]))) return k;
                        (*nv)++;
                    }
                }
                if (k != VG_OUT_OF_RANGE) return pb_err(c, k, "OpDef");
            } else if (ff.number == 3) {
                int cap2 = out->node_len_cap;
                if (!vg__grow((void **)&out->node, &out->node_cap, out->nnode + 1, sizeof(uint8_t *)) ||
                    !vg__grow((void **)&out->node_len, &cap2, out->nnode + 1, sizeof(size_t)))
                    return oom(c, "function body");
                out->node_len_cap = cap2;
                out->node[out->nnode] = ff.data;
                out->node_len[out->nnode++] = ff.len;
            } else if (ff.number == 4) {
                const uint8_t *kk = NULL, *vv = NULL;
                size_t kl = 0, vl = 0;
                vg__pb_reader_init(&sr, ff.data, ff.len);
                while ((k = vg__pb_next(&sr, &sf, c->st)) == VG_OK) {
                    if (sf.number == 1 && sf.wiretype == VG__PB_LEN) kk = sf.data, kl = sf.len;
                    else if (sf.number == 2 && sf.wiretype == VG__PB_LEN) vv = sf.data, vl = sf.len;
                }
                if (k != VG_OUT_OF_RANGE) return pb_err(c, k, "FunctionDef.ret");
                int n1 = out->nret + 1;
                if (!vg__grow((void **)&out->ret_key, &out->ret_cap[0], n1, sizeof(uint8_t *)) ||
                    !vg__grow((void **)&out->ret_val, &out->ret_cap[1], n1, sizeof(uint8_t *)) ||
                    !vg__grow((void **)&out->ret_key_len, &out->ret_cap[2], n1, sizeof(size_t)) ||
                    !vg__grow((void **)&out->ret_val_len, &out->ret_cap[3], n1, sizeof(size_t)))
                    return oom(c, "function returns");
                out->ret_key[out->nret] = kk ? kk : (const uint8_t *)"";
                out->ret_key_len[out->nret] = kl;
                out->ret_val[out->nret] = vv ? vv : (const uint8_t *)"";
                out->ret_val_len[out->nret++] = vl;
            }
        }
        if (k != VG_OUT_OF_RANGE) return pb_err(c, k, "FunctionDef");
        return VG_OK;
    }
    return VG_NOT_FOUND;
}

/* Output argument names of the multi-output ops (TF 1.15's op defs), each argument
 * one tensor. */
static const char *const k_out_args[][2] = {
    {"Switch", "output_false,output_true"}, {"RefSwitch", "output_false,output_true"},
    {"Merge", "output,value_index"}, {"RefMerge", "output,value_index"},
    {"Unique", "y,idx"}, {"UniqueV2", "y,idx"}, {"UniqueWithCounts", "y,idx,count"},
    {"UniqueWithCountsV2", "y,idx,count"}, {"TopK", "values,indices"}, {"TopKV2", "values,indices"},
    {"FusedBatchNorm", "y,batch_mean,batch_variance,reserve_space_1,reserve_space_2"},
    {"FusedBatchNormV2", "y,batch_mean,batch_variance,reserve_space_1,reserve_space_2"},
    {"FusedBatchNormV3", "y,batch_mean,batch_variance,reserve_space_1,reserve_space_2,reserve_space_3"},
    {"FusedBatchNormGrad", "x_backprop,scale_backprop,offset_backprop,reserve_space_3,reserve_space_4"},
    {"FusedBatchNormGradV2", "x_backprop,scale_backprop,offset_backprop,reserve_space_3,reserve_space_4"},
    {"FusedBatchNormGradV3", "x_backprop,scale_backprop,offset_backprop,reserve_space_4,reserve_space_5"},
    {"BroadcastGradientArgs", "r0,r1"}, {"ListDiff", "out,idx"}, {"MaxPoolWithArgmax", "output,argmax"},
    {"Qr", "q,r"}, {"SelfAdjointEigV2", "e,v"}, {"Svd", "s,u,v"},
    {"TensorArrayV3", "handle,flow"}, {"TensorArrayGradV3", "grad_handle,flow_out"},
    {"TensorArrayConcatV3", "value,lengths"}, {"ReaderReadV2", "key,value"}, {"ReaderReadUpToV2", "keys,values"},
    {"LookupTableExportV2", "keys,values"}, {"LSTMBlockCell", "i,cs,f,o,ci,co,h"},
    {"BlockLSTM", "i,cs,f,o,ci,co,h"}, {"GRUBlockCell", "r,u,c,h"},
    {"LSTMBlockCellGrad", "cs_prev_grad,dicfo,wci_grad,wcf_grad,wco_grad"},
    {"BlockLSTMGrad", "x_grad,cs_prev_grad,h_prev_grad,w_grad,wci_grad,wcf_grad,wco_grad,b_grad"},
    {"SoftmaxCrossEntropyWithLogits", "loss,backprop"}, {"SparseSoftmaxCrossEntropyWithLogits", "loss,backprop"},
    {"CTCLoss", "loss,gradient"}, {"ComputeAccidentalHits", "indices,ids,weights"},
    {"UniformCandidateSampler", "sampled_candidates,true_expected_count,sampled_expected_count"},
    {"LogUniformCandidateSampler", "sampled_candidates,true_expected_count,sampled_expected_count"},
    {"FixedUnigramCandidateSampler", "sampled_candidates,true_expected_count,sampled_expected_count"},
    {"StringSplit", "indices,values,shape"}, {"StringSplitV2", "indices,values,shape"},
    {"SparseReshape", "output_indices,output_shape"}, {"SparseReorder", "output_indices,output_values"},
    {"SparseAdd", "sum_indices,sum_values,sum_shape"}, {"SparseSlice", "output_indices,output_values,output_shape"},
    {"SparseConcat", "output_indices,output_values,output_shape"}, {"DecodeWav", "audio,sample_rate"},
    {"NonMaxSuppressionV4", "selected_indices,valid_outputs"}};

/* TF 1.15's output argument names of the single-output ops a tf.data function commonly
 * holds, by name: {names, op types separated by spaces}. */
static const char *const k_one_out[][2] = {
    {"z", " Add AddV2 Sub Mul Div RealDiv FloorDiv FloorMod TruncateDiv TruncateMod Mod Maximum Minimum Pow "
          "SquaredDifference Less LessEqual Greater GreaterEqual Equal NotEqual LogicalAnd LogicalOr BitwiseAnd "
          "BitwiseOr BitwiseXor Atan2 DivNoNan MulNoNan Xdivy Xlogy LeftShift RightShift ApproximateEqual "},
    {"y", " Neg Abs Square Sqrt Rsqrt Exp Log Log1p Expm1 Sin Cos Tan Asin Acos Atan Sinh Cosh Tanh Sigmoid Sign "
          "Floor Ceil Round Rint Reciprocal Inv IsNan IsInf IsFinite LogicalNot Erf Erfc Lgamma Digamma Cast "
          "Transpose Invert ZerosLike OnesLike InvertPermutation ComplexAbs "},
    {"activations", " Relu Relu6 Elu Selu Softplus Softsign LeakyRelu "},
    {"softmax", " Softmax "},
    {"logsoftmax", " LogSoftmax "},
    {"product", " MatMul "},
    {"out", " Cumsum Cumprod Complex "},
    {"index", " Where "},
    {"image", " DecodeJpeg DecodePng DecodeImage DecodeGif DecodeBmp DecodeAndCropJpeg "},
    {"contents", " EncodeJpeg EncodePng ReadFile "},
    {"resized_images", " ResizeBilinear ResizeNearestNeighbor ResizeBicubic ResizeArea "},
    {"crops", " CropAndResize "},
    {"values", " LookupTableFindV2 "},
    {"value", " ReadVariableOp "},
    {"dense", " SparseToDense "},
    {"serialized", " SerializeTensor "},
    {"image_shape", " ExtractJpegShape "},
    {"output", " Identity Const Placeholder PlaceholderWithDefault Reshape ExpandDims Squeeze Shape Size Rank Fill "
               "Pack ConcatV2 Concat Slice StridedSlice Tile Pad PadV2 MirrorPad GatherV2 Gather GatherNd OneHot "
               "Select SelectV2 Sum Mean Max Min Prod All Any ArgMax ArgMin Reverse ReverseV2 BroadcastTo "
               "BatchMatMul BatchMatMulV2 StringToNumber DecodeRaw AsString StringJoin Substr StringLength "
               "RegexReplace StaticRegexReplace ReduceJoin StringToHashBucketFast StringToHashBucketStrong "
               "StringToHashBucket DecodeBase64 EncodeBase64 AdjustContrastv2 AdjustSaturation AdjustHue RGBToHSV "
               "HSVToRGB ClipByValue RandomUniform RandomStandardNormal RandomUniformInt TruncatedNormal "
               "RandomShuffle StatelessRandomUniform StatelessRandomNormal Range LinSpace StopGradient "
               "PreventGradient CheckNumerics EnsureShape DecodeCompressed ParseTensor ScatterNd Bitcast RandomCrop "
               "Real Imag Conj Angle Bucketize Snapshot "}};

/* Ops whose outputs are one list argument, with its name. */
static const char *const k_list_names[][2] = {
    {"Split", "output"}, {"SplitV", "output"}, {"Unpack", "output"}, {"IdentityN", "output"}, {"ShapeN", "output"},
    {"DynamicPartition", "outputs"}, {"RestoreV2", "tensors"}, {"QueueDequeueV2", "components"},
    {"QueueDequeueManyV2", "components"}, {"QueueDequeueUpToV2", "components"}, {"IteratorGetNext", "components"},
    {"IteratorGetNextSync", "components"}, {"DecodeCSV", "output"}, {"ReduceDataset", "components"}};

const char *vg__op_output_args(const char *type, bool *list) {
    *list = false;
    for (size_t i = 0; i < sizeof k_out_args / sizeof *k_out_args; i++)
        if (strcmp(type, k_out_args[i][0]) == 0) return k_out_args[i][1];
    for (size_t i = 0; i < sizeof k_list_names / sizeof *k_list_names; i++)
        if (strcmp(type, k_list_names[i][0]) == 0) {
            *list = true;
            return k_list_names[i][1];
        }
    size_t n = strlen(type);
    if (n > 7 && strcmp(type + n - 7, "Dataset") == 0) return "handle";
    char pat[160];
    if (n + 3 > sizeof pat) return NULL;
    snprintf(pat, sizeof pat, " %s ", type);
    for (size_t i = 0; i < sizeof k_one_out / sizeof *k_one_out; i++)
        if (strstr(k_one_out[i][1], pat)) return k_one_out[i][0];
    return NULL;
}

/* An int attr's value, or a list attr's length (types or shapes), -1 when absent. */
static int64_t rattr_count(const inode *nd, const char *key, bool list) {
    const rattr *a = find_rattr(nd, key);
    if (!a || !a->val) return -1;
    vg__pb_reader r, lr;
    vg__pb_field f, lf;
    int64_t v = -1;
    vg__pb_reader_init(&r, a->val, a->val_len);
    while (vg__pb_next(&r, &f, NULL) == VG_OK) {
        if (!list && f.number == 3 && f.wiretype == VG__PB_VARINT) v = (int64_t)f.u;
        if (list && f.number == 1 && f.wiretype == VG__PB_LEN) {
            v = 0;
            vg__pb_reader_init(&lr, f.data, f.len);
            while (vg__pb_next(&lr, &lf, NULL) == VG_OK) {
                if (lf.number == 6 && lf.wiretype == VG__PB_LEN) { /* packed types */
                    const uint8_t *q = lf.data, *e = lf.data + lf.len;
                    uint64_t t;
                    while (q < e && vg__pb_get_varint(&q, e, &t)) v++;
                } else if (lf.number == 6 || lf.number == 7) {
                    v++;
                }
            }
        }
    }
    return v;
}

/* Output arguments that are lists sized by attrs (ParseExample V1/V2, ParseSingleExample): the flat index
 * of (arg, idx), -1 when the op is not one of them or the reference is bad, -2 when
 * the sizes are unknown. */
static long list_arg_index(const inode *p, const char *arg, size_t al, long idx) {
    const char *names[6];
    int64_t len[6];
    int n;
    if (strcmp(p->orig_op, "ParseExample") == 0) {
        int64_t ns = rattr_count(p, "Nsparse", false), nd = rattr_count(p, "Ndense", false);
        if (ns < 0) ns = 0;
        if (nd < 0) nd = rattr_count(p, "Tdense", true);
        const char *nm[] = {"sparse_indices", "sparse_values", "sparse_shapes", "dense_values"};
        int64_t ln[] = {ns, ns, ns, nd};
        n = 4;
        memcpy(names, nm, sizeof nm);
        memcpy(len, ln, sizeof ln);
    } else if (strcmp(p->orig_op, "ParseSingleExample") == 0) {
        int64_t ns = rattr_count(p, "num_sparse", false), nd = rattr_count(p, "Tdense", true);
        if (ns < 0) ns = 0;
        if (nd < 0) nd = 0;
        const char *nm[] = {"sparse_indices", "sparse_values", "sparse_shapes", "dense_values"};
        int64_t ln[] = {ns, ns, ns, nd};
        n = 4;
        memcpy(names, nm, sizeof nm);
        memcpy(len, ln, sizeof ln);
    } else if (strcmp(p->orig_op, "ParseExampleV2") == 0) {
        int64_t ns = rattr_count(p, "num_sparse", false), nd = rattr_count(p, "Tdense", true);
        int64_t nr = rattr_count(p, "ragged_value_types", true);
        if (ns < 0) ns = 0;
        if (nr < 0) nr = 0;
        const char *nm[] = {"sparse_indices", "sparse_values", "sparse_shapes", "dense_values", "ragged_values",
                            "ragged_row_splits"};
        int64_t ln[] = {ns, ns, ns, nd, nr, nr};
        n = 6;
        memcpy(names, nm, sizeof nm);
        memcpy(len, ln, sizeof ln);
    } else {
        return -1;
    }
    long base = 0;
    for (int i = 0; i < n; i++) {
        if (len[i] < 0) return -2;
        if (strlen(names[i]) == al && memcmp(names[i], arg, al) == 0) return idx < len[i] ? base + idx : -1;
        base += (long)len[i];
    }
    return -1;
}

/* Ops whose outputs are all one list argument (any count). */
static const char *const k_list_out[] = {"Split", "SplitV", "Unpack", "IdentityN", "ShapeN", "DynamicPartition", "RestoreV2",
                                         "QueueDequeueV2", "QueueDequeueManyV2", "QueueDequeueUpToV2",
                                         "IteratorGetNext", "IteratorGetNextSync", "DecodeCSV", NULL};

static bool is_list_out_op(const char *type) {
    for (int i = 0; k_list_out[i]; i++)
        if (strcmp(type, k_list_out[i]) == 0) return true;
    return false;
}

/* Position of argument `arg` in a comma-separated list, -1 if absent. */
static int arg_pos(const char *list, const char *arg, size_t arg_len) {
    int pos = 0;
    for (const char *p = list;; pos++) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == arg_len && memcmp(p, arg, n) == 0) return pos;
        if (!e) return -1;
        p = e + 1;
    }
}

/* An AttrValue's placeholder name (field 9), or NULL. */
static const uint8_t *attr_placeholder(const rattr *a, size_t *len) {
    vg__pb_reader r;
    vg__pb_field f;
    if (!a->val) return NULL;
    vg__pb_reader_init(&r, a->val, a->val_len);
    while (vg__pb_next(&r, &f, NULL) == VG_OK)
        if (f.number == 9 && f.wiretype == VG__PB_LEN) {
            *len = f.len;
            return f.data;
        }
    return NULL;
}

/* A small byte buffer the context owns until the import ends (synthesised attrs). */
static uint8_t *ctx_bytes(ctx *c, size_t n) {
    if (!vg__grow((void **)&c->owned, &c->owned_cap, c->nowned + 1, sizeof(uint8_t *))) return NULL;
    uint8_t *p = vg__malloc(n ? n : 1);
    if (p) c->owned[c->nowned++] = p;
    return p;
}

/* Appends attr key = AttrValue{type: dt} (or {list {type: dts...}} when list). */
static vg_code add_type_attr(ctx *c, inode *nd, const char *key, const int *dts, int n, bool list) {
    uint8_t *p = ctx_bytes(c, (size_t)2 * n + 3);
    if (!p || !vg__grow((void **)&nd->attrs, &nd->attrs_cap, nd->nattrs + 1, sizeof(rattr)))
        return oom(c, "an attr");
    size_t len = 0;
    if (list) {
        p[len++] = 0x0a; /* AttrValue.list */
        p[len++] = (uint8_t)(2 * n);
        for (int i = 0; i < n; i++) p[len++] = 0x30, p[len++] = (uint8_t)dts[i]; /* ListValue.type */
    } else {
        p[len++] = 0x30, p[len++] = (uint8_t)dts[0]; /* AttrValue.type */
    }
    nd->attrs[nd->nattrs++] = (rattr){(const uint8_t *)key, strlen(key), p, len};
    return VG_OK;
}

static vg_code add_input(ctx *c, inode *nd, const char *spec) {
    if (!vg__grow((void **)&nd->inputs, &nd->inputs_cap, nd->ninputs + 1, sizeof(char *))) return oom(c, "inputs");
    if (!(nd->inputs[nd->ninputs] = vg__strdup(spec))) return oom(c, "inputs");
    nd->ninputs++;
    return VG_OK;
}

/* The attr of the call named (p, n): the NodeDef's own, or those of its `f`. */
static const rattr *call_attr(const rattr *attrs, int nattrs, const uint8_t *p, size_t n) {
    for (int i = 0; i < nattrs; i++)
        if (attrs[i].key_len == n && memcmp(attrs[i].key, p, n) == 0) return &attrs[i];
    return NULL;
}

/* The dtype of a function argument at a call: its type or the call's type attr. */
static int arg_dtype(const fn_arg *a, const rattr *attrs, int nattrs) {
    if (a->type > 0) return a->type;
    if (!a->type_attr) return -1;
    const rattr *ra = call_attr(attrs, nattrs, a->type_attr, a->type_attr_len);
    if (!ra || !ra->val) return -1;
    vg__pb_reader r;
    vg__pb_field f;
    int t = -1;
    vg__pb_reader_init(&r, ra->val, ra->val_len);
    while (vg__pb_next(&r, &f, NULL) == VG_OK)
        if (f.number == 6 && f.wiretype == VG__PB_VARINT) t = (int)(f.u % 100);
    return t;
}

typedef struct call_site {
    int node;          /* index of the call node */
    const char *fname; /* function name */
    rattr *attrs;      /* the attrs placeholders take their values from (owned copy) */
    int nattrs;
    char *call;        /* the call node's name (owned copy) */
} call_site;

/* The function a node calls: its op type, or the `f` attr of a PartitionedCall. On a
 * PartitionedCall *attrs receives f's attrs (allocated). false: not a call. */
static vg_code call_target(ctx *c, inode *nd, char **fname, rattr **attrs, int *nattrs) {
    *fname = NULL;
    *attrs = NULL;
    *nattrs = 0;
    const char *t = nd->orig_op;
    bool pcall = strcmp(t, "PartitionedCall") == 0 || strcmp(t, "StatefulPartitionedCall") == 0;
    if (!pcall) {
        if (vg__registry_find(legacy_map(nd)) || !is_library_function(c, t)) return VG_OK;
        if (!(*fname = vg__strdup(t))) return oom(c, "a function name");
        if (nd->nattrs) {
            if (!(*attrs = vg__malloc((size_t)nd->nattrs * sizeof(rattr)))) return oom(c, "attrs");
            memcpy(*attrs, nd->attrs, (size_t)nd->nattrs * sizeof(rattr));
            *nattrs = nd->nattrs;
        }
        return VG_OK;
    }
    const rattr *fa = find_rattr(nd, "f");
    vg__pb_reader r, nr, er;
    vg__pb_field f, nf, ef;
    if (!fa || !fa->val)
        return vg_status_set(c->st, VG_INVALID_ARGUMENT, "%s: node '%s' (%s) has no function attr 'f'", c->src,
                             nd->name, t);
    vg__pb_reader_init(&r, fa->val, fa->val_len);
    int cap = 0;
    while (vg__pb_next(&r, &f, NULL) == VG_OK) {
        if (f.number != 10 || f.wiretype != VG__PB_LEN) continue;
        vg__pb_reader_init(&nr, f.data, f.len);
        while (vg__pb_next(&nr, &nf, NULL) == VG_OK) {
            if (nf.wiretype != VG__PB_LEN) continue;
            if (nf.number == 1) {
                vg__free(*fname);
                if (memchr(nf.data, 0, nf.len) || !(*fname = vg__strndup((const char *)nf.data, nf.len)))
                    return oom(c, "a function name");
            } else if (nf.number == 2) {
                rattr a = {(const uint8_t *)"", 0, NULL, 0};
                vg__pb_reader_init(&er, nf.data, nf.len);
                while (vg__pb_next(&er, &ef, NULL) == VG_OK) {
                    if (ef.number == 1 && ef.wiretype == VG__PB_LEN) a.key = ef.data, a.key_len = ef.len;
                    else if (ef.number == 2 && ef.wiretype == VG__PB_LEN) a.val = ef.data, a.val_len = ef.len;
                }
                if (!vg__grow((void **)attrs, &cap, *nattrs + 1, sizeof(rattr))) return oom(c, "attrs");
                (*attrs)[(*nattrs)++] = a;
            }
        }
    }
    if (!*fname || !is_library_function(c, *fname))
        return vg_status_set(c->st, VG_INVALID_ARGUMENT, "%s: node '%s' (%s) calls '%s', which is not in the "
                             "GraphDef's function library", c->src, nd->name, t, *fname ? *fname : "(no name)");
    return VG_OK;
}

/* Turns body reference `ref` ("arg", "node:out_arg:i" or "^node") of function fn called
 * at `call` into an input spec of the inlined graph. *check: the producer's output
 * names are unknown (single-output assumed; verified once built). */
static vg_code body_ref(ctx *c, const fn_def *fn, const char *call, const char *ref, const vg__strmap *local,
                        char *out, size_t cap, bool *check) {
    *check = false;
    bool ctrl = ref[0] == '^';
    const char *s = ctrl ? ref + 1 : ref;
    const char *c1 = strchr(s, ':');
    size_t nl = c1 ? (size_t)(c1 - s) : strlen(s);
    char name[512];
    if (nl == 0 || nl >= sizeof name) goto bad;
    memcpy(name, s, nl);
    name[nl] = 0;
    if (ctrl || !c1) {
        bool is_arg = false;
        for (int i = 0; i < fn->nin; i++) is_arg |= bytes_eq(fn->in[i].name, fn->in[i].name_len, name);
        bool found = false;
        vg__strmap_get(local, name, &found);
        if (!found && !is_arg) goto bad;
        if (snprintf(out, cap, "%s%s/%s", ctrl ? "^" : "", call, name) >= (int)cap) goto bad;
        return VG_OK;
    }
    const char *c2 = strchr(c1 + 1, ':');
    if (!c2 || c2 == c1 + 1 || !c2[1]) goto bad;
    long idx = 0;
    for (const char *q = c2 + 1; *q; q++) {
        if (*q < '0' || *q > '9' || idx > 100000) goto bad;
        idx = idx * 10 + (*q - '0');
    }
    bool found = false;
    int src = (int)(intptr_t)vg__strmap_get(local, name, &found);
    if (!found) goto bad;
    const char *arg = c1 + 1;
    size_t al = (size_t)(c2 - arg);
    inode *p = &c->nodes[src];
    long flat = -1;
    fn_def sub;
    vg_code k = is_library_function(c, p->orig_op) && !vg__registry_find(legacy_map(p)) ? find_fn(c, p->orig_op, &sub)
                                                                                        : VG_NOT_FOUND;
    if (k == VG_OK) {
        for (int i = 0; i < sub.nout; i++)
            if (sub.out[i].name_len == al && memcmp(sub.out[i].name, arg, al) == 0) flat = idx == 0 ? i : -1;
        fn_free(&sub);
        if (flat < 0) goto bad;
    } else if (k != VG_NOT_FOUND) {
        return k;
    } else {
        long li = list_arg_index(p, arg, al, idx);
        if (li == -2 || (li == -1 && (!strcmp(p->orig_op, "ParseExample") || !strcmp(p->orig_op, "ParseExampleV2") ||
                                      !strcmp(p->orig_op, "ParseSingleExample"))))
            goto bad;
        if (li >= 0) flat = li;
        for (size_t i = 0; li < 0 && i < sizeof k_out_args / sizeof *k_out_args; i++)
            if (strcmp(p->orig_op, k_out_args[i][0]) == 0) {
                int pos = arg_pos(k_out_args[i][1], arg, al);
                if (pos < 0 || idx != 0) goto bad;
                flat = pos;
            }
        if (flat < 0) {
            flat = idx;
            *check = !is_list_out_op(p->orig_op);
        }
    }
    if (snprintf(out, cap, "%s/%s:%ld", call, name, flat) >= (int)cap) goto bad;
    return VG_OK;
bad:
    return vg_status_set(c->st, VG_INVALID_ARGUMENT, "%s: function '%.*s' (called by node '%s'): bad reference '%s'",
                         c->src, (int)fn->name_len, (const char *)fn->name, call, ref);
}

#define MAX_FN_DEPTH 32

/* Appends a zeroed node of call depth `depth`; NULL when out of memory. The pointer
 * lasts until the next append. */
static inode *new_node(ctx *c, int depth) {
    if (!vg__grow((void **)&c->nodes, &c->cap, c->n + 1, sizeof(inode))) return NULL;
    inode *nd = &c->nodes[c->n++];
    memset(nd, 0, sizeof *nd);
    nd->fn_depth = depth;
    return nd;
}

/* Inlines the call at node index ci. */
static vg_code inline_call(ctx *c, int ci, const char *fname, const rattr *cattrs, int ncattrs) {
    fn_def fn;
    vg_code k = find_fn(c, fname, &fn);
    if (k == VG_NOT_FOUND) return vg_status_set(c->st, VG_INTERNAL, "%s: function '%s' vanished", c->src, fname);
    if (k) return k;
    vg__strmap local;
    vg__strmap_init(&local);
    char *call = vg__strdup(c->nodes[ci].name);
    int depth = c->nodes[ci].fn_depth + 1;
    char spec[1100];
    int first_body = c->n;
    if (!call) {
        k = oom(c, "a name");
        goto out;
    }
    if (depth > MAX_FN_DEPTH) {
        k = vg_status_set(c->st, VG_INVALID_ARGUMENT,
                          "%s: node '%s': function '%s' calls functions more than %d deep (recursion?)", c->src, call,
                          fname, MAX_FN_DEPTH);
        goto out;
    }
    for (int i = 0; i < fn.nin + fn.nout; i++) {
        const fn_arg *a = i < fn.nin ? &fn.in[i] : &fn.out[i - fn.nin];
        if (a->list) {
            k = vg_status_set(c->st, VG_UNIMPLEMENTED,
                              "%s: node '%s': function '%s' has a list argument '%.*s' (number_attr / "
                              "type_list_attr), which vigil's function inlining does not support yet",
                              c->src, call, fname, (int)a->name_len, (const char *)a->name);
            goto out;
        }
        if (arg_dtype(a, cattrs, ncattrs) < 0) {
            k = vg_status_set(c->st, VG_INVALID_ARGUMENT,
                              "%s: node '%s': the type of argument '%.*s' of function '%s' is not known (attr "
                              "missing on the call)", c->src, call, (int)a->name_len, (const char *)a->name, fname);
            goto out;
        }
    }
    int ndata = 0;
    while (ndata < c->nodes[ci].ninputs && c->nodes[ci].inputs[ndata][0] != '^') ndata++;
    if (ndata != fn.nin) {
        k = vg_status_set(c->st, VG_INVALID_ARGUMENT, "%s: node '%s' calls function '%s' with %d input(s), it takes %d",
                          c->src, call, fname, ndata, fn.nin);
        goto out;
    }
    /* argument Identities */
    for (int i = 0; i < fn.nin; i++) {
        inode *nd = new_node(c, depth);
        if (!nd) {
            k = oom(c, "nodes");
            goto out;
        }
        int t = arg_dtype(&fn.in[i], cattrs, ncattrs);
        snprintf(spec, sizeof spec, "%s/%.*s", call, (int)fn.in[i].name_len, (const char *)fn.in[i].name);
        if (!(nd->name = vg__strdup(spec)) || !(nd->orig_op = vg__strdup("Identity"))) {
            k = oom(c, "a node");
            goto out;
        }
        if ((k = add_input(c, nd, c->nodes[ci].inputs[i]))) goto out;
        for (int j = ndata; j < c->nodes[ci].ninputs; j++)
            if ((k = add_input(c, nd, c->nodes[ci].inputs[j]))) goto out;
        if ((k = add_type_attr(c, nd, "T", &t, 1, false))) goto out;
    }
    /* the body */
    first_body = c->n;
    for (int i = 0; i < fn.nnode; i++) {
        inode *nd = new_node(c, depth);
        if (!nd) {
            k = oom(c, "nodes");
            goto out;
        }
        if ((k = parse_node(c, fn.node[i], fn.node_len[i], nd))) goto out;
        bool dup = false;
        vg__strmap_get(&local, nd->name, &dup);
        if (dup) {
            k = vg_status_set(c->st, VG_INVALID_ARGUMENT, "%s: function '%s' defines node '%s' twice", c->src, fname,
                              nd->name);
            goto out;
        }
        if (!vg__strmap_put(&local, nd->name, (void *)(intptr_t)(c->n - 1))) {
            k = oom(c, "a name map");
            goto out;
        }
    }
    /* attr placeholders (first: references read the producers' attrs) */
    for (int b = first_body; b < c->n; b++) {
        inode *nd = &c->nodes[b];
        for (int j = 0; j < nd->nattrs; j++) {
            size_t pl;
            const uint8_t *ph = attr_placeholder(&nd->attrs[j], &pl);
            if (!ph) continue;
            const rattr *v = call_attr(cattrs, ncattrs, ph, pl);
            if (!v) {
                k = vg_status_set(c->st, VG_INVALID_ARGUMENT,
                                  "%s: node '%s': attr '%.*s' of function '%s' is not given by the call", c->src, call,
                                  (int)pl, (const char *)ph, fname);
                goto out;
            }
            nd->attrs[j].val = v->val;
            nd->attrs[j].val_len = v->val_len;
        }
    }
    /* references, names */
    for (int b = first_body; b < c->n; b++) {
        inode *nd = &c->nodes[b];
        for (int j = 0; j < nd->ninputs; j++) {
            bool check;
            if ((k = body_ref(c, &fn, call, nd->inputs[j], &local, spec, sizeof spec, &check))) goto out;
            char *s = vg__strdup(spec);
            if (!s) {
                k = oom(c, "an input");
                goto out;
            }
            vg__free(nd->inputs[j]);
            nd->inputs[j] = s;
            if (check) {
                if (j >= 64) {
                    k = vg_status_set(c->st, VG_UNIMPLEMENTED, "%s: function '%s': node '%s' has too many inputs",
                                      c->src, fname, nd->name);
                    goto out;
                }
                nd->fn_check |= 1ull << j;
            }
        }
        if (nd->ninputs == 0)
            for (int j = ndata; j < c->nodes[ci].ninputs; j++)
                if ((k = add_input(c, &c->nodes[b], c->nodes[ci].inputs[j]))) goto out;
        nd = &c->nodes[b];
        snprintf(spec, sizeof spec, "%s/%s", call, nd->name);
        char *s = vg__strdup(spec);
        if (!s) {
            k = oom(c, "a name");
            goto out;
        }
        vg__free(nd->name);
        nd->name = s;
    }
    /* the call node itself: its outputs */
    {
        int nout = fn.nout, types[64];
        if (nout > 64) {
            k = vg_status_set(c->st, VG_UNIMPLEMENTED, "%s: function '%s' has more than 64 outputs", c->src, fname);
            goto out;
        }
        inode *cn = &c->nodes[ci];
        char **outs = vg__calloc((size_t)(nout ? nout : 1), sizeof(char *));
        if (!outs) {
            k = oom(c, "outputs");
            goto out;
        }
        uint64_t checks = 0;
        for (int i = 0; i < nout && !k; i++) {
            types[i] = arg_dtype(&fn.out[i], cattrs, ncattrs);
            int r = 0;
            while (r < fn.nret && !(fn.ret_key_len[r] == fn.out[i].name_len &&
                                    memcmp(fn.ret_key[r], fn.out[i].name, fn.out[i].name_len) == 0))
                r++;
            if (r == fn.nret) {
                k = vg_status_set(c->st, VG_INVALID_ARGUMENT, "%s: function '%s' returns nothing for output '%.*s'",
                                  c->src, fname, (int)fn.out[i].name_len, (const char *)fn.out[i].name);
                break;
            }
            char ref[600];
            bool check;
            snprintf(ref, sizeof ref, "%.*s", (int)fn.ret_val_len[r], (const char *)fn.ret_val[r]);
            if ((k = body_ref(c, &fn, call, ref, &local, spec, sizeof spec, &check))) break;
            if (check) checks |= 1ull << i;
            if (!(outs[i] = vg__strdup(spec))) k = oom(c, "outputs");
        }
        /* body nodes no other body node reads: the call waits on them */
        bool *read = k ? NULL : vg__calloc((size_t)(c->n - first_body + 1), sizeof(bool));
        if (!k && !read) k = oom(c, "outputs");
        for (int b = first_body; !k && b < c->n; b++)
            for (int j = 0; j < c->nodes[b].ninputs; j++) {
                const char *in = c->nodes[b].inputs[j] + (c->nodes[b].inputs[j][0] == '^');
                size_t cl = strlen(call);
                if (strncmp(in, call, cl) != 0 || in[cl] != '/') continue;
                char nm[600];
                snprintf(nm, sizeof nm, "%s", in + cl + 1);
                char *colon = strchr(nm, ':');
                if (colon) *colon = 0;
                bool found = false;
                int src = (int)(intptr_t)vg__strmap_get(&local, nm, &found);
                if (found) read[src - first_body] = true;
            }
        if (!k) {
            for (int j = 0; j < cn->ninputs; j++) vg__free(cn->inputs[j]);
            cn->ninputs = 0;
            cn->nattrs = 0;
            vg__free(cn->orig_op);
            cn->orig_op = vg__strdup(nout == 0 ? "NoOp" : nout == 1 ? "Identity" : "IdentityN");
            if (!cn->orig_op) k = oom(c, "a node");
        }
        for (int i = 0; !k && i < nout; i++) {
            k = add_input(c, &c->nodes[ci], outs[i]);
        }
        if (!k) c->nodes[ci].fn_check = checks;
        for (int b = first_body; !k && b < c->n; b++) {
            if (read[b - first_body]) continue;
            snprintf(spec, sizeof spec, "^%s", c->nodes[b].name);
            k = add_input(c, &c->nodes[ci], spec);
        }
        if (!k && nout) k = add_type_attr(c, &c->nodes[ci], "T", types, nout, nout > 1);
        for (int i = 0; i < nout; i++) vg__free(outs[i]);
        vg__free(outs);
        vg__free(read);
        if (k) goto out;
    }
out:
    vg__free(call);
    vg__strmap_free(&local);
    fn_free(&fn);
    return k;
}

/* NodeDefs written in the library's function bodies. */
static int64_t library_node_defs(const ctx *c) {
    vg__pb_reader r, fr;
    vg__pb_field f, ff;
    int64_t n = 0;
    vg__pb_reader_init(&r, c->library, c->library_len);
    while (vg__pb_next(&r, &f, NULL) == VG_OK) {
        if (f.number != 1 || f.wiretype != VG__PB_LEN) continue;
        vg__pb_reader_init(&fr, f.data, f.len);
        while (vg__pb_next(&fr, &ff, NULL) == VG_OK) n += ff.number == 3 && ff.wiretype == VG__PB_LEN;
    }
    return n;
}

/* Inlines every function call of the GraphDef (calls inside bodies too) and adds
 * the new nodes to the name map. Calls nested in calls multiply: the nodes added are
 * capped (max_inlined_nodes; by default 4 per NodeDef written, at least 4096), so
 * that a small hostile GraphDef cannot make a huge graph. */
static vg_code inline_functions(ctx *c, int64_t max_inlined) {
    if (!c->library) return VG_OK;
    int64_t written = c->n + library_node_defs(c);
    if (max_inlined <= 0) max_inlined = written * 4 > 4096 ? written * 4 : 4096;
    int base = c->n;
    for (int i = 0; i < c->n; i++) {
        if (c->n - base > max_inlined)
            return vg_status_set(c->st, VG_RESOURCE_EXHAUSTED,
                                 "%s: inlining the GraphDef's function calls would add more than %lld nodes "
                                 "(vg_import_options.max_inlined_nodes; calls nested in calls multiply)",
                                 c->src, (long long)max_inlined);
        char *fname;
        rattr *attrs;
        int nattrs;
        vg_code k = call_target(c, &c->nodes[i], &fname, &attrs, &nattrs);
        if (!k && fname) {
            int before = c->n;
            k = inline_call(c, i, fname, attrs, nattrs);
            for (int j = before; !k && j < c->n; j++) {
                bool found = false;
                vg__strmap_get(&c->by_name, c->nodes[j].name, &found);
                if (found)
                    k = vg_status_set(c->st, VG_INVALID_ARGUMENT,
                                      "%s: node '%s' of an inlined function call clashes with a node of the GraphDef",
                                      c->src, c->nodes[j].name);
                else if (!vg__strmap_put(&c->by_name, c->nodes[j].name, (void *)(intptr_t)(j + 1)))
                    k = oom(c, "name map");
            }
        }
        vg__free(fname);
        vg__free(attrs);
        if (k) return k;
    }
    return VG_OK;
}

static vg_code report_missing(ctx *c, const missing *m, int nm) {
    char msg[VG_STATUS_MSG_MAX];
    size_t pos = 0;
    int total = 0;
    for (int j = 0; j < nm; j++) total += m[j].count;
    pos += (size_t)snprintf(msg, sizeof msg, "%s: %d op type(s) vigil cannot run (%d node(s)): ", c->src, nm, total);
    for (int j = 0; j < nm && pos < sizeof msg; j++) {
        pos += (size_t)snprintf(msg + pos, sizeof msg - pos, "%s%s (node%s", j ? "; " : "", m[j].type,
                                m[j].count > 1 ? "s" : "");
        int shown = 0;
        for (int i = m[j].first; i < c->n && pos < sizeof msg; i++) {
            if (strcmp(c->nodes[i].orig_op, m[j].type) != 0 || vg__registry_find(c->nodes[i].op)) continue;
            if (shown == 3) {
                pos += (size_t)snprintf(msg + pos, sizeof msg - pos, ", ... %d more", m[j].count - 3);
                break;
            }
            pos += (size_t)snprintf(msg + pos, sizeof msg - pos, "%s'%s'", shown ? ", " : " ", c->nodes[i].name);
            shown++;
        }
        if (pos < sizeof msg) pos += (size_t)snprintf(msg + pos, sizeof msg - pos, ")");
    }
    if (pos >= sizeof msg) memcpy(msg + sizeof msg - 5, "...", 4);
    return vg_status_set(c->st, VG_UNIMPLEMENTED, "%s", msg);
}

/* ------------------------------------------------------------------------ */
/* input specs */

/* Splits "^name", "name:k", "name" into name (borrowed in a copy), index (-1 = control). */
static bool split_input(const char *spec, char *name, size_t cap, int *index) {
    bool ctrl = spec[0] == '^';
    if (ctrl) spec++;
    const char *colon = strrchr(spec, ':');
    size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
    if (n == 0 || n >= cap) return false;
    memcpy(name, spec, n);
    name[n] = 0;
    *index = 0;
    if (colon) {
        if (ctrl || !colon[1]) return false;
        long v = 0;
        for (const char *q = colon + 1; *q; q++) {
            if (*q < '0' || *q > '9' || v > 100000000) return false;
            v = v * 10 + (*q - '0');
        }
        *index = (int)v;
    }
    if (ctrl) *index = -1;
    return true;
}

typedef struct imap {
    const char *key;
    char name[512];
    int index; /* -1: control */
    vg_output value;
    bool used;
} imap;

static int find_map(imap *maps, int n, const char *name, int index) {
    for (int i = 0; i < n; i++)
        if (maps[i].index == index && strcmp(maps[i].name, name) == 0) return i;
    return -1;
}

/* ------------------------------------------------------------------------ */
/* attr decoding */

typedef struct actx {
    ctx *c;
    const char *node;
    char attr[128];
    int64_t max_bytes;
    bool scalar_shape_is_unknown; /* Placeholder of a GraphDef producer <= 21 */
    const inode *nd; /* the node (func attrs of dataset ops) */
    vg_output in0;   /* its first data input ({NULL} when none) */
} actx;

static vg_code attr_err(actx *a, vg_code code, const char *fmt, const char *detail) {
    char d[256];
    snprintf(d, sizeof d, fmt, detail);
    return vg_status_set(a->c->st, code, "%s: node '%s' attr '%s': %s", a->c->src, a->node, a->attr, d);
}

static vg_code to_dtype(actx *a, uint64_t v, vg_dtype *dt) {
    if (v == 21 && a->nd &&
        (strcmp(a->nd->op, "Identity") == 0 || (strstr(a->nd->op, "Dataset") && !strcmp(a->attr, "output_types")))) {
        /* DT_VARIANT through an Identity (a dataset a tf.data function returns: TF's
         * FunctionDefs end in Identity nodes) or as a dataset op's element type (a
         * window's components): vigil's dataset handle */
        *dt = VG_RESOURCE;
        return VG_OK;
    }
    int t = (int)(v % 100); /* ref types (DT_FLOAT_REF = 101) as their base */
    if (v >= 200 || (t != VG_FLOAT && t != VG_DOUBLE && t != VG_INT32 && t != VG_UINT8 && t != VG_STRING &&
                     t != VG_INT64 && t != VG_BOOL && t != VG_HALF && t != VG_BFLOAT16 && t != VG_RESOURCE &&
                     t != VG_COMPLEX64 && t != VG_COMPLEX128)) {
        const char *nm = vg__pbtxt_dtype_name(t);
        char buf[32];
        snprintf(buf, sizeof buf, "%d", t);
        return attr_err(a, VG_UNIMPLEMENTED, "dtype %s is not supported by vigil", nm ? nm : buf);
    }
    *dt = (vg_dtype)t;
    return VG_OK;
}

static vg_code decode_shape(actx *a, const uint8_t *p, size_t n, vg_shape *s) {
    vg__pb_reader r, dr;
    vg__pb_field f, df;
    vg__pb_reader_init(&r, p, n);
    vg_code k;
    memset(s, 0, sizeof *s);
    bool unknown = false;
    while ((k = vg__pb_next(&r, &f, a->c->st)) == VG_OK) {
        if (f.number == 3 && f.wiretype == VG__PB_VARINT) unknown = f.u != 0;
        if (f.number != 2 || f.wiretype != VG__PB_LEN) continue;
        int64_t size = 0;
        vg__pb_reader_init(&dr, f.data, f.len);
        while ((k = vg__pb_next(&dr, &df, a->c->st)) == VG_OK)
            if (df.number == 1 && df.wiretype == VG__PB_VARINT) size = (int64_t)df.u;
        if (k != VG_OUT_OF_RANGE) return pb_err(a->c, k, "TensorShapeProto.dim");
        if (size < -1) return attr_err(a, VG_INVALID_ARGUMENT, "shape has a negative dimension%s", "");
        if (s->ndims == VG_MAX_DIMS)
            return attr_err(a, VG_UNIMPLEMENTED, "shapes of rank > 8 are not supported by vigil%s", "");
        s->dims[s->ndims++] = size;
    }
    if (k != VG_OUT_OF_RANGE) return pb_err(a->c, k, "TensorShapeProto");
    if (unknown) *s = vg_shape_unknown();
    return VG_OK;
}

/* Counts the values of a repeated scalar field occurrence (packed or not). */
static vg_code count_vals(actx *a, const vg__pb_field *f, int wire_unpacked, int64_t *count) {
    if (f->wiretype == wire_unpacked) {
        (*count)++;
        return VG_OK;
    }
    if (f->wiretype != VG__PB_LEN) return attr_err(a, VG_DATA_LOSS, "malformed repeated field%s", "");
    if (wire_unpacked == VG__PB_FIXED32 || wire_unpacked == VG__PB_FIXED64) {
        size_t es = wire_unpacked == VG__PB_FIXED32 ? 4 : 8;
        if (f->len % es) return attr_err(a, VG_DATA_LOSS, "malformed packed field%s", "");
        *count += (int64_t)(f->len / es);
        return VG_OK;
    }
    const uint8_t *q = f->data, *e = f->data + f->len;
    uint64_t v;
    while (q < e) {
        if (!vg__pb_get_varint(&q, e, &v)) return attr_err(a, VG_DATA_LOSS, "malformed packed varints%s", "");
        (*count)++;
    }
    return VG_OK;
}

/* Calls put(i, raw) for each value of an occurrence; raw is the varint or fixed bits. */
static int64_t each_val(const vg__pb_field *f, int wire_unpacked, int64_t at, void (*put)(void *, int64_t, uint64_t),
                        void *arg, int64_t limit) {
    if (f->wiretype == wire_unpacked) {
        if (at < limit) put(arg, at, f->u);
        return at + 1;
    }
    const uint8_t *q = f->data, *e = f->data + f->len;
    while (q < e) {
        uint64_t v;
        if (wire_unpacked == VG__PB_FIXED32) {
            v = vg__get_le32(q);
            q += 4;
        } else if (wire_unpacked == VG__PB_FIXED64) {
            v = vg__get_le64(q);
            q += 8;
        } else if (!vg__pb_get_varint(&q, e, &v)) {
            break;
        }
        if (at < limit) put(arg, at, v);
        at++;
    }
    return at;
}

typedef struct tfill {
    vg_dtype dt;
    uint8_t *data;
} tfill;

static void put_elem(void *arg, int64_t i, uint64_t v) {
    tfill *t = arg;
    switch (t->dt) {
    case VG_FLOAT: {
        uint32_t u = (uint32_t)v;
        memcpy(t->data + 4 * i, &u, 4);
        break;
    }
    case VG_DOUBLE: memcpy(t->data + 8 * i, &v, 8); break;
    case VG_INT32: {
        int32_t x = (int32_t)v;
        memcpy(t->data + 4 * i, &x, 4);
        break;
    }
    case VG_UINT8: t->data[i] = (uint8_t)v; break;
    case VG_INT64: memcpy(t->data + 8 * i, &v, 8); break;
    case VG_BOOL: t->data[i] = v != 0; break;
    case VG_HALF:
    case VG_BFLOAT16: { /* half_val: the bit pattern in the low 16 bits of an int32 */
        uint16_t h = (uint16_t)v;
        memcpy(t->data + 2 * i, &h, 2);
        break;
    }
    default: break;
    }
}

static vg_code decode_tensor(actx *a, const uint8_t *p, size_t n, vg_tensor **out) {
    vg__pb_reader r;
    vg__pb_field f;
    vg_code k;
    uint64_t dtv = 0;
    vg_shape shape = {0};
    const uint8_t *content = NULL;
    size_t content_len = 0;
    bool has_content = false;
    int64_t nvals = 0;
    int typed = 0, wire = 0;
    /* pass 1: dtype, shape, content and the count of typed values */
    vg__pb_reader_init(&r, p, n);
    while ((k = vg__pb_next(&r, &f, a->c->st)) == VG_OK) {
        if (f.number == 1 && f.wiretype == VG__PB_VARINT) dtv = f.u;
        else if (f.number == 2 && f.wiretype == VG__PB_LEN) {
            if ((k = decode_shape(a, f.data, f.len, &shape))) return k;
        } else if (f.number == 4 && f.wiretype == VG__PB_LEN) {
            content = f.data;
            content_len = f.len;
            has_content = true;
        }
    }
    if (k != VG_OUT_OF_RANGE) return pb_err(a->c, k, "TensorProto");
    vg_dtype dt = VG_FLOAT; /* set by to_dtype */
    if ((k = to_dtype(a, dtv, &dt))) return k;
    if (dt == VG_RESOURCE) return attr_err(a, VG_UNIMPLEMENTED, "resource tensors are not supported%s", "");
    switch (dt) {
    case VG_FLOAT: typed = 5; wire = VG__PB_FIXED32; break;
    case VG_DOUBLE: typed = 6; wire = VG__PB_FIXED64; break;
    case VG_INT32: case VG_UINT8: typed = 7; wire = VG__PB_VARINT; break;
    case VG_STRING: typed = 8; wire = VG__PB_LEN; break;
    case VG_INT64: typed = 10; wire = VG__PB_VARINT; break;
    case VG_BOOL: typed = 11; wire = VG__PB_VARINT; break;
    case VG_HALF: case VG_BFLOAT16: typed = 13; wire = VG__PB_VARINT; break;
    case VG_COMPLEX64: typed = 9; wire = VG__PB_FIXED32; break;   /* scomplex_val: re, im, re, im, ... */
    case VG_COMPLEX128: typed = 12; wire = VG__PB_FIXED64; break; /* dcomplex_val */
    default: break;
    }
    /* complex values are counted (and filled) as their real components, two per element */
    int vpe = dt == VG_COMPLEX64 || dt == VG_COMPLEX128 ? 2 : 1;
    vg__pb_reader_init(&r, p, n);
    while ((k = vg__pb_next(&r, &f, a->c->st)) == VG_OK) {
        if (f.number != typed) continue;
        if (dt == VG_STRING) {
            if (f.wiretype != VG__PB_LEN) return attr_err(a, VG_DATA_LOSS, "malformed string_val%s", "");
            nvals++;
        } else if ((k = count_vals(a, &f, wire, &nvals))) {
            return k;
        }
    }
    if (shape.ndims < 0) return attr_err(a, VG_INVALID_ARGUMENT, "tensor has an unknown rank%s", "");
    /* element count and byte size, checked before any allocation */
    int64_t ne = 1;
    size_t es = dt == VG_STRING ? 16 : vg_dtype_size(dt);
    for (int i = 0; i < shape.ndims; i++) {
        int64_t d = shape.dims[i];
        if (d < 0) return attr_err(a, VG_INVALID_ARGUMENT, "tensor has an unknown dimension%s", "");
        if (d > 0 && ne > INT64_MAX / d) return attr_err(a, VG_INVALID_ARGUMENT, "tensor size overflows%s", "");
        ne *= d;
    }
    char sbuf[128];
    vg_shape_str(&shape, sbuf, sizeof sbuf);
    if (ne > a->max_bytes / (int64_t)es) {
        char d[256]; /* 128-byte shape + text + two 20-digit numbers fit */
        snprintf(d, sizeof d, "tensor of shape %s (%lld elements) exceeds the %lld-byte limit", sbuf, (long long)ne,
                 (long long)a->max_bytes);
        return attr_err(a, VG_INVALID_ARGUMENT, "%s", d);
    }
    if (has_content && dt != VG_STRING) {
        if ((uint64_t)content_len != (uint64_t)ne * vg_dtype_size(dt)) {
            char d[256];
            snprintf(d, sizeof d, "tensor_content has %zu bytes, shape %s of %s needs %lld", content_len, sbuf,
                     vg_dtype_name(dt), (long long)ne * (long long)vg_dtype_size(dt));
            return attr_err(a, VG_INVALID_ARGUMENT, "%s", d);
        }
    } else if (nvals > ne * vpe || (vpe == 2 && nvals % 2)) {
        char d[200];
        snprintf(d, sizeof d, "%lld values for shape %s", (long long)nvals, sbuf);
        return attr_err(a, VG_INVALID_ARGUMENT, "%s", d);
    }
    if (!out) return VG_OK; /* validation only */
    vg_status ts;
    vg_tensor *t = vg_tensor_new_zeros(dt, shape.dims, shape.ndims, &ts);
    if (!t) return vg_status_set(a->c->st, ts.code, "%s: node '%s' attr '%s': %s", a->c->src, a->node, a->attr, ts.msg);
    if (ne == 0) {
        *out = t;
        return VG_OK;
    }
    if (dt == VG_STRING) {
        int64_t i = 0;
        const uint8_t *last = NULL;
        size_t last_len = 0;
        vg__pb_reader_init(&r, p, n);
        while (vg__pb_next(&r, &f, a->c->st) == VG_OK) {
            if (f.number != typed) continue;
            if (vg_tensor_set_string(t, i++, (const char *)f.data, f.len, &ts) != VG_OK) goto tfail;
            last = f.data;
            last_len = f.len;
        }
        for (; last && i < ne; i++)
            if (vg_tensor_set_string(t, i, (const char *)last, last_len, &ts) != VG_OK) goto tfail;
    } else if (has_content) {
        memcpy(vg_tensor_data(t), content, content_len);
    } else if (nvals > 0) {
        tfill tf = {dt == VG_COMPLEX64 ? VG_FLOAT : dt == VG_COMPLEX128 ? VG_DOUBLE : dt, vg_tensor_data(t)};
        int64_t at = 0;
        vg__pb_reader_init(&r, p, n);
        while (vg__pb_next(&r, &f, a->c->st) == VG_OK)
            if (f.number == typed) at = each_val(&f, wire, at, put_elem, &tf, ne * vpe);
        at /= vpe;
        /* fewer values than elements: the last value repeats (TF's MakeTensorFromProto) */
        size_t esz = vg_dtype_size(dt);
        for (int64_t i = at; i < ne; i++) memcpy(tf.data + (size_t)i * esz, tf.data + (size_t)(at - 1) * esz, esz);
    }
    *out = t;
    return VG_OK;
tfail:
    vg_tensor_free(t);
    return vg_status_set(a->c->st, ts.code, "%s: node '%s' attr '%s': %s", a->c->src, a->node, a->attr, ts.msg);
}

static vg_attr_type empty_list_type(const char *name) {
    static const char *const types[] = {"dtypes", "component_types", "Tcomponents", "Tin", "Tout", "out_types",
                                        "output_types", "Toutput_types", "T", "Targuments", "Tcaptured", NULL};
    static const char *const shapes[] = {"shapes", "output_shapes", "_output_shapes", "element_shapes", NULL};
    static const char *const strs[] = {"_class", "container_names", NULL};
    for (int i = 0; types[i]; i++)
        if (strcmp(name, types[i]) == 0) return VG_ATTR_TYPE_LIST;
    for (int i = 0; shapes[i]; i++)
        if (strcmp(name, shapes[i]) == 0) return VG_ATTR_SHAPE_LIST;
    for (int i = 0; strs[i]; i++)
        if (strcmp(name, strs[i]) == 0) return VG_ATTR_STRING_LIST;
    return VG_ATTR_INT_LIST;
}

typedef struct dlist {
    int64_t *i;
    float *f;
    vg_dtype *t;
    vg_shape *sh;
    char **s;
    int n;
} dlist;

static void put_i64(void *arg, int64_t i, uint64_t v) { ((int64_t *)arg)[i] = (int64_t)v; }
static void put_f32(void *arg, int64_t i, uint64_t v) {
    uint32_t u = (uint32_t)v;
    memcpy((float *)arg + i, &u, 4);
}
static void put_u64(void *arg, int64_t i, uint64_t v) { ((uint64_t *)arg)[i] = v; }

static void dlist_free(dlist *l) {
    vg__free(l->i);
    vg__free(l->f);
    vg__free(l->t);
    vg__free(l->sh);
    for (int j = 0; l->s && j < l->n; j++) vg__free(l->s[j]);
    vg__free(l->s);
}

/* Decodes a ListValue and sets it on the builder. */
static vg_code apply_list(actx *a, const uint8_t *p, size_t n, vg_op_builder *b) {
    vg__pb_reader r;
    vg__pb_field f;
    vg_code k;
    int64_t cnt[10] = {0};
    vg__pb_reader_init(&r, p, n);
    while ((k = vg__pb_next(&r, &f, a->c->st)) == VG_OK) {
        switch (f.number) {
        case 2: case 7: case 8: case 9: cnt[f.number]++; break;
        case 3: case 5: case 6:
            if ((k = count_vals(a, &f, VG__PB_VARINT, &cnt[f.number]))) return k;
            break;
        case 4:
            if ((k = count_vals(a, &f, VG__PB_FIXED32, &cnt[4]))) return k;
            break;
        default: break;
        }
    }
    if (k != VG_OUT_OF_RANGE) return pb_err(a->c, k, "AttrValue.list");
    int kind = 0, kinds = 0;
    for (int j = 2; j < 10; j++)
        if (cnt[j]) {
            kind = j;
            kinds++;
        }
    if (kinds > 1) return attr_err(a, VG_INVALID_ARGUMENT, "list mixes value kinds%s", "");
    if (kind == 5) return attr_err(a, VG_UNIMPLEMENTED, "bool lists are not supported by vigil%s", "");
    if (kind == 8) return attr_err(a, VG_UNIMPLEMENTED, "tensor lists are not supported by vigil%s", "");
    if (kind == 9) return attr_err(a, VG_UNIMPLEMENTED, "func attrs are not supported (vigil has no functions)%s", "");
    int64_t total = kind ? cnt[kind] : 0;
    if (total > (int64_t)(n + 1)) return attr_err(a, VG_DATA_LOSS, "malformed list%s", ""); /* cannot happen */
    dlist l = {0};
    l.n = (int)total;
    size_t cap = (size_t)(total ? total : 1);
    vg_attr_type at = kind == 2 ? VG_ATTR_STRING_LIST : kind == 3 ? VG_ATTR_INT_LIST : kind == 4 ? VG_ATTR_FLOAT_LIST
                    : kind == 6 ? VG_ATTR_TYPE_LIST : kind == 7 ? VG_ATTR_SHAPE_LIST : empty_list_type(a->attr);
    bool ok = true;
    switch (at) {
    case VG_ATTR_INT_LIST: ok = (l.i = vg__malloc(cap * sizeof(int64_t))) != NULL; break;
    case VG_ATTR_FLOAT_LIST: ok = (l.f = vg__malloc(cap * sizeof(float))) != NULL; break;
    case VG_ATTR_TYPE_LIST: ok = (l.t = vg__malloc(cap * sizeof(vg_dtype))) && (l.i = vg__malloc(cap * 8)); break;
    case VG_ATTR_SHAPE_LIST: ok = (l.sh = vg__calloc(cap, sizeof(vg_shape))) != NULL; break;
    case VG_ATTR_STRING_LIST: ok = (l.s = vg__calloc(cap, sizeof(char *))) != NULL; break;
    default: break;
    }
    if (!ok) {
        dlist_free(&l);
        return oom(a->c, "attr list");
    }
    int64_t at_i = 0;
    vg__pb_reader_init(&r, p, n);
    while (k == VG_OUT_OF_RANGE && vg__pb_next(&r, &f, a->c->st) == VG_OK) {
        if (f.number != kind) continue;
        switch (kind) {
        case 2:
            if (memchr(f.data, 0, f.len)) {
                k = attr_err(a, VG_INVALID_ARGUMENT, "list string contains a NUL byte%s", "");
                break;
            }
            if (!(l.s[at_i++] = vg__strndup((const char *)f.data, f.len))) k = oom(a->c, "attr string");
            break;
        case 3: at_i = each_val(&f, VG__PB_VARINT, at_i, put_i64, l.i, total); break;
        case 4: at_i = each_val(&f, VG__PB_FIXED32, at_i, put_f32, l.f, total); break;
        case 6: at_i = each_val(&f, VG__PB_VARINT, at_i, put_u64, l.i, total); break;
        case 7:
            if (f.wiretype != VG__PB_LEN) {
                k = attr_err(a, VG_DATA_LOSS, "malformed shape list%s", "");
                break;
            }
            {
                vg_code kk = decode_shape(a, f.data, f.len, &l.sh[at_i++]);
                if (kk) k = kk;
            }
            break;
        default: break;
        }
    }
    if (k == VG_OUT_OF_RANGE && kind == 6)
        for (int j = 0; j < l.n && k == VG_OUT_OF_RANGE; j++) {
            vg_code kk = to_dtype(a, (uint64_t)l.i[j], &l.t[j]);
            if (kk) k = kk;
        }
    if (k != VG_OUT_OF_RANGE) {
        dlist_free(&l);
        return k;
    }
    switch (b ? at : VG_ATTR_NONE) {
    case VG_ATTR_INT_LIST: vg_op_builder_set_attr_int_list(b, a->attr, l.i, l.n); break;
    case VG_ATTR_FLOAT_LIST: vg_op_builder_set_attr_float_list(b, a->attr, l.f, l.n); break;
    case VG_ATTR_TYPE_LIST: vg_op_builder_set_attr_type_list(b, a->attr, l.t, l.n); break;
    case VG_ATTR_SHAPE_LIST: vg_op_builder_set_attr_shape_list(b, a->attr, l.sh, l.n); break;
    case VG_ATTR_STRING_LIST: vg_op_builder_set_attr_string_list(b, a->attr, (const char *const *)l.s, l.n); break;
    default: break;
    }
    dlist_free(&l);
    return VG_OK;
}

/* Rewrites "loc:@x" colocation entries of _class for the prefix, then sets the attr. */
static vg_code apply_class(actx *a, const uint8_t *p, size_t n, const char *prefix, vg_op_builder *b) {
    if (!prefix || !*prefix) return apply_list(a, p, n, b);
    vg__pb_reader r;
    vg__pb_field f;
    vg_code k;
    int cnt = 0;
    vg__pb_reader_init(&r, p, n);
    while ((k = vg__pb_next(&r, &f, a->c->st)) == VG_OK)
        if (f.number == 2 && f.wiretype == VG__PB_LEN) cnt++;
    if (k != VG_OUT_OF_RANGE) return pb_err(a->c, k, "_class");
    char **s = vg__calloc((size_t)(cnt ? cnt : 1), sizeof(char *));
    if (!s) return oom(a->c, "_class");
    int i = 0;
    vg__pb_reader_init(&r, p, n);
    k = VG_OK;
    while (!k && vg__pb_next(&r, &f, a->c->st) == VG_OK) {
        if (f.number != 2 || f.wiretype != VG__PB_LEN) continue;
        size_t pl = strlen(prefix);
        bool loc = f.len >= 5 && memcmp(f.data, "loc:@", 5) == 0;
        size_t need = f.len + (loc ? pl + 1 : 0) + 1;
        if (!(s[i] = vg__malloc(need))) {
            k = oom(a->c, "_class");
            break;
        }
        if (loc) snprintf(s[i], need, "loc:@%s/%.*s", prefix, (int)(f.len - 5), (const char *)f.data + 5);
        else snprintf(s[i], need, "%.*s", (int)f.len, (const char *)f.data);
        i++;
    }
    if (!k && b) vg_op_builder_set_attr_string_list(b, "_class", (const char *const *)s, i);
    for (int j = 0; j < i; j++) vg__free(s[j]);
    vg__free(s);
    return k;
}

/* A func attr (NameAttrList {name = 1, attr = 2}): a dataset op's function in the
 * library, built by the data layer's hook into a function graph named by a string
 * attr (fn_hooks.h). Other ops' func attrs are refused. */
static vg_code apply_func(actx *a, const uint8_t *p, size_t n, vg_op_builder *b) {
    vg__pb_reader r;
    vg__pb_field f;
    vg_code k;
    char fname[512] = "";
    bool attrs = false;
    vg__pb_reader_init(&r, p, n);
    while ((k = vg__pb_next(&r, &f, a->c->st)) == VG_OK) {
        if (f.number == 1 && f.wiretype == VG__PB_LEN && f.len < sizeof fname) {
            memcpy(fname, f.data, f.len);
            fname[f.len] = 0;
        } else if (f.number == 2) {
            attrs = true;
        }
    }
    if (k != VG_OUT_OF_RANGE) return pb_err(a->c, k, "NameAttrList");
    const vg__fn_hooks *h = vg__graph_fn_hooks();
    if (!h || !a->nd || !*fname || !a->c->library || !is_library_function(a->c, fname))
        return attr_err(a, VG_UNIMPLEMENTED,
                        "func attrs are supported only for tf.data ops naming a function of the GraphDef's "
                        "library (function '%s')", fname);
    if (attrs)
        return attr_err(a, VG_UNIMPLEMENTED, "function '%s' is instantiated with attrs (polymorphic), which "
                        "vigil's dataset functions do not support", fname);
    if (!b) return VG_OK; /* checked again when built */
    /* the captured values: Targuments (map, filter, ...), T<attr>_other_arguments
     * (GroupByWindowDataset's key_func, reduce_func, window_size_func) */
    int64_t ncap = rattr_count(a->nd, "Targuments", true);
    if (ncap < 0) {
        char tname[160];
        snprintf(tname, sizeof tname, "T%s_other_arguments", a->attr);
        ncap = rattr_count(a->nd, tname, true);
    }
    char key[600];
    k = h->import(a->c->g, a->nd->op, a->attr, a->in0, a->c->library, a->c->library_len, fname,
                  ncap < 0 ? 0 : (int)ncap, key, sizeof key, a->c->st);
    if (k == VG_NOT_FOUND)
        return attr_err(a, VG_UNIMPLEMENTED, "func attrs of this op type are not supported (function '%s')", fname);
    if (k) {
        vg_status_prefix(a->c->st, "%s: node '%s' attr '%s' (function '%s'): ", a->c->src, a->node, a->attr, fname);
        return k;
    }
    vg_op_builder_set_attr_string(b, a->attr, key, strlen(key));
    return VG_OK;
}

static vg_code apply_attr(actx *a, const rattr *ra, const char *prefix, vg_op_builder *b) {
    if (ra->key_len == 0 || ra->key_len >= sizeof a->attr || memchr(ra->key, 0, ra->key_len))
        return vg_status_set(a->c->st, VG_INVALID_ARGUMENT, "%s: node '%s' has an attr with an invalid name",
                             a->c->src, a->node);
    memcpy(a->attr, ra->key, ra->key_len);
    a->attr[ra->key_len] = 0;
    if (strcmp(a->attr, "_output_shapes") == 0) return VG_OK;
    vg__pb_reader r;
    vg__pb_field f, last = {0};
    vg_code k;
    if (!ra->val) return VG_OK; /* no value: attr unset */
    vg__pb_reader_init(&r, ra->val, ra->val_len);
    while ((k = vg__pb_next(&r, &f, a->c->st)) == VG_OK)
        if (f.number >= 1 && f.number <= 10) last = f; /* oneof: the last member set wins */
    if (k != VG_OUT_OF_RANGE) return pb_err(a->c, k, "AttrValue");
    bool len_kind = last.number == 1 || last.number == 2 || last.number == 7 || last.number == 8 ||
                    last.number == 9 || last.number == 10;
    if (last.number && len_kind != (last.wiretype == VG__PB_LEN))
        return attr_err(a, VG_DATA_LOSS, "malformed AttrValue%s", "");
    switch (last.number) {
    case 0: return VG_OK;
    case 1:
        if (strcmp(a->attr, "_class") == 0) return apply_class(a, last.data, last.len, prefix, b);
        return apply_list(a, last.data, last.len, b);
    case 2: if (b) vg_op_builder_set_attr_string(b, a->attr, (const char *)last.data, last.len); return VG_OK;
    case 3:
        if (last.wiretype != VG__PB_VARINT) return attr_err(a, VG_DATA_LOSS, "malformed int attr%s", "");
        if (b) vg_op_builder_set_attr_int(b, a->attr, (int64_t)last.u);
        return VG_OK;
    case 4:
        if (last.wiretype != VG__PB_FIXED32) return attr_err(a, VG_DATA_LOSS, "malformed float attr%s", "");
        if (b) vg_op_builder_set_attr_float(b, a->attr, vg__pb_as_float(&last));
        return VG_OK;
    case 5:
        if (last.wiretype != VG__PB_VARINT) return attr_err(a, VG_DATA_LOSS, "malformed bool attr%s", "");
        if (b) vg_op_builder_set_attr_bool(b, a->attr, last.u != 0);
        return VG_OK;
    case 6: {
        if (last.wiretype != VG__PB_VARINT) return attr_err(a, VG_DATA_LOSS, "malformed type attr%s", "");
        vg_dtype dt = VG_FLOAT; /* set by to_dtype */
        if ((k = to_dtype(a, last.u, &dt))) return k;
        if (b) vg_op_builder_set_attr_type(b, a->attr, dt);
        return VG_OK;
    }
    case 7: {
        vg_shape s;
        if ((k = decode_shape(a, last.data, last.len, &s))) return k;
        /* TF: "Placeholder has legacy behavior where we cannot tell the difference
         * between a scalar shape attribute and 'unknown shape'" (graph_def_version <= 21) */
        if (a->scalar_shape_is_unknown && s.ndims == 0 && strcmp(a->attr, "shape") == 0) s = vg_shape_unknown();
        if (b) vg_op_builder_set_attr_shape(b, a->attr, s);
        return VG_OK;
    }
    case 8: {
        vg_tensor *t = NULL;
        if ((k = decode_tensor(a, last.data, last.len, b ? &t : NULL))) return k;
        if (b) vg_op_builder_set_attr_tensor(b, a->attr, t);
        vg_tensor_free(t);
        return VG_OK;
    }
    case 9: return attr_err(a, VG_UNIMPLEMENTED, "placeholder attrs (function bodies) are not supported%s", "");
    default: return apply_func(a, last.data, last.len, b);
    }
}

/* ------------------------------------------------------------------------ */
/* the import */

static vg_code do_import(vg_graph *g, const void *bytes, size_t len, const vg_import_options *o,
                         const char *omit_scope, vg_status *st);

vg_code vg_graph_import_graph_def(vg_graph *g, const void *bytes, size_t len, const vg_import_options *opts,
                                  vg_status *st) {
    return vg__import_graph_def_ex(g, bytes, len, opts, NULL, st);
}

vg_code vg__import_graph_def_ex(vg_graph *g, const void *bytes, size_t len, const vg_import_options *opts,
                                const char *omit_scope, vg_status *st) {
    vg_import_options none = {0};
    const vg_import_options *o = opts ? opts : &none;
    if (!g || (!bytes && len))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_graph_import_graph_def: NULL graph or bytes");
    const char *src = o->source ? o->source : "GraphDef";
    bool text = o->format == VG_IMPORT_TEXT || (o->format == VG_IMPORT_AUTO && vg__pbtxt_looks_like_text(bytes, len));
    if (!text) return do_import(g, bytes ? bytes : "", len, o, omit_scope, st);
    vg__pb_buf bin;
    vg__pb_init(&bin);
    vg_code k = vg__pbtxt_to_binary(bytes, len, VG__PBTXT_GRAPH_DEF, &bin, st);
    if (k) {
        vg_status_prefix(st, "%s: ", src);
    } else {
        vg_import_options o2 = *o;
        o2.format = VG_IMPORT_BINARY;
        k = do_import(g, bin.data ? bin.data : (const uint8_t *)"", bin.len, &o2, omit_scope, st);
    }
    vg__pb_free(&bin);
    return k;
}

/* "prefix/name" or "name"; false when it does not fit. */
static bool join_name(char *out, size_t cap, const char *prefix, const char *name) {
    int r = prefix && *prefix ? snprintf(out, cap, "%s/%s", prefix, name) : snprintf(out, cap, "%s", name);
    return r >= 0 && (size_t)r < cap;
}

static void heap_push(int *h, int *n, int v) {
    int i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > v) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static int heap_pop(int *h, int *n) {
    int top = h[0], v = h[--(*n)], i = 0;
    for (;;) {
        int l = 2 * i + 1, m = l + 1 < *n && h[l + 1] < h[l] ? l + 1 : l;
        if (l >= *n || h[m] >= v) break;
        h[i] = h[m];
        i = m;
    }
    h[i] = v;
    return top;
}

static vg_code do_import(vg_graph *g, const void *bytes, size_t len, const vg_import_options *o,
                         const char *omit_scope, vg_status *st) {
    ctx c;
    memset(&c, 0, sizeof c);
    c.omit_scope = omit_scope;
    c.src = o->source ? o->source : "GraphDef";
    c.st = st;
    c.g = g;
    vg__strmap_init(&c.by_name);
    imap *maps = NULL;
    missing *miss = NULL;
    int *order = NULL;
    vg_code k = VG_OK;
    const char *prefix = o->prefix && *o->prefix ? o->prefix : NULL;
    int64_t max_bytes = o->max_tensor_bytes > 0 ? o->max_tensor_bytes : DEFAULT_MAX_TENSOR_BYTES;

    if ((k = vg_graph_status(g, st))) goto done;
    if (vg_graph_finalized(g)) {
        k = vg_status_set(st, VG_FAILED_PRECONDITION, "Graph is finalized and cannot be modified.");
        goto done;
    }
    if ((k = parse_graph(&c, bytes, len))) goto done;
    if ((k = check_versions(&c))) goto done;
    if ((k = inline_functions(&c, o->max_inlined_nodes))) goto done;

    /* op types: all missing ones in one message */
    int nmiss = 0;
    if ((k = collect_missing(&c, &miss, &nmiss))) goto done;
    if (nmiss) {
        k = report_missing(&c, miss, nmiss);
        goto done;
    }

    /* input_map */
    if (o->n_input_map > 0) {
        maps = vg__calloc((size_t)o->n_input_map, sizeof *maps);
        if (!maps) {
            k = oom(&c, "input map");
            goto done;
        }
    }
    for (int i = 0; i < o->n_input_map; i++) {
        maps[i].key = o->input_map_keys[i];
        if (!o->input_map_keys[i] ||
            !split_input(o->input_map_keys[i], maps[i].name, sizeof maps[i].name, &maps[i].index) ||
            !o->input_map_values[i].op || vg_op_graph(o->input_map_values[i].op) != g) {
            k = vg_status_set(st, VG_INVALID_ARGUMENT, "%s: input_map entry %d ('%s') is invalid", c.src, i,
                              o->input_map_keys[i] ? o->input_map_keys[i] : "(null)");
            goto done;
        }
        maps[i].value = o->input_map_values[i];
    }

    /* resolve inputs */
    for (int i = 0; i < c.n; i++) {
        inode *nd = &c.nodes[i];
        if (nd->ninputs) {
            nd->in_node = vg__malloc((size_t)nd->ninputs * sizeof(int));
            if (!nd->in_node) {
                k = oom(&c, "inputs");
                goto done;
            }
        }
        bool seen_ctrl = false;
        for (int j = 0; j < nd->ninputs; j++) {
            char name[512];
            int index;
            if (!split_input(nd->inputs[j], name, sizeof name, &index)) {
                k = vg_status_set(st, VG_INVALID_ARGUMENT, "%s: node '%s': malformed input '%s'", c.src, nd->name,
                                  nd->inputs[j]);
                goto done;
            }
            if (index >= 0 && seen_ctrl) {
                k = vg_status_set(st, VG_INVALID_ARGUMENT,
                                  "%s: node '%s': data input '%s' follows a control input", c.src, nd->name,
                                  nd->inputs[j]);
                goto done;
            }
            if (index < 0) seen_ctrl = true;
            int m = find_map(maps, o->n_input_map, name, index);
            if (m >= 0) {
                maps[m].used = true;
                nd->in_node[j] = -1 - m;
                continue;
            }
            int src = (int)(intptr_t)vg__strmap_get(&c.by_name, name, NULL) - 1;
            if (src < 0) {
                k = vg_status_set(st, VG_INVALID_ARGUMENT,
                                  "%s: node '%s': input '%s' refers to node '%s', which is not in the GraphDef",
                                  c.src, nd->name, nd->inputs[j], name);
                goto done;
            }
            nd->in_node[j] = src;
            /* TF's importer: a Merge waits for its non-back-edge inputs only; the edge
             * from a NextIteration is set once every node is built */
            if (j < 64 && index >= 0 && strcmp(nd->op, "Merge") == 0 && c.nodes[src].op &&
                strcmp(c.nodes[src].op, "NextIteration") == 0) {
                nd->back |= 1ull << j;
                continue;
            }
            nd->pending++;
        }
    }
    for (int i = 0; i < o->n_input_map; i++)
        if (!maps[i].used && (int)(intptr_t)vg__strmap_get(&c.by_name, maps[i].name, NULL) == 0) {
            k = vg_status_set(st, VG_INVALID_ARGUMENT,
                              "%s: Attempted to map inputs that were not found in graph_def: [%s]", c.src,
                              maps[i].key);
            goto done;
        }

    /* return elements exist? (checked before building) */
    for (int i = 0; i < o->n_return_tensors + o->n_return_ops; i++) {
        bool ten = i < o->n_return_tensors;
        const char *spec = ten ? o->return_tensors[i] : o->return_ops[i - o->n_return_tensors];
        char name[512];
        int index = 0;
        if (!spec || (ten ? !split_input(spec, name, sizeof name, &index) || index < 0
                          : snprintf(name, sizeof name, "%s", spec) >= (int)sizeof name)) {
            k = vg_status_set(st, VG_INVALID_ARGUMENT, "%s: bad return element '%s'", c.src, spec ? spec : "(null)");
            goto done;
        }
        if (!vg__strmap_get(&c.by_name, name, NULL)) {
            k = vg_status_set(st, VG_INVALID_ARGUMENT, "%s: Requested return %s '%s' not found in graph def", c.src,
                              ten ? "tensor" : "node", spec);
            goto done;
        }
    }

    /* topological order (Kahn), creation order kept among ready nodes */
    order = vg__malloc((size_t)(c.n ? c.n : 1) * sizeof(int));
    int *users_n = vg__calloc((size_t)(c.n ? c.n : 1), sizeof(int));
    if (!order || !users_n) {
        vg__free(users_n);
        k = oom(&c, "node order");
        goto done;
    }
    /* users as a CSR adjacency */
    for (int i = 0; i < c.n; i++)
        for (int j = 0; j < c.nodes[i].ninputs; j++)
            if (c.nodes[i].in_node[j] >= 0 && !(j < 64 && ((c.nodes[i].back >> j) & 1))) users_n[c.nodes[i].in_node[j]]++;
    int64_t edges = 0;
    for (int i = 0; i < c.n; i++) edges += users_n[i];
    int *start = vg__malloc((size_t)(c.n + 1) * sizeof(int));
    int *adj = vg__malloc((size_t)(edges ? edges : 1) * sizeof(int));
    if (!start || !adj) {
        vg__free(users_n);
        vg__free(start);
        vg__free(adj);
        k = oom(&c, "node order");
        goto done;
    }
    start[0] = 0;
    for (int i = 0; i < c.n; i++) start[i + 1] = start[i] + users_n[i];
    for (int i = 0; i < c.n; i++) users_n[i] = start[i];
    for (int i = 0; i < c.n; i++)
        for (int j = 0; j < c.nodes[i].ninputs; j++)
            if (c.nodes[i].in_node[j] >= 0 && !(j < 64 && ((c.nodes[i].back >> j) & 1)))
                adj[users_n[c.nodes[i].in_node[j]]++] = i;
    /* ready nodes in a min-heap by GraphDef index (users_n reused as the heap), so a
     * GraphDef already in topological order keeps its order */
    int *heap = users_n, nheap = 0, tail = 0;
    for (int i = 0; i < c.n; i++)
        if (c.nodes[i].pending == 0) heap_push(heap, &nheap, i);
    while (nheap > 0) {
        int u = heap_pop(heap, &nheap);
        order[tail++] = u;
        for (int e = start[u]; e < start[u + 1]; e++)
            if (--c.nodes[adj[e]].pending == 0) heap_push(heap, &nheap, adj[e]);
    }
    vg__free(users_n);
    vg__free(start);
    vg__free(adj);
    if (tail < c.n) {
        int bad = 0;
        while (c.nodes[bad].pending == 0) bad++;
        k = vg_status_set(st, VG_INVALID_ARGUMENT,
                          "%s: GraphDef contains a cycle: node '%s' (%s) depends on itself through its inputs "
                          "(%d node(s) in or after cycles)",
                          c.src, c.nodes[bad].name, c.nodes[bad].orig_op, c.n - tail);
        goto done;
    }

    /* every attr decodes (kinds, dtypes, tensor sizes) before anything is built */
    for (int i = 0; i < c.n; i++) {
        inode *nd = &c.nodes[i];
        actx a = {&c, nd->name, "", max_bytes, false, nd, {NULL, 0}};
        for (int j = 0; j < nd->nattrs; j++)
            if ((k = apply_attr(&a, &nd->attrs[j], prefix, NULL))) goto done;
    }

    /* names must be free in the graph */
    char scope_full[1024];
    for (int i = 0; i < c.n; i++) {
        char nm[1024];
        if (!join_name(nm, sizeof nm, prefix, c.nodes[i].name) ||
            !join_name(scope_full, sizeof scope_full, vg_graph_scope(g), nm)) {
            k = vg_status_set(st, VG_INVALID_ARGUMENT, "%s: node name '%s' is too long", c.src, c.nodes[i].name);
            goto done;
        }
        if (vg_graph_op_by_name(g, scope_full)) {
            k = vg_status_set(st, VG_INVALID_ARGUMENT,
                              "%s: node '%s': an op named '%s' already exists in the graph (use a prefix)", c.src,
                              c.nodes[i].name, scope_full);
            goto done;
        }
    }

    /* build */
    for (int oi = 0; oi < c.n; oi++) {
        inode *nd = &c.nodes[order[oi]];
        char nm[1024];
        join_name(nm, sizeof nm, prefix, nd->name);
        vg_op_builder *b = vg_op_builder_new(g, nd->op, nm);
        if (!b) {
            k = oom(&c, "op builder");
            goto done;
        }
        bool concat = strcmp(nd->orig_op, "Concat") == 0 && strcmp(nd->op, "ConcatV2") == 0;
        int ndata = 0;
        vg_output in0 = {NULL, 0};
        while (ndata < nd->ninputs && nd->inputs[ndata][0] != '^') ndata++;
        for (int jj = 0; jj < ndata; jj++) {
            /* Concat(concat_dim, values...) -> ConcatV2(values..., axis) */
            int j = concat ? (jj + 1) % ndata : jj;
            vg_output in;
            if (nd->in_node[j] < 0) {
                in = maps[-1 - nd->in_node[j]].value;
            } else if (j < 64 && ((nd->back >> j) & 1)) {
                /* back edge: a stand-in of the same node's first forward input for now */
                int f = 0;
                while (f < ndata && f < 64 && ((nd->back >> f) & 1)) f++;
                if (f >= ndata || nd->in_node[f] < 0) {
                    vg_op_builder_free(b);
                    k = vg_status_set(st, VG_INVALID_ARGUMENT, "%s: Merge '%s' has only back-edge inputs", c.src,
                                      nd->name);
                    goto done;
                }
                char name[512];
                int index;
                split_input(nd->inputs[f], name, sizeof name, &index);
                in = vg_out(c.nodes[nd->in_node[f]].built, index);
            } else {
                char name[512];
                int index;
                split_input(nd->inputs[j], name, sizeof name, &index);
                in = vg_out(c.nodes[nd->in_node[j]].built, index);
                if (j < 64 && ((nd->fn_check >> j) & 1) && vg_op_num_outputs(in.op) > 1 &&
                    !is_list_out_op(c.nodes[nd->in_node[j]].op)) {
                    vg_op_builder_free(b);
                    k = vg_status_set(st, VG_UNIMPLEMENTED,
                                      "%s: node '%s': input '%s' names an output of '%s' (%s) inside an inlined "
                                      "function by its argument name, and vigil does not know the output "
                                      "argument names of %s",
                                      c.src, nd->name, nd->inputs[j], name, c.nodes[nd->in_node[j]].op,
                                      c.nodes[nd->in_node[j]].op);
                    goto done;
                }
                if (index >= vg_op_num_outputs(in.op)) {
                    vg_op_builder_free(b);
                    k = vg_status_set(st, VG_INVALID_ARGUMENT,
                                      "%s: node '%s': input '%s' refers to output %d of node '%s', which has %d "
                                      "output(s)",
                                      c.src, nd->name, nd->inputs[j], index, name, vg_op_num_outputs(in.op));
                    goto done;
                }
            }
            vg_op_builder_add_input(b, in);
            if (j == 0) in0 = in;
        }
        for (int j = ndata; j < nd->ninputs; j++) {
            vg_op *dep = nd->in_node[j] < 0 ? maps[-1 - nd->in_node[j]].value.op : c.nodes[nd->in_node[j]].built;
            vg_op_builder_add_control_input(b, dep);
        }
        actx a = {&c, nd->name, "", max_bytes,
                  c.producer <= 21 && (strcmp(nd->op, "Placeholder") == 0 || strcmp(nd->op, "PlaceholderV2") == 0),
                  nd, in0};
        for (int j = 0; j < nd->nattrs; j++) {
            if ((k = apply_attr(&a, &nd->attrs[j], prefix, b))) {
                vg_op_builder_free(b);
                goto done;
            }
        }
        if (concat) vg_op_builder_set_attr_type(b, "Tidx", VG_INT32);
        if (nd->device && *nd->device && !o->clear_devices) vg_op_builder_set_device(b, nd->device);
        nd->built = vg_op_builder_finish(b);
        if (!nd->built) {
            k = vg_graph_status(g, st);
            if (!k) k = vg_status_set(st, VG_INTERNAL, "building node '%s' failed", nd->name);
            vg_status_prefix(st, "%s: node '%s': ", c.src, nd->name);
            goto done;
        }
        if ((k = check_required_type_attr(&c, nd))) goto done;
        join_name(scope_full, sizeof scope_full, vg_graph_scope(g), nm);
        if (strcmp(vg_op_name(nd->built), scope_full) != 0) {
            k = vg_status_set(st, VG_INVALID_ARGUMENT, "%s: node '%s' was renamed '%s' (a name clash in the graph)",
                              c.src, nd->name, vg_op_name(nd->built));
            goto done;
        }
    }

    /* loop back edges */
    for (int i = 0; i < c.n; i++) {
        inode *nd = &c.nodes[i];
        for (int j = 0; nd->back && j < 64 && j < nd->ninputs; j++) {
            if (!((nd->back >> j) & 1)) continue;
            char name[512];
            int index;
            split_input(nd->inputs[j], name, sizeof name, &index);
            vg_op *src = c.nodes[nd->in_node[j]].built;
            if (index >= src->noutputs || src->out_dtypes[index] != nd->built->out_dtypes[0]) {
                k = vg_status_set(st, VG_INVALID_ARGUMENT, "%s: node '%s': back edge '%s' does not match its dtype",
                                  c.src, nd->name, nd->inputs[j]);
                goto done;
            }
            nd->built->inputs[j] = vg_out(src, index);
        }
    }

    /* return elements */
    for (int i = 0; i < o->n_return_tensors; i++) {
        char name[512];
        int index;
        split_input(o->return_tensors[i], name, sizeof name, &index);
        int m = find_map(maps, o->n_input_map, name, index);
        vg_op *op = c.nodes[(int)(intptr_t)vg__strmap_get(&c.by_name, name, NULL) - 1].built;
        if (index >= vg_op_num_outputs(op)) {
            k = vg_status_set(st, VG_INVALID_ARGUMENT, "%s: return tensor '%s': node has %d output(s)", c.src,
                              o->return_tensors[i], vg_op_num_outputs(op));
            goto done;
        }
        /* TF returns the mapped tensor for a mapped name */
        if (o->return_tensors_out) o->return_tensors_out[i] = m >= 0 ? maps[m].value : vg_out(op, index);
    }
    for (int i = 0; i < o->n_return_ops; i++) {
        vg_op *op = c.nodes[(int)(intptr_t)vg__strmap_get(&c.by_name, o->return_ops[i], NULL) - 1].built;
        if (o->return_ops_out) o->return_ops_out[i] = op;
    }
    k = VG_OK;
    vg_status_clear(st);
done:
    vg__free(order);
    vg__free(miss);
    vg__free(maps);
    ctx_free(&c);
    return k;
}

static bool ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

vg_code vg__import_read_path(const char *fn, const char *path, uint8_t **data, size_t *len, vg_status *st) {
    *data = NULL;
    *len = 0;
    if (!path) return vg_status_set(st, VG_INVALID_ARGUMENT, "%s: path is NULL", fn);
    return vg__io_read_file(path, data, len, st);
}

vg_code vg_graph_import_graph_def_file(vg_graph *g, const char *path, const vg_import_options *opts, vg_status *st) {
    uint8_t *data;
    size_t len;
    vg_code k = vg__import_read_path("vg_graph_import_graph_def_file", path, &data, &len, st);
    if (k) return k;
    vg_import_options o = {0};
    if (opts) o = *opts;
    if (!o.source) o.source = path;
    if (o.format == VG_IMPORT_AUTO && (ends_with(path, ".pbtxt") || ends_with(path, ".txt")))
        o.format = VG_IMPORT_TEXT;
    k = vg_graph_import_graph_def(g, data, len, &o, st);
    vg__free(data);
    return k;
}

/* Op types of a GraphDef: all of them (as written) or only those vigil lacks. */
static vg_code op_types(const void *bytes, size_t len, vg_import_format format, bool missing_only, char ***types,
                        int **counts, int *n, vg_status *st) {
    *types = NULL;
    if (counts) *counts = NULL;
    *n = 0;
    vg__pb_buf bin;
    vg__pb_init(&bin);
    bool text = format == VG_IMPORT_TEXT || (format == VG_IMPORT_AUTO && vg__pbtxt_looks_like_text(bytes, len));
    vg_code k = VG_OK;
    if (text) {
        if ((k = vg__pbtxt_to_binary(bytes, len, VG__PBTXT_GRAPH_DEF, &bin, st))) {
            vg__pb_free(&bin);
            return k;
        }
        bytes = bin.data ? bin.data : (const uint8_t *)"";
        len = bin.len;
    }
    ctx c;
    memset(&c, 0, sizeof c);
    c.src = "GraphDef";
    c.st = st;
    vg__strmap_init(&c.by_name);
    missing *m = NULL;
    int nm = 0, cap = 0;
    k = parse_graph(&c, bytes ? bytes : "", len);
    if (!k && missing_only) k = inline_functions(&c, 0);
    if (!k && missing_only) k = collect_missing(&c, &m, &nm);
    for (int i = 0; !k && !missing_only && i < c.n; i++) {
        int j = 0;
        while (j < nm && strcmp(m[j].type, c.nodes[i].orig_op) != 0) j++;
        if (j == nm) {
            if (!vg__grow((void **)&m, &cap, nm + 1, sizeof *m)) {
                k = oom(&c, "op list");
                break;
            }
            m[nm++] = (missing){c.nodes[i].orig_op, 0, i};
        }
        m[j].count++;
    }
    if (!k && nm) {
        char **t = vg_calloc((size_t)nm, sizeof(char *));
        int *cn = vg_calloc((size_t)nm, sizeof(int));
        if (!t || !cn) k = oom(&c, "op list");
        for (int i = 0; !k && i < nm; i++) {
            size_t l = strlen(m[i].type) + 1;
            if (!(t[i] = vg_malloc(l))) k = oom(&c, "op list");
            else memcpy(t[i], m[i].type, l);
            cn[i] = m[i].count;
        }
        if (k) {
            vg_import_free_strings(t, nm);
            vg_free(cn);
        } else {
            *types = t;
            *n = nm;
            if (counts) *counts = cn;
            else vg_free(cn);
        }
    }
    vg__free(m);
    ctx_free(&c);
    vg__pb_free(&bin);
    if (!k) vg_status_clear(st);
    return k;
}

vg_code vg_graph_def_missing_ops(const void *bytes, size_t len, vg_import_format format, char ***types, int **counts,
                                 int *n, vg_status *st) {
    if (!types || !n || (!bytes && len))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_graph_def_missing_ops: %s is NULL", !types ? "types" : !n ? "n" : "bytes");
    return op_types(bytes, len, format, true, types, counts, n, st);
}

vg_code vg_graph_def_op_types(const void *bytes, size_t len, vg_import_format format, char ***types, int **counts,
                              int *n, vg_status *st) {
    if (!types || !n || (!bytes && len))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_graph_def_op_types: %s is NULL", !types ? "types" : !n ? "n" : "bytes");
    return op_types(bytes, len, format, false, types, counts, n, st);
}

void vg_import_free_strings(char **strs, int n) {
    if (!strs) return;
    for (int i = 0; i < n; i++) vg_free(strs[i]);
    vg_free(strs);
}

/* ------------------------------------------------------------------------ */
/* one library function as a graph of its own (tf.data functions, fn_hooks.h) */

/* ArgDef {name = 1, type = 3, type_attr = 4, number_attr = 5, type_list_attr = 6} */
static vg_code sig_arg(const uint8_t *p, size_t n, char *name, size_t cap, uint64_t *type, bool *typed,
                       vg_status *st) {
    vg__pb_reader r;
    vg__pb_field f;
    vg_code k;
    *name = 0;
    *type = 0;
    *typed = true;
    vg__pb_reader_init(&r, p, n);
    while ((k = vg__pb_next(&r, &f, st)) == VG_OK) {
        if (f.number == 1 && f.wiretype == VG__PB_LEN) {
            if (f.len == 0 || f.len >= cap || memchr(f.data, 0, f.len))
                return vg_status_set(st, VG_INVALID_ARGUMENT, "a function argument has an invalid name");
            memcpy(name, f.data, f.len);
            name[f.len] = 0;
        } else if (f.number == 3 && f.wiretype == VG__PB_VARINT) {
            *type = f.u;
        } else if (f.number >= 4 && f.number <= 6 && f.wiretype == VG__PB_LEN && f.len) {
            *typed = false;
        }
    }
    if (k != VG_OUT_OF_RANGE) return k;
    if (!*name) return vg_status_set(st, VG_INVALID_ARGUMENT, "a function argument has no name");
    return VG_OK;
}

/* A field rewriter: writes its replacement of field f into b and returns true, or
 * returns false to keep the field as it is. */
typedef bool (*pb_fix_fn)(vg__pb_buf *b, const vg__pb_field *f, const void *arg);

/* Copies message p[0..n) into b, each field through fix (the one walker of the
 * rewrites below; a malformed tail is dropped, as the importer reads it anyway). */
static void pb_rewrite(vg__pb_buf *b, const uint8_t *p, size_t n, pb_fix_fn fix, const void *arg) {
    vg__pb_reader r;
    vg__pb_field f;
    vg__pb_reader_init(&r, p, n);
    const uint8_t *at = p;
    while (vg__pb_next(&r, &f, NULL) == VG_OK) {
        const uint8_t *end = r.p;
        if (!fix(b, &f, arg)) vg__pb_put_raw(b, at, (size_t)(end - at));
        at = end;
    }
}

/* Writes message field f (length-delimited) into b rewritten by fix. */
static void put_rewritten(vg__pb_buf *b, const vg__pb_field *f, pb_fix_fn fix, const void *arg) {
    vg__pb_buf sub;
    vg__pb_init(&sub);
    pb_rewrite(&sub, f->data, f->len, fix, arg);
    vg__pb_put_message(b, f->number, &sub);
    if (sub.oom) b->oom = true;
    vg__pb_free(&sub);
}

/* ArgDef {type = 3}: DT_VARIANT (a dataset) -> DT_RESOURCE, vigil's dataset handle. */
static bool fix_argdef(vg__pb_buf *b, const vg__pb_field *f, const void *arg) {
    (void)arg;
    if (f->number != 3 || f->wiretype != VG__PB_VARINT || f->u != 21) return false;
    vg__pb_put_uint64(b, 3, 20);
    return true;
}

/* OpDef {input_arg = 2, output_arg = 3} */
static bool fix_sig(vg__pb_buf *b, const vg__pb_field *f, const void *arg) {
    if ((f->number != 2 && f->number != 3) || f->wiretype != VG__PB_LEN) return false;
    put_rewritten(b, f, fix_argdef, arg);
    return true;
}

/* FunctionDef {signature = 1} */
static bool fix_fdef(vg__pb_buf *b, const vg__pb_field *f, const void *arg) {
    if (f->number != 1 || f->wiretype != VG__PB_LEN) return false;
    put_rewritten(b, f, fix_sig, arg);
    return true;
}

/* FunctionDefLibrary {function = 1}: the one function whose bytes are *arg */
static bool fix_lib_fn(vg__pb_buf *b, const vg__pb_field *f, const void *arg) {
    const vg__pb_field *target = arg;
    if (f->number != 1 || f->wiretype != VG__PB_LEN || f->data != target->data || f->len != target->len) return false;
    put_rewritten(b, f, fix_fdef, NULL);
    return true;
}

/* FunctionDefLibrary with function fname's DT_VARIANT arguments and outputs made DT_RESOURCE. */
static void fix_library(vg__pb_buf *b, const uint8_t *lib, size_t lib_len, const uint8_t *fdef, size_t fdef_len) {
    vg__pb_field target = {.data = fdef, .len = fdef_len};
    pb_rewrite(b, lib, lib_len, fix_lib_fn, &target);
}

/* TensorShapeProto {dim = 2 {size = 1}, unknown_rank = 3} */
static void put_shape_proto(vg__pb_buf *b, int field, const vg_shape *s) {
    vg__pb_buf sh, d;
    vg__pb_init(&sh);
    vg__pb_init(&d);
    if (s->ndims < 0) vg__pb_put_uint64(&sh, 3, 1);
    for (int i = 0; i < s->ndims; i++) {
        vg__pb_reset(&d);
        vg__pb_put_uint64(&d, 1, (uint64_t)s->dims[i]);
        vg__pb_put_message(&sh, 2, &d);
    }
    vg__pb_put_message(b, field, &sh);
    if (sh.oom || d.oom) b->oom = true;
    vg__pb_free(&sh);
    vg__pb_free(&d);
}

/* A dataset argument's placeholder attrs: output_types, output_shapes (AttrValue.list). */
static void put_spec_attrs(vg__pb_buf *node, const vg__fn_arg_spec *sp) {
    vg__pb_buf attr, val, list;
    vg__pb_init(&attr);
    vg__pb_init(&val);
    vg__pb_init(&list);
    for (int pass = 0; pass < 2; pass++) {
        vg__pb_reset(&list);
        for (int i = 0; i < sp->n; i++) {
            if (pass == 0) vg__pb_put_uint64(&list, 6, (uint64_t)sp->types[i]);
            else put_shape_proto(&list, 7, &sp->shapes[i]);
        }
        vg__pb_reset(&val);
        vg__pb_put_message(&val, 1, &list);
        vg__pb_reset(&attr);
        vg__pb_put_string(&attr, 1, pass == 0 ? "output_types" : "output_shapes");
        vg__pb_put_message(&attr, 2, &val);
        vg__pb_put_message(node, 5, &attr);
    }
    if (attr.oom || val.oom || list.oom) node->oom = true;
    vg__pb_free(&attr);
    vg__pb_free(&val);
    vg__pb_free(&list);
}

vg_code vg__graph_import_function(vg_graph *fg, const uint8_t *lib, size_t lib_len, const char *fname,
                                  const vg__fn_arg_spec *spec, vg_output *args, int *nargs, int max_args,
                                  vg_output *outs, int *nouts, int max_outs, vg_status *st) {
    *nargs = *nouts = 0;
    vg__pb_reader r, fr, sr;
    vg__pb_field f, ff, sf;
    vg_code k;
    const uint8_t *sig = NULL;
    size_t sig_len = 0;
    const uint8_t *fdef = NULL;
    size_t fdef_len = 0;
    vg__pb_reader_init(&r, lib, lib_len);
    while (!sig && (k = vg__pb_next(&r, &f, st)) == VG_OK) {
        if (f.number != 1 || f.wiretype != VG__PB_LEN) continue;
        vg__pb_reader_init(&fr, f.data, f.len);
        while ((k = vg__pb_next(&fr, &ff, st)) == VG_OK)
            if (ff.number == 1 && ff.wiretype == VG__PB_LEN) {
                vg__pb_reader_init(&sr, ff.data, ff.len);
                while (vg__pb_next(&sr, &sf, NULL) == VG_OK)
                    if (sf.number == 1 && sf.wiretype == VG__PB_LEN && bytes_eq(sf.data, sf.len, fname)) {
                        sig = ff.data;
                        sig_len = ff.len;
                        fdef = f.data;
                        fdef_len = f.len;
                    }
            }
    }
    if (!sig) return vg_status_set(st, VG_NOT_FOUND, "function '%s' is not in the GraphDef's library", fname);
    /* the GraphDef: a Placeholder per input argument, one call node, the library */
    vg__pb_buf gd, node, attr, val;
    vg__pb_init(&gd);
    vg__pb_init(&node);
    vg__pb_init(&attr);
    vg__pb_init(&val);
    static const char call[] = "vigil_function_call";
    char names[64][128];
    k = VG_OK;
    vg__pb_reader_init(&sr, sig, sig_len);
    while (!k && vg__pb_next(&sr, &sf, NULL) == VG_OK) {
        if (sf.wiretype != VG__PB_LEN || (sf.number != 2 && sf.number != 3)) continue;
        uint64_t type;
        bool typed;
        char nm[128];
        if ((k = sig_arg(sf.data, sf.len, nm, sizeof nm, &type, &typed, st))) break;
        if (!typed) {
            k = vg_status_set(st, VG_UNIMPLEMENTED, "function '%s': argument '%s' is typed by an attr or a list, "
                              "which vigil's dataset functions do not support", fname, nm);
            break;
        }
        if (sf.number == 3) {
            if (++*nouts > max_outs)
                k = vg_status_set(st, VG_INVALID_ARGUMENT, "function '%s' has more than %d outputs", fname, max_outs);
            continue;
        }
        if (*nargs >= max_args || *nargs >= 64) {
            k = vg_status_set(st, VG_INVALID_ARGUMENT, "function '%s' has more than %d arguments", fname, max_args);
            break;
        }
        const vg__fn_arg_spec *sp = spec && spec[*nargs].n > 0 ? &spec[*nargs] : NULL;
        if (type == 21 && !sp) { /* DT_VARIANT: a dataset, whose element types the caller tells */
            k = vg_status_set(st, VG_UNIMPLEMENTED, "function '%s': argument '%s' is a DT_VARIANT that vigil cannot "
                              "take as a dataset here (its element types are unknown)", fname, nm);
            break;
        }
        snprintf(names[(*nargs)++], sizeof names[0], "%s", nm);
        vg__pb_reset(&node);
        vg__pb_put_string(&node, 1, nm);
        vg__pb_put_string(&node, 2, "Placeholder");
        if (sp) put_spec_attrs(&node, sp);
        vg__pb_reset(&val);
        vg__pb_put_uint64(&val, 6, type == 21 ? 20 : type);
        vg__pb_reset(&attr);
        vg__pb_put_string(&attr, 1, "dtype");
        vg__pb_put_message(&attr, 2, &val);
        vg__pb_put_message(&node, 5, &attr);
        vg__pb_reset(&val);
        vg__pb_put_raw(&val, "\x3a\x02\x18\x01", 4); /* shape {unknown_rank: true} */
        vg__pb_reset(&attr);
        vg__pb_put_string(&attr, 1, "shape");
        vg__pb_put_message(&attr, 2, &val);
        vg__pb_put_message(&node, 5, &attr);
        vg__pb_put_message(&gd, 1, &node);
    }
    if (!k) {
        vg__pb_reset(&node);
        vg__pb_put_string(&node, 1, call);
        vg__pb_put_string(&node, 2, fname);
        for (int i = 0; i < *nargs; i++) vg__pb_put_string(&node, 3, names[i]);
        vg__pb_put_message(&gd, 1, &node);
        vg__pb_reset(&val);
        fix_library(&val, lib, lib_len, fdef, fdef_len); /* its datasets: vigil's resource handles */
        vg__pb_put_message(&gd, 2, &val);
        vg__pb_reset(&val);
        vg__pb_put_uint64(&val, 1, 27);
        vg__pb_put_message(&gd, 4, &val);
        if (gd.oom || node.oom || attr.oom || val.oom) k = vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory");
    }
    if (!k) {
        vg_import_options o = {0};
        o.format = VG_IMPORT_BINARY;
        char src[600];
        snprintf(src, sizeof src, "function '%s'", fname);
        o.source = src;
        k = vg_graph_import_graph_def(fg, gd.data ? gd.data : (const uint8_t *)"", gd.len, &o, st);
    }
    for (int i = 0; !k && i < *nargs; i++) {
        vg_op *op = vg_graph_op_by_name(fg, names[i]);
        if (!op) k = vg_status_set(st, VG_INTERNAL, "function '%s': argument '%s' missing", fname, names[i]);
        else args[i] = vg_out(op, 0);
    }
    if (!k) {
        vg_op *c = vg_graph_op_by_name(fg, call);
        if (!c || vg_op_num_outputs(c) != *nouts)
            k = vg_status_set(st, VG_INTERNAL, "function '%s': its call did not build", fname);
        for (int i = 0; !k && i < *nouts; i++) outs[i] = vg_out(c, i);
    }
    vg__pb_free(&gd);
    vg__pb_free(&node);
    vg__pb_free(&attr);
    vg__pb_free(&val);
    return k;
}
