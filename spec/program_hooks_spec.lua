-- A program that uses debug.sethook/gethook itself must behave as it would without cprof.
local cprof = require "cprof"
local core = require "cprof.core"
local debug, coroutine = debug, coroutine

local function work()
  local s = 0
  for i = 1, 10 do s = s + i end
  return s
end

-- Counts line and call events with its own hook, the way a coverage tool or a test would.
local function count_events()
  local lines, calls = 0, 0
  debug.sethook(function(ev)
    if ev == "line" then lines = lines + 1 else calls = calls + 1 end
  end, "lc")
  work()
  work()
  debug.sethook()
  return lines, calls
end

describe("a program's own hooks", function()
  it("get the same events while profiling", function()
    local l1, c1 = count_events()
    local p = cprof.Profile()
    p:enable()
    local l2, c2 = count_events()
    p:disable()
    assert.are.same({ l1, c1 }, { l2, c2 })
    assert.is_true(l1 > 0 and c1 > 0)
    -- and the program's calls were profiled all the same
    local found
    for _, e in ipairs(p:getstats().entries) do if e.name == "work" then found = e end end
    assert.are.equal(2, found.ncalls)
  end)

  it("see debug.gethook() return nil when they set nothing", function()
    local p = cprof.Profile()
    p:enable()
    local h = debug.gethook()
    p:disable()
    assert.is_nil(h)
    assert.is_nil(debug.gethook())
  end)

  it("see their own hook, mask and count while profiling", function()
    local n = 0
    local f = function() n = n + 1 end
    debug.sethook(f, "l", 0)
    local p = cprof.Profile()
    p:enable()
    local h, mask, count = debug.gethook()
    work()
    p:disable()
    local h2, mask2 = debug.gethook()
    debug.sethook()
    assert.are.equal(f, h)
    assert.are.equal("l", mask)
    assert.are.equal(0, count)
    assert.are.equal(f, h2, "the program's hook is back after disable()")
    assert.are.equal("l", mask2)
    assert.is_true(n > 0)
    assert.is_false(core.hooked())
  end)

  it("keep profiling going when the program clears its hook", function()
    local p = cprof.Profile()
    p:enable()
    debug.sethook()
    work()
    p:disable()
    local found
    for _, e in ipairs(p:getstats().entries) do if e.name == "work" then found = e end end
    assert.are.equal(1, found.ncalls)
  end)

  it("get count events at the count they asked for", function()
    if rawget(_G, "jit") then
      pending("LuaJIT's count hook does not fire in JIT-compiled code: its counts vary, profiled or not")
      return
    end
    local function count(every)
      local n = 0
      debug.sethook(function() n = n + 1 end, "", every)
      for _ = 1, 100 do work() end
      debug.sethook()
      return n
    end
    local plain = count(100)
    local p = cprof.Profile()
    p:enable()
    local profiled = count(100)
    p:disable()
    assert.are.equal(plain, profiled)
  end)

  it("on another coroutine, are reported for that coroutine", function()
    if rawget(_G, "jit") then
      pending("LuaJIT has one hook for all coroutines")
      return
    end
    local co = coroutine.create(function() coroutine.yield() end)
    local f = function() end
    debug.sethook(co, f, "r")
    local p = cprof.Profile()
    p:enable()
    coroutine.resume(co)
    local h, mask = debug.gethook(co)
    p:disable()
    assert.are.equal(f, h)
    assert.are.equal("r", mask)
    assert.are.equal(f, (debug.gethook(co)))
  end)
end)
