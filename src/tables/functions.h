/*
 * tables/functions.h — the function table: one entry per distinct function (a Lua function by
 * its chunk name and line defined, a C function by its address) and the addresses it was seen
 * under. A call event costs one probe of the address map (fn_find_key, inline) and, for a Lua
 * function, one comparison of the chunk name; only a new function or address costs more.
 */
#ifndef CPROF_FUNCTIONS_H
#define CPROF_FUNCTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tables/stat.h"
#include "util/hash.h"
#include "util/idxmap.h"

enum { KIND_LUA, KIND_MAIN, KIND_C };

typedef struct Entry {
  const void *cfunc; /* C: the function; Lua: NULL */
  int line;          /* Lua: line defined; C: -1 */
  int lastline;      /* Lua: last line defined; C: -1 */
  char *source;      /* Lua: the chunk name: with `line`, the identity of a prototype */
  size_t srclen;
  char *file, *name; /* as reported */
  uint8_t kind;
  uint8_t internal;  /* a profiler function: left out when it is open at disable() */
  uint8_t name_tries;/* calls left on which to look for a better name */
  Stat s;
} Entry;

/* One address under which a function was seen. A chunk loaded twice has two chunk-name
   strings, so one entry can have several keys; the entry itself is unique by content. */
typedef struct Key {
  const void *ptr;
  int line;
  uint32_t entry;
} Key;

typedef struct FuncTable {
  Entry *entries;
  uint32_t nentries, centries;
  IdxMap by_content;       /* entries by (chunk name, line defined), or by C function */
  Key *keys;
  uint32_t nkeys, ckeys;
  IdxMap by_address;       /* keys by (address, line): the map every call event probes */
} FuncTable;

/* Empty tables; -1 when out of memory (F can be freed either way). */
int fn_init(FuncTable *F);
void fn_free(FuncTable *F);

/* The entry of a function seen under this address: Lua functions are (chunk name text, line
   defined) with `source` the chunk name; C functions are (function, -1) with source NULL.
   IDX_NONE when the address is new. */
static inline uint32_t fn_find_key(FuncTable *F, const void *ptr, int line, const char *source,
                                   size_t srclen);
/* The slow path of a miss: finds the entry by content, or returns IDX_NONE so that the caller
   names the function and calls fn_add. Records the new address either way. */
uint32_t fn_find_content(FuncTable *F, const void *ptr, int line, const char *source,
                         size_t srclen);
/* Adds an entry and its address; takes ownership of file and name (malloc'd).
   IDX_NONE when out of memory (file and name are freed). */
uint32_t fn_add(FuncTable *F, const void *ptr, int line, const char *source, size_t srclen,
                char *file, char *name, int kind);

/* A function looked up: by address (fn_find_key) or by content (fn_find_content, where `ptr`
   is NULL for a Lua function). */
typedef struct FnProbe {
  const FuncTable *F;
  const void *ptr;
  int line;
  const char *source;
  size_t srclen;
} FnProbe;

static inline int fn_key_matches(const FnProbe *q, uint32_t k) {
  const Key *key = &q->F->keys[k];
  if (key->ptr != q->ptr || key->line != q->line) return 0;
  if (!q->source) return 1;
  /* The address of a collected chunk's name can be reused by another chunk. */
  const Entry *e = &q->F->entries[key->entry];
  return e->srclen == q->srclen && memcmp(e->source, q->source, q->srclen) == 0;
}

static inline uint32_t fn_find_key(FuncTable *F, const void *ptr, int line, const char *source,
                                   size_t srclen) {
  FnProbe q = {F, ptr, line, source, srclen};
  uint32_t h = hash_ptr_line(ptr, line), k;
  IDXMAP_FIND(&F->by_address, h, fn_key_matches, &q, k);
  return k == IDX_NONE ? IDX_NONE : F->keys[k].entry;
}

#endif
