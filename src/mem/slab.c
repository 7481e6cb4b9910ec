/* Chunks (the OS memory, its headers and registry) and slab caches. See slab.h. */
#include <string.h>

#include "mem/slab.h"
#include "util/hash.h"

slab slab_none;

/* ---- the registry: which chunks are ours ---------------------------------------------- */

static size_t reg_home(uintptr_t key, size_t cap) {
  return (size_t)(hash_fib((uint64_t)key) >> 32) & (cap - 1);
}

static int reg_put(uintptr_t *tab, size_t cap, uintptr_t key) {
  size_t i = reg_home(key, cap);
  while (tab[i] && tab[i] != key) i = (i + 1) & (cap - 1);
  int fresh = tab[i] == 0;
  tab[i] = key;
  return fresh;
}

static int reg_insert(chunkset *cs, uintptr_t chunk_base) {
  uintptr_t key = chunk_base >> CHUNK_SHIFT;
  if ((cs->reg_n + 1) * 2 > cs->reg_cap) {
    size_t ncap = cs->reg_cap ? cs->reg_cap * 2 : 64;
    uintptr_t *nt = arena_meta_alloc(&cs->os, ncap * sizeof *nt);
    if (!nt) return -1;
    memset(nt, 0, ncap * sizeof *nt);
    for (size_t i = 0; i < cs->reg_cap; i++)
      if (cs->reg[i]) reg_put(nt, ncap, cs->reg[i]);
    arena_meta_free(&cs->os, cs->reg, cs->reg_cap * sizeof *cs->reg);
    cs->reg = nt;
    cs->reg_cap = ncap;
  }
  cs->reg_n += (size_t)reg_put(cs->reg, cs->reg_cap, key);
  return 0;
}

static void reg_remove(chunkset *cs, uintptr_t chunk_base) {
  uintptr_t key = chunk_base >> CHUNK_SHIFT;
  size_t mask = cs->reg_cap - 1, i = reg_home(key, cs->reg_cap);
  while (cs->reg[i] != key) {
    if (!cs->reg[i]) return;
    i = (i + 1) & mask;
  }
  /* Backward-shift deletion: pull later entries of the probe run into the hole. */
  size_t hole = i;
  for (size_t j = (i + 1) & mask; cs->reg[j]; j = (j + 1) & mask) {
    size_t home = reg_home(cs->reg[j], cs->reg_cap);
    /* j's entry may move to the hole when its home is not in (hole, j], cyclically. */
    int between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!between) {
      cs->reg[hole] = cs->reg[j];
      hole = j;
    }
  }
  cs->reg[hole] = 0;
  cs->reg_n--;
}

int chunkset_owns(const chunkset *cs, const void *p) {
  if (!cs->reg_n) return 0;
  uintptr_t key = (uintptr_t)p >> CHUNK_SHIFT;
  size_t mask = cs->reg_cap - 1;
  for (size_t i = reg_home(key, cs->reg_cap); cs->reg[i]; i = (i + 1) & mask)
    if (cs->reg[i] == key) return 1;
  return 0;
}

/* ---- chunks ---------------------------------------------------------------------------- */

static int os_import(void *ctx, size_t size, uintptr_t *base, size_t *got) {
  chunkset *cs = ctx;
  void *p = arena_os_map(&cs->os, size);
  if (!p) return -1;
  *base = (uintptr_t)p;
  *got = size;
  return 0;
}

static void os_release(void *ctx, uintptr_t base, size_t size) {
  chunkset *cs = ctx;
  arena_os_unmap(&cs->os, (void *)base, size);
}

/* A chunk from "chunks", with its header written and its number registered. */
static chunk *new_chunk(chunkset *cs, size_t span, uint32_t kind) {
  uintptr_t c = arena_alloc(&cs->chunks, span);
  if (!c) return NULL;
  if (reg_insert(cs, c) != 0) {
    arena_free(&cs->chunks, c, span);
    return NULL;
  }
  chunk *ch = (chunk *)c;
  memset(ch, 0, sizeof *ch);
  ch->magic = CHUNK_MAGIC;
  ch->owner = cs;
  ch->span = span;
  ch->kind = kind;
  return ch;
}

static void drop_chunk(chunkset *cs, chunk *ch) {
  size_t span = ch->span;
  ch->magic = 0;
  reg_remove(cs, (uintptr_t)ch);
  arena_free(&cs->chunks, (uintptr_t)ch, span);
}

