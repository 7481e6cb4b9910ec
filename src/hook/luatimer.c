/* Calling Lua from inside the hook is allowed: Lua turns hooks off while one runs, so f's own
   calls are not profiled. A failing f must not break the program: the reading repeats the last
   good one and the failure is counted (cProfile reads 0 and reports it as unraisable). */
#include <lauxlib.h>
#include <math.h>

#include "hook/luatimer.h"

static cprof_ticks read_lua(void *ud) {
  LuaTimer *t = ud;
  lua_State *L = t->clock->L;
  if (!L || !lua_checkstack(L, 2)) {
    t->errors++;
    return t->last;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, t->ref);
  if (lua_pcall(L, 0, 1, 0) == 0 && lua_type(L, -1) == LUA_TNUMBER) {
    lua_Number v = lua_tonumber(L, -1);
    /* Python's rule: seconds become whole nanoseconds; ticks are taken as they are. */
    v = t->ticks ? v : floor(v * 1e9);
    if (v == v && fabs(v) < 9.2e18) t->last = (cprof_ticks)v;
    else t->errors++;
  } else {
    t->errors++;
  }
  lua_pop(L, 1);
  return t->last;
}

void luatimer_init(LuaTimer *t, Clock *clock, lua_State *L, int idx, double unit) {
  lua_pushvalue(L, idx);
  t->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  t->clock = clock;
  t->ticks = unit > 0;
  t->last = 0;
  t->errors = 0;
  /* Exact: its readings are the profile (it may count them, as Python's golden runs do). */
  clock_set_timer(clock, &(cprof_timer){"lua function", unit > 0 ? unit : 1e-9, read_lua, t, 1});
}

void luatimer_free(LuaTimer *t, lua_State *L) {
  if (t->ref != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, t->ref);
  t->ref = LUA_NOREF;
}
