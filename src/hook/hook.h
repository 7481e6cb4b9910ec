/*
 * hook/hook.h — the debug hook: from Lua's events to the engine, per thread, alongside whatever hook
 * the program itself sets.
 */
#ifndef CPROF_HOOK_H
#define CPROF_HOOK_H

#include <lua.h>

#include "tables/profiler.h"

/* Looks up the functions the hook must recognise and wraps debug.sethook/gethook so that the
   program sees its own hooks. Call once per state, when the module loads. */
void hook_setup(lua_State *L);

/* Starts profiling the state of L with P. Returns NULL, or an error message. */
const char *hook_enable(Profiler *P, lua_State *L);
/* Stops: closes every open frame, gives every thread its own hook back. */
void hook_disable(Profiler *P, lua_State *L);
/* The profiler being freed without a disable (its state is closing): unregister it. */
void hook_forget(Profiler *P, lua_State *L);

/* Whether thread T has cprof's hook installed (for tests: the program itself never sees it). */
int hook_installed(lua_State *T);

#endif
