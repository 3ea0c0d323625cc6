/* Rank 0's terminal.  See term.h. */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

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

/* Opens /dev/tty and makes our process group the foreground one. */
static int take_terminal(gcsh_term *t)
{
    int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -1;
    /* tcsetpgrp from a background group raises SIGTTOU unless ignored */
    signal(SIGTTOU, SIG_IGN);
    if (getpgrp() != getpid())
        setpgid(0, 0);
    t->saved_fg = tcgetpgrp(fd);
    if (tcsetpgrp(fd, getpgrp()) != 0) {
        close(fd);
        t->saved_fg = -1;
        return -1;
    }
    t->tty = fdopen(fd, "r+");
    setvbuf(t->tty, NULL, _IONBF, 0);
    return 0;
}

/* Whether what rank 0 prints reaches a terminal. */
static int out_reaches_tty(const gcsh_term *t)
{
    if (t->tty && t->out == t->tty)
        return 1;
    return gcsh_under_mpirun() ? parent_fd_is_tty(1) : isatty(fileno(t->out));
}

void gcsh_term_open(gcsh_term *t, int force)
{
    *t = (gcsh_term){.in = stdin, .out = stdout, .saved_fg = -1, .interactive = force};
    open_streams(t);
    t->out_tty = out_reaches_tty(t);
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
        if (parent_fd_is_tty(1))
            t->out = t->tty;
        t->interactive = t->editing = 1;
        return;
    }
    /* mpirun forwards the terminal to our stdin: it owns the terminal. */
    t->interactive = 1;
    t->hint = "mpirun forwards this terminal, so there is no line editing and Ctrl-C ends "
              "the job; start with `gcsh -n N` or `mpirun --stdin none` instead";
}

void gcsh_term_close(gcsh_term *t)
{
    if (t->tty) {
        if (t->saved_fg > 0)
            tcsetpgrp(fileno(t->tty), t->saved_fg);
        if (t->out == t->tty)
            t->out = stdout;
        fclose(t->tty);
        t->tty = NULL;
    }
}
