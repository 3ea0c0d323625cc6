/* GPUs shared by several ranks: the machine's ranks and the MPS daemon's
 * lifecycle.  See share.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

#include "core/share.h"

#define MPS_CONTROL "nvidia-cuda-mps-control"
#define MPS_PID_FILE "nvidia-cuda-mps-control.pid" /* the daemon's, in its pipe directory */
#define MPS_DEFAULT_PIPE_DIR "/tmp/nvidia-mps"      /* CUDA's, when the variable is unset */
#define START_WAIT_S 5.0

extern char **environ;

int gcsh_share_parse(const char *value, gcsh_share_mode *mode)
{
    if (!value || !*value || strcmp(value, "1") == 0 || strcmp(value, "mps") == 0)
        *mode = GCSH_SHARE_MPS;
    else if (strcmp(value, "nomps") == 0)
        *mode = GCSH_SHARE_NOMPS;
    else if (strcmp(value, "0") == 0)
        *mode = GCSH_SHARE_OFF;
    else
        return -1;
    return 0;
}

/* ---- facts read before CUDA starts ------------------------------------------ */

/* GPUs CUDA will show this process, without asking CUDA (that would start
 * the MPS client too early): the driver's list in procfs, narrowed by
 * CUDA_VISIBLE_DEVICES.  GCSH_NVIDIA_PROC names another folder (tests).
 * 0 without an NVIDIA driver; -1 when the driver is there but its list
 * cannot be read. */
static int visible_gpus(void)
{
    const char *dir = getenv("GCSH_NVIDIA_PROC");
    DIR *d = opendir(dir && *dir ? dir : "/proc/driver/nvidia/gpus");
    if (!d)
        return access("/dev/nvidiactl", F_OK) == 0 ? -1 : 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    if (cvd) {
        int listed = *cvd != '\0';
        for (const char *p = cvd; *p; p++)
            listed += *p == ',';
        n = listed < n ? listed : n;
    }
    return n;
}

/* Whether an MPS control daemon answers in pipe directory dir (a stale
 * socket of a daemon that quit refuses the connection). */
static int server_reachable(const char *dir)
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

/* The full path of program on PATH, into out; -1 when it is not there. */
static int find_on_path(const char *program, char *out, size_t len)
{
    const char *path = getenv("PATH");
    for (const char *p = path ? path : ""; *p;) {
        size_t w = strcspn(p, ":");
        if (w && (size_t)snprintf(out, len, "%.*s/%s", (int)w, p, program) < len &&
            access(out, X_OK) == 0)
            return 0;
        p += w + (p[w] == ':');
    }
    return -1;
}

/* ---- processes ---------------------------------------------------------------- */

/* fork + exec with stdin from in_fd and stdout/stderr to out_fd, every
 * other descriptor closed (a daemon must hold none of the rank's: mpirun
 * waits for its output pipes to close), optionally in a session of its
 * own.  Only async-signal-safe calls between fork and exec: the process
 * has MPI's threads.  Returns the pid, or -1. */
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

/* environ with NAME=value for the MPS directories (what the daemon and its
 * clients read); the strings live in buf. */
static char **mps_environment(const char *root, char buf[2][320])
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 3, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "CUDA_MPS_PIPE_DIRECTORY=", 24) != 0 &&
            strncmp(environ[i], "CUDA_MPS_LOG_DIRECTORY=", 23) != 0)
            env[k++] = environ[i];
    snprintf(buf[0], 320, "CUDA_MPS_PIPE_DIRECTORY=%s/pipe", root);
    snprintf(buf[1], 320, "CUDA_MPS_LOG_DIRECTORY=%s/log", root);
    env[k++] = buf[0];
    env[k++] = buf[1];
    return env;
}

/* The watcher (share.h): reads its stdin until the first rank is gone,
 * then quits the daemon if one answers there, waits for its pid file to go
 * (10 s at most) and removes the job's folder.  $1: the folder, $2: the
 * control program. */
