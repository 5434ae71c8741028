/*
 * measure_matmul.c - rltune's public API, the first half of the worked
 * example in rltune.h: parse an op, build a schedule from typed steps, make
 * its loop nest (every step checked), and measure the kernel on this
 * machine against the op's reference.
 *
 * Build against an installed rltune:
 *     cc measure_matmul.c $(pkg-config --cflags --libs rltune) -o measure_matmul
 * Usage: measure_matmul [SPEC]   (default matmul:M=256,N=256,K=256)
 */
#include <rltune.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    const char *spec = argc > 1 ? argv[1] : "matmul:M=256,N=256,K=256";
    rlt_diag d = {0};
    rlt_op *op = NULL;
    rlt_sched *s = rlt_sched_create();
    rlt_nest *nest = NULL;
    rlt_workload *w = NULL;
    char *tree = NULL;
    int rc = 2;
    if (!s || rlt_op_parse(spec, &op, &d) != RLT_STATUS_OK) goto done;
    /* j split by a vector of 8 floats, k outside it: a vectorised inner loop */
    const char *const order[] = {"k", "j.i"};
    if (rlt_sched_add_split(s, "j", 8, &d) != RLT_STATUS_OK ||
        rlt_sched_add_reorder(s, 2, order, &d) != RLT_STATUS_OK ||
        rlt_sched_add_vectorize(s, "j.i", &d) != RLT_STATUS_OK)
        goto done;
    if (rlt_nest_create(op, s, &nest, &d) != RLT_STATUS_OK) goto done;
    tree = rlt_nest_tree(nest);
    printf("%s\n%s", rlt_op_spec(op), tree ? tree : "");
    rc = 3;
    if (rlt_workload_create(op, NULL, 0, &w, &d) != RLT_STATUS_OK) goto done; /* gcc, default flags and cache */
    rlt_run_result r;
    const rlt_nest *const nests[] = {nest};
    if (rlt_measure(w, NULL, NULL, 1, nests, &r, &d) != RLT_STATUS_OK) goto done; /* 5 samples of >= 20 ms */
    printf("%s: %s, %.3f ms, %.1f GFLOP/s (rltune %s)\n", rlt_op_spec(op), rlt_status_str(r.status), r.time_median_ms,
           r.gflops, rlt_version());
    rc = r.status == RLT_STATUS_OK ? 0 : 1;
done:
    if (d.status != RLT_STATUS_OK) fprintf(stderr, "measure_matmul: %s\n", d.message);
    rlt_free(tree);
    rlt_workload_destroy(w);
    rlt_nest_destroy(nest);
    rlt_sched_destroy(s);
    rlt_op_destroy(op);
    return rc;
}
