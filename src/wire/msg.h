/* Framed messages on the control plane's stream sockets.
 *
 * Every message is a fixed header {type, seq, len} followed by len bytes.
 * Sends are whole-message (callers serialise writers on one socket). */
#ifndef GCSH_MSG_H
#define GCSH_MSG_H

#include <stddef.h>
#include <stdint.h>

enum gcsh_msg_type {
    MSG_HELLO = 1, /* worker -> coordinator on connect: token, rank, channel */
    MSG_CHUNK,     /* coordinator -> worker: u32 flags, u32 namelen, name, source */
    MSG_OUT,       /* worker -> coordinator: captured program output (stdout) */
    MSG_DONE,      /* worker -> coordinator: u32 status, then captured stdout text */
    MSG_INTERRUPT, /* coordinator -> watcher: interrupt chunk `seq` */
    MSG_QUIT,      /* coordinator -> worker: leave the loop */
    /* Checks and whereabouts (collcheck.h) */
    MSG_FP,        /* worker -> coordinator: a fingerprint; the worker waits for VERDICT */
    MSG_VERDICT,   /* coordinator -> worker: u32 serial, u32 ok, then the error text */
    MSG_WHERE,     /* coordinator -> watcher (ctl): where are you?  worker -> coordinator
                    * (cmd): the answer: u32 1 when it waits for other ranks, then text */
    MSG_ABORTED,   /* worker -> coordinator: u64 ids of communicators it aborted */
    MSG_ABORT_COMMS, /* coordinator -> worker, between chunks: abort these u64 ids
                      * (seq = 1: abort every communicator) */
    MSG_FATAL,     /* worker -> coordinator: an unrecoverable fault, as text */
    MSG_DIE,       /* coordinator -> watcher (ctl): exit now with status seq */
    /* Traces (trace.h) */
    MSG_TRACE_ON,  /* coordinator -> worker, between chunks: start tracing */
    MSG_TRACE_ACK, /* worker -> coordinator: u32 ok, then why not */
    MSG_TRACE_OFF, /* coordinator -> worker, between chunks: stop; answer TRACE_DATA */
    MSG_TRACE_FLUSH, /* coordinator -> watcher (ctl): answer TRACE_DATA with a copy */
    MSG_TRACE_DATA, /* worker or watcher -> coordinator: a gcsh_trace_blob (empty: not tracing) */
    MSG_PROGRESS,  /* worker -> coordinator: a gcsh_progress_msg (gcsh.progress) */
    MSG_ABORT_NOW, /* coordinator -> watcher (ctl), during a command: rank `seq`
                    * aborted these u64 communicator ids (collcheck.h) */
    MSG_ERR,       /* worker -> coordinator: captured errors (stderr) */
    MSG_TIMEOUT,   /* worker -> coordinator: a double, gcsh.timeout(s): as .timeout s */
    MSG_FLIGHT_FLUSH, /* coordinator -> watcher (ctl): answer FLIGHT_DATA (flight.h) */
    MSG_FLIGHT_DATA,  /* watcher -> coordinator: the rank's flight recorder as a trace blob */
    MSG_CRASH,     /* watcher's signal handler -> coordinator (ctl), seq = the signal that
                    * is killing the rank (worker.c); no payload */
    MSG_TAPE,      /* worker -> coordinator: the doubles gcsh.wtime returned in a chunk
                    * run with CHUNK_TAPE; coordinator -> worker, between chunks: the
                    * values it returns in the next chunk (a replay, record.h) */
    MSG_DEADLINE,  /* worker -> coordinator: a double, gcsh.deadline(s): as --deadline s */
    MSG_FAILURE,   /* worker -> coordinator: the chunk's error with its traceback, sent
                    * instead of to stderr in a chunk run with CHUNK_FIRST_FAILURE */
    MSG_ABANDONED, /* worker -> coordinator, .check off: a gcsh_abandon_msg, this rank will
                    * not join that operation in this command (collcheck.h) */
    MSG_ABANDON_NOW, /* coordinator -> watcher (ctl): a gcsh_abandon_msg of rank `seq` */
    MSG_COUNTS,    /* worker -> coordinator, before DONE: gcsh_comm_count[] (collcheck.h) */
    MSG_UNCHECKED, /* worker -> coordinator, the first time in a command that it enters a
                    * checked operation unchecked (gcsh.check(false), .check off): its
                    * gcsh_fingerprint; watcher -> coordinator, the answer to ASK_OP: the
                    * same, or nothing when it is in no unchecked operation
                    * (collcheck_coord.h) */
    MSG_ASK_OP,    /* coordinator -> watcher (ctl): in which unchecked operation are you? */
};

