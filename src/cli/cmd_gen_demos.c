/*
 * cmd_gen_demos.c - `rltune gen-demos`: demonstrations for imitation
 * (rlt_demos_make, rltune/train.h): searches on some training shapes of
 * a dataset, then labels more of them with the best trace any search found,
 * every state built, run and checked. Writes the demonstrations file that
 * `rltune imitate` trains on. The first Ctrl-C stops after the shape in
 * flight and writes what was labelled.
 */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const rlt_cli_opt gen_demos_opts[] = {
    {"dataset", "FILE", "shape dataset (rltune gen-dataset): its training part is searched and labelled (required)"},
    {"out", "FILE", "the demonstrations file to write (replaced atomically; required)"},
    {"search-shapes", "N", "training shapes searched, evenly spaced through the training part (default 12)"},
    {"label-shapes", "N", "training shapes labelled, evenly spaced through the training part (default 64)"},
    {"guide", "FILE", "a policy whose guided beam is one more expert (default: none)"},
    {"guide-beam", "W", "the guided beam's width, 2..64 (default 2)"},
    {"no-greedy", NULL, "leave greedy search out of the experts (needs --guide or --traces)"},
    {"traces", "FILE", "a demonstrations file whose traces join the library before any search (traces "
                       "written by hand, or found on other shapes); then --search-shapes may be 0"},
    {"budget", "S", "time budget of each search in seconds, above 0 (default 60)"},
    {"steps", "N", "actions of a trace at most, 1..256 (default " RLT_CLI_STR(RLT_DEMOS_DEFAULT_STEPS) ")"},
    {"tie", "X", "near-ties within this fraction go to the trace best over all shapes, 0..0.5 (default 0.02)"},
    RLT_CLI_ENV_MEASURE_OPTS,
};

/* n shapes evenly spaced through the training part of `set`, from `skip`
 * on (the first `skip` places of the spacing are the searched ones). */
static int pick_shapes(const rlt_shape_set *set, int n, const char **out)
{
    int n_train = rlt_shape_set_count(set, false), k = 0;
    if (n > n_train) n = n_train;
    for (int i = 0, t = 0; i < set->n && k < n; i++) {
        if (set->is_test[i]) continue;
        /* the training shape of index t is picked when it is the first at or past k * n_train / n */
        if ((int64_t)t * n >= (int64_t)k * n_train) out[k++] = set->specs[i];
        t++;
    }
    return k;
}

static void show_progress(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "%s\n", line);
}

