-- bench/dump.lua -- size, write time and load time of the binary dump (docs/FORMAT.md).
--
--   make bench
--   eval "$(make -s env)"; lua5.4 bench/dump.lua [--frames=100000] [--edges=1000000]
--                                               [--nodes=1000000] [--reps=3]
--
-- Builds a synthetic profile data table (100 000 frames, 1 000 000 edges, 1 000 000 nodes by
-- default), writes it with cprof.core.write_dump and reads it back with read_dump, --reps
-- times each, and prints the file's size with the median write and load times. For the same
-- data it also prints the size of Python's pstats dump (marshal of the stats dict, SPEC.md §1
-- in shared/reference/pstats), worked out byte by byte without building it: once in the
-- plain layout of SPEC.md §1, once with the string back-references CPython's marshal adds.
-- pstats has no call tree: its size covers frames and edges only.
-- Plain Lua 5.1 syntax, so the same file runs under LuaJIT.

local opts = { frames = 100000, edges = 1000000, nodes = 1000000, reps = 3 }
for _, a in ipairs(arg or {}) do
  local k, v = string.match(a, "^%-%-(%w+)=(%d+)$")
  if k and opts[k] then
    opts[k] = tonumber(v)
  else
    io.stderr:write("usage: lua bench/dump.lua [--frames=N] [--edges=N] [--nodes=N] [--reps=N]\n")
    os.exit(2)
  end
end

local ok, core = pcall(require, "cprof.core")
if not ok or not core.write_dump then
  io.stderr:write("bench/dump.lua: cprof.core with write_dump is needed (make; eval \"$(make -s env)\")\n")
  os.exit(1)
end

local floor, random = math.floor, math.random
math.randomseed(42)
local clock = os.clock

---------------------------------------------------------------------------
-- The synthetic profile
---------------------------------------------------------------------------

-- A frame index drawn with a heavy skew towards small indexes, as real profiles have a few
-- functions (the main loop, string.format, ...) everywhere.
local function skewed(n)
  local u = random()
  return 1 + floor((n - 1) * u * u * u)
end

local function ticks_time(max)  -- a time as the engine makes it: integer ticks * unit
  return floor(random() * max) * 1e-9
end

local function build()
  local F, E, K = opts.frames, opts.edges, opts.nodes
  local fr = { n = F, kind = {}, file = {}, line = {}, lastline = {}, name = {},
               ncalls = {}, pcalls = {}, tottime = {}, cumtime = {} }
  for i = 1, F do
    local c = i % 10 == 0
    fr.kind[i] = c and "C" or (i % 50 == 1 and "main" or "Lua")
    fr.file[i] = c and "~" or ("src/pkg" .. (i % 40) .. "/module" .. floor(i / 50) .. ".lua")
    fr.line[i] = c and 0 or (i % 50) * 20 + 1
    fr.lastline[i] = c and -1 or (i % 50) * 20 + 15
    fr.name[i] = c and ("string.fn" .. (i % 300)) or ("function_" .. i)
    local n = floor(1 + random() * 5000)
    fr.ncalls[i] = n
    fr.pcalls[i] = n - floor(random() * n / 4)
    fr.tottime[i] = ticks_time(5e8)
    fr.cumtime[i] = fr.tottime[i] + ticks_time(5e8)
  end
  -- Edges: unique (caller, callee) pairs, about E / F callers per callee.
  local ed = { n = 0, caller = {}, callee = {}, ncalls = {}, pcalls = {}, tottime = {}, cumtime = {} }
  local per = math.max(1, floor(E / F))
  local e = 0
  for callee = 1, F do
    local seen = {}
    local want = (callee <= E - per * F) and per + 1 or per
    local tries = 0
    while want > 0 and e < E do
      local caller = skewed(F)
      tries = tries + 1
      if tries > 20 then caller = random(F) end
      if not seen[caller] then
        seen[caller] = true
        e = e + 1
        want = want - 1
        local n = floor(1 + random() * 1000)
        ed.caller[e], ed.callee[e] = caller, callee
        ed.ncalls[e], ed.pcalls[e] = n, n
        ed.tottime[e] = ticks_time(1e8)
        ed.cumtime[e] = ed.tottime[e] + ticks_time(1e8)
      end
    end
  end
  ed.n = e
  -- Nodes: a call tree in depth-first order (as the engine lists it), 2 to 40 deep.
  local no = { n = K, parent = {}, frame = {}, ncalls = {}, pcalls = {}, tottime = {}, cumtime = {} }
  local path, depth = {}, 0
  for i = 1, K do
    if depth > 0 and (depth >= 40 or random() < 0.45) then
      depth = depth - floor(1 + random() * math.min(depth, 4))
    end
    no.parent[i] = depth > 0 and path[depth] or 0
    depth = depth + 1
    path[depth] = i
    no.frame[i] = skewed(F)
    local n = floor(1 + random() * 100)
    no.ncalls[i], no.pcalls[i] = n, n
    no.tottime[i] = ticks_time(1e7)
    no.cumtime[i] = no.tottime[i] + ticks_time(1e7)
  end
  return {
    meta = { lua_version = _VERSION, timer = "monotonic", unit = 1e-9, bias = 0.0,
             command = "lua5.4 synthetic.lua", start_time = 1795230000.25, total_time = 12.5,
             pid = 4242, host = "bench", tree_cap = 1000000, tree_folded = 0, dropped = 0 },
    frames = fr, edges = ed, nodes = no,
  }
