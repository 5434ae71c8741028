/* End-to-end tests of the commands that read the tuning records (cmd_records.c,
 * cmd_export.c): each test that needs records makes them with a short real
 * `rltune tune` run (random tuner, 4 trials of a 16x24x8 matmul at -O1,
 * or 2 of a padded conv2d) into its own database, then checks `best` (text
 * and JSON; its GFLOP/s is the largest OK one of `history`), `history`
 * (every record, oldest first), `records export` / `import` (a round trip
 * gives the same history; a malformed line fails naming the line and adds
 * nothing), `export` (the directory's Makefile builds the example without
 * rltune and it prints OK, for the best record of a matmul and of a padded
 * conv2d, and for a --schedule file), and bad input (exit 2, one error line).
 * The compile cache is $RLTUNE_CACHE_DIR, set by CTest. */
#include <cjson/cJSON.h>
#include <math.h>

#include "../common/json.h"
#include "../common/tmp.h"
#include "cli_runner.h"

#define MATMUL "matmul:M=16,N=24,K=8"
#define CONV "conv2d:N=1,C=3,H=7,W=7,K=4,R=3,S=3,pad=1"
#define TUNE_CFLAGS "-O1 -march=native"

static char tmp_dir[] = "/tmp/rlt_cli_rec_XXXXXX";
static char db_path[300];

static void setup(void)
{
    tmp_dir_use(tmp_dir);
    snprintf(db_path, sizeof db_path, "%s/t.db", tmp_dir);
}

static void teardown(void) { tmp_remove_tree(tmp_dir); }

TestSuite(cli_records, .init = setup, .fini = teardown, .timeout = 120);

/* Tunes `spec` for `trials` trials into the test's database. */
static void tune(const char *spec, const char *trials)
{
    cli_run r = CLI("tune", "--final", "0", "--op", spec, "--tuner", "random", "--trials", trials, "--batch", trials, "--cflags",
                    TUNE_CFLAGS, "--repeat", "1", "--min-repeat-ms", "0.5", "--db", db_path);
    assert_ok(&r);
    cli_run_free(&r);
}

/* The record of an entry of history --json's "records": {n, best_gflops, record}. */
static cJSON *rec_of(const cJSON *entry)
{
    cJSON *rec = cJSON_GetObjectItem(entry, "record");
    cr_assert(cJSON_IsObject(rec), "a history entry without its record");
    return rec;
}

/* Runs a shell command (make, the example) and returns its exit status,
 * with its output in `out`. */
static int shell(const char *cmd, char *out, size_t cap)
{
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Builds and runs an exported directory's example: exit 0 and "OK". */
static void assert_export_runs(const char *dir, const char *name)
{
    char cmd[512], out[8192];
    snprintf(cmd, sizeof cmd, "make -s -C %s 2>&1", dir);
    cr_assert_eq(shell(cmd, out, sizeof out), 0, "make failed:\n%s", out);
    snprintf(cmd, sizeof cmd, "%s/example 2>&1", dir);
    cr_assert_eq(shell(cmd, out, sizeof out), 0, "example failed:\n%s", out);
    assert_has(out, "max relative error", "example");
    assert_has(out, ": OK", "example");
    assert_has(out, name, "example");
}

/* ---- best and history --------------------------------------------------- */

Test(cli_records, best_is_the_fastest_of_history)
{
    tune(MATMUL, "4");
    cli_run b = CLI("best", "--op", MATMUL, "--db", db_path, "--cflags", TUNE_CFLAGS, "--json");
    assert_ok(&b);
    cJSON *best = json_parse(b.out);
    const char *keys[] = {"op", "target", "gflops", "time_ms", "config", "schedule", "tuner", "created_s", "status"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        cr_assert_not_null(cJSON_GetObjectItem(best, keys[i]), "best --json lacks %s", keys[i]);
    cr_assert_str_eq(cJSON_GetObjectItem(best, "status")->valuestring, "OK");
    cr_assert_str_eq(cJSON_GetObjectItem(best, "op")->valuestring, MATMUL);
    cr_assert_not_null(cJSON_GetObjectItem(cJSON_GetObjectItem(best, "time_ms"), "median"));
    double best_gflops = cJSON_GetObjectItem(best, "gflops")->valuedouble;

    cli_run h = CLI("history", "--op", MATMUL, "--db", db_path, "--cflags", TUNE_CFLAGS, "--json");
    assert_ok(&h);
    cJSON *hist = json_parse(h.out);
    cJSON *recs = cJSON_GetObjectItem(hist, "records");
    cr_assert_eq(cJSON_GetArraySize(recs), 4);
    cr_assert_eq(cJSON_GetObjectItem(hist, "n_records")->valueint, 4);
    double max_ok = 0, last_created = 0;
    int n = 0;
    cJSON *entry;
    cJSON_ArrayForEach(entry, recs) {
        cr_assert_eq(cJSON_GetObjectItem(entry, "n")->valueint, ++n);
        const cJSON *rec = rec_of(entry);
        double created = cJSON_GetObjectItem(rec, "created_s")->valuedouble;
        cr_assert_geq(created, last_created, "history is not oldest first");
        last_created = created;
        double g = cJSON_GetObjectItem(rec, "gflops")->valuedouble;
        if (strcmp(cJSON_GetObjectItem(rec, "status")->valuestring, "OK") == 0 && g > max_ok) max_ok = g;
        cr_assert_eq(cJSON_GetObjectItem(entry, "best_gflops")->valuedouble, max_ok);
    }
    cr_assert_gt(max_ok, 0);
    cr_assert_eq(best_gflops, max_ok, "best %g, history's best %g", best_gflops, max_ok);

    cli_run t = CLI("best", "--op", MATMUL, "--db", db_path, "--cflags", TUNE_CFLAGS);
    assert_ok(&t);
    const char *needles[] = {"op:", MATMUL, "target:", "GFLOP/s", "config:", "tuner:", "random", "measured:",
                             "schedule:\n# rltune schedule v1\n"};
    for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++) assert_has(t.out, needles[i], "best");

    cli_run ht = CLI("history", "--op", MATMUL, "--db", db_path, "--cflags", TUNE_CFLAGS, "--limit", "2");
    assert_ok(&ht);
    assert_has(ht.out, "records: 4", "history");
    assert_has(ht.out, "    3  OK", "history --limit 2");
    cr_assert_null(strstr(ht.out, "    2  "), "--limit 2 printed record 2:\n%s", ht.out);

    /* the tune run's target is not the default one: best says where to look */
    cli_run other = CLI("best", "--op", MATMUL, "--db", db_path);
    cr_assert_eq(other.exit_code, 1, "exit %d: %s", other.exit_code, other.err);
    cr_assert_str_empty(other.out);
    assert_has(other.err, "other targets", "best on another target");
    cli_run all = CLI("best", "--op", MATMUL, "--db", db_path, "--all-targets", "--json");
    assert_ok(&all);
    cJSON *any = json_parse(all.out);
    cr_assert_eq(cJSON_GetObjectItem(any, "gflops")->valuedouble, best_gflops);

    cJSON_Delete(any);
    cJSON_Delete(hist);
    cJSON_Delete(best);
    cli_run *runs[] = {&b, &h, &t, &ht, &other, &all};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) cli_run_free(runs[i]);
}

