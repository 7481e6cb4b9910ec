-- bin/cprof-stats, run as a child process under lua5.4 on dumps written here.
--
-- Under LuaJIT the dumps are written by the LuaJIT build and read by cprof-stats under lua5.4
-- with the lua5.4 build of cprof.core (build/lua5.4/), which `make test` builds first; when it
-- is missing, the specs are pending.
local cprof = require "cprof"
local core = require "cprof.core"
local stats = require "cprof.stats"

local string = string

local S = require "spec.support"
local tmpname, read, write, q = S.tmpname, S.read_file, S.write_file, S.q

local ROOT = S.ROOT
local SCRIPT = ROOT .. "/bin/cprof-stats"

-- The environment for lua5.4 running cprof-stats ("" or "env ... "), or nil and why not.
local function lua54_env() return S.lua54_env(ROOT) end

-- The command that runs cprof-stats, or nil and why not.
local function command()
  local env, why = lua54_env()
  if not env then return nil, why end
  return env .. "lua5.4 " .. q(SCRIPT)
end

-- Runs cprof-stats with `args` (a string, already quoted); returns stdout, stderr, status.
local function cli(args, cmd)
  cmd = cmd or assert(command())
  return S.capture(cmd .. " " .. args)
end

local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local function helper(x) return string.rep("x", x) end
local function program()
  local t = 0
  for i = 1, 3 do t = t + fib(7) helper(i) end
  return t
end

local function dump(path)
  local p = cprof.Profile { timer = "counter" }
  p:runcall(program)
  p:dump_stats(path)
  return p:getstats()
end

local function totals(st)
  local nc, cc = 0, 0
  for _, e in ipairs(st.entries) do nc, cc = nc + e.ncalls, cc + e.pcalls end
  return nc, cc
end

-- A collecting stream.
local collector = S.collector

