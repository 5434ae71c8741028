/* End-to-end tests of `rltune experiment` (cmd_experiment.c, src/report/)
 * with the real binary: a replayed comparison of three tuners (one of them
 * ga-dqn with options and a label that needs escaping) over two seeds on a
 * sampled dataset of matmul 4x4x4 made here with `rltune dataset`, whose
 * every output is checked (the SVG well-formed, the HTML self-contained
 * with well-formed inline plots, results.json complete, the best known the
 * dataset's best, the PNG where gnuplot is installed); the same config
 * again gives the same results.json apart from wall times, also without
 * gnuplot (then said once on stderr); a small live experiment recording
 * into a database; an agent carried from one workload to the next
 * (carry_agent); Ctrl-C, which lets the run in flight finish and still
 * writes the report; and bad configs: exit 2, one error line naming the
 * file and the key, and no output directory. Then experiments over a
 * whole model (a two-task network written here with onnx_build.h): tune
 * mode's outputs (the latency table on stdout, results.json, the plots
 * over time and trials, the runs' databases), a rerun that measures
 * nothing and one with a larger budget that continues each run's curve,
 * benchmark mode, a time budget, and bad model configs. The compile cache
 * of the measuring runs is $RLTUNE_CACHE_DIR, set by CTest (a model's
 * runs build into caches of their own). */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>

#include "cli_runner.h"
#include "../common/json.h"
#include "../common/onnx_build.h"
#include "../common/procs.h"
#include "../common/text.h"
#include "../common/tmp.h"
#include "../common/xml_check.h"

#define OP "matmul:M=4,N=4,K=4"
#define STEM "w1-matmul_M_4_N_4_K_4"
#define CFLAGS "-O1 -march=native"
#define SAMPLES "32"

static char tmp_dir[] = "/tmp/rlt_cli_exp_XXXXXX";

static void setup(void) { tmp_dir_use(tmp_dir); }

static void teardown(void) { tmp_remove_tree(tmp_dir); }

TestSuite(cli_experiment, .init = setup, .fini = teardown, .timeout = 120);

static char *read_in(const char *dir, const char *name)
{
    const char *path = tmp_path_in(dir, name);
    cr_assert(tmp_exists(path), "%s was not written", path);
    return tmp_file_read(path, NULL);
}

/* The sampled dataset of OP, in tmp_dir/ds.db. */
static void make_dataset(void)
{
    cli_run r = CLI("dataset", "--op", OP, "--out", tmp_path("ds.db"), "--samples", SAMPLES, "--cflags", CFLAGS,
                    "--repeat", "1", "--min-repeat-ms", "0.5", "--batch", "8", "--json");
    assert_ok(&r);
    cli_run_free(&r);
}

/* The dataset's best GFLOP/s, as `rltune best` reads it. */
static double dataset_best(void)
{
    cli_run r = CLI("best", "--op", OP, "--db", tmp_path("ds.db"), "--cflags", CFLAGS, "--json");
    assert_ok(&r);
    cJSON *j = json_parse(r.out);
    double best = cJSON_GetObjectItem(j, "gflops")->valuedouble;
    cJSON_Delete(j);
    cli_run_free(&r);
    return best;
}

/* Paths in the config are relative to its directory: tmp_dir. */
static const char replay_config[] =
    "{\n"
    "  \"name\": \"replay-test\",\n"
    "  \"description\": \"three tuners, two seeds\",\n"
    "  \"measure\": \"replay\",\n"
    "  \"trials\": 12,\n"
    "  \"seeds\": [1, 2],\n"
    "  \"batch\": 4,\n"
    "  \"workloads\": [{\"op\": \"" OP "\", \"dataset\": \"ds.db\"}],\n"
    "  \"tuners\": [\"random\", \"ga\",\n"
    "             {\"name\": \"ga-dqn\", \"label\": \"ga-dqn <small & \\\"fast\\\">\",\n"
    "              \"options\": {\"population\": 8, \"ga_dqn_learn_start\": 8, \"ga_dqn_minibatch\": 8}}],\n"
    "  \"out\": \"out\"\n"
    "}\n";

static void check_self_contained_html(const char *html)
{
    static const char *const forbidden[] = {"src=", "href=", "url(", "@import", "<script", "<link", "<iframe",
                                            "<object", "<embed", "<img"};
    for (size_t i = 0; i < sizeof forbidden / sizeof forbidden[0]; i++)
        cr_assert_null(strcasestr(html, forbidden[i]), "report.html has '%s'", forbidden[i]);
    const char *svg = strstr(html, "<svg");
    cr_assert_not_null(svg, "report.html has no inline plot");
    const char *end = strstr(svg, "</svg>");
    cr_assert_not_null(end);
    char *inline_svg = strndup(svg, (size_t)(end - svg) + 6);
    char err[256];
    cr_assert(xml_check(inline_svg, err, sizeof err), "the inline SVG: %s", err);
    free(inline_svg);
}

