/* The launcher of `gcsh -n N` and rank 0's side of it.  See launch.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shell/launch.h"
#include "shell/launch_net.h"
#include "shell/sigint.h"
#include "shell/launch_streams.h"
#include "shell/sigint.h"
#include "wire/collcheck.h"

/* "pid:token:host": the launcher's pid, a random token that rank 0 sends
 * back (so no other process can pose as rank 0), and the launcher's host
 * (a pid means nothing elsewhere). */
#define LAUNCHER_ENV "GCSH_LAUNCHER"

/* In rank 0's SIGUSR2 value: the status is the session's at its normal end
 * (the ranks then exit 0, so that mpirun ends at once: it takes 2 s to end
 * a job in which a process exited with another status). */
#define DECLARE_AT_END 0x100

/* After a SIGTERM, the launcher ends the job through mpirun if it is still
 * there this long after (rank 0 stops it within 4 s, or exits by itself at
 * GCSH_TERM_DEADLINE_S when it cannot: sigint.h), and kills what is left
 * this long after that (mpirun takes about 2.5 s to end a job whose rank 0
 * is stopped): one SIGTERM ends any job within 10 s. */
#define END_AFTER_TERM_S 6.5
#define KILL_AFTER_END_S 3.0
#define REAP_AFTER_DECLARED_S 0.5
/* How often the launcher looks whether rank 0 was stopped from outside. */
#define LOOK_EVERY_S 1.0

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
    /* mpirun's SIGTERM-to-SIGKILL gap when a rank dies (Open MPI 4: 1 s):
     * long enough for rank 0's crash dump and, if rank 0 died, its heir's
     * (rank/heir.h), on a loaded machine too; the user's setting wins */
    setenv("OMPI_MCA_odls_base_sigkill_timeout", "5", 0);
    gcsh_launch_network_child(); /* mpirun's listener on loopback (launch_net.h) */
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

/* What the launcher knows of the job while mpirun runs. */
typedef struct launcher {
    pid_t child;   /* mpirun */
    const char *mpirun; /* its name, as started */
    int token;
    pid_t rank0;   /* known after rank 0's hello */
    int pidfd;     /* rank 0's, to see it end; -1: none */
    int streams;   /* listening socket for rank 0's hello (launch_streams.h), or -1 */
    int declared;  /* rank 0 ended the session at once with this status; -1: not */
    int end_status; /* rank 0's session status at a normal end (the ranks exit 0); -1 */
    int rank0_died; /* rank 0 ended without saying how: killed, crashed */
    int ended_by;  /* the launcher ended the job through mpirun: 128 + signal; -1 */
    int terms, stopped_ints;
    double last_int, last_term; /* when the last SIGINT, SIGTERM came (now()) */
    double end_at;  /* a SIGTERM's deadline: the job ends through mpirun then; 0: none */
    double kill_at; /* what is left of the job is killed then; 0: none */
    double reap_at; /* rank 0 ended the session at once: mpirun is taken down then */
    double next_look;   /* when to look at rank 0's state again */
    int stopped_looks;  /* looks in a row that found rank 0 stopped (SIGSTOP) */
    int stopped_said;   /* and that was said */
    int job_stopped;    /* the job is stopped by job control (Ctrl-Z): not from outside */
} launcher;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The status for the user once mpirun has exited with wstatus. */
/* Whether a status is one that gcsh's ranks exit with by themselves before
 * rank 0 is up (rather than mpirun's own failure to start them). */
static int rank_verdict_status(int status)
{
    return status == 0 || status == GCSH_EXIT_SKIP || status == GCSH_EXIT_LOST ||
           status == GCSH_EXIT_FATAL || status >= GCSH_EXIT_USAGE;
}

static int final_status(const launcher *l, int wstatus)
{
    int mpirun = status_of(wstatus);
    if (l->ended_by >= 0) /* whatever the ranks made of mpirun ending them */
        return l->ended_by;
    if (l->declared >= 0)
        return l->declared;
    if (l->rank0_died)
        return GCSH_EXIT_LOST; /* the survivors' status: rank 0 is gone */
    if (l->end_status >= 0 && mpirun == 0)
        return l->end_status;
    /* mpirun gave up before rank 0 started (a bad --map-by or --mpirun-args,
     * no mpirun, a broken machine): nothing was tested, so no "bad" (1,
     * 255) for a bisect to blame the commit with: a usage error, it stops.
     * A rank's own verdict before then stands (125: no GPU here; a lost
     * rank, a device fault, an abort or a signal). */
    if (!l->rank0 && !rank_verdict_status(mpirun))
        return GCSH_EXIT_USAGE;
    return mpirun; /* a crash after the end, or no rank 0 to tell us */
}

