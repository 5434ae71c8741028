/*
 * cmd_train.c - `rltune train`: trains a LoopTune policy (DQN or PPO,
 * rltune/train.h) on the training part of a shape dataset, every new
 * state built, run and checked, and writes the policy (--out), checkpoints
 * (--checkpoint, default OUT.ckpt) and the reward curve (--curve, SVG).
 * --resume continues a checkpoint's run to the total --steps; --init
 * starts PPO from a policy (fine-tuning a cloned one).
 *
 * On a terminal (stderr) a progress line is redrawn as the run goes; the
 * first Ctrl-C stops the run after the step in flight, writes the
 * checkpoint and the policy, and exits 0 (a second ends the process). stdout
 * gets one summary line, or with --json one JSON object.
 */
#include "cli/cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const rlt_cli_opt train_opts[] = {
    {"dataset", "FILE", "shape dataset (rltune gen-dataset): trains on its training part (required)"},
    {"algo", "NAME", "dqn (default) or ppo"},
    {"steps", "N", "env steps in all, 1..1000000000 (required); with --resume the total to continue to"},
    {"out", "FILE", "write the trained policy here (required), e.g. looptune.rlp"},
    {"envs", "N", "episodes played side by side, their new states measured in one batch, 1..256 (default 8)"},
    {"episode-steps", "N", "actions per episode, 1..256 (default 10)"},
    {"hidden", "N,N", "hidden layers' units, 1 to 4 layers of 1..4096 (default 256,128)"},
    {"lr", "X", "Adam's learning rate, in (0, 1] (default: dqn 0.0005, ppo 0.0003)"},
    {"gamma", "X", "discount, in (0, 0.9999] (default 0.9)"},
    {"entropy", "X", "ppo: the entropy bonus's weight, 0..10 (default 0.01)"},
    {"critic-warmup", "N", "ppo: env steps at the start in which only the critic learns (default 0; for --init)"},
    {"checkpoint", "FILE", "checkpoint file (default OUT.ckpt)"},
    {"checkpoint-every", "N", "env steps between checkpoints, 1..1000000000 (default 500)"},
    {"resume", "FILE", "continue the run of this checkpoint (options left out take its values)"},
    {"init", "FILE", "ppo: start the actor from this policy (bc or ppo, e.g. rltune imitate's), with its hidden "
                     "layers; a blind one stays blind"},
    {"curve", "FILE", "reward curve as SVG (default: OUT with .svg for .rlp, or OUT.svg)"},
    {"json", NULL, "print one JSON object on stdout instead of the summary line"},
    {"threads", "N", "run-time threads of a parallel loop, 1..256 (default 1)"},
    {"seed", "S", "seed of the networks, the shapes drawn, exploration and the kernels' input data (default 0)"},
    {"cc", "CMD", "compiler command (default $RLTUNE_CC, else gcc)"},
    {"cflags", "FLAGS", "compiler flags, one argument (default \"" RLT_DEFAULT_CFLAGS "\")"},
    {"repeat", "N", "timed samples per new state, at least 1 (default 2)"},
    {"min-repeat-ms", "X", "shortest timed sample in milliseconds, above 0 (default 5)"},
    {"timeout", "S", "time limit in seconds for one kernel's run, above 0 (default 10)"},
    {"peak", "GFLOPS", "one core's peak to normalise rewards by (default: measured once, cached)"},
};

#define TRAIN_REPEAT_DEFAULT 2
#define TRAIN_MIN_REPEAT_MS_DEFAULT 5.0
#define PROGRESS_EVERY_S 0.2 /* redraws of the progress line, at most */

/* ---- options ------------------------------------------------------------------ */

