--- cprof.report.summary: a dump's memory summary — the totals of the memory charged to its
--- contexts, and the allocator's state when it was written — read without decoding its tree
--- (cprof.core.read_dump(path, "summary")), and the table of such summaries over several dumps
--- (memory over time).
--
--   summary.read(path)             { file, meta, allocator = cprof.memory.stats()-shaped | nil }
--   summary.has_memory(s)          whether it holds any memory number
--   summary.print(s, out)          cprof-stats --summary: one dump
--   summary.in_order(list)         the summaries in the order the dumps were taken
--   summary.series(list, out)      cprof-stats --memory-series: one row per dump
--   summary.series_svg(list, out)  the same as an SVG line chart of the byte counts
--   summary.COLUMNS, CHARTED, COLORS   the series' columns, those the charts draw, their colours

local _ENV = require("cprof.env")()

local allocdata = require("cprof.allocdata")
local allocator = require("cprof.report.allocator")
local pyfmt = require("cprof.pyfmt")
local display = require("cprof.sanitize").display

local M = {}

local ipairs, type, sformat, concat = ipairs, type, string.format, table.concat
local int_str, rjust = pyfmt.int_str, pyfmt.rjust

local function need_core(path)
  local ok, core = pcall(require, "cprof.core")
  if not ok or type(core.read_dump) ~= "function" then
    error(string.format("cprof: %s: reading a summary needs the C extension cprof.core", path), 0)
  end
  return core
end

--- The summary of the dump at `path`; raises "cprof: <path>: <reason>" for a bad file.
function M.read(path)
  local ok, d = pcall(need_core(path).read_dump, path, "summary")
  if not ok then error(d, 0) end
  return { file = path, meta = d.meta or {}, allocator = allocdata.get(d) }
end

-- The memory charged to the contexts, from the metadata: nil when the profile has none.
local function charged(meta)
  if type(meta.memory_allocs) ~= "number" then return nil end
  return { allocs = meta.memory_allocs, bytes = meta.memory_bytes, frees = meta.memory_frees,
           freed = meta.memory_freed, live = meta.memory_bytes - meta.memory_freed }
end

