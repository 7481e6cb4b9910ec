/* Edges, nodes and links (tables/calltree.h). A call that misses its node's cache probes the
   link map once; the rest runs only on a new call path. */
#include <stdlib.h>
#include <string.h>

#include "tables/calltree.h"
#include "util/array.h"
#include "util/hash.h"

int tree_init(CallTree *T) {
  memset(T, 0, sizeof *T);
  T->limit = TREE_CAP_DEFAULT;
  T->recursion = TREE_RECURSION_DEFAULT;
  return idxmap_init(&T->edge_by_pair, 512) || idxmap_init(&T->link_by_call, 512) ? -1 : 0;
}

void tree_free(CallTree *T) {
  free(T->edges);
  free(T->nodes);
  free(T->links);
  idxmap_free(&T->edge_by_pair);
  idxmap_free(&T->link_by_call);
  memset(T, 0, sizeof *T);
}

typedef struct EdgeProbe {
  const CallTree *T;
  uint32_t caller, callee;
} EdgeProbe;

static int edge_matches(const EdgeProbe *q, uint32_t i) {
  return q->T->edges[i].caller == q->caller && q->T->edges[i].callee == q->callee;
}

/* The edge caller->callee (entries), made on first sight; IDX_NONE when out of memory. */
static uint32_t tree_edge(CallTree *T, uint32_t caller, uint32_t callee) {
  EdgeProbe q = {T, caller, callee};
  uint32_t h = hash_pair(caller, callee), i;
  IDXMAP_FIND(&T->edge_by_pair, h, edge_matches, &q, i);
  if (i != IDX_NONE) return i;
  if (array_reserve((void **)&T->edges, &T->cedges, sizeof *T->edges, T->nedges, 512) ||
      idxmap_put(&T->edge_by_pair, h, T->nedges))
    return IDX_NONE;
  i = T->nedges++;
  memset(&T->edges[i], 0, sizeof T->edges[i]);
  T->edges[i].caller = caller;
  T->edges[i].callee = callee;
  return i;
}

/* Recursion is kept up to a depth: a call of a function that the path up to `node` holds
   T->recursion times goes to the deepest of those nodes (IDX_NONE: a new node), so a path is at
   most that many times as long as its distinct functions, whatever the depth of recursion. */
static uint32_t path_node_of(const CallTree *T, uint32_t node, uint32_t entry) {
  uint32_t deepest = IDX_NONE, seen = 0;
  for (; node != IDX_NONE; node = T->nodes[node].parent) {
    if (T->nodes[node].entry != entry) continue;
    if (deepest == IDX_NONE) deepest = node;
    if (++seen >= T->recursion) return deepest;
  }
  return IDX_NONE;
}

typedef struct LinkProbe {
  const CallTree *T;
  uint32_t from, entry;
} LinkProbe;

static int link_matches(const LinkProbe *q, uint32_t i) {
  return q->T->links[i].from == q->from && q->T->links[i].entry == q->entry;
}

/* The edge and node of a call that is not hidden, in *lk; returns the node, which is T->nnodes
   when it is new (committed by the caller), or IDX_NONE when out of memory. */
static uint32_t new_path(CallTree *T, uint32_t from, uint32_t from_entry, uint32_t entry,
                         Link *lk) {
  lk->edge = IDX_NONE;
  if (from_entry != IDX_NONE) {
    lk->edge = tree_edge(T, from_entry, entry);
    if (lk->edge == IDX_NONE) return IDX_NONE;
  }
  uint32_t node = path_node_of(T, from, entry);
  if (node == IDX_NONE && from != IDX_NONE && T->nnodes >= T->limit) {
    lk->capped = 1;
    return from;
  }
  if (node != IDX_NONE) return node;
  if (array_reserve((void **)&T->nodes, &T->cnodes, sizeof *T->nodes, T->nnodes, 512))
    return IDX_NONE;
  node = T->nnodes;
  memset(&T->nodes[node], 0, sizeof T->nodes[node]);
  T->nodes[node].parent = from;
  T->nodes[node].entry = entry;
  return node;
}

uint32_t tree_link(CallTree *T, uint32_t from, uint32_t from_entry, uint32_t entry, int hidden) {
  LinkProbe q = {T, from, entry};
  uint32_t h = hash_pair(from, entry), i;
  IDXMAP_FIND(&T->link_by_call, h, link_matches, &q, i);
  if (i != IDX_NONE) return i;
  Link lk = {from, entry, from, IDX_NONE, 0, (uint32_t)hidden};
  if (!hidden && (lk.node = new_path(T, from, from_entry, entry, &lk)) == IDX_NONE)
    return IDX_NONE;
  if (array_reserve((void **)&T->links, &T->clinks, sizeof *T->links, T->nlinks, 512) ||
      idxmap_put(&T->link_by_call, h, T->nlinks))
    return IDX_NONE;
  if (!hidden && lk.node == T->nnodes) T->nnodes++;  /* committed only once the link exists */
  T->links[T->nlinks] = lk;
  return T->nlinks++;
}

size_t tree_bytes(const CallTree *T) {
  return (size_t)T->cedges * sizeof *T->edges + (size_t)T->cnodes * sizeof *T->nodes +
         (size_t)T->clinks * sizeof *T->links + idxmap_bytes(&T->edge_by_pair) +
         idxmap_bytes(&T->link_by_call);
}
