/* Tests of src/experiment/, the runner of `rltune experiment`: the config
 * (paths relative to its directory, defaults, every kind of bad config with
 * its status and a message naming the file and the key, a missing file,
 * the example configs and the fuzz corpus of the parser); opening, which
 * refuses missing datasets and tuner values before anything runs; and the
 * report of a result (rlt_exp_report_make), which carries the config's
 * names and settings, every run and the metrics to the renderers. Whole
 * experiments run end to end in tests/cli/test_cli_experiment.c. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "experiment/experiment.h"

#include "../common/exp_config.h"
#include "../common/leaks.h"
#include "../common/tmp.h"

static char tmp_dir[] = "/tmp/rlt_experiment_XXXXXX";

static void setup(void) { tmp_dir_use(tmp_dir); }

static void teardown(void) { tmp_remove_tree(tmp_dir); }

TestSuite(experiment, .init = setup, .fini = teardown, .timeout = 60);

/* ---- the config ---------------------------------------------------------------------- */

static rlt_exp_config *parse_ok(const char *path, const char *text)
{
    rlt_exp_config *c = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_exp_config_parse(path, text, &c, &d), RLT_STATUS_OK, "%s", d.message);
    return c;
}

Test(experiment, a_config_parses_with_paths_relative_to_its_directory)
{
    rlt_exp_config *c = parse_ok("some/dir/exp.json", REPLAY_CONFIG);
    cr_assert_str_eq(c->name, "hand");
    cr_assert(c->is_replay);
    cr_assert_eq(c->n_trials, 6);
    cr_assert_eq(c->n_seeds, 2);
    cr_assert_eq(c->seeds[1], 7);
    cr_assert_eq(c->batch_size, 16, "the default batch");
    cr_assert_eq(c->early_stopping, 0);
    cr_assert_null(c->db);
    cr_assert_null(c->out);
    cr_assert_eq(c->n_workloads, 2);
    cr_assert_str_eq(c->workloads[0].spec, "matmul:M=4,N=4,K=4");
    cr_assert_str_eq(c->workloads[0].dataset, "some/dir/mm4.db");
    cr_assert_str_eq(c->workloads[0].dataset_text, "mm4.db");
    cr_assert_str_eq(c->workloads[1].dataset, "/abs/b.db");
    cr_assert_eq(strncmp(c->workloads[1].spec, "expr:", 5), 0, "%s", c->workloads[1].spec);
    cr_assert_eq(c->n_tuners, 2);
    cr_assert_str_eq(c->tuners[0].label, "random");
    cr_assert_str_eq(c->tuners[0].options_json, "{}");
    cr_assert_str_eq(c->tuners[1].name, "ga-dqn");
    cr_assert_str_eq(c->tuners[1].label, "ga-dqn <x & y>");
    cr_assert_float_eq(c->tuners[1].opts.ga_dqn_lr, 0.003, 1e-15);
    cr_assert_eq(c->tuners[1].opts.population, 8);
    char buf[128];
    cr_assert_str_eq(rlt_exp_config_out_dir(c, buf, sizeof buf), "experiment-hand");
    rlt_exp_config_destroy(c);

    c = parse_ok("exp.json",
                 "{\"name\": \"n\", \"measure\": \"live\", \"trials\": 3, \"seeds\": 3, \"batch\": 4,"
                 " \"early_stopping\": 5, \"db\": \"r.db\", \"out\": \"o\", \"threads\": 2, \"cc\": \"gcc\","
                 " \"cflags\": \"-O1\", \"repeat\": 1, \"min_repeat_ms\": 0.5, \"timeout\": 2,"
                 " \"workloads\": [{\"op\": \"matmul:M=4,N=4,K=4\"}], \"tuners\": [\"ga\"]}");
    cr_assert_not(c->is_replay);
    cr_assert_eq(c->n_seeds, 3);
    cr_assert_eq(c->seeds[0], 0);
    cr_assert_eq(c->seeds[2], 2);
    cr_assert_str_eq(c->db, "r.db", "no directory: relative to the working directory as it is");
    cr_assert_str_eq(rlt_exp_config_out_dir(c, buf, sizeof buf), "o");
    cr_assert_eq(c->n_threads, 2);
    cr_assert_float_eq(c->min_repeat_ms, 0.5, 1e-15);
    cr_assert_null(c->workloads[0].dataset);
    rlt_exp_config_destroy(c);
    assert_no_leaks();
}

