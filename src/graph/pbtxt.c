/*
 * pbtxt.c - protobuf text format (as TF's graph.pbtxt / text MetaGraphDefs) converted
 * to wire format with a built-in schema (field names, numbers and kinds taken from TF
 * 1.15's graph.proto, node_def.proto, attr_value.proto, tensor.proto,
 * tensor_shape.proto, versions.proto, meta_graph.proto, saver.proto,
 * saved_model.proto). Only the fields vigil reads are known; other fields are skipped
 * whole, as the binary reader skips unknown field numbers.
 *
 * Grammar accepted (protobuf's TextFormat): `name: scalar`, `name { ... }`,
 * `name: { ... }`, `name < ... >`, repeated values as `name: [a, b]`, strings in
 * single or double quotes with C escapes (adjacent strings concatenate), `#` comments,
 * optional `,` / `;` separators, numbers in decimal, hex, octal, floats with inf/nan.
 */
#include "graph/pbtxt.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef enum kind { K_INT, K_BOOL, K_ENUM, K_FLOAT, K_DOUBLE, K_STRING, K_MSG } kind;

typedef struct field_def field_def;
typedef struct msg_def {
    const char *name;
    const field_def *fields;
} msg_def;

struct field_def {
    const char *name;
    int number;
    kind k;
    const msg_def *sub;             /* K_MSG */
    const char *const *enum_names;  /* K_ENUM: names indexed by value */
    int n_enum;
};

static const char *const k_dt[] = {
    "DT_INVALID", "DT_FLOAT", "DT_DOUBLE", "DT_INT32", "DT_UINT8", "DT_INT16", "DT_INT8", "DT_STRING",
    "DT_COMPLEX64", "DT_INT64", "DT_BOOL", "DT_QINT8", "DT_QUINT8", "DT_QINT32", "DT_BFLOAT16", "DT_QINT16",
    "DT_QUINT16", "DT_UINT16", "DT_COMPLEX128", "DT_HALF", "DT_RESOURCE", "DT_VARIANT", "DT_UINT32", "DT_UINT64"};
#define N_DT ((int)(sizeof k_dt / sizeof *k_dt))
static const char *const k_saver_version[] = {"LEGACY", "V1", "V2"};

const char *vg__pbtxt_dtype_name(int dt) {
    if (dt >= 0 && dt < N_DT) return k_dt[dt];
    return NULL;
}

#define F(n, num, kd) {n, num, kd, NULL, NULL, 0}
#define M(n, num, sub) {n, num, K_MSG, &sub, NULL, 0}
#define DT(n, num) {n, num, K_ENUM, NULL, k_dt, N_DT}
#define END {NULL, 0, K_INT, NULL, NULL, 0}

static const msg_def m_dim, m_shape, m_tensor, m_list, m_attr, m_attr_entry, m_name_attr_list, m_node, m_versions,
    m_graph, m_meta_info, m_saver, m_coll_node, m_coll_bytes, m_coll_int, m_coll_float, m_any, m_coll_any, m_coll,
    m_coll_entry,
    m_tinfo, m_tinfo_entry, m_sig, m_sig_entry, m_asset, m_meta, m_saved_model;

static const field_def f_dim[] = {F("size", 1, K_INT), F("name", 2, K_STRING), END};
static const msg_def m_dim = {"TensorShapeProto.Dim", f_dim};
static const field_def f_shape[] = {M("dim", 2, m_dim), F("unknown_rank", 3, K_BOOL), END};
static const msg_def m_shape = {"TensorShapeProto", f_shape};
static const field_def f_tensor[] = {DT("dtype", 1),
                                     M("tensor_shape", 2, m_shape),
                                     F("version_number", 3, K_INT),
                                     F("tensor_content", 4, K_STRING),
                                     F("half_val", 13, K_INT),
                                     F("float_val", 5, K_FLOAT),
                                     F("double_val", 6, K_DOUBLE),
                                     F("int_val", 7, K_INT),
                                     F("string_val", 8, K_STRING),
                                     F("scomplex_val", 9, K_FLOAT),
                                     F("int64_val", 10, K_INT),
                                     F("bool_val", 11, K_BOOL),
                                     F("dcomplex_val", 12, K_DOUBLE),
                                     F("uint32_val", 16, K_INT),
                                     F("uint64_val", 17, K_INT),
                                     END};
