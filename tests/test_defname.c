/*
 * tests/test_defname.c — unit tests of the name a source line gives the function it defines
 * (src/hook/defname.c), run by `make ctest` both as is and under AddressSanitizer + UBSan:
 * every form docs/SEMANTICS.md lists, the lines that must give no name, and a name longer than
 * the room for it. Each line is copied into a block of its own exact size, so that a read past
 * its end is caught under ASan.
 *
 *   test_defname            exit status 0 when everything passed
 */
#include <stdlib.h>
#include <string.h>

#include "ctest.h"
#include "hook/defname.h"

/* The name `line` gives ("" for none), with `cap` bytes of room. */
static const char *name_of(const char *line, size_t cap) {
  static char out[256];
  size_t n = strlen(line);
  char *copy = malloc(n ? n : 1);
  if (!copy) return "(out of memory)";
  memcpy(copy, line, n);
  size_t len = defname_of_line(copy, n, out, cap);
  free(copy);
  if (len == 0) out[0] = '\0';
  else if (len != strlen(out)) return "(wrong length)";
  return out;
}

int main(void) {
  static const struct {
    const char *line, *name;
  } cases[] = {
      {"local function refine(x) return x end", "refine"},
      {"function refine (x)", "refine"},
      {"  function M.parse(s)", "M.parse"},
      {"function M.sub.parse(s)", "M.sub.parse"},
      {"function Point:move(dx, dy)", "Point:move"},
      {"function _G.f()", "f"},
      {"local f = function(x) return x end", "f"},
      {"f=function()", "f"},
      {"local konst <const> = function() end", "konst"},
      {"M.f = function(a)", "M.f"},
      {"_G.g = function()", "g"},
      {"  [\"the key\"] = function() end,", "the key"},
      {"  ['k'] = function() end,", "k"},
      {"  plain = function() end,", "plain"},
      {"local t = setmetatable({}, {__index = function(t, k)", "__index"},
      {"local function a() end -- function b", "a"},
      /* no name */
      {"local function a() return function() end end", ""},
      {"do_(function(x) end)", ""},
      {"return function(x)", ""},
      {"if x == function() end then", ""},
      {"if x ~= function() end then", ""},
      {"t[1] = function()", ""},
      {"  [\"a\\\"b\"] = function() end,", ""},
      {"-- local function commented()", ""},
      {"local functional = 1", ""},
      {"x = myfunction(1)", ""},
      {"function M.(x)", ""},
      {"function 9x()", ""},
      {"function", ""},
      {"= function", ""},
      {"", ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *got = name_of(cases[i].line, 256);
    CHECK(strcmp(got, cases[i].name) == 0, "'%s' gave '%s', not '%s'", cases[i].line, got,
          cases[i].name);
  }
  /* A name that does not fit is no name, never a cut one. */
  CHECK(strcmp(name_of("local function abcdef()", 7), "abcdef") == 0, "fits with its NUL");
  CHECK(strcmp(name_of("local function abcdef()", 6), "") == 0, "does not fit");
  return ctest_done("test_defname");
}
