/*
 * report.h - the report of an experiment (tuners x workloads x seeds, run
 * by src/experiment/): the metrics of each (workload, tuner), plots (SVG
 * written directly, PNG through gnuplot), results.json, table.md and a
 * self-contained HTML page.
 *
 * Everything here works on plain data: an rlt_report holds names, numbers
 * and curves, borrowed from whoever ran the experiment
 * (rlt_exp_report_make, experiment/experiment.h, makes one of a run's
 * results) or made by hand in a test. Nothing here needs more than core:
 * no tuner, search or measurement type.
 *
 * The pieces:
 *   rlt_report_stats_fill          metrics per (workload, tuner) (metrics.c);
 *   rlt_report_plot_make           a workload's plot: the mean of the seeds'
 *                                  curves and their min-max band (report.c);
 *   rlt_svg_plot, rlt_gnuplot_png  plots as SVG text, PNG (svg.c, gnuplot.c);
 *   rlt_report_json, _table_md,    results.json, table.md and report.html
 *   rlt_report_html                (report.c, html.c);
 *   rlt_report_write               all of them into a directory.
 *
 * A model experiment (whole networks tuned, compiled and timed) has its own
 * tables and plots: model_report.c (rlt_report.is_model).
 *
 * Threads: none are started; everything here belongs to one thread.
 */
#ifndef RLT_REPORT_H
#define RLT_REPORT_H

#include "core/core.h"

#define RLT_REPORT_FORMAT_VERSION 1 /* of results.json (docs/formats.md) */
/* The most runs of one (workload, tuner) the metrics count: one a seed, and
 * an experiment has at most this many (RLT_EXP_MAX_SEEDS). */
#define RLT_REPORT_MAX_SEEDS 1000

/* The fractions of the best known GFLOP/s whose first reaching is
 * reported: 90, 95 and 99 %. */
#define RLT_REPORT_N_REACH 3
extern const double rlt_report_reach_fractions[RLT_REPORT_N_REACH];

/* ---- what a report is of -------------------------------------------------- */

/* One tuner of the experiment. */
typedef struct rlt_report_tuner {
    const char *label;        /* unique in the report */
    const char *name;         /* the tuner's name */
    const char *options_json; /* its options as given, a compact JSON object ("{}": none) */
    bool carry_agent;         /* its agent went from each workload's run to the next */
} rlt_report_tuner;

/* The dataset a replayed workload is answered from. */
typedef struct rlt_report_dataset {
    bool is_complete;  /* every valid configuration, else a uniform sample */
    int n_configs;     /* configurations it holds */
    const char *fixed; /* the knobs held at one choice; "" none */
    int n_threads;     /* of its measurements */
} rlt_report_dataset;

/* A network compiled and timed (a model experiment's). */
typedef struct rlt_report_latency {
    bool is_measured;           /* false: not timed */
    double median_ms, min_ms;   /* over `repeat` timed runs */
    int repeat;
    bool is_checked;            /* the first run's outputs were compared with the reference */
    bool is_correct;
    double max_error, max_reference;
    int n_tasks, n_tasks_tuned; /* tasks, and those whose schedule came from a record */
    double compile_s;
} rlt_report_latency;

/* One point of a network's latency estimate over its tuning. */
typedef struct rlt_report_point {
    int n_trials;      /* measurements so far */
    double wall_s;     /* tuning time so far */
    double latency_ms; /* sum of weight x best time over the tasks; INFINITY while one has none */
} rlt_report_point;

/* One workload and what is known of it. */
typedef struct rlt_report_workload {
    const char *spec;                /* the op's canonical spec */
    const char *dataset;             /* replay: the dataset's path; NULL live */
    rlt_report_dataset dataset_info; /* replay only */
    const char *target;              /* the target key its measurements are of */
    double best_known_gflops;        /* 0 when nothing measured OK */
    const char *best_known_source;   /* what it is the best of, in words */
    /* a model (rlt_report.is_model): spec is its label */
    const char *model;               /* the ONNX file */
    int n_tasks;
    double flops;                    /* of its tasks' kernels */
    rlt_report_latency untuned;      /* from seed schedules */
} rlt_report_workload;

