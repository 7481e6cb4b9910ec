-- Memory in reports (docs/REPORT.md): Stats:print_memory, the memory sort keys and their
-- abbreviations, memory summed over add and strip_dirs, kept by dump_stats and data.merge, the
-- allocator snapshot of a dump printed by print_allocator; and the bias: applied once to Stats
-- made from snapshots and dumps, with the count of clamped times reported.
local cprof = require "cprof"
local stats = require "cprof.stats"
local data = require "cprof.profdata"
local allocdata = require "cprof.allocdata"
local json = require "cprof.report.json"

local S = require "spec.support"
local collector = S.collector

local function output(st, method, ...)
  local c = collector()
  st.stream = c
  st[method](st, ...)
  return c.text()
end

local function entry(file, line, name, ncalls, mem, what)
  local e = { file = file, line = line, name = name, what = what or "Lua", ncalls = ncalls,
              pcalls = ncalls, tottime = 0.001 * ncalls, cumtime = 0.002 * ncalls }
  if mem then
    e.alloc_count, e.alloc_bytes, e.free_count, e.free_bytes, e.min_size, e.max_size =
      mem[1], mem[2], mem[3], mem[4], mem[5], mem[6]
    e.live_bytes = mem[2] - mem[4]
  end
  return e
end

local function table_with_memory()
  return { timer = "counter", unit = 1, meta = { memory = true }, entries = {
    entry("/src/m.lua", 2, "make", 1, { 108, 9680, 7, 2032, 16, 2048 }),
    entry("/src/m.lua", 3, "churn", 1, { 2000, 72000, 352, 12672, 16, 56 }),
    entry("~", 0, "print", 3, { 0, 0, 0, 0, 0, 0 }, "C"),
  } }
end

local TITLE = "   allocs        bytes     frees   live bytes      min      max filename:lineno(function)\n"

