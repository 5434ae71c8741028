/* Unit tests of the search baselines over the LoopTune env
 * (src/policy/search.h): greedy with 1- and 2-step lookahead, beam, random.
 *  - greedy 1-step takes the best single transforming action each round,
 *    moving the cursor to it; 2-step finds a pair that needs a worse first
 *    action, which 1-step cannot; the time budget stops it after a round;
 *  - beam of width 4 beats width 1 on a designed trap, and is never worse
 *    on pseudo-random scores;
 *  - random search: reproducible per seed, different between seeds, the
 *    time budget kept roughly, at least one walk;
 *  - for every kind: the result is the best state evaluated, its trace
 *    replays (reset, step) to its nest and GFLOP/s, the env is left at it,
 *    the counters add up; failed kernels are not the result; bad options
 *    and envs refused; a failing evaluator propagates and leaves the env at
 *    the start; out of memory at every allocation.
 *
 * States are scored by synthetic evaluators (functions of the schedule
 * text, or of the nest's hash): nothing is compiled, everything is
 * deterministic. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "policy/search.h"

#include "../common/leaks.h"

#define OP "matmul:M=16,N=16,K=16" /* loops i, j, k; splits by 2, 4, 8 */
#define PEAK 100.0

/* ---- a synthetic evaluator ---------------------------------------------- */

typedef double (*score_fn)(const char *body);

typedef struct synth {
    score_fn score;           /* GFLOP/s of a schedule's body (the text after its header line); NULL: from the hash */
    int n_calls;
    int fail_after;           /* > 0: calls after this many fail with IO_ERROR */
    rlt_status kernel_status; /* of every kernel but the start's */
    double max_gflops;        /* the most it returned */
} synth;

static rlt_status synth_evaluate(void *ctx, const rlt_env_eval_request *req, rlt_env_eval_result *out, rlt_diag *diag)
{
    synth *s = ctx;
    if (s->fail_after > 0 && s->n_calls >= s->fail_after)
        return rlt_fail(diag, RLT_STATUS_IO_ERROR, "the synthetic evaluator is broken");
    s->n_calls++;
    /* the state's schedule, less its header and the env's own accumulator (cache_write) */
    char body[1024] = "";
    const char *line = strchr(req->schedule, '\n');
    for (line = line ? line + 1 : ""; *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) + 1 : strlen(line);
        if (strncmp(line, "cache_write ", 12) != 0) strncat(body, line, RLT_MIN(n, sizeof body - strlen(body) - 1));
        line += n;
    }
    bool is_start = body[0] == '\0';
    out->gflops = s->score ? s->score(body) : 1.0 + (double)(req->nest_hash % 1000) / 100.0;
    out->status = is_start ? RLT_STATUS_OK : s->kernel_status;
    if (out->status != RLT_STATUS_OK) {
        snprintf(out->message, sizeof out->message, "synthetic failure");
        out->gflops = 0;
    }
    if (out->gflops > s->max_gflops) s->max_gflops = out->gflops;
    return RLT_STATUS_OK;
}

static bool has_line(const char *body, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = body; (p = strstr(p, line)) != NULL; p += n)
        if ((p == body || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0')) return true;
    return false;
}

/* Additive: unroll k +3, parallel i +2, split j 8 +1 over 1. */
static double score_additive(const char *body)
{
    return 1.0 + 3.0 * has_line(body, "unroll k") + 2.0 * has_line(body, "parallel i") +
           1.0 * has_line(body, "split j 8");
}

/* split j 8 and unroll j.i together 10; either alone (any unroll) is worse, 1 against 2. */
static double score_pair(const char *body)
{
    bool split = has_line(body, "split j 8");
    if (split && has_line(body, "unroll j.i")) return 10;
    return split || strstr(body, "unroll ") ? 1 : 2;
}

/* A trap: parallel i alone 3, and nothing after it better than 2; the way
 * to 10 goes through split j 8 (2.5), then unroll j.i. */
static double score_trap(const char *body)
{
    bool split = has_line(body, "split j 8");
    if (split && has_line(body, "unroll j.i")) return 10;
    if (split) return 2.5;
    return strcmp(body, "parallel i\n") == 0 ? 3 : 2;
}

static rlt_env *make_env(synth *s, int env_max_steps)
{
    rlt_env_opts o = {.peak_gflops = PEAK, .evaluate = synth_evaluate, .evaluate_ctx = s, .max_steps = env_max_steps};
    rlt_env *env = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_create(OP, &o, &env, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_env_reset(env, &d), RLT_STATUS_OK, "%s", d.message);
    return env;
}

static void search_ok(rlt_env *env, const rlt_env_search_opts *o, rlt_optimize_result *r)
{
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_search(env, o, r, &d), RLT_STATUS_OK, "%s search: %s", rlt_env_search_kind_str(o->kind),
                 d.message);
}

