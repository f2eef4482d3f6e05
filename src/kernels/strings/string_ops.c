/*
 * string_ops.c - the string and checkpoint-path ops that TF 1.15's sharded Saver
 * (Saver(sharded=True), and so every SavedModelBuilder graph) puts into its save
 * subgraph, so that imported graphs run their own save/restore ops:
 *
 *   StringJoin(inputs: N strings, separator)      string_ops.string_join
 *   (RegexFullMatch and StaticRegexFullMatch: regex_ops.c)
 *   ShardedFilename(basename, shard, num_shards)   "<basename>-%05d-of-%05d"
 *   ShardedFilespec(basename, num_shards)          "<basename>-?????-of-%05d"
 *   MergeV2Checkpoints(checkpoint_prefixes, destination_prefix, delete_old_dirs)
 *   StringSplit(input, delimiter, skip_empty)     tf.string_split (sparse output)
 *   StringSplitV2(input, sep, maxsplit)           tf.strings.split (sparse output)
 *
 * TF's sharded V2 save: StringJoin(prefix, Select(RegexFullMatch(prefix, "^s3://.*"),
 * ".part", "_temp_<uuid>/part")) names a temp prefix; each device's SaveV2 writes
 * ShardedFilename(tmp, shard, num_shards); MergeV2Checkpoints merges those bundles into
 * the prefix (io/bundle_merge.c) and removes the temp directories.
 *
 */
#include "graph/graph_impl.h"
#include "kernels/kernel.h"
#include "io/io.h"
#include "vigil/example.h"
#include "vigil/ops.h"
#include <stdio.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* shared */

static vg_code want_dtype(vg_op *op, int i, vg_dtype want, const char *arg, vg_status *st) {
    vg_dtype dt = vg__op_input_dtype(op, i);
    if (dt != want)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Input '%s' of '%s' Op (%s) has type %s that does not match "
                             "expected type of %s.", arg, vg_op_type(op), vg_op_name(op), vg_dtype_name(dt),
                             vg_dtype_name(want));
    return VG_OK;
}

static vg_code want_rank(vg_op *op, int i, int rank, const char *arg, vg_status *st) {
    vg_shape s = vg__op_input_shape(op, i);
    if (s.ndims >= 0 && s.ndims != rank)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Shape must be rank %d but is rank %d for input '%s' of %s (%s)",
                             rank, s.ndims, arg, vg_op_type(op), vg_op_name(op));
    return VG_OK;
}

/* A scalar-or-one-element input, checked at run time. */
static vg_code run_scalar(vg__kctx *ctx, int i, const char *arg) {
    const vg_tensor *t = vg__kctx_input(ctx, i);
    if (!t || vg_tensor_ndims(t) != 0)
        return vg_status_set(vg__kctx_status(ctx), VG_INVALID_ARGUMENT, "%s: input '%s' must be a scalar, got rank %d",
                             vg_op_type(vg__kctx_op(ctx)), arg, t ? vg_tensor_ndims(t) : -1);
    return VG_OK;
}

static vg_code set_string_output(vg__kctx *ctx, const char *s, size_t n) {
    vg_tensor *out;
    vg_code c = vg__kctx_alloc_output(ctx, 0, VG_STRING, NULL, 0, &out);
    if (!c) c = vg_tensor_set_string(out, 0, s, n, vg__kctx_status(ctx));
    return c;
}

static char *string_copy(const vg_tensor *t, int64_t i) {
    size_t n = 0;
    const char *s = vg_tensor_string(t, i, &n);
    return vg__strndup(s ? s : "", s ? n : 0);
}

/* ------------------------------------------------------------------------ */
/* StringJoin */

static vg_code shape_string_join(vg_op *op, vg_status *st) {
    int n = vg_op_num_inputs(op);
    vg_shape out = vg_shape_make(NULL, 0);
    bool unknown = false, have = false;
    for (int i = 0; i < n; i++) {
        vg_code c = want_dtype(op, i, VG_STRING, "inputs", st);
        if (c) return c;
        vg_shape s = vg__op_input_shape(op, i);
        if (s.ndims < 0) {
            unknown = true;
            continue;
        }
        if (s.ndims == 0) continue;
        if (!have) {
            out = s;
            have = true;
            continue;
        }
        if (s.ndims != out.ndims)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "StringJoin %s: input shapes do not match (ranks %d and %d)",
                                 vg_op_name(op), out.ndims, s.ndims);
        for (int d = 0; d < s.ndims; d++) {
            if (out.dims[d] < 0) out.dims[d] = s.dims[d];
            else if (s.dims[d] >= 0 && s.dims[d] != out.dims[d])
                return vg_status_set(st, VG_INVALID_ARGUMENT, "StringJoin %s: input shapes do not match (dim %d: "
                                     "%lld vs %lld)", vg_op_name(op), d, (long long)out.dims[d], (long long)s.dims[d]);
        }
    }
    vg__op_set_default_attr_string(op, "separator", "");
    vg__op_set_default_attr_int(op, "N", n);
    return vg__op_set_single_output(op, VG_STRING, unknown && !have ? vg_shape_unknown() : out);
}

