/*
 * metagraph_import.c - MetaGraphDef import (tf.train.import_meta_graph /
 * meta_graph.import_scoped_meta_graph of TF 1.15) and finding a SavedModel's
 * MetaGraphDef by tags (loader_impl.get_meta_graph_def_from_tags).
 *
 * Wire format (meta_graph.proto, saver.proto, saved_model.proto, queue_runner.proto,
 * variable.proto):
 *   SavedModel   {saved_model_schema_version = 1, meta_graphs = 2}
 *   MetaGraphDef {meta_info_def = 1 {tags = 4, tensorflow_version = 5}, graph_def = 2,
 *                 saver_def = 3, collection_def = 4 (map: key 1, value 2),
 *                 signature_def = 5 (map: key 1, value 2), asset_file_def = 6}
 *   SaverDef     {filename_tensor_name = 1, save_tensor_name = 2, restore_op_name = 3,
 *                 max_to_keep = 4, sharded = 5, keep_checkpoint_every_n_hours = 6}
 *   CollectionDef {node_list = 1, bytes_list = 2, int64_list = 3, float_list = 4} each
 *                 {value = 1 repeated}
 *   VariableDef  {variable_name = 1, initializer_name = 2, snapshot_name = 3, trainable = 7}
 *   QueueRunnerDef {queue_name = 1, enqueue_op_name = 2, close_op_name = 3,
 *                 cancel_op_name = 4}
 *   SignatureDef {inputs = 1, outputs = 2 (map: key 1, TensorInfo 2 {name = 1}),
 *                 method_name = 3}
 *   AssetFileDef {tensor_info = 1 {name = 1}, filename = 2}; the "saved_model_assets"
 *                 collection holds them as CollectionDef.any_list = 5 {value = 1: Any
 *                 {type_url = 1, value = 2}} (TF 1.x before asset_file_def)
 */
#include "graph/import_internal.h"
#include "graph/pbtxt.h"
#include "io/io.h"
#include <stdio.h>
#include <stdlib.h>

typedef struct sig_tensor {
    char *key;
    vg_output out;
} sig_tensor;

typedef struct sig {
    char *key, *method;
    sig_tensor *t[2]; /* inputs, outputs */
    int n[2], cap[2];
} sig;

struct vg_meta_graph {
    bool has_saver;
    vg_saver_def saver;
    char *saver_strs[3];
    char **tags;
    int ntags, tags_cap;
    char *tf_version;
    sig *sigs;
    int nsigs, sigs_cap;
    /* assets: asset_file_def (field 6), else the "saved_model_assets" collection's
     * AnyList of AssetFileDefs (TF 1.x before asset_file_def); [0] and [1] */
    struct asset { char *filename; vg_output tensor; } *assets[2];
    int nassets[2], assets_cap[2];
};

void vg_meta_graph_free(vg_meta_graph *mg) {
    if (!mg) return;
    for (int i = 0; i < 3; i++) vg__free(mg->saver_strs[i]);
    for (int i = 0; i < mg->ntags; i++) vg__free(mg->tags[i]);
    vg__free(mg->tags);
    vg__free(mg->tf_version);
    for (int i = 0; i < mg->nsigs; i++) {
        vg__free(mg->sigs[i].key);
        vg__free(mg->sigs[i].method);
        for (int k = 0; k < 2; k++) {
            for (int j = 0; j < mg->sigs[i].n[k]; j++) vg__free(mg->sigs[i].t[k][j].key);
            vg__free(mg->sigs[i].t[k]);
        }
    }
    vg__free(mg->sigs);
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < mg->nassets[k]; i++) vg__free(mg->assets[k][i].filename);
        vg__free(mg->assets[k]);
    }
    vg__free(mg);
}

typedef struct mctx {
    vg_graph *g;
    const char *src;
    const char *scope;
    vg_status *st;
} mctx;

static vg_code data_loss(mctx *m, vg_code k, const char *what) {
    if (k == VG_DATA_LOSS) vg_status_prefix(m->st, "%s: %s: ", m->src, what);
    return k;
}

static char *dup_field(const vg__pb_field *f) { return vg__strndup((const char *)f->data, f->len); }

/* The graph element named name ("x:0" an output, "x" an op) after the import scope. */
static vg_code element(mctx *m, const uint8_t *p, size_t n, bool op_ok, vg_output *out, const char *what) {
    char name[1024];
    int r = m->scope ? snprintf(name, sizeof name, "%s/%.*s", m->scope, (int)n, (const char *)p)
                     : snprintf(name, sizeof name, "%.*s", (int)n, (const char *)p);
    if (r < 0 || (size_t)r >= sizeof name || memchr(p, 0, n))
        return vg_status_set(m->st, VG_INVALID_ARGUMENT, "%s: %s: bad name", m->src, what);
    if (op_ok && !strchr(name, ':')) {
        vg_op *op = vg_graph_op_by_name(m->g, name);
        if (!op) return vg_status_set(m->st, VG_INVALID_ARGUMENT, "%s: %s names '%s', not in the graph", m->src, what, name);
        *out = vg_out(op, 0);
        return VG_OK;
    }
    vg_status es;
    *out = vg_graph_output_by_name(m->g, name, &es);
    if (!out->op)
        return vg_status_set(m->st, VG_INVALID_ARGUMENT, "%s: %s names '%s': %s", m->src, what, name, es.msg);
    return VG_OK;
}

