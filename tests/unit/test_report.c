/* Tests of src/report/: the XML checker the tests rely on (it must fail on
 * bad input, or the SVG tests prove nothing); the SVG writer (well-formed,
 * text escaped, the lines, bands, axes, legend and reference it promises);
 * the HTML report (self-contained: no external reference of any kind, its
 * inline SVG well-formed, the config and labels escaped); the metrics
 * (reaching 90/95/99 % on hand-made curves, "not reached" never turned into
 * a number, medians of even and odd counts); the plot's mean and min-max
 * band; results.json and table.md of a hand-made experiment; gnuplot absent,
 * failing and hanging; every kind of bad config, each with its status and
 * a message naming the file and the key; and the example configs. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "report/report.h"

#include "../common/leaks.h"
#include "../common/tmp.h"
#include "../common/xml_check.h"

static char tmp_dir[] = "/tmp/rlt_report_XXXXXX";

static void setup(void) { tmp_dir_make_in(tmp_dir); }

static void teardown(void) { tmp_remove_tree(tmp_dir); }

TestSuite(report, .init = setup, .fini = teardown, .timeout = 60);

static const char *tmp_path(const char *name) { return tmp_path_in(tmp_dir, name); }

/* ---- the XML checker ----------------------------------------------------------- */

static void expect_xml_ok(const char *text)
{
    char err[256];
    cr_assert(xml_check(text, err, sizeof err), "refused: %s\n%s", err, text);
}

static void expect_xml_bad(const char *text, const char *needle)
{
    char err[256];
    cr_assert_not(xml_check(text, err, sizeof err), "accepted: %s", text);
    cr_assert_not_null(strstr(err, needle), "'%s': message '%s' lacks '%s'", text, err, needle);
}

Test(report, the_xml_checker_accepts_well_formed_documents)
{
    expect_xml_ok("<a/>");
    expect_xml_ok("<?xml version=\"1.0\"?>\n<svg a='1' b=\"x &amp; y &#39; &#x3C;\"><g><!-- c -->t &lt; u</g>"
                  "<![CDATA[ <raw> & ]]></svg>\n");
    expect_xml_ok("<a>\n<b c=\"d\"  e = 'f' />\t</a>");
}

Test(report, the_xml_checker_refuses_every_kind_of_malformed_document)
{
    expect_xml_bad("", "no root element");
    expect_xml_bad("<a>", "not closed");
    expect_xml_bad("<a></b>", "does not match");
    expect_xml_bad("<a><b></a></b>", "does not match");
    expect_xml_bad("</a>", "end tag without");
    expect_xml_bad("<a/><b/>", "second root");
    expect_xml_bad("<a/>text", "outside the root");
    expect_xml_bad("<a x=1/>", "not quoted");
    expect_xml_bad("<a x/>", "without '='");
    expect_xml_bad("<a x=\"1\" x=\"2\"/>", "given twice");
    expect_xml_bad("<a x=\"1\"y=\"2\"/>", "expected white space");
    expect_xml_bad("<a x=\"<\"/>", "'<' in an attribute");
    expect_xml_bad("<a x=\"1/>", "unterminated attribute");
    expect_xml_bad("<a>&foo;</a>", "valid reference");
    expect_xml_bad("<a>fish & chips</a>", "valid reference");
    expect_xml_bad("<a x=\"&\"/>", "valid reference");
    expect_xml_bad("<a>&#;</a>", "character reference");
    expect_xml_bad("<a><!-- x </a>", "unterminated comment");
    expect_xml_bad("<a><!-- x -- y --></a>", "'--' inside");
    expect_xml_bad("<a>\x01</a>", "control character");
    expect_xml_bad("<a><1/></a>", "expected a name");
    expect_xml_bad(" <?xml version=\"1.0\"?><a/>", "XML declaration");
    expect_xml_bad("<!DOCTYPE a><a/>", "DOCTYPE");
    expect_xml_bad("<a>]]></a>", "']]>'");
}

/* ---- escaping and SVG -------------------------------------------------------------- */

Test(report, text_is_escaped_for_xml_and_html)
{
    rlt_str s;
    rlt_str_init(&s);
    rlt_xml_escape(&s, "a<b&c>\"d'e\x01\tf\ng");
    cr_assert_str_eq(s.data, "a&lt;b&amp;c&gt;&quot;d&#39;e?\tf\ng");
    rlt_str_clear(&s);
    rlt_xml_escape(&s, "");
    cr_assert(s.data == NULL || s.data[0] == '\0');
    rlt_str_clear(&s);
    rlt_xml_escape(&s, "&amp;");
    cr_assert_str_eq(s.data, "&amp;amp;", "escaping is not idempotent: text is text");
    rlt_str_free(&s);
}

