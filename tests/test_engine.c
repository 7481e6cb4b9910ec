/*
 * tests/test_engine.c — unit tests of cProfile's rules (src/engine/engine.c), run by `make ctest`
 * both as is and under AddressSanitizer + UBSan.
 *
 * The engine is driven the way the hook drives it, without the hook: calls, returns and
 * coroutine switches at times chosen by the test (a fake clock), with activation ids chosen by
 * the test. Each case checks ncalls, pcalls, tottime and cumtime exactly, per function, per
 * edge and per call-tree node: recursion, a tail call and an error unwinding several frames,
 * a coroutine resumed twice and finishing, a function active in a coroutine and in its resumer
 * (a deep recursion, whose switch touches only the lowest frame of each record), closing
 * at disable() with profiler frames open, and the trace's events.
 *
 *   test_engine      exit status 0 when everything passed
 */
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "ctest.h"
#include "engine/engine.h"
#include "tables/profiler.h"

static cprof_ticks no_clock(void *ud) {
  (void)ud;
  return 0;
}

static const cprof_timer fake = {"fake", 1.0, no_clock, NULL, 1};

/* Activation ids: any distinct addresses will do. */
#define CI(k) ((const void *)(uintptr_t)(0x1000 + (k)))

/* A function entry named `name` (a C function at a made-up address). */
static uint32_t func(Profiler *P, const char *name) {
  static char addresses[32];
  uint32_t e = fn_add(&P->fns, IDX_NONE, -1, &addresses[P->fns.nentries], KIND_C);
  CHECK(e != IDX_NONE && fn_set_name(&P->fns, e, name, 0) == 0, "entry %s", name);
  return e;
}

/* The event at `now` is in stack `st`: the switch the hook makes first when the thread changed. */
static void in(Profiler *P, Stack *st, cprof_ticks now) {
  if (st == P->stacks.cur) return;
  Stack *from = P->stacks.cur;
  if (eng_switch(P, from, st, now)) stk_drop(&P->stacks, from);
  stk_set_cur(&P->stacks, st);
}

/* What memory attribution reads as the node running now (**node_at) is the current stack's
   top frame's node, IDX_NONE with no frame or no current stack. */
static void expect_top(const Profiler *P, cprof_ticks now) {
  const Stack *st = P->stacks.cur;
  uint32_t want = st && st->n > 0 ? st->f[st->n - 1].node : IDX_NONE;
  CHECK(*P->stacks.cur_top == want, "at %lld the running node is %u, not %u", (long long)now,
        *P->stacks.cur_top, want);
}

static void call(Profiler *P, Stack *st, int ci, int parent, uint32_t e, cprof_ticks now) {
  in(P, st, now);
  CHECK(eng_call(P, st, CI(ci), parent ? CI(parent) : NULL, e, now) == 0, "call at %lld",
        (long long)now);
  CHECK(*P->stacks.cur_top != IDX_NONE, "a frame runs at %lld", (long long)now);
  expect_top(P, now);
}

static void ret(Profiler *P, Stack *st, int ci, cprof_ticks now) {
  in(P, st, now);
  eng_return(P, st, CI(ci), now, P->tracing);
  expect_top(P, now);
}

static void expect(const Stat *s, const char *what, uint64_t ncalls, uint64_t pcalls,
                   cprof_ticks tottime, cprof_ticks cumtime) {
  CHECK(s->calls == ncalls && s->calls - s->rcalls == pcalls && s->it == tottime &&
            s->tt == cumtime && s->active == 0,
        "%s: ncalls %llu/%llu, pcalls %llu/%llu, tottime %lld/%lld, cumtime %lld/%lld, active %u",
        what, (unsigned long long)s->calls, (unsigned long long)ncalls,
        (unsigned long long)(s->calls - s->rcalls), (unsigned long long)pcalls,
        (long long)s->it, (long long)tottime, (long long)s->tt, (long long)cumtime, s->active);
}

static const Stat *edge(const Profiler *P, uint32_t caller, uint32_t callee) {
  for (uint32_t i = 0; i < P->tree.nedges; i++)
    if (P->tree.edges[i].caller == caller && P->tree.edges[i].callee == callee)
      return &P->tree.edges[i].s;
  CHECK(0, "no edge %u -> %u", caller, callee);
  static const Stat none;
  return &none;
}

