/*
 * hook/layout.h — whether the fast path's reading of Lua's private structures (util/luapriv.h)
 * can be trusted in this process: a few probe calls, resolved both through the mirrors and
 * through the public API, must agree on every field the hook reads. Runs when a profile is
 * enabled: a few microseconds, never per event.
 */
#ifndef CPROF_LAYOUT_H
#define CPROF_LAYOUT_H

#include <lua.h>

/* NULL when the fast path agrees with the public API on L's state; else why not (a constant
   string). Always a reason where there is no fast path (LuaJIT, an unknown release). */
const char *layout_check(lua_State *L);

/* For the specs: when on, layout_check reads a closure's prototype at a wrong offset, as a
   build against the wrong headers would. */
extern int layout_skew;

#endif
