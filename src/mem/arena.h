/*
 * mem/arena.h — resource arenas in the manner of Bonwick's vmem and Akaros's arena.c.
 *
 * An arena hands out ranges of an integer space (here: addresses) in multiples of its quantum.
 * It knows its ranges as segments, each with an external boundary tag (struct btag): the
 * segments of a span lie in one address-ordered list, so a freed segment finds its neighbours
 * and coalesces with them in O(1). Free segments sit on power-of-two free lists (list i holds
 * sizes in [2^i, 2^(i+1))); allocated ones in a hash table keyed by address, so arena_free
 * needs only the address and size. When an arena runs dry it imports a span from its source —
 * another arena, or the OS — and when a whole imported span is free again it gives the span
 * back (keeping `keep_empty` empty spans as a cushion against thrashing).
 *
 * Below every arena sits an arena_os: the OS mappings (mmap, aligned to a power of two so that
 * a pointer's mapping is found by masking) and the metadata the arenas need (btags, hash
 * tables), with a switch that makes either fail on purpose for the tests.
 *
 * Nothing here is global: an arena and its arena_os belong to one user (one Lua state), which
 * uses them from one thread at a time, so there are no locks.
 */
#ifndef CPROF_ARENA_H
#define CPROF_ARENA_H

#include <stddef.h>
#include <stdint.h>

/* ---- the OS ---------------------------------------------------------------------------- */

typedef struct arena_os {
  size_t align;        /* every mapping is aligned to this: a power of two >= the page size */
  long fail_after;     /* tests: after this many more successful maps/metadata allocations,
                          every one fails; < 0 (the default): never */
  size_t mapped;       /* bytes mapped now */
  size_t peak_mapped;
  size_t meta;         /* bytes of metadata allocated now */
  uint64_t maps, unmaps;
} arena_os;

void arena_os_init(arena_os *os, size_t align);
/* `size` bytes, a multiple of os->align, aligned to os->align; NULL when the OS refuses. */
void *arena_os_map(arena_os *os, size_t size);
void arena_os_unmap(arena_os *os, void *p, size_t size);
/* Metadata (from malloc, counted in os->meta); NULL on failure. */
void *arena_meta_alloc(arena_os *os, size_t size);
void arena_meta_free(arena_os *os, void *p, size_t size);

/* ---- arenas ---------------------------------------------------------------------------- */

enum { ARENA_NFREE = 64, ARENA_NAME = 32, ARENA_HASH0 = 32 };

/* Quantum caches (vmem's qcache_max): an arena with qcache_max > 0 keeps up to ARENA_QDEPTH
   freed segments of each size of 1 to qcache_max / quantum quanta (at most ARENA_QCACHES) and
   hands them out again without splitting, hashing or coalescing. A cached segment stays
   allocated in the arena (amt_alloc counts it, as vmem counts its qcaches' slabs); when a
   request finds no free segment, the caches are emptied into the arena before it imports. */
enum { ARENA_QCACHES = 4, ARENA_QDEPTH = 4 };

typedef struct btag btag;

/* Where an arena gets spans. import: at least `size` bytes (a multiple of the quantum);
   returns 0 and sets *base and *got, or -1. release gives back exactly what import gave. */
typedef int (*arena_import_fn)(void *ctx, size_t size, uintptr_t *base, size_t *got);
typedef void (*arena_release_fn)(void *ctx, uintptr_t base, size_t size);

typedef struct arena {
  char name[ARENA_NAME];
  size_t quantum;
  unsigned qshift;
  const struct arena *source;   /* the arena spans come from (for reports); NULL: the OS */
  arena_import_fn import;       /* NULL: the arena has only the spans added to it */
  arena_release_fn release;
  void *ctx;
  size_t import_min;            /* smallest span to import */
  unsigned keep_empty;          /* how many wholly free imported spans to keep */
  arena_os *os;                 /* metadata comes from here */

  btag *segs;                   /* sentinel of the circular segment list */
  btag *free_segs[ARENA_NFREE];
  uint64_t free_map;            /* bit i set: free_segs[i] is not empty */
  btag **hash;                  /* allocated segments, chained through fnext */
  size_t hash_size;             /* a power of two */
  unsigned hash_bits;
  btag *spare;                  /* unused btags */
  size_t nspare;
  void *tag_blocks;             /* the metadata blocks the btags came from */

  size_t amt_total_segs;        /* bytes in all spans */
  size_t amt_alloc_segs;        /* bytes in allocated segments */
  size_t peak_total;
  size_t nr_allocs;             /* allocated segments now */
  size_t nr_spans, nr_empty;    /* spans now; wholly free imported spans now */
  uint64_t nr_allocs_ever, nr_frees_ever, nr_imports_ever, nr_releases_ever;
  uint64_t nr_import_failures;

  size_t qcache_max;            /* bytes; 0: no quantum caches */
  size_t qcached_bytes;         /* bytes of the segments in them */
  uint64_t q_allocs, q_frees;   /* allocations they served; frees they kept */
  uint32_t qn[ARENA_QCACHES];
  uintptr_t qc[ARENA_QCACHES][ARENA_QDEPTH];

  btag *hash0[ARENA_HASH0];
} arena;

typedef struct arena_params {
  const char *name;
  size_t quantum;               /* a power of two */
  const arena *source;
  arena_import_fn import;
  arena_release_fn release;
  void *ctx;
  size_t import_min;
  unsigned keep_empty;
  arena_os *os;
  size_t qcache_max;            /* quantum caches for sizes up to this (0: none) */
} arena_params;

/* Returns 0, or -1 when the sentinel cannot be allocated. */
int arena_init(arena *a, const arena_params *p);
/* Gives every imported span back to its source, whatever is still allocated in it, and frees
   the metadata. */
void arena_destroy(arena *a);

/* `size` rounded up to the quantum; returns the start, or 0 when nothing fits and no span can
   be imported (or size is 0). */
uintptr_t arena_alloc(arena *a, size_t size);
/* Frees what arena_alloc returned, with the size asked for. Returns 0, or -1 when `start` is
   not an allocated segment of that size (nothing is changed then). */
int arena_free(arena *a, uintptr_t start, size_t size);
/* Empties the quantum caches into the arena (the segments become free, spans may go back). */
void arena_qcache_flush(arena *a);
/* Adds a span that is never given back (for arenas without a source). -1 without metadata. */
int arena_add_span(arena *a, uintptr_t start, size_t size);
/* Whether [start, start+size) is an allocated segment (the tests use it). */
int arena_is_allocated(const arena *a, uintptr_t start, size_t size);

typedef struct arena_stats {
  const char *name, *source;
  size_t quantum;
  size_t amt_total, amt_alloc, amt_free, peak_total;
  size_t amt_imported;          /* bytes in imported spans */
  size_t nr_allocs, nr_free_segs, nr_spans, nr_imported_spans, nr_empty;
  uint64_t allocs_ever, frees_ever, imports_ever, releases_ever, import_failures;
  size_t free_lists[ARENA_NFREE];  /* free segments on each list */
  size_t hash_size, hash_empty, hash_longest;
  size_t meta;                  /* bytes of btags and hash table */
  size_t qcache_max, qcached, qcached_bytes;  /* quantum caches: segments and bytes in them */
  uint64_t qcache_allocs, qcache_frees;
} arena_stats;

void arena_get_stats(const arena *a, arena_stats *st);

/* Checks every invariant (list order, coalescing, free lists, hash, totals). Returns NULL, or
   what is wrong. For the tests. */
const char *arena_check(const arena *a);

#endif
