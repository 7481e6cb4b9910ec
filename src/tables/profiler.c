/* The profiler's tables. Nothing here runs per call except through the inline probes in
   profiler.h; growth happens only when a new function, edge or coroutine appears. */
#include <stdlib.h>
#include <string.h>

#include "util/fault.h"
#include "mem/memattr.h"
#include "tables/profiler.h"

/* Doubles an array's capacity; 0 or -1 when out of memory. */
static int grow(void **arr, uint32_t *cap, size_t elem, uint32_t first) {
  uint32_t ncap = *cap ? *cap * 2 : first;
  if (ncap <= *cap) return -1;
  void *n = fault_realloc(*arr, (size_t)ncap * elem);
  if (!n) return -1;
  *arr = n;
  *cap = ncap;
  return 0;
}

int prof_init(Profiler *P, const cprof_timer *timer) {
  memset(P, 0, sizeof *P);
  P->next_stack_id = 1;
  P->sweep_at = 64;
  P->tree_cap = TREE_CAP_DEFAULT;
  prof_set_timer(P, timer);
  if (idxmap_init(&P->cmap, 256) || idxmap_init(&P->kmap, 256) || idxmap_init(&P->gmap, 512) ||
      idxmap_init(&P->smap, 16) || idxmap_init(&P->lmap, 512) || idxmap_init(&P->rmap, 64)) {
    prof_free(P);
    return -1;
  }
  P->ready = 1;
  return 0;
}

static void free_entries(Profiler *P) {
  for (uint32_t i = 0; i < P->nentries; i++) {
    free(P->entries[i].source);
    free(P->entries[i].file);
    free(P->entries[i].name);
  }
}

static void free_stack(Stack *st) {
  free(st->f);
  free(st);
}

void prof_free(Profiler *P) {
  memattr_free(P);
  free_entries(P);
  free(P->entries);
  free(P->keys);
  free(P->edges);
  free(P->nodes);
  free(P->links);
  free(P->linerecs);
  for (uint32_t i = 0; i < P->nstacks; i++) free_stack(P->stacks[i]);
  free(P->stacks);
  idxmap_free(&P->cmap);
  idxmap_free(&P->kmap);
  idxmap_free(&P->gmap);
  idxmap_free(&P->smap);
  idxmap_free(&P->lmap);
  idxmap_free(&P->rmap);
  cprof_timer timer = P->timer;
  memset(P, 0, sizeof *P);
  P->timer = timer;
}

void prof_set_timer(Profiler *P, const cprof_timer *timer) {
  P->timer = *timer;
  P->measure_every = timer->exact ? 1 : 16;  /* a power of two: see hook.c, stop_clock */
}

int prof_clear(Profiler *P) {
  cprof_timer timer = P->timer;
  uint32_t cap = P->tree_cap;
  int lines = P->lines;
  double bias = P->bias;
  prof_free(P);
  int r = prof_init(P, &timer);
  P->tree_cap = cap;
  P->lines = lines;
  P->bias = bias;
  return r;
}

static uint32_t content_hash(const char *source, size_t srclen, int line) {
  return (uint32_t)hash_mix64(hash_bytes(source, srclen, HASH_BYTES_SEED) ^ (uint32_t)line);
}

typedef struct ContentProbe {
  Profiler *P;
  const void *cfunc;
  int line;
  const char *source;
  size_t srclen;
} ContentProbe;

static int content_matches(const ContentProbe *q, uint32_t i) {
  const Entry *e = &q->P->entries[i];
  if (q->cfunc) return e->cfunc == q->cfunc;
  return e->line == q->line && e->srclen == q->srclen && !e->cfunc &&
         memcmp(e->source, q->source, q->srclen) == 0;
}

static uint32_t entry_hash(const void *ptr, int line, const char *source, size_t srclen) {
  return source ? content_hash(source, srclen, line) : hash_ptr_line(ptr, line);
}