/* The node of the path entries path[0] -> ... -> path[n - 1] from a root. */
static const Stat *node(const Profiler *P, const uint32_t *path, int n) {
  uint32_t parent = IDX_NONE, found = IDX_NONE;
  for (int d = 0; d < n; d++, parent = found) {
    found = IDX_NONE;
    for (uint32_t i = 0; i < P->tree.nnodes; i++)
      if (P->tree.nodes[i].parent == parent && P->tree.nodes[i].entry == path[d]) found = i;
    if (found == IDX_NONE) {
      CHECK(0, "no node for depth %d of the path", d);
      static const Stat none;
      return &none;
    }
  }
  return &P->tree.nodes[found].s;
}

static Stack *setup(Profiler *P, lua_State *L) {
  CHECK(prof_init(P, &fake) == 0, "prof_init");
  Stack *st = stk_new(&P->stacks, P, L);
  CHECK(st != NULL, "stack");
  stk_set_cur(&P->stacks, st);
  P->stacks.main = st;  /* as enable() has it: L is the main thread */
  return st;
}

/* f calls itself twice: 3 calls, 1 primitive; cumulative time only for the outermost. The
   function and the edge are the same whatever the tree keeps: one node per call (the
   default), the two inner calls in a second node (recursion = 2), or all in one (1). */
static void test_recursion(lua_State *L) {
  for (uint32_t keep = 1; keep <= 3; keep++) {
    Profiler P;
    Stack *st = setup(&P, L);
    if (keep < 3) P.tree.recursion = keep;
    uint32_t f = func(&P, "f");
    call(&P, st, 1, 0, f, 0);
    call(&P, st, 2, 1, f, 1);
    call(&P, st, 3, 2, f, 3);
    ret(&P, st, 3, 6);   /* own 3 */
    ret(&P, st, 2, 10);  /* 9, of which 3 in the inner f: own 6 */
    ret(&P, st, 1, 15);  /* 15, of which 9 inside: own 6 */
    CHECK(*P.stacks.cur_top == IDX_NONE, "no frame runs");
    expect(&P.fns.entries[f].s, "f", 3, 1, 15, 15);
    expect(edge(&P, f, f), "f -> f", 2, 1, 9, 9);
    CHECK(P.tree.nnodes == keep, "%u nodes: %u", keep, P.tree.nnodes);
    if (keep == 1) {
      expect(node(&P, (uint32_t[]){f}, 1), "node f (recursion folds into it)", 3, 1, 15, 15);
    } else if (keep == 2) {
      expect(node(&P, (uint32_t[]){f}, 1), "node f", 1, 1, 6, 15);
      expect(node(&P, (uint32_t[]){f, f}, 2), "node f/f (the deeper call folds)", 2, 1, 9, 9);
    } else {
      expect(node(&P, (uint32_t[]){f}, 1), "node f", 1, 1, 6, 15);
      expect(node(&P, (uint32_t[]){f, f}, 2), "node f/f", 1, 1, 6, 9);
      expect(node(&P, (uint32_t[]){f, f, f}, 3), "node f/f/f", 1, 1, 3, 3);
    }
    prof_free(&P);
  }
}

/* f -> g -> f -> g -> f with recursion = 2: f's third call, its path holding two nodes of f,
   goes to the deeper of them (f/g/f), not to its caller's node; g's calls are two. */
static void test_recursion_cycle(lua_State *L) {
  Profiler P;
  Stack *st = setup(&P, L);
  P.tree.recursion = 2;
  uint32_t f = func(&P, "f"), g = func(&P, "g");
  call(&P, st, 1, 0, f, 0);
  call(&P, st, 2, 1, g, 1);
  call(&P, st, 3, 2, f, 2);
  call(&P, st, 4, 3, g, 3);
  call(&P, st, 5, 4, f, 4);
  ret(&P, st, 5, 5);
  ret(&P, st, 4, 6);
  ret(&P, st, 3, 7);
  ret(&P, st, 2, 8);
  ret(&P, st, 1, 9);
  expect(&P.fns.entries[f].s, "f", 3, 1, 5, 9);
  expect(&P.fns.entries[g].s, "g", 2, 1, 4, 7);
  CHECK(P.tree.nnodes == 4, "4 nodes: %u", P.tree.nnodes);
  expect(node(&P, (uint32_t[]){f, g, f}, 3), "node f/g/f (and the fifth call)", 2, 1, 3, 5);
  expect(node(&P, (uint32_t[]){f, g, f, g}, 4), "node f/g/f/g", 1, 1, 2, 3);
  prof_free(&P);
}

