/* cprof's lua_Alloc: a heap of slab caches per (Lua type, size class), large blocks from the
   page arena, huge ones mapped on their own; per-type accounting exact at free time, a limit,
   blocks of a replaced allocator recognised by address, which cache is traced. The fast paths
   (a magazine pop or push and three counters) are inline in lalloc_f; everything else is on
   the checked paths, taken only when a limit, memory attribution, a trace or a replaced
   allocator asks for it. While memory attribution runs, the state's lua_Alloc is
   lalloc_f_attr, which sends allocations and, under attribution alone, frees to paths of
   their own compiled for speed (alloc_attr, free_noted, realloc_noted) with attribution's
   work (mem/memattr_note.h) inline, and everything else to lalloc_f (whose checked paths then
   tell attribution), so that lalloc_f itself keeps its instructions. The heap and Lua states
   (a new state, install, the lua_Alloc swapped): lalloc_state.c. See lalloc.h and
   docs/MEMORY.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem/lalloc_heap.h"
#include "mem/memattr_note.h"
#include "util/fault.h"

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SLOW __attribute__((noinline, cold))
/* The paths memory attribution takes at every event: out of lalloc_f, yet compiled for speed. */
#define NOTED __attribute__((noinline))
/* Inline even into the checked paths: they are cold (compiled for size), yet memory
   attribution sends every event through them. */
#define ALWAYS static inline __attribute__((always_inline))

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
_Static_assert(LA_NSLOT * LA_NCLASS - 1 <= MAP_SLAB_ID_MAX, "a cache's number fits its map word");

/* ---- Lua types ------------------------------------------------------------------------- */

const uint8_t lalloc_slot_of_tag[16] = {
  LA_RAW, LA_OTHER, LA_OTHER, LA_OTHER, LA_STRING, LA_TABLE, LA_FUNCTION, LA_USERDATA,
  LA_THREAD, LA_UPVAL, LA_PROTO, LA_OTHER, LA_OTHER, LA_OTHER, LA_OTHER, LA_OTHER};
static const char *const slot_names[LA_NSLOT] = {
  "raw", "string", "table", "function", "userdata", "thread", "upvalue", "proto", "other"};
static const int slot_tags[LA_NSLOT] = {0, 4, 5, 6, 7, 8, 9, 10, -1};

/* (LuaJIT passes 0 for every new block.) */
static inline unsigned slot_of(size_t tag) { return (unsigned)lalloc_tag_slot((int)tag); }

const char *lalloc_slot_name(int slot) { return slot >= 0 && slot < LA_NSLOT ? slot_names[slot] : "?"; }
int lalloc_slot_tag(int slot) { return slot >= 0 && slot < LA_NSLOT ? slot_tags[slot] : -1; }


/* A placeholder in every unused entry of `caches`: its magazine is empty, so the fast path
   falls into alloc_small_slow, which makes the real cache. Never written. */
static cache cache_none = {.cur = &slab_none};

void lalloc_update_gates(lalloc *h) {
  int traced = h->tr.c != NULL && h->tr.on;
  h->watched = h->attr != NULL || traced;
  /* Attribution alone leaves allocations on the fast path, which tells it after the pop. */
  h->gate = (traced || h->want_final) ? 0 : h->limit;
  h->slowfree = (h->foreign || traced) ? FREE_CHECKED : h->attr ? FREE_NOTED : 0;
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
  lalloc_update_gates(h);
  return h;
}

