/*
 * dump/format.h — the binary dump format (docs/FORMAT.md), shared by the writer
 * (write.c), the reader (read.c) and the Lua binding (ldump.c).
 *
 * A file is a header (magic, version, section directory with a CRC-32C per section, the
 * header's CRC-32C) and sections. Records are rows of fields described by the file's own
 * schema, so fields can be added without a new version.
 */
#ifndef CPROF_DUMP_FORMAT_H
#define CPROF_DUMP_FORMAT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <lua.h>

/* 0x89 catches 7-bit transfers, "\r\n" catches line-ending conversion in either direction,
   and the version that follows starts with NUL bytes (it is little-endian and small). */
#define DUMP_MAGIC "\x89" "CPROF\r\n"
#define DUMP_MAGIC_LEN 8

#define DUMP_VERSION 2     /* what the writer writes */
#define DUMP_MIN_VERSION 1 /* what the reader reads */
#define DUMP_MAX_VERSION 2

/* magic[8], version u32, section count u32, then that many directory entries; in version 2
   each entry ends with the section's CRC-32C, and the directory is followed by the CRC-32C of
   everything before it. */
#define DUMP_FIXED_HEADER 16
#define DUMP_DIRENT_V1 20 /* kind u32, offset u64, length u64 */
#define DUMP_DIRENT_V2 24 /* kind u32, offset u64, length u64, crc u32 */
#define DUMP_HEADER_CRC 4

/* Files larger than this are refused before they are read: the data table of a dump takes a
   small multiple of its size in memory (a profile of a million call paths is some 30 MB). */
#define DUMP_MAX_FILE ((uint64_t)1 << 30)

/* Section kinds. A reader skips kinds it does not know. Kinds 1-6 are required; the later
   ones hold the records of an optional record kind (lines, the allocator snapshot, the trace)
   and are written only when the data table has that group. */
enum {
  DUMP_SEC_SCHEMA = 1,
  DUMP_SEC_STRINGS = 2,
  DUMP_SEC_FRAMES = 3,
  DUMP_SEC_EDGES = 4,
  DUMP_SEC_NODES = 5,
  DUMP_SEC_META = 6,
  DUMP_SEC_LINES = 7,
  DUMP_SEC_MEM_CACHES = 8,
  DUMP_SEC_MEM_TYPES = 9,
  DUMP_SEC_MEM_ARENAS = 10,
  DUMP_SEC_MEM_FREE_LISTS = 11,
  DUMP_SEC_TRACE = 12,
  DUMP_SEC_LAST_REQUIRED = 6,
  DUMP_SEC_LAST_KNOWN = 12
};

/* Record kinds described by the schema; each has its own records section. The first three
   are required; the others are optional (a file without them reads back without the group). */
enum {
  DUMP_REC_FRAME = 1,
  DUMP_REC_EDGE = 2,
  DUMP_REC_NODE = 3,
  DUMP_REC_LINE = 4,
  DUMP_REC_MEM_CACHE = 5,
  DUMP_REC_MEM_TYPE = 6,
  DUMP_REC_MEM_ARENA = 7,
  DUMP_REC_MEM_FREE_LIST = 8,
  DUMP_REC_TRACE = 9,
  DUMP_NREC = 9,
  DUMP_NREC_REQUIRED = 3
};

/* Indexes into DUMP_KINDS (the order records are read and written in). */
enum { DUMP_K_FRAMES = 0, DUMP_K_EDGES, DUMP_K_NODES, DUMP_K_LINES, DUMP_K_MEM_CACHES,
       DUMP_K_MEM_TYPES, DUMP_K_MEM_ARENAS, DUMP_K_MEM_FREE_LISTS, DUMP_K_TRACE };

/* How a field's bytes are laid out: enough to skip a field of an unknown encoding. */
enum { DUMP_WIRE_VARINT = 0, DUMP_WIRE_FIXED64 = 1, DUMP_WIRE_BYTES = 2 };

/* What a field's value means. */
enum {
  DUMP_ENC_UINT = 1,   /* varint: unsigned LEB128, at most 2^63-1 */
  DUMP_ENC_SINT = 2,   /* varint: zigzag LEB128 */
  DUMP_ENC_F64 = 3,    /* fixed64: IEEE-754 binary64, little-endian */
  DUMP_ENC_STRING = 4, /* varint: index into the string table */
  DUMP_ENC_FRAME = 5,  /* varint: index into the frame table */
  DUMP_ENC_PARENT = 6, /* varint: 0 = a root, d = the node d records before this one */
  DUMP_ENC_BYTES = 7,  /* bytes: varint length, then the bytes */
  DUMP_ENC_ROW = 8     /* varint: index into the records of another kind (DumpField.def) */
};

