/*
 * shapes.c - shape datasets (shapes.h): generating the shapes of
 * `rltune gen-dataset` from ranges, with a seeded subset and a seeded
 * train / test split, and the dataset file (docs/formats.md, "Shape
 * datasets"), written atomically and read back with file:line messages.
 *
 *   rlt_shape_set_generate   ranges -> canonical op specs, split (mm-random,
 *                            dense-random, bmm-random: M, N, K drawn
 *                            log-uniformly from the range)
 *   rlt_shape_set_save       the set -> "# rltune shapes v1" text
 *   rlt_shape_set_load       and back, refusing malformed files
 */
#include "policy/shapes.h"

#include "ir/ir.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHAPES_HEADER "# rltune shapes v"
#define SHAPES_VERSION 1
#define DEFAULT_SIZES "7,14,28,56"
#define DEFAULT_KERNELS "1,3"
#define RANGE_HELP                                                                                         \
    "a range is LO:HI:STEP (e.g. 64:256:16), a value N, or a list A,B,C, of whole numbers from 1 to " \
    "2147483648"

void rlt_shape_set_free(rlt_shape_set *s)
{
    if (!s) return;
    for (int i = 0; i < s->n; i++) rlt_free(s->specs[i]);
    rlt_free(s->specs);
    rlt_free(s->is_test);
    rlt_free(s->about);
    *s = (rlt_shape_set){0};
}

int rlt_shape_set_count(const rlt_shape_set *s, bool is_test)
{
    int n = 0;
    for (int i = 0; i < s->n; i++) n += s->is_test[i] == is_test;
    return n;
}

/* ---- ranges -------------------------------------------------------------- */

/* The values of one range, ascending and distinct. */
typedef struct range {
    int64_t *values; /* owned */
    int n;
} range;

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* One whole number, item[0 .. len-1], of the range `text` given to
 * `option`, in 1..RLT_MAX_EXTENT; `what` names it in the message ("LO",
 * "a list item"). */
static rlt_status parse_value(const char *option, const char *text, const char *item, size_t len, const char *what,
                              int64_t *out, rlt_diag *diag)
{
    int shown = (int)RLT_MIN(len, 32);
    if (len == 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s '%.64s': %s is missing; " RANGE_HELP, option, text,
                        what);
    bool is_negative = item[0] == '-';
    size_t start = is_negative ? 1 : 0;
    bool is_number = len > start;
    int64_t v = 0;
    for (size_t i = start; i < len && is_number; i++) {
        is_number = item[i] >= '0' && item[i] <= '9';
        if (v <= RLT_MAX_EXTENT) v = v * 10 + (item[i] - '0'); /* saturates above the limit */
    }
    if (!is_number)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s '%.64s': %s '%.*s' is not a whole number; " RANGE_HELP,
                        option, text, what, shown, item);
    if (is_negative || v == 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "%s '%.64s': %s is %.*s, but must be at least 1; " RANGE_HELP, option, text, what, shown,
                        item);
    if (v > RLT_MAX_EXTENT)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s '%.64s': %s %.*s is too large; " RANGE_HELP, option,
                        text, what, shown, item);
    *out = v;
    return RLT_STATUS_OK;
}

