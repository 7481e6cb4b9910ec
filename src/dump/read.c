/*
 * dump/read.c — a dump in memory -> the data table (docs/FORMAT.md).
 *
 * Nothing in the file is trusted: the checksums of a version-2 file are checked before anything
 * in it is used, every offset, length, count and index is checked against what is really there
 * before it is used, and so is everything the rest of cprof counts on (the memory columns all
 * or none, the types of the metadata it reads); the first problem ends the read with one
 * message naming the file and the place. Counts are checked against the bytes left (a record
 * takes at least one byte per field), so a hostile count can never make the reader allocate
 * more than a small multiple of the file's size. The reader holds no C allocations: the data
 * table is built on the Lua stack, inside lua_pcall, so an error or a Lua out-of-memory at any
 * point leaves nothing behind.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "dump/crc32c.h"
#include "dump/format.h"
#include "util/compat.h"

typedef struct Plan {
  int known;       /* index into the record kind's DumpField table, or -1 */
  uint8_t wire;
} Plan;

typedef struct Schema {
  int described;
  int nfields;
  Plan field[DUMP_MAX_FIELDS];
  int have[DUMP_MAX_FIELDS]; /* per known field: present in the file */
} Schema;

typedef struct Section {
  uint64_t off, len;
  int found;
} Section;

/* At most this many sections of a version-2 file are named in a checksum message. */
#define MAX_NAMED 4

typedef struct Reader {
  lua_State *L;
  const char *name;
  const unsigned char *buf;
  size_t len;
  uint32_t version, nsec;
  Section sec[DUMP_SEC_LAST_KNOWN + 1];
  Schema schema[DUMP_NREC];
  uint32_t nstrings, nframes;
  uint32_t count[DUMP_NREC];  /* records of each kind read so far (DUMP_ENC_ROW checks) */
  int strtab;  /* stack index of the strings, 1-based */
  int summary; /* only the metadata and the allocator snapshot */
} Reader;

/* A position inside one section. */
typedef struct Cur {
  const unsigned char *p, *end;
  const char *what;  /* the section's name, for messages */
} Cur;

static const char *const SECTION_NAMES[DUMP_SEC_LAST_KNOWN + 1] = {
  "?", "schema", "strings", "frames", "edges", "nodes", "meta", "lines", "mem_caches",
  "mem_types", "mem_arenas", "mem_free_lists", "trace"};

static void rerr(Reader *R, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  dump_push_error(R->L, R->name, fmt, ap);
  va_end(ap);
  lua_error(R->L);
}

/* A field or key name from the file, made printable for a message. */
static const char *printable(const unsigned char *s, size_t n, char *out, size_t size) {
  size_t i = 0, j = 0;
  for (; i < n && j + 8 < size; i++) {
    unsigned c = s[i];
    if (c >= 32 && c < 127 && c != '\\') out[j++] = (char)c;
    else j += (size_t)snprintf(out + j, size - j, "\\x%02x", c);
  }
  if (i < n) {
    memcpy(out + j, "...", 3);
    j += 3;
  }
  out[j] = '\0';
  return out;
}

static size_t left(const Cur *c) { return (size_t)(c->end - c->p); }

static uint64_t uv_slow(Reader *R, Cur *c) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    if (c->p >= c->end) rerr(R, "%s section: truncated (a number runs past its end)", c->what);
    unsigned b = *c->p++;
    if (shift == 63 && b > 1) rerr(R, "%s section: a number is longer than 64 bits", c->what);
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
}

static inline uint64_t get_uv(Reader *R, Cur *c) {
  if (c->p < c->end && *c->p < 0x80) return *c->p++;
  return uv_slow(R, c);
}

/* A count of things that take at least `each` bytes apiece in what is left of the section. */
static uint32_t get_count(Reader *R, Cur *c, size_t each, const char *things) {
  uint64_t n = get_uv(R, c);
  if (n > left(c) / each)
    rerr(R, "%s section: claims %llu %s but only %zu bytes remain", c->what,
         (unsigned long long)n, things, left(c));
  if (n > DUMP_MAX_RECORDS) rerr(R, "%s section: too many %s (%llu)", c->what, things, (unsigned long long)n);
  return (uint32_t)n;
}