/* At two threads the final pick also re-measures the best configuration
 * without a parallel loop, when the top list lacks it: with --final 1, a
 * parallel best brings the best serial one along (2 candidates); a serial
 * best is alone, and one candidate is not re-measured. */
Test(cli_records, the_final_pick_at_two_threads_includes_the_best_serial_configuration)
{
    /* 64^3: big enough that two threads can win (on the machine this was
     * written on, seed 0's best of 8 is parallel), small enough to be quick */
    const char *op = "matmul:M=64,N=64,K=64";
    cli_run r = CLI("tune", "--op", op, "--tuner", "random", "--seeds", "0", "--trials", "8", "--batch", "8",
                    "--final", "1", "--threads", "2", "--cflags", TUNE_CFLAGS, "--repeat", "1", "--min-repeat-ms",
                    "0.5", "--db", db_path, "--json");
    assert_ok(&r);
    cJSON *o = json_parse(r.out);
    int n_final = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "final"), "candidates")->valueint;
    cJSON_Delete(o);
    cli_run_free(&r);

    cli_run h = CLI("history", "--op", op, "--db", db_path, "--cflags", TUNE_CFLAGS, "--threads", "2", "--json");
    assert_ok(&h);
    cJSON *ho = json_parse(h.out);
    cJSON *recs = cJSON_GetObjectItem(ho, "records");
    /* the tuning records: the best, and the best without a parallel loop */
    const char *best = NULL, *serial = NULL;
    double best_gflops = 0, serial_gflops = 0;
    for (int i = 0; i < 8; i++) {
        cJSON *rec = rec_of(cJSON_GetArrayItem(recs, i));
        const char *config = cJSON_GetObjectItem(rec, "config")->valuestring;
        double gflops = cJSON_GetObjectItem(rec, "gflops")->valuedouble;
        if (gflops > best_gflops) best_gflops = gflops, best = config;
        if (strstr(config, "parallel=none") && gflops > serial_gflops) serial_gflops = gflops, serial = config;
    }
    cr_assert_not_null(best);
    cr_assert_not_null(serial, "8 random configurations, none of them serial");
    if (strcmp(best, serial) == 0) {
        cr_assert_eq(n_final, 0, "a serial best has nothing to be compared with");
        cr_assert_eq(cJSON_GetArraySize(recs), 8);
    } else {
        cr_assert_eq(n_final, 2, "the parallel best and the best serial configuration");
        cr_assert_eq(cJSON_GetArraySize(recs), 10);
        const char *again[2] = {cJSON_GetObjectItem(rec_of(cJSON_GetArrayItem(recs, 8)), "config")->valuestring,
                                cJSON_GetObjectItem(rec_of(cJSON_GetArrayItem(recs, 9)), "config")->valuestring};
        cr_assert(strcmp(again[0], best) == 0 && strcmp(again[1], serial) == 0, "re-measured %s and %s", again[0],
                  again[1]);
    }
    cJSON_Delete(ho);
    cli_run_free(&h);
}

