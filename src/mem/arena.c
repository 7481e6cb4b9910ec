/* Resource arenas: boundary tags, power-of-two free lists, a hash of allocated segments, spans
   imported from a source and given back when wholly free. See arena.h. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "mem/arena.h"
#include "util/fault.h"
#include "util/hash.h"

/* ---- the OS ---------------------------------------------------------------------------- */

void arena_os_init(arena_os *os, size_t align) {
  memset(os, 0, sizeof *os);
  os->align = align;
  os->fail_after = -1;
}

static void counted_map(arena_os *os, size_t size) {
  os->mapped += size;
  os->maps++;
  if (os->mapped > os->peak_mapped) os->peak_mapped = os->mapped;
}

void *arena_os_map(arena_os *os, size_t size) {
  if (fault_due(&os->fail_after)) return NULL;
  const int prot = PROT_READ | PROT_WRITE, flags = MAP_PRIVATE | MAP_ANONYMOUS;
  void *p = mmap(NULL, size, prot, flags, -1, 0);
  if (p == MAP_FAILED) return NULL;
  if (((uintptr_t)p & (os->align - 1)) == 0) {
    counted_map(os, size);
    return p;
  }
  /* Not aligned: map `align` more and trim both ends. (Linux places the next mapping just
     below the last, so after the first chunk the plain mmap above is usually aligned.) */
  munmap(p, size);
  if (size + os->align < size) return NULL;
  p = mmap(NULL, size + os->align, prot, flags, -1, 0);
  if (p == MAP_FAILED) return NULL;
  uintptr_t raw = (uintptr_t)p;
  uintptr_t base = (raw + os->align - 1) & ~(uintptr_t)(os->align - 1);
  size_t lead = base - raw, trail = os->align - lead;
  if (lead) munmap(p, lead);
  if (trail) munmap((void *)(base + size), trail);
  counted_map(os, size);
  return (void *)base;
}

void arena_os_unmap(arena_os *os, void *p, size_t size) {
  munmap(p, size);
  os->mapped -= size;
  os->unmaps++;
}

void *arena_meta_alloc(arena_os *os, size_t size) {
  if (fault_due(&os->fail_after)) return NULL;
  void *p = malloc(size);
  if (p) os->meta += size;
  return p;
}

void arena_meta_free(arena_os *os, void *p, size_t size) {
  if (!p) return;
  free(p);
  os->meta -= size;
}

/* ---- boundary tags --------------------------------------------------------------------- */

enum { BT_SENTINEL, BT_SPAN, BT_FREE, BT_ALLOC };

struct btag {
  uintptr_t start;
  size_t size;
  btag *prev, *next;     /* the segment list: spans, each followed by its segments in order */
  btag *fprev, *fnext;   /* free list (BT_FREE), hash chain (BT_ALLOC, fnext), spare list */
  uint8_t status;
  uint8_t imported;      /* BT_SPAN: came from the source, goes back to it */
};

enum { TAGS_PER_BLOCK = 64 };

typedef struct tag_block {
  struct tag_block *next;
  btag tags[TAGS_PER_BLOCK];
} tag_block;

static unsigned floor_log2(size_t x) { return 63u - (unsigned)__builtin_clzll((unsigned long long)x); }

/* At least n spare btags; 0 when metadata ran out. */
static int reserve_tags(arena *a, size_t n) {
  while (a->nspare < n) {
    tag_block *b = arena_meta_alloc(a->os, sizeof *b);
    if (!b) return 0;
    b->next = a->tag_blocks;
    a->tag_blocks = b;
    for (int i = 0; i < TAGS_PER_BLOCK; i++) {
      b->tags[i].fnext = a->spare;
      a->spare = &b->tags[i];
    }
    a->nspare += TAGS_PER_BLOCK;
  }
  return 1;
}

static btag *tag_get(arena *a) {  /* after reserve_tags */
  btag *t = a->spare;
  a->spare = t->fnext;
  a->nspare--;
  memset(t, 0, sizeof *t);
  return t;
}

static void tag_put(arena *a, btag *t) {
  t->status = BT_SENTINEL;
  t->fnext = a->spare;
  a->spare = t;
  a->nspare++;
}

