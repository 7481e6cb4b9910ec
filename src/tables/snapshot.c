/* Building Lua tables from the profiler's arrays. Runs once per report or dump, never per call. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "mem/lalloc.h"
#include "tables/snapshot.h"
#include "util/compat.h"
#include "util/fault.h"
#include "util/symbol.h"

static const char *const KIND_NAMES[] = {"Lua", "main", "C"};

static void set_stat(lua_State *L, const Stat *s, double unit) {
  lua_pushinteger(L, (lua_Integer)s->calls);
  lua_setfield(L, -2, "ncalls");
  lua_pushinteger(L, (lua_Integer)(s->calls - s->rcalls));
  lua_setfield(L, -2, "pcalls");
  lua_pushnumber(L, (lua_Number)s->it * unit);
  lua_setfield(L, -2, "tottime");
  lua_pushnumber(L, (lua_Number)s->tt * unit);
  lua_setfield(L, -2, "cumtime");
}

static void set_int(lua_State *L, const char *k, uint64_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
}

/* A function's name; a Lua function that neither its definition, a call site nor a global
   named is "<anon>"; a C function is named by what stays the same from one run to the next
   (docs/SEMANTICS.md, "Names"): LuaJIT's number of a built-in, else its symbol, or its library
   and offset; its address only when the dynamic linker knows none of these. */
static void push_name(lua_State *L, const Entry *e) {
  char sym[256];
  int found = e->kind == KIND_C && !e->name && !e->builtin && e->no_return == NR_NONE
                  ? sym_name(e->cfunc, sym, sizeof sym)
                  : -1;
  if (e->name) lua_pushstring(L, e->name);
  else if (e->kind != KIND_C) lua_pushliteral(L, "<anon>");
  else if (e->builtin) lua_pushfstring(L, "builtin#%d", (int)e->builtin);
  else if (found == SYM_EXACT) lua_pushstring(L, sym);
  else if (found == SYM_OFFSET) lua_pushfstring(L, "C function %s", sym);
  else lua_pushfstring(L, "C function %p", e->cfunc);
}

/* Whether the fast path ran, and why not (docs/SEMANTICS.md): into the table on top. */
static void set_fast_path(lua_State *L, const Profiler *P) {
  if (!P->fast_state) return;
  lua_pushstring(L, P->fast_state);
  lua_setfield(L, -2, "fast_path");
  if (P->fast_why) {
    lua_pushstring(L, P->fast_why);
    lua_setfield(L, -2, "fast_path_why");
  }
}

/* cprof's own memory, by part, and the counts it grows with: the memory specs read it. */
static void push_core(lua_State *L, const Profiler *P) {
  size_t fns = fn_bytes(&P->fns), tree = tree_bytes(&P->tree), stacks = stk_bytes(&P->stacks);
  size_t lines = (size_t)P->lines.crecs * sizeof *P->lines.recs + idxmap_bytes(&P->lines.by_line);
  lua_createtable(L, 0, 10);
  set_int(L, "bytes", fns + tree + stacks + lines);
  set_int(L, "function_bytes", fns);
  set_int(L, "tree_bytes", tree);
  set_int(L, "stack_bytes", stacks);
  set_int(L, "line_bytes", lines);
  set_int(L, "functions", P->fns.nentries);
  set_int(L, "edges", P->tree.nedges);
  set_int(L, "nodes", P->tree.nnodes);
  set_int(L, "stacks", P->stacks.n);
  set_int(L, "reused_keys", P->fns.reused);
  lua_setfield(L, -2, "core");
}

/* Memory per function: its nodes' numbers summed. Sets alloc_count, alloc_bytes, free_count,
   free_bytes, live_bytes, min_size and max_size on the entries at row[] of the table on top. */
typedef struct EntryMemory {
  uint64_t allocs, frees, bytes, freed, min, max;
} EntryMemory;

