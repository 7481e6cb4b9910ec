/*
 * tests/test_arena.c — unit tests of the arenas, the chunks and slab caches, and the lua_Alloc
 * (src/mem/arena.c, src/mem/slab.c, src/mem/lalloc.c), run by `make ctest` (part of `make test`) both as
 * is and under AddressSanitizer + UBSan.
 *
 * Random sequences of operations are checked against shadow models: for an arena, the set of
 * allocated ranges (disjoint, inside the spans, and an allocation fails exactly when no free
 * gap is large enough, since free segments coalesce); for caches and the lua_Alloc, every live
 * block filled with a pattern of its own that must be intact when it is freed or moved. After
 * each step the structures' own invariant checks (arena_check, lalloc_check) must pass. Every
 * failure path is walked by making the OS or the metadata allocation fail at each step.
 *
 *   test_arena [seed]      exit status 0 when everything passed
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "util/fault.h"
#include "mem/arena.h"
#include "cprof.h"
#include "mem/lalloc.h"
#include "mem/slab.h"

static int failures, checks;

#define CHECK(cond, ...)                                             \
  do {                                                               \
    checks++;                                                        \
    if (!(cond)) {                                                   \
      failures++;                                                    \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                  \
      fputc('\n', stderr);                                           \
      if (failures > 20) exit(1);                                    \
    }                                                                \
  } while (0)

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}
static size_t below(size_t n) { return (size_t)(rnd() % n); }

/* ---- arenas over a synthetic address space --------------------------------------------- */

typedef struct range {
  uintptr_t start;
  size_t size;
} range;

typedef struct model {
  range *r;
  size_t n, cap;
} model;

static void model_add(model *m, uintptr_t start, size_t size) {
  if (m->n == m->cap) {
    m->cap = m->cap ? m->cap * 2 : 64;
    m->r = realloc(m->r, m->cap * sizeof *m->r);
    if (!m->r) abort();
  }
  m->r[m->n++] = (range){start, size};
}

static int cmp_range(const void *a, const void *b) {
  const range *x = a, *y = b;
  return (x->start > y->start) - (x->start < y->start);
}

/* The largest free gap inside the spans, given the allocated ranges. */
static size_t largest_gap(const model *alloc, const model *spans) {
  model all = {0};
  for (size_t i = 0; i < alloc->n; i++) model_add(&all, alloc->r[i].start, alloc->r[i].size);
  if (all.n) qsort(all.r, all.n, sizeof *all.r, cmp_range);
  size_t best = 0;
  for (size_t s = 0; s < spans->n; s++) {
    uintptr_t at = spans->r[s].start, end = at + spans->r[s].size;
    for (size_t i = 0; i < all.n; i++) {
      if (all.r[i].start < spans->r[s].start || all.r[i].start >= end) continue;
      if (all.r[i].start - at > best) best = all.r[i].start - at;
      at = all.r[i].start + all.r[i].size;
    }
    if (end - at > best) best = end - at;
  }
  free(all.r);
  return best;
}

static void check_disjoint(const model *alloc, const model *spans, const char *what) {
  model all = {0};
  for (size_t i = 0; i < alloc->n; i++) model_add(&all, alloc->r[i].start, alloc->r[i].size);
  if (all.n) qsort(all.r, all.n, sizeof *all.r, cmp_range);
  for (size_t i = 1; i < all.n; i++)
    CHECK(all.r[i - 1].start + all.r[i - 1].size <= all.r[i].start, "%s: overlapping ranges", what);
  for (size_t i = 0; i < all.n; i++) {
    int inside = 0;
    for (size_t s = 0; s < spans->n; s++)
      if (all.r[i].start >= spans->r[s].start &&
          all.r[i].start + all.r[i].size <= spans->r[s].start + spans->r[s].size)
        inside = 1;
    CHECK(inside, "%s: range outside every span", what);
  }
  free(all.r);
}