static const msg_def m_tensor = {"TensorProto", f_tensor};
static const field_def f_list[] = {F("s", 2, K_STRING),       F("i", 3, K_INT),  F("f", 4, K_FLOAT),
                                   F("b", 5, K_BOOL),         DT("type", 6),     M("shape", 7, m_shape),
                                   M("tensor", 8, m_tensor),  M("func", 9, m_name_attr_list), END};
static const msg_def m_list = {"AttrValue.ListValue", f_list};
static const field_def f_attr[] = {M("list", 1, m_list),     F("s", 2, K_STRING),
                                   F("i", 3, K_INT),         F("f", 4, K_FLOAT),
                                   F("b", 5, K_BOOL),        DT("type", 6),
                                   M("shape", 7, m_shape),   M("tensor", 8, m_tensor),
                                   F("placeholder", 9, K_STRING), M("func", 10, m_name_attr_list),
                                   END};
static const msg_def m_attr = {"AttrValue", f_attr};
static const field_def f_attr_entry[] = {F("key", 1, K_STRING), M("value", 2, m_attr), END};
static const msg_def m_attr_entry = {"AttrValue map entry", f_attr_entry};
static const field_def f_name_attr_list[] = {F("name", 1, K_STRING), M("attr", 2, m_attr_entry), END};
static const msg_def m_name_attr_list = {"NameAttrList", f_name_attr_list};
static const field_def f_node[] = {F("name", 1, K_STRING),  F("op", 2, K_STRING),
                                   F("input", 3, K_STRING), F("device", 4, K_STRING),
                                   M("attr", 5, m_attr_entry), END};
static const msg_def m_node = {"NodeDef", f_node};
static const field_def f_versions[] = {F("producer", 1, K_INT), F("min_consumer", 2, K_INT),
                                       F("bad_consumers", 3, K_INT), END};
static const msg_def m_versions = {"VersionDef", f_versions};
/* GraphDef.library (function.proto, op_def.proto): what the importer's function
 * inlining reads */
static const field_def f_fn_argdef[] = {F("name", 1, K_STRING),        F("description", 2, K_STRING),
                                        DT("type", 3),                  F("type_attr", 4, K_STRING),
                                        F("number_attr", 5, K_STRING),  F("type_list_attr", 6, K_STRING),
                                        F("is_ref", 16, K_BOOL),        END};
static const msg_def m_fn_argdef = {"OpDef.ArgDef", f_fn_argdef};
static const field_def f_fn_attrdef[] = {F("name", 1, K_STRING), F("type", 2, K_STRING),
                                         M("default_value", 3, m_attr), F("description", 4, K_STRING), END};
static const msg_def m_fn_attrdef = {"OpDef.AttrDef", f_fn_attrdef};
static const field_def f_fn_sig[] = {F("name", 1, K_STRING), M("input_arg", 2, m_fn_argdef),
                                     M("output_arg", 3, m_fn_argdef), M("attr", 4, m_fn_attrdef),
                                     F("control_output", 20, K_STRING), F("is_stateful", 17, K_BOOL), END};
static const msg_def m_fn_sig = {"OpDef", f_fn_sig};
static const field_def f_fn_ret[] = {F("key", 1, K_STRING), F("value", 2, K_STRING), END};
static const msg_def m_fn_ret = {"FunctionDef.RetEntry", f_fn_ret};
static const field_def f_fn[] = {M("signature", 1, m_fn_sig), M("attr", 5, m_attr_entry),
                                 M("node_def", 3, m_node),    M("ret", 4, m_fn_ret),
                                 M("control_ret", 6, m_fn_ret), END};
static const msg_def m_fn = {"FunctionDef", f_fn};
static const field_def f_lib[] = {M("function", 1, m_fn), END};
static const msg_def m_lib = {"FunctionDefLibrary", f_lib};
static const field_def f_graph[] = {M("node", 1, m_node), M("versions", 4, m_versions), F("version", 3, K_INT),
                                    M("library", 2, m_lib), END};
