/* Files written whole, beside their target, then renamed.  See safefile.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/safefile.h"

static const char *kind_of(mode_t m)
{
    return S_ISDIR(m)    ? "a folder"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISSOCK(m) ? "a socket"
                         : "not a regular file";
}

/* The folder of path ("." when it names none) and its last part. */
static void split_path(const char *path, char *dir, size_t dlen, const char **base)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, dlen, ".");
        *base = path;
    } else if (slash == path) {
        snprintf(dir, dlen, "/");
        *base = slash + 1;
    } else {
        snprintf(dir, dlen, "%.*s", (int)(slash - path), path);
        *base = slash + 1;
    }
}

int gcsh_file_check(const char *path, char *err, size_t elen)
{
    struct stat st;
    if (!path || !path[0]) {
        snprintf(err, elen, "cannot write a file with an empty name");
        return -1;
    }
    if (lstat(path, &st) == 0) {
        if (S_ISLNK(st.st_mode)) {
            char to[PATH_MAX] = "";
            ssize_t n = readlink(path, to, sizeof to - 1);
            to[n > 0 ? n : 0] = '\0';
            snprintf(err, elen, "cannot write %s: it is a symbolic link (to %s); gcsh does not "
                                "write through links: name the file itself", path, to);
            return -1;
        }
        if (!S_ISREG(st.st_mode)) {
            snprintf(err, elen, "cannot write %s: it is %s; gcsh writes only regular files",
                     path, kind_of(st.st_mode));
            return -1;
        }
        return 0;
    }
    if (errno != ENOENT) {
        snprintf(err, elen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    char dir[PATH_MAX];
    const char *base;
    split_path(path, dir, sizeof dir, &base);
    int bad = stat(dir, &st) != 0 ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : 0;
    if (bad) {
        snprintf(err, elen, "cannot write %s: %s", path, strerror(bad));
        return -1;
    }
    if (!base[0]) {
        snprintf(err, elen, "cannot write %s: it names a folder, not a file", path);
        return -1;
    }
    return 0;
}

/* 0666 less this process's umask, read without changing it (umask(2) would
 * change it for every thread while it is read). */
static int new_file_mode(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[128];
    unsigned mask = 022;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Umask: %o", &mask) == 1)
            break;
    if (f)
        fclose(f);
    return 0666 & ~(int)mask;
}

int gcsh_file_open(gcsh_file *w, const char *path, char *err, size_t elen)
{
    *w = (gcsh_file){0};
    if (gcsh_file_check(path, err, elen) != 0)
        return -1;
    char dir[PATH_MAX];
    const char *base;
    split_path(path, dir, sizeof dir, &base);
    struct stat st;
    int mode = stat(path, &st) == 0 ? (int)(st.st_mode & 07777) : new_file_mode();
    size_t tlen = strlen(dir) + strlen(base) + 16;
    char *tmp = malloc(tlen);
    snprintf(tmp, tlen, "%s/.%s.XXXXXX", dir, base);
    int fd = mkostemp(tmp, O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        snprintf(err, elen, "cannot write %s: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        free(tmp);
        return -1;
    }
    fchmod(fd, (mode_t)mode);
    *w = (gcsh_file){.f = f, .path = strdup(path), .tmp = tmp, .mode = mode};
    return 0;
}

int gcsh_file_write(gcsh_file *w, const void *data, size_t n)
{
    if (w->err)
        return -1;
    if (n && fwrite(data, 1, n, w->f) != n) {
        w->err = errno ? errno : EIO;
        return -1;
    }
    return 0;
}

int gcsh_file_printf(gcsh_file *w, const char *fmt, ...)
{
    if (w->err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    int n = vfprintf(w->f, fmt, ap);
    va_end(ap);
    if (n < 0) {
        w->err = errno ? errno : EIO;
        return -1;
    }
    return 0;
}

int gcsh_file_flush(gcsh_file *w)
{
    if (!w->err && fflush(w->f) != 0)
        w->err = errno ? errno : EIO;
    return w->err ? -1 : 0;
}

static void release(gcsh_file *w)
{
    free(w->path);
    free(w->tmp);
    *w = (gcsh_file){0};
}

int gcsh_file_commit(gcsh_file *w, char *err, size_t elen)
{
    gcsh_file_flush(w);
    if (!w->err && ferror(w->f))
        w->err = EIO;
    if (fclose(w->f) != 0 && !w->err)
        w->err = errno ? errno : EIO;
    w->f = NULL;
    if (!w->err && rename(w->tmp, w->path) != 0)
        w->err = errno;
    int rc = w->err ? -1 : 0;
    if (rc != 0) {
        snprintf(err, elen, "cannot write %s: %s", w->path, strerror(w->err));
        unlink(w->tmp);
    }
    release(w);
    return rc;
}

void gcsh_file_discard(gcsh_file *w)
{
    if (!w->tmp)
        return;
    if (w->f)
        fclose(w->f);
    unlink(w->tmp);
    release(w);
}

int gcsh_file_write_all(const char *path, const void *data, size_t n, char *err, size_t elen)
{
    gcsh_file w;
    if (gcsh_file_open(&w, path, err, elen) != 0)
        return -1;
    gcsh_file_write(&w, data, n);
    return gcsh_file_commit(&w, err, elen);
}