/* ---- bad configs ------------------------------------------------------------------------ */

#define BASE_REPLAY                                                                          \
    "\"name\": \"x\", \"measure\": \"replay\", \"trials\": 5, \"seeds\": 2, "                \
    "\"workloads\": [{\"op\": \"matmul:M=4,N=4,K=4\", \"dataset\": \"d.db\"}]"
#define BASE_LIVE                                                                            \
    "\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 2, "                  \
    "\"workloads\": [{\"op\": \"matmul:M=4,N=4,K=4\"}]"

static void expect_config_error(const char *text, rlt_status status, const char *needle)
{
    rlt_exp_config *c = NULL;
    rlt_diag d = {0};
    rlt_status st = rlt_exp_config_parse("exp.json", text, &c, &d);
    cr_assert_eq(st, status, "%s: got %s (%s), wanted %s", text, rlt_status_str(st), d.message,
                 rlt_status_str(status));
    cr_assert_null(c);
    cr_assert_eq(strncmp(d.message, "exp.json", 8), 0, "the message does not name the file: %s", d.message);
    cr_assert_not_null(strstr(d.message, needle), "%s\nmessage: %s\nlacks: %s", text, d.message, needle);
}

#define BAD(needle, ...) expect_config_error(__VA_ARGS__, RLT_STATUS_INVALID_ARGUMENT, needle)

