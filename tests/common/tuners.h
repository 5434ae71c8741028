/* tuners.h - driving a tuner in a test: the space tuner tests search
 * (8-float vectors, one thread, no clang), a tuner that must be created,
 * a knob by name, and runs on a scored problem (fixtures.h's synthetic
 * score, or a test's own) in batches of 16, every proposal checked to be
 * valid. Header-only, like fixtures.h. Shared by tests/unit/test_tuner.c,
 * test_transfer.c, test_ga_dqn.c, test_dqn.c, test_bandit.c, test_ppo.c,
 * test_agent_file.c and test_dataset.c. */
#ifndef RLT_TESTS_TUNERS_H
#define RLT_TESTS_TUNERS_H

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "search/tuner.h"

#include "fixtures.h"

/* The space of `op` the tuner tests use. */
static inline void tuner_space(const rlt_op *op, rlt_space *s)
{
    rlt_diag d = {0};
    rlt_space_opts o = {.n_threads = 1, .vector_floats = 8, .no_clang = true};
    cr_assert_eq(rlt_space_create(op, &o, s, &d), RLT_STATUS_OK, "%s", d.message);
}

/* Tuner `name` over s; it must be created. Destroy with rlt_tuner_destroy. */
static inline rlt_tuner *tuner_make(const char *name, const rlt_space *s, const rlt_tuner_opts *o)
{
    rlt_diag d = {0};
    rlt_tuner *t = NULL;
    cr_assert_eq(rlt_tuner_create(name, s, o, &t, &d), RLT_STATUS_OK, "%s: %s", name, d.message);
    return t;
}

/* The index of the knob with this name; it must exist. */
static inline int tuner_knob_named(const rlt_space *s, const char *name)
{
    for (int k = 0; k < s->n_knobs; k++)
        if (strcmp(s->knobs[k].name, name) == 0) return k;
    cr_assert_fail("no knob %s", name);
    return -1;
}

typedef double (*tuner_score_fn)(const rlt_space *s, const rlt_config *c, const rlt_config *best);

/* Runs t for up to `trials` proposals in batches of 16, each scored by
 * f(s, c, best) and reported back; every proposal must be valid and new
 * (not proposed before in this drive). Keeps the
 * proposals and their scores, in order, where the outputs are not NULL
 * (room for `trials`). Returns how many proposals there were (fewer when
 * the tuner ran dry); *out_best (may be NULL) gets the best score. */
static inline int tuner_drive(rlt_tuner *t, const rlt_space *s, tuner_score_fn f, const rlt_config *best, int trials,
                              rlt_config *out_configs, double *out_scores, double *out_best)
{
    double top = 0;
    int done = 0;
    rlt_visited seen = {0};
    while (done < trials) {
        rlt_config batch[16];
        double scores[16];
        int n = rlt_tuner_next_batch(t, trials - done < 16 ? trials - done : 16, batch);
        if (n == 0) break;
        for (int i = 0; i < n; i++) {
            cr_assert(rlt_space_is_valid(s, &batch[i]), "%s proposed an invalid config", rlt_tuner_name(t));
            cr_assert(rlt_visited_add(&seen, rlt_space_index_of(s, &batch[i])), "%s proposed a config twice",
                      rlt_tuner_name(t));
            scores[i] = f(s, &batch[i], best);
            top = fmax(top, scores[i]);
            if (out_configs) out_configs[done + i] = batch[i];
            if (out_scores) out_scores[done + i] = scores[i];
        }
        rlt_diag d = {0};
        cr_assert_eq(rlt_tuner_update(t, n, batch, scores, &d), RLT_STATUS_OK, "%s", d.message);
        done += n;
    }
    rlt_visited_free(&seen);
    if (out_best) *out_best = top;
    return done;
}

/* The synthetic problem's space (matmul 512^3, fixtures.h) and its
 * optimum. Free *op with rlt_op_destroy. */
static inline void tuner_synthetic_space(rlt_op **op, rlt_space *s, rlt_config *best)
{
    *op = fixture_op("matmul:M=512,N=512,K=512");
    tuner_space(*op, s);
    fixture_config(s, FIXTURE_SYNTHETIC_BEST, best);
}

typedef double (*tuner_index_score_fn)(uint64_t index);

/* Every valid configuration of s exactly once, then nothing: drives t in
 * batches of `batch` (at most 16), scoring each proposal score(index),
 * until it proposes nothing; each proposal must be valid and new, and all
 * valid configurations must have been proposed. */