static void test_arena_static(void) {
  arena_os os;
  arena_os_init(&os, 4096);
  arena a;
  arena_params p = {.name = "static", .quantum = 64, .os = &os};
  CHECK(arena_init(&a, &p) == 0, "init");
  model spans = {0}, alloc = {0};
  uintptr_t bases[3] = {0x100000, 0x300000, 0x900000};
  size_t sizes[3] = {64 * 100, 64 * 37, 64 * 1000};
  for (int i = 0; i < 3; i++) {
    CHECK(arena_add_span(&a, bases[i], sizes[i]) == 0, "add span");
    model_add(&spans, bases[i], sizes[i]);
  }
  CHECK(arena_add_span(&a, 0x123, 64) == -1, "unaligned span refused");
  CHECK(arena_alloc(&a, 0) == 0, "size 0 refused");
  CHECK(arena_free(&a, 0x100000, 64) == -1, "free of nothing refused");
  for (int step = 0; step < 20000; step++) {
    if (alloc.n == 0 || below(100) < 55) {
      size_t size = below(4) == 0 ? 64 * (1 + below(300)) : 1 + below(64 * 8);
      size_t q = (size + 63) & ~(size_t)63;
      size_t gap = largest_gap(&alloc, &spans);
      uintptr_t x = arena_alloc(&a, size);
      CHECK((x != 0) == (q <= gap), "step %d: alloc %zu with largest gap %zu gave %#lx", step, size,
            gap, (unsigned long)x);
      if (x) {
        CHECK(x % 64 == 0, "aligned");
        model_add(&alloc, x, q);
      }
    } else {
      size_t i = below(alloc.n);
      range r = alloc.r[i];
      if (below(10) == 0) CHECK(arena_free(&a, r.start, r.size + 64) == -1, "wrong size refused");
      CHECK(arena_free(&a, r.start, r.size) == 0, "free");
      CHECK(!arena_is_allocated(&a, r.start, r.size), "freed");
      alloc.r[i] = alloc.r[--alloc.n];
    }
    if (step % 97 == 0) check_disjoint(&alloc, &spans, "static arena");
    const char *err = arena_check(&a);
    CHECK(!err, "step %d: %s", step, err ? err : "");
    if (err) break;
  }
  arena_stats st;
  arena_get_stats(&a, &st);
  size_t sum = 0;
  for (size_t i = 0; i < alloc.n; i++) sum += alloc.r[i].size;
  CHECK(st.amt_alloc == sum && st.nr_allocs == alloc.n, "stats: alloc %zu vs %zu", st.amt_alloc, sum);
  CHECK(st.amt_total == 64 * 1137 && st.amt_free == st.amt_total - sum, "stats: total/free");
  CHECK(st.nr_imported_spans == 0, "nothing imported");
  while (alloc.n) {
    CHECK(arena_free(&a, alloc.r[alloc.n - 1].start, alloc.r[alloc.n - 1].size) == 0, "free all");
    alloc.n--;
  }
  arena_get_stats(&a, &st);
  CHECK(st.nr_free_segs == 3 && st.amt_alloc == 0, "everything coalesced back into 3 spans");
  CHECK(!arena_check(&a), "final check");
  arena_destroy(&a);
  CHECK(os.meta == 0, "metadata all freed: %zu left", os.meta);
  free(spans.r);
  free(alloc.r);
}

/* A source arena over a synthetic range; the child imports from it. */
typedef struct import_ctx {
  arena *src;
  int refuse;
  size_t imports, releases;
} import_ctx;

static int ctx_import(void *c, size_t size, uintptr_t *base, size_t *got) {
  import_ctx *ic = c;
  if (ic->refuse) return -1;
  uintptr_t x = arena_alloc(ic->src, size);
  if (!x) return -1;
  *base = x;
  *got = (size + ic->src->quantum - 1) & ~(ic->src->quantum - 1);
  ic->imports++;
  return 0;
}

static void ctx_release(void *c, uintptr_t base, size_t size) {
  import_ctx *ic = c;
  CHECK(arena_free(ic->src, base, size) == 0, "release of what was imported");
  ic->releases++;
}

