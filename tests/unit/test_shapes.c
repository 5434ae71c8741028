/* Tests of src/policy/shapes.c, the shape datasets of `rltune gen-dataset`:
 * generation (every combination of the ranges, 13^3 for mm 64:256:16,
 * canonical specs, conv's N=1 / stride 1 / pad R/2 and its defaults), the
 * split (round(n * fraction) test shapes, the same per seed, other seeds
 * other splits), the --max-shapes subset, every kind of bad option refused
 * with a message naming it; the file: save -> load gives an equal set,
 * lenient reading (blanks, CRLF, specs made canonical), and every kind of
 * malformed file refused with file:line (no header, another version, a
 * bad line or spec, a shape twice, no shape, a NUL byte); allocation
 * failures at every point give OUT_OF_MEMORY and leak nothing. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "policy/shapes.h"

#include "../common/leaks.h"
#include "../common/tmp.h"

static char tmp_dir[] = "/tmp/rlt_shapes_XXXXXX";

static void setup(void) { tmp_dir_use(tmp_dir); }

static void teardown(void) { tmp_remove_tree(tmp_dir); }

TestSuite(shapes, .init = setup, .fini = teardown, .timeout = 60);

/* ---- helpers --------------------------------------------------------------- */

static rlt_shape_set generate(rlt_shape_gen_opts o)
{
    rlt_shape_set s;
    rlt_diag d = {0};
    cr_assert_eq(rlt_shape_set_generate(&o, &s, &d), RLT_STATUS_OK, "%s", d.message);
    return s;
}

static rlt_shape_gen_opts mm_opts(const char *dims, double fraction, uint64_t seed)
{
    return (rlt_shape_gen_opts){.kind = "mm", .dims = dims, .test_fraction = fraction, .seed = seed};
}

static int index_of(const rlt_shape_set *s, const char *spec)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->specs[i], spec) == 0) return i;
    return -1;
}

static void assert_canonical(const char *spec)
{
    rlt_op *op = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_op_parse(spec, &op, &d), RLT_STATUS_OK, "%s: %s", spec, d.message);
    cr_assert_str_eq(op->spec, spec, "not canonical");
    rlt_op_destroy(op);
}

/* The canonical spec of `spec`. */
static void canonical(const char *spec, char *out, size_t size)
{
    rlt_op *op = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_op_parse(spec, &op, &d), RLT_STATUS_OK, "%s: %s", spec, d.message);
    cr_assert_lt(strlen(op->spec), size);
    memcpy(out, op->spec, strlen(op->spec) + 1);
    rlt_op_destroy(op);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every spec once. */
static void assert_distinct(const rlt_shape_set *s)
{
    char **sorted = malloc((size_t)s->n * sizeof *sorted);
    cr_assert_not_null(sorted);
    memcpy(sorted, s->specs, (size_t)s->n * sizeof *sorted);
    qsort(sorted, (size_t)s->n, sizeof *sorted, cmp_str);
    for (int i = 1; i < s->n; i++) cr_assert_str_neq(sorted[i - 1], sorted[i], "a shape twice");
    free(sorted);
}

static void assert_sets_equal(const rlt_shape_set *a, const rlt_shape_set *b)
{
    cr_assert_eq(a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        cr_assert_str_eq(a->specs[i], b->specs[i], "shape %d", i);
        cr_assert_eq(a->is_test[i], b->is_test[i], "shape %d", i);
    }
    cr_assert_eq(a->about == NULL, b->about == NULL);
    if (a->about) cr_assert_str_eq(a->about, b->about);
}

static bool splits_equal(const rlt_shape_set *a, const rlt_shape_set *b)
{
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->specs[i], b->specs[i]) != 0 || a->is_test[i] != b->is_test[i]) return false;
    return true;
}

/* ---- generating -------------------------------------------------------------- */

Test(shapes, mm_every_combination_canonical)
{
    rlt_shape_set s = generate(mm_opts("64:256:16", 0.2, 0));
    cr_assert_eq(s.n, 13 * 13 * 13);
    cr_assert_eq(rlt_shape_set_count(&s, true), 439); /* round(2197 * 0.2) = round(439.4) */
    cr_assert_eq(rlt_shape_set_count(&s, false), 2197 - 439);
    cr_assert_str_eq(s.about, "kind mm dims 64:256:16 test-fraction 0.2 seed 0");
    /* every combination is there, canonical */
    for (int m = 64; m <= 256; m += 16)
        for (int n = 64; n <= 256; n += 16)
            for (int k = 64; k <= 256; k += 16) {
                char spec[128], canon[128];
                snprintf(spec, sizeof spec, "matmul:K=%d,M=%d,N=%d", k, m, n);
                canonical(spec, canon, sizeof canon);
                cr_assert_geq(index_of(&s, canon), 0, "%s missing", canon);
            }
    assert_distinct(&s);
    assert_canonical(s.specs[0]);
    /* the train part first, then the test part, each in the combinations' order */
    int n_train = rlt_shape_set_count(&s, false);
    for (int i = 0; i < s.n; i++) cr_assert_eq(s.is_test[i], i >= n_train, "shape %d", i);
    rlt_shape_set_free(&s);
    cr_assert_eq(s.n, 0);
    cr_assert_null(s.specs);
    rlt_shape_set_free(&s); /* freeing a freed (zeroed) set is fine */
    assert_no_leaks();
}

