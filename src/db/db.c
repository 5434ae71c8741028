/*
 * db.c - the tuning records database (db.h): opening a file safely (one
 * that is not ours is never written), schema v3 and the migrations of a v1
 * and a v2 file to it, appends of one transaction each, the queries a tuner and the
 * CLI ask (lookup, best, history, count), and JSON-lines export / import
 * (each line one record in the JSON form of record.c). Both formats are
 * described in docs/formats.md, "Tuning records".
 *
 * Every SQL text here is a constant: user text reaches SQLite only as a
 * bound parameter. An SQLite failure becomes an rlt_status and a message
 * that names the file (db_fail). One table, k_columns, lists the columns a
 * record query selects and drives reading rows, so the two cannot drift
 * apart.
 */
#include "db/db.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DB_DEFAULT_BUSY_TIMEOUT_S 10.0
/* A record's text fields total under 8 KiB; even with every byte escaped
 * as \uXXXX a line stays far below this. Longer lines are not records. */
#define JSONL_LINE_MAX_BYTES (1 << 20)

#define DB_STR2(x) #x
#define DB_STR(x) DB_STR2(x)

struct rlt_db {
    sqlite3 *conn;
    char *path;      /* as the caller gave it, for messages (owned) */
    char *open_path; /* what SQLite is given: `path`, with "./" in front when
                        SQLite would read it as a "file:" URI (owned) */
    double busy_timeout_s;
    bool is_read_only;
    bool is_in_memory;   /* a read-only v1 file, migrated into a memory database */
    int kill_at_migration_step; /* rlt_db_test_opts.kill_at_migration_step */
    char last_error[1024];      /* the last failed call's message; "" when none */
    /* Statements used per record or per query, prepared once at open. */
    sqlite3_stmt *st_workload_find;
    sqlite3_stmt *st_workload_insert;
    sqlite3_stmt *st_insert;
    sqlite3_stmt *st_lookup;
    sqlite3_stmt *st_exists;
    sqlite3_stmt *st_best;
    sqlite3_stmt *st_count_all;
    sqlite3_stmt *st_count_spec;
};

/* ---- schema v3 ------------------------------------------------------------ */

/* A workload is an op spec on a target; the target's fields are columns,
 * and `target` is their key text (rlt_record_target_key), which lookups go
 * by. A measurement's status is a status name (rlt_status_str). */
#define SCHEMA_WORKLOADS_COLUMNS                                                                         \
    "(id INTEGER PRIMARY KEY, spec TEXT NOT NULL, target TEXT NOT NULL,"                                   \
    " cpu TEXT NOT NULL, vector_floats INTEGER NOT NULL, threads INTEGER NOT NULL,"                        \
    " weights TEXT NOT NULL CHECK (weights IN ('prepacked', 'cold', 'timed')), codegen INTEGER NOT NULL," \
    " cc TEXT NOT NULL, UNIQUE(spec, target));"
static const char k_schema_tables_sql[] =
    "CREATE TABLE workloads" SCHEMA_WORKLOADS_COLUMNS
    "CREATE TABLE measurements(id INTEGER PRIMARY KEY,"
    " workload_id INTEGER NOT NULL REFERENCES workloads(id),"
    " config TEXT NOT NULL, schedule TEXT NOT NULL, tuner TEXT NOT NULL, status TEXT NOT NULL,"
    " is_final INTEGER NOT NULL CHECK (is_final IN (0, 1)),"
    " time_min_ms REAL NOT NULL, time_median_ms REAL NOT NULL, gflops REAL NOT NULL, seed INTEGER NOT NULL,"
    " build_s REAL NOT NULL, created_s REAL NOT NULL, message TEXT NOT NULL);";
static const char k_schema_indexes_sql[] =
    "CREATE INDEX measurements_by_config ON measurements(workload_id, config);"
    "CREATE INDEX measurements_by_gflops ON measurements(workload_id, gflops);";
static const char k_schema_meta_sql[] =
    "CREATE TABLE rltune_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "INSERT INTO rltune_meta(key, value) VALUES ('app', 'rltune'), "
    "('schema_version', '" DB_STR(RLT_DB_SCHEMA_VERSION) "');";

/* The columns every record query selects, in the order of k_columns. */
#define RECORD_COLUMNS                                                                                     \
    "m.id, w.spec, w.cpu, w.vector_floats, w.threads, w.weights, w.codegen, w.cc, m.config, m.schedule," \
    " m.tuner, m.status, m.is_final, m.time_min_ms, m.time_median_ms, m.gflops, m.seed, m.build_s,"      \
    " m.created_s, m.message"
#define RECORD_FROM " FROM measurements m JOIN workloads w ON w.id = m.workload_id"

static const char k_sql_workload_find[] = "SELECT id FROM workloads WHERE spec = ?1 AND target = ?2";
static const char k_sql_workload_insert[] =
    "INSERT INTO workloads(spec, target, cpu, vector_floats, threads, weights, codegen, cc)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
static const char k_sql_insert[] =
    "INSERT INTO measurements(workload_id, config, schedule, tuner, status, is_final, time_min_ms,"
    " time_median_ms, gflops, seed, build_s, created_s, message)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";
/* A tuning run's reading back: the newest search-time record, else the
 * newest final pick (db.h). */
static const char k_sql_lookup[] = "SELECT " RECORD_COLUMNS RECORD_FROM
                                   " WHERE w.spec = ?1 AND w.target = ?2 AND m.config = ?3"
                                   " ORDER BY m.is_final ASC, m.created_s DESC, m.id DESC LIMIT 1";
static const char k_sql_exists[] = "SELECT 1" RECORD_FROM
                                   " WHERE w.spec = ?1 AND w.target = ?2 AND m.config = ?3"
                                   " AND m.created_s = ?4 AND m.status = ?5 LIMIT 1";
/* The fastest configuration by its latest record: a configuration measured
 * again (a tuning run's final pick) counts by its newest measurement, and
 * one whose newest failed does not count. Bare schedules (config "") are
 * told apart by their schedule. Careful measurements outrank quick ones: a
 * final pick's records come before tuning-time ones, which a few short
 * samples can flatter. */
/* The candidates for best, in order: OK records that are their
 * configuration's newest; k_sql_best takes the first, rlt_db_best_where the
 * first its filter accepts. */
#define SQL_BEST_ORDERED                                                                                         \
    "SELECT " RECORD_COLUMNS RECORD_FROM " WHERE w.spec = ?1 AND (?2 IS NULL OR w.target = ?2) AND m.status = 'OK'" \
    " AND NOT EXISTS (SELECT 1 FROM measurements n"                                                              \
    " WHERE n.workload_id = m.workload_id AND n.config = m.config"                                               \
    " AND (m.config <> '' OR n.schedule = m.schedule)"                                                           \
    " AND (n.created_s > m.created_s OR (n.created_s = m.created_s AND n.id > m.id)))"                           \
    " ORDER BY m.is_final DESC, m.gflops DESC, m.time_min_ms ASC, m.id ASC"
static const char k_sql_best[] = SQL_BEST_ORDERED " LIMIT 1";
static const char k_sql_best_ordered[] = SQL_BEST_ORDERED;
/* A query for "one spec" and one for "every spec" rather than one with
 * "?1 IS NULL OR": the OR would keep SQLite from using the spec's index. */
static const char k_sql_count_all[] = "SELECT count(*) FROM measurements";
static const char k_sql_count_spec[] = "SELECT count(*) FROM measurements"
                                       " WHERE workload_id IN (SELECT id FROM workloads WHERE spec = ?1)";
static const char k_sql_history_all[] = "SELECT " RECORD_COLUMNS RECORD_FROM
                                        " WHERE ?2 IS NULL OR w.target = ?2 ORDER BY m.created_s, m.id";
static const char k_sql_history_spec[] = "SELECT " RECORD_COLUMNS RECORD_FROM
                                         " WHERE w.spec = ?1 AND (?2 IS NULL OR w.target = ?2)"
                                         " ORDER BY m.created_s, m.id";
static const char k_sql_export_all[] = "SELECT " RECORD_COLUMNS RECORD_FROM " ORDER BY m.id";
static const char k_sql_export_spec[] = "SELECT " RECORD_COLUMNS RECORD_FROM " WHERE w.spec = ?1 ORDER BY m.id";

/* ---- the columns of a record ---------------------------------------------- */

typedef enum column_kind {
    COLUMN_ID,      /* int64_t row id */
    COLUMN_TEXT,    /* char[size], NUL-terminated */
    COLUMN_REAL,    /* double */
    COLUMN_INT,     /* int */
    COLUMN_SEED,    /* uint64_t, stored as the int64_t of the same bits */
    COLUMN_BOOL,    /* bool, stored as 0 or 1 */
    COLUMN_STATUS,  /* rlt_status, stored as its name */
    COLUMN_WEIGHTS  /* the rlt_record_target's weights fields, stored as 'prepacked', 'cold' or 'timed' */
} column_kind;

typedef struct column_desc {
    const char *name;
    column_kind kind;
    size_t offset; /* in rlt_record */
    size_t size;
} column_desc;