static const msg_def m_graph = {"GraphDef", f_graph};

static const field_def f_meta_info[] = {F("meta_graph_version", 1, K_STRING), F("tags", 4, K_STRING),
                                        F("tensorflow_version", 5, K_STRING),
                                        F("tensorflow_git_version", 6, K_STRING),
                                        F("stripped_default_attrs", 7, K_BOOL), END};
static const msg_def m_meta_info = {"MetaInfoDef", f_meta_info};
static const field_def f_saver[] = {F("filename_tensor_name", 1, K_STRING),
                                    F("save_tensor_name", 2, K_STRING),
                                    F("restore_op_name", 3, K_STRING),
                                    F("max_to_keep", 4, K_INT),
                                    F("sharded", 5, K_BOOL),
                                    F("keep_checkpoint_every_n_hours", 6, K_FLOAT),
                                    {"version", 7, K_ENUM, NULL, k_saver_version, 3},
                                    END};
static const msg_def m_saver = {"SaverDef", f_saver};
static const field_def f_coll_node[] = {F("value", 1, K_STRING), END};
static const msg_def m_coll_node = {"CollectionDef.NodeList", f_coll_node};
static const msg_def m_coll_bytes = {"CollectionDef.BytesList", f_coll_node};
static const field_def f_coll_int[] = {F("value", 1, K_INT), END};
static const msg_def m_coll_int = {"CollectionDef.Int64List", f_coll_int};
static const field_def f_coll_float[] = {F("value", 1, K_FLOAT), END};
static const msg_def m_coll_float = {"CollectionDef.FloatList", f_coll_float};
static const field_def f_any[] = {F("type_url", 1, K_STRING), F("value", 2, K_STRING), END};
static const msg_def m_any = {"google.protobuf.Any", f_any};
static const field_def f_coll_any[] = {M("value", 1, m_any), END};
static const msg_def m_coll_any = {"CollectionDef.AnyList", f_coll_any};
static const field_def f_coll[] = {M("node_list", 1, m_coll_node), M("bytes_list", 2, m_coll_bytes),
                                   M("int64_list", 3, m_coll_int), M("float_list", 4, m_coll_float),
                                   M("any_list", 5, m_coll_any), END};
static const msg_def m_coll = {"CollectionDef", f_coll};
static const field_def f_coll_entry[] = {F("key", 1, K_STRING), M("value", 2, m_coll), END};
static const msg_def m_coll_entry = {"CollectionDef map entry", f_coll_entry};
static const field_def f_tinfo[] = {F("name", 1, K_STRING), DT("dtype", 2), M("tensor_shape", 3, m_shape), END};
static const msg_def m_tinfo = {"TensorInfo", f_tinfo};
static const field_def f_tinfo_entry[] = {F("key", 1, K_STRING), M("value", 2, m_tinfo), END};
static const msg_def m_tinfo_entry = {"TensorInfo map entry", f_tinfo_entry};
static const field_def f_sig[] = {M("inputs", 1, m_tinfo_entry), M("outputs", 2, m_tinfo_entry),
                                  F("method_name", 3, K_STRING), END};
static const msg_def m_sig = {"SignatureDef", f_sig};
static const field_def f_sig_entry[] = {F("key", 1, K_STRING), M("value", 2, m_sig), END};
static const msg_def m_sig_entry = {"SignatureDef map entry", f_sig_entry};
static const field_def f_asset[] = {M("tensor_info", 1, m_tinfo), F("filename", 2, K_STRING), END};
static const msg_def m_asset = {"AssetFileDef", f_asset};
static const field_def f_meta[] = {M("meta_info_def", 1, m_meta_info), M("graph_def", 2, m_graph),
                                   M("saver_def", 3, m_saver),         M("collection_def", 4, m_coll_entry),
                                   M("signature_def", 5, m_sig_entry), M("asset_file_def", 6, m_asset),
                                   END};
static const msg_def m_meta = {"MetaGraphDef", f_meta};
static const field_def f_saved_model[] = {F("saved_model_schema_version", 1, K_INT), M("meta_graphs", 2, m_meta),
                                          END};
