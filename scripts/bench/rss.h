/* VmRSS of this process in KiB (-1 when /proc cannot be read), as the soak
 * samples it (tests/lua/soak.lua): the one measure of the memory
 * reproducers beside it (nccl_split_rss.c, nccl_graph_rss.c,
 * graph_node_rss.c, nccl_onerank_rss.c). */
#ifndef GCSH_BENCH_RSS_H
#define GCSH_BENCH_RSS_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}
#endif
