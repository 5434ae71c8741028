/* Tests of src/experiment/, the runner of `rltune experiment`: the config
 * (paths relative to its directory, defaults, every kind of bad config with
 * its status and a message naming the file and the key, a missing file,
 * the example configs and the fuzz corpus of the parser); opening, which
 * refuses missing datasets and tuner values before anything runs; and the
 * report of a result (rlt_exp_report_make), which carries the config's
 * names and settings, every run and the metrics to the renderers. Then
 * experiments over whole models: their config (labels, the runs'
 * databases, the keys only they take and those they refuse), opening (a
 * model that does not load or has no task, a tuner value a task's space
 * refuses, a run database that is another tuner's, benchmark mode without
 * the databases), and their report (the latency table, results.json, the
 * plots over time and trials, drawn from where every seed has an
 * estimate); and the timing of a network they share with `rltune run`
 * (rlt_net_time). Whole experiments run end to end in
 * tests/cli/test_cli_experiment.c. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "experiment/experiment.h"

#include "../common/exp_config.h"
#include "../common/leaks.h"
#include "../common/onnx_build.h"
#include "../common/tmp.h"
#include "../common/xml_check.h"

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
    static const char *const names[] = {"experiment_replay.json", "experiment_live.json", "experiment_models.json"};
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


/* ---- experiments over whole models --------------------------------------------------- */

#define MODEL_BASE                                                                                      \
    "\"name\": \"m\", \"measure\": \"live\", \"trials\": 8, \"seeds\": 1, \"batch\": 2, "             \
    "\"workloads\": [{\"model\": \"nets/net.onnx\"}]"

Test(experiment, a_model_config_parses)
{
    rlt_exp_config *c = parse_ok("cfg/exp.json", "{" MODEL_BASE ", \"tuners\": [\"random\", {\"name\": \"ga\", "
                                                 "\"label\": \"ga <pop 8>\", \"options\": {\"population\": 8}}]}");
    cr_assert(c->is_model);
    cr_assert_not(c->is_benchmark, "tune is the default mode");
    cr_assert_null(c->db, "no shared database");
    cr_assert_str_eq(c->workloads[0].spec, "nets/net.onnx", "as written");
    cr_assert_str_eq(c->workloads[0].model, "cfg/nets/net.onnx", "relative to the config");
    cr_assert_str_eq(c->workloads[0].label, "net", "the file's name without .onnx");
    cr_assert_str_eq(c->records_dir, "experiment-m/records", "under the default output directory");
    cr_assert_eq(c->run_repeat, 10);
    cr_assert_eq(c->rule_seeds, 0);
    cr_assert_eq(c->time_budget_s, 0);
    char path[256];
    cr_assert(rlt_exp_run_db_path(c, 0, 1, 0, path, sizeof path));
    cr_assert_str_eq(path, "experiment-m/records/net/ga__pop_8_-s0.db");
    cr_assert(rlt_exp_run_cache_path(c, 0, 0, 0, path, sizeof path));
    cr_assert_str_eq(path, "experiment-m/records/net/random-s0.cache");
    rlt_exp_config_destroy(c);

    c = parse_ok("cfg/exp.json", "{\"name\": \"m\", \"measure\": \"live\", \"seeds\": [5], \"mode\": \"benchmark\","
                                 " \"out\": \"o\", \"time_budget_s\": 600, \"run_repeat\": 3, \"rule_seeds\": 8,"
                                 " \"threads\": 2, \"workloads\": [{\"model\": \"/abs/r18.onnx\", \"label\": \"r\"},"
                                 " {\"model\": \"r18.onnx\"}], \"tuners\": [\"xgb-rank\"]}");
    cr_assert(c->is_benchmark);
    cr_assert_eq(c->n_trials, 0, "benchmark mode needs no trials");
    cr_assert_str_eq(c->records_dir, "cfg/o/records", "under the config's out");
    cr_assert_eq(c->time_budget_s, 600);
    cr_assert_eq(c->run_repeat, 3);
    cr_assert_eq(c->rule_seeds, 8);
    cr_assert_str_eq(c->workloads[0].label, "r");
    cr_assert_str_eq(c->workloads[1].label, "r18");
    cr_assert(rlt_exp_run_db_path(c, 1, 0, 5, path, sizeof path));
    cr_assert_str_eq(path, "cfg/o/records/r18/xgb-rank-s5.db");
    rlt_exp_config_destroy(c);

    c = parse_ok("exp.json", "{" MODEL_BASE ", \"records_dir\": \"runs\", \"tuners\": [\"ga\"]}");
    cr_assert_str_eq(c->records_dir, "runs");
    rlt_exp_config_destroy(c);
    assert_no_leaks();
}

