// The resident kernel of the persistent all-reduce (core/kpersist.h): it
// stays on the GPU and runs the "ll" protocol (kll.cuh) once for every call
// the host rings, instead of being launched once per call.
//
// The doorbell lives in mapped host memory, and every read of it is a PCIe
// round trip (about a microsecond; the GPU does not overlap one thread's
// reads of host memory well), which is what a call costs if it is read word
// by word (9.3 us a call on an H100 when it was).  So warp 0 of block 0
// looks at the ring entries themselves, kAhead at once, 16 bytes a lane in
// one coalesced load, with the stop word and the cancel generation beside
// it: one look finds every call rung since the last (an entry is rung once
// all its pairs carry the call's tag).  The calls found together run as a
// batch, one after another, and the batch publishes `done` once, after a
// system-scope fence.  With several blocks (sms > 1), block 0
// posts each batch in device memory for the others; the last block to
// finish a batch advances the window's LL count (which direct "ll" calls
// share) and publishes done.
//
// Rings from graphs (core/kpersist.h): the same look reads the go words of
// the graph slots (device memory, two words a lane: slots l and l + 32).  When no ring entry is
// there and the last slot of the next sequence (by number) is pending,
// warp 0 fences and reads the go words again (a graph writes the last slot
// after the others, a fence between (go_kernel): once it is seen, the
// others are, after the fence), and the slots pending with that number run
// as one batch in ascending order (their jobs read from the bell once and
// kept); the batch's end clears their pending bits instead of publishing
// done.  A later sequence, written while this one runs, waits its turn.
//
// Never stuck: the waits for peers are the collectives' (kwait.cuh),
// bounded by GCSH_GPU_WAIT_TIMEOUT and cancelled by an interrupt (the
// generation is read in every look, so an interrupt long before does not
// end it).  The idle wait for the doorbell has no bound (a resident waits
// for its next ring as long as it lives), but every look reads the stop
// word too.  When the kernel ends, for any reason, the last block out sets
// GCSH_PERSIST_ENDED in done and the reason in why.
#include "kbarrier.cuh"
#include "kll.cuh"
#include "reducekern.h"