#define COLUMN(kind, name, member) {name, kind, offsetof(rlt_record, member), sizeof(((rlt_record *)0)->member)}

/* In RECORD_COLUMNS order. */
static const column_desc k_columns[] = {
    COLUMN(COLUMN_ID, "id", id),
    COLUMN(COLUMN_TEXT, "spec", spec),
    COLUMN(COLUMN_TEXT, "cpu", target.cpu),
    COLUMN(COLUMN_INT, "vector_floats", target.vector_floats),
    COLUMN(COLUMN_INT, "threads", target.n_threads),
    COLUMN(COLUMN_WEIGHTS, "weights", target),
    COLUMN(COLUMN_INT, "codegen", target.codegen),
    COLUMN(COLUMN_TEXT, "cc", target.cc),
    COLUMN(COLUMN_TEXT, "config", config),
    COLUMN(COLUMN_TEXT, "schedule", schedule),
    COLUMN(COLUMN_TEXT, "tuner", tuner),
    COLUMN(COLUMN_STATUS, "status", status),
    COLUMN(COLUMN_BOOL, "is_final", is_final),
    COLUMN(COLUMN_REAL, "time_min_ms", time_min_ms),
    COLUMN(COLUMN_REAL, "time_median_ms", time_median_ms),
    COLUMN(COLUMN_REAL, "gflops", gflops),
    COLUMN(COLUMN_SEED, "seed", seed),
    COLUMN(COLUMN_REAL, "build_s", build_s),
    COLUMN(COLUMN_REAL, "created_s", created_s),
    COLUMN(COLUMN_TEXT, "message", message),
};

/* ---- errors --------------------------------------------------------------- */

/* Turns an SQLite result code into a status with a message naming the file.
 * `doing` completes "... while <doing>". Call it before anything else runs
 * on the connection, which would replace SQLite's message. */
static rlt_status db_fail(const rlt_db *db, int rc, const char *doing, rlt_diag *diag)
{
    const char *detail = db->conn ? sqlite3_errmsg(db->conn) : sqlite3_errstr(rc);
    int sys_errno = db->conn ? sqlite3_system_errno(db->conn) : 0;
    char sys[160] = "";
    if (sys_errno) snprintf(sys, sizeof sys, " (%s)", strerror(sys_errno));
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return rlt_fail(diag, RLT_STATUS_IO_ERROR,
                        "database '%s' is locked by another process (waited %g s) while %s; nothing was changed",
                        db->path, db->busy_timeout_s, doing);
    case SQLITE_FULL:
        return rlt_fail(diag, RLT_STATUS_IO_ERROR,
                        "disk full writing '%s' while %s: the batch was not stored; earlier records are safe",
                        db->path, doing);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return rlt_fail(diag, RLT_STATUS_IO_ERROR,
                        "database '%s' is corrupt (found while %s: %s); rltune left it as it is: restore it "
                        "from a backup or an export",
                        db->path, doing, detail);
    case SQLITE_NOMEM:
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory in SQLite while %s on '%s'", doing,
                        db->path);
    case SQLITE_READONLY:
        if (rc == SQLITE_READONLY_ROLLBACK)
            return rlt_fail(diag, RLT_STATUS_IO_ERROR,
                            "'%s' has a hot journal ('%s-journal') left by an interrupted writer; rltune does "
                            "not roll back a database it has not checked: open it once with the sqlite3 shell",
                            db->path, db->path);
        return rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot write '%s' while %s: %s%s", db->path, doing, detail,
                        sys);
    case SQLITE_CANTOPEN:
        return rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot open database '%s': %s%s", db->path, detail, sys);
    case SQLITE_IOERR:
    case SQLITE_PERM:
        return rlt_fail(diag, RLT_STATUS_IO_ERROR, "I/O error on '%s' while %s: %s%s", db->path, doing, detail,
                        sys);
    default:
        return rlt_fail(diag, RLT_STATUS_IO_ERROR, "database '%s' failed while %s: %s", db->path, doing, detail);
    }
}

/* ---- small SQLite helpers ------------------------------------------------- */

static int exec_sql(rlt_db *db, const char *sql) { return sqlite3_exec(db->conn, sql, NULL, NULL, NULL); }

/* Binding a valid index with SQLITE_STATIC text allocates nothing and
 * cannot fail; a failure is a bug in the SQL above. */
static void bind_text(sqlite3_stmt *st, int i, const char *text)
{
    int rc = sqlite3_bind_text(st, i, text, -1, SQLITE_STATIC);
    RLT_ASSERT(rc == SQLITE_OK);
}

static void bind_double(sqlite3_stmt *st, int i, double v)
{
    int rc = sqlite3_bind_double(st, i, v);
    RLT_ASSERT(rc == SQLITE_OK);
}

static void bind_int64(sqlite3_stmt *st, int i, int64_t v)
{
    int rc = sqlite3_bind_int64(st, i, v);
    RLT_ASSERT(rc == SQLITE_OK);
}

/* Makes a cached statement ready for its next use and drops the borrowed
 * text it was bound to. */
static void stmt_done(sqlite3_stmt *st)
{
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

/* Every write is one transaction. IMMEDIATE takes the write lock at BEGIN,
 * waiting up to the busy timeout, so that a second writer waits its turn
 * instead of failing halfway through the transaction. */
static rlt_status tx_begin(rlt_db *db, const char *doing, rlt_diag *diag)
{
    int rc = exec_sql(db, "BEGIN IMMEDIATE");
    return rc == SQLITE_OK ? RLT_STATUS_OK : db_fail(db, rc, doing, diag);
}

static rlt_status tx_commit(rlt_db *db, const char *doing, rlt_diag *diag)
{
    int rc = exec_sql(db, "COMMIT");
    return rc == SQLITE_OK ? RLT_STATUS_OK : db_fail(db, rc, doing, diag);
}

/* Undoes the open transaction after a failure, unless SQLite already did
 * (it rolls back by itself on some errors, SQLITE_FULL among them). */
static void tx_rollback(rlt_db *db)
{
    if (db->conn && !sqlite3_get_autocommit(db->conn)) exec_sql(db, "ROLLBACK");
}

/* Copies the current row of a record query (RECORD_COLUMNS) into out. Text
 * longer than the record holds is refused, never cut, as is a status name
 * this rltune does not know. */
static rlt_status row_to_record(rlt_db *db, sqlite3_stmt *st, rlt_record *out, const char *doing, rlt_diag *diag)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < (int)RLT_ARRAY_LEN(k_columns); i++) {
        const column_desc *c = &k_columns[i];
        void *dst = (char *)out + c->offset;
        bool is_null = sqlite3_column_type(st, i) == SQLITE_NULL;
        switch (c->kind) {
        case COLUMN_ID: *(int64_t *)dst = sqlite3_column_int64(st, i); continue;
        case COLUMN_REAL: *(double *)dst = sqlite3_column_double(st, i); continue;
        case COLUMN_INT: *(int *)dst = sqlite3_column_int(st, i); continue;
        case COLUMN_BOOL: *(bool *)dst = sqlite3_column_int(st, i) != 0; continue;
        /* Stored as the signed 64-bit integer with the same bits. */
        case COLUMN_SEED: *(uint64_t *)dst = (uint64_t)sqlite3_column_int64(st, i); continue;
        case COLUMN_TEXT:
        case COLUMN_STATUS:
        case COLUMN_WEIGHTS: break;
        }
        const unsigned char *text = sqlite3_column_text(st, i);
        if (!text && !is_null) return db_fail(db, SQLITE_NOMEM, doing, diag);
        const char *t = text ? (const char *)text : "";
        if (c->kind == COLUMN_STATUS) {
            rlt_status status = rlt_status_from_str(t);
            if (status == RLT_STATUS_COUNT)
                return rlt_fail(diag, RLT_STATUS_IO_ERROR,
                                "database '%s': record %" PRId64 " has status '%.40s', which this rltune does not "
                                "know, while %s",
                                db->path, out->id, t, doing);
            *(rlt_status *)dst = status;
            continue;
        }
        if (c->kind == COLUMN_WEIGHTS) {
            if (!rlt_record_weights_parse(t, strlen(t), (rlt_record_target *)dst))
                return rlt_fail(diag, RLT_STATUS_IO_ERROR,
                                "database '%s': record %" PRId64 " has weights '%.40s', which this rltune does not "
                                "know, while %s",
                                db->path, out->id, t, doing);
            continue;
        }
        size_t len = text ? (size_t)sqlite3_column_bytes(st, i) : 0;
        if (len >= c->size)
            return rlt_fail(diag, RLT_STATUS_IO_ERROR,
                            "database '%s': record %" PRId64 " has a '%s' of %zu bytes, more than rltune holds (%zu) "
                            "while %s; it was not cut",
                            db->path, out->id, c->name, len, c->size - 1, doing);
        if (len) memcpy(dst, text, len);
        ((char *)dst)[len] = '\0';
    }
    return RLT_STATUS_OK;
}

