/* cprof.core: the Profile object over the engine. Lua-side conveniences (run, runctx, reports)
   live in lua/cprof/init.lua, added to the same method table. */
#include <stdlib.h>

#include <lauxlib.h>

#include "alloc.h"
#include "compat.h"
#include "funcs.h"
#include "hook.h"

#define PROFILE_MT "cprof.Profile"

static const char ANCHOR_KEY = 'a';  /* registry: the enabled Profile, kept from collection */

/* A profile whose tables could not be made (out of memory) gets another try on each use. */
static Profiler *check(lua_State *L) {
  Profiler *P = luaL_checkudata(L, 1, PROFILE_MT);
  if (!P->ready && prof_clear(P)) luaL_error(L, "cprof: out of memory");
  return P;
}

static int l_new(lua_State *L) {
  const cprof_timer *timer = cprof_timer_default();
  if (lua_istable(L, 1)) {
    lua_getfield(L, 1, "timer");
    if (lua_type(L, -1) == LUA_TSTRING) {
      timer = cprof_timer_find(lua_tostring(L, -1));
      if (!timer) return luaL_error(L, "cprof: unknown timer '%s'", lua_tostring(L, -1));
    } else if (!lua_isnil(L, -1)) {
      return luaL_error(L, "cprof: option 'timer' must be a timer name, not a %s",
                        luaL_typename(L, -1));
    }
    lua_pop(L, 1);
  } else if (!lua_isnoneornil(L, 1)) {
    return luaL_argerror(L, 1, "options table expected");
  }
  Profiler *P = lua_newuserdata(L, sizeof *P);
  int failed = prof_init(P, timer);
  luaL_getmetatable(L, PROFILE_MT);
  lua_setmetatable(L, -2);  /* from here on __gc frees whatever prof_init made */
  if (failed) return luaL_error(L, "cprof: out of memory");
  return 1;
}

static int l_enable(lua_State *L) {
  Profiler *P = check(L);
  const char *err = hook_enable(P, L);
  if (err) return luaL_error(L, "cprof: %s", err);
  lua_pushvalue(L, 1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &ANCHOR_KEY);
  return 0;
}

static void disable(lua_State *L, Profiler *P) {
  if (!P->enabled) return;
  hook_disable(P, L);
  lua_pushnil(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &ANCHOR_KEY);
}

static int l_disable(lua_State *L) {
  disable(L, check(L));
  return 0;
}

static int l_clear(lua_State *L) {
  Profiler *P = check(L);
  if (P->enabled) return luaL_error(L, "cprof: clear() while the profile is enabled; disable() first");
  if (prof_clear(P)) return luaL_error(L, "cprof: out of memory");
  return 0;
}

static int l_isenabled(lua_State *L) {
  lua_pushboolean(L, check(L)->enabled);
  return 1;
}

/* Calls f(...) with profiling on and returns its results; an error propagates after profiling
   is off, so no hook is left behind. */
static int l_runcall(lua_State *L) {
  Profiler *P = check(L);
  luaL_checkany(L, 2);
  l_enable(L);
  int status = lua_pcall(L, lua_gettop(L) - 2, LUA_MULTRET, 0);
  disable(L, P);
  if (status != LUA_OK) return lua_error(L);
  return lua_gettop(L) - 1;
}

static void set_stat(lua_State *L, const Stat *s, double unit) {
  lua_pushinteger(L, (lua_Integer)s->calls);
  lua_setfield(L, -2, "ncalls");
  lua_pushinteger(L, (lua_Integer)(s->calls - s->rcalls));
  lua_setfield(L, -2, "pcalls");
  lua_pushnumber(L, (lua_Number)s->it * unit);
  lua_setfield(L, -2, "tottime");
  lua_pushnumber(L, (lua_Number)s->tt * unit);
  lua_setfield(L, -2, "cumtime");
}

static const char *const KIND_NAMES[] = {"Lua", "main", "C"};

