/*
 * xgb_tuner.c - AutoTVM's XGBTuner: a cost model (XGBoost, rank:pairwise
 * for "xgb-rank", regression for "xgb") trained on every measured
 * configuration's features, explored by parallel simulated annealing over
 * the model; the best `plan_size` predictions become the plan the tuner
 * proposes from until the next fit, 5% of those proposals drawn at random
 * instead (epsilon-greedy).
 *
 * As in AutoTVM's ModelBasedTuner: until fit_every configurations are
 * measured, proposals are random; the model is refit each time another
 * fit_every measurements have come in (and something has scored above 0),
 * and scores are normalised by the best seen. AutoTVM refits once per plan
 * (fit_every = plan_size = 64); rltune's default is 16, one measured batch,
 * so each batch is planned by a model that has seen the one before (on the
 * conv2d layer of bench_tuning, xgb's median at 256 trials rose from 218 to
 * 239 GFLOP/s in a 3-seed A/B and from 199 to 228 in the 1000-trial
 * protocol; xgb-rank's gained in the A/B only: docs/tuners.md,
 * bench/RESULTS.md). Of the fit_every proposals made from one
 * plan, the last 5% (truncated, as AutoTVM's 3 of 64; at least one when
 * fit_every >= 2) are drawn at random, AutoTVM's epsilon-greedy.
 * The annealing keeps its walkers across plans ("persistent"), moves one
 * knob to a random value per step, accepts with probability
 * exp((new - old) / temperature), cools linearly from 1 to 0, and stops
 * after 50 steps that leave the top plan unchanged.
 *
 * Transfer (AutoTVM's load_history): rows of other workloads, each scored
 * by its workload's best, are kept ahead of the run's own rows. The model
 * is trained on them at once, so the first plan comes from it, and every
 * refit uses them and the own rows (normalised by the own best) together;
 * the features' loop part tells the workloads apart.
 */
#include "search/cost_rows.h"
#include "search/tuner.h"

#include <math.h>
#include <string.h>

typedef struct xgb_state {
    rlt_cost_model *model;
    rlt_cost_rows rows; /* training data: the transferred rows first */
    int plan_size, chains, iterations;
    int fit_every, n_explore; /* measurements per fit; random draws among them */
    rlt_config *plan;         /* proposals from the last annealing, best first */
    int n_plan, plan_pt;
    int n_taken; /* proposals made since the last annealing */
    int n_fits;
    rlt_config *walkers;
    double *walker_score;
    bool has_walkers;
    uint64_t scan_cursor; /* scan position once random draws run dry */
} xgb_state;

static rlt_status warm_start(rlt_tuner *t, rlt_diag *diag);

static rlt_status xgb_init_loss(rlt_tuner *t, rlt_cost_loss loss, rlt_diag *diag)
{
    xgb_state *x = rlt_calloc(1, sizeof *x);
    if (!x) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a tuner");
    t->state = x;
    x->rows.n_features = rlt_space_n_features(t->space);
    x->plan_size = t->opts.plan_size > 0 ? t->opts.plan_size : 64;
    x->chains = t->opts.sa_chains > 0 ? t->opts.sa_chains : 128;
    x->iterations = t->opts.sa_iterations > 0 ? t->opts.sa_iterations : 500;
    x->fit_every = t->opts.fit_every > 0 ? t->opts.fit_every : RLT_MIN(16, x->plan_size);
    if (x->fit_every > x->plan_size)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "%s tuner: fit_every (%d) must be at most plan_size (%d): a fit plans the proposals up to "
                        "the next one",
                        t->ops->name, x->fit_every, x->plan_size);
    /* AutoTVM's 5% of a plan of 64 is 3 (truncated); a short fit window
     * still explores once */
    x->n_explore = (int)(0.05 * x->fit_every);
    if (x->n_explore == 0 && x->fit_every >= 2) x->n_explore = 1;
    rlt_cost_model_opts mo = {.seed = t->opts.seed};
    rlt_status st = rlt_cost_loss_choose(t->ops->name, t->opts.cost_loss, loss, &mo.loss, diag);
    if (st != RLT_STATUS_OK) return st;
    if ((st = rlt_cost_model_create(&mo, x->rows.n_features, &x->model, diag)) != RLT_STATUS_OK) return st;
    x->plan = rlt_calloc((size_t)x->plan_size, sizeof *x->plan);
    x->walkers = rlt_calloc((size_t)x->chains, sizeof *x->walkers);
    x->walker_score = rlt_calloc((size_t)x->chains, sizeof *x->walker_score);
    if (!x->plan || !x->walkers || !x->walker_score)
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a tuner");
    return t->opts.n_transfer > 0 ? warm_start(t, diag) : RLT_STATUS_OK;
}

