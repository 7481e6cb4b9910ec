-- print_callers / print_callees, add(), strip_dirs() and Stats built from data tables,
-- compared byte for byte with CPython 3.11 pstats output (golden_det.txt, golden_strip_add.txt
-- from shared/reference/pstats/golden, with a copy of golden_det.txt in spec/golden/).
local stats = require("cprof.stats")
local report = require("cprof.report")
local data = require("cprof.profdata")

local S = require "spec.support"
local golden, sections, collector = S.golden, S.sections, S.collector

local function render(source, fn)
  local out = collector()
  local st = stats.new(source, { stream = out })
  fn(st)
  return out.text(), st
end

---------------------------------------------------------------------------
-- fibdemo_det.py (fib(6) x3, 1 ms per timer read): the numbers of the raw marshal dict in
-- golden_det.txt, in the dict order CPython used (det_data, in spec/support.lua).
---------------------------------------------------------------------------

local function edge(nc, cc, tt, ct) return { ncalls = nc, pcalls = cc, tottime = tt, cumtime = ct } end

local WORK, FIB, SORTED = S.DET.WORK, S.DET.FIB, S.DET.SORTED
local det_data = S.det_data

-- The same profile as a columnar data table (what Profile:snapshot() and cprof.load return),
-- with a 0-call frame that reports must skip and an edge from it.
local function det_columns()
  local g = det_data()
  local d = {
    -- CPython's fake timer counts readings, as cprof's counter does
    meta = { timer = "counter", unit = 0.001, bias = 0, lua_version = "Lua 5.4", command = "x",
             start_time = 0, total_time = 0.168, pid = 1, host = "h", tree_cap = 0,
             tree_folded = 0, dropped = 0 },
    frames = { n = 0, kind = {}, file = {}, line = {}, lastline = {}, name = {},
               ncalls = {}, pcalls = {}, tottime = {}, cumtime = {} },
    edges = { n = 0, caller = {}, callee = {}, ncalls = {}, pcalls = {}, tottime = {}, cumtime = {} },
    nodes = { n = 0, parent = {}, frame = {}, ncalls = {}, pcalls = {}, tottime = {}, cumtime = {} },
  }
  local f, e = d.frames, d.edges
  local function frame(kind, file, line, name, nc, cc, tt, ct)
    local i = f.n + 1
    f.n = i
    f.kind[i], f.file[i], f.line[i], f.lastline[i], f.name[i] = kind, file, line, line + 3, name
    f.ncalls[i], f.pcalls[i], f.tottime[i], f.cumtime[i] = nc, cc, tt, ct
  end
  for _, x in ipairs(g.entries) do
    frame(x.what, x.file, x.line, x.name, x.ncalls, x.pcalls, x.tottime, x.cumtime)
  end
  frame("Lua", "fibdemo_det.py", 30, "still_running", 0, 0, 0, 0)
  local function add_edge(caller, callee, s)
    local j = e.n + 1
    e.n = j
    e.caller[j], e.callee[j] = caller, callee
    e.ncalls[j], e.pcalls[j], e.tottime[j], e.cumtime[j] = s.ncalls, s.pcalls, s.tottime, s.cumtime
  end
  for i, x in ipairs(g.entries) do
    for ci, s in pairs(x.callers) do add_edge(ci, i, s) end
  end
  add_edge(f.n, WORK, edge(1, 1, 0.5, 0.5))
  return d
end

local DET = sections(golden("golden_det.txt"))

local function det_block(title)
  local block = DET[title]
  assert(block, "no golden section " .. title)
  return block
end

-- print_stats blocks start with "<ctime>    <path>" and an empty line.
local function without_file_lines(block)
  return (block:gsub("^[^\n]*    [^\n]*\n\n", "", 1))
end

