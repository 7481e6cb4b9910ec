-- Every allocation cprof makes can fail: the program must go on unharmed, and the profile must
-- say it is incomplete or refuse to start with a clear error.
local cprof = require "cprof"
local core = require "cprof.core"
local coroutine, pcall, ipairs, tostring = coroutine, pcall, ipairs, tostring

local function workload()
  local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
  local total = fib(12)
  for i = 1, 20 do
    local co = coroutine.wrap(function(a) local b = coroutine.yield(a + 1) return b * 2 end)
    total = total + co(i) + co(i)
  end
  total = total + #tostring(pcall(error, "x"))
  return total
end

describe("running out of memory", function()
  local expected = workload()

  after_each(function() core.fail_allocations(-1) end)

  -- From the first allocation on, until one failure point lies beyond everything the run needs.
  local function each_failure_point(opts)
    local outcomes = { refused = 0, dropped = 0, complete = 0 }
    for n = 0, 1000 do
      local p = cprof.Profile(opts)
      core.fail_allocations(n)
      local ok, result = pcall(p.runcall, p, workload)
      core.fail_allocations(-1)
      assert.is_false(core.hooked())
      if ok then
        assert.are.equal(expected, result)
        local stats = p:getstats()
        if stats.dropped then outcomes.dropped = outcomes.dropped + 1
        else outcomes.complete = outcomes.complete + 1 break end
      else
        assert.matches("cprof: out of memory", result)
        outcomes.refused = outcomes.refused + 1
      end
    end
    assert.is_true(outcomes.refused > 0, "some runs could not start")
    assert.is_true(outcomes.dropped > 0, "some runs were cut short")
    assert.is_true(outcomes.complete > 0, "late failures leave complete runs")
  end

  it("never harms the program, at whichever allocation it happens", function()
    each_failure_point()
  end)

  it("never harms the program with filters and chosen lines either", function()
    each_failure_point { builtins = false, exclude = "no such file", lines = { workload } }
  end)

  it("reports how many events were dropped", function()
    local p = cprof.Profile()
    p:enable()
    core.fail_allocations(0)
    local function f() return 1 end
    for _ = 1, 10 do f() end
    p:disable()
    core.fail_allocations(-1)
    local stats = p:getstats()
    assert.is_true(stats.dropped >= 10)
    local out = {}
    require("cprof.report").print(stats, { stream = { write = function(_, t) out[#out + 1] = t end } })
    assert.matches("memory ran out while profiling: %d+ events were not recorded", table.concat(out))
  end)

  it("refuses getstats with a clear error when it cannot build the table", function()
    local p = cprof.Profile()
    p:runcall(workload)
    core.fail_allocations(0)
    local ok, err = pcall(p.getstats, p)
    core.fail_allocations(-1)
    assert.is_false(ok)
    assert.matches("cprof: out of memory", err)
  end)
end)
