/*
 * tables/profiler.h — the profiler's data: functions, caller->callee edges, one shadow stack per
 * coroutine. Memory grows with distinct functions, edges, coroutines and the deepest stack,
 * never with the number of calls.
 */
#ifndef CPROF_PROFILER_H
#define CPROF_PROFILER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <lua.h>

#include "cprof.h"
#include "util/hash.h"
#include "util/idxmap.h"

/* cProfile's per-function and per-edge counters. `level` is how many activations are open
   on running (not suspended) stacks; cumulative time is added only when it drops to zero. */
typedef struct Stat {
  uint64_t calls, rcalls;   /* total calls; calls made while already active (recursive) */
  cprof_ticks it, tt;       /* inline (own) time; total (cumulative) time */
  uint32_t level;
} Stat;

enum { KIND_LUA, KIND_MAIN, KIND_C };

/* Kinds of hook work, which take different times (hook.c: stop_clock). */
enum { HOOK_CALL_LUA, HOOK_CALL_C, HOOK_RETURN, HOOK_LINE };

typedef struct Entry {
  const void *cfunc; /* C: the function; Lua: NULL */
  int line;          /* Lua: line defined; C: -1 */
  int lastline;      /* Lua: last line defined; C: -1 */
  char *source;      /* Lua: the chunk name: with `line`, the identity of a prototype */
  size_t srclen;
  char *file, *name; /* as reported */
  uint8_t kind;
  uint8_t internal;  /* a profiler function: left out when it is open at disable() */
  uint8_t name_tries;/* calls left on which to look for a better name */
  Stat s;
} Entry;

/* One address under which a function was seen. A chunk loaded twice has two chunk-name
   strings, so one entry can have several keys; the entry itself is unique by content. */
typedef struct Key {
  const void *ptr;
  int line;
  uint32_t entry;
} Key;

typedef struct Edge {
  uint32_t caller, callee;
  Stat s;
} Edge;

/* A call path: the node of the caller's path plus a function. */
typedef struct Node {
  uint32_t parent;         /* IDX_NONE for a root */
  uint32_t entry;
  Stat s;
} Node;

/* What a call of `entry` from a frame on node `from` leads to: computed once per pair, so a call
   costs one probe for both its edge and its tree node. */
typedef struct Link {
  uint32_t from, entry;    /* from is IDX_NONE for a root call */
  uint32_t node, edge;
  int capped;              /* the tree was full: the call is folded into its caller's node */
} Link;

/* Hits and time of one source line of one function (line events on). */
typedef struct LineRec {
  uint32_t entry;
  int line;
  uint64_t hits;
  cprof_ticks time;        /* from each of its line events to the function's next one */
} LineRec;

/* Memory charged to one call-tree node (MemProf's record fields). */
typedef struct MemStat {
  uint64_t allocs, frees;
  uint64_t bytes, freed;   /* live at the end: bytes - freed */
  uint64_t min, max;       /* smallest and largest allocation */
} MemStat;

/* A live block allocated while profiling, and the node it is charged to. */
typedef struct Block {
  const void *ptr;
  uint32_t node;
} Block;

typedef struct Frame {
  const void *ci;          /* identity of the Lua activation (lua_Debug.i_ci) */
  uint32_t entry, edge;    /* edge is IDX_NONE for a root */
  uint32_t node;
  uint32_t line;           /* the LineRec of the line running in this frame, or IDX_NONE */
  cprof_ticks t0, subt;    /* start; time spent in callees */
  cprof_ticks line_t0;     /* when that line started */
} Frame;

typedef struct Profiler Profiler;

typedef struct Stack {
  Profiler *P;
  lua_State *L;
  uint64_t id;             /* never reused: tells this stack from a dead thread's at the same address */
  Frame *f;
  uint32_t n, cap;
  struct Stack *resumer;   /* the stack that resumed this coroutine, while it runs */
  cprof_ticks switch_in;   /* when control last passed into this coroutine */
  cprof_ticks last;        /* the time of its latest event: when control left it, seen from inside */
  cprof_ticks suspended_at;
  int suspended;           /* yielded: its frames are out of the recursion levels, their clocks stopped */
  int seen;                /* marked by a sweep: the thread is still alive */
  int ci_pending;          /* LuaJIT: the top frame's activation id is provisional (see hook.c) */
  /* The hook the program had on this thread, called for the events it asked for. */
  lua_Hook prev_hook;
  int prev_mask, prev_count;
} Stack;