/* Steps a record query and copies its first row, if any. Resets `st`. */
static rlt_status query_one(rlt_db *db, sqlite3_stmt *st, rlt_record *out, bool *out_found, const char *doing,
                            rlt_diag *diag)
{
    rlt_status status = RLT_STATUS_OK;
    *out_found = false;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        status = row_to_record(db, st, out, doing, diag);
        *out_found = status == RLT_STATUS_OK;
    } else if (rc != SQLITE_DONE) {
        status = db_fail(db, rc, doing, diag);
    }
    stmt_done(st);
    return status;
}

/* ---- opening -------------------------------------------------------------- */

/* Looks at the file before SQLite does. Absent or empty: a new database.
 * Anything else must begin with SQLite's 16-byte header, so that a file of
 * another kind is never handed to SQLite, which would write over it. */
static rlt_status check_file(const char *path, bool is_read_only, bool *out_is_new, rlt_diag *diag)
{
    *out_is_new = false;
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT && !is_read_only) {
            *out_is_new = true;
            return RLT_STATUS_OK;
        }
        return rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot open database '%s': %s", path, strerror(errno));
    }
    if (!S_ISREG(st.st_mode))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "'%s' is not a regular file: not a records database",
                        path);
    if (st.st_size == 0) {
        if (is_read_only)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "'%s' is empty: no rltune records to read (it was opened read-only)", path);
        *out_is_new = true;
        return RLT_STATUS_OK;
    }
    /* Whether it is an SQLite file at all is the read-only connection's to
     * say (connect_inspect). Never open() and close() the file here: closing
     * any descriptor of a file drops every POSIX lock this process holds on
     * it, the locks of its open connections to the database included, and
     * another process could then take the file for its own (checkpoint and
     * delete the WAL under them: "disk I/O error (No such file or
     * directory)"). */
    return RLT_STATUS_OK;
}

static rlt_status db_connect(rlt_db *db, int flags, rlt_diag *diag)
{
    int rc = sqlite3_open_v2(db->open_path, &db->conn, flags, NULL);
    if (rc != SQLITE_OK) return db_fail(db, rc, "opening it", diag);
    sqlite3_extended_result_codes(db->conn, 1);
    double ms = db->busy_timeout_s * 1000.0 + 0.5;
    sqlite3_busy_timeout(db->conn, ms >= (double)INT_MAX ? INT_MAX : (int)ms);
    return RLT_STATUS_OK;
}

static void db_disconnect(rlt_db *db)
{
    sqlite3_close_v2(db->conn);
    db->conn = NULL;
}

/* Reads one value of rltune_meta; *out_found false when the key is absent. */
static rlt_status meta_get(rlt_db *db, const char *key, char *out, size_t cap, bool *out_found, rlt_diag *diag)
{
    sqlite3_stmt *st = NULL;
    rlt_status status = RLT_STATUS_OK;
    *out_found = false;
    int rc = sqlite3_prepare_v2(db->conn, "SELECT value FROM rltune_meta WHERE key = ?1", -1, &st, NULL);
    if (rc != SQLITE_OK) {
        if ((rc & 0xff) == SQLITE_ERROR)
            status = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                              "'%s' has an rltune_meta table that is not rltune's (%s); rltune left it as it is",
                              db->path, sqlite3_errmsg(db->conn));
        else
            status = db_fail(db, rc, "reading its rltune_meta table", diag);
        goto cleanup;
    }
    bind_text(st, 1, key);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const unsigned char *v = sqlite3_column_text(st, 0);
        snprintf(out, cap, "%s", v ? (const char *)v : "");
        *out_found = true;
    } else if (rc != SQLITE_DONE) {
        status = db_fail(db, rc, "reading its rltune_meta table", diag);
    }
cleanup:
    sqlite3_finalize(st);
    return status;
}

/* Decides what the database holds (the caller holds a transaction, so one
 * snapshot is read): no object at all (*out_version 0: a new or empty
 * database), rltune's schema of a version this code reads (1 or
 * RLT_DB_SCHEMA_VERSION), or something else, which is refused. Reads only. */
static rlt_status inspect(rlt_db *db, int *out_version, rlt_diag *diag)
{
    sqlite3_stmt *st = NULL;
    rlt_status status = RLT_STATUS_OK;
    char names[512] = "";
    size_t used = 0;
    int n_objects = 0;
    bool has_meta = false;
    *out_version = 0;
    int rc = sqlite3_prepare_v2(db->conn, "SELECT type, name FROM sqlite_master ORDER BY rowid", -1, &st, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *type = (const char *)sqlite3_column_text(st, 0);
        const char *name = (const char *)sqlite3_column_text(st, 1);
        if (!type || !name) {
            rc = SQLITE_NOMEM;
            break;
        }
        n_objects++;
        if (strcmp(type, "table") == 0 && strcmp(name, "rltune_meta") == 0) has_meta = true;
        if ((strcmp(type, "table") == 0 || strcmp(type, "view") == 0) && used < sizeof names) {
            int w = snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", name);
            used = w < 0 ? sizeof names : used + (size_t)w;
        }
        rc = SQLITE_OK;
    }
    if (rc != SQLITE_DONE && rc != SQLITE_OK) {
        status = db_fail(db, rc, "reading its schema", diag);
        goto cleanup;
    }
    if (n_objects == 0) goto cleanup;
    if (!has_meta) {
        if (used >= sizeof names) snprintf(names + sizeof names - 5, 5, "...");
        status = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                          "'%s' is an SQLite database of something else (tables: %s), not an rltune records "
                          "database; rltune left it as it is: name a new file",
                          db->path, names[0] ? names : "none");
        goto cleanup;
    }
    char app[64], version[64];
    bool has_app, has_version;
    status = meta_get(db, "app", app, sizeof app, &has_app, diag);
    if (status == RLT_STATUS_OK) status = meta_get(db, "schema_version", version, sizeof version, &has_version, diag);
    if (status != RLT_STATUS_OK) goto cleanup;
    if (!has_app || strcmp(app, "rltune") != 0) {
        status = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                          "'%s' has an rltune_meta table but its app is '%s', not 'rltune'; rltune left it as it is",
                          db->path, has_app ? app : "(missing)");
        goto cleanup;
    }
    int64_t v = 0;
    if (!has_version || !rlt_parse_i64(version, &v) || v < 1) {
        status = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                          "'%s' has an invalid rltune schema_version '%s' (expected a whole number >= 1); rltune "
                          "left it as it is",
                          db->path, has_version ? version : "(missing)");
        goto cleanup;
    }
    if (v > RLT_DB_SCHEMA_VERSION) {
        status = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                          "'%s' is an rltune records database of schema version %" PRId64
                          ", newer than this rltune reads (version %d): use a newer rltune; the file was left "
                          "as it is",
                          db->path, v, RLT_DB_SCHEMA_VERSION);
        goto cleanup;
    }
    *out_version = (int)v;
cleanup:
    sqlite3_finalize(st);
    return status;
}

static rlt_status inspect_in_read_tx(rlt_db *db, int *out_version, rlt_diag *diag)
{
    int rc = exec_sql(db, "BEGIN");
    if (rc != SQLITE_OK) return db_fail(db, rc, "reading its schema", diag);
    rlt_status status = inspect(db, out_version, diag);
    exec_sql(db, "ROLLBACK"); /* read only: ending it any way is the same */
    return status;
}

/* False when the connection's file holds bytes but not SQLite's header.
 * Read through SQLite's own descriptor of the file (not one of ours, whose
 * close would drop this process's locks on it: check_file). */
static bool has_sqlite_header(rlt_db *db)
{
    sqlite3_file *f = NULL;
    if (sqlite3_file_control(db->conn, "main", SQLITE_FCNTL_FILE_POINTER, &f) != SQLITE_OK || !f || !f->pMethods)
        return true; /* nothing to judge by: SQLite's own reads will say */
    sqlite3_int64 size = 0;
    if (f->pMethods->xFileSize(f, &size) != SQLITE_OK || size == 0) return true;
    char header[16];
    int rc = f->pMethods->xRead(f, header, (int)sizeof header, 0); /* a short read zero-fills */
    return (rc == SQLITE_OK || rc == SQLITE_IOERR_SHORT_READ) && memcmp(header, "SQLite format 3", 16) == 0;
}

/* Connects with `flags` and inspects the schema: a file that is not an
 * SQLite database is refused first, by its header (a read-only connection
 * changes nothing). */
static rlt_status connect_inspect(rlt_db *db, int flags, int *out_version, rlt_diag *diag)
{
    rlt_status status = db_connect(db, flags, diag);
    if (status == RLT_STATUS_OK && !has_sqlite_header(db))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "'%s' is not an SQLite database; rltune left it as it is: name a new file or an rltune "
                        "records database",
                        db->path);
    return status == RLT_STATUS_OK ? inspect_in_read_tx(db, out_version, diag) : status;
}

/* Steps a statement that SQLite may answer with SQLITE_BUSY at once,
 * without calling the busy handler, as it does to a connection switching a
 * new database to WAL while another process is switching or writing it.
 * Retries until the busy timeout is spent. */
