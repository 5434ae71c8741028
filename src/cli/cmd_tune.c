/*
 * cmd_tune.c - `rltune tune`: searches the op's space with a tuner (a
 * session of rltune/session.h, stepped to its end), storing every
 * measurement in the records database, and prints the best configuration
 * found (or the session's JSON with --json).
 *
 * With --measure replay:FILE the measurements are answered from a dataset
 * ('rltune dataset') instead: nothing is compiled or run, no records are
 * written, and the tuners search only the dataset's configurations.
 *
 * On a terminal a progress line is redrawn after every batch; when stdout
 * is not a terminal nothing of it is printed. The first Ctrl-C asks the run
 * to stop after the batch in flight (everything measured is already stored
 * when it returns); a second one ends the process at once.
 *
 * Also what `rltune dataset` shares with it (cli.h): the measuring options
 * (rlt_cli_measure_opts_get), the progress line and the Ctrl-C handling.
 */
#include "cli/cli.h"
#include "cli/executor.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const rlt_cli_opt tune_opts[] = {
    {"op", "SPEC", "built-in op, e.g. matmul:M=512,N=512,K=512 (see 'rltune ops')"},
    {"model", "FILE", "tune a whole ONNX model instead: its tasks share --trials (see 'rltune tasks')"},
    {"no-transfer", NULL, "--model: do not warm-start xgb / xgb-rank / ppo from the model's other tasks' records"},
    {"graph-opt", "SEARCH", "--model: first rewrite the graph with rltune's substitutions (greedy, taso, rl, none)"},
    {"layout", "L", "--model: " RLT_CLI_LAYOUT_HELP},
    {"warm", NULL, "--model: time kernels warm, their weights and output in the caches from the call before "
                   "(--cold, as the network runs them, is the default with --model)"},
    {"expr", "EXPR", "a user expression instead, e.g. 'C[i,j] += A[i,k] * B[k,j]' (needs --shape)"},
    {"shape", "SHAPE", "extents of the expression's indices, e.g. i=64,j=64,k=64"},
    {"tuner", "NAME", "random, grid, ga, xgb, xgb-rank (default), the learning agents ga-dqn, dqn, bandit, ppo, "
                      "or policy (--policy)"},
    {"trials", "N", "configurations to evaluate, at least 1 (default 200)"},
    {"seed", "S", "seed of the tuner, a whole number >= 0 (default 0)"},
    {"early-stopping", "N", "stop after N trials without a better configuration (default: never)"},
    {"final", "N", "at the end, measure the N best configurations again, 3 rounds of longer samples, and pick "
                   "the best of them (default 4; 0: off; live runs only)"},
    {"start", "KEY", "start the search from this configuration of the space (a config key, as 'rltune best' "
                     "prints it) and its neighbours"},
    {"no-other-threads", NULL, "do not start by measuring the op's best configurations recorded at other "
                               "thread counts (by default up to 3 of them, in the --db, come first; with --cold, "
                               "the warm records too)"},
    {"seeds", "N", "start by measuring N configurations built by rules, not search (default 8; 0: none; "
                   "live runs only)"},
    {"measure", "MODE", "live (default: build, run and time here) or replay:FILE (answer from a dataset)"},
    {"db", "FILE", "records database (default rltune.db in the working directory; none with a replay)"},
    {"transfer", "FILE", "warm-start xgb / xgb-rank / ppo from the records of other workloads of the op's kind "
                         "in FILE (may be the --db)"},
    {"tuner-config", "FILE", "the tuner's hyper-parameters from a JSON object of NAME: value ('rltune tuners')"},
    {"tuner-opt", "NAME=V,...", "hyper-parameters on the command line, applied after --tuner-config"},
    {"agent-in", "FILE", "start a learning tuner (ga-dqn, dqn, bandit, ppo) from the agent saved in FILE"},
    {"agent-out", "FILE", "save the learning tuner's agent to FILE when the run ends (may be --agent-in)"},
    {"policy", "FILE", "--tuner policy: the LoopTune policy whose result the search starts from"},
    {"policy-base", "NAME", "--tuner policy: the tuner that searches on from there (default xgb-rank)"},
    RLT_CLI_MEASURE_OPTS,
    {"json", NULL, "print exactly one JSON object on stdout instead of the report"},
};

