--- cprof.export.model: the call-context tree of a profile, as the exports read it.
--
--   local m = model.new(d)          d: profile data (cprof.data), bias already subtracted
--   m.n, m.parent, m.frame          the tree's nodes (parents before children)
--   m:has_tree()                    false for data without nodes (a pstats file, a Stats)
--   m:weight(name)                  self value of every node for weight `name` (M.WEIGHTS)
--   m:restrict(self, patterns)      self values kept only on paths through a matching function
--   m:hide(patterns)                the model without the matching frames (pprof's -hide)
--   m:kept(patterns)                the nodes a trace's events keep (cprof.export.chrome)
--   m:inclusive(self)               the subtree sums of `self`
--   m:children(incl)                the children of every node, largest first (see below)
--   m:walk(kids, visit)             depth-first walk, children in that order
--   m:label(f), m:name(f)           a frame's full and short names
--   m:threads()                     which coroutine body each node runs in
--
-- Everything is arrays indexed by node or frame number, never a table per node: a dump has up
-- to a million nodes and every export must stay well inside a gigabyte.  A node's inclusive
-- value is the sum of its subtree's self values (for time, tottime summed equals the node's
-- cumtime: a node's cumtime is its outermost calls', and recursion past the depth the tree
-- keeps goes into the deepest node of its function), so widths always add up.

local _ENV = require("cprof.env")()

local M = {}

local funckey = require("cprof.funckey")
local to_utf8 = require("cprof.sanitize").utf8
local restrictions = require("cprof.restrictions")
local data_mod = require("cprof.profdata")

local type, error, ipairs, pairs, tostring, sformat = type, error, ipairs, pairs, tostring, string.format
local sort, floor = table.sort, math.floor

--- The weights: what a node's value is (`self(nodes, k)`), its unit, and its label.
M.WEIGHTS = {
  time = { unit = "seconds", label = "time", column = "tottime" },
  calls = { unit = "calls", label = "calls", column = "ncalls" },
  alloc = { unit = "bytes", label = "allocated bytes", column = "alloc_bytes", memory = true },
  allocs = { unit = "allocations", label = "allocations", column = "alloc_count", memory = true },
  live = { unit = "bytes", label = "live bytes", memory = true },
}
M.WEIGHT_NAMES = { "time", "calls", "alloc", "allocs", "live" }

local Model = {}
Model.__index = Model

local function fail(fmt, ...)
  error("cprof.export: " .. sformat(fmt, ...), 0)
end
M.fail = fail

function M.new(d)
  local F = d.frames
  local N = d.nodes or { n = 0 }
  return setmetatable({
    d = d, F = F, N = N, n = N.n, meta = type(d.meta) == "table" and d.meta or {},
    parent = N.parent or {}, frame = N.frame or {},
  }, Model)
end

function Model:has_tree()
  return self.n > 0
end

--- Raises the error every format that needs the call tree gives for a profile without one
--- (m.no_tree, set by cprof.export.model, says which source had none).
function Model:need_tree(format)
  if self.n == 0 then
    fail("%s needs the call tree, and this profile has none (%s): pstats and callgrind need only"
      .. " functions and callers; for the others, export a cprof dump, a Profile or"
      .. " cprof.load's data", format, self.no_tree or "it has no nodes")
  end
end

function Model:has_memory()
  return type(self.N.alloc_bytes) == "table"
end

--- Self values of weight `name` for every node, never below 0 (a time the bias took below 0 is
--- already 0; widths cannot be negative).
function Model:weight(name)
  local w = M.WEIGHTS[name]
  if not w then
    fail("unknown weight '%s' (time, calls, alloc, allocs or live)", tostring(name))
  end
  if w.memory and not self:has_memory() then
    fail("weight '%s' needs a profile with memory (made with cprof's allocator installed:"
      .. " CPROF_MEMORY=1 with cprof.auto)", name)
  end
  local N, out = self.N, {}
  if w.column then
    local col = N[w.column]
    for k = 1, self.n do
      local v = col[k]
      out[k] = v > 0 and v or 0
    end
  else
    local a, f = N.alloc_bytes, N.free_bytes
    for k = 1, self.n do
      local v = a[k] - f[k]
      out[k] = v > 0 and v or 0
    end
  end
  return out
end