static const double ys[] = {1, 2, 4, 4, 5}, los[] = {0.5, 1, 3, 3, 4}, his[] = {1.5, 3, 5, 6, 7};

static rlt_plot sample_plot(rlt_plot_series *series)
{
    series[0] = (rlt_plot_series){.label = "ga <&> \"x\" 'y'", .n = 5, .y = ys, .lo = los, .hi = his};
    series[1] = (rlt_plot_series){.label = "random", .n = 3, .y = ys, .lo = NULL, .hi = NULL};
    return (rlt_plot){.title = "matmul:M=4 <&>",
                      .x_label = "measurements",
                      .y_label = "best GFLOP/s so far",
                      .band_note = "band: min to max",
                      .n_series = 2,
                      .series = series,
                      .reference_y = 7.5,
                      .reference_label = "best known & more"};
}

static size_t count_of(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

Test(report, the_svg_plot_is_well_formed_and_has_what_it_promises)
{
    rlt_plot_series series[2];
    rlt_plot p = sample_plot(series);
    rlt_str s;
    rlt_str_init(&s);
    rlt_svg_plot(&p, true, &s);
    cr_assert_not(s.has_failed);
    expect_xml_ok(s.data);
    cr_assert_eq(strncmp(s.data, "<?xml version=\"1.0\"", 19), 0);
    cr_assert_not_null(strstr(s.data, "xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\""));
    cr_assert_not_null(strstr(s.data, "ga &lt;&amp;&gt; &quot;x&quot; &#39;y&#39;"), "the label, escaped");
    cr_assert_not_null(strstr(s.data, "<title>matmul:M=4 &lt;&amp;&gt;</title>"));
    cr_assert_not_null(strstr(s.data, "best known &amp; more"));
    cr_assert_eq(count_of(s.data, "<polyline"), 2, "one line per series");
    cr_assert_eq(count_of(s.data, "<polygon"), 1, "a band only where lo and hi are given");
    cr_assert_not_null(strstr(s.data, "fill-opacity=\"0.18\""), "translucent band");
    cr_assert_not_null(strstr(s.data, "stroke-dasharray=\"6,4\""), "the dashed reference");
    cr_assert_not_null(strstr(s.data, ">measurements</text>"));
    cr_assert_not_null(strstr(s.data, ">best GFLOP/s so far</text>"));
    cr_assert_not_null(strstr(s.data, ">band: min to max</text>"));
    /* ticks: y up to at least 7.5 (the reference), x to 5 */
    cr_assert_not_null(strstr(s.data, ">8</text>"), "a y tick above the reference:\n%s", s.data);
    cr_assert_not_null(strstr(s.data, ">5</text>"));
    cr_assert_null(strstr(s.data, "nan"), "no NaN coordinates");
    cr_assert_null(strstr(s.data, "inf"));

    rlt_str_clear(&s);
    rlt_svg_plot(&p, false, &s);
    expect_xml_ok(s.data);
    cr_assert_eq(strncmp(s.data, "<svg ", 5), 0, "inline: no XML declaration");

    /* degenerate plots still make valid SVG */
    rlt_plot empty = {.title = "", .n_series = 0};
    rlt_str_clear(&s);
    rlt_svg_plot(&empty, true, &s);
    expect_xml_ok(s.data);
    rlt_plot_series one = {.label = "x", .n = 1, .y = ys};
    rlt_plot single = {.title = "one", .n_series = 1, .series = &one};
    rlt_str_clear(&s);
    rlt_svg_plot(&single, true, &s);
    expect_xml_ok(s.data);
    rlt_str_free(&s);
}

/* ---- metrics ------------------------------------------------------------------------ */

Test(report, reach_counts_measurements_until_the_level_is_first_reached)
{
    const double c[] = {1, 5, 9, 9.5, 10};
    cr_assert_eq(rlt_exp_reach(c, 5, 10, 0.90), 3);
    cr_assert_eq(rlt_exp_reach(c, 5, 10, 0.95), 4);
    cr_assert_eq(rlt_exp_reach(c, 5, 10, 0.99), 5);
    cr_assert_eq(rlt_exp_reach(c, 5, 10, 0.10), 1);
    cr_assert_eq(rlt_exp_reach(c, 5, 20, 0.90), 0, "never reached");
    cr_assert_eq(rlt_exp_reach(c, 3, 10, 0.99), 0, "not within the run");
    cr_assert_eq(rlt_exp_reach(c, 0, 10, 0.90), 0, "an empty run");
    cr_assert_eq(rlt_exp_reach(c, 5, 0, 0.90), 0, "no best known: nothing to reach");
    const double zero[] = {0, 0};
    cr_assert_eq(rlt_exp_reach(zero, 2, 0, 0.90), 0);
}

/* A run of (workload, tuner) whose curve rises to `best` at measurement
 * `at` (0: stays at half of it) over n measurements. */
static rlt_exp_run make_run(int workload, int tuner, uint64_t seed, int n, int at, double best)
{
    rlt_exp_run r = {.workload = workload, .tuner = tuner, .seed = seed};
    r.tune.n_trials = n;
    r.tune.curve = rlt_calloc((size_t)n, sizeof *r.tune.curve);
    cr_assert_not_null(r.tune.curve);
    for (int k = 0; k < n; k++) r.tune.curve[k] = at > 0 && k + 1 >= at ? best : best * 0.5;
    r.tune.best_gflops = r.tune.curve[n - 1];
    r.tune.wall_s = 0.1 * (seed + 1);
    r.tune.tuner_s = 0.01 * (3 - seed);
    r.tune.n_failed = 1;
    return r;
}

static void free_runs(rlt_exp_run *runs, int n)
{
    for (int i = 0; i < n; i++) rlt_tune_result_free(&runs[i].tune);
}

Test(report, stats_take_medians_and_never_invent_a_reach)
{
    /* odd count: 2, 4, never -> median 4, reached by 2 of 3 */
    rlt_exp_run runs[8] = {make_run(0, 0, 0, 10, 2, 10), make_run(0, 0, 1, 10, 4, 10), make_run(0, 0, 2, 10, 0, 10),
                           /* another pair, which must not count */
                           make_run(0, 1, 0, 10, 1, 10), make_run(1, 0, 0, 10, 1, 10)};
    rlt_exp_stats s;
    rlt_exp_stats_compute(runs, 5, 0, 0, 10, &s);
    cr_assert_eq(s.n_runs, 3);
    for (int f = 0; f < RLT_EXP_N_REACH; f++) {
        cr_assert(s.is_reached[f]);
        cr_assert_eq(s.reach_median[f], 4);
        cr_assert_eq(s.n_reached[f], 2);
    }
    cr_assert_eq(s.best_median, 10);
    cr_assert_eq(s.best_min, 5);
    cr_assert_eq(s.best_max, 10);
    cr_assert_float_eq(s.wall_median_s, 0.2, 1e-12);
    cr_assert_float_eq(s.wall_total_s, 0.6, 1e-12);
    cr_assert_float_eq(s.tuner_median_s, 0.02, 1e-12);
    cr_assert_float_eq(s.tuner_total_s, 0.06, 1e-12);
    cr_assert_eq(s.n_failed, 3);
    free_runs(runs, 5);

    /* even count: 3, never -> the median is "not reached", reached by 1 of 2 */
    rlt_exp_run two[2] = {make_run(0, 0, 0, 6, 3, 8), make_run(0, 0, 1, 6, 0, 8)};
    rlt_exp_stats_compute(two, 2, 0, 0, 8, &s);
    cr_assert_not(s.is_reached[0]);
    cr_assert_eq(s.reach_median[0], 0);
    cr_assert_eq(s.n_reached[0], 1);
    cr_assert_float_eq(s.best_median, 6, 1e-12, "(8 + 4) / 2");
    free_runs(two, 2);

    /* even count, both middles reached: 1, 2, 3, never -> 2.5 */
    rlt_exp_run four[4] = {make_run(0, 0, 0, 6, 1, 8), make_run(0, 0, 1, 6, 2, 8), make_run(0, 0, 2, 6, 3, 8),
                           make_run(0, 0, 3, 6, 0, 8)};
    rlt_exp_stats_compute(four, 4, 0, 0, 8, &s);
    cr_assert(s.is_reached[1]);
    cr_assert_float_eq(s.reach_median[1], 2.5, 1e-12);
    cr_assert_eq(s.n_reached[1], 3);

    /* a best known above what any run found: nothing reached */
    rlt_exp_stats_compute(four, 4, 0, 0, 100, &s);
    for (int f = 0; f < RLT_EXP_N_REACH; f++) {
        cr_assert_not(s.is_reached[f]);
        cr_assert_eq(s.n_reached[f], 0);
    }
    free_runs(four, 4);
    /* the levels differ: a run that ends at 0.92 of the best reaches 90 % only */
    rlt_exp_run partial[1] = {make_run(0, 0, 0, 6, 0, 8)};
    partial[0].tune.curve[5] = 0.92 * 8;
    rlt_exp_stats_compute(partial, 1, 0, 0, 8, &s);
    cr_assert(s.is_reached[0]);
    cr_assert_eq(s.reach_median[0], 6);
    cr_assert_not(s.is_reached[1]);
    cr_assert_not(s.is_reached[2]);
    free_runs(partial, 1);

    /* no runs at all */
    rlt_exp_stats_compute(NULL, 0, 0, 0, 8, &s);
    cr_assert_eq(s.n_runs, 0);
    cr_assert_not(s.is_reached[0]);
    assert_no_leaks();
}

/* ---- a hand-made experiment ------------------------------------------------------------ */

#define REPLAY_CONFIG                                                                                          \
    "{\"name\": \"hand\", \"measure\": \"replay\", \"trials\": 6, \"seeds\": [3, 7],\n"                        \
    " \"description\": \"a <b>bold</b> & 'quoted' test\",\n"                                                   \
    " \"workloads\": [{\"op\": \"matmul:M=4,N=4,K=4\", \"dataset\": \"mm4.db\"},\n"                            \
    "                 {\"expr\": \"B[i] = A[i] * 2\", \"shape\": \"i=2\", \"dataset\": \"/abs/b.db\"}],\n"     \
    " \"tuners\": [\"random\", {\"name\": \"ga-dqn\", \"label\": \"ga-dqn <x & y>\", \"options\": "            \
    "{\"ga_dqn_lr\": 0.003, \"population\": 8}}]}\n"

static rlt_exp_config *parse_ok(const char *path, const char *text)
{
    rlt_exp_config *c = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_exp_config_parse(path, text, &c, &d), RLT_STATUS_OK, "%s", d.message);
    return c;
}

