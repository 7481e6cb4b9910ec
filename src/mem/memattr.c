/* The observer runs inside lua_Alloc: no Lua API, no longjmp. Allocations made by cprof's own
   hook (naming a function, registering a thread) are not the program's and are left out; frees
   are always looked up, since the collector can run inside the hook.

   Where a block's node and birth are (memattr.h): slab objects in their slab's side table,
   found from the slab descriptor's `attr` number and the object's index; large blocks in a hash
   map. A slab's `attr` may be stale — left by an earlier attribution, or the number reused —
   so a side table is trusted only when it names the slab back. */
#include <stdlib.h>
#include <string.h>

#include "mem/lalloc.h"
#include "mem/memattr.h"
#include "util/array.h"
#include "util/fault.h"
#include "util/hash.h"

#define HOT __attribute__((noinline))
#define COLD __attribute__((noinline, cold))
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

typedef struct BlockProbe {
  const MemAttr *m;
  const void *block;
} BlockProbe;

static int block_matches(const BlockProbe *q, uint32_t i) { return q->m->blocks[i].ptr == q->block; }

static uint32_t block_hash(const void *p) { return hash_ptr_line(p, 0); }

static SlabAttr *table_of(const MemAttr *m, const slab *s) {
  uint32_t a = s->attr;
  if (a == 0 || a > m->ntabs) return NULL;
  SlabAttr *t = m->tabs[a - 1];
  return t && t->slab == s ? t : NULL;
}

/* The index of object p in the slab t describes: its offset times 2^32 / size, rounded up, is
   exact for offsets below 2^32 / size (a slab is at most 16 pages). */
static uint32_t index_in(const SlabAttr *t, const void *p) {
  uint64_t off = (uint64_t)((const char *)p - (const char *)t->slab - SLAB_HDR);
  return (uint32_t)((off * t->inv) >> 32);
}

/* A new side table for slab s (its number in s->attr), or NULL when out of memory. */
static SlabAttr *new_table(MemAttr *m, slab *s) {
  uint32_t n = s->total;
  SlabAttr *t = fault_malloc(sizeof *t + (size_t)n * sizeof *t->obj);
  if (!t) return NULL;
  uint32_t num;
  if (m->nfree) {
    num = m->free_nums[--m->nfree];
  } else if (array_reserve((void **)&m->tabs, &m->ctabs, sizeof *m->tabs, m->ntabs, 64) == 0) {
    num = m->ntabs++;
  } else {
    free(t);
    return NULL;
  }
  t->slab = s;
  t->live = 0;
  t->n = n;
  t->inv = ((1ull << 32) + s->cache->objsize - 1) / s->cache->objsize;
  memset(t->obj, 0, (size_t)n * sizeof *t->obj);
  m->tabs[num] = t;
  s->attr = num + 1;
  return t;
}

/* The last attributed object of the table's slab is gone: its number is free again (a free
   slot of free_nums was reserved when the table was made, so this cannot fail). */
COLD static void drop_table(MemAttr *m, SlabAttr *t) {
  const slab *s = t->slab;
  uint32_t num = s->attr - 1;
  m->tabs[num] = NULL;
  m->free_nums[m->nfree++] = num;
  free(t);
}

static inline void count_alloc(MemStat *s, size_t size, int slot, cprof_ticks at) {
  if (s->allocs == 0) {
    s->first_alloc = at;
    s->min = size;
  }
  if (size < s->min) s->min = size;
  if (size > s->max) s->max = size;
  s->allocs++;
  s->bytes += size;
  s->type_allocs[slot]++;
}

/* A block of node `node` lived `life` ticks. */
static inline void count_free(MemStat *s, size_t size, int slot, cprof_ticks at, uint64_t life) {
  if (s->frees == 0) s->life_min = life;
  if (life < s->life_min) s->life_min = life;
  if (life > s->life_max) s->life_max = life;
  s->life_total += life;
  s->last_free = at;
  s->frees++;
  s->freed += size;
  s->type_frees[slot]++;
}

/* The allocations on_alloc leaves: a node with no record yet, a slab with no side table yet,
   a large block. */
COLD static void alloc_rare(MemAttr *m, void *block, size_t size, int slot, slab *sl,
                            uint32_t node, cprof_ticks at) {
  if (node >= m->cstats && array_reserve((void **)&m->stats, &m->cstats, sizeof *m->stats, node, 512)) {
    m->lost++;
    return;
  }
  if (sl) {
    SlabAttr *t = table_of(m, sl);
    /* Room in free_nums for every number there may be, so that dropping a table never fails. */
    if (!t && (array_reserve((void **)&m->free_nums, &m->cfree, sizeof *m->free_nums, m->ntabs, 64) ||
               !(t = new_table(m, sl)))) {
      m->lost++;
      return;
    }
    t->obj[index_in(t, block)] = (ObjAttr){node + 1, (float)at};
    t->live++;
  } else {
    if ((!m->by_block.slots && idxmap_init(&m->by_block, 64)) ||
        array_reserve((void **)&m->blocks, &m->cblocks, sizeof *m->blocks, m->nblocks, 64) ||
        idxmap_put(&m->by_block, block_hash(block), m->nblocks)) {
      m->lost++;
      return;
    }
    m->blocks[m->nblocks++] = (Block){block, node, at};
  }
  count_alloc(&m->stats[node], size, slot, at);
}