/* Parses "LO:HI:STEP", "N" or "A,B,C" into r (ascending, distinct). */
static rlt_status range_parse(const char *option, const char *text, range *r, rlt_diag *diag)
{
    *r = (range){0};
    if (!text || text[strspn(text, " \t")] == '\0')
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s '%.64s': empty range; " RANGE_HELP, option,
                        text ? text : "");
    size_t n_ok = strspn(text, "0123456789:,-");
    if (text[n_ok] != '\0') {
        unsigned char c = (unsigned char)text[n_ok];
        char shown[8];
        snprintf(shown, sizeof shown, c >= 0x20 && c < 0x7f ? "'%c'" : "0x%02x", c);
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s '%.64s': unexpected character %s; " RANGE_HELP,
                        option, text, shown);
    }
    const char *colon = strchr(text, ':');
    if (colon) {
        const char *colon2 = strchr(colon + 1, ':');
        if (!colon2 || strchr(colon2 + 1, ':') || strchr(text, ','))
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "%s '%.64s': malformed range: expected LO:HI:STEP, three numbers; %s", option, text,
                            RANGE_HELP);
        int64_t lo, hi, step;
        rlt_status st = parse_value(option, text, text, (size_t)(colon - text), "LO", &lo, diag);
        if (st == RLT_STATUS_OK)
            st = parse_value(option, text, colon + 1, (size_t)(colon2 - colon - 1), "HI", &hi, diag);
        if (st == RLT_STATUS_OK) st = parse_value(option, text, colon2 + 1, strlen(colon2 + 1), "STEP", &step, diag);
        if (st != RLT_STATUS_OK) return st;
        if (lo > hi)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "%s '%.64s': empty range: LO %" PRId64 " is above HI %" PRId64 "; %s", option, text, lo,
                            hi, RANGE_HELP);
        int64_t n = (hi - lo) / step + 1;
        if (n > RLT_SHAPES_MAX)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "%s '%.64s': %" PRId64 " values, more than %d; raise STEP or narrow the range", option,
                            text, n, RLT_SHAPES_MAX);
        r->values = rlt_malloc((size_t)n * sizeof *r->values);
        if (!r->values) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory expanding %s", option);
        for (int64_t i = 0; i < n; i++) r->values[i] = lo + i * step;
        r->n = (int)n;
        return RLT_STATUS_OK;
    }
    int n_items = 1;
    for (const char *p = text; *p; p++) n_items += *p == ',';
    if (n_items > RLT_SHAPES_MAX)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s: a list of %d values, more than %d", option, n_items,
                        RLT_SHAPES_MAX);
    r->values = rlt_malloc((size_t)n_items * sizeof *r->values);
    if (!r->values) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", option);
    const char *p = text;
    for (int i = 0; i < n_items; i++) {
        size_t len = strcspn(p, ",");
        rlt_status st = parse_value(option, text, p, len, n_items == 1 ? "the value" : "a list item", &r->values[i],
                                    diag);
        if (st != RLT_STATUS_OK) {
            rlt_free(r->values);
            *r = (range){0};
            return st;
        }
        p += len + 1;
    }
    qsort(r->values, (size_t)n_items, sizeof *r->values, cmp_i64);
    for (int i = 1; i < n_items; i++) {
        if (r->values[i] != r->values[i - 1]) continue;
        int64_t twice = r->values[i];
        rlt_free(r->values);
        *r = (range){0};
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "%s '%.64s': lists %" PRId64 " twice; give each value once", option, text, twice);
    }
    r->n = n_items;
    return RLT_STATUS_OK;
}

/* ---- generating ---------------------------------------------------------- */

/* The shortest decimal text that reads back as x. */
static void format_double(char *buf, size_t size, double x)
{
    for (int precision = 1; precision <= 17; precision++) {
        snprintf(buf, size, "%.*g", precision, x);
        if (strtod(buf, NULL) == x) return;
    }
}

/* The about line of a generated set (without "# "); NULL when out of
 * memory. */
static char *about_text(const rlt_shape_gen_opts *o, bool is_conv, const char *sizes, const char *kernels)
{
    rlt_str s;
    rlt_str_init(&s);
    rlt_str_printf(&s, "kind %s dims %s", o->kind, o->dims);
    if (is_conv) rlt_str_printf(&s, " sizes %s kernels %s", sizes, kernels);
    if (o->max_shapes > 0) rlt_str_printf(&s, " max-shapes %d", o->max_shapes);
    char fraction[32];
    format_double(fraction, sizeof fraction, o->test_fraction);
    rlt_str_printf(&s, " test-fraction %s seed %" PRIu64, fraction, o->seed);
    return rlt_str_take(&s);
}

