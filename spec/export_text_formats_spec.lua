-- The folded, speedscope and Chrome trace exports, checked field by field (their real readers
-- are in export_viewers_spec.lua).
local X = require "spec.export_support"
local cjson = require "cjson"

local SAMPLE_FOLDED = table.concat({
  "main.lua:1(main) 10000000",
  "main.lua:1(main);main.lua:5(work) 20000000",
  "main.lua:1(main);main.lua:5(work);main.lua:10(fib) 60000000",
  "main.lua:1(main);main.lua:5(work);{string.rep} 10000000",
  "" }, "\n")

describe("folded export", function()
  it("writes one line per call path with its self value, root first", function()
    assert.equal(SAMPLE_FOLDED, X.export("folded", X.sample()))
  end)

  it("takes every weight and the restrictions to paths", function()
    assert.equal(table.concat({
      "main.lua:1(main) 1", "main.lua:1(main);main.lua:5(work) 1",
      "main.lua:1(main);main.lua:5(work);main.lua:10(fib) 9",
      "main.lua:1(main);main.lua:5(work);{string.rep} 2", "" }, "\n"),
      X.export("folded", X.sample(), { weight = "calls" }))
    assert.equal("main.lua:1(main);main.lua:5(work) 1000\nmain.lua:1(main);main.lua:5(work);main.lua:10(fib) 3000\n",
      X.export("folded", X.sample(true), { weight = "live" }))
    assert.equal("main.lua:1(main);main.lua:5(work);{string.rep} 10000000\n",
      X.export("folded", X.sample(), { patterns = { "rep|nothing" } }))
  end)

  it("writes two counts per path against a base, as difffolded.pl does", function()
    assert.equal(table.concat({
      "main.lua:1(main) 10000000 10000000",
      "main.lua:1(main);main.lua:5(work) 20000000 20000000",
      "main.lua:1(main);main.lua:5(work);main.lua:10(fib) 60000000 80000000",
      "main.lua:1(main);main.lua:5(work);main.lua:20(log) 0 5000000",
      "main.lua:1(main);main.lua:5(work);{string.rep} 10000000 0",
      "" }, "\n"), X.export("folded", X.changed(), { base = X.sample() }))
  end)

  it("keeps ';', line breaks and other control characters out of frame names", function()
    local d = X.sample()
    d.frames.name[2] = "w;o\nr\27k"
    assert.matches("\nmain.lua:1%(main%);main.lua:5%(w o r k%) 20000000\n", X.export("folded", d))
  end)

  it("writes names that are not UTF-8 with U+FFFD", function()
    local d = X.sample()
    d.frames.name[2], d.frames.file[3] = "w\255rk", "\237lo"
    assert.matches("\nmain.lua:1%(main%);main.lua:5%(w\239\191\189rk%);\239\191\189lo:10%(fib%) 60000000\n",
      X.export("folded", d))
  end)
end)

