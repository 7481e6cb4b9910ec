/* The thread registry (hook/threads.h). Runs on a thread's first event, on a switch to a thread
   that was suspended, and on enable()/disable(); never per call. */
#include "engine/engine.h"
#include "hook/threads.h"
#include "util/compat.h"
#include "util/weak.h"

__thread __attribute__((tls_model("initial-exec"))) lua_State *thr_last_L;
__thread __attribute__((tls_model("initial-exec"))) Stack *thr_last_st;

static const char THREADS_KEY = 't';   /* registry: weak-keyed table, thread -> its stack's id */

void thr_open(lua_State *L) {
  weak_table(L, &THREADS_KEY);
  lua_pop(L, 1);
}

void thr_drop(Profiler *P, Stack *st) {
  if (thr_last_st == st) thr_forget();
  stk_drop(&P->stacks, st);
}

void thr_drop_all(Profiler *P) {
  while (P->stacks.n > 0) thr_drop(P, P->stacks.all[P->stacks.n - 1]);
}

/* Records the thread at `idx` as owning stack `st`, so a later thread at the same address is
   not taken for it. */
static void register_thread(lua_State *L, int idx, Stack *st) {
  idx = lua_absindex(L, idx);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &THREADS_KEY);
  lua_pushvalue(L, idx);
  lua_pushinteger(L, (lua_Integer)st->id);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

static int is_registered(lua_State *L, Stack *st) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &THREADS_KEY);
  lua_pushthread(L);
  lua_rawget(L, -2);
  int same = lua_tointeger(L, -1) == (lua_Integer)st->id;
  lua_pop(L, 2);
  return same;
}

/* Stacks of coroutines that were abandoned while suspended and then collected: found by
   listing the live threads, when the number of stacks has doubled since the last sweep. */
static void sweep(Profiler *P, lua_State *L) {
  for (uint32_t i = 0; i < P->stacks.n; i++) P->stacks.all[i]->seen = 0;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &THREADS_KEY);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    Stack *st = stk_find(&P->stacks, lua_tothread(L, -2));
    if (st && (lua_Integer)st->id == lua_tointeger(L, -1)) st->seen = 1;
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  for (uint32_t i = P->stacks.n; i-- > 0;) {
    Stack *st = P->stacks.all[i];
    if (!st->seen && st->suspended) {
      eng_close_all(P, st, st->suspended_at);
      thr_drop(P, st);
    }
  }
  P->stacks.sweep_at = P->stacks.n * 2 > 64 ? P->stacks.n * 2 : 64;
}

Stack *thr_adopt(Profiler *P, lua_State *L, int idx, lua_State *T) {
  if (P->stacks.n >= P->stacks.sweep_at) sweep(P, L);
  Stack *st = stk_new(&P->stacks, P, T);
  if (!st) return NULL;
  register_thread(L, idx, st);
  return st;
}

Stack *thr_stack(Profiler *P, lua_State *L, lua_Debug *ar) {
  Stack *st = stk_find(&P->stacks, L);
  /* A suspended stack continues with the return of the function that yielded; anything else
     means its thread died and this is another thread at the same address. */
  if (st && st->suspended &&
      !(ar->event == LUA_HOOKRET && st->n > 0 && st->f[st->n - 1].ci == COMPAT_CI(*ar)) &&
      !is_registered(L, st)) {
    eng_close_all(P, st, st->suspended_at);
    thr_drop(P, st);
    st = NULL;
  }
  if (!st) {
    lua_pushthread(L);
    st = thr_adopt(P, L, -1, L);
    lua_pop(L, 1);
    if (!st) {
      P->oom = 1;
      return NULL;
    }
    /* It inherited our hook from the thread that created it, which is most likely the one
       that is resuming it: it would have inherited that thread's own hook. */
    if (P->stacks.cur) {
      st->prev_hook = P->stacks.cur->prev_hook;
      st->prev_mask = P->stacks.cur->prev_mask;
      st->prev_count = P->stacks.cur->prev_count;
    }
  }
  thr_remember(L, st);
  return st;
}

void thr_release(Profiler *P, lua_State *L, lua_Hook ours) {
  /* Dead threads need nothing: they left the weak table. */
  lua_rawgetp(L, LUA_REGISTRYINDEX, &THREADS_KEY);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_State *T = lua_tothread(L, -2);
    Stack *st = stk_find(&P->stacks, T);
    if (st && (lua_Integer)st->id == lua_tointeger(L, -1) && lua_gethook(T) == ours)
      lua_sethook(T, st->prev_hook, st->prev_mask, st->prev_count);
    lua_pop(L, 1);
    lua_pushvalue(L, -1);  /* the key again, for lua_next after the removal below */
    lua_pushnil(L);
    lua_rawset(L, -4);
  }
  lua_pop(L, 1);
}
