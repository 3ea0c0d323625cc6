/* gcsh-loopback.so: preloaded into mpirun alone by gcsh -n when every rank
 * runs on this machine (shell/launch_net.h).  Open MPI 4's mpirun binds its
 * out-of-band listener to every address (INADDR_ANY, in6addr_any) whatever
 * oob_tcp_if_include says; here a bind() of a TCP socket to a wildcard
 * address binds the loopback one of its family instead (127.0.0.1, ::1),
 * so nothing of the job listens beyond the machine.
 *
 * It leaves no trace in the ranks: loaded into mpirun (a program named
 * mpirun*, mpiexec*, orterun* or prterun*), it takes itself out of
 * LD_PRELOAD (keeping what the user preloaded) and removes
 * GCSH_LOOPBACK_SO, the path gcsh -n put there, before mpirun starts
 * anything.  In anything else (a wrapper script that GCSH_MPIRUN names:
 * its shell) it stays in the environment, so the mpirun the wrapper runs
 * gets it; a rank that gets it all the same (a launcher named otherwise)
 * takes it out for its own children, and loopback binds are harmless there:
 * every rank is on this machine.  Not part of gcsh's binary: no gcsh
 * header, libc only. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define MARK_ENV "GCSH_LOOPBACK_SO"

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

static int is_tcp(int fd)
{
    int type = 0;
    socklen_t len = sizeof type;
    return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
}

int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
    static bind_fn real_bind;
    if (!real_bind) {
        void *f = dlsym(RTLD_NEXT, "bind");
        memcpy(&real_bind, &f, sizeof f);
    }
    if (!real_bind) {
        errno = ENOSYS;
        return -1;
    }
    if (addr && addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in) && is_tcp(fd)) {
        struct sockaddr_in a;
        memcpy(&a, addr, sizeof a);
        if (a.sin_addr.s_addr == htonl(INADDR_ANY)) {
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            return real_bind(fd, (const struct sockaddr *)&a, sizeof a);
        }
    } else if (addr && addr->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6) &&
               is_tcp(fd)) {
        struct sockaddr_in6 a;
        memcpy(&a, addr, sizeof a);
        if (IN6_IS_ADDR_UNSPECIFIED(&a.sin6_addr)) {
            a.sin6_addr = in6addr_loopback;
            return real_bind(fd, (const struct sockaddr *)&a, sizeof a);
        }
    }
    return real_bind(fd, addr, len);
}

/* Whether this process is the launcher (or gcsh), which takes the library
 * out of what its children get. */
static int strips(void)
{
    static const char *const names[] = {"mpirun", "mpiexec", "orterun", "prterun", "gcsh"};
    const char *self = program_invocation_short_name;
    for (size_t i = 0; self && i < sizeof names / sizeof *names; i++)
        if (strncmp(self, names[i], strlen(names[i])) == 0)
            return 1;
    return 0;
}

/* LD_PRELOAD without the entry `mine` (entries are separated by colons or
 * blanks, as ld.so reads them). */
__attribute__((constructor)) static void leave_no_trace(void)
{
    const char *mine = getenv(MARK_ENV), *pre = getenv("LD_PRELOAD");
    if (!mine || !*mine || !pre || !strips())
        return;
    size_t n = strlen(pre), k = strlen(mine);
    char *rest = malloc(n + 1);
    if (!rest)
        return;
    size_t at = 0;
    for (const char *p = pre; *p;) {
        size_t w = strcspn(p, ": \t");
        if (w && !(w == k && strncmp(p, mine, k) == 0)) {
            if (at)
                rest[at++] = ':';
            memcpy(rest + at, p, w);
            at += w;
        }
        p += w;
        p += strspn(p, ": \t");
    }
    rest[at] = '\0';
    if (at)
        setenv("LD_PRELOAD", rest, 1);
    else
        unsetenv("LD_PRELOAD");
    unsetenv(MARK_ENV);
    free(rest);
}
