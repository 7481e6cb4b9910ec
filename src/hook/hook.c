/* The debug hook. Per event: find the thread's shadow stack (one comparison when the thread is
   the same as last time), resolve the function (one probe), update the stack, read the clock.
   Everything that touches Lua tables happens on a coroutine switch or on first sight of a
   function or thread. */
#include <string.h>

#include <lauxlib.h>

#include "util/compat.h"
#include "engine/engine.h"
#if LUA_VERSION_NUM < 502
#include <luajit.h>
#endif
#include "hook/ident.h"
#include "hook/hook.h"
#include "mem/memattr.h"
#include "util/weak.h"

#define OUR_MASK (LUA_MASKCALL | LUA_MASKRET)

#if LUA_VERSION_NUM >= 504
#define CI_OF(ar) ((const void *)(ar).i_ci)
#define PER_THREAD_HOOKS 1
#else
/* LuaJIT: i_ci is the frame's offset in the thread's stack (lua_getstack adds the frame size
   in the high bits); its hook is one for all threads. A vararg function's frame moves up the
   stack after its call event, so a Lua frame's offset is taken from the next event in its
   thread: a call it makes (its offset is that call's parent) or its own return. */
#define CI_OF(ar) ((const void *)(intptr_t)((ar).i_ci & 0xffff))
#define PER_THREAD_HOOKS 0
#endif

static const char PROFILER_KEY = 'p';  /* registry: the enabled Profiler, as a light userdata */
static const char THREADS_KEY = 't';   /* registry: weak-keyed table, thread -> its stack's id */

/* The thread of the last event in this OS thread and its stack. A Lua state runs in one OS
   thread at a time, and several states may run in several threads, each with its own profiler. */
static __thread __attribute__((tls_model("initial-exec"))) lua_State *last_L;
static __thread __attribute__((tls_model("initial-exec"))) Stack *last_st;

static void hook(lua_State *L, lua_Debug *ar);

static Profiler *enabled_profiler(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &PROFILER_KEY);
  Profiler *P = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return P;
}

static void forget_last(void) {
  last_L = NULL;
  last_st = NULL;
}

static void drop_stack(Profiler *P, Stack *st) {
  if (last_st == st) forget_last();
  prof_drop_stack(P, st);
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

static void keep_prev_hook(Stack *st, lua_State *T) {
  lua_Hook h = lua_gethook(T);
  if (h == hook) return;
  st->prev_hook = h;
  st->prev_mask = h ? lua_gethookmask(T) : 0;
  st->prev_count = h ? lua_gethookcount(T) : 0;
}

static int our_mask(const Profiler *P) { return OUR_MASK | (P->lines ? LUA_MASKLINE : 0); }

static void install(Stack *st, lua_State *T) {
  keep_prev_hook(st, T);
  lua_sethook(T, hook, our_mask(st->P) | st->prev_mask, st->prev_count);
}

/* Stacks of coroutines that were abandoned while suspended and then collected: found by
   listing the live threads, when the number of stacks has doubled since the last sweep. */
static void sweep(Profiler *P, lua_State *L) {
  for (uint32_t i = 0; i < P->nstacks; i++) P->stacks[i]->seen = 0;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &THREADS_KEY);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    Stack *st = prof_find_stack(P, lua_tothread(L, -2));
    if (st && (lua_Integer)st->id == lua_tointeger(L, -1)) st->seen = 1;
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  for (uint32_t i = P->nstacks; i-- > 0;) {
    Stack *st = P->stacks[i];
    if (!st->seen && st->suspended) {
      eng_close_all(P, st, st->suspended_at);
      drop_stack(P, st);
    }
  }
  P->sweep_at = P->nstacks * 2 > 64 ? P->nstacks * 2 : 64;
}

/* A stack for the thread at `idx` of L's stack. */
static Stack *adopt(Profiler *P, lua_State *L, int idx, lua_State *T) {
  if (P->nstacks >= P->sweep_at) sweep(P, L);
  Stack *st = prof_new_stack(P, T);
  if (!st) return NULL;
  register_thread(L, idx, st);
  return st;
}

