/*
 * cli.h - the rltune command: its sub-commands, exit codes, and the input
 * handling that `show` and `measure` share (the op from --op or --expr /
 * --shape, the schedule from --schedule, and the scheduled nest).
 *
 * The command only parses arguments and prints; everything it computes comes
 * from the library, through the public API (include/rltune.h) alone, as any
 * program using librltune would (CMakeLists.txt builds it that way). Output contract: results on stdout, diagnostics on
 * stderr, and on a usage error exactly one line "rltune: error: ..." on
 * stderr and nothing on stdout.
 */
#ifndef RLT_CLI_H
#define RLT_CLI_H

#include "cli/args.h"

#include <signal.h>
#include <stdio.h>

/* A macro's value as a string literal, for help texts: RLT_CLI_STR(RLT_SHAPES_MAX). */
#define RLT_CLI_STR2(x) #x
#define RLT_CLI_STR(x) RLT_CLI_STR2(x)

/* Exit codes, documented in docs/cli.md and `rltune --help`. */
enum {
    RLT_CLI_EXIT_OK = 0,
    RLT_CLI_EXIT_KERNEL_FAILED = 1, /* measured, but the kernel failed (result still printed) */
    RLT_CLI_EXIT_USAGE = 2,         /* bad input: command, option, op, schedule */
    RLT_CLI_EXIT_INTERNAL = 3       /* environment or internal error: cache dir, compiler missing */
};

/* A sub-command. `run` gets the parsed options (never with --help: main
 * prints the usage then) and returns an exit code. */
typedef struct rlt_cli_cmd {
    const char *name;
    const char *brief;    /* one line for the command list */
    const char *synopsis; /* the usage line after "rltune NAME" */
    const char *summary;  /* one paragraph */
    const char *details;  /* printed after the options by --help; may be NULL */
    int n_opts;
    const rlt_cli_opt *opts;
    int (*run)(const rlt_cli_args *args);
    /* Commands with sub-commands (`records`) set this instead of `run`: it
     * gets the words after the command's name unparsed, answers --help
     * itself, and parses each sub-command's options with the shared parser. */
    int (*run_words)(int argc, char **argv);
} rlt_cli_cmd;

extern const rlt_cli_cmd rlt_cli_cmd_ops;
extern const rlt_cli_cmd rlt_cli_cmd_show;
extern const rlt_cli_cmd rlt_cli_cmd_measure;
extern const rlt_cli_cmd rlt_cli_cmd_tune;
extern const rlt_cli_cmd rlt_cli_cmd_tuners;
extern const rlt_cli_cmd rlt_cli_cmd_best;
extern const rlt_cli_cmd rlt_cli_cmd_history;
extern const rlt_cli_cmd rlt_cli_cmd_records;
extern const rlt_cli_cmd rlt_cli_cmd_export;
extern const rlt_cli_cmd rlt_cli_cmd_dataset;
extern const rlt_cli_cmd rlt_cli_cmd_env;
extern const rlt_cli_cmd rlt_cli_cmd_experiment;
extern const rlt_cli_cmd rlt_cli_cmd_gen_dataset;
extern const rlt_cli_cmd rlt_cli_cmd_train;
extern const rlt_cli_cmd rlt_cli_cmd_gen_demos;
extern const rlt_cli_cmd rlt_cli_cmd_imitate;
extern const rlt_cli_cmd rlt_cli_cmd_optimize;
extern const rlt_cli_cmd rlt_cli_cmd_tasks;
extern const rlt_cli_cmd rlt_cli_cmd_run;
extern const rlt_cli_cmd rlt_cli_cmd_rules;
extern const rlt_cli_cmd rlt_cli_cmd_graph_opt;
extern const rlt_cli_cmd rlt_cli_cmd_graph_train;

/* Loads --model's file (rlt_model_load); prints the error and returns the
 * exit code (2 for a bad file, 3 when out of memory) when it cannot. */
int rlt_cli_model_load(const char *path, rlt_model **out);

