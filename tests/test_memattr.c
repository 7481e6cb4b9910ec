/*
 * tests/test_memattr.c — memory attribution (mem/memattr.c) on a state with cprof's allocator,
 * with the node and the clock set by the test: exact counts, sizes, lifetimes and types per
 * node, slab objects (side tables) and large blocks (the map) alike; blocks born before it
 * started left out when Lua moves them; side tables of an earlier attribution not trusted,
 * dropped tables' numbers reused; more side tables than a page's map word has room to number;
 * a limit's failures under attribution; the lua_Alloc of attribution's own put in place and
 * taken back; and every allocation of its own made to fail in turn,
 * each failure counted in `lost` and nothing else changed.
 */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "ctest.h"
#include "mem/lalloc.h"
#include "mem/memattr.h"
#include "util/fault.h"

static uint32_t cur_node = 1;
static const uint32_t *const where = &cur_node;
static cprof_ticks clock_now;

static int run(lua_State *L, const char *code) {
  int ok = luaL_dostring(L, code) == LUA_OK;
  if (!ok) fprintf(stderr, "lua: %s\n", lua_tostring(L, -1));
  return ok;
}

static uint64_t live_of(const MemStat *s) { return memattr_allocs(s) - memattr_frees(s); }

/* Objects made at known times and freed at known times: exact lifetimes, sizes and types. */
static void test_exact(void) {
  lua_State *L = cprof_newstate();
  luaL_openlibs(L);
  /* Compiled before attribution starts, so that the parser's own blocks are not in it. */
  CHECK(run(L, "keep = {} for i = 1, 50 do keep[i] = false end "
               "function make() for i = 1, 50 do keep[i] = {} end end "
               "function drop() for i = 1, 50 do keep[i] = false end big = nil collectgarbage() end "
               "function large() big = string.rep('x', 20000) end big = false "
               "collectgarbage() collectgarbage('stop')"), "setup");
  MemAttr m = {0};
  clock_now = 100;
  lalloc_attr_start(&m, L, &where, &clock_now);
  CHECK(m.heap != NULL, "attribution runs on cprof's allocator");
  cur_node = 3;
  clock_now = 110;
  /* 50 tables of node 3 born at 10 ticks; a 20000-byte string (a large block) too */
  lua_getglobal(L, "make");
  CHECK(lua_pcall(L, 0, 0, 0) == LUA_OK, "make");
  cur_node = 6;
  lua_getglobal(L, "large");
  CHECK(lua_pcall(L, 0, 0, 0) == LUA_OK, "large");
  cur_node = 4;
  clock_now = 135;
  lua_getglobal(L, "drop");
  CHECK(lua_pcall(L, 0, 0, 0) == LUA_OK, "drop");
  lalloc_attr_stop(&m);
  const MemStat *s = memattr_of(&m, 3);
  CHECK(s != NULL, "node 3 was charged");
  if (s) {
    CHECK(s->type_allocs[LA_TABLE] == 50, "50 tables: %llu", (unsigned long long)s->type_allocs[LA_TABLE]);
    CHECK(s->type_frees[LA_TABLE] == 50, "50 tables freed: %llu", (unsigned long long)s->type_frees[LA_TABLE]);
    CHECK(memattr_allocs(s) == 50 && s->min == s->max, "nothing but the tables: %llu",
          (unsigned long long)memattr_allocs(s));
    CHECK(s->life_min == 25 && s->life_max == 25, "every block lived 25 ticks: %llu..%llu",
          (unsigned long long)s->life_min, (unsigned long long)s->life_max);
    CHECK(s->life_total == 25 * memattr_frees(s), "total lifetime");
    CHECK(s->first_alloc == 10 && s->last_free == 35, "times since the start: %lld, %lld",
          (long long)s->first_alloc, (long long)s->last_free);
    CHECK(s->bytes == 50 * s->min && s->freed == s->bytes, "bytes: %llu, freed %llu",
          (unsigned long long)s->bytes, (unsigned long long)s->freed);
  }
  const MemStat *g = memattr_of(&m, 6);
  CHECK(g && g->type_frees[LA_STRING] >= 1, "the large string, in the map, freed");
  CHECK(m.nblocks == 0, "no large block left in the map: %u", m.nblocks);
  CHECK(g && g->max == 20000 + 1 + 24, "its size: %llu", g ? (unsigned long long)g->max : 0ull);
  /* keep's array existed before: refilled with false it is not reallocated, and nothing of
     node 4 is live */
  const MemStat *f = memattr_of(&m, 4);
  CHECK(!f || live_of(f) == 0 || memattr_allocs(f) == memattr_frees(f),
        "node 4 holds nothing it did not free");
  CHECK(m.lost == 0, "nothing lost");
  memattr_free(&m);
  lua_close(L);
}

