/*
 * saver.c - tf.train.Saver (TF1, V2 checkpoints, non-sharded layout).
 *
 * vg_saver_new adds TF's save/restore ops to the graph (names as TF 1.x writes them):
 *   save/Const                      string scalar "model": the filename, fed by save/restore
 *   save/SaveV2/tensor_names        variable names, sorted
 *   save/SaveV2/shape_and_slices    "" per variable
 *   save/SaveV2                     SaveV2(Const, tensor_names, shape_and_slices, vars...)
 *   save/control_dependency         Identity(Const) after SaveV2: the save tensor
 *   save/RestoreV2[/tensor_names, /shape_and_slices]   one RestoreV2 for all variables
 *   save/Assign, save/Assign_1, ... Assign(var, RestoreV2:i)
 *   save/restore_all                NoOp after every Assign
 *
 * Saving writes "<prefix>.meta" (temp file, fsync, rename), then runs the save tensor
 * with the prefix fed (SaveV2 writes data and index under temp names, fsyncs, renames
 * and fsyncs the directory, which also makes the .meta rename durable), then replaces
 * the `checkpoint` state file atomically (fsync'ed, directory too), then deletes the
 * checkpoint that fell out of max_to_keep (its .meta, .index, then data: the mirror of
 * the write order). A kill at any point leaves `checkpoint` naming a complete
 * checkpoint; a .meta without an .index is an unfinished save that nothing refers to
 * (and a failed save removes it).
 *
 * Restoring first checks the checkpoint's index against the variables (every key
 * present, dtype and shape equal), then runs restore_all; RestoreV2 reads every tensor
 * before any Assign runs, so a failing restore leaves all variables unchanged.
 *
 * Bookkeeping follows saver.py (_RecordLastCheckpoint, _MaybeDeleteOldCheckpoints) and
 * checkpoint_management.py (generate_checkpoint_state_proto: when the save directory
 * is relative, the state file holds paths relative to it). Not thread-safe: use one
 * saver from one thread at a time (any number of sessions may run meanwhile).
 */
#include "train_util.h"
#include "io/io.h"
#include "vigil/data.h"
#include "vigil/graphdef.h"
#include "vigil/ops.h"
#include "vigil/resource_variables.h"
#include "vigil/saver.h"
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct ckpt_entry {
    char *path;
    double time;
    bool own; /* written by this saver (else adopted: vg_saver_recover_last_checkpoints) */
} ckpt_entry;

typedef struct ckpt_list {
    ckpt_entry *v;
    int n, cap;
} ckpt_list;

struct vg_saver {
    vg_graph *g;
    int nvars;
    vg_op **vars;               /* sorted by checkpoint key */
    char **keys;                /* checkpoint keys ({name: variable} map); NULL = op names */
    vg_op *filename_op;         /* save/Const */
    vg_op *save_tensor_op;      /* save/control_dependency */
    vg_op *restore_op;          /* save/restore_all */
    char *filename_name, *save_name;
    int max_to_keep;
    double keep_hours;
    double next_keep_time;      /* keep_checkpoint_every_n_hours deadline */
    bool write_meta, sharded;
    ckpt_list last;             /* managed checkpoints, oldest first */
    bool cleaned;               /* the start-up clean-up has run (clean_stale_files) */
    char *home;                 /* the directory recovered paths must lie in (NULL: unknown) */
    ckpt_list to_delete;
    void *meta;                 /* cached .meta bytes (finalized graph) */
    size_t meta_len;
    int meta_nops;
};

