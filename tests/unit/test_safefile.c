/* safefile.h: files written whole beside the target and renamed; targets
 * that are not regular files refused (a link, a FIFO, a device, a folder);
 * nothing outside the target changes (an existing NAME.tmp, a link's
 * target); a failed write leaves the target as it was. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/safefile.h"
#include "unit.h"

static char dir[256];

static char *at(const char *name)
{
    static char buf[4][PATH_MAX];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static char *slurp(const char *path)
{
    static char buf[4096];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
    return buf;
}

/* Files in dir, "." and ".." aside. */
static int entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void test_plain(void)
{
    char err[512];
    CHECK(gcsh_file_write_all(at("a.txt"), "hello\n", 6, err, sizeof err) == 0, "new file: %s",
          err);
    CHECK(strcmp(slurp(at("a.txt")), "hello\n") == 0, "its text");
    struct stat st;
    stat(at("a.txt"), &st);
    CHECK((st.st_mode & 0777) == (0666 & ~022u), "mode 0666 less the umask (022): %o",
          st.st_mode & 0777);
    chmod(at("a.txt"), 06777);
    CHECK(gcsh_file_write_all(at("a.txt"), "again\n", 6, err, sizeof err) == 0, "replaced");
    stat(at("a.txt"), &st);
    CHECK((st.st_mode & 07777) == (0666 & ~022u),
          "a replaced file gets the umask's mode, not the old one's (06777): %o",
          st.st_mode & 07777);
    CHECK(entries() == 1, "no temporary left: %d entries", entries());
    gcsh_file p;
    CHECK(gcsh_file_open_private(&p, at("own.json"), err, sizeof err) == 0, "a private file");
    CHECK(gcsh_file_commit(&p, err, sizeof err) == 0, "committed: %s", err);
    stat(at("own.json"), &st);
    CHECK((st.st_mode & 07777) == 0600, "a private file: 0600: %o", st.st_mode & 07777);
    unlink(at("own.json"));

    gcsh_file w;
    CHECK(gcsh_file_open(&w, at("b.txt"), err, sizeof err) == 0, "open");
    gcsh_file_printf(&w, "%d lines\n", 2);
    gcsh_file_flush(&w);
    CHECK(access(at("b.txt"), F_OK) != 0, "the target appears only when committed");
    CHECK(entries() == 2, "the temporary sits beside it");
    gcsh_file_discard(&w);
    CHECK(entries() == 1 && access(at("b.txt"), F_OK) != 0, "discard: nothing left");
}

static void test_refused(void)
{
    char err[512];
    put(at("real.txt"), "precious\n");
    CHECK(symlink(at("real.txt"), at("link.txt")) == 0, "made link.txt");
    CHECK(gcsh_file_write_all(at("link.txt"), "x", 1, err, sizeof err) == -1, "a link: refused");
    CHECK(strstr(err, "is a symbolic link (to ") != NULL, "says so: %s", err);
    CHECK(strcmp(slurp(at("real.txt")), "precious\n") == 0, "the link's target is untouched");

    mkfifo(at("fifo"), 0600);
    CHECK(gcsh_file_write_all(at("fifo"), "x", 1, err, sizeof err) == -1, "a FIFO: refused");
    CHECK(strstr(err, "it is a FIFO; gcsh writes only regular files") != NULL, "says so: %s", err);
    struct stat st;
    CHECK(lstat(at("fifo"), &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO is still a FIFO");

    CHECK(gcsh_file_write_all("/dev/full", "x", 1, err, sizeof err) == -1, "/dev/full: refused");
    CHECK(strcmp(err, "cannot write /dev/full: it is a character device; gcsh writes only "
                      "regular files") == 0, "says so: %s", err);
    CHECK(lstat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode), "/dev/full is still a device");

    CHECK(gcsh_file_write_all(dir, "x", 1, err, sizeof err) == -1, "a folder: refused");
    CHECK(strstr(err, "it is a folder") != NULL, "says so: %s", err);
    CHECK(gcsh_file_write_all("/nonexistent/dir/x", "x", 1, err, sizeof err) == -1,
          "a missing folder");
    CHECK(strcmp(err, "cannot write /nonexistent/dir/x: No such file or directory") == 0, "%s",
          err);

    put(at("t.json.tmp"), "mine\n");
    CHECK(symlink(at("real.txt"), at(".t.json.tmp")) == 0, "made .t.json.tmp");
    CHECK(gcsh_file_write_all(at("t.json"), "{}\n", 3, err, sizeof err) == 0, "beside a .tmp");
    CHECK(strcmp(slurp(at("t.json.tmp")), "mine\n") == 0, "an existing NAME.tmp is untouched");
    CHECK(strcmp(slurp(at("real.txt")), "precious\n") == 0, "a planted link is not followed");
    CHECK(strcmp(slurp(at("t.json")), "{}\n") == 0, "the target written");
}

/* As root: a file of another user's is never replaced (nor renamed over),
 * and the refusal names the owner. */
static void test_owner(void)
{
    char err[512];
    if (geteuid() != 0) {
        printf("skip: not root (another user's file)\n");
        return;
    }
    put(at("theirs.txt"), "planted\n");
    CHECK(chown(at("theirs.txt"), 65534, 65534) == 0, "chown");
    CHECK(gcsh_file_write_all(at("theirs.txt"), "x", 1, err, sizeof err) == -1,
          "another user's file: refused");
    CHECK(strstr(err, "belongs to ") && strstr(err, "(uid 65534); gcsh replaces only files of "
                                                    "yours"), "names the owner: %s", err);
    CHECK(strcmp(slurp(at("theirs.txt")), "planted\n") == 0, "left as it was");
    /* planted between the check and the rename: still not replaced */
    gcsh_file w;
    CHECK(gcsh_file_open(&w, at("late.txt"), err, sizeof err) == 0, "open");
    gcsh_file_write(&w, "mine\n", 5);
    put(at("late.txt"), "planted\n");
    CHECK(chown(at("late.txt"), 65534, 65534) == 0, "chown");
    CHECK(gcsh_file_commit(&w, err, sizeof err) == -1, "planted meanwhile: refused");
    CHECK(strcmp(slurp(at("late.txt")), "planted\n") == 0, "the planted file is as it was");
    unlink(at("theirs.txt"));
    unlink(at("late.txt"));
}

static void test_failed_write(void)
{
    char err[512];
    put(at("keep.txt"), "old\n");
    gcsh_file w;
    CHECK(gcsh_file_open(&w, at("keep.txt"), err, sizeof err) == 0, "open");
    gcsh_file_write(&w, "new", 3);
    w.err = ENOSPC; /* as a full disk reports it */
    CHECK(gcsh_file_commit(&w, err, sizeof err) == -1, "a failed write fails the commit");
    CHECK(strstr(err, "No space left on device") != NULL, "with errno's text: %s", err);
    CHECK(strcmp(slurp(at("keep.txt")), "old\n") == 0, "the target is as it was");
}

int main(void)
{
    umask(022);
    snprintf(dir, sizeof dir, "/tmp/gcsh-safefile-XXXXXX");
    if (!mkdtemp(dir))
        return perror("mkdtemp"), 1;
    test_plain();
    test_refused();
    test_owner();
    test_failed_write();
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        printf("note: could not remove %s\n", dir);
    UNIT_END();
}
