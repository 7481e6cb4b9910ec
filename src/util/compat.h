/*
 * util/compat.h — every difference between Lua 5.4's API and LuaJIT's (5.1) that cprof meets:
 * the few 5.2+ functions it uses, how an activation is identified, whether hooks are per thread,
 * and LuaJIT's compiler, which must be off while profiling. All inline: free on Lua 5.4.
 */
#ifndef CPROF_COMPAT_H
#define CPROF_COMPAT_H

#include <stdint.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

/* Built against another Lua's headers (LUA_INCDIR, LuaRocks' --lua-version), cprof says so
   before the compiler trips over what that Lua lacks. */
#if LUA_VERSION_NUM != 504 && LUA_VERSION_NUM != 501
#error "cprof needs Lua 5.4 or LuaJIT 2.1; these are the headers of another Lua"
#endif
#if LUA_VERSION_NUM == 501 && defined(__has_include)
#if !__has_include(<luajit.h>)
#error "cprof needs Lua 5.4 or LuaJIT 2.1; these are the headers of Lua 5.1"
#endif
#endif
#if LUA_VERSION_NUM < 502
#include <luajit.h>
#endif

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

/* The Lua the module is built for, as a profile's meta names it: "Lua 5.4", "LuaJIT 2.1.0-beta3"
   (LuaJIT's LUA_VERSION says "Lua 5.1", and a report says that LuaJIT's compiler was off). */
#ifdef LUAJIT_VERSION
#define COMPAT_LUA_NAME LUAJIT_VERSION
#else
#define COMPAT_LUA_NAME LUA_VERSION
#endif

#if LUA_VERSION_NUM >= 504
/* The identity of the activation a lua_Debug describes (from the hook or lua_getstack): its
   CallInfo. Lua 5.4 hooks are per thread. */
#define COMPAT_CI(ar) ((const void *)(ar).i_ci)
#define COMPAT_PER_THREAD_HOOKS 1
/* Every function's call is followed by its return event (LuaJIT's built-ins send none). */
#define COMPAT_ALL_RETURN 1
#else
/* LuaJIT: i_ci is the frame's offset in the thread's stack (lua_getstack adds the frame size
   in the high bits); its hook is one for all threads. A vararg function's frame moves up the
   stack after its call event, so a Lua frame's offset is taken from the next event in its
   thread: a call it makes (its offset is that call's parent) or its own return (hook.c). */
#define COMPAT_CI(ar) ((const void *)(intptr_t)((ar).i_ci & 0xffff))
#define COMPAT_PER_THREAD_HOOKS 0
#define COMPAT_ALL_RETURN 0
#endif

/* The length of ar->source (lua_getinfo "S"). */
static inline size_t compat_srclen(const lua_Debug *ar) {
#if LUA_VERSION_NUM >= 504
  return ar->srclen;
#else
  return strlen(ar->source);
#endif
}

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

/* LuaJIT's compiled code calls no hooks: while profiling, everything runs in the interpreter, so
   every call is seen. compat_jit_off flushes the compiled code, turns the compiler off and says
   whether it was on; compat_jit_on turns it back on. Nothing to do on Lua 5.4. */
#if LUA_VERSION_NUM < 502
static inline int compat_jit_is_on(lua_State *L) {
  int top = lua_gettop(L), on = 0;
  lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
  lua_getfield(L, -1, "jit");
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "status");
    if (lua_isfunction(L, -1) && lua_pcall(L, 0, 1, 0) == 0) on = lua_toboolean(L, -1);
  }
  lua_settop(L, top);
  return on;
}

static inline int compat_set_jit(lua_State *L) {
  int mode = (int)(intptr_t)lua_touserdata(L, 1);
  luaJIT_setmode(L, 0, LUAJIT_MODE_ENGINE | mode);
  return 0;
}

/* Switching the compiler can raise an error (for one, inside a finalizer while the state
   closes): it is a wish, not a requirement, so it is done protected. */
static inline void compat_jit_mode(lua_State *L, int mode) {
  lua_cpcall(L, compat_set_jit, (void *)(intptr_t)mode);
}

static inline int compat_jit_off(lua_State *L) {
  int on = compat_jit_is_on(L);
  compat_jit_mode(L, LUAJIT_MODE_FLUSH);
  compat_jit_mode(L, LUAJIT_MODE_OFF);
  return on;
}

static inline void compat_jit_on(lua_State *L) { compat_jit_mode(L, LUAJIT_MODE_ON); }
#else
static inline int compat_jit_off(lua_State *L) {
  (void)L;
  return 0;
}

static inline void compat_jit_on(lua_State *L) { (void)L; }
#endif

#endif
