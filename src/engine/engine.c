/* Event semantics. Everything on the common path is a few loads and stores on the shadow
   stack and two counters; searches happen only after unwinds and tail calls. */
#include "engine/engine.h"

static inline void account(Stat *s, cprof_ticks tt, cprof_ticks it) {
  if (--s->level == 0) s->tt += tt;
  else s->rcalls++;
  s->it += it;
  s->calls++;
}

/* A frame becomes active (+1) or stops being active (-1) for the recursion counters. */
static void levels(Profiler *P, const Frame *fr, int d) {
  P->fns.entries[fr->entry].s.level += d;
  if (fr->edge != IDX_NONE) P->tree.edges[fr->edge].s.level += d;
  P->tree.nodes[fr->node].s.level += d;
}

static void close_top(Profiler *P, Stack *st, cprof_ticks now) {
  Frame *fr = &st->f[--st->n];
  cprof_ticks tt = now - fr->t0;
  if (fr->line != IDX_NONE) P->lines.recs[fr->line].time += now - fr->line_t0;
  /* A coroutine's bottom frame has its caller on another stack: that caller is charged
     through the switch (eng_switch), which also counts the time of nested coroutines. */
  if (st->n > 0) st->f[st->n - 1].subt += tt;
  account(&P->fns.entries[fr->entry].s, tt, tt - fr->subt);
  if (fr->edge != IDX_NONE) account(&P->tree.edges[fr->edge].s, tt, tt - fr->subt);
  account(&P->tree.nodes[fr->node].s, tt, tt - fr->subt);
}

static void discard_top(Profiler *P, Stack *st) {
  levels(P, &st->f[--st->n], -1);
}

/* Closes the frames above index `keep` (keep == -1: all of them). */
static void close_above(Profiler *P, Stack *st, int64_t keep, cprof_ticks now) {
  while ((int64_t)st->n - 1 > keep) close_top(P, st, now);
}

static int64_t find_frame(const Stack *st, const void *ci) {
  for (int64_t i = (int64_t)st->n - 1; i >= 0; i--)
    if (st->f[i].ci == ci) return i;
  return -1;
}

int eng_call(Profiler *P, Stack *st, const void *ci, const void *parent_ci, uint32_t entry,
             cprof_ticks now) {
  st->last = now;
  if (st->n > 0 && st->f[st->n - 1].ci != parent_ci) {
    int64_t keep = parent_ci ? find_frame(st, parent_ci) : -1;
    close_above(P, st, keep, now);
  }
  if (st->n == st->cap && stk_grow(st)) return -1;
  /* A coroutine's first frame is called by the frame that resumed it. */
  const Stack *from = st->n > 0 ? st : st->resumer && st->resumer->n > 0 ? st->resumer : NULL;
  const Frame *caller = from ? &from->f[from->n - 1] : NULL;
  const Link *lk = tree_link(&P->tree, caller ? caller->node : IDX_NONE,
                             caller ? caller->entry : IDX_NONE, entry);
  if (!lk) return -1;
  if (lk->capped) P->tree.folded++;
  st->f[st->n] = (Frame){ci, entry, lk->edge, lk->node, IDX_NONE, now, 0, 0};
  levels(P, &st->f[st->n++], +1);
  return 0;
}

void eng_return(Profiler *P, Stack *st, const void *ci, cprof_ticks now) {
  st->last = now;
  if (st->n == 0) return;
  if (st->f[st->n - 1].ci != ci) {
    int64_t at = find_frame(st, ci);
    close_above(P, st, at, now);
    if (at < 0) return;
  }
  close_top(P, st, now);
}

int eng_line(Profiler *P, Stack *st, int line, cprof_ticks now) {
  st->last = now;
  if (st->n == 0) return 0;
  Frame *fr = &st->f[st->n - 1];
  if (fr->line != IDX_NONE) P->lines.recs[fr->line].time += now - fr->line_t0;
  fr->line = line_record(&P->lines, fr->entry, line);
  if (fr->line == IDX_NONE) return -1;
  P->lines.recs[fr->line].hits++;
  fr->line_t0 = now;
  return 0;
}

static void suspend(Profiler *P, Stack *st, cprof_ticks now) {
  for (uint32_t i = 0; i < st->n; i++) levels(P, &st->f[i], -1);
  st->suspended = 1;
  st->suspended_at = now;
}

static void resume(Profiler *P, Stack *st, cprof_ticks now) {
  cprof_ticks away = now - st->suspended_at;
  for (uint32_t i = 0; i < st->n; i++) {
    levels(P, &st->f[i], +1);
    st->f[i].t0 += away;
    st->f[i].line_t0 += away;
  }
  st->suspended = 0;
}

void eng_close_all(Profiler *P, Stack *st, cprof_ticks now) {
  if (st->suspended) resume(P, st, now);
  close_above(P, st, -1, now);
}

int eng_switch(Profiler *P, Stack *from, Stack *to, cprof_ticks now) {
  int dead = 0;
  if (from) {
    int status = lua_status(from->L);
    int back = to == from->resumer;
    if (back) {
      /* Control came back: all the coroutine did is the resumer's callee time. */
      if (to->n > 0) to->f[to->n - 1].subt += from->last - from->switch_in;
    } else if (status == LUA_OK && from->n > 0) {
      to->resumer = from;  /* `from` is still running, so it resumed `to` */
      to->switch_in = now;
    }
    if (back || status != LUA_OK) from->resumer = NULL;
    if (status == LUA_YIELD) {
      if (!from->suspended) suspend(P, from, from->last);
    } else if (back || status != LUA_OK) {
      dead = 1;  /* finished, or killed by an error: its frames were unwound */
      eng_close_all(P, from, from->last);
    }
  }
  if (to->suspended) resume(P, to, now);
  return dead;
}

void eng_flush(Profiler *P, Stack *cur, cprof_ticks now) {
  if (cur) {
    while (cur->n > 0 && P->fns.entries[cur->f[cur->n - 1].entry].internal) discard_top(P, cur);
    /* Close the running chain innermost first, so each resumer gets its coroutine's time. */
    for (Stack *st = cur; st; ) {
      Stack *up = st->resumer;
      eng_close_all(P, st, now);
      if (up && up->n > 0) up->f[up->n - 1].subt += now - st->switch_in;
      st->resumer = NULL;
      st = up;
    }
  }
  for (uint32_t i = 0; i < P->stacks.n; i++) eng_close_all(P, P->stacks.all[i], now);
}
