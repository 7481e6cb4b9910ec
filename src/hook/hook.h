/*
 * hook/hook.h — the debug hook: from Lua's events to the engine, per thread, alongside whatever
 * hook the program itself sets. Per event: find the thread's shadow stack, resolve the function,
 * update the stack through the engine, keep the hook's own time off the clock.
 */
#ifndef CPROF_HOOK_H
#define CPROF_HOOK_H

#include <lua.h>

#include "tables/profiler.h"

/* The hook itself (a lua_Hook): installed on every thread the profile follows. */
void hook_event(lua_State *L, lua_Debug *ar);

/* Starts profiling the state of L with P. Returns NULL, or an error message. */
const char *hook_enable(Profiler *P, lua_State *L);
/* Stops: closes every open frame, gives every thread its own hook back. */
void hook_disable(Profiler *P, lua_State *L);
/* The profiler being freed without a disable (its state is closing): unregister it. */
void hook_forget(Profiler *P, lua_State *L);

/* The profiler enabled in L's state, or NULL. */
Profiler *hook_profiler(lua_State *L);
/* Puts the hook on thread T (at `idx` of L's stack), keeping the program's own hook of T to
   call; adopts T when it has no stack yet (out of memory: P->oom is set). */
void hook_take(Profiler *P, lua_State *L, int idx, lua_State *T);
/* The hook a thread would have without us when we never saw it: the main thread's, which it
   would have inherited (none where the API cannot tell: LuaJIT, whose hook is global). */
void hook_inherited(lua_State *L, lua_Hook *h, int *mask, int *count);

/* Whether thread T has cprof's hook installed (for tests: the program itself never sees it). */
int hook_installed(lua_State *T);

#endif