static void test_arena_import(unsigned keep_empty) {
  arena_os os;
  arena_os_init(&os, 4096);
  arena src, kid;
  arena_params sp = {.name = "src", .quantum = 4096, .os = &os};
  CHECK(arena_init(&src, &sp) == 0, "init src");
  CHECK(arena_add_span(&src, 0x40000000, 4096 * 256) == 0, "src span");
  import_ctx ic = {.src = &src};
  arena_params kp = {.name = "kid", .quantum = 16, .source = &src, .import = ctx_import,
                     .release = ctx_release, .ctx = &ic, .import_min = 4096 * 4,
                     .keep_empty = keep_empty, .os = &os};
  CHECK(arena_init(&kid, &kp) == 0, "init kid");
  model alloc = {0};
  for (int step = 0; step < 30000; step++) {
    int grow = step % 6000 < 3500;
    if (alloc.n == 0 || (grow ? below(100) < 70 : below(100) < 25)) {
      size_t size = 1 + below(below(8) == 0 ? 4096 * 6 : 512);
      ic.refuse = below(50) == 0;
      uintptr_t x = arena_alloc(&kid, size);
      if (x) {
        model_add(&alloc, x, (size + 15) & ~(size_t)15);
      } else if (!ic.refuse) {
        /* The source must have had no free segment as large as the import. */
        size_t want = size > 4096 * 4 ? (size + 4095) & ~(size_t)4095 : 4096 * 4;
        size_t surely_free = src.free_map ? (size_t)1 << (63 - __builtin_clzll(src.free_map)) : 0;
        CHECK(want > surely_free, "alloc of %zu failed with a free segment of %zu in the source",
              size, surely_free);
      }
    } else {
      size_t i = below(alloc.n);
      CHECK(arena_free(&kid, alloc.r[i].start, alloc.r[i].size) == 0, "free");
      alloc.r[i] = alloc.r[--alloc.n];
    }
    const char *err = arena_check(&kid);
    CHECK(!err, "kid step %d: %s", step, err ? err : "");
    err = arena_check(&src);
    CHECK(!err, "src step %d: %s", step, err ? err : "");
    if (err) break;
    /* Every span of the kid is an allocation of the source. */
    CHECK(kid.amt_total_segs == src.amt_alloc_segs, "kid total %zu vs src alloc %zu",
          kid.amt_total_segs, src.amt_alloc_segs);
    CHECK(kid.nr_empty <= keep_empty, "empty spans kept");
  }
  ic.refuse = 0;
  while (alloc.n) {
    CHECK(arena_free(&kid, alloc.r[alloc.n - 1].start, alloc.r[alloc.n - 1].size) == 0, "free all");
    alloc.n--;
  }
  CHECK(kid.nr_spans == kid.nr_empty && kid.nr_spans <= keep_empty, "all spans released but %u",
        keep_empty);
  CHECK(ic.imports == ic.releases + kid.nr_spans, "imports %zu releases %zu", ic.imports, ic.releases);
  arena_destroy(&kid);
  CHECK(src.amt_alloc_segs == 0, "destroy gave the kept spans back");
  arena_destroy(&src);
  CHECK(os.meta == 0, "metadata freed");
  free(alloc.r);
}

/* Metadata that runs out at every possible step: nothing breaks, nothing leaks. */
static void test_arena_meta_failures(void) {
  for (long n = 0; n < 40; n++) {
    arena_os os;
    arena_os_init(&os, 4096);
    os.fail_after = n;
    arena a;
    arena_params p = {.name = "meta", .quantum = 8, .os = &os};
    if (arena_init(&a, &p) != 0) {
      CHECK(os.meta == 0, "failed init leaks nothing");
      continue;
    }
    model alloc = {0};
    int refused = 0;
    if (arena_add_span(&a, 0x10000, 8 * 100000) != 0) refused++;
    for (int step = 0; step < 3000; step++) {
      if (alloc.n == 0 || below(3) != 0) {
        size_t size = 1 + below(64);
        uintptr_t x = arena_alloc(&a, size);
        if (x) model_add(&alloc, x, (size + 7) & ~(size_t)7);
        else refused++;
      } else {
        size_t i = below(alloc.n);
        CHECK(arena_free(&a, alloc.r[i].start, alloc.r[i].size) == 0, "free");
        alloc.r[i] = alloc.r[--alloc.n];
      }
      const char *err = arena_check(&a);
      CHECK(!err, "fail_after %ld step %d: %s", n, step, err ? err : "");
      if (err) break;
    }
    CHECK(refused > 0 || n > 20, "fail_after %ld: something was refused", n);
    arena_destroy(&a);
    CHECK(os.meta == 0, "metadata freed");
    free(alloc.r);
  }
}

/* ---- chunks and caches ------------------------------------------------------------------ */

static void fill(void *p, size_t n, uint64_t tag) {
  unsigned char *b = p;
  for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(tag * 31 + i * 7);
}

static int intact(const void *p, size_t n, uint64_t tag) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i] != (unsigned char)(tag * 31 + i * 7)) return 0;
  return 1;
}

typedef struct obj {
  void *p;
  size_t size;
  uint64_t tag;
  int cache;
} obj;

