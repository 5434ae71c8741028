/*
 * cmd_graph_train.c - `rltune graph-train`: trains a graph-rewrite policy
 * (rlt_graph_policy_train: PPO over episodes of the given models in the
 * graph-rewrite environment, with the shipped rules, verified) and writes
 * it; a line per iteration (or, with --json, one object at the end).
 */
#include "cli/cli.h"
#include "rltune/graph_opt.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MODELS 32

static const rlt_cli_opt graph_train_opts[] = {
    {"models", "A.onnx,B.onnx,...", "the models to train on (up to 32)"},
    {"out", "FILE", "write the trained policy here (required), e.g. graph_rewrite.rlp"},
    {"iterations", "N", "rollouts then PPO updates (default 60)"},
    {"episodes", "N", "episodes of each model per iteration (default 2)"},
    {"horizon", "N", "rewrites of an episode at most (default 20)"},
    {"lr", "X", "Adam's learning rate (default 0.0003)"},
    {"ent-coef", "X", "PPO's entropy bonus (default 0.01)"},
    {"gamma", "X", "discount of later rewards (default 0.99)"},
    {"reward", "R", "step (X-RLflow's cost drop of each rewrite, default) or best (the drop of the best cost)"},
    {"step-penalty", "X", "subtracted from each rewrite's reward (default 0)"},
    {"init", "FILE", "go on training this policy instead of a new one"},
    {"db", "FILE", "records database for the kernels' times (measured seeds are stored in it)"},
    {"threads", "N", "the networks' threads (default 1)"},
    {"warm", NULL, "cost kernels warm: warm records, seeds timed warm (default: cold, as graph-opt and tune --model)"},
    {"cost-seeds", "N", "a kernel without a record costs the best of its first N seeds, 1..8 (default 3 with --db, else 1)"},
    {"seed", "N", "weights, sampling and order (default 1)"},
    {"json", NULL, "print exactly one JSON object on stdout at the end, no progress lines"},
};

typedef struct train_view {
    bool is_json;
    cJSON *curve; /* per iteration, for --json */
} train_view;

static void on_progress(void *ctx, const rlt_graph_train_progress *p)
{
    train_view *v = ctx;
    if (!v->is_json) {
        printf("iteration %3d/%d: %3d episodes, %4d steps, return %+.3f, best cost %.4fx, entropy %.3f, "
               "%d graphs costed, %.1f s\n",
               p->iteration, p->n_iterations, p->n_episodes, p->n_steps, p->mean_return, p->mean_best_ratio,
               p->entropy, p->n_cost_evals, p->elapsed_s);
        fflush(stdout);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToArray(v->curve, o)) {
        cJSON_Delete(o);
        return;
    }
    rlt_cli_json_add_number(o, "iteration", p->iteration);
    rlt_cli_json_add_number(o, "steps", p->n_steps);
    rlt_cli_json_add_number(o, "mean_return", p->mean_return);
    rlt_cli_json_add_number(o, "mean_best_ratio", p->mean_best_ratio);
    rlt_cli_json_add_number(o, "entropy", p->entropy);
    rlt_cli_json_add_number(o, "cost_evals", p->n_cost_evals);
    rlt_cli_json_add_number(o, "elapsed_s", p->elapsed_s);
}

