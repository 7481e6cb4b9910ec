/* cprof's lua_Alloc: a heap of slab caches per (Lua type, size class), large blocks from the
   page arena, huge ones mapped on their own; per-type accounting exact at free time, a limit,
   blocks of a replaced allocator recognised by address, tracing of one cache. See lalloc.h and
   docs/MEMORY.md. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "util/fault.h"
#include "util/compat.h"
#include "mem/lalloc.h"
#include "util/hash.h"

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SLOW __attribute__((noinline, cold))

#define LALLOC_MAGIC 0x6c616c6c6f63u

/* ---- size classes: 8-byte steps to 128, then 8 classes per doubling up to 4096 ---------- */

static inline unsigned size_class(size_t n) {  /* 1 <= n <= LA_SMALL_MAX */
  if (n <= 128) return (unsigned)((n - 1) >> 3);
  unsigned b = 63u - (unsigned)__builtin_clzll((unsigned long long)(n - 1));
  unsigned shift = b - 3;
  return 16 + (b - 7) * 8 + (unsigned)(((n - 1) >> shift) - 8);
}

static size_t class_size(unsigned cls) {
  if (cls < 16) return (size_t)(cls + 1) * 8;
  unsigned k = cls - 16, b = 7 + k / 8;
  return (size_t)(9 + k % 8) << (b - 3);
}

_Static_assert(LA_NCLASS == 56, "56 size classes up to 4096");

/* ---- Lua types ------------------------------------------------------------------------- */

/* Lua 5.4's tags: 0 for memory that is no object, LUA_TSTRING (4) ... LUA_TTHREAD (8), then
   LUA_TUPVAL (9) and LUA_TPROTO (10) from lobject.h. Anything else is "other". */
static const uint8_t slot_of_tag[16] = {
  LA_RAW, LA_OTHER, LA_OTHER, LA_OTHER, LA_STRING, LA_TABLE, LA_FUNCTION, LA_USERDATA,
  LA_THREAD, LA_UPVAL, LA_PROTO, LA_OTHER, LA_OTHER, LA_OTHER, LA_OTHER, LA_OTHER};
static const char *const slot_names[LA_NSLOT] = {
  "raw", "string", "table", "function", "userdata", "thread", "upvalue", "proto", "other"};
static const int slot_tags[LA_NSLOT] = {0, 4, 5, 6, 7, 8, 9, 10, -1};

/* (LuaJIT passes 0 for every new block.) */
static inline unsigned slot_of(size_t tag) { return tag < 16 ? slot_of_tag[tag] : LA_OTHER; }

const char *lalloc_slot_name(int slot) { return slot >= 0 && slot < LA_NSLOT ? slot_names[slot] : "?"; }
int lalloc_slot_tag(int slot) { return slot >= 0 && slot < LA_NSLOT ? slot_tags[slot] : -1; }

/* ---- the heap -------------------------------------------------------------------------- */

typedef struct tobj {      /* a traced object */
  const void *p;
  uint32_t site, size;
} tobj;

typedef struct trace {
  cache *c;                /* the traced cache, NULL: none */
  int on;                  /* recording */
  tobj *objs;              /* open addressing by address */
  size_t ocap, nobjs;
  lalloc_site *sites;
  size_t nsites, scap;
  uint32_t *sidx;          /* open addressing: site index + 1 */
  size_t sicap;
  char **strs;             /* interned source names */
  size_t strcap, nstrs;
  uint64_t dropped;
} trace;

typedef struct large_stats {
  uint64_t live, allocs;
  size_t req, held;
} large_stats;

struct lalloc {
  /* hot: the fast paths read these */
  cache *caches[LA_NSLOT * LA_NCLASS];
  size_t live;             /* bytes Lua holds: its own count, blocks of `prev` included */
  size_t gate;             /* an allocation taking `live` past this takes the checked path */
  int slowfree;            /* frees and reallocs take the checked path */

