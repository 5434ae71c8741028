/* Tests of src/report/, the renderers, on hand-made plain data (nothing
 * but core is needed to make a report): the XML checker the tests rely on
 * (it must fail on bad input, or the SVG tests prove nothing); the SVG
 * writer (well-formed, text escaped, the lines, bands, axes, legend and
 * reference it promises); the HTML report (self-contained: no external
 * reference of any kind, its inline SVG well-formed, the config and labels
 * escaped); the metrics (reaching 90/95/99 % on hand-made curves, "not
 * reached" never turned into a number, medians of even and odd counts);
 * the plot's mean and min-max band; results.json and table.md of a
 * hand-made experiment; gnuplot absent, failing and hanging. The config
 * and the runs are tests/unit/test_experiment.c's. */
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

#include "../common/exp_config.h"
#include "../common/leaks.h"
#include "../common/text.h"
#include "../common/tmp.h"
#include "../common/xml_check.h"

static char tmp_dir[] = "/tmp/rlt_report_XXXXXX";

static void setup(void) { tmp_dir_use(tmp_dir); }

static void teardown(void) { tmp_remove_tree(tmp_dir); }

TestSuite(report, .init = setup, .fini = teardown, .timeout = 60);

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
    cr_assert_eq(text_count(s.data, "<polyline"), 2, "one line per series");
    cr_assert_eq(text_count(s.data, "<polygon"), 1, "a band only where lo and hi are given");
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
    cr_assert_eq(rlt_report_reach(c, 5, 10, 0.90), 3);
    cr_assert_eq(rlt_report_reach(c, 5, 10, 0.95), 4);
    cr_assert_eq(rlt_report_reach(c, 5, 10, 0.99), 5);
    cr_assert_eq(rlt_report_reach(c, 5, 10, 0.10), 1);
    cr_assert_eq(rlt_report_reach(c, 5, 20, 0.90), 0, "never reached");
    cr_assert_eq(rlt_report_reach(c, 3, 10, 0.99), 0, "not within the run");
    cr_assert_eq(rlt_report_reach(c, 0, 10, 0.90), 0, "an empty run");
    cr_assert_eq(rlt_report_reach(c, 5, 0, 0.90), 0, "no best known: nothing to reach");
    const double zero[] = {0, 0};
    cr_assert_eq(rlt_report_reach(zero, 2, 0, 0.90), 0);
}

/* A run of (workload, tuner) whose curve, written into `curve`, rises to
 * `best` at measurement `at` (0: stays at half of it) over n measurements. */
static rlt_report_run make_run(double *curve, int workload, int tuner, uint64_t seed, int n, int at, double best)
{
    rlt_report_run r = {.workload = workload, .tuner = tuner, .seed = seed, .n_trials = n, .curve = curve};
    for (int k = 0; k < n; k++) curve[k] = at > 0 && k + 1 >= at ? best : best * 0.5;
    r.best_gflops = curve[n - 1];
    r.best_config = "a=1";
    r.wall_s = 0.1 * (seed + 1);
    r.tuner_s = 0.01 * (3 - seed);
    r.n_failed = 1;
    return r;
}

