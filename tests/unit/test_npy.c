/*
 * test_npy.c - arrays and .npy files (rltune/npy.h, src/api/npy.c): the
 * files NumPy wrote (tests/fixtures/npy/, made by make_fixtures.py there:
 * its README says how) read back with exact values, and written again
 * byte for byte as NumPy wrote them (the header included: magic, version,
 * length, the dict, the padding); round trips of every element type at
 * ranks 0 to 8; the header's Python syntax in its variants; every refusal
 * with its status and message; pipes; every truncation and thousands of
 * seeded random mutations of valid files (never a crash, a leak or a
 * refusal without a message); allocation failure at every point.
 *
 * RLTUNE_PYTHON=/path/to/python (with numpy) also has NumPy load the files
 * rltune writes, compare their values and np.save the same arrays to the
 * same bytes; without it that test is skipped (the byte comparisons with
 * the fixtures need no Python).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/leaks.h"
#include "../common/tmp.h"
#include "core/core.h"
#include "rltune.h"

#define FIXTURES RLTUNE_SOURCE_DIR "/tests/fixtures/npy/"
#define D(...) ((int64_t[]){__VA_ARGS__})

static char temp_dir[] = "/tmp/rlt_npy_XXXXXX";
static const char *temp_path(const char *name) { return tmp_path_in(tmp_dir_use(temp_dir), name); }

TestSuite(npy, .fini = tmp_dir_remove_used, .timeout = 300);

/* ---- helpers -------------------------------------------------------------- */

static rlt_array *load_ok(const char *path)
{
    rlt_array *a = NULL;
    rlt_diag d = {0};
    rlt_status st = rlt_npy_load(path, &a, &d);
    cr_assert_eq(st, RLT_STATUS_OK, "%s: %s %s", path, rlt_status_str(st), d.message);
    cr_assert_not_null(a);
    cr_assert_eq((uintptr_t)a->data % 64, 0, "data not 64-byte aligned");
    return a;
}

static void save_ok(const char *path, const rlt_array *a)
{
    rlt_diag d = {0};
    rlt_status st = rlt_npy_save(path, a, &d);
    cr_assert_eq(st, RLT_STATUS_OK, "%s: %s %s", path, rlt_status_str(st), d.message);
}

static void assert_shape(const rlt_array *a, rlt_elem elem, int rank, const int64_t *dims)
{
    cr_assert_eq(a->elem, elem, "elem %s, want %s", rlt_elem_name(a->elem), rlt_elem_name(elem));
    cr_assert_eq(a->rank, rank);
    for (int i = 0; i < rank; i++) cr_assert_eq(a->dims[i], dims[i], "dim %d: %" PRId64, i, a->dims[i]);
}

/* The data of `a` equals `want` bit for bit (-0.0 and NaN included). */
static void assert_data(const rlt_array *a, const void *want, size_t n_bytes)
{
    cr_assert_eq((size_t)rlt_array_n_elems(a) * rlt_elem_size(a->elem), n_bytes);
    cr_assert(n_bytes == 0 || memcmp(a->data, want, n_bytes) == 0, "data differs");
}

/* Loading `path` fails with `status` and a message starting with the path
 * and holding each of the NULL-terminated substrings. */
static void expect_fail_v(const char *path, rlt_status status, const char *const *subs)
{
    rlt_array *a = NULL;
    rlt_diag d = {0};
    rlt_status st = rlt_npy_load(path, &a, &d);
    cr_assert_eq(st, status, "%s: got %s, want %s: %s", path, rlt_status_str(st), rlt_status_str(status),
                 d.message);
    cr_assert_null(a);
    cr_assert_eq(d.status, status);
    cr_expect_eq(strncmp(d.message, path, strlen(path)), 0, "message does not start with the path: %s", d.message);
    for (int i = 0; subs[i]; i++) cr_expect(strstr(d.message, subs[i]), "'%s' not in: %s", subs[i], d.message);
}
#define expect_fail(path, status, ...) expect_fail_v((path), (status), (const char *const[]){__VA_ARGS__, NULL})

/* A .npy file from its parts: format version `major`.0, the header text as
 * given (no padding added), then `data_len` bytes of data. */
static void write_npy(const char *path, int major, const char *header, const void *data, size_t data_len)
{
    size_t header_len = strlen(header), at = 0;
    size_t len_bytes = major == 1 ? 2 : 4;
    unsigned char *buf = malloc(8 + len_bytes + header_len + data_len);
    cr_assert_not_null(buf);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    at = 8;
    for (size_t i = 0; i < len_bytes; i++) buf[at++] = (unsigned char)(header_len >> (8 * i));
    memcpy(buf + at, header, header_len);
    at += header_len;
    if (data_len) memcpy(buf + at, data, data_len);
    at += data_len;
    tmp_file_write(path, buf, at);
    free(buf);
}

/* The pattern the round trips and NumPy's check fill arrays with: element
 * i (flat index) of each type. make_check_script computes the same. */
static void pattern_fill(rlt_array *a)
{
    int64_t n = rlt_array_n_elems(a);
    for (int64_t i = 0; i < n; i++) {
        switch (a->elem) {
        case RLT_ELEM_F32: ((float *)a->data)[i] = (float)(i % 7) * 0.5f - 1.25f; break;
        case RLT_ELEM_I64: ((int64_t *)a->data)[i] = i * 1000003 - 5 * ((int64_t)1 << 40); break;
        case RLT_ELEM_I32: ((int32_t *)a->data)[i] = (int32_t)(i * 7919 - 100000); break;
        default: ((uint8_t *)a->data)[i] = i % 3 == 0; break;
        }
    }
}

/* Small dims for rank r: 1 + (i + r) % 3 (so 1, 2 and 3 all occur). */
static void pattern_dims(int rank, int64_t *dims)
{
    for (int i = 0; i < rank; i++) dims[i] = 1 + (i + rank) % 3;
}

/* ---- elements and arrays ------------------------------------------------- */

Test(npy, elem_names_and_sizes)
{
    cr_expect_str_eq(rlt_elem_name(RLT_ELEM_F32), "f32");
    cr_expect_str_eq(rlt_elem_name(RLT_ELEM_I64), "i64");
    cr_expect_str_eq(rlt_elem_name(RLT_ELEM_I32), "i32");
    cr_expect_str_eq(rlt_elem_name(RLT_ELEM_BOOL), "bool");
    cr_expect_str_eq(rlt_elem_name((rlt_elem)4), "?");
    cr_expect_str_eq(rlt_elem_name((rlt_elem)-1), "?");
    cr_expect_eq(rlt_elem_size(RLT_ELEM_F32), 4);
    cr_expect_eq(rlt_elem_size(RLT_ELEM_I64), 8);
    cr_expect_eq(rlt_elem_size(RLT_ELEM_I32), 4);
    cr_expect_eq(rlt_elem_size(RLT_ELEM_BOOL), 1);
    cr_expect_eq(rlt_elem_size((rlt_elem)4), 0);
}

