/* The observer runs inside lua_Alloc: no Lua API, no longjmp. Allocations made by cprof's own
   hook (naming a function, registering a thread) are not the program's and are left out; frees
   are always looked up, since the collector can run inside the hook. */
#include <string.h>

#include "util/fault.h"
#include "mem/lalloc.h"
#include "mem/memattr.h"

typedef struct BlockProbe {
  const Profiler *P;
  const void *block;
} BlockProbe;

static int block_matches(const BlockProbe *q, uint32_t i) { return q->P->blocks[i].ptr == q->block; }

static uint32_t block_hash(const void *p) { return hash_ptr_line(p, 0); }

static int grow_mem(Profiler *P) {
  uint32_t cap = P->cnodes;
  if (cap <= P->cmem) return 0;
  MemStat *m = fault_realloc(P->mem, (size_t)cap * sizeof *m);
  if (!m) return -1;
  memset(m + P->cmem, 0, (size_t)(cap - P->cmem) * sizeof *m);
  P->mem = m;
  P->cmem = cap;
  return 0;
}

static void on_alloc(Profiler *P, void *block, size_t size) {
  Stack *st = P->cur;
  if (!st || st->n == 0) return;  /* no profiled frame is running */
  uint32_t node = st->f[st->n - 1].node;
  if (node >= P->cmem && grow_mem(P)) goto lost;
  if (P->nblocks == P->cblocks) {
    uint32_t cap = P->cblocks ? P->cblocks * 2 : 1024;
    Block *b = fault_realloc(P->blocks, (size_t)cap * sizeof *b);
    if (!b) goto lost;
    P->blocks = b;
    P->cblocks = cap;
  }
  if (idxmap_put(&P->bmap, block_hash(block), P->nblocks)) goto lost;
  P->blocks[P->nblocks++] = (Block){block, node};
  MemStat *m = &P->mem[node];
  if (m->allocs == 0 || size < m->min) m->min = size;
  if (size > m->max) m->max = size;
  m->allocs++;
  m->bytes += size;
  return;
lost:
  P->mem_lost++;
}

static void on_free(Profiler *P, void *block, size_t size) {
  BlockProbe q = {P, block};
  uint32_t h = block_hash(block), i;
  IDXMAP_FIND(&P->bmap, h, block_matches, &q, i);
  if (i == IDX_NONE) return;  /* allocated before profiling, or by cprof */
  MemStat *m = &P->mem[P->blocks[i].node];
  m->frees++;
  m->freed += size;
  idxmap_del(&P->bmap, h, i);
  uint32_t last = --P->nblocks;
  if (i != last) {
    /* The last record moves into the hole; its map slot must name the new index. */
    P->blocks[i] = P->blocks[last];
    uint32_t hl = block_hash(P->blocks[i].ptr);
    idxmap_del(&P->bmap, hl, last);
    idxmap_put(&P->bmap, hl, i);  /* cannot grow: a slot was just freed */
  }
}

static void observe(void *ud, int event, void *block, size_t size, int tag) {
  Profiler *P = ud;
  (void)tag;
  if (event == LALLOC_EV_FREE) on_free(P, block, size);
  else if (!P->in_hook) on_alloc(P, block, size);
}

void memattr_start(Profiler *P, lua_State *L) {
  lalloc *h = lalloc_of(L);
  if (!h) return;
  if (!P->bmap.slots && idxmap_init(&P->bmap, 1024)) {
    P->mem_lost++;
    return;
  }
  P->heap = h;
  P->memory = 1;
  lalloc_set_thread(h, L);
  lalloc_observe(h, observe, P);
}

void memattr_stop(Profiler *P) {
  if (!P->heap) return;
  lalloc_observe(P->heap, NULL, NULL);
  P->heap = NULL;
}

void memattr_thread(Profiler *P, lua_State *L) {
  if (P->heap) lalloc_set_thread(P->heap, L);
}

void memattr_free(Profiler *P) {
  free(P->mem);
  free(P->blocks);
  idxmap_free(&P->bmap);
  P->mem = NULL;
  P->blocks = NULL;
  P->cmem = P->nblocks = P->cblocks = 0;
}
