/*
 * rltune/records.h - tuning records: one row per measurement, failures
 * included, in an SQLite file (schema v2, docs/formats.md), filed under the
 * op's canonical spec and the target it was measured on. A committed record
 * is never lost; a file that is not rltune's is never written; several
 * processes may append to one database at once; a file of schema v1 is
 * migrated when opened for writing, after a backup copy beside it.
 *
 * A record has one JSON form wherever it is shown (rlt_record_json):
 * JSON-lines exports, `rltune best --json`, `rltune history --json`.
 */
#ifndef RLTUNE_RECORDS_H
#define RLTUNE_RECORDS_H

#include <stdio.h>

#include "rltune/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlt_db rlt_db;

typedef struct rlt_db_opts {
    bool is_read_only;     /* open an existing database for reading only */
    double busy_timeout_s; /* wait this long for another writer's lock; 0 = 10 */
} rlt_db_opts;

/* Where a record was measured: the machine and the options that make two
 * measurements comparable. Its key text (rlt_record_target_text) is what
 * records are filed and looked up under:
 * "cpu=MODEL;vec=FLOATS;threads=N[;weights=prepacked|cold][;codegen=V];cc=CC". */
typedef struct rlt_record_target {
    char cpu[128];             /* CPU model name; no ';' */
    int vector_floats;         /* the widest vector register, in floats: 16 with AVX-512 */
    int n_threads;             /* run-time threads, >= 1 */
    bool is_weights_prepacked; /* weights staged once, untimed (false: staged and timed on every call) */
    bool is_weights_cold;      /* and evicted from the caches, with the workspace and the
                                  output, before every timed call (rlt_run_opts.cold_weights;
                                  implies is_weights_prepacked) */
    int codegen;               /* the version of the code measured; 0 = from before versions */
    char cc[384];              /* the compiler command line */
} rlt_record_target;

/* One measurement. Text fields are NUL-terminated copies (no pointers), so
 * a record is a plain value; `schedule` holds the full text. */
typedef struct rlt_record {
    int64_t id;                /* row id (0 before it is stored) */
    char spec[512];            /* canonical op spec (rlt_op_spec) */
    rlt_record_target target;
    char config[1024];         /* the configuration's key in its search space ("" for a bare schedule) */
    char schedule[4096];       /* the schedule, text form (rlt_sched_text) */
    char tuner[32];            /* who proposed it: "random", "xgb", "dataset", ... */
    rlt_status status;         /* of the measurement: OK, BUILD_ERROR, WRONG_ANSWER, ... */
    bool is_final;             /* a tuning run's final pick: measured again, more carefully */
    double time_min_ms;        /* 0 unless status is OK */
    double time_median_ms;
    double gflops;             /* 0 unless status is OK */
    uint64_t seed;             /* the tuning run's seed */
    double build_s;
    double created_s;          /* Unix time the measurement finished */
    char message[512];         /* why it failed ("" if OK; a final pick's says how it was measured) */
} rlt_record;

/* Opens (creating it if absent) a records database. `opts` may be NULL.
 * Refused, left byte for byte as it is: a file that is not an SQLite
 * database or not rltune's, one of a newer schema (INVALID_ARGUMENT), a
 * damaged one (IO_ERROR). A v1 file opened for writing is migrated (a copy
 * kept as PATH.v1.bak); opened read-only, it is read through a migrated copy
 * in memory. Read-only never creates. Free with rlt_db_close. Threads: one
 * handle to one thread at a time; processes share a file freely. */
RLT_API rlt_status rlt_db_open(const char *path, const rlt_db_opts *opts, rlt_db **out, rlt_diag *diag);
RLT_API void rlt_db_close(rlt_db *db); /* NULL ok */

/* The message of the last call on db that failed ("" when none). */
RLT_API const char *rlt_db_last_error(const rlt_db *db);

/* Appends records in one transaction: all of them or none. Ids are
 * ignored (rows get new ones); a record with an empty spec, a status out
 * of range, a text without its NUL, a number that is not finite or an
 * incomplete target is refused whole (INVALID_ARGUMENT). */
