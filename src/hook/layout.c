/* The fast path's self-check (hook/layout.h). A probe hook watches calls of a Lua function (of
   a chunk whose name is a long string), of a light C function given a coroutine, and of a C
   closure holding a coroutine; at each, what the mirrors read must equal what lua_getinfo,
   lua_getstack, lua_getlocal and lua_getupvalue say, and a chunk name pushed through the
   mirrors must be the very string lua_getinfo points into. The body the mirrors find in a
   coroutine (a C function's, then a Lua function's before, during and after its run) must be
   the one lua_getinfo describes. */
#include <string.h>

#include <lauxlib.h>

#include "hook/layout.h"
#include "util/luapriv.h"

int layout_skew;

#if LUAPRIV_KNOWN

/* The probe's state: what it saw and the first disagreement. */
typedef struct Probe {
  const char *why;
  int lua_calls, c_calls;
} Probe;

static const char PROBE_KEY = 'q';  /* registry: the Probe while the probes run */

static Probe *probe_of(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &PROBE_KEY);
  Probe *pr = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return pr;
}

static void check_lua(lua_State *L, lua_Debug *ar, Probe *pr) {
  const void *key, *src;
  int line;
  if (luapriv_callee(ar->i_ci, layout_skew ? sizeof(int) : 0, &key, &src, &line) != LP_LUA) {
    pr->why = "a Lua function's value tag disagrees with lua_getinfo";
    return;
  }
  lua_getinfo(L, "S", ar);
  if (line != ar->linedefined || ((const LPProto *)key)->lastlinedefined != ar->lastlinedefined) {
    pr->why = "a Lua function's prototype (lines defined) disagrees with lua_getinfo";
    return;
  }
  if (luapriv_string_text(src) != ar->source) {
    pr->why = "a Lua function's chunk name disagrees with lua_getinfo";
    return;
  }
  luapriv_push_string(L, src);
  size_t len;
  const char *s = lua_tolstring(L, -1, &len);
  int same = s == ar->source && len == ar->srclen;
  lua_pop(L, 1);
  if (!same) pr->why = "a chunk name pushed from the prototype is not the string lua_getinfo reads";
  pr->lua_calls++;
}