/* results.json without its times (wall_s, tuner_s), printed: what two
 * runs of one replayed config must agree on. */
static char *without_wall_times(const char *json)
{
    cJSON *j = cJSON_Parse(json);
    cr_assert_not_null(j, "not JSON:\n%.300s", json);
    cJSON_DeleteItemFromObject(j, "out");
    cJSON *w, *m, *run;
    cJSON_ArrayForEach(w, cJSON_GetObjectItem(j, "workloads"))
    {
        cJSON_ArrayForEach(m, cJSON_GetObjectItem(w, "metrics"))
        {
            cJSON_DeleteItemFromObject(m, "wall_s");
            cJSON_DeleteItemFromObject(m, "tuner_s");
        }
    }
    cJSON_ArrayForEach(run, cJSON_GetObjectItem(j, "runs"))
    {
        cJSON_DeleteItemFromObject(run, "wall_s");
        cJSON_DeleteItemFromObject(run, "tuner_s");
    }
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    cr_assert(strstr(text, "wall_s") == NULL && strstr(text, "tuner_s") == NULL, "a time left: %s", text);
    return text;
}

Test(cli_experiment, a_replayed_comparison_writes_every_output)
{
    make_dataset();
    const char *config = tmp_path("exp.json");
    tmp_file_write_text(config, replay_config);
    cli_run r = CLI("experiment", "--config", config);
    assert_ok(&r);
    const char *out = tmp_path("out");
    assert_has(r.out, "# Experiment replay-test", "stdout");
    assert_has(r.out, "| tuner | runs | best GFLOP/s: median (min-max) | to 90% | to 95% | to 99% |", "stdout");
    assert_has(r.out, "| ga-dqn <small & \"fast\"> | 2 |", "stdout");
    assert_has(r.out, "6 of 6 runs done", "stdout");
    assert_has(r.out, "/report.html", "stdout");

    /* results.json: every run, its curve, the metrics */
    char *json = read_in(out, "results.json");
    cJSON *j = cJSON_Parse(json);
    cr_assert_not_null(j, "results.json does not parse");
    cr_assert_eq(cJSON_GetObjectItem(j, "v")->valueint, 1);
    cr_assert_str_eq(cJSON_GetObjectItem(j, "measure")->valuestring, "replay");
    cr_assert_eq(cJSON_GetObjectItem(j, "runs_done")->valueint, 6);
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "interrupted")));
    cJSON *runs = cJSON_GetObjectItem(j, "runs");
    cr_assert_eq(cJSON_GetArraySize(runs), 6);
    double best = dataset_best();
    cJSON *run;
    double best_of_runs = 0;
    cJSON_ArrayForEach(run, runs)
    {
        cJSON *curve = cJSON_GetObjectItem(run, "curve");
        cr_assert_eq(cJSON_GetArraySize(curve), 12);
        cr_assert_eq(cJSON_GetObjectItem(run, "n_absent")->valueint, 0, "replays stay inside the dataset");
        cr_assert_eq(cJSON_GetObjectItem(run, "measured")->valueint, 0, "a replay measures nothing");
        double b = cJSON_GetObjectItem(run, "best_gflops")->valuedouble;
        cr_assert_leq(b, best);
        cr_assert_eq(cJSON_GetArrayItem(curve, 11)->valuedouble, b);
        best_of_runs = b > best_of_runs ? b : best_of_runs;
    }
    cJSON *w0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "workloads"), 0);
    cJSON *known = cJSON_GetObjectItem(w0, "best_known");
    cr_assert_eq(cJSON_GetObjectItem(known, "gflops")->valuedouble, best, "the best known is the dataset's best");
    assert_has(cJSON_GetObjectItem(known, "source")->valuestring, "the best in the dataset", "best_known.source");
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(w0, "metrics")), 3);
    cr_assert_str_eq(cJSON_GetObjectItem(w0, "plot")->valuestring, STEM ".svg");
    cJSON_Delete(j);
    free(json);

    /* the plot, the table, the report */
    char *svg = read_in(out, STEM ".svg");
    char err[256];
    cr_assert(xml_check(svg, err, sizeof err), "the SVG is not well-formed: %s", err);
    assert_has(svg, "ga-dqn &lt;small &amp; &quot;fast&quot;&gt;", "the SVG");
    free(svg);
    char *md = read_in(out, "table.md");
    cr_assert_not_null(strstr(r.out, md), "stdout holds table.md");
    free(md);
    char *html = read_in(out, "report.html");
    check_self_contained_html(html);
    assert_has(html, "ga-dqn &lt;small &amp; &quot;fast&quot;&gt;", "report.html");
    assert_has(html, "three tuners, two seeds", "report.html");
    free(html);

    /* the PNG where gnuplot is installed, else a note on stderr */
    char png_path[600];
    snprintf(png_path, sizeof png_path, "%s/%s.png", out, STEM);
    if (strstr(r.err, "gnuplot not found")) {
        cr_log_warn("gnuplot is not installed: no PNG checked");
        cr_assert_not(tmp_exists(png_path));
    } else {
        cr_assert_str_empty(r.err, "stderr: %s", r.err);
        size_t len = 0;
        char *png = tmp_file_read(png_path, &len);
        cr_assert(len > 8 && memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0, "not a PNG");
        free(png);
    }
    cli_run_free(&r);
}

