/*
 * mem/memattr.h — memory attributed to call contexts: while a profile runs on a state that uses
 * cprof's allocator, every allocation is charged to the running frame's call-tree node, and its
 * free to the node that allocated it (MemProf's fields: allocations, bytes, frees, live bytes at
 * the end, smallest and largest size). Exact, not sampled.
 */
#ifndef CPROF_MEMATTR_H
#define CPROF_MEMATTR_H

#include <lua.h>

#include "tables/profiler.h"

/* Starts attribution if L's state allocates with cprof's allocator; else does nothing. */
void memattr_start(Profiler *P, lua_State *L);
/* Stops it (the blocks allocated meanwhile stay charged: they are live at the end). */
void memattr_stop(Profiler *P);
/* Forgets every number (clear()). */
void memattr_free(Profiler *P);

/* The coroutine running now, for the allocator's traces. */
void memattr_thread(Profiler *P, lua_State *L);

#endif
