/*
 * tables/stacks.h — the shadow stacks: one per Lua thread (coroutine) the profile has seen, each
 * an array of the frames that are open in it. A call or return touches only the top frame; a
 * stack is found by its thread with one probe, and only when the thread changes. A stack starts
 * with room for a few frames and doubles.
 */
#ifndef CPROF_STACKS_H
#define CPROF_STACKS_H

#include <stdint.h>

#include <lua.h>

#include "cprof.h"
#include "util/idxmap.h"

/* Marks of the lowest frame of its function, edge or node in its stack (stat.h). */
enum { FIRST_FN = 1, FIRST_EDGE = 2, FIRST_NODE = 4 };

typedef struct Frame {
  const void *ci;          /* identity of the Lua activation (lua_Debug.i_ci) */
  cprof_ticks t0, subt;    /* start, in its stack's own time (Stack.away); time in callees */
  uint32_t link;           /* the call's link (calltree.h), and what it leads to: */
  uint32_t entry, edge;    /* edge is IDX_NONE for a root */
  uint32_t node;
  uint32_t line;           /* the LineRec of the line running in this frame, or IDX_NONE */
  cprof_ticks line_t0;     /* when that line started, in its stack's own time */
  uint32_t prev_first;     /* 1 + the index of the next marked frame below, or 0 */
  uint8_t first;           /* FIRST_* marks */
  uint8_t hidden;          /* a filtered-out function's: it holds its caller's records, none of
                              its own (engine.h) */
} Frame;

struct Profiler;

typedef struct Stack {
  struct Profiler *P;
  lua_State *L;
  Frame *f;                /* f[-1], once f is there, is no frame: its node is IDX_NONE, so that
                              the node below a popped frame needs no test (stk_popped) */
  uint32_t n, cap;
  uint32_t top;            /* the node of the top frame (IDX_NONE: no frame): what memory
                              attribution charges while this stack runs (Stacks.cur_top) */
  uint32_t first_head;     /* 1 + the index of the highest marked frame, or 0 */
  struct Stack *resumer;   /* the stack that resumed this coroutine, while it runs */
  cprof_ticks switch_in;   /* when control last passed into this coroutine */
  cprof_ticks last;        /* the time of its latest event: when control left it, from inside */
  cprof_ticks suspended_at;
  cprof_ticks away;        /* time spent suspended: the stack's own time is the clock less this,
                              so a switch never touches the frames' times */
  uint32_t id;             /* the thread's number in the trace: 1 the main thread */
  uint8_t suspended;       /* yielded: its marked records are out of `active`, its clock stopped */
  uint8_t lines_on;        /* line events are asked for on this thread (LINES_CHOSEN) */
  /* A coroutine whose body is hidden gives its resumer only its recorded callees' time: the
     part of the bottom frame's subt passed on already, what a finished one left, and whether
     it finished (engine.c, coroutine_time). */
  uint8_t hidden_done;
  cprof_ticks passed, left;
  uint8_t ci_pending;      /* LuaJIT: the top frame's activation id is provisional (COMPAT_CI) */
  /* The hook the program had on this thread, called for the events it asked for. */
  lua_Hook prev_hook;
  int prev_mask, prev_count;
} Stack;

enum { STACK_RECENT = 16 };

typedef struct Stacks {
  Stack **all;
  uint32_t n, cap;
  IdxMap by_thread;        /* stacks by their thread */
  Stack *recent[STACK_RECENT];  /* the stacks of recent switches, by their thread's address */
  Stack *cur;              /* the stack of the last event (stk_set_cur) */
  const uint32_t *cur_top; /* &cur->top, or a node IDX_NONE when there is no cur: the node
                              of the frame running now, read by the allocator with no call
                              (mem/memattr.h, node_at) */
  Stack *main;             /* the main thread's, while enabled */
  size_t frame_bytes;      /* of all stacks' frame arrays, for the memory counters */
  uint32_t ids;            /* coroutines numbered so far (Stack.id) */
} Stacks;

/* No stacks; -1 when out of memory (S can be freed). */
int stk_init(Stacks *S);
/* Frees every stack. */
void stk_free(Stacks *S);

/* The stack of thread L, or NULL. */
Stack *stk_find_slow(Stacks *S, const lua_State *L);

/* Coroutines switch among a few threads: most switches find the stack in `recent`. */
static inline Stack **stk_recent(Stacks *S, const lua_State *L) {
  return &S->recent[((uintptr_t)L >> 6) & (STACK_RECENT - 1)];
}

static inline Stack *stk_find(Stacks *S, const lua_State *L) {
  Stack *st = *stk_recent(S, L);
  return st && st->L == L ? st : stk_find_slow(S, L);
}
/* A new, empty stack for thread L, owned by profiler P; NULL when out of memory. */
Stack *stk_new(Stacks *S, struct Profiler *P, lua_State *L);
/* Frees st (its frames must be closed or forgotten). */
void stk_drop(Stacks *S, Stack *st);
/* Doubles st's room for frames; -1 when out of memory. */
int stk_grow(Stacks *S, Stack *st);

extern const uint32_t stk_no_top;

/* st (or NULL) is the current stack. */
static inline void stk_set_cur(Stacks *S, Stack *st) {
  S->cur = st;
  S->cur_top = st ? &st->top : &stk_no_top;
}

/* fr, st's top frame, was just popped: the frame below it (or f[-1]) is the top now. */
static inline void stk_popped(Stack *st, const Frame *fr) { st->top = fr[-1].node; }

/* Bytes held by the stacks. */
size_t stk_bytes(const Stacks *S);

#endif
