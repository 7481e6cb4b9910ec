-- bench/recursion.lua -- what keeping recursion in the call tree (Profile{recursion = N},
-- default 64) costs next to folding it into the outer call (recursion = 1, what cprof did
-- before), and, with --before, next to another build of cprof.core.
--
--   eval "$(make -s env)"; lua5.4 bench/recursion.lua [--quick] [--reps=9] [--n=24]
--        [--callgrind-n=20] [--no-callgrind] [--before=DIR] [--only=fib,methods,mutual]
--
-- Workloads: fib(n) (direct recursion, n deep), method calls (no recursion: the tree is the
-- same either way) and an encoder of nested tables through three functions that call each other
-- (value -> list -> value ..., 12 deep).  Modes, timed interleaved within one process (each
-- round in a rotated order, a fresh profile per run, setup outside the timing): base (no
-- profile), recursion=1, recursion=64 (the default).  Then the call tree's nodes per mode, and
-- valgrind's instruction counts at --callgrind-n minus 1, a child interpreter per mode (median
-- of 3 processes); with --before=DIR also the default profile of the cprof.core in DIR
-- (DIR/cprof/core.so: another checkout's build/lua5.4), which makes the counts a before/after.
-- The child is this script with --child=WORKLOAD/MODE.  Plain Lua 5.1 syntax.

local script_dir = arg and arg[0] and string.match(arg[0], "^(.*)[/\\]") or "."
local W = assert(loadfile(script_dir .. "/lib/workloads.lua"))(script_dir)

local usage = W.usage("recursion.lua", [[
usage: lua bench/recursion.lua [options]
  --quick            3 rounds at n = 20, callgrind at n = 16, one process per count
  --reps=N           interleaved rounds of every mode (9)
  --n=N              size: fib(N), as many method calls, encodes of a 12-deep table (24)
  --callgrind-n=N    the size of the instruction counts (20)
  --no-callgrind     skip the instruction counts
  --before=DIR       also count the default profile of DIR/cprof/core.so (another build)
  --only=a,b         workloads: fib,methods,mutual (all)
  --child=W/MODE     one run of that mode at --n, for the instruction counts
]])
local opts = W.options(arg, {
  reps = "number", n = "number", ["callgrind-n"] = "number", ["no-callgrind"] = "flag",
  only = "set", quick = "flag", child = "string", before = "string",
}, { reps = 9, n = 24, ["callgrind-n"] = 20 }, { reps = 3, n = 20, ["callgrind-n"] = 16 }, usage)
opts.n = math.max(1, math.floor(opts.n))
opts["callgrind-n"] = math.max(2, math.floor(opts["callgrind-n"]))

local cprof = require "cprof"
local jit = rawget(_G, "jit")
local fib, fib_calls = W.fib, W.fib_calls
local methods = W.workloads[2]

-- A table nested DEPTH deep, and an encoder whose three functions call one another through it:
-- value -> list -> value -> ... (mutual recursion, as a JSON encoder's).
local DEPTH = 12
local function nested(d)
  if d == 0 then return 1 end
  return { nested(d - 1), d }
end
local value
local function list(t)
  local s = 0
  for i = 1, #t do s = s + value(t[i]) end
  return s
end
local function number(x) return x end
function value(x)
  if type(x) == "table" then return list(x) end
  return number(x)
end
local DATA = nested(DEPTH)
local CALLS_PER_ENCODE = 4 * DEPTH + 2 -- value, list, type per level; value, number at the bottom

local WORKLOADS = {
  { name = "fib", what = "fib(n), n deep", make = function(n) return function() return fib(n) end end,
    calls = fib_calls },
  { name = "methods", what = "fib's calls / 3 method steps (no recursion)",
    make = function(n) return methods.make(math.floor(fib_calls(n) / 3)) end,
    calls = function(n) return methods.calls(math.floor(fib_calls(n) / 3)) end },
  { name = "mutual", what = "value -> list -> value ... " .. DEPTH .. " deep, fib's calls in all",
    make = function(n)
      local times = math.floor(fib_calls(n) / CALLS_PER_ENCODE)
      return function()
        local s = 0
        for _ = 1, times do s = s + value(DATA) end
        return s
      end
    end,
    calls = function(n) return math.floor(fib_calls(n) / CALLS_PER_ENCODE) * CALLS_PER_ENCODE end },
}

local MODES = {
  { name = "base" },
  { name = "recursion=1", make = function() return cprof.Profile({ recursion = 1 }) end },
  { name = "recursion=64", make = function() return cprof.Profile() end },
}

-- One run of `fn` in `mode`: CPU seconds, fn's result and the profile's tree nodes.
local function run(mode, fn)
  collectgarbage("collect")
  if jit then jit.flush() end
  local p = mode.make and mode.make()
  if p then p:enable() end
  local c0 = os.clock()
  local r = fn()
  local c1 = os.clock()
  if p then p:disable() end
  return c1 - c0, r, p and p:snapshot().nodes.n
end

local function find(spec)
  local w, m = string.match(spec, "^([^/]+)/(.+)$")
  for _, work in ipairs(WORKLOADS) do
    for _, mode in ipairs(MODES) do
      if work.name == w and mode.name == m then return work, mode end
    end
  end
  usage("--child: no mode " .. spec)
end

if opts.child then
  local work, mode = find(opts.child)
  local _, r = run(mode, work.make(opts.n))
  io.write("result ", r, "\n")
  return
end

local selected = {}
for _, w in ipairs(WORKLOADS) do
  if not opts.only or opts.only[w.name] then selected[#selected + 1] = w end
end
if #selected == 0 then usage("--only selects no workload") end

local function fmt_spread(list)
  local q1, q2, q3 = W.quartiles(list)
  return string.format("%6.3f (%.3f-%.3f)", q2, q1, q3)
end

print("bench/recursion.lua: recursion kept in the call tree (recursion = 64) or folded (= 1)")
print(string.format("Lua: %s%s; cprof %s, timer %s", _VERSION, jit and (", " .. jit.version) or "",
  tostring(cprof._VERSION), cprof.Profile():getstats().timer))
print(string.format("%d interleaved rounds at n = %d; CPU seconds (os.clock); ratios: median over"
  .. " the rounds of each round's ratio, with the interquartile range", opts.reps, opts.n))
for _, w in ipairs(selected) do
  local fn = w.make(opts.n)
  local times, nodes, want = {}, {}, nil
  for _, m in ipairs(MODES) do times[m.name] = {} end
  run(MODES[#MODES], w.make(10)) -- warm-up
  for r = 1, opts.reps do
    for i = 0, #MODES - 1 do
      local m = MODES[(i + r) % #MODES + 1]
      local t, result, n = run(m, fn)
      if want == nil then want = result end
      if result ~= want then
        error(string.format("%s: mode %s computed %s, not %s", w.name, m.name, tostring(result),
          tostring(want)))
      end
      table.insert(times[m.name], t)
      nodes[m.name] = n
    end
  end
  print("")
  print(string.format("%s: %s", w.name, w.what))
  local fmt = "  %-13s %9s %6s  %-22s %-22s"
  print(string.format(fmt, "mode", "seconds", "nodes", "/base (IQR)", "/recursion=1 (IQR)"))
  for _, m in ipairs(MODES) do
    local to_base, to_fold = {}, {}
    for r, t in ipairs(times[m.name]) do
      to_base[r] = t / times.base[r]
      to_fold[r] = t / times["recursion=1"][r]
    end
    print(string.format(fmt, m.name, string.format("%.4f", W.median(times[m.name])),
      tostring(nodes[m.name] or ""), fmt_spread(to_base), fmt_spread(to_fold)))
  end
  io.stdout:flush()
end

---------------------------------------------------------------------------
-- Instruction counts: this script as a child (--child=WORKLOAD/MODE) at --callgrind-n and at 1
---------------------------------------------------------------------------

local function callgrind()
  print("")
  local n = opts["callgrind-n"]
  if opts["no-callgrind"] then return print("instruction counts skipped (--no-callgrind)") end
  local interp = arg and arg[-1]
  local have = W.read_command("command -v valgrind 2>/dev/null") or ""
  if not interp or not string.match(have, "%S") then
    return print("instruction counts skipped: valgrind is not installed")
  end
  local modes = {}
  for _, m in ipairs(MODES) do modes[#modes + 1] = { name = m.name, child = m.name, env = "" } end
  if opts.before then
    -- the other build's cprof.core, in its default mode (the cprof Lua modules are this
    -- checkout's: the before build is only asked for what both have)
    local so = opts.before .. "/cprof/core.so"
    if not io.open(so, "rb") then usage("--before: no " .. so) end
    table.insert(modes, 2, { name = "before", child = "recursion=64",
      env = "LUA_CPATH=" .. W.shell_quote(opts.before .. "/?.so;;") .. " LUA_CPATH_5_4="
        .. W.shell_quote(opts.before .. "/?.so;;") })
  end
  -- Lua 5.4 seeds its string hashes with the time and with addresses: a count moves by up to
  -- ~1% between processes, so each is the median of 3 (1 with --quick).
  local procs = opts.quick and 1 or 3
  local function count(work, mode, size)
    local irs = {}
    for i = 1, procs do
      local out = W.read_command(string.format(
        "%s valgrind --tool=callgrind --callgrind-out-file=/dev/null %s %s --child=%s --n=%d 2>&1",
        mode.env, W.shell_quote(interp), W.shell_quote(arg[0]),
        W.shell_quote(work.name .. "/" .. mode.child), size)) or ""
      irs[i] = string.match(out, "result %S+") and tonumber(string.match(out, "Collected%s*:%s*(%d+)"))
      if not irs[i] then error(work.name .. "/" .. mode.name .. ": the child failed:\n" .. out) end
    end
    return W.median(irs)
  end
  print(string.format("Instruction counts (valgrind --tool=callgrind): n = %d minus n = 1, a child"
    .. " interpreter per mode, median of %d processes%s", n, procs,
    opts.before and ("; before: " .. opts.before .. "/cprof/core.so, default options") or ""))
  local fmt = "  %-8s %-13s %12s %9s %8s %12s"
  print(string.format(fmt, "workload", "mode", "Ir", "Ir/call", "/base", opts.before and "/before" or "/recursion=1"))
  for _, w in ipairs(selected) do
    local ir = {}
    for _, m in ipairs(modes) do ir[m.name] = count(w, m, n) - count(w, m, 1) end
    local calls = w.calls(n) - w.calls(1)
    local ref = opts.before and ir.before or ir["recursion=1"]
    for _, m in ipairs(modes) do
      print(string.format(fmt, w.name, m.name, ir[m.name], string.format("%.0f", ir[m.name] / calls),
        string.format("%.2f", ir[m.name] / ir.base),
        m.name ~= "base" and string.format("%.4f", ir[m.name] / ref) or ""))
    end
    io.stdout:flush()
  end
end

callgrind()