/* A tail call: g's frame is replaced by h, whose call names f as its caller, so g closes when
   h is called. Then an error: k's frames are unwound up to f, whose return closes them. */
static void test_unwinds(lua_State *L) {
  Profiler P;
  Stack *st = setup(&P, L);
  uint32_t f = func(&P, "f"), g = func(&P, "g"), h = func(&P, "h"), k = func(&P, "k");
  call(&P, st, 1, 0, f, 0);
  call(&P, st, 2, 1, g, 2);
  call(&P, st, 3, 1, h, 5);  /* g ends here: 3 */
  ret(&P, st, 3, 9);         /* h: 4 */
  call(&P, st, 4, 1, k, 10);
  call(&P, st, 5, 4, k, 11);
  ret(&P, st, 1, 20);        /* both k frames and f close at 20 */
  expect(&P.fns.entries[g].s, "g", 1, 1, 3, 3);
  expect(&P.fns.entries[h].s, "h", 1, 1, 4, 4);
  expect(&P.fns.entries[k].s, "k", 2, 1, 10, 10);
  expect(&P.fns.entries[f].s, "f", 1, 1, 3, 20);  /* 20 - 3 - 4 - 10 */
  expect(edge(&P, f, g), "f -> g", 1, 1, 3, 3);
  expect(edge(&P, f, h), "f -> h", 1, 1, 4, 4);
  expect(edge(&P, f, k), "f -> k", 1, 1, 1, 10);
  expect(edge(&P, k, k), "k -> k", 1, 1, 9, 9);
  expect(node(&P, (uint32_t[]){f, h}, 2), "node f/h", 1, 1, 4, 4);
  CHECK(st->n == 0, "every frame closed: %u open", st->n);
  prof_free(&P);
}

static int yield_once(lua_State *co) { return lua_yield(co, 0); }

/* A coroutine (left on L's stack) that yields once when resumed, and its stack. */
static Stack *coroutine_stack(Profiler *P, lua_State *L, lua_State **co) {
  *co = lua_newthread(L);
  lua_pushcfunction(*co, yield_once);
  Stack *st = stk_new(&P->stacks, P, *co);
  CHECK(st != NULL, "coroutine stack");
  return st;
}

/* f resumes a coroutine twice: its body g runs, yields, runs again and finishes. The time
   the coroutine runs is the callee time of each resume; the time it is suspended counts for
   nobody inside it. */
static void test_coroutine(lua_State *L) {
  Profiler P;
  Stack *main_st = setup(&P, L);
  lua_State *co;
  Stack *co_st = coroutine_stack(&P, L, &co);
  uint32_t f = func(&P, "f"), resume = func(&P, "resume"), g = func(&P, "g"),
           yield = func(&P, "yield");
  int nres;

  call(&P, main_st, 1, 0, f, 0);
  call(&P, main_st, 2, 1, resume, 1);
  call(&P, co_st, 10, 0, g, 2);        /* the coroutine starts: resumed by main_st */
  call(&P, co_st, 11, 10, yield, 5);
  CHECK(lua_resume(co, L, 0, &nres) == LUA_YIELD, "the coroutine yields");
  ret(&P, main_st, 2, 7);              /* resume returns: 6, of which 3 in the coroutine */
  CHECK(co_st->suspended, "suspended");
  call(&P, main_st, 3, 1, resume, 8);
  ret(&P, co_st, 11, 9);               /* yield returns in the resumed coroutine */
  ret(&P, co_st, 10, 12);              /* g returns: ran 2..5 and 9..12 */
  CHECK(lua_resume(co, L, 0, &nres) == LUA_OK, "the coroutine finishes");
  ret(&P, main_st, 3, 13);             /* resume returns: 5, of which 3 in the coroutine */
  CHECK(P.stacks.n == 1, "the finished coroutine's stack is dropped: %u stacks", P.stacks.n);
  ret(&P, main_st, 1, 15);

  expect(&P.fns.entries[f].s, "f", 1, 1, 4, 15);
  expect(&P.fns.entries[resume].s, "resume", 2, 2, 5, 11);
  expect(&P.fns.entries[g].s, "g", 1, 1, 6, 6);
  expect(&P.fns.entries[yield].s, "yield", 1, 1, 0, 0);
  expect(edge(&P, f, resume), "f -> resume", 2, 2, 5, 11);
  expect(edge(&P, resume, g), "resume -> g", 1, 1, 6, 6);
  expect(edge(&P, g, yield), "g -> yield", 1, 1, 0, 0);
  expect(node(&P, (uint32_t[]){f, resume, g, yield}, 4), "node f/resume/g/yield", 1, 1, 0, 0);
  lua_pop(L, 1);
  prof_free(&P);
}

