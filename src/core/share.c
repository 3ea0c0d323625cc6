/* GPUs shared by several ranks: the machine's ranks and the MPS daemon's
 * lifecycle.  See share.h. */
#include <dirent.h>
#include <ftw.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
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
 * (10 s at most) and removes the job's folder (kept with GCSH_MPS_KEEP set,
 * for reading the daemon's logs).  $1: the folder, $2: the
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
    "[ -n \"$GCSH_MPS_KEEP\" ] || rm -rf \"$1\"\n";

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

/* Removes a folder of ours and what is in it (no link is followed). */
static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void remove_folder(const char *root)
{
    nftw(root, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* Whether root is a folder of this user that no one else may enter: the
 * only kind whose pipe directory a rank will connect to. */
static int ours(const char *root)
{
    struct stat st;
    return lstat(root, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid() &&
           (st.st_mode & 077) == 0;
}

/* root with pipe/ and log/ (root is short: the control socket's path must
 * fit sockaddr_un).  A leftover of ours under the same name (a machine
 * that went down mid-job) is removed first; anyone else's is refused. */
static int make_folder(const char *root, char *why, size_t len)
{
    if (ours(root))
        remove_folder(root);
    else if (access(root, F_OK) == 0)
        return snprintf(why, len, "%s exists and is not this user's private folder", root), -1;
    char sub[300];
    snprintf(sub, sizeof sub, "%s/pipe", root);
    int ok = mkdir(root, 0700) == 0 && mkdir(sub, 0700) == 0;
    snprintf(sub, sizeof sub, "%s/log", root);
    if (ok && mkdir(sub, 0700) == 0)
        return 0;
    snprintf(why, len, "cannot make %s: %s", root, strerror(errno));
    remove_folder(root);
    return -1;
}

/* The verdict the other ranks of the machine wait for: "ok" or the reason
 * the daemon did not start, written whole (a rename) into root/verdict. */
static void write_verdict(const char *root, const char *text)
{
    char tmp[300], path[300];
    snprintf(tmp, sizeof tmp, "%s/verdict.tmp", root);
    snprintf(path, sizeof path, "%s/verdict", root);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    int ok = fprintf(f, "%s\n", text) > 0;
    ok &= fclose(f) == 0;
    if (ok)
        rename(tmp, path);
}

/* The node's first rank: a private daemon in root (share.h), watched from
 * before it starts; the verdict is written either way (the watcher removes
 * the folder when the job ends). */
static int start_private(gcsh_share *s, const char *control, const char *root, char *why,
                         size_t wlen)
{
    if (make_folder(root, why, wlen) != 0)
        return -1;
    char env_buf[2][320], out_path[300];
    snprintf(out_path, sizeof out_path, "%s/log/gcsh-start.txt", root);
    char **env = mps_environment(root, env_buf);
    int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    int rc = -1;
    if (!env || null_fd < 0 || start_watcher(s, root, control, env, null_fd) != 0) {
        snprintf(why, wlen, "cannot start its watcher: %s", strerror(errno));
        remove_folder(root);
    } else {
        rc = start_daemon(root, control, env, out_path, why, wlen);
        write_verdict(root, rc == 0 ? "ok" : why);
    }
    if (null_fd >= 0)
        close(null_fd);
    free(env);
    return rc;
}

/* The other ranks of the machine: the first rank's verdict (20 s at most),
 * from a folder that is this user's own.  0 when the daemon runs. */
static int await_verdict(const char *root, char *why, size_t len)
{
    char path[300];
    snprintf(path, sizeof path, "%s/verdict", root);
    for (int i = 0; i < 2000; i++) {
        FILE *f = ours(root) ? fopen(path, "r") : NULL;
        if (f) {
            char line[256] = "";
            if (!fgets(line, sizeof line, f))
                line[0] = '\0';
            fclose(f);
            line[strcspn(line, "\n")] = '\0';
            if (strcmp(line, "ok") == 0)
                return 0;
            return snprintf(why, len, "%s", line), -1;
        }
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    return snprintf(why, len, "the machine's first rank gave no verdict in 20 s"), -1;
}

/* ---- the machine's decision, before MPI_Init ----------------------------------- */

/* This rank's place on its machine, from the launcher's environment (MPI
 * is not up yet); -1 when the launcher does not say. */
static int launcher_local(int *rank, int *size)
{
    static const char *const names[][2] = {
        {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"}, /* Open MPI */
        {"MPI_LOCALRANKID", "MPI_LOCALNRANKS"},                       /* MPICH (Hydra) */
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *r = getenv(names[i][0]), *n = getenv(names[i][1]);
        if (r && n && *r && *n) {
            *rank = atoi(r);
            *size = atoi(n);
            return 0;
        }
    }
    *rank = 0;
    *size = 1;
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK") ? -1 : 0;
}

/* The job's key, the same on every rank of the job and different between
 * jobs: GCSH_SHARE_KEY (gcsh -n sets it), else a hash of what the launcher
 * names the job by.  -1 when nothing names it. */
static int job_key(char *out, size_t len)
{
    static const char *const names[] = {"GCSH_SHARE_KEY", "PMIX_NAMESPACE",
                                        "OMPI_MCA_ess_base_jobid", "PMI_KVSNAME", "PMI_JOBID",
                                        "SLURM_JOB_ID", "SLURM_STEP_ID"};
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    int any = 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *v = getenv(names[i]);
        if (!v || !*v)
            continue;
        any = 1;
        for (const char *p = v; *p; p++)
            h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
        h = (h ^ ';') * 0x100000001b3ull;
    }
    snprintf(out, len, "%016llx", (unsigned long long)h);
    return any ? 0 : -1;
}

/* The job's folder on this machine: /tmp/gcsh-mps-UID-KEY. */
static int job_folder(char *root, size_t len)
{
    char key[32];
    if (job_key(key, sizeof key) != 0)
        return -1;
    snprintf(root, len, "/tmp/gcsh-mps-%u-%s", (unsigned)getuid(), key);
    return 0;
}

/* Everything every rank of the machine decides alike: why no daemon is
 * started (into mps, returning 0), or 1 when one must be (control names
 * the program). */
static int needs_daemon(gcsh_share *s, const char *backend, char *control, size_t clen)
{
    const char *user_dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
    const char *dir = user_dir && *user_dir ? user_dir : MPS_DEFAULT_PIPE_DIR;
    int gpus = visible_gpus();
    const char *sliced = "ranks that share a GPU take turns on it (time-sliced)";
    if (s->mode == GCSH_SHARE_OFF)
        snprintf(s->mps, sizeof s->mps, "not asked for (one GPU per rank)");
    else if (backend && strcmp(backend, "host") == 0)
        snprintf(s->mps, sizeof s->mps, "not needed (--backend host)");
    else if (gpus == 0)
        snprintf(s->mps, sizeof s->mps, "not needed (no GPU here)");
    else if (gpus > 0 && s->node_size <= gpus)
        snprintf(s->mps, sizeof s->mps, "not needed (%d rank%s, %d GPUs: none shared)",
                 s->node_size, s->node_size == 1 ? "" : "s", gpus);
    else if (server_reachable(dir))
        snprintf(s->mps, sizeof s->mps, "a running MPS server (pipe directory %.180s)", dir);
    else if (s->mode == GCSH_SHARE_NOMPS)
        snprintf(s->mps, sizeof s->mps, "off (--share-gpu=nomps): %s", sliced);
    else if (find_on_path(MPS_CONTROL, control, clen) != 0)
        snprintf(s->mps, sizeof s->mps, "not started: %s is not on PATH; %s", MPS_CONTROL, sliced);
    else
        return 1;
    return 0;
}

/* The machine's first rank says once when ranks will take turns on a GPU
 * although MPS was asked for. */
static void say_if_sliced(const gcsh_share *s)
{
    if (s->node_rank == 0 && s->mode == GCSH_SHARE_MPS && strstr(s->mps, "time-sliced"))
        fprintf(stderr, "gcsh: MPS %s: a small kernel all-reduce then takes milliseconds, "
                        "not microseconds\n", s->mps);
}

void gcsh_share_prepare(gcsh_share *s, gcsh_share_mode mode, const char *backend)
{
    *s = (gcsh_share){.mode = mode, .node = MPI_COMM_NULL, .watcher_fd = -1};
    char control[1024], root[96], why[256];
    int known = launcher_local(&s->node_rank, &s->node_size) == 0;
    if (!needs_daemon(s, backend, control, sizeof control)) {
        say_if_sliced(s);
        return;
    }
    int rc = -1;
    if (!known || job_folder(root, sizeof root) != 0)
        snprintf(why, sizeof why, "the launcher does not say which ranks share this machine "
                                  "(use gcsh -n, or Open MPI's or MPICH's mpirun)");
    else if (s->node_rank == 0)
        rc = start_private(s, control, root, why, sizeof why);
    else
        rc = await_verdict(root, why, sizeof why);
    if (rc == 0) {
        char pipe_dir[128];
        snprintf(pipe_dir, sizeof pipe_dir, "%s/pipe", root);
        setenv("CUDA_MPS_PIPE_DIRECTORY", pipe_dir, 1);
        s->mps_private = 1;
        snprintf(s->mps, sizeof s->mps, "private MPS daemon started by gcsh (%s)", root);
        return;
    }
    snprintf(s->mps, sizeof s->mps, "could not start: %.170s; ranks that share a GPU take "
                                    "turns on it (time-sliced)", why);
    say_if_sliced(s);
}

void gcsh_share_start(gcsh_share *s)
{
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL,
                        &s->node);
    MPI_Comm_rank(s->node, &s->node_rank);
    MPI_Comm_size(s->node, &s->node_size);
    /* the first rank's words for every rank of the machine */
    MPI_Bcast(s->mps, sizeof s->mps, MPI_CHAR, 0, s->node);
}

void gcsh_share_stop(gcsh_share *s)
{
    /* no wait: the watcher's quit lasts until this process, an MPS client,
     * is gone (gcsh -n waits for the folder to go, gcsh_share_wait_gone) */
    if (s->watcher_fd >= 0)
        close(s->watcher_fd);
    s->watcher_fd = -1;
    if (s->node != MPI_COMM_NULL)
        MPI_Comm_free(&s->node);
}

void gcsh_share_new_key(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
        v = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)time(NULL);
    char key[32];
    snprintf(key, sizeof key, "%016llx", (unsigned long long)v);
    setenv("GCSH_SHARE_KEY", key, 1);
}

void gcsh_share_wait_gone(void)
{
    char root[96];
    const char *keep = getenv("GCSH_MPS_KEEP");
    if ((keep && *keep) || job_folder(root, sizeof root) != 0)
        return;
    for (int i = 0; i < 1000 && access(root, F_OK) == 0; i++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
}
