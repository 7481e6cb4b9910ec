/* The thread registry (hook/threads.h). Runs on a thread's first event, on a switch to another
   thread, and on enable()/disable(); never per call. */
#include "engine/engine.h"
#include "hook/threads.h"
#include "util/compat.h"
#include "util/luapriv.h"
#include "util/weak.h"

__thread __attribute__((tls_model("initial-exec"))) lua_State *thr_last_L;
__thread __attribute__((tls_model("initial-exec"))) Stack *thr_last_st;

static const char KEEP_KEY = 't';   /* registry: weak-keyed table, thread -> true */

void thr_drop(Profiler *P, Stack *st) {
  if (thr_last_st == st) thr_forget();
  stk_drop(&P->stacks, st);
}

/* Frees the stack of a thread found dead while suspended (another thread has its address now):
   its frames end when it was suspended. */
static void thr_drop_dead(Profiler *P, Stack *st) {
  eng_close_all(P, st, st->suspended_at);
  thr_drop(P, st);
}

Stack *thr_find(Profiler *P, lua_State *T) {
  Stack *st = stk_find(&P->stacks, T);
  if (st && st->suspended && lua_status(T) != LUA_YIELD) {
    thr_drop_dead(P, st);
    return NULL;
  }
  return st;
}

/* This reads the threads as eng_switch reads the status of the one it switched from: it relies
   on their not having been collected since their last event. A dead thread runs no Lua code
   again but the __close handlers coroutine.close may still run in it, which then go
   unprofiled: the price of debug.gethook on it answering as without cprof (the hook the
   program set). Where the hook is global (LuaJIT), setting it would set every thread's. */
void thr_end(Profiler *P, Stack *st, lua_Hook ours) {
  for (Stack *up; st; st = up) {
    up = st->resumer;
    if (COMPAT_PER_THREAD_HOOKS && lua_gethook(st->L) == ours)
      lua_sethook(st->L, st->prev_hook, st->prev_mask, st->prev_count);
    thr_drop(P, st);
  }
}

void thr_drop_all(Profiler *P) {
  while (P->stacks.n > 0) thr_drop(P, P->stacks.all[P->stacks.n - 1]);
}

/* Remembers the thread at `idx` of L's stack, so that disable() can give it its hook back.
   Not through a protected call: that would be a call the program's hook could see (LuaJIT's
   hook is global, and debug.sethook has just set the program's). */
static void keep(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  weak_table(L, &KEEP_KEY);
  lua_pushvalue(L, idx);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

Stack *thr_adopt(Profiler *P, lua_State *L, int idx, lua_State *T) {
  if (idx) {
    if (!lua_checkstack(L, 3)) return NULL;
    keep(L, idx);
  }
  Stack *st = stk_new(&P->stacks, P, T);
  /* LuaJIT does not say which thread is the main one: there it is the one that enabled. */
  lua_State *M = compat_main_thread(L);
  if (st) st->id = (M ? T == M : !P->enabled) ? 1 : ++P->stacks.ids + 1;
  return st;
}

/* Whether two stacks would give their threads the same hook back. */
static int same_hook(const Stack *a, const Stack *b) {
  return a->prev_hook == b->prev_hook && a->prev_mask == b->prev_mask &&
         a->prev_count == b->prev_count;
}

static int holds(const Stack *st, const void *ci) {
  for (uint32_t i = st->n; i-- > 0;)
    if (st->f[i].ci == ci) return 1;
  return 0;
}

/* Whether event `ar` continues suspended stack st, rather than being the first event of a new
   thread at the address of st's dead one (docs/SEMANTICS.md): a thread created while profiling
   starts with the call of its body, made from no activation the old stack holds (the base of
   the thread); a resumed one goes on with the return of the function that yielded, or, when
   that function yielded with a continuation (or is one of LuaJIT's built-ins, which call no
   hook), with a call that function or one below it makes. The search is from the top, where
   it ends at once in practice. */
static int continues(const Profiler *P, lua_State *L, lua_Debug *ar, const Stack *st) {
  if (st->n == 0) return 1;
  if (ar->event != LUA_HOOKCALL && ar->event != LUA_HOOKTAILCALL) return holds(st, COMPAT_CI(*ar));
  const void *parent = NULL;
#if LUAPRIV_KNOWN
  if (P->fast) parent = luapriv_parent(ar->i_ci);
#endif
  lua_Debug up;
  if (!P->fast && lua_getstack(L, 1, &up)) parent = COMPAT_CI(up);
  return parent && holds(st, parent);
}

Stack *thr_stack(Profiler *P, lua_State *L, lua_Debug *ar, Stack *st) {
  if (st && st->suspended && !continues(P, L, ar, st)) {
    thr_drop_dead(P, st);
    st = NULL;
  }
  if (!st) {
    /* It inherited our hook from the thread that created it, which is most likely the one
       that is resuming it: it would have inherited that thread's own hook. Unless that is the
       main thread's, which a thread left with our hook gets on its next event after
       disable(), the thread is remembered to be given it back. */
    Stack *from = P->stacks.cur;
    int special = from && P->stacks.main && !same_hook(from, P->stacks.main);
    if (special) lua_pushthread(L);
    st = thr_adopt(P, L, special ? -1 : 0, L);
    if (special) lua_pop(L, 1);
    if (!st) {
      P->oom = 1;
      return NULL;
    }
    if (from) {
      st->prev_hook = from->prev_hook;
      st->prev_mask = from->prev_mask;
      st->prev_count = from->prev_count;
    }
  }
  thr_remember(L, st);
  return st;
}

static void give_back(Profiler *P, lua_State *T, lua_Hook ours) {
  Stack *st = stk_find(&P->stacks, T);
  if (st && lua_gethook(T) == ours) lua_sethook(T, st->prev_hook, st->prev_mask, st->prev_count);
}

void thr_release(Profiler *P, lua_State *L, lua_Hook ours) {
  /* The thread calling disable() and those that resumed it are alive. */
  Stack *cur = stk_find(&P->stacks, L);
  for (Stack *st = cur ? cur : P->stacks.cur; st; st = st->resumer) give_back(P, st->L, ours);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &KEEP_KEY);
  if (lua_istable(L, -1)) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      give_back(P, lua_tothread(L, -2), ours);
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  lua_pushnil(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &KEEP_KEY);
}