describe("cprof-stats", function()
  local why
  local ready = core.write_dump ~= nil
  if not ready then why = "cprof.core has no write_dump" end
  if ready then
    local cmd, err = command()
    if not cmd then ready, why = false, err end
  end
  if not ready then
    pending("cprof-stats specs: " .. why)
    return
  end

  local files = {}
  local function tmp()
    local n = tmpname() .. ".prof"
    files[#files + 1] = n
    return n
  end
  after_each(function()
    for _, f in ipairs(files) do os.remove(f) end
    files = {}
  end)

  it("prints one dump like pstats, sorted by cumulative time", function()
    local path = tmp()
    local st = dump(path)
    local out, err, status = cli(q(path))
    assert.are.equal("", err)
    assert.are.equal(0, status)
    local nc, cc = totals(st)
    local lines = {}
    for line in out:gmatch("([^\n]*)\n") do lines[#lines + 1] = line end
    assert.matches("^%a%a%a %a%a%a [ %d]%d %d%d:%d%d:%d%d %d%d%d%d    " .. path:gsub("%p", "%%%0") .. "$",
      lines[1])
    assert.are.equal("", lines[2])
    assert.are.equal(("         %d function calls (%d primitive calls) in "):format(nc, cc),
      lines[3]:match("^(.* in )"))
    -- a LuaJIT profile says that LuaJIT's compiler was off, on a line of its own
    local jit_line = S.jit and 2 or 0
    if S.jit then assert.matches("^   cprof: profiled on LuaJIT", lines[5]) end
    assert.are.equal("   Ordered by: cumulative time", lines[5 + jit_line])
    assert.are.equal(stats.title_line(), lines[7 + jit_line])
    assert.matches("fib%)$", out:match("[^\n]*:%d+%(fib%)"))
    -- the same text as the Stats of the same file printed here
    local mine = collector()
    stats.new(path, { stream = mine }):sort_stats("cumulative"):print_stats()
    assert.are.equal(mine.text(), out)
  end)

  it("adds several dumps: two file lines and every count doubled", function()
    local a, b = tmp(), tmp()
    local st = dump(a)
    dump(b)
    local out, err, status = cli(q(a) .. " " .. q(b) .. " --sort calls")
    assert.are.equal("", err)
    assert.are.equal(0, status)
    local nc, cc = totals(st)
    local l1, l2, blank, tot = out:match("^([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n")
    assert.matches("    " .. a:gsub("%p", "%%%0") .. "$", l1)
    assert.matches("    " .. b:gsub("%p", "%%%0") .. "$", l2)
    assert.are.equal("", blank)
    assert.matches(("^         %d function calls %%(%d primitive calls%%) in "):format(2 * nc, 2 * cc), tot)
    assert.matches("Ordered by: call count\n", out)
    local fibrow = out:match("\n( *%d+/%d+) [^\n]*%(fib%)\n")
    local e
    for _, x in ipairs(st.entries) do if x.name == "fib" then e = x end end
    assert.are.equal(("%d/%d"):format(2 * e.ncalls, 2 * e.pcalls), fibrow:match("%S+"))
  end)

  it("applies --limit and patterns in order, --reverse and --strip-dirs", function()
    local path = tmp()
    dump(path)
    local out = cli(q(path) .. " --sort calls --limit 2 fib")
    assert.matches("List reduced from %d+ to 2 due to restriction <2>\n"
      .. "   List reduced from 2 to 1 due to restriction <'fib'>\n", out)
    out = cli(q(path) .. " -s tottime --reverse --limit=0.5 --strip-dirs")
    assert.matches("Ordered by: internal time\n   List reduced from %d+ to %d+ due to restriction <0.5>\n", out)
    assert.not_matches("/", out:match("ncalls.*$"))
    out = cli(q(path) .. " --limit all -- fib")
    assert.matches("restriction <'fib'>", out)
    assert.not_matches("restriction <%d", out)
  end)

  it("--callers and --callees print pstats' caller and callee tables; --stats adds the table", function()
    local path = tmp()
    dump(path)
    local out, err, status = cli(q(path) .. " --callers fib")
    assert.are.equal(0, status, err)
    assert.matches("was called by%.%.%.\n", out)
    assert.matches("ncalls  tottime  cumtime\n", out)
    assert.not_matches("function calls", out)
    local mine = collector()
    stats.new(path, { stream = mine }):sort_stats("cumulative"):print_callers("fib")
    assert.are.equal(mine.text(), out)
    out = cli(q(path) .. " --callees --callers --stats")
    local s, c1, c2 = out:find("function calls"), out:find("was called by"), out:find("called%.%.%.\n")
    assert.is_true(s < c1 and c1 < c2)
  end)

  it("--help documents every option and exits 0", function()
    local out, err, status = cli("--help")
    assert.are.equal(0, status)
    assert.are.equal("", err)
    for _, opt in ipairs({ "--sort", "--limit", "--callers", "--callees", "--stats", "--strip-dirs",
                           "--reverse", "--help" }) do
      assert.matches("\n  [%- %a,]*" .. opt:gsub("%-", "%%-"), out)
    end
    assert.matches("^usage: cprof%-stats %[OPTION%]%.%.%. %[FILE | PATTERN%]%.%.%.\n", out)
    assert.are.equal(out, (cli("-h")))
  end)

  local function one_line_error(args, pattern)
    local out, err, status = cli(args)
    assert.are.equal(2, status, args)
    assert.are.equal("", out)
    assert.matches("^cprof%-stats: [^\n]+\n$", err)
    assert.matches(pattern, err)
  end

  it("errors: one line on stderr and exit status 2", function()
    local path = tmp()
    dump(path)
    one_line_error(q(path) .. " --frobnicate", "unknown option '%-%-frobnicate'")
    one_line_error(q(path) .. " --sort", "option %-%-sort needs an argument")
    one_line_error(q(path) .. " --limit", "option %-%-limit needs an argument")
    one_line_error(q(path) .. " --limit lots", "%-%-limit: 'lots'")
    one_line_error(q(path) .. " --limit 2.5", "%-%-limit: a fraction must be in %[0, 1%)")
    one_line_error(q(path) .. " --sort c", "%-%-sort: ambiguous sort key 'c'")
    one_line_error(q(path) .. " --reverse=yes", "%-%-reverse takes no argument")
    one_line_error("</dev/null", "no FILE given, and nothing on standard input")
    local missing = tmpname() .. ".prof"
    one_line_error(q(missing), "^cprof%-stats: " .. missing:gsub("%p", "%%%0") .. ": ")
    local junk = tmp()
    write(junk, "not a dump at all\n")
    one_line_error(q(path) .. " " .. q(junk), "^cprof%-stats: " .. junk:gsub("%p", "%%%0") .. ": ")
    -- a dump cut short
    local whole = read(path)
    local cut = tmp()
    write(cut, whole:sub(1, math.floor(#whole / 2)))
    one_line_error(q(cut), "^cprof%-stats: " .. cut:gsub("%p", "%%%0") .. ": ")
  end)

  -- A program run as a child process under cprof.auto, its dump written to a new file.
  local function child_dump(program, env)
    local script = tmp():gsub("%.prof$", ".lua")
    files[#files + 1] = script
    write(script, program)
    local path = tmp()
    local interp = rawget(_G, "jit") and "luajit" or "lua5.4"
    local p = assert(io.popen(("env %s CPROF_QUIET=1 CPROF_OUT=%s %s -l cprof.auto %s 2>&1"):format(
      env or "", q(path), interp, q(script))))
    local out = p:read("*a")
    p:close()
    assert.are.equal("", out)
    return path, script
  end

  local LOOP = [[
local function loop(n)
  local s = 0
  for i = 1, n do
    s = s + i
  end
  return s
end
local t = 0
for _ = 1, 3 do t = t + loop(4) end
]]

  it("--lines prints line_profiler's table for each function (CPROF_LINES=1)", function()
    local path, script = child_dump(LOOP, "CPROF_LINES=1 CPROF_TIMER=counter")
    local out, err, status = cli(q(path) .. " --lines loop -u 1")
    assert.are.equal(0, status, err)
    assert.are.equal("Timer unit: 1 s\n\n"
      .. "Total time: 33 s\n"
      .. "File: " .. script .. "\n"
      .. "Function: loop at line 1\n\n"
      .. "Line #      Hits         Time  Per Hit   % Time  Line Contents\n"
      .. "==============================================================\n"
      .. "     1                                           local function loop(n)\n"
      .. "     2         3          3.0      1.0      9.1    local s = 0\n"
      .. "     3        15         15.0      1.0     45.5    for i = 1, n do\n"
      .. "     4        12         12.0      1.0     36.4      s = s + i\n"
      .. "     5                                             end\n"
      .. "     6         3          3.0      1.0      9.1    return s\n"
      .. "     7                                           end\n\n", out)
    -- --stats first, then the lines; --json rows have the line records
    out = cli(q(path) .. " --lines --stats loop")
    assert.is_true(out:find("function calls", 1, true) < out:find("Timer unit", 1, true))
    out = cli(q(path) .. " --json loop")
    assert.matches('"lines":%[{"line":2,"hits":3,"time":3}', out)
    local plain = tmp()
    dump(plain)
    one_line_error(q(plain) .. " --lines", "option %-%-lines: the profile has no line events")
  end)

  local MAKE = [[
local keep = {}
local function make(n) for i = 1, n do keep[i] = setmetatable({}, nil) end end
for i = 1, 100 do keep[i] = false end
make(100)
]]

  it("--memory and --sort alloc: memory per function and the allocator's reports (CPROF_MEMORY=1)", function()
    if rawget(_G, "jit") then
      pending("LuaJIT has no cprof allocator: cprof.memory.install raises there (docs/MEMORY.md)")
      return
    end
    local path, script = child_dump(MAKE, "CPROF_MEMORY=1")
    local out, err, status = cli(q(path) .. " --memory")
    assert.are.equal(0, status, err)
    -- sorted by allocated bytes without --sort; exactly 100 tables of 56 bytes, all live
    assert.matches("\n   Ordered by: allocated bytes\n", out)
    assert.matches("\n" .. stats.memory_title_line():gsub("%p", "%%%0") .. "\n", out)
    assert.matches("\n      100         5600         0         5600       56       56 "
      .. script:gsub("%p", "%%%0") .. ":2%(make%)\n", out)
    for _, part in ipairs({ "== kmemstat", "== free", "== Lua types", "== waste", "== arena_stats",
                            "== slab_stats" }) do
      assert.matches("\n" .. part .. "\n", out)
    end
    assert.matches("\n        table_56 +: S :      56:", out)
    -- the same text as the Stats of the same file
    local mine = collector()
    local st = stats.new(path, { stream = mine }):sort_stats("alloc")
    st:print_memory()
    st:print_allocator()
    assert.are.equal(mine.text(), out)
    -- --sort alloc on the table of functions; memory keys abbreviate
    out = cli(q(path) .. " --sort alloc --limit 1")
    assert.matches("Ordered by: allocated bytes\n", out)
    assert.matches(":2%(make%)\n", out)
    assert.matches("Ordered by: allocation count, live bytes\n", (cli(q(path) .. " -s allocs,liv")))
    one_line_error(q(path) .. " --sort a", "%-%-sort: ambiguous sort key 'a' %(could be alloc, alloc_bytes")
    -- --json: memory fields in the rows, and the allocator
    out = cli(q(path) .. " --json make")
    assert.matches('"alloc_count":100,"alloc_bytes":5600,"free_count":0,"free_bytes":0,"live_bytes":5600,'
      .. '"min_size":56,"max_size":56', out)
    assert.matches(',"allocator":{', out)
    assert.matches('"caches":%[{', out)
    -- (a child without CPROF_MEMORY=1: this process may run on cprof's allocator, make spec-memory)
    local plain = child_dump(MAKE)
    one_line_error(q(plain) .. " --memory", "option %-%-memory: the profile has no memory numbers")
  end)

  it("--lines and --memory: --help documents them; bad combinations are one line and status 2", function()
    local out = cli("--help")
    for _, opt in ipairs({ "--lines", "--memory" }) do
      assert.matches("\n  [%- %a,]*" .. opt:gsub("%-", "%%-"), out)
    end
    assert.matches("alloc or alloc_bytes", out)
    local path = tmp()
    dump(path)
    one_line_error(q(path) .. " --lines --json", "options %-%-lines and %-%-memory do not go with %-%-json")
    one_line_error(q(path) .. " --json --memory", "options %-%-lines and %-%-memory do not go with %-%-json")
    one_line_error("-i " .. q(path) .. " --memory", "option %-i takes only FILEs .*%-%-memory")
  end)

  it("runs as cprof-stats on PATH (make env puts bin/ there)", function()
    local p = io.popen("command -v cprof-stats")
    local where = p:read("*l")
    p:close()
    if not where then
      pending("cprof-stats is not on PATH here (run the specs with make spec)")
      return
    end
    local path = tmp()
    dump(path)
    local out, err, status = cli(q(path) .. " --limit 1", lua54_env() .. "cprof-stats")
    assert.are.equal(0, status, err)
    assert.matches("List reduced from %d+ to 1 due to restriction <1>", out)
  end)

  it("--diff: rows of typical names fit 100 columns; -u gives the unit of the times", function()
    -- json_demo's busiest functions, as a run and a slower one recorded them
    local function run(scale)
      local entries = {}
      for i, f in ipairs({ { "Decoder:object", 292, 28058 }, { "Decoder:skip_ws", 234, 599784 },
                           { "Encoder:value", 146, 238490 }, { "escape_string", 40, 249351 } }) do
        entries[i] = { file = "examples/json_demo.lua", line = f[2], name = f[1], what = "Lua",
                       ncalls = f[3], pcalls = f[3], tottime = 0.25 * i * scale, cumtime = 1.5 * i * scale }
      end
      entries[5] = { file = "~", line = 0, name = "string.byte", what = "C", ncalls = 1019766,
                     pcalls = 1019766, tottime = 0.5 * scale, cumtime = 0.5 * scale }
      local path = tmp()
      stats.new({ timer = "monotonic", unit = 1e-9, entries = entries }):dump_stats(path)
      return path
    end
    local new, base = run(1.25), run(1)
    local out, err, status = cli(q(new) .. " --diff " .. q(base))
    assert.are.equal(0, status, err)
    local rows = 0
    for line in out:gmatch("[^\n]+") do
      assert.is_true(#line <= 100, line)
      if line:find("json_demo.lua:", 1, true) then rows = rows + 1 end
    end
    assert.are.equal(4, rows)
    assert.matches("\n ncalls %+/%- tottime    %+/%-    %% cumtime    %+/%-    %% function\n", out)
    assert.matches("\n1019766  %+0   0.625 %+0.125 %+25%%   0.625 %+0.125 %+25%% {string.byte}\n", out)
    out, err, status = cli(q(new) .. " --diff " .. q(base) .. " -u ms")
    assert.are.equal(0, status, err)
    assert.matches("\n  %d+ function calls in 3750.000 ms, against %d+ in 3000.000: %+0 calls, %+750.000 ms"
      .. " %(%+25%%%)\n", out)
    assert.matches("\n ncalls %+/%-  tottime      %+/%-    %%  cumtime       %+/%-    %% function\n", out)
    assert.matches("\n1019766  %+0  625.000 %+125.000 %+25%%  625.000  %+125.000 %+25%% {string.byte}\n", out)
  end)

  -- Issue 13: the command line as a newcomer uses it (points 5 to 9 and the conventions).
  describe("command-line conventions", function()
    -- Runs `shell`, a command line that starts with cprof-stats's command, from `dir`.
    local function in_dir(dir, args)
      return S.capture(("cd %s && %slua5.4 %s %s"):format(q(dir), assert(lua54_env()),
        q(S.absolute(SCRIPT)), args))
    end

    it("takes options and FILEs in any order; a bare argument that is no file is a pattern (point 5)", function()
      local path = tmp()
      dump(path)
      local first = cli("--sort cum " .. q(path) .. " </dev/null")
      assert.are.equal(cli(q(path) .. " --sort cum </dev/null"), first)
      assert.matches("Ordered by: cumulative time\n", first)
      local out, err, status = cli(q(path) .. " helper </dev/null")
      assert.are.equal(0, status, err)
      assert.matches("List reduced from 4 to 1 due to restriction <'helper'>\n", out)
      -- patterns and --limit apply in the order written, wherever the FILE is
      out = cli("fib " .. q(path) .. " --limit 2 </dev/null")
      assert.matches("List reduced from 4 to 1 due to restriction <'fib'>\n\n", out)
      out = cli("--limit 2 fib " .. q(path) .. " </dev/null")
      assert.matches("List reduced from 4 to 2 due to restriction <2>\n"
        .. "   List reduced from 2 to 1 due to restriction <'fib'>\n", out)
      -- --match: a pattern even when a file has that name
      local dir = S.new_dir()
      write(dir .. "/fib", "not a profile\n")
      out, err, status = in_dir(dir, q(path) .. " --match fib </dev/null")
      assert.are.equal(0, status, err)
      assert.matches("restriction <'fib'>", out)
      S.remove_dir(dir)
    end)

    it("takes short options as getopt does: -l1, -stottime, bundled, and -l 3 after any option", function()
      local path = tmp()
      dump(path)
      local function same(a, b)
        local x, ex, sx = cli(q(path) .. " " .. a)
        local y, ey, sy = cli(q(path) .. " " .. b)
        assert.are.equal(0, sx, ex)
        assert.are.equal(0, sy, ey)
        assert.are.equal(y, x, a)
      end
      same("-l1", "--limit 1")
      same("-stottime -l2", "--sort tottime --limit 2")
      same("-s tottime,name", "--sort=tottime,name")
      same("--callers -l 1", "--callers --limit 1")
      same("--diff " .. q(path) .. " -ums", "--diff " .. q(path) .. " --unit ms")
      -- flags and a value bundled: -i takes no value, so what follows it is another option
      assert.are.equal((cli("-h")), (cli("-hi")))
      one_line_error(q(path) .. " -l", "^cprof%-stats: option %-l needs an argument %(N%)\n$")
      one_line_error(q(path) .. " -lx", "^cprof%-stats: option %-%-limit: 'x' is not a whole number")
      one_line_error(q(path) .. " -hq", "^cprof%-stats: unknown option '%-q' in '%-hq' %(see cprof%-stats"
        .. " %-%-help%)\n$")
    end)

    it("a file that is no profile at all may be a pattern: the message says how to give one", function()
      local dir = S.new_dir()
      local path = dir .. "/p.prof"
      dump(path)
      write(dir .. "/fib", "notes about fib\n")
      local out, err, status = in_dir(dir, "p.prof fib")
      assert.are.equal(2, status)
      assert.are.equal("", out)
      assert.are.equal("cprof-stats: fib: not a cprof dump (wrong magic number) (if 'fib' was meant as a"
        .. " pattern, give it as --match 'fib')\n", err)
      out, err, status = in_dir(dir, "p.prof --match fib")
      assert.are.equal(0, status, err)
      assert.matches("%(fib%)\n", out)
      -- a damaged dump is a dump: no such hint
      write(dir .. "/cut.prof", read(path):sub(1, 40))
      _, err = in_dir(dir, "p.prof cut.prof")
      assert.is_nil(err:find("--match", 1, true))
      S.remove_dir(dir)
    end)

    it('"--" ends the options: a FILE or a pattern that starts with "-"', function()
      local dir = S.new_dir()
      dump(dir .. "/-x.prof")
      local out, err, status = in_dir(dir, "--limit 1 -- -x.prof </dev/null")
      assert.are.equal(0, status, err)
      assert.matches("    %-x%.prof\n", out)
      out, err, status = in_dir(dir, "-x.prof </dev/null")
      assert.are.equal(2, status)
      assert.are.equal("cprof-stats: unknown option '-x' in '-x.prof' (to read the file -x.prof, put --"
        .. " before it)\n", err)
      out, err, status = in_dir(dir, "-- -x.prof -fib </dev/null")
      assert.are.equal(1, status)
      assert.are.equal("", out)
      assert.are.equal("cprof-stats: nothing matched: no function matches '-fib'\n", err)
      S.remove_dir(dir)
    end)

    it('reads standard input: "-", or a pipe or a file when no FILE is given (point 6)', function()
      local path = tmp()
      dump(path)
      local from_file = cli(q(path) .. " --limit 2 </dev/null")
      local body = from_file:gsub("^[^\n]*\n", "")
      local out, err, status = cli("- --limit 2 <" .. q(path))
      assert.are.equal(0, status, err)
      assert.are.equal("<stdin>\n" .. body, out)
      out, err, status = S.capture("cat " .. q(path) .. " | " .. assert(command()) .. " --limit 2")
      assert.are.equal(0, status, err)
      assert.are.equal("<stdin>\n" .. body, out)
      -- with a second FILE: both added
      out = cli("- " .. q(path) .. " <" .. q(path))
      assert.matches("^<stdin>\n[^\n]*    " .. path:gsub("%p", "%%%0") .. "\n", out)
      one_line_error("- </dev/null", "^cprof%-stats: <stdin>: standard input is empty\n$")
      local junk = tmp()
      write(junk, "no profile here\n")
      local _, e = cli("<" .. q(junk))
      assert.matches("^cprof%-stats: <stdin>: ", e)
      assert.not_matches(junk:gsub("%p", "%%%0"), e)
      assert.not_matches("/tmp", e)
    end)

    it("--version, -h, and errors: one line on stderr, status 2; a FILE that is not there", function()
      local out, err, status = cli("--version")
      assert.are.equal(0, status, err)
      assert.are.equal("cprof-stats (cprof) " .. require("cprof.version").VERSION .. "\n", out)
      assert.are.equal(cli("--help"), (cli("-h")))
      one_line_error("--version=2", "option %-%-version takes no argument")
      one_line_error("nosuchname </dev/null", "^cprof%-stats: no FILE given %('nosuchname' is not a"
        .. " readable file, so it was taken as a pattern%)\n$")
      local missing = tmpname() .. ".prof"
      one_line_error(q(missing) .. " --sort cum </dev/null", "^cprof%-stats: " .. missing:gsub("%p", "%%%0")
        .. ": No such file or directory\n$")
    end)

    it("nothing matched: nothing on stdout, one line on stderr, status 1 (point 7)", function()
      local path = tmp()
      dump(path)
      local function nothing(args, msg)
        local out, err, status = cli(args .. " </dev/null")
        assert.are.equal(1, status, args)
        assert.are.equal("", out, args)
        assert.are.equal("cprof-stats: " .. msg .. "\n", err, args)
      end
      nothing("--callers nosuchfunction " .. q(path), "nothing matched: no function matches 'nosuchfunction'")
      nothing(q(path) .. " nosuch", "nothing matched: no function matches 'nosuch'")
      nothing(q(path) .. " --json nosuch", "nothing matched: no function matches 'nosuch'")
      nothing(q(path) .. " fib helper", "nothing matched: no function matches 'helper'")
      nothing(q(path) .. " --limit 0.0", "nothing matched: --limit 0.0 leaves no function")
      nothing(q(path) .. " other.prof", "nothing matched: no function matches 'other.prof' (and no file"
        .. " has that name)")
      -- --lines: functions matched, but none has line records
      local lpath = tmp()
      stats.new({ timer = "counter", unit = 1, entries = {
        { file = "/src/m.lua", line = 2, name = "make", what = "Lua", ncalls = 1, pcalls = 1,
          tottime = 2, cumtime = 3, lastline = 4, lines = { [3] = { hits = 1, time = 2 } } },
        { file = "~", line = 0, name = "print", what = "C", ncalls = 1, pcalls = 1, tottime = 1,
          cumtime = 1, callers = { [1] = { ncalls = 1, pcalls = 1, tottime = 1, cumtime = 1 } } },
      } }):dump_stats(lpath)
      nothing(q(lpath) .. " --lines nosuch", "nothing matched: no function matches 'nosuch'")
      nothing(q(lpath) .. " --lines print", "nothing matched: none of the 1 functions selected has line records")
      local out, err, status = cli(q(lpath) .. " --lines print --stats </dev/null")
      assert.are.equal(0, status, err)
      assert.matches("{print}", out)
      out, err, status = cli(q(lpath) .. " --lines </dev/null")
      assert.are.equal(0, status, err)
      assert.matches("\nFunction: make at line 2\n", out)
    end)

    it("--sort by memory on a profile without memory numbers is an error (point 8)", function()
      -- (a child: this process may run on cprof's allocator, make spec-memory)
      local path = child_dump(LOOP)
      for _, key in ipairs({ "alloc", "allocs", "live", "alloc_c" }) do
        one_line_error(q(path) .. " --sort " .. key, "^cprof%-stats: option %-%-sort: '" .. key
          .. "' sorts by memory, and the profile has no memory numbers %(make it with cprof's allocator"
          .. " installed: CPROF_MEMORY=1 with cprof.auto%)\n$")
      end
      one_line_error(q(path) .. " --sort calls,alloc", "'alloc' sorts by memory")
    end)

    it("--lines prints microseconds by default; -u/--unit chooses (point 9)", function()
      local path = child_dump(LOOP, "CPROF_LINES=1 CPROF_TIMER=counter")
      local function row2(args)
        local out, err, status = cli(q(path) .. " --lines loop " .. args)
        assert.are.equal(0, status, err)
        return out:match("^Timer unit: ([^\n]*)\n"), out:match("\n     2 ([^\n]*)local s = 0\n")
      end
      -- the counter timer ticks once per event: 1 s per tick
      local unit, row = row2("")
      assert.are.equal("1e-06 s", unit)
      assert.are.equal("        3    3000000.0    1e+06      9.1    ", row)
      unit, row = row2("-u ms")
      assert.are.equal("0.001 s", unit)
      assert.are.equal("        3       3000.0   1000.0      9.1    ", row)
      assert.are.same({ row2("--unit=1e-3") }, { row2("-u ms") })
      unit, row = row2("-u 1")
      assert.are.equal("1 s", unit)
      assert.are.equal("        3          3.0      1.0      9.1    ", row)
      for _, bad in ipairs({ "0", "-1", "fast", "inf" }) do
        one_line_error(q(path) .. " --lines -u " .. bad, "^cprof%-stats: option %-%-unit: '"
          .. bad:gsub("%p", "%%%0") .. "' is not a positive number of seconds, s, ms, us or ns\n$")
      end
      one_line_error(q(path) .. " -u ms", "option %-%-unit goes with %-%-lines")
    end)
  end)
end)