static double now_secs(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* printf into a new string (vg_malloc). */
static char *str_printf(const char *fmt, ...) VG_PRINTF(1, 2);
static char *str_printf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return NULL;
    char *s = vg_malloc((size_t)n + 1);
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

/* ------------------------------------------------------------------------ */
/* paths (os.path semantics) */

/* os.path.dirname: everything before the last '/', trailing slashes removed (unless
 * only slashes remain). New string. */
static char *path_dirname(const char *p) {
    const char *slash = strrchr(p, '/');
    if (!slash) return vg__train_strdup("");
    size_t n = (size_t)(slash - p) + 1;
    while (n > 1 && p[n - 1] == '/') n--;
    if (n == 1 && p[0] == '/') return vg__train_strdup("/");
    return vg__train_strndup(p, n - (p[n - 1] == '/' ? 1 : 0));
}

static const char *path_basename(const char *p) {
    const char *slash = strrchr(p, '/');
    return slash ? slash + 1 : p;
}

/* os.path.join(dir, name). */
static char *path_join(const char *dir, const char *name) {
    if (!*dir || name[0] == '/') return vg__train_strdup(name);
    return str_printf("%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name);
}

/* The components of abspath(p) (normalized; ".." at the root stays at the root).
 * comps points into *buf (new). Returns the count, or -1 on allocation failure. */
static int abs_components(const char *p, char **buf, char ***comps) {
    char cwd[4096] = "";
    if (p[0] != '/' && !getcwd(cwd, sizeof cwd)) cwd[0] = 0;
    *buf = str_printf("%s/%s", cwd, p);
    *comps = *buf ? vg_malloc((strlen(*buf) / 2 + 2) * sizeof(char *)) : NULL;
    if (!*comps) {
        vg_free(*buf);
        *buf = NULL;
        return -1;
    }
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(*buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
        if (strcmp(tok, ".") == 0) continue;
        if (strcmp(tok, "..") == 0) {
            if (n) n--;
            continue;
        }
        (*comps)[n++] = tok;
    }
    return n;
}

/* os.path.relpath(path, start). New string. */
static char *path_relpath(const char *path, const char *start) {
    char *pb = NULL, *sb = NULL, **pc = NULL, **sc = NULL, *out = NULL;
    int np = abs_components(path, &pb, &pc), ns = abs_components(*start ? start : ".", &sb, &sc);
    if (np >= 0 && ns >= 0) {
        int common = 0;
        while (common < np && common < ns && strcmp(pc[common], sc[common]) == 0) common++;
        size_t len = 2;
        for (int i = common; i < ns; i++) len += 3;
        for (int i = common; i < np; i++) len += strlen(pc[i]) + 1;
        if ((out = vg_malloc(len))) {
            out[0] = 0;
            for (int i = common; i < ns; i++) strcat(out, i + 1 < ns || common < np ? "../" : "..");
            for (int i = common; i < np; i++) {
                strcat(out, pc[i]);
                if (i + 1 < np) strcat(out, "/");
            }
            if (!out[0]) strcpy(out, ".");
        }
    }
    vg_free(pb);
    vg_free(pc);
    vg_free(sb);
    vg_free(sc);
    return out;
}

/* ------------------------------------------------------------------------ */
/* checkpoint lists */

static void list_clear(ckpt_list *l) {
    for (int i = 0; i < l->n; i++) vg_free(l->v[i].path);
    l->n = 0;
}

static void list_free(ckpt_list *l) {
    list_clear(l);
    vg_free(l->v);
    l->v = NULL;
    l->cap = 0;
}

/* Appends (takes over path). False on allocation failure (path freed). */
static bool list_push(ckpt_list *l, char *path, double t, bool own) {
    if (!path || !vg__train_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v)) {
        vg_free(path);
        return false;
    }
    l->v[l->n].path = path;
    l->v[l->n].own = own;
    l->v[l->n++].time = t;
    return true;
}

/* Removes entry i, handing it to *out (or freeing its path). */
static void list_remove(ckpt_list *l, int i, ckpt_entry *out) {
    if (out) *out = l->v[i];
    else vg_free(l->v[i].path);
    memmove(&l->v[i], &l->v[i + 1], (size_t)(l->n - i - 1) * sizeof *l->v);
    l->n--;
}

/* ------------------------------------------------------------------------ */
/* building the ops */

static int cmp_op_name(const void *a, const void *b) {
    return strcmp(vg_op_name(*(vg_op *const *)a), vg_op_name(*(vg_op *const *)b));
}

/* The checkpoint key of variable i: its map name, else its op name. */
static const char *var_key(const vg_saver *s, int i) { return s->keys ? s->keys[i] : vg_op_name(s->vars[i]); }

typedef struct keyed_var {
    const char *key;
    vg_op *var;
} keyed_var;

static int cmp_keyed(const void *a, const void *b) {
    return strcmp(((const keyed_var *)a)->key, ((const keyed_var *)b)->key);
}

static bool is_variable(const vg_op *op) {
    return strcmp(vg_op_type(op), "VariableV2") == 0 || strcmp(vg_op_type(op), "Variable") == 0;
}

/* A resource variable's handle (VarHandleOp) saves and restores under its name like a
 * ref variable (TF's ResourceVariableSaveable): saved from a read, restored with an
 * AssignVariableOp. */
static bool is_resource(const vg_op *op) { return vg__train_is_resource(op); }
static vg_dtype var_dtype(const vg_op *op) { return vg__train_var_dtype(op); }
static vg_shape var_shape(const vg_op *op) { return vg__train_var_shape(op); }

/* The variables to save, sorted by name. Fails with INVALID_ARGUMENT. Saveable objects
 * (vg_make_saveable_from_iterator, TF's SAVEABLE_OBJECTS: all of the graph's without a
 * var_list, else those listed) are saved as their tensor under their own key. */
static vg_code collect_vars(vg_saver *s, const vg_saver_options *o, vg_status *st) {
    const vg_output *list = o->var_list;
    int n = o->nvars, nsav = 0, keyed = 0;
    if (!list) {
        list = vg_graph_collection(s->g, VG_GLOBAL_VARIABLES, &n);
        nsav = vg_graph_num_saveables(s->g);
        if (!list) n = 0;
    }
    const char *absent = NULL, *listed = NULL;
    if (o->var_list && !vg__saveables_complete(s->g, list, n, &absent, &listed))
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Saver: var_list holds %s but not %s: the tensors of one saveable object (a cuDNN "
                             "layer's canonical weights) are saved and restored together; list all of them",
                             listed, absent);
    if (n + nsav <= 0 && o->allow_empty) return VG_OK; /* empty saver (nvars 0) */
    if (n + nsav <= 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "No variables to save");
    if (!(s->vars = vg_malloc((size_t)(n + nsav) * sizeof *s->vars))) return VG_OOM(st, "saver");
    for (int i = 0; i < n + nsav; i++) {
        vg_output v = i < n ? list[i] : vg_graph_saveable(s->g, i - n);
        bool saveable = v.op && vg_saveable_key(v);
        keyed += saveable;
        if (!v.op || v.index != 0 || !(is_variable(v.op) || is_resource(v.op) || saveable))
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Saver: var_list[%d] (%s) is not a variable", i,
                                 v.op ? vg_op_name(v.op) : "NULL");
        if (vg_op_graph(v.op) != s->g)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Saver: variable %s is not in this graph", vg_op_name(v.op));
        s->vars[i] = v.op;
    }
    n += nsav;
    const char **names = o->var_names && o->var_list ? (const char **)o->var_names : NULL;
    if (!names && keyed) { /* keys: the variables' names and the saveables' own */
        if (!(names = vg_malloc((size_t)n * sizeof *names))) return VG_OOM(st, "saver");
        for (int i = 0; i < n; i++)
            names[i] = is_variable(s->vars[i]) || is_resource(s->vars[i]) ? vg_op_name(s->vars[i])
                                                                          : vg_saveable_key(vg_out(s->vars[i], 0));
    }
    if (names) {
        /* the {name: variable} form: keys given, sorted by key (op_list_to_dict) */
        keyed_var *kv = vg_malloc((size_t)n * sizeof *kv);
        if (!kv || !(s->keys = vg_calloc((size_t)n, sizeof *s->keys))) {
            vg_free(kv);
            if (names != (const char **)o->var_names) vg_free(names);
            return VG_OOM(st, "saver");
        }
        vg_code c = VG_OK;
        for (int i = 0; i < n && !c; i++) {
            if (!names[i] || !*names[i])
                c = vg_status_set(st, VG_INVALID_ARGUMENT, "Saver: var_names[%d] (for %s) is empty", i,
                                  vg_op_name(s->vars[i]));
            kv[i].key = names[i];
            kv[i].var = s->vars[i];
        }
        if (!c) qsort(kv, (size_t)n, sizeof *kv, cmp_keyed);
        for (int i = 0; i < n && !c; i++) {
            s->vars[i] = kv[i].var;
            if (!(s->keys[i] = vg__train_strdup(kv[i].key))) c = VG_OOM(st, "saver");
            if (!c && i > 0 && strcmp(kv[i].key, kv[i - 1].key) == 0)
                c = vg_status_set(st, VG_INVALID_ARGUMENT, "At least two variables have the same name: %s", kv[i].key);
            for (int j = 0; !c && j < i; j++)
                if (kv[j].var == kv[i].var)
                    c = vg_status_set(st, VG_INVALID_ARGUMENT,
                                      "The same saveable will be restored with two names: %s (and %s)", kv[i].key,
                                      kv[j].key);
        }
        vg_free(kv);
        if (names != (const char **)o->var_names) vg_free(names);
        s->nvars = n; /* keys are freed with the saver even on failure */
        return c;
    }
    qsort(s->vars, (size_t)n, sizeof *s->vars, cmp_op_name);
    for (int i = 1; i < n; i++)
        if (strcmp(vg_op_name(s->vars[i]), vg_op_name(s->vars[i - 1])) == 0)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "At least two variables have the same name: %s",
                                 vg_op_name(s->vars[i]));
    s->nvars = n;
    return VG_OK;
}

/* A string Const: the scalar v[0] when n < 0, else a vector of n strings. */
static vg_op *string_const(vg_graph *g, const char *name, const char *const *v, int n, const char *device) {
    vg_status st;
    int64_t dim = n;
    vg_tensor *t = vg_tensor_new(VG_STRING, &dim, n < 0 ? 0 : 1, &st);
    for (int i = 0; t && i < (n < 0 ? 1 : n); i++) {
        const char *s = v[i];
        if (vg_tensor_set_string(t, i, s, strlen(s), &st)) {
            vg_tensor_free(t);
            t = NULL;
        }
    }
    if (!t) {
        vg_graph_set_error(g, st.code, "saver: %s", st.msg);
        return NULL;
    }
    vg_op_builder *b = vg_op_builder_new(g, "Const", name);
    vg_op_builder_set_attr_tensor(b, "value", t);
    vg_op_builder_set_attr_type(b, "dtype", VG_STRING);
    if (device) vg_op_builder_set_device(b, device);
    vg_tensor_free(t);
    return vg_op_builder_finish(b);
}