/* Whether a model's kernels are timed and chosen cold (run, tune and
 * export --model): cold unless --warm. Says which on stdout ("weights:
 * ..."), unless is_quiet. */
bool rlt_cli_model_cold(const rlt_cli_args *args, const rlt_model *m, bool is_quiet);

/* --layout of run, export, tasks and tune --model: *out_block is the
 * channel block of nchwc (rlt_model_channel_block: the vector width), 0
 * for nchw, or with is_auto_allowed (run, export) RLT_NET_BLOCK_AUTO for
 * auto, their default (tune's and tasks' is nchw). Returns the exit code
 * (the error printed for another value). */
#define RLT_CLI_LAYOUT_HELP                                                                                        \
    "activations' layout: nchwc (channels in blocks of the vector width, where every node can take them) or nchw " \
    "(the default)"
#define RLT_CLI_LAYOUT_AUTO_HELP                                                                                    \
    "activations' layout: auto (the default: nchwc when its tasks are all tuned and their records estimate a "      \
    "faster network than nchw's, else nchw), nchwc (channels in blocks of the vector width, where every node can " \
    "take them) or nchw"
int rlt_cli_model_layout(const rlt_cli_args *args, bool is_auto_allowed, int *out_block);

/* `rltune tune --model`: the network's tasks tuned from one budget of
 * n_trials (cmd_tune_model.c), every session with options `o` (cmd_tune.c
 * filled them from the shared options). Returns the exit code. */
int rlt_cli_tune_model(const rlt_cli_args *args, const rlt_session_options *o, int64_t n_trials);

/* `--graph-opt SEARCH` of run and tune --model: replaces *model_io by its
 * graph after the search (the shipped rules, verified, and for rl the
 * shipped policy; costs from db_path's records at n_threads, cold ones
 * when is_cold, as rlt_cli_model_cold says), printing one line on stdout
 * unless is_quiet. Returns the exit code (the error printed).
 * (cmd_graph_opt.c) */
int rlt_cli_graph_opt_apply(const char *search, const char *path, const char *db_path, int n_threads, bool is_cold,
                            bool is_quiet, rlt_model **model_io);

/* Reads a whole text file, or stdin for "-" ("<stdin>" in messages): at most
 * 64 MiB and no NUL byte (PARSE_ERROR), so that parsers see all of it.
 * *out_text is owned by the caller (free). */
rlt_status rlt_cli_text_read(const char *path, char **out_text, rlt_diag *diag);

/* Writes a file whole or not at all: to "PATH.tmp.PID", then renamed. */
rlt_status rlt_cli_file_write(const char *path, const char *data, size_t len, rlt_diag *diag);

/* Adds a number to a JSON object exactly (rlt_format_double; null for inf
 * and nan), as the library writes its JSON, so that a figure one command
 * prints equals the one another prints. The item, or NULL when out of
 * memory. */
struct cJSON;
struct cJSON *rlt_cli_json_add_number(struct cJSON *object, const char *name, double v);

/* Prints "rltune: error: MESSAGE" and a newline to stderr. */
void rlt_cli_error(const char *fmt, ...) RLT_API_PRINTF(1, 2);

/* The exit code for a library failure: bad input (invalid argument, parse
 * error, illegal schedule) gives RLT_CLI_EXIT_USAGE, everything else
 * (I/O, memory, a bug) RLT_CLI_EXIT_INTERNAL. */
int rlt_cli_exit_for(rlt_status status);

/* ---- what show and measure work on -------------------------------------- */

/* The options every command that takes an op declares, in this order, at the
 * start of its table. */
#define RLT_CLI_OP_OPTS                                                                              \
    {"op", "SPEC", "built-in op, e.g. matmul:M=512,N=512,K=512 (see 'rltune ops')"},                  \
    {"expr", "EXPR", "a user expression instead, e.g. 'C[i,j] += A[i,k] * B[k,j]' (needs --shape)"},  \
    {"shape", "SHAPE", "extents of the expression's indices, e.g. i=64,j=64,k=64"},                    \
    {"schedule", "FILE", "schedule file to apply ('-' reads stdin); default: the unscheduled nest"}