static vg_code kernel_string_join(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    int n = vg__kctx_num_inputs(ctx);
    const char *sep = "";
    size_t seplen = 0;
    if (!vg_op_attr_string(op, "separator", &sep, &seplen)) sep = "", seplen = 0;
    const vg_tensor *shape_of = NULL;
    for (int i = 0; i < n; i++) {
        const vg_tensor *t = vg__kctx_input(ctx, i);
        if (vg_tensor_ndims(t) == 0) continue;
        if (!shape_of) {
            shape_of = t;
            continue;
        }
        bool same = vg_tensor_ndims(t) == vg_tensor_ndims(shape_of);
        for (int d = 0; same && d < vg_tensor_ndims(t); d++) same = vg_tensor_dim(t, d) == vg_tensor_dim(shape_of, d);
        if (!same)
            return vg_status_set(st, VG_INVALID_ARGUMENT, "Input shapes do not match: input 0 of rank %d vs input %d "
                                 "of rank %d (StringJoin %s)", vg_tensor_ndims(shape_of), i, vg_tensor_ndims(t),
                                 vg_op_name(op));
    }
    int64_t dims[VG_MAX_DIMS];
    int nd = shape_of ? vg_tensor_ndims(shape_of) : 0;
    for (int d = 0; d < nd; d++) dims[d] = vg_tensor_dim(shape_of, d);
    vg_tensor *out;
    vg_code c = vg__kctx_alloc_output(ctx, 0, VG_STRING, dims, nd, &out);
    if (c) return c;
    int64_t m = vg_tensor_num_elements(out);
    vg__pb_buf b;
    vg__pb_init(&b);
    for (int64_t e = 0; !c && e < m; e++) {
        vg__pb_reset(&b);
        for (int i = 0; i < n; i++) {
            const vg_tensor *t = vg__kctx_input(ctx, i);
            size_t len = 0;
            const char *s = vg_tensor_string(t, vg_tensor_ndims(t) == 0 ? 0 : e, &len);
            if (i > 0 && seplen) vg__pb_put_raw(&b, sep, seplen);
            if (len) vg__pb_put_raw(&b, s, len);
        }
        c = vg__pb_buf_status(&b, "StringJoin", st);
        if (!c) c = vg_tensor_set_string(out, e, b.len ? (const char *)b.data : "", b.len, st);
    }
    vg__pb_free(&b);
    return c;
}

/* ------------------------------------------------------------------------ */
/* ShardedFilename, ShardedFilespec */

static vg_code shape_sharded(vg_op *op, vg_status *st) {
    bool spec = strcmp(vg_op_type(op), "ShardedFilespec") == 0;
    static const char *const names[] = {"basename", "shard", "num_shards"};
    int n = vg_op_num_inputs(op);
    for (int i = 0; i < n; i++) {
        const char *arg = spec && i == 1 ? names[2] : names[i];
        vg_code c = want_dtype(op, i, i == 0 ? VG_STRING : VG_INT32, arg, st);
        if (!c) c = want_rank(op, i, 0, arg, st);
        if (c) return c;
    }
    return vg__op_set_single_output(op, VG_STRING, vg_shape_make(NULL, 0));
}