/* TF's colocation attr _class = ["loc:@<op>"]. */
static void set_class(vg_op_builder *b, const vg_op *op) {
    char buf[1100];
    snprintf(buf, sizeof buf, "loc:@%s", vg_op_name(op));
    const char *v[1] = {buf};
    vg_op_builder_set_attr_string_list(b, "_class", v, 1);
}

/* Consts "<op>/tensor_names" and "<op>/shape_and_slices" for the op about to be named
 * `base` under the current scope, as gen_io_ops creates them inside its name scope. */
static void names_and_slices(vg_saver *s, const char *base, const char *device, const char **names,
                             const char **empty, vg_op **tn, vg_op **ss) {
    char full[1100];
    vg_graph_unique_name(s->g, base, full, sizeof full - 1);
    strcat(full, "/"); /* verbatim scope: the op itself still gets the plain name */
    vg_graph_push_scope(s->g, full);
    *tn = string_const(s->g, "tensor_names", names, s->nvars, device);
    *ss = string_const(s->g, "shape_and_slices", empty, s->nvars, device);
    vg_graph_pop_scope(s->g);
}

/* save/SaveV2[/tensor_names, /shape_and_slices] and save/control_dependency. */
static void build_save_ops(vg_saver *s, vg_op *fname, const char **names, const char **empty,
                           const vg_dtype *dts) {
    vg_op *tn, *ss;
    names_and_slices(s, "SaveV2", NULL, names, empty, &tn, &ss);
    vg_op_builder *b = vg_op_builder_new(s->g, "SaveV2", "SaveV2");
    vg_op_builder_add_input(b, vg_out(fname, 0));
    vg_op_builder_add_input(b, vg_out(tn, 0));
    vg_op_builder_add_input(b, vg_out(ss, 0));
    for (int i = 0; i < s->nvars; i++) {
        vg_output in = vg_out(s->vars[i], 0);
        if (is_resource(s->vars[i])) /* "Read/ReadVariableOp", "Identity", then "Identity_1" (the CPU copy) */
            in = vg_identity(s->g, vg_resource_variable_read_value(s->g, in), NULL);
        vg_op_builder_add_input(b, in);
    }
    vg_op_builder_set_attr_type_list(b, "dtypes", dts, s->nvars);
    vg_op *save = vg_op_builder_finish(b);
    /* control_flow_ops.with_dependencies([save], filename): colocated with the filename */
    b = vg_op_builder_new(s->g, "Identity", "control_dependency");
    vg_op_builder_add_input(b, vg_out(fname, 0));
    vg_op_builder_add_control_input(b, save);
    vg_op_builder_set_attr_type(b, "T", VG_STRING);
    if (fname) set_class(b, fname);
    s->save_tensor_op = vg_op_builder_finish(b);
}

/* save/RestoreV2[/tensor_names, /shape_and_slices] (on CPU, as TF places them), one
 * save/Assign per variable and save/restore_all. */
static void build_restore_ops(vg_saver *s, vg_op *fname, const char **names, const char **empty,
                              const vg_dtype *dts) {
    vg_op *tn, *ss;
    names_and_slices(s, "RestoreV2", "/device:CPU:0", names, empty, &tn, &ss);
    vg_op_builder *b = vg_op_builder_new(s->g, "RestoreV2", "RestoreV2");
    vg_op_builder_add_input(b, vg_out(fname, 0));
    vg_op_builder_add_input(b, vg_out(tn, 0));
    vg_op_builder_add_input(b, vg_out(ss, 0));
    vg_op_builder_set_attr_type_list(b, "dtypes", dts, s->nvars);
    vg_op_builder_set_device(b, "/device:CPU:0");
    vg_op *restore = vg_op_builder_finish(b);
    vg_op **assigns = vg_calloc((size_t)s->nvars, sizeof *assigns);
    if (!assigns) {
        vg_graph_set_error(s->g, VG_RESOURCE_EXHAUSTED, "out of memory in saver");
        return;
    }
    for (int i = 0; i < s->nvars && restore; i++) {
        if (is_resource(s->vars[i])) { /* Identity to the variable's device, then AssignVariableOp */
            vg_output value = vg_identity(s->g, vg_out(restore, i), NULL);
            assigns[i] = vg_assign_variable_op(s->g, vg_out(s->vars[i], 0), value, NULL);
            continue;
        }
        if (!is_variable(s->vars[i])) { /* a saveable object restores itself */
            assigns[i] = vg_saveable_restore(s->g, vg_out(s->vars[i], 0), vg_out(restore, i), NULL);
            continue;
        }
        b = vg_op_builder_new(s->g, "Assign", "Assign");
        vg_op_builder_add_input(b, vg_out(s->vars[i], 0));
        vg_op_builder_add_input(b, vg_out(restore, i));
        vg_op_builder_set_attr_type(b, "T", dts[i]);
        vg_op_builder_set_attr_bool(b, "use_locking", true);
        vg_op_builder_set_attr_bool(b, "validate_shape", true);
        set_class(b, s->vars[i]);
        assigns[i] = vg_op_builder_finish(b);
    }
    if (restore) s->restore_op = vg_group(s->g, assigns, s->nvars, "restore_all");
    vg_free(assigns);
}

static void build_ops(vg_saver *s, const char **names, const char **empty, const vg_dtype *dts) {
    static const char *const model[1] = {"model"};
    s->filename_op = string_const(s->g, "Const", model, -1, NULL);
    build_save_ops(s, s->filename_op, names, empty, dts);
    build_restore_ops(s, s->filename_op, names, empty, dts);
}

static vg_code build(vg_saver *s, const char *scope, vg_status *st) {
    if (s->nvars == 0) { /* allow_empty: TF builds nothing; a NoOp gives the saver a name */
        vg_logf(VG_LOG_INFO, "Saver not created because there are no variables in the graph to restore");
        vg_graph_push_scope(s->g, scope);
        s->restore_op = vg_no_op(s->g, "restore_all");
        vg_graph_pop_scope(s->g);
        return vg_graph_status(s->g, st);
    }
    const char **names = vg_malloc((size_t)s->nvars * sizeof *names);
    const char **empty = vg_malloc((size_t)s->nvars * sizeof *empty);
    vg_dtype *dts = vg_malloc((size_t)s->nvars * sizeof *dts);
    if (!names || !empty || !dts) {
        vg_free(names);
        vg_free(empty);
        vg_free(dts);
        return VG_OOM(st, "saver");
    }
    for (int i = 0; i < s->nvars; i++) {
        names[i] = var_key(s, i);
        empty[i] = "";
        dts[i] = var_dtype(s->vars[i]);
    }
    vg_graph_push_scope(s->g, scope);
    build_ops(s, names, empty, dts);
    vg_graph_pop_scope(s->g);
    vg_free(names);
    vg_free(empty);
    vg_free(dts);
    if (vg_graph_status(s->g, st)) return st->code;
    s->filename_name = str_printf("%s:0", vg_op_name(s->filename_op));
    s->save_name = str_printf("%s:0", vg_op_name(s->save_tensor_op));
    if (!s->filename_name || !s->save_name) return VG_OOM(st, "saver");
    return VG_OK;
}

