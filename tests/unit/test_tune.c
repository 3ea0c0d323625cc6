/* core/kreduce_tune.h: every backend built has rows (gcsh refuses to
 * start one without), in the order auto reads them; and what auto picks
 * by a row, as the table of algorithms (bind/kalgos.c) says. */
#include <string.h>

#include "core/backend.h"
#include "core/kll.h"
#include "bind/kalgos.h"
#include "core/kplan.h"
#include "core/kreduce_tune.h"
#include "host/host.h"
#ifdef GCSH_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif
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

static void check_choose(void)
{
    const gcsh_kern_crossover r = {"test", 2, 32, 256, 512, (size_t)8 << 10};
    CHECK(strcmp(gcsh_kalgo_choose(&r, 8), "ll") == 0, "8 B: ll");
    CHECK(strcmp(gcsh_kalgo_choose(&r, 32), "ll") == 0, "32 B: ll (limits are inclusive)");
    CHECK(strcmp(gcsh_kalgo_choose(&r, 33), "ll128") == 0, "33 B: ll128");
    CHECK(strcmp(gcsh_kalgo_choose(&r, 257), "oneshot") == 0, "257 B: oneshot");
    CHECK(strcmp(gcsh_kalgo_choose(&r, 4096), "twoshot") == 0, "4 KiB: twoshot");
    CHECK(strcmp(gcsh_kalgo_choose(&r, (size_t)1 << 20), "comm") == 0, "1 MiB: comm");
    const gcsh_kern_crossover no_oneshot = {"test", 2, (size_t)1 << 30, 0, 0, GCSH_KERN_NO_LIMIT};
    CHECK(strcmp(gcsh_kalgo_choose(&no_oneshot, GCSH_LL_MAX_BYTES), "ll") == 0, "ll to its area");
    CHECK(strcmp(gcsh_kalgo_choose(&no_oneshot, GCSH_LL_MAX_BYTES + 1), "twoshot") == 0,
          "past the LL area: never ll, whatever the row says");
    const gcsh_kern_crossover ll128_all = {"test", 2, 0, (size_t)1 << 30, 0, GCSH_KERN_NO_LIMIT};
    CHECK(strcmp(gcsh_kalgo_choose(&ll128_all, GCSH_LL128_MAX_BYTES), "ll128") == 0,
          "ll128 to its bound");
    CHECK(strcmp(gcsh_kalgo_choose(&ll128_all, GCSH_LL128_MAX_BYTES + 1), "twoshot") == 0,
          "past its bound: never ll128, whatever the row says");
    const char *order[] = {"ll", "ll128", "oneshot", "twoshot", "comm"};
    for (int i = 0; i < 5; i++)
        CHECK(gcsh_kalgo_auto(i) && strcmp(gcsh_kalgo_auto(i), order[i]) == 0,
              "auto considers %s %d-th", order[i], i + 1);
    CHECK(gcsh_kalgo_auto(5) == NULL, "and nothing else");
}

int main(void)
{
    check_choose();
    CHECK(gcsh_kern_tuned(gcsh_host_backend.name), "the host backend has rows");
    check_rows_in_order("host");
#ifdef GCSH_HAVE_CUDA
    CHECK(gcsh_kern_tuned(gcsh_cuda_backend.name), "the cuda backend has rows");
    check_rows_in_order("cuda");
#endif
    CHECK(!gcsh_kern_tuned("rocm"), "a backend without rows is not tuned");
    UNIT_END();
}