static double get_f64(Reader *R, Cur *c) {
  if (left(c) < 8) rerr(R, "%s section: truncated (a float runs past its end)", c->what);
  uint64_t u = dump_get_u64(c->p);
  c->p += 8;
  double d;
  memcpy(&d, &u, 8);
  return d;
}

/* A length-prefixed byte string inside the section. */
static const unsigned char *get_bytes(Reader *R, Cur *c, size_t *n) {
  uint64_t len = get_uv(R, c);
  if (len > left(c))
    rerr(R, "%s section: a string of %llu bytes runs past its end (%zu bytes remain)", c->what,
         (unsigned long long)len, left(c));
  const unsigned char *s = c->p;
  c->p += len;
  *n = (size_t)len;
  return s;
}

static void skip(Reader *R, Cur *c, int wire) {
  size_t n;
  if (wire == DUMP_WIRE_VARINT) (void)get_uv(R, c);
  else if (wire == DUMP_WIRE_FIXED64) (void)get_f64(R, c);
  else (void)get_bytes(R, c, &n);
}

static void at_end(Reader *R, const Cur *c) {
  if (c->p != c->end)
    rerr(R, "%s section: %zu unexpected bytes after its contents", c->what, left(c));
}

static Cur section(Reader *R, int kind) {
  Cur c;
  c.p = R->buf + R->sec[kind].off;
  c.end = c.p + R->sec[kind].len;
  c.what = SECTION_NAMES[kind];
  return c;
}

/* ------------------------------------------------------------------------------------------ */

/* The magic, the version and the section count; how a damaged magic was damaged. */
static void read_magic(Reader *R) {
  const unsigned char *b = R->buf;
  size_t len = R->len;
  if (len < DUMP_MAGIC_LEN || memcmp(b, DUMP_MAGIC, DUMP_MAGIC_LEN) != 0) {
    if (len == 0) rerr(R, "empty file, not a cprof dump");
    if (len < DUMP_MAGIC_LEN && memcmp(b, DUMP_MAGIC, len) == 0)
      rerr(R, "truncated: the file is only %zu bytes long", len);
    if (len >= 7 && memcmp(b, "\x89" "CPROF\n", 7) == 0)
      rerr(R, "not a cprof dump as written: its line endings were converted (\\r\\n to \\n); "
              "copy it in binary mode");
    if (len >= 9 && memcmp(b, "\x89" "CPROF\r\r\n", 9) == 0)
      rerr(R, "not a cprof dump as written: its line endings were converted (\\n to \\r\\n); "
              "copy it in binary mode");
    if (len >= 6 && memcmp(b, "\x09" "CPROF", 6) == 0)
      rerr(R, "not a cprof dump as written: the high bit of its bytes was stripped (a 7-bit "
              "transfer); copy it in binary mode");
    rerr(R, "not a cprof dump (wrong magic number)");
  }
  if (len < DUMP_FIXED_HEADER) rerr(R, "truncated: the file is only %zu bytes long", len);
  R->version = dump_get_u32(b + 8);
  if (R->version < DUMP_MIN_VERSION || R->version > DUMP_MAX_VERSION)
    rerr(R, "format version %u not supported; this cprof reads versions %d to %d", R->version,
         DUMP_MIN_VERSION, DUMP_MAX_VERSION);
  R->nsec = dump_get_u32(b + 12);
}

static const char *kind_name(uint32_t kind, char *buf, size_t size) {
  if (kind >= 1 && kind <= DUMP_SEC_LAST_KNOWN) return SECTION_NAMES[kind];
  snprintf(buf, size, "kind-%u", kind);
  return buf;
}

/* Version 2: every section's checksum (the directory's is checked before it is used); one
   message names the damaged sections. */
