/*
 * vigil/hparams.h - tf.contrib.training.HParams: named, typed hyperparameters that a
 * program overrides from one command-line string ("lr=0.3,layers=[64,64]") or from JSON,
 * with TF 1.15's parsing, casting rules and messages (hparam.py).
 *
 * Each hyperparameter has a type fixed when it is added (int64, float (a double),
 * bool, string) and is a scalar or a list. As TF:
 *   - parse(): comma-separated `name=value` or `name=[v1,v2,...]` clauses; ints are
 *     Python ints (base 10, surrounding spaces allowed), floats Python floats ("1",
 *     "-.5e3", "inf"), bools "true"/"True"/"false"/"False" or an int (non-zero true),
 *     strings anything up to the next comma. Unknown names, a name given twice, a list
 *     for a scalar (or the reverse) and values that do not parse fail with TF's
 *     ValueError text. Index clauses (`arr[1]=3`) parse but fail as TF 1.15's
 *     override_from_dict does.
 *   - set / parse_json (override_from_dict): a float may not become an int, a number or
 *     string not a bool (nor a bool a number), only a string a string; an int becomes a
 *     float.
 * vigil applies parse() and parse_json() all or nothing (TF may leave the clauses before
 * a failing one applied).
 *
 *     vg_status st;
 *     vg_hparams *hp = vg_hparams_new();
 *     vg_hparams_add_float(hp, "learning_rate", 0.1, &st);
 *     vg_hparams_add_int(hp, "num_hidden_units", 100, &st);
 *     const char *acts[2] = {"relu", "tanh"};
 *     vg_hparams_add_string_list(hp, "activations", acts, 2, &st);
 *     if (vg_hparams_parse(hp, "learning_rate=0.3,activations=[elu]", &st) != VG_OK) {
 *         vg_hparams_free(hp);   // st.msg: TF's ValueError text
 *         return st.code;
 *     }
 *     double lr;
 *     vg_hparams_get_float(hp, "learning_rate", &lr, &st);        // 0.3
 *     char *json = vg_hparams_to_json(hp, &st);  // {"learning_rate": 0.3, "num_hidden_units": 100, ...}
 *     vg_free(json);
 *     vg_hparams_free(hp);
 */
#ifndef VIGIL_HPARAMS_H
#define VIGIL_HPARAMS_H

#include "status.h"
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vg_hparam_type {
    VG_HPARAM_INT = 1,    /* Python int (int64 here) */
    VG_HPARAM_FLOAT = 2,  /* Python float (double) */
    VG_HPARAM_BOOL = 3,
    VG_HPARAM_STRING = 4
} vg_hparam_type;

typedef struct vg_hparams vg_hparams;

/* A new, empty set (NULL when out of memory). Ownership: vg_hparams_free. */
VG_API vg_hparams *vg_hparams_new(void);
VG_API void vg_hparams_free(vg_hparams *hp);

/* add_hparam(name, value). Strings are copied. Fail with INVALID_ARGUMENT: NULL or empty
 * name, a name already there ("Hyperparameter name is reserved: <name>"), an empty list
 * ("Multi-valued hyperparameters cannot be empty: <name>"); RESOURCE_EXHAUSTED. */
VG_API vg_code vg_hparams_add_int(vg_hparams *hp, const char *name, int64_t value, vg_status *st);
VG_API vg_code vg_hparams_add_float(vg_hparams *hp, const char *name, double value, vg_status *st);
VG_API vg_code vg_hparams_add_bool(vg_hparams *hp, const char *name, bool value, vg_status *st);
VG_API vg_code vg_hparams_add_string(vg_hparams *hp, const char *name, const char *value, vg_status *st);
VG_API vg_code vg_hparams_add_int_list(vg_hparams *hp, const char *name, const int64_t *values, int n,
                                       vg_status *st);
VG_API vg_code vg_hparams_add_float_list(vg_hparams *hp, const char *name, const double *values, int n,
                                         vg_status *st);
VG_API vg_code vg_hparams_add_bool_list(vg_hparams *hp, const char *name, const bool *values, int n,
                                        vg_status *st);
VG_API vg_code vg_hparams_add_string_list(vg_hparams *hp, const char *name, const char *const *values, int n,
                                          vg_status *st);

/* set_hparam(name, value) with TF's casting rules (see above). Fail with NOT_FOUND (no
 * such hyperparameter), INVALID_ARGUMENT ("Could not cast hparam '<name>' of type
 * '<class 'int'>' from value 0.5", "Must not pass a list for single-valued parameter:
 * <name>", "Must pass a list for multi-valued parameter: <name>."), RESOURCE_EXHAUSTED.
 * A list may be set empty (as TF). */
