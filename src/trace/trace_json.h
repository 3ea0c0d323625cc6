/* The trace file (trace.h): rank 0 writes the ranks' blobs as Chrome
 * trace-event JSON. */
#ifndef GCSH_TRACE_JSON_H
#define GCSH_TRACE_JSON_H

#include <stddef.h>

#include "trace/trace_ops.h"
#include "trace/trace_rec.h"

/* Writes blobs[r] (lens[r] bytes; NULL: that rank sent none) of every rank
 * to path (safefile.h: written whole beside it, then renamed; private: a
 * file of gcsh's own, 0600).  note, when given, goes into otherData (why
 * the file was written then).  Returns the spans written, or -1 with why
 * in err. */
long gcsh_trace_write(const char *path, int private_file, int size, void *const *blobs,
                      const size_t *lens, const char *note, char *err, size_t elen);

#endif
