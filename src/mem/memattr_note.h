/*
 * mem/memattr_note.h — memory attribution's side of each allocation and free (mem/memattr.h),
 * inline in the allocator (mem/lalloc.c) after the fast path's pop, in the free's and
 * realloc's paths of attribution and in the checked paths, which have the block's page-map
 * word, hence its slab, type slot and side table's number, at hand: the common case (a slab
 * object, a node with a record, a slab with a side table) makes no call. The rest
 * is in memattr.c. Apart from memattr.h, since it needs the allocator's internals (mem/slab.h),
 * which the profiler's other files need not see.
 */
#ifndef CPROF_MEMATTR_NOTE_H
#define CPROF_MEMATTR_NOTE_H

#include "mem/memattr.h"
#include "mem/slab.h"

/* They run inside lua_Alloc: no Lua API, no longjmp. Inline even in the checked paths, which
   are compiled as cold code (small) since they are off the fast paths. */
#define MEMATTR_INLINE static inline __attribute__((always_inline))

/* An allocation memattr_note_alloc leaves: a node with no record yet, a slab with no side table
   yet, a large block; w the map word of its page. Returns the block, so that the allocator's
   paths can end with a jump here (and keep no register across a call). */
void *memattr_alloc_rare(MemAttr *m, void *block, size_t size, uint32_t w, uint32_t node,
                         cprof_ticks at);
/* The free of a large block; whether it was attributed. */
int memattr_free_large(MemAttr *m, void *block, size_t size, int slot);
/* The side table's last attributed object is gone. Returns NULL (what lua_Alloc returns for a
   free: so that a free's path can end with a jump here). */
void *memattr_drop_table(MemAttr *m, SlabTab *t);

/* The index of object p in the slab t describes. */
MEMATTR_INLINE uint64_t memattr_index(const SlabTab *t, const void *p) {
  return ((uint64_t)((uintptr_t)p - (uintptr_t)t->base) * t->inv) >> 32;
}

/* The entry of object p of the slab t describes. */
MEMATTR_INLINE ObjAttr *memattr_obj(const SlabTab *t, const void *p) {
  return &t->obj[memattr_index(t, p)];
}

/* Whether slab object p has an entry in its slab's side table: *op the entry, *tp the table.
   w is the map word of p's page (mem/chunk.h), which holds the table's number unless it is
   MAP_ATTR_FAR or more (then it is in the slab descriptor's attr). The index, p's offset times
   2^32 / size rounded up, is exact for offsets below 2^32 / size (a slab is at most 16 pages). */
MEMATTR_INLINE int memattr_entry(const MemAttr *m, const void *p, uint32_t w, SlabTab **tp,
                                 ObjAttr **op) {
  uint32_t a = MAP_SLAB_ATTR(w);
  if (__builtin_expect(a == MAP_ATTR_FAR, 0)) a = slab_at(chunk_of(p), w)->attr;
  if (a >= m->ntabs) return 0;
  SlabTab *t = &m->tabs[a];
  uint64_t off = (uint64_t)((uintptr_t)p - (uintptr_t)t->base);
  if (off >= t->span) return 0;
  *tp = t;
  *op = memattr_obj(t, p);
  return 1;
}

/* Slab object p, free, is the next one its magazine hands out: fetch the line of its entry,
   which that allocation will write, now. A magazine's blocks come from many slabs, so that
   line is often out of L1, and by time that write was most of what attribution cost on
   bench/alloc.lua's closures (bench/README.md). A hint only: a stale number or one of
   MAP_ATTR_FAR fetches a useless line, never faults. */
MEMATTR_INLINE void memattr_prefetch(const MemAttr *m, const void *p) {
  uint32_t a = MAP_SLAB_ATTR(chunk_of(p)->map[chunk_page(p)]);
  if (a >= m->ntabs) return;  /* no table there */
  const SlabTab *t = &m->tabs[a];
  /* in integers: a free number's table has no entries (obj NULL) */
  __builtin_prefetch((const void *)((uintptr_t)t->obj + memattr_index(t, p) * sizeof(ObjAttr)), 1);
}

