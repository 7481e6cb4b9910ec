-- bench/html.lua -- how long the HTML report takes to open and draw itself, on a large profile.
--
--   make bench
--   eval "$(make -s env)"; lua5.4 bench/html.lua [--frames=20000] [--nodes=100000] [--rounds=7]
--
-- Builds a synthetic profile of --frames functions (Lua functions in 40 files) whose call tree has
-- --nodes call paths, walked depth first (about 15 levels deep, no function twice on a path),
-- with its functions' and caller->callee edges' numbers summed from the nodes, as a program's
-- profile holds them; writes it as a dump, then `cprof-stats --html` and `--export svg` of it
-- (their sizes and the time each export took), and the report of examples/json_demo.lua next to
-- its SVG (issue 33's size goal: within 2x).  Then it opens the large report and the small one in
-- headless Chromium, one after the other, --rounds times each (spec/readers/browser.js, as the
-- export specs drive it), and prints the milliseconds from the start of the navigation to the
-- end of the page's drawing (its script done: the page answers clicks) and to the next frame the
-- browser paints, and the CPU time of the page's main thread until then (which a busy machine
-- does not stretch as it stretches the others), median, smallest and largest.  The goal (issue 33): the report of 20,000
-- functions interactive in under 2 s.
-- Needs Chromium and playwright-core (make export-readers); without them it prints the sizes only.
-- Plain Lua 5.1 syntax, so that it runs under LuaJIT too.

local script_dir = arg and arg[0] and string.match(arg[0], "^(.*)[/\\]") or "."
local W = assert(loadfile(script_dir .. "/lib/workloads.lua"))(script_dir)
local usage = W.usage("html.lua", [[
usage: lua bench/html.lua [options]
  --frames=N   functions in the profile (20000)
  --nodes=N    its call paths (100000)
  --rounds=N   loads of each report in Chromium (7)
]])
local opts = W.parse_args(arg, { frames = "number", nodes = "number", rounds = "number" },
  { frames = 20000, nodes = 100000, rounds = 7 }, usage)

local ok, dump = pcall(require, "cprof.dump")
if not ok or not pcall(require, "cprof.core") then
  io.stderr:write("bench/html.lua: cprof.core is needed (make; eval \"$(make -s env)\")\n")
  os.exit(1)
end

local LUA = rawget(_G, "jit") and "luajit" or "lua5.4"
local root = script_dir .. "/.."
local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p '" .. dir .. "'"))

local q = W.shell_quote

-- An LCG: the same profile on every run and every Lua; its high bits (the low ones repeat
-- with short periods, and would leave most functions uncalled).
local seed = 12345
local function random(k)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return math.floor(seed / 65536) % k + 1
end

local columns = require("cprof.profdata").new_section

local function build()
  local F = columns({ "kind", "file", "line", "lastline", "name", "ncalls", "pcalls", "tottime", "cumtime" })
  local N = columns({ "parent", "frame", "ncalls", "pcalls", "tottime", "cumtime" })
  local E = columns({ "caller", "callee", "ncalls", "pcalls", "tottime", "cumtime" })
  F.n = opts.frames
  for i = 1, F.n do
    F.kind[i], F.file[i], F.line[i], F.lastline[i] = "Lua", "src/mod" .. (i % 40) .. ".lua", i, i + 5
    F.name[i] = "fn" .. i
    F.ncalls[i], F.pcalls[i], F.tottime[i], F.cumtime[i] = 0, 0, 0, 0
  end
  local path, on, depth = {}, {}, 0
  while N.n < opts.nodes do
    if depth > 0 and random(30) <= depth then
      on[N.frame[path[depth]]] = nil
      depth = depth - 1
    end
    local f = random(F.n)
    if not on[f] then
      local k = N.n + 1
      N.n = k
      N.parent[k], N.frame[k] = depth > 0 and path[depth] or 0, f
      N.ncalls[k] = random(50)
      N.pcalls[k], N.tottime[k], N.cumtime[k] = N.ncalls[k], random(1000) * 1e-6, 0
      depth = depth + 1
      path[depth], on[f] = k, true
    end
  end
  for k = N.n, 1, -1 do
    N.cumtime[k] = N.cumtime[k] + N.tottime[k]
    local p = N.parent[k]
    if p > 0 then N.cumtime[p] = N.cumtime[p] + N.cumtime[k] end
  end
  local edge = {}
  for k = 1, N.n do
    local f, p = N.frame[k], N.parent[k]
    F.ncalls[f], F.pcalls[f] = F.ncalls[f] + N.ncalls[k], F.pcalls[f] + N.pcalls[k]
    F.tottime[f], F.cumtime[f] = F.tottime[f] + N.tottime[k], F.cumtime[f] + N.cumtime[k]
    if p > 0 then
      local key = N.frame[p] .. ">" .. f
      local e = edge[key]
      if not e then
        e = E.n + 1
        E.n, edge[key] = e, e
        E.caller[e], E.callee[e] = N.frame[p], f
        E.ncalls[e], E.pcalls[e], E.tottime[e], E.cumtime[e] = 0, 0, 0, 0
      end
      E.ncalls[e], E.pcalls[e] = E.ncalls[e] + N.ncalls[k], E.pcalls[e] + N.pcalls[k]
      E.tottime[e], E.cumtime[e] = E.tottime[e] + N.tottime[k], E.cumtime[e] + N.cumtime[k]
    end
  end
  return { meta = { lua_version = "Lua 5.4", timer = "counter", unit = 1, bias = 0, command = "bench/html.lua",
                    start_time = 1700000000, total_time = 0, pid = 1, host = "bench", tree_cap = 10000000,
                    tree_folded = 0, dropped = 0 },
           frames = F, edges = E, nodes = N }
