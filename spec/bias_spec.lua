-- Calibration: the cost of each kind of event that no clock reading sees, measured and
-- subtracted at report time where the events happened. Exact timers (`counter`, one tick per
-- reading, and a Lua function ticking once per reading) make every number here fixed.
local cprof = require "cprof"
local bias = require "cprof.bias"
local calibrate = require "cprof.calibrate"
local report_text = require "cprof.report.text"
local core = require("cprof.version").core()
local S = require "spec.support"

local function leaf() return 1 end
local function a() leaf() end
local function b() leaf() leaf() end
local function root() a() b() end

local ticking = S.ticking
local nop_c = core.hooked -- a C function every Lua (LuaJIT too) sends events for

-- {ncalls, tottime, cumtime} of a frame of data d, by the Lua function or by a C frame's name.
local function row(d, f)
  local line = type(f) == "function" and debug.getinfo(f, "S").linedefined
  for i = 1, d.frames.n do
    if (line and d.frames.line[i] == line and d.frames.kind[i] == "Lua")
       or (not line and d.frames.kind[i] == "C" and d.frames.name[i] == f) then
      return { d.frames.ncalls[i], d.frames.tottime[i], d.frames.cumtime[i] }
    end
  end
end

-- What the bias took off each of a frame's numbers: {tottime, cumtime}.
local function taken(raw, cal, f)
  local r, c = row(raw, f), row(cal, f)
  return { r[2] - c[2], r[3] - c[3] }
end

-- A chunk's start for S.run_lua: calibrations whose probe takes probes(f)'s f(i) at its i-th
-- run since that call (1 until the first), `calls` runs so far; CONFIRM 0: one probe after the
-- blocks.
local FAKE_PROBE = [[
  local cprof = require "cprof"
  local calibrate = require "cprof.calibrate"
  calibrate.CONFIRM = 0
  local calls, speed = 0, function() return 1 end
  local function probes(f) calls, speed = 0, f end
  calibrate.prober = function()
    return function() calls = calls + 1 return speed(calls) end
  end
]]

-- Powers of two, small enough that no time goes below zero: every sum below is exact.
local MODEL = { lua_call = 1 / 1024, c_call = 1 / 4096, switch = 1 / 64, wrap = 1 / 32,
                line = 1 / 8192 }

local function c_caller() for _ = 1, 1000 do nop_c() end end
local function nop() end
local function lua_caller() for _ = 1, 1000 do nop() end end

describe("the bias", function()
  it("is subtracted per event: exact numbers for a fixed call tree", function()
    -- One tick per event (see timers_spec), a quarter tick of bias per event.
    local p = cprof.Profile { timer = ticking(), unit = 1, bias = 0.25 }
    p:runcall(root)
    local raw = p:snapshot()
    assert.are.equal(0.25, raw.meta.bias)
    assert.are.same({ 1, 3, 11 }, row(raw, root))
    local d = p:report_data()
    -- tottime: one event per call received and per call made
    assert.are.same({ 3, 2.25, 2.25 }, row(d, leaf))
    assert.are.same({ 1, 1.5, 2.25 }, row(d, a))
    assert.are.same({ 1, 2.25, 3.75 }, row(d, b))
    -- cumtime: one event per outermost call and two per call beneath it
    assert.are.same({ 1, 2.25, 8.25 }, row(d, root))
    assert.are.equal(0, d.meta.bias_clamped)
    -- and it still adds up: root's cumtime is its own time plus its callees'
    assert.are.equal(row(d, root)[3], row(d, root)[2] + row(d, a)[3] + row(d, b)[3])
  end)

  it("clamps times that would go negative, and counts them", function()
    local p = cprof.Profile { timer = ticking(), unit = 1, bias = 2 }
    p:runcall(root)
    local d = p:report_data()
    assert.is_true(d.meta.bias_clamped > 0)
    for i = 1, d.frames.n do
      assert.is_true(d.frames.tottime[i] >= 0 and d.frames.cumtime[i] >= 0)
    end
  end)

  it("is not applied twice, and not at all when it is 0", function()
    local p = cprof.Profile { timer = ticking(), unit = 1, bias = 0.25 }
    p:runcall(root)
    local once = p:report_data()
    assert.are.same(row(once, root), row(bias.apply(once), root))
    local q = cprof.Profile { timer = ticking(), unit = 1 }
    q:runcall(root)
    assert.are.same(row(q:snapshot(), root), row(q:report_data(), root))
  end)

  it("comes from the module default when a profile sets none, a number or a table", function()
    cprof.bias = 1e-9
    local p = cprof.Profile()
    cprof.bias = { c_call = 2e-9 }
    local q = cprof.Profile { timer = "counter" }
    cprof.bias = 0
    assert.are.equal(1e-9, p:bias())
    assert.are.same({ lua_call = 0, c_call = 2e-9, switch = 0, wrap = 0, line = 0 }, q:bias())
    assert.are.equal(0, cprof.Profile { timer = "counter" }:bias())
    assert.has_error(function() cprof.Profile { bias = "x" } end,
      "cprof: option 'bias' must be a number of seconds per event")
  end)

  it("as a number b is the model of 2b per call (its return included) and b per line", function()
    assert.are.same({ lua_call = 0.5, c_call = 0.5, switch = 0, wrap = 0, line = 0.25 },
                    bias.model(0.25))
    local p = cprof.Profile { timer = "counter", bias = 0.25 }
    p:runcall(root)
    local q = p:sibling()
    q:bias { lua_call = 0.5, c_call = 0.5, line = 0.25 }
    q:runcall(root)
    for _, f in ipairs { leaf, a, b, root } do
      assert.are.same(row(p:report_data(), f), row(q:report_data(), f))
    end
  end)
end)