Test(experiment, bad_model_configs_name_the_file_and_the_key)
{
    BAD("exp.json: workloads[1].model: an experiment is over ops or over models, not both: workloads[0] is an op",
        "{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 1, \"tuners\": [\"ga\"],"
        " \"workloads\": [{\"op\": \"matmul:M=4,N=4,K=4\"}, {\"model\": \"a.onnx\"}]}");
    BAD("exp.json: workloads[1]: an experiment is over ops or over models, not both: workloads[0] is a model",
        "{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 1, \"tuners\": [\"ga\"],"
        " \"workloads\": [{\"model\": \"a.onnx\"}, {\"op\": \"matmul:M=4,N=4,K=4\"}]}");
    BAD("exp.json: workloads[0].model: a model's tasks are tuned and its network timed live",
        "{\"name\": \"x\", \"measure\": \"replay\", \"trials\": 5, \"seeds\": 1, \"tuners\": [\"ga\"],"
        " \"workloads\": [{\"model\": \"a.onnx\"}]}");
    BAD("exp.json: workloads[0].dataset: a model workload is {\"model\": FILE}",
        "{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 1, \"tuners\": [\"ga\"],"
        " \"workloads\": [{\"model\": \"a.onnx\", \"dataset\": \"d.db\"}]}");
    BAD("exp.json: workloads[0].label: \"label\" names a model workload",
        "{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 1, \"tuners\": [\"ga\"],"
        " \"workloads\": [{\"op\": \"matmul:M=4,N=4,K=4\", \"label\": \"x\"}]}");
    BAD("exp.json: workloads[0].label: 'a b' is not a label",
        "{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 1, \"tuners\": [\"ga\"],"
        " \"workloads\": [{\"model\": \"a.onnx\", \"label\": \"a b\"}]}");
    BAD("exp.json: workloads[1].model: the same model as workloads[0]",
        "{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 1, \"tuners\": [\"ga\"],"
        " \"workloads\": [{\"model\": \"a.onnx\"}, {\"model\": \"a.onnx\", \"label\": \"b\"}]}");
    BAD("exp.json: workloads[1].model: label 'a' is workloads[0]'s already",
        "{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 1, \"tuners\": [\"ga\"],"
        " \"workloads\": [{\"model\": \"a.onnx\"}, {\"model\": \"other/a.onnx\"}]}");
    /* the keys of the other kind of experiment */
    BAD("exp.json: mode: \"mode\" is for an experiment over whole models",
        "{" BASE_LIVE ", \"tuners\": [\"ga\"], \"mode\": \"tune\"}");
    BAD("exp.json: time_budget_s: \"time_budget_s\" is for an experiment over whole models",
        "{" BASE_LIVE ", \"tuners\": [\"ga\"], \"time_budget_s\": 60}");
    BAD("exp.json: db: each run of a model keeps its records in a database of its own",
        "{" MODEL_BASE ", \"tuners\": [\"ga\"], \"db\": \"r.db\"}");
    BAD("exp.json: early_stopping: a model's tasks share one budget",
        "{" MODEL_BASE ", \"tuners\": [\"ga\"], \"early_stopping\": 4}");
    /* values */
    BAD("exp.json: mode: unknown mode 'bench'", "{" MODEL_BASE ", \"tuners\": [\"ga\"], \"mode\": \"bench\"}");
    BAD("exp.json: trials: missing", "{\"name\": \"x\", \"measure\": \"live\", \"seeds\": 1, \"tuners\": [\"ga\"],"
                                     " \"workloads\": [{\"model\": \"a.onnx\"}]}");
    BAD("exp.json: time_budget_s: expected a number above 0",
        "{" MODEL_BASE ", \"tuners\": [\"ga\"], \"time_budget_s\": 0}");
    BAD("exp.json: run_repeat: expected a whole number from 1 to 1000",
        "{" MODEL_BASE ", \"tuners\": [\"ga\"], \"run_repeat\": 0}");
    BAD("exp.json: rule_seeds: expected a whole number from 0 to 64",
        "{" MODEL_BASE ", \"tuners\": [\"ga\"], \"rule_seeds\": 65}");
    BAD("exp.json: records_dir: expected a directory", "{" MODEL_BASE ", \"tuners\": [\"ga\"], \"records_dir\": 3}");
    /* tuners */
    BAD("exp.json: tuners[0].carry_agent: a model's tasks are tuned by sessions of their own",
        "{" MODEL_BASE ", \"tuners\": [{\"name\": \"ga-dqn\", \"carry_agent\": true}]}");
    BAD("exp.json: tuners[1].label: 'untuned' names the network compiled from seed schedules",
        "{" MODEL_BASE ", \"tuners\": [\"ga\", {\"name\": \"random\", \"label\": \"untuned\"}]}");
    BAD("exp.json: tuners[1].label: label 'ga 2' gives its runs' databases the names of tuners[0]'s ('ga_2'",
        "{" MODEL_BASE ", \"tuners\": [{\"name\": \"ga\", \"label\": \"ga_2\"}, {\"name\": \"ga\", \"label\": "
        "\"ga 2\"}]}");
    assert_no_leaks();
}

