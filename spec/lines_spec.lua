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

-- Each line of `f` as a plain hook that also asks for calls and returns sees it, without cprof:
-- { [line] = hits }. (LuaJIT sends a line again when control comes back to it from some calls
-- while a call hook is on; Lua 5.4 never does.)
local function hook_hits(f, ...)
  local seen = {}
  debug.sethook(function(event, line)
    if event == "line" and debug.getinfo(2, "f").func == f then seen[line] = (seen[line] or 0) + 1 end
  end, "crl")
  f(...)
  debug.sethook()
  return seen
end

-- Every line of a function that calls built-ins: LuaJIT sends no return event for a C function
-- (type, select, rawget, string.sub, next ...), and a line after one belongs to the Lua function
-- that runs it, not to the C function still open on cprof's stack.
local function builtins(t)
  local n = 0
  for i = 1, #t do
    if type(t[i]) == "number" then n = n + rawget(t, i) end
    if type(t[i]) == "string" then n = n + #t[i]:sub(1, 2) end
    n = n + select("#", t[i], i)
  end
  for k in pairs(t) do n = n + k end
  pcall(next, t)
  return n
end

describe("line events after a call of a built-in", function()
  local input = { 1, "abc", 3, "de", 5 }
  local want = hook_hits(builtins, input)

  local function check(st)
    local e = S.entry_of(st, builtins)
    local got = {}
    for line, r in pairs(e.lines) do got[line] = r.hits end
    assert.are.same(want, got)
    for _, c in ipairs(st.entries) do
      if c.what == "C" then assert.is_nil(c.lines, c.name .. " has lines") end
    end
  end

  for _, case in ipairs {
    { "with every hit a line hook sees", { lines = true } },
    { "when only it is chosen for line events", { lines = { builtins } } },
    { "when the built-ins are left out", { lines = true, builtins = false } },
    { "chosen, with the built-ins left out", { lines = { builtins }, builtins = false } },
    { "on the public path", { lines = true, fast_path = false } },
  } do
    it("go to the Lua function that runs them, " .. case[1], function()
      case[2].timer = "counter"
      local p = cprof.Profile(case[2])
      p:runcall(builtins, input)
      check(p:getstats())
    end)
  end

  it("of a function entered before enable() go to no one, not to the C functions it calls", function()
    local type, cprof_ = type, cprof
    local p = cprof_.Profile { lines = true, timer = "counter" }
    p:enable()
    local n = 0
    for i = 1, 3 do n = n + #type(i) end
    p:disable()
    assert.are.equal(18, n)
    local st = p:getstats()
    assert.are.equal(3, S.find(st, "type").ncalls)
    for _, e in ipairs(st.entries) do
      if e.what == "C" then assert.is_nil(e.lines, e.name .. " has lines") end
    end
  end)

  it("keep every line of the manual's example (CPROF_LINES=1, --lines sorted_keys)", function()
    local root = S.absolute(S.ROOT)
    local dump = S.tmpname(".prof")
    local _, err, status = S.capture(("cd %s && %s CPROF_LINES=1 CPROF_OUT=%s %s -l cprof.auto examples/json_demo.lua 20")
      :format(S.q(root), S.child_env(), S.q(dump), S.lua))
    assert.are.equal(0, status, err)
    local st = require("cprof.stats").new(dump)
    os.remove(dump)
    local hits, calls = {}, nil
    for key, e in pairs(st.stats) do
      if key[3] == "sorted_keys" then
        calls = e[2]
        for line, r in pairs(st.lines[key]) do hits[line] = r.hits end
      end
    end
    assert.truthy(calls, "sorted_keys has a row")
    -- The same program under a plain line hook, in the same interpreter: the lines of
    -- sorted_keys (examples/json_demo.lua:70) it sees, as many times.
    local out, herr = S.run_lua([[
      local hits = {}
      debug.sethook(function(event, line)
        local d = event == "line" and debug.getinfo(2, "S")
        if d and d.linedefined == 70 and d.source:find("json_demo.lua", 1, true) then
          hits[line] = (hits[line] or 0) + 1
        end
      end, "crl")
      arg = { [0] = "examples/json_demo.lua", "20" }
      dofile("examples/json_demo.lua")
      debug.sethook()
      for line = 70, 81 do io.stderr:write(line, " ", hits[line] or 0, "\n") end
    ]], "", "cd " .. S.q(root) .. " &&")
    local want = {}
    for line, n in herr:gmatch("(%d+) (%d+)\n") do
      if n ~= "0" then want[tonumber(line)] = tonumber(n) end
    end
    assert.are.equal(calls, want[71], herr .. (out or ""))
    assert.are.same(want, hits)
  end)
end)
