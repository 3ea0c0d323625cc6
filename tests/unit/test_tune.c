/* core/kreduce_tune.h: every backend built has rows (gcsh refuses to
 * start one without), in the order auto reads them. */
#include <string.h>

#include "core/backend.h"
#include "core/kreduce_tune.h"
#include "unit.h"

/* A backend's rows by growing team size: auto takes the first row at least
 * as large as the team, so a row after a larger one would never be read. */
static void check_rows_in_order(const char *backend)
{
    int last = 0;
    for (size_t i = 0; i < sizeof gcsh_kern_crossovers / sizeof gcsh_kern_crossovers[0]; i++) {
        const gcsh_kern_crossover *r = &gcsh_kern_crossovers[i];
        if (strcmp(r->backend, backend) != 0)
            continue;
        CHECK(r->team_size > last, "%s: a row for %d ranks after one for %d", backend,
              r->team_size, last);
        last = r->team_size;
    }
}

int main(void)
{
    CHECK(gcsh_kern_tuned(gcsh_host_backend.name), "the host backend has rows");
    check_rows_in_order("host");
#ifdef GCSH_HAVE_CUDA
    CHECK(gcsh_kern_tuned(gcsh_cuda_backend.name), "the cuda backend has rows");
    check_rows_in_order("cuda");
#endif
    CHECK(!gcsh_kern_tuned("rocm"), "a backend without rows is not tuned");
    UNIT_END();
}
