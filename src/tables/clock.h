/*
 * tables/clock.h — the profile's clock: the timer less the time spent inside cprof's hook, which
 * stops the clock while it runs, so that no frame is charged for cprof's own work; it never goes
 * back. The hook reads the timer once per event, when it starts; its own duration is charged as
 * a running estimate per kind of event (clock_stop), measured with a second reading on one event
 * in 64 on average (at random intervals) and on every event that took a slow path. Exact timers
 * (`counter`, a Lua function) are read at the end of every event instead. Everything here is
 * inline: it runs on every event.
 */
#ifndef CPROF_CLOCK_H
#define CPROF_CLOCK_H

#include <stdint.h>

#include <lua.h>

#include "cprof.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define CLOCK_HAVE_TSC 1
#else
#define CLOCK_HAVE_TSC 0
#endif

/* Kinds of hook work, which take different times (clock_stop). Calibration (docs/API.md) may
   tell them apart by the counts of each the profile records. */
enum { HOOK_CALL_LUA, HOOK_CALL_C, HOOK_RETURN, HOOK_LINE, HOOK_SWITCH, HOOK_NKINDS };

/* Durations are kept in 1/256 ticks, so that the estimates of short hooks keep their fraction. */
enum { CLOCK_FRAC = 8, CLOCK_WARMUP = 256 };

typedef struct Clock {
  cprof_timer timer;
  lua_State *L;            /* the thread the hook (or enable/disable) runs in: a Lua function
                              timer is called there (hook/luatimer.h) */
  int64_t hook_ticks;      /* 1/256 timer ticks spent inside the hook: kept off every frame */
  int64_t estimate[HOOK_NKINDS];  /* 1/256 ticks of one hook run, per HOOK_* kind */
  cprof_ticks vlast;       /* the profile's clock at the last event: it never goes back */
  uint32_t countdown;      /* events to charge the estimate before the next measured one */
  uint32_t warmup;         /* measured events left before the estimates are trusted */
  uint32_t seed;           /* of the intervals between measured events */
  uint8_t exact;           /* read the timer at the end of every event */
  uint8_t tsc;             /* the timer is the time-stamp counter: read inline */
  uint8_t reading;         /* the timer is being read outside the hook: its calls are not events */
} Clock;

/* The `tsc` timer's reading (hook/timer.c makes the timer), inline in the hook. */
cprof_ticks clock_read_tsc(void *ud);

static inline void clock_set_timer(Clock *c, const cprof_timer *timer) {
  c->timer = *timer;
  c->exact = timer->exact != 0;
  c->tsc = timer->read == clock_read_tsc;
  c->countdown = 0;
  c->warmup = CLOCK_WARMUP;
  c->seed = 1;
}

static inline cprof_ticks clock_read(const Clock *c) {
#if CLOCK_HAVE_TSC
  if (c->tsc) return (cprof_ticks)__rdtsc();
#endif
  return c->timer.read(c->timer.ud);
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
  cprof_ticks t = clock_read_outside(c) - (cprof_ticks)(c->hook_ticks >> CLOCK_FRAC);
  return t < c->vlast ? c->vlast : t;
}

/* The profile's clock at an event whose hook started at timer reading `in`. */
static inline cprof_ticks clock_at(Clock *c, cprof_ticks in) {
  cprof_ticks now = in - (cprof_ticks)(c->hook_ticks >> CLOCK_FRAC);
  /* An estimate larger than the hook really took would turn the clock back: it never runs
     backwards, the excess is given back instead. */
  if (now < c->vlast) {
    c->hook_ticks = (int64_t)(in - c->vlast) << CLOCK_FRAC;
    now = c->vlast;
  }
  c->vlast = now;
  return now;
}

/* The timer at the end of a measured hook. The time-stamp counter is read when the instruction
   issues, which may be before the hook's last instructions have run: an end read so early made
   every measured hook seem shorter, by how much depending on what the hook did last, and left
   13-17 ns per Lua call outside cprof's clock, more after some hooks than after others, so
   that no constant per kind of event fitted (bench/README.md, "Accuracy"). LFENCE waits for
   them, on the measured events only: the start of every hook is read the same early way. */
static inline cprof_ticks clock_read_end(const Clock *c) {
#if CLOCK_HAVE_TSC
  if (c->tsc) {
#ifdef __SSE2__
    _mm_lfence();
#endif
    return (cprof_ticks)__rdtsc();
  }
#endif
  return c->timer.read(c->timer.ud);
}

/* The hook that started at `in` ends: its time is kept off the clock. Most events are charged
   the running estimate of their kind (an event in another thread than the last one is of kind
   HOOK_SWITCH); slow ones (that met something new), one in 64 on average and the first 256 are
   measured, and so is every event of an exact timer. The interval between measured events is
   random (32 to 95 events, from a linear congruential sequence): with a fixed one, a program
   whose events repeat with a period dividing it (a loop calling one function: call, return)
   would measure only one kind and one place of its cycle, and the other kinds' estimates would
   keep whatever the first events gave (bench/README.md, "Accuracy"). */
static inline void clock_stop(Clock *c, cprof_ticks in, int kind, int slow) {
  if (slow || c->countdown-- == 0) {
    int64_t d = (int64_t)(clock_read_end(c) - in) << CLOCK_FRAC;
    c->hook_ticks += d;
    if (!slow) {
      c->estimate[kind] += (d - c->estimate[kind]) / 8;
      if (c->warmup) c->warmup--;
      c->seed = c->seed * 1103515245u + 12345u;
      c->countdown = c->exact || c->warmup ? 0 : 32 + (c->seed >> 26);
    }
  } else {
    c->hook_ticks += c->estimate[kind];
  }
}

#endif
