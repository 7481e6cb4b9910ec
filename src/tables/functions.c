/* The function table (tables/functions.h). Nothing here runs per call: the probe that does is
   inline in the header; an entry or an address is added once per function or address. */
#include <stdlib.h>
#include <string.h>

#include "tables/functions.h"
#include "util/array.h"
#include "util/fault.h"

int fn_init(FuncTable *F) {
  memset(F, 0, sizeof *F);
  return idxmap_init(&F->by_content, 256) || idxmap_init(&F->by_address, 256) ? -1 : 0;
}

void fn_free(FuncTable *F) {
  for (uint32_t i = 0; i < F->nentries; i++) {
    free(F->entries[i].source);
    free(F->entries[i].file);
    free(F->entries[i].name);
  }
  free(F->entries);
  free(F->keys);
  idxmap_free(&F->by_content);
  idxmap_free(&F->by_address);
  memset(F, 0, sizeof *F);
}

static uint32_t content_hash(const char *source, size_t srclen, int line) {
  return (uint32_t)hash_mix64(hash_bytes(source, srclen, HASH_BYTES_SEED) ^ (uint32_t)line);
}

static int content_matches(const FnProbe *q, uint32_t i) {
  const Entry *e = &q->F->entries[i];
  if (q->ptr) return e->cfunc == q->ptr;
  return e->line == q->line && e->srclen == q->srclen && !e->cfunc &&
         memcmp(e->source, q->source, q->srclen) == 0;
}

static uint32_t entry_hash(const void *ptr, int line, const char *source, size_t srclen) {
  return source ? content_hash(source, srclen, line) : hash_ptr_line(ptr, line);
}

static int add_key(FuncTable *F, const void *ptr, int line, uint32_t entry) {
  if (array_reserve((void **)&F->keys, &F->ckeys, sizeof *F->keys, F->nkeys, 256)) return -1;
  if (idxmap_put(&F->by_address, hash_ptr_line(ptr, line), F->nkeys)) return -1;
  F->keys[F->nkeys++] = (Key){ptr, line, entry};
  return 0;
}

uint32_t fn_find_content(FuncTable *F, const void *ptr, int line, const char *source,
                         size_t srclen) {
  FnProbe q = {F, source ? NULL : ptr, line, source, srclen};
  uint32_t i;
  IDXMAP_FIND(&F->by_content, entry_hash(ptr, line, source, srclen), content_matches, &q, i);
  if (i != IDX_NONE && add_key(F, ptr, line, i)) return IDX_NONE;
  return i;
}

uint32_t fn_add(FuncTable *F, const void *ptr, int line, const char *source, size_t srclen,
                char *file, char *name, int kind) {
  char *src = NULL;
  if (source) {
    src = fault_malloc(srclen + 1);
    if (src) {
      memcpy(src, source, srclen);
      src[srclen] = '\0';
    }
  }
  if (!file || !name || (source && !src) ||
      array_reserve((void **)&F->entries, &F->centries, sizeof *F->entries, F->nentries, 256) ||
      idxmap_put(&F->by_content, entry_hash(ptr, line, source, srclen), F->nentries)) {
    free(src);
    free(file);
    free(name);
    return IDX_NONE;
  }
  uint32_t i = F->nentries++;
  Entry *e = &F->entries[i];
  memset(e, 0, sizeof *e);
  e->cfunc = source ? NULL : ptr;
  e->line = line;
  e->source = src;
  e->srclen = srclen;
  e->file = file;
  e->name = name;
  e->kind = (uint8_t)kind;
  if (add_key(F, ptr, line, i)) return IDX_NONE;  /* the entry stays, findable by content */
  return i;
}