static void check_c(lua_State *L, lua_Debug *ar, Probe *pr) {
  const void *key, *src;
  int line;
  int what = luapriv_callee(ar->i_ci, 0, &key, &src, &line);
  lua_getinfo(L, "f", ar);
  lua_CFunction f = lua_tocfunction(L, -1);
  lua_pop(L, 1);
  if (what != LP_C || key != (const void *)(size_t)f) {
    pr->why = "a C function read from the called value disagrees with lua_getinfo";
    return;
  }
  lua_Debug caller;
  if (!lua_getstack(L, 1, &caller) || caller.i_ci != luapriv_parent(ar->i_ci)) {
    pr->why = "the caller's activation disagrees with lua_getstack";
    return;
  }
  /* The probe function is called once with a coroutine argument, once as a closure of one. */
  lua_State *arg = NULL, *up = NULL;
  if (lua_getlocal(L, ar, 1)) {
    arg = lua_tothread(L, -1);
    lua_pop(L, 1);
  }
  lua_getinfo(L, "f", ar);
  if (lua_getupvalue(L, -1, 1)) {
    up = lua_tothread(L, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (luapriv_arg_thread(ar->i_ci, 1) != arg) {
    pr->why = "a coroutine passed as an argument disagrees with lua_getlocal";
    return;
  }
  if (luapriv_upvalue_thread(ar->i_ci) != up) {
    pr->why = "a coroutine in a C closure's upvalue disagrees with lua_getupvalue";
    return;
  }
  pr->c_calls++;
}

static void probe_hook(lua_State *L, lua_Debug *ar) {
  Probe *pr = probe_of(L);
  if (!pr || pr->why || ar->event != LUA_HOOKCALL) return;
  lua_getinfo(L, "S", ar);
  if (ar->what[0] == 'C') check_c(L, ar, pr);
  else check_lua(L, ar, pr);
}

static int probe_c(lua_State *L) {
  (void)L;
  return 0;
}

static int probe_yield(lua_State *L) { return lua_yield(L, 0); }

/* A chunk name longer than Lua's short strings, so that it is not interned. */
static const char PROBE_CHUNK[] =
    "local f = ...\nreturn function()\n  f(f)\nend\n";
static const char PROBE_NAME[] =
    "=cprof's layout probe, with a chunk name too long to be a short string";

/* A coroutine body that yields two calls deep. */
static const char PROBE_BODY[] =
    "local y = ...\nlocal function inner() y() end\nreturn function()\n  inner()\nend\n";

/* The body on top of L, run as a coroutine: what luapriv_body reads must be the function
   lua_getinfo describes before it starts and while it is suspended, and nothing once it has
   finished. The body is popped. */
static const char *check_body(lua_State *L) {
  lua_Debug ar;
  lua_pushvalue(L, -1);
  lua_getinfo(L, ">S", &ar);
  lua_State *T = lua_newthread(L);
  lua_sethook(T, NULL, 0, 0);
  lua_pushvalue(L, -2);
  lua_xmove(L, T, 1);
  for (int round = 0; round < 3; round++) {
    const LPProto *p = luapriv_body(T);
    int nres;
    if (round < 2 ? !p || p->linedefined != ar.linedefined ||
                        luapriv_string_text(p->source) != ar.source
                  : p != NULL)
      return "the body of a coroutine disagrees with lua_getstack and lua_getinfo";
    if (round < 2 && lua_resume(T, L, 0, &nres) != (round == 0 ? LUA_YIELD : LUA_OK))
      return "the layout probe's coroutine failed";
    if (round < 2) lua_pop(T, nres);
  }
  lua_pop(L, 2);
  return NULL;
}

/* Runs protected: [probe userdata]. */
static int run_probes(lua_State *L) {
  lua_pushvalue(L, 1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &PROBE_KEY);
  lua_State *co = lua_newthread(L);  /* at index 2 */
  Probe *pr = lua_touserdata(L, 1);
  if (luapriv_state(co) != luapriv_state(L) || !luapriv_state(L)) {
    pr->why = "a coroutine's global state disagrees with its creator's";
    return 0;
  }
  int nres;
  lua_sethook(co, NULL, 0, 0);
  lua_pushcfunction(co, probe_yield);
  if (lua_resume(co, L, 0, &nres) != LUA_YIELD || luapriv_status(co) != lua_status(co) ||
      luapriv_status(L) != lua_status(L)) {
    pr->why = "a thread's status disagrees with lua_status";
    return 0;
  }
  if (luaL_loadbuffer(L, PROBE_CHUNK, sizeof PROBE_CHUNK - 1, PROBE_NAME) != LUA_OK)
    return lua_error(L);
  lua_pushcfunction(L, probe_c);
  lua_call(L, 1, 1);                 /* the main chunk: returns the Lua function */
  lua_pushvalue(L, 2);
  lua_pushcclosure(L, probe_c, 1);   /* a C closure holding the coroutine */
  lua_pushvalue(L, 2);
  lua_call(L, 1, 0);
  lua_pushcfunction(L, probe_c);
  lua_pushvalue(L, 2);
  lua_call(L, 1, 0);                 /* a light C function given the coroutine */
  lua_call(L, 0, 0);                 /* the Lua function, which calls a light C function */
  if (pr->why) return 0;
  if (luapriv_body(co)) {
    pr->why = "the body of a coroutine disagrees with lua_getstack and lua_getinfo";
    return 0;
  }
  if (luaL_loadbuffer(L, PROBE_BODY, sizeof PROBE_BODY - 1, PROBE_NAME) != LUA_OK)
    return lua_error(L);
  lua_pushcfunction(L, probe_yield);
  lua_call(L, 1, 1);
  pr->why = check_body(L);
  return 0;
}

const char *layout_check(lua_State *L) {
  if (!lua_checkstack(L, 8)) return "no stack space for the layout probe";
  lua_Hook h = lua_gethook(L);
  int mask = lua_gethookmask(L), count = lua_gethookcount(L);
  Probe *pr = lua_newuserdata(L, sizeof *pr);
  memset(pr, 0, sizeof *pr);
  lua_pushcfunction(L, run_probes);
  lua_insert(L, -2);
  lua_sethook(L, probe_hook, LUA_MASKCALL, 0);
  int status = lua_pcall(L, 1, 0, 0);
  lua_sethook(L, h, mask, count);
  const char *why = pr->why;
  if (status != LUA_OK) {
    lua_pop(L, 1);
    why = why ? why : "the layout probe failed to run";
  }
  lua_pushnil(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &PROBE_KEY);
  if (!why && (pr->lua_calls < 2 || pr->c_calls < 3)) why = "the layout probe saw too few calls";
  return why;
}

#else

const char *layout_check(lua_State *L) {
  (void)L;
#if LUA_VERSION_NUM < 504
  return "LuaJIT: no fast path";
#else
  return "an unknown Lua release: no fast path";
#endif
}

#endif