Test(npy, create_gives_zeroed_aligned_arrays_of_every_rank)
{
    for (int e = 0; e < 4; e++) {
        for (int rank = 0; rank <= RLT_ARRAY_MAX_RANK; rank++) {
            int64_t dims[RLT_ARRAY_MAX_RANK];
            pattern_dims(rank, dims);
            rlt_array *a = NULL;
            rlt_diag d = {0};
            cr_assert_eq(rlt_array_create((rlt_elem)e, rank, rank ? dims : NULL, &a, &d), RLT_STATUS_OK, "%s",
                         d.message);
            assert_shape(a, (rlt_elem)e, rank, dims);
            for (int i = rank; i < RLT_ARRAY_MAX_RANK; i++) cr_expect_eq(a->dims[i], 0);
            cr_assert_eq((uintptr_t)a->data % 64, 0);
            int64_t n = 1;
            for (int i = 0; i < rank; i++) n *= dims[i];
            cr_assert_eq(rlt_array_n_elems(a), n);
            const unsigned char *b = a->data;
            for (int64_t i = 0; i < n * (int64_t)rlt_elem_size(a->elem); i++) cr_assert_eq(b[i], 0);
            pattern_fill(a); /* writable to the end (ASan would say otherwise) */
            rlt_array_destroy(a);
        }
    }
    rlt_array *a = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_array_create(RLT_ELEM_F32, 2, D(0, 5), &a, &d), RLT_STATUS_OK);
    cr_expect_eq(rlt_array_n_elems(a), 0);
    rlt_array_destroy(a);
    rlt_array_destroy(NULL);
    assert_no_leaks();
}

Test(npy, create_refuses_bad_shapes)
{
    struct {
        rlt_elem elem;
        int rank;
        const int64_t *dims;
        const char *sub;
    } cases[] = {
        {RLT_ELEM_F32, -1, NULL, "rank -1"},
        {RLT_ELEM_F32, 9, D(1, 1, 1, 1, 1, 1, 1, 1, 1), "rank 9"},
        {RLT_ELEM_F32, 2, D(2, -3), "dim 1 is -3"},
        {(rlt_elem)4, 1, D(2), "unknown element type 4"},
        {RLT_ELEM_I64, 2, NULL, "without dims"},
        {RLT_ELEM_BOOL, 3, D(1 << 20, 1 << 20, 2), "more than 2^40"},
        {RLT_ELEM_BOOL, 2, D(INT64_MAX, 3), "more than 2^40"},
        {RLT_ELEM_F32, 3, D(0, 1 << 30, 1 << 11), "(those of 0 aside) multiply to more than 2^40"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rlt_array *a = NULL;
        rlt_diag d = {0};
        cr_assert_eq(rlt_array_create(cases[i].elem, cases[i].rank, cases[i].dims, &a, &d),
                     RLT_STATUS_INVALID_ARGUMENT, "case %zu", i);
        cr_assert_null(a);
        cr_expect(strstr(d.message, cases[i].sub), "'%s' not in: %s", cases[i].sub, d.message);
    }
    /* exactly 2^40 is allowed (refused only for memory: not tried here);
     * so is an empty array of large dims */
    rlt_array *a = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_array_create(RLT_ELEM_I64, 3, D(1 << 20, 0, 1 << 20), &a, &d), RLT_STATUS_OK, "%s", d.message);
    cr_expect_eq(rlt_array_n_elems(a), 0);
    rlt_array_destroy(a);
}

Test(npy, n_elems)
{
    rlt_array a = {.elem = RLT_ELEM_F32, .rank = 0};
    cr_expect_eq(rlt_array_n_elems(NULL), 0);
    cr_expect_eq(rlt_array_n_elems(&a), 1);
    a.rank = 3;
    a.dims[0] = 2, a.dims[1] = 3, a.dims[2] = 4;
    cr_expect_eq(rlt_array_n_elems(&a), 24);
    a.dims[1] = 0;
    cr_expect_eq(rlt_array_n_elems(&a), 0);
    a.dims[1] = -1;
    cr_expect_eq(rlt_array_n_elems(&a), -1);
    a.dims[1] = INT64_MAX;
    cr_expect_eq(rlt_array_n_elems(&a), -1);
    a.rank = 9;
    cr_expect_eq(rlt_array_n_elems(&a), -1);
}

/* ---- files NumPy wrote ----------------------------------------------------- */

/* The fixtures' values (make_fixtures.py). */
static const float f32_2x3[] = {1.5f, -2.25f, 0.0f, 1e10f, -0.0f, 3.4028234663852886e38f};
static const int64_t i64_vec[] = {0, -1, (int64_t)1 << 40, INT64_MIN, INT64_MAX};
static const int32_t i32_vec[] = {1, -2, INT32_MAX, INT32_MIN};
static const uint8_t bool_2x2[] = {1, 0, 0, 1};
static const float f32_scalar[] = {3.25f};
static const float f32_3x2[] = {0, 0.5f, 1, 1.5f, 2, 2.5f};
static const int64_t i64_2x2[] = {7, -8, 9, -10};

static void i32_rank8_values(int32_t *out)
{
    for (int i = 0; i < 24; i++) out[i] = i - 5;
}

Test(npy, fixtures_read_back_exactly)
{
    rlt_array *a = load_ok(FIXTURES "f32_2x3.npy");
    assert_shape(a, RLT_ELEM_F32, 2, D(2, 3));
    assert_data(a, f32_2x3, sizeof f32_2x3);
    cr_expect(signbit(((float *)a->data)[4]), "-0.0 lost its sign");
    rlt_array_destroy(a);

    a = load_ok(FIXTURES "i64_vec.npy");
    assert_shape(a, RLT_ELEM_I64, 1, D(5));
    assert_data(a, i64_vec, sizeof i64_vec);
    rlt_array_destroy(a);

    a = load_ok(FIXTURES "i32_vec.npy");
    assert_shape(a, RLT_ELEM_I32, 1, D(4));
    assert_data(a, i32_vec, sizeof i32_vec);
    rlt_array_destroy(a);

    a = load_ok(FIXTURES "bool_2x2.npy");
    assert_shape(a, RLT_ELEM_BOOL, 2, D(2, 2));
    assert_data(a, bool_2x2, sizeof bool_2x2);
    rlt_array_destroy(a);

    a = load_ok(FIXTURES "f32_scalar.npy");
    assert_shape(a, RLT_ELEM_F32, 0, NULL);
    cr_expect_eq(rlt_array_n_elems(a), 1);
    assert_data(a, f32_scalar, sizeof f32_scalar);
    rlt_array_destroy(a);

    a = load_ok(FIXTURES "f32_empty_0x3.npy");
    assert_shape(a, RLT_ELEM_F32, 2, D(0, 3));
    cr_expect_eq(rlt_array_n_elems(a), 0);
    rlt_array_destroy(a);

    int32_t rank8[24];
    i32_rank8_values(rank8);
    a = load_ok(FIXTURES "i32_rank8.npy");
    assert_shape(a, RLT_ELEM_I32, 8, D(2, 1, 2, 1, 1, 2, 1, 3));
    assert_data(a, rank8, sizeof rank8);
    rlt_array_destroy(a);

    a = load_ok(FIXTURES "f32_3x2_v2.npy");
    assert_shape(a, RLT_ELEM_F32, 2, D(3, 2));
    assert_data(a, f32_3x2, sizeof f32_3x2);
    rlt_array_destroy(a);

    a = load_ok(FIXTURES "i64_2x2_v3.npy");
    assert_shape(a, RLT_ELEM_I64, 2, D(2, 2));
    assert_data(a, i64_2x2, sizeof i64_2x2);
    rlt_array_destroy(a);
    assert_no_leaks();
}

