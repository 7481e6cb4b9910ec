/* Built-in timers. Each returns integer ticks so that the hot path never touches floating point;
   the unit (seconds per tick) is applied once, in reports. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "cprof.h"
#include "tables/clock.h"

#if CLOCK_HAVE_TSC
#include <cpuid.h>
#endif

static cprof_ticks read_clock(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (cprof_ticks)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static cprof_ticks read_monotonic(void *ud) {
  (void)ud;
  return read_clock(CLOCK_MONOTONIC);
}

static cprof_ticks read_cpu(void *ud) {
  (void)ud;
  return read_clock(CLOCK_PROCESS_CPUTIME_ID);
}

static cprof_ticks read_thread(void *ud) {
  (void)ud;
  return read_clock(CLOCK_THREAD_CPUTIME_ID);
}

/* One tick per read: a profile taken with it is exact and the same on every machine, which is
   what tests and golden reports need (Python's golden runs use itertools.count the same way). */
static cprof_ticks read_counter(void *ud) {
  static cprof_ticks n;
  (void)ud;
  return __atomic_add_fetch(&n, 1, __ATOMIC_RELAXED);
}

#if CLOCK_HAVE_TSC

/* Only an invariant counter (CPUID 0x80000007, EDX bit 8) ticks at one rate across frequency
   changes and sleep states, on every core. */
static int tsc_invariant(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007) return 0;
  __get_cpuid(0x80000007, &a, &b, &c, &d);
  return (d >> 8) & 1;
}

static double tsc_seconds_per_tick;

/* The counter's rate, measured against the monotonic clock over 20 ms, once per process. */
static void measure_tsc(void) {
  if (!tsc_invariant()) return;
  struct timespec pause = {0, 20000000};
  cprof_ticks t0 = read_clock(CLOCK_MONOTONIC), c0 = (cprof_ticks)__rdtsc();
  nanosleep(&pause, NULL);
  cprof_ticks t1 = read_clock(CLOCK_MONOTONIC), c1 = (cprof_ticks)__rdtsc();
  if (c1 > c0 && t1 > t0) tsc_seconds_per_tick = (double)(t1 - t0) * 1e-9 / (double)(c1 - c0);
}
#endif

static const cprof_timer builtin[] = {
  {"monotonic", 1e-9, read_monotonic, NULL, 0},
  {"cpu", 1e-9, read_cpu, NULL, 0},
  {"thread", 1e-9, read_thread, NULL, 0},
  {"counter", 1.0, read_counter, NULL, 1},
};


/* The default: the time-stamp counter where it is invariant (a read costs about 10 ns, against
   20 ns for clock_gettime, and every event reads the clock twice), else the monotonic clock. */
cprof_timer cprof_timer_default(void) {
  cprof_timer t;
  if (cprof_timer_get("tsc", &t) != NULL) t = builtin[0];
  return t;
}

/* Timers a host registered: few, registered at start-up, looked up when a profile is made. */
enum { MAX_REGISTERED = 16 };
static cprof_timer registered[MAX_REGISTERED];
static int nregistered;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

int cprof_timer_register(const cprof_timer *timer) {
  int ok = 0;
  if (!timer || !timer->name || !timer->read || !(timer->unit > 0)) return -1;
  pthread_mutex_lock(&registry_lock);
  for (int i = 0; i < nregistered && !ok; i++) {
    if (strcmp(registered[i].name, timer->name) == 0) {
      registered[i] = *timer;
      ok = 1;
    }
  }
  if (!ok && nregistered < MAX_REGISTERED) {
    registered[nregistered++] = *timer;
    ok = 1;
  }
  pthread_mutex_unlock(&registry_lock);
  return ok ? 0 : -1;
}

static int find_registered(const char *name, cprof_timer *out) {
  int found = 0;
  pthread_mutex_lock(&registry_lock);
  for (int i = 0; i < nregistered && !found; i++) {
    if (strcmp(registered[i].name, name) == 0) {
      *out = registered[i];
      found = 1;
    }
  }
  pthread_mutex_unlock(&registry_lock);
  return found;
}

const char *cprof_timer_get(const char *name, cprof_timer *out) {
  if (find_registered(name, out)) return NULL;
  for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++) {
    if (strcmp(builtin[i].name, name) == 0) {
      *out = builtin[i];
      return NULL;
    }
  }
  if (strcmp(name, "tsc") != 0) return "unknown timer";
#if CLOCK_HAVE_TSC
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, measure_tsc);
  if (tsc_seconds_per_tick <= 0)
    return "the CPU's time-stamp counter is not invariant, so the 'tsc' timer cannot be used";
  *out = (cprof_timer){"tsc", tsc_seconds_per_tick, clock_read_tsc, NULL, 0};
  return NULL;
#else
  return "the 'tsc' timer needs an x86 CPU";
#endif
}
