/*
 * cmd_env.c - `rltune env`: the LoopTune environment (rlt_env, src/env) as an
 * interactive session. Prints the loop tree with the cursor, the GFLOP/s and
 * the legal actions; reads one action name a line from stdin (a terminal or
 * a pipe); an unknown or illegal action gets a message and the prompt again.
 * `stop`, the step limit or the end of input prints the final schedule.
 * With --measure replay:FILE the states come from a state dataset
 * (`rltune gen-dataset --kind states`) and nothing is measured.
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* RLT_CLI_OP_OPTS, but --schedule starts the episode and cannot be stdin. */
static const rlt_cli_opt env_opts[] = {
    {"op", "SPEC", "built-in op, e.g. matmul:M=512,N=512,K=512 (see 'rltune ops')"},
    {"expr", "EXPR", "a user expression instead, e.g. 'C[i,j] += A[i,k] * B[k,j]' (needs --shape)"},
    {"shape", "SHAPE", "extents of the expression's indices, e.g. i=64,j=64,k=64"},
    {"schedule", "FILE", "start from this schedule's nest (splits, reorders, annotations); default: the op's"},
    RLT_CLI_ENV_MEASURE_OPTS,
    {"measure", "MODE", "live (default: build, run and time each new state) or replay:FILE (answer from a state "
                        "dataset, 'rltune gen-dataset --kind states')"},
    {"max-steps", "N", "end the episode after N steps, 1..100000 (default: only stop or end of input end it)"},
    {"save", "FILE", "also write the final schedule to FILE"},
};

static void print_legal(const rlt_env *env)
{
    bool mask[RLT_ENV_N_ACTIONS];
    rlt_env_action_mask(env, mask);
    printf("legal:   ");
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++)
        if (mask[a]) printf(" %s", rlt_env_action_name(a));
    printf("\n");
}

static void print_gflops(const rlt_env *env)
{
    const char *message = NULL;
    rlt_status st = rlt_env_eval_status(env, &message);
    printf("GFLOP/s:  %.2f (%.3f of peak), %s", rlt_env_gflops(env), rlt_env_gflops(env) / rlt_env_peak_gflops(env),
           rlt_status_str(st));
    if (st != RLT_STATUS_OK && message && message[0]) printf(": %s", message);
    printf("\n");
}

/* The tree, the GFLOP/s and the legal actions. False when out of memory. */
static bool print_state(const rlt_env *env)
{
    char *tree = rlt_env_tree(env);
    if (!tree) return false;
    printf("\nloop tree (> marks the cursor):\n%s", tree);
    rlt_free(tree);
    const char *acc = rlt_env_accumulator(env);
    if (acc)
        printf("accumulate: in a local tile inside %s (cache_write %s)\n", acc, acc);
    else
        printf("accumulate: in place (no loop holds a register tile with a reduction inside)\n");
    char *kernel = rlt_env_schedule(env); /* its pack lines: docs/env.md, "Packing" */
    if (!kernel) return false;
    for (const char *line = kernel; (line = strstr(line, "\npack ")) != NULL; line++) {
        int len = (int)strcspn(line + 1, "\n");
        printf("pack:     %.*s (the tile reads it in contiguous panels)\n", len, line + 1);
    }
    rlt_free(kernel);
    print_gflops(env);
    print_legal(env);
    return true;
}

static void print_actions_help(const rlt_env *env)
{
    bool mask[RLT_ENV_N_ACTIONS];
    rlt_env_action_mask(env, mask);
    printf("actions (* legal now):");
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) printf(" %s%s", rlt_env_action_name(a), mask[a] ? "*" : "");
    printf("\nalso: help, and end of input (Ctrl-D) to finish like stop; docs/env.md has the rules\n");
}

