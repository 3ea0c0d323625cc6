/* MPI's failures in words.  See mpi_try.h. */
#include <stdio.h>

#include "core/mpi_try.h"

int gcsh_mpi_failed(gcsh_ctx *ctx, const char *what, const char *call, int rc, const char *file,
                    int line)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof msg, "MPI error code %d", rc);
    return gcsh_set_error(ctx, "%s%s failed: %s (%s:%d)", what, call, msg, file, line);
}