static void seg_insert_after(btag *pos, btag *t) {
  t->prev = pos;
  t->next = pos->next;
  pos->next->prev = t;
  pos->next = t;
}

static void seg_unlink(btag *t) {
  t->prev->next = t->next;
  t->next->prev = t->prev;
}

static void free_insert(arena *a, btag *t) {
  unsigned i = floor_log2(t->size);
  t->status = BT_FREE;
  t->fprev = NULL;
  t->fnext = a->free_segs[i];
  if (t->fnext) t->fnext->fprev = t;
  a->free_segs[i] = t;
  a->free_map |= (uint64_t)1 << i;
}

static void free_remove(arena *a, btag *t) {
  unsigned i = floor_log2(t->size);
  if (t->fprev) t->fprev->fnext = t->fnext;
  else a->free_segs[i] = t->fnext;
  if (t->fnext) t->fnext->fprev = t->fprev;
  if (!a->free_segs[i]) a->free_map &= ~((uint64_t)1 << i);
}

/* ---- the hash of allocated segments ---------------------------------------------------- */

static size_t hash_of(const arena *a, uintptr_t start) {
  return (size_t)(hash_fib((uint64_t)(start >> a->qshift)) >> (64 - a->hash_bits));
}

static void hash_grow(arena *a) {
  size_t nsize = a->hash_size * 2;
  btag **nh = arena_meta_alloc(a->os, nsize * sizeof *nh);
  if (!nh) return;  /* longer chains, nothing worse */
  memset(nh, 0, nsize * sizeof *nh);
  btag **old = a->hash;
  size_t osize = a->hash_size;
  a->hash = nh;
  a->hash_size = nsize;
  a->hash_bits++;
  for (size_t i = 0; i < osize; i++) {
    for (btag *t = old[i], *next; t; t = next) {
      next = t->fnext;
      size_t h = hash_of(a, t->start);
      t->fnext = nh[h];
      nh[h] = t;
    }
  }
  if (old != a->hash0) arena_meta_free(a->os, old, osize * sizeof *old);
}

static void hash_insert(arena *a, btag *t) {
  if (a->nr_allocs > a->hash_size) hash_grow(a);
  size_t h = hash_of(a, t->start);
  t->fnext = a->hash[h];
  a->hash[h] = t;
}

static btag *hash_find(const arena *a, uintptr_t start) {
  for (btag *t = a->hash[hash_of(a, start)]; t; t = t->fnext)
    if (t->start == start) return t;
  return NULL;
}

static void hash_remove(arena *a, btag *t) {
  btag **pp = &a->hash[hash_of(a, t->start)];
  while (*pp != t) pp = &(*pp)->fnext;
  *pp = t->fnext;
}

/* ---- arenas ---------------------------------------------------------------------------- */

int arena_init(arena *a, const arena_params *p) {
  memset(a, 0, sizeof *a);
  size_t n = strlen(p->name);
  if (n >= ARENA_NAME) n = ARENA_NAME - 1;
  memcpy(a->name, p->name, n);
  a->quantum = p->quantum;
  a->qshift = floor_log2(p->quantum);
  a->source = p->source;
  a->import = p->import;
  a->release = p->release;
  a->ctx = p->ctx;
  a->import_min = (p->import_min + p->quantum - 1) & ~(p->quantum - 1);
  a->keep_empty = p->keep_empty;
  a->os = p->os;
  a->qcache_max = p->qcache_max & ~(p->quantum - 1);
  if (a->qcache_max > ARENA_QCACHES * p->quantum) a->qcache_max = ARENA_QCACHES * p->quantum;
  a->hash = a->hash0;
  a->hash_size = ARENA_HASH0;
  a->hash_bits = floor_log2(ARENA_HASH0);
  if (!reserve_tags(a, 1)) return -1;
  a->segs = tag_get(a);
  a->segs->status = BT_SENTINEL;
  a->segs->prev = a->segs->next = a->segs;
  return 0;
}