Test(report, stats_take_medians_and_never_invent_a_reach)
{
    double c[8][10];
    /* odd count: 2, 4, never -> median 4, reached by 2 of 3 */
    rlt_report_run runs[8] = {make_run(c[0], 0, 0, 0, 10, 2, 10), make_run(c[1], 0, 0, 1, 10, 4, 10),
                              make_run(c[2], 0, 0, 2, 10, 0, 10),
                              /* another pair, which must not count */
                              make_run(c[3], 0, 1, 0, 10, 1, 10), make_run(c[4], 1, 0, 0, 10, 1, 10)};
    rlt_report_stats s;
    rlt_report_stats_compute(runs, 5, 0, 0, 10, &s);
    cr_assert_eq(s.n_runs, 3);
    for (int f = 0; f < RLT_REPORT_N_REACH; f++) {
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

    /* even count: 3, never -> the median is "not reached", reached by 1 of 2 */
    rlt_report_run two[2] = {make_run(c[0], 0, 0, 0, 6, 3, 8), make_run(c[1], 0, 0, 1, 6, 0, 8)};
    rlt_report_stats_compute(two, 2, 0, 0, 8, &s);
    cr_assert_not(s.is_reached[0]);
    cr_assert_eq(s.reach_median[0], 0);
    cr_assert_eq(s.n_reached[0], 1);
    cr_assert_float_eq(s.best_median, 6, 1e-12, "(8 + 4) / 2");

    /* even count, both middles reached: 1, 2, 3, never -> 2.5 */
    rlt_report_run four[4] = {make_run(c[0], 0, 0, 0, 6, 1, 8), make_run(c[1], 0, 0, 1, 6, 2, 8),
                              make_run(c[2], 0, 0, 2, 6, 3, 8), make_run(c[3], 0, 0, 3, 6, 0, 8)};
    rlt_report_stats_compute(four, 4, 0, 0, 8, &s);
    cr_assert(s.is_reached[1]);
    cr_assert_float_eq(s.reach_median[1], 2.5, 1e-12);
    cr_assert_eq(s.n_reached[1], 3);

    /* a best known above what any run found: nothing reached */
    rlt_report_stats_compute(four, 4, 0, 0, 100, &s);
    for (int f = 0; f < RLT_REPORT_N_REACH; f++) {
        cr_assert_not(s.is_reached[f]);
        cr_assert_eq(s.n_reached[f], 0);
    }
    /* the levels differ: a run that ends at 0.92 of the best reaches 90 % only */
    rlt_report_run partial[1] = {make_run(c[0], 0, 0, 0, 6, 0, 8)};
    c[0][5] = 0.92 * 8;
    rlt_report_stats_compute(partial, 1, 0, 0, 8, &s);
    cr_assert(s.is_reached[0]);
    cr_assert_eq(s.reach_median[0], 6);
    cr_assert_not(s.is_reached[1]);
    cr_assert_not(s.is_reached[2]);

    /* no runs at all */
    rlt_report_stats_compute(NULL, 0, 0, 0, 8, &s);
    cr_assert_eq(s.n_runs, 0);
    cr_assert_not(s.is_reached[0]);
    assert_no_leaks();
}

/* ---- a hand-made experiment ------------------------------------------------------------ */

/* A report and the arrays it borrows. */
typedef struct hand_report {
    rlt_report rep;
    uint64_t seeds[2];
    rlt_report_tuner tuners[2];
    rlt_report_workload workloads[2];
    rlt_report_run runs[8];
    double curves[8][6];
    rlt_report_stats stats[4];
} hand_report;

/* REPLAY_CONFIG's experiment, interrupted: runs of workload 0 only
 * (workload 1 has none). */
static void hand_result(hand_report *h)
{
    memset(h, 0, sizeof *h);
    h->seeds[0] = 3;
    h->seeds[1] = 7;
    h->tuners[0] = (rlt_report_tuner){.label = "random", .name = "random", .options_json = "{}"};
    h->tuners[1] = (rlt_report_tuner){
        .label = "ga-dqn <x & y>", .name = "ga-dqn", .options_json = "{\"ga_dqn_lr\":0.003,\"population\":8}"};
    static const char *const specs[] = {"matmul:M=4,N=4,K=4", "expr:B[i] = A[i] * 2;i=2"};
    static const char *const datasets[] = {"mm4.db", "/abs/b.db"};
    for (int w = 0; w < 2; w++)
        h->workloads[w] = (rlt_report_workload){
            .spec = specs[w],
            .dataset = datasets[w],
            .dataset_info = {.n_configs = 32, .fixed = "", .n_threads = 1},
            .target = "cpu=x;vec=8;threads=1;cc=gcc -O1",
            .best_known_gflops = w == 0 ? 10 : 0,
            .best_known_source = "the dataset <best>",
        };
    h->runs[0] = make_run(h->curves[0], 0, 0, 3, 6, 2, 10);
    h->runs[1] = make_run(h->curves[1], 0, 1, 3, 6, 5, 10);
    h->runs[2] = make_run(h->curves[2], 0, 0, 7, 4, 3, 8); /* ended early at 8 */
    h->runs[3] = make_run(h->curves[3], 0, 1, 7, 6, 0, 10);
    h->rep = (rlt_report){
        .name = "hand",
        .description = "a <b>bold</b> & 'quoted' test",
        .config_path = "exp.json",
        .config_text = REPLAY_CONFIG,
        .is_replay = true,
        .n_trials = 6,
        .batch_size = 16,
        .n_seeds = 2,
        .seeds = h->seeds,
        .machine = {.cpu_model = "Test CPU <model> & co", .n_cores = 2, .vector_floats = 8},
        .n_workloads = 2,
        .workloads = h->workloads,
        .n_tuners = 2,
        .tuners = h->tuners,
        .n_runs_planned = 8,
        .n_runs = 4,
        .runs = h->runs,
        .was_stopped = true,
        .stats = h->stats,
    };
    rlt_report_stats_fill(&h->rep, h->stats);
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
    hand_report h;
    hand_result(&h);
    rlt_str s;
    rlt_str_init(&s);
    rlt_report_html(&h.rep, "PNG note <&>", &s);
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
    assert_no_leaks();
}

Test(report, the_plot_is_the_mean_and_min_max_of_the_seeds)
{
    hand_report h;
    hand_result(&h);
    rlt_report_plot p;
    cr_assert_eq(rlt_report_plot_make(&h.rep, 0, &p, NULL), RLT_STATUS_OK);
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
    rlt_report_plot_free(&p);
    /* a workload without runs: no series, still a plot */
    cr_assert_eq(rlt_report_plot_make(&h.rep, 1, &p, NULL), RLT_STATUS_OK);
    cr_assert_eq(p.plot.n_series, 0);
    rlt_report_plot_free(&p);
    char stem[128];
    rlt_report_plot_stem(&h.rep, 0, stem, sizeof stem);
    cr_assert_str_eq(stem, "w1-matmul_M_4_N_4_K_4");
}

Test(report, results_json_and_the_table_hold_every_run_and_metric)
{
    hand_report h;
    hand_result(&h);
    char *text = rlt_report_json(&h.rep);
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
    rlt_report_table_md(&h.rep, &s);
    cr_assert_not_null(strstr(s.data, "| random | 2 | 9.00 (8.00-10.00) | not reached (1/2) |"), "%s", s.data);
    cr_assert_not_null(strstr(s.data, "| ga-dqn <x & y> | 2 |"), "%s", s.data);
    cr_assert_not_null(strstr(s.data, "not reached (1/2)"));
    cr_assert_not_null(strstr(s.data, "(interrupted)"));
    rlt_str_free(&s);
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

    tmp_script_write(tmp_path("fails.sh"), "#!/bin/sh\necho 'line 3: boom' >&2\nexit 1\n");
    d = (rlt_diag){0};
    cr_assert_eq(gnuplot_with(tmp_path("fails.sh"), 5, &is_absent, &d), RLT_STATUS_IO_ERROR);
    cr_assert_not(is_absent);
    cr_assert_not_null(strstr(d.message, "boom"), "%s", d.message);

    tmp_script_write(tmp_path("hangs.sh"), "#!/bin/sh\nexec sleep 30\n");
    d = (rlt_diag){0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(gnuplot_with(tmp_path("hangs.sh"), 0.5, &is_absent, &d), RLT_STATUS_IO_ERROR);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert_not_null(strstr(d.message, "ran past"), "%s", d.message);
    cr_assert_lt((double)(t1.tv_sec - t0.tv_sec), 10.0, "waited for a hanging gnuplot");

    tmp_script_write(tmp_path("silent.sh"), "#!/bin/sh\nexit 0\n");
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
