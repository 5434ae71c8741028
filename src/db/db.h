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

#include <stdio.h>

#define RLT_DB_SCHEMA_VERSION 1

typedef struct rlt_db rlt_db;

typedef struct rlt_db_opts {
    bool is_read_only;     /* open an existing database for reading only */
    double busy_timeout_s; /* wait this long for another writer's lock; 0 = 10 */
    /* Tests only: caps the database at this many pages (SQLite's
     * max_page_count) so that a write past it fails as a full disk would.
     * 0 = no cap. */
    int max_pages_for_tests;
} rlt_db_opts;

/* One measurement. Text fields are NUL-terminated copies (no pointers), so
 * a record is a plain value; `schedule` holds the full trace text. */
typedef struct rlt_record {
    int64_t id;              /* row id (0 before it is stored) */
    char spec[512];          /* canonical op spec (rlt_op.spec) */
    char target[512];        /* target key: CPU model, compiler, flags (rlt_target_key) */
    char config[1024];       /* the configuration's key in its search space, e.g.
                                "space=v1;tile_i=6,16;..." ("" for a bare schedule) */
    char schedule[4096];     /* the schedule trace text (rlt_sched_print) */
    char tuner[32];          /* who proposed it: "random", "xgb", "measure", ... */
    char status[24];         /* rlt_status_str of the measurement: "OK", "WRONG_ANSWER", ... */
    double time_min_ms;      /* 0 unless status is OK */
    double time_median_ms;
    double gflops;           /* 0 unless status is OK */
    int n_threads;
    uint64_t seed;           /* the tuning run's seed */
    double build_s;
    double created_s;        /* Unix time the measurement finished */
    char message[512];       /* why it failed, "" if OK */
} rlt_record;

/* Opens (creating it if absent) a records database. `opts` may be NULL
 * (all defaults). On success *out is the handle (close with rlt_db_close);
 * on failure *out is NULL.
 * - An existing file that is not an SQLite database, an SQLite database
 *   that is not rltune's (no rltune meta table but other tables), or one
 *   with a newer schema version is refused (INVALID_ARGUMENT) with a message
 *   naming the file, and is left byte-for-byte unchanged. A damaged
 *   database is refused as corrupt (IO_ERROR), never repaired.
 * - An empty or new file, or an SQLite database without any table, gets the
 *   schema. WAL journal mode, so readers never block the writer and a
 *   kill -9 loses only the open transaction.
 * - Read-only mode never creates: an absent or empty file is refused.
 * - Another process holding the write lock longer than busy_timeout_s is an
 *   IO_ERROR saying the database is locked.
 * Threads: one handle belongs to one thread at a time; processes (and
 * handles) may share a file freely. Never carry a handle across fork(). */
rlt_status rlt_db_open(const char *path, const rlt_db_opts *opts, rlt_db **out, rlt_diag *diag);
void rlt_db_close(rlt_db *db); /* NULL ok */

/* The id of a workload (spec, target), created if new. */
rlt_status rlt_db_workload(rlt_db *db, const char *spec, const char *target, int64_t *out_id, rlt_diag *diag);

/* Appends records in one transaction: all of them are stored or none. A
 * full disk is an IO_ERROR saying so; records appended before stay. Each
 * record's id is ignored (rows get new ids); a record with an empty spec, an
 * unknown status, a text field without its NUL or a number that is not
 * finite is refused (INVALID_ARGUMENT) and nothing is stored. */
rlt_status rlt_db_append(rlt_db *db, int n, const rlt_record *records, rlt_diag *diag);

/* The most recent record of (spec, target, config), if any: how `tune`
 * resumes without measuring a config again. */
rlt_status rlt_db_lookup(rlt_db *db, const char *spec, const char *target, const char *config, rlt_record *out,
                         bool *out_found, rlt_diag *diag);

/* How the message of a final pick's record starts (rlt_tune_opts.n_final):
 * best prefers such careful measurements. */
#define RLT_DB_FINAL_PREFIX "final pick:"
#define RLT_DB_FINAL_PREFIX_SQL "'final pick:'"

/* The fastest OK record of a spec (for one target, or any when target is
 * NULL) among its configurations' latest records: a configuration counts by
 * its newest measurement, and final picks' records come first
 * (docs/formats.md). out_found false when there is none. */
rlt_status rlt_db_best(rlt_db *db, const char *spec, const char *target, rlt_record *out, bool *out_found,
                       rlt_diag *diag);

/* Calls fn for every record of a spec (spec NULL: every spec; target NULL:
 * all targets), oldest first (created_s, then id), until fn returns false.
 * `record` is borrowed for the call. fn may read the database (lookup, best,
 * count, history) but must not write to it through the same handle. */
typedef bool (*rlt_db_record_fn)(const rlt_record *record, void *ctx);
rlt_status rlt_db_history(rlt_db *db, const char *spec, const char *target, rlt_db_record_fn fn, void *ctx,
                          rlt_diag *diag);

/* Writes every record (spec NULL) or those of one spec as JSON lines, one
 * record per line, format v1 (docs/formats.md). */
rlt_status rlt_db_export_jsonl(rlt_db *db, const char *spec, FILE *out, rlt_diag *diag);

/* Reads JSON lines written by rlt_db_export_jsonl and appends the records
 * not already present (a record is present when its spec, target, config,
 * created_s and status match one stored), in one transaction. A malformed
 * line fails the whole import with the line number ("SOURCE:LINE: ...",
 * PARSE_ERROR); nothing is stored. `source` names the input in messages.
 * The write lock is held while the input is read. The counts may be NULL. */
rlt_status rlt_db_import_jsonl(rlt_db *db, FILE *in, const char *source, int *out_n_added, int *out_n_skipped,
                               rlt_diag *diag);

/* Number of records (of one spec, or all when spec is NULL), for tests and
 * `rltune history`. */
rlt_status rlt_db_count(rlt_db *db, const char *spec, int64_t *out_n, rlt_diag *diag);

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
