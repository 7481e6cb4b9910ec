-- examples/json_demo.lua -- a small, realistic program to look at with cprof.
--
--   lua5.4 examples/json_demo.lua [RECORDS]
--   lua5.4 -l cprof.auto examples/json_demo.lua          (what `make demo` runs)
--   luajit examples/json_demo.lua
--
-- It generates a few thousand nested records from a fixed-seed LCG (the data is
-- the same on every run and on every VM), encodes them to pretty-printed JSON
-- with sorted keys, decodes the text back, checks the round trip, and prints
-- one summary line.  Plain Lua 5.1 syntax so that it also runs on LuaJIT.
--
-- Things worth seeing in a profile: an encoder and a decoder object with
-- methods (metatables), recursion, string.gsub with a callback, string.format,
-- table.sort with a comparator, table.concat, and a coroutine.wrap generator.

local byte, char, find, format, gsub, rep, sub =
  string.byte, string.char, string.find, string.format, string.gsub,
  string.rep, string.sub
local concat, sort = table.concat, table.sort
local floor, huge = math.floor, math.huge

local json = {}

-- JSON null: a unique sentinel, since nil cannot be stored in a table.
json.null = setmetatable({}, { __tostring = function() return "null" end })

---------------------------------------------------------------------------
-- Encoder
---------------------------------------------------------------------------

local escapes = {
  ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f",
  ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t",
}

local function escape_char(c)
  return escapes[c] or format("\\u%04x", byte(c))
end

local function escape_string(s)
  return '"' .. gsub(s, '[%c"\\]', escape_char) .. '"'
end

-- Integral values print without a fraction ("3", not "3.0") on both Lua 5.4
-- and LuaJIT; everything else with enough digits to round-trip the values
-- this program produces.
local function format_number(x)
  if x ~= x or x == huge or x == -huge then
    error("cannot encode non-finite number " .. tostring(x), 0)
  end
  if x == floor(x) and x > -2^53 and x < 2^53 then
    return format("%d", x)
  end
  return format("%.14g", x)
end

-- A table is an array when its keys are exactly 1..n.
local function is_array(t)
  local n = 0
  for k in pairs(t) do
    if type(k) ~= "number" or k <= 0 or k ~= floor(k) then return false end
    n = n + 1
  end
  for i = 1, n do
    if t[i] == nil then return false end
  end
  return true, n
end

local function sorted_keys(t)
  local keys, n = {}, 0
  for k in pairs(t) do
    if type(k) ~= "string" then
      error("object keys must be strings, got " .. type(k), 0)
    end
    n = n + 1
    keys[n] = k
  end
  sort(keys)
  return keys, n
end

local Encoder = {}
Encoder.__index = Encoder

function Encoder.new(indent)
  return setmetatable({
    indent = indent or "",   -- "" means compact output
    buf = {}, n = 0,         -- output pieces
    depth = 0,
    seen = {},               -- tables on the current path (cycle check)
  }, Encoder)
end

function Encoder:emit(s)
  local n = self.n + 1
  self.n = n
  self.buf[n] = s
end

function Encoder:newline()
  if self.indent ~= "" then
    self:emit("\n" .. rep(self.indent, self.depth))
  end
end

function Encoder:open(t, bracket)
  if self.seen[t] then error("cannot encode a cyclic table", 0) end
  self.seen[t] = true
  self:emit(bracket)
  self.depth = self.depth + 1
end

function Encoder:close(t, bracket, empty)
  self.depth = self.depth - 1
  if not empty then self:newline() end
  self:emit(bracket)
  self.seen[t] = nil
end

function Encoder:array(t, n)
  self:open(t, "[")
  for i = 1, n do
    if i > 1 then self:emit(",") end
    self:newline()
    self:value(t[i])
  end
  self:close(t, "]", n == 0)
end