/* Each allocation: the common case — a node with a record, a slab object whose slab has a
   side table — kept free of calls, so that it needs few registers and no stack frame. */
HOT static void on_alloc(MemAttr *m, void *block, size_t size, int slot, slab *sl) {
  uint32_t node = m->where(m->where_ud);
  if (node == IDX_NONE) return;  /* no profiled frame is running */
  cprof_ticks at = *m->now - m->t0;
  SlabAttr *t;
  if (UNLIKELY(node >= m->cstats || !sl || !(t = table_of(m, sl)))) {
    alloc_rare(m, block, size, slot, sl, node, at);
    return;
  }
  t->obj[index_in(t, block)] = (ObjAttr){node + 1, (float)at};
  t->live++;
  count_alloc(&m->stats[node], size, slot, at);
}

/* The clock never goes back; a birth rounded to a float may be a little late. */
static inline uint64_t life_of(cprof_ticks birth, cprof_ticks at) {
  return at > birth ? (uint64_t)(at - birth) : 0;
}

/* The free of a large block: in the map, or not attributed. */
COLD static void free_large(MemAttr *m, void *block, size_t size, int slot) {
  m->freed_known = 0;
  if (!m->by_block.slots) return;
  BlockProbe q = {m, block};
  uint32_t h = block_hash(block), i;
  IDXMAP_FIND(&m->by_block, h, block_matches, &q, i);
  if (i == IDX_NONE) return;
  m->freed_known = 1;
  uint32_t node = m->blocks[i].node;
  cprof_ticks birth = m->blocks[i].birth, at = *m->now - m->t0;
  idxmap_remove_record(&m->by_block, m->blocks, sizeof *m->blocks, &m->nblocks, i, h,
                       block_hash(m->blocks[m->nblocks - 1].ptr));
  count_free(&m->stats[node], size, slot, at, life_of(birth, at));
}

/* Each free: a slab object is found in its side table (or is not attributed). */
HOT static void on_free(MemAttr *m, void *block, size_t size, int slot, const slab *sl) {
  if (UNLIKELY(!sl)) {
    free_large(m, block, size, slot);
    return;
  }
  SlabAttr *t = table_of(m, sl);
  ObjAttr *o = t ? &t->obj[index_in(t, block)] : NULL;
  uint32_t node = o ? o->node : 0;
  m->freed_known = node != 0;
  if (node == 0) return;
  o->node = 0;
  cprof_ticks birth = (cprof_ticks)o->birth, at = *m->now - m->t0;
  count_free(&m->stats[node - 1], size, slot, at, life_of(birth, at));
  if (UNLIKELY(--t->live == 0)) drop_table(m, t);
}

static void observe(void *ud, int event, void *block, size_t size, int slot, slab *sl) {
  MemAttr *m = ud;
  /* A block born before the profile (the string table, a stack, a table made earlier) that Lua
     moves stays out of it: its allocation was not the program's code running now. */
  if (event == LALLOC_EV_FREE) on_free(m, block, size, slot, sl);
  else if (!m->in_hook && (event == LALLOC_EV_ALLOC || m->freed_known)) on_alloc(m, block, size, slot, sl);
}

void memattr_start(MemAttr *m, lua_State *L, memattr_where where, void *where_ud,
                   const cprof_ticks *now) {
  lalloc *h = lalloc_of(L);
  if (!h) return;
  if (!m->used) m->t0 = *now;
  m->heap = h;
  m->used = 1;
  m->now = now;
  m->where = where;
  m->where_ud = where_ud;
  lalloc_set_thread(h, L);
  lalloc_observe(h, observe, m);
}

void memattr_stop(MemAttr *m) {
  if (!m->heap) return;
  lalloc_observe(m->heap, NULL, NULL);
  m->heap = NULL;
}

void memattr_thread(MemAttr *m, lua_State *L) {
  if (m->heap) lalloc_set_thread(m->heap, L);
}

void memattr_free(MemAttr *m) {
  for (uint32_t i = 0; i < m->ntabs; i++) free(m->tabs[i]);
  free(m->tabs);
  free(m->free_nums);
  free(m->stats);
  free(m->blocks);
  idxmap_free(&m->by_block);
  memset(m, 0, sizeof *m);
}