describe("print_memory", function()
  it("prints allocations, bytes, frees, live bytes and sizes per function, in the current order", function()
    local st = stats.new(table_with_memory()):sort_stats("alloc")
    assert.are.equal(
      "         2108 allocations of 81680 bytes, 359 frees of 14704 bytes, 66976 bytes live\n\n"
      .. "   Ordered by: allocated bytes\n\n"
      .. TITLE
      .. "     2000        72000       352        59328       16       56 /src/m.lua:3(churn)\n"
      .. "      108         9680         7         7648       16     2048 /src/m.lua:2(make)\n"
      .. "        0            0         0            0                   {print}\n\n\n",
      output(st, "print_memory"))
    st:sort_stats("live")
    assert.are.equal(
      "         2108 allocations of 81680 bytes, 359 frees of 14704 bytes, 66976 bytes live\n\n"
      .. "   Ordered by: live bytes\n"
      .. "   List reduced from 3 to 1 due to restriction <'make'>\n\n"
      .. TITLE
      .. "      108         9680         7         7648       16     2048 /src/m.lua:2(make)\n\n\n",
      output(st, "print_memory", "make"))
    assert.are.equal(TITLE, stats.memory_title_line() .. "\n")
  end)

  it("says so when the profile has no memory numbers, and print_stats is unchanged", function()
    local t = table_with_memory()
    local plain = { timer = t.timer, unit = t.unit, entries = {} }
    for i, e in ipairs(t.entries) do
      plain.entries[i] = entry(e.file, e.line, e.name, e.ncalls, nil, e.what)
    end
    local st = stats.new(plain)
    assert.is_false(st:has_memory())
    assert.matches("^   cprof: the profile has no memory numbers", output(st, "print_memory"))
    assert.are.equal(output(stats.new(plain):sort_stats("calls"), "print_stats"),
                     output(stats.new(table_with_memory()):sort_stats("calls"), "print_stats"))
  end)

  it("sums memory over add (smallest and largest sizes kept) and over strip_dirs", function()
    local t2 = table_with_memory()
    t2.entries[1] = entry("/src/m.lua", 2, "make", 1, { 1, 4096, 1, 4096, 4096, 4096 })
    t2.entries[3] = entry("~", 0, "print", 3, { 2, 64, 0, 0, 8, 56 }, "C")
    local st = stats.new(table_with_memory(), t2)
    local make = st.mem[stats.func_key("/src/m.lua", 2, "make")]
    assert.are.same({ alloc_count = 109, alloc_bytes = 13776, free_count = 8, free_bytes = 6128,
                      min_size = 16, max_size = 4096 }, make)
    -- a function without allocations in one source takes the sizes of the other
    assert.are.same({ alloc_count = 2, alloc_bytes = 64, free_count = 0, free_bytes = 0, min_size = 8,
                      max_size = 56 }, st.mem[stats.func_key("~", 0, "<print>")])
    -- two files that become one function
    local t3 = table_with_memory()
    t3.entries[1].file = "/other/m.lua"
    st = stats.new(table_with_memory(), t3):strip_dirs()
    assert.are.same({ alloc_count = 216, alloc_bytes = 19360, free_count = 14, free_bytes = 4064,
                      min_size = 16, max_size = 2048 }, st.mem[stats.func_key("m.lua", 2, "make")])
    assert.matches("  2048 m%.lua:2%(make%)\n", output(st:sort_stats("alloc"), "print_memory"))
  end)

  it("survives dump_stats (in the frames' memory columns) and data.merge", function()
    local dir = os.tmpname()
    local st = stats.new(table_with_memory())
    st:dump_stats(dir)
    local d = require("cprof.core").read_dump(dir)
    os.remove(dir)
    assert.are.same({ 108, 2000, 0 }, d.frames.alloc_count)
    assert.are.equal(0, d.nodes.n)
    local back = stats.new(d)
    for _, key in ipairs(st.order) do assert.are.same(st.mem[key], back.mem[key]) end
    -- merge: frames' memory summed, and a profile without memory adds zeros
    local m = data.merge(d, d, data.from_stats(stats.new({ entries = { entry("x.lua", 1, "x", 1) } })))
    assert.are.same({ 216, 4000, 0, 0 }, m.frames.alloc_count)
    assert.are.same({ 16, 16, 0, 0 }, m.frames.min_size)
    assert.are.equal(4000, data.to_stats(m).entries[2].alloc_count)
    -- with a profile whose memory is in its tree nodes (a snapshot): its frames' sums are added
    local tree = {
      frames = { n = 1, kind = { "Lua" }, file = { "/src/m.lua" }, line = { 2 }, lastline = { 2 },
                 name = { "make" }, ncalls = { 2 }, pcalls = { 2 }, tottime = { 0 }, cumtime = { 0 } },
      edges = { n = 0, caller = {}, callee = {}, ncalls = {}, pcalls = {}, tottime = {}, cumtime = {} },
      nodes = { n = 2, parent = { 0, 0 }, frame = { 1, 1 }, ncalls = { 1, 1 }, pcalls = { 1, 1 },
                tottime = { 0, 0 }, cumtime = { 0, 0 }, alloc_count = { 1, 2 }, alloc_bytes = { 8, 100 },
                free_count = { 0, 1 }, free_bytes = { 0, 50 }, min_size = { 8, 40 }, max_size = { 8, 60 } },
    }
    for _, both in ipairs({ data.merge(d, tree), data.merge(tree, d) }) do
      local make = data.to_stats(both).entries[1].name == "make" and data.to_stats(both).entries[1]
        or data.to_stats(both).entries[2]
      assert.are.same({ 111, 9788, 8, 2082, 8, 2048 }, { make.alloc_count, make.alloc_bytes,
        make.free_count, make.free_bytes, make.min_size, make.max_size })
    end
  end)

  it("report_table rows and the JSON document carry the memory fields", function()
    local st = stats.new(table_with_memory()):sort_stats("allocs")
    local row = st:report_table({}, 1).rows[1]
    assert.are.same({ 2000, 72000, 352, 12672, 59328, 16, 56 },
      { row.alloc_count, row.alloc_bytes, row.free_count, row.free_bytes, row.live_bytes,
        row.min_size, row.max_size })
    assert.matches('"cumtime":0%.002,"percall_cumtime":0%.002,"alloc_count":2000,"alloc_bytes":72000,'
      .. '"free_count":352,"free_bytes":12672,"live_bytes":59328,"min_size":16,"max_size":56}',
      json.stats_json(st, {}, 1))
    assert.is_nil(stats.new({ entries = { entry("x.lua", 1, "x", 1) } }):report_table({}).rows[1].alloc_count)
  end)
end)

