-- cprof's own C memory (getstats().core, in bytes) grows linearly with what a profile holds: per
-- distinct function, per caller->callee edge, per live suspended coroutine; and not at all with
-- coroutines that finished. Read while the profile runs, when its stacks exist.
local cprof = require "cprof"

-- Locals: under busted a global is looked up through its environment's functions, which the
-- profile would record (recursive ones, a node per level of their recursion).
local coroutine, load, string, table, ipairs = coroutine, load, string, table, ipairs

-- The core counters read inside a profiled run of f(n).
local function core_after(f, n)
  local p = cprof.Profile { timer = "counter" }
  local core
  p:runcall(function() f(n) core = p:getstats().core end)
  return core
end

-- n functions of one chunk, one per line: n distinct functions.
local function functions(n)
  local src = {}
  for i = 1, n do src[i] = "function(f) if f then f() end return " .. i .. " end," end
  return load("return {\n" .. table.concat(src, "\n") .. "\n}")()
end

local function call_each(n) for _, f in ipairs(functions(n)) do f() end end

local function leaf() return 1 end
local function each_calls_leaf(n) for _, f in ipairs(functions(n)) do f(leaf) end end

local function body() coroutine.yield() end
local live = {}
local function suspend(n)
  for i = 1, n do
    live[i] = coroutine.create(body)
    coroutine.resume(live[i])
  end
end

local function finish(n)
  for _ = 1, n do coroutine.resume(coroutine.create(leaf)) end
end

-- How `field` grows from n to 4n to 16n: the second step over the first (4 when linear: what
-- does not grow with n cancels out), the bytes per unit added, and the counters at n and 4n.
local function growth(f, field, n)
  local a, b, c = core_after(f, n), core_after(f, 4 * n), core_after(f, 16 * n)
  return (c[field] - b[field]) / (b[field] - a[field]), (c[field] - a[field]) / (15 * n), a, b
end

describe("cprof's own memory", function()
  it("grows linearly with distinct functions", function()
    local ratio, per, a, b = growth(call_each, "function_bytes", 1000)
    assert.are.equal(3000, b.functions - a.functions)
    assert.is_true(ratio > 3.5 and ratio < 4.5, "4x the functions: " .. ratio .. "x the growth")
    assert.is_true(per < 512, per .. " bytes per function")
  end)

  it("grows linearly with edges", function()
    -- 900: two edges and two nodes per callee stay well below a power of two (1 800, 7 200 and
    -- 28 800 of 2 048, 8 192 and 32 768), where the tables double
    local ratio, per, a, b = growth(each_calls_leaf, "tree_bytes", 900)
    assert.is_true(b.edges - a.edges == 3 * 2 * 900, "edges: " .. a.edges .. ", " .. b.edges)
    assert.is_true(ratio > 3.5 and ratio < 4.5, "4x the edges: " .. ratio .. "x the growth")
    assert.is_true(per < 2 * 512, per .. " bytes per callee (two edges, two nodes)")
  end)

  it("holds at most 512 bytes per live suspended coroutine", function()
    local ratio, per, a, b = growth(suspend, "stack_bytes", 1000)
    assert.are.equal(3000, b.stacks - a.stacks)
    assert.is_true(ratio > 3.5 and ratio < 4.5, "4x the coroutines: " .. ratio .. "x the growth")
    assert.is_true(per <= 512, per .. " bytes per suspended coroutine")
    live = {}
  end)

  it("keeps nothing of coroutines that finished", function()
    local a, b = core_after(finish, 1000), core_after(finish, 10000)
    assert.are.equal(a.stack_bytes, b.stack_bytes)
    assert.are.equal(a.stacks, b.stacks)
  end)
end)