--- Whether summary `s` holds any memory number: an allocator snapshot, or totals charged to
--- contexts (a dump of a profile made with cprof's allocator installed).
function M.has_memory(s)
  return s.allocator ~= nil or charged(s.meta) ~= nil
end

-- The name `file` cut into runs of digits and of other bytes: { text, number or false, ... }.
local function runs(file)
  local out = {}
  for digits, other in string.gmatch(file, "(%d*)(%D*)") do
    if digits ~= "" then
      out[#out + 1] = digits
      out[#out + 1] = (string.gsub(digits, "^0+", "")) -- the number without its padding
    end
    if other ~= "" then
      out[#out + 1] = other
      out[#out + 1] = false
    end
  end
  return out
end

-- Whether file name a comes before b when the numbers in them are read as numbers (srv.9.prof
-- before srv.10.prof, srv.09.prof next to srv.9.prof), the rest byte by byte.
local function name_before(a, b)
  local x, y = runs(a), runs(b)
  for i = 1, math.min(#x, #y), 2 do
    local n, m = x[i + 1], y[i + 1]
    if n and m then
      if #n ~= #m then return #n < #m end
      if n ~= m then return n < m end
    end
    if x[i] ~= y[i] then return x[i] < y[i] end
  end
  return #x < #y
end

--- The summaries in the order their dumps were taken: a profile's dumps together, the profiles
--- in the order they started (meta.start_time), and one profile's dumps in the order of their
--- names with the numbers in them read as numbers: the live dumps' %n counts them, padded or
--- not (srv.2.prof before srv.10.prof).  The dumps hold no number of their own to order them
--- by: a profile reset after each dump (live{reset = true}) starts its total_time anew.
function M.in_order(list)
  local sorted = {}
  for i, s in ipairs(list) do sorted[i] = s end
  local function start(s) return type(s.meta.start_time) == "number" and s.meta.start_time or 0 end
  table.sort(sorted, function(a, b)
    if start(a) ~= start(b) then return start(a) < start(b) end
    if a.file ~= b.file then return name_before(a.file, b.file) end
    return false
  end)
  return sorted
end

--- cprof-stats --summary FILE: the profile's memory totals and the allocator's state (free,
--- Lua types, kmemstat), or a line saying what the dump lacks.
function M.print(s, out)
  local meta = s.meta
  out(sformat("Summary of %s", display(s.file)))
  if type(meta.command) == "string" and meta.command ~= "" then out(": " .. display(meta.command)) end
  out("\n\n")
  local c = charged(meta)
  if c then
    out(sformat("   charged to contexts: %s allocations of %s bytes, %s frees of %s bytes,"
      .. " %s bytes live\n", int_str(c.allocs), int_str(c.bytes), int_str(c.frees),
      int_str(c.freed), int_str(c.live)))
    if type(meta.memory_lost) == "number" and meta.memory_lost > 0 then
      out(sformat("   %s allocations charged to no context (memory ran out)\n",
        int_str(meta.memory_lost)))
    end
    out("\n")
  elseif meta.memory then
    out("   (this dump has no memory totals: written by a cprof before they were added)\n\n")
  end
  if not s.allocator then
    out("   cprof: the profile has no allocator snapshot (dumps written with cprof's allocator"
      .. " installed have one)\n")
    return
  end
  local function w(...)
    for i = 1, select("#", ...) do out((select(i, ...))) end
  end
  allocator.free(w, s.allocator)
  allocator.types(w, s.allocator)
  allocator.kmemstat(w, s.allocator)
end

-- The columns of the series: { heading, value(summary) }; values nil print as "-".
local COLUMNS = {
  { "lua bytes", function(s) return s.allocator and s.allocator.lua_bytes end },
  { "live blocks", function(s) return s.allocator and s.allocator.live end },
  { "held", function(s) return s.allocator and s.allocator.held end },
  { "mapped", function(s) return s.allocator and s.allocator.mapped end },
  { "peak mapped", function(s) return s.allocator and s.allocator.peak_mapped end },
  { "charged live", function(s) local c = charged(s.meta) return c and c.live end },
}

-- The values of the series that a chart draws: byte counts.
local CHARTED = { 1, 3, 4, 6 }

-- The charts' colours, one per line drawn.
local COLORS = { "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728" }

--- The columns of the series ({ heading, value(summary) }), those a chart draws (indices) and
--- their colours: the text, the SVG and the HTML report show the same numbers.
M.COLUMNS, M.CHARTED, M.COLORS = COLUMNS, CHARTED, COLORS

--- cprof-stats --memory-series FILE...: one row per dump in the order given (M.in_order makes
--- it the order they were taken), with the growth of Lua's bytes since the previous one.
function M.series(list, out)
  out("Memory over " .. #list .. " dumps in the order they were taken (the allocator's numbers"
    .. " when each was written)\n\n")
  local head = { rjust("#", 3) }
  for _, c in ipairs(COLUMNS) do head[#head + 1] = rjust(c[1], 13) end
  head[#head + 1] = rjust("growth", 13) .. "  file"
  out(concat(head, " ") .. "\n")
  local prev
  for i, s in ipairs(list) do
    local row = { rjust(tostring(i), 3) }
    for _, c in ipairs(COLUMNS) do
      local v = c[2](s)
      row[#row + 1] = rjust(v and int_str(v) or "-", 13)
    end
    local now = COLUMNS[1][2](s)
    local growth = (now and prev) and now - prev or nil
    row[#row + 1] = rjust(growth and ((growth > 0 and "+" or "") .. int_str(growth)) or "", 13)
    out(concat(row, " ") .. "  " .. display(s.file) .. "\n")
    prev = now
  end
end

local function xml(s)
  return (string.gsub(tostring(s), "[&<>\"]", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;",
                                        ['"'] = "&quot;" }))
end

--- The series as an SVG line chart: one line per byte count, the dumps in order along x.
function M.series_svg(list, out)
  local W, H, L, R, T, B = 720, 360, 90, 160, 30, 40
  local max = 1
  for _, s in ipairs(list) do
    for _, ci in ipairs(CHARTED) do
      local v = COLUMNS[ci][2](s)
      if v and v > max then max = v end
    end
  end
  local n = #list
  local function x(i) return L + (n > 1 and (i - 1) * (W - L - R) / (n - 1) or (W - L - R) / 2) end
  local function y(v) return T + (H - T - B) * (1 - v / max) end
  local parts = {
    sformat('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">\n', W, H),
    sformat('<text x="%d" y="18">Memory over %d dumps (bytes)</text>\n', L, n),
    sformat('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#000"/>\n', L, H - B, W - R, H - B),
    sformat('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#000"/>\n', L, T, L, H - B),
    sformat('<text x="%d" y="%d" text-anchor="end">%s</text>\n', L - 4, T + 4, int_str(max)),
    sformat('<text x="%d" y="%d" text-anchor="end">0</text>\n', L - 4, H - B),
  }
  for i, s in ipairs(list) do
    parts[#parts + 1] = sformat('<text x="%.1f" y="%d" text-anchor="middle"><title>%s</title>%d</text>\n',
      x(i), H - B + 16, xml(s.file), i)
  end
  for k, ci in ipairs(CHARTED) do
    local pts = {}
    for i, s in ipairs(list) do
      local v = COLUMNS[ci][2](s)
      if v then pts[#pts + 1] = sformat("%.1f,%.1f", x(i), y(v)) end
    end
    if #pts > 0 then
      parts[#parts + 1] = sformat('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>\n',
        COLORS[k], concat(pts, " "))
      parts[#parts + 1] = sformat('<text x="%d" y="%d" fill="%s">%s</text>\n', W - R + 10,
        T + 16 * k, COLORS[k], xml(COLUMNS[ci][1]))
    end
  end
  parts[#parts + 1] = "</svg>\n"
  out(concat(parts))
end

return M
