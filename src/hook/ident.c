/* Identity and names (hook/ident.h). Nothing here runs on a call that hits its node's cache:
   a new key costs a few probes and, for a new function, lua_getinfo; a new chunk name is copied
   once and its string kept alive; global names come from one walk of the loaded modules per
   snapshot. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "hook/defname.h"
#include "hook/ident.h"
#include "util/compat.h"
#include "util/fault.h"
#include "util/luapriv.h"
#include "util/weak.h"

static const char INTERNAL_KEY = 'i';
static const char ANCHORS_KEY = 'n';  /* registry: profile (light userdata) -> { string = true } */
/* registry: the C functions of the global table when cprof loaded, by name: a program may empty
   _G before its profile is written (Lua's test suite does), and its C functions keep names */
static const char GLOBALS_KEY = 'g';

/* What the entries of functions made by coroutine.wrap hold as their C function: with a body's
   chunk and line, it tells an entry per body from the body's own; alone, it is LuaJIT's one
   entry for those whose body is unknown (each is an object of its own, with no C pointer). */
static const char WRAP_MARK = 'w';

static int noop(lua_State *L) {
  (void)L;
  return 0;
}

/* The address a C function is known by: LuaJIT's built-in fast functions have no C function
   pointer, but never die either, so their object's address serves. */
static const void *cfunc_ptr(lua_State *L, int idx) {
  lua_CFunction cf = lua_tocfunction(L, idx);
  return cf ? (const void *)(uintptr_t)cf : lua_topointer(L, idx);
}

/* The standard library's C functions that no global holds (iterators), learnt by asking the
   library for one; reports name them as Lua's own messages would describe them. */
enum { LIB_IPAIRS, LIB_GMATCH, LIB_CODES, LIB_LINES, NLIB };
static const char *const LIB_NAMES[NLIB] = {"ipairs iterator", "string.gmatch iterator",
                                            "utf8.codes iterator", "io.lines iterator"};

/* What a state's ident_setup learnt, in a userdata in its registry. Per state: LuaJIT's
   built-ins are objects of each state, and threads that each run a state of their own share
   nothing (Lua 5.4's C functions are the same in every state: each learns them anyway). */
typedef struct Learnt {
  lua_CFunction resume, wrap;  /* coroutine.resume; the functions coroutine.wrap makes */
  const void *lib[NLIB];       /* as cfunc_ptr gives them */
} Learnt;
static const char LEARNT_KEY = 'l';

/* L's Learnt (NULL in a state that never loaded cprof.core). Uses 1 slot. */
static const Learnt *learnt(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &LEARNT_KEY);
  const Learnt *lr = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return lr;
}

void ident_attach(Profiler *P, lua_State *L) {
  const Learnt *lr = learnt(L);
  P->co_resume = lr ? lr->resume : NULL;
  P->co_wrap = lr ? lr->wrap : NULL;
}

/* Pushes library function _LOADED[mod][fn], read raw (the program may have replaced its
   globals), or a value that is no function; the caller restores the stack's top. Uses 3 slots. */
static void push_lib_fn(lua_State *L, const char *mod, const char *fn) {
  lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
  if (lua_istable(L, -1)) {
    lua_pushstring(L, mod);
    lua_rawget(L, -2);
  }
  if (lua_istable(L, -1)) {
    lua_pushstring(L, fn);
    lua_rawget(L, -2);
  }
}

/* Calls library function _LOADED[mod][fn] with arguments described by `args` ('t' an empty
   table, 's' an empty string) and learns the C function it returns first as lr->lib[i]. A
   function the program replaced is not called. */
static void learn(lua_State *L, Learnt *lr, const char *mod, const char *fn, const char *args,
                  int i) {
  int top = lua_gettop(L);
  push_lib_fn(L, mod, fn);
  if (lua_iscfunction(L, -1)) {
    int n = 0;
    for (; args[n]; n++) {
      if (args[n] == 't') lua_newtable(L);
      else lua_pushliteral(L, "");
    }
    if (lua_pcall(L, n, 1, 0) == LUA_OK && lua_iscfunction(L, -1)) lr->lib[i] = cfunc_ptr(L, -1);
  }
  lua_settop(L, top);
}