/* The canonical form of a spec the generator wrote (rlt_op_parse's), into
 * *out (owned); INVALID_ARGUMENT when rltune refuses the shape. */
static rlt_status canonical_spec(const char *spec, char **out, rlt_diag *diag)
{
    rlt_op *op = NULL;
    rlt_status st = rlt_op_parse(spec, &op, diag);
    if (st != RLT_STATUS_OK) {
        rlt_diag_prefix(diag, "the ranges give a shape rltune refuses");
        return st == RLT_STATUS_OUT_OF_MEMORY ? st : RLT_STATUS_INVALID_ARGUMENT;
    }
    *out = rlt_strdup(op->spec);
    rlt_op_destroy(op);
    if (!*out) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory generating shapes");
    return RLT_STATUS_OK;
}

/* The canonical spec of combination `index` (mixed radix over the ranges,
 * the last one fastest). */
static rlt_status combination_spec(bool is_conv, const range *ranges, int n_ranges, int64_t index, char **out,
                                   rlt_diag *diag)
{
    int64_t v[4];
    for (int i = n_ranges - 1; i >= 0; i--) {
        v[i] = ranges[i].values[index % ranges[i].n];
        index /= ranges[i].n;
    }
    char spec[256];
    if (is_conv)
        snprintf(spec, sizeof spec,
                 "conv2d:N=1,C=%" PRId64 ",H=%" PRId64 ",W=%" PRId64 ",K=%" PRId64 ",R=%" PRId64 ",S=%" PRId64
                 ",stride=1,pad=%" PRId64,
                 v[0], v[1], v[1], v[2], v[3], v[3], v[3] / 2);
    else
        snprintf(spec, sizeof spec, "matmul:M=%" PRId64 ",N=%" PRId64 ",K=%" PRId64, v[0], v[1], v[2]);
    return canonical_spec(spec, out, diag);
}

/* Marks k of the n flags true, chosen uniformly by rng (a partial
 * Fisher-Yates shuffle of the indices). */
static rlt_status choose_k(rlt_rng *rng, int n, int k, bool *chosen, rlt_diag *diag)
{
    int *idx = rlt_malloc((size_t)n * sizeof *idx);
    if (!idx && n > 0) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory drawing shapes");
    for (int i = 0; i < n; i++) {
        idx[i] = i;
        chosen[i] = false;
    }
    for (int i = 0; i < k; i++) {
        int j = i + (int)rlt_rng_below(rng, (uint64_t)(n - i));
        int t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
        chosen[idx[i]] = true;
    }
    rlt_free(idx);
    return RLT_STATUS_OK;
}

/* The most shapes a random kind draws (each is checked against those
 * before it). */
#define RANDOM_MAX_SHAPES 100000

/* A value of r drawn log-uniformly: exp of a uniform number between
 * log(first) and log(last + 1), floored, then the first value of r at or
 * above it. With a range of step 1 every size is as likely as any other
 * of its octave: a third of 16..1024 lies below 64 (thin and tall
 * matmuls), half of the sizes are odd and about one in six prime. */
static int64_t draw_log_uniform(rlt_rng *rng, const range *r)
{
    double lo = log((double)r->values[0]), hi = log((double)r->values[r->n - 1] + 1.0);
    int64_t x = (int64_t)floor(exp(lo + (hi - lo) * rlt_rng_uniform(rng)));
    int a = 0, b = r->n - 1; /* the first value >= x; the last when none is */
    while (a < b) {
        int mid = a + (b - a) / 2;
        if (r->values[mid] < x) a = mid + 1;
        else b = mid;
    }
    return r->values[a];
}

/* The kinds that draw shapes: the op, and what each draws besides M, N, K
 * (v[3]): nothing (matmul), the epilogue (dense: bias and relu, each on or
 * off, as bits 0 and 1) or the batch (batch_matmul: log-uniform in
 * 2..RANDOM_MAX_BATCH). */
