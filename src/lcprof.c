/* cprof.core: the Profile object over the hook, the engine and the tables, plus the dump and
   memory subtables. Lua-side conveniences (run, runctx, reports) live in lua/cprof/init.lua,
   added to the same method table. Every function here runs when Lua calls it, never per
   profiled call. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>

#include "dump/format.h"
#include "dump/ldump.h"
#include "dump/out.h"
#include "hook/hook.h"
#include "hook/filters.h"
#include "hook/ident.h"
#include "hook/layout.h"
#include "hook/live.h"
#include "hook/luatimer.h"
#include "hook/proghook.h"
#include "mem/lmemory.h"
#include "tables/snapshot.h"
#include "util/compat.h"
#include "util/fault.h"

#define PROFILE_MT "cprof.Profile"

static const char ANCHOR_KEY = 'a';  /* registry: the enabled Profile, kept from collection */

/* A profile whose tables could not be made (out of memory) gets another try on each use. */
/* The Profile userdata: the profiler, and the Lua function timer when there is one (outside
   the Profiler, whose tables clear() rebuilds). */
typedef struct LProfile {
  Profiler P;
  LuaTimer lt;
  int subcalls;  /* 0: reports get no caller/callee data (init.lua drops it from snapshots) */
} LProfile;

static Profiler *check(lua_State *L) {
  Profiler *P = luaL_checkudata(L, 1, PROFILE_MT);
  if (!P->ready && prof_clear(P)) luaL_error(L, "cprof: out of memory");
  return P;
}

/* Pushes a new Profile with `timer`, or with the Lua function at `timer_fn` (0: none). */
static Profiler *push_profile(lua_State *L, const cprof_timer *timer, int timer_fn, double unit) {
  LProfile *lp = lua_newuserdata(L, sizeof *lp);
  Profiler *P = &lp->P;
  lp->lt.ref = LUA_NOREF;
  lp->subcalls = 1;
  int failed = prof_init(P, timer);
  if (timer_fn) luatimer_init(&lp->lt, &P->clock, L, timer_fn, unit);
  luaL_getmetatable(L, PROFILE_MT);
  lua_setmetatable(L, -2);  /* from here on __gc frees whatever prof_init made */
  if (failed) luaL_error(L, "cprof: out of memory");
  return P;
}

/* CPROF_FAST_PATH=0 (or off, false, no) turns the fast path off for every profile that does not
   say: the specs run once that way (make spec-public). */
static int fast_path_default(void) {
  const char *v = getenv("CPROF_FAST_PATH");
  return !v || !(strcmp(v, "0") == 0 || strcmp(v, "off") == 0 || strcmp(v, "false") == 0 ||
                 strcmp(v, "no") == 0);
}

/* Profile{...}: the options, as Python's cProfile.Profile(timer, timeunit, subcalls, builtins)
   plus cprof's own. Read raw: the table's metamethods never run. */
static const char *const OPTIONS[] = {"timer", "unit", "timeunit", "bias", "lines", "tree_cap",
                                      "recursion", "subcalls", "builtins", "fast_path", "exclude",
                                      "include", "trace", "trace_size", NULL};

/* Whether `a` is a likely typo of `b`: at most two single-character edits apart (and not
   about as short as the edits). */
static int close_to(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 31 || lb > 31 || la + 2 < lb || lb + 2 < la || la < 3) return 0;
  size_t row[32];
  for (size_t j = 0; j <= lb; j++) row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      diag = up;
      row[j] = best;
    }
  }
  return row[lb] <= 2;
}

static int unknown_option(lua_State *L, const char *name) {
  for (int i = 0; OPTIONS[i]; i++)
    if (close_to(name, OPTIONS[i]))
      return luaL_error(L, "cprof: unknown option '%s' (did you mean '%s'?)", name, OPTIONS[i]);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 0; OPTIONS[i]; i++) {
    if (i) luaL_addstring(&b, ", ");
    luaL_addstring(&b, OPTIONS[i]);
  }
  luaL_pushresult(&b);
  return luaL_error(L, "cprof: unknown option '%s' (the options are %s)", name, lua_tostring(L, -1));
}