/* A block born before attribution that Lua moves stays out of it. */
static void test_moves(void) {
  lua_State *L = cprof_newstate();
  luaL_openlibs(L);
  CHECK(run(L, "old = {1} function grow() for i = 2, 1000 do old[i] = i end end "
               "collectgarbage('stop')"), "setup");
  MemAttr m = {0};
  cur_node = 2;
  lalloc_attr_start(&m, L, &where, &clock_now);
  lua_getglobal(L, "grow");
  CHECK(lua_pcall(L, 0, 0, 0) == LUA_OK, "grow");
  lalloc_attr_stop(&m);
  const MemStat *s = memattr_of(&m, 2);
  CHECK(!s || s->type_allocs[LA_RAW] == 0, "the growth of an older table is not charged: %llu",
        s ? (unsigned long long)s->type_allocs[LA_RAW] : 0ull);
  memattr_free(&m);
  lua_close(L);
}

/* A second attribution on the same state: the slabs still carry the side-table numbers of the
   first one (stopped, its tables kept), which it must not trust; the first one's blocks freed
   meanwhile are no one's; tables dropped when their slab's last attributed object goes, and
   their numbers reused, with exact counts throughout. */
static int call(lua_State *L, const char *fn) {
  lua_getglobal(L, fn);
  return lua_pcall(L, 0, 0, 0) == LUA_OK;
}

static void test_stale_tables(void) {
  lua_State *L = cprof_newstate();
  luaL_openlibs(L);
  CHECK(run(L, "keep = {} mine = false "
               "function make_a() for i = 1, 100 do keep[i] = {} end end "
               "function drop_a() keep = false collectgarbage() end "
               "function make_b() mine = {} for i = 1, 100 do mine[i] = {} end end "
               "function drop_b() mine = false collectgarbage() end "
               "collectgarbage() collectgarbage('stop')"), "setup");
  MemAttr a = {0}, b = {0};
  cur_node = 7;
  lalloc_attr_start(&a, L, &where, &clock_now);
  CHECK(call(L, "make_a"), "make_a");
  lalloc_attr_stop(&a);
  cur_node = 8;
  lalloc_attr_start(&b, L, &where, &clock_now);
  CHECK(call(L, "drop_a") && call(L, "make_b") && call(L, "drop_b") && call(L, "make_b"), "b");
  lalloc_attr_stop(&b);
  const MemStat *sa = memattr_of(&a, 7), *sb = memattr_of(&b, 8);
  CHECK(sa && sa->type_allocs[LA_TABLE] == 100 && sa->type_frees[LA_TABLE] == 0,
        "the first attribution saw its 100 tables and none freed");
  CHECK(sb && sb->type_allocs[LA_TABLE] == 202 && sb->type_frees[LA_TABLE] == 101,
        "the second: 2 x 101 tables made, the first 101 freed: %llu, %llu",
        sb ? (unsigned long long)sb->type_allocs[LA_TABLE] : 0ull,
        sb ? (unsigned long long)sb->type_frees[LA_TABLE] : 0ull);
  CHECK(a.lost == 0 && b.lost == 0, "nothing lost");
  memattr_free(&a);
  memattr_free(&b);
  lua_close(L);
}

/* More slabs with attributed objects at once than the map words can number (MAP_ATTR_FAR):
   the later tables are found through the slab descriptor, every free is credited, and every
   table is dropped. Blocks of 120 bytes, 33 to a one-page slab, straight from the lua_Alloc. */