static vg_code kernel_sharded(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    bool spec = strcmp(vg_op_type(vg__kctx_op(ctx)), "ShardedFilespec") == 0;
    vg_code c = run_scalar(ctx, 0, "basename");
    if (!c) c = run_scalar(ctx, 1, spec ? "num_shards" : "shard");
    if (!c && !spec) c = run_scalar(ctx, 2, "num_shards");
    if (c) return c;
    char *base = string_copy(vg__kctx_input(ctx, 0), 0);
    if (!base) return VG_OOM(st, "ShardedFilename");
    int32_t shard = *(const int32_t *)vg_tensor_data(vg__kctx_input(ctx, 1));
    int32_t num = spec ? shard : *(const int32_t *)vg_tensor_data(vg__kctx_input(ctx, 2));
    int len = spec ? snprintf(NULL, 0, "%s-?\?\?\?\?-of-%05d", base, num)
                   : snprintf(NULL, 0, "%s-%05d-of-%05d", base, shard, num);
    char *s = len < 0 ? NULL : vg__malloc((size_t)len + 1);
    if (!s) c = VG_OOM(st, "ShardedFilename");
    else {
        if (spec) snprintf(s, (size_t)len + 1, "%s-?\?\?\?\?-of-%05d", base, num);
        else snprintf(s, (size_t)len + 1, "%s-%05d-of-%05d", base, shard, num);
        c = set_string_output(ctx, s, (size_t)len);
    }
    vg__free(s);
    vg__free(base);
    return c;
}

/* ------------------------------------------------------------------------ */
/* MergeV2Checkpoints */

static vg_code shape_merge(vg_op *op, vg_status *st) {
    vg_code c = want_dtype(op, 0, VG_STRING, "checkpoint_prefixes", st);
    if (!c) c = want_rank(op, 0, 1, "checkpoint_prefixes", st);
    if (!c) c = want_dtype(op, 1, VG_STRING, "destination_prefix", st);
    if (!c) c = want_rank(op, 1, 0, "destination_prefix", st);
    if (c) return c;
    vg__op_set_default_attr_bool(op, "delete_old_dirs", true);
    return vg__op_set_no_outputs(op);
}

static char *dirname_of(const char *p) {
    const char *slash = strrchr(p, '/');
    if (!slash) return vg__strdup("");
    return vg__strndup(p, slash == p ? 1 : (size_t)(slash - p));
}

static vg_code kernel_merge(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_tensor *in = vg__kctx_input(ctx, 0);
    if (vg_tensor_ndims(in) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "Input checkpoint_prefixes should be an 1-D tensor, got rank %d",
                             vg_tensor_ndims(in));
    vg_code c = run_scalar(ctx, 1, "destination_prefix");
    if (c) return c;
    int64_t n = vg_tensor_num_elements(in);
    if (n < 1 || n > 99999)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "MergeV2Checkpoints: %lld checkpoint prefixes", (long long)n);
    bool del = true;
    vg_op_attr_bool(vg__kctx_op(ctx), "delete_old_dirs", &del);
    char **ps = vg__calloc((size_t)n, sizeof *ps);
    char *dest = string_copy(vg__kctx_input(ctx, 1), 0);
    if (!ps || !dest) c = VG_OOM(st, "MergeV2Checkpoints");
    for (int64_t i = 0; !c && i < n; i++)
        if (!(ps[i] = string_copy(in, i))) c = VG_OOM(st, "MergeV2Checkpoints");
    if (!c) c = vg__bundle_merge((const char *const *)ps, (int)n, dest, st);
    if (!c && del) {
        /* TF: DeleteDir(dirname(prefix)) for every input outside the destination's
         * directory, errors ignored (rmdir: only an emptied directory goes) */
        char *ddir = dirname_of(dest);
        for (int64_t i = 0; ddir && i < n; i++) {
            char *d = dirname_of(ps[i]);
            if (d && *d && strcmp(d, ddir) != 0) (void)rmdir(d);
            vg__free(d);
        }
        vg__free(ddir);
    }
    for (int64_t i = 0; ps && i < n; i++) vg__free(ps[i]);
    vg__free(ps);
    vg__free(dest);
    return c;
}

/* ------------------------------------------------------------------------ */

#define NOGRAD VG__OP_NOT_DIFFERENTIABLE

/* ------------------------------------------------------------------------ */
/* StringSplit (TF 1.15 string_split_op.cc, the V1 op behind tf.string_split):
 * input [N] strings, delimiter a string scalar whose every byte is a delimiter (empty:
 * split into single bytes); skip_empty drops empty tokens. Outputs the SparseTensor
 * indices int64 [T, 2] (row, position in row), values string [T], shape int64 [2]
 * = {N, the largest token count of a row}. */

/* StringSplit's and StringSplitV2's shape function but for their attributes: input a
 * string vector, input 1 (named sep) a string scalar; the SparseTensor outputs indices
 * int64 [?, 2], values string [?], dense shape int64 [2]. */
