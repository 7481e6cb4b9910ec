-- Regions: cprof.region with `<close>` (Lua 5.4), cprof.wrap (line_profiler's @profile), and
-- line events in chosen functions only (Profile{lines = {f, g}}).
local cprof = require "cprof"
local S = require "spec.support"

local function leaf(x) return x + 1 end
local function work(n) local s = 0 for i = 1, n do s = s + leaf(i) end return s end
local function unrelated() return leaf(0) end
local function program(w)
  unrelated()
  local r = w(3)
  unrelated()
  return r + w(2)
end

-- The Lua entries of a getstats() table, as { [linedefined] = ncalls }.
local function lua_calls(st)
  local c = {}
  for _, e in ipairs(st.entries) do if e.what == "Lua" then c[e.line] = e.ncalls end end
  return c
end

local function line_of(f) return debug.getinfo(f, "S").linedefined end

describe("cprof.wrap", function()
  after_each(function() cprof.regions.wrap, cprof.regions.w2 = nil, nil end)

  it("profiles the calls of the function it returns: that function and its callees only", function()
    local w = cprof.wrap(work)
    assert.are.equal(9 + 5, program(w)) -- the program sees the same results
    local st = cprof.regions.wrap:getstats()
    assert.are.same({ [line_of(work)] = 2, [line_of(leaf)] = 5 }, lua_calls(st))
    for _, e in ipairs(st.entries) do assert.are.equal("Lua", e.what, e.name) end
    assert.is_false(cprof.regions.wrap:is_enabled())
  end)

  it("takes a Profile or a region name, runs a recursive call inside the same profile, and passes errors on", function()
    local p = cprof.Profile()
    local calls = 0
    local rec
    rec = cprof.wrap(function(n) calls = calls + 1 if n > 0 then return rec(n - 1) end return "done" end, p)
    assert.are.equal("done", rec(3))
    assert.are.equal(4, calls)
    assert.are.equal(4, p:getstats().entries[1].ncalls)
    local bad = cprof.wrap(function() error("boom", 0) end, "w2")
    assert.has_error(bad, "boom")
    assert.is_false(cprof.regions.w2:is_enabled())
    assert.has_error(function() cprof.wrap(1) end, "bad argument #1 to 'wrap' (function expected, got number)")
    assert.has_error(function() cprof.wrap(work, 1) end,
      "bad argument #2 to 'wrap' (cprof.Profile or region name expected, got number)")
  end)

  it("just calls the function while another profile is enabled", function()
    local outer = cprof.Profile()
    local w = cprof.wrap(work, "w2")
    outer:runcall(program, w)
    assert.are.equal(2, S.entry_of(outer:getstats(), work).ncalls)
    assert.are.equal(0, #cprof.regions.w2:getstats().entries)
  end)
end)

describe("cprof.region", function()
  it("profiles what runs between it and the end of the block (<close>)", function()
    if S.jit then return end -- LuaJIT has no <close>
    local run = assert(load([[
      local cprof, work, unrelated = ...
      unrelated()
      do
        local p <close> = cprof.region("block")
        work(2)
      end
      unrelated()
    ]]))
    run(cprof, work, unrelated)
    local p = cprof.regions.block
    cprof.regions.block = nil
    assert.is_false(p:is_enabled())
    assert.are.same({ [line_of(work)] = 1, [line_of(leaf)] = 2 }, lua_calls(p:getstats()))
  end)
end)

describe("lines = {f, g}", function()
  it("records line events in the chosen functions only", function()
    local p = cprof.Profile { lines = { leaf } }
    p:runcall(function() work(3) unrelated() end)
    local st = p:getstats()
    local l = line_of(leaf)
    for _, e in ipairs(st.entries) do
      if e.line ~= l then assert.is_true(e.lines == nil or next(e.lines) == nil, e.name) end
    end
    local lines = S.entry_of(st, leaf).lines
    assert.are.same({ l }, (function() local k = {} for line in pairs(lines) do k[#k + 1] = line end return k end)())
    assert.are.equal(4, lines[l].hits) -- three calls from work, one from unrelated
    assert.are.equal(4, S.entry_of(st, leaf).ncalls)
  end)

  it("takes Lua functions only", function()
    assert.has_error(function() cprof.Profile { lines = { print } } end,
      "cprof: option 'lines': item 1 must be a Lua function, not a C function (it has no lines)")
    assert.has_error(function() cprof.Profile { lines = { 1 } } end,
      "cprof: option 'lines': item 1 must be a Lua function, not a number")
  end)
end)