static void assert_trace(const rlt_optimize_result *r, const int *want, int n_want)
{
    char got[1024] = "", wanted[1024] = "";
    for (int i = 0; i < r->n_trace; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), " %s", rlt_env_action_name(r->trace[i]));
    for (int i = 0; i < n_want; i++)
        snprintf(wanted + strlen(wanted), sizeof wanted - strlen(wanted), " %s", rlt_env_action_name(want[i]));
    cr_assert_str_eq(got, wanted, "trace:%s\nwanted:%s", got, wanted);
}

/* The result is the best state evaluated; its trace replays from a reset
 * to its nest and GFLOP/s; env is left at it; the counters add up. */
static void assert_result(rlt_env *env, const synth *s, int calls_before, const rlt_optimize_result *r)
{
    double start = r->start_gflops;
    cr_assert_eq(r->gflops, s->max_gflops > start ? s->max_gflops : start, "%g is not the best seen (%g, start %g)",
                 r->gflops, s->max_gflops, start);
    cr_assert_eq(rlt_env_gflops(env), r->gflops);
    char *schedule = rlt_env_schedule(env), *tree = rlt_env_tree(env);
    cr_assert_str_eq(r->schedule, schedule);
    cr_assert_str_eq(r->tree, tree);
    rlt_free(schedule);
    rlt_free(tree);
    cr_assert_eq(r->n_evaluations, s->n_calls - calls_before);
    cr_assert_geq(r->n_steps, r->n_trace);
    cr_assert_geq(r->wall_s, 0.0);
    const rlt_nest *nest = rlt_env_nest(env);
    cr_assert_float_eq(r->time_ms, r->gflops > 0 ? nest->op->flops / (r->gflops * 1e6) : INFINITY, 1e-12);

    rlt_env *replay = NULL;
    cr_assert_eq(rlt_env_clone(env, &replay, NULL), RLT_STATUS_OK);
    cr_assert_eq(rlt_env_reset(replay, NULL), RLT_STATUS_OK);
    for (int i = 0; i < r->n_trace; i++) {
        rlt_diag d = {0};
        cr_assert_eq(rlt_env_step(replay, r->trace[i], NULL, NULL, &d), RLT_STATUS_OK, "trace[%d] %s: %s", i,
                     rlt_env_action_name(r->trace[i]), d.message);
    }
    cr_assert_eq(rlt_env_state_hash(replay), rlt_env_state_hash(env));
    cr_assert_eq(rlt_env_cursor(replay), rlt_env_cursor(env));
    cr_assert_eq(rlt_env_gflops(replay), r->gflops);
    rlt_env_destroy(replay);
}

/* One search on a fresh env of `s`, checked by assert_result. */
static void search_checked(synth *s, const rlt_env_search_opts *o, rlt_optimize_result *r)
{
    rlt_env *env = make_env(s, 0);
    int calls = s->n_calls;
    s->max_gflops = 0;
    search_ok(env, o, r);
    assert_result(env, s, calls, r);
    rlt_env_destroy(env);
}

