/*
 * hook/live.h — live dumps: a signal (CPROF_SIGNAL) or a timer thread (CPROF_INTERVAL) asks for
 * a dump, and the hook writes it after the next return, where the profile's tables are
 * consistent. The signal handler and the timer thread only set a flag; the hook tests it on
 * every return (one relaxed load) and runs the dump function, a Lua function, inside the hook,
 * on no frame's time.
 */
#ifndef CPROF_LIVE_H
#define CPROF_LIVE_H

#include <stdatomic.h>

#include <lua.h>

#include "tables/profiler.h"

/* A dump is wanted: set by the signal handler and the timer thread. */
extern atomic_int live_wanted;

static inline int live_pending(void) {
  return atomic_load_explicit(&live_wanted, memory_order_relaxed) != 0;
}

/* Runs the dump function registered in L's state (none: the flag stays set for the state that
   has one), with P's allocations kept off the program, and tells the timer thread when it
   ended and how long it took (the next interval starts then). Returns whether it ran. */
int live_dump(Profiler *P, lua_State *L);

/* cprof.core.live(fn, signal, seconds): registers the dump function and starts what asks for
   it; returns a handle whose stop() (or collection) undoes both. */
void live_register(lua_State *L);

#endif