Test(shapes, mm_order_within_parts)
{
    rlt_shape_set s = generate(mm_opts("1,2,3", 0.5, 7));
    cr_assert_eq(s.n, 27);
    cr_assert_eq(rlt_shape_set_count(&s, true), 14); /* round(13.5) */
    /* M, N, K the last fastest: each part ascending as a number MNK */
    for (int i = 1; i < s.n; i++) {
        if (s.is_test[i] != s.is_test[i - 1]) continue;
        int m0, n0, k0, m1, n1, k1;
        cr_assert_eq(sscanf(s.specs[i - 1], "matmul:M=%d,N=%d,K=%d", &m0, &n0, &k0), 3);
        cr_assert_eq(sscanf(s.specs[i], "matmul:M=%d,N=%d,K=%d", &m1, &n1, &k1), 3);
        cr_assert_lt(m0 * 100 + n0 * 10 + k0, m1 * 100 + n1 * 10 + k1);
    }
    rlt_shape_set_free(&s);
}

Test(shapes, conv_same_padding_and_defaults)
{
    rlt_shape_set s = generate((rlt_shape_gen_opts){
        .kind = "conv", .dims = "16,32", .sizes = "7,14", .kernels = "1,3,5", .test_fraction = 0.25, .seed = 3});
    cr_assert_eq(s.n, 2 * 2 * 2 * 3);
    cr_assert_eq(rlt_shape_set_count(&s, true), 6);
    cr_assert_str_eq(s.about, "kind conv dims 16,32 sizes 7,14 kernels 1,3,5 test-fraction 0.25 seed 3");
    char canon[256];
    canonical("conv2d:N=1,C=32,H=14,W=14,K=16,R=5,S=5,stride=1,pad=2", canon, sizeof canon);
    cr_assert_geq(index_of(&s, canon), 0, "%s missing", canon);
    canonical("conv2d:N=1,C=16,H=7,W=7,K=32,R=1,S=1,stride=1,pad=0", canon, sizeof canon);
    cr_assert_geq(index_of(&s, canon), 0, "%s missing", canon);
    for (int i = 0; i < s.n; i++) {
        assert_canonical(s.specs[i]);
        int n, c, h, w, k, r, ss, stride, pad;
        cr_assert_eq(sscanf(s.specs[i], "conv2d:N=%d,C=%d,H=%d,W=%d,K=%d,R=%d,S=%d,stride=%d,pad=%d", &n, &c, &h, &w,
                            &k, &r, &ss, &stride, &pad),
                     9, "%s", s.specs[i]);
        cr_assert(n == 1 && h == w && r == ss && stride == 1 && pad == r / 2, "%s", s.specs[i]);
        cr_assert_eq(h + 2 * pad - r + 1, h, "the output keeps the size: %s", s.specs[i]);
    }
    assert_distinct(&s);
    rlt_shape_set_free(&s);

    /* defaults: sizes 7,14,28,56 and kernels 1,3 */
    s = generate((rlt_shape_gen_opts){.kind = "conv", .dims = "64", .test_fraction = 0});
    cr_assert_eq(s.n, 1 * 4 * 1 * 2);
    cr_assert_eq(rlt_shape_set_count(&s, true), 0);
    cr_assert_str_eq(s.about, "kind conv dims 64 sizes 7,14,28,56 kernels 1,3 test-fraction 0 seed 0");
    canonical("conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1", canon, sizeof canon);
    cr_assert_geq(index_of(&s, canon), 0, "%s missing", canon);
    rlt_shape_set_free(&s);
}

Test(shapes, range_forms)
{
    struct {
        const char *dims;
        int n_values;
        int first, last;
    } cases[] = {
        {"64", 1, 64, 64},        {"64:256:16", 13, 64, 256}, {"64:250:16", 12, 64, 240},
        {"5:5:3", 1, 5, 5},       {"128,32,64", 3, 32, 128},  {"1:3:1", 3, 1, 3},
    };
    for (size_t c = 0; c < RLT_ARRAY_LEN(cases); c++) {
        rlt_shape_set s = generate(mm_opts(cases[c].dims, 0, 0));
        int nv = cases[c].n_values;
        cr_assert_eq(s.n, nv * nv * nv, "%s: %d shapes", cases[c].dims, s.n);
        char first[64], last[64];
        snprintf(first, sizeof first, "matmul:M=%d,N=%d,K=%d", cases[c].first, cases[c].first, cases[c].first);
        snprintf(last, sizeof last, "matmul:M=%d,N=%d,K=%d", cases[c].last, cases[c].last, cases[c].last);
        cr_assert_str_eq(s.specs[0], first, "%s", cases[c].dims);
        cr_assert_str_eq(s.specs[s.n - 1], last, "%s", cases[c].dims);
        rlt_shape_set_free(&s);
    }
}

