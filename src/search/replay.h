/*
 * replay.h - a dataset (dataset.h) answering for measurement: loaded into
 * memory once, then asked as often as wanted, by a session's replay
 * measurer or directly. Nothing is compiled or run, nothing is stored.
 */
#ifndef RLT_REPLAY_H
#define RLT_REPLAY_H

#include "search/dataset.h"

typedef struct rlt_replay rlt_replay;

/* One configuration's measurement, as the dataset recorded it. */
typedef struct rlt_replay_entry {
    rlt_status status;    /* of the measurement: OK, WRONG_ANSWER, ... */
    double time_min_ms;   /* 0 unless OK */
    double time_median_ms;
    double gflops;        /* 0 unless OK */
} rlt_replay_entry;

/* Opens the dataset `path` (read-only; never written) for replaying `op`
 * (borrowed: it must outlive the replay) and loads its measurements into
 * memory: the latest record of each configuration. `run_target` (may be
 * NULL: not checked) is the target key the run would have measured with
 * (rlt_tune_target_key): its threads and compiler part must equal the
 * dataset's; the CPU part may differ, since a replay answers for the
 * machine that measured the dataset. Refused with a message naming the
 * file: a missing or unreadable file (IO_ERROR), one that is not a
 * records database or not a dataset, a dataset of another op or target,
 * an unfinished one (fewer configurations measured than it plans), one
 * whose configurations do not belong to this rltune's space
 * (INVALID_ARGUMENT), a malformed description (PARSE_ERROR). */
rlt_status rlt_replay_open(const char *path, const rlt_op *op, const char *run_target, rlt_replay **out,
                           rlt_diag *diag);
void rlt_replay_close(rlt_replay *r); /* NULL ok */

const rlt_dataset_info *rlt_replay_info(const rlt_replay *r);

/* The dataset's space, restricted to its configurations (space.h): what
 * tuners of a replay search. Borrowed from the replay. */
const rlt_space *rlt_replay_space(const rlt_replay *r);

/* The measurement of configuration `c` of the replay's space, or NULL when
 * the dataset does not have it. Borrowed; a hash lookup, no I/O. */
const rlt_replay_entry *rlt_replay_find(const rlt_replay *r, const rlt_config *c);

/* A session's measurer that answers from the replay (borrowed: it must
 * outlive the measurer): a configuration the dataset has is REPLAYED with
 * its recorded status and GFLOP/s, one it lacks is ABSENT (scored 0, not a
 * failure). It cannot measure again: a replay has no final pick. */
rlt_status rlt_measurer_replay_create(const rlt_replay *replay, rlt_measurer **out, rlt_diag *diag);

#endif /* RLT_REPLAY_H */
