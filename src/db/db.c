/*
 * db.c - the tuning records database (db.h): opening a file safely (one
 * that is not ours is never written), schema v1, appends of one transaction
 * each, the queries a tuner and the CLI ask (lookup, best, history, count),
 * and JSON-lines export / import (format v1). Both formats are described in
 * docs/formats.md, "Tuning records".
 *
 * Every SQL text here is a constant: user text reaches SQLite only as a
 * bound parameter. An SQLite failure becomes an rlt_status and a message
 * that names the file (db_fail). One table, k_fields, lists the fields of
 * a record in the order the queries select them, and drives reading rows,
 * writing JSON and reading JSON, so the three cannot drift apart.
 */
#include "db/db.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DB_DEFAULT_BUSY_TIMEOUT_S 10.0
#define JSONL_FORMAT_VERSION 1
/* A record's text fields total under 8 KiB; even with every byte escaped
 * as \uXXXX a line stays far below this. Longer lines are not records. */
#define JSONL_LINE_MAX_BYTES (1 << 20)
/* Whole numbers up to 2^53 are exact in a double (and so in cJSON). */
#define JSON_EXACT_INT_MAX 9007199254740992.0

#define DB_STR2(x) #x
#define DB_STR(x) DB_STR2(x)

struct rlt_db {
    sqlite3 *conn;
    char *path;      /* as the caller gave it, for messages (owned) */
    char *open_path; /* what SQLite is given: `path`, with "./" in front when
                        SQLite would read it as a "file:" URI (owned) */
    double busy_timeout_s;
    bool is_read_only;
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

/* ---- schema v1 ------------------------------------------------------------ */

static const char k_schema_sql[] =
    "CREATE TABLE rltune_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "INSERT INTO rltune_meta(key, value) VALUES ('app', 'rltune'), "
    "('schema_version', '" DB_STR(RLT_DB_SCHEMA_VERSION) "');"
    "CREATE TABLE workloads(id INTEGER PRIMARY KEY, spec TEXT NOT NULL, target TEXT NOT NULL,"
    " UNIQUE(spec, target));"
    "CREATE TABLE measurements(id INTEGER PRIMARY KEY,"
    " workload_id INTEGER NOT NULL REFERENCES workloads(id),"
    " config TEXT NOT NULL, schedule TEXT NOT NULL, tuner TEXT NOT NULL, status TEXT NOT NULL,"
    " time_min_ms REAL, time_median_ms REAL, gflops REAL, n_threads INTEGER, seed INTEGER,"
    " build_s REAL, created_s REAL NOT NULL, message TEXT NOT NULL);"
    "CREATE INDEX measurements_by_config ON measurements(workload_id, config);"
    "CREATE INDEX measurements_by_gflops ON measurements(workload_id, gflops);";

/* The columns every record query selects, in the order of k_fields. */
#define RECORD_COLUMNS                                                                             \
    "m.id, w.spec, w.target, m.config, m.schedule, m.tuner, m.status, m.time_min_ms,"             \
    " m.time_median_ms, m.gflops, m.n_threads, m.seed, m.build_s, m.created_s, m.message"
#define RECORD_FROM " FROM measurements m JOIN workloads w ON w.id = m.workload_id"

static const char k_sql_workload_find[] = "SELECT id FROM workloads WHERE spec = ?1 AND target = ?2";
static const char k_sql_workload_insert[] = "INSERT INTO workloads(spec, target) VALUES (?1, ?2)";
static const char k_sql_insert[] =
    "INSERT INTO measurements(workload_id, config, schedule, tuner, status, time_min_ms,"
    " time_median_ms, gflops, n_threads, seed, build_s, created_s, message)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";
static const char k_sql_lookup[] = "SELECT " RECORD_COLUMNS RECORD_FROM
                                   " WHERE w.spec = ?1 AND w.target = ?2 AND m.config = ?3"
                                   " ORDER BY m.created_s DESC, m.id DESC LIMIT 1";
static const char k_sql_exists[] = "SELECT 1" RECORD_FROM
                                   " WHERE w.spec = ?1 AND w.target = ?2 AND m.config = ?3"
                                   " AND m.created_s = ?4 AND m.status = ?5 LIMIT 1";
/* The fastest configuration by its latest record (the one lookup gives): a
 * configuration measured again (a tuning run's final pick, a resumed run)
 * counts by its newest measurement, and one whose newest failed does not
 * count. Bare schedules (config "") are told apart by their schedule.
 * Careful measurements outrank quick ones: a final pick's records (message
 * RLT_DB_FINAL_PREFIX...) come before tuning-time ones, which a few short
 * samples can flatter. */
static const char k_sql_best[] = "SELECT " RECORD_COLUMNS RECORD_FROM
                                 " WHERE w.spec = ?1 AND (?2 IS NULL OR w.target = ?2) AND m.status = 'OK'"
                                 " AND NOT EXISTS (SELECT 1 FROM measurements n"
                                 " WHERE n.workload_id = m.workload_id AND n.config = m.config"
                                 " AND (m.config <> '' OR n.schedule = m.schedule)"
                                 " AND (n.created_s > m.created_s OR (n.created_s = m.created_s AND n.id > m.id)))"
                                 " ORDER BY substr(m.message, 1, length(" RLT_DB_FINAL_PREFIX_SQL ")) = "
                                 RLT_DB_FINAL_PREFIX_SQL " DESC, m.gflops DESC, m.time_min_ms ASC, m.id ASC LIMIT 1";
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

/* ---- the fields of a record ----------------------------------------------- */

typedef enum field_kind {
    FIELD_ID,   /* int64_t row id */
    FIELD_TEXT, /* char[size], NUL-terminated */
    FIELD_REAL, /* double, finite */
    FIELD_INT,  /* int, >= 0 */
    FIELD_SEED  /* uint64_t */
} field_kind;

typedef struct field_desc {
    const char *name;
    field_kind kind;
    size_t offset;
    size_t size;
} field_desc;

#define FIELD(kind, member) {#member, kind, offsetof(rlt_record, member), sizeof(((rlt_record *)0)->member)}

/* In RECORD_COLUMNS order; also the key order of an exported line. */
static const field_desc k_fields[] = {
    FIELD(FIELD_ID, id),
    FIELD(FIELD_TEXT, spec),
    FIELD(FIELD_TEXT, target),
    FIELD(FIELD_TEXT, config),
    FIELD(FIELD_TEXT, schedule),
    FIELD(FIELD_TEXT, tuner),
    FIELD(FIELD_TEXT, status),
    FIELD(FIELD_REAL, time_min_ms),
    FIELD(FIELD_REAL, time_median_ms),
    FIELD(FIELD_REAL, gflops),
    FIELD(FIELD_INT, n_threads),
    FIELD(FIELD_SEED, seed),
    FIELD(FIELD_REAL, build_s),
    FIELD(FIELD_REAL, created_s),
    FIELD(FIELD_TEXT, message),
};

static void *field_ptr(rlt_record *r, const field_desc *f) { return (char *)r + f->offset; }
static const void *field_cptr(const rlt_record *r, const field_desc *f) { return (const char *)r + f->offset; }

static const field_desc *field_find(const char *name)
{
    for (size_t i = 0; i < RLT_ARRAY_LEN(k_fields); i++)
        if (strcmp(k_fields[i].name, name) == 0) return &k_fields[i];
    return NULL;
}

/* Writes what is wrong with a record into buf and returns true, or returns
 * false when it may be stored: every text NUL-terminated inside its buffer,
 * a spec, a known status, finite numbers (a JSON export could not hold
 * others, and SQLite would store a NaN as NULL). */
static bool record_problem(const rlt_record *r, char *buf, size_t cap)
{
    for (size_t i = 0; i < RLT_ARRAY_LEN(k_fields); i++) {
        const field_desc *f = &k_fields[i];
        if (f->kind == FIELD_TEXT && !memchr(field_cptr(r, f), '\0', f->size)) {
            snprintf(buf, cap, "field '%s' has no terminating NUL within its %zu bytes", f->name, f->size);
            return true;
        }
        if (f->kind == FIELD_REAL) {
            double v = *(const double *)field_cptr(r, f);
            if (!isfinite(v)) {
                snprintf(buf, cap, "field '%s' is %g, not a finite number", f->name, v);
                return true;
            }
        }
    }
    if (!r->spec[0]) {
        snprintf(buf, cap, "field 'spec' is empty");
        return true;
    }
    if (rlt_status_from_str(r->status) == RLT_STATUS_COUNT) {
        size_t used = (size_t)snprintf(buf, cap, "field 'status' is '%s', not a status name (", r->status);
        for (int s = 0; s < RLT_STATUS_COUNT && used < cap; s++)
            used += (size_t)snprintf(buf + used, cap - used, "%s%s", s ? ", " : "", rlt_status_str((rlt_status)s));
        if (used < cap) snprintf(buf + used, cap - used, ")");
        return true;
    }
    return false;
}

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
 * longer than the record holds is refused, never cut. */
static rlt_status row_to_record(rlt_db *db, sqlite3_stmt *st, rlt_record *out, const char *doing, rlt_diag *diag)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < (int)RLT_ARRAY_LEN(k_fields); i++) {
        const field_desc *f = &k_fields[i];
        void *dst = field_ptr(out, f);
        switch (f->kind) {
        case FIELD_ID: *(int64_t *)dst = sqlite3_column_int64(st, i); break;
        case FIELD_REAL: *(double *)dst = sqlite3_column_double(st, i); break;
        case FIELD_INT: *(int *)dst = sqlite3_column_int(st, i); break;
        /* Stored as the signed 64-bit integer with the same bits. */
        case FIELD_SEED: *(uint64_t *)dst = (uint64_t)sqlite3_column_int64(st, i); break;
        case FIELD_TEXT: {
            bool is_null = sqlite3_column_type(st, i) == SQLITE_NULL;
            const unsigned char *text = sqlite3_column_text(st, i);
            if (!text && !is_null) return db_fail(db, SQLITE_NOMEM, doing, diag);
            size_t len = text ? (size_t)sqlite3_column_bytes(st, i) : 0;
            if (len >= f->size)
                return rlt_fail(diag, RLT_STATUS_IO_ERROR,
                                "database '%s': record %" PRId64 " has a '%s' of %zu bytes, more than rltune "
                                "holds (%zu) while %s; it was not cut",
                                db->path, out->id, f->name, len, f->size - 1, doing);
            if (len) memcpy(dst, text, len);
            ((char *)dst)[len] = '\0';
            break;
        }
        }
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
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot open database '%s': %s", path, strerror(errno));
    char header[16];
    size_t n = 0;
    while (n < sizeof header) {
        ssize_t got = read(fd, header + n, sizeof header - n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        n += (size_t)got;
    }
    close(fd);
    if (n < sizeof header || memcmp(header, "SQLite format 3", sizeof header) != 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "'%s' is not an SQLite database; rltune left it as it is: name a new file or an rltune "
                        "records database",
                        path);
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
 * snapshot is read): no object at all (*out_has_schema false: a new or empty
 * database), rltune's schema of a version this code reads (true), or
 * something else, which is refused. Reads only. */
static rlt_status inspect(rlt_db *db, bool *out_has_schema, rlt_diag *diag)
{
    sqlite3_stmt *st = NULL;
    rlt_status status = RLT_STATUS_OK;
    char names[512] = "";
    size_t used = 0;
    int n_objects = 0;
    bool has_meta = false;
    *out_has_schema = false;
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
    *out_has_schema = true;
cleanup:
    sqlite3_finalize(st);
    return status;
}

static rlt_status inspect_in_read_tx(rlt_db *db, bool *out_has_schema, rlt_diag *diag)
{
    int rc = exec_sql(db, "BEGIN");
    if (rc != SQLITE_OK) return db_fail(db, rc, "reading its schema", diag);
    rlt_status status = inspect(db, out_has_schema, diag);
    exec_sql(db, "ROLLBACK"); /* read only: ending it any way is the same */
    return status;
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
    bool has_schema = false;
    status = inspect(db, &has_schema, diag);
    if (status == RLT_STATUS_OK && !has_schema) {
        int rc = exec_sql(db, k_schema_sql);
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
    RLT_ASSERT(path && out);
    *out = NULL;
    rlt_db_opts o = opts ? *opts : (rlt_db_opts){0};
    rlt_status status = RLT_STATUS_OK;
    rlt_db *db = NULL;
    if (!path[0]) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "empty database file name");
    if (!(o.busy_timeout_s >= 0 && o.busy_timeout_s <= 1e6))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "busy timeout of %g s for '%s': expected seconds from 0 (the default, 10 s) to 1e6",
                        o.busy_timeout_s, path);
    if (o.max_pages_for_tests < 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "max_pages_for_tests %d: expected 0 (no cap) or more",
                        o.max_pages_for_tests);

    db = rlt_calloc(1, sizeof *db);
    if (db) db->path = rlt_strdup(path);
    if (db && db->path) db->open_path = open_path_for(path);
    if (!db || !db->open_path) {
        status = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory opening database '%s'", path);
        goto cleanup;
    }
    db->busy_timeout_s = o.busy_timeout_s > 0 ? o.busy_timeout_s : DB_DEFAULT_BUSY_TIMEOUT_S;
    db->is_read_only = o.is_read_only;

    bool is_new = false, has_schema = false;
    status = check_file(path, o.is_read_only, &is_new, diag);
    if (status != RLT_STATUS_OK) goto cleanup;
    if (!is_new && !o.is_read_only) {
        /* Judge an existing file through a read-only connection first. A
         * read-write one could change a file that is not ours before we have
         * looked: roll back its hot journal on the first read, checkpoint its
         * WAL into it on close. (Reading a WAL database of someone else may
         * leave empty -wal and -shm files beside it; the file itself is
         * untouched.) */
        status = db_connect(db, SQLITE_OPEN_READONLY, diag);
        if (status == RLT_STATUS_OK) status = inspect_in_read_tx(db, &has_schema, diag);
        db_disconnect(db);
        if (status != RLT_STATUS_OK) goto cleanup;
    }
    status = db_connect(db, o.is_read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                        diag);
    if (status == RLT_STATUS_OK) status = inspect_in_read_tx(db, &has_schema, diag);
    if (status != RLT_STATUS_OK) goto cleanup;
    if (o.is_read_only) {
        if (!has_schema) {
            status = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                              "'%s' is an SQLite database without tables: no rltune records to read (it was "
                              "opened read-only)",
                              path);
            goto cleanup;
        }
    } else {
        status = set_pragmas(db, diag);
        if (status == RLT_STATUS_OK && !has_schema) status = create_schema(db, diag);
        if (status == RLT_STATUS_OK && o.max_pages_for_tests > 0) {
            char sql[64];
            snprintf(sql, sizeof sql, "PRAGMA max_page_count=%d", o.max_pages_for_tests);
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

static rlt_status workload_find(rlt_db *db, const char *spec, const char *target, int64_t *out_id, bool *out_found,
                                const char *doing, rlt_diag *diag)
{
    sqlite3_stmt *st = db->st_workload_find;
    rlt_status status = RLT_STATUS_OK;
    *out_found = false;
    bind_text(st, 1, spec);
    bind_text(st, 2, target);
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
static rlt_status workload_ensure(rlt_db *db, const char *spec, const char *target, int64_t *out_id,
                                  const char *doing, rlt_diag *diag)
{
    bool found = false;
    rlt_status status = workload_find(db, spec, target, out_id, &found, doing, diag);
    if (status != RLT_STATUS_OK || found) return status;
    sqlite3_stmt *st = db->st_workload_insert;
    bind_text(st, 1, spec);
    bind_text(st, 2, target);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE)
        *out_id = sqlite3_last_insert_rowid(db->conn);
    else
        status = db_fail(db, rc, doing, diag);
    stmt_done(st);
    return status;
}

/* Inserts one checked record. The caller holds a write transaction. */
static rlt_status insert_record(rlt_db *db, const rlt_record *r, const char *doing, rlt_diag *diag)
{
    int64_t workload_id = 0;
    rlt_status status = workload_ensure(db, r->spec, r->target, &workload_id, doing, diag);
    if (status != RLT_STATUS_OK) return status;
    sqlite3_stmt *st = db->st_insert;
    bind_int64(st, 1, workload_id);
    bind_text(st, 2, r->config);
    bind_text(st, 3, r->schedule);
    bind_text(st, 4, r->tuner);
    bind_text(st, 5, r->status);
    bind_double(st, 6, r->time_min_ms);
    bind_double(st, 7, r->time_median_ms);
    bind_double(st, 8, r->gflops);
    bind_int64(st, 9, r->n_threads);
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

rlt_status rlt_db_workload(rlt_db *db, const char *spec, const char *target, int64_t *out_id, rlt_diag *diag)
{
    RLT_ASSERT(db && spec && target && out_id);
    const char *doing = "storing a workload";
    bool found = false;
    if (!spec[0]) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "empty op spec for a workload in '%s'", db->path);
    rlt_status status = workload_find(db, spec, target, out_id, &found, doing, diag);
    if (status != RLT_STATUS_OK || found) return status;
    if (db->is_read_only) return refuse_read_only(db, "store a new workload", diag);
    status = tx_begin(db, doing, diag);
    if (status != RLT_STATUS_OK) return status;
    status = workload_ensure(db, spec, target, out_id, doing, diag);
    if (status == RLT_STATUS_OK) status = tx_commit(db, doing, diag);
    if (status != RLT_STATUS_OK) tx_rollback(db);
    return status;
}

rlt_status rlt_db_append(rlt_db *db, int n, const rlt_record *records, rlt_diag *diag)
{
    RLT_ASSERT(db && n >= 0 && (n == 0 || records));
    char doing[64];
    snprintf(doing, sizeof doing, "appending a batch of %d record%s", n, n == 1 ? "" : "s");
    if (db->is_read_only) return refuse_read_only(db, "append records", diag);
    char problem[512];
    for (int i = 0; i < n; i++)
        if (record_problem(&records[i], problem, sizeof problem))
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

/* ---- queries -------------------------------------------------------------- */

rlt_status rlt_db_lookup(rlt_db *db, const char *spec, const char *target, const char *config, rlt_record *out,
                         bool *out_found, rlt_diag *diag)
{
    RLT_ASSERT(db && spec && target && config && out && out_found);
    sqlite3_stmt *st = db->st_lookup;
    bind_text(st, 1, spec);
    bind_text(st, 2, target);
    bind_text(st, 3, config);
    return query_one(db, st, out, out_found, "looking up a config", diag);
}

rlt_status rlt_db_best(rlt_db *db, const char *spec, const char *target, rlt_record *out, bool *out_found,
                       rlt_diag *diag)
{
    RLT_ASSERT(db && spec && out && out_found);
    sqlite3_stmt *st = db->st_best;
    bind_text(st, 1, spec);
    bind_text(st, 2, target);
    return query_one(db, st, out, out_found, "finding the best record", diag);
}

rlt_status rlt_db_history(rlt_db *db, const char *spec, const char *target, rlt_db_record_fn fn, void *ctx,
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

rlt_status rlt_db_count(rlt_db *db, const char *spec, int64_t *out_n, rlt_diag *diag)
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

/* ---- JSON lines, format v1 ------------------------------------------------ */

/* The shortest of %.15g, %.16g, %.17g that reads back as exactly `v`
 * (%.17g always does). cJSON's own printer is not used for numbers: it
 * accepts 15 digits that read back within one ulp, which would change
 * a time or a created_s on its way through a file. */
static void format_double(double v, char *buf, size_t cap)
{
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, cap, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) return;
    }
}

/* One record as one line of JSON without its newline (free with cJSON_free);
 * NULL when out of memory. Keys in k_fields order after "v"; the seed is a
 * string of decimal digits, because JSON readers (cJSON among them) keep
 * numbers as doubles, exact only up to 2^53. */
static char *record_to_json(const rlt_record *r)
{
    cJSON *obj = cJSON_CreateObject();
    bool is_ok = obj && cJSON_AddRawToObject(obj, "v", DB_STR(JSONL_FORMAT_VERSION));
    for (size_t i = 0; i < RLT_ARRAY_LEN(k_fields) && is_ok; i++) {
        const field_desc *f = &k_fields[i];
        const void *src = field_cptr(r, f);
        char num[40];
        switch (f->kind) {
        case FIELD_ID:
            snprintf(num, sizeof num, "%" PRId64, *(const int64_t *)src);
            is_ok = cJSON_AddRawToObject(obj, f->name, num);
            break;
        case FIELD_TEXT: is_ok = cJSON_AddStringToObject(obj, f->name, src); break;
        case FIELD_REAL:
            format_double(*(const double *)src, num, sizeof num);
            is_ok = cJSON_AddRawToObject(obj, f->name, num);
            break;
        case FIELD_INT:
            snprintf(num, sizeof num, "%d", *(const int *)src);
            is_ok = cJSON_AddRawToObject(obj, f->name, num);
            break;
        case FIELD_SEED:
            snprintf(num, sizeof num, "%" PRIu64, *(const uint64_t *)src);
            is_ok = cJSON_AddStringToObject(obj, f->name, num);
            break;
        }
    }
    char *text = is_ok ? cJSON_PrintUnformatted(obj) : NULL;
    cJSON_Delete(obj);
    return text;
}

rlt_status rlt_db_export_jsonl(rlt_db *db, const char *spec, FILE *out, rlt_diag *diag)
{
    RLT_ASSERT(db && out);
    const char *doing = "exporting records";
    sqlite3_stmt *st = NULL;
    char *line = NULL;
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
        line = record_to_json(&r);
        if (!line) {
            status = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory exporting records of '%s'", db->path);
            goto cleanup;
        }
        if (fputs(line, out) == EOF || fputc('\n', out) == EOF) break;
        cJSON_free(line);
        line = NULL;
    }
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        status = db_fail(db, rc, doing, diag);
        goto cleanup;
    }
    if (rc == SQLITE_ROW || fflush(out) != 0 || ferror(out))
        status = rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot write the export of '%s': %s", db->path,
                          strerror(errno));