/* TF's defaults for the zero fields of vg_saver_options; max_to_keep 0 = keep all. */
static vg_saver_options resolve_saver_options(const vg_saver_options *in) {
    vg_saver_options o = {0};
    if (in) o = *in;
    if (o.keep_all_checkpoints || o.max_to_keep < 0) o.keep_all_checkpoints = true;
    else if (o.max_to_keep == 0) o.max_to_keep = 5;
    if (!(o.keep_checkpoint_every_n_hours > 0)) o.keep_checkpoint_every_n_hours = 10000.0;
    if (!o.name || !*o.name) o.name = "save";
    return o;
}

vg_saver *vg_saver_new(vg_graph *g, const vg_saver_options *opts, vg_status *st) {
    vg_status local;
    if (!st) st = &local; /* callees report through it */
    vg_saver_options o = resolve_saver_options(opts);
    if (!g) {
        vg_status_set(st, VG_INVALID_ARGUMENT, "graph is NULL");
        return NULL;
    }
    if (vg_graph_status(g, st)) return NULL;
    if (vg_graph_finalized(g)) {
        vg_status_set(st, VG_FAILED_PRECONDITION, "Graph is finalized and cannot be modified.");
        return NULL;
    }
    vg_saver *s = vg__train_calloc(sizeof *s, st, "saver");
    if (!s) return NULL;
    s->g = g;
    s->max_to_keep = o.max_to_keep;
    s->keep_hours = o.keep_checkpoint_every_n_hours;
    s->next_keep_time = now_secs() + s->keep_hours * 3600.0;
    s->write_meta = !o.no_meta_graph;
    s->sharded = o.sharded;
    if (collect_vars(s, &o, st) || build(s, o.name, st)) {
        vg_saver_free(s);
        return NULL;
    }
    vg_status_clear(st);
    return s;
}

void vg_saver_free(vg_saver *s) {
    if (!s) return;
    list_free(&s->last);
    list_free(&s->to_delete);
    for (int i = 0; s->keys && i < s->nvars; i++) vg_free(s->keys[i]);
    vg_free(s->keys);
    vg_free(s->vars);
    vg_free(s->filename_name);
    vg_free(s->save_name);
    vg_free(s->meta);
    vg_free(s->home);
    vg_free(s);
}

vg_output vg_saver_filename_tensor(const vg_saver *s) { return vg_out(s ? s->filename_op : NULL, 0); }
vg_output vg_saver_save_tensor(const vg_saver *s) { return vg_out(s ? s->save_tensor_op : NULL, 0); }
vg_op *vg_saver_restore_op(const vg_saver *s) { return s ? s->restore_op : NULL; }
int vg_saver_num_last_checkpoints(const vg_saver *s) { return s ? s->last.n : 0; }
const char *vg_saver_last_checkpoint(const vg_saver *s, int i) {
    return s && i >= 0 && i < s->last.n ? s->last.v[i].path : NULL;
}

/* ------------------------------------------------------------------------ */
/* saving */

/* Runs the save op with the prefix fed; *written gets the prefix SaveV2 wrote. */
static vg_code run_save(vg_saver *s, vg_session *sess, const char *ckpt, char **written, vg_status *st) {
    vg_tensor *fname = vg_tensor_new_string_scalar(ckpt, strlen(ckpt), st);
    if (!fname) return st->code;
    vg_output feed = vg_out(s->filename_op, 0), fetch = vg_out(s->save_tensor_op, 0);
    vg_tensor *out = NULL;
    vg_code c = vg_session_run(sess, NULL, &feed, &fname, 1, &fetch, &out, 1, NULL, 0, NULL, st);
    vg_tensor_free(fname);
    if (c) return c;
    size_t n = 0;
    const char *p = vg_tensor_string(out, 0, &n);
    *written = vg__train_strndup(p ? p : ckpt, p ? n : strlen(ckpt));
    vg_tensor_free(out);
    return *written ? VG_OK : VG_OOM(st, "checkpoint path");
}

/* The MetaGraphDef bytes, cached while the graph is finalized and unchanged. */
static vg_code meta_bytes(vg_saver *s, vg_status *st) {
    if (s->meta && vg_graph_finalized(s->g) && s->meta_nops == vg_graph_num_ops(s->g)) return VG_OK;
    vg_free(s->meta);
    s->meta = NULL;
    /* sharded = false whatever the option says: the ops are the non-sharded layout. An
     * empty saver has no SaverDef (TF's saver_def is None). */
    vg_saver_def sd = {s->filename_name, s->save_name, vg_op_name(s->restore_op), s->max_to_keep, false,
                       (float)s->keep_hours};
    vg_code c = vg_graph_to_meta_graph(s->g, s->nvars ? &sd : NULL, &s->meta, &s->meta_len, st);
    if (!c) s->meta_nops = vg_graph_num_ops(s->g);
    return c;
}

static vg_code write_meta(vg_saver *s, const char *meta_path, vg_status *st) {
    vg_code c = meta_bytes(s, st);
    /* the directory fsync of SaveV2, which follows, covers the rename */
    if (!c) c = vg__io_write_file_atomic_nodirsync(meta_path, s->meta, s->meta_len, st);
    if (!vg_graph_finalized(s->g)) { /* may change before the next save */
        vg_free(s->meta);
        s->meta = NULL;
    }
    return c;
}

/* saver.py _RecordLastCheckpoint. */
static vg_code record_last(vg_saver *s, const char *path, vg_status *st) {
    if (!s->max_to_keep) return VG_OK;
    for (int i = s->last.n - 1; i >= 0; i--)
        if (strcmp(s->last.v[i].path, path) == 0) list_remove(&s->last, i, NULL);
    if (!list_push(&s->last, vg__train_strdup(path), now_secs(), true)) return VG_OOM(st, "checkpoint list");
    if (s->last.n > s->max_to_keep) {
        ckpt_entry e;
        list_remove(&s->last, 0, &e);
        if (!list_push(&s->to_delete, e.path, e.time, e.own)) return VG_OOM(st, "checkpoint list");
    }
    return VG_OK;
}

