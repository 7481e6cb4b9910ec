/* Live dumps (hook/live.h). The handler of the signal sets a flag and nothing else, as only
   async-signal-safe work may run there; the timer thread sleeps on a condition variable, so
   that stopping it never waits out an interval, and after setting the flag waits for the dump
   to end: each interval starts when the last dump ended. Both are undone by the handle's
   stop() or __gc, which run before the module's code is unloaded with the state. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <lauxlib.h>

#include "dump/format.h"
#include "hook/live.h"
#include "util/compat.h"

#define LIVE_MT "cprof.Live"

atomic_int live_wanted;

static const char DUMP_KEY = 'd';  /* registry: the dump function */
static const char LIVE_KEY = 'l';  /* registry: its Live (light userdata) */

/* Whether a handle is on in this process: the signal's handler and the flag are per process. */
static atomic_int live_on;

typedef struct Live {
  int on;
  int sig;                 /* 0: none */
  struct sigaction old;    /* the signal's handler before */
  int ticking;             /* the timer thread runs */
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stop;
  double seconds;
  /* Under mu: the dumps written, when the last one ended (CLOCK_MONOTONIC) and how long it
     took, in seconds. */
  unsigned long dumps;
  struct timespec ended;
  double took;
} Live;

static void on_signal(int sig) {
  (void)sig;
  atomic_store_explicit(&live_wanted, 1, memory_order_relaxed);
}

static void add_seconds(struct timespec *t, double seconds) {
  double whole = floor(seconds);
  t->tv_sec += (time_t)whole;
  t->tv_nsec += (long)((seconds - whole) * 1e9);
  if (t->tv_nsec >= 1000000000L) {
    t->tv_sec++;
    t->tv_nsec -= 1000000000L;
  }
}

/* Asks for a dump at the end of each interval, then waits for it to be written. An interval
   starts when the last dump (whoever asked for it) ended, and lasts at least as long as that
   dump took: a dump longer than the interval would otherwise be asked for again as soon as it
   ended, and the program would do little else (CPROF_INTERVAL=0.01 made a program of 0.14 s
   take 65 s). So dumps take at most half of the program's time. */
static void *ticker(void *ud) {
  Live *lv = ud;
  pthread_mutex_lock(&lv->mu);
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  add_seconds(&next, lv->seconds);
  unsigned long seen = lv->dumps;
  while (!lv->stop) {
    if (lv->dumps != seen) {
      seen = lv->dumps;
      next = lv->ended;
      add_seconds(&next, lv->took > lv->seconds ? lv->took : lv->seconds);
    }
    if (pthread_cond_timedwait(&lv->cv, &lv->mu, &next) != ETIMEDOUT || lv->stop ||
        lv->dumps != seen)
      continue;
    atomic_store_explicit(&live_wanted, 1, memory_order_relaxed);
    while (!lv->stop && lv->dumps == seen) pthread_cond_wait(&lv->cv, &lv->mu);
  }
  pthread_mutex_unlock(&lv->mu);
  return NULL;
}

static double seconds_between(const struct timespec *a, const struct timespec *b) {
  return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) * 1e-9;
}

/* The stack a dump needs: the writer's and LIVE_LUA_STACK, a wide margin, for the Lua functions
   on the way to it (cprof.Live:dump, dump_stats, the data). A return nearer the stack's limit (a
   program deep in recursion, or handling a stack overflow) leaves the request to a later one,
   which has the room: the dump would fail there, and be lost. */
#define LIVE_LUA_STACK 400

/* Runs under lua_pcall with (&room, dump function), because LuaJIT's lua_checkstack raises
   "stack overflow" where Lua 5.4's returns 0: out of the hook, that error would be the
   program's. */
static int dump_if_room(lua_State *L) {
  int *room = lua_touserdata(L, 1);
  if (!lua_checkstack(L, DUMP_WRITE_STACK + LIVE_LUA_STACK)) return 0;
  *room = 1;
  lua_call(L, 0, 0);
  return 0;
}

int live_dump(Profiler *P, lua_State *L) {
  /* A hook has LUA_MINSTACK slots (both Luas give it them): enough for these three. */
  lua_rawgetp(L, LUA_REGISTRYINDEX, &DUMP_KEY);
  if (!lua_isfunction(L, -1)) {
    lua_pop(L, 1);
    return 0;
  }
  int room = 0;
  lua_pushcfunction(L, dump_if_room);
  lua_insert(L, -2);
  lua_pushlightuserdata(L, &room);
  lua_insert(L, -2);
  atomic_store_explicit(&live_wanted, 0, memory_order_relaxed);
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  P->mem.in_hook = 1;
  /* The dump function reports its own errors; one here is out of memory (the next request
     tries again), or LuaJIT's want of room. */
  if (lua_pcall(L, 2, 0, 0) != LUA_OK) lua_pop(L, 1);
  P->mem.in_hook = 0;
  if (!room) {
    atomic_store_explicit(&live_wanted, 1, memory_order_relaxed);
    return 0;
  }
  clock_gettime(CLOCK_MONOTONIC, &end);
  /* Read after the dump, which may have stopped the handle. */
  lua_rawgetp(L, LUA_REGISTRYINDEX, &LIVE_KEY);
  Live *lv = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (lv) {
    pthread_mutex_lock(&lv->mu);
    lv->dumps++;
    lv->ended = end;
    lv->took = seconds_between(&start, &end);
    pthread_cond_signal(&lv->cv);
    pthread_mutex_unlock(&lv->mu);
  }
  return 1;
}