describe("speedscope export", function()
  it("writes a sampled profile whose weights add up to the total", function()
    local doc = cjson.decode((X.export("speedscope", X.sample())))
    assert.equal("https://www.speedscope.app/file-format-schema.json", doc["$schema"])
    assert.same({ { name = "main", file = "main.lua", line = 1 }, { name = "work", file = "main.lua", line = 5 },
                  { name = "fib", file = "main.lua", line = 10 }, { name = "string.rep" } }, doc.shared.frames)
    assert.equal(1, #doc.profiles)
    local p = doc.profiles[1]
    assert.same({ "sampled", "main", "nanoseconds", 0, 100000000 }, { p.type, p.name, p.unit, p.startValue, p.endValue })
    assert.same({ { 0 }, { 0, 1 }, { 0, 1, 2 }, { 0, 1, 3 } }, p.samples)
    assert.same({ 10000000, 20000000, 60000000, 10000000 }, p.weights)
  end)

  it("writes one profile per coroutine body, its stacks starting at the body", function()
    local doc = cjson.decode((X.export("speedscope", X.with_coroutine(), { weight = "calls" })))
    assert.equal(2, #doc.profiles)
    local main, co = doc.profiles[1], doc.profiles[2]
    assert.same({ "main", "none", 3 }, { main.name, main.unit, main.endValue })
    assert.same({ { 0 }, { 0, 1 } }, main.samples)
    assert.same({ "coroutine gen", 5 }, { co.name, co.endValue })
    assert.same({ { 2 }, { 2, 3 } }, co.samples)
    assert.same({ 1, 4 }, co.weights)
    doc = cjson.decode((X.export("speedscope", X.sample(true), { weight = "alloc" })))
    assert.same({ "bytes", 16000 }, { doc.profiles[1].unit, doc.profiles[1].endValue })
  end)
end)

-- A profile whose function names and chunk names are not UTF-8.
local function not_utf8()
  local d = X.sample()
  d.frames.name[2], d.frames.file[3], d.meta.command = "w\255rk", "\237lo", "lua \233.lua"
  return d
end

describe("names that are not UTF-8", function()
  it("are U+FFFD in speedscope's JSON", function()
    local text = X.export("speedscope", not_utf8())
    local doc = cjson.decode(text)
    assert.same({ "w\239\191\189rk", "main.lua" }, { doc.shared.frames[2].name, doc.shared.frames[2].file })
    assert.equal("\239\191\189lo", doc.shared.frames[3].file)
    assert.equal("lua \239\191\189.lua", doc.name)
    assert.is_nil(text:find("\255", 1, true))
  end)

  it("are U+FFFD in Chrome's JSON", function()
    local text = X.export("chrome", not_utf8())
    assert.truthy(text:find('"name":"w\239\191\189rk"', 1, true))
    assert.truthy(text:find('"name":"cprof: aggregated call tree (not a trace): lua \239\191\189.lua"', 1, true))
    assert.is_nil(text:find("[\233\237\255]"))
  end)

  it("are U+FFFD in callgrind's names, and a line break a space", function()
    local d = not_utf8()
    d.frames.name[1] = "ma\nin"
    local text = X.export("callgrind", d)
    -- the names, each where it is first written (cfn=, cfl= of a call)
    assert.truthy(text:find("fn=(2) w\239\191\189rk\n", 1, true))
    assert.truthy(text:find("fl=(2) \239\191\189lo\n", 1, true))
    assert.truthy(text:find("\nfn=(1) ma in\n", 1, true))
    assert.truthy(text:find("\ncmd: lua \239\191\189.lua\n", 1, true))
  end)
end)

describe("chrome export", function()
  local function events(doc, ph)
    local out = {}
    for _, e in ipairs(doc.traceEvents) do
      if e.ph == ph then out[#out + 1] = e end
    end
    return out
  end

  it("says in its metadata that it is an aggregated call tree, not a trace", function()
    local doc = cjson.decode((X.export("chrome", X.sample())))
    local meta = events(doc, "M")
    assert.same({ "process_name", "cprof: aggregated call tree (not a trace): lua main.lua" },
      { meta[1].name, meta[1].args.name })
    assert.matches("^aggregated call tree on a synthetic time line, not a trace", doc.otherData.cprof)
    assert.equal("ms", doc.displayTimeUnit)
  end)

  it("lays the tree out on a time line: children from the parent's start, largest first", function()
    local doc = cjson.decode((X.export("chrome", X.sample())))
    local x = events(doc, "X")
    local got = {}
    for _, e in ipairs(x) do
      got[#got + 1] = { e.name, e.ts, e.dur, e.tid }
    end
    assert.same({
      { "main", 0, 100000, 1 },
      { "work", 0, 90000, 1 },
      { "fib", 0, 60000, 1 },
      { "string.rep", 60000, 10000, 1 },
    }, got)
    -- no args: speedscope would show them after the function's name
    for _, e in ipairs(x) do assert.is_nil(e.args) end
  end)

  it("writes times as multiples of 1/1024 microsecond, so that a sibling starts where the one before ends", function()
    local d = X.sample()
    d.nodes.tottime[3] = 0.06 + 1e-7 / 3  -- fib: 60,000,033 ns
    local text = X.export("chrome", d)
    -- fib lasts 60,000,033 ns: 61,440,034 1024ths of a microsecond (rounded); string.rep
    -- starts where fib ends
    assert.truthy(text:find('"name":"fib","cat":"Lua","ph":"X","pid":1,"tid":1,"ts":0,"dur":60000.033203125}', 1, true))
    assert.truthy(text:find('"name":"string.rep","cat":"C","ph":"X","pid":1,"tid":1,"ts":60000.033203125,"dur":10000}', 1, true))
    local x = events(cjson.decode(text), "X")
    assert.equal(x[4].ts, x[3].ts + x[3].dur)
  end)

  it("puts each coroutine on its own thread, next to the resume that runs it", function()
    local doc = cjson.decode((X.export("chrome", X.with_coroutine())))
    local meta = events(doc, "M")
    assert.same({ "thread_name", 2, "coroutine gen" }, { meta[3].name, meta[3].tid, meta[3].args.name })
    local x = events(doc, "X")
    assert.same({ "gen", 2, 0, 4000 }, { x[3].name, x[3].tid, x[3].ts, x[3].dur })
    assert.same({ "coroutine.resume", 1, 0, 5000 }, { x[2].name, x[2].tid, x[2].ts, x[2].dur })
  end)

  it("writes a trace's events of one time one 1/1024 microsecond apart, in their order", function()
    -- main calls work, which returns at once: four events the clock (or the bias) put at one
    -- time; speedscope, which sorts by time, would take the return of work before its call
    local d = X.sample()
    d.trace = { n = 4, event = { 0, 0, 1, 1 }, thread = { 1, 1, 1, 1 }, node = { 1, 2, 2, 1 },
                time = { 0.5, 0.5, 0.5, 0.5 } }
    local got = {}
    for _, e in ipairs(cjson.decode((X.export("chrome", d))).traceEvents) do
      if e.ph ~= "M" then got[#got + 1] = { e.ph, e.name, (e.ts - 500000) * 1024 } end
    end
    assert.same({ { "B", "main", 0 }, { "B", "work", 1 }, { "E", "work", 2 }, { "E", "main", 3 } }, got)
  end)

  it("takes time only", function()
    local ok, err = pcall(X.export, "chrome", X.sample(), { weight = "calls" })
    assert.is_false(ok)
    assert.matches("chrome: weight 'calls' does not apply %(a trace is a time line%)", err)
  end)
end)
