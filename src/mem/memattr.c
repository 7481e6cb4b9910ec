/* The observer runs inside lua_Alloc: no Lua API, no longjmp. Allocations made by cprof's own
   hook (naming a function, registering a thread) are not the program's and are left out; frees
   are always looked up, since the collector can run inside the hook. */
#include <stdlib.h>
#include <string.h>

#include "mem/lalloc.h"
#include "mem/memattr.h"
#include "util/array.h"
#include "util/hash.h"

typedef struct BlockProbe {
  const MemAttr *m;
  const void *block;
} BlockProbe;

static int block_matches(const BlockProbe *q, uint32_t i) { return q->m->blocks[i].ptr == q->block; }

static uint32_t block_hash(const void *p) { return hash_ptr_line(p, 0); }

static void on_alloc(MemAttr *m, void *block, size_t size, int tag) {
  uint32_t node = m->where(m->where_ud);
  if (node == IDX_NONE) return;  /* no profiled frame is running */
  if (array_reserve((void **)&m->stats, &m->cstats, sizeof *m->stats, node, 512) ||
      array_reserve((void **)&m->blocks, &m->cblocks, sizeof *m->blocks, m->nblocks, 1024) ||
      idxmap_put(&m->by_block, block_hash(block), m->nblocks)) {
    m->lost++;
    return;
  }
  cprof_ticks now = *m->now;
  m->blocks[m->nblocks++] = (Block){block, node, now};
  MemStat *s = &m->stats[node];
  if (s->allocs == 0) s->first_alloc = now - m->t0;
  if (s->allocs == 0 || size < s->min) s->min = size;
  if (size > s->max) s->max = size;
  s->allocs++;
  s->bytes += size;
  s->type_allocs[lalloc_tag_slot(tag)]++;
}

static void on_free(MemAttr *m, void *block, size_t size, int tag) {
  BlockProbe q = {m, block};
  uint32_t h = block_hash(block), i;
  IDXMAP_FIND(&m->by_block, h, block_matches, &q, i);
  m->freed_known = i != IDX_NONE;
  if (i == IDX_NONE) return;  /* allocated before profiling, or by cprof */
  MemStat *s = &m->stats[m->blocks[i].node];
  cprof_ticks now = *m->now;
  uint64_t life = (uint64_t)(now - m->blocks[i].birth);  /* the clock never goes back */
  if (s->frees == 0 || life < s->life_min) s->life_min = life;
  if (life > s->life_max) s->life_max = life;
  s->life_total += life;
  s->last_free = now - m->t0;
  s->frees++;
  s->freed += size;
  s->type_frees[lalloc_tag_slot(tag)]++;
  idxmap_remove_record(&m->by_block, m->blocks, sizeof *m->blocks, &m->nblocks, i, h,
                       block_hash(m->blocks[m->nblocks - 1].ptr));
}

static void observe(void *ud, int event, void *block, size_t size, int tag) {
  MemAttr *m = ud;
  /* A block born before the profile (the string table, a stack, a table made earlier) that Lua
     moves stays out of it: its allocation was not the program's code running now. */
  if (event == LALLOC_EV_FREE) on_free(m, block, size, tag);
  else if (!m->in_hook && (event == LALLOC_EV_ALLOC || m->freed_known)) on_alloc(m, block, size, tag);
}

void memattr_start(MemAttr *m, lua_State *L, memattr_where where, void *where_ud,
                   const cprof_ticks *now) {
  lalloc *h = lalloc_of(L);
  if (!h) return;
  if (!m->by_block.slots && idxmap_init(&m->by_block, 1024)) {
    m->lost++;
    return;
  }
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
  free(m->stats);
  free(m->blocks);
  idxmap_free(&m->by_block);
  memset(m, 0, sizeof *m);
}
