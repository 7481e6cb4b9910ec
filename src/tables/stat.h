/*
 * tables/stat.h — cProfile's counters, kept per function, per caller->callee edge and per
 * call-tree node (docs/SEMANTICS.md), with what the engine needs to tell a recursive call from a
 * primitive one. The engine updates them; the snapshot reads them.
 */
#ifndef CPROF_STAT_H
#define CPROF_STAT_H

#include <stdint.h>

#include "cprof.h"

/* A record is active while a frame of it is open on a running (not suspended) stack; cumulative
   time is added only when its last such frame closes. `active` counts the running stacks that
   hold a frame of it; within one stack, the lowest frame of it carries a mark (stacks.h), and
   `in_stack` / `in_first` remember where the last such frame was put, so that a call finds
   whether its stack already holds the record with one comparison (engine.c). */
typedef struct Stat {
  uint64_t calls, rcalls;   /* total calls; calls made while already active (recursive) */
  cprof_ticks it, tt;       /* inline (own) time; total (cumulative) time */
  const void *in_stack;     /* the stack of the last lowest frame of it, and its index */
  uint32_t in_first;
  uint32_t active;
} Stat;

#endif