static rlt_status xgb_init(rlt_tuner *t, rlt_diag *diag) { return xgb_init_loss(t, RLT_COST_REG, diag); }
static rlt_status xgb_rank_init(rlt_tuner *t, rlt_diag *diag) { return xgb_init_loss(t, RLT_COST_RANK, diag); }

static void xgb_fini(rlt_tuner *t)
{
    xgb_state *x = t->state;
    if (!x) return;
    rlt_cost_model_destroy(x->model);
    rlt_cost_rows_free(&x->rows);
    rlt_free(x->plan);
    rlt_free(x->walkers);
    rlt_free(x->walker_score);
    rlt_free(x);
}

/* Predicted scores of n configurations; invalid ones get -inf. */
static void predict(rlt_tuner *t, int n, const rlt_config *c, double *out, float *scratch)
{
    xgb_state *x = t->state;
    rlt_cost_rows_predict(x->model, t->space, n, c, scratch, out);
}

/* Keeps the plan (best first, no repeats, nothing visited) as the annealing
 * finds points; true if the plan changed. */
static bool plan_offer(rlt_tuner *t, double *plan_score, const rlt_config *c, double score)
{
    xgb_state *x = t->state;
    if (!isfinite(score)) return false;
    if (x->n_plan == x->plan_size && score <= plan_score[x->n_plan - 1]) return false;
    if (rlt_visited_has(&t->visited, rlt_space_index_of(t->space, c))) return false;
    for (int i = 0; i < x->n_plan; i++)
        if (memcmp(&x->plan[i], c, sizeof *c) == 0) return false;
    int pos = x->n_plan < x->plan_size ? x->n_plan++ : x->n_plan - 1;
    while (pos > 0 && plan_score[pos - 1] < score) {
        x->plan[pos] = x->plan[pos - 1];
        plan_score[pos] = plan_score[pos - 1];
        pos--;
    }
    x->plan[pos] = *c;
    plan_score[pos] = score;
    return true;
}

static rlt_status anneal(rlt_tuner *t, rlt_diag *diag)
{
    xgb_state *x = t->state;
    int n = x->chains > 512 ? 512 : x->chains;
    rlt_config *next = rlt_calloc((size_t)n, sizeof *next);
    double *next_score = rlt_calloc((size_t)n, sizeof *next_score);
    double *plan_score = rlt_calloc((size_t)x->plan_size, sizeof *plan_score);
    float *scratch = rlt_calloc((size_t)RLT_MIN(n, RLT_COST_ROWS_CHUNK) * (size_t)x->rows.n_features, sizeof *scratch);
    rlt_status st = RLT_STATUS_OK;
    if (!next || !next_score || !plan_score || !scratch) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory planning with the cost model");
        goto done;
    }
    if (!x->has_walkers) {
        for (int i = 0; i < n; i++) rlt_space_random(t->space, &t->rng, &x->walkers[i]);
        x->has_walkers = true;
    }
    predict(t, n, x->walkers, x->walker_score, scratch);
    x->n_plan = 0;
    x->plan_pt = 0;
    x->n_taken = 0;
    for (int i = 0; i < n; i++) plan_offer(t, plan_score, &x->walkers[i], x->walker_score[i]);
    const rlt_space *s = t->space;
    int unchanged = 0;
    for (int it = 0; it < x->iterations && unchanged < 50; it++) {
        double temp = 1.0 - (double)it / (double)x->iterations;
        for (int i = 0; i < n; i++) {
            next[i] = x->walkers[i];
            int k = (int)rlt_rng_below(&t->rng, (uint64_t)s->n_knobs);
            next[i].choice[k] = (int16_t)rlt_rng_below(&t->rng, (uint64_t)s->knobs[k].n_choices);
        }
        predict(t, n, next, next_score, scratch);
        bool changed = false;
        for (int i = 0; i < n; i++) {
            changed |= plan_offer(t, plan_score, &next[i], next_score[i]);
            double delta = next_score[i] - x->walker_score[i];
            double accept = isfinite(next_score[i]) ? exp(fmin(delta / (temp + 1e-5), 1.0)) : 0.0;
            if (rlt_rng_uniform(&t->rng) < accept) {
                x->walkers[i] = next[i];
                x->walker_score[i] = next_score[i];
            }
        }
        unchanged = changed ? 0 : unchanged + 1;
    }
