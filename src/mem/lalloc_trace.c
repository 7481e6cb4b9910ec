/* Tracing one cache (Akaros's slab_trace): each allocation of the traced cache is recorded
   under the Lua stack that made it (a site); a free removes its record. Runs only for the traced
   cache while it records: a stack walk and two probes per allocation, one probe per free. Its
   tables are the heap's metadata (mem/arena.h), so they count in its statistics and fail under
   lalloc_fail_after like the rest. */
#include <string.h>

#include "mem/lalloc_heap.h"
#include "util/hash.h"

/* An interned copy of s (the trace's own), or NULL out of memory. */
static const char *intern(lalloc *h, const char *s) {
  trace *t = &h->tr;
  if ((t->nstrs + 1) * 2 > t->strcap) {
    size_t ncap = t->strcap ? t->strcap * 2 : 64;
    char **ns = arena_meta_alloc(&h->cs.os, ncap * sizeof *ns);
    if (!ns) return NULL;
    memset(ns, 0, ncap * sizeof *ns);
    for (size_t i = 0; i < t->strcap; i++) {
      if (!t->strs[i]) continue;
      size_t j = hash_bytes(t->strs[i], strlen(t->strs[i]), HASH_BYTES_SEED) & (ncap - 1);
      while (ns[j]) j = (j + 1) & (ncap - 1);
      ns[j] = t->strs[i];
    }
    arena_meta_free(&h->cs.os, t->strs, t->strcap * sizeof *t->strs);
    t->strs = ns;
    t->strcap = ncap;
  }
  size_t len = strlen(s);
  size_t j = hash_bytes(s, len, HASH_BYTES_SEED) & (t->strcap - 1);
  while (t->strs[j]) {
    if (strcmp(t->strs[j], s) == 0) return t->strs[j];
    j = (j + 1) & (t->strcap - 1);
  }
  char *copy = arena_meta_alloc(&h->cs.os, len + 1);
  if (!copy) return NULL;
  memcpy(copy, s, len + 1);
  t->strs[j] = copy;
  t->nstrs++;
  return copy;
}

/* The Lua stack of the traced thread, without allocating: lua_getstack and lua_getinfo("Sl")
   only read the CallInfo list and the prototypes. Only for allocations of objects (typed
   caches): Lua creates objects only where its stack is consistent, whereas a raw block may be
   the new stack itself, allocated while Lua 5.4.6 holds its frames as offsets. */
static int capture(lalloc *h, lalloc_frame *f) {
#if LUA_VERSION_NUM >= 504
  lua_State *L = h->thread ? h->thread : h->main;
  if (!L || h->tr.c->type == LA_RAW) return 0;
  lua_Debug ar;
  int n = 0;
  for (int level = 0; n < TRACE_DEPTH && lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "Sl", &ar)) break;
    f[n].src = intern(h, ar.short_src);
    if (!f[n].src) return -1;
    f[n].line = ar.currentline;
    f[n].defined = ar.linedefined;
    n++;
  }
  return n;
#else
  (void)h;
  (void)f;
  (void)intern;
  return 0;
#endif
}

static uint64_t site_hash(const lalloc_frame *f, int n) {
  uint64_t hv = HASH_BYTES_SEED;
  for (int i = 0; i < n; i++) {
    hv = hash_bytes(&f[i].src, sizeof f[i].src, hv);
    hv = hash_bytes(&f[i].line, sizeof f[i].line, hv);
    hv = hash_bytes(&f[i].defined, sizeof f[i].defined, hv);
  }
  return hv;
}

static int same_stack(const lalloc_site *s, const lalloc_frame *f, int n) {
  if (s->depth != (uint32_t)n) return 0;
  for (int i = 0; i < n; i++)
    if (s->f[i].src != f[i].src || s->f[i].line != f[i].line || s->f[i].defined != f[i].defined)
      return 0;
  return 1;
}

/* The index of the site with this stack, made if new; -1 out of memory. */
static long find_site(lalloc *h, const lalloc_frame *f, int n) {
  trace *t = &h->tr;
  if ((t->nsites + 1) * 2 > t->sicap) {
    size_t ncap = t->sicap ? t->sicap * 2 : 64;
    uint32_t *ni = arena_meta_alloc(&h->cs.os, ncap * sizeof *ni);
    if (!ni) return -1;
    memset(ni, 0, ncap * sizeof *ni);
    for (size_t i = 0; i < t->nsites; i++) {
      size_t j = site_hash(t->sites[i].f, (int)t->sites[i].depth) & (ncap - 1);
      while (ni[j]) j = (j + 1) & (ncap - 1);
      ni[j] = (uint32_t)i + 1;
    }
    arena_meta_free(&h->cs.os, t->sidx, t->sicap * sizeof *t->sidx);
    t->sidx = ni;
    t->sicap = ncap;
  }
  size_t j = site_hash(f, n) & (t->sicap - 1);
  while (t->sidx[j]) {
    if (same_stack(&t->sites[t->sidx[j] - 1], f, n)) return (long)t->sidx[j] - 1;
    j = (j + 1) & (t->sicap - 1);
  }
  if (t->nsites == t->scap) {
    size_t ncap = t->scap ? t->scap * 2 : 32;
    lalloc_site *ns = arena_meta_alloc(&h->cs.os, ncap * sizeof *ns);
    if (!ns) return -1;
    if (t->nsites) memcpy(ns, t->sites, t->nsites * sizeof *ns);
    arena_meta_free(&h->cs.os, t->sites, t->scap * sizeof *t->sites);
    t->sites = ns;
    t->scap = ncap;
  }
  lalloc_site *s = &t->sites[t->nsites];
  memset(s, 0, sizeof *s);
  s->depth = (uint32_t)n;
  memcpy(s->f, f, (size_t)n * sizeof *f);
  t->sidx[j] = (uint32_t)t->nsites + 1;
  return (long)t->nsites++;
}

