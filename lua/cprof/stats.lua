--- cprof.stats: the Stats class, a Lua pstats.Stats for cprof profiles and Python pstats files.
--
-- The data model follows CPython's pstats.Stats:
--
--   stats[key]  = { cc, nc, tt, ct, callers }      -- per function
--   callers[k2] = { nc, cc, tt, ct }               -- edge k2 -> key (note: nc first)
--
-- where `key` is an interned function key { file, line, name } (cprof.funckey).  An edge from
-- a profile.py pstats file is a call count instead of a { nc, cc, tt, ct } table.  Insertion
-- order (pstats' dict order) is kept in `order`; with a getstats() table as input it is the
-- order of the `entries` array.
--
-- cprof's own data rides along when the sources have it:
--
--   lines[key] = { [line] = { hits = n, time = seconds } }     -- line events
--   mem[key]   = { alloc_count, alloc_bytes, free_count, free_bytes, min_size, max_size }
--   allocator  = what cprof.memory.stats() returned when the dump was written
--
-- This file holds the class: construction from sources (read by cprof.loaders), add,
-- strip_dirs, sort_stats (cprof.sortkeys) and reverse_order, the totals, and the reports as
-- methods (printed by cprof.report.*, restricted by cprof.restrictions).  dump_stats writes
-- through cprof.dump; nothing else here needs the C extension.
--
-- Works on Lua 5.4 and LuaJIT/Lua 5.1.

local _ENV = require("cprof.env")()

local funckey = require "cprof.funckey"
local pyfmt = require "cprof.pyfmt"
local sortkeys = require "cprof.sortkeys"
local restrictions = require "cprof.restrictions"
local loaders = require "cprof.loaders"
local profdata = require "cprof.profdata"
local dump = require "cprof.dump"
local callers_report = require "cprof.report.callers"
local lines_report = require "cprof.report.lines"
local memory_report = require "cprof.report.memory"
local rows = require "cprof.report.rows"
local text_report = require "cprof.report.text"
local args = require "cprof.args"

local M = {}

local Stats = {}
Stats.__index = Stats
M.Stats = Stats
args.name_objects(Stats, "Stats")

local type, pairs, ipairs, select, error, pcall, setmetatable, getmetatable, rawget, tonumber =
  type, pairs, ipairs, select, error, pcall, setmetatable, getmetatable, rawget, tonumber
local next, floor, concat, rawequal = next, math.floor, table.concat, rawequal
local unpack = table.unpack or unpack
local func_std_string = funckey.func_std_string

-- The helpers of the modules above that Stats' users (and specs) reach through cprof.stats.
M.func_key, M.is_key, M.func_std_string, M.strip_path =
  funckey.func_key, funckey.is_key, funckey.func_std_string, funckey.strip_path
M.f8, M.py_repr, M.ctime = pyfmt.f8, pyfmt.py_repr, pyfmt.ctime
M.LEGACY_SORT, M.SortKey, M.sort_keys, M.resolve_sort_key =
  sortkeys.LEGACY_SORT, sortkeys.SortKey, sortkeys.sort_keys, sortkeys.resolve_sort_key
M.file_kind, M.file_line = loaders.file_kind, loaders.file_line
M.title_line, M.memory_title_line = text_report.title_line, memory_report.memory_title_line

---------------------------------------------------------------------------
-- Construction
---------------------------------------------------------------------------

--- Whether `v` is a Stats object.
function M.is_stats(v)
  return getmetatable(v) == Stats
end

-- What Stats.new and add take, for messages.
local SOURCES = "a profile, a getstats() or data table, a dump or pstats file name, or a Stats"
M.SOURCES = SOURCES

--- The kind of source `data` is ("none", "stats", "file", "getstats", "data", "profile": see
--- load_stats), or nil.  Tables are read raw and an object's getstats is looked up under
--- pcall: a hostile __index cannot stop the check.
local function source_kind(data)
  if data == nil then return "none" end
  if getmetatable(data) == Stats then return "stats" end
  if type(data) == "string" then return "file" end
  if type(data) == "table" and rawget(data, "entries") ~= nil then return "getstats" end
  if type(data) == "table" and rawget(data, "frames") ~= nil then return "data" end
  local ok, getstats = pcall(function() return data.getstats end)
  if ok and getstats ~= nil then return "profile" end
  return nil
end

M.source_kind = source_kind

-- Checks source argument #n of `fname`, at the line that called it.
local function check_source(data, n, fname)
  args.check(source_kind(data) ~= nil, data, n, fname, SOURCES, 1)
end

--- Load data: a getstats() table, a data table (Profile:snapshot(), cprof.load), the name of
--- a dump or pstats file, an object with a getstats() method, or a Stats.
function Stats:load_stats(data)
  args.check_self(getmetatable(self) == Stats, self, "load_stats", "Stats")
  check_source(data, 1, "load_stats")
  local kind = source_kind(data)
  if kind == "stats" then
    loaders.stats(self, data)
  elseif kind == "file" then
    loaders.file(self, data)
  elseif kind == "getstats" then
    loaders.getstats(self, data)
    self.trees = false
  elseif kind == "data" then
    loaders.data(self, data)
  elseif kind == "profile" then
    local st = data:getstats()
    if type(st) ~= "table" then
      error("cprof.stats: getstats() did not return a table", 0)
    end
    loaders.getstats(self, st)
    self.trees = false
  end
  return self
end

-- The records of a pstats file (cprof.pstats.marshal.to_records), as loaders.pstats loads them
-- (the marshal spec feeds records to a Stats this way).
Stats._load_marshal = loaders.pstats

--- Compute totals and the longest standard name (pstats' get_top_level_stats).
function Stats:get_top_level_stats()
  args.check_self(getmetatable(self) == Stats, self, "get_top_level_stats", "Stats")
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
    local n = pyfmt.display_len(funckey.display_name(key))
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
  local sources = { ... }
  local opts = {}
  if n >= 2 and is_opts(sources[n]) then
    opts = sources[n]
    n = n - 1
  end
  for i = 1, n do check_source(sources[i], i, "new") end
  if opts.stream ~= nil and not args.is_stream(opts.stream) then
    args.fail(n + 1, "new", "opts.stream: an object with a write method expected, got "
      .. args.typename(opts.stream))
  end
  local self = setmetatable({
    stats = {},          -- key -> { cc, nc, tt, ct, callers }
    order = {},          -- keys in insertion order
    what = {},           -- key -> "Lua" | "main" | "C" (when known)
    lastline = {},       -- key -> last line defined (when known)
    lines = {},          -- key -> { [line] = { hits, time } } (profiles with line events)
    mem = {},            -- key -> memory record (profiles with memory; profdata.MEMORY_COLUMNS)
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
    line_unit = nil,     -- print_lines' unit (seconds); nil: the timer's
    stream = opts.stream or io.stdout,
  }, Stats)
  self:load_stats(sources[1])
  self:get_top_level_stats()
  if n >= 2 then self:add(unpack(sources, 2, n)) end
  return self
end
M.new = Stats.new

--- add(...): adds each source (anything Stats.new takes) as pstats' add does: the sources are
--- visited last to first, their files are appended, every function's cc, nc, tt and ct are
--- summed and so are its callers.  The sort order is lost (re-sort).  Returns self.
function Stats:add(...)
  args.check_self(getmetatable(self) == Stats, self, "add", "Stats")
  local n = select("#", ...)
  local items = { ... }
  for i = 1, n do check_source(items[i], i, "add") end
  local allocator = self.allocator
  for i = n, 1, -1 do
    local item = items[i]
    -- Adding a Stats to itself doubles it, as in pstats: from a copy, so that the loop over
    -- its records does not see what it adds.
    if getmetatable(item) ~= Stats or rawequal(item, self) then item = Stats.new(item) end
    items[i] = item
    -- the timer and unit already known are kept
    local timer, unit = self.timer, self.unit
    loaders.stats(self, item)
    if timer ~= nil then self.timer = timer end
    if unit ~= nil then self.unit = unit end
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

setmetatable(M, { __call = function(_, ...) return Stats.new(...) end })

---------------------------------------------------------------------------
-- Sorting, strip_dirs
---------------------------------------------------------------------------

--- sort_stats(...): sort by one or more keys (cprof.sortkeys; docs/REPORT.md).  No argument
--- selects "Random listing order" (insertion order).  Returns self.
function Stats:sort_stats(...)
  args.check_self(getmetatable(self) == Stats, self, "sort_stats", "Stats")
  if select("#", ...) == 0 then
    self.fcn_list = false
    return self
  end
  local tuple, text = sortkeys.resolve(...)
  if not tuple then error(text, 2) end
  self.fcn_list = sortkeys.sorted(self, tuple)
  self.sort_type = text
  return self
end

--- Reverse the current sort order (no effect when unsorted).  Returns self.
function Stats:reverse_order()
  args.check_self(getmetatable(self) == Stats, self, "reverse_order", "Stats")
  local list = self.fcn_list
  if list and #list > 0 then
    local n = #list
    for i = 1, floor(n / 2) do
      list[i], list[n + 1 - i] = list[n + 1 - i], list[i]
    end
  end
  return self
end

--- strip_dirs(): removes the directories from every file name, as pstats does: functions
--- that collide are summed.  Unlike pstats, callers that collide are summed too (pstats keeps
--- one of them).  The sort order is lost (re-sort).  Returns self.
function Stats:strip_dirs()
  args.check_self(getmetatable(self) == Stats, self, "strip_dirs", "Stats")
  local old, old_order, old_what, old_last = self.stats, self.order, self.what, self.lastline
  local old_lines, old_mem = self.lines, self.mem
  self.stats, self.order, self.what, self.lastline = {}, {}, {}, {}
  self.lines, self.mem = {}, {}
  local function strip(key) return funckey.func_key(funckey.strip_path(key[1]), key[2], key[3]) end
  for _, key in ipairs(old_order) do
    local r = old[key]
    local callers = {}
    for _, ck in ipairs(sortkeys.sorted_keys(r[5])) do
      local edge = loaders.copy_edge(r[5][ck])
      local nk = strip(ck)
      if callers[nk] then callers[nk] = loaders.add_edge(callers[nk], edge) else callers[nk] = edge end
    end
    loaders.put(self, strip(key), { r[1], r[2], r[3], r[4], callers }, old_what[key], old_last[key])
    loaders.put_extra(self, strip(key), old_lines[key], old_mem[key])
  end
  self.fcn_list = false
  self.all_callees = nil
  self:get_top_level_stats()
  return self
end

--- Build self.all_callees: callee dicts keyed by caller (pstats' calc_callees).
function Stats:calc_callees()
  args.check_self(getmetatable(self) == Stats, self, "calc_callees", "Stats")
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

---------------------------------------------------------------------------
-- Reports
---------------------------------------------------------------------------

--- True when some function has line records (a profile made with lines = true).
function Stats:has_lines()
  args.check_self(getmetatable(self) == Stats, self, "has_lines", "Stats")
  return next(self.lines) ~= nil
end

--- True when some function has memory numbers (a profile made with cprof's allocator).
function Stats:has_memory()
  args.check_self(getmetatable(self) == Stats, self, "has_memory", "Stats")
  return self.memory == true
end

-- Checks self of report method `fname`.  Restrictions of other types than counts, fractions
-- and patterns do nothing, as in pstats.
local function check_report(st, fname)
  args.check_self(getmetatable(st) == Stats, st, fname, "Stats", 1)
end

-- Runs printer(st, out, sel) with `out` collecting the text, then writes it to st's stream in
-- one call.  `sel` holds the restrictions (the arguments after `printer`).  Returns st.
local function print_report(st, printer, ...)
  local buf = {}
  printer(st, function(s) buf[#buf + 1] = s end, { n = select("#", ...), ... })
  if #buf > 0 then st.stream:write(concat(buf)) end
  return st
end

--- print_stats(...restrictions): integer count, float fraction in [0, 1), or a string (Lua
--- pattern, '|' separates alternatives) matched against the standard name; applied in order.
--- Returns self.
function Stats:print_stats(...)
  check_report(self, "print_stats")
  return print_report(self, text_report.print_stats, ...)
end

--- print_callers(...restrictions): for each function, the functions that called it, with
--- the numbers of each caller->function edge.  Restrictions as in print_stats.
function Stats:print_callers(...)
  check_report(self, "print_callers")
  return print_report(self, callers_report.print_callers, ...)
end

--- print_callees(...restrictions): for each function, the functions it called.
function Stats:print_callees(...)
  check_report(self, "print_callees")
  self:calc_callees()
  return print_report(self, callers_report.print_callees, ...)
end

--- print_lines(...restrictions): for each function with line records, its source lines with
--- hits, time, time per hit and share of the function's time, as line_profiler prints them
--- (Time in units of the timer, or of st.line_unit seconds when set: the "Timer unit:" line
--- gives it).  The functions are those
--- print_stats(...) would print, in the same order.  Returns self.
function Stats:print_lines(...)
  check_report(self, "print_lines")
  return print_report(self, lines_report.print_lines, ...)
end

--- print_memory(...restrictions): the memory charged to each function (cprof's allocator):
--- allocations, bytes, frees, live bytes, smallest and largest allocation, in print_stats'
--- layout (file lines, totals, order, restrictions, header, rows), sorted by the current sort.
--- Returns self.
function Stats:print_memory(...)
  check_report(self, "print_memory")
  return print_report(self, memory_report.print_memory, ...)
end

--- print_allocator(): the allocator snapshot of the profile (cprof.memory.stats() when the dump
--- was written) as cprof.memory.report prints it: kmemstat, free, Lua types, waste,
--- arena_stats, slab_stats.  Returns self, or prints one line when there is none.
function Stats:print_allocator()
  check_report(self, "print_allocator")
  return print_report(self, memory_report.print_allocator)
end

--- print_tree([opts]): the call tree top-down, as cprof-stats --tree prints it
--- (cprof.report.tree: depth, min_percent, memory, and pprof's focus and hide, each a pattern
--- or a list of them).  Needs sources with a call tree (cprof dumps, profiles, their data).
--- Returns self.
function Stats:print_tree(opts)
  check_report(self, "print_tree")
  args.check(opts == nil or type(opts) == "table", opts, 1, "print_tree", "table of options")
  local m = require("cprof.export").model(self)
  local buf = {}
  require("cprof.report.tree").write(m, function(s) buf[#buf + 1] = s end, opts)
  self.stream:write(concat(buf))
  return self
end

---------------------------------------------------------------------------
-- The reports as data, and dumps
---------------------------------------------------------------------------

--- Rows in the current order (sorted, or insertion order).  With memory, rows also have
--- alloc_count, alloc_bytes, free_count, free_bytes, live_bytes, min_size and max_size; a
--- function with line records has `lines`, a list of { line, hits, time } by line.
function Stats:entries()
  args.check_self(getmetatable(self) == Stats, self, "entries", "Stats")
  return rows.entries(self)
end

-- A time as get_stats_profile gives it: rounded through pstats' f8 ("%8.3f") and read back.
local function f8_number(x)
  return tonumber(string.format("%.3f", x))
end

--- get_stats_profile(): pstats' get_stats_profile (Python 3.9+), the report as data:
---   { total_tt, func_profiles = { [name] = { ncalls, tottime, percall_tottime, cumtime,
---     percall_cumtime, file_name, line_number } }, names }
--- in the current order (sorted, or insertion order). As in CPython, the times are rounded to
--- what the report prints (f8), a percall whose count is 0 is -1, ncalls is the report's text
--- ("75/3"), and func_profiles is keyed by the function's name alone, so that of functions
--- sharing a name the last one stays; `names` (cprof's) lists the names in the order of
--- Python's dict (each where it first came).
function Stats:get_stats_profile()
  args.check_self(getmetatable(self) == Stats, self, "get_stats_profile", "Stats")
  local list = self.fcn_list or self.order
  local profiles, names = {}, {}
  if #list == 0 then return { total_tt = 0, func_profiles = profiles, names = names } end
  for _, key in ipairs(list) do
    local cc, nc, tt, ct = unpack(self.stats[key], 1, 4)
    local name = key[3]
    if profiles[name] == nil then names[#names + 1] = name end
    profiles[name] = {
      ncalls = text_report.calls_text(nc, cc),
      tottime = f8_number(tt),
      percall_tottime = nc == 0 and -1 or f8_number(tt / nc),
      cumtime = f8_number(ct),
      percall_cumtime = cc == 0 and -1 or f8_number(ct / cc),
      file_name = key[1],
      line_number = key[2],
    }
  end
  return { total_tt = f8_number(self.total_tt), func_profiles = profiles, names = names }
end

--- select(...restrictions): the keys that print_stats(...) would print, in order, and what
--- each restriction did: a list of { restriction = r, from = n, to = m [, invalid = true] }
--- (`invalid` for a malformed pattern, which leaves the list as it was).
function Stats:select(...)
  check_report(self, "select")
  return restrictions.select(self, ...)
end

--- report_table(opts, ...restrictions): what print_stats(...) shows, as plain data:
---   { files, total_calls, primitive_calls, total_time, order (the "Ordered by" text, or nil
---     when unsorted), functions (how many before the restrictions), restrictions (see
---     select), rows }
--- Each row is an entries() row; with opts.callers / opts.callees it also has `callers` /
--- `callees`: lists of { file, line, name, stdname, ncalls, pcalls, tottime, cumtime } in
--- pstats' order (pcalls and the times are nil for profile.py's call-count edges).
function Stats:report_table(opts, ...)
  args.check_self(getmetatable(self) == Stats, self, "report_table", "Stats")
  args.check(opts == nil or type(opts) == "table", opts, 1, "report_table", "options table")
  opts = opts or {}
  if opts.callees then self:calc_callees() end
  return rows.report_table(self, opts, ...)
end

--- dump_stats(path): writes the functions and their callers as a cprof dump (no call tree;
--- see cprof.profdata.from_stats), whatever the sources were (pstats files included): the numbers
--- read back identical.  Raises "cprof: <path>: <reason>" when it cannot.
function Stats:dump_stats(path)
  args.check_self(getmetatable(self) == Stats, self, "dump_stats", "Stats")
  dump.check_path(path, "dump_stats", 2)
  dump.write(path, profdata.from_stats(self))
  return self
end

--- export(format, file_or_stream [, opts]): the profile written for other tools (cprof.export,
--- docs/EXPORTS.md).
function Stats:export(format, out, opts)
  return require("cprof.export").export(format, self, out, opts)
end

return M