static void check_sections(Reader *R) {
  const unsigned char *b = R->buf;
  char msg[256] = "", kb[24];
  size_t used = 0;
  uint32_t bad = 0;
  for (uint32_t i = 0; i < R->nsec; i++) {
    const unsigned char *e = b + DUMP_FIXED_HEADER + (size_t)i * DUMP_DIRENT_V2;
    uint64_t off = dump_get_u64(e + 4), slen = dump_get_u64(e + 12);
    if (crc32c_update(0, b + off, (size_t)slen) == dump_get_u32(e + 20)) continue;
    if (++bad <= MAX_NAMED && used < sizeof msg)
      used += (size_t)snprintf(msg + used, sizeof msg - used, "%s%s", bad > 1 ? ", " : "",
                               kind_name(dump_get_u32(e), kb, sizeof kb));
  }
  if (bad == 1) rerr(R, "damaged: the checksum of the %s section does not match", msg);
  if (bad) rerr(R, "damaged: the checksums of %u sections do not match: %s%s", bad, msg,
                bad > MAX_NAMED ? ", ..." : "");
}

static void read_header(Reader *R) {
  read_magic(R);
  const unsigned char *b = R->buf;
  size_t len = R->len;
  int v2 = R->version >= 2;
  size_t dirent = v2 ? DUMP_DIRENT_V2 : DUMP_DIRENT_V1, trailer = v2 ? DUMP_HEADER_CRC : 0;
  uint32_t nsec = R->nsec;
  if (len - DUMP_FIXED_HEADER < trailer || nsec > (len - DUMP_FIXED_HEADER - trailer) / dirent)
    rerr(R, "truncated: the header lists %u sections but the file is only %zu bytes long", nsec, len);
  uint64_t dir_end = DUMP_FIXED_HEADER + (uint64_t)nsec * dirent;
  uint64_t header_end = dir_end + trailer;
  if (v2 && crc32c_update(0, b, (size_t)dir_end) != dump_get_u32(b + dir_end))
    rerr(R, "damaged: the checksum of the header does not match (its section directory is corrupt)");
  uint64_t prev_end = header_end;
  for (uint32_t i = 0; i < nsec; i++) {
    const unsigned char *e = b + DUMP_FIXED_HEADER + (size_t)i * dirent;
    uint32_t kind = dump_get_u32(e);
    uint64_t off = dump_get_u64(e + 4), slen = dump_get_u64(e + 12);
    if (off < header_end)
      rerr(R, "section %u (kind %u) at offset %llu overlaps the header", i + 1, kind,
           (unsigned long long)off);
    if (off > len || slen > len - off)
      rerr(R, "truncated: section %u (kind %u) of %llu bytes at offset %llu runs past the end of "
              "the file (%zu bytes)", i + 1, kind, (unsigned long long)slen, (unsigned long long)off, len);
    if (off < prev_end)
      rerr(R, "section %u (kind %u) overlaps the one before it", i + 1, kind);
    /* Version 2 leaves no byte unchecked: the sections follow the header and each other with
       nothing in between, and the file ends with the last one. */
    if (v2 && off != prev_end)
      rerr(R, "section %u (kind %u) does not start where the one before it ends", i + 1, kind);
    prev_end = off + slen;
    if (kind >= 1 && kind <= DUMP_SEC_LAST_KNOWN) {
      if (R->sec[kind].found) rerr(R, "two %s sections", SECTION_NAMES[kind]);
      R->sec[kind] = (Section){off, slen, 1};
    }
  }
  if (v2 && prev_end != len)
    rerr(R, "%llu unexpected bytes after the last section", (unsigned long long)(len - prev_end));
  if (v2) check_sections(R);
  for (int k = 1; k <= DUMP_SEC_LAST_REQUIRED; k++)
    if (!R->sec[k].found) rerr(R, "no %s section", SECTION_NAMES[k]);
}

