/*
 * dump/out.h — where the dump writer's bytes go: a buffer in memory, or a file. A regular file
 * (or a new one) is replaced atomically: the bytes go through a 1 MiB buffer to a temporary file
 * in the target's folder, which becomes the target only once complete, so the target is always
 * the old file or the whole new one. A symbolic link is followed (its target is replaced, the
 * link stays), but not one the kernel's fs.protected_symlinks would refuse to follow (another
 * user's in a sticky folder anyone may write to); a character device or a FIFO (/dev/null, a
 * pipe) is written through, never replaced; a directory, a block device or a socket is
 * refused. Every failure raises the Lua error "cprof: <name>: <what is wrong>": the writer
 * runs inside lua_pcall and then releases what is left (out_release). An encoded number costs
 * a few stores.
 */
#ifndef CPROF_OUT_H
#define CPROF_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <lua.h>

#include "dump/format.h"

typedef struct DumpOut {
  lua_State *L;
  const char *name;        /* the path, for messages */
  int fd;                  /* the temporary file; < 0: in memory */
  unsigned char *buf;
  size_t len, cap;
  uint64_t flushed;        /* bytes already written to fd */
  uint32_t crc;            /* CRC-32C of the bytes since the last out_crc, but buf[crc_at, len) */
  size_t crc_at;
  int through;             /* 0, or the S_IFCHR / S_IFIFO that the bytes go to at the end */
  int named_temp;          /* no O_TMPFILE: the temporary file has a name from the start (what
                              happens where O_TMPFILE does not work; the C tests set it) */
  char *target;            /* the file to replace: name with its symbolic links followed */
  char *tmppath;           /* the temporary file's name while it has one */
  size_t keep;             /* bytes of the target's last name that the temporary file's keeps */
} DumpOut;

/* Raises "cprof: <name>: <fmt ...>". */
void out_error(DumpOut *o, const char *fmt, ...);
/* count * size bytes (at least one element) from the fault-injecting allocator, or raises
   "out of memory". */
void *out_alloc(DumpOut *o, size_t count, size_t size);

/* Prepares writing o->name: decides how (replace or write through, or refuses), removes the
   temporary files that writers of the same target left when they were killed, creates the
   temporary file and the buffer. */
void out_open_file(DumpOut *o);
/* Writes the n bytes at p over the output at offset `at` (the section directory, known only at
   the end) and, for a file, makes it the target. */
void out_commit(DumpOut *o, const unsigned char *p, size_t n, uint64_t at);
/* Closes and removes a temporary file left by a failure; the buffer stays (the caller frees it,
   or keeps it: the dump in memory). */
void out_release(DumpOut *o);

/* The CRC-32C of the bytes output since the last call (or the start), and starts anew. */
uint32_t out_crc(DumpOut *o);

/* Writes the n bytes at p to `path` as a dump file is written (a regular file replaced
   atomically, a symbolic link followed, a device or FIFO written through): 0, or 1 with the
   message "cprof: <path>: ..." pushed. Never raises. */
int out_write_file(lua_State *L, const char *path, const void *p, size_t n);
/* What out_write_file runs under lua_pcall (named in reports by lcprof.c). */
int out_write_whole(lua_State *L);

/* Makes room for n more bytes in the buffer (flushing a file's). */
void out_room(DumpOut *o, size_t n);
void out_bytes(DumpOut *o, const void *p, size_t n);

/* Bytes written so far. */
static inline uint64_t out_pos(const DumpOut *o) { return o->flushed + o->len; }

/* An unsigned LEB128 varint. */
static inline void out_uv(DumpOut *o, uint64_t v) {
  if (o->cap - o->len < 10) out_room(o, 10);
  unsigned char *p = o->buf + o->len;
  while (v >= 0x80) {
    *p++ = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  *p++ = (unsigned char)v;
  o->len = (size_t)(p - o->buf);
}

/* A zigzag varint. */
static inline void out_sv(DumpOut *o, int64_t v) {
  out_uv(o, ((uint64_t)v << 1) ^ (v < 0 ? UINT64_MAX : 0));
}

/* A binary64, little-endian. */
static inline void out_f64(DumpOut *o, double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  if (o->cap - o->len < 8) out_room(o, 8);
  dump_put_u64(o->buf + o->len, u);
  o->len += 8;
}

/* A varint length, then the bytes. */
static inline void out_str(DumpOut *o, const char *s, size_t n) {
  out_uv(o, n);
  out_bytes(o, s, n);
}

#endif
