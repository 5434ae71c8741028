/* Unit tests of the records database (src/db/db.c): records go in and come
 * back by lookup, best, history and count, also after reopening; files that
 * are not ours (not SQLite, someone else's SQLite, a newer schema, a damaged
 * copy) are refused and left byte-for-byte as they were; processes append
 * at once without losing a record; a kill -9 loses only the open batch; a
 * held lock and a full disk give their messages and keep earlier records;
 * JSON-lines export and import round-trip every field and refuse bad lines
 * whole; allocation failures are reported. Every test works in its own
 * directory under /tmp and removes it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/db_check.h"
#include "../common/leaks.h"
#include "../common/procs.h"
#include "../common/tmp.h"
#include "db/db.h"

/* ---- helpers ------------------------------------------------------------ */

/* The test's own directory (tmp.h), as a copy the test frees; the suite's
 * fini removes it too, when a failed assertion ends the test before its own
 * cleanup. */
static char temp_dir[] = "/tmp/rlt_db_XXXXXX";

static char *make_temp_dir(void)
{
    char *dir = strdup(tmp_dir_use(temp_dir));
    cr_assert_not_null(dir);
    return dir;
}

TestSuite(db, .fini = tmp_dir_remove_used);

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* A whole file's bytes (free with rlt_free). */
static char *slurp(const char *path, size_t *out_len)
{
    char *text = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_file_read(path, &text, out_len, &d), RLT_STATUS_OK, "%s", d.message);
    return text;
}

/* Asserts that `path` holds exactly `len` bytes equal to `data`. */
static void assert_file_is(const char *path, const char *data, size_t len)
{
    size_t now_len = 0;
    char *now = slurp(path, &now_len);
    cr_assert_eq(now_len, len, "'%s' changed size: %zu -> %zu", path, len, now_len);
    cr_assert(memcmp(now, data, len) == 0, "'%s' changed", path);
    rlt_free(now);
}

/* The key text of test_target(): what queries for it pass. */
#define TEST_TARGET "cpu=test;vec=8;threads=1;weights=prepacked;codegen=3;cc=gcc"
#define OTHER_TARGET "cpu=other;vec=8;threads=1;weights=prepacked;codegen=3;cc=gcc"

static rlt_record_target test_target(const char *cpu)
{
    rlt_record_target t = {.vector_floats = 8, .n_threads = 1, .is_weights_prepacked = true, .codegen = 3};
    snprintf(t.cpu, sizeof t.cpu, "%s", cpu);
    snprintf(t.cc, sizeof t.cc, "gcc");
    return t;
}

static rlt_record make_record(const char *spec, const char *config, int i)
{
    rlt_record r;
    memset(&r, 0, sizeof r);
    snprintf(r.spec, sizeof r.spec, "%s", spec);
    r.target = test_target("test");
    snprintf(r.config, sizeof r.config, "%s", config);
    snprintf(r.schedule, sizeof r.schedule, "split i %d\nvectorize i.i\n", 2 + i % 7);
    snprintf(r.tuner, sizeof r.tuner, "random");
    r.status = RLT_STATUS_OK;
    r.time_min_ms = 1.0 + i * 0.25;
    r.time_median_ms = r.time_min_ms * 1.05;
    r.gflops = 100.0 / r.time_min_ms;
    r.seed = 42;
    r.build_s = 0.5;
    r.created_s = 1700000000.0 + i;
    return r;
}

static rlt_db *open_db(const char *path, const rlt_db_opts *opts)
{
    rlt_db *db = NULL;
    rlt_diag d = {0};
    rlt_status st = rlt_db_open(path, opts, &db, &d);
    cr_assert_eq(st, RLT_STATUS_OK, "open '%s': %s", path, d.message);
    cr_assert_not_null(db);
    return db;
}

static void append(rlt_db *db, int n, const rlt_record *r)
{
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_append(db, n, r, &d), RLT_STATUS_OK, "append: %s", d.message);
}

static int64_t count(rlt_db *db, const char *spec)
{
    int64_t n = -1;
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_count(db, spec, &n, &d), RLT_STATUS_OK, "count: %s", d.message);
    return n;
}

/* Expects rlt_db_open to refuse `path` with `status` and a message holding
 * `needle` (and the file name), and to hand out no handle. */
static void expect_open_refused(const char *path, bool is_read_only, rlt_status status, const char *needle)
{
    rlt_db *db = (rlt_db *)&db;
    rlt_diag d = {0};
    rlt_db_opts o = {.is_read_only = is_read_only};
    rlt_status st = rlt_db_open(path, &o, &db, &d);
    cr_assert_eq(st, status, "open '%s' gave %s: %s", path, rlt_status_str(st), d.message);
    cr_assert_null(db);
    cr_assert(strstr(d.message, needle), "message lacks '%s': %s", needle, d.message);
    cr_assert(strstr(d.message, path), "message does not name the file: %s", d.message);
}

typedef struct collected {
    int n;
    rlt_record *records; /* calloc'd by the collector's owner */
    int cap;
} collected;

static bool collect(const rlt_record *r, void *ctx)
{
    collected *c = ctx;
    if (c->n < c->cap) c->records[c->n] = *r;
    c->n++;
    return true;
}

static void assert_same_record(const rlt_record *a, const rlt_record *b)
{
    cr_assert_str_eq(a->spec, b->spec);
    cr_assert(rlt_record_target_equal(&a->target, &b->target));
    cr_assert_str_eq(a->config, b->config);
    cr_assert_str_eq(a->schedule, b->schedule);
    cr_assert_str_eq(a->tuner, b->tuner);
    cr_assert_eq(a->status, b->status);
    cr_assert_eq(a->is_final, b->is_final);
    cr_assert_str_eq(a->message, b->message);
    cr_assert_eq(a->time_min_ms, b->time_min_ms);
    cr_assert_eq(a->time_median_ms, b->time_median_ms);
    cr_assert_eq(a->gflops, b->gflops);
    cr_assert_eq(a->seed, b->seed);
    cr_assert_eq(a->build_s, b->build_s);
    cr_assert_eq(a->created_s, b->created_s);
}

/* Runs SQL on a raw SQLite connection (someone else's program). */
static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *c = NULL;
    cr_assert_eq(sqlite3_open(path, &c), SQLITE_OK);
    char *err = NULL;
    int rc = sqlite3_exec(c, sql, NULL, NULL, &err);
    cr_assert_eq(rc, SQLITE_OK, "%s: %s", sql, err ? err : "");
    cr_assert_eq(sqlite3_close(c), SQLITE_OK);
}

/* ---- best: a configuration counts by its latest record -------------------- */

static rlt_record timed_record(const char *config, const char *schedule, rlt_status status, double gflops,
                               double created_s)
{
    rlt_record r = make_record("matmul:M=8,N=8,K=8", config, 0);
    snprintf(r.schedule, sizeof r.schedule, "%s", schedule);
    r.status = status;
    bool is_ok = status == RLT_STATUS_OK;
    r.gflops = is_ok ? gflops : 0;
    r.time_min_ms = r.time_median_ms = is_ok ? 1.0 / gflops : 0;
    r.created_s = created_s;
    return r;
}

