/*
 * dump/write.c — the data table -> a dump file (docs/FORMAT.md).
 *
 * Everything the writer does with Lua runs inside lua_pcall, with every C resource (buffers,
 * the temporary file) held in a Writer on the C stack; whatever goes wrong — invalid data, a
 * failed write, out of memory in cprof or in Lua — the caller frees the buffers, removes the
 * temporary file and returns the message. Where the bytes go is dump/out.h: the target file is
 * replaced only once the new one is complete.
 *
 * Frames are written most-referenced first (by edges and nodes), so that the indexes used most
 * are the shortest varints; the strings follow the frames' new order for the same reason. The
 * section directory is written last, over its place at the start, since the offsets of the
 * sections are known only then, with each section's CRC-32C (taken as its bytes go out) and the
 * header's. Linear in the records; once per dump.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "dump/crc32c.h"
#include "dump/format.h"
#include "dump/out.h"
#include "util/compat.h"
#include "util/fault.h"

#define MAX_SECTIONS (DUMP_SEC_LAST_KNOWN) /* the required ones and one per optional kind */

typedef struct Str {
  const char *s;
  size_t len;
} Str;

typedef struct Writer {
  DumpOut out;
  int data;                   /* stack index of the data table */
  int to_file;
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
/* Reading the data table */

static void collect_groups(Writer *W) {
  lua_State *L = W->out.L;
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
      for (int f = 0; f < K->nfields; f++) W->present[k][f] = K->fields[f].required < DUMP_EXTENSION;
      continue;
    }
    char b[64];
    if (t != LUA_TTABLE) out_error(&W->out, "%s must be a table, not a %s", K->group, luaL_typename(L, -1));
    int g = lua_gettop(L);
    lua_getfield(L, g, "n");
    int64_t n;
    if (get_int(L, -1, &n) || n < 0 || n > (int64_t)DUMP_MAX_RECORDS)
      out_error(&W->out, "%s.n must be a non-negative integer (got %s)", K->group, describe(L, -1, b, sizeof b));
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
        out_error(&W->out, "%s.%s is missing", K->group, F->name);
      } else {
        out_error(&W->out, "%s.%s must be a table, not a %s", K->group, F->name, luaL_typename(L, -1));
      }
    }
    /* What the reader refuses: some of an extension's columns without the others. */
    for (int ext = DUMP_EXTENSION; ext <= DUMP_EXT_LIFE; ext++) {
      int ext_have = -1, ext_lack = -1;
      for (int f = 0; f < K->nfields; f++) {
        int *first = W->present[k][f] ? &ext_have : &ext_lack;
        if (K->fields[f].required == ext && *first < 0) *first = f;
      }
      if (ext_have >= 0 && ext_lack >= 0)
        out_error(&W->out, "%s.%s is missing (%s.%s is there: the memory columns go together)",
                  K->group, K->fields[ext_lack].name, K->group, K->fields[ext_have].name);
    }
  }
}

/* Frame, parent and row references of the other groups: checked, stored, and counted per
   frame. */