function Encoder:object(t)
  local keys, n = sorted_keys(t)
  local sep = self.indent ~= "" and ": " or ":"
  self:open(t, "{")
  for i = 1, n do
    local k = keys[i]
    if i > 1 then self:emit(",") end
    self:newline()
    self:emit(escape_string(k))
    self:emit(sep)
    self:value(t[k])
  end
  self:close(t, "}", n == 0)
end

function Encoder:value(v)
  local tv = type(v)
  if tv == "string" then
    self:emit(escape_string(v))
  elseif tv == "number" then
    self:emit(format_number(v))
  elseif tv == "boolean" then
    self:emit(v and "true" or "false")
  elseif v == nil or v == json.null then
    self:emit("null")
  elseif tv == "table" then
    local arr, n = is_array(v)
    if arr then self:array(v, n) else self:object(v) end
  else
    error("cannot encode a " .. tv, 0)
  end
end

function Encoder:result()
  return concat(self.buf, "", 1, self.n)
end

function json.encode(v, indent)
  local enc = Encoder.new(indent)
  enc:value(v)
  return enc:result()
end

---------------------------------------------------------------------------
-- Decoder
---------------------------------------------------------------------------

local unescapes = {
  ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f",
  n = "\n", r = "\r", t = "\t",
}

local function utf8_char(cp)
  if cp < 0x80 then
    return char(cp)
  elseif cp < 0x800 then
    return char(0xC0 + floor(cp / 0x40), 0x80 + cp % 0x40)
  elseif cp < 0x10000 then
    return char(0xE0 + floor(cp / 0x1000), 0x80 + floor(cp / 0x40) % 0x40,
                0x80 + cp % 0x40)
  else
    return char(0xF0 + floor(cp / 0x40000), 0x80 + floor(cp / 0x1000) % 0x40,
                0x80 + floor(cp / 0x40) % 0x40, 0x80 + cp % 0x40)
  end
end

-- Decode the escapes in the body of a string literal, left to right.
local function unescape_string(s)
  local out, n, i = {}, 0, 1
  while true do
    local j = find(s, "\\", i, true)
    if not j then break end
    n = n + 1
    out[n] = sub(s, i, j - 1)
    local c = sub(s, j + 1, j + 1)
    if c == "u" then
      local hex = sub(s, j + 2, j + 5)
      if not find(hex, "^%x%x%x%x$") then error("bad \\u escape", 0) end
      n = n + 1
      out[n] = utf8_char(tonumber(hex, 16))
      i = j + 6
    else
      n = n + 1
      out[n] = unescapes[c] or error("bad escape \\" .. c, 0)
      i = j + 2
    end
  end
  n = n + 1
  out[n] = sub(s, i)
  return concat(out, "", 1, n)
end

local Decoder = {}
Decoder.__index = Decoder

function Decoder.new(text)
  return setmetatable({ text = text, pos = 1 }, Decoder)
end

function Decoder:fail(msg)
  error(format("json: %s at byte %d", msg, self.pos), 0)
end

function Decoder:skip_ws()
  self.pos = find(self.text, "[^ \t\r\n]", self.pos) or #self.text + 1
  return byte(self.text, self.pos)
end

function Decoder:expect(c)
  if self:skip_ws() ~= byte(c) then self:fail("expected '" .. c .. "'") end
  self.pos = self.pos + 1
end

function Decoder:string()
  local text, i = self.text, self.pos + 1
  local j = find(text, '["\\]', i)
  if not j then self:fail("unterminated string") end
  if byte(text, j) == 34 then           -- fast path: no escapes
    self.pos = j + 1
    return sub(text, i, j - 1)
  end
  -- slow path: find the closing quote that is not escaped
  local k = i
  repeat
    j = find(text, '["\\]', k)
    if not j then self:fail("unterminated string") end
    k = j + (byte(text, j) == 92 and 2 or 0)
  until byte(text, j) == 34
  self.pos = j + 1
  return unescape_string(sub(text, i, j - 1))
end

function Decoder:number()
  local s, e = find(self.text, "^-?%d+%.?%d*[eE]?[-+]?%d*", self.pos)
  if not s then self:fail("bad number") end
  self.pos = e + 1
  return tonumber(sub(self.text, s, e)) or self:fail("bad number")