end

local function clock() return os.clock() end

-- Runs a shell command; its stdout, or it stops the bench.
local function run(cmd)
  local p = assert(io.popen(cmd .. " 2>&1; echo \"=$?\""))
  local out = p:read("*a")
  p:close()
  local body, status = string.match(out, "^(.-)=(%d+)%s*$")
  if status ~= "0" then
    io.stderr:write("bench/html.lua: failed: " .. cmd .. "\n" .. tostring(body) .. "\n")
    os.exit(1)
  end
  return body
end

local function size(path)
  local f = assert(io.open(path, "rb"))
  local n = f:seek("end")
  f:close()
  return n
end

local function now() return tonumber(run("date +%s.%N")) end

-- `cprof-stats ARGS`, its wall time in seconds.
local function stats(args)
  local t = now()
  run(LUA .. " " .. q(root .. "/bin/cprof-stats") .. " " .. args)
  return now() - t
end

local big = dir .. "/big.prof"
local t0 = clock()
local d = build()
dump.write(big, d)
local called = 0
for f = 1, d.frames.n do if d.frames.ncalls[f] > 0 then called = called + 1 end end
print(string.format("profile: %d functions (%d called), %d call paths, %d edges (built and written in %.1f s)",
  d.frames.n, called, d.nodes.n, d.edges.n, clock() - t0))
d = nil
local th = stats(q(big) .. " --html -o " .. q(dir .. "/big.html"))
local ts = stats(q(big) .. " --export svg -o " .. q(dir .. "/big.svg"))
print(string.format("big: report %d bytes (cprof-stats --html %.1f s), svg %d bytes (%.1f s)",
  size(dir .. "/big.html"), th, size(dir .. "/big.svg"), ts))

local demo = dir .. "/demo.prof"
run(string.format("cd %s && CPROF_OUT=%s CPROF_QUIET=1 %s -l cprof.auto examples/json_demo.lua > /dev/null",
  q(root), q(demo), LUA))
stats(q(demo) .. " --html -o " .. q(dir .. "/demo.html"))
stats(q(demo) .. " --export svg -o " .. q(dir .. "/demo.svg"))
local hs, ss = size(dir .. "/demo.html"), size(dir .. "/demo.svg")
print(string.format("examples/json_demo.lua: report %d bytes, svg %d bytes: %.2fx (goal: at most 2x)",
  hs, ss, hs / ss))

local readers = root .. "/build/export-readers"
local have = io.open(readers .. "/node_modules/playwright-core/package.json")
if not have or not os.execute("command -v chromium > /dev/null") then
  print("Chromium or playwright-core missing (make export-readers): no load times")
  os.execute("rm -rf " .. q(dir))
  return
end
have:close()

-- The machine is shared: its load says how far the times below are from an idle machine's.
local function load()
  local f = io.open("/proc/loadavg")
  local l = f and f:read("*l") or "?"
  if f then f:close() end
  return (string.match(l, "^(%S+)")) or l
end
local load_before = load()

local jobs = {}
for _ = 1, opts.rounds do
  jobs[#jobs + 1] = string.format('{"kind":"html","file":%q,"steps":[{"click":"#table tbody tr"}]}', dir .. "/big.html")
  jobs[#jobs + 1] = string.format('{"kind":"html","file":%q,"steps":[{"click":"#table tbody tr"}]}', dir .. "/demo.html")
end
local f = assert(io.open(dir .. "/jobs.json", "w"))
f:write("[" .. table.concat(jobs, ",") .. "]")
f:close()
local out = run("env -u LD_PRELOAD node " .. q(root .. "/spec/readers/browser.js") .. " " .. q(readers) .. " "
  .. q(dir .. "/jobs.json"))
local times = { {}, {} }
local i = 0
for ready, painted, thread in string.gmatch(out, '"ready":([%d.]+),"painted":([%d.]+),"thread":(%d+)') do
  i = i + 1
  local t = times[(i - 1) % 2 + 1]
  t[#t + 1] = { tonumber(ready), tonumber(painted), tonumber(thread) }
end
if i ~= 2 * opts.rounds or string.find(out, '"error"') or string.find(out, '"errors":%["')
    or string.find(out, '"requests":%["') then
  io.stderr:write("bench/html.lua: the browser runs failed: " .. out:sub(1, 2000) .. "\n")
  os.exit(1)
end
-- "median (smallest..largest)" of the loads' j-th time
local function spread(t, j)
  local v = {}
  for k, x in ipairs(t) do v[k] = x[j] end
  table.sort(v)
  return string.format("%.0f ms (%.0f..%.0f)", v[math.floor((#v + 1) / 2)], v[1], v[#v])
end
print(string.format("load average %s before the loads, %s after (%d cores)", load_before, load(),
  tonumber(run("nproc")) or 0))
for k, name in ipairs({ opts.frames .. " functions", "examples/json_demo.lua" }) do
  print(string.format("%s: drawn %s, painted %s, main thread's CPU %s, over %d loads%s", name,
    spread(times[k], 1), spread(times[k], 2), spread(times[k], 3), opts.rounds,
    k == 1 and " (goal: interactive in under 2000 ms)" or ""))
end
os.execute("rm -rf " .. q(dir))