void arena_destroy(arena *a) {
  if (!a->segs) return;
  for (btag *t = a->segs->next; t != a->segs; t = t->next)
    if (t->status == BT_SPAN && t->imported && a->release) a->release(a->ctx, t->start, t->size);
  while (a->tag_blocks) {
    tag_block *b = a->tag_blocks;
    a->tag_blocks = b->next;
    arena_meta_free(a->os, b, sizeof *b);
  }
  if (a->hash != a->hash0) arena_meta_free(a->os, a->hash, a->hash_size * sizeof *a->hash);
  a->hash = a->hash0;
  a->segs = NULL;
}

/* A new span, as one free segment at the end of the segment list. Needs 2 spare btags. */
static void add_span(arena *a, uintptr_t start, size_t size, int imported) {
  btag *span = tag_get(a), *seg = tag_get(a);
  span->status = BT_SPAN;
  span->imported = (uint8_t)imported;
  span->start = seg->start = start;
  span->size = seg->size = size;
  seg_insert_after(a->segs->prev, span);
  seg_insert_after(span, seg);
  free_insert(a, seg);
  a->amt_total_segs += size;
  if (a->amt_total_segs > a->peak_total) a->peak_total = a->amt_total_segs;
  a->nr_spans++;
  if (imported) a->nr_empty++;
}

int arena_add_span(arena *a, uintptr_t start, size_t size) {
  if (size == 0 || ((start | size) & (a->quantum - 1))) return -1;
  if (!reserve_tags(a, 2)) return -1;
  add_span(a, start, size, 0);
  return 0;
}

static int whole_span(const btag *seg) {
  const btag *s = seg->prev;
  return s->status == BT_SPAN && s->start == seg->start && s->size == seg->size;
}

/* A free segment of at least `size` bytes, or NULL. First fit among the first few segments of
   the list where `size` falls, then the first segment of the first larger list (all of whose
   segments fit: Bonwick's instant fit), then the rest of the first list. */
static btag *find_fit(arena *a, size_t size) {
  unsigned lo = floor_log2(size);
  btag *t = a->free_segs[lo];
  for (int n = 0; t && n < 8; t = t->fnext, n++)
    if (t->size >= size) return t;
  if (lo < ARENA_NFREE - 1) {
    uint64_t higher = a->free_map & ~(((uint64_t)2 << lo) - 1);
    if (higher) return a->free_segs[__builtin_ctzll(higher)];
  }
  for (; t; t = t->fnext)
    if (t->size >= size) return t;
  return NULL;
}

static int import_span(arena *a, size_t size) {
  if (!a->import) return 0;
  size_t want = size > a->import_min ? size : a->import_min;
  uintptr_t base;
  size_t got;
  if (a->import(a->ctx, want, &base, &got) != 0) {
    a->nr_import_failures++;
    return 0;
  }
  add_span(a, base, got, 1);
  a->nr_imports_ever++;
  return 1;
}

uintptr_t arena_alloc(arena *a, size_t size) {
  if (size == 0 || size > SIZE_MAX - a->quantum) return 0;
  size = (size + a->quantum - 1) & ~(a->quantum - 1);
  if (size <= a->qcache_max) {
    unsigned k = (unsigned)(size >> a->qshift) - 1;
    if (a->qn[k]) {
      a->q_allocs++;
      a->qcached_bytes -= size;
      return a->qc[k][--a->qn[k]];
    }
  }
  /* One btag for the split, two for an imported span. */
  if (!reserve_tags(a, 3)) return 0;
  btag *t = find_fit(a, size);
  if (!t && a->qcached_bytes) {
    arena_qcache_flush(a);
    t = find_fit(a, size);
  }
  if (!t) {
    if (!import_span(a, size)) return 0;
    t = find_fit(a, size);
    if (!t) return 0;  /* the source gave less than asked */
  }
  free_remove(a, t);
  if (whole_span(t) && t->prev->imported) a->nr_empty--;
  if (t->size > size) {
    btag *rest = tag_get(a);
    rest->start = t->start + size;
    rest->size = t->size - size;
    seg_insert_after(t, rest);
    free_insert(a, rest);
    t->size = size;
  }
  t->status = BT_ALLOC;
  a->nr_allocs++;
  hash_insert(a, t);
  a->amt_alloc_segs += size;
  a->nr_allocs_ever++;
  return t->start;
}

