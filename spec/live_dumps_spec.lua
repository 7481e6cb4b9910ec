-- Live dumps: a running program dumps its profile on a signal or a timer, without stopping it
-- (Profile:live, cprof.auto's CPROF_SIGNAL / CPROF_INTERVAL / CPROF_RESET), and
-- p:dump_stats(file, {reset = true}).
local S = require "spec.support"
local cprof = require "cprof"

local ROOT = S.absolute(S.ROOT)

local child_env = S.child_env

-- Waits (polling, at most about 20 s) until `path` exists; returns whether it does.
local function wait_for(path)
  for _ = 1, 400 do
    if S.read_file(path) then return true end
    os.execute("sleep 0.05")
  end
  return false
end

local function alive(pid)
  local ok = os.execute("kill -0 " .. pid .. " 2>/dev/null")
  return ok == true or ok == 0
end

-- ncalls per function ("file:line", or "{name}" for a C function) of a dump.
local function counts(d)
  local c, f = {}, d.frames
  for i = 1, f.n do
    -- (an unnamed C function is named by its address, which differs from run to run)
    local k = f.kind[i] == "C" and "{" .. f.name[i]:gsub("0x%x+", "?") .. "}"
      or ("%s:%d"):format(f.file[i], f.line[i])
    c[k] = (c[k] or 0) + f.ncalls[i]
  end
  return c
end

describe("live dumps", function()
  local dir
  before_each(function() dir = S.new_dir() end)
  after_each(function() S.remove_dir(dir) end)

  it("CPROF_SIGNAL=USR1: each kill writes a complete dump while the program runs on", function()
    local script = dir .. "/loop.lua"
    S.write_file(script, ([[
local function work(n) local s = 0 for i = 1, n do s = s + i end return s end
local function step() return work(100) end
io.open(%q, "w"):close()
local n = 0
while not io.open(%q) do
  for _ = 1, 1000 do step() end
  n = n + 1
end
print("steps", n)
]]):format(dir .. "/ready", dir .. "/stop"))
    os.execute(("%s %s -l cprof.auto %s >%s 2>%s & echo $! >%s"):format(
      child_env("CPROF_SIGNAL=USR1 CPROF_OUT=" .. S.q(dir .. "/live.%n.prof")), S.lua, S.q(script),
      S.q(dir .. "/out"), S.q(dir .. "/err"), S.q(dir .. "/pid")))
    assert.is_true(wait_for(dir .. "/pid") and wait_for(dir .. "/ready"))
    local pid = S.read_file(dir .. "/pid"):match("%d+")
    local previous = 0
    for n = 1, 3 do
      os.execute("kill -USR1 " .. pid)
      local file = ("%s/live.%08d.prof"):format(dir, n)
      assert.is_true(wait_for(file), "dump " .. n .. " written")
      assert.is_true(alive(pid), "the program still runs after dump " .. n)
      local d = cprof.load(file) -- checksums and every section checked
      local c = counts(d)
      local work = c[script .. ":1"]
      assert.is_true(work ~= nil and work > previous, "dump " .. n .. " holds more calls of work")
      previous = work
      local out, _, status = S.capture(child_env("") .. " " .. S.lua .. " " .. S.q(ROOT .. "/bin/cprof-stats") .. " " .. S.q(file))
      assert.are.equal(0, status)
      assert.matches("loop.lua:1%(", out)
    end
    io.open(dir .. "/stop", "w"):close()
    assert.is_true(wait_for(dir .. "/live.00000004.prof"), "the dump at exit takes the next number")
    for _ = 1, 200 do
      if not alive(pid) then break end
      os.execute("sleep 0.05")
    end
    assert.is_false(alive(pid))
    assert.matches("^steps\t%d+\n$", S.read_file(dir .. "/out"))
    assert.are.equal("", S.read_file(dir .. "/err"))
    assert.is_nil(S.read_file(dir .. "/live.00000005.prof"))
  end)

  it("with CPROF_RESET=1 the interval dumps add up to the counts of one dump of the whole run", function()
    -- The program signals itself (the handler has run when os.execute returns): three dumps
    -- at fixed points, a fourth at exit.
    local script = dir .. "/work.lua"
    S.write_file(script, [[
local function leaf(i) return i % 7 end
local function mid(n) local s = 0 for i = 1, n do s = s + leaf(i) end return s end
local function rec(n) if n == 0 then return 0 end return rec(n - 1) + 1 end
for round = 1, 4 do
  for i = 1, 50 * round do mid(i) end
  rec(20 + round)
  if round < 4 then os.execute("kill -USR1 $PPID") end
end
]])
    local function run(out, reset)
      local o, e, status = S.capture(("%s %s -l cprof.auto %s"):format(
        child_env("CPROF_SIGNAL=USR1 CPROF_TIMER=counter CPROF_OUT=" .. S.q(out) .. (reset and " CPROF_RESET=1" or "")),
        S.lua, S.q(script)))
      assert.are.same({ "", "", 0 }, { o, e, status })
    end
    run(dir .. "/part.%n.prof", true)
    run(dir .. "/whole.%n.prof", false)
    local sum = {}
    for n = 1, 4 do
      for k, v in pairs(counts(cprof.load(("%s/part.%08d.prof"):format(dir, n)))) do sum[k] = (sum[k] or 0) + v end
    end
    assert.is_nil(S.read_file(dir .. "/part.00000005.prof"))
    local whole = counts(cprof.load(dir .. "/whole.00000004.prof"))
    for k, v in pairs(sum) do if v == 0 then sum[k] = nil end end
    for k, v in pairs(whole) do if v == 0 then whole[k] = nil end end
    assert.are.same(whole, sum)
    assert.are.equal(50 * (1 + 2 + 3 + 4), whole[script .. ":2"])
    -- Each interval holds its own round's calls only.
    local first = counts(cprof.load(dir .. "/part.00000001.prof"))
    assert.are.equal(50, first[script .. ":2"])
    assert.are.equal(22, first[script .. ":3"])
    local third = counts(cprof.load(dir .. "/part.00000003.prof"))
    assert.are.equal(150, third[script .. ":2"])
    assert.are.equal(24, third[script .. ":3"])
  end)

  it("examples/server.lua with CPROF_INTERVAL and CPROF_RESET: the interval dumps add up to one whole dump", function()
    local server = S.q(ROOT .. "/examples/server.lua")
    local function run(extra)
      local o, e, status = S.capture(("%s %s -l cprof.auto %s 0 4000"):format(child_env(extra), S.lua, server))
      assert.are.same({ "handled 4000 requests, 212800 bytes of responses\n", "", 0 }, { o, e, status })
    end
    run("CPROF_INTERVAL=0.02 CPROF_RESET=1 CPROF_OUT=" .. S.q(dir .. "/part.%n.prof"))
    run("CPROF_OUT=" .. S.q(dir .. "/whole.prof"))
    local sum, n = {}, 0
    for _, name in ipairs(S.listing(dir)) do
      if name:find("^part%.%d+%.prof$") then
        n = n + 1
        for k, v in pairs(counts(cprof.load(dir .. "/" .. name))) do sum[k] = (sum[k] or 0) + v end
      end
    end
    assert.is_true(n >= 1)
    assert.is_table(cprof.load(("%s/part.%08d.prof"):format(dir, n))) -- numbered 1 to n
    local whole = counts(cprof.load(dir .. "/whole.prof"))
    for k, v in pairs(sum) do if v == 0 then sum[k] = nil end end
    for k, v in pairs(whole) do if v == 0 then whole[k] = nil end end
    assert.are.same(whole, sum)
    assert.are.equal(4000, whole[ROOT .. "/examples/server.lua:73"])
  end)

  it("CPROF_INTERVAL writes dumps on a timer; a bad value is reported and ignored", function()
    local script = dir .. "/t.lua"
    S.write_file(script, ([[
local function f() return 1 end
while not io.open(%q) do for _ = 1, 100 do f() end end
]]):format(dir .. "/live.00000002.prof"))
    local o, e, status = S.capture(("%s %s -l cprof.auto %s"):format(
      child_env("CPROF_INTERVAL=0.05 CPROF_OUT=" .. S.q(dir .. "/live.%n.prof")), S.lua, S.q(script)))
    assert.are.same({ "", "", 0 }, { o, e, status })
    assert.is_table(cprof.load(dir .. "/live.00000001.prof"))
    o, e, status = S.run_lua("print(1)", "-l cprof.auto", child_env("CPROF_QUIET=1 CPROF_INTERVAL=soon"))
    assert.are.equal("1\n", o)
    assert.are.equal(0, status)
    assert.matches("CPROF_INTERVAL must be a positive number of seconds, not 'soon'", e)
    o, e = S.run_lua("print(1)", "-l cprof.auto", child_env("CPROF_QUIET=1 CPROF_SIGNAL=TERM"))
    assert.are.equal("1\n", o)
    assert.matches("signal 'TERM': not one cprof takes %(USR1, USR2 or HUP%)", e)
  end)
end)

describe("a live dump that fails", function()
  it("is reported once per reason, without a doubled prefix, and once more when dumps work again", function()
    -- The program asks for each dump itself (the handler has run when os.execute returns; the
    -- dump is written at that return): three into a folder that does not exist, three where
    -- a file stands in for the folder, then two that work.
    local dir = S.new_dir()
    local sub = dir .. "/sub"
    local script = dir .. "/fail.lua"
    S.write_file(script, ([[
local function dump() os.execute("kill -USR1 $PPID") end
for _ = 1, 3 do dump() end
io.open(%q, "w"):close()
for _ = 1, 3 do dump() end
os.remove(%q)
os.execute("mkdir " .. %q)
for _ = 1, 2 do dump() end
]]):format(sub, sub, S.q(sub)))
    local out, err, status = S.capture(("%s %s -l cprof.auto %s"):format(
      child_env("CPROF_SIGNAL=USR1 CPROF_OUT=" .. S.q(sub .. "/l.%n.prof")), S.lua, S.q(script)))
    assert.are.equal("", out)
    assert.are.equal(0, status)
    assert.are.equal(table.concat({
      ("cprof: live dump: %s/l.00000001.prof: cannot create a file in %s: No such file or directory (not reported again while it repeats)\n"):format(sub, sub),
      ("cprof: live dump: %s/l.00000004.prof: cannot create a file in %s: Not a directory (not reported again while it repeats)\n"):format(sub, sub),
      ("cprof: live dumps are written again (%s/l.00000007.prof), after 6 failed\n"):format(sub),
    }), err)
    assert.are.same({ "l.00000007.prof", "l.00000008.prof", "l.00000009.prof" }, S.listing(sub))
    S.remove_dir(dir)
  end)
end)

describe("a live dump that takes longer than the interval", function()
  it("does not starve the program: each interval starts when the last dump ended, and is no shorter than it", function()
    -- Each dump takes at least 50 ms (its name function sleeps), the interval is 1 ms. Were the
    -- next dump asked for while one is written, dumps would follow each other with one return
    -- between them. With each interval as long as the last dump at least, K dumps take at
    -- least (2K - 1) * 50 ms of the run, whatever the machine's load: K <= (elapsed + 0.05) * 10.
    local dir = S.new_dir()
    local script = dir .. "/slow.lua"
    S.write_file(script, ([[
local cprof = require "cprof"
local p = cprof.Profile()
p:enable()
local h = p:live { interval = 0.001, file = function(n)
  os.execute("sleep 0.05")
  return %q .. n .. ".prof"
end }
local function f() return 1 end
while not io.open(%q) do for _ = 1, 10 do f() end end
h:stop()
p:disable()
print("done")
]]):format(dir .. "/live.", dir .. "/stop"))
    local function now() return tonumber(S.capture("date +%s.%N"):match("[%d.]+")) end
    local t0 = now()
    os.execute("(sleep 1; touch " .. S.q(dir .. "/stop") .. ") &")
    local out, err, status = S.capture(child_env("") .. " " .. S.lua .. " " .. S.q(script))
    local elapsed = now() - t0
    assert.are.same({ "done\n", "", 0 }, { out, err, status })
    local k = 0
    while S.read_file(("%s/live.%d.prof"):format(dir, k + 1)) do
      k = k + 1
      assert.is_table(cprof.load(("%s/live.%d.prof"):format(dir, k)))
    end
    assert.are.equal(k + 2, #S.listing(dir), "dumps numbered 1 to k, the script and the stop file")
    assert.is_true(k >= 2, "dumps on the timer: " .. k)
    assert.is_true(k <= (elapsed + 0.05) * 10,
      ("%d dumps in %.2f s: more than one per 100 ms"):format(k, elapsed))
    S.remove_dir(dir)
  end)
end)

describe("p:dump_stats(file, {reset = true})", function()
  local function f() return 1 end

  it("writes the numbers so far and zeroes them, also while the profile runs", function()
    local file = S.tmpname(".prof")
    local p = cprof.Profile()
    p:enable()
    for _ = 1, 3 do f() end
    p:dump_stats(file, { reset = true })
    for _ = 1, 2 do f() end
    p:disable()
    local d = cprof.load(file)
    os.remove(file)
    local line = debug.getinfo(f, "S").linedefined
    local n1
    for i = 1, d.frames.n do if d.frames.line[i] == line then n1 = d.frames.ncalls[i] end end
    assert.are.equal(3, n1)
    assert.are.equal(2, S.entry_of(p:getstats(), f).ncalls)
  end)

  it("p:reset() keeps an open frame, which counts in full when it closes", function()
    local p = cprof.Profile()
    local function outer(k) for _ = 1, k do f() end p:reset() f() end
    p:runcall(outer, 3)
    local st = p:getstats()
    assert.are.equal(1, S.entry_of(st, f).ncalls)
    assert.are.equal(1, S.entry_of(st, outer).ncalls)
  end)

  it("checks its options", function()
    local p = cprof.Profile()
    local file = S.tmpname(".prof")
    assert.has_error(function() p:dump_stats(file, 1) end,
      "bad argument #2 to 'dump_stats' (table of options expected, got number)")
    assert.has_error(function() p:dump_stats(file, { rest = true }) end,
      "bad argument #2 to 'dump_stats' (unknown option 'rest' (the option is reset))")
    assert.is_nil(S.read_file(file))
  end)
end)

describe("p:live", function()
  it("asked for at a stack overflow, is written at a later return with room for it", function()
    -- A message handler runs on the overflowed stack (Lua 5.4.4's test suite, errors.lua): the
    -- dump written there failed with "out of memory" and was lost (Lua 5.4), or the handler
    -- failed with cprof's "stack overflow" (LuaJIT, whose lua_checkstack raises).
    local dir = S.new_dir()
    local script = dir .. "/overflow.lua"
    S.write_file(script, ([[
local cprof = require "cprof"
local p = cprof.Profile()
p:enable()
local h = p:live { file = %q, signal = "USR1" }
local function inf(n) return inf(n + 1) + 1 end
local function handler(m) os.execute("kill -USR1 " .. cprof.getpid()); return "handled: " .. m end
print(xpcall(inf, handler, 1))
local function later() return 1 end
later()
h:stop()
p:disable()
]]):format(dir .. "/live.%n.prof"))
    local out, err, status = S.capture(child_env("") .. " " .. S.lua .. " " .. S.q(script))
    assert.are.same({ ("false\thandled: %s:5: stack overflow\n"):format(script), "", 0 },
      { out, err, status })
    local c = counts(cprof.load(dir .. "/live.00000001.prof"))
    assert.is_true(c[script .. ":5"] > 10000)
    assert.are.equal(1, c[script .. ":6"])
    S.remove_dir(dir)
  end)

  it("names its files with %p, %n and %%, and dumps on demand", function()
    assert.are.equal(("a.%d.00000007%%.prof"):format(cprof.getpid()), cprof.dump_name("a.%p.%n%%.prof", 7))
    local dir = S.new_dir()
    local p = cprof.Profile()
    local h = p:live { file = dir .. "/x.%n.prof" }
    assert.are.equal(dir .. "/x.00000001.prof", h:dump())
    assert.are.equal(dir .. "/x.00000002.prof", h:dump())
    h:stop()
    assert.is_table(cprof.load(dir .. "/x.00000002.prof"))
    S.remove_dir(dir)
  end)

  it("pads %n so that the names sort as the dumps were written (issue 28, C.4)", function()
    local names = {}
    for i, n in ipairs { 1, 2, 9, 10, 11, 99, 100, 86400, 31536000, 99999999 } do
      names[i] = cprof.dump_name("srv.%n.prof", n)
    end
    assert.are.equal("srv.00000001.prof", names[1])
    assert.are.equal("srv.31536000.prof", names[9])
    local sorted = { table.unpack(names) }
    table.sort(sorted)
    assert.are.same(names, sorted)
    -- past the digits the number just grows: still the whole number
    assert.are.equal("srv.100000000.prof", cprof.dump_name("srv.%n.prof", 1e8))
    assert.are.equal("x.prof", cprof.dump_name("x.prof"))
  end)

  it("is one at a time per process, and checks its options", function()
    local p = cprof.Profile()
    local h = p:live { file = "x.prof", signal = "USR2" }
    assert.has_error(function() p:live { file = "y.prof" } end,
      "cprof: live dumps are on already in this process")
    h:stop()
    local h2 = p:live { file = "y.prof", interval = 1000 }
    h2:stop()
    assert.has_error(function() p:live { signal = "USR1" } end,
      "bad argument #1 to 'live' (a file name as file expected, got nil)")
    assert.has_error(function() p:live { file = "x", every = 1 } end,
      "bad argument #1 to 'live' (unknown option 'every' (the options are file, signal, interval, reset))")
    assert.has_error(function() p:live { file = "x", interval = -1 } end,
      "bad argument #1 to 'live' (interval must be a positive number of seconds)")
    assert.has_error(function() p:live { file = "x", signal = "KILL" } end,
      "cprof: signal 'KILL': not one cprof takes (USR1, USR2 or HUP)")
  end)
end)
