/*
 * executor.c - the --executor option's names (executor.h); the MPI
 * executor itself is mpi/executor_mpi.c, or mpi/executor_none.c in a build
 * without MPI.
 */
#include "cli/executor.h"
#include "cli/cli.h"

#include <string.h>

bool rlt_cli_executor_wants_mpi(int argc, char **argv)
{
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--executor=mpi") == 0) return true;
        if (strcmp(argv[a], "--executor") == 0 && a + 1 < argc && strcmp(argv[a + 1], "mpi") == 0) return true;
    }
    return false;
}

int rlt_cli_executor_get(const char *name, const rlt_executor **out)
{
    *out = NULL;
    if (!name || strcmp(name, "local") == 0) return RLT_CLI_EXIT_OK;
    if (strcmp(name, "mpi") != 0) {
        rlt_cli_error("--executor: unknown executor '%.100s': expected local (build and run here) or mpi (over "
                      "the ranks of an MPI job: mpirun -np N rltune ... --executor mpi)",
                      name);
        return RLT_CLI_EXIT_USAGE;
    }
    *out = rlt_cli_executor_mpi();
    return *out ? RLT_CLI_EXIT_OK : RLT_CLI_EXIT_USAGE;
}
