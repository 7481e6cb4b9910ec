--- cprof.profdata: the columnar profile data that Profile:snapshot() returns and that dumps hold:
--- its shape, checks, sums, and its conversions to and from the rows a Stats reads.
--
--   data = {
--     meta   = { lua_version, timer, unit, bias, command, start_time, total_time, pid, host,
--                tree_cap, tree_folded, dropped [, tree_recursion] [, merged] [, memory, mem_*] },
--     frames = { n, kind, file, line, lastline, name, ncalls, pcalls, tottime, cumtime
--                [, alloc_count, alloc_bytes, free_count, free_bytes, min_size, max_size] },
--     edges  = { n, caller, callee, ncalls, pcalls, tottime, cumtime },
--     nodes  = { n, parent, frame, ncalls, pcalls, tottime, cumtime
--                [, alloc_count, alloc_bytes, free_count, free_bytes, min_size, max_size] },
--     lines  = { n, frame, line, hits, time },                      -- optional
--     mem_caches, mem_types, mem_arenas, mem_free_lists = {...},    -- optional
--   }
--
-- Every column is a 1-based array of length n.  Edge endpoints, node and line frames are frame
-- indices; a node's parent is a smaller node index, or 0 for a root.  Times are in seconds.
-- The memory columns are there only for profiles with memory (cprof's allocator); `lines` only
-- for profiles with line events; the mem_* groups and meta keys only in dumps taken with cprof's
-- allocator installed (the allocator snapshot: cprof.allocdata reads and writes it).
--
--   profdata.to_stats(d)        the getstats()-shaped table that cprof.stats reads
--   profdata.merge(a, b, ...)   a new data table holding the sum of the profiles
--   profdata.from_stats(s)      data from a Stats object or a getstats() table (no tree)
--   profdata.merge_meta(a, b)   the meta of the sum of two profiles
--   profdata.add_memory(a, b)   the sum of two memory records (counts summed, min/max kept)
--   profdata.children(n, parent)       the tree's children, in compressed rows
--   profdata.outermost(n, parent, key)  the nodes with no ancestor of the same key
--
-- Pure Lua; works on Lua 5.4 and LuaJIT.

local _ENV = require("cprof.env")()

local funckey = require "cprof.funckey"
local args = require "cprof.args"

local M = {}

local type, pairs, ipairs, tostring, error, select, sformat =
  type, pairs, ipairs, tostring, error, select, string.format

local STAT_COLS = { "ncalls", "pcalls", "tottime", "cumtime" }
M.STAT_COLUMNS = STAT_COLS
M.FRAME_COLUMNS = { "kind", "file", "line", "lastline", "name",
                    "ncalls", "pcalls", "tottime", "cumtime" }
M.EDGE_COLUMNS = { "caller", "callee", "ncalls", "pcalls", "tottime", "cumtime" }
M.NODE_COLUMNS = { "parent", "frame", "ncalls", "pcalls", "tottime", "cumtime" }
M.LINE_COLUMNS = { "frame", "line", "hits", "time" }
--- The memory columns of frames and nodes (a memory record has these fields).
local MEM_COLS = { "alloc_count", "alloc_bytes", "free_count", "free_bytes", "min_size", "max_size" }
M.MEMORY_COLUMNS = MEM_COLS

--- The allocator snapshot: totals (meta keys "mem_" .. name) and the columns of its groups.
M.MEM_TOTALS = { "lua_bytes", "requested", "foreign", "held", "footprint", "mapped", "peak_mapped",
                 "metadata", "live", "allocs", "failures", "limit_failures", "foreign_frees" }
M.MEM_CACHE_COLUMNS = { "name", "type", "source", "objsize", "slab_size", "objects", "live",
                        "magazine", "allocs", "requested", "slabs", "partial_slabs" }
M.MEM_TYPE_COLUMNS = { "name", "tag", "live", "bytes", "held", "allocs", "large_live",
                       "large_allocs", "large_held" }
M.MEM_ARENA_COLUMNS = { "name", "source", "quantum", "total", "alloc", "free", "imported",
                        "peak_total", "nr_allocs", "nr_free_segs", "nr_spans", "nr_imports",
                        "nr_empty", "allocs", "frees", "imports", "releases", "import_failures",
                        "hash_size", "hash_empty", "hash_longest", "meta", "qcache_max",
                        "qcached", "qcached_bytes", "qcache_allocs", "qcache_frees" }
M.MEM_FREE_LIST_COLUMNS = { "arena", "list", "segs" }
local MEM_GROUPS = { "mem_caches", "mem_types", "mem_arenas", "mem_free_lists" }

-- Errors say "cprof.data:" (what is wrong with the profile data), as they always have.
local function fail(fmt, ...)
  error("cprof.data: " .. sformat(fmt, ...), 0)
end
M.fail = fail

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

--- The frames, edges and nodes sections of profile data `d`, checked to be tables of columns;
--- raises "cprof.data: ..." (no position: the data is at fault) when they are not.
local function check(d)
  if type(d) ~= "table" then fail("profile data must be a table, not a %s", type(d)) end
  local frames = section(d, "frames", M.FRAME_COLUMNS)
  local edges = section(d, "edges", M.EDGE_COLUMNS, true)
  local nodes = section(d, "nodes", M.NODE_COLUMNS, true)
  return frames, edges, nodes
end
M.check = check

-- A line number as text: 7 and 7.0 are the same line.
local function line_text(line)
  if type(line) == "number" and line % 1 == 0 and line > -2 ^ 53 and line < 2 ^ 53 then
    return sformat("%d", line)
  end
  return tostring(line)
end

--- The identity of frame i: C functions by name, others by (file, line, name).
local function frame_id(f, i)
  args.check(type(f) == "table" and type(f.name) == "table" and type(f.kind) == "table", f, 1,
             "frame_id", "frames section")
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

--- Whether a profile's meta says it was made on LuaJIT (whose compiler cprof turns off, and
--- whose built-ins send no return event: docs/SEMANTICS.md, "LuaJIT").
function M.on_luajit(meta)
  local v = type(meta) == "table" and meta.lua_version
  return type(v) == "string" and string.find(v, "^LuaJIT") ~= nil
