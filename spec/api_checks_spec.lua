-- The Lua API as a newcomer meets it (issue 13, points 10-18) and against hostile arguments
-- (issue 17, item 7): each check is of the text the user sees.
local S = require "spec.support"
local cprof = require "cprof"
local stats = require "cprof.stats"
local report = require "cprof.report"
local profdata = require "cprof.profdata"

-- The error of f(...), which must fail.
local function err_of(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return err
end

-- The error raised by the code at this spec's line `line` ("<this file>:<line>: <msg>").
local HERE = debug.getinfo(1, "S").short_src

local pcall, sformat = pcall, string.format
local function leaf() return 1 end
local function mid(n) for _ = 1, n do leaf() end pcall(leaf) end
local function top() mid(3) mid(2) sformat("%d", 1) end

local function text_of(st)
  local out = S.collector()
  st.stream = out
  st:sort_stats("name"):print_stats()
  return out.text()
end

describe("Profile options (issue 13, point 10)", function()
  it("an unknown option is an error naming it, with the option meant when it is a typo", function()
    assert.matches("^" .. HERE:gsub("%p", "%%%0") .. ":%d+: cprof: unknown option 'line' %(did you"
      .. " mean 'lines'%?%)$", err_of(function() cprof.Profile { line = true } end))
    assert.are.equal("cprof: unknown option 'bogus' (the options are timer, unit, timeunit, bias,"
      .. " lines, tree_cap, recursion, subcalls, builtins, fast_path, exclude, include, trace, trace_size)",
      err_of(cprof.Profile, { bogus = 1 }))
    assert.are.equal("cprof: unknown option 'tree_cp' (did you mean 'tree_cap'?)",
      err_of(cprof.Profile, { tree_cp = 5 }))
    assert.are.equal("cprof: options have names (Profile{lines = true}); a number is no name",
      err_of(cprof.Profile, { true }))
    -- lines also takes a list of functions (docs/API.md): the message says so
    assert.are.equal("cprof: option 'lines' must be true, false or a list of functions, not a string",
      err_of(cprof.Profile, { lines = "yes" }))
    assert.are.equal("cprof: option 'lines' must be true, false or a list of functions, not a number",
      err_of(cprof.Profile, { lines = 5 }))
    assert.are.equal("bad argument #1 to 'Profile' (table expected, got number)",
      err_of(cprof.Profile, 42))
  end)

  it("reads the options table raw: its metamethods never run", function()
    local opts = setmetatable({ timer = "counter" }, {
      __index = function(_, k) error("strict: " .. tostring(k)) end,
      __pairs = function() error("no pairs") end,
    })
    local p = cprof.Profile(opts)
    assert.are.equal("counter", p:getstats().timer)
    cprof.bias = 0.5
    local ok, q = pcall(cprof.Profile, opts)
    cprof.bias = 0
    assert.is_true(ok, q)
    assert.are.equal(0.5, q:bias())
  end)

  it("takes timeunit, Python's name for unit", function()
    local n = 0
    local p = cprof.Profile { timer = function() n = n + 1 return n end, timeunit = 0.001 }
    p:runcall(leaf)
    local e = S.entry_of(p:getstats(), leaf)
    assert.are.equal(0.001, p:getstats().unit)
    assert.is_true(e.tottime > 0 and e.tottime < 0.01, "ticks of a millisecond, not seconds")
    assert.are.equal("cprof: options 'unit' and 'timeunit' are one option (Python's name and"
      .. " cprof's): give one",
      err_of(cprof.Profile, { timer = function() return 1 end, unit = 1, timeunit = 2 }))
    assert.are.equal("cprof: option 'timeunit' goes with a function timer",
      err_of(cprof.Profile, { timeunit = 0.001 }))
  end)

  it("subcalls = false records no caller data, and the same numbers per function", function()
    local full = cprof.Profile { timer = "counter" }
    full:runcall(top)
    local flat = cprof.Profile { timer = "counter", subcalls = false }
    flat:runcall(top)
    local a, b = full:snapshot(), flat:snapshot()
    assert.are.equal(0, b.edges.n)
    assert.are.equal(0, b.nodes.n)
    assert.is_true(a.edges.n > 0)
    assert.is_false(b.meta.subcalls)
    assert.are.equal(a.frames.n, b.frames.n)
    for _, c in ipairs { "name", "ncalls", "pcalls", "tottime", "cumtime" } do
      assert.are.same(a.frames[c], b.frames[c], c)
    end
    for _, e in ipairs(flat:getstats().entries) do assert.are.same({}, e.callers) end
    -- the sibling keeps the option; a dump keeps the data as it is
    assert.are.equal(0, flat:sibling():snapshot().edges.n)
    local path = S.tmpname(".prof")
    flat:dump_stats(path)
    local d = cprof.load(path)
    os.remove(path)
    assert.are.equal(0, d.edges.n)
    assert.are.same(a.frames.tottime, d.frames.tottime)
  end)

  it("subcalls = false subtracts the bias with every event counted, as the full profile does", function()
    local full = cprof.Profile { timer = "counter", bias = 0.25 }
    full:runcall(top)
    local flat = cprof.Profile { timer = "counter", bias = 0.25, subcalls = false }
    flat:runcall(top)
    local a, b = full:report_data(), flat:report_data()
    assert.are.same(a.frames.tottime, b.frames.tottime)
    assert.are.same(a.frames.cumtime, b.frames.cumtime)
    assert.is_true(b.meta.bias_applied)
  end)

  it("builtins = false records no C function (spec/filters_spec.lua has the numbers)", function()
    local p = cprof.Profile { builtins = false }
    p:runcall(function() return select("#", tostring(1), type(p)) end)
    for _, e in ipairs(p:getstats().entries) do assert.are.equal("Lua", e.what) end
    assert.is_truthy(cprof.Profile { builtins = true })
  end)
end)

describe("the bias (issue 13, point 11)", function()
  it("is subtracted by Stats(p) and Stats(p:getstats()) as by p:print_stats", function()
    local p = cprof.Profile { timer = "counter", bias = 0.5 }
    p:runcall(top)
    local from_data = text_of(stats.new(p:report_data()))
    assert.are.equal(from_data, text_of(stats.new(p)))
    assert.are.equal(from_data, text_of(stats.new(p:getstats())))
    assert.are.equal(from_data, text_of(stats(p)))
    assert.matches("13 function calls in %d+%.%d+ seconds", from_data)
    local e = S.entry_of(p:getstats(), leaf)
    assert.are.equal(7 * 0.5, e.tottime)
  end)
end)

describe("cprof.runctx with locals (issue 13, point 12)", function()
  it("shows no function of cprof's, and looks names up in locals, then env", function()
    local env = setmetatable({ x = 1 }, { __index = _G })
    local locals = { y = 2 }
    local out = S.collector()
    local p = cprof.Profile { timer = "counter" }
    p:runctx("z = x + y; local function f() return z end f()", env, locals)
    assert.are.equal(3, locals.z)
    assert.is_nil(rawget(env, "z"))
    assert.is_nil(getmetatable(locals))
    local st = stats.new(p, { stream = out })
    st:print_stats()
    assert.not_matches("init%.lua", out.text())
    assert.not_matches("__index", out.text())
    assert.are.equal(2, #p:getstats().entries) -- the chunk and f
  end)

  it("refuses locals it cannot read through without a function of its own", function()
    assert.matches("^" .. HERE:gsub("%p", "%%%0") .. ":%d+: cprof: runctx's locals must be a"
      .. " table without a metatable",
      err_of(function() cprof.runctx("return 1", _G, setmetatable({}, {})) end))
  end)
end)

describe("<close> and regions (issue 13, point 13)", function()
  it("a profile closes by disabling itself", function()
    local p = cprof.Profile { timer = "counter" }
    local mt = getmetatable(p)
    assert.are.equal("function", type(mt.__close))
    p:enable()
    mt.__close(p)
    assert.is_false(p:is_enabled())
    if not S.jit then
      local chunk = assert(load([[
        local cprof, leaf = ...
        local q
        do
          local p <close> = cprof.Profile { timer = "counter" }
          p:enable()
          leaf()
          q = p
        end
        return q
      ]]))
      local q = chunk(cprof, leaf)
      assert.is_false(q:is_enabled())
      assert.are.equal(1, S.entry_of(q:getstats(), leaf).ncalls)
    end
  end)

  it("cprof.region(name) is an enabled profile that adds up over its regions", function()
    local r = cprof.region("spec region", { timer = "counter" })
    leaf()
    getmetatable(r).__close(r)
    local again = cprof.region("spec region")
    leaf()
    again:disable()
    assert.are.equal(r, again)
    assert.are.equal(r, cprof.regions["spec region"])
    assert.are.equal(2, S.entry_of(r:getstats(), leaf).ncalls)
    assert.matches("cprof: region 'spec region' was made already",
      err_of(cprof.region, "spec region", { lines = true }))
    assert.are.equal("bad argument #1 to 'region' (string expected, got number)",
      err_of(cprof.region, 7):gsub("^[^:]*:%d+: ", ""))
  end)
end)

describe("timer failures (issue 13, point 14)", function()
  it("are counted and said in the report", function()
    local n = 0
    local p = cprof.Profile { timer = function() n = n + 1 if n > 2 then error("x") end return n end,
                              unit = 1 }
    p:runcall(top)
    local out = S.collector()
    stats.new(p, { stream = out }):print_stats()
    local errors = p:getstats().timer_errors
    assert.is_true(errors > 1)
    assert.matches("\n   cprof: " .. errors .. " readings of the timer failed %(it raised an error"
      .. " or returned no number%) and repeated the last good reading: the times are wrong\n\n$",
      out.text())
    local q = cprof.Profile { timer = function() return "soon" end, unit = 1 }
    q:runcall(leaf)
    out = S.collector()
    stats.new(q:snapshot(), { stream = out }):print_stats()
    assert.matches("cprof: %d+ readings of the timer failed", out.text())
  end)
end)

describe("timer names (issue 13, point 15)", function()
  it("an unknown timer lists the timers there are", function()
    assert.matches("^cprof: timer 'wall': unknown timer %(the timers are [%w, ]*monotonic, cpu,"
      .. " thread, counter, or one the host registered%)$", err_of(cprof.Profile, { timer = "wall" }))
  end)
end)

describe("errors the user caused (issue 13, point 16)", function()
  it("are raised at the user's line, never at cprof's", function()
    local p = cprof.Profile()
    local e = err_of(function() p:print_stats("bogus") end)
    assert.matches("^" .. HERE:gsub("%p", "%%%0") .. ":%d+: cprof.stats: unknown sort key 'bogus';", e)
    e = err_of(function() report.print(p, { sort = "bogus" }) end)
    assert.matches("^" .. HERE:gsub("%p", "%%%0") .. ":%d+: cprof.stats: unknown sort key", e)
    e = err_of(function() cprof.run("local x = 1", nil, "bogus") end)
    assert.matches("^" .. HERE:gsub("%p", "%%%0") .. ":%d+: cprof.stats: unknown sort key", e)
  end)
end)

describe("settings of cprof.auto (issue 13, points 15 and 16)", function()
  it("a bad CPROF_TIMER or CPROF_SORT is said once, with what there is, and no cprof file", function()
    local _, err, status = S.run_lua("local x = 1\n", "-l cprof.auto",
                                     "CPROF_TIMER=nope CPROF_SORT=bogus,calls")
    assert.are.equal(0, status)
    assert.matches("^cprof: CPROF_TIMER: timer 'nope': unknown timer %(the timers are [%w, ]*monotonic,"
      .. " cpu, thread, counter, or one the host registered%); using the default timer\n"
      .. "cprof: CPROF_SORT=bogus,calls: unknown sort key 'bogus'; valid keys: calls, [^\n]*;"
      .. " sorting by cumulative time\n", err)
    assert.not_matches("%.lua:%d+:", err)
  end)
end)

describe("memory reports (issue 13, points 16 and 17)", function()
  it("check their arguments, write once, and memory.trace's usage names every verb", function()
    if S.jit then
      pending("LuaJIT has no cprof allocator (docs/MEMORY.md)")
      return
    end
    local out, err, status = S.run_lua([[
local memory = require "cprof.memory"
memory.install()
print(select(2, pcall(function() memory.report(42) end)))
print(select(2, pcall(function() memory.trace("begin", "table_56") end)))
memory.trace("start", "table_56")
local t = {}
for i = 1, 3 do t[i] = {} end
memory.trace("stop", "table_56")
print(memory.trace("print", "table_56"))
local writes = 0
memory.report({ write = function(_, s, extra) assert(extra == nil) writes = writes + 1 end })
print("writes", writes)
]])
    assert.are.equal("", err)
    assert.are.equal(0, status)
    local src = out:match("^([^\n]-):3: ")
    assert.is_truthy(src, out)
    local lines = {}
    for l in out:gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
    assert.are.equal(src .. ":3: bad argument #1 to 'report' (an object with a write method"
      .. " expected, got number)", lines[1])
    assert.are.equal(src .. ":4: bad argument #1 to 'trace' (invalid option 'begin': start, stop,"
      .. " print, text, reset or data)", lines[2])
    local _, dumps = out:gsub("Dumping trace for kmem_cache table_56", "")
    assert.are.equal(1, dumps, "print(memory.trace('print', ...)) prints the trace once")
    assert.matches("\nwrites\t1\n$", out)
  end)
end)

describe("report streams (issue 13, point 17)", function()
  it("every report writes one string per write call", function()
    local writes = {}
    local stream = { write = function(self, s, extra)
      assert(extra == nil, "one string per call")
      writes[#writes + 1] = s
      return self
    end }
    local st = stats.new(S.det_data(), { stream = stream })
    for _, m in ipairs { "print_stats", "print_callers", "print_callees", "print_lines",
                         "print_memory", "print_allocator" } do
      st[m](st)
    end
    assert.are.equal(6, #writes)
  end)
end)

describe("counts in warnings (issue 13, point 18)", function()
  it("say 1 time and N times", function()
    local function warning(n)
      local out = S.collector()
      local st = stats.new(S.det_data(), { stream = out })
      st.meta = { bias_clamped = n, bias = 2, dropped = n }
      st:print_stats()
      return out.text()
    end
    assert.matches("cprof: 1 time went below zero after subtracting the bias %(2 s per event%) and"
      .. " was shown as 0\n", warning(1))
    assert.matches("cprof: 3 times went below zero after subtracting the bias %(2 s per event%) and"
      .. " were shown as 0\n", warning(3))
    assert.matches("memory ran out while profiling: 1 event was not recorded\n", warning(1))
  end)
end)

describe("arguments (issue 17, item 7)", function()
  local function at_user(f, ...)
    local e = err_of(f, ...)
    return (e:gsub("^" .. HERE:gsub("%p", "%%%0") .. ":%d+: ", ""))
  end

  it("are checked and the error says what was wrong, in Lua's words", function()
    local st = stats.new()
    assert.are.equal("bad argument #1 to 'add' (a profile, a getstats() or data table, a dump or"
      .. " pstats file name, or a Stats expected, got number)", at_user(function() st:add(42) end))
    assert.are.equal("bad argument #1 to 'report_table' (options table expected, got number)",
      at_user(function() st:report_table(42) end))
    assert.are.equal("calling 'print_stats' on bad self (Stats expected, got number)",
      at_user(function() stats.Stats.print_stats(42) end))
    assert.are.equal("bad argument #1 to 'add_memory' (memory record expected, got number)",
      at_user(function() profdata.add_memory(1, 2) end))
    local p = cprof.Profile()
    assert.are.equal("bad argument #1 to 'calibrate' (a whole number of calls from 1 to 10000000"
      .. " expected, got number)", at_user(function() p:calibrate(1e300) end))
    assert.are.equal("calling 'print_stats' on bad self (cprof.Profile expected, got table)",
      at_user(function() p.print_stats({}) end))
    assert.are.equal("bad argument #2 to 'print' (opts.stream: an object with a write method"
      .. " expected, got number)", at_user(function() report.print(p, { stream = 3 }) end))
  end)

  it("of the whole public API are checked, never failing inside cprof (issue 28, B.7)", function()
    assert.are.equal("bad argument #1 to 'dump_name' (string expected, got number)",
      at_user(function() cprof.dump_name(42, "x") end))
    assert.are.equal("bad argument #2 to 'dump_name' (whole number of the dump, 0 or more expected,"
      .. " got nil)", at_user(function() cprof.dump_name("x.%n.prof") end))
    assert.are.equal("bad argument #2 to 'dump_name' (whole number of the dump, 0 or more expected,"
      .. " got number)", at_user(function() cprof.dump_name("x.%n.prof", 1.5) end))
    local p = cprof.Profile()
    local h = p:live { file = function() return nil end }
    assert.are.equal("cprof: live dump 1: the function given as option 'file' of live returned nil,"
      .. " not a file name", at_user(function() h:dump() end))
    h:stop()
    assert.are.equal("calling 'dump' on bad self (cprof.Live expected, got number)",
      at_user(function() h.dump(42) end))
    assert.are.equal("calling 'stop' on bad self (cprof.Live expected, got table)",
      at_user(function() h.stop({}) end))
    assert.are.equal("bad argument #1 to 'run' (string of Lua expected, got number)",
      at_user(function() cprof.run(42) end))
    assert.are.equal("bad argument #1 to 'runctx' (string of Lua expected, got nil)",
      at_user(function() p:runctx(nil, {}) end))
    assert.are.equal("bad argument #2 to 'region' (table of options expected, got number)",
      at_user(function() cprof.region("r", 5) end))
    assert.are.equal("bad argument #1 to 'save_calibration' (timer name or function expected, got"
      .. " number)", at_user(function() cprof.save_calibration(5) end))
    assert.matches("^cprof: timer 'wall': unknown timer %(the timers are [%w, ]+, or one the host"
      .. " registered%)$", at_user(function() cprof.save_calibration("wall") end))
    assert.are.equal("cprof: option 'bias' must be a finite number",
      at_user(function() cprof.Profile { bias = math.huge } end))
    assert.are.equal("cprof: bias must be a finite number", at_user(function() p:bias(0 / 0) end))
    assert.are.equal("bad argument #1 to 'sibling' (boolean expected, got number)",
      at_user(function() p:sibling(5) end))
    local st = stats.new(S.det_data())
    assert.are.equal("bad argument #1 to 'print_tree' (table of options expected, got number)",
      at_user(function() st:print_tree(3) end))
    assert.are.equal("bad argument #2 to 'print_views' (options table expected, got number)",
      at_user(function() report.print_views(st, 3) end))
    assert.are.equal("bad argument #1 to 'counts' (profile data expected, got number)",
      at_user(function() require("cprof.bias").counts(3) end))
    assert.are.equal("bad argument #1 to 'totals' (counts (bias.counts) expected, got string)",
      at_user(function() require("cprof.bias").totals("x") end))
    assert.are.equal("bad argument #1 to 'load' (string expected, got boolean)",
      at_user(function() require("cprof.calibrate").load(true) end))
    assert.are.equal("bad argument #1 to 'set' (profile data expected, got number)",
      at_user(function() require("cprof.allocdata").set(42, {}) end))
  end)

  it("Stats:add(self) ends, and doubles the numbers as pstats does", function()
    local st = stats.new(S.det_data())
    local calls = st.total_calls
    st:add(st)
    assert.are.equal(2 * calls, st.total_calls)
  end)
end)
