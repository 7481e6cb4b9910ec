--- cprof.loaders: how records get into a Stats — from each kind of source (getstats() tables,
--- data tables, cprof dumps and Python pstats files, other Stats), checked, and merged as
--- pstats' add_func_stats merges them.
--
-- A Stats holds (cprof.stats describes the fields):
--
--   stats[key]  = { cc, nc, tt, ct, callers }      -- per function
--   callers[k2] = { nc, cc, tt, ct }               -- edge k2 -> key (note: nc first)
--
-- where an edge from a profile.py pstats file is a call count instead of a table; and, when
-- the sources have them, line records, memory records and the allocator snapshot.
--
-- Works on Lua 5.4 and LuaJIT/Lua 5.1.

local _ENV = require("cprof.env")()

local funckey = require "cprof.funckey"
local pyfmt = require "cprof.pyfmt"
local profdata = require "cprof.profdata"
local allocdata = require "cprof.allocdata"
local bias = require "cprof.bias"
local dump = require "cprof.dump"
local marshal = require "cprof.pstats.marshal"
local args = require "cprof.args"

local M = {}

local type, pairs, ipairs, tostring, error, pcall = type, pairs, ipairs, tostring, error, pcall
local sformat = string.format
local func_key, norm_line = funckey.func_key, funckey.norm_line

--- The sum of two edges.  Edges are tuples { nc, cc, tt, ct } (cProfile), summed elementwise,
--- or call counts (profile.py's "old-style" callers, from a pstats file), summed.  A count added
--- to a tuple adds to its nc and cc (pstats cannot add the two kinds at all).
function M.add_edge(a, b)
  local ta, tb = type(a) == "table", type(b) == "table"
  if ta and tb then return { a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4] } end
  if not ta and not tb then return a + b end
  if ta then return { a[1] + b, a[2] + b, a[3], a[4] } end
  return { a + b[1], a + b[2], b[3], b[4] }
end

--- A copy of an edge (a tuple or a call count).
function M.copy_edge(e)
  if type(e) == "table" then return { e[1], e[2], e[3], e[4] } end
  return e
end

