/* scope_test_util.h - the variable-scope and naming tests' helpers: CHECK_NAME (two
 * names equal, both printed if not), get_variable options of a shape, a variable's name
 * ("(failed)" when there is none), get_variable of a scalar, and ns_probe, the name
 * scope `with ops.name_scope(name) as sc` would give here ("a/b/"). Include after
 * test_util.h. */
#ifndef VG_SCOPE_TEST_UTIL_H
#define VG_SCOPE_TEST_UTIL_H
#include "test_util.h"
#include "vigil/vigil.h"

#define CHECK_NAME(got, want)                                                                                          \
    do {                                                                                                               \
        const char *_g = (got), *_w = (want);                                                                          \
        if (strcmp(_g, _w) != 0) {                                                                                     \
            fprintf(stderr, "%s:%d: got \"%s\", expected \"%s\"\n", __FILE__, __LINE__, _g, _w);                       \
            vg_test_failures++;                                                                                        \
        }                                                                                                              \
    } while (0)

/* get_variable options with shape dims[ndims] (ndims 0: a scalar), the rest zero. */
static inline vg_get_variable_opts vopts(const int64_t *dims, int ndims) {
    vg_get_variable_opts o;
    memset(&o, 0, sizeof o);
    o.dims = dims;
    o.ndims = ndims;
    return o;
}

static inline const char *var_name(vg_variable v) { return v.var ? vg_op_name(v.var) : "(failed)"; }

/* get_variable(name, []) */
static inline vg_variable getv0(vg_graph *g, const char *name) {
    vg_get_variable_opts o = vopts(NULL, 0);
    return vg_get_variable_ex(g, name, &o);
}
static inline const char *gv(vg_graph *g, const char *name) { return var_name(getv0(g, name)); }

/* `with ops.name_scope(name) as sc`: the scope string TF gives ("a/b/") */
static inline const char *ns_probe(vg_graph *g, const char *name, char *buf, size_t len) {
    const char *got = vg_graph_push_scope(g, name);
    snprintf(buf, len, "%s/", got);
    vg_graph_pop_scope(g);
    return buf;
}

/* A custom getter's "two variables under one name" half (TF's
 * testGetterThatCreatesTwoVariablesAndSumsThem): out[i] is getter's variable
 * "<a->name>/<i>", i = 0, 1, with a's other arguments. */
static inline void get_two_sub_variables(vg_graph *g, vg_getter_fn getter, void *ctx, const vg_getter_args *a,
                                         vg_variable out[2]) {
    for (int i = 0; i < 2; i++) {
        char name[512];
        snprintf(name, sizeof name, "%s/%d", a->name, i);
        vg_getter_args b = *a;
        b.name = name;
        out[i] = getter(g, &b, ctx);
    }
}
#endif
