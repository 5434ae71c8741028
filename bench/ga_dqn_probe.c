/*
 * ga_dqn_probe.c - what GA-DQN's two DQNs learn and choose within one run
 * (issue 33, "find out why"), on replayed datasets: no kernel is built.
 *
 *   bench_ga_dqn_probe [--trials T] [--seeds S] [--batch B] [--agent-in FILE] [--options O] OP=DATASET ...
 *
 * For each workload (a built-in op spec and its dataset, made by `rltune
 * dataset`), ga and ga-dqn tune S seeds of T trials each. Printed per
 * workload:
 *   - each tuner's mean measurements to reach 95% of the dataset's best
 *     (T + 1 counted when a run never gets there) and mean best at the end;
 *   - ga-dqn at trials 64, 128, 256, 512 ... (means over the seeds): the
 *     children bred by the agents and scored (transitions) and those drawn
 *     at random because no bred child was new and valid, epsilon, learning
 *     steps, the TD losses; of the children scored since
 *     the last checkpoint, the share the mutation DQN chose greedily, the
 *     share of "no mutation" among greedy and explored choices, the mean
 *     reward and the new-best rate of greedy against explored children; and
 *     the share of the greedy crossover points taken by the most chosen one
 *     (1.0: the DQN always picks the same point).
 * With --agent-in, ga-dqn starts every run from that saved agent (`rltune
 * tune --tuner ga-dqn --agent-out FILE`, e.g. over other workloads); with
 * --options, its hyper-parameters ("ga_dqn_best_bonus=20,...", `rltune
 * tuners`).
 * Every random choice comes from the seeds: a run is reproducible.
 */
#include "db/db.h"
#include "rltune/session.h"
#include "search/ga_dqn.h"
#include "search/session.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CHECKPOINTS 16
#define MAX_WORKLOADS 32

typedef struct checkpoint {
    int n_trials;
    double epsilon, learn_steps, crossover_loss, mutation_loss;
    double transitions, random_children;
    double greedy_share, no_mut_greedy, no_mut_explored, reward_greedy, reward_explored, best_rate_greedy,
        best_rate_explored, top_point_share;
    int n_runs; /* runs that reached this checkpoint */
} checkpoint;

static bool take_best(const rlt_record *r, void *ctx)
{
    double *best = ctx;
    if (r->status == RLT_STATUS_OK && r->gflops > *best) *best = r->gflops;
    return true;
}

/* The dataset's best GFLOP/s (its records' best OK score). */
static double dataset_best(const char *path, const char *spec)
{
    rlt_db *db = NULL;
    rlt_diag d = {0};
    double best = 0;
    if (rlt_db_open(path, &(rlt_db_opts){.is_read_only = true}, &db, &d) != RLT_STATUS_OK) {
        fprintf(stderr, "ga_dqn_probe: %s\n", d.message);
        exit(2);
    }
    rlt_op *op = NULL;
    if (rlt_op_parse(spec, &op, &d) != RLT_STATUS_OK || rlt_db_history(db, op->spec, NULL, take_best, &best, &d)) {
        fprintf(stderr, "ga_dqn_probe: %s\n", d.message);
        exit(2);
    }
    rlt_op_destroy(op);
    rlt_db_close(db);
    return best;
}

