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

/* The default timer: CLOCK_MONOTONIC in nanoseconds. */
const cprof_timer *cprof_timer_default(void);

/* Looks up a built-in timer by name ("monotonic"); NULL when there is none of that name. */
const cprof_timer *cprof_timer_find(const char *name);

#endif