/* Runs of workload 0 only (workload 1 has none: an interrupted experiment). */
static void hand_result(const rlt_exp_config *c, rlt_exp_result *r)
{
    memset(r, 0, sizeof *r);
    r->n_runs_planned = 8;
    r->runs = rlt_calloc(8, sizeof *r->runs);
    r->workloads = rlt_calloc(2, sizeof *r->workloads);
    r->stats = rlt_calloc(4, sizeof *r->stats);
    cr_assert(r->runs && r->workloads && r->stats);
    r->runs[r->n_runs++] = make_run(0, 0, 3, 6, 2, 10);
    r->runs[r->n_runs++] = make_run(0, 1, 3, 6, 5, 10);
    r->runs[r->n_runs++] = make_run(0, 0, 7, 4, 3, 8); /* ended early at 8 */
    r->runs[r->n_runs++] = make_run(0, 1, 7, 6, 0, 10);
    r->was_stopped = true;
    snprintf(r->machine.cpu_model, sizeof r->machine.cpu_model, "Test CPU <model> & co");
    r->machine.n_cores = 2;
    r->machine.vector_floats = 8;
    for (int w = 0; w < 2; w++) {
        r->workloads[w].best_known_gflops = w == 0 ? 10 : 0;
        snprintf(r->workloads[w].best_known_source, sizeof r->workloads[w].best_known_source, "the dataset <best>");
        snprintf(r->workloads[w].target, sizeof r->workloads[w].target, "cpu=x;vec=8;threads=1;cc=gcc -O1");
    }
    cr_assert_eq(rlt_exp_result_stats(c, r, NULL), RLT_STATUS_OK);
}

