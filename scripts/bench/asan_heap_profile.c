/* An LD_PRELOAD library for an AddressSanitizer build of gcsh: at the
 * seconds listed in HEAPPROF_AT (e.g. "60,180") after the process starts,
 * it prints AddressSanitizer's profile of the live heap (every allocation
 * context, with its stack) to ASan's log_path.  Two profiles of a run that
 * repeats the same rounds, diffed by context, show who keeps memory that
 * LeakSanitizer does not call lost (it is still reachable): how issue 35's
 * one-rank NCCL growth was found (docs/benchmarks.md).  A diagnosis only:
 * the print stops the allocator for seconds (it symbolizes every stack).
 * Build: gcc -shared -fPIC -O1 -o asan_heap_profile.so asan_heap_profile.c -lpthread
 * Run:   ASAN_OPTIONS=verify_asan_link_order=0:log_path=/tmp/prof HEAPPROF_AT=60,180 \
 *        LD_PRELOAD=./asan_heap_profile.so mpirun ... build-asan/gcsh ... */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* AddressSanitizer's (sanitizer/common_interface_defs.h); absent without it. */
void __sanitizer_print_memory_profile(size_t top_percent, size_t max_contexts)
    __attribute__((weak));

static double seconds_since(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (now.tv_nsec - start->tv_nsec) / 1e9;
}

/* Waits for each listed second on the monotonic clock (a sleep cut short
 * by a signal does not move a profile early; a slow print does not move
 * the next one late), then prints. */
static void *profile_at(void *arg)
{
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    char *list = strdup((const char *)arg), *save = NULL;
    for (char *t = list ? strtok_r(list, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
        double when = atof(t);
        while (seconds_since(&start) < when)
            usleep(100000);
        if (__sanitizer_print_memory_profile)
            __sanitizer_print_memory_profile(100, (size_t)1 << 20);
        fprintf(stderr, "asan_heap_profile: pid %d: profile at %.0f s\n", (int)getpid(),
                seconds_since(&start));
    }
    free(list);
    return NULL;
}

__attribute__((constructor)) static void start_profiler(void)
{
    const char *at = getenv("HEAPPROF_AT");
    pthread_t t;
    if (at && *at && pthread_create(&t, NULL, profile_at, (void *)at) == 0)
        pthread_detach(t);
}