Test(shapes, split_sizes)
{
    struct {
        const char *dims;
        double fraction;
        int n, n_test;
    } cases[] = {
        {"64:256:16", 0.0, 2197, 0}, /* no test part at all is fine */
        {"1,2", 0.5, 8, 4},          {"1,2", 0.0625, 8, 1}, /* round(0.5) = 1: halves up */
        {"1,2", 0.06, 8, 0},         {"1,2", 0.99, 8, 8},   {"64", 0.2, 1, 0},
        {"64", 0.5, 1, 1},           {"1:10:1", 0.1, 1000, 100},
    };
    for (size_t c = 0; c < RLT_ARRAY_LEN(cases); c++) {
        rlt_shape_set s = generate(mm_opts(cases[c].dims, cases[c].fraction, 5));
        cr_assert_eq(s.n, cases[c].n, "%s", cases[c].dims);
        cr_assert_eq(rlt_shape_set_count(&s, true), cases[c].n_test, "%s %g: %d test shapes", cases[c].dims,
                     cases[c].fraction, rlt_shape_set_count(&s, true));
        cr_assert_eq(rlt_shape_set_count(&s, false), cases[c].n - cases[c].n_test);
        rlt_shape_set_free(&s);
    }
}

Test(shapes, split_by_seed)
{
    rlt_shape_set a = generate(mm_opts("64:256:16", 0.2, 42));
    rlt_shape_set b = generate(mm_opts("64:256:16", 0.2, 42));
    assert_sets_equal(&a, &b);
    rlt_shape_set c = generate(mm_opts("64:256:16", 0.2, 43));
    cr_assert_eq(rlt_shape_set_count(&c, true), 439);
    cr_assert_not(splits_equal(&a, &c), "seeds 42 and 43 give the same split");
    cr_assert_str_eq(c.about, "kind mm dims 64:256:16 test-fraction 0.2 seed 43");
    /* the same shapes, split otherwise */
    int n_moved = 0;
    for (int i = 0; i < c.n; i++) {
        int j = index_of(&a, c.specs[i]);
        cr_assert_geq(j, 0);
        n_moved += a.is_test[j] != c.is_test[i];
    }
    cr_assert_gt(n_moved, 0);
    rlt_shape_set_free(&a);
    rlt_shape_set_free(&b);
    rlt_shape_set_free(&c);
}

Test(shapes, max_shapes_subset)
{
    rlt_shape_set all = generate(mm_opts("64:256:16", 0.2, 0));
    rlt_shape_gen_opts o = mm_opts("64:256:16", 0.2, 9);
    o.max_shapes = 100;
    rlt_shape_set a = generate(o);
    cr_assert_eq(a.n, 100);
    cr_assert_eq(rlt_shape_set_count(&a, true), 20);
    cr_assert_str_eq(a.about, "kind mm dims 64:256:16 max-shapes 100 test-fraction 0.2 seed 9");
    assert_distinct(&a);
    for (int i = 0; i < a.n; i++)
        cr_assert_geq(index_of(&all, a.specs[i]), 0, "%s not a shape of the ranges", a.specs[i]);
    rlt_shape_set b = generate(o);
    assert_sets_equal(&a, &b);
    o.seed = 10;
    rlt_shape_set c = generate(o);
    cr_assert_eq(c.n, 100);
    int n_shared = 0;
    for (int i = 0; i < c.n; i++) n_shared += index_of(&a, c.specs[i]) >= 0;
    cr_assert_lt(n_shared, 100, "seeds 9 and 10 drew the same subset");
    /* at least as many as there are: all of them */
    o.max_shapes = 5000;
    rlt_shape_set d = generate(o);
    cr_assert_eq(d.n, 2197);
    rlt_shape_set_free(&all);
    rlt_shape_set_free(&a);
    rlt_shape_set_free(&b);
    rlt_shape_set_free(&c);
    rlt_shape_set_free(&d);
}

/* dense-random and bmm-random: the same draw of M, N and K, plus the
 * epilogue (dense) or the batch (2..16); mm-random's shapes do not move. */
