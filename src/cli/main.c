/*
 * main.c - the rltune command's entry point: finds the sub-command (the
 * `commands` table below, and help),
 * answers --help and --version, parses the command's options with the
 * shared parser (args.c) and runs it.
 *
 * Nothing here installs signal handlers or starts threads: the runner puts
 * its children in their own process groups and has them die with the parent,
 * and handlers or an OpenMP pool in this process would get in its way. The
 * one exception is `--executor mpi`, joined before anything else: MPI's
 * library starts threads of its own (docs/distributed.md).
 */
#include "cli/cli.h"
#include "cli/executor.h"

#include <stdio.h>
#include <string.h>

static const rlt_cli_cmd *const commands[] = {
    &rlt_cli_cmd_ops,
    &rlt_cli_cmd_show,
    &rlt_cli_cmd_measure,
    &rlt_cli_cmd_tune,
    &rlt_cli_cmd_tuners,
    &rlt_cli_cmd_dataset,
    &rlt_cli_cmd_experiment,
    &rlt_cli_cmd_best,
    &rlt_cli_cmd_history,
    &rlt_cli_cmd_records,
    &rlt_cli_cmd_export,
    &rlt_cli_cmd_tasks,
    &rlt_cli_cmd_run,
    &rlt_cli_cmd_rules,
    &rlt_cli_cmd_graph_opt,
    &rlt_cli_cmd_graph_train,
    &rlt_cli_cmd_env,
    &rlt_cli_cmd_gen_dataset,
    &rlt_cli_cmd_train,
    &rlt_cli_cmd_gen_demos,
    &rlt_cli_cmd_imitate,
    &rlt_cli_cmd_optimize,
};

static const char exit_status_text[] =
    "exit status:\n"
    "  0  success\n"
    "  1  measured, but the kernel failed: BUILD_ERROR, BUILD_TIMEOUT, RUN_ERROR, RUN_TIMEOUT\n"
    "     or WRONG_ANSWER (the result is still printed, JSON included)\n"
    "  2  bad input or usage: unknown command, option, op or key, a bad size or number,\n"
    "     an illegal schedule step, an unreadable schedule file (one 'rltune: error:' line\n"
    "     on stderr, nothing on stdout)\n"
    "  3  environment or internal error: the cache directory cannot be created, the\n"
    "     compiler is missing, out of memory, a bug in rltune\n";

static const rlt_cli_cmd *find_command(const char *name)
{
    for (size_t i = 0; i < RLT_CLI_ARRAY_LEN(commands); i++)
        if (strcmp(commands[i]->name, name) == 0) return commands[i];
    return NULL;
}

static void print_main_help(FILE *f)
{
    fprintf(f,
            "rltune %s - autotuner and kernel compiler for tensor programs\n\n"
            "usage: rltune COMMAND [options]\n"
            "       rltune help COMMAND     (or rltune COMMAND --help)\n"
            "       rltune --version\n\n"
            "commands:\n",
            RLTUNE_VERSION);
    for (size_t i = 0; i < RLT_CLI_ARRAY_LEN(commands); i++)
        fprintf(f, "  %-12s %s\n", commands[i]->name, commands[i]->brief);
    fprintf(f, "  %-12s %s\n\n", "help", "print the usage of a command");
    fprintf(f, "%s\n", exit_status_text);
    fprintf(f, "environment:\n"
               "  RLTUNE_CACHE_DIR  where compiled kernels are kept (default $XDG_CACHE_HOME/rltune\n"
               "                    or ~/.cache/rltune)\n"
               "  RLTUNE_CC         compiler when --cc is not given (default gcc)\n"
               "  RLTUNE_LOG        library messages on stderr: error, warn (default), info, debug\n\n"
               "examples:\n"
               "  rltune ops\n"
               "  rltune show --op matmul:M=512,N=512,K=512 --schedule examples/schedules/matmul_tiled.sched\n"
               "  rltune measure --op matmul:M=512,N=512,K=512 --schedule "
               "examples/schedules/matmul_tiled.sched --json\n\n"
               "More in docs/cli.md.\n");
}