static size_t obj_slot(const trace *t, const void *p) {
  size_t j = hash_mix64((uintptr_t)p) & (t->ocap - 1);
  while (t->objs[j].p && t->objs[j].p != p) j = (j + 1) & (t->ocap - 1);
  return j;
}

void lalloc_trace_forget(lalloc *h, const void *p) {
  trace *t = &h->tr;
  if (!t->nobjs) return;
  size_t mask = t->ocap - 1, i = obj_slot(t, p);
  if (!t->objs[i].p) return;
  lalloc_site *s = &t->sites[t->objs[i].site];
  s->live--;
  s->bytes -= t->objs[i].size;
  size_t hole = i;
  for (size_t j = (i + 1) & mask; t->objs[j].p; j = (j + 1) & mask) {
    size_t home = hash_mix64((uintptr_t)t->objs[j].p) & mask;
    int between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!between) {
      t->objs[hole] = t->objs[j];
      hole = j;
    }
  }
  t->objs[hole].p = NULL;
  t->nobjs--;
}

void lalloc_trace_record(lalloc *h, void *p, size_t n) {
  trace *t = &h->tr;
  lalloc_frame f[TRACE_DEPTH] = {{0}};
  int depth = capture(h, f);
  long site = depth < 0 ? -1 : find_site(h, f, depth);
  if (site < 0) {
    t->dropped++;
    return;
  }
  if ((t->nobjs + 1) * 2 > t->ocap) {
    size_t ncap = t->ocap ? t->ocap * 2 : 256;
    tobj *no = arena_meta_alloc(&h->cs.os, ncap * sizeof *no);
    if (!no) {
      t->dropped++;
      return;
    }
    memset(no, 0, ncap * sizeof *no);
    for (size_t i = 0; i < t->ocap; i++) {
      if (!t->objs[i].p) continue;
      size_t j = hash_mix64((uintptr_t)t->objs[i].p) & (ncap - 1);
      while (no[j].p) j = (j + 1) & (ncap - 1);
      no[j] = t->objs[i];
    }
    arena_meta_free(&h->cs.os, t->objs, t->ocap * sizeof *t->objs);
    t->objs = no;
    t->ocap = ncap;
  }
  lalloc_trace_forget(h, p);  /* a stale record at this address (made before a stop) */
  size_t j = obj_slot(t, p);
  t->objs[j].p = p;
  t->objs[j].site = (uint32_t)site;
  t->objs[j].size = (uint32_t)n;
  t->nobjs++;
  t->sites[site].live++;
  t->sites[site].allocs++;
  t->sites[site].bytes += n;
}

void lalloc_trace_free(lalloc *h) {
  trace *t = &h->tr;
  for (size_t i = 0; i < t->strcap; i++)
    if (t->strs[i]) arena_meta_free(&h->cs.os, t->strs[i], strlen(t->strs[i]) + 1);
  arena_meta_free(&h->cs.os, t->strs, t->strcap * sizeof *t->strs);
  arena_meta_free(&h->cs.os, t->sites, t->scap * sizeof *t->sites);
  arena_meta_free(&h->cs.os, t->sidx, t->sicap * sizeof *t->sidx);
  arena_meta_free(&h->cs.os, t->objs, t->ocap * sizeof *t->objs);
  cache *c = t->c;
  int on = t->on;
  memset(t, 0, sizeof *t);
  t->c = c;
  t->on = on;
}


int lalloc_trace_on(const lalloc *h) { return h->tr.on; }
size_t lalloc_trace_nsites(const lalloc *h) { return h->tr.nsites; }
const lalloc_site *lalloc_trace_site(const lalloc *h, size_t i) {
  return i < h->tr.nsites ? &h->tr.sites[i] : NULL;
}
uint64_t lalloc_trace_dropped(const lalloc *h) { return h->tr.dropped; }
int lalloc_trace_stacks(const lalloc *h) {
#if LUA_VERSION_NUM >= 504
  return h->tr.c && h->tr.c->type != LA_RAW;
#else
  (void)h;
  return 0;
#endif
}
