-- The time line (issue 15, part 5): Profile{trace = true} records every call and return with
-- its time and its coroutine, in a ring that keeps the newest events; the dump's trace section;
-- the chrome export's real B/E events.  Exact counts: fib(n) makes 2*fib(n+1) - 1 calls.
-- Plain Lua 5.1 syntax: the same file runs under LuaJIT.
local cprof = require "cprof"
local core = require "cprof.core"
local export = require "cprof.export"
local cjson = require "cjson"
local S = require "spec.support"

rawset(_G, "CPROF_FIB_NO_MAIN", true)
local fib = dofile(S.ROOT .. "/examples/fib.lua")

local function fib_calls(n)
  local a, b = 0, 1
  for _ = 1, n + 1 do a, b = b, a + b end
  return 2 * a - 1
end

-- The program of the "every B has its E" specs: an error through pcall that unwinds three
-- frames, tail calls, a coroutine that yields twice and one that dies of an error.
local function tangle()
  local function thrower(n)
    if n == 0 then error("deep") end
    return 1 + thrower(n - 1)
  end
  local function tail(n)
    if n == 0 then return fib(3) end
    return tail(n - 1)
  end
  pcall(thrower, 3)
  tail(4)
  local co = coroutine.wrap(function(a)
    local b = coroutine.yield(fib(a))
    coroutine.yield(fib(b))
    return tail(2)
  end)
  co(4); co(5); co()
  local bad = coroutine.create(function() fib(2); error("in coroutine") end)
  coroutine.resume(bad)
end

local function traced(f, opts)
  opts = opts or {}
  opts.trace = true
  local p = cprof.Profile(opts)
  p:enable()
  f()
  p:disable()
  return p, p:snapshot()
end

