/* Identity and names. Only the first lines of ident_resolve run per call; naming a function
   walks the loaded modules, so it happens once per function. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "hook/ident.h"
#include "util/compat.h"
#include "util/fault.h"
#include "util/weak.h"

static const char INTERNAL_KEY = 'i';

lua_CFunction ident_resume, ident_wrap;

static int noop(lua_State *L) {
  (void)L;
  return 0;
}

void ident_setup(lua_State *L) {
  int top = lua_gettop(L);
  lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
  lua_getfield(L, -1, "coroutine");
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "resume");
    if (lua_iscfunction(L, -1)) ident_resume = lua_tocfunction(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, -1, "wrap");
    lua_pushcfunction(L, noop);
    if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_iscfunction(L, -1))
      ident_wrap = lua_tocfunction(L, -1);
  }
  lua_settop(L, top);
}

static char *dupstr(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = fault_malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* Where a name comes from: globals first, then Lua's standard libraries, then other modules, so
   that table.insert is not called by the name some library re-exports it under. */
static int module_rank(const char *mod) {
  static const char *const stdlib[] = {"string", "table", "math", "io", "os", "coroutine",
                                       "utf8", "debug", "package", "bit", "jit", NULL};
  if (strcmp(mod, "_G") == 0) return 0;
  for (int i = 0; stdlib[i]; i++)
    if (strcmp(mod, stdlib[i]) == 0) return 1;
  return 2;
}

/* A module-qualified global name for the function at the top of the stack, the way
   luaL_traceback finds one ("string.format"; "_G." dropped). When several names reach it, the
   best ranked module wins, then the shortest name, then the alphabetically first: table order
   varies between runs. */
static char *global_name(lua_State *L) {
  char *best = NULL;
  int best_rank = 3;
  if (!lua_checkstack(L, 6)) return NULL;
  int fn = lua_gettop(L);
  lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    return NULL;
  }
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    if (lua_type(L, -2) == LUA_TSTRING && lua_istable(L, -1)) {
      const char *mod = lua_tostring(L, -2);
      int rank = module_rank(mod);
      lua_pushnil(L);
      while (rank <= best_rank && lua_next(L, -2)) {
        if (lua_type(L, -2) == LUA_TSTRING && lua_rawequal(L, -1, fn)) {
          const char *field = lua_tostring(L, -2);
          size_t len = strlen(field) + (rank == 0 ? 0 : strlen(mod) + 1);
          size_t blen = best ? strlen(best) : 0;
          char *cand = fault_malloc(len + 1);
          if (cand) {
            if (rank == 0) memcpy(cand, field, len + 1);
            else snprintf(cand, len + 1, "%s.%s", mod, field);
            if (!best || rank < best_rank || len < blen ||
                (len == blen && strcmp(cand, best) < 0)) {
              free(best);
              best = cand;
              best_rank = rank;
            } else {
              free(cand);
            }
          }
        }
        lua_pop(L, 1);
      }
      if (rank > best_rank) lua_pop(L, 1);  /* the inner loop stopped early: drop its key */
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return best;
}

static char *file_of(const lua_Debug *ar) {
  if (ar->source[0] == '@' || ar->source[0] == '=') return dupstr(ar->source + 1);
  return dupstr(ar->short_src);
}

static int is_internal(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &INTERNAL_KEY);
  int yes = 0;
  if (lua_istable(L, -1)) {
    lua_pushvalue(L, -2);
    lua_rawget(L, -2);
    yes = lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return yes;
}

void ident_mark_internal(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  weak_table(L, &INTERNAL_KEY);
  lua_pushvalue(L, idx);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

/* Names a call site can give (lua_getinfo 'n') are missing for functions called from C, such
   as the function given to pcall; later calls may come from Lua code that names them. */
enum { NAME_TRIES = 8 };

static void rename_from_call(FuncTable *F, uint32_t e, lua_State *L, lua_Debug *ar) {
  Entry *en = &F->entries[e];
  en->name_tries--;
  if (!lua_getinfo(L, "n", ar) || !ar->name) return;
  char *n = dupstr(ar->name);
  if (!n) return;
  free(en->name);
  en->name = n;
  en->name_tries = 0;
}

static uint32_t create(FuncTable *F, lua_State *L, lua_Debug *ar, const void *ptr, int line,
                       const char *source, size_t srclen) {
  uint32_t e = fn_find_content(F, ptr, line, source, srclen);
  if (e != IDX_NONE) return e;
  lua_getinfo(L, "nf", ar);
  int kind = source ? (strcmp(ar->what, "main") == 0 ? KIND_MAIN : KIND_LUA) : KIND_C;
  int named = ar->name != NULL;
  char *name = NULL;
  if (kind == KIND_MAIN) {
    name = dupstr("<main chunk>");
    named = 1;
  } else if (kind == KIND_LUA && named) {
    name = dupstr(ar->name);
  } else {
    name = kind == KIND_C && ptr == (const void *)(uintptr_t)ident_wrap && ident_wrap
               ? dupstr("function made by coroutine.wrap")
               : global_name(L);
    if (name) {
      named = kind == KIND_C;  /* a Lua function may still get its call-site name */
    } else if (kind == KIND_C) {
      char buf[48];
      snprintf(buf, sizeof buf, "C function %p", ptr);
      name = dupstr(buf);
    } else {
      name = dupstr("<anon>");
    }
  }
  int internal = is_internal(L);
  lua_pop(L, 1);
  e = fn_add(F, ptr, line, source, srclen, kind == KIND_C ? dupstr("~") : file_of(ar),
                     name, kind);
  if (e != IDX_NONE) {
    F->entries[e].internal = (uint8_t)internal;
    F->entries[e].lastline = kind == KIND_C ? -1 : ar->lastlinedefined;
    F->entries[e].name_tries = named ? 0 : NAME_TRIES;
    if (kind == KIND_MAIN) F->entries[e].line = 0;
  }
  return e;
}

uint32_t ident_resolve(FuncTable *F, lua_State *L, lua_Debug *ar, lua_CFunction *cf) {
  lua_getinfo(L, "S", ar);
  uint32_t e;
  if (ar->what[0] == 'C') {
    lua_getinfo(L, "f", ar);
    *cf = lua_tocfunction(L, -1);
    /* LuaJIT's built-in fast functions have no C function pointer; they never die either. */
    const void *ptr = *cf ? (const void *)(uintptr_t)*cf : lua_topointer(L, -1);
    lua_pop(L, 1);
    e = fn_find_key(F, ptr, -1, NULL, 0);
    if (e == IDX_NONE) e = create(F, L, ar, ptr, -1, NULL, 0);
    return e;
  }
  *cf = NULL;
  size_t len = compat_srclen(ar);
  e = fn_find_key(F, ar->source, ar->linedefined, ar->source, len);
  if (e == IDX_NONE) return create(F, L, ar, ar->source, ar->linedefined, ar->source, len);
  if (F->entries[e].name_tries) rename_from_call(F, e, L, ar);
  return e;
}
