--- cprof.pstats.marshal: reads the Python marshal files that pstats writes (`Stats.dump_stats`,
--- `cProfile -o`, yappi's and other tools' "pstat" output), in pure Lua.
--
--   local marshal = require "cprof.pstats.marshal"
--   marshal.is_marshal(first_bytes)     true when the bytes start like a pstats file
--   marshal.decode(s [, name])          the value that the bytes `s` hold (see below)
--   marshal.read(path)                  the same for a file
--   marshal.to_records(value [, name])  the pstats data of a decoded value, checked
--   marshal.load_stats(path)            marshal.to_records(marshal.read(path), path)
--
-- Only the subset a pstats file uses is understood (docs/REPORT.md, "Python pstats files"):
--
--   '{' dict (pairs until '0')       -> { type = "dict", at = offset, n = N, keys = {...},
--                                          values = {...}, key_at = {...}, value_at = {...} }
--                                          (file order kept; offsets of the keys and values)
--   '(' tuple (int32 n), ')' (uint8 n) -> { type = "tuple", at = offset, n = N, ... }
--   'i' int32, 'l' long (15-bit digits) -> an integer (a float beyond 64 bits; on LuaJIT, a
--                                          number)
--   'g' binary64, 'f' float as text   -> a float
--   'u', 't', 'a', 'A', 's' (int32 n), 'z', 'Z' (uint8 n) strings and bytes -> a Lua string
--   'N' None -> marshal.None, 'T' True -> true, 'F' False -> false
--   'r' a back-reference to an earlier object whose type byte had the FLAG_REF bit (0x80)
--   Python 2's 'I' (int64) and 'R' (a reference to the n-th 't' string read so far)
--
-- Anything else (lists, sets, code objects, complex numbers, ...) is refused.  Errors are
-- raised as one line, "<name>: byte <offset>: <what is wrong>", with the offset 0-based from
-- the start of the file.  The reader never reads past the data: every length is checked
-- against the bytes left, nesting is limited to MAX_DEPTH levels, and references may only
-- point at objects that are complete (so no cycles).
--
-- Pure Lua; works on Lua 5.4 and LuaJIT.

local _ENV = require("cprof.env")()

local M = {}

local type, tostring, tonumber, error, pcall, setmetatable =
  type, tostring, tonumber, error, pcall, setmetatable
local sbyte, ssub, sformat, sfind, slower = string.byte, string.sub, string.format,
  string.find, string.lower
local floor, huge = math.floor, math.huge
local mtype = math.type
local sunpack = string.unpack     -- nil on LuaJIT

--- The deepest nesting accepted (a pstats file needs 4: dict, tuple, dict, tuple).
M.MAX_DEPTH = 64

--- Python's None.
M.None = setmetatable({}, { __tostring = function() return "None" end })

local FLAG_REF = 0x80

-- Type codes (the byte without FLAG_REF).
local T_NULL, T_NONE, T_TRUE, T_FALSE = 0x30, 0x4E, 0x54, 0x46          -- '0' 'N' 'T' 'F'
local T_INT, T_LONG = 0x69, 0x6C                                          -- 'i' 'l'
local T_BFLOAT, T_FLOAT = 0x67, 0x66                                      -- 'g' 'f'
local T_UNICODE, T_INTERNED, T_STRING = 0x75, 0x74, 0x73                  -- 'u' 't' 's'
local T_ASCII, T_ASCII_I, T_SASCII, T_SASCII_I = 0x61, 0x41, 0x7A, 0x5A   -- 'a' 'A' 'z' 'Z'
local T_TUPLE, T_STUPLE, T_DICT, T_REF = 0x28, 0x29, 0x7B, 0x72           -- '(' ')' '{' 'r'
-- Python 2's marshal (pstats files of Python 2): 64-bit ints, and references to the interned
-- strings ('t') read so far.
local T_INT64, T_STRINGREF = 0x49, 0x52                                   -- 'I' 'R'

