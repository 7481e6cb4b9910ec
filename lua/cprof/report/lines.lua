--- cprof.report.lines: the line report, as line_profiler's show_func prints it — for each
--- function with line records, its source lines with hits, time, time per hit and share of the
--- function's time, in units of the profile's timer.
--
-- The printer takes a Stats and `out`, a function that writes one string.

local _ENV = require("cprof.env")()

local dump = require "cprof.dump"
local pyfmt = require "cprof.pyfmt"
local restrictions = require "cprof.restrictions"
local display = require("cprof.sanitize").display

local M = {}

local type, ipairs, pairs, next, pcall, tostring = type, ipairs, pairs, next, pcall, tostring
local sformat, ssub, srep, sgsub, sfind = string.format, string.sub, string.rep, string.gsub, string.find
local huge, concat = math.huge, table.concat
local int_str, rjust, g, display_len = pyfmt.int_str, pyfmt.rjust, pyfmt.g, pyfmt.display_len

-- The unit of the Time columns: st.line_unit when set (cprof-stats -u), else the timer's
-- seconds per tick (1e-6 when the sources did not say).
local function line_unit(st)
  local unit = st.line_unit or st.unit
  if type(unit) ~= "number" or not (unit > 0) or unit == huge then unit = 1e-6 end
  return unit
end

-- The most of a source file read: a profile names its files, and nothing in it is trusted.
local MAX_SOURCE = 2 ^ 26

--- The lines of a source file ("\n" or "\r\n" endings), or nil when it cannot be read (or is no
--- regular file: a profile's file name may be a FIFO's, or /dev/zero).  The HTML report reads
--- its sources with this too.
local function source_lines(file)
  if type(file) ~= "string" or file == "" or ssub(file, 1, 1) == "[" or not dump.is_regular(file) then
    return nil
  end
  local f = io.open(file, "rb")
  if not f then return nil end
  local ok, text = pcall(f.read, f, MAX_SOURCE)
  f:close()
  if ok and text == nil then text = "" end -- an empty file
  if not ok or type(text) ~= "string" then return nil end
  local lines = {}
  for line in string.gmatch((text .. "\n"), "([^\n]*)\n") do lines[#lines + 1] = (sgsub(line, "\r$", "")) end
  if ssub(text, -1) == "\n" then lines[#lines] = nil end
  return lines
end
M.source_lines = source_lines

--- The lines a function's report spans: from its first line (key[2]) to its last (the dump's
--- lastline), widened to every line recorded (`nums`, sorted) when those are unknown or narrower.
function M.span(st, key, nums)
  local first, last = key[2], st.lastline[key]
  if type(first) ~= "number" or first < 1 or nums[1] < first then first = nums[1] end
  if type(last) ~= "number" or last < first then last = nums[#nums] end
  if nums[#nums] > last then last = nums[#nums] end
  return first, last
end

-- A source line as the report shows it: tabs expanded to stops every 8 characters of the line
-- (it starts mid-row, where the terminal's own stops would scramble its indentation), and any
-- other control character shown as its escape (sanitize.display).
local function source_text(line)
  if sfind(line, "\t", 1, true) then
    local out, col = {}, 0
    for piece, tab in string.gmatch(line, "([^\t]*)(\t?)") do
      out[#out + 1] = piece
      col = col + display_len(piece)
      if tab ~= "" then
        out[#out + 1] = srep(" ", 8 - col % 8)
        col = col + 8 - col % 8
      end
    end
    line = concat(out)
  end
  return display(line)
end

-- line_profiler's default column widths (show_func), and its number formats.
local LINE_COLS = { line = 6, hits = 9, time = 12, perhit = 8, percent = 8 }

-- One function of the report, as line_profiler's show_func prints it.  `sources` caches the
-- source files' lines by name.
local function print_function(st, key, lines, unit, sources, out)
  local nums = {}
  for line in pairs(lines) do nums[#nums + 1] = line end
  table.sort(nums)
  local total = 0
  for _, line in ipairs(nums) do total = total + lines[line].time end
  local first, last = M.span(st, key, nums)

  local file = key[1]
  if sources[file] == nil then sources[file] = source_lines(file) or false end
  local src = sources[file]

  out(sformat("Total time: %s s\n", g("%g", total)))
  out("File: " .. display(tostring(file)) .. "\n")
  out("Function: " .. display(tostring(key[3])) .. " at line " .. int_str(key[2]) .. "\n")

  local display, wide = {}, { hits = LINE_COLS.hits, time = LINE_COLS.time, perhit = LINE_COLS.perhit }
  for _, line in ipairs(nums) do
    local r = lines[line]
    local ticks = r.time / unit
    local percent = total == 0 and "" or g("%5.1f", 100 * r.time / total)
    local time = g("%5.1f", ticks)
    if #time > LINE_COLS.time then time = g("%5.1g", ticks) end
    local perhit = ""
    if r.hits ~= 0 then
      perhit = g("%5.1f", ticks / r.hits)
      if #perhit > LINE_COLS.perhit then perhit = g("%5.1g", ticks / r.hits) end
    end
    local hits = int_str(r.hits)
    if #hits > LINE_COLS.hits then hits = g("%g", r.hits) end
    display[line] = { hits, time, perhit, percent }
    if #hits > wide.hits then wide.hits = #hits end
    if #time > wide.time then wide.time = #time end
    if #perhit > wide.perhit then wide.perhit = #perhit end
  end
  local function row(a, b, c, d, e, text)
    return rjust(a, LINE_COLS.line) .. " " .. rjust(b, wide.hits) .. " " .. rjust(c, wide.time)
      .. " " .. rjust(d, wide.perhit) .. " " .. rjust(e, LINE_COLS.percent) .. "  " .. text
  end
  local header = row("Line #", "Hits", "Time", "Per Hit", "% Time", "Line Contents")
  out("\n" .. header .. "\n" .. srep("=", #header) .. "\n")
  for line = first, last do
    local d = display[line] or { "", "", "", "" }
    out(row(int_str(line), d[1], d[2], d[3], d[4], src and source_text(src[line] or "") or "") .. "\n")
  end
  out("\n")
end

--- Stats:print_lines(...): the functions print_stats(...) would print, in the same order, those
--- with line records (the "Timer unit:" line first gives the unit of the Time columns).
function M.print_lines(st, out, sel)
  if not st:has_lines() then
    out("   cprof: the profile has no line events (make it with cprof.Profile{lines = true}, or" ..
        " CPROF_LINES=1 with cprof.auto)\n\n")
    return
  end
  local unit = line_unit(st)
  out(sformat("Timer unit: %s s\n\n", g("%g", unit)))
  local _, list = restrictions.print_list(st, sel)
  local sources = {}
  for _, key in ipairs(list) do
    local lines = st.lines[key]
    if lines and next(lines) ~= nil then print_function(st, key, lines, unit, sources, out) end
  end
end

return M
