/* The writer's output (dump/out.h): a buffer, flushed to the temporary file when full; the
   section directory is patched with pwrite() at the end, then the file takes the target's name.
   Once per dump: a stat and a readlink per symbolic link (and a stat of its folder), a scan of
   the target's folder for temporary files of dead writers; then a CRC-32C step per byte. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dump/crc32c.h"
#include "dump/out.h"
#include "util/fault.h"
#include "util/hash.h"

#define OUT_FILE_BUFFER (1u << 20)
#define MAX_LINKS 40 /* symbolic links followed, as Linux's own limit */

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

static void write_all(DumpOut *o, int fd, const unsigned char *p, size_t n) {
  while (n > 0) {
    ssize_t k = write(fd, p, n);
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
    o->crc = crc32c_update(o->crc, o->buf + o->crc_at, n - o->crc_at);
    o->len = o->crc_at = 0;
    write_all(o, o->fd, o->buf, n);
  }
}

uint32_t out_crc(DumpOut *o) {
  uint32_t c = crc32c_update(o->crc, o->buf + o->crc_at, o->len - o->crc_at);
  o->crc = 0;
  o->crc_at = o->len;
  return c;
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
    o->crc = crc32c_update(o->crc, p, n);
    write_all(o, o->fd, p, n);
    return;
  }
  out_room(o, n);
  if (n) memcpy(o->buf + o->len, p, n);
  o->len += n;
}

/* ------------------------------------------------------------------------------------------ */
/* The target */

/* The folder of path `p` ("." for a bare name) in `buf`, and where its last name starts. */
static const char *folder_of(const char *p, char *buf, size_t size, const char **base) {
  const char *slash = strrchr(p, '/');
  *base = slash ? slash + 1 : p;
  if (!slash) return ".";
  size_t n = slash == p ? 1 : (size_t)(slash - p);
  snprintf(buf, size, "%.*s", (int)n, p);
  return buf;
}

/* The folder of o->target, and where its last name starts. */
static const char *target_folder(const DumpOut *o, char *buf, size_t size, const char **base) {
  return folder_of(o->target, buf, size, base);
}

/* Whether the kernel would refuse to follow symbolic link `link` (lstat gave `st`): its
   fs.protected_symlinks rule, which a link resolved here would go around, so that another
   user's link planted in /tmp cannot have a victim's file replaced. A link in a sticky folder
   that anyone may write to is followed only by its owner, or when it is the folder's owner's. */
static int protected_link(const char *link, const struct stat *st) {
  if (st->st_uid == geteuid()) return 0;
  char folder[PATH_MAX];
  const char *base;
  struct stat dir;
  if (stat(folder_of(link, folder, sizeof folder, &base), &dir) != 0) return 1;
  if ((dir.st_mode & (S_ISVTX | S_IWOTH)) != (S_ISVTX | S_IWOTH)) return 0;
  return dir.st_uid != st->st_uid;
}

/* o->target: o->name with every symbolic link followed (the last one may point nowhere yet: the
   dump creates its target), so that the link stays and the file it names is replaced. */
static void follow_links(DumpOut *o) {
  size_t size = strlen(o->name) + 1;
  char *cur = out_alloc(o, size, 1);
  memcpy(cur, o->name, size);
  o->target = cur;
  char *link = out_alloc(o, PATH_MAX, 1);
  for (int hops = 0;; hops++) {
    struct stat st;
    ssize_t n;
    if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) break;
    if (protected_link(cur, &st)) {
      free(link);
      out_error(o, "refusing to follow the symbolic link %s: another user's, in a sticky folder "
                   "anyone may write to (the kernel's fs.protected_symlinks rule)", cur);
    }
    if ((n = readlink(cur, link, PATH_MAX)) < 0) break;
    if (hops == MAX_LINKS || n == PATH_MAX) {
      free(link);
      out_error(o, "cannot follow the symbolic link: %s", strerror(hops == MAX_LINKS ? ELOOP : ENAMETOOLONG));
    }
    /* A relative link is relative to the folder that holds it. */
    const char *slash = strrchr(cur, '/');
    size_t dlen = link[0] == '/' || !slash ? 0 : (size_t)(slash - cur) + 1;
    char *next = fault_malloc(dlen + (size_t)n + 1);
    if (!next) {
      free(link);
      out_error(o, "out of memory");
    }
    memcpy(next, cur, dlen);
    memcpy(next + dlen, link, (size_t)n);
    next[dlen + (size_t)n] = '\0';
    free(cur);
    o->target = cur = next;
  }
  free(link);
}

