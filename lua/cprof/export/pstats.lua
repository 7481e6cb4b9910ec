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
-- become U+FFFD (model.utf8).  Only functions and their callers are needed, so profiles
-- without a call tree (pstats files, Stats) can be written too.

local M = {}

local export = require("cprof.export")
local data_mod = require("cprof.data")
local binary = require("cprof.export.binary")
local model_mod = require("cprof.export.model")

M.binary = true
M.WEIGHTS = { time = true }
M.WEIGHTS_TEXT = "pstats holds times and call counts"

local le32, double = binary.le32, binary.double
local schar, sbyte, concat, floor = string.char, string.byte, table.concat, math.floor
local tostring, pairs, ipairs = tostring, pairs, ipairs

local function str(s)
  s = model_mod.utf8(tostring(s))
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

local function float(x) return "g" .. double(x) end

local REF_TUPLE3 = schar(sbyte("(") + 128) .. le32(3)
local TUPLE4, TUPLE5 = "(" .. le32(4), "(" .. le32(5)

function M.write(m, sink)
  local st = data_mod.to_stats(m.d)
  local entries = st.entries
  if #entries == 0 then
    model_mod.fail("pstats: the profile has no function that completed a call (Python's pstats"
      .. " refuses an empty stats dict)")
  end
  -- Entry i's key is written whole (flagged) the first time, as a reference afterwards.
  local first, ref, nrefs = {}, {}, 0
  for i, e in ipairs(entries) do
    local file, line, name = e.file, e.line, e.name
    if e.what == "C" then file, line, name = "~", 0, "<" .. tostring(name) .. ">" end
    first[i] = { file = file, line = line, name = name }
  end
  local w = export.buffer(sink)
  local function put_key(i)
    local r = ref[i]
    if r then
      w.put(r)
      return
    end
    local k = first[i]
    w.put(REF_TUPLE3 .. str(k.file) .. count(k.line) .. str(k.name))
    ref[i] = "r" .. le32(nrefs)
    nrefs = nrefs + 1
  end
  w.put("{")
  for i, e in ipairs(entries) do
    put_key(i)
    w.put(TUPLE5 .. count(e.pcalls) .. count(e.ncalls) .. float(e.tottime) .. float(e.cumtime))
    w.put("{")
    local idx = {}
    for ci in pairs(e.callers) do idx[#idx + 1] = ci end
    table.sort(idx)
    for _, ci in ipairs(idx) do
      local c = e.callers[ci]
      put_key(ci)
      w.put(TUPLE4 .. count(c.ncalls) .. count(c.pcalls) .. float(c.tottime) .. float(c.cumtime))
    end
    w.put("0")
  end
  w.put("0")
  w.flush()
  return { format = "pstats", functions = #entries }
end

return M