/* One tuning run (rlt_tune_result's figures, search/tune.h). */
typedef struct rlt_report_run {
    int workload, tuner;     /* indices into the report's lists */
    uint64_t seed;
    bool had_agent;          /* started from the agent carried from the workload before */
    int n_trials;
    const double *curve;     /* best GFLOP/s after each trial, n_trials of them */
    double best_gflops;      /* 0 when nothing measured OK */
    const char *best_config; /* its configuration's key */
    double wall_s, tuner_s;  /* the run's wall time; of which in the tuner */
    int n_measured;          /* trials measured in the run */
    int n_from_db;           /* read back from the records */
    int n_failed;            /* not OK (build, run, wrong answer) */
    int n_absent;            /* replay: not in the dataset (not failures) */
    bool was_stopped_early;  /* by early stopping */
    bool was_exhausted;      /* the tuner had nothing left to propose */
    /* a model's run (rlt_report.is_model; n_trials and curve above are 0
     * and NULL) */
    const char *db;          /* its records database */
    int n_model_trials;      /* measurements of the model's tasks (the budget counts them) */
    int n_new_trials;        /* of them made by this process */
    double tuning_s;         /* tuning time, earlier processes' included */
    double estimate_ms;      /* the latency estimate at the end; INFINITY: none */
    int n_points;
    const rlt_report_point *points;
    const char *ended;       /* "trials", "time", "tasks", "interrupted", "benchmark" */
    rlt_report_latency latency; /* the network compiled from db */
} rlt_report_run;

/* Where rltune ran. */
typedef struct rlt_report_machine {
    const char *cpu_model;
    int n_cores, vector_floats;
    bool has_fma;
} rlt_report_machine;

/* Metrics of one (workload, tuner) over its seeds. */
typedef struct rlt_report_stats {
    int n_runs;
    double best_median, best_min, best_max; /* best GFLOP/s */
    /* Measurements until the curve first reaches each fraction of the best
     * known; the median over the runs with a run that never reaches it
     * counted as infinitely many: is_reached false when that median is not
     * a number of measurements (fewer than half the runs reached it, or
     * a middle run of an even count did not). */
    double reach_median[RLT_REPORT_N_REACH];
    bool is_reached[RLT_REPORT_N_REACH];
    int n_reached[RLT_REPORT_N_REACH]; /* runs that reached it */
    double wall_median_s, wall_total_s;
    double tuner_median_s, tuner_total_s; /* the tuner's own time */
    int n_failed, n_absent; /* summed over the runs */
} rlt_report_stats;

/* An experiment and its results. Every pointer is borrowed; the renderers
 * only read. */
typedef struct rlt_report {
    const char *name;        /* the experiment's */
    const char *description; /* "" when none */
    const char *config_path; /* the config file, as named */
    const char *config_text; /* and its text, as given */
    bool is_replay;          /* answered from datasets, else measured live */
    const char *db;          /* live: the records database; NULL in a replay */
    int n_trials, batch_size;
    int early_stopping;      /* 0: never */
    int n_seeds;
    const uint64_t *seeds;
    rlt_report_machine machine;
    int n_workloads;
    const rlt_report_workload *workloads;
    int n_tuners;
    const rlt_report_tuner *tuners;
    int n_runs_planned;
    int n_runs; /* finished, in running order */
    const rlt_report_run *runs;
    bool was_stopped; /* interrupted: the runs are those that finished */
    /* [workload * n_tuners + tuner], from the runs (rlt_report_stats_fill) */
    const rlt_report_stats *stats;
    /* a model experiment: the workloads are models (model_report.c) */
    bool is_model;
    bool is_benchmark;    /* nothing tuned: compiled and timed from the runs' databases */
    double time_budget_s; /* 0: none */
    int run_repeat;       /* the networks' timed runs */
    int rule_seeds;       /* rule-built configurations each task's tuning measured first */
    int n_threads;
    const char *records_dir;
} rlt_report;

/* ---- metrics (metrics.c) --------------------------------------------------- */

/* root printed as compact JSON (rlt_malloc'd; NULL when is_ok is false or
 * out of memory); root is deleted either way. */
struct cJSON;
char *rlt_report_json_text(struct cJSON *root, bool is_ok);

/* The median of v[0..n) (sorted in place), infinities included: infinite
 * when a middle value is; NAN when n is 0. */
double rlt_report_median(double *v, int n);

/* The 1-based number of measurements after which curve[0..n) first reaches
 * fraction * best_known, or 0 when it never does (or best_known <= 0). */
int rlt_report_reach(const double *curve, int n, double best_known, double fraction);

/* The metrics of the runs among runs[0..n) of (workload, tuner). */
void rlt_report_stats_compute(const rlt_report_run *runs, int n, int workload, int tuner, double best_known,
                              rlt_report_stats *out);

/* Fills out[workload * n_tuners + tuner] (n_workloads * n_tuners of them)
 * from rep's runs and its workloads' best known; rep->stats is not read. */
void rlt_report_stats_fill(const rlt_report *rep, rlt_report_stats *out);

/* A table cell for level f of s: "N (reached/runs)", "not reached
 * (reached/runs)", or "-" without runs; appended to out. The HTML and
 * markdown tables both use it (the HTML one escapes it). */
void rlt_report_reach_text(const rlt_report_stats *s, int f, rlt_str *out);

/* ---- plots (svg.c, gnuplot.c) -------------------------------------------- */