namespace gcsh_k {

// Ring entries one look reads: two lanes of warp 0 an entry.
constexpr int kAhead = 16;
constexpr unsigned kFullWarp = 0xffffffffu;
// Registers: at most 40 a thread (65536 / (256 x 6), rounded down to the
// allocation unit), so a resident block leaves an SM room for one block of
// the fenced and one-shot kernels (512 threads of about 100 registers):
// the co-residency bound of kernels whose blocks wait for other ranks
// (gcsh_kwait.max_blocks) counts on a block per SM.
constexpr int kResidentMinBlocks = 6;
constexpr int kResidentMaxRegs = kSmRegisters / (kLLThreads * kResidentMinBlocks) / 8 * 8;
static_assert(kResidentMaxRegs * kLLThreads + kPairedMaxRegs * kThreads <= kSmRegisters,
              "a resident block and a block of the fenced and one-shot kernels share an SM");

// Calls [first, first + calls) of the ring, run one after another; or
// (graph != 0) the calls of those graph slots, lowest first.
struct Batch {
    unsigned long long first;
    unsigned long long count; // the window's LL count before the first
    unsigned gen;             // the cancel generation their waits end at
    int calls;                // 0: the resident ends
    unsigned long long graph; // 0: ring calls; else the graph slots run (bit s), ascending
    gcsh_persist_job job[kAhead];
};
static_assert(GCSH_PERSIST_GRAPH_SLOTS == 64, "two go words a lane: slots lane and lane + 32");
static_assert(GCSH_PERSIST_BELL_ALIGNED, "every bell's ring on a 16-byte boundary (load_line)");

// The resident's device memory (GCSH_PERSIST_SYNC_BYTES, zeroed at start).
struct Shared {
    Batch batch;                    // block 0's latest, for the other blocks
    unsigned long long posted;      // batches block 0 posted
    unsigned long long finished;    // batches every block finished
    unsigned long long blocks_done; // blocks done with the current batch
    unsigned long long gave_up;     // a GCSH_PERSIST_* reason, once a wait gave up
    unsigned long long blocks_out;  // blocks that ended
    unsigned long long graph_known; // graph slots whose job is in graph_job (bit s)
    unsigned long long graph_done;  // calls of graph slots completed
    unsigned long long graph_seq;   // the number of the last sequence taken (core/kpersist.h)
    gcsh_persist_job graph_job[GCSH_PERSIST_GRAPH_SLOTS];
};
static_assert(sizeof(Shared) <= GCSH_PERSIST_SEQS_OFFSET, "Shared ends before the go kernels' count");
static_assert(GCSH_PERSIST_SEQ_CALLS <= kAhead, "a sequence is one batch");
static_assert(sizeof(Batch) % 8 == 0, "a Batch is copied in 8-byte words");

struct Persist {
    LL ll;                   // the LL layout; region, op and count per call
    char *mine;              // my slice
    size_t esize;
    gcsh_persist_bell *bell; // mapped host memory
    Shared *sh;
};

__device__ inline unsigned long long peek(const void *w)
{
    return *reinterpret_cast<const volatile unsigned long long *>(w);
}

__device__ inline void poke(void *w, unsigned long long v)
{
    *reinterpret_cast<volatile unsigned long long *>(w) = v;
}

__device__ inline void pause(unsigned i, unsigned *ns)
{
    if (i > 64) {
        sleep_ns(*ns);
        *ns = *ns < 1024 ? *ns * 2 : *ns;
    }
}

// Graph slot s's go word (core/kpersist.h), after Shared in the sync area.
__device__ inline unsigned long long *go_word(const Persist &P, int s)
{
    return reinterpret_cast<unsigned long long *>(reinterpret_cast<char *>(P.sh) +
                                                  GCSH_PERSIST_GO_OFFSET) + s;
}

// The number a go word carries (core/kpersist.h), and the number of the
// sequence the resident runs next.
__device__ inline unsigned go_seq(unsigned long long go)
{
    return (unsigned)(go >> GCSH_PERSIST_GO_SEQ_SHIFT) & GCSH_PERSIST_GO_SEQ_MASK;
}

__device__ inline unsigned next_seq(const Persist &P)
{
    return ((unsigned)peek(&P.sh->graph_seq) + 1) & GCSH_PERSIST_GO_SEQ_MASK;
}

// Whether a go word is the last slot of sequence seq, rung; or one of its
// slots, rung.
__device__ inline bool ends_seq(unsigned long long go, unsigned seq)
{
    return (go & (GCSH_PERSIST_GO_PENDING | GCSH_PERSIST_GO_LAST)) ==
               (GCSH_PERSIST_GO_PENDING | GCSH_PERSIST_GO_LAST) &&
           go_seq(go) == seq;
}

__device__ inline bool in_seq(unsigned long long go, unsigned seq)
{
    return (go & GCSH_PERSIST_GO_PENDING) != 0 && go_seq(go) == seq;
}

// Warp 0: the slots (bit s) whose go words hold `cond`, lane l looking at
// slots l and l + 32 (go_lo, go_hi), to every lane.
__device__ inline unsigned long long slots_where(bool lo, bool hi)
{
    return (unsigned long long)__ballot_sync(kFullWarp, lo) |
           (unsigned long long)__ballot_sync(kFullWarp, hi) << 32;
}

__device__ inline uint64_t *count_word(const Persist &P)
{
    return &reinterpret_cast<gcsh_ll_header *>(P.ll.area[P.ll.me])->count;
}

// Warp 0 of block 0: one look at the doorbell from call n.  Lane l loads
// half l % 2 of entry n + l / 2 and graph slots l's and l + 32's go words, lane 0 the stop
// word and the cancel generation too, every load issued before any value
// is used.  Returns (to every lane) how many calls from n are rung, in
// order, their jobs in b; *last the graph slot that ends sequence `seq`
// when it is rung (bit s); *stop when the host asked the resident to end.
__device__ int look(const Persist &P, unsigned long long n, unsigned seq, Batch *b,
                    unsigned long long *last, bool *stop)
{
    int lane = threadIdx.x;
    const char *e = reinterpret_cast<const char *>(&P.bell->ring[(n + lane / 2) % GCSH_PERSIST_DEPTH]);
    uint4 v = load_line(e + (lane % 2) * 16);
    unsigned long long go_lo = peek(go_word(P, lane)), go_hi = peek(go_word(P, lane + 32));
    unsigned long long stop_word = lane == 0 ? peek(&P.bell->stop) : 0;
    unsigned gen = lane == 0 ? *reinterpret_cast<const volatile unsigned *>(&P.ll.end.ctl->cancel_gen)
                             : 0;
    uint4 hi;
    hi.x = __shfl_down_sync(kFullWarp, v.x, 1);
    hi.y = __shfl_down_sync(kFullWarp, v.y, 1);
    hi.z = __shfl_down_sync(kFullWarp, v.z, 1);
    hi.w = __shfl_down_sync(kFullWarp, v.w, 1);
    gcsh_persist_job job;
    int ok = 0;
    if (lane % 2 == 0) {
        uint32_t w[8] = {v.x, v.y, v.z, v.w, hi.x, hi.y, hi.z, hi.w};
        ok = gcsh_persist_unpack(w, n + lane / 2, &job);
    }
    // rung in order: entries before the first that is not
    unsigned missing = ~__ballot_sync(kFullWarp, ok) & 0x55555555u;
    int calls = missing ? (__ffs(missing) - 1) / 2 : kAhead;
    if (ok && lane / 2 < calls)
        b->job[lane / 2] = job;
    *stop = __shfl_sync(kFullWarp, stop_word, 0) != 0;
    *last = slots_where(ends_seq(go_lo, seq), ends_seq(go_hi, seq));
    if (lane == 0) {
        b->gen = gen;
        b->graph = 0;
    }
    return calls;
}

// Warp 0 of block 0, after a look saw sequence seq's last slot: the slots
// pending with that number now, read again after a fence (see the top), to
// every lane.
__device__ unsigned long long pending_again(const Persist &P, unsigned seq)
{
    int lane = threadIdx.x;
    fence_device();
    __syncwarp();
    unsigned long long go_lo = peek(go_word(P, lane)), go_hi = peek(go_word(P, lane + 32));
    return slots_where(in_seq(go_lo, seq), in_seq(go_hi, seq));
}

// Lane 0 of warp 0 of block 0: the calls of the graph slots in `pending`,
// ascending, at most kAhead, into b (a slot's job read from the bell the
// first time: the host wrote it at the capture, and a slot's call never
// changes while the resident lives); returns how many.
__device__ int take_graph_calls(const Persist &P, unsigned long long pending, Batch *b)
{
    Shared *sh = P.sh;
    int calls = 0;
    for (; pending && calls < kAhead; pending &= pending - 1) {
        int s = __ffsll(pending) - 1;
        if (!(sh->graph_known >> s & 1ull)) {
            const unsigned long long *w =
                reinterpret_cast<const unsigned long long *>(&P.bell->graph_job[s]);
            unsigned long long *to = reinterpret_cast<unsigned long long *>(&sh->graph_job[s]);
            for (size_t i = 0; i < sizeof(gcsh_persist_job) / 8; i++)
                to[i] = peek(&w[i]);
            sh->graph_known |= 1ull << s;
        }
        b->job[calls++] = sh->graph_job[s];
        b->graph |= 1ull << s;
    }
    return calls;
}

// Warp 0 of block 0: waits for calls from n to be rung (b->calls = 0 when
// the host asked the resident to end, or a block gave up).
__device__ void wait_for_calls(const Persist &P, unsigned long long n, Batch *b)
{
    unsigned ns = 32;
    int calls = 0;
    unsigned seq = next_seq(P);
    for (unsigned i = 0; !__shfl_sync(kFullWarp, threadIdx.x == 0 && peek(&P.sh->gave_up), 0); i++) {
        bool stop;
        unsigned long long last;
        calls = look(P, n, seq, b, &last, &stop);
        if (stop)
            calls = 0;
        if (stop || calls > 0)
            break;
        // ring entries first: one seen beside a last slot was rung
        // before the graph was launched (core/kpersist.h)
        if (last) {
            // A second look after a fence: the first one's loads are not
            // ordered, so it may have seen a graph's last slot and missed
            // a ring entry the stream wrote before it launched the graph;
            // taking the graph's calls first would order them differently
            // from a rank whose look saw both (core/kpersist.h).
            fence_system();
            __syncwarp();
            calls = look(P, n, seq, b, &last, &stop);
            if (stop)
                calls = 0;
            if (stop || calls > 0)
                break;
        }
        if (last) {
            // the sequence's slots: the graph wrote the others before its
            // last, so they are seen after the fence; at most kAhead, so
            // one batch takes them all, and the next look is for the next
            // sequence
            unsigned long long pending = pending_again(P, seq);
            if (threadIdx.x == 0) {
                calls = take_graph_calls(P, pending, b);
                poke(&P.sh->graph_seq, seq);
            }
            calls = __shfl_sync(kFullWarp, calls, 0);
            if (calls > 0) // (0 would end the resident: it never is, a slot seen stays pending)
                break;
        }
        pause(i, &ns);
    }
    if (threadIdx.x == 0) {
        fence_device(); // the count (and the region) after the entries
        b->first = n;
        b->count = peek(count_word(P));
        b->calls = calls;
    }
    __syncwarp();
}

// Warp 0 of each block: batch k into b.  Block 0 finds it (once every block
// finished batch k - 1) and posts it for the others; *next is block 0's
// next call.
__device__ void next_batch(const Persist &P, unsigned long long k, unsigned long long *next,
                           Batch *b)
{
    Shared *sh = P.sh;
    unsigned ns = 32;
    if (blockIdx.x == 0) {
        for (unsigned i = 0; gridDim.x > 1 && peek(&sh->finished) != k; i++)
            pause(i, &ns);
        wait_for_calls(P, *next, b);
        if (!b->graph) // a graph's calls are not the ring's
            *next = b->first + b->calls;
        if (gridDim.x > 1 && threadIdx.x == 0) {
            sh->batch = *b;
            fence_device();
            poke(&sh->posted, k + 1);
        }
        return;
    }
    if (threadIdx.x != 0)
        return;
    for (unsigned i = 0; peek(&sh->posted) <= k; i++)
        pause(i, &ns);
    fence_device();
    const volatile unsigned long long *from =
        reinterpret_cast<const volatile unsigned long long *>(&sh->batch);
    unsigned long long *to = reinterpret_cast<unsigned long long *>(b);
    for (size_t i = 0; i < sizeof *b / 8; i++)
        to[i] = from[i];
}

// Thread 0 of each block, after batch k: the last block to finish counts
// the calls in the window (even when a wait gave up, as ll.cu does: kll.h)
// and, unless a block gave up, tells the host they are done.
__device__ void finish_batch(const Persist &P, const Batch &b, unsigned long long k)
{
    Shared *sh = P.sh;
    fence_device();
    if (gridDim.x > 1) {
        if (atomicAdd(&sh->blocks_done, 1ull) + 1 != gridDim.x)
            return;
        sh->blocks_done = 0;
    }
    poke(count_word(P), b.count + b.calls);
    if (!b.graph) // a graph's calls fence once, below
        fence_system();
    if (!peek(&sh->gave_up)) {
        if (!b.graph) {
            poke(&P.bell->done, b.first + b.calls);
        } else { // the count before the graph goes on: the host may read it then
            sh->graph_done += b.calls;
            poke(&P.bell->graph_done, sh->graph_done);
            fence_system();
            // the highest slot last, after a fence: the stream waits on it,
            // and the next sequence may write a lower one once it is clear
            int last = 63 - __clzll(b.graph);
            for (unsigned long long g = b.graph & ~(1ull << last); g; g &= g - 1)
                poke(go_word(P, __ffsll(g) - 1), GCSH_PERSIST_GO_ALIVE);
            fence_system();
            poke(go_word(P, last), GCSH_PERSIST_GO_ALIVE);
        }
    }
    fence_device(); // what this batch cleared, before block 0 looks again
    poke(&sh->finished, k + 1);
}

// The last block out marks the end for the host: done keeps the calls
// completed (published after the last whole batch).
__device__ void end_resident(const Persist &P)
{
    if (threadIdx.x != 0)
        return;
    fence_device();
    if (atomicAdd(&P.sh->blocks_out, 1ull) + 1 != gridDim.x)
        return;
    unsigned long long why = peek(&P.sh->gave_up);
    poke(&P.bell->why, why ? why : (unsigned long long)GCSH_PERSIST_STOPPED);
    fence_system();
    poke(&P.bell->done, peek(&P.bell->done) | GCSH_PERSIST_ENDED);
    // not alive: every graph waiting for a slot goes on, and so do later ones
    for (int s = 0; s < GCSH_PERSIST_GRAPH_SLOTS; s++)
        poke(go_word(P, s), 0);
}

// The LL view of job j, its waits ending at generation gen.
__device__ LL call_of(const Persist &P, const gcsh_persist_job &j, unsigned gen)
{
    LL a = P.ll;
    a.src = P.mine + j.offset * P.esize;
    a.dst = P.mine + j.offset * P.esize;
    a.bytes = j.n * P.esize;
    a.op = j.op;
    a.end.gen = gen;
    return a;
}

__device__ void note_give_up(const Persist &P)
{
    unsigned long long why = P.ll.end.ctl->why == GCSH_WAIT_TIMED_OUT ? GCSH_PERSIST_TIMED_OUT
                                                                      : GCSH_PERSIST_CANCELLED;
    atomicMax(&P.sh->gave_up, why);
}

template <class T> __global__ void __launch_bounds__(kLLThreads, kResidentMinBlocks) persist_kernel(Persist P)
{
    __shared__ Batch b;
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned long long next = 0; // block 0's warp 0: the next call
    for (unsigned long long k = 0;; k++) {
        __syncthreads(); // every thread is done with the last batch
        if (threadIdx.x < 32)
            next_batch(P, k, &next, &b);
        __syncthreads();
        if (b.calls == 0)
            break;
        bool gave_up = false;
        for (int j = 0; j < b.calls; j++) {
            // a team of one has nothing to trade, and a call is in place
            if (P.ll.k > 1)
                ll_call<T>(call_of(P, b.job[j], b.gen), b.count + j, tid, stride, &gave_up);
            if (__syncthreads_or(gave_up)) {
                if (threadIdx.x == 0)
                    note_give_up(P);
                break;
            }
        }
        if (threadIdx.x == 0)
            finish_batch(P, b, k);
    }
    end_resident(P);
}

struct PersistKernel {
    void (*run)(Persist);
    size_t esize;
};

template <class T> constexpr PersistKernel persist_of()
{
    return {persist_kernel<T>, sizeof(typename T::S)};
}

PersistKernel persist_kernel_for(gcsh_dtype dt)
{
    switch (dt) {
    case GCSH_F32: return persist_of<F32>();
    case GCSH_F16: return persist_of<F16>();
    case GCSH_BF16: return persist_of<BF16>();
    case GCSH_I32: return persist_of<Int32<true>>();
    case GCSH_U32: return persist_of<Int32<false>>();
    default: return {nullptr, 0};
    }
}

// A graph's rings (core/kpersist.h): the pending bits of a sequence's
// slots, by one thread, the last slot's (marked last) after a fence, so
// that a resident that sees the last sees every slot of the sequence after
// its own fence, and runs them as one batch.  One kernel node a sequence
// instead of a memory-operation node a call: each such node cost the graph
// about as much as the call itself.
__global__ void go_kernel(unsigned long long *go, unsigned long long *seqs,
                          unsigned long long slots)
{
    // the low half of each word: the high half is the alive bit (little endian)
    auto low = [go](unsigned s) { return reinterpret_cast<volatile unsigned *>(go + s); };
    int last = 63 - __clzll(slots);
    // numbered in stream order: this kernel is the only writer, one at a time
    unsigned long long n = *seqs + 1;
    *seqs = n;
    unsigned tag = ((unsigned)n & GCSH_PERSIST_GO_SEQ_MASK) << GCSH_PERSIST_GO_SEQ_SHIFT;
    __threadfence_system(); // after what the stream did before (its last writes)
    for (unsigned long long g = slots & ~(1ull << last); g; g &= g - 1)
        *low(__ffsll(g) - 1) = tag | (unsigned)GCSH_PERSIST_GO_PENDING;
    __threadfence();
    *low(last) = tag | (unsigned)(GCSH_PERSIST_GO_PENDING | GCSH_PERSIST_GO_LAST);
}

} // namespace gcsh_k