static vg_code add_item(mctx *m, const char *key, vg_output o) {
    int n = 0;
    const vg_output *items = vg_graph_collection(m->g, key, &n);
    for (int i = 0; i < n; i++)
        if (items[i].op == o.op && items[i].index == o.index) return VG_OK; /* already there */
    if (vg_graph_add_to_collection(m->g, key, o) != VG_OK) return vg_graph_status(m->g, m->st);
    return VG_OK;
}

static vg_code variable_def(mctx *m, const char *key, const uint8_t *p, size_t n) {
    vg__pb_reader r;
    vg__pb_field f;
    vg_code k;
    vg_output var = {0}, init = {0}, snap = {0};
    vg__pb_reader_init(&r, p, n);
    while ((k = vg__pb_next(&r, &f, m->st)) == VG_OK) {
        if (f.wiretype != VG__PB_LEN) continue;
        if (f.number == 1) k = element(m, f.data, f.len, false, &var, "VariableDef.variable_name");
        else if (f.number == 2) k = element(m, f.data, f.len, true, &init, "VariableDef.initializer_name");
        else if (f.number == 3) k = element(m, f.data, f.len, false, &snap, "VariableDef.snapshot_name");
        if (k) return k;
    }
    if (k != VG_OUT_OF_RANGE) return data_loss(m, k, "VariableDef");
    if (!var.op) return vg_status_set(m->st, VG_INVALID_ARGUMENT, "%s: a VariableDef in '%s' has no variable_name", m->src, key);
    if (init.op || snap.op) {
        vg_status vs;
        if (vg_variable_set_parts(var.op, init.op, snap, &vs) != VG_OK)
            return vg_status_set(m->st, VG_INVALID_ARGUMENT, "%s: VariableDef of '%s' in '%s': %s", m->src,
                                 vg_op_name(var.op), key, vs.msg);
    }
    return add_item(m, key, var);
}

static vg_code queue_runner_def(mctx *m, const uint8_t *p, size_t n) {
    vg__pb_reader r;
    vg__pb_field f;
    vg_code k;
    vg_output q = {0}, close = {0}, cancel = {0}, e;
    vg_op *enq[64];
    int nenq = 0;
    vg__pb_reader_init(&r, p, n);
    while ((k = vg__pb_next(&r, &f, m->st)) == VG_OK) {
        if (f.wiretype != VG__PB_LEN) continue;
        if (f.number == 1) k = element(m, f.data, f.len, true, &q, "QueueRunnerDef.queue_name");
        else if (f.number == 3) k = element(m, f.data, f.len, true, &close, "QueueRunnerDef.close_op_name");
        else if (f.number == 4) k = element(m, f.data, f.len, true, &cancel, "QueueRunnerDef.cancel_op_name");
        else if (f.number == 2) {
            if (nenq == 64)
                return vg_status_set(m->st, VG_UNIMPLEMENTED, "%s: a QueueRunnerDef has more than 64 enqueue ops", m->src);
            k = element(m, f.data, f.len, true, &e, "QueueRunnerDef.enqueue_op_name");
            enq[nenq++] = e.op;
        }
        if (k) return k;
    }
    if (k != VG_OUT_OF_RANGE) return data_loss(m, k, "QueueRunnerDef");
    vg_queue_runner_def d = {q.op, enq, nenq, close.op, cancel.op};
    if (vg_graph_add_queue_runner(m->g, &d) != VG_OK) return vg_graph_status(m->g, m->st);
    return VG_OK;
}

static bool is_variable_key(const char *key) {
    static const char *const keys[] = {"variables", "trainable_variables", "local_variables", "model_variables",
                                       "global_step", "moving_average_variables", "metric_variables", NULL};
    for (int i = 0; keys[i]; i++)
        if (strcmp(key, keys[i]) == 0) return true;
    return false;
}