void ident_setup(lua_State *L) {
  int top = lua_gettop(L);
  /* A state that loads the module again learns into the same userdata: what the program has
     removed since stays known. */
  Learnt *lr = (Learnt *)learnt(L);
  if (!lr) {
    lr = lua_newuserdata(L, sizeof *lr);
    memset(lr, 0, sizeof *lr);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &LEARNT_KEY);
  }
  lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
  lua_getfield(L, -1, "coroutine");
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "resume");
    if (lua_iscfunction(L, -1)) lr->resume = lua_tocfunction(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, -1, "wrap");
    lua_pushcfunction(L, noop);
    if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_iscfunction(L, -1))
      lr->wrap = lua_tocfunction(L, -1);
  }
  lua_settop(L, top);
  lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
  lua_getfield(L, -1, "_G");
  if (lua_istable(L, -1)) {
    lua_newtable(L);
    lua_pushnil(L);
    while (lua_next(L, -3)) {
      if (lua_type(L, -2) == LUA_TSTRING && lua_iscfunction(L, -1)) {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, -4);
      } else {
        lua_pop(L, 1);
      }
    }
    lua_rawsetp(L, LUA_REGISTRYINDEX, &GLOBALS_KEY);
  }
  lua_settop(L, top);
  learn(L, lr, "_G", "ipairs", "t", LIB_IPAIRS);
  learn(L, lr, "string", "gmatch", "ss", LIB_GMATCH);
  learn(L, lr, "utf8", "codes", "s", LIB_CODES);
  learn(L, lr, "io", "lines", "", LIB_LINES);
}

/* ---- Chunk names kept alive ------------------------------------------------------------- */

/* Called protected, as it allocates: [profile, string] -> anchors[profile][string] = true. */
static int anchor_set(lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &ANCHORS_KEY);
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &ANCHORS_KEY);
  }
  lua_pushvalue(L, 1);
  lua_rawget(L, -2);
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, -2);
    lua_rawset(L, -4);
  }
  lua_pushvalue(L, 2);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  return 0;
}

/* [profile, text (light userdata), length]: the text as a Lua string, kept alive when it is the
   very string object whose bytes `text` points at (an interned one: Lua 5.4's short strings,
   every LuaJIT string). Returns whether it was. */
static int anchor_text(lua_State *L) {
  const char *text = lua_touserdata(L, 2);
  size_t len = (size_t)lua_tointeger(L, 3);
  lua_settop(L, 1);
  lua_pushlstring(L, text, len);
  int same = lua_tostring(L, 2) == text;
  if (same) anchor_set(L);
  lua_pushboolean(L, same);
  return 1;
}

/* Keeps the chunk-name object of a Lua function alive, so that its address keeps meaning its
   text (functions.h): `ts` is the TString itself on the fast path (NULL on the public path,
   which can only keep an interned string, found by its text). Returns whether it is kept. */
static int anchor(Profiler *P, lua_State *L, const void *ts, const char *text, size_t len) {
  if (!lua_checkstack(L, 5)) return 0;
  int kept = 0;
#if LUAPRIV_KNOWN
  if (ts) {
    lua_pushcfunction(L, anchor_set);
    lua_pushlightuserdata(L, P);
    luapriv_push_string(L, ts);
    kept = lua_pcall(L, 2, 0, 0) == LUA_OK;
    if (!kept) lua_pop(L, 1);
    return kept;
  }
#else
  (void)ts;
#endif
  lua_pushcfunction(L, anchor_text);
  lua_pushlightuserdata(L, P);
  lua_pushlightuserdata(L, (void *)(uintptr_t)text);
  lua_pushinteger(L, (lua_Integer)len);
  if (lua_pcall(L, 3, 1, 0) == LUA_OK) kept = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return kept;
}