static uint64_t model_rng = 5;

/* A two-task network (a 3x3 conv with relu, a dense head) in `path`. */
static void write_small_model(const char *path)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, (int64_t[]){1, 3, 8, 8});
    ob_conv_rand(&b, "conv", "x", "c", 3, 4, 3, 1, 1, 1, true, &model_rng);
    ob_node(&b, "Relu", "relu", "c", "r");
    ob_node(&b, "GlobalAveragePool", "gap", "r", "g");
    ob_node(&b, "Flatten", "flat", "g", "f");
    ob_init_rand(&b, "fc_w", 2, (int64_t[]){5, 4}, 0.5f, &model_rng);
    ob_init_rand(&b, "fc_b", 1, (int64_t[]){5}, 0.5f, &model_rng);
    Onnx__NodeProto *fc = ob_node(&b, "Gemm", "fc", "f,fc_w,fc_b", "y");
    ob_attr_i(&b, fc, "transB", 1);
    ob_output(&b, "y");
    cr_assert(ob_write(&b, path), "cannot write %s", path);
    ob_free(&b);
}

/* A network without a task: Relu alone. */
static void write_taskless_model(const char *path)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, (int64_t[]){1, 4});
    ob_node(&b, "Relu", "relu", "x", "y");
    ob_output(&b, "y");
    cr_assert(ob_write(&b, path), "cannot write %s", path);
    ob_free(&b);
}

/* Opening config `text` (written to tmp_dir/exp.json, so that its paths
 * are the test directory's) fails with `status` and a message holding
 * `needle`; nothing is created in the records directory. */
