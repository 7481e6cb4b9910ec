/* A host embeds Lua with cprof linked in, registers its own timer through cprof.h, and profiles
   with it from Lua: the numbers are the host clock's, exactly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "cprof.h"
#include "ctest.h"

int luaopen_cprof_core(lua_State *L);

/* The host's clock: 10 ticks a reading, each tick 1 ms. */
static cprof_ticks host_clock(void *ud) {
  cprof_ticks *now = ud;
  return *now += 10;
}

static const char *const SCRIPT =
  "local core = require 'cprof.core'\n"
  "local function leaf() return 1 end\n"
  "local function root() leaf() leaf() end\n"
  "local p = core.new { timer = 'host' }\n"
  "p:runcall(root)\n"
  "local st = p:getstats()\n"
  "local r = {}\n"
  "for _, e in ipairs(st.entries) do r[e.name] = e end\n"
  "return st.timer, st.unit, r.leaf.ncalls, r.leaf.tottime, r.root.cumtime\n";

int main(void) {
  static cprof_ticks now;
  cprof_timer t = {"host", 1e-3, host_clock, &now, 1};  /* a simulated clock: exact */
  CHECK(cprof_timer_register(&t) == 0, "registering a timer");
  cprof_timer bad = {"bad", 0, host_clock, &now, 0};
  CHECK(cprof_timer_register(&bad) != 0, "a timer without a unit is refused");

  cprof_timer got;
  CHECK(cprof_timer_get("host", &got) == NULL && got.read == host_clock, "finding it by name");
  CHECK(cprof_timer_get("nope", &got) != NULL, "an unknown name is refused");

  lua_State *L = luaL_newstate();
  if (!L) return 1;
  luaL_openlibs(L);
  luaL_requiref(L, "cprof.core", luaopen_cprof_core, 0);
  lua_pop(L, 1);
  if (luaL_dostring(L, SCRIPT) != LUA_OK) {
    fprintf(stderr, "FAIL: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return 1;
  }
  CHECK(strcmp(lua_tostring(L, 1), "host") == 0, "the profile names the host's timer");
  CHECK(lua_tonumber(L, 2) == 1e-3, "and its unit");
  CHECK(lua_tointeger(L, 3) == 2, "leaf called twice");
  /* The counter timer rule holds for any exact clock: one reading's step per event, because the
     clock stops while the hook runs; 10 ticks of 1 ms: each leaf call takes 10 ms. */
  CHECK(lua_tonumber(L, 4) > 0.0199 && lua_tonumber(L, 4) < 0.0201, "leaf tottime %g", lua_tonumber(L, 4));
  CHECK(lua_tonumber(L, 5) > 0.0499 && lua_tonumber(L, 5) < 0.0501, "root cumtime %g", lua_tonumber(L, 5));
  lua_close(L);
  return ctest_done("test_host_timer");
}
