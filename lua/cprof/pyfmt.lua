--- cprof.pyfmt: numbers and strings formatted as Python formats them, so that cprof's reports
--- match pstats' byte for byte: repr() of floats, ints and strs, pstats' "%8.3f" column,
--- str.ljust/rjust counting UTF-8 characters, and time.ctime().
--
-- Works on Lua 5.4 and LuaJIT/Lua 5.1 (where every number is a double: a whole number counts
-- as a Python int).

local _ENV = require("cprof.env")()

local M = {}

local type, tostring, tonumber = type, tostring, tonumber
local sformat, sfind, ssub, sbyte, srep, sgsub, smatch =
  string.format, string.find, string.sub, string.byte, string.rep, string.gsub, string.match
local floor, huge = math.floor, math.huge
local mtype = math.type       -- nil on LuaJIT / Lua 5.1

local function is_nan(x) return x ~= x end

--- True if a number counts as a Python int (Lua 5.4: integer subtype;
--- LuaJIT/5.1: any finite integral value).
local function is_int(x)
  if type(x) ~= "number" then return false end
  if mtype then return mtype(x) == "integer" end
  return x == floor(x) and x > -huge and x < huge
end
M.is_int = is_int

--- Python's repr() of a float: shortest round-trip digits, scientific
--- notation when the exponent is < -4 or >= 16, always a '.' or 'e'.
local function py_float_repr(x)
  if is_nan(x) then return "nan" end
  if x == huge then return "inf" end
  if x == -huge then return "-inf" end
  if x == 0 then
    return (1 / x < 0) and "-0.0" or "0.0"
  end
  local s
  for p = 0, 16 do
    s = sformat("%." .. p .. "e", x)
    if tonumber(s) == x then break end
  end
  local sign, d1, rest, exp = smatch(s, "^(%-?)(%d)%.?(%d*)e([-+]%d+)$")
  local digits = sgsub(d1 .. rest, "0+$", "")
  if digits == "" then digits = "0" end
  local e = tonumber(exp)
  if e < -4 or e >= 16 then
    local mant = ssub(digits, 1, 1)
    if #digits > 1 then mant = mant .. "." .. ssub(digits, 2) end
    local esign = e < 0 and "-" or "+"
    local eabs = e < 0 and -e or e
    return sign .. mant .. "e" .. esign .. sformat("%02d", eabs)
  elseif e >= 0 then
    if #digits <= e + 1 then
      return sign .. digits .. srep("0", e + 1 - #digits) .. ".0"
    end
    return sign .. ssub(digits, 1, e + 1) .. "." .. ssub(digits, e + 2)
  else
    return sign .. "0." .. srep("0", -e - 1) .. digits
  end
end

--- str() of a count: integers without a fractional part, like Python's str(int).
local function int_str(n)
  if type(n) ~= "number" then return tostring(n) end
  if mtype and mtype(n) == "integer" then return tostring(n) end
  if n == floor(n) and n > -9.2e18 and n < 9.2e18 then return sformat("%d", n) end
  return py_float_repr(n)
end
M.int_str = int_str

local repr_escapes = { ["\\"] = "\\\\", ["\t"] = "\\t", ["\n"] = "\\n", ["\r"] = "\\r" }

--- Python's repr() of a str (bytes >= 0x80 are passed through unchanged).
local function py_str_repr(s)
  local q = "'"
  if sfind(s, "'", 1, true) and not sfind(s, '"', 1, true) then q = '"' end
  local out = sgsub(s, "[%z\1-\31\\'\"\127]", function(c)
    if c == q then return "\\" .. c end
    if c == "'" or c == '"' then return c end
    return repr_escapes[c] or sformat("\\x%02x", sbyte(c))
  end)
  return q .. out .. q
end
M.py_str_repr = py_str_repr

--- Python's repr() for the values that can appear as restrictions.
function M.py_repr(v)
  local t = type(v)
  if t == "string" then return py_str_repr(v) end
  if t == "number" then
    if is_int(v) then return int_str(v) end
    return py_float_repr(v)
  end
  if t == "boolean" then return v and "True" or "False" end
  if t == "nil" then return "None" end
  return tostring(v)
end

--- pstats' f8: "%8.3f" (NaN prints as "nan" whatever its sign bit, as in Python).
function M.f8(x)
  if is_nan(x) then return "     nan" end
  return sformat("%8.3f", x)
end

--- Python's "%g"-style formats of a float: nan, inf and -inf spelled as Python spells them.
function M.g(fmt, x)
  if is_nan(x) then return "nan" end
  if x == huge then return "inf" end
  if x == -huge then return "-inf" end
  return sformat(fmt, x)
end

--- Length in characters (UTF-8 code points), like Python's len() of a str.
local function display_len(s)
  local _, n = sgsub(s, "[^\128-\191]", "")
  return n
end
M.display_len = display_len

--- Python's str.ljust / str.rjust, counting UTF-8 characters.
function M.ljust(s, width)
  local n = display_len(s)
  if n >= width then return s end
  return s .. srep(" ", width - n)
end
function M.rjust(s, width)
  local n = display_len(s)
  if n >= width then return s end
  return srep(" ", width - n) .. s
end

local DAY_NAMES = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" }
local MONTH_NAMES = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" }

--- Python's time.ctime(t): "Sat Nov 21 05:21:10 2026" in local time (English names, day
--- padded with a space).
function M.ctime(t)
  local d = os.date("*t", floor(t))
  return sformat("%s %s %2d %02d:%02d:%02d %d", DAY_NAMES[d.wday], MONTH_NAMES[d.month],
    d.day, d.hour, d.min, d.sec, d.year)
end

return M
