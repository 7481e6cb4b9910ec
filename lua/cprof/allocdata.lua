--- cprof.allocdata: the allocator snapshot in profile data (a dump taken with cprof's allocator
--- installed): the meta keys mem_* and the groups mem_caches, mem_types, mem_arenas and
--- mem_free_lists of cprof.profdata, to and from the table cprof.memory.stats() returns.
--
--   allocdata.get(d)      the allocator snapshot of d as cprof.memory.stats() returns it, or nil
--   allocdata.set(d, s)   stores a cprof.memory.stats() table in d (groups, meta keys); d
--
-- Pure Lua; works on Lua 5.4 and LuaJIT.

local _ENV = require("cprof.env")()

local profdata = require "cprof.profdata"
local args = require "cprof.args"

local M = {}

local type, pairs, ipairs, tostring = type, pairs, ipairs, tostring

-- What a missing value of column c stands for: "" for the names, else 0.
local function default(c)
  return (c == "name" or c == "type" or c == "source") and "" or 0
end

-- Row i of a group as a table of the given columns.
local function row_of(g, i, cols)
  local r = {}
  for _, c in ipairs(cols) do
    local col = g[c]
    local v = type(col) == "table" and col[i] or nil
    if v == nil then v = default(c) end
    r[c] = v
  end
  return r
end

local function group_rows(d, name, cols)
  local g = d[name]
  local out = {}
  if type(g) ~= "table" then return out end
  local n = g.n
  if type(n) ~= "number" or n < 0 or n % 1 ~= 0 then
    profdata.fail("'%s.n' must be a count, not %s", name, tostring(n))
  end
  for i = 1, n do out[i] = row_of(g, i, cols) end
  return out
end

--- The allocator snapshot of data d (a dump taken with cprof's allocator installed), in the
--- shape cprof.memory.stats() returns: the totals (from the meta keys mem_*), caches (with
--- total = objects * objsize and alloc = live * objsize), types, and arenas (with their
--- free_lists).  nil when d has none.
function M.get(d)
  if type(d) ~= "table" or not profdata.has_allocator(d) then return nil end
  local meta = type(d.meta) == "table" and d.meta or {}
  local s = {}
  for _, k in ipairs(profdata.MEM_TOTALS) do
    local v = meta["mem_" .. k]
    s[k] = type(v) == "number" and v or 0
  end
  if type(meta.mem_limit) == "number" then s.limit = meta.mem_limit end
  s.caches = group_rows(d, "mem_caches", profdata.MEM_CACHE_COLUMNS)
  for _, c in ipairs(s.caches) do
    c.total, c.alloc = c.objects * c.objsize, c.live * c.objsize
  end
  s.types = group_rows(d, "mem_types", profdata.MEM_TYPE_COLUMNS)
  s.arenas = group_rows(d, "mem_arenas", profdata.MEM_ARENA_COLUMNS)
  for _, a in ipairs(s.arenas) do a.free_lists = {} end
  for _, f in ipairs(group_rows(d, "mem_free_lists", profdata.MEM_FREE_LIST_COLUMNS)) do
    local a = s.arenas[f.arena]
    if not a then profdata.fail("mem_free_lists: arena %s is not an arena index", tostring(f.arena)) end
    a.free_lists[f.list] = (a.free_lists[f.list] or 0) + f.segs
  end
  return s
end

--- Stores the allocator snapshot `s` (what cprof.memory.stats() returns) in data d: the totals
--- as meta keys mem_<name> (mem_limit only when there is a limit) and the groups mem_caches,
--- mem_types, mem_arenas and mem_free_lists.  Returns d.
function M.set(d, s)
  args.check(type(d) == "table", d, 1, "set", "profile data")
  if type(s) ~= "table" then profdata.fail("set_allocator needs a table of allocator statistics") end
  d.meta = d.meta or {}
  for _, k in ipairs(profdata.MEM_TOTALS) do d.meta["mem_" .. k] = s[k] or 0 end
  d.meta.mem_limit = s.limit
  local function group(rows, cols)
    local g = profdata.new_section(cols)
    for i, r in ipairs(rows or {}) do
      for _, c in ipairs(cols) do
        local v = r[c]
        if v == nil then v = default(c) end
        g[c][i] = v
      end
      g.n = i
    end
    return g
  end
  d.mem_caches = group(s.caches, profdata.MEM_CACHE_COLUMNS)
  d.mem_types = group(s.types, profdata.MEM_TYPE_COLUMNS)
  d.mem_arenas = group(s.arenas, profdata.MEM_ARENA_COLUMNS)
  local fl = profdata.new_section(profdata.MEM_FREE_LIST_COLUMNS)
  for i, a in ipairs(s.arenas or {}) do
    local lists = {}
    for list in pairs(a.free_lists or {}) do lists[#lists + 1] = list end
    table.sort(lists)
    for _, list in ipairs(lists) do
      local j = fl.n + 1
      fl.n = j
      fl.arena[j], fl.list[j], fl.segs[j] = i, list, a.free_lists[list]
    end
  end
  d.mem_free_lists = fl
  return d
end

return M
