/*
 * mem/slab.h — object caches (Bonwick's slab allocator) over the arenas of arena.h, and the chunks
 * their memory lives in.
 *
 * Memory comes from the OS in chunks of CHUNK_SIZE bytes aligned to CHUNK_SIZE, so the chunk
 * of any pointer is the pointer with its low bits cleared. The first page of a chunk is its
 * header: who owns it and one 32-bit word per page saying what the page holds — a page of a
 * slab (the slab's first page, where its descriptor is, and the number of its cache), the
 * first page of a large block (its page count and Lua type), or nothing. So a block needs no
 * header of its own: free() finds its cache, hence its size class and Lua type, from the
 * address alone.
 *
 * Two arenas per chunkset: "chunks" (quantum CHUNK_SIZE) imports from the OS, and "pages"
 * (quantum PAGE_SIZE) imports one chunk at a time from it, formatting its header and recording
 * it in the registry — the set of this chunkset's chunks, which tells cprof's blocks from
 * anyone else's in O(1) without touching memory that might not be mapped. A block too large
 * for a chunk gets a mapping of its own straight from "chunks" (a huge block).
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

#define CHUNK_SHIFT 21
#define CHUNK_SIZE ((size_t)1 << CHUNK_SHIFT)
#define PAGE_SHIFT 12
#define PAGE_SIZE ((size_t)1 << PAGE_SHIFT)
#define CHUNK_PAGES (CHUNK_SIZE >> PAGE_SHIFT)
#define CHUNK_HDR PAGE_SIZE           /* the header: one page */
#define CHUNK_MAGIC 0x6370726f66636b31ull

/* The word for each page in a chunk header. A page of a slab that starts at page `first` and
   belongs to the cache numbered `id` (its owner's index): (id << 10) | (first << 1). The first
   page of a large block: (pages << 5) | (type << 1) | 1. */
#define MAP_LARGE 1u
#define MAP_SLAB(first, id) (((uint32_t)(id) << 10) | ((uint32_t)(first) << 1))
#define MAP_SLAB_FIRST(w) (((w) >> 1) & (CHUNK_PAGES - 1))
#define MAP_SLAB_ID(w) ((w) >> 10)
#define MAP_LARGE_WORD(pages, type) (((uint32_t)(pages) << 5) | ((uint32_t)(type) << 1) | MAP_LARGE)
#define MAP_LARGE_PAGES(w) ((w) >> 5) /* 0: a huge block, see its chunk header */
#define MAP_LARGE_TYPE(w) (((w) >> 1) & 15u)

enum { CHUNK_PAGED = 1, CHUNK_HUGE = 2 };

typedef struct chunk {
  uint64_t magic;
  const void *owner;       /* the chunkset */
  size_t span;             /* bytes mapped: CHUNK_SIZE, or a multiple for a huge block */
  uint32_t kind;           /* CHUNK_PAGED or CHUNK_HUGE */
  uint32_t huge_type;      /* CHUNK_HUGE: the block's Lua type slot */
  size_t huge_size;        /* CHUNK_HUGE: the block's usable bytes */
  uint32_t map[CHUNK_PAGES];
} chunk;

_Static_assert(sizeof(chunk) <= CHUNK_HDR, "chunk header larger than its page");

static inline chunk *chunk_of(const void *p) {
  return (chunk *)((uintptr_t)p & ~(uintptr_t)(CHUNK_SIZE - 1));
}
static inline uint32_t page_in_chunk(const void *p) {
  return (uint32_t)(((uintptr_t)p & (CHUNK_SIZE - 1)) >> PAGE_SHIFT);
}

typedef struct chunkset {
  arena_os os;
  arena chunks;            /* quantum CHUNK_SIZE, from the OS */
  arena pages;             /* quantum PAGE_SIZE, one chunk at a time from `chunks` */
  uintptr_t *reg;          /* registry: chunk numbers (address >> CHUNK_SHIFT), open addressing */
  size_t reg_cap, reg_n;
  size_t huge_bytes;       /* mapped for huge blocks now */
  uint64_t huge_count;
} chunkset;

/* 0, or -1 when the metadata cannot be allocated. fail_after: see arena_os (tests). */
int chunkset_init(chunkset *cs, long fail_after);
/* Unmaps everything. */
void chunkset_destroy(chunkset *cs);
/* Whether p lies in a chunk of this chunkset (O(1); never reads the chunk). */
int chunkset_owns(const chunkset *cs, const void *p);
/* A huge block: a mapping of its own, the block starting after the chunk header. */
void *chunkset_huge_alloc(chunkset *cs, size_t size, unsigned type);
void chunkset_huge_free(chunkset *cs, void *p);

/* ---- caches ---------------------------------------------------------------------------- */

typedef struct cache cache;

typedef struct slab {
  void *free;              /* free objects, linked through their first word */
  cache *cache;
  struct slab *next, *prev;/* the cache's partial list */
  char *bump, *end;        /* objects never handed out yet: [bump, end) */
  uint32_t busy, total;    /* objects allocated; objects in the slab */
  uint32_t listed, pad_;   /* on the partial list */
} slab;

#define SLAB_HDR 64
_Static_assert(sizeof(slab) <= SLAB_HDR, "slab descriptor larger than SLAB_HDR");

enum { CACHE_NAME = 24 };

struct cache {
  /* the hot part: the fast paths and the per-cache accounting */
  uint32_t nmag, max_mag;  /* objects in the magazine; its size */
  uint64_t allocs;         /* allocations ever */
  size_t req;              /* bytes asked for by the live objects (kept by lalloc.c) */
  /* the rest */
  slab *cur;               /* the slab refills come from first; never on the partial list */
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

/* The magazine size for objects of `objsize` bytes, and the bytes a cache takes with it. */
uint32_t cache_mag_size(size_t objsize);
size_t cache_struct_size(size_t objsize);

/* An empty slab that every new cache starts with: it has no free object and nothing to carve.
   Nothing ever writes to it. */
extern slab slab_none;

/* Geometry for objects of `objsize` bytes: slab bytes and objects per slab. */
void slab_geometry(size_t objsize, size_t *slab_bytes, uint32_t *per_slab);
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

static inline slab *slab_of(const void *p) {
  chunk *ch = chunk_of(p);
  uint32_t w = ch->map[page_in_chunk(p)];
  return (slab *)((char *)ch + ((uintptr_t)MAP_SLAB_FIRST(w) << PAGE_SHIFT));
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