static const msg_def m_saved_model = {"SavedModel", f_saved_model};

/* ------------------------------------------------------------------------ */
/* tokenizer */

typedef struct lexer {
    const char *p, *end;
    int line;
    vg_status *st;
} lexer;

static void skip_ws(lexer *lx) {
    while (lx->p < lx->end) {
        char c = *lx->p;
        if (c == '\n') {
            lx->line++;
            lx->p++;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            lx->p++;
        } else if (c == '#') {
            while (lx->p < lx->end && *lx->p != '\n') lx->p++;
        } else {
            break;
        }
    }
}

static bool is_ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static vg_code syntax(lexer *lx, const char *what) {
    char near[24];
    size_t n = 0;
    while (lx->p + n < lx->end && n < sizeof near - 1 && lx->p[n] != '\n') {
        near[n] = (lx->p[n] >= 32 && lx->p[n] < 127) ? lx->p[n] : '?';
        n++;
    }
    near[n] = 0;
    return vg_status_set(lx->st, VG_INVALID_ARGUMENT, "text proto line %d: %s (at \"%s\")", lx->line, what, near);
}

static bool peek(lexer *lx, char c) {
    skip_ws(lx);
    return lx->p < lx->end && *lx->p == c;
}

static bool accept(lexer *lx, char c) {
    if (!peek(lx, c)) return false;
    lx->p++;
    return true;
}

/* An identifier or number-ish token (letters, digits, '_', '.', '+', '-'). */
static bool word(lexer *lx, const char **s, size_t *n) {
    skip_ws(lx);
    const char *b = lx->p;
    while (lx->p < lx->end && (is_ident_char(*lx->p) || *lx->p == '.' || *lx->p == '-' || *lx->p == '+')) lx->p++;
    *s = b;
    *n = (size_t)(lx->p - b);
    return *n > 0;
}

/* One or more adjacent quoted strings, unescaped into out. */
static vg_code string_value(lexer *lx, vg__pb_buf *out) {
    bool any = false;
    while (peek(lx, '"') || peek(lx, '\'')) {
        char q = *lx->p++;
        any = true;
        for (;;) {
            if (lx->p >= lx->end || *lx->p == '\n') return syntax(lx, "unterminated string");
            char c = *lx->p++;
            if (c == q) break;
            if (c != '\\') {
                vg__pb_put_raw(out, &c, 1);
                continue;
            }
            const char *bad = vg__io_pbtxt_unescape(&lx->p, lx->end, false, out);
            if (bad) return syntax(lx, bad);
        }
    }
    if (!any) return syntax(lx, "expected a quoted string");
    return VG_OK;
}

static bool word_eq(const char *s, size_t n, const char *lit) { return strlen(lit) == n && memcmp(s, lit, n) == 0; }

static bool parse_int(const char *s, size_t n, int64_t *v) {
    char buf[64];
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *e;
    errno = 0;
    if (buf[0] == '-') {
        long long x = strtoll(buf, &e, 0);
        if (errno || *e) return false;
        *v = x;
    } else {
        unsigned long long x = strtoull(buf[0] == '+' ? buf + 1 : buf, &e, 0);
        if (errno || *e) return false;
        *v = (int64_t)x;
    }
    return true;
}

static int ci_eq(const char *a, const char *b) {
    for (; *a && *b; a++, b++) {
        char x = *a >= 'A' && *a <= 'Z' ? (char)(*a + 32) : *a;
        if (x != *b) return 0;
    }
    return *a == *b;
}

static bool parse_double(const char *s, size_t n, double *v) {
    char buf[64];
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, s, n);
    buf[n] = 0;
    size_t m = n;
    if (m > 1 && (buf[m - 1] == 'f' || buf[m - 1] == 'F') && !strchr(buf, 'x') && !strchr(buf, 'X')) {
        const char *t = buf[0] == '-' ? buf + 1 : buf;
        if (!ci_eq(t, "inf")) buf[--m] = 0; /* 1.5f */
    }
    const char *t = buf[0] == '-' || buf[0] == '+' ? buf + 1 : buf;
    double sign = buf[0] == '-' ? -1.0 : 1.0;
    if (ci_eq(t, "inf") || ci_eq(t, "infinity")) {
        *v = sign * INFINITY;
        return true;
    }
    if (ci_eq(t, "nan")) {
        *v = NAN;
        return true;
    }
    char *e;
    *v = strtod(buf, &e);
    return *e == 0;
}