typedef enum random_kind { RANDOM_NONE, RANDOM_MM, RANDOM_DENSE, RANDOM_BMM } random_kind;
#define RANDOM_MAX_BATCH 16

static random_kind random_kind_of(const char *kind)
{
    return strcmp(kind, "mm-random") == 0      ? RANDOM_MM
           : strcmp(kind, "dense-random") == 0 ? RANDOM_DENSE
           : strcmp(kind, "bmm-random") == 0   ? RANDOM_BMM
                                               : RANDOM_NONE;
}

/* The random kinds: n distinct (M, N, K, extra) drawn by rng, M, N and K
 * each from r (draw_log_uniform), into v[4 * i ..]. matmul draws nothing
 * more, so its shapes are those drawn before dense and batch_matmul were
 * added. */
static rlt_status draw_random_shapes(rlt_rng *rng, random_kind kind, const range *r, int n, int64_t *v,
                                     rlt_diag *diag)
{
    double n_distinct = (double)r->n * r->n * r->n;
    if (n_distinct < 2.0 * n)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "--max-shapes %d: --dims gives %d values, so only %.0f shapes (M, N, K); draw at most half "
                        "of them or widen the range",
                        n, r->n, n_distinct);
    int64_t batches[RANDOM_MAX_BATCH - 1];
    for (int b = 0; b < RANDOM_MAX_BATCH - 1; b++) batches[b] = b + 2;
    range batch = {.values = batches, .n = RANDOM_MAX_BATCH - 1};
    for (int i = 0; i < n; i++) {
        bool is_new = false;
        while (!is_new) { /* at most half of the (M, N, K) are taken, so this ends */
            for (int d = 0; d < 3; d++) v[4 * i + d] = draw_log_uniform(rng, r);
            v[4 * i + 3] = kind == RANDOM_DENSE ? (int64_t)rlt_rng_below(rng, 4)
                           : kind == RANDOM_BMM ? draw_log_uniform(rng, &batch)
                                                : 0;
            is_new = true;
            for (int j = 0; j < i && is_new; j++)
                is_new = memcmp(&v[4 * j], &v[4 * i], 3 * sizeof *v) != 0;
        }
    }
    return RLT_STATUS_OK;
}

/* The canonical spec of the drawn shape v (draw_random_shapes). */
static rlt_status random_spec(random_kind kind, const int64_t *v, char **out, rlt_diag *diag)
{
    char spec[256];
    if (kind == RANDOM_DENSE)
        snprintf(spec, sizeof spec, "dense:M=%" PRId64 ",N=%" PRId64 ",K=%" PRId64 ",bias=%d,relu=%d", v[0], v[1],
                 v[2], (int)(v[3] & 1), (int)(v[3] >> 1));
    else if (kind == RANDOM_BMM)
        snprintf(spec, sizeof spec, "batch_matmul:B=%" PRId64 ",M=%" PRId64 ",N=%" PRId64 ",K=%" PRId64, v[3], v[0],
                 v[1], v[2]);
    else
        snprintf(spec, sizeof spec, "matmul:M=%" PRId64 ",N=%" PRId64 ",K=%" PRId64, v[0], v[1], v[2]);
    return canonical_spec(spec, out, diag);
}

