--- cprof.report.text: the table of functions, as pstats' print_stats prints it — the file
--- lines, the totals line, the "Ordered by" and restriction lines, then one row per function —
--- and cprof's warnings about what the numbers lack.
--
-- Each printer takes a Stats and `out`, a function that writes one string (Stats buffers it
-- and writes the whole report with a single write).

local _ENV = require("cprof.env")()

local funckey = require "cprof.funckey"
local profdata = require "cprof.profdata"
local pyfmt = require "cprof.pyfmt"
local restrictions = require "cprof.restrictions"
local sanitize = require "cprof.sanitize"

local M = {}

local type, ipairs, pairs, tostring, tonumber = type, ipairs, pairs, tostring, tonumber
local sformat = string.format
local int_str, f8, rjust = pyfmt.int_str, pyfmt.f8, pyfmt.rjust
local display_name, display = funckey.display_name, sanitize.display

--- The column header line (without newline).
function M.title_line()
  return "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)"
end

-- The names of the units a time unit option (cprof-stats -u) takes, by seconds per unit.
local UNIT_NAMES = { [1] = "s", [1e-3] = "ms", [1e-6] = "us", [1e-9] = "ns" }

--- The name of a time unit of `u` seconds, for a heading: "s", "ms", "us", "ns", or "units of
--- 0.5 s".
function M.unit_name(u)
  return UNIT_NAMES[u] or ("units of " .. pyfmt.g("%g", u) .. " s")
end

--- The seconds per unit that a time unit option (cprof-stats -u) gives: s, ms, us, ns, or a
--- positive number of seconds; nil for anything else.
function M.unit_of(v)
  for u, name in pairs(UNIT_NAMES) do
    if v == name then return u end
  end
  local u = tonumber(v)
  if u and u > 0 and u ~= math.huge then return u end
  return nil
end

--- A duration of `x` seconds as text: with `unit` (seconds per unit: cprof-stats -u), its number
--- of units with three decimals, for a column whose heading names the unit; without, in the
--- largest of s, ms, us and ns that keeps it at least 1, to three significant digits, with
--- that unit ("2.50 ms", "312 ns", "0 s").
function M.duration(x, unit)
  if unit then return sformat("%.3f", x / unit) end
  if x == 0 then return "0 s" end
  local u = 1e-9
  for _, v in ipairs({ 1, 1e-3, 1e-6 }) do
    if math.abs(x) >= v then
      u = v
      break
    end
  end
  local n = x / u
  local a = math.abs(n)
  return sformat(a >= 99.95 and "%.0f %s" or a >= 9.995 and "%.1f %s" or "%.2f %s", n, UNIT_NAMES[u])
end

--- "1 time", "2 times": a count and its noun.
function M.count(n, one, many)
  return int_str(n) .. " " .. (n == 1 and one or many)
end

--- "nc" or "nc/cc".
function M.calls_text(nc, cc)
  local c = int_str(nc)
  if nc ~= cc then c = c .. "/" .. int_str(cc) end
  return c
end

-- One print_stats row (without newline) for a key and its record.
local function stats_line(key, r)
  local cc, nc, tt, ct = r[1], r[2], r[3], r[4]
  return rjust(M.calls_text(nc, cc), 9) .. " "
    .. f8(tt) .. " "
    .. (nc == 0 and "        " or f8(tt / nc)) .. " "
    .. f8(ct) .. " "
    .. (cc == 0 and "        " or f8(ct / cc)) .. " "
    .. display_name(key)
end

--- The file lines of st (Stats loaded from files), then an empty line if there were any.
function M.print_files(st, out)
  for _, f in ipairs(st.files) do out(display(f) .. "\n") end
  if #st.files > 0 then out("\n") end
end

local function percent(x)
  return sformat(x < 0.1 and x > -0.1 and "%.2f%%" or "%.1f%%", x)
end

-- The data's timer as the overhead line names it.
local function timer_name(meta)
  return type(meta.timer) == "string" and sanitize.display(meta.timer) or "profile's"
end

