/*
 * rltune.h - the one public header of rltune, an autotuner and kernel compiler
 * for deep-learning tensor programs on the CPU.
 *
 * Overview
 * --------
 * An operator is stated as a tensor expression (a built-in op spec such as
 * "matmul:M=512,N=512,K=512" or a user's einsum-like expression). Its default
 * loop nest is transformed by a schedule, a replayable trace of primitive
 * steps (split, reorder, fuse, unroll, vectorize, parallel, cache_write, pack,
 * pad). The scheduled nest is lowered to C, compiled by the system compiler
 * into a shared object, and measured in a child process against a reference.
 *
 * This header holds what every part of rltune shares: status codes and the
 * diagnostics struct. The library's modules are declared in their own
 * headers under src/ (ir/ir.h, sched/sched.h, codegen/codegen.h,
 * measure/measure.h); a program embedding rltune includes those, as the
 * `rltune` command and bench/ do. Worked example (every call returns an
 * rlt_status and fills `d` with a message naming what was wrong):
 *
 *     rlt_diag d = {0};
 *     rlt_op *op = NULL;
 *     rlt_op_parse("matmul:M=256,N=256,K=256", &op, &d);
 *     rlt_sched *s = NULL;
 *     rlt_sched_parse("split j 8\nreorder k j.i\nvectorize j.i\n", "<inline>", &s, &d);
 *     rlt_nest nest;
 *     rlt_sched_apply(s, op, &nest, &d);          // legality checked per step
 *     rlt_build_opts bopts = {0};                // gcc, default flags and cache
 *     rlt_workload *w = NULL;
 *     rlt_workload_create(op, &bopts, 0, &w, &d); // inputs + reference output
 *     rlt_run_opts ropts = {0};                  // 5 samples of >= 20 ms
 *     rlt_run_result r;
 *     rlt_measure_nests(w, &bopts, &ropts, 1, &nest, &r, &d);
 *     printf("%s %.1f GFLOP/s\n", rlt_status_str(r.status), r.gflops);
 *     rlt_workload_destroy(w); rlt_sched_destroy(s); rlt_op_destroy(op);
 *
 * Ownership: functions that hand out memory say so; free it with the named
 * function (rlt_free for strings). Nothing here keeps global mutable state
 * except the allocator's test hook (rlt_alloc_fail_after).
 * Threads: distinct objects may be used from distinct threads; one object is
 * not safe to share across threads while being modified.
 */
#ifndef RLTUNE_H
#define RLTUNE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RLTUNE_VERSION "0.1.0"

/* Every fallible function returns one of these. RLT_STATUS_OK is zero. The
 * BUILD_* / RUN_* / WRONG_ANSWER codes are also the status of a measurement. */
typedef enum rlt_status {
    RLT_STATUS_OK = 0,
    RLT_STATUS_INVALID_ARGUMENT, /* bad user input: a value out of range, unknown name */
    RLT_STATUS_PARSE_ERROR,      /* text that does not follow its grammar */
    RLT_STATUS_ILLEGAL_SCHEDULE, /* a schedule step refused by its legality check */
    RLT_STATUS_IO_ERROR,         /* a file or process could not be read, written, started */
    RLT_STATUS_OUT_OF_MEMORY,
    RLT_STATUS_BUILD_ERROR,      /* the compiler rejected the generated source */
    RLT_STATUS_BUILD_TIMEOUT,    /* the compiler ran past its time limit */
    RLT_STATUS_RUN_ERROR,        /* the kernel crashed (signal) or could not be loaded */
    RLT_STATUS_RUN_TIMEOUT,      /* the kernel ran past its time limit */
    RLT_STATUS_WRONG_ANSWER,     /* the kernel's output differs from the reference */
    RLT_STATUS_INTERNAL,         /* a bug in rltune: please report it */
    RLT_STATUS_COUNT
} rlt_status;

/* A short upper-case name for every status ("OK", "RUN_TIMEOUT", ...). Never
 * NULL: out-of-range values give "UNKNOWN_STATUS". */
const char *rlt_status_str(rlt_status status);

/* Parses a status name as printed by rlt_status_str. Returns RLT_STATUS_COUNT
 * when the name is unknown. */
rlt_status rlt_status_from_str(const char *name);

/* Details of a failure, filled by the function that failed. Caller-owned; may
 * be passed as NULL where the caller does not want the message. */
typedef struct rlt_diag {
    rlt_status status;
    char message[1024]; /* names what was wrong, where, and what is accepted */
} rlt_diag;

/* Frees memory handed out by rltune (strings, arrays). NULL is a no-op. */
void rlt_free(void *ptr);

#ifdef __cplusplus
}
#endif
#endif /* RLTUNE_H */
