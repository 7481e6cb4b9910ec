--- cprof.stats: a pstats-compatible report class for cprof profiles.
--
-- The data model follows CPython's pstats.Stats:
--
--   stats[key]  = { cc, nc, tt, ct, callers }      -- per function
--   callers[k2] = { nc, cc, tt, ct }               -- edge k2 -> key (note: nc first)
--
-- where `key` is an interned "function key" table { file, line, name } (the pstats
-- tuple).  C functions use the key { "~", 0, "<qualified.name>" }, exactly as
-- cProfile labels built-ins, so they print as "{qualified.name}" and sort after
-- Lua functions under the file/name sorts.  Keys are interned module-wide
-- (weakly), so equal triples are the same table in every Stats object and can be
-- compared with ==.
--
-- Insertion order (pstats' dict order) is kept in `self.order`; with a getstats()
-- table as input it is the order of the `entries` array.
--
-- Sources: getstats() tables, data tables (Profile:snapshot(), cprof.load; the bias is
-- subtracted with cprof.bias, then converted by cprof.data.to_stats), file names (cprof dumps,
-- read with cprof.core.read_dump, or Python pstats files, read with cprof.marshal; the first
-- bytes tell which), objects with getstats(), and other Stats.  Several sources are added as
-- pstats' add does.  Reports: print_stats, print_callers, print_callees; strip_dirs and
-- dump_stats as in pstats.  An edge from a profile.py pstats file is a call count instead of a
-- { nc, cc, tt, ct } table.
--
-- cprof's own data rides along when the sources have it:
--
--   lines[key] = { [line] = { hits = n, time = seconds } }     -- line events
--   mem[key]   = { alloc_count, alloc_bytes, free_count, free_bytes, min_size, max_size }
--   allocator  = what cprof.memory.stats() returned when the dump was written
--
-- reported by print_lines (line_profiler's layout), print_memory and print_allocator, and
-- sorted by with the memory sort keys (alloc, allocs, live).
--
-- Works on Lua 5.4 and LuaJIT/Lua 5.1.

local M = {}

local Stats = {}
Stats.__index = Stats
M.Stats = Stats

local type, pairs, ipairs, tostring, tonumber, select, error, pcall, setmetatable, getmetatable =
  type, pairs, ipairs, tostring, tonumber, select, error, pcall, setmetatable, getmetatable
local next, rawget = next, rawget
local sformat, sfind, ssub, sbyte, srep, sgsub, smatch =
  string.format, string.find, string.sub, string.byte, string.rep, string.gsub, string.match
local floor, huge = math.floor, math.huge
local unpack = table.unpack or unpack
local data_mod = require("cprof.data")
local bias_mod = require("cprof.bias")
local mtype = math.type       -- nil on LuaJIT / Lua 5.1
local concat = table.concat

-- Copy list[i..j] (not unpack: LuaJIT limits the number of results).
local function slice(list, i, j)
  local out, k = {}, 0
  for x = i or 1, j or #list do k = k + 1; out[k] = list[x] end
  return out
end

--- The file name used for C functions in keys (cProfile's convention).
M.C_FILE = "~"

---------------------------------------------------------------------------
-- Function keys
---------------------------------------------------------------------------

local key_mt = {}
local interned = setmetatable({}, { __mode = "v" })

local function norm_line(line)
  if mtype then
    local i = math.tointeger(line)
    if i then return i end
  end
  return line
end

--- Return the interned key table { file, line, name } for a pstats tuple.
function M.func_key(file, line, name)
  line = norm_line(line)
  local id = tostring(file) .. "\0" .. tostring(line) .. "\0" .. tostring(name)
  local k = interned[id]
  if not k then
    k = setmetatable({ file, line, name }, key_mt)
    interned[id] = k
  end
  return k
end

--- True if `k` is an interned function key.
function M.is_key(k)
  return getmetatable(k) == key_mt
end

---------------------------------------------------------------------------
-- Python-compatible formatting helpers
---------------------------------------------------------------------------

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
M.py_float_repr = py_float_repr

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
local function py_repr(v)
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
M.py_repr = py_repr

--- pstats' f8: "%8.3f" (NaN prints as "nan" whatever its sign bit, as in Python).
local function f8(x)
  if is_nan(x) then return "     nan" end
  return sformat("%8.3f", x)
end
M.f8 = f8

local function f3(x)
  if is_nan(x) then return "nan" end
  return sformat("%.3f", x)
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

--- pstats' func_std_string: "file:line(name)", or "{name}" for C functions.
--- Accepts a key table or (file, line, name).
local function func_std_string(key, line, name)
  local file
  if type(key) == "table" then
    file, line, name = key[1], key[2], key[3]
  else
    file = key
  end
  if file == "~" and line == 0 then
    if ssub(name, 1, 1) == "<" and ssub(name, -1) == ">" then
      return "{" .. ssub(name, 2, -2) .. "}"
    end
    return name
  end
  return sformat("%s:%s(%s)", tostring(file), int_str(line), tostring(name))
end
M.func_std_string = func_std_string

key_mt.__tostring = func_std_string

--- pstats' func_get_function_name: the name part of a key.
function M.func_get_function_name(key)
  return key[3]
end

--- The "what" of a key: "C", "main" or "Lua" (guessed when not recorded).
local function key_what(key)
  local name = key[3]
  if key[1] == "~" and key[2] == 0 and type(name) == "string" and ssub(name, 1, 1) == "<"
      and ssub(name, -1) == ">" then
    return "C"
  end
  if key[2] == 0 and key[3] == "<main chunk>" then return "main" end
  return "Lua"
end

---------------------------------------------------------------------------
-- Sort keys
---------------------------------------------------------------------------

-- Row fields compared by the sort: cc, nc, tt, ct, file, line, name, std, and the memory
-- fields ab (allocated bytes), ac (allocation count), lb (live bytes).
-- Each definition: key, list of {field, direction}, description.  Same
-- description == same meaning.  The first 13 are pstats' keys, in pstats' order; the memory
-- keys (cprof's own) follow.
local NPSTATS_KEYS = 13
local SORT_DEFS = {
  { "calls",      { { "nc", -1 } },                             "call count" },
  { "ncalls",     { { "nc", -1 } },                             "call count" },
  { "cumtime",    { { "ct", -1 } },                             "cumulative time" },
  { "cumulative", { { "ct", -1 } },                             "cumulative time" },
  { "filename",   { { "file", 1 } },                            "file name" },
  { "line",       { { "line", 1 } },                            "line number" },
  { "module",     { { "file", 1 } },                            "file name" },
  { "name",       { { "name", 1 } },                            "function name" },
  { "nfl",        { { "name", 1 }, { "file", 1 }, { "line", 1 } }, "name/file/line" },
  { "pcalls",     { { "cc", -1 } },                             "primitive call count" },
  { "stdname",    { { "std", 1 } },                             "standard name" },
  { "time",       { { "tt", -1 } },                             "internal time" },
  { "tottime",    { { "tt", -1 } },                             "internal time" },
  { "alloc",       { { "ab", -1 } },                            "allocated bytes" },
  { "alloc_bytes", { { "ab", -1 } },                            "allocated bytes" },
  { "alloc_count", { { "ac", -1 } },                            "allocation count" },
  { "allocs",      { { "ac", -1 } },                            "allocation count" },
  { "live",        { { "lb", -1 } },                            "live bytes" },
}
local SORT_BY_NAME = {}
for _, d in ipairs(SORT_DEFS) do SORT_BY_NAME[d[1]] = d end

--- Legacy integer sort arguments (old profile module).
M.LEGACY_SORT = { [-1] = "stdname", [0] = "calls", [1] = "time", [2] = "cumulative" }

--- Named constants like pstats.SortKey.
M.SortKey = {
  CALLS = "calls", CUMULATIVE = "cumulative", FILENAME = "filename", LINE = "line",
  NAME = "name", NFL = "nfl", PCALLS = "pcalls", STDNAME = "stdname", TIME = "time",
  ALLOC = "alloc", ALLOCS = "allocs", LIVE = "live",
}

--- The sort keys in pstats' order: array of { key = ..., description = ... }.  With `all`,
--- cprof's memory keys follow pstats' 13.
function M.sort_keys(all)
  local out = {}
  for i, d in ipairs(SORT_DEFS) do
    if i <= NPSTATS_KEYS or all then out[i] = { key = d[1], description = d[3] } end
  end
  return out
end

local function valid_keys_text()
  local names = {}
  for i, d in ipairs(SORT_DEFS) do names[i] = d[1] end
  return "valid keys: " .. concat(names, ", ")
    .. " (or any prefix that is unambiguous in meaning, e.g. 'cum', 'tot', 'alloc_c';"
    .. " or one legacy integer -1, 0, 1, 2)"
end

-- The definitions of SORT_DEFS[from..to] that `word` is a prefix of, and their meanings.
local function prefixed(word, from, to)
  local found, meanings, seen = {}, {}, {}
  for i = from, to do
    local def = SORT_DEFS[i]
    if ssub(def[1], 1, #word) == word then
      found[#found + 1] = def
      if not seen[def[3]] then
        seen[def[3]] = true
        meanings[#meanings + 1] = def[3]
      end
    end
  end
  return found, meanings
end

--- Resolve one sort argument (full key, abbreviation, or SortKey value).
--- Returns the definition { key, tuple, description }, or nil and a message.
--- A prefix of one of pstats' keys means what it means among them (so 'l' stays line, as in
--- pstats, although 'live' starts with it too); other prefixes are looked up among cprof's
--- memory keys.  Either way it must be unambiguous in meaning.
function M.resolve_sort_key(word)
  if type(word) == "number" then
    return nil, sformat("cprof.stats: unknown sort key %s (legacy integer keys are accepted only"
      .. " alone); %s", py_repr(word), valid_keys_text())
  end
  if type(word) ~= "string" then
    return nil, sformat("cprof.stats: invalid sort key %s (a %s); %s",
      py_repr(word), type(word), valid_keys_text())
  end
  local d = SORT_BY_NAME[word]
  if d then return d end
  local found, meanings = prefixed(word, 1, NPSTATS_KEYS)
  if #found == 0 then found, meanings = prefixed(word, NPSTATS_KEYS + 1, #SORT_DEFS) end
  if #found == 0 then
    return nil, sformat("cprof.stats: unknown sort key %s; %s", py_repr(word), valid_keys_text())
  end
  if #meanings > 1 then
    local names = {}
    for i, def in ipairs(found) do names[i] = def[1] end
    return nil, sformat("cprof.stats: ambiguous sort key %s (could be %s); %s",
      py_repr(word), concat(names, ", "), valid_keys_text())
  end
  return found[1]
end

---------------------------------------------------------------------------
-- Comparison and stable sorting
---------------------------------------------------------------------------

-- Byte-wise string order (Python compares str by code point, which is the
-- byte order of UTF-8).  Lua's `<` uses strcoll, which is only byte-wise in
-- the C locale.
local function bytes_lt(a, b)
  local n = #a
  if #b < n then n = #b end
  for i = 1, n do
    local x, y = sbyte(a, i), sbyte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

local function make_lt()
  local ok, loc = pcall(function() return os.setlocale(nil, "collate") end)
  if ok and (loc == "C" or loc == "POSIX") then
    return function(a, b) return a < b end
  end
  return function(a, b)
    if type(a) == "string" and type(b) == "string" then return bytes_lt(a, b) end
    return a < b
  end
end

--- Stable merge sort of `list` with `before(a, b)` meaning "a strictly before b".
--- Never fails on an inconsistent order (e.g. NaN times).
local function stable_sort(list, before)
  local n = #list
  if n < 2 then return list end
  local src, dst = list, {}
  local width = 1
  while width < n do
    local i = 1
    while i <= n do
      local mid = i + width
      local hi = i + 2 * width
      if mid > n + 1 then mid = n + 1 end
      if hi > n + 1 then hi = n + 1 end
      local a, b, k = i, mid, i
      while a < mid and b < hi do
        if before(src[b], src[a]) then
          dst[k] = src[b]; b = b + 1
        else
          dst[k] = src[a]; a = a + 1
        end
        k = k + 1
      end
      while a < mid do dst[k] = src[a]; a = a + 1; k = k + 1 end
      while b < hi do dst[k] = src[b]; b = b + 1; k = k + 1 end
      i = hi
    end
    src, dst = dst, src
    width = width * 2
  end
  if src ~= list then
    for i = 1, n do list[i] = src[i] end
  end
  return list
end
M.stable_sort = stable_sort

---------------------------------------------------------------------------
-- Construction
---------------------------------------------------------------------------

-- Edges are tuples { nc, cc, tt, ct } (cProfile), summed elementwise, or call counts
-- (profile.py's "old-style" callers, from a pstats file), summed.  A count added to a tuple
-- adds to its nc and cc (pstats cannot add the two kinds at all).
local function add_edge(a, b)
  local ta, tb = type(a) == "table", type(b) == "table"
  if ta and tb then return { a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4] } end
  if not ta and not tb then return a + b end
  if ta then return { a[1] + b, a[2] + b, a[3], a[4] } end
  return { a + b[1], a + b[2], b[3], b[4] }
end

local function copy_edge(e)
  if type(e) == "table" then return { e[1], e[2], e[3], e[4] } end
  return e
end

local function check_number(v, what, where)
  if type(v) ~= "number" then
    error(sformat("cprof.stats: %s: '%s' must be a number, got %s", where, what, type(v)), 0)
  end
  return v
end

-- Key of one getstats() entry.
local function entry_key(e, where)
  if type(e) ~= "table" then
    error(sformat("cprof.stats: %s is not a table", where), 0)
  end
  local name = e.name
  if type(name) ~= "string" then
    error(sformat("cprof.stats: %s: 'name' must be a string", where), 0)
  end
  if e.what == "C" then
    return M.func_key("~", 0, "<" .. name .. ">")
  end
  local file = e.file
  if type(file) ~= "string" then
    error(sformat("cprof.stats: %s: 'file' must be a string", where), 0)
  end
  return M.func_key(file, check_number(e.line or 0, "line", where), name)
end

-- Store a record, merging with an existing one (pstats' add_func_stats).
function Stats:_put(key, rec, what, lastline)
  local old = self.stats[key]
  if not old then
    self.stats[key] = rec
    self.order[#self.order + 1] = key
  else
    local callers = old[5]
    for k, edge in pairs(rec[5]) do
      if callers[k] then callers[k] = add_edge(callers[k], edge) else callers[k] = edge end
    end
    self.stats[key] = { old[1] + rec[1], old[2] + rec[2], old[3] + rec[3], old[4] + rec[4], callers }
  end
  if what and not self.what[key] then self.what[key] = what end
  if lastline and not self.lastline[key] then self.lastline[key] = lastline end
end

-- Adds line records { [line] = { hits, time } } and a memory record to a function's own
-- (either may be nil): line records are summed by line, memory by data.add_memory.
function Stats:_put_extra(key, lines, mem)
  if lines then
    local mine = self.lines[key]
    if not mine then
      mine = {}
      self.lines[key] = mine
    end
    for line, r in pairs(lines) do
      local old = mine[line]
      if old then
        mine[line] = { hits = old.hits + r.hits, time = old.time + r.time }
      else
        mine[line] = { hits = r.hits, time = r.time }
      end
    end
  end
  if mem then
    self.memory = true
    local old = self.mem[key]
    if old then
      self.mem[key] = data_mod.add_memory(old, mem)
    else
      local m = {}
      for _, c in ipairs(data_mod.MEMORY_COLUMNS) do m[c] = mem[c] end
      self.mem[key] = m
    end
  end
end

-- The line records of a getstats() entry, checked: { [line] = { hits, time } }, or nil.
local function entry_lines(e, where)
  if e.lines == nil then return nil end
  if type(e.lines) ~= "table" then
    error(sformat("cprof.stats: %s: 'lines' must be a table", where), 0)
  end
  local out = {}
  for line, r in pairs(e.lines) do
    local w = where .. ", line " .. tostring(line)
    check_number(line, "line", w)
    if type(r) ~= "table" then error(sformat("cprof.stats: %s is not a table", w), 0) end
    out[norm_line(line)] = { hits = check_number(r.hits or 0, "hits", w),
                             time = check_number(r.time or 0, "time", w) }
  end
  return out
end

-- The memory record of a getstats() entry, checked, or nil when it has none.
local function entry_memory(e, where)
  if e.alloc_count == nil then return nil end
  local m = {}
  for _, c in ipairs(data_mod.MEMORY_COLUMNS) do m[c] = check_number(e[c] or 0, c, where) end
  return m
end

-- Keep the meta of a loaded profile (the first one's, summed as data.merge_meta does).
function Stats:_add_meta(meta)
  if type(meta) ~= "table" then return end
  if self.meta then
    self.meta = data_mod.merge_meta(self.meta, meta)
  else
    local m = {}
    for k, v in pairs(meta) do m[k] = v end
    self.meta = m
  end
end

function Stats:_load_getstats(data)
  local entries = data.entries
  if type(entries) ~= "table" then
    error("cprof.stats: data has no 'entries' array", 0)
  end
  if data.timer ~= nil then self.timer = data.timer end
  if data.unit ~= nil then self.unit = data.unit end
  local keys = {}
  for i, e in ipairs(entries) do
    keys[i] = entry_key(e, "entry " .. i)
  end
  for i, e in ipairs(entries) do
    local where = "entry " .. i
    local nc = check_number(e.ncalls, "ncalls", where)
    local cc = check_number(e.pcalls == nil and nc or e.pcalls, "pcalls", where)
    local tt = check_number(e.tottime or 0, "tottime", where)
    local ct = check_number(e.cumtime or 0, "cumtime", where)
    local callers = {}
    if e.callers ~= nil then
      if type(e.callers) ~= "table" then
        error(sformat("cprof.stats: %s: 'callers' must be a table", where), 0)
      end
      -- visit caller indices in numeric order so that merged sums are deterministic
      local idx = {}
      for ci in pairs(e.callers) do idx[#idx + 1] = ci end
      table.sort(idx, function(a, b)
        if type(a) == type(b) and type(a) == "number" then return a < b end
        return tostring(a) < tostring(b)
      end)
      for _, ci in ipairs(idx) do
        local ck = keys[ci]
        if not ck then
          error(sformat("cprof.stats: %s: caller index %s is not an entry", where, tostring(ci)), 0)
        end
        local ed = e.callers[ci]
        local w = where .. ", caller " .. tostring(ci)
        if type(ed) ~= "table" then error(sformat("cprof.stats: %s is not a table", w), 0) end
        local enc = check_number(ed.ncalls, "ncalls", w)
        local edge = {
          enc,
          check_number(ed.pcalls == nil and enc or ed.pcalls, "pcalls", w),
          check_number(ed.tottime or 0, "tottime", w),
          check_number(ed.cumtime or 0, "cumtime", w),
        }
        if callers[ck] then callers[ck] = add_edge(callers[ck], edge) else callers[ck] = edge end
      end
    end
    local what = e.what
    if what ~= "C" and what ~= "main" and what ~= "Lua" then what = nil end
    local lastline = type(e.lastline) == "number" and e.lastline or nil
    self:_put(keys[i], { cc, nc, tt, ct, callers }, what, lastline)
    self:_put_extra(keys[i], entry_lines(e, where), entry_memory(e, where))
  end
  self:_add_meta(data.meta)
end

-- A data table (snapshot, dump): the bias subtracted (once: cprof.bias knows when it was),
-- then its functions, and its allocator snapshot when this Stats has none yet.
function Stats:_load_data(d)
  local ok, applied = pcall(bias_mod.apply, d)
  -- Malformed data: cprof.data.to_stats says what is wrong with it.
  self:_load_getstats(data_mod.to_stats(ok and applied or d))
  if self.trees then self.trees[#self.trees + 1] = ok and applied or d end
  if self.allocator == nil then self.allocator = data_mod.allocator(d) end
end

function Stats:_load_stats(other)
  for _, key in ipairs(other.order) do
    local r = other.stats[key]
    local callers = {}
    for k, e in pairs(r[5]) do callers[k] = copy_edge(e) end
    self:_put(key, { r[1], r[2], r[3], r[4], callers }, other.what[key], other.lastline[key])
    self:_put_extra(key, other.lines[key], other.mem[key])
  end
  if other.memory then self.memory = true end
  if not other.trees then self.trees = false end
  for _, t in ipairs(self.trees and other.trees or {}) do self.trees[#self.trees + 1] = t end
  if self.allocator == nil then self.allocator = other.allocator end
  for _, f in ipairs(other.files) do self.files[#self.files + 1] = f end
  self.timer, self.unit = other.timer, other.unit
  self:_add_meta(other.meta)
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

--- The `files` line of a dump: "<ctime(mtime)>    <path>", as pstats writes it, or the path
--- alone when the modification time cannot be read (as pstats does when os.stat fails).
function M.file_line(path)
  local ok, core = pcall(require, "cprof.core")
  if ok and type(core) == "table" and core.mtime then
    local mt = core.mtime(path)
    if type(mt) == "number" then return M.ctime(mt) .. "    " .. path end
  end
  return path
end

-- The records of a pstats file (cprof.marshal.to_records), in the file's order.
function Stats:_load_marshal(records)
  for _, rec in ipairs(records) do
    local callers = {}
    for _, c in ipairs(rec.callers) do
      local ck = M.func_key(c[1], c[2], c[3])
      callers[ck] = copy_edge(c[4])
    end
    self:_put(M.func_key(rec[1], rec[2], rec[3]), { rec[4], rec[5], rec[6], rec[7], callers })
  end
end

--- The kind of the file at `path` from its first bytes: "cprof" (a cprof dump, magic
--- "\x89CPROF\r\n"), "pstats" (a Python marshal dict: '{', with or without the FLAG_REF
--- bit), or nil when it is neither or cannot be read.
function M.file_kind(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local ok, head = pcall(f.read, f, 8)
  f:close()
  if not ok or type(head) ~= "string" then return nil end
  if head == "\137CPROF\r\n" then return "cprof" end
  if require("cprof.marshal").is_marshal(head) then return "pstats" end
  return nil
end

-- A file: a Python pstats file (cprof.marshal), or a cprof dump (read with
-- cprof.core.read_dump, which also explains what is wrong with anything else).  Errors are
-- "cprof: <path>: <reason>".
function Stats:_load_file(path)
  if M.file_kind(path) == "pstats" then
    self:_load_marshal(require("cprof.marshal").load_stats(path))
    self.trees = false
  else
    local ok, d = pcall(require("cprof.core").read_dump, path)
    if not ok then error(d, 0) end
    self:_load_data(d)
  end
  self.files[#self.files + 1] = M.file_line(path)
end

--- Load data: a getstats() table, a data table (Profile:snapshot(), cprof.load), the name of
--- a dump or pstats file, an object with a getstats() method, or a Stats.
function Stats:load_stats(data)
  if data == nil then return self end
  if getmetatable(data) == Stats then
    self:_load_stats(data)
    return self
  end
  if type(data) == "string" then
    self:_load_file(data)
    return self
  end
  if type(data) == "table" and data.entries ~= nil then
    self:_load_getstats(data)
    self.trees = false
    return self
  end
  if type(data) == "table" and data.frames ~= nil then
    self:_load_data(data)
    return self
  end
  local ok, getstats = pcall(function() return data.getstats end)
  if ok and getstats ~= nil then
    local st = data:getstats()
    if type(st) ~= "table" then
      error("cprof.stats: getstats() did not return a table", 0)
    end
    self:_load_getstats(st)
    self.trees = false
    return self
  end
  error(sformat("cprof.stats: cannot create a Stats object from %s (expected a getstats() table,"
    .. " a data table, a dump file name, a profile with getstats(), or a Stats)",
    tostring(data)), 0)
end

--- Compute totals and the longest standard name (pstats' get_top_level_stats).
function Stats:get_top_level_stats()
  local total_calls, prim_calls, total_tt, max_len = 0, 0, 0, 0
  local top_level = {}
  for _, key in ipairs(self.order) do
    local r = self.stats[key]
    total_calls = total_calls + r[2]
    prim_calls = prim_calls + r[1]
    total_tt = total_tt + r[3]
    for ck in pairs(r[5]) do
      if ck[1] == "jprofile" and ck[2] == 0 and ck[3] == "profiler" then
        top_level[#top_level + 1] = key
        break
      end
    end
    local n = display_len(func_std_string(key))
    if n > max_len then max_len = n end
  end
  self.total_calls, self.prim_calls, self.total_tt = total_calls, prim_calls, total_tt
  self.max_name_len, self.top_level = max_len, top_level
  return self
end

-- True for a trailing options table: a plain table that is no kind of source.
local function is_opts(t)
  return type(t) == "table" and getmetatable(t) == nil and rawget(t, "entries") == nil
    and rawget(t, "frames") == nil and rawget(t, "getstats") == nil
    and rawget(t, "stats") == nil
end

--- Stats.new(source, ... [, opts]): each source is a getstats() table, a data table
--- (Profile:snapshot(), cprof.load), the name of a dump or pstats file, an object with a getstats()
--- method, a Stats, or nil (empty).  The first is loaded and the others are added, as
--- pstats.Stats(*args) does.  opts.stream: an object with :write(s) (default io.stdout).
function Stats.new(...)
  local n = select("#", ...)
  local args = { ... }
  local opts = {}
  if n >= 2 and is_opts(args[n]) then
    opts = args[n]
    n = n - 1
  end
  local self = setmetatable({
    stats = {},          -- key -> { cc, nc, tt, ct, callers }
    order = {},          -- keys in insertion order
    what = {},           -- key -> "Lua" | "main" | "C" (when known)
    lastline = {},       -- key -> last line defined (when known)
    lines = {},          -- key -> { [line] = { hits, time } } (profiles with line events)
    mem = {},            -- key -> memory record (profiles with memory; data.MEMORY_COLUMNS)
    memory = false,      -- some source had memory
    allocator = nil,     -- the allocator snapshot of the first source that has one
    meta = nil,          -- the dump's meta (data tables and files), summed over sources
    files = {},          -- "<ctime>    <path>" lines (Stats loaded from files)
    trees = {},          -- the sources' data tables, for cprof.export; false: one had no tree
    fcn_list = false,    -- sorted keys, or false for "Random listing order"
    sort_type = "",
    all_callees = nil,   -- computed lazily by the callees report
    total_calls = 0, prim_calls = 0, total_tt = 0, max_name_len = 0,
    top_level = {},
    timer = nil, unit = nil,
    stream = opts.stream or io.stdout,
  }, Stats)
  self:load_stats(args[1])
  self:get_top_level_stats()
  if n >= 2 then self:add(unpack(args, 2, n)) end
  return self
end
M.new = Stats.new

--- add(...): adds each source (anything Stats.new takes) as pstats' add does: the sources are
--- visited last to first, their files are appended, every function's cc, nc, tt and ct are
--- summed and so are its callers.  The sort order is lost (re-sort).  Returns self.
function Stats:add(...)
  local n = select("#", ...)
  local items = { ... }
  local allocator = self.allocator
  for i = n, 1, -1 do
    local item = items[i]
    if getmetatable(item) ~= Stats then item = Stats.new(item) end
    items[i] = item
    self:_load_stats_keep_unit(item)
    self.fcn_list = false
    self.all_callees = nil
  end
  -- The allocator snapshot: this Stats' own, else that of the first source (in the order
  -- given) that has one.
  self.allocator = allocator
  for i = 1, n do
    if self.allocator == nil then self.allocator = items[i].allocator end
  end
  self:get_top_level_stats()
  return self
end

-- _load_stats without replacing the timer and unit already known.
function Stats:_load_stats_keep_unit(other)
  local timer, unit = self.timer, self.unit
  self:_load_stats(other)
  if timer ~= nil then self.timer = timer end
  if unit ~= nil then self.unit = unit end
end

setmetatable(M, { __call = function(_, data, opts) return Stats.new(data, opts) end })

---------------------------------------------------------------------------
-- Sorting
---------------------------------------------------------------------------

--- sort_stats(...): sort by one or more keys (see module docs).  No argument
--- selects "Random listing order" (insertion order).  Returns self.
function Stats:sort_stats(...)
  local n = select("#", ...)
  if n == 0 then
    self.fcn_list = false
    return self
  end
  local fields = { ... }
  if n == 1 and type(fields[1]) == "number" then
    local legacy = M.LEGACY_SORT[fields[1]]
    if not legacy then
      error(sformat("cprof.stats: unknown sort key %s; %s", py_repr(fields[1]), valid_keys_text()), 2)
    end
    fields[1] = legacy
  elseif n >= 2 then
    local t0 = type(fields[1])
    for i = 2, n do
      if type(fields[i]) ~= t0 then
        error("cprof.stats: Can't have mixed argument type", 2)
      end
    end
  end

  local tuple, texts = {}, {}
  for i = 1, n do
    local def, err = M.resolve_sort_key(fields[i])
    if not def then error(err, 2) end
    for _, sel in ipairs(def[2]) do tuple[#tuple + 1] = sel end
    texts[#texts + 1] = def[3]
  end

  local rows = {}
  for i, key in ipairs(self.order) do
    local r = self.stats[key]
    local m = self.mem[key]
    rows[i] = {
      cc = r[1], nc = r[2], tt = r[3], ct = r[4],
      file = key[1], line = key[2], name = key[3],
      std = func_std_string(key), key = key,
      ab = m and m.alloc_bytes or 0, ac = m and m.alloc_count or 0,
      lb = m and m.alloc_bytes - m.free_bytes or 0,
    }
  end
  local lt = make_lt()
  local ntuple = #tuple
  stable_sort(rows, function(a, b)
    for j = 1, ntuple do
      local sel = tuple[j]
      local f, dir = sel[1], sel[2]
      local x, y = a[f], b[f]
      if lt(x, y) then return dir == 1 end
      if lt(y, x) then return dir == -1 end
    end
    return false
  end)

  local list = {}
  for i, row in ipairs(rows) do list[i] = row.key end
  self.fcn_list = list
  self.sort_type = concat(texts, ", ")
  return self
end

--- Reverse the current sort order (no effect when unsorted).  Returns self.
function Stats:reverse_order()
  local list = self.fcn_list
  if list and #list > 0 then
    local n = #list
    for i = 1, floor(n / 2) do
      list[i], list[n + 1 - i] = list[n + 1 - i], list[i]
    end
  end
  return self
end

---------------------------------------------------------------------------
-- Restrictions
---------------------------------------------------------------------------

-- Split a restriction string into Lua-pattern alternatives at every '|' that
-- is not escaped ('%|') and not inside a set ('[|]').  Returns the list, or
-- nil and an error for a malformed pattern (checked statically, so that a bad
-- pattern is reported whatever the names it is matched against; unbalanced
-- parentheses are errors in every alternative).
local function split_alternatives(p)
  local alts, start, i, n, depth = {}, 1, 1, #p, 0
  while i <= n do
    local c = ssub(p, i, i)
    if c == "%" then
      if i == n then return nil, "malformed pattern (ends with '%')" end
      local d = ssub(p, i + 1, i + 1)
      if d == "b" then
        if i + 3 > n then return nil, "missing arguments to '%b'" end
        i = i + 4
      elseif d == "f" then
        if ssub(p, i + 2, i + 2) ~= "[" then return nil, "missing '[' after '%f' in pattern" end
        i = i + 2
      else
        i = i + 2
      end
    elseif c == "[" then
      local j = i + 1
      if ssub(p, j, j) == "^" then j = j + 1 end
      repeat
        if j > n then return nil, "malformed pattern (missing ']')" end
        local ch = ssub(p, j, j)
        j = j + 1
        if ch == "%" and j <= n then j = j + 1 end
      until ssub(p, j, j) == "]"
      i = j + 1
    elseif c == "|" then
      if depth > 0 then return nil, "unfinished capture" end
      alts[#alts + 1] = ssub(p, start, i - 1)
      start = i + 1
      i = i + 1
    else
      if c == "(" then
        depth = depth + 1
      elseif c == ")" then
        if depth == 0 then return nil, "invalid pattern capture" end
        depth = depth - 1
      end
      i = i + 1
    end
  end
  if depth > 0 then return nil, "unfinished capture" end
  alts[#alts + 1] = ssub(p, start)
  return alts
end
M.split_alternatives = split_alternatives

--- Does `s` match the restriction pattern `pat`?  Raises on a malformed pattern.
function M.pattern_match(pat, s)
  local alts, err = split_alternatives(pat)
  if not alts then error(err, 0) end
  for _, a in ipairs(alts) do
    if sfind(s, a) then return true end
  end
  return false
end

--- Apply one restriction (pstats' eval_print_amount).  Returns the new list and msg.
function Stats:eval_print_amount(sel, list, msg)
  local new_list = list
  if type(sel) == "string" then
    local alts = split_alternatives(sel)
    local ok, res = false, nil
    if alts then
      ok, res = pcall(function()
        local out = {}
        for _, f in ipairs(list) do
          local s = func_std_string(f)
          for _, a in ipairs(alts) do
            if sfind(s, a) then out[#out + 1] = f; break end
          end
        end
        return out
      end)
    end
    if not ok then
      return list, msg .. sformat("   <Invalid regular expression %s>\n", py_str_repr(sel))
    end
    new_list = res
  elseif type(sel) == "number" then
    local count = #list
    if not is_int(sel) and sel >= 0.0 and sel < 1.0 then
      count = floor(count * sel + 0.5)
      new_list = slice(list, 1, count)
    elseif is_int(sel) and sel >= 0 and sel < count then
      new_list = slice(list, 1, sel)
    end
  end
  if #list ~= #new_list then
    msg = msg .. sformat("   List reduced from %d to %d due to restriction <%s>\n",
      #list, #new_list, py_repr(sel))
  end
  return new_list, msg
end

-- Collect output and write it to the stream in one call.
local function new_out()
  local buf = {}
  return buf, function(s) buf[#buf + 1] = s end
end

function Stats:_flush(buf)
  if #buf > 0 then self.stream:write(concat(buf)) end
end

--- The list to print after the restrictions (pstats' get_print_list).
--- Returns width, list, and the heading text (to print when the list is not empty).
function Stats:get_print_list(sel_list)
  local width = self.max_name_len
  local stat_list, msg
  if self.fcn_list and #self.fcn_list > 0 then
    stat_list = slice(self.fcn_list)
    msg = "   Ordered by: " .. self.sort_type .. "\n"
  else
    stat_list = slice(self.order)
    msg = "   Random listing order was used\n"
  end
  for i = 1, (sel_list.n or #sel_list) do
    stat_list, msg = self:eval_print_amount(sel_list[i], stat_list, msg)
  end
  if #stat_list == 0 then return 0, stat_list, nil end
  if #stat_list < #self.order then
    width = 0
    for _, f in ipairs(stat_list) do
      local w = display_len(func_std_string(f))
      if w > width then width = w end
    end
  end
  return width + 2, stat_list, msg
end

---------------------------------------------------------------------------
-- print_stats
---------------------------------------------------------------------------

--- The column header line (without newline).
function M.title_line()
  return "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)"
end

--- "nc" or "nc/cc".
local function calls_text(nc, cc)
  local c = int_str(nc)
  if nc ~= cc then c = c .. "/" .. int_str(cc) end
  return c
end
M.calls_text = calls_text

--- One print_stats row (without newline) for a key and its record.
local function stats_line(key, r)
  local cc, nc, tt, ct = r[1], r[2], r[3], r[4]
  return M.rjust(calls_text(nc, cc), 9) .. " "
    .. f8(tt) .. " "
    .. (nc == 0 and "        " or f8(tt / nc)) .. " "
    .. f8(ct) .. " "
    .. (cc == 0 and "        " or f8(ct / cc)) .. " "
    .. func_std_string(key)
end
M.stats_line = stats_line

-- The file lines, top-level lines and totals line (pstats' print_stats head).
function Stats:_print_head(out)
  for _, f in ipairs(self.files) do out(f .. "\n") end
  if #self.files > 0 then out("\n") end
  local indent = "        "
  for _, f in ipairs(self.top_level) do
    out(indent .. " " .. tostring(M.func_get_function_name(f)) .. "\n")
  end
  local s = indent .. " " .. int_str(self.total_calls) .. " function calls "
  if self.total_calls ~= self.prim_calls then
    s = s .. "(" .. int_str(self.prim_calls) .. " primitive calls) "
  end
  out(s .. "in " .. f3(self.total_tt) .. " seconds\n")
  out("\n")
end

function Stats:print_title(out)
  out(M.title_line() .. "\n")
end

function Stats:print_line(func, out)
  out(stats_line(func, self.stats[func]) .. "\n")
end

--- print_stats(...restrictions): integer count, float fraction in [0, 1), or a
--- string (Lua pattern, '|' separates alternatives) matched against the
--- standard name; applied in order.  Returns self.
function Stats:print_stats(...)
  local buf, out = new_out()
  self:_print_head(out)
  local _, list, msg = self:get_print_list({ n = select("#", ...), ... })
  if #list > 0 then
    out(msg .. "\n")
    self:print_title(out)
    for _, f in ipairs(list) do self:print_line(f, out) end
    out("\n\n")
  end
  self:_print_warnings(out)
  self:_flush(buf)
  return self
end

--- What the numbers lack, from the profile's meta (pstats has no such lines: they appear only
--- when something was lost).
function Stats:_print_warnings(out)
  local meta = self.meta or {}
  if type(meta.dropped) == "number" and meta.dropped > 0 then
    out(sformat("   cprof: memory ran out while profiling: %s events were not recorded\n\n",
                int_str(meta.dropped)))
  end
  if type(meta.tree_folded) == "number" and meta.tree_folded > 0 then
    out(sformat("   cprof: the call tree reached its cap of %s nodes: %s calls on deeper new paths" ..
                " were counted in their caller's node\n\n",
                int_str(meta.tree_cap or 0), int_str(meta.tree_folded)))
  end
  if type(meta.bias_clamped) == "number" and meta.bias_clamped > 0 then
    out(sformat("   cprof: %s times went below zero after subtracting the bias (%s s per event)" ..
                " and were shown as 0\n\n",
                int_str(meta.bias_clamped), sformat("%.3g", type(meta.bias) == "number" and meta.bias or 0)))
  end
end

---------------------------------------------------------------------------
-- print_lines: line_profiler's report
---------------------------------------------------------------------------

--- True when some function has line records (a profile made with lines = true).
function Stats:has_lines()
  return next(self.lines) ~= nil
end

--- The unit of the line report's Time columns: the timer's seconds per tick (1e-6 when the
--- sources did not say).
function Stats:line_unit()
  local unit = self.unit
  if type(unit) ~= "number" or not (unit > 0) or unit == huge then unit = 1e-6 end
  return unit
end

-- The lines of a source file ("\n" or "\r\n" endings), or nil when it cannot be read.
local function source_lines(file)
  if type(file) ~= "string" or file == "" or ssub(file, 1, 1) == "[" then return nil end
  local f = io.open(file, "rb")
  if not f then return nil end
  local ok, text = pcall(f.read, f, "*a")
  f:close()
  if not ok or type(text) ~= "string" then return nil end
  local lines = {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = (sgsub(line, "\r$", "")) end
  if ssub(text, -1) == "\n" then lines[#lines] = nil end
  return lines
end

-- line_profiler's default column widths (show_func), and its number formats.
local LINE_COLS = { line = 6, hits = 9, time = 12, perhit = 8, percent = 8 }

local function pyfmt_g(fmt, x)
  if is_nan(x) then return "nan" end
  if x == huge then return "inf" end
  if x == -huge then return "-inf" end
  return sformat(fmt, x)
end

-- One function of print_lines, as line_profiler's show_func prints it.
function Stats:_print_function_lines(key, lines, unit, sources, out)
  local nums = {}
  for line in pairs(lines) do nums[#nums + 1] = line end
  table.sort(nums)
  local total = 0
  for _, line in ipairs(nums) do total = total + lines[line].time end
  local first, last = key[2], self.lastline[key]
  if type(first) ~= "number" or first < 1 or nums[1] < first then first = nums[1] end
  if type(last) ~= "number" or last < first then last = nums[#nums] end
  if nums[#nums] > last then last = nums[#nums] end

  local file = key[1]
  if sources[file] == nil then sources[file] = source_lines(file) or false end
  local src = sources[file]

  out(sformat("Total time: %s s\n", pyfmt_g("%g", total)))
  out("File: " .. tostring(file) .. "\n")
  out("Function: " .. tostring(key[3]) .. " at line " .. int_str(key[2]) .. "\n")

  local display, wide = {}, { hits = LINE_COLS.hits, time = LINE_COLS.time, perhit = LINE_COLS.perhit }
  for _, line in ipairs(nums) do
    local r = lines[line]
    local ticks = r.time / unit
    local percent = total == 0 and "" or pyfmt_g("%5.1f", 100 * r.time / total)
    local time = pyfmt_g("%5.1f", ticks)
    if #time > LINE_COLS.time then time = pyfmt_g("%5.1g", ticks) end
    local perhit = ""
    if r.hits ~= 0 then
      perhit = pyfmt_g("%5.1f", ticks / r.hits)
      if #perhit > LINE_COLS.perhit then perhit = pyfmt_g("%5.1g", ticks / r.hits) end
    end
    local hits = int_str(r.hits)
    if #hits > LINE_COLS.hits then hits = pyfmt_g("%g", r.hits) end
    display[line] = { hits, time, perhit, percent }
    if #hits > wide.hits then wide.hits = #hits end
    if #time > wide.time then wide.time = #time end
    if #perhit > wide.perhit then wide.perhit = #perhit end
  end
  local function row(a, b, c, d, e, text)
    return M.rjust(a, LINE_COLS.line) .. " " .. M.rjust(b, wide.hits) .. " " .. M.rjust(c, wide.time)
      .. " " .. M.rjust(d, wide.perhit) .. " " .. M.rjust(e, LINE_COLS.percent) .. "  " .. text
  end
  local header = row("Line #", "Hits", "Time", "Per Hit", "% Time", "Line Contents")
  out("\n" .. header .. "\n" .. srep("=", #header) .. "\n")
  for line = first, last do
    local d = display[line] or { "", "", "", "" }
    out(row(int_str(line), d[1], d[2], d[3], d[4], src and src[line] or "") .. "\n")
  end
  out("\n")
end

--- print_lines(...restrictions): for each function with line records, its source lines with
--- hits, time, time per hit and share of the function's time, as line_profiler prints them
--- (Time in units of the timer, given on the "Timer unit:" line).  The functions are those
--- print_stats(...) would print, in the same order.  Returns self.
function Stats:print_lines(...)
  local buf, out = new_out()
  if not self:has_lines() then
    out("   cprof: the profile has no line events (make it with cprof.Profile{lines = true}, or" ..
        " CPROF_LINES=1 with cprof.auto)\n\n")
    self:_flush(buf)
    return self
  end
  local unit = self:line_unit()
  out(sformat("Timer unit: %s s\n\n", pyfmt_g("%g", unit)))
  local _, list = self:get_print_list({ n = select("#", ...), ... })
  local sources = {}
  for _, key in ipairs(list) do
    local lines = self.lines[key]
    if lines and next(lines) ~= nil then self:_print_function_lines(key, lines, unit, sources, out) end
  end
  self:_flush(buf)
  return self
end

---------------------------------------------------------------------------
-- print_memory, print_allocator
---------------------------------------------------------------------------

--- True when some function has memory numbers (a profile made with cprof's allocator).
function Stats:has_memory()
  return self.memory == true
end

local NO_MEMORY = {}
for _, c in ipairs(data_mod.MEMORY_COLUMNS) do NO_MEMORY[c] = 0 end

--- The header of the memory table (without newline).
function M.memory_title_line()
  return M.rjust("allocs", 9) .. " " .. M.rjust("bytes", 12) .. " " .. M.rjust("frees", 9) .. " "
    .. M.rjust("live bytes", 12) .. " " .. M.rjust("min", 8) .. " " .. M.rjust("max", 8) .. " "
    .. "filename:lineno(function)"
end

--- One row of the memory table (without newline): allocations, bytes allocated, frees, bytes
--- still live, the smallest and largest allocation (blank without allocations), the name.
local function memory_line(key, m)
  local sizes = m.alloc_count == 0
  return M.rjust(int_str(m.alloc_count), 9) .. " " .. M.rjust(int_str(m.alloc_bytes), 12) .. " "
    .. M.rjust(int_str(m.free_count), 9) .. " " .. M.rjust(int_str(m.alloc_bytes - m.free_bytes), 12)
    .. " " .. (sizes and srep(" ", 8) or M.rjust(int_str(m.min_size), 8))
    .. " " .. (sizes and srep(" ", 8) or M.rjust(int_str(m.max_size), 8))
    .. " " .. func_std_string(key)
end
M.memory_line = memory_line

--- print_memory(...restrictions): the memory charged to each function (cprof's allocator):
--- allocations, bytes, frees, live bytes, smallest and largest allocation, in print_stats'
--- layout (file lines, totals, order, restrictions, header, rows), sorted by the current sort.
--- Returns self.
function Stats:print_memory(...)
  local buf, out = new_out()
  if not self:has_memory() then
    out("   cprof: the profile has no memory numbers (make it with cprof's allocator installed:" ..
        " cprof.memory.install(), or CPROF_MEMORY=1 with cprof.auto)\n\n")
    self:_flush(buf)
    return self
  end
  for _, f in ipairs(self.files) do out(f .. "\n") end
  if #self.files > 0 then out("\n") end
  local t = NO_MEMORY
  for _, key in ipairs(self.order) do t = data_mod.add_memory(t, self.mem[key] or NO_MEMORY) end
  out(sformat("         %s allocations of %s bytes, %s frees of %s bytes, %s bytes live\n\n",
    int_str(t.alloc_count), int_str(t.alloc_bytes), int_str(t.free_count), int_str(t.free_bytes),
    int_str(t.alloc_bytes - t.free_bytes)))
  local _, list, msg = self:get_print_list({ n = select("#", ...), ... })
  if #list > 0 then
    out(msg .. "\n")
    out(M.memory_title_line() .. "\n")
    for _, f in ipairs(list) do out(memory_line(f, self.mem[f] or NO_MEMORY) .. "\n") end
    out("\n\n")
  end
  local meta = self.meta or {}
  if type(meta.memory_lost) == "number" and meta.memory_lost > 0 then
    out(sformat("   cprof: %s allocations were charged to no function (memory ran out while" ..
                " profiling)\n\n", int_str(meta.memory_lost)))
  end
  self:_flush(buf)
  return self
end

--- print_allocator(): the allocator snapshot of the profile (cprof.memory.stats() when the dump
--- was written) as cprof.memory.report prints it: kmemstat, free, Lua types, waste,
--- arena_stats, slab_stats.  Returns self, or prints one line when there is none.
function Stats:print_allocator()
  local buf, out = new_out()
  if self.allocator == nil then
    out("   cprof: the profile has no allocator snapshot (dumps written with cprof's allocator" ..
        " installed have one)\n\n")
  else
    require("cprof.memory").report({ write = function(_, ...)
      for i = 1, select("#", ...) do out((select(i, ...))) end
    end }, self.allocator)
  end
  self:_flush(buf)
  return self
end

---------------------------------------------------------------------------
-- print_callers / print_callees
---------------------------------------------------------------------------

-- Python's order of function-key tuples (file, line, name): C functions ('~') come last.
local function key_order()
  local lt = make_lt()
  return function(a, b)
    for i = 1, 3 do
      local x, y = a[i], b[i]
      if x ~= y then
        if type(x) ~= type(y) then return type(x) < type(y) end
        if lt(x, y) then return true end
        if lt(y, x) then return false end
      end
    end
    return false
  end
end

-- The keys of a call dict in tuple order (pstats' sorted(call_dict)).
local function sorted_keys(call_dict)
  local keys = {}
  for k in pairs(call_dict) do keys[#keys + 1] = k end
  table.sort(keys, key_order())
  return keys
end

--- Build self.all_callees: callee dicts keyed by caller (pstats' calc_callees).
function Stats:calc_callees()
  if self.all_callees then return self end
  local all = {}
  for _, func in ipairs(self.order) do
    all[func] = all[func] or {}
    for caller, edge in pairs(self.stats[func][5]) do
      all[caller] = all[caller] or {}
      all[caller][func] = edge
    end
  end
  self.all_callees = all
  return self
end

--- The heading of the callers/callees tables.
function Stats:print_call_heading(name_size, column_title, out)
  out(M.ljust("Function ", name_size) .. column_title .. "\n")
  -- pstats prints the sub-header when the first non-empty callers dict holds edge tuples
  -- (cProfile's), not call counts (profile.py's).  cprof's edges are always tuples; a dict
  -- that mixes both (pstats files of both kinds added) counts as tuples.
  for _, key in ipairs(self.order) do
    local callers = self.stats[key][5]
    if next(callers) ~= nil then
      for _, e in pairs(callers) do
        if type(e) == "table" then
          out(srep(" ", name_size) .. "    ncalls  tottime  cumtime\n")
          break
        end
      end
      break
    end
  end
end

--- One function and its edges: the first edge on the function's line, the others below.
function Stats:print_call_line(name_size, source, call_dict, arrow, out)
  local head = M.ljust(func_std_string(source), name_size) .. (arrow or "->") .. " "
  if next(call_dict) == nil then
    out(head .. "\n")
    return
  end
  local indent = ""
  for _, func in ipairs(sorted_keys(call_dict)) do
    local e = call_dict[func]
    local sub, left
    if type(e) == "table" then
      local nc, cc, tt, ct = e[1], e[2], e[3], e[4]
      sub = M.rjust(calls_text(nc, cc), 7 + 2 * #indent) .. " " .. f8(tt) .. " " .. f8(ct)
        .. "  " .. func_std_string(func)
      left = name_size + 1
    else
      -- profile.py's call count: pstats prints the other function's total cumtime
      local r = self.stats[func]
      sub = func_std_string(func) .. "(" .. py_repr(e) .. ") " .. (r and f8(r[4]) or "        ")
      left = name_size + 3
    end
    if indent == "" then
      out(head .. sub .. "\n")
    else
      out(srep(" ", left) .. sub .. "\n")
    end
    indent = " "
  end
end

-- print_callers and print_callees: `dicts(func)` gives the edges shown for func.
function Stats:_print_calls(title, arrow, dicts, sel)
  local buf, out = new_out()
  local width, list, msg = self:get_print_list(sel)
  if #list > 0 then
    out(msg .. "\n")
    self:print_call_heading(width, title, out)
    for _, f in ipairs(list) do self:print_call_line(width, f, dicts(f), arrow, out) end
    out("\n\n")
  end
  self:_flush(buf)
  return self
end

--- print_callers(...restrictions): for each function, the functions that called it, with
--- the numbers of each caller->function edge.  Restrictions as in print_stats.
function Stats:print_callers(...)
  return self:_print_calls("was called by...", "<-", function(f) return self.stats[f][5] end,
    { n = select("#", ...), ... })
end

--- print_callees(...restrictions): for each function, the functions it called.
function Stats:print_callees(...)
  self:calc_callees()
  local all = self.all_callees
  return self:_print_calls("called...", "->", function(f) return all[f] or {} end,
    { n = select("#", ...), ... })
end

---------------------------------------------------------------------------
-- strip_dirs, dump_stats
---------------------------------------------------------------------------

--- The file name without its directories.  Chunk names of strings ('[string "..."]') and
--- C functions ('~') are left alone.
local function strip_path(file)
  if type(file) ~= "string" or ssub(file, 1, 1) == "[" then return file end
  return smatch(file, "([^/]*)$")
end
M.strip_path = strip_path

--- strip_dirs(): removes the directories from every file name, as pstats does: functions
--- that collide are summed.  Unlike pstats, callers that collide are summed too (pstats keeps
--- one of them).  The sort order is lost (re-sort).  Returns self.
function Stats:strip_dirs()
  local old, old_order, old_what, old_last = self.stats, self.order, self.what, self.lastline
  local old_lines, old_mem = self.lines, self.mem
  self.stats, self.order, self.what, self.lastline = {}, {}, {}, {}
  self.lines, self.mem = {}, {}
  local function strip(key) return M.func_key(strip_path(key[1]), key[2], key[3]) end
  for _, key in ipairs(old_order) do
    local r = old[key]
    local callers = {}
    for _, ck in ipairs(sorted_keys(r[5])) do
      local edge = copy_edge(r[5][ck])
      local nk = strip(ck)
      if callers[nk] then callers[nk] = add_edge(callers[nk], edge) else callers[nk] = edge end
    end
    self:_put(strip(key), { r[1], r[2], r[3], r[4], callers }, old_what[key], old_last[key])
    self:_put_extra(strip(key), old_lines[key], old_mem[key])
  end
  self.fcn_list = false
  self.all_callees = nil
  self:get_top_level_stats()
  return self
end

--- dump_stats(path): writes the functions and their callers as a cprof dump (no call tree;
--- see cprof.data.from_stats), whatever the sources were (pstats files included): the numbers
--- read back identical.  Raises "cprof: <path>: <reason>" when it cannot.
function Stats:dump_stats(path)
  local ok, err = pcall(require("cprof.core").write_dump, path, data_mod.from_stats(self))
  if not ok then error(err, 0) end
  return self
end

--- export(format, file_or_stream [, opts]): the profile written for other tools (cprof.export).
function Stats:export(format, out, opts)
  return require("cprof.export").export(format, self, out, opts)
end

---------------------------------------------------------------------------
-- Programmatic access
---------------------------------------------------------------------------

-- The row of one key: the numbers of its record and its name split up.
function Stats:_row(key)
  local r = self.stats[key]
  local cc, nc, tt, ct = r[1], r[2], r[3], r[4]
  local what = self.what[key] or key_what(key)
  local file, line, name = key[1], key[2], key[3]
  if what == "C" and key[1] == "~" and ssub(name, 1, 1) == "<" and ssub(name, -1) == ">" then
    name = ssub(name, 2, -2)
  end
  local row = {
    key = key,
    file = file, line = line, name = name, what = what,
    ncalls = nc, pcalls = cc, tottime = tt, cumtime = ct,
    percall_tot = nc ~= 0 and tt / nc or nil,
    percall_cum = cc ~= 0 and ct / cc or nil,
    stdname = func_std_string(key),
  }
  if self.memory then
    local m = self.mem[key] or NO_MEMORY
    for _, c in ipairs(data_mod.MEMORY_COLUMNS) do row[c] = m[c] end
    row.live_bytes = m.alloc_bytes - m.free_bytes
  end
  local lines = self.lines[key]
  if lines then
    local nums = {}
    for l in pairs(lines) do nums[#nums + 1] = l end
    table.sort(nums)
    row.lines = {}
    for i, l in ipairs(nums) do row.lines[i] = { line = l, hits = lines[l].hits, time = lines[l].time } end
  end
  return row
end

--- Rows in the current order (sorted, or insertion order).  With memory, rows also have
--- alloc_count, alloc_bytes, free_count, free_bytes, live_bytes, min_size and max_size; a
--- function with line records has `lines`, a list of { line, hits, time } by line.
function Stats:entries()
  local list = (self.fcn_list and #self.fcn_list > 0) and self.fcn_list or self.order
  local rows = {}
  for i, key in ipairs(list) do rows[i] = self:_row(key) end
  return rows
end

--- select(...restrictions): the keys that print_stats(...) would print, in order, and what
--- each restriction did: a list of { restriction = r, from = n, to = m [, invalid = true] }
--- (`invalid` for a malformed pattern, which leaves the list as it was).
function Stats:select(...)
  local sel = { n = select("#", ...), ... }
  local list
  if self.fcn_list and #self.fcn_list > 0 then list = slice(self.fcn_list) else list = slice(self.order) end
  local log = {}
  for i = 1, sel.n do
    local before = #list
    local msg
    list, msg = self:eval_print_amount(sel[i], list, "")
    log[#log + 1] = { restriction = sel[i], from = before, to = #list,
                      invalid = sfind(msg, "<Invalid regular expression", 1, true) ~= nil or nil }
  end
  return list, log
end

-- The edges of a call dict as rows, in pstats' order (file, line, name; C functions last).
local function edge_rows(call_dict)
  local out = {}
  for _, k in ipairs(sorted_keys(call_dict)) do
    local e = call_dict[k]
    local row = { key = k, file = k[1], line = k[2], name = k[3], stdname = func_std_string(k) }
    if k[1] == "~" and k[2] == 0 and type(k[3]) == "string" and ssub(k[3], 1, 1) == "<"
        and ssub(k[3], -1) == ">" then
      row.name = ssub(k[3], 2, -2)
    end
    if type(e) == "table" then
      row.ncalls, row.pcalls, row.tottime, row.cumtime = e[1], e[2], e[3], e[4]
    else
      row.ncalls = e      -- profile.py's call count: no primitive count, no times
    end
    out[#out + 1] = row
  end
  return out
end

--- report_table(opts, ...restrictions): what print_stats(...) shows, as plain data:
---   { files, total_calls, primitive_calls, total_time, order (the "Ordered by" text, or nil
---     when unsorted), functions (how many before the restrictions), restrictions (see
---     select), rows }
--- Each row is an entries() row; with opts.callers / opts.callees it also has `callers` /
--- `callees`: lists of { file, line, name, stdname, ncalls, pcalls, tottime, cumtime } in
--- pstats' order (pcalls and the times are nil for profile.py's call-count edges).
function Stats:report_table(opts, ...)
  opts = opts or {}
  local list, log = self:select(...)
  if opts.callees then self:calc_callees() end
  local rows = {}
  for i, key in ipairs(list) do
    local row = self:_row(key)
    if opts.callers then row.callers = edge_rows(self.stats[key][5]) end
    if opts.callees then row.callees = edge_rows(self.all_callees[key] or {}) end
    rows[i] = row
  end
  local files = {}
  for i, f in ipairs(self.files) do files[i] = f end
  return {
    files = files,
    total_calls = self.total_calls, primitive_calls = self.prim_calls, total_time = self.total_tt,
    order = (self.fcn_list and #self.fcn_list > 0) and self.sort_type or nil,
    functions = #self.order,
    restrictions = log,
    rows = rows,
  }
end

return M