describe("memory sort keys", function()
  local function meaning(word)
    local ok, st = pcall(function() return stats.new(table_with_memory()):sort_stats(word) end)
    if ok then return st.sort_type end
    return nil, st
  end

  it("sort by allocated bytes, allocation count and live bytes, largest first", function()
    local function order(key)
      local st = stats.new(table_with_memory()):sort_stats(key)
      local names = {}
      for i, k in ipairs(st.fcn_list) do names[i] = k[3] end
      return table.concat(names, " ")
    end
    assert.are.equal("churn make <print>", order("alloc"))
    assert.are.equal("churn make <print>", order("allocs"))
    local t = table_with_memory()
    t.entries[1].alloc_bytes = 100000
    t.entries[1].free_bytes = 100000
    local st = stats.new(t)
    assert.are.equal("allocated bytes", st:sort_stats("alloc_bytes").sort_type)
    assert.are.equal("make", st.fcn_list[1][3])
    assert.are.equal("churn", st:sort_stats("live").fcn_list[1][3])
    assert.are.equal("churn", st:sort_stats("alloc_count").fcn_list[1][3])
    assert.are.equal("allocation count, live bytes", st:sort_stats("allocs", "live").sort_type)
  end)

  it("abbreviate by the same rule; pstats' own prefixes keep their meaning ('l', 'li': line)", function()
    assert.are.equal("allocated bytes", meaning("alloc"))
    assert.are.equal("allocated bytes", meaning("alloc_b"))
    assert.are.equal("allocation count", meaning("alloc_c"))
    assert.are.equal("allocation count", meaning("allocs"))
    assert.are.equal("line number", meaning("l"))
    assert.are.equal("line number", meaning("li"))
    assert.are.equal("live bytes", meaning("liv"))
    for _, w in ipairs({ "a", "al", "all", "allo" }) do
      local st, err = meaning(w)
      assert.is_nil(st, w)
      assert.truthy(tostring(err):find("ambiguous sort key '" .. w .. "' (could be alloc, alloc_bytes, "
        .. "alloc_count, allocs)", 1, true), tostring(err))
    end
    local _, underscore = meaning("alloc_")
    assert.truthy(tostring(underscore):find("ambiguous sort key 'alloc_' (could be alloc_bytes, alloc_count)",
      1, true), tostring(underscore))
    local _, err = meaning("c")
    assert.truthy(tostring(err):find("(could be calls, cumtime, cumulative); valid keys: calls, ncalls, "
      .. "cumtime, cumulative, filename, line, module, name, nfl, pcalls, stdname, time, tottime, "
      .. "alloc, alloc_bytes, alloc_count, allocs, live (", 1, true), tostring(err))
    -- every prefix of every key: pstats' 68, and 14 for the memory keys
    local seen, accepted = {}, 0
    for _, k in ipairs(stats.sort_keys(true)) do
      for i = 1, #k.key do
        local w = k.key:sub(1, i)
        if not seen[w] then
          seen[w] = true
          if meaning(w) then accepted = accepted + 1 end
        end
      end
    end
    assert.are.equal(82, accepted)
    assert.are.equal(13, #stats.sort_keys())
    assert.are.equal(18, #stats.sort_keys(true))
    assert.are.same({ key = "live", description = "live bytes" }, stats.sort_keys(true)[18])
  end)
end)

describe("the allocator snapshot in reports", function()
  it("print_allocator prints memory.report's text for the snapshot", function()
    local memory = require "cprof.memory"
    local s = {
      lua_bytes = 1000, requested = 900, foreign = 100, held = 960, footprint = 4096, mapped = 2097152,
      peak_mapped = 2097152, metadata = 512, live = 10, allocs = 12, failures = 0, limit_failures = 0,
      foreign_frees = 0,
      caches = { { name = "table_56", type = "table", source = "pages", objsize = 56, slab_size = 4096,
                   objects = 73, live = 10, magazine = 2, allocs = 12, requested = 560, slabs = 1,
                   partial_slabs = 1, total = 73 * 56, alloc = 560 } },
      types = { { name = "table", tag = 5, live = 10, bytes = 560, held = 560, allocs = 12, large_live = 0,
                  large_allocs = 0, large_held = 0 } },
      arenas = { { name = "chunks", source = "none", quantum = 2097152, total = 2097152, alloc = 2097152,
                   free = 0, imported = 2097152, peak_total = 2097152, nr_allocs = 1, nr_free_segs = 0,
                   nr_spans = 1, nr_imports = 1, nr_empty = 0, allocs = 1, frees = 0, imports = 1,
                   releases = 0, import_failures = 0, hash_size = 64, hash_empty = 63, hash_longest = 1,
                   meta = 100, free_lists = { [20] = 1 } },
                 { name = "pages", source = "chunks", quantum = 4096, total = 2093056, alloc = 8192,
                   free = 2084864, imported = 2093056, peak_total = 2093056, nr_allocs = 2, nr_free_segs = 1,
                   nr_spans = 1, nr_imports = 1, nr_empty = 0, allocs = 2, frees = 0, imports = 1,
                   releases = 0, import_failures = 0, hash_size = 64, hash_empty = 62, hash_longest = 1,
                   meta = 100, free_lists = {} } },
    }
    local d = allocdata.set(data.from_stats(stats.new(table_with_memory())), s)
    local st = stats.new(d)
    assert.is_table(st.allocator)
    local want = collector()
    memory.report(want, s)
    assert.are.equal(want.text(), output(st, "print_allocator"))
    assert.matches("^== kmemstat\nArena/Slab Name", want.text())
    assert.matches("\n        table_56              : S :      56:           4088:            560:          12\n",
                   want.text())
    -- JSON: free lists as { list, segs }
    assert.matches('"free_lists":%[{"list":20,"segs":1}%]', json.stats_json(st, {}, 0))
    -- add: the first source's snapshot that has one
    local other = stats.new(table_with_memory())
    other:add(st, stats.new(allocdata.set(data.from_stats(other), { caches = {}, types = {}, arenas = {} })))
    assert.are.equal(st.allocator, other.allocator)
    assert.matches("no allocator snapshot", output(stats.new(table_with_memory()), "print_allocator"))
  end)
end)

describe("the bias in reports", function()
  local ticking = S.ticking
  local function leaf() return 1 end
  local function a() leaf() end
  local function root() a() leaf() end

  it("is subtracted once from snapshots and dumps; the clamped count is reported", function()
    local p = cprof.Profile { timer = ticking(), unit = 1, bias = 2 }
    p:runcall(root)
    local applied = p:report_data()
    local n = applied.meta.bias_clamped
    assert.is_true(n > 0)
    local line = "   cprof: " .. n .. " times went below zero after subtracting the bias (2 s per event)"
      .. " and were shown as 0\n\n"
    local from_snapshot = output(stats.new(p:snapshot()):sort_stats("name"), "print_stats")
    assert.are.equal(line, from_snapshot:sub(-#line))
    assert.are.equal(from_snapshot, output(stats.new(applied):sort_stats("name"), "print_stats"))
    local path = os.tmpname()
    p:dump_stats(path)
    local st = stats.new(path):sort_stats("name")
    os.remove(path)
    local from_dump = output(st, "print_stats")
    assert.are.equal(line, from_dump:sub(-#line))
    assert.are.equal(from_snapshot:match("\n   Ordered by.*$"), from_dump:match("\n   Ordered by.*$"))
    -- and it is not subtracted again from a Stats written by dump_stats
    path = os.tmpname()
    st:dump_stats(path)
    local again = output(stats.new(path):sort_stats("name"), "print_stats")
    os.remove(path)
    assert.are.equal(from_dump:match("\n   Ordered by.*$"), again:match("\n   Ordered by.*$"))
    -- adding two profiles adds their counts
    local twice = output(stats.new(p:snapshot(), p:snapshot()):sort_stats("name"), "print_stats")
    assert.matches("cprof: " .. 2 * n .. " times went below zero", twice)
  end)

  it("prints nothing when nothing was clamped", function()
    local p = cprof.Profile { timer = ticking(), unit = 1, bias = 0.25 }
    p:runcall(root)
    assert.are.equal(0, p:report_data().meta.bias_clamped)
    assert.not_matches("went below zero", output(stats.new(p:snapshot()), "print_stats"))
  end)
end)
