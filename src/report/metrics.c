/*
 * metrics.c - what an experiment's report says of each (workload, tuner):
 * the best GFLOP/s over its seeds (median, min, max), the measurements it
 * took to reach 90, 95 and 99 % of the best known (rlt_report_reach; median
 * over the seeds, a seed that never got there counted as never), and its
 * wall time.
 *
 * "Not reached" is never turned into a number: a run that did not reach a
 * level sorts after every run that did, and when that places it in the
 * median, the median is "not reached" too.
 */
#include "report/report.h"

#include <math.h>
#include <stdlib.h>

const double rlt_report_reach_fractions[RLT_REPORT_N_REACH] = {0.90, 0.95, 0.99};

int rlt_report_reach(const double *curve, int n, double best_known, double fraction)
{
    if (!(best_known > 0)) return 0;
    double level = fraction * best_known;
    for (int i = 0; i < n; i++)
        if (curve[i] >= level) return i + 1;
    return 0;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double rlt_report_median(double *v, int n)
{
    if (n == 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    if (n % 2) return v[n / 2];
    return 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void rlt_report_stats_compute(const rlt_report_run *runs, int n, int workload, int tuner, double best_known,
                              rlt_report_stats *out)
{
    *out = (rlt_report_stats){0};
    /* small: one experiment has at most RLT_REPORT_MAX_SEEDS runs of a pair */
    double bests[RLT_REPORT_MAX_SEEDS], reach[RLT_REPORT_N_REACH][RLT_REPORT_MAX_SEEDS],
        walls[RLT_REPORT_MAX_SEEDS], tuner_times[RLT_REPORT_MAX_SEEDS];
    int k = 0;
    for (int i = 0; i < n && k < RLT_REPORT_MAX_SEEDS; i++) {
        const rlt_report_run *r = &runs[i];
        if (r->workload != workload || r->tuner != tuner) continue;
        bests[k] = r->best_gflops;
        walls[k] = r->wall_s;
        tuner_times[k] = r->tuner_s;
        for (int f = 0; f < RLT_REPORT_N_REACH; f++) {
            int at = rlt_report_reach(r->curve, r->n_trials, best_known, rlt_report_reach_fractions[f]);
            reach[f][k] = at > 0 ? (double)at : INFINITY;
            if (at > 0) out->n_reached[f]++;
        }
        out->wall_total_s += r->wall_s;
        out->tuner_total_s += r->tuner_s;
        out->n_failed += r->n_failed;
        out->n_absent += r->n_absent;
        k++;
    }
    out->n_runs = k;
    if (k == 0) return;
    out->best_median = rlt_report_median(bests, k);
    out->best_min = bests[0]; /* sorted by rlt_report_median() */
    out->best_max = bests[k - 1];
    out->wall_median_s = rlt_report_median(walls, k);
    out->tuner_median_s = rlt_report_median(tuner_times, k);
    for (int f = 0; f < RLT_REPORT_N_REACH; f++) {
        double m = rlt_report_median(reach[f], k);
        out->is_reached[f] = isfinite(m);
        out->reach_median[f] = isfinite(m) ? m : 0;
    }
}

void rlt_report_stats_fill(const rlt_report *rep, rlt_report_stats *out)
{
    for (int w = 0; w < rep->n_workloads; w++)
        for (int t = 0; t < rep->n_tuners; t++)
            rlt_report_stats_compute(rep->runs, rep->n_runs, w, t, rep->workloads[w].best_known_gflops,
                                     &out[w * rep->n_tuners + t]);
}

void rlt_report_reach_text(const rlt_report_stats *s, int f, rlt_str *out)
{
    if (s->n_runs == 0)
        rlt_str_append(out, "-");
    else if (s->is_reached[f])
        rlt_str_printf(out, "%g (%d/%d)", s->reach_median[f], s->n_reached[f], s->n_runs);
    else
        rlt_str_printf(out, "not reached (%d/%d)", s->n_reached[f], s->n_runs);
}
