/*
 * util/luapriv.h — the few private structures of Lua 5.4 that cprof's fast path reads: the
 * activation record (CallInfo) of a hook event, the value being called, a closure's prototype
 * or C function, the prototype's chunk name and line, a coroutine passed to coroutine.resume,
 * the body a coroutine runs, and the top of a thread's stack. They are mirrored here, written
 * from the layout of each release (lobject.h, lstate.h), and chosen by the exact release of the
 * headers cprof is built against. A mirror is a prefix: only the fields up to the last one
 * read, with the types Lua declares, so that the compiler lays them out as Lua's own build does
 * on every ABI.
 *
 * Nothing here is trusted blindly: hook/layout.c resolves probe calls both through these
 * mirrors and through the public API when a profile is enabled, and any disagreement sends that
 * profile to the public path (docs/SEMANTICS.md, "The fast path"). An unknown release, and
 * LuaJIT, never use them (LUAPRIV_KNOWN is 0).
 *
 * What each release changed in the mirrored structures:
 * - 5.4.0, 5.4.1, 5.4.2: StackValue is a union of one TValue (16 bytes on LP64). CallInfo
 *   starts func, top, previous, next; Proto, the closures, TString and the head of lua_State are
 *   as below.
 * - 5.4.3: StackValue gains the `tbclist` member (TValue fields plus an unsigned short delta),
 *   which fits in the TValue's padding: same size, same offsets. CallInfo's u2 gains `nres`
 *   (after the fields read here).
 * - 5.4.4, 5.4.5: no change to the mirrored fields (5.4.4 checked against Debian's source of
 *   lua5.4 5.4.4-3+deb12u1).
 * - 5.4.6: CallInfo.func, CallInfo.top and lua_State.top become StkIdRel, a union of the StkId
 *   pointer and a ptrdiff_t used only while the stack is reallocated: the pointer is its first
 *   member, so the offsets do not move. UpVal.v becomes a union too (not read here).
 * - 5.4.7: Value gains a `lu_byte ub` member (no change in size); TString.shrlen is 0xFF for long
 *   strings (not read here). Checked against Debian's source of lua5.4 5.4.7-1.
 */
#ifndef CPROF_LUAPRIV_H
#define CPROF_LUAPRIV_H

#include <stddef.h>
#include <stdint.h>

#include <lua.h>

#if defined(LUA_VERSION_RELEASE_NUM) && LUA_VERSION_RELEASE_NUM >= 50400 && \
    LUA_VERSION_RELEASE_NUM <= 50407
#define LUAPRIV_KNOWN 1
#else
#define LUAPRIV_KNOWN 0
#endif

#if LUAPRIV_KNOWN

/* Lua writes these objects through its own types; ours may alias them. */
#define LP_ALIAS __attribute__((__may_alias__))

/* lobject.h: the header every collectable object starts with. */
#define LUAPRIV_COMMONHEADER void *next; unsigned char tt; unsigned char marked

typedef union LPValue {
  void *gc;
  void *p;
  lua_CFunction f;
  lua_Integer i;
  lua_Number n;
} LP_ALIAS LPValue;

/* TValue; a stack slot (StackValue) has the same size in every 5.4 release. */
typedef struct LPTValue {
  LPValue value_;
  unsigned char tt_;
} LP_ALIAS LPTValue;

typedef union LPStackValue {
  LPTValue val;
  struct {
    LPValue value_;
    unsigned char tt_;
    unsigned short delta;
  } tbclist;
} LP_ALIAS LPStackValue;

/* Value tags with the collectable bit (makevariant, ctb). */
enum {
  LP_TAG_LCL = 0x06 | 0x40,         /* Lua closure */
  LP_TAG_LCF = 0x16,                /* light C function */
  LP_TAG_CCL = 0x26 | 0x40,         /* C closure */
  LP_TAG_THREAD = 0x08 | 0x40,
  LP_TAG_COLLECTABLE = 0x40
};

typedef struct LPTString {
  LUAPRIV_COMMONHEADER;
  unsigned char extra;
  unsigned char shrlen;
  unsigned int hash;
  union {
    size_t lnglen;
    void *hnext;
  } u;
  char contents[1];
} LP_ALIAS LPTString;

typedef struct LPProto {
  LUAPRIV_COMMONHEADER;
  unsigned char numparams, is_vararg, maxstacksize;
  int sizeupvalues, sizek, sizecode, sizelineinfo, sizep, sizelocvars, sizeabslineinfo;
  int linedefined, lastlinedefined;
  void *k, *code, *p, *upvalues, *lineinfo, *abslineinfo, *locvars;
  LPTString *source;
} LP_ALIAS LPProto;

#define LUAPRIV_CLOSUREHEADER LUAPRIV_COMMONHEADER; unsigned char nupvalues; void *gclist

typedef struct LPCClosure {
  LUAPRIV_CLOSUREHEADER;
  lua_CFunction f;
  LPTValue upvalue[1];
} LP_ALIAS LPCClosure;

typedef struct LPLClosure {
  LUAPRIV_CLOSUREHEADER;
  LPProto *p;
} LP_ALIAS LPLClosure;

/* lstate.h: CallInfo's first fields (func and top are StkIdRel from 5.4.6: pointer first). */
typedef struct LPCallInfo {
  LPStackValue *func;
  LPStackValue *top;
  struct LPCallInfo *previous, *next;
} LP_ALIAS LPCallInfo;