/* Reads and range-checks the options into o. */
static rlt_status read_opts(const rlt_cli_args *args, rlt_env_opts *o, rlt_diag *diag)
{
    int64_t max_steps = 0;
    rlt_status st = rlt_cli_env_opts_get(args, 3, 10.0, o, diag);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "max-steps", 0, 1, 100000, &max_steps, diag);
    const char *sched = rlt_cli_args_get(args, "schedule");
    if (st == RLT_STATUS_OK && sched && strcmp(sched, "-") == 0)
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "--schedule - would read stdin, which holds the actions: give the schedule as a file");
    o->max_steps = (int)max_steps;
    const char *mode = rlt_cli_args_get(args, "measure");
    if (st != RLT_STATUS_OK || !mode || strcmp(mode, "live") == 0) return st;
    if (strncmp(mode, "replay:", 7) != 0 || mode[7] == '\0')
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "--measure: unknown mode '%.200s': expected live or replay:FILE (a state dataset made by "
                        "'rltune gen-dataset --kind states')",
                        mode);
    /* nothing is built or run in a replay: options about it would be ignored */
    static const char *const live_only[] = {"cc", "cflags", "repeat", "min-repeat-ms", "timeout", "seed"};
    for (size_t i = 0; i < RLT_CLI_ARRAY_LEN(live_only); i++)
        if (rlt_cli_args_has(args, live_only[i]))
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "--%s cannot be combined with --measure replay: a replay builds and runs nothing",
                            live_only[i]);
    o->replay_path = mode + 7;
    /* the dataset is the user's file: one that cannot be read is bad input */
    FILE *f = fopen(o->replay_path, "r");
    if (!f)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "--measure: cannot read the replay dataset %.200s: %s",
                        o->replay_path, strerror(errno));
    fclose(f);
    if (!rlt_cli_args_has(args, "threads")) o->n_threads = 0; /* the dataset's */
    return st;
}

/* The word on a line: leading and trailing blanks dropped; "" for a blank
 * line or a comment ('#'). */
static char *line_word(char *line)
{
    char *p = line + strspn(line, " \t\r\n");
    if (*p == '#') return p + strlen(p);
    size_t n = strlen(p);
    while (n > 0 && strchr(" \t\r\n", p[n - 1])) n--;
    p[n] = '\0';
    return p;
}

static int finish(const rlt_env *env, const char *save_path)
{
    char *text = rlt_env_schedule(env);
    if (!text) {
        rlt_cli_error("out of memory printing the schedule");
        return RLT_CLI_EXIT_INTERNAL;
    }
    printf("\nfinal schedule (%.2f GFLOP/s, %s, %d step%s):\n%s", rlt_env_gflops(env),
           rlt_status_str(rlt_env_eval_status(env, NULL)), rlt_env_n_steps(env),
           rlt_env_n_steps(env) == 1 ? "" : "s", text);
    int rc = RLT_CLI_EXIT_OK;
    if (save_path) {
        rlt_diag d = {0};
        if (rlt_cli_file_write(save_path, text, strlen(text), &d) != RLT_STATUS_OK) {
            fflush(stdout);
            rlt_cli_error("cannot save the schedule: %s", d.message);
            rc = RLT_CLI_EXIT_INTERNAL;
        } else {
            printf("saved to %s\n", save_path);
        }
    }
    rlt_free(text);
    return rc;
}