Test(report, a_config_parses_with_paths_relative_to_its_directory)
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

/* No reference that a browser would fetch: src/href attributes, CSS url()
 * and @import, scripts, links, frames, objects. */
static void expect_self_contained(const char *html)
{
    static const char *const forbidden[] = {"src=", "href=", "url(", "@import", "<script", "<link", "<iframe",
                                            "<object", "<embed", "<img", "<base"};
    for (size_t i = 0; i < sizeof forbidden / sizeof forbidden[0]; i++)
        cr_assert_null(strcasestr(html, forbidden[i]), "the HTML has '%s'", forbidden[i]);
}

/* Every inline <svg>...</svg> of an HTML page is well-formed XML; returns
 * how many there are. */
static int check_inline_svgs(const char *html)
{
    int n = 0;
    for (const char *p = strstr(html, "<svg"); p; p = strstr(p + 1, "<svg")) {
        const char *end = strstr(p, "</svg>");
        cr_assert_not_null(end, "an <svg> without its end");
        size_t len = (size_t)(end - p) + 6;
        char *svg = strndup(p, len);
        expect_xml_ok(svg);
        free(svg);
        n++;
    }
    return n;
}

Test(report, the_html_report_is_self_contained_and_escapes_everything)
{
    rlt_exp_config *c = parse_ok("exp.json", REPLAY_CONFIG);
    rlt_exp_result r;
    hand_result(c, &r);
    rlt_str s;
    rlt_str_init(&s);
    rlt_report_html(c, &r, "PNG note <&>", &s);
    cr_assert_not(s.has_failed);
    expect_self_contained(s.data);
    cr_assert_eq(check_inline_svgs(s.data), 2, "one plot per workload");
    cr_assert_eq(strncmp(s.data, "<!DOCTYPE html>", 15), 0);
    cr_assert_not_null(strstr(s.data, "<meta charset=\"utf-8\">"));
    cr_assert_not_null(strstr(s.data, "ga-dqn &lt;x &amp; y&gt;"), "the label, escaped");
    cr_assert_null(strstr(s.data, "<x & y>"));
    cr_assert_not_null(strstr(s.data, "a &lt;b&gt;bold&lt;/b&gt; &amp; &#39;quoted&#39; test"), "the description");
    cr_assert_null(strstr(s.data, "<b>bold"));
    cr_assert_not_null(strstr(s.data, "Test CPU &lt;model&gt; &amp; co"));
    cr_assert_not_null(strstr(s.data, "PNG note &lt;&amp;&gt;"));
    cr_assert_not_null(strstr(s.data, "&quot;ga_dqn_lr&quot;: 0.003"), "the config as given");
    cr_assert_not_null(strstr(s.data, "interrupted"));
    cr_assert_not_null(strstr(s.data, "not reached (1/2)"), "ga-dqn reached in 1 of its 2 runs");
    cr_assert_not_null(strstr(s.data, "min to max"), "the band is named");
    rlt_str_free(&s);
    rlt_exp_result_free(&r);
    rlt_exp_config_destroy(c);
    assert_no_leaks();
}