/* AssetFileDef {tensor_info = 1 {name = 1}, filename = 2} into list `which`. */
static vg_code asset_file_def(mctx *m, vg_meta_graph *mg, int which, const uint8_t *p, size_t n) {
    vg__pb_reader r, tr;
    vg__pb_field f, tf;
    vg_code k;
    char *fname = NULL;
    vg_output t = {0};
    vg__pb_reader_init(&r, p, n);
    while ((k = vg__pb_next(&r, &f, m->st)) == VG_OK) {
        if (f.wiretype != VG__PB_LEN) continue;
        if (f.number == 2) {
            vg__free(fname);
            if (!(fname = dup_field(&f))) return VG_OOM(m->st, "asset");
        } else if (f.number == 1) {
            vg__pb_reader_init(&tr, f.data, f.len);
            while ((k = vg__pb_next(&tr, &tf, m->st)) == VG_OK)
                if (tf.number == 1 && tf.wiretype == VG__PB_LEN && (k = element(m, tf.data, tf.len, false, &t, "asset_file_def"))) {
                    vg__free(fname);
                    return k;
                }
            if (k != VG_OUT_OF_RANGE) {
                vg__free(fname);
                return data_loss(m, k, "AssetFileDef.tensor_info");
            }
        }
    }
    if (k != VG_OUT_OF_RANGE) {
        vg__free(fname);
        return data_loss(m, k, "AssetFileDef");
    }
    if (!t.op || !fname || !*fname || strchr(fname, '/') || !strcmp(fname, "..")) {
        vg_code c = vg_status_set(m->st, VG_INVALID_ARGUMENT, "%s: AssetFileDef needs a tensor and a plain file name "
                                  "(got '%s')", m->src, fname ? fname : "");
        vg__free(fname);
        return c;
    }
    if (!vg__grow((void **)&mg->assets[which], &mg->assets_cap[which], mg->nassets[which] + 1, sizeof(struct asset))) {
        vg__free(fname);
        return VG_OOM(m->st, "asset");
    }
    mg->assets[which][mg->nassets[which]++] = (struct asset){fname, t};
    return VG_OK;
}

/* CollectionDef.any_list (5) {value = 1: Any {type_url = 1, value = 2}} of
 * "saved_model_assets": AssetFileDefs. */
static vg_code assets_collection(mctx *m, vg_meta_graph *mg, const uint8_t *p, size_t n) {
    vg__pb_reader r, lr, ar;
    vg__pb_field f, lf, af;
    vg_code k;
    vg__pb_reader_init(&r, p, n);
    while ((k = vg__pb_next(&r, &f, m->st)) == VG_OK) {
        if (f.number != 5 || f.wiretype != VG__PB_LEN) continue;
        vg__pb_reader_init(&lr, f.data, f.len);
        while ((k = vg__pb_next(&lr, &lf, m->st)) == VG_OK) {
            if (lf.number != 1 || lf.wiretype != VG__PB_LEN) continue;
            vg__pb_reader_init(&ar, lf.data, lf.len);
            while ((k = vg__pb_next(&ar, &af, m->st)) == VG_OK)
                if (af.number == 2 && af.wiretype == VG__PB_LEN && (k = asset_file_def(m, mg, 1, af.data, af.len)))
                    return k;
            if (k != VG_OUT_OF_RANGE) return data_loss(m, k, "Any");
        }
        if (k != VG_OUT_OF_RANGE) return data_loss(m, k, "AnyList");
    }
    if (k != VG_OUT_OF_RANGE) return data_loss(m, k, "CollectionDef");
    return VG_OK;
}

static vg_code collection(mctx *m, const char *key, const uint8_t *p, size_t n) {
    vg__pb_reader r, lr;
    vg__pb_field f, lf;
    vg_code k;
    vg__pb_reader_init(&r, p, n);
    while ((k = vg__pb_next(&r, &f, m->st)) == VG_OK) {
        if (f.wiretype != VG__PB_LEN || (f.number != 1 && f.number != 2)) continue; /* int64/float lists skipped */
        bool var = f.number == 2 && is_variable_key(key);
        bool qr = f.number == 2 && strcmp(key, "queue_runners") == 0;
        if (f.number == 2 && !var && !qr) continue; /* savers, cond/while contexts, ... */
        vg__pb_reader_init(&lr, f.data, f.len);
        while ((k = vg__pb_next(&lr, &lf, m->st)) == VG_OK) {
            if (lf.number != 1 || lf.wiretype != VG__PB_LEN) continue;
            if (var) k = variable_def(m, key, lf.data, lf.len);
            else if (qr) k = queue_runner_def(m, lf.data, lf.len);
            else {
                vg_output o;
                char what[160];
                snprintf(what, sizeof what, "collection '%.100s'", key);
                k = element(m, lf.data, lf.len, true, &o, what);
                if (!k) k = add_item(m, key, o);
            }
            if (k) return k;
        }
        if (k != VG_OUT_OF_RANGE) return data_loss(m, k, "CollectionDef");
    }
    if (k != VG_OUT_OF_RANGE) return data_loss(m, k, "CollectionDef");
    return VG_OK;
}