static int add_key(Profiler *P, const void *ptr, int line, uint32_t entry) {
  if (P->nkeys == P->ckeys && grow((void **)&P->keys, &P->ckeys, sizeof *P->keys, 256)) return -1;
  if (idxmap_put(&P->kmap, hash_ptr_line(ptr, line), P->nkeys)) return -1;
  P->keys[P->nkeys++] = (Key){ptr, line, entry};
  return 0;
}

uint32_t prof_find_content(Profiler *P, const void *ptr, int line, const char *source,
                           size_t srclen) {
  ContentProbe q = {P, source ? NULL : ptr, line, source, srclen};
  uint32_t i;
  IDXMAP_FIND(&P->cmap, entry_hash(ptr, line, source, srclen), content_matches, &q, i);
  if (i != IDX_NONE && add_key(P, ptr, line, i)) return IDX_NONE;
  return i;
}

uint32_t prof_add_entry(Profiler *P, const void *ptr, int line, const char *source, size_t srclen,
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
      (P->nentries == P->centries &&
       grow((void **)&P->entries, &P->centries, sizeof *P->entries, 256)) ||
      idxmap_put(&P->cmap, entry_hash(ptr, line, source, srclen), P->nentries)) {
    free(src);
    free(file);
    free(name);
    return IDX_NONE;
  }
  uint32_t i = P->nentries++;
  Entry *e = &P->entries[i];
  memset(e, 0, sizeof *e);
  e->cfunc = source ? NULL : ptr;
  e->line = line;
  e->source = src;
  e->srclen = srclen;
  e->file = file;
  e->name = name;
  e->kind = (uint8_t)kind;
  if (add_key(P, ptr, line, i)) return IDX_NONE;  /* the entry stays, findable by content */
  return i;
}

typedef struct EdgeProbe {
  Profiler *P;
  uint32_t caller, callee;
} EdgeProbe;

static int edge_matches(const EdgeProbe *q, uint32_t i) {
  return q->P->edges[i].caller == q->caller && q->P->edges[i].callee == q->callee;
}

uint32_t prof_edge(Profiler *P, uint32_t caller, uint32_t callee) {
  EdgeProbe q = {P, caller, callee};
  uint32_t h = hash_pair(caller, callee), i;
  IDXMAP_FIND(&P->gmap, h, edge_matches, &q, i);
  if (i != IDX_NONE) return i;
  if ((P->nedges == P->cedges && grow((void **)&P->edges, &P->cedges, sizeof *P->edges, 512)) ||
      idxmap_put(&P->gmap, h, P->nedges))
    return IDX_NONE;
  i = P->nedges++;
  memset(&P->edges[i], 0, sizeof P->edges[i]);
  P->edges[i].caller = caller;
  P->edges[i].callee = callee;
  return i;
}

/* Recursion folds: a call of a function already on the path goes to that function's node, so
   a recursive path is as long as its distinct functions, whatever the depth. */
static uint32_t path_node_of(const Profiler *P, uint32_t node, uint32_t entry) {
  for (; node != IDX_NONE; node = P->nodes[node].parent)
    if (P->nodes[node].entry == entry) return node;
  return IDX_NONE;
}

typedef struct LinkProbe {
  Profiler *P;
  uint32_t from, entry;
} LinkProbe;

static int link_matches(const LinkProbe *q, uint32_t i) {
  return q->P->links[i].from == q->from && q->P->links[i].entry == q->entry;
}

