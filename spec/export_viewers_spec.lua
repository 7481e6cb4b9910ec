-- speedscope, folded and Chrome trace exports opened by their real readers: speedscope's own
-- viewer (its importers, in headless Chromium) and its file-format schema.  One browser run
-- serves every check here.
local S = require "spec.support"
local X = require "spec.export_support"
local checks = require "spec.export_checks"
local export = require "cprof.export"

-- Sandwich rows by name: { total = seconds, self = seconds }.  Names are as cprof wrote them:
-- speedscope appends the args of Chrome events to their names, and cprof's events have none.
local function by_name(profile)
  local out = {}
  for _, r in ipairs(profile.rows) do
    out[r.name] = { total = X.seconds(r.total), self = X.seconds(r.self) }
  end
  return out
end

-- speedscope's numbers of a Chrome trace equal those of its own events, and its importer
-- warned of nothing (an event out of its nest makes it warn).
local function same_as_events(result, file)
  assert.same({}, checks.warnings(result))
  local shown = checks.speedscope_times(result)
  local bad = checks.problems()
  local own = checks.trace_times(require("cjson").decode(S.read_file(file)), bad)
  assert.is_nil(bad.text())
  local n = 0
  for name, w in pairs(own) do
    n = n + 1
    local got = shown[name]
    assert.is_table(got, name)
    assert.is_true(math.abs(got.self - w.self) <= 1e-9 * w.self + 1e-12, name)
    assert.is_true(math.abs(got.total - w.total) <= 1e-9 * w.total + 1e-12, name)
  end
  return n
end

local function close(a, b)
  return math.abs(a - b) <= 0.006 * math.max(math.abs(a), math.abs(b)) + 1e-12
end

