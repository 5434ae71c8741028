/*
 * rltune/space.h - an op's knob space and measuring its configurations
 * one batch at a time: what ktune's knob environment (the Python
 * rltune/Knobs-v0, docs/python.md) and any other search written outside
 * rltune step through.
 *
 * The knob space is the one a tuning session searches (docs/tuners.md):
 * multi-level tiling of the op's loop nest, each choice a knob with a list
 * of values (register and middle tiles, reduction blocks, the vectorized
 * axis and width, loop orders, unrolling, packing, padding, the parallel
 * axis at several threads, the compiler when clang is installed). A
 * configuration is one choice index per knob, an int array of
 * rlt_knob_space_n_knobs entries; its key ("v1;vec=j*8;i.tile=4;...") is
 * what tuning records store. Not every configuration is valid (a register
 * tile needing more accumulators than the machine has, a middle tile past
 * the axis's end): measure valid ones.
 *
 *     rlt_knob_space *ks = NULL;
 *     rlt_knob_space_create(op, 1, &ks, &d);        // or _open_dataset("mm.db", ...)
 *     int n = rlt_knob_space_n_knobs(ks);
 *     int config[RLT_KNOB_SPACE_MAX_KNOBS];
 *     rlt_knob_space_median(ks, config);
 *     rlt_config_measurer *m = NULL;
 *     rlt_config_measurer_options mo;
 *     rlt_config_measurer_options_init(&mo);
 *     rlt_config_measurer_create_live(ks, &mo, &m, &d); // or _create_replay(ks, NULL, ...)
 *     rlt_config_result r;
 *     rlt_config_measure(m, 1, config, &r, &d);
 *     printf("%s %.1f GFLOP/s\n", rlt_status_str(r.status), r.gflops);
 *     rlt_config_measurer_destroy(m);
 *     rlt_knob_space_destroy(ks);
 *
 * Threads: one handle from one thread at a time; a measurer borrows its
 * space (read only), so several measurers may share one. Live measurement
 * forks a child per kernel: call it from one thread.
 */
#ifndef RLTUNE_SPACE_H
#define RLTUNE_SPACE_H

#include "rltune/measure.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most knobs a space has, and the most choices a knob has: an array
 * of RLT_KNOB_SPACE_MAX_KNOBS ints holds any configuration. */
#define RLT_KNOB_SPACE_MAX_KNOBS 40
#define RLT_KNOB_SPACE_MAX_CHOICES 64

/* ---- the knob space ---------------------------------------------------------- */

typedef struct rlt_knob_space rlt_knob_space;

/* The space a tuning session of `op` at `n_threads` run-time threads
 * (1..256; more than one adds the parallel knob) searches: the same knobs,
 * this machine's vector width, clang offered when it is installed. The
 * space keeps its own copy of the op (the caller's may be destroyed).
 * Errors: n_threads out of range (INVALID_ARGUMENT), an op the space rule
 * cannot tile, OUT_OF_MEMORY. Free with rlt_knob_space_destroy. */
RLT_API rlt_status rlt_knob_space_create(const rlt_op *op, int n_threads, rlt_knob_space **out, rlt_diag *diag);

/* The space the dataset `path` ('rltune dataset', rlt_dataset_measure)
 * was measured on: its op, thread count, the measuring machine's vector
 * width and whether it offered clang; its measurements are loaded too
 * (rlt_knob_space_dataset_size, rlt_config_measurer_create_replay). Read
 * only. Errors, naming the file: missing or unreadable (IO_ERROR), not a
 * dataset, unfinished, or of a space this rltune no longer makes
 * (INVALID_ARGUMENT), a malformed description (PARSE_ERROR). */
RLT_API rlt_status rlt_knob_space_open_dataset(const char *path, rlt_knob_space **out, rlt_diag *diag);

RLT_API void rlt_knob_space_destroy(rlt_knob_space *s); /* NULL ok; after its measurers */

/* The message of the space's last failed call ("" when none). */
RLT_API const char *rlt_knob_space_last_error(const rlt_knob_space *s);

/* The space's op (borrowed from the space) and thread count. */
RLT_API const rlt_op *rlt_knob_space_op(const rlt_knob_space *s);
RLT_API int rlt_knob_space_n_threads(const rlt_knob_space *s);

