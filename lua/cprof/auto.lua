--- cprof.auto: `lua5.4 -l cprof.auto script.lua` profiles the whole program and, when it exits
--- however it exits (the end of the script, an error, os.exit(n) with or without closing the
--- state), prints the report to stderr or writes it to a dump.
---
--- CPROF_SORT: sort keys, comma-separated (default "cumulative").
--- CPROF_LIMIT: how many rows to print (default 30; 0 or "all" for every row).
--- CPROF_OUT: write the profile to this file as a dump (%p: the process id, %n: the dump's
---   number in 8 digits, %%: %), and print no report (as python -m cProfile -o does) unless CPROF_REPORT=1.
--- CPROF_SIGNAL: USR1, USR2 or HUP: on that signal, write a dump while the program runs (to
---   CPROF_OUT, or cprof.%p.%n.prof), when a function next returns.
--- CPROF_INTERVAL: write one such dump every this many seconds.
--- CPROF_RESET: 1 zeroes the numbers after each dump: each file covers one interval.
--- CPROF_EXCLUDE, CPROF_INCLUDE: Lua patterns on file names, separated by ';': functions of
---   excluded files (or of files no include pattern finds) are not recorded; their time is
---   their nearest recorded caller's.  CPROF_BUILTINS=0: C functions are not recorded.
--- CPROF_REPORT: 1 prints the report also when CPROF_OUT is set.
--- CPROF_QUIET: 1 prints no report.
--- CPROF_CALIBRATE: 1 measures the bias model before the script starts (Profile:calibrate); save
--- measures the machine's in CPROF_CALIBRATE_PROCESSES (default 5) fresh processes and keeps it
--- for later runs (cprof.save_calibration); 0 ignores a kept one.
--- CPROF_TIMER: the timer (tsc, monotonic, cpu, thread, counter, or one a host registered).
--- CPROF_LINES: 1 records line events too (hits and time per source line: cprof-stats --lines).
--- CPROF_TRACE: 1 records the time line too (Profile{trace = true}: cprof-stats --export chrome).
--- CPROF_RECURSION: how many nested calls of one function a path of the call tree keeps
---   (Profile{recursion = N}, default 64); 1 folds every recursion into its outer call.
--- CPROF_PID: set by cprof.auto to the process that started profiling; a process started by
---   it (a program that runs itself again inherits `-l cprof.auto`) is profiled too, and
---   writes its dump to CPROF_OUT with its process id added (".%p") unless the name has %p.
--- A program that never ran (no script, or one Lua could not load) gets no report and no dump.
---
--- Nothing here reads the program's tables through their metamethods, or needs the globals the
--- program may change: what is used at exit is kept here when the module loads.

local _ENV = require("cprof.env")()

