/*
 * nest.c - the public face of nests and their measurement
 * (rltune/schedule.h, rltune/measure.h): a nest handle made from an op and
 * a schedule, its loop tree, lowered loops and C source, rlt_measure over
 * handles, and what the measurement's report shows (the compiler command,
 * the machine).
 * Inside rltune a nest is a value (ir.h: a fixed-size struct that search
 * states copy freely); a handle is one such value on the heap.
 */
#include "codegen/codegen.h"
#include "measure/measure.h"
#include "sched/sched.h"

#include <stdio.h>

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
    return rlt_str_take(&s); /* NULL when a write failed */
}

rlt_status rlt_nest_c_source(const rlt_nest *n, rlt_c_source *out, rlt_diag *diag)
{
    *out = (rlt_c_source){0};
    rlt_kernel_src k = {0};
    rlt_status st = rlt_codegen_kernel(n, &k, diag);
    if (st == RLT_STATUS_OK) {
        _Static_assert(sizeof out->symbol >= RLT_SYMBOL_MAX, "rlt_c_source.symbol holds a kernel symbol");
        out->code = k.code;
        k.code = NULL;
        snprintf(out->symbol, sizeof out->symbol, "%s", k.symbol);
        out->needs_openmp = k.needs_openmp;
    }
    rlt_kernel_src_free(&k);
    return st;
}

rlt_status rlt_nest_lowered_text(const rlt_nest *n, char **out, rlt_diag *diag)
{
    *out = NULL;
    rlt_str s;
    rlt_str_init(&s);
    rlt_status st = rlt_codegen_lowered_text(n, &s, diag);
    if (st != RLT_STATUS_OK) {
        rlt_str_free(&s);
        return st;
    }
    *out = rlt_str_take(&s);
    return *out ? RLT_STATUS_OK : rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory printing the lowered loops");
}

bool rlt_nest_is_parallel(const rlt_nest *n)
{
    for (int l = 0; l < n->n_loops; l++)
        if (n->loops[l].kind == RLT_LOOP_PARALLEL) return true;
    return false;
}

char *rlt_build_command(const rlt_build_opts *opts, bool with_openmp)
{
    rlt_str s;
    rlt_str_init(&s);
    rlt_build_opts o = opts ? *opts : (rlt_build_opts){0};
    rlt_build_describe(&o, with_openmp, &s);
    return rlt_str_take(&s); /* NULL when a write failed */
}

void rlt_machine_detect(rlt_machine *out)
{
    rlt_target t;
    rlt_target_detect(&t);
    *out = (rlt_machine){
        .n_cores = t.n_cores, .vector_floats = t.vector_floats, .has_fma = t.has_fma, .llc_bytes = t.llc_bytes};
    snprintf(out->cpu, sizeof out->cpu, "%s", t.cpu_model);
}

rlt_status rlt_measure_build(const rlt_workload *w, const rlt_build_opts *bopts, int n, const rlt_nest *const *nests,
                             const char *const *cc_of, rlt_batch **out, rlt_diag *diag)
{
    *out = NULL;
    if (n < 0) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "a batch of %d nests", n);
    rlt_nest *values = rlt_malloc(sizeof *values * (size_t)RLT_MAX(n, 1));
    if (!values) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory building %d nests", n);
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
    rlt_status st = rlt_batch_build(w, &b, cc_of, n, values, out, diag);
    rlt_free(values);
    return st;
}

rlt_status rlt_measure(const rlt_workload *w, const rlt_build_opts *bopts, const rlt_run_opts *ropts, int n,
                       const rlt_nest *const *nests, rlt_run_result *out, rlt_diag *diag)
{
    rlt_batch *b = NULL;
    rlt_status st = rlt_measure_build(w, bopts, n, nests, NULL, &b, diag);
    if (b) rlt_measure_run(b, ropts, out);
    rlt_batch_destroy(b);
    return st;
}
