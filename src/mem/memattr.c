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

static void on_alloc(MemAttr *m, void *block, size_t size) {
  uint32_t node = m->where(m->where_ud);
  if (node == IDX_NONE) return;  /* no profiled frame is running */
  if (array_reserve((void **)&m->stats, &m->cstats, sizeof *m->stats, node, 512) ||
      array_reserve((void **)&m->blocks, &m->cblocks, sizeof *m->blocks, m->nblocks, 1024) ||
      idxmap_put(&m->by_block, block_hash(block), m->nblocks)) {
    m->lost++;
    return;
  }
  m->blocks[m->nblocks++] = (Block){block, node};
  MemStat *s = &m->stats[node];
  if (s->allocs == 0 || size < s->min) s->min = size;
  if (size > s->max) s->max = size;
  s->allocs++;
  s->bytes += size;
}

static void on_free(MemAttr *m, void *block, size_t size) {
  BlockProbe q = {m, block};
  uint32_t h = block_hash(block), i;
  IDXMAP_FIND(&m->by_block, h, block_matches, &q, i);
  if (i == IDX_NONE) return;  /* allocated before profiling, or by cprof */
  MemStat *s = &m->stats[m->blocks[i].node];
  s->frees++;
  s->freed += size;
  idxmap_remove_record(&m->by_block, m->blocks, sizeof *m->blocks, &m->nblocks, i, h,
                       block_hash(m->blocks[m->nblocks - 1].ptr));
}

static void observe(void *ud, int event, void *block, size_t size, int tag) {
  MemAttr *m = ud;
  (void)tag;
  if (event == LALLOC_EV_FREE) on_free(m, block, size);
  else if (!m->in_hook) on_alloc(m, block, size);
}

void memattr_start(MemAttr *m, lua_State *L, memattr_where where, void *where_ud) {
  lalloc *h = lalloc_of(L);
  if (!h) return;
  if (!m->by_block.slots && idxmap_init(&m->by_block, 1024)) {
    m->lost++;
    return;
  }
  m->heap = h;
  m->used = 1;
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
