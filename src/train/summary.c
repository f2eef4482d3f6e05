/*
 * summary.c - the summary builders of vigil/summary.h (tf.summary.scalar, histogram,
 * merge, merge_all), named as TF1's python/summary/summary.py names them:
 *
 *   vg_summary_scalar(g, "loss", x)     Const "loss/tags" = "loss", ScalarSummary "loss"
 *   again with "loss"                   "loss_1/tags" = "loss_1", op "loss_1"
 *   inside name scope "train"           op "train/loss", tag "train/loss"
 *   vg_summary_merge_all(g)             MergeSummary "Merge/MergeSummary"
 *   vg_summary_merge(g, s, n, "m")      MergeSummary "m/m"
 *
 * TF's summary_scope opens name scope <name> and uses the scope (without its trailing
 * "/") both as the tag and as the summary op's name. vigil's op builder always makes a
 * name unique, so the builders compute the unique name without reserving it, enter it
 * as a verbatim scope ("<name>/") for the Const, then create the op under that same
 * name (the Const reserved only "<name>/tags").
 */
#include "vigil/ops.h"
#include "vigil/summary.h"
#include <stdio.h>
#include <string.h>

#define NAME_MAX_LEN 1024

/* summary_op_util.clean_tag: characters other than [-/A-Za-z0-9_.] (and non-ASCII
 * bytes, which Python's \w accepts) become '_'; leading '/' are dropped. */
static void clean_tag(const char *name, char *out, size_t len) {
    while (*name == '/') name++;
    size_t i = 0;
    for (; name[i] && i + 1 < len; i++) {
        unsigned char ch = (unsigned char)name[i];
        bool ok = ch >= 0x80 || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                  ch == '_' || ch == '-' || ch == '/' || ch == '.';
        out[i] = ok ? (char)ch : '_';
    }
    out[i] = 0;
    if (strcmp(out, name) != 0)
        vg_logf(VG_LOG_INFO, "Summary name %s is illegal; using %s instead.", name, out);
}

/* ScalarSummary / HistogramSummary: tag input is a Const named "<op>/<arg>". */
static vg_output tagged_summary_ex(vg_graph *g, const char *type, const char *arg, const char *name,
                                   const char *default_name, vg_output values, int64_t max_images);
static vg_output tagged_summary(vg_graph *g, const char *type, const char *arg, const char *name,
                                const char *default_name, vg_output values) {
    return tagged_summary_ex(g, type, arg, name, default_name, values, 0);
}
/* max_images > 0: ImageSummary's attr */
static vg_output tagged_summary_ex(vg_graph *g, const char *type, const char *arg, const char *name,
                                   const char *default_name, vg_output values, int64_t max_images) {
    if (!g) return vg_out(NULL, 0);
    if (!values.op) return vg_out(NULL, 0); /* an earlier builder failed; error is recorded */
    char clean[NAME_MAX_LEN], full[NAME_MAX_LEN], scope_buf[NAME_MAX_LEN + 2];
    clean_tag(name ? name : "", clean, sizeof clean);
    if (!clean[0]) {
        if (!default_name) {
            vg_graph_set_error(g, VG_INVALID_ARGUMENT, "%s: the summary name must not be empty", type);
            return vg_out(NULL, 0);
        }
        snprintf(clean, sizeof clean, "%s", default_name);
    }
    /* full = "<scope>/<clean>" made unique; the op is created relative to the scope. */
    vg_graph_unique_name(g, clean, full, sizeof full);
    const char *scope = vg_graph_scope(g);
    size_t sl = strlen(scope);
    const char *rel = (sl && strncmp(full, scope, sl) == 0 && full[sl] == '/') ? full + sl + 1 : full;
    char relbuf[NAME_MAX_LEN];
    snprintf(relbuf, sizeof relbuf, "%s", rel);

    snprintf(scope_buf, sizeof scope_buf, "%s/", full);
    vg_graph_push_scope(g, scope_buf);
    vg_output tag = vg_const_string(g, full, arg);
    vg_graph_pop_scope(g);

    vg_op_builder *b = vg_op_builder_new(g, type, relbuf);
    vg_op_builder_add_input(b, tag);
    vg_op_builder_add_input(b, values);
    if (values.op) vg_op_builder_set_attr_type(b, "T", vg_output_dtype(values));
    if (max_images > 0) vg_op_builder_set_attr_int(b, "max_images", max_images);
    vg_output out = vg_out(vg_op_builder_finish(b), 0);
    if (out.op) vg_graph_add_to_collection(g, VG_SUMMARIES, out);
    return out;
}

vg_output vg_summary_scalar(vg_graph *g, const char *tag, vg_output value) {
    return tagged_summary(g, "ScalarSummary", "tags", tag, NULL, value);
}

vg_output vg_summary_histogram(vg_graph *g, const char *tag, vg_output values) {
    return tagged_summary(g, "HistogramSummary", "tag", tag, "HistogramSummary", values);
}

vg_output vg_summary_image(vg_graph *g, const char *name, vg_output tensor, int max_outputs) {
    if (!g) return vg_out(NULL, 0);
    if (max_outputs < 1) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "tf.summary.image: max_outputs must be >= 1, got %d", max_outputs);
        return vg_out(NULL, 0);
    }
    return tagged_summary_ex(g, "ImageSummary", "tag", name, NULL, tensor, max_outputs);
}

vg_output vg_summary_merge(vg_graph *g, const vg_output *summaries, int n, const char *name) {
    if (!g) return vg_out(NULL, 0);
    if (n <= 0 || !summaries) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "MergeSummary needs at least one input, got %d", n);
        return vg_out(NULL, 0);
    }
    char clean[NAME_MAX_LEN];
    if (name) clean_tag(name, clean, sizeof clean);
    const char *nm = name && clean[0] ? clean : NULL;
    /* with _ops.name_scope(name, 'Merge'): merge_summary(inputs, name=name) */
    vg_graph_push_scope(g, nm ? nm : "Merge");
    vg_op_builder *b = vg_op_builder_new(g, "MergeSummary", nm);
    vg_op_builder_add_inputs(b, summaries, n);
    vg_op_builder_set_attr_int(b, "N", n);
    vg_op *op = vg_op_builder_finish(b);
    vg_graph_pop_scope(g);
    return vg_out(op, 0);
}

vg_output vg_summary_merge_all(vg_graph *g) {
    if (!g) return vg_out(NULL, 0);
    int n = 0;
    const vg_output *items = vg_graph_collection(g, VG_SUMMARIES, &n);
    if (n == 0) return vg_out(NULL, 0);
    /* items stay valid: building the merge op adds to no collection */
    return vg_summary_merge(g, items, n, NULL);
}