Test(cli_experiment, the_same_config_gives_the_same_results_also_without_gnuplot)
{
    make_dataset();
    const char *config = tmp_path("exp.json");
    tmp_file_write_text(config, replay_config);
    cli_run a = CLI("experiment", "--config", config, "--out", tmp_path("a"));
    assert_ok(&a);
    cli_run_free(&a);
    cr_assert_eq(setenv("RLTUNE_GNUPLOT", tmp_path("no-gnuplot-here"), 1), 0);
    cli_run b = CLI("experiment", "--config", config, "--out", tmp_path("b"), "--json");
    unsetenv("RLTUNE_GNUPLOT");
    assert_ok(&b);
    /* gnuplot's absence is said once, and nothing else is */
    const char *note = "rltune: note: gnuplot not found: PNG plots skipped";
    cr_assert_eq(strncmp(b.err, note, strlen(note)), 0, "stderr: %s", b.err);
    cr_assert_eq(text_count(b.err, "\n"), 1, "stderr: %s", b.err);
    cr_assert_not(tmp_exists(tmp_path("b/" STEM ".png")));
    cr_assert(tmp_exists(tmp_path("b/" STEM ".svg")));
    cr_assert(tmp_exists(tmp_path("b/" STEM ".gp")), "the script is written all the same");

    /* --json: one object, results.json's plus "out" */
    cJSON *j = json_parse_object(b.out);
    cr_assert_str_eq(cJSON_GetObjectItem(j, "out")->valuestring, tmp_path("b"));
    cJSON_Delete(j);

    char *ja = read_in(tmp_path("a"), "results.json");
    char *jb = read_in(tmp_path("b"), "results.json");
    char *sa = without_wall_times(ja), *sb = without_wall_times(jb), *sout = without_wall_times(b.out);
    cr_assert_str_eq(sa, sb, "two runs of one config differ");
    cr_assert_str_eq(sb, sout, "stdout's JSON is not results.json's");
    free(sa);
    free(sb);
    free(sout);
    free(ja);
    free(jb);
    char *html = read_in(tmp_path("b"), "report.html");
    assert_has(html, "gnuplot was not found", "report.html");
    free(html);
    cli_run_free(&b);
}

#define LIVE_CONFIG(extra)                                                                                    \
    "{\"name\": \"live-test\", \"measure\": \"live\", \"trials\": " extra ", \"batch\": 3,"                   \
    " \"db\": \"records.db\", \"out\": \"live\", \"cflags\": \"" CFLAGS "\", \"repeat\": 1,"                  \
    " \"min_repeat_ms\": 0.5, \"workloads\": [{\"op\": \"" OP "\"}],"

Test(cli_experiment, a_live_experiment_measures_into_its_database)
{
    const char *config = tmp_path("live.json");
    tmp_file_write_text(config, LIVE_CONFIG("4") " \"seeds\": 2, \"tuners\": [\"random\", \"ga\"]}");
    cli_run r = CLI("experiment", "--config", config, "--json");
    assert_ok(&r);
    cJSON *j = json_parse_object(r.out);
    cr_assert_str_eq(cJSON_GetObjectItem(j, "measure")->valuestring, "live");
    cr_assert_str_eq(cJSON_GetObjectItem(j, "db")->valuestring, tmp_path("records.db"));
    cr_assert_eq(cJSON_GetObjectItem(j, "runs_done")->valueint, 4);
    cJSON *run;
    double best = 0;
    cJSON_ArrayForEach(run, cJSON_GetObjectItem(j, "runs"))
    {
        cr_assert_eq(cJSON_GetObjectItem(run, "trials")->valueint, 4);
        int measured = cJSON_GetObjectItem(run, "measured")->valueint;
        cr_assert_eq(measured + cJSON_GetObjectItem(run, "from_records")->valueint, 4);
        double b = cJSON_GetObjectItem(run, "best_gflops")->valuedouble;
        best = b > best ? b : best;
    }
    cJSON *w0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "workloads"), 0);
    cJSON *known = cJSON_GetObjectItem(w0, "best_known");
    cr_assert_geq(cJSON_GetObjectItem(known, "gflops")->valuedouble, best);
    assert_has(cJSON_GetObjectItem(known, "source")->valuestring, "records in", "best_known.source");
    assert_has(cJSON_GetObjectItem(w0, "target")->valuestring, "cc=gcc -O1 -march=native", "target");
    cJSON_Delete(j);
    cr_assert(tmp_exists(tmp_path("live/report.html")));

    /* the records are there for `best` */
    cli_run b = CLI("best", "--op", OP, "--db", tmp_path("records.db"), "--cflags", CFLAGS, "--json");
    assert_ok(&b);
    cli_run_free(&b);
    cli_run_free(&r);
}

