/* The wrapped debug.sethook and debug.gethook (hook/proghook.h). They run only when the program
   calls them; the events of the program's hook are passed on by hook_event.

   The debug library's own functions do the work, so that its hook function, its table of hooks
   and its answers stay exactly Lua's. They are called on a thread of our own that has no hook:
   a call made on the program's thread would be an event of that thread, and the program's hook
   would see a call and a return that it does not see without cprof. */
#include <limits.h>

#include <lauxlib.h>

#include "hook/hook.h"
#include "util/compat.h"

static const char WRAPPED_KEY = 'w';  /* registry: the debug library was wrapped */
static const char QUIET_KEY = 'q';    /* registry: the thread without a hook */

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

/* Our thread without a hook. Under LuaJIT the hook is global: clearing it here clears it for
   every thread, and the caller puts the right one back. */
static lua_State *quiet_thread(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &QUIET_KEY);
  lua_State *Q = lua_tothread(L, -1);
  lua_pop(L, 1);
  if (!Q) {
    Q = lua_newthread(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &QUIET_KEY);
  }
  lua_sethook(Q, NULL, 0, 0);
  return Q;
}

/* Calls the debug library's function (upvalue 1) on the quiet thread with the thread it is
   about (T: L's argument 1 when `first` is 2, else L itself) and the arguments of L from
   `first` on; moves its results to L. Returns their number, or raises its
   error once `restore` (0: none) has put T's hook back. */
static int call_quietly(lua_State *L, lua_State *T, int first, const lua_Hook *restore, int mask,
                        int count) {
  int n = lua_gettop(L) - first + 1;
  lua_State *Q = quiet_thread(L);
  if (!lua_checkstack(Q, n + 2)) return luaL_error(L, "stack overflow");
  lua_pushvalue(L, lua_upvalueindex(1));
  if (first == 2) lua_pushvalue(L, 1);
  else lua_pushthread(L);
  for (int i = first; i < first + n; i++) lua_pushvalue(L, i);
  lua_xmove(L, Q, n + 2);
  int err = lua_pcall(Q, n + 1, LUA_MULTRET, 0);
  int nres = lua_gettop(Q);
  luaL_checkstack(L, nres, NULL);
  lua_xmove(Q, L, nres);
  if (err) {
    if (restore) lua_sethook(T, *restore, mask, count);
    return lua_error(L);
  }
  return nres;
}

/* The thread a debug function is about (its first argument, or L) and where the rest begin. */
static lua_State *target(lua_State *L, int *first) {
  *first = lua_type(L, 1) == LUA_TTHREAD ? 2 : 1;
  return *first == 2 ? lua_tothread(L, 1) : L;
}

/* LuaJIT has one hook for all threads: the program's hook, kept by T's stack, is every
   stack's. */
static void share_hook(Profiler *P, lua_State *T) {
  const Stack *from = stk_find(&P->stacks, T);
  if (!from) return;
  for (uint32_t i = 0; i < P->stacks.n; i++) {
    Stack *st = P->stacks.all[i];
    st->prev_hook = from->prev_hook;
    st->prev_mask = from->prev_mask;
    st->prev_count = from->prev_count;
  }
}

/* debug.sethook: the debug library sets the hook; if the thread was ours, we take it back and
   call the program's hook for the events it asked for. */
static int l_sethook(lua_State *L) {
  int first;
  lua_State *T = target(L, &first);
  /* The checks of the debug library, made here so that an error names 'sethook' and the
     argument as the program wrote it. */
  if (!lua_isnoneornil(L, first)) {
    luaL_checkstring(L, first + 1);
    luaL_checktype(L, first, LUA_TFUNCTION);
    luaL_optinteger(L, first + 2, 0);
  }
  int ours = hook_installed(T);
  lua_Hook before = lua_gethook(T);
  int mask = lua_gethookmask(T), count = lua_gethookcount(T);
  int nres = call_quietly(L, T, first, &before, mask, count);
  lua_pop(L, nres);
  Profiler *P = ours ? hook_profiler(L) : NULL;
  if (P) {
    if (first == 2) lua_pushvalue(L, 1);
    else lua_pushthread(L);
    hook_take(P, L, lua_gettop(L), T);
    if (!COMPAT_PER_THREAD_HOOKS) share_hook(P, T);
  }
  return 0;
}

/* The mask as the debug library writes it. */
static const char *mask_text(int mask, char buf[4]) {
  int i = 0;
  if (mask & LUA_MASKCALL) buf[i++] = 'c';
  if (mask & LUA_MASKRET) buf[i++] = 'r';
  if (mask & LUA_MASKLINE) buf[i++] = 'l';
  buf[i] = '\0';
  return buf;
}

/* debug.gethook: answers with the program's own hook while ours is installed. */
static int l_gethook(lua_State *L) {
  int first;
  lua_State *T = target(L, &first);
  if (!hook_installed(T)) return call_quietly(L, T, first, NULL, 0, 0);
  lua_Hook ours = lua_gethook(T);
  int ourmask = lua_gethookmask(T), ourcount = lua_gethookcount(T);
  lua_Hook h;
  int mask, count;
  program_hook(L, T, &h, &mask, &count);
  /* Where the hook is global, the program's hook cannot be put back even for the time of the
     call without seeing it: it is put back with a count mask that cannot fire in a C function,
     and the debug library's mask and count are replaced by the program's. */
  if (COMPAT_PER_THREAD_HOOKS || !h) lua_sethook(T, h, mask, count);
  else lua_sethook(T, h, LUA_MASKCOUNT, INT_MAX);
  int nres = call_quietly(L, T, first, &ours, ourmask, ourcount);
  lua_sethook(T, ours, ourmask, ourcount);
  if (!COMPAT_PER_THREAD_HOOKS && h && nres == 3) {
    char buf[4];
    lua_pushstring(L, mask_text(mask, buf));
    lua_replace(L, -3);
    lua_pushinteger(L, count);
    lua_replace(L, -2);
  }
  return nres;
}

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