Test(report, the_plot_is_the_mean_and_min_max_of_the_seeds)
{
    rlt_exp_config *c = parse_ok("exp.json", REPLAY_CONFIG);
    rlt_exp_result r;
    hand_result(c, &r);
    rlt_exp_plot p;
    cr_assert_eq(rlt_exp_plot_make(c, &r, 0, &p, NULL), RLT_STATUS_OK);
    cr_assert_eq(p.plot.n_series, 2);
    const rlt_plot_series *rnd = &p.plot.series[0];
    cr_assert_str_eq(rnd->label, "random");
    cr_assert_eq(rnd->n, 6, "as long as the longest run");
    /* seed 3: 5 then 10 from measurement 2; seed 7: 4 then 8 from 3, ending at 4 and holding 8 */
    const double mean[] = {4.5, 7, 9, 9, 9, 9}, lo[] = {4, 4, 8, 8, 8, 8}, hi[] = {5, 10, 10, 10, 10, 10};
    for (int k = 0; k < 6; k++) {
        cr_assert_float_eq(rnd->y[k], mean[k], 1e-12, "mean at %d", k + 1);
        cr_assert_float_eq(rnd->lo[k], lo[k], 1e-12, "min at %d", k + 1);
        cr_assert_float_eq(rnd->hi[k], hi[k], 1e-12, "max at %d", k + 1);
    }
    cr_assert_float_eq(p.plot.reference_y, 10, 1e-12);
    rlt_exp_plot_free(&p);
    /* a workload without runs: no series, still a plot */
    cr_assert_eq(rlt_exp_plot_make(c, &r, 1, &p, NULL), RLT_STATUS_OK);
    cr_assert_eq(p.plot.n_series, 0);
    rlt_exp_plot_free(&p);
    char stem[128];
    rlt_exp_plot_stem(c, 0, stem, sizeof stem);
    cr_assert_str_eq(stem, "w1-matmul_M_4_N_4_K_4");
    rlt_exp_result_free(&r);
    rlt_exp_config_destroy(c);
}