Test(cli_experiment, ctrl_c_finishes_the_run_in_flight_and_writes_the_report)
{
    const char *config = tmp_path("live.json");
    tmp_file_write_text(config, LIVE_CONFIG("6") " \"seeds\": 30, \"tuners\": [\"random\", \"ga\"]}");
    const char *args[] = {"experiment", "--config", config, "--json", NULL};
    pid_t pid = cli_spawn(args, tmp_path("stdout"), tmp_path("stderr"));
    /* the output directory is made just before the runs start */
    double t0 = now_s();
    while (!tmp_exists(tmp_path("live")) && now_s() - t0 < 60)
        sleep_ms(20);
    cr_assert(tmp_exists(tmp_path("live")), "the experiment never started");
    sleep_ms(300);
    cr_assert_eq(kill(pid, SIGINT), 0);
    int status = cli_wait(pid, 90);
    char *err = tmp_file_read(tmp_path("stderr"), NULL);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d, stderr:\n%s", status, err);
    free(err);
    char *out = tmp_file_read(tmp_path("stdout"), NULL);
    cJSON *j = json_parse_object(out);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "interrupted")));
    int done = cJSON_GetObjectItem(j, "runs_done")->valueint;
    cr_assert(done >= 1 && done < 60, "%d runs done", done);
    cJSON *run;
    cJSON_ArrayForEach(run, cJSON_GetObjectItem(j, "runs"))
        cr_assert_eq(cJSON_GetObjectItem(run, "trials")->valueint, 6, "a run was cut short");
    cJSON_Delete(j);
    free(out);
    char *json = read_in(tmp_path("live"), "results.json");
    assert_has(json, "\"interrupted\":true", "results.json");
    free(json);
    cr_assert(tmp_exists(tmp_path("live/report.html")));
}

/* ---- bad configs -------------------------------------------------------------------- */

/* The config `text` is refused: exit 2, one error line naming the config
 * file and `needle`, and no output directory. */
static void expect_refused(const char *text, const char *needle)
{
    const char *config = tmp_path("bad.json");
    tmp_file_write_text(config, text);
    cli_run r = CLI("experiment", "--config", config);
    assert_usage_error(&r, needle);
    assert_has(r.err, "bad.json", "stderr");
    cli_run_free(&r);
    cr_assert_not(tmp_exists(tmp_path("out")), "a refused config made its output directory");
    cr_assert_not(tmp_exists(tmp_path("records.db")), "a refused config made its database");
}

/* carry_agent: seed by seed, the agent a run ends with starts the same
 * tuner's run on the next workload (not the first), results.json says
 * which runs did, and the agents' directory is gone afterwards. */
Test(cli_experiment, a_carried_agent_starts_the_next_workload)
{
    make_dataset();
    cli_run m = CLI("dataset", "--op", "matmul:M=4,N=4,K=8", "--out", tmp_path("ds2.db"), "--samples", SAMPLES,
                    "--cflags", CFLAGS, "--repeat", "1", "--min-repeat-ms", "0.5", "--batch", "8", "--json");
    assert_ok(&m);
    cli_run_free(&m);
    const char *config = tmp_path("carry.json");
    tmp_file_write_text(config, "{\"name\": \"carry\", \"measure\": \"replay\", \"trials\": 12, \"seeds\": 2,"
                                " \"batch\": 4, \"out\": \"out\", \"workloads\": [{\"op\": \"" OP
                                "\", \"dataset\": \"ds.db\"}, {\"op\": \"matmul:M=4,N=4,K=8\", \"dataset\": \"ds2.db\"}],"
                                " \"tuners\": [{\"name\": \"ga-dqn\", \"label\": \"carried\", \"carry_agent\": true,"
                                " \"options\": {\"population\": 8, \"ga_dqn_learn_start\": 8, \"ga_dqn_minibatch\": 8}},"
                                " {\"name\": \"ga-dqn\", \"label\": \"fresh\","
                                " \"options\": {\"population\": 8, \"ga_dqn_learn_start\": 8, \"ga_dqn_minibatch\": 8}}]}");
    char agents[600];
    snprintf(agents, sizeof agents, "%s/agents", tmp_dir);
    cr_assert_eq(mkdir(agents, 0700), 0);
    cr_assert_eq(setenv("TMPDIR", agents, 1), 0);
    cli_run r = CLI("experiment", "--config", config, "--json");
    assert_ok(&r);
    cJSON *j = json_parse_object(r.out);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "tuners"), 0), "carry_agent")));
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "tuners"), 1), "carry_agent")));
    cJSON *run;
    int n_runs = 0, n_carried = 0;
    cJSON_ArrayForEach(run, cJSON_GetObjectItem(j, "runs"))
    {
        bool carried = cJSON_IsTrue(cJSON_GetObjectItem(run, "carried_agent"));
        bool expected = cJSON_GetObjectItem(run, "workload")->valueint == 1 &&
                        strcmp(cJSON_GetObjectItem(run, "tuner")->valuestring, "carried") == 0;
        cr_assert_eq(carried, expected, "run %d: carried_agent %d", n_runs, carried);
        n_carried += carried;
        n_runs++;
    }
    cr_assert_eq(n_runs, 8);
    cr_assert_eq(n_carried, 2);
    cJSON_Delete(j);
    cli_run_free(&r);
    /* nothing left in the agents' directory's parent */
    DIR *d = opendir(agents);
    cr_assert_not_null(d);
    struct dirent *ent;
    int left = 0;
    while ((ent = readdir(d)))
        if (strcmp(ent->d_name, ".") && strcmp(ent->d_name, "..")) left++;
    closedir(d);
    cr_assert_eq(left, 0, "the carried agents were left in %s", agents);
}