/* Saves `a` and compares the file with the fixture NumPy wrote, whole. */
static void assert_saves_as(const rlt_array *a, const char *fixture)
{
    const char *path = temp_path("saved.npy");
    save_ok(path, a);
    size_t got_len, want_len;
    char *got = tmp_file_read(path, &got_len);
    char *want = tmp_file_read(fixture, &want_len);
    cr_assert_eq(got_len, want_len, "%s: %zu bytes, numpy wrote %zu", fixture, got_len, want_len);
    for (size_t i = 0; i < want_len; i++)
        cr_assert_eq(got[i], want[i], "%s: byte %zu is 0x%02x, numpy wrote 0x%02x; the headers' texts:\n%.118s\n%.118s",
                     fixture, i, (unsigned char)got[i], (unsigned char)want[i], got + 10, want + 10);
    free(got);
    free(want);
}

/* An array of the caller's own (a struct on the stack, its data borrowed). */
static rlt_array own_array(rlt_elem elem, int rank, const int64_t *dims, const void *data)
{
    rlt_array a = {.elem = elem, .rank = rank, .data = (void *)data};
    for (int i = 0; i < rank; i++) a.dims[i] = dims[i];
    return a;
}

Test(npy, saved_files_are_byte_for_byte_what_numpy_writes)
{
    /* from the caller's values: the header as numpy pads it, then the data */
    rlt_array a = own_array(RLT_ELEM_F32, 2, D(2, 3), f32_2x3);
    assert_saves_as(&a, FIXTURES "f32_2x3.npy");
    a = own_array(RLT_ELEM_I64, 1, D(5), i64_vec);
    assert_saves_as(&a, FIXTURES "i64_vec.npy");
    a = own_array(RLT_ELEM_I32, 1, D(4), i32_vec);
    assert_saves_as(&a, FIXTURES "i32_vec.npy");
    a = own_array(RLT_ELEM_BOOL, 2, D(2, 2), bool_2x2);
    assert_saves_as(&a, FIXTURES "bool_2x2.npy");
    a = own_array(RLT_ELEM_F32, 0, NULL, f32_scalar);
    assert_saves_as(&a, FIXTURES "f32_scalar.npy");
    a = own_array(RLT_ELEM_F32, 2, D(0, 3), NULL);
    assert_saves_as(&a, FIXTURES "f32_empty_0x3.npy");
    int32_t rank8[24];
    i32_rank8_values(rank8);
    a = own_array(RLT_ELEM_I32, 8, D(2, 1, 2, 1, 1, 2, 1, 3), rank8);
    assert_saves_as(&a, FIXTURES "i32_rank8.npy");

    /* and each loaded file saves back as it was */
    const char *v1[] = {"f32_2x3", "i64_vec", "i32_vec", "bool_2x2", "f32_scalar", "f32_empty_0x3", "i32_rank8"};
    for (size_t i = 0; i < sizeof v1 / sizeof v1[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, FIXTURES "%s.npy", v1[i]);
        rlt_array *l = load_ok(path);
        assert_saves_as(l, path);
        rlt_array_destroy(l);
    }

    /* a format 2.0 or 3.0 file comes back as 1.0 with the same data */
    const char *newer[] = {"f32_3x2_v2", "i64_2x2_v3"};
    for (size_t i = 0; i < 2; i++) {
        char path[512];
        snprintf(path, sizeof path, FIXTURES "%s.npy", newer[i]);
        rlt_array *l = load_ok(path);
        const char *out = temp_path("v1.npy");
        save_ok(out, l);
        size_t len;
        char *bytes = tmp_file_read(out, &len);
        cr_expect_eq(memcmp(bytes, "\x93NUMPY\x01\x00", 8), 0);
        cr_expect_eq(((unsigned char)bytes[8] | (unsigned char)bytes[9] << 8) + 10, 128);
        rlt_array *back = load_ok(out);
        assert_shape(back, l->elem, l->rank, l->dims);
        assert_data(back, l->data, (size_t)rlt_array_n_elems(l) * rlt_elem_size(l->elem));
        free(bytes);
        rlt_array_destroy(back);
        rlt_array_destroy(l);
    }
    assert_no_leaks();
}

/* ---- round trips ------------------------------------------------------------ */

Test(npy, round_trips_every_elem_at_every_rank)
{
    int n_files = 0;
    for (int e = 0; e < 4; e++) {
        for (int rank = 0; rank <= RLT_ARRAY_MAX_RANK + 1; rank++) {
            /* rank 9 stands for rank 2 with a zero dim */
            int r = rank <= RLT_ARRAY_MAX_RANK ? rank : 2;
            int64_t dims[RLT_ARRAY_MAX_RANK];
            pattern_dims(r, dims);
            if (rank > RLT_ARRAY_MAX_RANK) dims[1] = 0;
            rlt_array *a = NULL;
            rlt_diag d = {0};
            cr_assert_eq(rlt_array_create((rlt_elem)e, r, dims, &a, &d), RLT_STATUS_OK, "%s", d.message);
            pattern_fill(a);
            const char *path = temp_path("rt.npy");
            save_ok(path, a);
            size_t len;
            char *bytes = tmp_file_read(path, &len);
            size_t header_len = 10 + ((unsigned char)bytes[8] | (size_t)(unsigned char)bytes[9] << 8);
            size_t data_len = (size_t)rlt_array_n_elems(a) * rlt_elem_size(a->elem);
            cr_assert_eq(memcmp(bytes, "\x93NUMPY\x01\x00", 8), 0);
            cr_assert_eq(header_len % 64, 0, "header of %zu bytes", header_len);
            cr_assert_eq(len, header_len + data_len);
            cr_assert_eq(bytes[header_len - 1], '\n');
            static const char *const descr[] = {"'descr': '<f4'", "'descr': '<i8'", "'descr': '<i4'", "'descr': '|b1'"};
            cr_assert(strstr(bytes + 10, descr[e]), "%.*s", (int)header_len, bytes);

            rlt_array *b = load_ok(path);
            assert_shape(b, a->elem, a->rank, a->dims);
            assert_data(b, a->data, data_len);
            /* saved again: the same bytes */
            const char *again = temp_path("rt2.npy");
            save_ok(again, b);
            size_t len2;
            char *bytes2 = tmp_file_read(again, &len2);
            cr_assert(len2 == len && memcmp(bytes, bytes2, len) == 0);
            free(bytes2);
            free(bytes);
            rlt_array_destroy(b);
            rlt_array_destroy(a);
            n_files++;
        }
    }
    cr_expect_eq(n_files, 40);
    assert_no_leaks();
}