/* The command line as given, for the policy's `about`. */
static char *command_line(const rlt_cli_args *args)
{
    char *text = NULL;
    size_t len = 0;
    FILE *s = open_memstream(&text, &len);
    if (!s) return NULL;
    fputs("rltune train", s);
    for (int i = 0; i < args->n_opts; i++) {
        const char *v = args->values[i];
        if (!v) continue;
        fprintf(s, " --%s", args->opts[i].name);
        if (!args->opts[i].metavar) continue;
        bool is_plain = v[0] != '\0' && strpbrk(v, " \t\n'\"\\$`") == NULL;
        if (is_plain) {
            fprintf(s, " %s", v);
            continue;
        }
        fputs(" '", s);
        for (const char *c = v; *c; c++) *c == '\'' ? fputs("'\\''", s) : fputc(*c, s);
        fputs("'", s);
    }
    bool has_failed = ferror(s);
    if (fclose(s) != 0 || has_failed) {
        free(text);
        return NULL;
    }
    return text;
}

/* OUT with its .rlp replaced by `ext`, or `ext` appended. */
static char *derived_path(const char *out, const char *ext, bool is_replacing)
{
    size_t n = strlen(out);
    if (is_replacing && n > 4 && strcmp(out + n - 4, ".rlp") == 0) n -= 4;
    char *path = NULL;
    return asprintf(&path, "%.*s%s", (int)n, out, ext) < 0 ? NULL : path;
}

/* Whether the directory a file `path` would be written into exists and
 * can be written. */
static bool dir_is_writable(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return access(".", W_OK) == 0;
    char *dir = strndup(path, slash == path ? 1 : (size_t)(slash - path));
    bool is_ok = dir && access(dir, W_OK) == 0;
    free(dir);
    return is_ok;
}

/* Reads every option into o (strings borrowed from args; hidden parsed).
 * Prints the error and returns the exit code on bad input. */