Test(cli_experiment, bad_configs_are_refused_before_anything_runs)
{
    make_dataset();
    expect_refused("{\"name\": \"x\",", "malformed JSON");
    expect_refused("{\"name\": \"x\", \"measure\": \"replay\", \"trials\": 5, \"seeds\": 2, \"out\": \"out\","
                   " \"workloads\": [{\"op\": \"" OP "\", \"dataset\": \"ds.db\"}], \"tuners\": [\"ga\"],"
                   " \"sedes\": 3}",
                   "sedes: unknown key");
    expect_refused("{\"name\": \"x\", \"measure\": \"replay\", \"trials\": 5, \"seeds\": 2, \"out\": \"out\","
                   " \"workloads\": [{\"op\": \"" OP "\", \"dataset\": \"ds.db\"}],"
                   " \"tuners\": [\"ga\", {\"name\": \"dqn\", \"options\": {\"dqn_horizon\": -3}}]}",
                   "tuners[1].options.dqn_horizon: ");
    /* what only opening finds: a missing dataset, one of another op, a value the tuner refuses */
    expect_refused("{\"name\": \"x\", \"measure\": \"replay\", \"trials\": 5, \"seeds\": 2, \"out\": \"out\","
                   " \"workloads\": [{\"op\": \"" OP "\", \"dataset\": \"ds.db\"},"
                   " {\"op\": \"matmul:M=8,N=4,K=4\", \"dataset\": \"nothing.db\"}], \"tuners\": [\"ga\"]}",
                   "workloads[1].dataset: ");
    expect_refused("{\"name\": \"x\", \"measure\": \"replay\", \"trials\": 5, \"seeds\": 2, \"out\": \"out\","
                   " \"workloads\": [{\"op\": \"matmul:M=8,N=4,K=4\", \"dataset\": \"ds.db\"}], \"tuners\": [\"ga\"]}",
                   "workloads[0].dataset: ");
    expect_refused("{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 2, \"out\": \"out\","
                   " \"db\": \"records.db\", \"workloads\": [{\"op\": \"" OP "\"}],"
                   " \"tuners\": [{\"name\": \"ga-dqn\", \"options\": {\"ga_dqn_eps_min\": 2}}]}",
                   "tuners[0].options.ga_dqn_eps_min: ");
    /* carrying an agent: a boolean, of a tuner that has one, between spaces it fits */
    expect_refused("{\"name\": \"x\", \"measure\": \"replay\", \"trials\": 5, \"seeds\": 2, \"out\": \"out\","
                   " \"workloads\": [{\"op\": \"" OP "\", \"dataset\": \"ds.db\"}],"
                   " \"tuners\": [{\"name\": \"ga-dqn\", \"carry_agent\": \"yes\"}]}",
                   "tuners[0].carry_agent: expected true or false, got \"yes\"");
    expect_refused("{\"name\": \"x\", \"measure\": \"replay\", \"trials\": 5, \"seeds\": 2, \"out\": \"out\","
                   " \"workloads\": [{\"op\": \"" OP "\", \"dataset\": \"ds.db\"}],"
                   " \"tuners\": [{\"name\": \"ga\", \"carry_agent\": true}]}",
                   "tuners[0].carry_agent: ga keeps no agent to carry");
    expect_refused("{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 2, \"out\": \"out\","
                   " \"db\": \"records.db\", \"workloads\": [{\"op\": \"" OP "\"},"
                   " {\"op\": \"conv2d:N=1,C=2,H=5,W=5,K=2,R=3,S=3,stride=1,pad=1\"}],"
                   " \"tuners\": [{\"name\": \"dqn\", \"carry_agent\": true}]}",
                   "tuners[0].carry_agent: workloads[1] (conv2d");
    cr_assert(!tmp_exists(tmp_path("records.db")), "a refused live config created its database");
    /* a dataset is not a records database to measure into */
    expect_refused("{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 2, \"out\": \"out\","
                   " \"db\": \"ds.db\", \"workloads\": [{\"op\": \"" OP "\"}], \"tuners\": [\"ga\"]}",
                   "db: ");

    /* an output directory that cannot be one is found before the runs */
    const char *good = tmp_path("good.json");
    tmp_file_write_text(good, replay_config);
    tmp_file_write_text(tmp_path("afile"), "x");
    EXPECT_USAGE_ERROR("is not a directory", "experiment", "--config", good, "--out", tmp_path("afile"));

    EXPECT_USAGE_ERROR("no --config given", "experiment");
    EXPECT_USAGE_ERROR("nothing.json", "experiment", "--config", tmp_path("nothing.json"));
    EXPECT_USAGE_ERROR("unknown option '--trials'", "experiment", "--config", tmp_path("bad.json"), "--trials", "3");
    cli_run h = CLI("help", "experiment");
    assert_ok(&h);
    assert_has(h.out, "--config FILE", "help experiment");
    assert_has(h.out, "--out DIR", "help experiment");
    assert_has(h.out, "--json", "help experiment");
    cli_run_free(&h);
}