/* checkpoint_management.update_checkpoint_state_internal (save_relative_paths=False). */
static vg_code update_state(vg_saver *s, const char *save_dir, const char *model, vg_status *st) {
    int n = s->max_to_keep ? s->last.n : 0;
    bool add = n == 0 || strcmp(s->last.v[n - 1].path, model) != 0;
    char **paths = vg_calloc((size_t)n + 1, sizeof *paths);
    char *model_rel = NULL, *state_path = path_join(save_dir, "checkpoint");
    vg_code c = VG_OK;
    if (!paths || !state_path) c = VG_OOM(st, "checkpoint state");
    bool relative = save_dir[0] != '/';
    for (int i = 0; !c && i < n + add; i++) {
        const char *p = i < n ? s->last.v[i].path : model;
        paths[i] = relative && p[0] != '/' ? path_relpath(p, save_dir) : vg__train_strdup(p);
        if (!paths[i]) c = VG_OOM(st, "checkpoint state");
    }
    if (!c) {
        model_rel = relative && model[0] != '/' ? path_relpath(model, save_dir) : vg__train_strdup(model);
        if (!model_rel) c = VG_OOM(st, "checkpoint state");
    }
    if (!c && strcmp(state_path, model_rel) == 0)
        c = vg_status_set(st, VG_INVALID_ARGUMENT,
                          "Save path '%s' conflicts with path used for checkpoint state.  Please use a different "
                          "save path.", model);
    if (!c) {
        vg__ckpt_state cs;
        memset(&cs, 0, sizeof cs);
        cs.model_checkpoint_path = model_rel;
        cs.all_paths = paths;
        cs.n_all = n + add;
        c = vg__ckpt_state_write(state_path, &cs, st);
    }
    for (int i = 0; paths && i < n + add; i++) vg_free(paths[i]);
    vg_free(paths);
    vg_free(model_rel);
    vg_free(state_path);
    return c;
}

/* Opens the directory that holds path (O_DIRECTORY: a symlinked directory is followed
 * here, and callers that must stay inside a directory compare its identity); *name gets
 * the last component (borrowed from path). -1 with errno on failure. */
