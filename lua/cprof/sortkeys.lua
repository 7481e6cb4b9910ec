--- cprof.sortkeys: the sort keys of Stats:sort_stats (pstats' 13 and cprof's memory keys), their
--- abbreviations, and the orders reports use: Python's string and key-tuple orders, and a stable
--- sort that survives an inconsistent order (NaN times).
--
-- Works on Lua 5.4 and LuaJIT/Lua 5.1.

local _ENV = require("cprof.env")()

local funckey = require "cprof.funckey"
local pyfmt = require "cprof.pyfmt"

local M = {}

local type, pairs, ipairs, pcall, select = type, pairs, ipairs, pcall, select
local sformat, ssub, sbyte, concat = string.format, string.sub, string.byte, table.concat
local py_repr, func_std_string = pyfmt.py_repr, funckey.func_std_string

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

--- True when definition `def` (of resolve_sort_key) sorts by memory: cprof's own keys, whose
--- order means nothing in a profile without memory numbers.
function M.is_memory_key(def)
  for i = NPSTATS_KEYS + 1, #SORT_DEFS do
    if SORT_DEFS[i] == def then return true end
  end
  return false
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

--- The arguments of sort_stats(...) resolved: the list of { field, direction } to compare by
--- and the "Ordered by" text; or nil and a message (pstats' rules: one legacy integer alone,
--- no mixed argument types).  At least one argument.
function M.resolve(...)
  local n = select("#", ...)
  local fields = { ... }
  if n == 1 and type(fields[1]) == "number" then
    local legacy = M.LEGACY_SORT[fields[1]]
    if not legacy then
      return nil, sformat("cprof.stats: unknown sort key %s; %s", py_repr(fields[1]), valid_keys_text())
    end
    fields[1] = legacy
  elseif n >= 2 then
    local t0 = type(fields[1])
    for i = 2, n do
      if type(fields[i]) ~= t0 then
        return nil, "cprof.stats: Can't have mixed argument type"
      end
    end
  end
  local tuple, texts = {}, {}
  for i = 1, n do
    local def, err = M.resolve_sort_key(fields[i])
    if not def then return nil, err end
    for _, sel in ipairs(def[2]) do tuple[#tuple + 1] = sel end
    texts[#texts + 1] = def[3]
  end
  return tuple, concat(texts, ", ")
end

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

-- Python's `<` on numbers and strings, for the current collation locale.
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

--- The keys of Stats `st` in its insertion order, stably sorted by `tuple` (from M.resolve).
function M.sorted(st, tuple)
  local rows = {}
  for i, key in ipairs(st.order) do
    local r = st.stats[key]
    local m = st.mem[key]
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
  return list
end

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

--- The keys of a call dict in tuple order (pstats' sorted(call_dict)).
function M.sorted_keys(call_dict)
  local keys = {}
  for k in pairs(call_dict) do keys[#keys + 1] = k end
  table.sort(keys, key_order())
  return keys
end

return M