/* The files "NAME.tmp.PID" rlt_npy_save left in the test's directory. */
static int n_temporaries(void)
{
    DIR *dir = opendir(tmp_dir_use(temp_dir));
    cr_assert_not_null(dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dir)))
        if (strstr(e->d_name, ".tmp.")) n++;
    closedir(dir);
    return n;
}

Test(npy, save_replaces_a_file_atomically)
{
    const char *path = temp_path("replace.npy");
    tmp_file_write_text(path, "old contents");
    rlt_array a = own_array(RLT_ELEM_I32, 1, D(4), i32_vec);
    save_ok(path, &a);
    rlt_array *b = load_ok(path);
    assert_data(b, i32_vec, sizeof i32_vec);
    rlt_array_destroy(b);
    cr_expect_eq(n_temporaries(), 0, "a temporary file was left behind");
}

Test(npy, save_refusals)
{
    const char *path = temp_path("refused.npy");
    uint8_t bools[] = {0, 1, 2};
    int64_t big[2] = {1 << 21, 1 << 20};
    struct {
        rlt_array a;
        const char *sub;
    } cases[] = {
        {own_array(RLT_ELEM_F32, 1, D(3), NULL), "has no data"},
        {own_array((rlt_elem)9, 1, D(3), f32_2x3), "unknown element type 9"},
        {own_array(RLT_ELEM_F32, 2, D(3, -1), f32_2x3), "dim 1 is -1"},
        {own_array(RLT_ELEM_BOOL, 1, D(3), bools), "bool element 2 is 2"},
        {own_array(RLT_ELEM_BOOL, 2, big, bools), "more than 2^40"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rlt_diag d = {0};
        cr_assert_eq(rlt_npy_save(path, &cases[i].a, &d), RLT_STATUS_INVALID_ARGUMENT, "case %zu: %s", i, d.message);
        cr_expect(strstr(d.message, cases[i].sub), "'%s' not in: %s", cases[i].sub, d.message);
        cr_expect_eq(strncmp(d.message, path, strlen(path)), 0, "%s", d.message);
        cr_expect_not(tmp_exists(path));
    }
    rlt_array bad_rank = own_array(RLT_ELEM_F32, 0, NULL, f32_2x3);
    bad_rank.rank = 9;
    rlt_diag d = {0};
    cr_expect_eq(rlt_npy_save(path, &bad_rank, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(d.message, "rank 9"), "%s", d.message);
    d = (rlt_diag){0};
    cr_expect_eq(rlt_npy_save(path, NULL, &d), RLT_STATUS_INVALID_ARGUMENT);

    /* cannot be written: no such directory; a directory in the way */
    rlt_array a = own_array(RLT_ELEM_F32, 1, D(3), f32_2x3);
    d = (rlt_diag){0};
    cr_expect_eq(rlt_npy_save("/nonexistent-rltune-dir/x.npy", &a, &d), RLT_STATUS_IO_ERROR);
    cr_expect(strstr(d.message, "/nonexistent-rltune-dir/x.npy: cannot create"), "%s", d.message);
    const char *dir = temp_path("a_dir.npy");
    cr_assert_eq(mkdir(dir, 0755), 0);
    d = (rlt_diag){0};
    cr_expect_eq(rlt_npy_save(dir, &a, &d), RLT_STATUS_IO_ERROR);
    cr_expect(strstr(d.message, "cannot write"), "%s", d.message);
    cr_expect_eq(n_temporaries(), 0, "a temporary file was left behind");
}

/* ---- the header's syntax ---------------------------------------------------- */

Test(npy, header_variants_parse_as_python_would)
{
    const float v6[] = {1, 2, 3, 4, 5, 6};
    struct {
        const char *header;
        rlt_elem elem;
        int rank;
        int64_t dims[2];
    } cases[] = {
        /* numpy's own form, unpadded and without the newline */
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", RLT_ELEM_F32, 2, {2, 3}},
        /* keys in any order, no trailing comma, double quotes, whitespace of every kind */
        {"{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}", RLT_ELEM_F32, 2, {2, 3}},
        {"{\"descr\":\"<f4\",\"fortran_order\":False,\"shape\":(6,)}", RLT_ELEM_F32, 1, {6}},
        {" \n{\t'descr' :\n '<f4' ,\r\n 'fortran_order'\t: False,\n'shape' : ( 2 ,3 , ) ,\n}\n   \n", RLT_ELEM_F32, 2,
         {2, 3}},
        /* Python 2's u'' strings and long integers */
        {"{u'descr': u'<f4', u'fortran_order': False, u'shape': (2L, 3L), }", RLT_ELEM_F32, 2, {2, 3}},
        /* native and not-applicable byte orders, no byte order */
        {"{'descr': '=f4', 'fortran_order': False, 'shape': (6,), }", RLT_ELEM_F32, 1, {6}},
        {"{'descr': 'f4', 'fortran_order': False, 'shape': (6,), }", RLT_ELEM_F32, 1, {6}},
        {"{'descr': '|f4', 'fortran_order': False, 'shape': (6,), }", RLT_ELEM_F32, 1, {6}},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (3, 2), }", RLT_ELEM_I32, 2, {3, 2}},
        {"{'descr': '=i8', 'fortran_order': False, 'shape': (3,), }", RLT_ELEM_I64, 1, {3}},
        /* bool spelled every way numpy takes */
        {"{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }", RLT_ELEM_BOOL, 2, {2, 3}},
        {"{'descr': '?', 'fortran_order': False, 'shape': (2, 3), }", RLT_ELEM_BOOL, 2, {2, 3}},
        {"{'descr': '|?', 'fortran_order': False, 'shape': (2, 3), }", RLT_ELEM_BOOL, 2, {2, 3}},
        {"{'descr': 'b1', 'fortran_order': False, 'shape': (6,), }", RLT_ELEM_BOOL, 1, {6}},
        {"{'descr': '<b1', 'fortran_order': False, 'shape': (6,), }", RLT_ELEM_BOOL, 1, {6}},
        /* Fortran order where it lays the data out as C order does */
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (6,), }", RLT_ELEM_F32, 1, {6}},
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (1, 6), }", RLT_ELEM_F32, 2, {1, 6}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int major = 1; major <= 3; major++) {
            const char *path = temp_path("variant.npy");
            uint8_t data[24];
            int64_t n = cases[i].rank == 1 ? cases[i].dims[0] : cases[i].dims[0] * cases[i].dims[1];
            size_t bytes = (size_t)n * rlt_elem_size(cases[i].elem);
            if (cases[i].elem == RLT_ELEM_BOOL) {
                for (int k = 0; k < n; k++) data[k] = (uint8_t)(k & 1);
            } else {
                memcpy(data, v6, sizeof v6);
            }
            write_npy(path, major, cases[i].header, data, bytes);
            rlt_array *a = NULL;
            rlt_diag d = {0};
            cr_assert_eq(rlt_npy_load(path, &a, &d), RLT_STATUS_OK, "case %zu (version %d): %s", i, major, d.message);
            assert_shape(a, cases[i].elem, cases[i].rank, cases[i].dims);
            assert_data(a, data, bytes);
            rlt_array_destroy(a);
        }
    }
    assert_no_leaks();
}

