/* Chunks: the OS memory, its headers and the registry of a chunkset (mem/chunk.h). Runs when a
   span is imported or given back; only chunkset_owns (one probe) runs per free, and only while
   blocks of a replaced allocator may be alive. */
#include <string.h>

#include "mem/chunk.h"
#include "util/hash.h"

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
    .os = &cs->os, .qcache_max = ARENA_QCACHES * PAGE_SIZE};
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
