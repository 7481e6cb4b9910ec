--- cprof.export.binary: the bytes binary exports are made of (pstats marshal, pprof protobuf,
--- gzip), on Lua 5.4 and LuaJIT alike.
--
--   binary.le32(n)            a signed 32-bit integer, little-endian
--   binary.double(x)          an IEEE-754 binary64, little-endian
--   binary.varint(n)          a protobuf varint of an integer 0 <= n < 2^63
--   binary.iigg(a, b, c, d)   marshal's 'i' a, 'i' b, 'g' c, 'g' d (a and b int32)
--   binary.crc32(s [, crc])   the CRC-32 (gzip's) of s, continuing from crc
--   binary.gzip(write)        a writer that gzips what is passed to it (see below)
--
-- Lua 5.4 has integer operators and string.pack; LuaJIT has neither but has the `bit` and
-- `ffi` libraries.  The operators would not even parse under LuaJIT, so the Lua 5.4 code is
-- compiled from a string at load time.

local _ENV = require("cprof.env")()

local M = {}

local schar, sbyte, floor, concat = string.char, string.byte, math.floor, table.concat
local has_bit, bit = pcall(require, "bit")

local native54 = not has_bit and load([[
  local spack, sunpack, sbyte = string.pack, string.unpack, string.byte
  local N = {}
  function N.le32(n) return spack("<i4", n) end
  function N.double(x) return spack("<d", x) end
  local schar = string.char
  local function too_big(n)
    error("cprof.export: " .. tostring(n) .. " is not an integer in [0, 2^63)", 0)
  end
  -- Unrolled: this is called for every value of every sample of a pprof file.
  function N.varint(n)
    n = n | 0 -- an integer: the conversion raises an error for any other number
    if n < 0x80 then
      if n < 0 then too_big(n) end
      return schar(n)
    end
    if n < 0x4000 then return schar(n & 0x7f | 0x80, n >> 7) end
    if n < 0x200000 then return schar(n & 0x7f | 0x80, (n >> 7) & 0x7f | 0x80, n >> 14) end
    if n < 0x10000000 then
      return schar(n & 0x7f | 0x80, (n >> 7) & 0x7f | 0x80, (n >> 14) & 0x7f | 0x80, n >> 21)
    end
    local out, k = {}, 0
    repeat
      local b = n & 0x7f
      n = n >> 7
      k = k + 1
      out[k] = n ~= 0 and b | 0x80 or b
    until n == 0
    return schar(table.unpack(out, 1, k))
  end
  -- pstats' (int, int, float, float) tuples in one call: 'i' int32, 'i', 'g' binary64, 'g'.
  function N.iigg(a, b, c, d) return spack("<Bi4Bi4BdBd", 0x69, a, 0x69, b, 0x67, c, 0x67, d) end
  -- CRC-32 four bytes at a time (slicing by 4, two 16-bit tables), from the 32-bit halves of
  -- the 64-bit words one string.unpack gives.  The tables are built on first use (they hold 131072 entries).
  local A, B
  local function tables(T)
    local T1, T2, T3 = {}, {}, {}
    for i = 0, 255 do
      T1[i] = (T[i] >> 8) ~ T[T[i] & 0xff]
      T2[i] = (T1[i] >> 8) ~ T[T1[i] & 0xff]
      T3[i] = (T2[i] >> 8) ~ T[T2[i] & 0xff]
    end
    A, B = {}, {}
    for x = 0, 0xffff do
      A[x] = T3[x & 0xff] ~ T2[x >> 8]
      B[x] = T1[x & 0xff] ~ T[x >> 8]
    end
  end
  function N.crc_bytes(T, crc, s)
    if not A then tables(T) end
    crc = ~crc & 0xffffffff
    local n, i = #s, 1
    while i + 31 <= n do
      -- four 64-bit words: string.unpack's cost is per item, not per byte
      local q1, q2, q3, q4 = sunpack("<i8i8i8i8", s, i)
      local w = crc ~ (q1 & 0xffffffff)
      crc = A[w & 0xffff] ~ B[w >> 16]
      w = crc ~ (q1 >> 32)
      crc = A[w & 0xffff] ~ B[w >> 16]
      w = crc ~ (q2 & 0xffffffff)
      crc = A[w & 0xffff] ~ B[w >> 16]
      w = crc ~ (q2 >> 32)
      crc = A[w & 0xffff] ~ B[w >> 16]
      w = crc ~ (q3 & 0xffffffff)
      crc = A[w & 0xffff] ~ B[w >> 16]
      w = crc ~ (q3 >> 32)
      crc = A[w & 0xffff] ~ B[w >> 16]
      w = crc ~ (q4 & 0xffffffff)
      crc = A[w & 0xffff] ~ B[w >> 16]
      w = crc ~ (q4 >> 32)
      crc = A[w & 0xffff] ~ B[w >> 16]
      i = i + 32
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

local le32, double, varint, iigg, crc_bytes, crc_table

if native54 then
  le32, double, varint, iigg = native54.le32, native54.double, native54.varint, native54.iigg
  crc_bytes, crc_table = native54.crc_bytes, native54.crc_table
else
  local ffi = require("ffi")
  local band, bxor, rshift = bit.band, bit.bxor, bit.rshift
  local dbuf = ffi.new("double[1]")
  local ibuf = ffi.new("int32_t[1]")
  local little = ffi.abi("le")
  local function bytes(ptr, size)
    local s = ffi.string(ptr, size)
    return little and s or string.reverse(s)
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
  -- pstats' (int, int, float, float) tuples: 'i' int32, 'i', 'g' binary64, 'g'.
  function iigg(a, b, c, d)
    return "i" .. le32(a) .. "i" .. le32(b) .. "g" .. double(c) .. "g" .. double(d)
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

M.le32, M.double, M.varint, M.iigg = le32, double, varint, iigg

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
        block(string.sub(all, i, i + BLOCK - 1), false)
        i = i + BLOCK
      end
      local rest = string.sub(all, i)
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