#define TRACE(...) ((const int[]){__VA_ARGS__}), (int)(sizeof((const int[]){__VA_ARGS__}) / sizeof(int))
enum {
    UP = RLT_ENV_ACTION_UP,
    DOWN = RLT_ENV_ACTION_DOWN,
    SPLIT_8 = RLT_ENV_ACTION_SPLIT_8,
    UNROLL = RLT_ENV_ACTION_UNROLL,
    PARALLEL = RLT_ENV_ACTION_PARALLEL,
};

/* ---- names -------------------------------------------------------------- */

/* Two runs that must have gone the same way. */
static void assert_same_result(const rlt_optimize_result *a, const rlt_optimize_result *b)
{
    cr_assert_eq(a->gflops, b->gflops);
    cr_assert_eq(a->n_trace, b->n_trace);
    cr_assert_eq(memcmp(a->trace, b->trace, (size_t)a->n_trace * sizeof *a->trace), 0);
    cr_assert_eq(a->n_steps, b->n_steps);
}

Test(env_search, kind_names_round_trip)
{
    for (int k = 0; k < 3; k++) {
        rlt_env_search_kind got = RLT_ENV_SEARCH_RANDOM + 1;
        cr_assert(rlt_env_search_kind_from_str(rlt_env_search_kind_str((rlt_env_search_kind)k), &got));
        cr_assert_eq((int)got, k);
    }
    cr_assert_str_eq(rlt_env_search_kind_str(RLT_ENV_SEARCH_BEAM), "beam");
    cr_assert_str_eq(rlt_env_search_kind_str((rlt_env_search_kind)7), "unknown");
    rlt_env_search_kind k = RLT_ENV_SEARCH_BEAM;
    cr_assert(!rlt_env_search_kind_from_str("Greedy", &k));
    cr_assert(!rlt_env_search_kind_from_str(NULL, &k));
    cr_assert_eq(k, RLT_ENV_SEARCH_BEAM);
}

/* ---- greedy ------------------------------------------------------------- */

Test(env_search, greedy_takes_the_best_single_action_each_round)
{
    synth s = {.score = score_additive};
    rlt_optimize_result r = {0};
    /* unroll k (4) first, two cursor moves away; then parallel i (6); then split j 8 (7) */
    search_checked(&s, &(rlt_env_search_opts){.kind = RLT_ENV_SEARCH_GREEDY}, &r);
    cr_assert_eq(r.start_gflops, 1.0);
    cr_assert_eq(r.gflops, 7.0);
    assert_trace(&r, TRACE(DOWN, DOWN, UNROLL, UP, UP, PARALLEL, DOWN, SPLIT_8));
    rlt_optimize_result_free(&r);

    /* three actions allowed: the first round only */
    search_checked(&s, &(rlt_env_search_opts){.kind = RLT_ENV_SEARCH_GREEDY, .max_steps = 3}, &r);
    cr_assert_eq(r.gflops, 4.0);
    assert_trace(&r, TRACE(DOWN, DOWN, UNROLL));
    rlt_optimize_result_free(&r);

    /* two: unroll k is out of reach, parallel i is the best there is */
    search_checked(&s, &(rlt_env_search_opts){.kind = RLT_ENV_SEARCH_GREEDY, .max_steps = 2, .lookahead = 1}, &r);
    cr_assert_eq(r.gflops, 3.0);
    assert_trace(&r, TRACE(PARALLEL));
    rlt_optimize_result_free(&r);

    /* a spent budget stops it after the first round */
    search_checked(&s, &(rlt_env_search_opts){.kind = RLT_ENV_SEARCH_GREEDY, .time_budget_s = 1e-9}, &r);
    cr_assert_eq(r.gflops, 4.0);
    assert_trace(&r, TRACE(DOWN, DOWN, UNROLL));
    rlt_optimize_result_free(&r);
    assert_no_leaks();
}