Test(db, best_counts_a_configuration_by_its_latest_record)
{
    char *dir = make_temp_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/best.db", dir);
    rlt_db *db = open_db(path, NULL);
    const rlt_record recs[] = {
        timed_record("a", "s", RLT_STATUS_OK, 100.0, 1.0), /* a lucky first measurement... */
        timed_record("b", "s", RLT_STATUS_OK, 80.0, 2.0),
        timed_record("c", "s", RLT_STATUS_OK, 120.0, 3.0), /* ...and a kernel that later fails */
        timed_record("a", "s", RLT_STATUS_OK, 50.0, 4.0),  /* ...measured again: 50 */
        timed_record("c", "s", RLT_STATUS_WRONG_ANSWER, 0.0, 5.0),
        timed_record("", "split i 2\n", RLT_STATUS_OK, 60.0, 6.0), /* two bare schedules */
    };
    append(db, (int)RLT_ARRAY_LEN(recs), recs);
    rlt_record r;
    bool found = false;
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_best(db, "matmul:M=8,N=8,K=8", NULL, &r, &found, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(found);
    cr_assert_str_eq(r.config, "b");
    cr_assert_eq(r.gflops, 80.0);
    /* a later bare schedule does not hide an earlier, different one */
    rlt_record bare = timed_record("", "split i 4\n", RLT_STATUS_OK, 90.0, 7.0);
    append(db, 1, &bare);
    rlt_record slower = timed_record("", "split i 8\n", RLT_STATUS_OK, 10.0, 8.0);
    append(db, 1, &slower);
    cr_assert_eq(rlt_db_best(db, "matmul:M=8,N=8,K=8", TEST_TARGET, &r, &found, &d), RLT_STATUS_OK);
    cr_assert(found);
    cr_assert_str_eq(r.schedule, "split i 4\n");
    /* a careful measurement (a final pick's) outranks the quick ones */
    rlt_record careful = timed_record("d", "s", RLT_STATUS_OK, 40.0, 9.0);
    careful.is_final = true;
    append(db, 1, &careful);
    cr_assert_eq(rlt_db_best(db, "matmul:M=8,N=8,K=8", NULL, &r, &found, &d), RLT_STATUS_OK);
    cr_assert_str_eq(r.config, "d");
    rlt_db_close(db);
    tmp_remove_tree(dir);
    free(dir);
}

static bool config_is_not(const rlt_record *r, void *ctx) { return strcmp(r->config, (const char *)ctx) != 0; }

static bool accept_none(const rlt_record *r, void *ctx)
{
    (void)r;
    (void)ctx;
    return false;
}

Test(db, best_where_takes_the_first_accepted_in_best_order)
{
    char *dir = make_temp_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/best_where.db", dir);
    rlt_db *db = open_db(path, NULL);
    const rlt_record recs[] = {
        timed_record("a", "s", RLT_STATUS_OK, 100.0, 1.0),
        timed_record("b", "s", RLT_STATUS_OK, 80.0, 2.0),
        timed_record("a", "s", RLT_STATUS_OK, 50.0, 3.0), /* a's newest: 50, behind b */
        timed_record("c", "s", RLT_STATUS_OK, 120.0, 4.0),
        timed_record("d", "s", RLT_STATUS_RUN_ERROR, 0.0, 5.0),
    };
    append(db, (int)RLT_ARRAY_LEN(recs), recs);
    rlt_record r;
    bool found = false;
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_best_where(db, "matmul:M=8,N=8,K=8", NULL, NULL, NULL, &r, &found, &d), RLT_STATUS_OK);
    cr_assert(found);
    cr_assert_str_eq(r.config, "c"); /* no filter: rlt_db_best's answer */
    cr_assert_eq(rlt_db_best_where(db, "matmul:M=8,N=8,K=8", TEST_TARGET, config_is_not, "c", &r, &found, &d),
                 RLT_STATUS_OK, "%s", d.message);
    cr_assert(found);
    cr_assert_str_eq(r.config, "b"); /* not a's older 100: a counts by its newest */
    cr_assert_eq(rlt_db_best_where(db, "matmul:M=8,N=8,K=8", NULL, accept_none, NULL, &r, &found, &d), RLT_STATUS_OK);
    cr_assert_not(found);
    cr_assert_eq(rlt_db_best_where(db, "matmul:M=8,N=8,K=8", OTHER_TARGET, config_is_not, "c", &r, &found, &d),
                 RLT_STATUS_OK);
    cr_assert_not(found);
    rlt_db_close(db);
    tmp_remove_tree(dir);
    free(dir);
}

/* ---- the basic life of a database ---------------------------------------- */

