--- cprof.export.callgrind: the callgrind format (KCachegrind, QCacheGrind, callgrind_annotate,
--- gprof2dot; valgrind's "Callgrind Format Specification").
--
--   events: Time_ns [Alloc_bytes Allocs Live_bytes]
--   fl=(1) main.lua
--   fn=(1) fib
--   10 60000000                 the function's self cost, at its line defined
--   cfn=(2) helper
--   calls=3 12                  calls of the edge fib -> helper, the callee's line
--   10 9000000                  the inclusive cost of those calls
--
-- Costs are whole numbers: nanoseconds, bytes, allocations (memory events only for profiles
-- with memory, the chosen weight first: viewers show the first event).  Functions are named
-- by their short names (cprof.export.model: the name, with its line where two functions share
-- it), files by chunk name ("???" for an empty one), C functions in "[C]"; in names, bytes
-- that are not UTF-8 are U+FFFD (cprof.sanitize) and line breaks spaces.
--
-- Recursion (shared/reference/pstats/SPEC.md §7a): callgrind_annotate --inclusive=yes makes a
-- function's inclusive cost its self cost plus the costs of the calls it makes.  An edge's
-- time is its cumtime, the time of its outermost calls (pstats' per-edge number), so a call of
-- a function by itself would count that function's time twice: those calls are written with
-- their count and no cost (their time is inside the outer call's).  Then every function that
-- is not part of a cycle of two or more functions (f -> g -> f) gets its cumtime as inclusive
-- cost; in such a cycle callgrind_annotate adds the inner calls again (KCachegrind finds the
-- cycle and does not).  Memory costs come from the call tree, by the same rule: an edge's cost
-- is the inclusive cost of its outermost calls (the tree keeps recursion, so a pair caller ->
-- callee can be on a path more than once), and a call of a function by itself has none.

local _ENV = require("cprof.env")()

local M = {}

local export = require("cprof.export")
local profdata = require("cprof.profdata")

M.WEIGHTS = { time = true, alloc = true, allocs = true, live = true }
M.WEIGHTS_TEXT = "callgrind's events are time and, on memory profiles, alloc, allocs and live;"
  .. " call counts are in its calls= lines"

local sformat, concat, sgsub = string.format, table.concat, string.gsub
local tostring, ipairs = tostring, ipairs
local to_utf8 = require("cprof.sanitize").utf8

-- A name as a line of the file holds it: valid UTF-8 (cprof.sanitize), line breaks as spaces.
local function one_line(s)
  return (sgsub(to_utf8(tostring(s)), "[\r\n]", " "))
end

local EVENTS = { time = "Time_ns", alloc = "Alloc_bytes", allocs = "Allocs", live = "Live_bytes" }

-- The weights to write, `first` first.
local function event_list(m, first)
  local list = { first }
  for _, w in ipairs({ "time", "alloc", "allocs", "live" }) do
    if w ~= first and (w == "time" or (m:has_tree() and m:has_memory())) then
      list[#list + 1] = w
    end
  end
  return list
end

-- Self cost per frame and inclusive cost per edge for one weight: times from the frames and
-- edges, memory (which edges do not have) from the call tree.
local function costs(m, weight)
  local F, E = m.F, m.d.edges
  local fself, ecost = {}, {}
  if weight == "time" then
    local ns = require("cprof.export.model").nanoseconds
    for f = 1, F.n do fself[f] = ns(F.tottime[f]) end
    for e = 1, E.n do
      ecost[e] = E.caller[e] ~= E.callee[e] and ns(E.cumtime[e]) or 0
    end
    return fself, ecost
  end
  for f = 1, F.n do fself[f] = 0 end
  local values = m:integers(weight)
  local incl = m:inclusive(values)
  local parent, frame = m.parent, m.frame
  -- As for time: a call's cost is counted where the caller->callee pair is outermost on the
  -- path (the tree keeps recursion), and a function calling itself carries none.
  local pair = {}
  for k = 1, m.n do pair[k] = frame[parent[k]] and frame[parent[k]] * (F.n + 1) + frame[k] or 0 end
  local outer = profdata.outermost(m.n, parent, pair)
  local sums = {}
  for k = 1, m.n do
    local f = frame[k]
    fself[f] = fself[f] + values[k]
    local p = parent[k]
    if p > 0 and frame[p] ~= f and outer[k] then sums[pair[k]] = (sums[pair[k]] or 0) + incl[k] end
  end
  for e = 1, E.n do ecost[e] = sums[E.caller[e] * (F.n + 1) + E.callee[e]] or 0 end
  return fself, ecost
end

function M.write(m, sink, opts, weight)
  local F, E = m.F, m.d.edges
  local weights = event_list(m, weight)
  if weight ~= "time" and not (m:has_tree() and m:has_memory()) then
    m:need_tree("callgrind with weight '" .. weight .. "'")
    m:weight(weight) -- says that the profile has no memory
  end
  local fself, ecost, names = {}, {}, {}
  for i, w in ipairs(weights) do
    fself[i], ecost[i] = costs(m, w)
    names[i] = EVENTS[w]
  end
  local nev = #weights

  -- The edges of each caller, in edge order.
  local out_first, out_edges = {}, {}
  local ncount = {}
  for f = 1, F.n + 1 do ncount[f] = 0 end
  for e = 1, E.n do
    if E.ncalls[e] ~= 0 then ncount[E.caller[e]] = ncount[E.caller[e]] + 1 end
  end
  local pos = 1
  for f = 1, F.n + 1 do
    out_first[f] = pos
    pos = pos + ncount[f]
  end
  local fill = {}
  for f = 1, F.n do fill[f] = out_first[f] end
  for e = 1, E.n do
    local c = E.caller[e]
    if E.ncalls[e] ~= 0 then
      out_edges[fill[c]] = e
      fill[c] = fill[c] + 1
    end
  end

  local w = export.buffer(sink)
  local totals = {}
  for i = 1, nev do
    local t = 0
    for f = 1, F.n do t = t + fself[i][f] end
    totals[i] = sformat("%d", t)
  end
  local command = one_line(m.meta.command or "")
  w.put("# callgrind format\nversion: 1\ncreator: cprof\n")
  if command ~= "" then w.put("cmd: " .. command .. "\n") end
  w.put("positions: line\nevents: " .. concat(names, " ") .. "\nsummary: " .. concat(totals, " ")
    .. "\n")

  -- Name compression: "(id) name" the first time, "(id)" afterwards.
  local file_ids, fn_ids, nfiles = {}, {}, 0
  local function file_of(f)
    local file = F.kind[f] == "C" and "[C]" or tostring(F.file[f])
    -- A chunk named "=" or "@" has no file name; callgrind_annotate takes "fl=(n) " for no
    -- file at all and warns on every use: valgrind's own name for an unknown file instead.
    if file == "" then file = "???" end
    local id = file_ids[file]
    if id then return sformat("(%d)", id) end
    nfiles = nfiles + 1
    file_ids[file] = nfiles
    return sformat("(%d) %s", nfiles, one_line(file))
  end
  local function fn_of(f)
    local id = fn_ids[f]
    if id then return sformat("(%d)", id) end
    fn_ids[f] = f
    return sformat("(%d) %s", f, one_line(m:name(f)))
  end
  local function line_of(f)
    return F.kind[f] == "C" and 0 or F.line[f]
  end
  local cost_line = {}
  local function costs_at(line, tables, index)
    if nev == 1 then return sformat("%d %d\n", line, tables[1][index]) end
    cost_line[1] = sformat("%d", line)
    for i = 1, nev do cost_line[i + 1] = sformat("%d", tables[i][index]) end
    return concat(cost_line, " ", 1, nev + 1) .. "\n"
  end
  -- "cfl=...\ncfn=...\ncalls=" of a callee, fixed once both of its names were written.
  local callee_head = {}
  local function callee(g)
    local h = callee_head[g]
    if h then return h end
    local fl, fn = file_of(g), fn_of(g)
    h = "cfl=" .. fl .. "\ncfn=" .. fn .. "\ncalls="
    if not string.find(fl, " ", 1, true) and not string.find(fn, " ", 1, true) then callee_head[g] = h end
    return h
  end

  local blocks = 0
  for f = 1, F.n do
    local has_edges = out_first[f + 1] > out_first[f]
    local any = F.ncalls[f] ~= 0 or has_edges
    for i = 1, nev do any = any or fself[i][f] ~= 0 end
    if any then
      blocks = blocks + 1
      local line = line_of(f)
      local fl = file_of(f)
      w.put("\nfl=" .. fl .. "\nfn=" .. fn_of(f) .. "\n" .. costs_at(line, fself, f))
      for j = out_first[f], out_first[f + 1] - 1 do
        local e = out_edges[j]
        local g = E.callee[e]
        w.put(callee(g) .. sformat("%d %d\n", E.ncalls[e], line_of(g)) .. costs_at(line, ecost, e))
      end
    end
  end
  w.flush()
  return { format = "callgrind", functions = blocks, events = names }
end

return M
