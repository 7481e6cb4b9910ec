/*
 * compat.h — the few Lua 5.2+ API functions cprof uses, for LuaJIT's 5.1 API.
 */
#ifndef CPROF_COMPAT_H
#define CPROF_COMPAT_H

#include <lauxlib.h>
#include <lua.h>

#if LUA_VERSION_NUM < 502
static inline int lua_absindex(lua_State *L, int idx) {
  return (idx > 0 || idx <= LUA_REGISTRYINDEX) ? idx : lua_gettop(L) + idx + 1;
}
static inline void lua_rawgetp(lua_State *L, int t, const void *p) {
  t = lua_absindex(L, t);
  lua_pushlightuserdata(L, (void *)p);
  lua_rawget(L, t);
}
static inline void lua_rawsetp(lua_State *L, int t, const void *p) {
  t = lua_absindex(L, t);
  lua_pushlightuserdata(L, (void *)p);
  lua_insert(L, -2);
  lua_rawset(L, t);
}
#endif

#endif