end

function Decoder:literal(word, value)
  if sub(self.text, self.pos, self.pos + #word - 1) ~= word then
    self:fail("bad literal")
  end
  self.pos = self.pos + #word
  return value
end

function Decoder:array()
  local t, n = {}, 0
  self.pos = self.pos + 1
  if self:skip_ws() == 93 then self.pos = self.pos + 1 return t end
  while true do
    n = n + 1
    t[n] = self:value()
    local c = self:skip_ws()
    self.pos = self.pos + 1
    if c == 93 then return t end
    if c ~= 44 then self:fail("expected ',' or ']'") end
  end
end

function Decoder:object()
  local t = {}
  self.pos = self.pos + 1
  if self:skip_ws() == 125 then self.pos = self.pos + 1 return t end
  while true do
    if self:skip_ws() ~= 34 then self:fail("expected a key") end
    local k = self:string()
    self:expect(":")
    t[k] = self:value()
    local c = self:skip_ws()
    self.pos = self.pos + 1
    if c == 125 then return t end
    if c ~= 44 then self:fail("expected ',' or '}'") end
  end
end

-- (Not written as tail calls, so that profiles and tracebacks keep the
-- names of the methods it dispatches to.)
function Decoder:value()
  local c, v = self:skip_ws(), nil
  if c == 34 then v = self:string()                             -- "
  elseif c == 123 then v = self:object()                        -- {
  elseif c == 91 then v = self:array()                          -- [
  elseif c == 116 then v = self:literal("true", true)
  elseif c == 102 then v = self:literal("false", false)
  elseif c == 110 then v = self:literal("null", json.null)
  elseif c then v = self:number()
  else self:fail("unexpected end of input")
  end
  return v
end

function json.decode(text)
  local dec = Decoder.new(text)
  local v = dec:value()
  if dec:skip_ws() then dec:fail("trailing garbage") end
  return v
end

---------------------------------------------------------------------------
-- Deterministic data
---------------------------------------------------------------------------

-- Numerical Recipes LCG modulo 2^32.  Every intermediate stays below 2^53,
-- so the sequence is identical with Lua 5.4 integers and LuaJIT doubles.
local LCG = {}
LCG.__index = LCG

function LCG.new(seed)
  return setmetatable({ state = seed % 4294967296 }, LCG)
end

function LCG:next()
  self.state = (1664525 * self.state + 1013904223) % 4294967296
  return self.state
end

function LCG:int(lo, hi)            -- uniform-ish integer in [lo, hi]
  return lo + floor(self:next() / 65536) % (hi - lo + 1)
end

function LCG:pick(list)
  return list[self:int(1, #list)]
end

local FIRST = { "Ada", "Alan", "Barbara", "Dennis", "Edsger", "Grace", "Ken",
                "Leslie", "Niklaus", "Zoë", "Åsa", "Roberto", "Luiz", "Waldemar" }
local LAST  = { "Lovelace", "Turing", "Liskov", "Ritchie", "Dijkstra", "Hopper",
                "Thompson", "Lamport", "Wirth", "Ierusalimschy", "de Figueiredo",
                "Celes", "O'Neil", "Ångström" }
local CITIES = { "Rio de Janeiro", "Zürich", "Oslo", "Kyoto", "Nairobi",
                 "Lima", "Reykjavík", "Montréal" }
local TAGS = { "new", "vip", "churn-risk", "beta", "eu", "latam", "apac",
               "wholesale", "newsletter", "gift" }
local NOTES = {
  "prefers e-mail",
  'said "call me later"',
  "line one\nline two",
  "tab\tseparated",
  "path C:\\data\\orders",
  "bell \7 and escape \27 characters",
  "",
}

local function make_order(rng, id)
  local items, n = {}, rng:int(1, 4)
  for i = 1, n do
    items[i] = {
      sku = format("SKU-%05d", rng:int(0, 99999)),
      qty = rng:int(1, 12),
      price = rng:int(99, 99999) / 100,
    }
  end
  return {
    id = id,
    items = items,
    paid = rng:int(0, 3) > 0,
    coupon = rng:int(0, 4) == 0 and format("C%03d", rng:int(0, 999)) or json.null,
  }
end

local function make_record(rng, id)
  local first, last = rng:pick(FIRST), rng:pick(LAST)
  local tags, seen = {}, {}
  for _ = 1, rng:int(1, 4) do
    local tag = rng:pick(TAGS)
    if not seen[tag] then seen[tag] = true; tags[#tags + 1] = tag end
  end
  local orders = {}
  for i = 1, rng:int(0, 3) do orders[i] = make_order(rng, id * 10 + i) end
  return {
    id = id,
    name = first .. " " .. last,
    email = format("%s.%s@example.org", first, last):lower():gsub("[ ']", ""),
    active = rng:int(0, 9) > 1,
    score = rng:int(-5000, 5000) / 8,
    tags = tags,
    address = {
      city = rng:pick(CITIES),
      street = format("%d %s Street", rng:int(1, 999), rng:pick(LAST)),
      zip = format("%05d", rng:int(0, 99999)),
      geo = { rng:int(-9000, 9000) / 100, rng:int(-18000, 18000) / 100 },
    },
    orders = orders,
    note = rng:pick(NOTES),
  }
end

-- A generator of records, driven by a coroutine.
local function records(seed, count)
  return coroutine.wrap(function()
    local rng = LCG.new(seed)
    for id = 1, count do
      coroutine.yield(make_record(rng, id))
    end
  end)
end

---------------------------------------------------------------------------
-- Checks
---------------------------------------------------------------------------

local function deep_equal(a, b)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" then return false end
  for k, v in pairs(a) do
    if not deep_equal(v, b[k]) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end

-- Adler-32 over the text, a few bytes per string.byte call.
local function adler32(s)
  local a, b = 1, 0
  local n = #s
  for i = 1, n, 16 do
    local c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15, c16
      = byte(s, i, i + 15)
    local bytes = { c1, c2, c3, c4, c5, c6, c7, c8,
                    c9, c10, c11, c12, c13, c14, c15, c16 }
    for j = 1, (n - i + 1 < 16) and (n - i + 1) or 16 do
      a = (a + bytes[j]) % 65521
      b = (b + a) % 65521
    end
  end
  return b * 65536 + a
end

local function self_test()
  local cases = {
    { 1, 2.5, -3, "x" }, {}, { a = { b = { c = json.null } } },
    { s = "quote\" back\\ nl\n ctl\1 utf8 ü" }, { true, false },
  }
  for _, v in ipairs(cases) do
    for _, indent in ipairs({ "", "  " }) do
      local text = json.encode(v, indent)
      assert(deep_equal(json.decode(text), v), "self-test failed: " .. text)
    end
  end
  assert(json.decode('"\\u00e9\\u20ac\\/"') == "é€/")
  assert(json.decode('"\\\\u0041"') == "\\u0041")
  local cyclic = {}; cyclic[1] = cyclic
  assert(not pcall(json.encode, cyclic), "cycle not detected")
end

---------------------------------------------------------------------------
-- Main
---------------------------------------------------------------------------

local function main(count)
  self_test()

  local data = {}
  for record in records(20240501, count) do
    data[#data + 1] = record
  end

  local pretty = json.encode(data, "  ")
  local compact = json.encode(data)

  local back = json.decode(pretty)
  if not deep_equal(back, data) then error("round trip failed (pretty)") end
  if json.encode(json.decode(compact)) ~= compact then
    error("round trip failed (compact)")
  end

  print(format("json_demo: %d records, %d bytes pretty, %d bytes compact, "
               .. "adler32=%08x, round-trip ok",
               #data, #pretty, #compact, adler32(pretty)))
end

main(tonumber(arg and arg[1]) or 2000)
