--- cprof.report.rows: what the reports show, as plain data — a row per function (Stats:entries)
--- and the whole print_stats report with its totals and restrictions (Stats:report_table),
--- which the --json document and programs read.

local _ENV = require("cprof.env")()

local funckey = require "cprof.funckey"
local profdata = require "cprof.profdata"
local restrictions = require "cprof.restrictions"
local sortkeys = require "cprof.sortkeys"

local M = {}

local type, pairs, ipairs = type, pairs, ipairs
local func_std_string = funckey.func_std_string

local NO_MEMORY = profdata.zero_memory()

-- The row of one key: the numbers of its record and its name split up.
local function row_of(st, key)
  local r = st.stats[key]
  local cc, nc, tt, ct = r[1], r[2], r[3], r[4]
  local what = st.what[key] or funckey.key_what(key)
  local name = key[3]
  if what == "C" then name = funckey.c_name(key) or name end
  local row = {
    key = key,
    file = key[1], line = key[2], name = name, what = what,
    ncalls = nc, pcalls = cc, tottime = tt, cumtime = ct,
    percall_tot = nc ~= 0 and tt / nc or nil,
    percall_cum = cc ~= 0 and ct / cc or nil,
    stdname = func_std_string(key),
  }
  if st.memory then
    local m = st.mem[key] or NO_MEMORY
    for _, c in ipairs(profdata.MEMORY_COLUMNS) do row[c] = m[c] end
    row.live_bytes = m.alloc_bytes - m.free_bytes
  end
  local lines = st.lines[key]
  if lines then
    local nums = {}
    for l in pairs(lines) do nums[#nums + 1] = l end
    table.sort(nums)
    row.lines = {}
    for i, l in ipairs(nums) do row.lines[i] = { line = l, hits = lines[l].hits, time = lines[l].time } end
  end
  return row
end

--- Stats:entries(): rows in the current order (sorted, or insertion order).
function M.entries(st)
  local list = (st.fcn_list and #st.fcn_list > 0) and st.fcn_list or st.order
  local rows = {}
  for i, key in ipairs(list) do rows[i] = row_of(st, key) end
  return rows
end

-- The edges of a call dict as rows, in pstats' order (file, line, name; C functions last).
local function edge_rows(call_dict)
  local out = {}
  for _, k in ipairs(sortkeys.sorted_keys(call_dict)) do
    local e = call_dict[k]
    local row = { key = k, file = k[1], line = k[2], name = funckey.c_name(k) or k[3],
                  stdname = func_std_string(k) }
    if type(e) == "table" then
      row.ncalls, row.pcalls, row.tottime, row.cumtime = e[1], e[2], e[3], e[4]
    else
      row.ncalls = e      -- profile.py's call count: no primitive count, no times
    end
    out[#out + 1] = row
  end
  return out
end

--- Stats:report_table(opts, ...): see docs/REPORT.md, "Programmatic access".  With
--- opts.callees, st.all_callees must have been computed (Stats:calc_callees).
function M.report_table(st, opts, ...)
  local list, log = restrictions.select(st, ...)
  local rows = {}
  for i, key in ipairs(list) do
    local row = row_of(st, key)
    if opts.callers then row.callers = edge_rows(st.stats[key][5]) end
    if opts.callees then row.callees = edge_rows(st.all_callees[key] or {}) end
    rows[i] = row
  end
  local files = {}
  for i, f in ipairs(st.files) do files[i] = f end
  return {
    files = files,
    total_calls = st.total_calls, primitive_calls = st.prim_calls, total_time = st.total_tt,
    order = (st.fcn_list and #st.fcn_list > 0) and st.sort_type or nil,
    functions = #st.order,
    restrictions = log,
    rows = rows,
  }
end

return M