static void print_command_help(const rlt_cli_cmd *cmd)
{
    rlt_cli_usage_print(stdout, cmd->name, cmd->synopsis, cmd->summary, cmd->n_opts, cmd->opts);
    if (cmd->details) printf("\n%s\n", cmd->details);
}

static void list_commands(char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < RLT_CLI_ARRAY_LEN(commands) && used + 1 < cap; i++) {
        int w = snprintf(buf + used, cap - used, "%s, ", commands[i]->name);
        if (w < 0) break;
        used += (size_t)w;
    }
    if (used + 1 < cap) snprintf(buf + used, cap - used, "help");
}

/* `rltune help [COMMAND]`. */
static int run_help(int argc, char **argv)
{
    char names[256];
    if (argc == 0) {
        print_main_help(stdout);
        return RLT_CLI_EXIT_OK;
    }
    if (argc > 1) {
        rlt_cli_error("'rltune help' takes one command name, got %d words; e.g. rltune help measure", argc);
        return RLT_CLI_EXIT_USAGE;
    }
    if (strcmp(argv[0], "help") == 0) {
        print_main_help(stdout);
        return RLT_CLI_EXIT_OK;
    }
    const rlt_cli_cmd *cmd = find_command(argv[0]);
    if (!cmd) {
        list_commands(names, sizeof names);
        rlt_cli_error("unknown command '%.100s'; commands: %s", argv[0], names);
        return RLT_CLI_EXIT_USAGE;
    }
    print_command_help(cmd);
    return RLT_CLI_EXIT_OK;
}

static bool is_help_word(const char *w) { return strcmp(w, "--help") == 0 || strcmp(w, "-h") == 0; }

static int run_command(int argc, char **argv);

int main(int argc, char **argv)
{
    /* Under --executor mpi every rank joins the job here; only rank 0 goes
     * on to run the command (cli/executor.h). */
    int rc;
    if (rlt_cli_executor_join(argc, argv, &rc)) return rc;
    rc = run_command(argc, argv);
    rlt_cli_executor_leave();
    return rc;
}

static int run_command(int argc, char **argv)
{
    char names[256];
    list_commands(names, sizeof names);
    if (argc < 2) {
        rlt_cli_error("no command given; commands: %s (see 'rltune --help')", names);
        return RLT_CLI_EXIT_USAGE;
    }
    const char *word = argv[1];
    if (is_help_word(word) || strcmp(word, "--version") == 0) {
        if (argc > 2) {
            rlt_cli_error("%s takes no arguments, got '%.100s'", word, argv[2]);
            return RLT_CLI_EXIT_USAGE;
        }
        if (is_help_word(word))
            print_main_help(stdout);
        else
            printf("rltune %s\n", RLTUNE_VERSION);
        return RLT_CLI_EXIT_OK;
    }
    if (strcmp(word, "help") == 0) return run_help(argc - 2, argv + 2);
    if (word[0] == '-') {
        rlt_cli_error("unknown option '%.100s' before the command; valid there: --help, --version; "
                      "commands: %s",
                      word, names);
        return RLT_CLI_EXIT_USAGE;
    }
    const rlt_cli_cmd *cmd = find_command(word);
    if (!cmd) {
        rlt_cli_error("unknown command '%.100s'; commands: %s (see 'rltune --help')", word, names);
        return RLT_CLI_EXIT_USAGE;
    }
    if (cmd->run_words) return cmd->run_words(argc - 2, argv + 2);
    /* --help anywhere wins over mistakes elsewhere on the line: someone
     * asking for help is usually fixing one. */
    for (int a = 2; a < argc; a++) {
        if (is_help_word(argv[a])) {
            print_command_help(cmd);
            return RLT_CLI_EXIT_OK;
        }
    }
    rlt_cli_args args;
    rlt_diag d = {0};
    if (rlt_cli_args_parse(cmd->name, cmd->n_opts, cmd->opts, argc - 2, argv + 2, &args, &d) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        return RLT_CLI_EXIT_USAGE;
    }
    return cmd->run(&args);
}