/* The measurement options of the env commands (env, optimize, train), in
 * their option tables; read by rlt_cli_env_opts_get. */
#define RLT_CLI_ENV_MEASURE_OPTS                                                                     \
    {"threads", "N", "run-time threads of a parallel loop, 1..256 (default 1)"},                     \
    {"seed", "S", "seed of the input data, a whole number >= 0 (default 0)"},                         \
    {"cc", "CMD", "compiler command (default $RLTUNE_CC, else gcc)"},                                 \
    {"cflags", "FLAGS", "compiler flags, one argument (default \"" RLT_DEFAULT_CFLAGS "\")"},         \
    {"repeat", "N", "timed samples per new state, at least 1 (default 3; train: 2)"},                \
    {"min-repeat-ms", "X", "shortest timed sample in milliseconds, above 0 (default 10; train: 5)"}, \
    {"timeout", "S", "time limit in seconds for one kernel's run, above 0 (default 10)"},            \
    {"peak", "GFLOPS", "one core's peak to normalise rewards by (default: measured once, cached)"}

/* Reads RLT_CLI_ENV_MEASURE_OPTS into *out (other fields zero), with
 * `repeat_def` and `min_repeat_ms_def` when not given. Errors
 * (INVALID_ARGUMENT) name the option. */
rlt_status rlt_cli_env_opts_get(const rlt_cli_args *args, int repeat_def, double min_repeat_ms_def,
                                rlt_env_opts *out, rlt_diag *diag);

/* The env of `op` with `opts`, reset at the nest of --schedule FILE when it
 * is given, else at the op's default nest (env and optimize). On success
 * *out is owned by the caller; otherwise prints the error and returns the
 * exit code (an unreadable schedule is bad input). */
int rlt_cli_env_start(const rlt_cli_args *args, const rlt_op *op, const rlt_env_opts *opts, rlt_env **out);

typedef struct rlt_cli_input {
    rlt_op *op;              /* owned */
    rlt_sched *sched;        /* owned; NULL: the default schedule */
    const char *sched_source; /* the --schedule argument (borrowed), or NULL */
    rlt_nest *nest;          /* owned: the op's nest with the schedule applied */
} rlt_cli_input;

/* Builds the op from --op or --expr / --shape (options every command that
 * takes an op declares); messages name the option. */
rlt_status rlt_cli_op_load(const rlt_cli_args *args, rlt_op **out, rlt_diag *diag);

/* Builds the op, loads and applies the schedule. Every failure is bad input
 * (a missing file included) except running out of memory; the message names
 * the option, the file and line, and what was wrong. */
rlt_status rlt_cli_input_load(const rlt_cli_args *args, rlt_cli_input *out, rlt_diag *diag);
void rlt_cli_input_free(rlt_cli_input *in); /* frees what load made; the struct stays */

/* ---- what best, history and export read (cmd_records.c) ----------------- */

/* The options that choose a records database and a target, as `tune` takes
 * them; commands that read records declare them. */
#define RLT_CLI_TARGET_OPTS                                                                            \
    {"db", "FILE", "records database (default rltune.db in the working directory)"},                   \
    {"threads", "N", "the --threads of the tune run (default 1): part of the target key"},              \
    {"cc", "CMD", "the --cc of the tune run (default $RLTUNE_CC, else gcc): part of the target key"},   \
    {"cflags", "FLAGS", "the --cflags of the tune run (default \"" RLT_DEFAULT_CFLAGS "\")"},            \
    {"cold", NULL, "the records of a --cold tune run (timed with the weights evicted: weights=cold); "     \
                   "--model: the default when its weights exceed the last-level cache"},                    \
    {"all-targets", NULL, "search the records of every target, not only this machine's"}

/* Opens --db (default "rltune.db") read-only; *out_path is the path used.
 * Prints the error and returns the exit code when it cannot be opened (a
 * missing or foreign file is bad input: 2), else RLT_CLI_EXIT_OK. */
int rlt_cli_db_open_read(const rlt_cli_args *args, rlt_db **out, const char **out_path);

