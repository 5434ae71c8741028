/*
 * report.h - experiments (`rltune experiment`): tuners x workloads x seeds
 * run through rlt_tune, live or replayed from datasets, and the report of
 * what they found: metrics per (workload, tuner), plots, tables.
 *
 * The pieces, in the order a run uses them:
 *   rlt_exp_config_load / _parse   the JSON config (docs/experiment.md),
 *                                  checked whole before anything runs;
 *   rlt_exp_open                   opens the datasets or the records
 *                                  database and checks every tuner's
 *                                  options against every workload's space;
 *   rlt_exp_run_all                runs them, one rlt_tune per (workload,
 *                                  seed, tuner), in that order;
 *   rlt_exp_stats_compute          metrics per (workload, tuner);
 *   rlt_report_write               report.html, results.json, table.md and
 *                                  the plots into a directory.
 * The writers (SVG, HTML, JSON, markdown, gnuplot) are separate so that
 * tests can feed them hand-made results.
 *
 * Threads: none are started; everything here belongs to one thread.
 */
#ifndef RLT_REPORT_H
#define RLT_REPORT_H

#include "core/core.h"
#include "measure/measure.h"
#include "search/dataset.h"
#include "search/tune.h"
#include "search/tuner.h"

#include <signal.h>

#define RLT_EXP_FORMAT_VERSION 1 /* of results.json (docs/formats.md) */
#define RLT_EXP_MAX_WORKLOADS 64
#define RLT_EXP_MAX_TUNERS 32
#define RLT_EXP_MAX_SEEDS 1000
#define RLT_EXP_MAX_RUNS 100000

/* The fractions of the best known GFLOP/s whose first reaching is
 * reported: 90, 95 and 99 %. */
#define RLT_EXP_N_REACH 3
extern const double rlt_exp_reach_fractions[RLT_EXP_N_REACH];

/* ---- the config ---------------------------------------------------------- */

typedef struct rlt_exp_workload {
    char *op_text;      /* "op" as written, or NULL when given by expr / shape */
    char *expr, *shape; /* "expr" and "shape", or NULL */
    char *spec;         /* the op's canonical spec */
    char *dataset;      /* replay: the dataset's path, relative to the working directory */
    char *dataset_text; /* replay: "dataset" as written (relative to the config's directory) */
} rlt_exp_workload;

typedef struct rlt_exp_tuner {
    char *name;          /* a name from rlt_tuner_names() */
    char *label;         /* unique in the experiment; default: the name */
    rlt_tuner_opts opts; /* from "options" (rlt_tuner_opts_set_json); seed set per run */
    char *options_json;  /* "options" as given, compact JSON ("{}" when none) */
    /* "carry_agent": a learning tuner's agent goes, seed by seed, from each
     * workload's run to the next one's (saved at the end of the run on
     * workload w, loaded at the start of the same seed's run on w + 1), as
     * an agent trained on earlier layers starts the next (ktune, GA-DQN) */
    bool carry_agent;
} rlt_exp_tuner;

/* A parsed config. Every string and array is owned (rlt_exp_config_destroy). */
typedef struct rlt_exp_config {
    char *path;        /* the config file, as named; prefixes every message */
    char *text;        /* its text */
    char *name;        /* [A-Za-z0-9._-], 1 to 64 characters */
    char *description; /* "" when not given */
    bool is_replay;    /* "measure": "replay" (else "live") */
    int n_trials;
    int n_seeds;
    uint64_t *seeds;
    int batch_size;
    int early_stopping; /* 0: never */
    char *db;           /* live: records database (relative to the working directory) */
    char *out;          /* the output directory, relative to the working directory; NULL: not given */
    /* live only (NULL / 0 = tune's defaults) */
    int n_threads;
    char *cc, *cflags;
    int repeat;
    double min_repeat_ms, timeout_s;
    int n_workloads;
    rlt_exp_workload *workloads;
    int n_tuners;
    rlt_exp_tuner *tuners;
} rlt_exp_config;

/* Parses a config's text. `path` names it in messages and anchors its
 * relative paths (those are relative to the config file's directory).
 * Every error names the file and the key path ("exp.json:
 * tuners[2].options.dqn_horizon: ..."): malformed JSON (PARSE_ERROR, with
 * the line and column), an unknown or duplicated key, a missing required
 * key, a value of the wrong type or range, an unknown tuner or option, a
 * bad op spec, a repeated label or workload, a key of the other measuring
 * mode (INVALID_ARGUMENT). Nothing outside the text is read. */
rlt_status rlt_exp_config_parse(const char *path, const char *text, rlt_exp_config **out, rlt_diag *diag);
/* Reads `path` (IO_ERROR naming it when it cannot) and parses it. */
rlt_status rlt_exp_config_load(const char *path, rlt_exp_config **out, rlt_diag *diag);
void rlt_exp_config_destroy(rlt_exp_config *c); /* NULL ok */

/* The output directory: the config's "out", else "experiment-<name>".
 * Borrowed from c, or written into buf. */