void ident_release(Profiler *P, lua_State *L) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &ANCHORS_KEY);
  if (lua_istable(L, -1)) {
    lua_pushnil(L);
    lua_rawsetp(L, -2, P);
  }
  lua_pop(L, 1);
}

/* ---- New functions ---------------------------------------------------------------------- */

/* What reports show as a chunk's file: a file name without its '@', a '=' name without the
   '=', else Lua's own short form of the source (a string chunk's first line). */
static const char *file_of(const lua_Debug *ar) {
  return ar->source[0] == '@' || ar->source[0] == '=' ? ar->source + 1 : ar->short_src;
}

/* The key of function `idx` in the registry's table of the profiler's own functions
   (INTERNAL_KEY): a C function by its address, since LuaJIT makes a new object each time one
   is pushed. */
static void push_internal_key(lua_State *L, int idx) {
  lua_CFunction cf = lua_tocfunction(L, idx);
  if (cf) lua_pushlightuserdata(L, (void *)(uintptr_t)cf);
  else lua_pushvalue(L, idx);
}

/* Whether the function on top of L is the profiler's; its name, if it was given one, in
   *name (the name is in the registry's table, alive while the function is). */
static int is_internal(lua_State *L, const char **name) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &INTERNAL_KEY);
  int yes = 0;
  *name = NULL;
  if (lua_istable(L, -1)) {
    push_internal_key(L, -2);
    lua_rawget(L, -2);
    yes = lua_toboolean(L, -1);
    if (lua_type(L, -1) == LUA_TSTRING) *name = lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return yes;
}

void ident_mark_internal(lua_State *L, int idx, const char *name) {
  idx = lua_absindex(L, idx);
  int top = lua_gettop(L);
  weak_table(L, &INTERNAL_KEY);
  push_internal_key(L, idx);
  lua_pushvalue(L, -1);
  lua_rawget(L, -3);
  /* Marked again without a name (cprof's Lua side marks every method): the name stays. */
  if (name) lua_pushstring(L, name);
  else if (lua_type(L, -1) == LUA_TSTRING) lua_pushvalue(L, -1);
  else lua_pushboolean(L, 1);
  lua_remove(L, -2);
  lua_rawset(L, -3);
  lua_settop(L, top);
}

/* Names a call site can give (lua_getinfo 'n') are missing for functions called from C, such
   as the function given to pcall; calls on later new paths may come from Lua code that names
   them. */
enum { NAME_TRIES = 8 };

/* lua_getinfo's call-site name scans the calling function's code from its start up to the call
   (ldebug.c, findsetreg): far into a long function, such as a generated main chunk of thousands
   of lines, doing that for each new function would make the profile quadratic. Those functions
   get their global name instead (ident_name_all), or a call-site name on another path. */
enum { NAME_SCAN_LINES = 1000 };

static int call_site_name(lua_State *L, lua_Debug *ar) {
  lua_Debug caller;
  if (lua_getstack(L, 1, &caller) && lua_getinfo(L, "Sl", &caller) &&
      caller.currentline - caller.linedefined > NAME_SCAN_LINES)
    return 0;
  return lua_getinfo(L, "n", ar) && ar->name;
}

/* Whether the function on top of L is the library's coroutine.resume or coroutine.yield. */
static int is_coroutine_fn(lua_State *L) {
  int top = lua_gettop(L), yes = 0;
  if (!lua_checkstack(L, 3)) return 0;
  for (int i = 0; i < 2 && !yes; i++) {
    push_lib_fn(L, "coroutine", i ? "yield" : "resume");
    yes = lua_rawequal(L, -1, top);
    lua_settop(L, top);
  }
  return yes;
}

/* LuaJIT's number of the built-in at index idx, as its tostring names it ("function:
   builtin#80": tostring as it was when cprof loaded), 0 when it cannot be had: where functions
   have a metatable, a __tostring would run the program's code. */