static vg_code split_shape(vg_op *op, const char *sep, vg_status *st) {
    vg_code c = want_dtype(op, 0, VG_STRING, "input", st);
    if (!c) c = want_dtype(op, 1, VG_STRING, sep, st);
    if (!c) c = want_rank(op, 0, 1, "input", st);
    if (!c) c = want_rank(op, 1, 0, sep, st);
    if (c) return c;
    vg__op_set_num_outputs(op, 3);
    vg__op_set_output(op, 0, VG_INT64, vg_shape_make((int64_t[]){-1, 2}, 2));
    vg__op_set_output(op, 1, VG_STRING, vg_shape_make((int64_t[]){-1}, 1));
    vg__op_set_output(op, 2, VG_INT64, vg_shape_make((int64_t[]){2}, 1));
    return VG_OK;
}

static vg_code shape_string_split(vg_op *op, vg_status *st) {
    vg_code c = split_shape(op, "delimiter", st);
    if (c) return c;
    vg__op_set_default_attr_bool(op, "skip_empty", true);
    return VG_OK;
}

typedef struct split_tok {
    int64_t row, col;
    const char *s;
    size_t n;
} split_tok;

static vg_code kernel_string_split(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    const vg_tensor *in = vg__kctx_input(ctx, 0), *dt = vg__kctx_input(ctx, 1);
    if (vg_tensor_ndims(in) != 1)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input must be a vector, got rank %d (StringSplit %s)",
                             vg_tensor_ndims(in), vg_op_name(op));
    if (vg_tensor_ndims(dt) != 0)
        return vg_status_set(st, VG_INVALID_ARGUMENT, "delimiter must be a scalar, got rank %d (StringSplit %s)",
                             vg_tensor_ndims(dt), vg_op_name(op));
    bool skip_empty = true;
    if (!vg_op_attr_bool(op, "skip_empty", &skip_empty)) skip_empty = true;
    size_t dn = 0;
    const char *delim = vg_tensor_string(dt, 0, &dn);
    int64_t rows = vg_tensor_dim(in, 0), max_cols = 0, ntok = 0, cap = 0;
    split_tok *tok = NULL;
    vg_code c = VG_OK;
    for (int64_t r = 0; !c && r < rows; r++) {
        size_t n = 0;
        const char *s = vg_tensor_string(in, r, &n);
        int64_t col = 0;
        size_t start = 0;
        for (size_t i = 0; !c && i <= n; i++) {
            /* a token ends at a delimiter byte or the end; with an empty delimiter every
             * byte is a token */
            bool end;
            size_t tstart = start, tlen;
            if (dn == 0) {
                if (i == n) break;
                tstart = i;
                tlen = 1;
                end = true;
            } else {
                end = i == n || memchr(delim, s[i], dn) != NULL;
                tlen = i - start;
                if (end) start = i + 1;
            }
            if (!end || (skip_empty && tlen == 0)) continue;
            if (ntok == cap) {
                int64_t ncap = cap ? 2 * cap : 64;
                split_tok *t2 = vg__realloc(tok, (size_t)cap * sizeof *tok, (size_t)ncap * sizeof *tok);
                if (!t2) {
                    c = VG_OOM(st, "StringSplit");
                    break;
                }
                tok = t2;
                cap = ncap;
            }
            tok[ntok++] = (split_tok){r, col++, s + tstart, tlen};
        }
        if (col > max_cols) max_cols = col;
    }
    vg_tensor *oi = NULL, *ov = NULL, *os = NULL;
    if (!c) c = vg__kctx_alloc_output(ctx, 0, VG_INT64, (int64_t[]){ntok, 2}, 2, &oi);
    if (!c) c = vg__kctx_alloc_output(ctx, 1, VG_STRING, &ntok, 1, &ov);
    if (!c) c = vg__kctx_alloc_output(ctx, 2, VG_INT64, (int64_t[]){2}, 1, &os);
    if (!c) {
        int64_t *idx = (int64_t *)vg_tensor_data(oi), *shp = (int64_t *)vg_tensor_data(os);
        shp[0] = rows;
        shp[1] = max_cols;
        for (int64_t t = 0; !c && t < ntok; t++) {
            idx[2 * t] = tok[t].row;
            idx[2 * t + 1] = tok[t].col;
            c = vg_tensor_set_string(ov, t, tok[t].n ? tok[t].s : "", tok[t].n, st);
        }
    }
    vg__free(tok);
    return c;
}

