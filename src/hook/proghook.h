/*
 * hook/proghook.h — the program's own hooks: debug.sethook and debug.gethook are wrapped so
 * that a program that sets or asks for a hook while cprof profiles sees its own hook, and cprof
 * keeps calling it for the events it asked for. Costs nothing until the program calls them.
 */
#ifndef CPROF_PROGHOOK_H
#define CPROF_PROGHOOK_H

#include <lua.h>

/* Wraps debug.sethook and debug.gethook; once per state, when the module loads. */
void proghook_setup(lua_State *L);

#endif
