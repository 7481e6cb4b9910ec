/*
 * hook/filters.h — which functions a profile records (exclude, include, builtins = false) and
 * in which it asks for line events (lines = {f, g}), decided once per function.
 */
#ifndef CPROF_FILTERS_H
#define CPROF_FILTERS_H

#include <lua.h>

#include "tables/profiler.h"

/* Whether the profile's record-time filters leave entry e out (P->filters; decided once per
   entry, on the call that missed the hook's cache). */
int filters_excluded(Profiler *P, lua_State *L, uint32_t e);
/* Sets profile P's filters from option values at `exclude` and `include` of L's stack (a Lua
   pattern or a list of them on file names, or nil) and `builtins`; raises a Lua error naming
   the option for a bad one. */
void filters_set(Profiler *P, lua_State *L, int exclude, int include, int builtins);
/* LINES_CHOSEN: sets entry e's `lines` (decided once per entry, on a call that missed its cache:
   whether it is one of the functions chosen for line events). */
void filters_choose_lines(Profiler *P, lua_State *L, uint32_t e);
/* Sets the functions chosen for P's line events from the list at `idx` (option lines = {f, g});
   raises a Lua error for a bad one. */
void filters_set_lines(Profiler *P, lua_State *L, int idx);
/* Gives profile `to` the filters of `from`. */
void filters_copy(Profiler *to, const Profiler *from, lua_State *L);
/* Lets go of P's filters (P is being freed). */
void filters_drop(Profiler *P, lua_State *L);

#endif
