/*
 * mem/lalloc_heap.h — the heap of mem/lalloc.h from inside: its struct and the calls between its
 * four files, lalloc.c (the lua_Alloc and the heap's life), lalloc_state.c (the heap and Lua
 * states), lalloc_trace.c (tracing one cache) and lalloc_stats.c (statistics and invariant
 * checks). Not for use outside them.
 */
#ifndef CPROF_LALLOC_HEAP_H
#define CPROF_LALLOC_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include <lua.h>

#include "mem/lalloc.h"

typedef struct tobj {      /* a traced object */
  const void *p;
  uint32_t site, size;
} tobj;

typedef struct trace {
  cache *c;                /* the traced cache, NULL: none */
  int on;                  /* recording */
  tobj *objs;              /* open addressing by address */
  size_t ocap, nobjs;
  lalloc_site *sites;
  size_t nsites, scap;
  uint32_t *sidx;          /* open addressing: site index + 1 */
  size_t sicap;
  char **strs;             /* interned source names */
  size_t strcap, nstrs;
  uint64_t dropped;
} trace;

typedef struct large_stats {
  uint64_t live, allocs;
  size_t req, held;
} large_stats;

enum { FREE_CHECKED = 1, FREE_NOTED = 2 };

struct lalloc {
  /* hot: the fast paths read these */
  cache *caches[LA_NSLOT * LA_NCLASS];
  size_t live;             /* bytes Lua holds: its own count, blocks of `prev` included */
  size_t gate;             /* an allocation taking `live` past this takes the checked path */
  int slowfree;            /* frees and reallocs leave the fast path: FREE_CHECKED, or
                              FREE_NOTED (attribution alone: free_noted, realloc_noted) */
  struct MemAttr *attr;    /* memory attribution told of every event, NULL: none; it hears of
                              the fast path's allocations too (lalloc_f) */

  /* cold */
  uint64_t magic;
  size_t limit;            /* SIZE_MAX: none */
  int foreign;             /* blocks of `prev` may be alive */
  int watched;             /* attribution or a trace wants every event */
  int want_final;          /* the next allocation is the state's own block */
  lua_Alloc prevf;
  void *prevud;
  size_t foreign_live;
  uint64_t foreign_frees;
  uint64_t failures, limit_failures;
  large_stats large[LA_NSLOT];
  cache *all;
  size_t ncaches;
  void *final_block;       /* freeing it (the last free of lua_close) closes the heap */
  int *gone;               /* set when the heap closes itself */
  lua_State *main, *thread;
  trace tr;
  chunkset cs;
};

#define LALLOC_MAGIC 0x6c616c6c6f63u

/* Sets the gates of the fast paths (gate, slowfree, watched) from the limit, attribution, the
   trace and the blocks of `prev`: after any of them changes. */
void lalloc_update_gates(lalloc *h);
/* The state's lua_Alloc while memory attribution runs (lalloc_state.c swaps it in and out). */
void *lalloc_f_attr(void *ud, void *ptr, size_t osize, size_t nsize);

/* ---- tracing (lalloc_trace.c) ----------------------------------------------------------- */

/* Object p of n bytes of the traced cache was allocated: records it under the site of the
   traced thread's stack (dropped when out of metadata). */
void lalloc_trace_record(lalloc *h, void *p, size_t n);
/* Object p of the traced cache is freed: its record goes. */
void lalloc_trace_forget(lalloc *h, const void *p);
/* Frees the trace's records, sites and strings; keeps which cache is traced and whether it
   records. */
void lalloc_trace_free(lalloc *h);

#endif