static int open_parent(const char *path, const char **name) {
    char *dir = path_dirname(path);
    *name = path_basename(path);
    int fd = dir ? open(*dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    vg_free(dir);
    return fd;
}

/* Whether fd is the directory dir (same device and inode). */
static bool same_dir(int fd, const char *dir) {
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(*dir ? dir : ".", &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Whether name is "<base>" or "<base>-<1..18 digits>": how this saver names checkpoints. */
static bool is_own_name(const char *name, const char *base) {
    size_t nb = strlen(base);
    if (strncmp(name, base, nb) != 0) return false;
    const char *q = name + nb;
    if (!*q) return true;
    if (*q++ != '-') return false;
    size_t k = 0;
    while (q[k] >= '0' && q[k] <= '9') k++;
    return k > 0 && k <= 18 && !q[k];
}

/* Deletes "<name>.meta", "<name>.index" and "<name>.data-?????-of-?????" in the directory
 * dfd (checkpoint_management.remove_checkpoint: .meta, .index, then the data files).
 * unlinkat never follows a symlink: a planted link is removed, never its target. */
static void remove_checkpoint_at(int dfd, const char *name, const char *shown) {
    static const char *const suffixes[] = {".meta", ".index"};
    for (int i = 0; i < 2; i++) {
        char *p = str_printf("%s%s", name, suffixes[i]);
        if (p && unlinkat(dfd, p, 0) != 0 && errno != ENOENT)
            vg_logf(VG_LOG_WARN, "cannot delete %s%s: %s", shown, suffixes[i], strerror(errno));
        vg_free(p);
    }
    int dup_fd = dup(dfd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d && dup_fd >= 0) close(dup_fd);
    size_t nb = strlen(name);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        const char *rest = e->d_name + nb;
        if (strncmp(e->d_name, name, nb) != 0 || strncmp(rest, ".data-", 6) != 0) continue;
        rest += 6;
        if (strlen(rest) != 14 || strncmp(rest + 5, "-of-", 4) != 0) continue;
        if (unlinkat(dfd, e->d_name, 0) != 0 && errno != ENOENT)
            vg_logf(VG_LOG_WARN, "cannot delete %s%s: %s", shown, e->d_name + nb, strerror(errno));
    }
    if (d) closedir(d);
}

/* Whether any file of checkpoint `name` exists in dfd (its .index or .meta). */
static bool any_checkpoint_file(int dfd, const char *name) {
    struct stat sb;
    char *p = str_printf("%s.index", name), *q = str_printf("%s.meta", name);
    bool r = (p && fstatat(dfd, p, &sb, AT_SYMLINK_NOFOLLOW) == 0) || (q && fstatat(dfd, q, &sb, AT_SYMLINK_NOFOLLOW) == 0);
    vg_free(p);
    vg_free(q);
    return r;
}

/* Deletes checkpoint e, which fell out of max_to_keep. A checkpoint this saver wrote is
 * deleted where it was written. One adopted from a state file (vg_saver_recover_last_
 * checkpoints) is deleted only when it lies in save_dir (the directory of the current
 * save, compared by identity: "../x", an absolute path elsewhere or a symlinked
 * directory leading out do not match) and is named "<base>[-N]" like this saver's own
 * checkpoints; otherwise a WARNING names it and its files stay. */
static void remove_checkpoint(const ckpt_entry *e, const char *save_dir, const char *base) {
    const char *name = NULL;
    int dfd = open_parent(e->path, &name);
    if (dfd < 0) {
        if (errno != ENOENT) vg_logf(VG_LOG_WARN, "cannot open the directory of %s: %s", e->path, strerror(errno));
        return;
    }
    if (e->own || (same_dir(dfd, save_dir) && is_own_name(name, base))) {
        remove_checkpoint_at(dfd, name, e->path);
    } else if (any_checkpoint_file(dfd, name)) {
        vg_logf(VG_LOG_WARN,
                "not deleting checkpoint %s named by the checkpoint state: it is not one of this saver's checkpoints "
                "(\"%s-<step>\" in %s); its files are left in place", e->path, base, *save_dir ? save_dir : ".");
    }
    close(dfd);
}

/* saver.py _MaybeDeleteOldCheckpoints: handles one queued checkpoint per save. */
static void maybe_delete_old(vg_saver *s, const char *save_dir, const char *base) {
    if (!s->to_delete.n) return;
    ckpt_entry e;
    list_remove(&s->to_delete, 0, &e);
    if (e.time > s->next_keep_time) {
        s->next_keep_time += s->keep_hours * 3600.0; /* kept for good (keep_checkpoint_every_n_hours) */
    } else {
        remove_checkpoint(&e, save_dir, base);
    }
    vg_free(e.path);
}

static vg_code check_parent_dir(const char *dir, const char *prefix, vg_status *st) {
    struct stat sb;
    if (stat(*dir ? dir : ".", &sb) == 0 && S_ISDIR(sb.st_mode)) return VG_OK;
    /* TF's ValueError (vigil's mapping: INVALID_ARGUMENT) */
    return vg_status_set(st, VG_INVALID_ARGUMENT, "Parent directory of %s doesn't exist, can't save.", prefix);
}

static void clean_stale_files(vg_saver *s, const char *const *paths, int n, bool orphans);

/* Removes stale temporaries once, after this saver's first save, when no listed
 * checkpoint let the start-up clean-up run: runs killed before their first checkpoint
 * leave temporaries that nothing else removes. Unlisted older checkpoints are left
 * alone here (a saver that recovered no list does not own them, as in TF). */
static void clean_after_first_save(vg_saver *s, const char *model) {
    int n = s->last.n ? s->last.n : 1;
    const char **paths = vg_calloc((size_t)n, sizeof *paths);
    if (!paths) return; /* clean-up is best effort; the next start tries again */
    for (int i = 0; i < s->last.n; i++) paths[i] = s->last.v[i].path;
    if (!s->last.n) paths[0] = model;
    clean_stale_files(s, paths, n, false);
    vg_free(paths);
}

/* An empty saver (allow_empty) runs nothing and returns no path, but TF's save() still
 * exports the MetaGraphDef (no SaverDef in it) to "<checkpoint>.meta" when
 * write_meta_graph is on, creating the directory as graph_io.write_graph does. */
static vg_code save_empty(vg_saver *s, const char *prefix, int64_t global_step, vg_status *st) {
    vg_code c = VG_OK;
    if (s->write_meta) {
        char *meta = global_step >= 0 ? str_printf("%s-%lld.meta", prefix, (long long)global_step)
                                      : str_printf("%s.meta", prefix);
        char *dir = path_dirname(prefix);
        c = meta && dir ? vg__io_mkdirs(dir, st) : VG_OOM(st, "path");
        if (!c) c = write_meta(s, meta, st);
        if (c) vg_status_prefix(st, "writing %s: ", meta ? meta : prefix);
        vg_free(meta);
        vg_free(dir);
    }
    if (!c) vg_status_clear(st);
    return c;
}

vg_code vg_saver_save(vg_saver *s, vg_session *sess, const char *prefix, int64_t global_step, char *path_out,
                      size_t path_len, vg_status *st) {
    vg_status local;
    if (!st) st = &local;
    if (path_out && path_len) path_out[0] = 0;
    if (!s || !sess || !prefix || !*prefix)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_saver_save: NULL saver, session or empty prefix");
    if (global_step < 0 && !s->sharded && strcmp(path_basename(prefix), "checkpoint") == 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "'latest_filename' collides with 'save_path': 'checkpoint' and '%s'",
                             prefix);
    if (s->nvars == 0) return save_empty(s, prefix, global_step, st);
    char *ckpt = global_step >= 0 ? str_printf("%s-%lld", prefix, (long long)global_step) : vg__train_strdup(prefix);
    char *dir = path_dirname(prefix), *model = NULL, *meta = ckpt ? str_printf("%s.meta", ckpt) : NULL;
    vg_code c = ckpt && dir && meta ? VG_OK : VG_OOM(st, "path");
    if (!c) c = check_parent_dir(dir, prefix, st);
    if (!c && s->write_meta) c = write_meta(s, meta, st);
    if (!c && (c = run_save(s, sess, ckpt, &model, st))) {
        vg_status_prefix(st, "saving checkpoint %s: ", ckpt);
        if (s->write_meta) unlink(meta);
    }
    if (!c) c = record_last(s, model, st);
    if (!c) c = update_state(s, dir, model, st);
    if (!c) maybe_delete_old(s, dir, path_basename(prefix));
    if (!c && !s->cleaned) clean_after_first_save(s, model);
    if (!c && path_out && path_len) {
        if (strlen(model) >= path_len) c = vg_status_set(st, VG_INVALID_ARGUMENT, "path_out too small for %s", model);
        else strcpy(path_out, model);
    }
    vg_free(ckpt);
    vg_free(dir);
    vg_free(meta);
    vg_free(model);
    if (!c) vg_status_clear(st);
    return c;
}

/* "<name>.tempstate" + 16 hex digits: the io layer's temporaries (vg__io_temp_create). */
static bool is_temp_name(const char *name) {
    const char *t = strstr(name, ".tempstate");
    if (!t || t == name) return false;
    t += 10;
    size_t k = 0;
    for (; t[k]; k++)
        if (!((t[k] >= '0' && t[k] <= '9') || (t[k] >= 'a' && t[k] <= 'f'))) return false;
    return k == 16;
}

/* The "-N" step suffix of a prefix (-1 when none). base_len = length before "-N". */
static long long step_suffix(const char *p, size_t *base_len) {
    size_t n = strlen(p), i = n;
    while (i > 0 && p[i - 1] >= '0' && p[i - 1] <= '9') i--;
    if (i == n || i < 2 || p[i - 1] != '-' || n - i > 18) return -1;
    *base_len = i - 1;
    return strtoll(p + i, NULL, 10);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Start-up clean-up after a crash (issue 9 #5), in the directory of the newest listed
 * checkpoint: removes this saver's stale temporaries ("<base>-N...tempstate<hex>",
 * "checkpoint.tempstate<hex>"; graph.pbtxt's are the CheckpointSaverHook's, which writes
 * that file) and the orphaned checkpoints "<base>-M" with M below the
 * newest listed step that the list does not name (when `orphans`), as max_to_keep would
 * have deleted them. Orphans are kept when max_to_keep is 0 (keep all) or
 * keep_checkpoint_every_n_hours is in use (they may be kept on purpose). Linear in the
 * directory size (the listed names are sorted once). */
static void clean_stale_files(vg_saver *s, const char *const *paths, int n, bool orphans) {
    if (n <= 0 || !paths[n - 1]) return;
    s->cleaned = true;
    const char *newest = paths[n - 1];
    size_t base_len = 0;
    long long newest_step = step_suffix(newest, &base_len);
    if (newest_step < 0) return; /* not "<base>-N": no pattern to match safely */
    const char *base = NULL;
    size_t blen = 0;
    char **names = vg_calloc((size_t)n, sizeof *names);
    int dfd = open_parent(newest, &base), dup_fd = -1;
    blen = base_len - (size_t)(base - newest);
    DIR *d = NULL;
    if (dfd >= 0 && s->home && !same_dir(dfd, s->home)) {
        /* a state file naming checkpoints elsewhere: nothing there is this saver's to delete */
        vg_logf(VG_LOG_WARN, "the checkpoint state in %s names %s, outside that directory: no clean-up there", s->home,
                newest);
        goto done;
    }
    if (dfd >= 0 && (dup_fd = dup(dfd)) >= 0 && !(d = fdopendir(dup_fd))) close(dup_fd);
    if (!names || !d) goto done;
    for (int i = 0; i < n; i++) names[i] = (char *)path_basename(paths[i] ? paths[i] : "");
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    bool prune = orphans && s->max_to_keep > 0 && !(s->keep_hours > 0 && s->keep_hours < 10000.0);
    struct dirent *e;
    int ntemp = 0, norphan = 0;
    while ((e = readdir(d))) {
        const char *nm = e->d_name;
        bool ours = strncmp(nm, base, blen) == 0 && nm[blen] == '-';
        if (is_temp_name(nm) && (ours || strncmp(nm, "checkpoint.tempstate", 20) == 0)) {
            if (unlinkat(dfd, nm, 0) == 0) ntemp++;
            continue;
        }
        if (!prune || !ours) continue;
        /* "<base>-N" + ".index" | ".meta" | ".data-?????-of-?????" */
        const char *q = nm + blen + 1, *digits = q;
        while (*q >= '0' && *q <= '9') q++;
        if (q == digits || q - digits > 18) continue;
        if (strcmp(q, ".index") && strcmp(q, ".meta") &&
            !(strncmp(q, ".data-", 6) == 0 && strlen(q) == 20 && strncmp(q + 11, "-of-", 4) == 0))
            continue;
        long long step = strtoll(digits, NULL, 10);
        char *prefix = vg__train_strndup(nm, (size_t)(q - nm));
        const char *key = prefix;
        if (prefix && step < newest_step && !bsearch(&key, names, (size_t)n, sizeof *names, cmp_str) &&
            unlinkat(dfd, nm, 0) == 0)
            norphan++;
        vg_free(prefix);
    }
    if (ntemp || norphan)
        vg_logf(VG_LOG_WARN, "removed %d stale temporary file(s) and %d orphaned checkpoint file(s) older than %s left "
                "by an interrupted run", ntemp, norphan, newest);
done:
    if (d) closedir(d);
    if (dfd >= 0) close(dfd);
    vg_free(names);
}

void vg_saver_recover_last_checkpoints(vg_saver *s, const char *const *paths, int n) {
    vg_saver_recover_last_checkpoints_in(s, NULL, paths, n);
}

void vg_saver_recover_last_checkpoints_in(vg_saver *s, const char *dir, const char *const *paths, int n) {
    if (!s) return;
    if (!paths) n = 0; /* a NULL list is an empty one */
    vg_free(s->home);
    s->home = dir ? vg__train_strdup(dir) : NULL;
    if (dir && !s->home) return; /* out of memory: adopt nothing rather than clean up blindly */
    clean_stale_files(s, paths, n, true);
    list_clear(&s->last);
    for (int i = 0; i < n; i++) {
        struct stat sb;
        char *idx = str_printf("%s.index", paths[i]);
        bool ok = idx && (stat(idx, &sb) == 0 || stat(paths[i], &sb) == 0);
        vg_free(idx);
        if (ok)
            list_push(&s->last, vg__train_strdup(paths[i]), (double)sb.st_mtim.tv_sec + sb.st_mtim.tv_nsec * 1e-9,
                      false);
    }
}

/* ------------------------------------------------------------------------ */
/* restoring */

/* Index of name in the reader (names are in byte order), or -1. */
static int find_tensor(const vg_checkpoint_reader *r, const char *name) {
    int lo = 0, hi = vg_checkpoint_reader_num_tensors(r) - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(vg_checkpoint_reader_tensor(r, mid, NULL, NULL), name);
        if (!c) return mid;
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

static bool shapes_compatible(const vg_shape *var, const vg_shape *ck) {
    if (var->ndims < 0) return true;
    if (var->ndims != ck->ndims) return false;
    for (int i = 0; i < var->ndims; i++)
        if (var->dims[i] >= 0 && var->dims[i] != ck->dims[i]) return false;
    return true;
}

/* Checks one variable against checkpoint tensor k (dtype, then shape). */
static vg_code check_entry(const vg_checkpoint_reader *r, int k, const vg_op *var, const char *name,
                           const char *prefix, vg_status *st) {
    vg_dtype dt, want = var_dtype(var);
    vg_shape cs, vs = var_shape(var);
    char a[128], b[128];
    vg_checkpoint_reader_tensor(r, k, &dt, &cs);
    if (dt != want) {
        const char *dn = vg_dtype_name(dt);
        if (strcmp(dn, "invalid") == 0) {
            snprintf(a, sizeof a, "DataType %d", (int)dt);
            dn = a;
        }
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "tensor_name = %s; expected dtype %s does not equal original dtype %s (checkpoint %s)",
                             name, vg_dtype_name(want), dn, prefix);
    }
    if (!shapes_compatible(&vs, &cs))
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Restoring from checkpoint failed: tensor %s has shape %s in checkpoint %s but the "
                             "variable has shape %s (Assign requires shapes of both tensors to match. lhs shape= %s "
                             "rhs shape= %s)",
                             name, vg_shape_str(&cs, a, sizeof a), prefix, vg_shape_str(&vs, b, sizeof b), b, a);
    return VG_OK;
}

/* Every variable has a tensor of its dtype and shape in the checkpoint. */
static vg_code check_checkpoint(const vg_saver *s, const char *prefix, vg_status *st) {
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(prefix, st);
    if (!r) return st->code;
    vg_code c = VG_OK;
    for (int i = 0; !c && i < s->nvars; i++) {
        int k = find_tensor(r, var_key(s, i));
        if (k < 0)
            c = vg_status_set(st, VG_NOT_FOUND, "Key %s not found in checkpoint %s", var_key(s, i), prefix);
        else
            c = check_entry(r, k, s->vars[i], var_key(s, i), prefix, st);
    }
    vg_checkpoint_reader_free(r);
    return c;
}

vg_code vg_saver_restore(vg_saver *s, vg_session *sess, const char *prefix, vg_status *st) {
    vg_status local;
    if (!st) st = &local;
    if (!s || !sess) return vg_status_set(st, VG_INVALID_ARGUMENT, "vg_saver_restore: NULL saver or session");
    if (s->nvars == 0) { /* an empty saver (allow_empty) restores nothing, as TF */
        vg_status_clear(st);
        return VG_OK;
    }
    if (!prefix) return vg_status_set(st, VG_INVALID_ARGUMENT, "Can't load save_path when it is None.");
    if (!vg_checkpoint_exists(prefix))
        return vg_status_set(st, VG_INVALID_ARGUMENT, "The passed save_path is not a valid checkpoint: %s",
                             prefix); /* TF's ValueError */
    vg_logf(VG_LOG_INFO, "Restoring parameters from %s", prefix);
    vg_code c = check_checkpoint(s, prefix, st);
    if (c) return c;
    vg_tensor *fname = vg_tensor_new_string_scalar(prefix, strlen(prefix), st);
    if (!fname) return st->code;
    vg_output feed = vg_out(s->filename_op, 0);
    c = vg_session_run(sess, NULL, &feed, &fname, 1, NULL, NULL, 0, &s->restore_op, 1, NULL, st);
    vg_tensor_free(fname);
    if (c) vg_status_prefix(st, "restoring from checkpoint %s: ", prefix);
    return c;
}

/* ------------------------------------------------------------------------ */
/* tf.train.init_from_checkpoint (checkpoint_utils.py) */

typedef struct ifc_pair {
    vg_op *var;
    char *key;
    vg_dtype dt;
} ifc_pair;

/* A 1-element string vector Const. */
static vg_output string_vec1(vg_graph *g, const char *v, const char *name) {
    vg_op *op = string_const(g, name, &v, 1, "/device:CPU:0");
    return vg_out(op, 0);
}

static bool ends_with_slash(const char *s) { return *s && s[strlen(s) - 1] == '/'; }

static int cmp_str_ptr(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Finds a checkpoint tensor by name: its index, -1 if absent. */
static int ifc_find(const vg_checkpoint_reader *r, const char *name) {
    int n = vg_checkpoint_reader_num_tensors(r);
    for (int i = 0; i < n; i++) {
        vg_dtype dt;
        vg_shape sh;
        if (strcmp(vg_checkpoint_reader_tensor(r, i, &dt, &sh), name) == 0) return i;
    }
    return -1;
}

static vg_code ifc_add(ifc_pair **pairs, int *np, int *cap, vg_op *var, const char *key, const vg_checkpoint_reader *r,
                       const char *ckpt, vg_status *st) {
    int k = ifc_find(r, key);
    if (k < 0) return vg_status_set(st, VG_INVALID_ARGUMENT, "Tensor %s is not found in %s checkpoint", key, ckpt);
    vg_dtype dt;
    vg_shape cs, vs = vg_output_shape(vg_out(var, 0));
    vg_checkpoint_reader_tensor(r, k, &dt, &cs);
    if (!shapes_compatible(&vs, &cs)) {
        char a[128], b[128];
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Shape of variable %s (%s) doesn't match with shape of tensor %s (%s) from checkpoint "
                             "reader.",
                             vg_op_name(var), vg_shape_str(&vs, a, sizeof a), key, vg_shape_str(&cs, b, sizeof b));
    }
    vg_dtype want = vg_output_dtype(vg_out(var, 0));
    if (dt != want)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Variable %s has dtype %s but tensor %s in %s is %s",
                             vg_op_name(var), vg_dtype_name(want), key, ckpt, vg_dtype_name(dt));
    if (!vg__train_grow((void **)pairs, cap, *np + 1, sizeof **pairs)) return VG_OOM(st, "init_from_checkpoint");
    char *kd = vg__train_strdup(key);
    if (!kd) return VG_OOM(st, "init_from_checkpoint");
    (*pairs)[*np].var = var;
    (*pairs)[*np].key = kd;
    (*pairs)[*np].dt = dt;
    (*np)++;
    return VG_OK;
}

/* One assignment-map entry: a variable name or a scope mapping. */
static vg_code ifc_entry(vg_graph *g, const char *ck, const char *cur, const vg_checkpoint_reader *r, const char *ckpt,
                         ifc_pair **pairs, int *np, int *cap, vg_status *st) {
    vg_op *op = vg_graph_op_by_name(g, cur);
    if (op && is_variable(op)) return ifc_add(pairs, np, cap, op, ck, r, ckpt, st);
    /* scope to scope */
    const char *slash = strrchr(cur, '/');
    size_t ls = slash ? (size_t)(slash - cur) : 0;
    if (!ends_with_slash(ck))
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Assignment map with scope only name %.*s should map to scope only %s. Should be "
                             "'scope/': 'other_scope/'. (no variable named %s)",
                             (int)ls, cur, ck, cur);
    int nv;
    const vg_output *vars = vg_graph_collection(g, VG_GLOBAL_VARIABLES, &nv);
    const char **names = vg_malloc(sizeof(char *) * (size_t)(nv ? nv : 1));
    if (!names) return VG_OOM(st, "init_from_checkpoint");
    int n = 0;
    for (int i = 0; i < nv; i++) {
        const char *vn = vg_op_name(vars[i].op);
        if (ls == 0 || (strncmp(vn, cur, ls) == 0 && vn[ls] == '/')) names[n++] = vn;
    }
    qsort(names, (size_t)n, sizeof *names, cmp_str_ptr);
    vg_code c = VG_OK;
    for (int i = 0; i < n && !c; i++) {
        const char *rest = names[i] + ls;
        if (strcmp(cur, "/") != 0 && *rest == '/') rest++;
        char full[2048];
        snprintf(full, sizeof full, "%s%s", strcmp(ck, "/") != 0 ? ck : "", rest);
        size_t fl = strlen(full);
        if (fl && full[fl - 1] == '/') full[fl - 1] = 0;
        if (ifc_find(r, full) < 0) {
            c = vg_status_set(st, VG_INVALID_ARGUMENT, "Tensor %s (%s in %s) is not found in %s checkpoint", full, rest,
                              ck, ckpt);
            break;
        }
        c = ifc_add(pairs, np, cap, vg_graph_op_by_name(g, names[i]), full, r, ckpt, st);
    }
    vg_free(names);
    return c;
}

