/*
 * executor.h - where `tune`, `tune --model` and `dataset` build and run
 * their candidates (--executor): here, in this process (local, the
 * default), or over the ranks of an MPI job (mpi: mpi/executor_mpi.c, built
 * when CMake finds an MPI library; mpi/executor_none.c, which refuses it,
 * otherwise). docs/distributed.md has the design.
 *
 * main() calls rlt_cli_executor_join first: under `--executor mpi` every
 * rank joins the job there; rank 0 goes on to run the command, and every
 * other rank serves rank 0's batches until rank 0 ends the job
 * (rlt_cli_executor_leave, also called by main), so only rank 0 parses
 * the command, opens the records and searches.
 */
#ifndef RLT_CLI_EXECUTOR_H
#define RLT_CLI_EXECUTOR_H

#include "rltune.h"

#include <stdbool.h>

/* Whether argv asks for --executor mpi (either spelling). */
bool rlt_cli_executor_wants_mpi(int argc, char **argv);

/* Joins the MPI job when argv asks for it. Returns true when this process
 * is done (a rank other than 0 that served until told to stop, or a
 * refusal: this build has no MPI, the job cannot start); *out_exit is
 * then its exit code. False: run the command (rank 0, or no MPI asked). */
bool rlt_cli_executor_join(int argc, char **argv, int *out_exit);

/* Rank 0, after the command: tells the other ranks to stop and leaves the
 * job. Nothing without MPI. */
void rlt_cli_executor_leave(void);

/* The executor --executor NAME names, for rlt_session_options.executor:
 * NULL for local (or NAME NULL). Prints the error and returns the exit
 * code for an unknown name, or mpi where this process is not rank 0 of a
 * job joined by rlt_cli_executor_join. */
int rlt_cli_executor_get(const char *name, const rlt_executor **out);

/* mpi/executor_mpi.c's (or executor_none.c's): the joined job's executor
 * (rank 0), or NULL after printing why there is none. */
const rlt_executor *rlt_cli_executor_mpi(void);

#endif /* RLT_CLI_EXECUTOR_H */
