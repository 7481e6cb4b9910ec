-- bench/export.lua -- time and peak memory of every export format on a large dump.
--
--   make bench
--   eval "$(make -s env)"; lua5.4 bench/export.lua [--edges=1000000] [--frames=100000]
--                                                  [--formats=svg,folded,...] [--dump=FILE]
--
-- Builds a synthetic call tree whose distinct caller->callee pairs number --edges (one million
-- by default) over --frames functions, as a program's profile would hold it: a tree walked
-- depth first, about 15 levels deep on average, recursion folded into the ancestor's node as the engine
-- folds it, every frame's and edge's numbers summed from the nodes.  It writes that as a
-- dump, then runs one child process per format that loads the dump and exports it to a file,
-- the way `cprof-stats big.prof --export FORMAT -o out` does, and prints the child's elapsed
-- time and peak memory (VmHWM) next to the goal: under 10 s and 1 GB each.  --dump=FILE keeps
-- the dump in FILE.
-- Plain Lua 5.1 syntax, so that it runs under LuaJIT too.

local opts = { edges = 1000000, frames = 100000,
               formats = "svg,folded,pstats,callgrind,speedscope,pprof,chrome,tree", dump = "" }
for _, a in ipairs(arg or {}) do
  local k, v = string.match(a, "^%-%-(%w+)=(.+)$")
  if k and opts[k] ~= nil then
    opts[k] = tonumber(v) or v
  else
    io.stderr:write("usage: lua bench/export.lua [--edges=N] [--frames=N] [--formats=a,b,...] [--dump=FILE]\n")
    os.exit(2)
  end
end

local ok, core = pcall(require, "cprof.core")
if not ok or not core.write_dump then
  io.stderr:write("bench/export.lua: cprof.core is needed (make; eval \"$(make -s env)\")\n")
  os.exit(1)
end

local floor, random = math.floor, math.random
math.randomseed(7)
local LUA = rawget(_G, "jit") and "luajit" or "lua5.4"

-- A frame drawn with a skew towards small numbers: a few functions are everywhere.
local function pick(n)
  local u = random()
  return 1 + floor((n - 1) * u * u)
end

local function build()
  local NF = opts.frames
  local F = { n = NF, kind = {}, file = {}, line = {}, lastline = {}, name = {}, ncalls = {},
              pcalls = {}, tottime = {}, cumtime = {} }
  for i = 1, NF do
    local c = i % 9 == 0
    F.kind[i] = c and "C" or (i % 997 == 1 and "main" or "Lua")
    F.file[i] = c and "=[C]" or ("src/pkg" .. (i % 37) .. "/mod" .. floor(i / 40) .. ".lua")
    F.line[i] = c and -1 or (i % 40) * 25 + 1
    F.lastline[i] = c and -1 or (i % 40) * 25 + 20
    F.name[i] = c and ("lib.fn" .. i) or ("function_" .. i)
    F.ncalls[i], F.pcalls[i], F.tottime[i], F.cumtime[i] = 0, 0, 0, 0
  end
  local N = { n = 0, parent = {}, frame = {}, ncalls = {}, pcalls = {}, tottime = {}, cumtime = {} }
  local E = { n = 0, caller = {}, callee = {}, ncalls = {}, pcalls = {}, tottime = {}, cumtime = {} }
  local edge_of = {}
  local path, on_path, depth = {}, {}, 0
  while E.n < opts.edges do
    -- Up 1 to 3 levels with a chance that grows with depth: about 15 levels deep on average.
    if depth > 0 and random() * 30 < depth then
      local up = floor(1 + random() * math.min(depth, 3))
      for _ = 1, up do
        on_path[N.frame[path[depth]]] = nil
        depth = depth - 1
      end
    end
    local f = pick(NF)
    if not on_path[f] then
      local k = N.n + 1
      N.n = k
      N.parent[k] = depth > 0 and path[depth] or 0
      N.frame[k] = f
      local calls = floor(1 + random() * random() * 2000)
      N.ncalls[k], N.pcalls[k] = calls, calls
      N.tottime[k] = floor(random() * 2e6) * 1e-9
      if depth > 0 then
        local caller = N.frame[path[depth]]
        local key = caller * (NF + 1) + f
        local e = edge_of[key]
        if not e then
          e = E.n + 1
          E.n = e
          edge_of[key] = e
          E.caller[e], E.callee[e] = caller, f
          E.ncalls[e], E.pcalls[e], E.tottime[e], E.cumtime[e] = 0, 0, 0, 0
        end
      end
      depth = depth + 1
      path[depth] = k
      on_path[f] = true
    end
  end
  -- Inclusive times, then every frame's and edge's numbers from its nodes.
  for k = 1, N.n do N.cumtime[k] = N.tottime[k] end
  for k = N.n, 1, -1 do
    local p = N.parent[k]
    if p > 0 then N.cumtime[p] = N.cumtime[p] + N.cumtime[k] end
  end
  for k = 1, N.n do
    local f = N.frame[k]
    F.ncalls[f] = F.ncalls[f] + N.ncalls[k]
    F.pcalls[f] = F.pcalls[f] + N.pcalls[k]
    F.tottime[f] = F.tottime[f] + N.tottime[k]
    F.cumtime[f] = F.cumtime[f] + N.cumtime[k]
    local p = N.parent[k]
    if p > 0 then
      local e = edge_of[N.frame[p] * (NF + 1) + f]
      E.ncalls[e] = E.ncalls[e] + N.ncalls[k]
      E.pcalls[e] = E.pcalls[e] + N.pcalls[k]
      E.tottime[e] = E.tottime[e] + N.tottime[k]
      E.cumtime[e] = E.cumtime[e] + N.cumtime[k]
    end
  end
  local total = 0
  for k = 1, N.n do total = total + N.tottime[k] end
  return {
    meta = { lua_version = _VERSION, timer = "monotonic", unit = 1e-9, bias = 0.0,
             command = "lua5.4 synthetic.lua", start_time = 1795230000.25, total_time = total,
             pid = 4242, host = "bench", tree_cap = 2000000, tree_folded = 0, dropped = 0 },
    frames = F, edges = E, nodes = N,
  }