vg_code vg_init_from_checkpoint(vg_graph *g, const char *ckpt_dir_or_file, const char *const *ckpt_names,
                                const char *const *current_names, int n, vg_status *st) {
    vg_status local;
    if (!st) st = &local;
    if (!g || !ckpt_dir_or_file || (n > 0 && (!ckpt_names || !current_names)) || n < 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "init_from_checkpoint: NULL graph, path or assignment map");
    char buf[4096];
    const char *ckpt = ckpt_dir_or_file;
    if (!vg_checkpoint_exists(ckpt)) {
        ckpt = vg_latest_checkpoint(ckpt_dir_or_file, buf, sizeof buf);
        if (!ckpt)
            return vg_status_set(st, VG_NOT_FOUND,
                                 "Couldn't find 'checkpoint' file or checkpoints in given directory %s",
                                 ckpt_dir_or_file);
    }
    vg_checkpoint_reader *r = vg_checkpoint_reader_new(ckpt, st);
    if (!r) return st->code;
    ifc_pair *pairs = NULL;
    int np = 0, cap = 0;
    vg_code c = VG_OK;
    for (int i = 0; i < n && !c; i++) {
        if (!ckpt_names[i] || !current_names[i])
            c = vg_status_set(st, VG_INVALID_ARGUMENT, "init_from_checkpoint: assignment map entry %d is NULL", i);
        else
            c = ifc_entry(g, ckpt_names[i], current_names[i], r, ckpt, &pairs, &np, &cap, st);
    }
    vg_checkpoint_reader_free(r);
    for (int i = 0; i < np && !c; i++) {
        /* _set_checkpoint_initializer: RestoreV2 "checkpoint_initializer" on the CPU,
         * then the variable's initializer becomes an Assign from it */
        vg__train_enter_root(g);
        char full[1100];
        vg_graph_unique_name(g, "checkpoint_initializer", full, sizeof full - 1);
        strcat(full, "/");
        vg_graph_push_scope(g, full);
        vg_output prefix = vg_out(string_const(g, "prefix", &ckpt, -1, "/device:CPU:0"), 0);
        vg_output tn = string_vec1(g, pairs[i].key, "tensor_names");
        vg_output ss = string_vec1(g, "", "shape_and_slices");
        vg_graph_pop_scope(g);
        vg_op_builder *b = vg_op_builder_new(g, "RestoreV2", "checkpoint_initializer");
        vg_op_builder_add_input(b, prefix);
        vg_op_builder_add_input(b, tn);
        vg_op_builder_add_input(b, ss);
        vg_op_builder_set_attr_type_list(b, "dtypes", &pairs[i].dt, 1);
        vg_op_builder_set_device(b, "/device:CPU:0");
        vg_op *restore = vg_op_builder_finish(b);
        vg_output assign = vg_assign(g, vg_out(pairs[i].var, 0), vg_out(restore, 0), true, "Assign");
        vg__train_leave_root(g);
        if (vg_graph_status(g, st) != VG_OK) {
            c = st->code;
            break;
        }
        c = vg_variable_set_parts(pairs[i].var, assign.op, vg_variable_snapshot(pairs[i].var), st);
        if (!c) vg_logf(VG_LOG_INFO, "Initialize variable %s from checkpoint %s with %s", vg_op_name(pairs[i].var), ckpt,
                        pairs[i].key);
    }
    for (int i = 0; i < np; i++) vg_free(pairs[i].key);
    vg_free(pairs);
    if (!c) vg_status_clear(st);
    return c;
}
