/* The copy kernel of one-sided transfers (engine "sm"), behind an extern "C"
 * launcher (src/cuda/cuda_xfer.c).
 *
 * A transfer is a list of segments, each cut into chunks of GCSH_XFER_CHUNK
 * bytes; one launch copies every chunk of every segment (blocks stride over
 * the chunks), so a putv of thousands of segments is one kernel.  With a
 * signal word, the last block to finish adds the value with release
 * ordering at system scope, after every block's stores are fenced: whoever
 * sees the new value sees all the data. */
#ifndef GCSH_KERNELS_XFERKERN_H
#define GCSH_KERNELS_XFERKERN_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GCSH_XFER_CHUNK ((size_t)64 << 10)

/* One segment as the kernel reads it (device memory): bytes > 0, and
 * first_chunk the number of chunks of the segments before it. */
typedef struct gcsh_kseg {
    void *dst;
    const void *src;
    size_t bytes;
    size_t first_chunk;
} gcsh_kseg;

/* Fills first_chunk of seg[0..nseg) (host memory) and returns the total
 * number of chunks; 0 when a segment is empty (the caller drops those). */
size_t gcsh_k_xfer_layout(gcsh_kseg *seg, size_t nseg);

/* Copies every segment of segs (device memory, laid out by
 * gcsh_k_xfer_layout, with `chunks` chunks in all) with at most max_blocks
 * blocks; then, when signal is not NULL, adds value to *signal (release,
 * system scope).  arrived: a device word that is 0 before the launch (the
 * kernel leaves it 0); needed with a signal. */
cudaError_t gcsh_k_xfer(const gcsh_kseg *segs, size_t nseg, size_t chunks, unsigned max_blocks,
                        unsigned *arrived, uint64_t *signal, uint64_t value, cudaStream_t stream);

/* w:fence() on the rank's stream: one thread, a sequentially consistent
 * fence at system scope.  Stream order starts it once every copy and
 * kernel before it finished; the fence makes their writes (to peers' GPUs
 * over NVLink, to host memory) visible at system scope before whatever the
 * stream runs after it. */
cudaError_t gcsh_k_fence(cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