RLT_API int rlt_knob_space_n_knobs(const rlt_knob_space *s);
/* Knob `knob`'s name as config keys write it ("vec", "i.tile", "cc"), or
 * NULL when knob is out of range. Borrowed from the space. */
RLT_API const char *rlt_knob_space_knob_name(const rlt_knob_space *s, int knob);
/* Its number of choices (>= 1; 0 when knob is out of range). */
RLT_API int rlt_knob_space_n_choices(const rlt_knob_space *s, int knob);
/* A choice's value as text, as config keys write it ("8", "j*8", "gcc",
 * "k,i,j", "off"), or NULL when out of range. Borrowed from the space. */
RLT_API const char *rlt_knob_space_choice_text(const rlt_knob_space *s, int knob, int choice);

/* The number of configurations, valid or not: the product of the knobs'
 * choices (saturating at UINT64_MAX). */
RLT_API uint64_t rlt_knob_space_size(const rlt_knob_space *s);

/* Configuration `config`'s key ("v1;vec=j*8;i.tile=4;..."), stable across
 * runs: what tuning records store. *out is owned: free it with rlt_free.
 * Errors: a choice out of its knob's range (INVALID_ARGUMENT, naming the
 * knob and its range), OUT_OF_MEMORY. */
RLT_API rlt_status rlt_knob_space_config_key(rlt_knob_space *s, const int *config, char **out, rlt_diag *diag);

/* Parses a key back into `out` (rlt_knob_space_n_knobs ints). Every knob
 * must be named, with one of its choices. PARSE_ERROR naming what is
 * wrong (an unknown knob, a value that is not a choice, a missing knob,
 * another key version). */
RLT_API rlt_status rlt_knob_space_config_parse(rlt_knob_space *s, const char *key, int *out, rlt_diag *diag);

/* Whether `config` is valid: every choice in range and the schedule it
 * stands for legal. For a dataset's space, validity is the space's own:
 * rlt_knob_space_in_dataset says whether the dataset measured it. */
RLT_API bool rlt_knob_space_is_valid(const rlt_knob_space *s, const int *config);

/* The same with the reason: OK for a valid configuration, else
 * INVALID_ARGUMENT (a choice out of range) or ILLEGAL_SCHEDULE (the step
 * the schedule's legality check refused, or the rule it breaks). */
RLT_API rlt_status rlt_knob_space_config_check(rlt_knob_space *s, const int *config, rlt_diag *diag);

/* The valid configuration nearest `from` (choices in range): `from` itself
 * when valid (for a dataset's space: valid and measured by the dataset),
 * else the first found one knob step away, then two (knobs in order, -1
 * before +1); else, for a dataset's space, the measured configuration
 * fewest choice steps away (the first in its order on a tie); else the
 * best-rated of the rule-built seeds a session measures first. Returns
 * the number of knob steps from `from` (0: from itself), or -1 for a
 * configuration found by the fallbacks. `out` may be `from`. */
RLT_API int rlt_knob_space_nearest_valid(const rlt_knob_space *s, const int *from, int *out);

/* The median configuration: every knob at its middle choice
 * ((n_choices - 1) / 2), or the valid one nearest it
 * (rlt_knob_space_nearest_valid; the return value is its). */
RLT_API int rlt_knob_space_median(const rlt_knob_space *s, int *out);

/* The dataset of a space opened from one: the number of configurations it
 * measured (0 for an op's space), the i-th of them (0 <= i < size, in the
 * space's index order; INVALID_ARGUMENT otherwise) and whether `config`
 * is one of them (false for an op's space). */
RLT_API int rlt_knob_space_dataset_size(const rlt_knob_space *s);
RLT_API rlt_status rlt_knob_space_dataset_config(rlt_knob_space *s, int i, int *out, rlt_diag *diag);
RLT_API bool rlt_knob_space_in_dataset(const rlt_knob_space *s, const int *config);

/* ---- measuring configurations ----------------------------------------------- */

typedef struct rlt_config_measurer rlt_config_measurer;

/* How a live measurer builds, runs and stores. Zero fields take the
 * defaults of rlt_build_opts and rlt_run_opts; strings are copied. */
