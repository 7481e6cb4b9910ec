/*
 * engine/engine.h — what a call, a return, an unwind and a coroutine switch do to the numbers.
 * The rules are cProfile's (see docs/SEMANTICS.md): a call is primitive when its function is not
 * active on a running stack, cumulative time is added when the outermost activation ends, and
 * the same per caller->callee edge.
 */
#ifndef CPROF_ENGINE_H
#define CPROF_ENGINE_H

#include "tables/profiler.h"

/* A call at `now` of `entry` in activation `ci` whose caller is activation `parent_ci` (NULL:
   none in this thread). Frames above the caller's are stale (unwound by an error, or replaced
   by a tail call) and are closed first. Returns 0, or -1 when out of memory (the call is not
   recorded). */
int eng_call(Profiler *P, Stack *st, const void *ci, const void *parent_ci, uint32_t entry,
             cprof_ticks now);

/* The return of activation `ci`: closes it and anything above it that was unwound. A return
   of an activation that was never seen (entered before enable()) closes every frame. */
void eng_return(Profiler *P, Stack *st, const void *ci, cprof_ticks now);

/* A line event at `now`: the time since the frame's previous line event goes to that line.
   Returns -1 when out of memory. */
int eng_line(Profiler *P, Stack *st, int line, cprof_ticks now);

/* Control passed from the thread of `from` (may be NULL) to the thread of `to`, whose event at
   `now` this is. `from` is charged up to its own last event, so the time between the two events
   (the switch itself) stays with the frame that made it, and callee times add up.
   Returns 1 when `from` is dead (finished or killed by an error): the caller drops it. */
int eng_switch(Profiler *P, Stack *from, Stack *to, cprof_ticks now);

/* Closes every open frame of every stack, leaving internal frames on top of `cur` out. */
void eng_flush(Profiler *P, Stack *cur, cprof_ticks now);

/* Forgets a stack's frames as though they never ran: used for a dead thread's stack. */
void eng_close_all(Profiler *P, Stack *st, cprof_ticks now);

#endif