end

---------------------------------------------------------------------------
-- pstats' marshal layout, byte count only (SPEC.md §1)
---------------------------------------------------------------------------

local function int_size(v)
  if v >= -2147483648 and v <= 2147483647 then return 5 end  -- 'i' int32
  local digits, a = 0, math.abs(v)
  while a > 0 do digits = digits + 1; a = floor(a / 32768) end
  return 5 + 2 * digits                                       -- 'l' int32 n, n x uint16
end

local function str_size(s)
  -- 'z' uint8 length + ASCII (what CPython writes for short ASCII), else 'u' int32 + UTF-8.
  if #s < 256 and not string.find(s, "[\128-\255]") then return 2 + #s end
  return 5 + #s
end

-- plain: every string written out; refs: a string seen before is a 5-byte back-reference
-- ('r' int32), as CPython's marshal (version 3+) writes strings shared between keys.
local function pstats_sizes(data)
  local fr, ed = data.frames, data.edges
  local seen = {}
  local plain, refs = 2, 2             -- '{' ... '0'
  local function key(i)
    local p = 2 + int_size(fr.line[i]) -- ')' uint8 3: the short tuple form
    local r = p
    for _, s in ipairs({ fr.file[i], fr.name[i] }) do
      local n = str_size(s)
      p = p + n
      if seen[s] then r = r + 5 else seen[s] = true; r = r + n end
    end
    return p, r
  end
  local ncallers = {}
  for e = 1, ed.n do
    local c = ed.callee[e]
    ncallers[c] = (ncallers[c] or 0) + 1
  end
  for i = 1, fr.n do
    local p, r = key(i)
    -- value: (cc, nc, tt, ct, callers) + the callers dict's '{' and '0'
    local v = 2 + int_size(fr.pcalls[i]) + int_size(fr.ncalls[i]) + 9 + 9 + 2
    plain, refs = plain + p + v, refs + r + v
  end
  for e = 1, ed.n do
    local p, r = key(ed.caller[e])
    local v = 2 + int_size(ed.ncalls[e]) + int_size(ed.pcalls[e]) + 9 + 9  -- (nc, cc, tt, ct)
    plain, refs = plain + p + v, refs + r + v
  end
  return plain, refs
end

---------------------------------------------------------------------------

local function median(t)
  table.sort(t)
  return t[floor((#t + 1) / 2)]
end

local function mb(bytes) return string.format("%.1f MB", bytes / 1e6) end

local function gc()
  collectgarbage("collect")
  collectgarbage("collect")
end

local path = os.tmpname()
local t0 = clock()
local data = build()
local build_time = clock() - t0
print(string.format("bench/dump.lua under %s: %d frames, %d edges, %d nodes (built in %.1f s)",
                    rawget(_G, "jit") and jit.version or _VERSION, data.frames.n, data.edges.n,
                    data.nodes.n, build_time))

local writes, reads = {}, {}
for _ = 1, opts.reps do
  gc()
  t0 = clock()
  core.write_dump(path, data)
  writes[#writes + 1] = clock() - t0
end
local f = assert(io.open(path, "rb"))
local size = f:seek("end")
-- Section sizes, from the directory (docs/FORMAT.md): kind u32, offset u64, length u64.
f:seek("set", 0)
local header = f:read(16 + 20 * 6)
f:close()
local function le(s, pos, n)
  local v = 0
  for i = n, 1, -1 do v = v * 256 + string.byte(s, pos + i - 1) end
  return v
end
local section_size = {}
for i = 0, le(header, 13, 4) - 1 do
  local e = 17 + 20 * i
  section_size[le(header, e, 4)] = le(header, e + 12, 8)
end
for _ = 1, opts.reps do
  gc()
  t0 = clock()
  local back = core.read_dump(path)
  reads[#reads + 1] = clock() - t0
  assert(back.edges.n == data.edges.n and back.nodes.n == data.nodes.n)
  back = nil  -- luacheck: ignore
end
os.remove(path)
local plain, refs = pstats_sizes(data)

local per = size / (data.frames.n + data.edges.n + data.nodes.n)
print(string.format("  dump size          %s (%d bytes, %.1f bytes per record)", mb(size), size, per))
print(string.format("  sections           schema %d B, strings %s, frames %s, edges %s, nodes %s, meta %d B",
                    section_size[1], mb(section_size[2]), mb(section_size[3]), mb(section_size[4]),
                    mb(section_size[5]), section_size[6]))
print(string.format("  write (median/%d)   %.3f s", opts.reps, median(writes)))
print(string.format("  load  (median/%d)   %.3f s", opts.reps, median(reads)))
print(string.format("  pstats layout      %s plain (SPEC.md §1), %s with string back-references",
                    mb(plain), mb(refs)))
print(string.format("  dump / pstats      %.2fx / %.2fx for the whole dump, call tree included;",
                    size / plain, size / refs))
local flat = size - section_size[5]
print(string.format("                     %.2fx / %.2fx without the call tree (%s), which pstats lacks",
                    flat / plain, flat / refs, mb(flat)))
