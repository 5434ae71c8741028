/* tmp.h - temporary directories and files for the tests: a fresh directory
 * from a mkdtemp template, the test's own directory and paths in it,
 * writing (a file, an executable script) and reading a file whole, whether
 * a path exists, removing a tree. Creating, writing and reading assert
 * (Criterion) that they worked, so a test reads as what it checks; removing
 * is best effort, because a suite's fini calls it too, after a failed
 * assertion may have left the tree half made. Header-only (static inline),
 * like fixtures.h: every test file is its own executable. Shared by most
 * of tests/unit/test_*.c (test_db.c, test_build.c, test_run.c,
 * test_api.c, test_session.c, test_report.c, test_train.c, ...) and by
 * tests/cli/test_*.c. (assert_no_leaks is in leaks.h.) */
#ifndef RLT_TESTS_TMP_H
#define RLT_TESTS_TMP_H

#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Creates a fresh directory from `templ`, a writable mkdtemp template such
 * as a static "/tmp/rlt_x_XXXXXX" (its XXXXXX are replaced in place), and
 * returns templ. */
static inline char *tmp_dir_make_in(char *templ)
{
    cr_assert_not_null(mkdtemp(templ), "mkdtemp('%s'): %s", templ, strerror(errno));
    return templ;
}

/* The same from a constant template: returns the directory's name, owned by
 * the caller (free it). */
static inline char *tmp_dir_make(const char *templ)
{
    char *dir = strdup(templ);
    cr_assert_not_null(dir);
    return tmp_dir_make_in(dir);
}

static inline int tmp_remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Removes `path` and everything under it, deepest first, without following
 * symbolic links. Best effort: an absent path is not an error. */
static inline void tmp_remove_tree(const char *path) { nftw(path, tmp_remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* Writes `len` bytes to `path` (created, or truncated). */
static inline void tmp_file_write(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write '%s': %s", path, strerror(errno));
    cr_assert_eq(fwrite(data, 1, len, f), len, "short write to '%s'", path);
    cr_assert_eq(fclose(f), 0, "cannot close '%s': %s", path, strerror(errno));
}

/* Writes a NUL-terminated text to `path`. */
static inline void tmp_file_write_text(const char *path, const char *text)
{
    tmp_file_write(path, text, strlen(text));
}

/* A whole file's bytes with a NUL after them (the file may hold NULs of its
 * own: *out_len, when not NULL, is its length). Owned by the caller (free
 * it). */
static inline char *tmp_file_read(const char *path, size_t *out_len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read '%s': %s", path, strerror(errno));
    size_t len = 0, cap = 4096;
    char *data = malloc(cap);
    cr_assert_not_null(data);
    size_t got;
    while ((got = fread(data + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len - 1 == 0) {
            cap *= 2;
            data = realloc(data, cap);
            cr_assert_not_null(data);
        }
    }
    cr_assert_not(ferror(f), "cannot read '%s'", path);
    fclose(f);
    data[len] = '\0';
    if (out_len) *out_len = len;
    return data;
}

/* Writes an executable script (mode 0755) to `path`. */
static inline void tmp_script_write(const char *path, const char *text)
{
    tmp_file_write_text(path, text);
    cr_assert_eq(chmod(path, 0755), 0, "cannot make '%s' executable: %s", path, strerror(errno));
}

/* Whether something (a file, a directory) is at `path`. */
static inline bool tmp_exists(const char *path) { return access(path, F_OK) == 0; }

/* "dir/name" in one of 16 static buffers used in turn, so that up to 16 such
 * paths can be alive at once (one test's files): keep what must last
 * longer in a buffer of its own. */
static inline const char *tmp_path_in(const char *dir, const char *name)
{
    static char paths[16][512];
    static int n_paths;
    char *path = paths[n_paths++ % 16];
    int n = snprintf(path, sizeof paths[0], "%s/%s", dir, name);
    cr_assert(n > 0 && (size_t)n < sizeof paths[0], "path too long: %s/%s", dir, name);
    return path;
}

/* ---- the test's own directory ------------------------------------------- */

/* The directory tmp_path names files in (borrowed: the template buffer
 * given to tmp_dir_use); NULL until a test makes it. Criterion runs every
 * test in a process of its own, so each test has its own. */
static const char *tmp_dir_used;

/* Makes a fresh directory from `templ`, a writable mkdtemp template such as
 * a static "/tmp/rlt_x_XXXXXX" (its XXXXXX are replaced in place), and
 * makes it the test's own directory, unless the test has one already: a
 * suite calls it in its .init, or in just the tests that need it. Returns
 * the test's own directory. */
static inline const char *tmp_dir_use(char *templ)
{
    if (!tmp_dir_used) tmp_dir_used = tmp_dir_make_in(templ);
    return tmp_dir_used;
}

/* Removes the test's own directory and all in it, if the test made one: a
 * suite's .fini. Best effort, like tmp_remove_tree. */
static inline void tmp_dir_remove_used(void)
{
    if (tmp_dir_used) tmp_remove_tree(tmp_dir_used);
}

/* "DIR/name" in the test's own directory (tmp_dir_use), in tmp_path_in's
 * buffers. */
static inline const char *tmp_path(const char *name)
{
    cr_assert_not_null(tmp_dir_used, "tmp_path('%s') before tmp_dir_use", name);
    return tmp_path_in(tmp_dir_used, name);
}

#endif /* RLT_TESTS_TMP_H */
