/* Files gcsh writes: the one way every writer (--trace, --record, .flight,
 * repro.sweep's out=, bench's csv= and json=, gcsh.write_file) puts a file
 * on disk.
 *
 * A file is written whole to a temporary made with mkstemp (O_EXCL) beside
 * the target, in the target's folder (".NAME.XXXXXX"), and renamed over the
 * target when complete, so a reader never sees half a file and nothing but
 * the target changes: an existing NAME.tmp, or a link planted at a guessable
 * name, is never touched.
 *
 * The target must be a regular file or absent.  A device (/dev/full), a
 * FIFO, a folder or a socket is refused with an error naming what it is.  A
 * symbolic link at the target is refused, not followed: gcsh replaces only
 * files the user named themselves (a link in a shared folder could point
 * anywhere).  A new file gets the mode 0666 less the umask; a replaced one
 * keeps its mode.
 *
 * Every write, the flush and the close are checked: a full disk, a quota or
 * a file size limit is an error carrying errno's text, the temporary is
 * removed, and the target is left as it was.  There is no fsync: a crash of
 * the machine may lose the last file, never leave a torn one in its place.
 *
 * Errors are one line, "cannot write PATH: why", written into err. */
#ifndef GCSH_SAFEFILE_H
#define GCSH_SAFEFILE_H

#include <stddef.h>
#include <stdio.h>

typedef struct gcsh_file {
    FILE *f;     /* the temporary, to write with stdio (fwrite, fprintf) */
    char *path;  /* the target */
    char *tmp;   /* the temporary's name, beside the target */
    int mode;    /* the mode the target gets */
    int err;     /* errno of the first failed write (gcsh_file_write), or 0 */
} gcsh_file;

/* Whether path may be written: absent or a regular file, in a folder that
 * exists.  0, or -1 with why in err. */
int gcsh_file_check(const char *path, char *err, size_t elen);

/* Creates the temporary for path (after gcsh_file_check).  0, or -1 with
 * why in err (nothing was created). */
int gcsh_file_open(gcsh_file *w, const char *path, char *err, size_t elen);

/* Writes n bytes; a failure is remembered (and reported by commit).
 * Returns 0 or -1. */
int gcsh_file_write(gcsh_file *w, const void *data, size_t n);
/* printf to the temporary, checked as gcsh_file_write. */
int gcsh_file_printf(gcsh_file *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Flushes what was written so far to the temporary (so that a crash of
 * gcsh leaves it there); a failure is remembered.  Returns 0 or -1. */
int gcsh_file_flush(gcsh_file *w);

/* Flushes, closes and renames the temporary over the target.  0, or -1 with
 * why in err: then the temporary is gone and the target unchanged.  Either
 * way w is released. */
int gcsh_file_commit(gcsh_file *w, char *err, size_t elen);
/* Removes the temporary, leaving the target as it was; releases w.  A
 * closed (zeroed) w is a no-op. */
void gcsh_file_discard(gcsh_file *w);

/* The whole of a file at once: open, write, commit. */
int gcsh_file_write_all(const char *path, const void *data, size_t n, char *err, size_t elen);

#endif
