/* The launcher of `gcsh -n N` and rank 0's side of it.  See launch.h. */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
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

/* ---- the launcher's stdout and stderr, handed to rank 0 -------------------
 *
 * Under mpirun, rank 0's stdout and stderr are two pipes that mpirun reads
 * and copies to its own: the order between the two is lost (an error shows
 * before the output printed ahead of it), and every byte takes a detour.  So
 * the launcher hands its own stdout and stderr to rank 0 over a Unix socket
 * (SCM_RIGHTS), as a parent hands them to its child: rank 0 writes where the
 * user's command line pointed them, in order.  The socket is abstract, named
 * after the launcher's pid and the token, and each side checks the other's
 * pid (SO_PEERCRED).  Where it cannot happen (rank 0 on another host),
 * rank 0 keeps mpirun's pipes. */

#define STREAMS_WAIT_MS 5000

static socklen_t streams_address(struct sockaddr_un *a, int pid, int token)
{
    *a = (struct sockaddr_un){.sun_family = AF_UNIX};
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "gcsh-launcher.%d.%d", pid, token);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static int peer_pid(int fd)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 ? (int)cred.pid : -1;
}

/* Launcher: the listening socket, or -1 (then rank 0 keeps mpirun's pipes). */
static int streams_listen(int token)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a;
    socklen_t len = streams_address(&a, (int)getpid(), token);
    if (fd >= 0 && (bind(fd, (struct sockaddr *)&a, len) != 0 || listen(fd, 4) != 0)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Launcher: sends fds 1 and 2 to rank 0 (pid) when it connects. */
static void streams_send(int lfd, pid_t rank0)
{
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        long left = STREAMS_WAIT_MS - ((now.tv_sec - start.tv_sec) * 1000 +
                                       (now.tv_nsec - start.tv_nsec) / 1000000);
        struct pollfd p = {.fd = lfd, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            return;
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        if (peer_pid(c) == rank0) {
            int fds[2] = {1, 2};
            char cbuf[CMSG_SPACE(sizeof fds)] = {0}, byte = 'S';
            struct iovec iov = {&byte, 1};
            struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                               .msg_controllen = sizeof cbuf};
            struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
            cm->cmsg_level = SOL_SOCKET;
            cm->cmsg_type = SCM_RIGHTS;
            cm->cmsg_len = CMSG_LEN(sizeof fds);
            memcpy(CMSG_DATA(cm), fds, sizeof fds);
            sendmsg(c, &m, MSG_NOSIGNAL);
            close(c);
            return;
        }
        close(c); /* not our rank 0 */
    }
}

/* Rank 0: the launcher's stdout and stderr into fds[0], fds[1]; -1 when
 * they cannot be had. */
static int streams_take(int pid, int token, int fds[2])
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a;
    socklen_t len = streams_address(&a, pid, token);
    struct timeval tv = {STREAMS_WAIT_MS / 1000, 0};
    int got = -1;
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, len) == 0 && peer_pid(fd) == pid &&
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0) {
        char cbuf[CMSG_SPACE(2 * sizeof(int))], byte;
        struct iovec iov = {&byte, 1};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                           .msg_controllen = sizeof cbuf};
        struct cmsghdr *cm;
        if (recvmsg(fd, &m, MSG_CMSG_CLOEXEC) == 1 && (cm = CMSG_FIRSTHDR(&m)) &&
            cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(2 * sizeof(int))) {
            memcpy(fds, CMSG_DATA(cm), 2 * sizeof(int));
            got = 0;
        }
    }
    if (fd >= 0)
        close(fd);
    return got;
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

/* What the launcher knows while mpirun runs. */
typedef struct launcher {
    pid_t child;   /* mpirun, leader of its own process group */
    pid_t rank0;   /* known after rank 0's hello */
    int token;
    int streams;   /* listening socket for rank 0's hello, or -1 */
    int declared;  /* the status rank 0 declared, or -1 */
    struct timespec last_int;
} launcher;

/* SIGUSR1 from rank 0 with the token: its hello; it gets our streams. */
static void on_hello(launcher *l, const siginfo_t *si)
{
    if (si->si_code != SI_QUEUE || si->si_value.sival_int != l->token || l->rank0)
        return;
    l->rank0 = si->si_pid;
    if (l->streams >= 0) {
        streams_send(l->streams, l->rank0);
        close(l->streams);
        l->streams = -1;
    }
}

/* SIGINT stays an interrupt; SIGTERM and SIGHUP stop the session.  They go
 * to rank 0, or to mpirun before the hello (it ends the job). */