static int push_entry_memory(lua_State *L, const Profiler *P, const uint32_t *row) {
  EntryMemory *sum = fault_calloc((size_t)P->fns.nentries + 1, sizeof *sum);
  if (!sum) return -1;
  for (uint32_t k = 0; k < P->tree.nnodes; k++) {
    const MemStat *m = memattr_of(&P->mem, k);
    EntryMemory *s = &sum[P->tree.nodes[k].entry];
    if (!m || m->bytes == 0) continue;
    if (s->allocs == 0 || m->min < s->min) s->min = m->min;
    if (m->max > s->max) s->max = m->max;
    s->allocs += memattr_allocs(m);
    s->frees += memattr_frees(m);
    s->bytes += m->bytes;
    s->freed += m->freed;
  }
  for (uint32_t i = 0; i < P->fns.nentries; i++) {
    if (!row[i]) continue;
    const EntryMemory *s = &sum[i];
    lua_rawgeti(L, -1, (int)row[i]);
    set_int(L, "alloc_count", s->allocs);
    set_int(L, "alloc_bytes", s->bytes);
    set_int(L, "free_count", s->frees);
    set_int(L, "free_bytes", s->freed);
    set_int(L, "live_bytes", s->bytes - s->freed);
    set_int(L, "min_size", s->min);
    set_int(L, "max_size", s->max);
    lua_pop(L, 1);
  }
  free(sum);
  return 0;
}

int snap_push_stats(lua_State *L, const Profiler *P) {
  double unit = P->clock.timer.unit;
  uint32_t *row = fault_malloc(((size_t)P->fns.nentries + 1) * sizeof *row);
  if (!row) return -1;
  lua_createtable(L, 0, 4);
  lua_pushstring(L, P->clock.timer.name);
  lua_setfield(L, -2, "timer");
  lua_pushnumber(L, unit);
  lua_setfield(L, -2, "unit");
  if (P->oom) {
    lua_pushinteger(L, (lua_Integer)P->dropped);
    lua_setfield(L, -2, "dropped");
  }
  if (P->tree.folded) {
    lua_pushinteger(L, (lua_Integer)P->tree.folded);
    lua_setfield(L, -2, "tree_folded");
    lua_pushinteger(L, (lua_Integer)P->tree.limit);
    lua_setfield(L, -2, "tree_cap");
  }
  /* What a report must know: the same fields a dump's meta has. */
  lua_createtable(L, 0, 4);
  lua_pushnumber(L, P->bias);
  lua_setfield(L, -2, "bias");
  lua_pushinteger(L, (lua_Integer)P->dropped);
  lua_setfield(L, -2, "dropped");
  lua_pushinteger(L, (lua_Integer)P->tree.folded);
  lua_setfield(L, -2, "tree_folded");
  lua_pushinteger(L, (lua_Integer)P->tree.limit);
  lua_setfield(L, -2, "tree_cap");
  if (P->mem.used) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "memory");
  }
  set_fast_path(L, P);
  lua_setfield(L, -2, "meta");
  set_fast_path(L, P);
  push_core(L, P);
  lua_createtable(L, (int)P->fns.nentries, 0);
  uint32_t n = 0;
  for (uint32_t i = 0; i < P->fns.nentries; i++) {
    const Entry *e = &P->fns.entries[i];
    row[i] = 0;
    if (e->s.calls == 0) continue;  /* as cProfile: a function still running has no row */
    row[i] = ++n;
    lua_createtable(L, 0, 10);
    lua_pushstring(L, fn_file(&P->fns, e));
    lua_setfield(L, -2, "file");
    lua_pushinteger(L, e->kind == KIND_C ? 0 : e->line);
    lua_setfield(L, -2, "line");
    push_name(L, e);
    lua_setfield(L, -2, "name");
    lua_pushstring(L, KIND_NAMES[e->kind]);
    lua_setfield(L, -2, "what");
    set_stat(L, &e->s, unit);
    lua_newtable(L);
    lua_setfield(L, -2, "callers");
    lua_rawseti(L, -2, (int)n);
  }
  for (uint32_t i = 0; i < P->tree.nedges; i++) {
    const Edge *g = &P->tree.edges[i];
    if (g->s.calls == 0 || !row[g->caller] || !row[g->callee]) continue;
    lua_rawgeti(L, -1, (int)row[g->callee]);
    lua_getfield(L, -1, "callers");
    lua_createtable(L, 0, 4);
    set_stat(L, &g->s, unit);
    lua_rawseti(L, -2, (int)row[g->caller]);
    lua_pop(L, 2);
  }
  if (P->mem.used) push_entry_memory(L, P, row);
  for (uint32_t i = 0; i < P->lines.nrecs; i++) {
    const LineRec *r = &P->lines.recs[i];
    if (!row[r->entry]) continue;
    lua_rawgeti(L, -1, (int)row[r->entry]);
    lua_getfield(L, -1, "lines");
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      lua_newtable(L);
      lua_pushvalue(L, -1);
      lua_setfield(L, -3, "lines");
    }
    lua_createtable(L, 0, 2);
    lua_pushinteger(L, (lua_Integer)r->hits);
    lua_setfield(L, -2, "hits");
    lua_pushnumber(L, (lua_Number)r->time * unit);
    lua_setfield(L, -2, "time");
    lua_rawseti(L, -2, r->line);
    lua_pop(L, 2);
  }
  free(row);
  lua_setfield(L, -2, "entries");
  return 0;
}