static void test_chunkset_and_caches(void) {
  chunkset cs;
  CHECK(chunkset_init(&cs, -1) == 0, "chunkset");
  enum { NC = 6 };
  size_t sizes[NC] = {16, 56, 200, 1024, 2304, 4096};
  cache *caches[NC];
  for (int i = 0; i < NC; i++) {
    caches[i] = calloc(1, cache_struct_size(sizes[i]));
    char name[24];
    snprintf(name, sizeof name, "test_%zu", sizes[i]);
    cache_init(caches[i], name, sizes[i], &cs.pages, 0, (unsigned)i, (uint32_t)i);
  }
  obj *live = NULL;
  size_t n = 0, cap = 0;
  uint64_t tag = 1;
  for (int step = 0; step < 200000; step++) {
    int phase = (step / 40000) % 2;
    if (n == 0 || below(100) < (phase ? 40 : 60)) {
      int ci = (int)below(NC);
      void *p = cache_alloc(caches[ci]);
      CHECK(p != NULL, "cache alloc");
      CHECK(chunkset_owns(&cs, p), "owned");
      CHECK(slab_of(p)->cache == caches[ci], "slab_of finds the cache");
      CHECK(MAP_SLAB_ID(chunk_of(p)->map[chunk_page(p)]) == (uint32_t)ci, "map word has the id");
      CHECK(chunk_of(p)->magic == CHUNK_MAGIC && chunk_of(p)->owner == &cs, "chunk header");
      fill(p, sizes[ci], tag);
      if (n == cap) {
        cap = cap ? cap * 2 : 1024;
        live = realloc(live, cap * sizeof *live);
        if (!live) abort();
      }
      live[n++] = (obj){p, sizes[ci], tag++, ci};
    } else {
      size_t i = below(n);
      CHECK(intact(live[i].p, live[i].size, live[i].tag), "object intact");
      cache_free(caches[live[i].cache], live[i].p);
      live[i] = live[--n];
    }
    if (step % 1000 == 0) {
      for (size_t i = 0; i < n; i++)
        CHECK(intact(live[i].p, live[i].size, live[i].tag), "all objects intact at step %d", step);
      CHECK(!arena_check(&cs.pages) && !arena_check(&cs.chunks), "arenas");
      uint64_t lv = 0;
      for (int c = 0; c < NC; c++) lv += cache_live(caches[c]);
      CHECK(lv == n, "live objects %llu vs %zu", (unsigned long long)lv, n);
    }
  }
  CHECK(!chunkset_owns(&cs, &cs) && !chunkset_owns(&cs, live) && !chunkset_owns(&cs, (void *)16),
        "not owned");
  for (size_t i = 0; i < n; i++) cache_free(caches[live[i].cache], live[i].p);
  size_t mapped_before = cs.os.mapped;
  for (int c = 0; c < NC; c++) {
    CHECK(cache_live(caches[c]) == 0, "nothing live");
    cache_reap(caches[c]);
    CHECK(caches[c]->nslabs == 0 && caches[c]->out == 0, "reaped");
  }
  CHECK(cs.pages.amt_alloc_segs == 0, "page arena empty after reap");
  CHECK(cs.pages.nr_spans <= 1, "chunks went back to the OS (one kept)");
  CHECK(cs.os.mapped <= CHUNK_SIZE && cs.os.mapped <= mapped_before, "unmapped: %zu", cs.os.mapped);

  /* Huge blocks: a mapping each, registered, given back at once. */
  void *hb = chunkset_huge_alloc(&cs, 5 * CHUNK_SIZE / 2, 3);
  CHECK(hb && chunkset_owns(&cs, hb), "huge block");
  CHECK(((uintptr_t)hb & (CHUNK_SIZE - 1)) == CHUNK_HDR, "huge block after its header");
  CHECK(chunk_of(hb)->kind == CHUNK_HUGE && chunk_of(hb)->huge_size >= 5 * CHUNK_SIZE / 2, "huge header");
  CHECK(MAP_LARGE_PAGES(chunk_of(hb)->map[1]) == 0 && MAP_LARGE_TYPE(chunk_of(hb)->map[1]) == 3, "huge word");
  fill(hb, 5 * CHUNK_SIZE / 2, 9);
  CHECK(intact(hb, 5 * CHUNK_SIZE / 2, 9), "huge block usable");
  size_t m = cs.os.mapped;
  chunkset_huge_free(&cs, hb);
  CHECK(cs.os.mapped == m - 3 * CHUNK_SIZE && !chunkset_owns(&cs, hb), "huge block unmapped");

  /* The OS refusing: imports fail, nothing breaks. */
  cs.os.fail_after = 0;
  for (int c = 0; c < NC; c++) {
    size_t got = 0, most = 4 * CHUNK_SIZE / sizes[c];
    for (; got < most; got++)
      if (!cache_alloc(caches[c])) break;
    CHECK(got < most, "allocations fail once the OS refuses");
  }
  CHECK(chunkset_huge_alloc(&cs, CHUNK_SIZE * 2, 0) == NULL, "huge refused");
  CHECK(!arena_check(&cs.pages) && !arena_check(&cs.chunks), "arenas after refusals");
  cs.os.fail_after = -1;
  for (int c = 0; c < NC; c++) free(caches[c]);
  chunkset_destroy(&cs);
  CHECK(cs.os.mapped == 0 && cs.os.meta == 0, "all unmapped (%zu), metadata freed (%zu)",
        cs.os.mapped, cs.os.meta);
  free(live);

  /* chunkset_init itself out of metadata. */
  for (long f = 0; f < 3; f++) {
    chunkset c2;
    if (chunkset_init(&c2, f) == 0) chunkset_destroy(&c2);
    CHECK(c2.os.meta == 0, "chunkset_init failure leaks nothing");
  }
}