describe("exports in speedscope", function()
  local node, why = X.reader("node")
  if not node then
    it("are read by speedscope", function() pending("speedscope's importer: " .. why) end)
    return
  end
  local dir = S.new_dir()
  local files = {
    sample = dir .. "/sample.speedscope.json", co = dir .. "/co.speedscope.json",
    live = dir .. "/live.speedscope.json", folded = dir .. "/sample.folded",
    chrome = dir .. "/sample.trace.json", chrome_co = dir .. "/co.trace.json",
    calls = dir .. "/calls.speedscope.json", trace = dir .. "/fib.trace.json",
    siblings = dir .. "/siblings.trace.json", ring = dir .. "/ring.trace.json",
  }
  local dump = X.live_dump(dir .. "/live.prof")
  export.export("speedscope", X.sample(), files.sample)
  export.export("speedscope", X.with_coroutine(), files.co)
  export.export("speedscope", dump, files.live)
  export.export("speedscope", X.sample(), files.calls, { weight = "calls" })
  export.export("folded", X.sample(), files.folded)
  export.export("chrome", X.sample(), files.chrome)
  export.export("chrome", X.with_coroutine(), files.chrome_co)
  -- a real time line: fib(6) under the counter timer (one tick per event), so every time exact
  rawset(_G, "CPROF_FIB_NO_MAIN", true)
  local traced = require("cprof").Profile({ timer = "counter", trace = true })
  traced:runcall(dofile(S.ROOT .. "/examples/fib.lua"), 6)
  export.export("chrome", traced, files.trace)
  export.export("chrome", X.siblings(), files.siblings)
  -- a trace whose ring kept only the newest events: it starts with a return, of the third of
  -- three frames whose calls were overwritten
  local function leaf() return 1 end
  local function inner() for _ = 1, 5 do leaf() end end
  local function outer() inner() return (leaf()) end
  local ring = require("cprof").Profile({ timer = "counter", trace = true, trace_size = 13 })
  ring:runcall(outer)
  local ring_data = ring:snapshot()
  export.export("chrome", ring_data, files.ring)
  local results
  lazy_setup(function()
    results = X.browser({
      { kind = "speedscope", file = files.sample },
      { kind = "speedscope", file = files.co, profiles = 2 },
      { kind = "speedscope", file = files.live, profiles = 2 },
      { kind = "speedscope", file = files.folded },
      { kind = "speedscope", file = files.chrome },
      { kind = "speedscope", file = files.chrome_co, profiles = 2 },
      { kind = "speedscope", file = files.calls },
      { kind = "speedscope", file = files.trace, save = true },
      { kind = "speedscope", file = files.siblings, save = true },
      { kind = "speedscope", file = files.ring, save = true },
    })
  end)
  lazy_teardown(function() S.remove_dir(dir) end)

  it("are valid against speedscope's file-format schema", function()
    assert.same({ "valid", "valid", "valid", "valid" },
      checks.schema({ files.sample, files.co, files.live, files.calls }))
  end)

  it("show the SPEC's sample with its numbers, from speedscope JSON", function()
    local r = results[1]
    assert.is_nil(r.error)
    assert.matches("Importing as speedscope json file", table.concat(r.log, "\n"))
    local rows = by_name(r.profiles[1])
    assert.same({ total = 0.06, self = 0.06 }, rows.fib)
    assert.same({ total = 0.09, self = 0.02 }, rows.work)
    assert.same({ total = 0.1, self = 0.01 }, rows.main)
    assert.same({ total = 0.01, self = 0.01 }, rows["string.rep"])
    assert.is_nil(results[7].error)
    local calls = results[7].profiles[1].rows
    local fib
    for _, row in ipairs(calls) do if row.name == "fib" then fib = row end end
    assert.matches("^9 ", fib.self)
  end)

  it("show one profile per coroutine", function()
    local r = results[2]
    assert.is_nil(r.error)
    assert.matches("^main %(1/2%)", r.profiles[1].title)
    assert.matches("^coroutine gen %(2/2%)", r.profiles[2].title)
    assert.same({ total = 0.004, self = 0.003 }, by_name(r.profiles[2]).gen)
    assert.same({ total = 0.001, self = 0.001 }, by_name(r.profiles[1])["coroutine.resume"])
  end)

  it("show every function of a live profile with cprof's tottime and cumtime", function()
    local r = results[3]
    assert.is_nil(r.error)
    local main, co = by_name(r.profiles[1]), by_name(r.profiles[2])
    local report = X.report(dump)
    local m = export.model(dump)
    local checked = 0
    -- Totals of the functions that neither run a coroutine (its time is in the other profile)
    -- nor are in the cycle even -> odd -> even (the engine folds the inner calls).
    local _, threads = m:threads()
    local totals = { fib = true, ["string.rep"] = true, ["table.concat"] = true }
    -- gen (<anon> to cprof: called from C); LuaJIT does not show coroutine.wrap's functions,
    -- so there the tree has no coroutine to tell apart
    if threads[2] then totals[(threads[2]:gsub("^coroutine ", ""))] = true end
    for f = 1, m.F.n do
      local rep = report[m:label(f)]
      local name = m:name(f)
      if rep and rep.tottime > 0 then
        local row = main[name] or co[name]
        assert.is_table(row, name)
        assert.is_true(close(row.self, rep.tottime), name)
        if totals[name] then
          assert.is_true(close(row.total, rep.cumtime), name)
          checked = checked + 1
        end
      end
    end
    assert.equal(threads[2] and 4 or 3, checked)
    if threads[2] then assert.equal(threads[2] .. " (2/2)", r.profiles[2].title) end
  end)

  it("read folded stacks with the same numbers", function()
    local r = results[4]
    assert.is_nil(r.error)
    assert.matches("Importing as collapsed stack format", table.concat(r.log, "\n"))
    local rows = by_name(r.profiles[1])
    -- folded values have no unit: nanoseconds as plain numbers
    assert.same({ total = 60000000, self = 60000000 }, rows["main.lua:10(fib)"])
    assert.same({ total = 100000000, self = 10000000 }, rows["main.lua:1(main)"])
    assert.same({ total = 10000000, self = 10000000 }, rows["{string.rep}"])
  end)

  it("read the Chrome trace with the same numbers, coroutines on their own thread", function()
    local r = results[5]
    assert.is_nil(r.error)
    assert.matches("Importing as Trace Event Format profile", table.concat(r.log, "\n"))
    local rows = by_name(r.profiles[1])
    assert.same({ total = 0.06, self = 0.06 }, rows.fib)
    assert.same({ total = 0.1, self = 0.01 }, rows.main)
    local co = results[6]
    assert.is_nil(co.error)
    local names = co.profiles[1].title .. " | " .. co.profiles[2].title
    assert.matches("main", names)
    assert.matches("coroutine gen", names)
  end)

  it("read a real trace (Profile{trace = true}) with the times of its B/E events", function()
    local r = results[8]
    assert.is_nil(r.error)
    assert.matches("Importing as Trace Event Format profile", table.concat(r.log, "\n"))
    -- fib's time on the stack (total) and on top of it (self) as the events themselves say
    assert.equal(1, same_as_events(r, files.trace))
    local pairs_of = 0
    for _, e in ipairs(require("cjson").decode(S.read_file(files.trace)).traceEvents) do
      if e.ph == "B" and e.name == "fib" then pairs_of = pairs_of + 1 end
    end
    assert.equal(25, pairs_of) -- fib(6): 2 * fib(7) - 1 calls
    local row, own = by_name(r.profiles[1]).fib, checks.speedscope_times(r).fib
    assert.is_true(own.total > 0 and own.self > 0)
    assert.is_true(close(row.total, own.total) and close(row.self, own.self))
  end)

  it("nest a call tree of many siblings whose times are not whole microseconds", function()
    -- ts and dur in binary fractions of a microsecond: each sibling starts exactly where the
    -- one before it ends, where three decimals made it start a little before, in doubles
    local r = results[9]
    assert.is_nil(r.error)
    assert.same({}, checks.warnings(r))
    local shown = checks.speedscope_times(r)
    local d = X.siblings()
    for f = 1, d.frames.n do
      local name = d.frames.name[f]
      assert.is_true(math.abs(shown[name].self - d.frames.tottime[f]) <= 2e-9, name)
      assert.is_true(math.abs(shown[name].total - d.frames.cumtime[f]) <= 2e-9 * d.nodes.n, name)
    end
  end)

  it("open the frames a trace's ring lost before its first event, a return", function()
    assert.equal(1, ring_data.trace.event[1])
    local r = results[10]
    assert.is_nil(r.error)
    assert.equal(3, same_as_events(r, files.ring))
  end)

  it("name Chrome events by their function, with nothing appended", function()
    local rows = by_name(results[5].profiles[1])
    assert.same({ total = 0.06, self = 0.06 }, rows.fib)
    assert.same({ total = 0.01, self = 0.01 }, rows["string.rep"])
  end)
end)
