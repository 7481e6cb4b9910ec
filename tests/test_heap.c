/*
 * tests/test_heap.c — unit tests of cprof's lua_Alloc (src/mem/lalloc*.c), run by `make ctest`
 * (part of `make test`) both as is and under AddressSanitizer + UBSan: random sequences of
 * allocations, reallocations and frees of every Lua type and size (small, large, huge), with and
 * without a replaced allocator's blocks, each live block filled with a pattern of its own that
 * must be intact when it is freed or moved, and the heap's invariant check (lalloc_check) after
 * each step; every OS and metadata failure; whole Lua states (cprof_newstate), alone and in
 * several threads at once; memory attribution's events and the trace of one cache.
 *
 *   test_heap [seed]      exit status 0 when everything passed
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "cprof.h"
#include "ctest.h"
#include "mem/lalloc.h"
#include "mem/memattr.h"
#include "util/fault.h"

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

/* Memory attribution told of each allocation and free by the heap (lalloc_observe, which
   lalloc_attr_start calls), every block charged to node 1. */
static const uint32_t node_one = 1;
static const uint32_t *const node_at = &node_one;

static void test_observer_and_trace(void) {
  lua_State *L = cprof_newstate();
  luaL_openlibs(L);
  lalloc *h = lalloc_of(L);
  /* No collection: the blocks born before attribution that Lua frees or moves meanwhile (not
     charged) could only make Lua's count grow by less than what was charged. */
  lua_gc(L, LUA_GCSTOP, 0);
  size_t before = (size_t)lua_gc(L, LUA_GCCOUNT, 0) * 1024 + (size_t)lua_gc(L, LUA_GCCOUNTB, 0);
  MemAttr m = {0};
  cprof_ticks now = 0;
  lalloc_attr_start(&m, L, &node_at, &now);
  CHECK(m.heap == h, "attribution observes the heap");
  CHECK(luaL_dostring(L, "keep = {} for i = 1, 1000 do keep[i] = {} end") == LUA_OK, "run");
  lalloc_attr_stop(&m);
  size_t after = (size_t)lua_gc(L, LUA_GCCOUNT, 0) * 1024 + (size_t)lua_gc(L, LUA_GCCOUNTB, 0);
  const MemStat *ms = memattr_of(&m, 1);
  CHECK(ms && m.lost == 0, "everything charged");
  if (ms) {
    CHECK(ms->type_allocs[LA_TABLE] - ms->type_frees[LA_TABLE] >= 1001, "the tables, live: %llu",
          (unsigned long long)(ms->type_allocs[LA_TABLE] - ms->type_frees[LA_TABLE]));
    CHECK(ms->bytes - ms->freed <= after - before, "charged %llu live bytes of %zu grown",
          (unsigned long long)(ms->bytes - ms->freed), after - before);
  }
  memattr_free(&m);
  lua_gc(L, LUA_GCRESTART, 0);

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
  ctest_seed(argc, argv);
  test_lalloc_random(0);
  test_lalloc_random(1);
  test_lalloc_os_failures();
  test_states();
  test_observer_and_trace();
  test_threads();
  return ctest_done("test_heap");
}