static void on_stop_signal(launcher *l, int sig)
{
    int fwd = sig == SIGINT ? SIGINT : SIGTERM;
    if (sig == SIGINT) {
        /* `timeout -s INT` signals its child, then the child's process group:
         * the same SIGINT twice.  One interrupt per 0.2 s is what gets through. */
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double since = (double)(now.tv_sec - l->last_int.tv_sec) +
                       1e-9 * (double)(now.tv_nsec - l->last_int.tv_nsec);
        if (l->last_int.tv_sec && since < 0.2)
            return;
        l->last_int = now;
    }
    if (!l->rank0 || kill(l->rank0, fwd) != 0)
        kill(l->child, fwd);
}

/* Sends sig to every process whose parent is `parent`: the ranks mpirun
 * started on this host. */
static void signal_children(pid_t parent, int sig)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[300], stat[512];
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(stat, 1, sizeof stat - 1, f) : 0;
        if (f)
            fclose(f);
        stat[n] = '\0';
        const char *after = strrchr(stat, ')'); /* "pid (comm) state ppid ..." */
        char state;
        int ppid;
        if (after && sscanf(after + 1, " %c %d", &state, &ppid) == 2 && ppid == parent)
            kill((pid_t)atoi(e->d_name), sig);
    }
    if (d)
        closedir(d);
}

/* Job control.  Ctrl-Z reaches rank 0 (it owns the terminal), which gives the
 * terminal back and sends us SIGTSTP; a SIGTSTP from anyone else comes here
 * directly.  The ranks on this host (mpirun's children, rank 0 among them)
 * are stopped, then the launcher stops itself: that is what the user's shell
 * waits for, so it reports the job stopped and takes the terminal.  `fg` or
 * `bg` continues the launcher, which continues them: rank 0 takes the
 * terminal again if the job is in the foreground (term.h).  Only the
 * launcher signals them, so each stop has one continue.  mpirun itself waits
 * on; ranks on other hosts finish what they run and wait for the others. */
static void on_job_control(launcher *l, int sig)
{
    int to_ranks = sig == SIGTSTP ? SIGSTOP : SIGCONT;
    signal_children(l->child, to_ranks);
    if (l->rank0)
        kill(l->rank0, to_ranks);
    if (sig == SIGTSTP)
        kill(getpid(), SIGSTOP);
}

int gcsh_launch(char *const argv[])
{
    static const int handled_signals[] = {SIGINT,  SIGTERM, SIGHUP,  SIGCHLD,
                                          SIGUSR1, SIGUSR2, SIGTSTP, SIGCONT};
    sigset_t handled, old;
    sigemptyset(&handled);
    for (size_t i = 0; i < sizeof handled_signals / sizeof *handled_signals; i++)
        sigaddset(&handled, handled_signals[i]);
    sigprocmask(SIG_BLOCK, &handled, &old); /* from now on they queue for sigwaitinfo */
    launcher l = {.token = random_token(), .declared = -1};
    if (set_launcher_env(l.token) != 0)
        perror("gcsh: setenv");
    l.streams = streams_listen(l.token);
    l.child = fork();
    if (l.child < 0) {
        perror("gcsh: fork");
        return 1;
    }
    if (l.child == 0)
        exec_child(argv, &old);
    setpgid(l.child, l.child); /* also here: whichever side runs first */
    for (;;) {
        siginfo_t si;
        int sig = sigwaitinfo(&handled, &si);
        if (sig < 0)
            continue; /* EINTR: a signal outside the set */
        if (sig == SIGCHLD) {
            int wstatus;
            if (waitpid(l.child, &wstatus, WNOHANG) == l.child)
                return l.declared >= 0 ? l.declared : status_of(wstatus);
        } else if (sig == SIGUSR1) {
            on_hello(&l, &si);
        } else if (sig == SIGUSR2) {
            if (l.rank0 && si.si_pid == l.rank0 && si.si_code == SI_QUEUE)
                l.declared = si.si_value.sival_int & 0xff;
        } else if (sig == SIGTSTP || sig == SIGCONT) {
            on_job_control(&l, sig);
        } else {
            on_stop_signal(&l, sig);
        }
    }
}

/* ---- rank 0 ----------------------------------------------------------------- */

int gcsh_launcher_hello(int streams[2])
{
    streams[0] = streams[1] = -1;
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
    if (sigqueue(pid, SIGUSR1, sv) != 0)
        return 0;
    streams_take(pid, token, streams);
    return pid;
}

void gcsh_launcher_status(int launcher, int status)
{
    if (launcher <= 0)
        return;
    union sigval sv = {.sival_int = status};
    sigqueue(launcher, SIGUSR2, sv);
}