static int step_retrying_busy(rlt_db *db, sqlite3_stmt *st)
{
    uint64_t deadline_ns = rlt_time_ns() + (uint64_t)(db->busy_timeout_s * 1e9);
    int sleep_ms = 1;
    for (;;) {
        int rc = sqlite3_step(st);
        if (((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) || rlt_time_ns() >= deadline_ns)
            return rc;
        sqlite3_reset(st);
        sqlite3_sleep(sleep_ms);
        sleep_ms = RLT_MIN(sleep_ms * 2, 50);
    }
}

/* Journal and durability settings, for a connection that may write.
 *
 * WAL: readers never block the writer nor the writer readers, and a commit
 * appends to the -wal file. synchronous=NORMAL in WAL mode syncs at
 * checkpoints rather than at every commit. That is enough against process
 * crashes, which are what a tuning run meets (kill -9, a tuner that
 * segfaults, the OOM killer): a committed transaction is in the kernel's
 * page cache once write() returns and reaches the disk whatever becomes of
 * the process, so a kill loses only the transaction still open, which
 * SQLite discards on the next open. What NORMAL gives up is the last few
 * commits on power loss or a kernel crash (the file stays consistent):
 * measurements to redo, a fair price for not syncing every batch. */
static rlt_status set_pragmas(rlt_db *db, rlt_diag *diag)
{
    const char *doing = "setting its journal mode";
    sqlite3_stmt *st = NULL;
    rlt_status status = RLT_STATUS_OK;
    int rc = sqlite3_prepare_v2(db->conn, "PRAGMA journal_mode=WAL", -1, &st, NULL);
    if (rc == SQLITE_OK) rc = step_retrying_busy(db, st);
    if (rc != SQLITE_ROW) {
        status = db_fail(db, rc, doing, diag);
        goto cleanup;
    }
    const char *mode = (const char *)sqlite3_column_text(st, 0);
    if (!mode || strcmp(mode, "wal") != 0)
        rlt_log(RLT_LOG_WARN,
                "database '%s': WAL journal mode is not available here (journal mode '%s'); writers will block "
                "readers",
                db->path, mode ? mode : "?");
    rc = exec_sql(db, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON");
    if (rc != SQLITE_OK) status = db_fail(db, rc, doing, diag);
cleanup:
    sqlite3_finalize(st);
    return status;
}

static rlt_status create_schema(rlt_db *db, rlt_diag *diag)
{
    const char *doing = "creating the rltune schema";
    rlt_status status = tx_begin(db, doing, diag);
    if (status != RLT_STATUS_OK) return status;
    /* Another process may have created it since we looked: look again now
     * that we hold the write lock. */
    int version = 0;
    status = inspect(db, &version, diag);
    if (status == RLT_STATUS_OK && version == 0) {
        int rc = exec_sql(db, k_schema_meta_sql);
        if (rc == SQLITE_OK) rc = exec_sql(db, k_schema_tables_sql);
        if (rc == SQLITE_OK) rc = exec_sql(db, k_schema_indexes_sql);
        if (rc != SQLITE_OK) status = db_fail(db, rc, doing, diag);
    }
    if (status == RLT_STATUS_OK) status = tx_commit(db, doing, diag);
    if (status != RLT_STATUS_OK) tx_rollback(db);
    return status;
}

static rlt_status prepare_one(rlt_db *db, const char *sql, sqlite3_stmt **out, rlt_diag *diag)
{
    int rc = sqlite3_prepare_v3(db->conn, sql, -1, SQLITE_PREPARE_PERSISTENT, out, NULL);
    if (rc == SQLITE_OK) return RLT_STATUS_OK;
    if ((rc & 0xff) == SQLITE_ERROR)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "'%s' says it is an rltune records database of schema version %d but its tables do not "
                        "match (%s)",
                        db->path, RLT_DB_SCHEMA_VERSION, sqlite3_errmsg(db->conn));
    return db_fail(db, rc, "preparing its queries", diag);
}

static rlt_status prepare_statements(rlt_db *db, rlt_diag *diag)
{
    struct {
        const char *sql;
        sqlite3_stmt **st;
    } all[] = {
        {k_sql_workload_find, &db->st_workload_find}, {k_sql_workload_insert, &db->st_workload_insert},
        {k_sql_insert, &db->st_insert},               {k_sql_lookup, &db->st_lookup},
        {k_sql_exists, &db->st_exists},               {k_sql_best, &db->st_best},
        {k_sql_count_all, &db->st_count_all},         {k_sql_count_spec, &db->st_count_spec},
    };
    for (size_t i = 0; i < RLT_ARRAY_LEN(all); i++) {
        rlt_status status = prepare_one(db, all[i].sql, all[i].st, diag);
        if (status != RLT_STATUS_OK) return status;
    }
    return RLT_STATUS_OK;
}

/* ---- migration from schema v1 ------------------------------------------- */

/* Schema v1 (docs/formats.md keeps it whole) had workloads(id, spec, target)
 * with the target as its key text only, and measurements with the status
 * name, a final pick told by its message ("final pick: ..."), and a
 * n_threads column repeating the target's. */

static void reach_migration_step(const rlt_db *db, int step)
{
    if (db->kill_at_migration_step == step) raise(SIGKILL);
}

/* Writes a copy of the database (a v1 file about to be migrated) beside
 * it: "PATH.v1.bak", or the first free "PATH.v1.bak.N". SQLite's backup
 * API reads one consistent snapshot even while other processes write; the
 * copy is written under a temporary name and linked into place, which
 * fails rather than replaces when another process took the name first. */
static rlt_status backup_v1(rlt_db *db, rlt_diag *diag)
{
    size_t cap = strlen(db->path) + 32;
    char *tmp = rlt_malloc(cap), *name = rlt_malloc(cap);
    sqlite3 *copy = NULL;
    sqlite3_backup *b = NULL;
    rlt_status status = RLT_STATUS_OK;
    bool is_tmp_made = false;
    if (!tmp || !name) {
        status = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory backing up '%s'", db->path);
        goto cleanup;
    }
    snprintf(tmp, cap, "%s.v1.tmp.%ld", db->path, (long)getpid());
    remove(tmp);
    int rc = sqlite3_open_v2(tmp, &copy, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    is_tmp_made = rc == SQLITE_OK;
    if (rc == SQLITE_OK) {
        b = sqlite3_backup_init(copy, "main", db->conn, "main");
        rc = b ? sqlite3_backup_step(b, -1) : sqlite3_errcode(copy);
        if (rc == SQLITE_DONE) rc = SQLITE_OK;
        int finish_rc = b ? sqlite3_backup_finish(b) : SQLITE_OK;
        if (rc == SQLITE_OK) rc = finish_rc;
    }
    if (rc != SQLITE_OK) {
        status = rlt_fail(diag, RLT_STATUS_IO_ERROR,
                          "cannot write a backup of '%s' (schema v1) before migrating it to v" DB_STR(RLT_DB_SCHEMA_VERSION) ": %s; the file was "
                          "left as it is",
                          db->path, copy ? sqlite3_errmsg(copy) : sqlite3_errstr(rc));
        goto cleanup;
    }
    sqlite3_close(copy);
    copy = NULL;
    reach_migration_step(db, 1);
    for (int n = 1;; n++) {
        if (n == 1) snprintf(name, cap, "%s.v1.bak", db->path);
        else snprintf(name, cap, "%s.v1.bak.%d", db->path, n);
        if (link(tmp, name) == 0) break;
        if (errno != EEXIST || n == 999) {
            status = rlt_fail(diag, RLT_STATUS_IO_ERROR,
                              "cannot keep a backup of '%s' as '%s' before migrating it to schema v" DB_STR(RLT_DB_SCHEMA_VERSION) ": %s; the file "
                              "was left as it is",
                              db->path, name, strerror(errno));
            goto cleanup;
        }
    }
    reach_migration_step(db, 2);
    rlt_log(RLT_LOG_INFO, "database '%s' is of schema v1: migrating it to v" DB_STR(RLT_DB_SCHEMA_VERSION) "; the v1 file is kept as '%s'",
            db->path, name);
cleanup:
    sqlite3_close(copy);
    if (is_tmp_made) remove(tmp);
    rlt_free(tmp);
    rlt_free(name);
    return status;
}

/* Files every v1 workload under its parsed target (workloads that parse
 * to the same key become one) and maps old ids to new ones in the table
 * temp.rltune_workload_map. */
static rlt_status migrate_workloads(rlt_db *db, const char *doing, rlt_diag *diag)
{
    sqlite3_stmt *rows = NULL, *insert = NULL, *find = NULL, *map = NULL;
    rlt_str key;
    rlt_str_init(&key);
    rlt_status status = RLT_STATUS_OK;
    int rc = sqlite3_prepare_v2(db->conn, "SELECT id, spec, target FROM workloads_v1 ORDER BY id", -1, &rows, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db->conn,
                                "INSERT OR IGNORE INTO workloads(spec, target, cpu, vector_floats, threads, weights,"
                                " codegen, cc) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                                -1, &insert, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db->conn, k_sql_workload_find, -1, &find, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db->conn, "INSERT INTO temp.rltune_workload_map(old_id, new_id) VALUES (?1, ?2)",
                                -1, &map, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(rows)) == SQLITE_ROW) {
        rc = SQLITE_OK;
        int64_t old_id = sqlite3_column_int64(rows, 0);
        const char *spec = (const char *)sqlite3_column_text(rows, 1);
        const char *text = (const char *)sqlite3_column_text(rows, 2);
        if (!spec || !text) {
            rc = SQLITE_NOMEM;
            break;
        }
        rlt_record_target t;
        if ((status = rlt_record_target_parse(text, &t, diag)) != RLT_STATUS_OK) {
            rlt_diag_prefix(diag, "cannot migrate '%s' to schema v" DB_STR(RLT_DB_SCHEMA_VERSION) ": workload %" PRId64, db->path, old_id);
            status = RLT_STATUS_INVALID_ARGUMENT;
            goto cleanup;
        }
        rlt_str_clear(&key);
        rlt_record_target_key(&t, &key);
        if (key.has_failed) {
            status = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory migrating '%s'", db->path);
            goto cleanup;
        }
        bind_text(insert, 1, spec);
        bind_text(insert, 2, key.data);
        bind_text(insert, 3, t.cpu);
        bind_int64(insert, 4, t.vector_floats);
        bind_int64(insert, 5, t.n_threads);
        bind_text(insert, 6, rlt_record_weights_text(&t));
        bind_int64(insert, 7, t.codegen);
        bind_text(insert, 8, t.cc);
        rc = sqlite3_step(insert);
        stmt_done(insert);
        if (rc != SQLITE_DONE) break;
        bind_text(find, 1, spec);
        bind_text(find, 2, key.data);
        rc = sqlite3_step(find);
        int64_t new_id = rc == SQLITE_ROW ? sqlite3_column_int64(find, 0) : 0;
        stmt_done(find);
        if (rc != SQLITE_ROW) break;
        bind_int64(map, 1, old_id);
        bind_int64(map, 2, new_id);
        rc = sqlite3_step(map);
        stmt_done(map);
        if (rc != SQLITE_DONE) break;
        rc = SQLITE_OK;
    }
    if (rc != SQLITE_OK && rc != SQLITE_DONE) status = db_fail(db, rc, doing, diag);
cleanup:
    sqlite3_finalize(rows);
    sqlite3_finalize(insert);
    sqlite3_finalize(find);
    sqlite3_finalize(map);
    rlt_str_free(&key);
    return status;
}

static rlt_status count_rows(rlt_db *db, const char *sql, int64_t *out, const char *doing, rlt_diag *diag)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->conn, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) *out = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? RLT_STATUS_OK : db_fail(db, rc, doing, diag);
}

