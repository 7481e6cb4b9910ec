/*
 * cprof.h — the public C interface of cprof, for hosts that embed Lua.
 *
 * Times inside cprof are integer ticks; a timer says how many seconds one tick is, so a report
 * multiplies once at the end instead of converting on every event.
 */
#ifndef CPROF_H
#define CPROF_H

#include <stdint.h>

typedef int64_t cprof_ticks;

/* A clock. `read` must be cheap and monotonic; it runs twice per profiled call. */
typedef struct cprof_timer {
  const char *name;               /* shown in reports and stored in dumps, e.g. "monotonic" */
  double unit;                    /* seconds per tick */
  cprof_ticks (*read)(void *ud);
  void *ud;
  /* Its readings are the profile itself (a counter, a simulated clock), so the hook reads it
     at the end of every event too, instead of estimating its own duration between readings. */
  int exact;
} cprof_timer;

/* Makes a host's own timer available by name: cprof.Profile{timer = "name"}, CPROF_TIMER=name.
   The name must stay valid; a second registration of a name replaces the first. Registered
   names are looked up before the built-in ones. Returns 0, or -1 (a bad timer, or 16 already
   registered). */
int cprof_timer_register(const cprof_timer *timer);

/* The default timer: "tsc" where the CPU's time-stamp counter is invariant, else "monotonic". */
cprof_timer cprof_timer_default(void);

/* Fills *out with the built-in timer of that name: "monotonic" (the default), "cpu" (process
   CPU time), "thread" (thread CPU time), "tsc" (the x86 time-stamp counter, where it is
   invariant; its rate is measured once, in 20 ms) or "counter" (one tick per reading, for exact
   tests). Returns NULL, or why the timer cannot be had. */
const char *cprof_timer_get(const char *name, cprof_timer *out);

/* ---- Memory: cprof's allocator (docs/MEMORY.md) ------------------------------------------ */

#include <stddef.h>

struct lua_State;

/* A new Lua state whose memory all comes from cprof's allocator, from its first byte; NULL when
   out of memory. Close it with lua_close, which also frees the allocator. */
struct lua_State *cprof_newstate(void);

/* Totals of a state's allocator. Bytes "requested" are what Lua asked for (Lua's own count);
   "held" adds the rounding to size classes and pages. */
typedef struct cprof_mem_totals {
  size_t lua_bytes;         /* all that Lua counts: collectgarbage("count") * 1024 */
  size_t requested;         /* of which in cprof's blocks */
  size_t foreign;           /* of which in blocks of the allocator that cprof replaced */
  size_t held;              /* bytes of cprof's live blocks */
  size_t footprint;         /* bytes of slabs and large blocks: held + free objects in slabs */
  size_t mapped;            /* bytes mapped from the OS now */
  size_t peak_mapped;
  size_t metadata;          /* cprof's own bookkeeping: btags, hash tables, cache descriptors */
  size_t limit;             /* 0: none */
  uint64_t live;            /* live blocks in cprof's memory */
  uint64_t allocs;          /* allocations ever */
  uint64_t failures;        /* allocations refused: past the limit or refused by the OS */
  uint64_t limit_failures;  /* of which past the limit */
  uint64_t foreign_frees;   /* frees of blocks made by the replaced allocator */
  size_t ncaches;
} cprof_mem_totals;

/* One slab cache (Akaros's kmemstat and slab_stats fields). */
typedef struct cprof_mem_cache {
  char name[24];            /* "table_56": Lua type and object size */
  const char *type;         /* "table", "string", ..., "raw" (memory that is no object) */
  size_t objsize, slab_size;
  uint64_t objects;         /* objects its slabs have room for: Total Amt = objects * objsize */
  uint64_t live;            /* allocated now: Alloc Amt = live * objsize */
  uint64_t magazine;        /* free, in the magazine in front of the slabs */
  uint64_t allocs_ever;
  size_t requested;         /* bytes Lua asked for, for the live objects */
  size_t slabs, partial_slabs;
} cprof_mem_cache;

/* One Lua type: its objects in caches and in large blocks. */
typedef struct cprof_mem_type {
  const char *name;         /* "string", "table", "function", "userdata", "thread", "upvalue",
                               "proto", "other", "raw" */
  int tag;                  /* LUA_TSTRING, ...; 0 for raw; -1 for other */
  uint64_t live, allocs_ever;
  size_t bytes;             /* requested bytes of the live objects */
  size_t held;
  uint64_t large_live, large_allocs;  /* of which blocks above the largest size class */
  size_t large_held;
} cprof_mem_type;

/* 0, or -1 when L's state does not use cprof's allocator. */
int cprof_mem_totals_of(struct lua_State *L, cprof_mem_totals *t);
/* Fill up to `max` rows and return how many there are (0 when L does not use the allocator). */
size_t cprof_mem_caches_of(struct lua_State *L, cprof_mem_cache *rows, size_t max);
size_t cprof_mem_types_of(struct lua_State *L, cprof_mem_type *rows, size_t max);

#endif