/* The numbers as plain tables: see docs/API.md for the layout. */
static int l_getstats(lua_State *L) {
  Profiler *P = check(L);
  double unit = P->timer.unit;
  uint32_t *row = cprof_malloc(((size_t)P->nentries + 1) * sizeof *row);
  if (!row) return luaL_error(L, "cprof: out of memory");
  lua_createtable(L, 0, 4);
  lua_pushstring(L, P->timer.name);
  lua_setfield(L, -2, "timer");
  lua_pushnumber(L, unit);
  lua_setfield(L, -2, "unit");
  if (P->oom) {
    lua_pushinteger(L, (lua_Integer)P->dropped);
    lua_setfield(L, -2, "dropped");
  }
  lua_createtable(L, (int)P->nentries, 0);
  uint32_t n = 0;
  for (uint32_t i = 0; i < P->nentries; i++) {
    const Entry *e = &P->entries[i];
    row[i] = 0;
    if (e->s.calls == 0) continue;
    row[i] = ++n;
    lua_createtable(L, 0, 10);
    lua_pushstring(L, e->file);
    lua_setfield(L, -2, "file");
    lua_pushinteger(L, e->kind == KIND_C ? 0 : e->line);
    lua_setfield(L, -2, "line");
    lua_pushstring(L, e->name);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, KIND_NAMES[e->kind]);
    lua_setfield(L, -2, "what");
    set_stat(L, &e->s, unit);
    lua_newtable(L);
    lua_setfield(L, -2, "callers");
    lua_rawseti(L, -2, (lua_Integer)n);
  }
  for (uint32_t i = 0; i < P->nedges; i++) {
    const Edge *g = &P->edges[i];
    if (g->s.calls == 0 || !row[g->caller] || !row[g->callee]) continue;
    lua_rawgeti(L, -1, (lua_Integer)row[g->callee]);
    lua_getfield(L, -1, "callers");
    lua_createtable(L, 0, 4);
    set_stat(L, &g->s, unit);
    lua_rawseti(L, -2, (lua_Integer)row[g->caller]);
    lua_pop(L, 2);
  }
  free(row);
  lua_setfield(L, -2, "entries");
  return 1;
}

static int l_gc(lua_State *L) {
  Profiler *P = luaL_checkudata(L, 1, PROFILE_MT);
  hook_forget(P, L);
  prof_free(P);
  return 0;
}

static int l_mark_internal(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  funcs_mark_internal(L, 1);
  return 0;
}

static int l_fail_allocations(lua_State *L) {
  cprof_fail_after((long)luaL_optinteger(L, 1, -1));
  return 0;
}

static int l_hooked(lua_State *L) {
  lua_State *T = lua_type(L, 1) == LUA_TTHREAD ? lua_tothread(L, 1) : L;
  lua_pushboolean(L, hook_installed(T));
  return 1;
}

static const luaL_Reg methods[] = {
  {"enable", l_enable},       {"disable", l_disable},   {"clear", l_clear},
  {"getstats", l_getstats},   {"runcall", l_runcall},   {"is_enabled", l_isenabled},
  {NULL, NULL}};

int luaopen_cprof_core(lua_State *L) {
  hook_setup(L);
  if (luaL_newmetatable(L, PROFILE_MT)) {
    lua_newtable(L);
    luaL_setfuncs(L, methods, 0);
    for (const luaL_Reg *m = methods; m->name; m++) {
      lua_getfield(L, -1, m->name);
      funcs_mark_internal(L, -1);
      lua_pop(L, 1);
    }
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_createtable(L, 0, 4);
  lua_pushcfunction(L, l_new);
  lua_setfield(L, -2, "new");
  lua_pushcfunction(L, l_mark_internal);
  lua_setfield(L, -2, "mark_internal");
  lua_pushcfunction(L, l_hooked);
  lua_setfield(L, -2, "hooked");
  lua_pushcfunction(L, l_fail_allocations);
  lua_setfield(L, -2, "fail_allocations");
  lua_getfield(L, -2, "__index");
  lua_setfield(L, -2, "methods");
  lua_remove(L, -2);
  return 1;
}
