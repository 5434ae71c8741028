/*
 * args.h - the small, strict option parser every rltune command shares.
 *
 * A command declares its options in a table (rlt_cli_opt). The parser takes
 * `--name value` and `--name=value` for options with a value and `--name`
 * for flags, and refuses, with a message naming the option: an unknown
 * option (listing the valid ones), a missing value, a value given to a flag,
 * an option given twice, and any argument that is not an option. `--help`
 * and `-h` are accepted by every command.
 *
 * The typed getters (rlt_cli_args_int, ...) check a value's syntax and range
 * and name the option in their message, so no command converts text itself.
 */
#ifndef RLT_CLI_ARGS_H
#define RLT_CLI_ARGS_H

#include "rltune.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The command is a program on rltune's public API (include/rltune.h) and
 * these few helpers of its own. */
#define RLT_CLI_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define RLT_CLI_MAX(a, b) ((a) > (b) ? (a) : (b))
/* Checked in every build: a broken assumption is a bug, reported and ended. */
#define RLT_CLI_ASSERT(cond)                                                                    \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fprintf(stderr, "rltune: internal error: %s:%d: %s is false\n", __FILE__, __LINE__, #cond); \
            abort();                                                                            \
        }                                                                                       \
    } while (0)

#define RLT_CLI_MAX_OPTS 40 /* options of one command */

/* One option of a command. */
typedef struct rlt_cli_opt {
    const char *name;    /* without the leading "--" */
    const char *metavar; /* what the value is, for usage text ("N", "FILE");
                            NULL: a flag, which takes no value */
    const char *help;    /* one line */
} rlt_cli_opt;

/* What a command line gave: values point into argv (borrowed), flags get
 * "" and options not given NULL. */
typedef struct rlt_cli_args {
    const char *command; /* "measure", for messages */
    int n_opts;
    const rlt_cli_opt *opts; /* borrowed: the command's table */
    const char *values[RLT_CLI_MAX_OPTS];
    bool is_help;        /* --help or -h was given */
} rlt_cli_args;

/* Parses argv[0 .. argc-1] (the words after the command's name) against the
 * table. Errors (INVALID_ARGUMENT) name the offending word and what would be
 * accepted. `out` is filled even on error, as far as it got. */
rlt_status rlt_cli_args_parse(const char *command, int n_opts, const rlt_cli_opt *opts, int argc, char **argv,
                              rlt_cli_args *out, rlt_diag *diag);

/* The value of option `name` (which must be in the table), or NULL when it
 * was not given. */
const char *rlt_cli_args_get(const rlt_cli_args *args, const char *name);
bool rlt_cli_args_has(const rlt_cli_args *args, const char *name);

/* Typed values: `def` when the option was not given; otherwise the value must
 * be a whole number (for _int) or a finite decimal number (for _double) in
 * [min, max]. For _double, `is_min_exclusive` makes the bound strict (> min).
 * Errors (INVALID_ARGUMENT) name the option, the value and the range. */
rlt_status rlt_cli_args_int(const rlt_cli_args *args, const char *name, int64_t def, int64_t min, int64_t max,
                            int64_t *out, rlt_diag *diag);
rlt_status rlt_cli_args_double(const rlt_cli_args *args, const char *name, double def, double min,
                               bool is_min_exclusive, double max, double *out, rlt_diag *diag);

/* A list of whole numbers separated by commas ("256,128"): 1 to max_n
 * values in [min, max] into out[], their count into *out_n; 0 values when
 * the option was not given. Errors (INVALID_ARGUMENT): "--NAME: 'TEXT' is
 * not 1 to MAX_N WHAT of MIN..MAX, e.g. EXAMPLE". */
rlt_status rlt_cli_args_int_list(const rlt_cli_args *args, const char *name, int max_n, int min, int max,
                                 const char *what, const char *example, int *out, int *out_n, rlt_diag *diag);

/* Writes "usage: rltune COMMAND SYNOPSIS", the summary, and one line per
 * option (its name, metavar and help) to `f`. */
void rlt_cli_usage_print(FILE *f, const char *command, const char *synopsis, const char *summary, int n_opts,
                         const rlt_cli_opt *opts);

#endif /* RLT_CLI_ARGS_H */