/* Differences of two choice counts, into one checkpoint's shares. */
static void add_window(checkpoint *c, const rlt_ga_dqn_stats *now, const rlt_ga_dqn_choices *before, int n_knobs)
{
    const rlt_ga_dqn_choices *a = &now->choices;
    double n[2], no_mut[2], reward[2], best[2];
    for (int k = 0; k < 2; k++) {
        n[k] = (double)(a->n[k] - before->n[k]);
        no_mut[k] = (double)(a->n_no_mutation[k] - before->n_no_mutation[k]);
        reward[k] = a->reward_sum[k] - before->reward_sum[k];
        best[k] = (double)(a->n_new_best[k] - before->n_new_best[k]);
    }
    double total = n[0] + n[1];
    c->epsilon += now->epsilon;
    c->transitions += (double)now->n_transitions;
    c->random_children += (double)now->n_random_children;
    c->learn_steps += (double)now->n_learn_steps;
    c->crossover_loss += now->crossover_loss;
    c->mutation_loss += now->mutation_loss;
    c->greedy_share += total > 0 ? n[RLT_GA_DQN_GREEDY] / total : 0;
    c->no_mut_greedy += n[0] > 0 ? no_mut[0] / n[0] : 0;
    c->no_mut_explored += n[1] > 0 ? no_mut[1] / n[1] : 0;
    c->reward_greedy += n[0] > 0 ? reward[0] / n[0] : 0;
    c->reward_explored += n[1] > 0 ? reward[1] / n[1] : 0;
    c->best_rate_greedy += n[0] > 0 ? best[0] / n[0] : 0;
    c->best_rate_explored += n[1] > 0 ? best[1] / n[1] : 0;
    int64_t top = 0, sum = 0;
    for (int p = 0; p < n_knobs && p < RLT_SPACE_MAX_KNOBS; p++) {
        int64_t v = a->greedy_points[p] - before->greedy_points[p];
        sum += v;
        if (v > top) top = v;
    }
    c->top_point_share += sum > 0 ? (double)top / (double)sum : 0;
    c->n_runs++;
}

/* One run: its measurements to reach `target` GFLOP/s (trials + 1: never)
 * and its final best; ga-dqn's checkpoints added to cps. */
static void run_one(const char *spec, const char *dataset, const char *tuner, const char *agent_in,
                    const char *options, int trials, int batch, uint64_t seed, double target, checkpoint *cps,
                    int n_cps, int *out_to_target, double *out_best)
{
    rlt_diag d = {0};
    rlt_op *op = NULL;
    if (rlt_op_parse(spec, &op, &d) != RLT_STATUS_OK) {
        fprintf(stderr, "ga_dqn_probe: %s\n", d.message);
        exit(2);
    }
    rlt_session_options o;
    rlt_session_options_init(&o);
    o.tuner = tuner;
    o.replay_path = dataset;
    o.n_trials = trials;
    o.batch_size = batch;
    o.seed = seed;
    o.n_seeds = 0;
    bool is_ga_dqn = strcmp(tuner, "ga-dqn") == 0;
    if (is_ga_dqn) {
        o.agent_in = agent_in;
        o.tuner_options = options;
    }
    rlt_session *s = NULL;
    if (rlt_session_open(op, &o, &s, NULL, &d) != RLT_STATUS_OK) {
        fprintf(stderr, "ga_dqn_probe: %s on %s: %s\n", tuner, dataset, d.message);
        exit(2);
    }
    rlt_tuner *t = rlt_session_tuner(s);
    rlt_ga_dqn_choices before = {0};
    int next_cp = 0, to_target = trials + 1;
    while (!rlt_session_is_done(s)) {
        if (rlt_session_step(s, &d) != RLT_STATUS_OK) {
            fprintf(stderr, "ga_dqn_probe: %s\n", d.message);
            exit(3);
        }
        rlt_session_summary sum;
        rlt_session_summary_get(s, &sum);
        if (to_target > trials)
            for (int i = 0; i < sum.n_trials; i++)
                if (sum.curve[i] >= target) {
                    to_target = i + 1;
                    break;
                }
        *out_best = sum.best_gflops;
        while (is_ga_dqn && next_cp < n_cps && sum.n_trials >= cps[next_cp].n_trials) {
            rlt_ga_dqn_stats st;
            if (rlt_tuner_ga_dqn_stats(t, &st, &d) != RLT_STATUS_OK) exit(3);
            add_window(&cps[next_cp], &st, &before, rlt_session_space(s)->n_knobs);
            before = st.choices;
            next_cp++;
        }
    }
    *out_to_target = to_target;
    rlt_session_destroy(s);
    rlt_op_destroy(op);
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_ga_dqn_probe [--trials T] [--seeds S] [--batch B] [--agent-in FILE] "
                    "[--options O] OP=DATASET ...\n");
    return 2;
}

