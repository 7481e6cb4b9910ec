/*
 * util/symbol.h — a C function's name that stays the same from one run of a build to the next
 * (its address does not: address-space layout randomisation moves every library): the dynamic
 * symbol at that address, or the library's file name and the offset into it. One dladdr()
 * per call, made once per report for each C function nothing else names.
 */
#ifndef CPROF_SYMBOL_H
#define CPROF_SYMBOL_H

#include <stddef.h>

/* What sym_name found. */
enum { SYM_NONE = -1, SYM_EXACT, SYM_OFFSET };

/* Writes into buf (n bytes, truncated to fit) the name of the C function at `fn` and says which
   it is: SYM_EXACT, the dynamic symbol whose address it is ("luaopen_lpeg"); SYM_OFFSET,
   "<library's file name>+0x<offset>" ("liblua5.4.so.0+0x2d4a0"); SYM_NONE when no loaded file
   holds the address (buf is then untouched). */
int sym_name(const void *fn, char *buf, size_t n);

#endif