end

--- How a C function of this name runs another coroutine: "resume" (coroutine.resume) or
--- "wrap" (a function made by coroutine.wrap, named by its body, "wrap(file:line)", or as a
--- whole: docs/SEMANTICS.md, "Names"); nil when it does not.
function M.runs_coroutine(name)
  if name == "coroutine.resume" then return "resume" end
  if name == "function made by coroutine.wrap" or string.find(name, "^wrap%(.*:%d+%)$") then
    return "wrap"
  end
end

---------------------------------------------------------------------------
-- Memory records
---------------------------------------------------------------------------

local function zero_memory()
  return { alloc_count = 0, alloc_bytes = 0, free_count = 0, free_bytes = 0, min_size = 0,
           max_size = 0 }
end
M.zero_memory = zero_memory

--- The sum of two memory records { alloc_count, alloc_bytes, free_count, free_bytes, min_size,
--- max_size }: counts and bytes summed; the smallest and largest sizes of the allocations of
--- both (a record without allocations has no sizes to compare).
function M.add_memory(a, b)
  args.check(type(a) == "table", a, 1, "add_memory", "memory record")
  args.check(type(b) == "table", b, 2, "add_memory", "memory record")
  local out = {}
  for _, c in ipairs(MEM_COLS) do out[c] = (a[c] or 0) + (b[c] or 0) end
  local an, bn = a.alloc_count or 0, b.alloc_count or 0
  local amin, bmin = a.min_size or 0, b.min_size or 0
  if an == 0 then out.min_size = bmin
  elseif bn == 0 then out.min_size = amin
  else out.min_size = amin < bmin and amin or bmin end
  local amax, bmax = a.max_size or 0, b.max_size or 0
  out.max_size = amax > bmax and amax or bmax
  return out
end

-- The memory record of row i of a group with memory columns.
local function memory_of(g, i)
  local m = {}
  for _, c in ipairs(MEM_COLS) do m[c] = g[c][i] or 0 end
  return m
end

local function has_memory(g)
  return type(g) == "table" and type(g.alloc_count) == "table"
end

--- Memory per frame: the frames' own columns when they have them (data made from a Stats), else
--- the sum of the frame's tree nodes.  nil when d has no memory.
local function frame_memory(frames, nodes)
  local per = {}
  if has_memory(frames) then
    for i = 1, frames.n do per[i] = memory_of(frames, i) end
    return per
  end
  if not has_memory(nodes) then return nil end
  for i = 1, frames.n do per[i] = zero_memory() end
  for k = 1, nodes.n do
    local f = index(nodes.frame[k], frames.n, "node frame")
    per[f] = M.add_memory(per[f], memory_of(nodes, k))
  end
  return per
