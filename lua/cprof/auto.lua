--- cprof.auto: `lua5.4 -l cprof.auto script.lua` profiles the whole program and prints the
--- report to stderr when it exits, however it exits: the end of the script, an error,
--- os.exit(n) with or without closing the state.
---
--- CPROF_SORT: sort keys, comma-separated (default "cumulative").
--- CPROF_LIMIT: how many rows to print (default 30; 0 or "all" for every row).
--- CPROF_OUT: also write the profile to this file as a dump (%p: the process id, %%: %).
--- CPROF_QUIET: 1 prints no report (with CPROF_OUT: only the dump is written).
--- CPROF_CALIBRATE: 1 measures the bias per event before the script starts (Profile:calibrate).
--- CPROF_TIMER: the timer (tsc, monotonic, cpu, thread, counter, or one a host registered).
--- CPROF_LINES: 1 records line events too (hits and time per source line: cprof-stats --lines).

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

-- CPROF_TIMER names the timer; one that cannot be had is reported and the default is used.
-- CPROF_LINES=1 adds line events.
local function new_profile()
  local lines = os.getenv("CPROF_LINES") == "1" or nil
  local name = os.getenv("CPROF_TIMER")
  if name == nil or name == "" then return cprof.Profile { lines = lines } end
  local ok, p = pcall(cprof.Profile, { timer = name, lines = lines })
  if ok then return p end
  io.stderr:write("cprof: CPROF_TIMER: ", tostring(p), "; using the default timer\n")
  return cprof.Profile { lines = lines }
end

local prof = new_profile()
local reported = false

local function say(msg)
  io.stderr:write("cprof: ", msg, "\n")
end

local function sort_keys()
  local s = os.getenv("CPROF_SORT")
  if s == nil or s == "" then return { "cumulative" } end
  local keys = {}
  for k in s:gmatch("[^,%s]+") do keys[#keys + 1] = tonumber(k) or k end
  return keys
end

local function row_limit()
  local s = os.getenv("CPROF_LIMIT")
  if s == nil or s == "" then return 30 end
  if s == "all" or s == "0" then return nil end
  local n = tonumber(s)
  if not n or n < 0 or n % 1 ~= 0 then
    say(("CPROF_LIMIT must be a whole number or 'all', not '%s'; printing 30 rows"):format(s))
    return 30
  end
  return n
end

--- The CPROF_OUT path with %p replaced by the process id and %% by %.
local function out_path(s)
  return (s:gsub("%%([%%p]?)", function(c)
    if c == "p" then return tostring(cprof.getpid()) end
    return "%"
  end))
end

local function quiet()
  local q = os.getenv("CPROF_QUIET")
  return q ~= nil and q ~= "" and q ~= "0"
end

local function finish()
  if reported then return end
  reported = true
  prof:disable()
  local out = os.getenv("CPROF_OUT")
  if out ~= nil and out ~= "" then
    local ok, err = pcall(prof.dump_stats, prof, out_path(out))
    if not ok then io.stderr:write((tostring(err):gsub("\n", " ")), "\n") end
  end
  if quiet() then return end
  local stats = prof:report_data()
  local ok, err = pcall(report.print, stats, { sort = sort_keys(), limit = row_limit(),
                                               stream = io.stderr })
  if not ok then
    say("CPROF_SORT: " .. tostring(err) .. "; sorting by cumulative time")
    ok, err = pcall(report.print, stats, { sort = "cumulative", limit = row_limit(),
                                          stream = io.stderr })
    if not ok then say("could not print the report: " .. tostring(err)) end
  end
end

local exit = os.exit
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

-- CPROF_CALIBRATE=1: measure the bias per event first (a few milliseconds), so that the
-- report subtracts it.
if os.getenv("CPROF_CALIBRATE") == "1" then
  local ok, err = pcall(prof.calibrate, prof)
  if not ok then io.stderr:write("cprof: CPROF_CALIBRATE: ", tostring(err), "\n") end
end

prof:enable()

return { profile = prof, at_close = at_close }
