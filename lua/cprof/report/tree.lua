--- cprof.report.tree: the call tree as text, top-down (cprof-stats --tree).
--
--   tree.write(m, put, opts)    m: a cprof.export.model; put: a function taking strings
--
--      cumtime    cum%     tottime        ncalls  function
--     1.235163  100.0%    0.000019             1  json_demo.lua:0(<main chunk>)
--     1.235144  100.0%    0.000366             1    json_demo.lua:484(main)
--     0.606342   49.1%    0.000170            14      json_demo.lua:168(encode)
--
-- One line per node of the call tree, its function indented by its depth, its children
-- below it, the largest first: its inclusive time (the node's subtree), its share of the
-- total, its own time, and its calls (calls/primitive calls where the path recursed past the
-- depth the tree keeps, docs/SEMANTICS.md "The call tree").  opts:
--   depth        show at most this many levels
--   min_percent  leave out the nodes under this share of the total, with their subtrees
--                (default 0.5; 0 shows every node)
--   patterns     only the call paths through a function matching one of these count (as in
--                cprof.export: the times are those of the matching paths, their shares of
--                the whole profile's time); `focus` is the same (pprof's name)
--   hide         the functions matching these leave the tree, their own time charged to
--                their callers (pprof's -hide: cprof.export.model's m:hide)
--   memory       add the memory columns (inclusive allocated bytes, allocations, live bytes)
--   title        the first line's name of the profile (the files)
-- The last line says how many nodes were left out and why.

local _ENV = require("cprof.env")()

local display = require("cprof.sanitize").display

local M = {}

local sformat, srep, concat, ipairs = string.format, string.rep, table.concat, ipairs

local function calls(n, p)
  if n == p then return sformat("%d", n) end
  return sformat("%d/%d", n, p)
end

function M.write(m, put, opts)
  opts = require("cprof.export").tree_options(opts or {})
  m:need_tree("--tree")
  m = m:hide(opts.hide)
  local min_percent = opts.min_percent or 0.5
  local max_depth = opts.depth
  local restricted = opts.patterns and #opts.patterns > 0
  local all_t = m:weight("time")
  local self_t = m:restrict(all_t, opts.patterns)
  local incl = m:inclusive(self_t)
  local total = restricted and m:inclusive(all_t)[0] or incl[0]
  local cutoff = total * min_percent / 100
  local mem
  if opts.memory then
    mem = {}
    for _, w in ipairs({ "alloc", "allocs", "live" }) do
      mem[#mem + 1] = m:inclusive(m:restrict(m:weight(w), opts.patterns))
    end
  end
  local N, frame = m.N, m.frame

  local all_calls = 0
  for k = 1, m.n do all_calls = all_calls + N.ncalls[k] end
  put(sformat("Call tree of %s: %.6f seconds, %d calls\n", display(opts.title or "the profile"), total,
    all_calls))
  local notes = {}
  if restricted then
    notes[#notes + 1] = sformat("only the paths through %s: %.6f seconds (%.1f%%)",
      display(concat(opts.patterns, " or ")), incl[0], total > 0 and 100 * incl[0] / total or 0)
  end
  if #opts.hide > 0 then notes[#notes + 1] = "hidden: " .. display(concat(opts.hide, ", ")) end
  if min_percent > 0 then notes[#notes + 1] = sformat("nodes under %g%% of the total left out", min_percent) end
  if max_depth then notes[#notes + 1] = sformat("at most %d levels", max_depth) end
  if #notes > 0 then put(concat(notes, "; ") .. "\n") end
  put("\n")
  local head = "     cumtime    cum%     tottime        ncalls"
  if mem then head = head .. "     alloc_bytes      allocs      live_bytes" end
  put(head .. "  function\n")

  local size = {}
  for k = 1, m.n do size[k] = 1 end
  for k = m.n, 1, -1 do
    local p = m.parent[k]
    if p > 0 then size[p] = size[p] + size[k] end
  end
  local by_cut, by_depth, shown = 0, 0, 0
  m:walk(m:children(incl), function(k, depth)
    local v = incl[k]
    if restricted and v == 0 then return false end
    if v < cutoff then
      by_cut = by_cut + size[k]
      return false
    end
    if max_depth and depth > max_depth then
      by_depth = by_depth + size[k]
      return false
    end
    shown = shown + 1
    local line = sformat("%12.6f  %5.1f%%  %10.6f  %12s", v, total > 0 and 100 * v / total or 0,
      self_t[k], calls(N.ncalls[k], N.pcalls[k]))
    if mem then
      line = line .. sformat("  %14d  %10d  %14d", mem[1][k], mem[2][k], mem[3][k])
    end
    put(line .. "  " .. srep("  ", depth - 1) .. display(m:label(frame[k])) .. "\n")
  end)
  local left = {}
  if by_cut > 0 then left[#left + 1] = sformat("%d under %g%% of the total", by_cut, min_percent) end
  if by_depth > 0 then left[#left + 1] = sformat("%d deeper than %d levels", by_depth, max_depth) end
  put(sformat("\n%d of %d nodes shown", shown, m.n))
  if #left > 0 then put("; left out: " .. concat(left, ", ")) end
  put("\n")
  return { shown = shown }
end

return M
