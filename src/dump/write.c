/*
 * dump/write.c — the data table -> a dump file (docs/FORMAT.md).
 *
 * Everything the writer does with Lua runs inside lua_pcall, with every C resource (buffers,
 * the temporary file) held in a Writer on the C stack; whatever goes wrong — invalid data, a
 * failed write, out of memory in cprof or in Lua — the caller frees the buffers, removes the
 * temporary file and returns the message. The target file is replaced only by the final
 * rename(), so it is either the old file or the complete new one.
 *
 * Frames are written most-referenced first (by edges and nodes), so that the indexes used most
 * are the shortest varints; the strings follow the frames' new order for the same reason.
 * Output goes through a 1 MiB buffer; the section directory is patched with pwrite() at the end,
 * after the sections, whose offsets are known only then.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>

#include "util/fault.h"
#include "util/hash.h"
#include "util/compat.h"
#include "dump/format.h"

#define OUT_FILE_BUFFER (1u << 20)
#define MAX_SECTIONS (DUMP_SEC_LAST_KNOWN) /* the required ones and one per optional kind */

typedef struct Str {
  const char *s;
  size_t len;
} Str;

typedef struct Writer {
  lua_State *L;
  const char *name;           /* the path, for messages */
  int data;                   /* stack index of the data table */
  /* Output. fd < 0: in memory. */
  int to_file;
  int fd;
  unsigned char *buf;
  size_t len, cap;
  uint64_t flushed;           /* bytes already written to fd */
  char *tmppath;              /* the temporary file while it exists */
  /* The data table's layout. */
  uint8_t has[DUMP_NREC];     /* the group is written (the required ones always are) */
  uint32_t n[DUMP_NREC];
  int col[DUMP_NREC][DUMP_MAX_FIELDS];   /* stack index of each column; 0: absent */
  uint8_t present[DUMP_NREC][DUMP_MAX_FIELDS];
  uint32_t *pre[DUMP_NREC][DUMP_MAX_FIELDS]; /* per record in file order: string, frame or
                                                parent-delta values worked out in advance */
  uint32_t *order;            /* frame position in the file -> frame index in the table */
  uint32_t *remap;            /* frame index in the table -> position in the file */
  uint64_t *refs;             /* references to each frame */
  struct Pop *pop;            /* frames sorted by popularity */
  Str *strs;
  uint32_t nstrs, capstrs;
  Str *metakeys;
  uint32_t nmeta;
  int meta;                   /* stack index of data.meta; 0: none */
  int strmap;                 /* stack index of string -> index table */
} Writer;

/* ------------------------------------------------------------------------------------------ */
/* Errors: raised inside the protected call, turned into a message by the caller. */

static void werr(Writer *W, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  lua_pushfstring(W->L, "cprof: %s: %s", W->name, msg);
  lua_error(W->L);
}

static void *walloc(Writer *W, size_t count, size_t size) {
  if (count == 0) count = 1;
  if (count > SIZE_MAX / size) werr(W, "out of memory");
  void *p = fault_malloc(count * size);
  if (!p) werr(W, "out of memory");
  return p;
}

/* What a bad value was, for messages. */
static const char *describe(lua_State *L, int idx, char *buf, size_t size) {
  int t = lua_type(L, idx);
  if (t == LUA_TNUMBER) {
#if LUA_VERSION_NUM >= 503
    if (lua_isinteger(L, idx)) {
      snprintf(buf, size, "%lld", (long long)lua_tointeger(L, idx));
      return buf;
    }
#endif
    snprintf(buf, size, "%.17g", (double)lua_tonumber(L, idx));
    return buf;
  }
  snprintf(buf, size, "a %s", lua_typename(L, t));  /* not the value: it may be huge */
  return buf;
}

/* ------------------------------------------------------------------------------------------ */
/* Numbers from Lua */

