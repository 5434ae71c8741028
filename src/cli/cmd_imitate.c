/*
 * cmd_imitate.c - `rltune imitate`: trains a blind LoopTune policy (bc) on
 * a demonstrations file by behaviour cloning (rlt_policy_imitate,
 * rltune/train.h) and writes it. Measures nothing: seconds of CPU.
 */
#include "cli/cli.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const rlt_cli_opt imitate_opts[] = {
    {"demos", "FILE[,FILE]", "demonstrations (rltune gen-demos) to learn from, one file or several (required)"},
    {"out", "FILE", "write the policy here (required), e.g. looptune.rlp"},
    {"epochs", "N", "passes over the samples, 1..100000 (default 200)"},
    {"batch", "N", "minibatch rows, 1..4096 (default 64)"},
    {"lr", "X", "Adam's learning rate, in (0, 1] (default 0.001)"},
    {"hidden", "N,N", "hidden layers' units, 1 to 4 layers of 1..4096 (default 256,128)"},
    {"steps", "N", "the rollout length the policy is for; longer demonstrations are refused (default " RLT_CLI_STR(RLT_POLICY_DEFAULT_STEPS) ")"},
    {"seed", "S", "seed of the network's weights and of the minibatches (default 0)"},
    {"json", NULL, "print one JSON object on stdout instead of the summary line"},
};

/* Loads the comma-separated demonstrations files of `list` into one set,
 * in order; the abouts joined by " | ". */
static rlt_status load_demos(const char *list, rlt_demo_set *out, rlt_diag *diag)
{
    *out = (rlt_demo_set){0};
    char *copy = strdup(list);
    rlt_status st = copy ? RLT_STATUS_OK : rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory");
    for (char *path = copy, *next = NULL; st == RLT_STATUS_OK && path; path = next) {
        if ((next = strchr(path, ','))) *next++ = '\0';
        rlt_demo_set one = {0};
        if ((st = rlt_demo_set_load(path, &one, diag)) == RLT_STATUS_OK) st = rlt_demo_set_append(out, &one, path, diag);
        rlt_demo_set_free(&one);
    }
    free(copy);
    if (st != RLT_STATUS_OK) rlt_demo_set_free(out);
    return st;
}

static void show_progress(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "%s\n", line);
}

static int print_json(const char *out, const rlt_imitate_report *r)
{
    cJSON *o = cJSON_CreateObject();
    if (o) {
        cJSON_AddStringToObject(o, "policy", out);
        rlt_cli_json_add_number(o, "demos", r->n_demos);
        rlt_cli_json_add_number(o, "samples", r->n_samples);
        rlt_cli_json_add_number(o, "loss_first", r->loss_first);
        rlt_cli_json_add_number(o, "loss_last", r->loss_last);
        rlt_cli_json_add_number(o, "accuracy", r->accuracy);
        rlt_cli_json_add_number(o, "reproduced", r->n_reproduced);
    }
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text) {
        rlt_cli_error("out of memory writing JSON");
        return RLT_CLI_EXIT_INTERNAL;
    }
    printf("%s\n", text);
    cJSON_free(text);
    return RLT_CLI_EXIT_OK;
}

