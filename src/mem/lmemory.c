/* cprof.core.memory: cprof's allocator for a running state (install, stats, limit, trace).
   lua/cprof/memory.lua builds the reports on top. See docs/MEMORY.md. */
#include <string.h>

#include <lauxlib.h>

#include "mem/lalloc.h"
#include "mem/lmemory.h"
#include "util/compat.h"

static lalloc *heap(lua_State *L) {
  lalloc *h = lalloc_of(L);
  if (!h) luaL_error(L, "cprof.memory: not installed (call cprof.memory.install() first)");
  return h;
}

static int l_install(lua_State *L) {
  const char *err = NULL;
  if (lalloc_of(L)) {
    lua_pushboolean(L, 0);
    lua_pushliteral(L, "already installed");
    return 2;
  }
  if (!lalloc_install(L, &err)) return luaL_error(L, "cprof.memory.install: %s", err);
  lua_pushboolean(L, 1);
  return 1;
}

static int l_installed(lua_State *L) {
  lua_pushboolean(L, lalloc_of(L) != NULL);
  return 1;
}

/* Integers as integers where Lua has them (counts read better without ".0"). */
static void seti(lua_State *L, const char *k, uint64_t v) {
#if LUA_VERSION_NUM >= 503
  lua_pushinteger(L, (lua_Integer)v);
#else
  lua_pushnumber(L, (lua_Number)v);
#endif
  lua_setfield(L, -2, k);
}

static void sets(lua_State *L, const char *k, const char *v) {
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

/* Everything is read after the one allocation that holds the cache rows and before the first
   table is made: making tables allocates, and the numbers must describe one moment. */
static int l_stats(lua_State *L) {
  lalloc *h = heap(L);
  size_t cap = lalloc_caches(h, NULL, 0) + 8, n;
  cprof_mem_cache *rows;
  for (;;) {
    rows = lua_newuserdata(L, cap * sizeof *rows);  /* may itself make a cache: hence + 8 */
    n = lalloc_caches(h, rows, cap);
    if (n <= cap) break;
    lua_pop(L, 1);
    cap = n + 8;
  }
  int ud = lua_gettop(L);
  cprof_mem_totals t;
  cprof_mem_type types[LA_NSLOT];
  arena_stats arenas[LALLOC_NARENAS];
  lalloc_totals(h, &t);
  lalloc_types(h, types, LA_NSLOT);
  for (int i = 0; i < LALLOC_NARENAS; i++) arena_get_stats(lalloc_arena(h, i), &arenas[i]);

  lua_createtable(L, 0, 24);
  seti(L, "lua_bytes", t.lua_bytes);
  seti(L, "requested", t.requested);
  seti(L, "foreign", t.foreign);
  seti(L, "held", t.held);
  seti(L, "footprint", t.footprint);
  seti(L, "mapped", t.mapped);
  seti(L, "peak_mapped", t.peak_mapped);
  seti(L, "metadata", t.metadata);
  seti(L, "live", t.live);
  seti(L, "allocs", t.allocs);
  seti(L, "failures", t.failures);
  seti(L, "limit_failures", t.limit_failures);
  seti(L, "foreign_frees", t.foreign_frees);
  if (t.limit) seti(L, "limit", t.limit);

  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    const cprof_mem_cache *c = &rows[i];
    lua_createtable(L, 0, 14);
    sets(L, "name", c->name);
    sets(L, "type", c->type);
    sets(L, "source", "pages");
    seti(L, "objsize", c->objsize);
    seti(L, "slab_size", c->slab_size);
    seti(L, "objects", c->objects);
    seti(L, "live", c->live);
    seti(L, "magazine", c->magazine);
    seti(L, "allocs", c->allocs_ever);
    seti(L, "requested", c->requested);
    seti(L, "slabs", c->slabs);
    seti(L, "partial_slabs", c->partial_slabs);
    seti(L, "total", c->objects * c->objsize);
    seti(L, "alloc", c->live * c->objsize);
    lua_rawseti(L, -2, (int)i + 1);
  }
  lua_setfield(L, -2, "caches");

  lua_createtable(L, LA_NSLOT, 0);
  for (int i = 0; i < LA_NSLOT; i++) {
    const cprof_mem_type *ty = &types[i];
    lua_createtable(L, 0, 9);
    sets(L, "name", ty->name);
    lua_pushinteger(L, ty->tag);
    lua_setfield(L, -2, "tag");
    seti(L, "live", ty->live);
    seti(L, "bytes", ty->bytes);
    seti(L, "held", ty->held);
    seti(L, "allocs", ty->allocs_ever);
    seti(L, "large_live", ty->large_live);
    seti(L, "large_allocs", ty->large_allocs);
    seti(L, "large_held", ty->large_held);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "types");

  lua_createtable(L, LALLOC_NARENAS, 0);
  for (int i = 0; i < LALLOC_NARENAS; i++) {
    const arena_stats *a = &arenas[i];
    lua_createtable(L, 0, 29);
    sets(L, "name", a->name);
    sets(L, "source", a->source);
    seti(L, "quantum", a->quantum);
    seti(L, "total", a->amt_total);
    seti(L, "alloc", a->amt_alloc);
    seti(L, "free", a->amt_free);
    seti(L, "peak_total", a->peak_total);
    seti(L, "imported", a->amt_imported);
    seti(L, "nr_allocs", a->nr_allocs);
    seti(L, "nr_free_segs", a->nr_free_segs);
    seti(L, "nr_spans", a->nr_spans);
    seti(L, "nr_imports", a->nr_imported_spans);
    seti(L, "nr_empty", a->nr_empty);
    seti(L, "allocs", a->allocs_ever);
    seti(L, "frees", a->frees_ever);
    seti(L, "imports", a->imports_ever);
    seti(L, "qcache_max", a->qcache_max);
    seti(L, "qcached", a->qcached);
    seti(L, "qcached_bytes", a->qcached_bytes);
    seti(L, "qcache_allocs", a->qcache_allocs);
    seti(L, "qcache_frees", a->qcache_frees);
    seti(L, "releases", a->releases_ever);
    seti(L, "import_failures", a->import_failures);
    seti(L, "hash_size", a->hash_size);
    seti(L, "hash_empty", a->hash_empty);
    seti(L, "hash_longest", a->hash_longest);
    seti(L, "meta", a->meta);
    lua_createtable(L, 0, 4);
    for (int j = 0; j < ARENA_NFREE; j++) {
      if (!a->free_lists[j]) continue;
      lua_pushinteger(L, (lua_Integer)a->free_lists[j]);
      lua_rawseti(L, -2, j);
    }
    lua_setfield(L, -2, "free_lists");
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "arenas");
  lua_remove(L, ud);
  return 1;
}

