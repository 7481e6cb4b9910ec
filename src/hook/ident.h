/*
 * hook/ident.h — which function a hook event is about, and what it is called in reports. Per
 * call: lua_getinfo "S" and one probe of the function table; naming a function walks the loaded
 * modules, so it happens once per function.
 */
#ifndef CPROF_IDENT_H
#define CPROF_IDENT_H

#include <lua.h>

#include "tables/functions.h"

/* The C functions behind coroutine.resume and the functions coroutine.wrap makes. */
extern lua_CFunction ident_resume, ident_wrap;

/* Finds them; once per state, when the module loads. */
void ident_setup(lua_State *L);

/* The entry of the function that `ar` (a call event) is calling, created on first sight.
   Also returns the C function in *cf (NULL for Lua functions). IDX_NONE when out of memory.
   Leaves the Lua stack as it found it. */
uint32_t ident_resolve(FuncTable *F, lua_State *L, lua_Debug *ar, lua_CFunction *cf);

/* Marks the function at `idx` as part of the profiler: an internal frame still open at
   disable() is left out of the numbers. */
void ident_mark_internal(lua_State *L, int idx);

#endif
