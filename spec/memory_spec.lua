-- cprof.memory: cprof's allocator installed on a running state (docs/MEMORY.md).
--
-- install() changes the allocator of the whole state for good, so every program that installs
-- it runs in a child process (the same interpreter, module paths and sanitizer preload as this
-- run). The C-level tests of the arenas and slabs are tests/test_arena.c (`make ctest`).
local S = require "spec.support"
local jit = S.jit

-- Runs a Lua program in a child process; returns its stdout, stderr and exit status.
local function run(script, opts)
  opts = opts or {}
  local o, e, status = S.run_lua(script, opts.flags, opts.env)
  return o, e, status
end

-- Runs a program that must end normally and print "ok" last; returns its stdout.
local function ok(script, opts)
  local out, err, status = run(script, opts)
  assert(status == 0 and out:match("ok\n$"),
         ("the child failed (status %s):\n--- stdout\n%s\n--- stderr\n%s"):format(status, out, err))
  return out, err
end

-- The prelude of every child program: the module and an exact comparison of the counts.
local prelude = [[
local memory = require "cprof.memory"
local function same_count(where)
  collectgarbage("count")                       -- make the call frames exist first
  local lua_bytes, requested, foreign = memory.bytes()
  local count = collectgarbage("count") * 1024
  assert(lua_bytes == count, ("%s: cprof counts %d, Lua %d"):format(where, lua_bytes, count))
  assert(requested + foreign == lua_bytes, where .. ": parts do not add up")
  assert(memory.check())
end
]]

