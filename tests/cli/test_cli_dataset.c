/* End-to-end tests of `rltune dataset` and `rltune tune --measure
 * replay:FILE` (cmd_dataset.c, cmd_tune.c, search/dataset.c): a dataset of
 * a tiny expression whose whole space is 24 valid configurations is
 * complete, measures each once, and a second run measures nothing; `best`
 * and `history` read it; replays with random, ga and xgb-rank given more
 * trials than the space has find exactly the dataset's best, compile
 * nothing (their compile cache directory is never created), give the same
 * curve twice for a seed, and answer every trial from the dataset; a
 * sampled dataset keeps every tuner inside its sample (n_absent 0), and so
 * does a dataset of the sub-space with a knob fixed (--fix); and
 * bad input is refused with exit 2 and one error line, leaving the files
 * as they were. The compile cache of the measuring runs is
 * $RLTUNE_CACHE_DIR, set by CTest. */
#include <cjson/cJSON.h>
#include <sys/stat.h>

#include "cli_runner.h"
#include "../common/json.h"
#include "../common/tmp.h"

#define EXPR "B[i] = A[i] * 2"
#define SHAPE "i=2"
#define N_VALID 24 /* valid configurations of EXPR on SHAPE, clang offered */
#define CFLAGS "-O1 -march=native"

static char tmp_dir[] = "/tmp/rlt_cli_ds_XXXXXX";

static void setup(void) { tmp_dir_use(tmp_dir); }

static void teardown(void) { tmp_remove_tree(tmp_dir); }

TestSuite(cli_dataset, .init = setup, .fini = teardown, .timeout = 120);

/* `rltune dataset` of the tiny expression into `path`, its JSON. */
static cJSON *make_dataset(const char *path, const char *samples)
{
    cli_run r = CLI("dataset", "--expr", EXPR, "--shape", SHAPE, "--out", path, "--samples", samples, "--seed", "3",
                    "--cflags", CFLAGS, "--repeat", "1", "--min-repeat-ms", "0.5", "--batch", "8", "--json");
    assert_ok(&r);
    cJSON *j = json_parse_object(r.out);
    cli_run_free(&r);
    return j;
}

/* A replay with `tuner` (seed 5); stdout's JSON. */
static cJSON *replay(const char *path, const char *tuner, const char *trials)
{
    char measure[400];
    snprintf(measure, sizeof measure, "replay:%s", path);
    cli_run r = CLI("tune", "--final", "0", "--expr", EXPR, "--shape", SHAPE, "--measure", measure, "--tuner", tuner, "--trials",
                    trials, "--seed", "5", "--cflags", CFLAGS, "--json");
    assert_ok(&r);
    cJSON *j = json_parse_object(r.out);
    cli_run_free(&r);
    return j;
}

/* ---- a complete dataset ------------------------------------------------------ */

Test(cli_dataset, a_complete_dataset_measures_each_configuration_once)
{
    const char *path = tmp_path("ds.db");
    cJSON *j = make_dataset(path, "4096");
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "complete")));
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "finished")));
    cr_assert_eq(json_number_at(j, "n_configs"), N_VALID);
    cr_assert_eq(json_number_at(j, "n_valid"), N_VALID);
    cr_assert_eq(json_number_at(j, "measured"), N_VALID);
    cr_assert_eq(json_number_at(j, "from_records"), 0);
    cr_assert_gt(json_number_at(cJSON_GetObjectItem(j, "best"), "gflops"), 0);
    cJSON_Delete(j);

    /* history: one record per configuration, each configuration once */
    cli_run h = CLI("history", "--expr", EXPR, "--shape", SHAPE, "--db", path, "--cflags", CFLAGS, "--json");
    assert_ok(&h);
    cJSON *hist = json_parse_object(h.out);
    cJSON *recs = cJSON_GetObjectItem(hist, "records");
    cr_assert_eq(cJSON_GetArraySize(recs), N_VALID);
    for (int a = 0; a < N_VALID; a++) {
        cJSON *ra = cJSON_GetObjectItem(cJSON_GetArrayItem(recs, a), "record");
        cr_assert_str_eq(json_string_at(ra, "tuner"), "dataset");
        for (int b = 0; b < a; b++)
            cr_assert_str_neq(json_string_at(ra, "config"),
                              json_string_at(cJSON_GetObjectItem(cJSON_GetArrayItem(recs, b), "record"), "config"),
                              "config measured twice");
    }
    cJSON_Delete(hist);
    cli_run_free(&h);

    /* the same command again measures nothing */
    j = make_dataset(path, "4096");
    cr_assert_eq(json_number_at(j, "measured"), 0);
    cr_assert_eq(json_number_at(j, "from_records"), N_VALID);
    cJSON_Delete(j);
}