/* ---- experiments over whole models ------------------------------------------------------ */

static uint64_t net_rng = 11;

/* A two-task network in tmp_dir/net.onnx: a 3x3 conv with relu, global
 * pool, a dense head. */
static void write_net(void)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, (int64_t[]){1, 3, 8, 8});
    ob_conv_rand(&b, "conv", "x", "c", 3, 8, 3, 1, 1, 1, true, &net_rng);
    ob_node(&b, "Relu", "relu", "c", "r");
    ob_node(&b, "GlobalAveragePool", "gap", "r", "g");
    ob_node(&b, "Flatten", "flat", "g", "f");
    ob_init_rand(&b, "fc_w", 2, (int64_t[]){6, 8}, 0.5f, &net_rng);
    ob_init_rand(&b, "fc_b", 1, (int64_t[]){6}, 0.5f, &net_rng);
    Onnx__NodeProto *fc = ob_node(&b, "Gemm", "fc", "f,fc_w,fc_b", "y");
    ob_attr_i(&b, fc, "transB", 1);
    ob_output(&b, "y");
    cr_assert(ob_write(&b, tmp_path("net.onnx")), "cannot write net.onnx");
    ob_free(&b);
}

/* A model experiment's config: two tuners on net.onnx, one seed, rounds
 * of 2, its report in tmp_dir/mout and its runs' databases in
 * tmp_dir/mout/records; `extra` adds keys. */
#define MODEL_CONFIG(extra)                                                                                 \
    "{\"name\": \"models\", \"description\": \"a small net\", \"measure\": \"live\", \"seeds\": 1,"          \
    " \"batch\": 2, \"out\": \"mout\", \"cflags\": \"" CFLAGS "\", \"repeat\": 1, \"min_repeat_ms\": 0.5,"   \
    " \"run_repeat\": 3, \"workloads\": [{\"model\": \"net.onnx\"}], \"tuners\": [\"random\", \"ga\"]" extra "}"

/* Runs config `text` (written to tmp_dir/NAME) with --json: results.json's object. */
static cJSON *run_model_config(const char *name, const char *text)
{
    const char *config = tmp_path(name);
    tmp_file_write_text(config, text);
    cli_run r = CLI("experiment", "--config", config, "--json");
    assert_ok(&r);
    cJSON *j = json_parse_object(r.out);
    cli_run_free(&r);
    return j;
}

static cJSON *run_at(cJSON *j, int i) { return cJSON_GetArrayItem(cJSON_GetObjectItem(j, "runs"), i); }