/* Whether process pid is stopped: 'T' (SIGSTOP, SIGTSTP) or 't' (held by a
 * debugger); it cannot take a signal until it is continued.  0: running. */
static char stopped_state(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    const char *end = strrchr(buf, ')'); /* "pid (comm) S ...": comm may hold spaces */
    return end && (end[2] == 'T' || end[2] == 't') ? end[2] : 0;
}

static void end_through_mpirun(launcher *l, int status, const char *why)
{
    if (l->rank0)
        fprintf(stderr, "gcsh: rank 0 (pid %d) %s; the job ends through mpirun\n",
                (int)l->rank0, why);
    else
        fprintf(stderr, "gcsh: %s; the job ends through mpirun\n", why);
    l->ended_by = status;
    l->end_at = 0;
    l->kill_at = now() + KILL_AFTER_END_S;
    kill(l->child, SIGTERM);
}

static void signal_children(pid_t parent, int sig);

/* The job outlived its end through mpirun: mpirun, the ranks it started on
 * this host and rank 0 are killed (the launcher then reaps mpirun). */
static void kill_job(launcher *l)
{
    fprintf(stderr, "gcsh: the job did not end %.1f s after mpirun was asked to end it: "
                    "killed\n", KILL_AFTER_END_S);
    l->kill_at = 0;
    signal_children(l->child, SIGKILL);
    if (l->rank0)
        kill(l->rank0, SIGKILL);
    kill(-l->child, SIGKILL); /* mpirun's process group */
}

/* Whether a signal repeats one that came within GCSH_SAME_SIGNAL_MS (*last:
 * when): `timeout` and `kill -- -PGID` signal the launcher, then its
 * process group. */
static int repeated(double *last, double t)
{
    int same = *last > 0 && t - *last < GCSH_SAME_SIGNAL_MS * 1e-3;
    *last = t;
    return same;
}

/* A rank 0 stopped from outside (kill -STOP, not Ctrl-Z) cannot take
 * Ctrl-C, and at a terminal it holds the foreground, so Ctrl-C never
 * reached the launcher: said once (believed on a second look, as job
 * control's own stops and continues come and go), and the terminal goes to
 * the launcher's process group, so that Ctrl-C ends the job (forward).
 * Rank 0 takes the terminal back when it is continued (term.h). */
static void look_at_rank0(launcher *l, double t)
{
    l->next_look = t + LOOK_EVERY_S;
    int stopped = !l->job_stopped && l->pidfd >= 0 && stopped_state(l->rank0) == 'T';
    l->stopped_looks = stopped ? l->stopped_looks + 1 : 0;
    if (!stopped)
        l->stopped_said = 0;
    if (l->stopped_looks < 2 || l->stopped_said)
        return;
    l->stopped_said = 1;
    int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
    int ours = tty >= 0 && tcgetpgrp(tty) == getpgid(l->rank0);
    if (ours) { /* as a background group: SIGTTOU would stop the launcher */
        void (*was)(int) = signal(SIGTTOU, SIG_IGN);
        ours = tcsetpgrp(tty, getpgrp()) == 0;
        signal(SIGTTOU, was);
    }
    if (tty >= 0)
        close(tty);
    fprintf(stderr, "\ngcsh: rank 0 (pid %d) is stopped (SIGSTOP from outside); %s ends the "
                    "job, kill -CONT %d continues it\n", (int)l->rank0,
            ours ? "Ctrl-C" : "SIGINT or SIGTERM to gcsh", (int)l->rank0);
}

/* SIGINT or SIGTERM before rank 0's hello: nobody can take an interrupt
 * yet, so the job ends through mpirun, with the status of the signal. */
static void end_in_startup(launcher *l, int sig)
{
    if (l->ended_by >= 0)
        return; /* ending already */
    end_through_mpirun(l, 128 + sig, sig == SIGINT
                                         ? "interrupted (Ctrl-C) during start-up, before rank 0 "
                                           "was ready"
                                         : "terminated (SIGTERM or SIGHUP) during start-up");
}

/* SIGINT, SIGTERM, SIGHUP from outside: to rank 0 (the interrupt, the
 * stop).  The job ends through mpirun instead before rank 0's hello, when
 * rank 0 cannot take them (it is stopped; held by a debugger, a second
 * Ctrl-C), at a third SIGTERM, and END_AFTER_TERM_S after the first. */
