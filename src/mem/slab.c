/* Slab caches (mem/slab.h). The fast paths are inline in the header; this is what runs when a
   magazine is empty (a refill) or full (a drain). */
#include <string.h>

#include "mem/slab.h"

slab slab_none;

/* The fewest pages (up to 16) that hold at least 32 objects (8 for objects over 512 bytes)
   with at most 1/16 of the slab wasted. Small slabs free up sooner; larger ones go back and
   forth to the arena less often. */
static void slab_geometry(size_t objsize, size_t *slab_bytes, uint32_t *per_slab) {
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

/* The magazine size for objects of `objsize` bytes. */
static uint32_t cache_mag_size(size_t objsize) {
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
  uint32_t first = chunk_page((void *)base), npages = (uint32_t)(c->slab_bytes >> PAGE_SHIFT);
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
