/*
 * tables/lines.h — hits and time per source line of each function, kept while a profile made
 * with lines = true runs. A line event costs one probe (line_record); a new line an insertion.
 */
#ifndef CPROF_LINES_H
#define CPROF_LINES_H

#include <stdint.h>

#include "cprof.h"
#include "util/idxmap.h"

typedef struct LineRec {
  uint32_t entry;
  int line;
  uint64_t hits;
  cprof_ticks time;        /* from each of its line events to the function's next one */
} LineRec;

/* LineTable.on: line events off, in every function, or only in the functions chosen (option
   lines = {f, g}: the hook asks for line events only while one of them runs, hook.c). */
enum { LINES_OFF, LINES_ALL, LINES_CHOSEN };

typedef struct LineTable {
  int on;                  /* line events: LINES_* */
  LineRec *recs;
  uint32_t nrecs, crecs;
  IdxMap by_line;          /* records by (function entry, line) */
} LineTable;

/* Empty tables (line events off); -1 when out of memory (T can be freed). */
int line_init(LineTable *T);
void line_free(LineTable *T);

/* The record of `line` in function `entry`, made on first sight; IDX_NONE when out of memory. */
uint32_t line_record(LineTable *T, uint32_t entry, int line);

#endif