Test(shapes, dense_and_batch_matmul_draws)
{
    rlt_shape_gen_opts o = {.kind = "dense-random", .dims = "16:1024:1", .max_shapes = 200, .seed = 5};
    rlt_shape_set d = generate(o);
    o.kind = "bmm-random";
    rlt_shape_set b = generate(o);
    o.kind = "mm-random";
    rlt_shape_set m = generate(o);
    cr_assert_str_eq(d.about, "kind dense-random dims 16:1024:1 max-shapes 200 test-fraction 0 seed 5");
    assert_distinct(&d);
    assert_distinct(&b);
    int n_epilogue[4] = {0}, n_batch_above_4 = 0;
    for (int i = 0; i < d.n; i++) {
        long v[3], bias, relu;
        cr_assert_eq(sscanf(d.specs[i], "dense:M=%ld,N=%ld,K=%ld,bias=%ld,relu=%ld", &v[0], &v[1], &v[2], &bias,
                            &relu),
                     5, "%s", d.specs[i]);
        for (int k = 0; k < 3; k++) cr_assert(v[k] >= 16 && v[k] <= 1024, "%s", d.specs[i]);
        n_epilogue[bias + 2 * relu]++;
    }
    for (int e = 0; e < 4; e++) cr_assert_gt(n_epilogue[e], 20, "epilogue %d drawn %d times of 200", e, n_epilogue[e]);
    for (int i = 0; i < b.n; i++) {
        long batch, v[3];
        cr_assert_eq(sscanf(b.specs[i], "batch_matmul:B=%ld,M=%ld,N=%ld,K=%ld", &batch, &v[0], &v[1], &v[2]), 4,
                     "%s", b.specs[i]);
        cr_assert(batch >= 2 && batch <= 16, "%s", b.specs[i]);
        n_batch_above_4 += batch > 4;
    }
    cr_assert(n_batch_above_4 > 60 && n_batch_above_4 < 180, "%d of 200 batches above 4", n_batch_above_4);
    /* the first shape matmul draws is dense's first M, N, K */
    long mm[3], dn[3];
    cr_assert_eq(sscanf(m.specs[0], "matmul:M=%ld,N=%ld,K=%ld", &mm[0], &mm[1], &mm[2]), 3);
    cr_assert_eq(sscanf(d.specs[0], "dense:M=%ld,N=%ld,K=%ld", &dn[0], &dn[1], &dn[2]), 3);
    cr_assert(mm[0] == dn[0] && mm[1] == dn[1] && mm[2] == dn[2], "%s / %s", m.specs[0], d.specs[0]);
    rlt_shape_set_free(&d);
    rlt_shape_set_free(&b);
    rlt_shape_set_free(&m);
}

/* mm-random: distinct matmuls drawn from the range, log-uniformly (as many
 * thin sizes below 64 as sizes from 256 up), the same for the same seed. */
Test(shapes, mm_random_draws)
{
    rlt_shape_gen_opts o = {.kind = "mm-random", .dims = "16:1024:1", .max_shapes = 600, .test_fraction = 0.25,
                            .seed = 5};
    rlt_shape_set a = generate(o);
    cr_assert_eq(a.n, 600);
    cr_assert_eq(rlt_shape_set_count(&a, true), 150);
    cr_assert_str_eq(a.about, "kind mm-random dims 16:1024:1 max-shapes 600 test-fraction 0.25 seed 5");
    assert_distinct(&a);
    int n_below_64 = 0, n_from_256 = 0, n_odd = 0;
    for (int i = 0; i < a.n; i++) {
        long v[3];
        cr_assert_eq(sscanf(a.specs[i], "matmul:M=%ld,N=%ld,K=%ld", &v[0], &v[1], &v[2]), 3, "%s", a.specs[i]);
        for (int d = 0; d < 3; d++) {
            cr_assert(v[d] >= 16 && v[d] <= 1024, "%s", a.specs[i]);
            n_below_64 += v[d] < 64;
            n_from_256 += v[d] >= 256;
            n_odd += v[d] % 2;
        }
    }
    /* 1800 sizes: a third expected in each octave pair, half odd */
    cr_assert(n_below_64 > 480 && n_below_64 < 720, "%d below 64", n_below_64);
    cr_assert(n_from_256 > 480 && n_from_256 < 720, "%d from 256", n_from_256);
    cr_assert(n_odd > 800 && n_odd < 1000, "%d odd", n_odd);
    rlt_shape_set b = generate(o);
    assert_sets_equal(&a, &b);
    o.seed = 6;
    rlt_shape_set c = generate(o);
    int n_shared = 0;
    for (int i = 0; i < c.n; i++) n_shared += index_of(&a, c.specs[i]) >= 0;
    cr_assert_lt(n_shared, 10, "seeds 5 and 6 drew %d shapes alike", n_shared);
    /* a list: only its values */
    rlt_shape_set l = generate((rlt_shape_gen_opts){.kind = "mm-random", .dims = "17,300", .max_shapes = 4});
    cr_assert_eq(l.n, 4);
    for (int i = 0; i < l.n; i++) {
        long v[3];
        cr_assert_eq(sscanf(l.specs[i], "matmul:M=%ld,N=%ld,K=%ld", &v[0], &v[1], &v[2]), 3, "%s", l.specs[i]);
        for (int d = 0; d < 3; d++) cr_assert(v[d] == 17 || v[d] == 300, "%s", l.specs[i]);
    }
    rlt_shape_set_free(&a);
    rlt_shape_set_free(&b);
    rlt_shape_set_free(&c);
    rlt_shape_set_free(&l);
}

