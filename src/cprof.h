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

#endif
