/* Record-time filters (options exclude, include, builtins = false) and the functions chosen for
   line events (lines = {f, g}): decided once per function, on the call that missed the hook's
   cache (hook/ident.c makes the entry; this says whether it is recorded), so they cost nothing
   per event. The patterns live in the registry, in a weak table keyed by the profile. */
#include <lauxlib.h>

#include "hook/filters.h"
#include "util/compat.h"
#include "util/weak.h"

static const char FILTERS_KEY = 'x';  /* registry: profile (light userdata) -> its filters:
                                         { find = string.find, exclude = {..}, include = {..} } */

/* [filters, file]: whether the file is left out: no include pattern finds it (when there are
   some), or an exclude pattern does. Called protected: a pattern may raise. */
static int file_left_out(lua_State *L) {
  int out = 0;
  for (int list = 0; list < 2 && !out; list++) {
    lua_getfield(L, 1, list ? "exclude" : "include");
    int found = 0, i = 1;
    for (; !found; i++) {
      lua_rawgeti(L, -1, i);
      if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        break;
      }
      lua_getfield(L, 1, "find");
      lua_pushvalue(L, 2);
      lua_pushvalue(L, -3);
      lua_call(L, 2, 1);
      found = !lua_isnil(L, -1);
      lua_pop(L, 2);
    }
    /* An include list that found nothing leaves the file out (i > 1: the list has patterns). */
    out = list ? found : !found && i > 1;
    lua_pop(L, 1);
  }
  lua_pushboolean(L, out);
  return 1;
}

/* Whether entry `en` is left out; -1 when that cannot be told now (out of memory). */
static int left_out(Profiler *P, lua_State *L, const Entry *en) {
  if (en->internal) return 0;
  if (en->kind == KIND_C) return (P->filters & PROF_NO_BUILTINS) != 0;
  if (!(P->filters & PROF_FILE_FILTERS)) return 0;
  if (!lua_checkstack(L, 8)) return -1;
  lua_pushcfunction(L, file_left_out);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &FILTERS_KEY);
  lua_rawgetp(L, -1, P);
  lua_remove(L, -2);
  lua_pushstring(L, fn_file(&P->fns, en));
  int out = lua_pcall(L, 2, 1, 0) == LUA_OK ? lua_toboolean(L, -1) : -1;
  lua_pop(L, 1);
  return out;
}

int filters_excluded(Profiler *P, lua_State *L, uint32_t e) {
  if (!P->filters) return 0;
  Entry *en = &P->fns.entries[e];
  if (en->filter == FILTER_UNDECIDED) {
    int out = left_out(P, L, en);
    if (out < 0) return 0;  /* kept this time; decided on a later call */
    en->filter = out ? FILTER_OUT : FILTER_IN;
  }
  return en->filter == FILTER_OUT;
}

/* Pushes the list of patterns of option `name` (value at `idx`: nil, a pattern or a list of
   them), each checked by string.find (below the list) on its own text. Returns how many. */
static int push_patterns(lua_State *L, int idx, const char *name) {
  lua_newtable(L);
  int t = lua_type(L, idx), i = 1;
  if (t == LUA_TNIL) return 0;
  if (t != LUA_TSTRING && t != LUA_TTABLE)
    luaL_error(L, "cprof: option '%s' must be a Lua pattern on file names or a list of them, not a"
                  " %s", name, luaL_typename(L, idx));
  for (;; i++) {
    if (t == LUA_TSTRING) {
      if (i > 1) break;
      lua_pushvalue(L, idx);
    } else {
      lua_rawgeti(L, idx, i);
      if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        break;
      }
      if (lua_type(L, -1) != LUA_TSTRING)
        luaL_error(L, "cprof: option '%s': item %d must be a Lua pattern (a string), not a %s",
                   name, i, luaL_typename(L, -1));
    }
    lua_pushvalue(L, -3);
    lua_pushvalue(L, -2);
    lua_pushvalue(L, -3);
    if (lua_pcall(L, 2, 0, 0) != LUA_OK)
      luaL_error(L, "cprof: option '%s': pattern '%s': %s", name, lua_tostring(L, -2),
                 lua_tostring(L, -1));
    lua_rawseti(L, -2, i);
  }
  return i - 1;
}