--- Stores a record { cc, nc, tt, ct, callers } of `key` in st, merging it with the one already
--- there (pstats' add_func_stats); `what` and `lastline` are kept when st has none yet.
function M.put(st, key, rec, what, lastline)
  local old = st.stats[key]
  if not old then
    st.stats[key] = rec
    st.order[#st.order + 1] = key
  else
    local callers = old[5]
    for k, edge in pairs(rec[5]) do
      if callers[k] then callers[k] = M.add_edge(callers[k], edge) else callers[k] = edge end
    end
    st.stats[key] = { old[1] + rec[1], old[2] + rec[2], old[3] + rec[3], old[4] + rec[4], callers }
  end
  if what and not st.what[key] then st.what[key] = what end
  if lastline and not st.lastline[key] then st.lastline[key] = lastline end
end

--- Adds line records { [line] = { hits, time } } and a memory record to a function's own
--- (either may be nil): line records are summed by line, memory by cprof.profdata.add_memory.
function M.put_extra(st, key, lines, mem)
  if lines then
    local mine = st.lines[key]
    if not mine then
      mine = {}
      st.lines[key] = mine
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
    st.memory = true
    local old = st.mem[key]
    if old then
      st.mem[key] = profdata.add_memory(old, mem)
    else
      local m = {}
      for _, c in ipairs(profdata.MEMORY_COLUMNS) do m[c] = mem[c] end
      st.mem[key] = m
    end
  end
end

-- Keep the meta of a loaded profile (the first one's, summed as cprof.profdata.merge_meta does).
local function add_meta(st, meta)
  if type(meta) ~= "table" then return end
  if st.meta then
    st.meta = profdata.merge_meta(st.meta, meta)
  else
    local m = {}
    for k, v in pairs(meta) do m[k] = v end
    st.meta = m
  end
end

---------------------------------------------------------------------------
-- getstats() tables
---------------------------------------------------------------------------

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
    return func_key("~", 0, "<" .. name .. ">")
  end
  local file = e.file
  if type(file) ~= "string" then
    error(sformat("cprof.stats: %s: 'file' must be a string", where), 0)
  end
  return func_key(file, check_number(e.line or 0, "line", where), name)
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
  for _, c in ipairs(profdata.MEMORY_COLUMNS) do m[c] = check_number(e[c] or 0, c, where) end
  return m
end

-- The callers of a getstats() entry as edges keyed by function key (`keys`: the entries' keys).
local function entry_callers(e, keys, where)
  local callers = {}
  if e.callers == nil then return callers end
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
    if callers[ck] then callers[ck] = M.add_edge(callers[ck], edge) else callers[ck] = edge end
  end
  return callers
end

--- Loads a getstats() table (docs/API.md) into st, checking every field it uses.
function M.getstats(st, data)
  local entries = data.entries
  if type(entries) ~= "table" then
    error("cprof.stats: data has no 'entries' array", 0)
  end
  if data.timer ~= nil then st.timer = data.timer end
  if data.unit ~= nil then st.unit = data.unit end
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
    local callers = entry_callers(e, keys, where)
    local what = e.what
    if what ~= "C" and what ~= "main" and what ~= "Lua" then what = nil end
    local lastline = type(e.lastline) == "number" and e.lastline or nil
    M.put(st, keys[i], { cc, nc, tt, ct, callers }, what, lastline)
    M.put_extra(st, keys[i], entry_lines(e, where), entry_memory(e, where))
  end
  local meta = data.meta
  -- A profile's getstats() has the timer's failed readings outside its meta.
  if type(data.timer_errors) == "number" and (type(meta) ~= "table" or meta.timer_errors == nil) then
    local m = { timer_errors = data.timer_errors }
    if type(meta) == "table" then
      for k, v in pairs(meta) do m[k] = v end
    end
    meta = m
  end
  add_meta(st, meta)
end

---------------------------------------------------------------------------
-- Data tables, other Stats, pstats records
---------------------------------------------------------------------------

--- Loads a data table (snapshot, dump) into st: the bias subtracted (once: cprof.bias knows
--- when it was), then its functions, and its allocator snapshot when st has none yet.
function M.data(st, d)
  local ok, applied = pcall(bias.apply, d)
  -- Malformed data: cprof.profdata.to_stats says what is wrong with it.
  M.getstats(st, profdata.to_stats(ok and applied or d))
  if st.trees then st.trees[#st.trees + 1] = ok and applied or d end
  if st.allocator == nil then st.allocator = allocdata.get(d) end
end

--- Copies everything of Stats `other` into st (its records merged into st's own).
function M.stats(st, other)
  for _, key in ipairs(other.order) do
    local r = other.stats[key]
    local callers = {}
    for k, e in pairs(r[5]) do callers[k] = M.copy_edge(e) end
    M.put(st, key, { r[1], r[2], r[3], r[4], callers }, other.what[key], other.lastline[key])
    M.put_extra(st, key, other.lines[key], other.mem[key])
  end
  if other.memory then st.memory = true end
  if not other.trees then st.trees = false end
  for _, t in ipairs(st.trees and other.trees or {}) do st.trees[#st.trees + 1] = t end
  if st.allocator == nil then st.allocator = other.allocator end
  for _, f in ipairs(other.files) do st.files[#st.files + 1] = f end
  st.timer, st.unit = other.timer, other.unit
  add_meta(st, other.meta)
end

--- Loads the records of a pstats file (cprof.pstats.marshal.to_records) into st, in the file's
--- order.
function M.pstats(st, records)
  for _, rec in ipairs(records) do
    local callers = {}
    for _, c in ipairs(rec.callers) do
      local ck = func_key(c[1], c[2], c[3])
      callers[ck] = M.copy_edge(c[4])
    end
    M.put(st, func_key(rec[1], rec[2], rec[3]), { rec[4], rec[5], rec[6], rec[7], callers })
  end
end

---------------------------------------------------------------------------
-- Files
---------------------------------------------------------------------------

--- The kind of the file at `path` from its first bytes: "cprof" (a cprof dump, magic
--- "\x89CPROF\r\n"), "pstats" (a Python marshal dict: '{', with or without the FLAG_REF
--- bit), or nil when it is neither or cannot be read.
function M.file_kind(path)
  args.check(type(path) == "string", path, 1, "file_kind", "file name")
  if not dump.is_regular(path) then return nil end -- a FIFO's opening would wait for a writer
  local f = io.open(path, "rb")
  if not f then return nil end
  local ok, head = pcall(f.read, f, 8)
  f:close()
  if not ok or type(head) ~= "string" then return nil end
  if head == "\137CPROF\r\n" then return "cprof" end
  if marshal.is_marshal(head) then return "pstats" end
  return nil
end

--- The `files` line of a dump: "<ctime(mtime)>    <path>", as pstats writes it, or the path
--- alone when the modification time cannot be read (as pstats does when os.stat fails).
function M.file_line(path)
  args.check(type(path) == "string", path, 1, "file_line", "file name")
  local mt = dump.mtime(path)
  if mt then return pyfmt.ctime(mt) .. "    " .. path end
  return path
end

--- Loads a file into st: a Python pstats file (cprof.pstats.marshal), or a cprof dump (read by
--- cprof.dump, which also explains what is wrong with anything else).  Errors are
--- "cprof: <path>: <reason>".
function M.file(st, path)
  dump.check_file(path)
  if M.file_kind(path) == "pstats" then
    M.pstats(st, marshal.load_stats(path))
    st.trees = false
  else
    M.data(st, dump.read(path))
  end
  st.files[#st.files + 1] = M.file_line(path)
end

--- What the file at `path` is, once read whole and checked ("cprof dump, format version 2, 11
--- sections, checksums match"; "Python pstats file, no checksums"), as cprof-stats --verify says
--- it.  Raises "cprof: <path>: <reason>" for a file that cannot be read or is damaged.
function M.verify(path)
  dump.check_file(path)
  if M.file_kind(path) == "pstats" then
    marshal.load_stats(path)
    return "Python pstats file, no checksums"
  end
  return "cprof dump, " .. dump.verify(path)
end

return M
