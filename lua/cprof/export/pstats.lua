--- cprof.export.pstats: the file `cProfile -o` writes, for Python's pstats, `python -m pstats`,
--- snakeviz, gprof2dot and pyprof2calltree.
--
-- The file is Python's marshal of the stats dict (shared/reference/pstats/SPEC.md §1):
--
--   { (file, line, name): (cc, nc, tt, ct, { caller: (nc, cc, tt, ct) }) }
--
-- with Lua's names mapped as SPEC.md §8 says: a Lua function is (chunk name, line defined,
-- name), a main chunk (chunk name, 0, "<main chunk>"), a C function ("~", 0, "<name>"), which
-- pstats prints as {name} exactly as cprof-stats does.  Counts are ints, times floats in
-- seconds.  A function's key tuple is written once and referenced afterwards (marshal's
-- FLAG_REF and 'r', as CPython's own marshal does), which keeps callers' dicts small.
-- Marshal strings are UTF-8 that Python decodes strictly: bytes of a name that are not UTF-8
-- become U+FFFD (cprof.sanitize).  Only functions and their callers are needed, so profiles
-- without a call tree (pstats files, Stats) can be written too.

local _ENV = require("cprof.env")()

local M = {}

local export = require("cprof.export")
local binary = require("cprof.export.binary")
local model_mod = require("cprof.export.model")
local sanitize = require("cprof.sanitize")

M.binary = true
M.WEIGHTS = { time = true }
M.WEIGHTS_TEXT = "pstats holds times and call counts"

local le32, double, iigg = binary.le32, binary.double, binary.iigg
local schar, sbyte, concat, floor = string.char, string.byte, table.concat, math.floor
local tostring = tostring

