/*
 * bench/alloc.c — cprof's allocator against Lua's default one (realloc/free, as luaL_newstate
 * sets it up) and, when libmimalloc.so.2 can be loaded, against mimalloc.
 *
 *   build/lua5.4/bench-alloc [--reps=N] [--scale=F] [--only=a,b] [--check] bench/alloc.lua
 *
 * Every run of a workload under an allocator is a process of its own (this program, exec'd
 * again with --child), so that its peak resident memory (ru_maxrss) and CPU time (user +
 * system, from wait4) are its own. Runs are interleaved (default, cprof, mimalloc, default,
 * ...) and the fastest of --reps is reported, with the median peak RSS. Every allocator must
 * give the same checksum. cprof runs with its statistics (they are always on); --check also
 * verifies its invariants and that its count equals Lua's at the end of each run.
 *
 * "cprof+attr" is cprof's allocator with memory attribution on (mem/memattr.c, as a profile
 * runs it: every block's node and birth time in its slab's side table, its node's record of
 * sizes, lifetimes and Lua types updated at each allocation and free), every allocation
 * charged to one node. The profiler's hook, whose cost is the same with any allocator, is left
 * out, and with it the clock it moves: this is the allocator's side of a memory profile.
 *
 * mimalloc is loaded with dlopen in its own child only, so the other runs keep glibc's malloc.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "cprof.h"
#include "mem/lalloc.h"
#include "mem/memattr.h"

enum { V_DEFAULT, V_CPROF, V_ATTR, V_MIMALLOC, NV };
static const char *const vnames[NV] = {"default", "cprof", "cprof+attr", "mimalloc"};

/* Every allocation is charged to node 1, as a profile's stack with one frame would have it.
   The clock is a profile's at its hook's events, which this leaves out: it stands still, and
   every lifetime is 0. */
static const uint32_t node_one = 1;
static const uint32_t *const node_at = &node_one;
static const cprof_ticks attr_clock = 0;

/* ---- the child: one workload under one allocator --------------------------------------- */

static void *(*mi_realloc_p)(void *, size_t);
static void (*mi_free_p)(void *);

static void *mi_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  (void)osize;
  if (nsize == 0) {
    mi_free_p(ptr);
    return NULL;
  }
  return mi_realloc_p(ptr, nsize);
}

static int load_mimalloc(void) {
  void *lib = dlopen("libmimalloc.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return 0;
  *(void **)&mi_realloc_p = dlsym(lib, "mi_realloc");
  *(void **)&mi_free_p = dlsym(lib, "mi_free");
  return mi_realloc_p && mi_free_p;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int child(int variant, const char *script, const char *workload, const char *size, int check) {
  lua_State *L = NULL;
  if (variant == V_DEFAULT) L = luaL_newstate();
  else if (variant == V_CPROF || variant == V_ATTR) L = cprof_newstate();
  else if (load_mimalloc()) L = lua_newstate(mi_lua_alloc, NULL);
  if (!L) {
    fprintf(stderr, "bench-alloc: cannot make a %s state\n", vnames[variant]);
    return 2;
  }
  luaL_openlibs(L);
  MemAttr attr = {0};
  if (variant == V_ATTR) {
    lalloc_attr_start(&attr, L, &node_at, &attr_clock);
    if (!attr.heap) {
      fprintf(stderr, "bench-alloc: cannot start memory attribution\n");
      return 2;
    }
  }
  if (luaL_loadfile(L, script) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) {
    fprintf(stderr, "bench-alloc: %s\n", lua_tostring(L, -1));
    return 2;
  }
  lua_getfield(L, -1, workload);
  lua_pushinteger(L, (lua_Integer)strtoll(size, NULL, 10));
  double t0 = now();
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    fprintf(stderr, "bench-alloc: %s: %s\n", workload, lua_tostring(L, -1));
    return 2;
  }
  double t1 = now();
  char sum[64];
  snprintf(sum, sizeof sum, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "?");
  if (variant == V_ATTR) {
    const MemStat *m = memattr_of(&attr, 1);
    if (!m || m->bytes == 0 || attr.lost) {
      fprintf(stderr, "bench-alloc: attribution charged nothing (%llu lost)\n",
              (unsigned long long)attr.lost);
      return 3;
    }
    lalloc_attr_stop(&attr);
    memattr_free(&attr);
  }
  if (variant != V_DEFAULT && variant != V_MIMALLOC && check) {
    lua_pop(L, 1);
    lua_gc(L, LUA_GCCOLLECT, 0);
    cprof_mem_totals t;
    size_t count = (size_t)lua_gc(L, LUA_GCCOUNT, 0) * 1024 + (size_t)lua_gc(L, LUA_GCCOUNTB, 0);
    const char *err = lalloc_check(lalloc_of(L));
    if (cprof_mem_totals_of(L, &t) != 0 || t.lua_bytes != count || err) {
      fprintf(stderr, "bench-alloc: check failed: %s (count %zu, cprof %zu)\n",
              err ? err : "counts differ", count, t.lua_bytes);
      return 3;
    }
  }
  lua_close(L);
  printf("%s %.6f\n", sum, t1 - t0);
  return 0;
}

/* ---- the parent ------------------------------------------------------------------------ */

typedef struct result {
  double cpu, wall;   /* seconds */
  long rss_kb;
  char sum[64];
  int ok;
} result;

static int run(const char *self, int variant, const char *script, const char *workload, long size,
               int check, result *r) {
  int fd[2];
  if (pipe(fd) != 0) return -1;
  char sizebuf[32];
  snprintf(sizebuf, sizeof sizebuf, "%ld", size);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    close(fd[0]);
    dup2(fd[1], 1);
    close(fd[1]);
    char *argv[] = {(char *)self, "--child", (char *)vnames[variant], (char *)script,
                    (char *)workload, sizebuf, check ? "1" : "0", NULL};
    execv(self, argv);
    _exit(127);
  }
  close(fd[1]);
  char out[256] = "";
  size_t got = 0;
  ssize_t k;
  while ((k = read(fd[0], out + got, sizeof out - 1 - got)) > 0) got += (size_t)k;
  out[got] = '\0';
  close(fd[0]);
  int status;
  struct rusage ru;
  while (wait4(pid, &status, 0, &ru) < 0)
    if (errno != EINTR) return -1;
  memset(r, 0, sizeof *r);
  r->ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
          sscanf(out, "%63s %lf", r->sum, &r->wall) == 2;
  r->cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
  r->rss_kb = ru.ru_maxrss;
  return 0;
}