static int run_imitate(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_USAGE;
    rlt_diag d = {0};
    rlt_demo_set demos = {0};
    rlt_policy *p = NULL;
    rlt_imitate_report rep = {0};
    int64_t epochs = 0, batch = 0, steps = 0, seed = 0;
    double lr = 0;
    int hidden[RLT_POLICY_MAX_HIDDEN], n_hidden = 0;
    const char *demos_path = rlt_cli_args_get(args, "demos"), *out = rlt_cli_args_get(args, "out");
    const char *hidden_text = rlt_cli_args_get(args, "hidden");
    rlt_status st = rlt_cli_args_int(args, "epochs", RLT_IMITATE_DEFAULT_EPOCHS, 1, 100000, &epochs, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "batch", RLT_IMITATE_DEFAULT_BATCH, 1, 4096, &batch, &d);
    if (st == RLT_STATUS_OK)
        st = rlt_cli_args_int(args, "steps", RLT_POLICY_DEFAULT_STEPS, 1, RLT_OPTIMIZE_MAX_TRACE, &steps, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "seed", 0, 0, INT64_MAX, &seed, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_double(args, "lr", RLT_IMITATE_DEFAULT_LR, 0.0, true, 1.0, &lr, &d);
    if (st == RLT_STATUS_OK)
        st = rlt_cli_args_int_list(args, "hidden", RLT_POLICY_MAX_HIDDEN, 1, 4096, "layer sizes", "256,128", hidden,
                                   &n_hidden, &d);
    if (st == RLT_STATUS_OK && (!demos_path || !out || !out[0]))
        st = rlt_fail(&d, RLT_STATUS_INVALID_ARGUMENT, "give --demos FILE (rltune gen-demos) and --out FILE");
    if (st == RLT_STATUS_OK && (st = load_demos(demos_path, &demos, &d)) != RLT_STATUS_OK) {
        rlt_diag_prefix(&d, "--demos");
        if (st == RLT_STATUS_IO_ERROR || st == RLT_STATUS_PARSE_ERROR) st = RLT_STATUS_INVALID_ARGUMENT;
    }
    rlt_imitate_opts o = {
        .n_hidden = n_hidden,
        .hidden = hidden,
        .epochs = (int)epochs,
        .batch = (int)batch,
        .lr = lr,
        .seed = (uint64_t)seed,
        .max_steps = (int)steps,
        .progress = show_progress,
    };
    if (st == RLT_STATUS_OK) st = rlt_policy_imitate(&demos, &o, &p, &rep, &d);
    if (st == RLT_STATUS_OK) {
        char *about = NULL;
        if (asprintf(&about,
                       "trained by rltune %s imitate\n"
                       "demonstrations: %d (%s)\n"
                       "algo: bc, seed %lld, hidden %s, lr %g, %lld epochs, batch %lld\n"
                       "samples: %d; cross-entropy %.4f -> %.4f; greedy choice = demonstrated on %.1f%%; "
                       "%d of %d demonstrations repeated exactly\n",
                       RLTUNE_VERSION, demos.n, demos.about, (long long)seed,
                       hidden_text ? hidden_text : "256,128", lr, (long long)epochs, (long long)batch, rep.n_samples,
                       rep.loss_first, rep.loss_last, 100 * rep.accuracy, rep.n_reproduced, rep.n_demos) < 0)
            about = NULL;
        st = !about ? rlt_fail(&d, RLT_STATUS_OUT_OF_MEMORY, "out of memory") : rlt_policy_set_about(p, about, &d);
        free(about);
    }
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if ((st = rlt_policy_save(p, out, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("--out %s: %s", out, d.message);
        rc = st == RLT_STATUS_OUT_OF_MEMORY ? RLT_CLI_EXIT_INTERNAL : RLT_CLI_EXIT_USAGE;
        goto cleanup;
    }
    if (rlt_cli_args_has(args, "json")) {
        rc = print_json(out, &rep);
    } else {
        printf("policy %s: %d demonstrations, %d samples, cross-entropy %.4f -> %.4f, greedy choice = demonstrated "
               "on %.1f%%, %d of %d demonstrations repeated exactly\n",
               out, rep.n_demos, rep.n_samples, rep.loss_first, rep.loss_last, 100 * rep.accuracy, rep.n_reproduced,
               rep.n_demos);
        rc = RLT_CLI_EXIT_OK;
    }
cleanup:
    fflush(stdout);
    rlt_policy_destroy(p);
    rlt_demo_set_free(&demos);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_imitate = {
    .name = "imitate",
    .brief = "train a blind LoopTune policy on demonstrations (behaviour cloning), in seconds",
    .synopsis = "--demos FILE[,FILE] --out FILE [--epochs N] [--lr X] [--hidden N,N] [--seed S] [--json]",
    .summary = "Replays each demonstration of the files (rltune gen-demos) from its op's default nest\n"
               "without measuring, takes every state on the way as a sample (its observation and the\n"
               "demonstrated action; the last state's action is stop) and trains the policy's network on\n"
               "them by softmax cross-entropy over the legal actions (Adam, minibatches, seeded). The\n"
               "policy (algo bc) is blind: it never reads the observation's GFLOP/s, so `rltune optimize\n"
               "--policy` walks its greedy rollout without measuring and measures only where it ends.\n"
               "Prints the fit: cross-entropy before and after, how often the greedy choice is the\n"
               "demonstrated one, and how many demonstrations the policy repeats exactly.",
    .details = "Example:\n"
               "  rltune imitate --demos mm.demos --out looptune.rlp\n"
               "The same file and options give the same policy, bit for bit. docs/policy.md, \"Imitation\".\n"
               "Exit status: 0 written; 2 bad input (an option, an unreadable demonstrations file, a\n"
               "demonstration illegal on its op); 3 internal error (out of memory).",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(imitate_opts),
    .opts = imitate_opts,
    .run = run_imitate,
};
