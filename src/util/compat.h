/*
 * util/compat.h — the few Lua 5.2+ API functions cprof uses, for LuaJIT's 5.1 API.
 */
#ifndef CPROF_COMPAT_H
#define CPROF_COMPAT_H

#include <lauxlib.h>
#include <lua.h>

#if LUA_VERSION_NUM < 502
/* LuaJIT reports a tail call as a call; this value is never an event. */
#define LUA_HOOKTAILCALL (-1)

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

/* Pushes the state's main thread (nil where the API does not say: LuaJIT, whose hook is
   global) and returns it. */
static inline lua_State *compat_push_main_thread(lua_State *L) {
#ifdef LUA_RIDX_MAINTHREAD
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  return lua_tothread(L, -1);
#else
  lua_pushnil(L);
  return NULL;
#endif
}

static inline lua_State *compat_main_thread(lua_State *L) {
  lua_State *M = compat_push_main_thread(L);
  lua_pop(L, 1);
  return M;
}

#endif