/* A count: an integer in [0, 2^63-1] (an integral float is accepted). */
static int get_count(lua_State *L, int idx, uint64_t *out) {
#if LUA_VERSION_NUM >= 503
  if (lua_isinteger(L, idx)) {
    lua_Integer v = lua_tointeger(L, idx);
    if (v < 0) return -1;
    *out = (uint64_t)v;
    return 0;
  }
#endif
  if (lua_type(L, idx) != LUA_TNUMBER) return -1;
  double d = (double)lua_tonumber(L, idx);
  if (!(d >= 0 && d < 9223372036854775808.0) || d != floor(d)) return -1;
  *out = (uint64_t)d;
  return 0;
}

/* Any integer in [-2^63, 2^63-1]. */
static int get_int(lua_State *L, int idx, int64_t *out) {
#if LUA_VERSION_NUM >= 503
  if (lua_isinteger(L, idx)) {
    *out = (int64_t)lua_tointeger(L, idx);
    return 0;
  }
#endif
  if (lua_type(L, idx) != LUA_TNUMBER) return -1;
  double d = (double)lua_tonumber(L, idx);
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != floor(d)) return -1;
  *out = (int64_t)d;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Output */

static void write_all(Writer *W, const unsigned char *p, size_t n) {
  while (n > 0) {
    ssize_t k = write(W->fd, p, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      werr(W, "cannot write: %s", strerror(errno));
    }
    p += k;
    n -= (size_t)k;
    W->flushed += (uint64_t)k;
  }
}

static void flush(Writer *W) {
  if (W->fd >= 0 && W->len > 0) {
    size_t n = W->len;
    W->len = 0;
    write_all(W, W->buf, n);
  }
}

/* Makes room for n more bytes in the buffer. */
static void room(Writer *W, size_t n) {
  if (W->cap - W->len >= n) return;
  if (W->fd >= 0) {
    flush(W);
    if (W->cap >= n) return;
  }
  size_t cap = W->cap ? W->cap : 4096;
  while (cap - W->len < n) {
    if (cap > SIZE_MAX / 2) werr(W, "out of memory");
    cap *= 2;
  }
  unsigned char *b = fault_realloc(W->buf, cap);
  if (!b) werr(W, "out of memory");
  W->buf = b;
  W->cap = cap;
}

static uint64_t pos(const Writer *W) { return W->flushed + W->len; }

static void put_bytes(Writer *W, const void *p, size_t n) {
  if (W->fd >= 0 && n > W->cap) { /* too big for the buffer: straight to the file */
    flush(W);
    write_all(W, p, n);
    return;
  }
  room(W, n);
  if (n) memcpy(W->buf + W->len, p, n);
  W->len += n;
}

