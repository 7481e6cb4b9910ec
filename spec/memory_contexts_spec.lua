-- Memory by allocation context: leaks, lifetimes and Lua types per call-tree node, and
-- cprof-stats --leaks, --memory --stacks N and --memory-types. Each program runs in a child
-- process (lua5.4: installing the allocator is for the rest of a state's life).
local S = require "spec.support"

local ROOT = S.ROOT
local q = S.q

local PRELUDE = [[
local cprof = require "cprof"
cprof.memory.install()
]]

-- Runs `script` under lua5.4 with this checkout's modules; returns its stdout (asserting it ran).
local function run(script)
  local env = assert(S.lua54_env(ROOT))
  local src = S.tmpname(".lua")
  S.write_file(src, PRELUDE .. script)
  local out, err, status = S.capture(env .. "lua5.4 " .. q(src))
  os.remove(src)
  assert.are.equal(0, status, err)
  return out
end

local function cli(args)
  return S.capture(assert(S.lua54_env(ROOT)) .. "lua5.4 " .. q(ROOT .. "/bin/cprof-stats") .. " " .. args)
end

-- A cache keeps 10,000 closures made in leak(); churn() makes as many and keeps none.
local LEAK = [[
local cache
local function leak()
  cache = {}
  for i = 1, 10000 do cache[i] = function() return i end end
end
local function churn()
  local n = 0
  for i = 1, 10000 do local f = function() return i end n = n + f() end
  return n
end
local p = cprof.Profile { timer = "counter" }
-- The collector waits for the end: a cycle inside leak() or churn() would also move Lua's own
-- stack (Lua 5.4.7 shrinks it in a cycle), a raw block charged to whichever ran.
collectgarbage("stop")
p:enable()
leak()
churn()
collectgarbage("restart")
collectgarbage()
p:disable()
p:dump_stats(arg[1])
]]

describe("memory by allocation context", function()
  if S.jit then
    it("needs Lua 5.4's allocator", function() pending("cprof.memory is not available on LuaJIT") end)
    return
  end

  local dump
  setup(function()
    dump = S.tmpname(".prof")
    local src = S.tmpname(".lua")
    S.write_file(src, PRELUDE .. LEAK)
    local _, err, status = S.capture(assert(S.lua54_env(ROOT)) .. "lua5.4 " .. q(src) .. " " .. q(dump))
    os.remove(src)
    assert.are.equal(0, status, err)
  end)
  teardown(function() os.remove(dump) end)

  it("--leaks shows leak alone, with exactly its 10,000 live closures", function()
    local out, err, status = cli(q(dump) .. " --leaks")
    assert.are.equal(0, status, err)
    local contexts = {}
    for line in out:gmatch("[^\n]+") do
      local name = line:match("^      [^<%s].-%((.-)%)$")
      if name then contexts[#contexts + 1] = name end
    end
    assert.are.same({ "leak" }, contexts)
    -- 10,000 closures and their 10,000 upvalues, the cache table and its array
    assert.matches("live: function 10000, upvalue 10000, raw 1, table 1\n", out, 1, true)
    local blocks, bytes = out:match("(%d+) live blocks +(%d+) live bytes")
    assert.are.equal("20002", blocks)
    local d = require("cprof").load(dump)
    local N, F = d.nodes, d.frames
    for k = 1, N.n do
      local name = F.name[N.frame[k]]
      if name == "leak" then
        assert.are.equal(tonumber(bytes), N.alloc_bytes[k] - N.free_bytes[k])
        assert.are.equal(10000, N.function_allocs[k] - N.function_frees[k])
      elseif name == "churn" then
        assert.are.equal(20000, N.alloc_count[k])
        assert.are.equal(N.alloc_count[k], N.free_count[k])
        assert.are.equal(N.alloc_bytes[k], N.free_bytes[k])
      end
    end
    -- the collector's growth of Lua's own tables is no object of the program's
    assert.matches("and 1 context holding only raw memory", out, 1, true)
  end)

  it("--memory --stacks N prints the contexts with the most bytes, as stacks", function()
    local out, err, status = cli(q(dump) .. " --memory --stacks 2")
    assert.are.equal(0, status, err)
    assert.matches("Allocation contexts of .-: 2 of 3, by allocated bytes", out)
    local first = out:find("(leak)", 1, true)
    local second = out:find("(churn)", 1, true)
    assert.truthy(first and second and first < second, out)
    assert.matches("    20000       800000     20000         0            0       40       40\n"
      .. "      allocated: function 10000, upvalue 10000\n", out, 1, true)
    local live = cli(q(dump) .. " --memory --stacks 1 --sort live")
    assert.matches("1 of 3, by live bytes", live, 1, true)
    assert.matches("(leak)", live, 1, true)
    assert.falsy(live:find("(churn)", 1, true))
  end)

  it("--memory-types sums the contexts of each function per Lua type", function()
    local out, err, status = cli(q(dump) .. " --memory-types churn")
    assert.are.equal(0, status, err)
    assert.matches("    20000     20000         0  (all)     ", out, 1, true)
    assert.matches("    10000     10000         0  function\n    10000     10000         0  upvalue\n",
      out, 1, true)
  end)

  it("refuses what does not go together", function()
    local _, err, status = cli(q(dump) .. " --stacks 3")
    assert.are.equal(2, status)
    assert.matches("option --stacks goes with --memory", err, 1, true)
    _, err, status = cli(q(dump) .. " --memory --stacks 0")
    assert.are.equal(2, status)
    assert.matches("option --stacks: '0' is not a number of at least 1", err, 1, true)
    _, err, status = cli(q(dump) .. " --leaks --tree")
    assert.are.equal(2, status)
    assert.matches("do not go together", err, 1, true)
    _, err, status = cli(q(dump) .. " --memory --stacks 2 --sort calls")
    assert.are.equal(2, status)
    assert.matches("with --stacks, alloc or live", err, 1, true)
  end)

  it("a dump without the lifetime columns reads, and says what it lacks", function()
    local d = require("cprof").load(dump)
    for _, c in ipairs({ "life_total", "life_min", "life_max", "alloc_time", "free_time" }) do
      d.nodes[c] = nil
    end
    for _, t in ipairs({ "raw", "string", "table", "function", "userdata", "thread", "upvalue",
                         "proto", "other" }) do
      d.nodes[t .. "_allocs"], d.nodes[t .. "_frees"] = nil, nil
    end
    local old = S.tmpname(".prof")
    require("cprof.dump").write(old, d)
    local back = require("cprof").load(old)
    assert.is_nil(back.nodes.life_total)
    assert.is_table(back.nodes.alloc_count)
    local out, _, status = cli(q(old) .. " --leaks")
    assert.are.equal(0, status)
    assert.matches("no counts per Lua type", out, 1, true)
    local _, err
    _, err, status = cli(q(old) .. " --memory-types")
    assert.are.equal(2, status)
    assert.matches("this dump has no counts per Lua type", err, 1, true)
    -- some of the columns without the others: the writer refuses
    d.nodes.life_total = back.nodes.alloc_count
    assert.has_error(function() require("cprof.dump").write(old, d) end)
    os.remove(old)
  end)

  it("gives exact lifetimes with the counter timer", function()
    -- Each call of tick() is two events, and the clock moves one tick per event: the array of
    -- t lives across one call (2 ticks) at size 1, across two (4 ticks) at size 2.
    local out = run([[
local function tick() end
local function grow()
  local t = {}
  t[1] = 1
  tick()
  t[2] = 2
  tick() tick()
  t[3] = 3
  return t
end
local p = cprof.Profile { timer = "counter" }
p:enable()
local keep = grow()
p:disable()
local d = p:snapshot()
local N, F = d.nodes, d.frames
for k = 1, N.n do
  if F.name[N.frame[k] ] == "grow" then
    print(N.alloc_count[k], N.free_count[k], N.life_total[k], N.life_min[k], N.life_max[k],
          N.free_time[k] - N.alloc_time[k], N.raw_allocs[k], N.raw_frees[k], N.table_allocs[k])
  end
end
assert(keep)
]])
    assert.are.equal("4\t2\t6.0\t2.0\t4.0\t6.0\t3\t2\t1\n", out)
  end)

  it("counts per Lua type that add up to the allocator's counts", function()
    local out = run([[
local memory = cprof.memory
local TYPES = { "string", "table", "function", "thread", "upvalue", "proto" }
local before, after = {}, {}
for _, t in ipairs(TYPES) do before[t], after[t] = 0, 0 end
local keep
local function work()
  keep = {}
  for i = 1, 200 do
    keep[#keep + 1] = { i, tostring(i) .. "x", function() return i end }
    coroutine.wrap(function() return i end)()
  end
  load("return 1")()
end
local function measure()
  for _, t in ipairs(TYPES) do before[t] = select(3, memory.type(t)) end
  work()
  for _, t in ipairs(TYPES) do after[t] = select(3, memory.type(t)) end
end
local p = cprof.Profile { timer = "counter" }
collectgarbage("stop")
p:enable()
measure()
p:disable()
local N = p:snapshot().nodes
for _, t in ipairs(TYPES) do
  local sum = 0
  for k = 1, N.n do sum = sum + N[t .. "_allocs"][k] end
  print(t, after[t] - before[t], sum)
end
]])
    assert.are.equal(table.concat({
      "string\t400\t400", "table\t202\t202", "function\t601\t601", "thread\t200\t200",
      "upvalue\t201\t201", "proto\t1\t1", "" }, "\n"), out)
  end)

  it("--summary prints the totals and the allocator's state without the tree", function()
    local d = require("cprof.core").read_dump(dump, "summary")
    assert.is_nil(d.nodes)
    assert.is_nil(d.frames)
    assert.is_table(d.mem_types)
    local full = require("cprof").load(dump)
    local N, allocs, bytes, frees = full.nodes, 0, 0, 0
    for k = 1, N.n do
      allocs, bytes, frees = allocs + N.alloc_count[k], bytes + N.alloc_bytes[k], frees + N.free_count[k]
    end
    assert.are.equal(allocs, d.meta.memory_allocs)
    local out, err, status = cli("--summary " .. q(dump))
    assert.are.equal(0, status, err)
    assert.matches(("charged to contexts: %d allocations of %d bytes, %d frees"):format(allocs, bytes, frees),
      out, 1, true)
    assert.matches("\nLua type +live +live bytes", out)
    assert.matches("\nfunction +10002 ", out)
    assert.matches("Arena/Slab Name", out, 1, true)
  end)

  it("--memory-series shows memory growing from dump to dump", function()
    local dir = S.tmpname("")
    local files = {}
    for i = 1, 3 do files[i] = dir .. "-" .. i .. ".prof" end
    run(([[
local keep = {}
local function grow() for j = 1, 2000 do keep[#keep + 1] = { j } end end
local p = cprof.Profile()
p:enable()
for i = 1, 3 do
  grow()
  collectgarbage()
  p:dump_stats(%q .. "-" .. i .. ".prof")
end
p:disable()
]]):format(dir))
    local args = q(files[1]) .. " " .. q(files[2]) .. " " .. q(files[3])
    local out, err, status = cli("--memory-series " .. args)
    assert.are.equal(0, status, err)
    local lua_bytes, live = {}, {}
    for i, a, b in out:gmatch("\n +(%d) +(%d+) +%d+ +%d+ +%d+ +%d+ +(%d+)") do
      lua_bytes[tonumber(i)], live[tonumber(i)] = tonumber(a), tonumber(b)
    end
    assert.are.equal(3, #lua_bytes, out)
    assert.is_true(lua_bytes[1] < lua_bytes[2] and lua_bytes[2] < lua_bytes[3], out)
    assert.is_true(live[1] < live[2] and live[2] < live[3], out)
    assert.matches("\n +3 .* %+[%d]+  " .. files[3]:gsub("%p", "%%%0"), out)
    local svg = cli("--memory-series " .. args .. " --export svg")
    assert.matches("^<svg ", svg)
    assert.are.equal(4, select(2, svg:gsub("<polyline ", "")))
    local _, e2, st2 = cli("--memory-series " .. args .. " --export folded")
    assert.are.equal(2, st2)
    assert.matches("--memory-series draws --export svg or html only", e2, 1, true)
    for _, f in ipairs(files) do os.remove(f) end
  end)

  it("never harms the program when attribution's memory runs out", function()
    -- Each run fails cprof's n-th allocation: the side tables of slabs, the map of large
    -- blocks, the records of nodes; the program's result never changes, and what could not be
    -- charged is counted.
    local out = run([[
local core = require "cprof.core"
local function work()
  local t, s = {}, 0
  for i = 1, 100 do
    t[i] = { i, string.rep("x", 5000 + i), function() return i end }
    s = s + #t[i][2]
  end
  return s
end
local expected = work()
local lost, complete = 0, 0
for n = 0, 250 do
  local p = cprof.Profile()
  core.fail_allocations(n)
  local ok, res = pcall(p.runcall, p, work)
  core.fail_allocations(-1)
  if ok then
    assert(res == expected, "the program's result changed")
    local meta = p:snapshot().meta
    if meta.memory_lost > 0 then lost = lost + 1 end
    if meta.memory_lost == 0 and (meta.dropped or 0) == 0 then complete = complete + 1 end
  end
end
print(lost > 0, complete > 0)
]])
    assert.are.equal("true\ttrue\n", out)
  end)
end)