/* The longest suffix a temporary file's name adds to the target's: ".tmp.", a pid, ".", 8 hex
   digits. */
#define TEMP_SUFFIX (5 + 10 + 1 + 8)

/* o->keep: how much of the target's last name its temporary files' names keep. All of it, but
   where it and the suffix would pass the longest name the folder's file system takes (255 bytes
   on most): then a prefix, which the temporary files of other long names may share (only those
   of dead writers are ever removed). A target's name that is itself too long is refused here,
   naming that limit. */
static void temp_room(DumpOut *o) {
  char folder[PATH_MAX];
  const char *base;
  const char *dir = target_folder(o, folder, sizeof folder, &base);
  long max = pathconf(dir, _PC_NAME_MAX);
  if (max <= 0) max = NAME_MAX;
  size_t blen = strlen(base);
  if (blen > (size_t)max)
    out_error(o, "the file name is %zu bytes long; its folder's file system takes at most %ld",
              blen, max);
  size_t room = max > TEMP_SUFFIX ? (size_t)max - TEMP_SUFFIX : 1;
  o->keep = blen < room ? blen : room;
}

/* "<base>.tmp.<pid>.<8 hex digits>", the name of every temporary file (base: the first o->keep
   bytes of the target's name): its pid, or 0. */
static long temp_pid(const char *name, const char *base, size_t blen) {
  if (strncmp(name, base, blen) != 0 || strncmp(name + blen, ".tmp.", 5) != 0) return 0;
  const char *p = name + blen + 5;
  long pid = 0;
  for (; *p >= '0' && *p <= '9' && pid < 100000000; p++) pid = pid * 10 + (*p - '0');
  if (*p != '.' || pid <= 0) return 0;
  size_t hex = strspn(p + 1, "0123456789abcdef");
  return hex == 8 && p[9] == '\0' ? pid : 0;
}

/* Temporary files of the same target whose writer is no longer running (killed while writing,
   where O_TMPFILE does not work, or in the moment between naming the file and renaming it):
   removed, so that they cannot pile up. Those of live processes are theirs. */
static void remove_stale(DumpOut *o) {
  char folder[PATH_MAX];
  const char *base;
  const char *dir = target_folder(o, folder, sizeof folder, &base);
  DIR *d = opendir(dir);
  if (!d) return; /* creating the temporary file reports what is wrong with the folder */
  int dfd = dirfd(d);
  size_t blen = o->keep;
  if (blen == 0) {  /* a name ending in "/": creating the file will say what is wrong */
    closedir(d);
    return;
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    long pid = temp_pid(e->d_name, base, blen);
    if (pid && pid != (long)getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH)
      unlinkat(dfd, e->d_name, 0);
  }
  closedir(d);
}

/* A new name for the temporary file of o->target. The counter is shared by the threads that
   write dumps at once, each from a state of its own. */
static void temp_name(DumpOut *o) {
  static atomic_uint counter;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t seed = hash_fib((uint64_t)ts.tv_nsec) ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)o;
  seed += hash_fib(atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed) + 1);
  char folder[PATH_MAX];
  const char *base;
  target_folder(o, folder, sizeof folder, &base);
  int prefix = (int)((size_t)(base - o->target) + o->keep);
  size_t size = (size_t)prefix + TEMP_SUFFIX + 1;
  if (!o->tmppath) o->tmppath = out_alloc(o, size, 1);
  snprintf(o->tmppath, size, "%.*s.tmp.%ld.%08x", prefix, o->target, (long)getpid(),
           (unsigned)hash_mix64(seed));
}

static void cannot_create(DumpOut *o, int e) {
  size_t len = strlen(o->tmppath);
  free(o->tmppath);
  o->tmppath = NULL;
  if (e == ENAMETOOLONG && len >= PATH_MAX)
    out_error(o, "the path is too long: its temporary file's is %zu bytes, the system takes at "
                 "most %d", len, PATH_MAX - 1);
  if (e == ENAMETOOLONG)
    out_error(o, "a folder's name in the path is longer than its file system takes");
  char folder[PATH_MAX];
  const char *base;
  const char *dir = target_folder(o, folder, sizeof folder, &base);
  if (strcmp(dir, ".") == 0 && !strchr(o->target, '/'))
    out_error(o, "cannot create a file in the current folder: %s", strerror(e));
  out_error(o, "cannot create a file in %s: %s", dir, strerror(e));
}