static void expect_open_error(const char *text, rlt_status status, const char *needle)
{
    const char *path = tmp_path("exp.json");
    tmp_file_write_text(path, text);
    rlt_exp_config *c = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_exp_config_load(path, &c, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_exp *e = NULL;
    rlt_status st = rlt_exp_open(c, &e, &d);
    cr_assert_eq(st, status, "%s: got %s (%s)", text, rlt_status_str(st), d.message);
    cr_assert_null(e);
    cr_assert_not_null(strstr(d.message, "exp.json: "), "%s", d.message);
    cr_assert_not_null(strstr(d.message, needle), "message: %s\nlacks: %s", d.message, needle);
    rlt_exp_config_destroy(c);
}

Test(experiment, opening_a_model_experiment_checks_models_tuners_and_run_databases, .timeout = 120)
{
    write_small_model(tmp_path("net.onnx"));
    write_taskless_model(tmp_path("relu.onnx"));
    /* the records directory relative to the config's: the test's own */
    const char *open_base = "\"name\": \"m\", \"measure\": \"live\", \"trials\": 8, \"seeds\": 1, \"batch\": 2, "
                            "\"records_dir\": \"records\"";
    char text[1024];
    snprintf(text, sizeof text, "{%s, \"workloads\": [{\"model\": \"absent.onnx\"}], \"tuners\": [\"ga\"]}",
             open_base);
    expect_open_error(text, RLT_STATUS_IO_ERROR, "workloads[0].model: ");
    tmp_file_write_text(tmp_path("junk.onnx"), "not a model");
    snprintf(text, sizeof text, "{%s, \"workloads\": [{\"model\": \"junk.onnx\"}], \"tuners\": [\"ga\"]}", open_base);
    expect_open_error(text, RLT_STATUS_PARSE_ERROR, "workloads[0].model: ");
    snprintf(text, sizeof text, "{%s, \"workloads\": [{\"model\": \"relu.onnx\"}], \"tuners\": [\"ga\"]}", open_base);
    expect_open_error(text, RLT_STATUS_INVALID_ARGUMENT, "workloads[0].model: ");
    expect_open_error(text, RLT_STATUS_INVALID_ARGUMENT, "has no task to tune");
    snprintf(text, sizeof text,
             "{%s, \"workloads\": [{\"model\": \"net.onnx\"}], \"tuners\": [\"ga\", {\"name\": \"ga-dqn\", "
             "\"options\": {\"ga_dqn_gamma\": 1.5}}]}",
             open_base);
    expect_open_error(text, RLT_STATUS_INVALID_ARGUMENT, "tuners[1].options.ga_dqn_gamma: ");
    expect_open_error(text, RLT_STATUS_INVALID_ARGUMENT, "gamma");
    /* benchmark mode: the runs' databases must be there */
    snprintf(text, sizeof text,
             "{%s, \"mode\": \"benchmark\", \"workloads\": [{\"model\": \"net.onnx\"}], \"tuners\": [\"ga\"]}",
             open_base);
    expect_open_error(text, RLT_STATUS_INVALID_ARGUMENT, "tuners[0] (ga), seed 0, workloads[0] (net): no database");
    cr_assert_not(tmp_exists(tmp_path("records")), "opening made the records directory");

    /* a database that is not a run's, or another tuner's run */
    cr_assert_eq(mkdir(tmp_path("records"), 0755), 0);
    cr_assert_eq(mkdir(tmp_path("records/net"), 0755), 0);
    rlt_db *db = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_open(tmp_path("records/net/ga-s0.db"), &(rlt_db_opts){0}, &db, &d),
                 RLT_STATUS_OK, "%s", d.message);
    snprintf(text, sizeof text, "{%s, \"workloads\": [{\"model\": \"net.onnx\"}], \"tuners\": [\"ga\"]}", open_base);
    expect_open_error(text, RLT_STATUS_INVALID_ARGUMENT, "is not the database of an experiment's run");
    cr_assert_eq(rlt_db_meta_set(db, RLT_EXP_RUN_META_KEY,
                                 "{\"format\": \"rltune-experiment-run\", \"v\": 1, \"tuner\": \"random\", "
                                 "\"options\": {}, \"seed\": 0, \"target\": \"t\", \"tuning_s\": 1, \"curve\": []}",
                                 &d),
                 RLT_STATUS_OK, "%s", d.message);
    expect_open_error(text, RLT_STATUS_INVALID_ARGUMENT, "holds the run of tuner random with options {}, not ga");
    cr_assert_eq(rlt_db_meta_set(db, RLT_EXP_RUN_META_KEY, "{\"format\": \"x\"}", &d), RLT_STATUS_OK);
    expect_open_error(text, RLT_STATUS_INVALID_ARGUMENT, "that is not a run's of rltune experiment");
    rlt_db_close(db);
    assert_no_leaks();
}

/* ---- the report of a model experiment --------------------------------------------------- */

/* A run of model w by tuner t: its estimate known from the second point
 * on, falling from 4 * last to `last` over n points a second apart. */
static rlt_exp_run make_model_run(int w, int t, uint64_t seed, int n, double last, double measured)
{
    rlt_exp_run r = {.workload = w, .tuner = t, .seed = seed};
    rlt_exp_model_run *m = &r.model;
    snprintf(m->db, sizeof m->db, "records/net/t%d-s%d.db", t, (int)seed);
    m->points = rlt_calloc((size_t)n, sizeof *m->points);
    cr_assert_not_null(m->points);
    m->n_points = n;
    for (int k = 0; k < n; k++)
        m->points[k] = (rlt_report_point){.n_trials = 2 * (k + 1),
                                          .wall_s = 1.0 * (k + 1),
                                          .latency_ms = k == 0 ? INFINITY : last * (1 + 3.0 * (n - 1 - k) / (n - 1))};
    m->n_trials = 2 * n;
    m->n_new_trials = 2 * n;
    m->tuning_s = n;
    m->estimate_ms = last;
    m->ended = RLT_EXP_ENDED_TRIALS;
    m->latency = (rlt_exp_latency){.is_measured = true,
                                   .timing = {.median_ms = measured,
                                              .min_ms = measured * 0.9,
                                              .repeat = 10,
                                              .is_checked = true,
                                              .is_correct = true,
                                              .max_error = 1e-7,
                                              .max_reference = 2},
                                   .n_tasks = 2,
                                   .n_tasks_tuned = 2,
                                   .compile_s = 0.5};
    return r;
}