/* measure --best: the best record's schedule and compiler, measured again */
/* rltune tune --final N: the N best are measured again and stored, the
 * pick is what best reads, and a resumed run that measures nothing new
 * adds nothing. */
Test(cli_records, the_final_pick_measures_the_best_again_and_best_goes_by_it)
{
    const char *const args[] = {"tune", "--op", MATMUL, "--tuner", "random", "--trials", "6", "--batch", "6",
                                "--final", "2", "--cflags", TUNE_CFLAGS, "--repeat", "1", "--min-repeat-ms", "0.5",
                                "--db", db_path, "--json", NULL};
    cli_run r = run_cli_argv(NULL, args);
    assert_ok(&r);
    cJSON *o = json_parse(r.out);
    cJSON *final = cJSON_GetObjectItem(o, "final");
    cr_assert_not_null(final);
    cr_assert_eq(cJSON_GetObjectItem(final, "candidates")->valueint, 2);
    cr_assert_eq(cJSON_GetObjectItem(final, "rounds")->valueint, 3);
    cr_assert_gt(cJSON_GetObjectItem(final, "tuning_best_gflops")->valuedouble, 0);
    cr_assert_not_null(cJSON_GetObjectItem(final, "tuning_best_config")->valuestring);
    cJSON *best = cJSON_GetObjectItem(o, "best");
    char picked[1024];
    snprintf(picked, sizeof picked, "%s", cJSON_GetObjectItem(best, "config")->valuestring);
    double picked_gflops = cJSON_GetObjectItem(best, "gflops")->valuedouble;
    cJSON_Delete(o);
    cli_run_free(&r);

    cli_run h = CLI("history", "--op", MATMUL, "--db", db_path, "--cflags", TUNE_CFLAGS, "--json");
    assert_ok(&h);
    cJSON *ho = json_parse(h.out);
    cJSON *recs = cJSON_GetObjectItem(ho, "records");
    cr_assert_eq(cJSON_GetArraySize(recs), 8, "6 trials and 2 re-measured");
    bool has_picked = false;
    for (int i = 6; i < 8; i++) {
        cJSON *rec = rec_of(cJSON_GetArrayItem(recs, i));
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(rec, "final")), "record %d is not marked final", i);
        assert_has(cJSON_GetObjectItem(rec, "message")->valuestring, "the median of 3 rounds", "a final record");
        has_picked |= strcmp(cJSON_GetObjectItem(rec, "config")->valuestring, picked) == 0;
    }
    cr_assert(has_picked, "the pick %s is not among the re-measured", picked);
    cJSON_Delete(ho);
    cli_run_free(&h);

    cli_run b = CLI("best", "--op", MATMUL, "--db", db_path, "--cflags", TUNE_CFLAGS, "--json");
    assert_ok(&b);
    cJSON *bo = json_parse(b.out);
    cr_assert_str_eq(cJSON_GetObjectItem(bo, "config")->valuestring, picked);
    cr_assert_float_eq(cJSON_GetObjectItem(bo, "gflops")->valuedouble, picked_gflops, 1e-6 * picked_gflops);
    cJSON_Delete(bo);
    cli_run_free(&b);

    cli_run again = run_cli_argv(NULL, args);
    assert_ok(&again);
    cJSON *ao = json_parse(again.out);
    cr_assert_eq(cJSON_GetObjectItem(ao, "measured")->valueint, 0);
    cr_assert_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(ao, "final"), "candidates")->valueint, 0);
    cJSON_Delete(ao);
    cli_run_free(&again);
}