static void collect_refs(Writer *W, uint64_t *refs) {
  lua_State *L = W->out.L;
  uint32_t nframes = W->n[DUMP_K_FRAMES];
  for (int k = 1; k < DUMP_NREC; k++) {
    const DumpRecordKind *K = &DUMP_KINDS[k];
    for (int f = 0; f < K->nfields; f++) {
      int enc = K->fields[f].enc;
      if (!W->col[k][f] || (enc != DUMP_ENC_FRAME && enc != DUMP_ENC_PARENT && enc != DUMP_ENC_ROW))
        continue;
      uint32_t n = W->n[k];
      uint32_t *v = W->pre[k][f] = out_alloc(&W->out, n, sizeof *v);
      int c = W->col[k][f];
      for (uint32_t i = 0; i < n; i++) {
        lua_rawgeti(L, c, (int)i + 1);
        int64_t x;
        char b[64];
        int bad = get_int(L, -1, &x);
        if (enc == DUMP_ENC_FRAME) {
          if (bad || x < 1 || x > (int64_t)nframes)
            out_error(&W->out, "%s.%s[%u] = %s is not a frame index (frames.n = %u)", K->group,
                 K->fields[f].name, i + 1, describe(L, -1, b, sizeof b), nframes);
          v[i] = (uint32_t)(x - 1);
          refs[x - 1]++;
        } else if (enc == DUMP_ENC_ROW) {
          const DumpRecordKind *T = &DUMP_KINDS[K->fields[f].def];
          uint32_t nt = W->has[K->fields[f].def] ? W->n[K->fields[f].def] : 0;
          if (bad || x < 1 || x > (int64_t)nt)
            out_error(&W->out, "%s.%s[%u] = %s is not an index of %s (%s.n = %u)", K->group,
                 K->fields[f].name, i + 1, describe(L, -1, b, sizeof b), T->group, T->group, nt);
          v[i] = (uint32_t)(x - 1);
        } else {
          if (bad || x < 0 || x > (int64_t)i)
            out_error(&W->out, "%s.%s[%u] = %s must be 0 (a root) or the index of an earlier node",
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
  W->refs = out_alloc(&W->out, n, sizeof *W->refs);
  memset(W->refs, 0, (n ? n : 1) * sizeof *W->refs);
  collect_refs(W, W->refs);
  Pop *p = W->pop = out_alloc(&W->out, n, sizeof *p);
  for (uint32_t i = 0; i < n; i++) p[i] = (Pop){W->refs[i], i};
  qsort(p, n, sizeof *p, by_popularity);
  W->order = out_alloc(&W->out, n, sizeof *W->order);
  W->remap = out_alloc(&W->out, n, sizeof *W->remap);
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
  lua_State *L = W->out.L;
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
    if (!s) out_error(&W->out, "out of memory");
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
  lua_State *L = W->out.L;
  lua_newtable(L);
  W->strmap = lua_gettop(L);
  for (int k = 0; k < DUMP_NREC; k++) {
    const DumpRecordKind *K = &DUMP_KINDS[k];
    for (int f = 0; f < K->nfields; f++)
      if (W->col[k][f] && K->fields[f].enc == DUMP_ENC_STRING)
        W->pre[k][f] = out_alloc(&W->out, W->n[k], sizeof(uint32_t));
    for (uint32_t j = 0; j < W->n[k]; j++) {
      uint32_t i = k == DUMP_K_FRAMES ? W->order[j] : j;
      for (int f = 0; f < K->nfields; f++) {
        if (!W->pre[k][f] || K->fields[f].enc != DUMP_ENC_STRING) continue;
        lua_rawgeti(L, W->col[k][f], (int)i + 1);
        if (lua_type(L, -1) != LUA_TSTRING) {
          out_error(&W->out, "%s.%s[%u] must be a string, not a %s", K->group, K->fields[f].name, i + 1,
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
  lua_State *L = W->out.L;
  lua_getfield(L, W->data, "meta");
  int t = lua_type(L, -1);
  if (t == LUA_TNIL) {
    lua_pop(L, 1);
    return;
  }
  if (t != LUA_TTABLE) out_error(&W->out, "meta must be a table, not a %s", luaL_typename(L, -1));
  W->meta = lua_gettop(L);
  uint32_t n = 0;
  lua_pushnil(L);
  while (lua_next(L, W->meta)) {
    if (lua_type(L, -2) != LUA_TSTRING) out_error(&W->out, "meta keys must be strings, not a %s", luaL_typename(L, -2));
    t = lua_type(L, -1);
    if (t != LUA_TSTRING && t != LUA_TNUMBER && t != LUA_TBOOLEAN)
      out_error(&W->out, "meta.%s must be a string, a number or a boolean, not a %s", lua_tostring(L, -2),
           luaL_typename(L, -1));
    size_t klen;
    const char *key = lua_tolstring(L, -2, &klen);
    int cls = dump_meta_class(key, klen);
    int64_t v;
    char b[64];
    if (cls && !(cls == DUMP_MK_STRING ? t == LUA_TSTRING
                 : cls == DUMP_MK_NUMBER ? t == LUA_TNUMBER
                 : cls == DUMP_MK_INTEGER ? get_int(L, -1, &v) == 0
                 : t == LUA_TBOOLEAN))
      out_error(&W->out, "meta.%s must be %s (got %s)", key, DUMP_MK_NAMES[cls], describe(L, -1, b, sizeof b));
    if (n == UINT32_MAX) out_error(&W->out, "meta has too many keys");
    n++;
    lua_pop(L, 1);
  }
  W->metakeys = out_alloc(&W->out, n, sizeof *W->metakeys);
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
  out_uv(&W->out, nk);
  for (int k = 0; k < DUMP_NREC; k++) {
    const DumpRecordKind *K = &DUMP_KINDS[k];
    if (!W->has[k]) continue;
    uint32_t nf = 0;
    for (int f = 0; f < K->nfields; f++) nf += W->present[k][f];
    out_uv(&W->out, K->rec);
    out_uv(&W->out, nf);
    for (int f = 0; f < K->nfields; f++) {
      if (!W->present[k][f]) continue;
      out_str(&W->out, K->fields[f].name, strlen(K->fields[f].name));
      out_uv(&W->out, K->fields[f].enc);
      out_uv(&W->out, (uint64_t)dump_wire_of(K->fields[f].enc));
    }
  }
}

static void write_strings(Writer *W) {
  out_uv(&W->out, W->nstrs);
  for (uint32_t i = 0; i < W->nstrs; i++) out_str(&W->out, W->strs[i].s, W->strs[i].len);
}

static void write_records(Writer *W, int k) {
  lua_State *L = W->out.L;
  const DumpRecordKind *K = &DUMP_KINDS[k];
  out_uv(&W->out, W->n[k]);
  for (uint32_t j = 0; j < W->n[k]; j++) {
    int row = (int)(k == DUMP_K_FRAMES ? W->order[j] : j) + 1;  /* its index in the Lua table */
    for (int f = 0; f < K->nfields; f++) {
      if (!W->present[k][f]) continue;
      const DumpField *F = &K->fields[f];
      if (W->pre[k][f]) {
        out_uv(&W->out, W->pre[k][f][j]);
        continue;
      }
      lua_rawgeti(L, W->col[k][f], row);
      char b[64];
      switch (F->enc) {
        case DUMP_ENC_UINT: {
          uint64_t v = 0;
          if (get_count(L, -1, &v))
            out_error(&W->out, "%s.%s[%d] must be a non-negative integer (got %s)", K->group, F->name, row,
                 describe(L, -1, b, sizeof b));
          out_uv(&W->out, v);
          break;
        }
        case DUMP_ENC_SINT: {
          int64_t v = 0;
          if (get_int(L, -1, &v))
            out_error(&W->out, "%s.%s[%d] must be an integer (got %s)", K->group, F->name, row,
                 describe(L, -1, b, sizeof b));
          out_sv(&W->out, v);
          break;
        }
        case DUMP_ENC_F64:
          if (lua_type(L, -1) != LUA_TNUMBER)
            out_error(&W->out, "%s.%s[%d] must be a number (got %s)", K->group, F->name, row,
                 describe(L, -1, b, sizeof b));
          out_f64(&W->out, (double)lua_tonumber(L, -1));
          break;
        default: /* every other encoding is worked out in advance */
          out_error(&W->out, "internal error: no value for %s.%s", K->group, F->name);
      }
      lua_pop(L, 1);
    }
  }
}

static void write_meta(Writer *W) {
  lua_State *L = W->out.L;
  out_uv(&W->out, W->nmeta);
  for (uint32_t i = 0; i < W->nmeta; i++) {
    const Str *k = &W->metakeys[i];
    out_str(&W->out, k->s, k->len);
    lua_pushlstring(L, k->s, k->len);
    lua_rawget(L, W->meta);
    switch (lua_type(L, -1)) {
      case LUA_TBOOLEAN:
        out_uv(&W->out, lua_toboolean(L, -1) ? DUMP_META_TRUE : DUMP_META_FALSE);
        break;
      case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, -1, &n);
        out_uv(&W->out, DUMP_META_STRING);
        out_str(&W->out, s, n);
        break;
      }
      default: { /* a number (collect_meta checked) */
        int64_t v = 0;
        int cls = dump_meta_class(k->s, k->len);
        /* Integer keys are integers whatever the subtype; without an integer subtype (LuaJIT),
           an integral number is one too unless its key holds a number (unit, bias, ...). */
#if LUA_VERSION_NUM >= 503
        int integer = (cls == DUMP_MK_INTEGER || lua_isinteger(L, -1)) && get_int(L, -1, &v) == 0;
#else
        int integer = (cls == DUMP_MK_INTEGER || (cls != DUMP_MK_NUMBER &&
                       fabs((double)lua_tonumber(L, -1)) <= 9007199254740992.0)) &&
                      get_int(L, -1, &v) == 0;
#endif
        if (integer) {
          out_uv(&W->out, DUMP_META_INT);
          out_sv(&W->out, v);
        } else {
          out_uv(&W->out, DUMP_META_FLOAT);
          out_f64(&W->out, (double)lua_tonumber(L, -1));
        }
      }
    }
    lua_pop(L, 1);
  }
}

/* ------------------------------------------------------------------------------------------ */

int dump_write_body(lua_State *L) {
  Writer *W = lua_touserdata(L, 1);
  lua_settop(L, 2);
  W->data = 2;
  if (!lua_checkstack(L, DUMP_WRITE_STACK)) out_error(&W->out, "out of memory");
  if (lua_type(L, 2) != LUA_TTABLE) {
    char b[64];
    out_error(&W->out, "the profile data must be a table, not %s", describe(L, 2, b, sizeof b));
  }
  collect_groups(W);
  order_frames(W);
  collect_strings(W);
  collect_meta(W);

  if (W->to_file) out_open_file(&W->out);

  /* The sections, in file order: schema, strings, the records of each group written, meta. */
  int sec[MAX_SECTIONS], nsec = 0;  /* >= 0: the DUMP_K_* whose records it holds */
  enum { SCHEMA = -1, STRINGS = -2, META = -3 };
  sec[nsec++] = SCHEMA;
  sec[nsec++] = STRINGS;
  for (int k = 0; k < DUMP_NREC; k++)
    if (W->has[k]) sec[nsec++] = k;
  sec[nsec++] = META;

  unsigned char header[DUMP_FIXED_HEADER + MAX_SECTIONS * DUMP_DIRENT_V2 + DUMP_HEADER_CRC];
  size_t dir_end = DUMP_FIXED_HEADER + (size_t)nsec * DUMP_DIRENT_V2;
  memset(header, 0, sizeof header);
  memcpy(header, DUMP_MAGIC, DUMP_MAGIC_LEN);
  dump_put_u32(header + 8, DUMP_VERSION);
  dump_put_u32(header + 12, (uint32_t)nsec);
  out_bytes(&W->out, header, dir_end + DUMP_HEADER_CRC);  /* the directory is patched below */

  (void)out_crc(&W->out); /* the header's bytes are under the header checksum only */
  for (int s = 0; s < nsec; s++) {
    uint64_t start = out_pos(&W->out);
    uint32_t kind;
    switch (sec[s]) {
      case SCHEMA: write_schema(W); kind = DUMP_SEC_SCHEMA; break;
      case STRINGS: write_strings(W); kind = DUMP_SEC_STRINGS; break;
      case META: write_meta(W); kind = DUMP_SEC_META; break;
      default: write_records(W, sec[s]); kind = DUMP_KINDS[sec[s]].section; break;
    }
    unsigned char *e = header + DUMP_FIXED_HEADER + s * DUMP_DIRENT_V2;
    dump_put_u32(e, kind);
    dump_put_u64(e + 4, start);
    dump_put_u64(e + 12, out_pos(&W->out) - start);
    dump_put_u32(e + 20, out_crc(&W->out));
  }
  dump_put_u32(header + dir_end, crc32c_update(0, header, dir_end));

  out_commit(&W->out, header + DUMP_FIXED_HEADER, dir_end + DUMP_HEADER_CRC - DUMP_FIXED_HEADER,
             DUMP_FIXED_HEADER);
  return 0;
}

static void release(Writer *W) {
  out_release(&W->out);
  for (int k = 0; k < DUMP_NREC; k++)
    for (int f = 0; f < DUMP_MAX_FIELDS; f++) free(W->pre[k][f]);
  free(W->order);
  free(W->remap);
  free(W->refs);
  free(W->pop);
  free(W->strs);
  free(W->metakeys);
}

/* Runs dump_write_body protected; on failure cleans up and leaves the message on the stack. */
static int run(lua_State *L, Writer *W, int data) {
  data = lua_absindex(L, data);
  int top = lua_gettop(L);
  lua_pushcfunction(L, dump_write_body);
  lua_pushlightuserdata(L, W);
  lua_pushvalue(L, data);
  int status = lua_pcall(L, 2, 0, 0);
  if (status != 0) {
    release(W);
    free(W->out.buf);
    W->out.buf = NULL;
    if (status == LUA_ERRMEM || lua_type(L, -1) != LUA_TSTRING) {
      lua_settop(L, top);
      lua_pushfstring(L, "cprof: %s: out of memory", W->out.name);
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
  W.out = (DumpOut){.L = L, .name = path, .fd = -1};
  W.to_file = 1;
  int r = run(L, &W, data);
  free(W.out.buf);
  return r;
}

int dump_write_memory(lua_State *L, const char *name, int data, unsigned char **out,
                      size_t *outlen) {
  Writer W;
  memset(&W, 0, sizeof W);
  W.out = (DumpOut){.L = L, .name = name, .fd = -1};
  W.out.buf = fault_malloc(4096);
  if (!W.out.buf) {
    lua_pushfstring(L, "cprof: %s: out of memory", name);
    return 1;
  }
  W.out.cap = 4096;
  if (run(L, &W, data)) return 1;
  *out = W.out.buf;
  *outlen = W.out.len;
  return 0;
}