end

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- The child: load, export, then print the elapsed time and the peak resident size.
local CHILD = [[
local path, format, out = ...
local clock = require("cprof").Profile({ timer = "monotonic" })
local t0 = clock:now()
if format == "tree" then
  local f = assert(io.open(out, "w"))
  local m = require("cprof.export").model(path)
  require("cprof.report.tree").write(m, function(s) f:write(s) end, {})
  f:close()
else
  require("cprof.export").export(format, path, out)
end
local elapsed = clock:now() - t0
local hwm = 0
for line in io.lines("/proc/self/status") do
  local kb = line:match("^VmHWM:%s*(%d+) kB")
  if kb then hwm = tonumber(kb) * 1024 end
end
print(string.format("%.3f %d", elapsed, hwm))
]]

local t0 = os.clock()
local data = build()
local path = opts.dump ~= "" and opts.dump or os.tmpname()
core.write_dump(path, data)
local f = assert(io.open(path, "rb"))
local size = f:seek("end")
f:close()
local depth, maxdepth = {}, 0
local sum = 0
for k = 1, data.nodes.n do
  local p = data.nodes.parent[k]
  depth[k] = (p > 0 and depth[p] or 0) + 1
  sum = sum + depth[k]
  if depth[k] > maxdepth then maxdepth = depth[k] end
end
print(string.format("bench/export.lua under %s: %d frames, %d edges, %d nodes (mean depth %.1f,"
  .. " deepest %d), dump %.1f MB, built in %.1f s", LUA, data.frames.n, data.edges.n, data.nodes.n,
  sum / data.nodes.n, maxdepth, size / 1e6, os.clock() - t0))
data, depth = nil, nil
collectgarbage("collect")

local script = os.tmpname()
f = assert(io.open(script, "w"))
f:write(CHILD)
f:close()
print(string.format("  %-11s %9s %11s %11s   %s", "format", "time", "peak RSS", "output", "goal: < 10 s, < 1 GB"))
local failed = false
for format in string.gmatch(opts.formats, "[^,]+") do
  local out = os.tmpname()
  local p = io.popen(string.format("%s %s %s %s %s 2>&1", LUA, q(script), q(path), q(format), q(out)))
  local text = p:read("*a")
  p:close()
  local secs, hwm = text:match("^([%d.]+) (%d+)\n$")
  local g = io.open(out, "rb")
  local osize = g and g:seek("end") or 0
  if g then g:close() end
  os.remove(out)
  if secs then
    secs, hwm = tonumber(secs), tonumber(hwm)
    local good = secs < 10 and hwm < 2 ^ 30
    failed = failed or not good
    print(string.format("  %-11s %7.2f s %8.0f MB %8.1f MB   %s", format, secs, hwm / 2 ^ 20,
      osize / 1e6, good and "ok" or "OVER"))
  else
    failed = true
    print(string.format("  %-11s failed: %s", format, (text:gsub("\n", " "))))
  end
end
os.remove(script)
if opts.dump == "" then os.remove(path) end
os.exit(failed and 1 or 0)