/* ---- refusals ------------------------------------------------------------------ */

/* Writes a file with this header (format 1.0) and `data_len` zero bytes of
 * data, and returns its path. */
static const char *with_header(const char *header, size_t data_len)
{
    static uint8_t zeros[4096];
    const char *path = temp_path("bad.npy");
    write_npy(path, 1, header, zeros, data_len);
    return path;
}

#define HEADER(descr, fortran, shape) "{'descr': " descr ", 'fortran_order': " fortran ", 'shape': " shape ", }"

Test(npy, unsupported_arrays_are_invalid_argument)
{
    expect_fail(FIXTURES "bad_f64.npy", RLT_STATUS_INVALID_ARGUMENT,
                "dtype '<f8' (float64) is not supported; rltune reads float32, int64, int32 and bool arrays: save "
                "with .astype(np.float32)");
    expect_fail(FIXTURES "bad_big_endian.npy", RLT_STATUS_INVALID_ARGUMENT,
                "dtype '>f4' (float32) is big-endian; rltune reads little-endian arrays: save with .astype('<f4')");
    expect_fail(FIXTURES "bad_fortran.npy", RLT_STATUS_INVALID_ARGUMENT, "shape (2, 3) is in Fortran order",
                "np.ascontiguousarray(a)");
    expect_fail(FIXTURES "bad_object.npy", RLT_STATUS_INVALID_ARGUMENT, "dtype '|O' (object: Python objects, pickled)");
    expect_fail(FIXTURES "bad_structured.npy", RLT_STATUS_INVALID_ARGUMENT, "structured");
    expect_fail(FIXTURES "bad_u8.npy", RLT_STATUS_INVALID_ARGUMENT, "dtype '|u1' (uint8)", ".astype(np.int32)");

    expect_fail(with_header(HEADER("'>i8'", "False", "(1,)"), 8), RLT_STATUS_INVALID_ARGUMENT, "big-endian",
                ".astype('<i8')");
    expect_fail(with_header(HEADER("'!i4'", "False", "(1,)"), 4), RLT_STATUS_INVALID_ARGUMENT, "big-endian");
    expect_fail(with_header(HEADER("'<f2'", "False", "(1,)"), 2), RLT_STATUS_INVALID_ARGUMENT, "(float16)");
    expect_fail(with_header(HEADER("'<u8'", "False", "(1,)"), 8), RLT_STATUS_INVALID_ARGUMENT, "(uint64)",
                ".astype(np.int64)");
    expect_fail(with_header(HEADER("'<c8'", "False", "(1,)"), 8), RLT_STATUS_INVALID_ARGUMENT, "(complex64)");
    expect_fail(with_header(HEADER("'<U3'", "False", "(1,)"), 12), RLT_STATUS_INVALID_ARGUMENT, "(str)");
    expect_fail(with_header(HEADER("'<M8[ns]'", "False", "(1,)"), 8), RLT_STATUS_INVALID_ARGUMENT, "(datetime64)");
    expect_fail(with_header(HEADER("'<f4'", "False", "(1, 1, 1, 1, 1, 1, 1, 1, 1)"), 4),
                RLT_STATUS_INVALID_ARGUMENT, "rank 9; rltune reads ranks 0 to 8");
    expect_fail(with_header(HEADER("'|b1'", "False", "(1048576, 1048577)"), 0), RLT_STATUS_INVALID_ARGUMENT,
                "shape (1048576, 1048577) is too large: its dims (those of 0 aside) multiply to more than 2^40");
    expect_fail(with_header(HEADER("'<f4'", "False", "(0, 9223372036854775807)"), 0), RLT_STATUS_INVALID_ARGUMENT,
                "shape (0, 9223372036854775807) is too large");
    expect_fail(with_header(HEADER("'<f4'", "True", "(3, 1, 2)"), 24), RLT_STATUS_INVALID_ARGUMENT,
                "Fortran order");
    /* a format version numpy does not have */
    const char *path = temp_path("v4.npy");
    write_npy(path, 4, HEADER("'<f4'", "False", "()"), "\0\0\0\0", 4);
    expect_fail(path, RLT_STATUS_INVALID_ARGUMENT, "format version 4.0 is not supported");
    /* a header longer than any rltune reads (numpy's own limit is 10000) */
    char *huge = malloc(70001);
    cr_assert_not_null(huge);
    int len = snprintf(huge, 70001, "%s", HEADER("'<f4'", "False", "()"));
    memset(huge + len, ' ', (size_t)(70000 - len));
    huge[70000] = '\0';
    path = temp_path("huge.npy");
    write_npy(path, 2, huge, "\0\0\0\0", 4);
    free(huge);
    expect_fail(path, RLT_STATUS_INVALID_ARGUMENT, "the .npy header is 70000 bytes long");
}