static void read_schema(Reader *R) {
  Cur c = section(R, DUMP_SEC_SCHEMA);
  uint32_t nkinds = get_count(R, &c, 2, "record kinds");
  for (uint32_t r = 0; r < nkinds; r++) {
    uint64_t rec = get_uv(R, &c);
    uint32_t nf = get_count(R, &c, 3, "fields");
    if (nf > DUMP_MAX_FIELDS)
      rerr(R, "schema section: %u fields for one record kind (at most %d)", nf, DUMP_MAX_FIELDS);
    const DumpRecordKind *K = NULL;
    Schema *S = NULL;
    for (int k = 0; k < DUMP_NREC; k++)
      if (DUMP_KINDS[k].rec == rec) {
        K = &DUMP_KINDS[k];
        S = &R->schema[k];
      }
    if (S && S->described) rerr(R, "schema section: %s described twice", K->group);
    if (S) {
      S->described = 1;
      S->nfields = (int)nf;
    }
    for (uint32_t f = 0; f < nf; f++) {
      size_t n;
      const unsigned char *name = get_bytes(R, &c, &n);
      uint64_t enc = get_uv(R, &c), wire = get_uv(R, &c);
      char pn[80];
      if (wire > DUMP_WIRE_BYTES)
        rerr(R, "schema section: field '%s' has wire type %llu, which this cprof cannot skip",
             printable(name, n, pn, sizeof pn), (unsigned long long)wire);
      if (enc >= DUMP_ENC_UINT && enc <= DUMP_ENC_LAST && (int)wire != dump_wire_of((int)enc))
        rerr(R, "schema section: field '%s' has encoding %llu with wire type %llu",
             printable(name, n, pn, sizeof pn), (unsigned long long)enc, (unsigned long long)wire);
      if (!S) continue; /* a record kind this cprof does not know */
      int known = -1;
      for (int i = 0; i < K->nfields; i++)
        if (strlen(K->fields[i].name) == n && memcmp(K->fields[i].name, name, n) == 0) known = i;
      if (known >= 0) {
        if (S->have[known]) rerr(R, "schema section: %s field '%s' listed twice", K->group, K->fields[known].name);
        if (enc != K->fields[known].enc)
          rerr(R, "schema section: %s field '%s' has encoding %llu; this cprof reads encoding %d",
               K->group, K->fields[known].name, (unsigned long long)enc, K->fields[known].enc);
        S->have[known] = 1;
      }
      S->field[f] = (Plan){known, (uint8_t)wire};
    }
  }
  at_end(R, &c);
  for (int k = 0; k < DUMP_NREC; k++) {
    const DumpRecordKind *K = &DUMP_KINDS[k];
    /* An optional kind needs a description only when the file has its records. */
    if (!R->schema[k].described && (!K->optional || R->sec[K->section].found))
      rerr(R, "schema section: %s are not described", K->group);
    if (!R->schema[k].described) continue;
    for (int i = 0; i < K->nfields; i++)
      if (K->fields[i].required == 1 && !R->schema[k].have[i])
        rerr(R, "schema section: %s lack the required field '%s'", K->group, K->fields[i].name);
    for (int ext = DUMP_EXTENSION; ext <= DUMP_EXT_LIFE; ext++) {
      int ext_have = -1, ext_lack = -1;  /* a field of the extension the file has, one it lacks */
      for (int i = 0; i < K->nfields; i++) {
        int *first = R->schema[k].have[i] ? &ext_have : &ext_lack;
        if (K->fields[i].required == ext && *first < 0) *first = i;
      }
      if (ext_have >= 0 && ext_lack >= 0)
        rerr(R, "schema section: %s have the memory field '%s' but not '%s' (they go together)",
             K->group, K->fields[ext_have].name, K->fields[ext_lack].name);
    }
  }
}

static void read_strings(Reader *R) {
  lua_State *L = R->L;
  Cur c = section(R, DUMP_SEC_STRINGS);
  R->nstrings = get_count(R, &c, 1, "strings");
  lua_createtable(L, (int)R->nstrings, 0);
  R->strtab = lua_gettop(L);
  for (uint32_t i = 0; i < R->nstrings; i++) {
    size_t n;
    const unsigned char *s = get_bytes(R, &c, &n);
    lua_pushlstring(L, (const char *)s, n);
    lua_rawseti(L, R->strtab, (int)i + 1);
  }
  at_end(R, &c);
}

