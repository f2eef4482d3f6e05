/*
 * vigil/flags.h - tf.flags (absl.flags as TF 1.15 re-exports it) for programs ported
 * from TF: DEFINE_string / DEFINE_integer / DEFINE_float / DEFINE_boolean with a
 * default and a help line, parsed from the command line as absl parses it:
 *   --name=value, -name=value, --name value (not for booleans);
 *   booleans: --flag, --noflag, --flag=true|false|t|f|1|0 (any case);
 *   "--" ends the flags; positional arguments may come between flags (GNU style);
 *   integers in base 10, or 0x.. / 0o.. (absl's int(x, 0)-like prefixes);
 *   a flag given twice: the last value wins;
 *   --help, --helpshort, --helpfull, -? set vg_flags_help_requested (the library never
 *   prints or exits: the program prints vg_flags_help and exits, as absl's app does).
 * Unknown flags are an error, or, with known_only (what tf.app.run does: TF 1.15 parses
 * with known_only=True), left in argv with the positional arguments.
 *
 *     vg_flags *f = vg_flags_new();
 *     vg_flags_define_integer(f, "batch_size", 128, "Batch size.", &st);
 *     vg_flags_define_string(f, "data_dir", "/tmp/data", "Where the data is.", &st);
 *     vg_flags_define_boolean(f, "fake_data", false, "Use fake data.", &st);
 *     int argc = 3;
 *     char *argv[] = {"prog", "--batch_size=64", "--nofake_data", NULL};
 *     if (vg_flags_parse(f, &argc, argv, false, &st) != VG_OK) return st.code;
 *     if (vg_flags_help_requested(f)) { char *h = vg_flags_help(f, argv[0]); puts(h); vg_free(h); }
 *     int64_t batch = vg_flags_integer(f, "batch_size");   // 64; argc == 1 now
 *     vg_flags_free(f);
 *
 * A vg_flags object is not thread-safe; names are case-sensitive.
 */
#ifndef VIGIL_FLAGS_H
#define VIGIL_FLAGS_H

#include "status.h"
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vg_flags vg_flags;

typedef enum vg_flag_type { VG_FLAG_STRING, VG_FLAG_INTEGER, VG_FLAG_FLOAT, VG_FLAG_BOOLEAN } vg_flag_type;

/* A new, empty flag set (NULL when out of memory). Ownership: free with vg_flags_free. */
VG_API vg_flags *vg_flags_new(void);
VG_API void vg_flags_free(vg_flags *f);

/* DEFINE_string / DEFINE_integer / DEFINE_float / DEFINE_boolean(name, default, help).
 * Strings are copied (def may be NULL: no default, TF's None). Fail with
 * INVALID_ARGUMENT for an empty name, one starting with '-' or holding '=' or
 * whitespace, a NULL f, or a name already defined ("The flag 'x' is defined twice.",
 * absl's DuplicateFlagError); RESOURCE_EXHAUSTED. */
VG_API vg_code vg_flags_define_string(vg_flags *f, const char *name, const char *def, const char *help, vg_status *st);
VG_API vg_code vg_flags_define_integer(vg_flags *f, const char *name, int64_t def, const char *help, vg_status *st);
VG_API vg_code vg_flags_define_float(vg_flags *f, const char *name, double def, const char *help, vg_status *st);
VG_API vg_code vg_flags_define_boolean(vg_flags *f, const char *name, bool def, const char *help, vg_status *st);

/* Parses argv[1 .. *argc) (the rules above), then rewrites argv in place to argv[0]
 * and what was not parsed (positional arguments; with known_only also unknown flags,
 * a "--" and what follows it), in order, sets *argc and, when it shrank, argv[*argc] =
 * NULL (argv needs no slot beyond argc). Fails with
 * INVALID_ARGUMENT and absl's messages: "Unknown command line flag 'x'" (unless
 * known_only), "Missing value for flag --x", "flag --x=v: invalid literal for int()
 * with base 10: 'v'" (integers; also out of the int64 range), "flag --x=v: could not
 * convert string to float: 'v'", "flag --x=v: Non-boolean argument to boolean flag",
 * "--nox=v does not take an argument"; RESOURCE_EXHAUSTED. On failure argv and *argc
 * are unchanged (values parsed before the failing argument keep their new values). */
VG_API vg_code vg_flags_parse(vg_flags *f, int *argc, char **argv, bool known_only, vg_status *st);

/* True when the last parse saw --help, --helpshort, --helpfull or -? (and the program
 * did not define a flag of that name). */
VG_API bool vg_flags_help_requested(const vg_flags *f);
/* The --help listing: "USAGE: <program> [flags]", then every flag by name, absl's
 * layout ("  --batch_size: Batch size." then "    (default: '128')" and "    (an integer)"
 * on their own lines); "--[no]name" for booleans, "(a number)" for floats. A new string (vg_free); NULL
 * when out of memory. program may be NULL. */
VG_API char *vg_flags_help(const vg_flags *f, const char *program);

/* The current values (the default until parsed). A name not defined, or defined with
 * another type, gives NULL / 0 / 0.0 / false. Strings are borrowed until the next
 * parse or free. */
VG_API const char *vg_flags_string(const vg_flags *f, const char *name);
VG_API int64_t vg_flags_integer(const vg_flags *f, const char *name);
VG_API double vg_flags_float(const vg_flags *f, const char *name);
VG_API bool vg_flags_boolean(const vg_flags *f, const char *name);
/* FLAGS[name].present: the flag was given on the command line (last parse). */
VG_API bool vg_flags_present(const vg_flags *f, const char *name);
/* Whether name is defined; *type (may be NULL) gets its type. */
VG_API bool vg_flags_defined(const vg_flags *f, const char *name, vg_flag_type *type);

#ifdef __cplusplus
}
#endif
#endif
