/* The trace's ring (tables/trace.h): allocated once, at the first enable() of a profile made
   with trace = true; nothing here runs per event. */
#include <stdlib.h>

#include "tables/trace.h"
#include "util/fault.h"

int trace_alloc(Trace *T) {
  T->ev = fault_malloc((size_t)T->size * sizeof *T->ev);
  return T->ev ? 0 : -1;
}

void trace_free(Trace *T) {
  free(T->ev);
  T->ev = NULL;
}

int trace_retract(Trace *T, uint32_t thread, uint32_t node) {
  if (T->held == 0) return 0;
  uint32_t last = T->next == 0 ? T->size - 1 : T->next - 1;
  if (T->ev[last].thread != thread || T->ev[last].node != node) return 0;
  T->next = last;
  T->held--;
  T->total--;
  return 1;
}
