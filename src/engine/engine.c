/* Event semantics off the common path (engine/engine.h): unwinds and tail calls, which search
   the stack for the caller, coroutine switches, which touch the marked frames of two stacks,
   and closing everything at disable(). */
#include "engine/engine.h"
#include "util/compat.h"
#include "util/luapriv.h"

uint32_t eng_search(const Stack *st, uint32_t rec, int bit) {
  for (uint32_t i = st->first_head; i > 0; i = st->f[i - 1].prev_first) {
    const Frame *f = &st->f[i - 1];
    if ((f->first & bit) && eng_frame_rec(f, bit) == rec) return i - 1;
  }
  return IDX_NONE;
}

/* A marked frame's records stop (d = -1) or start again (d = +1) being active in its stack. */
static inline __attribute__((always_inline)) void mark_active(Profiler *P, const Frame *f, int d) {
  if (f->first & FIRST_FN) P->fns.entries[f->entry].s.active += d;
  if (f->first & FIRST_EDGE) P->tree.edges[f->edge].s.active += d;
  if (f->first & FIRST_NODE) P->tree.nodes[f->node].s.active += d;
}

/* Forgets the top frame as though it never ran (a profiler frame open at disable()): its call
   leaves the trace too, unless events came after it (its return then closes it there). */
static void discard_top(Profiler *P, Stack *st, cprof_ticks now) {
  if (P->tracing && !trace_retract(&P->trace, st->id, st->f[st->n - 1].node))
    eng_trace_return(P, st, now);
  const Frame *f = &st->f[--st->n];
  stk_popped(st, f);
  mark_active(P, f, -1);
  if (f->first) st->first_head = f->prev_first;
}

/* How frame fr ends without a return event (Entry.no_return): NR_NONE unless its function is
   a LuaJIT built-in; always NR_NONE on Lua 5.4, where every call returns. */
static int no_return(const Profiler *P, const Frame *fr) {
  if (COMPAT_ALL_RETURN || fr->hidden) return NR_NONE;
  return P->fns.entries[fr->entry].no_return;
}

/* Closes the top frame off the common path: unwound, or closed at a switch or at disable(), at
   `now`; returns when it closed it. LuaJIT sends no return event for its built-ins: one is found
   closed at its caller's next event, however long after it returned, so it is closed at its
   own last event instead, and the rest stays with its caller, whose code it was. That is
   `last`: its stack's last event before this one (st->last, which the slow paths move to `now`
   only after closing), or the time a callee above it was just closed at. */
static cprof_ticks pop(Profiler *P, Stack *st, cprof_ticks now, cprof_ticks last) {
  if (no_return(P, &st->f[st->n - 1]) == NR_BUILTIN && last < now) now = last;
  if (P->tracing) eng_trace_return(P, st, now);
  eng_pop(P, st, now);
  return now;
}

/* Closes the frames above index `keep` (keep == -1: all of them). */
static void close_above(Profiler *P, Stack *st, int64_t keep, cprof_ticks now) {
  cprof_ticks last = st->last;
  while ((int64_t)st->n - 1 > keep) last = pop(P, st, now, last);
}

static int64_t find_frame(const Stack *st, const void *ci) {
  for (int64_t i = (int64_t)st->n - 1; i >= 0; i--)
    if (st->f[i].ci == ci) return i;
  return -1;
}

const Frame *eng_caller_slow(Profiler *P, Stack *st, const void *parent_ci, cprof_ticks now) {
  if (st->n > 0) {
    int64_t at = parent_ci ? find_frame(st, parent_ci) : -1;
    /* A message handler that runs at a stack overflow is called from the activation whose
       call overflowed, which sent no call event: its caller's caller is the frame to keep.
       Closing every frame instead made the handler and all that followed roots. */
    lua_Debug up;
    if (at < 0 && parent_ci && lua_getstack(st->L, 2, &up)) at = find_frame(st, COMPAT_CI(up));
    close_above(P, st, at, now);
  }
  st->last = now;
  if (st->n > 0) return &st->f[st->n - 1];
  /* A coroutine's first frame is called by the frame that resumed it. */
  const Stack *r = st->resumer;
  return r && r->n > 0 ? &r->f[r->n - 1] : NULL;
}

int eng_call(Profiler *P, Stack *st, const void *ci, const void *parent_ci, uint32_t entry,
             cprof_ticks now) {
  const Frame *caller = eng_caller(P, st, parent_ci, now);
  uint32_t lk = tree_link(&P->tree, caller ? caller->node : IDX_NONE,
                          caller ? caller->entry : IDX_NONE, entry,
                          P->fns.entries[entry].filter == FILTER_OUT);
  if (lk == IDX_NONE || eng_push(P, st, ci, lk, now)) return -1;
  if (P->tracing) eng_trace_call(P, st);
  return 0;
}