Test(env_search, greedy_two_step_lookahead_sees_past_a_worse_action)
{
    synth s = {.score = score_pair};
    rlt_optimize_result r = {0};
    /* one step: every single action is neutral or worse */
    search_checked(&s, &(rlt_env_search_opts){.kind = RLT_ENV_SEARCH_GREEDY, .lookahead = 1}, &r);
    cr_assert_eq(r.gflops, 2.0);
    cr_assert_eq(r.n_trace, 0);
    rlt_optimize_result_free(&r);

    /* two: unroll j (worse), then split j 8 makes it unroll j.i; the shorter of the two ways */
    search_checked(&s, &(rlt_env_search_opts){.kind = RLT_ENV_SEARCH_GREEDY, .lookahead = 2}, &r);
    cr_assert_eq(r.gflops, 10.0);
    assert_trace(&r, TRACE(DOWN, UNROLL, SPLIT_8));
    cr_assert_gt(r.n_evaluations, 20);
    rlt_optimize_result_free(&r);

    /* two actions allowed: the pair (three) does not fit */
    search_checked(&s, &(rlt_env_search_opts){.kind = RLT_ENV_SEARCH_GREEDY, .lookahead = 2, .max_steps = 2}, &r);
    cr_assert_eq(r.gflops, 2.0);
    rlt_optimize_result_free(&r);
    assert_no_leaks();
}

Test(env_search, greedy_within_an_episode_limit)
{
    synth s = {.score = score_additive};
    rlt_env *env = make_env(&s, 4); /* the env's episode ends after 4 steps */
    rlt_optimize_result r = {0};
    s.max_gflops = 0;
    search_ok(env, &(rlt_env_search_opts){.kind = RLT_ENV_SEARCH_GREEDY, .lookahead = 2}, &r);
    assert_result(env, &s, 1, &r);
    cr_assert_leq(r.n_trace, 4);
    cr_assert_eq(r.gflops, 6.0); /* parallel i, down down unroll k */
    rlt_optimize_result_free(&r);
    rlt_env_destroy(env);
}

/* ---- beam --------------------------------------------------------------- */

Test(env_search, a_wider_beam_escapes_a_trap)
{
    synth s = {.score = score_trap};
    rlt_optimize_result r1 = {0}, r4 = {0};
    search_checked(&s, &(rlt_env_search_opts){.kind = RLT_ENV_SEARCH_BEAM, .beam_width = 1, .max_steps = 4}, &r1);
    cr_assert_eq(r1.gflops, 3.0);
    assert_trace(&r1, TRACE(PARALLEL));
    search_checked(&s, &(rlt_env_search_opts){.kind = RLT_ENV_SEARCH_BEAM, .beam_width = 4, .max_steps = 4}, &r4);
    cr_assert_eq(r4.gflops, 10.0);
    assert_trace(&r4, TRACE(DOWN, SPLIT_8, DOWN, UNROLL));
    cr_assert_gt(r4.n_evaluations, r1.n_evaluations);
    rlt_optimize_result_free(&r1);
    rlt_optimize_result_free(&r4);

    /* pseudo-random scores: width 4 is never worse than 1 here */
    synth h = {0};
    for (int steps = 1; steps <= 6; steps++) {
        search_checked(&h, &(rlt_env_search_opts){.kind = RLT_ENV_SEARCH_BEAM, .beam_width = 1, .max_steps = steps},
                       &r1);
        search_checked(&h, &(rlt_env_search_opts){.kind = RLT_ENV_SEARCH_BEAM, .beam_width = 4, .max_steps = steps},
                       &r4);
        cr_assert_geq(r4.gflops, r1.gflops, "%d steps", steps);
        cr_assert_leq(r1.n_trace, steps);
        cr_assert_leq(r4.n_trace, steps);
        rlt_optimize_result_free(&r1);
        rlt_optimize_result_free(&r4);
    }
    /* a spent budget: one level */
    search_checked(&h, &(rlt_env_search_opts){.kind = RLT_ENV_SEARCH_BEAM, .time_budget_s = 1e-9}, &r1);
    cr_assert_leq(r1.n_trace, 1);
    rlt_optimize_result_free(&r1);
    assert_no_leaks();
}

