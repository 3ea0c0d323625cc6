/* The device runtime in use (gpu_rt.h) and what every GPU backend's host
 * waits share. */
#include <sched.h>
#include <time.h>

#include "gpu/gpu_rt.h"

static const gcsh_gpu_rt *in_use;

void gcsh_gpu_use(const gcsh_gpu_rt *rt)
{
    in_use = rt;
}

const gcsh_gpu_rt *gcsh_gpu(void)
{
    return in_use;
}

/* Pacing of every host poll loop of a GPU backend: spin for the first
 * polls, yield the core for the next few thousand, then sleep 20 us between
 * polls so a long wait does not burn a core that MPI progress may need.
 *
 * Why yield before sleeping: a collective on a non-blocking communicator
 * returns ncclInProgress and NCCL finishes the launch on a thread of its own,
 * so every NCCL call waits here twice (for the launch, then for the stream).
 * A nanosleep of 20 us lasts longer still with Linux's default timer slack
 * (50 us); when this slept after 2000 bare polls, a c:allreduce of 8 bytes
 * cost 110-280 us on 2 H200s (bench.allreduce, NCCL 2.28.3).  sched_yield
 * returns at once when nothing else wants the core and lets NCCL's thread in
 * when something does. */
void gcsh_gpu_poll_pause(unsigned polls)
{
    if (polls < 64)
        return;
    if (polls < 8192) {
        sched_yield();
        return;
    }
    struct timespec ts = {0, 20 * 1000};
    nanosleep(&ts, NULL);
}