/* The GFLOP/s the dataset at `path` recorded for `config` (-1: none). */
static double dataset_gflops_of(const char *path, const char *config)
{
    cli_run h = CLI("history", "--expr", EXPR, "--shape", SHAPE, "--db", path, "--cflags", CFLAGS, "--json");
    assert_ok(&h);
    cJSON *hist = json_parse_object(h.out);
    cJSON *recs = cJSON_GetObjectItem(hist, "records");
    double gflops = -1;
    for (int i = 0; i < cJSON_GetArraySize(recs); i++) {
        cJSON *r = cJSON_GetObjectItem(cJSON_GetArrayItem(recs, i), "record");
        if (strcmp(json_string_at(r, "config"), config) == 0) gflops = json_number_at(r, "gflops");
    }
    cJSON_Delete(hist);
    cli_run_free(&h);
    return gflops;
}

/* Replays compile nothing: with the compile cache pointed at a directory
 * that does not exist, it is still absent afterwards. */
Test(cli_dataset, replays_find_the_datasets_best_reproducibly_without_compiling)
{
    const char *path = tmp_path("ds.db");
    cJSON_Delete(make_dataset(path, "4096"));
    cli_run b = CLI("best", "--expr", EXPR, "--shape", SHAPE, "--db", path, "--cflags", CFLAGS, "--json");
    assert_ok(&b);
    cJSON *best = json_parse_object(b.out);
    cli_run_free(&b);

    const char *cache = tmp_path("no-cache");
    cr_assert_eq(setenv("RLTUNE_CACHE_DIR", cache, 1), 0);
    static const char *const tuners[] = {"random", "ga", "xgb-rank"};
    for (size_t t = 0; t < sizeof tuners / sizeof tuners[0]; t++) {
        cJSON *x = replay(path, tuners[t], "40");
        cJSON *y = replay(path, tuners[t], "40");
        cr_assert_str_eq(json_string_at(x, "measure"), "replay");
        cr_assert_str_eq(json_string_at(x, "dataset"), path);
        cr_assert(cJSON_IsNull(cJSON_GetObjectItem(x, "db")), "a replay writes no records");
        cr_assert_eq(json_number_at(x, "trials"), N_VALID, "%s: the space has %d configurations", tuners[t], N_VALID);
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(x, "space_exhausted")));
        cr_assert_eq(json_number_at(x, "replayed"), N_VALID);
        cr_assert_eq(json_number_at(x, "n_absent"), 0);
        cr_assert_eq(json_number_at(x, "measured"), 0);
        cr_assert_eq(json_number_at(x, "from_records"), 0);
        cJSON *xb = cJSON_GetObjectItem(x, "best");
        cr_assert_eq(json_number_at(xb, "gflops"), json_number_at(best, "gflops"), "%s: best %g, the dataset's %g",
                     tuners[t], json_number_at(xb, "gflops"), json_number_at(best, "gflops"));
        /* the dataset's best configuration, or one that measured the same
         * GFLOP/s (a tie: `best` breaks it by the faster minimum, a replay
         * by what it saw first) */
        if (strcmp(json_string_at(xb, "config"), json_string_at(best, "config")) != 0)
            cr_assert_eq(dataset_gflops_of(path, json_string_at(xb, "config")), json_number_at(best, "gflops"),
                         "%s: best %s, the dataset's %s", tuners[t], json_string_at(xb, "config"),
                         json_string_at(best, "config"));
        char *cx = cJSON_PrintUnformatted(cJSON_GetObjectItem(x, "curve"));
        char *cy = cJSON_PrintUnformatted(cJSON_GetObjectItem(y, "curve"));
        cr_assert_str_eq(cx, cy, "%s: the same seed gave another curve", tuners[t]);
        cr_assert_lt(json_number_at(x, "wall_s"), 5.0, "%s: %g s for %d trials", tuners[t], json_number_at(x, "wall_s"),
                     N_VALID);
        free(cx);
        free(cy);
        cJSON_Delete(x);
        cJSON_Delete(y);
    }
    struct stat st;
    cr_assert_neq(stat(cache, &st), 0, "a replay created the compile cache %s", cache);
    cJSON_Delete(best);

    /* the text report says where the answers came from */
    char measure[400];
    snprintf(measure, sizeof measure, "replay:%s", path);
    cli_run r = CLI("tune", "--final", "0", "--expr", EXPR, "--shape", SHAPE, "--measure", measure, "--tuner", "random", "--trials",
                    "5", "--cflags", CFLAGS);
    assert_ok(&r);
    assert_has(r.out, "measure:   replay of", "tune report");
    assert_has(r.out, "5 answered by the dataset, 0 absent", "tune report");
    cli_run_free(&r);
}

