--- cprof.version: cprof's version number, defined here and nowhere else (cprof._VERSION,
--- `cprof-stats --version` and the `cprof_version` of a dump's meta read it), and the check
--- that the running Lua is one cprof is built for.
--
-- The C module cprof.core is compiled against one Lua API, Lua 5.4's or LuaJIT 2.1's; loaded
-- by another interpreter it fails in the dynamic linker (`undefined symbol: lua_absindex`).
-- Every file that loads it does so through M.core(), which says instead which Lua cprof needs,
-- or which Lua the core.so that was found is built for.  This file runs on any Lua, 5.1
-- included, so that it can say so.

local _ENV = require("cprof.env")()

local M = {}

--- The version of cprof (semantic versioning; CHANGELOG.md lists what each one changed).
M.VERSION = "0.1.0"

local type, pcall, require, error, tostring = type, pcall, require, error, tostring

local function jit_table()
  if type(jit) == "table" then return jit end
  return nil
end

--- The running interpreter as it names itself: "Lua 5.4", "LuaJIT 2.1.0-beta3".
function M.lua_name()
  local jit = jit_table()
  if jit and type(jit.version) == "string" then return jit.version end
  return _VERSION
end

--- nil when cprof can run on this interpreter, else the sentence that says why not.
function M.unsupported()
  local jit = jit_table()
  if jit then
    if type(jit.version_num) == "number" and jit.version_num >= 20100 then return nil end
  elseif _VERSION == "Lua 5.4" then
    return nil
  end
  return "cprof needs Lua 5.4 or LuaJIT 2.1; this is " .. M.lua_name()
end

--- Raises M.unsupported()'s sentence (without a position) when there is one.
function M.check()
  local why = M.unsupported()
  if why then error(why, 0) end
end

-- The sentence for a core.so that the dynamic linker refused: which Lua it was built for, told
-- by the missing symbol (LuaJIT exports luaJIT_*, Lua 5.4 functions LuaJIT lacks), and which
-- variable chooses it.  nil when the message is about something else.
local function wrong_build(err)
  local symbol = string.match(err, "undefined symbol: ([%w_]+)")
  if not symbol then return nil end
  local built_for, var
  if jit_table() then
    built_for, var = "Lua 5.4", "LUA_CPATH"
  elseif string.find(symbol, "^luaJIT_") then
    built_for, var = "LuaJIT", "LUA_CPATH_5_4 (or LUA_CPATH)"
  else
    return nil
  end
  local searchpath = package.searchpath
  local file = searchpath and searchpath("cprof.core", package.cpath) or "cprof.core"
  return string.format("cprof: %s is cprof.core built for %s, and this is %s: set %s to the directory of"
    .. " the %s build (in a checkout, `eval \"$(make -s env)\"` sets it for both)", 
    tostring(file), built_for, M.lua_name(), var, jit_table() and "LuaJIT" or "Lua 5.4")
end

-- The sentence for a core.so that is nowhere on package.cpath, instead of the list of every
-- place searched.
local function not_found(err)
  if not string.find(err, "module 'cprof.core' not found", 1, true) then return nil end
  return string.format("cprof: the C module cprof.core is not on %s or Lua's default paths: install cprof"
    .. " (make install, which says what to set) or, in a checkout, build it (make%s) and run"
    .. " `eval \"$(make -s env)\"`", jit_table() and "LUA_CPATH" or "LUA_CPATH_5_4 (or LUA_CPATH)",
    jit_table() and " LUA=luajit" or "")
end

--- cprof.core, after M.check(); a core.so built for the other Lua, or none on the path, is an
--- error that says so.
function M.core()
  M.check()
  local ok, core = pcall(require, "cprof.core")
  if ok then return core end
  core = tostring(core)
  error(wrong_build(core) or not_found(core) or core, 0)
end

return M
