/* Allocation happens only when a new function, edge, coroutine or depth appears, so the check
   costs nothing per call. */
#include <stdlib.h>

#include "util/fault.h"

static long countdown = -1;

void cprof_fail_after(long n) { countdown = n; }

static int refuse(void) {
  if (countdown < 0) return 0;
  if (countdown == 0) return 1;
  countdown--;
  return 0;
}

void *cprof_malloc(size_t size) { return refuse() ? NULL : malloc(size); }
void *cprof_calloc(size_t count, size_t size) { return refuse() ? NULL : calloc(count, size); }
void *cprof_realloc(void *p, size_t size) { return refuse() ? NULL : realloc(p, size); }
