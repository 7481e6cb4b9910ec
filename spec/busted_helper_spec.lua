-- cprof.busted: busted --helper=cprof.busted profiles a test run without busted's own frames,
-- lists the slowest spec files and specs, and writes a dump (or one per spec file).
local S = require "spec.support"
local cprof = require "cprof"

local ROOT = S.absolute(S.ROOT)

-- The counter timer: the specs' times are counts of events, so their order is exact.
local function env() return "env -u CPROF_OUT " .. S.child_env("CPROF_TIMER=counter") end

-- Two spec files: one with a spec that does far more work than the others.
local SLOW = [[
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
describe("slow things", function()
  it("computes fib(24)", function() assert.are.equal(46368, fib(24)) end)
  it("computes fib(5)", function() assert.are.equal(5, fib(5)) end)
end)
]]
local FAST = [[
local function add(a, b) return a + b end
describe("fast things", function()
  it("adds", function() assert.are.equal(3, add(1, 2)) end)
end)
]]

-- The report's first `n` rows (after its column heads).
local function first_rows(text, n)
  local rows, on = {}, false
  for line in text:gmatch("[^\n]*") do
    if on and line ~= "" and #rows < n then rows[#rows + 1] = line end
    if line:find("ncalls +tottime +percall +cumtime") then on = true end
  end
  return rows
end

