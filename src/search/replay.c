/*
 * replay.c - replayed measurement (replay.h): a dataset (dataset.h) loaded
 * into a table indexed by configuration, with the space restricted to its
 * configurations (rlt_replay_open, rlt_replay_find), and the session's
 * measurer that answers from it (rlt_measurer_replay_create).
 */
#include "search/replay.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct rlt_replay {
    rlt_dataset_info info;
    rlt_space space;            /* the dataset's, restricted to `subset` */
    rlt_space_subset *subset;   /* owned */
    rlt_replay_entry *entries;  /* one per member, by the member's index in `space` */
};

/* ---- replay --------------------------------------------------------------- */

/* What loading the records gathers: the configurations of the dataset's
 * records and their measurements, in history order (oldest first). */
typedef struct load_ctx {
    const rlt_space *space; /* unrestricted */
    const char *path;
    rlt_config *configs;
    rlt_replay_entry *entries;
    int n, cap;
    int n_invalid; /* records of configurations no longer valid in the space */
    rlt_status st;
    rlt_diag *diag;
} load_ctx;

static bool load_record(const rlt_record *rec, void *ctx)
{
    load_ctx *l = ctx;
    if (strcmp(rec->tuner, RLT_DATASET_PROPOSER) != 0) return true; /* not the dataset's own */
    rlt_config c;
    rlt_diag d = {0};
    if (rlt_space_config_parse(l->space, rec->config, &c, &d) != RLT_STATUS_OK) {
        l->st = rlt_fail(l->diag, RLT_STATUS_INVALID_ARGUMENT,
                         "dataset '%s', record %" PRId64 ": %s; its configurations are not of this rltune's space",
                         l->path, rec->id, d.message);
        return false;
    }
    if (!rlt_space_is_valid(l->space, &c)) {
        /* A configuration the space has since ruled out (say, a register
         * tile that no longer fits): no tuner can propose it, so the replay
         * leaves it out, and says how many. */
        l->n_invalid++;
        return true;
    }
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 1024;
        rlt_config *configs = rlt_realloc(l->configs, sizeof *configs * (size_t)cap);
        if (configs) l->configs = configs;
        rlt_replay_entry *entries = rlt_realloc(l->entries, sizeof *entries * (size_t)cap);
        if (entries) l->entries = entries;
        if (!configs || !entries) {
            l->st = rlt_fail(l->diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory loading dataset '%s'", l->path);
            return false;
        }
        l->cap = cap;
    }
    rlt_replay_entry *e = &l->entries[l->n];
    e->status = rec->status;
    e->time_min_ms = rec->time_min_ms;
    e->time_median_ms = rec->time_median_ms;
    e->gflops = rec->gflops;
    l->configs[l->n++] = c;
    return true;
}