/* "pages" imports one chunk at a time: everything after its header. */
static int pages_import(void *ctx, size_t size, uintptr_t *base, size_t *got) {
  chunkset *cs = ctx;
  if (size > CHUNK_SIZE - CHUNK_HDR) return -1;
  chunk *ch = new_chunk(cs, CHUNK_SIZE, CHUNK_PAGED);
  if (!ch) return -1;
  *base = (uintptr_t)ch + CHUNK_HDR;
  *got = CHUNK_SIZE - CHUNK_HDR;
  return 0;
}

static void pages_release(void *ctx, uintptr_t base, size_t size) {
  (void)size;
  drop_chunk(ctx, (chunk *)(base - CHUNK_HDR));
}

int chunkset_init(chunkset *cs, long fail_after) {
  memset(cs, 0, sizeof *cs);
  arena_os_init(&cs->os, CHUNK_SIZE);
  cs->os.fail_after = fail_after;
  arena_params cp = {
    .name = "chunks", .quantum = CHUNK_SIZE, .source = NULL, .import = os_import,
    .release = os_release, .ctx = cs, .import_min = CHUNK_SIZE, .keep_empty = 0, .os = &cs->os};
  if (arena_init(&cs->chunks, &cp) != 0) return -1;
  arena_params pp = {
    .name = "pages", .quantum = PAGE_SIZE, .source = &cs->chunks, .import = pages_import,
    .release = pages_release, .ctx = cs, .import_min = CHUNK_SIZE - CHUNK_HDR, .keep_empty = 1,
    .os = &cs->os};
  if (arena_init(&cs->pages, &pp) != 0) {
    arena_destroy(&cs->chunks);
    return -1;
  }
  return 0;
}

void chunkset_destroy(chunkset *cs) {
  arena_destroy(&cs->pages);   /* gives its chunks back to "chunks" */
  arena_destroy(&cs->chunks);  /* unmaps everything, huge blocks included */
  arena_meta_free(&cs->os, cs->reg, cs->reg_cap * sizeof *cs->reg);
  cs->reg = NULL;
  cs->reg_cap = cs->reg_n = 0;
}

void *chunkset_huge_alloc(chunkset *cs, size_t size, unsigned type) {
  if (size > SIZE_MAX - CHUNK_HDR - CHUNK_SIZE) return NULL;
  size_t span = (size + CHUNK_HDR + CHUNK_SIZE - 1) & ~(CHUNK_SIZE - 1);
  chunk *ch = new_chunk(cs, span, CHUNK_HUGE);
  if (!ch) return NULL;
  ch->huge_type = type;
  ch->huge_size = span - CHUNK_HDR;
  ch->map[CHUNK_HDR >> PAGE_SHIFT] = MAP_LARGE_WORD(0, type);
  cs->huge_bytes += span;
  cs->huge_count++;
  return (char *)ch + CHUNK_HDR;
}

void chunkset_huge_free(chunkset *cs, void *p) {
  chunk *ch = chunk_of(p);
  cs->huge_bytes -= ch->span;
  cs->huge_count--;
  drop_chunk(cs, ch);
}

/* ---- caches ---------------------------------------------------------------------------- */

/* The fewest pages (up to 16) that hold at least 32 objects (8 for objects over 512 bytes)
   with at most 1/16 of the slab wasted. Small slabs free up sooner; larger ones go back and
   forth to the arena less often. */
void slab_geometry(size_t objsize, size_t *slab_bytes, uint32_t *per_slab) {
  size_t want = objsize > 512 ? 8 : 32;
  for (size_t pages = 1; pages <= 16; pages++) {
    size_t bytes = pages * PAGE_SIZE, room = bytes - SLAB_HDR;
    size_t n = room / objsize, waste = room - n * objsize;
    if (n >= want && waste * 16 <= bytes) {
      *slab_bytes = bytes;
      *per_slab = (uint32_t)n;
      return;
    }
  }
  *slab_bytes = 16 * PAGE_SIZE;
  *per_slab = (uint32_t)((16 * PAGE_SIZE - SLAB_HDR) / objsize);
}

uint32_t cache_mag_size(size_t objsize) {
  /* About 16 KiB of objects, from 4 to 256. */
  size_t m = 16384 / objsize;
  return (uint32_t)(m < 4 ? 4 : m > 256 ? 256 : m);
}

size_t cache_struct_size(size_t objsize) {
  return sizeof(cache) + cache_mag_size(objsize) * sizeof(void *);
}

