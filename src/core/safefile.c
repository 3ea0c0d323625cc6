/* Files written whole, beside their target, then renamed.  See safefile.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/private.h"
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

/* An existing target: a regular file of this user's, or why not. */
static int check_existing(const char *path, const struct stat *st, char *err, size_t elen)
{
    if (S_ISLNK(st->st_mode)) {
        char to[PATH_MAX] = "";
        ssize_t n = readlink(path, to, sizeof to - 1);
        to[n > 0 ? n : 0] = '\0';
        snprintf(err, elen, "cannot write %s: it is a symbolic link (to %s); gcsh does not "
                            "write through links: name the file itself", path, to);
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        snprintf(err, elen, "cannot write %s: it is %s; gcsh writes only regular files", path,
                 kind_of(st->st_mode));
        return -1;
    }
    if (st->st_uid != geteuid()) { /* root too: never over a file someone else planted */
        char who[300];
        gcsh_owner_name(st->st_uid, who, sizeof who);
        snprintf(err, elen, "cannot write %s: it belongs to %s; gcsh replaces only files of "
                            "yours (remove it, or write to another name)", path, who);
        return -1;
    }
    return 0;
}

int gcsh_file_check(const char *path, char *err, size_t elen)
{
    struct stat st;
    if (!path || !path[0]) {
        snprintf(err, elen, "cannot write a file with an empty name");
        return -1;
    }
    if (lstat(path, &st) == 0)
        return check_existing(path, &st, err, elen);
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

/* ---- notes of unfinished writes ------------------------------------------------------
 * While a temporary exists, a note in gcsh's folder (private.h) names it,
 * locked (flock) by the writer: a note nobody holds is a writer that was
 * killed, and gcsh_file_leftovers finds its temporary at the next start. */

#define NOTE_PREFIX ".writing-"

/* Writes the note (before the temporary exists, so that none goes
 * unnoted); its descriptor and name go into w.  Nothing when gcsh's folder
 * is refused: the write goes on, unnoted. */
static void note_open(gcsh_file *w, const char *tmp_abs, const char *target)
{
    char dir[PATH_MAX], err[PATH_MAX + 200], rnd[17];
    w->note_fd = -1;
    if (gcsh_private_dir(dir, sizeof dir, err, sizeof err) != 0)
        return;
    gcsh_random_hex(rnd);
    size_t len = strlen(dir) + sizeof NOTE_PREFIX + sizeof rnd + 2;
    char *note = malloc(len);
    snprintf(note, len, "%s/" NOTE_PREFIX "%s", dir, rnd);
    int fd = open(note, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) {
        if (fd >= 0) {
            close(fd);
            unlink(note);
        }
        free(note);
        return;
    }
    dprintf(fd, "%s\n%s\n%s\n", w->private_file ? "remove" : "keep", tmp_abs, target);
    w->note_fd = fd;
    w->note = note;
}

static void note_close(gcsh_file *w)
{
    if (w->note) {
        unlink(w->note);
        close(w->note_fd);
        free(w->note);
    }
    w->note = NULL;
    w->note_fd = -1;
}

/* The folder's absolute name, for the note (the next start may run
 * elsewhere). */
static void absolute_dir(const char *dir, char *out, size_t len)
{
    char *real = realpath(dir, NULL);
    snprintf(out, len, "%s", real ? real : dir);
    free(real);
}

/* Creates the temporary beside the target: an unpredictable name, O_EXCL
 * and O_NOFOLLOW (nothing planted at it is opened), mode 0600 while it is
 * written.  The descriptor, or -1 with errno set. */
static int create_temporary(gcsh_file *w, const char *dir, const char *base, const char *path)
{
    char adir[PATH_MAX], rnd[17];
    absolute_dir(dir, adir, sizeof adir);
    size_t tlen = strlen(adir) + strlen(base) + sizeof rnd + 4;
    w->tmp = malloc(tlen);
    for (int tries = 0; tries < 16; tries++) {
        gcsh_random_hex(rnd);
        snprintf(w->tmp, tlen, "%s/.%s.%s", adir, base, rnd);
        note_close(w);
        note_open(w, w->tmp, path);
        int fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

static int open_as(gcsh_file *w, const char *path, int private_file, char *err, size_t elen)
{
    *w = (gcsh_file){.note_fd = -1};
    if (gcsh_file_check(path, err, elen) != 0)
        return -1;
    char dir[PATH_MAX];
    const char *base;
    split_path(path, dir, sizeof dir, &base);
    w->private_file = private_file;
    w->mode = private_file ? 0600 : new_file_mode(); /* never the old file's: see safefile.h */
    int fd = create_temporary(w, dir, base, path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        snprintf(err, elen, "cannot write %s: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(w->tmp);
        }
        note_close(w);
        free(w->tmp);
        *w = (gcsh_file){.note_fd = -1};
        return -1;
    }
    w->f = f;
    w->path = strdup(path);
    return 0;
}

int gcsh_file_open(gcsh_file *w, const char *path, char *err, size_t elen)
{
    return open_as(w, path, 0, err, elen);
}

int gcsh_file_open_private(gcsh_file *w, const char *path, char *err, size_t elen)
{
    return open_as(w, path, 1, err, elen);
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
    note_close(w);
    free(w->path);
    free(w->tmp);
    *w = (gcsh_file){.note_fd = -1};
}

/* Renames the finished temporary over the target, which must still be
 * absent or a file of this user's: between the check and now someone may
 * have planted one (root's rename in a sticky /tmp would take it over).
 * Where the target is absent, the rename does not replace (RENAME_NOREPLACE);
 * one planted meanwhile is looked at again.  0, or -1 with errno set or
 * why in err. */
static int put_in_place(gcsh_file *w, char *err, size_t elen)
{
    for (int tries = 0; tries < 8; tries++) {
        struct stat st;
        if (lstat(w->path, &st) == 0) {
            if (check_existing(w->path, &st, err, elen) != 0)
                return -1;
            return rename(w->tmp, w->path) == 0 ? 0 : (w->err = errno, -1);
        }
        if (errno != ENOENT)
            return w->err = errno, -1;
        if (renameat2(AT_FDCWD, w->tmp, AT_FDCWD, w->path, RENAME_NOREPLACE) == 0)
            return 0;
        if (errno == EINVAL || errno == ENOSYS) /* a filesystem without it */
            return rename(w->tmp, w->path) == 0 ? 0 : (w->err = errno, -1);
        if (errno != EEXIST)
            return w->err = errno, -1;
    }
    return w->err = EEXIST, -1;
}

int gcsh_file_commit(gcsh_file *w, char *err, size_t elen)
{
    gcsh_file_flush(w);
    if (!w->err && ferror(w->f))
        w->err = EIO;
    /* the mode from the umask (or 0600), never from a file that was there */
    if (!w->err && fchmod(fileno(w->f), (mode_t)w->mode) != 0)
        w->err = errno;
    if (fclose(w->f) != 0 && !w->err)
        w->err = errno ? errno : EIO;
    w->f = NULL;
    int rc = 0;
    err[0] = '\0';
    if (w->err || put_in_place(w, err, elen) != 0) {
        if (!err[0])
            snprintf(err, elen, "cannot write %s: %s", w->path, strerror(w->err));
        unlink(w->tmp);
        rc = -1;
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

/* ---- what killed writers left ---------------------------------------------------------- */

/* A note's three lines: what to do, the temporary, the target. */
static int read_note(int fd, char *what, char *tmp, char *target, size_t len)
{
    char buf[3 * PATH_MAX + 32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *a = buf, *b = strchr(a, '\n'), *c = b ? strchr(b + 1, '\n') : NULL;
    char *d = c ? strchr(c + 1, '\n') : NULL;
    if (!d) /* still being written (a writer that was killed then left no temporary) */
        return -1;
    *b = *c = *d = '\0';
    if (strlen(a) >= 16 || strlen(b + 1) >= len || strlen(c + 1) >= len)
        return -1;
    memcpy(what, a, strlen(a) + 1);
    memcpy(tmp, b + 1, strlen(b + 1) + 1);
    memcpy(target, c + 1, strlen(c + 1) + 1);
    return 0;
}

/* One note: its temporary removed or named on say when its writer is gone
 * (nobody holds the note's lock), the note removed then.  1 when said. */
static int leftover(int dirfd, const char *name, FILE *say)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return 0;
    char what[16], tmp[PATH_MAX], target[PATH_MAX];
    struct stat st;
    int said = 0;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 || read_note(fd, what, tmp, target, PATH_MAX) != 0) {
        close(fd); /* a writer at work, or a note being written */
        return 0;
    }
    if (lstat(tmp, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()) {
        if (strcmp(what, "remove") == 0 && unlink(tmp) == 0)
            fprintf(say, "gcsh: removed %s: the unfinished %s of a gcsh that was killed\n", tmp,
                    target);
        else
            fprintf(say, "gcsh: %s is what a gcsh that was killed had written of %s (unfinished; "
                         "gcsh leaves it to you)\n", tmp, target);
        said = 1;
    }
    unlinkat(dirfd, name, 0);
    close(fd);
    return said;
}

int gcsh_file_leftovers(FILE *say)
{
    char dir[PATH_MAX], err[PATH_MAX + 200];
    if (gcsh_private_dir(dir, sizeof dir, err, sizeof err) != 0)
        return 0;
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strncmp(e->d_name, NOTE_PREFIX, sizeof NOTE_PREFIX - 1) == 0)
            n += leftover(dirfd(d), e->d_name, say);
    if (d)
        closedir(d);
    fflush(say);
    return n;
}

/* ---- files gcsh runs ----------------------------------------------------------------- */

/* Whether folder dir (and so the names in it) can be changed only by this
 * user or root: owned by one of them, and not writable by others unless
 * sticky (then others cannot rename or remove what is not theirs). */
static int safe_folder(const char *file, const char *dir, char *err, size_t elen)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        snprintf(err, elen, "%s: its folder %s: %s", file, dir, strerror(errno));
        return -1;
    }
    if (st.st_uid != 0 && st.st_uid != geteuid()) {
        char who[300];
        gcsh_owner_name(st.st_uid, who, sizeof who);
        snprintf(err, elen, "%s is in %s, a folder of %s, who could replace it", file, dir, who);
        return -1;
    }
    if ((st.st_mode & 022) && !(st.st_mode & S_ISVTX)) {
        snprintf(err, elen, "%s is in %s, which others can write to (mode %04o): they could "
                            "replace it", file, dir, (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return 0;
}

/* safe_folder for every folder on the way to path (absolute). */
static int safe_folders(const char *file, const char *path, char *err, size_t elen)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = strrchr(p, '/'); s; s = strrchr(p, '/')) {
        s[s == p] = '\0'; /* "/x" leaves "/" */
        if (safe_folder(file, p, err, elen) != 0)
            return -1;
        if (s == p)
            break;
    }
    return 0;
}

int gcsh_file_trusted(const char *path, char *err, size_t elen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, elen, "cannot open %s: %s", path, strerror(errno));
        return -2;
    }
    if (!S_ISREG(st.st_mode)) /* no question of trust: the reader refuses it (128) */
        return 0;
    if (st.st_uid != 0 && st.st_uid != geteuid()) {
        char who[300];
        gcsh_owner_name(st.st_uid, who, sizeof who);
        snprintf(err, elen, "%s belongs to %s", path, who);
        return -1;
    }
    if (st.st_mode & 022) {
        snprintf(err, elen, "%s can be changed by others (mode %04o)", path,
                 (unsigned)(st.st_mode & 07777));
        return -1;
    }
    /* the folders as named (links followed) and as they really are */
    char named[PATH_MAX + 2], cwd[PATH_MAX];
    if (path[0] == '/')
        snprintf(named, sizeof named, "%s", path);
    else
        snprintf(named, sizeof named, "%s/%s", getcwd(cwd, sizeof cwd) ? cwd : ".", path);
    char *real = realpath(path, NULL);
    int rc = safe_folders(path, named, err, elen);
    if (rc == 0 && real)
        rc = safe_folders(path, real, err, elen);
    free(real);
    return rc;
}
