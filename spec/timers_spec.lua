-- The built-in timers: each is monotonic over a run and gives a profile in its own unit.
local cprof = require "cprof"
local S = require "spec.support"

local function work(n) local s = 0 for i = 1, n do s = s + i % 7 end return s end

describe("built-in timers", function()
  for _, name in ipairs { "monotonic", "cpu", "thread", "counter", "tsc" } do
    it(name .. " is monotonic over a run and names itself", function()
      local ok, p = pcall(cprof.Profile, { timer = name })
      if not ok then
        -- Only the time-stamp counter may be refused, and then with the reason.
        assert.are.equal("tsc", name)
        assert.matches("cprof: timer 'tsc': ", p)
        return
      end
      p:runcall(function() for _ = 1, 200 do work(100) end end)
      local st = p:getstats()
      assert.are.equal(name, st.timer)
      assert.is_true(st.unit > 0)
      local w = S.entry_of(st, work)
      assert.are.equal(200, w.ncalls)
      -- Time never runs backwards: no negative time, and a caller's time covers its callees'.
      for _, e in ipairs(st.entries) do
        assert.is_true(e.tottime >= 0 and e.cumtime >= e.tottime, e.name)
      end
      S.assert_adds_up(st)
      assert.is_true(w.cumtime > 0)
    end)
  end

  it("refuses an unknown timer by name", function()
    local ok, err = pcall(cprof.Profile, { timer = "sundial" })
    assert.is_false(ok)
    assert.matches("^cprof: timer 'sundial': unknown timer %(the timers are ", err)
    assert.has_error(function() cprof.Profile { timer = 42 } end,
      "cprof: option 'timer' must be a timer name or a function, not a number")
  end)
end)

describe("a Lua function as the timer", function()
  local function leaf() return 1 end
  local function a() leaf() end
  local function b() leaf() leaf() end
  local function root() a() b() end

  -- Python's golden run: a clock that advances one tick per reading.
  local ticking = S.ticking

  it("gives exact times for a fixed call tree: one tick per event", function()
    local p = cprof.Profile { timer = ticking(), unit = 0.001 }
    p:runcall(root)
    local st = p:getstats()
    assert.are.equal("lua function", st.timer)
    assert.are.equal(0.001, st.unit)
    -- The clock stops while cprof's hook runs, so each event is one tick on the profile's
    -- clock: root's 12 events (6 calls, 6 returns) span 11 ticks.
    local function ms(e) return { e.ncalls, math.floor(e.tottime * 1000 + 0.5), math.floor(e.cumtime * 1000 + 0.5) } end
    assert.are.same({ 3, 3, 3 }, ms(S.entry_of(st, leaf)))
    assert.are.same({ 1, 2, 3 }, ms(S.entry_of(st, a)))
    assert.are.same({ 1, 3, 5 }, ms(S.entry_of(st, b)))
    assert.are.same({ 1, 3, 11 }, ms(S.entry_of(st, root)))
  end)

  it("takes float seconds when no unit is given", function()
    local n = 0
    local p = cprof.Profile { timer = function() n = n + 0.5 return n end }
    p:runcall(root)
    local st = p:getstats()
    assert.are.equal(1e-9, st.unit)
    assert.are.equal(0.5, S.entry_of(st, leaf).tottime / 3)
    assert.are.equal(5.5, S.entry_of(st, root).cumtime)
  end)

  it("survives a timer that fails, counting the bad readings", function()
    local n = 0
    local p = cprof.Profile { timer = function() n = n + 1 if n % 2 == 0 then error("tick") end return n end, unit = 1 }
    assert.are.same({ 7 }, { p:runcall(function() root() return 7 end) })
    local st = p:getstats()
    assert.is_true(st.timer_errors > 0)
    assert.are.equal(3, S.entry_of(st, leaf).ncalls)
    local q = cprof.Profile { timer = function() return "soon" end, unit = 1 }
    q:runcall(root)
    assert.is_true(q:getstats().timer_errors > 0)
  end)

  it("rejects a unit without a function, and a bad unit", function()
    assert.has_error(function() cprof.Profile { timer = "monotonic", unit = 1 } end,
      "cprof: option 'unit' goes with a function timer")
    assert.has_error(function() cprof.Profile { unit = 1 } end,
      "cprof: option 'unit' goes with a function timer")
    assert.has_error(function() cprof.Profile { timer = ticking(), unit = -1 } end,
      "cprof: option 'unit' must be a positive number of seconds")
  end)
end)