rlt_status rlt_shape_set_generate(const rlt_shape_gen_opts *opts, rlt_shape_set *out, rlt_diag *diag)
{
    *out = (rlt_shape_set){0};
    range ranges[4] = {{0}};
    bool *is_chosen = NULL, *is_test = NULL;
    int64_t *chosen = NULL;
    rlt_shape_set s = {0};
    rlt_status st = RLT_STATUS_OK;
    bool is_conv = false, is_random = false;
    random_kind rkind = RANDOM_NONE;
    const char *sizes = opts->sizes ? opts->sizes : DEFAULT_SIZES;
    const char *kernels = opts->kernels ? opts->kernels : DEFAULT_KERNELS;

    if (!opts->kind || (strcmp(opts->kind, "mm") != 0 && random_kind_of(opts->kind) == RANDOM_NONE &&
                        strcmp(opts->kind, "conv") != 0)) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "--kind '%.64s' is not a kind of shape dataset; expected mm (matmul), mm-random (matmul, "
                      "sizes drawn), dense-random, bmm-random (batch_matmul) or conv (conv2d)",
                      opts->kind ? opts->kind : "");
        goto cleanup;
    }
    is_conv = strcmp(opts->kind, "conv") == 0;
    rkind = random_kind_of(opts->kind);
    is_random = rkind != RANDOM_NONE;
    if (!is_conv && (opts->sizes || opts->kernels)) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "%s is for --kind conv only: --kind mm takes M, N and K from --dims",
                      opts->sizes ? "--sizes" : "--kernels");
        goto cleanup;
    }
    if (is_random && (opts->max_shapes < 1 || opts->max_shapes > RANDOM_MAX_SHAPES)) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "--kind %s needs --max-shapes, the number of shapes to draw, from 1 to %d", opts->kind,
                      RANDOM_MAX_SHAPES);
        goto cleanup;
    }
    if (!(opts->test_fraction >= 0.0 && opts->test_fraction < 1.0)) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "--test-fraction %g is out of range; expected a number from 0 up to, but not including, 1",
                      opts->test_fraction);
        goto cleanup;
    }
    if (opts->max_shapes < 0) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "--max-shapes %d is negative; expected a number of shapes >= 1 (or 0 for all)",
                      opts->max_shapes);
        goto cleanup;
    }
    /* The ranges in the order of the spec's keys: mm M, N, K; conv C, H (= W),
     * K, R (= S). */
    int n_ranges = 3;
    if ((st = range_parse("--dims", opts->dims, &ranges[0], diag)) != RLT_STATUS_OK) goto cleanup;
    if (is_conv) {
        n_ranges = 4;
        if ((st = range_parse("--sizes", sizes, &ranges[1], diag)) != RLT_STATUS_OK) goto cleanup;
        if ((st = range_parse("--kernels", kernels, &ranges[3], diag)) != RLT_STATUS_OK) goto cleanup;
        for (int i = 0; i < ranges[3].n; i++) {
            if (ranges[3].values[i] % 2 == 1) continue;
            st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                          "--kernels '%.64s': kernel %" PRId64 " is even; 'same' padding (pad = R/2) keeps the "
                          "size only for odd kernels, e.g. 1,3,5",
                          kernels, ranges[3].values[i]);
            goto cleanup;
        }
    } else {
        ranges[1] = ranges[0]; /* borrowed: freed once, as ranges[0] */
    }
    ranges[2] = ranges[0];
    if (is_random) {
        rlt_rng rng;
        rlt_rng_seed(&rng, opts->seed);
        int n = opts->max_shapes;
        chosen = rlt_malloc((size_t)n * 4 * sizeof *chosen);
        is_test = rlt_malloc((size_t)n * sizeof *is_test);
        s.specs = rlt_calloc((size_t)n, sizeof *s.specs);
        s.is_test = rlt_malloc((size_t)n * sizeof *s.is_test);
        if (!chosen || !is_test || !s.specs || !s.is_test) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory generating %d shapes", n);
            goto cleanup;
        }
        if ((st = draw_random_shapes(&rng, rkind, &ranges[0], n, chosen, diag)) != RLT_STATUS_OK) goto cleanup;
        int n_test = (int)floor((double)n * opts->test_fraction + 0.5);
        if ((st = choose_k(&rng, n, n_test, is_test, diag)) != RLT_STATUS_OK) goto cleanup;
        /* The train part, then the test part, each in the order drawn. */
        for (int part = 0; part < 2; part++) {
            for (int i = 0; i < n; i++) {
                if (is_test[i] != (part == 1)) continue;
                if ((st = random_spec(rkind, &chosen[4 * i], &s.specs[s.n], diag)) != RLT_STATUS_OK) goto cleanup;
                s.is_test[s.n++] = part == 1;
            }
        }
        goto done;
    }
    int64_t n_total = 1;
    bool is_over = false;
    for (int i = 0; i < n_ranges; i++) {
        n_total *= ranges[i].n; /* each at most RLT_SHAPES_MAX: no overflow before the check */
        is_over |= n_total > RLT_SHAPES_MAX;
        if (is_over) n_total = RLT_SHAPES_MAX + 1;
    }
    if (is_over) {
        if (is_conv)
            st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                          "--dims '%.64s' --sizes '%.64s' --kernels '%.64s' give %d x %d x %d x %d shapes (C, H, K, "
                          "R), more than %d; narrow the ranges or raise their STEP",
                          opts->dims, sizes, kernels, ranges[0].n, ranges[1].n, ranges[2].n, ranges[3].n,
                          RLT_SHAPES_MAX);
        else
            st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                          "--dims '%.64s' gives %d values, so %d x %d x %d shapes (M, N, K), more than %d; narrow "
                          "the range or raise its STEP",
                          opts->dims, ranges[0].n, ranges[0].n, ranges[0].n, ranges[0].n, RLT_SHAPES_MAX);
        goto cleanup;
    }

    rlt_rng rng;
    rlt_rng_seed(&rng, opts->seed);
    int n = opts->max_shapes > 0 && opts->max_shapes < n_total ? opts->max_shapes : (int)n_total;
    is_chosen = rlt_malloc((size_t)n_total * sizeof *is_chosen);
    chosen = rlt_malloc((size_t)n * sizeof *chosen);
    is_test = rlt_malloc((size_t)n * sizeof *is_test);
    s.specs = rlt_calloc((size_t)n, sizeof *s.specs);
    s.is_test = rlt_malloc((size_t)n * sizeof *s.is_test);
    if (!is_chosen || !chosen || !is_test || !s.specs || !s.is_test) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory generating %d shapes", n);
        goto cleanup;
    }
    if ((st = choose_k(&rng, (int)n_total, n, is_chosen, diag)) != RLT_STATUS_OK) goto cleanup;
    for (int64_t i = 0, k = 0; i < n_total; i++)
        if (is_chosen[i]) chosen[k++] = i;
    int n_test = (int)floor((double)n * opts->test_fraction + 0.5);
    if ((st = choose_k(&rng, n, n_test, is_test, diag)) != RLT_STATUS_OK) goto cleanup;
    /* The train part, then the test part, each in the combinations' order. */
    for (int part = 0; part < 2; part++) {
        for (int i = 0; i < n; i++) {
            if (is_test[i] != (part == 1)) continue;
            st = combination_spec(is_conv, ranges, n_ranges, chosen[i], &s.specs[s.n], diag);
            if (st != RLT_STATUS_OK) goto cleanup;
            s.is_test[s.n++] = part == 1;
        }
    }