Test(env_search, beam_is_deterministic)
{
    synth h = {0};
    rlt_optimize_result a = {0}, b = {0};
    rlt_env_search_opts o = {.kind = RLT_ENV_SEARCH_BEAM, .beam_width = 3, .max_steps = 8};
    search_checked(&h, &o, &a);
    search_checked(&h, &o, &b);
    assert_same_result(&a, &b);
    cr_assert_gt(a.gflops, a.start_gflops);
    rlt_optimize_result_free(&a);
    rlt_optimize_result_free(&b);
}

/* ---- random ------------------------------------------------------------- */

Test(env_search, random_walks_are_reproducible_per_seed)
{
    synth h = {0};
    rlt_optimize_result a = {0}, b = {0}, c = {0};
    rlt_env_search_opts o = {.kind = RLT_ENV_SEARCH_RANDOM, .time_budget_s = 60, .max_walks = 3, .seed = 11};
    search_checked(&h, &o, &a);
    search_checked(&h, &o, &b);
    assert_same_result(&a, &b);
    cr_assert_eq(a.n_evaluations, b.n_evaluations);
    cr_assert_leq(a.n_steps, 3 * 10);
    cr_assert_gt(a.n_steps, 0);
    o.seed = 12;
    search_checked(&h, &o, &c);
    cr_assert(c.n_trace != a.n_trace || memcmp(a.trace, c.trace, (size_t)a.n_trace * sizeof *a.trace) != 0,
              "seeds 11 and 12 found the same trace");
    rlt_optimize_result_free(&a);
    rlt_optimize_result_free(&b);
    rlt_optimize_result_free(&c);

    /* one walk is the first walk of many: a seed fixes each walk */
    rlt_env_search_opts one = {.kind = RLT_ENV_SEARCH_RANDOM, .time_budget_s = 60, .max_walks = 1, .seed = 5};
    rlt_env_search_opts many = one;
    many.max_walks = 20;
    search_checked(&h, &one, &a);
    search_checked(&h, &many, &b);
    cr_assert_geq(b.gflops, a.gflops);
    cr_assert_eq(a.n_steps, 10);
    cr_assert_eq(b.n_steps, 200);
    rlt_optimize_result_free(&a);
    rlt_optimize_result_free(&b);
    assert_no_leaks();
}

Test(env_search, random_search_keeps_its_time_budget)
{
    synth h = {0};
    rlt_optimize_result r = {0};
    /* a spent budget still walks once (a batch of walks, in fact) */
    search_checked(&h, &(rlt_env_search_opts){.kind = RLT_ENV_SEARCH_RANDOM, .time_budget_s = 1e-9, .max_steps = 5},
                   &r);
    cr_assert_geq(r.n_steps, 5);
    cr_assert_leq(r.n_trace, 5);
    rlt_optimize_result_free(&r);
    /* a budget of 0.3 s: spent, and not by much more (loose: sanitizers and loaded machines) */
    search_checked(&h, &(rlt_env_search_opts){.kind = RLT_ENV_SEARCH_RANDOM, .time_budget_s = 0.3, .seed = 3}, &r);
    cr_assert_geq(r.wall_s, 0.3);
    cr_assert_lt(r.wall_s, 5.0);
    cr_assert_gt(r.n_steps, 80);
    rlt_optimize_result_free(&r);
    assert_no_leaks();
}

/* ---- what every kind shares --------------------------------------------- */

static const rlt_env_search_opts every_kind[] = {
    {.kind = RLT_ENV_SEARCH_GREEDY, .lookahead = 1},
    {.kind = RLT_ENV_SEARCH_GREEDY, .lookahead = 2, .max_steps = 4},
    {.kind = RLT_ENV_SEARCH_BEAM, .beam_width = 2},
    {.kind = RLT_ENV_SEARCH_RANDOM, .time_budget_s = 60, .max_walks = 10, .seed = 1},
};

Test(env_search, every_kind_returns_the_best_state_it_evaluated)
{
    for (size_t k = 0; k < RLT_ARRAY_LEN(every_kind); k++) {
        synth h = {0};
        rlt_optimize_result r = {0};
        search_checked(&h, &every_kind[k], &r); /* best seen, replays, env left there */
        cr_assert_gt(r.gflops, r.start_gflops, "kind %zu", k);
        cr_assert_gt(r.n_trace, 0);
        rlt_optimize_result_free(&r);
    }
    assert_no_leaks();
}

