-- bench/accuracy.lua -- how close are cprof's times to the program's real ones?
--
--   make bench
--   eval "$(make -s env)"; lua5.4 bench/accuracy.lua [--quick] [--rounds=41] [--target=0.0002]
--        [--calibrations=5] [--processes=5] [--only=fib,split] [--timer=tsc]
--
-- The workloads of bench/overhead.lua (fib, methods, strings, coro; bench/lib/workloads.lua)
-- and two with a known split: `split`, root() calling arith() (a loop of arithmetic, one call)
-- and calls() (four tiny Lua calls per iteration), and `mixed`, root() calling luapart() (Lua
-- functions that call C ones) and cpart() (C calls from a loop). Each part of a split runs alone,
-- unprofiled, as root with the other part's size 0, which gives its true share.
--
-- The machine is shared, so every comparison is made the way Profile:calibrate makes its own
-- (lua/cprof/calibrate.lua): many short runs (about `target` seconds unprofiled), profiled and
-- unprofiled interleaved, and the Hodges-Lehmann shift between the two samples (the median of
-- all pairwise differences), which a run that another process delayed does not move. A total's
-- error is that shift over the median unprofiled time; a part's share is the median of its
-- share in each profiled run, against the share of the medians of the parts run alone.
--
-- The model subtracted is the machine's, as a user who saved one (CPROF_CALIBRATE=save) gets:
-- the median of `processes` fresh processes' calibrations (cprof.calibrate.machine); then the
-- bias model is measured `calibrations` times in this process (p:calibrate()), and the spread
-- of each kind over them is printed: the noise of one process. With --processes=1 the first of
-- those is the model subtracted (as a program that calibrates once would), and its spread is
-- judged; otherwise the columns `own` subtract it, to compare (not judged). The columns marked
-- * subtract a model measured just before that workload: when they are right and the others
-- are not, the machine's speed changed between the calibration and the workload (not judged).
-- Goals (issue 14): every calibrated total within 10% of the unprofiled time, each share of the
-- splits within 10% of its true share, each kind's bias within 20% of its median over three
-- runs (bench/accuracy_series.lua; the last line, `series:`, is for it). Plain Lua 5.1 syntax:
-- the same file runs under LuaJIT (with the JIT off for the whole run: cprof profiles
-- interpreted code, so that is what the unprofiled runs must be too; the processes measuring
-- the model too).

local script_dir = arg and arg[0] and string.match(arg[0], "^(.*)[/\\]") or "."
local W = assert(loadfile(script_dir .. "/lib/workloads.lua"))(script_dir)
local median = W.median
local unpack = table.unpack or unpack

local GOAL, BIAS_GOAL = W.GOAL, W.BIAS_GOAL

local defaults = { rounds = 101, target = 0.0002, calibrations = 5, processes = 5, reps = 1 }
local quick = { rounds = 41, target = 0.0002, calibrations = 3, processes = 3, reps = 1 }

