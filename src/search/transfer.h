/*
 * transfer.h - warm starts from other workloads' records (AutoTVM's
 * transfer learning, `rltune tune --transfer FILE`): the measured
 * configurations of other workloads of the same op kind on the same target
 * become training rows for a cost model, each workload's scores normalised
 * by its own best, so that a model-based tuner proposes from its first
 * batch on instead of at random.
 */
#ifndef RLT_TRANSFER_H
#define RLT_TRANSFER_H

#include "db/db.h"
#include "space/space.h"

typedef struct rlt_transfer {
    int n_rows;
    int n_features;     /* = rlt_space_n_features of the space it was made for */
    float *xs;          /* n_rows x n_features, owned */
    double *ys;         /* n_rows, in [0, 1]: GFLOP/s over the workload's best; failures 0 */
    int n_workloads;    /* other workloads that gave rows */
    int n_skipped;      /* records left out: another op kind or feature length, unparsable configs */
} rlt_transfer;

/* Collects the rows for tuning `op` in `space` (made with `space_opts`)
 * from the records of `target` in `db`: every record of a workload with the
 * same op kind (not user expressions, whose specs are not re-parsed here)
 * and a spec other than op's, whose space (built with the same options)
 * has the same feature length. At most `max_rows` rows (0 = 20000), the
 * newest kept when there are more. A workload without an OK record gives no
 * rows. Free with rlt_transfer_free. */
rlt_status rlt_transfer_collect(rlt_db *db, const rlt_op *op, const rlt_space *space,
                                const rlt_space_opts *space_opts, const char *target, int max_rows,
                                rlt_transfer *out, rlt_diag *diag);
void rlt_transfer_free(rlt_transfer *t);

#endif /* RLT_TRANSFER_H */