static int run_gen_demos(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_USAGE;
    rlt_diag d = {0};
    rlt_shape_set set = {0};
    rlt_demo_set demos = {0};
    rlt_demo_set given = {0};
    rlt_policy *guide = NULL;
    const char **search = NULL, **label = NULL;
    int64_t n_search = 0, n_label = 0, guide_beam = 0, steps = 0;
    double budget = 0, tie = 0;
    rlt_env_opts eo;
    const char *dataset = rlt_cli_args_get(args, "dataset"), *path = rlt_cli_args_get(args, "out");
    const char *guide_path = rlt_cli_args_get(args, "guide"), *traces_path = rlt_cli_args_get(args, "traces");
    rlt_status st = rlt_cli_env_opts_get(args, 3, 10.0, &eo, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "search-shapes", 12, traces_path ? 0 : 1, 100000, &n_search, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "label-shapes", 64, 1, 1000000, &n_label, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "guide-beam", 2, 2, 64, &guide_beam, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "steps", 16, 1, RLT_OPTIMIZE_MAX_TRACE, &steps, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_double(args, "budget", 60.0, 0.0, true, 1e6, &budget, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_double(args, "tie", 0.02, 0.0, false, 0.5, &tie, &d);
    if (st == RLT_STATUS_OK && (!dataset || !path || !path[0]))
        st = rlt_fail(&d, RLT_STATUS_INVALID_ARGUMENT, "give --dataset FILE (rltune gen-dataset) and --out FILE");
    if (st == RLT_STATUS_OK && rlt_cli_args_has(args, "no-greedy") && !guide_path && !traces_path)
        st = rlt_fail(&d, RLT_STATUS_INVALID_ARGUMENT, "--no-greedy leaves no expert: give --guide FILE or --traces FILE");
    if (st == RLT_STATUS_OK && traces_path && (st = rlt_demo_set_load(traces_path, &given, &d)) != RLT_STATUS_OK) {
        rlt_diag_prefix(&d, "--traces");
        if (st == RLT_STATUS_IO_ERROR || st == RLT_STATUS_PARSE_ERROR) st = RLT_STATUS_INVALID_ARGUMENT;
    }
    if (st == RLT_STATUS_OK && guide_path && (st = rlt_policy_load(guide_path, &guide, &d)) != RLT_STATUS_OK) {
        rlt_diag_prefix(&d, "--guide");
        if (st == RLT_STATUS_IO_ERROR || st == RLT_STATUS_PARSE_ERROR) st = RLT_STATUS_INVALID_ARGUMENT;
    }
    if (st == RLT_STATUS_OK && (st = rlt_shape_set_load(dataset, &set, &d)) != RLT_STATUS_OK) {
        rlt_diag_prefix(&d, "--dataset");
        if (st == RLT_STATUS_IO_ERROR || st == RLT_STATUS_PARSE_ERROR) st = RLT_STATUS_INVALID_ARGUMENT;
    }
    if (st == RLT_STATUS_OK && rlt_shape_set_count(&set, false) == 0)
        st = rlt_fail(&d, RLT_STATUS_INVALID_ARGUMENT, "--dataset %s has no training shape", dataset);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    search = calloc((size_t)set.n, sizeof *search);
    label = calloc((size_t)set.n, sizeof *label);
    if (!search || !label) {
        rlt_cli_error("out of memory");
        rc = RLT_CLI_EXIT_INTERNAL;
        goto cleanup;
    }
    int ns = pick_shapes(&set, (int)n_search, search), nl = pick_shapes(&set, (int)n_label, label);
    rlt_demo_gen_opts o = {
        .guide = guide,
        .guide_beam = (int)guide_beam,
        .no_greedy = rlt_cli_args_has(args, "no-greedy"),
        .max_steps = (int)steps,
        .budget_s = budget,
        .tie = tie > 0 ? tie : -1,
        .env = eo,
        .traces = traces_path ? &given : NULL,
        .progress = show_progress,
        .stop = &rlt_cli_stop_requested,
    };
    rlt_cli_interrupt_catch();
    st = rlt_demos_make(search, ns, label, nl, &o, &demos, &d);
    rlt_cli_interrupt_release();
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        rc = rlt_cli_exit_for(st) == RLT_CLI_EXIT_USAGE ? RLT_CLI_EXIT_INTERNAL : rlt_cli_exit_for(st);
        goto cleanup;
    }
    if (demos.n == 0) {
        rlt_cli_error("interrupted before any shape was labelled: nothing written");
        rc = RLT_CLI_EXIT_KERNEL_FAILED;
        goto cleanup;
    }
    if ((st = rlt_demo_set_save(&demos, path, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("--out %s: %s", path, d.message);
        rc = st == RLT_STATUS_OUT_OF_MEMORY ? RLT_CLI_EXIT_INTERNAL : RLT_CLI_EXIT_USAGE;
        goto cleanup;
    }
    int n_moved = 0;
    for (int i = 0; i < demos.n; i++) n_moved += demos.demos[i].n_trace > 0;
    printf("%d demonstrations (%d with actions) written to %s%s\n", demos.n, n_moved, path,
           demos.n < nl ? " (interrupted)" : "");
    rc = RLT_CLI_EXIT_OK;
cleanup:
    fflush(stdout);
    free(label);
    free(search);
    rlt_demo_set_free(&demos);
    rlt_demo_set_free(&given);
    rlt_shape_set_free(&set);
    rlt_policy_destroy(guide);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_gen_demos = {
    .name = "gen-demos",
    .brief = "search some training shapes and label more with the best traces found: demonstrations",
    .synopsis = "--dataset FILE --out FILE [--search-shapes N] [--label-shapes N] [--guide FILE]\n"
                "                          [--budget S] [--steps N] [--traces FILE] [options]",
    .summary = "Makes demonstrations for `rltune imitate` (docs/policy.md, \"Imitation\"). First, on\n"
               "--search-shapes training shapes of the dataset, each expert searches from the op's\n"
               "default nest: greedy search (lookahead 1) and, with --guide, the beam that policy\n"
               "guides; the trace of each result joins a library (which --traces FILE starts with the\n"
               "traces of a demonstrations file). Then, on --label-shapes training\n"
               "shapes, every trace of the library is walked and the nests they end at are measured\n"
               "in one batch; the shape's demonstration is the fastest trace (near-ties within --tie\n"
               "go to the trace best over all shapes). Every state is built, run and checked.\n"
               "Progress goes to stderr, one line a shape; the first Ctrl-C stops after the shape in\n"
               "flight and writes what was labelled.",
    .details = "Example:\n"
               "  rltune gen-demos --dataset models/mm-64-256-16.shapes --guide models/looptune-dqn.rlp \\\n"
               "      --search-shapes 12 --label-shapes 96 --out mm.demos\n"
               "The file's format: docs/formats.md (\"Demonstrations\").\n"
               "Exit status: 0 written; 1 interrupted before a shape was labelled; 2 bad input (an\n"
               "option, an unreadable dataset or guide); 3 the environment (no compiler, ...).",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(gen_demos_opts),
    .opts = gen_demos_opts,
    .run = run_gen_demos,
};
