/*
 * mem/chunk.h — the memory of a heap: chunks from the OS, and the header that says what each
 * of their pages holds.
 *
 * Memory comes from the OS in chunks of CHUNK_SIZE bytes aligned to CHUNK_SIZE, so the chunk
 * of any pointer is the pointer with its low bits cleared. The first page of a chunk is its
 * header: who owns it and one 32-bit word per page saying what the page holds — a page of a
 * slab (the slab's first page, where its descriptor is, and the number of its cache), the
 * first page of a large block (its page count and Lua type), or nothing. So a block needs no
 * header of its own: free() finds its cache, hence its size class and Lua type, from the
 * address alone (two loads, inline).
 *
 * Two arenas per chunkset: "chunks" (quantum CHUNK_SIZE) imports from the OS, and "pages"
 * (quantum PAGE_SIZE) imports one chunk at a time from it, formatting its header and recording
 * it in the registry — the set of this chunkset's chunks, which tells cprof's blocks from
 * anyone else's in O(1) without touching memory that might not be mapped. A block too large
 * for a chunk gets a mapping of its own straight from "chunks" (a huge block).
 */
#ifndef CPROF_CHUNK_H
#define CPROF_CHUNK_H

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
   belongs to the cache numbered `id` (its owner's index): (id << 23) | (attr << 10) |
   (first << 1), attr being the number of the slab's side table of memory attribution
   (mem/memattr.h) when it is below MAP_ATTR_FAR, MAP_ATTR_FAR for a larger one (then in the
   slab's descriptor), 0 for none: attribution finds it with the load a free makes anyway. The
   first page of a large block: (pages << 5) | (type << 1) | 1. */
#define MAP_LARGE 1u
#define MAP_SLAB(first, id) (((uint32_t)(id) << 23) | ((uint32_t)(first) << 1))
#define MAP_SLAB_FIRST(w) (((w) >> 1) & (CHUNK_PAGES - 1))
#define MAP_SLAB_ID(w) ((w) >> 23)
#define MAP_SLAB_ID_MAX 511u
#define MAP_ATTR_SHIFT 10
#define MAP_ATTR_FAR 0x1fffu
#define MAP_SLAB_ATTR(w) (((w) >> MAP_ATTR_SHIFT) & MAP_ATTR_FAR)
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

_Static_assert(CHUNK_PAGES <= 512, "a page number fits its 9 bits of a map word");
_Static_assert(sizeof(chunk) <= CHUNK_HDR, "chunk header larger than its page");

static inline chunk *chunk_of(const void *p) {
  return (chunk *)((uintptr_t)p & ~(uintptr_t)(CHUNK_SIZE - 1));
}
static inline uint32_t chunk_page(const void *p) {
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

#endif