static vg_code signature(mctx *m, vg_meta_graph *mg, const uint8_t *p, size_t n) {
    vg__pb_reader r, sr, er, tr;
    vg__pb_field f, sf, ef, tf;
    vg_code k;
    char *key = NULL;
    const uint8_t *val = NULL;
    size_t vlen = 0;
    vg__pb_reader_init(&r, p, n);
    while ((k = vg__pb_next(&r, &f, m->st)) == VG_OK) {
        if (f.wiretype != VG__PB_LEN) continue;
        if (f.number == 1) {
            vg__free(key);
            if (!(key = dup_field(&f))) return VG_OOM(m->st, "signature");
        } else if (f.number == 2) {
            val = f.data;
            vlen = f.len;
        }
    }
    if (k != VG_OUT_OF_RANGE) {
        vg__free(key);
        return data_loss(m, k, "SignatureDef map entry");
    }
    if (!vg__grow((void **)&mg->sigs, &mg->sigs_cap, mg->nsigs + 1, sizeof(sig))) {
        vg__free(key);
        return VG_OOM(m->st, "signature");
    }
    sig *s = &mg->sigs[mg->nsigs++];
    memset(s, 0, sizeof *s);
    s->key = key ? key : vg__strdup("");
    if (!s->key) return VG_OOM(m->st, "signature");
    vg__pb_reader_init(&sr, val ? val : (const uint8_t *)"", vlen);
    while ((k = vg__pb_next(&sr, &sf, m->st)) == VG_OK) {
        if (sf.wiretype != VG__PB_LEN) continue;
        if (sf.number == 3) {
            vg__free(s->method);
            if (!(s->method = dup_field(&sf))) return VG_OOM(m->st, "signature");
            continue;
        }
        if (sf.number != 1 && sf.number != 2) continue;
        int io = sf.number - 1;
        char *tkey = NULL;
        vg_output out = {0};
        bool have = false;
        vg__pb_reader_init(&er, sf.data, sf.len);
        while ((k = vg__pb_next(&er, &ef, m->st)) == VG_OK) {
            if (ef.wiretype != VG__PB_LEN) continue;
            if (ef.number == 1) {
                vg__free(tkey);
                if (!(tkey = dup_field(&ef))) return VG_OOM(m->st, "signature");
            } else if (ef.number == 2) {
                vg__pb_reader_init(&tr, ef.data, ef.len);
                while ((k = vg__pb_next(&tr, &tf, m->st)) == VG_OK)
                    if (tf.number == 1 && tf.wiretype == VG__PB_LEN) {
                        char what[200];
                        snprintf(what, sizeof what, "signature '%.80s'", s->key);
                        /* TF 2's init op signature names an op (often a NoOp) */
                        bool op_ok = strcmp(s->key, "__saved_model_init_op") == 0;
                        if ((k = element(m, tf.data, tf.len, op_ok, &out, what))) {
                            vg__free(tkey);
                            return k;
                        }
                        have = true;
                    }
                if (k != VG_OUT_OF_RANGE) {
                    vg__free(tkey);
                    return data_loss(m, k, "TensorInfo");
                }
            }
        }
        if (k != VG_OUT_OF_RANGE || !have) {
            vg__free(tkey);
            if (k != VG_OUT_OF_RANGE) return data_loss(m, k, "SignatureDef");
            continue; /* sparse / composite TensorInfo: not supported, skipped */
        }
        if (!vg__grow((void **)&s->t[io], &s->cap[io], s->n[io] + 1, sizeof(sig_tensor))) {
            vg__free(tkey);
            return VG_OOM(m->st, "signature");
        }
        s->t[io][s->n[io]++] = (sig_tensor){tkey ? tkey : vg__strdup(""), out};
    }
    if (k != VG_OUT_OF_RANGE) return data_loss(m, k, "SignatureDef");
    if (!s->method && !(s->method = vg__strdup(""))) return VG_OOM(m->st, "signature");
    return VG_OK;
}

/* SaverDef names with the import scope in front. */
static vg_code saver_def(mctx *m, vg_meta_graph *mg, const uint8_t *p, size_t n) {
    vg__pb_reader r;
    vg__pb_field f;
    vg_code k;
    mg->has_saver = true;
    mg->saver.max_to_keep = 0;
    vg__pb_reader_init(&r, p, n);
    while ((k = vg__pb_next(&r, &f, m->st)) == VG_OK) {
        if (f.number >= 1 && f.number <= 3 && f.wiretype == VG__PB_LEN) {
            char buf[1024];
            int w = m->scope ? snprintf(buf, sizeof buf, "%s/%.*s", m->scope, (int)f.len, (const char *)f.data)
                             : snprintf(buf, sizeof buf, "%.*s", (int)f.len, (const char *)f.data);
            if (w < 0 || (size_t)w >= sizeof buf) return vg_status_set(m->st, VG_INVALID_ARGUMENT, "%s: SaverDef name too long", m->src);
            vg__free(mg->saver_strs[f.number - 1]);
            if (!(mg->saver_strs[f.number - 1] = vg__strdup(buf))) return VG_OOM(m->st, "SaverDef");
        } else if (f.number == 4 && f.wiretype == VG__PB_VARINT) {
            mg->saver.max_to_keep = (int)(int32_t)f.u;
        } else if (f.number == 5 && f.wiretype == VG__PB_VARINT) {
            mg->saver.sharded = f.u != 0;
        } else if (f.number == 6 && f.wiretype == VG__PB_FIXED32) {
            mg->saver.keep_checkpoint_every_n_hours = vg__pb_as_float(&f);
        }
    }
    if (k != VG_OUT_OF_RANGE) return data_loss(m, k, "SaverDef");
    for (int i = 0; i < 3; i++)
        if (!mg->saver_strs[i] && !(mg->saver_strs[i] = vg__strdup(""))) return VG_OOM(m->st, "SaverDef");
    mg->saver.filename_tensor_name = mg->saver_strs[0];
    mg->saver.save_tensor_name = mg->saver_strs[1];
    mg->saver.restore_op_name = mg->saver_strs[2];
    return VG_OK;
}