/* ---- the lua_Alloc directly ------------------------------------------------------------- */

/* A stand-in for the allocator a heap is installed over. */
static long prev_live, prev_frees;
static void *prev_alloc(void *ud, void *p, size_t osize, size_t nsize) {
  (void)ud;
  (void)osize;
  if (nsize == 0) {
    if (p) {
      prev_live--;
      prev_frees++;
    }
    free(p);
    return NULL;
  }
  if (!p) prev_live++;
  return realloc(p, nsize);
}

typedef struct blk {
  void *p;
  size_t size;
  int tag;
  uint64_t pat;
} blk;

static size_t pick_size(void) {
  switch (below(10)) {
  case 0: return 4097 + below(300000);
  case 1: return 1 + below(4096);
  case 2: if (below(20) == 0) return LA_HUGE_MIN + below(3 * CHUNK_SIZE); /* fall through */
  default: return 1 + below(160);
  }
}

static void test_lalloc_random(int foreign) {
  lalloc *h = lalloc_new(foreign ? prev_alloc : NULL, NULL, -1);
  CHECK(h != NULL, "heap");
  blk *b = NULL;
  size_t n = 0, cap = 0, live = 0;
  uint64_t pat = 1;
  static const int tags[] = {0, 4, 5, 6, 7, 8, 9, 10, 3, 42};
  prev_live = prev_frees = 0;
  /* A few blocks of the "previous" allocator, as a state that was running before install. */
  if (foreign) {
    size_t fbytes = 0;
    for (int i = 0; i < 50; i++) {
      size_t size = 1 + below(600);
      void *p = prev_alloc(NULL, NULL, 0, size);
      fill(p, size, pat);
      if (n == cap) {
        cap = cap ? cap * 2 : 256;
        b = realloc(b, cap * sizeof *b);
      }
      b[n++] = (blk){p, size, 0, pat++};
      fbytes += size;
    }
    lalloc_set_foreign(h, fbytes);
  }
  for (int step = 0; step < 60000; step++) {
    unsigned op = (unsigned)below(100);
    if (step == 30000) lalloc_set_limit(h, 2000000);
    if (step == 40000) lalloc_set_limit(h, 0);
    if (n == 0 || op < 45) {
      size_t size = pick_size();
      int tag = tags[below(sizeof tags / sizeof *tags)];
      void *p = lalloc_f(h, NULL, (size_t)tag, size);
      if (!p) {
        cprof_mem_totals t;
        lalloc_totals(h, &t);
        CHECK(t.limit && t.lua_bytes + size > t.limit, "only the limit refuses here");
        continue;
      }
      CHECK(((uintptr_t)p & 7) == 0, "8-byte aligned");
      fill(p, size, pat);
      if (n == cap) {
        cap = cap ? cap * 2 : 256;
        b = realloc(b, cap * sizeof *b);
      }
      b[n++] = (blk){p, size, tag, pat++};
    } else if (op < 75) {
      size_t i = below(n);
      CHECK(intact(b[i].p, b[i].size, b[i].pat), "block intact before free");
      lalloc_f(h, b[i].p, b[i].size, 0);
      b[i] = b[--n];
    } else {
      size_t i = below(n);
      size_t ns = below(2) ? b[i].size / 2 + 1 : pick_size();
      void *q = lalloc_f(h, b[i].p, b[i].size, ns);
      if (!q) {
        CHECK(ns > b[i].size, "only growth may fail");
        CHECK(intact(b[i].p, b[i].size, b[i].pat), "a failed realloc keeps the block");
        continue;
      }
      size_t keep = ns < b[i].size ? ns : b[i].size;
      CHECK(intact(q, keep, b[i].pat), "realloc keeps the contents");
      fill(q, ns, b[i].pat);
      b[i].p = q;
      b[i].size = ns;
    }
    lalloc_f(h, NULL, 0, 0);  /* freeing NULL: nothing */
    if (step % 500 == 0 || step == 59999) {
      live = 0;
      for (size_t i = 0; i < n; i++) live += b[i].size;
      cprof_mem_totals t;
      lalloc_totals(h, &t);
      CHECK(t.lua_bytes == live, "step %d: live %zu vs model %zu", step, t.lua_bytes, live);
      const char *err = lalloc_check(h);
      CHECK(!err, "step %d: %s", step, err ? err : "");
      if (foreign) CHECK(t.foreign > 0 || prev_live == 0, "foreign bytes counted");
    }
  }
  /* Per type: live objects and bytes as the model says. */
  cprof_mem_type ty[LA_NSLOT];
  CHECK(lalloc_types(h, ty, LA_NSLOT) == LA_NSLOT, "types");
  for (int s = 0; s < LA_NSLOT; s++) {
    uint64_t cnt = 0;
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
      int tag = b[i].tag;
      int slot = tag == 0 ? LA_RAW : tag >= 4 && tag <= 10 ? tag - 3 : LA_OTHER;
      if (slot != s) continue;
      cnt++;
      bytes += b[i].size;
    }
    if (!foreign) CHECK(ty[s].live == cnt && ty[s].bytes == bytes, "type %s: %llu/%zu vs %llu/%zu",
                        ty[s].name, (unsigned long long)ty[s].live, ty[s].bytes,
                        (unsigned long long)cnt, bytes);
  }
  for (size_t i = 0; i < n; i++) {
    CHECK(intact(b[i].p, b[i].size, b[i].pat), "intact at the end");
    lalloc_f(h, b[i].p, b[i].size, 0);
  }
  if (foreign) CHECK(prev_live == 0 && prev_frees >= 50, "old blocks went back to prev");
  cprof_mem_totals t;
  lalloc_totals(h, &t);
  CHECK(t.lua_bytes == 0 && t.live == 0 && t.foreign == 0 && t.held == 0, "empty at the end");
  lalloc_reap(h);
  lalloc_totals(h, &t);
  CHECK(t.mapped <= CHUNK_SIZE, "reap gave memory back: %zu mapped", t.mapped);
  CHECK(!lalloc_check(h), "final check");
  lalloc_delete(h);
  free(b);
}

