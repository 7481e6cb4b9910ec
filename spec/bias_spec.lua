-- Calibration: the cost per event no clock reading sees, measured and subtracted at report time.
local cprof = require "cprof"
local bias = require "cprof.bias"
local S = require "spec.support"

local function leaf() return 1 end
local function a() leaf() end
local function b() leaf() leaf() end
local function root() a() b() end

-- One tick per reading.
local ticking = S.ticking

-- {ncalls, tottime, cumtime} of a frame of data d, by the function's line.
local function row(d, f)
  local line = debug.getinfo(f, "S").linedefined
  for i = 1, d.frames.n do
    if d.frames.line[i] == line and d.frames.kind[i] == "Lua" then
      return { d.frames.ncalls[i], d.frames.tottime[i], d.frames.cumtime[i] }
    end
  end
end

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

  it("comes from the module default when a profile sets none", function()
    cprof.bias = 1e-9
    local p = cprof.Profile()
    cprof.bias = 0
    assert.are.equal(1e-9, p:bias())
    assert.are.equal(0, cprof.Profile():bias())
    assert.has_error(function() cprof.Profile { bias = "x" } end,
      "cprof: option 'bias' must be a number of seconds per event")
  end)

  it("is measured by calibrate: positive, and the same order of magnitude twice", function()
    local p = cprof.Profile()
    local b1 = p:calibrate(20000)
    local b2 = cprof.Profile():calibrate(20000)
    assert.is_true(b1 > 0 and b2 > 0, ("biases %g and %g"):format(b1, b2))
    assert.is_true(b1 / b2 < 10 and b2 / b1 < 10, ("biases %g and %g"):format(b1, b2))
    assert.are.equal(b1, p:bias())
    assert.is_true(b1 < 1e-6, "well under a microsecond per event")
    assert.has_error(function() p:calibrate(0) end)
  end)
end)
