-- bench/lines.lua -- what line events in chosen functions (`lines = {f}`) and the record-time
-- filters (`exclude`, `builtins = false`) cost or save, next to the plain profile.
--
--   eval "$(make -s env)"; lua5.4 bench/lines.lua [--quick] [--reps=9] [--n=24]
--        [--callgrind-n=16] [--no-callgrind] [--only=lines,exclude,builtins,...]
--
-- Groups of a workload and its modes, the modes timed interleaved within one process (each
-- round in a rotated order), a fresh profile per run, setup outside the timing:
--
--   lines       fib(n), method calls and calls of a small loop `f` (5-7% of the time): base,
--               cprof, lines = true, lines = {f}
--   exclude     5 Lua calls an iteration, 2 of them in a library loaded as a chunk of its own
--   exclude-2   name: base, cprof, exclude = that file; two shapes of the same calls
--   builtins    a Lua function calling 4 C functions an iteration: base, cprof,
--   builtins-2  builtins = false; 4 different ones, or 2 twice
--
-- Per mode, the median over the rounds of the round's ratio to base and to cprof, with the
-- interquartile range; then valgrind's instruction counts, a child interpreter per mode at the
-- size minus size 1, which are exact.  The child is this script with --child=GROUP/MODE.
-- Plain Lua 5.1 syntax, so the same file runs under LuaJIT.  See bench/README.md.

local script_dir = arg and arg[0] and string.match(arg[0], "^(.*)[/\\]") or "."
local W = assert(loadfile(script_dir .. "/lib/workloads.lua"))(script_dir)

local usage = W.usage("lines.lua", [[
usage: lua bench/lines.lua [options]
  --quick            3 rounds at n = 20, callgrind at n = 14, one process per count (~35 s)
  --reps=N           interleaved rounds of every mode (9)
  --n=N              size: fib(N), and as many calls in the other groups (24)
  --callgrind-n=N    the size of the instruction counts (16)
  --no-callgrind     skip the instruction counts
  --only=a,b         groups: lines,exclude,exclude-2,builtins,builtins-2 (all)
  --child=GROUP/MODE one run of that mode at --n, for the instruction counts
]])
local opts = W.side_by_side_options(arg, nil, { reps = 9, n = 24, ["callgrind-n"] = 16 },
  { reps = 3, n = 20, ["callgrind-n"] = 14 }, usage)

local cprof = require "cprof"
local jit = rawget(_G, "jit")
local fib, fib_calls = W.fib, W.fib_calls

---------------------------------------------------------------------------
-- The workloads: work(n) returns a function that runs it and returns a checksum
---------------------------------------------------------------------------

-- The function whose lines `lines = {f}` asks for: a loop of a few lines, no calls.
local function f(k)
  local s = 0
  for i = 1, k do
    local x = i * 3
    if x % 7 == 0 then
      s = s + x
    else
      s = s - 1
    end
  end
  return s
end

local F_ITERATIONS = 16   -- iterations of f's loop per call
local F_EVERY = 64        -- one call of f per this many calls of fib

local methods = W.workloads[2]

-- fib's calls / `every` iterations of body(k or i): at size n, as many calls of body as fib(n)
-- makes, over `every`.
local function loop(every, body, k)
  return function(n)
    local iterations = math.floor(fib_calls(n) / every)
    return function()
      local s = 0
      for i = 1, iterations do s = s + body(k or i) end
      return s
    end
  end
end

-- The calls of f in a program of size n, alone: f's share of the program.
local f_part = loop(F_EVERY, f, F_ITERATIONS)

local function program(n)
  local steps, fs = methods.make(math.floor(fib_calls(n) / 3)), f_part(n)
  return function() return fib(n) + steps() + fs() end
end

-- A library in a file of its own name, which the exclude mode leaves out.
local LIB_FILE = "vendor/lib.lua"
local lib = assert((loadstring or load)([[
local M = {}
function M.leaf(i) return i % 13 end
function M.step(i) return M.leaf(i) + i % 5 end
return M
]], "@" .. LIB_FILE))()

-- 5 calls an iteration below (body(i) and 4 more): as many as fib(n) makes, in all.
-- Each node of the call tree caches the links of its last 2 callees (src/tables/calltree.h), and
-- a left-out function's callees are its caller's: so the two shapes of the same 5 calls, 2 of
-- them the library's (no tail call: a tail-called function counts as its caller's caller's
-- callee).  In `flat` app_step's calls, once lib.step is left out, go to 3 functions
-- and miss that cache; in `paired` no recorded function calls more than 2.
local function app_leaf(i) return i % 11 end
local function app_step(i) return app_leaf(i) + lib.step(i) end
local function app_lib(i) return (lib.step(i)) end
local flat = loop(5, function(i) return (app_step(i)) end)
local paired = loop(5, function(i) return app_leaf(i) + app_lib(i) end)

-- A Lua function and 4 calls of C functions: 4 different ones (more than the cache holds,
-- recorded or not), or 2 different ones twice.
local byte, floor, abs, len = string.byte, math.floor, math.abs, string.len
local TEXT = "abcdefghijklmnop"
local c4 = loop(5, function(i) return byte(TEXT, i % 16 + 1) + floor(i / 3) + abs(50 - i) + len(TEXT) end)
local c2 = loop(5, function(i) return byte(TEXT, i % 16 + 1) + floor(i / 3) + byte(TEXT, i % 8 + 1)
  + floor(i / 5) end)