/* A temporary file without a name (O_TMPFILE), which a killed writer cannot leave behind; it
   gets one only at the end. Returns 0 where that does not work (the file system, an older
   kernel, no /proc to link it through). */
static int open_unnamed(DumpOut *o) {
#ifdef O_TMPFILE
  if (o->named_temp || access("/proc/self/fd", X_OK) != 0) return 0;
  char folder[PATH_MAX];
  const char *base;
  o->fd = open(target_folder(o, folder, sizeof folder, &base), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
  return o->fd >= 0;
#else
  (void)o;
  return 0;
#endif
}

/* Creates o->tmppath with O_EXCL (a fresh name until one is free); or, with `linkfd`, gives that
   unnamed file the name. */
static void name_temp(DumpOut *o, int linkfd) {
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", linkfd);
  for (int tries = 0;; tries++) {
    temp_name(o);
    int ok = linkfd >= 0 ? linkat(AT_FDCWD, proc, AT_FDCWD, o->tmppath, AT_SYMLINK_FOLLOW) == 0
                         : (o->fd = open(o->tmppath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666)) >= 0;
    if (ok) return;
    int e = errno;
    if ((e == EEXIST || e == EINTR) && tries < 100) continue;
    cannot_create(o, e);
  }
}

void out_open_file(DumpOut *o) {
  /* First, as the links to a device are checked too: another user's link to a FIFO of theirs
     would have the dump sent to them. */
  follow_links(o);
  struct stat st;
  if (stat(o->name, &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) { /* written through, in one go at the end */
      o->through = S_ISCHR(st.st_mode) ? S_IFCHR : S_IFIFO;
      return;
    }
    out_error(o, "cannot write a dump over %s", S_ISDIR(st.st_mode) ? "a directory"
                                                : S_ISBLK(st.st_mode) ? "a block device"
                                                : "a socket");
  }
  temp_room(o);
  remove_stale(o);
  if (!open_unnamed(o)) name_temp(o, -1);
  o->buf = out_alloc(o, OUT_FILE_BUFFER, 1);
  o->cap = OUT_FILE_BUFFER;
}

/* The whole dump, in memory, to the character device or FIFO at o->name. A FIFO that no
   process reads is an error, not a wait without end. */
static void write_through(DumpOut *o) {
  int fd;
  do fd = open(o->name, O_WRONLY | O_NOCTTY | O_CLOEXEC | (o->through == S_IFIFO ? O_NONBLOCK : 0));
  while (fd < 0 && errno == EINTR);
  if (fd < 0 && errno == ENXIO) out_error(o, "cannot write: no process reads the FIFO");
  if (fd < 0) out_error(o, "cannot open: %s", strerror(errno));
  if (o->through == S_IFIFO) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  o->fd = fd; /* closed by out_release if the write fails */
  write_all(o, fd, o->buf, o->len);
  o->fd = -1;
  if (close(fd) != 0) out_error(o, "cannot write: %s", strerror(errno));
}

void out_commit(DumpOut *o, const unsigned char *p, size_t n, uint64_t at) {
  if (o->fd < 0) { /* in memory */
    if (n) memcpy(o->buf + at, p, n);
    if (o->through) write_through(o);
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
  if (!o->tmppath) name_temp(o, o->fd);
  int fd = o->fd;
  o->fd = -1;
  if (close(fd) != 0) out_error(o, "cannot write: %s", strerror(errno));
  if (rename(o->tmppath, o->target) != 0)
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
  free(o->target);
  o->target = NULL;
}

typedef struct Whole {
  DumpOut o;
  const void *p;
  size_t n;
} Whole;

int out_write_whole(lua_State *L) {
  Whole *w = lua_touserdata(L, 1);
  out_open_file(&w->o);
  out_bytes(&w->o, w->p, w->n);
  out_commit(&w->o, NULL, 0, 0);
  return 0;
}

int out_write_file(lua_State *L, const char *path, const void *p, size_t n) {
  Whole w = {.o = {.L = L, .name = path, .fd = -1}, .p = p, .n = n};
  lua_pushcfunction(L, out_write_whole);
  lua_pushlightuserdata(L, &w);
  int status = lua_pcall(L, 1, 0, 0);
  out_release(&w.o);
  free(w.o.buf);
  if (status != 0 && (status == LUA_ERRMEM || lua_type(L, -1) != LUA_TSTRING)) {
    lua_pop(L, 1);
    lua_pushfstring(L, "cprof: %s: out of memory", path);
  }
  return status != 0;
}
