/*
 * fuzz/fuzz_read.c — libFuzzer harness for the dump reader (src/dump/read.c).
 *
 *   make fuzz FUZZ_SECONDS=60
 *
 * Each input is read by dump_read_memory() in a fresh Lua state, so the whole reader runs:
 * header, directory, schema, strings, records, metadata, and the building of the data table.
 * The reader must return either the data table or one message "cprof: fuzz.prof: ...".
 * When it returns a table, that table must also be valid for the writer, and the dump the
 * writer makes of it must read back and write again to the very same bytes (the writer is
 * deterministic and a read loses nothing), so the harness checks the writer too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "dump/format.h"

#define NAME "fuzz.prof"

static void fail(lua_State *L, const char *what) {
  fprintf(stderr, "fuzz_read: %s: %s\n", what, lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "?");
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lua_State *L = luaL_newstate();
  if (!L) return 0;
  if (dump_read_memory(L, NAME, data, size) != 0) {
    const char *msg = lua_tostring(L, -1);
    if (!msg || strncmp(msg, "cprof: " NAME ": ", sizeof("cprof: " NAME ": ") - 1) != 0)
      fail(L, "an error that does not name the file");
    lua_close(L);
    return 0;
  }
  if (lua_type(L, -1) != LUA_TTABLE) fail(L, "the reader returned no table");

  unsigned char *once, *twice;
  size_t n1, n2;
  if (dump_write_memory(L, NAME, -1, &once, &n1) != 0) fail(L, "the writer refused what the reader returned");
  if (dump_read_memory(L, NAME, once, n1) != 0) fail(L, "the reader refused what the writer wrote");
  if (dump_write_memory(L, NAME, -1, &twice, &n2) != 0) fail(L, "the writer refused its own data");
  if (n1 != n2 || memcmp(once, twice, n1) != 0) fail(L, "writing the same data twice gave different bytes");
  free(once);
  free(twice);
  lua_close(L);
  return 0;
}