/* The value of option `name` of the table at index 1, pushed (nil when absent). */
static int option(lua_State *L, const char *name) {
  lua_pushstring(L, name);
  lua_rawget(L, 1);
  return lua_type(L, -1);
}

static int boolean_option(lua_State *L, const char *name, int dflt) {
  int t = option(L, name);
  int v = t == LUA_TNIL ? dflt : lua_toboolean(L, -1);
  if (t != LUA_TNIL && t != LUA_TBOOLEAN)
    return luaL_error(L, "cprof: option '%s' must be true or false, not a %s", name, luaL_typename(L, -1));
  lua_pop(L, 1);
  return v;
}

/* Option `name`, a whole number from 1 to 4e9 (dflt when absent). */
static uint32_t count_option(lua_State *L, const char *name, uint32_t dflt) {
  uint32_t v = dflt;
  if (option(L, name) != LUA_TNIL) {
    lua_Number n = lua_tonumber(L, -1);
    if (!lua_isnumber(L, -1) || n < 1 || n > 4e9 || n != (lua_Number)(uint32_t)n)
      luaL_error(L, "cprof: option '%s' must be a whole number from 1 to 4e9", name);
    v = (uint32_t)n;
  }
  lua_pop(L, 1);
  return v;
}

/* The built-in timers this process can have, for messages: "tsc, monotonic, ...". */
static void push_timer_names(lua_State *L) {
  static const char *const names[] = {"tsc", "monotonic", "cpu", "thread", "counter"};
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  int n = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    cprof_timer t;
    if (cprof_timer_get(names[i], &t)) continue;
    if (n++) luaL_addstring(&b, ", ");
    luaL_addstring(&b, names[i]);
  }
  luaL_pushresult(&b);
}

/* The seconds per tick of a function timer: option 'unit', or 'timeunit', Python's name for
   it; *name is the one given (NULL: neither). */
static double unit_option(lua_State *L, const char **name) {
  double unit = 0;
  *name = NULL;
  for (int i = 0; i < 2; i++) {
    const char *opt = i ? "timeunit" : "unit";
    if (option(L, opt) != LUA_TNIL) {
      double u = lua_tonumber(L, -1);
      if (!lua_isnumber(L, -1) || !(u > 0) || u == HUGE_VAL)
        luaL_error(L, "cprof: option '%s' must be a positive number of seconds", opt);
      if (*name && u != unit)
        luaL_error(L, "cprof: options 'unit' and 'timeunit' are one option (Python's name and"
                      " cprof's): give one");
      unit = u;
      *name = opt;
    }
    lua_pop(L, 1);
  }
  return unit;
}

