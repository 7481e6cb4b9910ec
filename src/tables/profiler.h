/*
 * tables/profiler.h — one profile: its clock, its tables (functions, call tree, lines, one shadow
 * stack per coroutine) and the memory charged to its call tree. Memory grows with distinct
 * functions, call paths, lines, coroutines and the deepest stack, never with the number of calls.
 */
#ifndef CPROF_PROFILER_H
#define CPROF_PROFILER_H

#include <stdint.h>

#include <lua.h>

#include "cprof.h"
#include "mem/memattr.h"
#include "tables/calltree.h"
#include "tables/clock.h"
#include "tables/functions.h"
#include "tables/lines.h"
#include "tables/stacks.h"
#include "tables/trace.h"

typedef struct Profiler {
  Clock clock;
  FuncTable fns;
  CallTree tree;
  LineTable lines;
  Stacks stacks;
  MemAttr mem;
  Trace trace;
  double bias;             /* seconds per event that no reading sees: subtracted by reports */
  double start_time;       /* Unix time of the first enable() */
  cprof_ticks enabled_at;  /* CLOCK_MONOTONIC ns of the last enable() */
  cprof_ticks enabled_ns;  /* time spent enabled, before the last enable() */
  int ready;               /* prof_init succeeded: the tables exist */
  int jit_was_on;          /* LuaJIT: the compiler was on before enable() turned it off */
  int enabled;
  /* The hook tests both flags with one load: a profile without a trace pays nothing for it. */
  union {
    struct {
      uint8_t oom;         /* an allocation failed: events were dropped, the report says so */
      uint8_t tracing;     /* enabled with a trace: events go to P->trace too */
    };
    uint16_t special;      /* nonzero: the hook takes its slower branch */
  };
  int fast;                /* the fast path (util/luapriv.h) is trusted while enabled */
  int public_only;         /* the fast path is forced off (option fast_path = false) */
  int filters;             /* PROF_* bits: the record-time filters (options exclude, include,
                              builtins = false), which hide functions (hook/ident.c) */
  const char *fast_state;  /* "on", "off" (forced), "unavailable" (LuaJIT, an unknown release)
                              or "fallback" (its self-check disagreed): at the last enable() */
  const char *fast_why;    /* why it is not on, or NULL */
  /* The C functions behind coroutine.resume and the functions coroutine.wrap makes, as the
     enabling state learnt them (hook/ident.c): per state, so that threads share nothing. */
  lua_CFunction co_resume, co_wrap;
  uint64_t dropped;
} Profiler;

enum { PROF_NO_BUILTINS = 1, PROF_FILE_FILTERS = 2 };

/* Sets P up with empty tables; -1 when out of memory (P is then not ready, but can be freed). */
int prof_init(Profiler *P, const cprof_timer *timer);
/* Frees the tables; keeps the timer. */
void prof_free(Profiler *P);
/* Forgets every number; keeps the timer and the options. Only while disabled. */
int prof_clear(Profiler *P);
/* Zeroes every count and time but keeps the tables and the open frames, so that it works while
   enabled (a live dump with reset): a frame still open counts, when it closes, in full. */
void prof_reset(Profiler *P);

#endif