  /* cold */
  uint64_t magic;
  size_t limit;            /* SIZE_MAX: none */
  int foreign;             /* blocks of `prev` may be alive */
  int watched;             /* an observer or a trace wants every event */
  int want_final;          /* the next allocation is the state's own block */
  lua_Alloc prevf;
  void *prevud;
  size_t foreign_live;
  uint64_t foreign_frees;
  uint64_t failures, limit_failures;
  large_stats large[LA_NSLOT];
  cache *all;
  size_t ncaches;
  void *final_block;       /* freeing it (the last free of lua_close) closes the heap */
  int *gone;               /* set when the heap closes itself */
  lua_State *main, *thread;
  lalloc_observer obs;
  void *obs_ud;
  trace tr;
  chunkset cs;
};

/* A placeholder in every unused entry of `caches`: its magazine is empty, so the fast path
   falls into alloc_small_slow, which makes the real cache. Never written. */
static cache cache_none = {.cur = &slab_none};

static void update_gates(lalloc *h) {
  h->watched = h->obs != NULL || (h->tr.c != NULL && h->tr.on);
  h->gate = (h->watched || h->want_final) ? 0 : h->limit;
  h->slowfree = h->foreign || h->watched;
}

lalloc *lalloc_new(lua_Alloc prev, void *prevud, long fail_after) {
  lalloc *h = fault_malloc(sizeof *h);
  if (!h) return NULL;
  memset(h, 0, sizeof *h);
  if (chunkset_init(&h->cs, fail_after) != 0) {
    free(h);
    return NULL;
  }
  for (size_t i = 0; i < LA_NSLOT * LA_NCLASS; i++) h->caches[i] = &cache_none;
  h->magic = LALLOC_MAGIC;
  h->limit = SIZE_MAX;
  h->prevf = prev;
  h->prevud = prevud;
  h->foreign = prev != NULL;
  update_gates(h);
  return h;
}

static void trace_free_all(lalloc *h);

void lalloc_delete(lalloc *h) {
  if (!h) return;
  if (h->gone) *h->gone = 1;
  trace_free_all(h);
  for (cache *c = h->all, *next; c; c = next) {
    next = c->next;
    arena_meta_free(&h->cs.os, c, cache_struct_size(c->objsize));
  }
  chunkset_destroy(&h->cs);
  h->magic = 0;
  free(h);
}

/* ---- allocation ------------------------------------------------------------------------ */

static cache *make_cache(lalloc *h, unsigned slot, unsigned cls) {
  size_t bytes = cache_struct_size(class_size(cls));
  cache *c = arena_meta_alloc(&h->cs.os, bytes);
  if (!c) return NULL;
  char name[CACHE_NAME];
  snprintf(name, sizeof name, "%s_%zu", slot_names[slot], class_size(cls));
  cache_init(c, name, class_size(cls), &h->cs.pages, slot, cls, slot * LA_NCLASS + cls);
  c->next = h->all;
  h->all = c;
  h->ncaches++;
  h->caches[slot * LA_NCLASS + cls] = c;
  return c;
}

SLOW static void *alloc_small_slow(lalloc *h, unsigned slot, unsigned cls, size_t n) {
  cache *c = h->caches[slot * LA_NCLASS + cls];
  if (c == &cache_none && !(c = make_cache(h, slot, cls))) {
    h->failures++;
    return NULL;
  }
  void *p = cache_refill(c);
  if (!p) {
    h->failures++;
    return NULL;
  }
  c->allocs++;
  c->req += n;
  h->live += n;
  return p;
}

SLOW static void *alloc_large(lalloc *h, unsigned slot, size_t n) {
  void *p;
  size_t held;
  if (n > LA_HUGE_MIN) {
    p = chunkset_huge_alloc(&h->cs, n, slot);
    held = p ? chunk_of(p)->huge_size : 0;
  } else {
    size_t pages = (n + PAGE_SIZE - 1) >> PAGE_SHIFT;
    held = pages << PAGE_SHIFT;
    p = (void *)arena_alloc(&h->cs.pages, held);
    if (p) chunk_of(p)->map[page_in_chunk(p)] = MAP_LARGE_WORD(pages, slot);
  }
  if (!p) {
    h->failures++;
    return NULL;
  }
  large_stats *ls = &h->large[slot];
  ls->live++;
  ls->allocs++;
  ls->req += n;
  ls->held += held;
  h->live += n;
  return p;
}

