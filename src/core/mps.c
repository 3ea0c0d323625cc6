/* A job's private MPS control daemon and its folder.  See mps.h. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/mps.h"

#define MPS_CONTROL "nvidia-cuda-mps-control"
#define MPS_PID_FILE "nvidia-cuda-mps-control.pid" /* the daemon's, in its pipe directory */
#define START_WAIT_S 5
#define VERDICT_WAIT_S 20

int gcsh_mps_reachable(const char *dir)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if ((size_t)snprintf(a.sun_path, sizeof a.sun_path, "%s/control", dir) >= sizeof a.sun_path)
        return 0;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    int ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

int gcsh_mps_find_control(char *out, size_t len)
{
    const char *path = getenv("PATH");
    for (const char *p = path ? path : ""; *p;) {
        size_t w = strcspn(p, ":");
        if (w && (size_t)snprintf(out, len, "%.*s/%s", (int)w, p, MPS_CONTROL) < len &&
            access(out, X_OK) == 0)
            return 0;
        p += w + (p[w] == ':');
    }
    return -1;
}

int gcsh_mps_ours(const char *root)
{
    struct stat st;
    return lstat(root, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid() &&
           (st.st_mode & 077) == 0;
}

/* ---- processes ------------------------------------------------------------- */

/* fork + exec with stdin from in_fd, stdout/stderr to out_fd, default
 * signal handling (the rank ignores SIGPIPE), every other descriptor closed
 * (a daemon must hold none of the rank's: mpirun waits for its output pipes
 * to close), optionally in a session of its own.  Runs before MPI_Init
 * (share.h), yet only async-signal-safe calls come between fork and exec.
 * Returns the pid, or -1. */
static pid_t spawn(char *const argv[], char *const envp[], int in_fd, int out_fd, int new_session)
{
    long max_fd = sysconf(_SC_OPEN_MAX);
    if (max_fd < 0 || max_fd > 65536)
        max_fd = 65536;
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    if (new_session)
        setsid();
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &dfl, NULL); /* fails harmlessly for SIGKILL, SIGSTOP */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0)
        _exit(127);
    for (int fd = 3; fd < max_fd; fd++)
        close(fd);
    execve(argv[0], argv, envp);
    _exit(127);
}

/* The environment of the guard and the daemon: PATH and HOME, the MPS
 * directories, GCSH_MPS_KEEP; nothing else of the rank's (mps.h). */
typedef struct mps_env {
    char path[4096], home[1024], pipe[320], log[320], keep[64];
    char *v[6];
} mps_env;

static void make_env(mps_env *e, const char *root)
{
    const char *path = getenv("PATH"), *home = getenv("HOME"), *keep = getenv("GCSH_MPS_KEEP");
    int n = 0;
    snprintf(e->path, sizeof e->path, "PATH=%s", path ? path : "/usr/bin:/bin");
    e->v[n++] = e->path;
    if (home) {
        snprintf(e->home, sizeof e->home, "HOME=%s", home);
        e->v[n++] = e->home;
    }
    snprintf(e->pipe, sizeof e->pipe, "CUDA_MPS_PIPE_DIRECTORY=%s/pipe", root);
    e->v[n++] = e->pipe;
    snprintf(e->log, sizeof e->log, "CUDA_MPS_LOG_DIRECTORY=%s/log", root);
    e->v[n++] = e->log;
    if (keep && *keep) {
        snprintf(e->keep, sizeof e->keep, "GCSH_MPS_KEEP=%.40s", keep);
        e->v[n++] = e->keep;
    }
    e->v[n] = NULL;
}

/* The guard (mps.h): reads its stdin until the first rank is gone; if a
 * daemon was started ($1/starting), waits for its pid file (5 s), quits it,
 * waits for it to go (30 s) and kills it if it will not; then removes the
 * folder (kept with GCSH_MPS_KEEP set, for the daemon's logs, and marked
 * done: gcsh -n waits for one or the other).  $1: the folder, $2: the
 * control program. */
static const char guard_script[] =
    "cat >/dev/null\n"
    "pid=\"$1/pipe/" MPS_PID_FILE "\"\n"
    "if [ -e \"$1/starting\" ]; then\n"
    "  i=0; while [ ! -e \"$pid\" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done\n"
    "  if [ -e \"$pid\" ]; then\n"
    "    echo quit | \"$2\"\n"
    "    i=0; while [ -e \"$pid\" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done\n"
    "    [ -e \"$pid\" ] && kill \"$(cat \"$pid\")\"\n"
    "  fi\n"
    "fi\n"
    "if [ -n \"$GCSH_MPS_KEEP\" ]; then : >\"$1/" MPS_GUARD_DONE "\"; else rm -rf \"$1\"; fi\n";

static int start_guard(const char *root, const char *control, char **env, int *guard_fd)
{
    int fds[2], null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null_fd < 0 || pipe2(fds, O_CLOEXEC) != 0) {
        if (null_fd >= 0)
            close(null_fd);
        return -1;
    }
    char *argv[] = {"/bin/sh", "-c", (char *)guard_script, "gcsh-mps-guard", (char *)root,
                    (char *)control, NULL};
    pid_t pid = spawn(argv, env, fds[0], null_fd, 1);
    close(fds[0]);
    close(null_fd);
    if (pid < 0) {
        close(fds[1]);
        return -1;
    }
    *guard_fd = fds[1]; /* the guard is reaped by init once this process ends */
    return 0;
}