Test(experiment, bad_configs_name_the_file_and_the_key)
{
    /* JSON itself */
    expect_config_error("{\"name\": \"x\",\n \"trials\": 5,,\n}", RLT_STATUS_PARSE_ERROR, "exp.json:2:");
    expect_config_error("", RLT_STATUS_PARSE_ERROR, "malformed JSON");
    expect_config_error("{} trailing", RLT_STATUS_PARSE_ERROR, "malformed JSON");
    BAD("expected one JSON object", "[1, 2]");
    BAD("exp.json: trials: given twice", "{" BASE_REPLAY ", \"tuners\": [\"ga\"], \"trials\": 6}");
    BAD("exp.json: tuners[0].options.population: given twice",
        "{" BASE_REPLAY ", \"tuners\": [{\"name\": \"ga\", \"options\": {\"population\": 4, \"population\": 5}}]}");
    /* keys */
    BAD("exp.json: trails: unknown key; valid keys: name,", "{" BASE_REPLAY ", \"tuners\": [\"ga\"], \"trails\": 5}");
    BAD("exp.json: workloads[0].sataset: unknown key",
        "{\"name\": \"x\", \"measure\": \"replay\", \"trials\": 5, \"seeds\": 2, \"tuners\": [\"ga\"],"
        " \"workloads\": [{\"op\": \"matmul:M=4,N=4,K=4\", \"sataset\": \"d.db\"}]}");
    BAD("exp.json: tuners[0].lable: unknown key",
        "{" BASE_REPLAY ", \"tuners\": [{\"name\": \"ga\", \"lable\": \"g\"}]}");
    BAD("exp.json: name: missing", "{\"measure\": \"replay\", \"trials\": 5}");
    BAD("exp.json: measure: missing", "{\"name\": \"x\"}");
    BAD("exp.json: trials: missing", "{\"name\": \"x\", \"measure\": \"live\"}");
    BAD("exp.json: tuners: missing", "{" BASE_REPLAY "}");
    /* values */
    BAD("exp.json: name: 'a b' is not a name", "{\"name\": \"a b\", \"measure\": \"live\"}");
    BAD("exp.json: name: expected the experiment's name", "{\"name\": 3}");
    BAD("exp.json: measure: unknown mode 'recorded'", "{\"name\": \"x\", \"measure\": \"recorded\"}");
    BAD("exp.json: trials: expected a whole number from 1 to 1000000, got 0",
        "{\"name\": \"x\", \"measure\": \"live\", \"trials\": 0}");
    BAD("got 1.5", "{\"name\": \"x\", \"measure\": \"live\", \"trials\": 1.5}");
    BAD("got \"ten\"", "{\"name\": \"x\", \"measure\": \"live\", \"trials\": \"ten\"}");
    BAD("exp.json: seeds: expected a count", "{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": []}");
    BAD("exp.json: seeds: expected a whole number from 1 to 1000",
        "{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 0}");
    BAD("exp.json: seeds[1]: seed 4 is already seeds[0]",
        "{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": [4, 4]}");
    BAD("exp.json: seeds[0]: expected a whole number from 0", "{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, "
                                                              "\"seeds\": [-1]}");
    BAD("exp.json: batch: expected a whole number from 1 to 256",
        "{" BASE_REPLAY ", \"tuners\": [\"ga\"], \"batch\": 0}");
    BAD("exp.json: early_stopping:", "{" BASE_REPLAY ", \"tuners\": [\"ga\"], \"early_stopping\": true}");
    BAD("exp.json: min_repeat_ms: expected a number above 0", "{" BASE_LIVE ", \"tuners\": [\"ga\"], "
                                                              "\"min_repeat_ms\": 0}");
    /* the other mode's keys */
    BAD("exp.json: db: a replay stores no records", "{" BASE_REPLAY ", \"tuners\": [\"ga\"], \"db\": \"r.db\"}");
    BAD("exp.json: repeat: a replay runs nothing", "{" BASE_REPLAY ", \"tuners\": [\"ga\"], \"repeat\": 2}");
    BAD("exp.json: workloads[0].dataset: missing",
        "{\"name\": \"x\", \"measure\": \"replay\", \"trials\": 5, \"seeds\": 2, \"tuners\": [\"ga\"],"
        " \"workloads\": [{\"op\": \"matmul:M=4,N=4,K=4\"}]}");
    BAD("exp.json: workloads[0].dataset: a live experiment measures",
        "{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 2, \"tuners\": [\"ga\"],"
        " \"workloads\": [{\"op\": \"matmul:M=4,N=4,K=4\", \"dataset\": \"d.db\"}]}");
    /* workloads */
    BAD("exp.json: workloads: expected a list of 1 to 64 workloads",
        "{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 2, \"workloads\": []}");
    BAD("exp.json: workloads[0]: expected an object",
        "{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 2, \"workloads\": [\"matmul\"]}");
    BAD("exp.json: workloads[0].op: op spec 'matmul:M=0,N=4,K=4'",
        "{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 2, \"workloads\": "
        "[{\"op\": \"matmul:M=0,N=4,K=4\"}]}");
    BAD("exp.json: workloads[0].expr: give either",
        "{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 2, \"workloads\": "
        "[{\"op\": \"matmul:M=4,N=4,K=4\", \"expr\": \"B[i] = A[i]\"}]}");
    BAD("exp.json: workloads[0].shape: missing",
        "{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 2,"
        " \"workloads\": [{\"expr\": \"B[i] = A[i]\"}]}");
    BAD("exp.json: workloads[1]: the same workload as workloads[0]",
        "{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 2, \"workloads\": "
        "[{\"op\": \"matmul:M=4,N=4,K=4\"}, {\"op\": \"matmul:K=4,N=4,M=4\"}]}");
    /* tuners */
    BAD("exp.json: tuners: expected a list of 1 to 32 tuners", "{" BASE_REPLAY ", \"tuners\": \"ga\"}");
    BAD("exp.json: tuners[1]: unknown tuner 'gaa' (tuners: ", "{" BASE_REPLAY ", \"tuners\": [\"ga\", \"gaa\"]}");
    BAD("exp.json: tuners[0].name: unknown tuner 'x'", "{" BASE_REPLAY ", \"tuners\": [{\"name\": \"x\"}]}");
    BAD("exp.json: tuners[0].name: missing", "{" BASE_REPLAY ", \"tuners\": [{\"label\": \"x\"}]}");
    BAD("exp.json: tuners[0]: expected a tuner's name", "{" BASE_REPLAY ", \"tuners\": [7]}");
    BAD("exp.json: tuners[1]: label 'ga' is tuners[0]'s already", "{" BASE_REPLAY ", \"tuners\": [\"ga\", \"ga\"]}");
    BAD("exp.json: tuners[2].options.dqn_horizn: unknown tuner option",
        "{" BASE_REPLAY ", \"tuners\": [\"ga\", \"dqn\", {\"name\": \"dqn\", \"label\": \"d2\", \"options\": "
        "{\"dqn_horizn\": 5}}]}");
    BAD("exp.json: tuners[0].options.dqn_horizon: an option of dqn, not of ga",
        "{" BASE_REPLAY ", \"tuners\": [{\"name\": \"ga\", \"options\": {\"dqn_horizon\": 5}}]}");
    BAD("exp.json: tuners[0].options.dqn_horizon: tuner option dqn_horizon: '0'",
        "{" BASE_REPLAY ", \"tuners\": [{\"name\": \"dqn\", \"options\": {\"dqn_horizon\": 0}}]}");
    BAD("exp.json: tuners[0].options.dqn_reset:",
        "{" BASE_REPLAY ", \"tuners\": [{\"name\": \"dqn\", \"options\": {\"dqn_reset\": \"sideways\"}}]}");
    BAD("exp.json: tuners[0].options.population: expected a number or a string",
        "{" BASE_REPLAY ", \"tuners\": [{\"name\": \"ga\", \"options\": {\"population\": [4]}}]}");
    BAD("exp.json: tuners[0].options: expected an object",
        "{" BASE_REPLAY ", \"tuners\": [{\"name\": \"ga\", \"options\": 4}]}");
    assert_no_leaks();
}