/* A block of n bytes for type slot `slot`; counts it. No limit check. */
static inline void *alloc_slot(lalloc *h, unsigned slot, size_t n) {
  if (UNLIKELY(n > LA_SMALL_MAX)) return alloc_large(h, slot, n);
  unsigned cls = size_class(n);
  cache *c = h->caches[slot * LA_NCLASS + cls];
  uint32_t k = c->nmag;
  if (UNLIKELY(k == 0)) return alloc_small_slow(h, slot, cls, n);
  void *p = c->mag[k - 1];
  c->nmag = k - 1;
  c->allocs++;
  c->req += n;
  h->live += n;
  return p;
}

/* ---- freeing --------------------------------------------------------------------------- */

SLOW static void free_large(lalloc *h, chunk *ch, void *p, uint32_t w, size_t osize) {
  unsigned slot = MAP_LARGE_TYPE(w);
  size_t pages = MAP_LARGE_PAGES(w), held;
  if (pages == 0) {
    held = ch->huge_size;
    chunkset_huge_free(&h->cs, p);
  } else {
    held = pages << PAGE_SHIFT;
    arena_free(&h->cs.pages, (uintptr_t)p, held);
  }
  large_stats *ls = &h->large[slot];
  ls->live--;
  ls->req -= osize;
  ls->held -= held;
  if (UNLIKELY(p == h->final_block)) lalloc_delete(h);
}

/* Frees a block of ours. */
static inline void free_ours(lalloc *h, void *p, size_t osize) {
  chunk *ch = chunk_of(p);
  uint32_t w = ch->map[page_in_chunk(p)];
  h->live -= osize;
  if (UNLIKELY(w & MAP_LARGE)) {
    free_large(h, ch, p, w, osize);
    return;
  }
  cache *c = h->caches[MAP_SLAB_ID(w)];
  c->req -= osize;
  cache_free(c, p);
}

/* ---- reallocation ---------------------------------------------------------------------- */

/* The type slot and usable size of a block of ours. */
static unsigned block_info(const lalloc *h, void *p, size_t *held) {
  chunk *ch = chunk_of(p);
  uint32_t w = ch->map[page_in_chunk(p)];
  if (w & MAP_LARGE) {
    size_t pages = MAP_LARGE_PAGES(w);
    *held = pages ? pages << PAGE_SHIFT : ch->huge_size;
    return MAP_LARGE_TYPE(w);
  }
  cache *c = h->caches[MAP_SLAB_ID(w)];
  *held = c->objsize;
  return c->type;
}

/* Lua's count for a block that stays where it is changes from osize to nsize. */
static void resize_in_place(lalloc *h, void *p, size_t osize, size_t nsize) {
  chunk *ch = chunk_of(p);
  uint32_t w = ch->map[page_in_chunk(p)];
  if (w & MAP_LARGE) {
    large_stats *ls = &h->large[MAP_LARGE_TYPE(w)];
    ls->req = ls->req - osize + nsize;
  } else {
    cache *c = h->caches[MAP_SLAB_ID(w)];
    c->req = c->req - osize + nsize;
  }
  h->live = h->live - osize + nsize;
}

/* Whether a block of `held` usable bytes (a slab object, or a large block) should stay where
   it is for nsize bytes: the same size class, or a large block at least half used. */
static int fits_in_place(size_t held, int large, size_t nsize) {
  if (nsize > held) return 0;
  if (!large) return nsize <= LA_SMALL_MAX && class_size(size_class(nsize)) == held;
  return nsize > held / 2;
}

