/*
 * mem/slab.h — object caches (Bonwick's slab allocator) over the page arena of mem/chunk.h.
 *
 * A cache hands out objects of one size (and, in lalloc.c, one Lua type). Its slabs are runs
 * of pages from "pages"; a slab's descriptor is at the start of its first page and the objects
 * follow, handed out in address order as they are first needed, so that untouched pages cost
 * no resident memory. In front of the slabs each cache keeps a magazine (Bonwick's magazine
 * layer, without CPUs to have one per): an array of free objects. Allocation pops it and
 * freeing pushes onto it, so neither touches the object nor a slab descriptor. When it is
 * empty, a refill loads half of it from the slabs (never-used objects cost no memory access at
 * all); when it is full, a drain gives its older half back to their slabs. Slabs with free
 * objects wait on the cache's partial list; an emptied slab goes back to the arena unless the
 * cache keeps it as a spare (up to one in eight of its slabs, at least one); a full slab is on
 * no list.
 */
#ifndef CPROF_SLAB_H
#define CPROF_SLAB_H

#include <stddef.h>
#include <stdint.h>

#include "mem/arena.h"
#include "mem/chunk.h"

typedef struct cache cache;

typedef struct slab {
  void *free;              /* free objects, linked through their first word */
  cache *cache;
  struct slab *next, *prev;/* the cache's partial list */
  char *bump, *end;        /* objects never handed out yet: [bump, end) */
  uint32_t busy, total;    /* objects allocated; objects in the slab */
  uint32_t listed;         /* on the partial list */
  uint32_t attr;           /* memory attribution's side table of these objects (mem/memattr.c):
                              its number, 0 for none; a new slab starts with none (and so do
                              its map words, which hold the numbers below MAP_ATTR_FAR) */
} slab;

#define SLAB_HDR 64
_Static_assert(sizeof(slab) <= SLAB_HDR, "slab descriptor larger than SLAB_HDR");

enum { CACHE_NAME = 24 };

struct cache {
  /* the hot part: the fast paths and the per-cache accounting */
  uint32_t nmag, max_mag;  /* objects in the magazine; its size */
  size_t req;              /* bytes asked for by the live objects (kept by lalloc.c) */
  slab *cur;               /* the slab refills come from first; never on the partial list */
  uint64_t allocs;         /* allocations ever; not next to req: GCC would make the two
                              updates of an allocation vector instructions (7 for 2) */
  /* the rest */
  uint32_t objsize, per_slab;
  size_t slab_bytes;
  slab *partial;
  slab *spare;             /* empty slabs kept for reuse, linked through next */
  size_t nspare;
  size_t nslabs;
  uint64_t out;            /* objects out of the slabs: allocated or in the magazine */
  uint64_t slabs_ever, refills, drains;
  arena *source;
  uint32_t id;             /* written into the page map of its slabs */
  uint8_t type, cls, traced, pad_;
  char name[CACHE_NAME];
  cache *next;             /* all caches of a heap */
  void *mag[];             /* the magazine: max_mag entries */
};

/* The bytes a cache of objects of `objsize` bytes takes, with its magazine. */
size_t cache_struct_size(size_t objsize);

/* An empty slab that every new cache starts with: it has no free object and nothing to carve.
   Nothing ever writes to it. */
extern slab slab_none;

void cache_init(cache *c, const char *name, size_t objsize, arena *source, unsigned type,
                unsigned cls, uint32_t id);
/* Allocates when the magazine is empty: loads it from the slabs (making a slab if need be)
   and pops it. Returns NULL when no slab can be had. */
void *cache_refill(cache *c);
/* Gives the older half of a full magazine back to the slabs. */
void cache_drain(cache *c);
/* Gives the whole magazine back, then every empty slab to the arena. */
void cache_reap(cache *c);

/* Objects allocated now. */
static inline uint64_t cache_live(const cache *c) { return c->out - c->nmag; }

/* The slab of a block in chunk ch whose page has map word w (not MAP_LARGE). */
static inline slab *slab_at(const chunk *ch, uint32_t w) {
  return (slab *)((char *)ch + ((uintptr_t)MAP_SLAB_FIRST(w) << PAGE_SHIFT));
}

static inline slab *slab_of(const void *p) {
  chunk *ch = chunk_of(p);
  return slab_at(ch, ch->map[chunk_page(p)]);
}

static inline void *cache_alloc(cache *c) {
  uint32_t n = c->nmag;
  if (__builtin_expect(n == 0, 0)) return cache_refill(c);
  c->nmag = n - 1;
  return c->mag[n - 1];
}

static inline void cache_free(cache *c, void *p) {
  uint32_t n = c->nmag;
  if (__builtin_expect(n == c->max_mag, 0)) {
    cache_drain(c);
    n = c->nmag;
  }
  c->mag[n] = p;
  c->nmag = n + 1;
}

#endif