static int l_new(lua_State *L) {
  cprof_timer timer = cprof_timer_default();
  uint32_t tree_cap = TREE_CAP_DEFAULT, recursion = TREE_RECURSION_DEFAULT, trace_size = 0;
  int lines = 0, subcalls = 1, builtins = 1, fast = fast_path_default();
  int timer_fn = 0;  /* stack index of a Lua function timer; option values stay on the stack */
  double unit = 0, bias = 0;
  if (lua_istable(L, 1)) {
    lua_settop(L, 1);
    lua_pushnil(L);
    while (lua_next(L, 1)) {
      lua_pop(L, 1);
      if (lua_type(L, -1) != LUA_TSTRING)
        return luaL_error(L, "cprof: options have names (Profile{lines = true}); a %s is no name",
                          luaL_typename(L, -1));
      int known = 0;
      for (int i = 0; OPTIONS[i] && !known; i++) known = strcmp(lua_tostring(L, -1), OPTIONS[i]) == 0;
      if (!known) return unknown_option(L, lua_tostring(L, -1));
    }
    const char *unit_name;
    unit = unit_option(L, &unit_name);
    if (option(L, "timer") == LUA_TSTRING) {
      const char *why = cprof_timer_get(lua_tostring(L, -1), &timer);
      if (why) {
        push_timer_names(L);
        return luaL_error(L, "cprof: timer '%s': %s (the timers are %s, or one the host registered)",
                          lua_tostring(L, -2), why, lua_tostring(L, -1));
      }
      if (unit_name) return luaL_error(L, "cprof: option '%s' goes with a function timer", unit_name);
    } else if (lua_isfunction(L, -1)) {
      timer_fn = lua_gettop(L);
    } else if (!lua_isnil(L, -1)) {
      return luaL_error(L, "cprof: option 'timer' must be a timer name or a function, not a %s",
                        luaL_typename(L, -1));
    } else if (unit_name) {
      return luaL_error(L, "cprof: option '%s' goes with a function timer", unit_name);
    }
    int lines_type = option(L, "lines");
    if (lines_type == LUA_TTABLE) {
      lines = LINES_CHOSEN;
      lua_pop(L, 1);
    } else if (lines_type != LUA_TNIL && lines_type != LUA_TBOOLEAN) {
      return luaL_error(L, "cprof: option 'lines' must be true, false or a list of functions, not a %s",
                        luaL_typename(L, -1));
    } else {
      lua_pop(L, 1);
      lines = boolean_option(L, "lines", 0) ? LINES_ALL : LINES_OFF;
    }
    fast = boolean_option(L, "fast_path", fast);
    subcalls = boolean_option(L, "subcalls", 1);
    builtins = boolean_option(L, "builtins", 1);
    if (option(L, "bias") != LUA_TNIL) {
      bias = lua_tonumber(L, -1);
      if (!lua_isnumber(L, -1) || bias != bias)
        return luaL_error(L, "cprof: option 'bias' must be a number of seconds per event");
    }
    lua_pop(L, 1);
    tree_cap = count_option(L, "tree_cap", tree_cap);
    recursion = count_option(L, "recursion", recursion);
    if (boolean_option(L, "trace", 0)) trace_size = TRACE_SIZE_DEFAULT;
    if (option(L, "trace_size") != LUA_TNIL) {
      lua_Number n = lua_tonumber(L, -1);
      if (!trace_size) return luaL_error(L, "cprof: option 'trace_size' goes with trace = true");
      if (!lua_isnumber(L, -1) || n < 1 || n > 0x7fffffff || n != (lua_Number)(uint32_t)n)
        return luaL_error(L, "cprof: option 'trace_size' must be a whole number of events from 1"
                             " to 2^31-1");
      trace_size = (uint32_t)n;
    }
    lua_pop(L, 1);
  } else if (!lua_isnoneornil(L, 1)) {
    return luaL_error(L, "bad argument #1 to 'Profile' (table expected, got %s)", luaL_typename(L, 1));
  }
  Profiler *P = push_profile(L, &timer, timer_fn, unit);
  if (lua_istable(L, 1)) {
    option(L, "exclude");
    option(L, "include");
    filters_set(P, L, -2, -1, builtins);
    lua_pop(L, 2);
    if (lines == LINES_CHOSEN) {
      option(L, "lines");
      filters_set_lines(P, L, -1);
      lua_pop(L, 1);
    }
  }
  P->tree.limit = tree_cap;
  P->tree.recursion = recursion;
  P->trace.size = trace_size;
  P->lines.on = lines;
  P->public_only = !fast;
  P->bias = bias;
  ((LProfile *)P)->subcalls = subcalls;
  return 1;
}

/* A new profile with the same timer and options, empty (Profile:calibrate measures with one);
   a boolean argument turns its line events on or off. */
