/* Attribution runs inside lua_Alloc: no Lua API, no longjmp. Allocations made by cprof's own
   hook (naming a function, registering a thread) are not the program's and are left out; frees
   are always looked up, since the collector can run inside the hook.

   Where a block's node and birth are (memattr.h): slab objects in their slab's side table,
   found from its number in the map word of the object's page (or, for a number of
   MAP_ATTR_FAR or more, in the slab descriptor's `attr`) and the object's index; large blocks
   in a hash map. A number may be stale — left by an earlier attribution, or reused — so a side
   table is trusted only for an address among its slab's objects. */
#include <stdlib.h>
#include <string.h>

#include "mem/memattr_note.h"
#include "util/array.h"
#include "util/fault.h"
#include "util/hash.h"

typedef struct BlockProbe {
  const MemAttr *m;
  const void *block;
} BlockProbe;

static int block_matches(const BlockProbe *q, uint32_t i) { return q->m->blocks[i].ptr == q->block; }

static uint32_t block_hash(const void *p) { return hash_ptr_line(p, 0); }

/* Slab s's side table is number num (0: none): in its descriptor and its map words. */
static void set_number(slab *s, uint32_t num) {
  s->attr = num;
  chunk *ch = chunk_of(s);
  uint32_t first = chunk_page(s), npages = (uint32_t)(s->cache->slab_bytes >> PAGE_SHIFT);
  uint32_t bits = (num < MAP_ATTR_FAR ? num : MAP_ATTR_FAR) << MAP_ATTR_SHIFT;
  for (uint32_t i = first; i < first + npages; i++)
    ch->map[i] = (ch->map[i] & ~(MAP_ATTR_FAR << MAP_ATTR_SHIFT)) | bits;
}

/* Slab s's side table, found from the map word of its first page. */
static SlabTab *table_of(const MemAttr *m, slab *s) {
  SlabTab *t;
  ObjAttr *o;
  return memattr_entry(m, (char *)s + SLAB_HDR, chunk_of(s)->map[chunk_page(s)], &t, &o) ? t : NULL;
}

/* A new side table for slab s, or NULL when out of memory. */
static SlabTab *new_table(MemAttr *m, slab *s) {
  ObjAttr *obj = fault_calloc(s->total, sizeof *obj);
  if (!obj) return NULL;
  uint32_t num;
  if (m->nfree) {
    num = m->free_nums[--m->nfree];
  } else if (array_reserve((void **)&m->tabs, &m->ctabs, sizeof *m->tabs, m->ntabs + 1, 64) == 0) {
    if (m->ntabs == 0) m->tabs[m->ntabs++] = (SlabTab){0};
    num = m->ntabs++;
  } else {
    free(obj);
    return NULL;
  }
  uint32_t size = s->cache->objsize;
  m->tabs[num] = (SlabTab){obj, (char *)s + SLAB_HDR, s->total * size, 0, s->cache->type,
                           ((1ull << 32) + size - 1) / size};
  set_number(s, num);
  return &m->tabs[num];
}

/* The last attributed object of the table's slab is gone (the slab is still there: that object
   is being freed): its number is free again (a free slot of free_nums was reserved when the
   table was made, so this cannot fail). */
void *memattr_drop_table(MemAttr *m, SlabTab *t) {
  uint32_t num = (uint32_t)(t - m->tabs);
  free(t->obj);
  set_number((slab *)(t->base - SLAB_HDR), 0);
  *t = (SlabTab){0};
  m->free_nums[m->nfree++] = num;
  return NULL;
}

void *memattr_alloc_rare(MemAttr *m, void *block, size_t size, uint32_t w, uint32_t node,
                         cprof_ticks at) {
  if (node >= m->cstats && array_reserve((void **)&m->stats, &m->cstats, sizeof *m->stats, node, 512)) {
    m->lost++;
    return block;
  }
  int slot;
  if (!(w & MAP_LARGE)) {
    slab *sl = slab_at(chunk_of(block), w);
    SlabTab *t = table_of(m, sl);
    /* Room in free_nums for every number there may be, so that dropping a table never fails. */
    if (!t && (array_reserve((void **)&m->free_nums, &m->cfree, sizeof *m->free_nums, m->ntabs, 64) ||
               !(t = new_table(m, sl)))) {
      m->lost++;
      return block;
    }
    memattr_remember(t, memattr_obj(t, block), node, at);
    slot = (int)t->slot;
  } else {
    if ((!m->by_block.slots && idxmap_init(&m->by_block, 64)) ||
        array_reserve((void **)&m->blocks, &m->cblocks, sizeof *m->blocks, m->nblocks, 64) ||
        idxmap_put(&m->by_block, block_hash(block), m->nblocks)) {
      m->lost++;
      return block;
    }
    m->blocks[m->nblocks++] = (Block){block, node, at};
    slot = (int)MAP_LARGE_TYPE(w);
  }
  memattr_count_alloc(&m->stats[node], size, slot, at);
  return block;
}

int memattr_free_large(MemAttr *m, void *block, size_t size, int slot) {
  if (!m->by_block.slots) return 0;
  BlockProbe q = {m, block};
  uint32_t h = block_hash(block), i;
  IDXMAP_FIND(&m->by_block, h, block_matches, &q, i);
  if (i == IDX_NONE) return 0;
  uint32_t node = m->blocks[i].node;
  cprof_ticks birth = m->blocks[i].birth;
  idxmap_remove_record(&m->by_block, m->blocks, sizeof *m->blocks, &m->nblocks, i, h,
                       block_hash(m->blocks[m->nblocks - 1].ptr));
  memattr_count_free(&m->stats[node], size, slot, birth, *m->now - m->t0);
  return 1;
}

void memattr_free(MemAttr *m) {
  for (uint32_t i = 0; i < m->ntabs; i++) free(m->tabs[i].obj);
  free(m->tabs);
  free(m->free_nums);
  free(m->stats);
  free(m->blocks);
  idxmap_free(&m->by_block);
  memset(m, 0, sizeof *m);
}
