/* Unit tests of knob spaces and configuration measurers (rltune/space.h)
 * through the public headers alone: a small matmul's space (knobs and
 * their choices, the size, keys read back, validity and its reasons, the
 * median, the nearest valid configuration); live measurement of a few
 * configurations, read back from the records the second time; a tiny
 * dataset (rlt_dataset_measure) replayed: the dataset's GFLOP/s exactly,
 * and a configuration it lacks reported absent. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <rltune.h>
#include <rltune/space.h>

#include "../common/tmp.h"

static char temp_dir[] = "/tmp/rlt_knobs_XXXXXX";

TestSuite(knob_space, .fini = tmp_dir_remove_used, .timeout = 300);

static const char *temp_path(const char *name) { return tmp_path_in(tmp_dir_use(temp_dir), name); }

static rlt_op *op_of(const char *spec)
{
    rlt_op *op = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_op_parse(spec, &op, &d), RLT_STATUS_OK, "%s: %s", spec, d.message);
    return op;
}

static rlt_knob_space *space_of(const char *spec, int n_threads)
{
    rlt_op *op = op_of(spec);
    rlt_knob_space *s = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_knob_space_create(op, n_threads, &s, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_op_destroy(op); /* the space keeps its own copy */
    return s;
}

static int knob_named(const rlt_knob_space *s, const char *name)
{
    for (int k = 0; k < rlt_knob_space_n_knobs(s); k++)
        if (strcmp(rlt_knob_space_knob_name(s, k), name) == 0) return k;
    return -1;
}