static int run_graph_train(const rlt_cli_args *args)
{
    rlt_diag d = {0};
    const char *list = rlt_cli_args_get(args, "models"), *out_path = rlt_cli_args_get(args, "out");
    if (!list || !list[0]) {
        rlt_cli_error("--models A.onnx,B.onnx,... is required: the models to train on");
        return RLT_CLI_EXIT_USAGE;
    }
    if (!out_path || !out_path[0]) {
        rlt_cli_error("--out FILE is required: where to write the policy");
        return RLT_CLI_EXIT_USAGE;
    }
    rlt_graph_train_options o;
    rlt_graph_train_options_init(&o);
    int64_t iterations, episodes, horizon, threads, seed, cost_seeds;
    double lr, ent_coef, gamma, penalty;
    if (rlt_cli_args_int(args, "iterations", o.n_iterations, 0, 1000000, &iterations, &d) != RLT_STATUS_OK ||
        rlt_cli_args_int(args, "episodes", o.episodes_per_model, 1, 10000, &episodes, &d) != RLT_STATUS_OK ||
        rlt_cli_args_int(args, "horizon", o.horizon, 1, 100000, &horizon, &d) != RLT_STATUS_OK ||
        rlt_cli_args_int(args, "threads", 1, 1, RLT_MAX_THREADS, &threads, &d) != RLT_STATUS_OK ||
        rlt_cli_args_int(args, "seed", 1, 0, INT64_MAX, &seed, &d) != RLT_STATUS_OK ||
        rlt_cli_args_int(args, "cost-seeds", 0, 1, 8, &cost_seeds, &d) != RLT_STATUS_OK ||
        rlt_cli_args_double(args, "lr", o.lr, 0, true, 1.0, &lr, &d) != RLT_STATUS_OK ||
        rlt_cli_args_double(args, "ent-coef", o.ent_coef, 0, false, 10.0, &ent_coef, &d) != RLT_STATUS_OK ||
        rlt_cli_args_double(args, "gamma", o.gamma, 0, false, 1.0, &gamma, &d) != RLT_STATUS_OK ||
        rlt_cli_args_double(args, "step-penalty", 0, 0, false, 100, &penalty, &d) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        return RLT_CLI_EXIT_USAGE;
    }
    o.n_iterations = (int)iterations;
    o.episodes_per_model = (int)episodes;
    o.horizon = (int)horizon;
    o.n_threads = (int)threads;
    o.seed = (uint64_t)seed;
    o.lr = lr;
    o.ent_coef = ent_coef;
    o.gamma = gamma;
    o.step_penalty = penalty;
    const char *reward = rlt_cli_args_get(args, "reward");
    if (reward && strcmp(reward, "best") == 0) {
        o.reward = RLT_GRAPH_REWARD_BEST;
    } else if (reward && strcmp(reward, "step") != 0) {
        rlt_cli_error("--reward: '%s' is not a reward; expected step or best", reward);
        return RLT_CLI_EXIT_USAGE;
    }
    o.db_path = rlt_cli_args_get(args, "db");
    o.cold_weights = !rlt_cli_args_has(args, "warm");
    o.n_seeds = (int)cost_seeds;
    char *copy = strdup(list);
    rlt_model *models[MAX_MODELS] = {0};
    rlt_rules *rules = NULL;
    rlt_graph_policy *init = NULL, *policy = NULL;
    train_view v = {.is_json = rlt_cli_args_has(args, "json")};
    int n_models = 0, rc = RLT_CLI_EXIT_INTERNAL;
    rlt_status st;
    if (!copy) {
        rlt_cli_error("out of memory");
        return RLT_CLI_EXIT_INTERNAL;
    }
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n_models == MAX_MODELS) {
            rlt_cli_error("--models: at most %d models", MAX_MODELS);
            rc = RLT_CLI_EXIT_USAGE;
            goto cleanup;
        }
        if ((rc = rlt_cli_model_load(tok, &models[n_models])) != RLT_CLI_EXIT_OK) goto cleanup;
        n_models++;
    }
    if (rlt_cli_args_has(args, "init") &&
        (st = rlt_graph_policy_load(rlt_cli_args_get(args, "init"), &init, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("--init: %s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    o.init = init;
    if ((st = rlt_rules_load(NULL, &rules, &d)) != RLT_STATUS_OK ||
        (st = rlt_rules_verify(rules, o.seed, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if (v.is_json && !(v.curve = cJSON_CreateArray())) {
        rlt_cli_error("out of memory");
        goto cleanup;
    }
    o.progress = on_progress;
    o.progress_ctx = &v;
    if ((st = rlt_graph_policy_train(rules, models, n_models, &o, &policy, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if ((st = rlt_graph_policy_save(policy, out_path, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("--out: %s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if (v.is_json) {
        cJSON *root = cJSON_CreateObject();
        char *text = NULL;
        if (root && cJSON_AddStringToObject(root, "policy", out_path) &&
            rlt_cli_json_add_number(root, "models", n_models) && cJSON_AddItemToObject(root, "iterations", v.curve))
            v.curve = NULL, text = cJSON_PrintUnformatted(root);
        cJSON_Delete(root);
        if (!text) {
            rlt_cli_error("out of memory formatting the result");
            goto cleanup;
        }
        printf("%s\n", text);
        cJSON_free(text);
    } else {
        printf("wrote %s\n", out_path);
    }
    rc = RLT_CLI_EXIT_OK;
cleanup:
    cJSON_Delete(v.curve);
    rlt_graph_policy_destroy(policy);
    rlt_graph_policy_destroy(init);
    rlt_rules_destroy(rules);
    for (int i = 0; i < n_models; i++) rlt_model_destroy(models[i]);
    free(copy);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_graph_train = {
    .name = "graph-train",
    .brief = "train a graph-rewrite policy by PPO on a set of ONNX models",
    .synopsis = "--models A.onnx,B.onnx,... --out FILE [--iterations N] [--episodes N] [--horizon N]\n"
                "                  [--lr X] [--ent-coef X] [--gamma X] [--reward step|best] [--step-penalty X]\n"
                "                  [--init FILE] [--db FILE] [--threads N] [--seed N] [--json]",
    .summary = "Trains RLFlow's agent over rltune's verified rules: each iteration runs --episodes\n"
               "episodes of every model (each step applies one (rule, location) candidate or stops;\n"
               "reward 100 x the cost drop over the first cost; costs from measured kernels, as\n"
               "graph-opt), then PPO updates the message-passing policy. Prints a line per iteration\n"
               "(mean return, best cost reached as a share of the first, entropy, graphs costed).",
    .details = "Use the policy with 'rltune graph-opt --search rl --policy FILE'.\n"
               "docs/graph-opt.md, \"Reinforcement learning\".",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(graph_train_opts),
    .opts = graph_train_opts,
    .run = run_graph_train,
};
