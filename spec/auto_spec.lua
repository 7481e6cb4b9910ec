-- cprof.auto, run as `lua -l cprof.auto script.lua` in a child process.
local S = require "spec.support"

-- Runs the script under cprof.auto; returns stdout, stderr and the exit status.
local function run(script, env)
  return S.run_lua(script, "-l cprof.auto", env)
end

describe("cprof.auto", function()
  it("reports to stderr at the end of the script, leaving stdout and status alone", function()
    local out, err, status = run("local function f() return 1 end\nf() f()\nprint('done')\n")
    assert.are.equal("done\n", out)
    assert.are.equal(0, status)
    assert.matches("4 function calls in %d+%.%d+ seconds", err) -- f, f, print, the main chunk
    assert.matches("Ordered by: cumulative time", err)
    assert.matches("       2 +[%d.]+ +[%d.]+ +[%d.]+ +[%d.]+ [^\n]*:1%(f%)", err)
    assert.matches(":0%(<main chunk>%)", err)
  end)

  it("reports when os.exit is called from a nested call", function()
    local out, err, status = run([[
local function c() io.write("bye\n") os.exit(3) end
local function b() c() end
local function a() b() end
a()
]])
    assert.are.equal("bye\n", out)
    assert.are.equal(3, status)
    for _, name in ipairs { "a", "b", "c" } do assert.matches(":%d%(" .. name .. "%)", err) end
    assert.not_matches("exit_after_report", err)
    assert.not_matches("auto.lua", err)
  end)

  it("reports when os.exit closes the state from a finalizer", function()
    local out, err, status = run([[
local function bye() os.exit(5, true) end
if newproxy then getmetatable(newproxy(true)).__gc = bye  -- LuaJIT: userdata finalizers only
else setmetatable({}, { __gc = bye }) end
print("hi")
]])
    assert.are.equal("hi\n", out)
    assert.are.equal(5, status)
    local _, n = err:gsub("function calls", "")
    assert.are.equal(1, n, "one report")
  end)

  it("reports after an error, keeping the error message and the exit status", function()
    local _, err, status = run("local function f() error('bad') end\nf()\n")
    assert.are.equal(1, status)
    assert.matches("bad\nstack traceback:", err)
    assert.not_matches("cprof", err:match("stack traceback:.-\n\n") or "")
    assert.matches("function calls", err)
  end)

  it("sorts by CPROF_SORT and limits to CPROF_LIMIT rows", function()
    local script = "local function a() end\nlocal function b() end\na() b() b()\n"
    local _, err = run(script, "CPROF_SORT=calls,name CPROF_LIMIT=1")
    assert.matches("Ordered by: call count, function name", err)
    assert.matches("List reduced from 3 to 1 due to restriction <1>", err)
    local _, bad = run(script, "CPROF_SORT=sideways CPROF_LIMIT=x")
    assert.matches("CPROF_LIMIT must be a whole number", bad)
    assert.matches("CPROF_SORT", bad)
    assert.matches("Ordered by: cumulative time", bad)
  end)
end)

describe("cprof.auto when nothing is recorded (issue 28, C.6)", function()
  it("says which pattern left out the script when a filter leaves nothing", function()
    local script = "local function f() return 1 end\nf()\nprint(type(f))\n"
    local out, err, status, src = run(script, "CPROF_EXCLUDE='nosuch;tmp'")
    assert.are.same({ "function\n", 0 }, { out, status })
    local q = src:gsub("%p", "%%%0")
    assert.matches("^cprof: the file filters left nothing to record: CPROF_EXCLUDE's 'tmp' found "
      .. q .. " %(the script%) %(Lua patterns, found anywhere in the file names above:"
      .. " '%^/usr/share/lua/' takes one folder%)\n[^\n]* 0 function calls", err)
    _, err = run(script, "CPROF_INCLUDE='^/src/'")
    assert.matches("^cprof: the file filters left nothing to record: no pattern of CPROF_INCLUDE"
      .. " found /[^ ]+%.lua %(the script%)", err)
    -- a filter that leaves something says nothing
    _, err = run(script, "CPROF_EXCLUDE='^/nosuch/'")
    assert.matches("^ +4 function calls", err) -- f, type, print, the main chunk
  end)

  it("prints no report and writes no dump when the program never ran", function()
    local dir = S.new_dir()
    local o, e, status = S.capture(("%s -l cprof.auto %s"):format(S.lua, S.q(dir .. "/nosuch.lua")))
    assert.are.equal("", o)
    assert.matches("^[%w.]+: cannot open " .. (dir .. "/nosuch.lua"):gsub("%p", "%%%0")
      .. "[^\n]*\n$", e)
    assert.are.equal(1, status) -- lua's own
    o, e, status = S.capture(("CPROF_OUT=%s %s -l cprof.auto %s"):format(
      S.q(dir .. "/out.prof"), S.lua, S.q(dir .. "/nosuch.lua")))
    assert.are.same({ "", 1 }, { o, status })
    assert.not_matches("cprof", e)
    assert.is_nil(S.read_file(dir .. "/out.prof"))
    -- a script that does not compile: lua5.4's message alone, and its status
    local _, err, st = run("x = = 1\n")
    assert.are.equal(1, st)
    assert.not_matches("function calls", err)
    S.remove_dir(dir)
  end)
end)