Test(cli_records, measure_best_measures_the_best_record_again)
{
    tune(MATMUL, "4");
    cli_run b = CLI("best", "--op", MATMUL, "--db", db_path, "--cflags", TUNE_CFLAGS, "--json");
    assert_ok(&b);
    cJSON *best = json_parse(b.out);
    cli_run m = CLI("measure", "--op", MATMUL, "--best", "--db", db_path, "--cflags", TUNE_CFLAGS, "--repeat", "2",
                    "--json");
    assert_ok(&m);
    cJSON *meas = json_parse(m.out);
    cr_assert_str_eq(cJSON_GetObjectItem(meas, "status")->valuestring, "OK");
    cr_assert_gt(cJSON_GetObjectItem(meas, "gflops")->valuedouble, 0);
    cJSON *rec = cJSON_GetObjectItem(meas, "record");
    cr_assert(cJSON_IsObject(rec), "measure --best --json lacks the record:\n%s", m.out);
    cr_assert_eq(cJSON_GetObjectItem(rec, "id")->valuedouble, cJSON_GetObjectItem(best, "id")->valuedouble);
    cr_assert_str_eq(cJSON_GetObjectItem(rec, "config")->valuestring,
                     cJSON_GetObjectItem(best, "config")->valuestring);
    cr_assert_str_eq(cJSON_GetObjectItem(meas, "schedule")->valuestring,
                     cJSON_GetObjectItem(best, "schedule")->valuestring);
    cli_run t = CLI("measure", "--op", MATMUL, "--best", "--db", db_path, "--cflags", TUNE_CFLAGS, "--repeat", "1");
    assert_ok(&t);
    assert_has(t.out, "schedule:  record ", "measure --best");
    /* nothing recorded for this target: exit 1, saying what to do */
    cli_run none = CLI("measure", "--op", MATMUL, "--best", "--db", db_path);
    cr_assert_eq(none.exit_code, 1, "exit %d: %s", none.exit_code, none.err);
    assert_has(none.err, "other targets", "measure --best on another target");
    EXPECT_USAGE_ERROR("cannot be combined with --schedule", "measure", "--op", MATMUL, "--best", "--schedule",
                       "x.sched");
    EXPECT_USAGE_ERROR("they need --best", "measure", "--op", MATMUL, "--db", db_path);
    cJSON_Delete(meas);
    cJSON_Delete(best);
    cli_run *runs[] = {&b, &m, &t, &none};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) cli_run_free(runs[i]);
}

/* tune --transfer: the cost model starts from another workload's records */
Test(cli_records, tune_transfer_learns_from_other_workloads_of_the_kind)
{
    tune(MATMUL, "6");
    const char *other = "matmul:M=16,N=24,K=16";
    cli_run r = CLI("tune", "--final", "0", "--op", other, "--tuner", "xgb-rank", "--trials", "2", "--batch", "2", "--cflags",
                    TUNE_CFLAGS, "--repeat", "1", "--min-repeat-ms", "0.5", "--db", db_path, "--transfer", db_path,
                    "--json");
    assert_ok(&r);
    cJSON *j = json_parse(r.out);
    int rows = cJSON_GetObjectItem(j, "transfer_rows")->valueint;
    cr_assert(rows >= 1 && rows <= 6, "transfer_rows %d", rows);
    cr_assert_eq(cJSON_GetObjectItem(j, "transfer_workloads")->valueint, 1);
    cr_assert_eq(cJSON_GetObjectItem(j, "measured")->valueint, 2);
    /* without --transfer: 0 */
    cli_run n = CLI("tune", "--final", "0", "--op", other, "--tuner", "xgb-rank", "--trials", "2", "--batch", "2", "--cflags",
                    TUNE_CFLAGS, "--repeat", "1", "--min-repeat-ms", "0.5", "--db", db_path, "--json");
    assert_ok(&n);
    cJSON *k = json_parse(n.out);
    cr_assert_eq(cJSON_GetObjectItem(k, "transfer_rows")->valueint, 0);
    EXPECT_USAGE_ERROR("needs a tuner with one (xgb, xgb-rank, ppo)", "tune", "--op", other, "--tuner", "ga", "--db", db_path,
                       "--transfer", db_path);
    EXPECT_USAGE_ERROR("--transfer", "tune", "--op", other, "--db", db_path, "--transfer", tmp_path("none.db"));
    cr_assert_eq(access(tmp_path("none.db"), F_OK), -1, "--transfer created its file");
    cJSON_Delete(k);
    cJSON_Delete(j);
    cli_run_free(&n);
    cli_run_free(&r);
}

/* The key without its ";parallel=..." knob. */
static void drop_parallel(const char *key, char *out, size_t cap)
{
    const char *p = strstr(key, ";parallel=");
    const char *end = p ? strchr(p + 1, ';') : NULL;
    if (!p) snprintf(out, cap, "%s", key);
    else snprintf(out, cap, "%.*s%s", (int)(p - key), key, end ? end : "");
}