/* Pushes the group table {n = N, <column> = {...}, ...} of record kind k. */
static void read_records(Reader *R, int k) {
  lua_State *L = R->L;
  const DumpRecordKind *K = &DUMP_KINDS[k];
  const Schema *S = &R->schema[k];
  Cur c = section(R, K->section);
  size_t minsize = 0;
  for (int f = 0; f < S->nfields; f++) minsize += S->field[f].wire == DUMP_WIRE_FIXED64 ? 8 : 1;
  uint32_t n = get_count(R, &c, minsize ? minsize : 1, "records");
  if (k == DUMP_K_FRAMES) R->nframes = n;

  lua_createtable(L, 0, K->nfields + 1);
  int group = lua_gettop(L);
  lua_pushinteger(L, (lua_Integer)n);
  lua_setfield(L, group, "n");
  int col[DUMP_MAX_FIELDS];  /* stack index of each known field's column */
  for (int i = 0; i < K->nfields; i++) {
    lua_createtable(L, (int)n, 0);
    col[i] = lua_gettop(L);
  }

  for (uint32_t r = 0; r < n; r++) {
    int row = (int)r + 1;
    for (int f = 0; f < S->nfields; f++) {
      int known = S->field[f].known;
      if (known < 0) {
        skip(R, &c, S->field[f].wire);
        continue;
      }
      const DumpField *F = &K->fields[known];
      uint64_t v;
      switch (F->enc) {
        case DUMP_ENC_UINT:
          v = get_uv(R, &c);
          if (v > (uint64_t)INT64_MAX)
            rerr(R, "%s section: record %d: %s = %llu is larger than 2^63-1", c.what, row,
                 F->name, (unsigned long long)v);
          lua_pushinteger(L, (lua_Integer)v);
          break;
        case DUMP_ENC_SINT:
          v = get_uv(R, &c);
          lua_pushinteger(L, (lua_Integer)(int64_t)((v >> 1) ^ (0 - (v & 1))));
          break;
        case DUMP_ENC_F64:
          lua_pushnumber(L, (lua_Number)get_f64(R, &c));
          break;
        case DUMP_ENC_STRING:
          v = get_uv(R, &c);
          if (v >= R->nstrings)
            rerr(R, "%s section: record %d: %s is string %llu but there are %u strings", c.what,
                 row, F->name, (unsigned long long)v, R->nstrings);
          lua_rawgeti(L, R->strtab, (int)v + 1);
          break;
        case DUMP_ENC_FRAME:
          v = get_uv(R, &c);
          if (v >= R->nframes)
            rerr(R, "%s section: record %d: %s is frame %llu but there are %u frames", c.what,
                 row, F->name, (unsigned long long)v, R->nframes);
          lua_pushinteger(L, (lua_Integer)v + 1);
          break;
        case DUMP_ENC_ROW: {
          const DumpRecordKind *T = &DUMP_KINDS[F->def];
          v = get_uv(R, &c);
          if (v >= R->count[F->def])
            rerr(R, "%s section: record %d: %s is %s record %llu but there are %u", c.what, row,
                 F->name, T->group, (unsigned long long)v, R->count[F->def]);
          lua_pushinteger(L, (lua_Integer)v + 1);
          break;
        }
        default: /* DUMP_ENC_PARENT */
          v = get_uv(R, &c);
          if (v > r)
            rerr(R, "%s section: record %d: parent delta %llu points before the first node",
                 c.what, row, (unsigned long long)v);
          lua_pushinteger(L, v ? (lua_Integer)(r + 1 - v) : 0);
          break;
      }
      lua_rawseti(L, col[known], row);
    }
  }
  at_end(R, &c);
  R->count[k] = n;

  /* Defaults for the fields this file does not have (an extension's stay absent). */
  for (int i = 0; i < K->nfields; i++) {
    const DumpField *F = &K->fields[i];
    if (S->have[i] || F->required >= DUMP_EXTENSION) continue;
    for (uint32_t r = 0; r < n; r++) {
      if (F->enc == DUMP_ENC_F64) lua_pushnumber(L, 0.0);
      else if (F->enc == DUMP_ENC_STRING) lua_pushliteral(L, "");
      else lua_pushinteger(L, (lua_Integer)F->def);
      lua_rawseti(L, col[i], (int)r + 1);
    }
  }
  for (int i = K->nfields - 1; i >= 0; i--) {
    if (!S->have[i] && K->fields[i].required >= DUMP_EXTENSION) lua_pop(L, 1);
    else lua_setfield(L, group, K->fields[i].name);
  }
}