/* ---- refusals ---------------------------------------------------------------- */

static void expect_refused(rlt_shape_gen_opts o, const char *needle1, const char *needle2)
{
    rlt_shape_set s = {.n = 99};
    rlt_diag d = {0};
    cr_assert_eq(rlt_shape_set_generate(&o, &s, &d), RLT_STATUS_INVALID_ARGUMENT, "dims '%s' kind %s: %s", o.dims,
                 o.kind, d.message);
    cr_assert_not_null(strstr(d.message, needle1), "lacks '%s': %s", needle1, d.message);
    if (needle2) cr_assert_not_null(strstr(d.message, needle2), "lacks '%s': %s", needle2, d.message);
    cr_assert_eq(s.n, 0);
    cr_assert_null(s.specs);
    cr_assert_null(s.about);
}

Test(shapes, mm_random_refusals)
{
    expect_refused((rlt_shape_gen_opts){.kind = "mm-random", .dims = "16:1024:1"}, "needs --max-shapes", NULL);
    expect_refused((rlt_shape_gen_opts){.kind = "mm-random", .dims = "16,17", .max_shapes = 5},
                   "--max-shapes 5: --dims gives 2 values, so only 8 shapes", NULL);
    expect_refused((rlt_shape_gen_opts){.kind = "mm-random", .dims = "16", .sizes = "7", .max_shapes = 1},
                   "--sizes is for --kind conv only", NULL);
}

Test(shapes, bad_ranges_refused)
{
    struct {
        const char *dims, *needle;
    } cases[] = {
        {NULL, "empty range"},
        {"", "empty range"},
        {"  ", "empty range"},
        {"abc", "unexpected character 'a'"},
        {"64 128", "unexpected character ' '"},
        {"1e3", "unexpected character 'e'"},
        {"64.5", "unexpected character '.'"},
        {"64:", "expected LO:HI:STEP"},
        {"64:256", "expected LO:HI:STEP"},
        {"64:256:16:2", "expected LO:HI:STEP"},
        {"64:256:16,32", "expected LO:HI:STEP"},
        {":256:16", "LO is missing"},
        {"64::16", "HI is missing"},
        {"64:256:", "STEP is missing"},
        {"256:64:16", "empty range: LO 256 is above HI 64"},
        {"0", "the value is 0, but must be at least 1"},
        {"-5", "the value is -5, but must be at least 1"},
        {"0:64:16", "LO is 0, but must be at least 1"},
        {"64:256:0", "STEP is 0, but must be at least 1"},
        {"64:256:-16", "STEP is -16"},
        {"64,-1", "a list item is -1"},
        {"64,,128", "a list item is missing"},
        {"64,", "a list item is missing"},
        {",64", "a list item is missing"},
        {"--64", "is not a whole number"},
        {"-", "is not a whole number"},
        {"64,64", "lists 64 twice"},
        {"4294967296", "is too large"},
        {"99999999999999999999999", "is too large"},
        {"1:2000000:1", "2000000 values, more than 1000000"},
        {"1:200:1", "gives 200 values, so 200 x 200 x 200 shapes (M, N, K), more than 1000000"},
    };
    for (size_t c = 0; c < RLT_ARRAY_LEN(cases); c++) {
        expect_refused(mm_opts(cases[c].dims, 0.2, 0), "--dims", cases[c].needle);
        if (cases[c].dims && cases[c].dims[0]) {
            char quoted[128];
            snprintf(quoted, sizeof quoted, "'%s'", cases[c].dims);
            expect_refused(mm_opts(cases[c].dims, 0.2, 0), quoted, NULL);
        }
    }
    /* the conv ranges name their options */
    expect_refused((rlt_shape_gen_opts){.kind = "conv", .dims = "16", .sizes = "0"}, "--sizes '0'", "at least 1");
    expect_refused((rlt_shape_gen_opts){.kind = "conv", .dims = "16", .kernels = "3:1:1"}, "--kernels '3:1:1'",
                   "empty range");
    expect_refused((rlt_shape_gen_opts){.kind = "conv", .dims = "16", .kernels = "1,2,3"}, "--kernels '1,2,3'",
                   "kernel 2 is even");
    expect_refused((rlt_shape_gen_opts){.kind = "conv", .dims = "x"}, "--dims 'x'", NULL);
    expect_refused((rlt_shape_gen_opts){.kind = "conv", .dims = "1:1000:1", .sizes = "1:1000:1"},
                   "--dims '1:1000:1' --sizes '1:1000:1' --kernels '1,3' give 1000 x 1000 x 1000 x 2 shapes",
                   "more than 1000000");
}