Test(cli_records, a_run_at_two_threads_starts_from_the_best_at_one)
{
    tune(MATMUL, "4");
    cli_run b = CLI("best", "--op", MATMUL, "--db", db_path, "--cflags", TUNE_CFLAGS, "--json");
    assert_ok(&b);
    cJSON *bo = json_parse(b.out);
    char best1[1024];
    snprintf(best1, sizeof best1, "%s", cJSON_GetObjectItem(bo, "config")->valuestring);
    cJSON_Delete(bo);
    cli_run_free(&b);

    /* 2 threads: the 1-thread best comes first, once per parallel choice */
    cli_run r = CLI("tune", "--final", "0", "--op", MATMUL, "--tuner", "random", "--trials", "2", "--batch", "2",
                    "--threads", "2", "--cflags", TUNE_CFLAGS, "--repeat", "1", "--min-repeat-ms", "0.5", "--db",
                    db_path, "--json");
    assert_ok(&r);
    cJSON *j = json_parse(r.out);
    int n_other = cJSON_GetObjectItem(j, "other_threads")->valueint;
    /* up to RLT_TUNE_OTHER_THREADS (3) configurations, each at parallel none, i or j where valid */
    cr_assert(n_other >= 1 && n_other <= 9, "other_threads %d", n_other);
    cJSON_Delete(j);
    cli_run_free(&r);
    cli_run h = CLI("history", "--op", MATMUL, "--threads", "2", "--db", db_path, "--cflags", TUNE_CFLAGS, "--json");
    assert_ok(&h);
    cJSON *ho = json_parse(h.out);
    cJSON *recs = cJSON_GetObjectItem(ho, "records");
    cr_assert_eq(cJSON_GetArraySize(recs), 2);
    char first[1024], second[1024];
    const char *key0 = cJSON_GetObjectItem(rec_of(cJSON_GetArrayItem(recs, 0)), "config")->valuestring;
    const char *key1 = cJSON_GetObjectItem(rec_of(cJSON_GetArrayItem(recs, 1)), "config")->valuestring;
    cr_assert_str_neq(key0, key1);
    drop_parallel(key0, first, sizeof first);
    drop_parallel(key1, second, sizeof second);
    cr_assert_str_eq(first, best1, "the 2-thread run began with %s, not the 1-thread best %s", key0, best1);
    cJSON_Delete(ho);
    cli_run_free(&h);
    if (n_other >= 2) { /* the second trial came from the queue too: a 1-thread configuration */
        cli_run h1 = CLI("history", "--op", MATMUL, "--db", db_path, "--cflags", TUNE_CFLAGS, "--json");
        assert_ok(&h1);
        cJSON *h1o = json_parse(h1.out);
        bool is_found = false;
        cJSON *rec;
        cJSON_ArrayForEach(rec, cJSON_GetObjectItem(h1o, "records"))
        {
            char one[1024];
            drop_parallel(cJSON_GetObjectItem(rec_of(rec), "config")->valuestring, one, sizeof one);
            is_found |= strcmp(one, second) == 0;
        }
        cr_assert(is_found, "the 2-thread run's second trial %s is none of the 1-thread configurations", second);
        cJSON_Delete(h1o);
        cli_run_free(&h1);
    }

    /* back at 1 thread: the 2-thread records give configurations too (already measured here: read back) */
    cli_run back = CLI("tune", "--final", "0", "--op", MATMUL, "--tuner", "random", "--trials", "1", "--batch", "1",
                       "--cflags", TUNE_CFLAGS, "--repeat", "1", "--min-repeat-ms", "0.5", "--db", db_path, "--json");
    assert_ok(&back);
    cJSON *k = json_parse(back.out);
    cr_assert_geq(cJSON_GetObjectItem(k, "other_threads")->valueint, 1);
    cr_assert_eq(cJSON_GetObjectItem(k, "from_records")->valueint, 1, "the 1-thread best, read back");
    cJSON_Delete(k);
    cli_run_free(&back);

    /* turned off */
    cli_run off = CLI("tune", "--final", "0", "--op", MATMUL, "--tuner", "random", "--trials", "1", "--batch", "1",
                      "--threads", "2", "--no-other-threads", "--cflags", TUNE_CFLAGS, "--repeat", "1",
                      "--min-repeat-ms", "0.5", "--db", db_path, "--json");
    assert_ok(&off);
    cJSON *f = json_parse(off.out);
    cr_assert_eq(cJSON_GetObjectItem(f, "other_threads")->valueint, 0);
    cJSON_Delete(f);
    cli_run_free(&off);
}

/* The configurations a run measured, oldest first, as one text. */
static void history_configs(const char *db, char *out, size_t cap)
{
    cli_run h = CLI("history", "--op", CONV, "--db", db, "--cflags", TUNE_CFLAGS, "--json");
    assert_ok(&h);
    cJSON *ho = json_parse(h.out);
    cJSON *rec;
    out[0] = '\0';
    cJSON_ArrayForEach(rec, cJSON_GetObjectItem(ho, "records"))
    {
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s\n", cJSON_GetObjectItem(rec_of(rec), "config")->valuestring);
    }
    cJSON_Delete(ho);
    cli_run_free(&h);
}

