/*
 * mem/memattr.h — memory attributed to call contexts: while a profile runs on a state that uses
 * cprof's allocator, every allocation is charged to the call-tree node of the frame running then,
 * and its free to the node that allocated it (MemProf's fields: allocations, bytes, frees, live
 * bytes at the end, smallest and largest size, lifetimes, first allocation and last free, counts
 * per Lua type). Exact, not sampled: an allocation writes one entry of a side table, a free
 * reads and clears it, and each updates its node's record: O(1).
 *
 * What attribution keeps per live block — its node, to credit the free, and its birth time — is
 * not in the block (no block grows) but in a side table per slab, indexed by the object's place
 * in its slab: 8 bytes an object (node + 1, and the birth as a float of ticks since attribution
 * started: exact below 2^24 ticks, within 2^-24 of the time after), made when the slab gets its
 * first attributed object and dropped when its last one is freed. Large blocks (above 4 KiB, few)
 * are in a hash map by address. Times are the profile's clock at the last hook event
 * (Clock.vlast), read without calling the timer, so that the allocator never reads a clock and
 * the `counter` timer gives exact lifetimes.
 */
#ifndef CPROF_MEMATTR_H
#define CPROF_MEMATTR_H

#include <stdint.h>

#include <lua.h>

#include "cprof.h"
#include "util/idxmap.h"

struct slab;

/* The Lua types counted per node, the allocator's type slots (mem/lalloc.h: LA_RAW ...
   LA_OTHER): raw, string, table, function, userdata, thread, upvalue, proto, other. */
enum { MEM_NTYPES = 9 };

/* Memory charged to one call-tree node (MemProf's record fields): what an allocation updates,
   then what a free does. The numbers of allocations and frees are the sums of the per-type
   counts (memattr_allocs, memattr_frees): an event stores one count, not two. */
typedef struct MemStat {
  uint64_t bytes;          /* allocated; live at the end: bytes - freed; 0: no allocation (no
                              block has 0 bytes) */
  uint64_t min, max;       /* smallest and largest allocation; min 0: none yet */
  cprof_ticks first_alloc; /* profile ticks since attribution started */
  uint64_t type_allocs[MEM_NTYPES];  /* by type slot */
  uint64_t freed;          /* 0: no free */
  /* MemProf's lifetimes, over the blocks freed: sum, shortest, longest (profile ticks) */
  uint64_t life_total, life_min, life_max;
  cprof_ticks last_free;
  uint64_t type_frees[MEM_NTYPES];
  uint64_t pad_[5];        /* 256 bytes: a node's record is found by a shift, not a multiply */
} MemStat;

_Static_assert(sizeof(MemStat) == 256, "a node's record is found by a shift");

/* A live large block allocated while attributing, and the node it is charged to. */
typedef struct Block {
  const void *ptr;
  uint32_t node;
  cprof_ticks birth;       /* ticks since attribution started, when it was allocated */
} Block;

/* What the side table of a slab keeps of one object: side by side, one cache line for both. */
typedef struct ObjAttr {
  uint32_t node;           /* node + 1; 0: not attributed */
  float birth;
} ObjAttr;

/* The side table of a slab, by its number (MemAttr.tabs): its entries, one an object, and all
   that the hot paths read of it, side by side with the other tables' in one dense array, so
   that an event touches that array's line and its entry's line, and the entry's address waits
   for one load after the map word. */
typedef struct SlabTab {
  ObjAttr *obj;            /* the entries; NULL: no table (number 0, or a free number) */
  const char *base;        /* the slab's first object */
  uint32_t span;           /* the bytes of its objects: a number may be stale (left by an earlier
                              attribution, or reused), so a table is trusted only for an address
                              in [base, base + span), which names the slab */
  uint16_t live;           /* attributed objects alive in it (a slab has at most 8192) */
  uint16_t slot;           /* the type slot of its objects */
  uint64_t inv;            /* 2^32 / object size, rounded up: an object's index by a multiply */
} SlabTab;

typedef struct MemAttr {
  struct lalloc *heap;     /* the allocator observed, while attributing */
  int used;                /* memory was attributed: reports show it */
  int in_hook;             /* cprof's hook is running: its allocations are not the program's */
  MemStat *stats;          /* per call-tree node */
  uint32_t cstats;
  Block *blocks;           /* the large blocks */
  uint32_t nblocks, cblocks;
  IdxMap by_block;         /* large blocks by address */
  SlabTab *tabs;           /* the slabs' side tables by number; number 0 and the free
                              numbers: none (all zero) */
  uint32_t ntabs, ctabs;
  uint32_t *free_nums;     /* the free numbers, to reuse */
  uint32_t nfree, cfree;
  uint64_t lost;           /* allocations not charged: out of memory */
  /* The node to charge now is **node_at (IDX_NONE: none is running), which the profiler
     keeps up to date (tables/stacks.h, cur_top): an allocation reads it with no call. */
  const uint32_t *const *node_at;
  const cprof_ticks *now;  /* the profile's clock at the last event */
  cprof_ticks t0;          /* its value when attribution first started */
} MemAttr;

/* Forgets every number. */
void memattr_free(MemAttr *m);

static inline uint64_t memattr_allocs(const MemStat *s) {
  uint64_t n = 0;
  for (int t = 0; t < MEM_NTYPES; t++) n += s->type_allocs[t];
  return n;
}

static inline uint64_t memattr_frees(const MemStat *s) {
  uint64_t n = 0;
  for (int t = 0; t < MEM_NTYPES; t++) n += s->type_frees[t];
  return n;
}

/* What node `node` was charged (NULL when nothing was). */
static inline const MemStat *memattr_of(const MemAttr *m, uint32_t node) {
  return node < m->cstats ? &m->stats[node] : NULL;
}

#endif
