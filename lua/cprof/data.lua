--- cprof.data: the columnar profile data that Profile:snapshot() returns and that dumps hold.
--
--   data = {
--     meta   = { lua_version, timer, unit, bias, command, start_time, total_time, pid, host,
--                tree_cap, tree_folded, dropped [, merged] },
--     frames = { n, kind, file, line, lastline, name, ncalls, pcalls, tottime, cumtime },
--     edges  = { n, caller, callee, ncalls, pcalls, tottime, cumtime },
--     nodes  = { n, parent, frame, ncalls, pcalls, tottime, cumtime },
--   }
--
-- Every column is a 1-based array of length n.  Edge endpoints and node frames are frame
-- indices; a node's parent is a smaller node index, or 0 for a root.  Times are in seconds.
--
--   data.to_stats(d)        the getstats()-shaped table that cprof.stats reads
--   data.merge(a, b, ...)   a new data table holding the sum of the profiles
--   data.from_stats(s)      data from a Stats object or a getstats() table (no tree)
--   data.merge_meta(a, b)   the meta of the sum of two profiles
--
-- Pure Lua; works on Lua 5.4 and LuaJIT.

local M = {}

local type, pairs, ipairs, tostring, error, select, sformat =
  type, pairs, ipairs, tostring, error, select, string.format

local STAT_COLS = { "ncalls", "pcalls", "tottime", "cumtime" }
M.STAT_COLUMNS = STAT_COLS
M.FRAME_COLUMNS = { "kind", "file", "line", "lastline", "name",
                    "ncalls", "pcalls", "tottime", "cumtime" }
M.EDGE_COLUMNS = { "caller", "callee", "ncalls", "pcalls", "tottime", "cumtime" }
M.NODE_COLUMNS = { "parent", "frame", "ncalls", "pcalls", "tottime", "cumtime" }

local function fail(fmt, ...)
  error("cprof.data: " .. sformat(fmt, ...), 0)
end

-- The section `name` of d, checked to be a table with a count n and the given columns.
local function section(d, name, cols, optional)
  local s = d[name]
  if s == nil and optional then return { n = 0 } end
  if type(s) ~= "table" then fail("'%s' must be a table, not a %s", name, type(s)) end
  local n = s.n
  if type(n) ~= "number" or n < 0 or n % 1 ~= 0 then
    fail("'%s.n' must be a count, not %s", name, tostring(n))
  end
  if n > 0 then
    for _, c in ipairs(cols) do
      if type(s[c]) ~= "table" then fail("'%s.%s' must be an array", name, c) end
    end
  end
  return s
end

local function check(d)
  if type(d) ~= "table" then fail("profile data must be a table, not a %s", type(d)) end
  local frames = section(d, "frames", M.FRAME_COLUMNS)
  local edges = section(d, "edges", M.EDGE_COLUMNS, true)
  local nodes = section(d, "nodes", M.NODE_COLUMNS, true)
  return frames, edges, nodes
end

-- A line number as text: 7 and 7.0 are the same line.
local function line_text(line)
  if type(line) == "number" and line % 1 == 0 and line > -2 ^ 53 and line < 2 ^ 53 then
    return sformat("%d", line)
  end
  return tostring(line)
end

--- The identity of frame i: C functions by name, others by (file, line, name).
local function frame_id(f, i)
  local name = tostring(f.name[i])
  if f.kind[i] == "C" then return "C\0" .. name end
  return "L\0" .. tostring(f.file[i]) .. "\0" .. line_text(f.line[i]) .. "\0" .. name
end
M.frame_id = frame_id

local function index(i, n, what)
  if type(i) ~= "number" or i < 1 or i > n or i % 1 ~= 0 then
    fail("%s %s is not a frame index (1..%d)", what, tostring(i), n)
  end
  return i
end

---------------------------------------------------------------------------
-- to_stats
---------------------------------------------------------------------------

local function stat_of(s, i)
  return { ncalls = s.ncalls[i], pcalls = s.pcalls[i], tottime = s.tottime[i],
           cumtime = s.cumtime[i] }
end

--- The getstats()-shaped table of `d`: one entry per frame that completed a call (0-call
--- frames are skipped, as cProfile skips them), in frame order, and its callers.  Entries also
--- carry `lastline`; the table carries `meta`.
function M.to_stats(d)
  local frames, edges = check(d)
  local meta = type(d.meta) == "table" and d.meta or {}
  local out = { timer = meta.timer, unit = meta.unit, meta = meta, entries = {} }
  if type(meta.dropped) == "number" and meta.dropped > 0 then out.dropped = meta.dropped end
  local row, entries, n = {}, out.entries, 0
  for i = 1, frames.n do
    if frames.ncalls[i] ~= 0 then
      n = n + 1
      row[i] = n
      local kind = frames.kind[i]
      local e = stat_of(frames, i)
      e.file, e.name, e.what = frames.file[i], frames.name[i], kind
      e.line = kind == "C" and 0 or frames.line[i]
      e.lastline = frames.lastline[i]
      e.callers = {}
      entries[n] = e
    end
  end
  for i = 1, edges.n do
    local caller = index(edges.caller[i], frames.n, "edge caller")
    local callee = index(edges.callee[i], frames.n, "edge callee")
    local rc, re = row[caller], row[callee]
    if edges.ncalls[i] ~= 0 and rc and re then
      local callers = entries[re].callers
      local old = callers[rc]
      if old then
        for _, c in ipairs(STAT_COLS) do old[c] = old[c] + edges[c][i] end
      else
        callers[rc] = stat_of(edges, i)
      end
    end
  end
  return out
