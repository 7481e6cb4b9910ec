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

local rawget, setfenv = rawget, rawget(_G, "setfenv")

local env = {}
for name in ([[_G _VERSION assert collectgarbage dofile error getmetatable ipairs load loadfile
  loadstring next pairs pcall print rawequal rawget rawlen rawset require select setmetatable
  tonumber tostring type unpack xpcall setfenv getfenv newproxy coroutine debug io math os
  package string table utf8 bit jit]]):gmatch("%S+") do
  env[name] = rawget(_G, name)
end

return function()
  if setfenv then setfenv(2, env) end
  return env
end
