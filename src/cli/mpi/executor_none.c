/*
 * executor_none.c - the MPI executor of a build without MPI: refused, with
 * what to do about it (cli/executor.h).
 */
#include "cli/cli.h"
#include "cli/executor.h"

#define NO_MPI_TEXT                                                                                                    \
    "--executor mpi: this rltune was built without MPI; install OpenMPI (Debian: libopenmpi-dev openmpi-bin, "      \
    "scripts/install-deps.sh does) and build again, or leave --executor out to build and run here"

bool rlt_cli_executor_join(int argc, char **argv, int *out_exit)
{
    if (!rlt_cli_executor_wants_mpi(argc, argv)) return false;
    rlt_cli_error(NO_MPI_TEXT);
    *out_exit = RLT_CLI_EXIT_USAGE;
    return true;
}

void rlt_cli_executor_leave(void) {}

const rlt_executor *rlt_cli_executor_mpi(void)
{
    rlt_cli_error(NO_MPI_TEXT);
    return NULL;
}