void cache_init(cache *c, const char *name, size_t objsize, arena *source, unsigned type,
                unsigned cls, uint32_t id) {
  memset(c, 0, sizeof *c);
  c->cur = &slab_none;
  c->objsize = (uint32_t)objsize;
  c->max_mag = cache_mag_size(objsize);
  slab_geometry(objsize, &c->slab_bytes, &c->per_slab);
  c->source = source;
  c->id = id;
  c->type = (uint8_t)type;
  c->cls = (uint8_t)cls;
  size_t n = strlen(name);
  if (n >= CACHE_NAME) n = CACHE_NAME - 1;
  memcpy(c->name, name, n);
}

static slab *new_slab(cache *c) {
  uintptr_t base = arena_alloc(c->source, c->slab_bytes);
  if (!base) return NULL;
  chunk *ch = chunk_of((void *)base);
  uint32_t first = page_in_chunk((void *)base), npages = (uint32_t)(c->slab_bytes >> PAGE_SHIFT);
  for (uint32_t i = 0; i < npages; i++) ch->map[first + i] = MAP_SLAB(first, c->id);
  slab *s = (slab *)base;
  memset(s, 0, sizeof *s);
  s->cache = c;
  s->bump = (char *)base + SLAB_HDR;
  s->end = s->bump + (size_t)c->per_slab * c->objsize;
  s->total = c->per_slab;
  c->nslabs++;
  c->slabs_ever++;
  return s;
}

static void drop_slab(cache *c, slab *s) {
  c->nslabs--;
  arena_free(c->source, (uintptr_t)s, c->slab_bytes);
}

static void partial_unlink(cache *c, slab *s) {
  if (s->prev) s->prev->next = s->next;
  else c->partial = s->next;
  if (s->next) s->next->prev = s->prev;
  s->next = s->prev = NULL;
  s->listed = 0;
}

static void partial_push(cache *c, slab *s) {
  s->prev = NULL;
  s->next = c->partial;
  if (c->partial) c->partial->prev = s;
  c->partial = s;
  s->listed = 1;
}

void *cache_refill(cache *c) {
  uint32_t want = c->max_mag / 2 ? c->max_mag / 2 : 1, n = 0;
  slab *s = c->cur;
  while (n < want) {
    if (s->free) {  /* objects that drains gave back */
      void *p = s->free;
      s->free = *(void **)p;
      s->busy++;
      c->mag[n++] = p;
      continue;
    }
    if (s->bump < s->end) {  /* never used: no need to touch them */
      size_t room = (size_t)(s->end - s->bump) / c->objsize, k = want - n;
      if (k > room) k = room;
      /* Highest address first in the magazine, so the lowest is handed out first. */
      for (size_t i = k; i-- > 0;) c->mag[n + i] = s->bump + (k - 1 - i) * c->objsize;
      s->bump += k * c->objsize;
      s->busy += (uint32_t)k;
      n += (uint32_t)k;
      continue;
    }
    /* cur is full (or the placeholder): it stays on no list until a drain makes room in it. */
    if (c->partial) {
      s = c->partial;
      partial_unlink(c, s);
    } else if (c->spare) {
      s = c->spare;
      c->spare = s->next;
      s->next = NULL;
      c->nspare--;
    } else if (n > 0) {
      break;
    } else {
      s = new_slab(c);
      if (!s) return NULL;
    }
    c->cur = s;
  }
  c->refills++;
  c->out += n;
  c->nmag = n - 1;
  return c->mag[n - 1];
}

/* Gives the objects mag[0..n) back to their slabs and closes the gap. */
static void give_back(cache *c, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    void *p = c->mag[i];
    slab *s = slab_of(p);
    *(void **)p = s->free;
    s->free = p;
    s->busy--;
    if (s == c->cur) continue;
    if (s->busy == 0) {
      if (s->listed) partial_unlink(c, s);
      if (c->nspare < 1 || c->nspare * 8 < c->nslabs) {
        s->next = c->spare;
        c->spare = s;
        c->nspare++;
      } else {
        drop_slab(c, s);
      }
    } else if (!s->listed) {
      partial_push(c, s);
    }
  }
  memmove(c->mag, c->mag + n, (c->nmag - n) * sizeof *c->mag);
  c->nmag -= n;
  c->out -= n;
}

void cache_drain(cache *c) {
  c->drains++;
  give_back(c, c->nmag / 2 ? c->nmag / 2 : 1);
}

void cache_reap(cache *c) {
  give_back(c, c->nmag);
  while (c->spare) {
    slab *s = c->spare;
    c->spare = s->next;
    drop_slab(c, s);
  }
  c->nspare = 0;
  if (c->cur != &slab_none && c->cur->busy == 0) {
    drop_slab(c, c->cur);
    c->cur = &slab_none;
  }
}