static vg_code meta_info(mctx *m, vg_meta_graph *mg, const uint8_t *p, size_t n) {
    vg__pb_reader r;
    vg__pb_field f;
    vg_code k;
    vg__pb_reader_init(&r, p, n);
    while ((k = vg__pb_next(&r, &f, m->st)) == VG_OK) {
        if (f.wiretype != VG__PB_LEN) continue;
        if (f.number == 4) {
            if (!vg__grow((void **)&mg->tags, &mg->tags_cap, mg->ntags + 1, sizeof(char *)) ||
                !(mg->tags[mg->ntags] = dup_field(&f)))
                return VG_OOM(m->st, "tags");
            mg->ntags++;
        } else if (f.number == 5) {
            vg__free(mg->tf_version);
            if (!(mg->tf_version = dup_field(&f))) return VG_OOM(m->st, "meta_info_def");
        }
    }
    if (k != VG_OUT_OF_RANGE) return data_loss(m, k, "MetaInfoDef");
    return VG_OK;
}

/* Imports one binary MetaGraphDef. */
static vg_code import_meta(vg_graph *g, const uint8_t *p, size_t n, const vg_meta_import_options *o,
                           vg_meta_graph **out, vg_status *st) {
    if (out) *out = NULL;
    mctx m = {g, o->source ? o->source : "MetaGraphDef", o->import_scope && *o->import_scope ? o->import_scope : NULL, st};
    vg_meta_graph *mg = vg__calloc(1, sizeof *mg);
    if (!mg) return VG_OOM(st, "meta graph");
    vg__pb_reader r;
    vg__pb_field f;
    vg_code k;
    const uint8_t *gd = NULL;
    size_t gd_len = 0;
    /* pass 1: meta info, saver def, graph def location */
    vg__pb_reader_init(&r, p, n);
    while ((k = vg__pb_next(&r, &f, st)) == VG_OK) {
        if (f.wiretype != VG__PB_LEN) continue;
        if (f.number == 1) k = meta_info(&m, mg, f.data, f.len);
        else if (f.number == 3) k = saver_def(&m, mg, f.data, f.len);
        else if (f.number == 2) {
            gd = f.data;
            gd_len = f.len;
        }
        if (k) goto fail;
    }
    if (k != VG_OUT_OF_RANGE) {
        data_loss(&m, k, "MetaGraphDef");
        goto fail;
    }
    /* the graph */
    char omit[1024] = "";
    if (o->omit_saver && mg->has_saver) {
        /* the scope of restore_op_name as written ("save/restore_all" -> "save") */
        const char *rn = mg->saver_strs[2] + (m.scope ? strlen(m.scope) + 1 : 0);
        const char *slash = strrchr(rn, '/');
        if (slash && (size_t)(slash - rn) < sizeof omit) {
            memcpy(omit, rn, (size_t)(slash - rn));
            omit[slash - rn] = 0;
        }
    }
    vg_import_options io = {0};
    io.prefix = m.scope;
    io.source = m.src;
    io.format = VG_IMPORT_BINARY;
    io.clear_devices = o->clear_devices;
    io.max_tensor_bytes = o->max_tensor_bytes;
    if ((k = vg__import_graph_def_ex(g, gd ? gd : (const uint8_t *)"", gd_len, &io, omit[0] ? omit : NULL, st)))
        goto fail;
    /* pass 2: collections (VariableDefs first so variables exist in collection order),
     * signatures */
    vg__pb_reader_init(&r, p, n);
    while ((k = vg__pb_next(&r, &f, st)) == VG_OK) {
        if (f.wiretype != VG__PB_LEN || (f.number != 4 && f.number != 5 && f.number != 6)) continue;
        if (f.number == 6) {
            if ((k = asset_file_def(&m, mg, 0, f.data, f.len))) goto fail;
            continue;
        }
        if (f.number == 5) {
            if ((k = signature(&m, mg, f.data, f.len))) goto fail;
            continue;
        }
        vg__pb_reader er;
        vg__pb_field ef;
        char *key = NULL;
        const uint8_t *val = NULL;
        size_t vlen = 0;
        vg__pb_reader_init(&er, f.data, f.len);
        while ((k = vg__pb_next(&er, &ef, st)) == VG_OK) {
            if (ef.wiretype != VG__PB_LEN) continue;
            if (ef.number == 1) {
                vg__free(key);
                key = dup_field(&ef);
                if (!key) {
                    k = VG_OOM(st, "collection key");
                    break;
                }
            } else if (ef.number == 2) {
                val = ef.data;
                vlen = ef.len;
            }
        }
        if (k == VG_OUT_OF_RANGE && key && val && strcmp(key, "saved_model_assets") == 0)
            k = assets_collection(&m, mg, val, vlen);
        else if (k == VG_OUT_OF_RANGE) k = key && val ? collection(&m, key, val, vlen) : VG_OK;
        else data_loss(&m, k, "collection_def");
        vg__free(key);
        if (k) goto fail;
    }
    if (k != VG_OUT_OF_RANGE) {
        data_loss(&m, k, "MetaGraphDef");
        goto fail;
    }
    if (out) *out = mg;
    else vg_meta_graph_free(mg);
    vg_status_clear(st);
    return VG_OK;
fail:
    vg_meta_graph_free(mg);
    return k ? k : vg_status_set(st, VG_INTERNAL, "meta graph import failed");
}

