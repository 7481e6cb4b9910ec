-- The interactive browser (cprof-stats -i, cprof.browser) and its LPeg command-line grammar
-- (cprof.cmdline): every command and message, and a session driven through a pipe compared
-- with CPython's (golden_browser.txt).
local has_lpeg = pcall(require, "lpeg")

local W = require "spec.pstats_writer"

local S = require "spec.support"
local q, tmpname, golden = S.q, S.tmpname, S.golden

local ROOT = S.absolute(S.ROOT)
local SCRIPT = ROOT .. "/bin/cprof-stats"

local DATE = "%a%a%a %a%a%a [ %d]%d %d%d:%d%d:%d%d %d%d%d%d    "
local function no_dates(text) return (text:gsub(DATE, "<date>    ")) end

-- What `help` lists after pstats' commands: cprof's views (pstats has none of them).
local VIEWS_HELP = "cprof's views (type help <topic>):\n"
  .. "==================================\n"
  .. "allocator  diff  export  leaks  lines  memory  stacks  tree  types  unit\n\n"

-- fibdemo_det.prof of golden_browser.txt, as a pstats file: the raw dict of golden_det.txt in
-- the order CPython's dict had it (the "Random listing order" of the session shows it).
local F = "/home/user/demo/fibdemo_det.py"
local WORK, FIB, MAIN = { F, 15, "work" }, { F, 7, "fib" }, { F, 22, "main" }
local HELPER = { F, 12, "helper" }
local SORTED, LEN = { "~", 0, "<built-in method builtins.sorted>" }, { "~", 0, "<built-in method builtins.len>" }
local DISABLE = { "~", 0, "<method 'disable' of '_lsprof.Profiler' objects>" }
local FIBDEMO = {
  { WORK, 1, 1, 0.007, 0.163, { { MAIN, { 1, 1, 0.007, 0.163 } } } },
  { FIB, 3, 75, 0.147, 0.147, { { WORK, { 3, 3, 0.009000000000000001, 0.147 } },
                                { FIB, { 72, 6, 0.138, 0.138 } } } },
  { MAIN, 1, 1, 0.003, 0.167, {} },
  { DISABLE, 1, 1, 0.001, 0.001, {} },
  { HELPER, 3, 3, 0.006, 0.009000000000000001, { { WORK, { 3, 3, 0.006, 0.009000000000000001 } } } },
  { LEN, 1, 1, 0.001, 0.001, { { MAIN, { 1, 1, 0.001, 0.001 } } } },
  { SORTED, 3, 3, 0.003, 0.003, { { HELPER, { 3, 3, 0.003, 0.003 } } } },
}

---------------------------------------------------------------------------
-- The grammar
---------------------------------------------------------------------------