/* The OS refusing at every step: allocations fail cleanly, shrinks never fail. */
static void test_lalloc_os_failures(void) {
  for (long f = 0; f < 60; f++) {
    lalloc *h = lalloc_new(NULL, NULL, f);
    if (!h) continue;
    void *keep[64];
    size_t sizes[64];
    int k = 0, refused = 0;
    for (int i = 0; i < 64; i++) {
      size_t size = i % 4 == 0 ? 70000 : i % 7 == 0 ? LA_HUGE_MIN + 10 : 40 + (size_t)i * 13;
      void *p = lalloc_f(h, NULL, (size_t)(i % 11), size);
      if (!p) {
        refused++;
        continue;
      }
      memset(p, 0x5a, size);
      keep[k] = p;
      sizes[k++] = size;
    }
    for (int i = 0; i < k; i++) {
      void *q = lalloc_f(h, keep[i], sizes[i], sizes[i] / 3 + 1);
      CHECK(q != NULL, "a shrink never fails (fail_after %ld)", f);
      keep[i] = q;
      sizes[i] = sizes[i] / 3 + 1;
    }
    CHECK(!lalloc_check(h), "heap consistent after refusals");
    for (int i = 0; i < k; i++) lalloc_f(h, keep[i], sizes[i], 0);
    cprof_mem_totals t;
    lalloc_totals(h, &t);
    CHECK(t.lua_bytes == 0, "all freed");
    CHECK(refused == 0 || t.failures > 0, "failures counted");
    lalloc_delete(h);
  }
}

/* ---- whole Lua states -------------------------------------------------------------------- */

static const char *const program =
  "local t = {}\n"
  "for i = 1, 20000 do t[i] = { i, tostring(i), function() return i end } end\n"
  "local s = {}\n"
  "for i = 1, 2000 do s[#s + 1] = string.rep('x', i % 300) .. i end\n"
  "t = nil; collectgarbage()\n"
  "local co = coroutine.wrap(function(a) local b = coroutine.yield(a + 1) return b end)\n"
  "co(1); co(2)\n"
  "local big = string.rep('y', 3000000)\n"
  "return #table.concat(s) + #big\n";