const char *rlt_exp_config_out_dir(const rlt_exp_config *c, char *buf, size_t cap);

/* ---- results --------------------------------------------------------------- */

/* One tuning run. */
typedef struct rlt_exp_run {
    int workload, tuner;  /* indices into the config's lists */
    uint64_t seed;
    bool had_agent;       /* started from the agent carried from the workload before */
    rlt_tune_result tune; /* its curve is owned */
} rlt_exp_run;

/* What is known of one workload. */
typedef struct rlt_exp_workload_result {
    /* Replay: the dataset's best OK record. Live: the best of every run of
     * the workload and of the records database on the run's target.
     * 0 when nothing measured OK. */
    double best_known_gflops;
    char best_known_source[1200]; /* what it is the best of, in words */
    char target[512];            /* the target key its measurements are of */
    rlt_dataset_info dataset;    /* replay only */
} rlt_exp_workload_result;

/* Metrics of one (workload, tuner) over its seeds. */
typedef struct rlt_exp_stats {
    int n_runs;
    double best_median, best_min, best_max; /* best GFLOP/s */
    /* Measurements until the curve first reaches each fraction of the best
     * known; the median over the runs with a run that never reaches it
     * counted as infinitely many: is_reached false when that median is not
     * a number of measurements (fewer than half the runs reached it, or
     * a middle run of an even count did not). */
    double reach_median[RLT_EXP_N_REACH];
    bool is_reached[RLT_EXP_N_REACH];
    int n_reached[RLT_EXP_N_REACH]; /* runs that reached it */
    double wall_median_s, wall_total_s;
    double tuner_median_s, tuner_total_s; /* the tuner's own time (rlt_tune_result.tuner_s) */
    int n_failed, n_absent; /* summed over the runs */
} rlt_exp_stats;

typedef struct rlt_exp_result {
    int n_runs_planned;
    int n_runs;                         /* finished, in running order */
    rlt_exp_run *runs;                  /* owned */
    rlt_exp_workload_result *workloads; /* the config's n_workloads; owned */
    rlt_exp_stats *stats;               /* [workload * n_tuners + tuner]; owned */
    bool was_stopped;                   /* by the run's stop flag */
    rlt_target machine;                 /* where rltune ran */
} rlt_exp_result;

void rlt_exp_result_free(rlt_exp_result *r); /* frees the arrays; the struct stays */

/* ---- metrics (metrics.c) --------------------------------------------------- */

/* The 1-based number of measurements after which curve[0..n) first reaches
 * fraction * best_known, or 0 when it never does (or best_known <= 0). */
int rlt_exp_reach(const double *curve, int n, double best_known, double fraction);

/* The metrics of the runs among runs[0..n) of (workload, tuner). */
void rlt_exp_stats_compute(const rlt_exp_run *runs, int n, int workload, int tuner, double best_known,
                           rlt_exp_stats *out);

/* A table cell for level f of s: "N (reached/runs)", "not reached
 * (reached/runs)", or "-" without runs; appended to out. The HTML and
 * markdown tables both use it (the HTML one escapes it). */
void rlt_exp_reach_text(const rlt_exp_stats *s, int f, rlt_str *out);

/* Fills r->stats for every (workload, tuner) from r->runs and the
 * workloads' best known. OUT_OF_MEMORY only. */
rlt_status rlt_exp_result_stats(const rlt_exp_config *c, rlt_exp_result *r, rlt_diag *diag);

/* ---- running (experiment.c) ------------------------------------------------ */

typedef struct rlt_exp rlt_exp; /* the config's resources, opened */

/* Opens what the runs need: each workload's op, and its dataset (replay,
 * read-only) or the records database (live: created if absent; a dataset
 * is refused); then creates every tuner over every workload's space once,
 * so that a bad option value is refused before anything runs. Errors name
 * the config file and the key (INVALID_ARGUMENT, PARSE_ERROR, IO_ERROR for
 * a dataset that cannot be read; OUT_OF_MEMORY). `c` is borrowed and must
 * outlive the handle. */
rlt_status rlt_exp_open(const rlt_exp_config *c, rlt_exp **out, rlt_diag *diag);
void rlt_exp_close(rlt_exp *e); /* NULL ok */

typedef struct rlt_exp_progress {
    int n_done, n_total;       /* runs */
    const rlt_exp_run *run;    /* the run that just finished, or NULL while one runs */
    const char *spec;          /* the current run's workload */
    const char *label;         /* and tuner */
    uint64_t seed;
    const rlt_tune_progress *tune; /* within the current run (NULL when run is set) */
} rlt_exp_progress;

typedef void (*rlt_exp_progress_fn)(const rlt_exp_progress *p, void *ctx);

typedef struct rlt_exp_run_opts {
    /* when it becomes non-zero, no further run starts (the one in flight
     * finishes) */
    const volatile sig_atomic_t *stop;
    rlt_exp_progress_fn progress; /* may be NULL */
    void *progress_ctx;
} rlt_exp_run_opts;

