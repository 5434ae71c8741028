/*
 * export.h - writes a scheduled op's kernel as a small stand-alone C
 * library that needs nothing of rltune to build or run:
 *
 *     DIR/NAME.c       the preamble, the kernel (renamed NAME_kernel) and the
 *                      wrappers declared in NAME.h
 *     DIR/NAME.h       the call signature, documented: tensors by name
 *     DIR/libNAME.so   NAME.c compiled (unless opts->no_build)
 *     DIR/example.c    fills the inputs, calls NAME, checks the output
 *                      against the op's reference (plain loops, double
 *                      precision) and prints "... OK" (exit 0) or "FAILED"
 *     DIR/Makefile     builds the example against libNAME.so
 *
 * Layout and the wrapper's contract: docs/formats.md ("Exported kernels").
 */
#ifndef RLT_EXPORT_H
#define RLT_EXPORT_H

#include "measure/measure.h"
#include "sched/sched.h"

#define RLT_EXPORT_NAME_MAX 128

typedef struct rlt_export_opts {
    const char *dir;      /* created if absent (with its parents); files in it are replaced */
    const char *name;     /* NULL: rlt_export_name(op) */
    rlt_build_opts build; /* the compiler and flags of libNAME.so and the Makefile
                             (NULL fields: $RLTUNE_CC or gcc, RLT_DEFAULT_CFLAGS) */
    int n_threads;        /* threads NAME() passes to parallel loops; 0 = 1 */
    const char *origin;   /* one line for the header's comment: where the schedule came
                             from ("record 12 of rltune.db, 87.1 GFLOP/s"); may be NULL */
    bool no_build;        /* write the sources only (the Makefile can build the library) */
} rlt_export_opts;

typedef struct rlt_export_result {
    char name[RLT_EXPORT_NAME_MAX];
    char so_path[4096];   /* "" when not built */
    bool needs_openmp;
} rlt_export_result;

/* "rltune_matmul_512x512x512": "rltune_", the op's kind, then its parameter
 * values (a built-in op) or axis extents (an expression) joined by 'x';
 * only [a-z0-9_]. */
void rlt_export_name(const rlt_op *op, char *out, size_t cap);

/* Applies `sched` to `op` (both borrowed), generates the kernel and writes
 * the files above. Errors: an illegal schedule (ILLEGAL_SCHEDULE, with the
 * step), a name that is not [a-z_][a-z0-9_]* (INVALID_ARGUMENT), a file that
 * cannot be written (IO_ERROR, naming it), a compiler that fails or cannot
 * start (BUILD_ERROR / IO_ERROR; its messages went to stderr). */
rlt_status rlt_export_kernel(const rlt_op *op, const rlt_sched *sched, const rlt_export_opts *opts,
                             rlt_export_result *out, rlt_diag *diag);

#endif /* RLT_EXPORT_H */