Test(experiment, the_report_of_a_model_experiment_has_its_latency_table_json_and_plots)
{
    rlt_exp_config *c = parse_ok("exp.json", "{\"name\": \"m\", \"measure\": \"live\", \"trials\": 10, "
                                             "\"seeds\": 2, \"batch\": 2, \"time_budget_s\": 30, "
                                             "\"workloads\": [{\"model\": \"net.onnx\"}], "
                                             "\"tuners\": [\"random\", {\"name\": \"ga\", \"label\": \"ga <8>\"}]}");
    rlt_exp_result r = {.n_runs_planned = 4};
    r.runs = rlt_calloc(4, sizeof *r.runs);
    r.workloads = rlt_calloc(1, sizeof *r.workloads);
    cr_assert(r.runs && r.workloads);
    r.runs[r.n_runs++] = make_model_run(0, 0, 0, 5, 2.0, 3.0);
    r.runs[r.n_runs++] = make_model_run(0, 1, 0, 5, 1.0, 2.0);
    r.runs[r.n_runs++] = make_model_run(0, 0, 1, 4, 4.0, 5.0);
    r.runs[r.n_runs++] = make_model_run(0, 1, 1, 5, 1.0, 2.5);
    snprintf(r.machine.cpu_model, sizeof r.machine.cpu_model, "Test CPU");
    r.workloads[0].n_tasks = 2;
    r.workloads[0].flops = 2e6;
    snprintf(r.workloads[0].target, sizeof r.workloads[0].target, "cpu=x");
    r.workloads[0].untuned = (rlt_exp_latency){
        .is_measured = true, .timing = {.median_ms = 6, .min_ms = 5.5, .repeat = 10, .is_checked = true,
                                        .is_correct = true}};
    rlt_exp_report er;
    rlt_diag d = {0};
    cr_assert_eq(rlt_exp_report_make(c, &r, &er, &d), RLT_STATUS_OK, "%s", d.message);
    const rlt_report *rep = &er.report;
    cr_assert(rep->is_model);
    cr_assert_eq(rep->time_budget_s, 30);
    cr_assert_str_eq(rep->workloads[0].spec, "net", "a model goes by its label");
    cr_assert_str_eq(rep->workloads[0].model, "net.onnx");
    cr_assert_eq(rep->runs[1].points, r.runs[1].model.points, "the curve is borrowed");
    cr_assert_str_eq(rep->runs[0].ended, "trials");
    cr_assert_eq(rep->runs[0].n_model_trials, 10);

    /* the figures of (model, tuner): medians over the seeds */
    rlt_report_model_stats s;
    rlt_report_model_stats_compute(rep, 0, 0, &s);
    cr_assert_eq(s.n_runs, 2);
    cr_assert_eq(s.n_correct, 2);
    cr_assert_float_eq(s.estimate_median_ms, 3.0, 1e-12);
    cr_assert_float_eq(s.latency_median_ms, 4.0, 1e-12);
    cr_assert_float_eq(s.latency_min_ms, 3.0, 1e-12);
    cr_assert_float_eq(s.latency_max_ms, 5.0, 1e-12);
    cr_assert_float_eq(s.speedup_median, 0.5 * (6.0 / 3 + 6.0 / 5), 1e-12);
    cr_assert_float_eq(s.trials_median, 9, 1e-12);
    cr_assert_float_eq(s.tuning_total_s, 9, 1e-12);

    /* table.md */
    rlt_str md;
    rlt_str_init(&md);
    rlt_report_table_md(rep, &md);
    cr_assert_not_null(strstr(md.data, "## net\n"), "%s", md.data);
    cr_assert_not_null(strstr(md.data, "| tuner | runs | untuned ms | estimate ms | measured ms | speedup | trials | "
                                       "tuning s | correct |"),
                       "%s", md.data);
    cr_assert_not_null(strstr(md.data, "| random | 2 | 6 | 3 | 4 (3-5) | 1.60x | 9 | 4.5 | 2/2 |"), "%s", md.data);
    cr_assert_not_null(strstr(md.data, "| ga <8> | 2 | 6 | 1 | 2.25 (2-2.5) | 2.70x | 10 | 5 | 2/2 |"), "%s",
                       md.data);
    cr_assert_not_null(strstr(md.data, "and 30 s of tuning"), "%s", md.data);
    rlt_str_free(&md);

    /* results.json */
    char *json = rlt_report_json(rep);
    cJSON *j = cJSON_Parse(json);
    cr_assert_not_null(j, "%s", json);
    cr_assert_str_eq(cJSON_GetObjectItem(j, "kind")->valuestring, "models");
    cr_assert_str_eq(cJSON_GetObjectItem(j, "mode")->valuestring, "tune");
    cJSON *w0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "workloads"), 0);
    cr_assert_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(w0, "untuned"), "median_ms")->valuedouble, 6);
    cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(w0, "plots"), "time")->valuestring, "w1-net-time.svg");
    cJSON *m1 = cJSON_GetArrayItem(cJSON_GetObjectItem(w0, "metrics"), 1);
    cr_assert_str_eq(cJSON_GetObjectItem(m1, "tuner")->valuestring, "ga <8>");
    cr_assert_float_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(m1, "latency_ms"), "median")->valuedouble, 2.25, 1e-12);
    cJSON *run0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "runs"), 0);
    cJSON *curve = cJSON_GetObjectItem(run0, "curve");
    cr_assert_eq(cJSON_GetArraySize(curve), 5);
    cr_assert(cJSON_IsNull(cJSON_GetArrayItem(cJSON_GetArrayItem(curve, 0), 2)), "an unknown estimate is null");
    cr_assert_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(run0, "latency"), "median_ms")->valuedouble, 3);
    cJSON_Delete(j);
    rlt_free(json);

    /* the plots: over time and over trials, from where every seed of a tuner
     * has an estimate, the mean and the band of the seeds */
    for (int by_time = 0; by_time < 2; by_time++) {
        rlt_report_plot plot;
        cr_assert_eq(rlt_report_model_plot_make(rep, 0, by_time, &plot, &d), RLT_STATUS_OK);
        cr_assert_eq(plot.plot.n_series, 2);
        cr_assert(plot.plot.is_legend_top);
        for (int i = 0; i < 2; i++) {
            const rlt_plot_series *se = &plot.plot.series[i];
            cr_assert_gt(se->n, 0);
            cr_assert_not_null(se->x);
            double first_known = by_time ? 2.0 : 4.0; /* the second point of every run */
            cr_assert_geq(se->x[0], first_known - 1e-9, "series %d starts at %g", i, se->x[0]);
            for (int k = 0; k < se->n; k++) {
                cr_assert(isfinite(se->y[k]) && se->lo[k] <= se->y[k] && se->y[k] <= se->hi[k]);
                if (k > 0) cr_assert_gt(se->x[k], se->x[k - 1]);
            }
            cr_assert_float_eq(se->x[se->n - 1], by_time ? 5.0 : 10.0, 1e-9, "the grid ends at the last point");
        }
        /* random's seed 1 ended at 4 s (8 trials) and holds 4.0; seed 0 ends at 2.0 */
        const rlt_plot_series *se = &plot.plot.series[0];
        cr_assert_float_eq(se->y[se->n - 1], 3.0, 1e-12);
        cr_assert_float_eq(se->lo[se->n - 1], 2.0, 1e-12);
        cr_assert_float_eq(se->hi[se->n - 1], 4.0, 1e-12);
        rlt_str svg;
        rlt_str_init(&svg);
        rlt_svg_plot(&plot.plot, true, &svg);
        char err[256];
        cr_assert(xml_check(svg.data, err, sizeof err), "the SVG: %s", err);
        cr_assert_not_null(strstr(svg.data, "ga &lt;8&gt;"));
        rlt_str_free(&svg);
        rlt_report_plot_free(&plot);
    }
    char stem[128];
    rlt_report_model_plot_stem(rep, 0, false, stem, sizeof stem);
    cr_assert_str_eq(stem, "w1-net-trials");

    /* the page: self-contained, escaped */
    rlt_str html;
    rlt_str_init(&html);
    rlt_report_html(rep, NULL, &html);
    cr_assert_not_null(strstr(html.data, "ga &lt;8&gt;"));
    cr_assert_null(strstr(html.data, "ga <8>"));
    cr_assert_not_null(strstr(html.data, "latency estimate over tuning time"));
    cr_assert_not_null(strstr(html.data, "latency estimate over trials"));
    rlt_str_free(&html);

    rlt_exp_report_free(&er);
    rlt_exp_result_free(&r);
    rlt_exp_config_destroy(c);
    assert_no_leaks();
}