/* Columns: one array per field, so a million records cost a few arrays, not a million tables.
   `stride` and `off` locate the uint32 or Stat field inside each record. */
typedef enum { COL_U32, COL_INT, COL_U64, COL_TICKS, COL_CALLS, COL_PCALLS, COL_IT, COL_TT } ColKind;

static void push_column(lua_State *L, const char *name, const void *base, size_t stride,
                        size_t off, uint32_t n, ColKind kind, double unit) {
  lua_createtable(L, (int)n, 0);
  for (uint32_t i = 0; i < n; i++) {
    const char *rec = (const char *)base + (size_t)i * stride + off;
    const Stat *s = (const Stat *)(const void *)rec;
    switch (kind) {
      case COL_U32: {
        uint32_t v = *(const uint32_t *)(const void *)rec;
        lua_pushinteger(L, v == IDX_NONE ? 0 : (lua_Integer)v + 1);  /* 1-based; 0 = none */
        break;
      }
      case COL_INT: lua_pushinteger(L, *(const int *)(const void *)rec); break;
      case COL_U64: lua_pushinteger(L, (lua_Integer) * (const uint64_t *)(const void *)rec); break;
      case COL_TICKS:
        lua_pushnumber(L, (lua_Number) * (const cprof_ticks *)(const void *)rec * unit);
        break;
      case COL_CALLS: lua_pushinteger(L, (lua_Integer)s->calls); break;
      case COL_PCALLS: lua_pushinteger(L, (lua_Integer)(s->calls - s->rcalls)); break;
      case COL_IT: lua_pushnumber(L, (lua_Number)s->it * unit); break;
      case COL_TT: lua_pushnumber(L, (lua_Number)s->tt * unit); break;
    }
    lua_rawseti(L, -2, (int)i + 1);
  }
  lua_setfield(L, -2, name);
}

static void push_stat_columns(lua_State *L, const void *base, size_t stride, size_t off,
                              uint32_t n, double unit) {
  push_column(L, "ncalls", base, stride, off, n, COL_CALLS, unit);
  push_column(L, "pcalls", base, stride, off, n, COL_PCALLS, unit);
  push_column(L, "tottime", base, stride, off, n, COL_IT, unit);
  push_column(L, "cumtime", base, stride, off, n, COL_TT, unit);
}

static void push_frames(lua_State *L, const Profiler *P) {
  uint32_t n = P->fns.nentries;
  lua_createtable(L, 0, 11);
  lua_pushinteger(L, n);
  lua_setfield(L, -2, "n");
  static const char *const cols[] = {"kind", "file", "line", "lastline", "name"};
  for (int c = 0; c < 5; c++) {
    lua_createtable(L, (int)n, 0);
    for (uint32_t i = 0; i < n; i++) {
      const Entry *e = &P->fns.entries[i];
      switch (c) {
        case 0: lua_pushstring(L, KIND_NAMES[e->kind]); break;
        case 1: lua_pushstring(L, fn_file(&P->fns, e)); break;
        case 2: lua_pushinteger(L, e->kind == KIND_C ? 0 : e->line); break;
        case 3: lua_pushinteger(L, e->lastline); break;
        default: push_name(L, e); break;
      }
      lua_rawseti(L, -2, (int)i + 1);
    }
    lua_setfield(L, -2, cols[c]);
  }
  push_stat_columns(L, P->fns.entries, sizeof *P->fns.entries, offsetof(Entry, s), n, P->clock.timer.unit);
  lua_setfield(L, -2, "frames");
}

