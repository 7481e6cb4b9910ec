/* The wrapped debug.sethook and debug.gethook (hook/proghook.h). They run only when the program
   calls them; the events of the program's hook are passed on by hook_event.

   The debug library's own functions do the work, so that its hook function, its table of hooks
   and its answers stay exactly Lua's. They are called on a thread of our own that has no hook:
   a call made on the program's thread would be an event of that thread, and the program's hook
   would see a call and a return that it does not see without cprof. */
#include <limits.h>

#include <lauxlib.h>

#include "hook/hook.h"
#include "hook/threads.h"
#include "util/compat.h"

static const char WRAPPED_KEY = 'w';  /* registry: the debug library was wrapped */
static const char QUIET_KEY = 'q';    /* registry: the thread without a hook */

/* The hook a thread would have without us: its own, kept when we took it over; for a thread we
   never saw, the one it would have inherited. */
static void program_hook(lua_State *L, lua_State *T, lua_Hook *h, int *mask, int *count) {
  Profiler *P = hook_profiler(L);
  Stack *st = P ? thr_find(P, T) : NULL;
  if (!st && P) st = P->stacks.cur;
  if (st) {
    *h = st->prev_hook;
    *mask = st->prev_mask;
    *count = st->prev_count;
  } else {
    hook_inherited(L, h, mask, count);
  }
}

/* A hook as lua_sethook takes it. */
typedef struct Hook {
  lua_Hook f;
  int mask, count;
} Hook;

static Hook hook_of(lua_State *T) {
  Hook h = {lua_gethook(T), lua_gethookmask(T), lua_gethookcount(T)};
  return h;
}

/* Our thread without a hook (cleared once: a new thread inherits its creator's). Under LuaJIT
   the hook is global: the callers set it for the time of the call. */
static lua_State *quiet_thread(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &QUIET_KEY);
  lua_State *Q = lua_tothread(L, -1);
  lua_pop(L, 1);
  if (!Q) {
    Q = lua_newthread(L);
    if (COMPAT_PER_THREAD_HOOKS) lua_sethook(Q, NULL, 0, 0);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &QUIET_KEY);
  }
  return Q;
}

/* Calls the debug library's function (upvalue 1) on the quiet thread with the thread it is
   about (T: L's argument 1 when `first` is 2, else L itself) and the arguments of L from
   `first` on; moves its results to L and returns their number. Its error is raised once T's
   hook is `restore` again. */
static int call_quietly(lua_State *L, lua_State *T, int first, Hook restore) {
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
  if (!lua_checkstack(L, nres)) {
    lua_settop(Q, 0);
    lua_sethook(T, restore.f, restore.mask, restore.count);
    return luaL_error(L, "stack overflow");
  }
  lua_xmove(Q, L, nres);
  if (err) {
    lua_sethook(T, restore.f, restore.mask, restore.count);
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
  Hook before = hook_of(T);
  /* The hook being replaced sees nothing of the call (a global hook would see it on Q). */
  if (!COMPAT_PER_THREAD_HOOKS) lua_sethook(T, NULL, 0, 0);
  lua_pop(L, call_quietly(L, T, first, before));
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

/* debug.gethook: the debug library answers about the program's own hook, put back on T for
   the time of the call when ours is installed. */
static int l_gethook(lua_State *L) {
  int first;
  lua_State *T = target(L, &first);
  Hook now = hook_of(T), prog = now;
  if (now.f == hook_event) program_hook(L, T, &prog.f, &prog.mask, &prog.count);
  /* Where the hook is global, the program's hook would see the call: it is put back with a
     count mask that cannot fire in a C function, and the debug library's mask and count are
     replaced by the program's. */
  if (COMPAT_PER_THREAD_HOOKS || !prog.f) lua_sethook(T, prog.f, prog.mask, prog.count);
  else lua_sethook(T, prog.f, LUA_MASKCOUNT, INT_MAX);
  int nres = call_quietly(L, T, first, now);
  lua_sethook(T, now.f, now.mask, now.count);
  if (!COMPAT_PER_THREAD_HOOKS && prog.f && nres == 3) {
    char buf[4];
    lua_pushstring(L, mask_text(prog.mask, buf));
    lua_replace(L, -3);
    lua_pushinteger(L, prog.count);
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