Test(shapes, bad_options_refused)
{
    expect_refused((rlt_shape_gen_opts){.kind = "matrix", .dims = "64"}, "--kind 'matrix'", "mm (matmul), mm-random");
    expect_refused((rlt_shape_gen_opts){.kind = NULL, .dims = "64"}, "--kind ''", NULL);
    expect_refused((rlt_shape_gen_opts){.kind = "mm", .dims = "64", .sizes = "7"}, "--sizes is for --kind conv only",
                   NULL);
    expect_refused((rlt_shape_gen_opts){.kind = "mm", .dims = "64", .kernels = "3"},
                   "--kernels is for --kind conv only", NULL);
    expect_refused(mm_opts("64", 1.0, 0), "--test-fraction 1 is out of range", "not including, 1");
    expect_refused(mm_opts("64", -0.1, 0), "--test-fraction -0.1", NULL);
    expect_refused(mm_opts("64", NAN, 0), "--test-fraction", NULL);
    rlt_shape_gen_opts o = mm_opts("64", 0, 0);
    o.max_shapes = -1;
    expect_refused(o, "--max-shapes -1", NULL);
    /* a shape the op library refuses: a conv2d input over its element limit */
    expect_refused((rlt_shape_gen_opts){.kind = "conv", .dims = "2147483648", .sizes = "2147483648", .kernels = "1"},
                   "the ranges give a shape rltune refuses", "conv2d");
}

/* ---- the file ---------------------------------------------------------------- */