static void push_meta(lua_State *L, const Profiler *P, cprof_ticks running_ns) {
  lua_createtable(L, 0, 10);
  lua_pushstring(L, COMPAT_LUA_NAME);
  lua_setfield(L, -2, "lua_version");
  lua_pushstring(L, P->clock.timer.name);
  lua_setfield(L, -2, "timer");
  lua_pushnumber(L, P->clock.timer.unit);
  lua_setfield(L, -2, "unit");
  lua_pushnumber(L, P->bias);
  lua_setfield(L, -2, "bias");
  lua_pushnumber(L, P->start_time);
  lua_setfield(L, -2, "start_time");
  lua_pushnumber(L, (double)(P->enabled_ns + running_ns) * 1e-9);
  lua_setfield(L, -2, "total_time");
  lua_pushinteger(L, (lua_Integer)getpid());
  lua_setfield(L, -2, "pid");
  lua_pushinteger(L, (lua_Integer)P->tree.limit);
  lua_setfield(L, -2, "tree_cap");
  lua_pushinteger(L, (lua_Integer)P->tree.recursion);
  lua_setfield(L, -2, "tree_recursion");
  lua_pushinteger(L, (lua_Integer)P->tree.folded);
  lua_setfield(L, -2, "tree_folded");
  lua_pushinteger(L, (lua_Integer)P->dropped);
  lua_setfield(L, -2, "dropped");
  if (P->mem.used) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "memory");
    lua_pushinteger(L, (lua_Integer)P->mem.lost);
    lua_setfield(L, -2, "memory_lost");
    /* The totals over every context, for a summary read without the tree. */
    uint64_t t[4] = {0, 0, 0, 0};
    for (uint32_t k = 0; k < P->tree.nnodes; k++) {
      const MemStat *m = memattr_of(&P->mem, k);
      if (!m) continue;
      t[0] += memattr_allocs(m);
      t[1] += m->bytes;
      t[2] += memattr_frees(m);
      t[3] += m->freed;
    }
    set_int(L, "memory_allocs", t[0]);
    set_int(L, "memory_bytes", t[1]);
    set_int(L, "memory_frees", t[2]);
    set_int(L, "memory_freed", t[3]);
  }
  if (P->trace.size) {
    set_int(L, "trace_size", P->trace.size);
    set_int(L, "trace_dropped", P->trace.total - P->trace.held);
  }
  set_fast_path(L, P);
  lua_setfield(L, -2, "meta");
}

/* A column of the node memory named `name`: get(stat, arg) of every node (0 for none). */
static void push_node_column(lua_State *L, const Profiler *P, const char *name,
                             lua_Number (*get)(const MemStat *, int, double), int arg, int integer) {
  double unit = P->clock.timer.unit;
  lua_createtable(L, (int)P->tree.nnodes, 0);
  for (uint32_t k = 0; k < P->tree.nnodes; k++) {
    const MemStat *m = memattr_of(&P->mem, k);
    lua_Number v = m ? get(m, arg, unit) : 0;
    if (integer) lua_pushinteger(L, (lua_Integer)v);
    else lua_pushnumber(L, v);
    lua_rawseti(L, -2, (int)k + 1);
  }
  lua_setfield(L, -2, name);
}

static lua_Number mem_field(const MemStat *m, int c, double unit) {
  (void)unit;
  const uint64_t v[] = {memattr_allocs(m), m->bytes, memattr_frees(m), m->freed, m->min, m->max};
  return (lua_Number)v[c];
}

/* Lifetimes and the first allocation and last free, in seconds as the times are. */
static lua_Number mem_time(const MemStat *m, int c, double unit) {
  const uint64_t v[] = {m->life_total, m->life_min, m->life_max, (uint64_t)m->first_alloc,
                        (uint64_t)m->last_free};
  return (lua_Number)v[c] * unit;
}

static lua_Number mem_type(const MemStat *m, int c, double unit) {
  (void)unit;
  return (lua_Number)(c < MEM_NTYPES ? m->type_allocs[c] : m->type_frees[c - MEM_NTYPES]);
}

/* The trace (a profile made with trace = true), oldest event first: event (0 a call, 1 a
   return), thread, node, time (seconds since the first event recorded). */