end

---------------------------------------------------------------------------
-- merge
---------------------------------------------------------------------------

local SUMMED_META = { total_time = true, tree_folded = true, dropped = true }

--- The meta of the sum of two profiles: total_time, tree_folded and dropped are summed, the
--- rest comes from `a` (from `b` where `a` has nothing), and `merged` counts the profiles.
function M.merge_meta(a, b)
  a, b = a or {}, b or {}
  local m = {}
  for k, v in pairs(b) do m[k] = v end
  for k, v in pairs(a) do m[k] = v end
  for k in pairs(SUMMED_META) do
    local x, y = a[k], b[k]
    if type(x) == "number" and type(y) == "number" then m[k] = x + y end
  end
  m.merged = (type(a.merged) == "number" and a.merged or 1)
    + (type(b.merged) == "number" and b.merged or 1)
  return m
end

local function new_section(cols)
  local s = { n = 0 }
  for _, c in ipairs(cols) do s[c] = {} end
  return s
end

local function add_stats(dst, j, src, i)
  for _, c in ipairs(STAT_COLS) do dst[c][j] = dst[c][j] + src[c][i] end
end

local function copy_stats(dst, j, src, i)
  for _, c in ipairs(STAT_COLS) do dst[c][j] = src[c][i] end
end

-- Adds the profile `d` into the accumulator `acc` (frames, edges and nodes, with their
-- identity maps).
local function accumulate(acc, d)
  local frames, edges, nodes = check(d)
  local F, E, N = acc.data.frames, acc.data.edges, acc.data.nodes
  local fmap = {}
  for i = 1, frames.n do
    local id = frame_id(frames, i)
    local j = acc.frame_ids[id]
    if j then
      add_stats(F, j, frames, i)
    else
      j = F.n + 1
      F.n = j
      acc.frame_ids[id] = j
      for _, c in ipairs({ "kind", "file", "line", "lastline", "name" }) do
        F[c][j] = frames[c][i]
      end
      copy_stats(F, j, frames, i)
    end
    fmap[i] = j
  end
  for i = 1, edges.n do
    local caller = fmap[index(edges.caller[i], frames.n, "edge caller")]
    local callee = fmap[index(edges.callee[i], frames.n, "edge callee")]
    local id = caller .. ">" .. callee
    local j = acc.edge_ids[id]
    if j then
      add_stats(E, j, edges, i)
    else
      j = E.n + 1
      E.n = j
      acc.edge_ids[id] = j
      E.caller[j], E.callee[j] = caller, callee
      copy_stats(E, j, edges, i)
    end
  end
  local nmap = { [0] = 0 }
  for i = 1, nodes.n do
    local p = nodes.parent[i]
    if type(p) ~= "number" or p < 0 or p >= i or p % 1 ~= 0 then
      fail("node %d: parent %s is not a smaller node index or 0", i, tostring(p))
    end
    local frame = fmap[index(nodes.frame[i], frames.n, "node frame")]
    local parent = nmap[p]
    local id = parent .. ">" .. frame
    local j = acc.node_ids[id]
    if j then
      add_stats(N, j, nodes, i)
    else
      j = N.n + 1
      N.n = j
      acc.node_ids[id] = j
      N.parent[j], N.frame[j] = parent, frame
      copy_stats(N, j, nodes, i)
    end
    nmap[i] = j
  end
  if acc.meta == nil then
    acc.meta = {}
    for k, v in pairs(type(d.meta) == "table" and d.meta or {}) do acc.meta[k] = v end
  else
    acc.meta = M.merge_meta(acc.meta, type(d.meta) == "table" and d.meta or {})
  end
end

--- A new data table equal to the sum of the profiles a, b, ...: frames merged by identity
--- (C functions by name, others by file, line and name), edges by their two frames, tree
--- nodes by their path.  The inputs are not changed.
function M.merge(a, b, ...)
  local acc = {
    data = { frames = new_section(M.FRAME_COLUMNS), edges = new_section(M.EDGE_COLUMNS),
             nodes = new_section(M.NODE_COLUMNS) },
    frame_ids = {}, edge_ids = {}, node_ids = {}, meta = nil,
  }
  local all = { n = select("#", ...) + 2, a, b, ... }
  for i = 1, all.n do accumulate(acc, all[i]) end
  acc.data.meta = acc.meta
  return acc.data