static int run_env(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_OK;
    rlt_diag d = {0};
    rlt_op *op = NULL;
    rlt_env *env = NULL;
    char *line = NULL;
    size_t line_cap = 0;
    rlt_env_opts opts;

    rlt_status st = read_opts(args, &opts, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_op_load(args, &op, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if ((rc = rlt_cli_env_start(args, op, &opts, &env)) != RLT_CLI_EXIT_OK) goto cleanup;

    bool is_tty = isatty(STDIN_FILENO) != 0, is_stopped = false;
    printf("op:       %s\n", rlt_op_spec(op));
    printf("peak:     %.2f GFLOP/s (one core, FP32 FMA%s)\n", rlt_env_peak_gflops(env),
           opts.peak_gflops > 0 ? ", given by --peak" : opts.replay_path ? ", the dataset's" : ", measured");
    if (opts.replay_path) printf("measure:  replay of %s (actions to states it lacks are masked)\n", opts.replay_path);
    printf("actions:  one a line; 'help' lists them; 'stop' or the end of input finishes\n");
    if (!print_state(env)) goto out_of_memory;

    while (!rlt_env_is_done(env)) {
        if (is_tty) printf("action> ");
        fflush(stdout);
        if (getline(&line, &line_cap, stdin) < 0) break;
        char *word = line_word(line);
        if (!word[0]) continue;
        if (!is_tty) printf("\n> %s\n", word);
        if (strcmp(word, "help") == 0 || strcmp(word, "?") == 0) {
            print_actions_help(env);
            continue;
        }
        int action = rlt_env_action_from_name(word);
        if (action < 0) {
            fflush(stdout);
            fprintf(stderr, "rltune: unknown action '%.64s'; actions: ", word);
            for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) fprintf(stderr, "%s%s", a ? ", " : "", rlt_env_action_name(a));
            fprintf(stderr, " (or help)\n");
            continue;
        }
        double before = rlt_env_gflops(env), reward = 0;
        d = (rlt_diag){0};
        fflush(stdout); /* the runner forks: nothing buffered may be written twice */
        st = rlt_env_step(env, action, &reward, NULL, &d);
        if (st == RLT_STATUS_ILLEGAL_SCHEDULE) {
            fprintf(stderr, "rltune: %s is not legal here: %s\n", word, d.message);
            continue;
        }
        if (st != RLT_STATUS_OK) {
            rlt_cli_error("%s: %s", word, d.message);
            rc = rlt_cli_exit_for(st) == RLT_CLI_EXIT_USAGE ? RLT_CLI_EXIT_INTERNAL : rlt_cli_exit_for(st);
            goto cleanup;
        }
        if (action == RLT_ENV_ACTION_STOP) {
            is_stopped = true;
            break;
        }
        printf("reward:   %+.4f (%.2f -> %.2f GFLOP/s)\n", reward, before, rlt_env_gflops(env));
        if (!print_state(env)) goto out_of_memory;
    }
    if (!rlt_env_is_done(env))
        printf("\n(end of input)\n");
    else if (!is_stopped)
        printf("\n(step limit reached: --max-steps %d)\n", opts.max_steps);
    rc = finish(env, rlt_cli_args_get(args, "save"));
    goto cleanup;

out_of_memory:
    rlt_cli_error("out of memory printing the state");
    rc = RLT_CLI_EXIT_INTERNAL;
cleanup:
    fflush(stdout);
    free(line); /* from getline: libc's allocator */
    rlt_env_destroy(env);
    rlt_op_destroy(op);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_env = {
    .name = "env",
    .brief = "step through the LoopTune environment of an op, one action a line",
    .synopsis = "(--op SPEC | --expr EXPR --shape SHAPE) [--schedule FILE] [options] < actions",
    .summary = "The reinforcement-learning environment over the op's loop nest, by hand: prints the loop\n"
               "tree with the cursor (>), the GFLOP/s of the state (each new state is built, run and\n"
               "checked against the reference) and the legal actions, then reads action names one a\n"
               "line from stdin (a terminal or a pipe): up, down, swap_up, swap_down, split_2 ...\n"
               "split_256, merge, unroll, vectorize, parallel, stop. An unknown or illegal action is\n"
               "refused with a message and the session goes on. stop, --max-steps or the end of input\n"
               "prints the final schedule, which `rltune measure --schedule` takes. With --measure\n"
               "replay:FILE the GFLOP/s come from a state dataset ('rltune gen-dataset --kind states'):\n"
               "nothing is built or run, and actions to states the dataset lacks are not legal.",
    .details = "Example:\n"
               "  printf 'down\\nsplit_8\\ndown\\nswap_down\\nvectorize\\nstop\\n' | \\\n"
               "    rltune env --op matmul:M=64,N=64,K=64\n"
               "Exit status: 0 when the session ends (stop or end of input); 2 bad input (the op, an\n"
               "option, a --schedule the env cannot express); 3 environment or internal error (no\n"
               "compiler, the reference cannot be built). Rules of the actions: docs/env.md.",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(env_opts),
    .opts = env_opts,
    .run = run_env,
};