describe("cprof.auto with CPROF_TIMER", function()
  it("profiles with the timer named, and falls back with a message on a bad one", function()
    local script = "local function f() end\nf()\n"
    local _, err = run(script, "CPROF_TIMER=counter")
    assert.matches("function calls in %d+%.%d+ seconds", err)
    assert.not_matches("CPROF_TIMER", err)
    local _, bad = run(script, "CPROF_TIMER=sundial")
    assert.matches("^cprof: CPROF_TIMER: timer 'sundial': unknown timer %(the timers are [%w, ]*monotonic,"
      .. " cpu, thread, counter, or one the host registered%); using the default timer\n", bad)
    assert.matches("function calls", bad)
  end)
end)

describe("cprof.auto with CPROF_RECURSION", function()
  -- f recurses 5 deep; the dump's call tree says how many of its calls each path keeps.
  local script = "local function f(n) if n > 0 then return f(n - 1) + 1 end return 0 end\nf(4)\n"
  local function nodes_of_f(env)
    local dump = S.tmpname(".prof")
    local _, err, status = run(script, env .. " CPROF_OUT=" .. S.q(dump))
    assert.are.equal(0, status, err)
    local d = require("cprof").load(dump)
    os.remove(dump)
    local n = 0
    for k = 1, d.nodes.n do if d.frames.name[d.nodes.frame[k]] == "f" then n = n + 1 end end
    return n, d.meta.tree_recursion, err
  end

  it("keeps that many nested calls of a function in the call tree, and says a bad value", function()
    assert.are.same({ 5, 64, "" }, { nodes_of_f("") })
    assert.are.same({ 2, 2, "" }, { nodes_of_f("CPROF_RECURSION=2") })
    assert.are.same({ 1, 1, "" }, { nodes_of_f("CPROF_RECURSION=1") })
    local n, keep, err = nodes_of_f("CPROF_RECURSION=deep")
    assert.are.same({ 5, 64 }, { n, keep })
    assert.are.equal("cprof: CPROF_RECURSION: option 'recursion' must be a whole number from 1 to"
      .. " 4e9; using the default\n", err)
  end)
end)

describe("the cprof command: python -m cProfile (issue 28, E)", function()
  local ROOT = S.absolute(S.ROOT)
  local dir
  before_each(function()
    dir = S.new_dir()
    S.write_file(dir .. "/greet.lua", table.concat({
      "local function greet(who) return 'hello ' .. who end",
      "print(greet(arg[1]), select('#', ...), arg[0], arg[-1], arg[-2])", "" }, "\n"))
  end)
  after_each(function() S.remove_dir(dir) end)

  -- bin/cprof run by this suite's interpreter, finding modules in `dir` too
  local function cprof_cmd(words)
    return S.capture(("cd %s && env -u LUA_PATH_5_4 -u LUA_CPATH_5_4 LUA_PATH=%s LUA_CPATH=%s %s %s %s")
      :format(S.q(dir), S.q(dir .. "/?.lua;" .. ROOT .. "/lua/?.lua;" .. ROOT .. "/lua/?/init.lua;;"),
              S.q(package.cpath), S.lua, S.q(ROOT .. "/bin/cprof"), words))
  end

  it("runs a module found on package.path, with the arg and ... lua5.4 would give it", function()
    local out, err, status = cprof_cmd("-s calls -m greet moon")
    assert.are.equal(0, status, err)
    assert.are.equal(("hello moon\t1\t%s/greet.lua\tgreet\t-m\n"):format(dir), out)
    assert.matches("Ordered by: call count", err)
    assert.matches("/greet%.lua:1%(greet%)\n", err)
    assert.matches("/greet%.lua:0%(<main chunk>%)\n", err)
    assert.not_matches("cprof/main", err) -- nothing of the command's in the profile
    assert.not_matches("unpack", err)
  end)

  it("runs a script, writes a dump with -o, and says what is wrong", function()
    local out, err, status = cprof_cmd("-o run.prof greet.lua sun")
    assert.are.same({ "hello sun\t1\tgreet.lua\trun.prof\t-o\n", "", 0 },
                    { out, err, status })
    local d = require("cprof").load(dir .. "/run.prof")
    assert.matches("bin/cprof %-o run%.prof greet%.lua sun$", d.meta.command)
    -- what is wrong: the message and the exit status (a script that cannot be loaded: lua's)
    for _, case in ipairs {
      { "-m nosuch", 2, "^cprof: module 'nosuch' not found:\n\tno file '[^\n]*nosuch.lua'\n" },
      { "nosuch.lua", 1, "^cprof: cannot open nosuch.lua" },
      { "", 2, "^cprof: no script and no %-m MODULE\nusage: cprof " },
      { "-x", 2, "^cprof: unknown option '%-x'\nusage: cprof " },
    } do
      out, err, status = cprof_cmd(case[1])
      assert.are.same({ "", case[2] }, { out, status })
      assert.matches(case[3], err)
    end
    out, err, status = cprof_cmd("-h")
    assert.are.same({ "", 0 }, { err, status })
    assert.matches("^usage: cprof %[%-o FILE%] %[%-s SORT%] %(%-m MODULE | SCRIPT%) %[ARG ...%]\n", out)
  end)
end)
