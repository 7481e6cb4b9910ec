--- cprof: a deterministic profiler for Lua, with the verbs of Python's profile module.
--
--   local cprof = require "cprof"
--   cprof.run("main()")                      -- profile a chunk, print the report
--   local p = cprof.Profile()                -- or drive a profile yourself
--   p:enable() ... p:disable(); p:print_stats("cumulative")
--
-- The Profile object and its hot path are C (cprof.core); this file adds what Python's
-- profile.Profile adds on top of the C profiler: run, runctx and printing.

local core = require "cprof.core"
local report = require "cprof.report"

local cprof = { _VERSION = "cprof scm" }

local methods = core.methods

--- Profile([opts]): a new, disabled profile. opts.timer names a built-in timer.
function cprof.Profile(opts)
  return core.new(opts)
end

--- Prints the report to stdout, sorted by `sort` (default: standard name, as Python does).
function methods:print_stats(sort)
  if sort == nil then sort = -1 end
  report.print(self:getstats(), { sort = sort })
  return self
end

local function compile(code, env)
  if type(code) ~= "string" then
    error(("cprof: code to profile must be a string of Lua, not a %s"):format(type(code)), 3)
  end
  local chunk, err = load(code, code, "t", env)
  if not chunk then error("cprof: " .. err, 3) end
  -- LuaJIT's load has no env argument.
  if env and setfenv then setfenv(chunk, env) end
  return chunk
end

--- An environment in which names are looked up in `locals` first, then in `env`; new
--- globals go to `locals`, as Python's exec(code, globals, locals) does.
local function scope(env, locals)
  if locals == nil or locals == env then return env end
  return setmetatable({}, {
    __index = function(_, k)
      local v = locals[k]
      if v ~= nil then return v end
      return env[k]
    end,
    __newindex = locals,
  })
end

--- Profiles `code` (a string of Lua) run in the global environment. Returns the profile.
function methods:run(code)
  self:runcall(compile(code, _G))
  return self
end

--- Profiles `code` run with globals `env` and, if given, `locals` looked up first.
function methods:runctx(code, env, locals)
  if type(env) ~= "table" then
    error(("cprof: runctx needs an environment table, not a %s"):format(type(env)), 2)
  end
  self:runcall(compile(code, scope(env, locals)))
  return self
end

local function finish(p, filename, sort, ok, err)
  if filename ~= nil then
    -- The dump format is its own work item; until it lands a file cannot be written.
    error("cprof: writing a profile to a file is not supported yet (" .. tostring(filename) .. ")", 3)
  end
  p:print_stats(sort)
  if not ok then error(err, 0) end
  return p
end

--- cprof.run(code [, filename [, sort]]): profiles `code`; prints the report to stdout.
--- An error in `code` propagates after the report, with profiling off.
function cprof.run(code, filename, sort)
  local p = cprof.Profile()
  local chunk = compile(code, _G)
  local ok, err = pcall(p.runcall, p, chunk)
  return finish(p, filename, sort, ok, err)
end

--- cprof.runctx(code, env, locals [, filename [, sort]]).
function cprof.runctx(code, env, locals, filename, sort)
  if type(env) ~= "table" then
    error(("cprof: runctx needs an environment table, not a %s"):format(type(env)), 2)
  end
  local p = cprof.Profile()
  local chunk = compile(code, scope(env, locals))
  local ok, err = pcall(p.runcall, p, chunk)
  return finish(p, filename, sort, ok, err)
end

for _, f in pairs(methods) do
  if type(f) == "function" then core.mark_internal(f) end
end

return cprof
