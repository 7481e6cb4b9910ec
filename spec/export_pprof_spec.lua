-- The pprof export (gzipped profile.proto) read by `go tool pprof`, the real reader.
local S = require "spec.support"
local X = require "spec.export_support"
local checks = require "spec.export_checks"
local export = require "cprof.export"

local top = checks.pprof_top

describe("pprof export", function()
  local tmp = X.tmp_files(after_each)

  it("is gzip of a profile that go tool pprof reads: flat is self time, cum the inclusive", function()
    local path = tmp(".pb.gz")
    export.export("pprof", X.sample(), path)
    local _, gerr, gstatus = S.capture("gzip -t " .. S.q(path))
    assert.equal(0, gstatus, gerr)
    local rows, out = top(path, "-unit=ns")
    if not rows then return pending("pprof export against go tool pprof: " .. out) end
    assert.matches("\nType: time\n", out)
    assert.matches("\nDuration: 100ms, Total samples = 100000000ns", out)
    assert.matches("cprof: a deterministic profile", out)
    assert.same({ 60000000, 60000000 }, rows.fib)     -- recursion counted once
    assert.same({ 20000000, 90000000 }, rows.work)
    assert.same({ 10000000, 100000000 }, rows.main)
    assert.same({ 10000000, 10000000 }, rows["string.rep"])
    rows = top(path, "-sample_index=calls")
    assert.same({ 9, 9 }, rows.fib)
    assert.same({ 1, 13 }, rows.main)                  -- summed up the stack, as the comment says
  end)

  it("has the memory sample types on memory profiles, and the weight as the default", function()
    local path = tmp(".pb.gz")
    export.export("pprof", X.sample(true), path, { weight = "alloc" })
    local rows, out = top(path, "-unit=B")
    if not rows then return pending("pprof export against go tool pprof: " .. out) end
    assert.matches("\nType: alloc\n", out)
    assert.same({ 9000, 9000 }, rows.fib)
    assert.same({ 1000, 16000 }, rows.main)
    rows = top(path, "-sample_index=live -unit=B")
    assert.same({ 3000, 4000 }, { rows.fib[1], rows.main[2] })
    rows = top(path, "-sample_index=allocs")
    assert.same({ 90, 122 }, { rows.fib[1], rows.main[2] })
    rows = top(path, "-sample_index=time -unit=ns")
    assert.same({ 60000000, 60000000 }, rows.fib)
  end)

  it("keeps only the paths asked for", function()
    local path = tmp(".pb.gz")
    export.export("pprof", X.sample(), path, { patterns = { "rep" } })
    local rows, out = top(path, "-unit=ns")
    if not rows then return pending("pprof export against go tool pprof: " .. out) end
    assert.same({ 0, 10000000 }, rows.main)
    assert.is_nil(rows.fib)
  end)

  it("matches cprof's own report on a live profile: every function's tottime and cumtime", function()
    local dump = X.live_dump(tmp(".prof"))
    local path = tmp(".pb.gz")
    export.export("pprof", dump, path)
    local rows, out = top(path, "-unit=ns")
    if not rows then return pending("pprof export against go tool pprof: " .. out) end
    local report = X.report(dump)
    local m = export.model(dump)
    local checked = 0
    for f = 1, m.F.n do
      local r = report[m:label(f)]
      -- even and odd call each other: the engine folds the inner calls into the outer node
      if r and r.name ~= "even" and r.name ~= "odd" then
        local row = rows[m:name(f)] or { 0, 0 }
        assert.is_true(math.abs(row[1] - r.tottime * 1e9) <= 2, m:name(f))
        assert.is_true(math.abs(row[2] - r.cumtime * 1e9) <= 2, m:name(f))
        checked = checked + 1
      end
    end
    assert.is_true(checked >= 8)
    local calls = top(path, "-sample_index=calls")
    assert.equal(report[m:label(m.frame[3])].ncalls, calls[m:name(m.frame[3])][1])
  end)

  it("keeps the names of functions that share their full name, each on one line", function()
    local d = X.sample()
    -- work and fib: two chunks of one chunk name, so one full name, their short name
    d.frames.file[2], d.frames.line[2], d.frames.name[2] = '[string "x"]', 10, "fib"
    d.frames.file[3] = '[string "x"]'
    d.frames.name[1] = "ma\nin"
    local path = tmp(".pb.gz")
    export.export("pprof", d, path)
    local rows, out = top(path, "-unit=ns")
    if not rows then return pending("pprof export against go tool pprof: " .. out) end
    -- pprof took a name equal to its system_name for a C++ symbol: it cut "(fib)" off
    assert.same({ 80000000, 90000000 }, rows['[string "x"]:10(fib)'])
    assert.same({ 10000000, 100000000 }, rows["ma in"])
  end)

  it("needs the call tree", function()
    local ok, err = pcall(X.export, "pprof", require("cprof.stats").new(require("cprof.profdata").to_stats(X.sample())))
    assert.is_false(ok)
    assert.matches("pprof needs the call tree", err)
  end)
end)
