--- cprof.report.json: the document `cprof-stats --json` prints (docs/REPORT.md, "JSON output"):
--- the rows of Stats:report_table as JSON, written with lua-cjson.
--
--   json.stats_document(st, opts, ...restrictions)  the document, as a Lua table
--   json.stats_json(st, opts, ...restrictions)      its JSON text, with a final newline
--   json.null                                       the value written as null (cjson.null)
--
-- Strings go through cjson.encode.  The document's objects and numbers are written here, because
-- cjson cannot keep them as the document promises: its objects come in hash order (the
-- document's keys come in a fixed order), an empty table is an object (an empty array must stay
-- an array), and Debian's cjson 2.1.0 writes numbers with at most 14 significant digits (the
-- document's numbers read back as the same double: "%.15g", "%.16g" or "%.17g").

local _ENV = require("cprof.env")()

local cjson = require "cjson"
local args = require "cprof.args"

local M = {}

local type, pairs, ipairs, tostring, tonumber, setmetatable, getmetatable =
  type, pairs, ipairs, tostring, tonumber, setmetatable, getmetatable
local sformat, sgsub, concat = string.format, string.gsub, table.concat
local floor, huge = math.floor, math.huge
local to_utf8 = require("cprof.sanitize").utf8
local mtype = math.type
local cjson_encode = cjson.encode

M.null = cjson.null

-- Tables built here with this metatable are arrays, even when empty.
local ARRAY = {}
local function array(t) return setmetatable(t or {}, ARRAY) end

-- The order of the keys in the document's objects; keys not listed come after, sorted.
local DOCUMENT_ORDER = {
  "files", "total_calls", "primitive_calls", "total_time", "order", "functions",
  "restrictions", "restriction", "from", "to", "invalid", "rows",
  "file", "line", "name", "what", "stdname", "ncalls", "pcalls", "tottime",
  "percall_tottime", "cumtime", "percall_cumtime",
  "alloc_count", "alloc_bytes", "free_count", "free_bytes", "live_bytes", "min_size", "max_size",
  "lines", "hits", "time", "callers", "callees", "allocator",
}
local RANK = {}
for i, k in ipairs(DOCUMENT_ORDER) do RANK[k] = i end

---------------------------------------------------------------------------
-- Writing JSON
---------------------------------------------------------------------------

-- A JSON string, valid UTF-8 as every file cprof writes (cprof.sanitize: each byte that is not
-- part of valid UTF-8 becomes U+FFFD).  cjson 2.1.0 escapes '/' as "\/", which JSON allows but does not need: a
-- "\/" in its output is always that escape (a backslash of the text is written "\\", and every
-- '/' is escaped), so it can be undone without looking further.
local function encode_string(s)
  return (sgsub(cjson_encode(to_utf8(s)), "\\/", "/"))
end

local function is_integer(x)
  if mtype then return mtype(x) == "integer" end
  return x == floor(x) and x > -2 ^ 53 and x < 2 ^ 53
end

-- A JSON number: integers as integers; other numbers as the shortest of "%.15g", "%.16g" and
-- "%.17g" that reads back as the same double (%.17g always does); NaN and the infinities as null.
local function encode_number(x)
  if x ~= x or x == huge or x == -huge then return "null" end
  if is_integer(x) then
    if mtype then return tostring(x) end
    return sformat("%d", x)
  end
  local s
  for p = 15, 17 do
    s = sformat("%." .. p .. "g", x)
    if tonumber(s) == x then break end
  end
  -- a decimal comma would come from the C locale; keep the output JSON whatever it is
  return (sgsub(s, ",", "."))
end

-- Object keys: those of DOCUMENT_ORDER in its order, then the others sorted.
local function object_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    local ra, rb = RANK[a], RANK[b]
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

local function write_value(v, out)
  local tv = type(v)
  if v == M.null then
    out[#out + 1] = "null"
  elseif tv == "boolean" then
    out[#out + 1] = v and "true" or "false"
  elseif tv == "number" then
    out[#out + 1] = encode_number(v)
  elseif tv == "string" then
    out[#out + 1] = encode_string(v)
  elseif tv ~= "table" then
    error("cprof.report.json: cannot write a " .. tv .. " in JSON", 0)
  elseif getmetatable(v) == ARRAY or is_array(v) then
    out[#out + 1] = "["
    for i = 1, #v do
      if i > 1 then out[#out + 1] = "," end
      write_value(v[i], out)
    end
    out[#out + 1] = "]"
  else
    out[#out + 1] = "{"
    for i, k in ipairs(object_keys(v)) do
      if i > 1 then out[#out + 1] = "," end
      out[#out + 1] = encode_string(tostring(k))
      out[#out + 1] = ":"
      write_value(v[k], out)
    end
    out[#out + 1] = "}"
  end
end

---------------------------------------------------------------------------
-- The document
---------------------------------------------------------------------------

local function edges_out(edges)
  local out = array()
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

-- The allocator snapshot (what cprof.memory.stats() returns) as a document: the same fields,
-- with caches, types and arenas as arrays and each arena's free_lists as an array of
-- { list, segs } (list i: free segments of sizes in [2^i, 2^(i+1))).
local function allocator_document(s)
  local doc = {}
  for k, v in pairs(s) do
    if type(v) ~= "table" then doc[k] = v end
  end
  for _, g in ipairs({ "caches", "types", "arenas" }) do
    local list = array()
    for i, r in ipairs(s[g] or {}) do
      local row = {}
      for k, v in pairs(r) do
        if k == "free_lists" then
          local idx = {}
          for l in pairs(v) do idx[#idx + 1] = l end
          table.sort(idx)
          local fl = array()
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

--- The document for st:report_table(opts, ...) (opts.callers, opts.callees), as a table
--- (nulls are json.null).
function M.stats_document(st, opts, ...)
  args.check(args.typename(st) == "Stats", st, 1, "stats_document", "Stats")
  args.check(opts == nil or type(opts) == "table", opts, 2, "stats_document", "options table")
  opts = opts or {}
  local t = st:report_table(opts, ...)
  local rows = array()
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
      row.lines = array()
      for j, l in ipairs(r.lines) do row.lines[j] = { line = l.line, hits = l.hits, time = l.time } end
    end
    if r.callers then row.callers = edges_out(r.callers) end
    if r.callees then row.callees = edges_out(r.callees) end
    rows[i] = row
  end
  local restrictions = array()
  for i, x in ipairs(t.restrictions) do
    local v = x.restriction
    if type(v) ~= "string" and type(v) ~= "number" and type(v) ~= "boolean" then v = tostring(v) end
    restrictions[i] = { restriction = v, from = x.from, to = x.to, invalid = x.invalid == true }
  end
  return {
    files = array(t.files),
    total_calls = t.total_calls, primitive_calls = t.primitive_calls, total_time = t.total_time,
    order = t.order == nil and M.null or t.order,
    functions = t.functions,
    restrictions = restrictions,
    rows = rows,
    allocator = st.allocator and allocator_document(st.allocator) or nil,
  }
end

--- The JSON text cprof-stats --json prints (with a final newline).
function M.stats_json(st, opts, ...)
  args.check(args.typename(st) == "Stats", st, 1, "stats_json", "Stats")
  args.check(opts == nil or type(opts) == "table", opts, 2, "stats_json", "options table")
  local out = {}
  write_value(M.stats_document(st, opts, ...), out)
  return concat(out) .. "\n"
end

return M
