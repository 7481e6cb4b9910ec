/* The function table (tables/functions.h). Runs when the hook meets a new key (a function it
   has not seen, or one it has seen under another address): the hot path's caches in the call
   tree (calltree.h) answer every other call. */
#include <stdlib.h>
#include <string.h>

#include "tables/functions.h"
#include "util/array.h"
#include "util/fault.h"

int fn_init(FuncTable *F) {
  memset(F, 0, sizeof *F);
  return idxmap_init(&F->by_content, 256) || idxmap_init(&F->by_key, 256) ||
                 idxmap_init(&F->chunk_by_text, 64) || idxmap_init(&F->src_by_ptr, 64)
             ? -1
             : 0;
}

void fn_free(FuncTable *F) {
  for (uint32_t i = 0; i < F->nentries; i++) free(F->entries[i].name);
  for (uint32_t i = 0; i < F->nchunks; i++) {
    free(F->chunks[i].text);
    free(F->chunks[i].file);
  }
  free(F->entries);
  free(F->keys);
  free(F->chunks);
  free(F->srcs);
  idxmap_free(&F->by_content);
  idxmap_free(&F->by_key);
  idxmap_free(&F->chunk_by_text);
  idxmap_free(&F->src_by_ptr);
  memset(F, 0, sizeof *F);
}