Test(cli_experiment, a_model_is_tuned_by_each_tuner_timed_and_reported, .timeout = 240)
{
    write_net();
    const char *config = tmp_path("models.json");
    tmp_file_write_text(config, MODEL_CONFIG(", \"trials\": 6"));
    cli_run r = CLI("experiment", "--config", config);
    assert_ok(&r);
    assert_has(r.out, "# Experiment models", "stdout");
    assert_has(r.out, "Tune mode: 1 model x 2 tuners x 1 seed; a run's budget: 6 trials", "stdout");
    assert_has(r.out, "## net\n", "stdout");
    assert_has(r.out,
               "| tuner | runs | untuned ms | estimate ms | measured ms | speedup | trials | tuning s | correct |",
               "stdout");
    assert_has(r.out, "| random | 1 | ", "stdout");
    assert_has(r.out, "| ga | 1 | ", "stdout");
    assert_has(r.out, " | 1/1 |\n", "stdout");
    const char *out = tmp_path("mout");
    char *md = read_in(out, "table.md");
    cr_assert_not_null(strstr(r.out, md), "stdout holds table.md");
    free(md);
    cli_run_free(&r);

    char *json = read_in(out, "results.json");
    cJSON *j = json_parse_object(json);
    free(json);
    cr_assert_str_eq(json_string_at(j, "kind"), "models");
    cr_assert_str_eq(json_string_at(j, "mode"), "tune");
    cr_assert_eq(json_number_at(j, "runs_done"), 2);
    cJSON *w0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "workloads"), 0);
    cr_assert_eq(json_number_at(w0, "tasks"), 2);
    cJSON *untuned = cJSON_GetObjectItem(w0, "untuned");
    cr_assert(json_bool_at(untuned, "correct"));
    cr_assert_gt(json_number_at(untuned, "median_ms"), 0);
    cr_assert_eq(json_number_at(untuned, "tasks_tuned"), 0);
    double trials[2], tuning[2];
    int n_points[2];
    for (int i = 0; i < 2; i++) {
        cJSON *run = run_at(j, i);
        trials[i] = json_number_at(run, "trials");
        tuning[i] = json_number_at(run, "tuning_s");
        cr_assert(trials[i] >= 2 && trials[i] <= 6, "trials %g", trials[i]); /* small spaces may run out */
        cr_assert_eq(json_number_at(run, "new_trials"), trials[i]);
        cJSON *lat = cJSON_GetObjectItem(run, "latency");
        cr_assert(json_bool_at(lat, "correct"), "run %d's network is wrong", i);
        cr_assert_gt(json_number_at(lat, "median_ms"), 0);
        cr_assert_eq(json_number_at(lat, "repeat"), 3);
        cr_assert_eq(json_number_at(lat, "tasks_tuned"), 2, "every task has records");
        cJSON *curve = cJSON_GetObjectItem(run, "curve");
        n_points[i] = cJSON_GetArraySize(curve);
        cr_assert_geq(n_points[i], 1);
        cJSON *last = cJSON_GetArrayItem(curve, n_points[i] - 1);
        cr_assert_eq(cJSON_GetArrayItem(last, 0)->valuedouble, trials[i]);
        cr_assert_float_eq(cJSON_GetArrayItem(last, 2)->valuedouble, json_number_at(run, "estimate_ms"), 1e-12);
        char db[600];
        snprintf(db, sizeof db, "%s/records/net/%s-s0.db", out, i == 0 ? "random" : "ga");
        cr_assert_str_eq(json_string_at(run, "db"), db);
        cr_assert(tmp_exists(db));
    }
    cJSON_Delete(j);
    /* the plots and the page */
    static const char *const plots[] = {"w1-net-time.svg", "w1-net-trials.svg"};
    for (int i = 0; i < 2; i++) {
        char *svg = read_in(out, plots[i]);
        char err[256];
        cr_assert(xml_check(svg, err, sizeof err), "%s is not well-formed: %s", plots[i], err);
        assert_has(svg, "latency estimate over", plots[i]);
        free(svg);
    }
    char *html = read_in(out, "report.html");
    check_self_contained_html(html);
    assert_has(html, "a small net", "report.html");
    assert_has(html, "untuned (seed schedules)", "report.html");
    free(html);

    /* again: every run is in its database, nothing is measured, the curves stay */
    j = run_model_config("models.json", MODEL_CONFIG(", \"trials\": 6"));
    for (int i = 0; i < 2; i++) {
        cJSON *run = run_at(j, i);
        cr_assert_eq(json_number_at(run, "new_trials"), 0, "run %d measured again", i);
        cr_assert_eq(json_number_at(run, "trials"), trials[i]);
        cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(run, "curve")), n_points[i]);
        double t = json_number_at(run, "tuning_s");
        cr_assert(t >= tuning[i] && t < tuning[i] + 10, "tuning_s %.17g, before %.17g", t, tuning[i]);
        cr_assert(json_bool_at(cJSON_GetObjectItem(run, "latency"), "correct"));
    }
    cJSON_Delete(j);

    /* a larger budget continues each run where it was */
    j = run_model_config("models.json", MODEL_CONFIG(", \"trials\": 10"));
    for (int i = 0; i < 2; i++) {
        cJSON *run = run_at(j, i);
        int n = (int)json_number_at(run, "trials"), n_new = (int)json_number_at(run, "new_trials");
        cr_assert_eq(n, trials[i] + n_new);
        cJSON *curve = cJSON_GetObjectItem(run, "curve");
        cr_assert_geq(cJSON_GetArraySize(curve), n_points[i] + (n_new > 0));
        double prev_trials = 0, prev_wall = 0;
        cJSON *p;
        cJSON_ArrayForEach(p, curve)
        {
            double pt = cJSON_GetArrayItem(p, 0)->valuedouble, pw = cJSON_GetArrayItem(p, 1)->valuedouble;
            cr_assert(pt >= prev_trials && pw >= prev_wall, "the curve goes back: (%g, %g) after (%g, %g)", pt, pw,
                      prev_trials, prev_wall);
            prev_trials = pt;
            prev_wall = pw;
        }
        cr_assert_eq(prev_trials, n);
    }
    cJSON_Delete(j);
}

