/*
 * hook/defname.h — a Lua function's name as its definition writes it: the source line at its
 * line defined, read once per function, when a snapshot is taken (never in the hook). A
 * definition names a function where no call site can (one called through pcall or a tail call)
 * and better than one that can (`f` for a function passed as the argument `f`).
 */
#ifndef CPROF_DEFNAME_H
#define CPROF_DEFNAME_H

#include <stddef.h>

#include "tables/functions.h"

/* The name that source line [s, s + n) gives the one function it defines: `local function
   NAME`, `function A.B:C` (as written), `NAME = function`, `local NAME = function`,
   `A.B = function`, `["key"] = function`; a leading `_G.` left out. Its length, the name copied to `out` (`cap` bytes,
   NUL-terminated); 0 when the line defines no function by a name, or more than one. */
size_t defname_of_line(const char *s, size_t n, char *out, size_t cap);

/* Names by their definition every Lua function of F whose line was not yet looked at. Each
   chunk's source (its file, or the chunk's own text for a string loaded without a name) is
   read once; a source that cannot be read or is not text (a missing file, bytecode) names
   nothing, quietly. Out of memory leaves names as they were. */
void defname_all(FuncTable *F);

#endif
