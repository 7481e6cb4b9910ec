/*
 * tables/clock.h — the profile's clock: the timer less the time spent inside cprof's hook, which
 * stops the clock while it runs, so that no frame is charged for cprof's own work; it never goes
 * back. Reading the timer a second time per event would double the cost of the clock, the
 * largest part of cprof's, so where the timer allows it most events are charged an estimate of
 * the hook's duration instead (clock_stop). Everything here is inline: it runs on every event.
 */
#ifndef CPROF_CLOCK_H
#define CPROF_CLOCK_H

#include <stdint.h>

#include <lua.h>

#include "cprof.h"

/* Kinds of hook work, which take different times (clock_stop). */
enum { HOOK_CALL_LUA, HOOK_CALL_C, HOOK_RETURN, HOOK_LINE, HOOK_NKINDS };

typedef struct Clock {
  cprof_timer timer;
  lua_State *L;            /* the thread the hook (or enable/disable) runs in: a Lua function
                              timer is called there (hook/luatimer.h) */
  double hook_ticks;       /* timer ticks spent inside the hook: kept off every frame */
  double hook_estimate[HOOK_NKINDS];  /* average ticks of a hook run, per HOOK_* kind */
  cprof_ticks vlast;       /* the profile's clock at the last event: it never goes back */
  uint32_t measure_every;  /* measure one event in this many; 1: every event (exact timers) */
  uint32_t events;         /* events since enable, to pick those that are measured */
  int reading;             /* the timer is being read outside the hook: its calls are not events */
} Clock;

static inline void clock_set_timer(Clock *c, const cprof_timer *timer) {
  c->timer = *timer;
  c->measure_every = timer->exact ? 1 : 16;  /* a power of two: see clock_stop */
}

/* The timer, read outside the hook (the hook reads it itself): a timer that is a Lua function
   would be profiled, so the hook ignores what happens while it reads. */
static inline cprof_ticks clock_read_outside(Clock *c) {
  c->reading = 1;
  cprof_ticks t = c->timer.read(c->timer.ud);
  c->reading = 0;
  return t;
}

/* The profile's clock, read outside the hook. */
static inline cprof_ticks clock_now_outside(Clock *c) {
  cprof_ticks t = clock_read_outside(c) - (cprof_ticks)c->hook_ticks;
  return t < c->vlast ? c->vlast : t;
}

/* The profile's clock at an event whose hook started at timer reading `in`. */
static inline cprof_ticks clock_at(Clock *c, cprof_ticks in) {
  cprof_ticks now = in - (cprof_ticks)c->hook_ticks;
  /* An estimate larger than the hook really took would turn the clock back: it never runs
     backwards, the excess is given back instead. */
  if (now < c->vlast) {
    c->hook_ticks = (double)(in - c->vlast);
    now = c->vlast;
  }
  c->vlast = now;
  return now;
}

/* The hook that started at `in` ends: its time is kept off the clock. Where the timer allows it
   (measure_every > 1) most events are charged the running average of their kind's measured
   durations; every slow event (one that met something new) and every measure_every-th event
   is measured. */
static inline void clock_stop(Clock *c, cprof_ticks in, int kind, int slow) {
  if (slow || (c->events++ & (c->measure_every - 1)) == 0 || c->events < 256) {
    cprof_ticks d = c->timer.read(c->timer.ud) - in;
    c->hook_ticks += (double)d;
    if (!slow) c->hook_estimate[kind] += ((double)d - c->hook_estimate[kind]) / 8;
  } else {
    c->hook_ticks += c->hook_estimate[kind];
  }
}

#endif
