/*
 * hook/threads.h — which shadow stack a Lua thread's events go to. Each thread the hook meets is
 * adopted (given a stack) and registered in a weak-keyed registry table, so that a thread born
 * at a dead one's address is told from it; abandoned coroutines' stacks are swept when their
 * number has doubled. A one-entry cache per OS thread makes an event in the same thread as the
 * last one cost one comparison; the rest runs only on a coroutine switch.
 */
#ifndef CPROF_THREADS_H
#define CPROF_THREADS_H

#include <lua.h>

#include "tables/profiler.h"

/* The thread of the last event in this OS thread, and its stack. A Lua state runs in one OS
   thread at a time, and several states may run in several threads, each with its own profiler.
   The hook reads them first on every event. */
extern __thread __attribute__((tls_model("initial-exec"))) lua_State *thr_last_L;
extern __thread __attribute__((tls_model("initial-exec"))) Stack *thr_last_st;

static inline void thr_remember(lua_State *L, Stack *st) {
  thr_last_L = L;
  thr_last_st = st;
}

static inline void thr_forget(void) { thr_remember(NULL, NULL); }

/* Makes the registry of L's state (enable()). */
void thr_open(lua_State *L);

/* A new stack for thread T, which is at `idx` of L's stack; NULL when out of memory. */
Stack *thr_adopt(Profiler *P, lua_State *L, int idx, lua_State *T);

/* The stack of thread L, whose event `ar` follows an event in another thread: found, or adopted
   (with the program's hook of the thread it most likely inherited it from). NULL when out of
   memory (P->oom is set). */
Stack *thr_stack(Profiler *P, lua_State *L, lua_Debug *ar);

/* Frees a stack whose frames are closed or forgotten. */
void thr_drop(Profiler *P, Stack *st);
void thr_drop_all(Profiler *P);

/* Gives every live thread whose hook is still `ours` the hook it had before, and empties the
   registry (disable()). */
void thr_release(Profiler *P, lua_State *L, lua_Hook ours);

#endif
