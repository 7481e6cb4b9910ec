/*
 * util/fault.h — cprof's allocations, with a switch that makes them fail on purpose, so that the
 * specs can walk every out-of-memory path (cprof.core.fail_allocations).
 */
#ifndef CPROF_ALLOC_H
#define CPROF_ALLOC_H

#include <stddef.h>

/* After `n` more successful allocations every allocation fails; n < 0: never (the default). */
void cprof_fail_after(long n);

void *cprof_malloc(size_t size);
void *cprof_calloc(size_t count, size_t size);
void *cprof_realloc(void *p, size_t size);

#endif