/* Runs every (workload, seed, tuner), workloads outermost and tuners
 * innermost, so that an interrupted experiment has about as many seeds of
 * each tuner. Fills *out (free with rlt_exp_result_free) with the finished
 * runs, the best known of each workload and the metrics, also when a run
 * fails: then the failed run is not in it and its error is returned. */
rlt_status rlt_exp_run_all(rlt_exp *e, const rlt_exp_run_opts *o, rlt_exp_result *out, rlt_diag *diag);

/* ---- plots (svg.c, gnuplot.c) -------------------------------------------- */

/* One line of a plot: y against x = 1 .. n, and the band [lo, hi] around
 * it (lo and hi may be NULL: no band). Arrays borrowed. */
typedef struct rlt_plot_series {
    const char *label;
    int n;
    const double *y, *lo, *hi;
} rlt_plot_series;

typedef struct rlt_plot {
    const char *title, *x_label, *y_label;
    const char *band_note; /* what the bands are, for the legend; NULL: none */
    int n_series;
    const rlt_plot_series *series;
    double reference_y;          /* a dashed horizontal line; <= 0: none */
    const char *reference_label;
} rlt_plot;

/* Appends `text` to out with XML's five special characters escaped, and
 * control characters other than tab and newline replaced by '?' (XML 1.0
 * cannot carry them); for HTML as well. */
void rlt_xml_escape(rlt_str *out, const char *text);

/* Appends the plot as SVG 1.1: an XML declaration first when
 * is_standalone (an .svg file), none when it goes inline into HTML. */
void rlt_svg_plot(const rlt_plot *p, bool is_standalone, rlt_str *out);

/* The colour of series i (of a fixed, colour-blind-safe palette), "#rrggbb". */
const char *rlt_plot_colour(int i);

/* Writes the plot's data (`data_name`) and a gnuplot script (`script_name`)
 * that draws it into `png_name`, all in directory `dir`, then runs
 * `gnuplot SCRIPT` there (program: $RLTUNE_GNUPLOT, else gnuplot on PATH)
 * with a time limit of timeout_s, killing it past that. *out_is_absent
 * is set when the program could not be found or started: nothing was
 * drawn and no error is returned. Errors: IO_ERROR (a file not written,
 * gnuplot failed or timed out: the message has its stderr's first line). */
rlt_status rlt_gnuplot_png(const rlt_plot *p, const char *dir, const char *data_name, const char *script_name,
                           const char *png_name, double timeout_s, bool *out_is_absent, rlt_diag *diag);

/* ---- the report (report.c, html.c) ---------------------------------------- */

/* The plot of workload w: per tuner the mean over its runs of the best
 * GFLOP/s after each measurement and the min-max band, a run that ended
 * early holding its last best. The arrays are owned by *out
 * (rlt_exp_plot_free). */
typedef struct rlt_exp_plot {
    rlt_plot plot;
    rlt_plot_series *series;
    double *values; /* every series' y, lo, hi */
    char title[600];
    char reference[64]; /* the reference line's label */
} rlt_exp_plot;
rlt_status rlt_exp_plot_make(const rlt_exp_config *c, const rlt_exp_result *r, int w, rlt_exp_plot *out,
                             rlt_diag *diag);
void rlt_exp_plot_free(rlt_exp_plot *p);

/* The file name stem of workload w's plots: "w<n>-<spec with every
 * character outside [A-Za-z0-9._-] as '_'>", at most 80 characters. */
void rlt_exp_plot_stem(const rlt_exp_config *c, int w, char *buf, size_t cap);

/* results.json's object (docs/formats.md), compact; owned (rlt_free). */
char *rlt_report_json(const rlt_exp_config *c, const rlt_exp_result *r);
/* table.md: a heading and a markdown table per workload. */
void rlt_report_table_md(const rlt_exp_config *c, const rlt_exp_result *r, rlt_str *out);
/* report.html: self-contained (styles inline, plots inline as SVG, nothing
 * fetched); `png_note` (may be NULL) is a line about the PNG plots. */
void rlt_report_html(const rlt_exp_config *c, const rlt_exp_result *r, const char *png_note, rlt_str *out);

typedef struct rlt_report_files {
    bool has_png;          /* PNG plots were drawn */
    bool is_gnuplot_absent;
    char png_problem[600]; /* why PNGs are missing when gnuplot failed; "" otherwise */
} rlt_report_files;

/* Writes into the existing directory `dir`, each file atomically:
 * report.html, results.json, table.md and per workload STEM.svg, plus
 * STEM.dat, STEM.gp and STEM.png through gnuplot (when it is absent or
 * fails, the PNGs are skipped and *out says why; not an error). Errors:
 * IO_ERROR naming the file, OUT_OF_MEMORY. */
rlt_status rlt_report_write(const rlt_exp_config *c, const rlt_exp_result *r, const char *dir,
                            rlt_report_files *out, rlt_diag *diag);

#endif /* RLT_REPORT_H */