Test(shapes, save_load_round_trip)
{
    const char *path = tmp_path("mm.shapes");
    rlt_diag d = {0};
    rlt_shape_set s = generate(mm_opts("64:256:16", 0.2, 1));
    cr_assert_eq(rlt_shape_set_save(&s, path, &d), RLT_STATUS_OK, "%s", d.message);
    char *text = tmp_file_read(path, NULL);
    char expected_start[256];
    snprintf(expected_start, sizeof expected_start,
             "# rltune shapes v1\n# kind mm dims 64:256:16 test-fraction 0.2 seed 1\ntrain %s\n", s.specs[0]);
    cr_assert_eq(strncmp(text, expected_start, strlen(expected_start)), 0, "file starts:\n%.300s", text);
    free(text);
    rlt_shape_set back = {.n = 5};
    cr_assert_eq(rlt_shape_set_load(path, &back, &d), RLT_STATUS_OK, "%s", d.message);
    assert_sets_equal(&s, &back);
    /* saved again: the same bytes */
    const char *again = tmp_path("again.shapes");
    cr_assert_eq(rlt_shape_set_save(&back, again, &d), RLT_STATUS_OK, "%s", d.message);
    size_t n1, n2;
    char *t1 = tmp_file_read(path, &n1), *t2 = tmp_file_read(again, &n2);
    cr_assert(n1 == n2 && memcmp(t1, t2, n1) == 0);
    free(t1);
    free(t2);
    rlt_shape_set_free(&s);
    rlt_shape_set_free(&back);

    /* conv, with its subset, and a set without about */
    s = generate((rlt_shape_gen_opts){
        .kind = "conv", .dims = "16:64:16", .max_shapes = 10, .test_fraction = 0.3, .seed = 2});
    cr_assert_eq(rlt_shape_set_save(&s, path, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_shape_set_load(path, &back, &d), RLT_STATUS_OK, "%s", d.message);
    assert_sets_equal(&s, &back);
    rlt_shape_set_free(&back);
    rlt_free(s.about);
    s.about = NULL;
    cr_assert_eq(rlt_shape_set_save(&s, path, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_shape_set_load(path, &back, &d), RLT_STATUS_OK, "%s", d.message);
    assert_sets_equal(&s, &back);
    rlt_shape_set_free(&back);
    rlt_shape_set_free(&s);
    assert_no_leaks();
}

Test(shapes, load_is_lenient_with_layout)
{
    const char *path = tmp_path("hand.shapes");
    tmp_file_write_text(path, "# rltune shapes v1\r\n"
                              "# written by hand\r\n"
                              "\r\n"
                              "  # kind mm dims 8 test-fraction 0.5 seed 0\n"
                              "# kind conv: only the first such line counts\n"
                              "test\tmatmul:K=8,N=8,M=8  \r\n"
                              "   train    matmul:M=4,N=8,K=8\n"
                              "train matmul:M=8,N=4,K=8"); /* no newline at the end */
    rlt_shape_set s;
    rlt_diag d = {0};
    cr_assert_eq(rlt_shape_set_load(path, &s, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(s.n, 3);
    cr_assert_str_eq(s.specs[0], "matmul:M=8,N=8,K=8"); /* made canonical */
    cr_assert(s.is_test[0] && !s.is_test[1] && !s.is_test[2]);
    cr_assert_str_eq(s.specs[2], "matmul:M=8,N=4,K=8");
    cr_assert_str_eq(s.about, "kind mm dims 8 test-fraction 0.5 seed 0");
    cr_assert_eq(rlt_shape_set_count(&s, true), 1);
    rlt_shape_set_free(&s);

    tmp_file_write_text(path, "# rltune shapes v001\ntest matmul:M=1,N=1,K=1\n"); /* v001 is v1 */
    cr_assert_eq(rlt_shape_set_load(path, &s, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_null(s.about);
    cr_assert_eq(rlt_shape_set_count(&s, false), 0); /* a test-only set loads */
    rlt_shape_set_free(&s);
}

Test(shapes, malformed_files_refused)
{
    const char *path = tmp_path("bad.shapes");
    struct {
        const char *text, *needle;
    } cases[] = {
        {"", ":1: no header"},
        {"train matmul:M=1,N=1,K=1\n", ":1: no header: a shape dataset starts with the line '# rltune shapes v1'"},
        {"\n# rltune shapes v1\ntrain matmul:M=1,N=1,K=1\n", ":1: no header"},
        {"# rltune shapes v2\ntrain matmul:M=1,N=1,K=1\n", ":1: shape dataset format v2 is not supported"},
        {"# rltune shapes v0\ntrain matmul:M=1,N=1,K=1\n", ":1: shape dataset format v0 is not supported"},
        {"# rltune shapes v1x\n", ":1: malformed header"},
        {"# rltune shapes v\n", ":1: malformed header"},
        {"# rltune shapes v1\n", ":1: no shape in the file"},
        {"# rltune shapes v1\n# kind mm\n\n", ":3: no shape in the file"},
        {"# rltune shapes v1\ntrain\n", ":2: expected 'train SPEC' or 'test SPEC'"},
        {"# rltune shapes v1\ntraining matmul:M=1,N=1,K=1\n", ":2: expected 'train SPEC'"},
        {"# rltune shapes v1\nTRAIN matmul:M=1,N=1,K=1\n", ":2: expected 'train SPEC'"},
        {"# rltune shapes v1\nmatmul:M=1,N=1,K=1\n", ":2: expected 'train SPEC'"},
        {"# rltune shapes v1\ntrain matmul:M=1,N=1,K=1 test\n", ":2: expected 'train SPEC'"},
        {"# rltune shapes v1\n# c\n\ntrain matmul:M=1,N=1,K=1\nvalid matmul:M=2,N=1,K=1\n", ":5: expected"},
        {"# rltune shapes v1\ntrain matmul:M=0,N=1,K=1\n", ":2: op spec 'matmul:M=0,N=1,K=1'"},
        {"# rltune shapes v1\ntest matmul:M=1,N=1\n", ":2: op spec"},
        {"# rltune shapes v1\ntest nosuch:M=1\n", ":2: "},
        {"# rltune shapes v1\ntrain matmul:M=1,N=2,K=3\ntest matmul:K=3,N=2,M=1\n",
         ":3: shape matmul:M=1,N=2,K=3 is listed twice (first at line 2)"},
        {"# rltune shapes v1\ntrain matmul:M=1,N=2,K=3\ntrain matmul:M=2,N=2,K=3\ntrain matmul:M=1,N=2,K=3\n",
         ":4: shape matmul:M=1,N=2,K=3 is listed twice (first at line 2)"},
    };
    for (size_t c = 0; c < RLT_ARRAY_LEN(cases); c++) {
        tmp_file_write_text(path, cases[c].text);
        rlt_shape_set s = {.n = 7};
        rlt_diag d = {0};
        cr_assert_eq(rlt_shape_set_load(path, &s, &d), RLT_STATUS_PARSE_ERROR, "case %zu: %s", c, d.message);
        char needle[512];
        snprintf(needle, sizeof needle, "%s%s", path, cases[c].needle);
        cr_assert_not_null(strstr(d.message, needle), "case %zu lacks '%s': %s", c, needle, d.message);
        cr_assert_eq(s.n, 0);
        cr_assert_null(s.specs);
    }
    /* a duplicate among many: found by the hash table as it grows */
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "# rltune shapes v1\n");
    for (int i = 1; i <= 500; i++) fprintf(f, "train matmul:M=%d,N=1,K=1\n", i);
    fprintf(f, "test matmul:M=321,N=1,K=1\n");
    fclose(f);
    rlt_shape_set s;
    rlt_diag d = {0};
    cr_assert_eq(rlt_shape_set_load(path, &s, &d), RLT_STATUS_PARSE_ERROR);
    cr_assert_not_null(strstr(d.message, ":502: shape matmul:M=321,N=1,K=1 is listed twice (first at line 322)"),
                       "%s", d.message);
    assert_no_leaks();
}

Test(shapes, nul_byte_and_missing_file_refused)
{
    const char *path = tmp_path("nul.shapes");
    static const char text[] = "# rltune shapes v1\ntrain matmul:M=1,N=1,K=1\0\ntest matmul:M=2,N=1,K=1\n";
    tmp_file_write(path, text, sizeof text - 1);
    rlt_shape_set s = {.n = 3};
    rlt_diag d = {0};
    cr_assert_eq(rlt_shape_set_load(path, &s, &d), RLT_STATUS_PARSE_ERROR, "%s", d.message);
    cr_assert_not_null(strstr(d.message, path), "%s", d.message);
    cr_assert_not_null(strstr(d.message, "NUL"), "%s", d.message);
    cr_assert_eq(s.n, 0);
    const char *missing = tmp_path("missing.shapes");
    d = (rlt_diag){0};
    cr_assert_eq(rlt_shape_set_load(missing, &s, &d), RLT_STATUS_IO_ERROR, "%s", d.message);
    cr_assert_not_null(strstr(d.message, missing), "%s", d.message);
}

Test(shapes, save_refusals)
{
    rlt_diag d = {0};
    rlt_shape_set empty = {0};
    cr_assert_eq(rlt_shape_set_save(&empty, tmp_path("e.shapes"), &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(d.message, "at least one shape"), "%s", d.message);
    rlt_shape_set s = generate(mm_opts("8", 0, 0));
    const char *nowhere = tmp_path("no/such/dir/x.shapes");
    d = (rlt_diag){0};
    cr_assert_eq(rlt_shape_set_save(&s, nowhere, &d), RLT_STATUS_IO_ERROR, "%s", d.message);
    cr_assert_not_null(strstr(d.message, nowhere), "%s", d.message);
    char *spec = s.specs[0];
    s.specs[0] = "matmul:M=8, N=8,K=8";
    d = (rlt_diag){0};
    cr_assert_eq(rlt_shape_set_save(&s, tmp_path("b.shapes"), &d), RLT_STATUS_INVALID_ARGUMENT);
    s.specs[0] = spec;
    char *about = s.about;
    s.about = "two\nlines";
    d = (rlt_diag){0};
    cr_assert_eq(rlt_shape_set_save(&s, tmp_path("b.shapes"), &d), RLT_STATUS_INVALID_ARGUMENT);
    s.about = about;
    rlt_shape_set_free(&s);
}

/* ---- running out of memory -------------------------------------------------- */

Test(shapes, out_of_memory_everywhere)
{
    const char *path = tmp_path("oom.shapes");
    rlt_shape_set ref = generate((rlt_shape_gen_opts){.kind = "conv", .dims = "4,8", .sizes = "7", .max_shapes = 6,
                                                     .test_fraction = 0.5, .seed = 1});
    rlt_diag d = {0};
    cr_assert_eq(rlt_shape_set_save(&ref, path, &d), RLT_STATUS_OK, "%s", d.message);
    bool is_done[3] = {false, false, false};
    for (long k = 1; k < 100000 && !(is_done[0] && is_done[1] && is_done[2]); k++) {
        rlt_shape_set s;
        rlt_status st[3];
        rlt_alloc_fail_after(k);
        st[0] = rlt_shape_set_generate(&(rlt_shape_gen_opts){.kind = "conv", .dims = "4,8", .sizes = "7",
                                                             .max_shapes = 6, .test_fraction = 0.5, .seed = 1},
                                       &s, &d);
        rlt_alloc_fail_after(0);
        if (st[0] == RLT_STATUS_OK) assert_sets_equal(&ref, &s);
        rlt_shape_set_free(&s);
        rlt_alloc_fail_after(k);
        st[1] = rlt_shape_set_load(path, &s, &d);
        rlt_alloc_fail_after(0);
        if (st[1] == RLT_STATUS_OK) assert_sets_equal(&ref, &s);
        rlt_shape_set_free(&s);
        rlt_alloc_fail_after(k);
        st[2] = rlt_shape_set_save(&ref, tmp_path("oom2.shapes"), &d);
        rlt_alloc_fail_after(0);
        for (int i = 0; i < 3; i++) {
            cr_assert(st[i] == RLT_STATUS_OK || st[i] == RLT_STATUS_OUT_OF_MEMORY, "call %d, allocation %ld: %s: %s",
                      i, k, rlt_status_str(st[i]), d.message);
            is_done[i] |= st[i] == RLT_STATUS_OK;
        }
    }
    cr_assert(is_done[0] && is_done[1] && is_done[2]);
    rlt_shape_set_free(&ref);
    assert_no_leaks();
}
