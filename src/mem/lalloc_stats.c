/* The heap's statistics (cprof.memory.stats, the public cprof_mem_* of cprof.h) and its
   invariant checks: on request only, each a walk of the caches (lalloc_check: of every slab). */
#include <string.h>

#include "mem/lalloc_heap.h"

static uint64_t cache_objects(const cache *c) { return (uint64_t)c->nslabs * c->per_slab; }

void lalloc_totals(const lalloc *h, cprof_mem_totals *t) {
  memset(t, 0, sizeof *t);
  t->lua_bytes = h->live;
  t->foreign = h->foreign_live;
  t->requested = h->live - h->foreign_live;
  for (const cache *c = h->all; c; c = c->next) {
    t->held += (size_t)cache_live(c) * c->objsize;
    t->footprint += c->nslabs * c->slab_bytes;
    t->live += cache_live(c);
    t->allocs += c->allocs;
  }
  for (int i = 0; i < LA_NSLOT; i++) {
    t->held += h->large[i].held;
    t->footprint += h->large[i].held;
    t->live += h->large[i].live;
    t->allocs += h->large[i].allocs;
  }
  t->mapped = h->cs.os.mapped;
  t->peak_mapped = h->cs.os.peak_mapped;
  t->metadata = h->cs.os.meta + sizeof *h;
  t->limit = lalloc_limit(h);
  t->failures = h->failures;
  t->limit_failures = h->limit_failures;
  t->foreign_frees = h->foreign_frees;
  t->ncaches = h->ncaches;
}

size_t lalloc_caches(const lalloc *h, cprof_mem_cache *rows, size_t max) {
  size_t n = 0;
  for (const cache *c = h->all; c; c = c->next, n++) {
    if (n >= max) continue;
    cprof_mem_cache *r = &rows[n];
    memset(r, 0, sizeof *r);
    memcpy(r->name, c->name, sizeof r->name);
    r->type = lalloc_slot_name(c->type);
    r->objsize = c->objsize;
    r->slab_size = c->slab_bytes;
    r->objects = cache_objects(c);
    r->live = cache_live(c);
    r->magazine = c->nmag;
    r->allocs_ever = c->allocs;
    r->requested = c->req;
    r->slabs = c->nslabs;
    for (const slab *s = c->partial; s; s = s->next) r->partial_slabs++;
  }
  return n;
}

size_t lalloc_types(const lalloc *h, cprof_mem_type *rows, size_t max) {
  cprof_mem_type all[LA_NSLOT];
  memset(all, 0, sizeof all);
  for (int i = 0; i < LA_NSLOT; i++) {
    all[i].name = lalloc_slot_name(i);
    all[i].tag = lalloc_slot_tag(i);
    all[i].live = h->large[i].live;
    all[i].allocs_ever = h->large[i].allocs;
    all[i].bytes = h->large[i].req;
    all[i].held = h->large[i].held;
    all[i].large_live = h->large[i].live;
    all[i].large_allocs = h->large[i].allocs;
    all[i].large_held = h->large[i].held;
  }
  for (const cache *c = h->all; c; c = c->next) {
    cprof_mem_type *r = &all[c->type];
    r->live += cache_live(c);
    r->allocs_ever += c->allocs;
    r->bytes += c->req;
    r->held += (size_t)cache_live(c) * c->objsize;
  }
  for (size_t i = 0; i < LA_NSLOT && i < max; i++) rows[i] = all[i];
  return LA_NSLOT;
}

const arena *lalloc_arena(const lalloc *h, int i) {
  return i == 0 ? &h->cs.chunks : i == 1 ? &h->cs.pages : NULL;
}

const char *lalloc_check(const lalloc *h) {
  const char *err = arena_check(&h->cs.chunks);
  if (err) return err;
  if ((err = arena_check(&h->cs.pages))) return err;
  size_t req = 0, slab_bytes = 0;
  for (const cache *c = h->all; c; c = c->next) {
    if (h->caches[c->id] != c) return "cache not at its index";
    if (c->nmag > c->max_mag) return "magazine overfull";
    for (uint32_t i = 0; i < c->nmag; i++)
      if (slab_of(c->mag[i])->cache != c) return "object in the magazine of another cache";
    uint64_t busy = 0;
    size_t nslabs = 0;
    if (c->cur != &slab_none) {
      const slab *s = c->cur;
      if (s->cache != c || s->listed) return "bad current slab";
      busy += s->busy;
      nslabs++;
    }
    size_t nspare = 0;
    for (const slab *s = c->spare; s; s = s->next, nspare++) {
      if (s->busy || s->listed || s->cache != c || s == c->cur) return "bad spare slab";
      nslabs++;
    }
    if (nspare != c->nspare) return "spare count disagrees";
    for (const slab *s = c->partial; s; s = s->next) {
      if (!s->listed || s->cache != c || s->busy == 0 || s->busy >= s->total || !s->free)
        return "bad partial slab";
      if (s->next && s->next->prev != s) return "partial list links disagree";
      busy += s->busy;
      nslabs++;
    }
    /* Full slabs are on no list. */
    if (nslabs > c->nslabs) return "more slabs listed than the cache has";
    busy += (uint64_t)(c->nslabs - nslabs) * c->per_slab;
    if (busy != c->out) return "cache counts disagree with its slabs";
    uint64_t live = cache_live(c);
    req += c->req;
    slab_bytes += c->nslabs * c->slab_bytes;
    if (c->req < live || c->req > live * c->objsize) return "cache requested bytes out of range";
  }
  size_t large_held = 0;
  for (int i = 0; i < LA_NSLOT; i++) {
    req += h->large[i].req;
    large_held += h->large[i].held;
  }
  if (req != h->live - h->foreign_live) return "requested bytes disagree with the caches";
  if (slab_bytes + large_held - h->cs.huge_bytes + h->cs.huge_count * CHUNK_HDR !=
      h->cs.pages.amt_alloc_segs - h->cs.pages.qcached_bytes)
    return "slabs and large blocks disagree with the page arena";
  return NULL;
}

/* ---- the public C interface (cprof.h) -------------------------------------------------- */

int cprof_mem_totals_of(lua_State *L, cprof_mem_totals *t) {
  lalloc *h = lalloc_of(L);
  if (!h) return -1;
  lalloc_totals(h, t);
  return 0;
}

size_t cprof_mem_caches_of(lua_State *L, cprof_mem_cache *rows, size_t max) {
  lalloc *h = lalloc_of(L);
  return h ? lalloc_caches(h, rows, max) : 0;
}

size_t cprof_mem_types_of(lua_State *L, cprof_mem_type *rows, size_t max) {
  lalloc *h = lalloc_of(L);
  return h ? lalloc_types(h, rows, max) : 0;
}

