/* The debug hook. Per event, in the common case: one comparison finds the thread's stack, one
   timer reading gives the time, the called function's key is read from the activation record
   (util/luapriv.h) and found in the caller's node's cache, and the engine pushes or pops a
   frame. A coroutine switch, a new function or path, the public path (LuaJIT, an unknown
   release, or a profile whose fast path is off) and the program's own hook take longer. */
#include "engine/engine.h"
#include "hook/hook.h"
#include "hook/filters.h"
#include "hook/ident.h"
#include "hook/layout.h"
#include "hook/live.h"
#include "hook/threads.h"
#include "mem/lalloc.h"
#include "util/compat.h"
#include "util/luapriv.h"

#define OUR_MASK (LUA_MASKCALL | LUA_MASKRET)

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

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

static int our_mask(const Profiler *P) {
  return OUR_MASK | (P->lines.on == LINES_ALL ? LUA_MASKLINE : 0);
}

/* LINES_CHOSEN: after a call or a return, line events are asked for exactly while a chosen
   function runs, so that the rest of the program runs without them. That is the top Lua
   frame's: a C function on top runs no lines, and the next line event is either in a Lua
   function it calls, whose call event comes first, or in its caller once it has returned
   (on LuaJIT, with no return event). */
static void follow_lines(Profiler *P, Stack *st, lua_State *L) {
  uint32_t n = st->n;
  while (n > 0 && eng_is_c(P, &st->f[n - 1])) n--;
  const Frame *top = n > 0 ? &st->f[n - 1] : NULL;
  int want = top && !top->hidden && P->fns.entries[top->entry].lines == FILTER_IN;
  if (want == st->lines_on) return;
  st->lines_on = (uint8_t)want;
  lua_sethook(L, hook_event, OUR_MASK | (want ? LUA_MASKLINE : 0) | st->prev_mask, st->prev_count);
}

static void install(Stack *st, lua_State *T) {
  keep_prev_hook(st, T);
  st->lines_on = 0;
  lua_sethook(T, hook_event, our_mask(st->P) | st->prev_mask, st->prev_count);
}

