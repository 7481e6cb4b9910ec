/* The countdown of cprof's own allocations (util/fault.h). Process-wide, like malloc: only the
   specs set it, from one thread. */
#include <stdlib.h>

#include "util/fault.h"

static long countdown = -1;

void fault_after(long n) { countdown = n; }

void *fault_malloc(size_t size) { return fault_due(&countdown) ? NULL : malloc(size); }
void *fault_calloc(size_t count, size_t size) {
  return fault_due(&countdown) ? NULL : calloc(count, size);
}
void *fault_realloc(void *p, size_t size) {
  return fault_due(&countdown) ? NULL : realloc(p, size);
}