Test(cli_records, a_run_measures_the_rule_built_seeds_first)
{
    /* two runs with different tuner seeds, each into its own database:
     * with --seeds 3 and 3 trials both measure the same three configurations */
    char dbs[2][300], seen[2][8192];
    for (int i = 0; i < 2; i++) {
        snprintf(dbs[i], sizeof dbs[i], "%s/seeds%d.db", tmp_dir, i);
        cli_run r = CLI("tune", "--final", "0", "--op", CONV, "--tuner", "random", "--seed", i ? "2" : "1",
                        "--seeds", "3", "--trials", "3", "--batch", "3", "--cflags", TUNE_CFLAGS, "--repeat", "1",
                        "--min-repeat-ms", "0.5", "--db", dbs[i], "--json");
        assert_ok(&r);
        cJSON *j = json_parse(r.out);
        cr_assert_eq(cJSON_GetObjectItem(j, "seeds")->valueint, 3);
        cr_assert_eq(cJSON_GetObjectItem(j, "measured")->valueint, 3);
        cJSON_Delete(j);
        cli_run_free(&r);
        history_configs(dbs[i], seen[i], sizeof seen[i]);
        /* a seed is unrolled and vectorized; the convolution reuses its input enough to pad it */
        cr_assert(strstr(seen[i], "unroll=0") == NULL && strstr(seen[i], "vec=none") == NULL, "%s", seen[i]);
        cr_assert(strstr(seen[i], "pad.I=0") == NULL, "%s", seen[i]);
    }
    cr_assert_str_eq(seen[0], seen[1], "the tuner's seed changed what was measured first");

    /* --seeds 0: none; a bad count is refused */
    cli_run off = CLI("tune", "--final", "0", "--op", CONV, "--tuner", "random", "--seeds", "0", "--trials", "1",
                      "--cflags", TUNE_CFLAGS, "--repeat", "1", "--min-repeat-ms", "0.5", "--db", db_path, "--json");
    assert_ok(&off);
    cJSON *f = json_parse(off.out);
    cr_assert_eq(cJSON_GetObjectItem(f, "seeds")->valueint, 0);
    cJSON_Delete(f);
    cli_run_free(&off);
    cli_run bad = CLI("tune", "--op", CONV, "--seeds", "-1", "--db", db_path);
    cr_assert_eq(bad.exit_code, 2);
    cr_assert(strstr(bad.err, "seeds") != NULL, "%s", bad.err);
    cli_run_free(&bad);
}

/* --cold: a run timed with the weights evicted files under weights=cold,
 * starts from the warm run's best, and only --cold finds its records. */
Test(cli_records, a_cold_run_files_apart_and_starts_from_the_warm_best)
{
    const char *dense = "dense:M=1,N=64,K=256,bias=1";
    tune(dense, "3");
    cli_run r = CLI("tune", "--final", "0", "--op", dense, "--tuner", "random", "--trials", "2", "--batch", "2",
                    "--cflags", TUNE_CFLAGS, "--repeat", "3", "--min-repeat-ms", "0.5", "--db", db_path, "--cold",
                    "--seeds", "0", "--json");
    assert_ok(&r);
    cJSON *j = json_parse(r.out);
    int n_other = cJSON_GetObjectItem(j, "other_threads")->valueint;
    cr_assert(n_other >= 1 && n_other <= 3, "a cold run took %d of the warm records first", n_other);
    cJSON_Delete(j);
    cli_run_free(&r);

    cli_run w = CLI("history", "--op", dense, "--db", db_path, "--cflags", TUNE_CFLAGS, "--json");
    assert_ok(&w);
    cJSON *wo = json_parse(w.out);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(wo, "records")), 3, "the warm history is the warm run's");
    cJSON_Delete(wo);
    cli_run_free(&w);
    cli_run c = CLI("history", "--op", dense, "--db", db_path, "--cflags", TUNE_CFLAGS, "--cold", "--json");
    assert_ok(&c);
    cJSON *co = json_parse(c.out);
    cJSON *recs = cJSON_GetObjectItem(co, "records");
    cr_assert_eq(cJSON_GetArraySize(recs), 2);
    for (int i = 0; i < 2; i++) {
        cJSON *t = cJSON_GetObjectItem(rec_of(cJSON_GetArrayItem(recs, i)), "target");
        cr_assert_str_eq(cJSON_GetObjectItem(t, "weights")->valuestring, "cold");
    }
    cJSON_Delete(co);
    cli_run_free(&c);

    /* measure --best --cold times the cold best cold: one call a sample */
    cli_run m = CLI("measure", "--op", dense, "--best", "--db", db_path, "--cflags", TUNE_CFLAGS, "--cold",
                    "--repeat", "4", "--json");
    assert_ok(&m);
    cJSON *mo = json_parse(m.out);
    cr_assert_eq(cJSON_GetObjectItem(mo, "number")->valueint, 1);
    cr_assert_eq(cJSON_GetObjectItem(mo, "n_samples")->valueint, 4);
    cr_assert_not_null(strstr(cJSON_GetObjectItem(cJSON_GetObjectItem(mo, "record"), "config")->valuestring, "v1;"));
    cJSON_Delete(mo);
    cli_run_free(&m);
    EXPECT_USAGE_ERROR("cannot be combined with --threads, --cc, --cflags or --cold", "best", "--op", dense,
                       "--all-targets", "--cold", "--db", db_path);
    EXPECT_USAGE_ERROR("--warm goes with --model", "tune", "--op", dense, "--warm", "--db", db_path);
    EXPECT_USAGE_ERROR("--cold cannot be combined with --measure replay", "tune", "--op", dense, "--cold",
                       "--measure", "replay:x.rltds");
}