-- Per thread, the trace as a stack: fails on a return that is not of the frame on top; returns
-- the calls per frame, the frames left open, the returns without their call (per thread).
local function replay(d)
  local T, open, orphans, calls = d.trace, {}, {}, {}
  for i = 1, T.n do
    local th, node = T.thread[i], T.node[i]
    local st = open[th] or {}
    open[th] = st
    if T.event[i] == 0 then
      st[#st + 1] = node
      local f = d.nodes.frame[node]
      calls[f] = (calls[f] or 0) + 1
    elseif #st == 0 then
      orphans[th] = (orphans[th] or 0) + 1
    else
      assert.equal(st[#st], node, "event " .. i .. " returns from another frame than the open one")
      st[#st] = nil
    end
  end
  local left = 0
  for _, st in pairs(open) do left = left + #st end
  return calls, left, orphans
end

local function chrome_of(source, opts)
  local parts = {}
  local r = export.export("chrome", source, { write = function(self, s)
    parts[#parts + 1] = s
    return self
  end }, opts)
  return cjson.decode(table.concat(parts)), r
end

-- The B and E events per tid of a Chrome trace, checked: properly nested (an E closes the B on
-- top, with the same name and args), times that never go back.  Returns B counts by name.
local function check_chrome(doc)
  local open, last, names = {}, {}, {}
  local byname = {}
  for _, e in ipairs(doc.traceEvents) do
    if e.ph == "M" then
      names[e.tid] = e.args.name
    else
      assert.is_true(e.ph == "B" or e.ph == "E", "only B and E events: " .. tostring(e.ph))
      local st = open[e.tid] or {}
      open[e.tid] = st
      assert.is_true(e.ts >= (last[e.tid] or 0))
      last[e.tid] = e.ts
      if e.ph == "B" then
        st[#st + 1] = e
        byname[e.name] = (byname[e.name] or 0) + 1
      else
        local b = table.remove(st)
        assert.is_not_nil(b, "an E without its B")
        assert.equal(b.name, e.name)
        assert.same(b.args, e.args)
      end
    end
  end
  for tid, st in pairs(open) do assert.equal(0, #st, "B without E in tid " .. tid) end
  return byname, names
end

describe("Profile{trace = true}", function()
  it("records one call and one return per call of fib(n): 2*fib(n+1) - 1 of each", function()
    local _, d = traced(function() fib(12) end)
    local calls, left = replay(d)
    -- and the function that calls fib(12)
    assert.equal(2 * (fib_calls(12) + 1), d.trace.n)
    assert.equal(0, left)
    assert.equal(0, d.meta.trace_dropped)
    assert.equal(1000000, d.meta.trace_size)
    for f = 1, d.frames.n do
      if d.frames.name[f] == "fib" then assert.equal(fib_calls(12), calls[f]) end
    end
    for i = 2, d.trace.n do assert.is_true(d.trace.time[i] >= d.trace.time[i - 1]) end
    assert.equal(0, d.trace.time[1])
  end)

  it("closes every frame: errors through pcall, tail calls, coroutines (calls per function = ncalls)", function()
    local _, d = traced(tangle)
    local calls, left, orphans = replay(d)
    assert.equal(0, left)
    assert.same({}, orphans)
    for f = 1, d.frames.n do assert.equal(d.frames.ncalls[f], calls[f] or 0, d.frames.name[f]) end
    -- the main thread and the two coroutines (LuaJIT: the wrapped one's tail call is seen as
    -- a thread of its own)
    local threads = {}
    for i = 1, d.trace.n do threads[d.trace.thread[i]] = true end
    assert.is_true(threads[1] and threads[2] and threads[3])
    assert.equal(S.jit and 4 or 3, #threads)
  end)

  it("keeps the newest trace_size events and counts the ones it overwrote", function()
    local _, full = traced(function() fib(10) end)
    local _, d = traced(function() fib(10) end, { trace_size = 10 })
    local total = 2 * (fib_calls(10) + 1)
    assert.equal(10, d.meta.trace_size)
    -- the ring held disable()'s own call, which left it: 9 of the last events are there
    assert.equal(9, d.trace.n)
    assert.equal(total - 9, d.meta.trace_dropped)
    for i = 1, d.trace.n do
      local j = full.trace.n - d.trace.n + i
      assert.equal(full.trace.event[j], d.trace.event[i])
      assert.equal(full.trace.node[j], d.trace.node[i])
    end
    local _, left, orphans = replay(d)
    local returns = 0
    for i = 1, d.trace.n do returns = returns + d.trace.event[i] end
    assert.equal(0, left)
    assert.equal(returns - (d.trace.n - returns), orphans[1])
  end)

  it("leaves the trace out of profiles without it, and keeps it across clear()", function()
    local p = cprof.Profile()
    p:enable(); fib(3); p:disable()
    assert.is_nil(p:snapshot().trace)
    assert.is_nil(p:snapshot().meta.trace_size)
    local q = cprof.Profile({ trace = true, trace_size = 64 })
    q:enable(); fib(3); q:disable()
    q:clear()
    q:enable(); fib(2); q:disable()
    local d = q:snapshot()
    assert.equal(2 * fib_calls(2), d.trace.n)
    assert.equal(64, d.meta.trace_size)
  end)

  it("starts only with its ring, and stays balanced when memory runs out at any point", function()
    local p = cprof.Profile({ trace = true, trace_size = 100 })
    core.fail_allocations(0)
    local ok, err = pcall(p.enable, p)
    core.fail_allocations(-1)
    assert.is_false(ok)
    assert.matches("^cprof: out of memory %(the trace's ring of trace_size events%)$", err)
    assert.is_false(core.hooked())
    p:enable(); fib(2); p:disable()
    assert.equal(2 * fib_calls(2), p:snapshot().trace.n)
    local dropped = 0
    for n = 0, 300 do
      local q = cprof.Profile({ trace = true })
      core.fail_allocations(n)
      local started = pcall(q.runcall, q, tangle)
      core.fail_allocations(-1)
      if started then
        local d = q:snapshot()
        local calls, left, orphans = replay(d)
        assert.equal(0, left, "allocation " .. n)
        assert.same({}, orphans)
        if d.meta.dropped > 0 then
          dropped = dropped + 1
        else
          for f = 1, d.frames.n do assert.equal(d.frames.ncalls[f], calls[f] or 0) end
          break
        end
      end
    end
    assert.is_true(dropped > 0, "some runs ran out of memory")
  end)

  it("refuses bad options", function()
    local function err(opts)
      local ok, e = pcall(cprof.Profile, opts)
      assert.is_false(ok)
      return e
    end
    assert.matches("option 'trace_size' goes with trace = true", err({ trace_size = 5 }))
    assert.matches("option 'trace_size' must be a whole number of events from 1 to 2%^31%-1",
      err({ trace = true, trace_size = 0 }))
    assert.matches("option 'trace_size' must be", err({ trace = true, trace_size = 1.5 }))
    assert.matches("option 'trace' must be true or false", err({ trace = 1 }))
  end)
end)

describe("the trace in a dump", function()
  local dir = S.new_dir()
  teardown(function() S.remove_dir(dir) end)

  it("is read back as it was written; a dump without it reads without it", function()
    local p, d = traced(tangle)
    local path = dir .. "/tangle.prof"
    p:dump_stats(path)
    local back = cprof.load(path)
    assert.equal(d.trace.n, back.trace.n)
    for _, c in ipairs({ "event", "thread", "node", "time" }) do
      for i = 1, d.trace.n do assert.equal(d.trace[c][i], back.trace[c][i]) end
    end
    assert.equal(d.meta.trace_dropped, back.meta.trace_dropped)
    assert.is_nil(cprof.load(S.SPEC_DIR .. "/golden/dump-v1.prof").trace)
  end)

  it("refuses a trace whose node is not a node", function()
    local _, d = traced(function() fib(2) end)
    d.trace.node[2] = d.nodes.n + 1
    local ok, err = pcall(core.write_dump, dir .. "/bad.prof", d)
    assert.is_false(ok)
    assert.matches("trace", err)
  end)
end)

describe("the chrome export of a trace", function()
  it("of examples/fib.lua: B/E pairs equal the calls, on one track, named by function", function()
    local dir = S.new_dir()
    local path = dir .. "/fib.prof"
    local out, err, status = S.capture(("CPROF_OUT=%s CPROF_TRACE=1 %s -l cprof.auto %s 15"):format(
      S.q(path), S.lua, S.q(S.ROOT .. "/examples/fib.lua")))
    assert.equal(0, status, err .. out)
    local doc, r = chrome_of(path)
    S.remove_dir(dir)
    local byname, names = check_chrome(doc)
    assert.equal(fib_calls(15), byname.fib)
    assert.equal("main", names[1])
    assert.matches("^cprof: trace", doc.traceEvents[1].args.name)
    assert.is_true(r.trace)
  end)

  it("gives every coroutine its track and every B its E", function()
    local _, d = traced(tangle)
    local doc, r = chrome_of(d)
    local byname, names = check_chrome(doc)
    local written, calls = 0, 0
    for _, c in pairs(byname) do written = written + c end
    for f = 1, d.frames.n do calls = calls + d.frames.ncalls[f] end
    assert.equal(calls, written)
    assert.equal(d.trace.n / 2, r.calls)
    assert.matches("^coroutine 2 ", names[2])
    assert.matches("^coroutine 3 ", names[3])
    assert.equal("main", names[1])
  end)

  it("opens the frames whose calls the ring overwrote at the start, and closes the open ones at the end", function()
    local _, d = traced(function() fib(10) end, { trace_size = 10 })
    local doc = chrome_of(d)
    local byname = check_chrome(doc)
    local _, _, orphans = replay(d)
    local kept_calls, written = 0, 0
    for i = 1, d.trace.n do kept_calls = kept_calls + 1 - d.trace.event[i] end
    for _, c in pairs(byname) do written = written + c end
    assert.equal(kept_calls + orphans[1], written)
    assert.equal(d.meta.trace_dropped, doc.otherData.trace_dropped)
    -- a profile still running: its open frames end at the last event
    local p = cprof.Profile({ trace = true })
    p:enable()
    fib(3)
    local live = p:snapshot()
    p:disable()
    check_chrome((chrome_of(live)))
  end)

  it("keeps only the paths through --focus patterns, and drops hidden frames' events", function()
    local _, d = traced(tangle)
    local doc = chrome_of(d, { focus = { "thrower" } })
    local byname = check_chrome(doc)
    assert.equal(4, byname.thrower)
    assert.equal(1, byname.error)
    assert.is_nil(byname.fib)
    assert.is_nil(byname.tail)
    doc = chrome_of(d, { hide = { "fib" } })
    byname = check_chrome(doc)
    assert.is_nil(byname.fib)
    assert.equal(4, byname.thrower)
  end)

  it("refuses a trace that cannot be one, naming the event", function()
    local _, d = traced(function() fib(2) end)
    d.trace.event[3] = 7
    local ok, err = pcall(chrome_of, d)
    assert.is_false(ok)
    assert.matches("the trace's event 3 is 7 %(0 a call, 1 a return%)", err)
    local _, d2 = traced(function() fib(2) end)
    d2.trace.time[2] = -1
    ok, err = pcall(chrome_of, d2)
    assert.is_false(ok)
    assert.matches("the trace's event 2 has time %-1, before its thread's previous event", err)
    local _, d3 = traced(function() fib(2) end)
    local last = d3.trace.n
    d3.trace.node[last] = d3.trace.node[last - 1]
    ok, err = pcall(chrome_of, d3)
    assert.is_false(ok)
    assert.matches(("the trace's event %d returns from node %d but node %d is the one open in"
      .. " thread 1"):format(last, d3.trace.node[last - 1], d3.trace.node[1]), err)
  end)
end)