static int l_sibling(lua_State *L) {
  LProfile *lp = (LProfile *)check(L);
  int fn = 0;
  if (lp->lt.ref != LUA_NOREF) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, lp->lt.ref);
    fn = lua_gettop(L);
  }
  Profiler *P = push_profile(L, &lp->P.clock.timer, fn, lp->lt.ticks ? lp->P.clock.timer.unit : 0);
  P->tree.limit = lp->P.tree.limit;
  P->tree.recursion = lp->P.tree.recursion;
  P->trace.size = lp->P.trace.size;
  P->lines.on = lua_isnoneornil(L, 2) ? lp->P.lines.on : lua_toboolean(L, 2);
  P->public_only = lp->P.public_only;
  P->bias = lp->P.bias;
  ((LProfile *)P)->subcalls = lp->subcalls;
  filters_copy(P, &lp->P, L);
  return 1;
}

static cprof_ticks now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (cprof_ticks)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int l_enable(lua_State *L) {
  Profiler *P = check(L);
  if (P->enabled) return 0;
  const char *err = hook_enable(P, L);
  if (err) return luaL_error(L, "cprof: %s", err);
  if (P->start_time == 0) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    P->start_time = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
  }
  P->enabled_at = now_ns();
  lua_pushvalue(L, 1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &ANCHOR_KEY);
  return 0;
}

static void disable(lua_State *L, Profiler *P) {
  if (!P->enabled) return;
  hook_disable(P, L);
  P->enabled_ns += now_ns() - P->enabled_at;
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
  ident_release(P, L);
  if (prof_clear(P)) return luaL_error(L, "cprof: out of memory");
  return 0;
}

static int l_bias(lua_State *L) {
  Profiler *P = check(L);
  if (!lua_isnoneornil(L, 2)) {
    double b = luaL_checknumber(L, 2);
    if (b != b) return luaL_argerror(L, 2, "bias must be a number");
    P->bias = b;
  }
  lua_pushnumber(L, P->bias);
  return 1;
}

/* The profile's timer now, in its own ticks times its unit: seconds. */
static int l_now(lua_State *L) {
  Profiler *P = check(L);
  P->clock.L = L;
  lua_pushnumber(L, (lua_Number)clock_read_outside(&P->clock) * P->clock.timer.unit);
  return 1;
}

/* Zeroes the numbers, keeping the functions and the open frames (also while enabled). */
static int l_reset(lua_State *L) {
  Profiler *P = check(L);
  prof_reset(P);
  P->enabled_ns = 0;
  if (P->enabled) P->enabled_at = now_ns();
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

/* What a report must say besides the numbers, set in the table at the top: the readings a Lua
   function timer got wrong, and subcalls = false for a profile made without caller data. */
static void set_extras(lua_State *L, Profiler *P) {
  const LProfile *lp = (LProfile *)P;
  if (lp->lt.ref != LUA_NOREF && lp->lt.errors != 0) {
    lua_pushinteger(L, lp->lt.errors);
    lua_setfield(L, -2, "timer_errors");
  }
  if (!lp->subcalls) {
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "subcalls");
  }
}

static int l_getstats(lua_State *L) {
  Profiler *P = check(L);
  ident_name_all(P, L);
  if (snap_push_stats(L, P)) return luaL_error(L, "cprof: out of memory");
  set_extras(L, P);
  return 1;
}

static int l_snapshot(lua_State *L) {
  Profiler *P = check(L);
  ident_name_all(P, L);
  snap_push_snapshot(L, P, P->enabled ? now_ns() - P->enabled_at : 0);
  lua_getfield(L, -1, "meta");
  set_extras(L, P);
  lua_pop(L, 1);
  return 1;
}

static int l_getpid(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)getpid());
  return 1;
}

/* Sets a variable of the process's environment, which the programs it starts inherit
   (cprof.auto marks the process that started profiling, so that a child knows it is one). */
static int l_setenv(lua_State *L) {
  const char *name = luaL_checkstring(L, 1), *value = luaL_checkstring(L, 2);
  if (setenv(name, value, 1) != 0) return luaL_error(L, "cprof: setenv %s: %s", name, strerror(errno));
  return 0;
}