done:
    s.about = about_text(opts, is_conv, sizes, kernels);
    if (!s.about) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory generating shapes");
        goto cleanup;
    }
    *out = s;
    s = (rlt_shape_set){0};
cleanup:
    rlt_shape_set_free(&s);
    rlt_free(is_test);
    rlt_free(chosen);
    rlt_free(is_chosen);
    rlt_free(ranges[3].values);
    if (is_conv) rlt_free(ranges[1].values);
    rlt_free(ranges[0].values);
    return st;
}

/* ---- the file ------------------------------------------------------------ */

rlt_status rlt_shape_set_save(const rlt_shape_set *s, const char *path, rlt_diag *diag)
{
    if (s->n <= 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s: a shape dataset needs at least one shape", path);
    if (s->about && strpbrk(s->about, "\r\n"))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s: the about text must be one line", path);
    for (int i = 0; i < s->n; i++)
        if (!s->specs[i][0] || strpbrk(s->specs[i], " \t\r\n#"))
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "%s: shape %d '%.64s' is not an op spec (empty, or holds a blank or '#')", path, i + 1,
                            s->specs[i]);
    rlt_str text;
    rlt_str_init(&text);
    rlt_str_printf(&text, SHAPES_HEADER "%d\n", SHAPES_VERSION);
    if (s->about) rlt_str_printf(&text, "# %s\n", s->about);
    for (int i = 0; i < s->n; i++) rlt_str_printf(&text, "%s %s\n", s->is_test[i] ? "test" : "train", s->specs[i]);
    if (text.has_failed) {
        rlt_str_free(&text);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory writing %s", path);
    }
    rlt_status st = rlt_file_write(path, text.data, text.len, diag);
    rlt_str_free(&text);
    return st;
}