static void test_states(void) {
  /* A state from its first byte; its count equals Lua's; closing frees everything (ASan's
     leak check sees the metadata; the mappings go with the heap). */
  lua_State *L = cprof_newstate();
  CHECK(L != NULL, "cprof_newstate");
  luaL_openlibs(L);
  CHECK(luaL_dostring(L, program) == LUA_OK, "program: %s", lua_tostring(L, -1));
  cprof_mem_totals t;
  CHECK(cprof_mem_totals_of(L, &t) == 0, "totals");
  size_t count = (size_t)lua_gc(L, LUA_GCCOUNT, 0) * 1024 + (size_t)lua_gc(L, LUA_GCCOUNTB, 0);
  CHECK(t.lua_bytes == count && t.requested == count && t.foreign == 0, "count %zu vs %zu",
        t.lua_bytes, count);
  CHECK(t.held >= t.requested && t.footprint >= t.held && t.mapped >= t.footprint, "held/footprint/mapped");
  cprof_mem_cache rows[8];
  size_t nc = cprof_mem_caches_of(L, rows, 8);
  CHECK(nc > 8, "caches: %zu", nc);
  cprof_mem_type ty[LA_NSLOT];
  CHECK(cprof_mem_types_of(L, ty, LA_NSLOT) == LA_NSLOT && strcmp(ty[LA_TABLE].name, "table") == 0 &&
        ty[LA_TABLE].tag == LUA_TTABLE && ty[LA_TABLE].live > 0, "types");
  CHECK(!lalloc_check(lalloc_of(L)), "heap consistent");

  /* The limit: Lua raises "not enough memory", the state goes on. */
  lalloc_set_limit(lalloc_of(L), count + 200000);
  CHECK(luaL_dostring(L, "local t = {} for i = 1, 1e7 do t[i] = {} end") != LUA_OK, "limit hit");
  CHECK(strstr(lua_tostring(L, -1), "not enough memory") != NULL, "message: %s", lua_tostring(L, -1));
  lua_pop(L, 1);
  lua_gc(L, LUA_GCCOLLECT, 0);
  CHECK(luaL_dostring(L, "return 1 + 1") == LUA_OK, "the state goes on");
  lua_pop(L, 1);
  lalloc_set_limit(lalloc_of(L), 0);
  CHECK(!lalloc_check(lalloc_of(L)), "heap consistent after the limit");
  lua_close(L);

  /* Another state, not ours. */
  lua_State *D = luaL_newstate();
  CHECK(cprof_mem_totals_of(D, &t) == -1 && cprof_mem_caches_of(D, rows, 8) == 0 &&
        cprof_mem_types_of(D, ty, LA_NSLOT) == 0, "a state with another allocator");
  lua_close(D);

  /* The OS refusing from each step of lua_newstate on: NULL or a working state, no leak. */
  int made = 0;
  for (long f = 0; f < 12; f++) {
    lua_State *S = lalloc_newstate(f);
    if (!S) continue;
    made++;
    lalloc_fail_after(lalloc_of(S), -1);
    luaL_openlibs(S);
    CHECK(luaL_dostring(S, "return #string.rep('a', 100)") == LUA_OK, "state works");
    lua_close(S);
  }
  CHECK(made > 0, "some state was made");
  fault_after(0);
  CHECK(cprof_newstate() == NULL, "no heap: no state");
  fault_after(-1);

  /* Out of OS memory in the middle of a program: "not enough memory", then on. */
  L = cprof_newstate();
  luaL_openlibs(L);
  lalloc_fail_after(lalloc_of(L), 0);
  int st = luaL_dostring(L, "local t = {} for i = 1, 1e6 do t[i] = tostring(i) .. 'x' end");
  CHECK(st != LUA_OK, "refused by the OS");
  lua_pop(L, 1);
  lalloc_fail_after(lalloc_of(L), -1);
  lua_gc(L, LUA_GCCOLLECT, 0);
  CHECK(!lalloc_check(lalloc_of(L)), "consistent after the OS refused");
  CHECK(luaL_dostring(L, program) == LUA_OK, "and the program runs");
  lua_close(L);
}

/* The observer: told about each allocation and free, with the Lua type. */
typedef struct seen {
  long allocs, frees, tables;
  long long bytes;
} seen;
static void observer(void *ud, int ev, void *block, size_t size, int tag) {
  seen *s = ud;
  (void)block;
  if (ev == LALLOC_EV_ALLOC) {
    s->allocs++;
    s->bytes += (long long)size;
    if (tag == LUA_TTABLE) s->tables++;
  } else {
    s->frees++;
    s->bytes -= (long long)size;
    if (tag == LUA_TTABLE) s->tables--;
  }
}