void lalloc_delete(lalloc *h) {
  if (!h) return;
  if (h->gone) *h->gone = 1;
  lalloc_trace_free(h);
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
    if (p) chunk_of(p)->map[chunk_page(p)] = MAP_LARGE_WORD(pages, slot);
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

/* The pop of the fast path: an object of n bytes from cache c, whose magazine holds k > 0. */
ALWAYS void *alloc_pop(lalloc *h, cache *c, uint32_t k, size_t n) {
  void *p = c->mag[k - 1];
  c->nmag = k - 1;
  c->allocs++;
  c->req += n;
  h->live += n;
  return p;
}

/* A block of n bytes for type slot `slot`; counts it. No limit check. */
ALWAYS void *alloc_slot(lalloc *h, unsigned slot, size_t n) {
  if (UNLIKELY(n > LA_SMALL_MAX)) return alloc_large(h, slot, n);
  unsigned cls = size_class(n);
  cache *c = h->caches[slot * LA_NCLASS + cls];
  uint32_t k = c->nmag;
  if (UNLIKELY(k == 0)) return alloc_small_slow(h, slot, cls, n);
  return alloc_pop(h, c, k, n);
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

/* Frees block p of ours, w the map word of its page in chunk ch. */
ALWAYS void free_at(lalloc *h, chunk *ch, uint32_t w, void *p, size_t osize) {
  h->live -= osize;
  if (UNLIKELY(w & MAP_LARGE)) {
    free_large(h, ch, p, w, osize);
    return;
  }
  cache *c = h->caches[MAP_SLAB_ID(w)];
  c->req -= osize;
  cache_free(c, p);
}

static inline void free_ours(lalloc *h, void *p, size_t osize) {
  chunk *ch = chunk_of(p);
  free_at(h, ch, ch->map[chunk_page(p)], p, osize);
}

/* ---- reallocation ---------------------------------------------------------------------- */

/* The type slot and usable size of a block of ours, w the map word of its page in chunk ch. */
ALWAYS unsigned block_info(const lalloc *h, const chunk *ch, uint32_t w, size_t *held) {
  if (w & MAP_LARGE) {
    size_t pages = MAP_LARGE_PAGES(w);
    *held = pages ? pages << PAGE_SHIFT : ch->huge_size;
    return MAP_LARGE_TYPE(w);
  }
  cache *c = h->caches[MAP_SLAB_ID(w)];
  *held = c->objsize;
  return c->type;
}

/* Lua's count for a block that stays where it is (map word w) changes from osize to nsize. */
ALWAYS void resize_in_place(lalloc *h, uint32_t w, size_t osize, size_t nsize) {
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
ALWAYS int fits_in_place(size_t held, int large, size_t nsize) {
  if (nsize > held) return 0;
  if (!large) return nsize <= LA_SMALL_MAX && class_size(size_class(nsize)) == held;
  return nsize > held / 2;
}

/* A realloc of block p of ours, w the map word of its page in chunk ch (only its cache and
   large-block bits are used). */
ALWAYS void *realloc_at(lalloc *h, chunk *ch, uint32_t w, void *p, size_t osize, size_t nsize) {
  size_t held;
  unsigned slot = block_info(h, ch, w, &held);
  if (fits_in_place(held, (w & MAP_LARGE) != 0, nsize)) {
    resize_in_place(h, w, osize, nsize);
    return p;
  }
  void *q = alloc_slot(h, slot, nsize);
  if (!q) {
    if (nsize <= osize) {  /* a shrink never fails: keep the block */
      resize_in_place(h, w, osize, nsize);
      return p;
    }
    return NULL;
  }
  memcpy(q, p, osize < nsize ? osize : nsize);
  free_at(h, ch, w, p, osize);
  return q;
}

static __attribute__((noinline)) void *realloc_ours(lalloc *h, void *p, size_t osize, size_t nsize) {
  chunk *ch = chunk_of(p);
  return realloc_at(h, ch, ch->map[chunk_page(p)], p, osize, nsize);
}

/* ---- which cache is traced (the records: lalloc_trace.c) ------------------------------- */

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
      lalloc_trace_free(h);
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
      lalloc_trace_free(h);
      t->dropped = 0;
      if (!t->on) t->c = NULL;
    }
  } else {
    return "usage: start|stop|reset CACHE";
  }
  lalloc_update_gates(h);
  return NULL;
}

const char *lalloc_trace_cache(const lalloc *h) { return h->tr.c ? h->tr.c->name : NULL; }

/* ---- the checked paths: limit, attribution, trace, blocks of `prev` -------------------- */

SLOW static void note_trace(lalloc *h, int ev, void *p, size_t n) {
  if (ev != LALLOC_EV_FREE) lalloc_trace_record(h, p, n);
  else lalloc_trace_forget(h, p);
}