/* The marked frames of a stack: one per record whose lowest frame in the stack it is. */
static int marked(const Stack *st) {
  int n = 0;
  for (uint32_t i = st->first_head; i > 0; i = st->f[i - 1].prev_first) n++;
  return n;
}

/* f runs in main and resumes a coroutine whose body g recurses 1000 deep and calls f, which
   yields: while the coroutine is suspended, f is active in main only, so main's second call
   of f is recursive (main's f is open) and g's clock stops. A call counts as recursive when
   another frame of its function is still active when it returns: the coroutine's f, closed at
   disable() after main's f, is primitive. */
static void test_shared(lua_State *L) {
  enum { DEPTH = 1000 };
  Profiler P;
  Stack *main_st = setup(&P, L);
  lua_State *co;
  Stack *co_st = coroutine_stack(&P, L, &co);
  uint32_t f = func(&P, "f"), resume = func(&P, "resume"), g = func(&P, "g");
  int nres;
  call(&P, main_st, 1, 0, f, 0);
  call(&P, main_st, 2, 1, resume, 1);
  for (int d = 0; d < DEPTH; d++) call(&P, co_st, 100 + d, d ? 99 + d : 0, g, 2);
  call(&P, co_st, 100 + DEPTH, 99 + DEPTH, f, 2);  /* f inside the coroutine: recursive */
  CHECK(lua_resume(co, L, 0, &nres) == LUA_YIELD, "the coroutine yields");
  ret(&P, main_st, 2, 3);
  /* Marked: the lowest g (function, node, resume -> g), the next (g -> g and its node), each
     next g with a node of its own (the tree keeps TREE_RECURSION_DEFAULT) and f. */
  CHECK(marked(co_st) == TREE_RECURSION_DEFAULT + 1, "%d marked frames in the coroutine, not %d",
        TREE_RECURSION_DEFAULT + 1, marked(co_st));
  CHECK(P.fns.entries[g].s.active == 0 && P.fns.entries[f].s.active == 1,
        "suspended: g active %u, f active %u", P.fns.entries[g].s.active,
        P.fns.entries[f].s.active);
  call(&P, main_st, 3, 1, f, 4);  /* recursive: main's own f is open */
  ret(&P, main_st, 3, 5);
  eng_flush(&P, main_st, 10);     /* the coroutine's frames end when it was suspended */
  expect_top(&P, 10);
  expect(&P.fns.entries[f].s, "f", 3, 2, 8, 10);
  expect(&P.fns.entries[g].s, "g", DEPTH, 1, 0, 0);
  expect(edge(&P, g, g), "g -> g", DEPTH - 1, 1, 0, 0);
  lua_pop(L, 1);
  prof_free(&P);
}

/* disable() while the profiler's own function is running inside f: that frame is left out,
   f is closed at the time of the flush. */
static void test_flush(lua_State *L) {
  Profiler P;
  Stack *st = setup(&P, L);
  uint32_t f = func(&P, "f"), disable = func(&P, "disable");
  P.fns.entries[disable].internal = 1;
  call(&P, st, 1, 0, f, 0);
  call(&P, st, 2, 1, disable, 4);
  eng_flush(&P, st, 10);
  expect_top(&P, 10);
  expect(&P.fns.entries[f].s, "f", 1, 1, 10, 10);
  expect(&P.fns.entries[disable].s, "disable", 0, 0, 0, 0);
  CHECK(st->n == 0, "every frame closed");
  stk_drop(&P.stacks, st);
  CHECK(P.stacks.cur == NULL && *P.stacks.cur_top == IDX_NONE, "no current stack, no node");
  prof_free(&P);
}

