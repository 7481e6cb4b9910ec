--- cprof.browser.views: cprof's own views as commands of the browser (cprof-stats -i), beside
--- pstats' commands — what cprof-stats prints with --tree, --lines, --memory, --leaks,
--- --memory --stacks, --memory-types, --diff and --export, by the same code.
--
--   views.COMMANDS            their names, sorted
--   views.HELP[name]          the lines `help <name>` prints
--   views.DISPATCH[name]      function(browser, arg, column): runs the command
--
-- Arguments are read by cprof.browser.grammar, as pstats' commands read theirs: an int is a
-- count (tree: the most levels), a float a fraction (tree: the smallest share, in percent),
-- a string a pattern.  A view the profile cannot give (no call tree, no memory) prints why,
-- in one line, and the browser goes on.

local _ENV = require("cprof.env")()

local grammar = require "cprof.browser.grammar"
local text = require "cprof.report.text"

local type, ipairs, pairs, pcall = type, ipairs, pairs, pcall
local unpack = table.unpack or unpack

local M = {}

M.HELP = {
  allocator = { "allocator: the allocator's reports of the profile (kmemstat, free, Lua types,",
                "waste, arena_stats, slab_stats), as cprof-stats --memory prints them." },
  diff = { "diff FILE [ARG...]: what changed per function from the profile in FILE (the base)",
           "to the current one: calls, tottime and cumtime and their changes, the largest",
           "change in tottime first (cprof-stats --diff).  ARGs restrict the rows as for",
           "stats." },
  export = { "export FORMAT FILE [PATTERN...]: write the current profile to FILE for another",
             "tool (cprof-stats --export): svg, folded, pstats, callgrind, speedscope, pprof or",
             "chrome; PATTERNs keep the call paths through matching functions." },
  leaks = { "leaks [ARG...]: the allocation contexts whose blocks were still live when the",
            "profile was written, most live bytes first (cprof-stats --leaks).  An int or a",
            "fraction keeps that many of them; a pattern, the stacks through a match." },
  lines = { "lines [ARG...]: each function's source lines with their hits and times, as",
            "line_profiler prints them (cprof-stats --lines; profiles made with lines = true).",
            "Arguments as for stats; times in microseconds, or as `unit' says." },
  memory = { "memory [ARG...]: the memory charged to each function: allocations, bytes, frees,",
             "live bytes, smallest and largest allocation (cprof-stats --memory).  Arguments",
             "as for stats; `sort alloc' or `sort live' orders it." },
  stacks = { "stacks [N] [live]: the N allocation contexts (default 10) with the most allocated",
             "bytes, or live bytes with `live', each with its stack (cprof-stats --memory",
             "--stacks N)." },
  tree = { "tree [ARG...]: the call tree top-down, each path with its inclusive time, share,",
           "own time and calls (cprof-stats --tree).  An int is the most levels shown, a",
           "float the smallest share shown in percent (default 0.5), a pattern keeps the",
           "paths through a matching function." },
  types = { "types [ARG...]: per function, the allocations, frees and live blocks of each Lua",
            "type and the lifetimes of the blocks freed (cprof-stats --memory-types).  An int",
            "or a fraction keeps that many functions; a pattern, the stacks through a match." },
  unit = { "unit [UNIT]: the unit of times for lines and diff and of lifetimes, in seconds",
           "(1e-3) or as s, ms, us or ns (cprof-stats -u); without UNIT, the defaults again." },
}