-- Under a Lua cprof is not built for, or with the build for the other Lua on the C path: one
-- sentence and exit status 1, before the script runs (not an interpreter's traceback).
do
  local ok, err = pcall(require("cprof.version").core)
  if not ok then
    io.stderr:write("cprof.auto: ", (string.gsub(tostring(err), "^cprof: ", "")), "\n")
    os.exit(1)
  end
end

-- CPROF_MEMORY=1: cprof's allocator (cprof.memory, docs/MEMORY.md) for the whole program,
-- installed first, before anything else here or in the script allocates.
if os.getenv("CPROF_MEMORY") == "1" then
  local ok, err = pcall(require("cprof.memory").install)
  if not ok then io.stderr:write("cprof: CPROF_MEMORY=1: ", tostring(err), "\n") end
end

local cprof = require "cprof"
local core = require("cprof.version").core()
local report = require "cprof.report"
local bias = require "cprof.bias"

local io, getenv, exit, pcall, tostring, tonumber, pairs = io, os.getenv, os.exit, pcall, tostring, tonumber, pairs

local function say(msg)
  io.stderr:write("cprof: ", msg, "\n")
end

-- A setting that is on: any value but unset, empty or "0".
local function flag(name)
  local v = getenv(name)
  return v ~= nil and v ~= "" and v ~= "0"
end

-- A list setting: its items, separated by ';' (nil when unset or empty).
local function list(name)
  local v = getenv(name)
  if v == nil or v == "" then return nil end
  local items = {}
  for item in string.gmatch(v, "[^;]+") do items[#items + 1] = item end
  return items
end

-- CPROF_RECURSION as Profile's option `recursion`, nil when unset; a bad one is reported (in
-- Profile's words) and the default is used.
local function recursion()
  local v = getenv("CPROF_RECURSION")
  if v == nil or v == "" then return nil end
  local n = tonumber(v)
  local ok, err = pcall(cprof.Profile, { recursion = n or v })
  if ok then return n end
  say("CPROF_RECURSION: " .. string.gsub(tostring(err), "^cprof: ", "") .. "; using the default")
end
-- The file patterns the profile was made with ({ exclude, include }), or nil.
local file_filters

-- CPROF_TIMER names the timer; one that cannot be had is reported and the default is used.
-- CPROF_LINES=1 adds line events, CPROF_TRACE=1 the time line, CPROF_RECURSION the recursion
-- the call tree keeps; the filters are CPROF_EXCLUDE, CPROF_INCLUDE, CPROF_BUILTINS. A bad
-- filter is reported and the profile is made without filters.
local function new_profile()
  local opts = { lines = getenv("CPROF_LINES") == "1" or nil,
                 trace = getenv("CPROF_TRACE") == "1" or nil, recursion = recursion() }
  local filters = { exclude = list("CPROF_EXCLUDE"), include = list("CPROF_INCLUDE"),
                    builtins = getenv("CPROF_BUILTINS") ~= "0" }
  for k, v in pairs(filters) do opts[k] = v end
  local ok, err = pcall(cprof.Profile, opts)
  if not ok then
    say("CPROF_EXCLUDE/CPROF_INCLUDE: " .. string.gsub(tostring(err), "^cprof: ", "") .. "; recording every function")
    for k in pairs(filters) do opts[k] = nil end
  elseif filters.exclude or filters.include then
    file_filters = { exclude = filters.exclude, include = filters.include }
  end
  local name = getenv("CPROF_TIMER")
  if name == nil or name == "" then return cprof.Profile(opts) end
  opts.timer = name
  local p
  ok, p = pcall(cprof.Profile, opts)
  if ok then return p end
  say("CPROF_TIMER: " .. string.gsub(tostring(p), "^cprof: ", "") .. "; using the default timer")
  opts.timer = nil
  return cprof.Profile(opts)
end

local prof = new_profile()
local reported = false

-- The process that started profiling; a process it started (and any below) is a child.
local pid = cprof.getpid()
local root = tonumber(getenv("CPROF_PID") or "")
if root == nil then
  root = pid
  pcall(core.setenv, "CPROF_PID", tostring(pid))
end

-- CPROF_SORT, checked: a bad one is reported and cumulative is used.
local function sort_keys()
  local s = getenv("CPROF_SORT")
  if s == nil or s == "" then return { "cumulative" } end
  local keys = {}
  for k in string.gmatch(s, "[^,%s]+") do keys[#keys + 1] = tonumber(k) or k end
  local err = report.sort_error(keys)
  if err then
    say(string.format("CPROF_SORT=%s: %s; sorting by cumulative time", s, (string.gsub(err, "^cprof%.stats: ", ""))))
    return { "cumulative" }
  end
  return keys
end

local function row_limit()
  local s = getenv("CPROF_LIMIT")
  if s == nil or s == "" then return 30 end
  if s == "all" or s == "0" then return nil end
  local n = tonumber(s)
  if not n or n < 0 or n % 1 ~= 0 then
    say(string.format("CPROF_LIMIT must be a whole number or 'all', not '%s'; printing 30 rows", s))
    return 30
  end
  return n
end

--- The CPROF_OUT path of dump number `seq` (cprof.dump_name); a child's has its process id
--- added when the name has no %p, so that it never writes over the dump of its parent.
local function out_path(s, seq)
  local path = cprof.dump_name(s, seq)
  if pid ~= root and not string.find(string.gsub(s, "%%%%", ""), "%%p") then path = path .. "." .. tostring(pid) end
  return path
end

-- CPROF_SIGNAL, CPROF_INTERVAL, CPROF_RESET: live dumps (Profile:live), or nil.
local live
do
  local sig, every = getenv("CPROF_SIGNAL"), getenv("CPROF_INTERVAL")
  if sig == "" then sig = nil end
  local seconds = every ~= nil and every ~= "" and tonumber(every) or nil
  if every ~= nil and every ~= "" and not (seconds and seconds > 0) then
    say(string.format("CPROF_INTERVAL must be a positive number of seconds, not '%s'", every))
  end
  if sig or seconds then
    local out = getenv("CPROF_OUT")
    if out == nil or out == "" then out = "cprof.%p.%n.prof" end
    local ok, h = pcall(prof.live, prof, { file = function(n) return out_path(out, n) end,
                                          signal = sig, interval = seconds,
                                          reset = flag("CPROF_RESET") })
    if ok then live = h else say((string.gsub(tostring(h), "^cprof: ", ""))) end
  end
end

-- The script, as lua5.4 was given it (a function's file in the profile), or nil.
local script
do
  local a = rawget(_G, "arg")
  script = type(a) == "table" and type(rawget(a, 0)) == "string" and rawget(a, 0) or nil
end

-- Why CPROF_EXCLUDE or CPROF_INCLUDE leaves `file` out, or nil when they keep it (filters.c's
-- rule: an exclude pattern finds it, or no include pattern does).
local function left_out_by(file)
  for _, pat in ipairs(file_filters.exclude or {}) do
    if string.find(file, pat) then return "CPROF_EXCLUDE's '" .. pat .. "'" end
  end
  if file_filters.include then
    for _, pat in ipairs(file_filters.include) do
      if string.find(file, pat) then return nil end
    end
    return "no pattern of CPROF_INCLUDE"
  end
end

-- When the file filters left nothing to record (data d has no call), the sentence that says so
-- and which pattern found which file, the script first; nil otherwise.
local function nothing_recorded(d)
  local f = d.frames
  for i = 1, f.n do
    if f.ncalls[i] > 0 then return nil end
  end
  local reasons, files, seen = {}, {}, {}
  for i = 1, f.n do
    local file = f.file[i]
    local why = f.kind[i] ~= "C" and not seen[file] and left_out_by(file)
    seen[file] = true
    if why then
      if not files[why] then
        reasons[#reasons + 1], files[why] = why, {}
      end
      local list = files[why]
      if file == script then table.insert(list, 1, file .. " (the script)")
      else list[#list + 1] = file end
    end
  end
  if #reasons == 0 then return nil end
  local parts = {}
  for i, why in ipairs(reasons) do
    local list = files[why]
    local shown = {}
    for k = 1, math.min(#list, 3) do shown[k] = list[k] end
    if #list > 3 then shown[#shown + 1] = string.format("%d more files", #list - 3) end
    parts[i] = why .. " found " .. table.concat(shown, ", ")
  end
  return "the file filters left nothing to record: " .. table.concat(parts, "; ")
    .. " (Lua patterns, found anywhere in the file names above: '^/usr/share/lua/' takes one folder)"
end

local function finish()
  if reported then return end
  reported = true
  prof:disable()
  if live then live:stop() end
  local d = prof:snapshot()
  -- No function ever ran: lua5.4 could not load the script (it has said why) or had none; a
  -- report or dump of nothing would only bury its message.
  if d.frames.n == 0 then return end
  -- (with live dumps that reset, the last interval may hold no call of its own)
  if file_filters and not (live and live.reset) then
    local why = nothing_recorded(d)
    if why then say(why) end
  end
  local out = getenv("CPROF_OUT")
  local has_out = out ~= nil and out ~= ""
  if has_out then
    local ok, err
    if live then ok, err = pcall(live.dump, live)
    else ok, err = pcall(prof.dump_stats, prof, out_path(out, 1)) end
    if not ok then io.stderr:write((string.gsub(tostring(err), "\n", " ")), "\n") end
  end
  if not flag("CPROF_REPORT") and (has_out or flag("CPROF_QUIET")) then return end
  local ok, err = pcall(report.print, bias.apply(d), { sort = sort_keys(), limit = row_limit(),
                                                     stream = io.stderr })
  if not ok then say("could not print the report: " .. tostring(err)) end
end

local function exit_after_report(...)
  finish()
  return exit(...)
end
os.exit = exit_after_report

-- Created after the profile, so its finalizer runs first when the state closes. LuaJIT calls
-- finalizers of userdata only.
local at_close
if newproxy then
  at_close = newproxy(true)
  getmetatable(at_close).__gc = finish
else
  at_close = setmetatable({}, { __gc = finish })
end

core.mark_internal(finish)
core.mark_internal(exit_after_report)

-- CPROF_CALIBRATE=1: measure the bias model first (a few seconds), so that the report
-- subtracts it; =save: measure the machine's, in several processes, and keep it
-- (cprof.save_calibration), which later profiles of the same timer use without being asked.
local calibrate = getenv("CPROF_CALIBRATE")
if calibrate == "1" then
  local ok, err = pcall(prof.calibrate, prof)
  if not ok then say("CPROF_CALIBRATE: " .. tostring(err)) end
elseif calibrate == "save" then
  -- CPROF_CALIBRATE_PROCESSES: how many processes measure the machine's model
  local k, s = nil, getenv("CPROF_CALIBRATE_PROCESSES")
  if s and s ~= "" then
    k = tonumber(s)
    if not k or k < 1 or k % 1 ~= 0 then
      say(string.format("CPROF_CALIBRATE_PROCESSES must be a whole number, 1 or more, not '%s'; using %d", s, require("cprof.calibrate").PROCESSES))
      k = nil
    end
  end
  local timer, started = prof:snapshot().meta.timer, os.time()
  -- (without a folder to keep it in, save_calibration says so and measures nothing)
  if require("cprof.calibrate").dir() then
    say(string.format("CPROF_CALIBRATE=save: measuring this machine's bias model of timer %s,"
      .. " in fresh processes one after the other (a line as each ends)", timer))
  end
  -- one line per process: a calibration takes seconds each, minutes with the cpu or thread timer
  local function progress(i, of, model, again)
    local kinds = {}
    for j, kind in ipairs(bias.KINDS) do
      kinds[j] = string.format("%s %.1f", kind, model and model[kind] * 1e9 or 0)
    end
    say(string.format("CPROF_CALIBRATE=save: process %d of %d%s done, %d s so far (ns: %s)", i, of,
      again and " (again: it ran slow)" or "", os.difftime(os.time(), started),
      table.concat(kinds, ", ")))
  end
  local ok, path, m = pcall(cprof.save_calibration, timer, nil, k, progress)
  if ok then
    prof:bias(m)
    say("CPROF_CALIBRATE=save: the bias model is kept in " .. path)
  else
    say("CPROF_CALIBRATE: " .. tostring(path))
  end
end

prof:enable()

--- Stops this profile for good, with no report or dump at exit: another profile of the whole
--- program takes over (cprof.busted makes one with its own filters).
local function handover()
  reported = true
  prof:disable()
  if live then live:stop() end
end

return { profile = prof, at_close = at_close, live = live, handover = handover }
