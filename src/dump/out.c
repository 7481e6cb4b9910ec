/* The writer's output (dump/out.h): a buffer, flushed to the temporary file when full; the
   section directory is patched with pwrite() at the end, then the file is renamed. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "dump/out.h"
#include "util/fault.h"
#include "util/hash.h"

#define OUT_FILE_BUFFER (1u << 20)

void out_error(DumpOut *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  dump_push_error(o->L, o->name, fmt, ap);
  va_end(ap);
  lua_error(o->L);
}

void *out_alloc(DumpOut *o, size_t count, size_t size) {
  if (count == 0) count = 1;
  if (count > SIZE_MAX / size) out_error(o, "out of memory");
  void *p = fault_malloc(count * size);
  if (!p) out_error(o, "out of memory");
  return p;
}

static void write_all(DumpOut *o, const unsigned char *p, size_t n) {
  while (n > 0) {
    ssize_t k = write(o->fd, p, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      out_error(o, "cannot write: %s", strerror(errno));
    }
    p += k;
    n -= (size_t)k;
    o->flushed += (uint64_t)k;
  }
}

static void flush(DumpOut *o) {
  if (o->fd >= 0 && o->len > 0) {
    size_t n = o->len;
    o->len = 0;
    write_all(o, o->buf, n);
  }
}

void out_room(DumpOut *o, size_t n) {
  if (o->cap - o->len >= n) return;
  if (o->fd >= 0) {
    flush(o);
    if (o->cap >= n) return;
  }
  size_t cap = o->cap ? o->cap : 4096;
  while (cap - o->len < n) {
    if (cap > SIZE_MAX / 2) out_error(o, "out of memory");
    cap *= 2;
  }
  unsigned char *b = fault_realloc(o->buf, cap);
  if (!b) out_error(o, "out of memory");
  o->buf = b;
  o->cap = cap;
}

void out_bytes(DumpOut *o, const void *p, size_t n) {
  if (o->fd >= 0 && n > o->cap) { /* too big for the buffer: straight to the file */
    flush(o);
    write_all(o, p, n);
    return;
  }
  out_room(o, n);
  if (n) memcpy(o->buf + o->len, p, n);
  o->len += n;
}

void out_open_file(DumpOut *o) {
  size_t plen = strlen(o->name);
  o->tmppath = out_alloc(o, plen + 64, 1);
  static unsigned counter;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t seed = hash_fib((uint64_t)ts.tv_nsec) ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)o;
  for (int tries = 0;; tries++) {
    seed += hash_fib(++counter);
    uint64_t r = hash_mix64(seed);
    snprintf(o->tmppath, plen + 64, "%s.tmp.%ld.%08x", o->name, (long)getpid(), (unsigned)r);
    o->fd = open(o->tmppath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (o->fd >= 0) break;
    int e = errno;
    if ((e == EEXIST || e == EINTR) && tries < 100) continue;
    free(o->tmppath);
    o->tmppath = NULL;
    const char *slash = strrchr(o->name, '/');
    if (!slash) out_error(o, "cannot create a file in the current folder: %s", strerror(e));
    int dlen = slash == o->name ? 1 : (int)(slash - o->name);
    out_error(o, "cannot create a file in %.*s: %s", dlen, o->name, strerror(e));
  }
  o->buf = out_alloc(o, OUT_FILE_BUFFER, 1);
  o->cap = OUT_FILE_BUFFER;
}

void out_commit(DumpOut *o, const unsigned char *p, size_t n, uint64_t at) {
  if (o->fd < 0) { /* in memory */
    memcpy(o->buf + at, p, n);
    return;
  }
  flush(o);
  size_t off = 0;
  while (off < n) {
    ssize_t k = pwrite(o->fd, p + off, n - off, (off_t)(at + off));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) out_error(o, "cannot write: %s", k < 0 ? strerror(errno) : "short write");
    off += (size_t)k;
  }
  int fd = o->fd;
  o->fd = -1;
  if (close(fd) != 0) out_error(o, "cannot write: %s", strerror(errno));
  if (rename(o->tmppath, o->name) != 0)
    out_error(o, "cannot replace the file: %s", strerror(errno));
  free(o->tmppath);
  o->tmppath = NULL;
}

void out_release(DumpOut *o) {
  if (o->fd >= 0) close(o->fd);
  o->fd = -1;
  if (o->tmppath) {
    unlink(o->tmppath);
    free(o->tmppath);
    o->tmppath = NULL;
  }
}