/* An open-addressing table of the specs read so far (indices into the set),
 * to find a shape listed twice. */
typedef struct spec_table {
    int *slots; /* -1: empty; owned */
    size_t n_slots; /* a power of two, at least twice the entries */
} spec_table;

/* The slot of `spec` in t: where it is, or the empty slot it would take. */
static size_t table_find(const spec_table *t, char *const *specs, const char *spec)
{
    size_t mask = t->n_slots - 1;
    size_t i = (size_t)rlt_hash_str(RLT_HASH_SEED, spec) & mask;
    while (t->slots[i] >= 0 && strcmp(specs[t->slots[i]], spec) != 0) i = (i + 1) & mask;
    return i;
}

/* Doubles the table; false when out of memory. */
static bool table_grow(spec_table *t, char *const *specs, int n_entries)
{
    size_t n_slots = t->n_slots ? t->n_slots * 2 : 64;
    int *slots = rlt_malloc(n_slots * sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < n_slots; i++) slots[i] = -1;
    rlt_free(t->slots);
    *t = (spec_table){.slots = slots, .n_slots = n_slots};
    for (int e = 0; e < n_entries; e++) t->slots[table_find(t, specs, specs[e])] = e;
    return true;
}

/* Checks the first line, the header. */
static rlt_status check_header(const char *path, const char *line, rlt_diag *diag)
{
    size_t n = strlen(SHAPES_HEADER);
    if (strncmp(line, SHAPES_HEADER, n) != 0)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "%s:1: no header: a shape dataset starts with the line '" SHAPES_HEADER "%d', got '%.64s'",
                        path, SHAPES_VERSION, line);
    const char *v = line + n;
    size_t n_digits = strspn(v, "0123456789");
    if (n_digits == 0 || v[n_digits] != '\0')
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "%s:1: malformed header '%.64s'; expected '" SHAPES_HEADER "%d'", path, line, SHAPES_VERSION);
    size_t n_zeros = strspn(v, "0");
    if (!(n_digits == n_zeros + 1 && v[n_zeros] == '0' + SHAPES_VERSION))
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "%s:1: shape dataset format v%.*s is not supported (this rltune reads v%d)", path,
                        (int)RLT_MIN(n_digits, 20), v, SHAPES_VERSION);
    return RLT_STATUS_OK;
}