/* The target key the tune run with the same --threads / --cc / --cflags
 * used (rlt_session_target_key), in *out_target (free it); NULL when
 * --all-targets was given. Prints the error and returns the exit code on
 * bad input, else RLT_CLI_EXIT_OK. */
int rlt_cli_target_get(const rlt_cli_args *args, char **out_target);

/* The fastest OK record of `op` on the target of RLT_CLI_TARGET_OPTS.
 * Returns RLT_CLI_EXIT_OK with *out filled, or prints why not and returns
 * 1 (no such record: the message says how to make one), 2 or 3. */
int rlt_cli_best_find(const rlt_cli_args *args, const rlt_op *op, rlt_record *out, const char **out_db_path);

/* The best record (rlt_cli_best_find) as an input: in->op must be loaded;
 * the record's schedule is parsed into in->sched (owned by `in`) and applied
 * to in->nest, in->sched_source stays NULL. *out_cc is the compiler its
 * configuration chose ("clang"), or NULL for the base compiler (--cc).
 * Prints why not and returns the exit code, like rlt_cli_best_find. */
int rlt_cli_best_input(const rlt_cli_args *args, rlt_cli_input *in, rlt_record *out, const char **out_db_path,
                       const char **out_cc);

/* ---- what tune and dataset share (cmd_tune.c) ---------------------------- */

/* The options about building and measuring, as `tune` takes them. */
#define RLT_CLI_MEASURE_OPTS                                                                             \
    {"batch", "N", "configurations built and measured together, 1..256 (default 16)"},                    \
    {"threads", "N", "threads for parallel loops, 1..256 (default 1); above 1 the space gets a parallel knob"}, \
    {"cc", "CMD", "base compiler (default $RLTUNE_CC, else gcc); the space may also try clang"},           \
    {"cflags", "FLAGS", "compiler flags, one argument (default \"" RLT_DEFAULT_CFLAGS "\")"},               \
    {"repeat", "N", "timed samples per candidate, at least 1 (default 3)"},                               \
    {"min-repeat-ms", "X", "shortest timed sample in milliseconds, above 0 (default 10)"},                \
    {"timeout", "S", "time limit in seconds for one candidate's run, above 0 (default 10)"},              \
    {"cold", NULL, "time each candidate cold, as a network's layer runs: its weights, workspace and output "  \
                   "evicted from the caches before every call (the default with --model); records file under "    \
                   "weights=cold"},                                                                                \
    {"executor", "NAME", "where candidates are built and run: local (default: here) or mpi (over the ranks of an " \
                         "MPI job: mpirun -np N rltune ... --executor mpi; docs/distributed.md)"}

/* Reads RLT_CLI_MEASURE_OPTS into o->batch_size, n_threads, build, run and
 * executor;
 * options not given keep o's values (rlt_session_options_init's defaults).
 * Prints the error and returns the exit code on bad input. */
int rlt_cli_measure_opts_get(const rlt_cli_args *args, rlt_session_options *o);

/* The progress line redrawn after every batch on a terminal:
 * "[what] n/N unit, best ... GFLOP/s, ... unit/s, ETA ... s". The context
 * of rlt_cli_progress_show (an rlt_tune_progress_fn). */
typedef struct rlt_cli_progress {
    bool is_tty;      /* false: print nothing */
    const char *what; /* "tune", "dataset" */
    const char *unit; /* "trials", "configs" */
} rlt_cli_progress;
void rlt_cli_progress_show(const rlt_tune_progress *p, void *ctx);

/* Ctrl-C: the first sets rlt_cli_stop_requested (the run stops after the
 * batch in flight), a second at least a quarter of a second later ends the
 * process (sooner, it is the same interrupt delivered twice, as timeout(1)
 * does). catch installs the handler for a run, release restores the
 * default. */
extern volatile sig_atomic_t rlt_cli_stop_requested;
void rlt_cli_interrupt_catch(void);
void rlt_cli_interrupt_release(void);

#endif /* RLT_CLI_H */
