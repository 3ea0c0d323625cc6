/* Which networks gcsh -n's job may use.  See launch_net.h. */
#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/gcsh.h"
#include "shell/launch_net.h"

/* What a one-machine job gets, in the order .info names them. */
static const struct local_param {
    const char *name;  /* the MCA parameter */
    const char *value;
    const char *label; /* in .info's text */
} local_params[] = {
    {"pml", "ob1", "pml"},
    {"btl", "self,vader", "btl"},
    {"oob_tcp_if_include", "lo", "oob"},
};

/* mpirun's options that put ranks on other machines (gcsh -n's own rows
 * and what --mpirun-args may carry). */
static const char *const host_options[] = {
    "--host", "-host", "-H", "--hostfile", "-hostfile", "--machinefile", "-machinefile",
    "--default-hostfile", "-default-hostfile",
};

static int is_one_of(const char *word, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(word, list[i]) == 0)
            return 1;
    return 0;
}

/* A host list ("a:2,b") names this machine only: localhost, a loopback
 * address or our own host name, each perhaps with ":slots". */
static int hosts_are_local(const char *list)
{
    char self[256] = {0};
    gethostname(self, sizeof self - 1);
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        size_t name = strcspn(p, ":,");
        if (name > n)
            name = n;
        int local = (name == strlen("localhost") && strncmp(p, "localhost", name) == 0) ||
                    (name == strlen(self) && strncmp(p, self, name) == 0) ||
                    (name >= 4 && strncmp(p, "127.", 4) == 0) ||
                    (name == 3 && strncmp(p, "::1", 3) == 0);
        if (!local)
            return 0;
        p += n;
        if (*p == ',')
            p++;
    }
    return 1;
}

/* What may put ranks on other machines ("--hostfile", "a batch
 * allocation"), or NULL when they all run here. */
static const char *other_machines(char *const *args, int n)
{
    for (int i = 0; i < n; i++) {
        if (!is_one_of(args[i], host_options, sizeof host_options / sizeof *host_options))
            continue;
        int list = strcmp(args[i], "--host") == 0 || strcmp(args[i], "-host") == 0 ||
                   strcmp(args[i], "-H") == 0;
        if (!list || i + 1 >= n || !hosts_are_local(args[i + 1]))
            return args[i];
    }
    if (getenv("OMPI_MCA_orte_default_hostfile") || getenv("OMPI_MCA_prte_default_hostfile"))
        return "a default host file";
    const char *slurm = getenv("SLURM_JOB_NUM_NODES");
    if ((slurm && atoi(slurm) > 1) || getenv("PBS_NODEFILE") || getenv("LSB_HOSTS"))
        return "a batch allocation";
    return NULL;
}

/* Where the user set MCA parameter name, or NULL: the environment, the
 * command line (--mca NAME VALUE), their own parameter file. */
static const char *user_set(const char *name, char *const *args, int n)
{
    char env[128];
    snprintf(env, sizeof env, "OMPI_MCA_%s", name);
    if (getenv(env))
        return "the environment";
    for (int i = 0; i + 1 < n; i++)
        if ((strcmp(args[i], "--mca") == 0 || strcmp(args[i], "-mca") == 0 ||
             strcmp(args[i], "--gmca") == 0 || strcmp(args[i], "-gmca") == 0) &&
            strcmp(args[i + 1], name) == 0)
            return "--mca";
    const char *home = getenv("HOME");
    char path[4096], line[1024];
    snprintf(path, sizeof path, "%s/.openmpi/mca-params.conf", home ? home : "");
    FILE *f = home ? fopen(path, "r") : NULL;
    const char *found = NULL;
    while (f && !found && fgets(line, sizeof line, f)) {
        const char *p = line + strspn(line, " \t");
        size_t k = strlen(name);
        if (strncmp(p, name, k) == 0 && strchr(" \t=", p[k]))
            found = "mca-params.conf";
    }
    if (f)
        fclose(f);
    return found;
}