/* Rewrites the tables of schema v1 as the current schema in one transaction: a process
 * killed before the commit leaves the v1 file as it was. Measurement ids
 * are kept. Another process may have migrated the file since it was
 * looked at: then there is nothing to do. */
static rlt_status migrate_tables(rlt_db *db, rlt_diag *diag)
{
    const char *doing = "migrating it from schema v1 to v" DB_STR(RLT_DB_SCHEMA_VERSION);
    rlt_status status = tx_begin(db, doing, diag);
    if (status != RLT_STATUS_OK) return status;
    int version = 0;
    int64_t n_before = 0, n_after = 0;
    if ((status = inspect(db, &version, diag)) != RLT_STATUS_OK || version != 1) goto done;
    int rc = exec_sql(db, "DROP INDEX IF EXISTS measurements_by_config; DROP INDEX IF EXISTS measurements_by_gflops;"
                          "ALTER TABLE measurements RENAME TO measurements_v1;"
                          "ALTER TABLE workloads RENAME TO workloads_v1;"
                          "CREATE TEMP TABLE rltune_workload_map(old_id INTEGER PRIMARY KEY, new_id INTEGER NOT NULL);");
    if (rc == SQLITE_OK) rc = exec_sql(db, k_schema_tables_sql);
    if (rc != SQLITE_OK) {
        status = db_fail(db, rc, doing, diag);
        goto done;
    }
    reach_migration_step(db, 3);
    if ((status = migrate_workloads(db, doing, diag)) != RLT_STATUS_OK) goto done;
    rc = exec_sql(db, "INSERT INTO measurements(id, workload_id, config, schedule, tuner, status, is_final,"
                      " time_min_ms, time_median_ms, gflops, seed, build_s, created_s, message)"
                      " SELECT m.id, map.new_id, m.config, m.schedule, m.tuner, m.status,"
                      " substr(m.message, 1, length('" RLT_RECORD_V1_FINAL_PREFIX "')) = '"
                      RLT_RECORD_V1_FINAL_PREFIX "',"
                      " coalesce(m.time_min_ms, 0), coalesce(m.time_median_ms, 0), coalesce(m.gflops, 0),"
                      " coalesce(m.seed, 0), coalesce(m.build_s, 0), m.created_s, m.message"
                      " FROM measurements_v1 m JOIN temp.rltune_workload_map map ON map.old_id = m.workload_id"
                      " ORDER BY m.id");
    if (rc != SQLITE_OK) {
        status = db_fail(db, rc, doing, diag);
        goto done;
    }
    if ((status = count_rows(db, "SELECT count(*) FROM measurements_v1", &n_before, doing, diag)) != RLT_STATUS_OK ||
        (status = count_rows(db, "SELECT count(*) FROM measurements", &n_after, doing, diag)) != RLT_STATUS_OK)
        goto done;
    if (n_before != n_after) {
        status = rlt_fail(diag, RLT_STATUS_IO_ERROR,
                          "cannot migrate '%s' to schema v" DB_STR(RLT_DB_SCHEMA_VERSION) ": %" PRId64 " of its %" PRId64 " records belong to no "
                          "workload; the file was left as it is",
                          db->path, n_before - n_after, n_before);
        goto done;
    }
    reach_migration_step(db, 4);
    rc = exec_sql(db, "DROP TABLE measurements_v1; DROP TABLE workloads_v1; DROP TABLE temp.rltune_workload_map;"
                      "UPDATE rltune_meta SET value = '" DB_STR(RLT_DB_SCHEMA_VERSION) "' WHERE key = 'schema_version';");
    if (rc == SQLITE_OK) rc = exec_sql(db, k_schema_indexes_sql);
    if (rc != SQLITE_OK) status = db_fail(db, rc, doing, diag);
    reach_migration_step(db, 5);
done:
    if (status == RLT_STATUS_OK) status = tx_commit(db, doing, diag);
    if (status != RLT_STATUS_OK) tx_rollback(db);
    if (status == RLT_STATUS_OK) reach_migration_step(db, 6);
    return status;
}

/* Schema v3 only widened v2's workloads.weights to allow 'cold'. SQLite
 * cannot change a CHECK in place: the table is copied into a new one of v3
 * (ids kept, so measurements.workload_id still points right), the old one
 * dropped and the new one renamed, all in one transaction, with foreign
 * keys off around it (SQLite's own recipe for a table's new definition:
 * dropping the parent table with them on would delete through the
 * references). */
static rlt_status migrate_v2(rlt_db *db, rlt_diag *diag)
{
    const char *doing = "migrating it from schema v2 to v3";
    int rc = exec_sql(db, "PRAGMA foreign_keys=OFF");
    if (rc != SQLITE_OK) return db_fail(db, rc, doing, diag);
    rlt_status status = tx_begin(db, doing, diag);
    if (status != RLT_STATUS_OK) goto restore;
    int version = 0;
    if ((status = inspect(db, &version, diag)) != RLT_STATUS_OK || version != 2) goto done;
    rlt_log(RLT_LOG_INFO, "database '%s' is of schema v2: migrating it to v3 (weights may be 'cold')", db->path);
    rc = exec_sql(db, "CREATE TABLE workloads_v3" SCHEMA_WORKLOADS_COLUMNS
                      "INSERT INTO workloads_v3(id, spec, target, cpu, vector_floats, threads, weights, codegen, cc)"
                      " SELECT id, spec, target, cpu, vector_floats, threads, weights, codegen, cc FROM workloads"
                      " ORDER BY id;"
                      "DROP TABLE workloads;"
                      "ALTER TABLE workloads_v3 RENAME TO workloads;"
                      "UPDATE rltune_meta SET value = '" DB_STR(RLT_DB_SCHEMA_VERSION) "' WHERE key = 'schema_version';");
    if (rc != SQLITE_OK) {
        status = db_fail(db, rc, doing, diag);
        goto done;
    }
    int64_t n_orphans = 0;
    status = count_rows(db, "SELECT count(*) FROM measurements m WHERE NOT EXISTS"
                            " (SELECT 1 FROM workloads w WHERE w.id = m.workload_id)",
                        &n_orphans, doing, diag);
    if (status == RLT_STATUS_OK && n_orphans != 0)
        status = rlt_fail(diag, RLT_STATUS_IO_ERROR,
                          "cannot migrate '%s' to schema v3: %" PRId64 " records would belong to no workload; the "
                          "file was left as it is",
                          db->path, n_orphans);
done:
    if (status == RLT_STATUS_OK) status = tx_commit(db, doing, diag);
    if (status != RLT_STATUS_OK) tx_rollback(db);
restore:
    rc = exec_sql(db, "PRAGMA foreign_keys=ON");
    if (rc != SQLITE_OK && status == RLT_STATUS_OK) status = db_fail(db, rc, doing, diag);
    return status;
}