/* ------------------------------------------------------------------------ */
/* parser */

static vg_code parse_message(lexer *lx, const msg_def *md, vg__pb_buf *out, char close, int depth);

static const field_def *find_field(const msg_def *md, const char *s, size_t n) {
    for (const field_def *f = md->fields; f->name; f++)
        if (word_eq(s, n, f->name)) return f;
    return NULL;
}

/* Skips one value: a block, a list or scalar tokens. */
static vg_code skip_value(lexer *lx, int depth) {
    if (depth > 64) return syntax(lx, "nesting deeper than 64");
    if (peek(lx, '{') || peek(lx, '<')) {
        char close = *lx->p == '{' ? '}' : '>';
        lx->p++;
        for (;;) {
            if (accept(lx, close)) return VG_OK;
            const char *s;
            size_t n;
            if (accept(lx, '[')) { /* extension / Any type URL */
                while (lx->p < lx->end && *lx->p != ']') lx->p++;
                if (!accept(lx, ']')) return syntax(lx, "unterminated [");
            } else if (!word(lx, &s, &n)) {
                return syntax(lx, "expected a field name");
            }
            accept(lx, ':');
            vg_code c = skip_value(lx, depth + 1);
            if (c) return c;
            if (!accept(lx, ',')) accept(lx, ';');
        }
    }
    if (accept(lx, '[')) {
        if (accept(lx, ']')) return VG_OK;
        for (;;) {
            vg_code c = skip_value(lx, depth + 1);
            if (c) return c;
            if (accept(lx, ']')) return VG_OK;
            if (!accept(lx, ',')) return syntax(lx, "expected ',' or ']'");
        }
    }
    if (peek(lx, '"') || peek(lx, '\'')) {
        vg__pb_buf tmp;
        vg__pb_init(&tmp);
        vg_code c = string_value(lx, &tmp);
        vg__pb_free(&tmp);
        return c;
    }
    const char *s;
    size_t n;
    if (!word(lx, &s, &n)) return syntax(lx, "expected a value");
    return VG_OK;
}

static vg_code scalar(lexer *lx, const field_def *f, vg__pb_buf *out) {
    const char *s;
    size_t n;
    if (f->k == K_STRING) {
        vg__pb_buf tmp;
        vg__pb_init(&tmp);
        vg_code c = string_value(lx, &tmp);
        if (!c) vg__pb_put_bytes(out, f->number, tmp.data ? tmp.data : (const void *)"", tmp.len);
        if (tmp.oom) out->oom = true;
        vg__pb_free(&tmp);
        return c;
    }
    if (!word(lx, &s, &n)) return syntax(lx, "expected a value");
    int64_t iv;
    double dv;
    switch (f->k) {
    case K_INT:
        if (!parse_int(s, n, &iv)) return syntax(lx, "bad integer");
        vg__pb_put_tag(out, f->number, VG__PB_VARINT); /* zeros kept: repeated fields need them */
        vg__pb_put_varint(out, (uint64_t)iv);
        return VG_OK;
    case K_BOOL:
        if (word_eq(s, n, "true") || word_eq(s, n, "True") || word_eq(s, n, "t") || word_eq(s, n, "1")) iv = 1;
        else if (word_eq(s, n, "false") || word_eq(s, n, "False") || word_eq(s, n, "f") || word_eq(s, n, "0")) iv = 0;
        else return syntax(lx, "bad bool");
        vg__pb_put_tag(out, f->number, VG__PB_VARINT);
        vg__pb_put_varint(out, (uint64_t)iv);
        return VG_OK;
    case K_ENUM:
        iv = -1;
        for (int i = 0; i < f->n_enum; i++)
            if (word_eq(s, n, f->enum_names[i])) iv = i;
        if (iv < 0) {
            if (!parse_int(s, n, &iv)) return syntax(lx, "unknown enum value");
        }
        vg__pb_put_tag(out, f->number, VG__PB_VARINT);
        vg__pb_put_varint(out, (uint64_t)iv);
        return VG_OK;
    case K_FLOAT:
        if (!parse_double(s, n, &dv)) return syntax(lx, "bad float");
        vg__pb_put_tag(out, f->number, VG__PB_FIXED32);
        {
            float fv = (float)dv;
            uint32_t u;
            memcpy(&u, &fv, 4);
            vg__pb_put_fixed32(out, u);
        }
        return VG_OK;
    case K_DOUBLE:
        if (!parse_double(s, n, &dv)) return syntax(lx, "bad double");
        {
            uint64_t u;
            memcpy(&u, &dv, 8);
            vg__pb_put_tag(out, f->number, VG__PB_FIXED64);
            vg__pb_put_fixed64(out, u);
        }
        return VG_OK;
    default: return syntax(lx, "internal: bad kind");
    }
}