/* gcsh.progress(done, total, label) as it travels; total 0: cleared. */
typedef struct gcsh_progress_msg {
    uint64_t done, total;
    char label[48];
} gcsh_progress_msg;

/* INTERRUPT payload: absent, or one byte INTERRUPT_ABORT (.abort) */
#define INTERRUPT_ABORT 1

/* CHUNK flags */
#define CHUNK_PRINT_RESULTS 1u /* print returned values (interactive lines) */
#define CHUNK_SCRIPT 2u        /* pass the script's arguments as ... */
#define CHUNK_CHECK 4u         /* .check on: collectives exchange fingerprints */
#define CHUNK_PROGRESS 8u      /* rank 0 shows progress lines: gcsh.progress reports */
#define CHUNK_TAPE 16u         /* a recorded chunk: send what gcsh.wtime returned (MSG_TAPE) */
#define CHUNK_SHORT_ERRORS 32u /* an error is its message alone unless the user's own
                                  functions were on the stack (the prompt, .traceback off) */
#define CHUNK_FIRST_FAILURE 64u /* --first-failure: the error goes as MSG_FAILURE (64: main
                                   has 32 for CHUNK_SHORT_ERRORS) */

/* DONE status: one of these in the low byte; for CHUNK_EXIT (the chunk
 * called os.exit) the exit status in the next byte. */
enum gcsh_chunk_status { CHUNK_OK = 0, CHUNK_ERROR = 1, CHUNK_INTERRUPTED = 2, CHUNK_EXIT = 3 };
#define CHUNK_STATUS(word) ((word) & 0xffu)
#define CHUNK_EXIT_WORD(status) (CHUNK_EXIT | (((uint32_t)(status) & 0xffu) << 8))
#define CHUNK_EXIT_STATUS(word) ((int)(((word) >> 8) & 0xffu))
/* A flag of the DONE status word: the chunk read a clock, an address or the
 * machine's facts, so its output may differ between runs (replays do not
 * compare it). */
#define CHUNK_VARIES 0x10000u
/* A flag of the DONE status word with CHUNK_ERROR: the chunk could not be
 * tested here (a Lua file it loads cannot be read or compiled, a required
 * module is missing: rank/loads.h), not that it found a bug: git bisect's
 * skip, status 125. */
#define CHUNK_CANNOT_TEST 0x20000u
/* Likewise: the error was a usage error (gcsh.usage_error: a script that
 * misuses gcsh's own API), status 128: bisect stops. */
#define CHUNK_USAGE 0x40000u
/* Likewise: the error is the chunk's failed collective check (its text,
 * raised or re-raised): rank 0 knows whether the check failed only because
 * other ranks called os.exit (coord.c). */
#define CHUNK_CHECK_FAILED 0x80000u

typedef struct gcsh_msg_header {
    uint32_t type;
    uint32_t seq;
    uint64_t len;
} gcsh_msg_header;

/* A received message; the payload buffer is reused across receives. */
typedef struct gcsh_msg {
    gcsh_msg_header h;
    char *data;
    size_t cap;
} gcsh_msg;

/* Sends header + up to two payload parts in one writev loop.  Returns 0, or
 * -1 when the peer is gone. */
int gcsh_msg_send(int fd, uint32_t type, uint32_t seq, const void *a, size_t alen,
                  const void *b, size_t blen);
/* Blocks for one whole message.  Returns 0, or -1 on EOF / error. */
int gcsh_msg_recv(int fd, gcsh_msg *m);

/* Waits until fd is readable: first spins (yielding the CPU) for up to
 * spin_us, then sleeps in poll.  Lines arrive back to back in a pipe; a
 * thread that went to sleep between them would pay a wake-up per line, while
 * an idle shell stops spinning after spin_us and costs nothing.  Returns
 * 1 readable, 0 timeout (timeout_ms >= 0), -1 error. */
int gcsh_wait_readable(int fd, int spin_us, int timeout_ms);

/* Spin budget for the waits above; GCSH_SPIN_US overrides (0 disables). */
int gcsh_spin_us(void);
void gcsh_msg_free(gcsh_msg *m);

#endif
