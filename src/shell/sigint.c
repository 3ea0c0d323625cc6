/* Self-pipe signal delivery.  See sigint.h.
 *
 * The write end (and the count of SIGCONTs) is the one piece of file-scope
 * state in gcsh: a signal handler has no other way to reach the process's
 * state. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "shell/sigint.h"

static int sig_write_fd = -1;
/* SIGCONTs so far: gcsh_sig_stop_and_wait waits for the next one. */
static volatile sig_atomic_t continued;

/* A SIGINT the terminal sent (Ctrl-C), or gcsh -n's launcher on its behalf. */
static int typed(const siginfo_t *si)
{
    return si && (si->si_code == SI_KERNEL ||
                  (si->si_code == SI_QUEUE && si->si_value.sival_int == GCSH_SIGINT_KEYBOARD));
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    int saved = errno;
    if (sig == SIGCONT)
        continued = continued + 1;
    char c = sig == SIGINT && typed(si) ? GCSH_SIG_KEY
             : sig == SIGINT     ? GCSH_SIG_INT
             : sig == SIGWINCH ? GCSH_SIG_WINCH
             : sig == SIGTSTP  ? GCSH_SIG_TSTP
             : sig == SIGCONT  ? GCSH_SIG_CONT
                               : GCSH_SIG_TERM;
    if (write(sig_write_fd, &c, 1) < 0) {
        /* pipe full: a signal is already pending, nothing is lost */
    }
    errno = saved;
}

static void catch_signal(int sig)
{
    struct sigaction sa = {0};
    sa.sa_sigaction = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    sigaction(sig, &sa, NULL);
}

int gcsh_sig_install(void)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0)
        return -1;
    sig_write_fd = p[1];
    catch_signal(SIGINT);
    catch_signal(SIGWINCH);
    catch_signal(SIGTERM);
    catch_signal(SIGHUP);
    return p[0];
}

void gcsh_sig_catch_job_control(void)
{
    catch_signal(SIGTSTP);
    catch_signal(SIGCONT);
}

int gcsh_sig_drain(int fd)
{
    int mask = 0;
    char buf[64];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++)
            mask |= buf[i] == GCSH_SIG_KEY     ? GCSH_SIGMASK_INT | GCSH_SIGMASK_KEYBOARD
                    : buf[i] == GCSH_SIG_INT   ? GCSH_SIGMASK_INT
                    : buf[i] == GCSH_SIG_WINCH ? GCSH_SIGMASK_WINCH
                    : buf[i] == GCSH_SIG_TSTP  ? GCSH_SIGMASK_TSTP
                    : buf[i] == GCSH_SIG_CONT  ? GCSH_SIGMASK_CONT
                                               : GCSH_SIGMASK_TERM;
    return mask;
}

void gcsh_sig_stop_and_wait(void (*stop)(void *arg), void *arg)
{
    /* The handler may run on any thread that does not block SIGCONT (MPI
     * starts threads of its own), so this thread looks at the count rather
     * than waiting for the signal itself; while stopped it does not run. */
    sig_atomic_t before = continued;
    stop(arg);
    while (continued == before) {
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
}
