-- A Python marshal writer for the specs: the bytes pstats files hold, written by hand (the way
-- samples/handmade_marshal.py writes them), to feed cprof.marshal known and hostile input.
-- Works on Lua 5.4 and LuaJIT.
local W = {}

local schar, sbyte, floor = string.char, string.byte, math.floor

local function le32(n)
  if n < 0 then n = n + 4294967296 end
  local b = {}
  for i = 1, 4 do b[i] = n % 256; n = floor(n / 256) end
  return schar(b[1], b[2], b[3], b[4])
end
W.le32 = le32

-- The little-endian binary64 of x.
local function double(x)
  if string.pack then return string.pack("<d", x) end
  local sign = 0
  if x < 0 or (x == 0 and 1 / x < 0) then sign = 1; x = -x end
  local exp, frac
  if x ~= x then
    exp, frac = 2047, 2 ^ 51
  elseif x == math.huge then
    exp, frac = 2047, 0
  elseif x == 0 then
    exp, frac = 0, 0
  else
    local m, e = math.frexp(x)          -- x = m * 2^e, 0.5 <= m < 1
    if e - 1 + 1023 <= 0 then            -- subnormal
      exp, frac = 0, x * 2 ^ 1000 * 2 ^ 74
    else
      exp, frac = e - 1 + 1023, (m * 2 - 1) * 2 ^ 52
    end
  end
  local b = {}
  for i = 1, 6 do b[i] = frac % 256; frac = floor(frac / 256) end
  b[7] = (frac % 16) + (exp % 16) * 16
  b[8] = floor(exp / 16) + sign * 128
  return schar(b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8])
end
W.double = double

function W.i(n) return "i" .. le32(n) end
function W.g(x) return "g" .. double(x) end
function W.f(text) return "f" .. schar(#text) .. text end
function W.u(s) return "u" .. le32(#s) .. s end
function W.z(s) return "z" .. schar(#s) .. s end
function W.tuple(items) return "(" .. le32(#items) .. table.concat(items) end
function W.small_tuple(items) return ")" .. schar(#items) .. table.concat(items) end
-- pairs: a list of { key bytes, value bytes }
function W.dict(pairs)
  local out = { "{" }
  for _, p in ipairs(pairs) do out[#out + 1] = p[1]; out[#out + 1] = p[2] end
  out[#out + 1] = "0"
  return table.concat(out)
end
-- 'l': a long int from its 15-bit digits (n >= 0 here), sign given apart.
function W.long(n, negative)
  local digits = {}
  while n > 0 do digits[#digits + 1] = n % 32768; n = floor(n / 32768) end
  local out = { "l", le32(negative and -#digits or #digits) }
  for _, d in ipairs(digits) do out[#out + 1] = schar(d % 256, floor(d / 256)) end
  return table.concat(out)
end
function W.ref(idx) return "r" .. le32(idx) end
-- The same object with the FLAG_REF bit set on its type byte.
function W.flag(bytes) return schar(sbyte(bytes, 1) + 128) .. bytes:sub(2) end

-- A number as marshal writes it: ints as 'i' (or 'l'), floats as 'g'.
function W.num(x)
  local int
  if math.type then int = math.type(x) == "integer" else int = x == floor(x) and x < 2 ^ 31 end
  if int then
    if x >= -2 ^ 31 and x < 2 ^ 31 then return W.i(x) end
    return W.long(x < 0 and -x or x, x < 0)
  end
  return W.g(x)
end

function W.func(f) return W.tuple({ W.u(f[1]), W.num(f[2]), W.u(f[3]) }) end

--- A pstats file: records is a list of { func, cc, nc, tt, ct, callers } with func =
--- { file, line, name } and callers a list of { func, edge }, edge = { nc, cc, tt, ct } or a
--- call count.
function W.pstats(records)
  local top = {}
  for _, r in ipairs(records) do
    local callers = {}
    for _, c in ipairs(r[6] or {}) do
      local e = c[2]
      local ev
      if type(e) == "table" then
        ev = W.tuple({ W.num(e[1]), W.num(e[2]), W.num(e[3]), W.num(e[4]) })
      else
        ev = W.num(e)
      end
      callers[#callers + 1] = { W.func(c[1]), ev }
    end
    top[#top + 1] = { W.func(r[1]),
      W.tuple({ W.num(r[2]), W.num(r[3]), W.num(r[4]), W.num(r[5]), W.dict(callers) }) }
  end
  return W.dict(top)
end

function W.write(path, bytes)
  local f = assert(io.open(path, "wb"))
  f:write(bytes)
  f:close()
  return path
end

return W
