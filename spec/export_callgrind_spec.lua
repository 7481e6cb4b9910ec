-- The callgrind export, and valgrind's callgrind_annotate (the real reader) reading it.
local S = require "spec.support"
local X = require "spec.export_support"
local checks = require "spec.export_checks"
local export = require "cprof.export"

local annotate = checks.annotate

describe("callgrind export", function()
  local tmp = X.tmp_files(after_each)

  it("writes the SPEC's sample as the golden file says", function()
    assert.equal(S.read_file(S.SPEC_DIR .. "/golden/export/sample.callgrind"), X.export("callgrind", X.sample()))
  end)

  it("gives callgrind_annotate inclusive costs that recursion does not count twice", function()
    local path = tmp(".callgrind")
    export.export("callgrind", X.sample(), path)
    local incl, totals = annotate(path, true)
    if not incl then return pending("callgrind export against callgrind_annotate: " .. totals) end
    assert.same({ 100000000 }, totals)
    -- main's inclusive cost is the total; fib's is its 60 ms, not the 90 a recursive call
    -- carrying its own cost would make (SPEC.md §7a)
    assert.same({ 100000000 }, incl["main.lua:main"])
    assert.same({ 90000000 }, incl["main.lua:work"])
    assert.same({ 60000000 }, incl["main.lua:fib"])
    assert.same({ 10000000 }, incl["[C]:string.rep"])
    local self = annotate(path, false)
    assert.same({ 60000000 }, self["main.lua:fib"])
    assert.same({ 20000000 }, self["main.lua:work"])
  end)

  it("gives the same costs from a pstats file, which has no call tree", function()
    local pst = tmp(".pstats")
    export.export("pstats", X.sample(), pst)
    local path = tmp(".callgrind")
    export.export("callgrind", pst, path)
    local incl, totals = annotate(path, true)
    if not incl then return pending("callgrind export against callgrind_annotate: " .. totals) end
    assert.same({ 100000000 }, totals)
    assert.same({ 100000000 }, incl["main.lua:main"])
    assert.same({ 60000000 }, incl["main.lua:fib"])
  end)

  it("puts every memory event in, the chosen weight first", function()
    local text = X.export("callgrind", X.sample(true), { weight = "live" })
    assert.matches("\nevents: Live_bytes Time_ns Alloc_bytes Allocs\nsummary: 4000 100000000 16000 122\n", text)
    local path = tmp(".callgrind")
    export.export("callgrind", X.sample(true), path, { weight = "alloc" })
    local incl, totals = annotate(path, true)
    if not incl then return pending("callgrind export against callgrind_annotate: " .. totals) end
    assert.same({ 16000, 100000000, 122, 4000 }, totals)
    assert.same({ 16000, 100000000, 122, 4000 }, incl["main.lua:main"])
    assert.same({ 9000, 60000000, 90, 3000 }, incl["main.lua:fib"])
    local ok, err = pcall(X.export, "callgrind", X.sample(), { weight = "alloc" })
    assert.is_false(ok)
    assert.matches("weight 'alloc' needs a profile with memory", err)
  end)

  it("gives the same memory costs when the tree keeps fib's recursion, one node per depth", function()
    -- X.sample(true) with fib's node split in three nested ones (work -> fib -> fib -> fib),
    -- each a third of its calls, time and memory: every function's costs are the same
    local kept = X.sample(true)
    local N = kept.nodes
    local fib = { parent = 2, frame = 3, ncalls = 3, pcalls = 1, tottime = 0.02, cumtime = 0.06,
                  alloc_count = 30, alloc_bytes = 3000, free_count = 20, free_bytes = 2000,
                  min_size = 100, max_size = 100 }
    local rows = { 1, 2, "fib", "fib", "fib", 4 }
    local out = { n = #rows }
    for col in pairs(N) do
      if col ~= "n" then
        out[col] = {}
        for k, r in ipairs(rows) do
          if r ~= "fib" then out[col][k] = N[col][r] else out[col][k] = fib[col] end
        end
      end
    end
    -- the nested fib nodes' parents, and string.rep's under work
    out.parent[4], out.parent[5], out.parent[6] = 3, 4, 2
    out.cumtime[4], out.cumtime[5] = 0.04, 0.02
    kept.nodes = out
    local costs = {}
    for _, d in ipairs { X.sample(true), kept } do
      local path = tmp(".callgrind")
      export.export("callgrind", d, path, { weight = "alloc" })
      local incl, totals = annotate(path, true)
      if not incl then return pending("callgrind export against callgrind_annotate: " .. totals) end
      costs[#costs + 1] = { incl, totals }
    end
    assert.same({ 9000, 60000000, 90, 3000 }, costs[2][1]["main.lua:fib"])
    assert.same(costs[1], costs[2])
  end)

  it("names a chunk without a file name '???', as valgrind names an unknown file", function()
    local p = require("cprof").Profile()
    p:enable()
    load("return 1", "=")()
    p:disable()
    local path = tmp(".callgrind")
    export.export("callgrind", p, path)
    assert.matches("\nfl=%(%d+%) %?%?%?\nfn=%(%d+%) <main chunk>", S.read_file(path))
    local cmd, why = X.reader("callgrind_annotate")
    if not cmd then return pending("callgrind export against callgrind_annotate: " .. why) end
    local out, err, status = X.run(cmd .. " --threshold=100 " .. S.q(path))
    assert.are.same({ "", 0 }, { err, status })
    assert.matches("  %?%?%?:<main chunk>", out)
  end)

  it("matches cprof's own report on a live profile: every function's self time and cumtime", function()
    local dump = X.live_dump(tmp(".prof"))
    local path = tmp(".callgrind")
    export.export("callgrind", dump, path)
    local incl, totals = annotate(path, true)
    if not incl then return pending("callgrind export against callgrind_annotate: " .. totals) end
    local self = annotate(path, false)
    local report, total = X.report(dump)
    assert.equal(math.floor(total * 1e9 + 0.5), totals[1])
    -- the names callgrind_annotate prints: file:short name (cprof.export.model)
    local m = export.model(dump)
    local checked = 0
    for f = 1, m.F.n do
      local r = report[m:label(f)]
      -- even and odd call each other: callgrind_annotate counts their inner calls twice
      if r and r.name ~= "even" and r.name ~= "odd" then
        local row = (m.F.kind[f] == "C" and "[C]" or m.F.file[f]) .. ":" .. m:name(f)
        assert.is_table(incl[row], row)
        assert.is_true(math.abs(incl[row][1] - r.cumtime * 1e9) <= 2, row)
        assert.is_true(math.abs((self[row] or { 0 })[1] - r.tottime * 1e9) <= 2, row)
        checked = checked + 1
      end
    end
    assert.is_true(checked >= 8)
  end)
end)
