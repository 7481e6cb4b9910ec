/*
 * hook/luatimer.h — a timer that is a Lua function, as Python's cProfile.Profile(timer,
 * timeunit): cprof.Profile{timer = f} (f returns float seconds) or cprof.Profile{timer = f,
 * unit = u} (f returns integer ticks of u seconds). A reading is a protected call of f.
 */
#ifndef CPROF_LUATIMER_H
#define CPROF_LUATIMER_H

#include <lua.h>

#include "tables/clock.h"

typedef struct LuaTimer {
  Clock *clock;       /* clock->L is the thread the hook is running in: f is called there */
  int ref;            /* f, in the registry; LUA_NOREF when unused */
  int ticks;          /* f returns integer ticks (a unit was given), not float seconds */
  cprof_ticks last;   /* the last good reading, repeated when f fails */
  lua_Integer errors; /* readings that failed: f raised an error or returned no number */
} LuaTimer;

/* Makes the function at `idx` the clock's timer; `unit` <= 0: it returns float seconds. */
void luatimer_init(LuaTimer *t, Clock *clock, lua_State *L, int idx, double unit);
void luatimer_free(LuaTimer *t, lua_State *L);

#endif