done:
    rlt_free(next);
    rlt_free(next_score);
    rlt_free(plan_score);
    rlt_free(scratch);
    return st;
}

static int xgb_next(rlt_tuner *t, int max, rlt_config *out)
{
    xgb_state *x = t->state;
    int n = 0;
    int greedy_taken = x->fit_every - x->n_explore;
    while (n < max) {
        while (x->plan_pt < x->n_plan &&
               rlt_visited_has(&t->visited, rlt_space_index_of(t->space, &x->plan[x->plan_pt])))
            x->plan_pt++;
        if (x->plan_pt < x->n_plan && x->n_taken < greedy_taken) {
            out[n] = x->plan[x->plan_pt++];
            rlt_visited_add(&t->visited, rlt_space_index_of(t->space, &out[n]));
            n++;
        } else if (rlt_tuner_draw_new(t, 1024, &out[n]) || rlt_tuner_scan_new(t, &x->scan_cursor, &out[n])) {
            n++; /* no plan yet, or the window's last 5%: explore at random */
        } else {
            break;
        }
        x->n_taken++;
    }
    return n;
}

/* Trains on the transferred rows alone and plans from that model. */
static rlt_status warm_start(rlt_tuner *t, rlt_diag *diag)
{
    xgb_state *x = t->state;
    int n = t->opts.n_transfer;
    if (!t->opts.transfer_xs || !t->opts.transfer_ys)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%d transferred rows announced but none given", n);
    rlt_status st = rlt_cost_rows_add_transfer(&x->rows, n, t->opts.transfer_xs, t->opts.transfer_ys, diag);
    if (st != RLT_STATUS_OK) return st;
    if (n < 2) return RLT_STATUS_OK;
    if ((st = rlt_cost_rows_fit(&x->rows, x->model, diag)) != RLT_STATUS_OK) return st;
    return anneal(t, diag);
}

static rlt_status xgb_update(rlt_tuner *t, int n, const rlt_config *configs, const double *scores, rlt_diag *diag)
{
    xgb_state *x = t->state;
    /* a configuration read back from old records may not be valid in this
     * space any more: it is only marked visited */
    rlt_status st = rlt_cost_rows_add(&x->rows, t->space, n, configs, scores, diag);
    if (st != RLT_STATUS_OK) return st;
    if (x->rows.n - x->rows.n_transfer < x->fit_every * (x->n_fits + 1) || x->rows.best_y <= 1e-9)
        return RLT_STATUS_OK;
    if ((st = rlt_cost_rows_fit(&x->rows, x->model, diag)) != RLT_STATUS_OK) return st;
    x->n_fits++;
    return anneal(t, diag);
}

const rlt_tuner_ops rlt_tuner_xgb_ops = {.name = "xgb",
                                         .flags = RLT_TUNER_USES_TRANSFER,
                                         .init = xgb_init,
                                         .next_batch = xgb_next,
                                         .update = xgb_update,
                                         .fini = xgb_fini};
const rlt_tuner_ops rlt_tuner_xgb_rank_ops = {.name = "xgb-rank",
                                              .flags = RLT_TUNER_USES_TRANSFER,
                                              .init = xgb_rank_init,
                                              .next_batch = xgb_next,
                                              .update = xgb_update,
                                              .fini = xgb_fini};
