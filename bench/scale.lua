-- bench/scale.lua -- does cprof stay linear on the shapes real programs have?
--
--   make && eval "$(make -s env)"
--   lua5.4 bench/scale.lua [--quick] [--only=unnamed,globals,...] [--reps=1]
--
-- Each case runs at three sizes a decade apart (deep_yield also at 100), each size in a child
-- interpreter of its own, unprofiled and profiled (cprof.Profile() with its default timer,
-- enable, the whole case, disable, and snapshot() as a report would): CPU time (os.clock) of
-- that part and the process's peak resident memory (VmHWM). It prints both side by side and the
-- growth exponent between sizes, log(t2/t1) / log(n2/n1): 1 is linear, 2 quadratic. See
-- bench/README.md.
--
--   unnamed          load(src) of one chunk with no chunk name defining n functions, each called
--   globals          n global functions, each first called from pcall
--   main_chunk       a file whose main chunk of n lines defines and calls n functions (issue 17)
--   short_coroutines n coroutines, each resumed until it finishes
--   abandoned        n coroutines, each resumed once, left suspended and collected
--   deep_yield       20,000 yields of a coroutine n calls deep (time of the yields only)
--   deep_recursion   one recursion n levels deep
--   steady           a loop of small calls running n seconds (unprofiled)

local script = arg and arg[0] or "bench/scale.lua"

---------------------------------------------------------------------------------------------
-- The child: one case at one size, in one mode

local function peak_kb()
  local f = io.open("/proc/self/status")
  if not f then return 0 end
  local s = f:read("*a")
  f:close()
  return tonumber(s:match("VmHWM:%s*(%d+)")) or 0
end

local function calls_source(n, sep)
  local parts = {}
  for i = 1, n do parts[i] = "function() return " .. i .. " end" end
  return "return {" .. table.concat(parts, sep) .. "}"
end

-- Each returns a function that runs the case (a whole script: everything it does is measured),
-- and optionally one to clean up and one to run first, unmeasured (deep_yield).
local cases = {}

function cases.unnamed(n)
  return function()
    local fs = load(calls_source(n, ",\n") .. "\n")()
    for i = 1, n do fs[i]() end
  end
end

function cases.globals(n)
  return function()
    local names = {}
    for i = 1, n do
      names[i] = "scale_global_" .. i
      _G[names[i]] = load("return function() return " .. i .. " end", "=g" .. i)()
    end
    for i = 1, n do pcall(_G[names[i]]) end
  end
end

function cases.main_chunk(n)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  for i = 1, n do f:write("function scale_f", i, "() return ", i, " end scale_f", i, "()\n") end
  f:close()
  return function() dofile(path) end, function() os.remove(path) end
end

-- n coroutines of `body`, each resumed once.
local function coroutines(body)
  return function(n)
    local create, resume = coroutine.create, coroutine.resume
    return function()
      for _ = 1, n do resume(create(body)) end
    end
  end
end

cases.short_coroutines = coroutines(function() return 1 end)
cases.abandoned = coroutines(function() coroutine.yield() end)

local YIELDS = 20000
local function down(k)
  if k > 0 then return down(k - 1) + 0 end
  for _ = 1, YIELDS do coroutine.yield() end
  return 0
end
-- Only the yields are timed: the coroutine first goes n calls deep and yields once.
function cases.deep_yield(n)
  local co = coroutine.create(function() coroutine.yield() return down(n) end)
  return function()
    for _ = 1, YIELDS do coroutine.resume(co) end
  end, nil, function() coroutine.resume(co) coroutine.resume(co) end
end

local function rec(k) if k == 0 then return 0 end return 1 + rec(k - 1) end
function cases.deep_recursion(n)
  return function() rec(n) end
end

local function add(a, b) return a + b end
local function step(s, i) return add(s, i % 7) end
-- n seconds of the unprofiled loop: the parent measured how many iterations that is.
function cases.steady(n, rate)
  local iters = math.floor(n * rate)
  return function()
    local s = 0
    for i = 1, iters do s = step(s, i) end
    return s
  end
end

local function child(name, n, mode, rate)
  local run, cleanup, warm = cases[name](n, rate)
  collectgarbage()
  local p
  if mode == "cprof" then
    p = require("cprof").Profile()
    p:enable()
  end
  if warm then warm() end
  local c0 = os.clock()
  run()
  local c1 = os.clock()
  if p then
    p:disable()
    p:snapshot()
  end
  local c2 = os.clock()
  if cleanup then cleanup() end
  -- deep_yield times the yields alone; the others include disable() and the report's snapshot.
  local t = name == "deep_yield" and c1 - c0 or c2 - c0
  io.write(string.format("time %.6f peak %d\n", t, peak_kb()))
end

if arg and arg[1] == "--child" then
  child(arg[2], tonumber(arg[3]), arg[4], tonumber(arg[5]))
  return
end

---------------------------------------------------------------------------------------------
-- The parent

local opts = { quick = false, reps = 1 }
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^%-%-([%w-]+)=(.*)$")
  if a == "--quick" then opts.quick = true
  elseif k == "only" then
    opts.only = {}
    for w in v:gmatch("[^,]+") do opts.only[w] = true end
  elseif k == "reps" then opts.reps = math.max(1, math.floor(tonumber(v) or 1))
  else
    io.stderr:write("usage: lua bench/scale.lua [--quick] [--only=case,...] [--reps=N]\n")
    os.exit(2)
  end
end