/* The stack of thread L, whose event follows an event in another thread. */
static Stack *thread_stack(Profiler *P, lua_State *L, lua_Debug *ar) {
  Stack *st = prof_find_stack(P, L);
  /* A suspended stack continues with the return of the function that yielded; anything else
     means its thread died and this is another thread at the same address. */
  if (st && st->suspended &&
      !(ar->event == LUA_HOOKRET && st->n > 0 && st->f[st->n - 1].ci == CI_OF(*ar)) &&
      !is_registered(L, st)) {
    eng_close_all(P, st, st->suspended_at);
    drop_stack(P, st);
    st = NULL;
  }
  if (!st) {
    lua_pushthread(L);
    st = adopt(P, L, -1, L);
    lua_pop(L, 1);
    if (!st) {
      P->oom = 1;
      return NULL;
    }
    /* It inherited our hook from the thread that created it, which is most likely the one
       that is resuming it: it would have inherited that thread's own hook. */
    if (P->cur) {
      st->prev_hook = P->cur->prev_hook;
      st->prev_mask = P->cur->prev_mask;
      st->prev_count = P->cur->prev_count;
    }
  }
  last_L = L;
  last_st = st;
  return st;
}

/* The hook a coroutine we never saw would have: the main thread's, which it would have
   inherited (none where the API cannot tell: LuaJIT, whose hook is global). */
static void inherited_hook(lua_State *L, lua_Hook *h, int *mask, int *count) {
  lua_State *M = compat_main_thread(L);
  *h = M && lua_gethook(M) != hook ? lua_gethook(M) : NULL;
  *mask = *h ? lua_gethookmask(M) : 0;
  *count = *h ? lua_gethookcount(M) : 0;
}

/* A thread that still has our hook although no profiler is enabled: a coroutine created while
   profiling that never ran before disable(). It gets the hook it would have inherited. */
static void stray(lua_State *L, lua_Debug *ar) {
  lua_Hook h;
  int mask, count;
  inherited_hook(L, &h, &mask, &count);
  lua_sethook(L, h, mask, count);
  if (h && (mask & (1 << (ar->event == LUA_HOOKTAILCALL ? LUA_HOOKCALL : ar->event)))) h(L, ar);
}

/* The coroutine that coroutine.resume (or a function made by coroutine.wrap) is about to run
   gets our hook, remembering its own. */
static void hook_resumed_thread(Profiler *P, lua_State *L, lua_Debug *ar, lua_CFunction cf) {
  int top = lua_gettop(L);
  if (cf == funcs_resume) {
    if (!lua_getlocal(L, ar, 1)) return;
  } else {
    lua_getinfo(L, "f", ar);
    if (!lua_getupvalue(L, -1, 1)) {
      lua_settop(L, top);
      return;
    }
  }
  lua_State *T = lua_tothread(L, -1);
  if (T && lua_gethook(T) != hook) {
    Stack *st = prof_find_stack(P, T);
    if (!st) st = adopt(P, L, -1, T);
    if (st) install(st, T);
    else P->oom = 1;
  }
  lua_settop(L, top);
}

/* Returns the kind of hook work done, for the estimate of the hook's own time. */
static int on_call(Profiler *P, Stack *st, lua_State *L, lua_Debug *ar, cprof_ticks now) {
  lua_CFunction cf;
  uint32_t e = funcs_resolve(P, L, ar, &cf);
  lua_Debug caller;
  const void *parent_ci = lua_getstack(L, 1, &caller) ? CI_OF(caller) : NULL;
  if (!PER_THREAD_HOOKS && st->ci_pending) {
    /* A call in the same slot is a tail call replacing the frame, not a call it makes. */
    if (st->f[st->n - 1].ci != CI_OF(*ar)) st->f[st->n - 1].ci = parent_ci;
    st->ci_pending = 0;
  }
  if (e == IDX_NONE || eng_call(P, st, CI_OF(*ar), parent_ci, e, now)) {
    P->oom = 1;
    return HOOK_CALL_LUA;
  }
  if (!PER_THREAD_HOOKS) st->ci_pending = P->entries[e].kind != KIND_C;
  /* A coroutine created before enable() has no hook of ours (Lua 5.4 hooks are per thread),
     so it gets one when it is resumed. */
  if (PER_THREAD_HOOKS && cf && (cf == funcs_resume || cf == funcs_wrap))
    hook_resumed_thread(P, L, ar, cf);
  return cf ? HOOK_CALL_C : HOOK_CALL_LUA;
}

static void on_return(Stack *st, lua_Debug *ar, cprof_ticks now) {
  if (!PER_THREAD_HOOKS && st->ci_pending) {
    st->f[st->n - 1].ci = CI_OF(*ar);
    st->ci_pending = 0;
  }
  eng_return(st->P, st, CI_OF(*ar), now);
}

/* Keeps the hook's own time off the profile's clock. Reading the clock a second time per event
   would double the cost of the clock, the largest part of cprof's, so where the timer allows
   it (P->measure_every > 1, a power of two) most events are charged the running average of
   their kind's measured durations; every slow event and every measure_every-th event is
   measured. */