RLT_API rlt_status rlt_db_append(rlt_db *db, int n, const rlt_record *records, rlt_diag *diag);

/* What a tuning run reads back instead of measuring (spec, target, config)
 * again: its newest record taken while searching, or, with only final
 * picks' records, the newest of those. `target` is a key text. */
RLT_API rlt_status rlt_db_lookup(rlt_db *db, const char *spec, const char *target, const char *config,
                                 rlt_record *out, bool *out_found, rlt_diag *diag);

/* The fastest OK record of a spec (on one target's key text, or any when
 * target is NULL) among its configurations' newest records, final picks'
 * first. *out_found false when there is none. */
RLT_API rlt_status rlt_db_best(rlt_db *db, const char *spec, const char *target, rlt_record *out, bool *out_found,
                               rlt_diag *diag);

/* Calls fn for every record of a spec (NULL: every spec) on a target
 * (NULL: all), oldest first, until fn returns false. `record` is borrowed
 * for the call; fn may read the database but not write to it through this
 * handle. */
typedef bool (*rlt_db_record_fn)(const rlt_record *record, void *ctx);
RLT_API rlt_status rlt_db_history(rlt_db *db, const char *spec, const char *target, rlt_db_record_fn fn, void *ctx,
                                  rlt_diag *diag);

/* rlt_db_best among the records `accept` returns true for (NULL: all):
 * the candidates in rlt_db_best's order, the first accepted. A network at
 * several threads takes only kernels of its own compiler this way. */
RLT_API rlt_status rlt_db_best_where(rlt_db *db, const char *spec, const char *target, rlt_db_record_fn accept,
                                     void *ctx, rlt_record *out, bool *out_found, rlt_diag *diag);

/* Number of records (of one spec, or all when spec is NULL). */
RLT_API rlt_status rlt_db_count(rlt_db *db, const char *spec, int64_t *out_n, rlt_diag *diag);

/* Writes the records (all, or one spec's) as JSON lines, one record a
 * line, in id order. */
RLT_API rlt_status rlt_db_export_jsonl(rlt_db *db, const char *spec, FILE *out, rlt_diag *diag);

/* Appends the records of JSON lines (format v2, or v1 of an earlier
 * rltune) not already present (same op, target, config, created_s and
 * status), in one transaction: a malformed line fails the whole import
 * with "SOURCE:LINE: ..." (PARSE_ERROR) and stores nothing. The counts may
 * be NULL. */
RLT_API rlt_status rlt_db_import_jsonl(rlt_db *db, FILE *in, const char *source, int *out_n_added,
                                       int *out_n_skipped, rlt_diag *diag);

/* A record as one line of JSON (format v2, docs/formats.md). Free with
 * rlt_free; NULL when out of memory. */
RLT_API char *rlt_record_json(const rlt_record *r);

/* Reads one record object of format v2 or v1; errors (PARSE_ERROR) start
 * with `where` ("FILE:LINE"). */
RLT_API rlt_status rlt_record_from_json(const char *text, const char *where, rlt_record *out, rlt_diag *diag);

/* A field of a record's configuration key ("v1;vec=j*16;i.tile=8;...;cc=clang"),
 * read without its search space: the value of field `name` ("cc") into
 * buf. False when the key has no such field or its value does not fit in
 * cap bytes. */
RLT_API bool rlt_config_key_get(const char *key, const char *name, char *buf, size_t cap);

/* The compiler a configuration key chose: "clang" for its `cc=clang`
 * field, NULL when it keeps the base compiler (gcc, or the --cc given).
 * Static storage. */
RLT_API const char *rlt_config_key_cc(const char *key);

/* A target's key text. Free with rlt_free; NULL when out of memory. */
RLT_API char *rlt_record_target_text(const rlt_record_target *t);

/* Reads a key text back into its fields (PARSE_ERROR naming the field). */
RLT_API rlt_status rlt_record_target_parse(const char *key, rlt_record_target *out, rlt_diag *diag);

RLT_API bool rlt_record_target_equal(const rlt_record_target *a, const rlt_record_target *b);

#ifdef __cplusplus
}
#endif
#endif /* RLTUNE_RECORDS_H */