/* Frees allocated segment t: it coalesces with its free neighbours, and a wholly free imported
   span goes back to the source unless it is kept. */
static void free_seg(arena *a, btag *t) {
  size_t size = t->size;
  hash_remove(a, t);
  a->nr_allocs--;
  a->amt_alloc_segs -= size;
  a->nr_frees_ever++;
  btag *p = t->prev;
  if (p->status == BT_FREE) {
    free_remove(a, p);
    p->size += t->size;
    seg_unlink(t);
    tag_put(a, t);
    t = p;
  }
  btag *n = t->next;
  if (n->status == BT_FREE) {
    free_remove(a, n);
    t->size += n->size;
    seg_unlink(n);
    tag_put(a, n);
  }
  if (whole_span(t) && t->prev->imported) {
    if (a->nr_empty < a->keep_empty) {
      a->nr_empty++;
    } else {
      btag *span = t->prev;
      seg_unlink(t);
      seg_unlink(span);
      a->amt_total_segs -= span->size;
      a->nr_spans--;
      a->nr_releases_ever++;
      uintptr_t base = span->start;
      size_t len = span->size;
      tag_put(a, t);
      tag_put(a, span);
      if (a->release) a->release(a->ctx, base, len);
      return;
    }
  }
  free_insert(a, t);
}

int arena_free(arena *a, uintptr_t start, size_t size) {
  size = (size + a->quantum - 1) & ~(a->quantum - 1);
  btag *t = hash_find(a, start);
  if (!t || t->size != size) return -1;
  if (size <= a->qcache_max) {
    unsigned k = (unsigned)(size >> a->qshift) - 1;
    if (a->qn[k] < ARENA_QDEPTH) {
      a->qc[k][a->qn[k]++] = start;
      a->qcached_bytes += size;
      a->q_frees++;
      return 0;
    }
  }
  free_seg(a, t);
  return 0;
}

void arena_qcache_flush(arena *a) {
  for (unsigned k = 0; k < ARENA_QCACHES; k++) {
    while (a->qn[k]) free_seg(a, hash_find(a, a->qc[k][--a->qn[k]]));
  }
  a->qcached_bytes = 0;
}

int arena_is_allocated(const arena *a, uintptr_t start, size_t size) {
  size = (size + a->quantum - 1) & ~(a->quantum - 1);
  const btag *t = hash_find(a, start);
  return t && t->size == size;
}

void arena_get_stats(const arena *a, arena_stats *st) {
  memset(st, 0, sizeof *st);
  st->name = a->name;
  st->source = a->source ? a->source->name : "none";
  st->quantum = a->quantum;
  st->amt_total = a->amt_total_segs;
  st->amt_alloc = a->amt_alloc_segs;
  st->peak_total = a->peak_total;
  st->nr_allocs = a->nr_allocs;
  st->nr_spans = a->nr_spans;
  st->nr_empty = a->nr_empty;
  st->allocs_ever = a->nr_allocs_ever;
  st->frees_ever = a->nr_frees_ever;
  st->imports_ever = a->nr_imports_ever;
  st->releases_ever = a->nr_releases_ever;
  st->import_failures = a->nr_import_failures;
  st->qcache_max = a->qcache_max;
  for (unsigned k = 0; k < ARENA_QCACHES; k++) st->qcached += a->qn[k];
  st->qcached_bytes = a->qcached_bytes;
  st->qcache_allocs = a->q_allocs;
  st->qcache_frees = a->q_frees;
  if (!a->segs) return;
  for (const btag *t = a->segs->next; t != a->segs; t = t->next) {
    if (t->status == BT_SPAN && t->imported) {
      st->amt_imported += t->size;
      st->nr_imported_spans++;
    } else if (t->status == BT_FREE) {
      st->amt_free += t->size;
      st->nr_free_segs++;
    }
  }
  for (int i = 0; i < ARENA_NFREE; i++)
    for (const btag *t = a->free_segs[i]; t; t = t->fnext) st->free_lists[i]++;
  st->hash_size = a->hash_size;
  for (size_t i = 0; i < a->hash_size; i++) {
    size_t n = 0;
    for (const btag *t = a->hash[i]; t; t = t->fnext) n++;
    if (n == 0) st->hash_empty++;
    if (n > st->hash_longest) st->hash_longest = n;
  }
  size_t blocks = 0;
  for (const tag_block *b = a->tag_blocks; b; b = b->next) blocks++;
  st->meta = blocks * sizeof(tag_block) + (a->hash != a->hash0 ? a->hash_size * sizeof *a->hash : 0);
}

