/*
 * util/fault.h — fault injection: allocations that can be made to fail on purpose, so that the
 * specs and the C tests walk every out-of-memory path (cprof.core.fail_allocations for cprof's
 * own tables, cprof.memory.fail_after for the allocator's mappings and metadata).
 */
#ifndef CPROF_FAULT_H
#define CPROF_FAULT_H

#include <stddef.h>

/* One countdown: *left more requests succeed, then every one fails; *left < 0: none ever fails.
   Whether this request must fail (it counts it). Costs a load and a compare when off. */
static inline int fault_due(long *left) {
  if (*left < 0) return 0;
  if (*left == 0) return 1;
  (*left)--;
  return 0;
}

/* cprof's own allocations: malloc, calloc and realloc under the countdown fault_after sets
   (n < 0, the default: never fail). They run only when a new function, edge, coroutine or
   depth appears, so the check costs nothing per call. */
void fault_after(long n);
void *fault_malloc(size_t size);
void *fault_calloc(size_t count, size_t size);
void *fault_realloc(void *p, size_t size);

#endif