static char *copy(const char *s, size_t n) {
  char *d = fault_malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

/* A chunk's text, compared where the object holding it may have died and another taken its
   address. */
static int same_text(const FuncTable *F, uint32_t chunk, const char *text, size_t len) {
  const Chunk *c = &F->chunks[chunk];
  return text && c->len == len && memcmp(c->text, text, len) == 0;
}

typedef struct KeyProbe {
  const FuncTable *F;
  const void *ptr;
  int line;
} KeyProbe;

static int key_matches(const KeyProbe *q, uint32_t k) {
  return q->F->keys[k].ptr == q->ptr && q->F->keys[k].line == q->line;
}

static uint32_t key_slot(const FuncTable *F, const void *ptr, int line) {
  KeyProbe q = {F, ptr, line};
  uint32_t k;
  IDXMAP_FIND(&F->by_key, hash_ptr_line(ptr, line), key_matches, &q, k);
  return k;
}

uint32_t fn_find_key(const FuncTable *F, const void *ptr, const void *src, int line,
                     const char *text, size_t len) {
  uint32_t k = key_slot(F, ptr, line);
  if (k == IDX_NONE) return IDX_NONE;
  const Key *key = &F->keys[k];
  if (key->src != src) return IDX_NONE;
  if (key->verify && !same_text(F, F->entries[key->entry].chunk, text, len)) return IDX_NONE;
  return key->entry;
}

int fn_set_key(FuncTable *F, const void *ptr, const void *src, int line, uint8_t verify,
               uint32_t entry) {
  uint32_t k = key_slot(F, ptr, line);
  if (k == IDX_NONE) {
    if (array_reserve((void **)&F->keys, &F->ckeys, sizeof *F->keys, F->nkeys, 256) ||
        idxmap_put(&F->by_key, hash_ptr_line(ptr, line), F->nkeys))
      return -1;
    k = F->nkeys++;
  } else {
    F->reused++;
  }
  F->keys[k] = (Key){ptr, src, line, entry, verify};
  return 0;
}

typedef struct SrcProbe {
  const FuncTable *F;
  const void *ptr;
} SrcProbe;

static int src_matches(const SrcProbe *q, uint32_t i) { return q->F->srcs[i].ptr == q->ptr; }

static uint32_t src_slot(const FuncTable *F, const void *ptr) {
  SrcProbe q = {F, ptr};
  uint32_t i;
  IDXMAP_FIND(&F->src_by_ptr, hash_ptr_line(ptr, 0), src_matches, &q, i);
  return i;
}

uint32_t fn_find_source(const FuncTable *F, const void *src, const char *text, size_t len) {
  uint32_t i = src_slot(F, src);
  if (i == IDX_NONE) return IDX_NONE;
  const Source *s = &F->srcs[i];
  if (s->verify && !same_text(F, s->chunk, text, len)) return IDX_NONE;
  return s->chunk;
}

typedef struct TextProbe {
  const FuncTable *F;
  const char *text;
  size_t len;
} TextProbe;

static int text_matches(const TextProbe *q, uint32_t i) { return same_text(q->F, i, q->text, q->len); }

uint32_t fn_chunk(FuncTable *F, const void *src, uint8_t verify, const char *text, size_t len,
                  const char *file) {
  TextProbe q = {F, text, len};
  uint32_t h = (uint32_t)hash_mix64(hash_bytes(text, len, HASH_BYTES_SEED)), c;
  IDXMAP_FIND(&F->chunk_by_text, h, text_matches, &q, c);
  if (c == IDX_NONE) {
    char *t = copy(text, len), *f = copy(file, strlen(file));
    if (!t || !f ||
        array_reserve((void **)&F->chunks, &F->cchunks, sizeof *F->chunks, F->nchunks, 16) ||
        idxmap_put(&F->chunk_by_text, h, F->nchunks)) {
      free(t);
      free(f);
      return IDX_NONE;
    }
    c = F->nchunks++;
    F->chunks[c] = (Chunk){t, len, f};
    F->text_bytes += len + strlen(file) + 2;
  }
  uint32_t i = src_slot(F, src);
  if (i == IDX_NONE) {
    if (array_reserve((void **)&F->srcs, &F->csrcs, sizeof *F->srcs, F->nsrcs, 16) ||
        idxmap_put(&F->src_by_ptr, hash_ptr_line(src, 0), F->nsrcs))
      return IDX_NONE;
    i = F->nsrcs++;
  }
  F->srcs[i] = (Source){src, c, verify};
  return c;
}

typedef struct EntryProbe {
  const FuncTable *F;
  uint32_t chunk;
  int line;
  const void *cfunc;
} EntryProbe;

static int entry_matches(const EntryProbe *q, uint32_t i) {
  const Entry *e = &q->F->entries[i];
  return e->chunk == q->chunk && e->line == q->line && e->cfunc == q->cfunc;
}

static uint32_t entry_hash(uint32_t chunk, int line, const void *cfunc) {
  return chunk == IDX_NONE ? hash_ptr_line(cfunc, -1) : hash_pair(chunk, (uint32_t)line);
}

uint32_t fn_find_entry(const FuncTable *F, uint32_t chunk, int line, const void *cfunc) {
  EntryProbe q = {F, chunk, line, cfunc};
  uint32_t i;
  IDXMAP_FIND(&F->by_content, entry_hash(chunk, line, cfunc), entry_matches, &q, i);
  return i;
}

uint32_t fn_add(FuncTable *F, uint32_t chunk, int line, const void *cfunc, int kind) {
  if (array_reserve((void **)&F->entries, &F->centries, sizeof *F->entries, F->nentries, 256) ||
      idxmap_put(&F->by_content, entry_hash(chunk, line, cfunc), F->nentries))
    return IDX_NONE;
  uint32_t i = F->nentries++;
  Entry *e = &F->entries[i];
  memset(e, 0, sizeof *e);
  e->cfunc = cfunc;
  e->chunk = chunk;
  e->line = line;
  e->lastline = -1;
  e->kind = (uint8_t)kind;
  return i;
}

int fn_set_name(FuncTable *F, uint32_t e, const char *name, int origin) {
  size_t n = strlen(name);
  char *d = copy(name, n);
  if (!d) return -1;
  Entry *en = &F->entries[e];
  if (en->name) F->text_bytes -= strlen(en->name) + 1;
  free(en->name);
  en->name = d;
  en->origin = (uint8_t)origin;
  F->text_bytes += n + 1;
  return 0;
}

size_t fn_bytes(const FuncTable *F) {
  return (size_t)F->centries * sizeof *F->entries + (size_t)F->ckeys * sizeof *F->keys +
         (size_t)F->cchunks * sizeof *F->chunks + (size_t)F->csrcs * sizeof *F->srcs +
         idxmap_bytes(&F->by_content) + idxmap_bytes(&F->by_key) +
         idxmap_bytes(&F->chunk_by_text) + idxmap_bytes(&F->src_by_ptr) + F->text_bytes;
}