cleanup:
    cJSON_free(line);
    sqlite3_finalize(st);
    if (!sqlite3_get_autocommit(db->conn)) exec_sql(db, "ROLLBACK"); /* read only */
    return status;
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
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s:%ld: line longer than %d bytes: not a record of format v1",
                        source, line_no, JSONL_LINE_MAX_BYTES);
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

/* A JSON number that is a whole number in [lo, hi]. */
static bool json_whole(const cJSON *item, double lo, double hi, double *out)
{
    if (!cJSON_IsNumber(item)) return false;
    double d = item->valuedouble;
    if (!(d >= lo && d <= hi) || d != floor(d)) return false;
    *out = d;
    return true;
}

/* The seed: a string of 1 to 20 decimal digits that fits 64 bits, or (as
 * a hand-written file may have it) a whole JSON number up to 2^53. */
static bool json_seed(const cJSON *item, uint64_t *out)
{
    double d;
    if (json_whole(item, 0, JSON_EXACT_INT_MAX, &d)) {
        *out = (uint64_t)d;
        return true;
    }
    if (!cJSON_IsString(item)) return false;
    return rlt_parse_u64(item->valuestring, out);
}

/* True when the text has the escape \u0000 (outside another escape). cJSON
 * decodes it to a NUL byte inside the string, which would cut the field
 * short without a word; such a line is refused instead. */
