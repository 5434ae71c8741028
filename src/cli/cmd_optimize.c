/*
 * cmd_optimize.c - `rltune optimize`: optimises an op's loop nest in the
 * LoopTune env (src/env) with a trained policy (--policy: a greedy rollout,
 * or with --beam W a policy-guided beam search) or with one of the search
 * baselines (--search greedy|beam|random), every new state built, run and
 * checked. Prints the final loop tree, the trace of actions and the
 * schedule; with --json one JSON object.
 */
#include "cli/cli.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const rlt_cli_opt optimize_opts[] = {
    {"op", "SPEC", "built-in op, e.g. matmul:M=512,N=512,K=512 (see 'rltune ops')"},
    {"expr", "EXPR", "a user expression instead, e.g. 'C[i,j] += A[i,k] * B[k,j]' (needs --shape)"},
    {"shape", "SHAPE", "extents of the expression's indices, e.g. i=64,j=64,k=64"},
    {"schedule", "FILE", "start from this schedule's nest (splits, reorders, annotations); default: the op's"},
    {"policy", "FILE", "a trained policy (rltune imitate or train; models/looptune.rlp ships with rltune)"},
    {"search", "KIND", "no policy: greedy, beam or random search over the same actions"},
    {"beam", "W", "beam width: with --policy a policy-guided beam search; with --search beam (default 2)"},
    {"lookahead", "L", "--search greedy: actions looked ahead, 1 or 2 (default 1)"},
    {"time-budget", "S", "--search random: seconds to search (required); others: stop when spent"},
    {"steps", "N", "actions from the start: the rollout's length or the search's depth (default " RLT_CLI_STR(RLT_POLICY_DEFAULT_STEPS) ")"},
    {"json", NULL, "print one JSON object instead of text"},
    {"save", "FILE", "also write the best schedule to FILE"},
    RLT_CLI_ENV_MEASURE_OPTS,
};

typedef struct optimize_cfg {
    const char *policy_path, *search;
    rlt_rollout_opts rollout;
    rlt_env_search_opts search_opts;
} optimize_cfg;

static rlt_status read_cfg(const rlt_cli_args *args, const rlt_env_opts *eo, optimize_cfg *c, rlt_diag *diag)
{
    int64_t beam = 0, lookahead = 0, steps = 0;
    double budget = 0;
    c->policy_path = rlt_cli_args_get(args, "policy");
    c->search = rlt_cli_args_get(args, "search");
    if (!c->policy_path == !c->search)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "give either --policy FILE or --search KIND");
    rlt_status st = rlt_cli_args_int(args, "steps", RLT_POLICY_DEFAULT_STEPS, 1, RLT_OPTIMIZE_MAX_TRACE, &steps, diag);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "beam", 0, 1, 64, &beam, diag);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "lookahead", 1, 1, 2, &lookahead, diag);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_double(args, "time-budget", 0.0, 0.0, true, 1e6, &budget, diag);
    if (st != RLT_STATUS_OK) return st;
    if (c->policy_path) {
        if (rlt_cli_args_has(args, "lookahead") || rlt_cli_args_has(args, "time-budget"))
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "--lookahead and --time-budget are options of --search, not of --policy");
        c->rollout = (rlt_rollout_opts){.max_steps = (int)steps, .beam_width = (int)beam};
        return RLT_STATUS_OK;
    }
    rlt_env_search_opts *so = &c->search_opts;
    *so = (rlt_env_search_opts){.max_steps = (int)steps, .seed = eo->seed, .time_budget_s = budget};
    if (!rlt_env_search_kind_from_str(c->search, &so->kind))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "--search %s: not a search (greedy, beam, random)",
                        c->search);
    if (rlt_cli_args_has(args, "lookahead") && so->kind != RLT_ENV_SEARCH_GREEDY)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "--lookahead is an option of --search greedy");
    if (rlt_cli_args_has(args, "beam") && so->kind != RLT_ENV_SEARCH_BEAM)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "--beam goes with --search beam or --policy");
    if (so->kind == RLT_ENV_SEARCH_RANDOM && budget <= 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "--search random needs --time-budget S");
    so->lookahead = (int)lookahead;
    so->beam_width = beam > 0 ? (int)beam : 2;
    return RLT_STATUS_OK;
}