Test(cli_records, best_of_an_op_never_tuned_says_what_to_run)
{
    tune(MATMUL, "1");
    cli_run r = CLI("best", "--op", "matmul:M=16,N=24,K=9", "--db", db_path, "--cflags", TUNE_CFLAGS);
    cr_assert_eq(r.exit_code, 1, "exit %d: %s", r.exit_code, r.err);
    cr_assert_str_empty(r.out);
    assert_has(r.err, "rltune: error: no OK record for matmul:M=16,N=24,K=9", "stderr");
    assert_has(r.err, "run 'rltune tune --op matmul:M=16,N=24,K=9", "stderr");
    cli_run h = CLI("history", "--op", "matmul:M=16,N=24,K=9", "--db", db_path, "--all-targets");
    cr_assert_eq(h.exit_code, 1);
    assert_has(h.err, "no records for matmul:M=16,N=24,K=9", "stderr");
    cli_run_free(&h);
    cli_run_free(&r);
}

/* ---- records export / import -------------------------------------------- */

/* history --json --all-targets of a database, without the row ids (an
 * import gives rows new ids). */
static char *history_without_ids(const char *db)
{
    cli_run h = CLI("history", "--op", MATMUL, "--db", db, "--all-targets", "--json");
    assert_ok(&h);
    cJSON *j = json_parse(h.out);
    cJSON *rec;
    cJSON_ArrayForEach(rec, cJSON_GetObjectItem(j, "records")) cJSON_DeleteItemFromObject(rec_of(rec), "id");
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    cli_run_free(&h);
    return text;
}

Test(cli_records, export_then_import_gives_the_same_history)
{
    tune(MATMUL, "4");
    const char *jsonl = tmp_path("records.jsonl");
    const char *fresh = tmp_path("fresh.db");
    cli_run e = CLI("records", "export", "--db", db_path, "--op", MATMUL, "--out", jsonl);
    assert_ok(&e);
    cli_run s = CLI("records", "export", "--db", db_path);
    assert_ok(&s);
    cr_assert_eq(s.out[0], '{');
    cli_run i1 = CLI("records", "import", jsonl, "--db", fresh);
    assert_ok(&i1);
    assert_has(i1.out, "added 4, skipped 0", "first import");
    cli_run i2 = CLI("records", "import", jsonl, "--db", fresh);
    assert_ok(&i2);
    assert_has(i2.out, "added 0, skipped 4", "second import");
    char *a = history_without_ids(db_path), *b = history_without_ids(fresh);
    cr_assert_str_eq(a, b);
    free(a);
    free(b);
    cli_run *runs[] = {&e, &s, &i1, &i2};
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) cli_run_free(runs[k]);
}

Test(cli_records, import_of_a_malformed_line_names_it_and_adds_nothing)
{
    tune(MATMUL, "1");
    cli_run e = CLI("records", "export", "--db", db_path);
    assert_ok(&e);
    char text[16384];
    snprintf(text, sizeof text, "%s{\"v\":1, \"spec\": oops}\n", e.out);
    const char *bad = tmp_path("bad.jsonl");
    tmp_file_write_text(bad, text);
    const char *fresh = tmp_path("fresh.db");
    cli_run r = CLI("records", "import", bad, "--db", fresh);
    assert_usage_error(&r, "bad.jsonl:2");
    assert_has(r.err, "nothing was imported", "stderr");
    cli_run h = CLI("history", "--op", MATMUL, "--db", fresh, "--all-targets");
    cr_assert_eq(h.exit_code, 1, "the import stored records:\n%s", h.out);
    cli_run_free(&h);
    cli_run_free(&r);
    cli_run_free(&e);
}

/* ---- export ------------------------------------------------------------- */

Test(cli_records, export_of_the_best_matmul_builds_and_checks_without_rltune)
{
    tune(MATMUL, "4");
    const char *dir = tmp_path("lib");
    cli_run r = CLI("export", "--op", MATMUL, "--db", db_path, "--cflags", TUNE_CFLAGS, "--out", dir);
    assert_ok(&r);
    assert_has(r.out, "rltune_matmul_16x24x8", "export");
    char h[400];
    snprintf(h, sizeof h, "%s/rltune_matmul_16x24x8.h", dir);
    cli_run_free(&r);
    FILE *f = fopen(h, "r");
    cr_assert_not_null(f);
    char header[16384];
    size_t n = fread(header, 1, sizeof header - 1, f);
    header[n] = '\0';
    fclose(f);
    assert_has(header, "int rltune_matmul_16x24x8(const float *A, const float *B, float *C);", "header");
    assert_has(header, "size_t rltune_matmul_16x24x8_workspace_bytes(void);", "header");
    assert_has(header, "rltune_matmul_16x24x8_ws(const float *A, const float *B, float *C, void *workspace",
               "header");
    assert_export_runs(dir, "rltune_matmul_16x24x8");
}

