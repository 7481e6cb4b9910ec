/*
 * tables/functions.h — the function table: one entry per distinct function (a Lua function by
 * its chunk name and line defined, a C function by its address), the chunk names (each distinct
 * text once), and the keys a call event is resolved by. A key is what the hook can see without
 * asking Lua: a prototype's address with its chunk-name string object and line (the fast path;
 * for a function made by coroutine.wrap, its body's, the line moved below -1), or a chunk
 * name's address and a line (the public path), or a C function. Keys are checked against reuse
 * of their address (fn_find_key); only a new key costs more than a probe.
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

/* Where an entry's name came from, weakest first: a call site, the walk of the loaded modules,
   the source line that defines the function (docs/SEMANTICS.md, "Names"). */
enum { NAME_CALL, NAME_GLOBAL, NAME_DEF };

/* A distinct chunk-name text, and the file reports show for it. */
typedef struct Chunk {
  char *text;
  size_t len;
  char *file;
} Chunk;

typedef struct Entry {
  Stat s;
  const void *cfunc; /* C: the function; Lua: NULL */
  uint32_t chunk;    /* Lua: its chunk name (FuncTable.chunks); C: IDX_NONE, except for a
                        function made by coroutine.wrap, told apart by its body's chunk */
  int line;          /* Lua: line defined (0 for a main chunk); C: -1 (a wrap: its body's) */
  int lastline;      /* Lua: last line defined; C: -1 */
  char *name;        /* NULL until named: from a call site, or once per snapshot (ident.c) */
  uint8_t kind;
  uint8_t internal;  /* a profiler function: left out when it is open at disable() */
  uint8_t name_tries;/* new call sites left on which to look for a call-site name */
  uint8_t origin;    /* NAME_CALL, NAME_GLOBAL or NAME_DEF: what gave `name` */
  uint8_t def_read;  /* Lua: its defining source line was looked at (hook/defname.h) */
  uint8_t filter;    /* FILTER_*: whether the profile's record-time filters keep it */
  uint8_t lines;     /* FILTER_IN: it is one of the functions chosen for line events */
  uint8_t no_return; /* NR_*: a LuaJIT built-in, for which no return event comes */
  uint8_t builtin;   /* a LuaJIT built-in's number ("builtin#80", as LuaJIT names it), which
                        stays the same from run to run where its address does not; 0: none */
} Entry;

/* Entry.no_return. A LuaJIT built-in closes at its own last event; coroutine.resume, yield and
   a function made by coroutine.wrap close where control passes between the threads
   (engine/engine.c). */
enum { NR_NONE, NR_BUILTIN, NR_SWITCH };

/* Entry.filter: decided on the first call of the function (hook/ident.c). */
enum { FILTER_UNDECIDED, FILTER_IN, FILTER_OUT };

/* One key a function was seen under. For a Lua function, `src` is the object that holds the
   chunk name's text (the fast path's TString, the public path's text pointer): `verify` says it
   is not kept alive by cprof, so its text must be compared on every lookup. */
typedef struct Key {
  const void *ptr, *src;
  int line;
  uint32_t entry;
  uint8_t verify;
} Key;

/* A chunk-name object (TString, or text pointer) and the chunk it holds. */
typedef struct Source {
  const void *ptr;
  uint32_t chunk;
  uint8_t verify;
} Source;

typedef struct FuncTable {
  Entry *entries;
  uint32_t nentries, centries;
  IdxMap by_content;       /* entries by (chunk, line defined), or by C function */
  Key *keys;
  uint32_t nkeys, ckeys;
  IdxMap by_key;           /* keys by (address, line) */
  Chunk *chunks;
  uint32_t nchunks, cchunks;
  IdxMap chunk_by_text;
  Source *srcs;
  uint32_t nsrcs, csrcs;
  IdxMap src_by_ptr;
  size_t text_bytes;       /* chunk names and names, for the memory counters */
  uint64_t reused;         /* keys found at the address of a dead function, and replaced */
} FuncTable;

/* Empty tables; -1 when out of memory (F can be freed either way). */
int fn_init(FuncTable *F);
void fn_free(FuncTable *F);

/* The entry a key leads to, or IDX_NONE (a new key, or a reused address: fn_set_key then).
   `text`, `len`: the chunk name's text, read only for a key whose source must be verified (NULL
   where the caller cannot give it: the key does not match). */
uint32_t fn_find_key(const FuncTable *F, const void *ptr, const void *src, int line,
                     const char *text, size_t len);
/* Records that key (ptr, src, line) leads to `entry`, replacing a key of a dead function at the
   same address. -1 when out of memory. */
int fn_set_key(FuncTable *F, const void *ptr, const void *src, int line, uint8_t verify,
               uint32_t entry);

/* The chunk whose name is held by object `src`, or IDX_NONE; `text` as for fn_find_key. */
uint32_t fn_find_source(const FuncTable *F, const void *src, const char *text, size_t len);
/* The chunk of this text, made on first sight with `file` (copied), and recorded as held by
   object `src`. IDX_NONE when out of memory. */
uint32_t fn_chunk(FuncTable *F, const void *src, uint8_t verify, const char *text, size_t len,
                  const char *file);

/* The entry of a Lua function (chunk, line) or of a C function (cfunc; chunk IDX_NONE), or
   IDX_NONE. */
uint32_t fn_find_entry(const FuncTable *F, uint32_t chunk, int line, const void *cfunc);
/* Adds that entry, unnamed. IDX_NONE when out of memory. */
uint32_t fn_add(FuncTable *F, uint32_t chunk, int line, const void *cfunc, int kind);

/* Names entry e (copied), the name coming from `origin` (NAME_*); -1 when out of memory (the
   name is kept as it was). */
int fn_set_name(FuncTable *F, uint32_t e, const char *name, int origin);

/* The file reports show for entry e. */
static inline const char *fn_file(const FuncTable *F, const Entry *e) {
  return e->kind == KIND_C ? "~" : F->chunks[e->chunk].file;
}

/* Bytes held by the tables. */
size_t fn_bytes(const FuncTable *F);

#endif