/* ---- the folder --------------------------------------------------------------- */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void remove_folder(const char *root)
{
    nftw(root, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static int make_folder(const char *root, char *why, size_t len)
{
    if (gcsh_mps_ours(root))
        remove_folder(root); /* a machine that went down mid-job left it */
    else if (access(root, F_OK) == 0 || errno != ENOENT)
        return snprintf(why, len, "%s exists and is not this user's private folder", root), -1;
    char sub[300];
    snprintf(sub, sizeof sub, "%s/pipe", root);
    int ok = mkdir(root, 0700) == 0 && mkdir(sub, 0700) == 0;
    snprintf(sub, sizeof sub, "%s/log", root);
    if (ok && mkdir(sub, 0700) == 0)
        return 0;
    snprintf(why, len, "cannot make %s: %s", root, strerror(errno));
    if (gcsh_mps_ours(root))
        remove_folder(root);
    return -1;
}

int gcsh_mps_open(const char *root, const char *control, int *guard_fd, char *why, size_t len)
{
    if (make_folder(root, why, len) != 0)
        return -1;
    mps_env env;
    make_env(&env, root);
    if (start_guard(root, control, env.v, guard_fd) == 0)
        return 0;
    snprintf(why, len, "cannot start its guard: %s", strerror(errno));
    remove_folder(root);
    return -1;
}

/* ---- the daemon ----------------------------------------------------------------- */

/* The first line of a file (what the daemon's start printed), or "". */
static void first_line(const char *path, char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (fgets(out, (int)len, f))
        out[strcspn(out, "\n")] = '\0';
    fclose(f);
}

/* `control -d` with its output in out_path; -1 with why when it fails. */
static int run_control(const char *control, char **env, const char *out_path, char *why,
                       size_t len)
{
    char *argv[] = {(char *)control, "-d", NULL};
    int in_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int out_fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    pid_t pid = in_fd < 0 || out_fd < 0 ? -1 : spawn(argv, env, in_fd, out_fd, 0);
    int status = 0, err = errno;
    if (in_fd >= 0)
        close(in_fd);
    if (out_fd >= 0)
        close(out_fd);
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return snprintf(why, len, "cannot run %.120s: %s", control, strerror(err)), -1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    char said[160];
    first_line(out_path, said, sizeof said);
    return snprintf(why, len, "%.120s -d failed (status %d%s%.60s)", control,
                    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                    said[0] ? ": " : "", said),
           -1;
}

int gcsh_mps_start(const char *root, const char *control, char *why, size_t len)
{
    char path[300];
    snprintf(path, sizeof path, "%s/starting", root); /* the guard quits it from now on */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return snprintf(why, len, "cannot write in %s: %s", root, strerror(errno)), -1;
    close(fd);
    mps_env env;
    make_env(&env, root);
    snprintf(path, sizeof path, "%s/log/gcsh-start.txt", root);
    if (run_control(control, env.v, path, why, len) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/pipe/%s", root, MPS_PID_FILE);
    for (int i = 0; i < START_WAIT_S * 50; i++) {
        if (access(path, F_OK) == 0)
            return 0;
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    return snprintf(why, len, "the daemon did not come up in %d s", START_WAIT_S), -1;
}

/* ---- the verdict --------------------------------------------------------------- */

void gcsh_mps_publish(const char *root, const char *pipe_dir)
{
    char tmp[300], path[300];
    snprintf(tmp, sizeof tmp, "%s/verdict.tmp", root);
    snprintf(path, sizeof path, "%s/verdict", root);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return; /* the others wait for it, then say so */
    int ok = fprintf(f, "%ld %s\n", (long)getpid(), pipe_dir ? pipe_dir : "") >= 0;
    ok &= fclose(f) == 0;
    if (ok)
        rename(tmp, path);
}

/* One look at root's verdict ("PID PIPE_DIR"): 1 with pipe_dir set when
 * it is there and comes from a first rank that lives (a verdict left under
 * this name by an earlier job is ignored: its writer is gone), else 0. */
static int read_verdict(const char *root, char *pipe_dir, size_t len)
{
    char path[300], line[400] = "";
    snprintf(path, sizeof path, "%s/verdict", root);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    line[strcspn(line, "\n")] = '\0';
    char *rest = NULL;
    long pid = got ? strtol(line, &rest, 10) : 0;
    if (pid <= 0 || !rest || (*rest != ' ' && *rest != '\0'))
        return 0;
    if (kill((pid_t)pid, 0) != 0 && errno != EPERM)
        return 0;
    snprintf(pipe_dir, len, "%s", *rest ? rest + 1 : "");
    return 1;
}

int gcsh_mps_await(const char *root, char *pipe_dir, size_t plen, char *why, size_t wlen)
{
    for (int i = 0; i < VERDICT_WAIT_S * 100; i++) {
        int present = access(root, F_OK) == 0;
        if (present && !gcsh_mps_ours(root))
            return snprintf(why, wlen, "%s exists and is not this user's private folder", root),
                   -1;
        if (present && read_verdict(root, pipe_dir, plen))
            return 0;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    return snprintf(why, wlen, "the machine's first rank gave no verdict in %d s",
                    VERDICT_WAIT_S),
           -1;
}