/* The method in words: "policy models/x.rlp (dqn, greedy)", "beam search (width 4)". */
static void describe(const optimize_cfg *c, const rlt_policy *p, char *buf, size_t cap)
{
    if (c->policy_path) {
        if (c->rollout.beam_width > 1)
            snprintf(buf, cap, "policy %s (%s, beam width %d)", c->policy_path, rlt_policy_algo_name(p),
                     c->rollout.beam_width);
        else
            snprintf(buf, cap, "policy %s (%s, greedy rollout)", c->policy_path, rlt_policy_algo_name(p));
        return;
    }
    const rlt_env_search_opts *so = &c->search_opts;
    switch (so->kind) {
    case RLT_ENV_SEARCH_GREEDY: snprintf(buf, cap, "greedy search (lookahead %d)", so->lookahead); break;
    case RLT_ENV_SEARCH_BEAM: snprintf(buf, cap, "beam search (width %d)", so->beam_width); break;
    case RLT_ENV_SEARCH_RANDOM: snprintf(buf, cap, "random search (%g s, seed %llu)", so->time_budget_s,
                                         (unsigned long long)so->seed); break;
    }
}

static int print_json(const char *op, const char *method, const rlt_optimize_result *r)
{
    cJSON *o = cJSON_CreateObject(), *trace = cJSON_CreateArray();
    if (o && trace) {
        cJSON_AddStringToObject(o, "op", op);
        cJSON_AddStringToObject(o, "method", method);
        rlt_cli_json_add_number(o, "gflops", r->gflops);
        rlt_cli_json_add_number(o, "time_ms", isfinite(r->time_ms) ? r->time_ms : -1);
        rlt_cli_json_add_number(o, "start_gflops", r->start_gflops);
        for (int i = 0; i < r->n_trace; i++)
            cJSON_AddItemToArray(trace, cJSON_CreateString(rlt_env_action_name(r->trace[i])));
        cJSON_AddItemToObject(o, "trace", trace);
        trace = NULL;
        cJSON_AddStringToObject(o, "schedule", r->schedule);
        rlt_cli_json_add_number(o, "wall_s", r->wall_s);
        rlt_cli_json_add_number(o, "n_evaluations", (double)r->n_evaluations);
        rlt_cli_json_add_number(o, "n_steps", (double)r->n_steps);
    }
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(trace);
    cJSON_Delete(o);
    if (!text) {
        rlt_cli_error("out of memory writing JSON");
        return RLT_CLI_EXIT_INTERNAL;
    }
    printf("%s\n", text);
    cJSON_free(text);
    return RLT_CLI_EXIT_OK;
}

static void print_text(const char *op, const char *method, const rlt_optimize_result *r)
{
    printf("op:       %s\n", op);
    printf("method:   %s\n", method);
    printf("start:    %.2f GFLOP/s\n", r->start_gflops);
    printf("best:     %.2f GFLOP/s (%.4f ms), %.2fx the start\n", r->gflops, r->time_ms,
           r->start_gflops > 0 ? r->gflops / r->start_gflops : 0.0);
    printf("trace:   ");
    if (r->n_trace == 0) printf(" (none: the start was best)");
    for (int i = 0; i < r->n_trace; i++) printf(" %s", rlt_env_action_name(r->trace[i]));
    printf("\nwall:     %.2f s, %lld states measured, %lld steps\n", r->wall_s, (long long)r->n_evaluations,
           (long long)r->n_steps);
    printf("\nloop tree:\n%s\nschedule:\n%s", r->tree, r->schedule);
}

