/*
 * fuzz/fuzz_read.c — libFuzzer harness for the dump reader (src/dump/read.c).
 *
 *   make fuzz FUZZ_SECONDS=60
 *
 * Each input is read by dump_read_memory() in a fresh Lua state, so the whole reader runs:
 * header, directory, checksums, schema, strings, records, metadata, and the building of the
 * data table. The reader must return either the data table or one message
 * "cprof: fuzz.prof: ...". When it returns a table, that table must also be valid for the
 * writer, and the dump the writer makes of it must read back and write again to the very same
 * bytes (the writer is deterministic and a read loses nothing), so the harness checks the
 * writer too.
 *
 * A mutation of a version-2 input almost always breaks a checksum, which the reader refuses
 * before it parses anything; so each such input is read a second time with its checksums made
 * right, and the mutations reach the parser behind them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "dump/crc32c.h"
#include "dump/format.h"

#define NAME "fuzz.prof"

static void fail(lua_State *L, const char *what) {
  fprintf(stderr, "fuzz_read: %s: %s\n", what, lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "?");
  abort();
}

/* Reads the bytes; on success leaves the data table on top (the file's description popped). */
static int read_dump(lua_State *L, const unsigned char *data, size_t size) {
  if (dump_read_memory(L, NAME, data, size) != 0) return 1;
  if (lua_type(L, -2) != LUA_TTABLE || lua_type(L, -1) != LUA_TTABLE) fail(L, "the reader returned no table");
  lua_pop(L, 1);
  return 0;
}

static void check(const unsigned char *data, size_t size) {
  lua_State *L = luaL_newstate();
  if (!L) return;
  if (read_dump(L, data, size) != 0) {
    const char *msg = lua_tostring(L, -1);
    if (!msg || strncmp(msg, "cprof: " NAME ": ", sizeof("cprof: " NAME ": ") - 1) != 0)
      fail(L, "an error that does not name the file");
    lua_close(L);
    return;
  }
  unsigned char *once, *twice;
  size_t n1, n2;
  if (dump_write_memory(L, NAME, -1, &once, &n1) != 0) fail(L, "the writer refused what the reader returned");
  if (read_dump(L, once, n1) != 0) fail(L, "the reader refused what the writer wrote");
  if (dump_write_memory(L, NAME, -1, &twice, &n2) != 0) fail(L, "the writer refused its own data");
  if (n1 != n2 || memcmp(once, twice, n1) != 0) fail(L, "writing the same data twice gave different bytes");
  free(once);
  free(twice);
  lua_close(L);
}

/* A copy of a version-2 input with the checksums of its sections and header made right, or NULL
   when it is not one or its directory does not fit in it. */
static unsigned char *with_right_sums(const uint8_t *data, size_t size) {
  size_t fixed = DUMP_FIXED_HEADER + DUMP_HEADER_CRC;
  if (size < fixed || memcmp(data, DUMP_MAGIC, DUMP_MAGIC_LEN) != 0 || dump_get_u32(data + 8) != 2)
    return NULL;
  uint32_t nsec = dump_get_u32(data + 12);
  if (nsec > (size - fixed) / DUMP_DIRENT_V2) return NULL;
  unsigned char *b = malloc(size);
  if (!b) return NULL;
  memcpy(b, data, size);
  size_t dir_end = DUMP_FIXED_HEADER + (size_t)nsec * DUMP_DIRENT_V2;
  for (size_t e = DUMP_FIXED_HEADER; e < dir_end; e += DUMP_DIRENT_V2) {
    uint64_t off = dump_get_u64(b + e + 4), len = dump_get_u64(b + e + 12);
    if (off <= size && len <= size - off) dump_put_u32(b + e + 20, crc32c_update(0, b + off, (size_t)len));
  }
  dump_put_u32(b + dir_end, crc32c_update(0, b, dir_end));
  return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check(data, size);
  unsigned char *fixed = with_right_sums(data, size);
  if (fixed) {
    check(fixed, size);
    free(fixed);
  }
  return 0;
}
