/*
 * tables/calltree.h — the caller->callee edges (the call graph, what pstats reports) and the
 * call tree (one node per distinct call path), with the links that lead from a frame's node and
 * a callee to both. A call whose link exists costs one probe (tree_link); a new path costs an
 * edge lookup, a walk up its path and an insertion.
 */
#ifndef CPROF_CALLTREE_H
#define CPROF_CALLTREE_H

#include <stdint.h>

#include "tables/stat.h"
#include "util/idxmap.h"

typedef struct Edge {
  uint32_t caller, callee;
  Stat s;
} Edge;

/* A call path: the node of the caller's path plus a function. */
typedef struct Node {
  uint32_t parent;         /* IDX_NONE for a root */
  uint32_t entry;
  Stat s;
} Node;

/* What a call of `entry` from a frame on node `from` leads to: computed once per pair, so a call
   costs one probe for both its edge and its tree node. */
typedef struct Link {
  uint32_t from, entry;    /* from is IDX_NONE for a root call */
  uint32_t node, edge;
  int capped;              /* the tree was full: the call is folded into its caller's node */
} Link;

enum { TREE_CAP_DEFAULT = 1000000 };

typedef struct CallTree {
  Edge *edges;
  uint32_t nedges, cedges;
  IdxMap edge_by_pair;     /* edges by (caller, callee) */
  Node *nodes;
  uint32_t nnodes, cnodes;
  uint32_t limit;          /* most nodes; deeper new paths fold into their caller's node */
  uint64_t folded;         /* calls folded because the tree was full */
  Link *links;
  uint32_t nlinks, clinks;
  IdxMap link_by_call;     /* links by (from node, callee) */
} CallTree;

/* Empty tables with room for TREE_CAP_DEFAULT nodes; -1 when out of memory (T can be freed). */
int tree_init(CallTree *T);
void tree_free(CallTree *T);

/* The link for a call of `entry` from a frame on node `from` (IDX_NONE: a root call) whose
   function is `from_entry`. NULL when out of memory. */
const Link *tree_link(CallTree *T, uint32_t from, uint32_t from_entry, uint32_t entry);

#endif