static const char watcher_script[] =
    "cat >/dev/null\n"
    "if [ -e \"$1/pipe/control\" ]; then\n"
    "  echo quit | \"$2\"\n"
    "  i=0\n"
    "  while [ -e \"$1/pipe/" MPS_PID_FILE "\" ] && [ $i -lt 100 ]; do\n"
    "    sleep 0.1; i=$((i + 1))\n"
    "  done\n"
    "fi\n"
    "rm -rf \"$1\"\n";

static int start_watcher(gcsh_share *s, const char *root, const char *control, char **env,
                         int out_fd)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    char *argv[] = {"/bin/sh", "-c", (char *)watcher_script, "gcsh-mps-watcher", (char *)root,
                    (char *)control, NULL};
    s->watcher = spawn(argv, env, fds[0], out_fd, 1);
    close(fds[0]);
    if (s->watcher < 0) {
        close(fds[1]);
        return -1;
    }
    s->watcher_fd = fds[1];
    return 0;
}

/* Ends the watcher's wait: it quits the daemon; returns when it is done. */
static void release_watcher(gcsh_share *s)
{
    if (s->watcher_fd >= 0)
        close(s->watcher_fd);
    s->watcher_fd = -1;
    if (s->watcher > 0)
        while (waitpid(s->watcher, NULL, 0) < 0 && errno == EINTR)
            ;
    s->watcher = 0;
}

/* The first line the daemon's start printed (its own reason), or "". */
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

/* Runs `control -d` (output into out_path) and waits for the daemon's pid
 * file.  Returns 0, or -1 with the reason in why. */
static int start_daemon(const char *root, const char *control, char **env, const char *out_path,
                        char *why, size_t len)
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
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char said[160];
        first_line(out_path, said, sizeof said);
        return snprintf(why, len, "%.120s -d failed (status %d%s%.60s)", control,
                        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                        said[0] ? ": " : "", said),
               -1;
    }
    char pid_file[300];
    snprintf(pid_file, sizeof pid_file, "%s/pipe/%s", root, MPS_PID_FILE);
    for (int i = 0; i < (int)(START_WAIT_S * 50); i++) {
        if (access(pid_file, F_OK) == 0)
            return 0;
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    return snprintf(why, len, "the daemon did not come up in %.0f s", START_WAIT_S), -1;
}

/* A new folder under /tmp with pipe/ and log/ (short: the control socket's
 * path must fit sockaddr_un).  Returns 0, or -1 with nothing left. */
static int make_folder(char *root, size_t len)
{
    char tmpl[] = "/tmp/gcsh-mps-XXXXXX", sub[300];
    if (!mkdtemp(tmpl))
        return -1;
    snprintf(root, len, "%s", tmpl);
    snprintf(sub, sizeof sub, "%s/pipe", root);
    if (mkdir(sub, 0700) == 0) {
        snprintf(sub, sizeof sub, "%s/log", root);
        if (mkdir(sub, 0700) == 0)
            return 0;
        snprintf(sub, sizeof sub, "%s/pipe", root);
        rmdir(sub);
    }
    int err = errno;
    rmdir(root);
    errno = err;
    return -1;
}

/* The node's first rank: a private daemon (share.h), watched from before
 * it starts.  On success root names its folder. */
static int start_private(gcsh_share *s, const char *control, char *root, size_t rlen, char *why,
                         size_t wlen)
{
    if (make_folder(root, rlen) != 0)
        return snprintf(why, wlen, "cannot make a folder under /tmp: %s", strerror(errno)), -1;
    char env_buf[2][320], out_path[300];
    snprintf(out_path, sizeof out_path, "%s/log/gcsh-start.txt", root);
    char **env = mps_environment(root, env_buf);
    int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    int rc = -1;
    if (!env || null_fd < 0 || start_watcher(s, root, control, env, null_fd) != 0) {
        snprintf(why, wlen, "cannot start its watcher: %s", strerror(errno));
        snprintf(out_path, sizeof out_path, "%s/log", root);
        rmdir(out_path);
        snprintf(out_path, sizeof out_path, "%s/pipe", root);
        rmdir(out_path);
        rmdir(root);
    } else if ((rc = start_daemon(root, control, env, out_path, why, wlen)) != 0) {
        release_watcher(s); /* it removes the folder */
    }
    if (null_fd >= 0)
        close(null_fd);
    free(env);
    return rc;
}

