/* cf_callbacks.h - one-expression callbacks for vg_while_loop, vg_cond and tf.data's
 * functions (map, filter, flat_map, ...), so a test writes the expression once instead
 * of a six-line function each time:
 *   CF_COND(lt_10, vg_less(g, v[0], vg_const_i32(g, 10, NULL), NULL))  loop condition *p
 *   CF_BODY1(add_1, vg_add(g, v[0], one, NULL))                        loop body, o[0]
 *   CF_BRANCH1(br_a, ((env *)u)->a)                                    cond branch, o[0]
 *   DS_FN1(parse, vg_string_to_number(fg, args[0], VG_INT64, NULL))    dataset fn, one output
 * The expression sees the callback's parameters (g, v, n, u; g, u for a branch; fg,
 * args, nargs, p for a dataset function). */
#ifndef VG_CF_CALLBACKS_H
#define VG_CF_CALLBACKS_H
#include "vigil/vigil.h"

#define CF_COND(name, ...)                                                                 \
    static vg_code name(vg_graph *g, const vg_output *v, int n, void *u, vg_output *p) {  \
        (void)g, (void)v, (void)n, (void)u;                                                \
        *p = (__VA_ARGS__);                                                                \
        return VG_OK;                                                                      \
    }
#define CF_BODY1(name, ...)                                                                \
    static vg_code name(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {  \
        (void)g, (void)v, (void)n, (void)u;                                                \
        o[0] = (__VA_ARGS__);                                                              \
        return VG_OK;                                                                      \
    }
#define CF_BRANCH1(name, ...)                                                              \
    static vg_code name(vg_graph *g, void *u, vg_output *o) {                              \
        (void)g, (void)u;                                                                  \
        o[0] = (__VA_ARGS__);                                                              \
        return VG_OK;                                                                      \
    }
#define DS_FN1(name, ...)                                                                                     \
    static vg_code name(vg_graph *fg, const vg_output *args, int nargs, vg_output *outs, int *nouts, void *p) { \
        (void)fg, (void)args, (void)nargs, (void)p;                                                           \
        outs[0] = (__VA_ARGS__);                                                                              \
        *nouts = 1;                                                                                           \
        return VG_OK;                                                                                         \
    }

/* A counted loop's body over (i, x, ...): o[0] = i + 1 (an int32 counter), o[1] = the
 * expression (over g, v, n, u as CF_BODY1's). */
#define CF_COUNTED_BODY(name, ...)                                                         \
    static vg_code name(vg_graph *g, const vg_output *v, int n, void *u, vg_output *o) {  \
        (void)g, (void)v, (void)n, (void)u;                                                \
        o[0] = vg_add(g, v[0], vg_const_i32(g, 1, NULL), NULL);                            \
        o[1] = (__VA_ARGS__);                                                              \
        return VG_OK;                                                                      \
    }
#endif
