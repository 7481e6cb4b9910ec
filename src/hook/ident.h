/*
 * hook/ident.h — which function a hook event is about, and what it is called in reports.
 */
#ifndef CPROF_FUNCS_H
#define CPROF_FUNCS_H

#include <lua.h>

#include "tables/profiler.h"

/* The C functions behind coroutine.resume and the functions coroutine.wrap makes. */
extern lua_CFunction funcs_resume, funcs_wrap;

/* Finds them; once per state, when the module loads. */
void funcs_setup(lua_State *L);

/* The entry of the function that `ar` (a call event) is calling, created on first sight.
   Also returns the C function in *cf (NULL for Lua functions). IDX_NONE when out of memory.
   Leaves the Lua stack as it found it. */
uint32_t funcs_resolve(Profiler *P, lua_State *L, lua_Debug *ar, lua_CFunction *cf);

/* Marks the function at `idx` as part of the profiler: an internal frame still open at
   disable() is left out of the numbers. */
void funcs_mark_internal(lua_State *L, int idx);

#endif
