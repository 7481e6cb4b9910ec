--- cprof.patmatch: whether a Lua pattern matches somewhere in a string, in time proportional to
--- the string's length times the pattern's, whatever the pattern.
--
-- string.find backtracks: '.-.-.-.-.-Q' takes most of a second on one 50-character name that
-- has no Q, and every further repetition multiplies that by the name's length.  The report
-- restrictions only ask whether a name matches, and for that the regular part of Lua's
-- patterns (classes, sets, '.', '*', '+', '-', '?', '^', '$', captures, %f) is a finite
-- automaton: its states are run side by side over the string once (Thompson's construction).
-- Which bytes a class or set holds is asked of string.find itself, one byte at a time, so the
-- classes mean exactly what they mean to Lua (and to LuaJIT's Lua 5.1 patterns).
--
-- A pattern with at most MAX_BACKTRACKING repetitions is best left to string.find: its work
-- per start position is then bounded by the string's length to that power, and it is faster
-- than the automaton.  %b and back-references (%1 ... %9) are not regular: a pattern with
-- them and more repetitions than that has no bound, and is refused.
--
-- Works on Lua 5.4 and LuaJIT/Lua 5.1.

local _ENV = require("cprof.env")()

local M = {}

local sfind, ssub, sbyte, schar = string.find, string.sub, string.byte, string.char

--- The most repetitions ('*', '+', '-', '?') of a pattern matched by backtracking.
M.MAX_BACKTRACKING = 1

-- The bytes a single-character class holds: { [byte] = true }.
local function class_set(text)
  local set = {}
  if text == "." then
    for b = 0, 255 do set[b] = true end
  elseif #text == 1 or (ssub(text, 1, 1) == "%" and not sfind(ssub(text, 2, 2), "%w")) then
    set[sbyte(text, #text)] = true
  else
    local p = "^" .. text
    for b = 0, 255 do
      if sfind(schar(b), p) then set[b] = true end
    end
  end
  return set
end

-- The end (exclusive) of the single-character class starting at p[i], as lstrlib's classEnd
-- finds it (the pattern was checked to be well formed).
local function class_end(p, i)
  local c = ssub(p, i, i)
  if c == "%" then return i + 2 end
  if c ~= "[" then return i + 1 end
  i = i + 1
  if ssub(p, i, i) == "^" then i = i + 1 end
  repeat
    local d = ssub(p, i, i)
    i = i + 1
    if d == "%" then i = i + 1 end
  until ssub(p, i, i) == "]"
  return i + 1
end

--- compile(p): the automaton of pattern p (nil when p is not regular: it has %b or a
--- back-reference), and the number of its repetitions.  p must be a well-formed pattern.
function M.compile(p)
  local items, reps = {}, 0
  local n, i = #p, 1
  local anchored = ssub(p, 1, 1) == "^"
  if anchored then i = 2 end
  local at_end = false
  local regular = true
  while i <= n do
    local c = ssub(p, i, i)
    local d = ssub(p, i + 1, i + 1)
    if c == "(" or c == ")" then
      i = i + 1 -- captures do not change what matches
    elseif c == "$" and i == n then
      at_end = true
      i = i + 1
    elseif c == "%" and d == "b" then
      regular = false
      i = i + 4
    elseif c == "%" and sfind(d, "^%d$") then
      regular = false
      i = i + 2
    elseif c == "%" and d == "f" then
      local e = class_end(p, i + 2)
      items[#items + 1] = { set = class_set(ssub(p, i + 2, e - 1)), frontier = true }
      i = e
    else
      local e = class_end(p, i)
      local set = class_set(ssub(p, i, e - 1))
      local q = ssub(p, e, e)
      if q == "*" or q == "-" or q == "?" then
        items[#items + 1] = { set = set, quant = q == "?" and "?" or "*" }
        e = e + 1
        reps = reps + 1
      elseif q == "+" then
        items[#items + 1] = { set = set }
        items[#items + 1] = { set = set, quant = "*" }
        e = e + 1
        reps = reps + 1
      else
        items[#items + 1] = { set = set }
      end
      i = e
    end
  end
  if not regular then return nil, reps end
  return { items = items, anchored = anchored, at_end = at_end }, reps
end

--- find(s, a): whether automaton `a` (from compile) matches somewhere in s, as
--- string.find(s, p) ~= nil would say.
function M.find(s, a)
  local items, m, len = a.items, #a.items, #s
  local active = { [1] = true }
  for pos = 1, len + 1 do
    local prev = pos > 1 and sbyte(s, pos - 1) or 0
    local cur = pos <= len and sbyte(s, pos) or 0
    -- Moves without a character, forward only: one pass in order closes the set.
    for k = 1, m do
      local it = items[k]
      if active[k] and (it.quant or (it.frontier and not it.set[prev] and it.set[cur])) then
        active[k + 1] = true
      end
    end
    if active[m + 1] and (not a.at_end or pos == len + 1) then return true end
    if pos > len then break end
    local nxt = {}
    for k = 1, m do
      local it = items[k]
      if active[k] and not it.frontier and it.set[cur] then
        if it.quant == "*" then nxt[k] = true else nxt[k + 1] = true end
      end
    end
    if not a.anchored then nxt[1] = true end
    active = nxt
  end
  return false
end

return M