void eng_return_slow(Profiler *P, Stack *st, const void *ci, cprof_ticks now) {
  if (st->n > 0) {
    int64_t at = find_frame(st, ci);
    close_above(P, st, at, now);
    if (at >= 0) pop(P, st, now, now);
  }
  st->last = now;
}

int eng_push_hidden(Profiler *P, Stack *st, const void *ci, uint32_t lk, cprof_ticks now) {
  const Stack *r = st->n > 0 ? st : st->resumer;
  Frame under = {.link = IDX_NONE, .entry = IDX_NONE, .edge = IDX_NONE, .node = IDX_NONE};
  if (r && r->n > 0) under = r->f[r->n - 1];  /* a copy: growing st may move it */
  if (st->n == st->cap && stk_grow(&P->stacks, st)) return -1;
  Frame *fr = &st->f[st->n++];
  st->top = under.node;
  *fr = under;
  fr->ci = ci;
  fr->link = lk;
  fr->t0 = now - st->away;
  fr->subt = 0;
  fr->line = IDX_NONE;
  fr->first = 0;
  fr->hidden = 1;
  return 0;
}

int eng_line(Profiler *P, Stack *st, const void *ci, int line, cprof_ticks now) {
  /* A line runs in activation ci: a frame above it is stale, as at a call (eng_caller_slow),
     and on LuaJIT always there after a C function, which sends no return event. An activation
     entered before enable() has no frame: the C functions' frames on top of it are stale. */
  if (st->n > 0 && st->f[st->n - 1].ci != ci) {
    int64_t at = find_frame(st, ci);
    if (at < 0)
      for (at = (int64_t)st->n - 1; at >= 0 && eng_is_c(P, &st->f[at]); at--) continue;
    close_above(P, st, at, now);
  }
  st->last = now;
  if (st->n == 0) return 0;
  Frame *fr = &st->f[st->n - 1];
  /* The lines of a hidden function are part of its caller's current line. */
  if (fr->hidden) return 0;
  /* Another function's line event (a program's own line hook is on) is not recorded. */
  if (P->lines.on == LINES_CHOSEN && P->fns.entries[fr->entry].lines != FILTER_IN) return 0;
  cprof_ticks vnow = now - st->away;
  if (fr->line != IDX_NONE) P->lines.recs[fr->line].time += vnow - fr->line_t0;
  fr->line = line_record(&P->lines, fr->entry, line);
  if (fr->line == IDX_NONE) return -1;
  P->lines.recs[fr->line].hits++;
  fr->line_t0 = vnow;
  return 0;
}

/* Its records stop being active in it, and its own time stops: one step per marked frame. */
static void suspend(Profiler *P, Stack *st, cprof_ticks now) {
  for (uint32_t i = st->first_head; i > 0; i = st->f[i - 1].prev_first)
    mark_active(P, &st->f[i - 1], -1);
  st->suspended = 1;
  st->suspended_at = now;
}

static void resume(Profiler *P, Stack *st, cprof_ticks now) {
  for (uint32_t i = st->first_head; i > 0; i = st->f[i - 1].prev_first)
    mark_active(P, &st->f[i - 1], +1);
  st->away += now - st->suspended_at;
  st->suspended = 0;
}

void eng_close_all(Profiler *P, Stack *st, cprof_ticks now) {
  if (st->suspended) resume(P, st, now);
  close_above(P, st, -1, now);
}

/* The time a coroutine ran since control passed into it, up to `until`, that its resumer's
   frame gets as callee time: all of it, or, when its body is hidden, only what its recorded
   functions took (the rest is the resumer's own time, as for any hidden callee). */
static cprof_ticks coroutine_time(Stack *st, cprof_ticks until) {
  cprof_ticks d;
  if (st->n > 0 && st->f[0].hidden) {
    d = st->left + st->f[0].subt - st->passed;
    st->passed = st->f[0].subt;
  } else {
    d = st->hidden_done ? st->left : until - st->switch_in;
  }
  st->left = 0;
  st->hidden_done = 0;
  return d;
}

/* Whether the top frame of st is a LuaJIT coroutine switch: resume, yield or a call of a
   function made by coroutine.wrap, none of which sends a return event. */
static int switch_on_top(const Profiler *P, const Stack *st) {
  return st->n > 0 && no_return(P, &st->f[st->n - 1]) == NR_SWITCH;
}

/* A LuaJIT switch's frame ends at the switch, `at` by st's clock: a yield at its own call (a
   suspended stack's clock was stopped then), a resume when its coroutine's last event came. */
static void close_switch(Profiler *P, Stack *st, cprof_ticks at) {
  pop(P, st, at, at);
  st->last = at;
}

