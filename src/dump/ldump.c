/*
 * dump/ldump.c — cprof.core.write_dump(path, data), cprof.core.read_dump(path),
 * cprof.core.file_type(path) and cprof.core.write_file(path, bytes). The format is docs/FORMAT.md; the work is done by write.c and
 * read.c; here, the paths and the reading of the file.
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
#include "dump/out.h"
#include "util/compat.h"
#include "util/fault.h"

/* The path argument: a string without NUL bytes (the system would read it cut short at the
   first one), not empty. Raises "cprof: <path, NULs shown as \0>: ..." otherwise. */
static const char *check_path(lua_State *L, int idx) {
  size_t len;
  const char *path = luaL_checklstring(L, idx, &len);
  if (len == 0) luaL_error(L, "cprof: \"\": the file name is empty");
  if (memchr(path, '\0', len) == NULL) return path;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "cprof: ");
  for (size_t i = 0; i < len; i++) {
    if (path[i]) luaL_addchar(&b, path[i]);
    else luaL_addstring(&b, "\\0");
  }
  luaL_addstring(&b, ": the file name holds a NUL byte");
  luaL_pushresult(&b);
  lua_error(L);
  return NULL;
}

/* core.write_dump(path, data) -> true; raises "cprof: <path>: <what is wrong>". */
static int l_write_dump(lua_State *L) {
  const char *path = check_path(L, 1);
  luaL_checkany(L, 2);
  if (dump_write_file(L, path, 2)) return lua_error(L);
  lua_pushboolean(L, 1);
  return 1;
}

/* What a file that is not a regular one is, for messages. */
/* core.write_file(path, bytes) -> true: the bytes written as a dump is (dump/out.h); raises
   "cprof: <path>: <what is wrong>". For the exports' files. */
static int l_write_file(lua_State *L) {
  const char *path = check_path(L, 1);
  size_t n;
  const char *s = luaL_checklstring(L, 2, &n);
  if (out_write_file(L, path, s, n)) return lua_error(L);
  lua_pushboolean(L, 1);
  return 1;
}

static const char *file_type(mode_t m) {
  return S_ISDIR(m) ? "directory" : S_ISCHR(m) ? "character device" : S_ISBLK(m) ? "block device"
       : S_ISFIFO(m) ? "FIFO" : S_ISSOCK(m) ? "socket" : "special file";
}

/* The whole file in a fault_malloc'd buffer, or NULL with *what set: the message after the
   path, with *err the errno to add to it (0: none). Only a regular file is read, and at most
   DUMP_MAX_FILE bytes of it, however it grows while being read: never /dev/zero without end,
   never a FIFO's wait for a writer (it is opened with O_NONBLOCK, then refused). */
static unsigned char *slurp(const char *path, size_t *len, int *err, const char **what) {
  int fd;
  do fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    *err = errno;
    *what = "cannot open";
    return NULL;
  }
  struct stat st;
  *err = 0;
  *what = NULL;
  if (fstat(fd, &st) != 0) {
    *err = errno;
    *what = "cannot read";
  } else if (!S_ISREG(st.st_mode)) {
    *what = file_type(st.st_mode);
  } else if ((uint64_t)st.st_size > DUMP_MAX_FILE) {
    *what = "too large";
  }
  if (*err || *what) {
    close(fd);
    return NULL;
  }
  size_t cap = (size_t)st.st_size + 1; /* + 1: the read that sees the end needs room */
  unsigned char *buf = fault_malloc(cap);
  size_t n = 0;
  *what = "cannot read";
  while (buf) {
    if (n == cap) {
      if (n > DUMP_MAX_FILE) {
        *what = "too large";
        break;
      }
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
  if (strcmp(*what, "too large") != 0) *what = NULL; /* out of memory */
  return NULL;
}

/* core.read_dump(path [, "summary"]) -> the data table, and what the file is: {version = V,
   sections = S, checksums = true|false}; raises "cprof: <path>: <what is wrong>". With
   "summary", only the metadata and the allocator snapshot (dump_read_summary). */
static int l_read_dump(lua_State *L) {
  const char *path = check_path(L, 1);
  static const char *const parts[] = {"all", "summary", NULL};
  int summary = luaL_checkoption(L, 2, "all", parts);
  size_t len = 0;
  int err = 0;
  const char *what;
  unsigned char *buf = slurp(path, &len, &err, &what);
  if (!buf) {
    /* Not luaL_error: the message must start with "cprof: <path>", without a position. */
    if (!what) lua_pushfstring(L, "cprof: %s: out of memory", path);
    else if (err) lua_pushfstring(L, "cprof: %s: %s: %s", path, what, strerror(err));
    else if (strcmp(what, "too large") == 0)
      lua_pushfstring(L, "cprof: %s: too large for a dump (more than %d GiB)", path,
                      (int)(DUMP_MAX_FILE >> 30));
    else lua_pushfstring(L, "cprof: %s: a %s, not a regular file", path, what);
    return lua_error(L);
  }
  int failed = (summary ? dump_read_summary : dump_read_memory)(L, path, buf, len);
  free(buf);
  if (failed) return lua_error(L);
  return 2;
}

/* core.file_type(path) -> "regular", "directory", "character device", "block device", "FIFO",
   "socket" or "special file", following symbolic links and opening nothing (so never waiting on a
   FIFO); or nil and "cprof: <path>: cannot open: <reason>". */
static int l_file_type(lua_State *L) {
  const char *path = check_path(L, 1);
  struct stat st;
  if (stat(path, &st) != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "cprof: %s: cannot open: %s", path, strerror(errno));
    return 2;
  }
  lua_pushstring(L, S_ISREG(st.st_mode) ? "regular" : file_type(st.st_mode));
  return 1;
}

void ldump_register(lua_State *L) {
  static const luaL_Reg fns[] = {{"write_dump", l_write_dump}, {"read_dump", l_read_dump},
                                 {"file_type", l_file_type},   {"write_file", l_write_file},
                                 {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