static int l_hostname(lua_State *L) {
  char buf[256];
  if (gethostname(buf, sizeof buf - 1) != 0) return luaL_error(L, "cprof: hostname: %s", strerror(errno));
  buf[sizeof buf - 1] = '\0';
  lua_pushstring(L, buf);
  return 1;
}

/* A file's modification time in Unix seconds (pstats prints it above a loaded profile). */
static int l_mtime(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  struct stat sb;
  if (stat(path, &sb) != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "cprof: %s: %s", path, strerror(errno));
    return 2;
  }
  lua_pushnumber(L, (lua_Number)sb.st_mtime);
  return 1;
}

static int l_gc(lua_State *L) {
  LProfile *lp = luaL_checkudata(L, 1, PROFILE_MT);
  hook_forget(&lp->P, L);
  ident_release(&lp->P, L);
  filters_drop(&lp->P, L);
  prof_free(&lp->P);
  luatimer_free(&lp->lt, L);
  return 0;
}

static int l_mark_internal(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  ident_mark_internal(L, 1, NULL);
  return 0;
}

static int l_fail_allocations(lua_State *L) {
  fault_after((long)luaL_optinteger(L, 1, -1));
  return 0;
}

/* For the specs: the fast path's self-check reads a field at a wrong offset while on. */
static int l_skew_layout(lua_State *L) {
  layout_skew = lua_toboolean(L, 1);
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
  {"snapshot", l_snapshot},   {"bias", l_bias},         {"now", l_now},
  {"sibling", l_sibling},     {"reset", l_reset},
  {NULL, NULL}};

int luaopen_cprof_core(lua_State *L) {
  ident_setup(L);
  proghook_setup(L);
  if (luaL_newmetatable(L, PROFILE_MT)) {
    lua_newtable(L);
    luaL_setfuncs(L, methods, 0);
    for (const luaL_Reg *m = methods; m->name; m++) {
      lua_getfield(L, -1, m->name);
      lua_pushfstring(L, PROFILE_MT ":%s", m->name);
      ident_mark_internal(L, -2, lua_tostring(L, -1));
      lua_pop(L, 2);
    }
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_gc);
    lua_setfield(L, -2, "__gc");
    /* local p <close> = cprof.Profile(): Python's `with Profile() as pr:` (disable() is
       internal, marked above) */
    lua_pushcfunction(L, l_disable);
    lua_setfield(L, -2, "__close");
  }
  static const luaL_Reg module[] = {
    {"new", l_new},         {"mark_internal", l_mark_internal},
    {"hooked", l_hooked},   {"fail_allocations", l_fail_allocations},
    {"skew_layout", l_skew_layout},
    {"getpid", l_getpid},   {"hostname", l_hostname},
    {"mtime", l_mtime},     {"setenv", l_setenv},
    {NULL, NULL}};
  lua_createtable(L, 0, 16);
  luaL_setfuncs(L, module, 0);
  lua_getfield(L, -2, "__index");
  lua_setfield(L, -2, "methods");
  lua_pushvalue(L, -2);
  lua_setfield(L, -2, "metatable");
  lua_remove(L, -2);
  ldump_register(L);
  /* The dump codec's protected bodies, called under lua_pcall where the hook sees them. */
  static const luaL_Reg bodies[] = {{"cprof.core.read_dump (body)", dump_read_body},
                                    {"cprof.core.write_dump (body)", dump_write_body},
                                    {"cprof.core.write_file (body)", out_write_whole},
                                    {NULL, NULL}};
  for (const luaL_Reg *b = bodies; b->name; b++) {
    lua_pushcfunction(L, b->func);
    ident_mark_internal(L, -1, b->name);
    lua_pop(L, 1);
  }
  live_register(L);
  lmemory_register(L);
  return 1;
}