const char *arena_check(const arena *a) {
  size_t total = 0, alloc = 0, nallocs = 0, nfree = 0, spans = 0, empty = 0;
  const btag *span = NULL;
  uintptr_t next_start = 0;
  if (a->segs->next->prev != a->segs) return "segment list broken at its head";
  for (const btag *t = a->segs->next; t != a->segs; t = t->next) {
    if (t->next->prev != t) return "segment list links disagree";
    if ((t->start | t->size) & (a->quantum - 1)) return "segment not aligned to the quantum";
    if (t->size == 0) return "empty segment";
    if (t->status == BT_SPAN) {
      if (span && next_start != span->start + span->size) return "span not covered by its segments";
      span = t;
      next_start = t->start;
      total += t->size;
      spans++;
      if (t->imported && t->next->status == BT_FREE && whole_span(t->next)) empty++;
      continue;
    }
    if (!span) return "segment before any span";
    if (t->start != next_start) return "segments not contiguous within their span";
    next_start = t->start + t->size;
    if (next_start > span->start + span->size) return "segment beyond its span";
    if (t->status == BT_FREE) {
      nfree++;
      if (t->prev->status == BT_FREE) return "two free neighbours not coalesced";
      int found = 0;
      for (const btag *f = a->free_segs[floor_log2(t->size)]; f; f = f->fnext)
        if (f == t) found = 1;
      if (!found) return "free segment missing from its free list";
    } else if (t->status == BT_ALLOC) {
      nallocs++;
      alloc += t->size;
      if (hash_find(a, t->start) != t) return "allocated segment missing from the hash";
    } else {
      return "bad segment status";
    }
  }
  if (span && next_start != span->start + span->size) return "last span not covered";
  if (total != a->amt_total_segs) return "amt_total_segs is wrong";
  if (alloc != a->amt_alloc_segs) return "amt_alloc_segs is wrong";
  if (nallocs != a->nr_allocs) return "nr_allocs is wrong";
  if (spans != a->nr_spans) return "nr_spans is wrong";
  if (empty != a->nr_empty) return "nr_empty is wrong";
  if (a->nr_empty > a->keep_empty) return "more empty spans kept than allowed";
  size_t listed = 0;
  for (int i = 0; i < ARENA_NFREE; i++) {
    if (!!a->free_segs[i] != !!(a->free_map & ((uint64_t)1 << i))) return "free_map is wrong";
    for (const btag *f = a->free_segs[i]; f; f = f->fnext) {
      if (f->status != BT_FREE || floor_log2(f->size) != (unsigned)i) return "bad free list entry";
      if (f->fnext && f->fnext->fprev != f) return "free list links disagree";
      listed++;
    }
  }
  if (listed != nfree) return "free lists hold other segments";
  size_t hashed = 0;
  for (size_t i = 0; i < a->hash_size; i++)
    for (const btag *t = a->hash[i]; t; t = t->fnext) {
      if (t->status != BT_ALLOC || hash_of(a, t->start) != i) return "bad hash entry";
      hashed++;
    }
  if (hashed != nallocs) return "hash holds other segments";
  size_t qbytes = 0;
  for (unsigned k = 0; k < ARENA_QCACHES; k++) {
    if (a->qn[k] > ARENA_QDEPTH) return "a quantum cache overflows";
    for (uint32_t j = 0; j < a->qn[k]; j++) {
      size_t size = (size_t)(k + 1) << a->qshift;
      if (size > a->qcache_max || !arena_is_allocated(a, a->qc[k][j], size))
        return "a quantum cache holds a segment that is not allocated at its size";
      qbytes += size;
    }
  }
  if (qbytes != a->qcached_bytes) return "qcached_bytes is wrong";
  return NULL;
}
