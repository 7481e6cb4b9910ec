/* Built-in timers. Each returns integer ticks so that the hot path never touches floating point. */
#include <string.h>
#include <time.h>

#include "cprof.h"

static cprof_ticks read_monotonic(void *ud) {
  struct timespec ts;
  (void)ud;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (cprof_ticks)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One tick per read: a profile taken with it is exact and the same on every machine, which is
   what tests and golden reports need (Python's golden runs use itertools.count the same way). */
static cprof_ticks read_counter(void *ud) {
  static cprof_ticks n;
  (void)ud;
  return __atomic_add_fetch(&n, 1, __ATOMIC_RELAXED);
}

static const cprof_timer builtin[] = {
  {"monotonic", 1e-9, read_monotonic, NULL},
  {"counter", 1.0, read_counter, NULL},
};

const cprof_timer *cprof_timer_default(void) { return &builtin[0]; }

const cprof_timer *cprof_timer_find(const char *name) {
  for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++)
    if (strcmp(builtin[i].name, name) == 0) return &builtin[i];
  return NULL;
}