vg_code vg_import_meta_graph(vg_graph *g, const void *bytes, size_t len, const vg_meta_import_options *opts,
                             vg_meta_graph **out, vg_status *st) {
    vg_meta_import_options none = {0};
    const vg_meta_import_options *o = opts ? opts : &none;
    if (out) *out = NULL;
    if (!g || (!bytes && len)) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_import_meta_graph: NULL graph or bytes");
    if (!vg__pbtxt_looks_like_text(bytes, len)) return import_meta(g, bytes ? bytes : "", len, o, out, st);
    vg__pb_buf bin;
    vg__pb_init(&bin);
    vg_code k = vg__pbtxt_to_binary(bytes, len, VG__PBTXT_META_GRAPH_DEF, &bin, st);
    if (k) vg_status_prefix(st, "%s: ", o->source ? o->source : "MetaGraphDef");
    else k = import_meta(g, bin.data ? bin.data : (const uint8_t *)"", bin.len, o, out, st);
    vg__pb_free(&bin);
    return k;
}

vg_code vg_import_meta_graph_file(vg_graph *g, const char *path, const vg_meta_import_options *opts,
                                  vg_meta_graph **out, vg_status *st) {
    if (out) *out = NULL;
    uint8_t *data;
    size_t len;
    vg_code k = vg__import_read_path("vg_import_meta_graph_file", path, &data, &len, st);
    if (k) return k;
    vg_meta_import_options o = {0};
    if (opts) o = *opts;
    if (!o.source) o.source = path;
    k = vg_import_meta_graph(g, data, len, &o, out, st);
    vg__free(data);
    return k;
}

/* Tag set of one MetaGraphDef (sorted copies joined by ","), for matching and messages. */
static void tag_set(const uint8_t *p, size_t n, char *buf, size_t cap) {
    const char *tags[32];
    size_t lens[32];
    int nt = 0;
    vg__pb_reader r, ir;
    vg__pb_field f, tf;
    vg_status st;
    vg__pb_reader_init(&r, p, n);
    while (vg__pb_next(&r, &f, &st) == VG_OK) {
        if (f.number != 1 || f.wiretype != VG__PB_LEN) continue;
        vg__pb_reader_init(&ir, f.data, f.len);
        while (vg__pb_next(&ir, &tf, &st) == VG_OK)
            if (tf.number == 4 && tf.wiretype == VG__PB_LEN && nt < 32) {
                tags[nt] = (const char *)tf.data;
                lens[nt++] = tf.len;
            }
    }
    /* insertion sort by bytes */
    for (int i = 1; i < nt; i++)
        for (int j = i; j > 0; j--) {
            size_t l = lens[j] < lens[j - 1] ? lens[j] : lens[j - 1];
            int c = memcmp(tags[j], tags[j - 1], l);
            if (c > 0 || (c == 0 && lens[j] >= lens[j - 1])) break;
            const char *t = tags[j];
            tags[j] = tags[j - 1];
            tags[j - 1] = t;
            size_t tl = lens[j];
            lens[j] = lens[j - 1];
            lens[j - 1] = tl;
        }
    size_t pos = 0;
    buf[0] = 0;
    for (int i = 0; i < nt && pos < cap; i++)
        pos += (size_t)snprintf(buf + pos, cap - pos, "%s%.*s", i ? "," : "", (int)lens[i], tags[i]);
}

