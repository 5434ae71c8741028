/*
 * model_bench.c - timing a compiled network (rltune/model.h, "timing a
 * compiled network"): rlt_net_time runs it after warm-up runs, pinned to
 * one CPU, checks the first run's outputs against the reference
 * (rlt_net_outputs_compare) and gives the median and minimum of the timed
 * runs. `rltune run` and whole-model experiments (src/experiment/models.c)
 * measure a network's latency this one way.
 */
#include "api/model_internal.h"
#include "net/net.h"

#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

void rlt_net_timing_options_init(rlt_net_timing_options *o)
{
    memset(o, 0, sizeof *o);
    o->n_warmup = 2;
    o->repeat = 10;
    o->is_pinned = true;
}

void rlt_net_outputs_compare(int n, const rlt_array *const *out, const rlt_array *const *ref, double *max_error,
                             double *max_reference)
{
    *max_error = 0;
    *max_reference = 0;
    for (int i = 0; i < n; i++) {
        int64_t count = rlt_array_n_elems(ref[i]);
        if (ref[i]->elem != RLT_ELEM_F32) {
            if (count > 0 && memcmp(out[i]->data, ref[i]->data, (size_t)count * rlt_elem_size(ref[i]->elem)) != 0)
                *max_error = INFINITY;
            continue;
        }
        const float *o = out[i]->data, *r = ref[i]->data;
        for (int64_t k = 0; k < count; k++) {
            double e = fabs((double)o[k] - (double)r[k]);
            if (!(e <= *max_error)) *max_error = isnan(e) ? INFINITY : e;
            if (fabs((double)r[k]) > *max_reference) *max_reference = fabs((double)r[k]);
        }
    }
}

static int compare_doubles(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* What rlt_net_time times, on the thread rlt_net_contained gives it. */
typedef struct net_timing_job {
    rlt_net *n;
    const rlt_array *const *inputs;
    rlt_array *const *outputs;
    const rlt_array *const *reference;
    const rlt_net_timing_options *o;
    rlt_net_timing *out;
    rlt_diag *diag;
    rlt_status st;
} net_timing_job;

static rlt_status time_runs(rlt_net *n, const rlt_array *const *inputs, rlt_array *const *outputs,
                            const rlt_array *const *reference, const rlt_net_timing_options *o, rlt_net_timing *out,
                            rlt_diag *diag)
{
    double *times = rlt_calloc((size_t)o->repeat, sizeof *times);
    if (!times) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory timing a network");
    /* pinned to the CPU it is on, for steadier timings; the affinity is
     * restored after, so that what the caller starts later (tuning's
     * compilers and runners) keeps every CPU */
    cpu_set_t saved;
    bool is_pinned = false;
    int cpu = o->is_pinned ? sched_getcpu() : -1;
    if (cpu >= 0 && sched_getaffinity(0, sizeof saved, &saved) == 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        is_pinned = sched_setaffinity(0, sizeof one, &one) == 0;
    }
    rlt_status st = RLT_STATUS_OK;
    int n_outputs = rlt_net_graph(n)->n_outputs;
    for (int i = -o->n_warmup; i < o->repeat && st == RLT_STATUS_OK; i++) {
        if (i == 0 && o->is_profiled) rlt_net_profile(n, true);
        uint64_t t0 = rlt_time_ns();
        st = rlt_net_run(n, inputs, outputs, diag);
        if (st == RLT_STATUS_OK && i >= 0) times[i] = (double)(rlt_time_ns() - t0) * 1e-6;
        if (st == RLT_STATUS_OK && i == -o->n_warmup && reference) {
            rlt_net_outputs_compare(n_outputs, (const rlt_array *const *)outputs, reference, &out->max_error,
                                    &out->max_reference);
            out->is_checked = true;
            double scale = out->max_reference > 0 ? out->max_reference : 1.0;
            out->is_correct = out->max_error <= RLT_NET_CHECK_TOLERANCE * scale;
        }
    }
    if (is_pinned) (void)sched_setaffinity(0, sizeof saved, &saved);
    if (st == RLT_STATUS_OK) {
        qsort(times, (size_t)o->repeat, sizeof *times, compare_doubles);
        int r = o->repeat;
        out->repeat = r;
        out->min_ms = times[0];
        out->median_ms = r % 2 ? times[r / 2] : 0.5 * (times[r / 2 - 1] + times[r / 2]);
    } else {
        *out = (rlt_net_timing){0};
    }
    rlt_free(times);
    return st;
}

static void *time_job(void *arg)
{
    net_timing_job *j = arg;
    j->st = time_runs(j->n, j->inputs, j->outputs, j->reference, j->o, j->out, j->diag);
    return NULL;
}

rlt_status rlt_net_time(rlt_net *n, const rlt_array *const *inputs, rlt_array *const *outputs,
                        const rlt_array *const *reference, const rlt_net_timing_options *o, rlt_net_timing *out,
                        rlt_diag *diag)
{
    rlt_net_timing_options defaults;
    rlt_net_timing_options_init(&defaults);
    if (!o) o = &defaults;
    memset(out, 0, sizeof *out);
    if (o->n_warmup < 0 || o->n_warmup > 1000000 || o->repeat < 1 || o->repeat > 1000000)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "timing a network: %d warm-up runs (0 to 1000000) and %d timed runs (1 to 1000000)",
                        o->n_warmup, o->repeat);
    /* at several threads on a thread of its own: the OpenMP threads the
     * kernels start go with it, so that the measurement runner's children
     * forked later by this process do not wait for them (net.h) */
    net_timing_job job = {n, inputs, outputs, reference, o, out, diag, RLT_STATUS_OK};
    rlt_status st = rlt_net_contained(rlt_net_threads(n), time_job, &job, diag);
    return st != RLT_STATUS_OK ? st : job.st;
}