/* ------------------------------------------------------------------------ */
/* StringSplitV2 (TF 1.15 string_split_op.cc SplitV2, behind tf.strings.split): Python's
 * str.split. A non-empty sep (a whole string) splits at each occurrence, keeping empty
 * tokens ('1,,2' -> '1', '', '2'; '' -> ''); an empty sep splits at runs of whitespace
 * and drops leading/trailing whitespace ('' or '  ' -> nothing). After maxsplit splits
 * (> 0) the rest of the string is the last token; maxsplit 0 keeps the string whole.
 * As in TF's kernel, with an empty sep the rest after maxsplit is taken after the
 * whitespace that follows the last token, so it may be "" ('a ' maxsplit 1 -> 'a', ''). */

static vg_code shape_string_split_v2(vg_op *op, vg_status *st) {
    vg_code c = split_shape(op, "sep", st);
    if (c) return c;
    vg__op_set_default_attr_int(op, "maxsplit", -1);
    return VG_OK;
}

typedef struct tok_list {
    split_tok *t;
    int64_t n, cap;
} tok_list;

static bool tok_add(tok_list *l, int64_t row, int64_t col, const char *s, size_t n) {
    if (l->n == l->cap) {
        int64_t ncap = l->cap ? 2 * l->cap : 64;
        split_tok *t2 = vg__realloc(l->t, (size_t)l->cap * sizeof *l->t, (size_t)ncap * sizeof *l->t);
        if (!t2) return false;
        l->t = t2;
        l->cap = ncap;
    }
    l->t[l->n++] = (split_tok){row, col, s, n};
    return true;
}

/* str_util's whitespace: isspace in the C locale */
static bool ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

/* One row of SplitV2; returns false on allocation failure, *ncols = its token count. */
static bool split_v2_row(tok_list *l, int64_t row, const char *s, size_t n, const char *sep, size_t sn,
                         int64_t maxsplit, int64_t *ncols) {
    int64_t col = 0;
    size_t i = 0;
    if (maxsplit == 0) {
        *ncols = 1;
        return tok_add(l, row, 0, s, n);
    }
    if (sn == 0) {
        int64_t split = 0;
        while (i < n && ascii_space(s[i])) i++;
        while (i < n) {
            size_t start = i;
            while (i < n && !ascii_space(s[i])) i++;
            if (!tok_add(l, row, col++, s + start, i - start)) return false;
            while (i < n && ascii_space(s[i])) i++;
            if (maxsplit > 0 && ++split == maxsplit) {
                if (!tok_add(l, row, col++, s + i, n - i)) return false;
                break;
            }
        }
        *ncols = col;
        return true;
    }
    int64_t split = 0;
    for (;;) {
        const char *p = n - i >= sn ? memmem(s + i, n - i, sep, sn) : NULL;
        if (!p) break;
        size_t at = (size_t)(p - s);
        if (!tok_add(l, row, col++, s + i, at - i)) return false;
        i = at + sn;
        if (maxsplit > 0 && ++split == maxsplit) break;
    }
    if (!tok_add(l, row, col++, s + i, n - i)) return false;
    *ncols = col;
    return true;
}