local function plain() return cprof.Profile() end
local function filter_modes(name, opt)
  return {
    { name = "base" },
    { name = "cprof", make = plain },
    { name = name, make = function() return cprof.Profile(opt) end },
  }
end
-- Each mode makes its profile (none for base); `lines` says which line events a mode records.
local GROUPS = {
  {
    name = "lines", work = program,
    what = "fib(n), fib's calls / 3 method steps, fib's calls / " .. F_EVERY .. " calls of f ("
      .. F_ITERATIONS .. " loop iterations)",
    modes = {
      { name = "base" },
      { name = "cprof", make = plain },
      { name = "lines=true", lines = "all", make = function() return cprof.Profile({ lines = true }) end },
      { name = "lines={f}", lines = "f", make = function() return cprof.Profile({ lines = { f } }) end },
    },
  },
  {
    name = "exclude", work = flat,
    what = "5 Lua calls an iteration, 2 in " .. LIB_FILE .. "; app_step calls app_leaf and lib.step",
    modes = filter_modes("exclude", { exclude = "^vendor/" }),
  },
  {
    name = "exclude-2", work = paired,
    what = "the same calls, the loop's body calls app_leaf and app_lib, app_lib calls lib.step",
    modes = filter_modes("exclude", { exclude = "^vendor/" }),
  },
  {
    name = "builtins", work = c4,
    what = "a Lua function calling 4 different C functions an iteration",
    modes = filter_modes("builtins=false", { builtins = false }),
  },
  {
    name = "builtins-2", work = c2,
    what = "a Lua function calling 2 different C functions twice an iteration",
    modes = filter_modes("builtins=false", { builtins = false }),
  },
}

local run = W.run_mode
local selected = W.child_or_selected(opts, GROUPS, function(g) return g.modes end, usage)
if not selected then return end

-- Line events of the lines group at size n: all of them, and f's.
local function line_events(n)
  local fn = program(n)
  local all, in_f = 0, 0
  local getinfo = debug.getinfo
  debug.sethook(function()
    all = all + 1
    if getinfo(2, "f").func == f then in_f = in_f + 1 end
  end, "l")
  fn()
  debug.sethook()
  return all, in_f
end

---------------------------------------------------------------------------
-- Timed runs
---------------------------------------------------------------------------

W.print_head("bench/lines.lua: line events in chosen functions, record-time filters", cprof, opts)
for _, g in ipairs(selected) do
  run(g.modes[#g.modes], g.work(10)) -- warm-up: the code paths and the profile's first allocations
  local times = W.interleave(g.name, g.modes, g.work(opts.n), opts.reps)
  print("")
  print(string.format("%s: %s", g.name, g.what))
  if g.name == "lines" then
    local all, in_f = line_events(opts.n)
    local fs, alone = f_part(opts.n), {}
    for r = 1, opts.reps do alone[r] = run(g.modes[1], fs) end
    print(string.format("  f: %.1f%% of the base time (its calls alone), %d of the %d line events"
      .. " (%.1f%%)", 100 * W.median(alone) / W.median(times.base), in_f, all, 100 * in_f / all))
  end
  local fmt = "  %-15s %9s  %-22s %-22s"
  print(string.format(fmt, "mode", "seconds", "/base (IQR)", "/cprof (IQR)"))
  for _, m in ipairs(g.modes) do
    print(string.format(fmt, m.name, string.format("%.4f", W.median(times[m.name])),
      W.fmt_iqr(W.ratios(times, m.name, "base")), W.fmt_iqr(W.ratios(times, m.name, "cprof"))))
  end
  io.stdout:flush()
end

---------------------------------------------------------------------------
-- Instruction counts: this script as a child (--child=GROUP/MODE) at --callgrind-n and at 1
---------------------------------------------------------------------------

local function callgrind()
  local n = opts["callgrind-n"]
  local count = W.instruction_counter(opts, arg[0])
  if not count then return end
  local all_n, f_n = line_events(n)
  local all_1, f_1 = line_events(1)
  local recorded = { all = all_n - all_1, f = f_n - f_1 }
  local fmt = "  %-10s %-15s %12s %8s %8s %14s"
  print(string.format(fmt, "group", "mode", "Ir", "/base", "/cprof", "+Ir/line event"))
  for _, g in ipairs(selected) do
    local ir = {}
    for _, m in ipairs(g.modes) do ir[m.name] = count(g.name .. "/" .. m.name) end
    for _, m in ipairs(g.modes) do
      print(string.format(fmt, g.name, m.name, ir[m.name], string.format("%.2f", ir[m.name] / ir.base),
        string.format("%.2f", ir[m.name] / ir.cprof),
        m.lines and string.format("%.0f", (ir[m.name] - ir.cprof) / recorded[m.lines]) or ""))
    end
    io.stdout:flush()
  end
  if selected[1].name == "lines" then
    print(string.format("  +Ir/line event: over cprof, per line event the mode records (%d in all,"
      .. " %d in f)", recorded.all, recorded.f))
  end
end

callgrind()
