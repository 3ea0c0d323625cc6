/* A minimal C unit-test harness: CHECK counts, UNIT_END prints the closing
 * line "N passed, N failed" that tests/run.sh adds to its totals. */
#ifndef GCSH_UNIT_H
#define GCSH_UNIT_H

#include <stdio.h>

static int unit_passed __attribute__((unused)), unit_failed __attribute__((unused));

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (cond) {                                                          \
            unit_passed++;                                                   \
        } else {                                                             \
            unit_failed++;                                                   \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                      \
            printf(__VA_ARGS__);                                             \
            printf("\n");                                                    \
        }                                                                    \
    } while (0)

#define UNIT_END()                                                           \
    do {                                                                     \
        printf("%d passed, %d failed\n", unit_passed, unit_failed);          \
        return unit_failed ? 1 : 0;                                          \
    } while (0)

#endif