/* Typed values of the metadata section. */
enum {
  DUMP_META_FALSE = 0,
  DUMP_META_TRUE = 1,
  DUMP_META_INT = 2,    /* zigzag varint */
  DUMP_META_FLOAT = 3,  /* binary64 */
  DUMP_META_STRING = 4  /* varint length, then the bytes */
};

/* What the metadata keys that cprof reads must hold: the reader refuses a file, and the writer
   data, where one of them holds anything else. Other keys may hold any type. */
enum { DUMP_MK_STRING = 1, DUMP_MK_NUMBER, DUMP_MK_INTEGER, DUMP_MK_BOOLEAN };

/* The class of metadata key k (n bytes), or 0 for a key of any type. Every key "mem_..." (the
   allocator snapshot's totals) is an integer. */
static inline int dump_meta_class(const char *k, size_t n) {
  static const struct { const char *key; int cls; } keys[] = {
    {"lua_version", DUMP_MK_STRING}, {"timer", DUMP_MK_STRING}, {"command", DUMP_MK_STRING},
    {"host", DUMP_MK_STRING},        {"unit", DUMP_MK_NUMBER},  {"bias", DUMP_MK_NUMBER},
    {"start_time", DUMP_MK_NUMBER},  {"total_time", DUMP_MK_NUMBER},
    {"pid", DUMP_MK_INTEGER},        {"tree_cap", DUMP_MK_INTEGER},
    {"tree_folded", DUMP_MK_INTEGER}, {"dropped", DUMP_MK_INTEGER},
    {"memory_lost", DUMP_MK_INTEGER}, {"bias_clamped", DUMP_MK_INTEGER},
    {"merged", DUMP_MK_INTEGER},     {"timer_errors", DUMP_MK_INTEGER},
    {"memory", DUMP_MK_BOOLEAN},     {"bias_applied", DUMP_MK_BOOLEAN},
    {"subcalls", DUMP_MK_BOOLEAN},   {"cprof_version", DUMP_MK_STRING},
    {"memory_allocs", DUMP_MK_INTEGER}, {"memory_bytes", DUMP_MK_INTEGER},
    {"memory_frees", DUMP_MK_INTEGER},  {"memory_freed", DUMP_MK_INTEGER},
    {"trace_size", DUMP_MK_INTEGER}, {"trace_dropped", DUMP_MK_INTEGER},
    {"tree_recursion", DUMP_MK_INTEGER},
  };
  if (n > 4 && memcmp(k, "mem_", 4) == 0) return DUMP_MK_INTEGER;
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (strlen(keys[i].key) == n && memcmp(keys[i].key, k, n) == 0) return keys[i].cls;
  return 0;
}

static const char *const DUMP_MK_NAMES[] = {"", "a string", "a number", "an integer", "a boolean"};

/* Most fields one record kind may have in a file (known and unknown together). */
#define DUMP_MAX_FIELDS 64

/* Records of each kind are at most this many (a Lua array is indexed by int). */
#define DUMP_MAX_RECORDS 0x7fffffffu

/* DumpField.required: a field of an extension (memory) that a file without it lacks: the reader
   creates no column for it, so such a profile reads back exactly as it was written. The fields
   of an extension come together: a record kind has all of them or none. */
#define DUMP_EXTENSION 2
/* The second extension of nodes: lifetimes, first allocation, last free and counts per Lua type
   (written since cprof 0.9; a file with memory may lack them). Its fields go together too. */
#define DUMP_EXT_LIFE 3

typedef struct DumpField {
  const char *name;  /* also the column's name in the Lua data table */
  uint8_t enc;
  uint8_t required;  /* 0: a file may lack it and the reader supplies `def`; 1: required;
                        DUMP_EXTENSION, DUMP_EXT_LIFE: the extension the field belongs to */
  int64_t def;       /* the default (times: 0.0, strings: ""); for DUMP_ENC_ROW, which is always
                        required, the DUMP_K_* of the records it refers to */
} DumpField;

typedef struct DumpRecordKind {
  const char *group; /* the data table's field: "frames", "edges", "nodes", "lines", ... */
  uint8_t rec;       /* DUMP_REC_* */
  uint8_t section;   /* DUMP_SEC_* holding the records */
  uint8_t nfields;
  uint8_t optional;  /* the group may be absent: no schema entry, no section */
  const DumpField *fields;
} DumpRecordKind;

