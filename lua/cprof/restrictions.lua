--- cprof.restrictions: the restrictions of print_stats(...) and the other reports — a count, a
--- fraction, or a Lua pattern with '|' alternatives matched against the printed name — applied
--- in order to the sorted functions of a Stats, as pstats' get_print_list does.
--
-- Works on Lua 5.4 and LuaJIT/Lua 5.1.

local _ENV = require("cprof.env")()

local funckey = require "cprof.funckey"
local pyfmt = require "cprof.pyfmt"
local patmatch = require "cprof.patmatch"

local M = {}

local type, ipairs, pcall = type, ipairs, pcall
local sformat, sfind, ssub = string.format, string.find, string.sub
local floor = math.floor
local func_std_string = funckey.func_std_string
local display_len, is_int = pyfmt.display_len, pyfmt.is_int

-- Copy list[i..j] (not unpack: LuaJIT limits the number of results).
local function slice(list, i, j)
  local out, k = {}, 0
  for x = i or 1, j or #list do k = k + 1; out[k] = list[x] end
  return out
end

-- Split a restriction string into Lua-pattern alternatives at every '|' that
-- is not escaped ('%|') and not inside a set ('[|]').  Returns the list, or
-- nil and an error for a malformed pattern (checked statically, so that a bad
-- pattern is reported whatever the names it is matched against; unbalanced
-- parentheses are errors in every alternative).
local function split_alternatives(p)
  local alts, start, i, n, depth = {}, 1, 1, #p, 0
  while i <= n do
    local c = ssub(p, i, i)
    if c == "%" then
      if i == n then return nil, "malformed pattern (ends with '%')" end
      local d = ssub(p, i + 1, i + 1)
      if d == "b" then
        if i + 3 > n then return nil, "missing arguments to '%b'" end
        i = i + 4
      elseif d == "f" then
        if ssub(p, i + 2, i + 2) ~= "[" then return nil, "missing '[' after '%f' in pattern" end
        i = i + 2
      else
        i = i + 2
      end
    elseif c == "[" then
      local j = i + 1
      if ssub(p, j, j) == "^" then j = j + 1 end
      repeat
        if j > n then return nil, "malformed pattern (missing ']')" end
        local ch = ssub(p, j, j)
        j = j + 1
        if ch == "%" and j <= n then j = j + 1 end
      until ssub(p, j, j) == "]"
      i = j + 1
    elseif c == "|" then
      if depth > 0 then return nil, "unfinished capture" end
      alts[#alts + 1] = ssub(p, start, i - 1)
      start = i + 1
      i = i + 1
    else
      if c == "(" then
        depth = depth + 1
      elseif c == ")" then
        if depth == 0 then return nil, "invalid pattern capture" end
        depth = depth - 1
      end
      i = i + 1
    end
  end
  if depth > 0 then return nil, "unfinished capture" end
  alts[#alts + 1] = ssub(p, start)
  return alts
end

-- A function per alternative of pattern `p` that says whether a name matches it, in time
-- bounded by cprof.patmatch; or nil (a malformed pattern) and, for a pattern refused as too
-- costly, why.
local function matchers_of(p)
  local alts = split_alternatives(p)
  if not alts then return nil end
  local out = {}
  for i, a in ipairs(alts) do
    local auto, reps = patmatch.compile(a)
    if reps <= patmatch.MAX_BACKTRACKING then
      out[i] = function(s) return sfind(s, a) ~= nil end -- fast, and bounded
    elseif auto then
      out[i] = function(s) return patmatch.find(s, auto) end
    else
      return nil, string.format("%%b or a back-reference with %d repetitions could take too long; at most"
        .. " %d", reps, patmatch.MAX_BACKTRACKING)
    end
  end
  return out
end

--- A function that says whether a name matches restriction pattern `p` ("|" separates
--- alternatives; bounded in time as the reports' restrictions are), or nil and why `p` is
--- refused.  The exports and --diff restrict by it.
function M.matcher(p)
  local ms, why = matchers_of(p)
  if not ms then return nil, why or "malformed pattern" end
  return function(s)
    for _, m in ipairs(ms) do
      if m(s) then return true end
    end
    return false
  end
end

--- The first items of `list` that the number `n` keeps, as pstats keeps them: a fraction in
--- [0, 1) of them (rounded), or a whole number of them; any other number keeps them all.
--- Returns a new list.
function M.limit(list, n)
  if not is_int(n) and n >= 0.0 and n < 1.0 then return slice(list, 1, floor(#list * n + 0.5)) end
  if is_int(n) and n >= 0 and n < #list then return slice(list, 1, n) end
  return slice(list)
end

-- Apply one restriction to `list` (pstats' eval_print_amount).  Returns the new list and `msg`
-- with the line that says what the restriction did, if it did something.
local function restrict(sel, list, msg)
  local new_list = list
  if type(sel) == "string" then
    local matchers, why = matchers_of(sel)
    local ok, res = false, nil
    if matchers then
      ok, res = pcall(function()
        local out = {}
        for _, f in ipairs(list) do
          local s = func_std_string(f)
          for _, match in ipairs(matchers) do
            if match(s) then out[#out + 1] = f; break end
          end
        end
        return out
      end)
    end
    if not ok then
      return list, msg .. sformat("   <Invalid regular expression %s%s>\n", pyfmt.py_str_repr(sel),
                                  why and " (" .. why .. ")" or "")
    end
    new_list = res
  elseif type(sel) == "number" then
    new_list = M.limit(list, sel)
  end
  if #list ~= #new_list then
    msg = msg .. sformat("   List reduced from %d to %d due to restriction <%s>\n",
      #list, #new_list, pyfmt.py_repr(sel))
  end
  return new_list, msg
end

-- The keys of `st` in its current order: sorted, or insertion order.
local function ordered(st)
  if st.fcn_list and #st.fcn_list > 0 then return slice(st.fcn_list), true end
  return slice(st.order), false
end

--- The list a report prints after the restrictions sel_list[1..sel_list.n] (pstats'
--- get_print_list).  Returns the width of the name column, the list, and the heading text
--- ("Ordered by" and "List reduced" lines; to print when the list is not empty).
function M.print_list(st, sel_list)
  local width = st.max_name_len
  local stat_list, sorted = ordered(st)
  local msg
  if sorted then
    msg = "   Ordered by: " .. st.sort_type .. "\n"
  else
    msg = "   Random listing order was used\n"
  end
  for i = 1, (sel_list.n or #sel_list) do
    stat_list, msg = restrict(sel_list[i], stat_list, msg)
  end
  if #stat_list == 0 then return 0, stat_list, nil end
  if #stat_list < #st.order then
    width = 0
    for _, f in ipairs(stat_list) do
      local w = display_len(funckey.display_name(f))
      if w > width then width = w end
    end
  end
  return width + 2, stat_list, msg
end

--- Stats:select(...): the keys print_stats(...) would print, in order, and what each
--- restriction did: a list of { restriction = r, from = n, to = m [, invalid = true] }
--- (`invalid` for a malformed pattern, which leaves the list as it was).
function M.select(st, ...)
  local sel = { n = select("#", ...), ... }
  local list = ordered(st)
  local log = {}
  for i = 1, sel.n do
    local before = #list
    local msg
    list, msg = restrict(sel[i], list, "")
    log[#log + 1] = { restriction = sel[i], from = before, to = #list,
                      invalid = sfind(msg, "<Invalid regular expression", 1, true) ~= nil or nil }
  end
  return list, log
end

return M
