/*
 * tune_matmul.c - rltune's public API, the second half of the worked
 * example in rltune.h: a tuning session of a matmul, 32 trials in batches
 * of 8, stepped by hand, the best printed after each batch; every
 * measurement stored in a records database, so that running it again
 * reads them back instead of measuring.
 *
 * Build against an installed rltune:
 *     cc tune_matmul.c $(pkg-config --cflags --libs rltune) -o tune_matmul
 * Usage: tune_matmul [SPEC [DB]]   (default matmul:M=128,N=128,K=128, tune_matmul.db)
 */
#include <rltune.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    const char *spec = argc > 1 ? argv[1] : "matmul:M=128,N=128,K=128";
    rlt_diag d = {0};
    rlt_op *op = NULL;
    rlt_session *s = NULL;
    int rc = 2;
    if (rlt_op_parse(spec, &op, &d) != RLT_STATUS_OK) goto done;
    rlt_session_options o;
    rlt_session_options_init(&o); /* xgb-rank, rule-built seeds first, a final pick of 4 */
    o.tuner = "xgb";
    o.n_trials = 32;
    o.batch_size = 8;
    o.seed = 1;
    o.db_path = argc > 2 ? argv[2] : "tune_matmul.db";
    if (rlt_session_open(op, &o, &s, NULL, &d) != RLT_STATUS_OK) goto done;
    rc = 3;
    rlt_session_summary sum;
    while (!rlt_session_is_done(s)) {
        if (rlt_session_step(s, &d) != RLT_STATUS_OK) goto done;
        rlt_session_summary_get(s, &sum);
        printf("after %2d trials (%d measured, %d read back): best %.2f GFLOP/s  %s\n", sum.n_trials,
               sum.n_measured, sum.n_from_records, sum.best_gflops, sum.best_config);
    }
    if (rlt_session_finish(s, &d) != RLT_STATUS_OK) goto done;
    rlt_session_summary_get(s, &sum);
    printf("best %.2f GFLOP/s, %.4f ms, after %d candidates measured again\nschedule:\n%s", sum.best_gflops,
           sum.best_time_ms, sum.n_final, sum.best_schedule);
    rc = sum.best_gflops > 0 ? 0 : 1;
done:
    if (d.status != RLT_STATUS_OK) fprintf(stderr, "tune_matmul: %s\n", d.message);
    rlt_session_destroy(s);
    rlt_op_destroy(op);
    return rc;
}