typedef struct LPState {
  LUAPRIV_COMMONHEADER;
  unsigned char status, allowhook;
  unsigned short nci;
  LPStackValue *top;
  void *l_G;
} LP_ALIAS LPState;

/* What a call event calls. */
enum { LP_OTHER, LP_LUA, LP_C };

/* The chunk name of a function loaded from a stripped dump (string.dump(f, true), as Lua's test
   suite loads its files): such a prototype's source is NULL, which would read as a C function.
   Never an object: it is compared, never read (hook/ident.c resolves such a function each time
   through the public API). */
#define LUAPRIV_NO_SOURCE ((const void *)(uintptr_t)1)

static inline const void *luapriv_source(const LPProto *p) {
  return p->source ? (const void *)p->source : LUAPRIV_NO_SOURCE;
}

/* The function of activation `ci`: a Lua function's prototype (*key), chunk name (*src, a
   TString) and line defined, or a C function (*key; *src NULL, *line -1). `skew` is 0 except
   in the layout check's self-test, which reads the line at a wrong offset on purpose. */
static inline int luapriv_callee(const void *ci, size_t skew, const void **key, const void **src,
                                 int *line) {
  const LPTValue *fv = &((const LPCallInfo *)ci)->func->val;
  switch (fv->tt_) {
    case LP_TAG_LCL: {
      const LPProto *p = ((const LPLClosure *)fv->value_.gc)->p;
      *key = p;
      *src = luapriv_source(p);
      *line = *(const int *)(const void *)((const char *)p + offsetof(LPProto, linedefined) + skew);
      return LP_LUA;
    }
    case LP_TAG_LCF:
      *key = (const void *)(size_t)fv->value_.f;
      break;
    case LP_TAG_CCL:
      *key = (const void *)(size_t)((const LPCClosure *)fv->value_.gc)->f;
      break;
    default:
      return LP_OTHER;
  }
  *src = NULL;
  *line = -1;
  return LP_C;
}

/* The activation that called `ci` (what lua_getstack(L, 1) finds inside a call hook). */
static inline const void *luapriv_parent(const void *ci) {
  return ((const LPCallInfo *)ci)->previous;
}

/* The thread in argument `n` (from 1) of activation `ci`, or NULL. */
static inline lua_State *luapriv_arg_thread(const void *ci, int n) {
  const LPTValue *v = &((const LPCallInfo *)ci)->func[n].val;
  return v->tt_ == LP_TAG_THREAD ? (lua_State *)v->value_.gc : NULL;
}

/* The thread in the first upvalue of the C closure that activation `ci` runs, or NULL. */
static inline lua_State *luapriv_upvalue_thread(const void *ci) {
  const LPTValue *fv = &((const LPCallInfo *)ci)->func->val;
  if (fv->tt_ != LP_TAG_CCL) return NULL;
  const LPCClosure *cl = (const LPCClosure *)fv->value_.gc;
  if (cl->nupvalues < 1 || cl->upvalue[0].tt_ != LP_TAG_THREAD) return NULL;
  return (lua_State *)cl->upvalue[0].value_.gc;
}

/* Pushes the string object `ts` itself (not a copy: a long string is not interned, so
   lua_pushlstring would make another one). It must be alive, as the chunk name of a function
   being called is. A stack slot needs no write barrier: Lua traverses stacks atomically. */
static inline void luapriv_push_string(lua_State *L, const void *ts) {
  lua_pushnil(L);
  LPTValue *slot = &(((LPState *)(void *)L)->top - 1)->val;
  slot->value_.gc = (void *)ts;
  slot->tt_ = (unsigned char)(((const LPTString *)ts)->tt | LP_TAG_COLLECTABLE);
}

/* lua_status(L), read directly. */
static inline int luapriv_status(const lua_State *L) {
  return ((const LPState *)(const void *)L)->status;
}

/* The prototype of the Lua function coroutine T runs when resumed, found as lua_getstack and
   lua_getinfo find it (hook/ident.c, push_body): the function at index 1 of a coroutine not
   started, the function of the deepest activation of a suspended one (a tail call replaces it
   there). NULL for a coroutine finished, dead of an error or running, and for a C function.
   The deepest activation is the one above base_ci, whose `previous` is NULL in every 5.4
   release: a walk as long as T's stack, which a generator's is not. */
static inline const LPProto *luapriv_body(lua_State *T) {
  lua_Debug d;
  int status = luapriv_status(T);
  if (!lua_getstack(T, 0, &d)) {
    if (status != LUA_OK || lua_type(T, 1) != LUA_TFUNCTION || lua_iscfunction(T, 1))
      return NULL;
    return ((const LPLClosure *)lua_topointer(T, 1))->p;
  }
  if (status != LUA_YIELD) return NULL;
  const LPCallInfo *ci = (const LPCallInfo *)d.i_ci;
  while (ci->previous->previous) ci = ci->previous;
  const LPTValue *fv = &ci->func->val;
  return fv->tt_ == LP_TAG_LCL ? ((const LPLClosure *)fv->value_.gc)->p : NULL;
}

/* The global state a thread belongs to: tells the threads of two Lua states apart. */
static inline const void *luapriv_state(const lua_State *L) {
  return ((const LPState *)(const void *)L)->l_G;
}

/* The text of string object `ts`. */
static inline const char *luapriv_string_text(const void *ts) {
  return ((const LPTString *)ts)->contents;
}

#endif
#endif