/* A v1 file opened read-only: copied into a memory database, which is
 * migrated; the file is not written. The handle answers from the copy. */
static rlt_status load_v1_into_memory(rlt_db *db, rlt_diag *diag)
{
    sqlite3 *mem = NULL;
    int rc = sqlite3_open_v2(":memory:", &mem, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_backup *b = sqlite3_backup_init(mem, "main", db->conn, "main");
        rc = b ? sqlite3_backup_step(b, -1) : sqlite3_errcode(mem);
        if (rc == SQLITE_DONE) rc = SQLITE_OK;
        int finish_rc = b ? sqlite3_backup_finish(b) : SQLITE_OK;
        if (rc == SQLITE_OK) rc = finish_rc;
    }
    if (rc != SQLITE_OK) {
        rlt_status status = db_fail(db, rc, "reading its v1 schema into memory", diag);
        sqlite3_close(mem);
        return status;
    }
    db_disconnect(db);
    db->conn = mem;
    db->is_in_memory = true;
    sqlite3_extended_result_codes(db->conn, 1);
    return migrate_tables(db, diag);
}

/* SQLite reads a name starting with "file:" as a URI (this build enables
 * URIs), where "?mode=..." would change how it opens; "./" in front keeps
 * it a plain file name. */
static char *open_path_for(const char *path)
{
    if (strncmp(path, "file:", 5) != 0) return rlt_strdup(path);
    char *p = rlt_malloc(strlen(path) + 3);
    if (p) {
        memcpy(p, "./", 2);
        strcpy(p + 2, path);
    }
    return p;
}

rlt_status rlt_db_open(const char *path, const rlt_db_opts *opts, rlt_db **out, rlt_diag *diag)
{
    return rlt_db_open_for_tests(path, opts, NULL, out, diag);
}

rlt_status rlt_db_open_for_tests(const char *path, const rlt_db_opts *opts, const rlt_db_test_opts *test_opts,
                                 rlt_db **out, rlt_diag *diag)
{
    RLT_ASSERT(path && out);
    *out = NULL;
    rlt_db_opts o = opts ? *opts : (rlt_db_opts){0};
    rlt_db_test_opts t = test_opts ? *test_opts : (rlt_db_test_opts){0};
    rlt_status status = RLT_STATUS_OK;
    rlt_db *db = NULL;
    if (!path[0]) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "empty database file name");
    if (!(o.busy_timeout_s >= 0 && o.busy_timeout_s <= 1e6))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "busy timeout of %g s for '%s': expected seconds from 0 (the default, 10 s) to 1e6",
                        o.busy_timeout_s, path);
    if (t.max_pages < 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "max_pages %d: expected 0 (no cap) or more", t.max_pages);

    db = rlt_calloc(1, sizeof *db);
    if (db) db->path = rlt_strdup(path);
    if (db && db->path) db->open_path = open_path_for(path);
    if (!db || !db->open_path) {
        status = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory opening database '%s'", path);
        goto cleanup;
    }
    db->busy_timeout_s = o.busy_timeout_s > 0 ? o.busy_timeout_s : DB_DEFAULT_BUSY_TIMEOUT_S;
    db->is_read_only = o.is_read_only;
    db->kill_at_migration_step = t.kill_at_migration_step;

    bool is_new = false;
    int version = 0;
    status = check_file(path, o.is_read_only, &is_new, diag);
    if (status != RLT_STATUS_OK) goto cleanup;
    if (!is_new && !o.is_read_only) {
        /* Judge an existing file through a read-only connection first. A
         * read-write one could change a file that is not ours before we have
         * looked: roll back its hot journal on the first read, checkpoint its
         * WAL into it on close. (Reading a WAL database of someone else may
         * leave empty -wal and -shm files beside it; the file itself is
         * untouched.) */
        status = connect_inspect(db, SQLITE_OPEN_READONLY, &version, diag);
        db_disconnect(db);
        if (status != RLT_STATUS_OK) goto cleanup;
    }
    status = connect_inspect(db, o.is_read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                             &version, diag);
    if (status != RLT_STATUS_OK) goto cleanup;
    if (o.is_read_only) {
        if (version == 0) {
            status = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                              "'%s' is an SQLite database without tables: no rltune records to read (it was "
                              "opened read-only)",
                              path);
            goto cleanup;
        }
        if (version == 1 && (status = load_v1_into_memory(db, diag)) != RLT_STATUS_OK) goto cleanup;
    } else {
        status = set_pragmas(db, diag);
        if (status == RLT_STATUS_OK && version == 0) status = create_schema(db, diag);
        if (status == RLT_STATUS_OK && version == 1) status = backup_v1(db, diag);
        if (status == RLT_STATUS_OK && version == 1) status = migrate_tables(db, diag);
        if (status == RLT_STATUS_OK && version == 2) status = migrate_v2(db, diag);
        if (status == RLT_STATUS_OK && t.max_pages > 0) {
            char sql[64];
            snprintf(sql, sizeof sql, "PRAGMA max_page_count=%d", t.max_pages);
            int rc = exec_sql(db, sql);
            if (rc != SQLITE_OK) status = db_fail(db, rc, "capping its size for a test", diag);
        }
        if (status != RLT_STATUS_OK) goto cleanup;
    }
    status = prepare_statements(db, diag);
    if (status != RLT_STATUS_OK) goto cleanup;
    *out = db;
    db = NULL;
cleanup:
    rlt_db_close(db);
    return status;
}

void rlt_db_close(rlt_db *db)
{
    if (!db) return;
    sqlite3_stmt *all[] = {db->st_workload_find, db->st_workload_insert, db->st_insert, db->st_lookup,
                           db->st_exists,        db->st_best,           db->st_count_all, db->st_count_spec};
    for (size_t i = 0; i < RLT_ARRAY_LEN(all); i++) sqlite3_finalize(all[i]);
    /* The last connection to close checkpoints the WAL into the database
     * and deletes the -wal and -shm files. */
    db_disconnect(db);
    rlt_free(db->open_path);
    rlt_free(db->path);
    rlt_free(db);
}

/* ---- workloads and appends ------------------------------------------------ */

static rlt_status workload_find(rlt_db *db, const char *spec, const char *target_key, int64_t *out_id,
                                bool *out_found, const char *doing, rlt_diag *diag)
{
    sqlite3_stmt *st = db->st_workload_find;
    rlt_status status = RLT_STATUS_OK;
    *out_found = false;
    bind_text(st, 1, spec);
    bind_text(st, 2, target_key);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *out_id = sqlite3_column_int64(st, 0);
        *out_found = true;
    } else if (rc != SQLITE_DONE) {
        status = db_fail(db, rc, doing, diag);
    }
    stmt_done(st);
    return status;
}

/* The id of (spec, target), inserted when new. The caller holds a write
 * transaction. */
static rlt_status workload_ensure(rlt_db *db, const char *spec, const rlt_record_target *t, int64_t *out_id,
                                  const char *doing, rlt_diag *diag)
{
    rlt_str key;
    rlt_str_init(&key);
    rlt_record_target_key(t, &key);
    bool found = false;
    rlt_status status = RLT_STATUS_OK;
    if (key.has_failed) {
        status = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory while %s on '%s'", doing, db->path);
        goto cleanup;
    }
    status = workload_find(db, spec, key.data, out_id, &found, doing, diag);
    if (status != RLT_STATUS_OK || found) goto cleanup;
    sqlite3_stmt *st = db->st_workload_insert;
    bind_text(st, 1, spec);
    bind_text(st, 2, key.data);
    bind_text(st, 3, t->cpu);
    bind_int64(st, 4, t->vector_floats);
    bind_int64(st, 5, t->n_threads);
    bind_text(st, 6, rlt_record_weights_text(t));
    bind_int64(st, 7, t->codegen);
    bind_text(st, 8, t->cc);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE)
        *out_id = sqlite3_last_insert_rowid(db->conn);
    else
        status = db_fail(db, rc, doing, diag);
    stmt_done(st);
cleanup:
    rlt_str_free(&key);
    return status;
}

/* Inserts one checked record. The caller holds a write transaction. */
static rlt_status insert_record(rlt_db *db, const rlt_record *r, const char *doing, rlt_diag *diag)
{
    int64_t workload_id = 0;
    rlt_status status = workload_ensure(db, r->spec, &r->target, &workload_id, doing, diag);
    if (status != RLT_STATUS_OK) return status;
    sqlite3_stmt *st = db->st_insert;
    bind_int64(st, 1, workload_id);
    bind_text(st, 2, r->config);
    bind_text(st, 3, r->schedule);
    bind_text(st, 4, r->tuner);
    bind_text(st, 5, rlt_status_str(r->status));
    bind_int64(st, 6, r->is_final ? 1 : 0);
    bind_double(st, 7, r->time_min_ms);
    bind_double(st, 8, r->time_median_ms);
    bind_double(st, 9, r->gflops);
    bind_int64(st, 10, (int64_t)r->seed); /* same bits; see row_to_record */
    bind_double(st, 11, r->build_s);
    bind_double(st, 12, r->created_s);
    bind_text(st, 13, r->message);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE) status = db_fail(db, rc, doing, diag);
    stmt_done(st);
    return status;
}

