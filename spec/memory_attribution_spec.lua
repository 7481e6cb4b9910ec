-- Memory charged to functions and call contexts, with cprof's allocator installed. Each case runs
-- in a child process: installing the allocator is for the rest of a state's life.
local lua = "lua5.4"

local function run(script)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(script)
  f:close()
  local p = assert(io.popen(lua .. " " .. path .. " 2>&1"))
  local out = p:read("*a")
  p:close()
  os.remove(path)
  return out
end

local PRELUDE = [[
local cprof = require "cprof"
cprof.memory.install()
local function row(st, name)
  for _, e in ipairs(st.entries) do if e.name == name then return e end end
end
]]

describe("memory attribution", function()
  if rawget(_G, "jit") then
    it("needs Lua 5.4's allocator hooks", function() pending("cprof.memory is not available on LuaJIT") end)
    return
  end

  it("charges each allocation to the running function, and its free to the allocator", function()
    local out = run(PRELUDE .. [[
local keep = {}
local function make(n) for i = 1, n do keep[i] = setmetatable({}, nil) end end
local function churn(n) for i = 1, n do local t = {} end end
-- The collector is stopped while they run: a cycle inside them would also move Lua's own stack
-- (Lua 5.4.7 shrinks it in a cycle), a block of no table charged to whichever ran.
local function root()
  collectgarbage("stop")
  make(100) churn(1000)
  collectgarbage("restart")
  collectgarbage() collectgarbage()
end
for i = 1, 100 do keep[i] = false end  -- the array part exists before profiling
local p = cprof.Profile()
p:runcall(root)
local st = p:getstats()
local m, c = row(st, "make"), row(st, "churn")
print("make", m.alloc_count, m.alloc_bytes, m.free_count, m.live_bytes, m.min_size, m.max_size)
print("churn", c.alloc_count, c.alloc_bytes, c.free_count, c.live_bytes)
local d, tables = p:snapshot(), {}
for k = 1, d.nodes.n do
  local f = d.nodes.frame[k]
  local name = d.frames.name[f]
  tables[name] = (tables[name] or 0) + d.nodes.table_allocs[k]
end
print("tables", tables.make, tables.churn)
print("meta", tostring(p:snapshot().meta.memory))
]])
    local mc, mb, mf, ml, mn, mx = out:match("make\t(%d+)\t(%d+)\t(%d+)\t(%d+)\t(%d+)\t(%d+)")
    assert.truthy(mc, out)
    -- 100 empty tables of one size, kept alive
    assert.are.equal("100", mc)
    assert.are.equal("0", mf)
    assert.are.equal(mb, ml)
    assert.are.equal(mn, mx)
    assert.are.equal(tonumber(mn) * 100, tonumber(mb))
    -- 1000 tables made and collected: all freed, none live, charged to churn
    local cc, cb, cf, cl = out:match("churn\t(%d+)\t(%d+)\t(%d+)\t(%d+)")
    assert.are.same({ "1000", "1000", "0" }, { cc, cf, cl })
    assert.are.equal(tonumber(mn) * 1000, tonumber(cb))
    assert.matches("meta\ttrue", out)
    -- every one of them a table
    assert.matches("tables\t100\t1000\n", out)
  end)

  it("keeps node numbers through a dump", function()
    local out = run(PRELUDE .. [[
local keep = {}
local function a() for i = 1, 10 do keep[#keep + 1] = {} end end
local function b() a() end
local p = cprof.Profile()
p:runcall(function() a() b() end)
local d = p:snapshot()
local path = os.tmpname()
require("cprof.core").write_dump(path, d)
local r = require("cprof.core").read_dump(path)
os.remove(path)
local s1, s2, n = 0, 0, 0
for i = 1, d.nodes.n do s1 = s1 + d.nodes.alloc_bytes[i] end
for i = 1, r.nodes.n do s2 = s2 + r.nodes.alloc_bytes[i]; if r.nodes.alloc_count[i] > 0 then n = n + 1 end end
print("bytes", s1, s2, "nodes", n)
]])
    local s1, s2, n = out:match("bytes\t(%d+)\t(%d+)\tnodes\t(%d+)")
    assert.truthy(s1, out)
    assert.are.equal(s1, s2)
    assert.is_true(tonumber(s1) > 0)
    assert.are.equal("2", n, "a under the root and a under b")
  end)

  it("charges nothing when the allocator is not installed", function()
    local out = run([[
local cprof = require "cprof"
local p = cprof.Profile()
p:runcall(function() local t = {} end)
print(p:getstats().entries[1].alloc_count, p:snapshot().nodes.alloc_count, p:snapshot().meta.memory)
]])
    assert.matches("^nil\tnil\tnil", out)
  end)

  it("charges no function for moving a block born under Lua's allocator, before the install", function()
    -- The move of `old`'s array (made before install: the old allocator's block) continues no
    -- charged block, though the free just before it (the last growth of mine's array) was
    -- charged: only a realloc's own free may decide its move's charge.
    local out = run([[
old = {1}
]] .. PRELUDE .. [[
local function mine() local t = {} for i = 1, 40 do t[i] = i end end
local function grow() old[2] = 2 end
local function root() collectgarbage("stop") mine() grow() collectgarbage("restart") end
local p = cprof.Profile()
p:runcall(root)
local st = p:getstats()
local m, g = row(st, "mine"), row(st, "grow")
print("mine", m.alloc_count, m.free_count, m.alloc_count - m.free_count)
print("grow", g.alloc_count, g.free_count, g.alloc_bytes)
]])
    -- t's table and its array's growths 1, 2, 4, 8, 16, 32, 64 elements; every growth frees
    -- the array before it: 8 allocations, 6 frees, the table and its last array live
    assert.matches("mine\t8\t6\t2\n", out)
    assert.matches("grow\t0\t0\t0\n", out)
  end)
end)
