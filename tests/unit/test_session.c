/* Unit tests of the tuning session (src/search/session.c, measurers.c,
 * tune.c): a session stepped batch by batch does what one rlt_tune call
 * does (the same proposals, curve and records); proposers are asked in
 * turn and every one hears every batch; the counts follow where scores came
 * from; the trials budget, early stopping, a stop request and exhausted
 * proposers end the search; the recorded measurer reads back what it
 * stored and stores nothing twice. A synthetic measurer (a score made from
 * the configuration) stands in for measuring where the test is about the
 * session, not the kernels. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/fixtures.h"
#include "../common/leaks.h"
#include "../common/tmp.h"
#include "../common/tuners.h"
#include "search/tune.h"

/* The test's own directory (tmp.h), made when a test first needs it. */
static char temp_dir[] = "/tmp/rlt_session_XXXXXX";

TestSuite(session, .fini = tmp_dir_remove_used, .timeout = 300);

/* A path in the test's own directory, in tmp_path_in's buffers. */
static const char *temp_path(const char *name) { return tmp_path_in(tmp_dir_use(temp_dir), name); }

/* ---- a synthetic measurer --------------------------------------------------- */

typedef struct synthetic {
    const rlt_space *space;
    int n_calls, n_measured;
    int fail_every;                   /* > 0: every such configuration index fails */
    const rlt_record_target *target;  /* not NULL: each trial's record is filled, for the recorded layer */
} synthetic;

static rlt_status synthetic_measure(rlt_measurer *m, int n, rlt_trial *trials, const rlt_measure_ctx *ctx,
                                    rlt_diag *diag)
{
    synthetic *s = m->state;
    s->n_calls++;
    for (int i = 0; i < n; i++) {
        rlt_trial *t = &trials[i];
        if (t->source != RLT_TRIAL_PENDING) continue;
        uint64_t index = rlt_space_index_of(s->space, &t->config);
        bool is_failed = s->fail_every > 0 && index % (uint64_t)s->fail_every == 0;
        t->source = RLT_TRIAL_MEASURED;
        t->status = is_failed ? RLT_STATUS_WRONG_ANSWER : RLT_STATUS_OK;
        t->score = is_failed ? 0 : 1.0 + (double)(index % 97);
        t->time_ms = is_failed ? 0 : 1.0 / t->score;
        s->n_measured++;
        if (!s->target) continue;
        rlt_record *r = &t->record;
        memset(r, 0, sizeof *r);
        snprintf(r->spec, sizeof r->spec, "%s", s->space->op->spec);
        r->target = *s->target;
        rlt_str key;
        rlt_str_init(&key);
        rlt_space_config_key(s->space, &t->config, &key);
        snprintf(r->config, sizeof r->config, "%s", key.data);
        rlt_str_free(&key);
        snprintf(r->tuner, sizeof r->tuner, "synthetic");
        r->status = t->status;
        r->gflops = t->score;
        r->time_min_ms = r->time_median_ms = t->time_ms;
        r->created_s = 1e9 + s->n_measured;
    }
    return RLT_STATUS_OK;
}

static void synthetic_destroy(rlt_measurer *m) { (void)m; }

static const rlt_measurer_ops k_synthetic_ops = {"synthetic", synthetic_measure, NULL, synthetic_destroy};

static rlt_measurer *synthetic_measurer(synthetic *state)
{
    rlt_measurer *m = calloc(1, sizeof *m);
    cr_assert_not_null(m);
    m->ops = &k_synthetic_ops;
    m->state = state;
    return m;
}