static rlt_status refuse_read_only(const rlt_db *db, const char *doing, rlt_diag *diag)
{
    return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "database '%s' was opened read-only: cannot %s", db->path,
                    doing);
}

rlt_status rlt_db_workload(rlt_db *db, const char *spec, const rlt_record_target *target, int64_t *out_id,
                           rlt_diag *diag)
{
    RLT_ASSERT(db && spec && target && out_id);
    const char *doing = "storing a workload";
    if (!spec[0]) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "empty op spec for a workload in '%s'", db->path);
    rlt_record probe = {.target = *target};
    char problem[512];
    snprintf(probe.spec, sizeof probe.spec, "%s", spec);
    if (rlt_record_problem(&probe, problem, sizeof problem))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "workload for '%s': %s", db->path, problem);
    if (db->is_read_only) {
        rlt_str key;
        rlt_str_init(&key);
        rlt_record_target_key(target, &key);
        bool found = false;
        rlt_status status = key.has_failed ? rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory")
                                           : workload_find(db, spec, key.data, out_id, &found, doing, diag);
        rlt_str_free(&key);
        if (status != RLT_STATUS_OK || found) return status;
        return refuse_read_only(db, "store a new workload", diag);
    }
    rlt_status status = tx_begin(db, doing, diag);
    if (status != RLT_STATUS_OK) return status;
    status = workload_ensure(db, spec, target, out_id, doing, diag);
    if (status == RLT_STATUS_OK) status = tx_commit(db, doing, diag);
    if (status != RLT_STATUS_OK) tx_rollback(db);
    return status;
}

/* The public calls on an open database keep their failure's message in the
 * handle (rlt_db_last_error) and hand it to the caller's diag. */
static rlt_status noted(rlt_db *db, rlt_status st, const rlt_diag *d, rlt_diag *diag)
{
    return rlt_diag_keep(db->last_error, sizeof db->last_error, st, d, diag);
}

const char *rlt_db_last_error(const rlt_db *db) { return db->last_error; }

static rlt_status db_append(rlt_db *db, int n, const rlt_record *records, rlt_diag *diag)
{
    RLT_ASSERT(db && n >= 0 && (n == 0 || records));
    char doing[64];
    snprintf(doing, sizeof doing, "appending a batch of %d record%s", n, n == 1 ? "" : "s");
    if (db->is_read_only) return refuse_read_only(db, "append records", diag);
    char problem[512];
    for (int i = 0; i < n; i++)
        if (rlt_record_problem(&records[i], problem, sizeof problem))
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "record %d of a batch of %d for '%s': %s; nothing of the batch was stored", i, n,
                            db->path, problem);
    if (n == 0) return RLT_STATUS_OK;
    rlt_status status = tx_begin(db, doing, diag);
    if (status != RLT_STATUS_OK) return status;
    for (int i = 0; i < n && status == RLT_STATUS_OK; i++) status = insert_record(db, &records[i], doing, diag);
    if (status == RLT_STATUS_OK) status = tx_commit(db, doing, diag);
    if (status != RLT_STATUS_OK) tx_rollback(db);
    return status;
}

rlt_status rlt_db_append(rlt_db *db, int n, const rlt_record *records, rlt_diag *diag)
{
    rlt_diag d = {0};
    return noted(db, db_append(db, n, records, &d), &d, diag);
}

/* ---- queries -------------------------------------------------------------- */

static rlt_status db_lookup(rlt_db *db, const char *spec, const char *target, const char *config, rlt_record *out,
                         bool *out_found, rlt_diag *diag)
{
    RLT_ASSERT(db && spec && target && config && out && out_found);
    sqlite3_stmt *st = db->st_lookup;
    bind_text(st, 1, spec);
    bind_text(st, 2, target);
    bind_text(st, 3, config);
    return query_one(db, st, out, out_found, "looking up a config", diag);
}

rlt_status rlt_db_lookup(rlt_db *db, const char *spec, const char *target, const char *config, rlt_record *out, bool *out_found, rlt_diag *diag)
{
    rlt_diag d = {0};
    return noted(db, db_lookup(db, spec, target, config, out, out_found, &d), &d, diag);
}

static rlt_status db_best(rlt_db *db, const char *spec, const char *target, rlt_record *out, bool *out_found,
                       rlt_diag *diag)
{
    RLT_ASSERT(db && spec && out && out_found);
    sqlite3_stmt *st = db->st_best;
    bind_text(st, 1, spec);
    bind_text(st, 2, target);
    return query_one(db, st, out, out_found, "finding the best record", diag);
}

rlt_status rlt_db_best(rlt_db *db, const char *spec, const char *target, rlt_record *out, bool *out_found, rlt_diag *diag)
{
    rlt_diag d = {0};
    return noted(db, db_best(db, spec, target, out, out_found, &d), &d, diag);
}

static rlt_status db_best_where(rlt_db *db, const char *spec, const char *target, rlt_db_record_fn accept,
                                void *ctx, rlt_record *out, bool *out_found, rlt_diag *diag)
{
    RLT_ASSERT(db && spec && accept && out && out_found);
    const char *doing = "finding the best record";
    sqlite3_stmt *st = NULL;
    rlt_status status = RLT_STATUS_OK;
    *out_found = false;
    /* prepared per call, as the history's: accept may query this handle */
    int rc = sqlite3_prepare_v2(db->conn, k_sql_best_ordered, -1, &st, NULL);
    if (rc != SQLITE_OK) {
        status = db_fail(db, rc, doing, diag);
        goto cleanup;
    }
    bind_text(st, 1, spec);
    bind_text(st, 2, target);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if ((status = row_to_record(db, st, out, doing, diag)) != RLT_STATUS_OK) goto cleanup;
        if (accept(out, ctx)) {
            *out_found = true;
            goto cleanup;
        }
    }
    if (rc != SQLITE_DONE) status = db_fail(db, rc, doing, diag);
cleanup:
    sqlite3_finalize(st);
    return status;
}

rlt_status rlt_db_best_where(rlt_db *db, const char *spec, const char *target, rlt_db_record_fn accept, void *ctx,
                             rlt_record *out, bool *out_found, rlt_diag *diag)
{
    rlt_diag d = {0};
    if (!accept) return noted(db, db_best(db, spec, target, out, out_found, &d), &d, diag);
    return noted(db, db_best_where(db, spec, target, accept, ctx, out, out_found, &d), &d, diag);
}

static rlt_status db_history(rlt_db *db, const char *spec, const char *target, rlt_db_record_fn fn, void *ctx,
                          rlt_diag *diag)
{
    RLT_ASSERT(db && fn);
    const char *doing = "reading the history";
    sqlite3_stmt *st = NULL;
    rlt_status status = RLT_STATUS_OK;
    /* Prepared per call, so that fn may run other queries (even a history)
     * on this handle while this one is stepping. */
    int rc = sqlite3_prepare_v2(db->conn, spec ? k_sql_history_spec : k_sql_history_all, -1, &st, NULL);
    if (rc != SQLITE_OK) {
        status = db_fail(db, rc, doing, diag);
        goto cleanup;
    }
    bind_text(st, 1, spec);
    bind_text(st, 2, target);
    rlt_record r;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        status = row_to_record(db, st, &r, doing, diag);
        if (status != RLT_STATUS_OK || !fn(&r, ctx)) goto cleanup;
    }
    if (rc != SQLITE_DONE) status = db_fail(db, rc, doing, diag);
cleanup:
    sqlite3_finalize(st);
    return status;
}

rlt_status rlt_db_history(rlt_db *db, const char *spec, const char *target, rlt_db_record_fn fn, void *ctx, rlt_diag *diag)
{
    rlt_diag d = {0};
    return noted(db, db_history(db, spec, target, fn, ctx, &d), &d, diag);
}

static rlt_status db_count(rlt_db *db, const char *spec, int64_t *out_n, rlt_diag *diag)
{
    RLT_ASSERT(db && out_n);
    sqlite3_stmt *st = spec ? db->st_count_spec : db->st_count_all;
    rlt_status status = RLT_STATUS_OK;
    if (spec) bind_text(st, 1, spec);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *out_n = sqlite3_column_int64(st, 0);
    else
        status = db_fail(db, rc, "counting records", diag);
    stmt_done(st);
    return status;
}

rlt_status rlt_db_count(rlt_db *db, const char *spec, int64_t *out_n, rlt_diag *diag)
{
    rlt_diag d = {0};
    return noted(db, db_count(db, spec, out_n, &d), &d, diag);
}

/* ---- rltune_meta values of other modules ---------------------------------- */

static bool is_own_meta_key(const char *key)
{
    return strcmp(key, "app") == 0 || strcmp(key, "schema_version") == 0;
}

