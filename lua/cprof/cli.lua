--- cprof.cli: the command line of cprof-stats (bin/cprof-stats is this module's run): it prints
--- a pstats-style report of one or more cprof dumps or Python pstats files.
--
--   cprof-stats [OPTION]... [FILE | PATTERN]...
--   cprof-stats -i [FILE]... [--prompt | --no-prompt]
--   cprof-stats --verify FILE...
--
-- `cprof-stats --help` explains every option.  Exit status: 0; 1 when nothing matched (one line
-- on stderr says so, nothing on stdout); 2 for a bad command line, an unreadable file or a
-- report that could not be written whole (one line on stderr).
--
-- The command line is described by the tables below: the parser, the help text, the error
-- messages and the manual page (tools/mkman.lua renders man/cprof-stats.1 from them) all come
-- from them, so a new option is one more entry in OPTIONS and one more branch in main().

local _ENV = require("cprof.env")()

local M = {}

local PROG = "cprof-stats"
M.PROG = PROG

--- The synopsis lines (after the program's name).
M.SYNOPSIS = {
  "[OPTION]... [FILE | PATTERN]...",
  "-i [FILE]... [--prompt | --no-prompt]",
  "[FILE]... --export FORMAT [-o OUT] [--weight W] | --tree | --diff BASE",
  "--verify FILE...",
}

--- One line: what the program does (the manual page's NAME line).
M.PURPOSE = "print the report of a profile made by cprof or by Python's cProfile"

--- Each paragraph a string of lines (wrapped for a terminal).
M.DESCRIPTION = {
  [[
Prints the profile in FILE, written by cprof (Profile:dump_stats, cprof.run with a file name,
or CPROF_OUT with cprof.auto) or by Python (a pstats file: cProfile -o, Stats.dump_stats), as
Python's pstats prints a profile.  Several FILEs are added together, as pstats' Stats.add
does: calls and times of the same function are summed.]],
  [[
Options and arguments come in any order.  An argument that names a readable file is a FILE;
"-", or no FILE at all when standard input is a pipe or a file, reads the profile from
standard input.  Any other argument is a PATTERN: only the functions whose name (as printed:
file:line(function), or {name} for a C function) matches the Lua pattern are printed; "|"
separates alternatives, e.g. 'fib|help'.  --match PATTERN gives a pattern that is also a
file's name.  Patterns and --limit options are applied in the order given.  "--" ends the
options: every argument after it is a FILE or a PATTERN, even one that starts with "-".]],
}

--- { command, what it does }.
M.EXAMPLES = {
  { "cprof-stats out.prof --sort cum", "the functions by cumulative time" },
  { "cprof-stats --sort tottime --limit 20 out.prof", "the 20 with the most time of their own" },
  { "cprof-stats run1.prof run2.prof --strip-dirs --sort calls,name", "two runs added together" },
  { "cprof-stats out.prof --callers 'json'", "who called the functions whose name has json" },
  { "cprof-stats out.prof --lines parse -u 1e-3", "line by line, in milliseconds" },
  { "cprof-stats out.prof --memory --limit 20", "memory per function (CPROF_MEMORY=1)" },
  { "cat out.prof | cprof-stats --json", "the rows as JSON, the profile read from a pipe" },
  { "cprof-stats prog.pstats --sort tottime", "a profile written by Python's cProfile" },
  { "cprof-stats -i out.prof", "browse, as python -m pstats does" },
  { "cprof-stats out.prof --export svg -o flame.svg", "a flame graph to open in a browser" },
  { "cprof-stats out.prof --tree --depth 6", "the call tree, top-down" },
  { "cprof-stats new.prof --diff old.prof", "what changed between two runs" },
}

--- { status, meaning }.
M.EXIT_STATUS = {
  { "0", "the report was printed" },
  { "1", "nothing matched: the patterns and --limit left no function, or no function they left"
      .. " has what the report shows (--lines), or no FILE has memory numbers (--memory-series);"
      .. " one line on stderr says so, and nothing is printed" },
  { "2", "a bad command line, or a FILE that cannot be read: one line on stderr names the option"
      .. " or the file and says what is wrong; with --verify, a FILE that is damaged; a report"
      .. " that could not be written whole (standard output: No space left on device)" },
}

--- { variable, meaning }.
M.ENVIRONMENT = {
  { "CPROF_PROMPT", "with -i and neither --prompt nor --no-prompt: 1 prints the prompt, 0 does"
      .. " not (default: only when standard input is a terminal)" },
  { "LUA_PATH, LUA_CPATH", "where Lua looks for cprof's modules when they are not installed next"
      .. " to cprof-stats (PREFIX/share/lua, PREFIX/lib/lua); LUA_PATH_5_4 and LUA_CPATH_5_4"
      .. " come first for Lua 5.4" },
}

-- One entry per option.  `arg` names the value the option takes (nil: a flag); `set` stores
-- what was given in the settings table `o` (and `fail` reports a bad value).
local OPTIONS = {
  { long = "sort", short = "s", arg = "KEY",
    help = { "Sort by KEY: calls, ncalls, cumtime, cumulative, filename, line, module, name,",
             "nfl, pcalls, stdname, time, tottime, or any prefix that is unambiguous in",
             "meaning (cum, tot, ...); for profiles with memory also alloc or alloc_bytes",
             "(allocated bytes), allocs or alloc_count (allocations) and live (live bytes),",
             "all largest first; a memory key alone prints the memory table (--memory's,",
             "without the allocator's reports).  Repeat it, or separate keys with commas,",
             "to sort by several keys (--sort calls --sort name, --sort calls,name).",
             "Default: cumulative; alloc with --memory alone." },
    set = function(o, v)
      for key in string.gmatch(v, "[^,]+") do o.sort[#o.sort + 1] = key end
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
      if string.find(v, "^%d+$") then
        n = math.tointeger and math.tointeger(n) or n
        if n == 0 then return end
      elseif n >= 1 then
        fail("option --limit: a fraction must be in [0, 1), not '" .. v .. "'")
      end
      o.restrictions[#o.restrictions + 1] = n
    end },
  { long = "match", short = "m", arg = "PATTERN",
    help = { "Print only the functions whose name matches PATTERN, as a PATTERN argument",
             "does; for a pattern that is also the name of a file." },
    set = function(o, v) o.restrictions[#o.restrictions + 1] = v end },
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
  { long = "unit", short = "u", arg = "UNIT",
    help = { "The unit of times, in seconds (1e-3) or as s, ms, us or ns: with --lines, of",
             "the Time and Per Hit columns (default: 1e-6, microseconds, as kernprof's -u);",
             "with --diff, of the times and their changes (default: seconds); with",
             "--memory-types and --stacks, of the lifetimes (default: each its own, as",
             "2.50 ms)." },
    set = function(o, v, fail)
      local u = require("cprof.report.text").unit_of(v)
      if not u then
        fail("option --unit: '" .. v .. "' is not a positive number of seconds, s, ms, us or ns")
      end
      o.unit = u
    end },
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
             "add, sort, stats, callers, callees, reverse, strip, help, quit, and cprof's",
             "views tree, lines, memory, allocator, leaks, stacks, types, diff, export and",
             "unit (help VIEW explains each).  On a terminal, lines can be edited and",
             "recalled (Up, Down) and Tab completes commands, keys and file names.  The",
             "first FILE is read and the others added; every argument with -i is a FILE." },
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
             "damaged sections of a dump); exit status 2 when one is not good.  Every",
             "argument with --verify is a FILE." },
    set = function(o) o.verify = true end },
  { long = "version",
    help = { "Print cprof-stats' version and exit." },
    set = function(o) o.version = true end },
  { long = "help", short = "h",
    help = { "Print this help and exit." },
    set = function(o) o.help = true end },
}
-- Exports, the call tree and diffs: cprof.export.cli's options, before -i's.
local export_cli = require("cprof.export.cli")
do
  local at = 1
  while OPTIONS[at].long ~= "interactive" do at = at + 1 end
  for i, opt in ipairs(export_cli.OPTIONS) do table.insert(OPTIONS, at + i - 1, opt) end
end
M.OPTIONS = OPTIONS

-- `text` as lines of at most 95 characters, the first after `first`, the others after `indent`.
local function wrap(first, indent, text)
  local lines, line = {}, first
  for word in string.gmatch(text, "%S+") do
    if #line + 1 + #word > 95 and #line > #indent then
      lines[#lines + 1] = line
      line = indent .. word
    else
      line = line .. ((line == first or line == indent) and "" or " ") .. word
    end
  end
  lines[#lines + 1] = line
  return table.concat(lines, "\n")
end

-- The --help text, from the tables above.
local function help_text()
  local lines = {}
  for i, s in ipairs(M.SYNOPSIS) do
    lines[#lines + 1] = (i == 1 and "usage: " or "       ") .. PROG .. " " .. s
  end
  for _, p in ipairs(M.DESCRIPTION) do
    lines[#lines + 1] = ""
    lines[#lines + 1] = p
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "Options (--opt VALUE and --opt=VALUE are the same):"
  for _, opt in ipairs(OPTIONS) do
    local names = "  " .. (opt.short and ("-" .. opt.short .. ", ") or "    ") .. "--" .. opt.long
    if opt.arg then names = names .. " " .. opt.arg end
    lines[#lines + 1] = names
    for _, h in ipairs(opt.help) do lines[#lines + 1] = "        " .. h end
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "Examples:"
  for _, e in ipairs(M.EXAMPLES) do
    lines[#lines + 1] = "  " .. e[1]
    lines[#lines + 1] = "        " .. e[2]
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "Exit status:"
  for _, s in ipairs(M.EXIT_STATUS) do lines[#lines + 1] = wrap("  " .. s[1] .. "  ", "     ", s[2]) end
  return table.concat(lines, "\n") .. "\n"
end

-- A command-line error: raised as a table so that main() can tell it from a bug.  `status` is
-- the exit status (2 unless said otherwise).
local Failure = {}
local function fail(msg, status)
  error(setmetatable({ msg = msg, status = status or 2 }, Failure), 0)
end

-- Standard output with every write and the final flush checked: a full disk or a write error
-- ends cprof-stats with status 2 and the reason, never with a cut report and status 0.
local stdout = {}
local function stdout_failed(err)
  fail("standard output: " .. (string.gsub(tostring(err), "\n", " ")))
end
function stdout:write(...)
  local ok, err = io.stdout:write(...)
  if not ok then stdout_failed(err) end
  return self
end
function stdout:flush()
  local ok, err = io.stdout:flush()
  if not ok then stdout_failed(err) end
  return self
end

local function find_option(name)
  for _, opt in ipairs(OPTIONS) do
    if name == "--" .. opt.long or (opt.short and name == "-" .. opt.short) then return opt end
  end
  return nil
end

-- Whether `path` names a file: one that is not regular (a FIFO, a device) counts, without
-- being opened (a FIFO's opening would wait for a writer); reading it then says what it is.
local function readable(path)
  local t = require("cprof.dump").file_type(path)
  if t ~= nil then return t ~= false end
  local f = io.open(path, "rb")
  if not f then return false end
  f:close()
  return true
end

--- Parses the arguments into the settings table.  An argument that is not an option is a
--- FILE when it names a readable file (or is "-", or comes with -i), else a PATTERN, which
--- restricts the rows where it stands among the --limit and --match options.
local function parse(argv)
  local o = { files = {}, sort = {}, restrictions = {}, views = {}, patterns = {} }
  local operand = {} -- the restrictions that are operands, told apart below
  local options_ended = false
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if options_ended or a == "-" or string.sub(a, 1, 1) ~= "-" then
      o.restrictions[#o.restrictions + 1] = a
      operand[#o.restrictions] = true
    elseif a == "--" then
      options_ended = true
    elseif string.sub(a, 2, 2) ~= "-" then
      -- short options as getopt reads them: bundled (-ih), a value attached (-l1, -stottime)
      -- or in the next argument (-l 1)
      local j = 2
      while j <= #a do
        local name = "-" .. string.sub(a, j, j)
        local opt = find_option(name)
        if not opt then
          fail("unknown option '" .. name .. "'" .. (#a > 2 and " in '" .. a .. "'" or "") .. " ("
            .. (readable(a) and "to read the file " .. a .. ", put -- before it" or "see " .. PROG .. " --help")
            .. ")")
        end
        if opt.arg then
          local value = string.sub(a, j + 1)
          if value == "" then
            i = i + 1
            value = argv[i]
            if value == nil then fail("option " .. name .. " needs an argument (" .. opt.arg .. ")") end
          end
          opt.set(o, value, fail)
          break
        end
        opt.set(o, nil, fail)
        j = j + 1
      end
    else
      local name, value = string.match(a, "^(%-%-[^=]+)=(.*)$")
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
    end
    i = i + 1
  end
  -- Only now, with every option known: with -i every operand is a FILE.
  local restrictions = {}
  for k, r in ipairs(o.restrictions) do
    if not operand[k] then
      restrictions[#restrictions + 1] = r
    elseif o.interactive or o.verify or r == "-" or readable(r) then
      o.files[#o.files + 1] = r
    else
      restrictions[#restrictions + 1] = r
      o.patterns[#o.patterns + 1] = r
    end
  end
  o.restrictions = restrictions
  return o
end

-- One line of an error message, without the "cprof: " or "cprof.stats: " of cprof's errors:
-- "cprof: <path>: <reason>" becomes "<path>: <reason>".
local function plain(err)
  local s = tostring(err)
  if string.find(s, "^cprof: ") then
    s = string.sub(s, 8)
  elseif string.find(s, "^cprof%.%a+: ") then
    s = string.gsub(s, "^cprof%.%a+: ", "", 1)
  end
  return (string.gsub(s, "\n", " "))
end

-- cprof-stats -i: the browser (needs LPeg).
local function interactive(o)
  local extra = {}
  if #o.sort > 0 then extra[#extra + 1] = "--sort" end
  if #o.restrictions > 0 then extra[#extra + 1] = "--limit or patterns" end
  for _, v in ipairs({ "callers", "callees", "stats", "lines", "memory" }) do
    if o.views[v] then extra[#extra + 1] = "--" .. v end
  end
  if o.unit then extra[#extra + 1] = "--unit" end
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
  local run_ok, err = pcall(browser.run, o.files, { prompt = o.prompt, output = stdout })
  if not run_ok then
    -- Ctrl-C while reading a command ends the browser quietly, as in pstats
    if string.find(tostring(err), "interrupted", 1, true) then
      stdout:write("\n")
      return 0
    end
    error(err, 0)
  end
  return 0
end

-- True when standard input holds data to read: a pipe or a file, not a terminal or /dev/null.
local function stdin_has_data()
  local ok, a = pcall(os.execute, "[ -p /dev/stdin ] || [ -f /dev/stdin ]")
  return ok and (a == true or a == 0)
end

local STDIN = "<stdin>"

-- A Stats of the profile on standard input: it is copied to a temporary file, which the
-- readers (they take a path) read, and removed.  Messages and the file line say <stdin>.
local function stdin_copy()
  local max, parts, n = require("cprof.dump").MAX_FILE, {}, 0
  repeat -- in pieces, up to what a file may hold: `yes | cprof-stats` must end
    local piece = io.stdin:read(2 ^ 20)
    parts[#parts + 1] = piece
    n = n + (piece and #piece or 0)
    if n > max then fail(string.format("%s: too large for a profile (more than %d GiB)", STDIN, max / 2 ^ 30)) end
  until piece == nil
  local data = table.concat(parts)
  if data == "" then fail(STDIN .. ": standard input is empty") end
  local tmp = os.tmpname()
  local f, err = io.open(tmp, "wb")
  if not f then fail(STDIN .. ": cannot copy standard input to a temporary file: " .. plain(err)) end
  local wrote, werr = f:write(data)
  f:close()
  if not wrote then
    os.remove(tmp)
    fail(STDIN .. ": cannot copy standard input to a temporary file: " .. plain(werr))
  end
  return tmp
end

local function load_stdin(stats)
  local tmp = stdin_copy()
  local ok, st = pcall(stats.new, tmp)
  os.remove(tmp)
  if not ok then
    local msg = plain(st)
    local at = string.find(msg, tmp, 1, true)
    if at then msg = string.sub(msg, 1, at - 1) .. STDIN .. string.sub(msg, at + #tmp) end
    fail(msg)
  end
  st.files = { STDIN }
  return st
end

-- A Stats of one FILE ("-": standard input); an error names the file.
local function load_file(stats, file)
  if file == "-" then return load_stdin(stats) end
  local ok, st = pcall(stats.new, file)
  if not ok then
    local msg = plain(st)
    if string.sub(msg, 1, #file + 2) ~= file .. ": " then msg = file .. ": " .. msg end
    -- an operand that names a file is a FILE: one that is no profile at all may have been
    -- meant as a pattern
    if stats.file_kind(file) == nil and require("cprof.dump").is_regular(file) then
      msg = msg .. " (if '" .. file .. "' was meant as a pattern, give it as --match '" .. file .. "')"
    end
    fail(msg)
  end
  return st
end

-- A pattern that may be a FILE mistyped or missing: a path, or a name with an extension.
local function looks_like_file(p)
  return string.find(p, "/", 1, true) ~= nil or string.find(p, "%.%w+$") ~= nil
end

-- Nothing would be printed: fail with status 1 and the reason.  `list` and `log` are what
-- Stats:select made of the restrictions; `views` what the report prints.
local function check_something_matched(st, o, list, log)
  if #st.order == 0 then fail("nothing to print: the profile has no functions", 1) end
  if #list == 0 then
    for _, step in ipairs(log) do
      if step.to == 0 then
        local r = step.restriction
        if type(r) == "string" then
          local also = ""
          for _, p in ipairs(o.patterns) do
            if p == r and looks_like_file(p) then also = " (and no file has that name)" end
          end
          fail(string.format("nothing matched: no function matches '%s'%s", r, also), 1)
        end
        fail(string.format("nothing matched: --limit %s leaves no function", tostring(r)), 1)
      end
    end
  end
  local only_lines = o.views.lines and not (o.views.stats or o.views.callers or o.views.callees
    or o.views.memory or o.json)
  if only_lines then
    for _, key in ipairs(list) do
      if st.lines[key] and next(st.lines[key]) ~= nil then return end
    end
    fail(string.format("nothing matched: none of the %d functions selected has line records", #list), 1)
  end
end

-- cprof-stats --verify FILE...: every file is checked, whatever the ones before it were.
local function verify(o)
  if #o.sort > 0 or #o.restrictions > 0 or next(o.views) or o.json or o.strip_dirs or o.reverse
      or o.unit or o.interactive or o.prompt ~= nil or export_cli.wanted(o) then
    fail("option --verify takes only FILEs")
  end
  if #o.files == 0 then fail("no file given to --verify (see " .. PROG .. " --help)") end
  local loaders = require("cprof.loaders")
  local status = 0
  for _, file in ipairs(o.files) do
    local ok, what = pcall(loaders.verify, file)
    if ok then
      stdout:write(file, ": ok (", what, ")\n")
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
    stdout:write(help_text())
    return 0
  end
  if o.version then
    stdout:write(PROG, " (cprof) ", require("cprof.version").VERSION, "\n")
    return 0
  end
  if o.verify then return verify(o) end
  if o.interactive then return interactive(o) end
  if o.prompt ~= nil then fail("options --prompt and --no-prompt go with -i") end
  if #o.files == 0 then
    if stdin_has_data() then
      o.files[1] = "-"
    elseif #o.patterns > 0 then
      -- a pattern that looks like a file name was meant as one: say why it cannot be read
      for _, p in ipairs(o.patterns) do
        if looks_like_file(p) then
          local _, err = io.open(p, "rb")
          fail((string.gsub(tostring(err), "\n", " ")))
        end
      end
      fail(string.format("no FILE given ('%s' is not a readable file, so it was taken as a pattern)", o.patterns[1]))
    else
      fail("no FILE given, and nothing on standard input (see " .. PROG .. " --help)")
    end
  end
  if export_cli.wanted(o) then
    -- the export layer reads paths: standard input goes through a temporary copy
    local tmp
    for i, f in ipairs(o.files) do
      if f == "-" then
        tmp = tmp or stdin_copy()
        o.files[i] = tmp
      end
    end
    local ok, status = pcall(export_cli.cli_exports, o, fail, stdout)
    if tmp then os.remove(tmp) end
    if not ok then error(status, 0) end
    return status
  end
  if o.exports and (o.exports.focus or o.exports.hide) then
    fail("options --focus and --hide go with --tree or --export: they work on the call tree")
  end
  if o.json and (o.views.lines or o.views.memory) then
    fail("options --lines and --memory do not go with --json (its rows hold the line and memory"
      .. " records whenever the profile has them)")
  end
  if o.unit and not o.views.lines then
    fail("option --unit goes with --lines, --diff, --memory-types or --memory --stacks")
  end

  local stats = require("cprof.stats")
  local sortkeys = require("cprof.sortkeys")
  local report = require("cprof.report")

  local tables = o.views.stats or o.views.callers or o.views.callees
  local sort = #o.sort > 0 and o.sort or { (o.views.memory and not tables) and "alloc" or "cumulative" }
  local memory_key
  for i, key in ipairs(sort) do
    local legacy = tonumber(key)
    if legacy and #sort == 1 and stats.LEGACY_SORT[legacy] then
      sort[i] = legacy
    else
      local def, err = stats.resolve_sort_key(key)
      if not def then fail("option --sort: " .. plain(err)) end
      if sortkeys.is_memory_key(def) and #o.sort > 0 then memory_key = memory_key or key end
    end
  end

  -- Each file is read on its own, so that an error names the file; then they are added as
  -- pstats.Stats(file1, file2, ...) adds them.
  local loaded = {}
  for i, file in ipairs(o.files) do loaded[i] = load_file(stats, file) end
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
  if memory_key and not st:has_memory() then
    fail(string.format("option --sort: '%s' sorts by memory, and the profile has no memory numbers (make it"
      .. " with cprof's allocator installed: CPROF_MEMORY=1 with cprof.auto)", memory_key))
  end

  report.prepare(st, { sort = sort, reverse = o.reverse, strip_dirs = o.strip_dirs,
                       line_unit = o.unit or 1e-6, stream = stdout })
  local list, log = st:select((table.unpack or unpack)(o.restrictions))
  check_something_matched(st, o, list, log)

  if o.json then
    local ok, json = pcall(require, "cprof.report.json")
    if not ok then
      fail("--json needs lua-cjson, which cannot be loaded (Debian: apt-get install lua-cjson): "
        .. plain(json))
    end
    stdout:write(json.stats_json(st, { callers = o.views.callers, callees = o.views.callees },
      (table.unpack or unpack)(o.restrictions)))
    return 0
  end

  local views = {}
  if memory_key and not (tables or o.views.lines or o.views.memory) then
    -- sorted by memory: the table whose columns are the memory numbers sorted by
    views[#views + 1] = "memory"
  elseif o.views.stats or not (tables or o.views.lines or o.views.memory) then
    views[#views + 1] = "stats"
  end
  if o.views.callers then views[#views + 1] = "callers" end
  if o.views.callees then views[#views + 1] = "callees" end
  if o.views.lines then views[#views + 1] = "lines" end
  if o.views.memory then
    if st:has_memory() then views[#views + 1] = "memory" end
    if st.allocator then views[#views + 1] = "allocator" end
  end
  report.print_views(st, { limit = o.restrictions, views = views })
  return 0
end

--- Runs cprof-stats with the arguments `argv`: prints the report, or one line on stderr for
--- what went wrong.  Returns the exit status: 0; 1 when nothing matched; 2 for a bad command
--- line or file, or a bug in cprof.
function M.run(argv)
  local ok, status = pcall(function()
    local status = main(argv)
    stdout:flush()
    return status
  end)
  if ok then return status end
  -- a message may quote a name read from a file: shown, not obeyed, by the terminal
  local display = require("cprof.sanitize").display
  if getmetatable(status) == Failure then
    io.stderr:write(PROG, ": ", display(status.msg), "\n")
    return status.status
  end
  io.stderr:write(PROG, ": internal error (a bug in cprof; please report it): ", display(plain(status)), "\n")
  return 2
end

return M