describe("print_callers and print_callees match CPython pstats (golden_det.txt)", function()
  it("sort_stats('cumulative').print_callers()", function()
    local want = det_block("sort_stats('cumulative').print_callers()")
    local got = render(det_data(), function(st) st:sort_stats("cumulative"):print_callers() end)
    assert.are.equal(want, got)
  end)

  it("sort_stats('cumulative').print_callees()", function()
    local want = det_block("sort_stats('cumulative').print_callees()")
    local got = render(det_data(), function(st) st:sort_stats("cumulative"):print_callees() end)
    assert.are.equal(want, got)
  end)

  it("print_callers('fib'): insertion order and the width of the shown rows", function()
    local want = det_block("print_callers('fib')")
    local got = render(det_data(), function(st) st:print_callers("fib") end)
    assert.are.equal(want, got)
  end)

  it("writes each call in one write, and prints nothing when no row is left", function()
    local out = collector()
    local st = stats.new(det_data(), { stream = out })
    st:print_callers()
    st:print_callees()
    assert.are.equal(2, out.count())
    local before = out.text()
    st:print_callers("nothing matches this")
    st:print_callees("nothing matches this")
    assert.are.equal(before, out.text())
    local empty = collector()
    stats.new(nil, { stream = empty }):print_callers():print_callees()
    assert.are.equal("", empty.text())
  end)

  it("has no sub-header when no function has a caller, and ends bare lines with a space", function()
    local got = render({ entries = {
      { file = "a.lua", line = 1, name = "f", what = "Lua", ncalls = 2, pcalls = 2,
        tottime = 1, cumtime = 1 },
    } }, function(st) st:print_callers() st:print_callees() end)
    assert.are.equal(
      "   Random listing order was used\n\n" ..
      "Function    was called by...\n" ..
      "a.lua:1(f)  <- \n\n\n" ..
      "   Random listing order was used\n\n" ..
      "Function    called...\n" ..
      "a.lua:1(f)  -> \n\n\n", got)
  end)

  it("lists edges in pstats' tuple order: file, then line as a number, C functions last", function()
    local got = render({ entries = {
      { file = "m.lua", line = 1, name = "main", what = "Lua", ncalls = 1, pcalls = 1,
        tottime = 1, cumtime = 4 },
      { file = "~", line = 0, name = "print", what = "C", ncalls = 1, pcalls = 1,
        tottime = 1, cumtime = 1, callers = { [1] = edge(1, 1, 1, 1) } },
      { file = "m.lua", line = 10, name = "b", what = "Lua", ncalls = 1, pcalls = 1,
        tottime = 1, cumtime = 1, callers = { [1] = edge(1, 1, 1, 1) } },
      { file = "m.lua", line = 9, name = "a", what = "Lua", ncalls = 1, pcalls = 1,
        tottime = 1, cumtime = 1, callers = { [1] = edge(1, 1, 1, 1) } },
    } }, function(st) st:print_callees("main") end)
    assert.are.equal(
      "   Random listing order was used\n" ..
      "   List reduced from 4 to 1 due to restriction <'main'>\n\n" ..
      "Function       called...\n" ..
      "                   ncalls  tottime  cumtime\n" ..
      "m.lua:1(main)  ->       1    1.000    1.000  m.lua:9(a)\n" ..
      "                        1    1.000    1.000  m.lua:10(b)\n" ..
      "                        1    1.000    1.000  {print}\n\n\n", got)
  end)

  it("report.print prints the views asked for, with the same restrictions", function()
    local out = collector()
    report.print(det_data(), { stream = out, views = { "callers", "callees" } })
    assert.are.equal(det_block("sort_stats('cumulative').print_callers()")
      .. det_block("sort_stats('cumulative').print_callees()"), out.text())
    out = collector()
    report.print(det_data(), { stream = out, sort = false, limit = "fib", views = { "callers" } })
    assert.are.equal(det_block("print_callers('fib')"), out.text())
    assert.has_error(function() report.print(det_data(), { stream = out, views = { "tree" } }) end)
  end)
end)

