-- The C engine: counts, edges and times under recursion, tail calls, errors and coroutines.
-- The "counter" timer advances one tick per reading, so times are exact and the same everywhere.
local cprof = require "cprof"
local core = require "cprof.core"
local S = require "spec.support"

-- Busted runs specs in an environment whose globals are looked up through Lua functions, which
-- a profile would show: the profiled code below uses locals only.
local coroutine, error, pcall, select, xpcall, load, string, table, math =
  coroutine, error, pcall, select, xpcall, load, string, table, math
local collectgarbage, debug, assert = collectgarbage, debug, assert

local function profile(f, ...)
  local p = cprof.Profile { timer = "counter" }
  p:runcall(f, ...)
  return p:getstats(), p
end

describe("call counts", function()
  it("fib(20) makes 21891 calls, 1 primitive", function()
    local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
    local st = profile(fib, 20)
    local e = S.entry_of(st, fib)
    assert.are.equal(21891, e.ncalls)
    assert.are.equal(1, e.pcalls)
    local _, i = S.entry_of(st, fib)
    -- Only fib(20)->fib(19) and fib(20)->fib(18) are activations of a pair not already active.
    assert.are.same({ 21890, 2 }, { e.callers[i].ncalls, e.callers[i].pcalls })
    S.assert_adds_up(st)
  end)

  it("mutual recursion counts the inner activations as recursive", function()
    -- `return f()` would be a tail call in Lua, so each call keeps its result in a local.
    local even2, odd2
    function even2(n) if n == 0 then return true end local r = odd2(n - 1) return r end
    function odd2(n) if n == 0 then return false end local r = even2(n - 1) return r end
    local st = profile(function() return even2(10) end)
    local e, ei = S.entry_of(st, even2)
    local o, oi = S.entry_of(st, odd2)
    assert.are.same({ 6, 1 }, { e.ncalls, e.pcalls })
    assert.are.same({ 5, 1 }, { o.ncalls, o.pcalls })
    assert.are.same({ 5, 1 }, { o.callers[ei].ncalls, o.callers[ei].pcalls })
    assert.are.same({ 5, 1 }, { e.callers[oi].ncalls, e.callers[oi].pcalls })
    S.assert_adds_up(st)
  end)

  it("gives one function called from two callers two edges", function()
    local function leaf() return 1 end
    local function a() leaf() leaf() end
    local function b() leaf() end
    local st = profile(function() a() b() b() end)
    local l = S.entry_of(st, leaf)
    local _, ai = S.entry_of(st, a)
    local _, bi = S.entry_of(st, b)
    assert.are.equal(4, l.ncalls)
    assert.are.equal(2, l.callers[ai].ncalls)
    assert.are.equal(2, l.callers[bi].ncalls)
    assert.are.equal(2, #(function() local n = {} for k in pairs(l.callers) do n[#n + 1] = k end return n end)())
  end)

  it("makes all closures of one prototype one entry", function()
    local function make(k) return function(x) return x + k end end
    local fs = {}
    for k = 1, 5 do fs[k] = make(k) end
    local st = profile(function() for k = 1, 5 do fs[k](1) end end)
    local n = 0
    for _, e in ipairs(st.entries) do
      if e.what == "Lua" and e.line == debug.getinfo(fs[1], "S").linedefined then n = n + 1; assert.are.equal(5, e.ncalls) end
    end
    assert.are.equal(1, n)
  end)

  it("counts 100 000-deep recursion", function()
    if S.jit then
      pending("LuaJIT's stack holds fewer than 100 000 Lua frames, profiled or not")
      return
    end
    local function deep(k) if k == 0 then return 0 end return 1 + deep(k - 1) end
    if not pcall(deep, 100000) then
      pending("this Lua holds fewer than 100 000 Lua frames, profiled or not "
        .. "(5.4.0 and 5.4.1 count them against the C stack's limit)")
      return
    end
    local st = profile(deep, 100000)
    local e = S.entry_of(st, deep)
    assert.are.same({ 100001, 1 }, { e.ncalls, e.pcalls })
    S.assert_adds_up(st)
  end)
end)

describe("times around built-ins", function()
  -- LuaJIT sends a call event but no return event for its built-ins: the caller's code after one,
  -- up to its next event, is the caller's own time, not the built-in's.
  it("charges a loop's own time to it, not to the C function it calls", function()
    local floor = math.floor
    local function work(n) local s = 0 for i = 1, n do s = s + floor(i / 2) end return s end
    local st = profile(work, 100)
    local w, f = S.entry_of(st, work), S.find(st, "math.floor")
    assert.are.equal(100, f.ncalls)
    -- each tick is one event: Lua 5.4 times the C call from its call to its return (1 tick
    -- each); LuaJIT's built-in has no return, and no time of its own
    assert.are.equal(S.jit and 0 or 100, f.tottime)
    assert.are.equal(101, w.tottime)
    assert.are.equal(S.jit and 101 or 201, w.cumtime)
  end)

  it("ends a built-in that calls Lua (pcall) at its callee's return or unwind", function()
    local function ok() return 1 end
    local function bad() error("no") end
    local function work()
      local s = 0
      for _ = 1, 10 do s = s + (pcall(ok) and 1 or 0) end
      for _ = 1, 10 do s = s + (pcall(bad) and 1 or 0) end
      return s
    end
    local st = profile(work)
    local pc, okf, w = S.find(st, "pcall"), S.entry_of(st, ok), S.entry_of(st, work)
    assert.are.same({ 20, 10 }, { pc.ncalls, okf.ncalls })
    S.assert_adds_up(st)
    -- pcall(ok): on Lua 5.4 pcall has a tick before ok's call and one after ok's return, up to
    -- its own return; on LuaJIT it ends at ok's return, and the tick after is work's.
    -- pcall(bad): bad is unwound, found at work's next event, which ends pcall too (both).
    assert.are.equal(S.jit and 20 or 30, pc.tottime)
    assert.are.equal(S.jit and 11 or 21, w.tottime)
  end)
end)

describe("names", function()
  it("names C functions by their global name and main chunks as <main chunk>", function()
    local st = profile(function()
      local chunk = load("return string.format('%d', 1)", "=chunk")
      chunk()
      table.insert({}, 1)
    end)
    local f = S.find(st, "string.format")
    assert.are.same({ "~", 0, "C" }, { f.file, f.line, f.what })
    -- LuaJIT runs table.insert as a built-in fast function, which calls no hook.
    if not S.jit then assert.truthy(S.find(st, "table.insert")) end
    local m = S.find(st, "<main chunk>")
    assert.are.same({ "chunk", 0, "main" }, { m.file, m.line, m.what })
  end)

  -- A child process that calls string.reverse while no global reaches it, and prints the name
  -- its profile gives it.
  local HIDDEN_REVERSE = [[
local cprof = require "cprof"
local hidden = string.reverse
string.reverse = nil -- no global name reaches it while the profile is named
local p = cprof.Profile()
p:runcall(function() hidden("ab") end)
local st = p:getstats()
string.reverse = hidden
for _, e in ipairs(st.entries) do if e.what == "C" then io.write(e.name, "\n") end end
]]

  it("names a C function without a global name the same way in every run of the build", function()
    local names = {}
    for run = 1, 2 do
      local out, err, status = S.run_lua(HIDDEN_REVERSE, "", S.child_env())
      assert.are.equal(0, status, err)
      names[run] = out
    end
    assert.are.equal(names[1], names[2])
    -- LuaJIT's built-in by its number (as tostring(string.reverse) says), Lua 5.4's C function
    -- by the file that holds it and the offset: never its address, which moves from run to run
    if S.jit then
      assert.matches("^builtin#%d+\n$", names[1])
    else
      assert.matches("^C function [^/+\n]+%+0x%x+\n$", names[1])
    end
  end)

  it("names a function its definition does not name from the call site, after an anonymous first call", function()
    local fs = {}
    fs[1] = function() return 1 end -- no name a definition gives
    local target = fs[1]
    local st = profile(function() pcall(target) local named = target named() end)
    assert.are.equal("named", S.entry_of(st, target).name)
  end)
end)

describe("tail calls", function()
  local function t3() return 1 end
  local function t2() return t3() end
  local function t1() return t2() end
  it("closes the tail-calling frame and gives the callee its caller's parent", function()
    local root = function() t1() t1() end
    local st = profile(root)
    local _, ri = S.entry_of(st, root)
    for _, f in ipairs { t1, t2, t3 } do
      local e = S.entry_of(st, f)
      assert.are.same({ 2, 2 }, { e.ncalls, e.pcalls })
      if not S.jit then
        -- Each frame is closed when it is replaced: the call and the tail call, one tick.
        assert.are.equal(2, e.tottime)
        assert.truthy(e.callers[ri], "the root is the caller")
      end
    end
    S.assert_adds_up(st)
  end)
end)

describe("errors", function()
  it("closes unwound frames at the unwind and keeps later numbers consistent", function()
    local function d(n) if n == 0 then error("boom") end return d(n - 1) + 1 end
    local function leaf() return 1 end
    local root = function()
      assert(not pcall(d, 4)) -- d(4) .. d(0): the error is thrown 5 frames deep
      leaf() leaf()
    end
    local st = profile(root)
    local e = S.entry_of(st, d)
    assert.are.same({ 5, 1 }, { e.ncalls, e.pcalls })
    local _, ri = S.entry_of(st, root)
    local l = S.entry_of(st, leaf)
    assert.are.same({ 2, 2 }, { l.ncalls, l.pcalls })
    assert.are.equal(2, l.callers[ri].ncalls)
    -- Two ticks per leaf call: the frames unwound earlier took none of leaf's time.
    assert.are.equal(2, l.tottime)
    assert.are.equal(1, S.find(st, "error").ncalls)
    S.assert_adds_up(st)
    assert.are.equal(S.entry_of(st, root).cumtime, S.total_tt(st))
  end)

  it("closes frames unwound by an error inside a coroutine", function()
    local function bad() error("x") end
    local function body() coroutine.yield() bad() end
    local root = function()
      local co = coroutine.create(body)
      coroutine.resume(co)
      assert(not coroutine.resume(co))
    end
    local st = profile(root)
    assert.are.equal(1, S.entry_of(st, bad).ncalls)
    assert.are.equal(1, S.entry_of(st, body).ncalls)
    S.assert_adds_up(st)
  end)

  -- The handler is called from the activation whose call overflowed the stack, which sent no
  -- call event: cprof found no such frame and closed them all, so that the handler and
  -- everything after it were roots, outside root's time (Lua 5.4.4's errors.lua).
  it("keeps the frames under a message handler run at a stack overflow, and after it", function()
    local function inf(k) return 1 + inf(k + 1) end
    local function handler(m) return m end
    local function leaf() return 1 end
    local root = function()
      assert(not xpcall(inf, handler, 1))
      leaf()
    end
    local st = profile(root)
    local _, ii = S.entry_of(st, inf)
    local _, ri = S.entry_of(st, root)
    assert.are.same({ 1, 1 }, { S.entry_of(st, handler).callers[ii].ncalls,
                                S.entry_of(st, leaf).callers[ri].ncalls })
    S.assert_adds_up(st)
    assert.are.equal(S.entry_of(st, root).cumtime, S.total_tt(st))
  end)

  it("profiles the traceback of a stack overflow like the unprofiled one", function()
    local function inf(k) return 1 + inf(k + 1) end
    local function run() return select(2, xpcall(inf, debug.traceback, 1)) end
    local plain = run()
    local p = cprof.Profile()
    local traced = p:runcall(run)
    assert.matches("stack overflow", traced)
    -- Same frames named, in the same order (counts in "skipping N levels" may differ).
    local function shape(s) return (s:gsub("%d+ levels", "N levels"):gsub("\n[^\n]*runcall[^\n]*", "")) end
    assert.are.equal(select(2, shape(plain):gsub("\n", "")), select(2, shape(traced):gsub("\n", "")) + 0)
    assert.is_false(core.hooked())
  end)
end)