const Link *prof_link(Profiler *P, uint32_t from, uint32_t from_entry, uint32_t entry) {
  LinkProbe q = {P, from, entry};
  uint32_t h = hash_pair(from, entry), i;
  IDXMAP_FIND(&P->lmap, h, link_matches, &q, i);
  if (i != IDX_NONE) return &P->links[i];
  Link lk = {from, entry, IDX_NONE, IDX_NONE, 0};
  if (from_entry != IDX_NONE) {
    lk.edge = prof_edge(P, from_entry, entry);
    if (lk.edge == IDX_NONE) return NULL;
  }
  lk.node = path_node_of(P, from, entry);
  if (lk.node == IDX_NONE && from != IDX_NONE && P->nnodes >= P->tree_cap) {
    lk.node = from;
    lk.capped = 1;
  }
  if (lk.node == IDX_NONE) {
    if (P->nnodes == P->cnodes && grow((void **)&P->nodes, &P->cnodes, sizeof *P->nodes, 512))
      return NULL;
    lk.node = P->nnodes;
    memset(&P->nodes[lk.node], 0, sizeof P->nodes[lk.node]);
    P->nodes[lk.node].parent = from;
    P->nodes[lk.node].entry = entry;
  }
  if ((P->nlinks == P->clinks && grow((void **)&P->links, &P->clinks, sizeof *P->links, 512)) ||
      idxmap_put(&P->lmap, h, P->nlinks))
    return NULL;
  if (lk.node == P->nnodes) P->nnodes++;  /* committed only once the link exists */
  P->links[P->nlinks] = lk;
  return &P->links[P->nlinks++];
}

typedef struct LineProbe {
  Profiler *P;
  uint32_t entry;
  int line;
} LineProbe;

static int line_matches(const LineProbe *q, uint32_t i) {
  return q->P->linerecs[i].entry == q->entry && q->P->linerecs[i].line == q->line;
}

uint32_t prof_line(Profiler *P, uint32_t entry, int line) {
  LineProbe q = {P, entry, line};
  uint32_t h = hash_pair(entry, (uint32_t)line), i;
  IDXMAP_FIND(&P->rmap, h, line_matches, &q, i);
  if (i != IDX_NONE) return i;
  if ((P->nlinerecs == P->clinerecs &&
       grow((void **)&P->linerecs, &P->clinerecs, sizeof *P->linerecs, 256)) ||
      idxmap_put(&P->rmap, h, P->nlinerecs))
    return IDX_NONE;
  P->linerecs[P->nlinerecs] = (LineRec){entry, line, 0, 0};
  return P->nlinerecs++;
}

typedef struct StackProbe {
  Profiler *P;
  lua_State *L;
} StackProbe;

static int stack_matches(const StackProbe *q, uint32_t i) { return q->P->stacks[i]->L == q->L; }

static uint32_t find_stack_index(Profiler *P, lua_State *L) {
  StackProbe q = {P, L};
  uint32_t i;
  IDXMAP_FIND(&P->smap, hash_ptr_line(L, 0), stack_matches, &q, i);
  return i;
}

Stack *prof_find_stack(Profiler *P, lua_State *L) {
  uint32_t i = find_stack_index(P, L);
  return i == IDX_NONE ? NULL : P->stacks[i];
}

Stack *prof_new_stack(Profiler *P, lua_State *L) {
  Stack *st = fault_calloc(1, sizeof *st);
  if (!st) return NULL;
  st->P = P;
  st->L = L;
  st->id = P->next_stack_id++;
  if ((P->nstacks == P->cstacks &&
       grow((void **)&P->stacks, &P->cstacks, sizeof *P->stacks, 16)) ||
      idxmap_put(&P->smap, hash_ptr_line(L, 0), P->nstacks)) {
    free(st);
    return NULL;
  }
  P->stacks[P->nstacks++] = st;
  return st;
}

void prof_drop_stack(Profiler *P, Stack *st) {
  uint32_t i = find_stack_index(P, st->L);
  if (i == IDX_NONE || P->stacks[i] != st) return;
  uint32_t last = P->nstacks - 1;
  idxmap_del(&P->smap, hash_ptr_line(st->L, 0), i);
  if (i != last) {
    /* Move the last stack into the hole; its map slot must name the new index. */
    Stack *moved = P->stacks[last];
    idxmap_del(&P->smap, hash_ptr_line(moved->L, 0), last);
    P->stacks[i] = moved;
    idxmap_put(&P->smap, hash_ptr_line(moved->L, 0), i);  /* cannot grow: a slot was just freed */
  }
  P->nstacks--;
  if (P->cur == st) P->cur = NULL;
  free_stack(st);
}

int stack_grow(Stack *st) {
  return grow((void **)&st->f, &st->cap, sizeof *st->f, 64);
}
