/* A job's private MPS control daemon on one machine (share.h says when one
 * is started), and the folder where it lives: /tmp/gcsh-mps-UID-KEY, mode
 * 0700, holding the daemon's pipe/ and log/ directories and the verdict
 * the machine's other ranks read.
 *
 * The machine's first rank opens the folder and starts a guard process
 * first: a shell in a session of its own (so that neither Ctrl-C nor
 * mpirun's kill reaches it) whose stdin is a pipe that only that rank holds
 * open.  When the rank ends, in whatever way (normal exit, error, SIGKILL),
 * the pipe closes and the guard quits the daemon (if one was started),
 * waits for it to go (killing it after 30 s), and removes the folder.  The
 * daemon and the guard get a minimal environment: nothing of the rank's
 * (CUDA_VISIBLE_DEVICES given to the daemon would renumber the devices its
 * clients name). */
#ifndef GCSH_MPS_H
#define GCSH_MPS_H

#include <stddef.h>

/* In a job's folder kept with GCSH_MPS_KEEP: the guard's mark that the
 * daemon has quit (gcsh -n waits for it, as for the folder to go). */
#define MPS_GUARD_DONE "guard-done"

/* Whether an MPS control daemon answers in pipe directory dir (a stale
 * socket of a daemon that quit refuses the connection). */
int gcsh_mps_reachable(const char *dir);

/* The control program's full path on PATH; -1 when it is not there. */
int gcsh_mps_find_control(char *out, size_t len);

/* Whether root is a folder of this user that no one else may enter: the
 * only kind whose pipe directory a rank will use. */
int gcsh_mps_ours(const char *root);

/* The first rank: makes root (a leftover of ours under the same name is
 * removed first; anyone else's is refused) and starts its guard.  *guard_fd
 * is the pipe's write end: closing it (or ending) quits the daemon and
 * removes root.  0, or -1 with the reason in why and nothing left. */
int gcsh_mps_open(const char *root, const char *control, int *guard_fd, char *why, size_t len);

/* The first rank: starts the daemon in root (`control -d`) and waits 5 s
 * at most for it to come up.  0, or -1 with the reason in why. */
int gcsh_mps_start(const char *root, const char *control, char *why, size_t len);

/* The first rank: the verdict, whole (a rename), with this process's pid
 * (a verdict whose writer is gone is an earlier job's): the pipe directory
 * every rank points CUDA_MPS_PIPE_DIRECTORY at, or NULL for none. */
void gcsh_mps_publish(const char *root, const char *pipe_dir);

/* The machine's other ranks: the first rank's verdict (20 s at most), from
 * a folder of ours, written by a first rank that lives.  0 with the pipe
 * directory to use in pipe_dir ("" for none), or -1 with the reason in why. */
int gcsh_mps_await(const char *root, char *pipe_dir, size_t plen, char *why, size_t wlen);

#endif