static uint8_t builtin_id(lua_State *L, int idx) {
  int top = lua_gettop(L), id = 0;
  idx = lua_absindex(L, idx);
  if (!lua_checkstack(L, 3) || lua_getmetatable(L, idx)) {
    lua_settop(L, top);
    return 0;
  }
  lua_rawgetp(L, LUA_REGISTRYINDEX, &GLOBALS_KEY);
  if (lua_istable(L, -1)) {
    lua_pushliteral(L, "tostring");
    lua_rawget(L, -2);
    if (lua_iscfunction(L, -1)) {
      lua_pushvalue(L, idx);
      if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TSTRING &&
          sscanf(lua_tostring(L, -1), "function: builtin#%d", &id) != 1)
        id = 0;
    }
  }
  lua_settop(L, top);
  return id > 0 && id <= UINT8_MAX ? (uint8_t)id : 0;
}

/* A new entry for the function a call event calls, whose "S" information `ar` holds: a Lua
   function of `chunk`, or C function `cfunc`. It is named by the call site when it can be. */
static uint32_t new_entry(FuncTable *F, lua_State *L, lua_Debug *ar, uint32_t chunk,
                          const void *cfunc) {
  int kind = cfunc ? KIND_C : strcmp(ar->what, "main") == 0 ? KIND_MAIN : KIND_LUA;
  uint32_t e = fn_add(F, chunk, cfunc ? -1 : ar->linedefined, cfunc, kind);
  if (e == IDX_NONE) return e;
  Entry *en = &F->entries[e];
  en->lastline = cfunc ? -1 : ar->lastlinedefined;
  lua_getinfo(L, "f", ar);
  const char *own;
  en->internal = (uint8_t)is_internal(L, &own);
  /* cprof's C methods that its Lua wrappers replaced: only an upvalue holds them. */
  if (own) fn_set_name(F, e, own, NAME_GLOBAL);
  /* LuaJIT's built-ins have no C function to give (Lua 5.4's C functions all have one). */
  if (cfunc && !lua_tocfunction(L, -1)) {
    en->no_return = cfunc == &WRAP_MARK || is_coroutine_fn(L) ? NR_SWITCH : NR_BUILTIN;
    en->builtin = builtin_id(L, -1);
  }
  lua_pop(L, 1);
  const Learnt *lr = cfunc ? learnt(L) : NULL;
  for (int i = 0; lr && i < NLIB; i++)
    if (lr->lib[i] == cfunc) fn_set_name(F, e, LIB_NAMES[i], NAME_GLOBAL);
  if (kind == KIND_MAIN) fn_set_name(F, e, "<main chunk>", NAME_CALL);
  else if (cfunc == &WRAP_MARK || (lr && lr->wrap && cfunc == (const void *)(uintptr_t)lr->wrap))
    fn_set_name(F, e, "function made by coroutine.wrap", NAME_CALL);
  else if (kind == KIND_LUA && call_site_name(L, ar)) fn_set_name(F, e, ar->name, NAME_CALL);
  else if (kind == KIND_LUA) en->name_tries = NAME_TRIES;
  return e;
}

void ident_name_from_call(Profiler *P, lua_State *L, lua_Debug *ar, uint32_t e) {
  Entry *en = &P->fns.entries[e];
  if (!en->name_tries) return;
  en->name_tries--;
  if (call_site_name(L, ar) && fn_set_name(&P->fns, e, ar->name, NAME_CALL) == 0)
    P->fns.entries[e].name_tries = 0;
}

/* The entry of the C function at `ptr`, made on first sight. */
static uint32_t c_entry(FuncTable *F, lua_State *L, lua_Debug *ar, const void *ptr) {
  uint32_t e = fn_find_entry(F, IDX_NONE, -1, ptr);
  if (e == IDX_NONE) {
    lua_getinfo(L, "S", ar);
    e = new_entry(F, L, ar, IDX_NONE, ptr);
  }
  if (e != IDX_NONE && fn_set_key(F, ptr, NULL, -1, 0, e)) return IDX_NONE;
  return e;
}

/* The chunk of the function whose "S" information `ar` holds, its name held by object `src`
   (kept alive when `kept`), made on first sight. */
