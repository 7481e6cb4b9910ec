--- cprof: a deterministic profiler for Lua, with the verbs of Python's profile module.
--
--   local cprof = require "cprof"
--   cprof.run("main()")                      -- profile a chunk, print the report
--   local p = cprof.Profile()                -- or drive a profile yourself
--   p:enable() ... p:disable(); p:print_stats("cumulative")
--
-- The Profile object and its hot path are C (cprof.core); this file adds what Python's
-- profile.Profile adds on top of the C profiler: run, runctx and printing.

local _ENV = require("cprof.env")()

local version = require "cprof.version"
local core = version.core()
local report = require "cprof.report"
local args = require "cprof.args"

local cprof = { _VERSION = "cprof " .. version.VERSION }

--- cprof.memory: cprof's allocator, its statistics and memory reports (docs/MEMORY.md).
cprof.memory = require "cprof.memory"

local methods = core.methods
args.name_objects(core.metatable, "cprof.Profile")

local bias_mod = require "cprof.bias"
local profdata = require "cprof.profdata"
local allocdata = require "cprof.allocdata"
local dump = require "cprof.dump"

local type, next, pcall, error, getmetatable, setmetatable, rawget, rawset, rawequal, ipairs =
  type, next, pcall, error, getmetatable, setmetatable, rawget, rawset, rawequal, ipairs

local function is_profile(v)
  return type(v) == "userdata" and getmetatable(v) == core.metatable
end

-- The check of `self` in the methods written here, worded as Lua words it for C methods.
local function check_self(p, fname)
  args.check_self(is_profile(p), p, fname, "cprof.Profile", 1)
end

--- The bias of profiles made without a `bias` option, as Python's profile.Profile.bias: a
--- number of seconds per event or a table of seconds per kind of event (cprof.bias); 0 until
--- set (Profile:calibrate measures one). While it is 0, a profile of a timer this machine has a
--- kept calibration for (CPROF_CALIBRATE=save) takes that one.
cprof.bias = 0

local calibrate_mod = require "cprof.calibrate"
local raw_bias, raw_sibling = methods.bias, methods.sibling

-- The per-kind model of each profile that has one (its C bias is then 0).
local models = setmetatable({}, { __mode = "k" })

local TIME_TIMERS = { tsc = true, monotonic = true, cpu = true, thread = true }
local kept = {} -- timer name -> the kept calibration, or false

-- The calibration kept for profile p's timer, Lua and cprof version, if any (a file that is not
-- one is said once on stderr and ignored).
local function kept_model(p)
  local c = os.getenv("CPROF_CALIBRATE")
  if c == "0" or c == "off" then return nil end
  local meta = methods.snapshot(p).meta
  if not TIME_TIMERS[meta.timer] then return nil end
  local key = meta.timer .. "\0" .. tostring(meta.lua_version)
  if kept[key] == nil then
    local dir = calibrate_mod.dir()
    local m, err
    if dir then
      m, err = calibrate_mod.load(calibrate_mod.path(dir, meta.timer, meta.lua_version,
                                                     version.VERSION))
    end
    if err then io.stderr:write(err, " (ignored)\n") end
    kept[key] = m or false
  end
  return kept[key] or nil
end

-- Sets profile p's bias: a number (seconds per event, kept by the C profile) or a model; either
-- is checked first (bias.model: a finite number, known kinds).
local function set_bias(p, b, what)
  local m = bias_mod.model(b, what)
  if type(b) == "table" then
    raw_bias(p, 0)
    models[p] = m
  else
    raw_bias(p, b)
    models[p] = nil
  end
end