/* One line of a plot: y against x (NULL: 1 .. n; else increasing), and the
 * band [lo, hi] around it (lo and hi may be NULL: no band). Arrays
 * borrowed. */
typedef struct rlt_plot_series {
    const char *label;
    int n;
    const double *y, *lo, *hi;
    const double *x;
} rlt_plot_series;

typedef struct rlt_plot {
    const char *title, *x_label, *y_label;
    const char *band_note; /* what the bands are, for the legend; NULL: none */
    int n_series;
    const rlt_plot_series *series;
    double reference_y;          /* a dashed horizontal line; <= 0: none */
    const char *reference_label;
    bool is_legend_top;          /* the legend in the upper right corner (falling curves), else the lower */
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
 * (rlt_report_plot_free); the labels are borrowed from rep. Errors:
 * OUT_OF_MEMORY. */
typedef struct rlt_report_plot {
    rlt_plot plot;
    rlt_plot_series *series;
    double *values; /* every series' y, lo, hi */
    char title[600];
    char reference[64]; /* the reference line's label */
} rlt_report_plot;
rlt_status rlt_report_plot_make(const rlt_report *rep, int w, rlt_report_plot *out, rlt_diag *diag);
void rlt_report_plot_free(rlt_report_plot *p);

/* The file name stem of workload w's plots: "w<n>-<spec with every
 * character outside [A-Za-z0-9._-] as '_'>", at most 80 characters. */
void rlt_report_plot_stem(const rlt_report *rep, int w, char *buf, size_t cap);

/* results.json's object (docs/formats.md), compact; owned (rlt_free). NULL
 * when out of memory. */
char *rlt_report_json(const rlt_report *rep);
/* table.md: a heading and a markdown table per workload. */
void rlt_report_table_md(const rlt_report *rep, rlt_str *out);
/* report.html: self-contained (styles inline, plots inline as SVG, nothing
 * fetched); `png_note` (may be NULL) is a line about the PNG plots. */
void rlt_report_html(const rlt_report *rep, const char *png_note, rlt_str *out);

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
rlt_status rlt_report_write(const rlt_report *rep, const char *dir, rlt_report_files *out, rlt_diag *diag);

/* ---- a model experiment's report (model_report.c) ------------------------ */

/* What the tables say of one (model, tuner) over its runs (seeds). */
typedef struct rlt_report_model_stats {
    int n_runs;
    int n_measured;              /* runs whose network was timed */
    int n_correct;               /* of them, checked and correct */
    double estimate_median_ms;   /* INFINITY when the middle run had none */
    double latency_median_ms, latency_min_ms, latency_max_ms; /* of the runs' medians */
    double speedup_median;       /* untuned median / the run's median, the median over runs; 0: none */
    double trials_median;
    double tuning_median_s, tuning_total_s;
} rlt_report_model_stats;

void rlt_report_model_stats_compute(const rlt_report *rep, int w, int t, rlt_report_model_stats *out);

/* The plot of model w's latency estimate over tuning time (by_time) or
 * over trials: per tuner the mean over its runs and the min-max band, on
 * a grid of points, each run's estimate held from its last round on, a
 * tuner's line starting where every one of its runs has an estimate.
 * Owned as rlt_report_plot_make's. */
rlt_status rlt_report_model_plot_make(const rlt_report *rep, int w, bool by_time, rlt_report_plot *out,
                                      rlt_diag *diag);

/* The file stem of model w's plots: "w<n>-<label>-time" or "-trials". */
void rlt_report_model_plot_stem(const rlt_report *rep, int w, bool by_time, char *buf, size_t cap);

/* The table of a model experiment, shared by table.md and the HTML page:
 * the cells of the (model w, tuner t) row after the tuner's label, each
 * appended to its rlt_str (initialised by the caller): runs, untuned ms,
 * estimate ms, measured ms, speedup, trials, tuning s, correct. */
#define RLT_REPORT_MODEL_N_CELLS 8
void rlt_report_model_row_cells(const rlt_report *rep, int w, int t, rlt_str cells[RLT_REPORT_MODEL_N_CELLS]);
/* What the columns mean, one paragraph. */
extern const char *const rlt_report_model_columns_note;
/* What was run, one sentence; and what model w is and how fast it ran
 * untuned, one sentence. Appended to out. */
void rlt_report_model_summary(const rlt_report *rep, rlt_str *out);
void rlt_report_model_about(const rlt_report *rep, int w, rlt_str *out);

/* A model experiment's results.json object, table.md and HTML page (the
 * dispatch from rlt_report_json, rlt_report_table_md and rlt_report_html). */
char *rlt_report_model_json(const rlt_report *rep);
void rlt_report_model_table_md(const rlt_report *rep, rlt_str *out);
void rlt_report_model_html(const rlt_report *rep, const char *png_note, rlt_str *out);

#endif /* RLT_REPORT_H */
