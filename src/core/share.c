/* GPUs shared by several ranks: the machine's ranks and the MPS daemon's
 * lifecycle.  See share.h. */
#include <dirent.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "core/mps.h"
#include "core/share.h"

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

/* ---- the machine's decision, before MPI_Init ----------------------------------- */

/* This rank's place on its machine, from the launcher's environment (MPI
 * is not up yet); -1 when the launcher does not say. */
static int launcher_local(int *rank, int *size)
{
    static const char *const names[][2] = {
        {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"}, /* Open MPI */
        {"MPI_LOCALRANKID", "MPI_LOCALNRANKS"},                       /* MPICH (Hydra) */
        {"MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE"},   /* MVAPICH */
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
    return -1;
}

/* Whether this process was started by a launcher at all (else it is one
 * rank alone, and shares nothing). */
static int launched(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                                        "SLURM_PROCID", "MV2_COMM_WORLD_SIZE"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (getenv(names[i]))
            return 1;
    return 0;
}

/* The job's key, the same on every rank of the job and different between
 * jobs: the first of GCSH_SHARE_KEY (gcsh -n sets it, and its launcher
 * computes the same) and what the launcher names the job by, hashed. */
static int job_key(char *out, size_t len)
{
    static const char *const names[] = {"GCSH_SHARE_KEY", "PMIX_NAMESPACE",
                                        "OMPI_MCA_ess_base_jobid", "PMI_KVSNAME", "PMI_JOBID",
                                        "SLURM_JOB_ID"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *v = getenv(names[i]);
        if (!v || !*v)
            continue;
        uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a of the name and the value */
        for (const char *p = names[i]; *p; p++)
            h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
        for (const char *p = v; *p; p++)
            h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
        snprintf(out, len, "%016llx", (unsigned long long)h);
        return 0;
    }
    return -1;
}

/* The job's folder on this machine: /tmp/gcsh-mps-UID-KEY (short: the
 * control socket's path must fit sockaddr_un). */
static int job_folder(char *root, size_t len)
{
    char key[32];
    if (job_key(key, sizeof key) != 0)
        return -1;
    snprintf(root, len, "/tmp/gcsh-mps-%u-%s", (unsigned)getuid(), key);
    return 0;
}

static const char sliced[] = "ranks that share a GPU take turns on it (time-sliced)";

/* What every rank of the machine decides alike, from its environment: why
 * no daemon is wanted (into mps, returning 0), or 1 when the first rank
 * must decide (see share.h). */
static int wanted(gcsh_share *s, const char *backend, int known, int gpus)
{
    if (s->mode == GCSH_SHARE_OFF)
        snprintf(s->mps, sizeof s->mps, "not asked for (one GPU per rank)");
    else if (backend && strcmp(backend, "host") == 0)
        snprintf(s->mps, sizeof s->mps, "not needed (--backend host)");
    else if (gpus == 0)
        snprintf(s->mps, sizeof s->mps, "not needed (no GPU here)");
    else if (s->mode == GCSH_SHARE_NOMPS)
        snprintf(s->mps, sizeof s->mps, "off (--share-gpu=nomps): %s", sliced);
    else if (!known && launched())
        snprintf(s->mps, sizeof s->mps, "not started: the launcher does not say which ranks "
                                        "share this machine (gcsh -n, Open MPI, MPICH and "
                                        "MVAPICH do); %s", sliced);
    else if (!known || (gpus > 0 && s->node_size <= gpus))
        snprintf(s->mps, sizeof s->mps, "not needed (%d rank%s, %d GPU%s: none shared)",
                 s->node_size, s->node_size == 1 ? "" : "s", gpus, gpus == 1 ? "" : "s");
    else
        return 1;
    return 0;
}

/* The machine's first rank: a server that answers already, else a private
 * daemon in root; the verdict for the others either way.  The pipe
 * directory to use into pipe_dir ("" for none). */
static void first_rank_decides(gcsh_share *s, const char *root, char *pipe_dir, size_t len)
{
    const char *user = getenv("CUDA_MPS_PIPE_DIRECTORY");
    const char *dir = user && *user ? user : "/tmp/nvidia-mps"; /* CUDA's default */
    char control[1024], why[256];
    pipe_dir[0] = '\0';
    if (gcsh_mps_find_control(control, sizeof control) != 0)
        snprintf(control, sizeof control, "nvidia-cuda-mps-control");
    if (gcsh_mps_open(root, control, &s->guard_fd, why, sizeof why) != 0) {
        snprintf(s->mps, sizeof s->mps, "could not start: %.170s; %s", why, sliced);
    } else if (gcsh_mps_reachable(dir)) {
        snprintf(pipe_dir, len, "%s", dir);
        snprintf(s->mps, sizeof s->mps, "a running MPS server (pipe directory %.180s)", dir);
    } else if (access(control, X_OK) != 0) {
        snprintf(s->mps, sizeof s->mps, "not started: nvidia-cuda-mps-control is not on PATH; %s",
                 sliced);
    } else if (gcsh_mps_start(root, control, why, sizeof why) != 0) {
        snprintf(s->mps, sizeof s->mps, "could not start: %.170s; %s", why, sliced);
    } else {
        snprintf(pipe_dir, len, "%s/pipe", root);
        snprintf(s->mps, sizeof s->mps, "private MPS daemon started by gcsh (%s)", root);
    }
    if (s->guard_fd >= 0)
        gcsh_mps_publish(root, pipe_dir);
}

/* The machine's first rank says once when ranks will take turns on a GPU
 * although MPS was asked for. */
static void say_if_sliced(const gcsh_share *s)
{
    if (s->node_rank == 0 && s->mode == GCSH_SHARE_MPS && strstr(s->mps, "time-sliced"))
        fprintf(stderr, "gcsh: MPS %s: a small kernel all-reduce then takes milliseconds, "
                        "not microseconds\n", s->mps);
}

/* NCCL refuses two ranks of one host on one GPU, so the ranks of round k
 * (one rank per GPU) are NCCL host "ID.gcshK", where ID is the user's
 * NCCL_HOSTID or this machine's own (host name and boot id, as NCCL's
 * default: machines may share a host name).  Set before MPI starts its
 * threads (setenv is not safe beside a getenv). */
static void set_nccl_host(gcsh_share *s, int gpus)
{
    const char *user = getenv("NCCL_HOSTID");
    char id[160], host[64] = "", boot[64] = "";
    if (user && *user) {
        snprintf(id, sizeof id, "%.100s", user);
    } else {
        gethostname(host, sizeof host - 1);
        FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
        if (f && fgets(boot, sizeof boot, f))
            boot[strcspn(boot, "\n")] = '\0';
        if (f)
            fclose(f);
        snprintf(id, sizeof id, "%s%s%s", host, boot[0] ? "-" : "", boot);
    }
    s->round_gpus = gpus;
    char value[200];
    snprintf(value, sizeof value, "%s.gcsh%d", id, s->node_rank / gpus);
    setenv("NCCL_HOSTID", value, 1);
}

void gcsh_share_prepare(gcsh_share *s, gcsh_share_mode mode, const char *backend)
{
    *s = (gcsh_share){.mode = mode, .node = MPI_COMM_NULL, .guard_fd = -1};
    int known = launcher_local(&s->node_rank, &s->node_size) == 0;
    int gpus = visible_gpus();
    if (mode != GCSH_SHARE_OFF && known && gpus > 0 && s->node_size > gpus)
        set_nccl_host(s, gpus);
    char root[96], pipe_dir[256] = "", why[256];
    if (!wanted(s, backend, known, gpus)) {
        say_if_sliced(s);
        return;
    }
    if (job_folder(root, sizeof root) != 0)
        snprintf(s->mps, sizeof s->mps, "not started: the launcher names no job; %s", sliced);
    else if (s->node_rank == 0)
        first_rank_decides(s, root, pipe_dir, sizeof pipe_dir);
    else if (gcsh_mps_await(root, pipe_dir, sizeof pipe_dir, why, sizeof why) != 0)
        snprintf(s->mps, sizeof s->mps, "could not start: %.170s; %s", why, sliced);
    if (pipe_dir[0])
        setenv("CUDA_MPS_PIPE_DIRECTORY", pipe_dir, 1);
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
    /* no wait: the guard's quit lasts until this process, an MPS client,
     * is gone (gcsh -n waits for the folder to go, gcsh_share_wait_gone) */
    if (s->guard_fd >= 0)
        close(s->guard_fd);
    s->guard_fd = -1;
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
    char root[96], done[160];
    const char *keep = getenv("GCSH_MPS_KEEP");
    if (job_folder(root, sizeof root) != 0)
        return;
    /* kept (GCSH_MPS_KEEP): the guard marks it done once the daemon quit */
    snprintf(done, sizeof done, "%s/" MPS_GUARD_DONE, root);
    int kept = keep && *keep;
    for (int i = 0; i < 4000; i++) { /* the guard's 30 s and more */
        if (kept ? access(done, F_OK) == 0 || access(root, F_OK) != 0 : access(root, F_OK) != 0)
            return;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
}
