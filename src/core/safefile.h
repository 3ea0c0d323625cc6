/* Files gcsh writes: the one way every writer (--trace, --record, .flight,
 * repro.sweep's out=, bench's csv= and json=, gcsh.write_file) puts a file
 * on disk.
 *
 * A file is written whole to a temporary beside the target, in the target's
 * folder (".NAME.RANDOM": 64 unpredictable bits, created O_EXCL|O_NOFOLLOW,
 * mode 0600 while written), and renamed over the target when complete, so
 * a reader never sees half a file and nothing but the target changes: an
 * existing NAME.tmp, or a link planted at a guessable name, is never
 * touched.
 *
 * The target must be a regular file of this user's, or absent.  A device
 * (/dev/full), a FIFO, a folder or a socket is refused with an error naming
 * what it is.  A symbolic link at the target is refused, not followed: gcsh
 * replaces only files the user named themselves (a link in a shared folder
 * could point anywhere).  A file owned by another user is refused naming
 * the owner, root's session included (root's rename over a file planted in
 * a sticky /tmp would take it over); looked at again just before the
 * rename, which does not replace where the target was absent.
 *
 * The file gets the mode 0666 less the umask (gcsh_file_open_private:
 * 0600), whether new or replacing one: never a mode copied from a file
 * that was there (someone else's planted 6777 file would give a set-id
 * root file), never set-id or sticky bits.
 *
 * While a temporary exists a note in gcsh's folder (private.h), locked by
 * the writer, names it; gcsh_file_leftovers, at the next start, finds
 * those of writers that were killed.
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
    int private_file; /* gcsh's own (0600; a killed writer's temporary is removed) */
    int note_fd; /* the note of this unfinished write (locked), or -1 */
    char *note;  /* its name, or NULL */
} gcsh_file;

/* Whether path may be written: absent or a regular file, in a folder that
 * exists.  0, or -1 with why in err. */
int gcsh_file_check(const char *path, char *err, size_t elen);

/* Creates the temporary for path (after gcsh_file_check).  0, or -1 with
 * why in err (nothing was created). */
int gcsh_file_open(gcsh_file *w, const char *path, char *err, size_t elen);
/* The same for a file of gcsh's own (the flight recorder's automatic
 * dumps): mode 0600, and the temporary of a killed writer is removed at
 * the next start rather than named. */
int gcsh_file_open_private(gcsh_file *w, const char *path, char *err, size_t elen);

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

/* At start: the temporaries of writers that were killed (their notes'
 * locks free): gcsh's own removed, the others (a --record session's data)
 * named and left; one line each on say, once (the note goes).  How many
 * were said. */
int gcsh_file_leftovers(FILE *say);

/* Whether a file that gcsh is to run (--replay's recording) can be changed
 * by this user or root alone, as ssh asks of a key: owned by this user or
 * root, not writable by group or others, and each folder on its way (as
 * named, and with links resolved) owned by this user or root and not
 * writable by others unless sticky (/tmp: others cannot replace what is
 * not theirs there).  A file that is not a regular one passes: the
 * recording's reader refuses it.  0, or -1 with why in err ("FILE can be changed by
 * others (mode 0666)"), or -2 when it cannot be looked at ("cannot open
 * FILE: No such file or directory"). */
int gcsh_file_trusted(const char *path, char *err, size_t elen);

#endif