/* A filtered-out function h holds its caller's records: while it runs, and while a function
   it calls returns to it, memory is charged to f's node (call and ret check it every time);
   h as the body of a coroutine holds the records of the frame that resumed it. */
static void test_hidden_top(lua_State *L) {
  Profiler P;
  Stack *st = setup(&P, L);
  uint32_t f = func(&P, "f"), h = func(&P, "h"), g = func(&P, "g");
  P.fns.entries[h].filter = FILTER_OUT;
  call(&P, st, 1, 0, f, 0);
  uint32_t f_node = *P.stacks.cur_top;
  call(&P, st, 2, 1, h, 1);
  CHECK(*P.stacks.cur_top == f_node, "h runs: f's node");
  call(&P, st, 3, 2, g, 2);
  CHECK(*P.stacks.cur_top != f_node, "g has a node of its own");
  ret(&P, st, 3, 3);
  CHECK(*P.stacks.cur_top == f_node, "back in h: f's node");
  ret(&P, st, 2, 4);
  lua_State *co;
  Stack *co_st = coroutine_stack(&P, L, &co);
  call(&P, st, 4, 1, g, 5);  /* g resumes the coroutine */
  uint32_t g_node = *P.stacks.cur_top;
  call(&P, co_st, 10, 0, h, 6);
  CHECK(g_node != f_node && *P.stacks.cur_top == g_node, "h in the coroutine: g's node");
  lua_pop(L, 1);
  prof_free(&P);
}

/* The trace's event i (0 the oldest kept): call or return, of which entry, at which time. */
static void expect_event(const Profiler *P, uint32_t i, int ret, uint32_t entry, cprof_ticks t) {
  const TraceEvent *e = trace_at(&P->trace, i);
  int is_ret = (e->thread & TRACE_RETURN) != 0;
  CHECK(is_ret == ret && P->tree.nodes[e->node].entry == entry && e->t == t &&
            (e->thread & ~TRACE_RETURN) == 1,
        "event %u: %s of entry %u at %lld, thread %u", i, is_ret ? "return" : "call",
        P->tree.nodes[e->node].entry, (long long)e->t, e->thread & ~TRACE_RETURN);
}

/* The trace: a return for every frame an unwind closes, a ring of 4 that keeps the newest
   events, and disable()'s own frame taken back out of it. */
static void test_trace(lua_State *L) {
  Profiler P;
  Stack *st = setup(&P, L);
  P.trace.size = 4;
  CHECK(trace_alloc(&P.trace) == 0, "trace_alloc");
  P.tracing = 1;
  st->id = 1;
  uint32_t f = func(&P, "f"), g = func(&P, "g"), h = func(&P, "h"), disable = func(&P, "disable");
  P.fns.entries[disable].internal = 1;
  call(&P, st, 1, 0, f, 0);
  call(&P, st, 2, 1, g, 2);
  call(&P, st, 3, 2, h, 3);
  ret(&P, st, 1, 7);  /* an error unwound h and g: their returns come first, at 7 */
  CHECK(P.trace.total == 6 && P.trace.held == 4, "6 events, 4 kept: %llu, %u",
        (unsigned long long)P.trace.total, P.trace.held);
  expect_event(&P, 0, 0, h, 3);
  expect_event(&P, 1, 1, h, 7);
  expect_event(&P, 2, 1, g, 7);
  expect_event(&P, 3, 1, f, 7);
  /* disable()'s call leaves the ring again at the flush, which closes f */
  call(&P, st, 4, 0, f, 8);
  call(&P, st, 5, 4, disable, 9);
  eng_flush(&P, st, 12);
  CHECK(P.trace.total == 8 && P.trace.held == 4, "8 events, 4 kept: %llu, %u",
        (unsigned long long)P.trace.total, P.trace.held);
  expect_event(&P, 0, 1, g, 7);
  expect_event(&P, 1, 1, f, 7);
  expect_event(&P, 2, 0, f, 8);
  expect_event(&P, 3, 1, f, 12);
  prof_free(&P);
}

int main(void) {
  lua_State *L = luaL_newstate();
  if (!L) return 1;
  test_recursion(L);
  test_recursion_cycle(L);
  test_unwinds(L);
  test_coroutine(L);
  test_shared(L);
  test_flush(L);
  test_hidden_top(L);
  test_trace(L);
  lua_close(L);
  return ctest_done("test_engine");
}
