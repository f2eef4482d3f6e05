/*
 * graphdef.c - GraphDef and MetaGraphDef export in TensorFlow's formats: binary
 * protobuf (docs/formats.md §4.1-4.3) and protobuf text format (graph.pbtxt).
 *
 * Binary: every message is written in field-number order with proto3's rules (zero
 * scalars omitted, set sub-messages and oneof members always written, numeric repeated
 * fields packed), map entries (NodeDef.attr, MetaGraphDef.collection_def) in ascending
 * key order as TF's deterministic serialization does. Messages whose payload can be big
 * (the GraphDef, its nodes, Const tensors) are written in two passes: a size pass then a
 * write pass straight into the output buffer, so a large Const is copied once. Small
 * messages (VariableDef, CollectionDef, ...) go through scratch buffers.
 *
 * Tensors (Const "value") follow TF's Python make_tensor_proto: strings in string_val;
 * a single element in the typed field (float_val, int_val, int64_val, bool_val,
 * double_val, half_val as bit patterns, scomplex_val / dcomplex_val as re, im pairs);
 * more elements as tensor_content bytes (bool: bool_val). One deviation:
 * a multi-element tensor whose elements are all equal is written as one typed value
 * (what make_tensor_proto writes for tf.constant(v, shape=...), tf.zeros, tf.ones);
 * TF readers expand the last value to the full shape, so the meaning is identical.
 *
 * Text format prints like protobuf's C++ TextFormat: two-space indentation, enum names
 * (DT_FLOAT), strings C-escaped (octal for other non-printable bytes), floats with
 * SimpleFtoa (%.6g, or %.9g when that does not round-trip), map entries sorted by key.
 *
 * The MetaGraphDef's GraphDef carries "_output_shapes" on every node (as TF's
 * export_meta_graph uses as_graph_def(add_shapes=True)); vg_graph_to_graphdef does not.
 */
#include "graph/fn_hooks.h"
#include "graph/graph_impl.h"
#include "graph/registry.h"
#include "io/io.h"
#include "vigil/graphdef.h"
#include <float.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* GraphDef versions.producer vigil writes: the op semantics it implements are those
 * of TF graphs of this producer and later (AddV2 etc. are known to newer consumers). */
#define VG__GRAPHDEF_PRODUCER 27
#define VG__TF_VERSION "1.15.0"
#define VG__TF_GIT_VERSION "vigil-0.1.0"

/* ------------------------------------------------------------------------ */
/* size helpers */

static size_t tag_sz(int field) { return (size_t)vg__pb_varint_size((uint64_t)field << 3); }
static size_t vsz(uint64_t v) { return (size_t)vg__pb_varint_size(v); }
/* A length-delimited field with an n-byte payload. */
static size_t len_fld(int field, size_t n) { return tag_sz(field) + vsz(n) + n; }
static size_t var_fld(int field, uint64_t v) { return tag_sz(field) + vsz(v); }
static void put_len_hdr(vg__pb_buf *b, int field, size_t n) {
    vg__pb_put_tag(b, field, VG__PB_LEN);
    vg__pb_put_varint(b, n);
}

/* ------------------------------------------------------------------------ */
/* TensorShapeProto {dim = 2 {size = 1, name = 2}, unknown_rank = 3} */

static size_t dim_sz(int64_t d) { return d ? var_fld(1, (uint64_t)d) : 0; }

static size_t shape_sz(const vg_shape *s) {
    if (s->ndims < 0) return var_fld(3, 1);
    size_t n = 0;
    for (int i = 0; i < s->ndims; i++) n += len_fld(2, dim_sz(s->dims[i]));
    return n;
}

static void put_shape(vg__pb_buf *b, const vg_shape *s) {
    if (s->ndims < 0) {
        vg__pb_put_bool(b, 3, true);
        return;
    }
    for (int i = 0; i < s->ndims; i++) {
        put_len_hdr(b, 2, dim_sz(s->dims[i]));
        if (s->dims[i]) vg__pb_put_int64(b, 1, s->dims[i]);
    }
}

/* ------------------------------------------------------------------------ */
/* TensorProto */

typedef enum tval_kind { TV_NONE, TV_CONTENT, TV_TYPED, TV_STRING } tval_kind;

/* How a tensor is written: kind, the typed field, how many values and their payload. */
typedef struct tplan {
    tval_kind kind;
    int field;       /* typed field number (TV_TYPED) */
    int64_t n;       /* values written */
    size_t payload;  /* packed bytes (TV_TYPED) or content bytes (TV_CONTENT) */
} tplan;

static int typed_field(vg_dtype dt) {
    switch (dt) {
    case VG_FLOAT: return 5;
    case VG_DOUBLE: return 6;
    case VG_INT32:
    case VG_UINT8: return 7;
    case VG_INT64: return 10;
    case VG_BOOL: return 11;
    case VG_HALF: return 13; /* half_val: the binary16 bit patterns as int32 */
    case VG_BFLOAT16: return 13; /* half_val too (TF keeps DT_BFLOAT16 there) */
    case VG_COMPLEX64: return 9;   /* scomplex_val: (re, im) float pairs */
    case VG_COMPLEX128: return 12; /* dcomplex_val: (re, im) double pairs */
    default: return 0;
    }
}

/* Signed value of element i of an integer tensor, as int_val / int64_val hold it. */
static int64_t int_elem(const vg_tensor *t, int64_t i) {
    const void *d = vg_tensor_data(t);
    switch (vg_tensor_dtype(t)) {
    case VG_INT32: return ((const int32_t *)d)[i];
    case VG_UINT8: return ((const uint8_t *)d)[i];
    case VG_INT64: return ((const int64_t *)d)[i];
    case VG_BOOL: return ((const uint8_t *)d)[i] != 0;
    case VG_HALF: case VG_BFLOAT16: return ((const uint16_t *)d)[i];
    default: return 0;
    }
}

/* Every element equals its predecessor: one memcmp of the buffer against itself. */
static bool all_equal(const vg_tensor *t, int64_t n) {
    size_t es = vg_dtype_size(vg_tensor_dtype(t));
    const uint8_t *d = vg_tensor_data(t);
    return memcmp(d, d + es, (size_t)(n - 1) * es) == 0;
}

static tplan plan_tensor(const vg_tensor *t) {
    tplan p = {TV_NONE, 0, 0, 0};
    vg_dtype dt = vg_tensor_dtype(t);
    int64_t n = vg_tensor_num_elements(t);
    if (dt == VG_STRING) {
        p.kind = TV_STRING;
        p.n = n;
        return p;
    }
    p.field = typed_field(dt);
    if (n == 0 || !p.field) return p;
    if (n > 1 && all_equal(t, n)) n = 1;
    if (n > 1 && dt != VG_BOOL) {
        p.kind = TV_CONTENT;
        p.n = n;
        p.payload = vg_tensor_nbytes(t);
        return p;
    }
    p.kind = TV_TYPED;
    p.n = n;
    if (dt == VG_FLOAT || dt == VG_DOUBLE || dt == VG_COMPLEX64 || dt == VG_COMPLEX128)
        p.payload = vg_dtype_size(dt) * (size_t)n;
    else
        for (int64_t i = 0; i < n; i++) p.payload += vsz((uint64_t)int_elem(t, i));
    return p;
}

static size_t tensor_sz(const vg_tensor *t, const tplan *p) {
    vg_shape s = vg_tensor_shape(t);
    size_t n = var_fld(1, (uint64_t)vg_tensor_dtype(t)) + len_fld(2, shape_sz(&s));
    if (p->kind == TV_CONTENT) n += len_fld(4, p->payload);
    else if (p->kind == TV_TYPED) n += len_fld(p->field, p->payload);
    else if (p->kind == TV_STRING)
        for (int64_t i = 0; i < p->n; i++) {
            size_t len = 0;
            vg_tensor_string(t, i, &len);
            n += len_fld(8, len);
        }
    return n;
}