static uint32_t chunk_of(FuncTable *F, lua_Debug *ar, const void *src, int kept) {
  size_t len = compat_srclen(ar);
  uint32_t c = fn_find_source(F, src, ar->source, len);
  return c != IDX_NONE ? c : fn_chunk(F, src, (uint8_t)!kept, ar->source, len, file_of(ar));
}

/* The entry of a Lua function whose "S" information `ar` holds, chunk name held by object `src`
   (kept alive when `kept`), made on first sight. */
static uint32_t lua_entry(FuncTable *F, lua_State *L, lua_Debug *ar, const void *src,
                          int kept) {
  uint32_t c = chunk_of(F, ar, src, kept);
  if (c == IDX_NONE) return IDX_NONE;
  uint32_t e = fn_find_entry(F, c, ar->linedefined, NULL);
  if (e == IDX_NONE) e = new_entry(F, L, ar, c, NULL);
  return e;
}

/* ---- Functions made by coroutine.wrap ------------------------------------------------------ */

/* Pushes onto L the body of coroutine T: the function on its stack while it has not started,
   the function of its deepest activation while it is suspended. 0 when there is none to find
   (T has finished, died of an error or is running: the call is about to fail). */
static int push_body(lua_State *T, lua_State *L) {
  lua_Debug d;
  int status = lua_status(T);
  if (status == LUA_OK && !lua_getstack(T, 0, &d)) {
    if (lua_gettop(T) == 0 || !lua_checkstack(T, 1)) return 0;
    lua_pushvalue(T, 1);
  } else {
    if (status != LUA_YIELD) return 0;
    /* The deepest level: doubled while it exists, then halved back (as luaL_traceback). */
    int lo = 0, hi = 1;
    while (lua_getstack(T, hi, &d)) {
      lo = hi;
      hi *= 2;
    }
    while (hi - lo > 1) {
      int m = lo + (hi - lo) / 2;
      if (lua_getstack(T, m, &d)) lo = m;
      else hi = m;
    }
    if (!lua_getstack(T, lo, &d) || !lua_checkstack(T, 1) || !lua_getinfo(T, "f", &d)) return 0;
  }
  lua_xmove(T, L, 1);
  return 1;
}

/* The entry of the function made by coroutine.wrap on top of L (ident_wrap_entry), and its
   coroutine in *co. */
static uint32_t wrap_entry(Profiler *P, lua_State *L, lua_State **co) {
  *co = NULL;
  if (!lua_checkstack(L, 4)) return IDX_NONE;
  FuncTable *F = &P->fns;
  int top = lua_gettop(L);
  uint32_t e = IDX_NONE;
  lua_State *T = lua_getupvalue(L, -1, 1) ? lua_tothread(L, -1) : NULL;
  *co = T;
  if (T && push_body(T, L) && lua_isfunction(L, -1) && !lua_iscfunction(L, -1)) {
    lua_Debug b;
    lua_getinfo(L, ">S", &b);
    /* Unkept: its text is compared, as the public path's. LuaJIT describes a built-in there
       as a Lua function of line -1. */
    uint32_t c = b.linedefined < 0 ? IDX_NONE : chunk_of(F, &b, b.source, 0);
    e = c == IDX_NONE ? IDX_NONE : fn_find_entry(F, c, b.linedefined, &WRAP_MARK);
    if (c != IDX_NONE && e == IDX_NONE) {
      e = fn_add(F, c, b.linedefined, &WRAP_MARK, KIND_C);
      /* LuaJIT's is a built-in (it has no C function to give), which sends no return event */
      if (e != IDX_NONE && !lua_tocfunction(L, top)) F->entries[e].no_return = NR_SWITCH;
    }
    if (e != IDX_NONE && !F->entries[e].name) {
      const char *file = F->chunks[c].file;
      size_t len = strlen(file) + 32;
      char *name = fault_malloc(len);
      if (name) {
        snprintf(name, len, "wrap(%s:%d)", file, b.linedefined);
        fn_set_name(F, e, name, NAME_DEF);
        free(name);
      }
    }
  }
  lua_settop(L, top);
  return e;
}

