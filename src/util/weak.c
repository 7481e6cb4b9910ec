/* Made once per key and state; every later call is one registry lookup. */
#include "util/compat.h"
#include "util/weak.h"

void weak_table(lua_State *L, const void *key) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, key);
  if (lua_istable(L, -1)) return;
  lua_pop(L, 1);
  lua_newtable(L);
  lua_newtable(L);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, key);
}