Test(npy, malformed_files_are_parse_errors)
{
    /* the preamble */
    const char *path = temp_path("empty.npy");
    tmp_file_write(path, "", 0);
    expect_fail(path, RLT_STATUS_PARSE_ERROR, "the file is empty");
    path = temp_path("text.npy");
    tmp_file_write_text(path, "1.0 2.0 3.0\n");
    expect_fail(path, RLT_STATUS_PARSE_ERROR, "not a .npy file: it does not start with NumPy's magic");
    path = temp_path("magic.npy");
    tmp_file_write(path, "\x93NUM", 4);
    expect_fail(path, RLT_STATUS_PARSE_ERROR, "truncated");
    tmp_file_write(path, "\x93NUMPY\x01\x00\x10", 9);
    expect_fail(path, RLT_STATUS_PARSE_ERROR, "truncated: the file ends inside the header's length");
    tmp_file_write(path, "\x93NUMPY\x01\x00\x10\x00{'descr'", 17);
    expect_fail(path, RLT_STATUS_PARSE_ERROR, "truncated: the header is 16 bytes long, the file ends 7 bytes into it");

    /* the dict's syntax */
    struct {
        const char *header;
        const char *sub;
    } syntax[] = {
        {"", "expected '{' at byte 0"},
        {"['descr', '<f4']", "expected '{'"},
        {"{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3), }", "expected ',' or '}' at byte 16"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), ", "expected a quoted key or '}'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }}", "expected nothing but spaces after the dict"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } # comment", "nothing but spaces"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3),, }", "expected a quoted key"},
        {"{, 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", "expected a quoted key"},
        {"{'descr' '<f4', 'fortran_order': False, 'shape': (2, 3), }", "expected ':' after the key"},
        {"{descr: '<f4', 'fortran_order': False, 'shape': (2, 3), }", "expected a quoted key"},
        {"{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3), }", "expected"},
        {"{'descr': '<f4", "a closing quote"},
        {"{'descr': '<\\x66\\x34', 'fortran_order': False, 'shape': (2, 3), }", "no escapes"},
        {"{'descr': <f4, 'fortran_order': False, 'shape': (2, 3), }", "a quoted dtype for 'descr'"},
        {"{'descr': '<f4', 'fortran_order': false, 'shape': (2, 3), }", "True or False for 'fortran_order'"},
        {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3), }", "True or False"},
        {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2, 3), }", "True or False"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }", "a tuple '(...)' for 'shape'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (6), }", "one dim is written '(N,)'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }", "',' or ')' in 'shape'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3.0), }", "',' or ')' in 'shape'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, ,3), }", "a whole number in 'shape'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, }", "a whole number in 'shape'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }", "holds -3: dims are whole numbers"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
         "holds 99999999999999999999"},
        {"{'descr': [('x', '<f4'), ('y', '<i4')", "a closing bracket"},
        {"{'descr': [('x', '<f4')), 'fortran_order': False, 'shape': (2,), }", "matching brackets"},
        /* keys */
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'extra': 1}",
         "has a key 'extra': it holds 'descr', 'fortran_order' and 'shape' only"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,)}", "the key 'descr' twice"},
        {"{'descr': '<f4', 'fortran_order': False}", "has no 'shape'"},
        {"{'fortran_order': False, 'shape': (6,)}", "has no 'descr'"},
        {"{'descr': '<f4', 'shape': (6,)}", "has no 'fortran_order'"},
        {"{}", "has no 'descr'"},
        /* dtypes that are no dtype */
        {"{'descr': 'xyz', 'fortran_order': False, 'shape': (6,), }", "descr 'xyz' is not a NumPy dtype"},
        {"{'descr': '', 'fortran_order': False, 'shape': (6,), }", "descr '' is not a NumPy dtype"},
        {"{'descr': '<f', 'fortran_order': False, 'shape': (6,), }", "not a NumPy dtype"},
        {"{'descr': '<f4x', 'fortran_order': False, 'shape': (6,), }", "not a NumPy dtype"},
        {"{'descr': '<f4444444444444444444444444444444444444444444444444444444', 'fortran_order': False, 'shape': (6,), }",
         "not a NumPy dtype"},
    };
    for (size_t i = 0; i < sizeof syntax / sizeof syntax[0]; i++)
        expect_fail(with_header(syntax[i].header, 24), RLT_STATUS_PARSE_ERROR, syntax[i].sub);
    /* a NUL inside the header */
    path = temp_path("nul.npy");
    write_npy(path, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", "\0\0\0\0", 4);
    size_t len;
    char *bytes = tmp_file_read(path, &len);
    bytes[20] = '\0';
    tmp_file_write(path, bytes, len);
    free(bytes);
    expect_fail(path, RLT_STATUS_PARSE_ERROR, "\\x00");

    /* the data */
    expect_fail(with_header(HEADER("'<f4'", "False", "(2, 3)"), 20), RLT_STATUS_PARSE_ERROR,
                "truncated: the data of a (2, 3) float32 array is 24 bytes, the file holds 20");
    expect_fail(with_header(HEADER("'<f4'", "False", "(2, 3)"), 25), RLT_STATUS_PARSE_ERROR,
                "the data of a (2, 3) float32 array is 24 bytes, the file holds 25: bytes after the data");
    expect_fail(with_header(HEADER("'<f4'", "False", "(0,)"), 1), RLT_STATUS_PARSE_ERROR, "bytes after the data");
    expect_fail(with_header(HEADER("'<i8'", "False", "(1048576, 1048576)"), 8), RLT_STATUS_PARSE_ERROR,
                "truncated: the data of a (1048576, 1048576) int64 array is 8796093022208 bytes");
    path = temp_path("bool.npy");
    write_npy(path, 1, HEADER("'|b1'", "False", "(4,)"), "\x01\x00\x02\x01", 4);
    expect_fail(path, RLT_STATUS_PARSE_ERROR, "bool element 2 is stored as 2: a bool is 0 or 1");
}

Test(npy, files_that_cannot_be_read_are_io_errors)
{
    expect_fail(temp_path("missing.npy"), RLT_STATUS_IO_ERROR, "cannot open: No such file or directory");
    const char *dir = temp_path("dir.npy");
    cr_assert_eq(mkdir(dir, 0755), 0);
    expect_fail(dir, RLT_STATUS_IO_ERROR, "it is a directory");
    if (geteuid() != 0) {
        const char *path = temp_path("unreadable.npy");
        tmp_file_write(path, "x", 1);
        cr_assert_eq(chmod(path, 0), 0);
        expect_fail(path, RLT_STATUS_IO_ERROR, "cannot open: Permission denied");
    }
}

/* ---- pipes --------------------------------------------------------------------- */

/* Loads `len` bytes of `data` through a named pipe a child process writes. */
static rlt_status load_through_pipe(const void *data, size_t len, rlt_array **out, rlt_diag *d)
{
    const char *path = temp_path("pipe.npy");
    unlink(path);
    cr_assert_eq(mkfifo(path, 0600), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fd = open(path, O_WRONLY);
        const char *p = data;
        while (fd >= 0 && len > 0) {
            ssize_t w = write(fd, p, len);
            if (w <= 0) break;
            p += w;
            len -= (size_t)w;
        }
        _exit(fd >= 0 && len == 0 ? 0 : 1);
    }
    rlt_status st = rlt_npy_load(path, out, d);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return st;
}

