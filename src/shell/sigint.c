/* Self-pipe signal delivery.  See sigint.h.
 *
 * The write end is the one piece of file-scope state in gcsh: a signal
 * handler has no other way to reach the process's state. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "shell/sigint.h"

static int sig_write_fd = -1;

static void on_signal(int sig)
{
    int saved = errno;
    char c = sig == SIGINT ? GCSH_SIG_INT : sig == SIGWINCH ? GCSH_SIG_WINCH : GCSH_SIG_TERM;
    if (write(sig_write_fd, &c, 1) < 0) {
        /* pipe full: a signal is already pending, nothing is lost */
    }
    errno = saved;
}

int gcsh_sig_install(void)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0)
        return -1;
    sig_write_fd = p[1];
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGWINCH, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    return p[0];
}

int gcsh_sig_drain(int fd)
{
    int mask = 0;
    char buf[64];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++)
            mask |= buf[i] == GCSH_SIG_INT     ? GCSH_SIGMASK_INT
                    : buf[i] == GCSH_SIG_WINCH ? GCSH_SIGMASK_WINCH
                                               : GCSH_SIGMASK_TERM;
    return mask;
}