describe("coroutines", function()
  local function spin(n) local s = 0 for i = 1, n do s = s + i end return s end
  local function tick() return 0 end

  it("counts a resume as no new call and excludes suspended time", function()
    local function producer()
      for i = 1, 3 do tick() coroutine.yield(i) end
    end
    local function consumer()
      local co = coroutine.create(producer)
      local sum = 0
      while true do
        local _, v = coroutine.resume(co)
        if not v then break end
        for _ = 1, 20 do tick() end -- time the producer spends suspended
        sum = sum + v
      end
      return sum
    end
    local st = profile(consumer)
    local pr, pi = S.entry_of(st, producer)
    assert.are.same({ 1, 1 }, { pr.ncalls, pr.pcalls })
    local y = S.find(st, "coroutine.yield")
    assert.are.equal(3, y.ncalls)
    assert.are.equal(3, y.callers[pi].ncalls)
    local r, ri = S.find(st, "coroutine.resume")
    assert.are.equal(4, r.ncalls)
    assert.are.equal(1, pr.callers[ri].ncalls)
    -- 60 tick() calls ran in the consumer while the producer was suspended: none is in it.
    local t = S.find(st, "tick")
    assert.are.equal(63, t.ncalls)
    assert.is_true(pr.cumtime < 30)
    -- coroutine.resume's cumulative time contains what the coroutine ran.
    assert.are.equal(r.tottime + pr.cumtime, r.cumtime)
    S.assert_adds_up(st)
    assert.are.equal(S.entry_of(st, consumer).cumtime, S.total_tt(st))
  end)

  it("gives a coroutine its work after a yield, and the resumer its work after a resume", function()
    -- LuaJIT sends no event when either goes on after a switch: a resume, a yield and a call of
    -- a function made by coroutine.wrap end at the switch, dated at the last event before it.
    -- Each tick is one event; Lua 5.4 has more (the switches' returns): the same shares.
    local function body()
      for _ = 1, 3 do
        coroutine.yield()
        for _ = 1, 5 do tick() end
      end
    end
    local function driver(resume)
      for _ = 1, 4 do
        resume()
        for _ = 1, 7 do tick() end
      end
    end
    for _, how in ipairs({ "resume", "wrap" }) do
      local st = profile(function()
        local co = coroutine.create(body)
        local step = coroutine.wrap(body)
        driver(how == "resume" and function() coroutine.resume(co) end or step)
      end)
      local b, d = S.entry_of(st, body), S.entry_of(st, driver)
      -- per resumption, 1 tick up to the first tick(), 4 between them, 1 after the last; and
      -- 1 before the first yield
      assert.are.equal(19, b.tottime, how)
      assert.are.equal(0, S.find(st, "coroutine.yield").tottime, how)
      -- per call, 1 tick from the switch back up to the first tick(), 6 around the others and
      -- after them; and 5 more around its calls and return
      assert.are.equal(33, d.tottime, how)
      -- the switch's own ticks: on LuaJIT, the first call's tick before the body's call; on
      -- Lua 5.4, one from each call to the switch and one from the switch back to the return
      local sw = S.find(st, "coroutine.resume")
      if how == "wrap" then
        for _, e in ipairs(st.entries) do if e.name:find("^wrap%(") then sw = e end end
      end
      assert.are.equal(S.jit and 1 or 8, sw.tottime, how)
      S.assert_adds_up(st)
    end
  end)

  it("profiles coroutine.wrap generators", function()
    local function gen() for i = 1, 2 do coroutine.yield(i) end end
    local st = profile(function() local g = coroutine.wrap(gen) g() g() end)
    local body = S.entry_of(st, gen)
    assert.are.same({ 1, 1 }, { body.ncalls, body.pcalls })
    assert.are.equal(2, S.find(st, ("wrap(%s:%d)"):format(body.file, body.line)).ncalls)
    S.assert_adds_up(st)
  end)

  it("profiles a coroutine created before enable() once it is resumed", function()
    local function work() return 1 end
    local co = coroutine.create(function() while true do work() coroutine.yield() end end)
    coroutine.resume(co)
    local st = profile(function() for _ = 1, 3 do coroutine.resume(co) end end)
    assert.are.equal(3, S.entry_of(st, work).ncalls)
    assert.are.equal(3, S.find(st, "coroutine.yield").ncalls)
    assert.is_false(core.hooked(co), "its hook is given back at disable()")
  end)

  it("does not count a function as recursive because a suspended coroutine is inside it", function()
    local function f(co) if co then coroutine.yield() end return 1 end
    local st = profile(function()
      for _ = 1, 200 do
        local co = coroutine.create(f)
        coroutine.resume(co, true) -- abandoned while suspended inside f
      end
      collectgarbage() collectgarbage()
      f(false)
    end)
    local e = S.entry_of(st, f)
    assert.are.equal(201, e.ncalls)
    assert.are.equal(201, e.pcalls)
  end)
end)

describe("the Profile object", function()
  it("returns runcall's results and propagates its errors with no hook left", function()
    local p = cprof.Profile()
    assert.are.same({ 1, 2, 3 }, { p:runcall(function(...) return ... end, 1, 2, 3) })
    local ok, err = pcall(p.runcall, p, function() error({ code = 7 }) end)
    assert.is_false(ok)
    assert.are.equal(7, err.code)
    assert.is_false(core.hooked())
    assert.is_false(p:is_enabled())
  end)

  it("create_stats disables it and gives cProfile's stats dict (issue 28, E)", function()
    local stats = require "cprof.stats"
    local p = cprof.Profile { timer = "counter" }
    local rep = string.rep
    local line = debug.getinfo(1, "l").currentline + 1
    local function f(n) if n > 0 then return f(n - 1) .. rep("x", 1) end return "" end
    p:enable()
    f(2) f(0)
    local s = p:create_stats()
    assert.is_false(p:is_enabled())
    local file = debug.getinfo(1, "S").short_src
    local fk, ck = stats.func_key(file, line, "f"), stats.func_key("~", 0, "<string.rep>")
    -- f: 4 calls, 2 of them primitive; string.rep: 2 calls from f
    local r = s[fk]
    assert.are.same({ 2, 4 }, { r[1], r[2] })
    assert.is_true(r[3] > 0 and r[4] >= r[3])
    local self_edge = r[5][fk]
    -- { nc, cc, tt, ct }, nc first; as in lsprof, the call through the edge while it was
    -- already open (f(1) -> f(0)) is the recursive one
    assert.are.same({ 2, 1 }, { self_edge[1], self_edge[2] })
    assert.are.same({ 2, 2 }, { s[ck][1], s[ck][2] })
    assert.are.same({ 2, 2 }, { s[ck][5][fk][1], s[ck][5][fk][2] })
  end)

  it("refuses a second enabled profiler in the same state", function()
    local a, b = cprof.Profile(), cprof.Profile()
    a:enable()
    local ok, err = pcall(b.enable, b)
    a:disable()
    assert.is_false(ok)
    assert.matches("another cprof profiler is already enabled", err)
    b:enable() b:disable()
  end)

  it("accumulates over several enable/disable periods and clears", function()
    local function f() return 1 end
    local p = cprof.Profile()
    p:enable() f() p:disable()
    p:enable() f() f() p:disable()
    assert.are.equal(3, S.entry_of(p:getstats(), f).ncalls)
    p:clear()
    assert.are.equal(0, #p:getstats().entries)
  end)

  it("leaves the profiler itself out of the numbers", function()
    local p = cprof.Profile()
    p:enable()
    local x = math.abs(-1)
    p:disable()
    assert.are.equal(1, x)
    local st = p:getstats()
    assert.are.equal(1, #st.entries)
    assert.are.equal("math.abs", st.entries[1].name)
    assert.are.equal(1, st.entries[1].ncalls)
  end)

  it("rejects a bad option", function()
    local ok, err = pcall(cprof.Profile, { timer = "sundial" })
    assert.is_false(ok)
    assert.matches("^cprof: timer 'sundial': unknown timer %(the timers are [%w, ]*monotonic, cpu,"
      .. " thread, counter, or one the host registered%)$", err)
    assert.has_error(function() cprof.Profile(5) end)
  end)

  it("runs code strings with run and runctx", function()
    local p = cprof.Profile { timer = "counter" }
    _G.__cprof_spec_f = function() return 1 end
    p:run("__cprof_spec_f() __cprof_spec_f()")
    _G.__cprof_spec_f = nil
    assert.are.equal(2, S.find(p:getstats(), "__cprof_spec_f").ncalls)
    local env = { g = function() return 2 end }
    local locals = { h = function() return 3 end }
    local q = cprof.Profile { timer = "counter" }
    q:runctx("result = g() + h()", env, locals)
    assert.are.equal(5, locals.result)
    assert.is_nil(env.result)
    assert.has_error(function() q:runctx("x(", env) end)
  end)

  it("returns plain tables from getstats", function()
    local p = cprof.Profile()
    p:runcall(function() return 1 end)
    local st = p:getstats()
    -- the default timer: the time-stamp counter where it is invariant, else the monotonic clock
    assert.is_true(st.timer == "tsc" or st.timer == "monotonic")
    assert.is_true(st.unit > 0 and st.unit < 1e-6)
    local e = st.entries[1]
    for _, k in ipairs { "file", "line", "name", "what", "ncalls", "pcalls", "tottime", "cumtime", "callers" } do
      assert.is_not_nil(e[k], k)
    end
    assert.is_true(e.tottime >= 0 and e.cumtime >= e.tottime)
  end)
end)

describe("cprof.run", function()
  local function capture(f)
    local out = {}
    local real = io.stdout
    io.stdout = { write = function(_, ...) for _, s in ipairs { ... } do out[#out + 1] = s end end }
    local ok, err = pcall(f)
    io.stdout = real
    return table.concat(out), ok, err
  end

  it("prints a pstats report to stdout", function()
    _G.__cprof_spec_g = function() return 1 end
    local text = capture(function() cprof.run("__cprof_spec_g()") end)
    _G.__cprof_spec_g = nil
    assert.matches("2 function calls in %d+%.%d%d%d seconds", text)
    assert.matches("Ordered by: standard name", text)
    assert.matches("   ncalls  tottime  percall  cumtime  percall filename:lineno%(function%)", text)
  end)

  it("propagates an error after the report, with the profiler off", function()
    local text, ok, err = capture(function() cprof.run("error('inside', 0)") end)
    assert.is_false(ok)
    assert.are.equal("inside", err)
    assert.matches("function calls", text)
    assert.is_false(core.hooked())
  end)

  it("prints as CPython's Profile.print_stats: directories stripped, then sorted (issue 28, E)", function()
    -- two files of one name, each with h at line 1: summed once their folders are gone
    local a = load("local function h() return 1 end\nreturn function() h() h() end", "@/src/app/mod.lua")()
    local b = load("local function h() return 2 end\nreturn function() h() end", "@/lib/other/mod.lua")()
    local p = cprof.Profile { timer = "counter" }
    local line = debug.getinfo(1, "l").currentline + 1
    p:runcall(function() a() b() end)
    local expected = table.concat({
      "         6 function calls in 11.000 seconds",
      "",
      S.jit and ("   cprof: profiled on " .. jit.version .. " with the JIT compiler off: the times"
        .. " are those of the interpreter\n\n   Ordered by: call count") or "   Ordered by: call count",
      "",
      "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)",
      "        3    3.000    1.000    3.000    1.000 mod.lua:1(h)",
      "        1    3.000    3.000   11.000   11.000 core_spec.lua:%d(<anon>)",
      "        1    3.000    3.000    5.000    5.000 mod.lua:2(a)",
      "        1    2.000    2.000    3.000    3.000 mod.lua:2(b)",
      "", "", "" }, "\n")
    local text = capture(function() p:print_stats("calls") end)
    assert.are.equal(expected:format(line), text)
    -- cprof.run prints the same way
    _G.__cprof_spec_g = a
    text = capture(function() cprof.run("__cprof_spec_g()") end)
    _G.__cprof_spec_g = nil
    assert.matches("\n +2 +[%d.]+ +[%d.]+ +[%d.]+ +[%d.]+ mod%.lua:1%(h%)\n", text)
    assert.not_matches("/src/app/", text)
  end)

  it("runs in a given environment with runctx", function()
    local env = setmetatable({}, { __index = _G })
    local text = capture(function() cprof.runctx("x = 1 + 1", env, nil, nil, "calls") end)
    assert.are.equal(2, env.x)
    assert.matches("Ordered by: call count", text)
  end)
end)

describe("cprof.run_module (issue 28, E)", function()
  it("runs a module's file as a main chunk under a profile, with arg and ... for the run", function()
    local dir = S.new_dir()
    S.write_file(dir .. "/rm_greet.lua", "local function g(x) return x end\n"
      .. "_G.__cprof_spec_seen = { select('#', ...), (...), arg[0], arg[1], g(1) }\n")
    local saved_path, saved_arg = package.path, rawget(_G, "arg")
    package.path = dir .. "/?.lua;" .. package.path
    local path = dir .. "/rm.prof"
    local ok, p = pcall(cprof.run_module, "rm_greet", path, nil, { "a", "b" })
    local file = cprof.module_file("rm_greet")
    package.path = saved_path
    assert.are.equal(dir .. "/rm_greet.lua", file)
    local seen = _G.__cprof_spec_seen
    _G.__cprof_spec_seen = nil
    assert.is_true(ok, p)
    assert.are.same({ 2, "a", dir .. "/rm_greet.lua", "a", 1 }, seen)
    assert.are.equal(saved_arg, rawget(_G, "arg")) -- arg is the program's again
    local d = cprof.load(path)
    local names = {}
    for i = 1, d.frames.n do names[d.frames.name[i]] = d.frames.ncalls[i] end
    assert.are.equal(1, names.g)
    assert.are.equal(1, names["<main chunk>"])
    local e = select(2, pcall(cprof.run_module, "rm_nosuch_module"))
    assert.matches("^cprof: module 'rm_nosuch_module' not found:\n\tno file ", e)
    S.remove_dir(dir)
  end)
end)