Test(knob_space, a_matmul_has_the_sessions_knobs_and_choices)
{
    rlt_knob_space *s = space_of("matmul:M=16,N=16,K=16", 1);
    cr_assert_str_eq(rlt_op_spec(rlt_knob_space_op(s)), "matmul:M=16,N=16,K=16");
    cr_assert_eq(rlt_knob_space_n_threads(s), 1);
    int n = rlt_knob_space_n_knobs(s);
    cr_assert_gt(n, 5);
    cr_assert_leq(n, RLT_KNOB_SPACE_MAX_KNOBS);
    const char *want[] = {"vec", "i.tile", "j.tile", "k.tile", "unroll"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert_geq(knob_named(s, want[i]), 0, "no knob %s", want[i]);
    cr_assert_lt(knob_named(s, "parallel"), 0, "one thread: no parallel knob");
    uint64_t size = 1;
    for (int k = 0; k < n; k++) {
        int c = rlt_knob_space_n_choices(s, k);
        cr_assert_geq(c, 1);
        cr_assert_leq(c, RLT_KNOB_SPACE_MAX_CHOICES);
        for (int i = 0; i < c; i++) cr_assert_not_null(rlt_knob_space_choice_text(s, k, i));
        cr_assert_null(rlt_knob_space_choice_text(s, k, c));
        size *= (uint64_t)c;
    }
    cr_assert_eq(rlt_knob_space_size(s), size);
    cr_assert_null(rlt_knob_space_knob_name(s, n));
    cr_assert_eq(rlt_knob_space_n_choices(s, -1), 0);
    int unroll = knob_named(s, "unroll");
    cr_assert_str_eq(rlt_knob_space_choice_text(s, unroll, 0), "0");
    rlt_knob_space_destroy(s);

    rlt_knob_space *p = space_of("matmul:M=16,N=16,K=16", 2);
    cr_assert_geq(knob_named(p, "parallel"), 0, "two threads: the parallel knob");
    rlt_knob_space_destroy(p);
}

Test(knob_space, keys_read_back_and_validity_has_reasons)
{
    rlt_knob_space *s = space_of("matmul:M=16,N=16,K=16", 1);
    int n = rlt_knob_space_n_knobs(s);
    int median[RLT_KNOB_SPACE_MAX_KNOBS], back[RLT_KNOB_SPACE_MAX_KNOBS];
    /* at most two knob steps from the middle, or (-1) a rule-built seed: on
     * an AVX2 machine the middle of 16^3's space (vec=i*8, i.tile=5) is more
     * than two steps from any valid configuration */
    int steps = rlt_knob_space_median(s, median);
    cr_assert(steps >= -1 && steps <= 2, "%d", steps);
    cr_assert(rlt_knob_space_is_valid(s, median));
    rlt_diag d = {0};
    cr_assert_eq(rlt_knob_space_config_check(s, median, &d), RLT_STATUS_OK, "%s", d.message);

    char *key = NULL;
    cr_assert_eq(rlt_knob_space_config_key(s, median, &key, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(strncmp(key, "v1;", 3) == 0, "%s", key);
    cr_assert_eq(rlt_knob_space_config_parse(s, key, back, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_arr_eq(back, median, sizeof median[0] * (size_t)n);
    rlt_free(key);

    cr_assert_eq(rlt_knob_space_config_parse(s, "v1;colour=red", back, &d), RLT_STATUS_PARSE_ERROR);
    cr_assert(strstr(rlt_knob_space_last_error(s), "colour"), "%s", rlt_knob_space_last_error(s));

    /* a choice out of range: refused, named */
    int bad[RLT_KNOB_SPACE_MAX_KNOBS];
    memcpy(bad, median, sizeof bad);
    bad[0] = rlt_knob_space_n_choices(s, 0);
    cr_assert_not(rlt_knob_space_is_valid(s, bad));
    rlt_diag d2 = {0};
    cr_assert_eq(rlt_knob_space_config_check(s, bad, &d2), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d2.message, rlt_knob_space_knob_name(s, 0)), "%s", d2.message);
    rlt_diag d3 = {0};
    cr_assert_eq(rlt_knob_space_config_key(s, bad, &key, &d3), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_null(key);

    /* every knob at its last choice: tiles past the axes, not valid */
    int last[RLT_KNOB_SPACE_MAX_KNOBS];
    for (int k = 0; k < n; k++) last[k] = rlt_knob_space_n_choices(s, k) - 1;
    cr_assert_not(rlt_knob_space_is_valid(s, last));
    rlt_diag d4 = {0};
    cr_assert_eq(rlt_knob_space_config_check(s, last, &d4), RLT_STATUS_ILLEGAL_SCHEDULE);
    cr_assert_neq(d4.message[0], '\0');
    int near[RLT_KNOB_SPACE_MAX_KNOBS];
    rlt_knob_space_nearest_valid(s, last, near);
    cr_assert(rlt_knob_space_is_valid(s, near));

    /* the median is the middle choices when they are valid */
    int middle[RLT_KNOB_SPACE_MAX_KNOBS];
    for (int k = 0; k < n; k++) middle[k] = (rlt_knob_space_n_choices(s, k) - 1) / 2;
    if (rlt_knob_space_is_valid(s, middle)) cr_assert_arr_eq(median, middle, sizeof median[0] * (size_t)n);
    cr_assert_eq(rlt_knob_space_dataset_size(s), 0);
    cr_assert_not(rlt_knob_space_in_dataset(s, median));
    rlt_knob_space_destroy(s);
}

static rlt_config_measurer_options fast_options(const char *db_path)
{
    rlt_config_measurer_options o;
    rlt_config_measurer_options_init(&o);
    o.build.cflags = "-O1 -march=native";
    o.run.repeat = 1;
    o.run.min_repeat_ms = 0.5;
    o.db_path = db_path;
    return o;
}

/* The median and up to two valid neighbours, then one invalid row. */
static int some_configs(const rlt_knob_space *s, int *rows)
{
    int n_knobs = rlt_knob_space_n_knobs(s);
    rlt_knob_space_median(s, rows);
    int n = 1;
    for (int k = 0; k < n_knobs && n < 3; k++) {
        int *row = rows + n * n_knobs;
        memcpy(row, rows, sizeof *row * (size_t)n_knobs);
        if (row[k] + 1 >= rlt_knob_space_n_choices(s, k)) continue;
        row[k]++;
        if (rlt_knob_space_is_valid(s, row)) n++;
    }
    int *invalid = rows + n * n_knobs;
    for (int k = 0; k < n_knobs; k++) invalid[k] = rlt_knob_space_n_choices(s, k) - 1;
    return n + 1;
}

Test(knob_space, live_measurement_is_stored_and_read_back)
{
    rlt_knob_space *s = space_of("matmul:M=16,N=16,K=16", 1);
    int rows[4 * RLT_KNOB_SPACE_MAX_KNOBS];
    int n = some_configs(s, rows);
    cr_assert_geq(n, 3);
    rlt_config_measurer_options o = fast_options(temp_path("live.db"));
    rlt_config_measurer *m = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_config_measurer_create_live(s, &o, &m, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_str_eq(rlt_config_measurer_kind(m), "live");
    rlt_config_result first[4], again[4];
    cr_assert_eq(rlt_config_measure(m, n, rows, first, &d), RLT_STATUS_OK, "%s", d.message);
    for (int i = 0; i < n - 1; i++) {
        cr_assert_eq(first[i].status, RLT_STATUS_OK, "%d: %s %s", i, rlt_status_str(first[i].status),
                     first[i].message);
        cr_assert_gt(first[i].gflops, 0);
        cr_assert_gt(first[i].time_median_ms, 0);
        cr_assert_not(first[i].is_absent);
        cr_assert_not(first[i].is_from_records);
    }
    cr_assert_eq(first[n - 1].status, RLT_STATUS_ILLEGAL_SCHEDULE);
    cr_assert_eq(first[n - 1].gflops, 0);
    cr_assert_neq(first[n - 1].message[0], '\0');
    cr_assert_gt(rlt_config_measurer_best_gflops(m), 0);
    /* a choice out of range fails the call, naming the row */
    int bad[RLT_KNOB_SPACE_MAX_KNOBS];
    memcpy(bad, rows, sizeof bad);
    bad[1] = -1;
    rlt_diag d2 = {0};
    cr_assert_eq(rlt_config_measure(m, 1, bad, first + 3, &d2), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(rlt_config_measurer_last_error(m), "configuration 0"), "%s", rlt_config_measurer_last_error(m));
    rlt_config_measurer_destroy(m);

    /* a second measurer over the same records reads them back */
    cr_assert_eq(rlt_config_measurer_create_live(s, &o, &m, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_config_measure(m, n, rows, again, &d), RLT_STATUS_OK, "%s", d.message);
    for (int i = 0; i < n - 1; i++) {
        cr_assert(again[i].is_from_records);
        cr_assert_eq(again[i].gflops, first[i].gflops);
    }
    rlt_config_measurer_destroy(m);

    /* a replay needs a dataset */
    rlt_diag d3 = {0};
    cr_assert_eq(rlt_config_measurer_create_replay(s, NULL, &m, &d3), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_null(m);
    rlt_knob_space_destroy(s);
}

typedef struct gflops_of {
    const char *config;
    double gflops;
    bool found;
} gflops_of;

static bool find_record(const rlt_record *rec, void *ctx)
{
    gflops_of *g = ctx;
    if (strcmp(rec->config, g->config) == 0) {
        g->gflops = rec->gflops;
        g->found = true;
    }
    return true;
}

Test(knob_space, a_dataset_replays_its_numbers_and_reports_the_absent)
{
    rlt_op *op = op_of("matmul:M=8,N=8,K=8");
    const char *path = temp_path("ds.db");
    rlt_diag d = {0};
    rlt_dataset_opts o = {.n_samples = 6, .seed = 1, .batch_size = 6, .n_threads = 1,
                          .build = {.cflags = "-O1 -march=native"},
                          .run = {.repeat = 1, .min_repeat_ms = 0.5}};
    rlt_dataset_info info;
    rlt_dataset_result r;
    cr_assert_eq(rlt_dataset_measure(op, path, &o, &info, &r, &d), RLT_STATUS_OK, "%s", d.message);

    rlt_knob_space *s = NULL;
    cr_assert_eq(rlt_knob_space_open_dataset(path, &s, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_str_eq(rlt_op_spec(rlt_knob_space_op(s)), rlt_op_spec(op));
    int n = rlt_knob_space_dataset_size(s);
    cr_assert_eq(n, info.n_configs);
    int n_knobs = rlt_knob_space_n_knobs(s);
    int rows[7 * RLT_KNOB_SPACE_MAX_KNOBS];
    for (int i = 0; i < n; i++) {
        cr_assert_eq(rlt_knob_space_dataset_config(s, i, rows + i * n_knobs, &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert(rlt_knob_space_in_dataset(s, rows + i * n_knobs));
    }
    cr_assert_eq(rlt_knob_space_dataset_config(s, n, rows, NULL), RLT_STATUS_INVALID_ARGUMENT);
    /* a valid configuration the dataset lacks: a neighbour of one it has */
    int *absent = rows + n * n_knobs;
    bool has_absent = false;
    for (int i = 0; i < n && !has_absent; i++)
        for (int k = 0; k < n_knobs && !has_absent; k++)
            for (int delta = -1; delta <= 1 && !has_absent; delta += 2) {
                memcpy(absent, rows + i * n_knobs, sizeof *absent * (size_t)n_knobs);
                absent[k] += delta;
                has_absent = absent[k] >= 0 && absent[k] < rlt_knob_space_n_choices(s, k) &&
                             rlt_knob_space_is_valid(s, absent) && !rlt_knob_space_in_dataset(s, absent);
            }
    cr_assert(has_absent);
    int median[RLT_KNOB_SPACE_MAX_KNOBS];
    rlt_knob_space_median(s, median);
    cr_assert(rlt_knob_space_in_dataset(s, median), "a dataset's median is one it measured");

    rlt_config_measurer *m = NULL;
    cr_assert_eq(rlt_config_measurer_create_replay(s, NULL, &m, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_str_eq(rlt_config_measurer_kind(m), "replay");
    cr_assert_eq(rlt_config_measurer_best_gflops(m), r.best_gflops);
    rlt_config_result out[7];
    cr_assert_eq(rlt_config_measure(m, n + 1, rows, out, &d), RLT_STATUS_OK, "%s", d.message);

    rlt_db *db = NULL;
    cr_assert_eq(rlt_db_open(path, &(rlt_db_opts){.is_read_only = true}, &db, &d), RLT_STATUS_OK, "%s", d.message);
    for (int i = 0; i < n; i++) {
        char *key = NULL;
        cr_assert_eq(rlt_knob_space_config_key(s, rows + i * n_knobs, &key, &d), RLT_STATUS_OK);
        gflops_of g = {.config = key};
        cr_assert_eq(rlt_db_history(db, info.spec, info.target, find_record, &g, &d), RLT_STATUS_OK, "%s",
                     d.message);
        cr_assert(g.found, "%s", key);
        cr_assert_not(out[i].is_absent);
        cr_assert(out[i].is_from_records);
        if (out[i].status == RLT_STATUS_OK) cr_assert_eq(out[i].gflops, g.gflops, "%s", key);
        rlt_free(key);
    }
    rlt_db_close(db);
    cr_assert(out[n].is_absent);
    cr_assert_eq(out[n].status, RLT_STATUS_OK);
    cr_assert_eq(out[n].gflops, 0);
    rlt_config_measurer_destroy(m);

    /* an op's space replaying the file by its path: the same answers */
    rlt_knob_space *ops = NULL;
    cr_assert_eq(rlt_knob_space_create(op, 1, &ops, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_config_measurer_create_replay(ops, path, &m, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_config_result again[7];
    cr_assert_eq(rlt_config_measure(m, n + 1, rows, again, &d), RLT_STATUS_OK, "%s", d.message);
    for (int i = 0; i <= n; i++) {
        cr_assert_eq(again[i].gflops, out[i].gflops);
        cr_assert_eq(again[i].is_absent, out[i].is_absent);
    }
    rlt_config_measurer_destroy(m);
    rlt_knob_space_destroy(ops);
    /* of another thread count: refused */
    cr_assert_eq(rlt_knob_space_create(op, 2, &ops, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_diag d2 = {0};
    cr_assert_eq(rlt_config_measurer_create_replay(ops, path, &m, &d2), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d2.message, "thread"), "%s", d2.message);
    rlt_knob_space_destroy(ops);

    /* a records file that is not a dataset, and a missing file */
    rlt_knob_space *bad = NULL;
    rlt_diag d3 = {0};
    cr_assert_neq(rlt_knob_space_open_dataset(temp_path("nosuch/x.db"), &bad, &d3), RLT_STATUS_OK);
    cr_assert_null(bad);
    rlt_knob_space_destroy(s);
    rlt_op_destroy(op);
}
