/*
 * dataset.h - datasets for replayed measurement: an op's whole space (or a
 * large uniform sample of it) measured once (rlt_dataset_build), then
 * answered from the file as often as wanted (replay.h): tuners compared
 * over many seeds in seconds, on the same measurements, without noise.
 *
 * A dataset is a records database (db.h) whose rltune_meta table holds a
 * description under the key "dataset" (JSON, format v1: docs/datasets.md):
 * op spec, target key, the space's parameters, whether it is every valid
 * configuration or a sample, the sample's size and seed. Its records are
 * those `rltune dataset` made, proposer "dataset", so `rltune best` and
 * `rltune history` read it as they read any records.
 *
 * Typical use:
 *     rlt_db_open("mm.db", NULL, &db, &d);
 *     rlt_dataset_build(op, db, "mm.db", &(rlt_dataset_opts){...}, &info, &result, &d);
 *     rlt_replay *rp;    rlt_replay_open("mm.db", op, NULL, &rp, &d);
 *     for seeds:         rlt_tune(op, &(rlt_tune_opts){.replay = rp, .tuner = "ga", .seed = s, ...}, ...);
 *     rlt_replay_close(rp);
 */
#ifndef RLT_DATASET_H
#define RLT_DATASET_H

#include "search/session.h"

#define RLT_DATASET_FORMAT_VERSION 1
#define RLT_DATASET_META_KEY "dataset"      /* its key in rltune_meta */
#define RLT_DATASET_PROPOSER "dataset"      /* the `tuner` of its records */
/* RLT_DATASET_DEFAULT_SAMPLES and RLT_DATASET_MAX_SAMPLES: rltune/session.h. */
/* Spaces of at most this many configurations (valid or not) are
 * enumerated, so their valid ones are counted exactly and a dataset of
 * all of them is complete; larger ones are sampled by rejection. Checking
 * a configuration costs 1 to 6 us: enumerating takes seconds at most. */
#define RLT_DATASET_ENUMERATE_MAX (UINT64_C(1) << 21)

/* rlt_dataset_info and rlt_dataset_opts are public: rltune/session.h. */

/* The configurations a dataset of `space` (unrestricted) measures, in
 * measuring order, from the sub-space `fixing` leaves (NULL: the whole
 * space; its size is what info->space_size says): every valid one when the
 * (sub-)space is enumerable and has at
 * most n_samples of them (info->is_complete), else n_samples distinct valid
 * ones drawn uniformly (fewer only if rejection sampling finds no more);
 * the order is shuffled, so that any prefix is a uniform sample and slow
 * drifts of the machine spread over the whole space. Seeded by `seed`
 * alone: the same space and seed give the same plan. Fills the space_size,
 * n_valid, is_complete, n_samples, seed and n_configs fields of `info`.
 * *out_configs is owned (rlt_free). */
rlt_status rlt_dataset_plan(const rlt_space *space, const rlt_space_fixing *fixing, int n_samples, uint64_t seed,
                            rlt_config **out_configs, int *out_n, rlt_dataset_info *info, rlt_diag *diag);

/* Measures the dataset of `op` into the records database `db` (opened
 * read-write from `path`, named in messages; borrowed), exactly as
 * rlt_tune measures (batches built together, then run one at a time, each
 * batch's records stored in one transaction; opts->stop stops after the
 * batch in flight). Resumes: a database already holding this dataset (same
 * op, target, fixed knobs, samples and seed) measures only what it lacks, on the space
 * it was started with. Refused (INVALID_ARGUMENT, nothing written): a
 * records database that is not a dataset and holds records, a dataset of
 * other options or of a space that has changed since. *out_info is the
 * description; *out is the run (free with rlt_tune_result_free), whose
 * n_from_db counts configurations an earlier run measured. */
rlt_status rlt_dataset_build(const rlt_op *op, rlt_db *db, const char *path, const rlt_dataset_opts *opts,
                             rlt_dataset_info *out_info, rlt_tune_result *out, rlt_diag *diag);

/* Whether the records database `db` (opened from `path`, named in
 * messages) is a dataset, and if so its description. PARSE_ERROR when the
 * description is malformed or of a newer format. */
rlt_status rlt_dataset_info_get(rlt_db *db, const char *path, rlt_dataset_info *out, bool *out_is_dataset,
                                rlt_diag *diag);

/* Opens (creating it when absent) the records database a live run stores
 * into, and refuses a dataset, which holds only its own measurements
 * (INVALID_ARGUMENT; `instead` ends the message with what to do, e.g.
 * "replay it (replay_path), or tune into another database"). */
rlt_status rlt_dataset_refusing_open(const char *path, const char *instead, rlt_db **out, rlt_diag *diag);

/* Writes the description into a records database (what rlt_dataset_build
 * does before measuring; tests use it to make datasets of made-up
 * measurements). */
rlt_status rlt_dataset_info_put(rlt_db *db, const rlt_dataset_info *info, rlt_diag *diag);

#endif /* RLT_DATASET_H */