/* ---- a sampled dataset ------------------------------------------------------- */

Test(cli_dataset, a_sampled_dataset_keeps_every_tuner_inside_it)
{
    const char *path = tmp_path("sample.db");
    cJSON *j = make_dataset(path, "10");
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "complete")));
    cr_assert_eq(json_number_at(j, "n_configs"), 10);
    cr_assert_eq(json_number_at(j, "n_valid"), N_VALID);
    cr_assert_eq(json_number_at(j, "measured"), 10);
    double best = json_number_at(cJSON_GetObjectItem(j, "best"), "gflops");
    cJSON_Delete(j);
    static const char *const tuners[] = {"random", "grid", "ga", "xgb", "xgb-rank"};
    for (size_t t = 0; t < sizeof tuners / sizeof tuners[0]; t++) {
        cJSON *x = replay(path, tuners[t], "30");
        cr_assert_eq(json_number_at(x, "n_absent"), 0, "%s proposed configurations outside the sample", tuners[t]);
        cr_assert_eq(json_number_at(x, "trials"), 10, "%s", tuners[t]);
        cr_assert_eq(json_number_at(x, "replayed"), 10);
        cr_assert_eq(json_number_at(cJSON_GetObjectItem(x, "best"), "gflops"), best, "%s", tuners[t]);
        cJSON_Delete(x);
    }
}

/* A dataset of the sub-space with the compiler fixed: complete, every
 * record holds the fixed choice, replays stay inside it; resuming it with
 * another --fix, and a --fix naming no knob, are refused. */
