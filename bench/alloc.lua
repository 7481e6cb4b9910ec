-- bench/alloc.lua -- the workloads of the allocator benchmark (bench/alloc.c runs them).
--
-- Each workload is a function of a size that returns a checksum; bench/alloc.c runs it in a
-- fresh process under each allocator and checks that every allocator gives the same checksum.
-- `make bench` runs build/lua5.4/bench-alloc over this file; see bench/README.md.

local W = {}

-- The benchmarks game's binary trees: many small tables, all garbage quickly, plus one
-- long-lived tree.
local function bottom_up(depth)
  if depth > 0 then
    depth = depth - 1
    return { bottom_up(depth), bottom_up(depth) }
  end
  return {}
end

local function item_check(tree)
  if tree[1] then return 1 + item_check(tree[1]) + item_check(tree[2]) end
  return 1
end

function W.binary_trees(n)
  local mindepth, maxdepth = 4, math.max(6, n)
  local sum = item_check(bottom_up(maxdepth + 1))
  local longlived = bottom_up(maxdepth)
  for depth = mindepth, maxdepth, 2 do
    local iters = 1 << (maxdepth - depth + mindepth)
    local check = 0
    for _ = 1, iters do check = check + item_check(bottom_up(depth)) end
    sum = sum + check
  end
  return sum + item_check(longlived)
end

-- Strings of every length, built by concatenation, table.concat, rep, upper and sub, and a
-- string that grows by appending (each step a new string, the old one garbage). Words come
-- from a table, so that the time goes to building strings rather than formatting numbers.
local words = {}
for k = 1, 64 do words[k] = ("w"):rep(1 + k % 13) .. string.char(97 + k % 26) end

function W.string_build(n)
  local sum = 0
  for i = 1, n do
    local parts = {}
    for j = 1, 16 do
      parts[j] = words[(i * 7 + j) % 64 + 1] .. "-" .. words[(i + j * 3) % 64 + 1] .. ("!"):rep(i % 5)
    end
    local line = table.concat(parts, ",")
    line = line:upper():sub(3, -3) .. (i % 7 == 0 and tostring(i) or "")
    sum = sum + #line
    if i % 64 == 0 then
      local s = ""
      for k = 1, 200 do s = s .. words[k % 64 + 1] end
      sum = sum + #s
    end
  end
  return sum
end

-- Tables of varied shapes created, filled, grown, shrunk and dropped; a pool of live tables
-- where old entries are replaced at random (a deterministic generator).
local keys = {}
for k = 1, 8 do keys[k] = "k" .. k end

function W.table_churn(n)
  local pool, size = {}, 4096
  local seed, sum = 12345, 0
  for i = 1, n do
    seed = (seed * 1103515245 + 12345) % 2147483648
    local kind = seed % 4
    local t
    if kind == 0 then
      t = { i, i + 1, i + 2 }
    elseif kind == 1 then
      t = { x = i, y = i * 2, name = "p" }
    elseif kind == 2 then
      t = {}
      for k = 1, seed % 16 do t[k] = k end
    else
      t = {}
      for k = 1, seed % 12 do t[keys[k % 8 + 1]] = k end
      t.extra = { i }
    end
    local slot = seed % size + 1
    local old = pool[slot]
    if old then sum = sum + (old[1] or old.x or 0) % 7 end
    pool[slot] = t
  end
  return sum
end

-- Closures and upvalues: counters, an iterator, a composed pipeline, made and dropped.
function W.closures(n)
  local sum = 0
  local function counter(start)
    local c = start
    return function(d) c = c + d; return c end
  end
  local function compose(f, g) return function(x) return g(f(x)) end end
  for i = 1, n do
    local inc = counter(i)
    local f = compose(function(x) return x + 1 end, function(x) return inc(x) end)
    for _ = 1, 4 do sum = sum + f(i) % 13 end
    local k = 0
    local it = function() k = k + 1; if k <= 3 then return k end end
    for v in it do sum = sum + v end
  end
  return sum
end

-- The order in which they run and the size of each (chosen so that the default allocator
-- takes roughly a second per run on a current machine).
W.order = { "binary_trees", "string_build", "table_churn", "closures" }
W.sizes = { binary_trees = 15, string_build = 200000, table_churn = 3000000, closures = 1500000 }

return W
