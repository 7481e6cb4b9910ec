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
    assert.has_error(function() cprof.Profile { timer = "sundial" } end,
      "cprof: timer 'sundial': unknown timer")
    assert.has_error(function() cprof.Profile { timer = 42 } end,
      "cprof: option 'timer' must be a timer name, not a number")
  end)
end)