static void read_meta(Reader *R) {
  lua_State *L = R->L;
  Cur c = section(R, DUMP_SEC_META);
  uint32_t n = get_count(R, &c, 2, "entries");
  lua_createtable(L, 0, (int)n);
  int meta = lua_gettop(L);
  for (uint32_t i = 0; i < n; i++) {
    size_t klen;
    const unsigned char *key = get_bytes(R, &c, &klen);
    char pk[80];
    lua_pushlstring(L, (const char *)key, klen);
    lua_pushvalue(L, -1);
    lua_rawget(L, meta);
    if (!lua_isnil(L, -1)) rerr(R, "meta section: key '%s' appears twice", printable(key, klen, pk, sizeof pk));
    lua_pop(L, 1);
    uint64_t type = get_uv(R, &c), v;
    size_t n2;
    const unsigned char *s;
    switch (type) {
      case DUMP_META_FALSE:
      case DUMP_META_TRUE:
        lua_pushboolean(L, type == DUMP_META_TRUE);
        break;
      case DUMP_META_INT:
        v = get_uv(R, &c);
        lua_pushinteger(L, (lua_Integer)(int64_t)((v >> 1) ^ (0 - (v & 1))));
        break;
      case DUMP_META_FLOAT:
        lua_pushnumber(L, (lua_Number)get_f64(R, &c));
        break;
      case DUMP_META_STRING:
        s = get_bytes(R, &c, &n2);
        lua_pushlstring(L, (const char *)s, n2);
        break;
      default:
        rerr(R, "meta section: key '%s' has a value of unknown type %llu",
             printable(key, klen, pk, sizeof pk), (unsigned long long)type);
    }
    int cls = dump_meta_class((const char *)key, klen);
    if (cls && !(cls == DUMP_MK_STRING ? type == DUMP_META_STRING
                 : cls == DUMP_MK_NUMBER ? type == DUMP_META_INT || type == DUMP_META_FLOAT
                 : cls == DUMP_MK_INTEGER ? type == DUMP_META_INT
                 : type == DUMP_META_FALSE || type == DUMP_META_TRUE))
      rerr(R, "meta section: key '%s' must hold %s", printable(key, klen, pk, sizeof pk),
           DUMP_MK_NAMES[cls]);
    lua_rawset(L, meta);
  }
  at_end(R, &c);
}

int dump_read_body(lua_State *L) {
  Reader *R = lua_touserdata(L, 1);
  lua_settop(L, 0);
  if (!lua_checkstack(L, DUMP_MAX_FIELDS + 16)) rerr(R, "out of memory");
  read_header(R);
  read_schema(R);
  lua_createtable(L, 0, 4);
  int data = lua_gettop(L);
  read_strings(R);
  for (int k = 0; k < DUMP_NREC; k++) {
    if (DUMP_KINDS[k].optional && !R->sec[DUMP_KINDS[k].section].found) continue; /* absent */
    /* The profile itself (and its time line, whose rows are nodes): not for a summary. */
    if (R->summary && (k <= DUMP_K_LINES || k == DUMP_K_TRACE)) continue;
    read_records(R, k);
    lua_setfield(L, data, DUMP_KINDS[k].group);
  }
  read_meta(R);
  lua_setfield(L, data, "meta");
  lua_settop(L, data);
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, (lua_Integer)R->version);
  lua_setfield(L, -2, "version");
  lua_pushinteger(L, (lua_Integer)R->nsec);
  lua_setfield(L, -2, "sections");
  lua_pushboolean(L, R->version >= 2);
  lua_setfield(L, -2, "checksums");
  return 2;
}

static int read_dump(lua_State *L, const char *name, const unsigned char *buf, size_t len,
                     int summary) {
  Reader R;
  memset(&R, 0, sizeof R);
  R.L = L;
  R.name = name;
  R.buf = buf;
  R.len = len;
  R.summary = summary;
  int top = lua_gettop(L);
  lua_pushcfunction(L, dump_read_body);
  lua_pushlightuserdata(L, &R);
  int status = lua_pcall(L, 1, 2, 0);
  if (status != 0 && (status == LUA_ERRMEM || lua_type(L, -1) != LUA_TSTRING)) {
    lua_settop(L, top);
    lua_pushfstring(L, "cprof: %s: out of memory", name);
  }
  return status != 0;
}

int dump_read_memory(lua_State *L, const char *name, const unsigned char *buf, size_t len) {
  return read_dump(L, name, buf, len, 0);
}

int dump_read_summary(lua_State *L, const char *name, const unsigned char *buf, size_t len) {
  return read_dump(L, name, buf, len, 1);
}
