-- Layout of cprof.stats / cprof.report, compared byte for byte with
-- CPython 3.11 pstats output (golden files from shared/reference/pstats/golden,
-- with a copy in spec/golden/ for checkouts without shared/).
--
-- Run: lua5.4 /usr/bin/busted -p _spec --lpath='lua/?.lua;lua/?/init.lua' spec/stats_layout_spec.lua
--      luajit /usr/bin/busted  -p _spec --lpath='lua/?.lua;lua/?/init.lua' spec/stats_layout_spec.lua

local stats = require("cprof.stats")
local report = require("cprof.report")

---------------------------------------------------------------------------
-- helpers
---------------------------------------------------------------------------

local S = require "spec.support"
local read_file, golden, sections, collector = S.read_file, S.golden, S.sections, S.collector
local SHARED_GOLDEN = S.SHARED_REF .. "golden/"
local LOCAL_GOLDEN = S.LOCAL_REF

-- Remove the "<ctime>    <path>" line and the empty line after it.
local FILE_LINE = "^(%a%a%a %a%a%a [ %d]%d %d%d:%d%d:%d%d %d%d%d%d    [^\n]*)\n\n"
local function strip_file_line(block)
  local fileline = block:match(FILE_LINE)
  assert(fileline, "golden block does not start with a file line")
  return (block:gsub(FILE_LINE, "", 1)), fileline
end

local function render(data, fn)
  local out = collector()
  local st = stats.new(data, { stream = out })
  fn(st)
  return out.text(), st
end

---------------------------------------------------------------------------
-- the deterministic golden run (fibdemo_det.py: fib(6) x3, 1 ms per timer read)
-- numbers copied from the raw marshal dict in golden_det.txt; the entries order
-- reproduces the dict order CPython used (it decides ties): det_data, in
-- spec/support.lua
---------------------------------------------------------------------------

local function edge(nc, cc, tt, ct) return { ncalls = nc, pcalls = cc, tottime = tt, cumtime = ct } end

local det_data = S.det_data

local DET = sections(golden("golden_det.txt"))

local function det_block(title)
  local block = DET[title]
  assert(block, "no golden section " .. title)
  return strip_file_line(block)
end

describe("golden files", function()
  it("the embedded copies match the shared reference (when present)", function()
    for _, name in ipairs({ "golden_det.txt", "golden_sample_pstats.txt" }) do
      local shared = read_file(SHARED_GOLDEN .. name)
      local copy = read_file(LOCAL_GOLDEN .. name)
      assert.is_not_nil(copy, "spec/golden/" .. name .. " missing")
      if shared then assert.are.equal(shared, copy) end
    end
  end)
end)