local ORDER = { "unnamed", "globals", "main_chunk", "short_coroutines", "abandoned", "deep_yield",
                "deep_recursion", "steady" }
local SIZES = {
  unnamed = { 1000, 10000, 100000 },
  globals = { 1000, 10000, 100000 },
  main_chunk = { 500, 5000, 50000 },
  short_coroutines = { 10000, 100000, 1000000 },
  abandoned = { 10000, 100000, 1000000 },
  deep_yield = { 100, 1000, 10000, 100000 },
  deep_recursion = { 1000, 10000, 100000 },
  steady = { 0.6, 6, 60 },
}
if opts.quick then
  SIZES.unnamed = { 100, 1000, 10000 }
  SIZES.globals = { 100, 1000, 10000 }
  SIZES.main_chunk = { 50, 500, 5000 }
  SIZES.short_coroutines = { 1000, 10000, 100000 }
  SIZES.abandoned = { 1000, 10000, 100000 }
  SIZES.steady = { 0.06, 0.6, 6 }
end

local interp = arg[-1] or "lua5.4"

local function sh(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function run_child(name, n, mode, rate)
  local cmd = string.format("%s %s --child %s %s %s %s", sh(interp), sh(script), name,
                            tostring(n), mode, tostring(rate or 0))
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("*a")
  p:close()
  local t, kb = out:match("time (%S+) peak (%d+)")
  if not t then error(name .. " " .. n .. " " .. mode .. " failed:\n" .. out, 0) end
  return tonumber(t), tonumber(kb)
end

local function median(list)
  table.sort(list)
  return list[math.floor((#list + 1) / 2)]
end

-- The steady case's loop rate, unprofiled, in this process.
local function steady_rate()
  local s, iters, c0 = 0, 0, os.clock()
  repeat
    for i = 1, 100000 do s = step(s, i) end
    iters = iters + 100000
  until os.clock() - c0 > 0.2
  return iters / (os.clock() - c0)
end

print("cprof scale benchmark (bench/scale.lua)")
print("Lua: " .. _VERSION .. ", interpreter " .. interp .. (opts.quick and ", --quick" or ""))
print(string.format("each size in a child process, median of %d; time: CPU seconds (os.clock);"
  .. " peak: VmHWM", opts.reps))
print("")

local fmt = "%-17s %9s %9s %9s %7s %9s %9s %9s %7s %7s"
print(string.format(fmt, "case", "size", "base s", "cprof s", "ratio", "base MB", "cprof MB",
  "+MB", "t exp", "mem exp"))
print(string.rep("-", 102))

local rate = steady_rate()
local results = {}
for _, name in ipairs(ORDER) do
  if not opts.only or opts.only[name] then
    local rows = {}
    for i, n in ipairs(SIZES[name]) do
      local r = { n = n }
      for _, mode in ipairs({ "base", "cprof" }) do
        local ts, ks = {}, {}
        for k = 1, opts.reps do ts[k], ks[k] = run_child(name, n, mode, rate) end
        r[mode] = { t = median(ts), kb = median(ks) }
      end
      r.ratio = r.cprof.t / math.max(r.base.t, 1e-6)
      r.extra = (r.cprof.kb - r.base.kb) / 1024
      local texp, mexp = "", ""
      local prev = rows[i - 1]
      if prev then
        local f = math.log(n / prev.n)
        texp = string.format("%.2f", math.log(math.max(r.cprof.t, 1e-6) / math.max(prev.cprof.t, 1e-6)) / f)
        mexp = string.format("%.2f", math.log(math.max(r.extra, 0.1) / math.max(prev.extra, 0.1)) / f)
      end
      rows[i] = r
      print(string.format(fmt, i == 1 and name or "", tostring(n), string.format("%.3f", r.base.t),
        string.format("%.3f", r.cprof.t), string.format("%.2fx", r.ratio),
        string.format("%.1f", r.base.kb / 1024), string.format("%.1f", r.cprof.kb / 1024),
        string.format("%+.1f", r.extra), texp, mexp))
      io.stdout:flush()
    end
    results[name] = rows
  end
end

-- The issue's bounds (docs: bench/README.md).
local function row(name, n)
  for _, r in ipairs(results[name] or {}) do if r.n == n then return r end end
end
local checks = {}
local function check(what, ok) checks[#checks + 1] = string.format("  %-66s %s", what, ok and "met" or "NOT met") end
if not opts.quick then
  local r = row("unnamed", 100000)
  if r then check("unnamed chunk, 100,000 functions: +MB <= 100, time <= 5x", r.extra <= 100 and r.ratio <= 5) end
  r = row("globals", 10000)
  if r then check("10,000 globals first called from pcall: time <= 5x", r.ratio <= 5) end
  r = row("main_chunk", 50000)
  if r then check("50,000-function main chunk: time <= 5x", r.ratio <= 5) end
  for _, name in ipairs({ "short_coroutines", "abandoned" }) do
    r = row(name, 1000000)
    if r then check("1,000,000 " .. name:gsub("_", " ") .. ": +MB <= 32, time <= 5x", r.extra <= 32 and r.ratio <= 5) end
  end
  local deep, shallow = row("deep_yield", 100000), row("deep_yield", 100)
  if deep and shallow then
    check("yields 100,000 deep within 2x of 100 deep (profiled)", deep.cprof.t <= 2 * shallow.cprof.t)
  end
end
if #checks > 0 then
  print("")
  print("Bounds (hot-path issue, Acceptance):")
  for _, c in ipairs(checks) do print(c) end
end