/* A session over op's tuner-test space with a "random" tuner. */
static rlt_session *session_make(const rlt_op *op, const rlt_space *space, const rlt_session_opts *so,
                                 const char *tuner, synthetic *syn)
{
    rlt_session *s = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_session_create(op, space, so, &s, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_proposer *p = NULL;
    rlt_tuner_opts to = {.seed = 3};
    cr_assert_eq(rlt_proposer_tuner_create(rlt_session_space(s), tuner, &to, &p, &d), RLT_STATUS_OK, "%s",
                 d.message);
    cr_assert_eq(rlt_session_add_proposer(s, p, &d), RLT_STATUS_OK);
    syn->space = rlt_session_space(s);
    rlt_session_set_measurer(s, synthetic_measurer(syn));
    return s;
}

static void run_to_end(rlt_session *s)
{
    rlt_diag d = {0};
    while (!rlt_session_is_done(s)) cr_assert_eq(rlt_session_step(s, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_session_finish(s, &d), RLT_STATUS_OK, "%s", d.message);
}

Test(session, steps_take_batches_until_the_trials_are_spent)
{
    rlt_op *op = fixture_op("matmul:M=16,N=16,K=16");
    rlt_space space;
    tuner_space(op, &space);
    synthetic syn = {.fail_every = 5};
    rlt_session *s = session_make(op, &space, &(rlt_session_opts){.n_trials = 21, .batch_size = 8}, "random", &syn);
    rlt_diag d = {0};
    int sizes[3];
    for (int i = 0; i < 3; i++) {
        cr_assert_not(rlt_session_is_done(s));
        cr_assert_eq(rlt_session_step(s, &d), RLT_STATUS_OK, "%s", d.message);
        rlt_session_last_batch(s, &sizes[i]);
    }
    cr_assert(sizes[0] == 8 && sizes[1] == 8 && sizes[2] == 5, "batches of %d, %d, %d", sizes[0], sizes[1], sizes[2]);
    cr_assert(rlt_session_is_done(s));
    cr_assert_eq(rlt_session_step(s, &d), RLT_STATUS_INVALID_ARGUMENT, "a step after the end");
    cr_assert_eq(rlt_session_finish(s, &d), RLT_STATUS_OK);
    const rlt_tune_result *r = rlt_session_result(s);
    cr_assert_eq(r->n_trials, 21);
    cr_assert_eq(r->n_measured, 21);
    cr_assert_eq(syn.n_measured, 21);
    cr_assert_gt(r->n_failed, 0);
    cr_assert_eq(r->n_final, 0, "no final pick without a measurer that measures again");
    /* the curve is the best so far, and ends at the best */
    for (int i = 1; i < r->n_trials; i++) cr_assert_geq(r->curve[i], r->curve[i - 1]);
    cr_assert_eq(r->curve[20], r->best_gflops);
    cr_assert_gt(r->best_gflops, 0);
    cr_assert_neq(r->best_config[0], '\0');
    rlt_session_destroy(s);
    rlt_op_destroy(op);
    assert_no_leaks();
}

Test(session, early_stopping_a_stop_request_and_a_dry_tuner_end_the_search)
{
    rlt_op *op = fixture_op("matmul:M=3,N=2,K=2");
    rlt_space space;
    tuner_space(op, &space);
    /* grid over a small space: it runs dry */
    synthetic syn = {0};
    rlt_session *s = session_make(op, &space, &(rlt_session_opts){.n_trials = 100000, .batch_size = 16}, "grid", &syn);
    run_to_end(s);
    const rlt_tune_result *r = rlt_session_result(s);
    cr_assert(r->was_exhausted);
    cr_assert_lt(r->n_trials, 100000);
    rlt_session_destroy(s);

    /* early stopping: 5 trials without a better one */
    syn = (synthetic){0};
    s = session_make(op, &space, &(rlt_session_opts){.n_trials = 100000, .batch_size = 1, .early_stopping = 5},
                     "random", &syn);
    run_to_end(s);
    r = rlt_session_result(s);
    cr_assert(r->was_stopped_early);
    int last_better = 0;
    for (int i = 1; i < r->n_trials; i++)
        if (r->curve[i] > r->curve[i - 1]) last_better = i;
    cr_assert_eq(r->n_trials - 1 - last_better, 5, "stopped %d trials after the last better one",
                 r->n_trials - 1 - last_better);
    rlt_session_destroy(s);

    /* a stop request: nothing more is measured */
    volatile sig_atomic_t stop = 0;
    syn = (synthetic){0};
    s = session_make(op, &space, &(rlt_session_opts){.n_trials = 64, .batch_size = 4, .stop = &stop}, "random", &syn);
    rlt_diag d = {0};
    cr_assert_eq(rlt_session_step(s, &d), RLT_STATUS_OK);
    stop = 1;
    cr_assert_eq(rlt_session_step(s, &d), RLT_STATUS_OK);
    cr_assert(rlt_session_is_done(s));
    cr_assert(rlt_session_result(s)->was_stopped);
    cr_assert_eq(rlt_session_result(s)->n_trials, 4);
    cr_assert_eq(syn.n_calls, 1);
    rlt_session_destroy(s);
    rlt_op_destroy(op);
}

/* A queue proposes first, alone; the tuner proposes after it, never one
 * of the queue's, and hears the queue's batches too. */
Test(session, the_queue_drains_before_the_tuner_proposes)
{
    rlt_op *op = fixture_op("matmul:M=16,N=16,K=16");
    rlt_space space;
    tuner_space(op, &space);
    rlt_session *s = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_session_create(op, &space, &(rlt_session_opts){.n_trials = 40, .batch_size = 16}, &s, &d),
                 RLT_STATUS_OK);
    const rlt_space *sp = rlt_session_space(s);
    rlt_config seeds[8];
    int n_seeds = rlt_space_seeds(sp, 8, seeds);
    cr_assert_gt(n_seeds, 2);
    rlt_proposer *queue = NULL, *tuner = NULL;
    cr_assert_eq(rlt_proposer_queue_create(sp, 0, NULL, n_seeds, seeds, &queue, &d), RLT_STATUS_OK);
    rlt_tuner_opts to = {.seed = 1};
    to.claimed_configs = rlt_proposer_queue_configs(queue, &to.n_claimed);
    cr_assert_eq(rlt_proposer_tuner_create(sp, "ga", &to, &tuner, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_session_add_proposer(s, queue, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_session_add_proposer(s, tuner, &d), RLT_STATUS_OK);
    synthetic syn = {.space = sp};
    rlt_session_set_measurer(s, synthetic_measurer(&syn));
    cr_assert_eq(rlt_session_step(s, &d), RLT_STATUS_OK);
    int n = 0;
    const rlt_trial *batch = rlt_session_last_batch(s, &n);
    cr_assert_eq(n, n_seeds, "the queue's batch holds the queue alone");
    for (int i = 0; i < n; i++)
        cr_assert_eq(rlt_space_index_of(sp, &batch[i].config), rlt_space_index_of(sp, &seeds[i]));
    while (!rlt_session_is_done(s)) {
        cr_assert_eq(rlt_session_step(s, &d), RLT_STATUS_OK, "%s", d.message);
        batch = rlt_session_last_batch(s, &n);
        for (int i = 0; i < n; i++)
            for (int k = 0; k < n_seeds; k++)
                cr_assert_neq(rlt_space_index_of(sp, &batch[i].config), rlt_space_index_of(sp, &seeds[k]),
                              "the tuner proposed a queued configuration");
    }
    cr_assert_eq(rlt_session_result(s)->n_trials, 40);
    rlt_session_destroy(s);
    rlt_op_destroy(op);
}

/* Configurations offered from outside (a sibling task's best) lead the
 * next batch, the tuner filling the rest; each is taken once. */
Test(session, offered_configurations_lead_the_next_batch_once)
{
    rlt_op *op = fixture_op("matmul:M=16,N=16,K=16");
    rlt_space space;
    tuner_space(op, &space);
    synthetic syn = {0};
    rlt_session *s = session_make(op, &space, &(rlt_session_opts){.n_trials = 64, .batch_size = 8}, "random", &syn);
    const rlt_space *sp = rlt_session_space(s);
    rlt_diag d = {0};
    cr_assert_eq(rlt_session_step(s, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_config seeds[3];
    cr_assert_eq(rlt_space_seeds(sp, 3, seeds), 3);
    int n = 0, total = 0;
    for (int i = 0; i < 3; i++) {
        rlt_str key;
        rlt_str_init(&key);
        rlt_space_config_key(sp, &seeds[i], &key);
        cr_assert_eq(rlt_session_offer(s, key.data, &n, &d), RLT_STATUS_OK);
        cr_assert_eq(n, 1, "one space: the key is one configuration");
        total += n;
        cr_assert_eq(rlt_session_offer(s, key.data, &n, &d), RLT_STATUS_OK);
        cr_assert_eq(n, 0, "offered twice: taken once");
        rlt_str_free(&key);
    }
    cr_assert_eq(rlt_session_offer(s, "v1;vec=nosuch", &n, &d), RLT_STATUS_OK);
    cr_assert_eq(n, 0, "a key of no kindred space: nothing");
    cr_assert_eq(rlt_session_step(s, &d), RLT_STATUS_OK, "%s", d.message);
    const rlt_trial *batch = rlt_session_last_batch(s, &n);
    cr_assert_eq(n, 8, "the tuner fills the batch");
    for (int i = 0; i < total; i++)
        cr_assert_eq(rlt_space_index_of(sp, &batch[i].config), rlt_space_index_of(sp, &seeds[i]));
    cr_assert_eq(rlt_session_result(s)->n_offered, total);
    cr_assert_eq(rlt_session_step(s, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_session_result(s)->n_offered, total, "offered once, proposed once");
    cr_assert_eq(rlt_session_result(s)->n_trials, 24);
    rlt_session_destroy(s);
    rlt_op_destroy(op);
}

/* ---- the recorded measurer ------------------------------------------------- */

/* A second session over the same records reads every configuration back
 * and stores nothing; a plan's session reads back only its own proposer's. */
Test(session, recorded_reads_back_what_it_stored)
{
    rlt_op *op = fixture_op("matmul:M=16,N=16,K=16");
    rlt_space space;
    tuner_space(op, &space);
    rlt_db *db = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_open(temp_path("rec.db"), NULL, &db, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_record_target target;
    cr_assert_eq(rlt_record_target_parse("cpu=test;vec=8;threads=1;cc=gcc", &target, &d), RLT_STATUS_OK);
    for (int run = 0; run < 2; run++) {
        rlt_session *s = NULL;
        cr_assert_eq(rlt_session_create(op, &space, &(rlt_session_opts){.n_trials = 12, .batch_size = 4}, &s, &d),
                     RLT_STATUS_OK);
        rlt_proposer *p = NULL;
        cr_assert_eq(rlt_proposer_tuner_create(rlt_session_space(s), "random", &(rlt_tuner_opts){.seed = 9}, &p, &d),
                     RLT_STATUS_OK);
        cr_assert_eq(rlt_session_add_proposer(s, p, &d), RLT_STATUS_OK);
        synthetic syn = {.space = rlt_session_space(s), .fail_every = 3, .target = &target};
        rlt_measurer *m = synthetic_measurer(&syn), *rec = NULL;
        cr_assert_eq(rlt_measurer_recorded_create(db, op, rlt_session_space(s), &target, NULL, m, &rec, &d),
                     RLT_STATUS_OK);
        rlt_session_set_measurer(s, rec);
        run_to_end(s);
        const rlt_tune_result *r = rlt_session_result(s);
        cr_assert_eq(r->n_trials, 12);
        cr_assert_eq(r->n_measured, run == 0 ? 12 : 0, "run %d measured %d", run, r->n_measured);
        cr_assert_eq(r->n_from_db, run == 0 ? 0 : 12);
        cr_assert_eq(syn.n_measured, run == 0 ? 12 : 0);
        rlt_session_destroy(s);
    }
    rlt_db_close(db);
    rlt_op_destroy(op);
}

/* ---- one call and many steps ------------------------------------------------ */

/* The configurations of the records of `spec` in `path`, oldest first. */
typedef struct config_list {
    char configs[64][1024];
    rlt_status status[64];
    int n;
} config_list;

static bool add_config(const rlt_record *r, void *ctx)
{
    config_list *l = ctx;
    if (l->n < 64) {
        snprintf(l->configs[l->n], sizeof l->configs[l->n], "%s", r->config);
        l->status[l->n] = r->status;
    }
    l->n++;
    return true;
}

static config_list *records_of(const char *path, const char *spec)
{
    rlt_db *db = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_open(path, &(rlt_db_opts){.is_read_only = true}, &db, &d), RLT_STATUS_OK, "%s", d.message);
    config_list *l = calloc(1, sizeof *l);
    cr_assert_eq(rlt_db_history(db, spec, NULL, add_config, l, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_db_close(db);
    return l;
}

/* Live, with the records: rlt_tune in one call, and rlt_tune_start's
 * session stepped by hand, store the same configurations in the same
 * order (a random tuner's proposals do not depend on the noisy times). */
Test(session, stepped_batch_by_batch_it_stores_what_one_call_stores)
{
    rlt_op *op = fixture_op("matmul:M=8,N=8,K=8");
    const char *paths[2] = {strdup(temp_path("one.db")), strdup(temp_path("steps.db"))};
    rlt_tune_opts o = {.tuner = "random", .n_trials = 14, .batch_size = 4, .seed = 21, .n_seeds = 3, .n_final = 2,
                       .build = {.cflags = "-O1 -march=native"}, .run = {.repeat = 1, .min_repeat_ms = 0.5}};
    rlt_diag d = {0};
    for (int way = 0; way < 2; way++) {
        rlt_db *db = NULL;
        cr_assert_eq(rlt_db_open(paths[way], NULL, &db, &d), RLT_STATUS_OK, "%s", d.message);
        o.db = db;
        rlt_tune_result r = {0};
        if (way == 0) {
            cr_assert_eq(rlt_tune(op, &o, &r, &d), RLT_STATUS_OK, "%s", d.message);
        } else {
            rlt_session *s = NULL;
            cr_assert_eq(rlt_tune_start(op, &o, &s, &d), RLT_STATUS_OK, "%s", d.message);
            int n_steps = 0;
            while (!rlt_session_is_done(s)) {
                cr_assert_eq(rlt_session_step(s, &d), RLT_STATUS_OK, "%s", d.message);
                n_steps++;
                cr_assert_eq(rlt_session_result(s)->n_trials, RLT_MIN(14, n_steps == 1 ? 3 : 3 + 4 * (n_steps - 1)),
                             "after step %d: the seeds alone, then batches of 4", n_steps);
            }
            cr_assert_eq(rlt_session_finish(s, &d), RLT_STATUS_OK, "%s", d.message);
            rlt_session_take_result(s, &r);
            rlt_session_destroy(s);
        }
        cr_assert_eq(r.n_trials, 14);
        cr_assert_eq(r.n_seeds, 3);
        cr_assert_eq(r.n_final, 2);
        rlt_tune_result_free(&r);
        rlt_db_close(db);
    }
    config_list *a = records_of(paths[0], op->spec), *b = records_of(paths[1], op->spec);
    cr_assert_eq(a->n, 16, "14 trials and 2 final picks");
    cr_assert_eq(b->n, 16);
    /* which two the final pick measures again follows the noisy times */
    for (int i = 0; i < 14; i++) cr_assert_str_eq(a->configs[i], b->configs[i], "record %d", i);
    free(a);
    free(b);
    free((char *)paths[0]);
    free((char *)paths[1]);
    rlt_op_destroy(op);
}
