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
--
-- Returns the Stats object that was printed.

local stats = require("cprof.stats")

local unpack = table.unpack or unpack

local report = {}

-- Calls st:method with `arg` spread out when it is a list of arguments.
local function apply(st, method, arg)
  if type(arg) == "table" then return st[method](st, unpack(arg, 1, #arg)) end
  return st[method](st, arg)
end

function report.print(stats_table, opts)
  opts = opts or {}
  local st = stats.new(stats_table, { stream = opts.stream })
  local sort = opts.sort
  if sort == nil then sort = "cumulative" end
  if sort == false then st:sort_stats() else apply(st, "sort_stats", sort) end
  if opts.limit == nil then st:print_stats() else apply(st, "print_stats", opts.limit) end
  return st
end

return report
