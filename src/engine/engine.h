/*
 * engine/engine.h — what a call, a return, an unwind and a coroutine switch do to the numbers.
 * The rules are cProfile's (see docs/SEMANTICS.md): a call is primitive when its function is not
 * active on a running stack, cumulative time is added when the outermost activation ends, and
 * the same per caller->callee edge and per call-tree node.
 *
 * A call or a return costs a few loads and stores per record (function, edge, node): a record
 * knows how many running stacks hold a frame of it, and the lowest frame of it in each stack is
 * marked (stat.h), so that a coroutine switch touches only the marked frames of the two stacks
 * (one per distinct record: a deep recursion is one), never every frame. The common calls and
 * returns are inline here; unwinds, tail calls and switches are in engine.c.
 */
#ifndef CPROF_ENGINE_H
#define CPROF_ENGINE_H

#include "tables/profiler.h"

/* The record that mark `bit` of frame f stands for. */
static inline uint32_t eng_frame_rec(const Frame *f, int bit) {
  return bit == FIRST_FN ? f->entry : bit == FIRST_EDGE ? f->edge : f->node;
}

/* The index of the marked frame of record `rec` (mark `bit`) in st, or IDX_NONE. */
uint32_t eng_search(const Stack *st, uint32_t rec, int bit);

/* A frame of record `rec` is pushed at index n of running stack st: returns `bit` when it is the
   lowest frame of rec in st (it then makes the record active in one more stack), else 0. */
static inline int eng_enter(Stat *s, Stack *st, uint32_t n, uint32_t rec, int bit) {
  if (s->in_stack == st) {
    uint32_t i = s->in_first;
    if (i < n && eng_frame_rec(&st->f[i], bit) == rec && (st->f[i].first & bit)) return 0;
  } else if (s->active) {
    uint32_t i = eng_search(st, rec, bit);
    if (i != IDX_NONE) {
      s->in_stack = st;
      s->in_first = i;
      return 0;
    }
  }
  s->in_stack = st;
  s->in_first = n;
  s->active++;
  return bit;
}

/* A frame closes after `tt` ticks, `it` of them its own; `lowest`: it was the lowest frame of the
   record in its stack. */
static inline void eng_leave(Stat *s, int lowest, cprof_ticks tt, cprof_ticks it) {
  if (lowest && --s->active == 0) s->tt += tt;
  else s->rcalls++;
  s->it += it;
  s->calls++;
}

/* Whether frame f is a C function's, hidden or not (a hidden frame holds its caller's records,
   but its own call's link). A C function runs no lines. */
static inline int eng_is_c(const Profiler *P, const Frame *f) {
  return P->fns.entries[P->tree.links[f->link].entry].kind == KIND_C;
}

/* Pushes the frame of a hidden call (a function the profile's filters leave out): it holds its
   caller's records, so that the functions it calls are its caller's callees, and it charges
   nothing of its own. Without a caller it holds no records (node IDX_NONE): the functions it
   calls are roots (eng_real). Its `link` is its own call's (lk), which no call from it takes. */
int eng_push_hidden(Profiler *P, Stack *st, const void *ci, uint32_t lk, cprof_ticks now);

/* The frame a call is made from as a caller: NULL for none, or for a hidden frame that has no
   recorded caller below it. */
static inline const Frame *eng_real(const Frame *f) {
  return f && f->node != IDX_NONE ? f : NULL;
}

/* Pushes a frame for activation `ci` whose call took link `lk` (calltree.h), at `now`. Returns
   0, or -1 when out of memory (nothing pushed). */
static inline __attribute__((always_inline)) int eng_push(Profiler *P, Stack *st, const void *ci,
                                                          uint32_t lk, cprof_ticks now) {
  const Link *l = &P->tree.links[lk];
  uint32_t n = st->n;
  /* A C function called by a hidden one is hidden too: a library's calls of builtins are the
     library's work. */
  if (__builtin_expect(l->hidden, 0) ||
      (__builtin_expect(P->filters & PROF_FILE_FILTERS, 0) && n > 0 && st->f[n - 1].hidden &&
       P->fns.entries[l->entry].kind == KIND_C))
    return eng_push_hidden(P, st, ci, lk, now);
  if (n == st->cap && stk_grow(&P->stacks, st)) return -1;
  Frame *fr = &st->f[n];
  fr->ci = ci;
  fr->t0 = now - st->away;
  fr->subt = 0;
  fr->link = lk;
  fr->entry = l->entry;
  fr->edge = l->edge;
  fr->node = st->top = l->node;
  fr->line = IDX_NONE;
  fr->hidden = 0;
  int first = 0;
  /* A recursive call through the same link as its caller's (past the depth the tree keeps:
     calltree.h): the frame below holds all three. A direct recursion the tree keeps, one node
     per depth: the frame below holds the function and the edge. */
  if (n == 0 || fr[-1].link != lk) {
    first = eng_enter(&P->tree.nodes[l->node].s, st, n, l->node, FIRST_NODE);
    if (n == 0 || fr[-1].edge != l->edge || l->edge == IDX_NONE || fr[-1].hidden) {
      first |= eng_enter(&P->fns.entries[l->entry].s, st, n, l->entry, FIRST_FN);
      if (l->edge != IDX_NONE)
        first |= eng_enter(&P->tree.edges[l->edge].s, st, n, l->edge, FIRST_EDGE);
    }
  }
  fr->first = (uint8_t)first;
  if (first) {
    fr->prev_first = st->first_head;
    st->first_head = n + 1;
  }
  st->n = n + 1;
  if (l->capped) P->tree.folded++;
  return 0;
}

