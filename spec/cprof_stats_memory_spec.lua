-- cprof-stats' memory views on dumps made by hand (their numbers known): --memory-series in the
-- order the dumps were taken, and what it says of dumps without memory.  cprof-stats runs under
-- lua5.4 (see cprof_stats_cli_spec.lua); the dumps are written here, by either interpreter.
local S = require "spec.support"
local q = S.q

local ROOT = S.ROOT
local SCRIPT = S.absolute(ROOT) .. "/bin/cprof-stats"

local function g(n, cols) cols.n = n return cols end

-- A dump with one function and, with `live` given, the memory totals charged to its contexts
-- (the series' "charged live" column); `start` is its profile's start_time.
local function series_dump(path, start, live)
  local meta = { timer = "counter", unit = 1, bias = 0, start_time = start, total_time = 1, pid = 7,
                 tree_cap = 100, tree_folded = 0, dropped = 0 }
  if live then
    meta.memory, meta.memory_lost = true, 0
    meta.memory_allocs, meta.memory_bytes, meta.memory_frees, meta.memory_freed = 2, live + 8, 1, 8
  end
  require("cprof.dump").write(path, {
    meta = meta,
    frames = g(1, { kind = { "main" }, file = { "m.lua" }, line = { 0 }, lastline = { 3 },
                    name = { "<main chunk>" }, ncalls = { 1 }, pcalls = { 1 }, tottime = { 1 }, cumtime = { 1 } }),
    edges = g(0, { caller = {}, callee = {}, ncalls = {}, pcalls = {}, tottime = {}, cumtime = {} }),
    nodes = g(1, { parent = { 0 }, frame = { 1 }, ncalls = { 1 }, pcalls = { 1 }, tottime = { 1 }, cumtime = { 1 } }),
  })
end

describe("cprof-stats --memory-series", function()
  local env, why = S.lua54_env(ROOT)
  if not env or not require("cprof.core").write_dump then
    pending("cprof-stats specs: " .. (why or "cprof.core has no write_dump"))
    return
  end
  local dir = S.new_dir()
  teardown(function() S.remove_dir(dir) end)
  local function cli(args)
    return S.capture(("cd %s && %slua5.4 %s %s"):format(q(dir), env, q(SCRIPT), args))
  end

  -- The files of the rows, in the order printed.
  local function rows(out)
    local files = {}
    for line in out:gmatch("[^\n]+") do
      local i, file = line:match("^ +(%d+) .*  (%S+)$")
      if i then files[tonumber(i)] = file end
    end
    return files
  end

  it("orders the dumps as they were taken, whatever the shell's order of their names", function()
    -- live dumps of one profile named with %n, unpadded (what older cprofs wrote) and padded
    for n = 1, 12 do series_dump(("%s/srv.%d.prof"):format(dir, n), 1000, 100 * n) end
    -- the shell's order: 1, 10, 11, 12, 2, ...
    local out, err, status = cli("--memory-series srv.*.prof")
    assert.are.equal(0, status, err)
    local want = {}
    for n = 1, 12 do want[n] = ("srv.%d.prof"):format(n) end
    assert.are.same(want, rows(out))
    assert.matches("^Memory over 12 dumps in the order they were taken", out)
    -- the live bytes charged grow by 100 from one to the next, never from 10 to 2
    for n = 1, 12 do
      assert.matches(("\n +%d +%%- [-%% ]+ %d +srv%%.%d%%.prof\n"):format(n, 100 * n, n), out)
    end
    -- padded names mixed in, and a second profile started earlier: its dumps come first
    series_dump(dir .. "/old.07.prof", 500, 50)
    series_dump(dir .. "/old.7.prof", 500, 60)
    series_dump(dir .. "/old.10.prof", 500, 70)
    out, err, status = cli("--memory-series srv.10.prof srv.9.prof old.10.prof old.7.prof old.07.prof")
    assert.are.equal(0, status, err)
    assert.are.same({ "old.07.prof", "old.7.prof", "old.10.prof", "srv.9.prof", "srv.10.prof" }, rows(out))
  end)

  it("says why there is nothing to show for dumps without memory numbers, with status 1", function()
    series_dump(dir .. "/plain1.prof", 1000)
    series_dump(dir .. "/plain2.prof", 1000)
    local out, err, status = cli("--memory-series plain1.prof plain2.prof")
    assert.are.equal(1, status)
    assert.are.equal("", out)
    assert.are.equal("cprof-stats: nothing to show: none of the 2 dumps has memory numbers (make them"
      .. " with cprof's allocator installed: CPROF_MEMORY=1 with cprof.auto)\n", err)
    out, err, status = cli("--memory-series plain1.prof --export svg")
    assert.are.equal(1, status)
    assert.are.equal("", out)
    assert.are.equal("cprof-stats: nothing to show: the dump has no memory numbers (make it with"
      .. " cprof's allocator installed: CPROF_MEMORY=1 with cprof.auto)\n", err)
    -- one dump with memory among them is a series: the others' cells are "-"
    series_dump(dir .. "/mem.prof", 1000, 64)
    out, err, status = cli("--memory-series plain1.prof mem.prof")
    assert.are.equal(0, status, err)
    assert.matches("\n +1 +%- [^\n]*  mem%.prof\n", out)
  end)
end)