/* ---- timing a network (src/api/model_bench.c) ------------------------------------------ */

/* How model experiments and `rltune run` time a network: the first run
 * checked against the reference, the timed runs' median and minimum, the
 * calling thread's CPU affinity as it was afterwards; a wrong output is
 * said, not hidden. */
Test(experiment, a_network_is_timed_checked_and_the_affinity_restored, .timeout = 120)
{
    write_small_model(tmp_path("net.onnx"));
    rlt_model *m = NULL;
    rlt_net *net = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_model_load(tmp_path("net.onnx"), &m, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_net_options no;
    rlt_net_options_init(&no);
    cr_assert_eq(rlt_model_compile(m, &no, &net, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_array *in[1] = {0}, *out[1] = {0}, *ref[1] = {0};
    cr_assert_eq(rlt_model_random_inputs(m, 0, in, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_model_evaluate(m, (const rlt_array *const *)in, ref, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_model_tensor t;
    rlt_model_output(m, 0, &t);
    cr_assert_eq(rlt_array_create(t.elem, t.rank, t.dims, &out[0], &d), RLT_STATUS_OK);

    cpu_set_t before, after;
    cr_assert_eq(sched_getaffinity(0, sizeof before, &before), 0);
    rlt_net_timing_options o;
    rlt_net_timing_options_init(&o);
    cr_assert(o.n_warmup == 2 && o.repeat == 10 && o.is_pinned && !o.is_profiled, "the defaults are run's");
    o.repeat = 3;
    rlt_net_timing timing;
    cr_assert_eq(rlt_net_time(net, (const rlt_array *const *)in, out, (const rlt_array *const *)ref, &o, &timing, &d),
                 RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(sched_getaffinity(0, sizeof after, &after), 0);
    cr_assert(CPU_EQUAL(&before, &after), "the affinity was not restored");
    cr_assert_eq(timing.repeat, 3);
    cr_assert(timing.min_ms > 0 && timing.min_ms <= timing.median_ms);
    cr_assert(timing.is_checked && timing.is_correct, "max error %g of %g", timing.max_error, timing.max_reference);
    cr_assert_gt(timing.max_reference, 0);

    /* a reference the output does not match */
    ((float *)ref[0]->data)[0] += 1.0f;
    cr_assert_eq(rlt_net_time(net, (const rlt_array *const *)in, out, (const rlt_array *const *)ref, NULL, &timing, &d),
                 RLT_STATUS_OK);
    cr_assert(timing.is_checked && !timing.is_correct);
    cr_assert_float_eq(timing.max_error, 1.0, 1e-3);
    cr_assert_eq(timing.repeat, 10, "NULL options are the defaults");
    /* no reference: timed, not checked */
    cr_assert_eq(rlt_net_time(net, (const rlt_array *const *)in, out, NULL, &o, &timing, &d), RLT_STATUS_OK);
    cr_assert(!timing.is_checked && !timing.is_correct);
    o.repeat = 0;
    cr_assert_eq(rlt_net_time(net, (const rlt_array *const *)in, out, NULL, &o, &timing, &d),
                 RLT_STATUS_INVALID_ARGUMENT);

    /* integer outputs must match exactly */
    rlt_array *a = NULL, *b = NULL;
    cr_assert_eq(rlt_array_create(RLT_ELEM_I64, 1, (int64_t[]){3}, &a, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_array_create(RLT_ELEM_I64, 1, (int64_t[]){3}, &b, &d), RLT_STATUS_OK);
    double max_error, max_ref;
    rlt_net_outputs_compare(1, (const rlt_array *const *)&a, (const rlt_array *const *)&b, &max_error, &max_ref);
    cr_assert_eq(max_error, 0);
    ((int64_t *)b->data)[2] = 1;
    rlt_net_outputs_compare(1, (const rlt_array *const *)&a, (const rlt_array *const *)&b, &max_error, &max_ref);
    cr_assert(isinf(max_error));
    rlt_array_destroy(a);
    rlt_array_destroy(b);
    rlt_array_destroy(in[0]);
    rlt_array_destroy(out[0]);
    rlt_array_destroy(ref[0]);
    rlt_net_destroy(net);
    rlt_model_destroy(m);
    assert_no_leaks();
}
