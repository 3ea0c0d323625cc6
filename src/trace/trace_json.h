/* The trace file (trace.h): rank 0 writes the ranks' blobs as Chrome
 * trace-event JSON. */
#ifndef GCSH_TRACE_JSON_H
#define GCSH_TRACE_JSON_H

#include <stddef.h>

#include "trace/trace.h"

/* Writes blobs[r] (lens[r] bytes; NULL: that rank sent none) of every rank
 * to path (through path.tmp, renamed: a reader never sees half a file).
 * note, when given, goes into otherData (why the file was written then).
 * Returns the spans written, or -1 with errno. */
long gcsh_trace_write(const char *path, int size, void *const *blobs, const size_t *lens,
                      const char *note);

#endif