rlt_status rlt_db_meta_get(rlt_db *db, const char *key, rlt_str *out, bool *out_found, rlt_diag *diag)
{
    RLT_ASSERT(db && key && out && out_found);
    const char *doing = "reading its rltune_meta table";
    sqlite3_stmt *st = NULL;
    rlt_status status = RLT_STATUS_OK;
    *out_found = false;
    int rc = sqlite3_prepare_v2(db->conn, "SELECT value FROM rltune_meta WHERE key = ?1", -1, &st, NULL);
    if (rc != SQLITE_OK) {
        status = db_fail(db, rc, doing, diag);
        goto cleanup;
    }
    bind_text(st, 1, key);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const unsigned char *v = sqlite3_column_text(st, 0);
        if (!v && sqlite3_column_type(st, 0) != SQLITE_NULL) {
            status = db_fail(db, SQLITE_NOMEM, doing, diag);
            goto cleanup;
        }
        rlt_str_appendn(out, v ? (const char *)v : "", v ? (size_t)sqlite3_column_bytes(st, 0) : 0);
        if (out->has_failed) {
            status = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading '%s' of '%s'", key, db->path);
            goto cleanup;
        }
        *out_found = true;
    } else if (rc != SQLITE_DONE) {
        status = db_fail(db, rc, doing, diag);
    }
cleanup:
    sqlite3_finalize(st);
    return status;
}

rlt_status rlt_db_meta_set(rlt_db *db, const char *key, const char *value, rlt_diag *diag)
{
    RLT_ASSERT(db && key && value);
    const char *doing = "writing its rltune_meta table";
    if (db->is_read_only) return refuse_read_only(db, "write a meta value", diag);
    if (is_own_meta_key(key) || !key[0])
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "meta key '%s' of '%s' is not free for other modules (app and schema_version are the "
                        "database's own)",
                        key, db->path);
    sqlite3_stmt *st = NULL;
    rlt_status status = tx_begin(db, doing, diag);
    if (status != RLT_STATUS_OK) return status;
    int rc = sqlite3_prepare_v2(db->conn, "INSERT OR REPLACE INTO rltune_meta(key, value) VALUES (?1, ?2)", -1, &st,
                                NULL);
    if (rc == SQLITE_OK) {
        bind_text(st, 1, key);
        bind_text(st, 2, value);
        rc = sqlite3_step(st);
    }
    if (rc != SQLITE_OK && rc != SQLITE_DONE) status = db_fail(db, rc, doing, diag);
    sqlite3_finalize(st);
    if (status == RLT_STATUS_OK) status = tx_commit(db, doing, diag);
    if (status != RLT_STATUS_OK) tx_rollback(db);
    return status;
}

/* ---- JSON lines ------------------------------------------------------------ */

static rlt_status db_export_jsonl(rlt_db *db, const char *spec, FILE *out, rlt_diag *diag)
{
    RLT_ASSERT(db && out);
    const char *doing = "exporting records";
    sqlite3_stmt *st = NULL;
    rlt_str line;
    rlt_str_init(&line);
    rlt_status status = RLT_STATUS_OK;
    /* One read transaction: the export is one snapshot even while other
     * processes append. */
    int rc = exec_sql(db, "BEGIN");
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db->conn, spec ? k_sql_export_spec : k_sql_export_all, -1, &st, NULL);
    if (rc != SQLITE_OK) {
        status = db_fail(db, rc, doing, diag);
        goto cleanup;
    }
    if (spec) bind_text(st, 1, spec);
    rlt_record r;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        status = row_to_record(db, st, &r, doing, diag);
        if (status != RLT_STATUS_OK) goto cleanup;
        rlt_str_clear(&line);
        rlt_record_to_json(&r, &line);
        if (line.has_failed) {
            status = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory exporting records of '%s'", db->path);
            goto cleanup;
        }
        if (fputs(line.data, out) == EOF || fputc('\n', out) == EOF) break;
    }
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        status = db_fail(db, rc, doing, diag);
        goto cleanup;
    }
    if (rc == SQLITE_ROW || fflush(out) != 0 || ferror(out))
        status = rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot write the export of '%s': %s", db->path,
                          strerror(errno));
cleanup:
    rlt_str_free(&line);
    sqlite3_finalize(st);
    if (!sqlite3_get_autocommit(db->conn)) exec_sql(db, "ROLLBACK"); /* read only */
    return status;
}

rlt_status rlt_db_export_jsonl(rlt_db *db, const char *spec, FILE *out, rlt_diag *diag)
{
    rlt_diag d = {0};
    return noted(db, db_export_jsonl(db, spec, out, &d), &d, diag);
}

/* Reads the next line of `in` into `line`, without its newline;
 * *out_has_line false at the end of the input. Lines over
 * JSONL_LINE_MAX_BYTES and lines holding a NUL byte are refused. */
static rlt_status read_line(FILE *in, rlt_str *line, const char *source, long line_no, bool *out_has_line,
                            rlt_diag *diag)
{
    char chunk[4096];
    size_t n = 0;
    bool has_any = false, has_nul = false;
    int c;
    rlt_str_clear(line);
    *out_has_line = false;
    while ((c = getc(in)) != EOF) {
        has_any = true;
        if (c == '\n') break;
        if (c == '\0') has_nul = true;
        chunk[n++] = (char)c;
        if (n == sizeof chunk) {
            rlt_str_appendn(line, chunk, n);
            n = 0;
            if (line->len > JSONL_LINE_MAX_BYTES) break;
        }
    }
    if (ferror(in)) return rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot read '%s': %s", source, strerror(errno));
    rlt_str_appendn(line, chunk, n);
    /* checked after the last piece too: a line just over the limit ends in a partial chunk */
    if (line->len > JSONL_LINE_MAX_BYTES)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s:%ld: line longer than %d bytes: not a record", source,
                        line_no, JSONL_LINE_MAX_BYTES);
    if (line->has_failed)
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "%s:%ld: out of memory reading the line", source, line_no);
    if (has_nul) return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s:%ld: the line holds a NUL byte", source, line_no);
    *out_has_line = has_any;
    return RLT_STATUS_OK;
}

static bool is_blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r') return false;
    return true;
}

static rlt_status record_exists(rlt_db *db, const rlt_record *r, bool *out_exists, const char *doing,
                                rlt_diag *diag)
{
    rlt_str key;
    rlt_str_init(&key);
    rlt_record_target_key(&r->target, &key);
    *out_exists = false;
    if (key.has_failed) {
        rlt_str_free(&key);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory while %s", doing);
    }
    sqlite3_stmt *st = db->st_exists;
    rlt_status status = RLT_STATUS_OK;
    bind_text(st, 1, r->spec);
    bind_text(st, 2, key.data);
    bind_text(st, 3, r->config);
    bind_double(st, 4, r->created_s);
    bind_text(st, 5, rlt_status_str(r->status));
    int rc = sqlite3_step(st);
    *out_exists = rc == SQLITE_ROW;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) status = db_fail(db, rc, doing, diag);
    stmt_done(st);
    rlt_str_free(&key);
    return status;
}

static rlt_status db_import_jsonl(rlt_db *db, FILE *in, const char *source, int *out_n_added, int *out_n_skipped,
                               rlt_diag *diag)
{
    RLT_ASSERT(db && in && source);
    char doing[256];
    snprintf(doing, sizeof doing, "importing '%s'", source);
    if (out_n_added) *out_n_added = 0;
    if (out_n_skipped) *out_n_skipped = 0;
    if (db->is_read_only) return refuse_read_only(db, "import records", diag);
    rlt_str line;
    rlt_str_init(&line);
    int n_added = 0, n_skipped = 0;
    long line_no = 0;
    rlt_record r;
    /* One transaction for the whole input, so that a bad line stores
     * nothing. Records are inserted as they are read rather than gathered
     * first: an import of any size needs one record of memory. */
    rlt_status status = tx_begin(db, doing, diag);
    if (status != RLT_STATUS_OK) goto cleanup;
    for (;;) {
        bool has_line = false;
        status = read_line(in, &line, source, line_no + 1, &has_line, diag);
        if (status != RLT_STATUS_OK) goto cleanup;
        if (!has_line) break;
        line_no++;
        if (is_blank(line.data)) continue;
        char where[300];
        snprintf(where, sizeof where, "%s:%ld", source, line_no);
        status = rlt_record_from_json(line.data, where, &r, diag);
        bool exists = false;
        if (status == RLT_STATUS_OK) status = record_exists(db, &r, &exists, doing, diag);
        if (status == RLT_STATUS_OK && !exists) status = insert_record(db, &r, doing, diag);
        if (status != RLT_STATUS_OK) goto cleanup;
        if (exists)
            n_skipped++;
        else
            n_added++;
    }
    status = tx_commit(db, doing, diag);
cleanup:
    if (status != RLT_STATUS_OK) {
        tx_rollback(db);
    } else {
        if (out_n_added) *out_n_added = n_added;
        if (out_n_skipped) *out_n_skipped = n_skipped;
    }
    rlt_str_free(&line);
    return status;
}

rlt_status rlt_db_import_jsonl(rlt_db *db, FILE *in, const char *source, int *out_n_added, int *out_n_skipped, rlt_diag *diag)
{
    rlt_diag d = {0};
    return noted(db, db_import_jsonl(db, in, source, out_n_added, out_n_skipped, &d), &d, diag);
}