describe("the bias per kind of event", function()
  it("charges a frame making 1,000 C calls exactly 1,000 C-call biases", function()
    local p = cprof.Profile { timer = "counter", bias = MODEL }
    p:runcall(c_caller)
    local raw, cal = p:snapshot(), p:report_data()
    local nop_name = "cprof.core.hooked"
    assert.are.equal(1000, row(raw, nop_name)[1])
    -- each call's half before the clock is read is in the caller's time, half in the callee's
    assert.are.same({ 500 * MODEL.c_call + 0.5 * MODEL.lua_call,
                      1000 * MODEL.c_call + 0.5 * MODEL.lua_call }, taken(raw, cal, c_caller))
    assert.are.same({ 500 * MODEL.c_call, 500 * MODEL.c_call }, taken(raw, cal, nop_name))
    assert.are.same(1000 * MODEL.c_call + 0.5 * MODEL.lua_call, cal.meta.bias_subtracted)
  end)

  it("charges a frame making 1,000 Lua calls exactly 1,000 Lua-call biases", function()
    local p = cprof.Profile { timer = "counter", bias = MODEL }
    p:runcall(lua_caller)
    local raw, cal = p:snapshot(), p:report_data()
    assert.are.same({ 500.5 * MODEL.lua_call, 1000.5 * MODEL.lua_call },
                    taken(raw, cal, lua_caller))
    assert.are.same({ 500 * MODEL.lua_call, 500 * MODEL.lua_call }, taken(raw, cal, nop))
    -- the edge lua_caller -> nop loses what nop lost
    local e = 1
    while raw.frames.line[raw.edges.callee[e]] ~= debug.getinfo(nop, "S").linedefined do e = e + 1 end
    assert.are.equal(500 * MODEL.lua_call, raw.edges.tottime[e] - cal.edges.tottime[e])
  end)

  it("charges recursion to the function's own time, once per call received and per call made",
     function()
    local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
    local p = cprof.Profile { timer = "counter", bias = MODEL }
    p:runcall(fib, 10)
    local raw, cal = p:snapshot(), p:report_data()
    -- 177 calls, 176 of them made by fib itself
    assert.are.same({ 176.5 * MODEL.lua_call, 176.5 * MODEL.lua_call }, taken(raw, cal, fib))
    -- the call tree keeps the recursion, one node per depth: the nodes' own times lose as much
    -- together, the outermost node's cumulative time as much as the function's
    assert.are.equal(10, raw.nodes.n)
    local own = 0
    for k = 1, raw.nodes.n do own = own + raw.nodes.tottime[k] - cal.nodes.tottime[k] end
    assert.are.equal(176.5 * MODEL.lua_call, own)
    assert.are.equal(176.5 * MODEL.lua_call, raw.nodes.cumtime[1] - cal.nodes.cumtime[1])
  end)

  it("charges folded recursion the same (recursion = 1: one node)", function()
    local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
    local p = cprof.Profile { timer = "counter", bias = MODEL, recursion = 1 }
    p:runcall(fib, 10)
    local raw, cal = p:snapshot(), p:report_data()
    assert.are.equal(1, raw.nodes.n)
    assert.are.same({ 176.5 * MODEL.lua_call, 176.5 * MODEL.lua_call }, taken(raw, cal, fib))
    assert.are.equal(raw.nodes.tottime[1] - cal.nodes.tottime[1], 176.5 * MODEL.lua_call)
  end)

  it("charges a coroutine switch to the frame that resumed, one per resume", function()
    -- locals: under busted, the global `coroutine` is looked up through its environment
    local create, resume, yield = coroutine.create, coroutine.resume, coroutine.yield
    local function body() for _ = 1, 99 do yield() end end
    local function driver()
      local co = create(body)
      for _ = 1, 100 do resume(co) end
    end
    local p = cprof.Profile { timer = "counter", bias = MODEL }
    p:runcall(driver)
    local raw, cal = p:snapshot(), p:report_data()
    local resumes = row(raw, "coroutine.resume")
    if not resumes then pending("this Lua's coroutine.resume sends no events") return end
    assert.are.equal(100, resumes[1])
    -- its own time: the switches, half of each call it received and of the body's call it made;
    -- its cumulative time: the switches, half its own calls, the body's call and the 99 yields.
    -- On LuaJIT a resume ends at the switch (docs/SEMANTICS.md): half of each round trip is the
    -- driver's, half the body's after its yield (or the resume's, when the body started).
    local own, cum = S.jit and 0.5 or 100, S.jit and 50 or 100
    assert.are.same({ own * MODEL.switch + 50 * MODEL.c_call + 0.5 * MODEL.lua_call,
                      cum * MODEL.switch + 149 * MODEL.c_call + MODEL.lua_call },
                    taken(raw, cal, "coroutine.resume"))
    -- the driver's own time: half of its 101 C calls, and half the switches on LuaJIT
    assert.are.equal((S.jit and 50 or 0) * MODEL.switch + 50.5 * MODEL.c_call,
                     taken(raw, cal, driver)[1] - 0.5 * MODEL.lua_call)
    assert.are.equal((S.jit and 49.5 or 0) * MODEL.switch + 49.5 * MODEL.c_call,
                     taken(raw, cal, body)[1] - 0.5 * MODEL.lua_call)
    local totals = bias.totals(bias.counts(raw))
    assert.are.equal(100, totals.switch)
  end)

  it("charges a round trip through a function made by coroutine.wrap to that function", function()
    local wrap, yield = coroutine.wrap, coroutine.yield
    local function body() for _ = 1, 99 do yield() end end
    local function driver()
      local step = wrap(body)
      for _ = 1, 100 do step() end
    end
    local p = cprof.Profile { timer = "counter", bias = MODEL }
    p:runcall(driver)
    local raw, cal = p:snapshot(), p:report_data()
    local name
    for i = 1, raw.frames.n do
      if raw.frames.name[i]:find("^wrap%(") then name = raw.frames.name[i] end
    end
    if not name then
      pending("this Lua's functions made by coroutine.wrap send no events")
      return
    end
    assert.are.equal(100, row(raw, name)[1])
    -- as a resume: the round trips, half of each call it received and of the body's call it
    -- made; its cumulative time: the round trips, half its own calls, the body's call, the yields
    local own, cum = S.jit and 0.5 or 100, S.jit and 50 or 100
    assert.are.same({ own * MODEL.wrap + 50 * MODEL.c_call + 0.5 * MODEL.lua_call,
                      cum * MODEL.wrap + 149 * MODEL.c_call + MODEL.lua_call },
                    taken(raw, cal, name))
    assert.are.equal((S.jit and 50 or 0) * MODEL.wrap + 50.5 * MODEL.c_call,
                     taken(raw, cal, driver)[1] - 0.5 * MODEL.lua_call)
    local totals = bias.totals(bias.counts(raw))
    assert.are.same({ 100, 0 }, { totals.wrap, totals.switch })
  end)

  it("charges each line event to its function", function()
    local function lines(n)
      local x = 0
      for i = 1, n do
        x = x + i
      end
      return x
    end
    local p = cprof.Profile { timer = "counter", bias = MODEL, lines = true }
    p:runcall(lines, 200)
    local raw, cal = p:snapshot(), p:report_data()
    local hits = 0
    local me = nil
    for i = 1, raw.frames.n do
      if raw.frames.line[i] == debug.getinfo(lines, "S").linedefined then me = i end
    end
    for r = 1, raw.lines.n do
      if raw.lines.frame[r] == me then hits = hits + raw.lines.hits[r] end
    end
    assert.is_true(hits > 400)
    assert.are.same({ hits * MODEL.line + 0.5 * MODEL.lua_call,
                      hits * MODEL.line + 0.5 * MODEL.lua_call }, taken(raw, cal, lines))
  end)

  it("is kept in the profile's meta and in dumps, and read back", function()
    local m = { lua_call = 3e-8, c_call = 1e-8, switch = 2e-8, line = 5e-9,
                err = { lua_call = 1e-9, c_call = 2e-9 }, source = "calibrate" }
    local p = cprof.Profile { timer = "counter", bias = m }
    p:runcall(c_caller)
    local path = S.tmpname(".prof")
    p:dump_stats(path)
    local d = cprof.load(path)
    os.remove(path)
    assert.are.equal(0, d.meta.bias)
    assert.are.equal(3e-8, d.meta.bias_lua_call)
    assert.are.equal(2e-9, d.meta.bias_c_call_err)
    assert.are.equal("calibrate", d.meta.bias_source)
    local back = bias.from_meta(d.meta)
    assert.are.same({ lua_call = 3e-8, c_call = 1e-8, switch = 2e-8, wrap = 0, line = 5e-9,
                      err = { lua_call = 1e-9, c_call = 2e-9 }, source = "calibrate" }, back)
  end)

  it("refuses bad models with a message naming the key", function()
    assert.has_error(function() cprof.Profile { bias = { lua_calls = 1 } } end,
      "cprof: option 'bias': unknown key 'lua_calls' (the kinds are lua_call, c_call, switch, wrap,"
      .. " line)")
    assert.has_error(function() cprof.Profile { bias = { c_call = 0 / 0 } } end,
      "cprof: option 'bias'.c_call must be a finite number of seconds")
    local p = cprof.Profile { timer = "counter" }
    assert.has_error(function() p:bias { err = { line = "x" } } end,
      "cprof: bias.err must map kinds to numbers of seconds")
    assert.has_error(function() p:bias("x") end)
    assert.has_error(function() bias.apply({ frames = { n = 0, kind = {}, file = {}, line = {},
      lastline = {}, name = {}, ncalls = {}, pcalls = {}, tottime = {}, cumtime = {} },
      meta = { bias_line = "x" } }) end, "cprof: meta.bias_line must be a finite number")
  end)
end)

describe("the report's overhead line", function()
  it("says how much was subtracted and how uncertain the rest is", function()
    local p = cprof.Profile { timer = "counter", bias = { c_call = 0.5, err = { c_call = 0.25 },
                                                        source = "calibrate" } }
    p:runcall(c_caller)
    local d = p:report_data()
    local raw, total = p:snapshot(), 0
    for i = 1, d.frames.n do total = total + raw.frames.tottime[i] - d.frames.tottime[i] end
    -- 1000 C calls: 500 ticks charged, 250 uncertain (on LuaJIT the caller's time between the
    -- calls is its callee's, so the caller cannot give its half: the next spec); what the
    -- header says was subtracted is what left the total
    assert.are.equal(500, d.meta.bias_subtracted + d.meta.bias_lost)
    assert.are.equal(total, d.meta.bias_subtracted)
    assert.are.equal(250, d.meta.bias_uncertainty)
    local out = {}
    require("cprof.stats").new(p, { stream = { write = function(_, s) out[#out + 1] = s end } })
      :print_stats()
    assert.matches("\n   cprof: calibrated %(calibrate%): [%d.]+%% of the measured time",
                   table.concat(out))
  end)

  it("says how much overhead stays in when functions had less time than their charge", function()
    local p = cprof.Profile { timer = "counter", bias = 0 }
    p:runcall(c_caller)
    local d = p:snapshot()
    -- As on LuaJIT, where a round trip's costs land in other frames than those it is charged
    -- to: the caller holds the time, the callee less than its half of the C calls' cost.
    local caller, callee
    for i = 1, d.frames.n do
      if d.frames.kind[i] == "C" then callee = i else caller = i end
    end
    d.frames.tottime[caller], d.frames.cumtime[caller] = 4000, 5000
    d.frames.tottime[callee], d.frames.cumtime[callee] = 1000, 1000
    -- 1000 C calls of 3 ticks: 1500 charged to each; the callee's 1000 go, the 500 more stay
    local e = bias.apply(d, { c_call = 3, err = { c_call = 0.5 }, source = "calibrate" })
    assert.are.same({ 2500, 0 }, { e.frames.tottime[caller], e.frames.tottime[callee] })
    assert.are.equal(2500, e.meta.bias_subtracted)
    assert.are.equal(500, e.meta.bias_lost)
    assert.are.equal("   cprof: calibrated (calibrate): 50.0% of the measured time was cprof's"
      .. " overhead and is subtracted; the rest is uncertain by ±20.0%, and about 20.0% more of"
      .. " this total is overhead that could not be subtracted (charged to functions with less"
      .. " time than that)", report_text.overhead_line(e.meta, 2500))
    -- merged profiles hold the overhead of both
    assert.are.equal(1000, require("cprof.profdata").merge_meta(e.meta, e.meta).bias_lost)
    -- 1 tick each: nothing lost, nothing said of it
    e = bias.apply(d, { c_call = 1, err = { c_call = 0.5 }, source = "calibrate" })
    assert.are.same({ 0, 1000 }, { e.meta.bias_lost, e.meta.bias_subtracted })
    assert.are.equal("   cprof: calibrated (calibrate): 20.0% of the measured time was cprof's"
      .. " overhead and is subtracted; the rest is uncertain by ±12.5%",
      report_text.overhead_line(e.meta, 4000))
  end)

  it("subtracts or reports as left in every charge of a coroutine pair", function()
    -- a producer resumed and a consumer made by coroutine.wrap, as bench/accuracy.lua's coro
    local function pair(n)
      local producer = coroutine.create(function() for i = 1, n do coroutine.yield(i) end end)
      local consumer = coroutine.wrap(function(x) while true do x = coroutine.yield(x) end end)
      while true do
        local _, item = coroutine.resume(producer)
        if item == nil then break end
        consumer(item)
      end
    end
    local p = cprof.Profile { timer = "counter", bias = 0 }
    p:runcall(pair, 100)
    local raw = p:snapshot()
    local m = { lua_call = 1, c_call = 1, switch = 3, wrap = 3 }
    local d = bias.apply(raw, m)
    local t, charged, left = bias.totals(bias.counts(raw)), 0, 0
    for k, v in pairs(m) do charged = charged + v * t[k] end
    for i = 1, raw.frames.n do left = left + raw.frames.tottime[i] - d.frames.tottime[i] end
    -- LuaJIT: the consumer's last yield, never resumed, counts the half trip it would have had
    assert.are.same({ 101, S.jit and 100.5 or 100 }, { t.switch, t.wrap })
    assert.are.equal(charged, d.meta.bias_subtracted + d.meta.bias_lost)
    assert.are.equal(left, d.meta.bias_subtracted)
  end)

  it("estimates the overhead of an uncalibrated profile with its own timer's costs (issue 28, A.6)", function()
    local p = cprof.Profile { timer = "counter", bias = 0 }
    p:runcall(c_caller)
    local raw = p:snapshot()
    local function as_if(timer, lua)
      local d = p:snapshot()
      d.meta.timer, d.meta.lua_version = timer, lua or d.meta.lua_version
      return bias.apply(d).meta
    end
    local seen = {}
    for _, lua in ipairs { "Lua 5.4", "LuaJIT 2.1.0-beta3" } do
      for _, timer in ipairs { "tsc", "monotonic", "cpu", "thread" } do
        local t = bias.typical(timer, lua)
        assert.is_table(t, timer .. " on " .. lua)
        local meta = as_if(timer, lua)
        -- 1000 C calls from one Lua function called once: each call half in the caller
        assert.are.equal(1000 * t.c_call + 0.5 * t.lua_call, meta.overhead_estimate)
        assert.are.equal(("   cprof: not calibrated: %s of this total is cprof's own"
          .. " overhead (typical costs of the %s timer; CPROF_CALIBRATE=save or"
          .. " Profile:calibrate() measures them)"):format(t.at_least and "50.0% or more"
          or "about 50.0%", timer), report_text.overhead_line(meta, 2 * meta.overhead_estimate))
        seen[#seen + 1] = meta.overhead_estimate
      end
    end
    -- where the bench's programs held more than the costs account for, the line says so
    assert.is_nil(as_if("tsc", "Lua 5.4").overhead_at_least)
    assert.is_true(as_if("thread", "Lua 5.4").overhead_at_least)
    assert.matches("not calibrated: 50.0%% or more of this total",
      report_text.overhead_line(as_if("cpu", "Lua 5.4"), 2 * as_if("cpu", "Lua 5.4").overhead_estimate))
    -- a system call per clock reading: each event leaves several times what tsc's does
    assert.is_true(as_if("thread", "Lua 5.4").overhead_estimate
                   > 4 * as_if("tsc", "Lua 5.4").overhead_estimate)
    assert.is_true(as_if("cpu", "Lua 5.4").overhead_estimate
                   > 4 * as_if("tsc", "Lua 5.4").overhead_estimate)
    -- a timer whose costs cprof does not know: said, not guessed
    local meta = as_if("lua function")
    assert.is_false(meta.overhead_estimate)
    assert.are.equal("   cprof: not calibrated: how much of this total is cprof's own overhead is"
      .. " not known for the lua function timer (Profile:calibrate() measures it)",
      report_text.overhead_line(meta, 1))
    assert.is_false(as_if("my_host_timer").overhead_estimate)
    assert.is_nil(bias.typical("my_host_timer", "Lua 5.4"))
    -- counted ticks are no time: nothing to estimate or say
    assert.is_nil(bias.apply(raw).meta.overhead_estimate)
    assert.is_nil(report_text.overhead_line(bias.apply(raw).meta, 1))
    assert.is_nil(report_text.overhead_line({}, 1))
  end)

  it("says it does not know a Lua function timer's overhead in the report", function()
    local n = 0
    local p = cprof.Profile { timer = function() n = n + 1 return n end, unit = 1e-6 }
    p:runcall(c_caller)
    local out = S.collector()
    require("cprof.stats").new(p:snapshot(), { stream = out }):print_stats()
    assert.matches("\n\n   cprof: not calibrated: how much of this total is cprof's own overhead"
      .. " is not known for the lua function timer %(Profile:calibrate%(%) measures it%)\n\n",
      out.text())
  end)
end)

describe("a sibling", function()
  it("keeps the bias model, and turns line events on or off", function()
    local p = cprof.Profile { timer = "counter", bias = MODEL }
    local q = p:sibling(true)
    assert.are.same(p:bias(), q:bias())
    local function f() local x = 1 return x end
    q:runcall(f)
    assert.is_true(q:snapshot().lines.n > 0)
    local r = q:sibling(false)
    r:runcall(f)
    assert.is_nil(r:snapshot().lines)
  end)
end)

describe("calibrate", function()
  -- In a child process: thousands of short profiles are no business of the specs' own state.
  it("returns the model, with an uncertainty per kind, and sets it", function()
    local out, err, status = S.run_lua([[
      local cprof = require "cprof"
      local p = cprof.Profile { timer = "counter" }
      local m = p:calibrate(1000)
      for _, k in ipairs(require("cprof.bias").KINDS) do
        assert(type(m[k]) == "number" and m.err[k] >= 0, k)
      end
      assert(m.confidence == 0.95 and m.timer == "counter" and p:bias() == m)
      -- a counted probe takes as many ticks every time: every round is at full speed
      assert(m.probe > 0 and m.full_speed == 1 and m.blocks == 5)
      print(select(2, pcall(p.calibrate, p, 0)))
    ]])
    assert.are.equal(0, status, err)
    assert.matches("bad argument #1 to 'calibrate'", out)
  end)

  it("measures more blocks while a kind has too few at full speed, then takes all rounds", function()
    local out, err, status = S.run_lua([[
      local cprof = require "cprof"
      local calibrate = require "cprof.calibrate"
      calibrate.MIN_ROUNDS, calibrate.MAX_BLOCKS = math.huge, 7
      local m = cprof.Profile { timer = "counter" }:calibrate(1000)
      print(("%d %g %s"):format(m.blocks, m.full_speed, tostring(m.lua_call > 0)))
    ]])
    assert.are.equal(0, status, err)
    assert.are.equal("7 0 true\n", out)
  end)

  it("measures more blocks while a kind has few with half its rounds at full speed", function()
    -- probes in a cycle of ten, `fast` of them at full speed: a round lies between two probes,
    -- so with 4 fast 3 rounds in 10 count (every kind votes in every block, none has half its
    -- rounds at full speed), with 7 fast 6 in 10
    local out, err, status = S.run_lua(FAKE_PROBE .. [[
      local function blocks(fast)
        probes(function(i) return i % 10 < fast and 1 or 2 end)
        local m = cprof.Profile { timer = "counter" }:calibrate(1000)
        return m.blocks, m.full_speed
      end
      print(blocks(4))
      print(blocks(7))
    ]])
    assert.are.equal(0, status, err)
    local b4, f4, b7, f7 = out:match("^(%d+)\t(%S+)\n(%d+)\t(%S+)\n$")
    assert.are.same({ calibrate.DENSE_BLOCKS, calibrate.BLOCKS }, { tonumber(b4), tonumber(b7) })
    assert.is_true(math.abs(tonumber(f4) - 0.3) < 0.02 and math.abs(tonumber(f7) - 0.6) < 0.02, out)
  end)

  it("measures C calls in two parts a block, apart in time, each voting", function()
    -- a round's speed is the number of the probe after it: its place in time
    local out, err, status = S.run_lua(FAKE_PROBE .. [[
      calibrate.MAX_BLOCKS = calibrate.BLOCKS
      probes(function(i) return i end)
      local seen, full_speed = {}, calibrate.full_speed
      calibrate.full_speed = function(parts, fastest)
        seen[#seen + 1] = parts
        return full_speed(parts, fastest)
      end
      cprof.Profile { timer = "counter" }:calibrate(1000)
      for _, parts in ipairs(seen) do io.write(#parts, " ", #parts[1].speed, " ") end
      local lua_call, c_call, line = seen[1], seen[2], seen[5]
      -- the first block's second part of C calls: after its line events, before the next block
      print(c_call[2].speed[1] > line[1].speed[#line[1].speed],
            c_call[2].speed[#c_call[2].speed] < lua_call[2].speed[1])
    ]])
    assert.are.equal(0, status, err)
    assert.are.equal("5 101 10 202 5 303 5 303 5 101 true\ttrue\n", out)
  end)

  it("measures again when the machine turns out faster after the blocks", function()
    -- the block's calls are counted first (CONFIRM 0: one probe after)
    local out, err, status = S.run_lua(FAKE_PROBE .. [[
      local function run() return cprof.Profile { timer = "counter" }:calibrate(1000) end
      local m = run()
      local per_try = calls - 1
      -- a slow first attempt, then the machine at full speed: measured twice
      probes(function(i) return i <= per_try and 2 or 1 end)
      local twice = run()
      -- slow in every attempt's blocks, fast after each: RETRIES more, no more
      probes(function(i) return (i - 1) % (per_try + 1) < per_try and 2 or 1 end)
      local always = run()
      print(m.attempts, twice.attempts, twice.probe, always.attempts, always.probe)
    ]])
    assert.are.equal(0, status, err)
    assert.are.equal(("1\t2\t1\t%d\t2\n"):format(calibrate.RETRIES + 1), out)
  end)

  it("keeps the rounds whose probes ran at full speed", function()
    assert.are.same({ 1, 2, 5 }, calibrate.at_full_speed({ 1.0, 1.29, 1.31, 2.0, 1.1 }, 1))
    local probes = {}
    for i = 1, 200 do probes[i] = 201 - i end
    -- the 1st percentile, not a lone fastest reading
    assert.are.equal(2, calibrate.fastest(probes))
    assert.are.equal(7, calibrate.fastest({ 9, 7, 8 }))
    assert.are.same({ "b", "d" }, calibrate.pick({ "a", "b", "c", "d" }, { 2, 4 }))
  end)

  it("lets a block vote with its full-speed rounds only when it has enough of them", function()
    local function block(fast, slow)
      local b = { prof = {}, plain = {}, speed = {} }
      for r = 1, fast + slow do
        b.prof[r], b.plain[r], b.speed[r] = 10 + r, r, r <= fast and 1 or 1.8
      end
      return b
    end
    local votes, full = calibrate.full_speed({ block(30, 10), block(10, 30) }, 1)
    assert.is_true(full)
    assert.are.equal(1, #votes)
    assert.are.equal(30, #votes[1].prof)
    assert.are.equal(30, votes[1].plain[30])
    -- none has enough: every block votes, with all its rounds
    votes, full = calibrate.full_speed({ block(10, 30), block(0, 5) }, 1)
    assert.is_false(full)
    assert.are.same({ 40, 5 }, { #votes[1].prof, #votes[2].plain })
  end)

  it("estimates a shift by the median of pairwise differences, with its interval", function()
    -- x is y moved by 10, one value disturbed
    local x, y = {}, {}
    for i = 1, 20 do x[i], y[i] = i + 10, i end
    x[20] = 1000
    local est, lo, hi = calibrate.shift(x, y)
    assert.are.equal(10, est)
    assert.is_true(lo <= 10 and hi >= 10 and hi - lo < 15)
  end)

  it("selects the shift and its bounds among the pairs, as sorting all of them would", function()
    local function by_sort(x, y)
      local d = {}
      for i = 1, #x do
        for j = 1, #y do d[#d + 1] = x[i] - y[j] end
      end
      table.sort(d)
      local n = #d
      local k = math.floor(n / 2 - 1.959964 * math.sqrt(n * (#x + #y + 1) / 12))
      if k < 0 then k = 0 end
      return { n % 2 == 1 and d[(n + 1) / 2] or (d[n / 2] + d[n / 2 + 1]) / 2, d[k + 1], d[n - k] }
    end
    -- sizes odd and even, from one element; many ties (values 0..3), distinct values, and times
    -- of microseconds (multiples of 2^-30, so that every difference is exact)
    local seed = 12345
    local function rand(n)
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed % n
    end
    local shapes = {
      function() return rand(4) end,
      function() return rand(1000000) end,
      function() return (200000 + rand(20000)) / 2 ^ 30 end,
    }
    for trial = 1, 60 do
      local value = shapes[trial % 3 + 1]
      local x, y = {}, {}
      for i = 1, 1 + rand(30) do x[i] = value() end
      for i = 1, 1 + rand(30) do y[i] = value() end
      assert.are.same(by_sort(x, y), { calibrate.shift(x, y) }, "trial " .. trial)
    end
  end)
end)

describe("the kept calibration", function()
  local dir
  before_each(function() dir = S.new_dir() end)
  after_each(function() S.remove_dir(dir) end)

  local M = { lua_call = 3e-8, c_call = 1.25e-8, switch = 4e-8, wrap = 5e-8, line = 2e-8,
              err = { lua_call = 1e-9, c_call = 5e-10, switch = 2e-9, wrap = 4e-9, line = 1e-10 },
              confidence = 0.95, date = "2026-11-24 19:00 UTC", timer = "tsc",
              lua_version = "Lua 5.4", cprof_version = "0.1.0" }

  it("is written to a file and read back, with its date", function()
    local path = calibrate.path(dir .. "/cprof", "tsc", "Lua 5.4", "0.1.0")
    assert.are.equal(dir .. "/cprof/calibration-tsc-Lua_5.4-0.1.0.txt", path)
    assert.are.equal(path, calibrate.save(M, path))
    local m = calibrate.load(path)
    for _, k in ipairs(bias.KINDS) do
      assert.are.equal(M[k], m[k])
      assert.are.equal(M.err[k], m.err[k])
    end
    assert.are.equal("saved 2026-11-24 19:00 UTC", m.source)
    assert.is_nil(calibrate.load(dir .. "/none.txt"))
  end)

  it("says which line of a file that is not one is wrong", function()
    local path = dir .. "/bad.txt"
    S.write_file(path, "# x\nlua_call = 1e-8\nc_call = many\n")
    local m, err = calibrate.load(path)
    assert.is_nil(m)
    assert.are.equal("cprof: " .. path .. ":3: not a number", err)
    S.write_file(path, "lua_call = 1e-8\nwhatever = 2\n")
    m, err = calibrate.load(path)
    assert.is_nil(m)
    assert.matches("unknown key 'whatever'", err)
  end)

  it("needs a folder: XDG_CACHE_HOME or HOME", function()
    local out, err = S.run_lua([[print(pcall(require("cprof").save_calibration))]], "",
                               "env -u HOME -u XDG_CACHE_HOME")
    assert.are.equal("false\tcprof: no folder for the calibration: set XDG_CACHE_HOME or HOME\n",
                     out, err)
  end)

  it("says why it cannot be written, naming the file", function()
    local path = dir .. "/file/calibration.txt"
    S.write_file(dir .. "/file", "a file, not a folder")
    local ok, err = calibrate.save(M, path)
    assert.is_nil(ok)
    assert.matches("^cprof: cannot write the calibration " .. path:gsub("%p", "%%%0"), err)
  end)

  it("is kept by CPROF_CALIBRATE=save and used by the next run; a bad file is named", function()
    local script = "local s = 0 for i = 1, 1000 do s = s + #tostring(i) end"
    local env = "env CPROF_CALIBRATE=save CPROF_CALIBRATE_PROCESSES=2 XDG_CACHE_HOME=" .. S.q(dir)
    local _, err, status = S.run_lua(script, "-l cprof.auto", env)
    assert.are.equal(0, status, err)
    local path = err:match("the bias model is kept in (%S+)")
    assert.is_truthy(path, err)
    -- a line as it starts and as each process ends (issue 28, C.5)
    local ns = "%(ns: lua_call [-%d.]+, c_call [-%d.]+, switch [-%d.]+, wrap [-%d.]+, line [-%d.]+%)\n"
    assert.matches("^cprof: CPROF_CALIBRATE=save: measuring this machine's bias model of timer %w+,"
      .. " in fresh processes one after the other %(a line as each ends%)\n"
      .. "cprof: CPROF_CALIBRATE=save: process 1 of 2 done, %d+ s so far " .. ns
      .. "cprof: CPROF_CALIBRATE=save: process 2 of 2 done, %d+ s so far " .. ns
      .. "cprof: CPROF_CALIBRATE=save: the bias model is kept in ", err)
    assert.is_truthy(calibrate.load(path))
    assert.matches("cprof: calibrated %(saved %d+%-%d+%-%d+ %d+:%d+ UTC, median of 2 processes%)",
                   err)
    -- each process's values are kept as comments
    assert.matches("\n# measured in 2 processes, each kind in each:\n# lua_call = %S+ %S+\n",
                   S.read_file(path))
    _, err = S.run_lua(script, "-l cprof.auto", "env XDG_CACHE_HOME=" .. S.q(dir))
    assert.matches("cprof: calibrated %(saved %d+%-%d+%-%d+ %d+:%d+ UTC%)", err)
    -- (with no folder to keep it in, nothing is measured)
    _, err = S.run_lua(script, "-l cprof.auto", "env -u HOME -u XDG_CACHE_HOME CPROF_CALIBRATE=save"
                       .. " CPROF_CALIBRATE_PROCESSES=many")
    assert.matches("^cprof: CPROF_CALIBRATE_PROCESSES must be a whole number, 1 or more, not"
                   .. " 'many'; using 5\ncprof: CPROF_CALIBRATE: cprof: no folder", err)
    S.write_file(path, "lua_call = soon\n")
    _, err = S.run_lua(script, "-l cprof.auto", "env XDG_CACHE_HOME=" .. S.q(dir))
    assert.matches("cprof: " .. path:gsub("%p", "%%%0") .. ":1: not a number %(ignored%)", err)
    -- (on LuaJIT the typical costs are a floor: "N% or more")
    assert.matches("cprof: not calibrated: [^\n]*%d%% [^\n]*of this total is cprof's own overhead", err)
  end)

  it("is used by profiles of its timer made afterwards, and the report says so", function()
    local meta = cprof.Profile { timer = "tsc" }:snapshot().meta
    local m = {}
    for k, v in pairs(M) do m[k] = v end
    m.lua_version, m.cprof_version = meta.lua_version, require("cprof.version").VERSION
    assert(calibrate.save(m, calibrate.path(dir .. "/cprof", "tsc", m.lua_version,
                                             m.cprof_version)))
    local script = [[
      local cprof = require "cprof"
      local p = cprof.Profile { timer = "tsc" }
      local b = p:bias()
      print(type(b) == "table" and b.c_call or "none", cprof.Profile { timer = "monotonic" }:bias() == 0)
      local function f() for _ = 1, 100 do tostring(1) end end
      p:runcall(f)
      p:print_stats()
    ]]
    local out, err, status = S.run_lua(script, "", "env XDG_CACHE_HOME=" .. S.q(dir))
    assert.are.equal(0, status, err)
    assert.are.equal("1.25e-08\ttrue", out:match("^[^\n]*"))
    assert.matches("cprof: calibrated %(saved 2026%-11%-24 19:00 UTC%)", out)
    out = S.run_lua(script, "", "env CPROF_CALIBRATE=0 XDG_CACHE_HOME=" .. S.q(dir))
    assert.are.equal("none\ttrue", out:match("^[^\n]*"))
  end)
end)

describe("the machine's model", function()
  -- models measured in five processes: per kind the median, and the larger of the median
  -- uncertainty and half the range of the 2nd to the 4th value
  local function five()
    local vals = { lua_call = { 10, 12, 11, 30, 13 }, c_call = { -4, -4, -5, -4, -3 },
                   switch = { 8, 16, 12, 14, 9 }, wrap = { 16, 16, 16, 16, 16 },
                   line = { 1, 2, 3, 4, 5 } }
    local errs = { 0.5, 2, 0.25, 0.5, 1 }
    local models = {}
    for i = 1, 5 do
      models[i] = { err = {} }
      for k, v in pairs(vals) do models[i][k], models[i].err[k] = v[i], errs[i] end
    end
    return models, vals
  end

  it("is the median of the processes' models, uncertain by their middle half's range", function()
    local models, vals = five()
    local m = calibrate.combine(models)
    assert.are.same({ lua_call = 12, c_call = -4, switch = 12, wrap = 16, line = 3 },
                    { lua_call = m.lua_call, c_call = m.c_call, switch = m.switch, wrap = m.wrap,
                      line = m.line })
    -- lua_call: 11..13 (the 30 left out); c_call: -4..-4, the median uncertainty; switch: 9..14
    assert.are.same({ lua_call = 1, c_call = 0.5, switch = 2.5, wrap = 0.5, line = 1 }, m.err)
    assert.are.same(vals, m.processes)
    assert.are.equal("median of 5 processes", m.source)
    -- an even number: the mean of the middle two; the middle half of four is the 2nd and 3rd
    m = calibrate.combine({ models[1], models[2], models[3], models[4] })
    assert.are.equal(11.5, m.lua_call)
    assert.are.equal(0.5, m.err.lua_call)
    assert.are.equal(2.5, m.line)
    -- a model table like any other: set as a bias, and kept in dumps without `processes`
    local p = cprof.Profile { timer = "counter", bias = m }
    assert.are.equal(m.processes, p:bias().processes)
  end)

  it("is measured in this process when no child can be: one process, a custom timer, no"
     .. " interpreter, no io.popen", function()
    local calls = 0
    local function here()
      calls = calls + 1
      return { lua_call = 1, c_call = 2, switch = 3, wrap = 4, line = 5, err = {} }
    end
    assert.are.equal("1 process", calibrate.machine("counter", 10, 1, "lua5.4", here).source)
    assert.are.equal("1 process", calibrate.machine("counter", 10, 5, nil, here).source)
    assert.are.equal("1 process",
                     calibrate.machine(function() return 0 end, 10, 5, "lua5.4", here).source)
    local popen = io.popen
    io.popen = nil
    local ok, m = pcall(calibrate.machine, "counter", 10, 5, "lua5.4", here)
    io.popen = popen
    assert.is_true(ok, m)
    assert.are.equal("1 process", m.source)
    assert.are.equal(4, calls)
    assert.is_nil(calibrate.machine("counter", 10, 1, "lua5.4", function() end))
  end)

  it("names a child that failed, with what it said, and leaves no file behind", function()
    local dir = S.new_dir()
    -- an "interpreter" that says something and fails, one that writes nothing, one that
    -- writes a file that is not a model (the path: the last string of its -e code)
    local function stub(name, body)
      local path = dir .. "/" .. name
      S.write_file(path, "#!/bin/sh\nfile=$(printf '%s' \"$3\" | sed 's/.*, \"\\(.*\\)\")$/\\1/')\n"
                   .. body .. "\n")
      assert(os.execute("chmod +x " .. S.q(path)))
      return path
    end
    local cases = {
      { stub("fails", "echo \"no luck\" >&2; echo \"$file\" >&2; exit 3"),
        "exit status 3", ": no luck\n" },
      { stub("silent", "exit 0"), "it wrote no model", "" },
      { stub("junk", "echo 'lua_call = soon' > \"$file\""), "cprof: /%S+:1: not a number", "" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(calibrate.machine, "counter", 10, 2, c[1], error)
      assert.is_false(ok)
      local head = "^cprof: calibration in a child process failed %(" .. c[2] .. "%): "
                   .. c[1]:gsub("%p", "%%%0") .. " %-E "
      assert.matches(head, err)
      assert.matches("%.child%(\"counter\", 10, \"[^\"]+\"%)'" .. c[3]:gsub("%p", "%%%0"), err)
      local file = err:match('%.child%("counter", 10, "([^"]+)"%)')
      assert.is_nil(io.open(file, "r"), file .. " is left")
    end
    S.remove_dir(dir)
  end)

  it("measures a process again when its probe ran slow: the host slowed it", function()
    local dir = S.new_dir()
    -- a stand-in interpreter: its first model (lua_call 30 ns) has a probe three times slower
    -- than the next ones' (10 ns)
    local path = dir .. "/lua"
    S.write_file(path, table.concat({ "#!/bin/sh",
      "file=$(printf '%s' \"$3\" | sed 's/.*, \"\\(.*\\)\")$/\\1/')",
      "n=$(cat " .. S.q(dir .. "/n") .. " 2>/dev/null || echo 0); echo $((n + 1)) > " .. S.q(dir .. "/n"),
      "if [ $n = 0 ]; then echo 'lua_call = 3e-08' > \"$file\"; echo 'probe = 3e-05' >> \"$file\"",
      "else echo 'lua_call = 1e-08' > \"$file\"; echo 'probe = 1e-05' >> \"$file\"; fi", "" }, "\n"))
    assert(os.execute("chmod +x " .. S.q(path)))
    local ended = {}
    local m = calibrate.machine("tsc", 10, 3, path, error, function(i, k, model, again)
      ended[#ended + 1] = { i, k, model.lua_call, again }
    end)
    local runs = S.read_file(dir .. "/n")
    S.remove_dir(dir)
    -- each process said as it ended, the one measured again twice
    assert.are.same({ { 1, 3, 3e-8, false }, { 2, 3, 1e-8, false }, { 3, 3, 1e-8, false },
                      { 1, 3, 1e-8, true } }, ended)
    assert.are.same({ 1e-8, 1e-8, 1e-8 }, m.processes.lua_call)
    assert.are.equal(1e-8, m.lua_call)
    assert.are.equal(1, m.remeasured)
    assert.are.equal("4\n", runs)
  end)

  it("runs the children with this process's module paths and JIT, and no LUA_INIT", function()
    local cmd = calibrate.child_command("/my lua/lua", "tsc", 1000, "/tmp/x")
    assert.are.equal("'/my lua/lua' -E " .. ((S.jit and not jit.status()) and "-joff " or "")
                     .. "-e ", cmd:sub(1, #cmd - #cmd:match("'package.*$")))
    assert.are.equal(require("cprof.args").shell_word(("package.path, package.cpath = %q, %q"
      .. " require('cprof.calibrate').child(\"tsc\", 1000, \"/tmp/x\")"):format(package.path,
                                                                                package.cpath)),
                     cmd:match("^.- %-e ('.*')$"))
  end)

  it("is measured by fresh processes, saved with each one's values, and read back", function()
    local dir = S.new_dir()
    local out, err, status = S.run_lua([[
      local cprof = require "cprof"
      local path, m = cprof.save_calibration("counter", 1000, 2)
      local kinds = require("cprof.bias").KINDS
      for _, k in ipairs(kinds) do
        -- the counter timer is exact: every process measures the same
        assert(m.processes[k][1] == m.processes[k][2] and m[k] == m.processes[k][1], k)
      end
      print(m.source)
      local back = require("cprof.calibrate").load(path)
      for _, k in ipairs(kinds) do
        assert(("%.6g"):format(back[k]) == ("%.6g"):format(m[k]), k)
      end
      print(back.processes, back.source:match("^saved [^,]*$") ~= nil)
      print(select(2, pcall(cprof.save_calibration, "counter", 1000, 0)))
      print(select(2, pcall(cprof.save_calibration, "counter", 0.5)))
      -- a timer that never moves: every kind costs nothing, and there is nothing to keep
      print(select(2, pcall(cprof.save_calibration, function() return 0 end, 1000)))
    ]], "", "env XDG_CACHE_HOME=" .. S.q(dir))
    S.remove_dir(dir)
    assert.are.equal(0, status, err)
    assert.matches("^saved %d+%-%d+%-%d+ %d+:%d+ UTC, median of 2 processes\nnil\ttrue\n", out)
    assert.matches("bad argument #3 to 'save_calibration' %(a whole number of processes, 1 or"
                   .. " more expected, got number%)\n", out)
    assert.matches("bad argument #2 to 'save_calibration' %(a whole number of calls from 1 to"
                   .. " 10000000 expected, got number%)\n", out)
    assert.matches("\n[^\n]*cprof: the calibration found every kind of event free: nothing to"
                   .. " keep\n$", out)
  end)
end)

describe("bench/accuracy_series.lua", function()
  -- each kind's spread over a window: the largest distance from the median, over it
  it("judges every window of three runs from their `series:` lines", function()
    local dir = S.new_dir()
    local function line(met, model, first, fib, own_fib)
      local t = { "series: met=" .. met .. " processes=5" }
      for i, k in ipairs(bias.KINDS) do t[#t + 1] = ("model.%s=%.3f"):format(k, model[i]) end
      for i, k in ipairs(bias.KINDS) do t[#t + 1] = ("first.%s=%.3f"):format(k, first[i]) end
      t[#t + 1] = ("fib.total=%.4f own.fib.total=%.4f split.calls.share=0.0100"):format(fib, own_fib)
      return table.concat(t, " ")
    end
    local same = { 12.5, -4.2, 12.5, 16, 11 }
    S.write_file(dir .. "/runs.txt", table.concat({
      "the output of a run, then its line:",
      line(1, { 12, -4, 12, 16, 11 }, { 12, -4, 14, 16, 0 }, 0.02, 0.03),
      line(0, { 13, -4.5, 11, 16, 11 }, { 16, -4, 8, 16, 0 }, 0.11, -0.05),
      line(1, same, { 12, -4, 12, 16, 0 }, 0.02, 0.03),
      line(1, same, { 12, -4, 12, 16, 0 }, -0.02, 0.03),
      line(1, { 15.1, -4.2, 12.5, 16, 11 }, { 12, -4, 12, 16, 0 }, 0.02, 0.03),
    }, "\n") .. "\n")
    local out, err, status = S.capture(S.lua .. " bench/accuracy_series.lua --from="
                                       .. S.q(dir .. "/runs.txt"))
    S.remove_dir(dir)
    assert.are.equal(0, status, err)
    local own, machine = out:match("^(.-\n)\n(.*)$")
    assert.are.equal(table.concat({
      "Per run: the judge and the bias model subtracted (ns); per window of three runs, each kind's spread",
      "run   judge     lua_call    c_call    switch      wrap      line  outside 10% (20% for a spread)",
      "1     MET           12.0      -4.0      12.0      16.0      11.0",
      "2     NOT MET       13.0      -4.5      11.0      16.0      11.0  fib.total +11.0%",
      "3     MET           12.5      -4.2      12.5      16.0      11.0",
      "4     MET           12.5      -4.2      12.5      16.0      11.0",
      "5     MET           15.1      -4.2      12.5      16.0      11.0",
      "runs  window    lua_call    c_call    switch      wrap      line  every point",
      "1-3                 ±4%      ±7%      ±8%      ±0%      ±0%  no: run 2",
      "2-4                 ±4%      ±7%     ±12%      ±0%      ±0%  no: run 2",
      "3-5                ±21%      ±0%      ±0%      ±0%      ±0%  no: lua_call spread",
      "windows of three meeting every point: 0 of 3", "" }, "\n"), machine)
    -- the runs' own calibrations: a kind whose median is 0 is not judged
    assert.matches("\n1%-3                ±33%%      ±0%%     ±33%%      ±0%%         %-  no: lua_call"
                   .. " spread, switch spread\n", own)
    assert.matches("\n3%-5                 ±0%%      ±0%%      ±0%%      ±0%%         %-  yes\n", own)
    assert.matches("\nwindows of three meeting every point with each run's own calibration: 1 of 3\n$",
                   own)
    _, err, status = S.capture(S.lua .. " bench/accuracy_series.lua --from=/nonexistent/runs.txt")
    assert.are.equal(1, status)
    assert.matches("^accuracy_series.lua: /nonexistent/runs.txt: No such file", err)
  end)
end)

describe("the bias on a trace", function()
  local function traced(f)
    local p = cprof.Profile { timer = "counter", trace = true, bias = MODEL }
    p:runcall(f)
    return p:snapshot(), p:report_data()
  end

  it("takes each event's share off the times after it", function()
    local function leaf() end
    local function root() for _ = 1, 5 do leaf() end end
    local raw, cal = traced(root)
    local T, C = raw.trace, cal.trace
    assert.are.equal(12, T.n)
    -- Lua calls only: half a unit an event, a quarter before its clock reading and a quarter
    -- after; the first event keeps its time
    for i = 1, T.n do
      assert.are.equal(T.time[i] - (i - 1) * MODEL.lua_call / 2, C.time[i])
    end
    assert.are.equal(0, cal.meta.trace_bias_clamped)
    -- the snapshot's own trace is not touched
    assert.are.equal(11, T.time[T.n] - T.time[1])
  end)

  it("takes half a round trip off at each change of thread", function()
    -- locals: under busted, the global `coroutine` is looked up through its environment
    local create, resume, yield = coroutine.create, coroutine.resume, coroutine.yield
    local function body() yield() end
    local function root()
      local co = create(body)
      resume(co)
      resume(co)
    end
    local raw, cal = traced(root)
    local T, C = raw.trace, cal.trace
    local halves, changes = 0, 0
    for i = 1, T.n do
      local f = raw.nodes.frame[T.node[i]]
      halves = halves + (raw.frames.kind[f] == "C" and MODEL.c_call or MODEL.lua_call) / 2
      if i > 1 and T.thread[i] ~= T.thread[i - 1] then changes = changes + 1 end
    end
    assert.are.equal(4, changes)
    -- root's call and return (the first and last events) lose only their inner quarters
    local taken = halves - MODEL.lua_call / 2 + changes * MODEL.switch / 2
    if S.jit then
      -- a LuaJIT built-in returns at the time of its call: no time to take between them
      assert.is_true(cal.meta.trace_bias_clamped > 0)
      assert.is_true(T.time[T.n] - C.time[T.n] < taken)
    else
      assert.are.equal(0, cal.meta.trace_bias_clamped)
      assert.are.equal(T.time[T.n] - taken, C.time[T.n])
    end
  end)

  it("never moves an event before its thread's previous one", function()
    local function leaf() end
    local p = cprof.Profile { timer = "counter", trace = true, bias = { lua_call = 3 } }
    p:runcall(function() leaf() leaf() end)
    local cal = p:report_data()
    local C = cal.trace
    assert.is_true(cal.meta.trace_bias_clamped > 0)
    for i = 2, C.n do assert.is_true(C.time[i] >= C.time[i - 1]) end
  end)
end)
