-- The call-context tree: one node per distinct call path, recursion folded, bounded size.
local cprof = require "cprof"
local S = require "spec.support"
local coroutine, pairs, ipairs = coroutine, pairs, ipairs

local function tree(f, opts)
  local p = cprof.Profile(opts or { timer = "counter" })
  p:runcall(f)
  return p:snapshot(), p
end

-- The nodes as "path" -> node index, with paths spelled by frame names ("a/b/c").
local function paths(d)
  local out, path = {}, {}
  for i = 1, d.nodes.n do
    local name = d.frames.name[d.nodes.frame[i]]
    local parent = d.nodes.parent[i]
    assert.is_true(parent < i, "parents come first")
    path[i] = parent == 0 and "root" or path[parent] .. "/" .. name  -- runcall calls it from C: unnamed
    out[path[i]] = i
  end
  return out
end

local function children_cumtime(d, i)
  local sum = 0
  for j = 1, d.nodes.n do if d.nodes.parent[j] == i then sum = sum + d.nodes.cumtime[j] end end
  return sum
end

describe("the call tree", function()
  it("folds recursion onto the node already on the path", function()
    local function fib(n) if n < 2 then return n end local r = fib(n - 1) + fib(n - 2) return r end
    local function root() fib(10) end
    local d = tree(root)
    local ps = paths(d)
    local i = ps["root/fib"]
    assert.truthy(i)
    assert.is_nil(ps["root/fib/fib"])
    assert.are.equal(177, d.nodes.ncalls[i])
    assert.are.equal(1, d.nodes.pcalls[i])
    assert.are.equal(2, d.nodes.n)
  end)

  it("folds mutual recursion too", function()
    local odd
    local function even(n) if n == 0 then return true end local r = odd(n - 1) return r end
    function odd(n) if n == 0 then return false end local r = even(n - 1) return r end
    local function root() even(6) end
    local ps = paths((tree(root)))
    assert.truthy(ps["root/even/odd"])
    assert.is_nil(ps["root/even/odd/even"])
  end)

  it("keeps one node per distinct path, with numbers that add up", function()
    local function leaf() return 1 end
    local function a() leaf() leaf() end
    local function b() leaf() a() end
    local function root() a() b() end
    local d = tree(root)
    local ps = paths(d)
    assert.are.equal(2, d.nodes.ncalls[ps["root/a/leaf"]])
    assert.are.equal(1, d.nodes.ncalls[ps["root/b/leaf"]])
    assert.are.equal(2, d.nodes.ncalls[ps["root/b/a/leaf"]])
    assert.are.equal(7, d.nodes.n) -- root, a, a/leaf, b, b/leaf, b/a, b/a/leaf
    local total = 0
    for i = 1, d.nodes.n do
      total = total + d.nodes.tottime[i]
      assert.are.equal(d.nodes.cumtime[i], d.nodes.tottime[i] + children_cumtime(d, i))
    end
    assert.are.equal(d.nodes.cumtime[ps["root"]], total)
    -- the flat numbers are the tree's summed by function
    local leaf_calls = 0
    for _, k in ipairs { "root/a/leaf", "root/b/leaf", "root/b/a/leaf" } do leaf_calls = leaf_calls + d.nodes.ncalls[ps[k]] end
    assert.are.equal(S.entry_of(select(2, tree(root)):getstats(), leaf).ncalls, leaf_calls)
  end)

  it("puts a coroutine's body under the resume that started it", function()
    local function body() coroutine.yield() end
    local function root()
      local co = coroutine.create(body)
      coroutine.resume(co) coroutine.resume(co)
    end
    local ps = paths((tree(root)))
    -- a body started by resume has no call-site name: its definition names it
    assert.truthy(ps["root/coroutine.resume/body"])
    assert.truthy(ps["root/coroutine.resume/body/coroutine.yield"])
  end)

  it("folds new deeper paths into their caller past the cap, and says so", function()
    local function d3() return 1 end
    local function d2() d3() end
    local function d1() d2() end
    local function root() for _ = 1, 5 do d1() end end
    local d, p = tree(root, { timer = "counter", tree_cap = 2 })
    assert.are.equal(2, d.nodes.n)
    local ps = paths(d)
    assert.truthy(ps["root/d1"])
    -- d2 and d3 ran in d1's node: 10 calls folded
    assert.are.equal(10, d.meta.tree_folded)
    assert.are.equal(2, d.meta.tree_cap)
    assert.are.equal(10, p:getstats().tree_folded)
    -- the flat numbers do not suffer from the cap
    assert.are.equal(5, S.entry_of(p:getstats(), d3).ncalls)
    -- and the report says so
    local out = {}
    require("cprof.report").print(p:getstats(), { stream = { write = function(_, t) out[#out + 1] = t end } })
    assert.matches("the call tree reached its cap of 2 nodes: 10 calls", table.concat(out))
  end)

  it("rejects a bad cap", function()
    assert.has_error(function() cprof.Profile { tree_cap = 0 } end,
      "cprof: option 'tree_cap' must be a whole number from 1 to 4e9")
    assert.has_error(function() cprof.Profile { tree_cap = 1.5 } end)
  end)

  it("grows with distinct paths, not with calls", function()
    local function leaf() return 1 end
    local function root() for _ = 1, 10000 do leaf() end end
    local d = tree(root)
    assert.are.equal(2, d.nodes.n)
    assert.are.equal(10000, d.nodes.ncalls[2])
  end)
end)