struct Profiler {
  cprof_timer timer;
  Entry *entries;
  uint32_t nentries, centries;
  IdxMap cmap;             /* entries by content */
  Key *keys;
  uint32_t nkeys, ckeys;
  IdxMap kmap;             /* keys by address: the map every call event probes */
  Edge *edges;
  uint32_t nedges, cedges;
  IdxMap gmap;
  Node *nodes;
  uint32_t nnodes, cnodes;
  uint32_t tree_cap;       /* most nodes; deeper new paths fold into their caller's node */
  uint64_t tree_folded;    /* calls folded because the tree was full */
  Link *links;
  uint32_t nlinks, clinks;
  IdxMap lmap;
  int lines;               /* line events on */
  LineRec *linerecs;
  uint32_t nlinerecs, clinerecs;
  IdxMap rmap;
  Stack **stacks;
  uint32_t nstacks, cstacks;
  IdxMap smap;
  uint32_t sweep_at;       /* sweep dead coroutines' stacks when nstacks reaches this */
  uint64_t next_stack_id;
  Stack *cur;              /* the stack of the last event */
  lua_State *L;            /* the thread the hook (or enable/disable) is running in */
  double hook_ticks;       /* timer ticks spent inside the hook: kept off every frame */
  double hook_estimate[4]; /* average ticks of a hook run, per HOOK_* kind */
  cprof_ticks vlast;       /* the profile's clock at the last event: it never goes back */
  uint32_t measure_every;  /* measure one event in this many; 1: every event (exact timers) */
  uint32_t events;          /* events since enable, to pick those that are measured */
  int reading;             /* the timer is being read outside the hook: its calls are not events */
  int in_hook;             /* cprof's hook is running: its allocations are not the program's */
  struct lalloc *heap;     /* the allocator observed, while attributing memory */
  int memory;              /* memory was attributed: reports show it */
  MemStat *mem;            /* per node, while memory is attributed */
  uint32_t cmem;
  Block *blocks;
  uint32_t nblocks, cblocks;
  IdxMap bmap;
  uint64_t mem_lost;       /* allocations not charged: out of memory */
  double bias;             /* seconds per event that no reading sees: subtracted by reports */
  double start_time;       /* Unix time of the first enable() */
  cprof_ticks enabled_at;  /* CLOCK_MONOTONIC ns of the last enable() */
  cprof_ticks enabled_ns;  /* time spent enabled, before the last enable() */
  int ready;               /* prof_init succeeded: the tables exist */
  int jit_was_on;          /* LuaJIT: the compiler was on before enable() turned it off */
  int enabled;
  int oom;                 /* an allocation failed: events were dropped, the report says so */
  uint64_t dropped;
};

/* Sets P up with empty tables; -1 when out of memory (P is then not ready, but can be freed). */
int prof_init(Profiler *P, const cprof_timer *timer);
/* Makes `timer` P's clock. */
void prof_set_timer(Profiler *P, const cprof_timer *timer);
/* Frees the tables; keeps the timer. */
void prof_free(Profiler *P);
/* Forgets every number; keeps the timer. Only while disabled. */
int prof_clear(Profiler *P);

/* The entry of a function seen under this address: Lua functions are (chunk name text, line
   defined) with `source` the chunk name; C functions are (function, -1) with source NULL.
   The fast path: one probe and, for Lua, one comparison of the chunk name. */
static inline uint32_t prof_find_key(Profiler *P, const void *ptr, int line, const char *source,
                                     size_t srclen);
/* The slow path of a miss: finds the entry by content, or returns IDX_NONE so that the caller
   names the function and calls prof_add_entry. Records the new address either way. */
uint32_t prof_find_content(Profiler *P, const void *ptr, int line, const char *source,
                           size_t srclen);
/* Adds an entry and its address; takes ownership of file and name (malloc'd).
   IDX_NONE when out of memory (file and name are freed). */
uint32_t prof_add_entry(Profiler *P, const void *ptr, int line, const char *source, size_t srclen,
                        char *file, char *name, int kind);
uint32_t prof_edge(Profiler *P, uint32_t caller, uint32_t callee);

enum { TREE_CAP_DEFAULT = 1000000 };

/* The record of `line` in function `entry`, created on first sight; IDX_NONE when out of memory. */
uint32_t prof_line(Profiler *P, uint32_t entry, int line);

/* The link for a call of `entry` from a frame on node `from` (IDX_NONE: a root call) whose
   function is `from_entry`. NULL when out of memory. */
const Link *prof_link(Profiler *P, uint32_t from, uint32_t from_entry, uint32_t entry);

typedef struct KeyProbe {
  Profiler *P;
  const void *ptr;
  int line;
  const char *source;
  size_t srclen;
} KeyProbe;

static inline int key_matches(const KeyProbe *q, uint32_t k) {
  const Key *key = &q->P->keys[k];
  if (key->ptr != q->ptr || key->line != q->line) return 0;
  if (!q->source) return 1;
  /* The address of a collected chunk's name can be reused by another chunk. */
  const Entry *e = &q->P->entries[key->entry];
  return e->srclen == q->srclen && memcmp(e->source, q->source, q->srclen) == 0;
}

static inline uint32_t prof_find_key(Profiler *P, const void *ptr, int line, const char *source,
                                     size_t srclen) {
  KeyProbe q = {P, ptr, line, source, srclen};
  uint32_t h = hash_ptr_line(ptr, line), k;
  IDXMAP_FIND(&P->kmap, h, key_matches, &q, k);
  return k == IDX_NONE ? IDX_NONE : P->keys[k].entry;
}

Stack *prof_find_stack(Profiler *P, lua_State *L);
Stack *prof_new_stack(Profiler *P, lua_State *L);
void prof_drop_stack(Profiler *P, Stack *st);
int stack_grow(Stack *st);

#endif