static void forward(launcher *l, int sig, int typed)
{
    /* `timeout` signals its child, then the child's process group: the same
     * signal twice, one request */
    if (repeated(sig == SIGINT ? &l->last_int : &l->last_term, now()))
        return;
    if (!l->rank0) {
        end_in_startup(l, sig == SIGINT ? SIGINT : SIGTERM);
        return;
    }
    if (sig != SIGINT)
        l->terms++;
    char stopped = l->pidfd >= 0 ? stopped_state(l->rank0) : 0; /* (a gone pid is reused) */
    if (sig == SIGINT && (stopped == 'T' || (stopped && ++l->stopped_ints >= 2))) {
        end_through_mpirun(l, 128 + SIGINT, "is stopped and cannot take Ctrl-C");
        return;
    }
    if (sig != SIGINT && (stopped || l->terms >= 3)) {
        end_through_mpirun(l, 128 + SIGTERM, stopped ? "is stopped and cannot take SIGTERM"
                                                     : "did not end the job after two SIGTERMs");
        return;
    }
    if (stopped)
        fprintf(stderr, "gcsh: rank 0 (pid %d) is held by a debugger: the interrupt waits until "
                        "it is continued; Ctrl-C again ends the job\n", (int)l->rank0);
    if (sig != SIGINT && !l->end_at)
        l->end_at = now() + END_AFTER_TERM_S;
    int fwd = sig == SIGINT ? SIGINT : SIGTERM; /* SIGHUP stops the session as SIGTERM */
    /* a Ctrl-C typed at the terminal says so (sigint.h): it ends a piped session */
    union sigval key = {.sival_int = GCSH_SIGINT_KEYBOARD};
    int sent = l->pidfd >= 0 &&
               (typed && fwd == SIGINT ? sigqueue(l->rank0, fwd, key) : kill(l->rank0, fwd)) == 0;
    if (!sent)
        kill(l->child, fwd); /* rank 0 is gone: mpirun ends the job */
}

/* The SIGTERM's deadlines that are due. */
static void on_time(launcher *l)
{
    double t = now();
    if (l->end_at && t >= l->end_at && l->ended_by < 0 && l->rank0 && l->pidfd < 0) {
        /* rank 0 is gone, and mpirun is ending the job for it: a SIGTERM
         * now would interrupt that abort (Open MPI 4 crashes then) */
        l->end_at = 0;
        l->kill_at = t + KILL_AFTER_END_S;
    }
    if (l->end_at && t >= l->end_at && l->ended_by < 0) {
        char why[80];
        snprintf(why, sizeof why, "did not end the job within %.1f s of SIGTERM",
                 END_AFTER_TERM_S);
        end_through_mpirun(l, 128 + SIGTERM, why);
    }
    if (l->kill_at && t >= l->kill_at)
        kill_job(l);
    if (l->reap_at && t >= l->reap_at) {
        l->reap_at = 0;
        kill(-l->child, SIGKILL); /* mpirun's process group: every rank has exited */
    }
    if (l->rank0 && l->pidfd >= 0 && t >= l->next_look)
        look_at_rank0(l, t);
}

/* poll's timeout: until the next deadline, or none. */
static int next_deadline_ms(const launcher *l)
{
    double next = l->end_at && l->ended_by < 0 ? l->end_at : 0;
    if (l->kill_at && (!next || l->kill_at < next))
        next = l->kill_at;
    if (l->reap_at && (!next || l->reap_at < next))
        next = l->reap_at;
    if (l->rank0 && l->pidfd >= 0 && (!next || l->next_look < next))
        next = l->next_look;
    if (!next)
        return -1;
    double left = next - now();
    return left <= 0 ? 0 : (int)(left * 1000) + 1;
}

/* Rank 0's hello (SIGUSR1 with the token): we watch its pid, and it gets
 * our stdout and stderr. */
static void on_hello(launcher *l, pid_t pid)
{
    if (l->rank0)
        return;
    l->rank0 = pid;
    l->next_look = now() + LOOK_EVERY_S;
#ifdef SYS_pidfd_open
    l->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
    if (l->streams >= 0) {
        gcsh_streams_send(l->streams, l->rank0);
        close(l->streams);
        l->streams = -1;
    }
}

/* SIGUSR2 from rank 0: its status, for now (DECLARE_AT_END clear) or for the
 * normal end of the session (set). */
static void on_declare(launcher *l, int value)
{
    if (value & DECLARE_AT_END)
        l->end_status = value & 0xff;
    else
        l->declared = value & 0xff;
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
    l->job_stopped = sig == SIGTSTP;
    l->stopped_looks = 0; /* the ranks' state changes under the next look */
    signal_children(l->child, to_ranks);
    if (l->rank0)
        kill(l->rank0, to_ranks);
    if (sig == SIGTSTP)
        kill(getpid(), SIGSTOP);
}

/* One signal; returns 1 when mpirun has exited (*status: the user's). */
/* mpirun failed before rank 0 said hello: it may have said why (or, as
 * GCSH_MPIRUN=/bin/false, not); the user gets at least this line.  127 is
 * exec_child's, which said it. */