static void push_trace(lua_State *L, const Profiler *P) {
  const Trace *T = &P->trace;
  double unit = P->clock.timer.unit;
  lua_createtable(L, 0, 5);
  lua_pushinteger(L, T->held);
  lua_setfield(L, -2, "n");
  static const char *const cols[] = {"event", "thread", "node", "time"};
  for (int c = 0; c < 4; c++) {
    lua_createtable(L, (int)T->held, 0);
    for (uint32_t i = 0; i < T->held; i++) {
      const TraceEvent *e = trace_at(T, i);
      switch (c) {
        case 0: lua_pushinteger(L, (e->thread & TRACE_RETURN) != 0); break;
        case 1: lua_pushinteger(L, (lua_Integer)(e->thread & ~TRACE_RETURN)); break;
        case 2: lua_pushinteger(L, (lua_Integer)e->node + 1); break;
        default: lua_pushnumber(L, (lua_Number)(e->t - T->origin) * unit); break;
      }
      lua_rawseti(L, -2, (int)i + 1);
    }
    lua_setfield(L, -2, cols[c]);
  }
  lua_setfield(L, -2, "trace");
}

static void push_node_memory(lua_State *L, const Profiler *P) {
  static const char *const cols[] = {"alloc_count", "alloc_bytes", "free_count", "free_bytes",
                                     "min_size", "max_size"};
  static const char *const times[] = {"life_total", "life_min", "life_max", "alloc_time",
                                      "free_time"};
  for (int c = 0; c < 6; c++) push_node_column(L, P, cols[c], mem_field, c, 1);
  for (int c = 0; c < 5; c++) push_node_column(L, P, times[c], mem_time, c, 0);
  for (int c = 0; c < 2 * MEM_NTYPES; c++) {
    char name[32];
    snprintf(name, sizeof name, "%s_%s", lalloc_slot_name(c % MEM_NTYPES),
             c < MEM_NTYPES ? "allocs" : "frees");
    push_node_column(L, P, name, mem_type, c, 1);
  }
}

static void push_lines(lua_State *L, const Profiler *P);

void snap_push_snapshot(lua_State *L, const Profiler *P, cprof_ticks running_ns) {
  double unit = P->clock.timer.unit;
  lua_createtable(L, 0, 4);
  push_meta(L, P, running_ns);
  push_frames(L, P);

  lua_createtable(L, 0, 7);
  lua_pushinteger(L, P->tree.nedges);
  lua_setfield(L, -2, "n");
  push_column(L, "caller", P->tree.edges, sizeof *P->tree.edges, offsetof(Edge, caller), P->tree.nedges,
              COL_U32, unit);
  push_column(L, "callee", P->tree.edges, sizeof *P->tree.edges, offsetof(Edge, callee), P->tree.nedges,
              COL_U32, unit);
  push_stat_columns(L, P->tree.edges, sizeof *P->tree.edges, offsetof(Edge, s), P->tree.nedges, unit);
  lua_setfield(L, -2, "edges");

  lua_createtable(L, 0, 7);
  lua_pushinteger(L, P->tree.nnodes);
  lua_setfield(L, -2, "n");
  push_column(L, "parent", P->tree.nodes, sizeof *P->tree.nodes, offsetof(Node, parent), P->tree.nnodes,
              COL_U32, unit);
  push_column(L, "frame", P->tree.nodes, sizeof *P->tree.nodes, offsetof(Node, entry), P->tree.nnodes,
              COL_U32, unit);
  push_stat_columns(L, P->tree.nodes, sizeof *P->tree.nodes, offsetof(Node, s), P->tree.nnodes, unit);
  if (P->mem.used) push_node_memory(L, P);
  lua_setfield(L, -2, "nodes");

  if (P->lines.on) push_lines(L, P);
  if (P->trace.size) push_trace(L, P);
}

/* The line records (a profile made with lines = true): frame, line, hits, time. */
static void push_lines(lua_State *L, const Profiler *P) {
  double unit = P->clock.timer.unit;
  lua_createtable(L, 0, 5);
  lua_pushinteger(L, P->lines.nrecs);
  lua_setfield(L, -2, "n");
  const size_t size = sizeof *P->lines.recs;
  push_column(L, "frame", P->lines.recs, size, offsetof(LineRec, entry), P->lines.nrecs, COL_U32, unit);
  push_column(L, "line", P->lines.recs, size, offsetof(LineRec, line), P->lines.nrecs, COL_INT, unit);
  push_column(L, "hits", P->lines.recs, size, offsetof(LineRec, hits), P->lines.nrecs, COL_U64, unit);
  push_column(L, "time", P->lines.recs, size, offsetof(LineRec, time), P->lines.nrecs, COL_TICKS,
              unit);
  lua_setfield(L, -2, "lines");
}