static void put_tensor(vg__pb_buf *b, const vg_tensor *t, const tplan *p) {
    vg_shape s = vg_tensor_shape(t);
    vg_dtype dt = vg_tensor_dtype(t);
    vg__pb_put_uint64(b, 1, (uint64_t)dt);
    put_len_hdr(b, 2, shape_sz(&s));
    put_shape(b, &s);
    if (p->kind == TV_CONTENT) {
        vg__pb_put_bytes(b, 4, vg_tensor_data(t), p->payload);
    } else if (p->kind == TV_TYPED) {
        put_len_hdr(b, p->field, p->payload);
        if (dt == VG_FLOAT || dt == VG_DOUBLE || dt == VG_COMPLEX64 || dt == VG_COMPLEX128)
            vg__pb_put_raw(b, vg_tensor_data(t), p->payload); /* LE host; complex: packed re, im */
        else
            for (int64_t i = 0; i < p->n; i++) vg__pb_put_varint(b, (uint64_t)int_elem(t, i));
    } else if (p->kind == TV_STRING) {
        for (int64_t i = 0; i < p->n; i++) {
            size_t len = 0;
            const char *str = vg_tensor_string(t, i, &len);
            vg__pb_put_bytes(b, 8, str, len);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* AttrValue {list = 1, s = 2, i = 3, f = 4, b = 5, type = 6, shape = 7, tensor = 8}
 * ListValue {s = 2, i = 3 packed, f = 4 packed, b = 5 packed, type = 6 packed,
 *            shape = 7, tensor = 8} */

static size_t list_sz(const vg__attr *a) {
    int n = a->u.list.n;
    size_t payload = 0;
    switch (a->type) {
    case VG_ATTR_INT_LIST:
        for (int i = 0; i < n; i++) payload += vsz((uint64_t)((const int64_t *)a->u.list.p)[i]);
        return n ? len_fld(3, payload) : 0;
    case VG_ATTR_FLOAT_LIST: return n ? len_fld(4, 4 * (size_t)n) : 0;
    case VG_ATTR_TYPE_LIST:
        for (int i = 0; i < n; i++) payload += vsz((uint64_t)((const vg_dtype *)a->u.list.p)[i]);
        return n ? len_fld(6, payload) : 0;
    case VG_ATTR_SHAPE_LIST:
        for (int i = 0; i < n; i++) payload += len_fld(7, shape_sz(&((const vg_shape *)a->u.list.p)[i]));
        return payload;
    case VG_ATTR_STRING_LIST:
        for (int i = 0; i < n; i++) payload += len_fld(2, strlen(((char *const *)a->u.list.p)[i]));
        return payload;
    default: return 0;
    }
}

/* Value i of an int or type list attribute, as its varint. */
static uint64_t varint_list_at(const vg__attr *a, int i) {
    if (a->type == VG_ATTR_INT_LIST) return (uint64_t)((const int64_t *)a->u.list.p)[i];
    return (uint64_t)((const vg_dtype *)a->u.list.p)[i];
}

static void put_list(vg__pb_buf *b, const vg__attr *a) {
    int n = a->u.list.n;
    size_t payload = 0;
    switch (a->type) {
    case VG_ATTR_INT_LIST: /* packed varints: ListValue.i (3) or ListValue.type (6) */
    case VG_ATTR_TYPE_LIST:
        if (!n) return;
        for (int i = 0; i < n; i++) payload += vsz(varint_list_at(a, i));
        put_len_hdr(b, a->type == VG_ATTR_INT_LIST ? 3 : 6, payload);
        for (int i = 0; i < n; i++) vg__pb_put_varint(b, varint_list_at(a, i));
        return;
    case VG_ATTR_FLOAT_LIST: {
        const float *v = a->u.list.p;
        if (!n) return;
        put_len_hdr(b, 4, 4 * (size_t)n);
        for (int i = 0; i < n; i++) {
            uint32_t u;
            memcpy(&u, &v[i], 4);
            vg__pb_put_fixed32(b, u);
        }
        return;
    }
    case VG_ATTR_SHAPE_LIST:
        for (int i = 0; i < n; i++) {
            const vg_shape *s = &((const vg_shape *)a->u.list.p)[i];
            put_len_hdr(b, 7, shape_sz(s));
            put_shape(b, s);
        }
        return;
    case VG_ATTR_STRING_LIST:
        for (int i = 0; i < n; i++) vg__pb_put_string(b, 2, ((char *const *)a->u.list.p)[i]);
        return;
    default: return;
    }
}

static bool is_list(vg_attr_type t) { return t >= VG_ATTR_INT_LIST && t <= VG_ATTR_STRING_LIST; }

/* A function attr (AttrValue.func = NameAttrList {name = 1}): a copy of a dataset op's
 * string attr naming its function, this type, the function's name in u.s. */
#define ATTR_FUNC ((vg_attr_type)0x7f)

/* p: the tensor's plan (VG_ATTR_TENSOR with a tensor), else unused. */
static size_t attr_sz(const vg__attr *a, const tplan *p) {
    if ((int)a->type == (int)ATTR_FUNC) return len_fld(10, len_fld(1, a->u.s.n));
    switch (a->type) {
    case VG_ATTR_INT: return var_fld(3, (uint64_t)a->u.i);
    case VG_ATTR_FLOAT: return tag_sz(4) + 4;
    case VG_ATTR_BOOL: return var_fld(5, a->u.b);
    case VG_ATTR_TYPE: return var_fld(6, (uint64_t)a->u.t);
    case VG_ATTR_SHAPE: return len_fld(7, shape_sz(&a->u.shape));
    case VG_ATTR_STRING: return len_fld(2, a->u.s.n);
    case VG_ATTR_TENSOR: return len_fld(8, a->u.tensor ? tensor_sz(a->u.tensor, p) : 0);
    default: return is_list(a->type) ? len_fld(1, list_sz(a)) : 0;
    }
}

static void put_attr(vg__pb_buf *b, const vg__attr *a, const tplan *p) {
    if ((int)a->type == (int)ATTR_FUNC) {
        put_len_hdr(b, 10, len_fld(1, a->u.s.n));
        vg__pb_put_bytes(b, 1, a->u.s.p, a->u.s.n);
        return;
    }
    switch (a->type) {
    case VG_ATTR_INT: vg__pb_put_int64(b, 3, a->u.i); return;
    case VG_ATTR_FLOAT: vg__pb_put_float(b, 4, a->u.f); return;
    case VG_ATTR_BOOL: vg__pb_put_bool(b, 5, a->u.b); return;
    case VG_ATTR_TYPE: vg__pb_put_uint64(b, 6, (uint64_t)a->u.t); return;
    case VG_ATTR_SHAPE:
        put_len_hdr(b, 7, shape_sz(&a->u.shape));
        put_shape(b, &a->u.shape);
        return;
    case VG_ATTR_STRING: vg__pb_put_bytes(b, 2, a->u.s.p, a->u.s.n); return;
    case VG_ATTR_TENSOR:
        put_len_hdr(b, 8, a->u.tensor ? tensor_sz(a->u.tensor, p) : 0);
        if (a->u.tensor) put_tensor(b, a->u.tensor, p);
        return;
    default:
        if (is_list(a->type)) {
            put_len_hdr(b, 1, list_sz(a));
            put_list(b, a);
        }
        return;
    }
}

/* ------------------------------------------------------------------------ */
/* NodeDef {name = 1, op = 2, input = 3, device = 4, attr = 5 map<string, AttrValue>} */

/* A node's attrs sorted by name, plus an optional synthetic "_output_shapes", and the
 * plan of each tensor attr (computed once: deciding needs a scan of the data). */
typedef struct node_attrs {
    const vg__attr **v;
    tplan *plans;
    int n;
    const vg__attr *local[32];
    tplan local_plans[32];
    vg__attr shapes; /* _output_shapes */
    vg__attr funcs[4]; /* function attrs (ATTR_FUNC) in place of the op's string attrs */
    vg__attr vtypes;   /* a dataset op's output_types with its datasets as DT_VARIANT */
    vg_dtype *vbuf;    /* vtypes' list (owned) */
} node_attrs;

/* ------------------------------------------------------------------------ */
/* The function library of an export: the dataset functions that ops' string attrs
 * name (fn_hooks.h), each with its FunctionDef's names worked out. */

typedef struct xfn {
    const vg_graph *owner; /* the graph whose op names it */
    const char *key;       /* the attr value (owner's user data key) */
    char *name;            /* FunctionDef name */
    vg__fn_body body;
    char **in;             /* input arg names: args then caps */
    int *in_type, *out_type; /* DataType numbers */
} xfn;

typedef struct xlib {
    const vg__fn_hooks *h;
    xfn *v;
    int n, cap;
    char **strs; /* owned strings */
    int nstrs, strs_cap;
    void **blocks;
    int nblocks, blocks_cap;
    vg__pb_buf bytes; /* FunctionDefLibrary */
} xlib;

static const char *xlib_func_name(const xlib *l, const vg_graph *g, const vg__attr *a) {
    if (!l || a->type != VG_ATTR_STRING) return NULL;
    for (int i = 0; i < l->n; i++)
        if (l->v[i].owner == g && strlen(l->v[i].key) == a->u.s.n && memcmp(l->v[i].key, a->u.s.p, a->u.s.n) == 0)
            return l->v[i].name;
    return NULL;
}

static int cmp_attr(const void *a, const void *b) {
    return strcmp((*(const vg__attr *const *)a)->name, (*(const vg__attr *const *)b)->name);
}

static void node_attrs_free(node_attrs *na) {
    vg__free(na->vbuf);
    if (na->v != na->local) vg__free(na->v);
    if (na->plans != na->local_plans) vg__free(na->plans);
}

/* A dataset op's element of type VG_RESOURCE is a dataset (a window's components):
 * TF 1.15 writes its type as DT_VARIANT (21) in output_types. Returns a, or the
 * rewritten copy held in na; NULL when out of memory. */
static const vg__attr *variant_types(node_attrs *na, const vg_op *op, const vg__attr *a) {
    if (a->type != VG_ATTR_TYPE_LIST || strcmp(a->name, "output_types") != 0 || !strstr(op->def->type, "Dataset"))
        return a;
    const vg_dtype *t = a->u.list.p;
    int n = a->u.list.n, k = 0;
    while (k < n && t[k] != VG_RESOURCE) k++;
    if (k == n) return a;
    if (!(na->vbuf = vg__malloc((size_t)n * sizeof *na->vbuf))) return NULL;
    for (int i = 0; i < n; i++) na->vbuf[i] = t[i] == VG_RESOURCE ? (vg_dtype)21 : t[i];
    na->vtypes = *a;
    na->vtypes.u.list.p = na->vbuf;
    return &na->vtypes;
}

static bool node_attrs_init_lib(node_attrs *na, const vg_op *op, bool add_shapes, const xlib *lib) {
    int n = op->nattrs + (add_shapes ? 1 : 0);
    na->vbuf = NULL;
    na->v = n <= 32 ? na->local : vg__malloc((size_t)n * sizeof *na->v);
    na->plans = n <= 32 ? na->local_plans : vg__malloc((size_t)n * sizeof *na->plans);
    if (!na->v || !na->plans) {
        node_attrs_free(na);
        return false;
    }
    na->n = 0;
    int nf = 0;
    for (int i = 0; i < op->nattrs; i++) {
        if (add_shapes && strcmp(op->attrs[i].name, "_output_shapes") == 0) continue;
        const char *fname = xlib_func_name(lib, op->graph, &op->attrs[i]);
        if (fname && nf < 4) {
            vg__attr *f = &na->funcs[nf++];
            memset(f, 0, sizeof *f);
            f->name = op->attrs[i].name;
            f->type = ATTR_FUNC;
            f->u.s.p = (char *)fname;
            f->u.s.n = strlen(fname);
            na->v[na->n++] = f;
            continue;
        }
        na->v[na->n++] = variant_types(na, op, &op->attrs[i]);
        if (!na->v[na->n - 1]) {
            node_attrs_free(na);
            return false;
        }
    }
    if (add_shapes) {
        memset(&na->shapes, 0, sizeof na->shapes);
        na->shapes.name = "_output_shapes";
        na->shapes.type = VG_ATTR_SHAPE_LIST;
        na->shapes.u.list.p = op->out_shapes;
        na->shapes.u.list.n = op->noutputs;
        na->v[na->n++] = &na->shapes;
    }
    qsort(na->v, (size_t)na->n, sizeof *na->v, cmp_attr);
    for (int i = 0; i < na->n; i++)
        if (na->v[i]->type == VG_ATTR_TENSOR && na->v[i]->u.tensor) na->plans[i] = plan_tensor(na->v[i]->u.tensor);
    return true;
}

static size_t input_len(vg_output in) {
    size_t n = strlen(in.op->name);
    if (in.index) n += 1 + (size_t)snprintf(NULL, 0, "%d", in.index);
    return n;
}

static void put_input(vg__pb_buf *b, vg_output in) {
    put_len_hdr(b, 3, input_len(in));
    vg__pb_put_raw(b, in.op->name, strlen(in.op->name));
    if (in.index) {
        char d[16];
        int k = snprintf(d, sizeof d, ":%d", in.index);
        vg__pb_put_raw(b, d, (size_t)k);
    }
}

static size_t entry_sz(const vg__attr *a, const tplan *p) {
    return len_fld(1, strlen(a->name)) + len_fld(2, attr_sz(a, p));
}

static size_t node_sz(const vg_op *op, const node_attrs *na) {
    size_t n = len_fld(1, strlen(op->name)) + len_fld(2, strlen(op->def->type));
    for (int i = 0; i < op->ninputs; i++) n += len_fld(3, input_len(op->inputs[i]));
    for (int i = 0; i < op->ncontrol; i++) n += len_fld(3, 1 + strlen(op->control[i]->name));
    if (op->device && *op->device) n += len_fld(4, strlen(op->device));
    for (int i = 0; i < na->n; i++) n += len_fld(5, entry_sz(na->v[i], &na->plans[i]));
    return n;
}

static void put_node(vg__pb_buf *b, const vg_op *op, const node_attrs *na) {
    vg__pb_put_string(b, 1, op->name);
    vg__pb_put_string(b, 2, op->def->type);
    for (int i = 0; i < op->ninputs; i++) put_input(b, op->inputs[i]);
    for (int i = 0; i < op->ncontrol; i++) {
        const char *c = op->control[i]->name;
        put_len_hdr(b, 3, 1 + strlen(c));
        vg__pb_put_raw(b, "^", 1);
        vg__pb_put_raw(b, c, strlen(c));
    }
    if (op->device && *op->device) vg__pb_put_string(b, 4, op->device);
    for (int i = 0; i < na->n; i++) {
        const vg__attr *a = na->v[i];
        const tplan *p = &na->plans[i];
        put_len_hdr(b, 5, entry_sz(a, p));
        vg__pb_put_string(b, 1, a->name);
        put_len_hdr(b, 2, attr_sz(a, p));
        put_attr(b, a, p);
    }
}

/* ------------------------------------------------------------------------ */
/* FunctionDefs of dataset functions (fn_hooks.h)
 * FunctionDefLibrary {function = 1}
 * FunctionDef {signature = 1 OpDef, node_def = 3 NodeDef, ret = 4 map<string, string>}
 * OpDef {name = 1, input_arg = 2, output_arg = 3}  ArgDef {name = 1, type = 3}
 * Written as TF 1.15's tf.data does (StructuredFunctionWrapper): the element's
 * components are arguments args_0, args_1, ...; the captured values follow, named as
 * their placeholders; outputs identity, identity_1, ...; body inputs
 * "node:out_arg:index" with TF's output argument names. */

static const vg__fn_hooks *g_fn_hooks;

void vg__graph_set_fn_hooks(const vg__fn_hooks *h) { g_fn_hooks = h; }

const vg__fn_hooks *vg__graph_fn_hooks(void) {
    vg__registry_find("NoOp"); /* loads the op families, which install the hooks */
    return g_fn_hooks;
}

static void xlib_free(xlib *l) {
    for (int i = 0; i < l->nstrs; i++) vg__free(l->strs[i]);
    for (int i = 0; i < l->nblocks; i++) vg__free(l->blocks[i]);
    vg__free(l->strs);
    vg__free(l->blocks);
    vg__free(l->v);
    vg__pb_free(&l->bytes);
    memset(l, 0, sizeof *l);
}

/* A new string printf'd into l's arena; NULL on OOM. */
static char *xstr(xlib *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *xstr(xlib *l, const char *fmt, ...) {
    char buf[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (!vg__grow((void **)&l->strs, &l->strs_cap, l->nstrs + 1, sizeof *l->strs)) return NULL;
    char *r = vg__strdup(buf);
    if (r) l->strs[l->nstrs++] = r;
    return r;
}

static void *xblock(xlib *l, size_t n) {
    if (!vg__grow((void **)&l->blocks, &l->blocks_cap, l->nblocks + 1, sizeof *l->blocks)) return NULL;
    void *r = vg__calloc(1, n ? n : 1);
    if (r) l->blocks[l->nblocks++] = r;
    return r;
}

/* TF's DataType of a function argument or output: a dataset (vigil's resource handle
 * of a dataset op) is a DT_VARIANT. */
static bool is_dataset_value(vg_output o) {
    const vg_dtype *t;
    int n = 0;
    if (vg_output_dtype(o) != VG_RESOURCE) return false;
    if (strstr(o.op->def->type, "Dataset")) return true; /* RangeDataset, BatchDatasetV2, ... */
    if (strcmp(o.op->def->type, "Identity") == 0 && o.op->ninputs == 1) return is_dataset_value(o.op->inputs[0]);
    /* a function's dataset argument (a window's component, group_by_window's window) */
    return strcmp(o.op->def->type, "Placeholder") == 0 && vg_op_attr_type_list(o.op, "output_types", &t, &n) && n > 0;
}

static int fn_dtype(vg_output o) {
    if (is_dataset_value(o)) return 21;
    return (int)vg_output_dtype(o);
}

/* The argument index of o in f (args, then caps), -1 when o is not an argument. */
static int fn_arg_of(const xfn *f, vg_output o) {
    for (int i = 0; i < f->body.nargs; i++)
        if (f->body.args[i].op == o.op) return i;
    for (int i = 0; i < f->body.ncap; i++)
        if (f->body.caps[i].op == o.op) return f->body.nargs + i;
    return -1;
}

/* ParseExample / ParseSingleExample: output i as (argument, index in it). */
static const char *parse_out_arg(const vg_op *op, int i, int *idx) {
    int64_t ns = 0, nd = 0;
    const vg_dtype *t;
    int ntd = 0;
    if (strcmp(op->def->type, "ParseExample") == 0) {
        if (!vg_op_attr_int(op, "Nsparse", &ns)) ns = 0;
        if (!vg_op_attr_int(op, "Ndense", &nd)) nd = vg_op_attr_type_list(op, "Tdense", &t, &ntd) ? ntd : 0;
    } else if (strcmp(op->def->type, "ParseSingleExample") == 0) {
        if (!vg_op_attr_int(op, "num_sparse", &ns)) ns = 0;
        nd = vg_op_attr_type_list(op, "Tdense", &t, &ntd) ? ntd : 0;
    } else {
        return NULL;
    }
    static const char *const names[] = {"sparse_indices", "sparse_values", "sparse_shapes", "dense_values"};
    int64_t len[] = {ns, ns, ns, nd}, base = 0;
    for (int k = 0; k < 4; k++) {
        if (i < base + len[k]) {
            *idx = (int)(i - base);
            return names[k];
        }
        base += len[k];
    }
    return NULL;
}

/* Output `o` as a FunctionDef body names it; NULL with st set (UNIMPLEMENTED) when
 * vigil does not know the producer's output argument names. */
static char *fn_ref(xlib *l, const xfn *f, vg_output o, vg_status *st) {
    int a = fn_arg_of(f, o);
    if (a >= 0) return f->in[a];
    const char *type = o.op->def->type;
    int idx = o.index;
    bool list = false;
    const char *arg = parse_out_arg(o.op, o.index, &idx);
    char one[64];
    if (!arg) {
        const char *names = vg__op_output_args(type, &list);
        if (names && !list && strchr(names, ',')) {
            const char *p = names;
            for (int k = 0; p && k < o.index; k++) p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL;
            if (!p) names = NULL;
            else {
                size_t n = strcspn(p, ",");
                snprintf(one, sizeof one, "%.*s", (int)(n < sizeof one ? n : sizeof one - 1), p);
                arg = one;
                idx = 0;
            }
        } else if (names) {
            arg = names;
        } else if (o.op->noutputs == 1) {
            arg = "output"; /* TF's name of most single-output ops' output */
        }
    }
    if (!arg) {
        vg_status_set(st, VG_UNIMPLEMENTED,
                      "dataset function '%s' cannot be written as a FunctionDef: node '%s' (%s) has %d outputs and "
                      "vigil does not know their argument names", f->name, o.op->name, type, o.op->noutputs);
        return NULL;
    }
    char *r = xstr(l, "%s:%s:%d", o.op->name, arg, idx);
    if (!r) vg_status_set(st, VG_RESOURCE_EXHAUSTED, "out of memory writing function '%s'", f->name);
    return r;
}

/* The transformation's name in TF's function names (__inference_Dataset_map_...). */
static const char *transformation(const char *type) {
    if (strstr(type, "FlatMap")) return "flat_map";
    if (strstr(type, "Map")) return "map";
    if (strstr(type, "Filter")) return "filter";
    if (strstr(type, "Interleave")) return "interleave";
    if (strstr(type, "Reduce")) return "reduce";
    if (strstr(type, "GroupByWindow")) return "group_by_window";
    return type;
}

static vg_code xlib_collect(xlib *l, const vg_graph *g, int depth, vg_status *st);

/* Adds the function `key` names (an attr of op) and those inside it. */
static vg_code xlib_add(xlib *l, const vg_op *op, const vg__attr *a, int depth, vg_status *st) {
    char key[700];
    snprintf(key, sizeof key, "%.*s", (int)(a->u.s.n < sizeof key ? a->u.s.n : sizeof key - 1), a->u.s.p);
    if (xlib_func_name(l, op->graph, a)) return VG_OK;
    vg__fn_body body;
    if (!l->h->find(op->graph, key, &body))
        return vg_status_set(st, VG_UNIMPLEMENTED,
                             "node '%s' (%s): its function '%s' (attr '%s') is not in the graph (a graph imported "
                             "with the function's key only?), so it cannot be written as a FunctionDef",
                             op->name, op->def->type, key, a->name);
    if (depth > 32)
        return vg_status_set(st, VG_UNIMPLEMENTED, "node '%s': dataset functions nested more than 32 deep", op->name);
    if (!vg__grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v)) return VG_OOM(st, "function library");
    int fi = l->n++;
    xfn *f = &l->v[fi];
    memset(f, 0, sizeof *f);
    f->owner = op->graph;
    f->key = xstr(l, "%s", key);
    char nm[300];
    snprintf(nm, sizeof nm, "%s", op->name);
    for (char *p = nm; *p; p++)
        if (*p == '/') *p = '_';
    f->name = xstr(l, "__inference_Dataset_%s_%s_%d", transformation(op->def->type), nm, fi);
    f->body = body;
    int nin = body.nargs + body.ncap;
    f->in = xblock(l, (size_t)(nin ? nin : 1) * sizeof *f->in);
    f->in_type = xblock(l, (size_t)(nin ? nin : 1) * sizeof *f->in_type);
    f->out_type = xblock(l, (size_t)(body.nouts ? body.nouts : 1) * sizeof *f->out_type);
    if (!f->key || !f->name || !f->in || !f->in_type || !f->out_type) return VG_OOM(st, "function library");
    for (int i = 0; i < nin; i++) {
        vg_output o = i < body.nargs ? body.args[i] : body.caps[i - body.nargs];
        if (i < body.nargs && vg_output_dtype(o) == VG_RESOURCE && !is_dataset_value(o))
            return vg_status_set(st, VG_UNIMPLEMENTED,
                                 "node '%s' (%s): its function '%s' takes a resource handle that is not a dataset as "
                                 "argument %d, which vigil cannot write as a FunctionDef",
                                 op->name, op->def->type, key, i);
        f->in[i] = i < body.nargs ? xstr(l, "args_%d", i) : xstr(l, "%s", o.op->name);
        /* a dataset argument is a DT_VARIANT (TF 1.15's encoding of a window's components
         * and of group_by_window's window) */
        f->in_type[i] = i < body.nargs ? fn_dtype(o) : (int)vg_output_dtype(o);
        if (!f->in[i]) return VG_OOM(st, "function library");
        const vg_op *clash = vg_graph_op_by_name(body.g, f->in[i]);
        if (clash && clash != o.op)
            return vg_status_set(st, VG_UNIMPLEMENTED,
                                 "node '%s': function '%s' has a node named '%s', the name of its argument %d",
                                 op->name, key, f->in[i], i);
    }
    for (int i = 0; i < body.nouts; i++) f->out_type[i] = fn_dtype(body.outs[i]);
    return xlib_collect(l, body.g, depth + 1, st);
}

static vg_code xlib_collect(xlib *l, const vg_graph *g, int depth, vg_status *st) {
    size_t pl = strlen(l->h->key_prefix);
    for (int i = 0; i < g->nops; i++) {
        const vg_op *op = g->ops[i];
        for (int j = 0; j < op->nattrs; j++) {
            const vg__attr *a = &op->attrs[j];
            if (a->type != VG_ATTR_STRING || a->u.s.n <= pl || memcmp(a->u.s.p, l->h->key_prefix, pl) != 0) continue;
            vg_code c = xlib_add(l, op, a, depth, st);
            if (c) return c;
        }
    }
    return VG_OK;
}

/* The ret entries of f: "identity", "identity_1", ... sorted (map order). */
static int cmp_ret(const void *a, const void *b) { return strcmp(((char *const *)a)[0], ((char *const *)b)[0]); }

static char *out_name(xlib *l, int i) { return i ? xstr(l, "identity_%d", i) : xstr(l, "identity"); }

/* One body NodeDef (attrs sorted, nested functions as func attrs, no _output_shapes). */
static vg_code put_fnode(xlib *l, const xfn *f, vg__pb_buf *b, const vg_op *op, vg_status *st) {
    node_attrs na;
    if (!node_attrs_init_lib(&na, op, false, l)) return VG_OOM(st, "FunctionDef");
    vg__pb_put_string(b, 1, op->name);
    vg__pb_put_string(b, 2, op->def->type);
    for (int i = 0; i < op->ninputs; i++) {
        char *r = fn_ref(l, f, op->inputs[i], st);
        if (!r) {
            node_attrs_free(&na);
            return st && st->code ? st->code : VG_UNIMPLEMENTED;
        }
        vg__pb_put_string(b, 3, r);
    }
    for (int i = 0; i < op->ncontrol; i++) {
        char *r = xstr(l, "^%s", op->control[i]->name);
        if (!r) {
            node_attrs_free(&na);
            return VG_OOM(st, "FunctionDef");
        }
        vg__pb_put_string(b, 3, r);
    }
    if (op->device && *op->device) vg__pb_put_string(b, 4, op->device);
    for (int i = 0; i < na.n; i++) {
        const vg__attr *a = na.v[i];
        const tplan *p = &na.plans[i];
        put_len_hdr(b, 5, entry_sz(a, p));
        vg__pb_put_string(b, 1, a->name);
        put_len_hdr(b, 2, attr_sz(a, p));
        put_attr(b, a, p);
    }
    node_attrs_free(&na);
    return VG_OK;
}

static void put_argdef(vg__pb_buf *b, int field, const char *name, int type, vg__pb_buf *tmp) {
    vg__pb_reset(tmp);
    vg__pb_put_string(tmp, 1, name);
    vg__pb_put_uint64(tmp, 3, (uint64_t)type);
    vg__pb_put_message(b, field, tmp);
}

/* The ret entries (name, tensor) of f, sorted by name; NULL with st set on failure. */
static char **fn_rets(xlib *l, const xfn *f, vg_status *st) {
    char **rets = xblock(l, (size_t)(2 * (f->body.nouts ? f->body.nouts : 1)) * sizeof *rets);
    if (!rets) {
        VG_OOM(st, "FunctionDef");
        return NULL;
    }
    for (int i = 0; i < f->body.nouts; i++) {
        rets[2 * i] = out_name(l, i);
        rets[2 * i + 1] = fn_ref(l, f, f->body.outs[i], st);
        if (!rets[2 * i]) VG_OOM(st, "FunctionDef");
        if (!rets[2 * i] || !rets[2 * i + 1]) return NULL;
    }
    qsort(rets, (size_t)f->body.nouts, 2 * sizeof *rets, cmp_ret);
    return rets;
}

/* Whether op is one of f's argument placeholders (written as input_args, not nodes). */
static bool is_fn_arg_op(const xfn *f, const vg_op *op) { return fn_arg_of(f, (vg_output){(vg_op *)op, 0}) >= 0; }

static vg_code put_fdef(xlib *l, const xfn *f, vg__pb_buf *fd, vg_status *st) {
    vg__pb_buf sig, tmp, nd;
    vg__pb_init(&sig);
    vg__pb_init(&tmp);
    vg__pb_init(&nd);
    vg_code c = VG_OK;
    vg__pb_put_string(&sig, 1, f->name);
    for (int i = 0; i < f->body.nargs + f->body.ncap; i++) put_argdef(&sig, 2, f->in[i], f->in_type[i], &tmp);
    for (int i = 0; i < f->body.nouts; i++) {
        char *on = out_name(l, i);
        if (!on) c = VG_OOM(st, "FunctionDef");
        else put_argdef(&sig, 3, on, f->out_type[i], &tmp);
    }
    vg__pb_put_message(fd, 1, &sig);
    const vg_graph *g = f->body.g;
    for (int i = 0; !c && i < g->nops; i++) {
        if (is_fn_arg_op(f, g->ops[i])) continue;
        vg__pb_reset(&nd);
        c = put_fnode(l, f, &nd, g->ops[i], st);
        if (!c) vg__pb_put_message(fd, 3, &nd);
    }
    char **rets = c ? NULL : fn_rets(l, f, st);
    if (!c && !rets) c = st && st->code ? st->code : VG_UNIMPLEMENTED;
    for (int i = 0; !c && i < f->body.nouts; i++) {
        vg__pb_reset(&tmp);
        vg__pb_put_string(&tmp, 1, rets[2 * i]);
        vg__pb_put_string(&tmp, 2, rets[2 * i + 1]);
        vg__pb_put_message(fd, 4, &tmp);
    }
    if (!c && (sig.oom || tmp.oom || nd.oom)) c = VG_OOM(st, "FunctionDef");
    vg__pb_free(&sig);
    vg__pb_free(&tmp);
    vg__pb_free(&nd);
    return c;
}

/* The library of g's dataset functions into l (l->bytes empty when there are none). */
static vg_code xlib_build(xlib *l, const vg_graph *g, vg_status *st) {
    memset(l, 0, sizeof *l);
    vg__pb_init(&l->bytes);
    l->h = vg__graph_fn_hooks();
    if (!l->h) return VG_OK;
    vg_code c = xlib_collect(l, g, 0, st);
    vg__pb_buf fd;
    vg__pb_init(&fd);
    for (int i = 0; !c && i < l->n; i++) {
        vg__pb_reset(&fd);
        c = put_fdef(l, &l->v[i], &fd, st);
        if (!c) vg__pb_put_message(&l->bytes, 1, &fd);
    }
    if (!c && (fd.oom || l->bytes.oom)) c = VG_OOM(st, "FunctionDefLibrary");
    vg__pb_free(&fd);
    if (c) xlib_free(l);
    return c;
}

/* ------------------------------------------------------------------------ */
/* GraphDef {node = 1, library = 2, versions = 4 {producer = 1, min_consumer = 2}} */

static size_t versions_sz(void) { return var_fld(1, VG__GRAPHDEF_PRODUCER); }

/* Size of the GraphDef body; false on allocation failure. */
static bool graph_sz(const vg_graph *g, bool add_shapes, const xlib *lib, size_t *out) {
    size_t n = len_fld(4, versions_sz());
    if (lib && lib->bytes.len) n += len_fld(2, lib->bytes.len);
    for (int i = 0; i < g->nops; i++) {
        node_attrs na;
        if (!node_attrs_init_lib(&na, g->ops[i], add_shapes, lib)) return false;
        n += len_fld(1, node_sz(g->ops[i], &na));
        node_attrs_free(&na);
    }
    *out = n;
    return true;
}

/* Appends the GraphDef body (size from graph_sz) to b. */
static vg_code put_graph(vg__pb_buf *b, const vg_graph *g, bool add_shapes, const xlib *lib, size_t expect,
                         vg_status *st) {
    size_t start = b->len;
    if (!vg__pb_reserve(b, expect)) return VG_OOM(st, "GraphDef");
    for (int i = 0; i < g->nops; i++) {
        node_attrs na;
        if (!node_attrs_init_lib(&na, g->ops[i], add_shapes, lib)) return VG_OOM(st, "GraphDef");
        put_len_hdr(b, 1, node_sz(g->ops[i], &na));
        put_node(b, g->ops[i], &na);
        node_attrs_free(&na);
    }
    if (lib && lib->bytes.len) vg__pb_put_bytes(b, 2, lib->bytes.data, lib->bytes.len);
    put_len_hdr(b, 4, versions_sz());
    vg__pb_put_uint64(b, 1, VG__GRAPHDEF_PRODUCER);
    vg_code c = vg__pb_buf_status(b, "GraphDef", st);
    if (c) return c;
    if (b->len - start != expect)
        return vg_status_set(st, VG_INTERNAL, "GraphDef size mismatch (%zu written, %zu computed)", b->len - start,
                             expect);
    return VG_OK;
}

/* Hands the buffer's bytes to the caller (a vg__malloc block, freed with vg_free). */
/* Ends a serialization into b: on c (an error) frees b and returns c; else hands b's bytes
 * to *bytes / *len (an empty message still gets a valid pointer), RESOURCE_EXHAUSTED
 * naming what when that pointer cannot be had. */
static vg_code take_bytes(vg__pb_buf *b, vg_code c, const char *what, void **bytes, size_t *len, vg_status *st) {
    if (c) {
        vg__pb_free(b);
        return c;
    }
    *len = b->len;
    if (!b->data) b->data = vg__malloc(1); /* empty message: still a valid pointer */
    *bytes = b->data;
    vg__pb_init(b);
    if (!*bytes) return VG_OOM(st, what);
    vg_status_clear(st);
    return VG_OK;
}

static vg_code to_graphdef(const vg_graph *g, bool functions, void **bytes, size_t *len, vg_status *st) {
    if (!bytes || !len) return vg_status_set(st, VG_INVALID_ARGUMENT, "bytes or len is NULL");
    *bytes = NULL;
    *len = 0;
    if (!g) return vg_status_set(st, VG_INVALID_ARGUMENT, "graph is NULL");
    xlib lib;
    vg_code c = functions ? xlib_build(&lib, g, st) : VG_OK;
    if (c) return c;
    size_t n;
    if (!graph_sz(g, false, functions ? &lib : NULL, &n)) {
        if (functions) xlib_free(&lib);
        return VG_OOM(st, "GraphDef");
    }
    vg__pb_buf b;
    vg__pb_init(&b);
    c = put_graph(&b, g, false, functions ? &lib : NULL, n, st);
    if (functions) xlib_free(&lib);
    return take_bytes(&b, c, "GraphDef", bytes, len, st);
}

vg_code vg_graph_to_graphdef(const vg_graph *g, void **bytes, size_t *len, vg_status *st) {
    return to_graphdef(g, true, bytes, len, st);
}

vg_code vg__graph_to_graphdef_plain(const vg_graph *g, void **bytes, size_t *len, vg_status *st) {
    return to_graphdef(g, false, bytes, len, st);
}

/* ------------------------------------------------------------------------ */
/* MetaGraphDef */

static const char *const k_var_keys[] = {"variables", "trainable_variables", "local_variables", "model_variables",
                                         "global_step", "moving_average_variables", "metric_variables", NULL};
/* Collections of ops (TF stores op names); other items are tensors ("name:i"). */
static const char *const k_op_keys[] = {"train_op", "init_op", "local_init_op", "update_ops", "saved_model_main_op",
                                        "legacy_init_op", "table_initializer", NULL};

static bool in_list(const char *const *list, const char *key) {
    for (; *list; list++)
        if (strcmp(*list, key) == 0) return true;
    return false;
}

static bool is_variable_op(const vg_op *op) {
    return strcmp(op->def->type, "VariableV2") == 0 || strcmp(op->def->type, "Variable") == 0 ||
           strcmp(op->def->type, "VarHandleOp") == 0; /* a resource variable (is_resource) */
}

/* Appends "name:index" (or "name" when bare) as a string field. */
static void put_tensor_name(vg__pb_buf *b, int field, vg_output o, bool bare) {
    char d[16];
    int k = bare ? 0 : snprintf(d, sizeof d, ":%d", o.index);
    size_t n = strlen(o.op->name);
    put_len_hdr(b, field, n + (size_t)k);
    vg__pb_put_raw(b, o.op->name, n);
    if (k) vg__pb_put_raw(b, d, (size_t)k);
}

/* VariableDef {variable_name = 1, initializer_name = 2, snapshot_name = 3,
 * is_resource = 5, initial_value_name = 6, trainable = 7}. */
static void put_variable_def(vg__pb_buf *b, const vg_graph *g, vg_op *var) {
    put_tensor_name(b, 1, vg_out(var, 0), false);
    vg_op *init = vg_variable_initializer(var);
    if (init) vg__pb_put_string(b, 2, init->name);
    vg_output snap = vg_variable_snapshot(var);
    if (snap.op) put_tensor_name(b, 3, snap, false);
    if (strcmp(var->def->type, "VarHandleOp") == 0) vg__pb_put_bool(b, 5, true);
    if (init && init->ninputs >= 2 && init->inputs[1].op) put_tensor_name(b, 6, init->inputs[1], false);
    if (vg_graph_collection_has_op(g, VG_TRAINABLE_VARIABLES, var)) vg__pb_put_bool(b, 7, true);
}

/* QueueRunnerDef {queue_name = 1, enqueue_op_name = 2, close_op_name = 3,
 * cancel_op_name = 4, queue_closed_exception_types = 5 (packed enum)}. */
static void put_queue_runner_def(vg__pb_buf *b, const vg_queue_runner_def *qr) {
    if (qr->queue) vg__pb_put_string(b, 1, qr->queue->name);
    for (int i = 0; i < qr->n_enqueue; i++)
        if (qr->enqueue_ops[i]) vg__pb_put_string(b, 2, qr->enqueue_ops[i]->name);
    if (qr->close_op) vg__pb_put_string(b, 3, qr->close_op->name);
    if (qr->cancel_op) vg__pb_put_string(b, 4, qr->cancel_op->name);
    put_len_hdr(b, 5, 1);
    vg__pb_put_varint(b, VG_OUT_OF_RANGE); /* default: tf.errors.OutOfRangeError */
}

/* SaverDef {filename_tensor_name = 1, save_tensor_name = 2, restore_op_name = 3,
 * max_to_keep = 4, sharded = 5, keep_checkpoint_every_n_hours = 6, version = 7}. */
static void put_saver_def(vg__pb_buf *b, const vg_saver_def *sd) {
    if (sd->filename_tensor_name && *sd->filename_tensor_name) vg__pb_put_string(b, 1, sd->filename_tensor_name);
    if (sd->save_tensor_name && *sd->save_tensor_name) vg__pb_put_string(b, 2, sd->save_tensor_name);
    if (sd->restore_op_name && *sd->restore_op_name) vg__pb_put_string(b, 3, sd->restore_op_name);
    if (sd->max_to_keep) vg__pb_put_int32(b, 4, sd->max_to_keep);
    if (sd->sharded) vg__pb_put_bool(b, 5, true);
    if (sd->keep_checkpoint_every_n_hours != 0.0f) vg__pb_put_float(b, 6, sd->keep_checkpoint_every_n_hours);
    vg__pb_put_uint64(b, 7, 2); /* V2 */
}

/* A "savers" item is one of a saver's ops ("<scope>/restore_all", "<scope>/Const", ...):
 * its SaverDef follows from the scope; the other fields come from saver_def when it
 * describes the same saver, else TF's defaults. */
static void put_derived_saver_def(vg__pb_buf *b, const vg_op *op, const vg_saver_def *sd) {
    char fn[1024], save[1024], restore[1024];
    const char *slash = strrchr(op->name, '/');
    int k = slash ? (int)(slash - op->name) : (int)strlen(op->name);
    snprintf(fn, sizeof fn, "%.*s/Const:0", k, op->name);
    snprintf(save, sizeof save, "%.*s/control_dependency:0", k, op->name);
    snprintf(restore, sizeof restore, "%.*s/restore_all", k, op->name);
    vg_saver_def d = {fn, save, restore, 5, false, 10000.0f};
    if (sd && sd->restore_op_name && strcmp(sd->restore_op_name, restore) == 0) d = *sd;
    put_saver_def(b, &d);
}

/* Appends one CollectionDef body for key (empty when nothing is convertible). */
static void put_collection(vg__pb_buf *cd, vg__pb_buf *item, const vg_graph *g, const char *key,
                           const vg_saver_def *sd) {
    int n = 0;
    const vg_output *items = vg_graph_collection(g, key, &n);
    vg__pb_buf list;
    vg__pb_init(&list);
    int kind = 1; /* node_list */
    if (in_list(k_var_keys, key)) {
        kind = 2; /* bytes_list of VariableDef */
        for (int i = 0; i < n; i++) {
            if (!items[i].op || !is_variable_op(items[i].op)) continue;
            vg__pb_reset(item);
            put_variable_def(item, g, items[i].op);
            vg__pb_put_message(&list, 1, item);
        }
    } else if (strcmp(key, VG_QUEUE_RUNNERS) == 0) {
        kind = 2;
        for (int i = 0; i < vg_graph_num_queue_runners(g); i++) {
            vg__pb_reset(item);
            put_queue_runner_def(item, vg_graph_queue_runner(g, i));
            vg__pb_put_message(&list, 1, item);
        }
    } else if (strcmp(key, VG_SAVERS) == 0) {
        kind = 2;
        for (int i = 0; i < n; i++) {
            if (!items[i].op) continue;
            vg__pb_reset(item);
            put_derived_saver_def(item, items[i].op, sd);
            vg__pb_put_message(&list, 1, item);
        }
    } else {
        bool ops = in_list(k_op_keys, key);
        for (int i = 0; i < n; i++)
            if (items[i].op) put_tensor_name(&list, 1, items[i], ops || items[i].op->noutputs == 0);
    }
    if (list.len) vg__pb_put_message(cd, kind, &list);
    else if (list.oom) cd->oom = true;
    vg__pb_free(&list);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* collection_def map entries, sorted by key; empty collections are skipped (as TF). */
static vg_code put_collections(vg__pb_buf *b, const vg_graph *g, const vg_saver_def *sd, vg_status *st) {
    int nc = vg_graph_num_collections(g);
    const char **keys = vg__malloc((size_t)(nc ? nc : 1) * sizeof *keys);
    if (!keys) return VG_OOM(st, "MetaGraphDef");
    for (int i = 0; i < nc; i++) keys[i] = vg_graph_collection_name(g, i);
    qsort(keys, (size_t)nc, sizeof *keys, cmp_str);
    vg__pb_buf cd, item, entry;
    vg__pb_init(&cd);
    vg__pb_init(&item);
    vg__pb_init(&entry);
    for (int i = 0; i < nc; i++) {
        vg__pb_reset(&cd);
        put_collection(&cd, &item, g, keys[i], sd);
        if (!cd.len) continue;
        vg__pb_reset(&entry);
        vg__pb_put_string(&entry, 1, keys[i]);
        vg__pb_put_message(&entry, 2, &cd);
        vg__pb_put_message(b, 4, &entry);
    }
    if (cd.oom || item.oom || entry.oom) b->oom = true;
    vg__pb_free(&cd);
    vg__pb_free(&item);
    vg__pb_free(&entry);
    vg__free(keys);
    return vg__pb_buf_status(b, "MetaGraphDef", st);
}

vg_code vg_graph_to_meta_graph(const vg_graph *g, const vg_saver_def *saver_def, void **bytes, size_t *len,
                               vg_status *st) {
    if (!bytes || !len) return vg_status_set(st, VG_INVALID_ARGUMENT, "bytes or len is NULL");
    *bytes = NULL;
    *len = 0;
    if (!g) return vg_status_set(st, VG_INVALID_ARGUMENT, "graph is NULL");
    vg__pb_buf b, sub;
    vg__pb_init(&b);
    vg__pb_init(&sub);
    /* meta_info_def {tensorflow_version = 5, tensorflow_git_version = 6} */
    vg__pb_put_string(&sub, 5, VG__TF_VERSION);
    vg__pb_put_string(&sub, 6, VG__TF_GIT_VERSION);
    vg__pb_put_message(&b, 1, &sub);
    xlib lib;
    vg_code c = xlib_build(&lib, g, st);
    size_t gn;
    if (!c && !graph_sz(g, true, &lib, &gn)) c = VG_OOM(st, "MetaGraphDef");
    if (!c) {
        put_len_hdr(&b, 2, gn);
        c = put_graph(&b, g, true, &lib, gn, st);
    }
    xlib_free(&lib);
    if (!c && saver_def) {
        vg__pb_reset(&sub);
        put_saver_def(&sub, saver_def);
        vg__pb_put_message(&b, 3, &sub);
    }
    if (!c) c = put_collections(&b, g, saver_def, st);
    if (!c && sub.oom) c = VG_OOM(st, "MetaGraphDef");
    vg__pb_free(&sub);
    return take_bytes(&b, c, "MetaGraphDef", bytes, len, st);
}

vg_code vg_write_file_atomic(const char *path, const void *bytes, size_t len, vg_status *st) {
    if (!path || !*path) return vg_status_set(st, VG_INVALID_ARGUMENT, "empty file name");
    vg_code c = vg__io_write_file_atomic(path, bytes, len, st);
    if (!c) vg_status_clear(st);
    return c;
}

vg_code vg_read_file(const char *path, void **bytes, size_t *len, vg_status *st) {
    if (bytes) *bytes = NULL;
    if (len) *len = 0;
    if (!bytes || !len) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_read_file: NULL output");
    if (!path || !*path) return vg_status_set(st, VG_INVALID_ARGUMENT, "empty file name");
    uint8_t *d = NULL;
    vg_code c = vg__io_read_file(path, &d, len, st);
    if (c) return c;
    *bytes = d;
    vg_status_clear(st);
    return VG_OK;
}

/* ------------------------------------------------------------------------ */
/* Text format */

typedef struct printer {
    vg__pb_buf *b;
    int indent;
} printer;

static void p_raw(printer *p, const char *s, size_t n) { vg__pb_put_raw(p->b, s, n); }
static void p_str(printer *p, const char *s) { p_raw(p, s, strlen(s)); }

static void p_indent(printer *p) {
    static const char spaces[] = "                                ";
    for (int k = p->indent * 2; k > 0; k -= 32) p_raw(p, spaces, k < 32 ? (size_t)k : 32);
}

/* `name {` and the matching `}`. */
static void p_open(printer *p, const char *name) {
    p_indent(p);
    p_str(p, name);
    p_str(p, " {\n");
    p->indent++;
}

static void p_close(printer *p) {
    p->indent--;
    p_indent(p);
    p_str(p, "}\n");
}

/* `name: <value>` with a preformatted value. */
static void p_field(printer *p, const char *name, const char *value) {
    p_indent(p);
    p_str(p, name);
    p_str(p, ": ");
    p_str(p, value);
    p_raw(p, "\n", 1);
}

static void p_int(printer *p, const char *name, int64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    p_field(p, name, buf);
}

/* CEscape: \n \r \t \" \' \\ and 3-digit octal for other non-printable bytes. */
static void p_bytes(printer *p, const char *name, const void *data, size_t n) {
    const uint8_t *s = data;
    p_indent(p);
    p_str(p, name);
    p_str(p, ": \"");
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        char e[5];
        switch (c) {
        case '\n': p_raw(p, "\\n", 2); break;
        case '\r': p_raw(p, "\\r", 2); break;
        case '\t': p_raw(p, "\\t", 2); break;
        case '"': p_raw(p, "\\\"", 2); break;
        case '\'': p_raw(p, "\\'", 2); break;
        case '\\': p_raw(p, "\\\\", 2); break;
        default:
            if (c < 0x20 || c >= 0x7f) {
                snprintf(e, sizeof e, "\\%03o", c);
                p_raw(p, e, 4);
            } else {
                p_raw(p, (const char *)&c, 1);
            }
        }
    }
    p_str(p, "\"\n");
}

/* protobuf's SimpleFtoa / SimpleDtoa. */
static void fmt_float(float v, char *buf, size_t n) {
    if (isnan(v)) { snprintf(buf, n, "nan"); return; }
    if (isinf(v)) { snprintf(buf, n, v > 0 ? "inf" : "-inf"); return; }
    snprintf(buf, n, "%.*g", FLT_DIG, (double)v);
    if (strtof(buf, NULL) != v) snprintf(buf, n, "%.*g", FLT_DIG + 3, (double)v);
}

static void fmt_double(double v, char *buf, size_t n) {
    if (isnan(v)) { snprintf(buf, n, "nan"); return; }
    if (isinf(v)) { snprintf(buf, n, v > 0 ? "inf" : "-inf"); return; }
    snprintf(buf, n, "%.*g", DBL_DIG, v);
    if (strtod(buf, NULL) != v) snprintf(buf, n, "%.*g", DBL_DIG + 2, v);
}

static const char *const k_dt_names[] = {
    "DT_INVALID", "DT_FLOAT", "DT_DOUBLE", "DT_INT32", "DT_UINT8", "DT_INT16", "DT_INT8", "DT_STRING",
    "DT_COMPLEX64", "DT_INT64", "DT_BOOL", "DT_QINT8", "DT_QUINT8", "DT_QINT32", "DT_BFLOAT16", "DT_QINT16",
    "DT_QUINT16", "DT_UINT16", "DT_COMPLEX128", "DT_HALF", "DT_RESOURCE", "DT_VARIANT", "DT_UINT32", "DT_UINT64"};

static void p_dtype(printer *p, const char *name, int dt) {
    char buf[32];
    int base = dt > 100 ? dt - 100 : dt;
    if (base >= 0 && base < (int)(sizeof k_dt_names / sizeof *k_dt_names))
        snprintf(buf, sizeof buf, "%s%s", k_dt_names[base], dt > 100 ? "_REF" : "");
    else
        snprintf(buf, sizeof buf, "%d", dt);
    p_field(p, name, buf);
}

static void p_shape(printer *p, const char *name, const vg_shape *s) {
    p_open(p, name);
    if (s->ndims < 0) p_field(p, "unknown_rank", "true");
    for (int i = 0; s->ndims > 0 && i < s->ndims; i++) {
        p_open(p, "dim");
        if (s->dims[i]) p_int(p, "size", s->dims[i]);
        p_close(p);
    }
    p_close(p);
}

static void p_tensor(printer *p, const vg_tensor *t) {
    p_open(p, "tensor");
    if (t) {
        tplan pl = plan_tensor(t);
        vg_dtype dt = vg_tensor_dtype(t);
        vg_shape s = vg_tensor_shape(t);
        p_dtype(p, "dtype", dt);
        p_shape(p, "tensor_shape", &s);
        char buf[40];
        static const char *const typed[] = {[5] = "float_val", [6] = "double_val", [7] = "int_val",
                                            [10] = "int64_val", [11] = "bool_val", [13] = "half_val",
                                            [9] = "scomplex_val", [12] = "dcomplex_val"};
        if (pl.kind == TV_CONTENT) p_bytes(p, "tensor_content", vg_tensor_data(t), pl.payload);
        for (int64_t i = 0; pl.kind == TV_TYPED && (dt == VG_COMPLEX64 || dt == VG_COMPLEX128) && i < 2 * pl.n; i++) {
            if (dt == VG_COMPLEX64) fmt_float(((const float *)vg_tensor_data(t))[i], buf, sizeof buf); /* re, im */
            else fmt_double(((const double *)vg_tensor_data(t))[i], buf, sizeof buf);
            p_field(p, typed[pl.field], buf);
        }
        for (int64_t i = 0; pl.kind == TV_TYPED && dt != VG_COMPLEX64 && dt != VG_COMPLEX128 && i < pl.n; i++) {
            if (dt == VG_FLOAT) fmt_float(((const float *)vg_tensor_data(t))[i], buf, sizeof buf);
            else if (dt == VG_DOUBLE) fmt_double(((const double *)vg_tensor_data(t))[i], buf, sizeof buf);
            else if (dt == VG_BOOL) snprintf(buf, sizeof buf, "%s", int_elem(t, i) ? "true" : "false");
            else snprintf(buf, sizeof buf, "%lld", (long long)int_elem(t, i));
            p_field(p, typed[pl.field], buf);
        }
        for (int64_t i = 0; pl.kind == TV_STRING && i < pl.n; i++) {
            size_t len = 0;
            const char *str = vg_tensor_string(t, i, &len);
            p_bytes(p, "string_val", str, len);
        }
    }
    p_close(p);
}

static void p_list(printer *p, const vg__attr *a) {
    char buf[40];
    p_open(p, "list");
    for (int i = 0; i < a->u.list.n; i++) {
        switch (a->type) {
        case VG_ATTR_INT_LIST: p_int(p, "i", ((const int64_t *)a->u.list.p)[i]); break;
        case VG_ATTR_FLOAT_LIST:
            fmt_float(((const float *)a->u.list.p)[i], buf, sizeof buf);
            p_field(p, "f", buf);
            break;
        case VG_ATTR_TYPE_LIST: p_dtype(p, "type", (int)((const vg_dtype *)a->u.list.p)[i]); break;
        case VG_ATTR_SHAPE_LIST: p_shape(p, "shape", &((const vg_shape *)a->u.list.p)[i]); break;
        case VG_ATTR_STRING_LIST: {
            const char *s = ((char *const *)a->u.list.p)[i];
            p_bytes(p, "s", s, strlen(s));
            break;
        }
        default: break;
        }
    }
    p_close(p);
}

static void p_attr(printer *p, const vg__attr *a) {
    char buf[40];
    p_open(p, "attr");
    p_bytes(p, "key", a->name, strlen(a->name));
    p_open(p, "value");
    if ((int)a->type == (int)ATTR_FUNC) {
        p_open(p, "func");
        p_bytes(p, "name", a->u.s.p, a->u.s.n);
        p_close(p);
    }
    switch (a->type) {
    case VG_ATTR_INT: p_int(p, "i", a->u.i); break;
    case VG_ATTR_FLOAT:
        fmt_float(a->u.f, buf, sizeof buf);
        p_field(p, "f", buf);
        break;
    case VG_ATTR_BOOL: p_field(p, "b", a->u.b ? "true" : "false"); break;
    case VG_ATTR_TYPE: p_dtype(p, "type", (int)a->u.t); break;
    case VG_ATTR_SHAPE: p_shape(p, "shape", &a->u.shape); break;
    case VG_ATTR_STRING: p_bytes(p, "s", a->u.s.p, a->u.s.n); break;
    case VG_ATTR_TENSOR: p_tensor(p, a->u.tensor); break;
    default:
        if (is_list(a->type)) p_list(p, a);
        break;
    }
    p_close(p);
    p_close(p);
}

static void p_input(printer *p, const char *prefix, const char *name, int index) {
    char idx[16] = "";
    if (index) snprintf(idx, sizeof idx, ":%d", index);
    size_t n = strlen(prefix) + strlen(name) + strlen(idx);
    char local[256], *s = n < sizeof local ? local : vg__malloc(n + 1);
    if (!s) {
        p->b->oom = true;
        return;
    }
    snprintf(s, n + 1, "%s%s%s", prefix, name, idx);
    p_bytes(p, "input", s, n);
    if (s != local) vg__free(s);
}

/* A node, or (f set) a function body's node_def. */
static vg_code p_node(printer *p, const vg_op *op, xlib *lib, const xfn *f, vg_status *st) {
    node_attrs na;
    if (!node_attrs_init_lib(&na, op, false, lib)) return VG_OOM(st, "GraphDef text");
    p_open(p, f ? "node_def" : "node");
    p_bytes(p, "name", op->name, strlen(op->name));
    p_bytes(p, "op", op->def->type, strlen(op->def->type));
    for (int i = 0; f && i < op->ninputs; i++) {
        char *r = fn_ref(lib, f, op->inputs[i], st);
        if (!r) {
            node_attrs_free(&na);
            return st && st->code ? st->code : VG_UNIMPLEMENTED;
        }
        p_bytes(p, "input", r, strlen(r));
    }
    for (int i = 0; !f && i < op->ninputs; i++) p_input(p, "", op->inputs[i].op->name, op->inputs[i].index);
    for (int i = 0; i < op->ncontrol; i++) p_input(p, "^", op->control[i]->name, 0);
    if (op->device && *op->device) p_bytes(p, "device", op->device, strlen(op->device));
    for (int i = 0; i < na.n; i++) p_attr(p, na.v[i]);
    p_close(p);
    node_attrs_free(&na);
    return VG_OK;
}

static void p_argdef(printer *p, const char *field, const char *name, int type) {
    p_open(p, field);
    p_bytes(p, "name", name, strlen(name));
    p_dtype(p, "type", type);
    p_close(p);
}

/* library { function { signature {...} node_def {...} ret {...} } ... } */
static vg_code p_library(printer *p, xlib *l, vg_status *st) {
    p_open(p, "library");
    for (int k = 0; k < l->n; k++) {
        const xfn *f = &l->v[k];
        p_open(p, "function");
        p_open(p, "signature");
        p_bytes(p, "name", f->name, strlen(f->name));
        for (int i = 0; i < f->body.nargs + f->body.ncap; i++) p_argdef(p, "input_arg", f->in[i], f->in_type[i]);
        for (int i = 0; i < f->body.nouts; i++) {
            char *on = out_name(l, i);
            if (!on) return VG_OOM(st, "GraphDef text");
            p_argdef(p, "output_arg", on, f->out_type[i]);
        }
        p_close(p);
        for (int i = 0; i < f->body.g->nops; i++) {
            if (is_fn_arg_op(f, f->body.g->ops[i])) continue;
            vg_code c = p_node(p, f->body.g->ops[i], l, f, st);
            if (c) return c;
        }
        char **rets = fn_rets(l, f, st);
        if (!rets) return st && st->code ? st->code : VG_UNIMPLEMENTED;
        for (int i = 0; i < f->body.nouts; i++) {
            p_open(p, "ret");
            p_bytes(p, "key", rets[2 * i], strlen(rets[2 * i]));
            p_bytes(p, "value", rets[2 * i + 1], strlen(rets[2 * i + 1]));
            p_close(p);
        }
        p_close(p);
    }
    p_close(p);
    return VG_OK;
}

vg_code vg_graph_to_graphdef_text(const vg_graph *g, char **text, size_t *len, vg_status *st) {
    if (!text || !len) return vg_status_set(st, VG_INVALID_ARGUMENT, "text or len is NULL");
    *text = NULL;
    *len = 0;
    if (!g) return vg_status_set(st, VG_INVALID_ARGUMENT, "graph is NULL");
    xlib lib;
    vg_code c = xlib_build(&lib, g, st);
    if (c) return c;
    vg__pb_buf b;
    vg__pb_init(&b);
    printer p = {&b, 0};
    for (int i = 0; !c && i < g->nops; i++) c = p_node(&p, g->ops[i], &lib, NULL, st);
    if (!c && lib.n) c = p_library(&p, &lib, st);
    xlib_free(&lib);
    if (!c) {
        p_open(&p, "versions");
        p_int(&p, "producer", VG__GRAPHDEF_PRODUCER);
        p_close(&p);
        vg__pb_put_raw(&b, "", 1); /* NUL terminator */
        c = vg__pb_buf_status(&b, "GraphDef text", st);
    }
    if (c) {
        vg__pb_free(&b);
        return c;
    }
    *len = b.len - 1;
    *text = (char *)b.data;
    vg_status_clear(st);
    return VG_OK;
}
