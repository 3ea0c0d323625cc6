/* Host collectives over MPI (placeholder until the communicator work lands). */
#include "host/host.h"

const gcsh_comm_ops gcsh_host_comm_ops = {0};
