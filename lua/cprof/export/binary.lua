--- cprof.export.binary: the bytes binary exports are made of (pstats marshal, pprof protobuf,
--- gzip), on Lua 5.4 and LuaJIT alike.
--
--   binary.le32(n)            a signed 32-bit integer, little-endian
--   binary.double(x)          an IEEE-754 binary64, little-endian
--   binary.varint(n)          a protobuf varint of an integer 0 <= n < 2^63
--   binary.crc32(s [, crc])   the CRC-32 (gzip's) of s, continuing from crc
--   binary.gzip(write)        a writer that gzips what is passed to it (see below)
--
-- Lua 5.4 has integer operators and string.pack; LuaJIT has neither but has the `bit` and
-- `ffi` libraries.  The operators would not even parse under LuaJIT, so the Lua 5.4 code is
-- compiled from a string at load time.

local M = {}

local schar, sbyte, floor, concat = string.char, string.byte, math.floor, table.concat
local has_bit, bit = pcall(require, "bit")

local native54 = not has_bit and load([[
  local spack, sbyte, concat = string.pack, string.byte, table.concat
  local N = {}
  function N.le32(n) return spack("<i4", n) end
  function N.double(x) return spack("<d", x) end
  local one = {}
  for i = 0, 127 do one[i] = string.char(i) end
  function N.varint(n)
    n = math.tointeger(n) or error("cprof.export: " .. tostring(n) .. " is not an integer", 0)
    if n < 128 and n >= 0 then return one[n] end
    local out, k = {}, 0
    repeat
      local b = n & 0x7f
      n = n >> 7
      k = k + 1
      out[k] = n ~= 0 and b | 0x80 or b
    until n == 0
    return string.char(table.unpack(out, 1, k))
  end
  function N.crc_bytes(T, crc, s)
    crc = ~crc & 0xffffffff
    local n = #s
    local i = 1
    -- Eight bytes per call of string.byte: the call, not the arithmetic, is what costs.
    while i + 7 <= n do
      local a, b, c, d, e, f, g, h = sbyte(s, i, i + 7)
      crc = T[(crc ~ a) & 0xff] ~ (crc >> 8)
      crc = T[(crc ~ b) & 0xff] ~ (crc >> 8)
      crc = T[(crc ~ c) & 0xff] ~ (crc >> 8)
      crc = T[(crc ~ d) & 0xff] ~ (crc >> 8)
      crc = T[(crc ~ e) & 0xff] ~ (crc >> 8)
      crc = T[(crc ~ f) & 0xff] ~ (crc >> 8)
      crc = T[(crc ~ g) & 0xff] ~ (crc >> 8)
      crc = T[(crc ~ h) & 0xff] ~ (crc >> 8)
      i = i + 8
    end
    for j = i, n do crc = T[(crc ~ sbyte(s, j)) & 0xff] ~ (crc >> 8) end
    return ~crc & 0xffffffff
  end
  function N.crc_table()
    local T = {}
    for i = 0, 255 do
      local c = i
      for _ = 1, 8 do
        if c & 1 == 1 then c = 0xEDB88320 ~ (c >> 1) else c = c >> 1 end
      end
      T[i] = c
    end
    return T
  end
  return N
]], "=cprof.export.binary")()

local le32, double, varint, crc_bytes, crc_table

if native54 then
  le32, double, varint = native54.le32, native54.double, native54.varint
  crc_bytes, crc_table = native54.crc_bytes, native54.crc_table
else
  local ffi = require("ffi")
  local band, bor, bxor, rshift = bit.band, bit.bor, bit.bxor, bit.rshift
  local dbuf = ffi.new("double[1]")
  local ibuf = ffi.new("int32_t[1]")
  local little = ffi.abi("le")
  local function bytes(ptr, size)
    local s = ffi.string(ptr, size)
    return little and s or s:reverse()
  end
  function le32(n)
    ibuf[0] = n
    return bytes(ibuf, 4)
  end
  function double(x)
    dbuf[0] = x
    return bytes(dbuf, 8)
  end
  -- Doubles: every integer up to 2^53 is exact, and dividing by 128 stays exact above it.
  function varint(n)
    if n ~= floor(n) or n < 0 then error("cprof.export: " .. tostring(n) .. " is not a count", 0) end
    if n < 128 then return schar(n) end
    local out, k = {}, 0
    repeat
      local b = n % 128
      n = floor(n / 128)
      k = k + 1
      out[k] = n ~= 0 and b + 128 or b
    until n == 0
    return schar(unpack(out, 1, k))
  end
  function crc_table()
    local T = {}
    for i = 0, 255 do
      local c = i
      for _ = 1, 8 do
        if band(c, 1) == 1 then c = bxor(0xEDB88320, rshift(c, 1)) else c = rshift(c, 1) end
      end
      T[i] = c
    end
    return T
  end
  function crc_bytes(T, crc, s)
    crc = bxor(crc, 0xffffffff)
    for i = 1, #s do crc = bxor(T[band(bxor(crc, sbyte(s, i)), 0xff)], rshift(crc, 8)) end
    crc = bxor(crc, 0xffffffff)
    return crc < 0 and crc + 4294967296 or crc
  end
end

M.le32, M.double, M.varint = le32, double, varint

local CRC_TABLE = crc_table()

function M.crc32(s, crc)
  return crc_bytes(CRC_TABLE, crc or 0, s)
end

-- An unsigned 32-bit number as 4 little-endian bytes (le32 takes signed ones).
local function u32(n)
  return schar(n % 256, floor(n / 256) % 256, floor(n / 65536) % 256, floor(n / 16777216) % 256)
end

-- Deflate's stored blocks hold at most 65535 bytes.
local BLOCK = 65535

--- binary.gzip(write): a gzip stream over `write` (a function taking a string).  Returns
--- { write = function(s), close = function() }; close() writes the last block and the
--- trailer.  The data goes into deflate *stored* blocks (RFC 1951 §3.2.4): valid gzip that
--- every reader inflates, at the size of the input plus 5 bytes per 64 KB.  Real compression
--- would cost far more time in Lua than the files are worth.
function M.gzip(write)
  -- magic, deflate, no flags, no mtime, no extra flags, OS unknown
  write("\31\139\8\0\0\0\0\0\0\255")
  local crc, size = 0, 0
  local pending, npending, plen = {}, 0, 0
  local function block(s, final)
    local n = #s
    write(schar(final and 1 or 0, n % 256, floor(n / 256), (65535 - n) % 256,
      floor((65535 - n) / 256)))
    write(s)
  end
  local gz = {}
  function gz.write(s)
    crc = crc_bytes(CRC_TABLE, crc, s)
    size = size + #s
    npending = npending + 1
    pending[npending] = s
    plen = plen + #s
    if plen > BLOCK then
      local all = concat(pending, "", 1, npending)
      local i = 1
      while #all - i + 1 > BLOCK do
        block(all:sub(i, i + BLOCK - 1), false)
        i = i + BLOCK
      end
      local rest = all:sub(i)
      pending, npending, plen = { rest }, 1, #rest
    end
  end
  function gz.close()
    block(concat(pending, "", 1, npending), true)
    write(u32(crc))
    write(u32(size % 4294967296))
  end
  return gz
end

return M
