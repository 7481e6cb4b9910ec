/* Line records (tables/lines.h): one probe per line event. */
#include <stdlib.h>
#include <string.h>

#include "tables/lines.h"
#include "util/array.h"
#include "util/hash.h"

int line_init(LineTable *T) {
  memset(T, 0, sizeof *T);
  return idxmap_init(&T->by_line, 64);
}

void line_free(LineTable *T) {
  free(T->recs);
  idxmap_free(&T->by_line);
  memset(T, 0, sizeof *T);
}

typedef struct LineProbe {
  const LineTable *T;
  uint32_t entry;
  int line;
} LineProbe;

static int line_matches(const LineProbe *q, uint32_t i) {
  return q->T->recs[i].entry == q->entry && q->T->recs[i].line == q->line;
}

uint32_t line_record(LineTable *T, uint32_t entry, int line) {
  LineProbe q = {T, entry, line};
  uint32_t h = hash_pair(entry, (uint32_t)line), i;
  IDXMAP_FIND(&T->by_line, h, line_matches, &q, i);
  if (i != IDX_NONE) return i;
  if (array_reserve((void **)&T->recs, &T->crecs, sizeof *T->recs, T->nrecs, 256) ||
      idxmap_put(&T->by_line, h, T->nrecs))
    return IDX_NONE;
  T->recs[T->nrecs] = (LineRec){entry, line, 0, 0};
  return T->nrecs++;
}
