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

static void zero_stat(Stat *s) {
  s->calls = s->rcalls = 0;
  s->it = s->tt = 0;
}

void prof_reset(Profiler *P) {
  for (uint32_t i = 0; i < P->fns.nentries; i++) zero_stat(&P->fns.entries[i].s);
  for (uint32_t i = 0; i < P->tree.nedges; i++) zero_stat(&P->tree.edges[i].s);
  for (uint32_t i = 0; i < P->tree.nnodes; i++) zero_stat(&P->tree.nodes[i].s);
  for (uint32_t i = 0; i < P->lines.nrecs; i++) {
    P->lines.recs[i].hits = 0;
    P->lines.recs[i].time = 0;
  }
  if (P->mem.stats) memset(P->mem.stats, 0, (size_t)P->mem.cstats * sizeof *P->mem.stats);
  P->mem.lost = 0;
  P->tree.folded = 0;
  P->dropped = 0;
}

int prof_clear(Profiler *P) {
  cprof_timer timer = P->clock.timer;
  uint32_t limit = P->tree.limit, recursion = P->tree.recursion;
  int lines = P->lines.on, public_only = P->public_only, filters = P->filters;
  uint32_t trace_size = P->trace.size;
  double bias = P->bias;
  prof_free(P);
  int r = prof_init(P, &timer);
  P->tree.limit = limit;
  P->tree.recursion = recursion;
  P->lines.on = lines;
  P->public_only = public_only;
  P->filters = filters;
  P->bias = bias;
  P->trace.size = trace_size;
  return r;
}
