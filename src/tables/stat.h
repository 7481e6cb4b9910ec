/*
 * tables/stat.h — cProfile's counters, kept per function, per caller->callee edge and per
 * call-tree node (docs/SEMANTICS.md). The engine updates them; the snapshot reads them.
 */
#ifndef CPROF_STAT_H
#define CPROF_STAT_H

#include <stdint.h>

#include "cprof.h"

/* `level` is how many activations are open on running (not suspended) stacks; cumulative time
   is added only when it drops to zero. */
typedef struct Stat {
  uint64_t calls, rcalls;   /* total calls; calls made while already active (recursive) */
  cprof_ticks it, tt;       /* inline (own) time; total (cumulative) time */
  uint32_t level;
} Stat;

#endif
