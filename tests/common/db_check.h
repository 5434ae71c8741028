/* db_check.h - asking SQLite itself whether a records database is sound
 * (PRAGMA integrity_check), after a writer was killed or several wrote at
 * once. Header-only, like fixtures.h. Shared by tests/unit/test_db.c and
 * tests/cli/test_cli_tune.c. */
#ifndef RLT_TESTS_DB_CHECK_H
#define RLT_TESTS_DB_CHECK_H

#include <criterion/criterion.h>
#include <sqlite3.h>

/* Asserts that SQLite's integrity check of the database file at `path`
 * (opened read-only, closed again) answers "ok". */
static inline void assert_db_sound(const char *path)
{
    sqlite3 *c = NULL;
    cr_assert_eq(sqlite3_open_v2(path, &c, SQLITE_OPEN_READONLY, NULL), SQLITE_OK, "cannot open %s", path);
    sqlite3_stmt *st = NULL;
    cr_assert_eq(sqlite3_prepare_v2(c, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "ok", "SQLite finds the database damaged");
    sqlite3_finalize(st);
    sqlite3_close(c);
}

#endif /* RLT_TESTS_DB_CHECK_H */
