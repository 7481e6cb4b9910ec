--- cprof.cli: the command line of cprof-stats (bin/cprof-stats is this module's run): it prints
--- a pstats-style report of one or more cprof dumps or Python pstats files.
--
--   cprof-stats FILE... [--sort KEY]... [--limit N] [--callers] [--callees] [--stats]
--               [--lines] [--memory] [--strip-dirs] [--reverse] [--json] [PATTERN...]
--   cprof-stats -i [FILE...] [--prompt | --no-prompt]
--   cprof-stats --verify FILE...
--
-- `cprof-stats --help` explains every option.  Exit status: 0, or 2 for a bad command line or
-- an unreadable dump (one line on stderr).
--
-- The command line is described by the OPTIONS table below: the parser, the help text and the
-- error messages all come from it, so a new option (an interactive browser, JSON output) is
-- one more entry there and one more branch in main().

local M = {}

local PROG = "cprof-stats"

local USAGE = "usage: " .. PROG .. " FILE... [--sort KEY]... [--limit N] [--callers] [--callees]"
  .. " [--stats] [--lines] [--memory] [--strip-dirs] [--reverse] [--json] [PATTERN...]\n"
  .. "       " .. PROG .. " -i [FILE...] [--prompt | --no-prompt]\n"
  .. "       " .. PROG .. " --verify FILE..."

-- One entry per option.  `arg` names the value the option takes (nil: a flag); `set` stores
-- what was given in the settings table `o`.
local OPTIONS = {
  { long = "sort", short = "s", arg = "KEY",
    help = { "Sort by KEY: calls, ncalls, cumtime, cumulative, filename, line, module, name,",
             "nfl, pcalls, stdname, time, tottime, or any prefix that is unambiguous in",
             "meaning (cum, tot, ...); for profiles with memory also alloc or alloc_bytes",
             "(allocated bytes), allocs or alloc_count (allocations) and live (live bytes),",
             "all largest first.  Repeat it, or separate keys with commas, to sort by",
             "several keys (--sort calls --sort name, --sort calls,name).",
             "Default: cumulative; alloc with --memory alone." },
    set = function(o, v)
      for key in v:gmatch("[^,]+") do o.sort[#o.sort + 1] = key end
    end },
  { long = "limit", short = "l", arg = "N",
    help = { "Print at most N rows (a whole number), or the first fraction N of them (a",
             "number in [0, 1), e.g. 0.25).  0 or 'all' prints every row.  Like the",
             "patterns, it is a restriction: restrictions apply in the order given, each",
             "to the rows the previous one left, as in pstats." },
    set = function(o, v, fail)
      if v == "all" then return end
      local n = tonumber(v)
      if n == nil or n < 0 or n ~= n then
        fail("option --limit: '" .. v .. "' is not a whole number, a fraction in [0, 1) or 'all'")
      end
      if v:find("^%d+$") then
        n = math.tointeger and math.tointeger(n) or n
        if n == 0 then return end
      elseif n >= 1 then
        fail("option --limit: a fraction must be in [0, 1), not '" .. v .. "'")
      end
      o.restrictions[#o.restrictions + 1] = n
    end },
  { long = "callers",
    help = { "Print, for each function, the functions that called it (pstats'",
             "print_callers) instead of the table of functions." },
    set = function(o) o.views.callers = true end },
  { long = "callees",
    help = { "Print, for each function, the functions it called (pstats' print_callees)",
             "instead of the table of functions." },
    set = function(o) o.views.callees = true end },
  { long = "stats",
    help = { "Print the table of functions too when --callers, --callees, --lines or",
             "--memory is given (it comes first)." },
    set = function(o) o.views.stats = true end },
  { long = "lines",
    help = { "Print each function's source lines with their hits, time, time per hit and",
             "share of the function's time, as line_profiler does (profiles made with",
             "cprof.Profile{lines = true}, or CPROF_LINES=1 with cprof.auto)." },
    set = function(o) o.views.lines = true end },
  { long = "memory",
    help = { "Print the memory charged to each function (allocations, bytes, frees, live",
             "bytes, smallest and largest allocation) and, when the dump holds one, the",
             "allocator's statistics when it was written: kmemstat, free, Lua types, waste,",
             "arena_stats, slab_stats (profiles made with cprof's allocator: CPROF_MEMORY=1",
             "with cprof.auto)." },
    set = function(o) o.views.memory = true end },
  { long = "strip-dirs",
    help = { "Remove the directories from file names; functions that then have the same",
             "name are added together (pstats' strip_dirs)." },
    set = function(o) o.strip_dirs = true end },
  { long = "reverse",
    help = { "Reverse the sorted order." },
    set = function(o) o.reverse = true end },
  { long = "json",
    help = { "Print the selected rows (after the sort and the restrictions) as one JSON",
             "document instead of the tables: totals, and for each function its file,",
             "line, name, what, call counts, times and per-call times, and its memory and",
             "line records when the profile has them; with --callers or --callees, its",
             "edges too; the allocator snapshot when the dump holds one (docs/REPORT.md",
             "describes the document)." },
    set = function(o) o.json = true end },
  { long = "interactive", short = "i",
    help = { "Browse the FILEs interactively, as python -m pstats does: commands read,",
             "add, sort, stats, callers, callees, reverse, strip, help, quit.  The first",
             "FILE is read and the others added; every argument after -i is a FILE." },
    set = function(o) o.interactive = true end },
  { long = "prompt",
    help = { "With -i: print the prompt even when standard input is not a terminal." },
    set = function(o) o.prompt = true end },
  { long = "no-prompt",
    help = { "With -i: never print the prompt.  Without either option the prompt is",
             "printed when standard input is a terminal, or as CPROF_PROMPT says (1/0)." },
    set = function(o) o.prompt = false end },
  { long = "verify",
    help = { "Read each FILE whole and check it instead of printing it: a cprof dump's",
             "checksums (format version 2; version 1 has none) and structure, a pstats",
             "file's structure.  Prints 'FILE: ok (...)' for each good one and",
             "'cprof-stats: FILE: what is wrong' on stderr for each other one (naming the",
             "damaged sections of a dump); exit status 2 when one is not good." },
    set = function(o) o.verify = true end },
  { long = "help", short = "h",
    help = { "Print this help and exit." },
    set = function(o) o.help = true end },
}

local HELP_HEAD = [[
Prints the profile in FILE, written by cprof (Profile:dump_stats, cprof.run with a file name,
or CPROF_OUT with cprof.auto) or by Python (a pstats file: cProfile -o, Stats.dump_stats), as
Python's pstats prints a profile.  Several FILEs are added together, as pstats' Stats.add
does: calls and times of the same function are summed.

Arguments up to the first option are FILEs: cprof dumps or pstats files, in any mixture.
A bare argument after an option, or after "--", is a PATTERN: only the functions whose name
(as printed: file:line(function), or {name} for a C function) matches the Lua pattern are
printed; "|" separates alternatives, e.g. 'fib|help'.  Several patterns and --limit options
are applied in order.

Options (--opt VALUE and --opt=VALUE are the same):
]]

local HELP_TAIL = [[

Examples:
  cprof-stats out.prof --sort cum
  cprof-stats out.prof --sort tottime --limit 20
  cprof-stats run1.prof run2.prof --strip-dirs --sort calls,name
  cprof-stats out.prof --callers --limit 10 'json'
  cprof-stats out.prof --lines 'parse'
  cprof-stats out.prof --memory --limit 20
  cprof-stats prog.pstats --sort tottime --json
  cprof-stats -i out.prof

Exit status: 0 on success, 2 for a bad command line or a file that cannot be read (one line
on stderr says which file or option and what is wrong).
]]

local function help_text()
  local lines = { USAGE, "", (HELP_HEAD:gsub("\n$", "")) }
  for _, opt in ipairs(OPTIONS) do
    local names = "  " .. (opt.short and ("-" .. opt.short .. ", ") or "    ") .. "--" .. opt.long
    if opt.arg then names = names .. " " .. opt.arg end
    lines[#lines + 1] = names
    for _, h in ipairs(opt.help) do lines[#lines + 1] = "        " .. h end
  end
  lines[#lines + 1] = (HELP_TAIL:gsub("\n$", ""))
  return table.concat(lines, "\n") .. "\n"
end

-- A command-line error: raised as a table so that main() can tell it from a bug.
local Failure = {}
local function fail(msg)
  error(setmetatable({ msg = msg }, Failure), 0)
end

local function find_option(name)
  for _, opt in ipairs(OPTIONS) do
    if name == "--" .. opt.long or (opt.short and name == "-" .. opt.short) then return opt end
  end
  return nil
end

--- Parses the arguments into the settings table.
local function parse(argv)
  local o = { files = {}, sort = {}, restrictions = {}, views = {} }
  local seen_option, only_patterns = false, false
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if only_patterns or a == "-" or a:sub(1, 1) ~= "-" then
      if (o.interactive or o.verify) and not only_patterns then
        o.files[#o.files + 1] = a
      elseif seen_option or only_patterns then
        o.restrictions[#o.restrictions + 1] = a
      else
        o.files[#o.files + 1] = a
      end
    elseif a == "--" then
      only_patterns = true
    else
      local name, value = a:match("^(%-%-[^=]+)=(.*)$")
      name = name or a
      local opt = find_option(name)
      if not opt then
        fail("unknown option '" .. name .. "' (see " .. PROG .. " --help)")
      end
      if opt.arg then
        if value == nil then
          i = i + 1
          value = argv[i]
          if value == nil then
            fail("option " .. name .. " needs an argument (" .. opt.arg .. ")")
          end
        end
      elseif value ~= nil then
        fail("option " .. name .. " takes no argument")
      end
      opt.set(o, value, fail)
      seen_option = true
    end
    i = i + 1
  end
  return o
end

-- One line of an error message, without the "cprof: " or "cprof.stats: " of cprof's errors:
-- "cprof: <path>: <reason>" becomes "<path>: <reason>".
local function plain(err)
  local s = tostring(err)
  if s:find("^cprof: ") then
    s = s:sub(8)
  elseif s:find("^cprof%.%a+: ") then
    s = s:gsub("^cprof%.%a+: ", "", 1)
  end
  return (s:gsub("\n", " "))
end

-- cprof-stats -i: the browser (needs LPeg).
local function interactive(o)
  local extra = {}
  if #o.sort > 0 then extra[#extra + 1] = "--sort" end
  if #o.restrictions > 0 then extra[#extra + 1] = "--limit or patterns" end
  for _, v in ipairs({ "callers", "callees", "stats", "lines", "memory" }) do
    if o.views[v] then extra[#extra + 1] = "--" .. v end
  end
  if o.strip_dirs then extra[#extra + 1] = "--strip-dirs" end
  if o.reverse then extra[#extra + 1] = "--reverse" end
  if o.json then extra[#extra + 1] = "--json" end
  if #extra > 0 then
    fail("option -i takes only FILEs and --prompt or --no-prompt, not " .. table.concat(extra, ", ")
      .. " (use the browser's commands)")
  end
  local ok, browser = pcall(require, "cprof.browser")
  if not ok then
    fail("-i needs LPeg, which cannot be loaded (Debian: apt-get install lua-lpeg): "
      .. plain(browser))
  end
  local run_ok, err = pcall(browser.run, o.files, { prompt = o.prompt })
  if not run_ok then
    -- Ctrl-C while reading a command ends the browser quietly, as in pstats
    if tostring(err):find("interrupted", 1, true) then
      io.stdout:write("\n")
      return 0
    end
    error(err, 0)
  end
  return 0
end

-- cprof-stats --verify FILE...: every file is checked, whatever the ones before it were.
local function verify(o)
  if #o.sort > 0 or #o.restrictions > 0 or next(o.views) or o.json or o.strip_dirs or o.reverse
      or o.prompt ~= nil then
    fail("option --verify takes only FILEs")
  end
  if #o.files == 0 then fail("no file given to --verify (see " .. PROG .. " --help)") end
  local loaders = require("cprof.loaders")
  local status = 0
  for _, file in ipairs(o.files) do
    local ok, what = pcall(loaders.verify, file)
    if ok then
      io.stdout:write(file, ": ok (", what, ")\n")
    else
      io.stderr:write(PROG, ": ", plain(what), "\n")
      status = 2
    end
  end
  return status
end

local function main(argv)
  local o = parse(argv)
  if o.help then
    io.stdout:write(help_text())
    return 0
  end
  if o.interactive then return interactive(o) end
  if o.verify then return verify(o) end
  if o.prompt ~= nil then fail("options --prompt and --no-prompt go with -i") end
  if #o.files == 0 then fail("no dump file given (see " .. PROG .. " --help)") end
  if o.json and (o.views.lines or o.views.memory) then
    fail("options --lines and --memory do not go with --json (its rows hold the line and memory"
      .. " records whenever the profile has them)")
  end

  local stats = require("cprof.stats")
  local report = require("cprof.report")

  local tables = o.views.stats or o.views.callers or o.views.callees
  local sort = #o.sort > 0 and o.sort or { (o.views.memory and not tables) and "alloc" or "cumulative" }
  for i, key in ipairs(sort) do
    local legacy = tonumber(key)
    if legacy and #sort == 1 and stats.LEGACY_SORT[legacy] then
      sort[i] = legacy
    else
      local ok, err = stats.resolve_sort_key(key)
      if not ok then fail("option --sort: " .. plain(err)) end
    end
  end

  -- Each file is read on its own, so that an error names the file; then they are added as
  -- pstats.Stats(file1, file2, ...) adds them.
  local loaded = {}
  for i, file in ipairs(o.files) do
    local ok, st = pcall(stats.new, file)
    if not ok then
      local msg = plain(st)
      if msg:sub(1, #file + 2) ~= file .. ": " then msg = file .. ": " .. msg end
      fail(msg)
    end
    loaded[i] = st
  end
  local st = table.remove(loaded, 1)
  st:add((table.unpack or unpack)(loaded))
  if o.views.lines and not st:has_lines() then
    fail("option --lines: the profile has no line events (make it with cprof.Profile{lines = true},"
      .. " or CPROF_LINES=1 with cprof.auto)")
  end
  if o.views.memory and not st:has_memory() and not st.allocator then
    fail("option --memory: the profile has no memory numbers (make it with cprof's allocator"
      .. " installed: CPROF_MEMORY=1 with cprof.auto)")
  end

  if o.json then
    report.prepare(st, { sort = sort, reverse = o.reverse, strip_dirs = o.strip_dirs })
    local ok, json = pcall(require, "cprof.report.json")
    if not ok then
      fail("--json needs lua-cjson, which cannot be loaded (Debian: apt-get install lua-cjson): "
        .. plain(json))
    end
    io.stdout:write(json.stats_json(st, { callers = o.views.callers, callees = o.views.callees },
      (table.unpack or unpack)(o.restrictions)))
    return 0
  end

  local views = {}
  if o.views.stats or not (tables or o.views.lines or o.views.memory) then
    views[#views + 1] = "stats"
  end
  if o.views.callers then views[#views + 1] = "callers" end
  if o.views.callees then views[#views + 1] = "callees" end
  if o.views.lines then views[#views + 1] = "lines" end
  if o.views.memory then
    if st:has_memory() then views[#views + 1] = "memory" end
    if st.allocator then views[#views + 1] = "allocator" end
  end

  report.show(st, { sort = sort, reverse = o.reverse, strip_dirs = o.strip_dirs,
                    limit = o.restrictions, views = views, stream = io.stdout })
  return 0
end

--- Runs cprof-stats with the arguments `argv`: prints the report, or one line on stderr for
--- what went wrong.  Returns the exit status: 0, 2 for a bad command line or file, 1 for a bug.
function M.run(argv)
  local ok, status = pcall(main, argv)
  if ok then return status end
  if getmetatable(status) == Failure then
    io.stderr:write(PROG, ": ", status.msg, "\n")
    return 2
  end
  io.stderr:write(PROG, ": ", plain(status), "\n")
  return 1
end

return M
