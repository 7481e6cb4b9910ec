/* The debug hook. Per event: find the thread's shadow stack (one comparison when the thread is
   the same as last time), resolve the function (one probe), update the stack, read the clock.
   Everything that touches Lua tables happens on a coroutine switch or on first sight of a
   function or thread. */
#include "engine/engine.h"
#include "hook/hook.h"
#include "hook/ident.h"
#include "hook/threads.h"
#include "util/compat.h"

#define OUR_MASK (LUA_MASKCALL | LUA_MASKRET)

static const char PROFILER_KEY = 'p';  /* registry: the enabled Profiler, as a light userdata */

Profiler *hook_profiler(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &PROFILER_KEY);
  Profiler *P = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return P;
}

int hook_installed(lua_State *T) { return lua_gethook(T) == hook_event; }

static void keep_prev_hook(Stack *st, lua_State *T) {
  lua_Hook h = lua_gethook(T);
  if (h == hook_event) return;
  st->prev_hook = h;
  st->prev_mask = h ? lua_gethookmask(T) : 0;
  st->prev_count = h ? lua_gethookcount(T) : 0;
}

static int our_mask(const Profiler *P) { return OUR_MASK | (P->lines.on ? LUA_MASKLINE : 0); }

static void install(Stack *st, lua_State *T) {
  keep_prev_hook(st, T);
  lua_sethook(T, hook_event, our_mask(st->P) | st->prev_mask, st->prev_count);
}

void hook_take(Profiler *P, lua_State *L, int idx, lua_State *T) {
  Stack *st = stk_find(&P->stacks, T);
  if (!st) st = thr_adopt(P, L, idx, T);
  if (st) install(st, T);
  else P->oom = 1;
}

void hook_inherited(lua_State *L, lua_Hook *h, int *mask, int *count) {
  lua_State *M = compat_main_thread(L);
  *h = M && lua_gethook(M) != hook_event ? lua_gethook(M) : NULL;
  *mask = *h ? lua_gethookmask(M) : 0;
  *count = *h ? lua_gethookcount(M) : 0;
}

/* A thread that still has our hook although no profiler is enabled: a coroutine created while
   profiling that never ran before disable(). It gets the hook it would have inherited. */
static void stray(lua_State *L, lua_Debug *ar) {
  lua_Hook h;
  int mask, count;
  hook_inherited(L, &h, &mask, &count);
  lua_sethook(L, h, mask, count);
  if (h && (mask & (1 << (ar->event == LUA_HOOKTAILCALL ? LUA_HOOKCALL : ar->event)))) h(L, ar);
}

/* The coroutine that coroutine.resume (or a function made by coroutine.wrap) is about to run
   gets our hook, remembering its own. */
static void hook_resumed_thread(Profiler *P, lua_State *L, lua_Debug *ar, lua_CFunction cf) {
  int top = lua_gettop(L);
  if (cf == ident_resume) {
    if (!lua_getlocal(L, ar, 1)) return;
  } else {
    lua_getinfo(L, "f", ar);
    if (!lua_getupvalue(L, -1, 1)) {
      lua_settop(L, top);
      return;
    }
  }
  lua_State *T = lua_tothread(L, -1);
  if (T && lua_gethook(T) != hook_event) hook_take(P, L, -1, T);
  lua_settop(L, top);
}

/* Returns the kind of hook work done, for the estimate of the hook's own time. */
static int on_call(Profiler *P, Stack *st, lua_State *L, lua_Debug *ar, cprof_ticks now) {
  lua_CFunction cf;
  uint32_t e = ident_resolve(&P->fns, L, ar, &cf);
  lua_Debug caller;
  const void *parent_ci = lua_getstack(L, 1, &caller) ? COMPAT_CI(caller) : NULL;
  if (!COMPAT_PER_THREAD_HOOKS && st->ci_pending) {
    /* A call in the same slot is a tail call replacing the frame, not a call it makes. */
    if (st->f[st->n - 1].ci != COMPAT_CI(*ar)) st->f[st->n - 1].ci = parent_ci;
    st->ci_pending = 0;
  }
  if (e == IDX_NONE || eng_call(P, st, COMPAT_CI(*ar), parent_ci, e, now)) {
    P->oom = 1;
    return HOOK_CALL_LUA;
  }
  if (!COMPAT_PER_THREAD_HOOKS) st->ci_pending = P->fns.entries[e].kind != KIND_C;
  /* A coroutine created before enable() has no hook of ours (Lua 5.4 hooks are per thread),
     so it gets one when it is resumed. */
  if (COMPAT_PER_THREAD_HOOKS && cf && (cf == ident_resume || cf == ident_wrap))
    hook_resumed_thread(P, L, ar, cf);
  return cf ? HOOK_CALL_C : HOOK_CALL_LUA;
}

