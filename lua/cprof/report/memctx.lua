--- cprof.report.memctx: memory by allocation context (a call-tree node: the call stack that
--- allocated), from the memory columns of a dump's nodes (docs/MEMORY.md, "Contexts").
--
--   memctx.leaks(m, out, opts)    contexts with blocks still live when the profile was taken
--   memctx.stacks(m, out, opts)   the opts.count contexts with the most bytes (opts.by "live":
--                                 live bytes), each printed as its stack
--   memctx.types(m, out, opts)    per function: allocations, frees and live blocks per Lua type,
--                                 and the lifetimes of the blocks freed
--
-- `m` is a cprof.export.model of the profile; `out` writes one string.  opts: title, patterns
-- (the stacks through a matching function), limits (cprof-stats' --limit values: counts or
-- fractions of the rows of leaks and types, in order), unit (the seconds per unit of the
-- lifetimes; without it each lifetime has its own unit: "2.50 ms").  The lifetimes and the
-- counts per type are in dumps written since they were added (node columns life_*, <type>_allocs,
-- <type>_frees); older dumps give the other numbers and say so.

local _ENV = require("cprof.env")()

local pyfmt = require("cprof.pyfmt")
local restrictions = require("cprof.restrictions")
local display = require("cprof.sanitize").display
local text = require("cprof.report.text")

local M = {}

local ipairs, sformat, concat, sort = ipairs, string.format, table.concat, table.sort
local int_str, rjust = pyfmt.int_str, pyfmt.rjust

--- The Lua types of the per-type columns, in the allocator's order.
M.TYPES = { "raw", "string", "table", "function", "userdata", "thread", "upvalue", "proto", "other" }

local function has_types(N)
  return type(N.raw_allocs) == "table"
end

