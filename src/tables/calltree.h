/*
 * tables/calltree.h — the caller->callee edges (the call graph, what pstats reports) and the
 * call tree (one node per distinct call path), with the links that lead from a frame's node and
 * a callee to both. Each node keeps the last links its calls took, by the callee's key (its
 * call-site cache): a call that hits it costs a few comparisons; a miss costs one probe of the
 * link map (tree_link); a new path costs an edge lookup, a walk up its path and an insertion.
 */
#ifndef CPROF_CALLTREE_H
#define CPROF_CALLTREE_H

#include <stdint.h>

#include "tables/stat.h"
#include "util/idxmap.h"

typedef struct Edge {
  Stat s;
  uint32_t caller, callee;
} Edge;

/* One remembered call from a node: the callee's key (functions.h: a prototype or C function
   with its chunk-name object and line on the fast path, a coroutine.wrap function's body's
   with its line below -1; an entry number on the public path) and the link it took. A hit is
   exact: the key is checked against address reuse the way fn_find_key checks it. */
typedef struct Way {
  const void *key, *src;
  int line;
  uint32_t link;
} Way;

/* A miss costs the program more than the hook's own time, which the clock keeps off (the path
   is measured): ~16 ns per call on the bench machine that no calibration sees. With 2 ways a
   loop calling three functions missed on every call (bench/README.md, "Accuracy"); a hit is
   still found in the first way in recursion and in single-callee loops. */
enum { NODE_WAYS = 4 };

/* A call path: the node of the caller's path plus a function. */
typedef struct Node {
  Stat s;
  uint32_t parent;         /* IDX_NONE for a root */
  uint32_t entry;
  Way way[NODE_WAYS];      /* most recent first */
} Node;

/* What a call of `entry` from a frame on node `from` leads to: computed once per pair. */
typedef struct Link {
  uint32_t from, entry;    /* from is IDX_NONE for a root call */
  uint32_t node, edge;     /* edge is IDX_NONE for a root call */
  uint32_t capped;         /* the tree was full: the call is folded into its caller's node */
  uint32_t hidden;         /* the callee is filtered out (Entry.filter): no edge, no node of its
                              own; its frame stands in for its caller's (engine.h) */
} Link;

enum { TREE_CAP_DEFAULT = 1000000 };

/* A call path keeps up to this many nested calls of one function (a recursion, direct or
   through others), each its own node; a deeper call of it goes to the deepest of those nodes,
   so that a path is at most this many times as long as its distinct functions. */
enum { TREE_RECURSION_DEFAULT = 64 };

typedef struct CallTree {
  Edge *edges;
  uint32_t nedges, cedges;
  IdxMap edge_by_pair;     /* edges by (caller, callee) */
  Node *nodes;
  uint32_t nnodes, cnodes;
  uint32_t limit;          /* most nodes; deeper new paths fold into their caller's node */
  uint32_t recursion;      /* most nodes of one function on a path (TREE_RECURSION_DEFAULT) */
  uint64_t folded;         /* calls folded because the tree was full */
  Link *links;
  uint32_t nlinks, clinks;
  IdxMap link_by_call;     /* links by (from node, callee) */
} CallTree;

/* Empty tables with room for TREE_CAP_DEFAULT nodes and TREE_RECURSION_DEFAULT nested calls;
   -1 when out of memory (T can be freed). */
int tree_init(CallTree *T);
void tree_free(CallTree *T);

/* The link for a call of `entry` from a frame on node `from` (IDX_NONE: a root call) whose
   function is `from_entry`; a `hidden` one (an entry filtered out) makes neither edge nor node.
   Its node is a new child of `from`, unless `from`'s path holds `recursion` nodes of `entry`
   already (then the deepest of them) or the tree is full (then `from`). IDX_NONE when out of
   memory. */
uint32_t tree_link(CallTree *T, uint32_t from, uint32_t from_entry, uint32_t entry, int hidden);

/* The link node `node`'s cache remembers for this key, or IDX_NONE. */
static inline uint32_t tree_way(const Node *nd, const void *key, const void *src, int line) {
  for (int i = 0; i < NODE_WAYS; i++)
    if (nd->way[i].key == key && nd->way[i].src == src && nd->way[i].line == line)
      return nd->way[i].link;
  return IDX_NONE;
}

/* Remembers that this key took `link` from node `node`. */
static inline void tree_remember(Node *nd, const void *key, const void *src, int line,
                                 uint32_t link) {
  for (int i = NODE_WAYS - 1; i > 0; i--) nd->way[i] = nd->way[i - 1];
  nd->way[0] = (Way){key, src, line, link};
}

/* Bytes held by the tables. */
size_t tree_bytes(const CallTree *T);

#endif