/* Block p of n bytes and type slot `slot`, in slab s (NULL: a large block), w the map word of
   its page, just allocated (LALLOC_EV_ALLOC, LALLOC_EV_MOVE) or about to be freed
   (LALLOC_EV_FREE): the trace of its cache (when that cache is traced) and memory attribution
   hear of it. Returns, for a free, whether attribution had charged the block (a realloc's
   move continues it: an allocation then, else a move, which attribution leaves out). */
ALWAYS int note(lalloc *h, int ev, void *p, size_t n, unsigned slot, slab *s, uint32_t w) {
  if (UNLIKELY(h->tr.on) && s && s->cache->traced) note_trace(h, ev, p, n);
  MemAttr *m = h->attr;
  if (!m || ev == LALLOC_EV_MOVE) return 0;
  if (ev == LALLOC_EV_FREE) {
    SlabTab *empty;
    int charged = memattr_note_free(m, p, n, (int)slot, w, &empty);
    if (empty) memattr_drop_table(m, empty);
    return charged;
  }
  uint32_t node = memattr_node_now(m);
  if (node != IDX_NONE) memattr_note_alloc(m, node, p, n, w);
  return 0;
}

/* The type slot and the slab (NULL: a large block) of a block whose page in chunk ch has map
   word w: both from the word, which a free reads anyway. */
ALWAYS unsigned slot_at(uint32_t w) {
  /* a cache's number is slot * LA_NCLASS + class */
  return w & MAP_LARGE ? MAP_LARGE_TYPE(w) : MAP_SLAB_ID(w) / LA_NCLASS;
}
ALWAYS slab *slab_or_none(chunk *ch, uint32_t w) { return w & MAP_LARGE ? NULL : slab_at(ch, w); }

/* note(), ch the chunk of p and w the map word of its page. */
ALWAYS int note_at(lalloc *h, int ev, void *p, size_t n, chunk *ch, uint32_t w) {
  return note(h, ev, p, n, slot_at(w), slab_or_none(ch, w), w);
}

ALWAYS void note_block(lalloc *h, int ev, void *p, size_t n) {
  chunk *ch = chunk_of(p);
  note_at(h, ev, p, n, ch, ch->map[chunk_page(p)]);
}

/* Block p of n bytes, just allocated or moved while `node` ran: attribution's note. Returns p. */
ALWAYS void *note_block_attr(MemAttr *m, uint32_t node, void *p, size_t n) {
  return memattr_note_alloc(m, node, p, n, chunk_of(p)->map[chunk_page(p)]);
}

/* An allocation of the fast path, under attribution: never with a trace (the gate is 0 then).
   The type slot comes from the side table: kept from the lua_Alloc, it would cost cprof's own
   path a register. */
ALWAYS void *note_new(MemAttr *m, void *p, size_t n) {
  uint32_t node;
  if (UNLIKELY(p == NULL) || (node = memattr_node_now(m)) == IDX_NONE) return p;
  return note_block_attr(m, node, p, n);
}

NOTED static void *alloc_noted(MemAttr *m, void *p, size_t n) { return note_new(m, p, n); }

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
    lalloc_update_gates(h);
    return p;
  }
  if (over_limit(h, 0, n)) return NULL;
  unsigned slot = slot_of(tag);
  void *p = alloc_slot(h, slot, n);
  if (p && h->watched) note_block(h, LALLOC_EV_ALLOC, p, n);
  return p;
}

/* (NULL, what lua_Alloc returns for a free: so that a free's path can end with a jump here.) */
NOTED static void *free_checked(lalloc *h, void *p, size_t osize) {
  if (h->foreign && !chunkset_owns(&h->cs, p)) {
    int final = p == h->final_block;
    h->live -= osize;
    h->foreign_live -= osize;
    h->foreign_frees++;
    h->prevf(h->prevud, p, osize, 0);
    if (final) lalloc_delete(h);
    return NULL;
  }
  chunk *ch = chunk_of(p);
  uint32_t w = ch->map[chunk_page(p)];
  if (h->watched) note_at(h, LALLOC_EV_FREE, p, osize, ch, w);
  free_at(h, ch, w, p, osize);
  return NULL;
}