static void on_return(Stack *st, lua_Debug *ar, cprof_ticks now) {
  if (!COMPAT_PER_THREAD_HOOKS && st->ci_pending) {
    st->f[st->n - 1].ci = COMPAT_CI(*ar);
    st->ci_pending = 0;
  }
  eng_return(st->P, st, COMPAT_CI(*ar), now);
}

void hook_event(lua_State *L, lua_Debug *ar) {
  Stack *st;
  Profiler *P;
  cprof_ticks in = -1;  /* when the hook started, once read */
  if (L == thr_last_L) {
    st = thr_last_st;
    P = st->P;
  } else {
    P = hook_profiler(L);
    if (!P) {
      stray(L, ar);
      return;
    }
    /* Finding a thread's stack is cprof's work: the clock stops before it. */
    if (!P->clock.reading) in = P->clock.timer.read(P->clock.timer.ud);
    P->mem.in_hook = 1;
    st = thr_stack(P, L, ar);
    P->mem.in_hook = 0;
    if (!st) return;
  }
  if (P->clock.reading) return;
  int event = ar->event == LUA_HOOKTAILCALL ? LUA_HOOKCALL : ar->event;
  int theirs = st->prev_mask & (1 << event);
  /* The program's own hook runs on the program's time: before ours on a return (inside the
     returning function, as it would without us), after ours otherwise. */
  if (theirs && event == LUA_HOOKRET) st->prev_hook(L, ar);
  P->clock.L = L;
  if (P->oom) {
    P->dropped++;
  } else if (event == LUA_HOOKCALL || event == LUA_HOOKRET ||
             (event == LUA_HOOKLINE && P->lines.on)) {
    if (in < 0) in = P->clock.timer.read(P->clock.timer.ud);
    cprof_ticks now = clock_at(&P->clock, in);
    /* Anything new (a function, a path, a line, a thread) took the slow path: measured. */
    uint32_t before = P->tree.nlinks + P->lines.nrecs + P->stacks.n;
    int slow = 0, kind = HOOK_LINE;
    P->mem.in_hook = 1;
    if (st != P->stacks.cur) {
      Stack *from = P->stacks.cur;
      if (eng_switch(P, from, st, now)) thr_drop(P, from);
      P->stacks.cur = st;
      memattr_thread(&P->mem, L);
      slow = 1;
    }
    if (event == LUA_HOOKCALL) {
      kind = on_call(P, st, L, ar, now);
    } else if (event == LUA_HOOKRET) {
      on_return(st, ar, now);
      kind = HOOK_RETURN;
    } else if (eng_line(P, st, ar->currentline, now)) {
      P->oom = 1;
    }
    slow = slow || before != P->tree.nlinks + P->lines.nrecs + P->stacks.n;
    clock_stop(&P->clock, in, kind, slow);
    P->mem.in_hook = 0;
  }
  if (theirs && event != LUA_HOOKRET) st->prev_hook(L, ar);
}

const char *hook_enable(Profiler *P, lua_State *L) {
  Profiler *other = hook_profiler(L);
  if (other == P) return NULL;
  if (other) return "another cprof profiler is already enabled in this Lua state";
  /* Before our hook is in, so that it is not profiled. */
  P->jit_was_on = compat_jit_off(L);
  thr_open(L);
  lua_State *M = compat_push_main_thread(L);
  Stack *main_st = M && M != L ? thr_adopt(P, L, -1, M) : NULL;
  lua_pop(L, 1);
  lua_pushthread(L);
  Stack *st = thr_adopt(P, L, -1, L);
  lua_pop(L, 1);
  if (!st || (M && M != L && !main_st)) {
    thr_drop_all(P);
    if (P->jit_was_on) compat_jit_on(L);
    return "out of memory";
  }
  if (main_st) install(main_st, M);
  install(st, L);
  P->stacks.cur = st;
  P->enabled = 1;
  lua_pushlightuserdata(L, P);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &PROFILER_KEY);
  thr_remember(L, st);
  memattr_start(&P->mem, L, stk_running_node, &P->stacks);
  return NULL;
}

static void unregister(lua_State *L) {
  lua_pushnil(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &PROFILER_KEY);
  thr_forget();
}

void hook_disable(Profiler *P, lua_State *L) {
  if (!P->enabled) return;
  memattr_stop(&P->mem);
  Stack *cur = stk_find(&P->stacks, L);
  P->clock.L = L;
  eng_flush(P, cur ? cur : P->stacks.cur, clock_now_outside(&P->clock));
  thr_release(P, L, hook_event);
  thr_drop_all(P);
  P->stacks.cur = NULL;
  P->enabled = 0;
  unregister(L);
  if (P->jit_was_on) compat_jit_on(L);
}

void hook_forget(Profiler *P, lua_State *L) {
  if (!P->enabled) return;
  memattr_stop(&P->mem);
  P->enabled = 0;
  if (hook_profiler(L) == P) unregister(L);
}