/* ---- shared with `rltune dataset` (cli.h) -------------------------------- */

volatile sig_atomic_t rlt_cli_stop_requested;

/* A second SIGINT this soon after the first is the same interrupt, not a
 * second Ctrl-C: timeout(1) -s INT, for one, signals the command and then
 * its whole process group, so the command receives it twice, microseconds
 * apart (two runs of `timeout -s INT 600 rltune tune --model` in eight
 * ended without their final pick and summary that way). */
#define INTERRUPT_SAME_S 0.25

static struct timespec first_interrupt;

static void on_interrupt(int sig)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now); /* async-signal-safe */
    if (!rlt_cli_stop_requested) {
        first_interrupt = now;
        rlt_cli_stop_requested = 1;
        return;
    }
    double since = (double)(now.tv_sec - first_interrupt.tv_sec) + 1e-9 * (double)(now.tv_nsec - first_interrupt.tv_nsec);
    if (since < INTERRUPT_SAME_S) return;
    signal(sig, SIG_DFL); /* a second Ctrl-C ends the process, as if none were caught */
    raise(sig);
}

void rlt_cli_interrupt_catch(void)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

void rlt_cli_interrupt_release(void) { signal(SIGINT, SIG_DFL); }

void rlt_cli_progress_show(const rlt_tune_progress *p, void *ctx)
{
    const rlt_cli_progress *pc = ctx;
    if (!pc->is_tty) return;
    double eta = p->measurements_per_s > 0 ? (p->n_total - p->n_done) / p->measurements_per_s : 0;
    printf("\r\033[K[%s] %d/%d %s, best %.2f GFLOP/s, %.2f %s/s, ETA %.0f s%s", pc->what, p->n_done, p->n_total,
           pc->unit, p->best_gflops, p->measurements_per_s, pc->unit, eta,
           rlt_cli_stop_requested ? " (stopping)" : "");
    fflush(stdout);
}

int rlt_cli_measure_opts_get(const rlt_cli_args *args, rlt_session_options *o)
{
    rlt_diag d = {0};
    int64_t batch, threads, repeat;
    double min_repeat_ms, timeout_s;
    rlt_status st;
    if ((st = rlt_cli_args_int(args, "batch", o->batch_size, 1, 256, &batch, &d)) ||
        (st = rlt_cli_args_int(args, "threads", o->n_threads, 1, RLT_MAX_THREADS, &threads, &d)) ||
        (st = rlt_cli_args_int(args, "repeat", o->run.repeat, 1, 1000, &repeat, &d)) ||
        (st = rlt_cli_args_double(args, "min-repeat-ms", o->run.min_repeat_ms, 0, true, 1e6, &min_repeat_ms, &d)) ||
        (st = rlt_cli_args_double(args, "timeout", o->run.timeout_s, 0, true, 1e6, &timeout_s, &d))) {
        rlt_cli_error("%s", d.message);
        return RLT_CLI_EXIT_USAGE;
    }
    o->batch_size = (int)batch;
    o->n_threads = (int)threads;
    o->build = (rlt_build_opts){.cc = rlt_cli_args_get(args, "cc"), .cflags = rlt_cli_args_get(args, "cflags")};
    o->run = (rlt_run_opts){.repeat = (int)repeat,
                            .min_repeat_ms = min_repeat_ms,
                            .timeout_s = timeout_s,
                            .cold_weights = rlt_cli_args_has(args, "cold")};
    return rlt_cli_executor_get(rlt_cli_args_get(args, "executor"), &o->executor);
}

/* ---- tune ------------------------------------------------------------------ */

/* The --measure argument: NULL for live, else the dataset of replay:FILE.
 * Prints the error and returns the exit code on bad input. */
static int measure_mode_get(const rlt_cli_args *args, const char **out_replay_path)
{
    const char *mode = rlt_cli_args_get(args, "measure");
    *out_replay_path = NULL;
    if (!mode || strcmp(mode, "live") == 0) return RLT_CLI_EXIT_OK;
    if (strncmp(mode, "replay:", 7) != 0 || mode[7] == '\0') {
        rlt_cli_error("--measure: unknown mode '%.200s': expected live or replay:FILE (a dataset made by "
                      "'rltune dataset')",
                      mode);
        return RLT_CLI_EXIT_USAGE;
    }
    /* nothing is run in a replay: options about running would be ignored */
    static const char *const live_only[] = {"db", "repeat", "min-repeat-ms", "timeout", "cold", "executor"};
    for (size_t i = 0; i < RLT_CLI_ARRAY_LEN(live_only); i++)
        if (rlt_cli_args_has(args, live_only[i])) {
            rlt_cli_error("--%s cannot be combined with --measure replay: a replay %s", live_only[i],
                          i == 0 ? "stores no records" : "runs nothing");
            return RLT_CLI_EXIT_USAGE;
        }
    *out_replay_path = mode + 7;
    return RLT_CLI_EXIT_OK;
}

