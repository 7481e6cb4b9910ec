-- bench/overhead.lua -- how much does cprof slow a program down?
--
--   make bench
--   eval "$(make -s env)"; lua5.4 bench/overhead.lua [--quick] [--reps=3] [--target=0.5]
--        [--budget=56] [--slow-budget=16] [--only=fib,coro] [--timers=tsc,cpu]
--        [--callgrind-n=20] [--no-callgrind]
--   lua5.4 bench/overhead.lua --check   (verify the call counts, then exit)
--
-- Every workload is timed in these modes, interleaved (base, empty, cprof
-- with each timer, then again in a rotated order, ...) so that drift in
-- machine speed hits all modes alike:
--
--   base   no hook at all
--   empty  emptyhook.set(): a C call/return hook whose body does nothing,
--          i.e. the floor that every lua_sethook-based profiler pays
--   <timer> cprof.Profile{timer = <timer>}:enable() ... :disable(), for each
--          built-in timer (tsc where invariant, monotonic, cpu, thread)
--
-- Timers whose reading is a system call (cpu, thread: ~0.5 us per read, two
-- reads per event) would make a full-size run last minutes, so they run as a
-- second group at a smaller size, with their own base and empty runs.
--
-- The medians are reported with the ratios empty/base, cprof/base and
-- cprof/empty (the part of the overhead that is cprof's own work), the
-- extra cost per call, and whether the goal holds: with the default timer,
-- cprof/base <= 2 x empty/base on every workload.  Then valgrind's
-- instruction counts for a small fib run, a figure free of timing noise.
-- See bench/README.md.  Plain Lua 5.1 syntax, so the same file runs under
-- LuaJIT.

local script_dir = arg and arg[0] and string.match(arg[0], "^(.*)[/\\]") or "."
local W = assert(loadfile(script_dir .. "/lib/workloads.lua"))(script_dir)
local median = W.median

local GOAL = 2.0           -- cprof/base <= GOAL * empty/base with the default timer
local SLOW_READ_NS = 150   -- timers slower than this per read run in the small-size group
local ALL_TIMERS = { "tsc", "monotonic", "cpu", "thread" }
local CALLGRIND_REPS = 3   -- processes per mode and size; the median count is used

local defaults = { reps = 3, target = 0.5, budget = 56, ["slow-budget"] = 16,
                   ["callgrind-n"] = 20 }
local quick = { reps = 3, target = 0.1, budget = 8, ["slow-budget"] = 3,
                ["callgrind-n"] = 16 }

local usage = W.usage("overhead.lua", [[
usage: lua bench/overhead.lua [options]
  --quick            small sizes and budgets (~15 s instead of ~90 s)
  --reps=N           timed runs per workload and mode, median reported (3)
  --target=SECONDS   size each workload so the unprofiled run takes this (0.5)
  --budget=SECONDS   rough limit for the timed runs with fast timers (56)
  --slow-budget=S    the same for the system-call timers cpu and thread (16)
  --only=a,b         workloads: fib,methods,strings,coro (all), wrap
  --timers=a,b       cprof timers: tsc,monotonic,cpu,thread (all available)
  --callgrind-n=N    fib(N) for the instruction counts (20)
  --no-callgrind     skip the instruction counts
  --check            count call events with a debug hook, compare, exit
]])

local opts = W.options(arg, {
  reps = "number", target = "number", budget = "number", ["slow-budget"] = "number",
  ["callgrind-n"] = "number", only = "set", timers = "set", check = "flag", quick = "flag",
  ["no-callgrind"] = "flag",
}, defaults, quick, usage)
opts["callgrind-n"] = math.max(2, math.floor(opts["callgrind-n"]))

---------------------------------------------------------------------------
-- Modules, clocks and timers
---------------------------------------------------------------------------

local first_line = W.first_line

local have_eh, emptyhook = pcall(require, "emptyhook")
if not have_eh then emptyhook = first_line(emptyhook) end

local have_cprof, cprof = pcall(require, "cprof")
if have_cprof and type(cprof) ~= "table" then
  have_cprof, cprof = false, "it returned a " .. type(cprof) .. ", not a table"
elseif not have_cprof then
  cprof = first_line(cprof)
end

local cpu_clock = os.clock
local jit = rawget(_G, "jit")

-- A wall clock: emptyhook's CLOCK_MONOTONIC, else a cprof profile's monotonic timer.
local wall_clock, wall_name
if have_eh then
  wall_clock, wall_name = emptyhook.monotonic, "CLOCK_MONOTONIC (emptyhook.monotonic)"
elseif have_cprof then
  local ok, p = pcall(cprof.Profile, { timer = "monotonic" })
  if ok then
    wall_clock = function() return p:now() end
    wall_name = "CLOCK_MONOTONIC (cprof monotonic timer)"
  end
end

-- timers[i] = { name, default = bool, read = seconds, slow = bool }; read: the cost of one
-- reading of the timer, through p:now(), minus a plain C call
local timers, timer_notes, default_timer = {}, {}, nil
if have_cprof then
  timers, timer_notes, default_timer = W.timers(cprof, ALL_TIMERS, opts.timers, usage,
    function(t, p)
      local cost = median({ W.read_cost(p, 200000), W.read_cost(p, 200000), W.read_cost(p, 200000) })
      t.read, t.slow = cost, cost * 1e9 > SLOW_READ_NS
    end)
end

---------------------------------------------------------------------------
-- Measuring
---------------------------------------------------------------------------

local available = { base = true, empty = have_eh }
for _, t in ipairs(timers) do available[t.name] = true end

-- Run fn once in the given mode; returns cpu seconds, wall seconds (or nil)
-- and fn's result.  Setup and teardown of the hook are outside the timing.
local function measure(mode, fn)
  collectgarbage("collect")
  if jit then jit.flush() end      -- no traces compiled before the hook was set
  local prof
  if mode == "empty" then
    emptyhook.set()
  elseif mode ~= "base" then
    prof = cprof.Profile({ timer = mode })
    prof:enable()
  end
  local w0 = wall_clock and wall_clock()
  local c0 = cpu_clock()
  local result = fn()
  local c1 = cpu_clock()
  local w1 = wall_clock and wall_clock()
  if prof then
    prof:disable()
  elseif mode == "empty" then
    emptyhook.clear()
  end
  return c1 - c0, w1 and (w1 - w0), result
end

local function base_time(fn)
  return (measure("base", fn))
end

-- Two groups of modes, each sized and budgeted on its own: the fast timers
-- at the calibrated size, the system-call timers at a smaller one.
local groups = {}
do
  local fast, slow = { "base", "empty" }, { "base", "empty" }
  for _, t in ipairs(timers) do table.insert(t.slow and slow or fast, t.name) end
  groups[1] = { name = "fast", modes = fast, budget = opts.budget, probe = 1 / 4 }
  if #slow > 2 then
    groups[2] = { name = "slow", modes = slow, budget = opts["slow-budget"], probe = 1 / 64 }
  end
end

local function fmt_time(t)
  return t and string.format("%.3f", t) or "-"
end

local function fmt_ratio(a, b)
  if not a or not b or b <= 0 then return "-" end
  return string.format("%.2fx", a / b)
end

local function fmt_ns(t, base, calls)
  if not t or not base or calls <= 0 then return "-" end
  return string.format("%.0f", (t - base) / calls * 1e9)
end

---------------------------------------------------------------------------
-- Main
---------------------------------------------------------------------------

local function version_string()
  local v = _VERSION
  if jit then
    v = v .. ", " .. jit.version .. " (JIT " .. (jit.status() and "on" or "off") .. ")"
  end
  local interp = arg and arg[-1]
  if interp then v = v .. ", interpreter " .. interp end
  return v
end

print("cprof overhead benchmark (bench/overhead.lua)")
print("Lua:       " .. version_string())
if have_cprof then
  print("cprof:     loaded" .. (cprof._VERSION and (" " .. tostring(cprof._VERSION)) or "")
        .. ", default timer " .. tostring(default_timer))
else
  print("cprof:     NOT AVAILABLE - require \"cprof\" failed: " .. cprof)
  print("           (build it and set the paths: make && eval \"$(make -s env)\");"
        .. " no cprof rows")
end
if have_eh then
  print("emptyhook: loaded")
else
  print("emptyhook: NOT AVAILABLE - require \"emptyhook\" failed: " .. emptyhook)
  print("           (make bench builds build/<lua>/emptyhook.so; it must be on"
        .. " LUA_CPATH); empty columns show '-'")
end
if #timers > 0 then
  local parts = {}
  for _, t in ipairs(timers) do
    parts[#parts + 1] = string.format("%s%s %.0f ns", t.name, t.default and "*" or "",
                                      t.read * 1e9)
  end
  print("timers:    " .. table.concat(parts, ", ") .. " per read (* default; p:now()"
        .. " minus a C call)")
end
for _, note in ipairs(timer_notes) do print("           not available: " .. note) end
print(string.format("method:    median of %d interleaved runs per mode; cpu = os.clock(),"
      .. " wall = %s", opts.reps, wall_name or "n/a"))
print(string.format("           budget ~%g s for base/empty/fast timers, ~%g s for the"
      .. " slow timers (run at smaller sizes)", opts.budget, opts["slow-budget"]))
if jit then
  print("           jit.flush() before every run: hooked runs mostly execute interpreted")
end
print("")
io.stdout:flush()

local started_cpu, started_wall = cpu_clock(), wall_clock and wall_clock()
local selected = W.select(opts.only)
if #selected == 0 then usage("--only selects no workload") end

-- --check: count the call events of a small run with a debug hook and
-- compare them with the formula behind the "calls" column.
local function count_raw(fn)
  local count = 0
  debug.sethook(function() count = count + 1 end, "c")
  fn()
  debug.sethook()
  return count
end

-- Less the events of an empty function's run: its own call and those of
-- debug.sethook (two when cprof, once loaded, wraps it).
local function count_calls(fn)
  return count_raw(fn) - count_raw(function() end)
end

if opts.check then
  local bad = 0
  for _, w in ipairs(selected) do
    local label = w.label(w.size)
    if w.name == "coro" and not jit then
      -- debug.sethook keeps the Lua hook function per thread, so in Lua 5.4
      -- it misses the events inside coroutines (a C hook does see them).
      print(string.format("%-8s %-13s skipped: Lua hooks do not follow"
        .. " coroutines in Lua 5.x (run the check under LuaJIT)", w.name, label))
    else
      local count, want = count_calls(w.make(w.size)), w.calls(w.size)
      print(string.format("%-8s %-13s counted %8d  formula %8d  %s", w.name,
        label, count, want, count == want and "ok" or "MISMATCH"))
      if count ~= want then bad = bad + 1 end
    end
  end
  os.exit(bad == 0 and 0 or 1)
end

local notes = {}

local function disable_mode(mode, err)
  debug.sethook()               -- remove whatever hook the failed run left
  available[mode] = false
  print(string.format("%-10s DISABLED - %s run failed: %s", mode == "empty" and "emptyhook:"
                      or "cprof:", mode, first_line(err)))
end

-- How many times the base time one round of the group's modes costs.
local function probe_factor(g, fn, base_t)
  local factor = 1
  for _, mode in ipairs(g.modes) do
    if mode ~= "base" and available[mode] then
      local ok, t = pcall(measure, mode, fn)
      if ok then
        factor = factor + t / math.max(base_t, 1e-6)
      else
        disable_mode(mode, t)
      end
    end
  end
  return factor
end

-- One round: every available mode of the group once, starting at mode
-- number `first` (the order rotates from round to round).  Returns its CPU cost.
local function run_round(w, g, r, fn, expected, first)
  local cost, n = 0, #g.modes
  for k = 0, n - 1 do
    local mode = g.modes[(first + k - 1) % n + 1]
    if available[mode] then
      local ok, c, wt, result = pcall(measure, mode, fn)
      if not ok then
        if mode == "base" then error(c, 0) end
        disable_mode(mode, c)
      else
        if expected[1] == nil then
          expected[1] = result
        elseif result ~= expected[1] then
          error(string.format("%s: %s run returned %s, expected %s", w.name,
                              mode, tostring(result), tostring(expected[1])), 0)
        end
        table.insert(r.cpu[mode], c)
        if wt then table.insert(r.wall[mode], wt) end
        cost = cost + c
      end
    end
  end
  return cost
end

-- Each workload gets an equal share of each group's budget.  It is calibrated
-- (base run ~opts.target seconds); each group's hooked modes are probed once
-- at a smaller size to predict the cost, and the group's size is shrunk if
-- the prediction exceeds its share.  If the first real round still shows the
-- prediction was far off (this happens with LuaJIT), it is shrunk once more
-- and restarted.
for _, w in ipairs(selected) do
  local size, t, samples = W.calibrate(w, base_time, opts.target)
  w.results = {}
  for gi, g in ipairs(groups) do
    local share = g.budget / #selected
    local gsize = size
    local probe_size, probe_t = W.pick(samples, opts.target * g.probe)
    local predicted = opts.reps * t * probe_factor(g, w.make(probe_size), probe_t)
    if predicted > share then
      local new_size = w.resize(size, share / predicted)
      if new_size < gsize then
        gsize = new_size
        if g.name == "fast" then
          table.insert(notes, string.format("%s: predicted %.1f s > %.1f s share"
            .. " of the budget, scaled down", w.name, predicted, share))
        end
      end
    end

    local r = { size = gsize }
    local function reset()
      r.cpu, r.wall = {}, {}
      for _, mode in ipairs(g.modes) do r.cpu[mode], r.wall[mode] = {}, {} end
    end
    reset()
    local retried, round, expected = false, 1, {}
    local fn = w.make(gsize)
    while round <= opts.reps do
      local cost = run_round(w, g, r, fn, expected, round)
      if round == 1 and not retried and opts.reps > 1
         and cost * opts.reps > 1.5 * share then
        retried = true
        local new_size = w.resize(gsize, share / (cost * opts.reps))
        if new_size < gsize then
          table.insert(notes, string.format("%s: first %s round took %.1f s,"
            .. " scaled down and restarted", w.name, g.name, cost))
          gsize, fn, expected = new_size, w.make(new_size), {}
          r.size = gsize
          reset()
          round = 0
        end
      end
      round = round + 1
    end
    r.rounds = {}
    for _, mode in ipairs(g.modes) do
      r.rounds[mode] = r.cpu[mode]
      r.cpu[mode] = median(r.cpu[mode])
      r.wall[mode] = median(r.wall[mode])
    end
    w.results[gi] = r
  end
end

for _, note in ipairs(notes) do print("note:      " .. note) end
if #notes > 0 then print("") end

-- The rows of the tables: for each workload, each timer with its group's runs.
local function rows()
  local out = {}
  for _, w in ipairs(selected) do
    for gi, g in ipairs(groups) do
      local r = w.results[gi]
      for _, mode in ipairs(g.modes) do
        if mode ~= "base" and mode ~= "empty" then
          out[#out + 1] = { w = w, r = r, timer = mode }
        end
      end
      if not have_cprof and gi == 1 then out[#out + 1] = { w = w, r = r } end
    end
  end
  return out
end

local function timer_label(name)
  if not name then return "-" end
  return name .. (name == default_timer and "*" or "")
end

local function goal_met(t)
  return t.cprof and t.base and t.empty and t.cprof / t.base <= GOAL * t.empty / t.base
end

local function print_table(title, key)
  print(title)
  local fmt = "%-8s %-10s %-13s %7s %7s %7s %10s %10s %11s  %s"
  local header = string.format(fmt, "workload", "timer", "size", "base", "empty", "cprof",
                               "empty/base", "cprof/base", "cprof/empty", "goal")
  print(header)
  print(string.rep("-", #header))
  local last
  for _, row in ipairs(rows()) do
    local m = row.r[key]
    local t = { base = m.base, empty = m.empty, cprof = row.timer and m[row.timer] }
    local goal = ""
    if row.timer and row.timer == default_timer and t.empty then
      goal = goal_met(t) and "met" or "NOT met"
    end
    print(string.format(fmt, row.w.name ~= last and row.w.name or "", timer_label(row.timer),
      row.w.label(row.r.size), fmt_time(t.base), fmt_time(t.empty), fmt_time(t.cprof),
      fmt_ratio(t.empty, t.base), fmt_ratio(t.cprof, t.base),
      fmt_ratio(t.cprof, t.empty), goal))
    last = row.w.name
  end
  print("")
end

print_table("CPU time (os.clock), seconds, median of each mode", "cpu")
if wall_clock then
  print_table("Wall time (monotonic clock), seconds, median of each mode", "wall")
end

local quartiles = W.quartiles

-- Each round runs every mode once, next to each other: the ratio of a round's cprof time to the
-- same round's empty time is free of the drift between rounds.
print("cprof/empty per round (CPU time): median and interquartile range over the rounds")
do
  local fmt = "%-8s %-10s %7s %9s %9s %7s"
  local header = string.format(fmt, "workload", "timer", "rounds", "median", "IQR", "goal")
  print(header)
  print(string.rep("-", #header))
  for _, row in ipairs(rows()) do
    local rounds = row.r.rounds
    if row.timer and rounds and rounds.empty and rounds[row.timer] then
      local ratios = {}
      for i = 1, math.min(#rounds.empty, #rounds[row.timer]) do
        ratios[i] = rounds[row.timer][i] / rounds.empty[i]
      end
      if #ratios > 0 then
        local q1, q2, q3 = quartiles(ratios)
        print(string.format(fmt, row.w.name, timer_label(row.timer), #ratios,
          string.format("%.2fx", q2), string.format("%.2f-%.2f", q1, q3),
          row.timer == default_timer and (q2 <= GOAL and "met" or "NOT met") or ""))
      end
    end
  end
  print("")
end

print("Extra CPU time per call event, nanoseconds (mode minus base, divided by calls)")
do
  local fmt = "%-8s %-10s %10s %8s %8s %12s"
  local header = string.format(fmt, "workload", "timer", "calls", "empty", "cprof",
                               "cprof-empty")
  print(header)
  print(string.rep("-", #header))
  local last
  for _, row in ipairs(rows()) do
    local t, n = row.r.cpu, row.w.calls(row.r.size)
    local c = row.timer and t[row.timer]
    print(string.format(fmt, row.w.name ~= last and row.w.name or "", timer_label(row.timer),
      n, fmt_ns(t.empty, t.base, n), fmt_ns(c, t.base, n), fmt_ns(c, t.empty, n)))
    last = row.w.name
  end
  print("")
end

-- The goal, judged on CPU time with the default timer (the wall-time verdict
-- is printed next to it).
local goal_ok = nil
if have_cprof and have_eh and available[default_timer] then
  goal_ok = true
  local parts = {}
  for _, w in ipairs(selected) do
    local verdict = {}
    for _, key in ipairs({ "cpu", "wall" }) do
      local m = w.results[1][key]
      if m.base then
        local t = { base = m.base, empty = m.empty, cprof = m[default_timer] }
        verdict[key] = { ok = goal_met(t), ratio = t.cprof and t.empty and t.cprof / t.empty }
      end
    end
    local v = verdict.cpu
    if v and not v.ok then goal_ok = false end
    parts[#parts + 1] = string.format("%s %s (cprof/empty %.2fx cpu%s)", w.name,
      v and v.ok and "met" or "NOT met", v and v.ratio or 0/0,
      verdict.wall and verdict.wall.ratio
        and string.format(", %.2fx wall", verdict.wall.ratio) or "")
  end
  print(string.format("Goal: with the default timer (%s), cprof/base <= %g x empty/base,"
    .. " i.e. cprof/empty <= %.2fx,", default_timer, GOAL, GOAL))
  print("      on every workload (judged on CPU time): " .. (goal_ok and "MET" or "NOT MET"))
  for _, p in ipairs(parts) do print("        " .. p) end
  print("")
end

---------------------------------------------------------------------------
-- Instruction counts: valgrind --tool=callgrind
--
-- A child interpreter runs fib(n) in one mode, and again fib(1) in the same
-- mode (the same setup, one call); the difference is the instructions of
-- fib(n)'s other calls, free of interpreter start-up and of noise.
---------------------------------------------------------------------------

local shell_quote, read_command = W.shell_quote, W.read_command

local CHILD = [[
local mode, name, size, bench_dir = arg[1], arg[2], tonumber(arg[3]), arg[4]
local W = assert(loadfile(bench_dir .. "/lib/workloads.lua"))(bench_dir)
local w
for _, x in ipairs(W.workloads) do if x.name == name then w = x end end
local fn = w.make(size)
local eh = mode == "empty" and require("emptyhook")
local p = mode ~= "base" and mode ~= "empty" and require("cprof").Profile({ timer = mode })
if p then p:enable() elseif eh then eh.set() end
local r = fn()
if p then p:disable() elseif eh then eh.clear() end
io.write("result ", r, "\n")
]]

-- The size of each workload's instruction-count run: --callgrind-n for fib, enough calls for
-- the others to dwarf their setup (the size-1 run is subtracted).
local function callgrind_size(name)
  local n = opts["callgrind-n"]
  if name == "fib" then return n end
  local scale = opts.quick and 0.25 or 1
  local base = { methods = 20000, strings = 2000, coro = 20000, wrap = 20000 }
  return math.max(2, math.floor(base[name] * scale))
end

local function callgrind()
  print("Instruction counts (valgrind --tool=callgrind, Ir)")
  if opts["no-callgrind"] then
    print("  skipped (--no-callgrind)")
    return
  end
  local where = read_command("command -v valgrind 2>/dev/null") or ""
  if not string.match(where, "%S") then
    print("  skipped: valgrind is not installed (apt-get install valgrind)")
    return
  end
  local interp = arg and arg[-1]
  if not interp then
    print("  skipped: the interpreter's path is unknown (arg[-1])")
    return
  end
  local dir = read_command("mktemp -d 2>/dev/null")
  dir = dir and string.match(dir, "^%s*(.-)%s*$")
  if not dir or dir == "" then
    print("  skipped: mktemp -d failed")
    return
  end
  local function cleanup()
    -- Only the files this function wrote: the child script and callgrind.out.<pid>.
    os.execute("rm -f " .. shell_quote(dir) .. "/callgrind.out.* " .. shell_quote(dir)
               .. "/child.lua; rmdir " .. shell_quote(dir) .. " 2>/dev/null")
  end
  local f = io.open(dir .. "/child.lua", "w")
  if not f then
    cleanup()
    print("  skipped: cannot write " .. dir .. "/child.lua")
    return
  end
  f:write(CHILD)
  f:close()

  local function count(mode, name, size)
    local cmd = string.format("valgrind --tool=callgrind --callgrind-out-file=%s %s %s %s %s %d %s 2>&1",
      shell_quote(dir .. "/callgrind.out.%p"), shell_quote(interp), shell_quote(dir .. "/child.lua"),
      mode, name, size, shell_quote(script_dir))
    local out = read_command(cmd) or ""
    local ir = tonumber(string.match(out, "Collected%s*:%s*(%d+)"))
    os.execute("rm -f " .. shell_quote(dir) .. "/callgrind.out.*")
    local ok = string.match(out, "result %S+") ~= nil
    return ok and ir or nil, out
  end

  local modes = { "base" }
  if have_eh then modes[#modes + 1] = "empty" end
  if have_cprof then
    modes[#modes + 1] = default_timer
    if default_timer ~= "monotonic" and available.monotonic then modes[#modes + 1] = "monotonic" end
  end
  -- Lua 5.4 seeds its string hashes with the time and addresses, so the counts move by a few
  -- percent from one process to the next: each count is the median of CALLGRIND_REPS processes
  -- (the size-1 run that is subtracted once).
  local reps = opts.quick and 1 or CALLGRIND_REPS
  print(string.format("  each workload at the size shown minus size 1, in each mode; medians of %d"
    .. " processes; cprof with its default timer (%s) and monotonic", reps, tostring(default_timer)))
  local fmt = "  %-8s %-10s %9s %12s %10s %9s %11s"
  local header = string.format(fmt, "workload", "mode", "size", "Ir", "Ir/call", "/base", "cprof/empty")
  print(header)
  print("  " .. string.rep("-", #header - 2))
  local verdicts = {}
  for _, w in ipairs(selected) do
    local size = callgrind_size(w.name)
    local calls = w.calls(size) - w.calls(1)
    local res = {}
    for _, mode in ipairs(modes) do
      local bigs, out = {}, nil
      local small
      small, out = count(mode, w.name, 1)
      for _ = 1, reps do
        if not small then break end
        local big
        big, out = count(mode, w.name, size)
        if not big then break end
        bigs[#bigs + 1] = big
      end
      if #bigs < reps then
        print(string.format("  %-8s %-10s run failed: %s", w.name, mode,
          first_line(string.match(out or "", "[^\n]*[Ee]rror[^\n]*") or out or "?")))
      else
        res[mode] = median(bigs) - small
      end
    end
    for _, mode in ipairs(modes) do
      local net = res[mode]
      if net then
        local vs_empty = (mode ~= "base" and mode ~= "empty" and res.empty) and fmt_ratio(net, res.empty) or ""
        print(string.format(fmt, w.name, mode == default_timer and mode .. "*" or mode,
          mode == "base" and tostring(size) or "", tostring(net), string.format("%.0f", net / calls),
          fmt_ratio(net, res.base), vs_empty))
      end
    end
    if res[default_timer] and res.empty then
      verdicts[#verdicts + 1] = string.format("%s %.2fx", w.name, res[default_timer] / res.empty)
    end
  end
  cleanup()
  if #verdicts > 0 then
    print("  cprof/empty by instruction count, default timer: " .. table.concat(verdicts, ", "))
  end
end

callgrind()
print("")
for _, w in ipairs(selected) do
  print(string.format("  %-8s %s", w.name, w.what))
end
print(string.format("\ntotal: CPU %.1f s%s", cpu_clock() - started_cpu,
  started_wall and string.format(", wall %.1f s (plus the header's timer measurements)",
                                 wall_clock() - started_wall) or ""))