Test(experiment, a_missing_config_file_is_named)
{
    rlt_exp_config *c = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_exp_config_load(tmp_path("absent.json"), &c, &d), RLT_STATUS_IO_ERROR);
    cr_assert_not_null(strstr(d.message, "absent.json"), "%s", d.message);
    cr_assert_null(c);
}

/* What only opening can find: a dataset that is not there, an option
 * value the tuner refuses. Nothing is created either way. */
Test(experiment, opening_refuses_missing_datasets_and_tuner_values_before_anything_runs)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"name\": \"x\", \"measure\": \"replay\", \"trials\": 5, \"seeds\": 2, \"tuners\": [\"ga\"],"
             " \"workloads\": [{\"op\": \"matmul:M=4,N=4,K=4\", \"dataset\": \"%s\"}]}",
             tmp_path("nothing.db"));
    rlt_exp_config *c = parse_ok("exp.json", text);
    rlt_exp *e = NULL;
    rlt_diag d = {0};
    cr_assert_neq(rlt_exp_open(c, &e, &d), RLT_STATUS_OK);
    cr_assert_null(e);
    cr_assert_not_null(strstr(d.message, "exp.json: workloads[0].dataset: "), "%s", d.message);
    cr_assert_not_null(strstr(d.message, "nothing.db"), "%s", d.message);
    struct stat sb;
    cr_assert_neq(stat(tmp_path("nothing.db"), &sb), 0, "a refused replay created its dataset");
    rlt_exp_config_destroy(c);

    snprintf(text, sizeof text,
             "{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 2, \"db\": \"%s\","
             " \"tuners\": [\"ga\", {\"name\": \"ga-dqn\", \"options\": {\"ga_dqn_gamma\": 1.5}}],"
             " \"workloads\": [{\"op\": \"matmul:M=4,N=4,K=4\"}]}",
             tmp_path("records.db"));
    c = parse_ok("exp.json", text);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_exp_open(c, &e, &d), RLT_STATUS_INVALID_ARGUMENT, "%s", d.message);
    cr_assert_not_null(strstr(d.message, "exp.json: tuners[1].options.ga_dqn_gamma: "), "%s", d.message);
    cr_assert_not_null(strstr(d.message, "gamma"), "%s", d.message);
    cr_assert_neq(stat(tmp_path("records.db"), &sb), 0, "a refused experiment created its records database");
    rlt_exp_config_destroy(c);
    assert_no_leaks();
}