describe("Stats from a data table (cprof.data.to_stats)", function()
  it("prints the golden report; 0-call frames and their edges are skipped", function()
    for _, title in ipairs({ "sort_stats('cumulative').print_stats()",
                             "sort_stats('tottime').print_stats()" }) do
      local key = title:match("sort_stats%('(%a+)'%)")
      local got = render(det_columns(), function(st) st:sort_stats(key):print_stats() end)
      assert.are.equal(without_file_lines(det_block(title)), got)
    end
    local got = render(det_columns(), function(st) st:sort_stats("cumulative"):print_callers() end)
    assert.are.equal(det_block("sort_stats('cumulative').print_callers()"), got)
  end)

  it("to_stats gives getstats()-shaped entries with lastline and meta", function()
    local st = data.to_stats(det_columns())
    assert.are.equal(7, #st.entries)
    assert.are.equal("counter", st.timer)
    assert.are.equal(0.001, st.unit)
    assert.are.equal("h", st.meta.host)
    assert.are.equal(18, st.entries[WORK].lastline)
    assert.are.same(edge(72, 6, 0.138, 0.138), st.entries[FIB].callers[FIB])
    assert.is_nil(st.entries[WORK].callers[8])
    local s = stats.new(det_columns())
    assert.are.equal("h", s.meta.host)
  end)

  it("from_stats gives back the same report (no tree)", function()
    local d = data.from_stats(stats.new(det_columns()))
    assert.are.equal(0, d.nodes.n)
    assert.are.equal(7, d.frames.n)
    assert.are.equal("built-in method builtins.sorted", d.frames.name[SORTED])
    assert.are.equal("C", d.frames.kind[SORTED])
    assert.are.equal(18, d.frames.lastline[WORK])
    local got = render(d, function(st) st:sort_stats("cumulative"):print_callees() end)
    assert.are.equal(det_block("sort_stats('cumulative').print_callees()"), got)
    got = render(data.from_stats(det_data()), function(st) st:sort_stats("tottime"):print_stats() end)
    assert.are.equal(without_file_lines(det_block("sort_stats('tottime').print_stats()")), got)
  end)
end)

---------------------------------------------------------------------------
-- add() and strip_dirs() (golden_strip_add.txt: collide.prof)
---------------------------------------------------------------------------

-- collide.prof: util.lua:3(f) and m.lua:1(g) exist in /a and /b; x.lua:7(h) is called by both g.
local function collide()
  return { entries = {
    { file = "/a/util.lua", line = 3, name = "f", what = "Lua", ncalls = 2, pcalls = 2,
      tottime = 0.5, cumtime = 1.0, callers = { [2] = edge(2, 2, 0.5, 1.0) } },
    { file = "/a/m.lua", line = 1, name = "g", what = "Lua", ncalls = 1, pcalls = 1,
      tottime = 0.0, cumtime = 1.0 },
    { file = "/b/util.lua", line = 3, name = "f", what = "Lua", ncalls = 3, pcalls = 1,
      tottime = 0.25, cumtime = 0.5, callers = { [4] = edge(3, 1, 0.25, 0.5) } },
    { file = "/b/m.lua", line = 1, name = "g", what = "Lua", ncalls = 1, pcalls = 1,
      tottime = 0.0, cumtime = 0.5 },
    { file = "/c/x.lua", line = 7, name = "h", what = "Lua", ncalls = 1, pcalls = 1,
      tottime = 0.1, cumtime = 0.1, callers = { [2] = edge(1, 1, 0.1, 0.1), [4] = edge(1, 1, 0.1, 0.1) } },
  } }
end

local STRIP_ADD = golden("golden_strip_add.txt", false)

-- "{ cc, nc, tt, ct }" of a key, and its callers as { ["file:line(name)"] = { nc, cc, tt, ct } }.
local function record(st, file, line, name)
  local r = st.stats[stats.func_key(file, line, name)]
  if not r then return nil end
  local callers = {}
  for k, e in pairs(r[5]) do callers[stats.func_std_string(k)] = { e[1], e[2], e[3], e[4] } end
  return { r[1], r[2], r[3], r[4] }, callers
end

describe("Stats:add", function()
  it("sums functions and callers as pstats' add does (Stats(x).add(x))", function()
    local st = stats.new(collide())
    st:add(collide())
    local r, c = record(st, "/a/util.lua", 3, "f")
    assert.are.same({ 4, 4, 1.0, 2.0 }, r)
    assert.are.same({ ["/a/m.lua:1(g)"] = { 4, 4, 1.0, 2.0 } }, c)
    r, c = record(st, "/b/util.lua", 3, "f")
    assert.are.same({ 2, 6, 0.5, 1.0 }, r)
    assert.are.same({ ["/b/m.lua:1(g)"] = { 6, 2, 0.5, 1.0 } }, c)
    r, c = record(st, "/c/x.lua", 7, "h")
    assert.are.same({ 2, 2, 0.2, 0.2 }, r)
    assert.are.same({ ["/a/m.lua:1(g)"] = { 2, 2, 0.2, 0.2 }, ["/b/m.lua:1(g)"] = { 2, 2, 0.2, 0.2 } }, c)
    assert.are.equal(16, st.total_calls)
    assert.are.equal(12, st.prim_calls)
    assert.is_true(math.abs(st.total_tt - 1.7) < 1e-12)
  end)

  it("prints the golden report of the sum (golden_strip_add.txt)", function()
    if not STRIP_ADD then return pending("shared/reference/pstats/golden/golden_strip_add.txt is absent") end
    local block = STRIP_ADD:match("files 2\n(.-\n\n\n)")
    local want = block:gsub("^[^\n]*\n[^\n]*\n\n", "", 1)
    local got = render(collide(), function(st) st:add(collide()):sort_stats("cumulative"):print_stats() end)
    assert.are.equal(want, got)
  end)

  it("loses the sort order, keeps the files of every source, and takes sources in Stats.new", function()
    local a = stats.new(collide())
    a.files = { "a.prof" }
    local b = stats.new(collide())
    b.files = { "b.prof" }
    local c = stats.new(collide())
    c.files = { "c.prof" }
    local st = stats.new(a, b, c, { stream = collector() })
    -- pstats adds the later sources last to first
    assert.are.same({ "a.prof", "c.prof", "b.prof" }, st.files)
    assert.are.equal(24, st.total_calls)
    st:sort_stats("calls")
    st:add(nil)
    assert.is_false(st.fcn_list)
    assert.are.equal(24, st.total_calls)
  end)

  it("adds a data table, a getstats() table and a Stats alike", function()
    local st = stats.new(det_columns(), det_data(), stats.new(det_data()))
    local r, c = record(st, "fibdemo_det.py", 7, "fib")
    assert.are.same({ 9, 225 }, { r[1], r[2] })
    assert.are.same({ 216, 18 }, { c["fibdemo_det.py:7(fib)"][1], c["fibdemo_det.py:7(fib)"][2] })
    assert.are.equal(3 * 85, st.total_calls)
  end)
end)

describe("Stats:strip_dirs", function()
  it("merges colliding functions; sums colliding callers (pstats keeps only one)", function()
    local st = stats.new(collide())
    st:sort_stats("calls")
    st:strip_dirs()
    assert.is_false(st.fcn_list)
    local r, c = record(st, "util.lua", 3, "f")
    assert.are.same({ 3, 5, 0.75, 1.5 }, r)
    assert.are.same({ ["m.lua:1(g)"] = { 5, 3, 0.75, 1.5 } }, c)
    r = record(st, "m.lua", 1, "g")
    assert.are.same({ 2, 2, 0.0, 1.5 }, r)
    -- pstats: (1, 1, 0.1, 0.1), one of the two callers
    r, c = record(st, "x.lua", 7, "h")
    assert.are.same({ 1, 1, 0.1, 0.1 }, r)
    assert.are.same({ ["m.lua:1(g)"] = { 2, 2, 0.2, 0.2 } }, c)
    assert.are.equal(3, #st.order)
    assert.are.equal(#"util.lua:3(f)", st.max_name_len)
  end)

  it("gives the golden report of fibdemo_det with full paths", function()
    local got = render(det_data("/home/user/demo/fibdemo_det.py"), function(st)
      st:strip_dirs():sort_stats("cumulative"):print_callers()
    end)
    assert.are.equal(det_block("sort_stats('cumulative').print_callers()"), got)
  end)

  it("leaves chunk names of strings and C functions alone", function()
    assert.are.equal('[string "a/b"]', stats.strip_path('[string "a/b"]'))
    assert.are.equal("~", stats.strip_path("~"))
    assert.are.equal("x.lua", stats.strip_path("/a/b/x.lua"))
    assert.are.equal("x.lua", stats.strip_path("x.lua"))
  end)
end)

describe("file lines", function()
  it("ctime is Python's time.ctime", function()
    local t = os.time({ year = 2026, month = 11, day = 1, hour = 5, min = 4, sec = 3 })
    assert.are.equal("Sun Nov  1 05:04:03 2026", stats.ctime(t))
    t = os.time({ year = 2026, month = 11, day = 21, hour = 15, min = 21, sec = 10 })
    assert.are.equal("Sat Nov 21 15:21:10 2026", stats.ctime(t))
  end)

  it("a file that cannot be stat'ed gives the path alone, as pstats does", function()
    assert.are.equal("/nonexistent/x.prof", stats.file_line("/nonexistent/x.prof"))
  end)
end)

describe("cprof.data.merge", function()
  local function small(scale, extra)
    local d = {
      meta = { timer = "counter", unit = 1, bias = 0, start_time = 5, total_time = 2 * scale,
               tree_cap = 10, tree_folded = scale, dropped = 0, pid = 7 },
      frames = { n = 3, kind = { "main", "Lua", "C" }, file = { "m.lua", "m.lua", "~" },
                 line = { 0, 3, 0 }, lastline = { 9, 5, -1 }, name = { "<main chunk>", "f", "print" },
                 ncalls = { 1, 2, 1 }, pcalls = { 1, 2, 1 }, tottime = { 1, 2, 3 }, cumtime = { 6, 2, 3 } },
      edges = { n = 2, caller = { 1, 1 }, callee = { 2, 3 }, ncalls = { 2, 1 }, pcalls = { 2, 1 },
                tottime = { 2, 3 }, cumtime = { 2, 3 } },
      nodes = { n = 3, parent = { 0, 1, 1 }, frame = { 1, 2, 3 }, ncalls = { 1, 2, 1 },
                pcalls = { 1, 2, 1 }, tottime = { 1, 2, 3 }, cumtime = { 6, 2, 3 } },
    }
    if extra then
      -- a new frame g called by f, and the C function first: frame order differs
      local f = d.frames
      f.n = 4
      f.kind[4], f.file[4], f.line[4], f.lastline[4], f.name[4] = "Lua", "m.lua", 7, 8, "g"
      f.ncalls[4], f.pcalls[4], f.tottime[4], f.cumtime[4] = 1, 1, 1, 1
      local e = d.edges
      e.n = 3
      e.caller[3], e.callee[3], e.ncalls[3], e.pcalls[3], e.tottime[3], e.cumtime[3] = 2, 4, 1, 1, 1, 1
      local n = d.nodes
      n.n = 4
      n.parent[4], n.frame[4], n.ncalls[4], n.pcalls[4], n.tottime[4], n.cumtime[4] = 2, 4, 1, 1, 1, 1
    end
    return d
  end

  it("sums frames, edges and nodes of two equal profiles", function()
    local m = data.merge(small(1), small(1))
    assert.are.equal(3, m.frames.n)
    assert.are.same({ 2, 4, 2 }, m.frames.ncalls)
    assert.are.same({ 12, 4, 6 }, m.frames.cumtime)
    assert.are.same({ 9, 5, -1 }, m.frames.lastline)
    assert.are.equal(2, m.edges.n)
    assert.are.same({ 4, 2 }, m.edges.ncalls)
    assert.are.equal(3, m.nodes.n)
    assert.are.same({ 0, 1, 1 }, m.nodes.parent)
    assert.are.same({ 2, 4, 2 }, m.nodes.ncalls)
    assert.are.equal(2, m.meta.merged)
    assert.are.equal(4, m.meta.total_time)
    assert.are.equal(2, m.meta.tree_folded)
    assert.are.equal(5, m.meta.start_time)
    assert.are.equal(7, m.meta.pid)
  end)

  it("matches frames by identity and nodes by path; inputs are unchanged", function()
    local a, b = small(1), small(2, true)
    local m = data.merge(a, b, small(1))
    assert.are.equal(3, a.frames.n)
    assert.are.equal(4, m.frames.n)
    assert.are.same({ 3, 6, 3, 1 }, m.frames.ncalls)
    assert.are.equal(3, m.edges.n)
    assert.are.same({ 2, 4 }, { m.edges.caller[3], m.edges.callee[3] })
    assert.are.equal(4, m.nodes.n)
    assert.are.same({ 0, 1, 1, 2 }, m.nodes.parent)
    assert.are.same({ 1, 2, 3, 4 }, m.nodes.frame)
    assert.are.equal(3, m.meta.merged)
    assert.are.equal(8, m.meta.total_time)
    -- C frames match by name whatever their file says
    local c = small(1)
    c.frames.file[3] = "elsewhere"
    assert.are.equal(3, data.merge(small(1), c).frames.n)
  end)

  it("rejects malformed data with a cprof.data error", function()
    local d = small(1)
    d.nodes.parent[2] = 2
    assert.has_error(function() data.merge(d, small(1)) end,
      "cprof.data: node 2: parent 2 is not a smaller node index or 0")
    d = small(1)
    d.edges.callee[1] = 9
    assert.has_error(function() data.to_stats(d) end, "cprof.data: edge callee 9 is not a frame index (1..3)")
    assert.has_error(function() data.to_stats({}) end, "cprof.data: 'frames' must be a table, not a nil")
  end)
end)

---------------------------------------------------------------------------
-- get_stats_profile() (golden_strip_add.txt, on fibdemo_det.prof sorted by cumulative time)
---------------------------------------------------------------------------

describe("Stats:get_stats_profile (issue 28, E)", function()
  -- A FunctionProfile as Python prints it in the golden file.
  local function py_line(name, f)
    local r = stats.py_repr
    return ("%s FunctionProfile(ncalls=%s, tottime=%s, percall_tottime=%s, cumtime=%s,"
      .. " percall_cumtime=%s, file_name=%s, line_number=%s)"):format(r(name), r(f.ncalls),
      r(f.tottime), r(f.percall_tottime), r(f.cumtime), r(f.percall_cumtime), r(f.file_name),
      r(f.line_number))
  end

  it("is CPython's StatsProfile: totals and each function rounded as printed", function()
    local text = STRIP_ADD and STRIP_ADD:match("### get_stats_profile%(%) [^\n]*\n(.-)\n###")
      or STRIP_ADD and STRIP_ADD:match("### get_stats_profile%(%) [^\n]*\n(.*)$")
    assert.is_string(text, "golden_strip_add.txt has the get_stats_profile section")
    local want = {}
    for line in text:gmatch("[^\n]+") do want[#want + 1] = line end
    local sp = stats.new(det_data()):sort_stats("cumulative"):get_stats_profile()
    local got = { stats.py_repr(sp.total_tt) }
    for _, name in ipairs(sp.names) do got[#got + 1] = py_line(name, sp.func_profiles[name]) end
    assert.are.same(want, got)
  end)

  it("keys functions by name (the last of a name stays), -1 for a percall of no call", function()
    local st = stats.new(collide()):sort_stats("stdname")
    local sp = st:get_stats_profile()
    assert.are.same({ "g", "f", "h" }, sp.names) -- /a/m.lua:1(g) sorts first
    -- /b/util.lua:3(f) comes after /a/util.lua:3(f) by standard name: it is the one kept
    assert.are.same({ ncalls = "3/1", tottime = 0.25, percall_tottime = 0.083, cumtime = 0.5,
                      percall_cumtime = 0.5, file_name = "/b/util.lua", line_number = 3 },
                    sp.func_profiles.f)
    st.stats[stats.func_key("/c/x.lua", 7, "h")] = { 0, 0, 0, 0, {} }
    assert.are.equal(-1, st:get_stats_profile().func_profiles.h.percall_tottime)
    assert.are.same({ total_tt = 0, func_profiles = {}, names = {} }, stats.new():get_stats_profile())
  end)
end)