-- Live blocks of each type at node k, as "function 10000, upvalue 10000" (largest first), and
-- whether any of them is an object (not raw memory).
local function live_types(N, k)
  local parts, objects = {}, false
  for _, t in ipairs(M.TYPES) do
    local live = N[t .. "_allocs"][k] - N[t .. "_frees"][k]
    if live > 0 then
      parts[#parts + 1] = { t, live }
      objects = objects or t ~= "raw"
    end
  end
  sort(parts, function(a, b) return a[2] > b[2] or (a[2] == b[2] and a[1] < b[1]) end)
  for i, p in ipairs(parts) do parts[i] = p[1] .. " " .. int_str(p[2]) end
  return concat(parts, ", "), objects
end

-- The stack of node k, innermost first, one frame a line.
local function stack_lines(m, k, out)
  local first = true
  while k ~= 0 do
    out((first and "      " or "      <- ") .. display(m:label(m.frame[k])) .. "\n")
    first = false
    k = m.parent[k]
  end
end

-- keep[k] ~= 0 for the nodes whose stack goes through a function matching one of `patterns`
-- (all of them without patterns), as the exports restrict.
local function kept(m, patterns)
  local ones = {}
  for k = 1, m.n do ones[k] = 1 end
  return m:restrict(ones, patterns)
end

-- `rows` cut by the --limit values in opts.limits, in order.
local function limited(rows, opts)
  for _, n in ipairs(opts.limits or {}) do rows = restrictions.limit(rows, n) end
  return rows
end

local function need_memory(m)
  if not m:has_memory() then
    error("cprof.report: the profile has no memory numbers (make it with cprof's allocator"
      .. " installed: CPROF_MEMORY=1 with cprof.auto)", 0)
  end
  if m.n == 0 then
    error("cprof.report: the profile has no call tree (the memory of allocation contexts is"
      .. " kept in a dump's nodes)", 0)
  end
end

local function live_count(N, k) return N.alloc_count[k] - N.free_count[k] end
local function live_bytes(N, k) return N.alloc_bytes[k] - N.free_bytes[k] end

--- The contexts still holding blocks, most live bytes first: rows { k = node, blocks, bytes,
--- types } (types: the live blocks per Lua type as text, "" when the dump has no counts per
--- type).  A context that holds only raw memory (no object: a stack, the string table, a buffer
--- it grew) is not a leak of its own: such contexts are counted apart.  Returns the rows,
--- whether the dump has the per-type columns, and the raw-only contexts' count and bytes.
--- cprof-stats --leaks prints these; the HTML report shows them.
function M.leak_rows(m, patterns)
  need_memory(m)
  local N = m.N
  local typed = has_types(N)
  local rows, raw_only, raw_bytes = {}, 0, 0
  local keep = kept(m, patterns)
  for k = 1, m.n do
    if live_count(N, k) > 0 and keep[k] ~= 0 then
      local types, objects = "", true
      if typed then types, objects = live_types(N, k) end
      if objects then
        rows[#rows + 1] = { k = k, types = types, blocks = live_count(N, k), bytes = live_bytes(N, k) }
      else
        raw_only = raw_only + 1
        raw_bytes = raw_bytes + live_bytes(N, k)
      end
    end
  end
  sort(rows, function(a, b)
    if a.bytes ~= b.bytes then return a.bytes > b.bytes end
    return a.k < b.k
  end)
  return rows, typed, raw_only, raw_bytes
end

--- The sentence on the contexts that hold only raw memory (see M.leak_rows).
function M.raw_note(raw_only, raw_bytes)
  return sformat("and %d context%s holding only raw memory (no object: stacks, the string table,"
    .. " buffers): %s bytes", raw_only, raw_only == 1 and "" or "s", int_str(raw_bytes))
end

--- cprof-stats --leaks: every context still holding blocks, most live bytes first (M.leak_rows);
--- dumps without the per-type columns list every context.
function M.leaks(m, out, opts)
  local rows, typed, raw_only, raw_bytes = M.leak_rows(m, opts.patterns)
  local N = m.N
  local all = #rows
  rows = limited(rows, opts)
  out(sformat("Leaks in %s: blocks still live when the profile was written, by allocation"
    .. " context%s\n\n", display(opts.title), #rows < all and sformat(" (%d of %d)", #rows, all) or ""))
  if #rows == 0 then out("   no context holds live objects\n") end
  for _, r in ipairs(rows) do
    local k = r.k
    out(sformat("%12s live blocks %14s live bytes   (%s allocations, %s frees)\n",
      int_str(r.blocks), int_str(r.bytes), int_str(N.alloc_count[k]), int_str(N.free_count[k])))
    if r.types ~= "" then out("      live: " .. r.types .. "\n") end
    stack_lines(m, k, out)
    out("\n")
  end
  if raw_only > 0 then out("   " .. M.raw_note(raw_only, raw_bytes) .. "\n") end
  if not typed then
    out("   (this dump has no counts per Lua type: every context with live blocks is listed)\n")
  end
end

-- Lifetimes of node k as "lifetime avg A, min B, max C", or nil when nothing was freed or
-- the dump has no lifetimes.
local function lifetimes(N, k, unit)
  local frees = N.free_count[k]
  if type(N.life_total) ~= "table" or frees == 0 then return nil end
  local d = text.duration
  return sformat("lifetime avg %s, min %s, max %s%s", d(N.life_total[k] / frees, unit),
    d(N.life_min[k], unit), d(N.life_max[k], unit), unit and " " .. text.unit_name(unit) or "")
end

local function alloc_types(N, k)
  local parts = {}
  for _, t in ipairs(M.TYPES) do
    local a = N[t .. "_allocs"][k]
    if a > 0 then parts[#parts + 1] = t .. " " .. int_str(a) end
  end
  return concat(parts, ", ")
end

--- cprof-stats --memory --stacks N: the N contexts with the most allocated bytes (opts.by ==
--- "live": live bytes), each with its numbers and its stack.
function M.stacks(m, out, opts)
  need_memory(m)
  local N = m.N
  local key = opts.by == "live" and live_bytes or function(_, k) return N.alloc_bytes[k] end
  local ks, keep = {}, kept(m, opts.patterns)
  for k = 1, m.n do
    if N.alloc_count[k] > 0 and keep[k] ~= 0 then ks[#ks + 1] = k end
  end
  sort(ks, function(a, b)
    local x, y = key(N, a), key(N, b)
    if x ~= y then return x > y end
    return a < b
  end)
  out(sformat("Allocation contexts of %s: %d of %d, by %s\n\n", display(opts.title),
    math.min(opts.count, #ks), #ks, opts.by == "live" and "live bytes" or "allocated bytes"))
  out(rjust("allocs", 9) .. " " .. rjust("bytes", 12) .. " " .. rjust("frees", 9) .. " "
    .. rjust("live", 9) .. " " .. rjust("live bytes", 12) .. " " .. rjust("min", 8) .. " "
    .. rjust("max", 8) .. "\n")
  for i = 1, math.min(opts.count, #ks) do
    local k = ks[i]
    out(rjust(int_str(N.alloc_count[k]), 9) .. " " .. rjust(int_str(N.alloc_bytes[k]), 12) .. " "
      .. rjust(int_str(N.free_count[k]), 9) .. " " .. rjust(int_str(live_count(N, k)), 9) .. " "
      .. rjust(int_str(live_bytes(N, k)), 12) .. " " .. rjust(int_str(N.min_size[k]), 8) .. " "
      .. rjust(int_str(N.max_size[k]), 8) .. "\n")
    if has_types(N) then out("      allocated: " .. alloc_types(N, k) .. "\n") end
    local life = lifetimes(N, k, opts.unit)
    if life then out("      " .. life .. "\n") end
    stack_lines(m, k, out)
    out("\n")
  end
end

--- cprof-stats --memory-types: per function (its contexts summed), the allocations, frees and
--- live blocks of each Lua type, and the lifetimes of the blocks freed, most allocations first.
function M.types(m, out, opts)
  need_memory(m)
  local N = m.N
  if not has_types(N) then
    error("cprof.report: option --memory-types: this dump has no counts per Lua type (written"
      .. " by a cprof before they were added)", 0)
  end
  local per, order, keep = {}, {}, kept(m, opts.patterns)
  for k = 1, m.n do
    local f = m.frame[k]
    if N.alloc_count[k] > 0 and keep[k] ~= 0 then
      local r = per[f]
      if not r then
        r = { f = f, allocs = 0, frees = 0, life = 0, min = math.huge, max = 0, t = {} }
        for _, t in ipairs(M.TYPES) do r.t[t] = { 0, 0 } end
        per[f] = r
        order[#order + 1] = r
      end
      r.allocs = r.allocs + N.alloc_count[k]
      r.frees = r.frees + N.free_count[k]
      if N.free_count[k] > 0 then
        r.life = r.life + N.life_total[k]
        if N.life_min[k] < r.min then r.min = N.life_min[k] end
        if N.life_max[k] > r.max then r.max = N.life_max[k] end
      end
      for _, t in ipairs(M.TYPES) do
        r.t[t][1] = r.t[t][1] + N[t .. "_allocs"][k]
        r.t[t][2] = r.t[t][2] + N[t .. "_frees"][k]
      end
    end
  end
  sort(order, function(a, b)
    if a.allocs ~= b.allocs then return a.allocs > b.allocs end
    return a.f < b.f
  end)
  local all = #order
  order = limited(order, opts)
  out(sformat("Lua types allocated per function in %s (lifetimes of the blocks freed%s)%s\n\n",
    display(opts.title), opts.unit and ", in " .. text.unit_name(opts.unit) or "",
    #order < all and sformat("; %d of %d functions", #order, all) or ""))
  out(rjust("allocs", 9) .. " " .. rjust("frees", 9) .. " " .. rjust("live", 9) .. "  "
    .. sformat("%-9s", "type") .. " " .. rjust("life avg", 10) .. " " .. rjust("life min", 10) .. " "
    .. rjust("life max", 10) .. "  function\n")
  local function row(a, f, typename, life)
    return rjust(int_str(a), 9) .. " " .. rjust(int_str(f), 9) .. " " .. rjust(int_str(a - f), 9)
      .. "  " .. sformat("%-9s", typename) .. " " .. life
  end
  for _, r in ipairs(order) do
    local d, u = text.duration, opts.unit
    local life = r.frees > 0 and (rjust(d(r.life / r.frees, u), 10) .. " "
      .. rjust(d(r.min, u), 10) .. " " .. rjust(d(r.max, u), 10))
      or string.rep(" ", 32)
    out(row(r.allocs, r.frees, "(all)", life) .. "  " .. display(m:label(r.f)) .. "\n")
    for _, t in ipairs(M.TYPES) do
      local c = r.t[t]
      if c[1] > 0 then out((string.gsub(row(c[1], c[2], t, ""), "%s+$", "")) .. "\n") end
    end
  end
  out("\n")
end

return M