Test(cli_records, export_of_a_padded_conv2d_builds_and_checks)
{
    tune(CONV, "2");
    const char *dir = tmp_path("conv");
    cli_run r = CLI("export", "--op", CONV, "--db", db_path, "--cflags", TUNE_CFLAGS, "--out", dir);
    assert_ok(&r);
    cli_run_free(&r);
    assert_export_runs(dir, "rltune_conv2d_1x3x7x7x4x3x3x1x1x1");
}

Test(cli_records, export_of_a_schedule_file_needs_no_records)
{
    const char *sched = tmp_path("tiled.sched");
    tmp_file_write_text(sched, "# rltune schedule v1\nsplit i 4\nsplit j 8\nreorder i.o j.o k i.i j.i\n"
                      "cache_write j.o\nunroll i.i\nvectorize j.i\n");
    const char *dir = tmp_path("sched_lib");
    cli_run r = CLI("export", "--op", MATMUL, "--schedule", sched, "--out", dir, "--name", "my_matmul");
    assert_ok(&r);
    cli_run_free(&r);
    assert_export_runs(dir, "my_matmul");
}

Test(cli_records, export_of_a_packed_weight_stages_it_in_prepare)
{
    /* dense's W packed in panels of 4 along j: a weight, staged by _prepare */
    const char *sched = tmp_path("packed.sched");
    tmp_file_write_text(sched, "split j 4\nreorder i j.o k j.i\npack W 0 4\nvectorize j.i\n");
    const char *dir = tmp_path("dense_lib");
    cli_run r = CLI("export", "--op", "dense:M=3,N=10,K=7,bias=1", "--schedule", sched, "--out", dir, "--name",
                    "my_dense");
    assert_ok(&r);
    cli_run_free(&r);
    char path[400];
    snprintf(path, sizeof path, "%s/my_dense.h", dir);
    char *header = tmp_file_read(path, NULL);
    cr_assert_not_null(header);
    assert_has(header, "void my_dense_prepare(const float *W, const float *bias, void *workspace, int n_threads);",
               "header");
    assert_has(header, "W        float[10][7]  weight: only read; my_dense_prepare stages it", "header");
    free(header);
    snprintf(path, sizeof path, "%s/my_dense.c", dir);
    char *source = tmp_file_read(path, NULL);
    cr_assert_not_null(source);
    /* the kernel reads the staged copy; only the prepare function writes it */
    assert_has(source, "void my_dense_kernel_prepare(", "source");
    assert_has(source, "const float *restrict W_s = ", "source");
    free(source);
    assert_export_runs(dir, "my_dense");
}

/* ---- bad input ---------------------------------------------------------- */

Test(cli_records, bad_input_is_a_usage_error)
{
    const char *junk = tmp_path("junk.db");
    tmp_file_write_text(junk, "not a database\n");
    const char *missing = tmp_path("missing.db");
    const char *sched = tmp_path("s.sched");
    tmp_file_write_text(sched, "split i 4\n");
    EXPECT_USAGE_ERROR("--out DIR is required", "export", "--op", MATMUL, "--db", db_path);
    EXPECT_USAGE_ERROR("cannot be combined with --db", "export", "--op", MATMUL, "--schedule", sched, "--db",
                       db_path, "--out", tmp_path("x"));
    EXPECT_USAGE_ERROR("bad library name 'Bad-Name'", "export", "--op", MATMUL, "--schedule", sched, "--out",
                       tmp_path("y"), "--name", "Bad-Name");
    EXPECT_USAGE_ERROR("needs a sub-command: export or import", "records");
    EXPECT_USAGE_ERROR("unknown sub-command 'frob'", "records", "frob");
    EXPECT_USAGE_ERROR("needs the file to import", "records", "import", "--db", db_path);
    EXPECT_USAGE_ERROR("unknown option '--out' for 'rltune records import'", "records", "import", sched, "--out",
                       "x");
    EXPECT_USAGE_ERROR("cannot open", "records", "import", missing, "--db", db_path);
    EXPECT_USAGE_ERROR("not an SQLite database", "best", "--op", MATMUL, "--db", junk);
    EXPECT_USAGE_ERROR("--db", "history", "--op", MATMUL, "--db", missing);
    EXPECT_USAGE_ERROR("not an SQLite database", "records", "export", "--db", junk);
    EXPECT_USAGE_ERROR("--limit", "history", "--op", MATMUL, "--db", db_path, "--limit", "0");
    EXPECT_USAGE_ERROR("cannot be combined with --threads", "best", "--op", MATMUL, "--all-targets", "--threads",
                       "2");
    EXPECT_USAGE_ERROR("no op given", "best", "--db", db_path);
    cr_assert_eq(access(missing, F_OK), -1, "a read-only command created %s", missing);
}
