/*
 * db.h - tuning records in SQLite: one row per measurement, failures
 * included, keyed by workload (canonical op spec + target). Never loses a
 * committed record, never truncates or rewrites a file it did not create,
 * and lets several processes append to one database at once.
 *
 * Typical use (a tuning run):
 *     rlt_db *db;        rlt_db_open("rltune.db", &(rlt_db_opts){0}, &db, &d);
 *     int64_t wid;       rlt_db_workload(db, op->spec, target_key, &wid, &d);
 *     for each batch:    rlt_db_lookup(...) to skip configs measured before,
 *                        measure the rest, rlt_db_append(db, n, records, &d);
 *     rlt_db_close(db);
 */
#ifndef RLT_DB_H
#define RLT_DB_H

#include "core/core.h"
#include "rltune/records.h"

#include <stdio.h>

#define RLT_DB_SCHEMA_VERSION 3
#define RLT_RECORD_JSON_VERSION 2 /* of a record's JSON form (rlt_record_to_json) */
/* How format v1 (schema v1, JSON lines v1) marked a final pick's record: by
 * the start of its message. Read when migrating, never written. */
#define RLT_RECORD_V1_FINAL_PREFIX "final pick:"

/* The public part (rlt_db, rlt_db_opts, rlt_record_target, rlt_record, and
 * the functions on them) is rltune/records.h. */

/* Tests only: what rlt_db_open_for_tests adds to rlt_db_opts. */
typedef struct rlt_db_test_opts {
    /* caps the database at this many pages (SQLite's max_page_count), so
     * that a write past it fails as a full disk would; 0 = no cap */
    int max_pages;
    /* the process kills itself (SIGKILL) at this step of a migration from
     * schema v1 (1 = backup written under its temporary name ...
     * RLT_DB_MIGRATION_STEPS = after the commit); 0 = never */
    int kill_at_migration_step;
} rlt_db_test_opts;

#define RLT_DB_MIGRATION_STEPS 6

rlt_status rlt_db_open_for_tests(const char *path, const rlt_db_opts *opts, const rlt_db_test_opts *test_opts,
                                 rlt_db **out, rlt_diag *diag);

/* ---- records as values (record.c) --------------------------------------- */

/* Appends t's key text to out. */
void rlt_record_target_key(const rlt_record_target *t, rlt_str *out);

/* t's weights as the key, the JSON and the database write them:
 * "prepacked", "cold" (prepacked and evicted before every timed call) or
 * "timed"; and back: true (t's two fields set) when text[0..len) is one. */
const char *rlt_record_weights_text(const rlt_record_target *t);
bool rlt_record_weights_parse(const char *text, size_t len, rlt_record_target *t);

/* True (with what is wrong written to buf) when r cannot be stored: a text
 * without its NUL inside its buffer, an empty spec, a status out of range,
 * a number that is not finite (JSON could not hold it, SQLite would store a
 * NaN as NULL), an incomplete target. */
bool rlt_record_problem(const rlt_record *r, char *buf, size_t cap);

/* Appends r as one JSON object on one line (format v2, docs/formats.md):
 * {"v":2,"id","op","target":{"cpu","vector_floats","threads","weights",
 * "codegen","cc"},"config","schedule","tuner","status","final",
 * "time_ms":{"min","median"},"gflops","seed","build_s","created_s",
 * "message"}. Numbers read back bit for bit; the seed is a string. Sets
 * out->has_failed when out of memory. */
void rlt_record_to_json(const rlt_record *r, rlt_str *out);

/* ---- the database (db.c) -------------------------------------------------- */

/* rlt_db_open, rlt_db_close, rlt_db_append, rlt_db_lookup, rlt_db_best,
 * rlt_db_history, rlt_db_count and the JSON-lines export and import are
 * declared in rltune/records.h; their details: docs/formats.md. */

/* The id of a workload (spec, target), created if new. */
rlt_status rlt_db_workload(rlt_db *db, const char *spec, const rlt_record_target *target, int64_t *out_id,
                           rlt_diag *diag);

/* A value of the database's rltune_meta table, where other parts of rltune
 * keep what describes a whole file (the key 'dataset': docs/datasets.md).
 * Readers that do not know a key ignore it, so new keys need no new schema
 * version. get: *out_found false when the key is absent (out unchanged),
 * else the value is appended to `out`. set: inserts or replaces, in one
 * transaction; the keys 'app' and 'schema_version' are rltune's own and
 * are refused (INVALID_ARGUMENT), as is a read-only handle. */
rlt_status rlt_db_meta_get(rlt_db *db, const char *key, rlt_str *out, bool *out_found, rlt_diag *diag);
rlt_status rlt_db_meta_set(rlt_db *db, const char *key, const char *value, rlt_diag *diag);

#endif /* RLT_DB_H */
