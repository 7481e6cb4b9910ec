/*
 * dump/ldump.h — the dump codec for Lua: cprof.core.write_dump, read_dump, file_type and write_file.
 */
#ifndef CPROF_LDUMP_H
#define CPROF_LDUMP_H

#include <lua.h>

/* Adds write_dump, read_dump, file_type and write_file to the table at the top of the stack. */
void ldump_register(lua_State *L);

#endif