/* The flag of the option rlt_session_open refused, for the message; NULL
 * when it was none of them. */
static const char *flag_of(rlt_session_option which, const rlt_session_options *o)
{
    switch (which) {
    case RLT_OPTION_TUNER: return "--tuner";
    case RLT_OPTION_DB: return "--db";
    case RLT_OPTION_REPLAY: return "--measure";
    case RLT_OPTION_TRANSFER: return "--transfer";
    case RLT_OPTION_AGENT: return o->agent_in ? "--agent-in" : "--agent-out";
    case RLT_OPTION_START: return "--start";
    case RLT_OPTION_POLICY: return "--policy";
    case RLT_OPTION_TUNER_CONFIG: return "--tuner-config";
    case RLT_OPTION_TUNER_OPTIONS: return "--tuner-opt";
    case RLT_OPTION_NUMBERS:
    case RLT_OPTION_NONE: break;
    }
    return NULL;
}

static void print_report(const rlt_session_summary *r, const rlt_session_options *o, const char *spec,
                         const char *db_path)
{
    const char *ending = r->was_stopped ? ", interrupted" : r->was_stopped_early ? ", stopped early" :
                         r->was_exhausted ? ", space exhausted" : "";
    printf("op:        %s\n", spec);
    printf("tuner:     %s%s, seed %llu\n", o->policy_path ? "policy, then " : "", o->tuner,
           (unsigned long long)o->seed);
    if (o->replay_path) {
        printf("measure:   replay of %s\n", o->replay_path);
        printf("trials:    %d (%d answered by the dataset, %d absent from it, %d failed)%s\n", r->n_trials,
               r->n_replayed, r->n_absent, r->n_failed, ending);
    } else {
        printf("trials:    %d (%d measured, %d read back from %s, %d failed)%s\n", r->n_trials, r->n_measured,
               r->n_from_records, db_path, r->n_failed, ending);
    }
    if (r->has_policy) {
        printf("policy:    %s: %.2f GFLOP/s in %.1f s (%lld states measured); the search started from\n",
               o->policy_path, r->policy_gflops, r->policy_wall_s, (long long)r->policy_n_evaluations);
        printf("           %s\n", r->start_config[0] ? r->start_config : "(no valid configuration near it)");
    }
    if (o->transfer_path)
        printf("transfer:  %d rows from %d other workload%s in %s\n", r->n_transfer_rows, r->n_transfer_workloads,
               r->n_transfer_workloads == 1 ? "" : "s", o->transfer_path);
    if (r->n_other_threads > 0)
        printf("started:   with %d configuration%s from the op's best %s\n", r->n_other_threads,
               r->n_other_threads == 1 ? "" : "s",
               o->run.cold_weights ? "warm records and cold ones at other thread counts" : "at other thread counts");
    if (r->n_seeds > 0)
        printf("seeds:     %d configuration%s built by rules, measured first\n", r->n_seeds,
               r->n_seeds == 1 ? "" : "s");
    if (r->n_final > 0)
        printf("wall time: %.1f s (%.2f trials/s, then %.1f s for the final pick)\n", r->wall_s,
               r->measurements_per_s, r->final_s);
    else
        printf("wall time: %.1f s (%.2f trials/s)\n", r->wall_s, r->measurements_per_s);
    if (r->n_final > 0) {
        bool is_same = strcmp(r->best_config, r->tuning_best_config) == 0;
        printf("final:     the %d best measured again, %d round%s of %d samples of >= %g ms each: %s\n", r->n_final,
               r->final_rounds, r->final_rounds == 1 ? "" : "s", r->final_repeat, r->final_min_repeat_ms,
               is_same ? "tuning's best stays" : "another one is faster");
        if (!is_same)
            printf("           (tuning's best had measured %.2f GFLOP/s: %s)\n", r->tuning_best_gflops,
                   r->tuning_best_config);
    }
    if (r->best_gflops > 0) {
        printf("best:      %.2f GFLOP/s, %.4f ms (compiler %s)\n", r->best_gflops, r->best_time_ms, r->best_cc);
        printf("config:    %s\n", r->best_config);
        printf("schedule:\n%s", r->best_schedule);
    } else {
        printf("best:      none of the trials measured OK\n");
    }
}

