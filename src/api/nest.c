/*
 * nest.c - the public face of nests and their measurement
 * (rltune/schedule.h, rltune/measure.h): a nest handle made from an op and
 * a schedule, its loop tree and C source, and rlt_measure over handles.
 * Inside rltune a nest is a value (ir.h: a fixed-size struct that search
 * states copy freely); a handle is one such value on the heap.
 */
#include "codegen/codegen.h"
#include "measure/measure.h"
#include "sched/sched.h"

rlt_status rlt_nest_create(const rlt_op *op, const rlt_sched *s, rlt_nest **out, rlt_diag *diag)
{
    *out = NULL;
    rlt_nest *n = rlt_malloc(sizeof *n);
    if (!n) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory making a nest");
    rlt_status st = RLT_STATUS_OK;
    if (s)
        st = rlt_sched_apply(s, op, n, diag);
    else
        rlt_nest_init(n, op);
    if (st != RLT_STATUS_OK) {
        rlt_free(n);
        return st;
    }
    *out = n;
    return RLT_STATUS_OK;
}

void rlt_nest_destroy(rlt_nest *n) { rlt_free(n); }

char *rlt_nest_tree(const rlt_nest *n)
{
    rlt_str s;
    rlt_str_init(&s);
    rlt_nest_print(n, &s);
    if (s.has_failed) {
        rlt_str_free(&s);
        return NULL;
    }
    return rlt_str_take(&s);
}

rlt_status rlt_nest_c_source(const rlt_nest *n, char **out, rlt_diag *diag)
{
    *out = NULL;
    rlt_kernel_src k = {0};
    rlt_status st = rlt_codegen_kernel(n, &k, diag);
    if (st == RLT_STATUS_OK) {
        *out = k.code;
        k.code = NULL;
    }
    rlt_kernel_src_free(&k);
    return st;
}

rlt_status rlt_measure(const rlt_workload *w, const rlt_build_opts *bopts, const rlt_run_opts *ropts, int n,
                       const rlt_nest *const *nests, rlt_run_result *out, rlt_diag *diag)
{
    if (n < 0) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "a batch of %d nests", n);
    if (n == 0) return RLT_STATUS_OK;
    rlt_nest *values = rlt_malloc(sizeof *values * (size_t)n);
    if (!values) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory measuring %d nests", n);
    for (int i = 0; i < n; i++) {
        if (nests[i]->op != rlt_workload_op(w)) {
            rlt_free(values);
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "nest %d is of op %s, the workload of %s: measure it with a workload of its own op", i,
                            nests[i]->op->spec, rlt_workload_op(w)->spec);
        }
        values[i] = *nests[i];
    }
    rlt_build_opts b = bopts ? *bopts : (rlt_build_opts){0};
    rlt_status st = rlt_measure_nests(w, &b, ropts, n, values, out, diag);
    rlt_free(values);
    return st;
}