static const char *verdict(int time_ok, int rss_ok) {
  return time_ok && rss_ok ? "met" : !time_ok && !rss_ok ? "MISSED (time, rss)"
                                   : !time_ok ? "MISSED (time)" : "MISSED (rss)";
}

static int cmp_long(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

static int listed(const char *only, const char *name) {
  if (!only) return 1;
  size_t n = strlen(name);
  for (const char *p = only; (p = strstr(p, name)); p += n)
    if ((p == only || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return 1;
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 7 && strcmp(argv[1], "--child") == 0) {
    int v = 0;
    while (v < NV && strcmp(vnames[v], argv[2]) != 0) v++;
    if (v == NV) return 2;
    return child(v, argv[3], argv[4], argv[5], argv[6][0] == '1');
  }
  int reps = 3, check = 0;
  double scale = 1.0;
  const char *only = NULL, *script = NULL;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--reps=", 7) == 0) reps = atoi(argv[i] + 7);
    else if (strncmp(argv[i], "--scale=", 8) == 0) scale = atof(argv[i] + 8);
    else if (strncmp(argv[i], "--only=", 7) == 0) only = argv[i] + 7;
    else if (strcmp(argv[i], "--check") == 0) check = 1;
    else if (argv[i][0] != '-' && !script) script = argv[i];
    else {
      fprintf(stderr, "usage: %s [--reps=N] [--scale=F] [--only=a,b] [--check] bench/alloc.lua\n", argv[0]);
      return 2;
    }
  }
  if (!script || reps < 1 || scale <= 0) {
    fprintf(stderr, "usage: %s [--reps=N] [--scale=F] [--only=a,b] [--check] bench/alloc.lua\n", argv[0]);
    return 2;
  }
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    perror("bench-alloc: /proc/self/exe");
    return 2;
  }
  self[n] = '\0';
  int have_mi = load_mimalloc();
  int nv = have_mi ? NV : NV - 1;

  /* The workload names and sizes, from the script. */
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  if (luaL_loadfile(L, script) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) {
    fprintf(stderr, "bench-alloc: %s\n", lua_tostring(L, -1));
    return 2;
  }
  printf("Lua allocators: time is CPU seconds (user+system), fastest of %d; RSS is peak resident, median.\n", reps);
  printf("ratio = allocator / default (below 1.00 is faster or smaller). cprof keeps its statistics.\n");
  if (!have_mi) printf("mimalloc: libmimalloc.so.2 not found (apt-get install libmimalloc-dev): column left out.\n");
  printf("\n%-13s %9s %9s %6s %9s %6s", "workload", "default", "cprof", "ratio", "+attr", "ratio");
  if (have_mi) printf(" %9s %6s", "mimalloc", "ratio");
  printf(" | %9s %9s %6s %9s %6s", "RSS def", "RSS cprof", "ratio", "RSS attr", "ratio");
  if (have_mi) printf(" %9s %6s", "RSS mi", "ratio");
  printf("  goal  goal+attr\n");

  int status = 0;
  lua_getfield(L, -1, "order");
  int nw = (int)luaL_len(L, -1);
  for (int w = 1; w <= nw; w++) {
    lua_rawgeti(L, -1, w);
    const char *name = lua_tostring(L, -1);
    lua_getfield(L, -3, "sizes");
    lua_getfield(L, -1, name);
    long size = (long)((double)lua_tointeger(L, -1) * scale);
    if (strcmp(name, "binary_trees") == 0) size = (long)lua_tointeger(L, -1);  /* a depth */
    lua_pop(L, 2);
    if (!listed(only, name)) {
      lua_pop(L, 1);
      continue;
    }
    double best[NV];
    long rss[NV][64];
    char sum0[64] = "";
    int failed = 0;
    if (reps > 64) reps = 64;
    for (int v = 0; v < nv; v++) best[v] = 1e300;
    for (int r = 0; r < reps && !failed; r++) {
      for (int v = 0; v < nv; v++) {
        result res;
        if (run(self, v, script, name, size, check, &res) != 0 || !res.ok) {
          fprintf(stderr, "bench-alloc: %s under %s failed\n", name, vnames[v]);
          failed = 1;
          break;
        }
        if (!sum0[0]) memcpy(sum0, res.sum, sizeof sum0);
        else if (strcmp(sum0, res.sum) != 0) {
          fprintf(stderr, "bench-alloc: %s: checksum %s under %s, %s under default\n", name,
                  res.sum, vnames[v], sum0);
          failed = 1;
        }
        if (res.cpu < best[v]) best[v] = res.cpu;
        rss[v][r] = res.rss_kb;
      }
    }
    if (failed) {
      status = 1;
      lua_pop(L, 1);
      continue;
    }
    long med[NV];
    for (int v = 0; v < nv; v++) {
      qsort(rss[v], (size_t)reps, sizeof rss[v][0], cmp_long);
      med[v] = rss[v][reps / 2];
    }
    double tr = best[V_CPROF] / best[V_DEFAULT], ta = best[V_ATTR] / best[V_DEFAULT];
    double rr = (double)med[V_CPROF] / (double)med[V_DEFAULT];
    double ra = (double)med[V_ATTR] / (double)med[V_DEFAULT];
    printf("%-13s %8.3fs %8.3fs %5.2fx %8.3fs %5.2fx", name, best[V_DEFAULT], best[V_CPROF], tr,
           best[V_ATTR], ta);
    if (have_mi) printf(" %8.3fs %5.2fx", best[V_MIMALLOC], best[V_MIMALLOC] / best[V_DEFAULT]);
    printf(" | %7.1fMB %7.1fMB %5.2fx %7.1fMB %5.2fx", med[V_DEFAULT] / 1024.0,
           med[V_CPROF] / 1024.0, rr, med[V_ATTR] / 1024.0, ra);
    if (have_mi)
      printf(" %7.1fMB %5.2fx", med[V_MIMALLOC] / 1024.0, (double)med[V_MIMALLOC] / (double)med[V_DEFAULT]);
    /* Goals: faster everywhere, by 15% on binary trees and table churn (with attribution: by
       10% there, and no slower elsewhere); peak RSS at most the larger of 1.1x and +2 MiB of
       the default's. */
    int heavy = strcmp(name, "binary_trees") == 0 || strcmp(name, "table_churn") == 0;
    double rss_cap = (double)med[V_DEFAULT] * 1.1;
    if (rss_cap < (double)med[V_DEFAULT] + 2048) rss_cap = (double)med[V_DEFAULT] + 2048;
    printf("  %s  %s\n", verdict(tr <= (heavy ? 0.85 : 1.0), (double)med[V_CPROF] <= rss_cap),
           verdict(ta <= (heavy ? 0.9 : 1.0), (double)med[V_ATTR] <= rss_cap));
    fflush(stdout);
    lua_pop(L, 1);
  }
  lua_close(L);
  return status;
}
