/* cprof's allocator and Lua states: a new state on a heap of its own, the heap installed under
   a running state (whose blocks stay the old allocator's: `prev`), the heap of a state, and the
   state's lua_Alloc swapped for attribution's own (lalloc_f_attr) while memory attribution runs.
   See lalloc.h and docs/MEMORY.md. */
#include <dlfcn.h>
#include <stdint.h>

#include "mem/lalloc_heap.h"
#include "mem/memattr.h"
#include "util/compat.h"

static int is_ours(lua_Alloc f) { return f == lalloc_f || f == lalloc_f_attr; }

lalloc *lalloc_of(lua_State *L) {
  void *ud;
  lua_Alloc f = lua_getallocf(L, &ud);
  if (!is_ours(f)) return NULL;
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
  lalloc_update_gates(h);
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
  if (is_ours(f)) {
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
  lalloc_update_gates(h);
  lua_setallocf(L, lalloc_f, h);
  return h;
#endif
}

/* The state's lua_Alloc becomes `to` if it is `from` with this heap (a program that put its own
   in front keeps it). */
static void swap_allocf(lalloc *h, lua_Alloc from, lua_Alloc to) {
  void *ud;
  if (h->main && lua_getallocf(h->main, &ud) == from && ud == h) lua_setallocf(h->main, to, h);
}

void lalloc_attr_start(MemAttr *m, lua_State *L, const uint32_t *const *node_at,
                       const cprof_ticks *now) {
  lalloc *h = lalloc_of(L);
  if (!h) return;
  if (!m->used) m->t0 = *now;
  m->heap = h;
  m->used = 1;
  m->now = now;
  m->node_at = node_at;
  lalloc_set_thread(h, L);
  lalloc_observe(h, m);
  swap_allocf(h, lalloc_f, lalloc_f_attr);
}

void lalloc_attr_stop(MemAttr *m) {
  if (!m->heap) return;
  lalloc_observe(m->heap, NULL);
  swap_allocf(m->heap, lalloc_f_attr, lalloc_f);
  m->heap = NULL;
}
