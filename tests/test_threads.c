/*
 * tests/test_threads.c — several threads, each with its own lua_State, require cprof.core at
 * the same moment (a barrier lets them go together), profile the same work and dump it, three
 * rounds each, so that one thread's module set-up overlaps another's hook. Every dump must hold
 * the exact counts and the names learnt at set-up (the standard library's iterators, the
 * functions coroutine.wrap makes). The first thread then takes live dumps on a timer (the timer
 * thread and the hook meet), while the others' hooks see the process's request and leave it to
 * the state that asked. `make ctest` also runs it built with ThreadSanitizer against
 * objects built with it (build/ctest/tsan/), which fails on any data race in cprof's code.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lualib.h>

#include "ctest.h"

int luaopen_cprof_core(lua_State *L);

enum { NTHREADS = 4, ROUNDS = 3, CALLS = 200 };

/* (path, calls, live) -> nil, or a message naming the first count or name that is wrong. */
static const char WORK[] =
    "local path, calls, live = ...\n"
    "local core = require 'cprof.core'\n"
    "local p = core.new { timer = 'counter' }\n"
    "local function leaf(i) return i % 3 end\n"
    "local function work(n)\n"
    "  local s = 0\n"
    "  for _, v in ipairs({1, 2, 3}) do s = s + leaf(v) end\n"
    "  for w in string.gmatch('a b c', '%a') do s = s + #w end\n"
    "  local co = coroutine.wrap(function() for i = 1, 3 do coroutine.yield(leaf(i)) end end)\n"
    "  s = s + co() + co()\n"
    "  local _, r = coroutine.resume(coroutine.create(leaf), n)\n"
    "  return s + r\n"
    "end\n"
    "p:enable()\n"
    "for i = 1, calls do work(i) end\n"
    "p:disable()\n"
    "core.write_dump(path, p:snapshot())\n"
    "local f, got = core.read_dump(path).frames, {}\n"
    "for i = 1, f.n do got[f.name[i]] = f.ncalls[i] end\n"
    "local want = { work = calls, leaf = 6 * calls, ['ipairs iterator'] = 4 * calls,\n"
    "  ['string.gmatch iterator'] = 4 * calls, ['coroutine.resume'] = calls }\n"
    "for name, n in pairs(want) do\n"
    "  if got[name] ~= n then return name .. ': ' .. tostring(got[name]) .. ' calls, not ' .. n end\n"
    "end\n"
    "local wrapped\n"
    "for name, n in pairs(got) do\n"
    "  if name:find('^wrap%(') then wrapped = n end\n"
    "end\n"
    "if wrapped ~= 2 * calls then return 'wrap(...): ' .. tostring(wrapped) .. ' calls' end\n"
    "if live then\n"
    "  local dumps = 0\n"
    "  local h = core.live(function()\n"
    "    dumps = dumps + 1\n"
    "    core.write_dump(path, p:snapshot())\n"
    "  end, nil, 0.001)\n"
    "  p:enable()\n"
    "  while dumps < 3 do work(0) end\n"
    "  p:disable()\n"
    "  h:stop()\n"
    "end\n";

typedef struct Job {
  int id;
  const char *dir;
  int failed;
  char why[512];
} Job;

static pthread_barrier_t together;

/* One state: require, profile, dump, check. 0, or 1 with job->why set. */
static int one_round(Job *job, int round) {
  lua_State *L = luaL_newstate();
  if (!L) {
    snprintf(job->why, sizeof job->why, "no state");
    return 1;
  }
  luaL_openlibs(L);
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, luaopen_cprof_core);
  lua_setfield(L, -2, "cprof.core");
  lua_pop(L, 2);
  char path[256];
  snprintf(path, sizeof path, "%s/t%d.%d.prof", job->dir, job->id, round);
  if (round == 0) pthread_barrier_wait(&together);
  int failed = 1;
  if (luaL_loadstring(L, WORK) != LUA_OK) {
    snprintf(job->why, sizeof job->why, "%s", lua_tostring(L, -1));
  } else {
    lua_pushstring(L, path);
    lua_pushinteger(L, CALLS);
    lua_pushboolean(L, job->id == 0);
    if (lua_pcall(L, 3, 1, 0) != LUA_OK || !lua_isnil(L, -1))
      snprintf(job->why, sizeof job->why, "round %d: %s", round, lua_tostring(L, -1));
    else
      failed = 0;
  }
  lua_close(L);
  unlink(path);
  return failed;
}

static void *job_main(void *ud) {
  Job *job = ud;
  for (int round = 0; round < ROUNDS && !job->failed; round++) job->failed = one_round(job, round);
  return NULL;
}

int main(void) {
  char dir[] = "/tmp/cprof-test-threads-XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  CHECK(pthread_barrier_init(&together, NULL, NTHREADS) == 0, "barrier");
  pthread_t th[NTHREADS];
  Job jobs[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    jobs[i] = (Job){.id = i, .dir = dir};
    CHECK(pthread_create(&th[i], NULL, job_main, &jobs[i]) == 0, "thread %d", i);
  }
  for (int i = 0; i < NTHREADS; i++) {
    pthread_join(th[i], NULL);
    CHECK(!jobs[i].failed, "thread %d: %s", i, jobs[i].why);
  }
  pthread_barrier_destroy(&together);
  CHECK(rmdir(dir) == 0, "the dumps were removed");
  return ctest_done("test_threads");
}
