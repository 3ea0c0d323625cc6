/* Self-pipe signal delivery.  See sigint.h.
 *
 * The write end (with the count of SIGCONTs, the time of the last SIGTERM
 * and what to do at SIGTERM's deadline) is the one piece of file-scope
 * state in gcsh: a signal handler has no other way to reach the process's
 * state. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "shell/sigint.h"

static int sig_write_fd = -1;
/* SIGCONTs so far: gcsh_sig_stop_and_wait waits for the next one. */
static volatile sig_atomic_t continued;
/* When the last SIGTERM or SIGHUP came (CLOCK_MONOTONIC, ms; the handler
 * runs with the others blocked), and whether its deadline is set. */
static long long last_term_ms;
static volatile sig_atomic_t deadline_set;
static void (*at_deadline)(int arg, int status);
static int at_deadline_arg;

static long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t); /* async-signal-safe */
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* SIGTERM's deadline (SIGALRM): the session did not end in time, so the
 * process does, after saying so where it can without blocking (stderr may
 * be the pipe nobody reads that holds the session up). */
static void on_deadline(int sig)
{
    (void)sig;
#define STR(x) #x
#define SECONDS(x) STR(x)
    static const char msg[] = "\ngcsh: SIGTERM: the session did not end within "
                              SECONDS(GCSH_TERM_DEADLINE_S) " s "
                              "(rank 0 is stuck: a finalizer, a blocked read or write); "
                              "it ends now, status 143\n";
    struct pollfd p = {.fd = 2, .events = POLLOUT};
    if (poll(&p, 1, 0) == 1 && (p.revents & POLLOUT) && write(2, msg, sizeof msg - 1) < 0) {
        /* nowhere to say it */
    }
    if (at_deadline)
        at_deadline(at_deadline_arg, GCSH_EXIT_TERM);
    _exit(GCSH_EXIT_TERM);
}

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
    if (sig == SIGTERM || sig == SIGHUP) {
        /* `timeout` signals its child, then the child's process group: the
         * same SIGTERM twice is one request */
        long long t = now_ms();
        int again = last_term_ms && t - last_term_ms < GCSH_SAME_SIGNAL_MS;
        last_term_ms = t;
        if (again) {
            errno = saved;
            return;
        }
        if (!deadline_set) {
            deadline_set = 1;
            alarm(GCSH_TERM_DEADLINE_S);
        }
    }
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
    if (sig == SIGALRM) {
        sa.sa_handler = on_deadline;
    } else {
        sa.sa_sigaction = on_signal;
        sa.sa_flags = SA_SIGINFO;
    }
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGTERM); /* one handler at a time: they share last_term_ms */
    sigaddset(&sa.sa_mask, SIGHUP);
    sa.sa_flags |= SA_RESTART;
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
    catch_signal(SIGALRM);
    return p[0];
}

void gcsh_sig_at_deadline(void (*fn)(int arg, int status), int arg)
{
    at_deadline_arg = arg;
    at_deadline = fn;
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
