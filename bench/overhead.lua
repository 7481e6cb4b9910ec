-- bench/overhead.lua -- how much does cprof slow a program down?
--
--   make bench
--   eval "$(make -s env)"; lua5.4 bench/overhead.lua [--reps=3] [--target=0.5]
--                                                   [--budget=48] [--only=fib,coro]
--   lua5.4 bench/overhead.lua --check   (verify the call counts, then exit)
--
-- Every workload is timed in three modes, interleaved (base, empty, cprof,
-- base, empty, cprof, ...) so that drift in machine speed hits all modes alike:
--
--   base   no hook at all
--   empty  emptyhook.set(): a C call/return hook whose body does nothing,
--          i.e. the floor that every lua_sethook-based profiler pays
--   cprof  cprof.Profile():enable() ... :disable()
--
-- The medians are reported with the ratios empty/base, cprof/base and
-- cprof/empty (the part of the overhead that is cprof's own work), and the
-- extra cost per call.  See bench/README.md.  Plain Lua 5.1 syntax, so the
-- same file runs under LuaJIT.

local opts = { reps = 3, target = 0.5, budget = 48, only = nil }

local function usage(msg)
  if msg then io.stderr:write("overhead.lua: ", msg, "\n") end
  io.stderr:write("usage: lua bench/overhead.lua [--reps=N] [--target=SECONDS]"
                  .. " [--budget=SECONDS] [--only=fib,methods,strings,coro]"
                  .. " [--check]\n")
  os.exit(msg and 2 or 0)
end

for _, a in ipairs(arg or {}) do
  local k, v = string.match(a, "^%-%-(%w+)=(.*)$")
  if a == "--help" or a == "-h" then
    usage()
  elseif a == "--check" then
    opts.check = true
  elseif k == "reps" or k == "target" or k == "budget" then
    opts[k] = tonumber(v) or usage("bad value for --" .. k .. ": " .. v)
  elseif k == "only" then
    opts.only = {}
    for name in string.gmatch(v, "[^,%s]+") do opts.only[name] = true end
  else
    usage("unknown argument " .. a)
  end
end
opts.reps = math.max(1, math.floor(opts.reps))

local script_dir = arg and arg[0] and string.match(arg[0], "^(.*)[/\\]") or "."

---------------------------------------------------------------------------
-- Modules and clocks
---------------------------------------------------------------------------

local function first_line(err)
  return (string.match(tostring(err), "^[^\n]*"))
end

local have_eh, emptyhook = pcall(require, "emptyhook")
if not have_eh then emptyhook = first_line(emptyhook) end

local have_cprof, cprof = pcall(require, "cprof")
if have_cprof and type(cprof) ~= "table" then
  have_cprof, cprof = false, "it returned a " .. type(cprof) .. ", not a table"
elseif not have_cprof then
  cprof = first_line(cprof)
end

local cpu_clock = os.clock
local wall_clock = have_eh and emptyhook.monotonic or nil
local jit = rawget(_G, "jit")

---------------------------------------------------------------------------
-- Workloads
--
-- make(size) returns a function that does the work and returns a checksum
-- (compared across modes).  calls(size) is the number of call events the
-- run produces (Lua and C functions), used for the per-call columns.
-- resize(size, f) gives a size that should take about f times as long.
---------------------------------------------------------------------------

local function resize_linear(size, f)
  return math.max(1, math.floor(size * f + 0.5))
end

-- (a) recursive fib from examples/fib.lua
CPROF_FIB_NO_MAIN = true
dofile(script_dir .. "/../examples/fib.lua")
local fib = fib

local PHI = (1 + math.sqrt(5)) / 2

local function fib_value(n)
  local a, b = 0, 1
  for _ = 1, n do a, b = b, a + b end
  return a
end

-- (b) method calls on objects with metatables, with an inherited __index chain
local Vec = {}
Vec.__index = Vec

function Vec.new(x, y)
  return setmetatable({ x = x, y = y }, Vec)
end

function Vec:add(o)
  self.x = self.x + o.x
  self.y = self.y + o.y
  return self
end

function Vec:dot(o)
  return self.x * o.x + self.y * o.y
end

local Particle = setmetatable({}, { __index = Vec })
Particle.__index = Particle

function Particle.new(x, y, vx, vy)
  local p = setmetatable({ x = x, y = y }, Particle)
  p.v = Vec.new(vx, vy)
  return p
end

function Particle:step()
  self:add(self.v)                  -- inherited from Vec
  return self:dot(self.v) * 1e-6    -- inherited from Vec
end

local NPARTICLES = 64

-- (d) producer/consumer coroutine pair
local cocreate, coresume, coyield, cowrap =
  coroutine.create, coroutine.resume, coroutine.yield, coroutine.wrap

local workloads = {
  {
    name = "fib",
    what = "recursive fib(N) from examples/fib.lua",
    size = 20,
    label = function(n) return "fib(" .. n .. ")" end,
    resize = function(n, f)
      return math.max(10, n + math.floor(math.log(f) / math.log(PHI) + 0.5))
    end,
    calls = function(n) return 2 * fib_value(n + 1) - 1 end,
    make = function(n) return function() return fib(n) end end,
  },
  {
    name = "methods",
    what = "obj:method() calls through metatables (3 calls/step)",
    size = 10000,
    label = function(n) return n .. " steps" end,
    resize = resize_linear,
    calls = function(n) return 3 * n + 4 * NPARTICLES end,
    make = function(n)
      return function()
        local ps = {}
        for i = 1, NPARTICLES do
          ps[i] = Particle.new(i, -i, i % 7 - 3, i % 5 - 2)
        end
        local acc = 0
        for i = 1, n do
          acc = acc + ps[i % NPARTICLES + 1]:step()
        end
        return acc
      end
    end,
  },
  {
    name = "strings",
    what = "string building, 2 C calls per 32 concatenations",
    size = 1000,
    label = function(n) return n .. " lines" end,
    resize = resize_linear,
    calls = function(n) return 2 * n end,
    make = function(n)
      local concat, rep = table.concat, string.rep
      return function()
        local parts, total = {}, 0
        for i = 1, n do
          for j = 1, 32 do
            parts[j] = "key" .. j .. "=" .. (i + j)
          end
          local line = concat(parts, ";")
          total = total + #line + #rep("-", 16 + i % 48)
        end
        return total
      end
    end,
  },
  {
    name = "coro",
    what = "producer/consumer coroutine pair (4 C calls/item)",
    size = 10000,
    label = function(n) return n .. " items" end,
    resize = resize_linear,
    -- create + wrap, n+1 resumes, n calls of the consumer, both coroutine
    -- bodies starting once, n yields in each
    calls = function(n) return 4 * n + 5 end,
    make = function(n)
      return function()
        local producer = cocreate(function()
          for i = 1, n do coyield(i) end
        end)
        local total = 0
        local consumer = cowrap(function(item)
          while true do
            total = total + item % 97
            item = coyield()
          end
        end)
        while true do
          local _, item = coresume(producer)
          if item == nil then break end
          consumer(item)
        end
        return total
      end
    end,
  },
}

---------------------------------------------------------------------------
-- Measuring
---------------------------------------------------------------------------

local MODES = { "base", "empty", "cprof" }
local available = { base = true, empty = have_eh, cprof = have_cprof }

-- Run fn once in the given mode; returns cpu seconds, wall seconds (or nil)
-- and fn's result.  Setup and teardown of the hook are outside the timing.
local function measure(mode, fn)
  collectgarbage("collect")
  if jit then jit.flush() end      -- no traces compiled before the hook was set
  local prof
  if mode == "cprof" then
    prof = cprof.Profile()
    prof:enable()
  elseif mode == "empty" then
    emptyhook.set()
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

local function median(list)
  if #list == 0 then return nil end
  local s = {}
  for i, v in ipairs(list) do s[i] = v end
  table.sort(s)
  local m = math.floor((#s + 1) / 2)
  if #s % 2 == 1 then return s[m] end
  return (s[m] + s[m + 1]) / 2
end

-- Grow the workload until the base run takes about opts.target seconds.
-- Returns the size, its base time, and a smaller size/time pair to probe.
local function calibrate(w)
  local size = w.size
  local t = measure("base", w.make(size))
  local probe_size, probe_t = size, t
  while t < opts.target do
    local f = opts.target / math.max(t, 1e-4)
    f = math.min(math.max(1.1 * f, 1.2), 20)
    local next_size = w.resize(size, f)
    if next_size <= size then next_size = size + 1 end
    size = next_size
    t = measure("base", w.make(size))
    if t <= opts.target / 4 then probe_size, probe_t = size, t end
  end
  return size, t, probe_size, probe_t
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
  print("cprof:     loaded" .. (cprof._VERSION and (" " .. tostring(cprof._VERSION)) or ""))
else
  print("cprof:     NOT AVAILABLE - require \"cprof\" failed: " .. cprof)
  print("           (build it and set the paths: make && eval \"$(make -s env)\");"
        .. " cprof columns show '-'")
end
if have_eh then
  print("emptyhook: loaded")
else
  print("emptyhook: NOT AVAILABLE - require \"emptyhook\" failed: " .. emptyhook)
  print("           (make bench builds build/<lua>/emptyhook.so; it must be on"
        .. " LUA_CPATH); empty columns and wall times show '-'")
end
print(string.format("method:    median of %d interleaved runs per mode, budget ~%g s; cpu = os.clock(),"
      .. " wall = %s", opts.reps, opts.budget,
      wall_clock and "CLOCK_MONOTONIC (emptyhook.monotonic)" or "n/a"))
if jit then
  print("           jit.flush() before every run: hooked runs mostly execute interpreted")
end
print("")

local started = cpu_clock()
local selected = {}
for _, w in ipairs(workloads) do
  if not opts.only or opts.only[w.name] then selected[#selected + 1] = w end
end
if #selected == 0 then usage("--only selects no workload") end

-- --check: count the call events of a small run with a debug hook and
-- compare them with the formula behind the "calls" column.
local function count_calls(fn)
  local count = 0
  debug.sethook(function() count = count + 1 end, "c")
  fn()
  debug.sethook()
  return count - 2          -- the calls of fn itself and of debug.sethook
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

-- Each workload gets an equal share of the time budget.  It is calibrated
-- (base run ~opts.target seconds), the hooked modes are probed once at a
-- smaller size to predict its cost, and it is shrunk if the prediction
-- exceeds its share.  If the first real round still shows the prediction was
-- far off (this happens with LuaJIT), it is shrunk once more and restarted.
local share = opts.budget / #selected
local notes = {}

local function disable_mode(mode, err)
  debug.sethook()               -- remove whatever hook the failed run left
  available[mode] = false
  print(string.format("%-10s DISABLED - %s run failed: %s",
                      mode == "cprof" and "cprof:" or "emptyhook:", mode,
                      first_line(err)))
end

local function probe_factor(fn, base_t)
  local factor = 1
  for _, mode in ipairs(MODES) do
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

-- One round: every available mode once, in order.  Returns its CPU cost.
local function run_round(w, fn, expected)
  local cost = 0
  for _, mode in ipairs(MODES) do
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
        table.insert(w.cpu[mode], c)
        if wt then table.insert(w.wall[mode], wt) end
        cost = cost + c
      end
    end
  end
  return cost
end

for _, w in ipairs(selected) do
  local size, t, probe_size, probe_t = calibrate(w)
  local predicted = opts.reps * t * probe_factor(w.make(probe_size), probe_t)
  if predicted > share then
    local new_size = w.resize(size, share / predicted)
    if new_size < size then
      size = new_size
      table.insert(notes, string.format("%s: predicted %.1f s > %.1f s share"
        .. " of the budget, scaled down", w.name, predicted, share))
    end
  end

  local retried = false
  local round = 1
  local expected = {}
  w.cpu, w.wall = {}, {}
  for _, mode in ipairs(MODES) do w.cpu[mode], w.wall[mode] = {}, {} end
  local fn = w.make(size)
  while round <= opts.reps do
    local cost = run_round(w, fn, expected)
    if round == 1 and not retried and opts.reps > 1
       and cost * opts.reps > 1.5 * share then
      retried = true
      local new_size = w.resize(size, share / (cost * opts.reps))
      if new_size < size then
        table.insert(notes, string.format("%s: first round took %.1f s,"
          .. " scaled down and restarted", w.name, cost))
        size, fn, expected = new_size, w.make(new_size), {}
        for _, mode in ipairs(MODES) do w.cpu[mode], w.wall[mode] = {}, {} end
        round = 0
      end
    end
    round = round + 1
  end
  w.run_size = size
  for _, mode in ipairs(MODES) do
    w.cpu[mode] = median(w.cpu[mode])
    w.wall[mode] = median(w.wall[mode])
  end
end

for _, note in ipairs(notes) do print("note:      " .. note) end
if #notes > 0 then print("") end

local function print_table(title, key)
  print(title)
  local header = string.format("%-8s %-13s %12s %8s %8s %8s %11s %11s %12s",
    "workload", "size", "calls", "base", "empty", "cprof",
    "empty/base", "cprof/base", "cprof/empty")
  print(header)
  print(string.rep("-", #header))
  for _, w in ipairs(selected) do
    local t = w[key]
    print(string.format("%-8s %-13s %12d %8s %8s %8s %11s %11s %12s",
      w.name, w.label(w.run_size), w.calls(w.run_size),
      fmt_time(t.base), fmt_time(t.empty), fmt_time(t.cprof),
      fmt_ratio(t.empty, t.base), fmt_ratio(t.cprof, t.base),
      fmt_ratio(t.cprof, t.empty)))
  end
  print("")
end

print_table("CPU time (os.clock), seconds, median", "cpu")
if wall_clock then
  print_table("Wall time (monotonic clock), seconds, median", "wall")
end

print("Extra CPU time per call event, nanoseconds (mode minus base, divided by calls)")
local header = string.format("%-8s %10s %10s %10s", "workload", "empty", "cprof", "cprof-empty")
print(header)
print(string.rep("-", #header))
for _, w in ipairs(selected) do
  local t, n = w.cpu, w.calls(w.run_size)
  print(string.format("%-8s %10s %10s %10s", w.name,
    fmt_ns(t.empty, t.base, n), fmt_ns(t.cprof, t.base, n),
    fmt_ns(t.cprof, t.empty, n)))
end
print("")
for _, w in ipairs(selected) do
  print(string.format("  %-8s %s", w.name, w.what))
end
print(string.format("\ntotal CPU time %.1f s", cpu_clock() - started))