static void said_no_start(const launcher *l, int wstatus)
{
    int code = status_of(wstatus);
    if (l->rank0 || l->ended_by >= 0 || code == 0 || code == 127)
        return;
    if (rank_verdict_status(code)) /* the ranks said why */
        fprintf(stderr, "gcsh: %s ended with status %d before rank 0 started\n", l->mpirun, code);
    else
        fprintf(stderr, "gcsh: %s ended with status %d before rank 0 started: nothing ran "
                        "(exit %d)\n", l->mpirun, code, GCSH_EXIT_USAGE);
}

static int on_signal(launcher *l, const struct signalfd_siginfo *si, int *status)
{
    int sig = (int)si->ssi_signo;
    if (sig == SIGCHLD) {
        int wstatus;
        if (waitpid(l->child, &wstatus, WNOHANG) != l->child)
            return 0;
        *status = final_status(l, wstatus);
        said_no_start(l, wstatus);
        return 1;
    }
    if (sig == SIGUSR1) {
        if (si->ssi_code == SI_QUEUE && si->ssi_int == l->token)
            on_hello(l, (pid_t)si->ssi_pid);
    } else if (sig == SIGUSR2) {
        if (l->rank0 && (pid_t)si->ssi_pid == l->rank0 && si->ssi_code == SI_QUEUE)
            on_declare(l, si->ssi_int);
    } else if (sig == SIGTSTP || sig == SIGCONT) {
        on_job_control(l, sig);
    } else {
        forward(l, sig, si->ssi_code == SI_KERNEL);
    }
    return 0;
}

int gcsh_launch(char *const argv[])
{
    static const int handled_signals[] = {SIGINT,  SIGTERM, SIGHUP,  SIGCHLD,
                                          SIGUSR1, SIGUSR2, SIGTSTP, SIGCONT};
    sigset_t handled, old;
    sigemptyset(&handled);
    for (size_t i = 0; i < sizeof handled_signals / sizeof *handled_signals; i++)
        sigaddset(&handled, handled_signals[i]);
    sigprocmask(SIG_BLOCK, &handled, &old); /* from now on they queue for the signalfd */
    launcher l = {.mpirun = argv[0], .token = random_token(), .pidfd = -1, .streams = -1,
                  .declared = -1, .end_status = -1, .ended_by = -1};
    if (set_launcher_env(l.token) != 0)
        perror("gcsh: setenv");
    l.streams = gcsh_streams_listen(l.token);
    int sfd = signalfd(-1, &handled, SFD_CLOEXEC);
    l.child = sfd >= 0 ? fork() : -1;
    if (l.child < 0) {
        perror("gcsh: cannot start mpirun");
        return 1;
    }
    if (l.child == 0)
        exec_child(argv, &old);
    setpgid(l.child, l.child); /* also here: whichever side runs first */
    for (;;) {
        struct pollfd p[2] = {{.fd = sfd, .events = POLLIN}, {.fd = l.pidfd, .events = POLLIN}};
        int ready = poll(p, l.pidfd >= 0 ? 2 : 1, next_deadline_ms(&l));
        on_time(&l);
        if (ready <= 0)
            continue; /* a deadline, or EINTR */
        struct signalfd_siginfo si;
        int status;
        /* signals first: rank 0's declaration comes before it ends */
        while ((p[0].revents & POLLIN) && read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
            if (on_signal(&l, &si, &status))
                return status;
            if (poll(p, 1, 0) != 1)
                break;
        }
        if (l.pidfd >= 0 && (p[1].revents & (POLLIN | POLLHUP))) {
            l.rank0_died = l.declared < 0 && l.end_status < 0;
            close(l.pidfd);
            l.pidfd = -1;
            /* Rank 0 ended the session at once (| head left, a lost rank)
             * and the ranks exited on its word, without MPI_Finalize: mpirun
             * takes that for an abort and waits its SIGTERM and SIGKILL gaps
             * (5 s each, launch.c) for processes already gone.  The status is
             * known (declared), so mpirun goes after a short grace. */
            if (l.declared >= 0)
                l.reap_at = now() + REAP_AFTER_DECLARED_S;
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
    gcsh_streams_take(pid, token, streams);
    return pid;
}

void gcsh_launcher_status(int launcher, int status)
{
    if (launcher <= 0)
        return;
    union sigval sv = {.sival_int = status};
    sigqueue(launcher, SIGUSR2, sv);
}

int gcsh_launcher_end(int launcher, int status)
{
    if (launcher <= 0)
        return -1;
    union sigval sv = {.sival_int = (status & 0xff) | DECLARE_AT_END};
    return sigqueue(launcher, SIGUSR2, sv);
}
