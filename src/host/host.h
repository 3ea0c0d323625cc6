/* The host backend: CPU memory, MPI collectives, C loops as "kernels". */
#ifndef GCSH_HOST_H
#define GCSH_HOST_H

#include "backend.h"

extern const gcsh_mem_ops gcsh_host_mem_ops;
extern const gcsh_comm_ops gcsh_host_comm_ops;

#endif