uint32_t ident_wrap_entry(Profiler *P, lua_State *L, lua_Debug *ar) {
  if (!lua_checkstack(L, 1)) return IDX_NONE;
  lua_getinfo(L, "f", ar);
  lua_State *co;
  uint32_t e = wrap_entry(P, L, &co);
  lua_pop(L, 1);
  return e;
}

/* Whether C function `cf`, on top of L, is one coroutine.wrap made. LuaJIT's are built-ins
   without a C function pointer, each closure an object of its own: the only built-ins that
   hold a coroutine. */
static int is_wrap(const Profiler *P, lua_State *L, lua_CFunction cf) {
  if (cf) return cf == P->co_wrap;
  if (!lua_checkstack(L, 1) || !lua_getupvalue(L, -1, 1)) return 0;
  int yes = lua_isthread(L, -1);
  lua_pop(L, 1);
  return yes;
}

static int stripped(const void *src) {
#if LUAPRIV_KNOWN
  return src == LUAPRIV_NO_SOURCE;
#else
  (void)src;
  return 0;
#endif
}

uint32_t ident_fast(Profiler *P, lua_State *L, lua_Debug *ar, const void *key, const void *src,
                    int line) {
  FuncTable *F = &P->fns;
  uint32_t e = fn_find_key(F, key, src, line, NULL, 0);
  if (e != IDX_NONE) return e;
  if (!src) return c_entry(F, L, ar, key);
  /* A line below -1: a function made by coroutine.wrap, keyed by its body (hook.c), whose
     entry the public API finds; were it to find no body, the one entry of all wrap functions
     serves, under no key. */
  int wrap = line < -1;
  if (wrap && (e = ident_wrap_entry(P, L, ar)) == IDX_NONE)
    return c_entry(F, L, ar, (const void *)(uintptr_t)P->co_wrap);
  if (!wrap) lua_getinfo(L, "S", ar);
  /* The string is kept once per distinct object: later functions of its chunk find it. A
     stripped function has no such object, so its key is never cached. */
  int kept = !stripped(src) &&
             (fn_find_source(F, src, NULL, 0) != IDX_NONE ||
              anchor(P, L, src, wrap ? NULL : ar->source, wrap ? 0 : compat_srclen(ar)));
  if (!wrap) e = lua_entry(F, L, ar, src, kept);
  /* An unkept string (out of memory) cannot vouch for a key: the call is resolved each time. */
  if (e != IDX_NONE && kept && fn_set_key(F, key, src, line, 0, e)) return IDX_NONE;
  return e;
}

uint32_t ident_public(Profiler *P, lua_State *L, lua_Debug *ar, lua_CFunction *cf,
                      lua_State **co) {
  FuncTable *F = &P->fns;
  *co = NULL;
  lua_getinfo(L, "S", ar);
  if (ar->what[0] == 'C') {
    lua_getinfo(L, "f", ar);
    *cf = lua_tocfunction(L, -1);
    const void *ptr = cfunc_ptr(L, -1);
    uint32_t e = fn_find_key(F, ptr, NULL, -1, NULL, 0);
    /* A known key is no function made by coroutine.wrap, but on Lua 5.4 their one C function:
       LuaJIT's, objects of their own, are never made keys. */
    int wrap = (e == IDX_NONE || (*cf && *cf == P->co_wrap)) && is_wrap(P, L, *cf);
    uint32_t w = wrap ? wrap_entry(P, L, co) : IDX_NONE;
    lua_pop(L, 1);
    if (w != IDX_NONE) return w;
    if (e != IDX_NONE) return e;
    if (wrap && !*cf) ptr = &WRAP_MARK;
    e = fn_find_key(F, ptr, NULL, -1, NULL, 0);
    return e != IDX_NONE ? e : c_entry(F, L, ar, ptr);
  }
  *cf = NULL;
  size_t len = compat_srclen(ar);
  uint32_t e = fn_find_key(F, ar->source, ar->source, ar->linedefined, ar->source, len);
  if (e != IDX_NONE) return e;
  int kept = anchor(P, L, NULL, ar->source, len);
  e = lua_entry(F, L, ar, ar->source, kept);
  if (e != IDX_NONE &&
      fn_set_key(F, ar->source, ar->source, ar->linedefined, (uint8_t)!kept, e))
    return IDX_NONE;
  return e;
}