static bool has_escaped_nul(const char *text)
{
    for (const char *p = text; *p; p++) {
        if (*p != '\\') continue;
        if (p[1] == 'u' && strncmp(p + 2, "0000", 4) == 0) return true;
        if (p[1]) p++; /* skip the escaped character, so "\\u0000" is text */
    }
    return false;
}

/* Parses one line into a record, checking every field by name and type. */
static rlt_status parse_record_line(const char *text, const char *source, long line_no, rlt_record *out,
                                    rlt_diag *diag)
{
    const char *end = NULL;
    rlt_status status = RLT_STATUS_OK;
    memset(out, 0, sizeof *out);
    cJSON *json = cJSON_ParseWithOpts(text, &end, true);
    if (!json) {
        /* cJSON answers an allocation failure as it answers bad syntax: the
         * two cannot be told apart here. */
        long col = end && end >= text ? (long)(end - text) + 1 : 1;
        status = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                          "%s:%ld:%ld: not valid JSON (expected one record object a line)", source, line_no, col);
        goto cleanup;
    }
    if (has_escaped_nul(text)) {
        status = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                          "%s:%ld: a string holds \\u0000 (a NUL character), which record fields cannot hold",
                          source, line_no);
        goto cleanup;
    }
    if (!cJSON_IsObject(json)) {
        status = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s:%ld: expected a JSON object (one record a line)", source,
                          line_no);
        goto cleanup;
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(json, "v");
    double version;
    if (!v) {
        status = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s:%ld: missing field \"v\" (the format version, 1)", source,
                          line_no);
        goto cleanup;
    }
    if (!json_whole(v, 0, JSON_EXACT_INT_MAX, &version) || version != JSONL_FORMAT_VERSION) {
        char shown[64] = "not a whole number";
        if (cJSON_IsNumber(v)) snprintf(shown, sizeof shown, "%g", v->valuedouble);
        status = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                          "%s:%ld: unknown records format version \"v\": %s (this rltune reads version %d)", source,
                          line_no, shown, JSONL_FORMAT_VERSION);
        goto cleanup;
    }
    for (const cJSON *item = json->child; item; item = item->next) {
        if (strcmp(item->string, "v") != 0 && !field_find(item->string)) {
            status = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                              "%s:%ld: unknown field \"%s\" (format v1 has v, id, spec, target, config, schedule, "
                              "tuner, status, time_min_ms, time_median_ms, gflops, n_threads, seed, build_s, "
                              "created_s, message)",
                              source, line_no, item->string);
            goto cleanup;
        }
        for (const cJSON *prev = json->child; prev != item; prev = prev->next)
            if (strcmp(prev->string, item->string) == 0) {
                status = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s:%ld: field \"%s\" appears twice", source,
                                  line_no, item->string);
                goto cleanup;
            }
    }
    for (size_t i = 0; i < RLT_ARRAY_LEN(k_fields); i++) {
        const field_desc *f = &k_fields[i];
        const cJSON *item = cJSON_GetObjectItemCaseSensitive(json, f->name);
        void *dst = field_ptr(out, f);
        double d = 0;
        const char *expected = NULL;
        if (!item) {
            status = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s:%ld: missing field \"%s\"", source, line_no, f->name);
            goto cleanup;
        }
        switch (f->kind) {
        case FIELD_ID:
            if (json_whole(item, 0, JSON_EXACT_INT_MAX, &d))
                *(int64_t *)dst = (int64_t)d;
            else
                expected = "a whole number >= 0";
            break;
        case FIELD_INT:
            if (json_whole(item, 0, INT_MAX, &d))
                *(int *)dst = (int)d;
            else
                expected = "a whole number from 0 to 2147483647";
            break;
        case FIELD_REAL:
            if (cJSON_IsNumber(item) && isfinite(item->valuedouble))
                *(double *)dst = item->valuedouble;
            else
                expected = "a finite number";
            break;
        case FIELD_SEED:
            if (!json_seed(item, (uint64_t *)dst)) expected = "a string of decimal digits below 2^64";
            break;
        case FIELD_TEXT: {
            if (!cJSON_IsString(item)) {
                expected = "a string";
                break;
            }
            size_t len = strlen(item->valuestring);
            if (len >= f->size) {
                status = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                                  "%s:%ld: field \"%s\" is %zu bytes long; rltune records hold at most %zu (it "
                                  "was not cut)",
                                  source, line_no, f->name, len, f->size - 1);
                goto cleanup;
            }
            memcpy(dst, item->valuestring, len + 1);
            break;
        }
        }
        if (expected) {
            status = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s:%ld: field \"%s\" must be %s", source, line_no,
                              f->name, expected);
            goto cleanup;
        }
    }
    char problem[512];
    if (record_problem(out, problem, sizeof problem))
        status = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s:%ld: %s", source, line_no, problem);
cleanup:
    cJSON_Delete(json);
    return status;
}

static rlt_status record_exists(rlt_db *db, const rlt_record *r, bool *out_exists, const char *doing,
                                rlt_diag *diag)
{
    sqlite3_stmt *st = db->st_exists;
    rlt_status status = RLT_STATUS_OK;
    bind_text(st, 1, r->spec);
    bind_text(st, 2, r->target);
    bind_text(st, 3, r->config);
    bind_double(st, 4, r->created_s);
    bind_text(st, 5, r->status);
    int rc = sqlite3_step(st);
    *out_exists = rc == SQLITE_ROW;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) status = db_fail(db, rc, doing, diag);
    stmt_done(st);
    return status;
}

rlt_status rlt_db_import_jsonl(rlt_db *db, FILE *in, const char *source, int *out_n_added, int *out_n_skipped,
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
        status = parse_record_line(line.data, source, line_no, &r, diag);
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