/* Adds one "train SPEC" / "test SPEC" line to s. */
static rlt_status add_line(const char *path, int line_no, char *line, rlt_shape_set *s, int *cap, spec_table *t,
                           int *first_line, rlt_diag *diag)
{
    size_t word_len = strcspn(line, " \t");
    bool is_test = word_len == 4 && strncmp(line, "test", 4) == 0;
    bool is_train = word_len == 5 && strncmp(line, "train", 5) == 0;
    char *spec = line + word_len;
    spec += strspn(spec, " \t");
    if ((!is_test && !is_train) || spec == line + word_len || !*spec || strpbrk(spec, " \t"))
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "%s:%d: expected 'train SPEC' or 'test SPEC' (an op spec, e.g. train matmul:M=64,N=64,K=64), "
                        "got '%.64s'",
                        path, line_no, line);
    rlt_op *op = NULL;
    rlt_status st = rlt_op_parse(spec, &op, diag);
    if (st != RLT_STATUS_OK) {
        rlt_diag_prefix(diag, "%s:%d", path, line_no);
        return st == RLT_STATUS_OUT_OF_MEMORY ? st : RLT_STATUS_PARSE_ERROR;
    }
    if ((size_t)s->n * 2 >= t->n_slots && !table_grow(t, s->specs, s->n)) {
        rlt_op_destroy(op);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", path);
    }
    size_t slot = table_find(t, s->specs, op->spec);
    if (t->slots[slot] >= 0) {
        int first = first_line[t->slots[slot]];
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s:%d: shape %s is listed twice (first at line %d); list each "
                      "shape once", path, line_no, op->spec, first);
        rlt_op_destroy(op);
        return st;
    }
    if (s->n == *cap) {
        int new_cap = *cap ? *cap * 2 : 64;
        char **specs = rlt_realloc(s->specs, (size_t)new_cap * sizeof *specs);
        if (specs) s->specs = specs;
        bool *flags = specs ? rlt_realloc(s->is_test, (size_t)new_cap * sizeof *flags) : NULL;
        if (flags) s->is_test = flags;
        if (!specs || !flags) {
            rlt_op_destroy(op);
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", path);
        }
        *cap = new_cap;
    }
    s->specs[s->n] = rlt_strdup(op->spec);
    rlt_op_destroy(op);
    if (!s->specs[s->n]) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", path);
    s->is_test[s->n] = is_test;
    first_line[s->n] = line_no;
    t->slots[slot] = s->n;
    s->n++;
    return RLT_STATUS_OK;
}

rlt_status rlt_shape_set_load(const char *path, rlt_shape_set *out, rlt_diag *diag)
{
    *out = (rlt_shape_set){0};
    char *text = NULL;
    rlt_shape_set s = {0};
    spec_table table = {0};
    int *first_line = NULL;
    int cap = 0, line_no = 0;
    rlt_status st = rlt_text_file_read(path, &text, diag);
    if (st != RLT_STATUS_OK) goto cleanup;
    /* Lines never outnumber the newlines plus one. */
    size_t n_lines = 1;
    for (const char *c = text; *c; c++) n_lines += *c == '\n';
    first_line = rlt_malloc(n_lines * sizeof *first_line);
    if (!first_line) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", path);
        goto cleanup;
    }
    char *p = text;
    while (*p || line_no == 0) {
        line_no++;
        char *line = p;
        size_t len = strcspn(line, "\n");
        p = line[len] ? line + len + 1 : line + len;
        while (len > 0 && strchr(" \t\r", line[len - 1])) len--;
        line[len] = '\0';
        if (line_no == 1) {
            if ((st = check_header(path, line, diag)) != RLT_STATUS_OK) goto cleanup;
            continue;
        }
        line += strspn(line, " \t");
        if (!*line) continue;
        if (*line == '#') {
            if (!s.about && strncmp(line, "# kind ", 7) == 0 && !(s.about = rlt_strdup(line + 2))) {
                st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading %s", path);
                goto cleanup;
            }
            continue;
        }
        if ((st = add_line(path, line_no, line, &s, &cap, &table, first_line, diag)) != RLT_STATUS_OK) goto cleanup;
    }
    if (s.n == 0) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "%s:%d: no shape in the file; expected lines 'train SPEC' or 'test SPEC' after the header", path,
                      line_no);
        goto cleanup;
    }
    *out = s;
    s = (rlt_shape_set){0};
cleanup:
    rlt_free(table.slots);
    rlt_free(first_line);
    rlt_shape_set_free(&s);
    rlt_free(text);
    return st;
}