using namespace gcsh_k;

extern "C" cudaError_t gcsh_k_persist_launch(const gcsh_persist_args *a, gcsh_dtype dt,
                                             const gcsh_window_desc *d, gcsh_persist_bell *bell,
                                             void *sync, const gcsh_kwait *w, cudaStream_t stream)
{
    PersistKernel kernel = persist_kernel_for(dt);
    if (!kernel.run || d->team_size < 1 || d->team_size > a->slots ||
        a->slots > GCSH_KERN_MAX_TEAM || d->team_rank < 0 || d->team_rank >= d->team_size ||
        a->sms < 1 || a->sms > GCSH_PERSIST_MAX_SMS || !w->ctl || !bell || !sync)
        return cudaErrorInvalidValue;
    Persist P = {};
    for (int p = 0; p < d->team_size; p++)
        P.ll.area[p] = (char *)d->peer[p] + a->ll_off;
    P.ll.rank_of = gcsh_window_team_dev(d);
    P.ll.window_bytes = a->window_bytes;
    P.ll.k = d->team_size;
    P.ll.me = d->team_rank;
    P.ll.slots = a->slots;
    P.ll.end = {w->ctl, w->gen, w->bound_ns};
    P.mine = (char *)d->peer[d->team_rank];
    P.esize = kernel.esize;
    P.bell = bell;
    P.sh = static_cast<Shared *>(sync);
    void *args[] = {&P};
    (void)cudaGetLastError(); // report this launch only
    return cudaLaunchCooperativeKernel((const void *)kernel.run, dim3((unsigned)a->sms),
                                       dim3(kLLThreads), args, 0, stream);
}

extern "C" cudaError_t gcsh_k_persist_go(void *sync, unsigned long long slots, cudaStream_t stream)
{
    if (!sync || !slots)
        return cudaErrorInvalidValue;
    (void)cudaGetLastError(); // report this launch only
    go_kernel<<<1, 1, 0, stream>>>(
        reinterpret_cast<unsigned long long *>(static_cast<char *>(sync) + GCSH_PERSIST_GO_OFFSET),
        reinterpret_cast<unsigned long long *>(static_cast<char *>(sync) +
                                               GCSH_PERSIST_SEQS_OFFSET),
        slots);
    return cudaGetLastError();
}
