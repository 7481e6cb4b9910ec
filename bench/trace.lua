-- bench/trace.lua -- what the time line costs: Profile{trace = true} against the aggregate-only
-- Profile{}, the same fib(n) side by side in one run (interleaved, medians), and valgrind's
-- instruction counts per call of each, which are free of timing noise.
--
--   eval "$(make -s env)"; lua5.4 bench/trace.lua [--reps=5] [--n=26] [--callgrind-n=18]
--
-- Plain Lua 5.1 syntax, so the same file runs under LuaJIT.  See bench/README.md.

local opts = { reps = 5, n = 26, ["callgrind-n"] = 18 }
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^%-%-([%w-]+)=(%d+)$")
  if not k or not opts[k] then
    io.stderr:write("usage: lua bench/trace.lua [--reps=N] [--n=N] [--callgrind-n=N]\n")
    os.exit(2)
  end
  opts[k] = tonumber(v)
end

local cprof = require "cprof"
local clock = os.clock

local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local function calls(n)
  local a, b = 0, 1
  for _ = 1, n + 1 do a, b = b, a + b end
  return 2 * a - 1
end

local MODES = {
  { name = "base", make = function() return nil end },
  { name = "aggregate", make = function() return cprof.Profile() end },
  { name = "trace", make = function() return cprof.Profile({ trace = true, trace_size = 2 * calls(opts.n) + 8 }) end },
}

-- One timed run of mode m: seconds of CPU time for fib(n).
local function run(m, n)
  local p = m.make()
  local t0 = clock()
  if p then p:enable() end
  fib(n)
  if p then p:disable() end
  return clock() - t0
end

local function median(t)
  table.sort(t)
  return t[math.floor((#t + 1) / 2)]
end

print(string.format("fib(%d): %d calls, %d runs per mode, interleaved; CPU seconds (os.clock)",
  opts.n, calls(opts.n), opts.reps))
local times = {}
for _, m in ipairs(MODES) do times[m.name] = {} end
run(MODES[3], 10) -- the ring's first allocation and the code paths warmed
for r = 1, opts.reps do
  for i = 0, #MODES - 1 do
    local m = MODES[(i + r) % #MODES + 1]
    local tt = times[m.name]
    tt[#tt + 1] = run(m, opts.n)
  end
end
local med = {}
for _, m in ipairs(MODES) do med[m.name] = median(times[m.name]) end
print(string.format("  %-10s %10s %10s %12s", "mode", "seconds", "/base", "/aggregate"))
for _, m in ipairs(MODES) do
  print(string.format("  %-10s %10.4f %10.2f %12.2f", m.name, med[m.name], med[m.name] / med.base,
    med[m.name] / med.aggregate))
end

-- Instruction counts: fib(n) minus fib(1) in a child interpreter, per mode.
local function shell_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
local interp = arg and arg[-1]
local have = io.popen("command -v valgrind 2>/dev/null"):read("*a")
if not interp or not have:match("%S") then
  print("instruction counts skipped: valgrind is not installed")
  return
end
local child = os.tmpname()
local f = assert(io.open(child, "w"))
f:write([[
local mode, n = arg[1], tonumber(arg[2])
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local p = mode ~= "base" and require("cprof").Profile(mode == "trace" and { trace = true } or nil)
if p then p:enable() end
fib(n)
if p then p:disable() end
]])
f:close()
local function ir(mode, n)
  local out = io.popen(("valgrind --tool=callgrind --callgrind-out-file=/dev/null %s %s %s %d 2>&1")
    :format(shell_quote(interp), shell_quote(child), mode, n)):read("*a")
  return tonumber(out:match("Collected%s*:%s*(%d+)"))
end
local n = opts["callgrind-n"]
print(string.format("Instruction counts (valgrind --tool=callgrind): fib(%d) - fib(1), %d calls",
  n, calls(n) - 1))
print(string.format("  %-10s %12s %10s %12s", "mode", "Ir", "Ir/call", "/aggregate"))
local per = {}
for _, m in ipairs(MODES) do
  local big, small = ir(m.name, n), ir(m.name, 1)
  per[m.name] = big and small and (big - small) / (calls(n) - 1)
end
for _, m in ipairs(MODES) do
  local v = per[m.name]
  print(string.format("  %-10s %12s %10s %12s", m.name, v and ("%.0f"):format(v * (calls(n) - 1)) or "?",
    v and ("%.0f"):format(v) or "?", v and per.aggregate and ("%.2f"):format(v / per.aggregate) or ""))
end
os.remove(child)