/* ---- the node's decision ---------------------------------------------------------- */

/* What the node's first rank decided, sent to the node's other ranks. */
typedef struct decision {
    char pipe_dir[256]; /* the private daemon's, or "" */
    char mps[256];      /* gcsh_share.mps */
} decision;

static void decide(gcsh_share *s, const char *backend, decision *d)
{
    const char *user_dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
    const char *dir = user_dir && *user_dir ? user_dir : MPS_DEFAULT_PIPE_DIR;
    int gpus = visible_gpus();
    char control[1024], why[256], root[64];
    if (s->mode == GCSH_SHARE_OFF)
        snprintf(d->mps, sizeof d->mps, "not asked for (one GPU per rank)");
    else if (backend && strcmp(backend, "host") == 0)
        snprintf(d->mps, sizeof d->mps, "not needed (--backend host)");
    else if (gpus == 0)
        snprintf(d->mps, sizeof d->mps, "not needed (no GPU here)");
    else if (gpus > 0 && s->node_size <= gpus)
        snprintf(d->mps, sizeof d->mps, "not needed (%d ranks, %d GPUs: none shared)",
                 s->node_size, gpus);
    else if (server_reachable(dir))
        snprintf(d->mps, sizeof d->mps, "a running MPS server (pipe directory %s)", dir);
    else if (s->mode == GCSH_SHARE_NOMPS)
        snprintf(d->mps, sizeof d->mps, "off (--share-gpu=nomps): ranks that share a GPU take "
                                        "turns on it (time-sliced)");
    else if (find_on_path(MPS_CONTROL, control, sizeof control) != 0)
        snprintf(d->mps, sizeof d->mps, "not started: %s is not on PATH; ranks that share a GPU "
                                        "take turns on it (time-sliced)", MPS_CONTROL);
    else if (start_private(s, control, root, sizeof root, why, sizeof why) != 0)
        snprintf(d->mps, sizeof d->mps, "could not start: %.170s; ranks that share a GPU take "
                                        "turns on it (time-sliced)", why);
    else {
        snprintf(d->pipe_dir, sizeof d->pipe_dir, "%s/pipe", root);
        snprintf(d->mps, sizeof d->mps, "private MPS daemon started by gcsh (%s)", root);
    }
}

void gcsh_share_start(gcsh_share *s, gcsh_share_mode mode, const char *backend)
{
    *s = (gcsh_share){.mode = mode, .node = MPI_COMM_NULL, .watcher_fd = -1};
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL,
                        &s->node);
    MPI_Comm_rank(s->node, &s->node_rank);
    MPI_Comm_size(s->node, &s->node_size);
    decision d = {{0}, {0}};
    if (s->node_rank == 0)
        decide(s, backend, &d);
    MPI_Bcast(&d, sizeof d, MPI_BYTE, 0, s->node);
    snprintf(s->mps, sizeof s->mps, "%s", d.mps);
    if (d.pipe_dir[0]) {
        s->mps_private = 1;
        setenv("CUDA_MPS_PIPE_DIRECTORY", d.pipe_dir, 1);
    }
    if (s->node_rank == 0 && strstr(d.mps, "time-sliced") && !strstr(d.mps, "nomps"))
        fprintf(stderr, "gcsh: MPS %s: a small kernel all-reduce then takes milliseconds, "
                        "not microseconds\n", d.mps);
}

void gcsh_share_stop(gcsh_share *s)
{
    if (s->node == MPI_COMM_NULL)
        return;
    MPI_Barrier(s->node); /* every rank of the node let go of the GPU */
    release_watcher(s);
    MPI_Comm_free(&s->node);
}