-- Whole nanoseconds in [-2^62, 2^62], a time of NaN 0: a dump may hold any double, and the
-- formats that take integers print these with %d.
local NS_MAX = 2 ^ 62
function M.nanoseconds(seconds)
  local ns = seconds * 1e9 + 0.5
  if ns ~= ns then return 0 end
  if ns > NS_MAX then ns = NS_MAX elseif ns < -NS_MAX then ns = -NS_MAX end
  ns = floor(ns)
  return math.tointeger and math.tointeger(ns) or ns
end

--- Self values of weight `name` as whole numbers, for formats that take integers: times in
--- nanoseconds (rounded per node, so that sums of them are exact), counts and bytes as they
--- are.  Also returns the unit of the numbers ("nanoseconds" for time).
function Model:integers(name, self_w)
  self_w = self_w or self:weight(name)
  if name ~= "time" then return self_w, M.WEIGHTS[name].unit end
  local out = {}
  for k = 1, self.n do out[k] = M.nanoseconds(self_w[k]) end
  return out, "nanoseconds"
end

-- self[field], made by build(self) the first time it is asked for.
local function cached(self, field, build)
  local t = self[field]
  if not t then
    t = build(self)
    self[field] = t
  end
  return t
end

local function labels(self)
  local out, F = {}, self.F
  for i = 1, F.n do
    if F.kind[i] == "C" then
      out[i] = funckey.func_std_string("~", 0, "<" .. tostring(F.name[i]) .. ">")
    else
      out[i] = funckey.func_std_string(F.file[i], F.line[i], F.name[i])
    end
  end
  return out
end

--- The full name of frame f as cprof's reports print it: file:line(name), {name} for C.
function Model:label(f)
  return cached(self, "labels", labels)[f]
end

local function basename(file)
  return (string.match(tostring(file), "([^/]*)$"))
end