Test(cli_experiment, benchmark_mode_times_the_networks_of_the_runs_databases, .timeout = 240)
{
    write_net();
    cJSON *j = run_model_config("tune.json", MODEL_CONFIG(", \"trials\": 4"));
    double trials = json_number_at(run_at(j, 1), "trials");
    int n_points = cJSON_GetArraySize(cJSON_GetObjectItem(run_at(j, 1), "curve"));
    cJSON_Delete(j);

    j = run_model_config("bench.json", MODEL_CONFIG(", \"mode\": \"benchmark\""));
    cr_assert_str_eq(json_string_at(j, "mode"), "benchmark");
    cr_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "trials")));
    for (int i = 0; i < 2; i++) {
        cJSON *run = run_at(j, i);
        cr_assert_str_eq(json_string_at(run, "ended"), "benchmark");
        cr_assert_eq(json_number_at(run, "new_trials"), 0);
        cJSON *lat = cJSON_GetObjectItem(run, "latency");
        cr_assert(json_bool_at(lat, "measured") && json_bool_at(lat, "correct"));
        cr_assert_eq(json_number_at(lat, "tasks_tuned"), 2);
    }
    cr_assert_eq(json_number_at(run_at(j, 1), "trials"), trials, "the trials the tuning made");
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(run_at(j, 1), "curve")), n_points, "and its curve");
    cJSON_Delete(j);
    cr_assert(tmp_exists(tmp_path("mout/w1-net-trials.svg")));

    /* a tuner that never ran has no database to time */
    const char *config = tmp_path("bench2.json");
    tmp_file_write_text(config, "{\"name\": \"models\", \"measure\": \"live\", \"seeds\": 1, \"mode\": \"benchmark\","
                                " \"out\": \"mout\", \"cflags\": \"" CFLAGS "\","
                                " \"workloads\": [{\"model\": \"net.onnx\"}],"
                                " \"tuners\": [\"random\", \"xgb-rank\"]}");
    cli_run r = CLI("experiment", "--config", config);
    assert_usage_error(&r, "bench2.json: tuners[1] (xgb-rank), seed 0, workloads[0] (net): no database of the run");
    cli_run_free(&r);
}

Test(cli_experiment, a_time_budget_ends_a_models_runs, .timeout = 240)
{
    write_net();
    cJSON *j = run_model_config("time.json", MODEL_CONFIG(", \"trials\": 100, \"time_budget_s\": 1e-6"));
    cr_assert_eq(json_number_at(j, "time_budget_s"), 1e-6);
    for (int i = 0; i < 2; i++) {
        cJSON *run = run_at(j, i);
        cr_assert_str_eq(json_string_at(run, "ended"), "time");
        cr_assert_eq(json_number_at(run, "trials"), 0);
        cr_assert(cJSON_IsNull(cJSON_GetObjectItem(run, "estimate_ms")), "no task has a time");
        cJSON *lat = cJSON_GetObjectItem(run, "latency");
        cr_assert_eq(json_number_at(lat, "tasks_tuned"), 0, "seed schedules only");
        cr_assert(json_bool_at(lat, "correct"));
    }
    cJSON_Delete(j);
}

Test(cli_experiment, bad_model_configs_are_refused_before_anything_runs)
{
    write_net();
    expect_refused("{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 1, \"out\": \"out\","
                   " \"workloads\": [{\"model\": \"absent.onnx\"}], \"tuners\": [\"ga\"]}",
                   "bad.json: workloads[0].model: ");
    expect_refused("{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 1, \"out\": \"out\","
                   " \"workloads\": [{\"model\": \"net.onnx\"}], \"tuners\": [\"ga\"], \"time_budget\": 60}",
                   "bad.json: time_budget: unknown key; valid keys: ");
    expect_refused("{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 1, \"out\": \"out\","
                   " \"workloads\": [{\"model\": \"net.onnx\"}], \"tuners\": [{\"name\": \"ga-dqn\", \"options\":"
                   " {\"ga_dqn_eps_min\": 2}}]}",
                   "tuners[0].options.ga_dqn_eps_min: ");
    expect_refused("{\"name\": \"x\", \"measure\": \"live\", \"trials\": 5, \"seeds\": 1, \"out\": \"out\","
                   " \"db\": \"records.db\", \"workloads\": [{\"model\": \"net.onnx\"}], \"tuners\": [\"ga\"]}",
                   "bad.json: db: each run of a model keeps its records in a database of its own");
    cr_assert_not(tmp_exists(tmp_path("out")), "a refused config made its output or records directory");
}