end

---------------------------------------------------------------------------
-- from_stats
---------------------------------------------------------------------------

local function strip_brackets(name)
  if name:sub(1, 1) == "<" and name:sub(-1) == ">" then return name:sub(2, -2) end
  return name
end

-- Frames of a Stats object: { file, line, name, what, lastline, cc, nc, tt, ct, callers }.
local function rows_of_stats(st)
  local rows, keys = {}, {}
  for i, key in ipairs(st.order) do
    local r = st.stats[key]
    keys[key] = i
    local what = st.what and st.what[key]
    local name = key[3]
    local bracketed = type(name) == "string" and name:sub(1, 1) == "<" and name:sub(-1) == ">"
    if what == nil then
      -- A C function's key is ("~", 0, "<name>"); a "~" key without the brackets (from a
      -- pstats file) stays a plain frame, so that it reads back as the same key.
      if key[1] == "~" and key[2] == 0 and bracketed then what = "C"
      elseif key[2] == 0 and key[3] == "<main chunk>" then what = "main"
      else what = "Lua" end
    end
    if what == "C" then name = strip_brackets(name) end
    rows[i] = { file = key[1], line = key[2], name = name, what = what,
                lastline = st.lastline and st.lastline[key],
                pcalls = r[1], ncalls = r[2], tottime = r[3], cumtime = r[4], callers = {} }
  end
  for i, key in ipairs(st.order) do
    local cl = {}
    for ck, e in pairs(st.stats[key][5]) do
      local ci = keys[ck]
      if ci then
        cl[#cl + 1] = ci
        if type(e) == "table" then
          rows[i].callers[ci] = { ncalls = e[1], pcalls = e[2], tottime = e[3], cumtime = e[4] }
        else
          -- profile.py's call count (a pstats file): a dump edge has no way to say "no times"
          rows[i].callers[ci] = { ncalls = e, pcalls = e, tottime = 0, cumtime = 0 }
        end
      end
    end
  end
  return rows
end

--- Data from a Stats object (cprof.stats) or a getstats() table.  There is no call tree in
--- either, so the data has zero nodes.  Callers that are not functions of the Stats are left
--- out (a dump's edges join two frames); profile.py's call-count edges (pstats files) become
--- edges with that many calls, all primitive, and zero times.
function M.from_stats(s)
  if type(s) ~= "table" then fail("from_stats needs a Stats or a getstats() table") end
  local rows, meta
  if type(s.stats) == "table" and type(s.order) == "table" then
    rows = rows_of_stats(s)
    meta = s.meta
  elseif type(s.entries) == "table" then
    rows = s.entries
    meta = s.meta
  else
    fail("from_stats needs a Stats or a getstats() table")
  end
  local d = { frames = new_section(M.FRAME_COLUMNS), edges = new_section(M.EDGE_COLUMNS),
              nodes = new_section(M.NODE_COLUMNS) }
  local m = {
    lua_version = _VERSION, timer = s.timer or "unknown", unit = s.unit or 1, bias = 0,
    command = "", start_time = 0, total_time = 0, pid = 0, host = "",
    tree_cap = 0, tree_folded = 0, dropped = s.dropped or 0,
  }
  if type(meta) == "table" then for k, v in pairs(meta) do m[k] = v end end
  d.meta = m
  local F, E = d.frames, d.edges
  for i, e in ipairs(rows) do
    local kind = e.what
    if kind ~= "C" and kind ~= "main" then kind = "Lua" end
    F.kind[i], F.file[i], F.name[i] = kind, e.file, e.name
    F.line[i] = kind == "C" and 0 or (e.line or 0)
    F.lastline[i] = e.lastline or (kind == "C" and -1 or F.line[i])
    F.ncalls[i] = e.ncalls
    F.pcalls[i] = e.pcalls == nil and e.ncalls or e.pcalls
    F.tottime[i], F.cumtime[i] = e.tottime or 0, e.cumtime or 0
    F.n = i
  end
  for i, e in ipairs(rows) do
    local idx = {}
    for ci in pairs(e.callers or {}) do idx[#idx + 1] = ci end
    table.sort(idx)
    for _, ci in ipairs(idx) do
      local ed = e.callers[ci]
      local j = E.n + 1
      E.n = j
      E.caller[j], E.callee[j] = ci, i
      E.ncalls[j] = ed.ncalls
      E.pcalls[j] = ed.pcalls == nil and ed.ncalls or ed.pcalls
      E.tottime[j], E.cumtime[j] = ed.tottime or 0, ed.cumtime or 0
    end
  end
  return d
end

return M
