--- cprof.env: the globals cprof's modules read, as they were when cprof was loaded.
--
-- A program may remove or replace any global, and cprof's code runs inside it until the very
-- end: Lua's own test suite (all.lua) deletes every global before it exits, just before
-- cprof.auto writes its dump.  Each module therefore starts with
--   local _ENV = require("cprof.env")()
-- which, on Lua 5.4, makes this table the module's _ENV and, on LuaJIT and Lua 5.1 (no _ENV),
-- makes it the module chunk's environment (setfenv), which the functions it defines inherit.
-- Only the standard names are copied: a global the program defined is never cprof's, and the
-- program's metatable on _G (a strict mode) is never consulted.  _G stays the program's global
-- table itself (cprof.run compiles code in it, cprof.command_line reads `arg` there).

-- The libraries of pure functions are copied: a program that sets string.gsub = nil changes its
-- own string table, not cprof's copy. A string's methods come from the program's string table
-- through the string metatable, so cprof's modules never call them as s:gsub(...), always
-- through these copies. The others stay the program's own: cprof wraps os.exit and
-- debug.sethook in them, and writes to io.stdout as the program has set it, as pstats writes
-- to sys.stdout.
local rawget, setfenv, next = rawget, rawget(_G, "setfenv"), next

local env = {}
for name in ([[_G _VERSION assert collectgarbage dofile error getmetatable ipairs load loadfile
  loadstring next pairs pcall print rawequal rawget rawlen rawset require select setmetatable
  tonumber tostring type unpack xpcall setfenv getfenv newproxy package coroutine debug io os
  jit]]):gmatch("%S+") do
  env[name] = rawget(_G, name)
end
for name in ([[math string table utf8 bit]]):gmatch("%S+") do
  local lib = rawget(_G, name)
  if lib ~= nil then
    local copy = {}
    for k, v in next, lib do copy[k] = v end
    env[name] = copy
  end
end

return function()
  if setfenv then setfenv(2, env) end
  return env
end