Test(report, results_json_and_the_table_hold_every_run_and_metric)
{
    rlt_exp_config *c = parse_ok("exp.json", REPLAY_CONFIG);
    rlt_exp_result r;
    hand_result(c, &r);
    char *text = rlt_report_json(c, &r);
    cr_assert_not_null(text);
    cJSON *j = cJSON_Parse(text);
    cr_assert_not_null(j, "results.json does not parse:\n%s", text);
    cr_assert_str_eq(cJSON_GetObjectItem(j, "format")->valuestring, "rltune-experiment-results");
    cr_assert_eq(cJSON_GetObjectItem(j, "v")->valueint, 1);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "interrupted")));
    cr_assert_eq(cJSON_GetObjectItem(j, "runs_done")->valueint, 4);
    cr_assert_eq(cJSON_GetObjectItem(j, "runs_planned")->valueint, 8);
    cJSON *runs = cJSON_GetObjectItem(j, "runs");
    cr_assert_eq(cJSON_GetArraySize(runs), 4);
    cJSON *last = cJSON_GetArrayItem(runs, 3);
    cr_assert_str_eq(cJSON_GetObjectItem(last, "tuner")->valuestring, "ga-dqn <x & y>");
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(last, "curve")), 6);
    cr_assert(cJSON_IsNull(cJSON_GetArrayItem(cJSON_GetObjectItem(last, "reach"), 0)), "not reached is null");
    cJSON *first = cJSON_GetArrayItem(runs, 0);
    cr_assert_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(first, "reach"), 0)->valueint, 2);
    cJSON *w0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "workloads"), 0);
    cr_assert_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(w0, "best_known"), "gflops")->valuedouble, 10);
    cr_assert_str_eq(cJSON_GetObjectItem(w0, "plot")->valuestring, "w1-matmul_M_4_N_4_K_4.svg");
    cJSON *m1 = cJSON_GetArrayItem(cJSON_GetObjectItem(w0, "metrics"), 1);
    cJSON *reach90 = cJSON_GetArrayItem(cJSON_GetObjectItem(m1, "reach"), 0);
    cr_assert(cJSON_IsNull(cJSON_GetObjectItem(reach90, "median_measurements")));
    cr_assert_eq(cJSON_GetObjectItem(reach90, "runs_reached")->valueint, 1);
    cJSON *t1 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "tuners"), 1);
    cr_assert_float_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(t1, "options"), "ga_dqn_lr")->valuedouble, 0.003, 1e-15);
    cJSON_Delete(j);
    rlt_free(text);

    rlt_str s;
    rlt_str_init(&s);
    rlt_report_table_md(c, &r, &s);
    cr_assert_not_null(strstr(s.data, "| random | 2 | 9.00 (8.00-10.00) | not reached (1/2) |"), "%s", s.data);
    cr_assert_not_null(strstr(s.data, "| ga-dqn <x & y> | 2 |"), "%s", s.data);
    cr_assert_not_null(strstr(s.data, "not reached (1/2)"));
    cr_assert_not_null(strstr(s.data, "(interrupted)"));
    rlt_str_free(&s);
    rlt_exp_result_free(&r);
    rlt_exp_config_destroy(c);
    assert_no_leaks();
}

/* ---- gnuplot ------------------------------------------------------------------------- */

static rlt_status gnuplot_with(const char *prog, double timeout_s, bool *is_absent, rlt_diag *d)
{
    rlt_plot_series series[2];
    rlt_plot p = sample_plot(series);
    cr_assert_eq(setenv("RLTUNE_GNUPLOT", prog, 1), 0);
    rlt_status st = rlt_gnuplot_png(&p, tmp_dir, "p.dat", "p.gp", "p.png", timeout_s, is_absent, d);
    unsetenv("RLTUNE_GNUPLOT");
    return st;
}

static void write_script(const char *name, const char *body)
{
    const char *path = tmp_path(name);
    tmp_file_write_text(path, body);
    cr_assert_eq(chmod(path, 0755), 0);
}