--- Profile([opts]): a new, disabled profile (options in docs/API.md).  The options table is
--- read raw: its metamethods never run.
function cprof.Profile(opts)
  local b
  if opts == nil or type(opts) == "table" then
    b = opts and rawget(opts, "bias")
    local o = {}
    if opts ~= nil then
      for k, v in next, opts do o[k] = v end
    end
    if b == nil and cprof.bias ~= 0 then b = cprof.bias end
    o.bias = type(b) ~= "table" and b or nil
    opts = o
  end
  local ok, p = pcall(core.new, opts)
  if not ok then error(p, 2) end -- reported at the caller's line
  if b ~= nil then
    local mok, err = pcall(set_bias, p, b, "option 'bias'")
    if not mok then error(err, 2) end
  elseif b == nil then
    local m = kept_model(p)
    if m then models[p] = m end
  end
  return p
end

--- p:bias([b]): the profile's bias (a number, or the per-kind table); sets it when `b` is given.
function methods:bias(b)
  check_self(self, "bias")
  if b ~= nil then
    args.check(type(b) == "number" or type(b) == "table", b, 1, "bias",
               "number or table of seconds per kind")
    local ok, err = pcall(set_bias, self, b, "bias")
    if not ok then error(err, 2) end
  end
  return models[self] or raw_bias(self)
end

--- p:sibling([lines]): a new, empty profile with the same timer, options and bias; `lines`
--- turns its line events on or off.
function methods:sibling(lines)
  check_self(self, "sibling")
  args.check(lines == nil or type(lines) == "boolean", lines, 1, "sibling", "boolean")
  local q = raw_sibling(self, lines)
  models[q] = models[self]
  return q
end

local raw_snapshot, raw_getstats = methods.snapshot, methods.getstats

-- The data of a profile made with subcalls = false (cProfile's option): no caller/callee
-- edges and no call tree.  The bias is subtracted first, since it needs both (a function's own
-- time holds an event per call it made: meta.bias_applied), and memory charged to the tree
-- moves to the frames' own columns.
local function without_subcalls(d)
  d = bias_mod.apply(d)
  local frames = d.frames
  local mem = profdata.frame_memory(frames, d.nodes)
  if mem then
    for _, c in ipairs(profdata.MEMORY_COLUMNS) do
      local col = {}
      for i = 1, frames.n do col[i] = mem[i][c] end
      frames[c] = col
    end
  end
  d.edges, d.nodes = { n = 0 }, { n = 0 }
  for _, c in ipairs(profdata.EDGE_COLUMNS) do d.edges[c] = {} end
  for _, c in ipairs(profdata.NODE_COLUMNS) do d.nodes[c] = {} end
  return d
end

--- The columnar data of the profile (docs/API.md, "Dumps").
function methods:snapshot()
  check_self(self, "snapshot")
  local d = raw_snapshot(self)
  bias_mod.to_meta(d.meta, models[self])
  if d.meta.subcalls == false then d = without_subcalls(d) end
  return d
end

--- The profile's numbers as plain tables (docs/API.md): the numbers the reports show, so with a
--- bias set it is subtracted (which needs the call tree: the table is then made from the
--- profile's data and carries its `meta`).
function methods:getstats()
  check_self(self, "getstats")
  if raw_bias(self) == 0 and not models[self] then
    local st = raw_getstats(self)
    if st.subcalls == false then
      for _, e in ipairs(st.entries) do e.callers = {} end
    end
    return st
  end
  local st = profdata.to_stats(self:report_data())
  st.timer_errors, st.subcalls = st.meta.timer_errors, st.meta.subcalls
  return st
end

--- The profile's numbers for a report: its data with the bias subtracted.
function methods:report_data()
  check_self(self, "report_data")
  return bias_mod.apply(self:snapshot())
end

--- Writes the profile for other tools: p:export(format, file_or_stream [, opts]) (cprof.export).
function methods:export(format, out, opts)
  return require("cprof.export").export(format, self, out, opts)
end

--- p:create_stats(): cProfile's Profile.create_stats: disables the profile and returns its
--- numbers as pstats holds them (what Python keeps in p.stats; a userdata has no fields of its
--- own): stats[key] = { cc, nc, tt, ct, callers }, callers[caller_key] = { nc, cc, tt, ct },
--- keys interned { file, line, name } (cprof.stats.func_key; a C function's is "~", 0,
--- "<name>"), the bias subtracted as in every report.
function methods:create_stats()
  check_self(self, "create_stats")
  self:disable()
  return require("cprof.stats").new(self).stats
end

--- Prints the report to stdout with the directories stripped from file names, sorted by `sort`
--- (default: standard name), as Python's Profile.print_stats prints
--- Stats(self).strip_dirs().sort_stats(sort).print_stats().
function methods:print_stats(sort)
  check_self(self, "print_stats")
  if sort == nil then sort = -1 end
  local err = report.sort_error(sort)
  if err then error(err, 2) end
  report.print(self:report_data(), { sort = sort, strip_dirs = true })
  return self
end

-- The number of calls of a calibration, argument #i of fname: its default when nil.
local function check_calls(n, i, fname)
  n = n or calibrate_mod.DEFAULT_CALLS
  args.check(type(n) == "number" and n >= 1 and n <= calibrate_mod.MAX_CALLS and n % 1 == 0, n, i,
             fname, "a whole number of calls from 1 to " .. calibrate_mod.MAX_CALLS, 1)
  return n
end

--- Measures the cost of each kind of event that cprof's clock readings cannot see, as Python's
--- profile.Profile.calibrate(m) does for its one kind: about `n` calls of each kind (default
--- 500000, at most 10^7), profiled and not, interleaved, on this profile's timer (cprof.calibrate
--- says how). Sets this profile's bias to the model and returns it: { lua_call, c_call, switch,
--- wrap, line = seconds, err = { kind = half width of the 95% interval }, confidence = 0.95 }.
function methods:calibrate(n)
  check_self(self, "calibrate")
  n = check_calls(n, 1, "calibrate")
  local m = calibrate_mod.measure(self, n)
  local meta = raw_snapshot(self).meta
  m.date = os.date("!%Y-%m-%d %H:%M UTC")
  m.timer, m.lua_version, m.cprof_version = meta.timer, meta.lua_version, version.VERSION
  set_bias(self, m)
  return models[self]