typedef struct rlt_config_measurer_options {
    rlt_build_opts build;   /* the cc knob, when the space has one, chooses the compiler */
    rlt_run_opts run;       /* run.n_threads is the space's; no slow cutoff unless run.slow_cutoff_ms > 0 */
    /* A records database (created if absent): a configuration recorded
     * there for the op and target is read back instead of measured, and
     * what is measured is stored, one transaction a batch, as a session
     * does. NULL (default): none. A dataset is refused (replay it). */
    const char *db_path;
    const char *tuner;      /* the proposer the records name; NULL = "knobs" */
    uint64_t seed;          /* the seed the records note */
} rlt_config_measurer_options;

RLT_API void rlt_config_measurer_options_init(rlt_config_measurer_options *o);

/* A configuration's measurement. */
typedef struct rlt_config_result {
    rlt_status status;      /* OK; BUILD_ERROR, BUILD_TIMEOUT, RUN_ERROR, RUN_TIMEOUT,
                               WRONG_ANSWER (a kernel that failed); ILLEGAL_SCHEDULE: an
                               invalid configuration, not measured */
    bool is_absent;         /* a replay's dataset lacks it: status OK, no GFLOP/s, not a failure */
    bool is_from_records;   /* read back from the records (live with db_path) or the dataset */
    double gflops;          /* the op's flops / median time; 0 unless OK and measured */
    double time_median_ms;  /* 0 likewise */
    char message[256];      /* why it failed ("" when OK) */
} rlt_config_result;

/* Builds, runs and times configurations of `space` (borrowed: it must
 * outlive the measurer) here, as a tuning session does: a batch built
 * together (two compiler processes, gcc and clang side by side), then run
 * one at a time, checked against the op's reference and timed. `opts`
 * may be NULL (defaults). Errors: the reference's build or run, a
 * db_path that cannot be opened or is a dataset (INVALID_ARGUMENT,
 * IO_ERROR), a compiler command too long for a record, OUT_OF_MEMORY. */
RLT_API rlt_status rlt_config_measurer_create_live(const rlt_knob_space *space,
                                                   const rlt_config_measurer_options *opts,
                                                   rlt_config_measurer **out, rlt_diag *diag);

/* Answers from a dataset instead of measuring: noise-free and fast,
 * nothing compiled or run. `dataset_path` NULL: the dataset `space` was
 * opened from; else a dataset of the same op and thread count whose space
 * has the same knobs and choices as `space`. A configuration the dataset
 * lacks is is_absent (status OK), not a failure. Errors: as
 * rlt_knob_space_open_dataset's; a dataset of another op, thread count or
 * space (INVALID_ARGUMENT); NULL dataset_path for an op's space
 * (INVALID_ARGUMENT). */
RLT_API rlt_status rlt_config_measurer_create_replay(const rlt_knob_space *space, const char *dataset_path,
                                                     rlt_config_measurer **out, rlt_diag *diag);

RLT_API void rlt_config_measurer_destroy(rlt_config_measurer *m); /* NULL ok */

/* "live" or "replay". */
RLT_API const char *rlt_config_measurer_kind(const rlt_config_measurer *m);

/* The best GFLOP/s known: a replay's, the best of its whole dataset; a
 * live measurer's, the best it has measured or read back so far (0: none). */
RLT_API double rlt_config_measurer_best_gflops(const rlt_config_measurer *m);

/* Measures n configurations (configs: n rows of rlt_knob_space_n_knobs
 * ints, one after the other) as one batch; out[i] is row i's result. An
 * invalid configuration is ILLEGAL_SCHEDULE in its result and not
 * measured; a kernel that fails is its result's status. Returns non-OK
 * only when measuring itself cannot work: a choice out of range
 * (INVALID_ARGUMENT, naming the row and knob; nothing measured), the
 * compiler cannot be started, the records cannot be written,
 * OUT_OF_MEMORY. */
RLT_API rlt_status rlt_config_measure(rlt_config_measurer *m, int n, const int *configs, rlt_config_result *out,
                                      rlt_diag *diag);

/* The message of the measurer's last failed call ("" when none). */
RLT_API const char *rlt_config_measurer_last_error(const rlt_config_measurer *m);

#ifdef __cplusplus
}
#endif
#endif /* RLTUNE_SPACE_H */