static void stop_clock(Profiler *P, cprof_ticks in, int kind, int slow) {
  if (slow || (P->events++ & (P->measure_every - 1)) == 0 || P->events < 256) {
    cprof_ticks d = P->timer.read(P->timer.ud) - in;
    P->hook_ticks += (double)d;
    if (!slow) P->hook_estimate[kind] += ((double)d - P->hook_estimate[kind]) / 8;
  } else {
    P->hook_ticks += P->hook_estimate[kind];
  }
}

static void hook(lua_State *L, lua_Debug *ar) {
  Stack *st;
  Profiler *P;
  cprof_ticks in = -1;  /* when the hook started, once read */
  if (L == last_L) {
    st = last_st;
    P = st->P;
  } else {
    P = enabled_profiler(L);
    if (!P) {
      stray(L, ar);
      return;
    }
    /* Finding a thread's stack is cprof's work: the clock stops before it. */
    if (!P->reading) in = P->timer.read(P->timer.ud);
    P->in_hook = 1;
    st = thread_stack(P, L, ar);
    P->in_hook = 0;
    if (!st) return;
  }
  if (P->reading) return;
  int event = ar->event == LUA_HOOKTAILCALL ? LUA_HOOKCALL : ar->event;
  int theirs = st->prev_mask & (1 << event);
  /* The program's own hook runs on the program's time: before ours on a return (inside the
     returning function, as it would without us), after ours otherwise. */
  if (theirs && event == LUA_HOOKRET) st->prev_hook(L, ar);
  P->L = L;
  if (P->oom) {
    P->dropped++;
  } else if (event == LUA_HOOKCALL || event == LUA_HOOKRET ||
             (event == LUA_HOOKLINE && P->lines)) {
    if (in < 0) in = P->timer.read(P->timer.ud);
    cprof_ticks now = in - (cprof_ticks)P->hook_ticks;
    /* An estimate larger than the hook really took would turn the clock back: it never runs
       backwards, the excess is given back instead. */
    if (now < P->vlast) {
      P->hook_ticks = (double)(in - P->vlast);
      now = P->vlast;
    }
    P->vlast = now;
    /* Anything new (a function, a path, a line, a thread) took the slow path: measured. */
    uint32_t before = P->nlinks + P->nlinerecs + P->nstacks;
    int slow = 0, kind = HOOK_LINE;
    P->in_hook = 1;
    if (st != P->cur) {
      Stack *from = P->cur;
      if (eng_switch(P, from, st, now)) drop_stack(P, from);
      P->cur = st;
      memattr_thread(P, L);
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
    stop_clock(P, in, kind, slow || before != P->nlinks + P->nlinerecs + P->nstacks);
    P->in_hook = 0;
  }
  if (theirs && event != LUA_HOOKRET) st->prev_hook(L, ar);
}

#if LUA_VERSION_NUM < 502
static int jit_is_on(lua_State *L) {
  int top = lua_gettop(L), on = 0;
  lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
  lua_getfield(L, -1, "jit");
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "status");
    if (lua_isfunction(L, -1) && lua_pcall(L, 0, 1, 0) == 0) on = lua_toboolean(L, -1);
  }
  lua_settop(L, top);
  return on;
}

static int set_jit(lua_State *L) {
  int mode = (int)(intptr_t)lua_touserdata(L, 1);
  luaJIT_setmode(L, 0, LUAJIT_MODE_ENGINE | mode);
  return 0;
}

/* Switching the compiler can raise an error (for one, inside a finalizer while the state
   closes): it is a wish, not a requirement, so it is done protected. */
static void jit_mode(lua_State *L, int mode) {
  lua_cpcall(L, set_jit, (void *)(intptr_t)mode);
}
#endif