static int cmp_cstr(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

vg_code vg_import_saved_model_graph(vg_graph *g, const char *saved_model_pb, const char *const *tags, int ntags,
                                    const vg_meta_import_options *opts, vg_meta_graph **out, vg_status *st) {
    if (out) *out = NULL;
    if (!saved_model_pb)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_import_saved_model_graph: saved_model_pb is NULL");
    if (ntags < 0 || ntags > 32 || (ntags && !tags))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_import_saved_model_graph: bad tags");
    uint8_t *data = NULL;
    size_t len = 0;
    vg_code k = vg__io_read_file(saved_model_pb, &data, &len, st);
    if (k) return k;
    vg__pb_buf bin;
    vg__pb_init(&bin);
    const uint8_t *p = data;
    size_t n = len;
    if (vg__pbtxt_looks_like_text(data, len)) {
        if ((k = vg__pbtxt_to_binary((const char *)data, len, VG__PBTXT_SAVED_MODEL, &bin, st))) {
            vg_status_prefix(st, "%s: ", saved_model_pb);
            goto done;
        }
        p = bin.data ? bin.data : (const uint8_t *)"";
        n = bin.len;
    }
    const char *want_sorted[32];
    for (int i = 0; i < ntags; i++) want_sorted[i] = tags[i];
    qsort(want_sorted, (size_t)ntags, sizeof *want_sorted, cmp_cstr);
    char want[1024] = "", have[1024] = "", all[1024] = "";
    size_t pos = 0;
    for (int i = 0; i < ntags && pos < sizeof want; i++)
        pos += (size_t)snprintf(want + pos, sizeof want - pos, "%s%s", i ? "," : "", want_sorted[i]);
    vg__pb_reader r;
    vg__pb_field f;
    const uint8_t *found = NULL;
    size_t found_len = 0, apos = 0;
    vg__pb_reader_init(&r, p, n);
    while ((k = vg__pb_next(&r, &f, st)) == VG_OK) {
        if (f.number != 2 || f.wiretype != VG__PB_LEN) continue;
        tag_set(f.data, f.len, have, sizeof have);
        if (apos < sizeof all) apos += (size_t)snprintf(all + apos, sizeof all - apos, "%s[%s]", apos ? " " : "", have);
        if (!found && (ntags == 0 || strcmp(have, want) == 0)) {
            found = f.data;
            found_len = f.len;
        }
    }
    if (k != VG_OUT_OF_RANGE) {
        vg_status_prefix(st, "%s: SavedModel: ", saved_model_pb);
        goto done;
    }
    if (!found) {
        k = vg_status_set(st, VG_NOT_FOUND,
                          "%s: MetaGraphDef associated with tags [%s] could not be found in SavedModel. Available "
                          "tag sets: %s",
                          saved_model_pb, want, all[0] ? all : "(none)");
        goto done;
    }
    vg_meta_import_options o = {0};
    if (opts) o = *opts;
    if (!o.source) o.source = saved_model_pb;
    k = import_meta(g, found, found_len, &o, out, st);
done:
    vg__pb_free(&bin);
    vg__free(data);
    return k;
}

const vg_saver_def *vg_meta_graph_saver_def(const vg_meta_graph *mg) { return mg && mg->has_saver ? &mg->saver : NULL; }
int vg_meta_graph_num_tags(const vg_meta_graph *mg) { return mg ? mg->ntags : 0; }
const char *vg_meta_graph_tag(const vg_meta_graph *mg, int i) { return mg && i >= 0 && i < mg->ntags ? mg->tags[i] : NULL; }
const char *vg_meta_graph_tensorflow_version(const vg_meta_graph *mg) {
    return mg && mg->tf_version ? mg->tf_version : "";
}
int vg_meta_graph_num_signatures(const vg_meta_graph *mg) { return mg ? mg->nsigs : 0; }
static const sig *sig_at(const vg_meta_graph *mg, int i) { return mg && i >= 0 && i < mg->nsigs ? &mg->sigs[i] : NULL; }
const char *vg_meta_graph_signature_key(const vg_meta_graph *mg, int i) {
    const sig *s = sig_at(mg, i);
    return s ? s->key : NULL;
}
const char *vg_meta_graph_signature_method(const vg_meta_graph *mg, int i) {
    const sig *s = sig_at(mg, i);
    return s ? s->method : NULL;
}
int vg_meta_graph_signature_num_tensors(const vg_meta_graph *mg, int i, bool outputs) {
    const sig *s = sig_at(mg, i);
    return s ? s->n[outputs] : 0;
}
const char *vg_meta_graph_signature_tensor_key(const vg_meta_graph *mg, int i, bool outputs, int j) {
    const sig *s = sig_at(mg, i);
    return s && j >= 0 && j < s->n[outputs] ? s->t[outputs][j].key : NULL;
}
vg_output vg_meta_graph_signature_tensor(const vg_meta_graph *mg, int i, bool outputs, int j) {
    const sig *s = sig_at(mg, i);
    vg_output none = {NULL, 0};
    return s && j >= 0 && j < s->n[outputs] ? s->t[outputs][j].out : none;
}
int vg_meta_graph_find_signature(const vg_meta_graph *mg, const char *key) {
    for (int i = 0; mg && key && i < mg->nsigs; i++)
        if (strcmp(mg->sigs[i].key, key) == 0) return i;
    return -1;
}

vg_code vg_meta_graph_def_graph_def(const void *bytes, size_t len, bool saved_model, const char *const *tags,
                                    int ntags, const void **graph_def, size_t *graph_def_len, vg_status *st) {
    if (!graph_def || !graph_def_len)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_meta_graph_def_graph_def: %s is NULL",
                             graph_def ? "graph_def_len" : "graph_def");
    *graph_def = "";
    *graph_def_len = 0;
    if (!bytes && len) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_meta_graph_def_graph_def: bytes is NULL");
    if (ntags < 0 || ntags > 32 || (ntags && !tags)) return vg_status_set(st, VG_INVALID_ARGUMENT, "bad tags");
    vg__pb_reader r;
    vg__pb_field f;
    vg_code k;
    const uint8_t *meta = bytes;
    size_t mlen = len;
    if (saved_model) {
        char want[1024] = "", have[1024];
        const char *sorted[32];
        for (int i = 0; i < ntags; i++) sorted[i] = tags[i];
        qsort(sorted, (size_t)ntags, sizeof *sorted, cmp_cstr);
        size_t pos = 0;
        for (int i = 0; i < ntags && pos < sizeof want; i++)
            pos += (size_t)snprintf(want + pos, sizeof want - pos, "%s%s", i ? "," : "", sorted[i]);
        meta = NULL;
        vg__pb_reader_init(&r, bytes ? bytes : "", len);
        while ((k = vg__pb_next(&r, &f, st)) == VG_OK) {
            if (f.number != 2 || f.wiretype != VG__PB_LEN) continue;
            tag_set(f.data, f.len, have, sizeof have);
            if (!meta && (ntags == 0 || strcmp(have, want) == 0)) {
                meta = f.data;
                mlen = f.len;
            }
        }
        if (k != VG_OUT_OF_RANGE) return k;
        if (!meta) return vg_status_set(st, VG_NOT_FOUND, "no MetaGraphDef with tags [%s] in the SavedModel", want);
    }
    vg__pb_reader_init(&r, meta ? meta : (const uint8_t *)"", mlen);
    while ((k = vg__pb_next(&r, &f, st)) == VG_OK)
        if (f.number == 2 && f.wiretype == VG__PB_LEN) {
            *graph_def = f.data;
            *graph_def_len = f.len;
        }
    if (k != VG_OUT_OF_RANGE) return k;
    vg_status_clear(st);
    return VG_OK;
}