describe("print_stats matches CPython pstats (golden_det.txt)", function()
  it("sort_stats('cumulative').print_stats()", function()
    local want = det_block("sort_stats('cumulative').print_stats()")
    local got = render(det_data(), function(st) st:sort_stats("cumulative"):print_stats() end)
    assert.are.equal(want, got)
  end)

  it("sort_stats('tottime').print_stats()", function()
    local want = det_block("sort_stats('tottime').print_stats()")
    local got = render(det_data(), function(st) st:sort_stats("tottime"):print_stats() end)
    assert.are.equal(want, got)
  end)

  it("sort_stats('ncalls','name').print_stats('fib|help', 2)", function()
    local want = det_block("sort_stats('ncalls','name').print_stats('fib|help', 2)")
    local got = render(det_data(), function(st)
      st:sort_stats("ncalls", "name"):print_stats("fib|help", 2)
    end)
    assert.are.equal(want, got)
  end)

  it("sort_stats('cumulative').print_stats(0.5)", function()
    local want = det_block("sort_stats('cumulative').print_stats(0.5)")
    local got = render(det_data(), function(st) st:sort_stats("cumulative"):print_stats(0.5) end)
    assert.are.equal(want, got)
  end)

  it("sort_stats('cumulative').reverse_order().print_stats()", function()
    local want = det_block("sort_stats('cumulative').reverse_order().print_stats()")
    local got = render(det_data(), function(st)
      st:sort_stats("cumulative"):reverse_order():print_stats()
    end)
    assert.are.equal(want, got)
  end)

  it("legacy sort_stats(2).print_stats()", function()
    local want = det_block("sort_stats(2).print_stats()  [legacy numeric: 2 == cumulative]")
    local got = render(det_data(), function(st) st:sort_stats(2):print_stats() end)
    assert.are.equal(want, got)
  end)

  it("prints the file lines pstats-style when files are present (whole block)", function()
    local block = DET["sort_stats('cumulative').print_stats()"]
    local _, fileline = strip_file_line(block)
    local got = render(det_data(), function(st)
      st.files = { fileline }
      st:sort_stats("cumulative"):print_stats()
    end)
    assert.are.equal(block, got)
  end)

  it("accepts the aliases and abbreviations of cumulative", function()
    local want = det_block("sort_stats('cumulative').print_stats()")
    for _, k in ipairs({ "cumtime", "cum", "cu", "cumu", "cumt", stats.SortKey.CUMULATIVE }) do
      local got = render(det_data(), function(st) st:sort_stats(k):print_stats() end)
      assert.are.equal(want, got, "sort key " .. k)
    end
  end)

  it("accepts time abbreviations, including 't'", function()
    local want = det_block("sort_stats('tottime').print_stats()")
    for _, k in ipairs({ "time", "t", "ti", "tot", "to", 1 }) do
      local got = render(det_data(), function(st) st:sort_stats(k):print_stats() end)
      assert.are.equal(want, got, "sort key " .. tostring(k))
    end
  end)

  it("loads from an object with a getstats() method and from the callable module", function()
    local want = det_block("sort_stats('cumulative').print_stats()")
    local prof = { getstats = function(self) return det_data() end }
    local out = collector()
    stats(prof, { stream = out }):sort_stats("cumulative"):print_stats()
    assert.are.equal(want, out.text())
    out = collector()
    stats.Stats.new(det_data(), { stream = out }):sort_stats("cumulative"):print_stats()
    assert.are.equal(want, out.text())
  end)

  it("copies a Stats object", function()
    local want = det_block("sort_stats('tottime').print_stats()")
    local out = collector()
    local a = stats.new(det_data())
    stats.new(a, { stream = out }):sort_stats("tottime"):print_stats()
    assert.are.equal(want, out.text())
  end)

  it("writes each print_stats call to the stream in one write", function()
    local out = collector()
    stats.new(det_data(), { stream = out }):sort_stats("cumulative"):print_stats()
    assert.are.equal(1, out.count())
  end)

  it("matches the Lua-shaped sample (golden_sample_pstats.txt)", function()
    local text = golden("golden_sample_pstats.txt")
    local want = strip_file_line(text:match("^(.-\n\n\n)"))
    local data = { entries = {
      { file = "main.lua", line = 1, name = "main", what = "Lua", ncalls = 1, pcalls = 1,
        tottime = 0.010, cumtime = 0.100 },
      { file = "main.lua", line = 5, name = "work", what = "Lua", ncalls = 1, pcalls = 1,
        tottime = 0.020, cumtime = 0.090, callers = { [1] = edge(1, 1, 0.020, 0.090) } },
      { file = "main.lua", line = 10, name = "fib", what = "Lua", ncalls = 9, pcalls = 3,
        tottime = 0.060, cumtime = 0.060,
        callers = { [2] = edge(3, 3, 0.030, 0.060), [3] = edge(6, 4, 0.030, 0.030) } },
      { file = "~", line = 0, name = "built-in function string.rep", what = "C", ncalls = 2,
        pcalls = 2, tottime = 0.010, cumtime = 0.010, callers = { [2] = edge(2, 2, 0.010, 0.010) } },
    } }
    local got = render(data, function(st) st:sort_stats("cumulative"):print_stats() end)
    assert.are.equal(want, got)
  end)
end)