--- The header line on how much of `total` (seconds) is cprof's own overhead (meta from
--- cprof.bias.apply): subtracted, and how uncertain the rest is, or, uncalibrated, estimated.
--- nil when the meta says nothing of it.
function M.overhead_line(meta, total)
  if type(meta) ~= "table" or type(total) ~= "number" then return nil end
  local sub, unc, est = meta.bias_subtracted, meta.bias_uncertainty, meta.overhead_estimate
  local lost = type(meta.bias_lost) == "number" and meta.bias_lost or 0
  if type(sub) == "number" and (sub ~= 0 or lost > 0) then
    local raw = total + sub
    local src = type(meta.bias_source) == "string" and meta.bias_source or "set by hand"
    local rest = "its uncertainty is not known"
    if type(unc) == "number" and total > 0 then
      rest = "the rest is uncertain by ±" .. percent(100 * unc / total)
    end
    -- A charge larger than its function's time stays in the total, which the uncertainty of
    -- the model alone would hide (LuaJIT's coroutines: cprof.bias.apply).
    if lost > 0 and total > 0 then
      rest = rest .. sformat(", and about %s more of this total is overhead that could not be" ..
        " subtracted (charged to functions with less time than that)",
        percent(math.min(100, 100 * lost / total)))
    end
    return sformat("   cprof: calibrated (%s): %s of the measured time was cprof's overhead and" ..
                   " is subtracted; %s", src, raw > 0 and percent(100 * sub / raw) or "-", rest)
  elseif type(est) == "number" and est > 0 and total > 0 then
    local share = percent(math.min(100, 100 * est / total))
    return sformat("   cprof: not calibrated: %s of this total is cprof's own overhead" ..
                   " (typical costs of the %s timer; CPROF_CALIBRATE=save or Profile:calibrate()" ..
                   " measures them)", meta.overhead_at_least == true and share .. " or more"
                   or "about " .. share, timer_name(meta))
  elseif est == false then
    return sformat("   cprof: not calibrated: how much of this total is cprof's own overhead is" ..
                   " not known for the %s timer (Profile:calibrate() measures it)",
                   timer_name(meta))
  end
end

-- The file lines, top-level lines and totals line (pstats' print_stats head).
local function print_head(st, out)
  M.print_files(st, out)
  local indent = "        "
  for _, f in ipairs(st.top_level) do
    out(indent .. " " .. display(tostring(f[3])) .. "\n")
  end
  local s = indent .. " " .. int_str(st.total_calls) .. " function calls "
  if st.total_calls ~= st.prim_calls then
    s = s .. "(" .. int_str(st.prim_calls) .. " primitive calls) "
  end
  out(s .. "in " .. pyfmt.g("%.3f", st.total_tt) .. " seconds\n")
  out("\n")
  local overhead = M.overhead_line(st.meta, st.total_tt)
  if overhead then out(overhead .. "\n\n") end
  -- cprof turns LuaJIT's compiler off while it profiles, or compiled code would call no hook
  if profdata.on_luajit(st.meta) then
    out("   cprof: profiled on " .. display(st.meta.lua_version) .. " with the JIT compiler off: the times"
      .. " are those of the interpreter\n\n")
  end
end

-- What the numbers lack, from the profile's meta (pstats has no such lines: they appear only
-- when something was lost).
local function print_warnings(st, out)
  local meta = st.meta or {}
  if type(meta.dropped) == "number" and meta.dropped > 0 then
    out(sformat("   cprof: memory ran out while profiling: %s not recorded\n\n",
                M.count(meta.dropped, "event was", "events were")))
  end
  if type(meta.tree_folded) == "number" and meta.tree_folded > 0 then
    out(sformat("   cprof: the call tree reached its cap of %s nodes: %s on deeper new paths" ..
                " counted in their caller's node\n\n", int_str(meta.tree_cap or 0),
                M.count(meta.tree_folded, "call was", "calls were")))
  end
  if meta.fast_path == "fallback" then
    out(sformat("   cprof: the fast path was not used: %s; every call was resolved through Lua's" ..
                " public API\n\n", display(tostring(meta.fast_path_why))))
  end
  if type(meta.bias_clamped) == "number" and meta.bias_clamped > 0 then
    local per_event = type(meta.bias_lua_call) ~= "number" and
      sformat(" (%.3g s per event)", type(meta.bias) == "number" and meta.bias or 0) or ""
    out(sformat("   cprof: %s went below zero after subtracting the bias%s" ..
                " and %s shown as 0\n\n", M.count(meta.bias_clamped, "time", "times"),
                per_event, meta.bias_clamped == 1 and "was" or "were"))
  end
  if type(meta.timer_errors) == "number" and meta.timer_errors > 0 then
    out(sformat("   cprof: %s of the timer failed (it raised an error or returned no number) and" ..
                " repeated the last good reading: the times are wrong\n\n",
                M.count(meta.timer_errors, "reading", "readings")))
  end
end

--- Stats:print_stats(...): the restrictions sel[1..sel.n] applied to the sorted functions.
function M.print_stats(st, out, sel)
  print_head(st, out)
  local _, list, msg = restrictions.print_list(st, sel)
  if #list > 0 then
    out(msg .. "\n")
    out(M.title_line() .. "\n")
    for _, f in ipairs(list) do out(stats_line(f, st.stats[f]) .. "\n") end
    out("\n\n")
  end
  print_warnings(st, out)
end

return M
