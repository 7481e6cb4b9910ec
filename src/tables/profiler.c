/* Making, clearing and freeing a profile's tables: once per Profile, clear() or collection. */
#include <string.h>

#include "tables/profiler.h"

int prof_init(Profiler *P, const cprof_timer *timer) {
  memset(P, 0, sizeof *P);
  clock_set_timer(&P->clock, timer);
  if (fn_init(&P->fns) || tree_init(&P->tree) || stk_init(&P->stacks) || line_init(&P->lines)) {
    prof_free(P);
    return -1;
  }
  P->ready = 1;
  return 0;
}

void prof_free(Profiler *P) {
  memattr_free(&P->mem);
  fn_free(&P->fns);
  tree_free(&P->tree);
  line_free(&P->lines);
  stk_free(&P->stacks);
  trace_free(&P->trace);
  cprof_timer timer = P->clock.timer;
  memset(P, 0, sizeof *P);
  P->clock.timer = timer;
}

int prof_clear(Profiler *P) {
  cprof_timer timer = P->clock.timer;
  uint32_t limit = P->tree.limit;
  int lines = P->lines.on, public_only = P->public_only;
  uint32_t trace_size = P->trace.size;
  double bias = P->bias;
  prof_free(P);
  int r = prof_init(P, &timer);
  P->tree.limit = limit;
  P->lines.on = lines;
  P->public_only = public_only;
  P->bias = bias;
  P->trace.size = trace_size;
  return r;
}