static vg_code value(lexer *lx, const field_def *f, vg__pb_buf *out, int depth) {
    if (f->k != K_MSG) return scalar(lx, f, out);
    char close;
    if (accept(lx, '{')) close = '}';
    else if (accept(lx, '<')) close = '>';
    else return syntax(lx, "expected '{'");
    vg__pb_buf sub;
    vg__pb_init(&sub);
    vg_code c = parse_message(lx, f->sub, &sub, close, depth + 1);
    if (!c) vg__pb_put_message(out, f->number, &sub);
    vg__pb_free(&sub);
    return c;
}

static vg_code parse_message(lexer *lx, const msg_def *md, vg__pb_buf *out, char close, int depth) {
    if (depth > 64) return syntax(lx, "nesting deeper than 64");
    for (;;) {
        skip_ws(lx);
        if (lx->p >= lx->end) {
            if (close) return syntax(lx, "unexpected end of text (missing '}')");
            return VG_OK;
        }
        if (close && accept(lx, close)) return VG_OK;
        const char *s;
        size_t n;
        if (accept(lx, '[')) { /* extension or Any: skip */
            while (lx->p < lx->end && *lx->p != ']') lx->p++;
            if (!accept(lx, ']')) return syntax(lx, "unterminated [");
            accept(lx, ':');
            vg_code c = skip_value(lx, depth + 1);
            if (c) return c;
            continue;
        }
        if (!word(lx, &s, &n)) return syntax(lx, "expected a field name");
        const field_def *f = find_field(md, s, n);
        bool colon = accept(lx, ':');
        vg_code c;
        if (!f) {
            c = skip_value(lx, depth + 1);
        } else if (f->k != K_MSG && !colon) {
            return syntax(lx, "expected ':' after a scalar field name");
        } else if (accept(lx, '[')) {
            c = VG_OK;
            if (!accept(lx, ']'))
                for (;;) {
                    c = value(lx, f, out, depth);
                    if (c || accept(lx, ']')) break;
                    if (!accept(lx, ',')) {
                        c = syntax(lx, "expected ',' or ']'");
                        break;
                    }
                }
        } else {
            c = value(lx, f, out, depth);
        }
        if (c) return c;
        if (out->oom) return VG_OOM(lx->st, "text proto");
        if (!accept(lx, ',')) accept(lx, ';');
    }
}

vg_code vg__pbtxt_to_binary(const char *text, size_t len, vg__pbtxt_root root, vg__pb_buf *out, vg_status *st) {
    lexer lx = {text, text + len, 1, st};
    const msg_def *md = root == VG__PBTXT_GRAPH_DEF ? &m_graph : root == VG__PBTXT_META_GRAPH_DEF ? &m_meta
                                                                                                    : &m_saved_model;
    vg_code c = parse_message(&lx, md, out, 0, 0);
    if (!c && out->oom) c = VG_OOM(st, "text proto");
    return c;
}

bool vg__pbtxt_looks_like_text(const void *bytes, size_t len) {
    const unsigned char *p = bytes;
    if (len == 0) return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = p[i];
        if (c < 0x20 && c != '\n' && c != '\t' && c != '\r') return false;
        if (c == 0x7f) return false;
    }
    return true;
}
