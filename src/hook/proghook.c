/* The wrapped debug.sethook and debug.gethook (hook/proghook.h). They run only when the program
   calls them; the events of the program's hook are passed on by hook_event. */
#include "hook/hook.h"
#include "util/compat.h"

/* The hook a thread would have without us: its own, kept when we took it over; for a thread we
   never saw, the one it would have inherited. */
static void program_hook(lua_State *L, lua_State *T, lua_Hook *h, int *mask, int *count) {
  Profiler *P = hook_profiler(L);
  Stack *st = P ? stk_find(&P->stacks, T) : NULL;
  if (!st && P) st = P->stacks.cur;
  if (st) {
    *h = st->prev_hook;
    *mask = st->prev_mask;
    *count = st->prev_count;
  } else {
    hook_inherited(L, h, mask, count);
  }
}

/* debug.sethook: the debug library sets the hook; if the thread was ours, we take it back and
   call the program's hook for the events it asked for. */
static int l_sethook(lua_State *L) {
  int n = lua_gettop(L);
  lua_State *T = L;
  if (lua_type(L, 1) == LUA_TTHREAD) {
    T = lua_tothread(L, 1);
    lua_pushvalue(L, 1);
  } else {
    lua_pushthread(L);
  }
  lua_insert(L, 1);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 2);
  int ours = hook_installed(T);
  int err = lua_pcall(L, n, 0, 0);
  Profiler *P = ours ? hook_profiler(L) : NULL;
  if (P) hook_take(P, L, 1, T);
  if (err) return lua_error(L);
  return 0;
}

/* debug.gethook: answers with the program's own hook while ours is installed. */
static int l_gethook(lua_State *L) {
  int n = lua_gettop(L);
  lua_State *T = lua_type(L, 1) == LUA_TTHREAD ? lua_tothread(L, 1) : L;
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  if (!hook_installed(T)) {
    lua_call(L, n, LUA_MULTRET);
    return lua_gettop(L);
  }
  int ourmask = lua_gethookmask(T), ourcount = lua_gethookcount(T);
  lua_Hook h;
  int mask, count;
  program_hook(L, T, &h, &mask, &count);
  lua_sethook(T, h, mask, count);
  int err = lua_pcall(L, n, LUA_MULTRET, 0);
  lua_sethook(T, hook_event, ourmask, ourcount);
  if (err) return lua_error(L);
  return lua_gettop(L);
}

static const char WRAPPED_KEY = 'w';

void proghook_setup(lua_State *L) {
  int top = lua_gettop(L);
  lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
  lua_rawgetp(L, LUA_REGISTRYINDEX, &WRAPPED_KEY);
  int wrapped = lua_toboolean(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, -1, "debug");
  if (!wrapped && lua_istable(L, -1)) {
    static const struct { const char *name; lua_CFunction f; } w[] = {
      {"sethook", l_sethook}, {"gethook", l_gethook}};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
      lua_getfield(L, -1, w[i].name);
      if (lua_isfunction(L, -1)) {
        lua_pushcclosure(L, w[i].f, 1);
        lua_setfield(L, -2, w[i].name);
      } else {
        lua_pop(L, 1);
      }
    }
    lua_pushboolean(L, 1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &WRAPPED_KEY);
  }
  lua_settop(L, top);
}
