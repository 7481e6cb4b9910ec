/*
 * util/weak.h — tables in the registry whose keys are weak: they note something about Lua
 * values (a thread's stack, a profiler function) without keeping them alive.
 */
#ifndef CPROF_WEAK_H
#define CPROF_WEAK_H

#include <lua.h>

/* Pushes the weak-keyed table kept in the registry under the light userdata `key`, made on
   first use. A table lookup; may allocate the first time. */
void weak_table(lua_State *L, const void *key);

#endif