describe("cprof.report.print", function()
  it("defaults to cumulative order, like python -m cProfile", function()
    local want = det_block("sort_stats('cumulative').print_stats()")
    local out = collector()
    local st = report.print(det_data(), { stream = out })
    assert.are.equal(want, out.text())
    assert.are.equal("cumulative time", st.sort_type)
  end)

  it("takes a string key, a legacy integer, a list of keys and a limit", function()
    local out = collector()
    report.print(det_data(), { stream = out, sort = "tottime" })
    assert.are.equal(det_block("sort_stats('tottime').print_stats()"), out.text())

    out = collector()
    report.print(det_data(), { stream = out, sort = 2 })
    assert.are.equal(det_block("sort_stats('cumulative').print_stats()"), out.text())

    out = collector()
    report.print(det_data(), { stream = out, sort = { "ncalls", "name" }, limit = { "fib|help", 2 } })
    assert.are.equal(det_block("sort_stats('ncalls','name').print_stats('fib|help', 2)"), out.text())

    out = collector()
    report.print(det_data(), { stream = out, limit = 3 })
    local text = out.text()
    assert.truthy(text:find("   Ordered by: cumulative time\n   List reduced from 7 to 3 due to restriction <3>\n\n", 1, true))
    local tail = "fibdemo_det.py:7(fib)\n\n\n"
    assert.are.equal(tail, text:sub(-#tail))
  end)

  it("sort = false keeps the insertion order", function()
    local out = collector()
    report.print(det_data(), { stream = out, sort = false, limit = 2 })
    assert.are.equal(
      "         85 function calls (13 primitive calls) in 0.168 seconds\n\n" ..
      "   Random listing order was used\n" ..
      "   List reduced from 7 to 2 due to restriction <2>\n\n" ..
      "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)\n" ..
      "        1    0.007    0.007    0.163    0.163 fibdemo_det.py:15(work)\n" ..
      "     75/3    0.147    0.002    0.147    0.049 fibdemo_det.py:7(fib)\n\n\n",
      out.text())
  end)

  it("rejects a bad sort key", function()
    assert.has_error(function() report.print(det_data(), { stream = collector(), sort = "c" }) end)
  end)
end)

---------------------------------------------------------------------------
-- row layout
---------------------------------------------------------------------------

local HEAD = "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)\n"

local function one(entry, ...)
  local out = collector()
  stats.new({ entries = { entry } }, { stream = out }):print_stats(...)
  return out.text()
end

describe("row layout", function()
  it("nc/cc when they differ, percall by nc and by cc", function()
    local text = one({ file = "f.lua", line = 3, name = "fib", ncalls = 21891, pcalls = 1,
                       tottime = 0.25, cumtime = 0.30 })
    assert.are.equal(
      "         21891 function calls (1 primitive calls) in 0.250 seconds\n\n" ..
      "   Random listing order was used\n\n" .. HEAD ..
      "  21891/1    0.250    0.000    0.300    0.300 f.lua:3(fib)\n\n\n", text)
  end)

  it("no '(M primitive calls)' when equal", function()
    local text = one({ file = "f.lua", line = 3, name = "g", ncalls = 4, pcalls = 4,
                       tottime = 2, cumtime = 4 })
    assert.are.equal(
      "         4 function calls in 2.000 seconds\n\n" ..
      "   Random listing order was used\n\n" .. HEAD ..
      "        4    2.000    0.500    4.000    1.000 f.lua:3(g)\n\n\n", text)
  end)

  it("0-call rows print 8 spaces instead of percall", function()
    local text = one({ file = "profile", line = 0, name = "profiler", ncalls = 0, pcalls = 0,
                       tottime = 0, cumtime = 0 })
    assert.are.equal(
      "         0 function calls in 0.000 seconds\n\n" ..
      "   Random listing order was used\n\n" .. HEAD ..
      "        0    0.000             0.000          profile:0(profiler)\n\n\n", text)
    -- only the primitive count is 0: only the cumtime percall is blank
    text = one({ file = "f.lua", line = 1, name = "r", ncalls = 2, pcalls = 0,
                 tottime = 0.5, cumtime = 0.5 })
    assert.truthy(text:find("\n      2/0    0.500    0.250    0.500          f.lua:1(r)\n", 1, true), text)
  end)

  it("a long ncalls pushes the columns right", function()
    local text = one({ file = "big.lua", line = 1, name = "loop", ncalls = 3000000000,
                       pcalls = 3000000000, tottime = 0, cumtime = 0 })
    assert.truthy(text:find("\n3000000000    0.000    0.000    0.000    0.000 big.lua:1(loop)\n", 1, true), text)
    assert.truthy(text:find("^         3000000000 function calls in 0.000 seconds\n"), text)
    text = one({ file = "big.lua", line = 1, name = "rec", ncalls = 1234567, pcalls = 1234,
                 tottime = 1, cumtime = 2 })
    assert.truthy(text:find("\n1234567/1234    1.000    0.000    2.000    0.002 big.lua:1(rec)\n", 1, true), text)
  end)

  it("C functions print as {name}, main chunks as file:0(<main chunk>)", function()
    local out = collector()
    stats.new({ entries = {
      { file = "demo.lua", line = 0, name = "<main chunk>", what = "main", ncalls = 1, pcalls = 1,
        tottime = 0.001, cumtime = 0.003 },
      { file = "~", line = 0, name = "string.format", what = "C", ncalls = 2, pcalls = 2,
        tottime = 0.002, cumtime = 0.002 },
    } }, { stream = out }):sort_stats("stdname"):print_stats()
    assert.are.equal(
      "         3 function calls in 0.003 seconds\n\n" ..
      "   Ordered by: standard name\n\n" .. HEAD ..
      "        1    0.001    0.001    0.003    0.003 demo.lua:0(<main chunk>)\n" ..
      "        2    0.002    0.001    0.002    0.001 {string.format}\n\n\n", out.text())
  end)

  it("negative and NaN times print like Python", function()
    local text = one({ file = "n.lua", line = 1, name = "neg", ncalls = 1, pcalls = 1,
                       tottime = -0.0001, cumtime = -0.0 })
    assert.truthy(text:find("\n        1   -0.000   -0.000   -0.000   -0.000 n.lua:1(neg)\n", 1, true), text)
    assert.truthy(text:find("in -0.000 seconds", 1, true))
    text = one({ file = "n.lua", line = 1, name = "nan", ncalls = 1, pcalls = 1,
                 tottime = 0 / 0, cumtime = -(0 / 0) })
    assert.truthy(text:find("\n        1      nan      nan      nan      nan n.lua:1(nan)\n", 1, true), text)
    assert.truthy(text:find("in nan seconds", 1, true))
  end)

  it("an empty profile prints only the totals", function()
    local out = collector()
    stats.new({ entries = {} }, { stream = out }):sort_stats("time"):print_stats()
    assert.are.equal("         0 function calls in 0.000 seconds\n\n", out.text())
    out = collector()
    stats.new(nil, { stream = out }):print_stats()
    assert.are.equal("         0 function calls in 0.000 seconds\n\n", out.text())
  end)

  it("entries with the same key are merged", function()
    local out = collector()
    stats.new({ entries = {
      { file = "d.lua", line = 5, name = "f", ncalls = 1, pcalls = 1, tottime = 1, cumtime = 2 },
      { file = "d.lua", line = 5, name = "f", ncalls = 2, pcalls = 1, tottime = 1, cumtime = 1 },
    } }, { stream = out }):print_stats()
    assert.truthy(out.text():find("\n      3/2    2.000    0.667    3.000    1.500 d.lua:5(f)\n", 1, true),
      out.text())
  end)

  it("rejects malformed data", function()
    assert.has_error(function() stats.new({ entries = { { file = "a", line = 1, name = "x" } } }) end)
    assert.has_error(function() stats.new({ entries = { { file = "a", line = 1, name = "x", ncalls = 1,
      callers = { [9] = edge(1, 1, 0, 0) } } } }) end)
    assert.has_error(function() stats.new(42) end)
    assert.has_error(function() stats.new({ foo = 1 }) end)
  end)
end)

---------------------------------------------------------------------------
-- restrictions
---------------------------------------------------------------------------

local function det_text(sort, ...)
  local out = collector()
  local st = stats.new(det_data(), { stream = out })
  if sort then st:sort_stats(sort) end
  st:print_stats(...)
  return out.text()
end

-- The heading lines between the totals and the table.
local function heading(text)
  return text:match("seconds\n\n(.-\n)\n   ncalls") or text:match("seconds\n\n(.*)$")
end

local function shown(text)
  local names = {}
  for name in text:gmatch("\n +[%d/]+ +[-%d.]+ +[-%d. ]+ +[-%d.]+ +[-%d. ]+ ([^\n]+)") do
    names[#names + 1] = name
  end
  return names
end

describe("restrictions", function()
  it("fractions: int(len * f + .5) rows, printed as Python floats", function()
    assert.are.equal("   Ordered by: cumulative time\n   List reduced from 7 to 4 due to restriction <0.5>\n",
      heading(det_text("cumulative", 0.5)))
    assert.are.equal("   Ordered by: cumulative time\n   List reduced from 7 to 2 due to restriction <0.25>\n",
      heading(det_text("cumulative", 0.25)))
    assert.are.equal("   Ordered by: cumulative time\n   List reduced from 7 to 1 due to restriction <0.1>\n",
      heading(det_text("cumulative", 0.1)))
    assert.are.equal("   Ordered by: cumulative time\n   List reduced from 7 to 6 due to restriction <0.9>\n",
      heading(det_text("cumulative", 0.9)))
    assert.are.same({ "fibdemo_det.py:22(main)", "fibdemo_det.py:15(work)" },
      shown(det_text("cumulative", 0.25)))
  end)

  it("a restriction that removes everything prints only the totals", function()
    assert.are.equal("         85 function calls (13 primitive calls) in 0.168 seconds\n\n",
      det_text("cumulative", 0.01))
    assert.are.equal("         85 function calls (13 primitive calls) in 0.168 seconds\n\n",
      det_text("cumulative", 0))
    assert.are.equal("         85 function calls (13 primitive calls) in 0.168 seconds\n\n",
      det_text("cumulative", "nomatch"))
  end)

  it("integers: keep the first N; N >= len, negative, or >= 1 floats do nothing", function()
    assert.are.equal("   Ordered by: internal time\n   List reduced from 7 to 3 due to restriction <3>\n",
      heading(det_text("time", 3)))
    for _, r in ipairs({ 7, 8, -1, 1.5, true, {} }) do
      assert.are.equal("   Ordered by: internal time\n", heading(det_text("time", r)))
      assert.are.equal(7, #shown(det_text("time", r)))
    end
  end)

  it("restrictions apply in order", function()
    assert.are.equal(
      "   Ordered by: cumulative time\n" ..
      "   List reduced from 7 to 3 due to restriction <3>\n" ..
      "   List reduced from 3 to 1 due to restriction <'%(fib'>\n",
      heading(det_text("cumulative", 3, "%(fib")))
  end)

  it("strings are Lua patterns matched against the standard name", function()
    local text = det_text("cumulative", "^{built%-in")
    assert.are.equal("   Ordered by: cumulative time\n   List reduced from 7 to 2 due to restriction <'^{built%-in'>\n",
      heading(text))
    assert.are.same({ "{built-in method builtins.sorted}", "{built-in method builtins.len}" }, shown(text))
    assert.are.same({ "fibdemo_det.py:7(fib)" }, shown(det_text("cumulative", ":%d%(fib%)$")))
  end)

  it("'|' separates alternatives; '%|' and '[|]' are literal bars", function()
    local text = det_text("cumulative", "main|len")
    assert.are.same({ "fibdemo_det.py:22(main)", "{built-in method builtins.len}" }, shown(text))
    assert.truthy(text:find("restriction <'main|len'>", 1, true))
    local data = { entries = {
      { file = "a|b.lua", line = 1, name = "f", ncalls = 1, pcalls = 1, tottime = 0, cumtime = 0 },
      { file = "a.lua", line = 2, name = "b", ncalls = 1, pcalls = 1, tottime = 0, cumtime = 0 },
    } }
    local out = collector()
    stats.new(data, { stream = out }):print_stats("a%|b")
    assert.are.same({ "a|b.lua:1(f)" }, shown(out.text()))
    out = collector()
    stats.new(data, { stream = out }):print_stats("a[|]b")
    assert.are.same({ "a|b.lua:1(f)" }, shown(out.text()))
    out = collector()
    stats.new(data, { stream = out }):print_stats("a|b")
    assert.are.same({ "a|b.lua:1(f)", "a.lua:2(b)" }, shown(out.text()))
  end)

  it("magic characters escaped with % match literally", function()
    local data = { entries = {
      { file = "a-b.lua", line = 1, name = "x", ncalls = 1, pcalls = 1, tottime = 0, cumtime = 0 },
      { file = "ab.lua", line = 1, name = "y", ncalls = 1, pcalls = 1, tottime = 0, cumtime = 0 },
      { file = "~", line = 0, name = "string.rep", what = "C", ncalls = 1, pcalls = 1, tottime = 0, cumtime = 0 },
      { file = "~", line = 0, name = "stringXrep", what = "C", ncalls = 1, pcalls = 1, tottime = 0, cumtime = 0 },
    } }
    local function pick(pat)
      local out = collector()
      stats.new(data, { stream = out }):print_stats(pat)
      return shown(out.text()), out.text()
    end
    -- unescaped: '-' is a lazy repetition and '.' any character
    assert.are.same({ "a-b.lua:1(x)", "ab.lua:1(y)" }, (pick("a-b")))
    assert.are.same({ "{string.rep}", "{stringXrep}" }, (pick("string.rep")))
    -- escaped: literal
    local names, text = pick("a%-b")
    assert.are.same({ "a-b.lua:1(x)" }, names)
    assert.truthy(text:find("   List reduced from 4 to 1 due to restriction <'a%-b'>\n", 1, true), text)
    assert.are.same({ "{string.rep}" }, (pick("string%.rep")))
    assert.are.same({ "a-b.lua:1(x)" }, (pick("%(x%)")))
    -- the escaping recipe from docs/REPORT.md
    local function literal(str) return (str:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?|]", "%%%0")) end
    assert.are.same({ "a-b.lua:1(x)" }, (pick(literal("a-b.lua:1(x)"))))
    assert.are.same({ "{string.rep}" }, (pick(literal("{string.rep}"))))
    assert.are.same({ "{string.rep}" }, (pick("^" .. literal("{string.rep}") .. "$")))
    -- position captures and balanced captures are fine
    assert.are.same({ "ab.lua:1(y)" }, (pick("()ab%.(l)ua")))
  end)

  it("the restriction is printed with Python's repr quoting", function()
    local data = { entries = {
      { file = "it's.lua", line = 1, name = "x", ncalls = 1, pcalls = 1, tottime = 0, cumtime = 0 },
      { file = 'q"uote.lua', line = 1, name = "y", ncalls = 1, pcalls = 1, tottime = 0, cumtime = 0 },
      { file = "b\\s.lua", line = 1, name = "z", ncalls = 1, pcalls = 1, tottime = 0, cumtime = 0 },
    } }
    local function msg(pat)
      local out = collector()
      stats.new(data, { stream = out }):print_stats(pat)
      return out.text():match("restriction (<.->)\n")
    end
    assert.are.equal([[<"it's">]], msg("it's"))
    assert.are.equal([[<'q"u'>]], msg('q"u'))
    assert.are.equal([[<'\'|"'>]], msg([['|"]]))
    assert.are.equal([[<'b\\s'>]], msg("b\\s"))
    assert.are.equal([[<'\t|x'>]], msg("\t|x"))
  end)

  it("an invalid pattern leaves the list unchanged, like pstats' invalid regex", function()
    for _, pat in ipairs({ "[fib", "fib%", "%b", "%fx", "(fib", "fib)", "(fib|help)", "nomatch(", "%1fib", "[%]" }) do
      local text = det_text("cumulative", pat)
      local h = heading(text)
      local q = stats.py_repr(pat)
      assert.are.equal("   Ordered by: cumulative time\n   <Invalid regular expression " .. q .. ">\n", h, pat)
      assert.are.equal(7, #shown(text))
    end
  end)
end)

---------------------------------------------------------------------------
-- programmatic API and helpers
---------------------------------------------------------------------------

describe("entries()", function()
  it("rows in the current order with all fields", function()
    local st = stats.new(det_data()):sort_stats("cumulative")
    local rows = st:entries()
    assert.are.equal(7, #rows)
    local fib = rows[3]
    assert.are.equal("fibdemo_det.py", fib.file)
    assert.are.equal(7, fib.line)
    assert.are.equal("fib", fib.name)
    assert.are.equal("Lua", fib.what)
    assert.are.equal(75, fib.ncalls)
    assert.are.equal(3, fib.pcalls)
    assert.are.equal(0.147, fib.tottime)
    assert.are.equal(0.147, fib.cumtime)
    assert.are.equal(0.147 / 75, fib.percall_tot)
    assert.are.equal(0.147 / 3, fib.percall_cum)
    assert.are.equal("fibdemo_det.py:7(fib)", fib.stdname)
    local sorted = rows[5]
    assert.are.equal("C", sorted.what)
    assert.are.equal("~", sorted.file)
    assert.are.equal(0, sorted.line)
    assert.are.equal("built-in method builtins.sorted", sorted.name)
    assert.are.equal("{built-in method builtins.sorted}", sorted.stdname)
    assert.are.equal("fibdemo_det.py:22(main)", rows[1].stdname)
  end)

  it("percall fields are nil for 0 calls", function()
    local rows = stats.new({ entries = { { file = "p", line = 0, name = "q", ncalls = 0, pcalls = 0,
                                             tottime = 0, cumtime = 0 } } }):entries()
    assert.is_nil(rows[1].percall_tot)
    assert.is_nil(rows[1].percall_cum)
  end)
end)

describe("data model", function()
  it("keeps pstats' {cc, nc, tt, ct, callers} records with {nc, cc, tt, ct} edges", function()
    local st = stats.new(det_data())
    local fib = stats.func_key("fibdemo_det.py", 7, "fib")
    local work = stats.func_key("fibdemo_det.py", 15, "work")
    local r = st.stats[fib]
    assert.are.same({ 3, 75, 0.147, 0.147 }, { r[1], r[2], r[3], r[4] })
    assert.are.same({ 72, 6, 0.138, 0.138 }, r[5][fib])
    assert.are.same({ 3, 3, 0.009000000000000001, 0.147 }, r[5][work])
    local len = stats.func_key("~", 0, "<built-in method builtins.len>")
    assert.is_not_nil(st.stats[len])
    assert.are.equal(85, st.total_calls)
    assert.are.equal(13, st.prim_calls)
    assert.are.equal(#"{method 'disable' of '_lsprof.Profiler' objects}", st.max_name_len)
    assert.are.same({}, st.files)
    assert.are.equal(0.001, st.unit)
  end)

  it("keys are interned", function()
    assert.are.equal(stats.func_key("a.lua", 1, "f"), stats.func_key("a.lua", 1, "f"))
    assert.are_not.equal(stats.func_key("a.lua", 1, "f"), stats.func_key("a.lua", 2, "f"))
    assert.is_true(stats.is_key(stats.func_key("a.lua", 1, "f")))
    assert.are.equal("a.lua:1(f)", tostring(stats.func_key("a.lua", 1, "f")))
  end)
end)

describe("helpers", function()
  it("f8 is Python's '%8.3f'", function()
    assert.are.equal("   0.000", stats.f8(0))
    assert.are.equal("   0.001", stats.f8(0.0005))   -- binary value is above .0005
    assert.are.equal("   0.002", stats.f8(0.0015))
    assert.are.equal("   2.001", stats.f8(2.0005))
    assert.are.equal("  -0.000", stats.f8(-0.0))
    assert.are.equal("  -0.001", stats.f8(-0.001))
    assert.are.equal("12345.679", stats.f8(12345.6789))
    assert.are.equal("     inf", stats.f8(1 / 0))
    assert.are.equal("    -inf", stats.f8(-1 / 0))
    assert.are.equal("     nan", stats.f8(0 / 0))
    assert.are.equal("     nan", stats.f8(-(0 / 0)))
  end)

  it("func_std_string", function()
    assert.are.equal("fib.lua:3(fib)", stats.func_std_string({ "fib.lua", 3, "fib" }))
    assert.are.equal("fib.lua:3(fib)", stats.func_std_string("fib.lua", 3, "fib"))
    assert.are.equal("{string.format}", stats.func_std_string({ "~", 0, "<string.format>" }))
    assert.are.equal("len", stats.func_std_string({ "~", 0, "len" }))
    assert.are.equal("~:1(<x>)", stats.func_std_string({ "~", 1, "<x>" }))
    assert.are.equal("demo.lua:0(<main chunk>)", stats.func_std_string({ "demo.lua", 0, "<main chunk>" }))
  end)

  it("py_repr of restrictions", function()
    assert.are.equal("3", stats.py_repr(3))
    assert.are.equal("0.5", stats.py_repr(0.5))
    assert.are.equal("0.1", stats.py_repr(0.1))
    assert.are.equal("1e-05", stats.py_repr(1e-5))
    assert.are.equal("0.0001", stats.py_repr(0.0001))
    assert.are.equal("0.30000000000000004", stats.py_repr(0.1 + 0.2))
    assert.are.equal("123.5", stats.py_repr(123.5))
    assert.are.equal("'fib|help'", stats.py_repr("fib|help"))
    assert.are.equal("'\\x01\\x7f'", stats.py_repr("\1\127"))
    if math.type then   -- Lua 5.4 distinguishes float 0.0 and 1e15 from integers
      assert.are.equal("0.0", stats.py_repr(0.0))
      assert.are.equal("-0.0", stats.py_repr(-0.0))
      assert.are.equal("1000000000000000.0", stats.py_repr(1e15))
      assert.are.equal("1e+16", stats.py_repr(1e16))
      assert.are.equal("1e+16", stats.py_repr(1e16 + 0.5))
    end
  end)
end)