/* ---- Global names, once per snapshot -------------------------------------------------------- */

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

/* The entry of the function on top of the stack, if the profile has seen it. */
static uint32_t entry_of_value(const Profiler *P, lua_State *L) {
  const FuncTable *F = &P->fns;
  if (lua_iscfunction(L, -1)) return fn_find_entry(F, IDX_NONE, -1, cfunc_ptr(L, -1));
#if LUAPRIV_KNOWN
  if (P->fast) {
    const LPProto *p = ((const LPLClosure *)lua_topointer(L, -1))->p;
    uint32_t e = fn_find_key(F, p, p->source, p->linedefined, NULL, 0);
    if (e != IDX_NONE) return e;
  }
#endif
  lua_Debug ar;
  lua_pushvalue(L, -1);
  lua_getinfo(L, ">S", &ar);
  return fn_find_key(F, ar.source, ar.source, ar.linedefined, ar.source, compat_srclen(&ar));
}

/* The best name found so far for each entry being named. */
typedef struct Naming {
  char **best;
  uint8_t *rank;   /* 3: none yet */
} Naming;

/* `sep` joins `mod` and `field`: '.' for a module's function, ':' for a method; no `mod`: a
   global's bare name. */
static void consider(Naming *N, uint32_t e, int rank, const char *mod, char sep,
                     const char *field) {
  size_t len = strlen(field) + (mod ? strlen(mod) + 1 : 0);
  char *cand = fault_malloc(len + 1);
  if (!cand) return;
  if (!mod) memcpy(cand, field, len + 1);
  else snprintf(cand, len + 1, "%s%c%s", mod, sep, field);
  /* Several names may reach one function: the best ranked module wins, then the shortest
     name, then the alphabetically first (table order varies between runs). */
  char *best = N->best[e];
  size_t blen = best ? strlen(best) : 0;
  if (!best || rank < N->rank[e] || (rank == N->rank[e] &&
                                     (len < blen || (len == blen && strcmp(cand, best) < 0)))) {
    free(best);
    N->best[e] = cand;
    N->rank[e] = (uint8_t)rank;
  } else {
    free(cand);
  }
}

/* The function on top of the stack, if it is an entry still to be named, is a candidate. */
static void offer(const Profiler *P, lua_State *L, Naming *N, int rank, const char *mod, char sep,
                  const char *field) {
  uint32_t e = entry_of_value(P, L);
  if (e != IDX_NONE && !P->fns.entries[e].name && rank <= N->rank[e])
    consider(N, e, rank, mod, sep, field);
}

/* One module table (on top of the stack) of rank `rank`: every function field of it. */
static void walk_module(const Profiler *P, lua_State *L, Naming *N, const char *mod, char sep,
                        int rank) {
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    if (lua_type(L, -2) == LUA_TSTRING && lua_isfunction(L, -1))
      offer(P, L, N, rank, mod, sep, lua_tostring(L, -2));
    lua_pop(L, 1);
  }
}

/* Whether the table on top of the stack is a metatable: luaL_newmetatable gives it a __name
   (Lua 5.3 on), and a type has an __index or a __gc; the registry's other tables, which may be
   large, are not walked. */
static int is_metatable(lua_State *L) {
  static const char *const keys[] = {"__name", "__index", "__gc"};
  int found = 0;
  for (int i = 0; i < 3 && !found; i++) {
    lua_pushstring(L, keys[i]);
    lua_rawget(L, -2);
    found = !lua_isnil(L, -1);
    lua_pop(L, 1);
  }
  return found;
}

