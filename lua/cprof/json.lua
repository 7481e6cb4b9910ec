--- cprof.json: a small JSON encoder (RFC 8259) for cprof-stats --json and for programs.
--
--   local json = require "cprof.json"
--   json.encode(value [, opts])   -> a string
--   json.null                     -> a value that encodes as null
--   json.array(t)                 -> t, marked to encode as an array (even when empty)
--   json.stats_document(st, opts, ...restrictions)
--                                 -> the document cprof-stats --json prints (a Lua table)
--
-- Values:
--   * nil (in an array), json.null, NaN and the infinities encode as null;
--   * booleans as true/false;
--   * integers (Lua 5.4's integer subtype; on LuaJIT, whole numbers below 2^53) as integers,
--     other numbers as the shortest of "%.15g", "%.16g" and "%.17g" that reads back as the
--     same double (0.1 is 0.1, not 0.10000000000000001);
--   * strings: '"' and '\' escaped, control characters (below 0x20, and 0x7F) as \b \f \n
--     \r \t or \u00XX; valid UTF-8 is copied as it is; every byte that is not part of a valid
--     UTF-8 sequence is written as \u00XX, the character of the same number (so Latin-1 text
--     reads back as the same characters, and the output is always valid UTF-8);
--   * tables: arrays when marked with json.array or when their keys are exactly 1..n (n >= 1),
--     objects otherwise (keys must be strings or numbers; numbers become strings).  Object keys
--     come in the order opts.order gives (a list of key names), then the others sorted.
--     Cycles and nesting deeper than 200 levels are errors.
--
-- Pure Lua; works on Lua 5.4 and LuaJIT.

local M = {}

local type, pairs, ipairs, tostring, tonumber, error, setmetatable, getmetatable =
  type, pairs, ipairs, tostring, tonumber, error, setmetatable, getmetatable
local sbyte, sformat, sgsub, concat = string.byte, string.format, string.gsub, table.concat
local floor, huge = math.floor, math.huge
local mtype = math.type

M.null = setmetatable({}, { __tostring = function() return "null" end })

local array_mt = { __name = "json.array" }

--- Marks `t` (default: a new table) to be encoded as an array.
function M.array(t)
  return setmetatable(t or {}, array_mt)
end

local MAX_DEPTH = 200

local ESC = {
  ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f", ["\n"] = "\\n",
  ["\r"] = "\\r", ["\t"] = "\\t",
}

-- The length of the valid UTF-8 sequence that starts at s[i], or nil.
local function utf8_len(s, i, n)
  local c = sbyte(s, i)
  if c < 0x80 then return 1 end
  local len, min
  if c >= 0xC2 and c <= 0xDF then len, min = 2, 0x80
  elseif c >= 0xE0 and c <= 0xEF then len, min = 3, 0x800
  elseif c >= 0xF0 and c <= 0xF4 then len, min = 4, 0x10000
  else return nil end
  if i + len - 1 > n then return nil end
  local cp = c % (2 ^ (7 - len))
  for k = 1, len - 1 do
    local b = sbyte(s, i + k)
    if b < 0x80 or b > 0xBF then return nil end
    cp = cp * 64 + (b - 0x80)
  end
  if cp < min or cp > 0x10FFFF or (cp >= 0xD800 and cp <= 0xDFFF) then return nil end
  return len
end

--- The JSON string for the bytes of `s` (see the module's notes).
local function encode_string(s)
  local out, n, i, len = {}, 0, 1, #s
  local start = 1
  while i <= len do
    local c = sbyte(s, i)
    local step = 1
    local rep
    if c < 0x20 or c == 0x7F or c == 0x22 or c == 0x5C then
      local ch = string.char(c)
      rep = ESC[ch] or sformat("\\u%04x", c)
    elseif c >= 0x80 then
      local l = utf8_len(s, i, len)
      if l then step = l else rep = sformat("\\u%04x", c) end
    end
    if rep then
      if start < i then n = n + 1; out[n] = s:sub(start, i - 1) end
      n = n + 1; out[n] = rep
      start = i + 1
    end
    i = i + step
  end
  if start <= len then n = n + 1; out[n] = s:sub(start) end
  return '"' .. concat(out) .. '"'
end
M.encode_string = encode_string

local function is_integer(x)
  if mtype then return mtype(x) == "integer" end
  return x == floor(x) and x > -2 ^ 53 and x < 2 ^ 53
end

local function encode_number(x)
  if x ~= x or x == huge or x == -huge then return "null" end
  if is_integer(x) then
    if mtype then return tostring(x) end
    return sformat("%d", x)
  end
  -- the shortest of %.15g, %.16g and %.17g that reads back as the same double (%.17g always
  -- does)
  local s
  for p = 15, 17 do
    s = sformat("%." .. p .. "g", x)
    if tonumber(s) == x then break end
  end
  -- a decimal comma would come from the C locale; keep the output JSON whatever it is
  s = sgsub(s, ",", ".")
  return s
end
M.encode_number = encode_number

local function sorted_keys(t, order)
  local rank = {}
  if order then for i, k in ipairs(order) do rank[k] = i end end
  local keys = {}
  for k in pairs(t) do
    local tk = type(k)
    if tk ~= "string" and tk ~= "number" then
      error("cprof.json: cannot encode a table key of type " .. tk, 0)
    end
    keys[#keys + 1] = k
  end
  table.sort(keys, function(a, b)
    local ra, rb = rank[a], rank[b]
    if ra and rb then return ra < rb end
    if ra or rb then return ra ~= nil end
    return tostring(a) < tostring(b)
  end)
  return keys
end

-- Is t a plain array (keys exactly 1..n, n >= 1)?
local function is_array(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  if n == 0 then return false end
  for i = 1, n do
    if t[i] == nil then return false end
  end
  return true
end

local encode_value

local function encode_table(t, opts, out, depth, seen)
  if seen[t] then error("cprof.json: cannot encode a table that contains itself", 0) end
  if depth > MAX_DEPTH then error("cprof.json: tables nested deeper than " .. MAX_DEPTH, 0) end
  seen[t] = true
  if getmetatable(t) == array_mt or is_array(t) then
    local n = 0
    for k in pairs(t) do
      if type(k) == "number" and k >= 1 and k == floor(k) and k > n then n = k end
    end
    if t.n and type(t.n) == "number" and getmetatable(t) == array_mt then n = t.n end
    out[#out + 1] = "["
    for i = 1, n do
      if i > 1 then out[#out + 1] = "," end
      encode_value(t[i], opts, out, depth + 1, seen)
    end
    out[#out + 1] = "]"
  else
    out[#out + 1] = "{"
    for i, k in ipairs(sorted_keys(t, opts.order)) do
      if i > 1 then out[#out + 1] = "," end
      out[#out + 1] = encode_string(tostring(k))
      out[#out + 1] = ":"
      encode_value(t[k], opts, out, depth + 1, seen)
    end
    out[#out + 1] = "}"
  end
  seen[t] = nil
end

encode_value = function(v, opts, out, depth, seen)
  local tv = type(v)
  if v == nil or v == M.null then
    out[#out + 1] = "null"
  elseif tv == "boolean" then
    out[#out + 1] = v and "true" or "false"
  elseif tv == "number" then
    out[#out + 1] = encode_number(v)
  elseif tv == "string" then
    out[#out + 1] = encode_string(v)
  elseif tv == "table" then
    encode_table(v, opts, out, depth, seen)
  else
    error("cprof.json: cannot encode a " .. tv, 0)
  end
end

--- The JSON text of `value`.  opts.order: key names that come first, in that order, in every
--- object.
function M.encode(value, opts)
  local out = {}
  encode_value(value, opts or {}, out, 0, {})
  return concat(out)
end

---------------------------------------------------------------------------
-- The cprof-stats --json document
---------------------------------------------------------------------------

--- The order of the keys in the document (docs/REPORT.md, "JSON output").
M.DOCUMENT_ORDER = {
  "files", "total_calls", "primitive_calls", "total_time", "order", "functions",
  "restrictions", "restriction", "from", "to", "invalid", "rows",
  "file", "line", "name", "what", "stdname", "ncalls", "pcalls", "tottime",
  "percall_tottime", "cumtime", "percall_cumtime",
  "alloc_count", "alloc_bytes", "free_count", "free_bytes", "live_bytes", "min_size", "max_size",
  "lines", "hits", "time", "callers", "callees", "allocator",
}

local function edges_out(edges)
  local out = M.array()
  for i, e in ipairs(edges) do
    out[i] = {
      file = e.file, line = e.line, name = e.name, stdname = e.stdname,
      ncalls = e.ncalls,
      pcalls = e.pcalls == nil and M.null or e.pcalls,
      tottime = e.tottime == nil and M.null or e.tottime,
      cumtime = e.cumtime == nil and M.null or e.cumtime,
    }
  end
  return out
end

--- The document for st:report_table(opts, ...) (opts.callers, opts.callees), as a table ready
--- for json.encode(doc, { order = json.DOCUMENT_ORDER }).
function M.stats_document(st, opts, ...)
  opts = opts or {}
  local t = st:report_table(opts, ...)
  local rows = M.array()
  for i, r in ipairs(t.rows) do
    local row = {
      file = r.file, line = r.line, name = r.name, what = r.what, stdname = r.stdname,
      ncalls = r.ncalls, pcalls = r.pcalls, tottime = r.tottime, cumtime = r.cumtime,
      percall_tottime = r.percall_tot == nil and M.null or r.percall_tot,
      percall_cumtime = r.percall_cum == nil and M.null or r.percall_cum,
    }
    if r.alloc_count ~= nil then
      for _, k in ipairs({ "alloc_count", "alloc_bytes", "free_count", "free_bytes", "live_bytes",
                           "min_size", "max_size" }) do
        row[k] = r[k]
      end
    end
    if r.lines then
      row.lines = M.array()
      for j, l in ipairs(r.lines) do row.lines[j] = { line = l.line, hits = l.hits, time = l.time } end
    end
    if r.callers then row.callers = edges_out(r.callers) end
    if r.callees then row.callees = edges_out(r.callees) end
    rows[i] = row
  end
  local restrictions = M.array()
  for i, x in ipairs(t.restrictions) do
    local v = x.restriction
    if type(v) ~= "string" and type(v) ~= "number" and type(v) ~= "boolean" then v = tostring(v) end
    restrictions[i] = { restriction = v, from = x.from, to = x.to, invalid = x.invalid == true }
  end
  return {
    files = M.array(t.files),
    total_calls = t.total_calls, primitive_calls = t.primitive_calls, total_time = t.total_time,
    order = t.order == nil and M.null or t.order,
    functions = t.functions,
    restrictions = restrictions,
    rows = rows,
    allocator = st.allocator and M.allocator_document(st.allocator) or nil,
  }
end

--- The allocator snapshot (what cprof.memory.stats() returns) as a JSON-ready table: the
--- same fields, with caches, types and arenas as arrays and each arena's free_lists as an
--- array of { list, segs } (list i: free segments of sizes in [2^i, 2^(i+1))).
function M.allocator_document(s)
  local doc = {}
  for k, v in pairs(s) do
    if type(v) ~= "table" then doc[k] = v end
  end
  for _, g in ipairs({ "caches", "types", "arenas" }) do
    local list = M.array()
    for i, r in ipairs(s[g] or {}) do
      local row = {}
      for k, v in pairs(r) do
        if k == "free_lists" then
          local idx = {}
          for l in pairs(v) do idx[#idx + 1] = l end
          table.sort(idx)
          local fl = M.array()
          for j, l in ipairs(idx) do fl[j] = { list = l, segs = v[l] } end
          row.free_lists = fl
        else
          row[k] = v
        end
      end
      list[i] = row
    end
    doc[g] = list
  end
  return doc
end

--- The JSON text cprof-stats --json prints (with a final newline).
function M.stats_json(st, opts, ...)
  return M.encode(M.stats_document(st, opts, ...), { order = M.DOCUMENT_ORDER }) .. "\n"
end

return M