/* Lua's count, cprof's part of it and the replaced allocator's part, without allocating (so
   that they can be compared with collectgarbage("count") exactly). */
static int l_bytes(lua_State *L) {
  cprof_mem_totals t;
  lalloc_totals(heap(L), &t);
  lua_pushinteger(L, (lua_Integer)t.lua_bytes);
  lua_pushinteger(L, (lua_Integer)t.requested);
  lua_pushinteger(L, (lua_Integer)t.foreign);
  return 3;
}

/* live objects, live bytes, allocations ever of one Lua type ("table", ...), without
   allocating. */
static int l_type(lua_State *L) {
  lalloc *h = heap(L);
  const char *name = luaL_checkstring(L, 1);
  cprof_mem_type rows[LA_NSLOT];
  lalloc_types(h, rows, LA_NSLOT);
  for (int i = 0; i < LA_NSLOT; i++) {
    if (strcmp(rows[i].name, name) != 0) continue;
    lua_pushinteger(L, (lua_Integer)rows[i].live);
    lua_pushinteger(L, (lua_Integer)rows[i].bytes);
    lua_pushinteger(L, (lua_Integer)rows[i].allocs_ever);
    return 3;
  }
  return luaL_argerror(L, 1, "a Lua type: raw, string, table, function, userdata, thread, upvalue, proto or other");
}

