/* Every rank's worker: runs the chunks rank 0 sends over the command channel
 * (link.h) in the rank's Lua state, with output captured (out.h); its
 * watcher thread serves the control channel (interrupts, whereabouts). */
#ifndef GCSH_WORKER_H
#define GCSH_WORKER_H

#include "core/gcsh.h"
#include "wire/out.h"

typedef struct gcsh_worker gcsh_worker;

/* Starts the watcher thread and installs output capture into ctx->L. */
gcsh_worker *gcsh_worker_start(gcsh_ctx *ctx, int cmd_fd, int ctl_fd);
/* --flight FILE and --trace FILE (or NULL): where rank 0's heir writes if
 * rank 0 dies (heir.h).  Before any chunk runs. */
void gcsh_worker_evidence(gcsh_worker *w, const char *flight, const char *trace);
/* Serves chunks until rank 0 says QUIT (returns its exit code) or is gone (1). */
int gcsh_worker_loop(gcsh_worker *w);
void gcsh_worker_stop(gcsh_worker *w);

#endif