Test(cli_dataset, a_fixed_dataset_is_the_complete_sub_space)
{
    const char *path = tmp_path("fixed.db");
    cli_run r = CLI("dataset", "--expr", EXPR, "--shape", SHAPE, "--out", path, "--fix", "cc=gcc", "--cflags", CFLAGS,
                    "--repeat", "1", "--min-repeat-ms", "0.5", "--batch", "8", "--json");
    assert_ok(&r);
    cJSON *j = json_parse_object(r.out);
    cli_run_free(&r);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "complete")));
    cr_assert_str_eq(json_string_at(j, "fixed"), "cc=gcc");
    cr_assert_eq(json_number_at(j, "n_configs"), N_VALID / 2, "half the space: the gcc half");
    cr_assert_eq(json_number_at(j, "measured"), N_VALID / 2);
    double best = json_number_at(cJSON_GetObjectItem(j, "best"), "gflops");
    cJSON_Delete(j);

    cli_run h = CLI("history", "--expr", EXPR, "--shape", SHAPE, "--db", path, "--cflags", CFLAGS, "--json");
    assert_ok(&h);
    cJSON *hist = json_parse_object(h.out);
    cJSON *recs = cJSON_GetObjectItem(hist, "records");
    cr_assert_eq(cJSON_GetArraySize(recs), N_VALID / 2);
    for (int a = 0; a < N_VALID / 2; a++)
        cr_assert(strstr(json_string_at(cJSON_GetObjectItem(cJSON_GetArrayItem(recs, a), "record"), "config"), ";cc=gcc"),
                  "a record outside the sub-space");
    cJSON_Delete(hist);
    cli_run_free(&h);

    static const char *const tuners[] = {"ga", "xgb-rank"};
    for (size_t t = 0; t < sizeof tuners / sizeof tuners[0]; t++) {
        cJSON *x = replay(path, tuners[t], "30");
        cr_assert_eq(json_number_at(x, "n_absent"), 0, "%s left the sub-space", tuners[t]);
        cr_assert_eq(json_number_at(x, "trials"), N_VALID / 2, "%s", tuners[t]);
        cr_assert_eq(json_number_at(cJSON_GetObjectItem(x, "best"), "gflops"), best, "%s", tuners[t]);
        cJSON_Delete(x);
    }

    size_t len = 0, len_after = 0;
    char *before = tmp_file_read(path, &len);
    EXPECT_USAGE_ERROR("with fixed knobs 'cc=gcc'; this run fixes 'cc=clang'", "dataset", "--expr", EXPR, "--shape",
                       SHAPE, "--out", path, "--fix", "cc=clang", "--cflags", CFLAGS);
    EXPECT_USAGE_ERROR("fixes ''", "dataset", "--expr", EXPR, "--shape", SHAPE, "--out", path, "--cflags", CFLAGS);
    char *after = tmp_file_read(path, &len_after);
    cr_assert(len == len_after && memcmp(before, after, len) == 0, "a refused run changed the dataset");
    free(after);
    free(before);
    EXPECT_USAGE_ERROR("unknown knob 'colour'", "dataset", "--expr", EXPR, "--shape", SHAPE, "--out",
                       tmp_path("other.db"), "--fix", "colour=red", "--cflags", CFLAGS);
    EXPECT_USAGE_ERROR("'icc' is not a choice of knob cc", "dataset", "--expr", EXPR, "--shape", SHAPE, "--out",
                       tmp_path("other.db"), "--fix", "cc=icc", "--cflags", CFLAGS);
}

/* ---- bad input ------------------------------------------------------------------ */

/* `args` with the replay of `path` added; expects a usage error. */
static void expect_replay_refused(const char *path, const char *expr, const char *cflags, const char *needle)
{
    char measure[400];
    snprintf(measure, sizeof measure, "replay:%s", path);
    cli_run r = CLI("tune", "--final", "0", "--expr", expr, "--shape", SHAPE, "--measure", measure, "--cflags", cflags);
    assert_usage_error(&r, needle);
    cli_run_free(&r);
}