const char *hook_enable(Profiler *P, lua_State *L) {
  Profiler *other = enabled_profiler(L);
  if (other == P) return NULL;
  if (other) return "another cprof profiler is already enabled in this Lua state";
#if LUA_VERSION_NUM < 502
  /* LuaJIT's compiled code calls no hooks: while profiling, everything runs in the
     interpreter, so every call is seen. Done before our hook is in, so it is not profiled. */
  P->jit_was_on = jit_is_on(L);
  jit_mode(L, LUAJIT_MODE_FLUSH);
  jit_mode(L, LUAJIT_MODE_OFF);
#endif
  weak_table(L, &THREADS_KEY);
  lua_pop(L, 1);
  lua_State *M = compat_push_main_thread(L);
  Stack *main_st = M && M != L ? adopt(P, L, -1, M) : NULL;
  lua_pop(L, 1);
  lua_pushthread(L);
  Stack *st = adopt(P, L, -1, L);
  lua_pop(L, 1);
  if (!st || (M && M != L && !main_st)) {
    while (P->nstacks > 0) drop_stack(P, P->stacks[P->nstacks - 1]);
#if LUA_VERSION_NUM < 502
    if (P->jit_was_on) jit_mode(L, LUAJIT_MODE_ON);
#endif
    return "out of memory";
  }
  if (main_st) install(main_st, M);
  install(st, L);
  P->cur = st;
  P->enabled = 1;
  lua_pushlightuserdata(L, P);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &PROFILER_KEY);
  last_L = L;
  last_st = st;
  memattr_start(P, L);
  return NULL;
}

static void unregister(lua_State *L) {
  lua_pushnil(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &PROFILER_KEY);
  forget_last();
}

void hook_disable(Profiler *P, lua_State *L) {
  if (!P->enabled) return;
  memattr_stop(P);
  Stack *cur = prof_find_stack(P, L);
  P->L = L;
  eng_flush(P, cur ? cur : P->cur, eng_now_outside(P));
  /* Every live thread we hooked gets its own hook back; dead ones need nothing. */
  lua_rawgetp(L, LUA_REGISTRYINDEX, &THREADS_KEY);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_State *T = lua_tothread(L, -2);
    Stack *st = prof_find_stack(P, T);
    if (st && (lua_Integer)st->id == lua_tointeger(L, -1) && lua_gethook(T) == hook)
      lua_sethook(T, st->prev_hook, st->prev_mask, st->prev_count);
    lua_pop(L, 1);
    lua_pushvalue(L, -1);  /* the key again, for lua_next after the removal below */
    lua_pushnil(L);
    lua_rawset(L, -4);
  }
  lua_pop(L, 1);
  while (P->nstacks > 0) drop_stack(P, P->stacks[P->nstacks - 1]);
  P->cur = NULL;
  P->enabled = 0;
  unregister(L);
#if LUA_VERSION_NUM < 502
  if (P->jit_was_on) jit_mode(L, LUAJIT_MODE_ON);
#endif
}

void hook_forget(Profiler *P, lua_State *L) {
  if (!P->enabled) return;
  memattr_stop(P);
  P->enabled = 0;
  if (enabled_profiler(L) == P) unregister(L);
}

/* The hook a thread would have without us: its own, kept when we took it over; for a thread we
   never saw, the one it would have inherited. */
static void program_hook(lua_State *L, lua_State *T, lua_Hook *h, int *mask, int *count) {
  Profiler *P = enabled_profiler(L);
  Stack *st = P ? prof_find_stack(P, T) : NULL;
  if (!st && P) st = P->cur;
  if (st) {
    *h = st->prev_hook;
    *mask = st->prev_mask;
    *count = st->prev_count;
  } else {
    inherited_hook(L, h, mask, count);
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
  int ours = lua_gethook(T) == hook;
  int err = lua_pcall(L, n, 0, 0);
  Profiler *P = ours ? enabled_profiler(L) : NULL;
  if (P) {
    Stack *st = prof_find_stack(P, T);
    if (!st) st = adopt(P, L, 1, T);
    if (st) install(st, T);
    else P->oom = 1;
  }
  if (err) return lua_error(L);
  return 0;
}

/* debug.gethook: answers with the program's own hook while ours is installed. */
static int l_gethook(lua_State *L) {
  int n = lua_gettop(L);
  lua_State *T = lua_type(L, 1) == LUA_TTHREAD ? lua_tothread(L, 1) : L;
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  if (lua_gethook(T) != hook) {
    lua_call(L, n, LUA_MULTRET);
    return lua_gettop(L);
  }
  int ourmask = lua_gethookmask(T), ourcount = lua_gethookcount(T);
  lua_Hook h;
  int mask, count;
  program_hook(L, T, &h, &mask, &count);
  lua_sethook(T, h, mask, count);
  int err = lua_pcall(L, n, LUA_MULTRET, 0);
  lua_sethook(T, hook, ourmask, ourcount);
  if (err) return lua_error(L);
  return lua_gettop(L);
}

static const char WRAPPED_KEY = 'w';

void hook_setup(lua_State *L) {
  int top = lua_gettop(L);
  funcs_setup(L);
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

int hook_installed(lua_State *T) { return lua_gethook(T) == hook; }
