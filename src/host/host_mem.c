/* Host memory and element-wise initialisers (placeholder until the tensor work lands). */
#include "host/host.h"

const gcsh_mem_ops gcsh_host_mem_ops = {0};
