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
local opts = W.side_by_side_options(arg, { before = "string" }, { reps = 9, n = 24, ["callgrind-n"] = 20 },
  { reps = 3, n = 20, ["callgrind-n"] = 16 }, usage)

local cprof = require "cprof"
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

local run = W.run_mode
local selected = W.child_or_selected(opts, WORKLOADS, function() return MODES end, usage)
if not selected then return end

W.print_head("bench/recursion.lua: recursion kept in the call tree (recursion = 64) or folded"
  .. " (= 1)", cprof, opts)
for _, w in ipairs(selected) do
  run(MODES[#MODES], w.make(10)) -- warm-up
  local nodes = {}
  local times = W.interleave(w.name, MODES, w.make(opts.n), opts.reps, function(m, p)
    nodes[m.name] = p and p:snapshot().nodes.n
  end)
  print("")
  print(string.format("%s: %s", w.name, w.what))
  local fmt = "  %-13s %9s %6s  %-22s %-22s"
  print(string.format(fmt, "mode", "seconds", "nodes", "/base (IQR)", "/recursion=1 (IQR)"))
  for _, m in ipairs(MODES) do
    print(string.format(fmt, m.name, string.format("%.4f", W.median(times[m.name])),
      tostring(nodes[m.name] or ""), W.fmt_iqr(W.ratios(times, m.name, "base"), 3),
      W.fmt_iqr(W.ratios(times, m.name, "recursion=1"), 3)))
  end
  io.stdout:flush()
end

---------------------------------------------------------------------------
-- Instruction counts: this script as a child (--child=WORKLOAD/MODE) at --callgrind-n and at 1
---------------------------------------------------------------------------

local function callgrind()
  local n = opts["callgrind-n"]
  local count = W.instruction_counter(opts, arg[0], opts.before
    and ("; before: " .. opts.before .. "/cprof/core.so, default options") or "")
  if not count then return end
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
  local fmt = "  %-8s %-13s %12s %9s %8s %12s"
  print(string.format(fmt, "workload", "mode", "Ir", "Ir/call", "/base", opts.before and "/before" or "/recursion=1"))
  for _, w in ipairs(selected) do
    local ir = {}
    for _, m in ipairs(modes) do ir[m.name] = count(w.name .. "/" .. m.child, m.env) end
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