Test(cli_dataset, bad_datasets_are_refused_and_left_as_they_were)
{
    const char *path = tmp_path("ds.db");
    cJSON_Delete(make_dataset(path, "4096"));
    size_t len = 0;
    char *before = tmp_file_read(path, &len);

    expect_replay_refused(path, "B[i] = A[i] * 3", CFLAGS, "is of op expr:B[i] = A[i] * 2|i=2");
    expect_replay_refused(path, EXPR, "-O2", "give the --threads, --cc and --cflags of the dataset run");
    expect_replay_refused(tmp_path("absent.db"), EXPR, CFLAGS, "absent.db");
    size_t len_after = 0;
    char *after = tmp_file_read(path, &len_after);
    cr_assert(len == len_after && memcmp(before, after, len) == 0, "a refused replay changed the dataset");
    free(after);

    /* a file that is not a database, and a damaged one */
    const char *junk = tmp_path("junk.db");
    tmp_file_write(junk, "not a dataset\n", 14);
    expect_replay_refused(junk, EXPR, CFLAGS, "not an SQLite database");
    char *text = tmp_file_read(junk, &len_after);
    cr_assert_str_eq(text, "not a dataset\n");
    free(text);
    const char *broken = tmp_path("broken.db");
    char *damaged = malloc(len);
    memcpy(damaged, before, len);
    memset(damaged + 100, 0xA5, len > 2048 ? 1900 : len - 100); /* the first page's b-tree */
    tmp_file_write(broken, damaged, len);
    expect_replay_refused(broken, EXPR, CFLAGS, "broken.db");
    after = tmp_file_read(broken, &len_after);
    cr_assert(len == len_after && memcmp(damaged, after, len) == 0, "a refused replay changed the damaged file");
    free(after);
    free(damaged);

    /* a records database that is not a dataset: replay refuses it, dataset
     * will not write into it, and tune will not write into a dataset */
    const char *plain = tmp_path("plain.db");
    cli_run r = CLI("tune", "--final", "0", "--expr", EXPR, "--shape", SHAPE, "--tuner", "random", "--trials", "1", "--db", plain,
                    "--cflags", CFLAGS, "--repeat", "1", "--min-repeat-ms", "0.5");
    assert_ok(&r);
    cli_run_free(&r);
    expect_replay_refused(plain, EXPR, CFLAGS, "not a dataset");
    EXPECT_USAGE_ERROR("not a dataset: name a new file", "dataset", "--expr", EXPR, "--shape", SHAPE, "--out", plain,
                       "--cflags", CFLAGS);
    EXPECT_USAGE_ERROR("is a dataset", "tune", "--expr", EXPR, "--shape", SHAPE, "--db", path, "--cflags", CFLAGS);
    /* a dataset resumed with other options */
    EXPECT_USAGE_ERROR("--samples 4096 --seed 3", "dataset", "--expr", EXPR, "--shape", SHAPE, "--out", path,
                       "--samples", "9", "--seed", "3", "--cflags", CFLAGS);
    after = tmp_file_read(path, &len_after);
    cr_assert(len == len_after && memcmp(before, after, len) == 0, "a refused run changed the dataset");
    free(after);
    free(before);
}

Test(cli_dataset, bad_options_are_usage_errors)
{
    const char *path = tmp_path("ds.db");
    char measure[400];
    snprintf(measure, sizeof measure, "replay:%s", path);
    EXPECT_USAGE_ERROR("no --out given", "dataset", "--expr", EXPR, "--shape", SHAPE);
    EXPECT_USAGE_ERROR("--samples", "dataset", "--expr", EXPR, "--shape", SHAPE, "--out", path, "--samples", "0");
    EXPECT_USAGE_ERROR("unknown option '--trials'", "dataset", "--expr", EXPR, "--shape", SHAPE, "--out", path,
                       "--trials", "3");
    EXPECT_USAGE_ERROR("unknown mode 'replay'", "tune", "--expr", EXPR, "--shape", SHAPE, "--measure", "replay");
    EXPECT_USAGE_ERROR("unknown mode 'recorded'", "tune", "--expr", EXPR, "--shape", SHAPE, "--measure", "recorded");
    EXPECT_USAGE_ERROR("--db cannot be combined with --measure replay", "tune", "--expr", EXPR, "--shape", SHAPE,
                       "--measure", measure, "--db", path);
    EXPECT_USAGE_ERROR("--repeat cannot be combined with --measure replay", "tune", "--expr", EXPR, "--shape", SHAPE,
                       "--measure", measure, "--repeat", "2");
    struct stat st;
    cr_assert_neq(stat(path, &st), 0, "a refused run created %s", path);

    cli_run h = CLI("help", "dataset");
    assert_ok(&h);
    const char *opts[] = {"--op SPEC", "--out FILE", "--samples N", "--seed S", "--fix KNOBS", "--batch N", "--threads N", "--cc CMD",
                          "--cflags FLAGS", "--repeat N", "--min-repeat-ms X", "--timeout S", "--json"};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) assert_has(h.out, opts[i], "help dataset");
    cli_run_free(&h);
    h = CLI("tune", "--help");
    assert_ok(&h);
    assert_has(h.out, "--measure MODE", "tune --help");
    assert_has(h.out, "replay:FILE", "tune --help");
    cli_run_free(&h);
}