end
M.frame_memory = frame_memory

--- children(n, parent): the children of the n tree nodes (parent[k] < k, 0 for a root), in
--- compressed rows: node k's children, in node order, are child[first[k] .. first[k + 1] - 1],
--- the roots those of node 0.  { first = first, child = child }.
function M.children(n, parent)
  local count, first = {}, {}
  for k = 0, n + 1 do count[k] = 0 end
  for k = 1, n do count[parent[k]] = count[parent[k]] + 1 end
  local pos = 1
  for k = 0, n do
    first[k] = pos
    pos = pos + count[k]
  end
  first[n + 1] = pos
  local fill, child = {}, {}
  for k = 0, n do fill[k] = first[k] end
  for k = 1, n do
    local p = parent[k]
    child[fill[p]] = k
    fill[p] = fill[p] + 1
  end
  return { first = first, child = child }
end

--- outermost(n, parent, key): for the n tree nodes (as children's), which are the outermost of
--- their `key` (key[k], any value) on their path: out[k] is true when no ancestor of k has
--- key[k].  The tree keeps recursion up to a depth (docs/SEMANTICS.md, "The call tree"), so a
--- function's nodes nest; its outermost ones hold each of its outermost calls once.  One
--- depth-first walk, without recursion in Lua.
function M.outermost(n, parent, key)
  local kids = M.children(n, parent)
  local first, child = kids.first, kids.child
  local out, on, at, stack, top = {}, {}, { [0] = first[0] }, { 0 }, 1
  while top > 0 do
    local k = stack[top]
    local i = at[k]
    if i < first[k + 1] then
      at[k] = i + 1
      local c = child[i]
      local seen = on[key[c]] or 0
      out[c] = seen == 0
      on[key[c]] = seen + 1
      at[c] = first[c]
      top = top + 1
      stack[top] = c
    else
      top = top - 1
      if k > 0 then on[key[k]] = on[key[k]] - 1 end
    end
  end
  return out
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
--- carry `lastline`; the table carries `meta`.  When d has memory, every entry has the memory
--- fields of getstats() (alloc_count, alloc_bytes, free_count, free_bytes, live_bytes, min_size,
--- max_size); when d has line records, the entries that have some get `lines`
--- ({ [line] = { hits, time } }).
function M.to_stats(d)
  local frames, edges, nodes = check(d)
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
  local mem = frame_memory(frames, nodes)
  if mem then
    for i = 1, frames.n do
      local e = row[i] and entries[row[i]]
      if e then
        for _, c in ipairs(MEM_COLS) do e[c] = mem[i][c] end
        e.live_bytes = mem[i].alloc_bytes - mem[i].free_bytes
      end
    end
  end
  local lines = d.lines
  if type(lines) == "table" then
    lines = section(d, "lines", M.LINE_COLUMNS)
    for i = 1, lines.n do
      local e = entries[row[index(lines.frame[i], frames.n, "line frame")] or 0]
      local line = lines.line[i]
      if e and type(line) == "number" then
        e.lines = e.lines or {}
        local old = e.lines[line]
        local hits, time = lines.hits[i] or 0, lines.time[i] or 0
        if old then
          old.hits, old.time = old.hits + hits, old.time + time
        else
          e.lines[line] = { hits = hits, time = time }
        end
      end
    end
  end
  return out
end

---------------------------------------------------------------------------
-- merge
---------------------------------------------------------------------------

local SUMMED_META = { total_time = true, tree_folded = true, dropped = true,
                      bias_clamped = true, memory_lost = true, timer_errors = true,
                      memory_allocs = true, memory_bytes = true, memory_frees = true,
                      memory_freed = true, bias_subtracted = true, bias_uncertainty = true,
                      bias_lost = true, overhead_estimate = true }

--- The meta of the sum of two profiles: total_time, tree_folded, dropped, bias_clamped,
--- memory_lost, timer_errors, the memory totals (memory_allocs, ...) and the overhead
--- (bias_subtracted, bias_uncertainty, bias_lost, overhead_estimate) are summed, the rest comes from `a`
--- (from `b` where `a` has nothing), and `merged` counts the profiles.
function M.merge_meta(a, b)
  args.check(type(a) == "table", a, 1, "merge_meta", "meta table")
  args.check(type(b) == "table", b, 2, "merge_meta", "meta table")
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
M.new_section = new_section

local function add_stats(dst, j, src, i)
  for _, c in ipairs(STAT_COLS) do dst[c][j] = dst[c][j] + src[c][i] end
end

local function copy_stats(dst, j, src, i)
  for _, c in ipairs(STAT_COLS) do dst[c][j] = src[c][i] end
end

-- The memory of row i of src added into row j of dst (`existed`: row j already had numbers).
-- dst gets memory columns as soon as one source has them; rows of sources without are 0.
local function merge_memory(dst, j, src, i, existed)
  if has_memory(src) then
    if not has_memory(dst) then
      for _, c in ipairs(MEM_COLS) do
        dst[c] = {}
        for r = 1, dst.n do dst[c][r] = 0 end
      end
    end
    local m = memory_of(src, i)
    if existed then m = M.add_memory(memory_of(dst, j), m) end
    for _, c in ipairs(MEM_COLS) do dst[c][j] = m[c] end
  elseif has_memory(dst) and not existed then
    for _, c in ipairs(MEM_COLS) do dst[c][j] = 0 end
  end
end

-- A copy of the columns of group g (nil when absent).
local function copy_group(g, cols)
  if type(g) ~= "table" then return nil end
  local out = { n = g.n }
  for _, c in ipairs(cols) do
    if type(g[c]) == "table" then
      out[c] = {}
      for i = 1, g.n do out[c][i] = g[c][i] end
    end
  end
  return out
end

local MEM_GROUP_COLUMNS = {
  mem_caches = M.MEM_CACHE_COLUMNS, mem_types = M.MEM_TYPE_COLUMNS,
  mem_arenas = M.MEM_ARENA_COLUMNS, mem_free_lists = M.MEM_FREE_LIST_COLUMNS,
}

local function has_allocator(d)
  return type(d.mem_caches) == "table" or type(d.mem_types) == "table"
    or type(d.mem_arenas) == "table"
end
M.has_allocator = has_allocator

-- The row of group T that `ids` (identity -> row) gives to `id`, and true; or, for an identity
-- not seen yet, a new last row of T, and false.
local function row_of(T, ids, id)
  local j = ids[id]
  if j then return j, true end
  j = T.n + 1
  T.n = j
  ids[id] = j
  return j, false
end

-- Adds the profile `d` into the accumulator `acc` (frames, edges and nodes, with their
-- identity maps).
local function accumulate(acc, d)
  local frames, edges, nodes = check(d)
  local F, E, N = acc.data.frames, acc.data.edges, acc.data.nodes
  local fmap = {}
  -- Memory per frame (the frame's own columns, or its nodes summed), kept aside: the result has
  -- frame memory columns only when a profile had them, and then they hold every profile's.
  local fmem = frame_memory(frames, nodes)
  if has_memory(frames) then acc.frame_columns = true end
  for i = 1, frames.n do
    local j, existed = row_of(F, acc.frame_ids, frame_id(frames, i))
    if existed then
      add_stats(F, j, frames, i)
    else
      for _, c in ipairs({ "kind", "file", "line", "lastline", "name" }) do
        F[c][j] = frames[c][i]
      end
      copy_stats(F, j, frames, i)
    end
    if fmem then
      acc.fmem[j] = existed and acc.fmem[j] and M.add_memory(acc.fmem[j], fmem[i]) or fmem[i]
    end
    fmap[i] = j
  end
  for i = 1, edges.n do
    local caller = fmap[index(edges.caller[i], frames.n, "edge caller")]
    local callee = fmap[index(edges.callee[i], frames.n, "edge callee")]
    local j, existed = row_of(E, acc.edge_ids, caller .. ">" .. callee)
    if existed then
      add_stats(E, j, edges, i)
    else
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
    local j, existed = row_of(N, acc.node_ids, parent .. ">" .. frame)
    if existed then
      add_stats(N, j, nodes, i)
    else
      N.parent[j], N.frame[j] = parent, frame
      copy_stats(N, j, nodes, i)
    end
    merge_memory(N, j, nodes, i, existed)
    nmap[i] = j
  end
  if type(d.lines) == "table" then
    local lines = section(d, "lines", M.LINE_COLUMNS)
    local L = acc.data.lines
    if not L then
      L = new_section(M.LINE_COLUMNS)
      acc.data.lines = L
    end
    for i = 1, lines.n do
      local frame = fmap[index(lines.frame[i], frames.n, "line frame")]
      local j, existed = row_of(L, acc.line_ids, frame .. ":" .. line_text(lines.line[i]))
      if existed then
        L.hits[j] = L.hits[j] + lines.hits[i]
        L.time[j] = L.time[j] + lines.time[i]
      else
        L.frame[j], L.line[j], L.hits[j], L.time[j] = frame, lines.line[i], lines.hits[i], lines.time[i]
      end
    end
  end
  -- The allocator snapshot is the state of one process: the first profile's that has one.
  if not acc.allocator and has_allocator(d) then
    acc.allocator = true
    for _, g in ipairs(MEM_GROUPS) do acc.data[g] = copy_group(d[g], MEM_GROUP_COLUMNS[g]) end
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
--- nodes by their path, line records by frame and line; memory summed (smallest and largest
--- sizes kept); the allocator snapshot is the first one's that has one.  The inputs are not
--- changed.
function M.merge(a, b, ...)
  local acc = {
    data = { frames = new_section(M.FRAME_COLUMNS), edges = new_section(M.EDGE_COLUMNS),
             nodes = new_section(M.NODE_COLUMNS) },
    frame_ids = {}, edge_ids = {}, node_ids = {}, line_ids = {}, meta = nil,
    fmem = {}, frame_columns = false,
  }
  local all = { n = select("#", ...) + 2, a, b, ... }
  for i = 1, all.n do accumulate(acc, all[i]) end
  if acc.frame_columns then
    local F = acc.data.frames
    for _, c in ipairs(MEM_COLS) do
      F[c] = {}
      for j = 1, F.n do F[c][j] = acc.fmem[j] and acc.fmem[j][c] or 0 end
    end
  end
  acc.data.meta = acc.meta
  return acc.data
end

---------------------------------------------------------------------------
-- from_stats
---------------------------------------------------------------------------

local function strip_brackets(name)
  if string.sub(name, 1, 1) == "<" and string.sub(name, -1) == ">" then return string.sub(name, 2, -2) end
  return name
end

-- Frames of a Stats object: { file, line, name, what, lastline, cc, nc, tt, ct, callers }.
local function rows_of_stats(st)
  local rows, keys = {}, {}
  for i, key in ipairs(st.order) do
    local r = st.stats[key]
    keys[key] = i
    -- A C function's key is ("~", 0, "<name>"); a "~" key without the brackets (from a
    -- pstats file) stays a plain frame, so that it reads back as the same key.
    local what = st.what and st.what[key] or funckey.key_what(key)
    local name = key[3]
    if what == "C" then name = strip_brackets(name) end
    rows[i] = { file = key[1], line = key[2], name = name, what = what,
                lastline = st.lastline and st.lastline[key],
                pcalls = r[1], ncalls = r[2], tottime = r[3], cumtime = r[4], callers = {},
                lines = st.lines and st.lines[key] }
    local m = st.mem and st.mem[key]
    if m then
      for _, c in ipairs(MEM_COLS) do rows[i][c] = m[c] end
    end
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
--- edges with that many calls, all primitive, and zero times.  Memory per function goes into
--- the frames' memory columns, line records into `lines`, and a Stats' allocator snapshot into
--- the mem_* groups and meta keys.
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
  if type(meta) == "table" then
    for k, v in pairs(meta) do
      if type(k) ~= "string" or string.sub(k, 1, 4) ~= "mem_" then m[k] = v end
    end
  end
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
  local memory = false
  for _, e in ipairs(rows) do
    if e.alloc_count ~= nil then memory = true end
  end
  if memory then
    for _, c in ipairs(MEM_COLS) do
      F[c] = {}
      for i, e in ipairs(rows) do F[c][i] = e[c] or 0 end
    end
  end
  for i, e in ipairs(rows) do
    if type(e.lines) == "table" then
      local L = d.lines or new_section(M.LINE_COLUMNS)
      d.lines = L
      local nums = {}
      for line in pairs(e.lines) do nums[#nums + 1] = line end
      table.sort(nums)
      for _, line in ipairs(nums) do
        local r = e.lines[line]
        local j = L.n + 1
        L.n = j
        L.frame[j], L.line[j], L.hits[j], L.time[j] = i, line, r.hits or 0, r.time or 0
      end
    end
  end
  -- (required here: cprof.allocdata builds on this module)
  if type(s.allocator) == "table" then require("cprof.allocdata").set(d, s.allocator) end
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