-- Names of the types that exist in marshal but that a pstats file never holds.
local UNSUPPORTED = {
  [0x5B] = "a list", [0x3C] = "a set", [0x3E] = "a frozenset", [0x63] = "a code object",
  [0x78] = "a complex number", [0x79] = "a complex number", [0x2E] = "Ellipsis",
  [0x53] = "StopIteration",
  [0x3F] = "an unknown object",
}

--- True when `s` (the first bytes of a file) starts like a pstats marshal file: a dict, with
--- or without the FLAG_REF bit.
function M.is_marshal(s)
  local b = type(s) == "string" and sbyte(s, 1)
  return b == T_DICT or b == T_DICT + FLAG_REF
end

---------------------------------------------------------------------------
-- Numbers from bytes
---------------------------------------------------------------------------

-- The little-endian binary64 at s[i..i+7].
local decode_double
if sunpack then
  decode_double = function(s, i) return (sunpack("<d", s, i)) end
else
  decode_double = function(s, i)
    local b1, b2, b3, b4, b5, b6, b7, b8 = sbyte(s, i, i + 7)
    local sign = b8 >= 128 and -1 or 1
    local exp = (b8 % 128) * 16 + floor(b7 / 16)
    -- the 52 bits of the fraction, as an exact integer (< 2^53)
    local frac = ((((((b7 % 16) * 256 + b6) * 256 + b5) * 256 + b4) * 256 + b3) * 256 + b2)
      * 256 + b1
    if exp == 0x7FF then
      if frac == 0 then return sign * huge end
      return 0 / 0
    end
    if exp == 0 then
      return sign * frac * 2.0 ^ -1074                 -- zero and subnormals
    end
    return sign * (frac + 2 ^ 52) * 2.0 ^ (exp - 1075)
  end
end
M.decode_double = decode_double

-- Python's float(text) for the 'f' form: decimal numbers, inf, infinity and nan with a sign.
local function text_float(t)
  local sign, body = string.match(t, "^%s*([+-]?)(.-)%s*$")
  if not sign then return nil end
  local lb = slower(body)
  local v
  if lb == "inf" or lb == "infinity" then
    v = huge
  elseif lb == "nan" then
    v = 0 / 0
  elseif sfind(body, "^%d+%.?%d*[eE][+-]?%d+$") or sfind(body, "^%.%d+[eE][+-]?%d+$")
      or sfind(body, "^%d+%.?%d*$") or sfind(body, "^%.%d+$") then
    v = tonumber(body)
    if v and mtype and mtype(v) == "integer" then v = v + 0.0 end
  end
  if v == nil then return nil end
  if sign == "-" then v = -v end
  return v
end

---------------------------------------------------------------------------
-- The decoder
---------------------------------------------------------------------------

-- A reader over the string s: r.pos is the 1-based index of the next byte.
local function fail(r, at, fmt, ...)
  error(sformat("%s: byte %d: %s", r.name, at - 1, sformat(fmt, ...)), 0)
end

local function need(r, n, what, at)
  if n > r.len - r.pos + 1 then
    fail(r, at or r.pos, "%s needs %d bytes, but the file ends after %d", what, n,
      r.len - r.pos + 1)
  end
end

local function u8(r, what)
  need(r, 1, what)
  local b = sbyte(r.s, r.pos)
  r.pos = r.pos + 1
  return b
end

local function i32(r, what)
  need(r, 4, what)
  local b1, b2, b3, b4 = sbyte(r.s, r.pos, r.pos + 3)
  r.pos = r.pos + 4
  local v = ((b4 * 256 + b3) * 256 + b2) * 256 + b1
  if v >= 2147483648 then v = v - 4294967296 end
  if mtype then v = math.tointeger(v) end
  return v
end

local function bytes(r, n, what, at)
  need(r, n, what, at)
  local s = ssub(r.s, r.pos, r.pos + n - 1)
  r.pos = r.pos + n
  return s
