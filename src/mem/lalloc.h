/*
 * mem/lalloc.h — cprof's lua_Alloc: one heap per Lua state, built from slab caches (per size
 * class and per Lua type) over the arenas of arena.h. See docs/MEMORY.md. An allocation or a
 * free is a magazine pop or push and three counters, inline in lalloc_f; see lalloc.c.
 *
 * The lua_Alloc contract, exactly: ptr == NULL is a new block and osize its type tag (Lua 5.4:
 * LUA_TSTRING, LUA_TTABLE, ..., LUA_TUPVAL, LUA_TPROTO, or 0 for memory that is not an object);
 * nsize == 0 frees (ptr may be NULL); a shrink never fails; a failure returns NULL and leaves
 * the block as it was.
 */
#ifndef CPROF_LALLOC_H
#define CPROF_LALLOC_H

#include <stddef.h>
#include <stdint.h>

#include <lua.h>

#include "cprof.h"
#include "mem/memattr.h"
#include "mem/slab.h"

/* Type slots: caches and statistics are per slot. */
enum {
  LA_RAW, LA_STRING, LA_TABLE, LA_FUNCTION, LA_USERDATA, LA_THREAD, LA_UPVAL, LA_PROTO,
  LA_OTHER, LA_NSLOT
};

#define LA_SMALL_MAX 4096            /* the largest size class; above: pages from the arena */
#define LA_NCLASS 56
#define LA_HUGE_MIN (CHUNK_SIZE / 2) /* above: a mapping of its own */

typedef struct lalloc lalloc;

/* The events of memory attribution (mem/memattr.h, docs/MEMORY.md): after each allocation and
   before each free. A realloc is a free of the old block and then the allocation of the new
   one, which continues the old block: LALLOC_EV_ALLOC when attribution charged it, else
   LALLOC_EV_MOVE, which only a trace records (an attribution may leave a block out of the
   profile for good). */
enum { LALLOC_EV_ALLOC = 1, LALLOC_EV_FREE = 2, LALLOC_EV_MOVE = 3 };

/* A heap in front of `prev` (NULL: a heap of a state that was made with it), or NULL when the
   metadata cannot be allocated. fail_after: as lalloc_fail_after, from the start (tests). */
lalloc *lalloc_new(lua_Alloc prev, void *prevud, long fail_after);
/* cprof_newstate with lalloc_fail_after(fail_after) from the start (tests). */
lua_State *lalloc_newstate(long fail_after);
/* Unmaps everything. A heap closes itself when its state frees the state's own block (the
   last free of lua_close), so only a heap that never got a state needs this. */
void lalloc_delete(lalloc *h);
/* The lua_Alloc; ud is the heap. */
void *lalloc_f(void *ud, void *ptr, size_t osize, size_t nsize);
/* The heap of L's state, or NULL when that state does not use cprof's allocator. */
lalloc *lalloc_of(lua_State *L);

/* Swaps L's allocator for a new heap in front of the old one. Returns the heap; NULL with
   *err set when it is already installed, unsupported or out of memory. */
lalloc *lalloc_install(lua_State *L, const char **err);

/* The bytes the state holds in blocks of `prev` (install sets it from Lua's count). */
void lalloc_set_foreign(lalloc *h, size_t bytes);
/* Allocations that would take Lua's count (the heap's `live`) past `limit` bytes fail;
   0: no limit. */
void lalloc_set_limit(lalloc *h, size_t limit);
size_t lalloc_limit(const lalloc *h);
/* Every allocation and free is told to attribution m from now on (NULL: none). */
void lalloc_observe(lalloc *h, MemAttr *m);
/* Starts attribution m if L's state allocates with cprof's allocator; else does nothing. Each
   allocation is charged to the node **node_at, at time *now (mem/memattr.h). The allocator calls
   into attribution (mem/memattr_note.h), never the reverse: attaching it is the allocator's.
   Until lalloc_attr_stop, the state's lua_Alloc (lua_getallocf) is another function of this
   heap, with attribution's work inline; lalloc_of accepts it, and kept by a program it serves
   as lalloc_f does after the stop. */
void lalloc_attr_start(MemAttr *m, lua_State *L, const uint32_t *const *node_at,
                       const cprof_ticks *now);
/* Stops it (the blocks allocated meanwhile stay charged: they are live at the end) and puts
   lalloc_f back, unless the program put a lua_Alloc of its own in front meanwhile. */
void lalloc_attr_stop(MemAttr *m);
/* The thread whose Lua stack a trace records (default: the main thread). The profiler's hook
   can keep this up to date; it must be a live thread of this state. */
void lalloc_set_thread(lalloc *h, lua_State *L);
/* Testing: after n more successful OS mappings or metadata allocations, they fail; n < 0:
   never. */
void lalloc_fail_after(lalloc *h, long n);
/* Gives empty slabs back to the page arena (and so whole chunks back to the OS). */
void lalloc_reap(lalloc *h);

/* ---- statistics (the public structs are in cprof.h) ------------------------------------ */

void lalloc_totals(const lalloc *h, cprof_mem_totals *t);
size_t lalloc_caches(const lalloc *h, cprof_mem_cache *rows, size_t max);
size_t lalloc_types(const lalloc *h, cprof_mem_type *rows, size_t max);
/* The arenas, parents first: "chunks", "pages". */
const arena *lalloc_arena(const lalloc *h, int i);
enum { LALLOC_NARENAS = 2 };
/* Checks the heap's invariants (arenas, caches and slabs, counters). NULL, or what is wrong. */
const char *lalloc_check(const lalloc *h);
const char *lalloc_slot_name(int slot);
/* Lua 5.4's tags: 0 for memory that is no object, LUA_TSTRING (4) ... LUA_TTHREAD (8), then
   LUA_TUPVAL (9) and LUA_TPROTO (10) from lobject.h. Anything else is "other". */
extern const uint8_t lalloc_slot_of_tag[16];
/* The type slot of a tag (a new block's osize; -1: other). */
static inline int lalloc_tag_slot(int tag) {
  return (unsigned)tag < 16 ? lalloc_slot_of_tag[tag] : LA_OTHER;
}
int lalloc_slot_tag(int slot);

/* ---- tracing one cache (Akaros's slab_trace) -------------------------------------------- */

enum { TRACE_DEPTH = 8 };

typedef struct lalloc_frame {
  const char *src;         /* short_src; "" for C frames seen by lua_getstack without source */
  int line, defined;       /* current line (-1: C), line defined */
} lalloc_frame;

typedef struct lalloc_site {
  uint64_t live, allocs;   /* objects of this site still recorded; recorded ever */
  size_t bytes;            /* their requested bytes */
  uint32_t depth;
  lalloc_frame f[TRACE_DEPTH];
} lalloc_site;

/* cmd: "start", "stop", "reset". Returns NULL or an error message. */
const char *lalloc_trace(lalloc *h, const char *cmd, const char *cache_name);
/* The traced cache's name (NULL: none), whether it is recording, its sites, dropped records. */
const char *lalloc_trace_cache(const lalloc *h);
int lalloc_trace_on(const lalloc *h);
size_t lalloc_trace_nsites(const lalloc *h);
const lalloc_site *lalloc_trace_site(const lalloc *h, size_t i);
uint64_t lalloc_trace_dropped(const lalloc *h);
int lalloc_trace_stacks(const lalloc *h);  /* whether stacks are recorded (typed caches, 5.4) */

#endif
