-- A program behaves the same profiled and unprofiled (issue 17): each snippet runs in a child
-- process both ways, and what the program itself prints must be the same.
local S = require "spec.support"
local cprof = require "cprof"
local stats = require "cprof.stats"
local patmatch = require "cprof.patmatch"

-- stdout, stderr and status of `script` run plainly and under cprof.auto (with `env`).
local function both(script, env, args)
  local src = S.tmpname(".lua")
  S.write_file(src, script)
  local function run(flags, e)
    return S.capture(("%s %s %s %s %s"):format(e or "", S.lua, flags, src, args or ""))
  end
  local po, pe, ps = run("", "")
  local qo, qe, qs = run("-l cprof.auto", env or "CPROF_QUIET=1")
  os.remove(src)
  return { out = po, err = pe, status = ps }, { out = qo, err = qe, status = qs }, src
end

-- The start of a script that prints what it gathers with say(...): its values, as text, joined
-- by commas, one line a call (written by io.write(table.concat(out, "\n"), "\n") at the end).
local SAY = [[
local out = {}
local function say(...)
  local t = { n = select("#", ...), ... }
  for i = 1, t.n do t[i] = tostring(t[i]) end
  out[#out + 1] = table.concat(t, ",")
end
]]

describe("a program's own hook (issue 17)", function()
  it("sees exactly the events it sees unprofiled", function()
    local plain, profiled = both([[
local events = {}
local function h(ev) local i = debug.getinfo(2, "n"); events[#events+1] = ev .. ":" .. tostring(i and i.name) end
local function g() return 1 end
debug.sethook(h, "cr"); g(); debug.sethook()
print(table.concat(events, " "))
]])
    assert.are.same(plain, profiled)
    if not S.jit then
      assert.are.equal("return:sethook call:g return:g call:sethook\n", profiled.out)
    end
  end)

  it("gets the same answers, errors and events from debug.gethook and debug.sethook", function()
    local plain, profiled = both(SAY .. [[
local events = {}
local function h(ev) local i = debug.getinfo(2, "n"); events[#events+1] = ev .. ":" .. tostring(i and i.name) end
local function g() return 1 end
debug.sethook(h, "cr", 0)
local a, b, c = debug.gethook()
g()
debug.sethook()
say(a == h, b, c, table.concat(events, " "))
say(select("#", debug.gethook()), debug.gethook())
debug.sethook(h, "l", 5); say(select(2, debug.gethook())); debug.sethook()
debug.sethook(h, "", 3); say(select(2, debug.gethook())); debug.sethook()
for _, args in ipairs({ { h }, { 1, "c" }, { h, "c", 1.5 }, { h, {} } }) do
  say(pcall(function() debug.sethook((table.unpack or unpack)(args)) end))
end
local co = coroutine.create(function() g(); coroutine.yield(); g() end)
events = {}
debug.sethook(co, h, "cr")
coroutine.resume(co)
say(debug.gethook(co) == h, select(2, debug.gethook(co)))
coroutine.resume(co)
debug.sethook(co)
say(select("#", debug.gethook(co)), table.concat(events, " "))
events = {}
debug.sethook(function(ev) events[#events+1] = ev; debug.sethook() end, "c")
g(); g()
say(table.concat(events, " "), debug.gethook())
io.write(table.concat(out, "\n"), "\n")
]])
    assert.are.same(plain, profiled)
    assert.matches("bad argument #2 to 'sethook' %(string expected, got no value%)", profiled.out)
  end)
end)

describe("coroutines that ended (Lua 5.4's own test suite, db.lua and cstack.lua)", function()
  it("keep the hook the program set on them, and a dead chain leaves the main thread's alone", function()
    local plain, profiled = both(SAY .. [[
local lines = 0
local function h(ev) if ev == "line" then lines = lines + 1 end end
local done = coroutine.create(function(x) local a = x; coroutine.yield(a); return a + 1 end)
debug.sethook(done, h, "lcr")
say(coroutine.resume(done, 10))
say(coroutine.resume(done))
say(coroutine.status(done), debug.gethook(done) == h, select(2, debug.gethook(done)))
local bad = coroutine.create(function() coroutine.yield(); error("bad") end)
debug.sethook(bad, h, "c", 7)
coroutine.resume(bad)
say(coroutine.resume(bad))
say(debug.gethook(bad) == h, select(2, debug.gethook(bad)))
if coroutine.close then say(coroutine.close(bad)) end
say(debug.gethook(bad) == h, select(2, debug.gethook(bad)))
local depth = 0
local function nest()
  depth = depth + 1
  if depth == 4 then error("deep", 0) end
  coroutine.wrap(nest)()
end
say(pcall(nest))
say(depth, debug.gethook() == nil, lines > 0)
io.write(table.concat(out, "\n"), "\n")
]])
    assert.are.same(plain, profiled)
    assert.are.equal(0, profiled.status)
    if not S.jit then
      assert.matches("\ndead,true,crl,0\n", profiled.out)
      assert.matches(": deep\n4,true,true\n$", profiled.out)
    end
  end)

  -- A coroutine collected while suspended leaves its stack until an event tells; a new one
  -- born at its address, which the program hooks before it ever runs, must get that hook.
  it("keep the hook the program sets on a new one at a collected one's address", function()
    if S.jit then
      pending("LuaJIT gives no new coroutine a collected one's address here")
      return
    end
    if (os.getenv("LD_PRELOAD") or ""):match("asan") then
      pending("AddressSanitizer holds freed memory back from reuse")
      return
    end
    local plain, profiled = both([[
local lines = 0
local function h() lines = lines + 1 end
local found
for _ = 1, 20 do
  local a = coroutine.create(function() coroutine.yield() end)
  coroutine.resume(a)
  local addr = tostring(a)
  a = nil
  collectgarbage(); collectgarbage()
  local made = {}
  for i = 1, 8 do
    made[i] = coroutine.create(function(x) local y = x + 1; return y end)
    if tostring(made[i]) == addr then found = made[i] break end
  end
  if found then break end
end
if found then
  debug.sethook(found, h, "l")
  print(coroutine.resume(found, 1))
  print(lines, debug.gethook(found) == h)
else
  print("no address was reused")
end
]])
    assert.are.same(plain, profiled)
    assert.are.equal("true\t2\n1\ttrue\n", profiled.out)
  end)
end)

describe("a strict global table (issue 17)", function()
  it("does not stop the dump, and its metamethods never run for cprof", function()
    local path = S.tmpname(".prof")
    local script = [[
local function strict(t)
  return setmetatable(t, {
    __index = function(_, k) error("variable '" .. tostring(k) .. "' is not declared", 2) end,
    __newindex = function(_, k) error("assign to undeclared variable '" .. tostring(k) .. "'", 2) end,
  })
end
strict(arg)
strict(_G)
print("ok", #arg)
]]
    local plain, profiled = both(script, "CPROF_OUT=" .. S.q(path), "a b")
    assert.are.same(plain, profiled)
    assert.are.same({ out = "ok\t2\n", err = "", status = 0 }, profiled)
    local d = cprof.load(path)
    os.remove(path)
    assert.matches("cprof%.auto .*%.lua a b$", d.meta.command)
  end)
end)

describe("a program that deletes every global before it exits", function()
  -- As Lua 5.4.4's test suite (all.lua) does: cprof's code at exit must need none of them.
  local script = [[
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
fib(10)
local G, pcall, select = _G, pcall, select
for name in G.pairs(G) do G[name] = nil end
for i = 1, 3 do pcall(select, 1, i) end
]]

  local function fib_calls(d)
    local n = 0
    for i = 1, d.frames.n do
      if d.frames.name[i] == "fib" then n = n + d.frames.ncalls[i] end
    end
    return n
  end

  it("still gets its dump written, whole", function()
    local path = S.tmpname(".prof")
    local plain, profiled = both(script, "CPROF_OUT=" .. S.q(path))
    assert.are.same(plain, profiled)
    assert.are.same({ out = "", err = "", status = 0 }, profiled)
    local d = cprof.load(path)
    os.remove(path)
    assert.are.equal(177, fib_calls(d))
    assert.matches("cprof%.auto .*%.lua$", d.meta.command)
  end)

  it("still names the C functions it called, by their global names as they were", function()
    local path = S.tmpname(".prof")
    local plain, profiled = both(script, "CPROF_OUT=" .. S.q(path))
    assert.are.same(plain, profiled)
    local d = cprof.load(path)
    os.remove(path)
    local calls = {}
    for i = 1, d.frames.n do
      if d.frames.name[i] == "pcall" or d.frames.name[i] == "select" then
        calls[d.frames.name[i]] = (calls[d.frames.name[i]] or 0) + d.frames.ncalls[i]
      end
    end
    assert.are.same({ pcall = 3, select = 3 }, calls)
  end)

  it("still gets its report printed", function()
    local plain, profiled = both(script, "")
    assert.are.same({ plain.out, plain.status }, { profiled.out, profiled.status })
    assert.matches("\n +177/1 .-:1%(fib%)\n", profiled.err)
  end)

  it("still gets its dump written with CPROF_MEMORY=1 and CPROF_LINES=1", function()
    local path = S.tmpname(".prof")
    local env = "CPROF_LINES=1 CPROF_OUT=" .. S.q(path) .. (S.jit and "" or " CPROF_MEMORY=1")
    local plain, profiled = both(script, env)
    assert.are.same(plain, profiled)
    local d = cprof.load(path)
    os.remove(path)
    assert.are.equal(177, fib_calls(d))
    local st = stats.new(d)
    assert.is_true(st:has_lines())
    assert.are.equal(not S.jit, st:has_memory())
  end)
end)

describe("a program that empties the string and table libraries before it exits", function()
  -- A string's methods come from the program's string table, so cprof must call neither them
  -- nor the program's library tables at exit (issue 28, B.4: gsub lost the dump silently,
  -- find raised an error inside dump.lua).
  local script = [[
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
fib(10)
for _, lib in ipairs({ string, table, math }) do
  for k in pairs(lib) do lib[k] = nil end
end
]]

  it("still gets its dump written and its report printed", function()
    local path = S.tmpname(".prof")
    local plain, profiled = both(script, "CPROF_REPORT=1 CPROF_OUT=" .. S.q(path))
    assert.are.same({ plain.out, plain.status }, { profiled.out, profiled.status })
    assert.matches("\n +177/1 .-:1%(fib%)\n", profiled.err)
    local d = cprof.load(path)
    os.remove(path)
    local n = 0
    for i = 1, d.frames.n do
      if d.frames.name[i] == "fib" then n = n + d.frames.ncalls[i] end
    end
    assert.are.equal(177, n)
  end)
end)

describe("a profiled child (issue 17)", function()
  local script = [[
local lo = 0
while arg[lo - 1] do lo = lo - 1 end
local cmd = {}
for i = lo, 0 do cmd[#cmd + 1] = arg[i] end
if os.getenv("CPROF_SPEC_CHILD") then
  io.write("child\n")
else
  local p = io.popen("CPROF_SPEC_CHILD=1 " .. table.concat(cmd, " ") .. " 2>&1")
  local said = p:read("*a")
  p:close()
  io.write("parent; the child said [", said, "]\n")
end
]]

  it("keeps its stderr, and writes its dump beside its parent's, never over it", function()
    local dir = S.new_dir()
    local out = dir .. "/out.prof"
    local plain, profiled = both(script, "CPROF_OUT=" .. S.q(out))
    assert.are.same(plain, profiled)
    assert.are.equal("parent; the child said [child\n]\n", profiled.out)
    local p = io.popen("ls " .. S.q(dir))
    local files = p:read("*a")
    p:close()
    local child = files:match("out%.prof%.(%d+)\n")
    assert.is_truthy(child, files)
    local parent_dump, child_dump = cprof.load(out), cprof.load(out .. "." .. child)
    S.remove_dir(dir)
    assert.are.equal(tonumber(child), child_dump.meta.pid)
    assert.are_not.equal(parent_dump.meta.pid, child_dump.meta.pid)
    local function has(d, name)
      for i = 1, d.frames.n do if d.frames.name[i] == name then return true end end
      return false
    end
    assert.is_true(has(parent_dump, "io.popen"), "the parent's dump is the parent's")
    assert.is_false(has(child_dump, "io.popen"))
  end)

  it("with %p in CPROF_OUT, each process writes its own file", function()
    local dir = S.new_dir()
    local plain, profiled = both(script, "CPROF_OUT=" .. S.q(dir .. "/p.%p.prof"))
    assert.are.same(plain, profiled)
    local p = io.popen("ls " .. S.q(dir))
    local files = p:read("*a")
    p:close()
    S.remove_dir(dir)
    local _, n = files:gsub("p%.%d+%.prof\n", "")
    assert.are.equal(2, n, files)
  end)
end)

describe("stack limits (issue 17)", function()
  -- The deepest recursion and the most results of table.unpack, as the child measures them.
  local probe = [[
if arg[1] == "hook" then debug.sethook(function() end, "cr") end
local depth = 0
local function rec() depth = depth + 1; rec() end
local ok, err = pcall(rec)
assert(not ok and tostring(err):find("stack overflow"))
local unpack = table.unpack or unpack
local lo, hi = 1, 2000000
while lo < hi do
  local mid = math.floor((lo + hi + 1) / 2)
  if pcall(function() return select("#", unpack({}, 1, mid)) end) then lo = mid else hi = mid - 1 end
end
io.write(depth, " ", lo, "\n")
]]

  local function limits(out)
    local depth, results = out:match("^(%d+) (%d+)\n$")
    return tonumber(depth), tonumber(results)
  end

  it("are those of any program with a call and return hook (docs/SEMANTICS.md)", function()
    local plain, profiled = both(probe)
    local _, hooked = both(probe, nil, "hook")
    local d0, r0 = limits(plain.out)
    local d1, r1 = limits(profiled.out)
    local d2, r2 = limits(hooked.out)
    assert.is_truthy(d0 and d1 and d2, plain.out .. profiled.out .. hooked.out)
    -- A hook needs LUA_MINSTACK (20) free slots, so it costs a few frames of depth and a few
    -- results; cprof's hook costs no more than a hook that does nothing.
    assert.is_true(d1 >= d2 and d1 <= d0 and d0 - d1 <= 20, d0 .. " " .. d1 .. " " .. d2)
    assert.is_true(r1 >= r2 and r1 <= r0 and r0 - r1 <= 4, r0 .. " " .. r1 .. " " .. r2)
  end)
end)

describe("restriction patterns (issue 17, item 8)", function()
  it("take time linear in the name, whatever the repetitions", function()
    local data = S.det_data()
    -- 400 functions with long names that never match, to make backtracking show
    for i = 1, 400 do
      data.entries[#data.entries + 1] = { file = ("src/a/long/path/to/module_%d.lua"):format(i),
        line = i, name = "function_with_a_long_name", what = "Lua", ncalls = 1, pcalls = 1,
        tottime = 0, cumtime = 0, callers = {} }
    end
    local st = stats.new(data, { stream = S.collector() })
    local list, log = st:select(".-.-.-.-.-.-.-.-Q")
    assert.are.same({}, list)
    assert.are.equal(407, log[1].from)
    -- string.find would take hours here; the automaton visits each name once per item
    list = st:select(".-(.-).-.-.-.-.-%(fib%)")
    assert.are.equal(1, #list)
  end)

  it("match exactly what string.find matches (a fixed sample of patterns and names)", function()
    local seed = 17
    local function rand(n) seed = (seed * 1103515245 + 12345) % 2147483648 return seed % n + 1 end
    local atoms = { ".", "a", "b", "%a", "%d", "[ab]", "[^a]", "%.", "x", "%f[%a]", "(", ")", "()" }
    local quants = { "", "", "*", "+", "-", "?" }
    local letters = { "a", "b", "x", ".", "1", " " }
    local checked = 0
    for _ = 1, 3000 do
      local parts, depth = {}, 0
      if rand(5) == 1 then parts[1] = "^" end
      for _ = 1, rand(6) do
        local a = atoms[rand(#atoms)]
        if a == ")" and depth == 0 then a = "a" end
        if a == "(" then depth = depth + 1 elseif a == ")" then depth = depth - 1 end
        if a == "(" or a == ")" or a == "()" or a:find("^%%f") then parts[#parts + 1] = a
        else parts[#parts + 1] = a .. quants[rand(#quants)] end
      end
      for _ = 1, depth do parts[#parts + 1] = ")" end
      if rand(5) == 1 then parts[#parts + 1] = "$" end
      local p = table.concat(parts)
      local auto = patmatch.compile(p)
      for _ = 1, 4 do
        local c = {}
        for i = 1, rand(9) - 1 do c[i] = letters[rand(#letters)] end
        local s = table.concat(c)
        local ok, r = pcall(string.find, s, p)
        if ok then
          checked = checked + 1
          assert(patmatch.find(s, auto) == (r ~= nil), ("%q on %q"):format(p, s))
        end
      end
    end
    assert.is_true(checked > 10000)
  end)

  it("with %b or a back-reference and more repetitions than one are refused, with the reason", function()
    local out = S.collector()
    stats.new(S.det_data(), { stream = out }):print_stats("%b().*.*")
    assert.matches("\n   <Invalid regular expression '%%b%(%)%.%*%.%*' %(%%b or a back%-reference"
      .. " with 2 repetitions could take too long; at most 1%)>\n", out.text())
  end)
end)