/* Object `o` of table t is charged to `node`, born at `at`. */
MEMATTR_INLINE void memattr_remember(SlabTab *t, ObjAttr *o, uint32_t node, cprof_ticks at) {
  *o = (ObjAttr){node + 1, (float)at};
  t->live++;
}

/* A block of `size` bytes (never 0) charged to s, born at `at`. */
MEMATTR_INLINE void memattr_count_alloc(MemStat *s, size_t size, int slot, cprof_ticks at) {
  /* min - 1 wraps for min 0 (the first allocation): one test for both */
  if (size - 1 < s->min - 1) {
    if (s->min == 0) s->first_alloc = at;
    s->min = size;
  }
  if (size > s->max) s->max = size;
  s->bytes += size;
  s->type_allocs[slot]++;
}

/* A block charged to s, born at `birth`, is freed at `at`. */
MEMATTR_INLINE void memattr_count_free(MemStat *s, size_t size, int slot, cprof_ticks birth,
                                      cprof_ticks at) {
  /* The clock never goes back; a birth rounded to a float may be a little late. */
  uint64_t life = at > birth ? (uint64_t)(at - birth) : 0;
  if (s->freed == 0 || life < s->life_min) s->life_min = life;  /* freed 0: the first free */
  if (life > s->life_max) s->life_max = life;
  s->life_total += life;
  s->last_free = at;
  s->freed += size;
  s->type_frees[slot]++;
}

/* The node an allocation made now is charged to, IDX_NONE for none: allocations made by
   cprof's own hook are not the program's. (A realloc continues the block it frees: the
   allocator asks only when that block was charged, so that one born before the profile — the
   string table, a stack, a table made earlier — stays out of it.) Apart from
   memattr_note_alloc so that a caller can ask before it reads anything else. */
MEMATTR_INLINE uint32_t memattr_node_now(MemAttr *m) {
  if (m->in_hook) return IDX_NONE;
  return **m->node_at;
}

/* Block `block` of `size` bytes (w the map word of its page) was just allocated while `node`
   (memattr_node_now, not IDX_NONE) ran. Returns the block. */
MEMATTR_INLINE void *memattr_note_alloc(MemAttr *m, uint32_t node, void *block, size_t size,
                                       uint32_t w) {
  cprof_ticks at = *m->now - m->t0;
  SlabTab *t;
  ObjAttr *o;
  if (__builtin_expect(node >= m->cstats || (w & MAP_LARGE) || !memattr_entry(m, block, w, &t, &o), 0))
    return memattr_alloc_rare(m, block, size, w, node, at);
  memattr_remember(t, o, node, at);
  memattr_count_alloc(&m->stats[node], size, (int)t->slot, at);
  return block;
}

/* Block `block` (w the map word of its page) is about to be freed: credited to its node if it
   was attributed. Returns whether it was (whether a realloc's move is charged; a
   plain free ignores it). *empty: the side table that lost its last attributed object,
   for the caller to drop with memattr_drop_table while the slab is still there, or NULL — a
   call left to the caller's end keeps its hot path's registers free. */
MEMATTR_INLINE int memattr_note_free(MemAttr *m, void *block, size_t size, int slot, uint32_t w,
                                    SlabTab **empty) {
  *empty = NULL;
  if (__builtin_expect(w & MAP_LARGE, 0)) return memattr_free_large(m, block, size, slot);
  SlabTab *t;
  ObjAttr *o;
  uint32_t node;
  if (!memattr_entry(m, block, w, &t, &o) || (node = o->node) == 0) return 0;
  o->node = 0;
  memattr_count_free(&m->stats[node - 1], size, slot, (cprof_ticks)o->birth, *m->now - m->t0);
  if (__builtin_expect(--t->live == 0, 0)) *empty = t;
  return 1;
}

#endif
