/* Rank 0's terminal.  See term.h. */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

#include "shell/sigint.h"
#include "shell/term.h"

int gcsh_under_mpirun(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

/* Whether the launcher's (our parent's) file descriptor fd is a terminal:
 * mpirun keeps the user's terminal while we get pipes. */
static int parent_fd_is_tty(int fd)
{
    char path[64], target[256] = {0};
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)getppid(), fd);
    if (readlink(path, target, sizeof target - 1) <= 0)
        return 0;
    return strncmp(target, "/dev/pts/", 9) == 0 || strncmp(target, "/dev/tty", 8) == 0;
}

static int stdin_is_devnull(void)
{
    struct stat st;
    return fstat(0, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
}

static void open_streams(gcsh_term *t);

/* Opens /dev/tty and makes our process group the foreground one, when the
 * job is in the foreground: a job started in the background (`gcsh -n 2
 * script.lua &`) leaves the terminal to the shell, and its prompt waits for
 * fg (gcsh_term_resume). */
static int take_terminal(gcsh_term *t)
{
    int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -1;
    /* tcsetpgrp from a background group raises SIGTTOU unless ignored */
    signal(SIGTTOU, SIG_IGN);
    if (getpgrp() != getpid())
        setpgid(0, 0);
    pid_t fg = tcgetpgrp(fd);
    /* the job's group: gcsh -n's launcher's, else the one in the foreground */
    t->saved_fg = t->launcher > 0 ? getpgid(t->launcher) : fg;
    if (t->saved_fg <= 0)
        t->saved_fg = fg;
    if (fg == t->saved_fg && tcsetpgrp(fd, getpgrp()) != 0) {
        close(fd);
        t->saved_fg = -1;
        return -1;
    }
    t->tty = fdopen(fd, "r+");
    setvbuf(t->tty, NULL, _IONBF, 0);
    return 0;
}

/* Whether f, rank 0's stdout (fd 1) or stderr (fd 2), reaches a terminal. */
static int reaches_tty(const gcsh_term *t, FILE *f, int fd)
{
    if (t->tty && f == t->tty)
        return 1;
    if (t->own[fd - 1] || !gcsh_under_mpirun())
        return isatty(fileno(f));
    return parent_fd_is_tty(fd);
}

/* The launcher's stream fd, when handed over, else dflt. */
static FILE *stream_of(int fd, FILE *dflt, int *own)
{
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    *own = f != NULL;
    if (!f && fd >= 0)
        close(fd);
    return f ? f : dflt;
}

void gcsh_term_open(gcsh_term *t, int force, const int streams[2], int launcher)
{
    *t = (gcsh_term){.in = stdin, .saved_fg = -1, .interactive = force, .launcher = launcher};
    t->out = stream_of(streams[0], stdout, &t->own[0]);
    t->err = stream_of(streams[1], stderr, &t->own[1]);
    open_streams(t);
    t->out_tty = reaches_tty(t, t->out, 1);
    t->err_tty = reaches_tty(t, t->err, 2);
}

static void open_streams(gcsh_term *t)
{
    if (isatty(0)) {
        t->interactive = t->editing = 1;
        return;
    }
    if (!gcsh_under_mpirun() || !parent_fd_is_tty(0))
        return; /* piped: lines without prompts (unless -i) */
    if (stdin_is_devnull() && take_terminal(t) == 0) {
        t->in = t->tty;
        if (!t->own[0] && parent_fd_is_tty(1)) /* mpirun's own is the terminal */
            t->out = t->tty;
        if (!t->own[1] && parent_fd_is_tty(2))
            t->err = t->tty;
        t->interactive = t->editing = 1;
        return;
    }
    /* mpirun forwards the terminal to our stdin: it owns the terminal. */
    t->interactive = 1;
    t->hint = "mpirun forwards this terminal, so there is no line editing, Ctrl-C ends the "
              "job and Ctrl-Z stops every rank but not mpirun (Ctrl-C then ends it); "
              "start with `gcsh -n N` or `mpirun --stdin none` instead";
}

void gcsh_term_close(gcsh_term *t)
{
    if (t->tty) {
        if (t->saved_fg > 0 && tcgetpgrp(fileno(t->tty)) == getpgrp())
            tcsetpgrp(fileno(t->tty), t->saved_fg); /* back to the job, if ours */
        if (t->out == t->tty)
            t->out = stdout;
        if (t->err == t->tty)
            t->err = stderr;
        fclose(t->tty);
        t->tty = NULL;
    }
    for (int i = 0; i < 2; i++) {
        FILE **f = i ? &t->err : &t->out;
        if (t->own[i])
            fclose(*f);
        t->own[i] = 0;
        *f = i ? stderr : stdout;
    }
}

/* ---- job control ------------------------------------------------------------ */

/* The terminal rank 0 edits on: the /dev/tty it opened, or its stdin. */
static int tty_fd(const gcsh_term *t)
{
    return t->tty ? fileno(t->tty) : fileno(t->in);
}

int gcsh_term_resume(gcsh_term *t)
{
    int fd = tty_fd(t);
    pid_t fg = tcgetpgrp(fd), mine = getpgrp();
    if (fg < 0 || fg == mine)
        return 1;
    if (!t->tty || fg != t->saved_fg)
        return 0; /* the job runs in the background */
    tcsetpgrp(fd, mine); /* fg gave the job the terminal: rank 0 edits on it */
    return 1;
}

int gcsh_term_holds(const gcsh_term *t)
{
    pid_t fg = tcgetpgrp(tty_fd(t));
    return fg < 0 || fg == getpgrp();
}

/* Asks for the job to stop: the launcher stops every rank and itself
 * (launch.c); without one, this process is the job. */
static void stop_job(void *arg)
{
    const gcsh_term *t = arg;
    kill(t->launcher ? t->launcher : getpid(), t->launcher ? SIGTSTP : SIGSTOP);
}

int gcsh_term_suspend(gcsh_term *t)
{
    if (!t->launcher && t->tty)
        return -1; /* under a plain mpirun: the ranks would stop, not the job */
    int fd = tty_fd(t);
    if (t->tty && t->saved_fg > 0 && tcgetpgrp(fd) == getpgrp())
        tcsetpgrp(fd, t->saved_fg); /* the job's own group: the shell takes it from there */
    gcsh_sig_stop_and_wait(stop_job, t);
    return 0;
}
