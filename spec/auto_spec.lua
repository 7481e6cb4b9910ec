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
