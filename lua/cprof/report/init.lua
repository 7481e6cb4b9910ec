--- cprof.report: print a profile the way cProfile's Profile.print_stats does.
--
--   report.print(stats_table, opts)
--
-- stats_table: a Profile:getstats() table, an object with getstats(), or a
-- cprof.stats Stats object.
-- opts.sort:   a sort key ("cumulative" by default), a legacy integer
--              (-1, 0, 1, 2), a list of keys ({ "ncalls", "name" }), or false
--              for insertion order ("Random listing order was used").
-- opts.limit:  a restriction for print_stats (integer count, fraction in
--              [0, 1) or a pattern string), or a list of restrictions applied
--              in order; default none.
-- opts.stream: an object with :write(s); default io.stdout.
-- opts.strip_dirs, opts.reverse, opts.views: see report.show.
--
-- Returns the Stats object that was printed.
--
--   report.show(st, opts)
--
-- The same for a Stats object that already exists (several dumps added, say).

local _ENV = require("cprof.env")()

local stats = require("cprof.stats")
local sortkeys = require("cprof.sortkeys")
local args = require("cprof.args")

local unpack = table.unpack or unpack

local report = {}

-- Calls st:method with `arg` spread out when it is a list of arguments.
local function apply(st, method, arg)
  if type(arg) == "table" then return st[method](st, unpack(arg, 1, #arg)) end
  return st[method](st, arg)
end

local VIEWS = { stats = "print_stats", callers = "print_callers", callees = "print_callees",
                lines = "print_lines", memory = "print_memory", allocator = "print_allocator" }
-- Views that take no restrictions.
local WHOLE = { allocator = true }

--- report.sort_error(sort): what is wrong with a sort (a key, a legacy integer, a list of keys,
--- or false), or nil when it is a good one.
function report.sort_error(sort)
  if sort == false then return nil end
  local ok, err
  if type(sort) == "table" then ok, err = sortkeys.resolve(unpack(sort, 1, #sort))
  else ok, err = sortkeys.resolve(sort) end
  if not ok then return err end
  return nil
end

-- Checks the options of report.print/show/prepare (`fname`), at the caller's line.
local function check_opts(opts, fname)
  args.check(opts == nil or type(opts) == "table", opts, 2, fname, "options table", 1)
  if opts == nil then return {} end
  local err = opts.sort ~= nil and report.sort_error(opts.sort)
  if err then error(err, 3) end
  if opts.stream ~= nil and not args.is_stream(opts.stream) then
    args.fail(2, fname, "opts.stream: an object with a write method expected, got "
      .. args.typename(opts.stream), 1)
  end
  for _, view in ipairs(opts.views or {}) do
    if not VIEWS[view] then
      error(string.format("cprof.report: unknown view '%s' (stats, callers, callees, lines, memory or"
        .. " allocator)", tostring(view)), 3)
    end
  end
  return opts
end

--- report.prepare(st, opts): what report.show does before printing: opts.stream, opts.strip_dirs,
--- opts.sort (default cumulative; false for insertion order), opts.reverse and opts.line_unit
--- (st.line_unit: the seconds per unit of print_lines' Time columns).  Returns st.
function report.prepare(st, opts)
  args.check(stats.is_stats(st), st, 1, "prepare", "Stats")
  opts = check_opts(opts, "prepare")
  if opts.stream then st.stream = opts.stream end
  if opts.line_unit then st.line_unit = opts.line_unit end
  if opts.strip_dirs then st:strip_dirs() end
  local sort = opts.sort
  if sort == nil then sort = "cumulative" end
  if sort == false then st:sort_stats() else apply(st, "sort_stats", sort) end
  if opts.reverse then st:reverse_order() end
  return st
end

--- report.show(st, opts): prints an existing Stats object.  Besides sort, limit and stream
--- (stream replaces st.stream when given), it takes:
---   opts.strip_dirs: strip the directories from file names first (st:strip_dirs()).
---   opts.reverse:    reverse the sorted order (st:reverse_order()).
---   opts.views:      a list of "stats", "callers", "callees", "lines" (print_lines),
---                    "memory" (print_memory) and "allocator" (print_allocator), printed in
---                    the order given, each with the same restrictions (the allocator report
---                    takes none); default { "stats" }.
function report.show(st, opts)
  args.check(stats.is_stats(st), st, 1, "show", "Stats")
  opts = check_opts(opts, "show")
  report.prepare(st, opts)
  return report.print_views(st, opts)
end

--- report.print_views(st, opts): what report.show does after report.prepare: prints opts.views
--- with the restrictions opts.limit.  Returns st.
function report.print_views(st, opts)
  args.check(stats.is_stats(st), st, 1, "print_views", "Stats")
  opts = check_opts(opts, "print_views")
  for _, view in ipairs(opts.views or { "stats" }) do
    local method = VIEWS[view]
    if opts.limit == nil or WHOLE[view] then st[method](st) else apply(st, method, opts.limit) end
  end
  return st
end

function report.print(stats_table, opts)
  args.check(stats.source_kind(stats_table) ~= nil, stats_table, 1, "print", stats.SOURCES)
  opts = check_opts(opts, "print")
  local st = stats.new(stats_table, { stream = opts.stream })
  return report.show(st, opts)
end

return report