/* A free under attribution alone (no trace, no blocks of `prev`): the fast path's push, then
   attribution's side (the object's slab stays: it is in the magazine), without the checked
   path's tests. Large blocks and a full magazine take the checked path. Returns NULL (what
   lua_Alloc returns for a free, so that a lua_Alloc can end with a jump here); every call it
   makes is a jump too, so that it saves no register and moves no stack pointer. */
NOTED static void *free_noted(lalloc *h, void *p, size_t osize) {
  chunk *ch = chunk_of(p);
  uint32_t w = ch->map[chunk_page(p)];
  if (UNLIKELY(w & MAP_LARGE)) return free_checked(h, p, osize);
  cache *c = h->caches[MAP_SLAB_ID(w)];
  uint32_t k = c->nmag;
  if (UNLIKELY(k == c->max_mag)) return free_checked(h, p, osize);  /* the magazine drains */
  h->live -= osize;
  c->req -= osize;
  c->mag[k] = p;
  c->nmag = k + 1;
  SlabTab *empty;
  memattr_note_free(h->attr, p, osize, c->type, w, &empty);
  if (UNLIKELY(empty != NULL)) return memattr_drop_table(h->attr, empty);
  return NULL;
}

/* A realloc of a block of ours that attribution or a trace watches: a free, then the move
   that continues it. The free's note may clear the side table's number in the map word (its
   last attributed object gone); realloc_at uses only the word's other bits. */
ALWAYS void *realloc_watched(lalloc *h, void *p, size_t osize, size_t nsize) {
  chunk *ch = chunk_of(p);
  uint32_t w = ch->map[chunk_page(p)];
  int charged = note_at(h, LALLOC_EV_FREE, p, osize, ch, w);
  void *q = realloc_at(h, ch, w, p, osize, nsize);
  /* unchanged on failure: still there */
  note_block(h, charged ? LALLOC_EV_ALLOC : LALLOC_EV_MOVE, q ? q : p, q ? nsize : osize);
  return q;
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
    /* born before cprof's allocator, so before any attribution: a move, not charged */
    if (h->watched) note_block(h, LALLOC_EV_MOVE, q, nsize);
    return q;
  }
  if (!h->watched) return realloc_ours(h, p, osize, nsize);
  return realloc_watched(h, p, osize, nsize);
}

/* A realloc under attribution alone (no trace, no blocks of `prev`), compiled for speed: what
   realloc_watched does, the free's note and the move's, with the old block's map word read
   once and without note()'s dispatch; large blocks take realloc_watched. A block that was not
   attributed has a continuation that is not either, so its realloc is cprof's own but for the
   lookup. */
NOTED static void *realloc_noted(lalloc *h, void *p, size_t osize, size_t nsize) {
  if (over_limit(h, osize, nsize)) return NULL;
  chunk *ch = chunk_of(p);
  uint32_t w = ch->map[chunk_page(p)];
  if (UNLIKELY(w & MAP_LARGE)) return realloc_watched(h, p, osize, nsize);
  MemAttr *m = h->attr;
  SlabTab *empty;
  if (!memattr_note_free(m, p, osize, (int)slot_at(w), w, &empty))
    return realloc_at(h, ch, w, p, osize, nsize);
  if (UNLIKELY(empty != NULL)) memattr_drop_table(m, empty);
  void *q = realloc_at(h, ch, w, p, osize, nsize);
  uint32_t node = memattr_node_now(m);  /* the block was attributed: its move may be */
  /* unchanged on failure: still there */
  if (node != IDX_NONE) note_block_attr(m, node, q ? q : p, q ? nsize : osize);
  return q;
}

/* ---- the lua_Alloc --------------------------------------------------------------------- */

/* A new block of n bytes for type tag `tag`. */
ALWAYS void *alloc_new(lalloc *h, size_t tag, size_t n) {
  if (UNLIKELY(h->live + n > h->gate)) return alloc_checked(h, tag, n);
  void *p = alloc_slot(h, slot_of(tag), n);
  if (UNLIKELY(h->attr != NULL)) return alloc_noted(h->attr, p, n);
  return p;
}

