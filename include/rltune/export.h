/*
 * rltune/export.h - a scheduled kernel as a stand-alone C library
 * (docs/cli.md, "rltune export"): NAME.c (the kernel and the shared
 * preamble), NAME.h (its contract), libNAME.so, a Makefile and a
 * self-checking example, with nothing of rltune needed to build or call it.
 */
#ifndef RLTUNE_EXPORT_H
#define RLTUNE_EXPORT_H

#include "rltune/measure.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RLT_EXPORT_NAME_MAX 128

typedef struct rlt_export_opts {
    const char *dir;      /* created if absent (with its parents); files in it are replaced */
    const char *name;     /* NULL: rlt_export_name(op) */
    rlt_build_opts build; /* the compiler and flags of libNAME.so and the Makefile */
    int n_threads;        /* threads NAME() passes to parallel loops; 0 = 1 */
    const char *origin;   /* one line for the header's comment: where the schedule came from; may be NULL */
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
RLT_API void rlt_export_name(const rlt_op *op, char *out, size_t cap);

/* Applies `sched` to `op` (both borrowed), generates the kernel and writes
 * the files. Errors: an illegal schedule (ILLEGAL_SCHEDULE, with the step),
 * a name that is not [a-z_][a-z0-9_]* (INVALID_ARGUMENT), a file that
 * cannot be written (IO_ERROR, naming it), a compiler that fails or cannot
 * start (BUILD_ERROR / IO_ERROR). */
RLT_API rlt_status rlt_export_kernel(const rlt_op *op, const rlt_sched *sched, const rlt_export_opts *opts,
                                     rlt_export_result *out, rlt_diag *diag);

#ifdef __cplusplus
}
#endif
#endif /* RLTUNE_EXPORT_H */