/* Assets as loader_impl.get_asset_tensors reads them: asset_file_def when non-empty,
 * else the "saved_model_assets" collection. */
int vg_meta_graph_num_assets(const vg_meta_graph *mg) {
    if (!mg) return 0;
    return mg->nassets[0] ? mg->nassets[0] : mg->nassets[1];
}

static const struct asset *asset_at(const vg_meta_graph *mg, int i) {
    int w = mg && mg->nassets[0] ? 0 : 1;
    return mg && i >= 0 && i < mg->nassets[w] ? &mg->assets[w][i] : NULL;
}

const char *vg_meta_graph_asset_filename(const vg_meta_graph *mg, int i) {
    const struct asset *a = asset_at(mg, i);
    return a ? a->filename : NULL;
}

vg_output vg_meta_graph_asset_tensor(const vg_meta_graph *mg, int i) {
    const struct asset *a = asset_at(mg, i);
    return a ? a->tensor : (vg_output){0};
}

vg_code vg_proto_text_to_binary(const void *text, size_t len, const char *message, void **bytes, size_t *out_len,
                                vg_status *st) {
    if (bytes) *bytes = NULL;
    if (out_len) *out_len = 0;
    if ((!text && len) || !message || !bytes || !out_len)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_proto_text_to_binary: NULL argument");
    vg__pbtxt_root root;
    if (!strcmp(message, "GraphDef")) root = VG__PBTXT_GRAPH_DEF;
    else if (!strcmp(message, "MetaGraphDef")) root = VG__PBTXT_META_GRAPH_DEF;
    else if (!strcmp(message, "SavedModel")) root = VG__PBTXT_SAVED_MODEL;
    else return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_proto_text_to_binary: unknown message '%s'", message);
    vg__pb_buf bin;
    vg__pb_init(&bin);
    vg_code k = vg__pbtxt_to_binary(text ? text : "", len, root, &bin, st);
    if (k) {
        vg__pb_free(&bin);
        return k;
    }
    *bytes = bin.data ? (void *)bin.data : vg__malloc(1);
    *out_len = bin.len;
    if (!*bytes) return VG_OOM(st, "binary proto");
    vg_status_clear(st);
    return VG_OK;
}
