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

--- cprof.memory: cprof's allocator, its statistics and memory reports (docs/MEMORY.md).
cprof.memory = require "cprof.memory"

local methods = core.methods

local bias_mod = require "cprof.bias"
local data_mod = require "cprof.data"

--- The bias (seconds per event) of profiles made without a `bias` option, as Python's
--- profile.Profile.bias; 0 until set (Profile:calibrate measures one).
cprof.bias = 0

--- Profile([opts]): a new, disabled profile (options in docs/API.md).
function cprof.Profile(opts)
  if cprof.bias ~= 0 and (opts == nil or (type(opts) == "table" and opts.bias == nil)) then
    local o = { bias = cprof.bias }
    for k, v in pairs(opts or {}) do o[k] = v end
    opts = o
  end
  local ok, p = pcall(core.new, opts)
  if not ok then error(p, 2) end -- reported at the caller's line
  return p
end

--- The profile's numbers for a report: its data with the bias subtracted.
function methods:report_data()
  return bias_mod.apply(self:snapshot())
end

--- Writes the profile for other tools: p:export(format, file_or_stream [, opts]) (cprof.export).
function methods:export(format, out, opts)
  return require("cprof.export").export(format, self, out, opts)
end

--- Prints the report to stdout, sorted by `sort` (default: standard name, as Python does).
function methods:print_stats(sort)
  if sort == nil then sort = -1 end
  report.print(self:report_data(), { sort = sort })
  return self
end

--- Measures the cost per event that cprof's clock readings cannot see, as Python's
--- profile.Profile.calibrate(m): runs `n` calls (default 100000) of a tiny function without
--- and with profiling, on this profile's timer, and takes (profiled - unprofiled) time per
--- event, the median of five tries. Sets this profile's bias and returns it.
function methods:calibrate(n)
  n = n or 100000
  if type(n) ~= "number" or n < 1 or n % 1 ~= 0 then
    error("cprof: calibrate needs a whole number of calls, not " .. tostring(n), 2)
  end
  local function f1(k) local x for _ = 1, k do x = 1 end return x end
  local function f(m) for _ = 1, m do f1(2) end end
  local lines = { [debug.getinfo(f, "S").linedefined] = true, [debug.getinfo(f1, "S").linedefined] = true }
  f(n) -- warm up
  local tries = {}
  for t = 1, 5 do
    local t0 = self:now()
    f(n)
    local elapsed = self:now() - t0
    local p = self:sibling()
    p:bias(0)
    p:runcall(f, n)
    local reported, calls = 0, 0
    for _, e in ipairs(p:getstats().entries) do
      if e.what == "Lua" and lines[e.line] then reported, calls = reported + e.tottime, calls + e.ncalls end
    end
    assert(calls == n + 1, "cprof: calibrate: the profile missed calls")
    tries[t] = (reported - elapsed) / (2 * calls)
  end
  table.sort(tries)
  self:bias(tries[3])
  return tries[3]
end

-- A word of a command line, quoted for a POSIX shell when it needs to be.
local function shell_word(w)
  w = tostring(w)
  if w ~= "" and not w:find("[^%w%-%+_./:=,@%%]") then return w end
  return "'" .. w:gsub("'", [['\'']]) .. "'"
end

--- The command line of this process, from the global `arg` (interpreter, its options, the
--- script and its arguments), or "" when there is no `arg`.
function cprof.command_line()
  local a = rawget(_G, "arg")
  if type(a) ~= "table" then return "" end
  local lo = 0
  while a[lo - 1] ~= nil do lo = lo - 1 end
  local words = {}
  for i = lo, #a do
    if a[i] == nil then break end
    words[#words + 1] = shell_word(a[i])
  end
  return table.concat(words, " ")
end

local function process_id()
  if core.getpid then return core.getpid() end
  local f = io.open("/proc/self/stat")
  local pid = f and tonumber((f:read("*l") or ""):match("^%d+"))
  if f then f:close() end
  return pid or 0
end
cprof.getpid = process_id

local function host_name()
  if core.hostname then
    local ok, h = pcall(core.hostname)
    if ok and type(h) == "string" then return h end
  end
  return ""
end

--- The profile's data (p:snapshot(): with its line records when it has line events) with the
--- meta of this process filled in: the command line, the process id and the host name; and,
--- when cprof's allocator is installed in this state, the allocator snapshot (memory.stats()
--- now: groups mem_caches, mem_types, mem_arenas, mem_free_lists and meta keys mem_*).
function methods:dump_data()
  local d = self:snapshot()
  local meta = d.meta
  meta.command = cprof.command_line()
  meta.pid = process_id()
  meta.host = host_name()
  if cprof.memory.installed() then data_mod.set_allocator(d, cprof.memory.stats()) end
  return d
end

--- Writes the profile to `file` as a cprof dump (cprof.load and cprof-stats read it).
--- Raises "cprof: <file>: <reason>" when it cannot.
function methods:dump_stats(file)
  if type(file) ~= "string" then
    error(("cprof: dump_stats needs a file name, not a %s"):format(type(file)), 2)
  end
  local ok, err = pcall(core.write_dump, file, self:dump_data())
  if not ok then error(err, 0) end
  return self
end

--- Reads a dump written by dump_stats (or cprof.auto with CPROF_OUT): the data table of
--- docs/API.md.  Raises "cprof: <file>: <reason>" for a missing or bad file.
function cprof.load(file)
  -- Called through pcall so that the message is the reader's own, with no position in front.
  local ok, d = pcall(core.read_dump, file)
  if not ok then error(d, 0) end
  return d
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

-- After run/runctx: write the dump to `filename`, or print the report (as Python's
-- cProfile.run does: with a file name it prints nothing).  Then the code's error, if any.
local function finish(p, filename, sort, ok, err)
  if filename ~= nil then
    p:dump_stats(filename)
  else
    p:print_stats(sort)
  end
  if not ok then error(err, 0) end
  return p
end

--- cprof.run(code [, filename [, sort]]): profiles `code`; prints the report to stdout, or
--- writes a dump to `filename` when given.  An error in `code` propagates after the report or
--- the dump, with profiling off.
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
