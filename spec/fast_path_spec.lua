-- The hook's fast path (docs/SEMANTICS.md, "The fast path"): which path a profile took, the
-- self-check that sends a profile to the public path when Lua's private layout is not what cprof
-- was built for, and keys checked against a dead function's address taken by a new one.
local cprof = require "cprof"
local core = require "cprof.core"
local stats = require "cprof.stats"
local S = require "spec.support"

local collectgarbage, load, string, tostring = collectgarbage, load, string, tostring

-- CPROF_FAST_PATH=0 turns it off for every profile that does not say (make spec-public).
local env = os.getenv("CPROF_FAST_PATH")
local default_off = env == "0" or env == "off" or env == "false" or env == "no"

local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end

local function profile(opts, f, ...)
  opts.timer = "counter"
  local p = cprof.Profile(opts)
  p:runcall(f, ...)
  return p:getstats(), p
end

describe("the fast path", function()
  after_each(function() core.skew_layout(false) end)

  it("is on for a Lua release cprof knows, unless turned off", function()
    local st = profile({}, fib, 10)
    if S.jit then
      assert.are.same({ "unavailable", "LuaJIT: no fast path" }, { st.fast_path, st.fast_path_why })
    elseif default_off then
      assert.are.equal("off", st.fast_path)
    else
      assert.are.equal("on", st.fast_path)
      assert.is_nil(st.fast_path_why)
    end
    assert.are.equal(st.fast_path, st.meta.fast_path)
    local off = profile({ fast_path = false }, fib, 10)
    assert.are.equal("off", off.fast_path)
    -- both paths count the same
    assert.are.same({ 177, 1 }, { S.find(st, "fib").ncalls, S.find(st, "fib").pcalls })
    assert.are.same({ 177, 1 }, { S.find(off, "fib").ncalls, S.find(off, "fib").pcalls })
  end)

  it("falls back to the public path when its self-check disagrees, and says why", function()
    if S.jit then
      pending("LuaJIT has no fast path")
      return
    end
    core.skew_layout(true)
    local st, p = profile({ fast_path = true }, fib, 20)
    core.skew_layout(false)
    assert.are.equal("fallback", st.fast_path)
    assert.matches("prototype", st.fast_path_why)
    assert.are.same({ 21891, 1 }, { S.find(st, "fib").ncalls, S.find(st, "fib").pcalls })
    local data = p:snapshot()
    assert.are.same({ "fallback", st.fast_path_why }, { data.meta.fast_path, data.meta.fast_path_why })
    -- the report says so in its header
    local c = S.collector()
    local report = stats.new(p:report_data())
    report.stream = c
    report:print_stats()
    local out = c.text()
    assert.matches("cprof: the fast path was not used: a Lua function's prototype", out, 1, true)
    -- and the next enable() checks again
    p:enable()
    p:disable()
    assert.are.equal("on", p:getstats().fast_path)
  end)

  it("is exact when a function dies and another is born at its address", function()
    -- Each round loads a chunk of its own whose function is defined on line 1, calls it i
    -- times and lets it be collected: the next round's prototype, and the chunk name of every
    -- other one (longer than Lua's short strings), most likely take the dead one's address.
    local N = 60
    local st = profile({}, function()
      for i = 1, N do
        local name = "=reused " .. i .. (i % 2 == 0 and string.rep(".", 50) or "")
        local f = load("return function() return " .. i .. " end", name)()
        for _ = 1, i do f() end
        f = nil
        collectgarbage()
        collectgarbage()
      end
    end)
    local seen = 0
    for _, e in ipairs(st.entries) do
      local i = tonumber(e.file:match("^reused (%d+)"))
      if i and e.what == "Lua" then
        seen = seen + 1
        assert.are.same({ i, 1, i }, { tonumber(i), e.line, e.ncalls })
      end
    end
    assert.are.equal(N, seen)
    -- LuaJIT's keys are its chunk names, which are interned and kept alive: never reused; and
    -- AddressSanitizer holds freed memory back from reuse.
    if not S.jit and not (os.getenv("LD_PRELOAD") or ""):match("asan") then
      assert.is_true(st.core.reused_keys > 0, "no address was reused: the spec proved nothing")
    end
  end)

  it("shows an unnamed chunk by Lua's short source, its text kept once", function()
    local src = "local t = {}\n" .. string.rep("t[#t + 1] = function() return 1 end\n", 200) ..
                "for i = 1, #t do t[i]() end\n"
    local st = profile({}, function() load(src)() end)
    local n = 0
    for _, e in ipairs(st.entries) do
      if e.file == '[string "local t = {}..."]' and e.what == "Lua" then
        n = n + 1
        assert.are.same({ 1, e.line - 1 }, { e.ncalls, e.line - 1 })
      end
    end
    assert.are.equal(200, n)
    -- the 8 KB source is held once, not once per function
    assert.is_true(st.core.function_bytes < 200 * 8192 / 4, tostring(st.core.function_bytes))
  end)

  it("takes a function loaded from a stripped dump for a Lua function, as the public path does", function()
    -- Its prototype has no chunk name (Lua's test suite loads its files so); the fast path took
    -- it for a C function, a root of the tree whose callers' time no path carried.
    if S.jit then
      pending("LuaJIT's stripped dumps drop the lines that tell a chunk's functions apart")
      return
    end
    local code = "local function g(x) return x + 1 end\nlocal s = 0\n" ..
                 "for i = 1, 50 do s = s + g(i) end\nreturn s"
    local stripped = load(string.dump(load(code, "=x"), true))
    local function rows(fast)
      local st = profile({ fast_path = fast }, function() for _ = 1, 3 do stripped() end end)
      local out = {}
      for _, e in ipairs(st.entries) do
        if e.file == "?" then out[#out + 1] = { e.what, e.line, e.ncalls, e.name } end
      end
      table.sort(out, function(a, b) return a[2] < b[2] end)
      return out
    end
    local want = { { "main", 0, 3, "<main chunk>" }, { "Lua", 1, 150, "<anon>" } }
    assert.are.same(want, rows(false))
    assert.are.same(want, rows(nil))
  end)

  it("keeps a call of a stripped function under its caller in the call tree", function()
    -- A key the function table cannot vouch for (a stripped function's) is not cached; the
    -- call was made a root of the tree as well, so its caller's cumtime exceeded its subtree.
    if S.jit then
      pending("LuaJIT's stripped dumps keep their chunk names: nothing here is stripped of one")
      return
    end
    local inner = string.dump(load("local s = 0 for i = 1, 200 do s = s + i end return s", "=in"), true)
    local outer = load(string.dump(load("local f = ... for i = 1, 5 do f() end", "=out"), true))
    local function main() for _ = 1, 3 do outer(load(inner)) end end
    local function paths(fast)
      local p = cprof.Profile({ timer = "counter", fast_path = fast })
      p:runcall(main)
      local d = p:snapshot()
      local F, N, out = d.frames, d.nodes, {}
      local function path(k)
        local name = F.file[N.frame[k]] .. ":" .. F.name[N.frame[k]]
        return N.parent[k] == 0 and name or path(N.parent[k]) .. " > " .. name
      end
      for k = 1, N.n do
        if F.file[N.frame[k]] == "?" then out[#out + 1] = path(k) .. " " .. N.ncalls[k] end
      end
      table.sort(out)
      return out
    end
    local want = paths(false)
    assert.are.equal(2, #want)
    assert.matches(" > %?:<main chunk> > %?:<main chunk> 15$", want[2])
    assert.are.same(want, paths(nil))
  end)
end)