static int run_optimize(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_OK;
    rlt_diag d = {0};
    rlt_op *op = NULL;
    rlt_env *env = NULL;
    rlt_policy *policy = NULL;
    rlt_optimize_result result = {0};
    rlt_env_opts eo;
    optimize_cfg cfg = {0};

    rlt_status st = rlt_cli_env_opts_get(args, 3, 10.0, &eo, &d);
    if (st == RLT_STATUS_OK) st = read_cfg(args, &eo, &cfg, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_op_load(args, &op, &d);
    if (st == RLT_STATUS_OK && cfg.policy_path &&
        (st = rlt_policy_load(cfg.policy_path, &policy, &d)) != RLT_STATUS_OK) {
        rlt_diag_prefix(&d, "--policy");
        if (st == RLT_STATUS_IO_ERROR || st == RLT_STATUS_PARSE_ERROR) st = RLT_STATUS_INVALID_ARGUMENT;
    }
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if ((rc = rlt_cli_env_start(args, op, &eo, &env)) != RLT_CLI_EXIT_OK) goto cleanup;
    st = policy ? rlt_policy_rollout(policy, env, &cfg.rollout, &result, &d)
                : rlt_env_search(env, &cfg.search_opts, &result, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        rc = rlt_cli_exit_for(st) == RLT_CLI_EXIT_USAGE ? RLT_CLI_EXIT_INTERNAL : rlt_cli_exit_for(st);
        goto cleanup;
    }
    char method[512];
    describe(&cfg, policy, method, sizeof method);
    if (rlt_cli_args_has(args, "json"))
        rc = print_json(rlt_op_spec(op), method, &result);
    else
        print_text(rlt_op_spec(op), method, &result);
    const char *save = rlt_cli_args_get(args, "save");
    if (rc == RLT_CLI_EXIT_OK && save &&
        rlt_cli_file_write(save, result.schedule, strlen(result.schedule), &d) != RLT_STATUS_OK) {
        fflush(stdout);
        rlt_cli_error("cannot save the schedule: %s", d.message);
        rc = RLT_CLI_EXIT_INTERNAL;
    }
    if (rc == RLT_CLI_EXIT_OK && result.gflops <= 0) rc = RLT_CLI_EXIT_KERNEL_FAILED;

cleanup:
    fflush(stdout);
    rlt_optimize_result_free(&result);
    rlt_policy_destroy(policy);
    rlt_env_destroy(env);
    rlt_op_destroy(op);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_optimize = {
    .name = "optimize",
    .brief = "optimise an op's loop nest with a trained policy (or a search), in seconds",
    .synopsis = "(--op SPEC | --expr EXPR --shape SHAPE) (--policy FILE [--beam W] | --search KIND) [options]",
    .summary = "Optimises the op's loop nest in the LoopTune environment (docs/env.md): with --policy, the\n"
               "trained policy rolls out greedily for --steps actions (with --beam W: a beam search\n"
               "guided by the policy); with --search, a search baseline over the same actions: greedy\n"
               "(--lookahead 1 or 2), beam (--beam W) or random (--time-budget S). Every new state is\n"
               "built, run and checked against the reference. Prints the best state's loop tree, the\n"
               "trace of actions that reach it, its schedule (which `rltune measure --schedule` takes)\n"
               "and its GFLOP/s; with --json one object with op, method, gflops, time_ms, start_gflops,\n"
               "trace, schedule, wall_s, n_evaluations and n_steps.",
    .details = "Examples:\n"
               "  rltune optimize --op matmul:M=200,N=152,K=176 --policy models/looptune.rlp\n"
               "  rltune optimize --op matmul:M=200,N=152,K=176 --search greedy --lookahead 2 --json\n"
               "Exit status: 0 success; 1 no state ran correctly (0 GFLOP/s); 2 bad input (the op, an\n"
               "option, an unreadable policy or schedule); 3 the environment (no compiler, ...).",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(optimize_opts),
    .opts = optimize_opts,
    .run = run_optimize,
};