Test(npy, pipes_are_read_to_their_end)
{
    size_t len;
    char *bytes = tmp_file_read(FIXTURES "f32_2x3.npy", &len);
    rlt_array *a = NULL;
    rlt_diag d = {0};
    cr_assert_eq(load_through_pipe(bytes, len, &a, &d), RLT_STATUS_OK, "%s", d.message);
    assert_shape(a, RLT_ELEM_F32, 2, D(2, 3));
    assert_data(a, f32_2x3, sizeof f32_2x3);
    rlt_array_destroy(a);
    a = NULL;

    d = (rlt_diag){0};
    cr_assert_eq(load_through_pipe(bytes, len - 1, &a, &d), RLT_STATUS_PARSE_ERROR);
    cr_expect(strstr(d.message, "truncated: the data of a (2, 3) float32 array is 24 bytes, the file holds 23"),
              "%s", d.message);
    cr_assert_null(a);
    free(bytes);

    /* a header claiming 4 GiB over a pipe that brings 4 bytes: refused as
     * truncated, after allocating no more than came */
    const char *path = temp_path("claims.npy");
    write_npy(path, 1, HEADER("'<f4'", "False", "(1073741824,)"), "\0\0\0\0", 4);
    bytes = tmp_file_read(path, &len);
    d = (rlt_diag){0};
    cr_assert_eq(load_through_pipe(bytes, len, &a, &d), RLT_STATUS_PARSE_ERROR);
    cr_expect(strstr(d.message, "the data of a (1073741824,) float32 array is 4294967296 bytes, the file holds 4"), "%s", d.message);
    free(bytes);

    /* bytes after the data */
    bytes = tmp_file_read(FIXTURES "bool_2x2.npy", &len);
    char *longer = malloc(len + 1);
    cr_assert_not_null(longer);
    memcpy(longer, bytes, len);
    longer[len] = 0;
    d = (rlt_diag){0};
    cr_assert_eq(load_through_pipe(longer, len + 1, &a, &d), RLT_STATUS_PARSE_ERROR);
    cr_expect(strstr(d.message, "bytes after the data"), "%s", d.message);
    free(longer);
    free(bytes);
    assert_no_leaks();
}

/* ---- damaged files ---------------------------------------------------------------- */

/* Loads a file that may hold anything: success gives a consistent array
 * that saves and loads back the same; a failure, a parse error or an
 * unsupported array with a message naming the file. Nothing crashes. */
static bool load_any(const char *path)
{
    rlt_array *a = NULL;
    rlt_diag d = {0};
    rlt_status st = rlt_npy_load(path, &a, &d);
    if (st != RLT_STATUS_OK) {
        cr_assert_null(a);
        cr_assert_eq(d.status, st);
        cr_assert(st == RLT_STATUS_PARSE_ERROR || st == RLT_STATUS_INVALID_ARGUMENT, "%s: %s", rlt_status_str(st),
                  d.message);
        cr_assert_eq(strncmp(d.message, path, strlen(path)), 0, "%s", d.message);
        cr_assert_gt(strlen(d.message), strlen(path) + 10, "%s", d.message);
        return false;
    }
    int64_t n = rlt_array_n_elems(a);
    cr_assert(n >= 0 && n <= 4096, "%" PRId64 " elements from a small file", n);
    const char *again = temp_path("mutant_again.npy");
    save_ok(again, a);
    rlt_array *b = load_ok(again);
    assert_shape(b, a->elem, a->rank, a->dims);
    assert_data(b, a->data, (size_t)n * rlt_elem_size(a->elem));
    rlt_array_destroy(b);
    rlt_array_destroy(a);
    return true;
}

static const char *const valid_files[] = {"f32_2x3", "i64_vec", "bool_2x2", "f32_scalar", "f32_empty_0x3",
                                          "i32_rank8", "f32_3x2_v2", "i64_2x2_v3"};
#define N_VALID_FILES (sizeof valid_files / sizeof valid_files[0])

static char *read_valid(size_t i, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, FIXTURES "%s.npy", valid_files[i]);
    return tmp_file_read(path, len);
}

Test(npy, every_truncation_is_a_parse_error)
{
    const char *path = temp_path("cut.npy");
    int n_cuts = 0;
    for (size_t f = 0; f < N_VALID_FILES; f++) {
        size_t len;
        char *bytes = read_valid(f, &len);
        for (size_t cut = 0; cut < len; cut++) {
            tmp_file_write(path, bytes, cut);
            rlt_array *a = NULL;
            rlt_diag d = {0};
            rlt_status st = rlt_npy_load(path, &a, &d);
            cr_assert_eq(st, RLT_STATUS_PARSE_ERROR, "%s cut at %zu: %s %s", valid_files[f], cut, rlt_status_str(st),
                         d.message);
            cr_assert_null(a);
            cr_assert(strstr(d.message, "truncated") || strstr(d.message, "empty") ||
                          strstr(d.message, "not a Python dict literal"),
                      "%s cut at %zu: %s", valid_files[f], cut, d.message);
            n_cuts++;
        }
        free(bytes);
    }
    cr_expect_gt(n_cuts, 1000);
    assert_no_leaks();
}

Test(npy, random_mutations_never_crash)
{
    const char *path = temp_path("mutant.npy");
    rlt_rng rng;
    rlt_rng_seed(&rng, 20261127);
    char *files[N_VALID_FILES];
    size_t lens[N_VALID_FILES];
    for (size_t f = 0; f < N_VALID_FILES; f++) files[f] = read_valid(f, &lens[f]);
    char buf[1024];
    int n_ok = 0, n_tried = 0;
    for (int iter = 0; iter < 5000; iter++) {
        size_t f = (size_t)rlt_rng_below(&rng, N_VALID_FILES);
        size_t len = lens[f];
        cr_assert_lt(len + 8, sizeof buf);
        memcpy(buf, files[f], len);
        int n_flips = 1 + (int)rlt_rng_below(&rng, 4);
        for (int k = 0; k < n_flips; k++) {
            /* mostly in the preamble and the header, where the structure is */
            size_t at = rlt_rng_below(&rng, 4) ? (size_t)rlt_rng_below(&rng, RLT_MIN(len, (size_t)128))
                                               : (size_t)rlt_rng_below(&rng, len);
            switch (rlt_rng_below(&rng, 6)) {
            case 0: buf[at] ^= (char)(1u << rlt_rng_below(&rng, 8)); break;
            case 1: buf[at] = (char)rlt_rng_u64(&rng); break;
            case 2: buf[at] = (char)(rlt_rng_below(&rng, 2) ? 0xff : 0x00); break;
            case 3: buf[at] = "{}()[],:'\" 0123456789TF<>|=?-L\n"[rlt_rng_below(&rng, 32)]; break;
            case 4: /* a byte removed */
                memmove(buf + at, buf + at + 1, len - at - 1);
                len--;
                break;
            default: /* a byte inserted */
                memmove(buf + at + 1, buf + at, len - at);
                buf[at] = (char)rlt_rng_u64(&rng);
                len++;
                break;
            }
            if (len < 2) break;
        }
        tmp_file_write(path, buf, len);
        n_ok += load_any(path);
        n_tried++;
    }
    cr_expect_eq(n_tried, 5000);
    cr_expect_gt(n_ok, 20, "only %d of %d mutants loaded", n_ok, n_tried);
    cr_expect_lt(n_ok, n_tried / 2, "%d of %d mutants loaded", n_ok, n_tried);
    for (size_t f = 0; f < N_VALID_FILES; f++) free(files[f]);
    assert_no_leaks();
}