-- The names are made of what is written out (cprof.sanitize): two names that differ only in
-- bytes that are not UTF-8 are the same name there, and are told apart like any other two.
local function names(self)
  local out, F = {}, self.F
  local count, pending, short = {}, {}, {}
  for i = 1, F.n do
    local c = to_utf8(tostring(F.name[i]))
    short[i] = c
    count[c] = (count[c] or 0) + 1
  end
  for i = 1, F.n do
    local c = short[i]
    if count[c] == 1 or F.kind[i] == "C" then out[i] = c else pending[#pending + 1] = i end
  end
  local with_line = function(i) return sformat("%s:%s", short[i], tostring(F.line[i])) end
  local with_file = function(i)
    return sformat("%s %s:%s", short[i], to_utf8(basename(F.file[i])), tostring(F.line[i]))
  end
  for _, candidate in ipairs({ with_line, with_file }) do
    local cand, still = {}, {}
    for _, i in ipairs(pending) do
      local c = candidate(i)
      cand[i] = c
      count[c] = (count[c] or 0) + 1
    end
    for _, i in ipairs(pending) do
      if count[cand[i]] == 1 then out[i] = cand[i] else still[#still + 1] = i end
    end
    pending = still
  end
  for _, i in ipairs(pending) do out[i] = to_utf8(self:label(i)) end
  return out
end

--- A short name of frame f that no other frame has: the function's name, with ":line" (and
--- then the file's base name) added only where two frames would otherwise share it.  Viewers
--- that show one name per function (callgrind_annotate, pprof -top) then keep them apart.
--- It is valid UTF-8 (cprof.sanitize.utf8), as every export writes names; only two frames
--- with the same full name (two chunks with the same chunk name) share it.
function Model:name(f)
  return cached(self, "names", names)[f]
end

-- match[f] is true for each frame whose full name matches one of `patterns` (Lua patterns,
-- "|" between alternatives, matched against the full names, as cprof-stats' restrictions are).
local function matching(self, patterns)
  local matchers = {}
  for i, p in ipairs(patterns) do
    local m, why = restrictions.matcher(p)
    if not m then fail("bad pattern '%s': %s", p, tostring(why)) end
    matchers[i] = m
  end
  local match = {}
  for f = 1, self.F.n do
    local label = self:label(f)
    for _, hit_of in ipairs(matchers) do
      if hit_of(label) then
        match[f] = true
        break
      end
    end
  end
  return match
end

-- on[k]: node k is on a path through a function matching one of `patterns` (it or one of its
-- ancestors matches); nil when there are no patterns.
local function through(self, patterns)
  if not patterns or #patterns == 0 then return nil end
  local match = matching(self, patterns)
  local on, parent, frame = { [0] = false }, self.parent, self.frame
  for k = 1, self.n do on[k] = on[parent[k]] or match[frame[k]] or false end
  return on
end

--- The self values kept on the paths that go through a function matching one of `patterns`
--- (pprof's -focus): as grepping folded stacks does, every other node's own value is 0.
function Model:restrict(self_w, patterns)
  local on = through(self, patterns)
  if not on then return self_w end
  local out = {}
  for k = 1, self.n do out[k] = on[k] and self_w[k] or 0 end
  return out
end

--- For the nodes of the data the model was made from (before m:hide), the node of this model
--- each stands for when it is kept: not hidden, and on a path through `patterns` when given.
function Model:kept(patterns)
  local on, origin = through(self, patterns), self.origin
  local keep = {}
  for k = 1, origin and origin.n or self.n do
    local j = origin and origin[k] or k
    if j ~= 0 and (not on or on[j]) then keep[k] = j end
  end
  return keep
end

-- The node columns a hidden node charges to its caller (its own time and memory), and those it
-- takes away with it (its calls: they were calls of the hidden function).
local CHARGED = { "tottime", "alloc_count", "alloc_bytes", "free_count", "free_bytes" }
local OWN = { "ncalls", "pcalls", "cumtime" }

--- The model with the frames that match one of `patterns` taken out of the call tree, as
--- pprof's -hide does: a hidden node's own time and memory go to its nearest caller that is
--- not hidden, its callees become that caller's callees, and call paths that become the same
--- are merged (their numbers added).  A hidden root's own time goes nowhere.  m.origin[k] is
--- the new node of the old node k (0: hidden).
function Model:hide(patterns)
  if not patterns or #patterns == 0 then return self end
  local match = matching(self, patterns)
  local N, parent, frame = self.N, self.parent, self.frame
  local memory = self:has_memory()
  local cols = { "parent", "frame" }
  for _, c in ipairs(CHARGED) do cols[#cols + 1] = c end
  for _, c in ipairs(OWN) do cols[#cols + 1] = c end
  if memory then cols[#cols + 1], cols[#cols + 2] = "min_size", "max_size" end
  local out = { n = 0 }
  for _, c in ipairs(cols) do out[c] = {} end
  local origin, index = { n = self.n, [0] = 0 }, {}
  for k = 1, self.n do
    local p, f = origin[parent[k]], frame[k]
    local j = p
    if not match[f] then
      local key = p .. ">" .. f
      j = index[key]
      if not j then
        j = out.n + 1
        out.n, index[key] = j, j
        out.parent[j], out.frame[j] = p, f
        for _, c in ipairs(CHARGED) do out[c][j] = 0 end
        for _, c in ipairs(OWN) do out[c][j] = 0 end
        if memory then out.min_size[j], out.max_size[j] = 0, 0 end
      end
      for _, c in ipairs(OWN) do out[c][j] = out[c][j] + N[c][k] end
    end
    origin[k] = j
    if j ~= 0 then
      out.tottime[j] = out.tottime[j] + N.tottime[k]
      if memory then
        for i = 2, #CHARGED do
          local c = CHARGED[i]
          out[c][j] = out[c][j] + N[c][k]
        end
        if N.alloc_count[k] > 0 then
          local lo = out.min_size[j]
          if lo == 0 or N.min_size[k] < lo then out.min_size[j] = N.min_size[k] end
          if N.max_size[k] > out.max_size[j] then out.max_size[j] = N.max_size[k] end
        end
      end
    end
  end
  if not memory then
    for i = 2, #CHARGED do out[CHARGED[i]] = nil end
  end
  local d = {}
  for key, v in pairs(self.d) do d[key] = v end
  d.nodes = out
  local m = M.new(d)
  m.no_tree, m.origin = self.no_tree, origin
  return m
end

--- Inclusive values: each node's self value plus its descendants'.  incl[0] is the total.
function Model:inclusive(self_w)
  local incl, parent = {}, self.parent
  incl[0] = 0
  for k = 1, self.n do incl[k] = self_w[k] end
  for k = self.n, 1, -1 do
    local p = parent[k]
    incl[p] = incl[p] + incl[k]
  end
  return incl
end

--- The children of every node, in compressed rows: node k's children are
--- kids.child[kids.first[k] .. kids.first[k + 1] - 1], the roots those of node 0.  Ordered by
--- `incl` (largest first), then by name, then by node number, so that output is reproducible.
function Model:children(incl)
  local n = self.n
  local kids = data_mod.children(n, self.parent)
  local first, child = kids.first, kids.child
  if incl then
    local frame = self.frame
    local function before(a, b)
      local wa, wb = incl[a], incl[b]
      if wa ~= wb then return wa > wb end
      local la, lb = self:label(frame[a]), self:label(frame[b])
      if la ~= lb then return la < lb end
      return a < b
    end
    local seg = {}
    for k = 0, n do
      local lo, hi = first[k], first[k + 1] - 1
      if hi > lo then
        for i = lo, hi do seg[i - lo + 1] = child[i] end
        for i = hi - lo + 2, #seg do seg[i] = nil end
        sort(seg, before)
        for i = lo, hi do child[i] = seg[i - lo + 1] end
      end
    end
  end
  return kids
end

--- Depth-first walk from the roots: visit(k, depth, path) for each node before its children,
--- with path[1 .. depth] the nodes from the root down to k (reused: do not keep it).  When
--- visit returns false the node's subtree is skipped.
function Model:walk(kids, visit)
  local first, child = kids.first, kids.child
  local path, nextpos, last = {}, {}, {}
  local depth = 0
  path[0], nextpos[0], last[0] = 0, first[0], first[1] - 1
  while depth >= 0 do
    local i = nextpos[depth]
    if i > last[depth] then
      depth = depth - 1
    else
      nextpos[depth] = i + 1
      local k = child[i]
      local d = depth + 1
      path[d] = k
      if visit(k, d, path) ~= false then
        depth = d
        nextpos[d], last[d] = first[k], first[k + 1] - 1
      end
    end
  end
end

--- The nodes of `base` (another model) on the same call paths as this one's: to_base[k] is
--- base's node with node k's path (functions matched as cprof.data.merge matches them), or
--- nil; matched[j] is true for each base node j that some node here has.
function Model:align(base)
  local bparent, bframe = base.parent, base.frame
  local parent, frame = self.parent, self.frame
  -- Frame identities, each made once per profile.
  local function ids(F)
    local memo = {}
    return function(f)
      local id = memo[f]
      if not id then
        id = data_mod.frame_id(F, f)
        memo[f] = id
      end
      return id
    end
  end
  local bid, id_of = ids(base.F), ids(self.F)
  local index = {}
  for j = 1, base.n do index[bparent[j] .. ">" .. bid(bframe[j])] = j end
  local to_base, matched = { [0] = 0 }, {}
  for k = 1, self.n do
    local p = to_base[parent[k]]
    if p then
      local id = id_of(frame[k])
      local j = index[p .. ">" .. id]
      to_base[k] = j
      if j then matched[j] = true end
    end
  end
  to_base[0] = nil
  return to_base, matched
end

--- Which thread each node belongs to: the main thread (1) or the coroutine whose body runs
--- under a coroutine.resume or a coroutine.wrap function (the tree knows coroutines only
--- there: their bodies are called by those).  Coroutines with the same body are one thread.
--- Returns thread[k] for each node, the threads' names, and top[k] = true for each node that
--- starts a thread (a coroutine's body).
function Model:threads()
  local F, parent, frame = self.F, self.parent, self.frame
  local thread, top, names, ids = {}, {}, { "main" }, {}
  thread[0] = 1
  for k = 1, self.n do
    local p = parent[k]
    local pf = p > 0 and frame[p]
    -- a C function that runs another coroutine calls that coroutine's body
    if pf and F.kind[pf] == "C" and data_mod.runs_coroutine(F.name[pf]) then
      local f = frame[k]
      local t = ids[f]
      if not t then
        t = #names + 1
        ids[f] = t
        names[t] = "coroutine " .. self:name(f)
      end
      thread[k], top[k] = t, true
    else
      thread[k] = thread[p]
    end
  end
  return thread, names, top
end

return M
