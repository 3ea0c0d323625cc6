/* gcsh's own folder.  See private.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/private.h"

#define ADVICE "set GCSH_STATE_DIR to a folder of yours"

void gcsh_random_hex(char out[17])
{
    unsigned char b[8];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
        /* no getrandom (an old kernel): still different per call and process */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        static _Atomic unsigned long calls;
        unsigned long long v = (unsigned long long)ts.tv_nsec ^ ((unsigned long long)getpid() << 32) ^
                               (unsigned long long)++calls * 0x9e3779b97f4a7c15ull;
        memcpy(b, &v, sizeof b);
    }
    for (int i = 0; i < 8; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* Where the folder is (not yet checked): 0, or -1 with why in err. */
static int folder_name(char *buf, size_t len, char *err, size_t elen)
{
    const char *state = getenv("GCSH_STATE_DIR"), *run = getenv("XDG_RUNTIME_DIR");
    const char *cache = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (state && *state)
        n = snprintf(buf, len, "%s", state);
    else if (run && *run == '/')
        n = snprintf(buf, len, "%s/gcsh", run);
    else if (cache && *cache == '/')
        n = snprintf(buf, len, "%s/gcsh", cache);
    else if (home && *home)
        n = snprintf(buf, len, "%s/.cache/gcsh", home);
    else {
        snprintf(err, elen, "gcsh has no folder for its own files: neither XDG_RUNTIME_DIR nor "
                            "HOME is set (" ADVICE ")");
        return -1;
    }
    if (n < 0 || (size_t)n >= len) {
        snprintf(err, elen, "gcsh's folder: the name is too long (" ADVICE ")");
        return -1;
    }
    return 0;
}

/* mkdir -p, each folder made 0700 (the umask cannot open it wider, and a
 * strict one cannot lock gcsh out of a folder it just made). */
static void make_folders(const char *dir)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = strchr(p + 1, '/');; s = strchr(s + 1, '/')) {
        if (s)
            *s = '\0';
        if (mkdir(p, 0700) == 0)
            chmod(p, 0700);
        if (!s)
            return;
        *s = '/';
    }
}

void gcsh_owner_name(unsigned uid, char *buf, size_t len)
{
    struct passwd pw, *found = NULL;
    char tmp[1024];
    if (getpwuid_r((uid_t)uid, &pw, tmp, sizeof tmp, &found) == 0 && found)
        snprintf(buf, len, "%s (uid %u)", found->pw_name, uid);
    else
        snprintf(buf, len, "uid %u", uid);
}

/* Whether dir is a folder of ours that nobody else can open. */
static int check_folder(const char *dir, char *err, size_t elen)
{
    struct stat st;
    char who[300];
    if (lstat(dir, &st) != 0)
        snprintf(err, elen, "gcsh's folder %s: %s (" ADVICE ")", dir, strerror(errno));
    else if (S_ISLNK(st.st_mode))
        snprintf(err, elen, "gcsh's folder %s is a symbolic link: gcsh keeps its files only in a "
                            "folder of its own (" ADVICE ")", dir);
    else if (!S_ISDIR(st.st_mode))
        snprintf(err, elen, "gcsh's folder %s is not a folder (" ADVICE ")", dir);
    else if (st.st_uid != geteuid()) {
        gcsh_owner_name(st.st_uid, who, sizeof who);
        snprintf(err, elen, "gcsh's folder %s belongs to %s: gcsh keeps its files only in a "
                            "folder of yours (" ADVICE ")", dir, who);
    } else if (st.st_mode & 077)
        snprintf(err, elen, "gcsh's folder %s is open to others (mode %04o): gcsh keeps its files "
                            "only in a 0700 folder (chmod 700 it, or " ADVICE ")",
                 dir, (unsigned)(st.st_mode & 07777));
    else
        return 0;
    return -1;
}

int gcsh_private_dir(char *buf, size_t len, char *err, size_t elen)
{
    if (folder_name(buf, len, err, elen) != 0)
        return -1;
    struct stat st;
    if (lstat(buf, &st) != 0 && errno == ENOENT)
        make_folders(buf);
    return check_folder(buf, err, elen);
}

int gcsh_private_path(char *buf, size_t len, const char *prefix, const char *suffix, char *err,
                      size_t elen)
{
    char dir[PATH_MAX], rnd[17];
    if (gcsh_private_dir(dir, sizeof dir, err, elen) != 0)
        return -1;
    gcsh_random_hex(rnd);
    int n = snprintf(buf, len, "%s/%s-%d-%s.%s", dir, prefix, (int)getpid(), rnd, suffix);
    if (n < 0 || (size_t)n >= len) {
        snprintf(err, elen, "gcsh's folder %s: the name is too long (" ADVICE ")", dir);
        return -1;
    }
    return 0;
}

typedef struct dated {
    char *name;
    struct timespec mtime;
} dated;

static int newest_first(const void *a, const void *b)
{
    const dated *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? 1 : -1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec)
        return x->mtime.tv_nsec < y->mtime.tv_nsec ? 1 : -1;
    return strcmp(y->name, x->name);
}

/* Whether name is PREFIX-*.SUFFIX. */
static int named_like(const char *name, const char *prefix, const char *suffix)
{
    size_t n = strlen(name), p = strlen(prefix), s = strlen(suffix);
    return n > p + s + 2 && strncmp(name, prefix, p) == 0 && name[p] == '-' &&
           name[n - s - 1] == '.' && strcmp(name + n - s, suffix) == 0;
}

int gcsh_private_prune(const char *prefix, const char *suffix, int keep)
{
    char dir[PATH_MAX], err[PATH_MAX + 200];
    if (gcsh_private_dir(dir, sizeof dir, err, sizeof err) != 0)
        return 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    dated *files = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        struct stat st;
        if (!named_like(e->d_name, prefix, suffix) ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (n == cap)
            files = realloc(files, (cap = 2 * cap + 32) * sizeof *files);
        files[n++] = (dated){strdup(e->d_name), st.st_mtim};
    }
    qsort(files, n, sizeof *files, newest_first);
    int removed = 0;
    for (size_t i = 0; i < n; i++) {
        if (i >= (size_t)keep && unlinkat(dirfd(d), files[i].name, 0) == 0)
            removed++;
        free(files[i].name);
    }
    free(files);
    closedir(d);
    return removed;
}