describe("cprof.cmdline (LPeg grammar)", function()
  if not has_lpeg then return pending("LPeg is not installed for this Lua") end
  local cmdline = require "cprof.browser.grammar"

  local function kinds(arg)
    local list, err = cmdline.words(arg)
    if not list then return nil, err end
    local out = {}
    for i, w in ipairs(list) do out[i] = w.kind .. ":" .. tostring(w.value) end
    return table.concat(out, " ")
  end

  it("reads ints, floats, quoted and bare strings", function()
    assert.are.equal("int:3 int:-1 int:7", kinds("3 -1 +7"))
    assert.are.equal("float:0.5 float:0.5 float:5.0 float:0.1 float:1000.0",
      (kinds("0.5 .5 5. 1e-1 1E3"):gsub("float:5 ", "float:5.0 "):gsub("float:1000$", "float:1000.0")))
    assert.are.equal("float:inf float:-inf", kinds("inf -Infinity"))
    assert.are.equal("string:fib string:fib|help string:it's string:3abc string:information",
      kinds("fib fib|help it's 3abc information"))
    assert.are.equal("string:a b string:3 string:x\"y string:it's", kinds([['a b' '3' "x\"y" 'it\'s']]))
    assert.are.equal("string:AA\\d\t", kinds([['\x41\101\d\t']]))
    assert.are.equal("", kinds("   "))
    local nan = cmdline.words("nan")[1]
    assert.are.equal("float", nan.kind)
    assert.is_true(nan.value ~= nan.value)
    local w = cmdline.words([['fib' fib]])
    assert.is_true(w[1].quoted)
    assert.is_nil(w[2].quoted)
    assert.are.equal("'fib'", w[1].text)
  end)

  it("keeps Lua 5.4's integer and float apart, and clamps huge integers", function()
    if not math.type then return pending("LuaJIT has one number type") end
    local w = cmdline.words("3 3.0 99999999999999999999 -99999999999999999999")
    assert.are.equal("integer", math.type(w[1].value))
    assert.are.equal("float", math.type(w[2].value))
    assert.are.equal(math.maxinteger, w[3].value)
    assert.are.equal(math.mininteger, w[4].value)
  end)

  it("says where a malformed line goes wrong", function()
    assert.are.same({ nil, "unterminated quoted string at column 5: 'fib" }, { cmdline.words("fib 'fib") })
    assert.are.same({ nil, "unterminated quoted string at column 1: \"a\\\"" }, { cmdline.words([["a\"]]) })
    assert.are.same({ nil, "a quoted string must be followed by a blank, at column 4: b" },
      { cmdline.words("'a'b") })
    -- columns count from the start of the line when told where the argument starts
    assert.are.same({ nil, "unterminated quoted string at column 7: 'x" }, { cmdline.words("'x", 7) })
  end)

  it("splits a command line as Python's cmd does", function()
    local function parsed(l)
      local p = cmdline.parse(l)
      return { p.command, p.arg, p.column }
    end
    assert.are.same({ "stats", "fib 1", 9 }, parsed("  stats   fib 1  "))
    assert.are.same({ "help", "stats", 2 }, parsed("?stats"))
    assert.are.same({ "stats", "-1", 6 }, parsed("stats-1"))
    assert.are.same({ "stats3", "", 7 }, parsed("stats3"))
    assert.are.same({ "", "!ls", 1 }, parsed("!ls"))
    assert.is_nil(cmdline.parse("   ").command)
  end)

  it("reads file arguments: one quoted name, or the rest of the line", function()
    assert.are.equal("x.prof", cmdline.file_arg("x.prof"))
    assert.are.equal("my file.prof", cmdline.file_arg("my file.prof"))
    assert.are.equal("a 'b'.prof", cmdline.file_arg([["a 'b'.prof"]]))
    assert.are.equal("it's", cmdline.file_arg([['it\'s']]))
    assert.are.equal("'a' b", cmdline.file_arg("'a' b"))
    assert.are.equal("", cmdline.file_arg(""))
  end)

  it("gives restriction values for print_stats", function()
    local r = cmdline.restrictions("fib 0.5 '10' 3")
    assert.are.equal(4, r.n)
    assert.are.same({ "fib", 0.5, "10", 3 }, { r[1], r[2], r[3], r[4] })
  end)
end)

---------------------------------------------------------------------------
-- The browser, in this process
---------------------------------------------------------------------------

describe("cprof.browser commands", function()
  if not has_lpeg then return pending("LPeg is not installed for this Lua") end
  local browser = require "cprof.browser"

  local path
  setup(function() path = W.write(tmpname(".pstats"), W.pstats(FIBDEMO)) end)
  teardown(function() os.remove(path) end)

  -- Runs the lines through a browser; returns its output without dates.
  local function session(lines, opts)
    opts = opts or {}
    local buf = {}
    local i = 0
    local b = browser.new {
      prompt = opts.prompt or false,
      input = { read = function() i = i + 1; return lines[i] end },
      output = { write = function(_, ...) for _, s in ipairs({ ... }) do buf[#buf + 1] = s end end },
    }
    if opts.file then b:load(opts.file) end
    b:cmdloop()
    return no_dates(table.concat(buf)), b
  end

  it("without a statistics object, says so for every command that needs one", function()
    local out = session({ "stats", "callers", "callees 3", "add x.prof", "sort calls", "reverse",
                          "strip", "read", "quit" })
    assert.are.equal(string.rep("No statistics object is loaded.\n", 7)
      .. "No statistics object is current -- cannot reload.\n", out)
  end)

  it("stats, callers and callees take ints, fractions and patterns, as pstats' generic() does", function()
    local out = session({ "stats 2 0.5", "stats 1.5 -0.5 fib", "callers 'work'", "callees main" },
      { file = path })
    assert.matches("List reduced from 7 to 2 due to restriction <2>\n"
      .. "   List reduced from 2 to 1 due to restriction <0.5>\n", out)
    assert.matches("Fraction argument must be in %[0, 1%]\nFraction argument must be in %[0, 1%]\n", out)
    assert.matches("List reduced from 7 to 4 due to restriction <'fib'>", out)
    assert.matches("fibdemo_det.py:15%(work%)%s+<%-%s+1    0.007    0.163  /home/user/demo/fibdemo_det.py:22%(main%)", out)
    assert.matches("fibdemo_det.py:22%(main%)%s+%->%s+1    0.007    0.163  /home/user/demo/fibdemo_det.py:15%(work%)", out)
  end)

  it("a quoted number is a pattern, not a count", function()
    local out = session({ "stats '22'" }, { file = path })
    assert.matches("List reduced from 7 to 1 due to restriction <'22'>", out)
  end)

  it("prints the fraction message even when nothing is loaded, as pstats does", function()
    assert.are.equal("Fraction argument must be in [0, 1]\nNo statistics object is loaded.\n",
      session({ "stats 2.5" }))
  end)

  it("sort: valid keys sort (cprof's prefixes: cum), anything else lists the keys", function()
    local out, b = session({ "sort cum name" }, { file = path })
    assert.are.equal("", out)
    assert.are.equal("cumulative time, function name", b.stats.sort_type)
    local listing = "Valid sort keys (unique prefixes are accepted):\n"
    for _, k in ipairs(require("cprof.stats").sort_keys()) do
      listing = listing .. k.key .. " -- " .. k.description .. "\n"
    end
    for _, line in ipairs({ "sort", "sort c", "sort bogus", "sort calls bogus", "sort 2", "sort -1" }) do
      local o, b2 = session({ line }, { file = path })
      assert.are.equal(listing, o, line)
      assert.is_false(b2.stats.fcn_list, line)
    end
    assert.are.equal(13, select(2, listing:gsub(" %-%- ", "")))
  end)

  it("reverse, strip, read (again), add", function()
    local out, b = session({ "sort calls", "reverse", "strip", "sort name", "stats work" }, { file = path })
    assert.matches("Ordered by: function name\n   List reduced from 7 to 1 due to restriction <'work'>\n", out)
    assert.matches(" fibdemo_det.py:15%(work%)\n", out)        -- stripped
    assert.are.equal(path .. "% ", b.prompt)
    out = session({ "strip", "read", "stats work" }, { file = path })
    assert.matches(" /home/user/demo/fibdemo_det.py:15%(work%)\n", out)
    out = session({ "add " .. path, "stats 0" }, { file = path })
    assert.matches("170 function calls %(26 primitive calls%)", out)
    out = session({ "read '" .. path .. "'", "stats 0" })
    assert.matches("85 function calls", out)
  end)

  it("reports files that cannot be read, and goes on", function()
    local missing = tmpname(".prof")
    local out, b = session({ "read " .. missing, "add " .. missing, "stats 0" }, { file = path })
    assert.are.equal(missing .. ": cannot open: No such file or directory\n"
      .. "Failed to load statistics for " .. missing .. ": cannot open: No such file or directory\n",
      out:match("^(.-)<date>"))
    assert.are.equal(path .. "% ", b.prompt)   -- the current file stays
    local bad = W.write(tmpname(".pstats"), W.dict({ { W.func({ "a", 1, "f" }), W.i(0) } }))
    out = session({ "read " .. bad, "add " .. bad })
    assert.matches("^" .. bad:gsub("%p", "%%%0") .. ": byte 23: not a pstats profile: invalid timing data", out)
    assert.matches("\nNo statistics object is loaded.\n$", out)
    os.remove(bad)
  end)

  it("help: the list of commands, each command's text, and unknown topics", function()
    local out = session({ "help" })
    assert.are.equal("\nDocumented commands (type help <topic>):\n"
      .. "========================================\n"
      .. "EOF  add  callees  callers  help  quit  read  reverse  sort  stats  strip\n\n" .. VIEWS_HELP, out)
    local texts = {
      add = "Add profile info from given file to current statistics object.\n",
      EOF = "Leave the profile browser.\n",
      quit = "Leave the profile browser.\n",
      help = "Show help for a given command.\n",
      read = "Read in profile data from a specified file.\nWithout argument, reload the current file.\n",
      reverse = "Reverse the sort order of the profiling report.\n",
      sort = "Sort profile data according to specified keys.\n(Typing `sort' without arguments lists valid keys.)\n",
      strip = "Strip leading path information from filenames in the report.\n",
    }
    for cmd, text in pairs(texts) do assert.are.equal(text, session({ "help " .. cmd }), cmd) end
    local generic = "Arguments may be:\n* An integer maximum number of entries to print.\n"
      .. "* A decimal fractional number between 0 and 1, controlling\n"
      .. "  what fraction of selected entries to print.\n"
      .. "* A regular expression; only entries with function names\n"
      .. "  that match it are printed.\n"
    assert.are.equal("Print statistics from the current stat object.\n" .. generic, session({ "help stats" }))
    assert.are.equal("Print callers statistics from the current stat object.\n" .. generic, session({ "help callers" }))
    assert.are.equal("Print callees statistics from the current stat object.\n" .. generic, session({ "?callees" }))
    assert.are.equal("*** No help on bogus\n*** No help on stats 3\n", session({ "help bogus", "help stats 3" }))
  end)

  it("unknown commands and malformed lines get a message and the browser goes on", function()
    local out = session({ "bogus 1", "!ls", "Stats", "stats 'fib", "sort \"c", "stats3", "help quit" })
    assert.are.equal("*** Unknown syntax: bogus 1\n*** Unknown syntax: !ls\n*** Unknown syntax: Stats\n"
      .. "*** Syntax error: unterminated quoted string at column 7: 'fib\n"
      .. "No statistics object is loaded.\n"
      .. "*** Unknown syntax: stats3\nLeave the profile browser.\n", out)
    out = session({ "sort \"c" }, { file = path })
    assert.are.equal("*** Syntax error: unterminated quoted string at column 6: \"c\n", out)
  end)

  it("an empty line repeats the last command (cmd.Cmd's emptyline)", function()
    local out = session({ "", "help quit", "", "  " })
    assert.are.equal(string.rep("Leave the profile browser.\n", 3), out)
  end)

  it("prompts when asked: '% ', then '<file>% '; EOF ends the prompt's line", function()
    local out = session({ "help quit" }, { prompt = true })
    assert.are.equal("% Leave the profile browser.\n% \n", out)
    out = session({ "read " .. path, "quit" }, { prompt = true })
    assert.are.equal("% " .. path .. "% ", out)
    -- without prompts, the end of the input adds nothing
    assert.are.equal("", session({}))
    assert.are.equal("", session({ "EOF", "help quit" }))
  end)

  it("CPROF_PROMPT decides; otherwise whether stdin is a terminal", function()
    assert.is_boolean(browser.stdin_is_tty())
    assert.are.equal(browser.stdin_is_tty(), browser.stdin_is_tty())
  end)
end)

---------------------------------------------------------------------------
-- cprof-stats -i through a pipe
---------------------------------------------------------------------------

local function lua54_env() return S.lua54_env(ROOT) end

-- Runs `commands` through cprof-stats -i in directory `dir`; returns stdout, stderr, status.
local function pipe(dir, commands, args, env)
  local prefix = assert(lua54_env())
  local input = tmpname()
  S.write_file(input, commands)
  local o, e, status = S.capture(("cd %s && %s%s lua5.4 %s -i %s <%s"):format(q(dir), prefix,
    env or "env -u CPROF_PROMPT", q(SCRIPT), args, q(input)))
  os.remove(input)
  return o, e, status
end

describe("cprof-stats -i", function()
  if not has_lpeg then return pending("LPeg is not installed for this Lua") end
  local ok_env, why = lua54_env()
  if not ok_env then return pending(why) end
  local lua54_lpeg = os.execute("lua5.4 -e 'require \"lpeg\"' 2>/dev/null")
  if not (lua54_lpeg == true or lua54_lpeg == 0) then return pending("LPeg is not installed for lua5.4") end

  local dir
  setup(function()
    dir = tmpname(".d")
    assert(os.execute("mkdir " .. q(dir)))
    W.write(dir .. "/fibdemo_det.prof", W.pstats(FIBDEMO))
  end)
  teardown(function()
    os.remove(dir .. "/fibdemo_det.prof")
    os.remove(dir)
  end)

  -- The commands of golden/README.txt.  CPython refuses "sort cum" and lists the keys; cprof
  -- sorts by cumulative time, so "sort c" (refused by both) stands in for it here.
  local GOLDEN_COMMANDS = { "help", "sort", "sort cum", "stats 3", "strip", "sort tottime name",
    "stats fib 1", "callers work", "callees main", "reverse", "stats 0.5", "add fibdemo_det.prof",
    "stats 2", "read", "stats 1", "sort bogus", "stats 1.5", "help stats", "quit" }

  local function commands(list) return table.concat(list, "\n") .. "\n" end

  it("replays CPython's session byte for byte, prompts forced with CPROF_PROMPT=1 (golden_browser.txt)", function()
    local list = {}
    for i, c in ipairs(GOLDEN_COMMANDS) do list[i] = c == "sort cum" and "sort c" or c end
    local out, err, status = pipe(dir, commands(list), "fibdemo_det.prof", "CPROF_PROMPT=1")
    assert.are.equal("", err)
    assert.are.equal(0, status)
    -- cprof's views are the one addition to CPython's text
    local at = assert(out:find(VIEWS_HELP, 1, true))
    assert.are.equal(no_dates(golden("golden_browser.txt")), no_dates(out:sub(1, at - 1) .. out:sub(at + #VIEWS_HELP)))
    -- --prompt does the same
    local out2 = pipe(dir, commands(list), "fibdemo_det.prof --prompt")
    assert.are.equal(no_dates(out), no_dates(out2))
  end)

  it("'sort cum' sorts by cumulative time (the documented difference from CPython)", function()
    local out = pipe(dir, commands({ "sort cum", "stats 3", "quit" }), "fibdemo_det.prof")
    assert.are.equal("Welcome to the profile statistics browser.\n"
      .. "<date>    fibdemo_det.prof\n\n"
      .. "         85 function calls (13 primitive calls) in 0.168 seconds\n\n"
      .. "   Ordered by: cumulative time\n"
      .. "   List reduced from 7 to 3 due to restriction <3>\n\n"
      .. "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)\n"
      .. "        1    0.003    0.003    0.167    0.167 /home/user/demo/fibdemo_det.py:22(main)\n"
      .. "        1    0.007    0.007    0.163    0.163 /home/user/demo/fibdemo_det.py:15(work)\n"
      .. "     75/3    0.147    0.002    0.147    0.049 /home/user/demo/fibdemo_det.py:7(fib)\n\n\n"
      .. "Goodbye.\n", no_dates(out))
  end)

  it("prints no prompts when stdin is a pipe, and ends at the end of the input", function()
    local out, err, status = pipe(dir, "help quit\nstats 0\n", "fibdemo_det.prof")
    assert.are.equal(0, status)
    assert.are.equal("", err)
    assert.matches("^Welcome to the profile statistics browser.\nLeave the profile browser.\n<date>", no_dates(out))
    assert.matches(" seconds\n\nGoodbye.\n$", out)   -- "stats 0": the totals, no rows
    assert.not_matches("%% ", out)
    out = pipe(dir, "help quit\n", "fibdemo_det.prof --no-prompt", "CPROF_PROMPT=1")
    assert.are.equal("Welcome to the profile statistics browser.\nLeave the profile browser.\nGoodbye.\n", out)
  end)

  it("reads several files (the first, then the others added) and starts without any", function()
    local out = pipe(dir, "stats 0\n", "fibdemo_det.prof fibdemo_det.prof")
    assert.matches("^Welcome[^\n]*\n<date>    fibdemo_det.prof\n<date>    fibdemo_det.prof\n\n"
      .. "         170 function calls %(26 primitive calls%)", no_dates(out))
    out = pipe(dir, "stats\nread fibdemo_det.prof\nstats 0\n", "", "CPROF_PROMPT=1")
    assert.matches("^Welcome to the profile statistics browser.\n%% No statistics object is loaded.\n"
      .. "%% fibdemo_det.prof%% <date>", no_dates(out))
    assert.matches("fibdemo_det.prof%% \nGoodbye.\n$", out)
    out = pipe(dir, "", "missing.prof")
    assert.are.equal("missing.prof: cannot open: No such file or directory\n"
      .. "Welcome to the profile statistics browser.\nGoodbye.\n", out)
  end)

  it("refuses the report options with -i", function()
    local out, err, status = pipe(dir, "", "fibdemo_det.prof --sort calls")
    assert.are.equal(2, status)
    assert.are.equal("", out)
    assert.are.equal("cprof-stats: option -i takes only FILEs and --prompt or --no-prompt, not --sort"
      .. " (use the browser's commands)\n", err)
  end)
end)

---------------------------------------------------------------------------
-- cprof's views as commands, completion and line editing
---------------------------------------------------------------------------

-- A dump made by hand: main calls work (10 tables allocated, 4 freed, lines 2 and 3 hit) and
-- the C function print, with memory per node, Lua types and lifetimes.
local function views_data()
  local function g(n, cols) cols.n = n return cols end
  local nodes = g(3, { parent = { 0, 1, 1 }, frame = { 1, 2, 3 }, ncalls = { 1, 2, 1 }, pcalls = { 1, 2, 1 },
    tottime = { 1, 6, 3 }, cumtime = { 10, 6, 3 }, alloc_count = { 0, 10, 1 }, alloc_bytes = { 0, 560, 24 },
    free_count = { 0, 4, 0 }, free_bytes = { 0, 224, 0 }, min_size = { 0, 56, 24 }, max_size = { 0, 56, 24 },
    life_total = { 0, 0.004, 0 }, life_min = { 0, 0.0005, 0 }, life_max = { 0, 0.002, 0 },
    alloc_time = { 0, 0, 0 }, free_time = { 0, 0, 0 } })
  for _, t in ipairs({ "raw", "string", "table", "function", "userdata", "thread", "upvalue", "proto", "other" }) do
    nodes[t .. "_allocs"], nodes[t .. "_frees"] = { 0, 0, 0 }, { 0, 0, 0 }
  end
  nodes.table_allocs, nodes.table_frees, nodes.string_allocs = { 0, 10, 0 }, { 0, 4, 0 }, { 0, 0, 1 }
  local frames = g(3, { kind = { "main", "Lua", "C" }, file = { "m.lua", "m.lua", "~" }, line = { 0, 1, 0 },
    lastline = { 9, 4, -1 }, name = { "<main chunk>", "work", "print" }, ncalls = { 1, 2, 1 },
    pcalls = { 1, 2, 1 }, tottime = { 1, 6, 3 }, cumtime = { 10, 6, 3 } })
  for _, c in ipairs({ "alloc_count", "alloc_bytes", "free_count", "free_bytes", "min_size", "max_size" }) do
    frames[c] = nodes[c]
  end
  return {
    meta = { timer = "counter", unit = 1, bias = 0, start_time = 1, total_time = 10, pid = 7,
             tree_cap = 100, tree_folded = 0, dropped = 0, memory = true },
    frames = frames,
    edges = g(2, { caller = { 1, 1 }, callee = { 2, 3 }, ncalls = { 2, 1 }, pcalls = { 2, 1 },
                   tottime = { 6, 3 }, cumtime = { 6, 3 } }),
    nodes = nodes,
    lines = g(2, { frame = { 2, 2 }, line = { 2, 3 }, hits = { 2, 4 }, time = { 2, 4 } }),
  }
end

describe("cprof.browser: cprof's views", function()
  if not has_lpeg then return pending("LPeg is not installed for this Lua") end
  local env, why = S.lua54_env(ROOT)
  if not env or not require("cprof.core").write_dump then
    return pending("cprof-stats: " .. (why or "cprof.core has no write_dump"))
  end
  local browser = require "cprof.browser"
  local dir = S.new_dir()
  setup(function()
    require("cprof.dump").write(dir .. "/v.prof", views_data())
    W.write(dir .. "/fibdemo_det.prof", W.pstats(FIBDEMO))
  end)
  teardown(function() S.remove_dir(dir) end)

  -- The browser's output for the commands `lines` after reading `file` (default v.prof) of
  -- dir, named as cprof-stats -i names it when run in dir.
  local function session(lines, file)
    local buf, i = {}, 0
    local b = browser.new {
      prompt = false, line_editing = false,
      input = { read = function() i = i + 1; return lines[i] end },
      output = { write = function(_, ...) for _, s in ipairs({ ... }) do buf[#buf + 1] = s end end },
    }
    b:load(dir .. "/" .. (file or "v.prof"))
    b.names = { file or "v.prof" }
    b:cmdloop()
    return table.concat(buf)
  end
  local function cli(args)
    local out, err, status = S.capture(("cd %s && %slua5.4 %s %s"):format(q(dir), env, q(SCRIPT), args))
    assert.are.equal("", err)
    assert.are.equal(0, status)
    return out
  end

  it("prints what cprof-stats prints with the option of the same view", function()
    for _, case in ipairs({
      { "tree", "v.prof --tree" }, { "tree 1", "v.prof --tree --depth 1" },
      { "tree 40.0", "v.prof --tree --min-percent 40" }, { "tree work", "v.prof --tree work" },
      { "leaks", "v.prof --leaks" }, { "leaks 1", "v.prof --leaks -l 1" },
      { "types", "v.prof --memory-types" }, { "stacks 1 live", "v.prof --memory --stacks 1 --sort live" },
      { "unit ms\ntypes", "v.prof --memory-types -u ms" },
    }) do
      local cmds = {}
      for c in case[1]:gmatch("[^\n]+") do cmds[#cmds + 1] = c end
      assert.are.equal(cli(case[2]), session(cmds), case[1])
    end
    -- the views that Stats prints: the same text as cprof-stats' without its file lines
    local function no_file_lines(s) return (no_dates(s):gsub("<date>    [^\n]*\n\n", "")) end
    assert.are.equal(no_file_lines(cli("v.prof --memory --sort alloc work")),
      no_file_lines(session({ "sort alloc", "memory work" })))
    assert.are.equal(cli("v.prof --lines -u 1"), session({ "unit 1", "lines" }))
    assert.are.equal(cli("v.prof --lines"), session({ "lines" }))
    assert.are.equal(cli("v.prof --diff v.prof -u us"):gsub("v.prof against v.prof", "X"),
      session({ "unit us", "diff " .. dir .. "/v.prof" }):gsub("v.prof against [^\n]*", "X"))
  end)

  it("export writes a file; help has a text for every view", function()
    local out = session({ "export folded " .. dir .. "/v.folded" })
    assert.are.equal("Wrote the folded export of v.prof to " .. dir .. "/v.folded.\n", out)
    assert.are.equal(S.read_file(dir .. "/v.folded"), cli("v.prof --export folded"))
    for _, name in ipairs(require("cprof.browser.views").COMMANDS) do
      assert.matches("^" .. name .. "[ :]", session({ "help " .. name }))
    end
  end)

  it("says in one line what a view cannot show, and goes on", function()
    local out = session({ "tree", "leaks", "stats 0" }, "fibdemo_det.prof")
    local first, second = out:match("^([^\n]*)\n([^\n]*)\n")
    assert.matches("^%-%-tree needs the call tree, and this profile has none", first)
    assert.matches("no memory numbers", second)
    assert.matches("function calls", out)
    assert.are.equal("*** diff needs the FILE of the profile to compare with (help diff)\n"
      .. "*** export needs a FORMAT and a FILE (help export)\n"
      .. "*** unit: 'fast' is not a positive number of seconds, s, ms, us or ns\n"
      .. "*** Syntax error: unterminated quoted string at column 6: 'x\n",
      session({ "diff", "export svg", "unit fast", "tree 'x" }))
    -- without a statistics object
    local b = browser.new { prompt = false, line_editing = false,
      input = { read = function() return nil end }, output = S.collector() }
    for _, c in ipairs({ "tree", "lines", "memory", "leaks", "diff x", "export svg x" }) do
      local o = S.collector()
      b.output = o
      b:onecmd(c)
      assert.are.equal(browser.NOT_LOADED .. "\n", o.text(), c)
    end
  end)
end)

describe("cprof.browser.lineedit", function()
  local lineedit = require "cprof.browser.lineedit"

  -- The lines read from `keys` (and "nil"/"interrupted" for what ended the reading) and all
  -- that was written, by an editor `columns` wide with history `history`.
  local function keys(k, opts)
    opts = opts or {}
    local i, out = 0, {}
    local le = lineedit.new { columns = opts.columns or 40, complete = opts.complete,
      input = { read = function() i = i + 1; if i <= #k then return k:sub(i, i) end end },
      output = { write = function(_, ...) for _, s in ipairs({ ... }) do out[#out + 1] = s end end } }
    local lines = {}
    repeat
      local line, why = le:edit(opts.prompt or "% ")
      lines[#lines + 1] = line or tostring(why)
    until line == nil
    return lines, table.concat(out), le
  end

  it("edits the line: moves, inserts, deletes and cuts", function()
    local L, R, HOME, END, DEL = "\27[D", "\27[C", "\27[H", "\27[F", "\27[3~"
    for input, want in pairs({
      ["abc" .. L .. L .. "X\r"] = "aXbc", ["abc" .. L .. L .. R .. "X\r"] = "abXc",
      ["bc" .. HOME .. "a" .. END .. "d\r"] = "abcd", ["bc\27[1~a\27[4~d\r"] = "abcd",
      ["bc\27OHa\27OFd\r"] = "abcd", ["bc\1a\5d\r"] = "abcd", ["ac\2b\6d\r"] = "abcd",
      ["abcd\127\127\r"] = "ab", ["abcd" .. HOME .. DEL .. "\4\r"] = "cd", ["abcd\2\2\11\r"] = "ab",
      ["abcd\2\2\21\r"] = "cd", ["sort  calls name\23\23\r"] = "sort  ", ["x\8\8y\r"] = "y",
      ["h\195\169llo" .. L .. L .. L .. "\127\r"] = "hllo", ["h\195\169" .. L .. "!\r"] = "h!\195\169",
      -- keys that are no character put nothing in the line
      ["a\27[5~\7\0\27[1;5Cb\r"] = "ab", ["a\255\192b\r"] = "ab",
    }) do
      assert.are.same({ want, "nil" }, (keys(input)), input)
    end
  end)

  it("ends at Enter, at the end of the input, at Ctrl-D on an empty line; Ctrl-C interrupts", function()
    assert.are.same({ "a", "b", "nil" }, (keys("a\rb\n")))
    assert.are.same({ "nil" }, (keys("\4more")))
    assert.are.same({ "interrupted" }, (keys("abc\3")))
    local _, out = keys("ab\3")
    assert.matches("%^C$", out)
  end)

  it("walks the history with Up and Down (Ctrl-P, Ctrl-N), keeping the line being written", function()
    local UP, DOWN = "\27[A", "\27[B"
    local lines, _, le = keys("one\rtwo\rtwo\r\r" .. UP .. UP .. "!\r" .. "dra" .. UP .. DOWN .. "ft\r"
      .. "\16\16\16\14\r")
    assert.are.same({ "one", "two", "two", "", "one!", "draft", "one!", "nil" }, lines)
    -- no empty line, no line twice in a row
    assert.are.same({ "one", "two", "one!", "draft", "one!" }, le.history)
  end)

  it("completes with Tab: one candidate whole, several to what they share, listed at the second Tab", function()
    local words = { "stats", "stacks", "strip", "sort", "dir/" }
    local function complete(before)
      local word, out = before:match("(%S*)$"), {}
      for _, w in ipairs(words) do if w:sub(1, #word) == word then out[#out + 1] = w end end
      return out
    end
    local opts = { complete = complete }
    assert.are.same({ "stats 3", "nil" }, (keys("stat\t3\r", opts)))
    assert.are.same({ "strip", "nil" }, (keys("st\tr\t\127\r", opts)))
    assert.are.same({ "dir/x", "nil" }, (keys("d\tx\r", opts)))
    local lines, out = keys("st\t\t\r", opts)
    assert.are.same({ "st", "nil" }, lines)
    assert.matches("\7", out)                                -- the first Tab rings
    assert.matches("\nstacks  stats   strip\n", out)         -- the second lists them
    assert.are.same({ "x", "nil" }, (keys("x\t\r", opts)))  -- none: nothing changes
  end)

  it("scrolls a line longer than the terminal is wide, the cursor always shown", function()
    local long = string.rep("abcdefghij", 5)
    local lines, out = keys(long .. "\1\r", { columns = 20 })
    assert.are.same({ long, "nil" }, lines)
    -- every redraw fits the 20 columns: the prompt and at most 17 characters of the line
    for drawn in out:gmatch("\r%% ([^\27]*)\27%[K") do assert.is_true(#drawn <= 17, drawn) end
    -- at the end, the line's tail; after Ctrl-A, its head, the cursor after the prompt
    assert.matches("\r%% defghijabcdefghij\27%[K\r\27%[19C\r%% abcdefghijabcdefg\27%[K\r\27%[2C\n", out)
  end)

  it("the browser completes commands, help topics, sort keys, formats and file names", function()
    if not has_lpeg then return pending("LPeg is not installed for this Lua") end
    local b = require("cprof.browser").new { prompt = false, line_editing = false,
      input = { read = function() end }, output = S.collector() }
    local function sorted(t) table.sort(t) return t end
    assert.are.same({ "stacks", "stats", "strip" }, sorted(b:complete("st")))
    assert.are.same({ "tree", "types" }, sorted(b:complete("  t")))
    assert.are.same({ "leaks", "lines" }, sorted(b:complete("help l")))
    assert.are.same({ "cumtime", "cumulative" }, sorted(b:complete("sort calls cu")))
    assert.are.same({ "alloc", "alloc_bytes", "alloc_count", "allocs" }, sorted(b:complete("sort all")))
    assert.are.same({ "speedscope", "svg" }, sorted(b:complete("export s")))
    assert.are.same({ "live" }, b:complete("stacks 3 l"))
    assert.are.same({}, b:complete("stats fi"))
    local dir = S.new_dir()
    S.write_file(dir .. "/one.prof", "")
    S.write_file(dir .. "/.hidden", "")
    assert(os.execute("mkdir " .. q(dir .. "/sub")))
    assert.are.same({ dir .. "/one.prof" }, b:complete("read " .. dir .. "/o"))
    assert.are.same({ dir .. "/one.prof", dir .. "/sub/" }, sorted(b:complete("add " .. dir .. "/")))
    assert.are.same({ dir .. "/.hidden" }, b:complete("diff " .. dir .. "/."))
    assert.are.same({ dir .. "/sub/" }, b:complete("export svg " .. dir .. "/s"))
    S.remove_dir(dir)
  end)
end)

-- Drives cprof-stats -i through a pseudo-terminal (python3's pty module): for each step, waits
-- for the text `wait` on the terminal after what the previous step waited for, then types
-- `keys`.  Returns what the terminal showed and the exit status.
local PTY = [==[
import os, pty, select, sys, time
steps = [(s.split("\x1f")[0].encode(), s.split("\x1f")[1].encode()) for s in sys.argv[2].split("\x1e")]
pid, fd = pty.fork()
if pid == 0:
    os.execvp("sh", ["sh", "-c", sys.argv[1]])
seen, pos, deadline = b"", 0, time.time() + 120
def read():
    global seen
    r, _, _ = select.select([fd], [], [], max(0, deadline - time.time()))
    if not r: sys.exit("timed out; the terminal showed: %r" % seen)
    try: data = os.read(fd, 4096)
    except OSError: data = b""
    seen += data
    return data
for wait, keys in steps:
    while seen.find(wait, pos) < 0:
        if not read(): sys.exit("ended; the terminal showed: %r" % seen)
    pos = seen.find(wait, pos) + len(wait)
    os.write(fd, keys)
while read(): pass
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(seen + b"\nstatus %d\n" % os.WEXITSTATUS(status))
]==]

describe("cprof-stats -i on a terminal", function()
  if not has_lpeg then return pending("LPeg is not installed for this Lua") end
  local env, why = S.lua54_env(ROOT)
  local python = os.execute("python3 -c 'import pty' 2>/dev/null")
  if not env or not require("cprof.core").write_dump then
    return pending("cprof-stats: " .. (why or "cprof.core has no write_dump"))
  end
  if not (python == true or python == 0) then return pending("python3 and its pty module are needed") end
  local dir = S.new_dir()
  setup(function() require("cprof.dump").write(dir .. "/v.prof", views_data()) end)
  teardown(function() S.remove_dir(dir) end)

  -- `after`: a shell command run on the terminal once cprof-stats has ended.
  local function drive(steps, after)
    local script = dir .. "/drive.py" -- (not pty.py: python would import it as pty)
    S.write_file(script, PTY)
    local list = {}
    for i, st in ipairs(steps) do list[i] = st[1] .. "\31" .. st[2] end
    local cmd = ("cd %s && TERM=xterm %s lua5.4 %s -i v.prof%s"):format(q(dir), env, q(SCRIPT),
      after and "; " .. after or "")
    -- (the ASan suite's preloaded runtime would report the shells' own leaks on stderr)
    local out, err, status = S.capture("env -u LD_PRELOAD python3 " .. q(script) .. " " .. q(cmd) .. " "
      .. q(table.concat(list, "\30")))
    assert.are.equal("", err)
    assert.are.equal(0, status)
    return out
  end

  it("edits, recalls and completes lines; the keys never show raw", function()
    -- The prompt drawn on an empty line: a new line's (keys typed before it would meet the
    -- terminal's own echo, between two lines), or one just cut with Ctrl-U.
    local P = "v.prof% \27[K"
    local out = drive({
      { P, "stat\t0\r" },                     -- Tab completes stats; "stats 0": the totals
      { P, "\27[A\127" .. "1\r" },             -- Up recalls it, Backspace, 1: "stats 1"
      { P, "tr\t\27[D\27[C1\r" },              -- tree 1, the cursor moved on the way
      { P, "so\t\t" },                         -- sort, then every sort key: a bell
      { "sort ", "\21help tree\r" },           -- Ctrl-U cuts the line
      { P, "\4" },                             -- Ctrl-D on an empty line: the end
    })
    assert.matches("\nstatus 0\n$", out)
    assert.is_nil(out:find("^[[", 1, true))
    assert.is_nil(out:find("\27[A", 1, true))
    assert.matches("stats 0\r\n<date>", (no_dates(out):gsub("\27%[K", ""):gsub("\r\27%[%d+C", "")))
    assert.matches("List reduced from 3 to 1 due to restriction <1>", out, 1, true)
    assert.matches("Call tree of v.prof: 10.000000 seconds, 4 calls", out, 1, true)
    assert.matches("at most 1 levels", out, 1, true)
    assert.matches("tree [ARG...]: the call tree top-down", out, 1, true)
    assert.matches("Goodbye.", out, 1, true)
  end)

  it("Ctrl-C ends the browser quietly and gives the terminal back as it was", function()
    local out = drive({ { "v.prof% \27[K", "stat\3" } }, "stty -a")
    assert.is_nil(out:find("Goodbye", 1, true))
    -- after ^C and a new line, the line discipline as a shell leaves it: lines, echo, signals
    local flags = out:match("%^C\r\n(.*)$")
    for _, flag in ipairs({ "icanon", "echo", "isig" }) do
      assert.matches("[ \r\n]" .. flag .. "[ \r\n;]", flags, 1)
      assert.is_nil(flags:find("-" .. flag .. "[ \r\n;]"), flag)
    end
  end)
end)