/* The configs in examples/ stay valid. */
Test(experiment, the_example_configs_parse)
{
    static const char *const names[] = {"experiment_replay.json", "experiment_live.json"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/examples/%s", RLTUNE_SOURCE_DIR, names[i]);
        rlt_exp_config *c = NULL;
        rlt_diag d = {0};
        cr_assert_eq(rlt_exp_config_load(path, &c, &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_gt(c->n_tuners, 1);
        cr_assert(c->description[0], "%s: say how to run it", names[i]);
        rlt_exp_config_destroy(c);
    }
}

/* The fuzz corpus of the config parser (tests/fuzz/fuzz_experiment.c):
 * files named valid_* parse; the others are refused with PARSE_ERROR or
 * INVALID_ARGUMENT and a message naming the file, handing out nothing. */
Test(experiment, the_config_fuzz_corpus_replays)
{
    const char *corpus = RLTUNE_SOURCE_DIR "/tests/fuzz/corpus/experiment";
    DIR *dp = opendir(corpus);
    cr_assert_not_null(dp, "cannot open %s", corpus);
    int n_files = 0, n_valid = 0;
    struct dirent *e;
    while ((e = readdir(dp))) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", corpus, e->d_name);
        char *text = tmp_file_read(path, NULL);
        rlt_diag d = {0};
        rlt_exp_config *c = NULL;
        rlt_status st = rlt_exp_config_parse(e->d_name, text, &c, &d);
        if (strncmp(e->d_name, "valid_", 6) == 0) {
            cr_assert_eq(st, RLT_STATUS_OK, "%s: %s", e->d_name, d.message);
            cr_assert_not_null(c);
            n_valid++;
        } else {
            cr_assert(st == RLT_STATUS_PARSE_ERROR || st == RLT_STATUS_INVALID_ARGUMENT, "%s: %s", e->d_name,
                      rlt_status_str(st));
            cr_assert_null(c, "%s", e->d_name);
            cr_assert(strstr(d.message, e->d_name), "%s: the message does not name the file: %s", e->d_name,
                      d.message);
        }
        rlt_exp_config_destroy(c);
        free(text);
        n_files++;
    }
    closedir(dp);
    cr_assert_geq(n_files, 20, "the corpus has only %d files", n_files);
    cr_assert_geq(n_valid, 4, "only %d valid files", n_valid);
    assert_no_leaks();
}

/* ---- the report of a result ---------------------------------------------------------- */

/* A run of (workload, tuner) whose curve rises to `best` at measurement
 * `at` (0: stays at half of it) over n measurements. */
static rlt_exp_run make_run(int workload, int tuner, uint64_t seed, int n, int at, double best)
{
    rlt_exp_run r = {.workload = workload, .tuner = tuner, .seed = seed, .had_agent = seed == 7};
    r.tune.n_trials = n;
    r.tune.curve = rlt_calloc((size_t)n, sizeof *r.tune.curve);
    cr_assert_not_null(r.tune.curve);
    for (int k = 0; k < n; k++) r.tune.curve[k] = at > 0 && k + 1 >= at ? best : best * 0.5;
    r.tune.best_gflops = r.tune.curve[n - 1];
    snprintf(r.tune.best_config, sizeof r.tune.best_config, "tile=%d", n);
    r.tune.wall_s = 0.1 * (seed + 1);
    r.tune.tuner_s = 0.01 * (3 - seed);
    r.tune.n_failed = 1;
    r.tune.n_measured = 2;
    r.tune.n_from_db = 3;
    r.tune.n_absent = 4;
    r.tune.was_stopped_early = seed == 3;
    return r;
}

/* The report holds what the renderers need of the config and the result,
 * without copying a curve, and the metrics of every (workload, tuner). */
Test(experiment, the_report_of_a_result_carries_the_config_every_run_and_the_metrics)
{
    rlt_exp_config *c = parse_ok("some/exp.json", REPLAY_CONFIG);
    rlt_exp_result r = {.n_runs_planned = 8, .was_stopped = true};
    r.runs = rlt_calloc(8, sizeof *r.runs);
    r.workloads = rlt_calloc(2, sizeof *r.workloads);
    cr_assert(r.runs && r.workloads);
    r.runs[r.n_runs++] = make_run(0, 0, 3, 6, 2, 10);
    r.runs[r.n_runs++] = make_run(0, 1, 3, 6, 5, 10);
    r.runs[r.n_runs++] = make_run(0, 0, 7, 4, 3, 8);
    r.runs[r.n_runs++] = make_run(0, 1, 7, 6, 0, 10);
    snprintf(r.machine.cpu_model, sizeof r.machine.cpu_model, "Test CPU");
    r.machine.n_cores = 2;
    r.machine.vector_floats = 8;
    r.machine.has_fma = true;
    r.workloads[0].best_known_gflops = 10;
    snprintf(r.workloads[0].best_known_source, sizeof r.workloads[0].best_known_source, "the dataset");
    snprintf(r.workloads[0].target, sizeof r.workloads[0].target, "cpu=x");
    r.workloads[0].dataset.is_complete = true;
    r.workloads[0].dataset.n_configs = 17;
    snprintf(r.workloads[0].dataset.fixed, sizeof r.workloads[0].dataset.fixed, "cc=gcc");
    r.workloads[0].dataset.n_threads = 2;

    rlt_exp_report er;
    rlt_diag d = {0};
    cr_assert_eq(rlt_exp_report_make(c, &r, &er, &d), RLT_STATUS_OK, "%s", d.message);
    const rlt_report *rep = &er.report;
    cr_assert_str_eq(rep->name, "hand");
    cr_assert_str_eq(rep->description, c->description);
    cr_assert_str_eq(rep->config_path, "some/exp.json");
    cr_assert_eq(rep->config_text, c->text);
    cr_assert(rep->is_replay);
    cr_assert_null(rep->db);
    cr_assert_eq(rep->n_trials, 6);
    cr_assert_eq(rep->batch_size, 16);
    cr_assert_eq(rep->n_seeds, 2);
    cr_assert_eq(rep->seeds[1], 7);
    cr_assert_str_eq(rep->machine.cpu_model, "Test CPU");
    cr_assert(rep->machine.has_fma);
    cr_assert_eq(rep->n_tuners, 2);
    cr_assert_str_eq(rep->tuners[1].label, "ga-dqn <x & y>");
    cr_assert_str_eq(rep->tuners[1].name, "ga-dqn");
    cr_assert_str_eq(rep->tuners[1].options_json, c->tuners[1].options_json);
    cr_assert_eq(rep->n_workloads, 2);
    cr_assert_str_eq(rep->workloads[0].spec, "matmul:M=4,N=4,K=4");
    cr_assert_str_eq(rep->workloads[0].dataset, "some/mm4.db");
    cr_assert(rep->workloads[0].dataset_info.is_complete);
    cr_assert_eq(rep->workloads[0].dataset_info.n_configs, 17);
    cr_assert_str_eq(rep->workloads[0].dataset_info.fixed, "cc=gcc");
    cr_assert_eq(rep->workloads[0].dataset_info.n_threads, 2);
    cr_assert_str_eq(rep->workloads[0].target, "cpu=x");
    cr_assert_eq(rep->workloads[0].best_known_gflops, 10);
    cr_assert_str_eq(rep->workloads[0].best_known_source, "the dataset");
    cr_assert_eq(rep->n_runs_planned, 8);
    cr_assert_eq(rep->n_runs, 4);
    cr_assert(rep->was_stopped);
    for (int i = 0; i < r.n_runs; i++) {
        const rlt_report_run *run = &rep->runs[i];
        const rlt_tune_result *t = &r.runs[i].tune;
        cr_assert_eq(run->workload, r.runs[i].workload);
        cr_assert_eq(run->tuner, r.runs[i].tuner);
        cr_assert_eq(run->seed, r.runs[i].seed);
        cr_assert_eq(run->had_agent, r.runs[i].had_agent);
        cr_assert_eq(run->n_trials, t->n_trials);
        cr_assert_eq(run->curve, t->curve, "the curve is borrowed");
        cr_assert_eq(run->best_gflops, t->best_gflops);
        cr_assert_str_eq(run->best_config, t->best_config);
        cr_assert_eq(run->wall_s, t->wall_s);
        cr_assert_eq(run->tuner_s, t->tuner_s);
        cr_assert(run->n_measured == 2 && run->n_from_db == 3 && run->n_failed == 1 && run->n_absent == 4);
        cr_assert_eq(run->was_stopped_early, t->was_stopped_early);
    }
    /* the metrics: those of rlt_report_stats_compute, per (workload, tuner) */
    cr_assert_eq(rep->stats, er.stats);
    for (int w = 0; w < 2; w++)
        for (int t = 0; t < 2; t++) {
            rlt_report_stats want;
            rlt_report_stats_compute(rep->runs, rep->n_runs, w, t, rep->workloads[w].best_known_gflops, &want);
            const rlt_report_stats *got = &rep->stats[w * 2 + t];
            cr_assert(got->n_runs == want.n_runs && got->best_median == want.best_median &&
                          got->best_min == want.best_min && got->best_max == want.best_max &&
                          got->wall_total_s == want.wall_total_s && got->tuner_total_s == want.tuner_total_s &&
                          got->n_failed == want.n_failed && got->n_absent == want.n_absent,
                      "stats of (%d, %d)", w, t);
            for (int f = 0; f < RLT_REPORT_N_REACH; f++)
                cr_assert(got->is_reached[f] == want.is_reached[f] && got->n_reached[f] == want.n_reached[f] &&
                              got->reach_median[f] == want.reach_median[f],
                          "reach %d of (%d, %d)", f, w, t);
        }
    cr_assert_eq(rep->stats[0].n_runs, 2);
    cr_assert_eq(rep->stats[2].n_runs, 0, "workload 1 has no runs");
    rlt_exp_report_free(&er);
    cr_assert_null(er.runs);
    rlt_exp_result_free(&r);
    rlt_exp_config_destroy(c);
    assert_no_leaks();
}