Test(env_search, failed_kernels_are_never_the_result)
{
    for (size_t k = 0; k < RLT_ARRAY_LEN(every_kind); k++) {
        /* every state but the start fails: the start is the result */
        synth f = {.kernel_status = RLT_STATUS_RUN_ERROR};
        rlt_optimize_result r = {0};
        search_checked(&f, &every_kind[k], &r);
        cr_assert_gt(r.start_gflops, 0.0);
        cr_assert_eq(r.gflops, r.start_gflops, "kind %zu", k);
        cr_assert_eq(r.n_trace, 0);
        rlt_optimize_result_free(&r);
    }
    assert_no_leaks();
}

Test(env_search, the_search_starts_where_the_env_is)
{
    synth s = {.score = score_additive};
    rlt_env *env = make_env(&s, 0);
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_reset_schedule(env, "unroll k\n", &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_env_step(env, RLT_ENV_ACTION_DOWN, NULL, NULL, &d), RLT_STATUS_OK);
    int calls = s.n_calls;
    s.max_gflops = 0;
    rlt_optimize_result r = {0};
    search_ok(env, &(rlt_env_search_opts){.kind = RLT_ENV_SEARCH_GREEDY}, &r);
    cr_assert_eq(r.start_gflops, 4.0);
    cr_assert_eq(r.gflops, 7.0);
    /* parallel i (6, one loop up) before split j 8 (5, at the cursor) */
    assert_trace(&r, TRACE(UP, PARALLEL, DOWN, SPLIT_8));
    cr_assert_eq(r.n_evaluations, s.n_calls - calls);
    rlt_optimize_result_free(&r);
    rlt_env_destroy(env);
}

/* ---- errors ------------------------------------------------------------- */

static void assert_refused(rlt_env *env, const rlt_env_search_opts *o, const char *what)
{
    rlt_diag d = {0};
    rlt_optimize_result r = {0};
    cr_assert_eq(rlt_env_search(env, o, &r, &d), RLT_STATUS_INVALID_ARGUMENT, "%s", what);
    cr_assert_not_null(strstr(d.message, what), "wanted '%s' in: %s", what, d.message);
    cr_assert_null(r.schedule);
}

Test(env_search, bad_options_and_envs_are_refused)
{
    synth s = {0};
    rlt_env *env = make_env(&s, 0);
    uint64_t hash = rlt_env_state_hash(env);
    assert_refused(env, &(rlt_env_search_opts){.kind = (rlt_env_search_kind)3}, "kind 3");
    assert_refused(env, &(rlt_env_search_opts){.max_steps = -1}, "max_steps -1");
    assert_refused(env, &(rlt_env_search_opts){.max_steps = RLT_OPTIMIZE_MAX_TRACE + 1}, "max_steps 257");
    assert_refused(env, &(rlt_env_search_opts){.lookahead = 3}, "lookahead 3");
    assert_refused(env, &(rlt_env_search_opts){.lookahead = -1}, "lookahead -1");
    assert_refused(env, &(rlt_env_search_opts){.beam_width = -2}, "beam_width -2");
    assert_refused(env, &(rlt_env_search_opts){.beam_width = RLT_ENV_SEARCH_MAX_BEAM + 1}, "beam_width 65");
    assert_refused(env, &(rlt_env_search_opts){.time_budget_s = -1}, "time_budget_s -1");
    assert_refused(env, &(rlt_env_search_opts){.time_budget_s = NAN}, "time_budget_s nan");
    assert_refused(env, &(rlt_env_search_opts){.time_budget_s = INFINITY}, "time_budget_s inf");
    assert_refused(env, &(rlt_env_search_opts){.kind = RLT_ENV_SEARCH_RANDOM}, "time_budget_s > 0");
    assert_refused(env, &(rlt_env_search_opts){.max_walks = -1}, "max_walks -1");
    cr_assert_eq(s.n_calls, 1);
    cr_assert_eq(rlt_env_state_hash(env), hash);

    /* NULL options: greedy, the defaults */
    rlt_optimize_result r = {0};
    cr_assert_eq(rlt_env_search(env, NULL, &r, NULL), RLT_STATUS_OK);
    rlt_optimize_result_free(&r);

    /* an episode that is over; an env never reset */
    rlt_env *done = make_env(&s, 0);
    cr_assert_eq(rlt_env_step(done, RLT_ENV_ACTION_STOP, NULL, NULL, NULL), RLT_STATUS_OK);
    assert_refused(done, &(rlt_env_search_opts){0}, "episode is over");
    rlt_env *fresh = NULL;
    cr_assert_eq(rlt_env_create(OP, &(rlt_env_opts){.peak_gflops = PEAK}, &fresh, NULL), RLT_STATUS_OK);
    assert_refused(fresh, &(rlt_env_search_opts){0}, "never reset");
    rlt_env_destroy(fresh);
    rlt_env_destroy(done);
    rlt_env_destroy(env);
    assert_no_leaks();
}

