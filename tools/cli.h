/*
 * cli.h - the `vigil` command: shared declarations of its subcommands (train, ckpt,
 * events, plot) and the small helpers they share (errors, option parsing, reading
 * scalars out of event files).
 *
 * Conventions: a subcommand returns the process exit status (0 success, 1 failure, 2
 * usage error). Results go to stdout, diagnostics to stderr as "vigil: ...".
 */
#ifndef VIGIL_CLI_H
#define VIGIL_CLI_H

#include "vigil/vigil.h"
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- subcommands ---------------------------------------------------------- */
int cli_train(int argc, char **argv);
int cli_ckpt(int argc, char **argv);
int cli_events(int argc, char **argv);
int cli_plot(int argc, char **argv);
int cli_graph(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_train_meta(int argc, char **argv);

/* `vigil train`'s option parsing alone (nothing is read or trained): 0 valid, 2 usage
 * error (reported on stderr), -1 --help. For the CLI fuzz harness (fuzz/fuzz_cli.c). */
int cli_train_parse_only(int argc, char **argv);
int cli_convert(int argc, char **argv);

/* ---- errors and messages ---------------------------------------------------- */
/* "vigil: <CODE>: <message>" on stderr; returns 1 (the exit status for it). */
int cli_fail_status(const vg_status *st);
/* "vigil: <printf message>" on stderr; returns 1. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same line from a va_list (for a command's own notes): "vigil: <message>\n". */
void cli_vmessage(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
/* Prints "vigil <cmd>: <message>" and the hint to run --help; returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- untrusted names -------------------------------------------------------- */
/* Writes s[0..len) to f with names from files made safe for a terminal and for TSV:
 * \t \n \r \\ for tab, newline, carriage return and backslash, \xNN for the other
 * control bytes (< 0x20), DEL (0x7f), bytes that are not valid UTF-8 and UTF-8 C1
 * controls (U+0080..U+009F, each of their bytes); the rest as is. */
void cli_put_escaped(FILE *f, const char *s, size_t len);
/* The same escaping as a new string (free()); NULL when out of memory. */
char *cli_escape(const char *s, size_t len);

/* ---- option parsing --------------------------------------------------------- */
/* Matches argv[*i] against "--name VALUE" or "--name=VALUE"; on a match stores the
 * value in *val, advances *i past a separate value and returns true. A missing value
 * sets *missing. */
bool cli_opt(int argc, char **argv, int *i, const char *name, const char **val, bool *missing);
/* The end of a subcommand's option loop, for an argument arg that matched none of its
 * options: "--help" / "-h" prints help and returns 0; another "-..." is an unknown
 * option (usage error, 2); the first other argument goes into *path (returns -1: the
 * loop goes on), a second one is unexpected (usage error, 2). cmd names the command. */
int cli_other_arg(const char *cmd, const char *help, const char *arg, const char **path);
/* A subcommand's whole option loop for the simple cases: each argument is one of
 * opts (a "--name VALUE" / "--name=VALUE" string option when str is set, missing a
 * value: usage error "<name> needs <needs>"; a bare "--name" switch when flag is set),
 * else goes to cli_other_arg (help, unknown options, the one positional argument into
 * *path; when none came: usage error "missing <what_path>"). Returns -1 when all
 * parsed, else the exit status to return. */
typedef struct cli_optdef {
    const char *name;
    const char *needs;
    const char **str;
    bool *flag;
} cli_optdef;
int cli_parse_opts(int argc, char **argv, const char *cmd, const char *help, const cli_optdef *opts, int nopts,
                   const char **path, const char *what_path);
/* Element i of a numeric tensor (float, double, int32, int64, uint8, bool, half) as a
 * double; `other` for the other dtypes. */
double cli_tensor_elem(const vg_tensor *t, int64_t i, double other);
/* Strict number parsing: the whole string must be a number (in range). */
bool cli_parse_i64(const char *s, int64_t *out);
bool cli_parse_double(const char *s, double *out);
/* Splits a comma-separated list into a new array of new strings (free with
 * cli_free_list). */
char **cli_split_list(const char *s, int *n);
void cli_free_list(char **v, int n);
bool cli_list_has(char *const *v, int n, const char *s, size_t len);

/* ---- event files (events.c) ---------------------------------------------------- */
/* Callback for each scalar (tag borrowed for the call) and for each SessionLog START
 * (tag == NULL, value unused; TensorBoard purges the steps >= step of earlier runs). */
typedef void (*cli_scalar_fn)(void *payload, const char *file, int64_t step, double wall_time, const char *tag,
                              size_t tag_len, double value);

/* Event files of path: the file itself, or the files of a directory whose name holds
 * "tfevents", sorted by name. *files: new array of new strings (cli_free_list). Fails
 * (returns 1 after printing a message) when path does not exist or a directory has no
 * event file. */
int cli_event_files(const char *path, char ***files, int *n);
/* Reads every scalar of one event file. Corrupt records are reported on stderr (file,
 * offset) and skipped; a torn end is reported and ends the file. Returns 0 when the
 * file could be opened (even if damaged), 1 otherwise (reported). *damaged counts the
 * problems reported. */
int cli_read_scalars(const char *file, cli_scalar_fn fn, void *payload, int *damaged);

#endif