end

local shell_word = args.shell_word

-- A word of the program's `arg` table as text, without running any of its metamethods.
local function arg_text(v)
  if type(v) == "string" then return v end
  if type(v) == "number" then return string.format("%.14g", v) end
  return "<" .. type(v) .. ">"
end

-- The command line in the global `arg`, or nil when there is none; and its interpreter, the
-- word at its lowest negative index (nil when there is none: a host that embeds Lua).
local function read_command_line()
  local a = rawget(_G, "arg")
  if type(a) ~= "table" then return nil end
  local lo = 0
  while rawget(a, lo - 1) ~= nil do lo = lo - 1 end
  local words = {}
  local i = lo
  while rawget(a, i) ~= nil do
    words[#words + 1] = shell_word(arg_text(rawget(a, i)))
    i = i + 1
  end
  local interpreter = rawget(a, lo)
  return table.concat(words, " "), lo < 0 and type(interpreter) == "string" and interpreter or nil
end

-- A program may delete `arg` before it exits, when cprof.auto writes its dump.
local command_at_load, interpreter_at_load = read_command_line()

--- The command line of this process, from the global `arg` (interpreter, its options, the
--- script and its arguments), or, when the program has removed `arg`, as it was when cprof
--- was loaded; "" when there was none then either.  The table is read raw: a program's strict
--- `arg` (a metatable that raises on missing keys) is never consulted.
function cprof.command_line()
  return (read_command_line()) or command_at_load or ""
end

--- Measures the bias model of this machine and keeps it: Profile:calibrate(n) with a profile
--- of `timer` (default the default timer) in `processes` (default 5) fresh processes of this
--- interpreter, one after the other, and per kind the median (cprof.calibrate.machine; in this
--- process when there is one or no child can be started); progress(i, k, model, again), when
--- given, is called as each process ends. Returns the file it wrote, and the model. Profiles
--- of that timer made afterwards use it, in this process and later ones (CPROF_CALIBRATE=save
--- does this, saying on stderr how far it is).
function cprof.save_calibration(timer, n, processes, progress)
  local dir = calibrate_mod.dir()
  if not dir then error("cprof: no folder for the calibration: set XDG_CACHE_HOME or HOME", 2) end
  processes = processes or calibrate_mod.PROCESSES
  args.check(type(processes) == "number" and processes >= 1 and processes % 1 == 0, processes, 3,
             "save_calibration", "a whole number of processes, 1 or more")
  args.check(timer == nil or type(timer) == "string" or type(timer) == "function", timer, 1,
             "save_calibration", "timer name or function")
  n = check_calls(n, 2, "save_calibration")
  args.check(progress == nil or type(progress) == "function", progress, 4, "save_calibration",
             "function")
  local pok, p = pcall(cprof.Profile, { timer = timer, bias = 0 })
  if not pok then error(p, 2) end
  local meta = raw_snapshot(p).meta
  local ok, m = pcall(calibrate_mod.machine, type(timer) == "function" and timer or meta.timer,
                      n, processes, interpreter_at_load, function() return p:calibrate(n) end,
                      progress)
  if not ok then error(m, 2) end
  if not m then error("cprof: the calibration found every kind of event free: nothing to keep", 2) end
  m.date = m.date or os.date("!%Y-%m-%d %H:%M UTC")
  m.timer, m.lua_version, m.cprof_version = meta.timer, meta.lua_version, version.VERSION
  local path, err = calibrate_mod.save(m, calibrate_mod.path(dir, m.timer, m.lua_version,
                                                             m.cprof_version))
  if not path then error(err, 2) end
  m.source = "saved " .. m.date .. ", " .. m.source
  kept[m.timer .. "\0" .. tostring(m.lua_version)] = m
  return path, m
end

local function process_id()
  if core.getpid then return core.getpid() end
  local f = io.open("/proc/self/stat")
  local pid = f and tonumber(string.match((f:read("*l") or ""), "^%d+"))
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
  check_self(self, "dump_data")
  local d = self:snapshot()
  local meta = d.meta
  meta.command = cprof.command_line()
  meta.pid = process_id()
  meta.host = host_name()
  meta.cprof_version = version.VERSION
  if cprof.memory.installed() then allocdata.set(d, cprof.memory.stats()) end
  return d
end

--- Writes the profile to `file` as a cprof dump (cprof.load and cprof-stats read it), also while
--- it runs; with opts.reset, then zeroes its numbers (p:reset()), so that the next dump covers
--- only what ran after this one.  Raises "cprof: <file>: <reason>" when it cannot.
function methods:dump_stats(file, opts)
  check_self(self, "dump_stats")
  dump.check_path(file, "dump_stats", 2)
  local reset = false
  if opts ~= nil then
    args.check(type(opts) == "table", opts, 2, "dump_stats", "table of options")
    for k, v in next, opts do
      if k ~= "reset" then args.fail(2, "dump_stats", string.format("unknown option '%s' (the option is reset)", tostring(k))) end
      args.check(type(v) == "boolean", v, 2, "dump_stats", "reset = true or false:")
    end
    reset = rawget(opts, "reset") == true
  end
  dump.write(file, self:dump_data())
  if reset then self:reset() end
  return self
end

--- The digits %n has at least (zeros in front): the names of a server's dumps, one a second
--- for three years, list in the order they were written (`ls`, a shell's `*`).
cprof.DUMP_NUMBER_DIGITS = 8
local DUMP_NUMBER = string.format("%%0%d.0f", cprof.DUMP_NUMBER_DIGITS)

--- A dump file name: `pattern` with %p replaced by the process id, %n by `seq` (the dump's
--- number, a whole number of at least DUMP_NUMBER_DIGITS digits) and %% by %.
function cprof.dump_name(pattern, seq)
  args.check(type(pattern) == "string", pattern, 1, "dump_name", "string")
  if seq ~= nil or string.find(string.gsub(pattern, "%%%%", ""), "%%n") then
    args.check(type(seq) == "number" and seq >= 0 and seq < 2^53 and seq % 1 == 0, seq, 2,
               "dump_name", "whole number of the dump, 0 or more")
  end
  return (string.gsub(pattern, "%%([%%pn]?)", function(c)
    if c == "p" then return tostring(process_id()) end
    if c == "n" then return string.format(DUMP_NUMBER, seq) end
    return "%"
  end))
end

-- A profile's live dumps (p:live): a handle.
local Live = {}
Live.__index = Live
args.name_objects(Live, "cprof.Live")

local function check_live(h, fname)
  args.check_self(getmetatable(h) == Live, h, fname, "cprof.Live", 1)
end

--- Writes the next dump now (its file name with the next number); returns the name.
function Live:dump()
  check_live(self, "dump")
  self.n = self.n + 1
  local name = self.name(self.n)
  if type(name) ~= "string" then
    error(string.format("cprof: live dump %d: the function given as option 'file' of live returned"
      .. " %s, not a file name", self.n, args.typename(name)), 2)
  end
  self.profile:dump_stats(name, { reset = self.reset })
  return name
end

--- No more signals or timer: what asks for dumps is gone (the profile goes on).
function Live:stop()
  check_live(self, "stop")
  self.handle:stop()
end
Live.__close = Live.stop

local LIVE_OPTIONS = { file = "string", signal = "string", interval = "number", reset = "boolean" }

--- p:live{file = name, signal = "USR1", interval = seconds, reset = bool}: dumps the running
--- profile on that signal and every `interval` seconds, to `file` (cprof.dump_name: %p, %n),
--- without stopping it; with reset, each dump covers the time since the previous one.  The
--- signal's handler only sets a flag; the dump is written when a function next returns.  One
--- at a time per process; returns a handle: h:dump(), h:stop() (also `<close>`).
function methods:live(opts)
  check_self(self, "live")
  args.check(type(opts) == "table", opts, 1, "live", "table of options")
  for k, v in next, opts do
    local want = LIVE_OPTIONS[k]
    if not want then
      args.fail(1, "live", string.format("unknown option '%s' (the options are file, signal, interval, reset)", tostring(k)))
    end
    args.check(type(v) == want or (k == "file" and type(v) == "function"), v, 1, "live", want .. " as " .. k)
  end
  local file = rawget(opts, "file")
  args.check(file ~= nil, file, 1, "live", "a file name as file")
  local interval = rawget(opts, "interval")
  if interval ~= nil and not (interval > 0) then
    args.fail(1, "live", "interval must be a positive number of seconds")
  end
  local h = setmetatable({ profile = self, n = 0, reset = rawget(opts, "reset") == true }, Live)
  h.name = type(file) == "function" and file or function(n) return cprof.dump_name(file, n) end
  -- A failure is said once, and again only when its reason changes: a server dumping every
  -- 10 ms to a full disk would print 100 lines a second. The first dump written after failures
  -- says how many there were. The reason is what follows the file's name, which changes with
  -- each dump (%n).
  local failing, failed, name_of, last = nil, 0, h.name, nil
  h.name = function(n)
    last = name_of(n)
    return last
  end
  local function on_request()
    last = nil
    local ok, err = pcall(h.dump, h)
    if ok then
      if failed > 0 then
        io.stderr:write(string.format("cprof: live dumps are written again (%s), after %d failed\n",
          tostring(err), failed))
      end
      failing, failed = nil, 0
      return
    end
    local msg = string.gsub(tostring(err), "\n", " ")
    msg = string.match(msg, "^cprof: (.*)") or msg
    local name = type(last) == "string" and last .. ": "
    local reason = name and string.sub(msg, 1, #name) == name and string.sub(msg, #name + 1) or msg
    failed = failed + 1
    if reason ~= failing then
      io.stderr:write("cprof: live dump: ", msg, " (not reported again while it repeats)\n")
      failing = reason
    end
  end
  local ok, handle = pcall(core.live, on_request, rawget(opts, "signal"), interval)
  if not ok then error(handle, 2) end
  h.handle = handle
  return h
end

--- Reads a dump written by dump_stats (or cprof.auto with CPROF_OUT): the data table of
--- docs/API.md.  Raises "cprof: <file>: <reason>" for a missing or bad file.
function cprof.load(file)
  local d = dump.read(file, "load") -- not a tail call: a bad argument is reported at the caller
  return d
end

-- `code` compiled with environment `env`; a bad `code` is argument #1 of public function fname.
local function compile(code, env, fname)
  args.check(type(code) == "string", code, 1, fname, "string of Lua", 1)
  local chunk, err = load(code, code, "t", env)
  if not chunk then error("cprof: " .. err, 3) end
  -- LuaJIT's load has no env argument.
  if env and setfenv then setfenv(chunk, env) end
  return chunk
end

-- Checks runctx's environments (raising at the line that called runctx).
local function check_scope(env, locals)
  local level = 3
  if type(env) ~= "table" then
    error(string.format("cprof: runctx needs an environment table, not a %s", type(env)), level)
  end
  if locals == nil or rawequal(locals, env) then return end
  if type(locals) ~= "table" then
    error(string.format("cprof: runctx's locals must be a table, not a %s", type(locals)), level)
  end
  if getmetatable(locals) ~= nil then
    error("cprof: runctx's locals must be a table without a metatable (cprof gives it one for"
      .. " the run)", level)
  end
end

-- Runs `chunk` (compiled with env `locals`) under p and returns pcall's results.  Names are
-- looked up in `locals` first, then in `env`, and new globals go to `locals`, as Python's
-- exec(code, globals, locals) does: for the run, `locals` gets `env` as its __index — a table,
-- so no function of cprof's runs on a lookup, or shows in the profile.
local function run_scoped(p, chunk, env, locals)
  if locals == nil or rawequal(locals, env) then return pcall(p.runcall, p, chunk) end
  local mt = { __index = env }
  setmetatable(locals, mt)
  local ok, err = pcall(p.runcall, p, chunk)
  if getmetatable(locals) == mt then setmetatable(locals, nil) end
  return ok, err
end

--- Profiles `code` (a string of Lua) run in the global environment. Returns the profile.
function methods:run(code)
  check_self(self, "run")
  self:runcall(compile(code, _G, "run"))
  return self
end

--- Profiles `code` run with globals `env` and, if given, `locals` looked up first.
function methods:runctx(code, env, locals)
  check_self(self, "runctx")
  check_scope(env, locals)
  local ok, err = run_scoped(self, compile(code, locals or env, "runctx"), env, locals)
  if not ok then error(err, 0) end
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

-- cprof.run's and cprof.runctx's sort, checked before anything runs.
local function check_sort(sort)
  if sort == nil then return end
  local err = report.sort_error(sort)
  if err then error(err, 3) end
end

--- cprof.run(code [, filename [, sort]]): profiles `code`; prints the report to stdout, or
--- writes a dump to `filename` when given.  An error in `code` propagates after the report or
--- the dump, with profiling off.
function cprof.run(code, filename, sort)
  if filename ~= nil then dump.check_path(filename, "run", 2, 2) end
  check_sort(sort)
  local p = cprof.Profile()
  local chunk = compile(code, _G, "run")
  local ok, err = pcall(p.runcall, p, chunk)
  return finish(p, filename, sort, ok, err)
end

--- cprof.runctx(code, env, locals [, filename [, sort]]).
function cprof.runctx(code, env, locals, filename, sort)
  check_scope(env, locals)
  if filename ~= nil then dump.check_path(filename, "runctx", 2, 4) end
  check_sort(sort)
  local p = cprof.Profile()
  local chunk = compile(code, locals or env, "runctx")
  return finish(p, filename, sort, run_scoped(p, chunk, env, locals))
end

--- cprof.module_file(name): the file of the Lua module `name` on package.path, the one require
--- would load; raises "cprof: module 'name' not found:" and require's list of the places tried.
function cprof.module_file(name)
  args.check(type(name) == "string", name, 1, "module_file", "string")
  local file, err = package.searchpath(name, package.path)
  -- (LuaJIT's list starts with a line break, Lua 5.4's with its first place)
  if not file then
    error(string.format("cprof: module '%s' not found:\n\t%s", name, (string.gsub(err, "^%s+", ""))), 2)
  end
  return file
end

--- cprof.run_module(name [, filename [, sort [, args]]]): `python -m cProfile -m name` from Lua:
--- the Lua module `name`, found on package.path as require finds it, its file run as a main
--- chunk under a new profile, with the list `args` as its `...` and, while it runs, the global
--- `arg` { [0] = its file, args... } (as runpy's alter_sys); then the report or the dump, and
--- an error of the module, as cprof.run. Returns the Profile.
function cprof.run_module(name, filename, sort, list)
  args.check(type(name) == "string", name, 1, "run_module", "string")
  if filename ~= nil then dump.check_path(filename, "run_module", 2, 2) end
  check_sort(sort)
  args.check(list == nil or type(list) == "table", list, 4, "run_module", "list of arguments")
  local ok, file = pcall(cprof.module_file, name)
  if not ok then error(file, 2) end
  local chunk, lerr = loadfile(file)
  if not chunk then error("cprof: " .. lerr, 2) end
  local words, n = { [0] = file }, list and #list or 0
  for i = 1, n do words[i] = rawget(list, i) end
  local saved = rawget(_G, "arg")
  rawset(_G, "arg", words)
  local p = cprof.Profile()
  local ok, res = pcall(p.runcall, p, chunk, (table.unpack or unpack)(words, 1, n))
  rawset(_G, "arg", saved)
  return finish(p, filename, sort, ok, res)
end

--- The profiles of cprof.region, by name.
cprof.regions = {}

--- cprof.region(name [, opts]): the profile of region `name`, enabled, to be closed:
---   do local p <close> = cprof.region("parse") ... end
--- The first region of a name makes its profile with `opts` (cprof.Profile's); closing it
--- disables it, and the next region of the same name adds to it (cprof.regions[name]).
function cprof.region(name, opts)
  args.check(type(name) == "string", name, 1, "region", "string")
  args.check(opts == nil or type(opts) == "table", opts, 2, "region", "table of options")
  local p = cprof.regions[name]
  if p == nil then
    local ok, made = pcall(cprof.Profile, opts)
    if not ok then error(made, 2) end
    p = made
    cprof.regions[name] = p
  elseif opts ~= nil then
    error(string.format("cprof: region '%s' was made already; its options are given the first time", name), 2)
  end
  local ok, err = pcall(p.enable, p)
  if not ok then error(err, 2) end
  return p
end

--- cprof.wrap(f [, where]): a function that calls f with profiling on (line_profiler's
--- @profile): each call of it runs f under profile `where` (a Profile, or the region of that
--- name; default the region "wrap"), so the profile holds f and what it calls, nothing else.
--- A call while the profile is on already (f recursing), or while another profile is enabled,
--- just calls f.
function cprof.wrap(f, where)
  args.check(type(f) == "function", f, 1, "wrap", "function")
  local p = where
  if not is_profile(where) then
    args.check(where == nil or type(where) == "string", where, 2, "wrap", "cprof.Profile or region name")
    local name = where or "wrap"
    p = cprof.regions[name]
    if p == nil then
      p = cprof.Profile()
      cprof.regions[name] = p
    end
  end
  return function(...)
    if p:is_enabled() or not pcall(p.enable, p) then return f(...) end
    return p:runcall(f, ...)
  end
end

for _, f in pairs(methods) do
  if type(f) == "function" then core.mark_internal(f) end
end

return cprof
