--- cprof.export.cli: cprof-stats' options for exports, the call tree and diffs.
--
--   cprof-stats FILE... --export FORMAT [-o OUT] [--weight W] [--icicle] [--title T] [PATTERN...]
--   cprof-stats FILE... --tree [--depth N] [--min-percent P] [--memory] [-o OUT] [PATTERN...]
--   (--tree and --export also take --focus PATTERN and --hide PATTERN, as pprof's options)
--   cprof-stats NEW... --diff BASE [--sort KEY] [--limit N] [--strip-dirs] [-o OUT] [PATTERN...]
--   cprof-stats NEW... --diff BASE --export svg|html|folded [-o OUT] [--weight W] [--threshold PERCENT]
--   cprof-stats FILE... --leaks | --memory --stacks N [--sort live] | --memory-types [PATTERN...]
--   cprof-stats FILE... --summary | --memory-series [--export svg|html] [-o OUT]
--   (--html is --export html)
--
-- cprof-stats appends M.OPTIONS to its own table of options (one parser, one --help) and hands
-- the command to M.cli_exports when M.wanted says so.  Every value these options take is
-- stored in o.exports, so that they stay apart from the report's settings.

local _ENV = require("cprof.env")()

local M = {}

local export = require("cprof.export")

local tostring, tonumber, ipairs, type, pcall = tostring, tonumber, ipairs, type, pcall
local concat = table.concat

local function settings(o)
  o.exports = o.exports or {}
  return o.exports
end

local function number(name, v, fail, min)
  local n = tonumber(v)
  if n == nil or n ~= n or n < min or n == math.huge then
    fail("option --" .. name .. ": '" .. v .. "' is not a number of at least " .. min)
  end
  return n
end

-- An option whose value is a whole number of at least 1, kept as settings(o)[key].
local function count(name, key)
  return function(o, v, fail)
    local n = number(name, v, fail, 1)
    if n % 1 ~= 0 then fail("option --" .. name .. ": '" .. v .. "' is not a whole number") end
    settings(o)[key] = n
  end
end

-- An option without a value that sets settings(o)[key].
local function flag(long, key, help)
  return { long = long, help = help, set = function(o) settings(o)[key] = true end }
end

M.OPTIONS = {
  { long = "export", short = "e", arg = "FORMAT",
    help = { "Write the profile for other tools instead of printing a report: svg (a flame",
             "graph, zoom on click, search, tooltips), folded (collapsed stacks for",
             "flamegraph.pl), pstats (Python's pstats, snakeviz, gprof2dot), callgrind",
             "(KCachegrind, callgrind_annotate), speedscope, pprof (go tool pprof, gzipped",
             "profile.proto), chrome (Trace Event JSON, a synthetic time line of the call",
             "tree), html (one page: flame graph, table, callers, source, memory).  Several",
             "FILEs are added, their call trees merged by path.  PATTERNs keep only the call",
             "paths through matching functions.  docs/EXPORTS.md." },
    set = function(o, v) settings(o).format = v end },
  { long = "html",
    help = { "The same as --export html: one self-contained page to open in a browser." },
    set = function(o) settings(o).format = "html" end },
  { long = "output", short = "o", arg = "FILE",
    help = { "With --export, --tree or --diff: write to FILE (replaced whole, or not at all",
             "when something fails) instead of standard output." },
    set = function(o, v) settings(o).output = v end },
  { long = "weight", arg = "W",
    help = { "With --export: what widths and values measure: time (default), calls, and on",
             "profiles with memory alloc (bytes allocated), allocs (allocations) or live",
             "(bytes still live)." },
    set = function(o, v) settings(o).weight = v end },
  { long = "icicle",
    help = { "With --export svg or html: draw the tree top-down (an icicle graph)." },
    set = function(o) settings(o).icicle = true end },
  { long = "title", arg = "TEXT",
    help = { "With --export svg or html: the flame graph's or the report's title." },
    set = function(o, v) settings(o).title = v end },
  { long = "tree",
    help = { "Print the call tree top-down: each call path once, indented by depth, with its",
             "inclusive time, share of the total, own time and calls, the largest first.",
             "PATTERNs keep only the paths through matching functions; with --memory, the",
             "inclusive allocated bytes, allocations and live bytes too." },
    set = function(o) settings(o).tree = true end },
  { long = "depth", arg = "N",
    help = { "With --tree: print at most N levels." },
    set = count("depth", "depth") },
  { long = "min-percent", arg = "P",
    help = { "With --tree: leave out the call paths under P percent of the total time",
             "(default 0.5; 0 prints every path)." },
    set = function(o, v, fail) settings(o).min_percent = number("min-percent", v, fail, 0) end },
  flag("leaks", "leaks", {
    "Print the allocation contexts (call stacks) whose blocks were still live when the",
    "profile was written, most live bytes first, with their live blocks per Lua type;",
    "contexts that hold only raw memory (stacks, buffers) are summed in one line.",
    "PATTERNs keep the stacks through matching functions.  docs/MEMORY.md." }),
  { long = "stacks", arg = "N",
    help = { "With --memory: print the N allocation contexts with the most allocated bytes",
             "(--sort live: live bytes), each as its stack, with allocations, bytes, frees,",
             "live blocks and bytes, smallest and largest size, types and lifetimes." },
    set = count("stacks", "stacks") },
  flag("memory-types", "types", {
    "Print, per function, the allocations, frees and live blocks of each Lua type",
    "(string, table, function, userdata, thread, upvalue, proto, raw) and the",
    "lifetimes of the blocks freed (average, shortest, longest)." }),
  flag("summary", "summary", {
    "Print each FILE's memory summary without reading its call tree: the memory",
    "charged to its contexts and the allocator's state when it was written (free,",
    "Lua types, kmemstat)." }),
  flag("memory-series", "series", {
    "Print one row per FILE with the allocator's numbers when each was written",
    "(Lua's bytes, live blocks, held, mapped, peak, live bytes charged to contexts)",
    "and the growth since the one before: memory over time from dumps taken one",
    "after another, in the order they were taken (by their profile's start, then",
    "by the numbers in their names: srv.2.prof before srv.10.prof).  With --export",
    "svg or html, a line chart.  Exit status 1 when no FILE has memory numbers." }),
  { long = "focus", arg = "PATTERN",
    help = { "With --tree or --export: keep only the call paths through a function matching",
             "PATTERN, as pprof's -focus (a PATTERN operand does the same).  Repeatable: a",
             "path through any of them is kept." },
    set = function(o, v) local x = settings(o); x.focus = x.focus or {}; x.focus[#x.focus + 1] = v end },
  { long = "hide", arg = "PATTERN",
    help = { "With --tree or --export: take the functions matching PATTERN out of the call",
             "tree, as pprof's -hide: their own time (and memory) goes to their callers,",
             "their callees become their callers' callees.  Repeatable." },
    set = function(o, v) local x = settings(o); x.hide = x.hide or {}; x.hide[#x.hide + 1] = v end },
  { long = "diff", arg = "BASE",
    help = { "Compare the FILEs with the profile BASE: per function, the calls, tottime and",
             "cumtime, and their change (absolute and percent), the largest change in",
             "tottime first (--sort cumulative or calls for another; --limit and PATTERNs",
             "restrict the rows); new and gone functions are marked.  With --export svg, a",
             "differential flame graph (red grew, blue shrank, the shares of each total",
             "compared); with --export html, that graph and the table of changes; with",
             "--export folded, two counts per stack (difffolded.pl's format)." },
    set = function(o, v) settings(o).base = v end },
  { long = "threshold", arg = "PERCENT",
    help = { "With --diff and --export svg or html: leave white the call paths whose share",
             "of the total changed by less than PERCENT points (default 1), the noise",
             "between two runs of one program; 0 colours every change." },
    set = function(o, v, fail) settings(o).threshold = number("threshold", v, fail, 0) end },
}

--- True when the command line asks for an export, the tree or a diff.
function M.wanted(o)
  local x = o.exports
  return x ~= nil and (x.format ~= nil or x.tree or x.base ~= nil or x.leaks or x.stacks ~= nil
    or x.types or x.summary or x.series)
end

-- An error of the export layer as one line without its module prefix.
local function plain(err)
  return (string.gsub(string.gsub(tostring(err), "^cprof[%.%a]*: ", "", 1), "\n", " "))
end

-- The options given that do not go with what was asked (`allowed` names the kinds that do).
local function refused(o, allowed)
  local x = o.exports
  local given = {
    { "--sort", #o.sort > 0, "sort" }, { "--callers", o.views.callers }, { "--callees", o.views.callees },
    { "--stats", o.views.stats }, { "--lines", o.views.lines }, { "--memory", o.views.memory, "memory" },
    { "--json", o.json }, { "--reverse", o.reverse }, { "--strip-dirs", o.strip_dirs, "strip" },
    { "--weight", x.weight ~= nil, "weight" }, { "--icicle", x.icicle, "svg" },
    { "--title", x.title ~= nil, "svg" }, { "--depth", x.depth ~= nil, "tree" },
    { "--min-percent", x.min_percent ~= nil, "tree" }, { "-i", o.interactive },
    { "--stacks", x.stacks ~= nil and not x.leaks and not x.types, "stacks" },
    { "--focus", x.focus ~= nil, "paths" }, { "--hide", x.hide ~= nil, "paths" },
    { "--threshold", x.threshold ~= nil, "threshold" },
    { "--unit", o.unit ~= nil, "unit" },
  }
  local bad = {}
  for _, g in ipairs(given) do
    if g[2] and not (g[3] and allowed[g[3]]) then bad[#bad + 1] = g[1] end
  end
  local numbers = false
  for _, r in ipairs(o.restrictions) do numbers = numbers or type(r) == "number" end
  if numbers and not allowed.limit then bad[#bad + 1] = "--limit" end
  return bad
end

--- Runs the command: writes the export, the tree or the diff to -o's file or to `stdout` (an
--- object with :write).  `fail(msg)` reports a bad command line or file (cprof-stats exits 2).
--- Returns the exit status.
function M.cli_exports(o, fail, stdout)
  local x = o.exports
  local files = o.files
  if #files == 0 then fail("no dump file given (see cprof-stats --help)") end
  local modes = {}
  if x.format and not x.series then modes[#modes + 1] = "--export" end
  if x.tree then modes[#modes + 1] = "--tree" end
  if x.base and not x.format then modes[#modes + 1] = "--diff" end
  if x.leaks then modes[#modes + 1] = "--leaks" end
  if x.stacks and not x.leaks and not x.types then modes[#modes + 1] = "--stacks" end
  if x.types then modes[#modes + 1] = "--memory-types" end
  if x.summary then modes[#modes + 1] = "--summary" end
  if x.series then modes[#modes + 1] = "--memory-series" end
  if #modes > 1 then fail("options " .. concat(modes, " and ") .. " do not go together") end
  if x.stacks and not o.views.memory then fail("option --stacks goes with --memory") end
  local memctx = x.leaks or x.types or x.stacks
  local allowed
  if x.summary or x.series then
    if x.series and x.format and x.format ~= "svg" and x.format ~= "html" then
      fail("option --memory-series draws --export svg or html only, not " .. x.format)
    end
    allowed = {}
  elseif memctx then
    -- --limit cuts the rows of --leaks and --memory-types; --unit is that of lifetimes
    allowed = { memory = x.stacks ~= nil, sort = x.stacks ~= nil, stacks = true,
                limit = not x.stacks or x.leaks or x.types, unit = not x.leaks }
  elseif x.tree then
    allowed = { memory = true, tree = true, paths = true }
  elseif x.format then
    local drawn = x.format == "svg" or x.format == "html"
    allowed = { weight = true, svg = drawn, paths = true, threshold = drawn and x.base ~= nil }
  else
    allowed = { sort = true, limit = true, strip = true, unit = true }
  end
  local bad = refused(o, allowed)
  if #bad > 0 then
    fail("option" .. (#bad > 1 and "s " or " ") .. concat(bad, ", ") .. " do" .. (#bad > 1 and "" or "es")
      .. " not go with " .. (modes[1] or "--diff"))
  end
  local patterns = {}
  for _, r in ipairs(o.restrictions) do
    if type(r) == "string" then patterns[#patterns + 1] = r end
  end
  for _, f in ipairs(files) do
    local ok, err = pcall(require("cprof.dump").check_file, f)
    if not ok then fail(plain(err)) end
  end
  for _, key in ipairs(memctx and o.sort or {}) do
    if key ~= "live" and key ~= "alloc" then fail("option --sort: with --stacks, alloc or live") end
  end
  -- -o's file is written once the whole text is made (export.write_file), so that what goes
  -- wrong there is told apart from what goes wrong reading the FILEs, and said of -o
  local parts, out = {}, stdout
  if x.output then
    out = { write = function(self, s) parts[#parts + 1] = s return self end }
    local ok, err = pcall(export.check_output, x.output)
    if not ok then fail("option -o: " .. plain(err)) end
  end

  local ok, err = pcall(function()
    if x.summary or x.series then
      local summary = require("cprof.report.summary")
      local list = {}
      for i, f in ipairs(files) do list[i] = summary.read(f) end
      if x.series then
        list = summary.in_order(list)
        local any = false
        for _, s in ipairs(list) do any = any or summary.has_memory(s) end
        if not any then
          fail(string.format("nothing to show: %s memory numbers (make %s with cprof's allocator"
            .. " installed: CPROF_MEMORY=1 with cprof.auto)", #list == 1 and "the dump has no"
            or "none of the " .. #list .. " dumps has", #list == 1 and "it" or "them"), 1)
        end
      end
      export.output(out, false, function(sink)
        if x.summary then
          for _, s in ipairs(list) do summary.print(s, sink) end
        elseif x.format == "html" then
          require("cprof.export.html").series(list, sink)
        elseif x.format then
          summary.series_svg(list, sink)
        else
          summary.series(list, sink)
        end
      end)
    elseif memctx then
      local m = export.model(files)
      export.output(out, false, function(sink)
        local report = require("cprof.report.memctx")
        local limits = {}
        for _, r in ipairs(o.restrictions) do
          if type(r) == "number" then limits[#limits + 1] = r end
        end
        local opts = { patterns = patterns, title = concat(files, " + "), count = x.stacks,
                       by = o.sort[#o.sort], limits = limits, unit = o.unit }
        report[x.leaks and "leaks" or x.types and "types" or "stacks"](m, sink, opts)
      end)
    elseif x.format then
      export.export(x.format, files, out, { weight = x.weight, patterns = patterns, base = x.base,
        icicle = x.icicle, title = x.title, focus = x.focus, hide = x.hide, threshold = x.threshold })
    elseif x.tree then
      local m = export.model(files)
      export.output(out, false, function(sink)
        require("cprof.report.tree").write(m, sink, { depth = x.depth, min_percent = x.min_percent,
          patterns = patterns, memory = o.views.memory, title = concat(files, " + "),
          focus = x.focus, hide = x.hide })
      end)
    else
      local stats = require("cprof.stats")
      local new = stats.new((table.unpack or unpack)(files))
      local base = stats.new(x.base)
      if o.strip_dirs then
        new:strip_dirs()
        base:strip_dirs()
      end
      export.output(out, false, function(sink)
        require("cprof.report.diff").write(new, base, sink, { sort = o.sort[1],
          restrictions = o.restrictions, names = { concat(files, " + "), x.base }, unit = o.unit })
      end)
    end
  end)
  if not ok then
    if type(err) == "table" then error(err, 0) end -- fail()'s own, from writing to stdout
    fail(plain(err))
  end
  if x.output then
    local wok, werr = pcall(export.write_file, x.output, concat(parts), true)
    if not wok then fail("option -o: " .. plain(werr)) end
  end
  return 0
end

return M
