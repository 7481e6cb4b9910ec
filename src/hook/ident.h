/*
 * hook/ident.h — which function a hook event is about, and what it is called in reports.
 * The hook resolves a call through its call-site caches (calltree.h); what is here runs on a
 * cache miss: once per new key (a function, or one seen under a new address), once per new
 * chunk name, and once per snapshot for the names no call site gave.
 */
#ifndef CPROF_IDENT_H
#define CPROF_IDENT_H

#include <lua.h>

#include "tables/profiler.h"

/* Learns the C functions behind coroutine.resume, the functions coroutine.wrap makes and the
   standard library's iterators in L's state; once per state, when the module loads. */
void ident_setup(lua_State *L);

/* Gives P what L's state learnt: P->co_resume and P->co_wrap. At enable(). */
void ident_attach(Profiler *P, lua_State *L);

/* The entry of the function a call event `ar` calls, seen by the fast path as key `key` (a
   prototype, with its chunk-name string object `src` and line defined; or a C function, with
   src NULL and line -1; or, for a function made by coroutine.wrap, its body's prototype and
   chunk name with line -2 - the line defined), made on first sight. IDX_NONE when out of
   memory. */
uint32_t ident_fast(Profiler *P, lua_State *L, lua_Debug *ar, const void *key, const void *src,
                    int line);

/* The same through the public API alone (lua_getinfo): the path of LuaJIT, of unknown releases
   and of a profile whose fast path is off. Also returns the C function in *cf (NULL for a Lua
   function). A function made by coroutine.wrap is resolved as by ident_wrap_entry, and its
   coroutine returned in *co (NULL for any other function). */
uint32_t ident_public(Profiler *P, lua_State *L, lua_Debug *ar, lua_CFunction *cf,
                      lua_State **co);

/* The entry of the function made by coroutine.wrap that call event `ar` calls, one per body
   its coroutine runs (a Lua function), named "wrap(file:line)"; IDX_NONE when that body cannot
   be found (the coroutine finished or runs a C function) or out of memory: the one entry of
   every such function serves. Costs a few lookups through the public API: the public path's
   cost per call of such a function, the fast path's per new body key. */
uint32_t ident_wrap_entry(Profiler *P, lua_State *L, lua_Debug *ar);

/* A call of entry e took a new call path: a function still without a call-site name tries
   this one (lua_getinfo "n"), a few times at most. */
void ident_name_from_call(Profiler *P, lua_State *L, lua_Debug *ar, uint32_t e);

/* Names every Lua function not yet named by its definition from the line that defines it
   (hook/defname.h), then, in one walk of the loaded modules, every function still without a
   name: its global name ("string.format") if it has one. Before every snapshot. */
void ident_name_all(Profiler *P, lua_State *L);

/* Lets go of the chunk-name strings P kept alive (its keys are gone: clear() or collection). */
void ident_release(Profiler *P, lua_State *L);


/* Marks the function at `idx` as part of the profiler: an internal frame still open at
   disable() is left out of the numbers. `name` (or NULL) is what reports call it. */
void ident_mark_internal(lua_State *L, int idx, const char *name);

#endif