end

-- A 'l' long: a signed int32 count of 15-bit digits, least significant first.
local function read_long(r, at)
  local n = i32(r, "the digit count of a long int")
  local neg = n < 0
  if neg then n = -n end
  if n == 0 then return 0 end
  need(r, 2 * n, sformat("a long int of %d digits", n), at)
  local s, p = r.s, r.pos
  local digits = {}
  for k = 1, n do
    local lo, hi = sbyte(s, p + 2 * (k - 1), p + 2 * k - 1)
    local d = hi * 256 + lo
    if d >= 0x8000 then fail(r, p + 2 * (k - 1), "digit out of range in a long int") end
    digits[k] = d
  end
  r.pos = p + 2 * n
  if digits[n] == 0 then fail(r, at, "unnormalized long int (its top digit is 0)") end
  -- Exact in 64-bit integers when it fits (Lua 5.4); a float otherwise.
  local v
  if mtype and n <= 5 and (n < 5 or digits[5] < 8) then
    v = 0
    for k = n, 1, -1 do v = v * 32768 + digits[k] end
  else
    v = 0.0
    for k = n, 1, -1 do v = v * 32768 + digits[k] end
  end
  if neg then v = -v end
  return v
end

-- Text from the file for a one-line message: other bytes than printable ASCII as \xNN, and
-- at most 40 characters.
local function printable(t)
  local cut = #t > 40
  t = string.gsub(ssub(t, 1, 40), "[^\32-\126]", function(c) return sformat("\\x%02x", sbyte(c)) end)
  return cut and t .. "..." or t
end

local decode_object

-- A dict: keys and values until the NULL marker '0' (a '0' in place of a value ends it too,
-- as in CPython).
local function read_dict(r, at, depth, slot)
  local d = { type = "dict", at = at - 1, n = 0, keys = {}, values = {}, key_at = {}, value_at = {} }
  while true do
    if r.pos > r.len then fail(r, at, "the dict that starts here has no end marker '0'") end
    local kat = r.pos
    local k = decode_object(r, depth + 1, true)
    if k == nil then break end
    local vat = r.pos
    local v = decode_object(r, depth + 1, true)
    if v == nil then break end
    local n = d.n + 1
    d.n, d.keys[n], d.values[n], d.key_at[n], d.value_at[n] = n, k, v, kat - 1, vat - 1
  end
  if slot then r.refs[slot] = d end
  return d
end

local function read_tuple(r, at, depth, n, slot)
  -- each item is at least one byte
  if n < 0 then fail(r, at, "negative tuple size %d", n) end
  need(r, n, sformat("a tuple of %d items", n), at)
  local t = { type = "tuple", at = at - 1, n = n }
  for k = 1, n do
    local item_at = r.pos
    local v = decode_object(r, depth + 1, true)
    if v == nil then fail(r, item_at, "NULL object ('0') inside a tuple") end
    t[k] = v
  end
  if slot then r.refs[slot] = t end
  return t
end

local IN_PROGRESS = {}