static int run_tune(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_USAGE;
    rlt_diag d = {0};
    rlt_op *op = NULL;
    rlt_session *session = NULL;
    char *json = NULL;
    int64_t trials, seed, early, n_final, n_seeds;
    const char *replay_path = NULL, *db_path = NULL;
    rlt_session_options o;
    rlt_session_options_init(&o); /* the defaults the help text states */
    rlt_status st;
    if ((st = rlt_cli_args_int(args, "trials", o.n_trials, 1, 1000000, &trials, &d)) ||
        (st = rlt_cli_args_int(args, "seed", 0, 0, INT64_MAX, &seed, &d)) ||
        (st = rlt_cli_args_int(args, "early-stopping", 0, 1, 1000000, &early, &d)) ||
        (st = rlt_cli_args_int(args, "final", o.n_final, 0, 64, &n_final, &d)) ||
        (st = rlt_cli_args_int(args, "seeds", o.n_seeds, 0, 64, &n_seeds, &d))) {
        rlt_cli_error("%s", d.message);
        goto cleanup;
    }
    if ((rc = rlt_cli_measure_opts_get(args, &o)) != RLT_CLI_EXIT_OK) goto cleanup;
    rc = RLT_CLI_EXIT_USAGE;
    if (!rlt_cli_args_has(args, "early-stopping")) early = 0;
    const char *tuner = rlt_cli_args_get(args, "tuner");
    if (!tuner) tuner = "xgb-rank";
    const char *policy_path = rlt_cli_args_get(args, "policy");
    bool is_policy = strcmp(tuner, "policy") == 0;
    if (is_policy != (policy_path != NULL) || (!is_policy && rlt_cli_args_has(args, "policy-base"))) {
        rlt_cli_error(is_policy ? "--tuner policy needs --policy FILE (a policy 'rltune train' wrote)"
                                : "--policy and --policy-base go with --tuner policy");
        goto cleanup;
    }
    if (is_policy) {
        tuner = rlt_cli_args_get(args, "policy-base");
        if (!tuner) tuner = "xgb-rank";
        if (strcmp(tuner, "policy") == 0) {
            rlt_cli_error("--policy-base: a tuner of the knob space, not policy");
            goto cleanup;
        }
    }
    if (rlt_cli_args_has(args, "no-transfer") && !rlt_cli_args_has(args, "model")) {
        rlt_cli_error("--no-transfer goes with --model (an op's run transfers only with --transfer)");
        goto cleanup;
    }
    if (rlt_cli_args_has(args, "graph-opt") && !rlt_cli_args_has(args, "model")) {
        rlt_cli_error("--graph-opt goes with --model: it rewrites a whole network's graph");
        goto cleanup;
    }
    if (rlt_cli_args_has(args, "warm") && !rlt_cli_args_has(args, "model")) {
        rlt_cli_error("--warm goes with --model (an op is timed warm unless --cold says otherwise)");
        goto cleanup;
    }
    if (rlt_cli_args_has(args, "layout") && !rlt_cli_args_has(args, "model")) {
        rlt_cli_error("--layout goes with --model (an op's spec says its layout: conv2d's iblock= and oblock=)");
        goto cleanup;
    }
    if (rlt_cli_args_has(args, "warm") && rlt_cli_args_has(args, "cold")) {
        rlt_cli_error("--cold and --warm contradict each other: give one (or neither: cold)");
        goto cleanup;
    }
    if ((rc = measure_mode_get(args, &replay_path)) != RLT_CLI_EXIT_OK) goto cleanup;
    rc = RLT_CLI_EXIT_USAGE;
    if (is_policy && replay_path) {
        rlt_cli_error("--tuner policy measures its rollout live: it does not go with --measure replay");
        goto cleanup;
    }
    if (is_policy && rlt_cli_args_has(args, "start")) {
        rlt_cli_error("--start and --tuner policy both choose where the search starts: give one");
        goto cleanup;
    }
    if (rlt_cli_args_has(args, "model")) {
        o.tuner = tuner;
        o.seed = (uint64_t)seed;
        o.db_path = rlt_cli_args_get(args, "db") ? rlt_cli_args_get(args, "db") : "rltune.db";
        o.n_seeds = (int)n_seeds;
        o.n_final = (int)n_final;
        o.from_other_threads = !rlt_cli_args_has(args, "no-other-threads");
        o.tuner_config_path = rlt_cli_args_get(args, "tuner-config");
        o.tuner_options = rlt_cli_args_get(args, "tuner-opt");
        o.stop = &rlt_cli_stop_requested;
        rc = rlt_cli_tune_model(args, &o, trials);
        goto cleanup;
    }
    if ((st = rlt_cli_op_load(args, &op, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if (!replay_path) {
        db_path = rlt_cli_args_get(args, "db");
        if (!db_path) db_path = "rltune.db";
    }
    rlt_cli_progress pc = {.is_tty = isatty(STDOUT_FILENO) && !rlt_cli_args_has(args, "json"),
                           .what = "tune",
                           .unit = "trials"};
    o.tuner = tuner;
    o.n_trials = (int)trials;
    o.early_stopping = (int)early;
    o.seed = (uint64_t)seed;
    o.db_path = db_path;
    o.replay_path = replay_path;
    o.transfer_path = rlt_cli_args_get(args, "transfer");
    o.agent_in = rlt_cli_args_get(args, "agent-in");
    o.agent_out = rlt_cli_args_get(args, "agent-out");
    o.start_key = rlt_cli_args_get(args, "start");
    o.policy_path = policy_path;
    o.from_other_threads = !rlt_cli_args_has(args, "no-other-threads");
    o.n_seeds = (int)n_seeds;
    o.n_final = (int)n_final;
    o.tuner_config_path = rlt_cli_args_get(args, "tuner-config");
    o.tuner_options = rlt_cli_args_get(args, "tuner-opt");
    o.stop = &rlt_cli_stop_requested;
    o.progress = rlt_cli_progress_show;
    o.progress_ctx = &pc;
    rlt_session_option bad = RLT_OPTION_NONE;
    rlt_cli_interrupt_catch();
    st = rlt_session_open(op, &o, &session, &bad, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_interrupt_release();
        const char *flag = flag_of(bad, &o);
        if (flag)
            rlt_cli_error("%s: %s", flag, d.message);
        else
            rlt_cli_error("%s", d.message);
        /* a file the user named that is wrong is bad input; running out of
         * memory, a policy whose rollout fails, a compiler that cannot be
         * started are not */
        rc = rlt_cli_exit_for(st);
        if (flag && st != RLT_STATUS_OUT_OF_MEMORY) rc = RLT_CLI_EXIT_USAGE;
        if (bad == RLT_OPTION_NONE && o.policy_path && rc == RLT_CLI_EXIT_USAGE) rc = RLT_CLI_EXIT_INTERNAL;
        goto cleanup;
    }
    while (st == RLT_STATUS_OK && !rlt_session_is_done(session)) st = rlt_session_step(session, &d);
    if (st == RLT_STATUS_OK) st = rlt_session_finish(session, &d);
    rlt_cli_interrupt_release();
    if (pc.is_tty) printf("\n");
    rlt_session_summary sum;
    rlt_session_summary_get(session, &sum);
    if (st != RLT_STATUS_OK) {
        if (replay_path)
            rlt_cli_error("tuning stopped (%s): %s", rlt_status_str(st), d.message);
        else
            rlt_cli_error("tuning stopped (%s): %s (%d trials stored in %s)", rlt_status_str(st), d.message,
                          sum.n_measured, db_path);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if (rlt_cli_args_has(args, "json")) {
        if (!(json = rlt_session_json(session))) {
            rlt_cli_error("out of memory formatting the result");
            rc = RLT_CLI_EXIT_INTERNAL;
            goto cleanup;
        }
        printf("%s\n", json);
    } else {
        print_report(&sum, &o, rlt_op_spec(op), db_path);
    }
    rc = RLT_CLI_EXIT_OK;
cleanup:
    rlt_free(json);
    rlt_session_destroy(session);
    rlt_op_destroy(op);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_tune = {
    .name = "tune",
    .brief = "search an op's schedule space for its fastest kernel, recording every measurement",
    .synopsis = "(--op SPEC | --expr EXPR --shape SHAPE | --model FILE) [--tuner NAME] [--trials N] [options]",
    .summary = "Searches the op's space (multi-level tiling, vectorisation, unrolling, packing, ...) with\n"
               "a tuner: each batch is built in parallel, then run, verified and timed one at a time,\n"
               "and stored in the records database before the tuner sees it. A configuration measured\n"
               "before for the same op and target is read back, not measured again.\n"
               "With --measure replay:FILE the measurements come from a dataset ('rltune dataset'):\n"
               "nothing is compiled or run, no records are written, and the tuner searches only the\n"
               "dataset's configurations; its op and its --threads, --cc and --cflags must be this\n"
               "run's (the CPU may differ: a replay answers for the machine that measured it).\n"
               "With --transfer FILE, xgb, xgb-rank and ppo first learn from FILE's records of other\n"
               "workloads of the same op kind on this target (AutoTVM's transfer learning), so even\n"
               "the first batch comes from the model instead of at random.\n"
               "With --model FILE, the tasks of an ONNX model ('rltune tasks') share the --trials\n"
               "(new measurements): after one round (a --batch) of each, every round goes to the task\n"
               "whose tuning should cut the network's latency estimate (sum of weight x best time)\n"
               "the most (Ansor's task scheduler). A line per round shows the task and the estimate;\n"
               "records already in the --db count, so a rerun continues. 'rltune run' then uses them.",
    .details = "Ctrl-C stops after the batch in flight, with everything measured stored; a second\n"
               "Ctrl-C ends at once (committed batches are kept).\n"
               "Tuning times each candidate with a few short samples, which can flatter one; with\n"
               "--final N (default 4) the N best are then measured again, in turn, 3 rounds of 5\n"
               "samples of >= 25 ms, and the best median is the run's best. Each is stored as one\n"
               "more record, its configuration's newest, which 'rltune best' goes by. It is skipped\n"
               "when the run measured nothing new, was interrupted, or replays a dataset.\n"
               "With --json, stdout holds exactly one JSON object: op, tuner, trials, measured,\n"
               "from_records, failed, best {gflops, time_ms, config, schedule, cc}, final\n"
               "{candidates, rounds, wall_s, tuning_best_gflops, tuning_best_config} (the --final pick;\n"
               "candidates 0 when it did not run), curve (best GFLOP/s after each trial, as tuning\n"
               "measured it), wall_s, tuner_s (the part of it in the tuner),\n"
               "measurements_per_s, db (null in a replay), interrupted, stopped_early,\n"
               "space_exhausted, measure (live or replay), dataset (its file, or null), replayed\n"
               "(trials answered by it), n_absent (trials it lacks), transfer_rows and\n"
               "transfer_workloads (the --transfer warm start; 0 without), other_threads (the\n"
               "configurations taken from other thread counts), seeds (the rule-built ones),\n"
               "agent_in and agent_out (the files, or null).\n"
               "A live run first measures the op's best configurations recorded in the --db at other\n"
               "thread counts (up to 3, final picks first, each by its latest record; a parallel knob\n"
               "one space lacks is dropped, one it has is tried at each value), so a run at 2 threads\n"
               "after one at 1 starts from what that one found; --no-other-threads turns it off.\n"
               "Then it measures --seeds configurations built by rules (default 8): the register\n"
               "tiles with the most FMAs per load, the reduction axes whole, inputs packed where\n"
               "their vectors would be gathered, padded where the op reuses them enough, an outer\n"
               "axis parallel; a quarter of them blocked for this machine's caches (docs/cli.md,\n"
               "\"Seeds\"). The tuner's own proposals follow.\n"
               "A learning tuner's agent (networks, optimiser state, exploration counters) is saved\n"
               "with --agent-out when the run ends, interrupted or not, and loaded with --agent-in\n"
               "before its first proposal: on the same workload, or on another of the same op kind\n"
               "(ktune's transfer between layers; bandit needs the same knob choices).\n"
               "Hyper-parameters: 'rltune tuners' lists them with their defaults.",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(tune_opts),
    .opts = tune_opts,
    .run = run_tune,
};