/* The counts and times of frames, edges and nodes. */
#define DUMP_CALL_FIELDS                                              \
  {"ncalls", DUMP_ENC_UINT, 0, 0},  {"pcalls", DUMP_ENC_UINT, 0, 0},  \
  {"tottime", DUMP_ENC_F64, 0, 0},  {"cumtime", DUMP_ENC_F64, 0, 0}

/* The memory of frames and nodes (cprof's allocator; absent from profiles without it). */
#define DUMP_MEMORY_FIELDS                                            \
  {"alloc_count", DUMP_ENC_UINT, DUMP_EXTENSION, 0},                  \
  {"alloc_bytes", DUMP_ENC_UINT, DUMP_EXTENSION, 0},                  \
  {"free_count", DUMP_ENC_UINT, DUMP_EXTENSION, 0},                   \
  {"free_bytes", DUMP_ENC_UINT, DUMP_EXTENSION, 0},                   \
  {"min_size", DUMP_ENC_UINT, DUMP_EXTENSION, 0},                     \
  {"max_size", DUMP_ENC_UINT, DUMP_EXTENSION, 0}

static const DumpField DUMP_FRAME_FIELDS[] = {
  {"kind", DUMP_ENC_STRING, 1, 0},  {"file", DUMP_ENC_STRING, 1, 0},
  {"line", DUMP_ENC_SINT, 1, 0},    {"lastline", DUMP_ENC_SINT, 0, -1},
  {"name", DUMP_ENC_STRING, 1, 0},
  DUMP_CALL_FIELDS,
  /* The function's memory, in data without a call tree (made from a report: data.from_stats). */
  DUMP_MEMORY_FIELDS,
};
static const DumpField DUMP_EDGE_FIELDS[] = {
  {"caller", DUMP_ENC_FRAME, 1, 0}, {"callee", DUMP_ENC_FRAME, 1, 0},
  DUMP_CALL_FIELDS,
};
#define DUMP_TYPE_FIELDS(t)                                           \
  {t "_allocs", DUMP_ENC_UINT, DUMP_EXT_LIFE, 0},                     \
  {t "_frees", DUMP_ENC_UINT, DUMP_EXT_LIFE, 0}

static const DumpField DUMP_NODE_FIELDS[] = {
  {"parent", DUMP_ENC_PARENT, 1, 0}, {"frame", DUMP_ENC_FRAME, 1, 0},
  DUMP_CALL_FIELDS,
  /* Memory charged to the node. */
  DUMP_MEMORY_FIELDS,
  /* MemProf's lifetimes (seconds, over the blocks freed), the first allocation and the last
     free (seconds since attribution started), and the allocations and frees per Lua type. */
  {"life_total", DUMP_ENC_F64, DUMP_EXT_LIFE, 0}, {"life_min", DUMP_ENC_F64, DUMP_EXT_LIFE, 0},
  {"life_max", DUMP_ENC_F64, DUMP_EXT_LIFE, 0},   {"alloc_time", DUMP_ENC_F64, DUMP_EXT_LIFE, 0},
  {"free_time", DUMP_ENC_F64, DUMP_EXT_LIFE, 0},
  DUMP_TYPE_FIELDS("raw"), DUMP_TYPE_FIELDS("string"), DUMP_TYPE_FIELDS("table"),
  DUMP_TYPE_FIELDS("function"), DUMP_TYPE_FIELDS("userdata"), DUMP_TYPE_FIELDS("thread"),
  DUMP_TYPE_FIELDS("upvalue"), DUMP_TYPE_FIELDS("proto"), DUMP_TYPE_FIELDS("other"),
};

/* Line events: hits and time of one source line of one function. */
static const DumpField DUMP_LINE_FIELDS[] = {
  {"frame", DUMP_ENC_FRAME, 1, 0}, {"line", DUMP_ENC_SINT, 1, 0},
  {"hits", DUMP_ENC_UINT, 0, 0},   {"time", DUMP_ENC_F64, 0, 0},
};