Test(npy, allocation_failures_are_reported)
{
    for (size_t f = 0; f < N_VALID_FILES; f++) {
        char path[512];
        snprintf(path, sizeof path, FIXTURES "%s.npy", valid_files[f]);
        bool is_loaded = false;
        int n_failed = 0;
        for (long n = 1; n < 100 && !is_loaded; n++) {
            rlt_array *a = NULL;
            rlt_diag d = {0};
            rlt_alloc_fail_after(n);
            rlt_status st = rlt_npy_load(path, &a, &d);
            rlt_alloc_fail_after(0);
            if (st == RLT_STATUS_OK) {
                is_loaded = true;
                rlt_array_destroy(a);
            } else {
                cr_assert_eq(st, RLT_STATUS_OUT_OF_MEMORY, "%s: %s", rlt_status_str(st), d.message);
                cr_assert_null(a);
                cr_assert(strstr(d.message, "out of memory"), "%s", d.message);
                cr_assert_eq(strncmp(d.message, path, strlen(path)), 0, "%s", d.message);
                n_failed++;
            }
        }
        cr_expect(is_loaded, "%s: never loaded", path);
        cr_expect_eq(n_failed, 2, "%s: %d allocations (the header, the array)", path, n_failed);
    }
    /* through a pipe: the growing buffer too */
    size_t len;
    char *bytes = read_valid(0, &len);
    bool is_loaded = false;
    for (long n = 1; n < 100 && !is_loaded; n++) {
        rlt_array *a = NULL;
        rlt_diag d = {0};
        rlt_alloc_fail_after(n);
        rlt_status st = load_through_pipe(bytes, len, &a, &d);
        rlt_alloc_fail_after(0);
        if (st == RLT_STATUS_OK) {
            is_loaded = true;
            rlt_array_destroy(a);
        } else {
            cr_assert_eq(st, RLT_STATUS_OUT_OF_MEMORY, "%s", d.message);
            cr_assert_null(a);
        }
    }
    cr_expect(is_loaded);
    free(bytes);

    /* create: one allocation; save: none */
    rlt_array *a = NULL;
    rlt_diag d = {0};
    rlt_alloc_fail_after(1);
    cr_expect_eq(rlt_array_create(RLT_ELEM_F32, 2, D(2, 3), &a, &d), RLT_STATUS_OUT_OF_MEMORY);
    rlt_alloc_fail_after(0);
    cr_expect_null(a);
    cr_expect(strstr(d.message, "out of memory for a (2, 3) float32 array"), "%s", d.message);
    rlt_array b = own_array(RLT_ELEM_F32, 2, D(2, 3), f32_2x3);
    rlt_alloc_fail_after(1);
    d = (rlt_diag){0};
    rlt_status st = rlt_npy_save(temp_path("oom.npy"), &b, &d);
    rlt_alloc_fail_after(0);
    cr_expect_eq(st, RLT_STATUS_OK, "%s", d.message);
    assert_no_leaks();
}

/* ---- NumPy reads what rltune writes ------------------------------------------------- */

/* Checks every file of the manifest: np.load gives the dtype, the shape and
 * the values pattern_fill wrote, and np.save of those values gives the
 * file's bytes. */
static const char check_script[] =
    "import io, sys\n"
    "import numpy as np\n"
    "d = sys.argv[1]\n"
    "n = 0\n"
    "for line in open(d + '/manifest.txt'):\n"
    "    name, dt, shape = line.split()\n"
    "    shape = () if shape == '-' else tuple(int(x) for x in shape.split(','))\n"
    "    a = np.load(d + '/' + name)\n"
    "    assert a.dtype == np.dtype(dt) and a.shape == shape, (name, a.dtype, a.shape)\n"
    "    i = np.arange(a.size, dtype=np.int64).reshape(shape)\n"
    "    want = {'float32': (i % 7) * 0.5 - 1.25, 'int64': i * 1000003 - 5 * 2**40,\n"
    "            'int32': i * 7919 - 100000, 'bool': i % 3 == 0}[dt].astype(dt)\n"
    "    assert np.array_equal(a, want), name\n"
    "    b = io.BytesIO()\n"
    "    np.save(b, want)\n"
    "    assert b.getvalue() == open(d + '/' + name, 'rb').read(), name + ': not the bytes np.save writes'\n"
    "    n += 1\n"
    "print('numpy read', n, 'files rltune wrote')\n";

Test(npy, numpy_reads_what_rltune_writes)
{
    const char *python = getenv("RLTUNE_PYTHON");
    if (!python || !*python) cr_skip_test("RLTUNE_PYTHON (a python with numpy) is not set");
    static const char *const numpy_names[] = {"float32", "int64", "int32", "bool"};
    const char *dir = tmp_dir_use(temp_dir);
    FILE *manifest = fopen(temp_path("manifest.txt"), "w");
    cr_assert_not_null(manifest);
    int n_files = 0;
    for (int e = 0; e < 4; e++) {
        for (int rank = 0; rank <= RLT_ARRAY_MAX_RANK + 2; rank++) {
            /* ranks 9 and 10 stand for (0, 3) and (3, 0) */
            int r = rank <= RLT_ARRAY_MAX_RANK ? rank : 2;
            int64_t dims[RLT_ARRAY_MAX_RANK];
            pattern_dims(r, dims);
            if (rank == 9) dims[0] = 0, dims[1] = 3;
            if (rank == 10) dims[0] = 3, dims[1] = 0;
            if (rank == 1) dims[0] = 1000; /* a first dim of 4 digits */
            rlt_array *a = NULL;
            rlt_diag d = {0};
            cr_assert_eq(rlt_array_create((rlt_elem)e, r, dims, &a, &d), RLT_STATUS_OK, "%s", d.message);
            pattern_fill(a);
            char name[64];
            snprintf(name, sizeof name, "%s_%d.npy", numpy_names[e], rank);
            save_ok(temp_path(name), a);
            fprintf(manifest, "%s %s ", name, numpy_names[e]);
            if (r == 0) fprintf(manifest, "-");
            for (int i = 0; i < r; i++) fprintf(manifest, "%s%" PRId64, i ? "," : "", dims[i]);
            fprintf(manifest, "\n");
            rlt_array_destroy(a);
            n_files++;
        }
    }
    cr_assert_eq(fclose(manifest), 0);
    const char *script = temp_path("check.py");
    tmp_file_write_text(script, check_script);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", python, script, dir);
    int status = system(cmd);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s failed (status %d) on %d files", cmd, status,
              n_files);
}