static int read_opts(const rlt_cli_args *args, rlt_train_opts *o)
{
    rlt_diag d = {0};
    int64_t steps = 0, envs = 0, episode_steps = 0, every = 0;
    double lr = 0, gamma = 0, entropy = -1;
    int64_t warmup = -1;
    rlt_status st = rlt_cli_env_opts_get(args, TRAIN_REPEAT_DEFAULT, TRAIN_MIN_REPEAT_MS_DEFAULT, &o->env, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "steps", 0, 1, RLT_TRAIN_MAX_STEPS, &steps, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "envs", 0, 1, RLT_TRAIN_MAX_ENVS, &envs, &d);
    if (st == RLT_STATUS_OK)
        st = rlt_cli_args_int(args, "episode-steps", 0, 1, RLT_TRAIN_MAX_EPISODE_STEPS, &episode_steps, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "checkpoint-every", 0, 1, RLT_TRAIN_MAX_STEPS, &every, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_double(args, "lr", 0, 0, true, 1, &lr, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_double(args, "gamma", 0, 0, true, 0.9999, &gamma, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_double(args, "entropy", -1, 0, false, 10, &entropy, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "critic-warmup", -1, 0, RLT_TRAIN_MAX_STEPS, &warmup, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        return RLT_CLI_EXIT_USAGE;
    }
    static const char *const required[] = {"dataset", "steps", "out"};
    for (size_t i = 0; i < RLT_CLI_ARRAY_LEN(required); i++)
        if (!rlt_cli_args_has(args, required[i])) {
            rlt_cli_error("--%s is required (rltune train --dataset FILE --steps N --out FILE)", required[i]);
            return RLT_CLI_EXIT_USAGE;
        }
    const char *algo = rlt_cli_args_get(args, "algo");
    if (algo && strcmp(algo, "dqn") != 0 && strcmp(algo, "ppo") != 0) {
        rlt_cli_error("--algo: unknown algorithm '%.64s' (dqn, ppo; bc policies come from rltune imitate)", algo);
        return RLT_CLI_EXIT_USAGE;
    }
    if (rlt_cli_args_int_list(args, "hidden", RLT_POLICY_MAX_HIDDEN, 1, 4096, "layer sizes", "256,128", o->hidden,
                              &o->n_hidden, &d) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        return RLT_CLI_EXIT_USAGE;
    }
    o->algo = algo;
    o->n_steps = steps;
    o->seed = o->env.seed;
    o->n_envs = (int)envs;
    o->episode_steps = (int)episode_steps;
    o->lr = lr;
    o->gamma = gamma;
    /* 0 in the options is "the default (or the checkpoint's)"; a given 0 is asked for as -1 */
    o->ppo_entropy_coef = entropy == 0 ? -1 : entropy < 0 ? 0 : entropy;
    o->ppo_critic_warmup = warmup == 0 ? -1 : warmup < 0 ? 0 : (int)warmup;
    o->checkpoint_every = every;
    o->resume_path = rlt_cli_args_get(args, "resume");
    o->dataset_name = rlt_cli_args_get(args, "dataset");
    o->init_name = rlt_cli_args_get(args, "init");
    return RLT_CLI_EXIT_OK;
}

/* ---- progress ------------------------------------------------------------------ */

typedef struct progress_ctx {
    bool is_tty;
    uint64_t last_ns;
    bool is_drawn;
} progress_ctx;

static void show_progress(const rlt_train_progress *p, void *ctx)
{
    progress_ctx *pc = ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    bool is_last = p->n_steps_done >= p->n_steps_total;
    if (!pc->is_tty || (!is_last && !p->is_checkpoint && (double)(now - pc->last_ns) * 1e-9 < PROGRESS_EVERY_S))
        return;
    pc->last_ns = now;
    pc->is_drawn = true;
    fprintf(stderr,
            "\r\033[K[train] %lld/%lld steps, %lld episodes, return %+.4f (last %d), %lld measured, %lld hits, "
            "%.2f states/s, ETA %.0f s%s%s",
            (long long)p->n_steps_done, (long long)p->n_steps_total, (long long)p->n_episodes, p->mean_return,
            RLT_TRAIN_RETURN_WINDOW, (long long)p->n_evaluations, (long long)p->n_cache_hits, p->states_per_s,
            p->eta_s, p->is_checkpoint ? ", checkpoint" : "", rlt_cli_stop_requested ? " (stopping)" : "");
    fflush(stderr);
}

/* ---- output ----------------------------------------------------------------------- */

static char *format_json(const rlt_train_stats *s, const rlt_train_opts *o, const char *out_path)
{
    char *text = NULL;
    bool is_ok = true;
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)s->seed);
    is_ok &= cJSON_AddStringToObject(j, "algo", s->algo) != NULL;
    is_ok &= cJSON_AddStringToObject(j, "dataset", o->dataset_name) != NULL;
    is_ok &= rlt_cli_json_add_number(j, "train_shapes", s->n_train_shapes) != NULL;
    is_ok &= cJSON_AddStringToObject(j, "seed", seed) != NULL;
    is_ok &= rlt_cli_json_add_number(j, "steps", (double)s->n_steps) != NULL;
    is_ok &= rlt_cli_json_add_number(j, "steps_total", (double)o->n_steps) != NULL;
    is_ok &= rlt_cli_json_add_number(j, "steps_resumed", (double)s->n_steps_resumed) != NULL;
    is_ok &= rlt_cli_json_add_number(j, "episodes", (double)s->n_episodes) != NULL;
    is_ok &= rlt_cli_json_add_number(j, "updates", (double)s->n_updates) != NULL;
    is_ok &= rlt_cli_json_add_number(j, "wall_s", s->wall_s) != NULL;
    is_ok &= rlt_cli_json_add_number(j, "n_evaluations", (double)s->n_evaluations) != NULL;
    is_ok &= rlt_cli_json_add_number(j, "n_cache_hits", (double)s->n_cache_hits) != NULL;
    is_ok &= rlt_cli_json_add_number(j, "mean_return_first", s->mean_return_first) != NULL;
    is_ok &= rlt_cli_json_add_number(j, "mean_return_last", s->mean_return_last) != NULL;
    is_ok &= rlt_cli_json_add_number(j, "mean_return_recent", s->mean_return_recent) != NULL;
    is_ok &= cJSON_AddBoolToObject(j, "interrupted", s->is_interrupted) != NULL;
    is_ok &= cJSON_AddStringToObject(j, "policy", out_path) != NULL;
    is_ok &= cJSON_AddStringToObject(j, "checkpoint", o->checkpoint_path) != NULL;
    is_ok &= cJSON_AddStringToObject(j, "curve", o->curve_path) != NULL;
    if (is_ok) text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return text;
}

static void print_summary(const rlt_train_stats *s, const rlt_train_opts *o, const char *out_path)
{
    if (s->is_interrupted)
        printf("interrupted at step %lld of %lld (resume with --resume %s): ", (long long)s->n_steps,
               (long long)o->n_steps, o->checkpoint_path);
    else
        printf("trained %s for %lld steps%s: ", s->algo, (long long)s->n_steps,
               s->n_steps_resumed > 0 ? " (resumed)" : "");
    printf("%lld episodes, %lld updates, %.1f s, %lld states measured, %lld cache hits, mean return %+.4f -> %+.4f "
           "(first -> last 10%% of episodes); policy %s, checkpoint %s, curve %s\n",
           (long long)s->n_episodes, (long long)s->n_updates, s->wall_s, (long long)s->n_evaluations,
           (long long)s->n_cache_hits, s->mean_return_first, s->mean_return_last, out_path, o->checkpoint_path,
           o->curve_path);
}

/* ---- the command ------------------------------------------------------------------ */

static int run_train(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_USAGE;
    rlt_diag d = {0};
    rlt_shape_set set = {0};
    rlt_policy *policy = NULL, *init = NULL;
    rlt_train_stats stats = {0};
    char *ckpt = NULL, *curve = NULL, *cmd = NULL, *json = NULL;
    rlt_train_opts o = {0};
    if ((rc = read_opts(args, &o)) != RLT_CLI_EXIT_OK) goto cleanup;
    const char *out_path = rlt_cli_args_get(args, "out");
    ckpt = rlt_cli_args_has(args, "checkpoint") ? strdup(rlt_cli_args_get(args, "checkpoint"))
                                                : derived_path(out_path, ".ckpt", false);
    curve = rlt_cli_args_has(args, "curve") ? strdup(rlt_cli_args_get(args, "curve"))
                                            : derived_path(out_path, ".svg", true);
    cmd = command_line(args);
    if (!ckpt || !curve || !cmd) {
        rlt_cli_error("out of memory");
        rc = RLT_CLI_EXIT_INTERNAL;
        goto cleanup;
    }
    if (strcmp(ckpt, out_path) == 0 || strcmp(curve, out_path) == 0 || strcmp(curve, ckpt) == 0) {
        rlt_cli_error("--out, --checkpoint and --curve must be three different files");
        rc = RLT_CLI_EXIT_USAGE;
        goto cleanup;
    }
    const char *const outputs[][2] = {{"--out", out_path}, {"--checkpoint", ckpt}, {"--curve", curve}};
    for (size_t i = 0; i < RLT_CLI_ARRAY_LEN(outputs); i++)
        if (!dir_is_writable(outputs[i][1])) {
            rlt_cli_error("%s: cannot write '%s': its directory does not exist or is not writable", outputs[i][0],
                          outputs[i][1]);
            rc = RLT_CLI_EXIT_USAGE;
            goto cleanup;
        }
    if (o.resume_path && access(o.resume_path, R_OK) != 0) {
        rlt_cli_error("--resume: cannot read '%s': %s", o.resume_path, strerror(errno));
        rc = RLT_CLI_EXIT_USAGE;
        goto cleanup;
    }
    rlt_status st = rlt_shape_set_load(o.dataset_name, &set, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("--dataset: %s", d.message);
        rc = st == RLT_STATUS_OUT_OF_MEMORY ? RLT_CLI_EXIT_INTERNAL : RLT_CLI_EXIT_USAGE;
        goto cleanup;
    }
    if (o.init_name && (st = rlt_policy_load(o.init_name, &init, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("--init: %s", d.message);
        rc = st == RLT_STATUS_OUT_OF_MEMORY ? RLT_CLI_EXIT_INTERNAL : RLT_CLI_EXIT_USAGE;
        goto cleanup;
    }
    o.init = init;
    progress_ctx pc = {.is_tty = isatty(STDERR_FILENO) != 0};
    o.shapes = &set;
    o.checkpoint_path = ckpt;
    o.curve_path = curve;
    o.command_line = cmd;
    o.stop = &rlt_cli_stop_requested;
    o.progress = show_progress;
    o.progress_ctx = &pc;
    rlt_cli_interrupt_catch();
    st = rlt_train(&o, &policy, &stats, &d);
    rlt_cli_interrupt_release();
    if (pc.is_drawn) fprintf(stderr, "\n");
    if (st == RLT_STATUS_OK && (st = rlt_policy_save(policy, out_path, &d)) != RLT_STATUS_OK)
        rlt_diag_prefix(&d, "--out");
    if (st != RLT_STATUS_OK) {
        bool has_ckpt = stats.n_checkpoints > 0; /* one written by this run */
        rlt_cli_error("%s%s%s%s", d.message, has_ckpt ? " (the last checkpoint is in " : "", has_ckpt ? ckpt : "",
                      has_ckpt ? ")" : "");
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if (rlt_cli_args_has(args, "json")) {
        if (!(json = format_json(&stats, &o, out_path))) {
            rlt_cli_error("out of memory formatting the result");
            rc = RLT_CLI_EXIT_INTERNAL;
            goto cleanup;
        }
        printf("%s\n", json);
    } else {
        print_summary(&stats, &o, out_path);
    }
    rc = RLT_CLI_EXIT_OK;
cleanup:
    cJSON_free(json);
    rlt_policy_destroy(policy);
    rlt_policy_destroy(init);
    rlt_shape_set_free(&set);
    free(ckpt);
    free(curve);
    free(cmd);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_train = {
    .name = "train",
    .brief = "trains a LoopTune policy (DQN or PPO) on a shape dataset",
    .synopsis = "--dataset FILE --steps N --out FILE [--algo dqn|ppo] [--resume CKPT | --init POLICY] [options]",
    .summary = "Trains a policy for the LoopTune env (rltune env, rltune optimize) on the training\n"
               "shapes of a dataset (rltune gen-dataset): episodes of --episode-steps actions on --envs\n"
               "shapes at a time, every new state built, run and checked, all of a step's new states\n"
               "measured in one batch. Writes the policy (--out), a checkpoint every --checkpoint-every\n"
               "steps, at the end and on Ctrl-C, and the reward curve (SVG). --resume continues a\n"
               "checkpoint's run to --steps in all. --init fine-tunes a policy by PPO (rltune imitate's\n"
               "cloned policy, say): the actor starts as its network.",
    .details = "examples:\n"
               "  rltune gen-dataset --kind mm --dims 64:256:16 --out mm.shapes\n"
               "  rltune train --dataset mm.shapes --algo dqn --steps 20000 --out looptune.rlp\n"
               "  rltune train --dataset mm.shapes --steps 40000 --out looptune.rlp --resume looptune.rlp.ckpt\n"
               "  rltune train --dataset mm.shapes --algo ppo --init cloned.rlp --steps 2000 --out tuned.rlp\n"
               "More in docs/cli.md and docs/training.md.\n",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(train_opts),
    .opts = train_opts,
    .run = run_train,
};
