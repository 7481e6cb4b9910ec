-- Stats:print_lines: line events reported as line_profiler reports them (docs/REPORT.md). The
-- expected texts were checked against line_profiler's show_func layout: widths 6, 9, 12, 8 and 8,
-- "%5.1f" times (or "%5.1g" when too wide), hits as "%d" (or "%g"), and the source line last.
local cprof = require "cprof"
local stats = require "cprof.stats"
local json = require "cprof.report.json"

local S = require "spec.support"
local write_file, collector = S.write_file, S.collector

local function printed(st, ...)
  local c = collector()
  st.stream = c
  st:print_lines(...)
  return c.text()
end

local SAMPLE = [[
local function work(n)
  local s = 0
  for i = 1, n do
    s = s + i * i
  end
  return s
end
]]

local PROGRAM = [[
local function loop(n)
  local s = 0
  for i = 1, n do
    s = s + i
  end
  return s
end

local function other()
  return 1
end

return function()
  local t = 0
  for _ = 1, 3 do
    t = t + loop(4)
  end
  return t + other()
end
]]

describe("print_lines", function()
  local dir
  before_each(function() dir = S.new_dir() end)
  after_each(function() S.remove_dir(dir) end)

  local unit = 1e-6
  local function sample_stats(path)
    return stats.new({ timer = "t", unit = unit, entries = {
      { file = path, line = 1, lastline = 7, name = "work", what = "Lua", ncalls = 2, pcalls = 2,
        tottime = 1, cumtime = 1,
        lines = { [2] = { hits = 2, time = 4 * unit }, [3] = { hits = 12, time = 31 * unit },
                  [4] = { hits = 10, time = 60 * unit }, [6] = { hits = 2, time = 2 * unit } } },
      { file = '[string "big"]', line = 3, lastline = 5, name = "big", what = "Lua", ncalls = 1,
        pcalls = 1, tottime = 0.5, cumtime = 0.5,
        lines = { [3] = { hits = 12345678901, time = 1e13 * unit }, [5] = { hits = 3, time = 0.3 * unit } } },
      { file = "~", line = 0, name = "print", what = "C", ncalls = 1, pcalls = 1, tottime = 0, cumtime = 0 },
    } })
  end

  it("prints line_profiler's layout, byte for byte", function()
    local path = dir .. "/sample.lua"
    write_file(path, SAMPLE)
    local want = "Timer unit: 1e-06 s\n\n"
      .. "Total time: 9.7e-05 s\n"
      .. "File: " .. path .. "\n"
      .. "Function: work at line 1\n\n"
      .. "Line #      Hits         Time  Per Hit   % Time  Line Contents\n"
      .. "==============================================================\n"
      .. "     1                                           local function work(n)\n"
      .. "     2         2          4.0      2.0      4.1    local s = 0\n"
      .. "     3        12         31.0      2.6     32.0    for i = 1, n do\n"
      .. "     4        10         60.0      6.0     61.9      s = s + i * i\n"
      .. "     5                                             end\n"
      .. "     6         2          2.0      1.0      2.1    return s\n"
      .. "     7                                           end\n\n"
      -- a source that cannot be read: blank contents; numbers too wide for the columns
      .. "Total time: 1e+07 s\n"
      .. "File: [string \"big\"]\n"
      .. "Function: big at line 3\n\n"
      .. "Line #        Hits         Time  Per Hit   % Time  Line Contents\n"
      .. "================================================================\n"
      .. "     3 1.23457e+10        1e+13    810.0    100.0  \n"
      .. "     4                                             \n"
      .. "     5           3          0.3      0.1      0.0  \n\n"
    assert.are.equal(want, printed(sample_stats(path)))
  end)

  it("shows a profiled program's hits and times (counter timer: one tick per reading)", function()
    local path = dir .. "/prog.lua"
    write_file(path, PROGRAM)
    local main = dofile(path)
    local p = cprof.Profile { lines = true, timer = "counter" }
    p:runcall(main)
    local want = "Timer unit: 1 s\n\n"
      .. "Total time: 33 s\n"
      .. "File: " .. path .. "\n"
      .. "Function: loop at line 1\n\n"
      .. "Line #      Hits         Time  Per Hit   % Time  Line Contents\n"
      .. "==============================================================\n"
      .. "     1                                           local function loop(n)\n"
      .. "     2         3          3.0      1.0      9.1    local s = 0\n"
      .. "     3        15         15.0      1.0     45.5    for i = 1, n do\n"
      .. "     4        12         12.0      1.0     36.4      s = s + i\n"
      .. "     5                                             end\n"
      .. "     6         3          3.0      1.0      9.1    return s\n"
      .. "     7                                           end\n\n"
    assert.are.equal(want, printed(stats.new(p:snapshot()), "loop"))
    -- the same from a dump of it
    p:dump_stats(dir .. "/prog.prof")
    assert.are.equal(want, printed(stats.new(dir .. "/prog.prof"), "loop"))
    -- the restrictions of print_stats, in the current order; C functions have no lines
    local all = printed(stats.new(p:snapshot()):sort_stats("line"))
    local order = {}
    for name in all:gmatch("\nFunction: (%S+) at line") do order[#order + 1] = name end
    assert.are.same({ "loop", "other", "<anon>" }, order)
    assert.are.same({ "other" }, { printed(stats.new(p:snapshot()), "other"):match("\nFunction: (%S+)") })
    assert.are.equal("Timer unit: 1 s\n\n", printed(stats.new(p:snapshot()), "nothing matches this"))
  end)

  it("says so when the profile has no line events", function()
    local p = cprof.Profile()
    p:runcall(function() return 1 end)
    local st = stats.new(p:snapshot())
    assert.is_false(st:has_lines())
    assert.are.equal("   cprof: the profile has no line events (make it with cprof.Profile{lines = true},"
      .. " or CPROF_LINES=1 with cprof.auto)\n\n", printed(st))
  end)

  it("sums line records on add, keeps them through strip_dirs and dump_stats", function()
    local path = dir .. "/sample.lua"
    write_file(path, SAMPLE)
    local st = sample_stats(path)
    st:add(sample_stats(path))
    local key = stats.func_key(path, 1, "work")
    assert.are.same({ hits = 24, time = 2 * (31 * unit) }, st.lines[key][3])
    st:strip_dirs()
    local stripped = stats.func_key("sample.lua", 1, "work")
    assert.are.same({ hits = 24, time = 2 * (31 * unit) }, st.lines[stripped][3])
    assert.are.equal(20, st.lines[stripped][4].hits)
    st:dump_stats(dir .. "/s.prof")
    local back = stats.new(dir .. "/s.prof")
    assert.are.same(st.lines[stripped], back.lines[stripped])
    assert.are.same(st.lines[stats.func_key('[string "big"]', 3, "big")],
                    back.lines[stats.func_key('[string "big"]', 3, "big")])
  end)

  it("are in report_table rows and in the JSON document", function()
    local path = dir .. "/sample.lua"
    write_file(path, SAMPLE)
    local st = sample_stats(path):sort_stats("name")
    local t = st:report_table({}, "work")
    assert.are.same({ { line = 2, hits = 2, time = 4 * unit }, { line = 3, hits = 12, time = 31 * unit },
                      { line = 4, hits = 10, time = 60 * unit }, { line = 6, hits = 2, time = 2 * unit } },
                    t.rows[1].lines)
    local doc = json.stats_document(st, {}, "print")
    assert.is_nil(doc.rows[1].lines)
    assert.matches('"lines":%[{"line":2,"hits":2,"time":4e%-06},', json.stats_json(st, {}, "work"))
  end)
end)
