/*
 * measure_matmul.c - the worked example of include/rltune.h as a program:
 * parse an op, apply a schedule, measure the kernel against the reference.
 * Built with the project (target example_measure_matmul) and run by CTest.
 *
 * Usage: example_measure_matmul [SPEC]   (default matmul:M=256,N=256,K=256)
 */
#include "measure/measure.h"
#include "sched/sched.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    const char *spec = argc > 1 ? argv[1] : "matmul:M=256,N=256,K=256";
    rlt_diag d = {0};
    rlt_op *op = NULL;
    rlt_sched *s = NULL;
    rlt_workload *w = NULL;
    int rc = 2;
    if (rlt_op_parse(spec, &op, &d) != RLT_STATUS_OK) goto done;
    if (rlt_sched_parse("split j 8\nreorder k j.i\nvectorize j.i\n", "<inline>", &s, &d) != RLT_STATUS_OK) goto done;
    rlt_nest nest;
    if (rlt_sched_apply(s, op, &nest, &d) != RLT_STATUS_OK) goto done;
    rlt_build_opts bopts = {0}; /* gcc, default flags and cache */
    rc = 3;
    if (rlt_workload_create(op, &bopts, 0, &w, &d) != RLT_STATUS_OK) goto done;
    rlt_run_opts ropts = {0}; /* 5 samples of >= 20 ms, 1 thread, 10 s timeout */
    rlt_run_result r;
    if (rlt_measure_nests(w, &bopts, &ropts, 1, &nest, &r, &d) != RLT_STATUS_OK) goto done;
    printf("%s: %s, %.3f ms, %.1f GFLOP/s\n", op->spec, rlt_status_str(r.status), r.time_median_ms, r.gflops);
    rc = r.status == RLT_STATUS_OK ? 0 : 1;
done:
    if (d.status != RLT_STATUS_OK) fprintf(stderr, "example: %s\n", d.message);
    rlt_workload_destroy(w);
    rlt_sched_destroy(s);
    rlt_op_destroy(op);
    return rc;
}