local function str(s)
  s = sanitize.utf8(tostring(s))
  return "u" .. le32(#s) .. s
end

-- An int: 'i' when it fits 32 bits, else 'l' with 15-bit digits (sign in the digit count).
local function int(n)
  if n >= -2147483648 and n <= 2147483647 then return "i" .. le32(n) end
  local neg = n < 0
  if neg then n = -n end
  local digits = {}
  while n > 0 do
    local d = n % 32768
    digits[#digits + 1] = schar(d % 256, floor(d / 256))
    n = floor(n / 32768)
  end
  return "l" .. le32(neg and -#digits or #digits) .. concat(digits)
end

local function count(x)
  if x ~= floor(x) or x ~= x then
    model_mod.fail("pstats: call count %s is not a whole number", tostring(x))
  end
  return int(x)
end

local INT32 = 2147483647

-- A (count, count, time, time) group: one string.pack where the counts fit 32 bits.
local function ccff(a, b, c, d)
  if a >= 0 and a <= INT32 and b >= 0 and b <= INT32 and a == floor(a) and b == floor(b) then
    return iigg(a, b, c, d)
  end
  return count(a) .. count(b) .. "g" .. double(c) .. "g" .. double(d)
end

local REF_TUPLE3 = schar(sbyte("(") + 128) .. le32(3)
local TUPLE4, TUPLE5 = "(" .. le32(4), "(" .. le32(5)

-- A function's key as marshal writes it, without the tuple's header: (file, line, name), or
-- ("~", 0, "<name>") for a C function.
local function key_bytes(F, f)
  if F.kind[f] == "C" then return str("~") .. int(0) .. str("<" .. tostring(F.name[f]) .. ">") end
  return str(F.file[f]) .. count(F.line[f]) .. str(F.name[f])
end

-- Written straight from the columns (a million edges make a million small tables otherwise):
-- functions that completed a call, in frame order, each with its callers (edges with calls
-- between two such functions; the same pair twice is summed, as cprof.data.to_stats does).
-- Frames with the same key are one function to pstats, which keeps one entry per key: two
-- chunks with the same chunk name (load("local x = 1\nreturn x") and load("local x = 1\nreturn
-- x + 1") are both [string "local x = 1..."]), or names that differ only in bytes that are
-- not UTF-8.  Their numbers and callers are added into the first one's entry, as cprof-stats
-- adds the rows of one key.
function M.write(m, sink)
  local F, E = m.F, m.d.edges
  -- canon[f]: the frame whose entry holds frame f's numbers
  local canon, keys, first_of = {}, {}, {}
  local functions = 0
  for f = 1, F.n do
    if F.ncalls[f] ~= 0 then
      local k = key_bytes(F, f)
      local c = first_of[k]
      if not c then
        c = f
        first_of[k], keys[f] = f, k
        functions = functions + 1
      end
      canon[f] = c
    end
  end
  first_of = nil
  if functions == 0 then
    model_mod.fail("pstats: the profile has no function that completed a call (Python's pstats"
      .. " refuses an empty stats dict)")
  end
  local pc, nc_f, tt_f, ct_f = {}, {}, {}, {}
  for f = 1, F.n do
    local c = canon[f]
    if c == f then
      pc[c], nc_f[c], tt_f[c], ct_f[c] = F.pcalls[f], F.ncalls[f], F.tottime[f], F.cumtime[f]
    elseif c then
      pc[c], nc_f[c] = pc[c] + F.pcalls[f], nc_f[c] + F.ncalls[f]
      tt_f[c], ct_f[c] = tt_f[c] + F.tottime[f], ct_f[c] + F.cumtime[f]
    end
  end
  -- The callers of each entry, in compressed rows (edge numbers).
  local first, list, fill = {}, {}, {}
  for f = 1, F.n + 1 do first[f] = 0 end
  local function callee_of(e)
    if E.ncalls[e] == 0 or not canon[E.caller[e]] then return nil end
    return canon[E.callee[e]]
  end
  for e = 1, E.n do
    local g = callee_of(e)
    if g then first[g] = first[g] + 1 end
  end
  local pos = 1
  for f = 1, F.n + 1 do
    local c = first[f]
    first[f], fill[f] = pos, pos
    pos = pos + c
  end
  -- Each function's callers in frame order, whatever the edges' order, so that a Stats read
  -- back from the file writes the same bytes: the edges taken by caller (a counting sort).
  local at, by_caller = {}, {}
  for f = 1, F.n + 1 do at[f] = 0 end
  for e = 1, E.n do at[E.caller[e] + 1] = at[E.caller[e] + 1] + 1 end
  at[1] = 1
  for f = 2, F.n + 1 do at[f] = at[f] + at[f - 1] end
  for e = 1, E.n do
    by_caller[at[E.caller[e]]] = e
    at[E.caller[e]] = at[E.caller[e]] + 1
  end
  for _, e in ipairs(by_caller) do
    local g = callee_of(e)
    if g then
      list[fill[g]] = e
      fill[g] = fill[g] + 1
    end
  end

  local w = export.buffer(sink)
  -- A function's key is written whole (flagged) the first time, as a reference afterwards.
  local ref, nrefs = {}, 0
  local function put_key(f)
    local r = ref[f]
    if r then
      w.put(r)
      return
    end
    w.put(REF_TUPLE3 .. keys[f])
    ref[f] = "r" .. le32(nrefs)
    nrefs = nrefs + 1
  end
  local mark, slot = {}, {}
  local nc, cc, tt, ct, callers = {}, {}, {}, {}, {}
  w.put("{")
  for f = 1, F.n do
    if canon[f] == f then
      put_key(f)
      w.put(TUPLE5 .. ccff(pc[f], nc_f[f], tt_f[f], ct_f[f]) .. "{")
      local n = 0
      for i = first[f], first[f + 1] - 1 do
        local e = list[i]
        local c = canon[E.caller[e]]
        local j = mark[c] == f and slot[c]
        if j then
          nc[j], cc[j] = nc[j] + E.ncalls[e], cc[j] + E.pcalls[e]
          tt[j], ct[j] = tt[j] + E.tottime[e], ct[j] + E.cumtime[e]
        else
          n = n + 1
          mark[c], slot[c] = f, n
          callers[n], nc[n], cc[n], tt[n], ct[n] = c, E.ncalls[e], E.pcalls[e], E.tottime[e],
            E.cumtime[e]
        end
      end
      for j = 1, n do
        put_key(callers[j])
        w.put(TUPLE4 .. ccff(nc[j], cc[j], tt[j], ct[j]))
      end
      w.put("0")
    end
  end
  w.put("0")
  w.flush()
  return { format = "pstats", functions = functions }
end

return M