static vg_code kernel_string_split_v2(vg__kctx *ctx) {
    vg_status *st = vg__kctx_status(ctx);
    const vg_op *op = vg__kctx_op(ctx);
    const vg_tensor *in = vg__kctx_input(ctx, 0), *sept = vg__kctx_input(ctx, 1);
    char buf[128];
    if (vg_tensor_ndims(in) != 1) {
        vg_shape sh = vg_shape_make(vg_tensor_dims(in), vg_tensor_ndims(in));
        return vg_status_set(st, VG_INVALID_ARGUMENT, "input must be a vector, got shape: %s (StringSplitV2 %s)",
                             vg_shape_str(&sh, buf, sizeof buf), vg_op_name(op));
    }
    if (vg_tensor_ndims(sept) != 0) {
        vg_shape sh = vg_shape_make(vg_tensor_dims(sept), vg_tensor_ndims(sept));
        return vg_status_set(st, VG_INVALID_ARGUMENT, "sep must be a scalar, got shape: %s (StringSplitV2 %s)",
                             vg_shape_str(&sh, buf, sizeof buf), vg_op_name(op));
    }
    int64_t maxsplit = -1;
    if (!vg_op_attr_int(op, "maxsplit", &maxsplit)) maxsplit = -1;
    size_t sn = 0;
    const char *sep = vg_tensor_string(sept, 0, &sn);
    int64_t rows = vg_tensor_dim(in, 0), max_cols = 0;
    tok_list l = {NULL, 0, 0};
    vg_code c = VG_OK;
    for (int64_t r = 0; !c && r < rows; r++) {
        size_t n = 0;
        const char *s = vg_tensor_string(in, r, &n);
        int64_t cols = 0;
        if (!split_v2_row(&l, r, s ? s : "", n, sep, sn, maxsplit, &cols)) c = VG_OOM(st, "StringSplitV2");
        if (cols > max_cols) max_cols = cols;
    }
    vg_tensor *oi = NULL, *ov = NULL, *os = NULL;
    if (!c) c = vg__kctx_alloc_output(ctx, 0, VG_INT64, (int64_t[]){l.n, 2}, 2, &oi);
    if (!c) c = vg__kctx_alloc_output(ctx, 1, VG_STRING, &l.n, 1, &ov);
    if (!c) c = vg__kctx_alloc_output(ctx, 2, VG_INT64, (int64_t[]){2}, 1, &os);
    if (!c) {
        int64_t *idx = (int64_t *)vg_tensor_data(oi), *shp = (int64_t *)vg_tensor_data(os);
        shp[0] = rows;
        shp[1] = max_cols;
        for (int64_t t = 0; !c && t < l.n; t++) {
            idx[2 * t] = l.t[t].row;
            idx[2 * t + 1] = l.t[t].col;
            c = vg_tensor_set_string(ov, t, l.t[t].n ? l.t[t].s : "", l.t[t].n, st);
        }
    }
    vg__free(l.t);
    return c;
}

/* The builder of a StringSplit[V2] op: source and the separator as a scalar string Const;
 * NULL (graph error set) when out of memory. */
static vg_op_builder *split_builder(vg_graph *g, const char *type, vg_output source, const char *sep,
                                    const char *name) {
    vg_tensor *d = vg_tensor_new(VG_STRING, NULL, 0, NULL);
    if (!d) {
        vg_graph_set_error(g, VG_RESOURCE_EXHAUSTED, "%s: out of memory", type);
        return NULL;
    }
    vg_tensor_set_string(d, 0, sep, strlen(sep), NULL);
    vg_output sc = vg_const(g, d, "Const");
    vg_tensor_free(d);
    vg_op_builder *b = vg__builder_with_inputs(g, type, name, type, (vg_output[]){source, sc}, 2);
    return b;
}

/* Finishes a split op and names its sparse outputs (indices, values, dense_shape). */
static vg_op *split_finish(vg_op_builder *b, vg_sparse_output *out) {
    vg_op *op = vg_op_builder_finish(b);
    if (op && out) {
        out->indices = vg_out(op, 0);
        out->values = vg_out(op, 1);
        out->dense_shape = vg_out(op, 2);
    }
    return op;
}

vg_op *vg_string_split_v2(vg_graph *g, vg_output source, const char *sep, int64_t maxsplit, vg_sparse_output *out,
                          const char *name) {
    vg_op_builder *b = split_builder(g, "StringSplitV2", source, sep ? sep : "", name);
    if (!b) return NULL;
    vg_op_builder_set_attr_int(b, "maxsplit", maxsplit);
    return split_finish(b, out);
}

vg_op *vg_string_split(vg_graph *g, vg_output source, const char *delimiter, bool skip_empty,
                       vg_sparse_output *out, const char *name) {
    vg_op_builder *b = split_builder(g, "StringSplit", source, delimiter ? delimiter : " ", name);
    if (!b) return NULL;
    vg_op_builder_set_attr_bool(b, "skip_empty", skip_empty);
    return split_finish(b, out);
}

const vg__op_def vg__ops_string[] = {
    {"StringJoin", 1, -1, NOGRAD, 0, shape_string_join, kernel_string_join, NULL},
    {"ShardedFilename", 3, 3, NOGRAD, 0, shape_sharded, kernel_sharded, NULL},
    {"ShardedFilespec", 2, 2, NOGRAD, 0, shape_sharded, kernel_sharded, NULL},
    {"StringSplit", 2, 2, NOGRAD, 0, shape_string_split, kernel_string_split, NULL},
    {"StringSplitV2", 2, 2, NOGRAD, 0, shape_string_split_v2, kernel_string_split_v2, NULL},
    {"MergeV2Checkpoints", 2, 2, VG__OP_STATEFUL | NOGRAD, 0, shape_merge, kernel_merge, NULL},
    {0},
};
