/*
 * hook/threads.h — which shadow stack a Lua thread's events go to. Each thread the hook meets is
 * adopted (given a stack), found again by its address. A coroutine that died while suspended
 * leaves its stack behind until another thread takes its address (the new thread's first event
 * tells them apart: docs/SEMANTICS.md) or until disable(); no Lua table holds the coroutines.
 * Only threads whose hook must be given back at disable() with something else than what they
 * would inherit are remembered in a weak table. A one-entry cache per OS thread makes an event
 * in the same thread as the last one cost one comparison; the rest runs only on a switch.
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

/* A new stack for thread T (at `idx` of L's stack, when the thread must get its own hook back
   at disable(): 0 otherwise); NULL when out of memory. */
Stack *thr_adopt(Profiler *P, lua_State *L, int idx, lua_State *T);

/* The stack of thread L, whose event `ar` follows an event in another thread: `st` (found by
   address, or NULL), or a new one when st belonged to a dead thread at that address. NULL when
   out of memory (P->oom is set). */
Stack *thr_stack(Profiler *P, lua_State *L, lua_Debug *ar, Stack *st);

/* The stack of thread T as debug.sethook and debug.gethook on T see it: the one at T's address,
   unless that is a dead coroutine's, left suspended, while T is not suspended (T was born at
   its address since): that one is closed and dropped, and NULL returned. */
Stack *thr_find(Profiler *P, lua_State *T);

/* Frees a stack whose frames are closed or forgotten. */
void thr_drop(Profiler *P, Stack *st);
/* Frees the stack of a thread that has just ended (returned, or died of an error), whose
   frames are closed, and gives the thread the program's hook back if it still has `ours`; the
   same for the threads the same error killed, linked from it through `resumer` (eng_switch). */
void thr_end(Profiler *P, Stack *st, lua_Hook ours);
void thr_drop_all(Profiler *P);

/* Gives every thread known to be alive whose hook is still `ours` the hook it had before
   (disable(), from thread L): L, the threads that resumed it, and those remembered; the
   others get theirs on their next event (hook.c). */
void thr_release(Profiler *P, lua_State *L, lua_Hook ours);

#endif
