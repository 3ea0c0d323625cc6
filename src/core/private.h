/* gcsh's own folder: where it writes what nobody named (the flight
 * recorder's automatic dumps, the notes of unfinished writes, safefile.h).
 *
 * The folder is $GCSH_STATE_DIR when set, else $XDG_RUNTIME_DIR/gcsh, else
 * ${XDG_CACHE_HOME:-$HOME/.cache}/gcsh.  It is made 0700 when missing (a
 * missing parent too, 0700), and refused when it is a symbolic link, not a
 * folder, owned by another user or open to others (any of 077): what gcsh
 * writes there holds the lines typed, so no one else may read it, plant a
 * file in it or swap it.  Files in it are 0600, named unpredictably. */
#ifndef GCSH_PRIVATE_H
#define GCSH_PRIVATE_H

#include <stddef.h>

/* The folder, made when missing: 0 with its path in buf, or -1 with why
 * in err ("gcsh's folder DIR: ...; set GCSH_STATE_DIR to a folder of yours"). */
int gcsh_private_dir(char *buf, size_t len, char *err, size_t elen);

/* A new name in the folder, DIR/PREFIX-PID-RANDOM.SUFFIX (64 random bits),
 * into buf: 0, or -1 with why in err (the folder refused). */
int gcsh_private_path(char *buf, size_t len, const char *prefix, const char *suffix, char *err,
                      size_t elen);

/* Keeps the newest `keep` files of the folder named PREFIX-*.SUFFIX (by
 * modification time) and removes the older ones.  The files removed. */
int gcsh_private_prune(const char *prefix, const char *suffix, int keep);

/* "USER (uid N)", or "uid N" for a user without a name, into buf. */
void gcsh_owner_name(unsigned uid, char *buf, size_t len);

/* 64 unpredictable bits as 16 hex digits (and a NUL) into out[17]. */
void gcsh_random_hex(char out[17]);

#endif