-- Decodes one object at r.pos.  Returns the value, or nil for the NULL marker '0' when
-- `null_ok` (the end of a dict).
decode_object = function(r, depth, null_ok)
  local at = r.pos
  if depth > M.MAX_DEPTH then
    fail(r, at, "objects nested deeper than %d levels", M.MAX_DEPTH)
  end
  if at > r.len then fail(r, at, "the file ends where an object should start") end
  local byte = sbyte(r.s, at)
  r.pos = at + 1
  local flag = byte >= FLAG_REF
  local code = flag and byte - FLAG_REF or byte
  local v
  if code == T_NULL then
    if null_ok then return nil end
    fail(r, at, "NULL object ('0') where a value should be")
  elseif code == T_NONE then
    return M.None
  elseif code == T_TRUE then
    return true
  elseif code == T_FALSE then
    return false
  elseif code == T_REF then
    local idx = i32(r, "a reference")
    local target = r.refs[idx + 1]
    if idx < 0 or target == nil then
      fail(r, at, "invalid reference %d (%d objects can be referenced here)", idx, #r.refs)
    end
    if target == IN_PROGRESS then
      fail(r, at, "reference %d points at an object that is still being read", idx)
    end
    return target
  elseif code == T_TUPLE or code == T_STUPLE or code == T_DICT then
    -- containers take their reference slot before their items, as in CPython
    local slot
    if flag then
      slot = #r.refs + 1
      r.refs[slot] = IN_PROGRESS
    end
    if code == T_DICT then return read_dict(r, at, depth, slot) end
    local n
    if code == T_TUPLE then n = i32(r, "a tuple size") else n = u8(r, "a tuple size") end
    return read_tuple(r, at, depth, n, slot)
  elseif code == T_INT then
    v = i32(r, "an int")
  elseif code == T_INT64 then
    need(r, 8, "a 64-bit int")
    if sunpack then
      v = sunpack("<i8", r.s, r.pos)
    else
      local lo = i32(r, "a 64-bit int")
      if lo < 0 then lo = lo + 4294967296 end
      v = i32(r, "a 64-bit int") * 4294967296 + lo
      r.pos = r.pos - 8
    end
    r.pos = r.pos + 8
  elseif code == T_STRINGREF then
    local idx = i32(r, "a string reference")
    v = r.interned[idx + 1]
    if idx < 0 or v == nil then
      fail(r, at, "invalid string reference %d (%d interned strings so far)", idx, #r.interned)
    end
  elseif code == T_LONG then
    v = read_long(r, at)
  elseif code == T_BFLOAT then
    need(r, 8, "a float")
    v = decode_double(r.s, r.pos)
    r.pos = r.pos + 8
  elseif code == T_FLOAT then
    local n = u8(r, "the length of a float")
    local text = bytes(r, n, "a float's text")
    v = text_float(text)
    if v == nil then fail(r, at, "a float written as text is not a number: '%s'", printable(text)) end
  elseif code == T_UNICODE or code == T_INTERNED or code == T_STRING or code == T_ASCII
      or code == T_ASCII_I then
    local n = i32(r, "a string length")
    if n < 0 then fail(r, at, "negative string length %d", n) end
    v = bytes(r, n, sformat("a string of %d bytes", n), at)
    if code == T_INTERNED then r.interned[#r.interned + 1] = v end
  elseif code == T_SASCII or code == T_SASCII_I then
    local n = u8(r, "a string length")
    v = bytes(r, n, sformat("a string of %d bytes", n), at)
  else
    local what = UNSUPPORTED[code]
    if what then
      fail(r, at, "%s (type code '%s') cannot be in a pstats file", what, string.char(code))
    end
    fail(r, at, "unknown type code 0x%02x", byte)
  end
  if flag then r.refs[#r.refs + 1] = v end
  return v
end

--- Decodes the marshal data in the string `s` (one object; bytes after it are ignored, as
--- marshal.load ignores them).  `name` (default "marshal data") starts every error message.
function M.decode(s, name)
  if type(s) ~= "string" then
    error(string.format("bad argument #1 to 'decode' (string expected, got %s)", type(s)), 2)
  end
  local r = { s = s, pos = 1, len = #s, refs = {}, interned = {}, name = name or "marshal data" }
  local v = decode_object(r, 1, false)
  return v, r.pos - 1
end

--- The largest file read (1 GiB, as for cprof dumps): a bigger one is refused before it is
--- read, and reading stops there whatever the file is (a device never ends).
M.MAX_FILE = 2 ^ 30

local function read_all(path)
  local f, err = io.open(path, "rb")
  if not f then error("cprof: " .. tostring(err), 0) end
  local function too_large()
    f:close()
    local max = M.MAX_FILE % 2 ^ 30 == 0 and sformat("%.0f GiB", M.MAX_FILE / 2 ^ 30)
      or sformat("%.0f bytes", M.MAX_FILE)
    error(sformat("cprof: %s: too large for a pstats file (more than %s)", path, max), 0)
  end
  local size = f:seek("end")
  if size and size > M.MAX_FILE then too_large() end
  f:seek("set")
  local parts, n = {}, 0
  repeat
    local s, rerr = f:read(2 ^ 20)
    if s then
      n = n + #s
      parts[#parts + 1] = s
      if n > M.MAX_FILE then too_large() end
    elseif rerr then
      f:close()
      error(sformat("cprof: %s: cannot read: %s", path, tostring(rerr)), 0)
    end
  until not s
  f:close()
  return table.concat(parts)
end

--- Decodes the file at `path`; returns the value and the file's size.  Errors:
--- "cprof: <path>: ...".
function M.read(path)
  if type(path) ~= "string" then
    error(string.format("bad argument #1 to 'read' (file name expected, got %s)", type(path)), 2)
  end
  local s = read_all(path)
  local ok, v = pcall(M.decode, s, path)
  if not ok then error("cprof: " .. v, 0) end
  return v, #s
end

---------------------------------------------------------------------------
-- pstats data
---------------------------------------------------------------------------

local function is_integer(x)
  if type(x) ~= "number" then return false end
  if mtype then return mtype(x) == "integer" end
  return x == floor(x) and x > -huge and x < huge
end

-- A call count: what a cprof dump can hold (a whole number in [0, 2^63), integer or float).
local function is_count(x)
  return type(x) == "number" and x >= 0 and x < 2 ^ 63 and x == floor(x)
end

local function short_repr(v)
  if type(v) == "table" and v.type == "tuple" then return sformat("a %d-tuple", v.n) end
  if type(v) == "table" and v.type == "dict" then return "a dict" end
  if v == M.None then return "None" end
  if type(v) == "string" then return "a string" end
  if type(v) == "boolean" then return v and "True" or "False" end
  return sformat("%s %s", is_integer(v) and "the int" or "the float", tostring(v))
end

-- A function key (file, line, name): the three values, or nil and what is wrong.
local function func_of(v)
  if type(v) ~= "table" or v.type ~= "tuple" or v.n ~= 3 then
    return nil, sformat("a function key must be a (file, line, name) tuple, not %s", short_repr(v))
  end
  local file, line, name = v[1], v[2], v[3]
  if type(file) ~= "string" then return nil, "the file in a function key is " .. short_repr(file) end
  if not is_integer(line) or line < -2 ^ 63 or line >= 2 ^ 63 then
    return nil, "the line in a function key is " .. short_repr(line)
  end
  if type(name) ~= "string" then return nil, "the name in a function key is " .. short_repr(name) end
  return file, line, name
end

local function show(file, line, name)
  if file == "~" and line == 0 and string.sub(name, 1, 1) == "<" and string.sub(name, -1) == ">" then
    return "{" .. string.sub(name, 2, -2) .. "}"
  end
  return sformat("%s:%s(%s)", file, tostring(line), name)
end

--- The pstats data in a decoded value: a list, in the file's order, of records
---   { file, line, name, cc, nc, tt, ct, callers = { {file, line, name, edge}, ... },
---     swapped = true|nil }
--- where `edge` is { nc, cc, tt, ct } (cProfile) or a call count (profile.py).  The
--- function whose key appears twice keeps its first place and its last value, as a Python
--- dict does; so does a caller within one function.  When a producer wrote the two call
--- counts the other way round (yappi writes (nc, cc, ...) where pstats has (cc, nc, ...)),
--- which shows as more primitive calls than calls, the two are swapped back, for functions
--- and for edges alike; `swapped` counts how many were.  `size` is the number of bytes the value
--- was decoded from: the work done is bounded by it, however the data refers to the same
--- objects over and over.  Errors: "<name>: byte N: ...".
function M.to_records(v, name, size)
  name = name or "marshal data"
  local function bad(at, fmt, ...)
    error(sformat("%s: byte %d: not a pstats profile: %s", name, at, sformat(fmt, ...)), 0)
  end
  if type(v) ~= "table" or v.type ~= "dict" then
    bad(0, "the file holds %s, not a dict of functions", short_repr(v))
  end
  -- Without shared objects a caller takes at least 10 bytes (two 5-byte references); with
  -- them, a few bytes could stand for the same big dict over and over.
  local budget = 2 * (size or 1e9) + 100000
  local records, index, swapped = {}, {}, 0
  for i = 1, v.n do
    local key, val = v.keys[i], v.values[i]
    local file, line, fname = func_of(key)
    if not file then bad(v.key_at[i], "%s", line) end
    local where = show(file, line, fname)
    if type(val) ~= "table" or val.type ~= "tuple" or val.n ~= 5 then
      bad(v.value_at[i],
        "invalid timing data for %s: %s, expected (cc, nc, tt, ct, callers)", where, short_repr(val))
    end
    for k = 1, 4 do
      if type(val[k]) ~= "number" then
        bad(val.at, "invalid timing data for %s: item %d is %s, expected a number", where, k,
          short_repr(val[k]))
      end
      if k <= 2 and not is_count(val[k]) then
        bad(val.at, "invalid timing data for %s: item %d is %s, expected a call count", where, k,
          short_repr(val[k]))
      end
    end
    local cc, nc, tt, ct, cd = val[1], val[2], val[3], val[4], val[5]
    if cc > nc then cc, nc = nc, cc; swapped = swapped + 1 end
    if type(cd) ~= "table" or cd.type ~= "dict" then
      bad(val.at, "invalid timing data for %s: the callers are %s, expected a dict", where,
        short_repr(cd))
    end
    budget = budget - cd.n - 1
    if budget < 0 then bad(v.at, "too much shared data (the same objects referred to over and over)") end
    local callers, cindex = {}, {}
    for j = 1, cd.n do
      local ck, e = cd.keys[j], cd.values[j]
      local cfile, cline, cname = func_of(ck)
      if not cfile then bad(cd.key_at[j], "callers of %s: %s", where, cline) end
      local edge
      if is_count(e) then
        edge = e
      elseif type(e) == "table" and e.type == "tuple" and e.n == 4 and is_count(e[1])
          and is_count(e[2]) and type(e[3]) == "number" and type(e[4]) == "number" then
        edge = { e[1], e[2], e[3], e[4] }
        if edge[2] > edge[1] then edge[1], edge[2] = edge[2], edge[1]; swapped = swapped + 1 end
      else
        bad(cd.value_at[j],
          "invalid caller data for %s called by %s: %s, expected (nc, cc, tt, ct) or a call count",
          where, show(cfile, cline, cname), short_repr(e))
      end
      local id = cfile .. "\0" .. tostring(cline) .. "\0" .. cname
      local c = cindex[id]
      if c then
        callers[c][4] = edge
      else
        callers[#callers + 1] = { cfile, cline, cname, edge }
        cindex[id] = #callers
      end
    end
    local rec = { file, line, fname, cc, nc, tt, ct, callers = callers }
    local id = file .. "\0" .. tostring(line) .. "\0" .. fname
    local at = index[id]
    if at then
      records[at] = rec
    else
      records[#records + 1] = rec
      index[id] = #records
    end
  end
  records.swapped = swapped
  return records
end

--- Reads a pstats file: marshal.to_records(marshal.read(path), path).  Errors: "cprof: <path>: ...".
function M.load_stats(path)
  if type(path) ~= "string" then
    error(string.format("bad argument #1 to 'load_stats' (file name expected, got %s)", type(path)), 2)
  end
  local v, size = M.read(path)
  local ok, recs = pcall(M.to_records, v, path, size)
  if not ok then error("cprof: " .. recs, 0) end
  return recs
end

return M