describe("cprof.busted", function()
  local dir
  before_each(function()
    dir = S.new_dir()
    os.execute("mkdir -p " .. S.q(dir .. "/spec"))
    S.write_file(dir .. "/spec/slow_spec.lua", SLOW)
    S.write_file(dir .. "/spec/fast_spec.lua", FAST)
  end)
  after_each(function() S.remove_dir(dir) end)

  local function busted(flags, pre)
    return S.capture(("cd %s && %s %s %s /usr/bin/busted -o TAP --helper=cprof.busted %s spec"):format(
      S.q(dir), env(), S.lua, pre or "", flags or ""))
  end

  it("under cprof.auto, lists spec files and specs by time, with no busted frame in the report", function()
    local out, err, status = busted("-Xhelper out=run.prof", "-l cprof.auto")
    assert.are.equal(0, status, err)
    assert.matches("ok 3 ", out) -- busted's own output is untouched
    local files = err:match("cprof: the slowest spec files %(2, [^\n]*\n(.-)cprof: the slowest specs")
    assert.is_string(files, err)
    assert.matches("^ +[%d.]+ s +[%d.]+%%  spec/slow_spec.lua\n +[%d.]+ s +[%d.]+%%  spec/fast_spec.lua\n$", files)
    local specs = err:match("cprof: the slowest specs %(3, [^\n]*\n(.-)\n +%d+ function calls")
    assert.is_string(specs, err)
    assert.matches("^ +[%d.]+ s +[%d.]+%%  spec/slow_spec.lua: slow things computes fib%(24%)\n", specs)
    local rows = first_rows(err, 20)
    assert.is_true(#rows >= 5, err)
    for _, row in ipairs(rows) do
      for _, lib in ipairs { "/busted", "luassert", "/say/", "/pl/", "mediator", "cliargs", "cprof/busted" } do
        assert.is_nil(row:find(lib, 1, true), lib .. " in: " .. row)
      end
    end
    assert.matches("slow_spec.lua:1%(fib%)", table.concat(rows, "\n"))
    assert.matches("cprof: wrote run.prof\n", err)
    -- cprof.auto handed over: no report of its own at exit.
    assert.are.equal(1, select(2, err:gsub("function calls", "")))
    local d = cprof.load(dir .. "/run.prof")
    local fib_calls = 0
    for i = 1, d.frames.n do
      -- (functions left out are in the table of functions, never called)
      if d.frames.ncalls[i] > 0 then assert.is_nil(d.frames.file[i]:find("/busted/", 1, true)) end
      if d.frames.name[i] == "fib" then fib_calls = fib_calls + d.frames.ncalls[i] end
    end
    assert.are.equal(150049 + 15, fib_calls) -- fib(24) and fib(5): exact
  end)

  it("writes one dump per spec file with per-file, and reports on the whole run", function()
    local _, err, status = busted("-Xhelper per-file,out=d.%f.prof,top=1")
    assert.are.equal(0, status, err)
    local slow = cprof.load(dir .. "/d.spec_slow_spec.lua.prof")
    local fast = cprof.load(dir .. "/d.spec_fast_spec.lua.prof")
    local function has(d, name)
      for i = 1, d.frames.n do if d.frames.name[i] == name and d.frames.ncalls[i] > 0 then return true end end
      return false
    end
    assert.is_true(has(slow, "fib"))
    assert.is_false(has(fast, "fib"))
    assert.is_true(has(fast, "add"))
    -- nothing of cprof's own, which writes them while the profile runs
    for _, d in ipairs { slow, fast } do
      for i = 1, d.frames.n do
        if d.frames.ncalls[i] > 0 then assert.is_nil(d.frames.file[i]:find("cprof", 1, true)) end
      end
    end
    -- top=1: one row per list
    assert.matches("spec files %(2, [^\n]*\n[^\n]*\ncprof: the slowest specs", err)
    -- the closing report is the whole run's (issue 28, C.2: it was empty)
    local rows = table.concat(first_rows(err, 20), "\n")
    assert.matches("slow_spec.lua:1%(fib%)", rows)
    assert.matches("fast_spec.lua:1%(add%)", rows)
    assert.matches("\ncprof: wrote d.spec_[%w_]+.lua.prof\ncprof: wrote d.spec_[%w_]+.lua.prof\n$", err)
  end)

  it("prints its lists and report after busted's own result line (issue 28, C.2)", function()
    -- stdout and stderr in one stream, as a terminal shows them
    local all = S.capture("sh -c " .. S.q(("cd %s && %s %s /usr/bin/busted -o plainTerminal"
      .. " --helper=cprof.busted spec 2>&1"):format(S.q(dir), env(), S.lua)))
    assert.matches("^[+]+\n3 successes / 0 failures / 0 errors / 0 pending : [%d.]+ seconds\n"
      .. "cprof: the slowest spec files %(2,", all)
  end)

  it("names the command that works when busted runs on Lua 5.1 (issue 28, C.2)", function()
    local o, e = S.capture("lua -v")
    if not (o .. e):find("^Lua 5%.1") then
      pending("`lua` is not Lua 5.1 here")
      return
    end
    -- Lua 5.1 finds this checkout's modules, and its own C libraries where it looks by default
    local out, err, status = S.capture(("cd %s && env -u LUA_CPATH LUA_PATH=%s lua /usr/bin/busted"
      .. " --helper=cprof.busted -o TAP 'spec'"):format(S.q(dir),
      S.q(ROOT .. "/lua/?.lua;" .. ROOT .. "/lua/?/init.lua;;")))
    assert.are.equal(1, status)
    assert.are.equal("", out)
    assert.are.equal("busted: failed running the specified helper (cprof.busted), error: cprof"
      .. " needs Lua 5.4 or LuaJIT 2.1; this is Lua 5.1; run busted under Lua 5.4: lua5.4"
      .. " /usr/bin/busted --helper=cprof.busted -o TAP spec\n", err)
  end)

  it("refuses an unknown option", function()
    local _, err, status = busted("-Xhelper bogus")
    assert.are_not.equal(0, status)
    assert.matches("cprof.busted: unknown option 'bogus'", err)
  end)

  it("reports a CPROF_TIMER it cannot have, and runs on the default timer", function()
    local out, err, status = S.capture(("cd %s && %s CPROF_TIMER=nope %s /usr/bin/busted -o TAP"
      .. " --helper=cprof.busted spec"):format(S.q(dir), env(), S.lua))
    assert.are.equal(0, status, err)
    assert.matches("ok 3 ", out)
    assert.matches("cprof.busted: CPROF_TIMER: timer 'nope': unknown timer", err, 1, true)
    assert.matches("; using the default timer\n", err, 1, true)
    assert.matches("cprof: the slowest specs (3,", err, 1, true)
  end)
end)