local usage = W.usage("accuracy.lua", [[
usage: lua bench/accuracy.lua [options]
  --quick             fewer rounds and calibrations (~10 s instead of ~40 s)
  --rounds=N          profiled and unprofiled runs of each workload, interleaved (101)
  --target=SECONDS    size each workload so that one unprofiled run takes this (0.0002)
  --calibrations=N    p:calibrate() runs in this process, for the spread of the bias (5)
  --processes=K       the model subtracted: the median of K processes' calibrations, as
                      CPROF_CALIBRATE=save keeps; 1: this process's first calibration (5)
  --only=a,b          workloads: fib,methods,strings,coro,split,mixed (all)
  --timer=NAME        the timer (cprof's default)
]])

local opts = W.options(arg, {
  rounds = "number", target = "number", calibrations = "number", processes = "number",
  only = "set",
  timer = "string", quick = "flag",
}, defaults, quick, usage)
for _, k in ipairs({ "processes", "calibrations" }) do
  if opts[k] < 1 or opts[k] % 1 ~= 0 then usage("--" .. k .. " must be a whole number, 1 or more") end
end

local ok_cprof, cprof = pcall(require, "cprof")
if not ok_cprof or type(cprof) ~= "table" then
  print("cprof accuracy benchmark (bench/accuracy.lua)")
  print("cprof: NOT AVAILABLE - require \"cprof\" failed: " .. W.first_line(cprof))
  print("       (build it and set the paths: make && eval \"$(make -s env)\")")
  os.exit(1)
end
local calibrate = require "cprof.calibrate"
local bias_mod = require "cprof.bias"

local jit = rawget(_G, "jit")
if jit then
  jit.off()
  jit.flush()
end
local cpu_clock = os.clock

---------------------------------------------------------------------------
-- The splits
---------------------------------------------------------------------------

-- split: pure arithmetic (no call inside the loop) against four tiny calls per iteration
local function arith(k)
  local x, y = 0.5, 0
  for i = 1, k do
    x = x * 1.000001 + 0.25
    if x > 2 then x = x - 1.5 end
    y = y + i % 3
  end
  return x + y
end
local function t1(a) return a + 1 end
local function t2(a) return a * 2 % 1000003 end
local function t3(a) return t1(a) - 1 end
local function calls(m)
  local s = 1
  for _ = 1, m do s = t3(t2(t1(s))) end
  return s
end

-- mixed: Lua functions calling C ones, against a loop of C calls
local floor, byte, fmt, abs = math.floor, string.byte, string.format, math.abs
local function digits(i) return #fmt("%d", i) end
local function scaled(i) return floor(i / 7) + abs(i - 500) end
local function luapart(k)
  local s = 0
  for i = 1, k do s = s + digits(i) + scaled(i) end
  return s
end
local WORD = "calibration"
local function cpart(m)
  local s = 0
  for i = 1, m do s = s + byte(WORD, i % 11 + 1) + floor(i / 3) end
  return s
end

local SPLITS = {
  { name = "split", what = "arith(k), a loop of arithmetic, then calls(m), 4 tiny Lua calls each",
    parts = { { name = "arith", fn = arith }, { name = "calls", fn = calls } } },
  { name = "mixed", what = "luapart(k), Lua functions calling C ones, then cpart(m), 2 C calls each",
    parts = { { name = "luapart", fn = luapart }, { name = "cpart", fn = cpart } } },
}
for _, s in ipairs(SPLITS) do
  local a, b = s.parts[1].fn, s.parts[2].fn
  s.root = function(k, m) return a(k) + b(m) end
end

---------------------------------------------------------------------------
-- Measuring
---------------------------------------------------------------------------

local timer = opts.timer or cprof.Profile():getstats().timer
local clock = cprof.Profile { timer = timer, bias = 0 }

-- Seconds of one unprofiled run of fn(...) by the profile's timer.
local function plain(fn, ...)
  local t0 = clock:now()
  fn(...)
  return clock:now() - t0
end

-- The frame of Lua function f in data d.
local function frame_of(d, f)
  local info = debug.getinfo(f, "S")
  local file = string.gsub(info.source, "^[@=]", "")
  for i = 1, d.frames.n do
    if d.frames.line[i] == info.linedefined and d.frames.file[i] == file
       and d.frames.kind[i] == "Lua" then
      return i
    end
  end
end

-- The total, the overhead the header says it still holds (bias_lost: cprof.bias.apply), and,
-- for data with no bias, the overhead the uncalibrated header estimates (cprof.bias.TYPICAL).
local function total(d)
  local s = 0
  for i = 1, d.frames.n do s = s + d.frames.tottime[i] end
  local est = not d.meta.bias_applied and bias_mod.apply(d).meta.overhead_estimate or 0
  return { s, d.meta.bias_lost or 0, est }
end

-- CPU seconds of fn(n), the median of 3.
local function cost(fn, n)
  local t = {}
  for r = 1, 3 do
    local c0 = cpu_clock()
    fn(n)
    t[r] = cpu_clock() - c0
  end
  return median(t)
end

-- A size n of fn(n) that takes about opts.target unprofiled: runs short enough that another
-- process rarely interrupts one. resize(n, f) is a size f times as long.
local function size_for(fn, n, resize)
  n = n or 16
  resize = resize or function(x, f) return math.max(1, math.floor(x * f + 0.5)) end
  for _ = 1, 40 do
    local t = cost(fn, n)
    if t >= opts.target / 1.5 and t <= opts.target * 1.5 then break end
    local f = math.min(math.max(opts.target / math.max(t, 1e-6), 1 / 16), 16)
    local next_n = resize(n, f)
    if next_n == n then break end
    n = next_n
  end
  return n
end

-- What a round added to each of the numbers of measure (a list of sums).
local function added(now, before)
  local t = {}
  for i, v in ipairs(now) do t[i] = v - (before and before[i] or 0) end
  return t
end

-- The fast end of the machine's speed (calibrate.prober) by each calibration, and the probe.
local probes, probe = {}, calibrate.prober(clock)

-- Rounds of fn(...) profiled (no bias) and unprofiled, interleaved, and of each extra[i](),
-- unprofiled (the parts of a split alone), in the same rounds. The profiled rounds follow each
-- other in one profile, as the runs of Profile:calibrate do, each measured by what it added:
-- a profile's start costs a few microseconds once, which a long profile does not notice.
-- measure(d) gives a list of sums from a profile's data; returns the unprofiled times and, per
-- round, what it added to measure(raw data) and, for each models[k], to measure(data with it
-- subtracted) (cals[k]), and the times of the extras. As Profile:calibrate, only the rounds at
-- the machine's full speed count: rounds are run until opts.rounds of them are (at most
-- MAX_ROUNDS times as many in all, about three seconds: a slow stretch of the host can last a
-- second, and left a run's fib with none of 1,009 rounds at full speed; all of them count when
-- fewer than calibrate.MIN_ROUNDS are); the last results are how many counted, of how many.
local MAX_ROUNDS = 30
local function rounds(fn, args, measure, models, extra)
  extra = extra or {}
  local alone = {}
  for i = 1, #extra do alone[i] = {} end
  local real, raw, cals, cal_before, speed = {}, {}, {}, {}, {}
  for k = 1, #models do cals[k] = {} end
  local q = cprof.Profile { timer = timer, bias = 0 }
  local raw_before
  local fastest = calibrate.fastest(probes)
  local full = calibrate.FULL_SPEED * fastest
  local counted = 0
  -- warm up, the profile too
  fn(unpack(args))
  local last = probe()
  local r = 0
  while counted < opts.rounds and r < MAX_ROUNDS * opts.rounds do
    for pass = 1, 2 do
      if (pass == 1) == (r % 2 == 1) then
        local t = plain(fn, unpack(args))
        if r > 0 then real[#real + 1] = t end
        for i, x in ipairs(extra) do
          t = plain(x)
          if r > 0 then alone[i][#alone[i] + 1] = t end
        end
      else
        q:runcall(fn, unpack(args))
        local d = q:snapshot()
        local m_raw = measure(d)
        if r > 0 then raw[#raw + 1] = added(m_raw, raw_before) end
        raw_before = m_raw
        for k, model in ipairs(models) do
          local m_cal = measure(bias_mod.apply(d, model))
          if r > 0 then cals[k][#cals[k] + 1] = added(m_cal, cal_before[k]) end
          cal_before[k] = m_cal
        end
      end
    end
    local after = probe()
    if r > 0 then
      speed[#speed + 1] = math.max(last, after)
      if speed[#speed] <= full then counted = counted + 1 end
    end
    last = after
    r = r + 1
  end
  local kept = calibrate.at_full_speed(speed, fastest)
  if #kept < calibrate.MIN_ROUNDS then return real, raw, cals, alone, 0, #real end
  local pick = calibrate.pick
  for k = 1, #models do cals[k] = pick(cals[k], kept) end
  for i = 1, #extra do alone[i] = pick(alone[i], kept) end
  return pick(real, kept), pick(raw, kept), cals, alone, #kept, #real
end

-- A model measured just before a workload: what the first one would have given had the machine
-- run at the same speed for the calibration and the workload (printed, not judged).
local function near_model()
  local m = cprof.Profile { timer = timer, bias = 0 }:calibrate()
  probes[#probes + 1] = m.probe
  return m
end

local function pct(x)
  if x == nil or x ~= x then return "-" end
  return string.format("%+.1f%%", x * 100)
end

-- Every judged number, for the `series:` line: its name (words joined by dots) and value; and
-- those of the columns `own`, named own.*, which are not judged.
local failures, judged = {}, {}
local function record(what, err)
  judged[#judged + 1] = string.format("%s=%.4f", (string.gsub(what, " ", ".")), err)
end
local function judge(what, err, goal)
  record(what, err)
  if not (err == err and math.abs(err) <= (goal or GOAL)) then
    failures[#failures + 1] = string.format("%s %s", what, pct(err))
  end
end

---------------------------------------------------------------------------
-- Main
---------------------------------------------------------------------------

local started_cpu, started = cpu_clock(), clock:now()
print("cprof accuracy benchmark (bench/accuracy.lua)")
print("Lua:       " .. _VERSION .. (jit and (", " .. jit.version .. ", JIT off for the whole run")
      or "") .. (arg and arg[-1] and (", interpreter " .. arg[-1]) or ""))
print(string.format("cprof:     %s, timer %s; %d rounds of ~%.1f ms per workload, %d calibrations",
  tostring(cprof._VERSION), timer, opts.rounds, opts.target * 1000, opts.calibrations))
print("")
io.stdout:flush()

-- The machine's model, measured by fresh processes of this interpreter as
-- cprof.save_calibration measures it; then this process's calibrations.
local interpreter = W.interpreter(arg)
local machine = opts.processes > 1 and calibrate.machine(timer, calibrate.DEFAULT_CALLS,
  opts.processes, interpreter, function() end)
local models = {}
for c = 1, opts.calibrations do
  models[c] = cprof.Profile { timer = timer, bias = 0 }:calibrate()
  probes[#probes + 1] = models[c].probe
end
local model = machine or models[1]

-- The cells of a table of models' kinds: "value±err" in ns, each `width` wide.
local function cell(v, e, width)
  return string.format("%" .. width .. "s", string.format("%.1f±%.1f", v * 1e9, e * 1e9))
end
print("Bias per kind in this process (p:calibrate(), ns; ± half its 95% interval), and its spread"
      .. " over the runs" .. (machine and " (not judged: the machine's model is subtracted)" or ""))
local header = string.format("%-9s %s %9s %9s %9s %9s %7s", "kind",
  table.concat((function()
    local h = {}
    for c = 1, opts.calibrations do h[c] = string.format("%14s", "run " .. c) end
    return h
  end)(), " "), "median", "min", "max", "spread", "ns")
print(header)
print(string.rep("-", #header))
for _, k in ipairs(bias_mod.KINDS) do
  local vals, cells = {}, {}
  for c, m in ipairs(models) do
    vals[c], cells[c] = m[k], cell(m[k], m.err[k], 14)
  end
  -- a kind near 0 (c_call with the tsc timer) has a large relative spread: its spread in ns
  -- says what it does to a report
  local rel, dev, med = W.spread(vals)
  print(string.format("%-9s %s %9.1f %9.1f %9.1f %9s %7s", k, table.concat(cells, " "),
                      med * 1e9, math.min(unpack(vals)) * 1e9, math.max(unpack(vals)) * 1e9,
                      rel and ("±" .. string.format("%.0f%%", rel * 100)) or "-",
                      string.format("±%.1f", dev * 1e9)))
  if rel and not machine then judge("bias " .. k .. " spread", rel, BIAS_GOAL) end
end
print(string.format("%-9s %s", "full speed", table.concat((function()
  local h = {}
  for c, m in ipairs(models) do
    local again = (m.attempts or 1) > 1 and ("x" .. m.attempts) or ""
    h[c] = string.format("%14s", string.format("%.0f%% of %d%s", m.full_speed * 100, m.blocks, again))
  end
  return h
end)(), " ")) .. "  (the share of the rounds that counted, of how many blocks; xN: measured N times)")
print("")
if machine then
  print(string.format("The machine's model (ns), subtracted below: the %s (each kind's value in"
    .. " each, and their median ± the larger of their median uncertainty and half the range of"
    .. " the middle half); %d measured again (their probe slow)", machine.source,
    machine.remeasured))
  header = string.format("%-9s %s %14s", "kind", table.concat((function()
    local h = {}
    for c = 1, opts.processes do h[c] = string.format("%9s", "proc " .. c) end
    return h
  end)(), " "), "machine")
  print(header)
  print(string.rep("-", #header))
  for _, k in ipairs(bias_mod.KINDS) do
    local cells = {}
    for c, v in ipairs(machine.processes[k]) do cells[c] = string.format("%9.1f", v * 1e9) end
    print(string.format("%-9s %s %s", k, table.concat(cells, " "), cell(machine[k], machine.err[k], 14)))
  end
  print("")
elseif opts.processes > 1 then
  print(string.format("No child process could measure the model (interpreter %s): this process's"
                      .. " first calibration is subtracted", tostring(interpreter)))
  print("")
end
io.stdout:flush()

-- The models each workload's rounds subtract: the one judged, one measured just before it (*),
-- and this process's first (own) when the machine's is the one judged.
local function models_for()
  local near = near_model()
  return machine and { model, near, models[1] } or { model, near }
end

local want = opts.only
print("Totals (sum of tottime) against the unprofiled time: the shift profiled - unprofiled"
      .. " over the median unprofiled time; `said`: the share of the calibrated total the"
      .. " report's header says is overhead left in (charged to functions with less time);"
      .. " `overhead`: the share of the uncalibrated total that is overhead, uncal/(1+uncal),"
      .. " and `typical`: the share the uncalibrated report's header says it is (cprof.bias.TYPICAL"
      .. " for the timer; - when it has none)")
local fmtt = "%-8s %-16s %9s %9s %7s | %9s %9s %6s | %9s %9s | %9s %9s"
header = string.format(fmtt, "workload", "size", "events", "real ms", "kept", "uncal", "calib",
                       "said", "overhead", "typical", "calib*", machine and "own" or "")
print(header)
print(string.rep("-", #header))
for _, w in ipairs(W.select(want)) do
  local size = size_for(function(n) w.make(n)() end, w.size, w.resize)
  local fn = w.make(size)
  local real, raw, cals, _, kept, ran = rounds(fn, {}, total, models_for())
  local base = median(real)
  local function column(t, c)
    local f = {}
    for i, v in ipairs(t) do f[i] = v[c] end
    return f
  end
  local e_raw = calibrate.shift(column(raw, 1), real) / base
  local e_cal = calibrate.shift(column(cals[1], 1), real) / base
  local e_near = calibrate.shift(column(cals[2], 1), real) / base
  local e_own = cals[3] and calibrate.shift(column(cals[3], 1), real) / base
  local said = median(column(cals[1], 2)) / median(column(cals[1], 1))
  local shares = {}
  for i, v in ipairs(raw) do shares[i] = v[3] / v[1] end
  local typical = bias_mod.typical(timer, clock:snapshot().meta.lua_version) and string.format("%.0f%%", 100 * median(shares))
  print(string.format(fmtt, w.name, w.label(size), w.calls(size), string.format("%.2f", base * 1e3),
                      kept .. "/" .. ran, pct(e_raw), pct(e_cal),
                      string.format("%.0f%%", 100 * said),
                      string.format("%.0f%%", 100 * e_raw / (1 + e_raw)), typical or "-",
                      pct(e_near), e_own and pct(e_own) or ""))
  judge(w.name .. " total", e_cal)
  if e_own then record("own " .. w.name .. " total", e_own) end
  io.stdout:flush()
end
print("")

for _, s in ipairs(SPLITS) do
  if not want or want[s.name] then
    local p1, p2 = s.parts[1], s.parts[2]
    local k = size_for(function(n) p1.fn(n) end)
    local m = size_for(function(n) p2.fn(n) end)
    local function shares(d)
      local a, b = frame_of(d, p1.fn), frame_of(d, p2.fn)
      return { d.frames.cumtime[a], d.frames.cumtime[b] }
    end
    -- the parts alone run in the same rounds as the profiled root
    local real, raw, cals, alone, kept, ran = rounds(s.root, { k, m }, shares, models_for(), {
      function() return s.root(k, 0) end, function() return s.root(0, m) end })
    local cal = cals[1]
    local truth = { median(alone[1]), median(alone[2]) }
    local rt = calibrate.shift((function()
      local t = {}
      for i, v in ipairs(raw) do t[i] = v[1] + v[2] end
      return t
    end)(), real) / median(real)
    local function root_err(c)
      local t = {}
      for i, v in ipairs(c) do t[i] = v[1] + v[2] end
      return calibrate.shift(t, real) / median(real)
    end
    local ct, ct_near, ct_own = root_err(cal), root_err(cals[2]), cals[3] and root_err(cals[3])
    print(string.format("%s: %s (k = %d, m = %d, %d of %d rounds kept); share of each part: true"
      .. " (the part alone), uncalibrated, calibrated", s.name, s.what, k, m, kept, ran))
    local f2 = "  %-8s %8s %8s %8s %8s | %8s %8s | %8s %8s"
    print(string.format(f2, "part", "true", "uncal", "error", "calib", "error", "time err",
                        "error*", machine and "own" or ""))
    local true_share = truth[1] / (truth[1] + truth[2])
    for i, part in ipairs(s.parts) do
      local ts = i == 1 and true_share or 1 - true_share
      -- the median share of part i in runs c
      local function share(c)
        local t = {}
        for j = 1, #c do t[j] = c[j][i] / (c[j][1] + c[j][2]) end
        return median(t)
      end
      local mr, mc, mn, mo = share(raw), share(cal), share(cals[2]), cals[3] and share(cals[3])
      local times = {}
      for j = 1, #cal do times[j] = cal[j][i] end
      local terr = calibrate.shift(times, alone[i]) / truth[i]
      print(string.format(f2, part.name, string.format("%.1f%%", ts * 100),
        string.format("%.1f%%", mr * 100), pct(mr / ts - 1), string.format("%.1f%%", mc * 100),
        pct(mc / ts - 1), pct(terr), pct(mn / ts - 1), mo and pct(mo / ts - 1) or ""))
      judge(s.name .. " " .. part.name .. " share", mc / ts - 1)
      if mo then record("own " .. s.name .. " " .. part.name .. " share", mo / ts - 1) end
    end
    print(string.format("  %-8s total (root): uncal %s, calib %s, calib* %s%s", "", pct(rt), pct(ct),
                        pct(ct_near), ct_own and (", own " .. pct(ct_own)) or ""))
    if s.name == "mixed" then
      judge("mixed total", ct)
      if ct_own then record("own mixed total", ct_own) end
    end
    print("")
    io.stdout:flush()
  end
end

print(string.format("Goals: totals and shares within %d%%, bias spread within %d%%%s: %s",
  GOAL * 100, BIAS_GOAL * 100, machine and " (over three runs: bench/accuracy_series.lua)" or "",
  #failures == 0 and "MET" or "NOT MET"))
if #failures > 0 then print("  outside: " .. table.concat(failures, ", ")) end
-- One line for bench/accuracy_series.lua: the model subtracted and this process's first (ns),
-- and every judged number.
local line = { "series:", "met=" .. (#failures == 0 and 1 or 0), "processes=" .. opts.processes,
               "remeasured=" .. (machine and machine.remeasured or 0) }
for _, k in ipairs(bias_mod.KINDS) do
  line[#line + 1] = string.format("model.%s=%.3f", k, model[k] * 1e9)
end
for _, k in ipairs(bias_mod.KINDS) do
  line[#line + 1] = string.format("first.%s=%.3f", k, models[1][k] * 1e9)
end
for _, j in ipairs(judged) do line[#line + 1] = j end
print(table.concat(line, " "))
print(string.format("\ntotal: CPU %.1f s, wall %.1f s", cpu_clock() - started_cpu,
                    clock:now() - started))