Test(report, gnuplot_absent_failing_or_hanging_is_reported_never_waited_for)
{
    rlt_diag d = {0};
    bool is_absent = false;
    cr_assert_eq(gnuplot_with(tmp_path("no-such-gnuplot"), 5, &is_absent, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(is_absent);
    /* the data and the script are written all the same */
    size_t len;
    char *script = tmp_file_read(tmp_path("p.gp"), &len);
    cr_assert_not_null(strstr(script, "if (!exists('out')) out = 'p.png'\nset output out\n"), "%s", script);
    cr_assert_not_null(strstr(script, "title 'ga <&> \"x\" ''y'''"), "gnuplot's quoting:\n%s", script);
    cr_assert_not_null(strstr(script, "filledcurves"));
    free(script);
    char *data = tmp_file_read(tmp_path("p.dat"), &len);
    cr_assert_not_null(strstr(data, "\n4 4 3 6 ? ? ?\n"), "series 2 is shorter:\n%s", data);
    free(data);

    write_script("fails.sh", "#!/bin/sh\necho 'line 3: boom' >&2\nexit 1\n");
    d = (rlt_diag){0};
    cr_assert_eq(gnuplot_with(tmp_path("fails.sh"), 5, &is_absent, &d), RLT_STATUS_IO_ERROR);
    cr_assert_not(is_absent);
    cr_assert_not_null(strstr(d.message, "boom"), "%s", d.message);

    write_script("hangs.sh", "#!/bin/sh\nexec sleep 30\n");
    d = (rlt_diag){0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(gnuplot_with(tmp_path("hangs.sh"), 0.5, &is_absent, &d), RLT_STATUS_IO_ERROR);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert_not_null(strstr(d.message, "ran past"), "%s", d.message);
    cr_assert_lt((double)(t1.tv_sec - t0.tv_sec), 10.0, "waited for a hanging gnuplot");

    write_script("silent.sh", "#!/bin/sh\nexit 0\n");
    d = (rlt_diag){0};
    cr_assert_eq(gnuplot_with(tmp_path("silent.sh"), 5, &is_absent, &d), RLT_STATUS_IO_ERROR);
    cr_assert_not_null(strstr(d.message, "wrote no p.png"), "%s", d.message);
}

/* The real gnuplot (scripts/install-deps.sh installs it, so the test
 * command always has it). */
Test(report, gnuplot_draws_a_png)
{
    rlt_diag d = {0};
    bool is_absent = false;
    rlt_status st = gnuplot_with("gnuplot", 30, &is_absent, &d);
    cr_assert_not(is_absent, "gnuplot is not installed (scripts/install-deps.sh installs gnuplot-nox)");
    cr_assert_eq(st, RLT_STATUS_OK, "%s", d.message);
    size_t len;
    char *png = tmp_file_read(tmp_path("p.png"), &len);
    cr_assert_gt(len, 8);
    cr_assert_eq(memcmp(png, "\x89PNG\r\n\x1a\n", 8), 0, "not a PNG");
    free(png);
    /* drawn under a temporary name, renamed: nothing of it is left */
    DIR *dir = opendir(tmp_dir);
    cr_assert_not_null(dir);
    for (struct dirent *e = readdir(dir); e; e = readdir(dir))
        cr_assert_null(strstr(e->d_name, ".tmp."), "%s left behind", e->d_name);
    closedir(dir);
    /* the script alone redraws it, as docs/experiment.md says */
    cr_assert_eq(unlink(tmp_path("p.png")), 0);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot p.gp 2>/dev/null", tmp_dir);
    cr_assert_eq(system(cmd), 0);
    struct stat sb;
    cr_assert_eq(stat(tmp_path("p.png"), &sb), 0, "gnuplot p.gp drew no p.png");
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

Test(report, bad_configs_name_the_file_and_the_key)
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

Test(report, a_missing_config_file_is_named)
{
    rlt_exp_config *c = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_exp_config_load(tmp_path("absent.json"), &c, &d), RLT_STATUS_IO_ERROR);
    cr_assert_not_null(strstr(d.message, "absent.json"), "%s", d.message);
    cr_assert_null(c);
}

/* What only opening can find: a dataset that is not there, an option
 * value the tuner refuses. Nothing is created either way. */
Test(report, opening_refuses_missing_datasets_and_tuner_values_before_anything_runs)
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
Test(report, the_example_configs_parse)
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
Test(report, the_config_fuzz_corpus_replays)
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