void filters_set(Profiler *P, lua_State *L, int exclude, int include, int builtins) {
  exclude = lua_absindex(L, exclude);
  include = lua_absindex(L, include);
  lua_newtable(L);
  lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
  lua_getfield(L, -1, "string");
  lua_getfield(L, -1, "find");
  lua_replace(L, -3);
  lua_pop(L, 1);
  if (!lua_isfunction(L, -1)) luaL_error(L, "cprof: file filters need string.find");
  int n = push_patterns(L, exclude, "exclude");
  lua_setfield(L, -3, "exclude");
  n += push_patterns(L, include, "include");
  lua_setfield(L, -3, "include");
  lua_setfield(L, -2, "find");
  P->filters = (builtins ? 0 : PROF_NO_BUILTINS) | (n ? PROF_FILE_FILTERS : 0);
  weak_table(L, &FILTERS_KEY);
  lua_pushvalue(L, -2);
  lua_rawsetp(L, -2, P);
  lua_pop(L, 2);
}

/* Sets the filters of `to` to those of `from` (NULL: none). */
static void share_filters(Profiler *to, const Profiler *from, lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &FILTERS_KEY);
  if (lua_istable(L, -1)) {
    if (from) lua_rawgetp(L, -1, from);
    else lua_pushnil(L);
    lua_rawsetp(L, -2, to);
  }
  lua_pop(L, 1);
}

void filters_copy(Profiler *to, const Profiler *from, lua_State *L) {
  to->filters = from->filters;
  share_filters(to, from, L);
}

void filters_drop(Profiler *P, lua_State *L) { share_filters(P, NULL, L); }

/* ---- Functions chosen for line events --------------------------------------------------- */

/* The filters table of P pushed (nil when P has none). */
static void push_filters(const Profiler *P, lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &FILTERS_KEY);
  if (lua_istable(L, -1)) lua_rawgetp(L, -1, P);
  else lua_pushnil(L);
  lua_remove(L, -2);
}

/* [filters, line defined, chunk-name text (light userdata), length]: whether that function is
   chosen (filters.lines["<line>:<chunk name>"]). Called protected: it allocates. */
static int is_chosen(lua_State *L) {
  lua_getfield(L, 1, "lines");
  lua_pushfstring(L, "%d:", (int)lua_tointeger(L, 2));
  lua_pushlstring(L, lua_touserdata(L, 3), (size_t)lua_tointeger(L, 4));
  lua_concat(L, 2);
  lua_rawget(L, -2);
  return 1;
}

void filters_choose_lines(Profiler *P, lua_State *L, uint32_t e) {
  Entry *en = &P->fns.entries[e];
  if (en->lines != FILTER_UNDECIDED) return;
  if (en->kind == KIND_C || en->internal || !lua_checkstack(L, 8)) {
    en->lines = FILTER_OUT;
    return;
  }
  const Chunk *c = &P->fns.chunks[en->chunk];
  lua_pushcfunction(L, is_chosen);
  push_filters(P, L);
  lua_pushinteger(L, en->line);
  lua_pushlightuserdata(L, c->text);
  lua_pushinteger(L, (lua_Integer)c->len);
  if (lua_pcall(L, 4, 1, 0) == LUA_OK) en->lines = lua_toboolean(L, -1) ? FILTER_IN : FILTER_OUT;
  lua_pop(L, 1);
}

void filters_set_lines(Profiler *P, lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  push_filters(P, L);
  lua_newtable(L);
  for (int i = 1;; i++) {
    lua_rawgeti(L, idx, i);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      break;
    }
    if (!lua_isfunction(L, -1) || lua_iscfunction(L, -1))
      luaL_error(L, "cprof: option 'lines': item %d must be a Lua function, not a %s", i,
                 lua_iscfunction(L, -1) ? "C function (it has no lines)" : luaL_typename(L, -1));
    lua_Debug ar;
    lua_getinfo(L, ">S", &ar);
    lua_pushfstring(L, "%d:", ar.linedefined);
    lua_pushlstring(L, ar.source, compat_srclen(&ar));
    lua_concat(L, 2);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
  }
  lua_setfield(L, -2, "lines");
  lua_pop(L, 1);
}