static __attribute__((noinline)) void *realloc_ours(lalloc *h, void *p, size_t osize, size_t nsize) {
  size_t held;
  unsigned slot = block_info(h, p, &held);
  int large = (chunk_of(p)->map[page_in_chunk(p)] & MAP_LARGE) != 0;
  if (fits_in_place(held, large, nsize)) {
    resize_in_place(h, p, osize, nsize);
    return p;
  }
  void *q = alloc_slot(h, slot, nsize);
  if (!q) {
    if (nsize <= osize) {  /* a shrink never fails: keep the block */
      resize_in_place(h, p, osize, nsize);
      return p;
    }
    return NULL;
  }
  memcpy(q, p, osize < nsize ? osize : nsize);
  free_ours(h, p, osize);
  return q;
}

/* ---- tracing --------------------------------------------------------------------------- */

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

static void obj_remove(lalloc *h, const void *p) {
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

static void trace_record(lalloc *h, void *p, size_t n) {
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
  obj_remove(h, p);  /* a stale record at this address (made before a stop) */
  size_t j = obj_slot(t, p);
  t->objs[j].p = p;
  t->objs[j].site = (uint32_t)site;
  t->objs[j].size = (uint32_t)n;
  t->nobjs++;
  t->sites[site].live++;
  t->sites[site].allocs++;
  t->sites[site].bytes += n;
}

static void trace_free_all(lalloc *h) {
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

/* The cache of that name, made when the name is a type and a size class ("table_56"). NULL
   with *err set when there is none or it cannot be made. */
static cache *cache_named(lalloc *h, const char *name, const char **err) {
  *err = "no such cache";
  for (cache *c = h->all; c; c = c->next)
    if (strcmp(c->name, name) == 0) return c;
  for (unsigned slot = 0; slot < LA_NSLOT; slot++) {
    size_t len = strlen(slot_names[slot]);
    if (strncmp(name, slot_names[slot], len) != 0 || name[len] != '_') continue;
    const char *num = name + len + 1;
    if (*num < '1' || *num > '9' || strlen(num) > 4) return NULL;
    size_t size = 0;
    for (const char *d = num; *d; d++) {
      if (*d < '0' || *d > '9') return NULL;
      size = size * 10 + (size_t)(*d - '0');
    }
    if (size > LA_SMALL_MAX) return NULL;
    unsigned cls = size_class(size);
    if (class_size(cls) != size) return NULL;
    cache *c = make_cache(h, slot, cls);
    if (!c) *err = "out of memory";
    return c;
  }
  return NULL;
}

const char *lalloc_trace(lalloc *h, const char *cmd, const char *name) {
  trace *t = &h->tr;
  const char *err;
  cache *c = cache_named(h, name, &err);
  if (!c) return err;
  if (t->c && t->c != c) {
    if (strcmp(cmd, "reset") == 0 || strcmp(cmd, "stop") == 0) return "that cache is not traced";
    if (t->on || t->nobjs || t->nsites) return "another cache is traced: stop and reset it first";
  }
  if (strcmp(cmd, "start") == 0) {
    if (t->c != c) {
      trace_free_all(h);
      t->c = c;
    }
    t->on = 1;
    c->traced = 1;
  } else if (strcmp(cmd, "stop") == 0) {
    if (t->c == c) {
      t->on = 0;
      c->traced = 0;
    }
  } else if (strcmp(cmd, "reset") == 0) {
    if (t->c == c) {
      trace_free_all(h);
      t->dropped = 0;
      if (!t->on) t->c = NULL;
    }
  } else {
    return "usage: start|stop|reset CACHE";
  }
  update_gates(h);
  return NULL;
}

const char *lalloc_trace_cache(const lalloc *h) { return h->tr.c ? h->tr.c->name : NULL; }
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

/* ---- the checked paths: limit, observer, trace, blocks of `prev` ----------------------- */

/* Block p of n bytes, just allocated (LALLOC_EV_ALLOC) or about to be freed (LALLOC_EV_FREE):
   the trace of its cache (when that cache is traced) and the observer hear of it. */
static void note(lalloc *h, int ev, void *p, size_t n) {
  unsigned slot;
  chunk *ch = chunk_of(p);
  uint32_t w = ch->map[page_in_chunk(p)];
  if (w & MAP_LARGE) {
    slot = MAP_LARGE_TYPE(w);
  } else {
    cache *c = h->caches[MAP_SLAB_ID(w)];
    slot = c->type;
    if (c->traced && h->tr.on) {
      if (ev == LALLOC_EV_ALLOC) trace_record(h, p, n);
      else obj_remove(h, p);
    }
  }
  if (h->obs) h->obs(h->obs_ud, ev, p, n, slot_tags[slot]);
}

static void note_alloc(lalloc *h, void *p, size_t n) { note(h, LALLOC_EV_ALLOC, p, n); }
static void note_free(lalloc *h, void *p, size_t osize) { note(h, LALLOC_EV_FREE, p, osize); }

static int over_limit(lalloc *h, size_t osize, size_t nsize) {
  if (nsize <= osize || h->live - osize + nsize <= h->limit) return 0;
  h->failures++;
  h->limit_failures++;
  return 1;
}

SLOW static void *alloc_checked(lalloc *h, size_t tag, size_t n) {
  if (h->want_final) {
    /* The state's own block (lua_newstate's first allocation): a large block, so that the
       large-block path — not the fast path — sees it freed, last of all, by lua_close. */
    void *p = alloc_large(h, slot_of(tag), n);
    if (!p) return NULL;
    h->final_block = p;
    h->want_final = 0;
    update_gates(h);
    return p;
  }
  if (over_limit(h, 0, n)) return NULL;
  void *p = alloc_slot(h, slot_of(tag), n);
  if (p && h->watched) note_alloc(h, p, n);
  return p;
}

SLOW static void free_checked(lalloc *h, void *p, size_t osize) {
  if (h->foreign && !chunkset_owns(&h->cs, p)) {
    int final = p == h->final_block;
    h->live -= osize;
    h->foreign_live -= osize;
    h->foreign_frees++;
    h->prevf(h->prevud, p, osize, 0);
    if (final) lalloc_delete(h);
    return;
  }
  if (h->watched) note_free(h, p, osize);
  free_ours(h, p, osize);
}

SLOW static void *realloc_checked(lalloc *h, void *p, size_t osize, size_t nsize) {
  if (over_limit(h, osize, nsize)) return NULL;
  if (h->foreign && !chunkset_owns(&h->cs, p)) {
    /* A block of `prev`: move it into ours. */
    void *q = alloc_slot(h, LA_RAW, nsize);
    if (!q) {
      if (nsize > osize) return NULL;
      /* A shrink never fails: let `prev` do it, or keep the block. */
      q = h->prevf(h->prevud, p, osize, nsize);
      if (!q) q = p;
      h->live = h->live - osize + nsize;
      h->foreign_live = h->foreign_live - osize + nsize;
      return q;
    }
    memcpy(q, p, osize < nsize ? osize : nsize);
    h->prevf(h->prevud, p, osize, 0);
    h->live -= osize;
    h->foreign_live -= osize;
    h->foreign_frees++;
    if (h->watched) note_alloc(h, q, nsize);
    return q;
  }
  if (!h->watched) return realloc_ours(h, p, osize, nsize);
  note_free(h, p, osize);
  void *q = realloc_ours(h, p, osize, nsize);
  if (q) {
    note_alloc(h, q, nsize);
  } else {
    note_alloc(h, p, osize);  /* the block is unchanged: tell that it is still there */
  }
  return q;
}

/* ---- the lua_Alloc --------------------------------------------------------------------- */

void *lalloc_f(void *ud, void *ptr, size_t osize, size_t nsize) {
  lalloc *h = ud;
  if (nsize == 0) {
    if (ptr) {
      if (UNLIKELY(h->slowfree)) free_checked(h, ptr, osize);
      else free_ours(h, ptr, osize);
    }
    return NULL;
  }
  if (ptr == NULL) {
    if (UNLIKELY(h->live + nsize > h->gate)) return alloc_checked(h, osize, nsize);
    return alloc_slot(h, slot_of(osize), nsize);
  }
  if (UNLIKELY(h->slowfree || (nsize > osize && h->live - osize + nsize > h->gate)))
    return realloc_checked(h, ptr, osize, nsize);
  return realloc_ours(h, ptr, osize, nsize);
}

lalloc *lalloc_of(lua_State *L) {
  void *ud;
  lua_Alloc f = lua_getallocf(L, &ud);
  if (f != lalloc_f) return NULL;
  lalloc *h = ud;
  return h->magic == LALLOC_MAGIC ? h : NULL;
}

lua_State *cprof_newstate(void) { return lalloc_newstate(-1); }

lua_State *lalloc_newstate(long fail_after) {
  lalloc *h = lalloc_new(NULL, NULL, fail_after);
  if (!h) return NULL;
  int gone = 0;
  h->gone = &gone;
  h->want_final = 1;
  update_gates(h);
  lua_State *L = lua_newstate(lalloc_f, h);
  if (!L) {
    /* lua_newstate frees its block when it fails after allocating it: that closed the heap. */
    if (!gone) lalloc_delete(h);
    return NULL;
  }
  h->gone = NULL;
  h->main = L;
  return L;
}

lalloc *lalloc_install(lua_State *L, const char **err) {
#if LUA_VERSION_NUM < 504
  (void)L;
  *err = "not supported on LuaJIT: its allocations carry no Lua type, and lua_close releases "
         "LuaJIT's own allocator only while that allocator is installed";
  return NULL;
#else
  void *ud;
  lua_Alloc f = lua_getallocf(L, &ud);
  if (f == lalloc_f) {
    *err = "already installed";
    return NULL;
  }
  /* lua_close runs the finalizer that dlcloses C modules before it frees the last objects,
     through this very function: keep the library that holds it mapped for good. */
  Dl_info info;
  if (dladdr((void *)(uintptr_t)lalloc_f, &info) && info.dli_fname &&
      !dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE)) {
    *err = "cannot keep cprof.core loaded until the state closes";
    return NULL;
  }
  lalloc *h = lalloc_new(f, ud, -1);
  if (!h) {
    *err = "out of memory";
    return NULL;
  }
  lua_State *M = compat_main_thread(L);
  h->main = M ? M : L;
  /* lua_close frees the main thread's block (LG: the main thread after LUA_EXTRASPACE bytes)
     last; that free closes the heap. */
  h->final_block = (char *)h->main - LUA_EXTRASPACE;
  size_t count = (size_t)lua_gc(L, LUA_GCCOUNT, 0) * 1024 + (size_t)lua_gc(L, LUA_GCCOUNTB, 0);
  lalloc_set_foreign(h, count);
  update_gates(h);
  lua_setallocf(L, lalloc_f, h);
  return h;
#endif
}

void lalloc_set_foreign(lalloc *h, size_t bytes) {
  h->live = h->live - h->foreign_live + bytes;
  h->foreign_live = bytes;
}

void lalloc_set_limit(lalloc *h, size_t limit) {
  h->limit = limit ? limit : SIZE_MAX;
  update_gates(h);
}

size_t lalloc_limit(const lalloc *h) { return h->limit == SIZE_MAX ? 0 : h->limit; }

void lalloc_observe(lalloc *h, lalloc_observer fn, void *ud) {
  h->obs = fn;
  h->obs_ud = ud;
  update_gates(h);
}

void lalloc_set_thread(lalloc *h, lua_State *L) { h->thread = L; }

void lalloc_fail_after(lalloc *h, long n) { h->cs.os.fail_after = n; }

void lalloc_reap(lalloc *h) {
  for (cache *c = h->all; c; c = c->next) cache_reap(c);
}

/* ---- statistics ------------------------------------------------------------------------ */

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
    r->type = slot_names[c->type];
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
    all[i].name = slot_names[i];
    all[i].tag = slot_tags[i];
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
  if (slab_bytes + large_held - h->cs.huge_bytes + h->cs.huge_count * CHUNK_HDR != h->cs.pages.amt_alloc_segs)
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