static void test_observer_and_trace(void) {
  lua_State *L = cprof_newstate();
  luaL_openlibs(L);
  seen s = {0};
  lalloc *h = lalloc_of(L);
  size_t before = (size_t)lua_gc(L, LUA_GCCOUNT, 0) * 1024 + (size_t)lua_gc(L, LUA_GCCOUNTB, 0);
  lalloc_observe(h, observer, &s);
  CHECK(luaL_dostring(L, "keep = {} for i = 1, 1000 do keep[i] = {} end") == LUA_OK, "run");
  lalloc_observe(h, NULL, NULL);
  size_t after = (size_t)lua_gc(L, LUA_GCCOUNT, 0) * 1024 + (size_t)lua_gc(L, LUA_GCCOUNTB, 0);
  CHECK(s.bytes == (long long)after - (long long)before, "observer saw every byte: %lld vs %zd",
        s.bytes, (ssize_t)(after - before));
  CHECK(s.tables >= 1001, "observer saw the tables: %ld", s.tables);

  CHECK(lalloc_trace(h, "start", "table_56") == NULL, "trace start");
  CHECK(lalloc_trace(h, "start", "string_32") != NULL, "one cache at a time");
  CHECK(lalloc_trace(h, "start", "nonsense") != NULL && lalloc_trace(h, "start", "table_57") != NULL,
        "no such cache");
  CHECK(lalloc_trace(h, "bogus", "table_56") != NULL, "bad command");
  lalloc_fail_after(h, 0);
  const char *oom = lalloc_trace(h, "stop", "userdata_4096");
  lalloc_fail_after(h, -1);
  CHECK(oom && strcmp(oom, "out of memory") == 0, "a cache that cannot be made: %s", oom ? oom : "-");
  CHECK(luaL_dostring(L, "local function mk() return {} end\n"
                         "held = {} for i = 1, 300 do held[i] = mk() end\n"
                         "for i = 1, 300 do local _ = mk() end collectgarbage()") == LUA_OK,
        "traced run: %s", lua_tostring(L, -1));
  CHECK(lalloc_trace(h, "stop", "table_56") == NULL, "trace stop");
  uint64_t live = 0;
  int found = 0;
  for (size_t i = 0; i < lalloc_trace_nsites(h); i++) {
    const lalloc_site *site = lalloc_trace_site(h, i);
    live += site->live;
    if (site->depth >= 2 && site->f[0].line == 1 && strstr(site->f[0].src, "local function mk"))
      found += (int)site->live;
  }
  CHECK(live >= 300 && live < 320, "the 300 kept tables (and few others) are live: %llu",
        (unsigned long long)live);
  CHECK(found >= 300, "their site is mk: %d", found);
  CHECK(lalloc_trace_stacks(h), "stacks recorded");
  CHECK(lalloc_trace(h, "reset", "table_56") == NULL && lalloc_trace_cache(h) == NULL, "reset");
  /* Out of metadata while tracing: records dropped, the program unharmed. */
  CHECK(lalloc_trace(h, "start", "table_56") == NULL, "trace again");
  lalloc_fail_after(h, 0);
  int st = luaL_dostring(L, "local n = 0 for i = 1, 100 do local t = {} n = n + 1 end return n");
  lalloc_fail_after(h, -1);
  CHECK(st == LUA_OK || strstr(lua_tostring(L, -1), "not enough memory"), "run while failing");
  lua_settop(L, 0);
  CHECK(lalloc_trace_dropped(h) > 0, "dropped records counted");
  CHECK(lalloc_trace(h, "stop", "table_56") == NULL && lalloc_trace(h, "reset", "table_56") == NULL, "stop, reset");
  CHECK(!lalloc_check(h), "consistent");
  lua_close(L);
}

/* Several states, each with its own heap, in several threads at once. */
static void *thread_main(void *arg) {
  int *ok = arg;
  for (int round = 0; round < 3; round++) {
    lua_State *L = cprof_newstate();
    if (!L) return NULL;
    luaL_openlibs(L);
    int st = luaL_dostring(L, program);
    cprof_mem_totals t;
    size_t count = (size_t)lua_gc(L, LUA_GCCOUNT, 0) * 1024 + (size_t)lua_gc(L, LUA_GCCOUNTB, 0);
    if (st == LUA_OK && cprof_mem_totals_of(L, &t) == 0 && t.lua_bytes == count &&
        !lalloc_check(lalloc_of(L)))
      (*ok)++;
    lua_close(L);
  }
  return NULL;
}

static void test_threads(void) {
  enum { NT = 4 };
  pthread_t th[NT];
  int ok[NT] = {0};
  for (int i = 0; i < NT; i++) CHECK(pthread_create(&th[i], NULL, thread_main, &ok[i]) == 0, "thread");
  for (int i = 0; i < NT; i++) {
    pthread_join(th[i], NULL);
    CHECK(ok[i] == 3, "thread %d: %d of 3 states were right", i, ok[i]);
  }
}

int main(int argc, char **argv) {
  if (argc > 1) rng_state = strtoull(argv[1], NULL, 0) | 1;
  test_arena_static();
  test_arena_import(0);
  test_arena_import(1);
  test_arena_import(3);
  test_arena_meta_failures();
  test_chunkset_and_caches();
  test_lalloc_random(0);
  test_lalloc_random(1);
  test_lalloc_os_failures();
  test_states();
  test_observer_and_trace();
  test_threads();
  printf("test_arena: %d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
