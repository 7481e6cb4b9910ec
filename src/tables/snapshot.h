/*
 * tables/snapshot.h — a profile's numbers as Lua tables: the nested form of Profile:getstats()
 * and the columnar form of Profile:snapshot() that dumps are made of (docs/API.md,
 * docs/FORMAT.md). Once per report or dump: linear in the records, never per call.
 */
#ifndef CPROF_SNAPSHOT_H
#define CPROF_SNAPSHOT_H

#include <lua.h>

#include "tables/profiler.h"

/* Pushes getstats()'s table; -1 (nothing pushed) when out of memory. */
int snap_push_stats(lua_State *L, const Profiler *P);

/* Pushes snapshot()'s table. `running_ns` is how long the profile has been enabled since its
   last enable() (0 when disabled). */
void snap_push_snapshot(lua_State *L, const Profiler *P, cprof_ticks running_ns);

#endif