static int l_limit(lua_State *L) {
  lalloc *h = heap(L);
  size_t old = lalloc_limit(h);
  size_t lim = 0;
  if (!lua_isnoneornil(L, 1)) {
    lua_Number n = luaL_checknumber(L, 1);
    if (!(n >= 1) || n != n || n >= 9.2e18)
      return luaL_argerror(L, 1, "a number of bytes from 1 up, or nil for no limit");
    lim = (size_t)n;
  }
  lalloc_set_limit(h, lim);
  if (old) lua_pushinteger(L, (lua_Integer)old);
  else lua_pushnil(L);
  return 1;
}

static int l_trace(lua_State *L) {
  lalloc *h = heap(L);
  const char *cmd = luaL_checkstring(L, 1);
  const char *name = luaL_checkstring(L, 2);
  const char *err = lalloc_trace(h, cmd, name);
  if (err) return luaL_error(L, "cprof.memory.trace(%s, %s): %s", cmd, name, err);
  return 0;
}

/* The trace as data: { cache=, on=, stacks=, dropped=, sites = { {live=, bytes=, allocs=,
   frames = { {src=, line=, defined=}, ... }}, ... } }, or nil when no cache is traced. */
static int l_trace_data(lua_State *L) {
  lalloc *h = heap(L);
  const char *name = lalloc_trace_cache(h);
  if (!name) {
    lua_pushnil(L);
    return 1;
  }
  /* Frames point at interned strings the trace owns; new allocations while the table is built
     may add sites (when the traced cache is a table cache) but never move these strings.
     Sites are copied one at a time by index, so a reallocation of the site array is harmless. */
  size_t n = lalloc_trace_nsites(h);
  lua_createtable(L, 0, 5);
  sets(L, "cache", name);
  lua_pushboolean(L, lalloc_trace_on(h));
  lua_setfield(L, -2, "on");
  lua_pushboolean(L, lalloc_trace_stacks(h));
  lua_setfield(L, -2, "stacks");
  seti(L, "dropped", lalloc_trace_dropped(h));
  lua_createtable(L, (int)n, 0);
  int k = 0;
  for (size_t i = 0; i < n; i++) {
    lalloc_site s = *lalloc_trace_site(h, i);
    if (s.live == 0) continue;
    lua_createtable(L, 0, 4);
    seti(L, "live", s.live);
    seti(L, "bytes", s.bytes);
    seti(L, "allocs", s.allocs);
    lua_createtable(L, (int)s.depth, 0);
    for (uint32_t j = 0; j < s.depth; j++) {
      lua_createtable(L, 0, 3);
      sets(L, "src", s.f[j].src);
      lua_pushinteger(L, s.f[j].line);
      lua_setfield(L, -2, "line");
      lua_pushinteger(L, s.f[j].defined);
      lua_setfield(L, -2, "defined");
      lua_rawseti(L, -2, (int)j + 1);
    }
    lua_setfield(L, -2, "frames");
    lua_rawseti(L, -2, ++k);
  }
  lua_setfield(L, -2, "sites");
  return 1;
}

static int l_check(lua_State *L) {
  const char *err = lalloc_check(heap(L));
  if (err) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int l_reap(lua_State *L) {
  lalloc_reap(heap(L));
  return 0;
}

/* Testing: after n more OS mappings or metadata allocations, they fail (n < 0: never). */
static int l_fail_after(lua_State *L) {
  lalloc_fail_after(heap(L), (long)luaL_optinteger(L, 1, -1));
  return 0;
}

static int l_uninstall(lua_State *L) {
  return luaL_error(L, "cprof.memory.uninstall: not possible: the blocks cprof's allocator made "
                       "are still in use by the state, and only it can free them");
}

void lmemory_register(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"install", l_install},       {"installed", l_installed}, {"stats", l_stats},
    {"bytes", l_bytes},           {"type", l_type},
    {"limit", l_limit},           {"trace", l_trace},         {"trace_data", l_trace_data},
    {"check", l_check},           {"reap", l_reap},           {"fail_after", l_fail_after},
    {"uninstall", l_uninstall},   {NULL, NULL}};
  lua_createtable(L, 0, 10);
  luaL_setfuncs(L, fns, 0);
  lua_setfield(L, -2, "memory");
}
