-- bench/accuracy.lua -- how close are cprof's times to the program's real ones?
--
--   make bench
--   eval "$(make -s env)"; lua5.4 bench/accuracy.lua [--quick] [--reps=5] [--target=0.3]
--        [--budget=50] [--slow-budget=20] [--only=fib,split] [--timers=tsc,monotonic]
--
-- For each workload of bench/overhead.lua (bench/lib/workloads.lua) and each
-- timer, the same function runs unprofiled, timed with the profile's own timer
-- (p:now()), and under cprof (p:runcall).  The total cprof reports (the sum of
-- every function's tottime) is compared with the unprofiled time, without
-- calibration (bias 0: the raw numbers, p:snapshot()) and with it (the bias
-- that p:calibrate() measured, subtracted by p:report_data()).
--
-- Then a workload with a known split: root() calls arith(), a loop of pure
-- arithmetic (one call), and calls(), a loop that makes four calls of tiny
-- functions per iteration.  Each part is timed alone, unprofiled (root(k, 0)
-- and root(0, m)); its share of the sum is compared with the share of its
-- cumtime that cprof reports for root(k, m).
--
-- Goal: after calibration every reported total, time and share is within 10%
-- of the unprofiled one.  Plain Lua 5.1 syntax, so the same file runs under
-- LuaJIT (where the whole script runs with the JIT off: cprof profiles
-- interpreted code, so that is what the unprofiled runs must be too).

local script_dir = arg and arg[0] and string.match(arg[0], "^(.*)[/\\]") or "."
local W = assert(loadfile(script_dir .. "/lib/workloads.lua"))(script_dir)
local median = W.median

local GOAL = 0.10            -- |error| after calibration
local SLOW_READ_NS = 150     -- timers slower than this per read get the slow budget
local ALL_TIMERS = { "tsc", "monotonic", "cpu", "thread" }

local defaults = { reps = 5, target = 0.3, budget = 50, ["slow-budget"] = 20 }
local quick = { reps = 3, target = 0.06, budget = 8, ["slow-budget"] = 4 }

local usage = W.usage("accuracy.lua", [[
usage: lua bench/accuracy.lua [options]
  --quick            small sizes and budgets (~15 s instead of ~80 s)
  --reps=N           unprofiled and profiled runs per workload, medians (5)
  --target=SECONDS   size each workload so the unprofiled run takes this (0.3)
  --budget=SECONDS   rough limit for the runs with the fast timers (50)
  --slow-budget=S    the same for the system-call timers cpu and thread (20)
  --only=a,b         workloads: fib,methods,strings,coro,split (all)
  --timers=a,b       timers: tsc,monotonic,cpu,thread (all available)
]])

local opts = W.options(arg, {
  reps = "number", target = "number", budget = "number", ["slow-budget"] = "number",
  only = "set", timers = "set", quick = "flag",
}, defaults, quick, usage)

local first_line = W.first_line

local ok_cprof, cprof = pcall(require, "cprof")
if not ok_cprof or type(cprof) ~= "table" then
  print("cprof accuracy benchmark (bench/accuracy.lua)")
  print("cprof: NOT AVAILABLE - require \"cprof\" failed: " .. first_line(cprof))
  print("       (build it and set the paths: make && eval \"$(make -s env)\")")
  os.exit(1)
end

local jit = rawget(_G, "jit")
if jit then
  jit.off()
  jit.flush()
end
local cpu_clock = os.clock

---------------------------------------------------------------------------
-- The known split
---------------------------------------------------------------------------

-- Pure arithmetic: no call inside the loop.
local function arith(k)
  local x, y = 0.5, 0
  for i = 1, k do
    x = x * 1.000001 + 0.25
    if x > 2 then x = x - 1.5 end
    y = y + i % 3
  end
  return x + y
end

-- Many tiny functions: four calls per iteration (t3 calls t1 again).
local function t1(a) return a + 1 end
local function t2(a) return a * 2 % 1000003 end
local function t3(a) return t1(a) - 1 end
local function calls(m)
  local s = 1
  for _ = 1, m do s = t3(t2(t1(s))) end
  return s
end

local function root(k, m)
  local a = arith(k)
  local b = calls(m)
  return a + b
end

local SPLIT_PARTS = { { name = "arith", fn = arith }, { name = "calls", fn = calls } }

---------------------------------------------------------------------------
-- Timers
---------------------------------------------------------------------------

local timers, timer_notes, default_timer = W.timers(cprof, ALL_TIMERS, opts.timers, usage,
  function(t, p)
    t.probe = p
    t.slow = W.read_cost(p, 100000) * 1e9 > SLOW_READ_NS
  end)
if #timers == 0 then usage("no timer to measure with") end

---------------------------------------------------------------------------
-- Measuring
---------------------------------------------------------------------------

local function fresh()
  collectgarbage("collect")
  if jit then jit.flush() end
end

-- One run of fn(...), through pcall, either unprofiled and timed by profile
-- `clock`'s timer, or under profile `prof`.  Both kinds go through this one
-- function, so that fn's frame sits at the same place on the Lua stack.
-- Returns the seconds (unprofiled runs only) and fn's result.
local function run(prof, clock, fn, ...)
  fresh()
  local t0 = clock and clock:now()
  if prof then prof:enable() end
  local ok, r = pcall(fn, ...)
  if prof then prof:disable() end
  local t1 = clock and clock:now()
  if not ok then error(r, 0) end
  return t0 and (t1 - t0), r
end

local function unprofiled(clock, fn, ...)
  return run(nil, clock, fn, ...)
end

-- Profiled: the profile, with `bias` set (its numbers are raw until
-- report_data), and fn's result.
local function profiled(timer, bias, fn, ...)
  local p = cprof.Profile({ timer = timer, bias = bias })
  local _, r = run(p, nil, fn, ...)
  return p, r
end

local function sum_tottime(d)
  local s = 0
  for i = 1, d.frames.n do s = s + d.frames.tottime[i] end
  return s
end

-- cumtime of the frame of Lua function f in data d (0 when it is not there).
local function cumtime_of(d, f)
  local info = debug.getinfo(f, "S")
  local file = string.gsub(info.source, "^[@=]", "")
  for i = 1, d.frames.n do
    if d.frames.line[i] == info.linedefined and d.frames.file[i] == file
       and d.frames.kind[i] == "Lua" then
      return d.frames.cumtime[i]
    end
  end
  return 0
end

local function pct(x)
  if x == nil or x ~= x then return "-" end
  return string.format("%+.1f%%", x * 100)
end

local function within(x)
  return x ~= nil and x == x and math.abs(x) <= GOAL
end

---------------------------------------------------------------------------
-- Main
---------------------------------------------------------------------------

local wall = cprof.Profile({ timer = "monotonic" })
local started_cpu, started_wall = cpu_clock(), wall:now()

print("cprof accuracy benchmark (bench/accuracy.lua)")
print("Lua:       " .. _VERSION .. (jit and (", " .. jit.version .. ", JIT off for the whole run")
      or "") .. (arg and arg[-1] and (", interpreter " .. arg[-1]) or ""))
print("cprof:     loaded " .. tostring(cprof._VERSION) .. ", default timer " .. default_timer)
for _, note in ipairs(timer_notes) do print("           not available: " .. note) end
print(string.format("method:    %d unprofiled and %d profiled runs per workload and timer,"
  .. " interleaved, medians;", opts.reps, opts.reps))
print("           real = unprofiled time by the profile's timer (p:now()); reported = sum of"
  .. " tottime;")
print("           uncal = bias 0 (p:snapshot()), calib = p:calibrate() then p:report_data()")
print("")
io.stdout:flush()

local want = opts.only
local selected = W.select(want)
local do_split = not want or want.split
if #selected == 0 and not do_split then usage("--only selects no workload") end

-- Sizes: calibrated once (unprofiled, by CPU time) and shrunk per timer to
-- fit that timer's share of the budget.
local nfast, nslow = 0, 0
for _, t in ipairs(timers) do
  if t.slow then nslow = nslow + 1 else nfast = nfast + 1 end
end
local nparts = #selected + (do_split and 1 or 0)
local function share(t)
  if t.slow then return opts["slow-budget"] / (nslow * nparts) end
  return opts.budget / (nfast * nparts)
end

local function base_cpu(fn)
  fresh()
  local c0 = cpu_clock()
  fn()
  return cpu_clock() - c0
end

for _, w in ipairs(selected) do
  local size, t, samples = W.calibrate(w, base_cpu, opts.target)
  w.cal_size, w.cal_t, w.samples = size, t, samples
end

-- Profiled CPU time over unprofiled, at a small size of workload w.
local function slowdown(timer, w)
  local size, t = W.pick(w.samples, opts.target / (timer.slow and 64 or 8))
  local fn = w.make(size)
  fresh()
  local c0 = cpu_clock()
  profiled(timer.name, 0, fn)
  return (cpu_clock() - c0) / math.max(t, 1e-6)
end

local results = {}      -- results[timer name] = { bias, rows = {...}, split = {...} }
local notes = {}

for _, timer in ipairs(timers) do
  local p0 = timer.probe
  local bias = p0:calibrate()
  local res = { bias = bias, rows = {} }
  results[timer.name] = res

  for _, w in ipairs(selected) do
    local size = w.cal_size
    local predicted = opts.reps * w.cal_t * (1 + slowdown(timer, w))
    if predicted > share(timer) then
      size = math.min(size, w.resize(size, share(timer) / predicted))
      if not timer.slow then
        notes[#notes + 1] = string.format("%s/%s: predicted %.1f s > %.1f s share, scaled down",
                                          w.name, timer.name, predicted, share(timer))
      end
    end
    local fn = w.make(size)
    local real, raw, cal, expected = {}, {}, {}, nil
    for _ = 1, opts.reps do
      local t, r = unprofiled(p0, fn)
      local p, r2 = profiled(timer.name, bias, fn)
      if expected == nil then expected = r end
      assert(r == expected and r2 == expected, w.name .. ": the run's result changed")
      real[#real + 1] = t
      raw[#raw + 1] = sum_tottime(p:snapshot())
      cal[#cal + 1] = sum_tottime(p:report_data())
    end
    local row = { w = w, size = size, real = median(real), raw = median(raw), cal = median(cal) }
    row.err_raw = row.raw / row.real - 1
    row.err_cal = row.cal / row.real - 1
    res.rows[#res.rows + 1] = row
  end

  if do_split then
    -- Size each part so that it takes about target/2 unprofiled (by CPU time).
    local size = {}
    for _, part in ipairs(SPLIT_PARTS) do
      local n, t = 1000, 0
      while true do
        fresh()
        local c0 = cpu_clock()
        part.fn(n)
        t = cpu_clock() - c0
        if t >= opts.target / 2 then break end
        n = math.floor(n * math.min(math.max(1.1 * opts.target / 2 / math.max(t, 1e-4), 1.2), 20))
      end
      size[part.name] = n
    end
    -- Shrink both alike to the timer's share (the profiled run of calls() dominates).
    local probe_m = math.max(1, math.floor(size.calls / 64))
    fresh()
    local c0 = cpu_clock()
    profiled(timer.name, 0, calls, probe_m)
    local factor = (cpu_clock() - c0) / math.max(base_cpu(function() calls(probe_m) end), 1e-6)
    local predicted = opts.reps * opts.target * (2 + (1 + factor) / 2)
    if predicted > share(timer) then
      local f = share(timer) / predicted
      size.arith = math.max(1, math.floor(size.arith * f))
      size.calls = math.max(1, math.floor(size.calls * f))
    end

    -- Each part alone is root with the other part's size 0, so that it runs
    -- from the same frame as in the profiled root(k, m).
    local k, m = size.arith, size.calls
    local real = { arith = {}, calls = {}, root = {} }
    local raw = { arith = {}, calls = {}, root = {} }
    local cal = { arith = {}, calls = {}, root = {} }
    for _ = 1, opts.reps do
      table.insert(real.arith, (unprofiled(p0, root, k, 0)))
      local p = profiled(timer.name, bias, root, k, m)
      table.insert(real.calls, (unprofiled(p0, root, 0, m)))
      table.insert(real.root, (unprofiled(p0, root, k, m)))
      for key, d in pairs({ raw = p:snapshot(), cal = p:report_data() }) do
        local into = key == "raw" and raw or cal
        for _, part in ipairs(SPLIT_PARTS) do
          table.insert(into[part.name], cumtime_of(d, part.fn))
        end
        table.insert(into.root, cumtime_of(d, root))
      end
    end
    local s = { k = size.arith, m = size.calls, parts = {} }
    local sum = { real = 0, raw = 0, cal = 0 }
    for _, part in ipairs(SPLIT_PARTS) do
      local r = { name = part.name, real = median(real[part.name]),
                  raw = median(raw[part.name]), cal = median(cal[part.name]) }
      for key in pairs(sum) do sum[key] = sum[key] + r[key] end
      s.parts[#s.parts + 1] = r
    end
    for _, r in ipairs(s.parts) do
      for _, key in ipairs({ "real", "raw", "cal" }) do r["share_" .. key] = r[key] / sum[key] end
      r.err_raw = r.raw / r.real - 1
      r.err_cal = r.cal / r.real - 1
      r.serr_raw = r.share_raw / r.share_real - 1
      r.serr_cal = r.share_cal / r.share_real - 1
    end
    s.root = { real = median(real.root), raw = median(raw.root), cal = median(cal.root) }
    s.root.err_raw = s.root.raw / s.root.real - 1
    s.root.err_cal = s.root.cal / s.root.real - 1
    res.split = s
  end
end

for _, note in ipairs(notes) do print("note:      " .. note) end
if #notes > 0 then print("") end

local failures = {}
local function judge(what, err)
  if not within(err) then failures[#failures + 1] = string.format("%s %s", what, pct(err)) end
end

local function timer_label(name)
  return name .. (name == default_timer and "*" or "")
end

if #selected > 0 then
  print("Total reported time (sum of tottime) against the unprofiled time, seconds, medians;")
  print("bias = p:calibrate(), seen = (uncal - real) / (2 x calls): ns per event")
  local fmt = "%-8s %-10s %-14s %10s %8s %8s %8s %9s %8s %9s %8s"
  local header = string.format(fmt, "workload", "timer", "size", "calls", "bias", "seen",
                               "real", "uncal", "error", "calib", "error")
  print(header)
  print(string.rep("-", #header))
  for wi, w in ipairs(selected) do
    for ti, timer in ipairs(timers) do
      local res = results[timer.name]
      local row = res.rows[wi]
      local seen = (row.raw - row.real) / (2 * w.calls(row.size))
      print(string.format("%-8s %-10s %-14s %10d %8.1f %8.1f %8.3f %9.3f %8s %9.3f %8s",
        ti == 1 and w.name or "", timer_label(timer.name), w.label(row.size), w.calls(row.size),
        res.bias * 1e9, seen * 1e9, row.real, row.raw, pct(row.err_raw), row.cal,
        pct(row.err_cal)))
      judge(string.format("%s/%s total", w.name, timer.name), row.err_cal)
    end
  end
  print("")
end

if do_split then
  local s1 = results[timers[1].name].split
  print("Known split: root() calls arith(k), a loop of pure arithmetic, then calls(m), m"
        .. " iterations of 4 tiny calls;")
  print("cumtime of each against the part alone, unprofiled (root(k, 0), root(0, m));"
        .. " share = part / (arith + calls);")
  print("root: cumtime against root(k, m) unprofiled; seconds, medians")
  local fmt = "%-10s %-6s %8s %6s | %8s %6s %8s %8s | %8s %6s %8s %8s"
  local header = string.format(fmt, "timer", "part", "real", "share", "uncal", "share",
    "t.err", "sh.err", "calib", "share", "t.err", "sh.err")
  print(header)
  print(string.rep("-", #header))
  for _, timer in ipairs(timers) do
    local s = results[timer.name].split
    for i, r in ipairs(s.parts) do
      print(string.format(fmt, i == 1 and timer_label(timer.name) or "", r.name,
        string.format("%.3f", r.real), string.format("%.1f%%", r.share_real * 100),
        string.format("%.3f", r.raw), string.format("%.1f%%", r.share_raw * 100),
        pct(r.err_raw), pct(r.serr_raw),
        string.format("%.3f", r.cal), string.format("%.1f%%", r.share_cal * 100),
        pct(r.err_cal), pct(r.serr_cal)))
      judge(string.format("split/%s %s time", timer.name, r.name), r.err_cal)
      judge(string.format("split/%s %s share", timer.name, r.name), r.serr_cal)
    end
    local r = s.root
    print(string.format(fmt, "", "root", string.format("%.3f", r.real), "", string.format("%.3f",
      r.raw), "", pct(r.err_raw), "", string.format("%.3f", r.cal), "", pct(r.err_cal), ""))
    judge(string.format("split/%s root time", timer.name), r.err_cal)
  end
  print(string.format("  k = %d, m = %d (%d tiny calls) for %s; smaller for slow timers",
    s1.k, s1.m, 4 * s1.m, timers[1].name))
  local parts = {}
  for _, timer in ipairs(timers) do
    local s = results[timer.name].split
    local c = s.parts[2]
    parts[#parts + 1] = string.format("%s %.1f ns (bias %.1f)", timer.name,
      (c.raw - c.real) / (8 * s.m) * 1e9, results[timer.name].bias * 1e9)
  end
  print("  seen per event in calls(): " .. table.concat(parts, ", "))
  print("")
end

print(string.format("Goal: after calibration, every reported total, time and share within"
  .. " %d%% of the unprofiled one: %s", GOAL * 100, #failures == 0 and "MET" or "NOT MET"))
if #failures > 0 then
  -- Group the failures by timer for a compact list.
  print(string.format("  outside %d%%: ", GOAL * 100) .. table.concat(failures, ", "))
end
local default_fail = 0
for _, f in ipairs(failures) do
  if string.find(f, "/" .. default_timer .. " ", 1, true) then default_fail = default_fail + 1 end
end
if results[default_timer] then
  print(string.format("  with the default timer (%s) alone: %s", default_timer,
    default_fail == 0 and "MET" or ("NOT MET (" .. default_fail .. " outside)")))
end
print(string.format("\ntotal: CPU %.1f s, wall %.1f s", cpu_clock() - started_cpu,
                    wall:now() - started_wall))
