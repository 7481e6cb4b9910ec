/*
 * bench/emptyhook.c -- the cost floor of any hook-based Lua profiler.
 *
 *   local emptyhook = require "emptyhook"
 *   emptyhook.set()      -- call/return hook on the calling thread; does nothing
 *   workload()
 *   emptyhook.clear()    -- remove the hook from the calling thread
 *   emptyhook.active()   -- true while our hook is installed on the calling thread
 *   emptyhook.monotonic()-- seconds from CLOCK_MONOTONIC (a wall clock for benches)
 *
 * The hook is installed with lua_sethook(L, hook, LUA_MASKCALL | LUA_MASKRET, 0)
 * and its body is empty, so the measured slowdown is what the VM itself pays
 * to dispatch call/return events to C.  A real profiler cannot be cheaper than
 * this with the same mechanism.
 *
 * Notes: in Lua 5.4 the hook belongs to one lua_State; coroutines created
 * while it is set inherit it (lua_newthread copies the hook).  In LuaJIT the
 * hook is global to the VM.  While it is set, trace recording aborts at hooked
 * calls, but traces compiled before it was set keep running and never call
 * it; bench/overhead.lua therefore calls jit.flush() before every run.
 *
 * Builds as C11 against Lua 5.4 or LuaJIT 2.1 headers:
 *   gcc -std=c11 -Wall -Wextra -O2 -shared -fPIC -I/usr/include/lua5.4 \
 *       bench/emptyhook.c -o build/lua5.4/emptyhook.so
 */

#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE)
#define _POSIX_C_SOURCE 200809L      /* clock_gettime under -std=c11 */
#endif

#include <time.h>

#include "lua.h"
#include "lauxlib.h"

#if defined(__GNUC__)
#define EMPTYHOOK_EXPORT __attribute__((visibility("default")))
#else
#define EMPTYHOOK_EXPORT
#endif

static void empty_hook(lua_State *L, lua_Debug *ar)
{
    (void)L;
    (void)ar;
}

static int eh_set(lua_State *L)
{
    lua_sethook(L, empty_hook, LUA_MASKCALL | LUA_MASKRET, 0);
    return 0;
}

static int eh_clear(lua_State *L)
{
    lua_sethook(L, NULL, 0, 0);
    return 0;
}

static int eh_active(lua_State *L)
{
    lua_pushboolean(L, lua_gethook(L) == empty_hook);
    return 1;
}

static int eh_monotonic(lua_State *L)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return luaL_error(L, "clock_gettime(CLOCK_MONOTONIC) failed");
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
    return 1;
}

static const luaL_Reg emptyhook_funcs[] = {
    {"set", eh_set},
    {"clear", eh_clear},
    {"active", eh_active},
    {"monotonic", eh_monotonic},
    {NULL, NULL}
};

EMPTYHOOK_EXPORT int luaopen_emptyhook(lua_State *L)
{
#if LUA_VERSION_NUM >= 502
    luaL_newlib(L, emptyhook_funcs);
#else
    lua_newtable(L);
    luaL_register(L, NULL, emptyhook_funcs);
#endif
    return 1;
}
