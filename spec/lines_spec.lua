-- Line events: hits and time per source line of each profiled function.
local cprof = require "cprof"
local S = require "spec.support"
local debug = debug

local function loop(n)
  local s = 0
  for i = 1, n do
    s = s + i
  end
  return s
end

local function lines_of(f)
  local p = cprof.Profile { lines = true, timer = "counter" }
  p:runcall(f)
  return p:getstats(), p
end

describe("line events", function()
  local first = debug.getinfo(loop, "S").linedefined

  it("count each line's hits exactly, as a line hook sees them", function()
    local st = lines_of(function() loop(25) end)
    local lines = S.entry_of(st, loop).lines
    assert.are.equal(25, lines[first + 3].hits, "the loop body runs 25 times")
    assert.are.equal(1, lines[first + 1].hits)
    assert.are.equal(1, lines[first + 5].hits)
    -- the same counts a plain line hook gives, without cprof
    local seen = {}
    debug.sethook(function(_, line)
      if debug.getinfo(2, "f").func == loop then seen[line] = (seen[line] or 0) + 1 end
    end, "l")
    loop(25)
    debug.sethook()
    for line, n in pairs(seen) do assert.are.equal(n, lines[line].hits, "line " .. line) end
    for line in pairs(lines) do assert.truthy(seen[line], "line " .. line) end
  end)

  it("give a line the time until the function's next line, callees included", function()
    local function leaf() return 1 end
    local function caller()
      leaf()
      return 0
    end
    local st = lines_of(caller)
    local c = S.entry_of(st, caller)
    local l = debug.getinfo(caller, "S").linedefined
    -- Counter timer: the line that calls leaf() holds leaf's whole time (2 ticks for its call
    -- and return) plus the tick of its own next line event.
    assert.is_true(c.lines[l + 1].time >= S.entry_of(st, leaf).cumtime)
    local sum = 0
    for _, r in pairs(c.lines) do sum = sum + r.time end
    assert.is_true(sum <= c.cumtime)
  end)

  it("are off unless asked for, and keep the program's own line hook working", function()
    local st = lines_of(function() loop(3) end)
    assert.truthy(S.entry_of(st, loop).lines)
    local p = cprof.Profile()
    p:runcall(loop, 3)
    assert.is_nil(S.entry_of(p:getstats(), loop).lines)
    local n = 0
    debug.sethook(function() n = n + 1 end, "l")
    local q = cprof.Profile { lines = true }
    q:runcall(loop, 3)
    debug.sethook()
    assert.is_true(n > 0)
  end)

  it("appear in the snapshot", function()
    local _, p = lines_of(function() loop(4) end)
    local d = p:snapshot()
    assert.is_true(d.lines.n >= 4)
    local total = 0
    for i = 1, d.lines.n do
      if d.frames.line[d.lines.frame[i]] == first and d.lines.line[i] == first + 3 then total = total + d.lines.hits[i] end
    end
    assert.are.equal(4, total)
  end)
end)