/* The allocator snapshot (cprof.memory.stats() at dump time; the totals are meta keys mem_*). */
static const DumpField DUMP_MEM_CACHE_FIELDS[] = {
  {"name", DUMP_ENC_STRING, 1, 0},      {"type", DUMP_ENC_STRING, 0, 0},
  {"source", DUMP_ENC_STRING, 0, 0},    {"objsize", DUMP_ENC_UINT, 0, 0},
  {"slab_size", DUMP_ENC_UINT, 0, 0},   {"objects", DUMP_ENC_UINT, 0, 0},
  {"live", DUMP_ENC_UINT, 0, 0},        {"magazine", DUMP_ENC_UINT, 0, 0},
  {"allocs", DUMP_ENC_UINT, 0, 0},      {"requested", DUMP_ENC_UINT, 0, 0},
  {"slabs", DUMP_ENC_UINT, 0, 0},       {"partial_slabs", DUMP_ENC_UINT, 0, 0},
};
static const DumpField DUMP_MEM_TYPE_FIELDS[] = {
  {"name", DUMP_ENC_STRING, 1, 0},      {"tag", DUMP_ENC_SINT, 0, 0},
  {"live", DUMP_ENC_UINT, 0, 0},        {"bytes", DUMP_ENC_UINT, 0, 0},
  {"held", DUMP_ENC_UINT, 0, 0},        {"allocs", DUMP_ENC_UINT, 0, 0},
  {"large_live", DUMP_ENC_UINT, 0, 0},  {"large_allocs", DUMP_ENC_UINT, 0, 0},
  {"large_held", DUMP_ENC_UINT, 0, 0},
};
static const DumpField DUMP_MEM_ARENA_FIELDS[] = {
  {"name", DUMP_ENC_STRING, 1, 0},      {"source", DUMP_ENC_STRING, 0, 0},
  {"quantum", DUMP_ENC_UINT, 0, 0},     {"total", DUMP_ENC_UINT, 0, 0},
  {"alloc", DUMP_ENC_UINT, 0, 0},       {"free", DUMP_ENC_UINT, 0, 0},
  {"imported", DUMP_ENC_UINT, 0, 0},    {"peak_total", DUMP_ENC_UINT, 0, 0},
  {"nr_allocs", DUMP_ENC_UINT, 0, 0},   {"nr_free_segs", DUMP_ENC_UINT, 0, 0},
  {"nr_spans", DUMP_ENC_UINT, 0, 0},    {"nr_imports", DUMP_ENC_UINT, 0, 0},
  {"nr_empty", DUMP_ENC_UINT, 0, 0},    {"allocs", DUMP_ENC_UINT, 0, 0},
  {"frees", DUMP_ENC_UINT, 0, 0},       {"imports", DUMP_ENC_UINT, 0, 0},
  {"releases", DUMP_ENC_UINT, 0, 0},    {"import_failures", DUMP_ENC_UINT, 0, 0},
  {"hash_size", DUMP_ENC_UINT, 0, 0},   {"hash_empty", DUMP_ENC_UINT, 0, 0},
  {"hash_longest", DUMP_ENC_UINT, 0, 0}, {"meta", DUMP_ENC_UINT, 0, 0},
  /* quantum caches (added later: an older file reads them as 0) */
  {"qcache_max", DUMP_ENC_UINT, 0, 0},  {"qcached", DUMP_ENC_UINT, 0, 0},
  {"qcached_bytes", DUMP_ENC_UINT, 0, 0}, {"qcache_allocs", DUMP_ENC_UINT, 0, 0},
  {"qcache_frees", DUMP_ENC_UINT, 0, 0},
};
/* One non-empty free list of one arena: segments of sizes in [2^list, 2^(list+1)). */
static const DumpField DUMP_MEM_FREE_LIST_FIELDS[] = {
  {"arena", DUMP_ENC_ROW, 1, DUMP_K_MEM_ARENAS}, {"list", DUMP_ENC_UINT, 1, 0},
  {"segs", DUMP_ENC_UINT, 0, 0},
};

/* The time line of a profile made with trace = true: one call (event 0) or return (event 1) of
   the frame of call-tree node `node` in coroutine `thread`, at `time` seconds. */
static const DumpField DUMP_TRACE_FIELDS[] = {
  {"event", DUMP_ENC_UINT, 1, 0},   {"thread", DUMP_ENC_UINT, 1, 0},
  {"node", DUMP_ENC_ROW, 1, DUMP_K_NODES}, {"time", DUMP_ENC_F64, 1, 0},
};

#define DUMP_COUNT(a) ((uint8_t)(sizeof(a) / sizeof((a)[0])))

/* In file order: frames first (edges, nodes and lines refer to them), and arenas before their
   free lists. */
