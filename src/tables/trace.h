/*
 * tables/trace.h — the time line of a profile made with trace = true: its calls and returns
 * with their times, in a ring of a fixed number of events that keeps the newest (a flight
 * recorder: a program that runs for days keeps its last moments) and counts what it overwrote.
 * An event costs three stores and a wrap test; the ring is allocated at the first enable().
 */
#ifndef CPROF_TRACE_H
#define CPROF_TRACE_H

#include <stdint.h>

#include "cprof.h"

/* Events a trace = true profile keeps without a trace_size: 16 MB. */
enum { TRACE_SIZE_DEFAULT = 1000000 };

/* TraceEvent.thread: the bit that makes the event a return. */
#define TRACE_RETURN 0x80000000u

typedef struct TraceEvent {
  cprof_ticks t;    /* the profile's clock (tables/clock.h) */
  uint32_t node;    /* the call-tree node of the frame that opens or closes */
  uint32_t thread;  /* Stack.id, | TRACE_RETURN for a return */
} TraceEvent;

typedef struct Trace {
  TraceEvent *ev;   /* `size` events once allocated, NULL before */
  uint32_t size;    /* the option trace_size: 0 when the profile keeps no trace */
  uint32_t next;    /* where the next event goes */
  uint32_t held;    /* events in the ring: `size` once it has wrapped */
  uint64_t total;   /* events recorded, overwritten ones included: total - held were lost */
  cprof_ticks origin;  /* the time of the first event: the dump's times are since then */
} Trace;

/* Allocates the ring of T->size events; -1 when out of memory. */
int trace_alloc(Trace *T);
void trace_free(Trace *T);

static inline void trace_add(Trace *T, uint32_t thread, uint32_t node, cprof_ticks t) {
  TraceEvent *e = &T->ev[T->next];
  if (T->total++ == 0) T->origin = t;
  e->t = t;
  e->node = node;
  e->thread = thread;
  if (++T->next == T->size) T->next = 0;
  if (T->held < T->size) T->held++;
}

/* Takes back the newest event when it is the call of `node` in `thread` (a profiler frame that
   the report leaves out); returns 0 when it is not, and nothing was taken. */
int trace_retract(Trace *T, uint32_t thread, uint32_t node);

/* Event i of the ring, 0 the oldest, T->held - 1 the newest. */
static inline const TraceEvent *trace_at(const Trace *T, uint32_t i) {
  uint64_t j = (uint64_t)T->next + T->size - T->held + i;
  return &T->ev[j % T->size];
}

#endif
