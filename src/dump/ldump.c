/*
 * dump/ldump.c — cprof.core.write_dump(path, data) and cprof.core.read_dump(path).
 * The format is docs/FORMAT.md; the work is done by write.c and read.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>

#include "dump/format.h"
#include "dump/ldump.h"
#include "util/compat.h"
#include "util/fault.h"

/* core.write_dump(path, data) -> true; raises "cprof: <path>: <what is wrong>". */
static int l_write_dump(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  luaL_checkany(L, 2);
  if (dump_write_file(L, path, 2)) return lua_error(L);
  lua_pushboolean(L, 1);
  return 1;
}

/* The whole file in a fault_malloc'd buffer, or NULL with *err set (an errno, or ENOMEM). */
static unsigned char *slurp(const char *path, size_t *len, int *err, const char **what) {
  int fd;
  do fd = open(path, O_RDONLY | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    *err = errno;
    *what = "cannot open";
    return NULL;
  }
  struct stat st;
  size_t cap = 65536;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size < SIZE_MAX - 1)
    cap = (size_t)st.st_size + 1; /* + 1: the read that sees the end needs room */
  unsigned char *buf = fault_malloc(cap);
  size_t n = 0;
  *what = "cannot read";
  while (buf) {
    if (n == cap) {
      if (cap > SIZE_MAX / 2) break;
      unsigned char *b = fault_realloc(buf, cap * 2);
      if (!b) break;
      buf = b;
      cap *= 2;
    }
    ssize_t k = read(fd, buf + n, cap - n);
    if (k == 0) {
      close(fd);
      *len = n;
      return buf;
    }
    if (k < 0) {
      if (errno == EINTR) continue;
      *err = errno;
      free(buf);
      close(fd);
      return NULL;
    }
    n += (size_t)k;
  }
  free(buf);
  close(fd);
  *err = ENOMEM;
  *what = NULL;
  return NULL;
}

/* core.read_dump(path) -> the data table; raises "cprof: <path>: <what is wrong>". */
static int l_read_dump(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  size_t len = 0;
  int err = 0;
  const char *what;
  unsigned char *buf = slurp(path, &len, &err, &what);
  if (!buf) {
    /* Not luaL_error: the message must start with "cprof: <path>", without a position. */
    if (!what) lua_pushfstring(L, "cprof: %s: out of memory", path);
    else lua_pushfstring(L, "cprof: %s: %s: %s", path, what, strerror(err));
    return lua_error(L);
  }
  int failed = dump_read_memory(L, path, buf, len);
  free(buf);
  if (failed) return lua_error(L);
  return 1;
}

void ldump_register(lua_State *L) {
  lua_pushcfunction(L, l_write_dump);
  lua_setfield(L, -2, "write_dump");
  lua_pushcfunction(L, l_read_dump);
  lua_setfield(L, -2, "read_dump");
}
