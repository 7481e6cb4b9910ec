/*
 * mem/memattr.h — memory attributed to call contexts: while a profile runs on a state that uses
 * cprof's allocator, every allocation is charged to the call-tree node of the frame running then,
 * and its free to the node that allocated it (MemProf's fields: allocations, bytes, frees, live
 * bytes at the end, smallest and largest size). Exact, not sampled: an allocation costs one
 * insertion into the block map, a free one probe.
 */
#ifndef CPROF_MEMATTR_H
#define CPROF_MEMATTR_H

#include <stdint.h>

#include <lua.h>

#include "util/idxmap.h"

/* Memory charged to one call-tree node (MemProf's record fields). */
typedef struct MemStat {
  uint64_t allocs, frees;
  uint64_t bytes, freed;   /* live at the end: bytes - freed */
  uint64_t min, max;       /* smallest and largest allocation */
} MemStat;

/* A live block allocated while attributing, and the node it is charged to. */
typedef struct Block {
  const void *ptr;
  uint32_t node;
} Block;

/* The node to charge now (IDX_NONE: none is running); `ud` is what memattr_start was given. */
typedef uint32_t (*memattr_where)(void *ud);

typedef struct MemAttr {
  struct lalloc *heap;     /* the allocator observed, while attributing */
  int used;                /* memory was attributed: reports show it */
  int in_hook;             /* cprof's hook is running: its allocations are not the program's */
  MemStat *stats;          /* per call-tree node */
  uint32_t cstats;
  Block *blocks;
  uint32_t nblocks, cblocks;
  IdxMap by_block;         /* blocks by address */
  uint64_t lost;           /* allocations not charged: out of memory */
  memattr_where where;
  void *where_ud;
} MemAttr;

/* Starts attribution if L's state allocates with cprof's allocator; else does nothing. Each
   allocation is charged to the node where(where_ud) names. */
void memattr_start(MemAttr *m, lua_State *L, memattr_where where, void *where_ud);
/* Stops it (the blocks allocated meanwhile stay charged: they are live at the end). */
void memattr_stop(MemAttr *m);
/* Forgets every number. */
void memattr_free(MemAttr *m);

/* The coroutine running now, for the allocator's traces. */
void memattr_thread(MemAttr *m, lua_State *L);

/* What node `node` was charged (all zero when nothing was). */
static inline MemStat memattr_of(const MemAttr *m, uint32_t node) {
  if (node < m->cstats) return m->stats[node];
  return (MemStat){0, 0, 0, 0, 0, 0};
}

#endif
