--- cprof.auto: `lua5.4 -l cprof.auto script.lua` profiles the whole program and, when it exits
--- however it exits (the end of the script, an error, os.exit(n) with or without closing the
--- state), prints the report to stderr or writes it to a dump.
---
--- CPROF_SORT: sort keys, comma-separated (default "cumulative").
--- CPROF_LIMIT: how many rows to print (default 30; 0 or "all" for every row).
--- CPROF_OUT: write the profile to this file as a dump (%p: the process id, %%: %), and print
---   no report (as python -m cProfile -o does) unless CPROF_REPORT=1.
--- CPROF_REPORT: 1 prints the report also when CPROF_OUT is set.
--- CPROF_QUIET: 1 prints no report.
--- CPROF_CALIBRATE: 1 measures the bias model before the script starts (Profile:calibrate); save
--- also keeps it for later runs (cprof.save_calibration); 0 ignores a kept one.
--- CPROF_TIMER: the timer (tsc, monotonic, cpu, thread, counter, or one a host registered).
--- CPROF_LINES: 1 records line events too (hits and time per source line: cprof-stats --lines).
--- CPROF_TRACE: 1 records the time line too (Profile{trace = true}: cprof-stats --export chrome).
--- CPROF_PID: set by cprof.auto to the process that started profiling; a process started by
---   it (a program that runs itself again inherits `-l cprof.auto`) is profiled too, and
---   writes its dump to CPROF_OUT with its process id added (".%p") unless the name has %p.
---
--- Nothing here reads the program's tables through their metamethods, or needs the globals the
--- program may change: what is used at exit is kept here when the module loads.

-- Under a Lua cprof is not built for, or with the build for the other Lua on the C path: one
-- sentence and exit status 1, before the script runs (not an interpreter's traceback).
do
  local ok, err = pcall(require("cprof.version").core)
  if not ok then
    io.stderr:write("cprof.auto: ", (tostring(err):gsub("^cprof: ", "")), "\n")
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

local io, getenv, exit, pcall, tostring, tonumber = io, os.getenv, os.exit, pcall, tostring, tonumber

local function say(msg)
  io.stderr:write("cprof: ", msg, "\n")
end

-- A setting that is on: any value but unset, empty or "0".
local function flag(name)
  local v = getenv(name)
  return v ~= nil and v ~= "" and v ~= "0"
end

-- CPROF_TIMER names the timer; one that cannot be had is reported and the default is used.
-- CPROF_LINES=1 adds line events, CPROF_TRACE=1 the time line.
local function new_profile()
  local lines = getenv("CPROF_LINES") == "1" or nil
  local trace = getenv("CPROF_TRACE") == "1" or nil
  local name = getenv("CPROF_TIMER")
  if name == nil or name == "" then return cprof.Profile { lines = lines, trace = trace } end
  local ok, p = pcall(cprof.Profile, { timer = name, lines = lines, trace = trace })
  if ok then return p end
  say("CPROF_TIMER: " .. tostring(p):gsub("^cprof: ", "") .. "; using the default timer")
  return cprof.Profile { lines = lines, trace = trace }
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
  for k in s:gmatch("[^,%s]+") do keys[#keys + 1] = tonumber(k) or k end
  local err = report.sort_error(keys)
  if err then
    say(("CPROF_SORT=%s: %s; sorting by cumulative time"):format(s, (err:gsub("^cprof%.stats: ", ""))))
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
    say(("CPROF_LIMIT must be a whole number or 'all', not '%s'; printing 30 rows"):format(s))
    return 30
  end
  return n
end

--- The CPROF_OUT path with %p replaced by the process id and %% by %; a child's has its process
--- id added when the name has no %p, so that it never writes over the dump of its parent.
local function out_path(s)
  local has_pid = false
  local path = s:gsub("%%([%%p]?)", function(c)
    if c == "p" then
      has_pid = true
      return tostring(pid)
    end
    return "%"
  end)
  if pid ~= root and not has_pid then path = path .. "." .. tostring(pid) end
  return path
end

local function finish()
  if reported then return end
  reported = true
  prof:disable()
  local out = getenv("CPROF_OUT")
  local has_out = out ~= nil and out ~= ""
  if has_out then
    local ok, err = pcall(prof.dump_stats, prof, out_path(out))
    if not ok then io.stderr:write((tostring(err):gsub("\n", " ")), "\n") end
  end
  if not flag("CPROF_REPORT") and (has_out or flag("CPROF_QUIET")) then return end
  local ok, err = pcall(report.print, prof:report_data(), { sort = sort_keys(), limit = row_limit(),
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

-- CPROF_CALIBRATE=1: measure the bias model first (about a second), so that the report
-- subtracts it; =save: the same, and keep it for this machine (cprof.save_calibration), which
-- later profiles of the same timer use without being asked.
local calibrate = getenv("CPROF_CALIBRATE")
if calibrate == "1" then
  local ok, err = pcall(prof.calibrate, prof)
  if not ok then say("CPROF_CALIBRATE: " .. tostring(err)) end
elseif calibrate == "save" then
  local ok, path, m = pcall(cprof.save_calibration, prof:snapshot().meta.timer)
  if ok then
    prof:bias(m)
    say("CPROF_CALIBRATE=save: the bias model is kept in " .. path)
  else
    say("CPROF_CALIBRATE: " .. tostring(path))
  end
end

prof:enable()

return { profile = prof, at_close = at_close }