rlt_status rlt_replay_open(const char *path, const rlt_op *op, const char *run_target, rlt_replay **out,
                           rlt_diag *diag)
{
    RLT_ASSERT(path && op && out);
    *out = NULL;
    rlt_db *db = NULL;
    bool is_dataset = false;
    load_ctx l = {.path = path, .diag = diag};
    rlt_replay *r = rlt_calloc(1, sizeof *r);
    rlt_status st = RLT_STATUS_OK;
    if (!r) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory opening dataset '%s'", path);
        goto cleanup;
    }
    rlt_dataset_info *info = &r->info;
    if ((st = rlt_db_open(path, &(rlt_db_opts){.is_read_only = true}, &db, diag)) != RLT_STATUS_OK) goto cleanup;
    if ((st = rlt_dataset_info_get(db, path, info, &is_dataset, diag)) != RLT_STATUS_OK) goto cleanup;
    if (!is_dataset) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "'%s' is a records database but not a dataset (it has no dataset description): make one "
                      "with 'rltune dataset --op SPEC --out FILE'",
                      path);
        goto cleanup;
    }
    if (strcmp(info->spec, op->spec) != 0) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "dataset '%s' is of op %s, not %s: replay it for its own op, or make a dataset of this one",
                      path, info->spec, op->spec);
        goto cleanup;
    }
    /* A run must choose what the dataset's run chose (threads, compiler and
     * flags); the machine's part (CPU, vector width) and how its kernels
     * were made and timed (weights, codegen) may differ: a replay answers
     * with what was measured, as it was measured. */
    rlt_record_target dataset_target, run;
    if ((st = rlt_record_target_parse(info->target, &dataset_target, diag)) != RLT_STATUS_OK) {
        rlt_diag_prefix(diag, "dataset '%s'", path);
        st = RLT_STATUS_INVALID_ARGUMENT;
        goto cleanup;
    }
    if (run_target && (st = rlt_record_target_parse(run_target, &run, diag)) != RLT_STATUS_OK) goto cleanup;
    if (run_target && (run.n_threads != dataset_target.n_threads || strcmp(run.cc, dataset_target.cc) != 0)) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "dataset '%s' was measured with threads=%d;cc=%s, this run would measure with threads=%d;cc=%s: "
                      "give the --threads, --cc and --cflags of the dataset run",
                      path, dataset_target.n_threads, dataset_target.cc, run.n_threads, run.cc);
        goto cleanup;
    }
    rlt_space_opts sopts = {.n_threads = info->n_threads,
                            .vector_floats = info->vector_floats,
                            .has_clang = info->has_clang,
                            .no_clang = !info->has_clang};
    if ((st = rlt_space_create(op, &sopts, &r->space, diag)) != RLT_STATUS_OK) goto cleanup;
    /* the size the dataset was planned on: its sub-space's, with fixed knobs */
    rlt_space_fixing fixing;
    if ((st = rlt_space_fixing_parse(&r->space, info->fixed, &fixing, diag)) != RLT_STATUS_OK) {
        rlt_diag_prefix(diag, "dataset '%s'", path);
        st = RLT_STATUS_INVALID_ARGUMENT;
        goto cleanup;
    }
    if (rlt_space_fixing_size(&r->space, &fixing) != info->space_size) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "dataset '%s' was measured on a %sspace of %" PRIu64 " configurations; this rltune's %sspace "
                      "of %s has %" PRIu64 ": it cannot be replayed here",
                      path, fixing.n_fixed ? "sub-" : "", info->space_size, fixing.n_fixed ? "sub-" : "", op->spec,
                      rlt_space_fixing_size(&r->space, &fixing));
        goto cleanup;
    }
    l.space = &r->space;
    if ((st = rlt_db_history(db, info->spec, info->target, load_record, &l, diag)) != RLT_STATUS_OK) goto cleanup;
    if ((st = l.st) != RLT_STATUS_OK) goto cleanup;
    if ((st = rlt_space_subset_create(&r->space, l.n, l.configs, &r->subset, diag)) != RLT_STATUS_OK) goto cleanup;
    int n = rlt_space_subset_size(r->subset);
    if (l.n_invalid > 0)
        rlt_log(RLT_LOG_WARN,
                "dataset '%s': %d of its records are of configurations this rltune's space no longer allows; "
                "the replay leaves them out",
                path, l.n_invalid);
    if (n + l.n_invalid < info->n_configs) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "dataset '%s' is unfinished: %d of its %d configurations are measured; run the 'rltune "
                      "dataset' that started it again to finish it",
                      path, n + l.n_invalid, info->n_configs);
        goto cleanup;
    }
    if (n + l.n_invalid > info->n_configs) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "dataset '%s' holds %d configurations, more than the %d its description plans: it was "
                      "written by something other than 'rltune dataset'",
                      path, n, info->n_configs);
        goto cleanup;
    }
    rlt_space_restrict(&r->space, r->subset);
    r->entries = rlt_calloc((size_t)(n > 0 ? n : 1), sizeof *r->entries);
    if (!r->entries) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory loading dataset '%s'", path);
        goto cleanup;
    }
    /* oldest first: a configuration's latest record is the one kept */
    for (int i = 0; i < l.n; i++) r->entries[rlt_space_index_of(&r->space, &l.configs[i])] = l.entries[i];
    *out = r;
    r = NULL;
cleanup:
    rlt_free(l.configs);
    rlt_free(l.entries);
    rlt_db_close(db);
    rlt_replay_close(r);
    return st;
}

void rlt_replay_close(rlt_replay *r)
{
    if (!r) return;
    rlt_space_subset_destroy(r->subset);
    rlt_free(r->entries);
    rlt_free(r);
}

const rlt_dataset_info *rlt_replay_info(const rlt_replay *r) { return &r->info; }

const rlt_space *rlt_replay_space(const rlt_replay *r) { return &r->space; }

const rlt_replay_entry *rlt_replay_find(const rlt_replay *r, const rlt_config *c)
{
    uint64_t index = rlt_space_index_of(&r->space, c);
    return index < (uint64_t)rlt_space_subset_size(r->subset) ? &r->entries[index] : NULL;
}

/* ---- the measurer ------------------------------------------------------------ */

static rlt_status replay_measure(rlt_measurer *m, int n, rlt_trial *trials, const rlt_measure_ctx *ctx,
                                 rlt_diag *diag)
{
    const rlt_replay *r = m->state;
    for (int i = 0; i < n; i++) {
        rlt_trial *t = &trials[i];
        if (t->source != RLT_TRIAL_PENDING) continue;
        const rlt_replay_entry *e = rlt_replay_find(r, &t->config);
        if (!e) {
            t->source = RLT_TRIAL_ABSENT;
            t->status = RLT_STATUS_OK;
            t->score = t->time_ms = 0;
            continue;
        }
        bool is_ok = e->status == RLT_STATUS_OK;
        t->source = RLT_TRIAL_REPLAYED;
        t->status = e->status;
        t->score = is_ok ? e->gflops : 0.0;
        t->time_ms = is_ok ? e->time_median_ms : 0.0;
    }
    return RLT_STATUS_OK;
}

static void replay_destroy(rlt_measurer *m) { (void)m; /* the replay is borrowed */ }

static const rlt_measurer_ops k_replay_ops = {"replay", replay_measure, NULL, replay_destroy};

rlt_status rlt_measurer_replay_create(const rlt_replay *replay, rlt_measurer **out, rlt_diag *diag)
{
    *out = rlt_calloc(1, sizeof **out);
    if (!*out) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a measurer");
    (*out)->ops = &k_replay_ops;
    (*out)->state = (void *)replay;
    return RLT_STATUS_OK;
}