Test(db, create_append_query_and_reopen)
{
    char *dir = make_temp_dir();
    char path[512], wal[600];
    snprintf(path, sizeof path, "%s/records.db", dir);
    snprintf(wal, sizeof wal, "%s-wal", path);
    const char *mm = "matmul:M=64,N=64,K=64";
    const char *conv = "conv2d:N=1,C=3";

    rlt_db *db = open_db(path, NULL);
    cr_assert_eq(count(db, NULL), 0);
    int64_t wid = 0, wid2 = 0;
    rlt_diag d = {0};
    rlt_record_target t = test_target("test");
    cr_assert_eq(rlt_db_workload(db, mm, &t, &wid, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_db_workload(db, mm, &t, &wid2, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_gt(wid, 0);
    cr_assert_eq(wid, wid2);

    rlt_record batch[6];
    for (int i = 0; i < 6; i++) {
        char config[64];
        snprintf(config, sizeof config, "space=v1;tile=%d", i);
        batch[i] = make_record(mm, config, i);
    }
    /* A failure is a record too; it must never be "best". */
    batch[5].status = RLT_STATUS_WRONG_ANSWER;
    batch[5].gflops = 1e9;
    snprintf(batch[5].message, sizeof batch[5].message, "C[3,4] = 1.5, expected 2");
    append(db, 6, batch);
    rlt_record other = make_record(conv, "space=v1;tile=1", 0);
    other.target = test_target("other");
    append(db, 1, &other);
    /* The same config measured again later: lookup gives the newest. */
    rlt_record again = make_record(mm, "space=v1;tile=2", 2);
    again.created_s += 1000;
    again.time_min_ms = 7.5;
    append(db, 1, &again);

    cr_assert_eq(count(db, NULL), 8);
    cr_assert_eq(count(db, mm), 7);
    cr_assert_eq(count(db, conv), 1);
    cr_assert_eq(count(db, "nothing"), 0);

    for (int pass = 0; pass < 2; pass++) {
        rlt_record r;
        bool found = false;
        cr_assert_eq(rlt_db_lookup(db, mm, TEST_TARGET, "space=v1;tile=3", &r, &found, &d), RLT_STATUS_OK);
        cr_assert(found);
        assert_same_record(&r, &batch[3]);
        cr_assert_gt(r.id, 0);
        cr_assert_eq(rlt_db_lookup(db, mm, TEST_TARGET, "space=v1;tile=2", &r, &found, &d), RLT_STATUS_OK);
        cr_assert(found);
        cr_assert_eq(r.time_min_ms, 7.5);
        cr_assert_eq(rlt_db_lookup(db, mm, OTHER_TARGET, "space=v1;tile=3", &r, &found, &d), RLT_STATUS_OK);
        cr_assert_not(found);
        cr_assert_eq(rlt_db_lookup(db, mm, TEST_TARGET, "space=v1;tile=99", &r, &found, &d), RLT_STATUS_OK);
        cr_assert_not(found);

        /* best: tile=0 has the smallest time, so the most GFLOP/s among OK. */
        cr_assert_eq(rlt_db_best(db, mm, NULL, &r, &found, &d), RLT_STATUS_OK);
        cr_assert(found);
        assert_same_record(&r, &batch[0]);
        cr_assert_eq(rlt_db_best(db, mm, TEST_TARGET, &r, &found, &d), RLT_STATUS_OK);
        cr_assert(found);
        cr_assert_str_eq(r.config, "space=v1;tile=0");
        cr_assert_eq(rlt_db_best(db, mm, OTHER_TARGET, &r, &found, &d), RLT_STATUS_OK);
        cr_assert_not(found);
        cr_assert_eq(rlt_db_best(db, conv, NULL, &r, &found, &d), RLT_STATUS_OK);
        cr_assert(found);
        cr_assert_str_eq(r.target.cpu, "other");

        /* history: oldest first, failures included. */
        rlt_record got[16];
        collected c = {0, got, 16};
        cr_assert_eq(rlt_db_history(db, mm, NULL, collect, &c, &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_eq(c.n, 7);
        for (int i = 0; i < 6; i++) assert_same_record(&got[i], &batch[i]);
        assert_same_record(&got[6], &again);
        for (int i = 1; i < c.n; i++) cr_assert_leq(got[i - 1].created_s, got[i].created_s);
        c.n = 0;
        cr_assert_eq(rlt_db_history(db, NULL, NULL, collect, &c, &d), RLT_STATUS_OK);
        cr_assert_eq(c.n, 8);
        c.n = 0;
        cr_assert_eq(rlt_db_history(db, conv, TEST_TARGET, collect, &c, &d), RLT_STATUS_OK);
        cr_assert_eq(c.n, 0);

        /* Reopen: everything is still there, and the WAL was folded back. */
        rlt_db_close(db);
        cr_assert_not(tmp_exists(wal), "the -wal file outlived the last connection");
        db = open_db(path, NULL);
    }
    rlt_db_close(db);

    /* Read-only: reads work, writes are refused. */
    rlt_db_opts ro = {.is_read_only = true};
    db = open_db(path, &ro);
    cr_assert_eq(count(db, NULL), 8);
    rlt_diag d2 = {0};
    cr_assert_eq(rlt_db_append(db, 1, &again, &d2), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d2.message, "read-only"), "%s", d2.message);
    rlt_db_close(db);
    tmp_remove_tree(dir);
    free(dir);
    assert_no_leaks();
}

Test(db, empty_file_gets_the_schema_and_read_only_never_creates)
{
    char *dir = make_temp_dir();
    char path[512], absent[512];
    snprintf(path, sizeof path, "%s/empty.db", dir);
    snprintf(absent, sizeof absent, "%s/absent.db", dir);
    tmp_file_write(path, "", 0);
    expect_open_refused(path, true, RLT_STATUS_INVALID_ARGUMENT, "empty");
    expect_open_refused(absent, true, RLT_STATUS_IO_ERROR, "No such file");
    cr_assert_not(tmp_exists(absent));

    rlt_db *db = open_db(path, NULL);
    rlt_record r = make_record("add:N=8", "", 0);
    append(db, 1, &r);
    rlt_db_close(db);
    db = open_db(path, &(rlt_db_opts){.is_read_only = true});
    cr_assert_eq(count(db, NULL), 1);
    rlt_db_close(db);

    /* The schema is the documented one (docs/formats.md). */
    sqlite3 *c = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &c, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(c, "SELECT value FROM rltune_meta WHERE key = 'schema_version'", -1, &st, NULL),
                 SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "3");
    sqlite3_finalize(st);
    cr_assert_eq(sqlite3_prepare_v2(c, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "wal");
    sqlite3_finalize(st);
    sqlite3_close(c);
    tmp_remove_tree(dir);
    free(dir);
}

Test(db, file_uri_names_stay_file_names)
{
    /* SQLite would read "file:x.db?mode=memory" as a URI: an in-memory
     * database, and nothing stored. rltune opens the file of that name. */
    char *dir = make_temp_dir();
    cr_assert_eq(chdir(dir), 0);
    rlt_db *db = open_db("file:x.db?mode=memory", NULL);
    rlt_record r = make_record("add:N=8", "", 0);
    append(db, 1, &r);
    rlt_db_close(db);
    cr_assert(tmp_exists("file:x.db?mode=memory"));
    db = open_db("file:x.db?mode=memory", NULL);
    cr_assert_eq(count(db, NULL), 1);
    rlt_db_close(db);
    cr_assert_eq(chdir("/"), 0);
    tmp_remove_tree(dir);
    free(dir);
}

Test(db, bad_records_are_refused_whole)
{
    char *dir = make_temp_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/r.db", dir);
    rlt_db *db = open_db(path, NULL);
    rlt_record good = make_record("add:N=8", "a", 0);
    struct {
        const char *needle;
        rlt_record r;
    } cases[4];
    cases[0].needle = "not a status";
    cases[0].r = good;
    cases[0].r.status = RLT_STATUS_COUNT;
    cases[1].needle = "not a finite number";
    cases[1].r = good;
    cases[1].r.gflops = NAN;
    cases[2].needle = "no terminating NUL";
    cases[2].r = good;
    memset(cases[2].r.tuner, 'x', sizeof cases[2].r.tuner);
    cases[3].needle = "'op' is empty";
    cases[3].r = good;
    cases[3].r.spec[0] = '\0';
    for (size_t i = 0; i < RLT_ARRAY_LEN(cases); i++) {
        rlt_record pair[2] = {good, cases[i].r};
        rlt_diag d = {0};
        cr_assert_eq(rlt_db_append(db, 2, pair, &d), RLT_STATUS_INVALID_ARGUMENT);
        cr_assert(strstr(d.message, cases[i].needle), "%s", d.message);
        cr_assert(strstr(d.message, "record 1"), "%s", d.message);
    }
    cr_assert_eq(count(db, NULL), 0);
    rlt_db_close(db);
    tmp_remove_tree(dir);
    free(dir);
}

/* ---- files that are not ours are refused and left alone ------------------- */

Test(db, non_sqlite_files_are_refused_unchanged)
{
    char *dir = make_temp_dir();
    char path[512];
    unsigned char noise[8192];
    rlt_rng rng;
    rlt_rng_seed(&rng, 7);
    for (size_t i = 0; i < sizeof noise; i++) noise[i] = (unsigned char)rlt_rng_u64(&rng);
    const char *text = "these are my notes\nnot a database\n";
    /* A valid header on garbage gets past the first check; SQLite then
     * finds it is no database, and that is corruption, not ours to fix. */
    char fake[4096];
    memset(fake, 0x5a, sizeof fake);
    memcpy(fake, "SQLite format 3", 16);
    struct {
        const char *name;
        const void *data;
        size_t len;
        rlt_status status;
        const char *needle;
    } cases[] = {
        {"noise.db", noise, sizeof noise, RLT_STATUS_INVALID_ARGUMENT, "is not an SQLite database"},
        {"notes.txt", text, strlen(text), RLT_STATUS_INVALID_ARGUMENT, "is not an SQLite database"},
        {"tiny.db", "SQLi", 4, RLT_STATUS_INVALID_ARGUMENT, "is not an SQLite database"},
        {"fake.db", fake, sizeof fake, RLT_STATUS_IO_ERROR, "corrupt"},
    };
    for (size_t i = 0; i < RLT_ARRAY_LEN(cases); i++) {
        snprintf(path, sizeof path, "%s/%s", dir, cases[i].name);
        tmp_file_write(path, cases[i].data, cases[i].len);
        for (int ro = 0; ro < 2; ro++) {
            expect_open_refused(path, ro, cases[i].status, cases[i].needle);
            assert_file_is(path, cases[i].data, cases[i].len);
        }
    }
    /* A directory is not a database either. */
    expect_open_refused(dir, false, RLT_STATUS_INVALID_ARGUMENT, "not a regular file");
    tmp_remove_tree(dir);
    free(dir);
}

Test(db, someone_elses_sqlite_database_is_refused_unchanged)
{
    char *dir = make_temp_dir();
    char path[512], wal_path[512];
    snprintf(path, sizeof path, "%s/theirs.db", dir);
    raw_exec(path, "CREATE TABLE foo(a, b); CREATE TABLE bar(x); INSERT INTO foo VALUES (1, 'precious');");
    size_t len = 0;
    char *before = slurp(path, &len);
    for (int ro = 0; ro < 2; ro++) {
        expect_open_refused(path, ro, RLT_STATUS_INVALID_ARGUMENT, "tables: foo, bar");
        assert_file_is(path, before, len);
    }
    rlt_free(before);

    /* The same in WAL mode. */
    snprintf(wal_path, sizeof wal_path, "%s/theirs-wal.db", dir);
    raw_exec(wal_path, "PRAGMA journal_mode=WAL; CREATE TABLE foo(a); INSERT INTO foo VALUES (1);");
    before = slurp(wal_path, &len);
    expect_open_refused(wal_path, false, RLT_STATUS_INVALID_ARGUMENT, "tables: foo");
    assert_file_is(wal_path, before, len);
    rlt_free(before);

    /* An rltune_meta table that some other program made. */
    snprintf(path, sizeof path, "%s/other-app.db", dir);
    raw_exec(path, "CREATE TABLE rltune_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                   "INSERT INTO rltune_meta VALUES ('app', 'something'), ('schema_version', '1');");
    before = slurp(path, &len);
    expect_open_refused(path, false, RLT_STATUS_INVALID_ARGUMENT, "app is 'something'");
    assert_file_is(path, before, len);
    rlt_free(before);
    tmp_remove_tree(dir);
    free(dir);
    assert_no_leaks();
}

Test(db, newer_schema_is_refused_unchanged)
{
    char *dir = make_temp_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/future.db", dir);
    rlt_db *db = open_db(path, NULL);
    rlt_record r = make_record("add:N=8", "", 0);
    append(db, 1, &r);
    rlt_db_close(db);
    raw_exec(path, "UPDATE rltune_meta SET value = '4' WHERE key = 'schema_version'");
    size_t len = 0;
    char *before = slurp(path, &len);
    for (int ro = 0; ro < 2; ro++) {
        expect_open_refused(path, ro, RLT_STATUS_INVALID_ARGUMENT, "schema version 4, newer");
        assert_file_is(path, before, len);
    }
    rlt_free(before);
    tmp_remove_tree(dir);
    free(dir);
}

/* Builds a database of n records with long schedules, closed (its WAL
 * folded back), and returns its bytes. */
static char *build_db(const char *path, int n, size_t *out_len)
{
    rlt_db *db = open_db(path, NULL);
    rlt_record batch[50];
    for (int i = 0; i < n; i += 50) {
        for (int j = 0; j < 50; j++) {
            char config[64];
            snprintf(config, sizeof config, "space=v1;k=%d", i + j);
            batch[j] = make_record("matmul:M=64,N=64,K=64", config, i + j);
            memset(batch[j].schedule, 's', 600);
            batch[j].schedule[600] = '\0';
        }
        append(db, 50, batch);
    }
    rlt_db_close(db);
    return slurp(path, out_len);
}

/* Opens a damaged database and reads everything: some step must say
 * "corrupt" (the damage is detected, not read as records), and the file must
 * be left as it was. */
static void expect_damage_reported(const char *path, const char *bytes, size_t len)
{
    rlt_db *db = NULL;
    rlt_diag d = {0};
    rlt_status st = rlt_db_open(path, NULL, &db, &d);
    if (st == RLT_STATUS_OK) {
        int64_t n = 0;
        rlt_record r;
        bool found;
        collected c = {0, NULL, 0}; /* counts only */
        st = rlt_db_history(db, NULL, NULL, collect, &c, &d);
        if (st == RLT_STATUS_OK) st = rlt_db_count(db, NULL, &n, &d);
        if (st == RLT_STATUS_OK) st = rlt_db_best(db, "matmul:M=64,N=64,K=64", NULL, &r, &found, &d);
        rlt_db_close(db);
    }
    cr_assert_eq(st, RLT_STATUS_IO_ERROR, "damage went unnoticed (%s): %s", rlt_status_str(st), d.message);
    cr_log_info("%s", d.message);
    cr_assert(strstr(d.message, "corrupt"), "%s", d.message);
    cr_assert(strstr(d.message, path), "%s", d.message);
    assert_file_is(path, bytes, len);
}

Test(db, damaged_database_is_reported_never_repaired)
{
    char *dir = make_temp_dir();
    char path[512], copy[512];
    snprintf(path, sizeof path, "%s/good.db", dir);
    size_t len = 0;
    char *good = build_db(path, 1000, &len);
    cr_assert_gt(len, 64 * 4096, "expected a database of many pages, got %zu bytes", len);

    /* Pages in the middle overwritten. */
    snprintf(copy, sizeof copy, "%s/overwritten.db", dir);
    char *bad = malloc(len);
    memcpy(bad, good, len);
    size_t page = 4096, middle = (len / page / 2) * page;
    memset(bad + middle, 0xa5, 6 * page);
    tmp_file_write(copy, bad, len);
    expect_damage_reported(copy, bad, len);

    /* Cut in half. */
    snprintf(copy, sizeof copy, "%s/truncated.db", dir);
    tmp_file_write(copy, good, len / 2);
    expect_damage_reported(copy, good, len / 2);

    free(bad);
    rlt_free(good);
    tmp_remove_tree(dir);
    free(dir);
    assert_no_leaks();
}

/* ---- processes at once ---------------------------------------------------- */

enum { N_WRITERS = 3, PER_WRITER = 300, BATCH = 10 };

/* A child: waits for the start signal, then appends its records in
 * batches. Exits 0 on success; prints why otherwise. */
static void writer_child(const char *path, int who, int start_fd)
{
    char c;
    if (read(start_fd, &c, 1) < 0) _exit(90);
    rlt_db *db = NULL;
    rlt_diag d = {0};
    if (rlt_db_open(path, NULL, &db, &d) != RLT_STATUS_OK) {
        fprintf(stderr, "writer %d: open: %s\n", who, d.message);
        _exit(91);
    }
    for (int b = 0; b < PER_WRITER / BATCH; b++) {
        rlt_record batch[BATCH];
        for (int j = 0; j < BATCH; j++) {
            char config[64];
            snprintf(config, sizeof config, "writer=%d;i=%d", who, b * BATCH + j);
            batch[j] = make_record("matmul:M=64,N=64,K=64", config, j);
        }
        if (rlt_db_append(db, BATCH, batch, &d) != RLT_STATUS_OK) {
            fprintf(stderr, "writer %d: append: %s\n", who, d.message);
            _exit(92);
        }
    }
    rlt_db_close(db);
    _exit(0);
}

typedef struct seen_set {
    int seen[N_WRITERS][PER_WRITER];
    int n_bad;
} seen_set;

static bool mark_seen(const rlt_record *r, void *ctx)
{
    seen_set *s = ctx;
    int who = -1, i = -1;
    if (sscanf(r->config, "writer=%d;i=%d", &who, &i) == 2 && who >= 0 && who < N_WRITERS && i >= 0 &&
        i < PER_WRITER)
        s->seen[who][i]++;
    else
        s->n_bad++;
    return true;
}

Test(db, concurrent_writers_lose_nothing)
{
    char *dir = make_temp_dir();
    char path[512];
    /* A new file: the writers also race to create the schema. */
    snprintf(path, sizeof path, "%s/shared.db", dir);
    int start[2];
    cr_assert_eq(pipe(start), 0);
    pid_t pids[N_WRITERS];
    for (int w = 0; w < N_WRITERS; w++) {
        pids[w] = fork();
        cr_assert_neq(pids[w], -1);
        if (pids[w] == 0) {
            close(start[1]);
            writer_child(path, w, start[0]);
        }
    }
    close(start[0]);
    double t0 = now_s();
    close(start[1]); /* every child's read returns now */
    for (int w = 0; w < N_WRITERS; w++) {
        int ws = 0;
        cr_assert_eq(waitpid(pids[w], &ws, 0), pids[w]);
        cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "writer %d failed (status %d)", w, ws);
    }
    cr_log_info("%d writers x %d records in batches of %d: %.2f s", N_WRITERS, PER_WRITER, BATCH, now_s() - t0);

    rlt_db *db = open_db(path, NULL);
    cr_assert_eq(count(db, NULL), N_WRITERS * PER_WRITER);
    static seen_set s;
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_history(db, NULL, NULL, mark_seen, &s, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(s.n_bad, 0);
    for (int w = 0; w < N_WRITERS; w++)
        for (int i = 0; i < PER_WRITER; i++) cr_assert_eq(s.seen[w][i], 1, "writer %d record %d", w, i);
    rlt_db_close(db);
    tmp_remove_tree(dir);
    free(dir);
}

/* Processes that keep one connection open and open, write and close more
 * beside it, over and over, as a network's tuning does (a connection per
 * task, opened while the others are open) with `rltune run` or `best`
 * reading in another process. Every close may be the last connection's,
 * which checkpoints the WAL and deletes the -wal and -shm files: it must
 * never be taken for the last while another process has a connection open
 * (opening a database once read its header through a descriptor of its
 * own, whose close dropped the process's locks on the file: the other
 * process then deleted the WAL under the open connections, and they failed
 * with "disk I/O error (No such file or directory)"). */
#define N_OPENERS 3
#define OPENS_EACH 120

static void opener_child(const char *path, int who, int start_fd)
{
    char c;
    if (read(start_fd, &c, 1) < 0) _exit(90);
    rlt_db *keeper = NULL;
    rlt_diag kd = {0};
    if (rlt_db_open(path, NULL, &keeper, &kd) != RLT_STATUS_OK) {
        fprintf(stderr, "opener %d, keeper: %s\n", who, kd.message);
        _exit(93);
    }
    for (int i = 0; i < OPENS_EACH; i++) {
        rlt_db *db = NULL;
        rlt_diag d = {0};
        bool is_reader = who == 0 && i % 2 == 1; /* one of them also opens read-only */
        if (rlt_db_open(path, &(rlt_db_opts){.is_read_only = is_reader}, &db, &d) != RLT_STATUS_OK) {
            fprintf(stderr, "opener %d, open %d%s: %s\n", who, i, is_reader ? " (read-only)" : "", d.message);
            _exit(91);
        }
        if (!is_reader) {
            char config[64];
            snprintf(config, sizeof config, "opener=%d;i=%d", who, i);
            rlt_record r = make_record("matmul:M=64,N=64,K=64", config, i);
            /* half through the connection just opened, half through the one kept open */
            if (rlt_db_append(i % 4 < 2 ? db : keeper, 1, &r, &d) != RLT_STATUS_OK) {
                fprintf(stderr, "opener %d, append %d: %s\n", who, i, d.message);
                _exit(92);
            }
        }
        rlt_db_close(db);
        int64_t n = 0;
        if (rlt_db_count(keeper, NULL, &n, &d) != RLT_STATUS_OK) { /* the kept connection still reads */
            fprintf(stderr, "opener %d, count %d: %s\n", who, i, d.message);
            _exit(94);
        }
    }
    rlt_db_close(keeper);
    _exit(0);
}

Test(db, processes_opening_and_closing_at_once_never_fail)
{
    char *dir = make_temp_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/shared.db", dir);
    rlt_db_close(open_db(path, NULL)); /* the file exists: every opener judges it read-only first */
    int start[2];
    cr_assert_eq(pipe(start), 0);
    pid_t pids[N_OPENERS];
    for (int w = 0; w < N_OPENERS; w++) {
        pids[w] = fork();
        cr_assert_neq(pids[w], -1);
        if (pids[w] == 0) {
            close(start[1]);
            opener_child(path, w, start[0]);
        }
    }
    close(start[0]);
    close(start[1]);
    for (int w = 0; w < N_OPENERS; w++) {
        int ws = 0;
        cr_assert_eq(waitpid(pids[w], &ws, 0), pids[w]);
        cr_expect(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "opener %d failed (status %d)", w, ws);
    }
    rlt_db *db = open_db(path, NULL);
    cr_expect_eq(count(db, NULL), N_OPENERS * OPENS_EACH - OPENS_EACH / 2);
    rlt_db_close(db);
    tmp_remove_tree(dir);
    free(dir);
}

typedef struct batch_scan {
    int max_batch;
    int per_batch[100000];
    int n_bad;
} batch_scan;

static bool scan_batches(const rlt_record *r, void *ctx)
{
    batch_scan *s = ctx;
    int b = -1, j = -1;
    if (sscanf(r->config, "batch=%d;j=%d", &b, &j) != 2 || b < 0 || b >= 100000 || j < 0 || j >= BATCH) {
        s->n_bad++;
        return true;
    }
    s->per_batch[b]++;
    if (b > s->max_batch) s->max_batch = b;
    return true;
}

Test(db, kill_9_loses_only_the_open_batch)
{
    char *dir = make_temp_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/killed.db", dir);
    rlt_db_close(open_db(path, NULL)); /* the schema exists before the child starts */
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        rlt_db *db = NULL;
        rlt_diag d = {0};
        if (rlt_db_open(path, NULL, &db, &d) != RLT_STATUS_OK) _exit(91);
        for (int b = 0;; b++) {
            rlt_record batch[BATCH];
            for (int j = 0; j < BATCH; j++) {
                char config[64];
                snprintf(config, sizeof config, "batch=%d;j=%d", b, j);
                batch[j] = make_record("matmul:M=64,N=64,K=64", config, j);
            }
            if (rlt_db_append(db, BATCH, batch, &d) != RLT_STATUS_OK) _exit(92);
        }
    }
    /* Let it commit for ~0.3 s, and at least one batch, then kill it in the
     * middle of whatever it is doing. */
    double t0 = now_s();
    int64_t n = 0;
    while (now_s() - t0 < 0.3 || n == 0) {
        cr_assert_lt(now_s() - t0, 10.0, "the child stored nothing in 10 s");
        sleep_s(0.05);
        rlt_db *peek = open_db(path, &(rlt_db_opts){.is_read_only = true});
        n = count(peek, NULL);
        rlt_db_close(peek);
    }
    cr_assert_eq(kill(pid, SIGKILL), 0);
    int ws = 0;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    cr_assert(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL, "the child ended before the kill (status %d)", ws);

    rlt_db *db = open_db(path, NULL);
    int64_t total = count(db, NULL);
    cr_assert_gt(total, 0);
    cr_assert_eq(total % BATCH, 0, "%lld records: a partial batch was stored", (long long)total);
    static batch_scan s;
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_history(db, NULL, NULL, scan_batches, &s, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(s.n_bad, 0);
    cr_assert_eq(total, (int64_t)(s.max_batch + 1) * BATCH, "batches missing before the last one");
    for (int b = 0; b <= s.max_batch; b++) cr_assert_eq(s.per_batch[b], BATCH, "batch %d", b);
    rlt_record r;
    bool found = false;
    char config[64];
    snprintf(config, sizeof config, "batch=%d;j=%d", s.max_batch, BATCH - 1);
    cr_assert_eq(rlt_db_lookup(db, "matmul:M=64,N=64,K=64", TEST_TARGET, config, &r, &found, &d),
                 RLT_STATUS_OK);
    cr_assert(found);
    cr_log_info("kill -9 after %.2f s: %lld records, %d whole batches", now_s() - t0, (long long)total,
                s.max_batch + 1);
    /* And it takes more. */
    rlt_record more = make_record("add:N=8", "after", 0);
    append(db, 1, &more);
    rlt_db_close(db);

    /* SQLite's own check agrees the file is sound. */
    assert_db_sound(path);
    tmp_remove_tree(dir);
    free(dir);
}

Test(db, a_held_lock_times_out_with_a_message)
{
    char *dir = make_temp_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/locked.db", dir);
    rlt_db_close(open_db(path, NULL));

    sqlite3 *holder = NULL;
    cr_assert_eq(sqlite3_open(path, &holder), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(holder, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);

    rlt_db *db = open_db(path, &(rlt_db_opts){.busy_timeout_s = 0.3});
    rlt_record r = make_record("add:N=8", "x", 0);
    rlt_diag d = {0};
    double t0 = now_s();
    cr_assert_eq(rlt_db_append(db, 1, &r, &d), RLT_STATUS_IO_ERROR);
    double waited = now_s() - t0;
    cr_assert(strstr(d.message, "locked"), "%s", d.message);
    cr_assert(strstr(d.message, path), "%s", d.message);
    cr_assert(strstr(d.message, "0.3 s"), "%s", d.message);
    cr_assert_geq(waited, 0.25, "gave up after %.3f s", waited);
    cr_assert_lt(waited, 1.0, "waited %.3f s", waited);

    cr_assert_eq(sqlite3_exec(holder, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    append(db, 1, &r);
    cr_assert_eq(count(db, NULL), 1);
    rlt_db_close(db);
    sqlite3_close(holder);
    tmp_remove_tree(dir);
    free(dir);
}

Test(db, full_disk_keeps_earlier_records)
{
    char *dir = make_temp_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/full.db", dir);
    size_t len = 0;
    rlt_free(build_db(path, 100, &len));
    int pages = (int)(len / 4096);

    rlt_db *db = NULL;
    rlt_diag od = {0};
    cr_assert_eq(rlt_db_open_for_tests(path, NULL, &(rlt_db_test_opts){.max_pages = pages + 4}, &db, &od),
                 RLT_STATUS_OK, "%s", od.message);
    int n_batches = 0;
    rlt_diag d = {0};
    rlt_status st = RLT_STATUS_OK;
    for (int b = 0; b < 200 && st == RLT_STATUS_OK; b++) {
        rlt_record batch[BATCH];
        for (int j = 0; j < BATCH; j++) {
            char config[64];
            snprintf(config, sizeof config, "full=%d;j=%d", b, j);
            batch[j] = make_record("matmul:M=64,N=64,K=64", config, j);
            memset(batch[j].schedule, 's', 1000);
            batch[j].schedule[1000] = '\0';
        }
        st = rlt_db_append(db, BATCH, batch, &d);
        if (st == RLT_STATUS_OK) n_batches++;
    }
    cr_assert_eq(st, RLT_STATUS_IO_ERROR, "never filled up: %s", d.message);
    cr_assert(strstr(d.message, "disk full"), "%s", d.message);
    cr_assert(strstr(d.message, "earlier records are safe"), "%s", d.message);
    cr_assert(strstr(d.message, path), "%s", d.message);
    cr_assert_eq(count(db, NULL), 100 + n_batches * BATCH);
    rlt_db_close(db);

    db = open_db(path, NULL);
    cr_assert_eq(count(db, NULL), 100 + n_batches * BATCH);
    rlt_record r = make_record("add:N=8", "after", 0);
    append(db, 1, &r);
    rlt_db_close(db);
    tmp_remove_tree(dir);
    free(dir);
}

/* ---- JSON lines ----------------------------------------------------------- */

static void export_to(rlt_db *db, const char *spec, const char *path)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_export_jsonl(db, spec, f, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(fclose(f), 0);
}

static rlt_status import_from(rlt_db *db, const char *path, int *added, int *skipped, rlt_diag *d)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    rlt_status st = rlt_db_import_jsonl(db, f, path, added, skipped, d);
    fclose(f);
    return st;
}

Test(db, export_then_import_gives_identical_records)
{
    char *dir = make_temp_dir();
    char a_path[512], b_path[512], out1[512], out2[512];
    snprintf(a_path, sizeof a_path, "%s/a.db", dir);
    snprintf(b_path, sizeof b_path, "%s/b.db", dir);
    snprintf(out1, sizeof out1, "%s/a.jsonl", dir);
    snprintf(out2, sizeof out2, "%s/b.jsonl", dir);

    enum { N = 6 };
    rlt_record in[N];
    for (int i = 0; i < N; i++) in[i] = make_record("matmul:M=64,N=64,K=64", "", i);
    snprintf(in[0].config, sizeof in[0].config, "space=v1;quote=\"x\";back=\\;tab=\t");
    snprintf(in[0].schedule, sizeof in[0].schedule, "split i 4\n# ünïcödé ✓\nreorder k i.o\n");
    in[1].seed = UINT64_MAX;
    in[2].seed = (1ull << 53) + 1;
    in[3].time_min_ms = 0.1;
    in[3].time_median_ms = 1e-300;
    in[3].gflops = 123456789.123456789;
    in[3].created_s = 1712345678.123456789;
    in[2].is_final = true;
    in[4].status = RLT_STATUS_RUN_TIMEOUT;
    in[4].time_min_ms = in[4].time_median_ms = in[4].gflops = 0;
    snprintf(in[4].message, sizeof in[4].message, "ran past 10 s\nkilled");
    snprintf(in[5].spec, sizeof in[5].spec, "conv2d:N=1");
    memset(in[5].schedule, 'z', sizeof in[5].schedule - 1);
    in[5].schedule[sizeof in[5].schedule - 1] = '\0';

    rlt_db *a = open_db(a_path, NULL);
    append(a, N, in);
    export_to(a, NULL, out1);
    rlt_db *b = open_db(b_path, NULL);
    int added = -1, skipped = -1;
    rlt_diag d = {0};
    cr_assert_eq(import_from(b, out1, &added, &skipped, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(added, N);
    cr_assert_eq(skipped, 0);

    /* Every field, both ways: records read back equal those appended. */
    static rlt_record got[N + 1];
    collected c = {0, got, N + 1};
    cr_assert_eq(rlt_db_history(b, NULL, NULL, collect, &c, &d), RLT_STATUS_OK);
    cr_assert_eq(c.n, N);
    for (int i = 0; i < N; i++) {
        bool matched = false;
        for (int k = 0; k < N && !matched; k++)
            if (strcmp(got[k].config, in[i].config) == 0 && got[k].created_s == in[i].created_s &&
                strcmp(got[k].spec, in[i].spec) == 0) {
                assert_same_record(&got[k], &in[i]);
                matched = true;
            }
        cr_assert(matched, "record %d did not come back", i);
    }
    /* And the second database exports the same bytes (ids included). */
    export_to(b, NULL, out2);
    size_t len1, len2;
    char *t1 = slurp(out1, &len1), *t2 = slurp(out2, &len2);
    cr_assert_eq(len1, len2);
    cr_assert(memcmp(t1, t2, len1) == 0);
    cr_assert(strstr(t1, "\"seed\":\"18446744073709551615\""), "%s", t1);
    cr_assert(strstr(t1, "{\"v\":2,"), "%s", t1);
    cr_assert(strstr(t1, "\"final\":true"), "%s", t1);
    rlt_free(t1);
    rlt_free(t2);

    /* Again: everything is present already. */
    cr_assert_eq(import_from(b, out1, &added, &skipped, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(added, 0);
    cr_assert_eq(skipped, N);
    cr_assert_eq(count(b, NULL), N);

    /* Export of one spec only. */
    export_to(a, "conv2d:N=1", out2);
    t2 = slurp(out2, &len2);
    cr_assert_eq(strchr(t2, '\n'), t2 + len2 - 1, "one line expected");
    rlt_free(t2);
    rlt_db_close(a);
    rlt_db_close(b);
    tmp_remove_tree(dir);
    free(dir);
    assert_no_leaks();
}

/* A line of format v2 with `field` replaced by the raw JSON `value` (or
 * left out when value is NULL). */
#define LINE_TARGET "{\"cpu\":\"c\",\"vector_floats\":8,\"threads\":1,\"weights\":\"prepacked\",\"codegen\":3,\"cc\":\"gcc\"}"
#define LINE_TARGET_KEY "cpu=c;vec=8;threads=1;weights=prepacked;codegen=3;cc=gcc"
static void line_with(char *out, size_t cap, const char *field, const char *value)
{
    static const char *const keys[] = {"v",      "id",    "op",      "target",  "config",   "schedule",
                                       "tuner",  "status", "final",  "time_ms", "gflops",   "seed",
                                       "build_s", "created_s", "message"};
    static const char *const values[] = {"2",       "7",       "\"matmul:M=8,N=8,K=8\"",        LINE_TARGET,
                                         "\"c=1\"",  "\"split i 2\\n\"",   "\"random\"", "\"OK\"", "false",
                                         "{\"min\":1.5,\"median\":1.6}", "0.68",   "\"42\"", "0.25",
                                         "1700000000.5", "\"\""};
    size_t used = (size_t)snprintf(out, cap, "{");
    bool first = true;
    for (size_t i = 0; i < RLT_ARRAY_LEN(keys); i++) {
        const char *v = values[i];
        if (field && strcmp(field, keys[i]) == 0) v = value;
        if (!v) continue;
        used += (size_t)snprintf(out + used, cap - used, "%s\"%s\":%s", first ? "" : ",", keys[i], v);
        first = false;
    }
    snprintf(out + used, cap - used, "}");
}

Test(db, import_refuses_bad_lines_whole)
{
    char *dir = make_temp_dir();
    char path[512], src[512];
    snprintf(path, sizeof path, "%s/r.db", dir);
    snprintf(src, sizeof src, "%s/in.jsonl", dir);
    rlt_db *db = open_db(path, NULL);

    static char long_text[6000];
    memset(long_text, 'x', sizeof long_text);
    long_text[0] = '"';
    snprintf(long_text + 5001, sizeof long_text - 5001, "\"");
    struct {
        const char *field, *value, *raw, *needle;
    } cases[] = {
        {NULL, NULL, "{\"v\":1,\"id\":", "not valid JSON"},
        {NULL, NULL, "[1,2,3]", "expected a JSON object"},
        {NULL, NULL, "{\"v\":1} trailing", "not valid JSON"},
        {"gflops", NULL, NULL, "missing field \"gflops\""},
        {"v", NULL, NULL, "missing field \"v\""},
        {"v", "3", NULL, "unknown records format version \"v\": 3"},
        {"gflops", "\"fast\"", NULL, "field \"gflops\" must be a finite number"},
        {"gflops", "1e999", NULL, "field \"gflops\" must be a finite number"},
        {"op", "5", NULL, "field \"op\" must be a string"},
        {"target", "\"cpu=c;vec=8;threads=1;cc=gcc\"", NULL, "field \"target\" must be an object"},
        {"target", "{\"cpu\":\"c\",\"vector_floats\":8,\"threads\":1.5,\"weights\":\"prepacked\",\"codegen\":3,\"cc\":\"g\"}",
         NULL, "field \"target.threads\" must be a whole number"},
        {"target", "{\"cpu\":\"c\",\"vector_floats\":8,\"threads\":1,\"weights\":\"prepacked\",\"cc\":\"g\"}", NULL,
         "missing field \"target.codegen\""},
        {"time_ms", "{\"min\":1,\"median\":2,\"max\":3}", NULL, "unknown field \"time_ms.max\""},
        {"final", "1", NULL, "field \"final\" must be true or false"},
        {"seed", "\"-1\"", NULL, "field \"seed\" must be a string of decimal digits"},
        {"seed", "\"18446744073709551616\"", NULL, "field \"seed\" must be"},
        {"status", "\"FAST\"", NULL, "not a status name"},
        {"message", "\"cut\\u0000here\"", NULL, "holds \\u0000"},
        {"schedule", long_text, NULL, "field \"schedule\" is 5000 bytes long; rltune records hold at most 4095"},
        {"tuner", "\"xgb\",\"colour\":\"red\"", NULL, "unknown field \"colour\""},
        {"tuner", "\"xgb\",\"tuner\":\"ga\"", NULL, "field \"tuner\" appears twice"},
    };
    char good[2048], bad[8192];
    line_with(good, sizeof good, NULL, NULL);
    for (size_t i = 0; i < RLT_ARRAY_LEN(cases); i++) {
        if (cases[i].raw)
            snprintf(bad, sizeof bad, "%s", cases[i].raw);
        else
            line_with(bad, sizeof bad, cases[i].field, cases[i].value);
        /* Good lines (one with CRLF, then a blank line) before the bad one:
         * they must not be stored either. */
        char text[16384];
        snprintf(text, sizeof text, "%s\r\n\n%s\n%s\n", good, good, bad);
        tmp_file_write_text(src, text);
        int added = -1, skipped = -1;
        rlt_diag d = {0};
        rlt_status st = import_from(db, src, &added, &skipped, &d);
        cr_assert_eq(st, RLT_STATUS_PARSE_ERROR, "case %zu: %s: %s", i, rlt_status_str(st), d.message);
        char where[600];
        snprintf(where, sizeof where, "%s:4", src);
        cr_assert(strstr(d.message, where), "case %zu: no '%s' in: %s", i, where, d.message);
        cr_assert(strstr(d.message, cases[i].needle), "case %zu: no '%s' in: %s", i, cases[i].needle, d.message);
        cr_assert_eq(added, 0);
        cr_assert_eq(count(db, NULL), 0, "case %zu stored records", i);
    }

    /* The same good lines alone import (the second as a duplicate), and a
     * seed written as a plain number is accepted. */
    char seed_num[2048], text[8192];
    line_with(seed_num, sizeof seed_num, "seed", "12345");
    char *msg = strstr(seed_num, "\"message\":\"\"");
    cr_assert_not_null(msg);
    /* An escaped backslash then "u0000": text, not a NUL. */
    snprintf(msg, sizeof seed_num - (size_t)(msg - seed_num), "\"message\":\"a\\\\u0000\"}");
    char *at = strstr(seed_num, "\"c=1\"");
    cr_assert_not_null(at);
    at[3] = '2'; /* another config, so not a duplicate of `good` */
    snprintf(text, sizeof text, "%s\r\n\n%s\n%s", good, good, seed_num);
    tmp_file_write_text(src, text);
    int added = -1, skipped = -1;
    rlt_diag d = {0};
    cr_assert_eq(import_from(db, src, &added, &skipped, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(added, 2);
    cr_assert_eq(skipped, 1);
    rlt_record r;
    bool found = false;
    cr_assert_eq(rlt_db_lookup(db, "matmul:M=8,N=8,K=8", LINE_TARGET_KEY, "c=2", &r, &found, &d), RLT_STATUS_OK);
    cr_assert(found);
    cr_assert_eq(r.seed, 12345);
    cr_assert_str_eq(r.message, "a\\u0000");
    cr_assert_eq(r.created_s, 1700000000.5);
    rlt_db_close(db);
    tmp_remove_tree(dir);
    free(dir);
    assert_no_leaks();
}

/* ---- lookup: what a tuning run reads back -------------------------------- */

Test(db, lookup_reads_back_the_search_time_record_not_the_final_pick)
{
    char *dir = make_temp_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/l.db", dir);
    rlt_db *db = open_db(path, NULL);
    const char *mm = "matmul:M=8,N=8,K=8";
    rlt_record searched = timed_record("a", "s", RLT_STATUS_OK, 100.0, 1.0);
    rlt_record final = timed_record("a", "s", RLT_STATUS_OK, 90.0, 2.0);
    final.is_final = true;
    rlt_record only_final = timed_record("b", "s", RLT_STATUS_OK, 70.0, 3.0);
    only_final.is_final = true;
    const rlt_record all[] = {searched, final, only_final};
    append(db, 3, all);
    rlt_record r;
    bool found = false;
    rlt_diag d = {0};
    /* a rerun hears what the search heard: 100, not the final pick's 90 */
    cr_assert_eq(rlt_db_lookup(db, mm, TEST_TARGET, "a", &r, &found, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(found);
    cr_assert_eq(r.gflops, 100.0);
    cr_assert_not(r.is_final);
    /* with only a final pick's record, that one */
    cr_assert_eq(rlt_db_lookup(db, mm, TEST_TARGET, "b", &r, &found, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(found);
    cr_assert_eq(r.gflops, 70.0);
    cr_assert(r.is_final);
    /* best still goes by the configuration's newest: the final pick's 90 */
    cr_assert_eq(rlt_db_best(db, mm, TEST_TARGET, &r, &found, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_str_eq(r.config, "a");
    cr_assert_eq(r.gflops, 90.0);
    rlt_db_close(db);
    tmp_remove_tree(dir);
    free(dir);
}

/* ---- schema v1: migrated, never broken ------------------------------------ */

/* tests/fixtures/records_v1.db was written by rltune before schema v2 (tune
 * runs at one and two threads with final picks, an expression, timeouts,
 * an import of records of an older target key); records_v1.jsonl is its
 * export by that rltune (JSON lines v1). */
#define FIXTURE_V1_DB RLTUNE_SOURCE_DIR "/tests/fixtures/records_v1.db"
#define FIXTURE_V1_JSONL RLTUNE_SOURCE_DIR "/tests/fixtures/records_v1.jsonl"
#define FIXTURE_V1_N 41

/* The fixture's records as that rltune exported them, read by the v1
 * reader of record.c. */
static int fixture_v1_records(rlt_record *out, int cap)
{
    FILE *f = fopen(FIXTURE_V1_JSONL, "r");
    cr_assert_not_null(f);
    char line[16384];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        cr_assert_lt(n, cap);
        rlt_diag d = {0};
        cr_assert_eq(rlt_record_from_json(line, "records_v1.jsonl", &out[n], &d), RLT_STATUS_OK, "%s", d.message);
        n++;
    }
    fclose(f);
    return n;
}

/* Every record of the database at `path` equals the fixture's, id and
 * order included, final picks told by their flag now. */
static void assert_fixture_records(const char *path, const rlt_db_opts *opts)
{
    static rlt_record want[FIXTURE_V1_N + 1], got[FIXTURE_V1_N + 1];
    int n = fixture_v1_records(want, FIXTURE_V1_N + 1);
    cr_assert_eq(n, FIXTURE_V1_N);
    rlt_db *db = open_db(path, opts);
    cr_assert_eq(count(db, NULL), n);
    collected c = {0, got, FIXTURE_V1_N + 1};
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_history(db, NULL, NULL, collect, &c, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(c.n, n);
    int n_final = 0, n_failed = 0;
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < n && got[k].id != want[i].id) k++;
        cr_assert_lt(k, n, "record %" PRId64 " was lost", want[i].id);
        assert_same_record(&got[k], &want[i]);
        n_final += got[k].is_final;
        n_failed += got[k].status != RLT_STATUS_OK;
    }
    cr_assert_eq(n_final, 8);
    cr_assert_eq(n_failed, 7);
    /* the older target key (no weights=, no codegen=) kept its meaning */
    rlt_record r;
    bool found = false;
    cr_assert_eq(rlt_db_best(db, "matmul:M=16,N=16,K=16",
                             "cpu=AMD EPYC;vec=8;threads=1;cc=gcc -O1 -march=native -std=gnu11 -fPIC -shared", &r,
                             &found, &d),
                 RLT_STATUS_OK, "%s", d.message);
    cr_assert(found);
    cr_assert_not(r.target.is_weights_prepacked);
    cr_assert_eq(r.target.codegen, 0);
    rlt_db_close(db);
}

static char *copy_fixture(const char *dir, const char *name)
{
    size_t len = 0;
    char *bytes = slurp(FIXTURE_V1_DB, &len);
    char *path = malloc(600);
    snprintf(path, 600, "%s/%s", dir, name);
    tmp_file_write(path, bytes, len);
    rlt_free(bytes);
    return path;
}

static char *schema_version_of(const char *path)
{
    sqlite3 *c = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &c, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(c, "SELECT value FROM rltune_meta WHERE key = 'schema_version'", -1, &st, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(c));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    char *v = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(c);
    return v;
}

/* A backup of the fixture: still schema v1, with every record. (SQLite's
 * backup API copies pages, not bytes: the header's counters may differ.) */
static void assert_v1_backup(const char *backup)
{
    char *v = schema_version_of(backup);
    cr_assert_str_eq(v, "1", "%s", backup);
    free(v);
    assert_fixture_records(backup, &(rlt_db_opts){.is_read_only = true});
}

Test(db, a_v1_file_is_migrated_with_a_backup_beside_it)
{
    char *dir = make_temp_dir();
    char *path = copy_fixture(dir, "old.db");
    size_t len = 0;
    char *before = slurp(path, &len);

    /* read-only: answered from a migrated copy in memory; the file untouched */
    assert_fixture_records(path, &(rlt_db_opts){.is_read_only = true});
    assert_file_is(path, before, len);
    char backup[700];
    snprintf(backup, sizeof backup, "%s.v1.bak", path);
    cr_assert_not(tmp_exists(backup));

    /* for writing: a backup of the v1 database, then the file is of the
     * current schema (v3) */
    assert_fixture_records(path, NULL);
    assert_v1_backup(backup);
    char *v = schema_version_of(path);
    cr_assert_str_eq(v, "3");
    free(v);
    /* and opens as v3 from then on, appends included */
    rlt_db *db = open_db(path, NULL);
    rlt_record r = make_record("add:N=8", "", 0);
    append(db, 1, &r);
    cr_assert_eq(count(db, NULL), FIXTURE_V1_N + 1);
    rlt_db_close(db);
    /* a second v1 file beside it does not overwrite that backup */
    char *again = copy_fixture(dir, "old.db.again");
    cr_assert_eq(rename(again, path), 0);
    assert_fixture_records(path, NULL);
    snprintf(backup, sizeof backup, "%s.v1.bak.2", path);
    assert_v1_backup(backup);
    rlt_free(before);
    free(again);
    free(path);
    tmp_remove_tree(dir);
    free(dir);
    assert_no_leaks();
}

Test(db, a_migration_killed_at_any_step_leaves_a_v1_or_a_v3_file)
{
    char *dir = make_temp_dir();
    for (int step = 1; step <= RLT_DB_MIGRATION_STEPS; step++) {
        char name[32];
        snprintf(name, sizeof name, "killed%d.db", step);
        char *path = copy_fixture(dir, name);
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
            rlt_db *db = NULL;
            rlt_db_open_for_tests(path, NULL, &(rlt_db_test_opts){.kill_at_migration_step = step}, &db, NULL);
            _exit(0); /* not reached: the open kills the process */
        }
        int status = 0;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "step %d: the child was not killed", step);
        char *v = schema_version_of(path);
        bool is_migrated = strcmp(v, "3") == 0;
        cr_assert(is_migrated || strcmp(v, "1") == 0, "step %d: schema version '%s'", step, v);
        cr_assert_eq(is_migrated, step == RLT_DB_MIGRATION_STEPS, "step %d: version %s", step, v);
        free(v);
        /* whatever the kill left reads back whole (and migrates now) */
        assert_fixture_records(path, NULL);
        free(path);
    }
    tmp_remove_tree(dir);
    free(dir);
}

/* ---- schema v2: migrated to v3, which adds 'cold' weights ------------------ */

/* tests/fixtures/records_v2.db was written by rltune at schema v2 (a
 * network's dense tasks tuned at one and two threads: 12 records of three
 * workloads, trimmed with sqlite3 and vacuumed). */
#define FIXTURE_V2_DB RLTUNE_SOURCE_DIR "/tests/fixtures/records_v2.db"
#define FIXTURE_V2_N 12

static int v2_history(const char *path, const rlt_db_opts *opts, rlt_record *out, int cap)
{
    rlt_db *db = open_db(path, opts);
    collected c = {0, out, cap};
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_history(db, NULL, NULL, collect, &c, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_db_close(db);
    return c.n;
}

Test(db, a_v2_file_migrates_to_v3_whole_and_then_takes_cold_records)
{
    char *dir = make_temp_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/v2.db", dir);
    size_t len = 0;
    char *bytes = slurp(FIXTURE_V2_DB, &len);
    tmp_file_write(path, bytes, len);
    static rlt_record before[FIXTURE_V2_N + 2], after[FIXTURE_V2_N + 2];

    /* read-only: read as it is, the file untouched */
    cr_assert_eq(v2_history(path, &(rlt_db_opts){.is_read_only = true}, before, FIXTURE_V2_N + 2), FIXTURE_V2_N);
    assert_file_is(path, bytes, len);
    char *v = schema_version_of(path);
    cr_assert_str_eq(v, "2");
    free(v);

    /* for writing: v3, every record as it was, ids included */
    cr_assert_eq(v2_history(path, NULL, after, FIXTURE_V2_N + 2), FIXTURE_V2_N);
    v = schema_version_of(path);
    cr_assert_str_eq(v, "3");
    free(v);
    for (int i = 0; i < FIXTURE_V2_N; i++) {
        cr_assert_eq(after[i].id, before[i].id);
        assert_same_record(&after[i], &before[i]);
        cr_assert(after[i].target.is_weights_prepacked);
        cr_assert_not(after[i].target.is_weights_cold);
    }

    /* a cold record of the same op files under its own target */
    rlt_db *db = open_db(path, NULL);
    rlt_record cold = after[0];
    cold.id = 0;
    cold.target.is_weights_cold = true;
    cold.time_min_ms = cold.time_median_ms = 1e-3; /* faster than any warm one */
    cold.gflops = 1e6;
    append(db, 1, &cold);
    cr_assert_eq(count(db, NULL), FIXTURE_V2_N + 1);
    char *warm_key = rlt_record_target_text(&after[0].target), *cold_key = rlt_record_target_text(&cold.target);
    cr_assert_not_null(strstr(warm_key, ";weights=prepacked;"));
    cr_assert_not_null(strstr(cold_key, ";weights=cold;"));
    rlt_record best;
    bool found = false;
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_best(db, cold.spec, cold_key, &best, &found, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(found);
    cr_assert(best.target.is_weights_cold);
    cr_assert_eq(best.gflops, 1e6);
    cr_assert_eq(rlt_db_best(db, cold.spec, warm_key, &best, &found, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(found);
    cr_assert_not(best.target.is_weights_cold);
    cr_assert_lt(best.gflops, 1e6);
    rlt_free(warm_key);
    rlt_free(cold_key);
    rlt_db_close(db);

    /* and it reads back as v3 from then on */
    cr_assert_eq(v2_history(path, NULL, after, FIXTURE_V2_N + 2), FIXTURE_V2_N + 1);
    int n_cold = 0;
    for (int i = 0; i <= FIXTURE_V2_N; i++) n_cold += after[i].target.is_weights_cold;
    cr_assert_eq(n_cold, 1);
    rlt_free(bytes);
    tmp_remove_tree(dir);
    free(dir);
}

Test(db, cold_weights_in_the_key_and_the_json)
{
    rlt_record_target t;
    rlt_diag d = {0};
    cr_assert_eq(rlt_record_target_parse("cpu=x;vec=16;threads=2;weights=cold;codegen=9;cc=gcc -O2", &t, &d),
                 RLT_STATUS_OK, "%s", d.message);
    cr_assert(t.is_weights_prepacked && t.is_weights_cold);
    char *key = rlt_record_target_text(&t);
    cr_assert_str_eq(key, "cpu=x;vec=16;threads=2;weights=cold;codegen=9;cc=gcc -O2");
    rlt_free(key);
    cr_assert_eq(rlt_record_target_parse("cpu=x;vec=16;threads=2;weights=timed;cc=gcc", &t, &d),
                 RLT_STATUS_PARSE_ERROR, "the key leaves timed weights out");
    cr_assert_eq(rlt_record_target_parse("cpu=x;vec=16;threads=2;weights=frozen;cc=gcc", &t, &d),
                 RLT_STATUS_PARSE_ERROR);
    rlt_record r = make_record("add:N=8", "", 0);
    r.target.is_weights_cold = true;
    rlt_str line;
    rlt_str_init(&line);
    rlt_record_to_json(&r, &line);
    cr_assert_not_null(strstr(line.data, "\"weights\":\"cold\""), "%s", line.data);
    rlt_record back;
    cr_assert_eq(rlt_record_from_json(line.data, "line", &back, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(back.target.is_weights_cold && back.target.is_weights_prepacked);
    assert_same_record(&back, &r);
    rlt_str_free(&line);
}

Test(db, v1_json_lines_still_import)
{
    char *dir = make_temp_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/import.db", dir);
    rlt_db *db = open_db(path, NULL);
    int added = 0, skipped = 0;
    rlt_diag d = {0};
    cr_assert_eq(import_from(db, FIXTURE_V1_JSONL, &added, &skipped, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(added, FIXTURE_V1_N);
    rlt_db_close(db);
    assert_fixture_records(path, NULL);
    /* a v1 line whose target key does not parse is refused, naming it */
    char src[600];
    snprintf(src, sizeof src, "%s/bad.jsonl", dir);
    tmp_file_write_text(src, "{\"v\":1,\"id\":1,\"spec\":\"add:N=8\",\"target\":\"Intel Xeon;gcc 12\",\"config\":\"\","
                             "\"schedule\":\"\",\"tuner\":\"x\",\"status\":\"OK\",\"time_min_ms\":1,\"time_median_ms\":1,"
                             "\"gflops\":1,\"n_threads\":1,\"seed\":\"0\",\"build_s\":0,\"created_s\":1,\"message\":\"\"}\n");
    db = open_db(path, NULL);
    cr_assert_eq(import_from(db, src, &added, &skipped, &d), RLT_STATUS_PARSE_ERROR);
    cr_assert(strstr(d.message, ":1: field \"target\""), "%s", d.message);
    cr_assert(strstr(d.message, "Intel Xeon;gcc 12"), "%s", d.message);
    rlt_db_close(db);
    tmp_remove_tree(dir);
    free(dir);
}

/* ---- out of memory -------------------------------------------------------- */

Test(db, allocation_failures_are_reported)
{
    char *dir = make_temp_dir();
    char path[512], src[512];
    snprintf(path, sizeof path, "%s/oom.db", dir);
    snprintf(src, sizeof src, "%s/in.jsonl", dir);
    rlt_record r = make_record("add:N=8", "x", 0);
    int n_failed = 0;
    for (long n = 1;; n++) {
        cr_assert_lt(n, 100, "open + append never succeeded");
        rlt_db *db = NULL;
        rlt_diag d = {0};
        rlt_alloc_fail_after(n);
        rlt_status st = rlt_db_open(path, NULL, &db, &d);
        bool is_open = st == RLT_STATUS_OK;
        if (is_open) st = rlt_db_append(db, 1, &r, &d);
        rlt_alloc_fail_after(0);
        if (is_open) cr_assert_not_null(db);
        else cr_assert_null(db);
        rlt_db_close(db);
        if (st == RLT_STATUS_OK) break;
        n_failed++;
        cr_assert_eq(st, RLT_STATUS_OUT_OF_MEMORY, "%s: %s", rlt_status_str(st), d.message);
        cr_assert(strstr(d.message, "out of memory"), "%s", d.message);
    }
    cr_assert_gt(n_failed, 0);

    /* Import: the line buffer. Nothing is stored by a failed import. */
    rlt_db *db = open_db(path, NULL);
    export_to(db, NULL, src);
    rlt_db_close(db);
    char other[512];
    snprintf(other, sizeof other, "%s/other.db", dir);
    db = open_db(other, NULL);
    for (long n = 1;; n++) {
        cr_assert_lt(n, 100, "import never succeeded");
        rlt_diag d = {0};
        int added = 0;
        rlt_alloc_fail_after(n);
        FILE *f = fopen(src, "r");
        rlt_status st = rlt_db_import_jsonl(db, f, src, &added, NULL, &d);
        fclose(f);
        rlt_alloc_fail_after(0);
        if (st == RLT_STATUS_OK) {
            cr_assert_eq(added, 1);
            break;
        }
        cr_assert_eq(st, RLT_STATUS_OUT_OF_MEMORY, "%s: %s", rlt_status_str(st), d.message);
        cr_assert_eq(count(db, NULL), 0);
    }
    rlt_db_close(db);
    tmp_remove_tree(dir);
    free(dir);
    assert_no_leaks();
}
