-- The call-context tree: one node per distinct call path, recursion kept up to a depth (then
-- folded), bounded size.
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
  -- fib(10): 177 calls, 10 deep.
  local function fib(n) if n < 2 then return n end local r = fib(n - 1) + fib(n - 2) return r end
  local function fib_root() fib(10) end
  local function fib_path(depth) return "root" .. string.rep("/fib", depth) end
  -- fib's calls at each depth (depth 1: fib(10)).
  local at_depth = {}
  local function count(n, depth)
    at_depth[depth] = (at_depth[depth] or 0) + 1
    if n >= 2 then count(n - 1, depth + 1) count(n - 2, depth + 1) end
  end
  count(10, 1)

  it("keeps recursion: one node per depth, its calls those of fib at that depth", function()
    local d = tree(fib_root)
    local ps = paths(d)
    assert.are.equal(11, d.nodes.n) -- root and ten depths
    local want = at_depth
    local sum = 0
    for depth = 1, 10 do
      local i = ps[fib_path(depth)]
      assert.truthy(i, fib_path(depth))
      assert.are.equal(want[depth], d.nodes.ncalls[i])
      assert.are.equal(want[depth], d.nodes.pcalls[i], "each call at its depth is outermost there")
      assert.are.equal(d.nodes.cumtime[i], d.nodes.tottime[i] + children_cumtime(d, i))
      sum = sum + d.nodes.ncalls[i]
    end
    assert.are.equal(177, sum)
    assert.is_nil(ps[fib_path(11)])
    -- the function and the edge fib -> fib are as cProfile has them, whatever the tree keeps
    local st = select(2, tree(fib_root)):getstats()
    assert.are.same({ 177, 1 }, { S.entry_of(st, fib).ncalls, S.entry_of(st, fib).pcalls })
  end)

  it("folds recursion past `recursion` nodes of a function into the deepest of them", function()
    for _, keep in ipairs { 1, 3 } do
      local d, p = tree(fib_root, { timer = "counter", recursion = keep })
      local ps = paths(d)
      assert.are.equal(keep + 1, d.nodes.n)
      assert.is_nil(ps[fib_path(keep + 1)])
      local deepest = ps[fib_path(keep)]
      local above = 0
      for depth = 1, keep - 1 do above = above + d.nodes.ncalls[ps[fib_path(depth)]] end
      assert.are.equal(177 - above, d.nodes.ncalls[deepest])
      -- its outermost calls are those that reach its depth; the deeper ones fold into it
      assert.are.equal(at_depth[keep], d.nodes.pcalls[deepest])
      assert.are.equal(keep, d.meta.tree_recursion)
      local st = p:getstats()
      assert.are.same({ 177, 1 }, { S.entry_of(st, fib).ncalls, S.entry_of(st, fib).pcalls })
      assert.are.equal(0, d.meta.tree_folded, "the cap's count is not recursion's")
    end
    assert.are.equal(64, tree(fib_root).meta.tree_recursion)
  end)

  it("keeps mutual recursion the same way", function()
    local odd
    local function even(n) if n == 0 then return true end local r = odd(n - 1) return r end
    function odd(n) if n == 0 then return false end local r = even(n - 1) return r end
    local function root() even(6) end
    local ps = paths((tree(root)))
    assert.truthy(ps["root/even/odd/even/odd/even/odd/even"])
    local folded = paths((tree(root, { timer = "counter", recursion = 2 })))
    assert.truthy(folded["root/even/odd/even/odd"])
    assert.is_nil(folded["root/even/odd/even/odd/even"])
  end)

  it("rejects a bad recursion depth", function()
    for _, bad in ipairs { 0, 1.5, -1, "x", 5e9 } do
      assert.has_error(function() cprof.Profile { recursion = bad } end,
        "cprof: option 'recursion' must be a whole number from 1 to 4e9")
    end
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