static inline void put_uv(Writer *W, uint64_t v) {
  if (W->cap - W->len < 10) room(W, 10);
  unsigned char *p = W->buf + W->len;
  while (v >= 0x80) {
    *p++ = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  *p++ = (unsigned char)v;
  W->len = (size_t)(p - W->buf);
}

static inline void put_sv(Writer *W, int64_t v) {
  put_uv(W, ((uint64_t)v << 1) ^ (v < 0 ? UINT64_MAX : 0));
}

static inline void put_f64(Writer *W, double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  if (W->cap - W->len < 8) room(W, 8);
  dump_put_u64(W->buf + W->len, u);
  W->len += 8;
}

static void put_str(Writer *W, const char *s, size_t n) {
  put_uv(W, n);
  put_bytes(W, s, n);
}

/* ------------------------------------------------------------------------------------------ */
/* Reading the data table */

static void collect_groups(Writer *W) {
  lua_State *L = W->L;
  for (int k = 0; k < DUMP_NREC; k++) {
    const DumpRecordKind *K = &DUMP_KINDS[k];
    lua_getfield(L, W->data, K->group);
    int t = lua_type(L, -1);
    if (t == LUA_TNIL && K->optional) { /* absent: no schema entry, no section */
      lua_pop(L, 1);
      continue;
    }
    W->has[k] = 1;
    if (t == LUA_TNIL) { /* no records; the schema still lists every field */
      lua_pop(L, 1);
      W->n[k] = 0;
      for (int f = 0; f < K->nfields; f++) W->present[k][f] = K->fields[f].required != DUMP_EXTENSION;
      continue;
    }
    char b[64];
    if (t != LUA_TTABLE) werr(W, "%s must be a table, not a %s", K->group, luaL_typename(L, -1));
    int g = lua_gettop(L);
    lua_getfield(L, g, "n");
    int64_t n;
    if (get_int(L, -1, &n) || n < 0 || n > (int64_t)DUMP_MAX_RECORDS)
      werr(W, "%s.n must be a non-negative integer (got %s)", K->group, describe(L, -1, b, sizeof b));
    lua_pop(L, 1);
    W->n[k] = (uint32_t)n;
    for (int f = 0; f < K->nfields; f++) {
      const DumpField *F = &K->fields[f];
      lua_getfield(L, g, F->name);
      t = lua_type(L, -1);
      if (t == LUA_TTABLE) {
        W->col[k][f] = lua_gettop(L);
        W->present[k][f] = 1;
      } else if (t == LUA_TNIL && (F->required != 1 || n == 0)) {
        lua_pop(L, 1);
        W->present[k][f] = F->required == 1;  /* an empty group still declares what it requires */
      } else if (t == LUA_TNIL) {
        werr(W, "%s.%s is missing", K->group, F->name);
      } else {
        werr(W, "%s.%s must be a table, not a %s", K->group, F->name, luaL_typename(L, -1));
      }
    }
  }
}

/* Frame, parent and row references of the other groups: checked, stored, and counted per
   frame. */
static void collect_refs(Writer *W, uint64_t *refs) {
  lua_State *L = W->L;
  uint32_t nframes = W->n[DUMP_K_FRAMES];
  for (int k = 1; k < DUMP_NREC; k++) {
    const DumpRecordKind *K = &DUMP_KINDS[k];
    for (int f = 0; f < K->nfields; f++) {
      int enc = K->fields[f].enc;
      if (!W->col[k][f] || (enc != DUMP_ENC_FRAME && enc != DUMP_ENC_PARENT && enc != DUMP_ENC_ROW))
        continue;
      uint32_t n = W->n[k];
      uint32_t *v = W->pre[k][f] = walloc(W, n, sizeof *v);
      int c = W->col[k][f];
      for (uint32_t i = 0; i < n; i++) {
        lua_rawgeti(L, c, (int)i + 1);
        int64_t x;
        char b[64];
        int bad = get_int(L, -1, &x);
        if (enc == DUMP_ENC_FRAME) {
          if (bad || x < 1 || x > (int64_t)nframes)
            werr(W, "%s.%s[%u] = %s is not a frame index (frames.n = %u)", K->group,
                 K->fields[f].name, i + 1, describe(L, -1, b, sizeof b), nframes);
          v[i] = (uint32_t)(x - 1);
          refs[x - 1]++;
        } else if (enc == DUMP_ENC_ROW) {
          const DumpRecordKind *T = &DUMP_KINDS[K->fields[f].def];
          uint32_t nt = W->has[K->fields[f].def] ? W->n[K->fields[f].def] : 0;
          if (bad || x < 1 || x > (int64_t)nt)
            werr(W, "%s.%s[%u] = %s is not an index of %s (%s.n = %u)", K->group,
                 K->fields[f].name, i + 1, describe(L, -1, b, sizeof b), T->group, T->group, nt);
          v[i] = (uint32_t)(x - 1);
        } else {
          if (bad || x < 0 || x > (int64_t)i)
            werr(W, "%s.%s[%u] = %s must be 0 (a root) or the index of an earlier node",
                 K->group, K->fields[f].name, i + 1, describe(L, -1, b, sizeof b));
          v[i] = x == 0 ? 0 : (uint32_t)((int64_t)i + 1 - x);
        }
        lua_pop(L, 1);
      }
    }
  }
}

typedef struct Pop {
  uint64_t refs;
  uint32_t idx;
} Pop;

static int by_popularity(const void *a, const void *b) {
  const Pop *x = a, *y = b;
  if (x->refs != y->refs) return x->refs > y->refs ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void order_frames(Writer *W) {
  uint32_t n = W->n[DUMP_K_FRAMES];
  W->refs = walloc(W, n, sizeof *W->refs);
  memset(W->refs, 0, (n ? n : 1) * sizeof *W->refs);
  collect_refs(W, W->refs);
  Pop *p = W->pop = walloc(W, n, sizeof *p);
  for (uint32_t i = 0; i < n; i++) p[i] = (Pop){W->refs[i], i};
  qsort(p, n, sizeof *p, by_popularity);
  W->order = walloc(W, n, sizeof *W->order);
  W->remap = walloc(W, n, sizeof *W->remap);
  for (uint32_t i = 0; i < n; i++) {
    W->order[i] = p[i].idx;
    W->remap[p[i].idx] = i;
  }
  for (int k = 1; k < DUMP_NREC; k++)
    for (int f = 0; f < DUMP_KINDS[k].nfields; f++)
      if (W->pre[k][f] && DUMP_KINDS[k].fields[f].enc == DUMP_ENC_FRAME)
        for (uint32_t i = 0; i < W->n[k]; i++) W->pre[k][f][i] = W->remap[W->pre[k][f][i]];
}

static uint32_t intern(Writer *W, int sidx) {
  lua_State *L = W->L;
  lua_pushvalue(L, sidx);
  lua_rawget(L, W->strmap);
  if (lua_type(L, -1) == LUA_TNUMBER) {
    uint32_t i = (uint32_t)lua_tonumber(L, -1);
    lua_pop(L, 1);
    return i;
  }
  lua_pop(L, 1);
  if (W->nstrs == W->capstrs) {
    uint32_t cap = W->capstrs ? W->capstrs * 2 : 256;
    Str *s = fault_realloc(W->strs, (size_t)cap * sizeof *s);
    if (!s) werr(W, "out of memory");
    W->strs = s;
    W->capstrs = cap;
  }
  Str *s = &W->strs[W->nstrs];
  s->s = lua_tolstring(L, sidx, &s->len);  /* kept alive by the data table */
  lua_pushvalue(L, sidx);
  lua_pushnumber(L, (lua_Number)W->nstrs);
  lua_rawset(L, W->strmap);
  return W->nstrs++;
}

/* String fields: those of frames first, in the frames' file order, so popular frames get small
   indexes; then those of the other groups (the allocator snapshot's names), in record order. */
static void collect_strings(Writer *W) {
  lua_State *L = W->L;
  lua_newtable(L);
  W->strmap = lua_gettop(L);
  for (int k = 0; k < DUMP_NREC; k++) {
    const DumpRecordKind *K = &DUMP_KINDS[k];
    for (int f = 0; f < K->nfields; f++)
      if (W->col[k][f] && K->fields[f].enc == DUMP_ENC_STRING)
        W->pre[k][f] = walloc(W, W->n[k], sizeof(uint32_t));
    for (uint32_t j = 0; j < W->n[k]; j++) {
      uint32_t i = k == DUMP_K_FRAMES ? W->order[j] : j;
      for (int f = 0; f < K->nfields; f++) {
        if (!W->pre[k][f] || K->fields[f].enc != DUMP_ENC_STRING) continue;
        lua_rawgeti(L, W->col[k][f], (int)i + 1);
        if (lua_type(L, -1) != LUA_TSTRING) {
          werr(W, "%s.%s[%u] must be a string, not a %s", K->group, K->fields[f].name, i + 1,
               luaL_typename(L, -1));
        }
        W->pre[k][f][j] = intern(W, lua_gettop(L));
        lua_pop(L, 1);
      }
    }
  }
}

static int by_key(const void *a, const void *b) {
  const Str *x = a, *y = b;
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->s, y->s, n);
  return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* data.meta: string keys, values that are strings, numbers or booleans; sorted by key so that
   the same data always gives the same bytes. */
static void collect_meta(Writer *W) {
  lua_State *L = W->L;
  lua_getfield(L, W->data, "meta");
  int t = lua_type(L, -1);
  if (t == LUA_TNIL) {
    lua_pop(L, 1);
    return;
  }
  if (t != LUA_TTABLE) werr(W, "meta must be a table, not a %s", luaL_typename(L, -1));
  W->meta = lua_gettop(L);
  uint32_t n = 0;
  lua_pushnil(L);
  while (lua_next(L, W->meta)) {
    if (lua_type(L, -2) != LUA_TSTRING) werr(W, "meta keys must be strings, not a %s", luaL_typename(L, -2));
    t = lua_type(L, -1);
    if (t != LUA_TSTRING && t != LUA_TNUMBER && t != LUA_TBOOLEAN)
      werr(W, "meta.%s must be a string, a number or a boolean, not a %s", lua_tostring(L, -2),
           luaL_typename(L, -1));
    if (n == UINT32_MAX) werr(W, "meta has too many keys");
    n++;
    lua_pop(L, 1);
  }
  W->metakeys = walloc(W, n, sizeof *W->metakeys);
  lua_pushnil(L);
  while (lua_next(L, W->meta) && W->nmeta < n) {
    Str *k = &W->metakeys[W->nmeta++];
    k->s = lua_tolstring(L, -2, &k->len);
    lua_pop(L, 1);
  }
  qsort(W->metakeys, W->nmeta, sizeof *W->metakeys, by_key);
}

/* ------------------------------------------------------------------------------------------ */
/* Sections */

static void write_schema(Writer *W) {
  uint32_t nk = 0;
  for (int k = 0; k < DUMP_NREC; k++) nk += W->has[k];
  put_uv(W, nk);
  for (int k = 0; k < DUMP_NREC; k++) {
    const DumpRecordKind *K = &DUMP_KINDS[k];
    if (!W->has[k]) continue;
    uint32_t nf = 0;
    for (int f = 0; f < K->nfields; f++) nf += W->present[k][f];
    put_uv(W, K->rec);
    put_uv(W, nf);
    for (int f = 0; f < K->nfields; f++) {
      if (!W->present[k][f]) continue;
      put_str(W, K->fields[f].name, strlen(K->fields[f].name));
      put_uv(W, K->fields[f].enc);
      put_uv(W, (uint64_t)dump_wire_of(K->fields[f].enc));
    }
  }
}

static void write_strings(Writer *W) {
  put_uv(W, W->nstrs);
  for (uint32_t i = 0; i < W->nstrs; i++) put_str(W, W->strs[i].s, W->strs[i].len);
}

static void write_records(Writer *W, int k) {
  lua_State *L = W->L;
  const DumpRecordKind *K = &DUMP_KINDS[k];
  put_uv(W, W->n[k]);
  for (uint32_t j = 0; j < W->n[k]; j++) {
    int row = (int)(k == DUMP_K_FRAMES ? W->order[j] : j) + 1;  /* its index in the Lua table */
    for (int f = 0; f < K->nfields; f++) {
      if (!W->present[k][f]) continue;
      const DumpField *F = &K->fields[f];
      if (W->pre[k][f]) {
        put_uv(W, W->pre[k][f][j]);
        continue;
      }
      lua_rawgeti(L, W->col[k][f], row);
      char b[64];
      switch (F->enc) {
        case DUMP_ENC_UINT: {
          uint64_t v = 0;
          if (get_count(L, -1, &v))
            werr(W, "%s.%s[%d] must be a non-negative integer (got %s)", K->group, F->name, row,
                 describe(L, -1, b, sizeof b));
          put_uv(W, v);
          break;
        }
        case DUMP_ENC_SINT: {
          int64_t v = 0;
          if (get_int(L, -1, &v))
            werr(W, "%s.%s[%d] must be an integer (got %s)", K->group, F->name, row,
                 describe(L, -1, b, sizeof b));
          put_sv(W, v);
          break;
        }
        case DUMP_ENC_F64:
          if (lua_type(L, -1) != LUA_TNUMBER)
            werr(W, "%s.%s[%d] must be a number (got %s)", K->group, F->name, row,
                 describe(L, -1, b, sizeof b));
          put_f64(W, (double)lua_tonumber(L, -1));
          break;
        default: /* every other encoding is worked out in advance */
          werr(W, "internal error: no value for %s.%s", K->group, F->name);
      }
      lua_pop(L, 1);
    }
  }
}

#if LUA_VERSION_NUM < 503
/* Without an integer subtype, these keys are written as floats even when integral. */
static int float_key(const Str *k) {
  static const char *const keys[] = {"unit", "bias", "start_time", "total_time", NULL};
  for (int i = 0; keys[i]; i++)
    if (strlen(keys[i]) == k->len && memcmp(keys[i], k->s, k->len) == 0) return 1;
  return 0;
}
#endif

static void write_meta(Writer *W) {
  lua_State *L = W->L;
  put_uv(W, W->nmeta);
  for (uint32_t i = 0; i < W->nmeta; i++) {
    const Str *k = &W->metakeys[i];
    put_str(W, k->s, k->len);
    lua_pushlstring(L, k->s, k->len);
    lua_rawget(L, W->meta);
    switch (lua_type(L, -1)) {
      case LUA_TBOOLEAN:
        put_uv(W, lua_toboolean(L, -1) ? DUMP_META_TRUE : DUMP_META_FALSE);
        break;
      case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, -1, &n);
        put_uv(W, DUMP_META_STRING);
        put_str(W, s, n);
        break;
      }
      default: { /* a number (collect_meta checked) */
        int64_t v = 0;
#if LUA_VERSION_NUM >= 503
        int integer = lua_isinteger(L, -1) && get_int(L, -1, &v) == 0;
#else
        int integer = !float_key(k) && fabs((double)lua_tonumber(L, -1)) <= 9007199254740992.0 &&
                      get_int(L, -1, &v) == 0;
#endif
        if (integer) {
          put_uv(W, DUMP_META_INT);
          put_sv(W, v);
        } else {
          put_uv(W, DUMP_META_FLOAT);
          put_f64(W, (double)lua_tonumber(L, -1));
        }
      }
    }
    lua_pop(L, 1);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* The temporary file */

static void open_temp(Writer *W) {
  size_t plen = strlen(W->name);
  W->tmppath = walloc(W, plen + 64, 1);
  static unsigned counter;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t seed = hash_fib((uint64_t)ts.tv_nsec) ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)W;
  for (int tries = 0;; tries++) {
    seed += hash_fib(++counter);
    uint64_t r = hash_mix64(seed);
    snprintf(W->tmppath, plen + 64, "%s.tmp.%ld.%08x", W->name, (long)getpid(), (unsigned)r);
    W->fd = open(W->tmppath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (W->fd >= 0) return;
    int e = errno;
    if ((e == EEXIST || e == EINTR) && tries < 100) continue;
    free(W->tmppath);
    W->tmppath = NULL;
    const char *slash = strrchr(W->name, '/');
    if (!slash) werr(W, "cannot create a file in the current folder: %s", strerror(e));
    int dlen = slash == W->name ? 1 : (int)(slash - W->name);
    werr(W, "cannot create a file in %.*s: %s", dlen, W->name, strerror(e));
  }
}

/* ------------------------------------------------------------------------------------------ */

static int write_body(lua_State *L) {
  Writer *W = lua_touserdata(L, 1);
  lua_settop(L, 2);
  W->data = 2;
  if (!lua_checkstack(L, 3 * DUMP_MAX_FIELDS + 16)) werr(W, "out of memory");
  if (lua_type(L, 2) != LUA_TTABLE) {
    char b[64];
    werr(W, "the profile data must be a table, not %s", describe(L, 2, b, sizeof b));
  }
  collect_groups(W);
  order_frames(W);
  collect_strings(W);
  collect_meta(W);

  if (W->to_file) {
    open_temp(W);
    W->buf = walloc(W, OUT_FILE_BUFFER, 1);
    W->cap = OUT_FILE_BUFFER;
  }

  /* The sections, in file order: schema, strings, the records of each group written, meta. */
  int sec[MAX_SECTIONS], nsec = 0;  /* >= 0: the DUMP_K_* whose records it holds */
  enum { SCHEMA = -1, STRINGS = -2, META = -3 };
  sec[nsec++] = SCHEMA;
  sec[nsec++] = STRINGS;
  for (int k = 0; k < DUMP_NREC; k++)
    if (W->has[k]) sec[nsec++] = k;
  sec[nsec++] = META;

  unsigned char header[DUMP_FIXED_HEADER + MAX_SECTIONS * DUMP_DIRENT_SIZE];
  size_t header_len = DUMP_FIXED_HEADER + (size_t)nsec * DUMP_DIRENT_SIZE;
  memset(header, 0, sizeof header);
  memcpy(header, DUMP_MAGIC, DUMP_MAGIC_LEN);
  dump_put_u32(header + 8, DUMP_VERSION);
  dump_put_u32(header + 12, (uint32_t)nsec);
  put_bytes(W, header, header_len);  /* the directory is patched below */

  for (int s = 0; s < nsec; s++) {
    uint64_t start = pos(W);
    uint32_t kind;
    switch (sec[s]) {
      case SCHEMA: write_schema(W); kind = DUMP_SEC_SCHEMA; break;
      case STRINGS: write_strings(W); kind = DUMP_SEC_STRINGS; break;
      case META: write_meta(W); kind = DUMP_SEC_META; break;
      default: write_records(W, sec[s]); kind = DUMP_KINDS[sec[s]].section; break;
    }
    unsigned char *e = header + DUMP_FIXED_HEADER + s * DUMP_DIRENT_SIZE;
    dump_put_u32(e, kind);
    dump_put_u64(e + 4, start);
    dump_put_u64(e + 12, pos(W) - start);
  }

  if (W->fd < 0) { /* in memory */
    memcpy(W->buf + DUMP_FIXED_HEADER, header + DUMP_FIXED_HEADER, header_len - DUMP_FIXED_HEADER);
    return 0;
  }
  flush(W);
  size_t off = 0, n = header_len - DUMP_FIXED_HEADER;
  while (off < n) {
    ssize_t k = pwrite(W->fd, header + DUMP_FIXED_HEADER + off, n - off,
                       (off_t)(DUMP_FIXED_HEADER + off));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) werr(W, "cannot write: %s", k < 0 ? strerror(errno) : "short write");
    off += (size_t)k;
  }
  int fd = W->fd;
  W->fd = -1;
  if (close(fd) != 0) werr(W, "cannot write: %s", strerror(errno));
  if (rename(W->tmppath, W->name) != 0) werr(W, "cannot replace the file: %s", strerror(errno));
  free(W->tmppath);
  W->tmppath = NULL;
  return 0;
}

static void release(Writer *W) {
  if (W->fd >= 0) close(W->fd);
  if (W->tmppath) {
    unlink(W->tmppath);
    free(W->tmppath);
  }
  for (int k = 0; k < DUMP_NREC; k++)
    for (int f = 0; f < DUMP_MAX_FIELDS; f++) free(W->pre[k][f]);
  free(W->order);
  free(W->remap);
  free(W->refs);
  free(W->pop);
  free(W->strs);
  free(W->metakeys);
}

/* Runs write_body protected; on failure cleans up and leaves the message on the stack. */
static int run(lua_State *L, Writer *W, int data) {
  data = lua_absindex(L, data);
  int top = lua_gettop(L);
  lua_pushcfunction(L, write_body);
  lua_pushlightuserdata(L, W);
  lua_pushvalue(L, data);
  int status = lua_pcall(L, 2, 0, 0);
  if (status != 0) {
    release(W);
    free(W->buf);
    W->buf = NULL;
    if (status == LUA_ERRMEM || lua_type(L, -1) != LUA_TSTRING) {
      lua_settop(L, top);
      lua_pushfstring(L, "cprof: %s: out of memory", W->name);
    }
    return 1;
  }
  lua_settop(L, top);
  release(W);
  return 0;
}

int dump_write_file(lua_State *L, const char *path, int data) {
  Writer W;
  memset(&W, 0, sizeof W);
  W.L = L;
  W.name = path;
  W.fd = -1;
  W.to_file = 1;
  int r = run(L, &W, data);
  free(W.buf);
  return r;
}

int dump_write_memory(lua_State *L, const char *name, int data, unsigned char **out,
                      size_t *outlen) {
  Writer W;
  memset(&W, 0, sizeof W);
  W.L = L;
  W.name = name;
  W.fd = -1;
  W.buf = fault_malloc(4096);
  if (!W.buf) {
    lua_pushfstring(L, "cprof: %s: out of memory", name);
    return 1;
  }
  W.cap = 4096;
  if (run(L, &W, data)) return 1;
  *out = W.buf;
  *outlen = W.len;
  return 0;
}