static inline void tuner_assert_enumerates(rlt_tuner *t, const rlt_space *s, int batch, tuner_index_score_fn score)
{
    cr_assert(batch >= 1 && batch <= 16);
    uint64_t size = rlt_space_size(s);
    int n_valid = 0;
    for (uint64_t i = 0; i < size; i++) {
        rlt_config c;
        rlt_space_config_of(s, i, &c);
        n_valid += rlt_space_is_valid(s, &c);
    }
    cr_assert_gt(n_valid, 4);
    bool *seen = calloc(size, 1);
    cr_assert_not_null(seen);
    int total = 0;
    for (int round = 0; round < 10000; round++) {
        rlt_config configs[16];
        double scores[16];
        int n = rlt_tuner_next_batch(t, batch, configs);
        if (n == 0) break;
        for (int i = 0; i < n; i++) {
            uint64_t idx = rlt_space_index_of(s, &configs[i]);
            cr_assert_not(seen[idx], "%s proposed %llu twice", rlt_tuner_name(t), (unsigned long long)idx);
            cr_assert(rlt_space_is_valid(s, &configs[i]), "%s proposed an invalid config", rlt_tuner_name(t));
            seen[idx] = true;
            scores[i] = score(idx);
        }
        total += n;
        cr_assert_eq(rlt_tuner_update(t, n, configs, scores, NULL), RLT_STATUS_OK);
    }
    cr_assert_eq(total, n_valid, "%s proposed %d of %d valid configs", rlt_tuner_name(t), total, n_valid);
    free(seen);
}

/* The best synthetic score (fixtures.h) a new tuner `name` with options o
 * finds in `trials` proposals. */
static inline double tuner_best_after(const char *name, const rlt_space *s, const rlt_config *best,
                                      const rlt_tuner_opts *o, int trials)
{
    rlt_tuner *t = tuner_make(name, s, o);
    double top = 0;
    tuner_drive(t, s, fixture_synthetic_score, best, trials, NULL, NULL, &top);
    rlt_tuner_destroy(t);
    return top;
}

/* Out of memory everywhere: runs tuner `name` over s for `rounds` batches
 * of `batch` (at most 16) proposals, scored 1 + index % 7, with the Nth
 * allocation failing, for N = 1, 2, ... (after 64, N grows by `stride`),
 * until a run goes through (with `is_whole_needed`, only a run whose every
 * batch was full counts: a tuner may run short of proposals when memory
 * fails). Every run that fails must fail with OUT_OF_MEMORY and a message
 * saying so. (Validity is not checked here: rlt_space_is_valid builds the
 * configuration's nest, which fails too while allocations do.) Returns
 * how many failing allocations were tried; N must stay below max_n. The
 * caller checks for leaks (leaks.h). */
static inline int tuner_out_of_memory_runs(const char *name, const rlt_space *s, const rlt_tuner_opts *o, int rounds,
                                           int batch, long stride, bool is_whole_needed, long max_n)
{
    cr_assert(batch >= 1 && batch <= 16);
    int n_failures = 0;
    for (long k = 1;; k += k < 64 ? 1 : stride) {
        rlt_diag d = {0};
        rlt_tuner *t = NULL;
        rlt_alloc_fail_after(k);
        rlt_status st = rlt_tuner_create(name, s, o, &t, &d);
        bool is_whole = true;
        for (int round = 0; round < rounds && st == RLT_STATUS_OK; round++) {
            rlt_config configs[16];
            double scores[16];
            int n = rlt_tuner_next_batch(t, batch, configs);
            is_whole &= n == batch;
            for (int i = 0; i < n; i++) scores[i] = 1.0 + (double)(rlt_space_index_of(s, &configs[i]) % 7);
            st = rlt_tuner_update(t, n, configs, scores, &d);
        }
        rlt_alloc_fail_after(0);
        rlt_tuner_destroy(t);
        if (st == RLT_STATUS_OK && (is_whole || !is_whole_needed)) break;
        n_failures++;
        cr_assert_lt(k, max_n, "%s: allocations never stop failing", name);
        if (st == RLT_STATUS_OK) continue;
        cr_assert_eq(st, RLT_STATUS_OUT_OF_MEMORY, "%s, failing allocation %ld: %s (%s)", name, k,
                     rlt_status_str(st), d.message);
        cr_assert(strstr(d.message, "out of memory"), "%s, allocation %ld: %s", name, k, d.message);
    }
    cr_log_info("%s: %d failing allocations tried", name, n_failures);
    return n_failures;
}

#endif /* RLT_TESTS_TUNERS_H */
