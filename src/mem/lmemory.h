/*
 * mem/lmemory.h — cprof's allocator for Lua: the cprof.core.memory table (install, stats,
 * limit, trace: docs/MEMORY.md).
 */
#ifndef CPROF_LMEMORY_H
#define CPROF_LMEMORY_H

#include <lua.h>

/* Adds the `memory` subtable to the table at the top of the stack. */
void lmemory_register(lua_State *L);

#endif