/* Closes the top frame of st at `now`. */
static inline __attribute__((always_inline)) void eng_pop(Profiler *P, Stack *st,
                                                          cprof_ticks now) {
  Frame *fr = &st->f[--st->n];
  stk_popped(st, fr);
  /* A hidden frame's own time stays its caller's own time: only its callees' is passed on. */
  if (__builtin_expect(fr->hidden, 0)) {
    if (st->n > 0) {
      st->f[st->n - 1].subt += fr->subt;
    } else {
      st->left += fr->subt - st->passed;
      st->passed = 0;
      st->hidden_done = 1;
    }
    return;
  }
  cprof_ticks vnow = now - st->away;
  cprof_ticks tt = vnow - fr->t0, it = tt - fr->subt;
  if (fr->line != IDX_NONE) P->lines.recs[fr->line].time += vnow - fr->line_t0;
  /* A coroutine's bottom frame has its caller on another stack: that caller is charged
     through the switch (eng_switch), which also counts the time of nested coroutines. */
  if (st->n > 0) st->f[st->n - 1].subt += tt;
  int first = fr->first;
  eng_leave(&P->fns.entries[fr->entry].s, first & FIRST_FN, tt, it);
  if (fr->edge != IDX_NONE) eng_leave(&P->tree.edges[fr->edge].s, first & FIRST_EDGE, tt, it);
  eng_leave(&P->tree.nodes[fr->node].s, first & FIRST_NODE, tt, it);
  if (first) st->first_head = fr->prev_first;
}

/* The trace's call event of the top frame of st (just pushed), and its return event (about to
   be popped) at `now`. A hidden frame is its caller's time, so it has no events. */
static inline void eng_trace_call(Profiler *P, const Stack *st) {
  const Frame *fr = &st->f[st->n - 1];
  if (!fr->hidden) trace_add(&P->trace, st->id, fr->node, fr->t0 + st->away);
}
static inline void eng_trace_return(Profiler *P, const Stack *st, cprof_ticks now) {
  const Frame *fr = &st->f[st->n - 1];
  if (!fr->hidden) trace_add(&P->trace, st->id | TRACE_RETURN, fr->node, now);
}

/* The frame that makes a call in activation `parent_ci` (NULL: none in this thread) at `now`:
   the top of st, or, for a coroutine's first frame, the top of the stack that resumed it; NULL
   for a root call. Frames above the caller's are stale (unwound by an error, replaced by a
   tail call, or a LuaJIT built-in, which sends no return event) and are closed first. The slow
   paths set st->last to `now` only after closing them (a built-in closes at its last event). */
const Frame *eng_caller_slow(Profiler *P, Stack *st, const void *parent_ci, cprof_ticks now);

static inline const Frame *eng_caller(Profiler *P, Stack *st, const void *parent_ci,
                                      cprof_ticks now) {
  if (st->n > 0 && st->f[st->n - 1].ci == parent_ci) {
    st->last = now;
    return eng_real(&st->f[st->n - 1]);
  }
  return eng_real(eng_caller_slow(P, st, parent_ci, now));
}

/* A call at `now` of `entry` in activation `ci` whose caller is activation `parent_ci`: the
   caller, its link, the push. Returns 0, or -1 when out of memory (the call is not recorded). */
int eng_call(Profiler *P, Stack *st, const void *ci, const void *parent_ci, uint32_t entry,
             cprof_ticks now);

/* The return of activation `ci`: closes it and anything above it that was unwound. A return
   of an activation that was never seen (entered before enable()) closes every frame. */
void eng_return_slow(Profiler *P, Stack *st, const void *ci, cprof_ticks now);

/* `traced`: P->tracing, a constant where the caller is compiled once with and once without. */
static inline __attribute__((always_inline)) void eng_return(Profiler *P, Stack *st,
                                                             const void *ci, cprof_ticks now,
                                                             int traced) {
  if (st->n > 0 && st->f[st->n - 1].ci == ci) {
    st->last = now;
    if (traced) eng_trace_return(P, st, now);
    eng_pop(P, st, now);
  } else {
    eng_return_slow(P, st, ci, now);
  }
}

/* A line event at `now` in activation `ci`: frames above ci's are closed (stale; when ci has no
   frame, the C functions' frames on top), and the time since ci's frame's previous line event
   goes to that line. Returns -1 when out of memory. */
int eng_line(Profiler *P, Stack *st, const void *ci, int line, cprof_ticks now);

/* Control passed from the thread of `from` (may be NULL) to the thread of `to`, whose event at
   `now` this is. `from` is charged up to its own last event, so the time between the two events
   (the switch itself) stays with the frame that made it, and callee times add up.
   Returns 1 when `from` is dead (finished or killed by an error): the caller drops it, and the
   threads the same error killed on its way out, linked from it through `resumer`. */
int eng_switch(Profiler *P, Stack *from, Stack *to, cprof_ticks now);

/* Closes every open frame of every stack, leaving internal frames on top of `cur` out. */
void eng_flush(Profiler *P, Stack *cur, cprof_ticks now);

/* Closes a stack's frames at `now` (for a dead thread: at the moment it was suspended). */
void eng_close_all(Profiler *P, Stack *st, cprof_ticks now);

#endif