static void test_far_numbers(void) {
  lua_State *L = cprof_newstate();
  void *ud;
  lua_Alloc f = lua_getallocf(L, &ud);
  enum { SIZE = 120, PER_SLAB = 33, NSLABS = MAP_ATTR_FAR + 100, N = PER_SLAB * NSLABS };
  void **blocks = malloc(N * sizeof *blocks);
  CHECK(blocks != NULL, "room for the blocks");
  if (!blocks) {
    lua_close(L);
    return;
  }
  MemAttr m = {0};
  cur_node = 9;
  clock_now = 0;
  lalloc_attr_start(&m, L, &where, &clock_now);
  size_t made = 0;
  while (made < N && (blocks[made] = f(ud, NULL, 0, SIZE)) != NULL) made++;
  CHECK(made == N, "%zu blocks made", made);
  CHECK(m.ntabs > MAP_ATTR_FAR + 1, "side tables numbered past the map words' room: %u", m.ntabs);
  clock_now = 7;
  for (size_t i = 0; i < made; i++) f(ud, blocks[i], SIZE, 0);
  lalloc_attr_stop(&m);
  const MemStat *s = memattr_of(&m, 9);
  CHECK(s && memattr_allocs(s) == made && memattr_frees(s) == made &&
            s->type_frees[LA_RAW] == made,
        "every block charged and credited: %llu, %llu",
        s ? (unsigned long long)memattr_allocs(s) : 0ull,
        s ? (unsigned long long)memattr_frees(s) : 0ull);
  CHECK(s && s->life_min == 7 && s->life_max == 7, "every block lived 7 ticks");
  CHECK(m.nfree == m.ntabs - 1, "every table dropped: %u free of %u", m.nfree, m.ntabs);
  CHECK(m.lost == 0, "nothing lost");
  memattr_free(&m);
  free(blocks);
  lua_close(L);
}

/* A state on cprof's allocator with the standard libraries: its heap and its lua_Alloc. */
static lua_State *new_state(lalloc **h, lua_Alloc *f, void **ud) {
  lua_State *L = cprof_newstate();
  luaL_openlibs(L);
  *h = lalloc_of(L);
  *f = lua_getallocf(L, ud);
  return L;
}

/* A limit under attribution alone (whose reallocs have a path of their own): a realloc past
   it fails, leaving the block and every count as they were; one within it moves the block, a
   free and an allocation of the same node. Through the heap's lua_Alloc, as Lua calls it. */
static void test_limit(void) {
  lalloc *h;
  void *ud;
  lua_Alloc f;
  lua_State *L = new_state(&h, &f, &ud);
  MemAttr m = {0};
  cur_node = 2;
  clock_now = 0;
  lalloc_attr_start(&m, L, &where, &clock_now);
  char *p = f(ud, NULL, LUA_TTABLE, 40);
  CHECK(p != NULL, "a block");
  memset(p, 7, 40);
  cprof_mem_totals t;
  CHECK(cprof_mem_totals_of(L, &t) == 0, "totals");
  lalloc_set_limit(h, t.lua_bytes + 100);
  clock_now = 5;
  CHECK(f(ud, p, 40, 4000) == NULL, "a growth past the limit fails");
  const MemStat *s = memattr_of(&m, 2);
  CHECK(s && memattr_allocs(s) == 1 && memattr_frees(s) == 0 && s->bytes == 40,
        "counts unchanged: %llu, %llu", s ? (unsigned long long)memattr_allocs(s) : 0ull,
        s ? (unsigned long long)memattr_frees(s) : 0ull);
  char *q = f(ud, p, 40, 90);
  CHECK(q != NULL && q != p && q[39] == 7, "a growth within it moves the block");
  s = memattr_of(&m, 2);
  CHECK(memattr_allocs(s) == 2 && memattr_frees(s) == 1 && s->bytes == 130 && s->freed == 40 &&
            s->type_allocs[LA_TABLE] == 2 && s->life_max == 5,
        "a free and an allocation: %llu, %llu", (unsigned long long)memattr_allocs(s),
        (unsigned long long)memattr_frees(s));
  f(ud, q, 90, 0);
  CHECK(memattr_frees(s) == 2 && s->freed == 130, "freed");
  lalloc_set_limit(h, 0);
  lalloc_attr_stop(&m);
  CHECK(lalloc_check(h) == NULL, "the heap's invariants");
  memattr_free(&m);
  lua_close(L);
}