M.COMMANDS = {}
for name in pairs(M.HELP) do M.COMMANDS[#M.COMMANDS + 1] = name end
table.sort(M.COMMANDS)

-- The words of `arg` split into numbers and strings, or nil after printing the syntax error.
local function words(b, arg, column)
  local list, err = grammar.words(arg, column)
  if not list then
    b:print("*** Syntax error: " .. err)
    return nil
  end
  local ints, floats, strings = {}, {}, {}
  for _, w in ipairs(list) do
    local into = w.kind == "int" and ints or w.kind == "float" and floats or strings
    into[#into + 1] = w.value
  end
  return ints, floats, strings
end

-- Runs view(put) with put writing to the browser; an error of the view (a profile without a
-- call tree or memory, a bad pattern) prints its reason in one line.
local function show(b, view)
  local ok, err = pcall(view, function(s) b:write(s) end)
  if not ok then
    if type(err) == "table" then error(err, 0) end -- not the view's: cprof-stats' own output
    b:print(b.plain(err))
  end
end

local function model(b)
  return require("cprof.export").model(b.stats)
end

M.DISPATCH = {}
local D = M.DISPATCH

function D.lines(b, arg, column)
  local sel = b:restrictions(arg, column)
  if not sel then return end
  b.stats.line_unit = b.unit or 1e-6
  show(b, function() b.stats:print_lines(unpack(sel, 1, sel.n)) end)
end

function D.memory(b, arg, column)
  local sel = b:restrictions(arg, column)
  if sel then show(b, function() b.stats:print_memory(unpack(sel, 1, sel.n)) end) end
end

function D.allocator(b)
  show(b, function() b.stats:print_allocator() end)
end

function D.tree(b, arg, column)
  local ints, floats, strings = words(b, arg, column)
  if not ints then return end
  show(b, function(put)
    require("cprof.report.tree").write(model(b), put, { depth = ints[#ints], min_percent = floats[#floats],
      patterns = strings, title = b:title() })
  end)
end

-- leaks, types and stacks: the memory of allocation contexts (cprof.report.memctx).
local function contexts(which)
  return function(b, arg, column)
    local ints, floats, strings = words(b, arg, column)
    if not ints then return end
    local opts = { title = b:title(), unit = b.unit, patterns = {}, limits = {} }
    if which == "stacks" then
      opts.count = ints[1] or 10
      for _, s in ipairs(strings) do
        if s == "live" then opts.by = "live" else opts.patterns[#opts.patterns + 1] = s end
      end
    else
      opts.patterns = strings
      for _, n in ipairs(ints) do opts.limits[#opts.limits + 1] = n end
      for _, n in ipairs(floats) do opts.limits[#opts.limits + 1] = n end
    end
    show(b, function(put) require("cprof.report.memctx")[which](model(b), put, opts) end)
  end
end
D.leaks, D.types, D.stacks = contexts("leaks"), contexts("types"), contexts("stacks")

function D.diff(b, arg, column)
  local file, rest = grammar.first_arg(arg)
  if file == "" then
    b:print("*** diff needs the FILE of the profile to compare with (help diff)")
    return
  end
  local sel = b:restrictions(rest, column + #arg - #rest)
  if not sel then return end
  show(b, function(put)
    local base = require("cprof.stats").new(file)
    require("cprof.report.diff").write(b.stats, base, put, { restrictions = { unpack(sel, 1, sel.n) },
      names = { b:title(), file }, unit = b.unit })
  end)
end

function D.export(b, arg, column)
  local ints, _, strings = words(b, arg, column)
  if not ints then return end
  if #strings < 2 then
    b:print("*** export needs a FORMAT and a FILE (help export)")
    return
  end
  local format, file = strings[1], strings[2]
  show(b, function()
    require("cprof.export").export(format, b.stats, file, { patterns = { unpack(strings, 3) } })
    b:print("Wrote the " .. format .. " export of " .. b:title() .. " to " .. file .. ".")
  end)
end

function D.unit(b, arg)
  local v = string.match(arg or "", "^%s*(.-)%s*$")
  if v == "" then
    b.unit = nil
    return
  end
  local u = text.unit_of(v)
  if not u then
    b:print("*** unit: '" .. v .. "' is not a positive number of seconds, s, ms, us or ns")
    return
  end
  b.unit = u
end

--- Whether command `name` needs a statistics object (all do but unit).
function M.needs_stats(name)
  return name ~= "unit"
end

return M