static void stop(lua_State *L, Live *lv) {
  if (!lv->on) return;
  lv->on = 0;
  if (lv->ticking) {
    pthread_mutex_lock(&lv->mu);
    lv->stop = 1;
    pthread_cond_signal(&lv->cv);
    pthread_mutex_unlock(&lv->mu);
    pthread_join(lv->thread, NULL);
    lv->ticking = 0;
  }
  pthread_cond_destroy(&lv->cv);
  pthread_mutex_destroy(&lv->mu);
  if (lv->sig) sigaction(lv->sig, &lv->old, NULL);
  lua_pushnil(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &DUMP_KEY);
  lua_pushnil(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &LIVE_KEY);
  atomic_store(&live_wanted, 0);
  atomic_store(&live_on, 0);
}

static int l_stop(lua_State *L) {
  stop(L, luaL_checkudata(L, 1, LIVE_MT));
  return 0;
}

/* The signals a program is likely to leave free for this. */
static int signal_number(const char *name) {
  static const struct {
    const char *name;
    int sig;
  } sigs[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP}};
  if (strncasecmp(name, "SIG", 3) == 0) name += 3;
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    if (strcasecmp(name, sigs[i].name) == 0) return sigs[i].sig;
  return 0;
}

/* The mutex and the condition variable (on the monotonic clock) the timer thread waits on. */
static int init_sync(Live *lv) {
  pthread_condattr_t ca;
  int r = pthread_condattr_init(&ca);
  if (r != 0) return r;
  r = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  if (r == 0) r = pthread_cond_init(&lv->cv, &ca);
  pthread_condattr_destroy(&ca);
  if (r == 0 && (r = pthread_mutex_init(&lv->mu, NULL)) != 0) pthread_cond_destroy(&lv->cv);
  return r;
}

/* A thread that takes none of the process's signals: they keep going to the program's. */
static int start_ticker(Live *lv) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int r = pthread_create(&lv->thread, NULL, ticker, lv);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return r;
}

static int l_live(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  const char *signame = luaL_optstring(L, 2, NULL);
  double seconds = luaL_optnumber(L, 3, 0);
  int sig = 0;
  if (signame && !(sig = signal_number(signame)))
    return luaL_error(L, "cprof: signal '%s': not one cprof takes (USR1, USR2 or HUP)", signame);
  if (!(seconds >= 0 && seconds <= 1e9))
    return luaL_error(L, "cprof: the interval must be from 0 to 1e9 seconds, not %f", seconds);
  if (atomic_exchange(&live_on, 1))
    return luaL_error(L, "cprof: live dumps are on already in this process");
  Live *lv = lua_newuserdata(L, sizeof *lv);
  memset(lv, 0, sizeof *lv);
  luaL_getmetatable(L, LIVE_MT);
  lua_setmetatable(L, -2);
  int err = init_sync(lv);
  if (err != 0) {
    atomic_store(&live_on, 0);
    return luaL_error(L, "cprof: live dumps: %s", strerror(err));
  }
  lv->on = 1;  /* from here stop() undoes what was done */
  lua_pushvalue(L, 1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &DUMP_KEY);
  lua_pushlightuserdata(L, lv);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &LIVE_KEY);
  if (seconds > 0) {
    lv->seconds = seconds;
    if ((err = start_ticker(lv)) != 0) {
      stop(L, lv);
      return luaL_error(L, "cprof: live dumps: %s", strerror(err));
    }
    lv->ticking = 1;
  }
  if (sig) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;  /* the program's system calls go on as without cprof */
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, &lv->old) != 0) {
      err = errno;
      stop(L, lv);
      return luaL_error(L, "cprof: signal '%s': %s", signame, strerror(err));
    }
    lv->sig = sig;
  }
  return 1;
}

void live_register(lua_State *L) {
  if (luaL_newmetatable(L, LIVE_MT)) {
    lua_pushcfunction(L, l_stop);
    lua_setfield(L, -2, "__gc");
    lua_newtable(L);
    lua_pushcfunction(L, l_stop);
    lua_setfield(L, -2, "stop");
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, l_live);
  lua_setfield(L, -2, "live");
}