VG_API vg_code vg_hparams_set_int(vg_hparams *hp, const char *name, int64_t value, vg_status *st);
VG_API vg_code vg_hparams_set_float(vg_hparams *hp, const char *name, double value, vg_status *st);
VG_API vg_code vg_hparams_set_bool(vg_hparams *hp, const char *name, bool value, vg_status *st);
VG_API vg_code vg_hparams_set_string(vg_hparams *hp, const char *name, const char *value, vg_status *st);
VG_API vg_code vg_hparams_set_int_list(vg_hparams *hp, const char *name, const int64_t *values, int n,
                                       vg_status *st);
VG_API vg_code vg_hparams_set_float_list(vg_hparams *hp, const char *name, const double *values, int n,
                                         vg_status *st);
VG_API vg_code vg_hparams_set_string_list(vg_hparams *hp, const char *name, const char *const *values, int n,
                                          vg_status *st);

/* del_hparam(name). NOT_FOUND when there is none. */
VG_API vg_code vg_hparams_del(vg_hparams *hp, const char *name, vg_status *st);

/* Reading (hparams.<name>). The scalar getters fail with NOT_FOUND (no such name) and
 * INVALID_ARGUMENT (a list, or another type; get_float also reads an int). The list
 * getters give a borrowed array valid until the hyperparameter is next changed. */
VG_API vg_code vg_hparams_get_int(const vg_hparams *hp, const char *name, int64_t *out, vg_status *st);
VG_API vg_code vg_hparams_get_float(const vg_hparams *hp, const char *name, double *out, vg_status *st);
VG_API vg_code vg_hparams_get_bool(const vg_hparams *hp, const char *name, bool *out, vg_status *st);
VG_API vg_code vg_hparams_get_string(const vg_hparams *hp, const char *name, const char **out, vg_status *st);
VG_API vg_code vg_hparams_get_int_list(const vg_hparams *hp, const char *name, const int64_t **values, int *n,
                                       vg_status *st);
VG_API vg_code vg_hparams_get_float_list(const vg_hparams *hp, const char *name, const double **values, int *n,
                                         vg_status *st);
VG_API vg_code vg_hparams_get_bool_list(const vg_hparams *hp, const char *name, const bool **values, int *n,
                                        vg_status *st);
VG_API vg_code vg_hparams_get_string_list(const vg_hparams *hp, const char *name, const char *const **values,
                                          int *n, vg_status *st);

/* `name in hparams`; the number of hyperparameters and the name of the i-th (in the
 * order they were added; NULL out of range, borrowed); the type of one (NOT_FOUND). */
VG_API bool vg_hparams_contains(const vg_hparams *hp, const char *name);
VG_API int vg_hparams_count(const vg_hparams *hp);
VG_API const char *vg_hparams_name(const vg_hparams *hp, int i);
VG_API vg_code vg_hparams_type(const vg_hparams *hp, const char *name, vg_hparam_type *type, bool *is_list,
                               vg_status *st);

/* parse(values): see above. INVALID_ARGUMENT with TF's messages ("Malformed
 * hyperparameter value: <rest>", "Unknown hyperparameter type for <name>", "Could not
 * parse hparam '<name>' of type 'int' with value '<v>' in <values>", "Multiple
 * assignments to variable '<name>' in <values>", ...); nothing changes on failure. */
VG_API vg_code vg_hparams_parse(vg_hparams *hp, const char *values, vg_status *st);
/* parse_json(values_json): a JSON object of name: value (scalars or arrays of scalars),
 * applied by set's rules. INVALID_ARGUMENT (bad JSON, naming the offset; a cast TF
 * refuses), NOT_FOUND (an unknown name, TF's KeyError); nothing changes on failure. */
VG_API vg_code vg_hparams_parse_json(vg_hparams *hp, const char *values_json, vg_status *st);
/* to_json(): json.dumps(hparams.values()) as Python writes it ({"a": 1, "b": [0.5, 2.0]},
 * floats in Python's shortest repr, non-ASCII as \uXXXX). A new string (vg_free), NULL
 * on failure (RESOURCE_EXHAUSTED; INVALID_ARGUMENT for a NULL hp). */
VG_API char *vg_hparams_to_json(const vg_hparams *hp, vg_status *st);

#ifdef __cplusplus
}
#endif
#endif
