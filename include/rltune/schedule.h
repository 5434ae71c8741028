/*
 * rltune/schedule.h - schedules and the loop nests they make.
 *
 * A schedule is a list of primitive steps (split, reorder, fuse, unroll,
 * vectorize, parallel, cache_write, pack, pad) with a text form, one step
 * a line (docs/schedule.md):
 *
 *     # rltune schedule v1
 *     split j 16
 *     reorder i j.o k j.i
 *     vectorize j.i
 *
 * A nest is an op's loop nest with a schedule applied, each step checked
 * by its legality rule first: what is measured, printed and lowered to C.
 * Build a schedule from text (rlt_sched_parse) or step by step
 * (rlt_sched_create, then rlt_sched_add_*: typed steps, checked for their
 * own form when added and for legality when applied).
 */
#ifndef RLTUNE_SCHEDULE_H
#define RLTUNE_SCHEDULE_H

#include "rltune/op.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlt_sched rlt_sched;
typedef struct rlt_nest rlt_nest;

/* The most run-time threads a parallel loop may use. */
#define RLT_MAX_THREADS 256

/* ---- schedules --------------------------------------------------------- */

/* An empty schedule (NULL when out of memory). Free with rlt_sched_destroy. */
RLT_API rlt_sched *rlt_sched_create(void);
RLT_API void rlt_sched_destroy(rlt_sched *s); /* NULL ok */

/* Parses a schedule's text. Blank lines and '#' comments are skipped; a
 * header "# rltune schedule vN" with N other than 1 is refused. Errors
 * (PARSE_ERROR) name `source` ("my.sched", "<inline>") and the line. */
RLT_API rlt_status rlt_sched_parse(const char *text, const char *source, rlt_sched **out, rlt_diag *diag);

/* Reads and parses a schedule file (IO_ERROR when it cannot be read). */
RLT_API rlt_status rlt_sched_load(const char *path, rlt_sched **out, rlt_diag *diag);

/* The text form, header first, one step a line: what rlt_sched_parse takes
 * back. Free with rlt_free; NULL when out of memory. */
RLT_API char *rlt_sched_text(const rlt_sched *s);

/* Number of steps. */
RLT_API int rlt_sched_n_steps(const rlt_sched *s);

/* Typed steps, appended to s. Loops are named as the nest names them ("i",
 * "j.o", "i.o_j.o"); a name too long for a step, a split factor or pack
 * block below 1 (1 is allowed, as in the text form: an inner loop of one
 * iteration) or a thread count out of range is INVALID_ARGUMENT, and s is
 * unchanged. Whether
 * the step is legal is decided when the schedule is applied. */
RLT_API rlt_status rlt_sched_add_split(rlt_sched *s, const char *loop, int64_t factor, rlt_diag *diag);
/* The loops take the positions they hold, in this order. */
RLT_API rlt_status rlt_sched_add_reorder(rlt_sched *s, int n_loops, const char *const *loops, rlt_diag *diag);
RLT_API rlt_status rlt_sched_add_fuse(rlt_sched *s, const char *outer, const char *inner, rlt_diag *diag);
RLT_API rlt_status rlt_sched_add_unroll(rlt_sched *s, const char *loop, rlt_diag *diag);
RLT_API rlt_status rlt_sched_add_vectorize(rlt_sched *s, const char *loop, rlt_diag *diag);
/* n_threads 0: the run-time thread count. */
RLT_API rlt_status rlt_sched_add_parallel(rlt_sched *s, const char *loop, int n_threads, rlt_diag *diag);
/* loop NULL: a tile around the whole nest ("root"). */
RLT_API rlt_status rlt_sched_add_cache_write(rlt_sched *s, const char *loop, rlt_diag *diag);
/* Copies `tensor` into a blocked layout: dims[i] (an index into the
 * tensor's dimensions) split by blocks[i], the blocks innermost. */
RLT_API rlt_status rlt_sched_add_pack(rlt_sched *s, const char *tensor, int n_blocks, const int *dims,
                                      const int64_t *blocks, rlt_diag *diag);
/* Copies `tensor` with zero borders, so its reads need no bounds checks. */
RLT_API rlt_status rlt_sched_add_pad(rlt_sched *s, const char *tensor, rlt_diag *diag);

/* ---- nests ------------------------------------------------------------- */

/* The op's loop nest with schedule s applied (NULL: the default nest:
 * spatial loops in output order, then the reduction loops). Each step is
 * checked before it is accepted: an illegal one is ILLEGAL_SCHEDULE naming
 * the step and why. `op` is borrowed and must outlive the nest. Free with
 * rlt_nest_destroy. */
RLT_API rlt_status rlt_nest_create(const rlt_op *op, const rlt_sched *s, rlt_nest **out, rlt_diag *diag);
RLT_API void rlt_nest_destroy(rlt_nest *n); /* NULL ok */

/* The loop tree, one loop a line, as `rltune show --tree-only` prints it.
 * Free with rlt_free; NULL when out of memory. */
RLT_API char *rlt_nest_tree(const rlt_nest *n);

/* The C kernel the nest lowers to (without the preamble every kernel
 * shares), as `rltune show --c-only` prints it. Free with rlt_free. Errors:
 * OUT_OF_MEMORY, INTERNAL (a bug). */
typedef struct rlt_c_source {
    char *code;        /* the kernel function; free with rlt_free */
    char symbol[64];   /* its name: "rlt_k_" and 16 hex digits of the code's hash */
    bool needs_openmp; /* it has a parallel loop: compiled and linked with OpenMP */
} rlt_c_source;
RLT_API rlt_status rlt_nest_c_source(const rlt_nest *n, rlt_c_source *out, rlt_diag *diag);

/* The lowered loop tree that the nest's C is printed from (loops, unrolled
 * copies, guards, versions, vector loops, the accumulator tile and its
 * write-back, the statements), one node a line, as `rltune show --stage
 * lowered` prints it. *out: free with rlt_free (NULL on error). Errors:
 * OUT_OF_MEMORY, INTERNAL (a bug). */
RLT_API rlt_status rlt_nest_lowered_text(const rlt_nest *n, char **out, rlt_diag *diag);

/* Whether the nest has a parallel loop (its kernel needs OpenMP). */
RLT_API bool rlt_nest_is_parallel(const rlt_nest *n);

#ifdef __cplusplus
}
#endif
#endif /* RLTUNE_SCHEDULE_H */
