--- cprof.sanitize: function names made safe for the files and terminals they go to.
--
--   sanitize.utf8(s)      s as valid UTF-8: each byte that starts no valid sequence becomes
--                         U+FFFD (the rule of every export and of cprof-stats --json)
--   sanitize.display(s)   utf8(s) with every character that would act instead of show
--                         written as a Lua escape: C0 and C1 controls and DEL (\n, \r, \t,
--                         \x1b, \u{85}, ...) and the bidirectional formatting characters
--                         (\u{202e}, ...); for terminals and labels
--
-- A chunk name is any byte string (load(code, "\237lo") is enough), so a name can hold what a
-- strict reader refuses (bytes that are not UTF-8) or what a terminal obeys (an escape
-- sequence that clears it; U+202E reverses the text after it). The data stays as recorded:
-- only what is written out passes through here.

local _ENV = require("cprof.env")()

local M = {}

local sbyte, ssub, sfind, sformat, sgsub, concat =
  string.byte, string.sub, string.find, string.format, string.gsub, table.concat

local FFFD = "\239\191\189"

-- The length of the valid UTF-8 sequence at s[i] (nil when there is none): no overlong forms,
-- no surrogates, nothing above U+10FFFF, as Python's and JavaScript's strict decoders demand.
local function sequence(s, i)
  local c = sbyte(s, i)
  if c < 0x80 then return 1 end
  local n, lo, hi
  if c >= 0xC2 and c <= 0xDF then n, lo, hi = 2, 0x80, 0xBF
  elseif c == 0xE0 then n, lo, hi = 3, 0xA0, 0xBF
  elseif c == 0xED then n, lo, hi = 3, 0x80, 0x9F
  elseif c >= 0xE1 and c <= 0xEF then n, lo, hi = 3, 0x80, 0xBF
  elseif c == 0xF0 then n, lo, hi = 4, 0x90, 0xBF
  elseif c >= 0xF1 and c <= 0xF3 then n, lo, hi = 4, 0x80, 0xBF
  elseif c == 0xF4 then n, lo, hi = 4, 0x80, 0x8F
  else return nil end
  local b = sbyte(s, i + 1)
  if not b or b < lo or b > hi then return nil end
  for j = i + 2, i + n - 1 do
    b = sbyte(s, j)
    if not b or b < 0x80 or b > 0xBF then return nil end
  end
  return n
end

function M.utf8(s)
  if not sfind(s, "[\128-\255]") then return s end
  local out, i, n = {}, 1, #s
  while i <= n do
    local len = sequence(s, i)
    if len then
      out[#out + 1] = ssub(s, i, i + len - 1)
      i = i + len
    else
      out[#out + 1] = FFFD
      i = i + 1
    end
  end
  return concat(out)
end

local C0 = { ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }
local function c0(c)
  return C0[c] or sformat("\\x%02x", sbyte(c))
end

-- UTF-8 of the characters that display() escapes above U+007F: C1 controls U+0080..U+009F,
-- U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069.
local WIDE = "\194[\128-\159]"
local BIDI = { ["\216\156"] = 0x61C, ["\226\128\142"] = 0x200E, ["\226\128\143"] = 0x200F,
  ["\226\128\170"] = 0x202A, ["\226\128\171"] = 0x202B, ["\226\128\172"] = 0x202C,
  ["\226\128\173"] = 0x202D, ["\226\128\174"] = 0x202E, ["\226\129\166"] = 0x2066,
  ["\226\129\167"] = 0x2067, ["\226\129\168"] = 0x2068, ["\226\129\169"] = 0x2069 }

local function c1(c)
  return sformat("\\u{%x}", sbyte(c, 2))
end
local function bidi(c)
  local cp = BIDI[c]
  return cp and sformat("\\u{%x}", cp) or c
end

function M.display(s)
  s = M.utf8(s)
  if sfind(s, "[%z\1-\31\127]") then s = sgsub(s, "[%z\1-\31\127]", c0) end
  if sfind(s, "[\194\216\226]") then
    s = sgsub(s, WIDE, c1)
    s = sgsub(s, "\216\156", bidi)
    s = sgsub(s, "\226[\128\129][\128-\191]", bidi)
  end
  return s
end

return M