void hook_take(Profiler *P, lua_State *L, int idx, lua_State *T) {
  Stack *st = thr_find(P, T);
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
   profiling that was suspended, or never ran, at disable(). It gets the hook it would have
   inherited. */
static void stray(lua_State *L, lua_Debug *ar) {
  lua_Hook h;
  int mask, count;
  hook_inherited(L, &h, &mask, &count);
  lua_sethook(L, h, mask, count);
  if (h && (mask & (1 << (ar->event == LUA_HOOKTAILCALL ? LUA_HOOKCALL : ar->event)))) h(L, ar);
}

/* The coroutine that coroutine.resume (or a function made by coroutine.wrap) is about to run
   gets our hook, remembering its own: a coroutine created before enable() has none (Lua 5.4
   hooks are per thread). */
static void hook_resumed_thread(Profiler *P, lua_State *L, lua_Debug *ar, lua_CFunction cf) {
  int top = lua_gettop(L);
  if (cf == P->co_resume) {
    if (!lua_getlocal(L, ar, 1)) return;
  } else {
    lua_getinfo(L, "f", ar);
    if (!lua_getupvalue(L, -1, 1)) {
      lua_settop(L, top);
      return;
    }
  }
  lua_State *T = lua_tothread(L, -1);
  if (T && lua_gethook(T) != hook_event) {
    P->mem.in_hook = 1;
    /* (a suspended stack found at T's address while T is not suspended is a dead coroutine's,
       whose address T now has: hook_take's thr_find drops it) */
    hook_take(P, L, -1, T);
    P->mem.in_hook = 0;
  }
  lua_settop(L, top);
}

/* A call whose key missed its node's cache: the function's entry `e` (found from the fast
   path's key when it is IDX_NONE), the link of the call, a call-site name for a function that
   has none, and the cache filled. IDX_NONE when out of memory. */
static uint32_t miss(Profiler *P, lua_State *L, lua_Debug *ar, const Frame *caller, uint32_t e,
                     const void *key, const void *src, int line) {
  P->mem.in_hook = 1;
  int cache = 1;
  if (e == IDX_NONE) {
    e = ident_fast(P, L, ar, key, src, line);
    /* Only a key the function table vouches for may be cached (ident_fast). */
    cache = e == IDX_NONE || fn_find_key(&P->fns, key, src, line, NULL, 0) == e;
  }
  uint32_t lk = IDX_NONE;
  if (e != IDX_NONE) {
    uint32_t links = P->tree.nlinks;
    lk = tree_link(&P->tree, caller ? caller->node : IDX_NONE, caller ? caller->entry : IDX_NONE,
                   e, filters_excluded(P, L, e));
    if (P->lines.on == LINES_CHOSEN) filters_choose_lines(P, L, e);
    if (lk != IDX_NONE && P->tree.nlinks != links) ident_name_from_call(P, L, ar, e);
    if (lk != IDX_NONE && caller && cache)
      tree_remember(&P->tree.nodes[caller->node], key, src, line, lk);
  }
  P->mem.in_hook = 0;
  return lk;
}

#if LUAPRIV_KNOWN
/* The fast path of a call: everything read from the activation record. Returns the kind of
   hook work, or -1 when the called value is not a function the mirrors know (never in practice:
   the public path then takes the call). */
static inline __attribute__((always_inline)) int fast_call(Profiler *P, Stack *st, lua_State *L,
                                                           lua_Debug *ar, cprof_ticks in,
                                                           cprof_ticks now, int *slow) {
  const void *ci = ar->i_ci, *key, *src, *parent;
  int line, wrap = 0;
  lua_State *T = NULL;
  int what = luapriv_callee(ci, 0, &key, &src, &line);
  if (unlikely(what != LP_LUA)) {
    if (what == LP_OTHER) return -1;
    /* A function made by coroutine.wrap is keyed by the body its coroutine runs: that body's
       key with its line moved below -1, where no other key's is. Like any Lua function's key,
       it stands for the body's content, whatever closure or coroutine carries it. */
    wrap = key == (const void *)(size_t)P->co_wrap;
    if (unlikely(wrap)) {
      T = luapriv_upvalue_thread(ci);
      const LPProto *body = T ? luapriv_body(T) : NULL;
      if (body) {
        key = body;
        src = luapriv_source(body);
        line = -2 - body->linedefined;
      }
    }
  }
  parent = luapriv_parent(ci);
  /* The common call, looked up before the time is needed: meanwhile the timer's reading, which
     takes longer than this, completes. */
  const Frame *caller = st->n > 0 ? &st->f[st->n - 1] : NULL;
  uint32_t lk = IDX_NONE;
  if (likely(caller && caller->ci == parent && caller->node != IDX_NONE))
    lk = tree_way(&P->tree.nodes[caller->node], key, src, line);
  if (now < 0) now = clock_at(&P->clock, in);
  if (likely(lk != IDX_NONE)) {
    st->last = now;
  } else {
    caller = eng_caller(P, st, parent, now);
    if (caller) lk = tree_way(&P->tree.nodes[caller->node], key, src, line);
    if (lk == IDX_NONE) {
      *slow = 1;
      lk = miss(P, L, ar, caller, IDX_NONE, key, src, line);
    }
  }
  if (unlikely(lk == IDX_NONE || eng_push(P, st, ci, lk, now))) {
    P->oom = 1;
    return HOOK_CALL_LUA;
  }
  if (what == LP_LUA) return HOOK_CALL_LUA;
  /* The coroutine is read directly; only one without our hook costs more. */
  int resume = key == (const void *)(size_t)P->co_resume;
  if (unlikely(resume || wrap)) {
    if (resume) T = luapriv_arg_thread(ci, 1);
    if (T && lua_gethook(T) != hook_event)
      hook_resumed_thread(P, L, ar, resume ? P->co_resume : P->co_wrap);
  }
  return HOOK_CALL_C;
}
#endif

/* A call through the public API: lua_getinfo for the function, lua_getstack for its caller. */
static int public_call(Profiler *P, Stack *st, lua_State *L, lua_Debug *ar, cprof_ticks in,
                       cprof_ticks now, int *slow) {
  lua_CFunction cf;
  lua_State *co;
  uint32_t known = P->fns.nkeys + P->fns.nentries;
  P->mem.in_hook = 1;
  uint32_t e = ident_public(P, L, ar, &cf, &co);
  P->mem.in_hook = 0;
  /* A new function, or a function made by coroutine.wrap, whose body this path looks for on
     every call: several times the hook of another C call, so measured, not estimated. */
  if (known != P->fns.nkeys + P->fns.nentries || co) *slow = 1;
  lua_Debug up;
  const void *parent_ci = lua_getstack(L, 1, &up) ? COMPAT_CI(up) : NULL;
  if (now < 0) now = clock_at(&P->clock, in);
  if (!COMPAT_PER_THREAD_HOOKS && st->ci_pending) {
    /* A call in the same slot is a tail call replacing the frame, not a call it makes. */
    if (st->f[st->n - 1].ci != COMPAT_CI(*ar)) st->f[st->n - 1].ci = parent_ci;
    st->ci_pending = 0;
  }
  if (e == IDX_NONE) {
    P->oom = 1;
    return HOOK_CALL_LUA;
  }
  const Frame *caller = eng_caller(P, st, parent_ci, now);
  /* The cache is keyed by the entry: an odd number, which no address is. */
  const void *key = (const void *)(((uintptr_t)e << 1) | 1);
  uint32_t lk = caller ? tree_way(&P->tree.nodes[caller->node], key, NULL, -1) : IDX_NONE;
  if (lk == IDX_NONE) {
    *slow = 1;
    lk = miss(P, L, ar, caller, e, key, NULL, -1);
  }
  if (lk == IDX_NONE || eng_push(P, st, COMPAT_CI(*ar), lk, now)) {
    P->oom = 1;
    return HOOK_CALL_LUA;
  }
  if (!COMPAT_PER_THREAD_HOOKS) st->ci_pending = P->fns.entries[e].kind != KIND_C;
  /* A wrap function's coroutine is known already: only one without our hook costs more. */
  if (COMPAT_PER_THREAD_HOOKS && cf &&
      (cf == P->co_resume || (cf == P->co_wrap && co && lua_gethook(co) != hook_event)))
    hook_resumed_thread(P, L, ar, cf);
  return cf ? HOOK_CALL_C : HOOK_CALL_LUA;
}

/* A call at timer reading `in`; `now` is the profile's clock then, or -1: not computed yet (it
   must be, once: clock_at). */
static inline __attribute__((always_inline)) int on_call(Profiler *P, Stack *st, lua_State *L,
                                                         lua_Debug *ar, cprof_ticks in,
                                                         cprof_ticks now, int *slow) {
#if LUAPRIV_KNOWN
  if (likely(P->fast)) {
    int kind = fast_call(P, st, L, ar, in, now, slow);
    if (likely(kind >= 0)) return kind;
  }
#endif
  return public_call(P, st, L, ar, in, now, slow);
}

/* LuaJIT: the top frame's activation id, provisional since its call, is that of an event in
   it (its return or one of its lines). */
static inline void settle_ci(Stack *st, const lua_Debug *ar) {
  if (!COMPAT_PER_THREAD_HOOKS && st->ci_pending) {
    st->f[st->n - 1].ci = COMPAT_CI(*ar);
    st->ci_pending = 0;
  }
}

static inline __attribute__((always_inline)) void on_return(Stack *st, lua_Debug *ar,
                                                            cprof_ticks now, int traced) {
  settle_ci(st, ar);
  eng_return(st->P, st, COMPAT_CI(*ar), now, traced);
}

/* The profiler enabled in L's state and the stack of L in it (NULL: none yet), for an event in
   another thread than the last one. The last event's profiler serves when L is of the same
   state (the fast path tells by the global state; the public path asks the registry). */
static Profiler *profiler_of(lua_State *L, Stack **st) {
  Profiler *P = NULL;
#if LUAPRIV_KNOWN
  Stack *last = thr_last_st;
  if (last && last->P->fast && luapriv_state(L) == luapriv_state(last->L)) P = last->P;
#endif
  if (!P) P = hook_profiler(L);
  *st = P ? stk_find(&P->stacks, L) : NULL;
  return P;
}

/* What an event of ours does: a switch of thread, then the call, return or line. Compiled
   twice in hook_event: `traced` is a constant, so the hook of a profile without a trace holds
   no trace code at all. */
static inline __attribute__((always_inline)) void record(Profiler *P, Stack *st, lua_State *L,
                                                         lua_Debug *ar, int event,
                                                         cprof_ticks in, int switched, int slow,
                                                         int traced) {
  cprof_ticks now = -1;
  int kind = HOOK_LINE;
  if (unlikely(st != P->stacks.cur)) {
    Stack *from = P->stacks.cur;
    now = clock_at(&P->clock, in);
    P->mem.in_hook = 1;
    if (eng_switch(P, from, st, now)) thr_end(P, from, hook_event);
    stk_set_cur(&P->stacks, st);
    if (P->mem.heap) lalloc_set_thread(P->mem.heap, L);
    P->mem.in_hook = 0;
    switched = 1;
  }
  if (event == LUA_HOOKCALL) {
    kind = on_call(P, st, L, ar, in, now, &slow);
    if (traced && !P->oom) eng_trace_call(P, st);
  } else if (event == LUA_HOOKRET) {
    on_return(st, ar, now < 0 ? clock_at(&P->clock, in) : now, traced);
    kind = HOOK_RETURN;
    /* A live dump runs after a return (every program makes them), between two events, on
       the hook's time. */
    if (unlikely(live_pending()) && live_dump(P, L)) slow = 1;
  } else {
    if (now < 0) now = clock_at(&P->clock, in);
    uint32_t recs = P->lines.nrecs;
    settle_ci(st, ar);
    if (eng_line(P, st, COMPAT_CI(*ar), ar->currentline, now)) P->oom = 1;
    slow = slow || recs != P->lines.nrecs;
  }
  if (unlikely(P->lines.on == LINES_CHOSEN) && kind != HOOK_LINE) follow_lines(P, st, L);
  clock_stop(&P->clock, in, switched ? HOOK_SWITCH : kind, slow);
}

void hook_event(lua_State *L, lua_Debug *ar) {
  Stack *st;
  Profiler *P;
  cprof_ticks in;
  int slow = 0, switched = 0;
  if (likely(L == thr_last_L)) {
    st = thr_last_st;
    P = st->P;
    if (unlikely(P->clock.reading)) return;
    P->clock.L = L;
    in = clock_read(&P->clock);
  } else {
    P = profiler_of(L, &st);
    if (!P) {
      stray(L, ar);
      return;
    }
    if (P->clock.reading) return;
    /* Finding a thread's stack is cprof's work: the clock stops before it. */
    P->clock.L = L;
    in = clock_read(&P->clock);
    /* A coroutine resumed goes on with the return of what yielded: the thread registry is for
       new threads and the other cases. */
    if (unlikely(!st || (st->suspended && !(ar->event == LUA_HOOKRET && st->n > 0 &&
                                             st->f[st->n - 1].ci == COMPAT_CI(*ar))))) {
      uint32_t nstacks = P->stacks.n;
      P->mem.in_hook = 1;
      st = thr_stack(P, L, ar, st);
      P->mem.in_hook = 0;
      if (!st) return;
      slow = nstacks != P->stacks.n;
    }
    thr_remember(L, st);
    switched = 1;
  }
  int event = ar->event == LUA_HOOKTAILCALL ? LUA_HOOKCALL : ar->event;
  int theirs = unlikely(st->prev_hook != NULL) && (st->prev_mask & (1 << event));
  /* The program's own hook runs on the program's time: before ours on a return (inside the
     returning function, as it would without us), after ours otherwise. */
  if (theirs && event == LUA_HOOKRET) st->prev_hook(L, ar);
  int ours = likely(event == LUA_HOOKCALL || event == LUA_HOOKRET) ||
             (event == LUA_HOOKLINE && P->lines.on);
  /* One test for both the rare cases: out of memory, and a profile that keeps a trace. */
  if (unlikely(P->special)) {
    if (P->oom) P->dropped++;
    else if (ours) record(P, st, L, ar, event, in, switched, slow, 1);
  } else if (ours) {
    record(P, st, L, ar, event, in, switched, slow, 0);
  }
  if (theirs && event != LUA_HOOKRET) st->prev_hook(L, ar);
}

const char *hook_enable(Profiler *P, lua_State *L) {
  Profiler *other = hook_profiler(L);
  if (other == P) return NULL;
  if (other) return "another cprof profiler is already enabled in this Lua state";
  ident_attach(P, L);
  /* Before our hook is in, so that it is not profiled. */
  if (P->public_only) {
    P->fast_state = "off";
    P->fast_why = "turned off (fast_path = false, or CPROF_FAST_PATH=0)";
  } else {
    P->fast_why = layout_check(L);
    P->fast_state = !P->fast_why ? "on" : LUAPRIV_KNOWN ? "fallback" : "unavailable";
  }
  P->fast = P->fast_why == NULL;
  if (P->trace.size && !P->trace.ev && trace_alloc(&P->trace))
    return "out of memory (the trace's ring of trace_size events)";
  P->tracing = P->trace.size > 0;
  P->jit_was_on = compat_jit_off(L);
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
  stk_set_cur(&P->stacks, st);
  P->stacks.main = main_st ? main_st : st;
  P->enabled = 1;
  lua_pushlightuserdata(L, P);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &PROFILER_KEY);
  thr_remember(L, st);
  lalloc_attr_start(&P->mem, L, &P->stacks.cur_top, &P->clock.vlast);
  return NULL;
}

static void unregister(lua_State *L) {
  lua_pushnil(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &PROFILER_KEY);
  thr_forget();
}

void hook_disable(Profiler *P, lua_State *L) {
  if (!P->enabled) return;
  lalloc_attr_stop(&P->mem);
  Stack *cur = stk_find(&P->stacks, L);
  P->clock.L = L;
  cprof_ticks now = clock_now_outside(&P->clock);
  /* While the stacks still tell which threads are suspended (maybe dead). */
  thr_release(P, L, hook_event);
  eng_flush(P, cur ? cur : P->stacks.cur, now);
  thr_drop_all(P);
  stk_set_cur(&P->stacks, NULL);
  P->enabled = 0;
  unregister(L);
  if (P->jit_was_on) compat_jit_on(L);
}

void hook_forget(Profiler *P, lua_State *L) {
  if (!P->enabled) return;
  lalloc_attr_stop(&P->mem);
  P->enabled = 0;
  if (hook_profiler(L) == P) unregister(L);
}