int main(int argc, char **argv)
{
    int trials = 512, seeds = 10, batch = 16, n_work = 0;
    const char *agent_in = NULL, *options = NULL;
    const char *specs[MAX_WORKLOADS], *datasets[MAX_WORKLOADS];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--trials") == 0 && i + 1 < argc) trials = atoi(argv[++i]);
        else if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc) seeds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc) batch = atoi(argv[++i]);
        else if (strcmp(argv[i], "--agent-in") == 0 && i + 1 < argc) agent_in = argv[++i];
        else if (strcmp(argv[i], "--options") == 0 && i + 1 < argc) options = argv[++i];
        else if (strchr(argv[i], '=') && strrchr(argv[i], '=') && n_work < MAX_WORKLOADS) {
            char *eq = strrchr(argv[i], '='); /* OP=DATASET: the last '=' (specs have their own) */
            *eq = '\0';
            specs[n_work] = argv[i];
            datasets[n_work++] = eq + 1;
        } else {
            return usage();
        }
    }
    if (n_work == 0 || trials < 16 || seeds < 1 || batch < 1) {
        return usage();
    }
    double log_ratio = 0;
    for (int w = 0; w < n_work; w++) {
        double best = dataset_best(datasets[w], specs[w]), target = 0.95 * best;
        checkpoint cps[MAX_CHECKPOINTS] = {{0}};
        int n_cps = 0;
        for (int n = 64; n <= trials && n_cps < MAX_CHECKPOINTS; n *= 2) cps[n_cps++].n_trials = n;
        double mean_to[2] = {0, 0}, mean_best[2] = {0, 0};
        const char *tuners[2] = {"ga", "ga-dqn"};
        for (int k = 0; k < 2; k++)
            for (int sd = 0; sd < seeds; sd++) {
                int to = 0;
                double b = 0;
                run_one(specs[w], datasets[w], tuners[k], agent_in, options, trials, batch, (uint64_t)sd + 1, target,
                        cps, n_cps, &to, &b);
                mean_to[k] += (double)to / seeds;
                mean_best[k] += b / seeds;
            }
        log_ratio += log(mean_to[1] / mean_to[0]);
        printf("\n%s (%s): best %.2f GFLOP/s; measurements to 95%%: ga %.1f, ga-dqn %.1f (%.2fx); final best: ga "
               "%.1f, ga-dqn %.1f\n",
               specs[w], datasets[w], best, mean_to[0], mean_to[1], mean_to[1] / mean_to[0], mean_best[0],
               mean_best[1]);
        printf("  %6s %6s %6s %7s %6s %8s %8s %7s %9s %9s %8s %8s %9s %9s %8s\n", "trials", "trans", "random",
               "epsilon", "learn", "loss.x",
               "loss.m", "greedy", "none|grd", "none|exp", "r|grd", "r|exp", "best|grd", "best|exp", "top.pt");
        for (int c = 0; c < n_cps; c++) {
            checkpoint *p = &cps[c];
            double n = p->n_runs > 0 ? p->n_runs : 1;
            printf("  %6d %6.0f %6.0f %7.3f %6.0f %8.4f %8.4f %7.2f %9.2f %9.2f %8.3f %8.3f %9.3f %9.3f %8.2f\n",
                   p->n_trials, p->transitions / n, p->random_children / n, p->epsilon / n, p->learn_steps / n,
                   p->crossover_loss / n, p->mutation_loss / n,
                   p->greedy_share / n, p->no_mut_greedy / n, p->no_mut_explored / n, p->reward_greedy / n,
                   p->reward_explored / n, p->best_rate_greedy / n, p->best_rate_explored / n,
                   p->top_point_share / n);
        }
    }
    printf("\ngeometric mean over %d workloads of ga-dqn / ga measurements to 95%%: %.3f\n", n_work,
           exp(log_ratio / n_work));
    return 0;
}