/* The preload library for mpirun (src/preload/loopback.c), found once by
 * gcsh_launch_network: its path, or "" when mpirun is not to have it. */
static char preload_so[PATH_MAX];

/* gcsh-loopback.so beside the binary: the build tree (build/), then an
 * installed prefix (PREFIX/bin/gcsh: PREFIX/lib/gcsh). */
static int readable(const char *path)
{
    return access(path, R_OK) == 0;
}

static int find_preload(char *out, size_t len)
{
    static const char *const relative[] = {"gcsh-loopback.so", "../lib/gcsh/gcsh-loopback.so"};
    return gcsh_beside_binary(relative, sizeof relative / sizeof *relative, readable, out, len);
}

/* Whether a TCP socket of family af binds to its loopback address (an
 * IPv6 that this machine lacks altogether is no obstacle: nothing listens
 * on it then). */
static int loopback_binds(int af)
{
    int fd = socket(af, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return af == AF_INET6;
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    int rc = af == AF_INET ? bind(fd, (struct sockaddr *)&a4, sizeof a4)
                           : bind(fd, (struct sockaddr *)&a6, sizeof a6);
    close(fd);
    return rc == 0;
}

/* One machine, and the out-of-band channel left to gcsh: mpirun gets the
 * preload when it can work; says which in text. */
static void choose_preload(char *text, size_t len)
{
    const char *why = NULL;
    if (find_preload(preload_so, sizeof preload_so) != 0)
        why = "gcsh-loopback.so is not beside gcsh";
    else if (!loopback_binds(AF_INET))
        why = "127.0.0.1 cannot be bound";
    else if (!loopback_binds(AF_INET6))
        why = "::1 cannot be bound";
    if (why)
        preload_so[0] = '\0';
    size_t at = strlen(text);
    if (at < len)
        snprintf(text + at, len - at, "; mpirun listens %s%s%s",
                 why ? "on every address (" : "on loopback only", why ? why : "", why ? ")" : "");
}

void gcsh_launch_network_child(void)
{
    if (!preload_so[0])
        return;
    const char *theirs = getenv("LD_PRELOAD");
    char value[2 * PATH_MAX + 2];
    snprintf(value, sizeof value, "%s%s%s", preload_so, theirs && *theirs ? ":" : "",
             theirs ? theirs : "");
    setenv("LD_PRELOAD", value, 1);
    setenv(GCSH_LOOPBACK_SO_ENV, preload_so, 1);
}

int gcsh_launch_network(char *const *args, int n, char **out)
{
    char text[512];
    const char *why = other_machines(args, n);
    if (why) {
        snprintf(text, sizeof text, "machines from %s: Open MPI's choice of interfaces", why);
    } else {
        /* (asked before the loop below sets oob_tcp_if_include) */
        int oob_theirs = user_set("oob_tcp_if_include", args, n) ||
                         user_set("oob_tcp_if_exclude", args, n);
        int at = snprintf(text, sizeof text, "this machine only:");
        for (size_t i = 0; i < sizeof local_params / sizeof *local_params; i++) {
            const struct local_param *p = &local_params[i];
            const char *theirs = user_set(p->name, args, n);
            char env[128];
            snprintf(env, sizeof env, "OMPI_MCA_%s", p->name);
            if (!theirs)
                setenv(env, p->value, 1);
            if (at > 0 && (size_t)at < sizeof text)
                at += snprintf(text + at, sizeof text - (size_t)at, "%s %s %s%s%s",
                               i ? "," : "", p->label, theirs ? "as you set it" : p->value,
                               theirs ? " in " : "", theirs ? theirs : "");
        }
        /* the user's own choice of out-of-band interfaces stands */
        if (!oob_theirs)
            choose_preload(text, sizeof text);
    }
    setenv(GCSH_MPI_NETWORK_ENV, text, 1);
    out[0] = "-x";
    out[1] = GCSH_MPI_NETWORK_ENV;
    return 2;
}