void *lalloc_f(void *ud, void *ptr, size_t osize, size_t nsize) {
  lalloc *h = ud;
  if (nsize == 0) {
    if (ptr) {
      if (LIKELY(!h->slowfree)) free_ours(h, ptr, osize);
      else if (h->slowfree == FREE_NOTED) free_noted(h, ptr, osize);
      else free_checked(h, ptr, osize);
    }
    return NULL;
  }
  if (ptr == NULL) {
    return alloc_new(h, osize, nsize);
  }
  if (UNLIKELY(h->slowfree || (nsize > osize && h->live - osize + nsize > h->gate))) {
    if (h->slowfree == FREE_NOTED) return realloc_noted(h, ptr, osize, nsize);
    return realloc_checked(h, ptr, osize, nsize);
  }
  return realloc_ours(h, ptr, osize, nsize);
}

/* alloc_attr's allocations that the pop does not serve: a large block, an empty magazine. */
SLOW static void *alloc_attr_slow(lalloc *h, unsigned slot, size_t n) {
  return note_new(h->attr, alloc_slot(h, slot, n), n);
}

/* lalloc_f's allocation under attribution, apart from lalloc_f_attr, which then saves no
   register. Every call it makes is its last act (a jump: the rare cases, alloc_attr_slow and
   memattr_alloc_rare), so that it saves no register either. */
NOTED static void *alloc_attr(lalloc *h, size_t tag, size_t n) {
  if (UNLIKELY(h->live + n > h->gate)) return alloc_checked(h, tag, n);
  unsigned slot = slot_of(tag);
  if (UNLIKELY(n > LA_SMALL_MAX)) return alloc_attr_slow(h, slot, n);
  cache *c = h->caches[slot * LA_NCLASS + size_class(n)];
  uint32_t k = c->nmag;
  if (UNLIKELY(k == 0)) return alloc_attr_slow(h, slot, n);
  void *p = alloc_pop(h, c, k, n);
  MemAttr *m = h->attr;
  if (k >= 2) memattr_prefetch(m, c->mag[k - 2]);  /* the next allocation's entry */
  uint32_t node = memattr_node_now(m);
  if (node == IDX_NONE) return p;
  /* a slab object (a popped block is never NULL): no test of either */
  return memattr_note_alloc(m, node, p, n, chunk_of(p)->map[chunk_page(p)] & ~MAP_LARGE);
}

/* The lua_Alloc of a state while memory attribution runs on it (lalloc_attr_start puts it in
   lalloc_f's place, lalloc_attr_stop puts lalloc_f back): a jump to the path of each event,
   with nothing saved and no test of lalloc_f's own. Anything else, or a heap no longer
   attributing (a program may keep this function), goes to lalloc_f. */
void *lalloc_f_attr(void *ud, void *ptr, size_t osize, size_t nsize) {
  lalloc *h = ud;
  if (nsize == 0) {
    if (LIKELY(ptr != NULL && h->slowfree == FREE_NOTED)) return free_noted(h, ptr, osize);
  } else if (ptr == NULL) {
    if (LIKELY(h->attr != NULL)) return alloc_attr(h, osize, nsize);
  } else if (LIKELY(h->slowfree == FREE_NOTED)) {
    return realloc_noted(h, ptr, osize, nsize);
  }
  return lalloc_f(ud, ptr, osize, nsize);
}

void lalloc_set_foreign(lalloc *h, size_t bytes) {
  h->live = h->live - h->foreign_live + bytes;
  h->foreign_live = bytes;
}

void lalloc_set_limit(lalloc *h, size_t limit) {
  h->limit = limit ? limit : SIZE_MAX;
  lalloc_update_gates(h);
}

size_t lalloc_limit(const lalloc *h) { return h->limit == SIZE_MAX ? 0 : h->limit; }

void lalloc_observe(lalloc *h, MemAttr *m) {
  h->attr = m;
  lalloc_update_gates(h);
}

void lalloc_set_thread(lalloc *h, lua_State *L) { h->thread = L; }

void lalloc_fail_after(lalloc *h, long n) { h->cs.os.fail_after = n; }

void lalloc_reap(lalloc *h) {
  for (cache *c = h->all; c; c = c->next) cache_reap(c);
  arena_qcache_flush(&h->cs.pages);
}