/* A program's own lua_Alloc in front of cprof's (it forwards to the one it found). */
static lua_Alloc wrapped_f;
static void *wrapped_ud;
static void *wrapper(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  return wrapped_f(wrapped_ud, ptr, osize, nsize);
}

/* While attributing, the state's lua_Alloc is attribution's own (lalloc_of still finds the heap)
   and lalloc_f is back when it stops; that function kept by a program still serves it after the
   stop, charging nothing; a lua_Alloc the program put in front meanwhile stays there. */
static void test_allocf(void) {
  lalloc *h;
  void *ud;
  lua_Alloc plain;
  lua_State *L = new_state(&h, &plain, &ud);
  CHECK(plain == lalloc_f && ud == h, "cprof's lua_Alloc");
  MemAttr m = {0};
  cur_node = 4;
  lalloc_attr_start(&m, L, &where, &clock_now);
  lua_Alloc during = lua_getallocf(L, &ud);
  CHECK(during != lalloc_f && ud == h && lalloc_of(L) == h, "attribution's own, the same heap");
  char *p = during(ud, NULL, LUA_TTABLE, 40);
  CHECK(p != NULL && memattr_of(&m, 4) && memattr_allocs(memattr_of(&m, 4)) == 1,
        "an allocation charged");
  lalloc_attr_stop(&m);
  CHECK(lua_getallocf(L, &ud) == lalloc_f && ud == h, "lalloc_f back");
  char *q = during(ud, NULL, LUA_TTABLE, 40);
  CHECK(q != NULL, "the kept function still allocates");
  during(ud, p, 40, 0);
  during(ud, q, 40, 0);
  const MemStat *s = memattr_of(&m, 4);
  CHECK(memattr_allocs(s) == 1 && memattr_frees(s) == 0,
        "nothing charged or credited after the stop: %llu, %llu",
        (unsigned long long)memattr_allocs(s), (unsigned long long)memattr_frees(s));
  CHECK(run(L, "local t = {} for i = 1, 1000 do t[i] = {i} end"), "the state runs");
  CHECK(lalloc_check(h) == NULL, "the heap's invariants");
  memattr_free(&m);

  MemAttr m2 = {0};
  lalloc_attr_start(&m2, L, &where, &clock_now);
  wrapped_f = lua_getallocf(L, &wrapped_ud);
  lua_setallocf(L, wrapper, NULL);
  lalloc_attr_stop(&m2);
  CHECK(lua_getallocf(L, &ud) == wrapper, "the program's lua_Alloc kept");
  CHECK(run(L, "local t = {} for i = 1, 1000 do t[i] = {i} end"), "the state runs through it");
  memattr_free(&m2);
  lua_close(L);
}

/* Every allocation attribution makes fails in turn: the program's result is the same, the
   failure is counted, and (under ASan) nothing leaks. */
static void test_out_of_memory(void) {
  int lost_seen = 0, clean_seen = 0;
  for (long n = 0; n < 2000 && !clean_seen; n++) {
    lua_State *L = cprof_newstate();
    luaL_openlibs(L);
    CHECK(run(L, "keep = {}"), "setup");
    MemAttr m = {0};
    cur_node = 5 + (uint32_t)n % 7 * 700;  /* far nodes: the node records grow too */
    fault_after(n);
    lalloc_attr_start(&m, L, &where, &clock_now);
    int ok = run(L, "local s = 0 for i = 1, 200 do keep[i] = { string.rep('y', 4000 + i * 3) } "
                    "s = s + #keep[i][1] end result = s keep = nil collectgarbage()");
    fault_after(-1);
    lalloc_attr_stop(&m);
    CHECK(ok, "the program runs whatever attribution's memory does");
    lua_getglobal(L, "result");
    CHECK(lua_tointeger(L, -1) == 200 * 4000 + 3 * 200 * 201 / 2, "the same result");
    if (m.lost) lost_seen = 1;
    else clean_seen = 1;
    memattr_free(&m);
    lua_close(L);
  }
  CHECK(lost_seen, "some runs lost allocations");
  CHECK(clean_seen, "a late enough failure point loses nothing");
}

int main(int argc, char **argv) {
  ctest_seed(argc, argv);
  test_exact();
  test_moves();
  test_stale_tables();
  test_far_numbers();
  test_limit();
  test_allocf();
  test_out_of_memory();
  return ctest_done("test_memattr");
}
