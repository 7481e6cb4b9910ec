--- cprof.report.diff: what changed per function between two profiles (cprof-stats --diff).
--
--   diff.rows(new, base [, sort])            the rows, largest change first
--   diff.write(new, base, put, opts)         them as text; put: a function taking strings
--
-- new and base are cprof.stats Stats objects (any source: dumps, pstats files, several added
-- together).  A row per function found in either: its calls, tottime and cumtime in the new
-- profile and the change from the base, in absolute terms and in percent of the base's value;
-- functions only in the new profile are marked [new], those only in the base [gone].  Sorted
-- by the size of the change (whatever its sign) in tottime, or, with sort "cumulative" or
-- "calls", in cumtime or calls; ties by name.  opts: sort, restrictions (cprof-stats' --limit
-- and patterns, applied in order to the sorted rows, as pstats applies them), names (the two
-- profiles' names for the heading), unit (the seconds per unit of the times: 1 by default).
--
-- The times have pstats' three decimals; each column is as wide as its widest cell, and the
-- name comes last, whole, so that a typical row ends within 100 columns:
--
--   ncalls +/- tottime    +/-    % cumtime    +/-    % function
--       12  +3   0.080 +0.020 +33%   0.080 +0.020 +33% main.lua:10(fib)

local _ENV = require("cprof.env")()

local M = {}

local funckey = require("cprof.funckey")
local restrictions = require("cprof.restrictions")
local display = require("cprof.sanitize").display
local text = require("cprof.report.text")

local abs, sformat, tostring, ipairs, type = math.abs, string.format, tostring,
  ipairs, type
local srep, concat = string.rep, table.concat

local SORTS = { tottime = "tottime", time = "tottime", cumtime = "cumtime", cumulative = "cumtime",
                cum = "cumtime", calls = "ncalls", ncalls = "ncalls" }
M.SORT_KEYS = "tottime (time), cumtime (cumulative, cum) or calls (ncalls)"

local function numbers(st, key)
  local r = st.stats[key]
  if not r then return nil end
  return { ncalls = r[2], tottime = r[3], cumtime = r[4] }
end

--- The rows: { key, name, new = {ncalls, tottime, cumtime} or nil, base = ... or nil, and the
--- changes d_ncalls, d_tottime, d_cumtime }.  Raises an error naming the sort keys for a bad
--- `sort`.
function M.rows(new, base, sort)
  local by = SORTS[sort or "tottime"]
  if not by then
    error(sformat("cprof.report.diff: cannot sort a diff by '%s' (%s)", tostring(sort), M.SORT_KEYS), 0)
  end
  local rows, seen = {}, {}
  local function add(key)
    if seen[key] then return end
    seen[key] = true
    local a, b = numbers(new, key), numbers(base, key)
    local z = { ncalls = 0, tottime = 0, cumtime = 0 }
    local row = { key = key, name = funckey.func_std_string(key), new = a, base = b }
    for _, c in ipairs({ "ncalls", "tottime", "cumtime" }) do
      row["d_" .. c] = (a or z)[c] - (b or z)[c]
    end
    rows[#rows + 1] = row
  end
  for _, key in ipairs(new.order) do add(key) end
  for _, key in ipairs(base.order) do add(key) end
  local field = "d_" .. by
  table.sort(rows, function(x, y)
    local a, b = abs(x[field]), abs(y[field])
    if a ~= b then return a > b end
    return x.name < y.name
  end)
  return rows
end

-- The rows left by one restriction (cprof-stats' --limit or a pattern).
local function restrict(rows, r)
  if type(r) == "string" then
    local out = {}
    local hit_of, why = restrictions.matcher(r)
    if not hit_of then error("cprof: bad pattern '" .. r .. "': " .. why, 0) end
    for _, row in ipairs(rows) do
      if hit_of(row.name) then out[#out + 1] = row end
    end
    return out
  end
  return restrictions.limit(rows, r)
end

-- The change in percent of the base: one decimal under 10%, none above (5 characters up to
-- +999%).
local function percent(d, was)
  if was == 0 then return d == 0 and "0.0%" or "new" end
  local p = 100 * d / was
  return sformat(abs(p) >= 9.95 and "%+.0f%%" or "%+.1f%%", p)
end

local function totals(st)
  local nc, tt = 0, 0
  for _, key in ipairs(st.order) do
    local r = st.stats[key]
    nc, tt = nc + r[2], tt + r[3]
  end
  return nc, tt
end

function M.write(new, base, put, opts)
  opts = opts or {}
  local rows = M.rows(new, base, opts.sort)
  local all = #rows
  for _, r in ipairs(opts.restrictions or {}) do
    local ok, res = pcall(restrict, rows, r)
    if not ok then error(sformat("cprof.report.diff: bad pattern '%s': %s", tostring(r), tostring(res)), 0) end
    rows = res
  end
  local names = opts.names or { "the new profile", "the base" }
  local unit = opts.unit or 1
  local nc1, tt1 = totals(new)
  local nc0, tt0 = totals(base)
  put(sformat("%s against %s\n", display(names[1]), display(names[2])))
  put(sformat("  %d function calls in %.3f %s, against %d in %.3f: %+d calls, %+.3f %s (%s)\n",
    nc1, tt1 / unit, text.unit_name(unit), nc0, tt0 / unit, nc1 - nc0, (tt1 - tt0) / unit,
    text.unit_name(unit), percent(tt1 - tt0, tt0)))
  put(sformat("  sorted by the change in %s, largest first; %d of %d functions shown\n\n",
    SORTS[opts.sort or "tottime"] == "ncalls" and "calls" or SORTS[opts.sort or "tottime"], #rows, all))
  -- each column as wide as its widest cell, so that the name starts as far left as it can
  local heads = { "ncalls", "+/-", "tottime", "+/-", "%", "cumtime", "+/-", "%" }
  local cells, widths = {}, {}
  for i, h in ipairs(heads) do widths[i] = #h end
  local z = { ncalls = 0, tottime = 0, cumtime = 0 }
  for r, row in ipairs(rows) do
    local a, b = row.new or z, row.base or z
    local c = { sformat("%d", a.ncalls), sformat("%+d", row.d_ncalls), sformat("%.3f", a.tottime / unit),
      sformat("%+.3f", row.d_tottime / unit), percent(row.d_tottime, b.tottime),
      sformat("%.3f", a.cumtime / unit), sformat("%+.3f", row.d_cumtime / unit),
      percent(row.d_cumtime, b.cumtime) }
    for i, v in ipairs(c) do
      if #v > widths[i] then widths[i] = #v end
    end
    cells[r] = c
  end
  local function line(c, name)
    local parts = {}
    for i, v in ipairs(c) do parts[i] = srep(" ", widths[i] - #v) .. v end
    return concat(parts, " ") .. " " .. name .. "\n"
  end
  put(line(heads, "function"))
  for r, row in ipairs(rows) do
    local mark = not row.base and "  [new]" or not row.new and "  [gone]" or ""
    put(line(cells[r], display(row.name) .. mark))
  end
  return rows
end

return M