describe("cprof.memory", function()
  if jit then
    it("refuses to install under LuaJIT, with the reason", function()
      local out = ok([[
local memory = require "cprof.memory"
local okay, err = pcall(memory.install)
assert(not okay and err:find("not supported on LuaJIT", 1, true), err)
assert(memory.installed() == false)
assert(not pcall(memory.stats))
print("ok")
]])
      assert.matches("ok", out)
    end)
    -- Everything else needs the allocator installed: Lua 5.4 only (docs/MEMORY.md says why).
    pending("under LuaJIT: the other specs need install(), which LuaJIT does not support")
    return
  end

  it("installs once, keeps Lua's count exactly while a workload grows and frees", function()
    ok(prelude .. [[
assert(memory.installed() == false)
assert(memory.install() == true)
assert(memory.installed() == true)
local again, why = memory.install()
assert(again == false and why == "already installed")
same_count("just installed")
local keep = {}
for round = 1, 6 do
  for i = 1, 3000 * round do
    keep[#keep + 1] = { i, ("s%d"):format(i), function() return i end }
  end
  same_count("grown " .. round)
  for i = 1, #keep, 2 do keep[i] = nil end
  local k2 = {}
  for _, v in pairs(keep) do k2[#k2 + 1] = v end
  keep = k2
  collectgarbage()
  same_count("freed " .. round)
  local s = string.rep("abc", 100000 * round)   -- a large block, then a huge one
  same_count("large " .. round)
  s = nil
  collectgarbage()
end
keep = nil
collectgarbage()
same_count("end")
print("ok")
]])
  end)

  it("counts tables, closures and strings per type exactly", function()
    ok(prelude .. [[
memory.install()
local N = 1000
local keep_t, keep_f, keep_s = {}, {}, {}
for i = 1, N do keep_t[i], keep_f[i], keep_s[i] = false, false, false end
collectgarbage()
collectgarbage("stop")
local t0, tb0, ta0 = memory.type("table")
local f0, fb0 = memory.type("function")
local u0 = memory.type("upvalue")
local s0, sb0 = memory.type("string")
for i = 1, N do keep_t[i] = {} end
local t1, tb1, ta1 = memory.type("table")
for i = 1, N do keep_f[i] = function() return i end end
local f1, fb1 = memory.type("function")
local u1 = memory.type("upvalue")
for i = 1, N do keep_s[i] = string.rep("x", 41 + i % 200) end  -- long strings: one object each
local s1, sb1 = memory.type("string")
collectgarbage("restart")
assert(t1 - t0 == N, ("tables: %d more, not %d"):format(t1 - t0, N))
assert(ta1 - ta0 == N, "table allocations")
assert((tb1 - tb0) % N == 0 and (tb1 - tb0) // N >= 32, "table bytes: " .. (tb1 - tb0))
assert(f1 - f0 == N, ("closures: %d more, not %d"):format(f1 - f0, N))
assert(u1 - u0 == N, ("upvalues: %d more, not %d"):format(u1 - u0, N))
assert((fb1 - fb0) % N == 0, "closure bytes")
assert(s1 - s0 == N, ("strings: %d more, not %d"):format(s1 - s0, N))
local want = 0
for i = 1, N do want = want + #keep_s[i] end
assert(sb1 - sb0 - want == N * ((sb1 - sb0 - want) // N), "string bytes are header + length + 1")
-- Freed: the counts go back.
keep_t, keep_f = nil, nil
collectgarbage()
local t2 = memory.type("table")
local f2 = memory.type("function")
assert(t2 <= t0 and f2 <= f0, "freed objects are no longer live")
-- The stats table agrees with the per-type reader.
local s = memory.stats()
local seen = {}
for _, row in ipairs(s.types) do seen[row.name] = row end
assert(seen.table.tag == 5 and seen.string.tag == 4 and seen.raw.tag == 0)
assert(seen.table.live > 0 and seen.table.live <= (memory.type("table")))
print("ok")
]])
  end)

  it("frees, after install, all the objects made before it (by the old allocator)", function()
    ok(prelude .. [[
local old = {}
for i = 1, 20000 do old[i] = { i, tostring(i) .. "x", function() return i end } end
local old_str = string.rep("q", 500000)
memory.install()
local _, _, foreign0 = memory.bytes()
assert(foreign0 > 1000000, "the old objects are counted as foreign: " .. foreign0)
same_count("installed over live objects")
old, old_str = nil, nil
collectgarbage()
collectgarbage()
same_count("old objects freed")
local _, _, foreign1 = memory.bytes()
assert(foreign1 < foreign0 / 4, ("most foreign bytes are gone: %d of %d"):format(foreign1, foreign0))
local s = memory.stats()
assert(s.foreign_frees > 40000, "the old allocator freed them: " .. s.foreign_frees)
print("ok")
]])
  end)

  it("moves old blocks that grow into its own memory (reallocs of old blocks)", function()
    ok(prelude .. [[
local t = {}
for i = 1, 1000 do t[i] = i * 3 end              -- the array part: a block of the old allocator
local h = {}
for i = 1, 300 do h["k" .. i] = i end             -- the hash part too
memory.install()
same_count("installed")
local s0 = memory.stats()
for i = 1001, 50000 do t[i] = i * 3 end           -- realloc of the old array block
for i = 301, 5000 do h["k" .. i] = i end          -- a new hash part
same_count("grown")
for i = 1, 50000 do assert(t[i] == i * 3) end
for i = 1, 5000 do assert(h["k" .. i] == i) end
local s1 = memory.stats()
assert(s1.foreign_frees > s0.foreign_frees, "old blocks were given back")
assert(s1.foreign < s0.foreign, "fewer foreign bytes")
-- Shrinking what is left of the old allocator's blocks works too.
for i = 2, 50000 do t[i] = nil end
collectgarbage()
for k in pairs(h) do h[k] = nil end
collectgarbage()
same_count("shrunk")
print("ok")
]])
  end)

  it("makes allocations past the limit fail with 'not enough memory'; the program goes on", function()
    ok(prelude .. [[
memory.install()
assert(memory.limit(nil) == nil)
local lua_bytes = memory.bytes()
assert(memory.limit(lua_bytes + 2 * 2^20) == nil)
local got = 0
local okay, err = pcall(function()
  local t = {}
  for i = 1, 1e8 do t[i] = { i } got = i end
end)
assert(not okay and tostring(err):find("not enough memory", 1, true), tostring(err))
assert(got > 1000, "some allocations succeeded first")
same_count("after the failure")
local s = memory.stats()
assert(s.limit_failures > 0 and s.failures >= s.limit_failures)
assert(s.limit == math.floor(lua_bytes + 2 * 2^20))
-- A string that does not fit, under the limit: refused, nothing leaks.
assert(not pcall(string.rep, "x", 8 * 2^20))
same_count("after a refused string")
-- Lifted: the same work succeeds.
assert(memory.limit(nil) == math.floor(lua_bytes + 2 * 2^20))
local t = {}
for i = 1, 100000 do t[i] = { i } end
assert(#t == 100000)
same_count("after the limit")
local okay2, e2 = pcall(memory.limit, -5)
assert(not okay2 and e2:find("bytes", 1, true))
print("ok")
]])
  end)

  it("goes on after the OS refuses memory, and after install runs out of memory", function()
    ok(prelude .. [[
local core = require "cprof.core"
core.fail_allocations(0)                          -- the heap's descriptor cannot be made
local okay, err = pcall(memory.install)
core.fail_allocations(-1)
assert(not okay and err:find("out of memory", 1, true), tostring(err))
assert(not memory.installed())
assert(memory.install())
same_count("installed")
local function grow()
  local t = {}
  for i = 1, 1e7 do t[i] = { i, tostring(i) } end
end
local fail_after = memory.fail_after
fail_after(0)                                     -- no more mappings nor metadata from here
local okay2, err2 = pcall(grow)                   -- (nothing above this line may allocate)
fail_after(-1)
assert(not okay2 and tostring(err2):find("not enough memory", 1, true), tostring(err2))
collectgarbage()
same_count("after the OS refused")
assert(memory.stats().failures > 0)
local t = {}
for i = 1, 100000 do t[i] = { i } end
same_count("and it goes on")
print("ok")
]])
  end)

  it("reports in Akaros's layouts", function()
    local out = ok(prelude .. [[
memory.install()
local keep = {}
for i = 1, 5000 do keep[i] = { tostring(i) } end
local big = string.rep("z", 100000)
local buf = {}
local stream = { write = function(self, ...) for _, s in ipairs { ... } do buf[#buf + 1] = s end return self end }
memory.report(stream)
io.write(table.concat(buf))
local s = memory.stats()
for _, k in ipairs { "lua_bytes", "requested", "foreign", "held", "footprint", "mapped",
                     "peak_mapped", "metadata", "live", "allocs", "failures" } do
  assert(math.type(s[k]) == "integer", k)
end
assert(s.held >= s.requested and s.footprint >= s.held and s.mapped >= s.footprint)
local found
for _, c in ipairs(s.caches) do
  if c.name == "table_56" then found = c end
  assert(c.total == c.objects * c.objsize and c.alloc == c.live * c.objsize, c.name)
  assert(c.objects >= c.live + c.magazine, c.name)
end
assert(found and found.type == "table" and found.live >= 5000)
assert(#s.arenas == 2 and s.arenas[1].name == "chunks" and s.arenas[2].source == "chunks")
print("ok")
]])
    assert.matches("Arena/Slab Name               :Typ: Objsize:      Total Amt:      Alloc Amt: Allocs Ever\n", out, 1, true)
    assert.matches(("-"):rep(88) .. "\n", out, 1, true)
    assert.matches("\nchunks                        : A : 2097152:", out, 1, true)
    assert.matches("\n    pages                     : A :    4096:", out, 1, true)
    assert.matches("\n        table_56              : S :      56:", out, 1, true)
    assert.matches("\n        string_large          : L :    4096:", out, 1, true)
    assert.matches("Total Memory : +%d+\nUsed Memory  : +%d+\nFree Memory  : +%d+\n", out)
    assert.matches("Arena: pages\n--------------\n\tquantum: 4096, qcache_max: 16384\n\tsource: chunks\n", out, 1, true)
    assert.matches("\t\tQuantum caches: %d+ segs of %d+ bytes held, allocs %d+, frees %d+\n", out)
    assert.matches("Arena: chunks\n--------------\n\tquantum: 2097152, qcache_max: 0\n", out, 1, true)
    assert.matches("\nKmem_cache: table_56\n---------------------\nSource: pages\nObjsize (incl align): 56\n", out, 1, true)
    assert.matches("Nr unallocated in slab layer: %d+\nNr allocated from slab layer: %d+\n", out)
    assert.matches("\ntable +%d+ +%d+ +%d+ +%d+\n", out)
    assert.matches("held in blocks +%d+ +%+%d+%.%d%%", out)
  end)

  it("traces the live objects of one cache with their Lua stacks", function()
    local out = ok(prelude .. [[
memory.install()
local function make_node(i) return { i } end
local line = debug.getinfo(make_node, "S").linedefined
assert(not pcall(memory.trace, "start", "no_such_cache"))
memory.trace("start", "table_56")
assert(not pcall(memory.trace, "start", "string_32"), "one cache at a time")
local kept = {}
for i = 1, 200 do kept[i] = make_node(i) end
for i = 1, 500 do local _ = make_node(i) end
collectgarbage()
memory.trace("stop", "table_56")
local d = memory.trace("data")
assert(d.cache == "table_56" and d.on == false and d.stacks == true and d.dropped == 0)
local in_make = 0
for _, site in ipairs(d.sites) do
  if site.frames[1].line == line and site.frames[1].defined == line then in_make = in_make + site.live end
end
assert(in_make == 200, "the 200 kept nodes are live, from make_node: " .. in_make)
local text = memory.trace("text", "table_56")
assert(text:find("Dumping trace for kmem_cache table_56 (stopped)", 1, true))
assert(memory.trace("print", "table_56") == nil, "print writes the text and returns nothing")
memory.trace("reset", "table_56")
assert(memory.trace("data") == nil)
-- A cache of memory that is no object: counted, no stacks.
memory.trace("start", "raw_64")
local grow = {}
for i = 1, 8 do grow[i] = i end
memory.trace("stop", "raw_64")
assert(memory.trace("data").stacks == false)
memory.trace("reset", "raw_64")
same_count("after tracing")
print("line", line)
print("ok")
]])
    local line = out:match("line\t(%d+)\n")
    assert.matches("Live: 200 objects, %d+ bytes", out)
    assert.matches("#1 [^\n]*:" .. line .. " %(function at line " .. line .. "%)", out)
  end)

  it("refuses to uninstall, and says why", function()
    ok([[
local memory = require "cprof.memory"
memory.install()
local okay, err = pcall(memory.uninstall)
assert(not okay and err:find("not possible", 1, true))
assert(memory.installed())
print("ok")
]])
  end)

  it("is installed by cprof.auto when CPROF_MEMORY=1, before the script runs", function()
    local out, err = ok([[
local memory = require "cprof.memory"
assert(memory.installed(), "installed by cprof.auto")
local _, _, foreign = memory.bytes()
local t = {}
for i = 1, 1000 do t[i] = {} end
print("ok")
]], { env = "CPROF_MEMORY=1", flags = "-l cprof.auto" })
    assert.matches("function calls", err)
    local out2 = ok([[
print(require("cprof.memory").installed() and "installed" or "not installed")
print("ok")
]], { flags = "-l cprof.auto" })
    assert.matches("not installed", out2)
  end)
end)