Test(env_search, a_failing_evaluator_propagates)
{
    for (size_t k = 0; k < RLT_ARRAY_LEN(every_kind); k++) {
        for (int after = 1; after <= 20; after += 19) { /* at once; after some states were cached */
            synth s = {.fail_after = after};
            rlt_env *env = make_env(&s, 0);
            cr_assert_eq(rlt_env_step(env, RLT_ENV_ACTION_DOWN, NULL, NULL, NULL), RLT_STATUS_OK);
            uint64_t hash = rlt_env_state_hash(env);
            rlt_optimize_result r = {0};
            rlt_diag d = {0};
            cr_assert_eq(rlt_env_search(env, &every_kind[k], &r, &d), RLT_STATUS_IO_ERROR, "kind %zu", k);
            cr_assert_not_null(strstr(d.message, "the synthetic evaluator is broken"), "%s", d.message);
            cr_assert_eq(s.n_calls, after);
            cr_assert_null(r.schedule);
            cr_assert_null(r.tree);
            /* the env is where it started */
            cr_assert_eq(rlt_env_state_hash(env), hash);
            cr_assert_eq(rlt_env_cursor(env), 1);
            cr_assert_eq(rlt_env_n_steps(env), 1);
            rlt_env_destroy(env);
        }
    }
    assert_no_leaks();
}

Test(env_search, out_of_memory_at_every_allocation)
{
    static const rlt_env_search_opts small[] = {
        {.kind = RLT_ENV_SEARCH_GREEDY, .lookahead = 2, .max_steps = 2},
        {.kind = RLT_ENV_SEARCH_BEAM, .beam_width = 2, .max_steps = 2},
        {.kind = RLT_ENV_SEARCH_RANDOM, .time_budget_s = 60, .max_walks = 9, .max_steps = 2},
    };
    for (size_t k = 0; k < RLT_ARRAY_LEN(small); k++) {
        bool is_done = false;
        for (long n = 1; !is_done; n++) {
            cr_assert_lt(n, 5000, "kind %zu: still failing after %ld allocations", k, n);
            synth h = {0};
            rlt_env *env = make_env(&h, 0);
            uint64_t hash = rlt_env_state_hash(env);
            rlt_optimize_result r = {0};
            rlt_alloc_fail_after(n);
            rlt_status st = rlt_env_search(env, &small[k], &r, NULL);
            rlt_alloc_fail_after(0);
            if (st == RLT_STATUS_OK) {
                is_done = true;
                cr_assert_not_null(r.schedule);
            } else {
                cr_assert_eq(st, RLT_STATUS_OUT_OF_MEMORY, "kind %zu, allocation %ld: %s", k, n, rlt_status_str(st));
                cr_assert_null(r.schedule);
                cr_assert_eq(rlt_env_state_hash(env), hash);
            }
            rlt_optimize_result_free(&r);
            rlt_env_destroy(env);
        }
    }
    assert_no_leaks();
}