static const DumpRecordKind DUMP_KINDS[DUMP_NREC] = {
  {"frames", DUMP_REC_FRAME, DUMP_SEC_FRAMES, DUMP_COUNT(DUMP_FRAME_FIELDS), 0, DUMP_FRAME_FIELDS},
  {"edges", DUMP_REC_EDGE, DUMP_SEC_EDGES, DUMP_COUNT(DUMP_EDGE_FIELDS), 0, DUMP_EDGE_FIELDS},
  {"nodes", DUMP_REC_NODE, DUMP_SEC_NODES, DUMP_COUNT(DUMP_NODE_FIELDS), 0, DUMP_NODE_FIELDS},
  {"lines", DUMP_REC_LINE, DUMP_SEC_LINES, DUMP_COUNT(DUMP_LINE_FIELDS), 1, DUMP_LINE_FIELDS},
  {"mem_caches", DUMP_REC_MEM_CACHE, DUMP_SEC_MEM_CACHES, DUMP_COUNT(DUMP_MEM_CACHE_FIELDS), 1,
   DUMP_MEM_CACHE_FIELDS},
  {"mem_types", DUMP_REC_MEM_TYPE, DUMP_SEC_MEM_TYPES, DUMP_COUNT(DUMP_MEM_TYPE_FIELDS), 1,
   DUMP_MEM_TYPE_FIELDS},
  {"mem_arenas", DUMP_REC_MEM_ARENA, DUMP_SEC_MEM_ARENAS, DUMP_COUNT(DUMP_MEM_ARENA_FIELDS), 1,
   DUMP_MEM_ARENA_FIELDS},
  {"mem_free_lists", DUMP_REC_MEM_FREE_LIST, DUMP_SEC_MEM_FREE_LISTS,
   DUMP_COUNT(DUMP_MEM_FREE_LIST_FIELDS), 1, DUMP_MEM_FREE_LIST_FIELDS},
  {"trace", DUMP_REC_TRACE, DUMP_SEC_TRACE, DUMP_COUNT(DUMP_TRACE_FIELDS), 1, DUMP_TRACE_FIELDS},
};

static inline int dump_wire_of(int enc) {
  return enc == DUMP_ENC_F64 ? DUMP_WIRE_FIXED64 : enc == DUMP_ENC_BYTES ? DUMP_WIRE_BYTES
                                                                         : DUMP_WIRE_VARINT;
}

/* The highest encoding this cprof knows. */
#define DUMP_ENC_LAST DUMP_ENC_ROW

/* Pushes the message of every error of the reader and the writer: "cprof: <name>: <fmt ...>".
   They raise it inside their lua_pcall. */
static inline void dump_push_error(lua_State *L, const char *name, const char *fmt, va_list ap) {
  char msg[512];
  vsnprintf(msg, sizeof msg, fmt, ap);
  lua_pushfstring(L, "cprof: %s: %s", name, msg);
}

/* Little-endian fixed-size helpers. */
static inline void dump_put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline void dump_put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline uint32_t dump_get_u32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}
static inline uint64_t dump_get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/*
 * The reader. Parses buf[0..len) and pushes the data table and a table describing the file
 * ({version = V, sections = S, checksums = true|false}; returns 0), or pushes the message
 * "cprof: <name>: <what is wrong>" (returns 1). Never raises, never reads outside the buffer,
 * never allocates more than a small multiple of `len`.
 */
int dump_read_memory(lua_State *L, const char *name, const unsigned char *buf, size_t len);
/* The same, but only the summary: the metadata and the allocator snapshot, without decoding
   frames, edges, nodes or line records (their groups are absent from the data table). */
int dump_read_summary(lua_State *L, const char *name, const unsigned char *buf, size_t len);

/*
 * The writer. The data table is at `data` (docs/FORMAT.md, "The data table").
 * dump_write_file writes `path` atomically (a temporary file in the same folder, then rename);
 * dump_write_memory returns a fault_malloc'd buffer the caller frees. Both return 0, or push
 * "cprof: <name>: <what is wrong>" and return 1; neither raises.
 */
int dump_write_file(lua_State *L, const char *path, int data);
int dump_write_memory(lua_State *L, const char *name, int data, unsigned char **out,
                      size_t *outlen);
/* What the reader and the writer run under lua_pcall, so that a profile running meanwhile
   sees them called: lcprof.c gives them names for its reports. */
int dump_read_body(lua_State *L);
int dump_write_body(lua_State *L);
/* The Lua stack slots dump_write_body needs beyond its arguments: a live dump is put off while
   the program's stack has less room than this and the Lua frames above it (hook/live.c). */
#define DUMP_WRITE_STACK (3 * DUMP_MAX_FIELDS + 16)

#endif
