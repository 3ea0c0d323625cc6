/* The recording table (trace_wrap.c): gcsh_trace_init's wrapper. */
#ifndef GCSH_TRACE_WRAP_H
#define GCSH_TRACE_WRAP_H

#include "trace/trace.h"

gcsh_trace_wrapper gcsh_trace_wrap;

#endif
