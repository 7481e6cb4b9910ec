/*
 * tests/test_dump_out.c — dump/out.c writing a file, with a temporary file that has a name from
 * the start (named_temp: what happens where O_TMPFILE does not work) and with one that has
 * none until the end: the target gets the whole file only at the end, a failure leaves
 * nothing, and the temporary file of a writer killed mid-way is removed by the next writer of
 * the same target, also of a name too long to take the temporary file's suffix whole.
 */
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lualib.h>

#include "ctest.h"
#include "dump/out.h"

enum { OPEN, WRITE, COMMIT };

typedef struct Step {
  DumpOut *o;
  int what;
} Step;

static int step_body(lua_State *L) {
  Step *s = lua_touserdata(L, 1);
  if (s->what == OPEN) out_open_file(s->o);
  else if (s->what == WRITE) out_bytes(s->o, "XXXXdump bytes", 14);
  else out_commit(s->o, (const unsigned char *)"head", 4, 0);
  return 0;
}

/* Runs one step protected; 0 or the Lua error status (the message printed). */
static int step(DumpOut *o, int what) {
  Step s = {o, what};
  lua_pushcfunction(o->L, step_body);
  lua_pushlightuserdata(o->L, &s);
  int status = lua_pcall(o->L, 1, 0, 0);
  if (status) {
    fprintf(stderr, "step %d: %s\n", what, lua_tostring(o->L, -1));
    lua_pop(o->L, 1);
  }
  return status;
}

/* How many names dir holds, and the first one readdir gives. */
static int count(const char *dir, char *first, size_t size) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  first[0] = '\0';
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (n++ == 0) snprintf(first, size, "%s", e->d_name);
  }
  closedir(d);
  return n;
}

static DumpOut new_out(lua_State *L, const char *path, int named) {
  DumpOut o;
  memset(&o, 0, sizeof o);
  o.L = L;
  o.name = path;
  o.fd = -1;
  o.named_temp = named;
  return o;
}

static void release(DumpOut *o) {
  out_release(o);
  free(o->buf);
}

int main(int argc, char **argv) {
  ctest_seed(argc, argv);
  lua_State *L = luaL_newstate();
  char dir[] = "/tmp/cprof-test-out-XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  char path[128], name[256];
  snprintf(path, sizeof path, "%s/out.prof", dir);

  for (int named = 0; named <= 1; named++) {
    DumpOut o = new_out(L, path, named);
    CHECK(step(&o, OPEN) == 0, "open (named %d)", named);
    int n = count(dir, name, sizeof name);
    if (named) {
      char want[64];
      snprintf(want, sizeof want, "out.prof.tmp.%ld.", (long)getpid());
      CHECK(n == 1 && strncmp(name, want, strlen(want)) == 0 && strlen(name) == strlen(want) + 8,
            "the named temporary file: %d files, %s", n, name);
    } else {
      CHECK(n == 0, "O_TMPFILE: no name until the end, but %d files (%s)", n, name);
    }
    CHECK(step(&o, WRITE) == 0 && step(&o, COMMIT) == 0, "write and commit (named %d)", named);
    release(&o);
    CHECK(count(dir, name, sizeof name) == 1 && strcmp(name, "out.prof") == 0, "only the target: %s", name);
    FILE *f = fopen(path, "rb");
    char got[32] = "";
    size_t k = fread(got, 1, sizeof got - 1, f);
    fclose(f);
    CHECK(k == 14 && memcmp(got, "headdump bytes", 14) == 0, "the target's bytes: %.*s", (int)k, got);
    unlink(path);

    /* A failure before the end: out_release leaves nothing. */
    o = new_out(L, path, named);
    CHECK(step(&o, OPEN) == 0 && step(&o, WRITE) == 0, "open and write (named %d)", named);
    release(&o);
    CHECK(count(dir, name, sizeof name) == 0, "a failure left %s", name);
  }

  /* A writer killed after creating its named temporary file; the next one removes the file.
     Also for a name of 250 bytes, whose temporary files keep only a prefix of it. */
  char longpath[512], longname[251];
  memset(longname, 'l', 250);
  longname[250] = '\0';
  snprintf(longpath, sizeof longpath, "%s/%s", dir, longname);
  const char *const targets[] = {path, longpath};
  for (int t = 0; t < 2; t++) {
    const char *base = strrchr(targets[t], '/') + 1;
    pid_t child = fork();
    if (child == 0) {
      DumpOut o = new_out(L, targets[t], 1);
      if (step(&o, OPEN) == 0) raise(SIGKILL);
      _exit(1);
    }
    int status;
    waitpid(child, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the child was killed");
    char want[300];
    snprintf(want, sizeof want, "%.*s.tmp.%ld.", (int)(t ? 255 - 24 : strlen(base)), base, (long)child);
    CHECK(count(dir, name, sizeof name) == 1 && strncmp(name, want, strlen(want)) == 0 &&
              strlen(name) == strlen(want) + 8,
          "the killed writer's file: %s", name);
    DumpOut o = new_out(L, targets[t], 1);
    CHECK(step(&o, OPEN) == 0 && step(&o, WRITE) == 0 && step(&o, COMMIT) == 0, "the next write");
    release(&o);
    CHECK(count(dir, name, sizeof name) == 1 && strcmp(name, base) == 0, "left: %s", name);
    unlink(targets[t]);
  }
  rmdir(dir);
  lua_close(L);
  return ctest_done("test_dump_out");
}
