/* The launcher of `gcsh -n N` and rank 0's side of it.  See launch.h. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shell/launch.h"

/* "pid:token:host": the launcher's pid, a random token that rank 0 sends
 * back (so no other process can pose as rank 0), and the launcher's host
 * (a pid means nothing elsewhere). */
#define LAUNCHER_ENV "GCSH_LAUNCHER"

static int set_launcher_env(int token)
{
    char host[256] = {0}, value[320];
    gethostname(host, sizeof host - 1);
    snprintf(value, sizeof value, "%d:%d:%s", (int)getpid(), token, host);
    return setenv(LAUNCHER_ENV, value, 1);
}

static int random_token(void)
{
    unsigned v = 0;
    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
        v = (unsigned)getpid() * 2654435761u ^ (unsigned)time(NULL);
    return (int)(v & 0x7fffffff);
}

/* The child: mpirun, in a process group of its own; if the launcher dies,
 * mpirun gets SIGTERM and ends the job instead of running on unseen. */
static _Noreturn void exec_child(char *const argv[], const sigset_t *mask)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    sigprocmask(SIG_SETMASK, mask, NULL);
    execvp(argv[0], argv);
    fprintf(stderr, "gcsh: cannot start %s: %s (is Open MPI installed?)\n", argv[0],
            strerror(errno));
    _exit(127);
}

static int status_of(int wstatus)
{
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus))
        return 128 + WTERMSIG(wstatus);
    return 1;
}

int gcsh_launch(char *const argv[])
{
    static const int handled_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGUSR1, SIGUSR2};
    sigset_t handled, old;
    sigemptyset(&handled);
    for (size_t i = 0; i < sizeof handled_signals / sizeof *handled_signals; i++)
        sigaddset(&handled, handled_signals[i]);
    sigprocmask(SIG_BLOCK, &handled, &old); /* from now on they queue for sigwaitinfo */
    int token = random_token();
    if (set_launcher_env(token) != 0)
        perror("gcsh: setenv");
    pid_t child = fork();
    if (child < 0) {
        perror("gcsh: fork");
        return 1;
    }
    if (child == 0)
        exec_child(argv, &old);
    setpgid(child, child); /* also here: whichever side runs first */

    pid_t rank0 = 0; /* known after rank 0's hello */
    int declared = -1;
    /* `timeout -s INT` signals its child, then the child's process group:
     * the same SIGINT twice.  One interrupt per 0.2 s is what gets through. */
    struct timespec last_int = {0, 0};
    for (;;) {
        siginfo_t si;
        int sig = sigwaitinfo(&handled, &si);
        if (sig < 0)
            continue; /* EINTR: a signal outside the set */
        if (sig == SIGCHLD) {
            int wstatus;
            pid_t p = waitpid(child, &wstatus, WNOHANG);
            if (p == child)
                return declared >= 0 ? declared : status_of(wstatus);
        } else if (sig == SIGUSR1) {
            if (si.si_code == SI_QUEUE && si.si_value.sival_int == token)
                rank0 = si.si_pid;
        } else if (sig == SIGUSR2) {
            if (rank0 && si.si_pid == rank0 && si.si_code == SI_QUEUE)
                declared = si.si_value.sival_int & 0xff;
        } else {
            /* SIGINT stays an interrupt; SIGTERM and SIGHUP stop the session */
            int fwd = sig == SIGINT ? SIGINT : SIGTERM;
            if (sig == SIGINT) {
                struct timespec now;
                clock_gettime(CLOCK_MONOTONIC, &now);
                double since = (double)(now.tv_sec - last_int.tv_sec) +
                               1e-9 * (double)(now.tv_nsec - last_int.tv_nsec);
                if (last_int.tv_sec && since < 0.2)
                    continue;
                last_int = now;
            }
            if (!rank0 || kill(rank0, fwd) != 0)
                kill(child, fwd); /* mpirun: it ends the job */
        }
    }
}

/* ---- rank 0 ----------------------------------------------------------------- */

int gcsh_launcher_hello(void)
{
    const char *v = getenv(LAUNCHER_ENV);
    if (!v)
        return 0;
    int pid = 0, token = 0, at = 0;
    char host[256] = {0};
    if (sscanf(v, "%d:%d:%n", &pid, &token, &at) != 2 || pid <= 0)
        return 0;
    gethostname(host, sizeof host - 1);
    int here = strcmp(v + at, host) == 0;
    /* a process that rank 0 starts (os.execute("gcsh ...")) is no rank 0 of ours */
    unsetenv(LAUNCHER_ENV);
    if (!here)
        return 0;
    union sigval sv = {.sival_int = token};
    return sigqueue(pid, SIGUSR1, sv) == 0 ? pid : 0;
}

void gcsh_launcher_status(int launcher, int status)
{
    if (launcher <= 0)
        return;
    union sigval sv = {.sival_int = status};
    sigqueue(launcher, SIGUSR2, sv);
}