/* A metatable (on top of the stack) of type `tname`: its metamethods and methods. */
static void walk_metatable(const Profiler *P, lua_State *L, Naming *N, const char *tname,
                           int rank) {
  if (!is_metatable(L)) return;
  walk_module(P, L, N, tname, ':', rank);
  lua_pushliteral(L, "__index");
  lua_rawget(L, -2);
  /* (mt.__index = mt, a common idiom, was just walked) */
  if (lua_istable(L, -1) && !lua_rawequal(L, -1, -2)) walk_module(P, L, N, tname, ':', rank);
  lua_pop(L, 1);
}

/* require's searchers, which table `package` (on top of the stack) holds in a list, not by
   name, and which every require of a module not yet loaded calls: "package.searchers[2]"
   (package.loaders before Lua 5.2). */
static void walk_searchers(const Profiler *P, lua_State *L, Naming *N) {
  static const char *const lists[] = {"searchers", "loaders"};
  for (int k = 0; k < 2; k++) {
    lua_pushstring(L, lists[k]);
    lua_rawget(L, -2);
    for (int i = 1; lua_istable(L, -1); i++) {
      lua_rawgeti(L, -1, i);
      int more = lua_isfunction(L, -1);
      if (more) {
        char field[40];
        snprintf(field, sizeof field, "%s[%d]", lists[k], i);
        offer(P, L, N, 1, "package", '.', field);
      }
      lua_pop(L, 1);
      if (!more) break;
    }
    lua_pop(L, 1);
  }
}

void ident_name_all(Profiler *P, lua_State *L) {
  FuncTable *F = &P->fns;
  defname_all(F);
  uint32_t n = F->nentries, unnamed = 0;
  for (uint32_t i = 0; i < n; i++) unnamed += F->entries[i].name == NULL;
  if (unnamed == 0 || !lua_checkstack(L, 8)) return;
  Naming N = {fault_calloc(n, sizeof *N.best), fault_malloc(n)};
  if (!N.best || !N.rank) {
    free(N.best);
    free(N.rank);
    return;
  }
  memset(N.rank, 3, n);
  int top = lua_gettop(L);
  lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
  if (lua_istable(L, -1)) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      if (lua_type(L, -2) == LUA_TSTRING && lua_istable(L, -1)) {
        const char *mod = lua_tostring(L, -2);
        int rank = module_rank(mod);
        walk_module(P, L, &N, rank == 0 ? NULL : mod, '.', rank);
      }
      lua_pop(L, 1);
    }
    lua_pushliteral(L, "package");
    lua_rawget(L, -2);
    if (lua_istable(L, -1)) walk_searchers(P, L, &N);
  }
  /* The methods and metamethods of the types C libraries register (luaL_newmetatable), which
     no module holds: io's files ("file:close"), LPeg's patterns ("lpeg-pattern:__mul"), the
     box of a string buffer grown past the C stack, which Lua closes by a call
     ("_UBOX*:__close"). */
  lua_settop(L, top);
  lua_pushnil(L);
  while (lua_next(L, LUA_REGISTRYINDEX)) {
    if (lua_type(L, -2) == LUA_TSTRING && lua_istable(L, -1)) {
      const char *tname = lua_tostring(L, -2);
      int file = strcmp(tname, LUA_FILEHANDLE) == 0;
      if (file || (strcmp(tname, "_LOADED") != 0 && strcmp(tname, "_PRELOAD") != 0))
        walk_metatable(P, L, &N, file ? "file" : tname, file ? 1 : 2);
    }
    lua_pop(L, 1);
  }
  /* Last, and only for what nothing named (rank 3: "none yet"), the globals as they were. */
  lua_rawgetp(L, LUA_REGISTRYINDEX, &GLOBALS_KEY);
  if (lua_istable(L, -1)) walk_module(P, L, &N, NULL, '.', 3);
  lua_settop(L, top);
  for (uint32_t i = 0; i < n; i++) {
    if (!N.best[i]) continue;
    /* A Lua function may still get a call-site name later; a C function never does. */
    fn_set_name(F, i, N.best[i], NAME_GLOBAL);
    free(N.best[i]);
  }
  free(N.best);
  free(N.rank);
}