static int thread_status(const Profiler *P, lua_State *L) {
  int status = lua_status(L);
#if LUAPRIV_KNOWN
  if (P->fast) status = luapriv_status(L);
#endif
  (void)P;
  return status;
}

/* Whether st's thread, which is not the running one, has ended. A status that reads LUA_OK
   means so when the thread holds no activation: it returned, or died of an error and was reset
   since (coroutine.wrap's caller and coroutine.close do that), which leaves it LUA_OK with
   cprof's frames unpopped. The main thread holds none while a host resumes a coroutine from C. */
static __attribute__((noinline, cold)) int has_ended(const Profiler *P, Stack *st, int status) {
  lua_Debug top;
  return status != LUA_OK ? status != LUA_YIELD
                          : st != P->stacks.main && !lua_getstack(st->L, 0, &top);
}

/* `from` ended without giving control back to `up`, its resumer: an error killed it and went
   on, through coroutine.wrap, into `up`, which it killed too unless `up` caught it, and so on
   up to `to`, the thread that caught it, whose event this is. The threads it killed send no
   event: their frames close here, at the error (`from`'s last event), innermost first, each
   giving its resumer its time as a callee. They stay linked through `resumer`, from `from` to
   the outermost, for the caller to drop. */
static __attribute__((noinline, cold)) void close_killed(Profiler *P, Stack *from, Stack *up,
                                                         Stack *to) {
  cprof_ticks at = from->last;
  for (Stack *st = from;;) {
    cprof_ticks d = coroutine_time(st, at);
    if (!up) return;
    if (up->n > 0) up->f[up->n - 1].subt += d;
    if (up == to || !has_ended(P, up, thread_status(P, up->L))) return;
    st->resumer = up;
    st = up;
    up = st->resumer;
    st->resumer = NULL;
    eng_close_all(P, st, at);
  }
}

int eng_switch(Profiler *P, Stack *from, Stack *to, cprof_ticks now) {
  int dead = 0;
  /* LuaJIT sends no event when a resumed coroutine goes on after its yield, nor when its
     resumer goes on after the resume: the switch is found at the next event of the thread
     switched to, however long after. It happened at the last event of the thread switched
     from (its resume's or yield's call, or the coroutine's return), so it is dated there: the
     coroutine's work after its yield is its own, and so is the resumer's after the resume. */
  cprof_ticks at = from && switch_on_top(P, from) ? from->last : now;
  if (from) {
    int status = thread_status(P, from->L);
    Stack *up = from->resumer;
    int back = to == up;
    /* A coroutine that ended did not resume `to`: taking it for `to`'s resumer would close a
       loop of resumers, which disable() would walk forever. A thread that resumes another
       switches to one suspended or not yet started; only control reaching another (the thread
       that caught an error) asks whether `from` ended, which costs a call per switch. */
    int gone = status != LUA_OK ? status != LUA_YIELD
                                : !back && !to->suspended && to->n > 0 && has_ended(P, from, status);
    if (back) {
      /* Control came back: all the coroutine did is the resumer's callee time. */
      cprof_ticks d = coroutine_time(from, from->last);
      if (to->n > 0) to->f[to->n - 1].subt += d;
      if (switch_on_top(P, to)) close_switch(P, to, from->last);
    } else if (!gone && status == LUA_OK && from->n > 0) {
      to->resumer = from;  /* `from` is still running, so it resumed `to` */
      /* (a new coroutine's first event is its body's call: nothing of it ran before) */
      to->switch_in = to->n > 0 ? at : now;
    }
    if (back || gone || status != LUA_OK) from->resumer = NULL;
    if (status == LUA_YIELD) {
      if (!from->suspended) suspend(P, from, from->last);
    } else if (back || gone) {
      dead = 1;  /* finished, or killed by an error: its frames were unwound */
      eng_close_all(P, from, from->last);
      if (!back) close_killed(P, from, up, to);
    }
  }
  if (to->suspended) resume(P, to, at);
  if (at != now && switch_on_top(P, to)) close_switch(P, to, at);
  return dead;
}

void eng_flush(Profiler *P, Stack *cur, cprof_ticks now) {
  if (cur) {
    while (cur->n > 0 && !cur->f[cur->n - 1].hidden &&
           P->fns.entries[cur->f[cur->n - 1].entry].internal)
      discard_top(P, cur, now);
    /* Close the running chain innermost first, so each resumer gets its coroutine's time. */
    for (Stack *st = cur; st; ) {
      Stack *up = st->resumer;
      eng_close_all(P, st, now);
      cprof_ticks d = coroutine_time(st, now);
      if (up && up->n > 0) up->f[up->n - 1].subt += d;
      st->resumer = NULL;
      st = up;
    }
  }
  for (uint32_t i = 0; i < P->stacks.n; i++) eng_close_all(P, P->stacks.all[i], now);
}
