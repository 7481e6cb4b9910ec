/*
 * tests/test_arena.c — unit tests of the arenas, the chunks and the slab caches
 * (src/mem/arena.c, src/mem/chunk.c, src/mem/slab.c), run by `make ctest` (part of `make test`)
 * both as is and under AddressSanitizer + UBSan.
 *
 * Random sequences of operations are checked against shadow models: for an arena, the set of
 * allocated ranges (disjoint, inside the spans, and an allocation fails exactly when no free
 * gap is large enough, since free segments coalesce); for caches, every live object filled with
 * a pattern of its own that must be intact when it is freed. After each step the arena's own
 * invariant check (arena_check) must pass. Every failure path is walked by making the OS or the
 * metadata allocation fail at each step.
 *
 *   test_arena [seed]      exit status 0 when everything passed
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctest.h"
#include "mem/arena.h"
#include "mem/slab.h"

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
  /* Freed slabs of 1 to 4 pages wait in the page arena's quantum caches until flushed. */
  CHECK(cs.pages.amt_alloc_segs == cs.pages.qcached_bytes, "only cached segments are allocated");
  arena_qcache_flush(&cs.pages);
  CHECK(!arena_check(&cs.pages), "arena after the flush");
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

/* Quantum caches: a freed segment of 1 to 4 quanta comes back at the next request of its
   size; a request that finds no free segment empties the caches first; the stats count them. */
static void test_qcache(void) {
  arena_os os;
  arena_os_init(&os, 4096);
  arena a;
  arena_params p = {.name = "qcache", .quantum = 64, .os = &os, .qcache_max = 64 * 100};
  CHECK(arena_init(&a, &p) == 0, "init");
  CHECK(a.qcache_max == 64 * ARENA_QCACHES, "qcache_max capped: %zu", a.qcache_max);
  CHECK(arena_add_span(&a, 0x100000, 64 * 16) == 0, "span");
  uintptr_t x = arena_alloc(&a, 64 * 2), y = arena_alloc(&a, 64 * 2);
  CHECK(x && y && arena_free(&a, x, 64 * 2) == 0, "alloc, free");
  CHECK(a.qcached_bytes == 128 && a.amt_alloc_segs == 256, "cached, still allocated");
  CHECK(arena_alloc(&a, 64 * 2) == x, "the cached segment comes back");
  CHECK(a.q_allocs == 1 && a.q_frees == 1 && a.qcached_bytes == 0, "counted");
  CHECK(arena_free(&a, x + 64, 64 * 2) == -1, "a segment that is not allocated is refused");
  /* Fill the caches with every segment, then ask for one larger than any of them. */
  CHECK(arena_free(&a, x, 128) == 0 && arena_free(&a, y, 128) == 0, "free both");
  uintptr_t parts[12];
  int n = 0;
  for (; n < 12; n++) {
    parts[n] = arena_alloc(&a, 64);
    if (!parts[n]) break;
  }
  CHECK(n == 12, "the rest of the span in single quanta: %d", n);
  for (int i = 0; i < 12; i++) arena_free(&a, parts[i], 64);
  CHECK(!arena_check(&a), "arena with full caches: %s", arena_check(&a));
  arena_stats st;
  arena_get_stats(&a, &st);
  CHECK(st.qcached == ARENA_QDEPTH + 2 && st.qcache_max == 256, "stats: %zu cached", st.qcached);
  uintptr_t big = arena_alloc(&a, 64 * 16);
  CHECK(big == 0x100000, "the whole span, after the caches were emptied");
  CHECK(a.qcached_bytes == 0 && !arena_check(&a), "emptied");
  arena_destroy(&a);
}

int main(int argc, char **argv) {
  ctest_seed(argc, argv);
  test_arena_static();
  test_arena_import(0);
  test_arena_import(1);
  test_arena_import(3);
  test_arena_meta_failures();
  test_chunkset_and_caches();
  test_qcache();
  return ctest_done("test_arena");
}
