-- Calls of functions made by coroutine.wrap: one row per body (docs/SEMANTICS.md, "Names"),
-- with exact counts, edges, call tree, threads and time line, the same whichever way the hook
-- finds the body: the fast path keys such a call by its body's prototype, the public path asks
-- lua_getinfo (on LuaJIT both runs take the public path).
local cprof = require "cprof"
local S = require "spec.support"

local coroutine, pcall, load, error, ipairs, table, tostring, collectgarbage =
  coroutine, pcall, load, error, ipairs, table, tostring, collectgarbage

local function run(f, fast)
  local p = cprof.Profile { timer = "counter", trace = true, fast_path = fast }
  p:runcall(f)
  return p:getstats(), p:snapshot()
end

-- Everything but the times, as sorted lines: rows, edges, tree paths, and the time line in
-- order with its threads.
local function shape(d)
  local out = {}
  local function frame(i) return d.frames.name[i] .. "@" .. d.frames.line[i] end
  for i = 1, d.frames.n do
    out[#out + 1] = ("row %s %s %d/%d"):format(frame(i), d.frames.kind[i], d.frames.ncalls[i],
                                             d.frames.pcalls[i])
  end
  for i = 1, d.edges.n do
    out[#out + 1] = ("edge %s -> %s %d/%d"):format(frame(d.edges.caller[i]),
      frame(d.edges.callee[i]), d.edges.ncalls[i], d.edges.pcalls[i])
  end
  local path = {}
  for i = 1, d.nodes.n do
    local p = d.nodes.parent[i]
    path[i] = (p == 0 and "" or path[p] .. "/") .. frame(d.nodes.frame[i])
    out[#out + 1] = ("node %s %d/%d"):format(path[i], d.nodes.ncalls[i], d.nodes.pcalls[i])
  end
  table.sort(out)
  for i = 1, d.trace.n do
    out[#out + 1] = ("trace %d %s thread %d"):format(d.trace.event[i], path[d.trace.node[i]],
                                                    d.trace.thread[i])
  end
  return out
end

-- Profiles f on the fast path and on the public path; both must see the same program.
local function profile(f)
  local st, d = run(f, true)
  local st2, d2 = run(f, false)
  assert.are.same(shape(d2), shape(d))
  assert.are.equal(0, d.meta.trace_dropped)
  assert.are.same({ 0, 0 }, { d.meta.dropped, d2.meta.dropped })
  return st, d
end

local function wrap_row(st, body)
  local info = debug.getinfo(body, "S")
  return S.find(st, ("wrap(%s:%d)"):format(info.source:sub(2), info.linedefined))
end

local function counts(e) return e and { e.ncalls, e.pcalls } end

describe("calls of functions made by coroutine.wrap", function()
  local function evens(n) for i = 1, n do coroutine.yield(2 * i) end end
  local function odds(n) for i = 1, n do coroutine.yield(2 * i - 1) end end
  local function squares(src) for v in src do coroutine.yield(v * v) end end

  it("counts each body's calls on its own row, across many generators", function()
    local st = profile(function()
      local s = 0
      for round = 1, 5 do
        local e, o = coroutine.wrap(evens), coroutine.wrap(odds)
        e(round)
        o(round)
        for v in e do s = s + v end  -- round - 1 more values, then the end
        for v in o do s = s + v end
      end
      return s
    end)
    -- per round: round values and the end, from each body
    assert.are.same({ 20, 20 }, counts(wrap_row(st, evens)))
    assert.are.same({ 20, 20 }, counts(wrap_row(st, odds)))
    assert.are.same({ 5, 5 }, counts(S.entry_of(st, evens)))
    assert.is_nil(S.find(st, "function made by coroutine.wrap"))
  end)

  it("counts nested wraps: a pipeline, and a body that wraps itself", function()
    local function nest(k)
      return coroutine.wrap(function()
        coroutine.yield(k == 0 and 0 or nest(k - 1)() + 1)
      end)
    end
    local st = profile(function()
      local s = 0
      local inner = coroutine.wrap(function() evens(4) end)
      for v in coroutine.wrap(function() squares(inner) end) do s = s + v end
      return s + nest(3)()
    end)
    assert.are.same({ 1, 1 }, counts(S.find(st, "squares")))
    assert.are.same({ 1, 1 }, counts(S.find(st, "evens")))
    local rows = {}
    for _, e in ipairs(st.entries) do
      if e.name:match("^wrap%(") then rows[#rows + 1] = e.ncalls .. "/" .. e.pcalls end
    end
    table.sort(rows)
    -- the pipeline's two bodies: 4 values and the end each; nest's body: 4 calls, each made
    -- while the one before is open, in the coroutine of that one
    assert.are.same({ "4/1", "5/5", "5/5" }, rows)
    assert.is_nil(S.find(st, "function made by coroutine.wrap"))
  end)

  it("counts a wrap whose body raises, and calls after its coroutine died", function()
    local function bad(x) coroutine.yield(x) error("bad body") end
    local function once() return 1 end
    local st = profile(function()
      local g, h = coroutine.wrap(bad), coroutine.wrap(once)
      g(1)
      assert(not pcall(g))
      assert(not pcall(g))  -- cannot resume dead coroutine
      h()
      assert(not pcall(h))
      assert(not pcall(h))
    end)
    assert.are.same({ 2, 2 }, counts(wrap_row(st, bad)))
    assert.are.same({ 1, 1 }, counts(wrap_row(st, once)))
    assert.are.same({ 3, 3 }, counts(S.find(st, "function made by coroutine.wrap")))
    assert.are.same({ 1, 1 }, counts(S.find(st, "error")))
  end)

  -- The innermost body's error kills every coroutine of the chain, and each wrap resets the
  -- coroutine it called, which then reads LUA_OK: the next event, in the main thread, is not
  -- a return to that coroutine's resumer. Taken for a resume, it made a loop of resumers that
  -- disable() walked forever; a child process, so that a loop fails the spec instead of
  -- hanging the suite.
  it("counts wraps nested five deep whose innermost body raises, and disable() returns", function()
    local out, err, status = S.run_lua([[
local cprof = require "cprof"
for _, fast in ipairs { true, false } do
  local depth = 0
  local function nest(n)
    depth = depth + 1
    if depth == n then error("deep") end
    coroutine.wrap(nest)(n)
  end
  local p = cprof.Profile { timer = "counter", fast_path = fast }
  p:enable()
  local ok = pcall(nest, 5)
  p:disable()
  local rows = {}
  for _, e in ipairs(p:getstats().entries) do rows[e.name] = e.ncalls .. "/" .. e.pcalls end
  local src = debug.getinfo(nest, "S").source:sub(2)
  print(ok, depth, rows.nest, rows["wrap(" .. src .. ":4)"], rows.error, debug.gethook() ~= nil)
end
]], nil, "timeout 60")
    assert.are.equal("", err)
    assert.are.equal(0, status)
    assert.are.equal(("false\t5\t5/1\t4/1\t1/1\tfalse\n"):rep(2), out)
  end)

  -- The same error ends each coroutine of the chain, which sends no event: each closes at the
  -- error, its wrap with only its own time. They were left open until disable(), their wraps
  -- charged the rest of the run (Lua 5.4.4's cstack.lua: a total 460 times the run's time).
  it("ends the wraps an error killed at that error: own times add up to the total", function()
    for _, fast in ipairs { true, false } do
      local totals = {}
      for depth = 1, 4 do
        local function nest(n)
          if n == 0 then error("deep") end
          coroutine.wrap(nest)(n - 1)
        end
        local function root() pcall(nest, depth) end
        local st = run(root, fast)
        local sum, root_cum, wrap = 0, nil, nil
        for _, e in ipairs(st.entries) do
          assert.is_true(e.tottime <= e.cumtime, e.name)
          sum = sum + e.tottime
          if e.name == "root" then root_cum = e.cumtime end
          if e.name:find("^wrap%(") then wrap = e end
        end
        assert.are.equal(root_cum, sum)
        totals[depth] = sum
        assert.are.same({ depth, 1 }, { wrap.ncalls, wrap.pcalls })
      end
      -- each level adds its calls and nothing else: the same number of clock readings
      for depth = 2, 4 do
        assert.are.equal(totals[2] - totals[1], totals[depth] - totals[depth - 1])
      end
    end
  end)

  it("counts tail calls into a wrap, and a body that tail-calls another", function()
    local function tail(g) return g() end
    local function count() local i = 0 while true do i = i + 1 coroutine.yield(i) end end
    local function second() coroutine.yield(2) coroutine.yield(3) end
    local function first() coroutine.yield(1) return second() end
    local st = profile(function()
      local g = coroutine.wrap(count)
      local s = tail(g) + tail(g) + tail(g)
      local f = coroutine.wrap(first)
      for v in f do s = s + v end
      return s
    end)
    assert.are.same({ 3, 3 }, counts(wrap_row(st, count)))
    assert.are.same({ 3, 3 }, counts(S.find(st, "tail")))
    -- the call that starts `first` is first's; the coroutine then runs `second` in its place
    assert.are.same({ 2, 2 }, counts(wrap_row(st, first)))
    assert.are.same({ 2, 2 }, counts(wrap_row(st, second)))
  end)

  it("is exact when wrap functions and their bodies die and others take their addresses", function()
    -- Each round loads a body of a chunk of its own, defined on line 1, wraps it, calls the
    -- wrap i times (the last call finishes it) and lets everything be collected: the next
    -- round's closures, coroutine and prototype are likely to take the dead ones' addresses.
    local N = 100
    local addresses, again, want = {}, 0, {}
    local st = profile(function()
      for i = 1, N do
        local name = "=wrapped " .. i .. (i % 2 == 0 and string.rep(".", 50) or "")
        local body = load("return function() for k = 2, " .. i .. " do coroutine.yield(k) end end",
                          name)()
        local g = coroutine.wrap(body)
        for _ = 1, i do g() end
        want[name:sub(2)] = { i, i }
        for _, f in ipairs({ g, body }) do
          local a = tostring(f):match("0x%x+")  -- LuaJIT's wrap functions print no address
          if a then
            again = again + (addresses[a] and 1 or 0)
            addresses[a] = true
          end
        end
        body, g = nil, nil
        for _ = 1, 2 do collectgarbage() end
      end
    end)
    local got = {}
    for _, e in ipairs(st.entries) do
      local file = e.name:match("^wrap%((wrapped [^:]*):1%)$")
      if file then got[file] = { e.ncalls, e.pcalls } end
    end
    assert.are.same(want, got)
    -- AddressSanitizer holds freed memory back from reuse. (Whether a prototype's address is
    -- reused too depends on the allocator's state: st.core.reused_keys counts those.)
    if not (os.getenv("LD_PRELOAD") or ""):match("asan") then
      assert.is_true(again > 0, "no closure took a dead one's address: the spec proved nothing")
    end
  end)
end)
