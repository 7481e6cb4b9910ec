--- cprof.report.callers: the callers and callees tables, as pstats' print_callers and
--- print_callees print them — each function, then its edges in pstats' key order.
--
-- Each printer takes a Stats and `out`, a function that writes one string.

local _ENV = require("cprof.env")()

local funckey = require "cprof.funckey"
local pyfmt = require "cprof.pyfmt"
local restrictions = require "cprof.restrictions"
local sortkeys = require "cprof.sortkeys"
local text = require "cprof.report.text"

local M = {}

local type, ipairs, pairs, next = type, ipairs, pairs, next
local srep = string.rep
local f8, ljust, rjust, py_repr = pyfmt.f8, pyfmt.ljust, pyfmt.rjust, pyfmt.py_repr
local display_name = funckey.display_name

-- The heading of the callers/callees tables.
local function print_call_heading(st, name_size, column_title, out)
  out(ljust("Function ", name_size) .. column_title .. "\n")
  -- pstats prints the sub-header when the first non-empty callers dict holds edge tuples
  -- (cProfile's), not call counts (profile.py's).  cprof's edges are always tuples; a dict
  -- that mixes both (pstats files of both kinds added) counts as tuples.
  for _, key in ipairs(st.order) do
    local callers = st.stats[key][5]
    if next(callers) ~= nil then
      for _, e in pairs(callers) do
        if type(e) == "table" then
          out(srep(" ", name_size) .. "    ncalls  tottime  cumtime\n")
          break
        end
      end
      break
    end
  end
end

-- One function and its edges: the first edge on the function's line, the others below.
local function print_call_line(st, name_size, source, call_dict, arrow, out)
  local head = ljust(display_name(source), name_size) .. arrow .. " "
  if next(call_dict) == nil then
    out(head .. "\n")
    return
  end
  local indent = ""
  for _, func in ipairs(sortkeys.sorted_keys(call_dict)) do
    local e = call_dict[func]
    local sub, left
    if type(e) == "table" then
      local nc, cc, tt, ct = e[1], e[2], e[3], e[4]
      sub = rjust(text.calls_text(nc, cc), 7 + 2 * #indent) .. " " .. f8(tt) .. " " .. f8(ct)
        .. "  " .. display_name(func)
      left = name_size + 1
    else
      -- profile.py's call count: pstats prints the other function's total cumtime
      local r = st.stats[func]
      sub = display_name(func) .. "(" .. py_repr(e) .. ") " .. (r and f8(r[4]) or "        ")
      left = name_size + 3
    end
    if indent == "" then
      out(head .. sub .. "\n")
    else
      out(srep(" ", left) .. sub .. "\n")
    end
    indent = " "
  end
end

-- print_callers and print_callees: `dicts(func)` gives the edges shown for func.
local function print_calls(st, out, title, arrow, dicts, sel)
  local width, list, msg = restrictions.print_list(st, sel)
  if #list > 0 then
    out(msg .. "\n")
    print_call_heading(st, width, title, out)
    for _, f in ipairs(list) do print_call_line(st, width, f, dicts(f), arrow, out) end
    out("\n\n")
  end
end

--- Stats:print_callers(...): for each function, the functions that called it, with the numbers
--- of each caller->function edge.
function M.print_callers(st, out, sel)
  print_calls(st, out, "was called by...", "<-", function(f) return st.stats[f][5] end, sel)
end

--- Stats:print_callees(...): for each function, the functions it called (st.all_callees must
--- have been computed: Stats:calc_callees).
function M.print_callees(st, out, sel)
  local all = st.all_callees
  print_calls(st, out, "called...", "->", function(f) return all[f] or {} end, sel)
end

return M
